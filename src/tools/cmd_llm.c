/* npu llm: generate text with a llama2.c checkpoint on pccx or the CPU. */
#include "cli.h"
#include "npukit/llm.h"
#include "npukit/pccx.h"
#include "npukit/report.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void help(void) {
    printf(
        "usage: npu llm --model M --tokenizer T [--device pccx|cpu] [--prompt TEXT] [--steps N]\n"
        "               [--temperature X] [--top-p P] [--seed S] [--trace FILE.json] [--report] [--report-json F]\n"
        "               [--accuracy]"
        " [--group-size G] [--port SPEC] [--device-opts O]\n"
        "\n"
        "Generate text with a llama2.c checkpoint (legacy format) and its tokenizer,\n"
        "starting from BOS (id 1) and the prompt, and print it.\n"
        "\n"
        "options:\n"
        "  --model M          llama2.c checkpoint (.bin), required\n"
        "  --tokenizer T      llama2.c tokenizer (.bin) for the model's vocabulary, required\n"
        "  --device D         cpu: fp32 reference decoder; pccx: INT4 weights, every projection\n"
        "                     as a GEMV on the pccx NPU model (default cpu)\n"
        "  --prompt TEXT      text to start from (BPE-encoded with the tokenizer's scores; echoed)\n"
        "  --steps N          positions to run including BOS and the prompt (default 200,\n"
        "                     capped at the model's seq_len); generation also stops at BOS\n"
        "  --temperature X    0 = greedy arg-max (default); > 0 samples softmax(logits / X)\n"
        "  --top-p P          nucleus sampling mass, 0..1 (default 0.9, as llama2.c run.c's -p;\n"
        "                     0 or 1 = plain multinomial); used when --temperature > 0\n"
        "  --seed S           RNG seed for sampling (default 1); the RNG is llama2.c's\n"
        "                     xorshift64* (see docs/llm.md)\n"
        "  --trace FILE.json  write a Chrome trace (pccx only): the device's engines and the\n"
        "                     host's decode steps on the simulated clock\n"
        "  --report           after the text, print the performance report: device and clock,\n"
        "                     instructions by opcode with engine cycles and MACs, host steps,\n"
        "                     utilization, TOPS, bytes per memory, modeled tokens/s and ms/token,\n"
        "                     host simulation tokens/s, per-token figures, host share of the work\n"
        "  --report-json F    write the performance report as JSON to F\n"
        "  --accuracy         instead of generating: teacher-force the fp32 greedy sequence of\n"
        "                     --steps positions through the device decoder and print the share\n"
        "                     of positions whose top token equals fp32's and the max logit difference\n"
        "  --group-size G     pccx: one INT4 scale per G inputs of each output channel\n"
        "                     (0 = one scale per output channel, the default)\n"
        "  --port SPEC        pccx: port spec (default sim)\n"
        "  --device-opts O    pccx: device model options, e.g. ddr_eff=0.55 (see 'npu devices')\n"
        "  --help             this text\n");
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

/* The decode run as a performance report (include/npukit/report.h): device
 * instructions per opcode with their engine cycles and MACs, the host steps
 * as host operators, bytes per memory, modeled and host tokens/s, and the
 * per-token figures as notes. Returns NULL when out of memory. */
static npk_report *make_report(const npk_llm_decoder *d, int ntok, const char *model_path) {
    npk_llm_stats st;
    npk_llm_stats_get(d, &st);
    double per = st.tokens ? 1.0 / (double)st.tokens : 0.0;
    int dev = st.device_hz != 0;
    /* pccx GEMV computes 32 x lanes (4 by default) MACs per cycle */
    npk_report *r = npk_report_new(npk_llm_decoder_kind(d), st.device_hz, dev ? 128 : 0);
    if (!r) return NULL;
    npk_report_name(r, model_path);
    if (dev) {
        uint64_t cyc[5] = {st.engine_cycles[0], st.engine_cycles[1], st.engine_cycles[3], 0, st.engine_cycles[2]};
        if (st.instr[0] && st.instr[1]) /* MACs are counted for both together */
            npk_report_op_n(r, "GEMV+GEMM", 1, st.instr[0] + st.instr[1], cyc[0] + cyc[1], st.device_macs);
        for (int i = 0; i < 5; i++)
            if (st.instr[i] && !(i < 2 && st.instr[0] && st.instr[1]))
                npk_report_op_n(r, npk_pccx_opcode_name((unsigned)i), 1, st.instr[i], cyc[i], i < 2 ? st.device_macs : 0);
        npk_report_total_cycles(r, st.device_cycles);
        npk_report_bytes(r, "weight stream (INT4 + scales)", st.weight_bytes, 0);
        npk_report_bytes(r, "host<->L2 (MEMCPY)", st.memcpy_bytes, 0);
        npk_report_bytes(r, "host driver buffers", st.host_bytes, 0);
    }
    for (int i = 0; npk_llm_host_op_name(i); i++)
        if (st.host_op_kinds[i]) npk_report_op_n(r, npk_llm_host_op_name(i), 0, st.tokens, 0, 0);
    npk_report_tokens(r, st.tokens);
    npk_report_host_time(r, st.host_seconds);
    npk_report_note(r, "forward steps / emitted", "%llu / %d", (unsigned long long)st.tokens, ntok);
    if (dev) {
        npk_report_note(r, "modeled device", "%.0f cycles/token (device busy time; host steps not modeled)",
                        (double)st.device_cycles * per);
        npk_report_note(r, "instructions per token",
                        "%.1f (GEMV %.1f, GEMM %.1f, MEMCPY %.1f, MEMSET %.1f, CVO %.1f)",
                        (double)st.instr_total * per, (double)st.instr[0] * per, (double)st.instr[1] * per,
                        (double)st.instr[2] * per, (double)st.instr[3] * per, (double)st.instr[4] * per);
        npk_report_note(r, "bytes per token",
                        "%.0f weight stream (INT4 + scales), %.0f MEMCPY, %.0f host<->device buffers",
                        (double)st.weight_bytes * per, (double)st.memcpy_bytes * per, (double)st.host_bytes * per);
        static const char *pn[8] = {"q", "k", "v", "o", "w1", "w2", "w3", "cls"};
        char buf[160];
        size_t o = 0;
        for (int i = 0; i < 8 && o < sizeof buf; i++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s %.0f", i ? " " : "", pn[i],
                                  (double)st.gemv_on_device[i] * per);
        npk_report_note(r, "device GEMV per token", "%s", buf);
    }
    uint64_t tot = st.device_ops + st.host_ops;
    npk_report_note(r, "work per token", "%.0f device ops, %.0f host ops; host share %.2f%%",
                    (double)st.device_ops * per, (double)st.host_ops * per,
                    tot ? 100.0 * (double)st.host_ops / (double)tot : 0.0);
    char buf[160];
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; npk_llm_host_op_name(i) && o < sizeof buf; i++)
        if (st.host_op_kinds[i])
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s %.0f", o ? " " : "", npk_llm_host_op_name(i),
                                  (double)st.host_op_kinds[i] * per);
    npk_report_note(r, "host ops per token", "%s", buf);
    return r;
}

/* --report / --report-json. Returns 0 or 1 (reported). */
static int emit_report(const npk_llm_decoder *d, int ntok, const char *model_path, int text, const char *json_path) {
    if (!text && !json_path) return 0;
    npk_report *r = make_report(d, ntok, model_path);
    if (!r) return cli_fail("out of memory");
    if (text) {
        printf("\n");
        npk_report_print(r, stderr);
    }
    int rc = 0;
    if (json_path && cli_write_report(r, json_path)) rc = cli_fail("%s", npk_errmsg());
    npk_report_free(r);
    return rc;
}

int cmd_llm(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        help();
        return 0;
    }
    const char *model_path = NULL, *tok_path = NULL, *device = "cpu", *prompt = "", *trace = NULL, *port = NULL,
               *dev_opts = NULL, *json_path = NULL;
    uint64_t steps = 200, seed = 1, group = 0;
    double temperature = 0.0, topp = 0.9;
    int report = 0, accuracy = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--report"))
            report = 1;
        else if (!strcmp(a, "--accuracy"))
            accuracy = 1;
        else if (!has && (!strcmp(a, "--model") || !strcmp(a, "--tokenizer") || !strcmp(a, "--device") ||
                          !strcmp(a, "--prompt") || !strcmp(a, "--steps") || !strcmp(a, "--temperature") ||
                          !strcmp(a, "--top-p") || !strcmp(a, "--seed") || !strcmp(a, "--trace") || !strcmp(a, "--group-size") ||
                          !strcmp(a, "--port") || !strcmp(a, "--device-opts") || !strcmp(a, "--report-json")))
            return cli_usage_error("llm", "%s needs a value", a);
        else if (!strcmp(a, "--model"))
            model_path = argv[++i];
        else if (!strcmp(a, "--tokenizer"))
            tok_path = argv[++i];
        else if (!strcmp(a, "--device"))
            device = argv[++i];
        else if (!strcmp(a, "--prompt"))
            prompt = argv[++i];
        else if (!strcmp(a, "--trace"))
            trace = argv[++i];
        else if (!strcmp(a, "--port"))
            port = argv[++i];
        else if (!strcmp(a, "--device-opts"))
            dev_opts = argv[++i];
        else if (!strcmp(a, "--report-json"))
            json_path = argv[++i];
        else if (!strcmp(a, "--steps")) {
            if (cli_parse_u64(argv[++i], &steps) || steps == 0 || steps > (1u << 20))
                return cli_usage_error("llm", "--steps '%s' is not a number in 1..1048576", argv[i]);
        } else if (!strcmp(a, "--seed")) {
            if (cli_parse_u64(argv[++i], &seed)) return cli_usage_error("llm", "--seed '%s' is not a number", argv[i]);
        } else if (!strcmp(a, "--group-size")) {
            if (cli_parse_u64(argv[++i], &group) || group > 65536)
                return cli_usage_error("llm", "--group-size '%s' is not a number in 0..65536", argv[i]);
        } else if (!strcmp(a, "--temperature")) {
            if (cli_parse_double(argv[++i], &temperature) || !(temperature >= 0.0) || temperature > 1e6)
                return cli_usage_error("llm", "--temperature '%s' is not a number >= 0", argv[i]);
        } else if (!strcmp(a, "--top-p")) {
            if (cli_parse_double(argv[++i], &topp) || !(topp >= 0.0 && topp <= 1.0))
                return cli_usage_error("llm", "--top-p '%s' is not a number in the range 0..1", argv[i]);
        } else
            return cli_usage_error("llm", "unknown option '%s'", a);
    }
    if (!model_path) return cli_usage_error("llm", "--model is required");
    if (!tok_path) return cli_usage_error("llm", "--tokenizer is required");
    int pccx = !strcmp(device, "pccx");
    if (!pccx && strcmp(device, "cpu")) return cli_usage_error("llm", "--device must be pccx or cpu, not '%s'", device);
    if (trace && !pccx) return cli_usage_error("llm", "--trace needs --device pccx");
    if (json_path && cli_check_output(json_path)) return cli_fail("llm: --report-json: %s", npk_errmsg());
    if (trace && cli_check_output(trace)) return cli_fail("llm: --trace: %s", npk_errmsg());

    npk_llm_model *m = NULL;
    npk_llm_tokenizer *t = NULL;
    npk_llm_decoder *d = NULL, *ref = NULL;
    npk_llm_sampler s = {0};
    int *toks = NULL;
    int rc = npk_llm_model_load(model_path, &m);
    if (rc) return cli_fail("%s", npk_errmsg());
    rc = npk_llm_tokenizer_load(tok_path, m->cfg.vocab_size, &t);
    if (rc) {
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
                            .trace_path = trace ? (tro.tmp ? tro.tmp : trace) : NULL};
    int code = 1;
    if (pccx)
        rc = npk_llm_decoder_pccx(m, &po, &d);
    else
        rc = npk_llm_decoder_cpu(m, &d);
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
