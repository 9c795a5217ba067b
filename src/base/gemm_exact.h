// SPDX-License-Identifier: MIT
/* Internal to src/base: when a float GEMM may fuse its multiply and add (one
 * FMA per k instead of a rounded product and a rounded sum) without changing
 * a bit: every product of the operands is exactly an fp32 number. The range of
 * an operand's values it needs, gathered in one pass (src/base/gemm.c's check
 * of a whole GEMM) or while the AVX2 kernel packs a block of each operand
 * (src/base/gemm_f32_avx2.c: the decision per pair of packed blocks, since the
 * rule holds product by product). */
#ifndef NPUKIT_BASE_GEMM_EXACT_H
#define NPUKIT_BASE_GEMM_EXACT_H

#include <stdint.h>
#include <string.h>

/* The OR of the magnitudes' bits, the largest magnitude and the smallest
 * non-zero one (as fp32 bits; finite magnitudes order like their bits). */
typedef struct npk_f32_range {
    uint32_t bits_or, max, min_m1; /* min_m1: smallest |x| - 1 over all x, wrapping (0xffffffff: no non-zero) */
} npk_f32_range;

#define NPK_F32_RANGE_EMPTY {0, 0, 0xffffffffu}

/* One value's fp32 bits into r. */
static inline void npk_f32_range_add(npk_f32_range *r, uint32_t u) {
    u &= 0x7fffffffu;
    r->bits_or |= u;
    r->max = u > r->max ? u : r->max;
    r->min_m1 = u - 1 < r->min_m1 ? u - 1 : r->min_m1; /* u = 0 wraps to the top: zeros never count */
}

static inline double npk_f32_range_val(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Significant bits at most in any element's significand (24 for a full fp32
 * significand, 8 for widened BF16, 11 FP16, 4 FP8 E4M3): 24 minus the
 * trailing zero bits of the OR of the fraction fields. For a subnormal
 * (fraction * 2^-149) the count is an upper bound too. */
static inline unsigned npk_f32_sig_bits(uint32_t bits_or) {
    return 24u - (unsigned)__builtin_ctz((bits_or & 0x7fffffu) | 0x800000u);
}

/* 1 when every product a * b of a value of a and a value of b is exactly an
 * fp32 number, so that fma(a, b, acc) == fl(fl(a * b) + acc) for every acc,
 * bit for bit (signed zeros, infinite and NaN accumulators included: the
 * product is the same exact value either way and the one rounding of the sum
 * is the same):
 *  - every operand finite;
 *  - a product of a p-bit and a q-bit significand has at most p + q bits:
 *    p + q <= 24 fits fp32's significand;
 *  - max|a| * max|b| < 2^127 (no product overflows) and, when both have a
 *    non-zero element, min|a| * min|b| >= 2^-126 over the non-zero ones (no
 *    non-zero product falls below the normal range, where fp32 keeps fewer
 *    bits); a zero operand gives an exact signed zero.
 * The bounds are computed in double, where the product of two floats is exact. */
static inline int npk_f32_products_exact(const npk_f32_range *a, const npk_f32_range *b) {
    if (a->max >= 0x7f800000u || b->max >= 0x7f800000u) return 0;
    if (npk_f32_sig_bits(a->bits_or) + npk_f32_sig_bits(b->bits_or) > 24) return 0;
    if (npk_f32_range_val(a->max) * npk_f32_range_val(b->max) >= 0x1p127) return 0;
    if (a->min_m1 != 0xffffffffu && b->min_m1 != 0xffffffffu &&
        npk_f32_range_val(a->min_m1 + 1) * npk_f32_range_val(b->min_m1 + 1) < 0x1p-126)
        return 0;
    return 1;
}

#endif
