// SPDX-License-Identifier: MIT
/* The Gemmini loop model of v0 (timing.gemmini_loop, docs/v0.md "Gemmini
 * calibration"): the tilings Gemmini's software (gemmini.h tiled_conv_auto,
 * tiled_matmul_auto) picks for three ResNet-50 layers of
 * shared/data/gemmini-resnet50-layers/measured.csv, derived here by hand from
 * the rules, and the structure of the modeled loop: one load phase per tile,
 * the array MACs adding up, larger SRAM never costing more tiles. The
 * tilings of all 24 rows against the file's recorded dse.auto_tiling are
 * checked by tests/v0_resnet50_layers.cmaketest through the bench. No host
 * time is measured. */
#include "check.h"
#include "npukit/v0.h"

#include <stdint.h>

/* 16x16 array, Gemmini's default 256 KiB scratchpad and 64 KiB accumulator:
 * per tile half of each, 8192 scratchpad rows (16 int8) and 512 accumulator
 * rows (16 int32). */
static const npk_v0_timing G = {.dram_bw = 8, .dram_lat = 20, .rows = 16, .cols = 16,
                                .spad_bytes = 256u * 1024u, .acc_bytes = 64u * 1024u, .gemmini_loop = 1};

static npk_v0_conv conv1x1(uint32_t hw, uint32_t cin, uint32_t cout) {
    return (npk_v0_conv){.h = hw, .w = hw, .cin = cin, .cout = cout, .ksize = 1, .stride_h = 1, .stride_w = 1,
                         .dil = 1};
}

typedef struct counts {
    uint64_t loads, stores, macs, host;
} counts;
static void count(void *ctx, npk_v0_phase ph, uint64_t start, uint64_t dur, uint64_t bytes, uint64_t macs) {
    counts *c = ctx;
    (void)start, (void)bytes;
    if (ph == NPK_V0_PH_HOST) c->host += dur;
    c->loads += ph == NPK_V0_PH_LOAD;
    c->stores += ph == NPK_V0_PH_STORE;
    c->macs += macs;
}

/* Tiles and MACs of one descriptor's modeled loop. */
static counts run_counts(const npk_v0_desc *d, const npk_v0_timing *t) {
    counts c = {0, 0, 0, 0};
    CHECK_EQ(npk_v0_model_schedule(d, t, count, &c), npk_v0_model_cycles(d, t));
    return c;
}

/* L02, 1x1 64 -> 64 on 56x56. Accumulator: ochs 16 (one column block) x
 * orows x ocols <= 512 rows: 22 x 23 = 506 fits, 23 x 23 and 22 x 24 do not;
 * 17 output channels would take two blocks (1012 rows). Scratchpad: 4 input
 * channel blocks x 22 x 23 pixels + 64 weight rows = 2088 <= 8192. Tiles:
 * ceil(56/22) x ceil(56/23) x 64/16 = 3 x 3 x 4 = 36; the 16 kernel/channel
 * dimensions are whole. Recorded: 1_1_23_22_64_16_1. */
static void test_l02(void) {
    npk_v0_conv c = conv1x1(56, 64, 64);
    npk_v0_conv_tiling t;
    CHECK_EQ(npk_v0_gemmini_conv_tiling(&G, &c, &t), 0);
    CHECK(t.orows == 22 && t.ocols == 23 && t.ochs == 16 && t.krows == 1 && t.kcols == 1 && t.kchs == 64);
    CHECK_EQ(t.tiles, 36);
    npk_v0_desc d = npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &c, 0, 0, 0, 0, 0, 0, 0);
    counts n = run_counts(&d, &G);
    CHECK_EQ(n.loads, 36);
    CHECK_EQ(n.stores, 36); /* every tile finishes its outputs (no reduction split) */
    CHECK_EQ(n.macs, 56ull * 56 * 64 * 64);
}

/* L20, 1x1 512 -> 2048 on 7x7: the whole 7x7 output and all 512 input
 * channels; output channels limited by the accumulator: 10 blocks x 49 = 490
 * <= 512 rows, 11 blocks (161 channels) 539. Scratchpad: 32 x 49 input +
 * 10 x 512 weight rows = 6688 <= 8192. Tiles: ceil(2048/160) = 13.
 * Recorded: 1_1_7_7_512_160_1. */
static void test_l20(void) {
    npk_v0_conv c = conv1x1(7, 512, 2048);
    npk_v0_conv_tiling t;
    CHECK_EQ(npk_v0_gemmini_conv_tiling(&G, &c, &t), 0);
    CHECK(t.orows == 7 && t.ocols == 7 && t.ochs == 160 && t.kchs == 512);
    CHECK_EQ(t.tiles, 13);
    npk_v0_desc d = npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &c, 0, 0, 0, 0, 0, 0, 0);
    counts n = run_counts(&d, &G);
    CHECK_EQ(n.loads, 13);
    CHECK_EQ(n.macs, 49ull * 512 * 2048);
}

/* L24, the FC layer 2048 -> 1000 as tiled_matmul_auto's 1 x 1000 x 2048
 * product: a square C tile of floor(sqrt(512 / 16)) = 5 blocks, K depth
 * 8192 / 2 / 16 / 5 = 51 blocks, I = 1 block; then j, i, k grow by one while
 * (I K + K J) x 16 <= 8192 and I J x 16 <= 512: J = 8, K = 56 (56 x 9 = 504;
 * J = 9 gives 560, K = 57 gives 513). Tiles: 1 x ceil(63/8) x ceil(128/56) =
 * 24. Recorded: 1_1_16_1_896_128_1. */
static void test_l24(void) {
    npk_v0_matmul_tiling t;
    npk_v0_gemmini_matmul_tiling(&G, 1, 1000, 2048, &t);
    CHECK(t.ti == 1 && t.tj == 8 && t.tk == 56);
    CHECK_EQ(t.tiles, 24);
    npk_v0_desc d = npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 1, 1000, 2048, 0, 0, 0, 0, 0, 0, 0);
    counts n = run_counts(&d, &G);
    CHECK_EQ(n.loads, 24);
    CHECK_EQ(n.stores, 8); /* after the last of the 3 K tiles of each J tile */
    CHECK_EQ(n.macs, 1000ull * 2048);
}

/* Sensitivity to the SRAM sizes: scaling the scratchpad and the accumulator
 * together (1/4, 1/2, 1, 2, 4 x the default) never adds tiles, and the
 * largest geometry models fewer device cycles (after the software's tile
 * search, whose length depends on how far it shrinks and grows) than the
 * smallest. (Cycles are not
 * monotonic step by step, as Gemmini's greedy search is not: L05 at the
 * default geometry splits its 256 input channels 240 + 16, and the
 * 16-channel tile's compute cannot hide the next tile's load; docs/v0.md.) */
static void test_sram_sensitivity(void) {
    const npk_v0_conv cs[3] = {
        conv1x1(56, 256, 64), /* L05 */
        {.h = 56, .w = 56, .cin = 64, .cout = 64, .ksize = 3, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1,
         .dil = 1},           /* L03 */
        conv1x1(14, 1024, 256), /* L16 */
    };
    for (int k = 0; k < 3; k++) {
        npk_v0_desc d = npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &cs[k], 0, 0, 0, 0, 0, 0, 0);
        uint64_t prev_tiles = UINT64_MAX, first = 0, last = 0, host_first = 0, host_last = 0;
        for (uint32_t f = 1; f <= 16; f *= 2) {
            npk_v0_timing t = G;
            t.spad_bytes = 64u * 1024u * f, t.acc_bytes = 16u * 1024u * f;
            npk_v0_conv_tiling tl;
            CHECK_EQ(npk_v0_gemmini_conv_tiling(&t, &cs[k], &tl), 0);
            CHECK(tl.tiles <= prev_tiles);
            prev_tiles = tl.tiles;
            counts n = run_counts(&d, &t);
            CHECK_EQ(n.host, tl.evals * 250); /* host cycles per tested candidate */
            last = npk_v0_model_cycles(&d, &t) - n.host, host_last = n.host;
            if (f == 1) first = last, host_first = n.host;
        }
        CHECK(last < first);
        CHECK(host_first > 0 && host_last > 0);
    }
    /* the default L05 tiling (recorded 1_1_23_22_240_16_1) */
    npk_v0_conv_tiling base;
    CHECK_EQ(npk_v0_gemmini_conv_tiling(&G, &cs[0], &base), 0);
    CHECK(base.orows == 22 && base.ocols == 23 && base.ochs == 16 && base.kchs == 240 && base.tiles == 72);
    /* a geometry that cannot hold one element per tile is refused */
    npk_v0_timing tiny = G;
    tiny.acc_bytes = 64;
    npk_v0_conv_tiling t;
    CHECK(npk_v0_gemmini_conv_tiling(&tiny, &cs[0], &t) < 0);
}

int main(void) {
    test_l02();
    test_l20();
    test_l24();
    test_sram_sensitivity();
    return CHECK_DONE();
}
