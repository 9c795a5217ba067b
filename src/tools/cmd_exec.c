// SPDX-License-Identifier: MIT
/* npu exec: check a compiled package as the staging helpers do, then replay
 * it on a device and print the outputs. */
#include "cli.h"
#include "npukit/e1.h"
#include "npukit/e1_shlo.h"
#include "npukit/npkb.h"
#include "npukit/sim.h"
#include "npukit/trace.h"
#include "npukit/report.h"

#include <stdlib.h>
#include <string.h>

typedef struct exec_args {
    const char *port, *report, *json, *trace, *plot;
    npk_strlist tensors;
    int check, no_golden;
} exec_args;
static const npk_opt exec_opts[] = {
    CLI_STR("--port", NULL, exec_args, port, "sim", "SPEC", "port to the device (npu ports lists them)"),
    CLI_LIST("--tensors", NULL, exec_args, tensors, "FILE",
      "tensor data to bind (replaces the package's): {OP: {FIELD: data}}\n(repeatable, at most 16)"),
    CLI_FLAG("--check", NULL, exec_args, check, "check the package only (no device)"),
    CLI_FLAG("--no-golden", NULL, exec_args, no_golden,
      "leave the golden tensors out of the JSON (they are still compared)"),
    CLI_REPORT(exec_args, report,
      "print the performance report (as npu lower's) on stdout after the\n"
      "JSON, or in FILE"),
    CLI_STR("--report-json", NULL, exec_args, json, NULL, "FILE", "write the performance report as JSON to FILE"),
    CLI_STR("--trace", NULL, exec_args, trace, NULL, "FILE.json",
      "write a Chrome/Perfetto trace of the replay (sim port only)"),
    CLI_STR("--plot", NULL, exec_args, plot, NULL, "FILE.png|.svg",
      "draw the device operators' cycles (bars) and utilization with gnuplot"),
};
#define EXEC_NOPTS (sizeof exec_opts / sizeof exec_opts[0])

static void help(void) {
    printf("usage: npu exec PACKAGE.json [--port SPEC] [--tensors FILE]... [--check] [--no-golden]\n"
           "                [--report[=FILE]] [--report-json FILE] [--trace FILE.json] [--plot FILE.png]\n"
           "       npu exec MODEL.npkb [--input NAME=FILE.pb]... [--port SPEC] [npu run's options]\n\n"
           "A compiled model (.npkb from 'npu compile --device v0|shell MODEL.onnx', docs/npkb.md) runs\n"
           "without the ONNX file: its stored guest-memory plan, weights and pre-encoded descriptor batches\n"
           "(v0 descriptors, shell ring bytes) are replayed on the port; its outputs and modeled cycles\n"
           "equal 'npu run' on the ONNX model, and the run's partition is checked against the compiled plan.\n\n"
           "Replays a package written by 'npu compile --device e1'. It is checked first as the e1 staging\n"
           "helpers do (base/head/tail arithmetic, the ring window, word0 valid_owner and\n"
           "stream_to_scratch, stream bounds, GEMM-only aligned writebacks, preambles against the images,\n"
           "the required runtime steps, and the report against the module); nothing reaches the device\n"
           "when it is wrong. Then every ready execution batch populates the tensor arena, writes its GEMM\n"
           "preamble and descriptor memory, submits through DESC_BASE/HEAD/TAIL, CMD_PARAM and\n"
           "CTRL_STATUS and polls DESC_STATUS; the other supported ops run through the lowerings and\n"
           "CPU-fallback entries on the CPU reference. Prints the 'npu lower' JSON (outputs equal 'npu\n"
           "lower' on the same module bit for bit) with a 'replay' section. See docs/e1-compile.md.\n\n"
           "options (a package; a .npkb model takes 'npu run --help''s):\n");
    cli_help_opts(exec_opts, EXEC_NOPTS);
}

int cmd_exec(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        help();
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        size_t l = strlen(argv[i]);
        /* a compiled model takes npu run's options: a .npkb file, a file named *.npkb (run says
         * when it is missing) or run's --input (never a package's) */
        if (argv[i][0] != '-' && (i == 1 || strcmp(argv[i - 1], "--input")) &&
            (cli_is_npkb(argv[i]) || (l > 5 && !strcmp(argv[i] + l - 5, ".npkb"))))
            return cmd_run(argc, argv);
        if (!strcmp(argv[i], "--input") || !strncmp(argv[i], "--input=", 8)) return cmd_run(argc, argv);
    }
    exec_args A;
    memset(&A, 0, sizeof A);
    npk_opt_defaults(exec_opts, EXEC_NOPTS, &A);
    const char *file = NULL;
    int urc = cli_parse("exec", exec_opts, EXEC_NOPTS, &A, argc, argv, &file, 1, NULL);
    const char *tfiles[16];
    size_t nt;
    int trc = cli_take_list("exec", "--tensors", &A.tensors, tfiles, 16, &nt);
    if (urc || trc) return urc ? urc : trc;
    const char *port_spec = A.port;
    int check = A.check;
    npk_lower_module_opts opts = {.batching = 1, .include_golden = !A.no_golden};
    if (!file) return cli_usage_error("exec", "no PACKAGE");
    const char *badopt = A.json && cli_check_output(A.json)                              ? "--report-json"
                         : A.trace && cli_check_output(A.trace)                          ? "--trace"
                         : A.plot && cli_check_output(A.plot)                            ? "--plot"
                         : A.report && strcmp(A.report, "-") && cli_check_output(A.report) ? "--report"
                                                                                          : NULL;
    if (badopt) return cli_fail("exec: %s: %s", badopt, npk_errmsg());
    char *text;
    if (cli_read_text(file, &text)) return cli_fail("exec: %s", npk_errmsg());
    if (!npk_e1_is_package(text)) {
        free(text);
        return cli_fail("exec: %s: not a compiled package (schema %s)", file, NPK_E1_PACKAGE_SCHEMA);
    }
    char *tt[16] = {0};
    int ret = 1;
    npk_port *port = NULL;
    npk_e1 *e = NULL;
    char *result = NULL;
    npk_report *rep = NULL;
    npk_trace *trace = NULL;
    for (size_t i = 0; i < nt; i++)
        if (cli_read_text(tfiles[i], &tt[i])) {
            cli_fail("exec: %s", npk_errmsg());
            goto out;
        }
    if (npk_e1_package_check(text)) {
        cli_fail("exec: %s: %s", file, npk_errmsg());
        goto out;
    }
    if (check) {
        printf("{\"valid\":true}\n");
        ret = 0;
        goto out;
    }
    if (npk_port_open(&port, port_spec, npk_e1_class.name, NULL) || npk_e1_open(&e, port)) {
        cli_fail("exec: %s", npk_errmsg());
        goto out;
    }
    if (A.trace) {
        if (!npk_port_sim(port)) {
            cli_fail("exec: --trace needs the in-process model (--port sim)");
            goto out;
        }
        if (!(trace = npk_trace_new())) {
            cli_fail("exec: out of memory");
            goto out;
        }
        npk_port_set_trace(port, trace);
    }
    if (A.report || A.json || A.plot) {
        if (!(rep = npk_report_new(npk_e1_class.name, npk_port_hz(port), 1))) { /* one MAC per cycle, as lower */
            cli_fail("exec: out of memory");
            goto out;
        }
        npk_report_name(rep, file);
        opts.report = rep;
    }
    if (npk_e1_package_exec(e, text, (const char *const *)tt, nt, &opts, &result)) {
        cli_fail("exec: %s: %s", file, npk_errmsg());
        goto out;
    }
    fputs(result, stdout);
    fputc('\n', stdout);
    ret = strstr(result, "\"all_match\":true") ? 0 : 1;
    if (ret) cli_fail("exec: %s: a device result differs from the golden", file);
    if (A.report && cli_emit_report("exec", A.report, rep)) ret = 1;
    if (A.json && cli_write_report(rep, A.json)) ret = cli_fail("exec: %s", npk_errmsg());
    if (!ret && A.plot && cli_plot_report(rep, "npu exec", A.plot)) ret = 1;
    if (trace) {
        npk_port_set_trace(port, NULL);
        if (cli_write_trace(trace, A.trace)) ret = cli_fail("exec: %s", npk_errmsg());
    }
out:
    if (trace && port) npk_port_set_trace(port, NULL);
    npk_trace_free(trace);
    npk_report_free(rep);
    free(result);
    if (e) npk_e1_close(e);
    if (port) npk_port_close(port);
    for (size_t i = 0; i < nt; i++) free(tt[i]);
    free(text);
    return ret;
}
