// SPDX-License-Identifier: MIT
/* e1 lowerings: hand-checked small cases (values worked out by hand from
 * e1-lowering-notes.md and e1-rtl-notes.md), randomized cases bit-exact
 * against the CPU golden and against naive loops written here, padding
 * edges, evidence, and every rejection path (no MMIO on rejection). Runs on
 * the in-process model and, when available, on the qtest port (smaller). */
#include "check.h"
#include "npukit/e1.h"
#include "npukit/e1_lower.h"
#include "npukit/sim.h"
#include "ops/ref_ops.h"

#include <stdlib.h>

static uint32_t rs = 0x1234567u;
static uint32_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 17;
    rs ^= rs << 5;
    return rs;
}
static int32_t rint_in(int lo, int hi) { return lo + (int32_t)(rnd() % (uint32_t)(hi - lo + 1)); }

static npk_ltensor T2(unsigned a, unsigned b) {
    npk_ltensor t;
    npk_lt_alloc2(&t, a, b);
    return t;
}
static npk_ltensor T4(unsigned a, unsigned b, unsigned c, unsigned d) {
    npk_ltensor t;
    npk_lt_alloc4(&t, a, b, c, d);
    return t;
}
static npk_ltensor T1(unsigned a) {
    npk_ltensor t;
    npk_lt_alloc(&t, 1, &a);
    return t;
}
static npk_ltensor T3(unsigned a, unsigned b, unsigned c) {
    npk_ltensor t;
    unsigned d[3] = {a, b, c};
    npk_lt_alloc(&t, 3, d);
    return t;
}
static void fill(npk_ltensor *t, int lo, int hi) {
    for (size_t i = 0; i < npk_lt_numel(t); i++) t->data[i] = rint_in(lo, hi);
}
static void setv(npk_ltensor *t, const int32_t *v) { memcpy(t->data, v, npk_lt_numel(t) * 4); }

/* out and golden carry the same tensors, bit for bit. */
static int same(const npk_lower_out *a, const npk_lower_out *b, const char *what) {
    int ok = a->n == b->n;
    for (unsigned i = 0; ok && i < a->n; i++) {
        ok = !strcmp(a->name[i], b->name[i]) && a->t[i].rank == b->t[i].rank &&
             npk_lt_numel(&a->t[i]) == npk_lt_numel(&b->t[i]) &&
             !memcmp(a->t[i].data, b->t[i].data, npk_lt_numel(&a->t[i]) * 4);
        if (!ok) fprintf(stderr, "%s: output '%s' differs from the golden\n", what, a->name[i]);
    }
    if (a->n != b->n) fprintf(stderr, "%s: %u outputs vs %u golden\n", what, a->n, b->n);
    return ok;
}

static int eqv(const npk_ltensor *t, const int32_t *v, size_t n) {
    if (!t || npk_lt_numel(t) != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (t->data[i] != v[i]) {
            fprintf(stderr, "  element %zu: %d, expected %d\n", i, t->data[i], v[i]);
            return 0;
        }
    return 1;
}

static void naive_mm(const npk_ltensor *a, const npk_ltensor *b, int32_t *c) {
    unsigned M = a->dim[0], K = a->dim[1], N = b->dim[1];
    for (unsigned i = 0; i < M; i++)
        for (unsigned j = 0; j < N; j++) {
            int64_t s = 0;
            for (unsigned l = 0; l < K; l++) s += (int64_t)a->data[i * K + l] * b->data[l * N + j];
            c[i * N + j] = (int32_t)s;
        }
}

static void test_matmul(npk_lower *L, int small) {
    npk_lower_out o, g;
    npk_lower_evidence ev;
    /* e1-rtl-notes.md worked example */
    npk_ltensor A = T2(2, 3), B = T2(3, 2);
    setv(&A, (int32_t[]){-1, 2, 3, 4, 5, 6});
    setv(&B, (int32_t[]){7, 8, 9, 10, 11, 12});
    CHECK_EQ(npk_lower_matmul(L, 0, &A, &B, &o, &g, &ev), 0);
    CHECK(eqv(npk_lower_out_get(&o, "result"), (int32_t[]){44, 48, 139, 154}, 4));
    CHECK(same(&o, &g, "matmul example"));
    CHECK_EQ(ev.tiles, 1);
    CHECK_EQ(ev.cpu_fallback, 0);
    CHECK_EQ(ev.desc[E1_OP_GEMM_S8], 1);
    CHECK_EQ(ev.batches, 1);
    CHECK_EQ(ev.macs, 12);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&A);
    npk_lt_free(&B);
    /* random shapes, K not a multiple of the tile, int8 and int4, ring and direct */
    static const unsigned shapes[][3] = {{1, 1, 1}, {4, 9, 5}, {7, 15, 3}, {5, 8, 7}, {3, 16, 8}, {9, 22, 10}};
    unsigned ns = small ? 3 : 6;
    for (int int4 = 0; int4 < 2; int4++)
        for (int batching = 1; batching >= 0; batching--)
            for (unsigned s = 0; s < ns; s++) {
                unsigned M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
                npk_ltensor a = T2(M, K), b = T2(K, N);
                fill(&a, int4 ? -8 : -128, int4 ? 7 : 127);
                fill(&b, int4 ? -8 : -128, int4 ? 7 : 127);
                npk_lower_set_batching(L, batching);
                CHECK_EQ(npk_lower_matmul(L, int4, &a, &b, &o, &g, &ev), 0);
                int32_t *c = malloc((size_t)M * N * 4);
                naive_mm(&a, &b, c);
                CHECK(eqv(&o.t[0], c, (size_t)M * N));
                CHECK(same(&o, &g, "matmul random"));
                unsigned tm, tn, tk;
                npk_lower_pick_tile(L, int4, M, K, N, &tm, &tn, &tk);
                uint64_t want = (uint64_t)((M + tm - 1) / tm) * ((N + tn - 1) / tn) * ((K + tk - 1) / tk);
                CHECK_EQ(ev.tiles, want);
                unsigned op = int4 ? E1_OP_GEMM_S4 : E1_OP_GEMM_S8;
                CHECK_EQ(batching ? ev.desc[op] : ev.direct[op], want);
                CHECK_EQ(batching ? ev.direct[op] : ev.desc[op], 0);
                CHECK_EQ(ev.macs, (uint64_t)M * N * K);
                if (batching) CHECK(ev.batches >= (want + 6) / 7);
                CHECK_EQ(!!(ev.host & NPK_HOST_ACCUMULATES_SPLIT_K), K > tk);
                free(c);
                npk_lower_out_free(&o);
                npk_lower_out_free(&g);
                npk_lt_free(&a);
                npk_lt_free(&b);
            }
    npk_lower_set_batching(L, 1);
    /* tile choice: 3x3x7 int8 does not fit side by side (A 21 + B 21 + C 36 bytes), but
     * with C at 0 growing over the A rows the engine has finished it does, and it is
     * chosen (63 MACs per tile); int4 fits it packed */
    unsigned tm, tn, tk;
    npk_lower_pick_tile(L, 0, 64, 64, 64, &tm, &tn, &tk);
    npk_e1_gemm gl;
    CHECK_EQ(npk_e1_gemm_layout(0, tm, tn, tk, &gl), -NPK_EINVAL);
    CHECK_EQ(tm * tn * tk, 63);
    npk_lower_pick_tile(L, 1, 64, 64, 64, &tm, &tn, &tk);
    CHECK_EQ(tm * tn * tk, 63);
    CHECK_EQ(npk_lower_set_tile(L, 0, 4, 1, 1), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "does not fit") != NULL);
    /* every C-over-A tile, forced, ring and direct: exact (3x3x5 .. 3x3x7, edges of other shapes) */
    for (unsigned fk = 5; fk <= 7; fk++)
        for (int batching = 1; batching >= 0; batching--) {
            CHECK_EQ(npk_lower_set_tile(L, 0, 3, 3, fk), 0);
            npk_lower_set_batching(L, batching);
            npk_ltensor a = T2(7, 16), b = T2(16, 8);
            fill(&a, -128, 127);
            fill(&b, -128, 127);
            CHECK_EQ(npk_lower_matmul(L, 0, &a, &b, &o, &g, &ev), 0);
            int32_t c[7 * 8];
            naive_mm(&a, &b, c);
            CHECK(eqv(&o.t[0], c, 7 * 8));
            CHECK(same(&o, &g, "C over A"));
            CHECK_EQ(ev.tiles, 3 * 3 * ((16 + fk - 1) / fk));
            CHECK_EQ(ev.macs, 7 * 8 * 16);
            CHECK_EQ(ev.desc_retries, 0);
            npk_lower_out_free(&o);
            npk_lower_out_free(&g);
            npk_lt_free(&a);
            npk_lt_free(&b);
        }
    npk_lower_set_batching(L, 1);
    npk_lower_set_tile(L, 0, 0, 0, 0);
    /* a forced small tile still gives the exact result */
    CHECK_EQ(npk_lower_set_tile(L, 0, 2, 2, 3), 0);
    npk_ltensor a = T2(5, 7), b = T2(7, 4);
    fill(&a, -128, 127);
    fill(&b, -128, 127);
    CHECK_EQ(npk_lower_matmul(L, 0, &a, &b, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "forced tile"));
    CHECK_EQ(ev.tiles, 3 * 2 * 3);
    CHECK_EQ(ev.tile_m * ev.tile_n * ev.tile_k, 12);
    npk_lower_set_tile(L, 0, 0, 0, 0);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&a);
    npk_lt_free(&b);
}

/* Banded products (depthwise convolution rows): exact against the golden and
 * a loop written here, ring and direct, the tile count the picker promised,
 * and 9 outputs per 3x3x7 tile for 5 taps against 3 for the im2col product. */
static void test_band(npk_lower *L) {
    npk_lower_out o, g;
    npk_lower_evidence ev;
    static const unsigned shapes[][4] = {{2, 5, 96, 5}, {3, 5, 17, 5}, {7, 3, 10, 3}, {1, 2, 4, 7}, {4, 1, 1, 1}, {5, 2, 8, 6}};
    for (int batching = 1; batching >= 0; batching--)
        for (unsigned s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            unsigned R = shapes[s][0], O = shapes[s][1], W = shapes[s][2], F = shapes[s][3], P = W + F - 1;
            npk_ltensor ln = T3(R, O, P), tp = T2(O, F);
            fill(&ln, -128, 127);
            fill(&tp, -128, 127);
            npk_lower_set_batching(L, batching);
            CHECK_EQ(npk_lower_band_matmul(L, &ln, &tp, &o, &g, &ev), 0);
            CHECK(same(&o, &g, "band"));
            int32_t *want = calloc((size_t)R * W, sizeof *want);
            for (unsigned r = 0; r < R; r++)
                for (unsigned x = 0; x < W; x++)
                    for (unsigned k = 0; k < O * F; k++)
                        want[r * W + x] += ln.data[(r * O + k / F) * P + x + k % F] * tp.data[k];
            CHECK(eqv(&o.t[0], want, (size_t)R * W));
            CHECK_EQ(ev.tiles, npk_lower_band_tiles(L, R, O, W, F));
            CHECK_EQ(batching ? ev.desc[E1_OP_GEMM_S8] : ev.direct[E1_OP_GEMM_S8], ev.tiles);
            free(want);
            npk_lower_out_free(&o);
            npk_lower_out_free(&g);
            npk_lt_free(&ln);
            npk_lt_free(&tp);
        }
    npk_lower_set_batching(L, 1);
    CHECK_EQ(npk_lower_band_tiles(L, 3, 5, 96, 5), 32 * 5); /* 3x3x7: 9 outputs per tile */
    unsigned tm, tn, tk;
    npk_lower_pick_tile(L, 0, 3 * 96, 25, 1, &tm, &tn, &tk); /* the same convolution as im2col x taps */
    CHECK_EQ((uint64_t)((3 * 96 + tm - 1) / tm) * ((25 + tk - 1) / tk), 96 * 4);
    /* 8 taps fit no tile; operands are checked first */
    npk_ltensor ln = T3(1, 1, 9), tp = T2(1, 8), bad = T2(2, 3);
    CHECK_EQ(npk_lower_band_tiles(L, 1, 1, 2, 8), 0);
    CHECK_EQ(npk_lower_band_matmul(L, &ln, &tp, &o, &g, &ev), -NPK_EUNSUPPORTED);
    CHECK_EQ(npk_lower_band_matmul(L, &ln, &bad, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "taps") != NULL);
    npk_lt_free(&ln);
    npk_lt_free(&tp);
    npk_lt_free(&bad);
}

/* The int8-operand entries (the ONNX backend's): the same result, tiles,
 * descriptors and device cycles as npk_lower_matmul / npk_lower_band_matmul
 * on the same values, for strided A, B and C (pitches above the widths) and
 * exactly sized buffers (the last rows' wide copies must stay in bounds). */
static void test_s8_entries(npk_lower *L) {
    npk_port *port = npk_e1_port(npk_lower_driver(L));
    static const unsigned mm[][6] = {{10, 25, 7, 3, 1, 2}, {3, 7, 3, 0, 0, 0}, {17, 9, 5, 5, 2, 1}, {1, 200, 2, 0, 0, 0}};
    for (int batching = 1; batching >= 0; batching--)
        for (unsigned s = 0; s < sizeof mm / sizeof mm[0]; s++) {
            npk_lower_set_batching(L, batching);
            unsigned M = mm[s][0], K = mm[s][1], N = mm[s][2];
            size_t lda = K + mm[s][3], ldb = N + mm[s][4], ldc = N + mm[s][5];
            npk_ltensor a = T2(M, K), b = T2(K, N);
            fill(&a, -128, 127);
            fill(&b, -128, 127);
            int8_t *a8 = malloc((M - 1) * lda + K), *b8 = malloc((K - 1) * ldb + N);
            int32_t *c = malloc(sizeof *c * ((M - 1) * ldc + N));
            for (unsigned i = 0; i < M; i++)
                for (unsigned l = 0; l < K; l++) a8[i * lda + l] = (int8_t)a.data[i * K + l];
            for (unsigned l = 0; l < K; l++)
                for (unsigned j = 0; j < N; j++) b8[l * ldb + j] = (int8_t)b.data[l * N + j];
            npk_lower_out o;
            npk_lower_evidence ev;
            uint8_t sp0[64], sp1[64]; /* the scratchpad after each: the same last tile image, padding included */
            uint64_t c0 = npk_port_cycles(port);
            CHECK_EQ(npk_lower_matmul(L, 0, &a, &b, &o, NULL, &ev), 0);
            CHECK_EQ(npk_e1_scratch_read(npk_lower_driver(L), 0, sp0, 64), 0);
            uint64_t c1 = npk_port_cycles(port);
            uint64_t d0 = npk_e1_get_stats(npk_lower_driver(L))->desc[E1_OP_GEMM_S8];
            CHECK_EQ(npk_lower_matmul_s8(L, M, K, N, a8, lda, b8, ldb, c, ldc), 0);
            CHECK_EQ(npk_e1_scratch_read(npk_lower_driver(L), 0, sp1, 64), 0);
            CHECK_EQ(npk_port_cycles(port) - c1, c1 - c0);
            CHECK(!memcmp(sp0, sp1, 64));
            CHECK_EQ(npk_e1_get_stats(npk_lower_driver(L))->desc[E1_OP_GEMM_S8] - d0, batching ? ev.tiles : 0);
            int ok = 1;
            for (unsigned i = 0; i < M; i++)
                for (unsigned j = 0; j < N; j++) ok &= c[i * ldc + j] == o.t[0].data[i * N + j];
            CHECK(ok);
            npk_lower_out_free(&o);
            npk_lt_free(&a);
            npk_lt_free(&b);
            free(a8);
            free(b8);
            free(c);
        }
    static const unsigned bs[][4] = {{2, 5, 96, 5}, {3, 5, 17, 5}, {7, 3, 10, 3}, {4, 1, 1, 1}};
    for (unsigned s = 0; s < sizeof bs / sizeof bs[0]; s++) {
        npk_lower_set_batching(L, s & 1);
        unsigned R = bs[s][0], O = bs[s][1], W = bs[s][2], F = bs[s][3], P = W + F - 1;
        npk_ltensor ln = T3(R, O, P), tp = T2(O, F);
        fill(&ln, -128, 127);
        fill(&tp, -128, 127);
        int8_t *l8 = malloc((size_t)R * O * P), *t8 = malloc((size_t)O * F);
        int32_t *res = malloc(sizeof *res * R * W);
        for (size_t i = 0; i < (size_t)R * O * P; i++) l8[i] = (int8_t)ln.data[i];
        for (size_t i = 0; i < (size_t)O * F; i++) t8[i] = (int8_t)tp.data[i];
        npk_lower_out o;
        uint8_t sp0[64], sp1[64];
        uint64_t c0 = npk_port_cycles(port);
        CHECK_EQ(npk_lower_band_matmul(L, &ln, &tp, &o, NULL, NULL), 0);
        CHECK_EQ(npk_e1_scratch_read(npk_lower_driver(L), 0, sp0, 64), 0);
        uint64_t c1 = npk_port_cycles(port);
        CHECK_EQ(npk_lower_band_matmul_s8(L, R, O, P, F, l8, t8, res), 0);
        CHECK_EQ(npk_e1_scratch_read(npk_lower_driver(L), 0, sp1, 64), 0);
        CHECK_EQ(npk_port_cycles(port) - c1, c1 - c0);
        CHECK(!memcmp(sp0, sp1, 64));
        CHECK(eqv(&o.t[0], res, (size_t)R * W));
        npk_lower_out_free(&o);
        npk_lt_free(&ln);
        npk_lt_free(&tp);
        free(l8);
        free(t8);
        free(res);
    }
    int8_t l8[9] = {0}, t8[8] = {0};
    int32_t r8[2];
    CHECK_EQ(npk_lower_band_matmul_s8(L, 1, 1, 9, 8, l8, t8, r8), -NPK_EUNSUPPORTED);
    CHECK_EQ(npk_lower_band_matmul_s8(L, 1, 1, 2, 3, l8, t8, r8), -NPK_EINVAL);
    npk_lower_set_batching(L, 1);
}

static void test_batch_qkv_conv(npk_lower *L) {
    npk_lower_out o, g;
    npk_lower_evidence ev;
    npk_ltensor a = T4(2, 3, 2, 5), b = T4(2, 3, 5, 3); /* odd head count */
    fill(&a, -128, 127);
    fill(&b, -128, 127);
    CHECK_EQ(npk_lower_batch_matmul(L, 0, &a, &b, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "batch_matmul"));
    {
        /* slice [1][2] by a naive loop */
        npk_ltensor sa = npk_lt_view(a.data + 5 * 10, 2, (unsigned[]){2, 5});
        npk_ltensor sb = npk_lt_view(b.data + 5 * 15, 2, (unsigned[]){5, 3});
        int32_t c[6];
        naive_mm(&sa, &sb, c);
        CHECK(!memcmp(o.t[0].data + 5 * 6, c, sizeof c));
    }
    CHECK(ev.host & NPK_HOST_ITERATES_HEADS);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&a);
    npk_lt_free(&b);
    /* qkv: hand-checked: input [[1,2]], packed [[1,0,2,0,3,0],[0,1,0,2,0,100]] */
    npk_ltensor x = T2(1, 2), w = T2(2, 6);
    setv(&x, (int32_t[]){1, 2});
    setv(&w, (int32_t[]){1, 0, 2, 0, 3, 0, 0, 1, 0, 2, 0, 100});
    CHECK_EQ(npk_lower_qkv_projection(L, &x, &w, 0, &o, &g, &ev), 0);
    CHECK(eqv(npk_lower_out_get(&o, "q"), (int32_t[]){1, 2}, 2));
    CHECK(eqv(npk_lower_out_get(&o, "k"), (int32_t[]){2, 4}, 2));
    CHECK(eqv(npk_lower_out_get(&o, "v"), (int32_t[]){3, 127}, 2)); /* 200 saturates */
    CHECK(ev.host & NPK_HOST_SLICES_PACKED_QKV);
    CHECK(same(&o, &g, "qkv"));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&x);
    npk_lt_free(&w);
    x = T2(3, 4);
    w = T2(4, 12);
    fill(&x, -128, 127);
    fill(&w, -128, 127);
    CHECK_EQ(npk_lower_qkv_projection(L, &x, &w, 9, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "qkv random"));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&x);
    npk_lt_free(&w);
    /* conv2d: hand-checked 2x2 input, 2x2 filter of ones, 1 channel -> sum */
    npk_ltensor in = T4(1, 2, 2, 1), f = T4(2, 2, 1, 1);
    setv(&in, (int32_t[]){1, 2, 3, 4});
    setv(&f, (int32_t[]){1, 1, 1, 1});
    CHECK_EQ(npk_lower_conv2d(L, 0, &in, &f, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){10}, 1));
    CHECK(ev.host & NPK_HOST_MATERIALIZES_IM2COL);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&in);
    npk_lt_free(&f);
    for (int int4 = 0; int4 < 2; int4++) {
        in = T4(1, 5, 4, 3);
        f = T4(3, 2, 3, 4);
        fill(&in, int4 ? -8 : -128, int4 ? 7 : 127);
        fill(&f, int4 ? -8 : -128, int4 ? 7 : 127);
        CHECK_EQ(npk_lower_conv2d(L, int4, &in, &f, &o, &g, &ev), 0);
        CHECK(same(&o, &g, "conv2d random"));
        CHECK_EQ(o.t[0].dim[1] * o.t[0].dim[2] * o.t[0].dim[3], 3 * 3 * 4);
        npk_lower_out_free(&o);
        npk_lower_out_free(&g);
        npk_lt_free(&in);
        npk_lt_free(&f);
    }
    /* depthwise: 2x2 input, 2 channels, multiplier 2, 1x1... then random */
    in = T4(1, 2, 2, 2);
    f = T4(1, 1, 2, 2);
    setv(&in, (int32_t[]){1, 2, 3, 4, 5, 6, 7, 8});
    setv(&f, (int32_t[]){1, -1, 10, 100});
    CHECK_EQ(npk_lower_depthwise_conv2d(L, &in, &f, &o, &g, &ev), 0);
    /* pixel (0,0): c0=1 -> [1,-1], c1=2 -> [20,200] */
    CHECK(eqv(&o.t[0], (int32_t[]){1, -1, 20, 200, 3, -3, 40, 400, 5, -5, 60, 600, 7, -7, 80, 800}, 16));
    CHECK_EQ(ev.direct[E1_OP_MUL_LO], 16);
    CHECK_EQ(ev.direct[E1_OP_ADD], 16);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&in);
    npk_lt_free(&f);
    in = T4(1, 4, 3, 3);
    f = T4(2, 2, 3, 2);
    fill(&in, -128, 127);
    fill(&f, -128, 127);
    CHECK_EQ(npk_lower_depthwise_conv2d(L, &in, &f, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "depthwise"));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&in);
    npk_lt_free(&f);
    /* grouped: 4 channels in 2 groups, 2 outputs; 1x1 filter */
    in = T4(1, 1, 1, 4);
    f = T4(1, 1, 2, 2);
    setv(&in, (int32_t[]){1, 2, 3, 4});
    setv(&f, (int32_t[]){1, 10, 100, 127}); /* [ic][o]: o0 uses group 0, o1 group 1 */
    CHECK_EQ(npk_lower_grouped_conv2d(L, &in, &f, 2, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){1 * 1 + 2 * 100, 3 * 10 + 4 * 127}, 2));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&in);
    npk_lt_free(&f);
    in = T4(1, 3, 4, 6);
    f = T4(2, 3, 2, 6);
    fill(&in, -128, 127);
    fill(&f, -128, 127);
    CHECK_EQ(npk_lower_grouped_conv2d(L, &in, &f, 3, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "grouped"));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&in);
    npk_lt_free(&f);
}

static void test_precisions(npk_lower *L) {
    npk_lower_out o, g;
    npk_lower_evidence ev;
    /* sparse 2:4, K = 5 (padded to 8): x = [1,2,3,4,5]; weights [1,2 | 3,4], positions [0,3 | 0,1]
     * -> 1*x0 + 2*x3 + 3*x4 + 4*x5(pad 0) = 1 + 8 + 15 = 24 */
    npk_ltensor x = T2(1, 5), nz = T3(1, 1, 4), pos = T3(1, 1, 4);
    setv(&x, (int32_t[]){1, 2, 3, 4, 5});
    setv(&nz, (int32_t[]){1, 2, 3, 4});
    setv(&pos, (int32_t[]){0, 3, 0, 1});
    CHECK_EQ(npk_lower_sparse_int4_matmul(L, &x, &nz, &pos, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){24}, 1));
    CHECK_EQ(ev.padded_k, 8);
    CHECK(ev.host & NPK_HOST_PADS_K);
    CHECK_EQ(ev.direct[E1_OP_SDOT4_S4_2_4], 1);
    CHECK_EQ(ev.direct[E1_OP_ADD], 1);
    /* rejected: repeated position in a group, before any MMIO */
    pos.data[1] = 0;
    uint64_t m0 = npk_port_mmio_count(npk_e1_port(npk_lower_driver(L)));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    CHECK_EQ(npk_lower_sparse_int4_matmul(L, &x, &nz, &pos, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "field 'rhs_positions'") && strstr(npk_errmsg(), "not distinct"));
    pos.data[1] = 4;
    CHECK_EQ(npk_lower_sparse_int4_matmul(L, &x, &nz, &pos, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "2:4 position") != NULL);
    CHECK_EQ(npk_port_mmio_count(npk_e1_port(npk_lower_driver(L))), m0);
    npk_lt_free(&x);
    npk_lt_free(&nz);
    npk_lt_free(&pos);
    /* random sparse: K 19 -> 3 blocks */
    x = T2(3, 19);
    nz = T3(3, 4, 4);
    pos = T3(3, 4, 4);
    fill(&x, -8, 7);
    fill(&nz, -8, 7);
    for (size_t i = 0; i < npk_lt_numel(&pos); i += 2) {
        pos.data[i] = rint_in(0, 3);
        pos.data[i + 1] = (pos.data[i] + rint_in(1, 3)) % 4;
    }
    CHECK_EQ(npk_lower_sparse_int4_matmul(L, &x, &nz, &pos, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "sparse random"));
    CHECK_EQ(ev.direct[E1_OP_SDOT4_S4_2_4], 3 * 4 * 3);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&x);
    npk_lt_free(&nz);
    npk_lt_free(&pos);

    /* group-scaled: x=[1,2,3], w=[[1],[2],[3]], group 2, scales [[256],[-128]]
     * group0 = 1+4 = 5 -> 1280; group1 = 9 -> -1152; sum 128 */
    x = T2(1, 3);
    npk_ltensor w = T2(3, 1), sc = T2(2, 1);
    setv(&x, (int32_t[]){1, 2, 3});
    setv(&w, (int32_t[]){1, 2, 3});
    setv(&sc, (int32_t[]){256, -128});
    CHECK_EQ(npk_lower_group_scaled_int4_matmul(L, &x, &w, &sc, 2, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){128}, 1));
    CHECK(eqv(npk_lower_out_get(&o, "group_dot"), (int32_t[]){5, 9}, 2));
    CHECK_EQ(ev.direct[E1_OP_MUL_LO], 3 + 2);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    CHECK_EQ(npk_lower_group_scaled_int4_matmul(L, &x, &w, &sc, 4, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "field 'group_size'") != NULL);
    npk_lt_free(&x);
    npk_lt_free(&w);
    npk_lt_free(&sc);
    x = T2(2, 10);
    w = T2(10, 3);
    sc = T2(3, 3);
    fill(&x, -128, 127);
    fill(&w, -8, 7);
    fill(&sc, -32768, 32767);
    CHECK_EQ(npk_lower_group_scaled_int4_matmul(L, &x, &w, &sc, 4, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "group-scaled random"));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&x);
    npk_lt_free(&w);
    npk_lt_free(&sc);

    /* int2 and ternary: K = 20 (two DOT16 chunks, padded to 32) */
    for (int tern = 0; tern < 2; tern++) {
        x = T2(2, 20);
        w = T2(20, 3);
        fill(&x, tern ? -1 : -2, 1);
        fill(&w, tern ? -1 : -2, 1);
        CHECK_EQ(npk_lower_int2_matmul(L, tern, &x, &w, &o, &g, &ev), 0);
        int32_t c[6];
        naive_mm(&x, &w, c);
        CHECK(eqv(&o.t[0], c, 6));
        CHECK(same(&o, &g, "int2"));
        CHECK_EQ(ev.direct[E1_OP_DOT16_S2], 2 * 3 * 2);
        CHECK_EQ(ev.padded_k, 32);
        npk_lower_out_free(&o);
        npk_lower_out_free(&g);
        if (tern) {
            x.data[3] = -2; /* not ternary */
            CHECK_EQ(npk_lower_int2_matmul(L, 1, &x, &w, &o, &g, &ev), -NPK_EINVAL);
            CHECK(strstr(npk_errmsg(), "ternary") != NULL);
        }
        npk_lt_free(&x);
        npk_lt_free(&w);
    }
    /* fp8: 0x38 = 1.0 (Q8.8 256), 0x40 = 2.0: [1, 2] . [2, 1] = 4.0 -> 1024; K 2 padded to 4 */
    x = T2(1, 2);
    w = T2(2, 1);
    setv(&x, (int32_t[]){0x38, 0x40});
    setv(&w, (int32_t[]){0x40, 0x38});
    CHECK_EQ(npk_lower_fp8_matmul(L, &x, &w, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){1024}, 1));
    CHECK_EQ(ev.padded_k, 4);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&x);
    npk_lt_free(&w);
    x = T2(3, 9);
    w = T2(9, 2);
    fill(&x, 0, 255);
    fill(&w, 0, 255);
    x.data[0] = 0x77; /* wrapping lane product (e1-rtl-notes.md) */
    w.data[0] = 0x77;
    CHECK_EQ(npk_lower_fp8_matmul(L, &x, &w, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "fp8"));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&x);
    npk_lt_free(&w);
    /* fp16: 1.0 (0x3c00) * 2.0 (0x4000) + 0.5 (0x3800) * -3.0 (0xc200) = 0.5 -> 128 */
    x = T2(1, 2);
    w = T2(2, 1);
    setv(&x, (int32_t[]){0x3c00, 0x3800});
    setv(&w, (int32_t[]){0x4000, 0xc200});
    CHECK_EQ(npk_lower_float16_matmul(L, 0, &x, &w, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){128}, 1));
    CHECK(eqv(npk_lower_out_get(&o, "lhs_q8_8"), (int32_t[]){256, 128}, 2));
    CHECK(ev.host & NPK_HOST_CONVERTS_FLOAT_TO_Q8_8);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    /* bf16: 1.0 = 0x3f80, 2.0 = 0x4000, 0.5 = 0x3f00, -3.0 = 0xc040 */
    setv(&x, (int32_t[]){0x3f80, 0x3f00});
    setv(&w, (int32_t[]){0x4000, 0xc040});
    CHECK_EQ(npk_lower_float16_matmul(L, 1, &x, &w, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){128}, 1));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    /* the product's >> 8 is a floor shift: 1/256 * -1/256 -> -1 LSB */
    setv(&x, (int32_t[]){0x1c00, 0}); /* fp16 2^-8 = Q8.8 1 */
    setv(&w, (int32_t[]){0x9c00, 0}); /* -2^-8 */
    CHECK_EQ(npk_lower_float16_matmul(L, 0, &x, &w, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){-1}, 1));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    /* rounding half away from zero in the conversion: fp16 3*2^-10 = 0.75 LSB -> 1; 2^-9 = 0.5 LSB -> 1 */
    int32_t q;
    CHECK_EQ(npk_f16_to_q88(0, 0x1200, &q), 0); /* 2^-11 * 1.5 = 0.375 LSB -> 0 */
    CHECK_EQ(q, 0);
    CHECK_EQ(npk_f16_to_q88(0, 0x1800, &q), 0); /* 2^-9 = 0.5 LSB -> 1 */
    CHECK_EQ(q, 1);
    CHECK_EQ(npk_f16_to_q88(0, 0x9800, &q), 0);
    CHECK_EQ(q, -1);
    CHECK_EQ(npk_f16_to_q88(0, 0x5800, &q), -NPK_EINVAL); /* 128.0 = Q8.8 32768 is out of range */
    CHECK_EQ(npk_f16_to_q88(0, 0xd800, &q), 0);           /* -128.0 = -32768 fits */
    CHECK_EQ(q, -32768);
    CHECK_EQ(npk_f16_to_q88(0, 0x57ff, &q), 0); /* 127.9375 */
    CHECK_EQ(q, 32752);
    CHECK_EQ(npk_f16_to_q88(1, 0x4300, &q), -NPK_EINVAL); /* bf16 128.0 */
    CHECK_EQ(npk_f16_to_q88(1, 0xc300, &q), 0);
    CHECK_EQ(q, -32768);
    /* NaN / Inf / subnormal rejected, naming the field */
    x.data[1] = 0x7c00;
    CHECK_EQ(npk_lower_float16_matmul(L, 0, &x, &w, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "field 'lhs'") && strstr(npk_errmsg(), "NaN/Inf"));
    x.data[1] = 0x0001;
    CHECK_EQ(npk_lower_float16_matmul(L, 0, &x, &w, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "subnormal") != NULL);
    x.data[1] = 0x7f81;
    CHECK_EQ(npk_lower_float16_matmul(L, 1, &x, &w, &o, &g, &ev), -NPK_EINVAL);
    npk_lt_free(&x);
    npk_lt_free(&w);
    x = T2(2, 5);
    w = T2(5, 2);
    for (int bf = 0; bf < 2; bf++) {
        /* random finite values in a modest range: magnitude 2^-6 .. 2^5 */
        for (size_t i = 0; i < 10; i++) {
            uint32_t sign = (rnd() & 1) << 15;
            if (bf) {
                x.data[i] = (int32_t)(sign | (uint32_t)rint_in(121, 131) << 7 | (rnd() & 0x7f));
                w.data[i] = (int32_t)((rnd() & 1) << 15 | (uint32_t)rint_in(121, 131) << 7 | (rnd() & 0x7f));
            } else {
                x.data[i] = (int32_t)(sign | (uint32_t)rint_in(9, 19) << 10 | (rnd() & 0x3ff));
                w.data[i] = (int32_t)((rnd() & 1) << 15 | (uint32_t)rint_in(9, 19) << 10 | (rnd() & 0x3ff));
            }
        }
        CHECK_EQ(npk_lower_float16_matmul(L, bf, &x, &w, &o, &g, &ev), 0);
        CHECK(same(&o, &g, bf ? "bf16" : "fp16"));
        CHECK_EQ(ev.direct[E1_OP_MUL_LO], 2 * 2 * 5);
        npk_lower_out_free(&o);
        npk_lower_out_free(&g);
    }
    npk_lt_free(&x);
    npk_lt_free(&w);
}

static void test_elementwise(npk_lower *L) {
    npk_lower_out o, g;
    npk_lower_evidence ev;
    npk_ltensor x = T2(2, 3), b = T1(3), y = T2(2, 3);
    setv(&x, (int32_t[]){100, -100, 5, 0, 1, -128});
    setv(&b, (int32_t[]){100, -100, -5});
    CHECK_EQ(npk_lower_bias_add(L, &x, &b, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){127, -128, 0, 100, -99, -128}, 6));
    CHECK_EQ(ev.direct[E1_OP_ADD], 6);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    setv(&y, (int32_t[]){27, 28, -1, 127, -2, 127});
    CHECK_EQ(npk_lower_residual_add(L, &x, &y, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){127, -72, 4, 127, -1, -1}, 6));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    /* rope: pair (e,o) = (64, 32), cos 64, sin 32, shift 7: e' = (4096-1024)>>7 = 24, o' = (2048+2048)>>7 = 32 */
    npk_ltensor r = T2(1, 2), c = T1(1), s = T1(1);
    setv(&r, (int32_t[]){64, 32});
    c.data[0] = 64;
    s.data[0] = 32;
    CHECK_EQ(npk_lower_rope(L, &r, &c, &s, 7, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){24, 32}, 2));
    CHECK_EQ(ev.direct[E1_OP_MUL_LO], 4);
    CHECK_EQ(ev.direct[E1_OP_SUB], 1);
    CHECK_EQ(ev.direct[E1_OP_ADD], 1);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    /* rmsnorm: [3, 4], weight 64: sum 25, mean 13, rms isqrt(14) = 3, inv 85 -> 63, 85 */
    npk_ltensor n = T2(1, 2), wn = T1(2);
    setv(&n, (int32_t[]){3, 4});
    setv(&wn, (int32_t[]){64, 64});
    CHECK_EQ(npk_lower_rmsnorm(L, &n, &wn, NULL, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){63, 85}, 2));
    CHECK(eqv(npk_lower_out_get(&o, "inv_rms"), (int32_t[]){85}, 1));
    CHECK(eqv(npk_lower_out_get(&o, "rms"), (int32_t[]){3}, 1));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    /* silu / gelu hand values */
    npk_ltensor a = T2(1, 6);
    setv(&a, (int32_t[]){0, 4, -4, 127, -128, -1});
    CHECK_EQ(npk_lower_silu(L, &a, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){0, 3, -1, 127, 0, -1}, 6));
    CHECK(eqv(npk_lower_out_get(&o, "sigmoid"), (int32_t[]){128, 248, 8, 256, 0, 64}, 6));
    CHECK_EQ(ev.direct[E1_OP_EXP2_NEG_Q0_8], 6);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    CHECK_EQ(npk_lower_gelu(L, &a, &o, &g, &ev), 0);
    /* s = x*218 >> 7: 0, 6, -7, 216, -218, -2; sig: 128, 254, 1, 256, 0 (delta clamped), 32 */
    CHECK(eqv(npk_lower_out_get(&o, "scaled"), (int32_t[]){0, 6, -7, 216, -218, -2}, 6));
    CHECK(eqv(npk_lower_out_get(&o, "sigmoid"), (int32_t[]){128, 254, 1, 256, 0, 32}, 6));
    CHECK(eqv(&o.t[0], (int32_t[]){0, 3, -1, 127, 0, -1}, 6));
    CHECK(ev.host & NPK_HOST_CLAMPS_EXP2_DELTA);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    /* the whole int8 range */
    npk_ltensor all = T2(2, 128);
    for (int i = 0; i < 256; i++) all.data[i] = i - 128;
    CHECK_EQ(npk_lower_gelu(L, &all, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "gelu full range"));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    CHECK_EQ(npk_lower_silu(L, &all, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "silu full range"));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&all);
    /* random rope / rmsnorm with non-default params */
    npk_lt_free(&r);
    npk_lt_free(&c);
    npk_lt_free(&s);
    r = T2(3, 6);
    c = T1(3);
    s = T1(3);
    fill(&r, -128, 127);
    fill(&c, -128, 127);
    fill(&s, -128, 127);
    CHECK_EQ(npk_lower_rope(L, &r, &c, &s, 5, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "rope"));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_rmsnorm_params rp = {3, 10, 9};
    npk_lt_free(&n);
    npk_lt_free(&wn);
    n = T2(3, 5);
    wn = T1(5);
    fill(&n, -128, 127);
    fill(&wn, -128, 127);
    CHECK_EQ(npk_lower_rmsnorm(L, &n, &wn, &rp, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "rmsnorm"));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    /* rejections */
    CHECK_EQ(npk_lower_rope(L, &x, &c, &s, 7, &o, &g, &ev), -NPK_EINVAL); /* odd width */
    CHECK(strstr(npk_errmsg(), "not even") != NULL);
    CHECK_EQ(npk_lower_rope(L, &r, &c, &s, 32, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "field 'scale_shift'") != NULL);
    x.data[0] = 128;
    CHECK_EQ(npk_lower_bias_add(L, &x, &b, &o, &g, &ev), -NPK_EINVAL);
    CHECK_STR(npk_errmsg(), "field 'input': value 128 at [0][0] is outside int8 [-128, 127]");
    CHECK_EQ(npk_lower_residual_add(L, &x, &r, &o, &g, &ev), -NPK_EINVAL);
    npk_lt_free(&x);
    npk_lt_free(&b);
    npk_lt_free(&y);
    npk_lt_free(&r);
    npk_lt_free(&c);
    npk_lt_free(&s);
    npk_lt_free(&n);
    npk_lt_free(&wn);
    npk_lt_free(&a);
}

static void test_mlps(npk_lower *L) {
    npk_lower_out o, g;
    npk_lower_evidence ev;
    /* hand: x [[1, -1]], up [[1, 2],[3, 1]] -> hidden [-2, 1] -> relu [0, 1]; down [[5],[7]] -> 7 */
    npk_ltensor x = T2(1, 2), up = T2(2, 2), dn = T2(2, 1);
    setv(&x, (int32_t[]){1, -1});
    setv(&up, (int32_t[]){1, 2, 3, 1});
    setv(&dn, (int32_t[]){5, 7});
    CHECK_EQ(npk_lower_mlp(L, &x, &up, &dn, 0, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){7}, 1));
    CHECK(eqv(npk_lower_out_get(&o, "hidden_relu"), (int32_t[]){0, 1}, 2));
    CHECK_EQ(ev.direct[E1_OP_VRELU_S8], 1);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&x);
    npk_lt_free(&up);
    npk_lt_free(&dn);
    /* random, hidden of 70 values (two VRELU passes) */
    x = T2(5, 6);
    up = T2(6, 14);
    dn = T2(14, 4);
    fill(&x, -128, 127);
    fill(&up, -128, 127);
    fill(&dn, -128, 127);
    CHECK_EQ(npk_lower_mlp(L, &x, &up, &dn, 8, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "mlp"));
    CHECK_EQ(ev.direct[E1_OP_VRELU_S8], 2);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_ltensor gw = T2(6, 14);
    fill(&gw, -128, 127);
    for (int silu = 0; silu < 2; silu++) {
        npk_swiglu_params sp = {8, 7, silu};
        CHECK_EQ(npk_lower_swiglu(L, &x, &up, &gw, &dn, &sp, &o, &g, &ev), 0);
        CHECK(same(&o, &g, "swiglu"));
        CHECK_EQ(ev.direct[E1_OP_EXP2_NEG_Q0_8], silu ? 5 * 14 : 0);
        npk_lower_out_free(&o);
        npk_lower_out_free(&g);
    }
    /* hand swiglu: up 10, gate 20, gate_shift 7 -> 200 >> 7 = 1; down 3 -> 3 */
    npk_ltensor x1 = T2(1, 1), u1 = T2(1, 1), g1 = T2(1, 1), d1 = T2(1, 1);
    x1.data[0] = 1;
    u1.data[0] = 10;
    g1.data[0] = 20;
    d1.data[0] = 3;
    CHECK_EQ(npk_lower_swiglu(L, &x1, &u1, &g1, &d1, NULL, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){3}, 1));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    CHECK_EQ(npk_lower_swiglu(L, &x1, &u1, &gw, &d1, NULL, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "field 'gate_weight'") != NULL);
    npk_lt_free(&x1);
    npk_lt_free(&u1);
    npk_lt_free(&g1);
    npk_lt_free(&d1);
    npk_lt_free(&x);
    npk_lt_free(&up);
    npk_lt_free(&dn);
    npk_lt_free(&gw);
}

static void test_attention(npk_lower *L, int small) {
    npk_lower_out o, g;
    npk_lower_evidence ev;
    /* softmax hand example: row [0, -1, -2, -128] -> exp 256,128,64,1, sum 449 -> 146, 73, 36, 1 */
    npk_ltensor lg = T4(1, 1, 1, 4);
    setv(&lg, (int32_t[]){0, -1, -2, -128});
    CHECK_EQ(npk_lower_attention_softmax(L, &lg, NULL, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){146, 73, 36, 1}, 4));
    CHECK(eqv(npk_lower_out_get(&o, "row_sum"), (int32_t[]){449}, 1));
    CHECK_EQ(ev.direct[E1_OP_MAX_U32], 3);
    CHECK_EQ(ev.direct[E1_OP_EXP2_NEG_Q0_8], 4);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    /* masked lane -> 0; spread > 128 rejected; fully masked row rejected */
    npk_ltensor mk = T4(1, 1, 1, 4);
    setv(&mk, (int32_t[]){1, 0, 1, 1});
    setv(&lg, (int32_t[]){5, 127, 5, 5});
    CHECK_EQ(npk_lower_attention_softmax(L, &lg, &mk, &o, &g, &ev), 0);
    CHECK(eqv(&o.t[0], (int32_t[]){85, 0, 85, 85}, 4));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    setv(&lg, (int32_t[]){127, 0, -2, 0});
    CHECK_EQ(npk_lower_attention_softmax(L, &lg, &mk, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "spread") != NULL);
    setv(&mk, (int32_t[]){0, 0, 0, 0});
    CHECK_EQ(npk_lower_attention_softmax(L, &lg, &mk, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "no unmasked key") != NULL);
    npk_lt_free(&lg);
    npk_lt_free(&mk);
    /* masks: causal Tq 2, Tk 3 -> [1,1,0],[1,1,1]; sliding window 1 -> [0,1,0],[0,0,1] */
    npk_ltensor m;
    CHECK_EQ(npk_make_mask(&m, NPK_MASK_CAUSAL, 1, 1, 1, 2, 3), 0);
    CHECK(eqv(&m, (int32_t[]){1, 1, 0, 1, 1, 1}, 6));
    npk_lt_free(&m);
    CHECK_EQ(npk_make_mask(&m, NPK_MASK_SLIDING_WINDOW, 1, 1, 1, 2, 3), 0);
    CHECK(eqv(&m, (int32_t[]){0, 1, 0, 0, 0, 1}, 6));
    npk_lt_free(&m);
    CHECK_EQ(npk_make_mask(&m, NPK_MASK_CAUSAL, 1, 1, 1, 3, 2), -NPK_EINVAL);
    /* multi-head attention, odd head counts, every mask mode */
    unsigned B = 1, H = small ? 1 : 3, Tq = 3, Tk = 4, D = 5, Dv = 3;
    npk_ltensor q = T4(B, H, Tq, D), k = T4(B, H, Tk, D), v = T4(B, H, Tk, Dv);
    fill(&q, -128, 127);
    fill(&k, -128, 127);
    fill(&v, -128, 127);
    for (int mode = 0; mode < 4; mode++) {
        npk_attn_params p;
        npk_attn_params_default(&p);
        p.qk_score_shift = 10;
        p.context_shift = 6;
        p.mask_mode = mode == 3 ? NPK_MASK_FULL : mode;
        p.mask_window = 2;
        npk_ltensor given = {0};
        if (mode == 3) {
            given = T4(B, H, Tq, Tk);
            for (size_t i = 0; i < npk_lt_numel(&given); i++) given.data[i] = (i % 3) != 1;
        }
        CHECK_EQ(npk_lower_attention(L, &q, &k, &v, mode == 3 ? &given : NULL, &p, &o, &g, &ev), 0);
        CHECK(same(&o, &g, "attention"));
        CHECK_EQ(!!(ev.host & NPK_HOST_GENERATES_CAUSAL_MASK), mode == NPK_MASK_CAUSAL);
        CHECK_EQ(!!(ev.host & NPK_HOST_GENERATES_SLIDING_WINDOW_MASK), mode == NPK_MASK_SLIDING_WINDOW);
        CHECK_EQ(ev.cpu_fallback, 0);
        CHECK(ev.tiles > 0 && ev.direct[E1_OP_EXP2_NEG_Q0_8] > 0);
        npk_lower_out_free(&o);
        npk_lower_out_free(&g);
        npk_lt_free(&given);
    }
    /* qk/av int4 paths */
    npk_ltensor q4 = T4(1, 2, 2, 3), k4 = T4(1, 2, 3, 3);
    fill(&q4, -8, 7);
    fill(&k4, -8, 7);
    CHECK_EQ(npk_lower_attention_qk(L, 1, &q4, &k4, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "qk int4"));
    CHECK(ev.host & NPK_HOST_TRANSPOSES_KEYS);
    CHECK_EQ(ev.desc[E1_OP_GEMM_S4], ev.tiles);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    CHECK_EQ(npk_lower_attention_av(L, 1, &q4, &k4, &o, &g, &ev), 0); /* [1][2][2][3] x [1][2][3][3] */
    CHECK(same(&o, &g, "av int4"));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    CHECK_EQ(npk_lower_attention_av(L, 1, &k4, &q4, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "field 'value': dimension 2") != NULL);
    npk_lt_free(&q4);
    npk_lt_free(&k4);
    npk_lt_free(&q);
    npk_lt_free(&k);
    npk_lt_free(&v);
}

static void test_kv_decode(npk_lower *L) {
    npk_lower_out o, g;
    npk_lower_evidence ev;
    /* hand: capacity 3, length 1, append 1 token */
    npk_ltensor kc = T4(1, 1, 3, 2), vc = T4(1, 1, 3, 1), nk = T4(1, 1, 1, 2), nv = T4(1, 1, 1, 1), ln = T2(1, 1);
    setv(&kc, (int32_t[]){1, 2, 9, 9, 9, 9});
    setv(&vc, (int32_t[]){3, 9, 9});
    setv(&nk, (int32_t[]){-5, 6});
    nv.data[0] = 7;
    ln.data[0] = 1;
    CHECK_EQ(npk_lower_kv_cache_update(L, &kc, &vc, &nk, &nv, &ln, &o, &g, &ev), 0);
    CHECK(eqv(npk_lower_out_get(&o, "key_cache"), (int32_t[]){1, 2, -5, 6, 9, 9}, 6));
    CHECK(eqv(npk_lower_out_get(&o, "value_cache"), (int32_t[]){3, 7, 9}, 3));
    CHECK(eqv(npk_lower_out_get(&o, "cache_lengths"), (int32_t[]){2}, 1));
    CHECK_EQ(ev.direct[E1_OP_ADD], 3);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    ln.data[0] = 3; /* overflow */
    CHECK_EQ(npk_lower_kv_cache_update(L, &kc, &vc, &nk, &nv, &ln, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "exceeds the cache capacity") != NULL);
    npk_lt_free(&kc);
    npk_lt_free(&vc);
    npk_lt_free(&nk);
    npk_lt_free(&nv);
    npk_lt_free(&ln);
    /* decode: 3 heads with different lengths, windows 0 (none), 2, and 10 (> capacity) */
    unsigned B = 1, H = 3, C = 6, D = 4, Dv = 3, T = 1, Tq = 1;
    npk_ltensor q = T4(B, H, Tq, D);
    kc = T4(B, H, C, D);
    vc = T4(B, H, C, Dv);
    nk = T4(B, H, T, D);
    nv = T4(B, H, T, Dv);
    ln = T2(B, H);
    fill(&q, -128, 127);
    fill(&kc, -128, 127);
    fill(&vc, -128, 127);
    fill(&nk, -128, 127);
    fill(&nv, -128, 127);
    setv(&ln, (int32_t[]){0, 3, 5});
    static const unsigned windows[] = {0, 2, 10};
    for (int w = 0; w < 3; w++) {
        npk_attn_params p;
        npk_attn_params_default(&p);
        p.qk_score_shift = 9;
        p.context_shift = 5;
        CHECK_EQ(npk_lower_decode_attention(L, &q, &kc, &vc, &nk, &nv, &ln, windows[w], &p, &o, &g, &ev), 0);
        CHECK(same(&o, &g, "decode"));
        const npk_ltensor *kv = npk_lower_out_get(&o, "key_view");
        unsigned want = windows[w] == 2 ? 2 : 6;
        CHECK(kv && kv->dim[2] == want);
        /* head 0 has 1 token: view row 0 = the new key, the rest zero-padded and masked */
        CHECK(kv && !memcmp(kv->data, nk.data, D * 4));
        const npk_ltensor *mm = npk_lower_out_get(&o, "mask");
        CHECK(mm && mm->data[0] == 1 && mm->data[1] == 0);
        CHECK_EQ(!!(ev.host & NPK_HOST_APPLIES_CACHE_WINDOW), windows[w] != 0);
        CHECK(ev.pad_values > 0);
        npk_lower_out_free(&o);
        npk_lower_out_free(&g);
    }
    npk_lt_free(&q);
    npk_lt_free(&kc);
    npk_lt_free(&vc);
    npk_lt_free(&nk);
    npk_lt_free(&nv);
    npk_lt_free(&ln);
}

static void test_blocks(npk_lower *L) {
    npk_lower_out o, g;
    npk_lower_evidence ev;
    unsigned T = 3, D = 4, F = 6, Tk = 3;
    npk_ltensor in = T2(T, D), att = T4(1, 1, T, Tk), val = T4(1, 1, Tk, D), bias = T1(D), up = T2(D, F),
                dn = T2(F, D);
    fill(&in, -40, 40);
    fill(&att, 0, 3);
    fill(&val, -10, 10);
    fill(&bias, -20, 20);
    fill(&up, -30, 30);
    fill(&dn, -3, 3);
    npk_tblock_args ta = {&in, &att, &val, &bias, &up, &dn, 6};
    CHECK_EQ(npk_lower_transformer_block(L, &ta, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "transformer_block"));
    CHECK_EQ(ev.direct[E1_OP_VRELU_S8], 1);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    /* out-of-int8 attention context: rejected before MMIO */
    fill(&att, 100, 127);
    fill(&val, 100, 127);
    uint64_t m0 = npk_port_mmio_count(npk_e1_port(npk_lower_driver(L)));
    CHECK_EQ(npk_lower_transformer_block(L, &ta, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "attention context") != NULL);
    CHECK_EQ(npk_port_mmio_count(npk_e1_port(npk_lower_driver(L))), m0);
    npk_lt_free(&in);
    npk_lt_free(&att);
    npk_lt_free(&val);
    npk_lt_free(&bias);
    npk_lt_free(&up);
    npk_lt_free(&dn);

    /* modern decoder block, separate and packed QKV, causal mask, SiLU gate */
    T = 3;
    D = 4;
    F = 4;
    npk_ltensor x = T2(T, D), n1 = T1(D), n2 = T1(D), wq = T2(D, D), wk = T2(D, D), wv = T2(D, D), pk = T2(D, 3 * D),
                ab = T1(D), cs = T1(D / 2), sn = T1(D / 2), su = T2(D, F), sg = T2(D, F), sd = T2(F, D);
    fill(&x, -60, 60);
    fill(&n1, 20, 90);
    fill(&n2, 20, 90);
    fill(&wq, -60, 60);
    fill(&wk, -60, 60);
    fill(&wv, -60, 60);
    for (unsigned i = 0; i < D; i++)
        for (unsigned j = 0; j < D; j++) {
            pk.data[i * 3 * D + j] = wq.data[i * D + j];
            pk.data[i * 3 * D + D + j] = wk.data[i * D + j];
            pk.data[i * 3 * D + 2 * D + j] = wv.data[i * D + j];
        }
    fill(&ab, -10, 10);
    fill(&cs, 60, 127);
    fill(&sn, -60, 60);
    fill(&su, -40, 40);
    fill(&sg, -40, 40);
    fill(&sd, -2, 2);
    npk_decoder_args da;
    npk_decoder_args_default(&da);
    da.input = &x;
    da.norm1_weight = &n1;
    da.norm2_weight = &n2;
    da.q_weight = &wq;
    da.k_weight = &wk;
    da.v_weight = &wv;
    da.attention_bias = &ab;
    da.cos = &cs;
    da.sin = &sn;
    da.swiglu_up_weight = &su;
    da.swiglu_gate_weight = &sg;
    da.swiglu_down_weight = &sd;
    da.projection_shift = 6;
    da.swiglu_requant_shift = 6;
    da.swiglu_gate_shift = 7;
    npk_lower_out sep = {0}, sepg = {0};
    CHECK_EQ(npk_lower_modern_decoder_block(L, &da, &sep, &sepg, &ev), 0);
    CHECK(same(&sep, &sepg, "decoder separate"));
    CHECK(ev.tiles > 0);
    da.packed_qkv_weight = &pk;
    da.q_weight = da.k_weight = da.v_weight = NULL;
    CHECK_EQ(npk_lower_modern_decoder_block(L, &da, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "decoder packed"));
    CHECK(ev.host & NPK_HOST_SLICES_PACKED_QKV);
    /* packed and separate projections give the same block output */
    CHECK(!memcmp(o.t[0].data, sep.t[0].data, T * D * 4));
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    da.attention_mask_mode = NPK_MASK_CAUSAL;
    da.swiglu_silu = 1;
    CHECK_EQ(npk_lower_modern_decoder_block(L, &da, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "decoder causal silu"));
    CHECK(ev.host & NPK_HOST_GENERATES_CAUSAL_MASK);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lower_out_free(&sep);
    npk_lower_out_free(&sepg);
    da.packed_qkv_weight = NULL;
    CHECK_EQ(npk_lower_modern_decoder_block(L, &da, &o, &g, &ev), -NPK_EINVAL); /* no projection weights */
    CHECK(strstr(npk_errmsg(), "field 'q_weight'") != NULL);
    npk_lt_free(&x);
    npk_lt_free(&n1);
    npk_lt_free(&n2);
    npk_lt_free(&wq);
    npk_lt_free(&wk);
    npk_lt_free(&wv);
    npk_lt_free(&pk);
    npk_lt_free(&ab);
    npk_lt_free(&cs);
    npk_lt_free(&sn);
    npk_lt_free(&su);
    npk_lt_free(&sg);
    npk_lt_free(&sd);
}

static void test_rejections(npk_lower *L) {
    npk_lower_out o, g;
    npk_lower_evidence ev;
    npk_port *p = npk_e1_port(npk_lower_driver(L));
    uint64_t m0 = npk_port_mmio_count(p);
    npk_ltensor a = T2(2, 3), b = T2(4, 2), c = T2(3, 2);
    CHECK_EQ(npk_lower_matmul(L, 0, &a, &b, &o, &g, &ev), -NPK_EINVAL);
    CHECK_STR(npk_errmsg(), "field 'rhs': dimension 0 is 4 but must be 3 (K of lhs)");
    c.data[3] = 8;
    CHECK_EQ(npk_lower_matmul(L, 1, &a, &c, &o, &g, &ev), -NPK_EINVAL);
    CHECK_STR(npk_errmsg(), "field 'rhs': value 8 at [1][1] is outside int4 [-8, 7]");
    CHECK_EQ(npk_lower_matmul(L, 0, &a, NULL, &o, &g, &ev), -NPK_EINVAL);
    CHECK_STR(npk_errmsg(), "field 'rhs': missing tensor");
    npk_ltensor a4 = T4(1, 1, 2, 3);
    CHECK_EQ(npk_lower_matmul(L, 0, &a4, &c, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "rank-2") != NULL);
    CHECK_EQ(npk_lower_qkv_projection(L, &a, &c, 0, &o, &g, &ev), -NPK_EINVAL);
    CHECK_EQ(npk_lower_mlp(L, &a, &c, &b, 40, &o, &g, &ev), -NPK_EINVAL);
    npk_ltensor in = T4(2, 3, 3, 1), f = T4(1, 1, 1, 1);
    CHECK_EQ(npk_lower_conv2d(L, 0, &in, &f, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "batch 2") != NULL);
    npk_ltensor in1 = T4(1, 2, 2, 4), f1 = T4(3, 1, 4, 1);
    CHECK_EQ(npk_lower_conv2d(L, 0, &in1, &f1, &o, &g, &ev), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "VALID") != NULL);
    npk_ltensor fg = T4(1, 1, 1, 4);
    CHECK_EQ(npk_lower_grouped_conv2d(L, &in1, &fg, 4, &o, &g, &ev), -NPK_EINVAL); /* depthwise groups */
    CHECK(strstr(npk_errmsg(), "depthwise") != NULL);
    CHECK_EQ(npk_lower_grouped_conv2d(L, &in1, &fg, 3, &o, &g, &ev), -NPK_EINVAL);
    CHECK_EQ(npk_port_mmio_count(p), m0);
    npk_lt_free(&a);
    npk_lt_free(&b);
    npk_lt_free(&c);
    npk_lt_free(&a4);
    npk_lt_free(&in);
    npk_lt_free(&f);
    npk_lt_free(&in1);
    npk_lt_free(&f1);
    npk_lt_free(&fg);
}

/* Slow guest memory: streamed descriptors hit the ring's 128-cycle timeout;
 * the batch is re-run as direct tiles, still exact and still on the NPU. */
static void test_slow_memory(npk_lower *L, npk_port *port) {
    npk_mem *mem = npk_sim_mem(npk_port_sim(port));
    npk_mem_set_latency(mem, 8);
    npk_lower_out o, g;
    npk_lower_evidence ev;
    npk_ltensor a = T2(6, 14), b = T2(14, 4);
    fill(&a, -128, 127);
    fill(&b, -128, 127);
    CHECK_EQ(npk_lower_matmul(L, 0, &a, &b, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "slow memory"));
    CHECK(ev.desc_retries > 0);
    CHECK(ev.direct[E1_OP_GEMM_S8] > 0);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_mem_set_latency(mem, 0);
    CHECK_EQ(npk_lower_matmul(L, 0, &a, &b, &o, &g, &ev), 0);
    CHECK(same(&o, &g, "after slow memory"));
    CHECK_EQ(ev.desc_retries, 0);
    npk_lower_out_free(&o);
    npk_lower_out_free(&g);
    npk_lt_free(&a);
    npk_lt_free(&b);
}

static void run_all(npk_port *port, int small) {
    npk_e1 *e;
    npk_lower *L;
    CHECK_EQ(npk_e1_open(&e, port), 0);
    if (!e) return;
    CHECK_EQ(npk_lower_new(&L, e), 0);
    if (!L) return;
    test_matmul(L, small);
    test_batch_qkv_conv(L);
    test_band(L);
    test_s8_entries(L);
    test_precisions(L);
    test_elementwise(L);
    test_mlps(L);
    test_attention(L, small);
    test_kv_decode(L);
    if (!small) test_blocks(L);
    test_rejections(L);
    if (npk_port_sim(port)) test_slow_memory(L, port);
    npk_lower_free(L);
    npk_e1_close(e);
}

int main(void) {
    npk_port *p;
    CHECK_EQ(npk_port_open(&p, "sim", "e1", NULL), 0);
    if (p) {
        run_all(p, 0);
        npk_port_close(p);
    }
    rs = 0x1234567u;
    /* the qtest pass is part of the test: npu is built beside it, so a port
     * that does not open is a failure, not a skip */
    int rc = npk_port_open(&p, "qtest-spawn:" NPU_BIN, "e1", NULL);
    if (rc) fprintf(stderr, "qtest port: %s\n", npk_errmsg());
    CHECK_EQ(rc, 0);
    if (!rc) {
        run_all(p, 1);
        npk_port_close(p);
    }
    return CHECK_DONE();
}
