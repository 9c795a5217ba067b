// SPDX-License-Identifier: MIT
/* Number-format conversions: fp16, bf16, fp8 E4M3 (include/npukit/numfmt.h). */
#include "npukit/numfmt.h"

#include <math.h>
#include <string.h>

/* Round |x| (finite, > 0) to a binary format with mbits fraction bits and
 * exponent bias `bias` (minimum normal exponent 1 - bias), ties to even.
 * Returns the magnitude bits (exponent field << mbits | fraction) without any
 * overflow handling: the caller compares against its largest finite code. */
static uint32_t round_mag(double a, int mbits, int bias) {
    int ex;
    frexp(a, &ex);           /* a = f * 2^ex, f in [0.5, 1) */
    int e = ex - 1;          /* a in [2^e, 2^(e+1)) */
    int emin = 1 - bias;
    if (e < emin) e = emin;  /* subnormal range: fixed quantum */
    double n = rint(ldexp(a, mbits - e)); /* exact scaling, one rounding (ties-to-even) */
    uint32_t q = (uint32_t)n;
    uint32_t one = 1u << mbits;
    if (q >= 2 * one) { /* rounded up into the next binade */
        q >>= 1;
        e++;
    }
    if (q < one) return q; /* subnormal (or zero): exponent field 0 */
    return ((uint32_t)(e + bias) << mbits) | (q - one);
}

/* x (any double) to a format with mbits fraction bits and exponent bias `bias`: the sign bit
 * `sign`, `nan` for NaN, round_mag's code up to the largest finite code `maxfin`, `ovf` beyond it
 * and for infinities (infinity, or the largest finite code in a format without one). */
static uint32_t from_f64(double x, int mbits, int bias, uint32_t sign, uint32_t nan, uint32_t maxfin, uint32_t ovf) {
    if (isnan(x)) return nan;
    uint32_t s = signbit(x) ? sign : 0;
    double a = fabs(x);
    if (a == 0) return s;
    if (isinf(a)) return s | ovf;
    uint32_t m = round_mag(a, mbits, bias);
    return s | (m > maxfin ? ovf : m);
}

float npk_fp16_to_f32(uint16_t h) {
    uint32_t s = h >> 15, e = (h >> 10) & 0x1f, f = h & 0x3ff;
    float v;
    if (e == 0) v = ldexpf((float)f, -24);
    else if (e == 31) v = f ? NAN : INFINITY;
    else v = ldexpf((float)(f | 0x400), (int)e - 25);
    return s ? -v : v;
}

/* from 65520 on |x| rounds to 2^16: infinity */
uint16_t npk_fp16_from_f64(double x) { return (uint16_t)from_f64(x, 10, 15, 0x8000, 0x7e00, 0x7bff, 0x7c00); }

/* npk_bf16_from_f64 (include/npukit/numfmt.h) for what its inline normal path
 * does not take: subnormal results, zero, infinities, NaN. */
uint16_t npk_bf16_from_f64_rare_(double x) {
    return (uint16_t)from_f64(x, 7, 127, 0x8000, NPK_BF16_QNAN, 0x7f7f, 0x7f80);
}

int npk_bf16_isnan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu); }

float npk_fp8_to_f32(uint8_t v) {
    uint32_t s = v >> 7, e = (v >> 3) & 0xf, f = v & 7;
    float r;
    if (e == 15 && f == 7) return NAN;
    if (e == 0) r = ldexpf((float)f, -9);
    else r = ldexpf((float)(f | 8), (int)e - 10);
    return s ? -r : r;
}

/* E4M3 has no infinity: beyond 448 (and for infinities) it saturates at 448, keeping the NaN code
 * 0x7f out (448 < |x| < 464 already rounds to 448) */
uint8_t npk_fp8_from_f64(double x) { return (uint8_t)from_f64(x, 3, 7, 0x80, 0x7f, 0x7e, 0x7e); }
