// SPDX-License-Identifier: MIT
/* Bulk BF16 conversions (include/npukit/numfmt.h): the element-wise inline
 * conversions of numfmt.h over arrays, eight (or four doubles) at a time on
 * AVX2, the same bits as the scalar functions on every element (the scalar
 * code does the remainders and the rare cases). The pccx driver's L2
 * transfers and the pccx decoder's host steps convert every element they
 * move with these. */
#include "npukit/cpu.h"
#include "npukit/numfmt.h"

#include <string.h>

#ifdef NPK_ISA_X86
#include <immintrin.h>

/* npk_bf16_from_f32 on eight lanes: RNE on the dropped 16 bits, NaN to the quiet NaN. */
NPK_TARGET_AVX2 static inline __m128i from_f32_8(__m256i u) {
    const __m256i inf = _mm256_set1_epi32(0x7f800000), abs = _mm256_set1_epi32(0x7fffffff);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)),
                                 _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)));
    r = _mm256_srli_epi32(r, 16);
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32((int)NPK_BF16_QNAN), nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

NPK_TARGET_AVX2 static size_t from_f32_avx2(uint16_t *y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), from_f32_8(_mm256_loadu_si256((const __m256i *)(x + i))));
    return i;
}

NPK_TARGET_AVX2 static size_t to_f32_avx2(float *y, const uint16_t *x, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i v = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + i))), 16);
        _mm256_storeu_si256((__m256i *)(y + i), v);
    }
    return i;
}

NPK_TARGET_AVX2 static size_t round_f32_avx2(float *y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i b = from_f32_8(_mm256_loadu_si256((const __m256i *)(x + i)));
        _mm256_storeu_si256((__m256i *)(y + i), _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
    }
    return i;
}

/* The largest npk_bf16_round_f32(x[i]), i < n (n >= 8), as *m, eight lanes at once; 0 when the
 * sequential search could end elsewhere (a NaN, or a largest value of zero: which zero, +0 or -0,
 * it keeps depends on the order), then the caller searches one by one. Rounding to BF16 is
 * monotonic (x <= y gives round(x) <= round(y)), so without NaNs the largest rounded value is
 * the largest value rounded: the lanes keep the raw maxima and one value is rounded at the end. */
NPK_TARGET_AVX2 static int max_rounded_avx2(const float *x, size_t n, float *m) {
    __m256 mx = _mm256_loadu_ps(x);
    __m256 nan = _mm256_cmp_ps(mx, mx, _CMP_UNORD_Q);
    size_t i = 8;
    for (; i + 8 <= n; i += 8) {
        __m256 r = _mm256_loadu_ps(x + i);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(r, r, _CMP_UNORD_Q));
        mx = _mm256_max_ps(mx, r);
    }
    float l[8];
    _mm256_storeu_ps(l, mx);
    float best = l[0];
    for (int k = 1; k < 8; k++)
        if (l[k] > best) best = l[k];
    for (; i < n; i++) {
        if (x[i] != x[i]) return 0;
        if (x[i] > best) best = x[i];
    }
    best = npk_bf16_round_f32(best);
    if (_mm256_movemask_ps(nan) || best == 0.0f) return 0;
    *m = best;
    return 1;
}

/* div_round_avx2's lanes when x[i] and the divisor df are BF16 values (d normal): the float
 * quotient, rounded once to BF16, is npk_bf16_from_f64((double)x[i] / d). Why: with x = mx 2^a
 * and d = md 2^b (mx, md < 2^8 integers), a quotient q that is not itself a BF16 rounding tie
 * T = mt 2^c (mt < 2^9) lies at least 2^-18 q away from every tie (|x - T d| is a nonzero
 * multiple of 2^min(a, b + c)), and rounding q to float or to double moves it by at most 2^-24 q
 * towards the nearest representable value, which never crosses a tie (ties are floats): so
 * RNE to BF16 of float(q), of double(q) and of q are the same. Quotients that are subnormal,
 * infinite, NaN or round past the largest BF16 end the vector part (the caller's double lanes
 * and scalar code take them), as does a lane of x that is not a BF16 value. Exact zeros round
 * to themselves here. Returns the count done, a multiple of 8. */
NPK_TARGET_AVX2 static size_t div_bf16_avx2(float *y, const float *x, size_t n, float df) {
    const __m256 dv = _mm256_set1_ps(df);
    const __m256i low = _mm256_set1_epi32(0xffff), expo = _mm256_set1_epi32(0x7f800000),
                  mabs = _mm256_set1_epi32(0x7fffffff), rnd = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1),
                  top = _mm256_set1_epi32(0x7f7f7fff), zero = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i xv = _mm256_loadu_si256((const __m256i *)(x + i));
        const __m256i u = _mm256_castps_si256(_mm256_div_ps(_mm256_castsi256_ps(xv), dv));
        const __m256i mag = _mm256_and_si256(u, mabs), e = _mm256_and_si256(u, expo);
        /* bad: x not BF16, a subnormal quotient (exponent 0, not zero), or one at or above the
         * largest float that rounds to a finite BF16 (0x7f7f7fff: inf, NaN and rounding overflow) */
        __m256i bad = _mm256_cmpgt_epi32(_mm256_and_si256(xv, low), zero);
        bad = _mm256_or_si256(bad, _mm256_andnot_si256(_mm256_cmpeq_epi32(mag, zero), _mm256_cmpeq_epi32(e, zero)));
        bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(mag, top));
        if (!_mm256_testz_si256(bad, bad)) break;
        const __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, rnd), _mm256_and_si256(_mm256_srli_epi32(u, 16), one));
        _mm256_storeu_si256((__m256i *)(y + i), _mm256_slli_epi32(_mm256_srli_epi32(r, 16), 16));
    }
    return i;
}

/* npk_bf16_from_f64(x[i] / d) as floats, four lanes at a time where every
 * quotient has a normal finite BF16 result (else those four one at a time,
 * before the next four are read: y may be x). */
NPK_TARGET_AVX2 static size_t div_round_avx2(float *y, const float *x, size_t n, double d) {
    size_t i = 0;
    /* A divisor with a BF16 value: eight lanes at a time in float where x holds BF16 values too
     * (div_bf16_avx2), the rest (from the first lane that does not) in double below. */
    const float df = (float)d;
    uint32_t db;
    memcpy(&db, &df, sizeof db);
    if ((double)df == d && !(db & 0xffffu) && ((db >> 23) & 0xffu) - 1u < 0xfeu) i = div_bf16_avx2(y, x, n, df);
    const __m256d dv = _mm256_set1_pd(d);
    const __m256i mabs = _mm256_set1_epi64x(0x7fffffffffffffffll), lo = _mm256_set1_epi64x((long long)(1023 - 126) << 52),
                  hi = _mm256_set1_epi64x(0x7ff0000000000000ll), half = _mm256_set1_epi64x(0xfffffffffffll),
                  one = _mm256_set1_epi64x(1), bias = _mm256_set1_epi64x((long long)896 << 7),
                  ovf = _mm256_set1_epi64x(((long long)(896 + 255) << 7) - 1);
    for (; i + 4 <= n; i += 4) {
        __m256d q = _mm256_div_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), dv);
        __m256i u = _mm256_castpd_si256(q), mag = _mm256_and_si256(u, mabs);
        /* normal: lo <= mag < hi (signed compares: mag >= 0) */
        __m256i bad = _mm256_or_si256(_mm256_cmpgt_epi64(lo, mag), _mm256_cmpgt_epi64(mag, _mm256_sub_epi64(hi, one)));
        __m256i r = _mm256_srli_epi64(
            _mm256_add_epi64(_mm256_add_epi64(mag, half), _mm256_and_si256(_mm256_srli_epi64(mag, 45), one)), 45);
        bad = _mm256_or_si256(bad, _mm256_cmpgt_epi64(r, ovf)); /* overflow: the scalar code */
        if (!_mm256_testz_si256(bad, bad)) {
            for (size_t l = i; l < i + 4; l++) y[l] = npk_bf16_to_f32(npk_bf16_from_f64((double)x[l] / d));
            continue;
        }
        __m256i b = _mm256_or_si256(_mm256_sub_epi64(r, bias), _mm256_and_si256(_mm256_srli_epi64(u, 48),
                                                                                _mm256_set1_epi64x(0x8000)));
        /* BF16 bits to float bits in the low half of each lane, then the four lanes packed */
        __m256i f = _mm256_slli_epi64(b, 16);
        __m256i p = _mm256_permutevar8x32_epi32(f, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
        _mm_storeu_si128((__m128i *)(y + i), _mm256_castsi256_si128(p));
    }
    return i;
}

/* npk_bf16_scale_n eight lanes at a time: p = x * s in binary32 is the exact product (two 8-bit
 * significands) wherever it is finite and at least 2^-118 in magnitude (its last bit then at or
 * above 2^-133, inside binary32), or x or s is zero (a signed zero in both); its RNE rounding on
 * the dropped 16 bits is then npk_bf16_from_f64's of the double product. Eight lanes with another
 * case (an infinity or NaN, a product in or near the subnormal range, an overflow) go one at a
 * time, each read before it is written (y may be x). s is finite here. */
NPK_TARGET_AVX2 static size_t scale_avx2(uint16_t *y, const uint16_t *x, size_t n, uint16_t s) {
    const __m256 sv = _mm256_set1_ps(npk_bf16_to_f32(s));
    const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000),
                  tiny = _mm256_set1_epi32(0x04800000 - 1), /* 2^-118, less one */
                  one = _mm256_set1_epi32(1), rnd = _mm256_set1_epi32(0x7fff),
                  szero = _mm256_set1_epi32((s & 0x7fffu) ? 0 : -1);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i xu = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + i))), 16);
        __m256i pu = _mm256_castps_si256(_mm256_mul_ps(_mm256_castsi256_ps(xu), sv));
        __m256i xm = _mm256_and_si256(xu, abs), pm = _mm256_and_si256(pu, abs);
        __m256i xfin = _mm256_cmpgt_epi32(inf, xm);
        __m256i pok = _mm256_and_si256(_mm256_cmpgt_epi32(pm, tiny), _mm256_cmpgt_epi32(inf, pm));
        __m256i zero = _mm256_or_si256(_mm256_cmpeq_epi32(xm, _mm256_setzero_si256()), szero);
        __m256i take = _mm256_and_si256(xfin, _mm256_or_si256(pok, zero));
        if (_mm256_movemask_epi8(take) != -1) {
            for (size_t l = i; l < i + 8; l++) y[l] = npk_bf16_from_f64((double)npk_bf16_to_f32(x[l]) * npk_bf16_to_f32(s));
            continue;
        }
        __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(pu, rnd), _mm256_and_si256(_mm256_srli_epi32(pu, 16), one)), 16);
        _mm_storeu_si128((__m128i *)(y + i), _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
    }
    return i;
}
#endif

/* The count a vector variant did (from index 0), or 0 without AVX2. */
#ifdef NPK_ISA_X86
#define AVX2_DONE(call) (npk_isa_active() >= NPK_ISA_AVX2 ? (call) : 0)
#else
#define AVX2_DONE(call) 0
#endif

void npk_bf16_from_f32_n(uint16_t *y, const float *x, size_t n) {
    for (size_t i = AVX2_DONE(from_f32_avx2(y, x, n)); i < n; i++) y[i] = npk_bf16_from_f32(x[i]);
}

void npk_bf16_to_f32_n(float *y, const uint16_t *x, size_t n) {
    for (size_t i = AVX2_DONE(to_f32_avx2(y, x, n)); i < n; i++) y[i] = npk_bf16_to_f32(x[i]);
}

void npk_bf16_round_f32_n(float *y, const float *x, size_t n) {
    for (size_t i = AVX2_DONE(round_f32_avx2(y, x, n)); i < n; i++) y[i] = npk_bf16_round_f32(x[i]);
}

float npk_bf16_max_rounded(const float *x, size_t n) {
    float m = npk_bf16_round_f32(x[0]);
#ifdef NPK_ISA_X86
    if (n >= 8 && npk_isa_active() >= NPK_ISA_AVX2 && max_rounded_avx2(x, n, &m)) return m;
#endif
    for (size_t i = 1; i < n; i++) {
        const float r = npk_bf16_round_f32(x[i]);
        if (r > m) m = r;
    }
    return m;
}

void npk_bf16_div_round_f32_n(float *y, const float *x, size_t n, double d) {
    for (size_t i = AVX2_DONE(div_round_avx2(y, x, n, d)); i < n; i++)
        y[i] = npk_bf16_to_f32(npk_bf16_from_f64((double)x[i] / d));
}

void npk_bf16_scale_n(uint16_t *y, const uint16_t *x, size_t n, uint16_t s) {
    const double sd = npk_bf16_to_f32(s);
    size_t i = (s & 0x7f80u) == 0x7f80u ? 0 : AVX2_DONE(scale_avx2(y, x, n, s)); /* an infinite or NaN s: in double */
    for (; i < n; i++) y[i] = npk_bf16_from_f64((double)npk_bf16_to_f32(x[i]) * sd);
}
