// SPDX-License-Identifier: MIT
/*
 * npukit base layer: number formats (fp16, bf16, fp8 E4M3) and their rounding.
 *
 * Conversions to a narrow format round to nearest, ties to even, in ONE step
 * from the given value (a double is never rounded to float first), so
 * "compute in double, store once" paths are correctly rounded. Subnormals are
 * kept (no flush).
 *   fp16  IEEE binary16: overflow -> +-inf, NaN -> 0x7E00 (canonical quiet NaN)
 *   bf16  bfloat16 (the top 16 bits of a binary32): overflow -> +-inf,
 *         NaN -> 0x7FC0
 *   fp8   OCP E4M3 (FN): no infinities, 0x7F/0xFF are NaN, largest finite 448;
 *         overflow saturates to +-448 ("satfinite"), NaN -> 0x7F
 * Widening conversions (to_f32) are exact.
 *
 * Also here: an exact BF16 accumulator (the arithmetic of the pccx GEMV/GEMM
 * datapath), whose only rounding is the final one to BF16.
 *
 * Models, drivers and reference ops all use these; this header depends on
 * nothing else in npukit.
 */
#ifndef NPUKIT_NUMFMT_H
#define NPUKIT_NUMFMT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NPK_BF16_QNAN 0x7fc0u
#define NPK_BF16_PINF 0x7f80u
#define NPK_BF16_NINF 0xff80u

/* ---- conversions ---------------------------------------------------------- */
float npk_fp16_to_f32(uint16_t h);
uint16_t npk_fp16_from_f64(double x);
/* The bf16 <-> binary32 conversions are inline (hot loops of the models and
 * decoders convert once per element); the rare cases of npk_bf16_from_f64
 * (subnormal results, zero, infinities, NaN, overflow) are out of line. */
static inline float npk_bf16_to_f32(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
uint16_t npk_bf16_from_f64_rare_(double x);
static inline uint16_t npk_bf16_from_f64(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    uint64_t mag = u & 0x7fffffffffffffffull;
    /* Normal BF16 results (|x| >= 2^-126, finite): round the 52 fraction bits
     * to 7 on the bits (ties to even; a carry steps the exponent), rebias. */
    if (mag >= (uint64_t)(1023 - 126) << 52 && mag < 0x7ff0000000000000ull) {
        mag = (mag + 0xfffffffffffull + ((mag >> 45) & 1u)) >> 45;
        uint16_t sg = (uint16_t)(u >> 48 & 0x8000u);
        if (mag >= (uint64_t)(896 + 255) << 7) return sg | 0x7f80u; /* overflow */
        return (uint16_t)(sg | (mag - ((uint64_t)896 << 7)));
    }
    return npk_bf16_from_f64_rare_(x);
}
/* The same rounding as npk_bf16_from_f64((double)f), on the bits of f. */
static inline uint16_t npk_bf16_from_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return NPK_BF16_QNAN;
    u += 0x7fffu + ((u >> 16) & 1u); /* RNE on the dropped 16 bits; carries into the exponent */
    return (uint16_t)(u >> 16);
}
/* f rounded to the nearest bf16 value (RNE), as a float. */
static inline float npk_bf16_round_f32(float f) { return npk_bf16_to_f32(npk_bf16_from_f32(f)); }
/* 1 for NaN encodings. */
int npk_bf16_isnan(uint16_t b);
/* The same conversions over arrays (src/base/bf16_conv.c: vectorized, the
 * same bits element by element): y[i] = npk_bf16_from_f32(x[i]),
 * npk_bf16_to_f32(x[i]), npk_bf16_round_f32(x[i]), and
 * npk_bf16_to_f32(npk_bf16_from_f64((double)x[i] / d)); y may be x for the
 * last two. */
void npk_bf16_from_f32_n(uint16_t *y, const float *x, size_t n);
void npk_bf16_to_f32_n(float *y, const uint16_t *x, size_t n);
void npk_bf16_round_f32_n(float *y, const float *x, size_t n);
void npk_bf16_div_round_f32_n(float *y, const float *x, size_t n, double d);
/* m = npk_bf16_round_f32(x[0]), then for each later i: r = npk_bf16_round_f32(x[i]), if (r > m) m = r; n >= 1. */
float npk_bf16_max_rounded(const float *x, size_t n);
float npk_fp8_to_f32(uint8_t v); /* E4M3 */
uint8_t npk_fp8_from_f64(double x);

/* (neg ? -1 : 1) * (hi * 2^64 + lo) * 2^e rounded once to BF16 (RNE,
 * subnormals, overflow to infinity; zero gives +0). */
uint16_t npk_bf16_round_u128(int neg, uint64_t hi, uint64_t lo, int e);

/* ---- exact BF16 accumulator --------------------------------------------------
 * A fixed-point number wide enough for every sum of up to 2^28 terms s * w * x
 * (s binary32, w a small integer |w| <= 8, x BF16) and BF16 values, so the only
 * rounding is the final one. Infinities and NaNs are tracked separately
 * (inf - inf and 0 * inf give NaN). */
#define NPK_BF16_XACC_DIGITS 20
typedef struct npk_bf16_xacc {
    int64_t d[NPK_BF16_XACC_DIGITS]; /* 32-bit digits (carries deferred); bit 0 = 2^-282 */
    uint32_t adds;                   /* terms since the last carry normalisation */
    uint8_t nan, pinf, ninf;
} npk_bf16_xacc;

void npk_bf16_xacc_clear(npk_bf16_xacc *a);
/* += x (a BF16 value). */
void npk_bf16_xacc_add(npk_bf16_xacc *a, uint16_t x);
/* -= x. */
void npk_bf16_xacc_sub(npk_bf16_xacc *a, uint16_t x);
/* += s * w * x exactly (|w| <= 8). */
void npk_bf16_xacc_add_prod(npk_bf16_xacc *a, float s, int w, uint16_t x);
/* += s * S * 2^e exactly, S an integer, e >= -133 (the unit of a BF16
 * significand): the sum of one weight group, s * sum_k w_k * x_k, with the x_k
 * aligned to the group's least exponent e. An infinite s with S != 0 adds an
 * infinity, a NaN s a NaN. */
void npk_bf16_xacc_add_scaled(npk_bf16_xacc *a, float s, int64_t S, int e);
/* The sum rounded once to BF16 (an exact zero gives +0). */
uint16_t npk_bf16_xacc_round(npk_bf16_xacc *a);

/* round_bf16(*first + sum_i (x[i] - *sub)) with the sum exact (first, sub
 * optional): the value of an npk_bf16_xacc fed the same adds and subtracts. */
uint16_t npk_bf16_sum(const uint16_t *x, size_t n, const uint16_t *first, const uint16_t *sub);

/* y[i] = round_bf16(exp(x[i] - *sub)) (sub optional) for the elements where
 * a binary32 exponential decides the rounding (src/base/bf16_exp.c: v exactly
 * a binary32 in (-87, 80), the result away from a BF16 tie and the subnormal
 * range): taken[i] = 1 there, else 0 and y[i] is not the result (the caller
 * computes it exactly). Returns the count taken. AVX2 or C from the level of
 * include/npukit/cpu.h; the same y on every taken element. */
size_t npk_bf16_exp_fast(const uint16_t *x, size_t n, const uint16_t *sub, uint16_t *y, uint8_t *taken);
/* y[i] = npk_bf16_from_f64(exp((double)x[i] - *sub)) (sub optional: exp of x[i]) for every i, the
 * pccx CVO EXP: npk_bf16_exp_fast's lanes where it takes them, the others in double. y may be x
 * (not another overlap). */
void npk_bf16_exp_n(const uint16_t *x, size_t n, const uint16_t *sub, uint16_t *y);
/* y[i] = npk_bf16_from_f64((double)x[i] * s) for every i, the pccx CVO SCALE (src/base/bf16_conv.c:
 * the binary32 product, exact for two BF16 values, where it is normal and finite; the others in
 * double). y may be x (not another overlap). */
void npk_bf16_scale_n(uint16_t *y, const uint16_t *x, size_t n, uint16_t s);

/* ---- exact INT4 x BF16 GEMV (src/base/q4_gemv.c) ------------------------------
 * y[n] = round_bf16(old[n] + sum_k s[n][k / G] * w[n][k] * x[k]) with the sum
 * exact and one RNE rounding: the value of an npk_bf16_xacc fed old[n] and
 * every product with npk_bf16_xacc_add_prod, bit for bit (NaN, infinities,
 * 0 * inf, subnormals included), computed with per-chunk integer sums and one
 * 128-bit add per chunk and output when the terms allow, else the accumulator.
 * A matrix is prepared once from a pccx weight record's parts and reused
 * (the pccx model caches them per record); a workspace holds per-row scratch. */
typedef struct npk_q4_mat npk_q4_mat;
typedef struct npk_q4_ws npk_q4_ws;
/* w4: N*K INT4 values, two per byte low nibble first, row n at n*K; scales:
 * N * ceil(K/G) little-endian binary32 (row n at n*ceil(K/G)), or NULL for
 * 1.0; G: inputs per scale, 0 or >= K for one per row. */
int npk_q4_mat_new(const uint8_t *w4, const uint8_t *scales, uint32_t N, uint32_t K, uint32_t G, npk_q4_mat **out);
/* The same, calling stop(ctx) every 256 rows of the unpacking (at most 2^24
 * weights apart; stop may be NULL): once it returns non-zero, nothing is kept,
 * *out stays NULL and the call returns 1 (a serving process shutting down
 * mid-instruction, issue 32 point 3). */
int npk_q4_mat_new_poll(const uint8_t *w4, const uint8_t *scales, uint32_t N, uint32_t K, uint32_t G,
                        int (*stop)(void *), void *ctx, npk_q4_mat **out);
void npk_q4_mat_free(npk_q4_mat *m);
/* Host bytes the prepared matrix takes. */
size_t npk_q4_mat_bytes(const npk_q4_mat *m);
npk_q4_ws *npk_q4_ws_new(void);
void npk_q4_ws_free(npk_q4_ws *ws);
/* One row: x[0..K) BF16, old[0..N) BF16 to add (or NULL), y[0..N). 0 or an npk error. */
int npk_q4_gemv(const npk_q4_mat *m, const uint16_t *x, const uint16_t *old, uint16_t *y, npk_q4_ws *ws);
/* The kernel variant, chosen at run time from the instruction-set level of
 * include/npukit/cpu.h (avx512 from level avx512, avx2 from level avx2; tests
 * force every level with npk_isa_force). */
typedef enum npk_q4_isa { NPK_Q4_C = 1, NPK_Q4_AVX2, NPK_Q4_AVX512 } npk_q4_isa;
npk_q4_isa npk_q4_isa_active(void);
const char *npk_q4_isa_name(npk_q4_isa isa);

#ifdef __cplusplus
}
#endif
#endif
