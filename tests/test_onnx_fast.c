// SPDX-License-Identifier: MIT
/* The fast CPU kernels (src/ops/fast_onnx.c) against the naive golden kernels
 * (src/ops/ref_onnx*.c), the independent reference, on pseudo-random tensors
 * over the shapes and attributes that exercise their special paths
 * (pointwise, depthwise, groups, strides, dilations, pads, 1-D/3-D, batch
 * broadcasting, transposes, per-channel parameters, zero points, uint8/int8):
 *   - integer results and the float32 elementwise kernels bit for bit;
 *   - float Conv/ConvTranspose/MatMul/Gemm within ONNX's backend tolerance,
 *     |fast - golden| <= 1e-6 + 1e-3 * |golden| (docs/onnx.md).
 * Then whole models through npk_graph_run: the fast path (default) against
 * npk_run_opts.golden = 1 on the shared models that run in seconds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "onnx_fast_check.h"
#include "npukit/gemm.h"
#include "npukit/graph.h"
#include "ops/fast_onnx.h"
#include "ops/ref_onnx.h"

/* ---- convolution --------------------------------------------------------------------------- */

typedef struct conv_case {
    int nsp;
    int64_t n, c, m, group, in[3], k[3], stride[3], dil[3], pad_b[3], pad_e[3];
} conv_case;

static const conv_case conv_cases[] = {
    {2, 1, 3, 8, 1, {1, 9, 11}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},   /* 3x3 same */
    {2, 2, 8, 16, 1, {1, 7, 6}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},   /* pointwise */
    {2, 1, 6, 6, 6, {1, 10, 9}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 0}},   /* depthwise s2 */
    {2, 1, 4, 8, 4, {1, 8, 8}, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}},    /* depthwise x2 */
    {2, 1, 8, 12, 2, {1, 9, 10}, {1, 3, 2}, {1, 2, 1}, {1, 2, 1}, {0, 2, 0}, {0, 1, 1}},  /* groups, dil */
    {2, 1, 5, 37, 1, {1, 13, 40}, {1, 3, 3}, {1, 1, 3}, {1, 1, 1}, {0, 0, 1}, {0, 2, 1}}, /* odd sizes */
    {1, 2, 3, 5, 1, {1, 1, 20}, {1, 1, 4}, {1, 1, 3}, {1, 1, 2}, {0, 0, 2}, {0, 0, 0}},   /* 1-D */
    {3, 1, 2, 4, 1, {4, 5, 6}, {2, 3, 2}, {1, 2, 1}, {1, 1, 2}, {1, 0, 1}, {0, 1, 1}},    /* 3-D */
    {2, 1, 2, 3, 1, {1, 3, 3}, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}},    /* kernel > input */
    /* depthwise geometries of src/ops/fast_dw.c: runs of 16 and 32 columns with tails, column
     * strides 1 and 2 (phase-split planes), asymmetric pads, row stride 2 only, 1-D, batch 2 */
    {2, 2, 5, 5, 5, {1, 11, 37}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},  /* dw 3x3 s1, 37 wide */
    {2, 1, 3, 3, 3, {1, 13, 75}, {1, 5, 5}, {1, 2, 2}, {1, 1, 1}, {0, 2, 1}, {0, 1, 2}},  /* dw 5x5 s2 */
    {2, 1, 4, 4, 4, {1, 12, 21}, {1, 5, 5}, {1, 2, 1}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}},  /* dw 5x5 s(2,1) */
    {2, 1, 3, 3, 3, {1, 9, 16}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 1, 1}},   /* dw 3x3 s2, no top pad */
    {2, 1, 3, 6, 3, {1, 4, 3}, {1, 7, 7}, {1, 1, 2}, {1, 1, 1}, {0, 3, 3}, {0, 3, 3}},    /* dw 7x7 > input, x2 */
    {1, 2, 4, 4, 4, {1, 1, 50}, {1, 1, 5}, {1, 1, 2}, {1, 1, 1}, {0, 0, 2}, {0, 0, 2}},   /* dw 1-D s2 */
    {2, 1, 3, 3, 3, {1, 9, 9}, {1, 3, 3}, {1, 1, 1}, {1, 2, 2}, {0, 2, 2}, {0, 2, 2}},    /* dw dilated (rows) */
    /* the last run of a row in 1, 2 or 3 vectors of 8 (AVX2: 52 = 32 + 24, 44 = 32 + 16), a
     * 3-row map of narrow rows (one block of three rows, ppocr-v4-det's 3 x 10) */
    {2, 1, 3, 3, 3, {1, 7, 52}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
    {2, 1, 3, 3, 3, {1, 5, 44}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
    {2, 1, 4, 4, 4, {1, 3, 10}, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}},
    {2, 1, 64, 13, 1, {1, 6, 70}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}}, /* K 576, 420 columns */
    /* maps whose padding rows are an eighth of the taps or more (the AVX2 rows kernel, column
     * stride 1: pairs of rows in runs of 32 columns, a last row in runs of 64, tails of 1-7
     * columns, row stride 2, 7 x 7, asymmetric pads; ppocr-cls-mobile-v2's 2 x 96 and 3 x 96) */
    {2, 1, 5, 5, 5, {1, 2, 96}, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}},
    {2, 2, 3, 3, 3, {1, 3, 75}, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {0, 2, 1}, {0, 1, 2}},
    {2, 1, 4, 4, 4, {1, 3, 100}, {1, 5, 5}, {1, 2, 1}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}},
    {2, 1, 3, 3, 3, {1, 4, 13}, {1, 7, 7}, {1, 1, 1}, {1, 1, 1}, {0, 3, 3}, {0, 3, 3}},
    {2, 1, 3, 6, 3, {1, 6, 20}, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}},
    {2, 1, 3, 3, 3, {1, 5, 130}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
    /* stride-1 convolutions on padded planes (K over the 128 block, several panels, asymmetric
     * and missing pads, dilation, groups, batch 2), and strided ones built block by block */
    {2, 2, 20, 7, 1, {1, 12, 45}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 0}, {0, 0, 2}},  /* K 180 */
    {2, 1, 6, 10, 2, {1, 9, 30}, {1, 3, 3}, {1, 1, 1}, {1, 2, 2}, {0, 2, 1}, {0, 0, 3}},   /* dil 2, groups */
    {2, 1, 3, 21, 1, {1, 7, 33}, {1, 5, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},   /* no pads */
    {2, 1, 16, 9, 1, {1, 20, 50}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},  /* s2, K 144 */
    /* strided ones on phase-split planes: a stem (3 channels, s2, chunks of output rows), row
     * stride 2 alone with asymmetric pads */
    {2, 1, 3, 16, 1, {1, 40, 130}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
    {2, 2, 3, 8, 1, {1, 17, 23}, {1, 3, 3}, {1, 2, 1}, {1, 1, 1}, {0, 1, 0}, {0, 0, 1}},
    /* kernel = stride, no padding: the ConvTranspose read the other way writes each output once
     * (2 x 2 / 2 as ppocr-v4-det's head, 3 x 3 / 3) */
    {2, 2, 4, 6, 1, {1, 8, 20}, {1, 2, 2}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
    {2, 1, 3, 5, 1, {1, 9, 12}, {1, 3, 3}, {1, 3, 3}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
    /* rows of 32+ columns read in place (conv_rows): row stride 2, column dilation, groups of
     * 8 channels, 20 output channels per group (GEMMs of 16 + 4 rows) */
    {2, 1, 16, 40, 2, {1, 10, 36}, {1, 3, 3}, {1, 2, 1}, {1, 1, 2}, {0, 1, 2}, {0, 0, 2}},
    /* dense 3 x 3 at stride 1 by Winograd F(2x2, 3x3) (fast_wino.c): an odd number of rows and
     * columns (the last tiles half outside), asymmetric and missing pads, batch 2, 9 and 24
     * output channels (GEMMs of 9, of 16 + 8), groups, blocks of two tile rows (20 tiles
     * each), pads of 2 (tiles over padding only), no pads */
    {2, 2, 16, 9, 1, {1, 9, 33}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 0}, {0, 0, 2}},
    {2, 1, 16, 24, 1, {1, 12, 40}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
    {2, 1, 32, 20, 2, {1, 7, 18}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
    {2, 1, 16, 8, 1, {1, 5, 20}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}},
    {2, 1, 24, 8, 1, {1, 6, 35}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
};

/* An 8-bit zero point whose value is the middle of its type (int8 0, uint8 128):
 * the integer GEMMs skip their correction terms for it. */
static void neutral_zp(npk_tensor *t) {
    int64_t n = npk_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == NPK_DT_INT8) ((int8_t *)t->data)[i] = 0;
        else ((uint8_t *)t->data)[i] = 128;
    }
}

static int conv_params(const conv_case *cc, npk_onnx_conv_params *p) {
    memset(p, 0, sizeof *p);
    p->nsp = cc->nsp;
    p->n = cc->n, p->c = cc->c, p->m = cc->m, p->group = cc->group;
    for (int i = 0; i < 3; i++) {
        p->in[i] = cc->in[i], p->k[i] = cc->k[i], p->stride[i] = cc->stride[i], p->dil[i] = cc->dil[i];
        p->pad_b[i] = cc->pad_b[i], p->pad_e[i] = cc->pad_e[i];
    }
    return npk_ref_onnx_conv_resolve(p, "NOTSET");
}

static void dims_of(const npk_onnx_conv_params *p, int64_t lead0, int64_t lead1, const int64_t *sp, int64_t *d) {
    d[0] = lead0, d[1] = lead1;
    for (int i = 0; i < p->nsp; i++) d[2 + i] = sp[3 - p->nsp + i];
}

static void test_conv(void) {
    int wino_cases = 0;
    for (size_t ci = 0; ci < sizeof conv_cases / sizeof conv_cases[0]; ci++) {
        npk_onnx_conv_params p;
        CHECK_EQ(conv_params(&conv_cases[ci], &p), 0);
        int r = p.nsp + 2;
        int64_t dx[5], dw[5], dy[5], kk[3] = {p.k[0], p.k[1], p.k[2]};
        dims_of(&p, p.n, p.c, p.in, dx);
        dims_of(&p, p.m, p.c / p.group, kk, dw);
        dims_of(&p, p.n, p.m, p.out, dy);
        /* float, with and without bias (not at K = 576: sums of that many random signs
         * cancel below the relative tolerance; the integer kernels are exact there) */
        int flt = p.c / p.group * p.k[0] * p.k[1] * p.k[2] <= 300;
        for (int wb = 0; flt && wb < 2; wb++) {
            npk_tensor t[5] = {rand_t(NPK_DT_FLOAT, r, dx), rand_t(NPK_DT_FLOAT, r, dw), rand_t(NPK_DT_FLOAT, 1, &p.m),
                               mk(NPK_DT_FLOAT, r, dy), mk(NPK_DT_FLOAT, r, dy)};
            CHECK_EQ(npk_fast_conv(&p, &t[0], &t[1], wb ? &t[2] : NULL, &t[3]), 0);
            npk_ref_onnx_conv(&p, &t[0], &t[1], wb ? &t[2] : NULL, &t[4]);
            CHECK(close_f(&t[3], &t[4], "conv"));
            if (p.nsp == 2 && npk_fast_wino_ok(&p)) wino_cases++;
            if (p.c == p.group && p.group > 1 && npk_fast_dw_ok(&p)) {
                /* depthwise sums each output's taps in one order at every level (fast_dw.c):
                 * the portable kernel's bits */
                npk_isa lv = npk_isa_active();
                CHECK_EQ(npk_isa_force(NPK_ISA_C), 0);
                CHECK_EQ(npk_fast_conv(&p, &t[0], &t[1], wb ? &t[2] : NULL, &t[4]), 0);
                CHECK_EQ(npk_isa_force(lv), 0);
                CHECK(same_bits(&t[3], &t[4]));
            }
            free_all(t, 5);
        }
        /* integer: int8 and uint8 x and w in every pairing with zero points (per-channel
         * w_zp), int32 bias; then neutral zero points, then none */
        for (int u = 0; u < 4; u++) {
            int dtx = u & 1 ? NPK_DT_UINT8 : NPK_DT_INT8, dtw = u & 2 ? NPK_DT_UINT8 : NPK_DT_INT8;
            int64_t one = 1;
            npk_tensor t[7] = {rand_t(dtx, r, dx), rand_t(dtw, r, dw), rand_t(dtx, 0, &one), rand_t(dtw, 1, &p.m),
                               rand_t(NPK_DT_INT32, 1, &p.m), mk(NPK_DT_INT32, r, dy), mk(NPK_DT_INT32, r, dy)};
            CHECK_EQ(npk_fast_conv_integer(&p, &t[0], &t[1], &t[2], &t[3], &t[4], &t[5]), 0);
            npk_ref_onnx_conv_integer(&p, &t[0], &t[1], &t[2], &t[3], &t[4], &t[6]);
            CHECK(same_bits(&t[5], &t[6]));
            neutral_zp(&t[2]), neutral_zp(&t[3]);
            CHECK_EQ(npk_fast_conv_integer(&p, &t[0], &t[1], &t[2], &t[3], &t[4], &t[5]), 0);
            npk_ref_onnx_conv_integer(&p, &t[0], &t[1], &t[2], &t[3], &t[4], &t[6]);
            CHECK(same_bits(&t[5], &t[6]));
            /* no zero points, no bias */
            CHECK_EQ(npk_fast_conv_integer(&p, &t[0], &t[1], NULL, NULL, NULL, &t[5]), 0);
            npk_ref_onnx_conv_integer(&p, &t[0], &t[1], NULL, NULL, NULL, &t[6]);
            CHECK(same_bits(&t[5], &t[6]));
            free_all(t, 7);
        }
        /* ConvTranspose with the same geometry read the other way: x [N, C], w [C, M/group] */
        npk_onnx_conv_params q = p;
        for (int i = 0; i < 3; i++) {
            q.in[i] = p.out[i];
            q.out[i] = (p.out[i] - 1) * p.stride[i] + (p.k[i] - 1) * p.dil[i] + 1 - p.pad_b[i] - p.pad_e[i];
        }
        int ok = flt;
        for (int i = 0; i < 3; i++) ok &= q.out[i] >= 1;
        if (ok) {
            int64_t tx[5], tw[5], ty[5];
            dims_of(&q, q.n, q.c, q.in, tx);
            dims_of(&q, q.c, q.m / q.group, kk, tw);
            dims_of(&q, q.n, q.m, q.out, ty);
            npk_tensor t[5] = {rand_t(NPK_DT_FLOAT, r, tx), rand_t(NPK_DT_FLOAT, r, tw), rand_t(NPK_DT_FLOAT, 1, &q.m),
                               mk(NPK_DT_FLOAT, r, ty), mk(NPK_DT_FLOAT, r, ty)};
            CHECK_EQ(npk_fast_conv_transpose(&q, &t[0], &t[1], &t[2], &t[3]), 0);
            npk_ref_onnx_conv_transpose(&q, &t[0], &t[1], &t[2], &t[4]);
            CHECK(close_f(&t[3], &t[4], "conv_transpose"));
            free_all(t, 5);
        }
    }
    CHECK(wino_cases >= 2 * 5); /* the five Winograd geometries above, with and without bias */
    /* not handled: other dtypes go back to the caller (1) */
    npk_onnx_conv_params p;
    conv_params(&conv_cases[0], &p);
    int64_t d[4] = {1, 3, 9, 11}, dw[4] = {8, 3, 3, 3}, dy[4] = {1, 8, 9, 11};
    npk_tensor x = mk(NPK_DT_DOUBLE, 4, d), w = mk(NPK_DT_DOUBLE, 4, dw), y = mk(NPK_DT_DOUBLE, 4, dy);
    CHECK_EQ(npk_fast_conv(&p, &x, &w, NULL, &y), 1);
    npk_tensor_free(&x), npk_tensor_free(&w), npk_tensor_free(&y);
}

/* ---- matrix products ---------------------------------------------------------------------- */

static void test_matmul(void) {
    /* batch broadcasting [2, 1, M, K] x [3, K, N]; rank-1 operands */
    struct {
        int ra, rb;
        int64_t da[4], db[4], dy[4];
        int ry;
    } cases[] = {
        {4, 3, {2, 1, 5, 33}, {3, 33, 70}, {2, 3, 5, 70}, 4},
        {2, 2, {67, 19}, {19, 40}, {67, 40}, 2},
        {1, 2, {17}, {17, 9}, {9}, 1},
        {2, 1, {6, 17}, {17}, {6}, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        npk_tensor t[4] = {rand_t(NPK_DT_FLOAT, cases[i].ra, cases[i].da), rand_t(NPK_DT_FLOAT, cases[i].rb, cases[i].db),
                           mk(NPK_DT_FLOAT, cases[i].ry, cases[i].dy), mk(NPK_DT_FLOAT, cases[i].ry, cases[i].dy)};
        CHECK_EQ(npk_fast_matmul(&t[0], &t[1], &t[2]), 0);
        npk_ref_onnx_matmul(&t[0], &t[1], &t[3]);
        CHECK(close_f(&t[2], &t[3], "matmul"));
        free_all(t, 4);
        for (int u = 0; u < 2; u++) {
            int dt = u ? NPK_DT_UINT8 : NPK_DT_INT8;
            int64_t m = cases[i].ra >= 2 ? cases[i].da[cases[i].ra - 2] : 1;
            int64_t n = cases[i].rb >= 2 ? cases[i].db[cases[i].rb - 1] : 1;
            npk_tensor q[6] = {rand_t(dt, cases[i].ra, cases[i].da), rand_t(dt, cases[i].rb, cases[i].db),
                               rand_t(dt, 1, &m), rand_t(dt, 1, &n), mk(NPK_DT_INT32, cases[i].ry, cases[i].dy),
                               mk(NPK_DT_INT32, cases[i].ry, cases[i].dy)};
            CHECK_EQ(npk_fast_matmul_integer(&q[0], &q[1], &q[2], &q[3], &q[4]), 0);
            npk_ref_onnx_matmul_integer(&q[0], &q[1], &q[2], &q[3], &q[5]);
            CHECK(same_bits(&q[4], &q[5]));
            free_all(q, 6);
        }
    }
    /* MatMulInteger across the shared kernel's blocks (6-row tiles, 64-column panels, K
     * blocks of 512), int8 and uint8 on either side, zero points per row / column,
     * scalar, neutral or absent */
    static const int64_t mnk[][3] = {{13, 130, 600}, {1, 1, 1}, {7, 65, 1030}, {6, 64, 4}, {2, 3, 0}};
    for (size_t s = 0; s < sizeof mnk / sizeof mnk[0]; s++)
        for (int u = 0; u < 16; u++) {
            int dta = u & 1 ? NPK_DT_UINT8 : NPK_DT_INT8, dtb = u & 2 ? NPK_DT_UINT8 : NPK_DT_INT8, zm = u >> 2;
            int64_t da[2] = {mnk[s][0], mnk[s][2]}, db[2] = {mnk[s][2], mnk[s][1]}, dy[2] = {mnk[s][0], mnk[s][1]};
            npk_tensor q[6] = {rand_t(dta, 2, da), rand_t(dtb, 2, db), rand_t(dta, zm == 1 ? 0 : 1, &da[0]),
                               rand_t(dtb, zm == 1 ? 0 : 1, &db[1]), mk(NPK_DT_INT32, 2, dy), mk(NPK_DT_INT32, 2, dy)};
            if (zm == 2) neutral_zp(&q[2]), neutral_zp(&q[3]);
            if (zm == 3) neutral_zp(&q[3]); /* a's per row only */
            const npk_tensor *za = zm ? &q[2] : NULL, *zb = zm ? &q[3] : NULL;
            CHECK_EQ(npk_fast_matmul_integer(&q[0], &q[1], za, zb, &q[4]), 0);
            npk_ref_onnx_matmul_integer(&q[0], &q[1], za, zb, &q[5]);
            CHECK(same_bits(&q[4], &q[5]));
            free_all(q, 6);
        }
    /* Gemm: every transpose, C as scalar, row, column and matrix */
    int64_t M = 13, N = 37, K = 21;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int cs = 0; cs < 4; cs++) {
                int64_t da[2] = {ta ? K : M, ta ? M : K}, db[2] = {tb ? N : K, tb ? K : N}, dy[2] = {M, N};
                int64_t dc[2][2] = {{1, 1}, {1, N}};
                int rc_ = cs == 0 ? 0 : 2;
                int64_t *dcp = cs == 1 ? dc[1] : cs == 2 ? (int64_t[]){M, 1} : cs == 3 ? dy : dc[0];
                npk_tensor t[5] = {rand_t(NPK_DT_FLOAT, 2, da), rand_t(NPK_DT_FLOAT, 2, db),
                                   rand_t(NPK_DT_FLOAT, rc_, dcp), mk(NPK_DT_FLOAT, 2, dy), mk(NPK_DT_FLOAT, 2, dy)};
                CHECK_EQ(npk_fast_gemm(&t[0], &t[1], &t[2], 0.75, 1.5, ta, tb, &t[3]), 0);
                npk_ref_onnx_gemm(&t[0], &t[1], &t[2], 0.75, 1.5, ta, tb, &t[4]);
                CHECK(close_f(&t[3], &t[4], "gemm"));
                free_all(t, 5);
            }
}

/* ---- quantization and elementwise --------------------------------------------------------------- */

static void test_quant(void) {
    int64_t d[4] = {2, 5, 3, 7}, c = 5, one = 1;
    for (int u = 0; u < 2; u++) {
        int dt = u ? NPK_DT_UINT8 : NPK_DT_INT8;
        for (int per = 0; per < 2; per++) {
            npk_tensor x = rand_t(NPK_DT_FLOAT, 4, d), s = mk(NPK_DT_FLOAT, per ? 1 : 0, per ? &c : &one),
                       z = rand_t(dt, per ? 1 : 0, per ? &c : &one);
            for (int64_t i = 0; i < npk_tensor_numel(&s); i++) ((float *)s.data)[i] = 0.003f + 0.002f * (float)i;
            ((float *)x.data)[3] = NAN, ((float *)x.data)[4] = INFINITY, ((float *)x.data)[5] = 2.5f * 0.003f;
            npk_tensor q1 = mk(dt, 4, d), q2 = mk(dt, 4, d), f1 = mk(NPK_DT_FLOAT, 4, d), f2 = mk(NPK_DT_FLOAT, 4, d);
            CHECK_EQ(npk_fast_quantize(&x, &s, &z, 1, &q1), 0);
            npk_ref_onnx_quantize(&x, &s, &z, 1, &q2);
            CHECK(same_bits(&q1, &q2));
            CHECK_EQ(npk_fast_dequantize(&q1, &s, &z, 1, &f1), 0);
            npk_ref_onnx_dequantize(&q1, &s, &z, 1, &f2);
            CHECK(same_bits(&f1, &f2));
            /* requantize int32 accumulators per channel of axis 1 */
            npk_tensor acc = rand_t(NPK_DT_INT32, 4, d);
            float mult[5] = {0.001f, 0.0007f, 0.01f, 0.5f, 3e-5f};
            CHECK_EQ(npk_fast_requant_tensor(&acc, mult, per ? 5 : 1, 1, u ? 128 : -3, &q1), 0);
            npk_ref_onnx_requant_tensor(&acc, mult, per ? 5 : 1, 1, u ? 128 : -3, &q2);
            CHECK(same_bits(&q1, &q2));
            npk_tensor a[8] = {x, s, z, q1, q2, f1, f2, acc};
            free_all(a, 8);
        }
    }
}

static void test_elementwise(void) {
    struct {
        int ra, rb;
        int64_t da[4], db[4];
    } bc[] = {
        {4, 4, {2, 3, 4, 5}, {2, 3, 4, 5}}, {4, 0, {2, 3, 4, 5}, {0}},       {4, 4, {2, 3, 4, 5}, {1, 3, 1, 1}},
        {2, 4, {4, 5}, {2, 3, 4, 5}},       {4, 3, {2, 1, 4, 1}, {3, 1, 5}}, {3, 3, {1, 4, 1}, {3, 1, 6}},
    };
    npk_onnx_binop ops[] = {NPK_ONNX_ADD, NPK_ONNX_SUB, NPK_ONNX_MUL, NPK_ONNX_DIV, NPK_ONNX_PRELU};
    for (size_t i = 0; i < sizeof bc / sizeof bc[0]; i++) {
        int64_t dy[NPK_MAX_RANK];
        int ry;
        CHECK_EQ(npk_ref_onnx_bcast_shape(bc[i].ra, bc[i].da, bc[i].rb, bc[i].db, &ry, dy), 0);
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            npk_tensor t[4] = {rand_t(NPK_DT_FLOAT, bc[i].ra, bc[i].da), rand_t(NPK_DT_FLOAT, bc[i].rb, bc[i].db),
                               mk(NPK_DT_FLOAT, ry, dy), mk(NPK_DT_FLOAT, ry, dy)};
            CHECK_EQ(npk_fast_binary(ops[o], &t[0], &t[1], &t[2]), 0);
            npk_ref_onnx_binary(ops[o], &t[0], &t[1], &t[3]);
            CHECK(same_bits(&t[2], &t[3]));
            free_all(t, 4);
        }
    }
    /* Pow by the float scalar 2 (x * x in the fast kernel, pow in double rounded once in the
     * golden): random values, the extremes of float (overflow to infinity, subnormal squares
     * flushed to zero by the rounding), signed zeros, infinities; bit for bit. Another exponent
     * is the golden's (1). */
    {
        int64_t n = 4096 + 12, one = 1;
        npk_tensor t[4] = {rand_t(NPK_DT_FLOAT, 1, &n), mk(NPK_DT_FLOAT, 0, &one), mk(NPK_DT_FLOAT, 1, &n),
                           mk(NPK_DT_FLOAT, 1, &n)};
        float *xs = t[0].data;
        for (int64_t i = 0; i < 4096; i++) xs[i] *= (float)(1 << (i % 30)) * (i % 3 ? 1.0f : 0x1p-100f);
        static const float special[12] = {0x1p+64f, 0x1.fffffep+127f, -0x1p+63f, 0x1p-149f, -0x1p-75f, 0x1.6a09e6p-75f,
                                          0.0f,     -0.0f,            INFINITY,  -INFINITY, 3.0e19f,   -1.9e19f};
        memcpy(xs + 4096, special, sizeof special);
        ((float *)t[1].data)[0] = 2.0f;
        CHECK_EQ(npk_fast_binary(NPK_ONNX_POW, &t[0], &t[1], &t[2]), 0);
        npk_ref_onnx_binary(NPK_ONNX_POW, &t[0], &t[1], &t[3]);
        CHECK(same_bits(&t[2], &t[3]));
        ((float *)t[1].data)[0] = 3.0f;
        CHECK_EQ(npk_fast_binary(NPK_ONNX_POW, &t[0], &t[1], &t[2]), 1);
        free_all(t, 4);
    }
    int64_t d[3] = {3, 4, 50};
    npk_onnx_unop uops[] = {NPK_ONNX_RELU, NPK_ONNX_LEAKYRELU, NPK_ONNX_SIGMOID, NPK_ONNX_TANH,
                            NPK_ONNX_EXP,  NPK_ONNX_CLIP};
    for (size_t o = 0; o < sizeof uops / sizeof uops[0]; o++) {
        npk_tensor t[3] = {rand_t(NPK_DT_FLOAT, 3, d), mk(NPK_DT_FLOAT, 3, d), mk(NPK_DT_FLOAT, 3, d)};
        ((float *)t[0].data)[0] = -0.0f;
        CHECK_EQ(npk_fast_unary(uops[o], &t[0], &t[1], 0.1, -0.3, 0.6), 0);
        npk_ref_onnx_unary(uops[o], &t[0], &t[2], 0.1, -0.3, 0.6);
        CHECK(same_bits(&t[1], &t[2]));
        free_all(t, 3);
    }
    /* Sigmoid's vector path (exp in double, then the golden's formula for results near a float
     * rounding boundary and |x| > 80): a sweep of [-100, 100] in steps of 2^-12, values whose
     * double result lies within 256 ulps of a half-way point between floats (found by search;
     * -0x1.42p-17 exactly on it), saturation, subnormal results, NaN and infinities */
    {
        int64_t ns = 819200 + 16;
        npk_tensor t[3] = {mk(NPK_DT_FLOAT, 1, &ns), mk(NPK_DT_FLOAT, 1, &ns), mk(NPK_DT_FLOAT, 1, &ns)};
        float *xs = t[0].data;
        static const float special[16] = {-0x1.07babcp+5f, 0x1.c068d6p+2f, -0x1.a1c408p-3f, -0x1.42p-17f, 0x1.808p-14f,
                                          80.0f, -80.0f, 0x1.400002p+6f, -0x1.400002p+6f, -87.5f, -103.9f, -104.5f,
                                          NAN, INFINITY, -INFINITY, 0x1p-149f};
        for (int64_t i = 0; i < 819200; i++) xs[i] = (float)(i - 409600) / 4096.0f;
        memcpy(xs + 819200, special, sizeof special);
        CHECK_EQ(npk_fast_unary(NPK_ONNX_SIGMOID, &t[0], &t[1], 0, 0, 0), 0);
        npk_ref_onnx_unary(NPK_ONNX_SIGMOID, &t[0], &t[2], 0, 0, 0);
        CHECK(same_bits(&t[1], &t[2]));
        /* in place (an input the run owns: npk_opctx.reuse) */
        CHECK_EQ(npk_fast_unary(NPK_ONNX_SIGMOID, &t[0], &t[0], 0, 0, 0), 0);
        CHECK(same_bits(&t[0], &t[2]));
        free_all(t, 3);
    }
    /* Relu and Clip on 8-bit integers; Clip bounds inside, across and outside the range */
    double bounds[3][2] = {{-20, 30}, {-300.5, 100.25}, {-INFINITY, 5}};
    for (int u = 0; u < 2; u++)
        for (int bi = 0; bi < 3; bi++)
            for (int op = 0; op < 2; op++) {
                int dt = u ? NPK_DT_UINT8 : NPK_DT_INT8;
                npk_onnx_unop o = op ? NPK_ONNX_CLIP : NPK_ONNX_RELU;
                npk_tensor t[3] = {rand_t(dt, 3, d), mk(dt, 3, d), mk(dt, 3, d)};
                CHECK_EQ(npk_fast_unary(o, &t[0], &t[1], 0, bounds[bi][0], bounds[bi][1]), 0);
                npk_ref_onnx_unary(o, &t[0], &t[2], 0, bounds[bi][0], bounds[bi][1]);
                CHECK(same_bits(&t[1], &t[2]));
                free_all(t, 3);
            }
    for (int sw = 0; sw < 2; sw++) {
        npk_tensor t[3] = {rand_t(NPK_DT_FLOAT, 3, d), mk(NPK_DT_FLOAT, 3, d), mk(NPK_DT_FLOAT, 3, d)};
        for (int64_t i = 0; i < npk_tensor_numel(&t[0]); i++) ((float *)t[0].data)[i] *= 8.0f;
        double p[2] = {(float)0.2, (float)0.5};
        CHECK_EQ(npk_fast_hard(sw, &t[0], &t[1], p[0], p[1]), 0);
        npk_ref_onnx_unary2(sw ? NPK_ONNX_HARDSWISH : NPK_ONNX_HARDSIGMOID, &t[0], &t[2], p);
        CHECK(same_bits(&t[1], &t[2]));
        free_all(t, 3);
    }
    int64_t c = 4;
    npk_tensor bn[7] = {rand_t(NPK_DT_FLOAT, 3, d), rand_t(NPK_DT_FLOAT, 1, &c), rand_t(NPK_DT_FLOAT, 1, &c),
                        rand_t(NPK_DT_FLOAT, 1, &c), rand_t(NPK_DT_FLOAT, 1, &c), mk(NPK_DT_FLOAT, 3, d),
                        mk(NPK_DT_FLOAT, 3, d)};
    for (int i = 0; i < 4; i++) ((float *)bn[4].data)[i] = fabsf(((float *)bn[4].data)[i]);
    CHECK_EQ(npk_fast_batchnorm(&bn[0], &bn[1], &bn[2], &bn[3], &bn[4], 1e-5, &bn[5]), 0);
    npk_ref_onnx_batchnorm(&bn[0], &bn[1], &bn[2], &bn[3], &bn[4], 1e-5, &bn[6]);
    CHECK(same_bits(&bn[5], &bn[6]));
    free_all(bn, 7);
    /* 6 channels (one at a time), 22 (two blocks of eight summed together, then six), 26 (the
     * AVX2 rows: a group of 16 and one of 8 rows, values transposed eight at a time, the last 5
     * of each row after them, then two rows alone) */
    int64_t gds[3][4] = {{2, 3, 5, 7}, {2, 11, 9, 13}, {2, 13, 3, 7}};
    for (int mx = 0; mx < 6; mx++) {
        int64_t *gd = gds[mx / 2], go[4] = {gd[0], gd[1], 1, 1};
        npk_tensor t[3] = {rand_t(NPK_DT_FLOAT, 4, gd), mk(NPK_DT_FLOAT, 4, go), mk(NPK_DT_FLOAT, 4, go)};
        CHECK_EQ(npk_fast_global_pool(&t[0], &t[1], mx % 2), 0);
        npk_ref_onnx_global_pool(&t[0], &t[2], mx % 2);
        CHECK(same_bits(&t[1], &t[2]));
        free_all(t, 3);
    }
}

/* ---- whole models: fast path against golden ---------------------------------------------- */

/* A pack function over a stored B (npk_gemm_f32_reassoc_packed). */
typedef struct pack_src {
    const float *B;
    int64_t ldb;
} pack_src;

static void pack_rows(void *ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nb, float *dst, int64_t ldd) {
    const pack_src *ps = ctx;
    for (int64_t k = 0; k < kc; k++)
        for (int64_t j = 0; j < nb; j++) dst[k * ldd + j] = ps->B[(k0 + k) * ps->ldb + j0 + j];
}

/* The float GEMM kernels one by one (AVX-512, AVX2, portable: those the CPU
 * has) against a double-precision product: every tile shape (row tails 1-3;
 * 21 rows, more than four row tiles, where AVX2 packs the B panel first;
 * column tails of each vector width, one column), K across the KC = 128
 * block, padded leading dimensions, and accumulation into C (30 and 80
 * columns: a last panel plus one vector, split as two vectors and the rest). Then the
 * operators on top, with each instruction-set level's copies of every loop
 * (and the shared integer GEMM's variant of that level). */
static void test_levels(void) {
    static const char *const names[] = {"portable", "avx2", "avx512", "avx512"};
    static const int64_t ms[] = {1, 3, 4, 5, 8, 13, 21}, ns[] = {1, 2, 5, 7, 16, 17, 24, 30, 33, 64, 65, 80, 130}, ks[] = {1, 5, 128, 300};
    int ran = 0;
    uint64_t seed = rs;
    FOR_EACH_ISA(kn) { /* the same cases at every level */
        rs = seed;
        ran++;
        CHECK_STR(npk_gemm_f32_reassoc_kernel(), names[kn]);
        for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
            for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++)
                for (size_t c = 0; c < sizeof ks / sizeof ks[0]; c++)
                    for (int acc = 0; acc < 2; acc++) {
                        int64_t M = ms[a], N = ns[b], K = ks[c], lda = K + 3, ldb = N + 5, ldc = N + 2;
                        float *A = malloc(sizeof(float) * (size_t)(M * lda)), *B = malloc(sizeof(float) * (size_t)(K * ldb));
                        float *C = malloc(sizeof(float) * (size_t)(M * ldc)), *C0 = malloc(sizeof(float) * (size_t)(M * ldc));
                        for (int64_t i = 0; i < M * lda; i++) A[i] = frnd();
                        for (int64_t i = 0; i < K * ldb; i++) B[i] = frnd();
                        for (int64_t i = 0; i < M * ldc; i++) C[i] = C0[i] = frnd();
                        npk_gemm_f32_reassoc(M, N, K, A, lda, B, ldb, C, ldc, acc);
                        /* B through a pack function: the same bits */
                        float *Cp = malloc(sizeof(float) * (size_t)(M * ldc));
                        memcpy(Cp, C0, sizeof(float) * (size_t)(M * ldc));
                        pack_src ps = {B, ldb};
                        npk_gemm_f32_reassoc_packed(M, N, K, A, lda, pack_rows, &ps, Cp, ldc, acc);
                        CHECK(!memcmp(Cp, C, sizeof(float) * (size_t)(M * ldc)));
                        if (!acc) { /* a bias start: the bits of C filled with the bias, then acc = 1 */
                            float *bias = malloc(sizeof(float) * (size_t)M), *Cf = malloc(sizeof(float) * (size_t)(M * ldc));
                            for (int64_t i = 0; i < M; i++) bias[i] = 0.25f * (float)(i % 7) - 0.75f; /* (rs untouched) */
                            memcpy(Cf, C0, sizeof(float) * (size_t)(M * ldc));
                            for (int64_t i = 0; i < M; i++)
                                for (int64_t j = 0; j < N; j++) Cf[i * ldc + j] = bias[i];
                            npk_gemm_f32_reassoc(M, N, K, A, lda, B, ldb, Cf, ldc, 1);
                            memcpy(Cp, C0, sizeof(float) * (size_t)(M * ldc));
                            npk_gemm_f32_reassoc_bias(M, N, K, A, lda, B, ldb, bias, Cp, ldc);
                            CHECK(!memcmp(Cp, Cf, sizeof(float) * (size_t)(M * ldc)));
                            memcpy(Cp, C0, sizeof(float) * (size_t)(M * ldc));
                            npk_gemm_f32_reassoc_packed_bias(M, N, K, A, lda, pack_rows, &ps, bias, Cp, ldc);
                            CHECK(!memcmp(Cp, Cf, sizeof(float) * (size_t)(M * ldc)));
                            memcpy(Cp, C0, sizeof(float) * (size_t)(M * ldc)); /* no bias: from zero */
                            npk_gemm_f32_reassoc_bias(M, N, K, A, lda, B, ldb, NULL, Cp, ldc);
                            CHECK(!memcmp(Cp, C, sizeof(float) * (size_t)(M * ldc)));
                            free(bias), free(Cf);
                        }
                        free(Cp);
                        int ok = 1;
                        for (int64_t i = 0; i < M && ok; i++)
                            for (int64_t j = 0; j < ldc && ok; j++) {
                                float got = C[i * ldc + j];
                                if (j >= N) { /* the padding between rows is never written */
                                    ok = got == C0[i * ldc + j];
                                    continue;
                                }
                                double want = acc ? C0[i * ldc + j] : 0.0, mag = fabs(want);
                                for (int64_t k = 0; k < K; k++) {
                                    want += (double)A[i * lda + k] * B[k * ldb + j];
                                    mag += fabs((double)A[i * lda + k] * B[k * ldb + j]);
                                }
                                /* float32 sums: the error bound grows with the sum of magnitudes */
                                ok = fabs((double)got - want) <= 1e-6 + 1e-5 * mag;
                                if (!ok)
                                    fprintf(stderr, "sgemm %s M%lld N%lld K%lld acc%d: C[%lld][%lld] %.9g, want %.9g\n",
                                            names[kn], (long long)M, (long long)N, (long long)K, acc, (long long)i,
                                            (long long)j, got, want);
                            }
                        CHECK(ok);
                        free(A), free(B), free(C), free(C0);
                    }
        /* the operators on top of it, with this level */
        test_conv();
        test_matmul();
        test_quant();
        test_elementwise();
    }
    CHECK_EQ(ran, npk_isa_host() + 1); /* c always runs */
    CHECK_EQ(npk_isa_force(NPK_ISA_AUTO), 0);
}

int main(int argc, char **argv) {
    const char *shared = argc > 1 ? argv[1] : NPUKIT_SHARED_DIR;
    test_levels();
    test_shared_model(shared, "cifar10-lenet-int8", 1);
    test_shared_model(shared, "onnx-zoo/hello-deepa-qdq-s8", 1);
    test_shared_model(shared, "onnx-zoo/ppocr-cls-mobile-v2", 0);
    return CHECK_DONE();
}
