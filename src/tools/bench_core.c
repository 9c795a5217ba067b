// SPDX-License-Identifier: MIT
/* npu bench: the figures every bench family adds (median, min, max of host
 * runs; modeled figures; ratios), their printing, and the clocks and random
 * operands the families share (src/tools/bench_suite.h). */
#include "bench_suite.h"

#include "bench.h"
#include "npukit/cpu.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int bench_dcmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- the CPU every figure was measured on (issue 26 point 5) ---- */

const char *bench_cpu_model(void) {
    static char buf[128];
    if (buf[0]) return buf;
    snprintf(buf, sizeof buf, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !colon) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        snprintf(buf, sizeof buf, "%s", colon);
        buf[strcspn(buf, "\n")] = 0;
        break;
    }
    if (f) fclose(f);
    return buf;
}

/* The instruction-set level behind a timed figure: npukit's kernels run at
 * npk_isa_active() (NPUKIT_ISA caps it), oneDNN at its own effective ISA; the
 * other peers (ONNX Runtime, llama2.c run.c, the e1 Python runtime) pick
 * their own code on this CPU, unknown here (NULL). */
static const char *figure_isa(const char *kind, const char *name) {
    if (!strcmp(kind, "npu")) return npk_isa_name(npk_isa_active());
    if (strcmp(kind, "baseline")) return NULL;
    if (strstr(name, "oneDNN")) return bench_dnnl_isa();
    if (strstr(name, "ONNX Runtime") || strstr(name, "run.c") || strstr(name, "Python")) return NULL;
    return npk_isa_name(npk_isa_active()); /* npukit's own baselines: CPU reference, v0 kernel, fp32 decoder */
}

/* Which way is better for a figure of this unit: times and cycles lower,
 * rates higher; ratios say it themselves (bench_add_ratio). */
const char *bench_better_of(const char *kind, const char *unit) {
    static const char *const lower[] = {"ms", "us", "s", "cycles", "uJ", "mm2"};
    static const char *const higher[] = {"GMAC/s", "access/s", "tokens/s", "TOPS", "TOPS/W", "%", "layers"};
    if (!strcmp(kind, "ratio")) return "none";
    for (size_t i = 0; i < sizeof lower / sizeof lower[0]; i++)
        if (!strcmp(unit, lower[i])) return "lower";
    for (size_t i = 0; i < sizeof higher / sizeof higher[0]; i++)
        if (!strcmp(unit, higher[i])) return "higher";
    return "none";
}

void bench_add_fig(ctx *c, const char *kind, const char *unit, double med, double min, double max, int runs,
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
    f->better = bench_better_of(kind, unit);
    f->threads = strcmp(kind, "npu") && strcmp(kind, "baseline") ? 0 : c->cur_threads;
    f->size = c->cur_size;
    f->isa = figure_isa(kind, f->name);
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

/* One figure derived from other figures (kind "ratio", one value), printed with note
 * (what it was derived from) instead of the usual "(ratio of the medians)". */
void bench_add_derived(ctx *c, double v, const char *better, const char *note, const char *name) {
    int json = c->json;
    c->json = 1; /* added silently, printed below */
    bench_add_fig(c, "ratio", "x", v, v, v, 1, "%s", name);
    c->json = json;
    c->figs[c->nfigs - 1].better = better;
    if (!json) {
        printf("  %-46s %12.4g %-9s (%s)\n", name, v, "x", note);
        fflush(stdout);
    }
}

/* Median, min and max of v[0..n) (sorted in place). */
void bench_add_samples(ctx *c, const char *kind, const char *unit, double *v, int n, const char *name) {
    qsort(v, (size_t)n, sizeof *v, bench_dcmp);
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    bench_add_fig(c, kind, unit, med, v[0], v[n - 1], n, "%s", name);
}

void bench_add_modeled(ctx *c, const char *unit, double v, const char *name) {
    bench_add_fig(c, "modeled", unit, v, v, v, 1, "%s", name);
}

const figure *bench_find_fig(const ctx *c, const char *name) {
    for (size_t i = c->nfigs; i-- > 0;)
        if (c->figs[i].bench == c->cur && !strcmp(c->figs[i].name, name)) return &c->figs[i];
    return NULL;
}

/* A ratio of two medians of this bench; better says which way is an
 * improvement ("higher" for throughput ratios, "lower" for time ratios). */
void bench_add_ratio(ctx *c, const char *name, const char *num, const char *den, const char *better) {
    const figure *a = bench_find_fig(c, num), *b = bench_find_fig(c, den);
    if (a && b && b->med > 0) {
        bench_add_fig(c, "ratio", "x", a->med / b->med, a->med / b->med, a->med / b->med, 1, "%s", name);
        c->figs[c->nfigs - 1].better = better;
    }
}

int bench_fail(ctx *c, const char *what) {
    c->failed = 1;
    cli_progress_end();
    return cli_fail("bench %s: %s: %s", c->cur, what, npk_errmsg());
}

/* The end of a bench's extra traced run: write tr to --trace unless the run
 * failed (bad), free it, and report a failure (bad_reported: the run's failure
 * was reported already). 0, or 1 when the bench fails. */
int bench_end_trace(ctx *c, npk_trace *tr, int bad, int bad_reported) {
    int rc = bad || cli_write_trace(tr, c->trace_path);
    if (rc && !(bad && bad_reported)) bench_fail(c, "trace");
    npk_trace_free(tr);
    return rc;
}

void bench_progress(const ctx *c, const char *what, int done, int total) {
    char buf[96];
    snprintf(buf, sizeof buf, "bench %s: %s", c->cur, what);
    cli_progress(buf, (uint64_t)done, (uint64_t)total);
}

static uint64_t xs = 88172645463325252ull;
int8_t bench_rnd8(void) {
    xs ^= xs << 13, xs ^= xs >> 7, xs ^= xs << 17;
    return (int8_t)(xs >> 24);
}

/* CPU time of the calling thread: the shell bench compares single-threaded
 * runs of 0.6 and 4 ms; on a shared machine their wall time also counts the
 * waits for a core, which a 4 ms run meets more often than a 0.6 ms one. */
double bench_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
