// SPDX-License-Identifier: MIT
/* npu bench: a fixed benchmark suite with baselines measured in the same run.
 *
 * Every figure is the median of --repeat runs with their min and max (host
 * wall-clock figures), or a modeled figure of the simulated device, which is
 * the same in every run (min = max = median). docs/performance.md explains
 * each figure and keeps the latest results.
 *
 * This file holds the suite table (one row per bench), the command line, the
 * JSON output and --compare; each family of benches is one file, suite_<family>.c
 * (v0, shell, e1, llm, onnx, report), over the figures of bench_core.c. */
#include "bench.h"
#include "bench_suite.h"
#include "npukit/cpu.h"
#include "npukit/devtab.h"
#include "npukit/npkb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#ifndef NPUKIT_SHARED_DIR_DEFAULT
#define NPUKIT_SHARED_DIR_DEFAULT "../shared"
#endif
#ifndef NPUKIT_SOURCE_DIR_DEFAULT
#define NPUKIT_SOURCE_DIR_DEFAULT "."
#endif

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
    {"report-cost", "npu run of int8 ResNet-50 on v0: plain, --report, --trace, without the energy model (host time ratios; minutes)",
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
     "'all threads' for npukit and its baselines (default: the online CPUs);\n"
     "the 1-thread figures are measured too, the count set explicitly each\n"
     "time", offsetof(bench_args, threads_given) + 1},
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
           "npukit and its baselines run at 1 thread and at all threads (--threads), each ratio\n"
           "between figures at equal thread counts. The machine may be shared: compare figures\n"
           "from one run, not across runs.\n"
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
    printf(",\"host_cpus\":%ld,\"baseline_available\":{\"onednn\":%s},\"cpu\":{\"model\":", sysconf(_SC_NPROCESSORS_ONLN),
           bench_dnnl_available() ? "true" : "false");
    npk_json_fputs(stdout, bench_cpu_model());
    const char *di = bench_dnnl_isa();
    printf(",\"isa_host\":\"%s\",\"isa\":\"%s\",\"vnni\":%s,\"onednn_isa\":", npk_isa_name(npk_isa_host()),
           npk_isa_name(npk_isa_active()), npk_isa_host() >= NPK_ISA_AVX512VNNI ? "true" : "false");
    if (di) npk_json_fputs(stdout, di);
    else printf("null");
    printf("},\"figures\":[");
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
        printf(",\"isa\":");
        if (f->isa) npk_json_fputs(stdout, f->isa);
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
        if (e.line > 0) cli_fail("bench --compare: %s:%d: %s", path, e.line, e.text);
        else cli_fail("bench --compare: %s", e.text); /* cannot open: the text names the file */
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
        const char *dir = fig_str(f, "better", bench_better_of(kind, unit));
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
        for (size_t i = 0; i < nrows; i++)
            printf("%s%s\n", rows[i].name, rows[i].pending ? "  (not run by default: name it to run it)" : "");
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
    if (!c.json) {
        const char *di = bench_dnnl_isa();
        npk_isa host = npk_isa_host(), act = npk_isa_active();
        printf("CPU: %s, %ld online; npukit's kernels at ISA level %s (host: %s%s%s%s); oneDNN: %s; ONNX Runtime, "
               "run.c: their own code for this CPU\n",
               bench_cpu_model(), sysconf(_SC_NPROCESSORS_ONLN), npk_isa_name(act), npk_isa_name(host),
               host < NPK_ISA_AVX512VNNI ? ", no AVX-512 VNNI" : "", act < host ? ", capped by NPUKIT_ISA" : "",
               npk_isa_emulated() ? ", AVX-512 EMULATED by SIMDe: a test build, timings mean nothing" : "",
               di ? di : "-");
    }
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
