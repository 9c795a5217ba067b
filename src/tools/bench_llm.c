// SPDX-License-Identifier: MIT
/* npu bench, the LLM family: llm-pccx and llm-pccx-15m (pccx INT4 decode versus
 * the fp32 CPU decoder and llama2.c's run.c, CPU time). */
#include "bench_suite.h"
#include "npukit/llm.h"

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
