// SPDX-License-Identifier: MIT
/* npu bench, the shell family: shell-gemm-512 (int8 and bf16 GEMM through the
 * shell device versus the v0 kernel and oneDNN's sgemm). */
#include "bench.h"
#include "bench_suite.h"
#include "npukit/cpu.h"
#include "npukit/gemm.h"
#include "npukit/shell.h"
#include "npukit/sim.h"
#include "npukit/threads.h"
#include "ops/ref_float.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- shell: GEMM 512^3 through the device versus the v0 kernel ---------------- */

/* One pass of the bench: its thread count and its clock. At 1 thread both
 * sides run on the calling thread and are timed by its CPU time (wall time on
 * a shared machine penalises the longer run); at N threads the work is spread
 * over the worker pool (include/npukit/threads.h) or oneDNN's OpenMP threads,
 * and only wall time measures it. */
typedef struct shell_pass {
    int threads;
    double (*clock)(void);
    const char *clk;    /* "CPU time" or "wall time" */
    char th[24];        /* "1 thread", "2 threads" */
} shell_pass;

/* GMAC/s of `repeat` shell GEMMs (npk_shell_gemm_host: guest buffers, the
 * descriptor, the model's loads, kernel, epilogue and stores) into t. */
static int time_shell_gemm(ctx *c, const shell_pass *ps, npk_shell *sh, const npk_shell_gemm_desc *g, const void *a,
                           const void *b, void *out, double *t, const char *what) {
    double macs = (double)g->m * g->n * g->k;
    for (int r = 0; r < c->repeat; r++) {
        bench_progress(c, what, r, c->repeat);
        double t0 = ps->clock();
        if (npk_shell_gemm_host(sh, g, a, b, NULL, out)) return bench_fail(c, what);
        t[r] = macs / (ps->clock() - t0) / 1e9;
    }
    cli_progress_end();
    return 0;
}

/* The BF16 rows of shell-gemm, timed in turn within each repetition at 1
 * thread so that all three see the same moments of a shared machine's load
 * (as blocks at more threads: bf16_peers_time): the shell's BF16
 * GEMM through the device; the BF16 operands widened to fp32 and run by the
 * shared fp32 kernel alone (the shell's exact sequential sum, checked against
 * the reference's result); oneDNN's sgemm at the pass's thread count, the
 * honest fp32 peer (its own order and FMAs: checked to agree within fp32
 * summation error). */
typedef struct bf16_peers {
    float *fa, *fb, *fc, *fd; /* A, B widened; C of the kernel, of oneDNN */
    double *tk, *td;          /* GMAC/s of the kernel, of oneDNN */
    int fused;
    int dnnl; /* 1 timed, 0 unavailable, -1 its thread count cannot be set */
    npk_gemm_ws ws;
} bf16_peers;

static void bf16_peers_free(bf16_peers *p) {
    npk_gemm_ws_free(&p->ws);
    free(p->fa), free(p->fb), free(p->fc), free(p->fd), free(p->tk), free(p->td);
}

/* `repeat` rounds of: the shell's GEMM g of a, b into out (GMAC/s into ts), the
 * fp32 kernel, oneDNN. */
static int bf16_peers_time(ctx *c, const shell_pass *ps, npk_shell *sh, const npk_shell_gemm_desc *g, const uint8_t *a,
                           const uint8_t *b, uint32_t *out, double *ts, bf16_peers *p) {
    const uint32_t n = g->m;
    const size_t nn = (size_t)n * n;
    const double macs = (double)nn * n;
    p->fa = malloc(4 * nn), p->fb = malloc(4 * nn), p->fc = malloc(4 * nn), p->fd = malloc(4 * nn);
    p->tk = calloc((size_t)c->repeat, sizeof *p->tk), p->td = calloc((size_t)c->repeat, sizeof *p->td);
    if (!p->fa || !p->fb || !p->fc || !p->fd || !p->tk || !p->td) {
        npk_err(NPK_ENOMEM, "out of memory");
        return bench_fail(c, "setup");
    }
    for (size_t i = 0; i < nn; i++) {
        uint16_t ha, hb;
        memcpy(&ha, a + 2 * i, 2), memcpy(&hb, b + 2 * i, 2);
        p->fa[i] = npk_bf16_to_f32(ha), p->fb[i] = npk_bf16_to_f32(hb);
    }
    p->fused = npk_gemm_f32_fused(n, n, n, p->fa, n, p->fb, n);
    npk_gemm_f32(&p->ws, n, n, n, p->fa, n, p->fb, n, p->fc, n); /* warm-up */
    /* oneDNN's thread count set explicitly (no OpenMP: it cannot be set, no figure) */
    int deflt = bench_dnnl_threads();
    p->dnnl = !bench_dnnl_available() ? 0 : bench_dnnl_set_threads(ps->threads) > 0 ? 1 : -1;
    if (p->dnnl > 0) bench_dnnl_sgemm((int)n, (int)n, (int)n, p->fa, p->fb, p->fd); /* warm-up: JIT, threads */
    /* at 1 thread the three in turn within each repetition; at more, each as a
     * block (a pool polls for its next job for a while after a run, npukit's
     * 300 us, OpenMP's longer, and would take a core from the next side's run) */
    const int alt = ps->threads == 1, blocks = alt ? 1 : p->dnnl > 0 ? 3 : 2;
    int rc = 0;
    for (int blk = 0; blk < blocks && !rc; blk++) {
        for (int r = 0; r < c->repeat && !rc; r++) {
            bench_progress(c, alt ? "shell bf16, fp32 kernel, oneDNN" : blk == 0 ? "shell bf16" : blk == 1 ? "fp32 kernel" : "oneDNN",
                     r, c->repeat);
            double t0 = ps->clock();
            if ((alt || blk == 0) && npk_shell_gemm_host(sh, g, a, b, NULL, out)) {
                rc = bench_fail(c, "shell bf16 GEMM");
                break;
            }
            if (alt || blk == 0) ts[r] = macs / (ps->clock() - t0) / 1e9;
            t0 = ps->clock();
            if ((alt || blk == 1) && npk_gemm_f32(&p->ws, n, n, n, p->fa, n, p->fb, n, p->fc, n)) {
                rc = bench_fail(c, "fp32 kernel");
                break;
            }
            if (alt || blk == 1) p->tk[r] = macs / (ps->clock() - t0) / 1e9;
            if (p->dnnl <= 0 || !(alt || blk == 2)) continue;
            t0 = ps->clock();
            if (bench_dnnl_sgemm((int)n, (int)n, (int)n, p->fa, p->fb, p->fd)) {
                npk_err(NPK_EIO, "dnnl_sgemm failed");
                rc = bench_fail(c, "oneDNN sgemm");
                break;
            }
            p->td[r] = macs / (ps->clock() - t0) / 1e9;
        }
        cli_progress_end();
    }
    if (p->dnnl > 0) bench_dnnl_set_threads(deflt);
    return rc;
}

/* The peers' samples, their checks against `want` (the reference's C), and
 * the ratios of the shell's series `shell` to both. */
static int bf16_peers_report(ctx *c, const shell_pass *ps, uint32_t n, const float *want, const char *shell,
                             const bf16_peers *p) {
    const size_t nn = (size_t)n * n;
    char kname[120], dname[120], rname[120];
    snprintf(kname, sizeof kname, "shared fp32 kernel alone %u^3 (%s, %s), %s, %s", n,
             npk_gemm_f32_kernel(), p->fused ? "fused" : "multiply+add", ps->clk, ps->th);
    if (memcmp(p->fc, want, 4 * nn)) {
        npk_err(NPK_EDEVICE, "the shared fp32 kernel differs from the CPU reference");
        return bench_fail(c, "check");
    }
    bench_add_samples(c, "npu", "GMAC/s", p->tk, c->repeat, kname);
    if (p->dnnl <= 0) {
        if (!c->json && (p->dnnl < 0 || ps->threads == 1))
            printf("  %-46s %s\n", "oneDNN sgemm",
                   p->dnnl < 0 ? "skipped: its thread count cannot be set" : bench_dnnl_version());
        return 0;
    }
    /* operands in [-2, 2): |error| <= n * 4 * n * 2^-24 for any summation order */
    double worst = 0, tol = (double)n * n * 4 * 0x1p-24;
    for (size_t i = 0; i < nn; i++) worst = fmax(worst, fabs((double)p->fd[i] - (double)want[i]));
    if (!c->json) printf("  %-46s %s (max |diff| %.3g)\n", "oneDNN sgemm ~= CPU reference", worst <= tol ? "yes" : "NO",
                         worst);
    if (worst > tol) {
        npk_err(NPK_EDEVICE, "oneDNN's sgemm differs from the CPU reference by %g (more than %g)", worst, tol);
        return bench_fail(c, "check");
    }
    snprintf(dname, sizeof dname, "baseline: %s sgemm (fp32) %u^3 (%s), %s", bench_dnnl_version(), n, ps->clk, ps->th);
    bench_add_samples(c, "baseline", "GMAC/s", p->td, c->repeat, dname);
    snprintf(rname, sizeof rname, "shell bf16 / oneDNN sgemm throughput, equal threads (%d)", ps->threads);
    bench_add_ratio(c, rname, shell, dname, "higher");
    snprintf(rname, sizeof rname, "shared fp32 kernel / oneDNN sgemm throughput, equal threads (%d)", ps->threads);
    bench_add_ratio(c, rname, kname, dname, "higher");
    return 0;
}

/* The operands and golden results of both dtypes. */
typedef struct shell_data {
    uint32_t n;
    uint8_t *a[2], *b[2]; /* int8, bf16 */
    uint32_t *want[2];
} shell_data;

/* One pass: the v0 kernel alone, then each dtype through the device (checked
 * bit for bit against the CPU reference before it is timed) and its peers. */
static int shell_gemm_pass(ctx *c, const shell_pass *ps, npk_port *p, npk_shell *sh, const shell_data *d,
                           uint32_t *out, double *t, npk_gemm_ws *ws) {
    const uint32_t n = d->n;
    const size_t nn = (size_t)n * n;
    const double macs = (double)nn * n;
    const int8_t *a8 = (const int8_t *)d->a[0], *b8 = (const int8_t *)d->b[0];
    npk_gemm_s8s32(ws, n, n, n, a8, n, b8, n, (int32_t *)out, n); /* warm-up */
    for (int r = 0; r < c->repeat; r++) {
        bench_progress(c, "v0 kernel", r, c->repeat);
        double t0 = ps->clock();
        if (npk_gemm_s8s32(ws, n, n, n, a8, n, b8, n, (int32_t *)out, n)) return bench_fail(c, "v0 kernel");
        t[r] = macs / (ps->clock() - t0) / 1e9;
    }
    cli_progress_end();
    char kname[112], sname[2][112];
    snprintf(kname, sizeof kname, "baseline: v0 int8 kernel %u^3 (%s), %s, %s", n,
             npk_gemm_isa_name(npk_gemm_active_isa()), ps->clk, ps->th);
    bench_add_samples(c, "baseline", "GMAC/s", t, c->repeat, kname);
    for (int dt = 0; dt < 2; dt++) {
        const char *dn = dt ? "bf16" : "int8";
        npk_shell_gemm_desc g = {0};
        g.dtype = dt ? SHELL_BF16 : SHELL_INT8;
        g.m = g.n = g.k = n;
        /* one untimed run, checked against the CPU reference (bit-exact), and its modeled cycles */
        uint32_t g0 = 0, g1 = 0;
        npk_port_read32(p, SHELL_PERF_GEMM_CYCLES, &g0);
        if (npk_shell_gemm_host(sh, &g, d->a[dt], d->b[dt], NULL, out)) return bench_fail(c, "shell GEMM");
        npk_port_read32(p, SHELL_PERF_GEMM_CYCLES, &g1);
        int same = !memcmp(out, d->want[dt], 4 * nn);
        if (!c->json)
            printf("  %-46s %s\n", dt ? "shell bf16 == CPU reference" : "shell int8 == CPU reference",
                   same ? "yes (bit-exact)" : "NO");
        if (!same) {
            npk_err(NPK_EDEVICE, "the shell %s GEMM differs from the CPU reference at %d threads", dn, ps->threads);
            return bench_fail(c, "check");
        }
        snprintf(sname[dt], sizeof sname[dt], "shell %s GEMM %u^3 through the device, %s, %s", dn, n, ps->clk, ps->th);
        bf16_peers bp = {0};
        int bad = dt ? bf16_peers_time(c, ps, sh, &g, d->a[dt], d->b[dt], out, t, &bp)
                     : time_shell_gemm(c, ps, sh, &g, d->a[dt], d->b[dt], out, t, sname[dt]);
        if (!bad) bench_add_samples(c, "npu", "GMAC/s", t, c->repeat, sname[dt]);
        char mname[80], rname[80];
        if (ps->threads == 1) { /* modeled: the same at every thread count */
            snprintf(mname, sizeof mname, "shell %s modeled GEMM engine time (PERF_GEMM_CYCLES)", dn);
            bench_add_modeled(c, "ms", (double)(uint32_t)(g1 - g0) / (double)npk_port_hz(p) * 1e3, mname);
        }
        snprintf(rname, sizeof rname, "shell %s / v0 kernel throughput, equal threads (%d)", dn, ps->threads);
        if (!bad) bench_add_ratio(c, rname, sname[dt], kname, "higher");
        if (dt && !bad) bad = bf16_peers_report(c, ps, n, (const float *)d->want[1], sname[dt], &bp);
        bf16_peers_free(&bp);
        if (bad) return 1;
    }
    return 0;
}

int bench_shell_gemm(ctx *c) {
    const uint32_t n = c->size ? c->size : 512;
    c->cur_size = n;
    const size_t nn = (size_t)n * n;
    int rc = 1;
    shell_data d = {n, {malloc(nn), malloc(2 * nn)}, {malloc(nn), malloc(2 * nn)}, {malloc(4 * nn), malloc(4 * nn)}};
    uint32_t *out = malloc(4 * nn);
    double *t = calloc((size_t)c->repeat, sizeof *t);
    npk_port *p = NULL;
    npk_shell *sh = NULL;
    npk_gemm_ws ws = {0};
    if (!d.a[0] || !d.a[1] || !d.b[0] || !d.b[1] || !d.want[0] || !d.want[1] || !out || !t) {
        npk_err(NPK_ENOMEM, "out of memory");
        bench_fail(c, "setup");
        goto out;
    }
    if (npk_port_open(&p, "sim", npk_shell_class.name, NULL) || npk_shell_open(&sh, p, NULL)) {
        bench_fail(c, "shell");
        goto out;
    }
    for (size_t i = 0; i < nn; i++) d.a[0][i] = (uint8_t)bench_rnd8(), d.b[0][i] = (uint8_t)bench_rnd8();
    for (size_t i = 0; i < nn; i++) /* bf16 operands in [-2, 2) */
        for (int m = 0; m < 2; m++) {
            uint16_t h = npk_bf16_from_f64((double)(bench_rnd8() * 4 + (bench_rnd8() & 3)) / 256.0);
            memcpy((m ? d.b[1] : d.a[1]) + 2 * i, &h, 2);
        }
    npk_ref_gemm_i8(n, n, n, (const int8_t *)d.a[0], (const int8_t *)d.b[0], NULL, (int32_t *)d.want[0]);
    npk_ref_gemm rg = {SHELL_BF16, 0, 0, 0, n, n, n, d.a[1], (size_t)n * 2, d.b[1], (size_t)n * 2,
                       NULL, (uint8_t *)d.want[1], 4 * (size_t)n, NULL, 0, 0, 1.0f, 0.0f, 0, 0, 0};
    npk_ref_gemm_run(&rg);
    /* 1 thread (CPU time), then --threads (wall time), each against its peers at the same count */
    for (int pass = 0; pass < 2; pass++) {
        shell_pass ps = {pass ? c->threads : 1, pass ? bench_now : bench_cpu_now, pass ? "wall time" : "CPU time", ""};
        if (pass && ps.threads <= 1) break;
        snprintf(ps.th, sizeof ps.th, "%d thread%s", ps.threads, ps.threads == 1 ? "" : "s");
        npk_threads_set(ps.threads);
        c->cur_threads = ps.threads;
        int bad = shell_gemm_pass(c, &ps, p, sh, &d, out, t, &ws);
        npk_threads_set(0);
        if (bad) goto out;
    }
    rc = 0;
out:
    cli_progress_end();
    npk_gemm_ws_free(&ws);
    if (sh) npk_shell_close(sh);
    npk_port_close(p);
    for (int i = 0; i < 2; i++) free(d.a[i]), free(d.b[i]), free(d.want[i]);
    free(out), free(t);
    return rc;
}
