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
 * same bytes as the exact path on every lane they take. */
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

#ifdef NPK_ISA_X86
/* Eight lanes: v = x - e as exp_one takes it, exp(v) = 2^n * p(r), n = round(v / ln 2), r = v - n ln 2 (ln 2 in two
 * parts, FMAs), p Cephes' degree-7 polynomial (relative error below 2^-23). */
NPK_TARGET_AVX2 static unsigned exp8_avx2(const uint16_t *x, float ef, uint16_t *y) {
    __m256 xf = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)x)), 16));
    /* v = x - e in double, taken when it is a binary32 (as exp_one) */
    __m256d ed = _mm256_set1_pd((double)ef);
    __m256d v0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(xf)), ed);
    __m256d v1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(xf, 1)), ed);
    __m128 f0 = _mm256_cvtpd_ps(v0), f1 = _mm256_cvtpd_ps(v1);
    __m256d x0 = _mm256_cmp_pd(_mm256_cvtps_pd(f0), v0, _CMP_EQ_OQ), x1 = _mm256_cmp_pd(_mm256_cvtps_pd(f1), v1, _CMP_EQ_OQ);
    __m256 v = _mm256_set_m128(f1, f0);
    const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6); /* a 64-bit mask's low half per lane */
    __m256 exact = _mm256_castsi256_ps(
        _mm256_permute2x128_si256(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(x0), even),
                                  _mm256_permutevar8x32_epi32(_mm256_castpd_si256(x1), even), 0x20));
    __m256 okm = _mm256_and_ps(exact, _mm256_and_ps(_mm256_cmp_ps(v, _mm256_set1_ps(-87.0f), _CMP_GT_OQ),
                                                    _mm256_cmp_ps(v, _mm256_set1_ps(80.0f), _CMP_LT_OQ)));
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
    __m256i pw = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256i u = _mm256_castps_si256(_mm256_mul_ps(p, _mm256_castsi256_ps(pw)));
    __m256i low = _mm256_and_si256(u, _mm256_set1_epi32(0xffff));
    __m256i neart = _mm256_and_si256(_mm256_cmpgt_epi32(low, _mm256_set1_epi32(0x8000 - 64)),
                                     _mm256_cmpgt_epi32(_mm256_set1_epi32(0x8000 + 64), low));
    __m256i tiny = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x01000000), u); /* u >= 0: exp is positive */
    __m256i take = _mm256_andnot_si256(_mm256_or_si256(neart, tiny), _mm256_castps_si256(okm));
    __m256i b = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)),
                                                   _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1))),
                                  16);
    b = _mm256_and_si256(b, take);
    __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    _mm_storeu_si128((__m128i *)y, w);
    return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(take));
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
    if (npk_isa_active() >= NPK_ISA_AVX2)
        for (; i + 8 <= n; i += 8) {
            uint64_t t = exp8_avx2(x + i, ef, y + i); /* bit l: lane l taken */
            t = (t | t << 28) & 0x0000000f0000000full; /* each bit to the low bit of its byte */
            t = (t | t << 14) & 0x0003000300030003ull;
            t = (t | t << 7) & 0x0101010101010101ull;
            memcpy(taken + i, &t, 8); /* little-endian: byte l = lane l */
            got += (size_t)((t * 0x0101010101010101ull) >> 56); /* the bytes' sum (no popcount library call) */
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
