/*
 * The float32 GEMM under the fast CPU kernels (fast_onnx.c; issue 15 point 2):
 * register-blocked micro-kernels with fused multiply-add for AVX-512 and
 * AVX2+FMA, picked at run time from the instruction-set level of
 * include/npukit/cpu.h (npk_isa_force / NPUKIT_ISA cap it), and a portable C
 * version for every other machine. Sums in float32 (the golden of
 * ref_onnx*.c sums in double); tests/test_onnx_fast.c holds every variant to
 * ONNX's backend tolerance against the golden.
 */
#ifndef NPUKIT_OPS_FAST_GEMM_H
#define NPUKIT_OPS_FAST_GEMM_H

#include <stdint.h>

/* C[M][N] (row stride ldc) = (acc ? C : 0) + A[M][K] (lda) x B[K][N] (ldb), row major. */
void npk_fast_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                    float *C, int64_t ldc, int acc);

/* The kernel npk_fast_sgemm uses now: "avx512" (level avx512), "avx2" (level
 * avx2) or "portable". */
const char *npk_fast_sgemm_kernel(void);

#endif
