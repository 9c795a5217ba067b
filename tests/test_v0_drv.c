// SPDX-License-Identifier: MIT
/* v0 driver: fallback handler, error decoding and recovery, a wrapping ring,
 * IRQ mode, timeouts on hung beats, routing with gemmini_present=0, and a
 * property test: random descriptor streams with injected faults, where
 * every submitted tag is reported exactly once (retired or dropped). */
#include "check.h"
#include "npukit/e1.h"
#include "npukit/npu.h"
#include "npukit/sim.h"
#include "npukit/v0.h"
#include "ops/ref.h"

#include <stdlib.h>

static uint64_t rng = 12345;
static uint32_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* completion log */
#define MAXTAG 20000
static int seen[MAXTAG];
static npk_v0_outcome outcome[MAXTAG];
static int order_ok = 1, last_tag = -1;
static void on_done(void *ctx, uint32_t tag, uint32_t slot, npk_v0_outcome how, int status) {
    (void)ctx, (void)slot;
    if (tag < MAXTAG) {
        seen[tag]++;
        outcome[tag] = how;
    }
    if (how != NPK_V0_DROPPED && status) order_ok = 0;
    if (how == NPK_V0_DROPPED && !status) order_ok = 0;
    if ((int)tag <= last_tag) order_ok = 0; /* reported in submission order */
    last_tag = (int)tag;
}
static void reset_log(void) {
    memset(seen, 0, sizeof seen);
    last_tag = -1;
    order_ok = 1;
}

static int exec_calls;
static int counting_exec(npk_port *p, const npk_v0_desc *d) {
    exec_calls++;
    return npk_v0_cpu_execute(p, d);
}

static int open_both(npk_port **p, npk_v0 **v, const char *opts, const npk_v0_config *cfg) {
    npk_v0_config def;
    npk_v0_config_default(&def);
    def.cpu_exec = npk_v0_cpu_execute;
    if (npk_port_open(p, NULL, "v0", opts) || npk_v0_open(v, *p, cfg ? cfg : &def)) {
        fprintf(stderr, "open: %s\n", npk_errmsg());
        return -1;
    }
    npk_v0_set_done_cb(*v, on_done, NULL);
    reset_log();
    return 0;
}

typedef struct mm {
    uint64_t a, b, c;
    int8_t A[4 * 16], B[4 * 16];
} mm;

static void mm_setup(npk_port *p, mm *m) {
    npk_port_alloc(p, 64, 64, &m->a);
    npk_port_alloc(p, 64, 64, &m->b);
    npk_port_alloc(p, 64, 64, &m->c);
    for (int i = 0; i < 64; i++) m->A[i] = (int8_t)rnd(), m->B[i] = (int8_t)rnd();
    npk_port_mem_write(p, m->a, m->A, 64);
    npk_port_mem_write(p, m->b, m->B, 64);
}
static npk_v0_desc mm_desc(const mm *m, uint32_t tag) {
    return npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 4, 4, 4, m->a, 16, m->b, 16, m->c, 16, tag);
}
static int mm_check(npk_port *p, const mm *m) {
    int32_t want[16];
    uint8_t got[64];
    npk_ref_matmul_s8s32(4, 4, 4, m->A, 16, m->B, 16, want, 4, 0, 0);
    npk_port_mem_read(p, m->c, got, 64);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            const uint8_t *q = got + i * 16 + j * 4;
            if ((int32_t)(q[0] | q[1] << 8 | q[2] << 16 | (uint32_t)q[3] << 24) != want[i * 4 + j]) return 0;
        }
    return 1;
}

static void test_fallback_and_errors(void) {
    npk_port *p;
    npk_v0 *v;
    if (open_both(&p, &v, NULL, NULL)) return;
    mm m;
    mm_setup(p, &m);
    /* FALLBACK and a misaligned matmul (the CPU can run it) retire on the CPU */
    npk_v0_desc ds[4] = {npk_v0_desc_simple(NPK_V0_OP_NOP, 0, 0), npk_v0_desc_simple(NPK_V0_OP_FALLBACK, 0, 1),
                         mm_desc(&m, 2), mm_desc(&m, 3)};
    ds[3].w[NPK_V0_W_A_STRIDE] = 20; /* misaligned stride, same rows through the CPU */
    npk_v0_desc unaligned = ds[3];
    (void)unaligned;
    CHECK_EQ(npk_v0_run(v, ds, 4), 0);
    CHECK_EQ(seen[0] + seen[1] + seen[2] + seen[3], 4);
    CHECK_EQ(outcome[0], NPK_V0_RETIRED_HW);
    CHECK_EQ(outcome[1], NPK_V0_RETIRED_CPU);
    CHECK_EQ(outcome[2], NPK_V0_RETIRED_HW);
    CHECK_EQ(outcome[3], NPK_V0_RETIRED_CPU);
    CHECK(order_ok);
    npk_v0_counters c;
    CHECK_EQ(npk_v0_read_counters(v, &c), 0);
    CHECK_EQ(c.perf_fallbacks, 2);
    CHECK_EQ(c.perf_macs, 64); /* only the device-retired matmul */
    CHECK_EQ(npk_v0_get_stats(v)->fallbacks_run, 2);
    uint32_t tag;
    npk_port_read32(p, NPK_V0_REG_COMPLETION_TAG, &tag);
    CHECK_EQ(tag, 3); /* written back by the handler */

    /* an unknown opcode cannot run anywhere: reported, dropped with what follows, ring flushed */
    reset_log();
    npk_v0_desc bad[3] = {npk_v0_desc_simple(NPK_V0_OP_NOP, 0, 10), npk_v0_desc_simple(0x42, 0, 11),
                          npk_v0_desc_simple(NPK_V0_OP_NOP, 0, 12)};
    int rc = npk_v0_run(v, bad, 3);
    CHECK(rc < 0);
    CHECK(strstr(npk_errmsg(), "unknown opcode") != NULL);
    CHECK(strstr(npk_errmsg(), "tag 0xb") != NULL);
    CHECK_EQ(outcome[10], NPK_V0_RETIRED_HW);
    CHECK_EQ(outcome[11], NPK_V0_DROPPED);
    CHECK_EQ(outcome[12], NPK_V0_DROPPED);
    CHECK_EQ(seen[10] + seen[11] + seen[12], 3);
    CHECK_EQ(npk_v0_pending(v), 0);
    /* usable again */
    CHECK_EQ(npk_v0_run(v, ds, 1), 0);

    /* bus error on A: names the address, recovers */
    npk_fault f = {NPK_ACC_READ, m.a + 16, 1, -1, NPK_BUS_ERROR, 0};
    npk_mem_add_fault(npk_sim_mem(npk_port_sim(p)), &f);
    npk_v0_desc one = mm_desc(&m, 20);
    rc = npk_v0_run(v, &one, 1);
    CHECK_EQ(rc, -NPK_EDEVICE);
    char want[64];
    snprintf(want, sizeof want, "at address 0x%llx", (unsigned long long)(m.a + 16));
    CHECK(strstr(npk_errmsg(), "bus response error") != NULL);
    CHECK(strstr(npk_errmsg(), want) != NULL);
    npk_mem_clear_faults(npk_sim_mem(npk_port_sim(p)));
    one.w[NPK_V0_W_TAG] = 21;
    CHECK_EQ(npk_v0_run(v, &one, 1), 0);
    CHECK(mm_check(p, &m));

    /* a hung beat: timeout, flush, recovery */
    npk_v0_close(v);
    npk_v0_config cfg;
    npk_v0_config_default(&cfg);
    cfg.cpu_exec = npk_v0_cpu_execute;
    cfg.timeout_cycles = 200000;
    npk_v0_open(&v, p, &cfg);
    npk_v0_set_done_cb(v, on_done, NULL);
    reset_log();
    f = (npk_fault){NPK_ACC_WRITE, m.c, 1, -1, NPK_BUS_HANG, 0};
    npk_mem_add_fault(npk_sim_mem(npk_port_sim(p)), &f);
    one.w[NPK_V0_W_TAG] = 30;
    rc = npk_v0_run(v, &one, 1);
    CHECK_EQ(rc, -NPK_ETIMEDOUT);
    CHECK(strstr(npk_errmsg(), "hung") != NULL);
    CHECK_EQ(outcome[30], NPK_V0_DROPPED);
    npk_mem_clear_faults(npk_sim_mem(npk_port_sim(p)));
    one.w[NPK_V0_W_TAG] = 31;
    CHECK_EQ(npk_v0_run(v, &one, 1), 0);

    /* a doorbell past the free slots, written behind the driver's back */
    npk_port_write32(p, NPK_V0_REG_DESC_DOORBELL, 9999);
    rc = npk_v0_wait(v);
    CHECK_EQ(rc, -NPK_EDEVICE);
    CHECK(strstr(npk_errmsg(), "queue overflow") != NULL);
    one.w[NPK_V0_W_TAG] = 32;
    CHECK_EQ(npk_v0_run(v, &one, 1), 0);
    npk_v0_close(v);

    /* without CPU fallback: unsupported_op is a hard failure with the validation detail */
    npk_v0_config_default(&cfg);
    cfg.cpu_exec = npk_v0_cpu_execute;
    cfg.cpu_fallback = 0;
    npk_v0_open(&v, p, &cfg);
    npk_v0_set_done_cb(v, on_done, NULL);
    reset_log();
    npk_v0_desc big = mm_desc(&m, 40);
    big.w[NPK_V0_W_SHAPE_K] = 2048;
    rc = npk_v0_run(v, &big, 1);
    CHECK_EQ(rc, -NPK_EDEVICE);
    CHECK(strstr(npk_errmsg(), "shape out of range") != NULL);
    CHECK(strstr(npk_errmsg(), "2048") != NULL);
    CHECK_EQ(outcome[40], NPK_V0_DROPPED);
    one.w[NPK_V0_W_TAG] = 41;
    CHECK_EQ(npk_v0_run(v, &one, 1), 0);
    npk_v0_close(v);

    /* the CPU executor is what the caller plugs in: none -> the unsupported
     * descriptor fails naming the cause and is dropped; a plugged one runs */
    npk_v0_config_default(&cfg);
    npk_v0_open(&v, p, &cfg);
    npk_v0_set_done_cb(v, on_done, NULL);
    reset_log();
    big.w[NPK_V0_W_TAG] = 42;
    rc = npk_v0_run(v, &big, 1);
    CHECK_EQ(rc, -NPK_EUNSUPPORTED);
    CHECK(strstr(npk_errmsg(), "no CPU executor") != NULL);
    CHECK_EQ(outcome[42], NPK_V0_DROPPED);
    one.w[NPK_V0_W_TAG] = 43;
    CHECK_EQ(npk_v0_run(v, &one, 1), 0);
    npk_v0_close(v);
    cfg.cpu_exec = counting_exec;
    npk_v0_open(&v, p, &cfg);
    exec_calls = 0;
    big.w[NPK_V0_W_TAG] = 44;
    CHECK_EQ(npk_v0_run(v, &big, 1), 0);
    CHECK_EQ(exec_calls, 1);
    CHECK_EQ(npk_v0_get_stats(v)->retired_cpu, 1);
    npk_v0_close(v);

    /* TENSOR_MEM window excluding the buffers */
    npk_v0_config_default(&cfg);
    cfg.cpu_exec = npk_v0_cpu_execute;
    cfg.tensor_mem_base = m.a;
    cfg.tensor_mem_len = 128; /* a and b, not c */
    npk_v0_open(&v, p, &cfg);
    rc = npk_v0_run(v, &one, 1);
    CHECK_EQ(rc, -NPK_EDEVICE);
    CHECK(strstr(npk_errmsg(), "TENSOR_MEM") != NULL);
    npk_v0_close(v);
    npk_port_close(p);
}

static void test_wrap_and_irq(void) {
    for (int irq = 0; irq < 2; irq++) {
        npk_port *p;
        npk_v0 *v;
        npk_v0_config cfg;
        npk_v0_config_default(&cfg);
        cfg.cpu_exec = npk_v0_cpu_execute;
        cfg.ring_len = 4;
        cfg.use_irq = irq;
        if (open_both(&p, &v, NULL, &cfg)) return;
        mm m[6];
        npk_v0_desc ds[30];
        for (int i = 0; i < 6; i++) mm_setup(p, &m[i]);
        for (int i = 0; i < 30; i++)
            ds[i] = i % 5 == 4 ? npk_v0_desc_simple(NPK_V0_OP_FALLBACK, 0, (uint32_t)i) : mm_desc(&m[i % 6], (uint32_t)i);
        CHECK_EQ(npk_v0_run(v, ds, 30), 0);
        int all = 1;
        for (int i = 0; i < 30; i++) all &= seen[i] == 1 && outcome[i] == (i % 5 == 4 ? NPK_V0_RETIRED_CPU : NPK_V0_RETIRED_HW);
        CHECK(all);
        CHECK(order_ok);
        for (int i = 0; i < 6; i++) CHECK(mm_check(p, &m[i]));
        CHECK(npk_v0_get_stats(v)->doorbells >= 10); /* 3 per doorbell with a 4-slot ring */
        uint32_t tail, irqs;
        npk_port_read32(p, NPK_V0_REG_DESC_TAIL, &tail);
        CHECK_EQ(tail, 30 % 4);
        npk_port_read32(p, NPK_V0_REG_IRQ_STATUS, &irqs);
        CHECK_EQ(irqs & NPK_V0_IRQ_DONE, 0); /* the driver acknowledged it */
        CHECK_EQ(npk_port_irq(p, 0), 0);
        npk_v0_close(v);
        npk_port_close(p);
    }
}

static void test_no_gemmini(void) {
    npk_port *p;
    npk_v0 *v;
    if (open_both(&p, &v, "gemmini_present=0", NULL)) return;
    CHECK_EQ(npk_v0_caps(v), 0);
    int8_t A[5 * 6], B[6 * 7];
    int32_t C[35], W[35];
    for (int i = 0; i < 30; i++) A[i] = (int8_t)rnd();
    for (int i = 0; i < 42; i++) B[i] = (int8_t)rnd();
    npk_ref_matmul_s8s32(5, 7, 6, A, 6, B, 7, W, 7, 1, 0);
    CHECK_EQ(npk_v0_matmul(v, 5, 7, 6, A, B, C, 1), 0);
    CHECK(!memcmp(C, W, sizeof C));
    CHECK(strstr(npk_v0_last_route(v), "gemmini_present=0") != NULL);
    CHECK(strstr(npk_v0_last_route(v), "CPU") != NULL);
    CHECK_EQ(npk_v0_get_stats(v)->routed_cpu, 1);
    /* pool goes to the CPU as well */
    int8_t in[4 * 4 * 2], out[2 * 2 * 2], want[8];
    for (int i = 0; i < 32; i++) in[i] = (int8_t)rnd();
    npk_v0_pool pl = {4, 4, 2, 2, 2, 2, 0};
    npk_ref_pool rp = {4, 4, 2, 2, 2, 2, 0};
    npk_ref_maxpool_s8(&rp, in, 8, want, 4, 0, 0);
    CHECK_EQ(npk_v0_maxpool(v, &pl, in, out, 0), 0);
    CHECK(!memcmp(out, want, 8));
    /* raw descriptors: the device answers unsupported_op (0x01), the handler runs them */
    mm m;
    mm_setup(p, &m);
    npk_v0_desc d = mm_desc(&m, 5);
    CHECK_EQ(npk_v0_run(v, &d, 1), 0);
    CHECK_EQ(outcome[5], NPK_V0_RETIRED_CPU);
    CHECK(mm_check(p, &m));

    /* with an e1 device attached, GEMM and ReLU go to its legacy datapath */
    npk_port *pe;
    npk_e1 *e1 = NULL;
    if (npk_port_open(&pe, NULL, "e1", NULL) == 0) {
        if (npk_e1_open(&e1, pe) == 0) {
            npk_v0_set_e1(v, e1);
            memset(C, 0, sizeof C);
            int rc = npk_v0_matmul(v, 5, 7, 6, A, B, C, 1);
            CHECK_EQ(rc, 0);
            if (rc) fprintf(stderr, "e1 route: %s\n", npk_errmsg());
            CHECK(!memcmp(C, W, sizeof C));
            CHECK(strstr(npk_v0_last_route(v), "e1 GEMM_S8") != NULL);
            int8_t r[100], rw[100];
            for (int i = 0; i < 100; i++) r[i] = (int8_t)rnd(), rw[i] = r[i] < 0 ? 0 : r[i];
            CHECK_EQ(npk_v0_relu(v, r, r, 100), 0);
            CHECK(!memcmp(r, rw, 100));
            CHECK(strstr(npk_v0_last_route(v), "e1 VRELU") != NULL);
            CHECK_EQ(npk_v0_get_stats(v)->routed_e1, 2);
            npk_v0_set_e1(v, NULL);
            npk_e1_close(e1);
        } else {
            fprintf(stderr, "note: e1 driver unavailable (%s); e1 routing not exercised\n", npk_errmsg());
        }
        npk_port_close(pe);
    } else {
        fprintf(stderr, "note: e1 model unavailable (%s); e1 routing not exercised\n", npk_errmsg());
    }
    npk_v0_close(v);
    npk_port_close(p);
}

/* Random streams with injected faults: every tag exactly once, results of
 * device-retired matmuls correct, the driver always recovers. */
static void test_property(void) {
    npk_port *p;
    npk_v0 *v;
    npk_v0_config cfg;
    npk_v0_config_default(&cfg);
    cfg.cpu_exec = npk_v0_cpu_execute;
    cfg.ring_len = 8;
    cfg.timeout_cycles = 100000;
    if (open_both(&p, &v, NULL, &cfg)) return;
    npk_mem *mem = npk_sim_mem(npk_port_sim(p));
    mm m[4], scratch;
    for (int i = 0; i < 4; i++) mm_setup(p, &m[i]);
    mm_setup(p, &scratch);
    uint32_t tag = 0;
    int runs_ok = 0, runs_failed = 0, bad_results = 0;
    for (int iter = 0; iter < 150 && tag < MAXTAG - 64; iter++) {
        unsigned n = 1 + rnd() % 20;
        npk_v0_desc ds[20];
        uint32_t first = tag;
        int which[20];
        for (unsigned i = 0; i < n; i++) {
            uint32_t kind = rnd() % 10;
            which[i] = -1;
            if (kind < 4) {
                which[i] = (int)(rnd() % 4);
                ds[i] = mm_desc(&m[which[i]], tag);
            } else if (kind < 6) {
                ds[i] = npk_v0_desc_simple(NPK_V0_OP_NOP, rnd() % 2 ? NPK_V0_F_IRQ : 0, tag);
            } else if (kind == 6) {
                ds[i] = npk_v0_desc_simple(NPK_V0_OP_FALLBACK, 0, tag);
            } else if (kind == 7) {
                ds[i] = mm_desc(&scratch, tag);
                ds[i].w[NPK_V0_W_A_STRIDE] = 4; /* misaligned stride -> CPU fallback */
            } else if (kind == 8) {
                ds[i] = npk_v0_desc_simple(0x99, 0, tag); /* unknown: reported */
            } else {
                ds[i] = npk_v0_desc_simple(NPK_V0_OP_BARRIER, 0, tag);
            }
            tag++;
        }
        uint32_t fault = rnd() % 8;
        if (fault == 0) {
            npk_fault f = {NPK_ACC_READ, m[rnd() % 4].b, 64, (int64_t)(rnd() % 4), NPK_BUS_ERROR, 1};
            npk_mem_add_fault(mem, &f);
        } else if (fault == 1) {
            npk_fault f = {NPK_ACC_WRITE, m[rnd() % 4].c, 64, (int64_t)(rnd() % 3), NPK_BUS_HANG, 1};
            npk_mem_add_fault(mem, &f);
        }
        int rc = npk_v0_run(v, ds, n);
        npk_mem_clear_faults(mem);
        if (rc) runs_failed++;
        else runs_ok++;
        int exactly_once = 1;
        for (uint32_t t = first; t < tag; t++) exactly_once &= seen[t] == 1;
        CHECK(exactly_once);
        CHECK_EQ(npk_v0_pending(v), 0);
        /* success means nothing was dropped; a failure drops at least one */
        int dropped = 0;
        for (uint32_t t = first; t < tag; t++) dropped += outcome[t] == NPK_V0_DROPPED;
        CHECK(rc ? dropped > 0 : dropped == 0);
        if (!rc)
            for (unsigned i = 0; i < n; i++)
                if (which[i] >= 0 && !mm_check(p, &m[which[i]])) bad_results++;
    }
    CHECK(order_ok);
    CHECK_EQ(bad_results, 0);
    CHECK(runs_ok > 10);
    CHECK(runs_failed > 10);
    const npk_v0_stats *s = npk_v0_get_stats(v);
    CHECK_EQ(s->submitted, tag);
    CHECK_EQ(s->retired_hw + s->retired_cpu + s->dropped, tag);
    fprintf(stderr, "property: %u descriptors, %d runs ok, %d failed; hw %llu cpu %llu dropped %llu\n", tag, runs_ok,
            runs_failed, (unsigned long long)s->retired_hw, (unsigned long long)s->retired_cpu,
            (unsigned long long)s->dropped);
    npk_v0_close(v);
    npk_port_close(p);
}

int main(void) {
    test_fallback_and_errors();
    test_wrap_and_irq();
    test_no_gemmini();
    test_property();
    return CHECK_DONE();
}
