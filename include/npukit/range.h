/* SPDX-License-Identifier: MIT */
/*
 * Guest address ranges in overflow-safe arithmetic: the one helper every
 * model uses to check an (address, length) or a (base, rows x stride) range a
 * guest programmed (DMA engines, tensor and host windows, L2, rings, guest
 * memory itself). A range is valid when its last byte is at most 2^64 - 1:
 * it may end exactly at the top of the address space but never wraps past it
 * to address 0. An empty range (length 0, or 0 rows) is always valid.
 */
#ifndef NPUKIT_RANGE_H
#define NPUKIT_RANGE_H

#include <stdint.h>

/* 1 when [addr, addr + len) does not wrap past 2^64; *last (may be NULL) gets
 * the address of its last byte (addr for an empty range). */
static inline int npk_range_ok(uint64_t addr, uint64_t len, uint64_t *last) {
    uint64_t l = len ? addr + (len - 1) : addr;
    if (last) *last = l;
    return !len || l >= addr;
}

/* Bytes spanned by `rows` rows of `rowbytes` bytes, `stride` apart:
 * (rows - 1) * stride + rowbytes, or 0 for no rows or empty rows. Returns 1,
 * or 0 when the span does not fit in 64 bits (*span then UINT64_MAX). */
static inline int npk_range_span(uint64_t rows, uint64_t stride, uint64_t rowbytes, uint64_t *span) {
    uint64_t s = 0;
    if (rows && rowbytes) {
        if (__builtin_mul_overflow(rows - 1, stride, &s) || __builtin_add_overflow(s, rowbytes, &s)) {
            *span = UINT64_MAX;
            return 0;
        }
    }
    *span = s;
    return 1;
}

/* 1 when every row of a strided range (base, rows x rowbytes, stride apart)
 * lies below 2^64, i.e. its span neither overflows nor wraps; *last (may be
 * NULL) gets the last byte of the span. */
static inline int npk_range2d_ok(uint64_t base, uint64_t rows, uint64_t stride, uint64_t rowbytes, uint64_t *last) {
    uint64_t span;
    if (!npk_range_span(rows, stride, rowbytes, &span)) {
        if (last) *last = UINT64_MAX;
        return 0;
    }
    return npk_range_ok(base, span, last);
}

/* 1 when the valid, non-empty ranges [a, a + alen) and [b, b + blen)
 * share a byte (0 when either is empty). Never computes an end past 2^64. */
static inline int npk_range_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen) {
    if (!alen || !blen) return 0;
    uint64_t al, bl;
    npk_range_ok(a, alen, &al);
    npk_range_ok(b, blen, &bl);
    return a <= bl && b <= al;
}

/* 1 when [addr, addr + len) lies inside the window [base, base + size)
 * (both valid; an empty range inside when addr is in the window or at its end). */
static inline int npk_range_within(uint64_t addr, uint64_t len, uint64_t base, uint64_t size) {
    return addr >= base && addr - base <= size && len <= size - (addr - base);
}

#endif
