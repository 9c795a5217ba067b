// SPDX-License-Identifier: MIT
/* The shared fp32 GEMM kernel (include/npukit/gemm.h, npk_gemm_f32, and
 * npk_gemm_bf16 for BF16 operands) against
 * the golden float GEMM of the CPU reference (npk_ref_gemm_run: the shell's
 * sequential fp32 accumulation), bit for bit, with every variant the host runs
 * forced in turn. The SIMD variants fuse the multiply and the add when every
 * product is exact (npk_gemm_f32_fused); the cases below put operands on both
 * sides of each of the predicate's bounds (significand width, overflow,
 * underflow, subnormal operands, Inf/NaN, signed zeros) and check both the
 * predicate's decision and the bits. */
#include "npukit/gemm.h"
#include "npukit/numfmt.h"
#include "ops/ref_float.h"

#include "check.h"

#include <math.h>
#include <stdlib.h>

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint32_t rnd(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

/* Every variant of the fp32 kernels the host runs: each instruction-set level
 * (include/npukit/cpu.h) but avx512vnni, whose fp32 variant is avx512's (the
 * AVX-512 fp32 kernel runs from level avx512: an AVX-512 host without VNNI
 * checks it too). */
#define FOR_EACH_VARIANT(l) FOR_EACH_ISA(l) if (l != NPK_ISA_AVX512VNNI)
static npk_gemm_ws WS;
static int fused_seen, plain_seen;

static size_t esize(int dt) { return dt == NPK_REF_FP8 ? 1 : 2; }

static void put(int dt, uint8_t *p, size_t i, double v) {
    if (dt == NPK_REF_FP8) p[i] = npk_fp8_from_f64(v);
    else {
        uint16_t h = dt == NPK_REF_BF16 ? npk_bf16_from_f64(v) : npk_fp16_from_f64(v);
        memcpy(p + 2 * i, &h, 2);
    }
}

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* npk_gemm_bf16 on the raw BF16 operands ra, rb (copied with padded rows,
 * the padding NaN) against the golden, on the variant forced now. */
static void check_bf16(uint32_t M, uint32_t N, uint32_t K, const uint8_t *ra, const uint8_t *rb, int fused,
                       const float *want, const char *what) {
    size_t lda = K + 5, ldb = N + 3, ldc = N + 1;
    uint16_t *A = malloc(2 * (M * lda + 1)), *B = malloc(2 * (K * ldb + 1));
    float *C = malloc(4 * (M * ldc + 1));
    for (size_t i = 0; i < M * lda; i++) A[i] = 0x7fc1;
    for (size_t i = 0; i < K * ldb; i++) B[i] = 0x7fc1;
    for (uint32_t i = 0; i < M; i++) memcpy(A + i * lda, ra + (size_t)i * K * 2, (size_t)K * 2);
    for (uint32_t k = 0; k < K; k++) memcpy(B + k * ldb, rb + (size_t)k * N * 2, (size_t)N * 2);
    CHECK_EQ(npk_gemm_bf16_fused(M, N, K, A, lda, B, ldb), fused);
    for (size_t i = 0; i < M * ldc; i++) C[i] = -7.0f;
    CHECK_EQ(npk_gemm_bf16(&WS, M, N, K, A, lda, B, ldb, C, ldc), 0);
    int bad = 0;
    for (uint32_t i = 0; i < M && !bad; i++)
        for (uint32_t j = 0; j < ldc && !bad; j++) {
            float got = C[i * ldc + j];
            bad = j < N ? bits(got) != bits(want[(size_t)i * N + j]) : got != -7.0f;
            if (bad)
                fprintf(stderr, "%s (npk_gemm_bf16, %s, %ux%ux%u): C[%u][%u] = %g\n", what,
                        npk_gemm_f32_kernel(), M, N, K, i, j, got);
        }
    CHECK(!bad);
    free(A), free(B), free(C);
}

/* C = A[M][K] B[K][N] of dtype dt (raw elements, row-major) through npk_gemm_f32
 * on the widened operands (lda = K + pad), every variant, against the golden;
 * want_fused: the predicate's expected answer (-1: not asserted). */
static void run(int dt, uint32_t M, uint32_t N, uint32_t K, const uint8_t *ra, const uint8_t *rb, int want_fused,
                const char *what) {
    size_t es = esize(dt), lda = K + (M & 1) * 3, ldb = N + (K & 1) * 5, ldc = N + 2;
    float *A = malloc(4 * (M * lda + 1)), *B = malloc(4 * (K * ldb + 1)), *C = malloc(4 * (M * ldc + 1)),
          *want = malloc(4 * ((size_t)M * N + 1));
    for (size_t i = 0; i < (size_t)M * lda; i++) A[i] = NAN; /* padding that a kernel must not read into C */
    for (size_t i = 0; i < (size_t)K * ldb; i++) B[i] = NAN;
    for (uint32_t i = 0; i < M; i++)
        for (uint32_t k = 0; k < K; k++) A[i * lda + k] = npk_ref_load_float(dt, ra + ((size_t)i * K + k) * es);
    for (uint32_t k = 0; k < K; k++)
        for (uint32_t j = 0; j < N; j++) B[k * ldb + j] = npk_ref_load_float(dt, rb + ((size_t)k * N + j) * es);
    npk_ref_gemm g = {dt, 0, 0, 0, M, N, K, ra, K * es, rb, N * es, NULL, (uint8_t *)want, 4 * (size_t)N, NULL,
                      0, 0, 1.0f, 0.0f, 0, 0, 0};
    npk_ref_gemm_run(&g);
    int fused = npk_gemm_f32_fused(M, N, K, A, lda, B, ldb);
    if (want_fused >= 0 && fused != want_fused) {
        fprintf(stderr, "%s: npk_gemm_f32_fused = %d, expected %d\n", what, fused, want_fused);
        CHECK_EQ(fused, want_fused);
    }
    fused ? fused_seen++ : plain_seen++;
    FOR_EACH_VARIANT(l) {
        for (size_t i = 0; i < (size_t)M * ldc; i++) C[i] = -7.0f;
        CHECK_EQ(npk_gemm_f32(l & 1 ? NULL : &WS, M, N, K, A, lda, B, ldb, C, ldc), 0);
        int bad = 0;
        for (uint32_t i = 0; i < M && !bad; i++)
            for (uint32_t j = 0; j < N && !bad; j++) {
                uint32_t got = bits(C[i * ldc + j]), exp = bits(want[(size_t)i * N + j]);
                if (got != exp) {
                    fprintf(stderr, "%s (%s, %ux%ux%u, fused %d): C[%u][%u] = 0x%08x (%g), golden 0x%08x (%g)\n", what,
                            npk_gemm_f32_kernel(), M, N, K, fused, i, j, got, C[i * ldc + j], exp,
                            want[(size_t)i * N + j]);
                    bad = 1;
                }
            }
        for (uint32_t i = 0; i < M && !bad; i++) /* the columns past N stay untouched */
            for (uint32_t j = N; j < ldc; j++) bad |= C[i * ldc + j] != -7.0f;
        CHECK(!bad);
        if (dt == NPK_REF_BF16) check_bf16(M, N, K, ra, rb, fused, want, what);
    }
    CHECK_EQ(npk_isa_force(NPK_ISA_AUTO), 0);
    free(A), free(B), free(C), free(want);
}

/* A sign, a power of two 2^e and an m-bit significand, at random. */
static double rval(int lo, int hi, int mbits) {
    double m = 1.0 + (double)(rnd() % (1u << (mbits - 1))) / (double)(1u << (mbits - 1));
    return (rnd() & 1 ? -1 : 1) * ldexp(m, lo + (int)(rnd() % (unsigned)(hi - lo + 1)));
}

/* Operands of dtype dt with exponents in [lo, hi] (a share `zeros` in 8 of
 * them +-0), into raw buffers. */
static void fill(int dt, uint8_t *p, size_t n, int lo, int hi, unsigned zeros) {
    int mb = dt == NPK_REF_BF16 ? 8 : dt == NPK_REF_FP16 ? 11 : 4;
    for (size_t i = 0; i < n; i++) put(dt, p, i, rnd() % 8 < zeros ? (rnd() & 1 ? -0.0 : 0.0) : rval(lo, hi, mb));
}

static double anybf16(void) {
    uint32_t u = (rnd() & 0xffff) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f != f ? (u >> 31 ? -INFINITY : INFINITY) : f;
}

static void test_random(void) {
    /* moderate ranges: every product exact, fused; shapes across the register
     * tiles (6 and 4 rows), the column panels (64 and 16) and the K blocks */
    for (int dt = NPK_REF_FP16; dt <= NPK_REF_FP8; dt++)
        for (int t = 0; t < 6; t++) {
            uint32_t M = 1 + rnd() % 14, N = 1 + rnd() % 150, K = 1 + rnd() % 300;
            uint8_t *a = malloc((size_t)M * K * 2 + 1), *b = malloc((size_t)K * N * 2 + 1);
            fill(dt, a, (size_t)M * K, -3, 3, t % 3);
            fill(dt, b, (size_t)K * N, -3, 3, t % 2);
            run(dt, M, N, K, a, b, 1, "random");
            free(a), free(b);
        }
    /* BF16 of any bit pattern but NaN (subnormals, infinities; NaN only as the
     * default NaN of Inf * 0 and Inf - Inf, one payload, so that the order of
     * an addition's operands cannot choose between two): the separate path */
    for (int t = 0; t < 4; t++) {
        uint32_t M = 1 + rnd() % 9, N = 1 + rnd() % 80, K = 1 + rnd() % 64;
        uint8_t *a = malloc((size_t)M * K * 2), *b = malloc((size_t)K * N * 2);
        for (size_t i = 0; i < (size_t)M * K; i++) put(NPK_REF_BF16, a, i, anybf16());
        for (size_t i = 0; i < (size_t)K * N; i++) put(NPK_REF_BF16, b, i, anybf16());
        run(NPK_REF_BF16, M, N, K, a, b, 0, "any bf16");
        free(a), free(b);
    }
}

/* Shapes across every block of the packed kernels (AVX2: 6 x 16 tiles, 144-row
 * A blocks, 2048-column B blocks, K blocks of at most 256; AVX-512: 64-column
 * panels, K blocks of 128): edges of each, K = 1, a single row or column. Fused
 * (moderate BF16) and separate (any BF16: subnormals, infinities, NaN from
 * Inf * 0 and Inf - Inf) at once. */
static void test_shapes(void) {
    static const uint32_t shapes[][3] = {{151, 37, 260}, {13, 2064, 19}, {7, 9, 1}, {1, 1, 1}, {1, 300, 513},
                                         {300, 1, 70},   {145, 17, 1},   {6, 16, 256}, {12, 32, 257}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int any = 0; any < 2; any++) {
            uint32_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            uint8_t *a = malloc((size_t)M * K * 2), *b = malloc((size_t)K * N * 2);
            if (any) {
                for (size_t i = 0; i < (size_t)M * K; i++) put(NPK_REF_BF16, a, i, anybf16());
                for (size_t i = 0; i < (size_t)K * N; i++) put(NPK_REF_BF16, b, i, anybf16());
            } else {
                fill(NPK_REF_BF16, a, (size_t)M * K, -3, 3, 1);
                fill(NPK_REF_BF16, b, (size_t)K * N, -3, 3, 1);
            }
            run(NPK_REF_BF16, M, N, K, a, b, any ? -1 : 1, any ? "shapes, any bf16" : "shapes");
            free(a), free(b);
        }
}

/* A[M][K], B[K][N] in BF16: every element drawn from its own list of values. */
static void bf16_case(uint32_t M, uint32_t N, uint32_t K, const double *av, size_t na, const double *bv, size_t nb,
                      int want_fused, const char *what) {
    uint8_t *a = malloc((size_t)M * K * 2), *b = malloc((size_t)K * N * 2);
    for (size_t i = 0; i < (size_t)M * K; i++) put(NPK_REF_BF16, a, i, av[rnd() % na]);
    for (size_t i = 0; i < (size_t)K * N; i++) put(NPK_REF_BF16, b, i, bv[rnd() % nb]);
    run(NPK_REF_BF16, M, N, K, a, b, want_fused, what);
    free(a), free(b);
}

#define LEN(x) (sizeof(x) / sizeof(x)[0])

static void test_adversarial(void) {
    const double t63 = ldexp(1, -63), h63 = ldexp(1, 63);
    /* near underflow: the smallest product is exactly 2^-126 (fused), then 2^-127 (not) */
    const double lo_a[] = {t63, -t63, 1.5 * t63, -1.75 * t63, 0.0, -0.0, 3 * t63};
    const double lo_b[] = {t63, -1.25 * t63, 0.0, 2 * t63, -0.0};
    bf16_case(7, 70, 90, lo_a, LEN(lo_a), lo_b, LEN(lo_b), 1, "min product 2^-126");
    const double lo_c[] = {t63 / 2, -t63, 1.5 * t63};
    bf16_case(7, 70, 90, lo_c, LEN(lo_c), lo_b, LEN(lo_b), 0, "min product 2^-127");
    /* products below the normal range, where rounding each one (2^-150 = half
     * the smallest subnormal rounds to 0 alone, to the odd neighbour's even one
     * inside a sum) differs from one rounding of the sum */
    const double sub[] = {ldexp(1, -75), 1.5 * ldexp(1, -75), ldexp(1, -74), -1.25 * ldexp(1, -76), ldexp(1, -70)};
    bf16_case(5, 33, 40, sub, LEN(sub), sub, LEN(sub), 0, "subnormal products");
    /* subnormal BF16 operands whose products are normal (fused) or not */
    const double sa[] = {ldexp(1, -130), -ldexp(3, -135), ldexp(1, -128)}, big[] = {ldexp(1, 10), -ldexp(1.5, 12)};
    bf16_case(6, 40, 30, sa, LEN(sa), big, LEN(big), 1, "subnormal operands, normal products");
    const double small[] = {ldexp(1, 2), -1.0};
    bf16_case(6, 40, 30, sa, LEN(sa), small, LEN(small), 0, "subnormal operands, subnormal products");
    /* near overflow: the largest product 1.875 * 2^126 (fused): sums overflow to
     * +-Inf, then stay there; then products of 2^127 and more (not fused) */
    const double hi_a[] = {1.5 * h63, -1.5 * h63, h63, 0.0}, hi_b[] = {1.25 * h63, h63, -h63};
    bf16_case(6, 64, 200, hi_a, LEN(hi_a), hi_b, LEN(hi_b), 1, "max product < 2^127");
    const double pos_a[] = {1.5 * h63, h63}, pos_b[] = {1.25 * h63};
    bf16_case(3, 20, 12, pos_a, LEN(pos_a), pos_b, LEN(pos_b), 1, "sums overflow to +Inf");
    const double hi_c[] = {2 * h63, -1.5 * h63};
    bf16_case(6, 64, 100, hi_c, LEN(hi_c), hi_b, LEN(hi_b), 0, "max product 2^127");
    /* signed zeros: products -0 and +0 on a +0 start, sums cancelling to 0 */
    const double z_a[] = {0.0, -0.0}, z_b[] = {-1.0, 1.0, -0.0, 3.0};
    bf16_case(4, 50, 20, z_a, LEN(z_a), z_b, LEN(z_b), 1, "zero A");
    const double c_a[] = {1.0, -1.0, -0.0}, c_b[] = {2.0, -2.0, -0.0, 0.5};
    bf16_case(9, 70, 2, c_a, LEN(c_a), c_b, LEN(c_b), 1, "cancelling sums");
    /* an all-zero operand fuses whatever the other's (finite) range */
    const double wild[] = {ldexp(1, 120), ldexp(1, -133), -ldexp(1.5, -100)};
    bf16_case(5, 20, 9, z_a, LEN(z_a), wild, LEN(wild), 1, "zero A, wild B");
    /* Inf and NaN operands: the separate path, and their propagation */
    /* (one NaN payload per case: B's NaN, or the default NaN of Inf * 0) */
    const double inf_a[] = {INFINITY, 1.0, -2.0, 0.0}, nan_b[] = {NAN, 1.0, -1.0};
    bf16_case(5, 30, 7, inf_a, LEN(inf_a), c_b, LEN(c_b), 0, "Inf in A");
    bf16_case(5, 30, 7, c_a, LEN(c_a), nan_b, LEN(nan_b), 0, "NaN in B");
    const double ninf[] = {-INFINITY, 1.0};
    bf16_case(3, 17, 5, ninf, LEN(ninf), z_b, LEN(z_b), 0, "-Inf times zeros");
}

/* npk_gemm_f32 of packed fp32 A[M][K], B[K][N] in every variant against a loop
 * with one rounded multiply and one rounded add per step. */
static void check_seq(uint32_t M, uint32_t N, uint32_t K, const float *A, const float *B) {
    float *C = malloc(4 * (size_t)M * N), *want = malloc(4 * (size_t)M * N);
    for (uint32_t i = 0; i < M; i++)
        for (uint32_t j = 0; j < N; j++) {
            float acc = 0.0f;
            for (uint32_t k = 0; k < K; k++) {
                volatile float p = A[(size_t)i * K + k] * B[(size_t)k * N + j]; /* rounded, never fused */
                acc = acc + p;
            }
            want[(size_t)i * N + j] = acc;
        }
    FOR_EACH_VARIANT(l) {
        CHECK_EQ(npk_gemm_f32(&WS, M, N, K, A, K, B, N, C, N), 0);
        CHECK(!memcmp(C, want, 4 * (size_t)M * N));
    }
    CHECK_EQ(npk_isa_force(NPK_ISA_AUTO), 0);
    free(C), free(want);
}

/* fp32 operands of any significand width (npk_gemm_f32's own contract, not a
 * shell dtype): against a loop with one rounded multiply and add per step. */
static void test_f32_widths(void) {
    static const int widths[][3] = {{12, 12, 1}, {16, 8, 1}, {8, 16, 1}, {13, 12, 0}, {24, 24, 0}, {4, 20, 1}};
    for (size_t w = 0; w < LEN(widths); w++) {
        uint32_t M = 1 + rnd() % 13, N = 1 + rnd() % 100, K = 1 + rnd() % 150;
        float *A = malloc(4 * (size_t)M * K), *B = malloc(4 * (size_t)K * N);
        for (size_t i = 0; i < (size_t)M * K; i++) A[i] = (float)rval(-4, 4, widths[w][0]);
        for (size_t i = 0; i < (size_t)K * N; i++) B[i] = (float)rval(-4, 4, widths[w][1]);
        /* the widest significand in each operand, so the predicate sees the width */
        A[0] = (float)ldexp(2.0 - ldexp(1, 1 - widths[w][0]), 0);
        B[0] = (float)ldexp(2.0 - ldexp(1, 1 - widths[w][1]), 0);
        CHECK_EQ(npk_gemm_f32_fused(M, N, K, A, K, B, N), widths[w][2]);
        check_seq(M, N, K, A, B);
        free(A), free(B);
    }
}

/* Blocks of one GEMM on both sides of the predicate (the AVX2 kernel decides
 * per pair of packed blocks: 6-row tiles in blocks of at most 144 rows, K
 * blocks of at most 256): A's rows below 150 and B's rows below k = 260 carry
 * 8-bit significands (their products exact), the others full 24-bit ones (a
 * fused product there changes bits), against a loop with one rounded multiply
 * and add per step; the whole GEMM's predicate says no. */
static void test_mixed_blocks(void) {
    const uint32_t M = 300, N = 40, K = 600;
    float *A = malloc(4 * (size_t)M * K), *B = malloc(4 * (size_t)K * N);
    for (uint32_t i = 0; i < M; i++)
        for (uint32_t k = 0; k < K; k++) A[(size_t)i * K + k] = (float)rval(-4, 4, i < 150 ? 8 : 24);
    for (uint32_t k = 0; k < K; k++)
        for (uint32_t j = 0; j < N; j++) B[(size_t)k * N + j] = (float)rval(-4, 4, k < 260 ? 8 : 24);
    CHECK_EQ(npk_gemm_f32_fused(M, N, K, A, K, B, N), 0);
    CHECK_EQ(npk_gemm_f32_fused(150, N, 260, A, K, B, N), 1);
    check_seq(M, N, K, A, B);
    free(A), free(B);
}

int main(void) {
    test_random();
    test_adversarial();
    test_shapes();
    test_f32_widths();
    test_mixed_blocks();
    /* an empty product has nothing to check; K = 0 gives zeros */
    CHECK_EQ(npk_gemm_f32_fused(0, 5, 5, NULL, 5, NULL, 5), 1);
    CHECK_EQ(npk_gemm_bf16_fused(5, 5, 0, NULL, 5, NULL, 5), 1);
    float z[6] = {5, 5, 5, 5, 5, 5};
    CHECK_EQ(npk_gemm_bf16(&WS, 2, 3, 0, NULL, 1, NULL, 3, z, 3), 0);
    for (int i = 0; i < 6; i++) CHECK(z[i] == 0.0f && !signbit(z[i]));
    CHECK(fused_seen > 0 && plain_seen > 0);
    npk_gemm_ws_free(&WS);
    fprintf(stderr, "%d fused and %d separate configurations, variants up to %s\n", fused_seen, plain_seen,
            npk_gemm_f32_kernel());
    return CHECK_DONE();
}
