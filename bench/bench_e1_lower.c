// SPDX-License-Identifier: MIT
/* Benchmark of the e1 lowerings (figures, not a test): an int8 matmul
 * 64x64x64 (descriptor-ring batches and one MMIO start per tile) and one
 * modern_decoder_block, each next to the CPU reference in the same run.
 * Host wall time: median [min, max] of repeated runs; simulated cycles, MMIO
 * accesses and ring batches are per run (deterministic).
 *
 * usage: bench_e1_lower [--port SPEC] [--reps N] */
#include "npukit/e1.h"
#include "npukit/e1_lower.h"
#include "ops/ref_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int dcmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void stats(const char *what, double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, dcmp);
    printf("  %-34s median %10.3f ms  [min %10.3f, max %10.3f]  (%d runs)\n", what, t[n / 2] * 1e3, t[0] * 1e3,
           t[n - 1] * 1e3, n);
}

static uint32_t rs = 42;
static int32_t rnd(int lo, int hi) {
    rs ^= rs << 13;
    rs ^= rs >> 17;
    rs ^= rs << 5;
    return lo + (int32_t)(rs % (uint32_t)(hi - lo + 1));
}
static void fill(npk_ltensor *t, int lo, int hi) {
    for (size_t i = 0; i < npk_lt_numel(t); i++) t->data[i] = rnd(lo, hi);
}

static void evidence_line(const npk_lower_evidence *ev) {
    uint64_t d = 0, q = 0;
    for (int i = 0; i < E1_NUM_OPCODES; i++) {
        d += ev->direct[i];
        q += ev->desc[i];
    }
    printf("  per run: %llu tiles (%ux%ux%u), %llu direct commands, %llu descriptors in %llu ring batches,\n"
           "           %llu simulated cycles (%.1f us at 1 GHz), %llu MMIO accesses, %llu GEMM MACs\n",
           (unsigned long long)ev->tiles, ev->tile_m, ev->tile_n, ev->tile_k, (unsigned long long)d,
           (unsigned long long)q, (unsigned long long)ev->batches, (unsigned long long)ev->cycles, ev->cycles / 1e3,
           (unsigned long long)ev->mmio, (unsigned long long)ev->macs);
}

int main(int argc, char **argv) {
    const char *spec = "sim";
    int reps = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--port") && i + 1 < argc) spec = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_e1_lower [--port SPEC] [--reps N]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 1000) reps = 5;
    npk_port *p;
    npk_e1 *e;
    npk_lower *L;
    if (npk_port_open(&p, spec, "e1", NULL) || npk_e1_open(&e, p) || npk_lower_new(&L, e)) {
        fprintf(stderr, "bench_e1_lower: %s\n", npk_errmsg());
        return 1;
    }
    double *t = calloc((size_t)reps, sizeof *t);
    printf("e1 lowering benchmark (%s port)\n", npk_port_kind(p));

    /* ---- int8 matmul 64x64x64 ---- */
    npk_ltensor A, B;
    npk_lt_alloc2(&A, 64, 64);
    npk_lt_alloc2(&B, 64, 64);
    fill(&A, -128, 127);
    fill(&B, -128, 127);
    npk_lower_out o, g;
    npk_lower_evidence ev;
    for (int batching = 1; batching >= 0; batching--) {
        npk_lower_set_batching(L, batching);
        printf("int8 matmul 64x64x64, %s:\n", batching ? "descriptor-ring batches" : "one MMIO start per tile");
        int ok = 1;
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            if (npk_lower_matmul(L, 0, &A, &B, &o, &g, &ev)) {
                fprintf(stderr, "matmul: %s\n", npk_errmsg());
                return 1;
            }
            t[r] = now() - t0;
            ok &= !memcmp(o.t[0].data, g.t[0].data, 64 * 64 * 4);
            npk_lower_out_free(&o);
            npk_lower_out_free(&g);
        }
        stats("host wall time (NPU path + golden)", t, reps);
        evidence_line(&ev);
        printf("  result %s the golden\n", ok ? "matches" : "DIFFERS FROM");
    }
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        npk_golden_matmul(0, &A, &B, &g);
        t[r] = now() - t0;
        npk_lower_out_free(&g);
    }
    stats("CPU reference matmul", t, reps);
    npk_lower_set_batching(L, 1);

    /* ---- one modern decoder block: T 8, D 16, F 32 ---- */
    unsigned T = 8, D = 16, F = 32;
    npk_ltensor x, n1, n2, pk, ab, cs, sn, su, sg, sd;
    npk_lt_alloc2(&x, T, D);
    npk_lt_alloc(&n1, 1, &D);
    npk_lt_alloc(&n2, 1, &D);
    npk_lt_alloc2(&pk, D, 3 * D);
    npk_lt_alloc(&ab, 1, &D);
    unsigned h = D / 2;
    npk_lt_alloc(&cs, 1, &h);
    npk_lt_alloc(&sn, 1, &h);
    npk_lt_alloc2(&su, D, F);
    npk_lt_alloc2(&sg, D, F);
    npk_lt_alloc2(&sd, F, D);
    fill(&x, -50, 50);
    fill(&n1, 30, 80);
    fill(&n2, 30, 80);
    fill(&pk, -20, 20);
    fill(&ab, -5, 5);
    fill(&cs, 60, 120);
    fill(&sn, -60, 60);
    fill(&su, -20, 20);
    fill(&sg, -20, 20);
    fill(&sd, -1, 1);
    npk_decoder_args da;
    npk_decoder_args_default(&da);
    da.input = &x;
    da.norm1_weight = &n1;
    da.norm2_weight = &n2;
    da.packed_qkv_weight = &pk;
    da.attention_bias = &ab;
    da.cos = &cs;
    da.sin = &sn;
    da.swiglu_up_weight = &su;
    da.swiglu_gate_weight = &sg;
    da.swiglu_down_weight = &sd;
    da.attention_mask_mode = NPK_MASK_CAUSAL;
    da.projection_shift = 5;
    da.qk_score_shift = 9;
    da.swiglu_requant_shift = 6;
    da.swiglu_gate_shift = 9;
    da.swiglu_silu = 1;
    printf("modern_decoder_block T=%u D=%u F=%u (packed QKV, causal, SiLU gate):\n", T, D, F);
    int ok = 1;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        if (npk_lower_modern_decoder_block(L, &da, &o, &g, &ev)) {
            fprintf(stderr, "decoder block: %s\n", npk_errmsg());
            return 1;
        }
        t[r] = now() - t0;
        ok &= !memcmp(o.t[0].data, g.t[0].data, T * D * 4);
        npk_lower_out_free(&o);
        npk_lower_out_free(&g);
    }
    stats("host wall time (NPU path + golden)", t, reps);
    evidence_line(&ev);
    printf("  result %s the golden\n", ok ? "matches" : "DIFFERS FROM");
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        npk_golden_modern_decoder_block(&da, &g);
        t[r] = now() - t0;
        npk_lower_out_free(&g);
    }
    stats("CPU reference decoder block", t, reps);

    npk_ltensor *all[] = {&A, &B, &x, &n1, &n2, &pk, &ab, &cs, &sn, &su, &sg, &sd};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) npk_lt_free(all[i]);
    free(t);
    npk_lower_free(L);
    npk_e1_close(e);
    npk_port_close(p);
    return 0;
}
