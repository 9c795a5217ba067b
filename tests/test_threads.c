/* SPDX-License-Identifier: MIT */
/* The worker pool (include/npukit/threads.h) and the threaded GEMMs: every
 * task runs exactly once, nested calls run serially, a forked child starts its
 * own pool, tasks of uneven length (a slow worker) still run once each, and
 * the int8, sequential fp32 and reassociating fp32 GEMMs give byte-identical
 * results at 1, 2 and 3 threads, at every instruction-set level
 * this host has, on shapes whose slices end in partial tiles; so does the
 * exact INT4 x BF16 GEMV of pccx (split into blocks of 16 outputs; each
 * thread count is also checked against the per-product golden in
 * test_q4_gemv); so do the ONNX CPU path's element-wise kernels (flat slices)
 * and depthwise convolutions (output rows or channels). */
#include "check.h"
#include "npukit/cpu.h"
#include "npukit/error.h"
#include "npukit/gemm.h"
#include "npukit/numfmt.h"
#include "npukit/threads.h"
#include "ops/fast_onnx.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (uint32_t)(rs >> 16);
}

typedef struct cnt {
    atomic_int hits[1000];
    atomic_int nested;
} cnt;

static void inner(void *ctx, int t) {
    cnt *c = ctx;
    (void)t;
    atomic_fetch_add(&c->nested, 1);
}
static void outer(void *ctx, int t) {
    cnt *c = ctx;
    atomic_fetch_add(&c->hits[t], 1);
    if (t % 100 == 0) npk_parallel(7, inner, c); /* nested: serial on this thread */
}

static void range_hits(void *ctx, int64_t lo, int64_t hi) {
    cnt *c = ctx;
    if (hi - lo < 10 && !(lo == 0)) atomic_fetch_add(&c->nested, 1); /* a short range that is not the only one */
    for (int64_t i = lo; i < hi; i++) atomic_fetch_add(&c->hits[i], 1);
}

static void test_pool(void) {
    for (int th = 1; th <= 4; th++) {
        CHECK_EQ(npk_threads_set(th), 0);
        CHECK_EQ(npk_threads(), th);
        for (int round = 0; round < 50; round++) {
            static cnt c;
            memset(&c, 0, sizeof c);
            npk_parallel(1000, outer, &c);
            int bad = 0;
            for (int i = 0; i < 1000; i++) bad += atomic_load(&c.hits[i]) != 1;
            CHECK_EQ(bad, 0);
            CHECK_EQ(atomic_load(&c.nested), 70);
        }
    }
    /* npk_parallel_range covers [0, n) once, in ranges of at least the grain (but a lone one) */
    for (int th = 1; th <= 3; th++) {
        CHECK_EQ(npk_threads_set(th), 0);
        for (int64_t n = 0; n < 1000; n += 37) {
            static cnt c;
            memset(&c, 0, sizeof c);
            npk_parallel_range(n, 10, range_hits, &c);
            int bad = 0;
            for (int64_t i = 0; i < 1000; i++) bad += atomic_load(&c.hits[i]) != (i < n);
            CHECK_EQ(bad, 0);
            CHECK_EQ(atomic_load(&c.nested), 0);
        }
    }
    CHECK_EQ(npk_threads_set(-1), -NPK_EINVAL);
    /* the calling thread's own count wins over the process-wide one, and 0 returns to it */
    CHECK_EQ(npk_threads_set(2), 0);
    CHECK_EQ(npk_threads_set_local(3), 0);
    CHECK_EQ(npk_threads(), 3);
    CHECK_EQ(npk_threads_set_local(1), 3);
    CHECK_EQ(npk_threads(), 1);
    CHECK_EQ(npk_threads_set_local(-1), -NPK_EINVAL);
    CHECK_EQ(npk_threads_set_local(0), 1);
    CHECK_EQ(npk_threads(), 2);
    CHECK_EQ(npk_threads_set(0), 0);
    CHECK(npk_threads() >= 1 && npk_threads_cpus() >= 1);
    /* a forked child (npu sweep's points) runs its own pool */
    CHECK_EQ(npk_threads_set(3), 0);
    pid_t pid = fork();
    if (pid == 0) {
        static cnt c;
        npk_parallel(1000, outer, &c);
        int bad = 0;
        for (int i = 0; i < 1000; i++) bad += atomic_load(&c.hits[i]) != 1;
        _exit(bad ? 1 : 0);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Tasks of uneven length, longer on the workers than on the caller while `slow_worker` is
 * set (a worker on a busy or slow CPU): the pool then deals the workers fewer tasks or none,
 * probes them now and then, and deals them tasks again once they are fast; whatever it deals,
 * every task runs once and all have run when npk_parallel returns. */
typedef struct uneven {
    atomic_int hits[64];
    pthread_t caller;
    int slow_worker;
} uneven;

static void spin_us(int us) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static void uneven_task(void *ctx, int t) {
    uneven *u = ctx;
    int worker = !pthread_equal(pthread_self(), u->caller);
    spin_us((worker && u->slow_worker ? 40 : 2) + t % 3);
    atomic_fetch_add(&u->hits[t], 1);
}

static void test_pool_uneven(void) {
    for (int th = 2; th <= 3; th++) {
        CHECK_EQ(npk_threads_set(th), 0);
        for (int phase = 0; phase < 3; phase++) /* fast workers, a slow one, fast again */
            for (int job = 0; job < 300; job++) {
                static uneven u;
                int n = 1 + (int)(rnd() % 64), bad = 0;
                memset(&u, 0, sizeof u);
                u.caller = pthread_self(), u.slow_worker = phase == 1;
                npk_parallel(n, uneven_task, &u);
                for (int t = 0; t < 64; t++) bad += atomic_load(&u.hits[t]) != (t < n);
                CHECK_EQ(bad, 0);
                if (job % 60 == 59) usleep(1000); /* the workers fall asleep */
            }
    }
}

/* Run f at 1, 2 and 3 threads into three outputs and compare the bytes. */
static void test_gemms(void) {
    static const uint32_t shapes[][3] = {
        {203, 129, 97}, {50, 700, 64}, {300, 5, 1500}, {24 * 5 + 7, 64 * 3 + 9, 300}, {1, 4000, 600}, {97, 1021, 33},
        {24, 1920, 300}, {6, 2000, 200}, /* few rows, many columns: the float GEMM splits column panels */
    };
    npk_gemm_ws ws = {0};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        uint32_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
        size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
        int8_t *a8 = malloc(na), *b8 = malloc(nb);
        float *af = malloc(na * 4), *bf = malloc(nb * 4), *ae = malloc(na * 4), *be = malloc(nb * 4);
        uint16_t *ah = malloc(na * 2), *bh = malloc(nb * 2); /* ae, be in BF16 (exactly) */
        for (size_t i = 0; i < na; i++) {
            a8[i] = (int8_t)rnd();
            af[i] = (float)((int)(rnd() % 2001) - 1000) / 337.0f;
            ae[i] = (float)((int)(rnd() % 255) - 127) / 64.0f; /* exact products: the fused path */
            ah[i] = npk_bf16_from_f32(ae[i]);
        }
        for (size_t i = 0; i < nb; i++) {
            b8[i] = (int8_t)rnd();
            bf[i] = (float)((int)(rnd() % 2001) - 1000) / 511.0f;
            be[i] = (float)((int)(rnd() % 255) - 127) / 32.0f;
            bh[i] = npk_bf16_from_f32(be[i]);
        }
        FOR_EACH_ISA(l) {
            int32_t *c8[3];
            float *cf[3], *ce[3], *cr[3], *cb = malloc(nc * 4);
            for (int t = 0; t < 3; t++) {
                c8[t] = malloc(nc * 4), cf[t] = malloc(nc * 4), ce[t] = malloc(nc * 4), cr[t] = malloc(nc * 4);
                CHECK_EQ(npk_threads_set(t + 1), 0);
                CHECK_EQ(npk_gemm_s8s32(&ws, M, N, K, a8, K, b8, N, c8[t], N), 0);
                CHECK_EQ(npk_gemm_f32(&ws, M, N, K, af, K, bf, N, cf[t], N), 0);
                CHECK_EQ(npk_gemm_f32(&ws, M, N, K, ae, K, be, N, ce[t], N), 0);
                for (size_t i = 0; i < nc; i++) cr[t][i] = 0.5f; /* acc = 1 reads C */
                npk_gemm_f32_reassoc(M, N, K, af, K, bf, N, cr[t], N, 1);
                /* BF16 operands widened while packed: the bits of the fp32 GEMM of the same values */
                CHECK_EQ(npk_gemm_bf16(&ws, M, N, K, ah, K, bh, N, cb, N), 0);
                CHECK(!memcmp(cb, ce[t], nc * 4));
            }
            for (int t = 1; t < 3; t++) {
                int same8 = !memcmp(c8[0], c8[t], nc * 4), samef = !memcmp(cf[0], cf[t], nc * 4),
                    samee = !memcmp(ce[0], ce[t], nc * 4), samer = !memcmp(cr[0], cr[t], nc * 4);
                if (!(same8 && samef && samee && samer))
                    fprintf(stderr, "%ux%ux%u at %s, %d threads: s8 %d f32 %d f32-exact %d reassoc %d\n", M, N, K,
                            npk_isa_name((npk_isa)l), t + 1, same8, samef, samee, samer);
                CHECK(same8 && samef && samee && samer);
            }
            for (int t = 0; t < 3; t++) free(c8[t]), free(cf[t]), free(ce[t]), free(cr[t]);
            free(cb);
        }
        npk_isa_force(NPK_ISA_AUTO);
        free(a8), free(b8), free(af), free(bf), free(ae), free(be), free(ah), free(bh);
    }
    npk_gemm_ws_free(&ws);
}

/* The INT4 GEMV on shapes split over the pool (from 2^17 MACs), with and
 * without an old value, at 1, 2 and 3 threads: the same bytes. */
static void test_q4(void) {
    static const uint32_t shapes[][3] = {{1000, 288, 8}, {611, 216, 0}, {4099, 64, 32}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        uint32_t N = shapes[si][0], K = shapes[si][1], G = shapes[si][2], ng = G ? (K + G - 1) / G : 1;
        uint8_t *w4 = malloc(((size_t)N * K + 1) / 2), *sb = malloc((size_t)N * ng * 4);
        uint16_t *x = malloc(2 * (size_t)K), *old = malloc(2 * (size_t)N), *y[3];
        for (size_t i = 0; i < ((size_t)N * K + 1) / 2; i++) w4[i] = (uint8_t)rnd();
        for (size_t i = 0; i < (size_t)N * ng; i++) {
            float f = (float)((int)(rnd() % 2001) - 1000) / 4096.0f;
            memcpy(sb + 4 * i, &f, 4); /* little-endian host */
        }
        for (uint32_t k = 0; k < K; k++) x[k] = (uint16_t)((rnd() & 0x8000u) | (0x3c00u + rnd() % 0x800u));
        for (uint32_t n = 0; n < N; n++) old[n] = (uint16_t)((rnd() & 0x8000u) | (0x3e00u + rnd() % 0x200u));
        npk_q4_mat *m = NULL;
        npk_q4_ws *ws = npk_q4_ws_new();
        CHECK(ws && npk_q4_mat_new(w4, sb, N, K, G, &m) == 0);
        FOR_EACH_ISA(l) {
            for (int o = 0; o < 2 && m && ws; o++) {
                for (int t = 0; t < 3; t++) {
                    y[t] = malloc(2 * (size_t)N);
                    CHECK_EQ(npk_threads_set(t + 1), 0);
                    CHECK_EQ(npk_q4_gemv(m, x, o ? old : NULL, y[t], ws), 0);
                }
                for (int t = 1; t < 3; t++) {
                    int same = !memcmp(y[0], y[t], 2 * (size_t)N);
                    if (!same) fprintf(stderr, "q4 %ux%u G%u old %d at %s, %d threads differ\n", N, K, G, o,
                                       npk_isa_name((npk_isa)l), t + 1);
                    CHECK(same);
                }
                for (int t = 0; t < 3; t++) free(y[t]);
            }
        }
        npk_isa_force(NPK_ISA_AUTO);
        npk_q4_mat_free(m);
        npk_q4_ws_free(ws);
        free(w4), free(sb), free(x), free(old);
    }
}

/* Element-wise kernels (unary, binary with a same-shape and a scalar operand, HardSwish,
 * the HardSwish chain) on 270,001 floats (slices of 64 and a ragged end), four depthwise
 * convolutions (split by output rows: 3x3, 5x5 stride 2, 5x5 on a 6-row map; by channels: a
 * 3-row map), global average and max pooling (channel ranges), two ConvTransposes (col2im by
 * output channel; 2x2 / 2 tiles by input rows), a nearest Resize (output rows), a MaxPool (planes), a strided float
 * convolution on phase-split planes (chunks of output rows), a 3x3 one on padded rows
 * read in place (12 output rows dealt over the tasks) and a 3x3 one by Winograd F(2x2, 3x3)
 * (blocks of tile rows), at 1, 2 and 3 threads:
 * the same bytes. */
/* A 4-D float tensor of dims holding the first floats of src. */
static void floats_from(npk_tensor *t, const int64_t *dims, const void *src) {
    CHECK_EQ(npk_tensor_alloc(t, "t", NPK_DT_FLOAT, 4, dims), 0);
    memcpy(t->data, src, sizeof(float) * (size_t)npk_tensor_numel(t));
}

static void test_elementwise(void) {
    enum { N = 270001 };
    int64_t n = N, one = 1;
    npk_tensor a, b, s, y[3][5];
    CHECK_EQ(npk_tensor_alloc(&a, "a", NPK_DT_FLOAT, 1, &n), 0);
    CHECK_EQ(npk_tensor_alloc(&b, "b", NPK_DT_FLOAT, 1, &n), 0);
    CHECK_EQ(npk_tensor_alloc(&s, "s", NPK_DT_FLOAT, 1, &one), 0);
    for (int64_t i = 0; i < n; i++) {
        ((float *)a.data)[i] = (float)((int)(rnd() % 20001) - 10000) / 997.0f;
        ((float *)b.data)[i] = (float)((int)(rnd() % 20001) - 10000) / 331.0f + 0.5f;
    }
    ((float *)s.data)[0] = 1.7f;
    npk_onnx_conv_params p = {.nsp = 2, .n = 1, .c = 64, .m = 64, .group = 64, .in = {1, 40, 60}, .k = {1, 3, 3},
                              .out = {1, 40, 60}, .stride = {1, 1, 1}, .dil = {1, 1, 1}, .pad_b = {0, 1, 1},
                              .pad_e = {0, 1, 1}};
    float *dw[3], w[64 * 9]; /* 64 x 2400 x 9 MACs, split by rows */
    /* 5x5 stride 2 of [1, 32, 24, 80] to [1, 32, 12, 40] (rows), 5x5 of [1, 256, 3, 10] (channels) */
    npk_onnx_conv_params p2 = {.nsp = 2, .n = 1, .c = 32, .m = 32, .group = 32, .in = {1, 24, 80}, .k = {1, 5, 5},
                               .out = {1, 12, 40}, .stride = {1, 2, 2}, .dil = {1, 1, 1}, .pad_b = {0, 2, 2},
                               .pad_e = {0, 2, 2}},
                          p3 = {.nsp = 2, .n = 1, .c = 256, .m = 256, .group = 256, .in = {1, 3, 10}, .k = {1, 5, 5},
                               .out = {1, 3, 10}, .stride = {1, 1, 1}, .dil = {1, 1, 1}, .pad_b = {0, 2, 2},
                               .pad_e = {0, 2, 2}};
    /* 5x5 of [1, 64, 6, 20] (ppocr-v4-det's 6 x 20: taps over padding rows are a fifth, the AVX2
     * rows kernel of fast_dw.c, split by rows at 2 and 3 threads) */
    npk_onnx_conv_params p4 = {.nsp = 2, .n = 1, .c = 64, .m = 64, .group = 64, .in = {1, 6, 20}, .k = {1, 5, 5},
                               .out = {1, 6, 20}, .stride = {1, 1, 1}, .dil = {1, 1, 1}, .pad_b = {0, 2, 2},
                               .pad_e = {0, 2, 2}};
    float *dw2[3], *dw3[3], *dw4[3], w2[256 * 25];
    int64_t pd[4] = {2, 150, 7, 9}, pod[4] = {2, 150, 1, 1};
    /* ConvTranspose x [2, 4, 10, 12], w [4, 32, 3, 3], 2 groups, stride 2, pads 1: y [2, 64, 19, 23]
     * (col2im split by output channel) */
    npk_onnx_conv_params q = {.nsp = 2, .n = 2, .c = 4, .m = 64, .group = 2, .in = {1, 10, 12}, .k = {1, 3, 3},
                              .out = {1, 19, 23}, .stride = {1, 2, 2}, .dil = {1, 1, 1}, .pad_b = {0, 1, 1},
                              .pad_e = {0, 1, 1}};
    int64_t qx[4] = {2, 4, 10, 12}, qw[4] = {4, 32, 3, 3}, qy[4] = {2, 64, 19, 23}, qb = 64;
    /* ConvTranspose 2x2 / 2 of [1, 24, 12, 40] to [1, 24, 24, 80] (tiles split by input rows) */
    npk_onnx_conv_params q2 = {.nsp = 2, .n = 1, .c = 24, .m = 24, .group = 1, .in = {1, 12, 40}, .k = {1, 2, 2},
                               .out = {1, 24, 80}, .stride = {1, 2, 2}, .dil = {1, 1, 1}};
    int64_t q2x[4] = {1, 24, 12, 40}, q2w[4] = {24, 24, 2, 2}, q2y[4] = {1, 24, 24, 80};
    npk_tensor t2x, t2w, t2y[3];
    floats_from(&t2x, q2x, b.data);
    floats_from(&t2w, q2w, a.data);
    npk_tensor tx, tw, tb, ty[3];
    /* Conv x [1, 3, 96, 160], w [16, 3, 3, 3], stride 2, pads 1: y [1, 16, 48, 80], 1.66M MACs */
    npk_onnx_conv_params sc = {.nsp = 2, .n = 1, .c = 3, .m = 16, .group = 1, .in = {1, 96, 160}, .k = {1, 3, 3},
                               .out = {1, 48, 80}, .stride = {1, 2, 2}, .dil = {1, 1, 1}, .pad_b = {0, 1, 1},
                               .pad_e = {0, 1, 1}};
    int64_t sx[4] = {1, 3, 96, 160}, sw[4] = {16, 3, 3, 3}, sb = 16, sy[4] = {1, 16, 48, 80};
    npk_tensor stx, stw, stb, sty[3];
    /* Conv x [1, 96, 12, 40], w [7, 96, 3, 3], pads 1: y [1, 7, 12, 40] (rows read in place:
     * fewer than 8 output channels, not Winograd's) */
    npk_onnx_conv_params rc = {.nsp = 2, .n = 1, .c = 96, .m = 7, .group = 1, .in = {1, 12, 40}, .k = {1, 3, 3},
                               .out = {1, 12, 40}, .stride = {1, 1, 1}, .dil = {1, 1, 1}, .pad_b = {0, 1, 1},
                               .pad_e = {0, 1, 1}};
    int64_t rcx[4] = {1, 96, 12, 40}, rcw[4] = {7, 96, 3, 3}, rcy[4] = {1, 7, 12, 40};
    npk_tensor rctx, rctw, rcty[3];
    floats_from(&rctx, rcx, a.data);
    floats_from(&rctw, rcw, b.data);
    /* Conv x [1, 96, 23, 79], w [24, 96, 3, 3], bias, pads 1: y [1, 24, 23, 79] (Winograd
     * F(2x2, 3x3): 12 rows of 40 tiles, the last row and column of tiles half outside) */
    npk_onnx_conv_params wc = {.nsp = 2, .n = 1, .c = 96, .m = 24, .group = 1, .in = {1, 23, 79}, .k = {1, 3, 3},
                               .out = {1, 23, 79}, .stride = {1, 1, 1}, .dil = {1, 1, 1}, .pad_b = {0, 1, 1},
                               .pad_e = {0, 1, 1}};
    int64_t wcx[4] = {1, 96, 23, 79}, wcw[4] = {24, 96, 3, 3}, wcb = 24, wcy[4] = {1, 24, 23, 79};
    /* and of the 12 x 40 input above (6 rows of 20 tiles: blocks of two tile rows at 1 thread,
     * of one with threads) */
    npk_onnx_conv_params wc2 = rc;
    wc2.m = 24;
    int64_t wc2y[4] = {1, 24, 12, 40};
    npk_tensor wctx, wctw, wctb, wcty[3], wc2ty[3];
    floats_from(&wctx, wcx, b.data);
    floats_from(&wctw, wcw, a.data);
    CHECK_EQ(npk_tensor_alloc(&wctb, "b", NPK_DT_FLOAT, 1, &wcb), 0);
    memcpy(wctb.data, (const float *)b.data + 1000, sizeof(float) * 24);
    CHECK_EQ(npk_tensor_alloc(&stx, "x", NPK_DT_FLOAT, 4, sx), 0);
    CHECK_EQ(npk_tensor_alloc(&stw, "w", NPK_DT_FLOAT, 4, sw), 0);
    CHECK_EQ(npk_tensor_alloc(&stb, "b", NPK_DT_FLOAT, 1, &sb), 0);
    memcpy(stx.data, a.data, sizeof(float) * 3 * 96 * 160);
    memcpy(stw.data, b.data, sizeof(float) * 432);
    memcpy(stb.data, (const float *)b.data + 500, sizeof(float) * 16);
    /* nearest Resize x2 of [1, 160, 40, 60] to [1, 160, 80, 120] (split by output rows) and
     * MaxPool 3x3 stride 2 pad 1 of it to [1, 160, 20, 30] (split by planes) */
    npk_onnx_resize rs = {.rank = 4, .mode = NPK_ONNX_RS_NEAREST, .coord = NPK_ONNX_RS_ASYMMETRIC,
                          .nearest = NPK_ONNX_RS_FLOOR, .scales = {1, 1, 2, 2}};
    npk_onnx_conv_params mp = {.nsp = 2, .n = 1, .c = 160, .m = 160, .group = 1, .in = {1, 40, 60}, .k = {1, 3, 3},
                               .out = {1, 20, 30}, .stride = {1, 2, 2}, .dil = {1, 1, 1}, .pad_b = {0, 1, 1},
                               .pad_e = {0, 1, 1}};
    int64_t rx[4] = {1, 160, 40, 60}, ry[4] = {1, 160, 80, 120}, my[4] = {1, 160, 20, 30};
    npk_tensor rxt, ryt[3], myt[3];
    CHECK_EQ(npk_tensor_alloc(&rxt, "x", NPK_DT_FLOAT, 4, rx), 0);
    for (int64_t i = 0; i < 160 * 2400; i++) ((float *)rxt.data)[i] = ((float *)a.data)[i % N]; /* a has N */
    CHECK_EQ(npk_tensor_alloc(&tx, "x", NPK_DT_FLOAT, 4, qx), 0);
    CHECK_EQ(npk_tensor_alloc(&tw, "w", NPK_DT_FLOAT, 4, qw), 0);
    CHECK_EQ(npk_tensor_alloc(&tb, "b", NPK_DT_FLOAT, 1, &qb), 0);
    memcpy(tx.data, a.data, sizeof(float) * 960);
    memcpy(tw.data, b.data, sizeof(float) * 1152);
    memcpy(tb.data, b.data, sizeof(float) * 64);
    npk_tensor px, py[3][2];
    CHECK_EQ(npk_tensor_alloc(&px, "x", NPK_DT_FLOAT, 4, pd), 0);
    for (int64_t i = 0; i < 2 * 150 * 63; i++) ((float *)px.data)[i] = ((float *)a.data)[i];
    for (int i = 0; i < 64 * 9; i++) w[i] = (float)((int)(rnd() % 201) - 100) / 77.0f;
    for (int i = 0; i < 256 * 25; i++) w2[i] = (float)((int)(rnd() % 201) - 100) / 77.0f;
    FOR_EACH_ISA(l) {
        for (int t = 0; t < 3; t++) {
            CHECK_EQ(npk_threads_set(t + 1), 0);
            for (int k = 0; k < 5; k++) CHECK_EQ(npk_tensor_alloc(&y[t][k], "y", NPK_DT_FLOAT, 1, &n), 0);
            CHECK_EQ(npk_fast_unary(NPK_ONNX_SIGMOID, &a, &y[t][0], 0, 0, 0), 0);
            CHECK_EQ(npk_fast_binary(NPK_ONNX_DIV, &a, &b, &y[t][1]), 0);
            CHECK_EQ(npk_fast_binary(NPK_ONNX_MUL, &s, &a, &y[t][2]), 0);
            CHECK_EQ(npk_fast_hard(1, &a, &y[t][3], 0, 0), 0);
            CHECK_EQ(npk_fast_hswish_chain(a.data, y[t][4].data, n, 3.0f, 0.0, 6.0, 6.0f, t == 1), 0);
            dw[t] = malloc(sizeof(float) * 64 * 40 * 60);
            CHECK_EQ(npk_fast_dw_f32(&p, a.data, w, NULL, dw[t]), 0);
            dw2[t] = malloc(sizeof(float) * 32 * 12 * 40);
            CHECK_EQ(npk_fast_dw_f32(&p2, a.data, w2, w, dw2[t]), 0);
            dw3[t] = malloc(sizeof(float) * 256 * 30);
            CHECK_EQ(npk_fast_dw_f32(&p3, b.data, w2, w, dw3[t]), 0);
            dw4[t] = malloc(sizeof(float) * 64 * 120);
            CHECK_EQ(npk_fast_dw_f32(&p4, b.data, w2, w, dw4[t]), 0);
            CHECK_EQ(npk_tensor_alloc(&ryt[t], "y", NPK_DT_FLOAT, 4, ry), 0);
            CHECK_EQ(npk_fast_resize(&rs, &rxt, &ryt[t]), 0);
            CHECK_EQ(npk_tensor_alloc(&myt[t], "y", NPK_DT_FLOAT, 4, my), 0);
            CHECK_EQ(npk_fast_maxpool(&mp, &rxt, &myt[t]), 0);
            CHECK_EQ(npk_tensor_alloc(&ty[t], "y", NPK_DT_FLOAT, 4, qy), 0);
            CHECK_EQ(npk_fast_conv_transpose(&q, &tx, &tw, &tb, &ty[t]), 0);
            CHECK_EQ(npk_tensor_alloc(&t2y[t], "y", NPK_DT_FLOAT, 4, q2y), 0);
            CHECK_EQ(npk_fast_conv_transpose(&q2, &t2x, &t2w, &tb, &t2y[t]), 0);
            CHECK_EQ(npk_tensor_alloc(&sty[t], "y", NPK_DT_FLOAT, 4, sy), 0);
            CHECK_EQ(npk_fast_conv(&sc, &stx, &stw, &stb, &sty[t]), 0);
            CHECK_EQ(npk_tensor_alloc(&rcty[t], "y", NPK_DT_FLOAT, 4, rcy), 0);
            CHECK_EQ(npk_fast_conv(&rc, &rctx, &rctw, NULL, &rcty[t]), 0);
            CHECK_EQ(npk_tensor_alloc(&wcty[t], "y", NPK_DT_FLOAT, 4, wcy), 0);
            CHECK_EQ(npk_fast_conv(&wc, &wctx, &wctw, &wctb, &wcty[t]), 0);
            CHECK_EQ(npk_tensor_alloc(&wc2ty[t], "y", NPK_DT_FLOAT, 4, wc2y), 0);
            CHECK_EQ(npk_fast_conv(&wc2, &rctx, &wctw, &wctb, &wc2ty[t]), 0);
            for (int k = 0; k < 2; k++) {
                CHECK_EQ(npk_tensor_alloc(&py[t][k], "y", NPK_DT_FLOAT, 4, pod), 0);
                CHECK_EQ(npk_fast_global_pool(&px, &py[t][k], k), 0);
            }
        }
        for (int t = 1; t < 3; t++) {
            for (int k = 0; k < 4; k++) CHECK(!memcmp(y[0][k].data, y[t][k].data, sizeof(float) * N));
            CHECK(!memcmp(dw[0], dw[t], sizeof(float) * 64 * 40 * 60));
            CHECK(!memcmp(dw2[0], dw2[t], sizeof(float) * 32 * 12 * 40));
            CHECK(!memcmp(dw3[0], dw3[t], sizeof(float) * 256 * 30));
            CHECK(!memcmp(dw4[0], dw4[t], sizeof(float) * 64 * 120));
            for (int k = 0; k < 2; k++) CHECK(!memcmp(py[0][k].data, py[t][k].data, sizeof(float) * 300));
            CHECK(!memcmp(ty[0].data, ty[t].data, sizeof(float) * 2 * 64 * 19 * 23));
            CHECK(!memcmp(t2y[0].data, t2y[t].data, sizeof(float) * 24 * 24 * 80));
            CHECK(!memcmp(sty[0].data, sty[t].data, sizeof(float) * 16 * 48 * 80));
            CHECK(!memcmp(rcty[0].data, rcty[t].data, sizeof(float) * 7 * 480));
            CHECK(!memcmp(wcty[0].data, wcty[t].data, sizeof(float) * 24 * 23 * 79));
            CHECK(!memcmp(wc2ty[0].data, wc2ty[t].data, sizeof(float) * 24 * 12 * 40));
            CHECK(!memcmp(ryt[0].data, ryt[t].data, sizeof(float) * 160 * 80 * 120));
            CHECK(!memcmp(myt[0].data, myt[t].data, sizeof(float) * 160 * 20 * 30));
        }
        /* the chain at 1 thread against its division-last form at 2 (not the same values:
         * a check that the form is followed), and against itself at 3 */
        CHECK(!memcmp(y[0][4].data, y[2][4].data, sizeof(float) * N));
        CHECK(memcmp(y[0][4].data, y[1][4].data, sizeof(float) * N));
        for (int t = 0; t < 3; t++) {
            for (int k = 0; k < 5; k++) npk_tensor_free(&y[t][k]);
            for (int k = 0; k < 2; k++) npk_tensor_free(&py[t][k]);
            npk_tensor_free(&ty[t]), npk_tensor_free(&ryt[t]), npk_tensor_free(&myt[t]), npk_tensor_free(&sty[t]);
            npk_tensor_free(&rcty[t]), npk_tensor_free(&t2y[t]), npk_tensor_free(&wcty[t]);
            npk_tensor_free(&wc2ty[t]);
            free(dw[t]), free(dw2[t]), free(dw3[t]), free(dw4[t]);
        }
    }
    npk_isa_force(NPK_ISA_AUTO);
    npk_tensor_free(&a), npk_tensor_free(&b), npk_tensor_free(&s), npk_tensor_free(&px);
    npk_tensor_free(&tx), npk_tensor_free(&tw), npk_tensor_free(&tb), npk_tensor_free(&rxt);
    npk_tensor_free(&stx), npk_tensor_free(&stw), npk_tensor_free(&stb), npk_tensor_free(&rctx), npk_tensor_free(&rctw);
    npk_tensor_free(&t2x), npk_tensor_free(&t2w), npk_tensor_free(&wctx), npk_tensor_free(&wctw);
    npk_tensor_free(&wctb);
}

int main(void) {
    test_pool();
    test_pool_uneven();
    test_gemms();
    test_q4();
    test_elementwise();
    npk_threads_set(0);
    return CHECK_DONE();
}
