// SPDX-License-Identifier: MIT
/* bench_e1: simulated MMIO accesses per second and GEMM tiles per second
 * through the in-process port (issue 2's figures). Each figure is the
 * median of repeated runs, with min and max. Not a test: it prints only.
 *
 * usage: bench_e1 [REPEATS]
 */
#include "npukit/e1.h"
#include "npukit/npu.h"
#include "ops/ref_e1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void summary(const char *name, double *v, int n, const char *unit) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    printf("%-48s median %12.0f %s  (min %.0f, max %.0f, %d runs)\n", name, v[n / 2], unit, v[0], v[n - 1], n);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    if (reps < 1 || reps > 1000) reps = 7;
    npk_port *p;
    npk_e1 *e;
    if (npk_port_open(&p, "sim", "e1", NULL) || npk_e1_open(&e, p)) {
        fprintf(stderr, "bench_e1: %s\n", npk_errmsg());
        return 1;
    }
    double *mmio = calloc((size_t)reps, sizeof(double)), *tiles = calloc((size_t)reps, sizeof(double)),
           *scal = calloc((size_t)reps, sizeof(double)), *cpu = calloc((size_t)reps, sizeof(double));
    const int n_mmio = 2000000, n_tiles = 100000, n_scalar = 200000;
    int8_t A[12] = {1, -2, 3, -4, 5, -6, 7, -8, 9, 10, -11, 12}; /* A[3][4] */
    int8_t B[12] = {9, 8, 7, 6, 5, 4, 3, 2, 1, -1, -2, -3};     /* B[4][3] */
    int32_t C[9], G[9];
    volatile uint32_t sink = 0;
    for (int r = 0; r < reps; r++) {
        /* 1. raw register accesses: half writes (OP_A), half reads (RESULT) */
        double t0 = now();
        for (int i = 0; i < n_mmio / 2; i++) {
            uint32_t v;
            npk_port_write32(p, E1_REG_OP_A, (uint32_t)i);
            npk_port_read32(p, E1_REG_RESULT, &v);
            sink += v;
        }
        mmio[r] = n_mmio / (now() - t0);
        /* 2. GEMM tiles through the driver: stage A|B, run 3x3x4 int8 (36 cycles), read C */
        t0 = now();
        for (int i = 0; i < n_tiles; i++) {
            A[0] = (int8_t)i;
            if (npk_e1_gemm_tile(e, 0, 3, 3, 4, A, B, C)) {
                fprintf(stderr, "bench_e1: %s\n", npk_errmsg());
                return 1;
            }
        }
        tiles[r] = n_tiles / (now() - t0);
        /* 3. scalar DOT4_S8 commands through the driver */
        t0 = now();
        for (int i = 0; i < n_scalar; i++) {
            npk_e1_result res;
            npk_e1_scalar(e, E1_OP_DOT4_S8, (uint32_t)i, 0x01020304u, 0, 0, &res);
            sink += res.result;
        }
        scal[r] = n_scalar / (now() - t0);
        /* baseline: the same tiles on the CPU reference */
        t0 = now();
        for (int i = 0; i < n_tiles; i++) {
            A[0] = (int8_t)i;
            npk_ref_e1_matmul(A, B, G, 3, 3, 4);
            sink += (uint32_t)G[0];
        }
        cpu[r] = n_tiles / (now() - t0);
    }
    npk_ref_e1_matmul(A, B, G, 3, 3, 4);
    if (memcmp(C, G, sizeof(int32_t) * 9)) fprintf(stderr, "bench_e1: last tile differs from the reference!\n");
    printf("e1 through the in-process port (1 GHz model), %d repeats\n", reps);
    double mmio_med, tile_med, cpu_med;
    summary("simulated MMIO accesses per second", mmio, reps, "acc/s");
    mmio_med = mmio[reps / 2];
    summary("GEMM_S8 3x3x4 tiles per second (driver)", tiles, reps, "tiles/s");
    tile_med = tiles[reps / 2];
    summary("DOT4_S8 scalar commands per second (driver)", scal, reps, "cmd/s");
    summary("baseline: CPU reference 3x3x4 tiles per second", cpu, reps, "tiles/s");
    cpu_med = cpu[reps / 2];
    printf("ratio: device tiles/s vs CPU reference tiles/s = %.4f\n", tile_med / cpu_med);
    printf("simulated cycles run: %llu (%.1f M simulated cycles/s of tile work)\n",
           (unsigned long long)npk_port_cycles(p), 36.0 * tile_med / 1e6);
    (void)mmio_med;
    free(mmio);
    free(tiles);
    free(scal);
    free(cpu);
    npk_e1_close(e);
    npk_port_close(p);
    return (int)(sink & 0);
}
