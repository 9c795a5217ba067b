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

static void help(void) {
    printf("usage: npu lower --device e1 FILE [--tensors FILE]... [--port SPEC] [--trace FILE.json] [--report]\n"
           "                 [--report-json FILE] [--no-batching] [--no-golden] [--check] [--max-work N]\n\n"
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
           "options:\n"
           "  --device e1       the device (only e1 has lowerings)\n"
           "  --tensors FILE    tensor data for an e1-format module: {OP: {FIELD: data}} or {OP.FIELD: data},\n"
           "                    JSON or YAML (repeatable; later files replace earlier bindings)\n"
           "  --port SPEC       sim (default, in-process model), qtest:SOCKET or qtest-spawn:NPU\n"
           "  --trace FILE      write a Chrome/Perfetto trace: the device's engines (sim port only)\n"
           "                    and the host's lowering steps on the simulated clock\n"
           "  --report          print the performance report on stderr (stdout keeps the JSON):\n"
           "                    per record cycles and MACs, utilization, TOPS, bytes per memory,\n"
           "                    direct commands, descriptors, ring batches, MMIO accesses\n"
           "  --report-json F   write the performance report as JSON to F\n"
           "  --no-batching     one MMIO start per GEMM tile instead of descriptor-ring batches\n"
           "  --no-golden       leave the golden tensors out of the JSON (they are still checked)\n"
           "  --check           validate only (no device): exit 0 when the file would run\n"
           "  --max-work N      refuse modules estimated above N operations (matmul MACs; default\n"
           "                    8589934592 = a 2048^3 matmul; 0 = no limit). A progress line per\n"
           "                    record is shown on a terminal.\n");
}

int cmd_lower(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        help();
        return 0;
    }
    const char *device = NULL, *port_spec = "sim", *trace_path = NULL, *file = NULL, *json_path = NULL;
    int report = 0, check = 0;
    const char *tensors[16];
    size_t ntensors = 0;
    npk_lower_module_opts opts = {.batching = 1, .include_golden = 1, .max_work = NPK_LOWER_DEFAULT_MAX_WORK,
                                  .progress = cli_progress_cb, .progress_ctx = "lower: records"};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
        else if (!strcmp(argv[i], "--port") && i + 1 < argc) port_spec = argv[++i];
        else if (!strcmp(argv[i], "--trace") && i + 1 < argc) trace_path = argv[++i];
        else if (!strcmp(argv[i], "--report")) report = 1;
        else if (!strcmp(argv[i], "--tensors") && i + 1 < argc) {
            if (ntensors == sizeof tensors / sizeof tensors[0]) return cli_usage_error("lower", "too many --tensors files");
            tensors[ntensors++] = argv[++i];
        }
        else if (!strcmp(argv[i], "--report-json") && i + 1 < argc) json_path = argv[++i];
        else if (!strcmp(argv[i], "--check")) check = 1;
        else if (!strcmp(argv[i], "--max-work") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &opts.max_work))
                return cli_usage_error("lower", "--max-work needs a number of operations (0 = no limit), got '%s'",
                                       argv[i]);
        }
        else if (!strcmp(argv[i], "--no-batching")) opts.batching = 0;
        else if (!strcmp(argv[i], "--no-golden")) opts.include_golden = 0;
        else if (argv[i][0] == '-' && argv[i][1]) return cli_usage_error("lower", "unknown or incomplete option '%s'", argv[i]);
        else if (!file) file = argv[i];
        else return cli_usage_error("lower", "more than one input file ('%s')", argv[i]);
    }
    if (!device) return cli_usage_error("lower", "--device is required (--device e1)");
    if (strcmp(device, "e1")) return cli_fail("lower: device '%s' has no lowerings (only e1)", device);
    if (json_path && cli_check_output(json_path)) return cli_fail("lower: --report-json: %s", npk_errmsg());
    if (trace_path && cli_check_output(trace_path)) return cli_fail("lower: --trace: %s", npk_errmsg());
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
    if (npk_port_open(&port, port_spec, "e1", NULL)) {
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
    if (report || json_path) {
        /* the e1 GEMM engine does one MAC per cycle */
        rep = npk_report_new("e1", npk_port_hz(port), 1);
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
    if (report) npk_report_print(rep, stderr);
    if (json_path && cli_write_report(rep, json_path)) {
        cli_fail("lower: %s", npk_errmsg());
        ret = 1;
    }
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
