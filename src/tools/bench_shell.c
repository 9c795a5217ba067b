// SPDX-License-Identifier: MIT
/* npu bench, the shell family: shell-gemm-512 (int8 and bf16 GEMM through the
 * shell device versus the v0 kernel and oneDNN's sgemm). */
#include "bench.h"
#include "bench_suite.h"
#include "npukit/cpu.h"
#include "npukit/gemm.h"
#include "npukit/shell.h"
#include "npukit/sim.h"
#include "ops/ref_float.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- shell: GEMM 512^3 through the device versus the v0 kernel ---------------- */

/* GMAC/s of thread CPU time of `repeat` shell GEMMs (npk_shell_gemm_host: guest buffers, the
 * descriptor, the model's loads, kernel, epilogue and stores) into t. */
static int time_shell_gemm(ctx *c, npk_shell *sh, const npk_shell_gemm_desc *g, const void *a, const void *b,
                           void *out, double *t, const char *what) {
    double macs = (double)g->m * g->n * g->k;
    for (int r = 0; r < c->repeat; r++) {
        progress(c, what, r, c->repeat);
        double t0 = cpu_now();
        if (npk_shell_gemm_host(sh, g, a, b, NULL, out)) return bench_fail(c, what);
        t[r] = macs / (cpu_now() - t0) / 1e9;
    }
    cli_progress_end();
    return 0;
}

/* The fp32 rows of shell-gemm: the BF16 operands a, b (n x n) widened to fp32
 * and run by the shared fp32 kernel alone (the shell's exact sequential sum,
 * checked against `want`, the reference's result), and by oneDNN's sgemm at 1
 * thread, the honest fp32 peer (its own order and FMAs: checked to agree
 * within fp32 summation error); ratios of the shell's BF16 GEMM (`shell`) to
 * both. */
static int shell_gemm_f32_peers(ctx *c, uint32_t n, const uint8_t *a, const uint8_t *b, const float *want,
                                const char *shell) {
    const size_t nn = (size_t)n * n;
    const double macs = (double)nn * n;
    int rc = 1;
    float *fa = malloc(4 * nn), *fb = malloc(4 * nn), *fc = malloc(4 * nn);
    double *t = calloc((size_t)c->repeat, sizeof *t);
    npk_gemm_ws ws = {0};
    if (!fa || !fb || !fc || !t) {
        npk_err(NPK_ENOMEM, "out of memory");
        bench_fail(c, "setup");
        goto out;
    }
    for (size_t i = 0; i < nn; i++) {
        uint16_t ha, hb;
        memcpy(&ha, a + 2 * i, 2), memcpy(&hb, b + 2 * i, 2);
        fa[i] = npk_bf16_to_f32(ha), fb[i] = npk_bf16_to_f32(hb);
    }
    int fused = npk_gemm_f32_fused(n, n, n, fa, n, fb, n);
    char kname[120], dname[120];
    snprintf(kname, sizeof kname, "shared fp32 kernel alone %u^3 (%s, %s), 1 thread, CPU time", n,
             npk_gemm_isa_name(npk_gemm_active_isa()), fused ? "fused" : "multiply+add");
    npk_gemm_f32(&ws, n, n, n, fa, n, fb, n, fc, n); /* warm-up */
    for (int r = 0; r < c->repeat; r++) {
        progress(c, "fp32 kernel", r, c->repeat);
        double t0 = cpu_now();
        if (npk_gemm_f32(&ws, n, n, n, fa, n, fb, n, fc, n)) {
            bench_fail(c, "fp32 kernel");
            goto out;
        }
        t[r] = macs / (cpu_now() - t0) / 1e9;
    }
    cli_progress_end();
    if (memcmp(fc, want, 4 * nn)) {
        npk_err(NPK_EDEVICE, "the shared fp32 kernel differs from the CPU reference");
        bench_fail(c, "check");
        goto out;
    }
    add_samples(c, "npu", "GMAC/s", t, c->repeat, kname);
    if (!bench_dnnl_available()) {
        if (!c->json) printf("  %-46s %s\n", "oneDNN sgemm", bench_dnnl_version());
        rc = 0;
        goto out;
    }
    /* one thread, set explicitly: CPU time of the calling thread is the whole
     * work only then (no OpenMP: the count cannot be set, no figure) */
    int deflt = bench_dnnl_threads();
    if (bench_dnnl_set_threads(1) <= 0) {
        if (!c->json) printf("  %-46s %s\n", "oneDNN sgemm", "skipped: its thread count cannot be set");
        rc = 0;
        goto out;
    }
    c->cur_threads = 1;
    bench_dnnl_sgemm((int)n, (int)n, (int)n, fa, fb, fc); /* warm-up: JIT */
    for (int r = 0; r < c->repeat; r++) {
        progress(c, "oneDNN sgemm", r, c->repeat);
        double t0 = cpu_now();
        if (bench_dnnl_sgemm((int)n, (int)n, (int)n, fa, fb, fc)) {
            bench_dnnl_set_threads(deflt);
            npk_err(NPK_EIO, "dnnl_sgemm failed");
            bench_fail(c, "oneDNN sgemm");
            goto out;
        }
        t[r] = macs / (cpu_now() - t0) / 1e9;
    }
    cli_progress_end();
    bench_dnnl_set_threads(deflt);
    /* operands in [-2, 2): |error| <= n * 4 * n * 2^-24 for any summation order */
    double worst = 0, tol = (double)n * n * 4 * 0x1p-24;
    for (size_t i = 0; i < nn; i++) worst = fmax(worst, fabs((double)fc[i] - (double)want[i]));
    if (!c->json) printf("  %-46s %s (max |diff| %.3g)\n", "oneDNN sgemm ~= CPU reference", worst <= tol ? "yes" : "NO",
                         worst);
    if (worst > tol) {
        npk_err(NPK_EDEVICE, "oneDNN's sgemm differs from the CPU reference by %g (more than %g)", worst, tol);
        bench_fail(c, "check");
        goto out;
    }
    snprintf(dname, sizeof dname, "baseline: %s sgemm (fp32) %u^3 (CPU time), 1 thread", bench_dnnl_version(), n);
    add_samples(c, "baseline", "GMAC/s", t, c->repeat, dname);
    add_ratio(c, "shell bf16 / oneDNN sgemm throughput, equal threads (1)", shell, dname, "higher");
    add_ratio(c, "shared fp32 kernel / oneDNN sgemm throughput, equal threads (1)", kname, dname, "higher");
    rc = 0;
out:
    cli_progress_end();
    npk_gemm_ws_free(&ws);
    free(fa), free(fb), free(fc), free(t);
    return rc;
}

int bench_shell_gemm(ctx *c) {
    const uint32_t n = c->size ? c->size : 512;
    c->cur_size = n;
    const size_t nn = (size_t)n * n;
    const double macs = (double)nn * n;
    int rc = 1;
    uint8_t *a = malloc(2 * nn), *b = malloc(2 * nn);
    uint32_t *out = malloc(4 * nn), *want = malloc(4 * nn);
    double *t = calloc((size_t)c->repeat, sizeof *t);
    npk_port *p = NULL;
    npk_shell *sh = NULL;
    npk_gemm_ws ws = {0};
    if (!a || !b || !out || !want || !t) {
        npk_err(NPK_ENOMEM, "out of memory");
        bench_fail(c, "setup");
        goto out;
    }
    if (npk_port_open(&p, "sim", npk_shell_class.name, NULL) || npk_shell_open(&sh, p, NULL)) {
        bench_fail(c, "shell");
        goto out;
    }
    c->cur_threads = 1; /* the models and the kernel run on the calling thread */
    /* the v0 kernel: the shared int8 kernel the v0 model runs, alone, on the int8 operands */
    for (size_t i = 0; i < nn; i++) a[i] = (uint8_t)rnd8(), b[i] = (uint8_t)rnd8();
    npk_gemm_s8s32(&ws, n, n, n, (const int8_t *)a, n, (const int8_t *)b, n, (int32_t *)want, n); /* warm-up */
    for (int r = 0; r < c->repeat; r++) {
        progress(c, "v0 kernel", r, c->repeat);
        double t0 = cpu_now();
        if (npk_gemm_s8s32(&ws, n, n, n, (const int8_t *)a, n, (const int8_t *)b, n, (int32_t *)want, n)) {
            bench_fail(c, "v0 kernel");
            goto out;
        }
        t[r] = macs / (cpu_now() - t0) / 1e9;
    }
    cli_progress_end();
    char kname[96], sname[2][96];
    snprintf(kname, sizeof kname, "baseline: v0 int8 kernel %u^3 (%s), 1 thread, CPU time", n,
             npk_gemm_isa_name(npk_gemm_active_isa()));
    add_samples(c, "baseline", "GMAC/s", t, c->repeat, kname);
    for (int dt = 0; dt < 2; dt++) {
        const char *dn = dt ? "bf16" : "int8";
        for (size_t i = 0; i < nn && dt; i++) /* bf16 operands in [-2, 2) */
            for (int m = 0; m < 2; m++) {
                uint16_t h = npk_bf16_from_f64((double)(rnd8() * 4 + (rnd8() & 3)) / 256.0);
                memcpy((m ? b : a) + 2 * i, &h, 2);
            }
        npk_shell_gemm_desc g = {0};
        g.dtype = dt ? SHELL_BF16 : SHELL_INT8;
        g.m = g.n = g.k = n;
        /* one untimed run, checked against the CPU reference (bit-exact), and its modeled cycles */
        uint32_t g0 = 0, g1 = 0;
        npk_port_read32(p, SHELL_PERF_GEMM_CYCLES, &g0);
        if (npk_shell_gemm_host(sh, &g, a, b, NULL, out)) {
            bench_fail(c, "shell GEMM");
            goto out;
        }
        npk_port_read32(p, SHELL_PERF_GEMM_CYCLES, &g1);
        npk_ref_gemm rg = {(int)g.dtype, 0, 0, 0, n, n, n, a, (size_t)n * (dt ? 2 : 1), b, (size_t)n * (dt ? 2 : 1),
                           NULL, (uint8_t *)want, 4 * (size_t)n, NULL, 0, 0, 1.0f, 0.0f, 0, 0, 0};
        if (dt) npk_ref_gemm_run(&rg);
        else npk_ref_gemm_i8(n, n, n, (const int8_t *)a, (const int8_t *)b, NULL, (int32_t *)want);
        int same = !memcmp(out, want, 4 * nn);
        if (!c->json) printf("  %-46s %s\n", dt ? "shell bf16 == CPU reference" : "shell int8 == CPU reference",
                             same ? "yes (bit-exact)" : "NO");
        if (!same) {
            npk_err(NPK_EDEVICE, "the shell %s GEMM differs from the CPU reference", dn);
            bench_fail(c, "check");
            goto out;
        }
        snprintf(sname[dt], sizeof sname[dt], "shell %s GEMM %u^3 through the device, 1 thread, CPU time", dn, n);
        if (time_shell_gemm(c, sh, &g, a, b, out, t, sname[dt])) goto out;
        add_samples(c, "npu", "GMAC/s", t, c->repeat, sname[dt]);
        char mname[80], rname[80];
        snprintf(mname, sizeof mname, "shell %s modeled GEMM engine time (PERF_GEMM_CYCLES)", dn);
        add_modeled(c, "ms", (double)(uint32_t)(g1 - g0) / (double)npk_port_hz(p) * 1e3, mname);
        snprintf(rname, sizeof rname, "shell %s / v0 kernel throughput, equal threads (1)", dn);
        add_ratio(c, rname, sname[dt], kname, "higher");
        if (dt && shell_gemm_f32_peers(c, n, a, b, (const float *)want, sname[dt])) goto out;
    }
    rc = 0;
out:
    cli_progress_end();
    npk_gemm_ws_free(&ws);
    if (sh) npk_shell_close(sh);
    npk_port_close(p);
    free(a), free(b), free(out), free(want), free(t);
    return rc;
}
