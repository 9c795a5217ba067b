// SPDX-License-Identifier: MIT
/* e1 event skipping (issue 15 point 4) is invisible: two models of the same
 * machine, one stepping every cycle (skip_idle=0) and one advancing over the
 * cycles that only count (skip_idle=1, the default), run the same random
 * descriptor rings and direct commands with memory latency 0..200 and are
 * compared after every random step budget: the cycle count, every register of
 * the decoded span (value and access status) and guest memory (ring, sources,
 * writeback targets). Rings mix every opcode, streams, writebacks, bad
 * configurations, missing owner bits, unmapped addresses (bus errors) and
 * latencies past the 128-cycle descriptor timeout. The RTL comparison tests
 * (test_e1_model_desc.c, test_e1_conformance.c) run with skipping on. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "npukit/e1.h"
#include "npukit/npu.h"
#include "npukit/sim.h"

#define RING 0x1000u
#define SRC 0x2000u
#define DST 0x3000u

static uint64_t rs = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) {
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (uint32_t)(rs >> 11);
}

static void both_write(npk_sim *a, npk_sim *b, uint32_t off, uint32_t v) {
    npk_sim_write(a, E1_MMIO_BASE + off, 4, v);
    npk_sim_write(b, E1_MMIO_BASE + off, 4, v);
}

static void both_poke(npk_sim *a, npk_sim *b, uint64_t addr, uint32_t v) {
    uint8_t w[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    npk_mem_poke(npk_sim_mem(a), addr, w, 4);
    npk_mem_poke(npk_sim_mem(b), addr, w, 4);
}

/* 1 when the two machines agree on everything observable. */
static int same_state(npk_sim *a, npk_sim *b, int trial, uint64_t at) {
    if (npk_sim_cycles(a) != npk_sim_cycles(b)) {
        fprintf(stderr, "trial %d: cycles %llu vs %llu\n", trial, (unsigned long long)npk_sim_cycles(a),
                (unsigned long long)npk_sim_cycles(b));
        return 0;
    }
    for (uint32_t off = 0; off < E1_REG_SPAN; off += 4) {
        uint64_t va = 0, vb = 0;
        int ra = npk_sim_read(a, E1_MMIO_BASE + off, 4, &va), rb = npk_sim_read(b, E1_MMIO_BASE + off, 4, &vb);
        if (ra != rb || va != vb) {
            fprintf(stderr, "trial %d, cycle %llu: register 0x%02x: stepping 0x%llx (%d), skipping 0x%llx (%d)\n", trial,
                    (unsigned long long)at, off, (unsigned long long)va, ra, (unsigned long long)vb, rb);
            return 0;
        }
    }
    static const uint64_t areas[3] = {RING, SRC, DST};
    for (int k = 0; k < 3; k++) {
        uint8_t ma[128], mb[128];
        npk_mem_peek(npk_sim_mem(a), areas[k], ma, sizeof ma);
        npk_mem_peek(npk_sim_mem(b), areas[k], mb, sizeof mb);
        if (memcmp(ma, mb, sizeof ma)) {
            fprintf(stderr, "trial %d, cycle %llu: guest memory at 0x%llx differs\n", trial, (unsigned long long)at,
                    (unsigned long long)areas[k]);
            return 0;
        }
    }
    return 1;
}

/* A random descriptor: mostly valid, sometimes not; clean: always valid,
 * mostly GEMMs (long engine runs inside a ring). */
static void random_desc(npk_sim *a, npk_sim *b, unsigned slot, int clean) {
    uint32_t op = rnd() % 16, w1, w2, w3 = rnd();
    if (clean) {
        op = rnd() % 3 ? (rnd() % 2 ? E1_OP_GEMM_S8 : E1_OP_GEMM_S4) : rnd() % 8;
        uint32_t w0 = e1_desc_w0(op, rnd() % 2, 0, 4 * (1 + rnd() % 8), op >= E1_OP_GEMM_S8);
        both_poke(a, b, RING + 16 * slot, w0);
        both_poke(a, b, RING + 16 * slot + 4, SRC + 4 * (rnd() % 16));
        both_poke(a, b, RING + 16 * slot + 8, DST + 4 * (rnd() % 8));
        both_poke(a, b, RING + 16 * slot + 12, w3);
        return;
    }
    int stream = (op == E1_OP_GEMM_S8 || op == E1_OP_GEMM_S4 || op == E1_OP_VRELU_S8) ? rnd() % 4 != 0 : rnd() % 4 == 0;
    uint32_t off = 4 * (rnd() % 8), len = 4 * (1 + rnd() % 8);
    if (rnd() % 10 == 0) len = rnd() % 64; /* possibly unaligned or too long */
    int wb = (op == E1_OP_GEMM_S8 || op == E1_OP_GEMM_S4) ? rnd() % 2 : rnd() % 10 == 0;
    w1 = stream ? SRC + 4 * (rnd() % 16) : rnd();
    w2 = wb ? DST + 4 * (rnd() % 16) : rnd();
    if (rnd() % 12 == 0) w1 = 0xfffff000u; /* unmapped: a bus error */
    if (rnd() % 12 == 0) w2 = 0xfffff000u;
    uint32_t w0 = e1_desc_w0(op, stream, off, len, wb);
    if (rnd() % 20 == 0) w0 &= ~E1_DESC_W0_VALID_OWNER;
    both_poke(a, b, RING + 16 * slot, w0);
    both_poke(a, b, RING + 16 * slot + 4, w1);
    both_poke(a, b, RING + 16 * slot + 8, w2);
    both_poke(a, b, RING + 16 * slot + 12, w3);
}

/* The same random program (trial t) on both machines, up to the start. */
static void program(npk_sim *a, npk_sim *b, int t) {
    for (uint32_t i = 0; i < 32; i++) both_poke(a, b, SRC + 4 * i, rnd());
    for (uint32_t i = 0; i < 16; i++) both_write(a, b, E1_REG_SCRATCH0 + 4 * i, rnd());
    both_write(a, b, E1_REG_GEMM_CFG, e1_gemm_cfg(1 + rnd() % 4, 1 + rnd() % 4, 1 + rnd() % 8));
    both_write(a, b, E1_REG_GEMM_BASE, e1_gemm_base(rnd() % 16, 16 + rnd() % 16, 4 * (8 + rnd() % 4)));
    both_write(a, b, E1_REG_GEMM_STRIDE, e1_gemm_stride(1 + rnd() % 8, 1 + rnd() % 4, 4 * (1 + rnd() % 3)));
    if (rnd() % 10 == 0) both_write(a, b, E1_REG_GEMM_CFG, rnd()); /* possibly an invalid configuration */
    if (t % 5 == 4) { /* a direct command (no ring): the scalar latency or an engine */
        both_write(a, b, E1_REG_OP_A, rnd());
        both_write(a, b, E1_REG_OP_B, rnd());
        both_write(a, b, E1_REG_ACC, rnd());
        both_write(a, b, E1_REG_OPCODE, rnd() % 16);
        both_write(a, b, E1_REG_CMD_PARAM, (rnd() % 2) ? E1_CMD_TERNARY : 0);
    } else {
        unsigned tail = rnd() % 8, n = rnd() % 8;
        int clean = t % 3 == 0;
        if (clean) { /* a valid GEMM configuration: A at 0, B at 32, C over A */
            uint32_t m = 1 + rnd() % 4, nn = 1 + rnd() % 4, k = 1 + rnd() % 8;
            both_write(a, b, E1_REG_GEMM_CFG, e1_gemm_cfg(m, nn, k));
            both_write(a, b, E1_REG_GEMM_BASE, e1_gemm_base(0, 32, 0));
            both_write(a, b, E1_REG_GEMM_STRIDE, e1_gemm_stride(k, nn, 4 * nn));
        }
        for (unsigned k = 0; k < n; k++) random_desc(a, b, (tail + k) % 8, clean);
        both_write(a, b, E1_REG_DESC_BASE, RING);
        both_write(a, b, E1_REG_DESC_TAIL, tail);
        both_write(a, b, E1_REG_DESC_HEAD, (tail + n) % 8);
        both_write(a, b, E1_REG_CMD_PARAM, E1_CMD_DESC);
    }
    both_write(a, b, E1_REG_CTRL_STATUS, E1_CTRL_START);
}

/* Two e1 machines: stepping every cycle (a) and skipping (b), memory latency lat. */
static int pair(int t, uint32_t lat, npk_sim **a, npk_sim **b, const npk_dev_class *bcls) {
    char oa[64], ob[64];
    snprintf(oa, sizeof oa, "skip_idle=0,mem_latency=%u", lat);
    snprintf(ob, sizeof ob, "skip_idle=1,mem_latency=%u", lat);
    *a = npk_sim_new("e1", oa);
    *b = bcls ? npk_sim_new_class(bcls, ob) : npk_sim_new("e1", ob);
    CHECK(*a && *b);
    if (*a && *b) return 1;
    fprintf(stderr, "trial %d: %s\n", t, npk_errmsg());
    npk_sim_free(*a);
    npk_sim_free(*b);
    return 0;
}

static int trial(int t) {
    uint32_t lat = t % 6 == 0 ? 0 : t % 6 == 1 ? 200 : rnd() % 201;
    npk_sim *a, *b;
    if (!pair(t, lat, &a, &b, NULL)) return 0;
    program(a, b, t);
    int ok = same_state(a, b, t, 0);
    uint64_t total = 0;
    int idle_checks = 0;
    while (ok && total < 40000 && idle_checks < 2) {
        uint64_t chunk = 1 + rnd() % (rnd() % 4 ? 64 : 2000);
        npk_sim_step(a, chunk);
        npk_sim_step(b, chunk);
        total += chunk;
        ok = same_state(a, b, t, total);
        uint64_t st = 0;
        npk_sim_read(a, E1_MMIO_BASE + E1_REG_CTRL_STATUS, 4, &st);
        if (!(st & E1_ST_BUSY)) idle_checks++;
    }
    CHECK(ok);
    npk_sim_free(a);
    npk_sim_free(b);
    return ok;
}

/* ---- run until idle through the quiet op (issue 32 point 2) ----
 * npk_sim_run_until_idle, npu qtest --settle and the virtual platform's run
 * loop step the quiet op's spans: the run must end on the very cycle the
 * stepping model goes idle, in the same state, in far fewer steps than
 * cycles. The skipping machine's class is e1's with its step counted. */
static const npk_dev_ops *e1_real_ops;
static npk_dev_ops counted_ops;
static uint64_t n_steps;

static void counted_step(npk_dev *d, uint64_t cycles) {
    n_steps++;
    e1_real_ops->step(d, cycles);
}

static npk_dev *counted_create(npk_mem *mem, const char *opts) {
    npk_dev *d = npk_e1_class.create(mem, opts);
    if (!d) return NULL;
    e1_real_ops = d->ops;
    counted_ops = *d->ops;
    counted_ops.step = counted_step;
    d->ops = &counted_ops;
    return d;
}

static uint64_t quiet_cycles, quiet_steps;

static int trial_quiet(int t, const npk_dev_class *cls) {
    uint32_t lat = t % 4 == 0 ? 0 : rnd() % 121;
    npk_sim *a, *b;
    if (!pair(t, lat, &a, &b, cls)) return 0;
    program(a, b, t);
    npk_dev *da = npk_sim_dev(a);
    uint64_t n = 0;
    while (!da->ops->idle(da) && n < 100000) npk_sim_step(a, 1), n++;
    n_steps = 0;
    uint64_t m = npk_sim_run_until_idle(b, 100000);
    int ok = same_state(a, b, t, n);
    if (m != n) {
        fprintf(stderr, "trial %d: run_until_idle ran %llu cycles, the stepping model went idle after %llu\n", t,
                (unsigned long long)m, (unsigned long long)n);
        ok = 0;
    }
    CHECK(ok);
    quiet_cycles += n;
    quiet_steps += n_steps;
    npk_sim_free(a);
    npk_sim_free(b);
    return ok;
}

/* The longest e1 work there is: a direct 3x3x7 GEMM (the largest tile,
 * 63 MAC cycles; C over the A rows already used), then a full ring (7
 * descriptors, each below the 128-cycle timeout) of streamed 1x2x7 GEMMs with
 * writeback at memory latency 6 (every beat 8 cycles). */
static void long_program(npk_sim *s, int ring) {
    npk_sim_write(s, E1_MMIO_BASE + E1_REG_GEMM_CFG, 4, e1_gemm_cfg(3, 3, 7));
    npk_sim_write(s, E1_MMIO_BASE + E1_REG_GEMM_BASE, 4, e1_gemm_base(0, 36, 0));
    npk_sim_write(s, E1_MMIO_BASE + E1_REG_GEMM_STRIDE, 4, e1_gemm_stride(7, 3, 12));
    if (!ring) {
        npk_sim_write(s, E1_MMIO_BASE + E1_REG_OPCODE, 4, E1_OP_GEMM_S8);
        npk_sim_write(s, E1_MMIO_BASE + E1_REG_CMD_PARAM, 4, 0);
    } else {
        npk_sim_write(s, E1_MMIO_BASE + E1_REG_GEMM_CFG, 4, e1_gemm_cfg(1, 2, 7));
        npk_sim_write(s, E1_MMIO_BASE + E1_REG_GEMM_BASE, 4, e1_gemm_base(0, 32, 48));
        npk_sim_write(s, E1_MMIO_BASE + E1_REG_GEMM_STRIDE, 4, e1_gemm_stride(7, 2, 8));
        for (unsigned k = 0; k < 7; k++) {
            uint32_t w[4] = {e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 8, 1), SRC, DST + 8 * k, 0};
            for (int i = 0; i < 4; i++) {
                uint8_t b[4] = {(uint8_t)w[i], (uint8_t)(w[i] >> 8), (uint8_t)(w[i] >> 16), (uint8_t)(w[i] >> 24)};
                npk_mem_poke(npk_sim_mem(s), RING + 16 * k + 4 * i, b, 4);
            }
        }
        npk_sim_write(s, E1_MMIO_BASE + E1_REG_DESC_BASE, 4, RING);
        npk_sim_write(s, E1_MMIO_BASE + E1_REG_DESC_TAIL, 4, 0);
        npk_sim_write(s, E1_MMIO_BASE + E1_REG_DESC_HEAD, 4, 7);
        npk_sim_write(s, E1_MMIO_BASE + E1_REG_CMD_PARAM, 4, E1_CMD_DESC);
    }
    npk_sim_write(s, E1_MMIO_BASE + E1_REG_CTRL_STATUS, 4, E1_CTRL_START);
}

static void test_long(const npk_dev_class *cls) {
    for (int ring = 0; ring < 2; ring++) {
        npk_sim *a = npk_sim_new("e1", "skip_idle=0,mem_latency=6"), *b = npk_sim_new_class(cls, "mem_latency=6");
        CHECK(a && b);
        if (!a || !b) {
            npk_sim_free(a);
            npk_sim_free(b);
            continue;
        }
        for (uint32_t i = 0; i < 32; i++) both_poke(a, b, SRC + 4 * i, 0x01020304u * (i + 1));
        long_program(a, ring);
        long_program(b, ring);
        npk_dev *da = npk_sim_dev(a);
        uint64_t n = 0;
        while (!da->ops->idle(da)) npk_sim_step(a, 1), n++;
        n_steps = 0;
        CHECK_EQ(npk_sim_run_until_idle(b, 1000000), n);
        CHECK(same_state(a, b, -1 - ring, n));
        uint64_t st = 0;
        npk_sim_read(b, E1_MMIO_BASE + E1_REG_CTRL_STATUS, 4, &st);
        CHECK_EQ(st, E1_ST_DONE); /* done, no error: every descriptor ran */
        printf("e1 %s: %llu cycles in %llu steps of run_until_idle\n", ring ? "ring of 7 streamed GEMMs" : "direct GEMM",
               (unsigned long long)n, (unsigned long long)n_steps);
        /* the direct GEMM: its 62 MACs before the last in one step, the last alone */
        if (!ring) {
            CHECK_EQ(n, 63);
            CHECK_EQ(n_steps, 2);
        } else {
            CHECK(n_steps * 2 < n);
        }
        npk_sim_free(a);
        npk_sim_free(b);
    }
}

int main(void) {
    int bad = 0;
    for (int t = 0; t < 400 && bad < 3; t++) bad += !trial(t);
    npk_dev_class cls = npk_e1_class;
    cls.create = counted_create;
    bad = 0;
    for (int t = 0; t < 400 && bad < 3; t++) bad += !trial_quiet(t, &cls);
    printf("run_until_idle over 400 random programs: %llu cycles in %llu steps\n", (unsigned long long)quiet_cycles,
           (unsigned long long)quiet_steps);
    CHECK(quiet_steps * 2 < quiet_cycles);
    test_long(&cls);
    return CHECK_DONE();
}
