// SPDX-License-Identifier: MIT
/* Internal to src/base: the AVX2 + FMA variant of npk_gemm_f32 and
 * npk_gemm_bf16 (src/base/gemm_f32_avx2.c), called by the dispatch in
 * src/base/gemm.c. */
#ifndef NPUKIT_BASE_GEMM_F32_AVX2_H
#define NPUKIT_BASE_GEMM_F32_AVX2_H

#include "npukit/gemm.h"

/* The packing buffer npk_gemm_f32_avx2 needs for this shape (bytes, 64-byte
 * aligned by the caller). */
size_t npk_gemm_f32_avx2_buf(uint32_t M, uint32_t N, uint32_t K);

/* C[M][N] (ldc) = A[M][K] (lda) x B[K][N] (ldb) with npk_gemm_f32's arithmetic
 * (each output summed from +0 over k = 0 .. K-1 in order, a rounded multiply
 * and a rounded add per step, fused into one FMA for every pair of packed
 * blocks whose products are all exact: src/base/gemm_exact.h). bf16: A and B
 * are BF16 (uint16_t elements, widened exactly while they are packed), else
 * fp32. M, N, K >= 1; buf: the packing buffer (npk_gemm_f32_avx2_buf bytes).
 * The caller (src/base/gemm.c) owns the buffer, so this file calls nothing of
 * gemm.c. */
void npk_gemm_f32_avx2(uint32_t M, uint32_t N, uint32_t K, const void *A, size_t lda, const void *B, size_t ldb,
                       int bf16, float *C, size_t ldc, float *buf);

#endif
