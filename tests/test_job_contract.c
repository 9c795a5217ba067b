// SPDX-License-Identifier: MIT
/*
 * The driver contract of include/npukit/job.h on all four devices: a hung
 * bus beat (the platform's fault injection) makes the job end with
 * NPK_JOB_TIMEOUT, the driver soft-resets the device, and the next job
 * succeeds with the result of the CPU reference. Job hooks see every job
 * with its result; a device error carries the device's own code.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "npukit/e1.h"
#include "npukit/job.h"
#include "npukit/pccx.h"
#include "npukit/shell.h"
#include "npukit/sim.h"
#include "npukit/v0.h"

/* ---- a hook that records every job ---- */

typedef struct rec {
    unsigned begins, ends, timeouts, errors, recovered;
    char last_name[32];
} rec;

static void on_begin(void *ctx, const npk_job *j) {
    rec *r = ctx;
    r->begins++;
    CHECK_EQ(j->state, NPK_JOB_RUNNING);
}

static void on_end(void *ctx, const npk_job *j) {
    rec *r = ctx;
    r->ends++;
    CHECK_EQ(j->state, NPK_JOB_DONE);
    CHECK(j->end_cycle >= j->start_cycle);
    r->timeouts += j->result == NPK_JOB_TIMEOUT;
    r->errors += j->result == NPK_JOB_ERROR;
    r->recovered += j->recovered;
    snprintf(r->last_name, sizeof r->last_name, "%s", j->name);
}

static void hang_everything(npk_port *p, npk_access acc) {
    npk_fault f = {acc, 0, ~0ull, -1, NPK_BUS_HANG, 0};
    CHECK_EQ(npk_mem_add_fault(npk_sim_mem(npk_port_sim(p)), &f), 0);
}

static void clear_faults(npk_port *p) { npk_mem_clear_faults(npk_sim_mem(npk_port_sim(p))); }

/* C[M][N] = A[M][K] B[K][N], int32, written out independently of src/ops. */
static void cpu_matmul(unsigned M, unsigned N, unsigned K, const int8_t *A, const int8_t *B, int32_t *C) {
    for (unsigned i = 0; i < M; i++)
        for (unsigned j = 0; j < N; j++) {
            int32_t s = 0;
            for (unsigned k = 0; k < K; k++) s += A[i * K + k] * B[k * N + j];
            C[i * N + j] = s;
        }
}

static void fill(int8_t *v, size_t n, int seed) {
    for (size_t i = 0; i < n; i++) v[i] = (int8_t)((int)((i * 37 + (size_t)seed * 11) % 23) - 11);
}

/* ---- e1: a ring descriptor streams from hung memory ---- */

static void test_e1(void) {
    npk_port *p;
    npk_e1 *e;
    CHECK_EQ(npk_port_open(&p, "sim", "e1", NULL), 0);
    CHECK_EQ(npk_e1_open(&e, p), 0);
    rec r = {0};
    npk_job_hooks h = {on_begin, on_end, &r};
    CHECK_EQ(npk_port_add_job_hooks(p, &h), 0);
    uint64_t src;
    CHECK_EQ(npk_port_alloc(p, 64, 16, &src), 0);
    hang_everything(p, NPK_ACC_READ);
    npk_e1_set_timeout(e, 30); /* shorter than the engine's own 128-cycle stall limit */
    npk_e1_desc d = npk_e1_desc_stream(E1_OP_ADD, src, 0, 16, 0);
    CHECK_EQ(npk_e1_submit(e, &d, 1, NULL, 0, NULL), -NPK_ETIMEDOUT);
    const npk_job *j = npk_port_last_job(p);
    CHECK(j != NULL);
    if (j) {
        CHECK_EQ(j->result, NPK_JOB_TIMEOUT);
        CHECK_STR(j->name, "ring doorbell");
        CHECK(j->recovered);
    }
    CHECK_EQ(r.timeouts, 1);
    /* the soft reset left the device idle: a new driver may open it */
    uint32_t st;
    CHECK_EQ(npk_port_read32(p, E1_REG_CTRL_STATUS, &st), 0);
    CHECK_EQ(st & E1_ST_BUSY, 0);
    npk_e1 *e2;
    CHECK_EQ(npk_e1_open(&e2, p), 0);
    npk_e1_close(e2);
    /* the next job matches the CPU reference */
    clear_faults(p);
    npk_e1_set_timeout(e, 1000000);
    int8_t A[3 * 4], B[4 * 3];
    int32_t C[9], want[9];
    fill(A, 12, 1);
    fill(B, 12, 2);
    cpu_matmul(3, 3, 4, A, B, want);
    CHECK_EQ(npk_e1_gemm_tile(e, 0, 3, 3, 4, A, B, C), 0);
    for (int i = 0; i < 9; i++) CHECK_EQ(C[i], want[i]);
    j = npk_port_last_job(p);
    if (j) CHECK_EQ(j->result, NPK_JOB_OK);
    CHECK_EQ(r.begins, r.ends);
    /* a device error: the job carries the device's DESC_STATUS code */
    npk_fault f = {NPK_ACC_READ, 0, ~0ull, -1, NPK_BUS_ERROR, 0};
    CHECK_EQ(npk_mem_add_fault(npk_sim_mem(npk_port_sim(p)), &f), 0);
    CHECK_EQ(npk_e1_submit(e, &d, 1, NULL, 0, NULL), -NPK_EDEVICE);
    j = npk_port_last_job(p);
    if (j) {
        CHECK_EQ(j->result, NPK_JOB_ERROR);
        CHECK_EQ(e1_ds_code(j->dev_code), E1_DS_FETCH_ERR); /* the descriptor fetch is the first read */
        CHECK(!j->recovered);
    }
    clear_faults(p);
    CHECK_EQ(npk_e1_gemm_tile(e, 0, 3, 3, 4, A, B, C), 0);
    npk_port_remove_job_hooks(p, &h);
    npk_e1_close(e);
    npk_port_close(p);
}

/* ---- v0: the array's C writes hang ---- */

static void test_v0(void) {
    npk_port *p;
    npk_v0 *v;
    CHECK_EQ(npk_port_open(&p, "sim", "v0", NULL), 0);
    npk_v0_config cfg;
    npk_v0_config_default(&cfg);
    cfg.cpu_exec = npk_v0_cpu_execute;
    cfg.timeout_cycles = 200000;
    CHECK_EQ(npk_v0_open(&v, p, &cfg), 0);
    rec r = {0};
    npk_job_hooks h = {on_begin, on_end, &r};
    CHECK_EQ(npk_port_add_job_hooks(p, &h), 0);
    enum { M = 5, N = 7, K = 9 };
    int8_t A[M * K], B[K * N];
    int32_t C[M * N], want[M * N];
    fill(A, sizeof A, 3);
    fill(B, sizeof B, 4);
    cpu_matmul(M, N, K, A, B, want);
    hang_everything(p, NPK_ACC_WRITE);
    CHECK_EQ(npk_v0_matmul(v, M, N, K, A, B, C, 0), -NPK_ETIMEDOUT);
    const npk_job *j = npk_port_last_job(p);
    if (j) {
        CHECK_EQ(j->result, NPK_JOB_TIMEOUT);
        CHECK_STR(j->name, "matmul"); /* the ops job ends after its wait job */
        CHECK(j->recovered);
    }
    CHECK(r.timeouts >= 2); /* the wait and the matmul around it */
    clear_faults(p);
    memset(C, 0, sizeof C);
    CHECK_EQ(npk_v0_matmul(v, M, N, K, A, B, C, 0), 0);
    for (int i = 0; i < M * N; i++) CHECK_EQ(C[i], want[i]);
    j = npk_port_last_job(p);
    if (j) CHECK_EQ(j->result, NPK_JOB_OK);
    CHECK_EQ(r.begins, r.ends);
    npk_port_remove_job_hooks(p, &h);
    npk_v0_close(v);
    npk_port_close(p);
}

/* ---- shell: the GEMM's operand reads hang (the driver's budget is shorter
 * than the device's own bus_timeout) ---- */

static void test_shell(void) {
    npk_port *p;
    npk_shell *s;
    CHECK_EQ(npk_port_open(&p, "sim", "shell", NULL), 0);
    npk_shell_opts o = {.timeout = 3000};
    CHECK_EQ(npk_shell_open(&s, p, &o), 0);
    rec r = {0};
    npk_job_hooks h = {on_begin, on_end, &r};
    CHECK_EQ(npk_port_add_job_hooks(p, &h), 0);
    enum { M = 4, N = 6, K = 8 };
    int8_t A[M * K], B[K * N];
    int32_t C[M * N], want[M * N];
    fill(A, sizeof A, 5);
    fill(B, sizeof B, 6);
    cpu_matmul(M, N, K, A, B, want);
    hang_everything(p, NPK_ACC_READ);
    CHECK_EQ(npk_shell_gemm_i8(s, M, N, K, A, B, NULL, C), -NPK_ETIMEDOUT);
    CHECK(strstr(npk_errmsg(), "reset") != NULL);
    const npk_job *j = npk_port_last_job(p);
    if (j) {
        CHECK_EQ(j->result, NPK_JOB_TIMEOUT);
        CHECK(j->recovered);
    }
    clear_faults(p);
    CHECK_EQ(npk_shell_gemm_i8(s, M, N, K, A, B, NULL, C), 0);
    for (int i = 0; i < M * N; i++) CHECK_EQ(C[i], want[i]);
    j = npk_port_last_job(p);
    if (j) CHECK_EQ(j->result, NPK_JOB_OK);
    CHECK_EQ(r.begins, r.ends);
    npk_port_remove_job_hooks(p, &h);
    npk_shell_close(s);
    npk_port_close(p);
}

/* ---- pccx: a MEMCPY from the host window hangs ---- */

static void test_pccx(void) {
    npk_port *p;
    npk_pccx *d;
    CHECK_EQ(npk_port_open(&p, "sim", "pccx", NULL), 0);
    CHECK_EQ(npk_pccx_open(&d, p, NULL), 0);
    rec r = {0};
    npk_job_hooks h = {on_begin, on_end, &r};
    CHECK_EQ(npk_port_add_job_hooks(p, &h), 0);
    uint16_t v[40], got[40];
    for (int i = 0; i < 40; i++) v[i] = (uint16_t)(0x3f80 + 3 * i);
    hang_everything(p, NPK_ACC_READ);
    CHECK_EQ(npk_pccx_write_bf16(d, 100, v, 40), -NPK_ETIMEDOUT);
    const npk_job *j = npk_port_last_job(p);
    if (j) {
        CHECK_EQ(j->result, NPK_JOB_TIMEOUT);
        CHECK_STR(j->name, "sync");
        CHECK(j->recovered);
    }
    uint32_t st;
    CHECK_EQ(npk_port_read32(p, NPK_PCCX_STATUS, &st), 0);
    CHECK_EQ(st & NPK_PCCX_STATUS_BUSY, 0);
    clear_faults(p);
    CHECK_EQ(npk_pccx_write_bf16(d, 100, v, 40), 0);
    CHECK_EQ(npk_pccx_read_bf16(d, 100, got, 40), 0);
    for (int i = 0; i < 40; i++) CHECK_EQ(got[i], v[i]);
    CHECK_EQ(r.begins, r.ends);
    npk_port_remove_job_hooks(p, &h);
    npk_pccx_close(d);
    npk_port_close(p);
}

/* ---- hooks and the poll helper on their own ---- */

static int calls;
static int check_third(void *ctx, npk_poll *pl) {
    (void)ctx;
    (void)pl;
    return ++calls == 3 ? NPK_POLL_DONE : NPK_POLL_BUSY;
}
static int check_never(void *ctx, npk_poll *pl) {
    (void)ctx;
    (void)pl;
    return NPK_POLL_BUSY;
}

static void test_poll_and_hooks(void) {
    npk_port *p;
    CHECK_EQ(npk_port_open(&p, "sim", "e1", NULL), 0);
    /* first wait 5, then steps 1, 2 (doubling): done at the third check after 8 cycles */
    uint64_t c0 = npk_port_cycles(p);
    npk_poll pl = {.budget = 1000, .first = 5, .step = 1, .max_step = 64};
    calls = 0;
    CHECK_EQ(npk_poll_run(p, &pl, check_third, NULL), 0);
    CHECK_EQ(pl.waited, 8);
    CHECK_EQ(npk_port_cycles(p) - c0, 8);
    /* a budget of 100 with clamping: 1+2+4+...+32 = 63, then 37 */
    npk_poll pb = {.budget = 100, .step = 1, .max_step = 64, .clamp = 1};
    CHECK_EQ(npk_poll_run(p, &pb, check_never, NULL), -NPK_ETIMEDOUT);
    CHECK(pb.expired);
    CHECK_EQ(pb.waited, 100);
    /* hooks: added once, removed, at most NPK_JOB_MAX_HOOKS */
    rec r = {0};
    npk_job_hooks h = {on_begin, on_end, &r};
    CHECK_EQ(npk_port_add_job_hooks(p, &h), 0);
    CHECK_EQ(npk_port_add_job_hooks(p, &h), 0); /* the same set twice counts once */
    npk_job j;
    npk_job_begin(&j, p, "runtime", "probe");
    npk_job_args(&j, "\"x\":%d", 7);
    CHECK_STR(j.args, "\"x\":7");
    CHECK_EQ(npk_job_end(&j, -NPK_EDEVICE), -NPK_EDEVICE);
    CHECK_EQ(r.begins, 1);
    CHECK_EQ(r.ends, 1);
    CHECK_EQ(r.errors, 1);
    CHECK_STR(npk_job_result_name(npk_port_last_job(p)->result), "error");
    npk_port_remove_job_hooks(p, &h);
    npk_job_begin(&j, p, "runtime", "unhooked");
    npk_job_args(&j, "\"x\":%d", 8);
    CHECK_STR(j.args, ""); /* nothing listens: no formatting */
    npk_job_end(&j, 0);
    CHECK_EQ(r.ends, 1);
    rec more[NPK_JOB_MAX_HOOKS + 1];
    for (int i = 0; i <= NPK_JOB_MAX_HOOKS; i++) {
        npk_job_hooks hi = {on_begin, on_end, &more[i]};
        CHECK_EQ(npk_port_add_job_hooks(p, &hi), i < NPK_JOB_MAX_HOOKS ? 0 : -NPK_ENOMEM);
    }
    npk_port_close(p);
}

int main(void) {
    test_poll_and_hooks();
    test_e1();
    test_v0();
    test_shell();
    test_pccx();
    return CHECK_DONE();
}
