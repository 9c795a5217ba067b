// SPDX-License-Identifier: MIT
/* npu bench: the oneDNN baseline (src/tools/bench_dnnl.c). */
#ifndef NPUKIT_TOOLS_BENCH_H
#define NPUKIT_TOOLS_BENCH_H

#include <stdint.h>

/* 1 when npu was linked with oneDNN (cmake/bench.cmake found libdnnl). */
int bench_dnnl_available(void);
/* "oneDNN X.Y.Z", or why the baseline is unavailable. */
const char *bench_dnnl_version(void);
/* The highest instruction set oneDNN dispatches to on this host (its
 * dnnl_get_effective_cpu_isa, capped by ONEDNN_MAX_CPU_ISA): "avx2",
 * "avx512_core_vnni", ...; NULL when unknown or not linked. */
const char *bench_dnnl_isa(void);
/* OpenMP threads oneDNN uses (0 = unknown / not linked with OpenMP). */
int bench_dnnl_threads(void);
/* Set the OpenMP threads oneDNN uses (n >= 1); returns the previous count,
 * or 0 when the thread count cannot be set (no OpenMP). */
int bench_dnnl_set_threads(int n);
/* C[M][N] int32 = A[M][K] int8 x B[K][N] int8, row major, with oneDNN's
 * dnnl_gemm_s8s8s32. Returns 0, or -1 (failure or no oneDNN). */
int bench_dnnl_gemm_s8(int M, int N, int K, const int8_t *A, const int8_t *B, int32_t *C);
/* C[M][N] = A[M][K] x B[K][N], fp32, row major, with oneDNN's dnnl_sgemm (its
 * own summation order and FMAs: the fp32 peer of an exact sequential GEMM, not
 * a bit-exact one). Returns 0, or -1 (failure or no oneDNN). */
int bench_dnnl_sgemm(int M, int N, int K, const float *A, const float *B, float *C);

#endif
