// SPDX-License-Identifier: MIT
/* pccx figures: modeled device time and host simulation speed of a decode
 * GEMV (weight-bandwidth bound), a prefill GEMM and a softmax, at the
 * default 19.2 GB/s and at 10.5 GB/s effective (ddr_eff=0.55). Prints
 * numbers; asserts nothing. */
#include "npukit/npu.h"
#include "npukit/pccx.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run(const char *opts, unsigned N, unsigned K, unsigned M) {
    npk_port *p;
    npk_pccx *d;
    npk_pccx_cfg cfg = {.ws_bytes = (uint64_t)N * K / 2 + (uint64_t)N * 4 + 4096};
    if (npk_port_open(&p, "sim", "pccx", opts) || npk_pccx_open(&d, p, &cfg)) {
        fprintf(stderr, "bench_pccx: %s\n", npk_errmsg());
        exit(1);
    }
    float *w = malloc(sizeof *w * N * K), *x = malloc(sizeof *x * K * M);
    for (size_t i = 0; i < (size_t)N * K; i++) w[i] = (float)((i * 2654435761u) % 15) - 7;
    for (size_t i = 0; i < (size_t)K * M; i++) x[i] = (float)(i % 7) / 7;
    npk_pccx_wmat wm;
    if (npk_pccx_wmat_upload(d, w, N, K, 0, &wm) || npk_pccx_write_f32(d, 0, x, (size_t)K * M) ||
        npk_pccx_stats_clear(d)) {
        fprintf(stderr, "bench_pccx: %s\n", npk_errmsg());
        exit(1);
    }
    double t0 = now();
    int rc = M == 1 ? npk_pccx_gemv_w(d, 60000, 0, 1, &wm, 0) : npk_pccx_gemm_w(d, 60000, 0, M, &wm, 0);
    if (!rc) rc = npk_pccx_sync(d);
    double t1 = now();
    npk_pccx_stats st;
    if (rc || npk_pccx_stats_get(d, &st)) {
        fprintf(stderr, "bench_pccx: %s\n", npk_errmsg());
        exit(1);
    }
    double us = st.cycles / 400.0;
    printf("%-4s M=%-4u N=%-5u K=%-5u %-14s  %9llu cycles = %8.1f us modeled, %6.1f GB/s weights, %7.1f GMAC/s; host sim %.3f s\n",
           M == 1 ? "GEMV" : "GEMM", M, N, K, opts ? opts : "default", (unsigned long long)st.cycles, us,
           st.ws_bytes / (us * 1e3), st.macs / (us * 1e3), t1 - t0);
    free(w);
    free(x);
    npk_pccx_close(d);
    npk_port_close(p);
}

int main(void) {
    run(NULL, 4096, 4096, 1);
    run("ddr_eff=0.55", 4096, 4096, 1);
    run(NULL, 64, 64, 1);
    run(NULL, 512, 64, 1);
    run(NULL, 1024, 1024, 128);
    return 0;
}
