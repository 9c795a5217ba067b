// SPDX-License-Identifier: MIT
/* npu llm: generate text with a llama2.c checkpoint on pccx or the CPU. */
#include "cli.h"
#include "npukit/llm.h"
#include "npukit/pccx.h"
#include "npukit/report.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct llm_args {
    uint32_t threads;
    const char *model_path, *tok_path, *device, *prompt, *trace, *port, *json_path, *shape, *report, *plot;
    npk_strlist dev_opts;
    uint64_t steps, seed, prompt_tokens;
    uint32_t group;
    double temperature, topp;
    int accuracy, timing_only, gemv_prefill;
} llm_args;

#define LSTR(n, f, d, m, h) CLI_STR(n, NULL, llm_args, f, d, m, h)
#define LFLAG(n, f, h) CLI_FLAG(n, NULL, llm_args, f, h)
static const npk_opt llm_opts[] = {
    LSTR("--model", model_path, NULL, "M", "llama2.c checkpoint (.bin), required"),
    LSTR("--tokenizer", tok_path, NULL, "T", "llama2.c tokenizer (.bin) for the model's vocabulary, required"),
    LSTR("--device", device, "cpu", "D",
         "cpu: fp32 reference decoder; pccx: INT4 weights, every projection\n"
         "as a GEMV on the pccx NPU model"),
    LSTR("--prompt", prompt, NULL, "TEXT", "text to start from (BPE-encoded with the tokenizer's scores; echoed;\nnone by default)"),
    CLI_NUM("--steps", NULL, U64, llm_args, steps, "200", 1, 1u << 20, "N",
      "positions to run including BOS and the prompt (capped at the\n"
      "model's seq_len); generation also stops at BOS"),
    {"--temperature", NULL, NPK_OPT_F64, offsetof(llm_args, temperature), "0", 0, 0, 0, 1e6, 0, "X",
     "0 = greedy arg-max; > 0 samples softmax(logits / X)", 0},
    {"--top-p", NULL, NPK_OPT_F64, offsetof(llm_args, topp), "0.9", 0, 0, 0, 1, 0, "P",
     "nucleus sampling mass (as llama2.c run.c's -p; 0 or 1 = plain\n"
     "multinomial); used when --temperature > 0", 0},
    CLI_NUM("--seed", NULL, U64, llm_args, seed, "1", 0, 0, "S",
      "RNG seed for sampling; the RNG is llama2.c's xorshift64* (see docs/llm.md)"),
    LSTR("--trace", trace, NULL, "FILE.json",
         "write a Chrome trace (pccx only): the device's engines and the\n"
         "host's decode steps on the simulated clock"),
    CLI_REPORT(llm_args, report,
          "after the text, print the performance report (on stdout, or in\n"
          "FILE with --report=FILE): device and clock,\n"
          "instructions by opcode with engine cycles and MACs, host steps,\n"
          "utilization, TOPS, bytes per memory, modeled tokens/s and ms/token,\n"
          "host simulation tokens/s, per-token figures, host share of the work"),
    LSTR("--report-json", json_path, NULL, "F", "write the performance report as JSON to F"),
    LSTR("--plot", plot, NULL, "FILE.png|.svg",
         "pccx: draw the device operators' cycles (bars) and utilization with gnuplot"),
    LFLAG("--accuracy", accuracy,
          "instead of generating: teacher-force the fp32 greedy sequence of\n"
          "--steps positions through the device decoder and print the share\n"
          "of positions whose top token equals fp32's and the max logit difference"),
    CLI_NUM("--group-size", NULL, U32, llm_args, group, NPK_LLM_PCCX_DEFAULT_GROUP_TEXT, 0, NPK_LLM_PCCX_MAX_GROUP, "G",
      "pccx: one INT4 scale per G inputs of each output channel (default 8: 90% top-1\n"
      "agreement with fp32 on stories260K; 0 = one scale per output channel, half the\n"
      "weight bytes; see docs/llm.md)"),
    LSTR("--port", port, NULL, "SPEC", "pccx: port to the device (default sim; npu ports lists them)"),
    LFLAG("--gemv-prefill", gemv_prefill,
          "pccx: run the prompt one GEMV step per token (the decode path) instead of GEMM blocks, to compare"),
    LFLAG("--timing-only", timing_only,
          "pccx: run no weights (the device computes nothing) and print the modeled\n"
          "prefill and decode tokens/s, time to first token and the rooflines for\n"
          "the device options; the cycles are those of a functional run"),
    LSTR("--shape", shape, NULL, "SPEC",
         "with --timing-only instead of --model: a preset (stories15M, tinyllama-1.1B,\n"
         "llama-4B, ...; see npu llm-synth) or dim=..,hidden=..,layers=..,heads=..,\n"
         "kv_heads=..,vocab=..,seq=.."),
    CLI_NUM("--prompt-tokens", NULL, U64, llm_args, prompt_tokens, "32", 1, 1u << 20, "P",
      "with --timing-only: positions counted as the prompt (prefill)"),
    CLI_DEVICE_OPT(llm_args, dev_opts),
    CLI_THREADS(llm_args, threads),
};

static void help(void) {
    printf(
        "usage: npu llm --model M --tokenizer T [--device pccx|cpu] [--prompt TEXT] [--steps N]\n"
        "               [--temperature X] [--top-p P] [--seed S] [--trace FILE.json] [--report[=FILE]] [--report-json F]\n"
        "               [--plot FILE.png] [--accuracy] [--group-size G] [--port SPEC] [--device-opt K=V]\n"
        "       npu llm --shape SPEC|--model M --device pccx --timing-only [--steps N] [--prompt-tokens P]\n"
        "               [--group-size G] [--device-opt K=V] [--report[=FILE]]\n"
        "\n"
        "Generate text with a llama2.c checkpoint (legacy format) and its tokenizer,\n"
        "starting from BOS (id 1) and the prompt, and print it.\n"
        "\n"
        "options:\n");
    cli_help_opts(llm_opts, sizeof llm_opts / sizeof llm_opts[0]);
}

static void emit_stdout(const char *piece, void *user) {
    (void)user;
    fputs(piece, stdout);
    fflush(stdout);
}

typedef struct progress_emit {
    int n, total;
} progress_emit;

/* Text to stdout; when stdout is not a terminal (redirected) the progress
 * line goes to stderr (cli_progress shows it only on a terminal). */
static void emit_progress(const char *piece, void *user) {
    progress_emit *p = user;
    fputs(piece, stdout);
    p->n++;
    cli_progress("llm", (uint64_t)p->n, (uint64_t)p->total);
}

static const char *plot_path; /* --plot */

/* --report / --report-json / --plot. Returns 0 or 1 (reported). */
static int emit_report(const npk_llm_decoder *d, int ntok, const char *model_path, const char *text,
                       const char *json_path) {
    if (!text && !json_path && !plot_path) return 0;
    npk_report *r = NULL;
    if (npk_llm_report(d, ntok, model_path, &r)) return cli_fail("%s", npk_errmsg());
    int rc = 0;
    if (text && !strcmp(text, "-")) printf("\n"); /* after the generated text */
    if (text && cli_emit_report("llm", text, r)) rc = 1;
    if (json_path && cli_write_report(r, json_path)) rc = cli_fail("%s", npk_errmsg());
    if (!rc && plot_path && cli_plot_report(r, "npu llm", plot_path)) rc = 1;
    npk_report_free(r);
    return rc;
}

/* A device option's value as given in the joined "k=v,..." text, else the
 * pccx model's default for it. */
static double pccx_opt(const char *opts, const char *key) {
    size_t kl = strlen(key);
    for (const char *p = opts; p && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > kl && !strncmp(p, key, kl) && p[kl] == '=') return atof(p + kl + 1);
        p = e ? e + 1 : NULL;
    }
    const npk_opt *o = npk_opt_find(npk_pccx_class.opts, npk_pccx_class.n_opts, key);
    return o && o->def ? atof(o->def) : 0.0;
}

/* npu llm --timing-only: positions 0..steps-1 of the shape through the pccx
 * decoder with the device in timing_only mode (no weights, no arithmetic, the
 * functional run's cycles), the first P counted as the prompt. */
static int timing_only_run(npk_llm_model *m, const char *label, const npk_llm_pccx_opts *po, int steps, int ptoks,
                           const char *report, const char *json_path) {
    npk_llm_decoder *d = NULL;
    npk_llm_pccx_opts o = *po;
    o.timing_only = 1;
    if (npk_llm_decoder_pccx(m, &o, &d)) return cli_fail("%s", npk_errmsg());
    const npk_llm_config *c = &m->cfg;
    npk_llm_stats st0, st;
    memset(&st0, 0, sizeof st0);
    int rc = 0;
    int *ptok = calloc((size_t)ptoks, sizeof *ptok); /* token 0: timing does not depend on values */
    const float *logits;
    if (!ptok) rc = npk_err(NPK_ENOMEM, "out of memory");
    if (!rc) rc = npk_llm_prefill(d, ptok, ptoks, &logits); /* the prompt: GEMM blocks unless --gemv-prefill */
    free(ptok);
    if (!rc) npk_llm_stats_get(d, &st0);
    for (int pos = ptoks; pos < steps && !rc; pos++) {
        rc = npk_llm_forward(d, 0, pos, &logits);
        cli_progress("llm", (uint64_t)pos + 1, (uint64_t)steps);
    }
    cli_progress_end();
    if (rc) {
        npk_llm_decoder_free(d);
        return cli_fail("%s", npk_errmsg());
    }
    npk_llm_stats_get(d, &st);
    const double hz = (double)st.device_hz, bw = pccx_opt(po->dev_opts, "ddr_gbps") * pccx_opt(po->dev_opts, "ddr_eff");
    /* per decode token (a GEMM prefill streams each weight once per block) */
    const double dn = (double)(steps - ptoks);
    const double wb = (double)(st.weight_bytes - st0.weight_bytes) / dn, macs = (double)(st.device_macs - st0.device_macs) / dn;
    const double pre_c = (double)st0.device_cycles / ptoks;
    const double dec_c = (double)(st.device_cycles - st0.device_cycles) / (double)(steps - ptoks);
    const double peak = hz * st.device_macs_per_cycle;
    const double roof_bw = bw * 1e9 / wb, roof_mac = peak / macs;
    printf("timing-only projection (no weights): %s\n", label);
    printf("  shape                dim %d, hidden %d, layers %d, heads %d, kv heads %d, vocab %d, seq %d\n", c->dim,
           c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, c->vocab_size, c->seq_len);
    printf("  device               pccx @ %.1f MHz, DDR %.2f GB/s x %.2f = %.2f GB/s, %u GEMV MAC/cycle\n", hz / 1e6,
           pccx_opt(po->dev_opts, "ddr_gbps"), pccx_opt(po->dev_opts, "ddr_eff"), bw, st.device_macs_per_cycle);
    if (po->group_size)
        printf("  weights              INT4, one scale per %d inputs; %.0f bytes streamed per decode token\n", po->group_size, wb);
    else
        printf("  weights              INT4, one scale per output channel; %.0f bytes streamed per decode token\n", wb);
    printf("  positions            0..%d: %d prompt (prefill), %d decode\n", steps - 1, ptoks, steps - ptoks);
    printf("  prefill              %.1f tokens/s (%.0f cycles/token)\n", hz / pre_c, pre_c);
    printf("  time to first token  %.3f ms\n", 1e3 * (double)st0.device_cycles / hz);
    printf("  decode               %.1f tokens/s (%.0f cycles/token), %.1f%% of the weight-bandwidth roofline\n",
           hz / dec_c, dec_c, 100.0 * (hz / dec_c) / roof_bw);
    printf("  roofline             %.1f tokens/s weight bandwidth (%.0f bytes/token at %.2f GB/s); %.1f tokens/s "
           "compute (%.0f MACs/token at %.1f GMAC/s)\n", roof_bw, wb, bw, roof_mac, macs, peak / 1e9);
    fflush(stdout);
    rc = emit_report(d, steps, label, report, json_path);
    if (!rc && npk_llm_decoder_finish(d)) rc = cli_fail("%s", npk_errmsg());
    npk_llm_decoder_free(d);
    return rc;
}

/* Why long: the command's flags checked in the order the user reads them (device first, files,
 * outputs), then one of three runs (generate, compare, teacher-forced); each check exits with
 * its own message. */
int cmd_llm(int argc, char **argv) {
    llm_args A;
    int early = cli_start("llm", argc, argv, help, llm_opts, sizeof llm_opts / sizeof llm_opts[0], &A, sizeof A);
    if (early >= 0) return early;
    char *dev_opts = NULL;
    int urc = cli_parse("llm", llm_opts, sizeof llm_opts / sizeof llm_opts[0], &A, argc, argv, NULL, 0, NULL);
    if (!urc) cli_threads(A.threads);
    /* the device and its options are checked first, before any file is read */
    if (!urc) urc = cli_device("llm", A.device, 1, &A.dev_opts, &dev_opts);
    /* the decoders: the CPU's and the pccx driver's (src/llm/pccx_decode.c) */
    const char *dec = npk_pccx_class.name;
    if (!urc && strcmp(A.device, "cpu") && strcmp(A.device, dec))
        urc = cli_usage_error("llm", "--device must be %s or cpu, not '%s' (no LLM decoder for it)", dec, A.device);
    if (!urc && A.timing_only && strcmp(A.device, dec)) urc = cli_usage_error("llm", "--timing-only needs --device %s", dec);
    if (!urc && A.timing_only && A.accuracy) urc = cli_usage_error("llm", "--timing-only computes no logits: no --accuracy");
    if (!urc && A.shape && !A.timing_only) urc = cli_usage_error("llm", "--shape needs --timing-only (a shape has no weights)");
    if (!urc && A.shape && A.model_path) urc = cli_usage_error("llm", "give --model or --shape, not both");
    if (!urc && !A.model_path && !A.shape)
        urc = cli_usage_error("llm", A.timing_only ? "--model or --shape is required" : "--model is required");
    if (!urc && !A.tok_path && !A.timing_only) urc = cli_usage_error("llm", "--tokenizer is required");
    if (!urc && A.trace && strcmp(A.device, dec)) urc = cli_usage_error("llm", "--trace needs --device %s", dec);
    if (!urc && A.plot && strcmp(A.device, dec)) urc = cli_usage_error("llm", "--plot needs --device %s", dec);
    if (!urc && A.plot && cli_check_output(A.plot)) urc = cli_fail("llm: --plot: %s", npk_errmsg());
    if (!urc && A.json_path && cli_check_output(A.json_path)) urc = cli_fail("llm: --report-json: %s", npk_errmsg());
    if (!urc && A.trace && cli_check_output(A.trace)) urc = cli_fail("llm: --trace: %s", npk_errmsg());
    if (!urc && A.report && strcmp(A.report, "-") && cli_check_output(A.report))
        urc = cli_fail("llm: --report: %s", npk_errmsg());
    if (urc) free(dev_opts);
    npk_strlist_free(&A.dev_opts);
    if (urc) return urc;
    const char *model_path = A.model_path, *tok_path = A.tok_path, *device = A.device, *prompt = A.prompt,
               *trace = A.trace, *port = A.port, *json_path = A.json_path;
    uint64_t steps = A.steps, seed = A.seed, group = A.group;
    double temperature = A.temperature, topp = A.topp;
    const char *report = A.report;
    plot_path = A.plot;
    int accuracy = A.accuracy;
    if (!prompt) prompt = "";
    int pccx = !strcmp(device, npk_pccx_class.name);

    npk_llm_model *m = NULL;
    npk_llm_tokenizer *t = NULL;
    npk_llm_decoder *d = NULL, *ref = NULL;
    npk_llm_sampler s = {0};
    int *toks = NULL;
    if (A.timing_only) {
        npk_llm_config cfg;
        int rc = A.shape ? npk_llm_shape_parse(A.shape, &cfg) : npk_llm_model_load(model_path, &m);
        if (!rc && A.shape) rc = npk_llm_model_shape(&cfg, A.shape, &m);
        if (rc) {
            free(dev_opts);
            return A.shape ? cli_usage_error("llm", "--shape: %s", npk_errmsg()) : cli_fail("%s", npk_errmsg());
        }
        int n = (int)(steps > (uint64_t)m->cfg.seq_len ? (uint64_t)m->cfg.seq_len : steps);
        int code;
        if ((uint64_t)n <= A.prompt_tokens)
            code = cli_usage_error("llm", "--prompt-tokens %llu leaves no decode position in %d steps",
                                   (unsigned long long)A.prompt_tokens, n);
        else {
            npk_llm_pccx_opts po = {.port = port, .dev_opts = dev_opts, .group_size = (int)group, .trace_path = trace,
                                    .gemm_prefill_off = A.gemv_prefill};
            code = timing_only_run(m, A.shape ? A.shape : model_path, &po, n, (int)A.prompt_tokens, report, json_path);
        }
        free(dev_opts);
        npk_llm_model_free(m);
        return code;
    }
    int rc = npk_llm_model_load(model_path, &m);
    if (rc) {
        free(dev_opts);
        return cli_fail("%s", npk_errmsg());
    }
    rc = npk_llm_tokenizer_load(tok_path, m->cfg.vocab_size, &t);
    if (rc) {
        free(dev_opts);
        npk_llm_model_free(m);
        return cli_fail("%s", npk_errmsg());
    }
    int n_steps = (int)(steps > (uint64_t)m->cfg.seq_len ? (uint64_t)m->cfg.seq_len : steps);
    /* The decoder writes its trace at finish: into a cli_out temporary that is
     * renamed into place only when the whole command succeeded. */
    cli_out tro = {0};
    if (trace && cli_out_open(&tro, trace)) {
        npk_llm_tokenizer_free(t);
        npk_llm_model_free(m);
        return cli_fail("llm: --trace: %s", npk_errmsg());
    }
    npk_llm_pccx_opts po = {.port = port, .dev_opts = dev_opts, .group_size = (int)group,
                            .trace_path = trace ? (tro.tmp ? tro.tmp : trace) : NULL,
                            .gemm_prefill_off = A.gemv_prefill};
    int code = 1;
    if (pccx)
        rc = npk_llm_decoder_pccx(m, &po, &d);
    else
        rc = npk_llm_decoder_cpu(m, &d);
    free(dev_opts); /* the decoder has opened its port */
    if (rc) {
        cli_fail("%s", npk_errmsg());
        goto out;
    }
    if (accuracy) {
        /* The fp32 greedy sequence, then both decoders teacher-forced along it. */
        npk_llm_decoder *gen = NULL;
        toks = malloc(sizeof(int) * (size_t)(n_steps + 1));
        if (!toks || (rc = npk_llm_decoder_cpu(m, &gen)) != 0 || (rc = npk_llm_sampler_init(&s, m->cfg.vocab_size, 0.0f, 1)) != 0) {
            npk_llm_decoder_free(gen);
            cli_fail("%s", toks ? npk_errmsg() : "out of memory");
            goto out;
        }
        toks[0] = NPK_LLM_BOS;
        rc = npk_llm_generate(gen, t, prompt, n_steps, &s, NULL, NULL, toks + 1);
        npk_llm_decoder_free(gen);
        if (rc < 0) {
            cli_fail("%s", npk_errmsg());
            goto out;
        }
        int n = rc < n_steps ? rc + 1 : n_steps; /* BOS + tokens, feeding n positions */
        if ((rc = npk_llm_decoder_cpu(m, &ref)) != 0) {
            cli_fail("%s", npk_errmsg());
            goto out;
        }
        npk_llm_accuracy acc;
        rc = npk_llm_compare(ref, d, toks, n, &acc);
        if (rc) {
            cli_fail("%s", npk_errmsg());
            goto out;
        }
        printf("accuracy (%s vs fp32, teacher-forced along the fp32 greedy sequence%s):\n", device,
               pccx ? (group ? ", INT4 group scales" : ", INT4 per-output-channel scales") : "");
        if (pccx && group) printf("  group size: %d inputs per scale\n", (int)group);
        printf("  top-1 agreement: %d/%d positions (%.1f%%)\n", acc.top1_agree, acc.positions,
               acc.positions ? 100.0 * acc.top1_agree / acc.positions : 0.0);
        printf("  max |logit difference|: %.6g\n  mean |logit difference|: %.6g\n", acc.max_logit_diff,
               acc.mean_logit_diff);
        if (emit_report(d, acc.positions, model_path, report, json_path)) goto out;
        if (npk_llm_decoder_finish(d)) {
            cli_fail("%s", npk_errmsg());
            goto out;
        }
        code = 0;
        goto out;
    }
    rc = npk_llm_sampler_init(&s, m->cfg.vocab_size, (float)temperature, seed);
    if (!rc) rc = npk_llm_sampler_set_topp(&s, (float)topp);
    if (rc) {
        cli_fail("%s", npk_errmsg());
        goto out;
    }
    progress_emit pe = {0, n_steps};
    rc = npk_llm_generate(d, t, prompt, n_steps, &s, isatty(STDOUT_FILENO) ? emit_stdout : emit_progress, &pe, NULL);
    cli_progress_end();
    printf("\n");
    if (rc < 0) {
        cli_fail("%s", npk_errmsg());
        goto out;
    }
    if (emit_report(d, rc, model_path, report, json_path)) goto out;
    if (npk_llm_decoder_finish(d)) {
        cli_fail("%s", npk_errmsg());
        goto out;
    }
    code = 0;
out:
    if (trace && cli_out_close(&tro, code == 0) && code == 0) code = cli_fail("llm: %s", npk_errmsg());
    npk_llm_sampler_free(&s);
    free(toks);
    npk_llm_decoder_free(ref);
    npk_llm_decoder_free(d);
    npk_llm_tokenizer_free(t);
    npk_llm_model_free(m);
    return code;
}
