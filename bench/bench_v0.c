// SPDX-License-Identifier: MIT
/* v0 benchmark (figures, not a test).
 *
 *   bench_v0 [--reps N]
 *
 * 1. MATMUL_S8 1024x1024x1024.
 * 2. A ResNet-style 3x3 convolution: 56x56x64 -> 64, stride 1, pad 1
 *    (im2col GEMM 3136 x 64 x 576).
 * For each: host wall time and MAC/s of the model's functional compute
 * (the fast int8 kernel, one thread), of the whole device path (driver
 * staging + DMA beats + compute, npk_v0_matmul / npk_v0_conv2d over the
 * in-process port), and of oneDNN's int8 GEMM (dnnl_gemm_s8s8s32) on the
 * same GEMM shape in the same run, with its default threads and with one;
 * medians of N repetitions with min/max; plus the modeled device cycles and
 * utilization (MACs / (256 x cycles)) read from PERF_CYCLES/PERF_MACS. */
#ifndef NPUKIT_HAVE_DNNL
#error "bench_v0 needs oneDNN (libdnnl-dev); cmake/v0.cmake only builds it when found"
#endif
#include "npukit/gemm.h"
#include "npukit/npu.h"
#include "npukit/v0.h"
#include "sim/v0_internal.h"

#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef NPUKIT_HAVE_OMP
#include <omp.h>
#endif

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct stat3 {
    double med, min, max;
} stat3;

static stat3 summarize(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmpd);
    stat3 s = {n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2, t[0], t[n - 1]};
    return s;
}

static void row(const char *what, stat3 s, double macs) {
    printf("  %-44s %9.3f ms (min %8.3f, max %8.3f)  %7.1f GMAC/s\n", what, s.med * 1e3, s.min * 1e3, s.max * 1e3,
           macs / s.med / 1e9);
}

static int reps = 7;
static npk_gemm_ws ws; /* the kernel's packing buffers, kept across runs like the model's */

/* oneDNN int8 GEMM C[M][N] = A[M][K] x B[K][N], row major. */
static int dnnl_run(int M, int N, int K, const int8_t *A, const int8_t *B, int32_t *C) {
    int32_t co = 0;
    return dnnl_gemm_s8s8s32('N', 'N', 'F', M, N, K, 1.0f, A, K, 0, B, N, 0, 0.0f, C, N, &co) == dnnl_success ? 0 : -1;
}

static stat3 time_dnnl(int M, int N, int K, const int8_t *A, const int8_t *B, int32_t *C) {
    double t[64];
    dnnl_run(M, N, K, A, B, C); /* warm-up: JIT, threads */
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        dnnl_run(M, N, K, A, B, C);
        t[r] = now() - t0;
    }
    return summarize(t, reps);
}

static stat3 time_kernel(uint32_t M, uint32_t N, uint32_t K, const int8_t *A, const int8_t *B, int32_t *C) {
    double t[64];
    npk_gemm_s8s32(&ws, M, N, K, A, K, B, N, C, N);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        npk_gemm_s8s32(&ws, M, N, K, A, K, B, N, C, N);
        t[r] = now() - t0;
    }
    return summarize(t, reps);
}

static void fill(int8_t *p, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        p[i] = (int8_t)(seed >> 24);
    }
}

static void dnnl_compare(const char *label, uint32_t M, uint32_t N, uint32_t K, const int8_t *A, const int8_t *B,
                         int32_t *C, int32_t *D, double macs, stat3 kern) {
#ifdef NPUKIT_HAVE_OMP
    int threads = omp_get_max_threads();
#else
    int threads = -1;
#endif
    char what[96];
    stat3 dn = time_dnnl((int)M, (int)N, (int)K, A, B, D);
    snprintf(what, sizeof what, "oneDNN dnnl_gemm_s8s8s32, %d thread(s)", threads);
    row(what, dn, macs);
    int exact = !memcmp(C, D, (size_t)M * N * sizeof *C);
    printf("  %-44s %s\n", "kernel output == oneDNN output", exact ? "yes (bit-exact)" : "NO");
#ifdef NPUKIT_HAVE_OMP
    omp_set_num_threads(1);
    stat3 d1 = time_dnnl((int)M, (int)N, (int)K, A, B, D);
    omp_set_num_threads(threads);
    row("oneDNN dnnl_gemm_s8s8s32, 1 thread", d1, macs);
    printf("  %-44s %.2fx of oneDNN (%d threads), %.2fx of oneDNN (1 thread)\n", "kernel throughput", dn.med / kern.med,
           threads, d1.med / kern.med);
#else
    printf("  %-44s %.2fx of oneDNN\n", "kernel throughput", dn.med / kern.med);
#endif
    (void)label;
}

/* Modeled figures of one of the `runs` identical runs since c0. */
static void modeled(npk_v0 *v, const npk_v0_counters *c0, int runs, double macs_expected) {
    npk_v0_counters c1;
    npk_v0_read_counters(v, &c1);
    uint32_t cyc = (c1.perf_cycles - c0->perf_cycles) / (uint32_t)runs;
    uint64_t macs = (c1.perf_macs - c0->perf_macs) / (uint64_t)runs;
    printf("  %-44s %u cycles (%.3f ms at 1 GHz), %llu MACs%s\n", "modeled device time (PERF_CYCLES)", cyc,
           cyc / 1e6, (unsigned long long)macs, (double)macs == macs_expected ? "" : " (!= expected)");
    printf("  %-44s %.1f%% of 256 MAC/cycle\n", "modeled utilization", 100.0 * (double)macs / (256.0 * cyc));
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_v0 [--reps N]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 64) reps = 7;
    npk_port *p;
    npk_v0 *v;
    npk_v0_config vc;
    npk_v0_config_default(&vc);
    vc.cpu_exec = npk_v0_cpu_execute;
    if (npk_port_open(&p, NULL, "v0", NULL) || npk_v0_open(&v, p, &vc)) {
        fprintf(stderr, "bench_v0: %s\n", npk_errmsg());
        return 1;
    }
    printf("v0 benchmark: %d repetitions, functional kernel '%s' (one thread)\n\n", reps,
           npk_gemm_isa_name(npk_gemm_active_isa()));

    /* ---- 1. MATMUL_S8 1024^3 ---- */
    const uint32_t n = 1024;
    double macs = (double)n * n * n;
    int8_t *A = malloc((size_t)n * n), *B = malloc((size_t)n * n);
    int32_t *C = malloc((size_t)n * n * 4), *D = malloc((size_t)n * n * 4);
    fill(A, (size_t)n * n, 1);
    fill(B, (size_t)n * n, 2);
    printf("MATMUL_S8 1024x1024x1024 (%.0f MMAC)\n", macs / 1e6);
    stat3 kern = time_kernel(n, n, n, A, B, C);
    row("functional compute (int8 kernel)", kern, macs);
    double t[64];
    npk_v0_counters c0;
    npk_v0_read_counters(v, &c0);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        if (npk_v0_matmul(v, n, n, n, A, B, C, 0)) {
            fprintf(stderr, "bench_v0: %s\n", npk_errmsg());
            return 1;
        }
        t[r] = now() - t0;
    }
    row("device path (driver + DMA + compute)", summarize(t, reps), macs);
    modeled(v, &c0, reps, macs);
    dnnl_compare("matmul", n, n, n, A, B, C, D, macs, kern);
    free(A), free(B), free(C), free(D);

    /* ---- 2. conv 56x56x64 -> 64, 3x3 ---- */
    npk_v0_conv cv = {56, 56, 64, 64, 3, 1, 1, 1, 1, 1};
    uint32_t oh, ow;
    npk_v0_conv_out(&cv, &oh, &ow);
    uint32_t M = oh * ow, N = cv.cout, K = 9 * cv.cin;
    macs = (double)M * N * K;
    printf("\nCONV2D_S8 3x3 56x56x64 -> 64, stride 1, pad 1 (im2col GEMM %ux%ux%u, %.1f MMAC)\n", M, N, K, macs / 1e6);
    int8_t *in = malloc((size_t)56 * 56 * 64), *wt = malloc((size_t)K * N), *out = malloc((size_t)M * N);
    int8_t *col = malloc((size_t)M * K);
    C = malloc((size_t)M * N * 4), D = malloc((size_t)M * N * 4);
    fill(in, (size_t)56 * 56 * 64, 3);
    fill(wt, (size_t)K * N, 4);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        /* the model's functional path: im2col, then the int8 kernel */
        for (uint32_t y = 0; y < oh; y++)
            for (uint32_t x = 0; x < ow; x++)
                for (uint32_t ky = 0; ky < 3; ky++)
                    for (uint32_t kx = 0; kx < 3; kx++) {
                        int iy = (int)y + (int)ky - 1, ix = (int)x + (int)kx - 1;
                        int8_t *dst = col + ((size_t)y * ow + x) * K + (ky * 3 + kx) * 64;
                        if (iy < 0 || iy >= 56 || ix < 0 || ix >= 56) memset(dst, 0, 64);
                        else memcpy(dst, in + ((size_t)iy * 56 + (size_t)ix) * 64, 64);
                    }
        npk_gemm_s8s32(&ws, M, N, K, col, K, wt, N, C, N);
        t[r] = now() - t0;
    }
    kern = summarize(t, reps);
    row("functional compute (im2col + int8 kernel)", kern, macs);
    npk_v0_read_counters(v, &c0);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        if (npk_v0_conv2d(v, &cv, in, wt, out, 0)) {
            fprintf(stderr, "bench_v0: %s\n", npk_errmsg());
            return 1;
        }
        t[r] = now() - t0;
    }
    row("device path (driver + DMA + compute)", summarize(t, reps), macs);
    modeled(v, &c0, reps, macs);
    stat3 kg = time_kernel(M, N, K, col, wt, C);
    row("int8 kernel alone on the im2col GEMM", kg, macs);
    dnnl_compare("conv", M, N, K, col, wt, C, D, macs, kg);
    free(in), free(wt), free(out), free(col), free(C), free(D);
    npk_v0_close(v);
    npk_port_close(p);
    npk_gemm_ws_free(&ws);
    return 0;
}
