// SPDX-License-Identifier: MIT
/* npu demo: an int8 GEMM tile and a two-descriptor ring on the e1 device,
 * checked against the CPU reference, with the device's counters. */
#include "cli.h"
#include "npukit/e1.h"
#include "npukit/report.h"
#include "npukit/sim.h"
#include "npukit/trace.h"
#include "ops/ref_e1.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct demo_args {
    const char *port, *trace, *json, *report, *plot;
    npk_strlist dev_opts;
} demo_args;
static const npk_opt demo_opts[] = {
    CLI_STR("--port", NULL, demo_args, port, "sim", "SPEC", "port to the device (npu ports lists them)"),
    CLI_DEVICE_OPT(demo_args, dev_opts),
    CLI_REPORT(demo_args, report, "also print a performance summary (cycles, MACs, TOPS, MMIO) on stdout or in FILE"),
    CLI_STR("--report-json", NULL, demo_args, json, NULL, "FILE", "write the performance summary as JSON to FILE"),
    CLI_STR("--plot", NULL, demo_args, plot, NULL, "FILE.png|.svg",
      "draw the device operators' cycles (bars) and utilization with gnuplot"),
    CLI_STR("--trace", NULL, demo_args, trace, NULL, "FILE.json",
      "write a Chrome/Perfetto trace of the run (sim port only)"),
};

static void help(void) {
    printf("usage: npu demo [--device-opt K=V] [--port SPEC] [--report[=FILE]] [--report-json FILE] [--trace FILE.json]\n"
           "                [--plot FILE.png]\n\n"
           "Runs, on the e1 NPU, (1) a 2x3 by 3x2 int8 GEMM tile through the MMIO scratchpad and\n"
           "(2) a descriptor ring of two commands (a DOT4_S8 and a streamed GEMM_S8 with writeback\n"
           "to guest memory), compares every result with the CPU reference and prints the\n"
           "device's counters.\n\n"
           "options:\n");
    cli_help_opts(demo_opts, sizeof demo_opts / sizeof demo_opts[0]);
}

static void print_matrix(const char *name, const int32_t *v, unsigned m, unsigned n) {
    printf("  %s =", name);
    for (unsigned i = 0; i < m; i++) {
        printf(" [");
        for (unsigned j = 0; j < n; j++) printf("%s%" PRId32, j ? ", " : "", v[i * n + j]);
        printf("]");
    }
    printf("\n");
}

int cmd_demo(int argc, char **argv) {
    demo_args O;
    int early = cli_start("demo", argc, argv, help, demo_opts, sizeof demo_opts / sizeof demo_opts[0], &O, sizeof O);
    if (early >= 0) return early;
    int urc = cli_parse("demo", demo_opts, sizeof demo_opts / sizeof demo_opts[0], &O, argc, argv, NULL, 0, NULL);
    char *dev_opts = NULL;
    if (!urc) urc = cli_device("demo", npk_e1_class.name, 0, &O.dev_opts, &dev_opts);
    npk_strlist_free(&O.dev_opts);
    if (urc) return urc;
    const char *port_spec = O.port, *trace_path = O.trace, *json_path = O.json, *report = O.report;
    const char *badopt = json_path && cli_check_output(json_path)                      ? "--report-json"
                         : trace_path && cli_check_output(trace_path)                  ? "--trace"
                         : report && strcmp(report, "-") && cli_check_output(report) ? "--report"
                         : O.plot && cli_check_output(O.plot)                          ? "--plot"
                                                                                       : NULL;
    npk_port *port = NULL;
    if (badopt || npk_port_open(&port, port_spec, npk_e1_class.name, dev_opts)) {
        free(dev_opts);
        return badopt ? cli_fail("demo: %s: %s", badopt, npk_errmsg()) : cli_fail("demo: %s", npk_errmsg());
    }
    free(dev_opts);
    npk_trace *trace = NULL;
    if (trace_path) {
        if (!npk_port_sim(port)) {
            npk_port_close(port);
            return cli_fail("demo: --trace needs the in-process model (--port sim)");
        }
        trace = npk_trace_new();
        npk_port_set_trace(port, trace); /* device engines and host driver steps */
    }
    npk_e1 *e;
    int rc = 1;
    npk_report *rep = npk_report_new(npk_e1_class.name, npk_port_hz(port), 1);
    npk_report_name(rep, "npu demo");
    if (npk_e1_open(&e, port)) {
        cli_fail("demo: %s", npk_errmsg());
        goto out_port;
    }
    /* e1-rtl-notes.md worked example: A[2][3], B[3][2]. */
    static const int8_t A[6] = {-1, 2, 3, 4, 5, 6};   /* A[2][3] */
    static const int8_t B[6] = {7, 8, 9, 10, 11, 12}; /* B[3][2] */
    int32_t C[4], G[4];                               /* C[2][2] */
    printf("e1 NPU (%s port, %" PRIu64 " MHz)\n", npk_port_kind(port), npk_port_hz(port) / 1000000);
    printf("1. GEMM_S8 tile through the scratchpad: A[2][3] x B[3][2]\n");
    uint64_t t0 = npk_port_cycles(port);
    if (npk_e1_gemm_tile(e, 0, 2, 2, 3, A, B, C)) {
        cli_fail("demo: GEMM tile: %s", npk_errmsg());
        goto out;
    }
    npk_report_op(rep, "GEMM_S8 tile (MMIO)", 1, npk_port_cycles(port) - t0, 2 * 2 * 3);
    npk_ref_e1_matmul(A, B, G, 2, 2, 3);
    print_matrix("C", C, 2, 2);
    int ok1 = !memcmp(C, G, sizeof C);
    printf("  reference %s\n", ok1 ? "matches" : "DIFFERS");

    printf("2. descriptor ring: DOT4_S8, then GEMM_S8 streamed from guest memory with writeback\n");
    uint64_t in, outaddr;
    if (npk_port_alloc(port, 16, 16, &in) || npk_port_alloc(port, 16, 16, &outaddr)) {
        cli_fail("demo: %s", npk_errmsg());
        goto out;
    }
    /* Stream image: A (6 bytes) then B (6 bytes), padded to 16. */
    uint8_t img[16] = {0};
    memcpy(img, A, 6);
    memcpy(img + 6, B, 6);
    npk_port_mem_write(port, in, img, sizeof img);
    npk_e1_tilecfg cfg = {0};
    npk_e1_gemm_layout(0, 2, 2, 3, &cfg.gemm);
    npk_e1_desc ring[2] = {npk_e1_desc_scalar(E1_OP_DOT4_S8, 0x04030201u, 0xf807fa05u, 0xffffff00u),
                           npk_e1_desc_stream(E1_OP_GEMM_S8, in, 0, 16, outaddr)};
    npk_e1_result last;
    t0 = npk_port_cycles(port);
    if (npk_e1_clear_counters(e) || npk_e1_submit(e, ring, 2, &cfg, 0, &last)) {
        cli_fail("demo: ring: %s", npk_errmsg());
        goto out;
    }
    npk_report_op(rep, "ring: DOT4_S8 + GEMM_S8 wb", 1, npk_port_cycles(port) - t0, 2 * 2 * 3);
    uint32_t lo, hi;
    npk_ref_e1_scalar(E1_OP_DOT4_S8, 0x04030201u, 0xf807fa05u, 0xffffff00u, 0, &lo, &hi);
    uint8_t wb[16];
    int32_t C2[4];
    npk_port_mem_read(port, outaddr, wb, sizeof wb);
    for (int i = 0; i < 4; i++)
        C2[i] = (int32_t)((uint32_t)wb[4 * i] | (uint32_t)wb[4 * i + 1] << 8 | (uint32_t)wb[4 * i + 2] << 16 |
                          (uint32_t)wb[4 * i + 3] << 24);
    printf("  DOT4_S8 RESULT = 0x%08" PRIx32 " (%" PRId32 "), reference 0x%08" PRIx32 "\n", last.result,
           (int32_t)last.result, lo);
    print_matrix("C written back", C2, 2, 2);
    int ok2 = last.result == lo && !memcmp(C2, G, sizeof C2);
    printf("  reference %s\n", ok2 ? "matches" : "DIFFERS");

    npk_e1_counters c;
    if (npk_e1_read_counters(e, &c)) {
        cli_fail("demo: %s", npk_errmsg());
        goto out;
    }
    printf("counters after the ring:\n");
    printf("  PERF_CYCLES %" PRIu32 "  PERF_MACS %" PRIu32 "  PERF_OPS %" PRIu32 "  PERF_ERRORS %" PRIu32 "\n",
           c.perf_cycles, c.perf_macs, c.perf_ops, c.perf_errors);
    printf("  DESC_BYTES_READ %" PRIu32 "  DESC_READ_BEATS %" PRIu32 "  DESC_BYTES_WRITTEN %" PRIu32
           "  DESC_WRITE_BEATS %" PRIu32 "\n",
           c.desc_bytes_read, c.desc_read_beats, c.desc_bytes_written, c.desc_write_beats);
    printf("  PERF_STALL_CYCLES %" PRIu32 "  PERF_SCRATCH_BYTES %" PRIu32 "\n", c.perf_stall_cycles,
           c.perf_scratch_bytes);
    npk_report_bytes(rep, "dram", c.desc_bytes_read, c.desc_bytes_written);
    npk_report_bytes(rep, "scratch", c.perf_scratch_bytes, 0);
    npk_report_note(rep, "MMIO accesses", "%" PRIu64, npk_port_mmio_count(port));
    npk_report_note(rep, "doorbells", "%" PRIu64, npk_e1_get_stats(e)->batches);
    if (report && cli_emit_report("demo", report, rep)) goto out;
    if (json_path && cli_write_report(rep, json_path)) {
        cli_fail("demo: %s", npk_errmsg());
        goto out;
    }
    if (O.plot && cli_plot_report(rep, "npu demo", O.plot)) goto out;
    if (trace && cli_write_trace(trace, trace_path)) {
        cli_fail("demo: %s", npk_errmsg());
        goto out;
    }
    rc = ok1 && ok2 ? 0 : 1;
    if (rc) cli_fail("demo: results differ from the CPU reference");
out:
    npk_e1_close(e);
out_port:
    npk_port_set_trace(port, NULL);
    npk_port_close(port);
    npk_trace_free(trace);
    npk_report_free(rep);
    return rc;
}
