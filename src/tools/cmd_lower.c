// SPDX-License-Identifier: MIT
/* npu lower: run a JSON lowering record or module on the e1 NPU. */
#include "cli.h"
#include "npukit/e1.h"
#include "npukit/e1_lower.h"
#include "npukit/e1_shlo.h"
#include "npukit/report.h"
#include "npukit/sim.h"
#include "npukit/trace.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct lower_args {
    const char *device, *port, *trace, *json, *report, *plot;
    npk_strlist tensors, dev_opts;
    int check, no_batching, no_golden;
    uint64_t max_work;
} lower_args;
#define LSTR(n, f, def, m, h) CLI_STR(n, NULL, lower_args, f, def, m, h)
#define LFLAG(n, f, h) CLI_FLAG(n, NULL, lower_args, f, h)
static const npk_opt lower_opts[] = {
    LSTR("--device", device, NULL, "D", "the device (required; the devices with lowerings are listed below)"),
    CLI_LIST("--tensors", NULL, lower_args, tensors, "FILE",
      "tensor data for an e1-format module: {OP: {FIELD: data}} or {OP.FIELD: data},\n"
      "JSON or YAML (repeatable, at most 16; later files replace earlier bindings)"),
    LSTR("--port", port, "sim", "SPEC", "port to the device (npu ports lists them)"),
    LSTR("--trace", trace, NULL, "FILE.json",
         "write a Chrome/Perfetto trace: the device's engines (sim port only)\n"
         "and the host's lowering steps on the simulated clock"),
    CLI_DEVICE_OPT(lower_args, dev_opts),
    CLI_REPORT(lower_args, report,
          "print the performance report on stdout after the JSON, or in FILE\n"
          "(--report=FILE keeps stdout pure JSON):\n"
          "per record cycles and MACs, utilization, TOPS, bytes per memory,\n"
          "direct commands, descriptors, ring batches, MMIO accesses"),
    LSTR("--report-json", json, NULL, "FILE", "write the performance report as JSON to FILE"),
    LSTR("--plot", plot, NULL, "FILE.png|.svg", "draw the device operators' cycles (bars) and utilization with gnuplot"),
    LFLAG("--no-batching", no_batching, "one MMIO start per GEMM tile instead of descriptor-ring batches"),
    LFLAG("--no-golden", no_golden, "leave the golden tensors out of the JSON (they are still checked)"),
    LFLAG("--check", check, "validate only (no device): exit 0 when the file would run"),
    CLI_NUM("--max-work", NULL, U64, lower_args, max_work, "8589934592", 0, 0, "N",
      "refuse modules estimated above N operations (matmul MACs; the default\n"
      "is a 2048^3 matmul; 0 = no limit). A progress line per record is shown\n" "on a terminal."),
};
#define LOWER_NOPTS (sizeof lower_opts / sizeof lower_opts[0])

static void help(void) {
    printf("usage: npu lower --device e1 FILE [--device-opt K=V] [--tensors FILE]... [--port SPEC] [--trace FILE.json]\n"
           "                 [--report[=FILE]] [--report-json FILE] [--plot FILE.png] [--no-batching] [--no-golden] [--check] [--max-work N]\n\n"
           "Runs a JSON lowering record (one operator) or module (an ordered list of operators with\n"
           "named tensors) on the e1 NPU: every multiply-accumulate runs on the device, the host\n"
           "only stages, pads, requantizes and divides. The whole file is validated first (names,\n"
           "ops, precisions, fields, shapes, value ranges and the CPU golden); nothing reaches the\n"
           "device when it is wrong. Prints one JSON object on stdout: per record the outputs, the\n"
           "golden, whether they match and the evidence (tiles, dispatches per opcode, ring batches,\n"
           "padding, host steps, cpu_fallback), plus the dispatch order, simulated cycles, MMIO\n"
           "accesses and the device counters. The record format is in docs/e1-lowering.md.\n\n"
           "FILE may also be a module in the e1 runtime's format (schema eliza.e1_npu_stablehlo_subset.v1,\n"
           "YAML or JSON; docs/e1-compile.md): its validation codes are printed on stderr, supported\n"
           "ops run on the NPU through the lowerings and CPU-fallback entries on the CPU reference.\n"
           "Tensor data binds by name (OP.FIELD) from the module's 'tensors' or from --tensors files.\n\n"
           "options:\n");
    cli_help_opts(lower_opts, LOWER_NOPTS);
    printf("\ndevices with lowerings: %s\n", npk_e1_class.name);
}

int cmd_lower(int argc, char **argv) {
    lower_args A;
    int early = cli_start("lower", argc, argv, help, lower_opts, LOWER_NOPTS, &A, sizeof A);
    if (early >= 0) return early;
    const char *file = NULL;
    char *no_opts = NULL;
    int urc = cli_parse("lower", lower_opts, LOWER_NOPTS, &A, argc, argv, &file, 1, NULL);
    if (!urc && !A.device) urc = cli_usage_error("lower", "--device is required (--device %s)", npk_e1_class.name);
    /* the device is checked against the device table before any file is read */
    if (!urc) urc = cli_device("lower", A.device, 0, &A.dev_opts, &no_opts);
    if (!urc && strcmp(A.device, npk_e1_class.name))
        urc = cli_usage_error("lower", "device '%s' has no lowerings (devices with lowerings: %s)", A.device,
                              npk_e1_class.name);
    const char *tensors[16];
    size_t ntensors;
    int trc = cli_take_list("lower", "--tensors", &A.tensors, tensors, 16, &ntensors);
    npk_strlist_free(&A.dev_opts);
    char dev_opts[4096] = ""; /* the checked --device-opt values, for the port */
    if (!urc && !trc && no_opts && (size_t)snprintf(dev_opts, sizeof dev_opts, "%s", no_opts) >= sizeof dev_opts)
        urc = cli_usage_error("lower", "--device-opt: the options are too long");
    free(no_opts);
    if (urc || trc) return urc ? urc : trc;
    const char *port_spec = A.port, *trace_path = A.trace, *json_path = A.json;
    const char *report = A.report;
    int check = A.check;
    npk_lower_module_opts opts = {.batching = !A.no_batching, .include_golden = !A.no_golden, .max_work = A.max_work,
                                  .progress = cli_progress_cb, .progress_ctx = "lower: records"};
    if (json_path && cli_check_output(json_path)) return cli_fail("lower: --report-json: %s", npk_errmsg());
    if (trace_path && cli_check_output(trace_path)) return cli_fail("lower: --trace: %s", npk_errmsg());
    if (report && strcmp(report, "-") && cli_check_output(report)) return cli_fail("lower: --report: %s", npk_errmsg());
    if (A.plot && cli_check_output(A.plot)) return cli_fail("lower: --plot: %s", npk_errmsg());
    if (!file) return cli_usage_error("lower", "no input FILE.json");
    uint8_t *data;
    size_t len;
    if (cli_read_file(file, &data, &len)) return cli_fail("lower: %s", npk_errmsg());
    char *text = malloc(len + 1);
    if (!text) {
        free(data);
        return cli_fail("lower: out of memory");
    }
    memcpy(text, data, len);
    text[len] = 0;
    free(data);
    if (strlen(text) != len) {
        free(text);
        return cli_fail("lower: %s: the file contains a NUL byte (not JSON text)", file);
    }
    if (npk_shlo_is_module(text)) {
        char *conv = NULL;
        if (cli_shlo_lower_module(file, text, tensors, ntensors, &conv)) {
            free(text);
            return 1;
        }
        free(text);
        text = conv;
    } else if (ntensors) {
        free(text);
        return cli_usage_error("lower", "--tensors applies to e1-format modules (schema %s) only", NPK_SHLO_SCHEMA);
    }
    if (check) {
        int rc = npk_lower_module_check(text);
        free(text);
        if (rc) return cli_fail("lower: %s: %s", file, npk_errmsg());
        printf("{\"valid\":true}\n");
        return 0;
    }
    /* validate before opening the device, so nothing reaches it when the file is wrong */
    if (npk_lower_module_check(text)) {
        cli_fail("lower: %s: %s", file, npk_errmsg());
        free(text);
        return 1;
    }
    npk_port *port;
    if (npk_port_open(&port, port_spec, npk_e1_class.name, dev_opts[0] ? dev_opts : NULL)) {
        free(text);
        return cli_fail("lower: %s", npk_errmsg());
    }
    int ret = 1;
    npk_trace *trace = NULL;
    npk_e1 *e = NULL;
    char *result = NULL;
    npk_report *rep = NULL;
    if (trace_path) {
        if (!npk_port_sim(port)) {
            cli_fail("lower: --trace needs the in-process model (--port sim)");
            goto out;
        }
        trace = npk_trace_new();
        if (!trace) {
            cli_fail("lower: out of memory");
            goto out;
        }
        npk_port_set_trace(port, trace);
    }
    if (report || json_path || A.plot) {
        /* the e1 GEMM engine does one MAC per cycle */
        rep = npk_report_new(npk_e1_class.name, npk_port_hz(port), 1);
        if (!rep) {
            cli_fail("lower: out of memory");
            goto out;
        }
        npk_report_name(rep, file);
        opts.report = rep;
    }
    if (npk_e1_open(&e, port)) {
        cli_fail("lower: %s", npk_errmsg());
        goto out;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int lrc = npk_lower_module_run(e, text, &opts, &result);
    cli_progress_end();
    if (lrc) {
        cli_fail("lower: %s: %s", file, npk_errmsg());
        goto out;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* host wall time of the run (simulation and golden checks), as npu run and npu llm report it */
    if (rep) npk_report_host_time(rep, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    fputs(result, stdout);
    fputc('\n', stdout);
    ret = strstr(result, "\"all_match\":true") ? 0 : 1;
    if (ret) cli_fail("lower: %s: a device result differs from the golden", file);
    if (report && cli_emit_report("lower", report, rep)) ret = 1;
    if (json_path && cli_write_report(rep, json_path)) {
        cli_fail("lower: %s", npk_errmsg());
        ret = 1;
    }
    if (!ret && A.plot && cli_plot_report(rep, "npu lower", A.plot)) ret = 1;
    if (trace) {
        npk_port_set_trace(port, NULL);
        if (cli_write_trace(trace, trace_path)) {
            cli_fail("lower: %s", npk_errmsg());
            ret = 1;
        }
    }
out:
    free(result);
    if (e) npk_e1_close(e);
    if (trace) {
        npk_port_set_trace(port, NULL);
        npk_trace_free(trace);
    }
    npk_report_free(rep);
    npk_port_close(port);
    free(text);
    return ret;
}
