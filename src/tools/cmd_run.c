// SPDX-License-Identifier: MIT
/* npu run: run an ONNX model on a device (partition, execute, report). */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "npukit/graph.h"
#include "npukit/npkb.h"
#include "npukit/report.h"
#include "npukit/strbuf.h"
#include "npukit/trace.h"

#define RUN_DEFAULT_DEVICE "v0"

typedef struct run_args {
    uint32_t threads;
    const char *device, *outdir, *json, *trace_path, *port, *plot, *qdq;
    npk_strlist inputs, dev_opts;
    const char *report;
    int have_seed, device_given, golden, timing_only;
    uint32_t repeat;
    uint64_t seed;
} run_args;

#define RSTR(n, f, m, h) CLI_STR(n, NULL, run_args, f, NULL, m, h)
static const npk_opt run_opts[] = {
    {"--device", NULL, NPK_OPT_STR, offsetof(run_args, device), RUN_DEFAULT_DEVICE, 0, 0, 0, 0, 0, "D",
     "the device, or cpu for the CPU reference alone (a compiled model: its device)",
     offsetof(run_args, device_given) + 1},
    CLI_DEVICE_OPT(run_args, dev_opts),
    CLI_THREADS(run_args, threads),
    CLI_LIST("--input", NULL, run_args, inputs, "NAME=FILE",
      "an ONNX TensorProto file for the graph input NAME (FILE alone: the\n"
      "inputs in order); repeat for every input. A sequence or optional\n"
      "input takes a SequenceProto or OptionalProto file"),
    {"--random-inputs", NULL, NPK_OPT_U64, offsetof(run_args, seed), NULL, 0, 0, 0, 0, 0, "SEED",
     "generate the inputs that were not given (deterministic for SEED)", offsetof(run_args, have_seed) + 1},
    RSTR("--output-dir", outdir, "DIR",
         "write output K as DIR/output_K.pb (ONNX TensorProto; SequenceProto or\n"
         "OptionalProto for a sequence or optional output)"),
    CLI_REPORT(run_args, report,
      "print the partition report and the performance summary on stdout or\n"
      "in FILE (device and\n"
      "clock, cycles and MACs per operator, utilization, TOPS, bytes, time); on v0\n"
      "per layer also the bytes moved per memory (DRAM read/written, scratchpad,\n"
      "accumulator) and whether it was compute- or memory-bound"),
    RSTR("--report-json", json, "FILE", "write both as JSON (the summary under \"performance\")"),
    RSTR("--plot", plot, "FILE.png|.svg",
         "draw the per-layer figures of the device nodes with gnuplot: cycles\n"
         "as bars, array utilization as a line"),
    RSTR("--trace", trace_path, "FILE.json",
         "write a Chrome/Perfetto trace: the device's engines and the host's\n"
         "nodes and driver steps on the simulated clock (deterministic)"),
    RSTR("--port", port, "SPEC", "port to the device (default sim; npu ports lists them)"),
    CLI_FLAG("--golden", NULL, run_args, golden,
      "run the nodes on the CPU with the naive golden kernels (the independent\n"
      "reference) instead of the fast ones (docs/onnx.md)"),
    CLI_STR("--qdq", NULL, run_args, qdq, "fused", "fused|ort",
      "which DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear groups run as one\n"
      "integer operator: fused = every group (what the devices compute), ort = only\n"
      "those ONNX Runtime's x86 CPU provider fuses, the others in float on the CPU\n"
      "(docs/onnx.md \"QDQ\")"),
    CLI_NUM("--repeat", NULL, U32, run_args, repeat, "1", 1, 100000, "N",
            "run the inference N times on the loaded model and print (stderr) the first\n"
            "inference (load and check, inputs, the first run with its plan, weight\n"
            "packing and shape inference) apart from the median of the N-1 warm runs,\n"
            "wall and process CPU time; every run's outputs must equal the first's"),
    CLI_FLAG("--timing-only", NULL, run_args, timing_only,
      "skip the functional compute (device and host): the same device commands,\n"
      "cycles and counters as the functional run, no outputs (docs/sweep.md)"),
};

/* --plot: one bar per device node (cycles, left axis) and, for the nodes with MACs, the
 * array utilization (device MACs / (cycles x peak), right axis); cli_plot_bars draws it. */
static int plot_layers(const npk_run_report *r, const char *model, const char *file) {
    npk_strbuf rows = {0};
    int nl = 0, util = 0;
    uint64_t cyc = 0;
    double lo = 0, hi = 0;
    for (size_t i = 0; i < r->n_nodes; i++) {
        const npk_node_report *n = &r->nodes[i];
        if (n->place != NPK_PLACE_DEVICE || !n->cycles) continue;
        /* utilization only for nodes with MACs (ReLU and pooling have none: a gap, not a 0) */
        if (n->macs && r->peak_macs_per_cycle) {
            npk_strbuf_printf(&rows, "%d \"%s\" %" PRIu64 " %.3f\n", nl, n->name, n->cycles,
                              100.0 * (double)n->macs / ((double)n->cycles * (double)r->peak_macs_per_cycle));
            util = 1;
        } else {
            npk_strbuf_printf(&rows, "%d \"%s\" %" PRIu64 " -\n", nl, n->name, n->cycles);
        }
        if (!nl || (double)n->cycles < lo) lo = (double)n->cycles;
        if ((double)n->cycles > hi) hi = (double)n->cycles;
        cyc += n->cycles;
        nl++;
    }
    if (rows.oom) {
        free(rows.p);
        return cli_fail("--plot: out of memory");
    }
    if (!nl) {
        free(rows.p);
        return cli_fail("--plot: no node ran on the device (%s)", r->device);
    }
    const char *base = strrchr(model, '/');
    char title[256];
    snprintf(title, sizeof title, "npu run %s --device %s: %d device layers, %" PRIu64 " cycles", base ? base + 1 : model,
             r->device, nl, cyc);
    int rc = cli_plot_bars(rows.p, nl, util, lo, hi, title, "device layer (ONNX node, in run order)", file);
    free(rows.p);
    if (!rc) fprintf(stderr, "npu run: %s: %d device layers\n", file, nl);
    return rc;
}

static void run_help(void) {
    printf("usage: npu run MODEL.onnx|MODEL.npkb [--device D] [--device-opt K=V] [--input NAME=FILE.pb ...]\n"
           "               [--random-inputs SEED] [--output-dir DIR] [--report[=FILE]] [--report-json FILE]\n"
           "               [--trace FILE.json] [--plot FILE.png] [--port SPEC] [--timing-only] [--golden]\n"
           "               [--qdq fused|ort]\n\n"
           "Import an ONNX model, place every node the device executes exactly on the device (the rest on the\n"
           "CPU reference), plan the device's guest memory, run, and print the outputs. For 2-D outputs\n"
           "[N, classes] with two or more classes the predicted class of each row (argmax, first maximum)\n"
           "is printed ([N, 1] outputs, e.g. a sigmoid score, have no classes). A compiled model\n"
           "(MODEL.npkb from 'npu compile --device v0|shell', docs/npkb.md) runs on the device it was\n"
           "compiled for, and the run's partition must equal its compiled plan.\n\n"
           "devices: %s\n\noptions:\n", npk_graph_device_names());
    cli_help_opts(run_opts, sizeof run_opts / sizeof run_opts[0]);
}


/* Element i of a float or integer tensor as a double (int64 beyond 2^53 rounds, print only). */
static double elem_f64(const npk_tensor *t, int64_t i) {
    switch (t->dtype) {
    case NPK_DT_FLOAT: return ((float *)t->data)[i];
    case NPK_DT_DOUBLE: return ((double *)t->data)[i];
    case NPK_DT_INT8: return ((int8_t *)t->data)[i];
    case NPK_DT_UINT8: return ((uint8_t *)t->data)[i];
    case NPK_DT_INT32: return ((int32_t *)t->data)[i];
    case NPK_DT_INT64: return (double)((int64_t *)t->data)[i];
    default: return 0;
    }
}

static long long elem_i64(const npk_tensor *t, int64_t i) {
    switch (t->dtype) {
    case NPK_DT_INT8: return ((int8_t *)t->data)[i];
    case NPK_DT_UINT8: return ((uint8_t *)t->data)[i];
    case NPK_DT_INT32: return ((int32_t *)t->data)[i];
    case NPK_DT_INT64: return ((int64_t *)t->data)[i];
    default: return 0;
    }
}

/* Argmax of row r of a 2-D tensor (first maximum). */
static int64_t row_argmax(const npk_tensor *t, int64_t r) {
    int64_t best = 0;
    for (int64_t c = 1; c < t->dims[1]; c++)
        if (elem_f64(t, r * t->dims[1] + c) > elem_f64(t, r * t->dims[1] + best)) best = c;
    return best;
}

static void print_output(const npk_tensor *t) {
    char s[160];
    if (t->kind != NPK_KIND_TENSOR) { /* a sequence or optional: its elements as name[i] */
        const char *nm = t->name ? t->name : "?";
        printf("output '%s': %s of %zu value%s\n", nm, t->kind == NPK_KIND_SEQUENCE ? "sequence" : "optional", t->n_items,
               t->n_items == 1 ? "" : "s");
        for (size_t i = 0; i < t->n_items; i++) {
            char en[200];
            npk_tensor e = t->items[i]; /* a relabelled view: print only */
            snprintf(en, sizeof en, "%s[%zu]", nm, i);
            e.name = en;
            print_output(&e);
        }
        return;
    }
    printf("output '%s': %s\n", t->name ? t->name : "?", npk_tensor_shape_str(t->dtype, t->rank, t->dims, s, sizeof s));
    int64_t n = npk_tensor_numel(t);
    int isf = t->dtype == NPK_DT_FLOAT || t->dtype == NPK_DT_DOUBLE;
    if (t->rank == 2 && t->dims[1] > 0 && (isf || npk_dtype_is_int(t->dtype))) {
        /* an argmax over one column means nothing (a sigmoid score): classes only for >= 2 */
        int classes = t->dims[1] > 1;
        for (int64_t r = 0; r < t->dims[0]; r++) {
            printf("  row %lld:", (long long)r);
            for (int64_t c = 0; c < t->dims[1] && c < 32; c++) {
                int64_t i = r * t->dims[1] + c;
                if (isf) printf(" %g", elem_f64(t, i));
                else printf(" %lld", elem_i64(t, i));
            }
            if (t->dims[1] > 32) printf(" ...");
            if (classes) printf("  -> class %lld", (long long)row_argmax(t, r));
            printf("\n");
        }
        if (classes) {
            printf("predicted classes:");
            for (int64_t r = 0; r < t->dims[0]; r++) printf(" %lld", (long long)row_argmax(t, r));
            printf("\n");
        }
    } else if (n <= 16 && n > 0) {
        printf("  values:");
        for (int64_t i = 0; i < n; i++) {
            if (isf) printf(" %g", t->dtype == NPK_DT_FLOAT ? ((float *)t->data)[i] : ((double *)t->data)[i]);
            else if (t->dtype == NPK_DT_INT8) printf(" %d", ((int8_t *)t->data)[i]);
            else if (t->dtype == NPK_DT_UINT8 || t->dtype == NPK_DT_BOOL) printf(" %u", ((uint8_t *)t->data)[i]);
            else if (t->dtype == NPK_DT_INT32) printf(" %d", ((int32_t *)t->data)[i]);
            else if (t->dtype == NPK_DT_INT64) printf(" %lld", (long long)((int64_t *)t->data)[i]);
        }
        printf("\n");
    }
}

/* ---- --repeat: the first inference apart from the warm runs (issue 26 point 4) ---- */

typedef struct run_clock {
    double wall, cpu; /* ms */
} run_clock;

static run_clock clock_now(void) {
    struct timespec w, c;
    clock_gettime(CLOCK_MONOTONIC, &w);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
    return (run_clock){(double)w.tv_sec * 1e3 + (double)w.tv_nsec * 1e-6, (double)c.tv_sec * 1e3 + (double)c.tv_nsec * 1e-6};
}

static run_clock clock_since(run_clock t0) {
    run_clock t = clock_now();
    return (run_clock){t.wall - t0.wall, t.cpu - t0.cpu};
}

static int dbl_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, size_t n) {
    qsort(v, n, sizeof *v, dbl_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* 1 when two runs' outputs are the same values (their TensorProto encodings). */
static int same_outputs(const npk_tensor *a, size_t na, const npk_tensor *b, size_t nb) {
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++) {
        uint8_t *pa = NULL, *pb = NULL;
        size_t la = 0, lb = 0;
        int same = !npk_tensor_save_pb(&a[i], &pa, &la) && !npk_tensor_save_pb(&b[i], &pb, &lb) && la == lb &&
                   !memcmp(pa, pb, la);
        free(pa), free(pb);
        if (!same) return 0;
    }
    return 1;
}

/* --output-dir: an existing writable directory, or one that can be created. */
static int check_outdir(const char *dir) {
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) return npk_err(NPK_EIO, "'%s' exists and is not a directory", dir);
        if (access(dir, W_OK)) return npk_err(NPK_EIO, "directory '%s' is not writable", dir);
        return 0;
    }
    return cli_check_output(dir);
}

/* Why long: the command's flags checked in the order the user reads them (device first,
 * outputs before work), then load (ONNX or .npkb), inputs, run and outputs; each check exits
 * with its own message. */
int cmd_run(int argc, char **argv) {
    run_args A;
    int early = cli_start("run", argc, argv, run_help, run_opts, sizeof run_opts / sizeof run_opts[0], &A, sizeof A);
    if (early >= 0) return early;
    const char *model = NULL;
    char *dev_opts = NULL;
    int rc = 1, npos = 0;
    npk_npkb *npkb = NULL;
    npk_graph *g = NULL;
    npk_tensor *ins = NULL, *outs = NULL;
    size_t n_outs = 0, n_ins = 0;
    npk_trace *trace = NULL;
    npk_run_report rep;
    memset(&rep, 0, sizeof rep);
    int urc = cli_parse("run", run_opts, sizeof run_opts / sizeof run_opts[0], &A, argc, argv, &model, 1, &npos);
    if (!urc) cli_threads(A.threads);
    /* the device and its options are checked first, before any file is read */
    if (!urc) urc = cli_device("run", A.device, 1, &A.dev_opts, &dev_opts);
    if (!urc && npk_qdq_mode_parse(A.qdq) < 0) urc = cli_usage_error("run", "--qdq '%s': expected fused or ort", A.qdq);
    if (!urc && !model) urc = cli_usage_error("run", "no model given");
    if (!urc && A.repeat > 1 && A.trace_path)
        urc = cli_usage_error("run", "--trace records one run: it cannot be given with --repeat %u", A.repeat);
    if (!urc && A.timing_only && A.outdir) urc = cli_usage_error("run", "--timing-only computes no outputs: --output-dir cannot be given");
    if (!urc && A.timing_only && A.device && !strcmp(A.device, "cpu"))
        urc = cli_usage_error("run", "--timing-only needs a device (the CPU reference has no timing)");
    for (size_t k = 0; !urc && k < A.inputs.n; k++) { /* the same input named twice */
        const char *e1 = strchr(A.inputs.v[k], '=');
        for (size_t j = 0; e1 && j < k; j++) {
            const char *e2 = strchr(A.inputs.v[j], '=');
            if (e2 && e2 - A.inputs.v[j] == e1 - A.inputs.v[k] && !strncmp(A.inputs.v[j], A.inputs.v[k], (size_t)(e1 - A.inputs.v[k])))
                urc = cli_usage_error("run", "--input %.*s given twice", (int)(e1 - A.inputs.v[k]), A.inputs.v[k]);
        }
    }
    if (urc) {
        rc = urc;
        goto out;
    }
    const char *device = A.device, *outdir = A.outdir, *json = A.json, *trace_path = A.trace_path, *port = A.port;
    const char **in_specs = A.inputs.v;
    const char *report = A.report;
    int n_specs = (int)A.inputs.n, have_seed = A.have_seed, device_given = A.device_given;
    uint64_t seed = A.seed;
    /* output paths are checked before the work */
    const char *badopt = json && cli_check_output(json)               ? "--report-json"
                         : A.plot && cli_check_output(A.plot)          ? "--plot"
                         : trace_path && cli_check_output(trace_path) ? "--trace"
                         : outdir && check_outdir(outdir)             ? "--output-dir"
                         : report && strcmp(report, "-") && cli_check_output(report) ? "--report"
                                                                      : NULL;
    if (badopt) {
        rc = cli_fail("run: %s: %s", badopt, npk_errmsg());
        goto out;
    }
    run_clock t_start = clock_now(), t_load = {0, 0}, t_inputs = {0, 0};
    if (cli_is_npkb(model)) {
        /* a compiled model (.npkb): the graph and the plan come from it */
        uint8_t *kb = NULL;
        size_t kl = 0;
        int bad = cli_read_file(model, &kb, &kl) || npk_npkb_open(&npkb, kb, kl);
        free(kb);
        if (bad) {
            rc = cli_fail("%s: %s", model, npk_errmsg());
            goto out;
        }
        if (device_given && strcmp(device, npk_npkb_device(npkb))) {
            rc = cli_fail("%s: compiled for %s, not for --device %s", model, npk_npkb_device(npkb), device);
            goto out;
        }
        device = npk_npkb_device(npkb);
        if (npk_qdq_mode_parse(A.qdq) != NPK_QDQ_FUSED) {
            rc = cli_usage_error("run", "--qdq %s: a compiled model replays the groups it was compiled with (fused)", A.qdq);
            goto out;
        }
        if (npk_npkb_graph(npkb, &g)) {
            rc = cli_fail("%s: %s", model, npk_errmsg());
            goto out;
        }
    } else if (npk_graph_load_file(&g, model)) {
        rc = cli_fail("%s", npk_errmsg());
        goto out;
    }
    if (npk_graph_check(g, NULL)) {
        rc = cli_fail("%s: %s", model, npk_errmsg());
        goto out;
    }
    t_load = clock_since(t_start);
    size_t ngi = npk_graph_n_inputs(g);
    ins = calloc(ngi + (size_t)n_specs + 1, sizeof(npk_tensor));
    if (!ins) {
        rc = cli_fail("out of memory");
        goto out;
    }
    for (int k = 0; k < n_specs; k++) {
        const char *spec = in_specs[k], *eq = strchr(spec, '='), *path = eq ? eq + 1 : spec;
        /* the declared kind of the input says which message the file holds (tensor, sequence, optional) */
        int kind = NPK_KIND_TENSOR;
        for (size_t i = 0; i < ngi; i++) {
            const char *gn = npk_graph_input(g, i)->name;
            if (eq ? strlen(gn) == (size_t)(eq - spec) && !strncmp(gn, spec, (size_t)(eq - spec)) : i == (size_t)k)
                kind = npk_graph_input(g, i)->kind;
        }
        if (npk_value_load_pb_file(&ins[n_ins], path, kind)) {
            rc = cli_fail("input %s: %s", spec, npk_errmsg());
            goto out;
        }
        free(ins[n_ins].name);
        ins[n_ins].name = NULL;
        if (eq) {
            size_t nl = (size_t)(eq - spec);
            ins[n_ins].name = malloc(nl + 1);
            if (!ins[n_ins].name) {
                rc = cli_fail("out of memory");
                goto out;
            }
            memcpy(ins[n_ins].name, spec, nl);
            ins[n_ins].name[nl] = 0;
        } else if ((size_t)k < ngi) {
            ins[n_ins].name = strdup(npk_graph_input(g, (size_t)k)->name);
        }
        n_ins++;
    }
    if (have_seed)
        for (size_t i = 0; i < ngi; i++) {
            const char *nm = npk_graph_input(g, i)->name;
            int given = 0;
            for (size_t k = 0; k < n_ins; k++)
                if (ins[k].name && !strcmp(ins[k].name, nm)) given = 1;
            if (given) continue;
            if (npk_graph_random_input(g, i, seed, &ins[n_ins])) {
                rc = cli_fail("%s", npk_errmsg());
                goto out;
            }
            n_ins++;
        }
    if (trace_path && !(trace = npk_trace_new())) {
        rc = cli_fail("out of memory");
        goto out;
    }
    /* a compiled model replays its stored command stream (docs/npkb.md) */
    npk_run_opts opts = {.device = device, .port = port, .trace = trace, .dev_opts = dev_opts,
                         .stream = npkb ? npk_npkb_stream(npkb) : NULL, .golden = A.golden, .qdq = npk_qdq_mode_parse(A.qdq),
                         .timing_only = A.timing_only};
    npk_graph_set_progress(g, cli_progress_cb, "run: nodes"); /* a terminal only */
    {
        run_clock t = clock_since(t_start);
        t_inputs = (run_clock){t.wall - t_load.wall, t.cpu - t_load.cpu};
    }
    run_clock t_run0 = clock_now();
    int st = npk_graph_run(g, &opts, ins, n_ins, &outs, &n_outs, &rep);
    run_clock t_first = clock_since(t_run0), t_total = clock_since(t_start);
    cli_progress_end();
    if (!st && A.repeat > 1) {
        /* the warm runs: the same graph and inputs; each one's outputs must equal the first's */
        npk_graph_set_progress(g, NULL, NULL);
        double *ww = calloc(A.repeat, sizeof *ww), *wc = calloc(A.repeat, sizeof *wc);
        if (!ww || !wc) {
            free(ww), free(wc);
            rc = cli_fail("out of memory");
            goto out;
        }
        for (uint32_t r = 1; r < A.repeat && !st; r++) {
            npk_tensor *o2 = NULL;
            size_t n2 = 0;
            npk_run_report_fini(&rep);
            memset(&rep, 0, sizeof rep);
            run_clock t0 = clock_now();
            st = npk_graph_run(g, &opts, ins, n_ins, &o2, &n2, &rep);
            run_clock t = clock_since(t0);
            ww[r - 1] = t.wall, wc[r - 1] = t.cpu;
            if (!st && !A.timing_only && !same_outputs(outs, n_outs, o2, n2)) {
                for (size_t i = 0; i < n2; i++) npk_tensor_free(&o2[i]);
                free(o2), free(ww), free(wc);
                rc = cli_fail("%s: run %u of --repeat %u gave other outputs than the first run", model, r + 1, A.repeat);
                goto out;
            }
            for (size_t i = 0; i < n2; i++) npk_tensor_free(&o2[i]);
            free(o2);
        }
        if (!st) {
            uint32_t n = A.repeat - 1;
            double mw = median_of(ww, n), mc = median_of(wc, n);
            fprintf(stderr,
                    "npu run: first inference %.3f ms wall, %.3f ms CPU (load and check %.3f / %.3f, inputs %.3f / "
                    "%.3f, first run with plan, weight packing and shape inference %.3f / %.3f)\n"
                    "npu run: warm runs (%u): median %.3f ms wall (min %.3f, max %.3f), %.3f ms CPU (min %.3f, max "
                    "%.3f); first inference / warm median %.1fx wall, %.1fx CPU\n",
                    t_total.wall, t_total.cpu, t_load.wall, t_load.cpu, t_inputs.wall, t_inputs.cpu, t_first.wall,
                    t_first.cpu, n, mw, ww[0], ww[n - 1], mc, wc[0], wc[n - 1], mw > 0 ? t_total.wall / mw : 0,
                    mc > 0 ? t_total.cpu / mc : 0);
        }
        free(ww), free(wc);
    }
    if (st) {
        if (report && rep.nodes) npk_run_report_print(&rep, stdout); /* what ran before the failure */
        rc = cli_fail("%s: %s", model, npk_errmsg());
        goto out;
    }
    if (npkb && npk_npkb_check_run(npkb, &rep)) {
        rc = cli_fail("%s: %s", model, npk_errmsg());
        goto out;
    }
    if (strcmp(device, "cpu")) { /* a device was asked for: say when it ran nothing */
        size_t on_dev = 0;
        for (size_t i = 0; i < rep.n_nodes; i++) on_dev += rep.nodes[i].place == NPK_PLACE_DEVICE;
        if (!on_dev)
            fprintf(stderr,
                    "npu run: note: no node ran on %s; all %zu nodes ran on the CPU reference ('npu onnx-ops' lists "
                    "what each device runs)\n",
                    device, rep.n_nodes);
    }
    if (A.timing_only) fprintf(stderr, "npu run: timing-only run: %zu outputs not computed\n", n_outs);
    else
        for (size_t i = 0; i < n_outs; i++) print_output(&outs[i]);
    if (outdir) {
        if (mkdir(outdir, 0777) && errno != EEXIST) {
            rc = cli_fail("run: cannot create the output directory '%s': %s", outdir, strerror(errno));
            goto out;
        }
        for (size_t i = 0; i < n_outs; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/output_%zu.pb", outdir, i);
            uint8_t *pb = NULL;
            size_t pblen = 0;
            if (npk_tensor_save_pb(&outs[i], &pb, &pblen) || cli_write_file(path, pb, pblen)) {
                free(pb);
                rc = cli_fail("%s", npk_errmsg());
                goto out;
            }
            free(pb);
        }
    }
    if (report) {
        npk_report *perf = NULL;
        if (npk_run_report_perf(&rep, model, &perf)) {
            rc = cli_fail("%s", npk_errmsg());
            goto out;
        }
        cli_out ro;
        FILE *rf = cli_report_open(report, &ro);
        if (rf) {
            npk_run_report_print(&rep, rf);
            npk_report_print(perf, rf);
        }
        npk_report_free(perf);
        if (!rf || cli_report_close(&ro, rf)) {
            rc = cli_fail("run: --report: %s", npk_errmsg());
            goto out;
        }
    }
    if (json) {
        cli_out o;
        if (cli_out_open(&o, json)) {
            rc = cli_fail("run: %s", npk_errmsg());
            goto out;
        }
        int bad = npk_run_report_write_json(&rep, o.f) != 0;
        if (cli_out_close(&o, !bad) || bad) {
            rc = cli_fail("cannot write the JSON report '%s'", json);
            goto out;
        }
    }
    if (A.plot && plot_layers(&rep, model, A.plot)) {
        rc = 1;
        goto out;
    }
    if (trace && cli_write_trace(trace, trace_path)) {
        rc = cli_fail("%s", npk_errmsg());
        goto out;
    }
    rc = 0;
out:
    for (size_t i = 0; i < n_ins; i++) npk_tensor_free(&ins[i]);
    free(ins);
    for (size_t i = 0; i < n_outs; i++) npk_tensor_free(&outs[i]);
    free(outs);
    npk_run_report_fini(&rep);
    npk_graph_free(g);
    npk_npkb_free(npkb);
    if (trace) npk_trace_free(trace);
    npk_strlist_free(&A.inputs);
    npk_strlist_free(&A.dev_opts);
    free(dev_opts);
    return rc;
}
