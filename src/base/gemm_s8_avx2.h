// SPDX-License-Identifier: MIT
/* Internal to src/base: the AVX2 variant of npk_gemm_s8s32 (gemm_s8_avx2.c),
 * called by the dispatcher in gemm.c for one slice of C. */
#ifndef NPUKIT_GEMM_S8_AVX2_H
#define NPUKIT_GEMM_S8_AVX2_H

#include <stddef.h>
#include <stdint.h>

/* The bytes of packing buffer npk_gemm_s8s32_avx2 needs for these shapes. */
size_t npk_gemm_s8s32_avx2_bytes(uint32_t M, uint32_t N, uint32_t K);

/* C[M][N] = A[M][K] x B[K][N] exactly (int32 wrapping), M, N, K >= 1, with
 * buf (64-byte aligned) of npk_gemm_s8s32_avx2_bytes(M, N, K) bytes. Both
 * are defined on x86 builds only (NPK_ISA_X86); the caller allocates, so
 * this file calls nothing in gemm.c. */
void npk_gemm_s8s32_avx2(void *buf, uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda,
                         const int8_t *B, size_t ldb, int32_t *C, size_t ldc);

#endif
