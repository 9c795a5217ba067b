/* npu qtest: serve a device model over QEMU's qtest text protocol. */
#include "cli.h"
#include "qemu_compat.h"
#include "npukit/sim.h"
#include "npukit/trace.h"
#include "sim/qtest.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

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
        "  Blank lines and lines starting with '#' get no reply. Bad requests (unknown\n"
        "  verbs, missing or extra arguments, bad numbers, oversize transfers, invalid\n"
        "  hex or base64, bus errors) get 'FAIL <reason>'.\n"
        "\n"
        "options:\n"
        "  --device D            device model: e1, v0, shell, pccx (required)\n"
        "  --opts OPTIONS        device model options (comma-separated key=value, see 'npu devices')\n"
        "  --socket PATH         listen on the Unix socket PATH instead of stdin/stdout; serves one\n"
        "                        connection, then exits (a socket file nobody listens on is replaced;\n"
        "                        a live server's socket is refused)\n"
        "  --irq-always          report IRQ lines from the first request (no irq_intercept_* needed)\n"
        "  --mem-limit BYTES     guest memory cap (K/M/G/T suffixes; default 4G; 0 = none); a write\n"
        "                        beyond it FAILs and changes nothing\n"
        "  --settle              run the device until idle after every access (simple scripts)\n"
        "  --idle-limit N        bound of run-until-idle in cycles (default %llu)\n"
        "  --mem-latency N       cycles added to every device memory beat (no memory map)\n"
        "  --mem-map BASE+SIZE[@LAT][:NAME]  declare a guest memory region (repeatable); once\n"
        "                        declared, accesses outside the regions are bus errors\n"
        "  --fault SPEC          inject a bus fault (repeatable):\n"
        "                        read|write|any@ADDR[+LEN][#BEAT][=error|hang][*COUNT]\n"
        "  --trace FILE.json     record a Chrome trace of the device and write it at exit\n"
        "  --log FILE            write a copy of the conversation ('> request', '< reply')\n"
        "  --log guest-errors    print one line per guest error on stderr (unknown register offset,\n"
        "                        write to read-only or reserved bits, bad access width), as QEMU's\n"
        "                        -d guest_errors; 'npu_guest_errors' replies the counts\n"
        "  -h, --help            this help\n"
        "\n"
        "QEMU drop-in (what libqtest and QEMU's Python QEMUQtestMachine start; build/npu-qemu\n"
        "is this command): -qtest unix:PATH connects to the test's qtest socket; -qmp unix:PATH\n"
        "or -chardev socket,id=ID,path=PATH|fd=N with -mon chardev=ID,mode=control connects a\n"
        "QMP monitor (qmp_capabilities, query-status, query-version, system_reset, quit);\n"
        "-qtest-log FILE is --log; -machine npu-D selects the device (else --device or the\n"
        "NPU_QEMU_DEVICE environment variable); -display, -accel, -vga, -name, -trace, -serial,\n"
        "-monitor, -nodefaults, -S and similar are accepted and ignored. SIGTERM/SIGINT end\n"
        "the server with exit code 0, as QEMU.\n"
        "\n"
        "See docs/qtest.md for the protocol and where it differs from QEMU's.\n",
        NPK_QTEST_MAX_BULK, NPK_QTEST_MAX_MEMSET, (unsigned long long)NPK_QTEST_IDLE_LIMIT);
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

static void on_ready(void *ctx, const char *path) {
    (void)ctx;
    fprintf(stderr, "npu qtest: listening on %s\n", path);
}

/* Option value: "--opt VALUE" or "--opt=VALUE". Returns NULL if `a` is not opt. */
static const char *optval(int argc, char **argv, int *i, const char *opt, int *missing) {
    size_t n = strlen(opt);
    const char *a = argv[*i];
    if (strncmp(a, opt, n)) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n]) return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

#define MAX_LIST 64

int cmd_qtest(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        help();
        return 0;
    }
    const char *device = NULL, *opts = NULL, *sock = NULL, *trace_path = NULL, *log_path = NULL;
    int guest_errors = 0;
    const char *maps[MAX_LIST], *faults[MAX_LIST];
    int nmaps = 0, nfaults = 0, settle = 0, have_lat = 0, irq_always = 0, have_limit = 0;
    uint64_t lat = 0, idle_limit = 0, mem_limit = 0;
    qemu_opts qo;
    memset(&qo, 0, sizeof qo);
#define USAGE(...)                                   \
    do {                                             \
        qemu_opts_free(&qo);                         \
        return cli_usage_error("qtest", __VA_ARGS__); \
    } while (0)
    for (int i = 1; i < argc; i++) {
        int missing = 0;
        const char *v;
        if (!strcmp(argv[i], "--settle")) {
            settle = 1;
            continue;
        }
        if (!strcmp(argv[i], "--irq-always")) {
            irq_always = 1;
            continue;
        }
        int qr = qemu_opt_parse(&qo, argc, argv, &i);
        if (qr < 0) {
            qemu_opts_free(&qo);
            return 2;
        }
        if (qr) continue;
#define OPT(name) ((v = optval(argc, argv, &i, name, &missing)) != NULL || missing)
        if (OPT("--device")) {
            if (missing) USAGE("--device needs a value");
            device = v;
        } else if (OPT("--opts")) {
            if (missing) USAGE("--opts needs a value");
            opts = v;
        } else if (OPT("--socket")) {
            if (missing) USAGE("--socket needs a path");
            sock = v;
        } else if (OPT("--trace")) {
            if (missing) USAGE("--trace needs a file name");
            trace_path = v;
        } else if (OPT("--log")) {
            if (missing) USAGE("--log needs a file name or 'guest-errors'");
            if (!strcmp(v, "guest-errors")) guest_errors = 1;
            else log_path = v;
        } else if (OPT("--mem-latency")) {
            if (missing || cli_parse_u64(v, &lat) || lat > 1000000)
                USAGE("--mem-latency needs a number of cycles (0..1000000)");
            have_lat = 1;
        } else if (OPT("--idle-limit")) {
            if (missing || cli_parse_u64(v, &idle_limit) || !idle_limit)
                USAGE("--idle-limit needs a positive number of cycles");
        } else if (OPT("--mem-limit")) {
            if (missing || npk_parse_size(v, &mem_limit)) {
                USAGE("--mem-limit needs a byte count like 4G, 512M or 0 (no cap)%s%s",
                                       missing ? "" : ": ", missing ? "" : npk_errmsg());
            }
            have_limit = 1;
        } else if (OPT("--mem-map")) {
            if (missing) USAGE("--mem-map needs BASE+SIZE[@LAT][:NAME]");
            if (nmaps == MAX_LIST) USAGE("more than %d --mem-map options", MAX_LIST);
            maps[nmaps++] = v;
        } else if (OPT("--fault")) {
            if (missing) USAGE("--fault needs a fault spec");
            if (nfaults == MAX_LIST) USAGE("more than %d --fault options", MAX_LIST);
            faults[nfaults++] = v;
        } else {
            USAGE("unknown argument '%s'", argv[i]);
        }
#undef OPT
    }
    if (qemu_opts_finish(&qo)) {
        qemu_opts_free(&qo);
        return 2;
    }
    if (!device) device = qo.machine_dev;
    if (!device && qo.active) device = getenv("NPU_QEMU_DEVICE");
    if (!device) {
        const char *hint = qo.active ? "; as QEMU: -machine npu-D or NPU_QEMU_DEVICE=D" : "";
        USAGE("--device is required (%s)%s", npk_dev_names(), hint);
    }
    if (!npk_dev_class_find(device)) {
        USAGE("unknown device '%s' (known: %s)", device, npk_dev_names());
    }
    if (qo.active && sock) {
        USAGE("--socket and -qtest exclude each other");
    }
    if (qo.qtest_log) {
        if (log_path) {
            USAGE("--log and -qtest-log exclude each other");
        }
        if (strcmp(qo.qtest_log, "none")) log_path = qo.qtest_log;
    }
    if ((trace_path && cli_check_output(trace_path)) || (log_path && cli_check_output(log_path))) {
        qemu_opts_free(&qo);
        return cli_fail("qtest: %s: %s", trace_path && cli_check_output(trace_path) ? "--trace" : "--log", npk_errmsg());
    }

#undef USAGE
    npk_sim *sim = npk_sim_new(device, opts);
    if (!sim) return cli_fail("qtest: cannot create the %s model: %s", device, npk_errmsg());
    npk_mem *mem = npk_sim_mem(sim);
    int rc = 0;
    FILE *logf = NULL;
    npk_trace *trace = NULL;
    npk_qtest *q = NULL;
    if (have_lat) npk_mem_set_latency(mem, (uint32_t)lat);
    if (have_limit) npk_mem_set_limit(mem, mem_limit);
    if (guest_errors) npk_sim_set_guest_log(sim, stderr);
    for (int i = 0; i < nmaps && !rc; i++)
        if (npk_mem_map_parse(mem, maps[i])) rc = cli_fail("qtest: --mem-map: %s", npk_errmsg());
    for (int i = 0; i < nfaults && !rc; i++) {
        npk_fault f;
        if (npk_fault_parse(faults[i], &f) || npk_mem_add_fault(mem, &f))
            rc = cli_fail("qtest: --fault: %s", npk_errmsg());
    }
    if (!rc && log_path && !(logf = fopen(log_path, "w")))
        rc = cli_fail("qtest: cannot open log file '%s': %s", log_path, strerror(errno));
    if (!rc && trace_path) {
        trace = npk_trace_new();
        if (!trace) rc = cli_fail("qtest: out of memory");
        else {
            npk_trace_process(trace, device, npk_sim_class(sim)->hz);
            npk_sim_dev(sim)->trace = trace;
        }
    }
    npk_qtest_cfg cfg = {
        .settle = settle, .idle_limit = idle_limit, .log = logf, .stop = &stop_signal, .irq_always = irq_always};
    if (!rc) {
        /* SIGTERM/SIGINT end the session cleanly (socket removed, trace and log
         * written) with exit code 0, as QEMU does. */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN); /* a vanished client ends the session, not the process */
    }
    if (!rc && qo.active) {
        rc = qemu_serve(sim, &cfg, &qo);
    } else if (!rc) {
        q = npk_qtest_new(sim, &cfg, NULL, NULL);
        if (!q) rc = cli_fail("qtest: %s", npk_errmsg());
        if (!rc) {
            int r = sock ? npk_qtest_serve_socket(q, sock, on_ready, NULL) : npk_qtest_serve_fd(q, 0, 1);
            if (r) rc = cli_fail("qtest: %s", npk_errmsg());
        }
    }
    if (stop_signal) fprintf(stderr, "npu qtest: terminating on signal %d\n", (int)stop_signal);
    qemu_opts_free(&qo);
    npk_qtest_free(q);
    if (trace) {
        npk_sim_dev(sim)->trace = NULL;
        if (cli_write_trace(trace, trace_path) && !rc)
            rc = cli_fail("qtest: cannot write trace '%s': %s", trace_path, npk_errmsg());
        npk_trace_free(trace);
    }
    if (logf && fclose(logf) && !rc) rc = cli_fail("qtest: writing log file '%s' failed", log_path);
    npk_sim_free(sim);
    return rc;
}
