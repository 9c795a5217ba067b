// SPDX-License-Identifier: MIT
/* npu bench: what the bench families (src/tools/suite_*.c) share: the run's
 * context, the figures and their helpers (src/tools/bench_core.c), and the
 * entry point of every bench the suite table of cmd_bench.c lists. */
#ifndef NPUKIT_TOOLS_BENCH_SUITE_H
#define NPUKIT_TOOLS_BENCH_SUITE_H

#include "cli.h"
#include "npukit/strbuf.h"
#include "npukit/trace.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct figure {
    const char *bench;
    char name[128];
    const char *unit;
    const char *kind;   /* "npu" (the device path), "baseline", "modeled", "ratio" */
    const char *better; /* "higher", "lower" or "none" (which way is an improvement) */
    int threads;        /* host threads the timed code ran on (0: not a host timing) */
    uint32_t size;      /* problem size of a GEMM bench (M = N = K), 0 when it has none */
    const char *isa;    /* instruction-set level of the timed code (NULL: unknown, or not a host timing) */
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

/* src/tools/bench_core.c */
/* Host clocks in seconds: monotonic wall time, and the calling thread's CPU time (the
 * shell bench compares single-threaded runs of 0.6 and 4 ms; on a shared machine their wall
 * time also counts the waits for a core, which a 4 ms run meets more often than a 0.6 ms one). */
double bench_now(void);
double bench_cpu_now(void);
int bench_dcmp(const void *a, const void *b);
/* Which way is better for a figure of this unit: times and cycles lower, rates higher;
 * ratios say it themselves (bench_add_ratio). */
const char *bench_better_of(const char *kind, const char *unit);
/* The host CPU's model name (/proc/cpuinfo), or "unknown CPU" (issue 26 point 5). */
const char *bench_cpu_model(void);
/* Add (and unless --json print) one figure of the current bench. */
void bench_add_fig(ctx *c, const char *kind, const char *unit, double med, double min, double max, int runs,
             const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 8, 9)))
#endif
    ;
/* Median, min and max of v[0..n) (sorted in place). */
void bench_add_samples(ctx *c, const char *kind, const char *unit, double *v, int n, const char *name);
void bench_add_modeled(ctx *c, const char *unit, double v, const char *name);
/* One ratio figure derived from other figures, printed with note ("(note)") instead of
 * "(ratio of the medians)". */
void bench_add_derived(ctx *c, double v, const char *better, const char *note, const char *name);
const figure *bench_find_fig(const ctx *c, const char *name);
/* A ratio of two medians of this bench; better says which way is an improvement. */
void bench_add_ratio(ctx *c, const char *name, const char *num, const char *den, const char *better);
/* Mark the bench failed and report what failed with npk_errmsg(); returns 1. */
int bench_fail(ctx *c, const char *what);
/* The end of a bench's extra traced run (--trace): 0, or 1 when the bench fails. */
int bench_end_trace(ctx *c, npk_trace *tr, int bad, int bad_reported);
void bench_progress(const ctx *c, const char *what, int done, int total);
/* The benches' int8 operands: one fixed xorshift sequence per process. */
int8_t bench_rnd8(void);

/* src/tools/bench_ort.c: ONNX Runtime as a peer process (scripts/ort_bench.js through node)
 * answering one request line with one JSON line, so a bench interleaves its runs with
 * npukit's. Every read is bounded ($NPUKIT_ORT_TIMEOUT seconds, default 300). */
typedef struct bench_ort bench_ort;
/* Start the peer on model_dir: 0, or -1 when ONNX Runtime is unavailable (node or
 * onnxruntime-node missing: *why says which; no figure, no failure), or -2 when the peer
 * started and failed (*why says how: the bench fails). */
int bench_ort_open(const ctx *c, const char *model_dir, bench_ort **p, char *why, size_t whylen);
/* Send one request ("first N", "load N", "run") and read its JSON reply: 0 (an
 * {"error"} reply included), or -1 when the peer died, stayed silent past the deadline
 * or answered garbage (npk_errmsg says which, with its stderr's last line). */
int bench_ort_ask(bench_ort *p, const char *req, json_t **reply);
/* reply[key] as a number >= 0: 0, or -1 naming the request and the reply. */
int bench_ort_number(json_t *reply, const char *req, const char *key, double *v);
/* Ask the peer to quit, wait for it (bounded; killed after 2 s) and free p (NULL: nothing). */
void bench_ort_close(bench_ort *p);
/* Wait until the peer's threads (p) or this process's other threads (p NULL: npukit's pool
 * workers) have used no CPU for a while, at most a bounded time: a side's timed runs then
 * do not share the CPUs with the other side's threads still spinning after its run
 * (ONNX Runtime's workers spin ~20 ms after a run). Without per-thread CPU figures
 * (/proc/PID/task/TID/schedstat) it returns at once. */
void bench_ort_quiesce(const bench_ort *p);

/* The benches (one suite_<family>.c per family). */
int bench_v0_gemm(ctx *c), bench_v0_resnet50_layers(ctx *c);
int bench_shell_gemm(ctx *c);
int bench_e1_mmio(ctx *c), bench_e1_matmul(ctx *c);
int bench_llm(ctx *c), bench_llm15m(ctx *c);
int bench_onnx_dev(ctx *c), bench_onnx_e1_v0(ctx *c), bench_onnx_cpu(ctx *c), bench_onnx_cpu_imagenet(ctx *c);
int bench_report_cost(ctx *c);

#endif
