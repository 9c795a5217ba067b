// SPDX-License-Identifier: MIT
/* The fast exact BF16 exponential of pccx's CVO EXP (include/npukit/numfmt.h).
 *
 * exp(v) in binary32 has a small error (glibc's expf: under 1 ulp; the AVX2
 * polynomial below: under 2 ulps), and rounding it to BF16 (RNE at bit 16)
 * gives the exact BF16 of exp(v) unless the binary32 result lies within a few
 * ulps of a BF16 tie (its low 16 bits near 0x8000): those, and results near
 * the subnormal range, are left to the caller's exact double path. A lane is
 * taken only when v = x - sub is exactly a binary32 and -87 < v < 80. The
 * margin is 64 ulps, far above either error bound, so both variants give the
 * same bytes as the exact path on every lane they take. npk_bf16_exp_n (the
 * CVO's EXP) computes the other lanes in double in the same pass. */
#include "npukit/cpu.h"
#include "npukit/numfmt.h"

#include <math.h>
#include <string.h>

#ifdef NPK_ISA_X86
#include <immintrin.h>
#endif

static int exp_one(float xf, float ef, uint16_t *out) {
    double v = (double)xf - (double)ef;
    float vf = (float)v;
    if ((double)vf != v || !(vf > -87.0f && vf < 80.0f)) return 0;
    float r = expf(vf);
    uint32_t u;
    memcpy(&u, &r, sizeof u);
    uint32_t low = u & 0xffffu;
    if (u < 0x01000000u || (low > 0x8000u - 64 && low < 0x8000u + 64)) return 0;
    *out = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return 1;
}

/* The golden of one element: exp in double of x - sub (sub: ed, when given), one BF16 rounding. */
static uint16_t exp_exact(uint16_t x, const uint16_t *sub, double ed) {
    uint32_t u = (uint32_t)x << 16;
    float xf;
    memcpy(&xf, &u, 4);
    double v = xf;
    if (sub) v -= ed;
    return npk_bf16_from_f64(exp(v));
}

#ifdef NPK_ISA_X86
/* exp8v's integer constants, read through a pointer the compiler cannot see through (exp_k): as
 * memory operands, where it would otherwise build each one anew in the loop (three instructions) */
typedef struct exp_consts {
    int32_t c127[8], c64[8], cff80[8], c8000[8], ctiny[8], c7fff[8], cone[8];
} exp_consts;
#define C8(v) {v, v, v, v, v, v, v, v}
static const exp_consts exp_k_ __attribute__((aligned(32))) = {C8(127), C8(64), C8(0xff80), C8(0x8000), C8(0x01000000),
                                                              C8(0x7fff), C8(1)};
#undef C8
static inline const exp_consts *exp_k(void) {
    const exp_consts *k = &exp_k_;
    __asm__("" : "+r"(k));
    return k;
}
#define LD8(c) _mm256_load_si256((const __m256i *)k->c)

/* Eight lanes: v = x - e as exp_one takes it (sub: nev = -e; else v = x), exp(v) = 2^n * p(r),
 * n = round(v / ln 2), r = v - n ln 2 (ln 2 in two parts, FMAs), p Cephes' degree-7 polynomial
 * (relative error below 2^-23). Returns the lanes taken (bit l: lane l), their BF16 results in *out
 * (the others 0). v = x - e is taken when that difference in double is a binary32: when its binary32
 * rounding error, found by Knuth's TwoSum, is zero, or when |x| < 2^-60 |e| (the difference in
 * double is -e; a few lanes between those two cases go to the exact path, which exp_one takes). */
NPK_TARGET_AVX2 static inline __attribute__((always_inline)) unsigned exp8v(const uint16_t *x, const int sub,
                                                                             __m256 nev, const exp_consts *k,
                                                                             __m128i *out) {
    __m256 xf = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)x)), 16));
    __m256 v = xf, okm = _mm256_and_ps(_mm256_cmp_ps(v, _mm256_set1_ps(-87.0f), _CMP_GT_OQ),
                                         _mm256_cmp_ps(v, _mm256_set1_ps(80.0f), _CMP_LT_OQ));
    if (sub) {
        v = _mm256_add_ps(xf, nev);
        __m256 bb = _mm256_sub_ps(v, xf); /* TwoSum(x, -e): err = (x - (v - bb)) + (-e - bb) */
        __m256 err = _mm256_add_ps(_mm256_sub_ps(xf, _mm256_sub_ps(v, bb)), _mm256_sub_ps(nev, bb));
        /* exact, or |x| < 2^-60 |e|: then x - e in double is -e, a binary32, and v = -e too */
        __m256 tinyx = _mm256_cmp_ps(_mm256_mul_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), xf), _mm256_set1_ps(0x1p60f)),
                                     _mm256_andnot_ps(_mm256_set1_ps(-0.0f), nev), _CMP_LT_OQ);
        okm = _mm256_and_ps(_mm256_or_ps(_mm256_cmp_ps(err, _mm256_setzero_ps(), _CMP_EQ_OQ), tinyx),
                            _mm256_and_ps(_mm256_cmp_ps(v, _mm256_set1_ps(-87.0f), _CMP_GT_OQ),
                                          _mm256_cmp_ps(v, _mm256_set1_ps(80.0f), _CMP_LT_OQ)));
    }
    __m256 vs = _mm256_and_ps(v, okm); /* other lanes: 0, harmless */
    __m256 n = _mm256_round_ps(_mm256_mul_ps(vs, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), vs);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i pw = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), LD8(c127)), 23);
    __m256i u = _mm256_castps_si256(_mm256_mul_ps(p, _mm256_castsi256_ps(pw)));
    /* near a tie: low 16 bits in [0x8000 - 64, 0x8000 + 64) */
    __m256i neart = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_add_epi32(u, LD8(c64)), LD8(cff80)), LD8(c8000));
    __m256i tiny = _mm256_cmpgt_epi32(LD8(ctiny), u); /* u >= 0: exp is positive */
    __m256i take = _mm256_andnot_si256(_mm256_or_si256(neart, tiny), _mm256_castps_si256(okm));
    __m256i b = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, LD8(c7fff)), _mm256_and_si256(_mm256_srli_epi32(u, 16), LD8(cone))),
                                  16);
    b = _mm256_and_si256(b, take);
    *out = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(take));
}

/* npk_bf16_exp_n on AVX2 for one kind (sub or not): eight lanes at a time, the lanes exp8v does
 * not take by exp_exact (read before they are written: y may be x); the last n % 8 zero-padded to
 * eight. */
NPK_TARGET_AVX2 static inline __attribute__((always_inline)) void exp_n_kind(const uint16_t *x, size_t n, const int s,
                                                                              const uint16_t *sub, float ef, uint16_t *y) {
    const __m256 nev = _mm256_set1_ps(-ef);
    const double ed = ef;
    const exp_consts *k = exp_k();
    for (size_t i = 0; i < n; i += 8) {
        __m128i b;
        if (n - i >= 8) {
            unsigned t = exp8v(x + i, s, nev, k, &b);
            if (t == 0xffu) {
                _mm_storeu_si128((__m128i *)(y + i), b);
                continue;
            }
            uint16_t r[8];
            _mm_storeu_si128((__m128i *)r, b);
            for (int l = 0; l < 8; l++)
                if (!(t >> l & 1u)) r[l] = exp_exact(x[i + l], sub, ed);
            memcpy(y + i, r, sizeof r);
            continue;
        }
        uint16_t px[8] = {0}, r[8];
        const size_t m = n - i;
        memcpy(px, x + i, m * sizeof *px);
        unsigned t = exp8v(px, s, nev, k, &b);
        _mm_storeu_si128((__m128i *)r, b);
        for (size_t l = 0; l < m; l++)
            if (!(t >> l & 1u)) r[l] = exp_exact(px[l], sub, ed);
        memcpy(y + i, r, m * sizeof *r);
    }
}

NPK_TARGET_AVX2 static void exp_n_avx2(const uint16_t *x, size_t n, const uint16_t *sub, float ef, uint16_t *y) {
    if (sub) exp_n_kind(x, n, 1, sub, ef, y);
    else exp_n_kind(x, n, 0, NULL, ef, y);
}
#endif

void npk_bf16_exp_n(const uint16_t *x, size_t n, const uint16_t *sub, uint16_t *y) {
    float ef = 0.0f;
    if (sub) {
        uint32_t u = (uint32_t)*sub << 16;
        memcpy(&ef, &u, 4);
    }
#ifdef NPK_ISA_X86
    if (npk_isa_active() >= NPK_ISA_AVX2) {
        exp_n_avx2(x, n, sub, ef, y);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)x[i] << 16;
        float xf;
        uint16_t r;
        memcpy(&xf, &u, 4);
        y[i] = exp_one(xf, ef, &r) ? r : exp_exact(x[i], sub, ef);
    }
}

#ifdef NPK_ISA_X86
/* npk_bf16_exp_fast's whole eights on AVX2 (exp8v, the lanes of npk_bf16_exp_n); returns the count taken. */
NPK_TARGET_AVX2 static size_t exp_fast_avx2(const uint16_t *x, size_t n, int sub, float ef, uint16_t *y, uint8_t *taken) {
    const __m256 nev = _mm256_set1_ps(-ef);
    const exp_consts *k = exp_k();
    size_t got = 0;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        __m128i b;
        uint64_t t = sub ? exp8v(x + i, 1, nev, k, &b) : exp8v(x + i, 0, nev, k, &b); /* bit l: lane l taken */
        _mm_storeu_si128((__m128i *)(y + i), b);
        t = (t | t << 28) & 0x0000000f0000000full; /* each bit to the low bit of its byte */
        t = (t | t << 14) & 0x0003000300030003ull;
        t = (t | t << 7) & 0x0101010101010101ull;
        memcpy(taken + i, &t, 8); /* little-endian: byte l = lane l */
        got += (size_t)((t * 0x0101010101010101ull) >> 56); /* the bytes' sum (no popcount library call) */
    }
    return got;
}
#endif

size_t npk_bf16_exp_fast(const uint16_t *x, size_t n, const uint16_t *sub, uint16_t *y, uint8_t *taken) {
    float ef = 0.0f;
    if (sub) {
        uint32_t u = (uint32_t)*sub << 16;
        memcpy(&ef, &u, 4);
    }
    size_t i = 0, got = 0;
#ifdef NPK_ISA_X86
    if (npk_isa_active() >= NPK_ISA_AVX2) {
        got = exp_fast_avx2(x, n, sub != NULL, ef, y, taken);
        i = n & ~(size_t)7;
    }
#endif
    for (; i < n; i++) {
        uint32_t u = (uint32_t)x[i] << 16;
        float xf;
        memcpy(&xf, &u, 4);
        taken[i] = (uint8_t)exp_one(xf, ef, &y[i]);
        got += taken[i];
    }
    return got;
}
