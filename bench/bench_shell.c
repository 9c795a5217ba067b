// SPDX-License-Identifier: MIT
/* Benchmark (not a test): a 512x512x512 INT8 and BF16 GEMM through the shell
 * driver on the in-process model. Prints, for each dtype, the median / min /
 * max host time of the device run next to the CPU reference in the same run,
 * and the modeled device time (cycles at the device clock). Checks the device
 * result equals the reference (bit-exact) before reporting. */
#include "npukit/npu.h"
#include "npukit/shell.h"
#include "npukit/sim.h"
#include "ops/ref_float.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 512
#define REPS 5

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void stats(const char *what, double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    printf("  %-26s median %9.3f ms   min %9.3f ms   max %9.3f ms\n", what, v[n / 2] * 1e3, v[0] * 1e3, v[n - 1] * 1e3);
}

int main(void) {
    npk_port *p;
    if (npk_port_open(&p, "sim", "shell", NULL)) {
        fprintf(stderr, "bench_shell: %s\n", npk_errmsg());
        return 1;
    }
    npk_shell *sh;
    if (npk_shell_open(&sh, p, NULL)) {
        fprintf(stderr, "bench_shell: %s\n", npk_errmsg());
        return 1;
    }
    uint32_t seed = 1;
    uint8_t *a = malloc(2 * N * N), *b = malloc(2 * N * N);
    uint32_t *c = malloc(4 * N * N), *r = malloc(4 * N * N);
    int fail = 0;
    for (int dt = 0; dt < 2; dt++) {
        unsigned dtype = dt ? SHELL_BF16 : SHELL_INT8;
        for (size_t i = 0; i < (size_t)N * N; i++) {
            seed = seed * 1664525u + 1013904223u;
            if (dt) {
                uint16_t h = npk_bf16_from_f64(((double)(seed >> 16 & 1023) - 512.0) / 256.0);
                memcpy(a + 2 * i, &h, 2);
                seed = seed * 1664525u + 1013904223u;
                h = npk_bf16_from_f64(((double)(seed >> 16 & 1023) - 512.0) / 256.0);
                memcpy(b + 2 * i, &h, 2);
            } else {
                a[i] = (uint8_t)(seed >> 24);
                b[i] = (uint8_t)(seed >> 16);
            }
        }
        double dev[REPS], ref[REPS];
        uint64_t cycles = 0;
        for (int rep = 0; rep < REPS; rep++) {
            npk_shell_gemm_desc g = {0};
            g.dtype = dtype;
            g.m = g.n = g.k = N;
            uint64_t c0 = npk_port_cycles(p);
            uint32_t g0 = 0, g1 = 0;
            npk_port_read32(p, SHELL_PERF_GEMM_CYCLES, &g0);
            double t0 = now_s();
            int rc = npk_shell_gemm_host(sh, &g, a, b, NULL, c);
            double t1 = now_s();
            npk_port_read32(p, SHELL_PERF_GEMM_CYCLES, &g1);
            if (rc) {
                fprintf(stderr, "bench_shell: %s\n", npk_errmsg());
                return 1;
            }
            (void)c0;
            cycles = g1 - g0;
            npk_ref_gemm rg = {(int)dtype, 0, 0, 0, N, N, N, a, (size_t)N * (dt ? 2 : 1), b, (size_t)N * (dt ? 2 : 1),
                               NULL, (uint8_t *)r, 4 * N, NULL, 0, 0, 1.0f, 0.0f, 0, 0, 0};
            double t2 = now_s();
            if (dt) npk_ref_gemm_run(&rg);
            else npk_ref_gemm_i8(N, N, N, (const int8_t *)a, (const int8_t *)b, NULL, (int32_t *)r);
            double t3 = now_s();
            dev[rep] = t1 - t0;
            ref[rep] = t3 - t2;
            if (memcmp(c, r, 4 * N * N)) {
                fprintf(stderr, "bench_shell: %s device result differs from the reference\n", dt ? "BF16" : "INT8");
                fail = 1;
            }
        }
        printf("%s GEMM %dx%dx%d (%d runs):\n", dt ? "BF16" : "INT8", N, N, N, REPS);
        stats("host, through the device", dev, REPS);
        stats("host, CPU reference", ref, REPS);
        printf("  %-26s %llu cycles = %.3f ms at %.0f MHz (%.1f MACs/cycle)\n", "modeled GEMM engine time",
               (unsigned long long)cycles, (double)cycles / (double)npk_port_hz(p) * 1e3, (double)npk_port_hz(p) / 1e6,
               (double)N * N * N / (double)cycles);
    }
    free(a);
    free(b);
    free(c);
    free(r);
    npk_shell_close(sh);
    npk_port_close(p);
    return fail;
}
