// SPDX-License-Identifier: MIT
/* oneDNN baselines for npu bench: its int8 GEMM (dnnl_gemm_s8s8s32) and its
 * fp32 GEMM (dnnl_sgemm), linked into npu when cmake/bench.cmake finds oneDNN
 * (libdnnl-dev) at build time. Without it the functions report "baseline
 * unavailable". */
#include "bench.h"

#include <stdio.h>

#ifdef NPUKIT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#ifdef NPUKIT_HAVE_OMP
#include <omp.h>
#endif

int bench_dnnl_available(void) { return 1; }

const char *bench_dnnl_version(void) {
    static char buf[64];
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, sizeof buf, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
    return buf;
}

const char *bench_dnnl_isa(void) {
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return NULL;
    }
}

int bench_dnnl_threads(void) {
#ifdef NPUKIT_HAVE_OMP
    return omp_get_max_threads();
#else
    return 0;
#endif
}

int bench_dnnl_set_threads(int n) {
#ifdef NPUKIT_HAVE_OMP
    int old = omp_get_max_threads();
    omp_set_num_threads(n);
    return old;
#else
    (void)n;
    return 0;
#endif
}

int bench_dnnl_gemm_s8(int M, int N, int K, const int8_t *A, const int8_t *B, int32_t *C) {
    int32_t co = 0;
    /* row major C[M][N] = A[M][K] x B[K][N], no offsets, fixed C offset 0 */
    return dnnl_gemm_s8s8s32('N', 'N', 'F', M, N, K, 1.0f, A, K, 0, B, N, 0, 0.0f, C, N, &co) == dnnl_success ? 0 : -1;
}

int bench_dnnl_sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
    return dnnl_sgemm('N', 'N', M, N, K, 1.0f, A, K, B, N, 0.0f, C, N) == dnnl_success ? 0 : -1;
}
#else
int bench_dnnl_available(void) { return 0; }
const char *bench_dnnl_version(void) { return "baseline unavailable (npu was built without oneDNN, libdnnl-dev)"; }
const char *bench_dnnl_isa(void) { return NULL; }
int bench_dnnl_threads(void) { return 0; }
int bench_dnnl_set_threads(int n) {
    (void)n;
    return 0;
}
int bench_dnnl_gemm_s8(int M, int N, int K, const int8_t *A, const int8_t *B, int32_t *C) {
    (void)M, (void)N, (void)K, (void)A, (void)B, (void)C;
    return -1;
}
int bench_dnnl_sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
    (void)M, (void)N, (void)K, (void)A, (void)B, (void)C;
    return -1;
}
#endif
