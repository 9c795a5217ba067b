// SPDX-License-Identifier: MIT
/* npu bench, the v0 family: v0-gemm-1024 (int8 GEMM versus oneDNN) and
 * v0-resnet50-layers (modeled cycles versus measured Gemmini). */
#include "bench.h"
#include "bench_suite.h"
#include "npukit/threads.h"
#include "npukit/e1_lower.h"
#include "npukit/gemm.h"
#include "npukit/v0.h"
#include "ops/ref_float.h"
#include "ops/ref_ops.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The device energy over the timed first pass (docs/energy.md). */
typedef struct v0_energy_run {
    npk_energy e0, e1;
    npk_area a;
    uint32_t nm;
    int has;
} v0_energy_run;

/* Energy per GEMM (the dynamic energy of the repeats over their count, plus
 * the leakage over one GEMM's cycles), TOPS/W and the area. */
static void v0_energy_figs(ctx *c, const v0_energy_run *en, uint64_t cyc, uint64_t dm) {
    double uj = ((npk_energy_total_pj(&en->e1) - npk_energy_total_pj(&en->e0)) / (double)c->repeat +
                 npk_leak_pj(npk_area_total_mm2(&en->a), cyc, NPK_V0_HZ, en->nm)) / 1e6;
    char name[96];
    snprintf(name, sizeof name, "v0 modeled energy per GEMM (%u nm, docs/energy.md)", en->nm);
    bench_add_modeled(c, "uJ", uj, name);
    bench_add_modeled(c, "TOPS/W", (double)dm * 2.0 / (uj * 1e-6) / 1e12, "v0 modeled TOPS/W");
    bench_add_modeled(c, "mm2", npk_area_total_mm2(&en->a), "v0 modeled area");
}


/* ---- v0: int8 GEMM 1024^3 versus oneDNN ------------------------------------ */

/* The v0 product C of the n x n operands A, B against the golden (the CPU
 * reference npk_ref_gemm_i8: plain loops, exact int32 sums); prints the verdict.
 * 0, or 1 (bench failed) when they differ. */
static int check_v0_exact(ctx *c, uint32_t n, const int8_t *A, const int8_t *B, const int32_t *C) {
    size_t nn = (size_t)n * n, off = 0;
    int32_t *g = malloc(nn * sizeof *g);
    if (!g) {
        npk_err(NPK_ENOMEM, "out of memory");
        return bench_fail(c, "golden"), 1;
    }
    npk_ref_gemm_i8(n, n, n, A, B, NULL, g);
    for (size_t i = 0; i < nn; i++) off += g[i] != C[i];
    free(g);
    if (!c->json) printf("  %-46s %s\n", "v0 output == exact product (golden)", off ? "NO" : "yes (bit-exact)");
    if (off) {
        npk_err(NPK_EDEVICE, "the v0 result differs from the golden in %zu of %zu elements", off, nn);
        return bench_fail(c, "check"), 1;
    }
    return 0;
}

/* One v0 run (*gmacs of wall time, *cpu of the thread's CPU time when cpu) or,
 * when dnnl, one oneDNN run. 0, or 1 (bench failed). */
static int gemm_once(ctx *c, npk_v0 *v, uint32_t n, const int8_t *A, const int8_t *B, int32_t *C, int dnnl,
                     double *gmacs, double *cpu) {
    double t0 = bench_now(), c0 = bench_cpu_now();
    if (!dnnl && npk_v0_matmul(v, n, n, n, A, B, C, 0)) return bench_fail(c, "v0 matmul"), 1;
    if (dnnl && bench_dnnl_gemm_s8((int)n, (int)n, (int)n, A, B, C)) {
        npk_err(NPK_EIO, "dnnl_gemm_s8s8s32 failed");
        return bench_fail(c, "oneDNN"), 1;
    }
    *gmacs = (double)n * n * n / (bench_now() - t0) / 1e9;
    if (cpu) *cpu = (double)n * n * n / (bench_cpu_now() - c0) / 1e9;
    return 0;
}

/* One pass at `threads`: the v0 matmul (tv, GMAC/s per run) and, when dn,
 * oneDNN's int8 GEMM on the same operands into D (td). At 1 thread the two
 * alternate run by run, so that a change of the shared machine's state
 * between runs (another process, a neighbour on the host) falls on both sides
 * alike instead of on one block of runs; at more threads each side runs as a
 * block (a pool polls for its next job for a while after a run, npukit's
 * 300 us, OpenMP's longer, which would take a core from the other side's next
 * run). cv, cd (or NULL): GMAC/s of the thread's CPU time of the alternating
 * runs (both sides on the calling thread at 1 thread; a shared machine's waits
 * for a core are not in it). 0, or 1 (bench failed). */
static int gemm_pass(ctx *c, npk_v0 *v, uint32_t n, const int8_t *A, const int8_t *B, int32_t *C, int32_t *D,
                     int threads, int dn, double *tv, double *td, double *cv, double *cd) {
    int alt = dn && threads == 1;
    if (alt) bench_dnnl_gemm_s8((int)n, (int)n, (int)n, A, B, D); /* warm-up: JIT */
    for (int r = 0; r < c->repeat; r++) {
        bench_progress(c, alt ? "v0 matmul / oneDNN" : "v0 matmul", r, c->repeat);
        if (gemm_once(c, v, n, A, B, C, 0, &tv[r], cv ? &cv[r] : NULL) ||
            (alt && gemm_once(c, v, n, A, B, D, 1, &td[r], cd ? &cd[r] : NULL)))
            return 1;
    }
    cli_progress_end();
    if (!dn || alt) return 0;
    bench_dnnl_gemm_s8((int)n, (int)n, (int)n, A, B, D); /* warm-up: JIT, threads */
    for (int r = 0; r < c->repeat; r++) {
        bench_progress(c, "oneDNN", r, c->repeat);
        if (gemm_once(c, v, n, A, B, D, 1, &td[r], NULL)) return 1;
    }
    cli_progress_end();
    return 0;
}

/* oneDNN's output against v0's (the golden, checked before): printed, never a
 * failure (at an ISA without VNNI its int8 kernel sums two products in 16 bits,
 * vpmaddubsw, and saturates; named, not blamed on v0: issue 26). The reason
 * follows oneDNN's own effective ISA, not the host's: ONEDNN_MAX_CPU_ISA=AVX2
 * on an AVX-512 VNNI host gives the saturating kernel too. */
static void print_dnnl_exact(const ctx *c, uint32_t n, const int32_t *C, const int32_t *D) {
    size_t off = 0;
    for (size_t i = 0; i < (size_t)n * n; i++) off += C[i] != D[i];
    if (c->json) return;
    const char *isa = bench_dnnl_isa();
    int vnni = isa && (strstr(isa, "vnni") || strstr(isa, "bf16") || strstr(isa, "amx"));
    if (!off)
        printf("  %-46s %s\n", "oneDNN output == exact product", "yes (bit-exact)");
    else
        printf("  %-46s NO: %zu of %zu elements differ (oneDNN inexact at its ISA %s%s)\n",
               "oneDNN output == exact product", off, (size_t)n * n, isa ? isa : "?",
               vnni ? "" : ": no VNNI, its int8 kernel sums pairs of products in 16 bits, which saturate");
}

/* Why long: the two passes (1 thread, --threads) of v0 and oneDNN, the modeled
 * figures between them, and the cleanup of every resource on each exit. */
int bench_v0_gemm(ctx *c) {
    const uint32_t n = c->size ? c->size : 1024;
    c->cur_size = n;
    int rc = 1, dnnl = bench_dnnl_available(), deflt = dnnl ? bench_dnnl_threads() : 0;
    int8_t *A = malloc((size_t)n * n), *B = malloc((size_t)n * n);
    int32_t *C = malloc((size_t)n * n * 4), *D = malloc((size_t)n * n * 4);
    double *t = calloc((size_t)c->repeat * 5, sizeof *t), *td[2] = {t ? t + c->repeat : NULL,
                                                                    t ? t + 2 * (size_t)c->repeat : NULL};
    double *cv = t ? t + 3 * (size_t)c->repeat : NULL, *cd = t ? t + 4 * (size_t)c->repeat : NULL;
    npk_port *p = NULL;
    npk_v0 *v = NULL;
    npk_trace *tr = NULL;
    if (!A || !B || !C || !D || !t) {
        npk_err(NPK_ENOMEM, "out of memory");
        bench_fail(c, "setup");
        goto out;
    }
    for (size_t i = 0; i < (size_t)n * n; i++) A[i] = bench_rnd8();
    for (size_t i = 0; i < (size_t)n * n; i++) B[i] = bench_rnd8();
    npk_v0_config vc;
    npk_v0_config_default(&vc);
    vc.cpu_exec = npk_v0_cpu_execute;
    if (npk_port_open(&p, "sim", npk_v0_class.name, NULL) || npk_v0_open(&v, p, &vc)) {
        bench_fail(c, "v0");
        goto out;
    }
    if (npk_v0_matmul(v, n, n, n, A, B, C, 0)) { /* warm-up */
        bench_fail(c, "v0 matmul");
        goto out;
    }
    /* 1 thread, then --threads: v0 (the model's GEMMs split over the worker pool,
     * include/npukit/threads.h; the same bytes at any count) and oneDNN at the
     * same count, set explicitly each time (never oneDNN's default, which
     * collapses on a loaded machine) and restored after; without OpenMP its
     * count cannot be set: one pass at its default */
    npk_v0_counters c0, c1;
    char vname[2][80] = {"", ""}, dname[2][80] = {"", ""};
    int dset[2] = {0, 0};
    v0_energy_run en = {0};
    for (int pass = 0; pass < 2; pass++) {
        int want = pass ? c->threads : 1;
        if (pass && want <= 1) break;
        npk_threads_set(want);
        dset[pass] = dnnl && bench_dnnl_set_threads(want) > 0;
        int dn = dnnl && (dset[pass] || !pass);
        if (!pass) npk_v0_read_counters(v, &c0), en.has = npk_port_energy(p, &en.e0, &en.a, &en.nm) == 0;
        /* CPU time only where oneDNN is known to run on this thread alone (its OpenMP count set to 1) */
        int cpu = !pass && dset[0];
        if (gemm_pass(c, v, n, A, B, C, D, want, dn, t, td[pass], cpu ? cv : NULL, cpu ? cd : NULL)) goto out;
        if (!pass) npk_v0_read_counters(v, &c1);
        if (!pass && en.has) en.has = npk_port_energy(p, &en.e1, &en.a, &en.nm) == 0;
        if (check_v0_exact(c, n, A, B, C)) goto out;
        c->cur_threads = want;
        snprintf(vname[pass], sizeof vname[pass], "v0 int8 GEMM %u^3 (driver+DMA+compute), %d thread%s", n, want,
                 want == 1 ? "" : "s");
        bench_add_samples(c, "npu", "GMAC/s", t, c->repeat, vname[pass]);
        if (!dn) continue;
        if (dset[pass])
            snprintf(dname[pass], sizeof dname[pass], "baseline: %s int8 GEMM, %d thread%s", bench_dnnl_version(), want,
                     want == 1 ? "" : "s");
        else
            snprintf(dname[pass], sizeof dname[pass], "baseline: %s int8 GEMM, its default threads",
                     bench_dnnl_version());
    }
    uint64_t cyc = (uint32_t)(c1.perf_cycles - c0.perf_cycles) / (uint64_t)c->repeat;
    uint64_t dm = (c1.perf_macs - c0.perf_macs) / (uint64_t)c->repeat;
    bench_add_modeled(c, "ms", (double)cyc / (double)NPK_V0_HZ * 1e3, "v0 modeled device time (PERF_CYCLES)");
    bench_add_modeled(c, "%", 100.0 * (double)dm / (256.0 * (double)cyc), "v0 modeled array utilization");
    bench_add_modeled(c, "TOPS", (double)dm * 2.0 / ((double)cyc / (double)NPK_V0_HZ) / 1e12, "v0 modeled TOPS");
    if (en.has) v0_energy_figs(c, &en, cyc, dm);
    if (!dnnl) {
        if (!c->json) printf("  %-46s %s\n", "oneDNN int8 GEMM", bench_dnnl_version());
    } else {
        for (int pass = 0; pass < 2 && dname[pass][0]; pass++) {
            c->cur_threads = dset[pass] ? (pass ? c->threads : 1) : 0;
            bench_add_samples(c, "baseline", "GMAC/s", td[pass], c->repeat, dname[pass]);
        }
        if (dset[0]) {
            char vc[96], dc[96];
            c->cur_threads = 1;
            snprintf(vc, sizeof vc, "v0 int8 GEMM %u^3 (driver+DMA+compute), CPU time, 1 thread", n);
            snprintf(dc, sizeof dc, "baseline: %s int8 GEMM, CPU time, 1 thread", bench_dnnl_version());
            bench_add_samples(c, "npu", "GMAC/s", cv, c->repeat, vc);
            bench_add_samples(c, "baseline", "GMAC/s", cd, c->repeat, dc);
            bench_add_ratio(c, "v0 / oneDNN throughput, CPU time, 1 thread", vc, dc, "higher");
        }
        print_dnnl_exact(c, n, C, D);
        bench_add_ratio(c, dset[0] ? "v0 / oneDNN throughput, equal threads (1)" : "v0 / oneDNN throughput", vname[0],
                  dname[0], "higher");
        if (dname[1][0] && vname[1][0]) {
            char rn[80];
            snprintf(rn, sizeof rn, "v0 / oneDNN throughput, equal threads (%d)", c->threads);
            bench_add_ratio(c, rn, vname[1], dname[1], "higher");
        }
    }
    if (c->trace_path) {
        tr = npk_trace_new();
        npk_port_set_trace(p, tr);
        if (npk_v0_matmul(v, n, n, n, A, B, C, 0)) {
            bench_fail(c, "traced v0 matmul");
            goto out;
        }
        npk_port_set_trace(p, NULL);
        if (cli_write_trace(tr, c->trace_path)) {
            bench_fail(c, "trace");
            goto out;
        }
    }
    rc = 0;
out:
    npk_threads_set(0);
    if (deflt > 0) bench_dnnl_set_threads(deflt);
    cli_progress_end();
    if (p) npk_port_set_trace(p, NULL);
    npk_trace_free(tr);
    if (v) npk_v0_close(v);
    npk_port_close(p);
    free(A), free(B), free(C), free(D), free(t);
    return rc;
}

/* ---- v0: ResNet-50 layer shapes versus measured Gemmini cycles ---------------- */

/* The columns of shared/data/gemmini-resnet50-layers/measured.csv the bench reads. */
enum { L_C, L_K, L_P, L_Q, L_R, L_S, L_STRIDE, L_MESH, L_M1E, L_M1I, L_M1W, L_M2E, L_M2I, L_M2W, L_AUTO, L_ENERGY,
       L_AREA, L_TILING, L_NCOL };
static const char *const layer_cols[L_NCOL] = {
    "prob.C",          "prob.K",           "prob.P",          "prob.Q",          "prob.R",
    "prob.S",          "prob.Hstride",     "arch.meshX",      "arch.mem1_entries", "arch.mem1_instances",
    "arch.mem1_word-bits", "arch.mem2_entries", "arch.mem2_instances", "arch.mem2_word-bits",
    "target.gemmini_auto_cycle", "target.energy", "target.area", "dse.auto_tiling"};

/* One layer row as the descriptor v0 runs for it: a convolution (same
 * padding (R-1)/2, input H = P x stride), or for a 1x1 layer on a 1x1 output
 * (the FC layer) the matmul 1 x K x C that Gemmini's software runs for it
 * (tiled_matmul_auto: the row's recorded tiling is a matmul tiling). */
static npk_v0_desc layer_desc(const double *v, npk_v0_conv *cv) {
    uint32_t R = (uint32_t)v[L_R], st = (uint32_t)v[L_STRIDE];
    *cv = (npk_v0_conv){.h = (uint32_t)v[L_P] * st, .w = (uint32_t)v[L_Q] * st, .cin = (uint32_t)v[L_C],
                        .cout = (uint32_t)v[L_K], .ksize = R, .stride_h = st, .stride_w = st,
                        .pad_h = (R - 1) / 2, .pad_w = (R - 1) / 2, .dil = 1};
    if (v[L_P] == 1 && v[L_Q] == 1 && R == 1)
        return npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 1, cv->cout, cv->cin, 0, 0, 0, 0, 0, 0, 0);
    return npk_v0_desc_conv(0, NPK_V0_F_SIGNED, cv, 0, 0, 0, 0, 0, 0, 0);
}

/* The tiling Gemmini's software picks for a layer (geometry t), in the
 * notation of measured.csv's dse.auto_tiling: conv
 * krows_kcols_ocols_orows_kchs_ochs_batches, matmul 1_1_I_1_K_J_1 (I, K, J
 * in elements). */
static void layer_tiling(const npk_v0_timing *t, const npk_v0_desc *d, const npk_v0_conv *cv, char *out, size_t n) {
    if (npk_v0_desc_op(d) == NPK_V0_OP_MATMUL_S8) {
        npk_v0_matmul_tiling m;
        npk_v0_gemmini_matmul_tiling(t, 1, cv->cout, cv->cin, &m);
        snprintf(out, n, "1_1_%u_1_%u_%u_1", m.ti * t->rows, m.tk * t->rows, m.tj * t->rows);
        return;
    }
    npk_v0_conv_tiling g;
    if (npk_v0_gemmini_conv_tiling(t, cv, &g)) {
        snprintf(out, n, "none");
        return;
    }
    snprintf(out, n, "%u_%u_%u_%u_%u_%u_1", g.krows, g.kcols, g.ocols, g.orows, g.kchs, g.ochs);
}

/* The name of a layer's energy figure with its breakdown (pJ classes in uJ). */
static const char *nm_energy(char *buf, size_t n, int row, const npk_energy *e) {
    snprintf(buf, n,
             "L%02d v0 energy (MAC %.1f, PE regs %.1f, scratchpad %.1f, accumulator %.1f, DRAM %.1f, DMA %.1f, "
             "leakage %.1f uJ)",
             row, e->compute_pj / 1e6, e->reg_pj / 1e6, e->sram_pj / 1e6, e->acc_pj / 1e6, e->dram_pj / 1e6,
             e->dma_pj / 1e6, e->leak_pj / 1e6);
    return buf;
}

/* Each layer of measured.csv through v0's timing model: the seed model on the
 * row's array and SRAM columns, and the Gemmini loop model (gemmini_loop=1,
 * the default DRAM: 8 B/cycle, 20 cycles) on the SRAM geometry whose tiling equals the row's recorded
 * dse.auto_tiling (Gemmini's default 256 KiB scratchpad, 64 KiB accumulator;
 * the bench counts the rows whose tiling it reproduces, for that geometry
 * and for the row's arch.mem columns), plus the same model on the arch.mem
 * columns' geometry (sensitivity). docs/v0.md, "ResNet-50 layers". */
int bench_v0_resnet50_layers(ctx *c) {
    char path[1024];
    if (c->data_path) snprintf(path, sizeof path, "%s", c->data_path);
    else snprintf(path, sizeof path, "%s/data/gemmini-resnet50-layers/measured.csv", c->shared);
    uint8_t *data = NULL;
    size_t len = 0;
    if (cli_read_file(path, &data, &len)) return bench_fail(c, path);
    char *text = calloc(len + 1, 1);
    if (!text) {
        free(data);
        npk_err(NPK_ENOMEM, "out of memory");
        return bench_fail(c, "setup");
    }
    memcpy(text, data, len);
    free(data);
    int col[L_NCOL], rc = 0, row = 0, within = 0, within_seed = 0, within_arch = 0, tile_dflt = 0, tile_arch = 0;
    for (int j = 0; j < L_NCOL; j++) col[j] = -1;
    char *save = NULL, *line = strtok_r(text, "\r\n", &save);
    if (line) {
        int k = 0;
        for (char *f = line, *e; f; f = e ? e + 1 : NULL, k++) {
            e = strchr(f, ',');
            size_t fl = e ? (size_t)(e - f) : strlen(f);
            for (int j = 0; j < L_NCOL; j++)
                if (strlen(layer_cols[j]) == fl && !strncmp(f, layer_cols[j], fl)) col[j] = k;
        }
    }
    for (int j = 0; j < L_NCOL && !rc; j++)
        if (col[j] < 0) rc = npk_err(NPK_EINVAL, "%s: no column '%s'", path, layer_cols[j]);
    double logsum = 0, logseed = 0, logarch = 0, loge = 0, elo = 1e300, ehi = 0, area_ratio = 0;
    int e_within = 0;
    while (!rc && (line = strtok_r(NULL, "\r\n", &save)) != NULL) {
        double v[L_NCOL] = {0};
        char rec[40] = "";
        int k = 0;
        for (char *f = line, *e; f; f = e ? e + 1 : NULL, k++) {
            e = strchr(f, ',');
            for (int j = 0; j < L_NCOL; j++)
                if (col[j] == k && j == L_TILING)
                    snprintf(rec, sizeof rec, "%.*s", e ? (int)(e - f) : (int)strlen(f), f);
                else if (col[j] == k)
                    v[j] = strtod(f, NULL);
        }
        for (int j = 0; j < L_NCOL && !rc; j++)
            if (j != L_TILING && !(v[j] > 0 && v[j] < 1e12))
                rc = npk_err(NPK_EINVAL, "%s: row %d: bad %s", path, row + 2, layer_cols[j]);
        if (rc) break;
        npk_v0_conv cv;
        npk_v0_desc d = layer_desc(v, &cv);
        /* the seed model on the row's columns */
        npk_v0_timing t = {.dram_bw = 8, .dram_lat = 20, .rows = (uint32_t)v[L_MESH], .cols = (uint32_t)v[L_MESH],
                           .acc_bytes = (uint32_t)(v[L_M1E] * v[L_M1I] * v[L_M1W] / 8),
                           .spad_bytes = (uint32_t)(v[L_M2E] * v[L_M2I] * v[L_M2W] / 8)};
        if (npk_v0_timing_check(&t)) {
            rc = -1;
            break;
        }
        /* the Gemmini loop model: device option gemmini_loop=1 (everything
         * else v0's defaults = Gemmini's default SRAM; docs/v0.md "Gemmini
         * calibration") */
        npk_v0_timing tg = {.dram_bw = 8, .dram_lat = 20, .rows = t.rows, .cols = t.cols, .gemmini_loop = 1},
                      ta = t;
        ta.gemmini_loop = 1, ta.dram_bw = 8, ta.dram_lat = 20;
        char til[40], tila[40];
        layer_tiling(&tg, &d, &cv, til, sizeof til);
        layer_tiling(&ta, &d, &cv, tila, sizeof tila);
        tile_dflt += !strcmp(til, rec);
        tile_arch += !strcmp(tila, rec);
        uint64_t seed = npk_v0_model_cycles(&d, &t), cyc = npk_v0_model_cycles(&d, &tg),
                 arch = npk_v0_model_cycles(&d, &ta), macs = npk_v0_desc_macs(&d);
        char nm[240], gm[80];
        row++;
        snprintf(nm, sizeof nm, "L%02d c%u k%u %ux%u %ux%u/%u v0 modeled cycles (seed)", row, cv.cin, cv.cout,
                 (uint32_t)v[L_P], (uint32_t)v[L_Q], cv.ksize, cv.ksize, cv.stride_h);
        bench_add_modeled(c, "cycles", (double)seed, nm);
        snprintf(nm, sizeof nm, "L%02d v0 modeled cycles (gemmini_loop=1; tiling %s%s%s)", row, til,
                 strcmp(til, rec) ? " != row " : " = row", strcmp(til, rec) ? rec : "");
        bench_add_modeled(c, "cycles", (double)cyc, nm);
        snprintf(gm, sizeof gm, "L%02d Gemmini tiled_conv_auto cycles (measured)", row);
        bench_add_fig(c, "baseline", "cycles", v[L_AUTO], v[L_AUTO], v[L_AUTO], 1, "%s", gm);
        bench_add_modeled(c, "%", 100.0 * (double)macs / (v[L_MESH] * v[L_MESH] * (double)cyc),
                    "v0 modeled array utilization (Gemmini loop)");
        double ratio = (double)cyc / v[L_AUTO], rs = (double)seed / v[L_AUTO], ra = (double)arch / v[L_AUTO];
        bench_add_fig(c, "ratio", "x", ratio, ratio, ratio, 1, "L%02d v0 Gemmini loop / Gemmini (seed %.3f, arch.mem %.3f)",
                row, rs, ra);
        logsum += log(ratio);
        logseed += log(rs);
        logarch += log(ra);
        within += ratio >= 0.75 && ratio <= 1.25;
        within_seed += rs >= 0.75 && rs <= 1.25;
        within_arch += ra >= 0.75 && ra <= 1.25;
        /* energy and area (docs/energy.md): the seed model's counted
         * accesses on the row's array and SRAM sizes, at the default node
         * (40 nm, the reference's) */
        npk_v0_engine_stats es = {0};
        uint64_t ecyc = npk_v0_model_stats(&d, &t, &es);
        npk_energy en;
        npk_area ar;
        npk_v0_energy(&t, &es, ecyc, NPK_V0_HZ, &en);
        npk_v0_area(&t, &ar);
        double uj = npk_energy_total_pj(&en) / 1e6, er = uj / v[L_ENERGY];
        double amm = ar.array_mm2 + ar.sram_mm2;
        bench_add_modeled(c, "uJ", uj, nm_energy(nm, sizeof nm, row, &en));
        bench_add_fig(c, "baseline", "uJ", v[L_ENERGY], v[L_ENERGY], v[L_ENERGY], 1,
                "L%02d Timeloop+Accelergy energy (target.energy)", row);
        bench_add_fig(c, "ratio", "x", er, er, er, 1, "L%02d v0 energy / target.energy", row);
        loge += log(er);
        elo = er < elo ? er : elo;
        ehi = er > ehi ? er : ehi;
        e_within += er >= 0.5 && er <= 2.0;
        if (row == 1) {
            bench_add_modeled(c, "mm2", amm, "v0 area: PE array + scratchpad + accumulator (row 1's geometry)");
            bench_add_modeled(c, "mm2", ar.array_mm2, "v0 area: PE array");
            bench_add_modeled(c, "mm2", ar.sram_mm2, "v0 area: scratchpad + accumulator SRAM");
            bench_add_modeled(c, "mm2", ar.fixed_mm2, "v0 area: fixed logic (not in target.area)");
            bench_add_fig(c, "baseline", "mm2", v[L_AREA], v[L_AREA], v[L_AREA], 1, "Timeloop+Accelergy area (target.area)");
            area_ratio = amm / v[L_AREA];
            bench_add_fig(c, "ratio", "x", area_ratio, area_ratio, area_ratio, 1, "v0 area / target.area");
        }
    }
    free(text);
    if (rc) return bench_fail(c, "measured.csv");
    if (!row) {
        npk_err(NPK_EINVAL, "%s: no rows", path);
        return bench_fail(c, "measured.csv");
    }
    double g = exp(logsum / row), gs = exp(logseed / row), ga = exp(logarch / row);
    bench_add_fig(c, "ratio", "x", gs, gs, gs, 1, "seed model: geometric mean v0 / Gemmini over %d layers", row);
    bench_add_modeled(c, "layers", within_seed, "seed model: layers within +-25% of Gemmini");
    bench_add_modeled(c, "layers", tile_dflt, "tiling equal to the row's dse.auto_tiling (256 KiB spad, 64 KiB acc)");
    bench_add_modeled(c, "layers", tile_arch, "tiling equal to the row's dse.auto_tiling (the row's arch.mem sizes)");
    bench_add_fig(c, "ratio", "x", g, g, g, 1, "Gemmini loop: geometric mean v0 / Gemmini over %d layers", row);
    bench_add_modeled(c, "layers", within, "Gemmini loop: layers within +-25% of Gemmini");
    bench_add_fig(c, "ratio", "x", ga, ga, ga, 1, "Gemmini loop on the arch.mem sizes: geometric mean over %d layers", row);
    bench_add_modeled(c, "layers", within_arch, "Gemmini loop on the arch.mem sizes: layers within +-25%");
    double ge = exp(loge / row);
    bench_add_fig(c, "ratio", "x", ge, ge, ge, 1, "energy: geometric mean v0 / target.energy over %d layers", row);
    bench_add_fig(c, "ratio", "x", elo, elo, elo, 1, "energy: lowest layer ratio v0 / target.energy");
    bench_add_fig(c, "ratio", "x", ehi, ehi, ehi, 1, "energy: highest layer ratio v0 / target.energy");
    bench_add_modeled(c, "layers", e_within, "energy: layers within 0.5..2.0 of target.energy");
    return 0;
}
