// SPDX-License-Identifier: MIT
/* The exact INT4 x BF16 GEMV kernel (src/base/q4_gemv.c) and the fast
 * double -> BF16 rounding, against independent references:
 * - every kernel variant the CPU has (portable C, AVX2, AVX-512) equals the
 *   exact accumulator fed one product at a time (npk_bf16_xacc_add_prod) on
 *   random data: narrow and wide exponent spans, subnormals, zeros, the
 *   largest exponents (overflow to infinity), infinities and NaNs in x, in the
 *   scales and in the old values, zero and subnormal scales, group sizes that
 *   are and are not multiples of the kernel's chunks, odd N and K; shapes
 *   large enough to be split over the worker pool (include/npukit/threads.h)
 *   at 1, 2 and 3 threads;
 * - npk_bf16_from_f64 equals the nearest-even choice between the two BF16
 *   neighbours of x, made with exact double comparisons. */
#include "check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npukit/error.h"
#include "npukit/numfmt.h"
#include "npukit/threads.h"

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 16);
}

/* A BF16 with a random sign and significand, exponent field in [lo, hi]. */
static uint16_t rbf(int lo, int hi) {
    unsigned e = (unsigned)(lo + (int)(rnd() % (unsigned)(hi - lo + 1)));
    return (uint16_t)((rnd() & 0x8000u) | e << 7 | (rnd() & 0x7fu));
}

/* mode 0: one binade band (the fast path); 1: wide spans; 2: any bits with
 * specials; 3: the largest exponents (overflow); 4: tiny (subnormal) values;
 * 5: chunks spanning more than 17 binades in a row that fits 128 bits (the
 * wide-chunk path), with zeros; 6: rows spanning more than 128 bits but
 * less than 192 (softmax weights down to subnormals), with zeros; 7: values
 * of two significant bits over seven binades and power-of-two scales near the
 * least normal, so that sums of few bits round at exact ties and to
 * subnormals. */
static uint16_t rx(int mode) {
    switch (mode) {
    case 0: return rbf(120, 130);
    case 1: return rnd() % 4 ? rbf(100, 150) : rbf(1, 254);
    case 2: {
        uint16_t v = (uint16_t)rnd();
        if ((v & 0x7f80) == 0x7f80 && rnd() % 8) v &= 0xbfff;
        if (rnd() % 16 == 0) v &= 0x807f;
        return v;
    }
    case 3: return rbf(240, 254);
    case 5: return rnd() % 8 ? rbf(95, 150) : 0;
    case 6: return rnd() % 8 ? rbf(1, 112) : rnd() % 2 ? 0 : (uint16_t)(rnd() & 0x807fu);
    case 7: return rnd() % 2 ? 0 : (uint16_t)((rnd() & 0x8000u) | (124u + rnd() % 7) << 7 | (rnd() % 4) << 5);
    default: return rnd() % 2 ? (uint16_t)(rnd() & 0x807fu) : rbf(1, 8);
    }
}

static float rscale(int mode) {
    uint32_t u = rnd() << 1 ^ rnd();
    if (mode == 7) u = (u & 0x80000000u) | (uint32_t)(1 + rnd() % 6) << 23;
    else if (mode < 2 || mode >= 5) u = (u & 0x807fffffu) | (uint32_t)(118 + rnd() % 16) << 23;
    else if (mode == 2) {
        if ((u & 0x7f800000u) == 0x7f800000u && rnd() % 8) u &= 0xbfffffffu;
        if (rnd() % 32 == 0) u &= 0x807fffffu; /* subnormal or zero */
    } else if (mode == 3) u = (u & 0x807fffffu) | (uint32_t)(200 + rnd() % 54) << 23;
    else u = (u & 0x807fffffu) | (uint32_t)(rnd() % 8) << 23;
    if (rnd() % 64 == 0) u &= 0x80000000u; /* a zero scale */
    float s;
    memcpy(&s, &u, sizeof s);
    return s;
}

static int same(uint16_t a, uint16_t b) { return a == b || (npk_bf16_isnan(a) && npk_bf16_isnan(b)); }

static unsigned failures;

/* ones: 1 = every weight 1 and no scales (a pccx row of ones, the GEMV of a sum: npk_bf16_sum's path),
 * 2 = no scales, weights as usual (not that path) */
static void gemv_case(unsigned N, unsigned K, unsigned G, int mode, int with_old, int ones) {
    unsigned GG = G && G < K ? G : K, ng = (K + GG - 1) / GG;
    int8_t *q = malloc((size_t)N * K);
    uint8_t *w4 = calloc(((size_t)N * K + 1) / 2, 1), *sb = malloc((size_t)N * ng * 4);
    float *s = malloc(sizeof *s * N * ng);
    uint16_t *x = malloc(sizeof *x * K), *old = malloc(sizeof *old * N), *want = malloc(sizeof *want * N),
             *got = malloc(sizeof *got * N);
    for (size_t i = 0; i < (size_t)N * K; i++) {
        q[i] = ones == 1 ? 1 : (int8_t)((int)(rnd() % 16) - 8);
        w4[i / 2] |= (uint8_t)((q[i] & 0xf) << (4 * (i & 1)));
    }
    for (size_t i = 0; i < (size_t)N * ng; i++) {
        s[i] = ones ? 1.0f : rscale(mode);
        uint32_t u;
        memcpy(&u, &s[i], 4);
        for (int b = 0; b < 4; b++) sb[4 * i + (size_t)b] = (uint8_t)(u >> (8 * b));
    }
    for (unsigned k = 0; k < K; k++) x[k] = rx(mode);
    if (mode == 0 && K > 16) /* a zero chunk and an exact cancellation */
        for (unsigned k = 8; k < 16; k++) x[k] = 0;
    for (unsigned n = 0; n < N; n++) old[n] = rx(mode);
    for (unsigned n = 0; n < N; n++) {
        npk_bf16_xacc a;
        npk_bf16_xacc_clear(&a);
        if (with_old) npk_bf16_xacc_add(&a, old[n]);
        for (unsigned k = 0; k < K; k++) npk_bf16_xacc_add_prod(&a, s[n * ng + k / GG], q[(size_t)n * K + k], x[k]);
        want[n] = npk_bf16_xacc_round(&a);
    }
    npk_q4_mat *m = NULL;
    npk_q4_ws *ws = npk_q4_ws_new();
    CHECK_EQ(npk_q4_mat_new(w4, ones ? NULL : sb, N, K, G, &m), 0);
    CHECK(ws != NULL);
    FOR_EACH_ISA(l) {
        if (!m || !ws || l == NPK_ISA_AVX512VNNI) continue; /* the avx512 kernel again */
        npk_q4_isa isa = npk_q4_isa_active();
        CHECK_EQ(isa, l >= NPK_ISA_AVX512 ? NPK_Q4_AVX512 : l >= NPK_ISA_AVX2 ? NPK_Q4_AVX2 : NPK_Q4_C);
        int big = (uint64_t)N * K >= (1u << 17); /* split over the pool from there */
        for (int th = 1; th <= (big ? 3 : 1); th++) {
            if (big) npk_threads_set(th);
            memset(got, 0x55, sizeof *got * N);
            CHECK_EQ(npk_q4_gemv(m, x, with_old ? old : NULL, got, ws), 0);
            for (unsigned n = 0; n < N; n++)
                if (!same(got[n], want[n]) && failures++ < 8)
                    fprintf(stderr, "%s N%u K%u G%u mode %d old %d threads %d: y[%u] = 0x%04x, per-product 0x%04x\n",
                            npk_q4_isa_name(isa), N, K, G, mode, with_old, th, n, got[n], want[n]);
        }
        npk_threads_set(0);
    }
    CHECK_EQ(npk_isa_force(NPK_ISA_AUTO), 0);
    npk_q4_mat_free(m);
    npk_q4_ws_free(ws);
    free(q);
    free(w4);
    free(sb);
    free(s);
    free(x);
    free(old);
    free(want);
    free(got);
}

static void test_gemv(void) {
    static const unsigned shapes[][3] = {{64, 64, 8}, {40, 172, 32}, {17, 61, 0}, {8, 100, 7}, {33, 288, 8},
                                         {16, 24, 16}, {5, 9, 8}, {1, 8, 0}, {31, 768, 64}, {20, 40, 40},
                                         {1000, 288, 8}, {611, 216, 0}};
    for (int rep = 0; rep < 3; rep++)
        for (int mode = 0; mode < 8; mode++)
            for (unsigned i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
                gemv_case(shapes[i][0], shapes[i][1], shapes[i][2], mode, (int)(i + (unsigned)rep) % 2, 0);
    static const unsigned ones_k[] = {1, 7, 64, 100, 300, 1000};
    for (int rep = 0; rep < 4; rep++)
        for (int mode = 0; mode < 8; mode++)
            for (unsigned i = 0; i < sizeof ones_k / sizeof ones_k[0]; i++)
                gemv_case(1, ones_k[i], 0, mode, rep % 2, 1 + rep / 2);
    CHECK_EQ(failures, 0);
    npk_isa host = npk_isa_host();
    printf("exact GEMV kernel: %s (c%s%s checked)\n", npk_q4_isa_name(npk_q4_isa_active()),
           host >= NPK_ISA_AVX2 ? ", avx2" : "", host >= NPK_ISA_AVX512 ? ", avx512" : "");
}

/* A hand case: 1.5 * (3 * 2 + -2 * 3) + 2^-133 (the least subnormal) = the subnormal. */
static void test_gemv_hand(void) {
    uint8_t w4[1] = {(uint8_t)(3 | (0xe << 4))}; /* w = 3, -2 */
    uint8_t sb[4] = {0, 0, 0xc0, 0x3f};          /* 1.5f */
    uint16_t x[2] = {0x4000, 0x4040}, old = 0x0001, y = 0;
    npk_q4_mat *m = NULL;
    npk_q4_ws *ws = npk_q4_ws_new();
    CHECK_EQ(npk_q4_mat_new(w4, sb, 1, 2, 0, &m), 0);
    CHECK_EQ(npk_q4_gemv(m, x, &old, &y, ws), 0);
    CHECK_EQ(y, 0x0001);
    CHECK_EQ(npk_q4_gemv(m, x, NULL, &y, ws), 0);
    CHECK_EQ(y, 0x0000); /* an exact zero is +0 */
    x[0] = 0x7f80;       /* inf * 3 - ... = inf */
    CHECK_EQ(npk_q4_gemv(m, x, NULL, &y, ws), 0);
    CHECK_EQ(y, 0x7f80);
    npk_q4_mat_free(m);
    npk_q4_ws_free(ws);
}

/* npk_q4_mat_new_poll: stop is asked every 256 rows (not at row 0); a stop keeps
 * nothing and returns 1; never stopping gives the matrix npk_q4_mat_new gives. */
static int stop_at_call(void *ctx) {
    int *c = ctx;
    return --c[0] == 0;
}
static void test_mat_poll(void) {
    enum { N = 600, K = 64 };
    static uint8_t w4[N * K / 2];
    uint16_t x[K], y0[N], y1[N];
    for (size_t i = 0; i < sizeof w4; i++) w4[i] = (uint8_t)rnd();
    for (unsigned k = 0; k < K; k++) x[k] = rbf(-4, 4);
    npk_q4_ws *ws = npk_q4_ws_new();
    npk_q4_mat *m = NULL, *p = NULL;
    int calls[1] = {1000};
    CHECK_EQ(npk_q4_mat_new(w4, NULL, N, K, 0, &m), 0);
    CHECK_EQ(npk_q4_mat_new_poll(w4, NULL, N, K, 0, stop_at_call, calls, &p), 0);
    CHECK_EQ(calls[0], 1000 - 2); /* rows 256 and 512 */
    CHECK_EQ(npk_q4_gemv(m, x, NULL, y0, ws), 0);
    CHECK_EQ(npk_q4_gemv(p, x, NULL, y1, ws), 0);
    CHECK(!memcmp(y0, y1, sizeof y0));
    npk_q4_mat_free(p);
    for (int at = 1; at <= 2; at++) {
        calls[0] = at;
        p = (npk_q4_mat *)1;
        CHECK_EQ(npk_q4_mat_new_poll(w4, NULL, N, K, 0, stop_at_call, calls, &p), 1);
        CHECK(p == NULL);
    }
    npk_q4_mat_free(m);
    npk_q4_ws_free(ws);
}

/* The BF16 nearest x (ties to even) from its two neighbours, by exact comparisons. */
static uint16_t ref_bf16(double x) {
    if (isnan(x)) return NPK_BF16_QNAN;
    uint16_t sg = signbit(x) ? 0x8000 : 0;
    double a = fabs(x);
    int e;
    frexp(a, &e);
    int q = e - 1 - 7 < -133 ? -133 : e - 1 - 7; /* unit of the BF16 significand at a's binade */
    double lo = floor(ldexp(a, -q)), hi = lo + 1, r = ldexp(a, -q);
    double n = r - lo < hi - r ? lo : r - lo > hi - r ? hi : (fmod(lo, 2) == 0 ? lo : hi);
    double v = ldexp(n, q);
    if (v >= 0x1p128) return sg | 0x7f80;
    float f = (float)v; /* exact: a BF16 value */
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(sg | u >> 16);
}

static void test_from_f64(void) {
    unsigned bad = 0;
    for (int i = 0; i < 400000; i++) {
        uint64_t u = (uint64_t)rnd() << 32 | rnd();
        if (i % 2) u = (u & 0x800fffffffffffffull) | (uint64_t)(1023 - 140 + rnd() % 290) << 52;
        if (i % 5 == 0) u &= ~((1ull << (rnd() % 46)) - 1); /* ties and exact values */
        if (i % 11 == 0) u = (u | 1ull << 44) & ~((1ull << 44) - 1); /* exact ties */
        double x;
        memcpy(&x, &u, 8);
        if (isinf(x)) continue;
        if (!same(npk_bf16_from_f64(x), ref_bf16(x)) && bad++ < 5)
            fprintf(stderr, "bf16(%a) = 0x%04x, nearest 0x%04x\n", x, npk_bf16_from_f64(x), ref_bf16(x));
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(npk_bf16_from_f64(0x1.ffp127), 0x7f80); /* the tie above the largest (0x1.fep127) rounds to inf */
    CHECK_EQ(npk_bf16_from_f64(0x1.fefffp127), 0x7f7f);
    CHECK_EQ(npk_bf16_from_f64(-0x1p-126), 0x8080);
    CHECK_EQ(npk_bf16_from_f64(0x1.01p0), 0x3f80); /* tie to even, down */
    CHECK_EQ(npk_bf16_from_f64(0x1.03p0), 0x3f82); /* tie to even, up */
}

/* npk_bf16_round_u128 against the exact accumulator holding the same value
 * (hi * 2^64 + lo) * 2^e, added as three integer pieces. */
static void test_round_u128(void) {
    unsigned bad = 0;
    for (int i = 0; i < 200000; i++) {
        uint64_t hi = (uint64_t)rnd() << 32 | rnd(), lo = (uint64_t)rnd() << 32 | rnd();
        int sh = (int)(rnd() % 130);
        if (sh >= 64) hi = 0, lo = sh >= 128 ? 0 : lo >> (sh - 64); /* every magnitude */
        else hi >>= sh;
        hi &= 0x7fffffffffffffffull;
        if (i % 3 == 0) lo &= ~((1ull << (rnd() % 64)) - 1); /* ties */
        int e = -133 + (int)(rnd() % 300) - (rnd() % 4 ? 0 : 150), neg = (int)(rnd() & 1);
        if (e < -259) e = -259; /* the accumulator takes 1.0f * S * 2^e from here */
        npk_bf16_xacc a;
        npk_bf16_xacc_clear(&a);
        float one = neg ? -1.0f : 1.0f;
        npk_bf16_xacc_add_scaled(&a, one, (int64_t)(lo & 0xffffffffu), e);
        npk_bf16_xacc_add_scaled(&a, one, (int64_t)(lo >> 32), e + 32);
        npk_bf16_xacc_add_scaled(&a, one, (int64_t)hi, e + 64);
        uint16_t want = npk_bf16_xacc_round(&a), got = npk_bf16_round_u128(neg, hi, lo, e);
        if (got != want && bad++ < 5)
            fprintf(stderr, "round_u128(%d, 0x%016llx, 0x%016llx, %d) = 0x%04x, accumulator 0x%04x\n", neg,
                    (unsigned long long)hi, (unsigned long long)lo, e, got, want);
    }
    CHECK_EQ(bad, 0);
}

/* npk_bf16_sum (the CVO reduction) against the accumulator fed term by term. */
static void test_sum(void) {
    unsigned bad = 0;
    uint16_t x[300];
    FOR_EACH_ISA(l)
    for (int i = 0; i < 3000; i++) {
        int mode = i % 5;
        size_t n = rnd() % 300;
        for (size_t k = 0; k < n; k++) x[k] = rx(mode);
        uint16_t first = rx(mode), sub = rx(mode);
        int use_first = (int)(rnd() & 1), use_sub = (int)(rnd() & 1);
        npk_bf16_xacc a;
        npk_bf16_xacc_clear(&a);
        if (use_first) npk_bf16_xacc_add(&a, first);
        for (size_t k = 0; k < n; k++) {
            npk_bf16_xacc_add(&a, x[k]);
            if (use_sub) npk_bf16_xacc_sub(&a, sub);
        }
        uint16_t want = npk_bf16_xacc_round(&a);
        uint16_t got = npk_bf16_sum(x, n, use_first ? &first : NULL, use_sub ? &sub : NULL);
        if (!same(got, want) && bad++ < 5)
            fprintf(stderr, "sum (level %d) mode %d n %zu: 0x%04x, accumulator 0x%04x\n", l, mode, n, got, want);
    }
    /* one term alone (its own path): every BF16 value, against the accumulator */
    FOR_EACH_ISA(l)
    for (uint32_t b = 0; b < 65536; b++) {
        const uint16_t t = (uint16_t)b;
        npk_bf16_xacc a;
        npk_bf16_xacc_clear(&a);
        npk_bf16_xacc_add(&a, t);
        const uint16_t want = npk_bf16_xacc_round(&a), got = npk_bf16_sum(&t, 1, NULL, NULL);
        if (!same(got, want) && bad++ < 5) fprintf(stderr, "sum (level %d) of 0x%04x alone: 0x%04x, accumulator 0x%04x\n", l, t, got, want);
    }
    CHECK_EQ(npk_isa_force(NPK_ISA_AUTO), 0);
    CHECK_EQ(bad, 0);
    uint16_t v[3] = {0x3f80, 0x4000, 0xbf80}, e = 0x3f80, one = 0x3f80; /* 1 + (1 - 1) + (2 - 1) + (-1 - 1) = 0 */
    CHECK_EQ(npk_bf16_sum(v, 3, &one, &e), 0x0000);
    CHECK_EQ(npk_bf16_sum(v, 3, NULL, NULL), 0x4000); /* 1 + 2 - 1 */
}

/* A float for the bulk conversions: any bits, or near a BF16 tie, or a zero, or a power of two. */
static float rf(void) {
    uint32_t u = rnd() << 1 ^ rnd();
    switch (rnd() % 6) {
    case 0: u = (u & 0xffff0000u) | 0x8000u | (rnd() % 3 == 0 ? 0 : rnd() % 2); break; /* a tie or next to one */
    case 1: u &= 0x80000000u; break;                                                 /* +-0 */
    case 2: u = (u & 0x807fffffu) | (uint32_t)(100 + rnd() % 40) << 23; break;
    case 3: u &= 0x807fffffu; break; /* subnormal */
    default: break;
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int same_f(float a, float b) { return !memcmp(&a, &b, sizeof a) || (a != a && b != b); }

/* The bulk conversions of src/base/bf16_conv.c against the element-wise ones, at every ISA level. */
static void test_bulk(void) {
    enum { NMAX = 70 };
    float x[NMAX], y[NMAX], z[NMAX];
    uint16_t b[NMAX];
    unsigned bad = 0;
    FOR_EACH_ISA(l)
    for (int it = 0; it < 4000; it++) {
        size_t n = 1 + rnd() % NMAX;
        int zmax = it % 7 == 0; /* scores whose largest is a zero, or all tiny */
        for (size_t i = 0; i < n; i++) x[i] = zmax ? (rnd() % 2 ? -ldexpf((float)(rnd() % 100), -140) : 0.0f) : rf();
        if (it % 11 == 0) x[rnd() % n] = NAN;
        npk_bf16_from_f32_n(b, x, n);
        for (size_t i = 0; i < n; i++) bad += b[i] != npk_bf16_from_f32(x[i]) && !(npk_bf16_isnan(b[i]) && x[i] != x[i]);
        npk_bf16_to_f32_n(y, b, n);
        for (size_t i = 0; i < n; i++) bad += !same_f(y[i], npk_bf16_to_f32(b[i]));
        npk_bf16_round_f32_n(y, x, n);
        for (size_t i = 0; i < n; i++) bad += !same_f(y[i], npk_bf16_round_f32(x[i]));
        double d = it % 3 ? 1.0 + rnd() % 1000 : ldexp(1.0 + rnd() % 7, (int)(rnd() % 300) - 150);
        /* every other round BF16 values divided by a BF16 value, as the decoder's softmax does (the
         * vector code divides those in float; a lane of x that is not BF16 ends that part) */
        float xd[NMAX];
        memcpy(xd, x, sizeof xd);
        if (it % 2) {
            d = (double)npk_bf16_round_f32((float)d);
            for (size_t i = 0; i < n; i++) {
                if (it % 4 == 1) xd[i] = ldexpf((float)(rnd() % 65536), -16 - (int)(rnd() % 12)); /* exponentials */
                if (rnd() % 16) xd[i] = npk_bf16_round_f32(xd[i]);
            }
        }
        memcpy(z, xd, sizeof z);
        npk_bf16_div_round_f32_n(z, z, n, d); /* in place, as the decoder does */
        for (size_t i = 0; i < n; i++) bad += !same_f(z[i], npk_bf16_to_f32(npk_bf16_from_f64((double)xd[i] / d)));
        float m = npk_bf16_round_f32(x[0]);
        for (size_t i = 1; i < n; i++)
            if (npk_bf16_round_f32(x[i]) > m) m = npk_bf16_round_f32(x[i]);
        float got = npk_bf16_max_rounded(x, n);
        if (!same_f(got, m) && bad++ < 5) fprintf(stderr, "max_rounded (level %d) n %zu: %g, want %g\n", l, n, got, m);
    }
    CHECK_EQ(npk_isa_force(NPK_ISA_AUTO), 0);
    CHECK_EQ(bad, 0);
}

int main(void) {
    test_bulk();
    test_round_u128();
    test_sum();
    test_gemv();
    test_gemv_hand();
    test_mat_poll();
    test_from_f64();
    return CHECK_DONE();
}
