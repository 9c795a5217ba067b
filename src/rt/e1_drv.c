// SPDX-License-Identifier: MIT
/* The e1 driver: direct MMIO commands, scratchpad GEMM/VRELU tiles and the
 * descriptor ring, over any npk_port. On a port with the job hook (kmd:,
 * rt/port_submit.h) a ring batch is a job the kernel starts and watches; the
 * direct commands and the tile configuration stay register accesses. */
#include "npukit/e1_drv.h"
#include "npukit/devtab.h"
#include "npukit/trace.h"
#include "npukit/job.h"
#include "rt/port_submit.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define E1_RING_ALLOC_BYTES 4096u /* the ring's E1_RING_ENTRIES * E1_DESC_BYTES, rounded up to 4 KiB */

struct npk_e1 {
    npk_port *port;
    uint64_t timeout;
    uint32_t owner;
    uint64_t ring;        /* guest address of the 8-slot ring */
    unsigned slot;        /* next free slot (software view of DESC_TAIL) */
    /* shadow of registers only this driver writes (skips redundant MMIO) */
    int shadow_valid;
    uint32_t sh_opcode, sh_cmd_param, sh_cfg, sh_base, sh_stride, sh_desc_base;
    npk_e1_fault fault;
    npk_e1_stats stats;
    uint32_t last_st;     /* CTRL_STATUS at the last poll */
    int jobs;             /* npk_port_jobs: 0 registers, 1 jobs polled on our clock, 2 the kernel waits */
    npk_pjob_state js;    /* how the last job ended */
};

/* Start-to-done latency of a direct scalar opcode (e1-rtl-notes.md). */
static unsigned scalar_latency(unsigned op) {
    switch (op) {
    case E1_OP_ADD: case E1_OP_SUB: case E1_OP_MAX_U32: case E1_OP_MIN_U32: case E1_OP_RELU4_S8: return 1;
    case E1_OP_MUL_LO: case E1_OP_MAC_S16: case E1_OP_EXP2_NEG_Q0_8: return 2;
    default: return 3;
    }
}

static int is_tile_op(unsigned op) { return op == E1_OP_GEMM_S8 || op == E1_OP_GEMM_S4 || op == E1_OP_VRELU_S8; }

static int rd(npk_e1 *e, uint32_t off, uint32_t *v) { return npk_drv_read32(e->port, "e1", off, v); }
static int wr(npk_e1 *e, uint32_t off, uint32_t v) { return npk_drv_write32(e->port, "e1", off, v); }

/* Write a register unless the shadow says it already holds v. */
static int wr_cached(npk_e1 *e, uint32_t off, uint32_t *shadow, uint32_t v) {
    if (e->shadow_valid && *shadow == v) return 0;
    int rc = wr(e, off, v);
    if (!rc) *shadow = v;
    return rc;
}

static void invalidate(npk_e1 *e) { e->shadow_valid = 0; }

static void validate_shadow(npk_e1 *e) {
    /* After all shadowed registers were written once, trust the shadow. */
    e->shadow_valid = 1;
}

int npk_e1_open(npk_e1 **out, npk_port *port) {
    *out = NULL;
    if (!port || strcmp(npk_port_device(port), "e1"))
        return npk_err(NPK_EINVAL, "e1 driver: the port is not connected to an e1 device");
    npk_e1 *e = calloc(1, sizeof *e);
    if (!e) return npk_err(NPK_ENOMEM, "out of memory");
    e->port = port;
    e->timeout = 10000000;
    /* 4 KiB, so that the in-process port backs the ring with one host
     * buffer and the model fetches descriptors in place (zero copy) */
    int rc = npk_port_alloc(port, E1_RING_ALLOC_BYTES, 16, &e->ring);
    if (rc) {
        free(e);
        return npk_err_prefix(rc, "e1 driver: allocating the descriptor ring");
    }
    uint32_t st, tail;
    if ((rc = rd(e, E1_REG_CTRL_STATUS, &st)) || (rc = rd(e, E1_REG_DESC_TAIL, &tail))) {
        npk_port_free(port, e->ring);
        free(e);
        return rc;
    }
    if (st & E1_ST_BUSY) {
        npk_port_free(port, e->ring);
        free(e);
        return npk_err(NPK_EDEVICE, "e1 driver: the device is busy (CTRL_STATUS 0x%x) at open", st);
    }
    e->slot = tail & 7;
    /* Write every shadowed register once so the shadow is exact. */
    e->sh_opcode = 0;
    e->sh_cmd_param = 0;
    if ((rc = wr(e, E1_REG_OPCODE, 0)) || (rc = wr(e, E1_REG_CMD_PARAM, 0)) || (rc = wr(e, E1_REG_GEMM_CFG, 0)) ||
        (rc = wr(e, E1_REG_GEMM_BASE, 0)) || (rc = wr(e, E1_REG_GEMM_STRIDE, 0)) ||
        (rc = wr(e, E1_REG_DESC_BASE, (uint32_t)e->ring))) {
        npk_port_free(port, e->ring);
        free(e);
        return rc;
    }
    e->sh_cfg = e->sh_base = e->sh_stride = 0;
    e->sh_desc_base = (uint32_t)e->ring;
    validate_shadow(e);
    e->fault.desc_index = -1;
    e->jobs = npk_port_jobs(port);
    *out = e;
    return 0;
}

void npk_e1_close(npk_e1 *e) {
    if (!e) return;
    npk_port_free(e->port, e->ring);
    free(e);
}

npk_port *npk_e1_port(npk_e1 *e) { return e->port; }
void npk_e1_set_timeout(npk_e1 *e, uint64_t cycles) { e->timeout = cycles ? cycles : 1; }
void npk_e1_set_owner(npk_e1 *e, uint32_t token) { e->owner = token & 0xfffffu; }
const npk_e1_fault *npk_e1_last_fault(const npk_e1 *e) { return &e->fault; }
const npk_e1_stats *npk_e1_get_stats(const npk_e1 *e) { return &e->stats; }
void npk_e1_reset_stats(npk_e1 *e) { memset(&e->stats, 0, sizeof e->stats); }

int npk_e1_clear(npk_e1 *e) { return wr(e, E1_REG_CTRL_STATUS, E1_CTRL_CLEAR); }

/* Poll check: CTRL_STATUS shows done (busy clear). */
static int check_done(void *ctx, npk_poll *pl) {
    npk_e1 *e = ctx;
    (void)pl;
    int rc = rd(e, E1_REG_CTRL_STATUS, &e->last_st);
    if (rc) return rc;
    return (e->last_st & E1_ST_BUSY) ? NPK_POLL_BUSY : NPK_POLL_DONE;
}

/* Soft reset after a timeout (job.h recovery policy). e1 has no reset
 * register, but its engine ends every operation by itself (a descriptor
 * stalls at most 128 cycles before DESC_STATUS timeout): drain it, clear
 * done/error, forget the register shadow and take the ring position from
 * the device. */
#define E1_DRAIN_BUDGET (1u << 20)
static int recover(npk_e1 *e) {
    npk_poll pl = {.budget = E1_DRAIN_BUDGET, .step = 1, .max_step = 64, .what = "e1: draining"};
    int rc = npk_poll_run(e->port, &pl, check_done, e);
    e->stats.device_cycles += pl.waited;
    if (pl.expired)
        return npk_err(NPK_EDEVICE, "e1: still busy %u cycles after the timeout (CTRL_STATUS 0x%x): the device is wedged",
                       E1_DRAIN_BUDGET, e->last_st);
    uint32_t tail = 0;
    if (rc || (rc = npk_e1_clear(e)) || (rc = rd(e, E1_REG_DESC_TAIL, &tail))) return rc;
    invalidate(e);
    e->slot = tail & 7;
    npk_port_job_recovered(e->port);
    return 0;
}

/* Wait until CTRL_STATUS shows done: first the expected latency, then
 * growing steps up to the timeout. *status gets the final value. */
static int wait_done(npk_e1 *e, uint64_t expect, uint32_t *status) {
    npk_poll pl = {.budget = e->timeout, .first = expect, .step = 1, .max_step = 64, .what = "e1: waiting"};
    int rc = npk_poll_run(e->port, &pl, check_done, e);
    if (pl.expired) {
        e->stats.device_cycles += pl.waited;
        uint32_t st = e->last_st;
        int rrc = recover(e);
        if (rrc) return npk_err_prefix(rrc, "e1: still busy after %" PRIu64 " cycles (CTRL_STATUS 0x%x)", pl.waited, st);
        return npk_err(NPK_ETIMEDOUT, "e1: still busy after %" PRIu64 " cycles (CTRL_STATUS 0x%x); drained and cleared",
                       pl.waited, st);
    }
    if (rc) return rc;
    if (!(e->last_st & E1_ST_DONE))
        return npk_err(NPK_EDEVICE, "e1: the device did not accept the start (CTRL_STATUS 0x%x)", e->last_st);
    *status = e->last_st;
    e->stats.device_cycles += pl.waited;
    return 0;
}

/* ---- ring batches as jobs of the port (kmd: the kernel starts, watches, clears) ---- */

/* One report of the running job (npk_pjob_state_fn): kept; done unless it is busy. */
static int job_state(void *ctx, const npk_pjob_state *s, npk_poll *pl) {
    npk_e1 *e = ctx;
    (void)pl;
    e->js = *s;
    return s->result == NPK_PJOB_BUSY ? NPK_POLL_BUSY : NPK_POLL_DONE;
}

/* Descriptors [first, first + n) of the ring as one job, until it ends: polled between steps
 * of the caller's clock with the register path's schedule (first the expected latency), or the
 * kernel waits. *status gets CTRL_STATUS as the register path sees it (done, error). */
static int job_run(npk_e1 *e, unsigned first, unsigned n, uint64_t expect, uint32_t *status) {
    npk_pjob job = {.format = NPK_PJOB_E1_RING, .addr = e->ring, .count = n, .first = first};
    int rc = npk_port_job_submit(e->port, &job);
    if (rc) return npk_err_prefix(-rc, "e1: submitting %u descriptors", n);
    npk_poll pl = {.budget = e->timeout, .first = expect, .step = 1, .max_step = 64, .what = "e1: waiting"};
    rc = npk_port_job_until(e->port, &pl, job_state, e);
    e->stats.device_cycles += pl.waited;
    if (pl.expired) { /* drain as the register path does, then end the kernel's job */
        int rrc = recover(e);
        if (!rrc) rrc = npk_port_reset(e->port);
        if (rrc) return npk_err_prefix(-rrc, "e1: still busy after %" PRIu64 " cycles", pl.waited);
        return npk_err(NPK_ETIMEDOUT, "e1: still busy after %" PRIu64 " cycles; drained and cleared", pl.waited);
    }
    if (rc) return rc;
    if (e->js.result == NPK_PJOB_TIMEOUT) {
        uint32_t tail = 0;
        invalidate(e);
        if (!rd(e, E1_REG_DESC_TAIL, &tail)) e->slot = tail & 7;
        npk_port_job_recovered(e->port);
        return npk_err(NPK_ETIMEDOUT, "e1: the ring batch did not finish before the kernel's timeout; it cleared the device");
    }
    *status = E1_ST_DONE | (e->js.result == NPK_PJOB_ERROR ? E1_ST_ERROR : 0);
    return 0;
}

/* Any MMIO start: check idle, write CTRL start, wait. */
static int start_and_wait(npk_e1 *e, uint64_t expect, uint32_t *status) {
    int rc = wr(e, E1_REG_CTRL_STATUS, E1_CTRL_START);
    if (rc) return rc;
    return wait_done(e, expect, status);
}

static int ternary_lanes_ok(uint32_t v) {
    for (int i = 0; i < 16; i++)
        if (((v >> (2 * i)) & 3u) == 3u) return 0;
    return 1;
}

static int scalar_impl(npk_e1 *e, unsigned opcode, uint32_t a, uint32_t b, uint32_t acc, int ternary,
                  npk_e1_result *r) {
    if (opcode >= E1_NUM_OPCODES) return npk_err(NPK_EINVAL, "e1: opcode %u does not exist (0..15)", opcode);
    if (is_tile_op(opcode))
        return npk_err(NPK_EINVAL, "e1: opcode %u is a scratchpad op; use npk_e1_gemm_run/npk_e1_vrelu_run", opcode);
    if (ternary && opcode != E1_OP_DOT16_S2)
        return npk_err(NPK_EINVAL, "e1: ternary decode applies to DOT16_S2 only (opcode %u)", opcode);
    if (ternary && (!ternary_lanes_ok(a) || !ternary_lanes_ok(b)))
        return npk_err(NPK_EINVAL, "e1: DOT16_S2 ternary operand has a reserved 0b11 lane (A 0x%08x, B 0x%08x)", a, b);
    int rc;
    if ((rc = wr(e, E1_REG_OP_A, a)) || (rc = wr(e, E1_REG_OP_B, b)) || (rc = wr(e, E1_REG_ACC, acc)) ||
        (rc = wr_cached(e, E1_REG_OPCODE, &e->sh_opcode, opcode)) ||
        (rc = wr_cached(e, E1_REG_CMD_PARAM, &e->sh_cmd_param, e1_cmd_param(0, ternary, e->owner))))
        return rc;
    uint32_t st;
    if ((rc = start_and_wait(e, scalar_latency(opcode), &st))) return rc;
    e->stats.direct[opcode]++;
    if (st & E1_ST_ERROR) {
        e->fault = (npk_e1_fault){st, 0, 0, 0, -1};
        npk_port_job_code(e->port, st);
        npk_e1_clear(e);
        return npk_err(NPK_EDEVICE, "e1: opcode %u failed on the device (CTRL_STATUS 0x%x)", opcode, st);
    }
    if (r) {
        if ((rc = rd(e, E1_REG_RESULT, &r->result)) || (rc = rd(e, E1_REG_RESULT_HI, &r->result_hi))) return rc;
    }
    return 0;
}

/* Each command is a job (include/npukit/job.h) on track "runtime". */
int npk_e1_scalar(npk_e1 *e, unsigned opcode, uint32_t a, uint32_t b, uint32_t acc, int ternary, npk_e1_result *r) {
    npk_job j;
    npk_job_begin(&j, e->port, "runtime", "scalar command");
    npk_job_args(&j, "\"opcode\":%u", opcode);
    return npk_job_end(&j, scalar_impl(e, opcode, a, b, acc, ternary, r));
}

int npk_e1_scratch_write(npk_e1 *e, unsigned off, const void *src, unsigned len) {
    if (off > E1_SCRATCH_BYTES || len > E1_SCRATCH_BYTES - off)
        return npk_err(NPK_EINVAL, "e1: scratchpad write [%u, %u) is outside the 64-byte scratchpad", off, off + len);
    const uint8_t *s = src;
    unsigned end = off + len;
    for (unsigned w = off / 4; w * 4 < end; w++) {
        unsigned lo = w * 4;
        uint8_t b[4] = {0};
        int rc;
        if (lo < off || lo + 4 > end) {
            uint32_t old;
            if ((rc = rd(e, E1_REG_SCRATCH(w), &old))) return rc;
            for (int i = 0; i < 4; i++) b[i] = (uint8_t)(old >> (8 * i));
        }
        for (unsigned i = 0; i < 4; i++)
            if (lo + i >= off && lo + i < end) b[i] = s[lo + i - off];
        uint32_t v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        if ((rc = wr(e, E1_REG_SCRATCH(w), v))) return rc;
    }
    e->stats.scratch_bytes_written += len;
    return 0;
}

int npk_e1_scratch_read(npk_e1 *e, unsigned off, void *dst, unsigned len) {
    if (off > E1_SCRATCH_BYTES || len > E1_SCRATCH_BYTES - off)
        return npk_err(NPK_EINVAL, "e1: scratchpad read [%u, %u) is outside the 64-byte scratchpad", off, off + len);
    uint8_t *d = dst;
    unsigned end = off + len;
    for (unsigned w = off / 4; w * 4 < end; w++) {
        uint32_t v;
        int rc = rd(e, E1_REG_SCRATCH(w), &v);
        if (rc) return rc;
        for (unsigned i = 0; i < 4; i++) {
            unsigned a = w * 4 + i;
            if (a >= off && a < end) d[a - off] = (uint8_t)(v >> (8 * i));
        }
    }
    e->stats.scratch_bytes_read += len;
    return 0;
}

int npk_e1_gemm_check(const npk_e1_gemm *g, int int4) {
    const char *op = int4 ? "GEMM_S4" : "GEMM_S8";
    if (g->m < 1 || g->m > 3 || g->n < 1 || g->n > 3 || g->k < 1 || g->k > 7)
        return npk_err(NPK_EINVAL, "e1 %s: tile %ux%ux%u is outside M 1..3, N 1..3, K 1..7", op, g->m, g->n, g->k);
    if (g->a_base > 63 || g->b_base > 63 || g->c_base > 63 || g->a_stride > 15 || g->b_stride > 15 ||
        g->c_stride > 15)
        return npk_err(NPK_EINVAL, "e1 %s: bases must be 0..63 and strides 0..15", op);
    unsigned limit = int4 ? 128 : 64;
    unsigned last_a = g->a_base + (g->m - 1) * g->a_stride + (g->k - 1);
    unsigned last_b = g->b_base + (g->k - 1) * g->b_stride + (g->n - 1);
    if (last_a >= limit)
        return npk_err(NPK_EINVAL, "e1 %s: last A %s %u is outside the scratchpad (< %u)", op, int4 ? "nibble" : "byte",
                       last_a, limit);
    if (last_b >= limit)
        return npk_err(NPK_EINVAL, "e1 %s: last B %s %u is outside the scratchpad (< %u)", op, int4 ? "nibble" : "byte",
                       last_b, limit);
    if (g->c_base % 4 || g->c_stride % 4)
        return npk_err(NPK_EINVAL, "e1 %s: C base %u and stride %u must be word-aligned", op, g->c_base, g->c_stride);
    unsigned last_c = g->c_base + (g->m - 1) * g->c_stride + 4 * (g->n - 1) + 3;
    if (last_c >= 64) return npk_err(NPK_EINVAL, "e1 %s: last C byte %u is outside the scratchpad", op, last_c);
    return 0;
}

int npk_e1_gemm_layout(int int4, unsigned m, unsigned n, unsigned k, npk_e1_gemm *g) {
    memset(g, 0, sizeof *g);
    g->m = m;
    g->n = n;
    g->k = k;
    g->a_base = 0;
    g->a_stride = k;
    g->b_stride = n;
    /* A: m*k elements, B right after it, both in element units; C word-aligned in bytes. */
    unsigned a_elems = m * k, b_elems = k * n;
    g->b_base = a_elems;
    unsigned ab_bytes = int4 ? (a_elems + b_elems + 1) / 2 : a_elems + b_elems;
    g->c_base = (ab_bytes + 3) & ~3u;
    g->c_stride = 4 * n;
    if (m < 1 || m > 3 || n < 1 || n > 3 || k < 1 || k > 7 || g->c_base + 4 * m * n > 64 || g->b_base > 63 ||
        g->c_stride > 15)
        return npk_err(NPK_EINVAL, "e1: a %ux%ux%u %s tile does not fit the 64-byte scratchpad", m, n, k,
                       int4 ? "int4" : "int8");
    return npk_e1_gemm_check(g, int4);
}

static int program_gemm(npk_e1 *e, const npk_e1_gemm *g) {
    int rc;
    if ((rc = wr_cached(e, E1_REG_GEMM_CFG, &e->sh_cfg, e1_gemm_cfg(g->m, g->n, g->k))) ||
        (rc = wr_cached(e, E1_REG_GEMM_BASE, &e->sh_base, e1_gemm_base(g->a_base, g->b_base, g->c_base))) ||
        (rc = wr_cached(e, E1_REG_GEMM_STRIDE, &e->sh_stride, e1_gemm_stride(g->a_stride, g->b_stride, g->c_stride))))
        return rc;
    return 0;
}

static int gemm_run_impl(npk_e1 *e, const npk_e1_gemm *g, int int4) {
    int rc = npk_e1_gemm_check(g, int4);
    if (rc) return rc;
    unsigned op = int4 ? E1_OP_GEMM_S4 : E1_OP_GEMM_S8;
    if ((rc = program_gemm(e, g)) || (rc = wr_cached(e, E1_REG_OPCODE, &e->sh_opcode, op)) ||
        (rc = wr_cached(e, E1_REG_CMD_PARAM, &e->sh_cmd_param, e1_cmd_param(0, 0, e->owner))))
        return rc;
    uint32_t st;
    if ((rc = start_and_wait(e, (uint64_t)g->m * g->n * g->k, &st))) return rc;
    e->stats.direct[op]++;
    e->stats.macs += (uint64_t)g->m * g->n * g->k;
    if (st & E1_ST_ERROR) {
        e->fault = (npk_e1_fault){st, 0, 0, 0, -1};
        npk_port_job_code(e->port, st);
        npk_e1_clear(e);
        invalidate(e);
        return npk_err(NPK_EDEVICE, "e1: the device rejected the %ux%ux%u GEMM tile (CTRL_STATUS 0x%x)", g->m, g->n,
                       g->k, st);
    }
    return 0;
}

int npk_e1_gemm_run(npk_e1 *e, const npk_e1_gemm *g, int int4) {
    npk_job j;
    npk_job_begin(&j, e->port, "runtime", "gemm tile");
    npk_job_args(&j, "\"m\":%u,\"n\":%u,\"k\":%u,\"int4\":%d", g->m, g->n, g->k, int4);
    return npk_job_end(&j, gemm_run_impl(e, g, int4));
}

/* Pack row-major int values into scratch bytes (int8) or nibbles (int4). */
static void pack_elems(uint8_t *buf, unsigned first, const int8_t *v, unsigned count, int int4) {
    for (unsigned i = 0; i < count; i++) {
        unsigned idx = first + i;
        if (int4) {
            uint8_t nib = (uint8_t)v[i] & 0xf;
            buf[idx / 2] = (uint8_t)((idx & 1) ? (buf[idx / 2] & 0x0f) | nib << 4 : (buf[idx / 2] & 0xf0) | nib);
        } else {
            buf[idx] = (uint8_t)v[i];
        }
    }
}

int npk_e1_gemm_tile(npk_e1 *e, int int4, unsigned m, unsigned n, unsigned k, const int8_t *A, const int8_t *B,
                     int32_t *C) {
    npk_e1_gemm g;
    int rc = npk_e1_gemm_layout(int4, m, n, k, &g);
    if (rc) return rc;
    if (int4) {
        for (unsigned i = 0; i < m * k; i++)
            if (A[i] < -8 || A[i] > 7) return npk_err(NPK_EINVAL, "e1 GEMM_S4: A[%u] = %d is not an int4 value", i, A[i]);
        for (unsigned i = 0; i < k * n; i++)
            if (B[i] < -8 || B[i] > 7) return npk_err(NPK_EINVAL, "e1 GEMM_S4: B[%u] = %d is not an int4 value", i, B[i]);
    }
    uint8_t buf[E1_SCRATCH_BYTES] = {0};
    pack_elems(buf, g.a_base, A, m * k, int4);
    pack_elems(buf, g.b_base, B, k * n, int4);
    if ((rc = npk_e1_scratch_write(e, 0, buf, g.c_base))) return rc;
    if ((rc = npk_e1_gemm_run(e, &g, int4))) return rc;
    uint8_t out[E1_SCRATCH_BYTES];
    if ((rc = npk_e1_scratch_read(e, g.c_base, out, 4 * m * n))) return rc;
    for (unsigned i = 0; i < m * n; i++)
        C[i] = (int32_t)((uint32_t)out[4 * i] | (uint32_t)out[4 * i + 1] << 8 | (uint32_t)out[4 * i + 2] << 16 |
                         (uint32_t)out[4 * i + 3] << 24);
    return 0;
}

static int vrelu_cfg_check(unsigned len, unsigned src, unsigned dst) {
    if (len < 1 || len > 63 || src > 63 || dst > 63 || src + len > 64 || dst + len > 64)
        return npk_err(NPK_EINVAL, "e1 VRELU_S8: length %u from %u to %u does not fit (1..63 bytes inside 64)", len,
                       src, dst);
    return 0;
}

static int vrelu_run_impl(npk_e1 *e, unsigned src, unsigned dst, unsigned len) {
    int rc = vrelu_cfg_check(len, src, dst);
    if (rc) return rc;
    if ((rc = wr_cached(e, E1_REG_GEMM_CFG, &e->sh_cfg, e1_vrelu_cfg(len))) ||
        (rc = wr_cached(e, E1_REG_GEMM_BASE, &e->sh_base, e1_gemm_base(src, dst, 0))) ||
        (rc = wr_cached(e, E1_REG_OPCODE, &e->sh_opcode, E1_OP_VRELU_S8)) ||
        (rc = wr_cached(e, E1_REG_CMD_PARAM, &e->sh_cmd_param, e1_cmd_param(0, 0, e->owner))))
        return rc;
    uint32_t st;
    if ((rc = start_and_wait(e, len, &st))) return rc;
    e->stats.direct[E1_OP_VRELU_S8]++;
    if (st & E1_ST_ERROR) {
        e->fault = (npk_e1_fault){st, 0, 0, 0, -1};
        npk_port_job_code(e->port, st);
        npk_e1_clear(e);
        invalidate(e);
        return npk_err(NPK_EDEVICE, "e1: the device rejected VRELU of %u bytes (CTRL_STATUS 0x%x)", len, st);
    }
    return 0;
}

int npk_e1_vrelu_run(npk_e1 *e, unsigned src, unsigned dst, unsigned len) {
    npk_job j;
    npk_job_begin(&j, e->port, "runtime", "vrelu");
    npk_job_args(&j, "\"len\":%u", len);
    return npk_job_end(&j, vrelu_run_impl(e, src, dst, len));
}

int npk_e1_relu(npk_e1 *e, const int8_t *in, int8_t *out, unsigned len) {
    if (len > 63) return npk_err(NPK_EINVAL, "e1 VRELU_S8: %u bytes exceed one 63-byte pass", len);
    if (!len) return 0;
    int rc;
    if ((rc = npk_e1_scratch_write(e, 0, in, len)) || (rc = npk_e1_vrelu_run(e, 0, 0, len)) ||
        (rc = npk_e1_scratch_read(e, 0, out, len)))
        return rc;
    return 0;
}

/* ---- descriptors ---- */

npk_e1_desc npk_e1_desc_scalar(unsigned opcode, uint32_t a, uint32_t b, uint32_t acc) {
    npk_e1_desc d = {{e1_desc_w0(opcode, 0, 0, 0, 0), a, b, acc}};
    return d;
}

npk_e1_desc npk_e1_desc_stream(unsigned opcode, uint64_t src, unsigned scratch_off, unsigned len, uint64_t wb_addr) {
    npk_e1_desc d = {{e1_desc_w0(opcode, 1, scratch_off, len, wb_addr != 0), (uint32_t)src, (uint32_t)wb_addr, 0}};
    return d;
}

const char *npk_e1_desc_status_text(uint32_t code) {
    switch (e1_ds_code(code)) {
    case 0x00: return "no status";
    case E1_DS_EMPTY: return "doorbell on an empty ring (DESC_HEAD == DESC_TAIL)";
    case E1_DS_DONE: return "completed";
    case E1_DS_BASE_ALIGN: return "DESC_BASE is not word-aligned";
    case E1_DS_CFG: return "GEMM/VRELU configuration invalid at launch";
    case E1_DS_TIMEOUT: return "descriptor engine timeout (128 cycles without progress)";
    case E1_DS_FETCH_ERR: return "bus error reading the descriptor";
    case E1_DS_STREAM_CFG: return "invalid stream configuration";
    case E1_DS_STREAM_ERR: return "bus error on a tensor stream read";
    case E1_DS_OWNER: return "SEC owner gate rejected the doorbell (CMD_PARAM owner token)";
    case E1_DS_NO_OWNER: return "descriptor lacks the valid_owner bit";
    case E1_DS_WB_CFG: return "malformed writeback request";
    case E1_DS_WB_ERR: return "bus error on a writeback write";
    default: return "unknown descriptor status";
    }
}

int npk_e1_cmdbuf_check(const npk_e1_desc *d, unsigned n, const npk_e1_tilecfg *cfg, int ternary) {
    const npk_e1_gemm *gemm = cfg && !cfg->vrelu ? &cfg->gemm : NULL;
    if (n < 1 || n > E1_RING_MAX_PENDING)
        return npk_err(NPK_EINVAL, "e1: a command buffer holds 1..7 descriptors, not %u", n);
    unsigned checked = 0; /* GEMM opcodes whose configuration check passed */
    for (unsigned i = 0; i < n; i++) {
        uint32_t w0 = d[i].w[0];
        unsigned op = e1_desc_opcode(w0);
        if (!e1_desc_valid_owner(w0)) return npk_err(NPK_EINVAL, "descriptor %u: valid_owner (w0 bit 31) is not set", i);
        if (e1_desc_stream(w0)) {
            unsigned off = e1_desc_scratch_off(w0), len = e1_desc_len(w0);
            if (d[i].w[1] % 4)
                return npk_err(NPK_EINVAL, "descriptor %u: stream source 0x%08x is not word-aligned", i, d[i].w[1]);
            if (len == 0) return npk_err(NPK_EINVAL, "descriptor %u: stream length is 0", i);
            if (len % 4) return npk_err(NPK_EINVAL, "descriptor %u: stream length %u is not word-aligned", i, len);
            if (off % 4) return npk_err(NPK_EINVAL, "descriptor %u: scratch offset %u is not word-aligned", i, off);
            if (off + len > 64)
                return npk_err(NPK_EINVAL, "descriptor %u: stream of %u bytes at scratch offset %u overruns 64 bytes", i,
                               len, off);
        }
        if (e1_desc_writeback(w0)) {
            if (op != E1_OP_GEMM_S8 && op != E1_OP_GEMM_S4)
                return npk_err(NPK_EINVAL, "descriptor %u: writeback is only supported for GEMM opcodes (opcode %u)", i,
                               op);
            if (!gemm) return npk_err(NPK_EINVAL, "descriptor %u: GEMM writeback needs a GEMM configuration", i);
            if (d[i].w[2] % 4)
                return npk_err(NPK_EINVAL, "descriptor %u: writeback destination 0x%08x is not word-aligned", i,
                               d[i].w[2]);
            if (gemm->c_base + gemm->m * gemm->n * 4 > 64)
                return npk_err(NPK_EINVAL, "descriptor %u: writeback of %u words from C_BASE %u overruns the scratchpad",
                               i, gemm->m * gemm->n, gemm->c_base);
            /* The chip copies M*N contiguous words from C_BASE and ignores C_STRIDE: with
             * gaps between C rows the words written would not be the C tile. */
            if (gemm->m > 1 && gemm->c_stride != 4 * gemm->n)
                return npk_err(NPK_EINVAL,
                               "descriptor %u: writeback copies %u contiguous words from C_BASE (the chip ignores "
                               "C_STRIDE), so C_STRIDE must be 4*N = %u, not %u",
                               i, gemm->m * gemm->n, 4 * gemm->n, gemm->c_stride);
        }
        if (op == E1_OP_GEMM_S8 || op == E1_OP_GEMM_S4) {
            if (!gemm) return npk_err(NPK_EINVAL, "descriptor %u: GEMM needs a GEMM configuration", i);
            /* one configuration for the buffer: checked for the first descriptor of each opcode */
            int rc = checked & (1u << op) ? 0 : npk_e1_gemm_check(gemm, op == E1_OP_GEMM_S4);
            if (rc) return npk_err_prefix(rc, "descriptor %u", i);
            checked |= 1u << op;
        }
        if (op == E1_OP_VRELU_S8) {
            if (!cfg || !cfg->vrelu) return npk_err(NPK_EINVAL, "descriptor %u: VRELU needs a VRELU configuration", i);
            int rc = vrelu_cfg_check(cfg->len, cfg->src, cfg->dst);
            if (rc) return npk_err_prefix(rc, "descriptor %u", i);
        }
        /* OP_A is w1 and OP_B is w2 even when the descriptor streams (w1 is then also the
         * source address): the chip masks a reserved lane in the last descriptor (status 2,
         * RESULT unchanged) and stalls to a timeout otherwise, so refuse it here. */
        if (op == E1_OP_DOT16_S2 && ternary && (!ternary_lanes_ok(d[i].w[1]) || !ternary_lanes_ok(d[i].w[2])))
            return npk_err(NPK_EINVAL, "descriptor %u: DOT16_S2 ternary operand has a reserved 0b11 lane (%s)", i,
                           e1_desc_stream(w0) ? "w1 is OP_A and the stream source" : "w1 = OP_A, w2 = OP_B");
    }
    return 0;
}

/* Expected cycles of a batch at zero memory latency (e1-rtl-notes.md costs). */
static uint64_t batch_estimate(const npk_e1_desc *d, unsigned n, const npk_e1_tilecfg *cfg) {
    uint64_t c = 0;
    for (unsigned i = 0; i < n; i++) {
        uint32_t w0 = d[i].w[0];
        unsigned op = e1_desc_opcode(w0);
        c += 8 + 2; /* fetch + launch/advance */
        if (e1_desc_stream(w0)) c += 2 * (e1_desc_len(w0) / 4) + 1; /* the beats and the second launch */
        if (op == E1_OP_GEMM_S8 || op == E1_OP_GEMM_S4) {
            const npk_e1_gemm *g = &cfg->gemm;
            c += (uint64_t)g->m * g->n * g->k;
            if (e1_desc_writeback(w0)) c += 2ull * g->m * g->n;
        } else if (op == E1_OP_VRELU_S8) {
            c += cfg->len;
        } else {
            c += scalar_latency(op);
        }
    }
    return c;
}

static int submit_impl(npk_e1 *e, const npk_e1_desc *d, unsigned n, const npk_e1_tilecfg *cfg, int ternary,
                  npk_e1_result *last) {
    int rc = npk_e1_cmdbuf_check(d, n, cfg, ternary);
    if (rc) return rc;
    unsigned first = e->slot;
    /* the descriptors in ring order, staged with one write up to the ring's end and one after it wraps */
    uint8_t b[E1_RING_MAX_PENDING * E1_DESC_BYTES];
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    _Static_assert(sizeof(npk_e1_desc) == E1_DESC_BYTES, "npk_e1_desc is the descriptor's four words");
    memcpy(b, d, n * E1_DESC_BYTES); /* four little-endian words each: the host's layout */
#else
    for (unsigned i = 0; i < n; i++)
        for (int w = 0; w < 4; w++)
            for (int j = 0; j < 4; j++) b[i * E1_DESC_BYTES + 4 * w + j] = (uint8_t)(d[i].w[w] >> (8 * j));
#endif
    for (unsigned i = 0; i < n;) {
        unsigned slot = (first + i) & 7, run = E1_RING_ENTRIES - slot < n - i ? E1_RING_ENTRIES - slot : n - i;
        if ((rc = npk_port_mem_write(e->port, e->ring + slot * E1_DESC_BYTES, b + i * E1_DESC_BYTES,
                                     run * E1_DESC_BYTES)))
            return npk_err_prefix(rc, "e1: staging descriptors %u..%u", i, i + run - 1);
        i += run;
    }
    int uses_cfg = 0;
    for (unsigned i = 0; i < n; i++) uses_cfg |= is_tile_op(e1_desc_opcode(d[i].w[0]));
    if (uses_cfg) {
        if (cfg->vrelu) {
            if ((rc = wr_cached(e, E1_REG_GEMM_CFG, &e->sh_cfg, e1_vrelu_cfg(cfg->len))) ||
                (rc = wr_cached(e, E1_REG_GEMM_BASE, &e->sh_base, e1_gemm_base(cfg->src, cfg->dst, 0))))
                return rc;
        } else if ((rc = program_gemm(e, &cfg->gemm))) {
            return rc;
        }
    }
    unsigned head = (first + n) & 7;
    uint32_t st = 0;
    if (e->jobs) { /* the kernel programs the ring registers and starts the batch */
        if ((rc = wr_cached(e, E1_REG_CMD_PARAM, &e->sh_cmd_param, e1_cmd_param(1, ternary, e->owner))) ||
            (rc = job_run(e, first, n, batch_estimate(d, n, cfg), &st)))
            return rc;
        e->sh_desc_base = (uint32_t)e->ring;
    } else {
        if ((rc = wr_cached(e, E1_REG_DESC_BASE, &e->sh_desc_base, (uint32_t)e->ring)) ||
            (rc = wr(e, E1_REG_DESC_TAIL, first)) || (rc = wr(e, E1_REG_DESC_HEAD, head)) ||
            (rc = wr_cached(e, E1_REG_CMD_PARAM, &e->sh_cmd_param, e1_cmd_param(1, ternary, e->owner))) ||
            (rc = start_and_wait(e, batch_estimate(d, n, cfg), &st)))
            return rc;
    }
    e->stats.batches++;
    for (unsigned i = 0; i < n; i++) {
        unsigned op = e1_desc_opcode(d[i].w[0]);
        e->stats.desc[op]++;
        if (op == E1_OP_GEMM_S8 || op == E1_OP_GEMM_S4)
            e->stats.macs += (uint64_t)cfg->gemm.m * cfg->gemm.n * cfg->gemm.k;
        uint32_t w0 = d[i].w[0];
        e->stats.desc_bytes_read += E1_DESC_BYTES + (e1_desc_stream(w0) ? e1_desc_len(w0) : 0);
        if (e1_desc_writeback(w0))
            e->stats.desc_bytes_written += (op == E1_OP_GEMM_S8 || op == E1_OP_GEMM_S4)
                                               ? 4ull * cfg->gemm.m * cfg->gemm.n
                                               : (uint64_t)cfg->len;
    }
    if (st & E1_ST_ERROR) {
        uint32_t ds = e->js.code, tail = e->js.index, hd = head; /* jobs: the kernel read them and cleared */
        if (!e->jobs) {
            rd(e, E1_REG_DESC_STATUS, &ds);
            rd(e, E1_REG_DESC_TAIL, &tail);
            rd(e, E1_REG_DESC_HEAD, &hd);
        }
        int idx = (int)((tail - first) & 7);
        e->fault = (npk_e1_fault){st, ds, tail, hd, idx < (int)n ? idx : -1};
        npk_port_job_code(e->port, ds);
        if (!e->jobs) npk_e1_clear(e);
        e->slot = head; /* abandon the rest of the batch; the next batch starts after it */
        uint32_t code = e1_ds_code(ds);
        if (code == E1_DS_OWNER || code == E1_DS_BASE_ALIGN || code == E1_DS_EMPTY)
            return npk_err(NPK_EDEVICE, "e1 doorbell rejected: %s (DESC_STATUS 0x%x)", npk_e1_desc_status_text(code), ds);
        return npk_err(NPK_EDEVICE, "descriptor %d: %s (DESC_STATUS 0x%x, DESC_TAIL %u)", e->fault.desc_index,
                       npk_e1_desc_status_text(code), ds, tail);
    }
    e->slot = head;
    if (last) {
        if ((rc = rd(e, E1_REG_RESULT, &last->result)) || (rc = rd(e, E1_REG_RESULT_HI, &last->result_hi))) return rc;
    }
    return 0;
}

int npk_e1_submit(npk_e1 *e, const npk_e1_desc *d, unsigned n, const npk_e1_tilecfg *cfg, int ternary,
                  npk_e1_result *last) {
    npk_job j;
    npk_job_begin(&j, e->port, "runtime", "ring doorbell");
    npk_job_args(&j, "\"descriptors\":%u", n);
    return npk_job_end(&j, submit_impl(e, d, n, cfg, ternary, last));
}

int npk_e1_read_counters(npk_e1 *e, npk_e1_counters *c) {
    static const uint32_t offs[] = {E1_REG_PERF_CYCLES, E1_REG_PERF_MACS, E1_REG_PERF_OPS, E1_REG_PERF_ERRORS,
                                    E1_REG_PERF_UNSUPPORTED_OPS, E1_REG_DESC_TIMEOUT_COUNT, E1_REG_DESC_BYTES_READ,
                                    E1_REG_DESC_BYTES_WRITTEN, E1_REG_DESC_READ_BEATS, E1_REG_DESC_WRITE_BEATS,
                                    E1_REG_PERF_STALL_CYCLES, E1_REG_PERF_SCRATCH_BYTES, E1_REG_PERF_THERMAL_THROTTLE};
    uint32_t *dst[] = {&c->perf_cycles, &c->perf_macs, &c->perf_ops, &c->perf_errors, &c->perf_unsupported,
                       &c->desc_timeout_count, &c->desc_bytes_read, &c->desc_bytes_written, &c->desc_read_beats,
                       &c->desc_write_beats, &c->perf_stall_cycles, &c->perf_scratch_bytes, &c->perf_thermal_throttle};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        int rc = rd(e, offs[i], dst[i]);
        if (rc) return rc;
    }
    return 0;
}

int npk_e1_clear_counters(npk_e1 *e) { return wr(e, E1_REG_PERF_ERRORS, E1_PERF_CLEAR); }

/* The e1 row of the driver-level device table (include/npukit/devtab.h). */
const npk_dev_rt npk_e1_rt = {.model = &npk_e1_class}; /* descriptors are built by the driver; no text form */

void npk_e1_forget_registers(npk_e1 *e) { invalidate(e); }
uint64_t npk_e1_timeout(const npk_e1 *e) { return e->timeout; }
int npk_e1_recover(npk_e1 *e) { return recover(e); }
