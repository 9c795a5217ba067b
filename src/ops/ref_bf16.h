/* BF16 helpers and an exact accumulator for the pccx datapath (the CPU
 * reference of its arithmetic; the pccx model and driver use it).
 *
 * BF16 = the top 16 bits of an IEEE-754 binary32. Every rounding here is
 * round-to-nearest-even with subnormals kept (no flush) and overflow to inf.
 * NaN results are the canonical quiet NaN 0x7fc0. */
#ifndef NPUKIT_OPS_REF_BF16_H
#define NPUKIT_OPS_REF_BF16_H

#include <stdint.h>

#define NPK_BF16_QNAN 0x7fc0u
#define NPK_BF16_PINF 0x7f80u
#define NPK_BF16_NINF 0xff80u

/* Exact widening. */
float npk_bf16_to_float(uint16_t b);
/* One RNE rounding from float / from double (no double rounding through float). */
uint16_t npk_bf16_from_float(float f);
uint16_t npk_bf16_from_double(double d);
/* 1 for NaN encodings. */
int npk_bf16_isnan(uint16_t b);

/* Exact accumulator: a fixed-point number wide enough for every sum of up to
 * 2^28 terms s * w * x (s binary32, w a small integer |w| <= 8, x BF16) and
 * BF16 values, so the only rounding is the final one. Infinities and NaNs are
 * tracked separately (inf - inf and 0 * inf give NaN). */
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
/* The sum rounded once to BF16 (an exact zero gives +0). */
uint16_t npk_bf16_xacc_round(npk_bf16_xacc *a);

#endif
