// SPDX-License-Identifier: MIT
/* v0 operators against the CPU reference (src/ops/ref_int8.c): both GEMM
 * kernels, every op through the driver on edge, random and envelope-limit
 * shapes, explicit strides, extreme values, and shapes beyond the envelope
 * (tiled by the driver or executed by the CPU fallback handler). */
#include "check.h"
#include "npukit/npu.h"
#include "npukit/v0.h"
#include "ops/ref.h"
#include "npukit/gemm.h"
#include "npukit/threads.h"

#include <stdlib.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}
static void fill(int8_t *p, size_t n, int mode) {
    static const int8_t ext[] = {-128, 127, -127, -1, 0, 1};
    for (size_t i = 0; i < n; i++)
        p[i] = mode == 1 ? -128 : mode == 2 ? 127 : mode == 3 ? ext[rnd() % 6] : (int8_t)rnd();
}

static npk_port *P;
static npk_v0 *V;

/* Every variant of the shared int8 kernel (include/npukit/gemm.h) the host
 * runs, forced in turn, against the reference; odd shapes cross every tile,
 * K block and column panel edge (AVX2: 6 x 16 tiles of the widened path below
 * 64 rows or K < 32 and, from 64 rows and K = 32 at any N, 4 x 16 tiles and
 * K blocks of up to 192 in groups of 4 of the table path; AVX-512: 6 x 64
 * tiles), the all -128 / 127 operands are the
 * pair sums that a 16-bit accumulation (vpmaddubsw) would saturate, and a mix
 * of -128, 127, -127, -1, 0 and 1 gives every sign pattern of a group of four. */
static void test_kernels(void) {
    static const uint32_t shapes[][3] = {{1, 1, 1},    {6, 64, 4},  {7, 65, 5},  {13, 129, 515},
                                         {5, 3, 1030}, {64, 200, 3}, {31, 17, 257}, {9, 80, 1},
                                         {7, 300, 1100}, {12, 529, 33}, {19, 16, 1024}, {4, 16, 193},
                                         {8, 33, 770},  {3, 15, 2},   {515, 530, 389}, {512, 528, 200},
                                         {64, 1, 32},   {65, 17, 33}, {100, 40, 250}, {63, 48, 64}};
    npk_gemm_ws ws = {0};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        uint32_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        size_t lda = k + 3, ldb = n + 5, ldc = n + 2;
        int8_t *A = malloc(m * lda), *B = malloc(k * ldb);
        int32_t *want = malloc(m * ldc * 4), *got = malloc(m * ldc * 4);
        for (int mode = 0; mode < 4; mode++) {
            fill(A, m * lda, mode);
            fill(B, k * ldb, mode == 2 ? 1 : mode);
            npk_ref_matmul_s8s32(m, n, k, A, lda, B, ldb, want, ldc, 0, 0);
            FOR_EACH_ISA(l) {
                /* the variant of each level: AVX-512 only with VNNI */
                CHECK_EQ(npk_gemm_active_isa(), l >= NPK_ISA_AVX512VNNI ? NPK_GEMM_AVX512
                                                : l >= NPK_ISA_AVX2      ? NPK_GEMM_AVX2
                                                                         : NPK_GEMM_PORTABLE);
                for (int th = 1; th >= 0; th--) { /* one call (1 thread), then the default split */
                    CHECK_EQ(npk_threads_set(th), 0);
                    memset(got, 0x5A, m * ldc * 4);
                    CHECK_EQ(npk_gemm_s8s32(l & 1 ? &ws : NULL, m, n, k, A, lda, B, ldb, got, ldc), 0);
                    int bad = 0;
                    for (uint32_t i = 0; i < m; i++)
                        for (uint32_t j = 0; j < n; j++) bad += got[i * ldc + j] != want[i * ldc + j];
                    for (uint32_t i = 0; i < m; i++) /* the padding between rows stays untouched */
                        for (uint32_t j = n; j < ldc && i + 1 < m; j++) bad += got[i * ldc + j] != 0x5A5A5A5A;
                    CHECK_EQ(bad, 0);
                }
            }
        }
        free(A), free(B), free(want), free(got);
    }
    CHECK_EQ(npk_isa_force(NPK_ISA_AUTO), 0);
    npk_gemm_ws_free(&ws);
}

static void check_matmul(uint32_t m, uint32_t n, uint32_t k, int relu, int mode) {
    int8_t *A = malloc((size_t)m * k), *B = malloc((size_t)k * n);
    int32_t *want = malloc((size_t)m * n * 4), *got = malloc((size_t)m * n * 4);
    fill(A, (size_t)m * k, mode);
    fill(B, (size_t)k * n, mode);
    npk_ref_matmul_s8s32(m, n, k, A, k, B, n, want, n, relu, 0);
    int rc = npk_v0_matmul(V, m, n, k, A, B, got, relu);
    CHECK_EQ(rc, 0);
    if (rc) fprintf(stderr, "matmul %ux%ux%u: %s\n", m, n, k, npk_errmsg());
    size_t bad = 0;
    for (size_t i = 0; i < (size_t)m * n; i++) bad += got[i] != want[i];
    CHECK_EQ(bad, 0);
    if (bad) fprintf(stderr, "matmul %ux%ux%u relu %d mode %d: %zu mismatches\n", m, n, k, relu, mode, bad);
    free(A), free(B), free(want), free(got);
}

static void test_matmul(void) {
    check_matmul(1, 1, 1, 0, 0);
    check_matmul(16, 16, 16, 0, 0);
    check_matmul(17, 33, 5, 1, 0);
    check_matmul(3, 100, 77, 0, 1); /* all -128: every product +16384 */
    check_matmul(9, 9, 300, 1, 2);  /* all 127 */
    for (int i = 0; i < 6; i++) check_matmul(1 + rnd() % 70, 1 + rnd() % 70, 1 + rnd() % 90, i & 1, 0);
    /* envelope limits */
    check_matmul(1024, 16, 1024, 0, 0);
    check_matmul(1, 1024, 1024, 1, 0);
    check_matmul(1024, 1024, 1, 0, 1);
    /* beyond: tiled over M and K by the driver (K sum and ReLU finished on the host) */
    check_matmul(1100, 20, 1030, 1, 0);
    CHECK(strstr(npk_v0_last_route(V), "descriptor") != NULL);
    /* through the device with each kernel variant forced: odd shapes across the
     * register tiles, column panels and K blocks (the model keeps its packing
     * buffers across descriptors, so sizes go up and down) */
    FOR_EACH_ISA(l) {
        if (l == NPK_ISA_AVX512) continue; /* the avx2 kernel again */
        for (int i = 0; i < 4; i++)
            check_matmul(1 + 2 * (rnd() % 40), 1 + 2 * (rnd() % 100), 1 + 2 * (rnd() % 300), i & 1, i == 3 ? 1 : 0);
    }
    CHECK_EQ(npk_isa_force(NPK_ISA_AUTO), 0);
}

/* The caller's operands in place (npk_port_map_host on the in-process port)
 * where their rows are the device's layout, staged otherwise, and staged when
 * a TENSOR_MEM window leaves the mapped range out; the results against the
 * reference each time, and the route names where each operand was. */
static void test_matmul_in_place(void) {
    check_matmul(64, 32, 48, 1, 0);
    CHECK(strstr(npk_v0_last_route(V), "A in place, B in place, C in place") != NULL);
    check_matmul(40, 20, 1030, 0, 3); /* K, N not multiples of 16: A, B staged; 4N = 80: C in place */
    CHECK(strstr(npk_v0_last_route(V), "A staged, B staged, C in place") != NULL);
    check_matmul(33, 48, 2048, 1, 3); /* split K: the first chunk's C in place, the second staged, summed */
    CHECK(strstr(npk_v0_last_route(V), "2 MATMUL_S8 descriptor(s); A in place, B in place, C in place") != NULL);
    /* a window over the low 4 GB of addresses (the staged buffers; the port maps
     * host buffers in the upper half of its arena, above it) */
    npk_v0 *saved = V;
    npk_v0_config vc;
    npk_v0_config_default(&vc);
    vc.tensor_mem_base = 0;
    vc.tensor_mem_len = 0xFFFFFFFFu;
    npk_port *p = NULL;
    CHECK_EQ(npk_port_open(&p, NULL, "v0", NULL), 0);
    CHECK_EQ(npk_v0_open(&V, p, &vc), 0);
    if (V && p) {
        check_matmul(64, 32, 48, 0, 0);
        CHECK(strstr(npk_v0_last_route(V), "A staged, B staged, C staged") != NULL);
        npk_v0_close(V);
    }
    npk_port_close(p);
    V = saved;
}

/* Matmul descriptor with strides wider than the rows, built by hand. */
static void test_strided_descriptor(void) {
    const uint32_t m = 5, n = 7, k = 9, sa = 48, sb = 32, sc = 64;
    uint64_t a, b, c;
    CHECK_EQ(npk_port_alloc(P, m * sa, 64, &a), 0);
    CHECK_EQ(npk_port_alloc(P, k * sb, 64, &b), 0);
    CHECK_EQ(npk_port_alloc(P, m * sc, 64, &c), 0);
    int8_t A[5 * 48], B[9 * 32];
    fill(A, sizeof A, 0);
    fill(B, sizeof B, 0);
    npk_port_mem_write(P, a, A, sizeof A);
    npk_port_mem_write(P, b, B, sizeof B);
    uint8_t guard[5 * 64];
    memset(guard, 0xEE, sizeof guard);
    npk_port_mem_write(P, c, guard, sizeof guard);
    npk_v0_desc d = npk_v0_desc_matmul(1, NPK_V0_F_SIGNED, m, n, k, a, sa, b, sb, c, sc, 1);
    CHECK_EQ(npk_v0_run(V, &d, 1), 0);
    int32_t want[5 * 7];
    npk_ref_matmul_s8s32(m, n, k, A, sa, B, sb, want, n, 1, 0);
    uint8_t got[5 * 64];
    npk_port_mem_read(P, c, got, sizeof got);
    for (uint32_t i = 0; i < m; i++) {
        for (uint32_t j = 0; j < n; j++) {
            const uint8_t *q = got + i * sc + 4 * j;
            CHECK_EQ((int32_t)(q[0] | q[1] << 8 | q[2] << 16 | (uint32_t)q[3] << 24), want[i * n + j]);
        }
        for (uint32_t x = 4 * n; x < sc; x++) CHECK_EQ(got[i * sc + x], 0xEE); /* gap untouched */
    }
    npk_port_free(P, a), npk_port_free(P, b), npk_port_free(P, c);
}

static char conv_route[256];

static void check_conv(npk_v0_conv c, int relu, int mode) {
    uint32_t oh, ow;
    CHECK_EQ(npk_v0_conv_out(&c, &oh, &ow), 0);
    size_t ni = (size_t)c.h * c.w * c.cin, nw = (size_t)c.ksize * c.ksize * c.cin * c.cout, no = (size_t)oh * ow * c.cout;
    int8_t *in = malloc(ni), *wt = malloc(nw), *want = malloc(no), *got = malloc(no);
    int32_t *w32 = malloc(no * 4), *g32 = malloc(no * 4);
    fill(in, ni, mode);
    fill(wt, nw, mode);
    npk_ref_conv rc = {c.h, c.w, c.cin, c.cout, c.ksize, c.ksize, c.stride_h, c.stride_w, c.pad_h, c.pad_w, c.dil};
    npk_ref_conv2d_s8(&rc, in, (size_t)c.w * c.cin, wt, c.cout, want, (size_t)ow * c.cout, relu, 0);
    int r = npk_v0_conv2d(V, &c, in, wt, got, relu);
    snprintf(conv_route, sizeof conv_route, "%s", npk_v0_last_route(V));
    CHECK_EQ(r, 0);
    if (r) fprintf(stderr, "conv: %s\n", npk_errmsg());
    size_t bad = 0;
    for (size_t i = 0; i < no; i++) bad += got[i] != want[i];
    CHECK_EQ(bad, 0);
    if (bad) fprintf(stderr, "conv %ux%ux%u->%u k%u s%u,%u p%u,%u d%u: %zu mismatches\n", c.h, c.w, c.cin, c.cout, c.ksize,
                     c.stride_h, c.stride_w, c.pad_h, c.pad_w, c.dil, bad);
    if (no <= 200000) {
        npk_ref_conv2d_s32(&rc, in, (size_t)c.w * c.cin, wt, c.cout, w32, (size_t)ow * c.cout, 0);
        CHECK_EQ(npk_v0_conv2d_s32(V, &c, in, wt, g32), 0);
        bad = 0;
        for (size_t i = 0; i < no; i++) bad += g32[i] != w32[i];
        CHECK_EQ(bad, 0);
    }
    free(in), free(wt), free(want), free(got), free(w32), free(g32);
}

static void test_conv(void) {
    check_conv((npk_v0_conv){8, 8, 3, 5, 1, 1, 1, 0, 0, 1}, 0, 0);
    check_conv((npk_v0_conv){8, 9, 4, 6, 3, 1, 1, 1, 1, 1}, 1, 0);
    check_conv((npk_v0_conv){11, 7, 17, 19, 3, 2, 2, 1, 1, 1}, 0, 0);
    check_conv((npk_v0_conv){12, 12, 3, 8, 5, 1, 1, 2, 2, 2}, 0, 0);
    check_conv((npk_v0_conv){12, 10, 2, 3, 5, 2, 1, 0, 3, 1}, 1, 0); /* asymmetric stride/pad */
    check_conv((npk_v0_conv){6, 6, 20, 4, 3, 1, 1, 1, 1, 1}, 0, 1);  /* saturation: all -128 */
    check_conv((npk_v0_conv){32, 32, 3, 6, 5, 1, 1, 0, 0, 1}, 1, 0); /* LeNet conv1 */
    for (int i = 0; i < 4; i++) {
        static const uint32_t ks[] = {1, 3, 5};
        npk_v0_conv c = {4 + rnd() % 12, 4 + rnd() % 12, 1 + rnd() % 20, 1 + rnd() % 20, ks[rnd() % 3],
                         1 + rnd() % 2, 1 + rnd() % 2, rnd() % 3, rnd() % 3, 1 + rnd() % 2};
        uint32_t oh, ow;
        if (npk_v0_conv_out(&c, &oh, &ow)) continue;
        check_conv(c, (int)(rnd() & 1), 0);
    }
    /* envelope limits */
    check_conv((npk_v0_conv){256, 256, 1, 2, 3, 1, 1, 1, 1, 1}, 0, 0);
    check_conv((npk_v0_conv){2, 2, 512, 512, 1, 1, 1, 0, 0, 1}, 0, 0);
    /* outside (7x7 kernel, stride 3): unsupported_op -> CPU fallback handler */
    uint64_t cpu0 = npk_v0_get_stats(V)->retired_cpu;
    check_conv((npk_v0_conv){16, 16, 3, 4, 7, 3, 3, 1, 1, 1}, 0, 0);
    CHECK_EQ(npk_v0_get_stats(V)->retired_cpu, cpu0 + 1);
    CHECK(strstr(conv_route, "fallback") != NULL);
}

static void check_relu(size_t n) {
    int8_t *in = malloc(n), *got = malloc(n), *want = malloc(n);
    fill(in, n, 0);
    npk_ref_relu_s8(1, (uint32_t)n, in, n, want, n, 0);
    CHECK_EQ(npk_v0_relu(V, in, got, n), 0);
    CHECK(!memcmp(got, want, n));
    /* in place */
    CHECK_EQ(npk_v0_relu(V, in, in, n), 0);
    CHECK(!memcmp(in, want, n));
    free(in), free(got), free(want);
}

static void check_pool(npk_v0_pool p, int relu) {
    uint32_t oh, ow;
    CHECK_EQ(npk_v0_pool_out(&p, &oh, &ow), 0);
    size_t ni = (size_t)p.h * p.w * p.c, no = (size_t)oh * ow * p.c;
    int8_t *in = malloc(ni), *want = malloc(no), *got = malloc(no);
    fill(in, ni, 0);
    npk_ref_pool rp = {p.h, p.w, p.c, p.win_h, p.win_w, p.stride, p.pad};
    npk_ref_maxpool_s8(&rp, in, (size_t)p.w * p.c, want, (size_t)ow * p.c, relu, 0);
    CHECK_EQ(npk_v0_maxpool(V, &p, in, got, relu), 0);
    CHECK(!memcmp(got, want, no));
    free(in), free(want), free(got);
}

static void test_relu_pool(void) {
    check_relu(1);
    check_relu(1023);
    check_relu(1024);
    check_relu(1025);
    check_relu(5000);
    check_pool((npk_v0_pool){8, 8, 16, 2, 2, 2, 0}, 0);
    check_pool((npk_v0_pool){7, 9, 3, 3, 3, 1, 0}, 0);
    check_pool((npk_v0_pool){9, 9, 17, 3, 3, 2, 1}, 0); /* padding counts as 0 */
    check_pool((npk_v0_pool){28, 28, 6, 2, 2, 2, 0}, 1);
    check_pool((npk_v0_pool){256, 256, 1, 2, 2, 2, 0}, 0);
    check_pool((npk_v0_pool){4, 4, 512, 3, 3, 1, 1}, 0);
    /* outside (4x4 window): CPU fallback */
    uint64_t cpu0 = npk_v0_get_stats(V)->retired_cpu;
    check_pool((npk_v0_pool){9, 9, 4, 4, 4, 2, 0}, 0);
    CHECK_EQ(npk_v0_get_stats(V)->retired_cpu, cpu0 + 1);
    /* a 2x3 window is neither 2x2 nor 3x3 (envelope "Pool window | 2x2 or
     * 3x3"): also the CPU fallback (this case used to run on the device) */
    check_pool((npk_v0_pool){6, 7, 5, 2, 3, 1, 0}, 1);
    CHECK_EQ(npk_v0_get_stats(V)->retired_cpu, cpu0 + 2);
}

/* Unsigned activations (signed_input clear): the device refuses, the CPU
 * fallback reads A as uint8. */
static void test_unsigned_fallback(void) {
    uint64_t a, b, c;
    npk_port_alloc(P, 64, 64, &a);
    npk_port_alloc(P, 64, 64, &b);
    npk_port_alloc(P, 64, 64, &c);
    int8_t A[16], B[64];
    fill(A, 16, 1); /* 0x80 = 128 unsigned */
    fill(B, 64, 0);
    npk_port_mem_write(P, a, A, 16);
    npk_port_mem_write(P, b, B, 64);
    npk_v0_desc d = npk_v0_desc_matmul(0, 0, 1, 4, 4, a, 16, b, 16, c, 16, 1);
    CHECK_EQ(npk_v0_run(V, &d, 1), 0);
    int32_t want[4];
    npk_ref_matmul_s8s32(1, 4, 4, A, 4, B, 16, want, 4, 0, 1);
    uint8_t got[16];
    npk_port_mem_read(P, c, got, 16);
    for (int j = 0; j < 4; j++)
        CHECK_EQ((int32_t)(got[4 * j] | got[4 * j + 1] << 8 | got[4 * j + 2] << 16 | (uint32_t)got[4 * j + 3] << 24),
                 want[j]);
    CHECK_EQ(want[0], 128 * (B[0] + B[16] + B[32] + B[48])); /* independent check of the unsigned reading */
    npk_port_free(P, a), npk_port_free(P, b), npk_port_free(P, c);
}

int main(void) {
    test_kernels();
    npk_v0_config vc;
    npk_v0_config_default(&vc);
    vc.cpu_exec = npk_v0_cpu_execute;
    if (npk_port_open(&P, NULL, "v0", NULL) || npk_v0_open(&V, P, &vc)) {
        fprintf(stderr, "open: %s\n", npk_errmsg());
        return 1;
    }
    test_matmul();
    test_matmul_in_place();
    test_strided_descriptor();
    test_conv();
    test_relu_pool();
    test_unsigned_fallback();
    npk_v0_close(V);
    npk_port_close(P);
    return CHECK_DONE();
}
