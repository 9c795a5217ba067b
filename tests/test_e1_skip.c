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

static int trial(int t) {
    uint32_t lat = t % 6 == 0 ? 0 : t % 6 == 1 ? 200 : rnd() % 201;
    char oa[64], ob[64];
    snprintf(oa, sizeof oa, "skip_idle=0,mem_latency=%u", lat);
    snprintf(ob, sizeof ob, "skip_idle=1,mem_latency=%u", lat);
    npk_sim *a = npk_sim_new("e1", oa), *b = npk_sim_new("e1", ob);
    CHECK(a && b);
    if (!a || !b) {
        npk_sim_free(a);
        npk_sim_free(b);
        return 0;
    }
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

int main(void) {
    int bad = 0;
    for (int t = 0; t < 400 && bad < 3; t++) bad += !trial(t);
    return CHECK_DONE();
}
