// SPDX-License-Identifier: MIT
/* npu qtest: serve a device model over QEMU's qtest text protocol. */
#include "cli.h"
#include "qemu_compat.h"
#include "npukit/sim.h"
#include "npukit/trace.h"
#include "sim/qtest.h"

#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

typedef struct qt_args {
    const char *device, *sock, *trace_path, *mem_limit, *report, *json, *plot;
    npk_strlist dev_opts, maps, faults, logs;
    int settle, have_lat, irq_always;
    uint32_t lat;
    uint64_t idle_limit;
} qt_args;

#define QSTR(n, f, m, h) CLI_STR(n, NULL, qt_args, f, NULL, m, h)
#define QLIST(n, f, m, h) CLI_LIST(n, NULL, qt_args, f, m, h)
#define QFLAG(n, f, h) CLI_FLAG(n, NULL, qt_args, f, h)
static const npk_opt qt_opts[] = {
    QSTR("--device", device, "D", "device model (required, unless given QEMU's way)"),
    CLI_DEVICE_OPT(qt_args, dev_opts),
    QSTR("--socket", sock, "PATH",
         "listen on the Unix socket PATH instead of stdin/stdout; serves one\n"
         "connection, then exits (a socket file nobody listens on is replaced;\n"
         "a live server's socket is refused)"),
    QFLAG("--irq-always", irq_always, "report IRQ lines from the first request (no irq_intercept_* needed)"),
    QSTR("--mem-limit", mem_limit, "BYTES",
         "guest memory cap (K/M/G/T suffixes; default 4G; 0 = none); a write\n"
         "beyond it FAILs and changes nothing"),
    QFLAG("--settle", settle, "run the device until idle after every access (simple scripts)"),
    CLI_NUM("--idle-limit", NULL, U64, qt_args, idle_limit, "100000000", 1, UINT64_MAX, "N",
      "bound of run-until-idle in cycles"),
    {"--mem-latency", NULL, NPK_OPT_U32, offsetof(qt_args, lat), NULL, 0, 1000000, 0, 0, 0, "N",
     "cycles added to every device memory beat (no memory map)", offsetof(qt_args, have_lat) + 1},
    QLIST("--mem-map", maps, "BASE+SIZE[@LAT][:NAME]",
          "declare a guest memory region (repeatable); once\n"
          "declared, accesses outside the regions are bus errors"),
    QLIST("--fault", faults, "SPEC",
          "inject a bus fault (repeatable):\nread|write|any@ADDR[+LEN][#BEAT][=error|hang][*COUNT]"),
    QSTR("--trace", trace_path, "FILE.json", "record a Chrome trace of the device and write it at exit"),
    CLI_REPORT(qt_args, report,
      "at exit, the performance report of the session: per command (v0, e1:\n"
      "descriptor; shell, pccx: the engine's opcodes) count, device cycles, MACs\n"
      "and energy; the session's cycles, energy, power and area; in FILE, or on\n"
      "stdout when serving a socket (stdout carries the protocol otherwise)"),
    QSTR("--report-json", json, "FILE", "write that report as JSON to FILE at exit"),
    QSTR("--plot", plot, "FILE.png|.svg", "draw the device cycles per command (bars) with gnuplot at exit"),
    QLIST("--log", logs, "FILE|guest-errors",
          "FILE: write a copy of the conversation ('> request', '< reply');\n"
          "guest-errors: print one line per guest error on stderr (unknown register\n"
          "offset, write to read-only or reserved bits, bad access width), as QEMU's\n"
          "-d guest_errors; 'npu_guest_errors' replies the counts. Both may be given"),
};

static void help(void) {
    printf(
        "usage: npu qtest --device D [options]\n"
        "\n"
        "Serves the device model D over QEMU's qtest text protocol on standard input and\n"
        "output (or on a Unix socket with --socket), so any script or language can drive\n"
        "it at register level. One request per line; every request gets exactly one reply\n"
        "line, 'OK ...' or 'FAIL <reason>'. As in QEMU, after irq_intercept_in/out (or from\n"
        "the start with --irq-always) asynchronous 'IRQ raise N' / 'IRQ lower N' lines\n"
        "precede the reply whenever device interrupt line N changes level.\n"
        "The device's registers sit at its MMIO window ('npu devices' lists them; e1:\n"
        "0x10020000+0x1000); every other address is guest memory. Numbers parse like\n"
        "strtoul with base 0 (0x.. hex, 0.. octal, decimal). Time advances only with\n"
        "clock_step/clock_set (ns of the virtual clock; device cycles = ns * hz / 1e9).\n"
        "\n"
        "verbs:\n"
        "  writeb|writew|writel|writeq ADDR VALUE   store 1/2/4/8 bytes (little-endian)  -> OK\n"
        "  readb|readw|readl|readq ADDR             load 1/2/4/8 bytes -> OK 0x<16 hex digits>\n"
        "      In the register window: 32/64-bit accesses must be aligned; byte/halfword\n"
        "      reads return the byte lanes of the register; byte/halfword writes FAIL.\n"
        "  read ADDR SIZE                 -> OK 0x<2*SIZE hex digits, memory order>\n"
        "  write ADDR SIZE 0xHEX          store bytes (short data is zero-filled) -> OK\n"
        "  b64read ADDR SIZE              -> OK <base64>\n"
        "  b64write ADDR SIZE BASE64      store decoded bytes (truncated/zero-filled to SIZE) -> OK\n"
        "  memset ADDR SIZE VALUE         fill SIZE bytes with VALUE's low byte -> OK\n"
        "      read/write/b64*: at most %u bytes per request; in the register window\n"
        "      only whole aligned 32-bit words. memset: at most %u bytes.\n"
        "  clock_step NS                  advance the clock by NS ns -> OK <now ns>\n"
        "  clock_step                     run until the device is idle -> OK <now ns>\n"
        "                                 (FAIL when it is already idle, as QEMU with no deadline)\n"
        "  clock_set NS                   advance the clock to NS -> OK <NS>; in the past: FAIL <now ns>\n"
        "  irq_intercept_in|irq_intercept_out PATH [NAME]   report IRQ lines from now on -> OK\n"
        "  inb|inw|inl PORT               no I/O devices: all ones -> OK 0x00ff / 0xffff / 0xffffffff\n"
        "  outb|outw|outl PORT VALUE      ignored -> OK (PORT 0..0xffff)\n"
        "  endianness                     -> OK little\n"
        "  npu_reset                      device power-on reset (memory and clock kept) -> OK\n"
        "  npu_regs                       -> OK NAME=0x%%08x NAME=0x%%08x ... (every register of the table)\n"
        "  npu_guest_errors               -> OK total=N unknown-offset=N read-only=N reserved=N width=N\n"
        "  npu_info                       -> OK device=D hz=HZ mmio=0xBASE+0xSIZE irqs=N ns=NS cycles=C\n"
        "                                    irq=0xLEVELS settle=0|1\n"
        "  npu_energy                     -> OK tech_nm=N compute=E reg=E sram=E acc=E dram=E dma=E\n"
        "                                    mmio=E area_array=A area_sram=A area_fixed=A (the energy\n"
        "                                    model's pJ since start by class and mm2, C99 hex floats;\n"
        "                                    docs/energy.md)\n"
        "  Blank lines and lines starting with '#' get no reply. Bad requests (unknown\n"
        "  verbs, missing or extra arguments, bad numbers, oversize transfers, invalid\n"
        "  hex or base64, bus errors) get 'FAIL <reason>'.\n"
        "\n"
        "devices: %s ('npu devices' lists their windows and options)\n"
        "\n"
        "options:\n",
        NPK_QTEST_MAX_BULK, NPK_QTEST_MAX_MEMSET, npk_dev_names());
    cli_help_opts(qt_opts, sizeof qt_opts / sizeof qt_opts[0]);
    printf("\n"
        "QEMU drop-in (what libqtest and QEMU's Python QEMUQtestMachine start; build/npu-qemu\n"
        "is this command): -qtest unix:PATH connects to the test's qtest socket; -qmp unix:PATH\n"
        "or -chardev socket,id=ID,path=PATH|fd=N with -mon chardev=ID,mode=control connects a\n"
        "QMP monitor (qmp_capabilities, query-status, query-version, system_reset, quit);\n"
        "-qtest-log FILE is --log; -machine npu-D selects the device (else --device or the\n"
        "NPU_QEMU_DEVICE environment variable); -display, -accel, -vga, -name, -trace, -serial,\n"
        "-monitor, -nodefaults, -S and similar are accepted and ignored. SIGTERM/SIGINT end\n"
        "the server with exit code 0, as QEMU.\n"
        "\n"
        "See docs/qtest.md for the protocol and where it differs from QEMU's.\n");
}

/* --report, --report-json, --plot before the session: 0, or the exit code after the message. */
static int check_report(const qt_args *A, int stdout_free) {
    if (A->report && !strcmp(A->report, "-") && !stdout_free)
        return cli_usage_error("qtest", "--report without =FILE needs --socket or -qtest (standard output carries the "
                                        "protocol)");
    const char *bad = A->json && cli_check_output(A->json)                                 ? "--report-json"
                      : A->plot && cli_check_output(A->plot)                               ? "--plot"
                      : A->report && strcmp(A->report, "-") && cli_check_output(A->report) ? "--report"
                                                                                           : NULL;
    return bad ? cli_fail("qtest: %s: %s", bad, npk_errmsg()) : 0;
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

static void on_ready(void *ctx, const char *path) {
    (void)ctx;
    fprintf(stderr, "npu qtest: listening on %s\n", path);
}

int cmd_qtest(int argc, char **argv) {
    qt_args A;
    int early = cli_start("qtest", argc, argv, help, NULL, 0, &A, sizeof A);
    if (early >= 0) return early;
    qemu_opts qo;
    memset(&qo, 0, sizeof qo);
    char *opts = NULL, **rest = calloc((size_t)argc + 1, sizeof *rest);
    int nrest = 1, rc = 0, have_limit = 0;
    uint64_t mem_limit = 0;
    if (!rest) return cli_fail("qtest: out of memory");
    /* QEMU's options (-qtest, -qmp, -chardev, -mon, -machine, ...) first; the rest are ours */
    rest[0] = argv[0];
    for (int i = 1; i < argc && !rc; i++) {
        int qr = qemu_opt_parse(&qo, argc, argv, &i);
        if (qr < 0) rc = 2;
        else if (!qr) rest[nrest++] = argv[i];
    }
    if (!rc) rc = cli_parse("qtest", qt_opts, sizeof qt_opts / sizeof qt_opts[0], &A, nrest, rest, NULL, 0, NULL);
    free(rest);
    if (!rc && A.mem_limit) {
        if (npk_parse_size(A.mem_limit, &mem_limit))
            rc = cli_usage_error("qtest", "--mem-limit needs a byte count like 4G, 512M or 0 (no cap): %s", npk_errmsg());
        have_limit = 1;
    }
    const char *log_path = NULL;
    int guest_errors = 0;
    for (size_t i = 0; !rc && i < A.logs.n; i++) {
        if (!strcmp(A.logs.v[i], "guest-errors")) guest_errors = 1;
        else if (log_path) rc = cli_usage_error("qtest", "--log FILE given twice (it takes one file)");
        else log_path = A.logs.v[i];
    }
    if (rc) goto out_args;
    const char *device = A.device, *sock = A.sock, *trace_path = A.trace_path;
    if (qemu_opts_finish(&qo)) {
        rc = 2;
        goto out_args;
    }
    if (!device) device = qo.machine_dev;
    if (!device && qo.active) device = getenv("NPU_QEMU_DEVICE");
    if (!device) {
        rc = cli_usage_error("qtest", "--device is required (%s)%s", npk_dev_names(),
                             qo.active ? "; as QEMU: -machine npu-D or NPU_QEMU_DEVICE=D" : "");
        goto out_args;
    }
    if ((rc = cli_device("qtest", device, 0, &A.dev_opts, &opts))) goto out_args;
    if (qo.active && sock) {
        rc = cli_usage_error("qtest", "--socket and -qtest exclude each other");
        goto out_args;
    }
    if (qo.qtest_log) {
        if (log_path) {
            rc = cli_usage_error("qtest", "--log and -qtest-log exclude each other");
            goto out_args;
        }
        if (strcmp(qo.qtest_log, "none")) log_path = qo.qtest_log;
    }
    if ((trace_path && cli_check_output(trace_path)) || (log_path && cli_check_output(log_path))) {
        rc = cli_fail("qtest: %s: %s", trace_path && cli_check_output(trace_path) ? "--trace" : "--log", npk_errmsg());
        goto out_args;
    }
    if ((rc = check_report(&A, sock || qo.active))) goto out_args;
    int want_report = A.report || A.json || A.plot;

    npk_sim *sim = npk_sim_new(device, opts);
    if (!sim) {
        rc = cli_fail("qtest: cannot create the %s model: %s", device, npk_errmsg());
        goto out_args;
    }
    npk_mem *mem = npk_sim_mem(sim);
    FILE *logf = NULL;
    npk_trace *trace = NULL;
    npk_qtest *q = NULL;
    if (A.have_lat) npk_mem_set_latency(mem, A.lat);
    if (have_limit) npk_mem_set_limit(mem, mem_limit);
    if (guest_errors) npk_sim_set_guest_log(sim, stderr);
    for (size_t i = 0; i < A.maps.n && !rc; i++)
        if (npk_mem_map_parse(mem, A.maps.v[i])) rc = cli_usage_error("qtest", "--mem-map: %s", npk_errmsg());
    for (size_t i = 0; i < A.faults.n && !rc; i++) {
        npk_fault f;
        if (npk_fault_parse(A.faults.v[i], &f)) rc = cli_usage_error("qtest", "--fault: %s", npk_errmsg());
        else if (npk_mem_add_fault(mem, &f)) rc = cli_fail("qtest: --fault: %s", npk_errmsg());
    }
    if (!rc && log_path && !(logf = fopen(log_path, "w")))
        rc = cli_fail("qtest: cannot open log file '%s': %s", log_path, strerror(errno));
    npk_energy e0;
    npk_area a0;
    uint32_t nm0;
    int has0;
    cli_dev_energy(npk_sim_dev(sim), &e0, &a0, &nm0, &has0);
    if (!rc && (trace_path || want_report)) {
        trace = npk_trace_new();
        if (!trace) rc = cli_fail("qtest: out of memory");
        else {
            npk_trace_process(trace, device, npk_sim_hz(sim));
            npk_sim_dev(sim)->trace = trace;
        }
    }
    npk_qtest_cfg cfg = {
        .settle = A.settle, .idle_limit = A.idle_limit, .log = logf, .stop = &stop_signal, .irq_always = A.irq_always};
    if (!rc) {
        /* SIGTERM/SIGINT end the session cleanly (socket removed, trace and log
         * written) with exit code 0, as QEMU does. */
        cli_stop_signals(on_signal);
    }
    if (!rc && qo.active) {
        rc = qemu_serve(sim, &cfg, &qo);
    } else if (!rc) {
        q = npk_qtest_new(sim, &cfg, NULL, NULL);
        if (!q) rc = cli_fail("%s", npk_errmsg()); /* the library's messages already start with "qtest: " */
        if (!rc) {
            int r = sock ? npk_qtest_serve_socket(q, sock, on_ready, NULL) : npk_qtest_serve_fd(q, 0, 1);
            if (r) rc = cli_fail("%s", npk_errmsg());
        }
    }
    if (stop_signal) fprintf(stderr, "npu qtest: terminating on signal %d\n", (int)stop_signal);
    npk_qtest_free(q);
    if (trace) {
        npk_sim_dev(sim)->trace = NULL;
        if (want_report && cli_session_report("qtest", A.report, A.json, A.plot, sim, trace, &e0) && !rc) rc = 1;
        if (trace_path && cli_write_trace(trace, trace_path) && !rc)
            rc = cli_fail("qtest: cannot write trace '%s': %s", trace_path, npk_errmsg());
        npk_trace_free(trace);
    }
    if (logf && fclose(logf) && !rc) rc = cli_fail("qtest: writing log file '%s' failed", log_path);
    npk_sim_free(sim);
out_args:
    qemu_opts_free(&qo);
    free(opts);
    npk_strlist_free(&A.dev_opts);
    npk_strlist_free(&A.maps);
    npk_strlist_free(&A.faults);
    npk_strlist_free(&A.logs);
    return rc;
}
