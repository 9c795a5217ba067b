/* npu bench: a fixed benchmark suite with baselines measured in the same run.
 *
 * Every figure is the median of --repeat runs with their min and max (host
 * wall-clock figures), or a modeled figure of the simulated device, which is
 * the same in every run (min = max = median). docs/performance.md explains
 * each figure and keeps the latest results. */
#include "bench.h"
#include "cli.h"
#include "npukit/e1.h"
#include "npukit/devtab.h"
#include "npukit/e1_lower.h"
#include "npukit/graph.h"
#include "npukit/llm.h"
#include "npukit/npkb.h"
#include "npukit/trace.h"
#include "npukit/cpu.h"
#include "npukit/gemm.h"
#include "npukit/shell.h"
#include "npukit/v0.h"
#include "npukit/sim.h"
#include "npukit/strbuf.h"
#include "ops/ref_float.h"
#include "ops/ref_ops.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#ifndef NPUKIT_SHARED_DIR_DEFAULT
#define NPUKIT_SHARED_DIR_DEFAULT "../shared"
#endif

/* ---- figures ---------------------------------------------------------------- */

typedef struct figure {
    const char *bench;
    char name[128];
    const char *unit;
    const char *kind;   /* "npu" (the device path), "baseline", "modeled", "ratio" */
    const char *better; /* "higher", "lower" or "none" (which way is an improvement) */
    int threads;        /* host threads the timed code ran on (0: not a host timing) */
    uint32_t size;      /* problem size of a GEMM bench (M = N = K), 0 when it has none */
    double med, min, max;
    int runs;
} figure;

typedef struct ctx {
    int repeat;
    int threads;  /* "all threads": --threads, default the online CPUs */
    uint32_t size; /* --size of the GEMM benches (0: each bench's default) */
    int cur_threads; /* threads of the figures being added (set by each bench) */
    uint32_t cur_size; /* size of the figures being added (GEMM benches; 0 otherwise) */
    const char *shared;
    const char *srcdir; /* the source tree (scripts/ort_bench.js) */
    const npk_strlist *models; /* --model: the ONNX models to run (none: all) */
    const char *trace_path; /* trace one extra run of the device path (one bench only) */
    const char *device;     /* the device of a per-device bench */
    const char *data_path;  /* --data: v0-resnet50-layers' CSV instead of the shared one */
    int json;
    figure *figs;
    size_t nfigs;
    const char *cur; /* bench being run */
    int failed;
} ctx;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int dcmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Which way is better for a figure of this unit: times and cycles lower,
 * rates higher; ratios say it themselves (add_ratio). */
static const char *better_of(const char *kind, const char *unit) {
    static const char *const lower[] = {"ms", "us", "s", "cycles"};
    static const char *const higher[] = {"GMAC/s", "access/s", "tokens/s", "TOPS", "%", "layers"};
    if (!strcmp(kind, "ratio")) return "none";
    for (size_t i = 0; i < sizeof lower / sizeof lower[0]; i++)
        if (!strcmp(unit, lower[i])) return "lower";
    for (size_t i = 0; i < sizeof higher / sizeof higher[0]; i++)
        if (!strcmp(unit, higher[i])) return "higher";
    return "none";
}

static void add_fig(ctx *c, const char *kind, const char *unit, double med, double min, double max, int runs,
                    const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 8, 9)))
#endif
    ;

static void add_fig(ctx *c, const char *kind, const char *unit, double med, double min, double max, int runs,
                    const char *fmt, ...) {
    figure *n = realloc(c->figs, (c->nfigs + 1) * sizeof *n);
    if (!n) return;
    c->figs = n;
    figure *f = &n[c->nfigs++];
    memset(f, 0, sizeof *f);
    f->bench = c->cur;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->name, sizeof f->name, fmt, ap);
    va_end(ap);
    f->kind = kind;
    f->unit = unit;
    f->better = better_of(kind, unit);
    f->threads = strcmp(kind, "npu") && strcmp(kind, "baseline") ? 0 : c->cur_threads;
    f->size = c->cur_size;
    f->med = med;
    f->min = min;
    f->max = max;
    f->runs = runs;
    if (!c->json) {
        if (!strcmp(kind, "ratio") && runs > 1)
            printf("  %-46s %12.4g %-9s (median of same-run ratios; min %.4g, max %.4g, %d runs)\n", f->name, med,
                   unit, min, max, runs);
        else if (!strcmp(kind, "ratio"))
            printf("  %-46s %12.4g %-9s (ratio of the medians)\n", f->name, med, unit);
        else if (runs > 1 || strcmp(kind, "modeled"))
            printf("  %-46s %12.4g %-9s (min %.4g, max %.4g, %d run%s)\n", f->name, med, unit, min, max, runs,
                   runs == 1 ? "" : "s");
        else
            printf("  %-46s %12.4g %-9s (modeled, deterministic)\n", f->name, med, unit);
        fflush(stdout);
    }
}

/* Median, min and max of v[0..n) (sorted in place). */
static void add_samples(ctx *c, const char *kind, const char *unit, double *v, int n, const char *name) {
    qsort(v, (size_t)n, sizeof *v, dcmp);
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    add_fig(c, kind, unit, med, v[0], v[n - 1], n, "%s", name);
}

static void add_modeled(ctx *c, const char *unit, double v, const char *name) {
    add_fig(c, "modeled", unit, v, v, v, 1, "%s", name);
}

static const figure *find_fig(const ctx *c, const char *name) {
    for (size_t i = c->nfigs; i-- > 0;)
        if (c->figs[i].bench == c->cur && !strcmp(c->figs[i].name, name)) return &c->figs[i];
    return NULL;
}

/* A ratio of two medians of this bench; better says which way is an
 * improvement ("higher" for throughput ratios, "lower" for time ratios). */
static void add_ratio(ctx *c, const char *name, const char *num, const char *den, const char *better) {
    const figure *a = find_fig(c, num), *b = find_fig(c, den);
    if (a && b && b->med > 0) {
        add_fig(c, "ratio", "x", a->med / b->med, a->med / b->med, a->med / b->med, 1, "%s", name);
        c->figs[c->nfigs - 1].better = better;
    }
}

static int bench_fail(ctx *c, const char *what) {
    c->failed = 1;
    cli_progress_end();
    return cli_fail("bench %s: %s: %s", c->cur, what, npk_errmsg());
}

/* The end of a bench's extra traced run: write tr to --trace unless the run
 * failed (bad), free it, and report a failure (bad_reported: the run's failure
 * was reported already). 0, or 1 when the bench fails. */
static int end_trace(ctx *c, npk_trace *tr, int bad, int bad_reported) {
    int rc = bad || cli_write_trace(tr, c->trace_path);
    if (rc && !(bad && bad_reported)) bench_fail(c, "trace");
    npk_trace_free(tr);
    return rc;
}

static void progress(const ctx *c, const char *what, int done, int total) {
    char buf[96];
    snprintf(buf, sizeof buf, "bench %s: %s", c->cur, what);
    cli_progress(buf, (uint64_t)done, (uint64_t)total);
}

static uint64_t xs = 88172645463325252ull;
static int8_t rnd8(void) {
    xs ^= xs << 13, xs ^= xs >> 7, xs ^= xs << 17;
    return (int8_t)(xs >> 24);
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

static int bench_v0_gemm(ctx *c) {
    const uint32_t n = c->size ? c->size : 1024;
    c->cur_size = n;
    const double macs = (double)n * n * n;
    int rc = 1;
    int8_t *A = malloc((size_t)n * n), *B = malloc((size_t)n * n);
    int32_t *C = malloc((size_t)n * n * 4), *D = malloc((size_t)n * n * 4);
    double *t = calloc((size_t)c->repeat, sizeof *t);
    npk_port *p = NULL;
    npk_v0 *v = NULL;
    npk_trace *tr = NULL;
    if (!A || !B || !C || !D || !t) {
        npk_err(NPK_ENOMEM, "out of memory");
        bench_fail(c, "setup");
        goto out;
    }
    for (size_t i = 0; i < (size_t)n * n; i++) A[i] = rnd8();
    for (size_t i = 0; i < (size_t)n * n; i++) B[i] = rnd8();
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
    npk_v0_counters c0, c1;
    npk_v0_read_counters(v, &c0);
    c->cur_threads = 1; /* the v0 model runs on the calling thread */
    for (int r = 0; r < c->repeat; r++) {
        progress(c, "v0 matmul", r, c->repeat);
        double t0 = now();
        if (npk_v0_matmul(v, n, n, n, A, B, C, 0)) {
            bench_fail(c, "v0 matmul");
            goto out;
        }
        t[r] = macs / (now() - t0) / 1e9;
    }
    cli_progress_end();
    npk_v0_read_counters(v, &c1);
    if (check_v0_exact(c, n, A, B, C)) goto out;
    char vname[80];
    snprintf(vname, sizeof vname, "v0 int8 GEMM %u^3 (driver+DMA+compute), 1 thread", n);
    add_samples(c, "npu", "GMAC/s", t, c->repeat, vname);
    uint64_t cyc = (uint32_t)(c1.perf_cycles - c0.perf_cycles) / (uint64_t)c->repeat;
    uint64_t dm = (c1.perf_macs - c0.perf_macs) / (uint64_t)c->repeat;
    add_modeled(c, "ms", (double)cyc / (double)NPK_V0_HZ * 1e3, "v0 modeled device time (PERF_CYCLES)");
    add_modeled(c, "%", 100.0 * (double)dm / (256.0 * (double)cyc), "v0 modeled array utilization");
    add_modeled(c, "TOPS", (double)dm * 2.0 / ((double)cyc / (double)NPK_V0_HZ) / 1e12, "v0 modeled TOPS");
    if (!bench_dnnl_available()) {
        if (!c->json) printf("  %-46s %s\n", "oneDNN int8 GEMM", bench_dnnl_version());
    } else {
        /* One thread (equal threads: the v0 path is single-threaded), then all
         * threads; the count is set explicitly each time (never oneDNN's
         * default, which collapses on a loaded machine) and restored after. */
        char name[2][80] = {"", ""};
        int deflt = bench_dnnl_threads(), set1 = 0;
        for (int pass = 0; pass < 2; pass++) {
            int want = pass ? c->threads : 1;
            if (pass && want <= 1) break;
            int set = bench_dnnl_set_threads(want) > 0;
            if (!set && pass) break; /* no OpenMP: the thread count cannot be set, one pass */
            c->cur_threads = set ? want : 0;
            if (!pass) set1 = set;
            bench_dnnl_gemm_s8((int)n, (int)n, (int)n, A, B, D); /* warm-up: JIT, threads */
            for (int r = 0; r < c->repeat; r++) {
                progress(c, "oneDNN", r, c->repeat);
                double t0 = now();
                if (bench_dnnl_gemm_s8((int)n, (int)n, (int)n, A, B, D)) {
                    npk_err(NPK_EIO, "dnnl_gemm_s8s8s32 failed");
                    if (deflt > 0) bench_dnnl_set_threads(deflt);
                    bench_fail(c, "oneDNN");
                    goto out;
                }
                t[r] = macs / (now() - t0) / 1e9;
            }
            cli_progress_end();
            if (set)
                snprintf(name[pass], sizeof name[pass], "baseline: %s int8 GEMM, %d thread%s", bench_dnnl_version(),
                         want, want == 1 ? "" : "s");
            else
                snprintf(name[pass], sizeof name[pass], "baseline: %s int8 GEMM, its default threads",
                         bench_dnnl_version());
            add_samples(c, "baseline", "GMAC/s", t, c->repeat, name[pass]);
        }
        if (deflt > 0) bench_dnnl_set_threads(deflt);
        /* npukit is judged against the exact golden (check_v0_exact, below); oneDNN only
         * where it is exact: without VNNI its int8 kernel sums two products in 16 bits
         * (vpmaddubsw) and saturates, which is named, not blamed on v0 (issue 26). */
        size_t off = 0;
        for (size_t i = 0; i < (size_t)n * n; i++) off += C[i] != D[i];
        if (!c->json) {
            if (!off)
                printf("  %-46s %s\n", "oneDNN output == exact product", "yes (bit-exact)");
            else
                printf("  %-46s NO: %zu of %zu elements differ (%s)\n", "oneDNN output == exact product", off,
                       (size_t)n * n,
                       npk_isa_host() >= NPK_ISA_AVX512VNNI
                           ? "oneDNN inexact on this host"
                           : "oneDNN inexact on this host: no AVX512_VNNI, its int8 kernel sums pairs of products in 16 bits, which saturate");
        }
        add_ratio(c, set1 ? "v0 / oneDNN throughput, equal threads (1)" : "v0 / oneDNN throughput", vname, name[0],
                  "higher");
        if (name[1][0]) {
            char rn[80];
            snprintf(rn, sizeof rn, "v0 (1 thread) / oneDNN throughput, %d threads", c->threads);
            add_ratio(c, rn, vname, name[1], "higher");
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
    cli_progress_end();
    if (p) npk_port_set_trace(p, NULL);
    npk_trace_free(tr);
    if (v) npk_v0_close(v);
    npk_port_close(p);
    free(A), free(B), free(C), free(D), free(t);
    return rc;
}

/* ---- shell: GEMM 512^3 through the device versus the v0 kernel ---------------- */

/* CPU time of the calling thread: the shell bench compares single-threaded
 * runs of 0.6 and 4 ms; on a shared machine their wall time also counts the
 * waits for a core, which a 4 ms run meets more often than a 0.6 ms one. */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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

static int bench_shell_gemm(ctx *c) {
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
static int bench_v0_resnet50_layers(ctx *c) {
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
        add_modeled(c, "cycles", (double)seed, nm);
        snprintf(nm, sizeof nm, "L%02d v0 modeled cycles (gemmini_loop=1; tiling %s%s%s)", row, til,
                 strcmp(til, rec) ? " != row " : " = row", strcmp(til, rec) ? rec : "");
        add_modeled(c, "cycles", (double)cyc, nm);
        snprintf(gm, sizeof gm, "L%02d Gemmini tiled_conv_auto cycles (measured)", row);
        add_fig(c, "baseline", "cycles", v[L_AUTO], v[L_AUTO], v[L_AUTO], 1, "%s", gm);
        add_modeled(c, "%", 100.0 * (double)macs / (v[L_MESH] * v[L_MESH] * (double)cyc),
                    "v0 modeled array utilization (Gemmini loop)");
        double ratio = (double)cyc / v[L_AUTO], rs = (double)seed / v[L_AUTO], ra = (double)arch / v[L_AUTO];
        add_fig(c, "ratio", "x", ratio, ratio, ratio, 1, "L%02d v0 Gemmini loop / Gemmini (seed %.3f, arch.mem %.3f)",
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
        add_modeled(c, "uJ", uj, nm_energy(nm, sizeof nm, row, &en));
        add_fig(c, "baseline", "uJ", v[L_ENERGY], v[L_ENERGY], v[L_ENERGY], 1,
                "L%02d Timeloop+Accelergy energy (target.energy)", row);
        add_fig(c, "ratio", "x", er, er, er, 1, "L%02d v0 energy / target.energy", row);
        loge += log(er);
        elo = er < elo ? er : elo;
        ehi = er > ehi ? er : ehi;
        e_within += er >= 0.5 && er <= 2.0;
        if (row == 1) {
            add_modeled(c, "mm2", amm, "v0 area: PE array + scratchpad + accumulator (row 1's geometry)");
            add_modeled(c, "mm2", ar.array_mm2, "v0 area: PE array");
            add_modeled(c, "mm2", ar.sram_mm2, "v0 area: scratchpad + accumulator SRAM");
            add_modeled(c, "mm2", ar.fixed_mm2, "v0 area: fixed logic (not in target.area)");
            add_fig(c, "baseline", "mm2", v[L_AREA], v[L_AREA], v[L_AREA], 1, "Timeloop+Accelergy area (target.area)");
            area_ratio = amm / v[L_AREA];
            add_fig(c, "ratio", "x", area_ratio, area_ratio, area_ratio, 1, "v0 area / target.area");
        }
    }
    free(text);
    if (rc) return bench_fail(c, "measured.csv");
    if (!row) {
        npk_err(NPK_EINVAL, "%s: no rows", path);
        return bench_fail(c, "measured.csv");
    }
    double g = exp(logsum / row), gs = exp(logseed / row), ga = exp(logarch / row);
    add_fig(c, "ratio", "x", gs, gs, gs, 1, "seed model: geometric mean v0 / Gemmini over %d layers", row);
    add_modeled(c, "layers", within_seed, "seed model: layers within +-25% of Gemmini");
    add_modeled(c, "layers", tile_dflt, "tiling equal to the row's dse.auto_tiling (256 KiB spad, 64 KiB acc)");
    add_modeled(c, "layers", tile_arch, "tiling equal to the row's dse.auto_tiling (the row's arch.mem sizes)");
    add_fig(c, "ratio", "x", g, g, g, 1, "Gemmini loop: geometric mean v0 / Gemmini over %d layers", row);
    add_modeled(c, "layers", within, "Gemmini loop: layers within +-25% of Gemmini");
    add_fig(c, "ratio", "x", ga, ga, ga, 1, "Gemmini loop on the arch.mem sizes: geometric mean over %d layers", row);
    add_modeled(c, "layers", within_arch, "Gemmini loop on the arch.mem sizes: layers within +-25%");
    double ge = exp(loge / row);
    add_fig(c, "ratio", "x", ge, ge, ge, 1, "energy: geometric mean v0 / target.energy over %d layers", row);
    add_fig(c, "ratio", "x", elo, elo, elo, 1, "energy: lowest layer ratio v0 / target.energy");
    add_fig(c, "ratio", "x", ehi, ehi, ehi, 1, "energy: highest layer ratio v0 / target.energy");
    add_modeled(c, "layers", e_within, "energy: layers within 0.5..2.0 of target.energy");
    return 0;
}

/* ---- e1: MMIO accesses per second ------------------------------------------- */

static int bench_e1_mmio(ctx *c) {
    npk_port *p = NULL;
    npk_e1 *e = NULL;
    int rc = 1;
    double *t = calloc((size_t)c->repeat, sizeof *t), *s = calloc((size_t)c->repeat, sizeof *s);
    if (!t || !s || npk_port_open(&p, "sim", npk_e1_class.name, NULL) || npk_e1_open(&e, p)) {
        bench_fail(c, "e1");
        goto out;
    }
    const int n_raw = 400000, n_cmd = 20000;
    volatile uint32_t sink = 0;
    for (int r = 0; r < c->repeat; r++) {
        progress(c, "mmio", r, c->repeat);
        /* raw register accesses through the port: half writes, half reads */
        double t0 = now();
        for (int i = 0; i < n_raw / 2; i++) {
            uint32_t val;
            npk_port_write32(p, E1_REG_OP_A, (uint32_t)i);
            npk_port_read32(p, E1_REG_RESULT, &val);
            sink += val;
        }
        t[r] = n_raw / (now() - t0);
        /* scalar commands through the driver (each: operands, start, poll, result) */
        uint64_t m0 = npk_port_mmio_count(p);
        t0 = now();
        for (int i = 0; i < n_cmd; i++) {
            npk_e1_result res;
            if (npk_e1_scalar(e, E1_OP_ADD, (uint32_t)i, 3, 0, 0, &res)) {
                bench_fail(c, "scalar ADD");
                goto out;
            }
            sink += res.result;
        }
        double dt = now() - t0;
        s[r] = (double)(npk_port_mmio_count(p) - m0) / dt;
    }
    cli_progress_end();
    (void)sink;
    add_samples(c, "npu", "access/s", t, c->repeat, "e1 raw MMIO accesses/s (write+read)");
    add_samples(c, "npu", "access/s", s, c->repeat, "e1 MMIO accesses/s in driver scalar commands");
    if (c->trace_path) {
        npk_trace *tr = npk_trace_new();
        npk_port_set_trace(p, tr);
        npk_e1_result res;
        int bad = npk_e1_scalar(e, E1_OP_DOT4_S8, 0x01020304u, 0x01010101u, 0, 0, &res);
        npk_port_set_trace(p, NULL);
        if (end_trace(c, tr, bad, 0)) goto out;
    }
    rc = 0;
out:
    cli_progress_end();
    if (e) npk_e1_close(e);
    npk_port_close(p);
    free(t);
    free(s);
    return rc;
}

/* ---- e1: tiled int8 matmul 64^3 versus the CPU reference ------------------- */

/* c->repeat timed runs of the e1 matmul of A and B (n x n) into ms[] (and the
 * thread's CPU time into cpu_ms[] unless NULL), each output checked against the
 * CPU reference's; mode names the run in messages. 0, or bench_fail's 1. */
static int time_e1_matmul(ctx *c, npk_lower *L, const npk_ltensor *A, const npk_ltensor *B, int64_t n,
                          npk_lower_evidence *ev, double *ms, double *cpu_ms, const char *mode) {
    char what[64];
    snprintf(what, sizeof what, "matmul%s", mode);
    for (int r = 0; r < c->repeat; r++) {
        progress(c, what, r, c->repeat);
        npk_lower_out o, go;
        double t0 = now(), c0 = cpu_now();
        if (npk_lower_matmul(L, 0, A, B, &o, &go, ev)) return bench_fail(c, what);
        ms[r] = (now() - t0) * 1e3;
        if (cpu_ms) cpu_ms[r] = (cpu_now() - c0) * 1e3;
        int same = !memcmp(o.t[0].data, go.t[0].data, (size_t)(n * n) * 4);
        npk_lower_out_free(&o);
        npk_lower_out_free(&go);
        if (!same) {
            npk_err(NPK_EDEVICE, "the e1 result%s differs from the CPU reference", mode);
            return bench_fail(c, "check");
        }
    }
    cli_progress_end();
    return 0;
}

/* The reference Python runtime of issue 15 point 4 (e1 >= 300x it on int8 64^3): a
 * driver script over elizaOS/eliza's e1_npu_lowering.py / e1_npu_runtime.py and their
 * in-process chip model, not part of npukit (docs/performance.md says how to obtain it),
 * given as $NPUKIT_E1_PYREF (the script, or the directory holding e1_matmul_bench.py) or
 * found at ~/.cache/npukit/e1py/e1_matmul_bench.py; NULL if there is none. */
static const char *e1_pyref_path(char *buf, size_t n) {
    const char *e = getenv("NPUKIT_E1_PYREF");
    struct stat st;
    if (e && *e) snprintf(buf, n, "%s", e);
    else snprintf(buf, n, "%s/.cache/npukit/e1py", getenv("HOME") ? getenv("HOME") : ".");
    if (stat(buf, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "/e1_matmul_bench.py");
    }
    return access(buf, R_OK) == 0 ? buf : NULL;
}

/* c->repeat timed runs of the reference Python runtime on A x B (n x n int8) into
 * ms[] (wall) and cpu_ms[] (its thread's CPU time; *have_cpu = 0 when the script
 * prints none): the script gets A and B in a file (row-major int8) and writes its
 * int32 result, which must equal want (npukit's e1 result). 0, or bench_fail's 1. */
static int e1_pyref_times(ctx *c, const char *script, const npk_ltensor *A, const npk_ltensor *B, int64_t n,
                          const int32_t *want, double *ms, double *cpu_ms, int *have_cpu) {
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char in[1024], out[1024], cmd[4096], line[8192];
    size_t nn = (size_t)(n * n);
    int rc = 1, got = 0, got_cpu = 0;
    *have_cpu = 0;
    snprintf(in, sizeof in, "%s/npu-e1py-in-XXXXXX", tmp);
    snprintf(out, sizeof out, "%s/npu-e1py-out-XXXXXX", tmp);
    int fi = mkstemp(in), fo = fi >= 0 ? mkstemp(out) : -1;
    unsigned char *buf = malloc(2 * nn > nn * 4 ? 2 * nn : nn * 4);
    FILE *f = fi >= 0 ? fdopen(fi, "wb") : NULL;
    if (fo >= 0) close(fo);
    if (!f || fo < 0 || !buf) {
        npk_err(NPK_EIO, "cannot create temporary files in %s", tmp);
        if (f) fclose(f);
        else if (fi >= 0) close(fi);
        goto out;
    }
    for (size_t i = 0; i < nn; i++) buf[i] = (unsigned char)(int8_t)A->data[i];
    for (size_t i = 0; i < nn; i++) buf[nn + i] = (unsigned char)(int8_t)B->data[i];
    int wok = fwrite(buf, 1, 2 * nn, f) == 2 * nn;
    if (fclose(f) || !wok) {
        npk_err(NPK_EIO, "cannot write %s", in);
        goto out;
    }
    snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s' %d", script, in, out, c->repeat);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) {
        npk_err(NPK_EIO, "cannot run python3");
        goto out;
    }
    while (fgets(line, sizeof line, p)) {
        int cpu = !strncmp(line, "cpu_ms:", 7);
        if (strncmp(line, "ms:", 3) && !cpu) continue;
        double *v = cpu ? cpu_ms : ms;
        int k = 0;
        char *s = line + (cpu ? 7 : 3), *e;
        for (; k < c->repeat; k++, s = e) {
            v[k] = strtod(s, &e);
            if (e == s) break;
        }
        *(cpu ? &got_cpu : &got) = k;
    }
    int st = pclose(p);
    *have_cpu = got_cpu == c->repeat;
    if (st != 0 || got != c->repeat) {
        npk_err(NPK_EDEVICE, "%s exited with status %d after %d of %d times", script, st, got, c->repeat);
        goto out;
    }
    FILE *r = fopen(out, "rb");
    size_t rd = r ? fread(buf, 1, nn * 4, r) : 0;
    if (r) fclose(r);
    if (rd != nn * 4) {
        npk_err(NPK_EIO, "%s wrote %zu bytes to %s, not %zu", script, rd, out, nn * 4);
        goto out;
    }
    for (size_t i = 0; i < nn; i++) {
        const unsigned char *b = buf + 4 * i;
        int32_t v = (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
        if (v != want[i]) {
            npk_err(NPK_EDEVICE, "the reference Python result differs from npukit's at [%zu][%zu]: %d, npukit %d",
                    i / (size_t)n, i % (size_t)n, (int)v, (int)want[i]);
            goto out;
        }
    }
    rc = 0;
out:
    if (fi >= 0) unlink(in);
    if (fo >= 0) unlink(out);
    free(buf);
    return rc ? bench_fail(c, "reference Python runtime") : 0;
}

static int bench_e1_matmul(ctx *c) {
    npk_port *p = NULL;
    npk_e1 *e = NULL;
    npk_lower *L = NULL;
    npk_ltensor A = {0}, B = {0};
    int rc = 1;
    const int64_t n = c->size ? c->size : 64;
    c->cur_size = (uint32_t)n;
    char ename[80], gname[80];
    snprintf(ename, sizeof ename, "e1 tiled matmul %lld^3 (ring batches), host time", (long long)n);
    snprintf(gname, sizeof gname, "baseline: CPU reference matmul %lld^3", (long long)n);
    double *t = calloc((size_t)c->repeat, sizeof *t), *g = calloc((size_t)c->repeat, sizeof *g);
    double *tc = calloc((size_t)c->repeat, sizeof *tc), *pc = calloc((size_t)c->repeat, sizeof *pc);
    int have_pc = 0;
    if (!t || !g || !tc || !pc || npk_port_open(&p, "sim", npk_e1_class.name, NULL) || npk_e1_open(&e, p) ||
        npk_lower_new(&L, e) ||
        npk_lt_alloc2(&A, (unsigned)n, (unsigned)n) || npk_lt_alloc2(&B, (unsigned)n, (unsigned)n)) {
        bench_fail(c, "e1");
        goto out;
    }
    for (int64_t i = 0; i < n * n; i++) A.data[i] = rnd8();
    for (int64_t i = 0; i < n * n; i++) B.data[i] = rnd8();
    npk_lower_out o, go;
    npk_lower_evidence ev;
    /* warm-up: the driver's register shadow is cold on the first run (one more MMIO) */
    if (npk_lower_matmul(L, 0, &A, &B, &o, &go, &ev)) {
        bench_fail(c, "matmul");
        goto out;
    }
    /* the reference Python runtime on the same tensors, its result checked against this one */
    char pybuf[1024], pname[96];
    const char *pyref = e1_pyref_path(pybuf, sizeof pybuf);
    snprintf(pname, sizeof pname, "baseline: reference Python runtime %lld^3", (long long)n);
    if (pyref) {
        progress(c, "python", 0, 1);
        int bad = e1_pyref_times(c, pyref, &A, &B, n, o.t[0].data, g, pc, &have_pc);
        cli_progress_end();
        if (bad) {
            npk_lower_out_free(&o);
            npk_lower_out_free(&go);
            goto out;
        }
    } else if (!c->json) {
        printf("  %-46s %s\n", "reference Python baseline unavailable:",
               "no e1_matmul_bench.py at $NPUKIT_E1_PYREF or ~/.cache/npukit/e1py (docs/performance.md)");
    }
    npk_lower_out_free(&o);
    npk_lower_out_free(&go);
    if (time_e1_matmul(c, L, &A, &B, n, &ev, t, tc, "")) goto out;
    add_samples(c, "npu", "ms", t, c->repeat, ename);
    if (pyref) {
        /* issue 15 point 4 wants >= 300; CPU time too: the machine's load moves the wall ratio */
        char cname[128], pcname[128];
        add_samples(c, "baseline", "ms", g, c->repeat, pname);
        add_ratio(c, "e1 speed / reference Python runtime speed", pname, ename, "higher");
        if (have_pc) {
            snprintf(cname, sizeof cname, "%s, CPU", ename);
            snprintf(pcname, sizeof pcname, "%s, CPU", pname);
            add_samples(c, "npu", "ms", tc, c->repeat, cname);
            add_samples(c, "baseline", "ms", pc, c->repeat, pcname);
            add_ratio(c, "e1 / reference Python runtime speed, CPU time", pcname, cname, "higher");
        }
    }
    npk_lower_evidence ev_ring = ev;
    /* the same tiles with one MMIO start each (no ring): issue 15 point 4 wants the ring at least as fast */
    npk_lower_set_batching(L, 0);
    int bad = time_e1_matmul(c, L, &A, &B, n, &ev, g, NULL, " (direct MMIO)");
    npk_lower_set_batching(L, 1);
    if (bad) goto out;
    ev = ev_ring;
    char dname[80];
    snprintf(dname, sizeof dname, "e1 tiled matmul %lld^3 (direct MMIO per tile), host time", (long long)n);
    add_samples(c, "npu", "ms", g, c->repeat, dname);
    add_ratio(c, "e1 ring / direct MMIO host time", ename, dname, "lower");
    /* the CPU reference, again into g */
    for (int r = 0; r < c->repeat; r++) {
        double t0 = now();
        if (npk_golden_matmul(0, &A, &B, &go)) {
            bench_fail(c, "CPU reference");
            goto out;
        }
        g[r] = (now() - t0) * 1e3;
        npk_lower_out_free(&go);
    }
    add_samples(c, "baseline", "ms", g, c->repeat, gname);
    add_ratio(c, "e1 host time / CPU reference time", ename, gname, "lower");
    add_modeled(c, "cycles", (double)ev.cycles, "e1 modeled cycles (simulated clock)");
    add_modeled(c, "TOPS", (double)ev.macs * 2.0 / ((double)ev.cycles / (double)E1_HZ) / 1e12, "e1 modeled TOPS");
    add_modeled(c, "count", (double)ev.tiles, "e1 GEMM tiles per run");
    add_modeled(c, "count", (double)ev.mmio, "e1 MMIO accesses per run");
    if (c->trace_path) {
        npk_trace *tr = npk_trace_new();
        npk_port_set_trace(p, tr);
        int bad = npk_lower_matmul(L, 0, &A, &B, &o, &go, &ev);
        npk_port_set_trace(p, NULL);
        if (!bad) {
            npk_lower_out_free(&o);
            npk_lower_out_free(&go);
        }
        if (end_trace(c, tr, bad, 0)) goto out;
    }
    rc = 0;
out:
    cli_progress_end();
    npk_lt_free(&A);
    npk_lt_free(&B);
    npk_lower_free(L);
    if (e) npk_e1_close(e);
    npk_port_close(p);
    free(t);
    free(g);
    free(tc);
    free(pc);
    return rc;
}

/* ---- LLM decode on pccx versus the fp32 CPU decoder ------------------------ */

/* Positions of a greedy decode: llm-pccx 200 (issue 15's own measurement),
 * llm-pccx-15m 16; --size N overrides both. */
#define LLM_STEPS 200
#define LLM15M_STEPS 16

/* CPU time (user + system) of this process: the decoders and run.c (below)
 * are timed alike by the CPU time they use, so that waits for a core on the
 * shared machine count on neither side. */
static double proc_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int decode_once(ctx *c, npk_llm_decoder *d, const npk_llm_tokenizer *tk, const char *what, int steps,
                       double *secs) {
    npk_llm_sampler s;
    if (npk_llm_sampler_init(&s, tk->vocab_size, 0.0f, 1)) return bench_fail(c, what);
    double t0 = proc_cpu_now();
    int n = npk_llm_generate(d, tk, "", steps, &s, NULL, NULL, NULL);
    *secs = proc_cpu_now() - t0;
    npk_llm_sampler_free(&s);
    if (n < 0) return bench_fail(c, what);
    return 0;
}

/* The llama2.c run.c baseline: a binary built from llama2.c's run.c (not part
 * of npukit and never built by it; docs/performance.md says how to obtain and
 * build it) given as $NPUKIT_RUNC or found at ~/.cache/npukit/llama2c/run;
 * NULL if there is none. */
static const char *runc_path(char *buf, size_t n) {
    const char *e = getenv("NPUKIT_RUNC");
    if (e && *e) snprintf(buf, n, "%s", e);
    else snprintf(buf, n, "%s/.cache/npukit/llama2c/run", getenv("HOME") ? getenv("HOME") : ".");
    return access(buf, X_OK) == 0 ? buf : NULL;
}

/* One greedy run of run.c for steps positions, output to /dev/null: the CPU
 * time (user + system, wait4) of the whole process into *cpu. */
static int runc_proc(ctx *c, const char *bin, const char *mp, const char *tp, int steps, double *cpu) {
    char n[16];
    snprintf(n, sizeof n, "%d", steps);
    char *const argv[] = {(char *)bin, (char *)mp, "-z", (char *)tp, "-t", "0", "-n", n, NULL};
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int dn = open("/dev/null", O_WRONLY);
        if (dn >= 0) dup2(dn, 1), dup2(dn, 2);
        execv(bin, argv);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &st, 0, &ru) < 0) return bench_fail(c, "run.c");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "npu bench: %s -n %d failed (status %d)\n", bin, steps, st);
        return bench_fail(c, "run.c");
    }
    *cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
    return 0;
}

/* run.c's decode speed in tokens/s of CPU time: a process of steps positions
 * minus one of a single position (start, checkpoint and tokenizer load, the
 * first position), over steps - 1 positions. Its own "achieved tok/s" print
 * reads a millisecond clock and wall time, far too coarse for runs of tens of
 * milliseconds on a shared machine. */
static int runc_once(ctx *c, const char *bin, const char *mp, const char *tp, int steps, double *tps) {
    double full, one;
    if (runc_proc(c, bin, mp, tp, steps, &full) || runc_proc(c, bin, mp, tp, 1, &one)) return 1;
    double dt = full - one;
    *tps = steps > 1 && dt > 0 ? (double)(steps - 1) / dt : 0;
    if (!(*tps > 0)) {
        fprintf(stderr, "npu bench: %s: %d positions took no measurable CPU time more than 1\n", bin, steps);
        return bench_fail(c, "run.c");
    }
    return 0;
}

/* Greedy decode of steps positions on pccx and on the fp32 CPU decoder (and
 * run.c when there is one), alternating per repetition. */
static int llm_compare(ctx *c, const char *mp, const char *tp, const char *label, int steps) {
    npk_llm_model *m = NULL;
    npk_llm_tokenizer *tk = NULL;
    int rc = 1;
    char rbuf[1024];
    const char *runc = runc_path(rbuf, sizeof rbuf);
    double *tn = calloc((size_t)c->repeat, sizeof *tn), *tc = calloc((size_t)c->repeat, sizeof *tc),
           *tr = calloc((size_t)c->repeat, sizeof *tr), *tq = calloc((size_t)c->repeat, sizeof *tq);
    if (!tn || !tc || !tr || !tq || npk_llm_model_load(mp, &m) || npk_llm_tokenizer_load(tp, m->cfg.vocab_size, &tk)) {
        bench_fail(c, label);
        goto out;
    }
    c->cur_size = (uint32_t)steps;
    npk_llm_stats st = {0};
    for (int r = 0; r < c->repeat; r++) {
        progress(c, "decode", r, c->repeat);
        npk_llm_decoder *d = NULL, *cpu = NULL;
        double secs;
        /* decoder creation (INT4 quantization, upload) is not timed */
        if (npk_llm_decoder_pccx(m, NULL, &d)) {
            bench_fail(c, "pccx decoder");
            goto out;
        }
        if (decode_once(c, d, tk, "pccx decode", steps, &secs)) {
            npk_llm_decoder_free(d);
            goto out;
        }
        npk_llm_stats_get(d, &st);
        tn[r] = (double)st.tokens / secs;
        npk_llm_decoder_free(d);
        if (npk_llm_decoder_cpu(m, &cpu)) {
            bench_fail(c, "cpu decoder");
            goto out;
        }
        if (decode_once(c, cpu, tk, "cpu decode", steps, &secs)) {
            npk_llm_decoder_free(cpu);
            goto out;
        }
        npk_llm_stats cs;
        npk_llm_stats_get(cpu, &cs);
        tc[r] = (double)cs.tokens / secs;
        npk_llm_decoder_free(cpu);
        if (runc && runc_once(c, runc, mp, tp, steps, &tr[r])) goto out;
    }
    cli_progress_end();
    /* the ratio to run.c per repetition, before add_samples sorts tn and tr */
    for (int r = 0; runc && r < c->repeat; r++) tq[r] = tn[r] / tr[r];
    add_samples(c, "npu", "tokens/s", tn, c->repeat, "pccx INT4 decode, host simulation");
    add_samples(c, "baseline", "tokens/s", tc, c->repeat, "baseline: fp32 CPU decoder");
    add_ratio(c, "pccx simulation / fp32 CPU speed", "pccx INT4 decode, host simulation", "baseline: fp32 CPU decoder",
              "higher");
    if (runc) {
        /* the figure's name stays the same whichever binary ran (--compare matches names) */
        if (!c->json) printf("  %-46s %s\n", "llama2.c run.c baseline binary:", runc);
        add_samples(c, "baseline", "tokens/s", tr, c->repeat, "baseline: llama2.c run.c ($NPUKIT_RUNC)");
        add_ratio(c, "pccx simulation / run.c speed", "pccx INT4 decode, host simulation",
                  "baseline: llama2.c run.c ($NPUKIT_RUNC)", "higher");
        add_samples(c, "ratio", "x", tq, c->repeat, "pccx / run.c, same repetition");
        c->figs[c->nfigs - 1].better = "higher";
        add_ratio(c, "fp32 CPU decoder / run.c speed", "baseline: fp32 CPU decoder",
                  "baseline: llama2.c run.c ($NPUKIT_RUNC)", "higher");
    } else if (!c->json) {
        printf("  %-46s %s\n", "llama2.c run.c baseline unavailable:",
               "no executable at $NPUKIT_RUNC or ~/.cache/npukit/llama2c/run (docs/performance.md)");
    }
    if (st.tokens && st.device_cycles) {
        double spt = (double)st.device_cycles / (double)st.device_hz / (double)st.tokens;
        add_modeled(c, "tokens/s", 1.0 / spt, "pccx modeled decode (device busy time)");
        add_modeled(c, "ms/token", spt * 1e3, "pccx modeled time per token");
    }
    if (c->trace_path) {
        npk_llm_pccx_opts po = {.trace_path = c->trace_path};
        npk_llm_decoder *d = NULL;
        double secs;
        if (npk_llm_decoder_pccx(m, &po, &d) || decode_once(c, d, tk, "traced decode", steps, &secs) ||
            npk_llm_decoder_finish(d)) {
            if (!c->failed) bench_fail(c, "trace");
            npk_llm_decoder_free(d);
            goto out;
        }
        npk_llm_decoder_free(d);
    }
    rc = 0;
out:
    cli_progress_end();
    npk_llm_tokenizer_free(tk);
    npk_llm_model_free(m);
    free(tn);
    free(tc);
    free(tr);
    free(tq);
    return rc;
}

static int bench_llm(ctx *c) {
    char mp[1024], tp[1024];
    snprintf(mp, sizeof mp, "%s/models/stories260K/stories260K.bin", c->shared);
    snprintf(tp, sizeof tp, "%s/models/stories260K/tok512.bin", c->shared);
    return llm_compare(c, mp, tp, "stories260K (use --shared DIR)", c->size ? (int)c->size : LLM_STEPS);
}

/* The stories15M shape with deterministic random weights (npu llm-synth
 * --shape stories15M, seed 1), written once to ~/.cache/npukit/llm/. */
static int bench_llm15m(ctx *c) {
    char dir[1024], mp[1200], tp[1200];
    snprintf(dir, sizeof dir, "%s/.cache/npukit/llm", getenv("HOME") ? getenv("HOME") : ".");
    snprintf(mp, sizeof mp, "%s/stories15M-synth-s1.bin", dir);
    snprintf(tp, sizeof tp, "%s/stories15M-synth-s1-tok.bin", dir);
    if (access(mp, R_OK) || access(tp, R_OK)) {
        npk_llm_config cfg;
        char mk[1100];
        snprintf(mk, sizeof mk, "mkdir -p '%s'", dir);
        if (system(mk) != 0 || npk_llm_shape_parse("stories15M", &cfg) || npk_llm_synth_write(&cfg, 1, mp, tp))
            return bench_fail(c, "stories15M synthetic checkpoint");
    }
    return llm_compare(c, mp, tp, "stories15M synthetic checkpoint", c->size ? (int)c->size : LLM15M_STEPS);
}

/* ---- ONNX: cifar10-lenet-int8 on an integer device versus the CPU reference -- */

static int run_graph(ctx *c, npk_graph *g, const char *device, const npk_tensor *in, npk_trace *tr, npk_tensor **outs,
                     size_t *nouts, npk_run_report *rep) {
    npk_run_opts o = {.device = device, .trace = tr};
    memset(rep, 0, sizeof *rep);
    if (npk_graph_run(g, &o, in, 1, outs, nouts, rep)) return bench_fail(c, device);
    return 0;
}

static void free_outs(npk_tensor *o, size_t n) {
    for (size_t i = 0; i < n; i++) npk_tensor_free(&o[i]);
    free(o);
}

static int bench_onnx(ctx *c, const char *device) {
    char mp[1024], ip[1024];
    snprintf(mp, sizeof mp, "%s/models/cifar10-lenet-int8/model.onnx", c->shared);
    snprintf(ip, sizeof ip, "%s/models/cifar10-lenet-int8/test_data_set_0/input_0.pb", c->shared);
    npk_graph *g = NULL;
    npk_tensor in = {0}, *ref = NULL, *out = NULL;
    size_t nref = 0, nout = 0;
    npk_run_report rep;
    int rc = 1;
    double *t = calloc((size_t)c->repeat, sizeof *t), *tc = calloc((size_t)c->repeat, sizeof *tc);
    if (!t || !tc || npk_graph_load_file(&g, mp) || npk_tensor_load_pb_file(&in, ip)) {
        bench_fail(c, "cifar10-lenet-int8 (use --shared DIR)");
        goto out;
    }
    uint64_t cycles = 0, macs = 0, hz = 0;
    for (int r = 0; r < c->repeat; r++) {
        progress(c, device, r, c->repeat);
        double t0 = now();
        if (run_graph(c, g, device, &in, NULL, &out, &nout, &rep)) goto out;
        t[r] = (now() - t0) * 1e3;
        cycles = rep.device_cycles;
        macs = rep.device_macs;
        hz = rep.device_hz;
        npk_run_report_fini(&rep);
        t0 = now();
        if (run_graph(c, g, "cpu", &in, NULL, &ref, &nref, &rep)) goto out;
        tc[r] = (now() - t0) * 1e3;
        npk_run_report_fini(&rep);
        int same = nout == nref && nout > 0;
        for (size_t i = 0; same && i < nout; i++)
            same = npk_tensor_bytes(&out[i]) == npk_tensor_bytes(&ref[i]) &&
                   !memcmp(out[i].data, ref[i].data, npk_tensor_bytes(&out[i]));
        free_outs(out, nout);
        free_outs(ref, nref);
        out = ref = NULL;
        nout = nref = 0;
        if (!same) {
            npk_err(NPK_EDEVICE, "the %s outputs differ from the CPU reference's", device);
            bench_fail(c, "check");
            goto out;
        }
    }
    cli_progress_end();
    char name[80];
    snprintf(name, sizeof name, "%s: cifar10-lenet-int8 (batch %lld), host time", device,
             in.rank ? (long long)in.dims[0] : 1LL);
    add_samples(c, "npu", "ms", t, c->repeat, name);
    add_samples(c, "baseline", "ms", tc, c->repeat, "baseline: the same model on the CPU reference");
    add_ratio(c, "device run time / CPU reference time", name, "baseline: the same model on the CPU reference",
              "lower");
    if (hz && cycles) {
        add_modeled(c, "us", (double)cycles / (double)hz * 1e6, "modeled inference time (device cycles)");
        add_modeled(c, "TOPS", (double)macs * 2.0 / ((double)cycles / (double)hz) / 1e12, "modeled TOPS");
    }
    if (c->trace_path) {
        npk_trace *tr = npk_trace_new();
        int bad = run_graph(c, g, device, &in, tr, &out, &nout, &rep);
        npk_run_report_fini(&rep);
        free_outs(out, nout);
        out = NULL;
        nout = 0;
        if (end_trace(c, tr, bad, 1)) goto out;
    }
    rc = 0;
out:
    cli_progress_end();
    free_outs(out, nout);
    free_outs(ref, nref);
    npk_tensor_free(&in);
    npk_graph_free(g);
    free(t);
    free(tc);
    return rc;
}

static int bench_onnx_dev(ctx *c) { return bench_onnx(c, c->device); }

/* ---- ONNX: e1 versus v0 on the same quantized model (issue 15 point 4) --------- */

static int bench_onnx_e1_v0(ctx *c) {
    const char *model = c->models && c->models->n ? c->models->v[0] : "onnx-zoo/ppocr-cls-qdq-s8";
    char mp[1024], ip[1100];
    snprintf(mp, sizeof mp, "%s/models/%s/model.onnx", c->shared, model);
    snprintf(ip, sizeof ip, "%s/models/%s/test_data_set_0/input_0.pb", c->shared, model);
    npk_graph *g = NULL;
    npk_tensor in = {0}, *o[2] = {NULL, NULL};
    size_t no[2] = {0, 0};
    npk_run_report rep;
    int rc = 1;
    double *t[2] = {calloc((size_t)c->repeat, sizeof(double)), calloc((size_t)c->repeat, sizeof(double))};
    double *cpu[2] = {calloc((size_t)c->repeat, sizeof(double)), calloc((size_t)c->repeat, sizeof(double))};
    const char *const dev[2] = {npk_v0_class.name, npk_e1_class.name};
    if (!t[0] || !t[1] || !cpu[0] || !cpu[1] || npk_graph_load_file(&g, mp) || npk_tensor_load_pb_file(&in, ip)) {
        bench_fail(c, model);
        goto out;
    }
    for (int r = 0; r < c->repeat; r++)
        for (int k = 0; k < 2; k++) {
            progress(c, dev[k], r, c->repeat);
            free_outs(o[k], no[k]);
            o[k] = NULL, no[k] = 0;
            double t0 = now(), c0 = cpu_now();
            if (run_graph(c, g, dev[k], &in, NULL, &o[k], &no[k], &rep)) goto out;
            t[k][r] = (now() - t0) * 1e3;
            cpu[k][r] = (cpu_now() - c0) * 1e3;
            npk_run_report_fini(&rep);
        }
    cli_progress_end();
    int same = no[0] == no[1] && no[0] > 0;
    for (size_t i = 0; same && i < no[0]; i++)
        same = npk_tensor_bytes(&o[0][i]) == npk_tensor_bytes(&o[1][i]) &&
               !memcmp(o[0][i].data, o[1][i].data, npk_tensor_bytes(&o[0][i]));
    if (!same) {
        npk_err(NPK_EDEVICE, "the e1 outputs differ from v0's");
        bench_fail(c, "check");
        goto out;
    }
    char n0[96], n1[96], p0[96], p1[96];
    const char *base = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
    snprintf(n0, sizeof n0, "%s on v0, host time", base);
    snprintf(n1, sizeof n1, "%s on e1, host time", base);
    snprintf(p0, sizeof p0, "%s on v0, host CPU time", base);
    snprintf(p1, sizeof p1, "%s on e1, host CPU time", base);
    add_samples(c, "baseline", "ms", t[0], c->repeat, n0);
    add_samples(c, "npu", "ms", t[1], c->repeat, n1);
    add_ratio(c, "e1 / v0 host time (same model, same outputs)", n1, n0, "lower");
    add_samples(c, "baseline", "ms", cpu[0], c->repeat, p0);
    add_samples(c, "npu", "ms", cpu[1], c->repeat, p1);
    add_ratio(c, "e1 / v0 host CPU time (the machine's load left out)", p1, p0, "lower");
    rc = 0;
out:
    cli_progress_end();
    for (int k = 0; k < 2; k++) free_outs(o[k], no[k]), free(t[k]), free(cpu[k]);
    npk_tensor_free(&in);
    npk_graph_free(g);
    return rc;
}

/* ---- ONNX: npukit's CPU path versus ONNX Runtime (issue 15 point 2) ------------ */

#ifndef NPUKIT_SOURCE_DIR_DEFAULT
#define NPUKIT_SOURCE_DIR_DEFAULT "."
#endif

/* ONNX Runtime's milliseconds per run on dir (scripts/ort_bench.js through
 * node, `threads` intra-op threads, c->repeat runs after a warm-up): sorted
 * into ms[0..repeat). Returns 0, or -1 when node or onnxruntime-node is
 * missing or ONNX Runtime refused the model (*why says which). */
static int ort_times(const ctx *c, const char *dir, int threads, double *ms, char *why, size_t whylen) {
    const char *ort = getenv("NPUKIT_ORT_DIR");
    char ortdir[1024], cmd[4096];
    if (ort && *ort) snprintf(ortdir, sizeof ortdir, "%s", ort);
    else snprintf(ortdir, sizeof ortdir, "%s/.cache/npukit/ortnode", getenv("HOME") ? getenv("HOME") : ".");
    snprintf(cmd, sizeof cmd, "%s/node_modules/onnxruntime-node/package.json", ortdir);
    if (access(cmd, R_OK)) {
        snprintf(why, whylen, "onnxruntime-node not installed in %.200s (scripts/deps.sh)", ortdir);
        return -1;
    }
    snprintf(cmd, sizeof cmd, "node '%s/scripts/ort_bench.js' '%s' %d %d '%s' 2>/dev/null", c->srcdir, ortdir, threads,
             c->repeat, dir);
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    if (!f) {
        snprintf(why, whylen, "cannot run node");
        return -1;
    }
    static char line[65536];
    int rc = -1;
    snprintf(why, whylen, "node scripts/ort_bench.js printed nothing (is node installed?)");
    while (fgets(line, sizeof line, f)) {
        json_error_t e;
        json_t *j = json_loads(line, 0, &e), *arr = j ? json_object_get(j, "ms") : NULL;
        if (j && json_is_array(arr) && (int)json_array_size(arr) == c->repeat) {
            for (int r = 0; r < c->repeat; r++) ms[r] = json_number_value(json_array_get(arr, (size_t)r));
            rc = 0;
        } else if (j && json_string_value(json_object_get(j, "error"))) {
            snprintf(why, whylen, "ONNX Runtime: %.300s", json_string_value(json_object_get(j, "error")));
        }
        json_decref(j);
    }
    pclose(f);
    return rc;
}

static const char *const onnx_zoo_models[] = {"onnx-zoo/hello-deepa-qdq-s8", "onnx-zoo/ppocr-cls-mobile-v2",
                                              "onnx-zoo/ppocr-cls-qdq-s8",   "onnx-zoo/ppocr-v4-det",
                                              "onnx-zoo/silero-vad-v5",      "cifar10-lenet-int8"};
static const char *const onnx_imagenet_models[] = {"imagenet-mobilenetv2-synthetic-int8",
                                                   "imagenet-resnet50-synthetic-int8"};

/* One model: npukit's CPU path (fast kernels), host ms per run of
 * test_data_set_0; ONNX Runtime at 1 thread and at all threads; the speed
 * ratios. */
static int bench_onnx_cpu_model(ctx *c, const char *model, double *ratio_out) {
    char dir[1024], mp[1100], ip[1200];
    snprintf(dir, sizeof dir, "%s/models/%s", c->shared, model);
    snprintf(mp, sizeof mp, "%s/model.onnx", dir);
    const char *shortname = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
    npk_graph *g = NULL;
    npk_tensor in[8];
    size_t nin = 0;
    int rc = 1;
    double *t = calloc((size_t)c->repeat, sizeof *t);
    memset(in, 0, sizeof in);
    *ratio_out = 0;
    if (!t || npk_graph_load_file(&g, mp)) {
        bench_fail(c, mp);
        goto out;
    }
    nin = npk_graph_n_inputs(g);
    if (nin > 8) nin = 8;
    for (size_t k = 0; k < nin; k++) {
        snprintf(ip, sizeof ip, "%s/test_data_set_0/input_%zu.pb", dir, k);
        if (npk_tensor_load_pb_file(&in[k], ip)) {
            bench_fail(c, ip);
            goto out;
        }
    }
    npk_run_opts o = {.device = "cpu"};
    for (int r = -1; r < c->repeat; r++) { /* r = -1: warm-up */
        progress(c, shortname, r + 1, c->repeat + 1);
        npk_tensor *outs = NULL;
        size_t nouts = 0;
        double t0 = now();
        int grc = npk_graph_run(g, &o, in, nin, &outs, &nouts, NULL);
        if (grc) {
            if (grc == -NPK_EUNSUPPORTED) { /* a model npukit cannot run yet: no figure, no failure */
                if (!c->json) printf("  %-46s skipped: %s\n", shortname, npk_errmsg());
                rc = 0;
            } else {
                bench_fail(c, shortname);
            }
            goto out;
        }
        if (r >= 0) t[r] = (now() - t0) * 1e3;
        free_outs(outs, nouts);
    }
    cli_progress_end();
    char nname[80], oname[2][80] = {"", ""}, why[512];
    snprintf(nname, sizeof nname, "%s: npukit CPU, 1 thread", shortname);
    c->cur_threads = 1;
    add_samples(c, "npu", "ms", t, c->repeat, nname);
    for (int pass = 0; pass < 2; pass++) {
        int th = pass ? c->threads : 1;
        if (pass && th <= 1) break;
        progress(c, "onnxruntime", pass, 2);
        if (ort_times(c, dir, th, t, why, sizeof why)) {
            cli_progress_end();
            if (!c->json) printf("  %-46s %s\n", "ONNX Runtime baseline unavailable:", why);
            break;
        }
        cli_progress_end();
        c->cur_threads = th;
        snprintf(oname[pass], sizeof oname[pass], "%s: baseline ONNX Runtime, %d thread%s", shortname, th,
                 th == 1 ? "" : "s");
        add_samples(c, "baseline", "ms", t, c->repeat, oname[pass]);
    }
    if (oname[0][0]) {
        /* speed ratio = ORT time / npukit time: >= 0.5 is issue 15's goal */
        char rn[96];
        snprintf(rn, sizeof rn, "%s: npukit / ONNX Runtime speed, equal threads (1)", shortname);
        add_ratio(c, rn, oname[0], nname, "higher");
        const figure *f = find_fig(c, rn);
        if (f) *ratio_out = f->med;
    }
    if (oname[1][0]) {
        char rn[96];
        snprintf(rn, sizeof rn, "%s: npukit (1 thread) / ONNX Runtime %d threads", shortname, c->threads);
        add_ratio(c, rn, oname[1], nname, "higher");
    }
    rc = 0;
out:
    cli_progress_end();
    for (size_t k = 0; k < 8; k++) npk_tensor_free(&in[k]);
    npk_graph_free(g);
    free(t);
    return rc;
}

static int bench_onnx_cpu_set(ctx *c, const char *const *models, size_t n) {
    int rc = 0, have = 0;
    double logsum = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        double r;
        const char *base = strrchr(models[i], '/') ? strrchr(models[i], '/') + 1 : models[i];
        int want = !c->models || !c->models->n;
        for (size_t k = 0; c->models && k < c->models->n; k++) want |= !strcmp(c->models->v[k], base);
        if (!want) continue;
        if (bench_onnx_cpu_model(c, models[i], &r)) rc = 1;
        else if (r > 0) {
            logsum += log(r);
            worst = have++ ? (r < worst ? r : worst) : r;
        }
    }
    if (have) {
        double gm = exp(logsum / have);
        add_fig(c, "ratio", "x", gm, gm, gm, 1, "geometric mean npukit / ONNX Runtime speed, 1 thread (%d models)", have);
        c->figs[c->nfigs - 1].better = "higher";
        add_fig(c, "ratio", "x", worst, worst, worst, 1, "lowest npukit / ONNX Runtime speed, 1 thread");
        c->figs[c->nfigs - 1].better = "higher";
    }
    return rc;
}

static int bench_onnx_cpu(ctx *c) {
    return bench_onnx_cpu_set(c, onnx_zoo_models, sizeof onnx_zoo_models / sizeof onnx_zoo_models[0]);
}
static int bench_onnx_cpu_imagenet(ctx *c) {
    return bench_onnx_cpu_set(c, onnx_imagenet_models, sizeof onnx_imagenet_models / sizeof onnx_imagenet_models[0]);
}

/* ---- the cost of --report and --trace (issue 15 point 7) ----------------------------- */

/* Run this npu (/proc/self/exe) with argv, output to /dev/null; host wall and
 * CPU (user + system) seconds of the child. Returns its exit status or -1. */
static int run_self(char *const *argv, double *wall, double *cpu) {
    fflush(stdout);
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        int dn = open("/dev/null", O_WRONLY);
        if (dn >= 0) dup2(dn, 1), dup2(dn, 2);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    if (pid < 0) return -1;
    int st = 0;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0) return -1;
    *wall = now() - t0;
    *cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `npu run` of ResNet-50 (int8, batch 4) on v0 plainly, with --report and
 * with --trace FILE, the three interleaved per repetition so that the
 * machine's load hits them alike; wall and CPU time per variant and the
 * ratios to the plain run (goal: <= 1.10). --model picks another model. */
static int bench_report_cost(ctx *c) {
    const char *model = c->models && c->models->n ? c->models->v[0] : "imagenet-resnet50-synthetic-int8";
    char mp[1024], ip[1100], tp[64];
    snprintf(mp, sizeof mp, "%s/models/%s/model.onnx", c->shared, model);
    snprintf(ip, sizeof ip, "%s/models/%s/test_data_set_0/input_0.pb", c->shared, model);
    snprintf(tp, sizeof tp, "/tmp/npu-bench-trace-%d.json", (int)getpid());
    if (access(mp, R_OK)) {
        npk_err(NPK_EIO, "cannot read %s", mp);
        return bench_fail(c, model);
    }
    static const char *const what[3] = {"plain", "--report", "--trace FILE"};
    double *w[3], *u[3];
    int rc = 0;
    for (int k = 0; k < 3; k++) {
        w[k] = calloc((size_t)c->repeat, sizeof(double));
        u[k] = calloc((size_t)c->repeat, sizeof(double));
        if (!w[k] || !u[k]) rc = 1;
    }
    for (int r = 0; !rc && r < c->repeat; r++)
        for (int k = 0; !rc && k < 3; k++) {
            progress(c, what[k], r * 3 + k, c->repeat * 3);
            char *argv[12] = {"npu", "run", mp, "--device", (char *)npk_v0_class.name, "--input", ip, NULL, NULL, NULL};
            if (k == 1) argv[7] = "--report";
            if (k == 2) argv[7] = "--trace", argv[8] = tp;
            if (run_self(argv, &w[k][r], &u[k][r]) != 0) {
                npk_err(NPK_EIO, "npu run %s --device v0 %s failed", model, what[k]);
                rc = bench_fail(c, model);
            }
            w[k][r] *= 1e3;
            u[k][r] *= 1e3;
        }
    cli_progress_end();
    unlink(tp);
    if (!rc) {
        char wn[3][96], un[3][96];
        for (int k = 0; k < 3; k++) {
            snprintf(wn[k], sizeof wn[k], "npu run --device v0, %s: host wall time", what[k]);
            snprintf(un[k], sizeof un[k], "npu run --device v0, %s: host CPU time", what[k]);
            add_samples(c, k ? "npu" : "baseline", "ms", w[k], c->repeat, wn[k]);
            add_samples(c, k ? "npu" : "baseline", "ms", u[k], c->repeat, un[k]);
        }
        add_ratio(c, "--report / plain, wall time", wn[1], wn[0], "lower");
        add_ratio(c, "--report / plain, CPU time", un[1], un[0], "lower");
        add_ratio(c, "--trace / plain, wall time", wn[2], wn[0], "lower");
        add_ratio(c, "--trace / plain, CPU time", un[2], un[0], "lower");
    }
    for (int k = 0; k < 3; k++) free(w[k]), free(u[k]);
    return rc;
}

/* ---- the suite ---------------------------------------------------------------- */

typedef struct bench {
    const char *name;
    const char *what;
    int (*run)(ctx *c);
    int pending; /* not run by default */
    /* 1: one bench per device whose ONNX backend compiles whole models
     * (npk_npkb_device_ok), in device-table order; name and what are
     * formats that take the device name */
    int per_device;
} bench;

static const bench suite[] = {
    {"v0-gemm-1024", "functional int8 GEMM 1024^3 on v0 versus oneDNN's int8 GEMM (same run)", bench_v0_gemm, 0, 0},
    {"shell-gemm-512",
     "int8 and bf16 GEMM 512^3 through the shell device versus the v0 int8 kernel and oneDNN's sgemm (same run)",
     bench_shell_gemm, 0, 0},
    {"e1-mmio", "e1 MMIO register accesses per second through the in-process port", bench_e1_mmio, 0, 0},
    {"e1-matmul-64", "e1 tiled int8 matmul 64^3 (descriptor ring) versus the CPU reference", bench_e1_matmul, 0, 0},
    {"llm-pccx", "stories260K greedy decode (200 positions; --size N sets them): pccx INT4 versus the fp32 CPU decoder and run.c, CPU time", bench_llm, 0, 0},
    {"llm-pccx-15m", "stories15M shape (random weights, cached), 16 positions (--size N): the same comparison", bench_llm15m, 0, 0},
    {"onnx-%s-lenet", "ONNX cifar10-lenet-int8 on %s versus the CPU reference (same outputs)", bench_onnx_dev, 0, 1},
    {"v0-resnet50-layers", "ResNet-50's layer shapes: v0 modeled cycles versus measured Gemmini (tiled_conv_auto)",
     bench_v0_resnet50_layers, 0, 0},
    {"onnx-cpu", "ONNX CPU path (fast kernels) versus ONNX Runtime at 1 and all threads: onnx-zoo and LeNet",
     bench_onnx_cpu, 0, 0},
    {"onnx-cpu-imagenet", "the same on the two ImageNet int8 models (ResNet-50 batch 4: ONNX Runtime takes most of the time, tens of seconds with --repeat 5)",
     bench_onnx_cpu_imagenet, 1, 0},
    {"onnx-e1-v0", "ONNX ppocr-cls-qdq-s8 (int8 QDQ conv net) on e1 versus v0: host time, same outputs",
     bench_onnx_e1_v0, 0, 0},
    {"report-cost", "npu run of int8 ResNet-50 on v0: plain, --report, --trace (host time ratios; minutes)",
     bench_report_cost, 1, 0},
};
#define NSUITE (sizeof suite / sizeof suite[0])

/* The suite with each per_device row expanded into its devices' rows. */
#define MAXROWS 32
static bench rows[MAXROWS];
static const char *row_dev[MAXROWS];
static size_t nrows;

static void expand_suite(void) {
    static char text[MAXROWS][2][160];
    if (nrows) return;
    size_t ndev;
    const npk_dev_rt *const *d = npk_dev_rts(&ndev);
    for (size_t i = 0; i < NSUITE; i++)
        for (size_t k = 0; k < (suite[i].per_device ? ndev : 1); k++) {
            const char *dev = suite[i].per_device ? d[k]->model->name : NULL;
            if ((dev && !npk_npkb_device_ok(dev)) || nrows == MAXROWS) continue;
            row_dev[nrows] = dev;
            rows[nrows] = suite[i];
            if (dev) {
                snprintf(text[nrows][0], sizeof text[nrows][0], suite[i].name, dev);
                snprintf(text[nrows][1], sizeof text[nrows][1], suite[i].what, dev);
                rows[nrows].name = text[nrows][0];
                rows[nrows].what = text[nrows][1];
            }
            nrows++;
        }
}

typedef struct bench_args {
    int list, json, compare;
    uint32_t repeat, threads, size;
    int threads_given;
    const char *trace_path, *shared, *srcdir, *data_path;
    npk_strlist models;
} bench_args;

static const npk_opt bench_opts[] = {
    CLI_FLAG("--list", NULL, bench_args, list, "print the names of the suite and exit"),
    CLI_FLAG("--json", NULL, bench_args, json,
      "print the figures as one JSON document on stdout (schema npukit.bench.v2,\n"
      "docs/performance.md); with --compare, the comparison"),
    CLI_NUM("--repeat", NULL, U32, bench_args, repeat, "5", 1, 1000, "N", "runs per host figure (median, min and max)"),
    {"--threads", NULL, NPK_OPT_U32, offsetof(bench_args, threads), NULL, 1, 1024, 0, 0, 0, "N",
     "'all threads' for the multi-threaded baselines (default: the online\n"
     "CPUs); every baseline is also measured at 1 thread, the count set\n"
     "explicitly each time", offsetof(bench_args, threads_given) + 1},
    CLI_NUM("--size", NULL, U32, bench_args, size, NULL, 1, 4096, "N",
      "M = N = K of the GEMM benches (v0-gemm-1024: 1024, shell-gemm-512: 512, e1-matmul-64: 64);\n"
      "decode positions of llm-pccx (200) and llm-pccx-15m (16)"),
    CLI_STR("--trace", NULL, bench_args, trace_path, NULL, "FILE.json",
      "with exactly one NAME: write a Chrome/Perfetto trace of one extra\n(untimed) run of its device path"),
    CLI_STR("--data", NULL, bench_args, data_path, NULL, "FILE.csv",
      "v0-resnet50-layers: read the layers from FILE.csv (the columns of\n"
      "shared/data/gemmini-resnet50-layers/measured.csv) instead"),
    CLI_STR("--shared", NULL, bench_args, shared, NPUKIT_SHARED_DIR_DEFAULT, "DIR",
      "the shared/ directory with models/ and data/"),
    CLI_STR("--source-dir", NULL, bench_args, srcdir, NPUKIT_SOURCE_DIR_DEFAULT, "DIR",
      "npukit's source tree, for scripts/ort_bench.js (the ONNX Runtime baseline\n"
      "through node; onnxruntime-node in $NPUKIT_ORT_DIR or ~/.cache/npukit/ortnode)"),
    CLI_LIST("--model", NULL, bench_args, models, "NAME",
      "onnx-cpu, onnx-cpu-imagenet: only this model (a directory name under\n"
      "shared/models or shared/models/onnx-zoo), repeatable; report-cost,\n"
      "onnx-e1-v0: the model (path under shared/models) instead of theirs"),
    CLI_FLAG("--compare", NULL, bench_args, compare,
      "npu bench --compare OLD.json NEW.json: per figure, the ratio NEW/OLD\n"
      "of the medians and whether it improved (runs no benchmark)"),
};
#define NOPTS (sizeof bench_opts / sizeof bench_opts[0])

static void help(void) {
    expand_suite();
    printf("usage: npu bench [NAME...] [options]\n"
           "       npu bench --compare OLD.json NEW.json [--json]\n\n"
           "Runs the benchmark suite (or the named benchmarks) and prints each figure with the\n"
           "baseline measured in the same run. Host figures are the median of N runs with min and\n"
           "max; modeled figures come from the simulated device clock and are the same every run.\n"
           "Baselines run at 1 thread (equal threads: npukit's paths are single-threaded) and at\n"
           "all threads. The machine may be shared: compare figures from one run, not across runs.\n"
           "docs/performance.md explains every figure and the JSON schema.\n\n"
           "benchmarks:\n");
    for (size_t i = 0; i < nrows; i++) printf("  %-17s %s\n", rows[i].name, rows[i].what);
    printf("\noptions:\n");
    cli_help_opts(bench_opts, NOPTS);
    printf("A progress line is shown on a terminal (stderr) only.\n");
}

/* Schema npukit.bench.v2 (docs/performance.md, "JSON"): stable field names;
 * a later version only adds fields. */
static void print_json(const ctx *c) {
    printf("{\"schema\":\"npukit.bench.v2\",\"repeat\":%d,\"threads\":%d,\"size\":", c->repeat, c->threads);
    if (c->size) printf("%u", c->size);
    else printf("null");
    printf(",\"host_cpus\":%ld,\"baseline_available\":{\"onednn\":%s},\"figures\":[", sysconf(_SC_NPROCESSORS_ONLN),
           bench_dnnl_available() ? "true" : "false");
    for (size_t i = 0; i < c->nfigs; i++) {
        const figure *f = &c->figs[i];
        printf("%s{\"bench\":", i ? "," : "");
        npk_json_fputs(stdout, f->bench);
        printf(",\"figure\":");
        npk_json_fputs(stdout, f->name);
        printf(",\"kind\":\"%s\",\"unit\":", f->kind);
        npk_json_fputs(stdout, f->unit);
        printf(",\"better\":\"%s\",\"threads\":%d,\"size\":", f->better, f->threads);
        if (f->size) printf("%u", f->size);
        else printf("null");
        printf(",\"median\":%.9g,\"min\":%.9g,\"max\":%.9g,\"runs\":%d}", f->med, f->min, f->max, f->runs);
    }
    printf("]}\n");
}

/* ---- --compare OLD.json NEW.json ------------------------------------------------ */

static json_t *load_bench_json(const char *path) {
    json_error_t e;
    json_t *doc = json_load_file(path, 0, &e);
    if (!doc) {
        cli_fail("bench --compare: %s:%d: %s", path, e.line, e.text);
        return NULL;
    }
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    json_t *figs = json_object_get(doc, "figures");
    if (!schema || (strcmp(schema, "npukit.bench.v1") && strcmp(schema, "npukit.bench.v2")) || !json_is_array(figs)) {
        cli_fail("bench --compare: %s: not an npu bench --json document (schema npukit.bench.v1 or v2 with figures)",
                 path);
        json_decref(doc);
        return NULL;
    }
    size_t i;
    json_t *f;
    json_array_foreach(figs, i, f) {
        if (!json_is_string(json_object_get(f, "bench")) || !json_is_string(json_object_get(f, "figure")) ||
            !json_is_number(json_object_get(f, "median"))) {
            cli_fail("bench --compare: %s: figure %zu lacks bench, figure or median", path, i);
            json_decref(doc);
            return NULL;
        }
    }
    return doc;
}

static const char *fig_str(json_t *f, const char *key, const char *def) {
    const char *v = json_string_value(json_object_get(f, key));
    return v ? v : def;
}

/* A figure is identified by bench, figure name and size (a GEMM bench at
 * another --size is another figure). */
static json_t *find_json_fig(json_t *figs, json_t *like) {
    const char *bench = fig_str(like, "bench", ""), *name = fig_str(like, "figure", "");
    json_int_t size = json_integer_value(json_object_get(like, "size"));
    size_t i;
    json_t *f;
    json_array_foreach(figs, i, f) {
        if (!strcmp(fig_str(f, "bench", ""), bench) && !strcmp(fig_str(f, "figure", ""), name) &&
            json_integer_value(json_object_get(f, "size")) == size)
            return f;
    }
    return NULL;
}

static int bench_compare(const char *oldp, const char *newp, int as_json) {
    json_t *od = load_bench_json(oldp), *nd = od ? load_bench_json(newp) : NULL;
    if (!od || !nd) {
        json_decref(od);
        return 1;
    }
    json_t *of = json_object_get(od, "figures"), *nf = json_object_get(nd, "figures");
    json_t *out = json_array();
    size_t i, better = 0, worse = 0, same = 0, only = 0;
    json_t *f;
    if (!as_json) {
        printf("npu bench --compare %s %s: NEW/OLD of the medians\n", oldp, newp);
        printf("  %-19s %-50s %12s %12s %-9s %9s  %s\n", "bench", "figure", "old", "new", "unit", "new/old", "");
    }
    json_array_foreach(nf, i, f) {
        const char *b = fig_str(f, "bench", ""), *name = fig_str(f, "figure", "");
        const char *kind = fig_str(f, "kind", ""), *unit = fig_str(f, "unit", "");
        json_t *o = find_json_fig(of, f);
        if (!o) {
            only++;
            if (!as_json) printf("  %-19s %-50s %12s %12.4g %-9s %9s  only in NEW\n", b, name, "-",
                                 json_number_value(json_object_get(f, "median")), unit, "-");
            continue;
        }
        const char *dir = fig_str(f, "better", better_of(kind, unit));
        double ov = json_number_value(json_object_get(o, "median")), nv = json_number_value(json_object_get(f, "median"));
        double omin = json_number_value(json_object_get(o, "min")), omax = json_number_value(json_object_get(o, "max"));
        double ratio = ov != 0 ? nv / ov : (nv == 0 ? 1.0 : INFINITY);
        /* a median inside OLD's [min, max] is within the noise of OLD's runs */
        int noise = json_object_get(o, "min") && json_object_get(o, "max") && nv >= omin && nv <= omax;
        const char *verdict = "";
        if (ratio == 1.0 || !strcmp(dir, "none")) verdict = ratio == 1.0 ? "same" : "";
        else if ((ratio > 1.0) == !strcmp(dir, "higher")) verdict = noise ? "better (within OLD's min..max)" : "better";
        else verdict = noise ? "worse (within OLD's min..max)" : "worse";
        if (!strncmp(verdict, "better", 6)) better++;
        else if (!strncmp(verdict, "worse", 5)) worse++;
        else same++;
        if (as_json) {
            json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s,s:s,s:f,s:f,s:f,s:s}", "bench", b, "figure", name,
                                                 "kind", kind, "unit", unit, "better", dir, "old", ov, "new", nv,
                                                 "ratio", isfinite(ratio) ? ratio : 0.0, "verdict",
                                                 verdict[0] ? verdict : "n/a"));
        } else {
            printf("  %-19s %-50s %12.4g %12.4g %-9s %8.3fx  %s\n", b, name, ov, nv, unit, ratio, verdict);
        }
    }
    json_array_foreach(of, i, f) {
        if (!find_json_fig(nf, f)) {
            only++;
            if (!as_json)
                printf("  %-19s %-50s %12.4g %12s %-9s %9s  only in OLD\n", fig_str(f, "bench", ""),
                       fig_str(f, "figure", ""), json_number_value(json_object_get(f, "median")), "-",
                       fig_str(f, "unit", ""), "-");
        }
    }
    if (as_json) {
        json_t *doc = json_pack("{s:s,s:s,s:s,s:o,s:i,s:i,s:i,s:i}", "schema", "npukit.bench.compare.v1", "old", oldp,
                                "new", newp, "figures", out, "better", (json_int_t)better, "worse", (json_int_t)worse,
                                "same_or_undirected", (json_int_t)same, "unmatched", (json_int_t)only);
        char *txt = json_dumps(doc, JSON_COMPACT);
        if (txt) printf("%s\n", txt);
        free(txt);
        json_decref(doc);
    } else {
        json_decref(out);
        printf("%zu better, %zu worse, %zu same or undirected, %zu in one file only\n", better, worse, same, only);
    }
    json_decref(od);
    json_decref(nd);
    return 0;
}

static bench_args bench_A;

static int bench_cmd(int argc, char **argv) {
    expand_suite();
    int early = cli_start("bench", argc, argv, help, bench_opts, NOPTS, &bench_A, sizeof bench_A);
    if (early >= 0) return early;
    const char **pos = calloc((size_t)argc + 1, sizeof *pos);
    int npos = 0;
    if (!pos) return cli_fail("bench: out of memory");
    int urc = cli_parse("bench", bench_opts, NOPTS, &bench_A, argc, argv, pos, argc, &npos);
    if (urc) {
        free(pos);
        return urc;
    }
    if (bench_A.compare) {
        int rc = npos == 2 ? bench_compare(pos[0], pos[1], bench_A.json)
                           : cli_usage_error("bench", "--compare needs two files: OLD.json NEW.json");
        free(pos);
        return rc;
    }
    ctx c = {.repeat = (int)bench_A.repeat, .shared = bench_A.shared, .trace_path = bench_A.trace_path, .json = bench_A.json,
             .data_path = bench_A.data_path,
             .size = bench_A.size, .cur_threads = 1, .srcdir = bench_A.srcdir, .models = &bench_A.models};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    c.threads = bench_A.threads_given ? (int)bench_A.threads : (cpus > 0 ? (int)cpus : 1);
    int sel[MAXROWS] = {0}, nsel = 0;
    for (int i = 0; i < npos; i++) {
        size_t k = 0;
        while (k < nrows && strcmp(rows[k].name, pos[i])) k++;
        if (k == nrows) {
            int rc = cli_usage_error("bench", "unknown benchmark '%s'; 'npu bench --list' names them", pos[i]);
            free(pos);
            return rc;
        }
        if (!sel[k]) nsel++;
        sel[k] = 1;
    }
    free(pos);
    if (bench_A.list) {
        for (size_t i = 0; i < nrows; i++) printf("%s%s\n", rows[i].name, rows[i].pending ? " (pending)" : "");
        return 0;
    }
    if (c.trace_path && nsel != 1) return cli_usage_error("bench", "--trace needs exactly one benchmark NAME");
    if (c.trace_path && cli_check_output(c.trace_path)) return cli_fail("bench: --trace: %s", npk_errmsg());
    if (!nsel)
        for (size_t i = 0; i < nrows; i++) sel[i] = !rows[i].pending;
    if (!c.json)
        printf("npu bench: %d run(s) per host figure; median (min, max); baselines at 1 and %d thread(s); the machine "
               "may be shared and noisy\n",
               c.repeat, c.threads);
    int rc = 0;
    for (size_t i = 0; i < nrows; i++) {
        if (!sel[i]) continue;
        c.cur = rows[i].name;
        c.device = row_dev[i];
        c.cur_threads = 1;
        c.cur_size = 0;
        if (!c.json) printf("%s: %s\n", rows[i].name, rows[i].what);
        if (rows[i].run(&c)) rc = 1;
    }
    if (!nsel && !c.json)
        for (size_t i = 0; i < nrows; i++)
            if (rows[i].pending) printf("%s: skipped (%s)\n", rows[i].name, rows[i].what);
    if (c.json) print_json(&c);
    free(c.figs);
    return rc;
}

/* The parsed flags live beyond bench_cmd's returns so that the --model list is
 * freed on every path (usage errors included). */
int cmd_bench(int argc, char **argv) {
    int rc = bench_cmd(argc, argv);
    npk_strlist_free(&bench_A.models);
    return rc;
}
