// SPDX-License-Identifier: MIT
/* The e1 model's whole-descriptor step (desc_run, issue 15 point 4) is
 * invisible: rings of streamed GEMM descriptors with writeback laid out as
 * the lowering lays them out (A|B images, C after them, dense C rows), in
 * guest memory that is one host buffer (npk_mem_attach, as the in-process
 * port gives the lowering's arena), run on a model stepping every cycle
 * (skip_idle=0) and one skipping (skip_idle=1). After every random step
 * budget the two agree on the cycle count, every register and the ring,
 * source and writeback memory. The rings mix int8 and int4 tiles of every
 * shape the scratchpad holds, memory latency 0..9, timing-only models, and
 * descriptors the whole-descriptor step must leave to the engine (no
 * writeback, C over A, a writeback to unmapped memory, a latency that
 * reaches the 128-cycle timeout). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "npukit/e1.h"
#include "npukit/sim.h"

#define GUEST 0x10000u /* ring at +0, sources at +0x400, writebacks at +0x800 */
#define AREA 0x1000u

static uint64_t seed = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(seed >> 33) % n;
}

static void poke32(npk_sim *s, uint64_t a, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    npk_mem_poke(npk_sim_mem(s), a, b, 4);
}

/* Everything observable of a model, in one array: cycles, every register
 * value and access status, the guest area. */
typedef struct snap {
    uint64_t cycles, reg[E1_REG_SPAN / 4];
    int status[E1_REG_SPAN / 4];
    uint8_t mem[AREA];
} snap;

static void take(npk_sim *s, snap *o) {
    memset(o, 0, sizeof *o);
    o->cycles = npk_sim_cycles(s);
    for (uint32_t r = 0; r < E1_REG_SPAN / 4; r++) o->status[r] = npk_sim_read(s, E1_MMIO_BASE + 4 * r, 4, &o->reg[r]);
    npk_mem_peek(npk_sim_mem(s), GUEST, o->mem, AREA);
}

static int trial(int t) {
    static snap a, b;
    char opt[2][96];
    uint32_t lat = t % 5 == 4 ? 20 + rnd(40) : rnd(10);
    int tonly = t % 7 == 6;
    for (int k = 0; k < 2; k++)
        snprintf(opt[k], sizeof opt[k], "skip_idle=%d,mem_latency=%u%s", k, lat, tonly ? ",timing_only=1" : "");
    npk_sim *s[2] = {npk_sim_new("e1", opt[0]), npk_sim_new("e1", opt[1])};
    CHECK(s[0] && s[1]);
    int ok = s[0] && s[1];
    /* a tile shape that fits: A|B image, then C (4*m*n bytes) at the next word */
    int int4 = rnd(3) == 0;
    uint32_t m, n, k, img, cbase;
    do {
        m = 1 + rnd(4), n = 1 + rnd(4), k = 1 + rnd(8);
        img = int4 ? (m * k + k * n + 1) / 2 : m * k + k * n;
        cbase = (img + 3) & ~3u;
    } while (cbase + 4 * m * n > 64);
    int c_over_a = t % 11 == 10; /* C at 0: the engine runs MAC by MAC */
    uint32_t cfg = e1_gemm_cfg(m, n, k), base = e1_gemm_base(0, m * k, c_over_a ? 0 : cbase);
    uint32_t stride = e1_gemm_stride(k, n, 4 * n);
    unsigned tail = rnd(8), nd = 1 + rnd(7);
    uint32_t words[AREA / 4];
    for (uint32_t i = 0; i < AREA / 4; i++) words[i] = (uint32_t)rnd(1u << 31) * 2u + rnd(2);
    for (int j = 0; ok && j < 2; j++) {
        if (t % 4 != 3) /* mostly one host buffer, as the in-process port makes the arena */
            CHECK(npk_mem_attach(npk_sim_mem(s[j]), GUEST, AREA) == 0);
        for (uint32_t i = 0; i < AREA / 4; i++) poke32(s[j], GUEST + 4 * i, words[i]);
    }
    for (unsigned d = 0; ok && d < nd; d++) {
        unsigned slot = (tail + d) % 8;
        int wb = rnd(12) != 0;
        uint32_t w0 = e1_desc_w0(int4 ? E1_OP_GEMM_S4 : E1_OP_GEMM_S8, 1, 0, cbase, wb);
        uint32_t dst = rnd(15) ? GUEST + 0x800 + 64 * slot : 0xfffff000u;
        for (int j = 0; j < 2; j++) {
            poke32(s[j], GUEST + 16 * slot, w0);
            poke32(s[j], GUEST + 16 * slot + 4, GUEST + 0x400 + 64 * slot);
            poke32(s[j], GUEST + 16 * slot + 8, dst);
            poke32(s[j], GUEST + 16 * slot + 12, words[slot]);
        }
    }
    const uint32_t setup[][2] = {{E1_REG_GEMM_CFG, cfg},       {E1_REG_GEMM_BASE, base},
                                 {E1_REG_GEMM_STRIDE, stride}, {E1_REG_DESC_BASE, GUEST},
                                 {E1_REG_DESC_TAIL, tail},     {E1_REG_DESC_HEAD, (tail + nd) % 8},
                                 {E1_REG_CMD_PARAM, E1_CMD_DESC}, {E1_REG_CTRL_STATUS, E1_CTRL_START}};
    for (size_t r = 0; ok && r < sizeof setup / sizeof setup[0]; r++)
        for (int j = 0; j < 2; j++) npk_sim_write(s[j], E1_MMIO_BASE + setup[r][0], 4, setup[r][1]);
    uint64_t done_at = 0;
    for (int step = 0; ok && step < 400; step++) {
        uint64_t budget = rnd(3) ? 1 + rnd(60) : 1 + rnd(1500);
        npk_sim_step(s[0], budget);
        npk_sim_step(s[1], budget);
        take(s[0], &a);
        take(s[1], &b);
        if (memcmp(&a, &b, sizeof a)) {
            fprintf(stderr, "trial %d (%ux%ux%u%s, latency %u, %u descriptors): stepping and skipping differ after %d steps\n",
                    t, m, n, k, int4 ? " int4" : "", lat, nd, step + 1);
            ok = 0;
        }
        if (!(a.reg[E1_REG_CTRL_STATUS / 4] & E1_ST_BUSY) && ++done_at > 2) break;
    }
    CHECK(ok);
    npk_sim_free(s[0]);
    npk_sim_free(s[1]);
    return ok;
}

int main(void) {
    int bad = 0;
    for (int t = 0; t < 300 && bad < 3; t++) bad += !trial(t);
    return CHECK_DONE();
}
