// SPDX-License-Identifier: MIT
/* npu bench, the LLM family: llm-pccx and llm-pccx-15m (pccx INT4 decode versus
 * the fp32 CPU decoder and llama2.c's run.c, CPU time). */
#include "bench_suite.h"
#include "npukit/llm.h"
#include "npukit/threads.h"

#include <inttypes.h>
#include <time.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* One pass of the bench: its thread count and clock. At 1 thread every side
 * is timed by the CPU time it uses; at N threads by wall time (the work is
 * spread over threads: CPU time would add them up). */
typedef struct llm_pass {
    int threads;
    double (*clock)(void);
    char sfx[48]; /* ", 1 thread" (names unchanged otherwise), ", 2 threads, wall time" */
} llm_pass;

static int decode_once(ctx *c, const llm_pass *ps, npk_llm_decoder *d, const npk_llm_tokenizer *tk, const char *what,
                       int steps, double *secs) {
    npk_llm_sampler s;
    if (npk_llm_sampler_init(&s, tk->vocab_size, 0.0f, 1)) return bench_fail(c, what);
    double t0 = ps->clock();
    int n = npk_llm_generate(d, tk, "", steps, &s, NULL, NULL, NULL);
    *secs = ps->clock() - t0;
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

/* The OpenMP build of run.c (its matmul's `omp parallel for`), the peer at N
 * threads: $NPUKIT_RUNC_OMP or ~/.cache/npukit/llama2c/run-omp; NULL if none. */
static const char *runc_omp_path(char *buf, size_t n) {
    const char *e = getenv("NPUKIT_RUNC_OMP");
    if (e && *e) snprintf(buf, n, "%s", e);
    else snprintf(buf, n, "%s/.cache/npukit/llama2c/run-omp", getenv("HOME") ? getenv("HOME") : ".");
    return access(buf, X_OK) == 0 ? buf : NULL;
}

/* One greedy run of run.c for steps positions, output to /dev/null: the CPU
 * time (user + system, wait4) of the whole process into *cpu; with omp > 0,
 * OMP_NUM_THREADS=omp and the wall time instead. */
static int runc_proc(ctx *c, const char *bin, const char *mp, const char *tp, int steps, int omp, double *cpu) {
    char n[16];
    snprintf(n, sizeof n, "%d", steps);
    char *const argv[] = {(char *)bin, (char *)mp, "-z", (char *)tp, "-t", "0", "-n", n, NULL};
    char ompn[16];
    snprintf(ompn, sizeof ompn, "%d", omp);
    fflush(stdout);
    fflush(stderr);
    double w0 = bench_now();
    pid_t pid = fork();
    if (pid == 0) {
        int dn = open("/dev/null", O_WRONLY);
        if (dn >= 0) dup2(dn, 1), dup2(dn, 2);
        if (omp > 0) setenv("OMP_NUM_THREADS", ompn, 1);
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
    if (omp > 0) *cpu = bench_now() - w0;
    return 0;
}

/* run.c's decode speed in tokens/s of CPU time: a process of steps positions
 * minus one of a single position (start, checkpoint and tokenizer load, the
 * first position), over steps - 1 positions. Its own "achieved tok/s" print
 * reads a millisecond clock and wall time, far too coarse for runs of tens of
 * milliseconds on a shared machine. */
static int runc_once(ctx *c, const char *bin, const char *mp, const char *tp, int steps, int omp, double *tps) {
    double full, one;
    if (runc_proc(c, bin, mp, tp, steps, omp, &full) || runc_proc(c, bin, mp, tp, 1, omp, &one)) return 1;
    double dt = full - one;
    *tps = steps > 1 && dt > 0 ? (double)(steps - 1) / dt : 0;
    if (!(*tps > 0)) {
        fprintf(stderr, "npu bench: %s: %d positions took no measurable CPU time more than 1\n", bin, steps);
        return bench_fail(c, "run.c");
    }
    return 0;
}

/* Names of one pass's figures. */
typedef struct llm_names {
    char pccx[96], cpu[96], runc[96];
} llm_names;

/* One pass: greedy decode of steps positions on pccx and on the fp32 CPU
 * decoder (and run.c when there is one: runc, at N threads its OpenMP build),
 * alternating per repetition; their figures and ratios. *st: pccx's counters. */
static int llm_pass_run(ctx *c, const llm_pass *ps, const npk_llm_model *m, const npk_llm_tokenizer *tk,
                        const char *mp, const char *tp, const char *runc, int steps, npk_llm_stats *st) {
    int rc = 1;
    double *tn = calloc((size_t)c->repeat, sizeof *tn), *tc = calloc((size_t)c->repeat, sizeof *tc),
           *tr = calloc((size_t)c->repeat, sizeof *tr), *tq = calloc((size_t)c->repeat, sizeof *tq);
    if (!tn || !tc || !tr || !tq) {
        npk_err(NPK_ENOMEM, "out of memory");
        bench_fail(c, "setup");
        goto out;
    }
    const int omp = ps->threads > 1 ? ps->threads : 0;
    for (int r = 0; r < c->repeat; r++) {
        bench_progress(c, "decode", r, c->repeat);
        npk_llm_decoder *d = NULL, *cpu = NULL;
        double secs;
        /* decoder creation (INT4 quantization, upload) is not timed */
        if (npk_llm_decoder_pccx(m, NULL, &d)) {
            bench_fail(c, "pccx decoder");
            goto out;
        }
        if (decode_once(c, ps, d, tk, "pccx decode", steps, &secs)) {
            npk_llm_decoder_free(d);
            goto out;
        }
        npk_llm_stats_get(d, st);
        tn[r] = (double)st->tokens / secs;
        npk_llm_decoder_free(d);
        if (npk_llm_decoder_cpu(m, &cpu)) {
            bench_fail(c, "cpu decoder");
            goto out;
        }
        if (decode_once(c, ps, cpu, tk, "cpu decode", steps, &secs)) {
            npk_llm_decoder_free(cpu);
            goto out;
        }
        npk_llm_stats cs;
        npk_llm_stats_get(cpu, &cs);
        tc[r] = (double)cs.tokens / secs;
        npk_llm_decoder_free(cpu);
        if (runc && runc_once(c, runc, mp, tp, steps, omp, &tr[r])) goto out;
    }
    cli_progress_end();
    llm_names nm;
    char rn[128];
    snprintf(nm.pccx, sizeof nm.pccx, "pccx INT4 decode, host simulation%s", ps->sfx);
    snprintf(nm.cpu, sizeof nm.cpu, "baseline: fp32 CPU decoder%s", ps->sfx);
    snprintf(nm.runc, sizeof nm.runc, "baseline: llama2.c run.c (%s)%s", omp ? "$NPUKIT_RUNC_OMP" : "$NPUKIT_RUNC",
             ps->sfx);
    /* the ratio to run.c per repetition, before bench_add_samples sorts tn and tr */
    for (int r = 0; runc && r < c->repeat; r++) tq[r] = tn[r] / tr[r];
    bench_add_samples(c, "npu", "tokens/s", tn, c->repeat, nm.pccx);
    bench_add_samples(c, "baseline", "tokens/s", tc, c->repeat, nm.cpu);
    snprintf(rn, sizeof rn, "pccx simulation / fp32 CPU speed, equal threads (%d)", ps->threads);
    bench_add_ratio(c, rn, nm.pccx, nm.cpu, "higher");
    if (runc) {
        /* the figure's name stays the same whichever binary ran (--compare matches names) */
        if (!c->json) printf("  %-46s %s\n", omp ? "llama2.c run.c (OpenMP) baseline binary:" : "llama2.c run.c baseline binary:", runc);
        bench_add_samples(c, "baseline", "tokens/s", tr, c->repeat, nm.runc);
        snprintf(rn, sizeof rn, "pccx simulation / run.c speed, equal threads (%d)", ps->threads);
        bench_add_ratio(c, rn, nm.pccx, nm.runc, "higher");
        snprintf(rn, sizeof rn, "pccx / run.c, same repetition%s", ps->sfx);
        bench_add_samples(c, "ratio", "x", tq, c->repeat, rn);
        c->figs[c->nfigs - 1].better = "higher";
        snprintf(rn, sizeof rn, "fp32 CPU decoder / run.c speed, equal threads (%d)", ps->threads);
        bench_add_ratio(c, rn, nm.cpu, nm.runc, "higher");
    } else if (!c->json) {
        printf("  %-46s %s\n", omp ? "llama2.c run.c (OpenMP) unavailable:" : "llama2.c run.c baseline unavailable:",
               omp ? "no executable at $NPUKIT_RUNC_OMP or ~/.cache/npukit/llama2c/run-omp (docs/performance.md)"
                   : "no executable at $NPUKIT_RUNC or ~/.cache/npukit/llama2c/run (docs/performance.md)");
    }
    rc = 0;
out:
    cli_progress_end();
    free(tn);
    free(tc);
    free(tr);
    free(tq);
    return rc;
}

/* Greedy decode of steps positions on pccx, the fp32 CPU decoder and run.c at
 * 1 thread (CPU time), then at --threads (wall time). */
static int llm_compare(ctx *c, const char *mp, const char *tp, const char *label, int steps) {
    npk_llm_model *m = NULL;
    npk_llm_tokenizer *tk = NULL;
    int rc = 1;
    char rbuf[1024], obuf[1024];
    const char *runc = runc_path(rbuf, sizeof rbuf), *runc_omp = runc_omp_path(obuf, sizeof obuf);
    if (npk_llm_model_load(mp, &m) || npk_llm_tokenizer_load(tp, m->cfg.vocab_size, &tk)) {
        bench_fail(c, label);
        goto out;
    }
    c->cur_size = (uint32_t)steps;
    npk_llm_stats st = {0};
    for (int pass = 0; pass < 2; pass++) {
        llm_pass ps = {pass ? c->threads : 1, pass ? bench_now : proc_cpu_now, ""};
        if (pass && ps.threads <= 1) break;
        if (pass) snprintf(ps.sfx, sizeof ps.sfx, ", %d threads, wall time", ps.threads);
        npk_threads_set(ps.threads);
        c->cur_threads = ps.threads;
        int bad = llm_pass_run(c, &ps, m, tk, mp, tp, pass ? runc_omp : runc, steps, &st);
        npk_threads_set(0);
        if (bad) goto out;
    }
    if (st.tokens && st.device_cycles) {
        double spt = (double)st.device_cycles / (double)st.device_hz / (double)st.tokens;
        bench_add_modeled(c, "tokens/s", 1.0 / spt, "pccx modeled decode (device busy time)");
        bench_add_modeled(c, "ms/token", spt * 1e3, "pccx modeled time per token");
    }
    if (c->trace_path) {
        npk_llm_pccx_opts po = {.trace_path = c->trace_path};
        npk_llm_decoder *d = NULL;
        double secs;
        llm_pass ps = {1, proc_cpu_now, ""};
        if (npk_llm_decoder_pccx(m, &po, &d) || decode_once(c, &ps, d, tk, "traced decode", steps, &secs) ||
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
    return rc;
}

int bench_llm(ctx *c) {
    char mp[1024], tp[1024];
    snprintf(mp, sizeof mp, "%s/models/stories260K/stories260K.bin", c->shared);
    snprintf(tp, sizeof tp, "%s/models/stories260K/tok512.bin", c->shared);
    return llm_compare(c, mp, tp, "stories260K (use --shared DIR)", c->size ? (int)c->size : LLM_STEPS);
}

/* The stories15M shape with deterministic random weights (npu llm-synth
 * --shape stories15M, seed 1), written once to ~/.cache/npukit/llm/. */
int bench_llm15m(ctx *c) {
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
