// SPDX-License-Identifier: MIT
/* GEMM tiles whose C stores land on A rows the engine has finished (the e1
 * lowering's 3x3x5..3x3x7 int8 tiles: C at scratch byte 0, A right below B,
 * B ending at byte 64; e1-rtl-notes.md "C may alias A or B for later
 * cells"). The model reads such a tile's operands once (gemm_overlap_free,
 * desc_run, gemm_burst) instead of MAC by MAC; this test shows that is
 * invisible. Rings of 1..7 such descriptors, at memory latency 0..2, and the
 * same tiles as direct MMIO starts, run on a model stepping every cycle
 * (skip_idle=0) and one skipping (skip_idle=1); after every random step
 * budget both agree on the cycle count, every register and the guest area.
 * Each written-back tile also equals the product computed here (int32,
 * wrapping). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "npukit/e1.h"
#include "npukit/sim.h"

#define AREA_BASE 0x20000u /* ring +0, tile images +0x200 (64 each), C +0x600 (64 each) */
#define AREA_LEN 0x1000u

static uint32_t lcg = 12345u;
static uint32_t pick(uint32_t n) {
    lcg = lcg * 1103515245u + 12345u;
    return (lcg >> 8) % n;
}

static void put_word(npk_sim *s, uint64_t at, uint32_t w) {
    uint8_t le[4];
    for (int i = 0; i < 4; i++) le[i] = (uint8_t)(w >> (8 * i));
    npk_mem_poke(npk_sim_mem(s), at, le, 4);
}

/* 1 when the two models show the same cycles, registers and guest area. */
static int agree(npk_sim *x, npk_sim *y) {
    if (npk_sim_cycles(x) != npk_sim_cycles(y)) return 0;
    for (uint32_t off = 0; off < E1_REG_SPAN; off += 4) {
        uint64_t vx = 0, vy = 0;
        int sx = npk_sim_read(x, E1_MMIO_BASE + off, 4, &vx), sy = npk_sim_read(y, E1_MMIO_BASE + off, 4, &vy);
        if (sx != sy || vx != vy) return 0;
    }
    static uint8_t mx[AREA_LEN], my[AREA_LEN];
    npk_mem_peek(npk_sim_mem(x), AREA_BASE, mx, AREA_LEN);
    npk_mem_peek(npk_sim_mem(y), AREA_BASE, my, AREA_LEN);
    return !memcmp(mx, my, AREA_LEN);
}

static void wr(npk_sim *s[2], uint32_t reg, uint32_t v) {
    for (int j = 0; j < 2; j++) npk_sim_write(s[j], E1_MMIO_BASE + reg, 4, v);
}

static int run_case(unsigned k, unsigned lat, int ring, unsigned nd) {
    const unsigned m = 3, n = 3, bb = 64 - k * n, ab = bb - m * k, soff = ab & ~3u, slen = 64 - soff;
    char opt[2][64];
    for (int j = 0; j < 2; j++) snprintf(opt[j], sizeof opt[j], "skip_idle=%d,mem_latency=%u", j, lat);
    npk_sim *s[2] = {npk_sim_new("e1", opt[0]), npk_sim_new("e1", opt[1])};
    CHECK(s[0] && s[1]);
    if (!s[0] || !s[1]) return 0;
    for (int j = 0; j < 2; j++) CHECK_EQ(npk_mem_attach(npk_sim_mem(s[j]), AREA_BASE, AREA_LEN), 0);
    /* a descriptor's cycles (e1.md): past 127 the ring times out, on both models alike */
    const unsigned T = 4 * (2 + lat) + 1 + slen / 4 * (2 + lat) + 1 + m * n * k + m * n * (2 + lat) + 1;
    const int times_out = ring && T > 127;
    int8_t a[7][3][7], b[7][7][3];
    for (unsigned d = 0; d < nd; d++) {
        uint8_t img[64] = {0};
        for (unsigned i = 0; i < m; i++)
            for (unsigned l = 0; l < k; l++) img[ab - soff + i * k + l] = (uint8_t)(a[d][i][l] = (int8_t)(pick(256) - 128));
        for (unsigned l = 0; l < k; l++)
            for (unsigned j = 0; j < n; j++) img[bb - soff + l * n + j] = (uint8_t)(b[d][l][j] = (int8_t)(pick(256) - 128));
        for (int j = 0; j < 2; j++) {
            npk_mem_poke(npk_sim_mem(s[j]), AREA_BASE + 0x200 + 64 * d, img, 64);
            put_word(s[j], AREA_BASE + 16 * d, e1_desc_w0(E1_OP_GEMM_S8, 1, soff, slen, 1));
            put_word(s[j], AREA_BASE + 16 * d + 4, AREA_BASE + 0x200 + 64 * d);
            put_word(s[j], AREA_BASE + 16 * d + 8, AREA_BASE + 0x600 + 64 * d);
            put_word(s[j], AREA_BASE + 16 * d + 12, 0);
        }
    }
    wr(s, E1_REG_GEMM_CFG, e1_gemm_cfg(m, n, k));
    wr(s, E1_REG_GEMM_BASE, e1_gemm_base(ab, bb, 0));
    wr(s, E1_REG_GEMM_STRIDE, e1_gemm_stride(k, n, 4 * n));
    int ok = 1;
    for (unsigned d = 0; d < (ring ? 1 : nd) && ok; d++) {
        if (ring) {
            wr(s, E1_REG_DESC_BASE, AREA_BASE);
            wr(s, E1_REG_DESC_TAIL, 0);
            wr(s, E1_REG_DESC_HEAD, nd);
            wr(s, E1_REG_CMD_PARAM, E1_CMD_DESC);
        } else { /* the image through SCRATCH, a direct start, C read back below */
            uint8_t img[64];
            npk_mem_peek(npk_sim_mem(s[0]), AREA_BASE + 0x200 + 64 * d, img, 64);
            for (unsigned w = soff / 4; w < 16; w++) { /* the image starts at scratch byte soff */
                const uint8_t *p = img + 4 * w - soff;
                wr(s, E1_REG_SCRATCH0 + 4 * w,
                   (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
            }
            wr(s, E1_REG_OPCODE, E1_OP_GEMM_S8);
            wr(s, E1_REG_CMD_PARAM, 0);
        }
        wr(s, E1_REG_CTRL_STATUS, E1_CTRL_START);
        for (int step = 0; step < 300 && ok; step++) {
            uint64_t budget = pick(4) ? 1 + pick(40) : 1 + pick(900);
            npk_sim_step(s[0], budget);
            npk_sim_step(s[1], budget);
            if (!agree(s[0], s[1])) {
                fprintf(stderr, "3x3x%u, latency %u, %s, %u tiles: stepping and skipping differ after step %d\n", k, lat,
                        ring ? "ring" : "direct", nd, step + 1);
                ok = 0;
            }
            uint64_t st = 0;
            npk_sim_read(s[0], E1_MMIO_BASE + E1_REG_CTRL_STATUS, 4, &st);
            if (!(st & E1_ST_BUSY)) break;
        }
        uint64_t st = 0;
        npk_sim_read(s[0], E1_MMIO_BASE + E1_REG_CTRL_STATUS, 4, &st);
        CHECK_EQ(st & (E1_ST_BUSY | E1_ST_ERROR), times_out ? E1_ST_ERROR : 0);
        if (!ring) /* the direct tile's C, as the writeback would copy it */
            for (unsigned w = 0; w < m * n; w++) {
                uint64_t v = 0;
                npk_sim_read(s[0], E1_MMIO_BASE + E1_REG_SCRATCH0 + 4 * w, 4, &v);
                for (int j = 0; j < 2; j++) put_word(s[j], AREA_BASE + 0x600 + 64 * d + 4 * w, (uint32_t)v);
            }
    }
    for (unsigned d = 0; d < nd && ok && !times_out; d++)
        for (unsigned i = 0; i < m; i++)
            for (unsigned j = 0; j < n; j++) {
                int32_t want = 0;
                for (unsigned l = 0; l < k; l++) want += a[d][i][l] * b[d][l][j];
                uint8_t got[4];
                npk_mem_peek(npk_sim_mem(s[0]), AREA_BASE + 0x600 + 64 * d + 4 * (i * n + j), got, 4);
                CHECK_EQ((int32_t)((uint32_t)got[0] | (uint32_t)got[1] << 8 | (uint32_t)got[2] << 16 |
                                   (uint32_t)got[3] << 24),
                         want);
            }
    CHECK(ok);
    npk_sim_free(s[0]);
    npk_sim_free(s[1]);
    return ok;
}

int main(void) {
    for (unsigned k = 5; k <= 7; k++)
        for (unsigned lat = 0; lat <= 2; lat++)
            for (int ring = 0; ring < 2; ring++)
                for (int t = 0; t < 4; t++) run_case(k, lat, ring, 1 + pick(7));
    return CHECK_DONE();
}
