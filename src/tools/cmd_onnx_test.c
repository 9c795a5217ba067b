// SPDX-License-Identifier: MIT
/* npu onnx-test: run ONNX backend test directories and compare outputs. */
#include <dirent.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "npukit/sim.h"
#include "npukit/report.h"
#include <jansson.h>
#include "npukit/graph.h"
#include "npukit/numfmt.h"

/* float tolerances: the backend tests' rtol 1e-3, atol 1e-7 unless --rtol/--atol */
static double ot_rtol = 1e-3, ot_atol = 1e-7;

typedef struct ot_args {
    uint32_t threads;
    const char *device, *port, *qdq, *report, *json, *plot, *trace;
    npk_strlist dev_opts;
    int require, quiet, golden;
    double rtol, atol;
    uint64_t max_bytes;
} ot_args;

static const npk_opt ot_opts[] = {
    CLI_STR("--device", NULL, ot_args, device, "cpu", "D", "the device"),
    CLI_DEVICE_OPT(ot_args, dev_opts),
    CLI_THREADS(ot_args, threads),
    CLI_FLAG("--require-offload", NULL, ot_args, require,
      "fail a test when an integer matrix product (MatMulInteger, ConvInteger,\n"
      "QLinearMatMul, QLinearConv, or a DequantizeLinear -> Conv/MatMul/Gemm ->\n"
      "QuantizeLinear group) ran on the CPU without a documented device limit,\n" "naming every such node"),
    CLI_STR("--port", NULL, ot_args, port, NULL, "SPEC", "port to the device (default sim; npu ports lists them)"),
    {"--rtol", NULL, NPK_OPT_F64, offsetof(ot_args, rtol), "1e-3", 0, 0, 0, 1e300, 0, "R",
     "relative float tolerance: |got - expected| <= A + R |expected|", 0},
    {"--atol", NULL, NPK_OPT_F64, offsetof(ot_args, atol), "1e-7", 0, 0, 0, 1e300, 0, "A", "absolute float tolerance", 0},
    CLI_FLAG("--quiet", NULL, ot_args, quiet, "print only failures and the summary"),
    CLI_FLAG("--golden", NULL, ot_args, golden, "CPU nodes run the naive golden kernels instead of the fast ones"),
    CLI_STR("--qdq", NULL, ot_args, qdq, "ort", "fused|ort",
      "which DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear groups run as one\n"
      "integer operator: ort (the default here: test data are a runtime's recorded\n"
      "outputs) = only those ONNX Runtime's x86 CPU provider fuses, the others in float\n"
      "on the CPU; fused = every group (what the devices compute; npu run's default)\n"
      "(docs/onnx.md \"QDQ\")"),
    CLI_NUM("--max-bytes", NULL, U64, ot_args, max_bytes, "4294967296", 0, 0, "N",
      "fail a test whose model.onnx plus test-data files exceed N bytes, before\n" "loading anything (0 = no limit)"),
    CLI_REPORT(ot_args, report,
      "after the results, a performance report with one row per test that ran\n"
      "(device cycles and MACs summed over its data sets), on stdout or in FILE"),
    CLI_STR("--report-json", NULL, ot_args, json, NULL, "FILE", "write that report as JSON to FILE"),
    CLI_STR("--plot", NULL, ot_args, plot, NULL, "FILE.png|.svg", "draw each test's device cycles (bars) with gnuplot"),
    CLI_STR("--trace", NULL, ot_args, trace, NULL, "FILE.json",
      "write a Chrome/Perfetto trace on the simulated clock: every test's runs\n"
      "one after another (the device's engines, the host's nodes, and a 'tests'\n"
      "track of the host naming each run), with the energy counters"),
};

/* --report / --report-json / --plot: one operator per passed test (NULL when not asked),
 * the device energy summed over the runs (ot_has_energy: every run had it). */
static npk_report *ot_report;
static npk_energy ot_energy;
static npk_area ot_area;
static uint32_t ot_tech_nm;
static int ot_has_energy = -1; /* -1: no run yet */

static const char *test_name(const char *dir) {
    const char *base = strrchr(dir, '/');
    return base && base[1] ? base + 1 : dir;
}

static void report_case(const char *dir, const char *device, uint64_t cycles, uint64_t macs, int has_energy,
                        double energy_pj) {
    npk_report_op(ot_report, test_name(dir), !!strcmp(device, "cpu"), cycles, macs);
    if (has_energy) npk_report_op_energy(ot_report, test_name(dir), !!strcmp(device, "cpu"), energy_pj);
}

/* A passed test's energy into the command's total (a test without energy clears it). */
static void sum_energy(int has_energy, const npk_energy *e, const npk_area *a, uint32_t tech_nm) {
    if (!has_energy) {
        ot_has_energy = 0;
        return;
    }
    if (ot_has_energy < 0) ot_has_energy = 1;
    npk_energy_add(&ot_energy, e);
    ot_area = *a;
    ot_tech_nm = tech_nm;
}

/* --trace: the tests' runs laid one after another on one timeline (each run's
 * clock starts at 0); ot_trace_at is where the next run starts. */
static npk_trace *ot_trace;
static uint64_t ot_trace_at;

/* After a run of test dir's data set `set` that took `cycles`: its event on the host's
 * "tests" track, and the next run starts after it. */
static void trace_case(const char *dir, const char *set, uint64_t cycles) {
    if (!ot_trace) return;
    char tn[600];
    snprintf(tn, sizeof tn, "%.280s/%.280s", test_name(dir), set);
    npk_trace_complete(ot_trace, "host", "tests", tn, 0, cycles, NULL);
    ot_trace_at += cycles;
    npk_trace_set_offset(ot_trace, 0);
}

/* --require-offload: why, naming the `stuck` integer products that ran on the CPU
 * without a documented device limit. */
static void name_stuck(const npk_run_report *rep, size_t stuck, char *why, size_t wl) {
    size_t at = (size_t)snprintf(why, wl, "%zu integer product%s ran on the CPU without a documented device limit:", stuck,
                                 stuck > 1 ? "s" : "");
    const char *sep = " ";
    for (size_t k = 0; k < rep->n_nodes && at < wl; k++)
        if (rep->nodes[k].place == NPK_PLACE_CPU && rep->nodes[k].int_product && !rep->nodes[k].offload_limit) {
            at += (size_t)snprintf(why + at, wl - at, "%snode '%s' (%s): %s", sep, rep->nodes[k].name, rep->nodes[k].op,
                                   rep->nodes[k].why);
            sep = "; ";
        }
}

/* The size cap of this run (--max-bytes; 0 = none). */
static uint64_t ot_max_bytes;

/* Bytes of the regular files directly in dir (0 when it cannot be read). */
static uint64_t dir_bytes(const char *dir) {
    uint64_t sum = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));) {
        char p[4096];
        struct stat st;
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < sizeof p && stat(p, &st) == 0 && S_ISREG(st.st_mode))
            sum += (uint64_t)st.st_size;
    }
    closedir(d);
    return sum;
}

/* A test's model plus its test_data_set_* files. */
static uint64_t test_bytes(const char *dir) {
    uint64_t sum = dir_bytes(dir);
    DIR *d = opendir(dir);
    if (!d) return sum;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, "test_data_set_", 14)) {
            char p[4096];
            if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < sizeof p) sum += dir_bytes(p);
        }
    closedir(d);
    return sum;
}

/* The device options of this run ("k=v,..." checked against the device table, or NULL). */
static const char *ot_dev_opts;
static int ot_golden; /* --golden */
static int ot_qdq;    /* --qdq */

static void ot_help(void) {
    printf("usage: npu onnx-test DIR... [--device D] [--device-opt K=V] [--require-offload] [--port SPEC]\n"
           "                     [--rtol R] [--atol A] [--quiet] [--max-bytes N] [--qdq fused|ort]\n\n"
           "Run ONNX backend test directories: DIR holds model.onnx and test_data_set_N/ with input_K.pb and\n"
           "output_K.pb (ONNX TensorProto, or SequenceProto / OptionalProto where the model declares a sequence\n"
           "or optional input or output), or DIR holds such test directories (run in name order).\n"
           "Outputs are compared exactly for integer tensors and with rtol 1e-3, atol 1e-7 for float tensors;\n"
           "sequences and optionals element by element.\n"
           "One line per test: PASS, FAIL (with the reason) or SKIP (unsupported operator or type, named);\n"
           "outputs fed by a random operator are checked by its contract (shape, dtype, range), the PASS\n"
           "line then says '(random: contract checked)'.\n"
           "the last line is 'N passed, N failed, N skipped'. Exit status 1 if a test failed.\n\n"
           "devices: %s\n\noptions:\n", npk_graph_device_names());
    cli_help_opts(ot_opts, sizeof ot_opts / sizeof ot_opts[0]);
}

/* Path joins into PATH_MAX-sized buffers: a path that does not fit is
 * truncated and then simply fails to open (reported as such). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
#define PJOIN(buf, ...) snprintf(buf, sizeof buf, __VA_ARGS__)

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}
static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted names in dir starting with prefix (and, if need_dir, directories). */
static char **list_dir(const char *dir, const char *prefix, int need_dir, size_t *n) {
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) return NULL;
    size_t cap = 16;
    char **v = malloc(cap * sizeof(char *));
    struct dirent *e;
    while (v && (e = readdir(d))) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix))) continue;
        char p[4096];
        (void)PJOIN(p, "%s/%s", dir, e->d_name);
        if (need_dir ? !is_dir(p) : !is_file(p)) continue;
        if (*n == cap) {
            char **nv = realloc(v, (cap *= 2) * sizeof(char *));
            if (!nv) break;
            v = nv;
        }
        v[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    if (v) qsort(v, *n, sizeof(char *), cmp_str);
    return v;
}

static void free_list(char **v, size_t n) {
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* numeric suffix order: input_2 < input_10 */
static int cmp_num(const void *a, const void *b) {
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    long nx = strtol(strchr(x, '_') ? strchr(x, '_') + 1 : x, NULL, 10), ny = strtol(strchr(y, '_') ? strchr(y, '_') + 1 : y, NULL, 10);
    return nx < ny ? -1 : nx > ny;
}

static double elem(const npk_tensor *t, int64_t i) {
    switch (t->dtype) {
    case NPK_DT_FLOAT: return ((const float *)t->data)[i];
    case NPK_DT_DOUBLE: return ((const double *)t->data)[i];
    case NPK_DT_FLOAT16: return npk_fp16_to_f32(((const uint16_t *)t->data)[i]);
    case NPK_DT_BFLOAT16: return npk_bf16_to_f32(((const uint16_t *)t->data)[i]);
    default: return 0;
    }
}

static int64_t ielem(const npk_tensor *t, int64_t i) {
    switch (t->dtype) {
    case NPK_DT_UINT8: case NPK_DT_BOOL: return ((const uint8_t *)t->data)[i];
    case NPK_DT_INT8: return ((const int8_t *)t->data)[i];
    case NPK_DT_UINT16: return ((const uint16_t *)t->data)[i];
    case NPK_DT_INT16: return ((const int16_t *)t->data)[i];
    case NPK_DT_INT32: return ((const int32_t *)t->data)[i];
    case NPK_DT_UINT32: return ((const uint32_t *)t->data)[i];
    case NPK_DT_INT64: case NPK_DT_UINT64: return ((const int64_t *)t->data)[i];
    default: return 0;
    }
}

/* ONNX 1.12's test data stores bfloat16 tensors as uint16 (numpy has no
 * bfloat16): a uint16 tensor file for a value the model declares bfloat16
 * holds its bits. */
static void bf16_bits(npk_tensor *t, const npk_value_desc *d) {
    if (t->kind == NPK_KIND_TENSOR && d->kind == NPK_KIND_TENSOR && d->dtype == NPK_DT_BFLOAT16 && t->dtype == NPK_DT_UINT16)
        t->dtype = NPK_DT_BFLOAT16;
}

static const char *kind_name(int kind) {
    return kind == NPK_KIND_SEQUENCE ? "sequence" : kind == NPK_KIND_OPTIONAL ? "optional" : "tensor";
}

/* 0 when equal within tolerance; else writes the reason. what: "output 0",
 * "output 0 item 1", ... Sequences and optionals are compared element by
 * element with the same rules (depth-limited: optional(sequence(tensor))). */
static int compare(const npk_tensor *got, const npk_tensor *exp, const char *what, char *why, size_t wl, int depth) {
    char s1[128], s2[128];
    if (got->kind != exp->kind) {
        snprintf(why, wl, "%s: got a %s, expected a %s", what, kind_name(got->kind), kind_name(exp->kind));
        return 1;
    }
    if (exp->kind != NPK_KIND_TENSOR) {
        if (got->n_items != exp->n_items) {
            snprintf(why, wl, "%s: got a %s of %zu, expected %zu", what, kind_name(exp->kind), got->n_items, exp->n_items);
            return 1;
        }
        if (depth > 2) {
            snprintf(why, wl, "%s: nested too deeply to compare", what);
            return 1;
        }
        for (size_t i = 0; i < exp->n_items; i++) {
            char sub[96];
            snprintf(sub, sizeof sub, "%s item %zu", what, i);
            if (compare(&got->items[i], &exp->items[i], sub, why, wl, depth + 1)) return 1;
        }
        return 0;
    }
    if (got->dtype != exp->dtype || got->rank != exp->rank ||
        memcmp(got->dims, exp->dims, sizeof(int64_t) * (size_t)got->rank)) {
        snprintf(why, wl, "%s: got %s, expected %s", what, npk_tensor_shape_str(got->dtype, got->rank, got->dims, s1, sizeof s1),
                 npk_tensor_shape_str(exp->dtype, exp->rank, exp->dims, s2, sizeof s2));
        return 1;
    }
    int64_t n = npk_tensor_numel(exp);
    int isf = exp->dtype == NPK_DT_FLOAT || exp->dtype == NPK_DT_DOUBLE || npk_dtype_is_half(exp->dtype);
    for (int64_t i = 0; i < n; i++) {
        if (isf) {
            double a = elem(got, i), e = elem(exp, i);
            if (isnan(e) && isnan(a)) continue;
            if (isinf(e) && a == e) continue;
            /* a half-type output is within one unit in the last place of its type
             * (bfloat16 2^-7, float16 2^-10 relative) when rtol is tighter: the
             * rounding of the type, not of the computation (test_cast_FLOAT_to_BFLOAT16's
             * data truncates, npukit and ONNX Runtime round to nearest even) */
            double rt = exp->dtype == NPK_DT_BFLOAT16 ? 1.0 / 128 : exp->dtype == NPK_DT_FLOAT16 ? 1.0 / 1024 : 0;
            if (rt < ot_rtol) rt = ot_rtol;
            if (!(fabs(a - e) <= ot_atol + rt * fabs(e))) {
                snprintf(why, wl, "%s element %lld: got %.9g, expected %.9g (rtol %g, atol %g)", what, (long long)i, a, e,
                         rt, ot_atol);
                return 1;
            }
        } else if (ielem(got, i) != ielem(exp, i)) {
            snprintf(why, wl, "%s element %lld: got %lld, expected %lld (exact)", what, (long long)i,
                     (long long)ielem(got, i), (long long)ielem(exp, i));
            return 1;
        }
    }
    return 0;
}

/* T_PASS_RANDOM: passed with the outputs fed by a random operator compared by
 * the operator's contract (npk_graph_random_contract), not by value */
enum { T_PASS, T_FAIL, T_SKIP, T_PASS_RANDOM };

/* libonnx-testdata's data/real: a directory with only data.json naming the
 * model's download URL. Returns 1 (with the reason) for such a directory. */
static int download_only(const char *dir, char *why, size_t wl) {
    char p[4096];
    (void)PJOIN(p, "%s/model.onnx", dir);
    if (is_file(p)) return 0;
    (void)PJOIN(p, "%s/data.json", dir);
    if (!is_file(p)) return 0;
    json_error_t e;
    json_t *j = json_load_file(p, 0, &e);
    const char *url = j ? json_string_value(json_object_get(j, "url")) : NULL;
    if (url)
        snprintf(why, wl, "no model.onnx: data.json only points to a download (%.900s); fetch and unpack it to test it", url);
    json_decref(j);
    return url != NULL;
}

static int run_test(const char *dir, const char *device, const char *port, int require_offload, char *why, size_t wl,
                    char *extra, size_t el) {
    char path[4096];
    npk_graph *g = NULL;
    extra[0] = 0;
    if (ot_max_bytes) {
        uint64_t tb = test_bytes(dir);
        if (tb > ot_max_bytes) {
            snprintf(why, wl, "the model and test data are %llu bytes, over the --max-bytes limit of %llu",
                     (unsigned long long)tb, (unsigned long long)ot_max_bytes);
            return T_FAIL;
        }
    }
    (void)PJOIN(path, "%s/model.onnx", dir);
    int rc = npk_graph_load_file(&g, path);
    if (rc == -NPK_EUNSUPPORTED) {
        snprintf(why, wl, "%s", npk_errmsg());
        return T_SKIP;
    }
    if (rc) {
        snprintf(why, wl, "%s", npk_errmsg());
        return T_FAIL;
    }
    if (npk_graph_check(g, NULL)) {
        char ops[512];
        size_t nops = npk_graph_unsupported_list(g, ops, sizeof ops);
        if (nops) snprintf(why, wl, "unsupported operator%s %s", nops > 1 ? "s" : "", ops);
        else snprintf(why, wl, "%s", npk_errmsg());
        npk_graph_free(g);
        return T_SKIP;
    }
    size_t nsets;
    char **sets = list_dir(dir, "test_data_set_", 1, &nsets);
    int result = T_PASS, by_contract = 0;
    size_t ndev = 0, nnodes = 0;
    uint64_t case_cycles = 0, case_macs = 0;
    npk_energy case_e = {0};
    npk_area case_area = {0};
    uint32_t case_nm = 0;
    int case_energy = 1;
    if (!nsets) {
        snprintf(why, wl, "no test_data_set_N directory");
        result = T_FAIL;
    }
    for (size_t s = 0; s < nsets && result == T_PASS; s++) {
        char sd[4096];
        (void)PJOIN(sd, "%s/%s", dir, sets[s]);
        size_t ni, no;
        char **in_names = list_dir(sd, "input_", 0, &ni), **out_names = list_dir(sd, "output_", 0, &no);
        if (in_names) qsort(in_names, ni, sizeof(char *), cmp_num);
        if (out_names) qsort(out_names, no, sizeof(char *), cmp_num);
        /* expected outputs are output_0.pb, output_1.pb, ... without gaps */
        for (size_t k = 0; k <= no && result == T_PASS; k++) {
            char want[32];
            snprintf(want, sizeof want, "output_%zu.pb", k);
            if (k == no ? (no == 0) : strcmp(out_names[k], want)) {
                snprintf(why, wl, "%s: %s is missing (the expected outputs of the test data set)", sets[s], want);
                result = T_FAIL;
            }
        }
        npk_tensor *ins = calloc(ni + 1, sizeof(npk_tensor)), *exp = calloc(no + 1, sizeof(npk_tensor)), *outs = NULL;
        size_t n_outs = 0;
        npk_run_report rep;
        memset(&rep, 0, sizeof rep);
        for (size_t k = 0; k < ni && result == T_PASS; k++) {
            (void)PJOIN(path, "%s/%s", sd, in_names[k]);
            /* the graph input's declared kind says which message the file holds */
            int kind = k < npk_graph_n_inputs(g) ? npk_graph_input(g, k)->kind : NPK_KIND_TENSOR;
            if ((rc = npk_value_load_pb_file(&ins[k], path, kind))) {
                snprintf(why, wl, "%s", npk_errmsg());
                result = rc == -NPK_EUNSUPPORTED ? T_SKIP : T_FAIL;
                break;
            }
            if (k < npk_graph_n_inputs(g)) bf16_bits(&ins[k], npk_graph_input(g, k));
            /* bind by position (the ONNX test convention) */
            free(ins[k].name);
            ins[k].name = k < npk_graph_n_inputs(g) ? strdup(npk_graph_input(g, k)->name) : NULL;
        }
        for (size_t k = 0; k < no && result == T_PASS; k++) {
            (void)PJOIN(path, "%s/%s", sd, out_names[k]);
            int kind = k < npk_graph_n_outputs(g) ? npk_graph_output(g, k)->kind : NPK_KIND_TENSOR;
            if ((rc = npk_value_load_pb_file(&exp[k], path, kind))) {
                snprintf(why, wl, "%s", npk_errmsg());
                result = rc == -NPK_EUNSUPPORTED ? T_SKIP : T_FAIL;
            } else if (k < npk_graph_n_outputs(g)) {
                bf16_bits(&exp[k], npk_graph_output(g, k));
            }
        }
        if (result == T_PASS) {
            /* declared dimensions are not enforced, as ONNX's runner binds test data
             * (test_castlike_*: the model declares like as [3,4], the data is [1]) */
            npk_run_opts o = {.device = device, .port = port, .dev_opts = ot_dev_opts, .golden = ot_golden, .loose_dims = 1,
                              .qdq = ot_qdq, .trace = ot_trace};
            npk_trace_set_offset(ot_trace, ot_trace_at);
            rc = npk_graph_run(g, &o, ins, ni < npk_graph_n_inputs(g) ? ni : npk_graph_n_inputs(g), &outs, &n_outs, &rep);
            trace_case(dir, sets[s], rep.device_cycles);
            if (rc) {
                /* a feature npukit refuses by design (float16 tensors, random draws) skips; any other error fails */
                snprintf(why, wl, "%s: %s", sets[s], npk_errmsg());
                result = rc == -NPK_EUNSUPPORTED ? T_SKIP : T_FAIL;
            } else if (n_outs != no) {
                snprintf(why, wl, "%s: %zu outputs, expected %zu", sets[s], n_outs, no);
                result = T_FAIL;
            } else {
                for (size_t k = 0; k < no && result == T_PASS; k++) {
                    char what[32];
                    snprintf(what, sizeof what, "output %zu", k);
                    /* numpy drew the expected data of a random operator: its contract is checked instead */
                    int rc2 = npk_graph_random_contract(g, k, ins, ni, &outs[k], &exp[k], why, wl);
                    if (rc2 >= 0) by_contract = 1;
                    if (rc2 > 0 || (rc2 < 0 && compare(&outs[k], &exp[k], what, why, wl, 0))) result = T_FAIL;
                }
                /* integer products a device could run that stayed on the CPU, all named */
                size_t stuck = 0;
                if (rep.has_energy) npk_energy_add(&case_e, &rep.energy), case_area = rep.area, case_nm = rep.tech_nm;
                else case_energy = 0;
                for (size_t k = 0; k < rep.n_nodes; k++) {
                    case_cycles += rep.nodes[k].place == NPK_PLACE_DEVICE ? rep.nodes[k].cycles : 0;
                    case_macs += rep.nodes[k].place == NPK_PLACE_DEVICE ? rep.nodes[k].macs : 0;
                    nnodes++;
                    if (rep.nodes[k].place != 0) ndev++;
                    if (require_offload && result == T_PASS && rep.nodes[k].place == NPK_PLACE_CPU &&
                        rep.nodes[k].int_product && !rep.nodes[k].offload_limit)
                        stuck++;
                }
                if (stuck) {
                    name_stuck(&rep, stuck, why, wl);
                    result = T_FAIL;
                }
            }
        }
        for (size_t k = 0; k < ni; k++) npk_tensor_free(&ins[k]);
        for (size_t k = 0; k < no; k++) npk_tensor_free(&exp[k]);
        for (size_t k = 0; k < n_outs; k++) npk_tensor_free(&outs[k]);
        free(ins);
        free(exp);
        free(outs);
        npk_run_report_fini(&rep);
        free_list(in_names, ni);
        free_list(out_names, no);
    }
    if (strcmp(device, "cpu") && nnodes) snprintf(extra, el, " [%zu of %zu node runs on %s]", ndev, nnodes, device);
    if (ot_report && result == T_PASS) {
        report_case(dir, device, case_cycles, case_macs, case_energy, npk_energy_total_pj(&case_e));
        sum_energy(case_energy, &case_e, &case_area, case_nm);
    }
    free_list(sets, nsets);
    npk_graph_free(g);
    return result == T_PASS && by_contract ? T_PASS_RANDOM : result;
}

/* The report and the trace, checked and created before any test runs: 0, or the exit code
 * after the message. */
static int open_outputs(const ot_args *A) {
    const char *badopt = A->json && cli_check_output(A->json)                                 ? "--report-json"
                         : A->plot && cli_check_output(A->plot)                               ? "--plot"
                         : A->trace && cli_check_output(A->trace)                             ? "--trace"
                         : A->report && strcmp(A->report, "-") && cli_check_output(A->report) ? "--report"
                                                                                              : NULL;
    if (!badopt && (A->plot || A->trace) && !strcmp(A->device, "cpu"))
        return cli_usage_error("onnx-test", "%s draws device cycles: give --device", A->plot ? "--plot" : "--trace");
    if (badopt) return cli_fail("onnx-test: %s: %s", badopt, npk_errmsg());
    if (A->report || A->json || A->plot) {
        const npk_dev_class *c = npk_dev_class_find(A->device);
        ot_report = npk_report_new(strcmp(A->device, "cpu") ? A->device : "cpu", c ? c->hz : 0, 0);
        if (!ot_report) return cli_fail("onnx-test: out of memory");
        npk_report_name(ot_report, "npu onnx-test");
    }
    if (A->trace && !(ot_trace = npk_trace_new())) return cli_fail("onnx-test: out of memory");
    return 0;
}

/* Write the report (with the tests' energy when every one had it) and the trace. */
static int close_outputs(const ot_args *A) {
    int rrc = 0;
    if (ot_report) {
        if (ot_has_energy > 0) npk_report_energy(ot_report, &ot_energy, &ot_area, ot_tech_nm);
        if (A->report && cli_emit_report("onnx-test", A->report, ot_report)) rrc = 1;
        if (A->json && cli_write_report(ot_report, A->json)) rrc = cli_fail("onnx-test: %s", npk_errmsg());
        if (!rrc && A->plot && cli_plot_report(ot_report, "npu onnx-test", A->plot)) rrc = 1;
        npk_report_free(ot_report);
        ot_report = NULL;
    }
    if (ot_trace) {
        if (cli_write_trace(ot_trace, A->trace)) rrc = cli_fail("onnx-test: --trace: %s", npk_errmsg());
        npk_trace_free(ot_trace);
        ot_trace = NULL;
    }
    return rrc;
}

int cmd_onnx_test(int argc, char **argv) {
    ot_args A;
    int early = cli_start("onnx-test", argc, argv, ot_help, ot_opts, sizeof ot_opts / sizeof ot_opts[0], &A, sizeof A);
    if (early >= 0) return early;
    const char **dirs = calloc((size_t)argc + 1, sizeof(char *));
    char *dev_opts = NULL;
    int nd = 0;
    if (!dirs) return cli_fail("out of memory");
    int urc = cli_parse("onnx-test", ot_opts, sizeof ot_opts / sizeof ot_opts[0], &A, argc, argv, dirs, argc, &nd);
    if (!urc) cli_threads(A.threads);
    if (!urc) urc = cli_device("onnx-test", A.device, 1, &A.dev_opts, &dev_opts);
    if (!urc && npk_qdq_mode_parse(A.qdq) < 0) urc = cli_usage_error("onnx-test", "--qdq '%s': expected fused or ort", A.qdq);
    if (!urc && !nd) urc = cli_usage_error("onnx-test", "no test directory given");
    npk_strlist_free(&A.dev_opts);
    if (urc) {
        free(dirs);
        return urc;
    }
    const char *device = A.device, *port = A.port;
    int require = A.require, quiet = A.quiet;
    int orc = open_outputs(&A);
    if (orc) {
        free(dirs);
        free(dev_opts);
        return orc;
    }
    ot_dev_opts = dev_opts;
    ot_golden = A.golden;
    ot_qdq = npk_qdq_mode_parse(A.qdq);
    ot_rtol = A.rtol;
    ot_max_bytes = A.max_bytes;
    ot_atol = A.atol;
    /* Every argument must be a test directory (or a directory of them) before anything runs. */
    for (int d = 0; d < nd; d++) {
        if (!is_dir(dirs[d])) {
            int rc = cli_fail("onnx-test: '%s' is not a directory (expected an ONNX backend test directory)", dirs[d]);
            free(dirs);
            free(dev_opts);
            return rc;
        }
    }
    /* A bad --port is one usage error, not a FAIL per test. */
    if (port) {
        npk_port *pp = NULL;
        if (!strcmp(device, "cpu")) {
            free(dirs);
            return cli_usage_error("onnx-test", "--port needs a device (--device v0|shell|e1); cpu runs in-process");
        }
        if (npk_port_open(&pp, port, device, NULL)) {
            char msg[1200];
            snprintf(msg, sizeof msg, "%s", npk_errmsg());
            free(dirs);
            return cli_usage_error("onnx-test", "--port '%s': %s", port, msg);
        }
        npk_port_close(pp);
    }
    int pass = 0, fail = 0, skip = 0, pass_random = 0;
    char why0[1200];
    for (int d = 0; d < nd; d++) {
        char p[4096];
        (void)PJOIN(p, "%s/model.onnx", dirs[d]);
        size_t nt = 0;
        char **tests = NULL;
        int single = is_file(p);
        if (!single && download_only(dirs[d], why0, sizeof why0)) {
            skip++;
            if (!quiet) printf("SKIP %s: %s\n", dirs[d], why0);
            continue;
        }
        if (!single) {
            if (!is_dir(dirs[d])) {
                printf("FAIL %s: not a directory\n", dirs[d]);
                fail++;
                continue;
            }
            tests = list_dir(dirs[d], "", 1, &nt);
            if (!nt) {
                printf("FAIL %s: no model.onnx and no test directories\n", dirs[d]);
                fail++;
            }
        }
        for (size_t t = 0; t < (single ? 1 : nt); t++) {
            char td[4096], why[1200], extra[96];
            if (single) (void)PJOIN(td, "%s", dirs[d]);
            else (void)PJOIN(td, "%s/%s", dirs[d], tests[t]);
            (void)PJOIN(p, "%s/model.onnx", td);
            why[0] = 0;
            if (!single && !is_file(p)) {
                if (download_only(td, why, sizeof why)) {
                    skip++;
                    if (!quiet) printf("SKIP %s: %s\n", tests[t], why);
                }
                continue;
            }
            if (nt > 1) cli_progress("onnx-test: tests", t, nt);
            int r = run_test(td, device, port, require, why, sizeof why, extra, sizeof extra);
            const char *name = single ? td : tests[t];
            cli_progress_end();
            if (r == T_PASS || r == T_PASS_RANDOM) {
                pass++;
                pass_random += r == T_PASS_RANDOM;
                if (!quiet) printf("PASS %s%s%s\n", name, r == T_PASS_RANDOM ? " (random: contract checked)" : "", extra);
            } else if (r == T_FAIL) {
                fail++;
                printf("FAIL %s: %s%s\n", name, why, extra);
            } else {
                skip++;
                if (!quiet) printf("SKIP %s: %s\n", name, why);
            }
            fflush(stdout);
        }
        free_list(tests, nt);
    }
    printf("%d passed", pass);
    if (pass_random) printf(" (%d random: contract checked)", pass_random);
    printf(", %d failed", fail);
    if (skip) printf(", %d skipped", skip);
    printf("\n");
    int rrc = close_outputs(&A);
    free(dirs);
    free(dev_opts);
    ot_dev_opts = NULL;
    return fail || rrc ? 1 : 0;
}
