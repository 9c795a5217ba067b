/* SPDX-License-Identifier: MIT */
/*
 * npu vp: the virtual platform (docs/vp.md).
 *
 *   npu vp --device D --fd N ...   serve device D as a PCI function to QEMU's
 *                                  x-pci-proxy-dev over the socket fd N
 *   npu vp run [options] -- CMD    boot a Linux guest under stock QEMU with the
 *                                  devices, run CMD in it, exit with its status
 */
#define _GNU_SOURCE
#include "cli.h"
#include "npukit/sim.h"
#include "npukit/strbuf.h"
#include "npukit/trace.h"
#include "sim/vp.h"
#include "vp_guest.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the device server --------------------------------------------------- */

typedef struct vp_args {
    const char *device, *trace_path, *report, *json, *plot;
    npk_strlist dev_opts, faults, logs;
    uint32_t fd, settle_ms;
    int have_fd;
} vp_args;

#define VLIST(n, f, m, h) CLI_LIST(n, NULL, vp_args, f, m, h)
static const npk_opt vp_opts[] = {
    CLI_STR("--device", NULL, vp_args, device, NULL, "D", "device model to serve (required)"),
    CLI_DEVICE_OPT(vp_args, dev_opts),
    {"--fd", NULL, NPK_OPT_U32, offsetof(vp_args, fd), NULL, 0, 1 << 20, 0, 0, 0, "N",
     "the connected stream socket to serve (one end of a socketpair whose\n"
     "other end QEMU's -device x-pci-proxy-dev,fd=M holds); required", offsetof(vp_args, have_fd) + 1},
    VLIST("--fault", faults, "SPEC",
          "inject a bus fault on the device's DMA (repeatable; guest-physical\n"
          "addresses): read|write|any@ADDR[+LEN][#BEAT][=error|hang][*COUNT]"),
    CLI_STR("--trace", NULL, vp_args, trace_path, NULL, "FILE.json",
            "record a Chrome trace of the device and write it at exit"),
    CLI_REPORT(vp_args, report,
      "at exit, the performance report of the session (as npu qtest's: the\n"
      "commands the device ran, cycles, MACs, energy) on stdout or in FILE"),
    CLI_STR("--report-json", NULL, vp_args, json, NULL, "FILE", "write that report as JSON to FILE at exit"),
    CLI_STR("--plot", NULL, vp_args, plot, NULL, "FILE.png|.svg", "draw the device cycles per command (bars) at exit"),
    VLIST("--log", logs, "FILE|guest-errors",
          "FILE: one line per protocol message ('> ' received, '< ' sent);\n"
          "guest-errors: one line per guest error on stderr (unknown register\n"
          "offset, read-only or reserved bits, bad access width). Both may be given"),
    CLI_NUM("--settle-ms", NULL, U32, vp_args, settle_ms, "200", 1, 600000, "MS",
            "before answering a register read, run the busy device until idle or\n"
            "for at most MS ms of host time"),
};

static void vp_help(void) {
    printf("usage: npu vp --device D --fd N [options]\n"
           "       npu vp run [options] [--] [COMMAND ...]   (npu vp run --help)\n"
           "\n"
           "The virtual platform's device server: serves the device model D as a PCI function\n"
           "(vendor 0x%04x, class 0x%06x, BAR0 = the register window, INTx pin A) to stock\n"
           "QEMU 7.2's -device x-pci-proxy-dev,fd=M over the connected socket N (QEMU's\n"
           "multi-process protocol). Guest RAM, mapped from the memfd QEMU shares, is the\n"
           "device's DMA memory (guest-physical addresses). The device runs while it has\n"
           "work, between messages; a register read first lets it run until idle (at most\n"
           "--settle-ms). A malformed message ends the server with exit 1 and a message\n"
           "naming the message and the cause. 'npu vp run' starts QEMU, a Linux guest and\n"
           "one server per device in one command.\n"
           "\n"
           "PCI device IDs:",
           NPK_PCI_VENDOR, NPK_PCI_CLASS);
    size_t n;
    const npk_dev_class *const *cs = npk_dev_classes(&n);
    for (size_t i = 0; i < n; i++) printf(" %s 0x%04x%s", cs[i]->name, cs[i]->pci_device, i + 1 < n ? "," : "\n");
    printf("devices: %s\n\noptions:\n", npk_dev_names());
    cli_help_opts(vp_opts, sizeof vp_opts / sizeof vp_opts[0]);
    printf("\nSee docs/vp.md.\n");
}

static volatile sig_atomic_t vp_stop;
static void vp_on_signal(int sig) { vp_stop = sig; }

/* What one device server needs; shared by `npu vp` and `npu vp run`. */
typedef struct vp_dev {
    const char *device;
    char *opts;                 /* joined device options or NULL */
    const npk_strlist *faults;
    const char *trace_path;     /* or NULL */
    const char *report, *json, *plot; /* the session's report (npu vp only) or NULL */
    const char *log_path;       /* protocol log or NULL */
    int guest_errors;
    uint32_t settle_ms;
} vp_dev;

/* Check the --fault specs before anything starts (2 after a usage error). */
static int vp_check_faults(const char *cmd, const npk_strlist *faults) {
    for (size_t i = 0; i < faults->n; i++) {
        npk_fault f;
        if (npk_fault_parse(faults->v[i], &f)) return cli_usage_error(cmd, "--fault: %s", npk_errmsg());
    }
    return 0;
}

/* Serve one device on fd until the peer closes; the exit code (0, or 1 after
 * one "npu: ..." line). */
static int vp_serve_device(const vp_dev *d, int fd) {
    int rc = 0;
    npk_sim *sim = npk_sim_new(d->device, d->opts);
    if (!sim) {
        close(fd);
        return cli_fail("vp: cannot create the %s model: %s", d->device, npk_errmsg());
    }
    npk_mem *mem = npk_sim_mem(sim);
    npk_mem_set_limit(mem, 0); /* guest RAM is the guest's, not a model allocation */
    for (size_t i = 0; i < d->faults->n && !rc; i++) {
        npk_fault f;
        if (npk_fault_parse(d->faults->v[i], &f) || npk_mem_add_fault(mem, &f))
            rc = cli_fail("vp: --fault: %s", npk_errmsg());
    }
    if (d->guest_errors) npk_sim_set_guest_log(sim, stderr);
    FILE *logf = NULL;
    npk_trace *trace = NULL;
    if (!rc && d->log_path && !(logf = fopen(d->log_path, "w")))
        rc = cli_fail("vp: cannot open log file '%s': %s", d->log_path, strerror(errno));
    int want_report = d->report || d->json || d->plot;
    npk_energy e0;
    npk_area a0;
    uint32_t nm0;
    int has0;
    cli_dev_energy(npk_sim_dev(sim), &e0, &a0, &nm0, &has0);
    if (!rc && (d->trace_path || want_report)) {
        trace = npk_trace_new();
        if (!trace) rc = cli_fail("vp: out of memory");
        else {
            npk_trace_process(trace, d->device, npk_sim_hz(sim));
            npk_sim_dev(sim)->trace = trace;
        }
    }
    npk_vp_cfg cfg = {.settle_ms = d->settle_ms, .log = logf, .stop = &vp_stop};
    npk_vp_fn *fn = rc ? NULL : npk_vp_fn_new(sim, &cfg);
    if (!rc && !fn) rc = cli_fail("%s", npk_errmsg());
    npk_vp_transport *t = fn ? npk_vp_mpqemu_new(fn, fd, &cfg) : NULL;
    if (fn && !t) rc = cli_fail("%s", npk_errmsg());
    if (!t) close(fd);
    if (!rc) {
        int r = npk_vp_serve(&t, 1, &cfg);
        if (r) rc = cli_fail("%s", npk_errmsg());
    }
    if (t) t->free(t);
    npk_vp_fn_free(fn);
    if (trace) {
        npk_sim_dev(sim)->trace = NULL;
        if (want_report && cli_session_report("vp", d->report, d->json, d->plot, sim, trace, &e0) && !rc) rc = 1;
        if (d->trace_path && cli_write_trace(trace, d->trace_path) && !rc)
            rc = cli_fail("vp: cannot write trace '%s': %s", d->trace_path, npk_errmsg());
        npk_trace_free(trace);
    }
    if (logf && fclose(logf) && !rc) rc = cli_fail("vp: writing log file '%s' failed", d->log_path);
    npk_sim_free(sim);
    return rc;
}

/* --log values: at most one FILE and the word guest-errors. */
static int vp_logs(const char *cmd, const npk_strlist *logs, const char **path, int *guest_errors) {
    *path = NULL;
    *guest_errors = 0;
    for (size_t i = 0; i < logs->n; i++) {
        if (!strcmp(logs->v[i], "guest-errors")) *guest_errors = 1;
        else if (*path) return cli_usage_error(cmd, "--log FILE given twice (it takes one file)");
        else *path = logs->v[i];
    }
    return 0;
}

static int cmd_vp_run(int argc, char **argv);

int cmd_vp(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "run")) return cmd_vp_run(argc - 1, argv + 1);
    vp_args A;
    int early = cli_start("vp", argc, argv, vp_help, vp_opts, sizeof vp_opts / sizeof vp_opts[0], &A, sizeof A);
    if (early >= 0) return early;
    char *opts = NULL;
    int rc = cli_parse("vp", vp_opts, sizeof vp_opts / sizeof vp_opts[0], &A, argc, argv, NULL, 0, NULL);
    const char *log_path = NULL;
    int guest_errors = 0;
    if (!rc && !A.device) rc = cli_usage_error("vp", "--device is required (%s)", npk_dev_names());
    if (!rc) rc = cli_device("vp", A.device, 0, &A.dev_opts, &opts);
    if (!rc && !A.have_fd) rc = cli_usage_error("vp", "--fd is required (the socket QEMU's x-pci-proxy-dev holds the other end of)");
    if (!rc) rc = vp_logs("vp", &A.logs, &log_path, &guest_errors);
    if (!rc) rc = vp_check_faults("vp", &A.faults);
    if (!rc) {
        int type = 0;
        socklen_t len = sizeof type;
        if (getsockopt((int)A.fd, SOL_SOCKET, SO_TYPE, &type, &len) || type != SOCK_STREAM)
            rc = cli_fail("vp: --fd %" PRIu32 " is not a connected stream socket (%s)", A.fd,
                          errno == EBADF ? "not an open file descriptor" : errno == ENOTSOCK ? "not a socket" : "not SOCK_STREAM");
    }
    if (!rc && A.trace_path && cli_check_output(A.trace_path)) rc = cli_fail("vp: --trace: %s", npk_errmsg());
    if (!rc && log_path && cli_check_output(log_path)) rc = cli_fail("vp: --log: %s", npk_errmsg());
    if (!rc && A.json && cli_check_output(A.json)) rc = cli_fail("vp: --report-json: %s", npk_errmsg());
    if (!rc && A.plot && cli_check_output(A.plot)) rc = cli_fail("vp: --plot: %s", npk_errmsg());
    if (!rc && A.report && strcmp(A.report, "-") && cli_check_output(A.report))
        rc = cli_fail("vp: --report: %s", npk_errmsg());
    if (!rc) {
        cli_stop_signals(vp_on_signal);
        vp_dev d = {.device = A.device, .opts = opts, .faults = &A.faults, .trace_path = A.trace_path,
                    .report = A.report, .json = A.json, .plot = A.plot, .log_path = log_path, .guest_errors = guest_errors, .settle_ms = A.settle_ms};
        rc = vp_serve_device(&d, (int)A.fd);
    }
    free(opts);
    npk_strlist_free(&A.dev_opts);
    npk_strlist_free(&A.faults);
    npk_strlist_free(&A.logs);
    return rc;
}

/* ---- npu vp run ------------------------------------------------------------ */

/* A device server's output of npu vp run: path itself with one device (and "-",
 * standard output, always), else FILE.D.ext (the extension of path, or ext);
 * NULL for no path (or out of memory: the server then writes no such output). */
static char *dev_path(const char *path, const char *dev, size_t ndev, const char *ext) {
    if (!path) return NULL;
    if (ndev <= 1 || !strcmp(path, "-")) return strdup(path);
    const char *dot = strrchr(path, '.');
    int has_ext = dot && !strchr(dot, '/');
    size_t stem = has_ext ? (size_t)(dot - path) : strlen(path), n = strlen(path) + strlen(dev) + strlen(ext) + 4;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%.*s.%s%s", (int)stem, path, dev, has_ext ? dot : ext);
    return p;
}

typedef struct run_args {
    npk_strlist devices, dev_opts, faults, logs, modules, adds;
    const char *kernel, *qemu, *npu, *trace_path, *mem, *dma, *report, *json, *plot;
    int shell, no_uio, print_cmd;
    uint32_t smp, settle_ms, timeout;
} run_args;

#define RLIST(n, f, m, h) CLI_LIST(n, NULL, run_args, f, m, h)
#define RSTR(n, f, d, m, h) CLI_STR(n, NULL, run_args, f, d, m, h)
static const npk_opt run_opts[] = {
    RLIST("--device", devices, "D[:K=V,...]",
          "a device of the guest (repeatable: one PCI function and one server\n"
          "each; default v0), with its options after ':'"),
    CLI_DEVICE_OPT(run_args, dev_opts),
    RLIST("--module", modules, "FILE.ko", "a kernel module to load in the guest before the command (repeatable;\n"
          "loaded in order, before uio_pci_generic takes the devices left)"),
    RLIST("--add", adds, "SRC:DST",
          "put the host file or directory SRC at DST in the guest (repeatable;\n"
          "DST ending in '/' keeps SRC's name); ELF programs bring their libraries"),
    CLI_FLAG("--shell", NULL, run_args, shell,
             "an interactive shell on the guest console instead of a command\n"
             "(Ctrl-A X quits QEMU)"),
    CLI_FLAG("--no-uio", NULL, run_args, no_uio, "do not bind uio_pci_generic to the devices"),
    RLIST("--fault", faults, "SPEC", "inject a bus fault on the devices' DMA (as npu vp --fault)"),
    RSTR("--trace", trace_path, NULL, "FILE.json",
         "Chrome trace of the device (several devices: FILE.D.json each)"),
    CLI_REPORT(run_args, report,
      "when the guest ends, each device server's session report (as npu vp\n"
      "--report) on stdout, or in FILE (several devices: FILE.D.txt each)"),
    RSTR("--report-json", json, NULL, "FILE", "that report as JSON (several devices: FILE.D.json each)"),
    RSTR("--plot", plot, NULL, "FILE.png|.svg", "the device cycles per command (several devices: FILE.D.png each)"),
    RLIST("--log", logs, "guest-errors", "guest-errors: the servers print one line per guest error"),
    RSTR("--kernel", kernel, NULL, "PATH", "the guest kernel (default: the newest /boot/vmlinuz-*)"),
    RSTR("--qemu", qemu, "qemu-system-x86_64", "PROG", "the QEMU to start"),
    RSTR("--npu", npu, NULL, "PATH", "the npu binary put in the guest as /bin/npu (default: this one)"),
    RSTR("--mem", mem, "512M", "SIZE", "guest RAM"),
    RSTR("--dma", dma, "64M", "SIZE",
         "RAM at the top kept from the kernel (mem=) for user-space DMA through\n"
         "/dev/mem: npu-vp-port D prints the UIO port spec using it"),
    CLI_NUM("--smp", NULL, U32, run_args, smp, "1", 1, 64, "N", "guest CPUs"),
    CLI_NUM("--settle-ms", NULL, U32, run_args, settle_ms, "200", 1, 600000, "MS", "as npu vp --settle-ms"),
    CLI_NUM("--timeout", NULL, U32, run_args, timeout, "0", 0, 86400, "S",
            "stop the guest after S seconds (exit 1); 0 = no limit"),
    CLI_FLAG("--print-cmd", NULL, run_args, print_cmd, "print the QEMU command line on stderr before starting it"),
};

static void run_help(void) {
    printf("usage: npu vp run [options] [--] [COMMAND ...]\n"
           "\n"
           "Boots a Linux guest under stock qemu-system-x86_64 (TCG) with Debian's kernel and\n"
           "an initramfs built now (busybox, uio and uio_pci_generic from /lib/modules/VER,\n"
           "this npu and its libraries, --module and --add files), one x-pci-proxy-dev PCI\n"
           "function per --device served by an `npu vp` server, runs COMMAND with /bin/sh in\n"
           "the guest (as root, in /root), streams the guest console to standard output and\n"
           "exits with COMMAND's exit status (1 and a message when the guest or a server\n"
           "fails). In the guest: the devices are bound to uio_pci_generic (/dev/uioN), and\n"
           "`npu-vp-port D` prints the port spec of device D for npu's --port (UIO over the\n"
           "--dma window of /dev/mem), e.g.\n"
           "  npu vp run --device v0 --add model.onnx:/root/ -- \\\n"
           "    'npu run model.onnx --device v0 --port $(npu-vp-port v0)'\n"
           "Interrupts do not reach a TCG guest (drivers poll). See docs/vp.md.\n"
           "\n"
           "options:\n");
    cli_help_opts(run_opts, sizeof run_opts / sizeof run_opts[0]);
}

static uint64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Quote s for /bin/sh (single quotes). */
static void sh_quote(npk_strbuf *b, const char *s);

#define MAX_DEV 8
#define VP_SERVER_GRACE_MS 30000 /* a device server's time to exit after QEMU has ended */

/* Why long: one linear sequence (check the flags and devices, build the guest, fork one server
 * per device, exec QEMU with their sockets, wait, reap, report the command's status) whose
 * error paths all share the cleanup at `out` (children killed and reaped, fds closed). */
static int cmd_vp_run(int argc, char **argv) {
    run_args A;
    int early = cli_start("vp run", argc, argv, run_help, run_opts, sizeof run_opts / sizeof run_opts[0], &A, sizeof A);
    if (early >= 0) return early;
    const char **pos = calloc((size_t)argc + 1, sizeof *pos);
    if (!pos) return cli_fail("vp run: out of memory");
    int npos = 0, rc = cli_parse("vp run", run_opts, sizeof run_opts / sizeof run_opts[0], &A, argc, argv, pos, argc, &npos);
    vp_dev devs[MAX_DEV];
    size_t ndev = 0;
    memset(devs, 0, sizeof devs);
    char *devnames[MAX_DEV] = {0};
    const char *log_path = NULL;
    int guest_errors = 0;
    uint64_t mem = 0, dma = 0;
    vp_guest g;
    memset(&g, 0, sizeof g);
    pid_t servers[MAX_DEV];
    int sv[MAX_DEV][2];
    for (size_t i = 0; i < MAX_DEV; i++) servers[i] = 0, sv[i][0] = sv[i][1] = -1;
    pid_t qemu = 0;

    /* the devices: --device D[:opts]; --device-opt only with one device */
    if (!rc && !A.devices.n) {
        A.devices.v = malloc(sizeof *A.devices.v);
        if (!A.devices.v) rc = cli_fail("vp run: out of memory");
        else A.devices.v[0] = "v0", A.devices.n = 1, A.devices.cap = 1;
    }
    if (!rc && A.devices.n > MAX_DEV) rc = cli_usage_error("vp run", "at most %d devices (%zu given)", MAX_DEV, A.devices.n);
    for (size_t i = 0; !rc && i < A.devices.n; i++) {
        const char *spec = A.devices.v[i], *colon = strchr(spec, ':');
        devnames[i] = colon ? strndup(spec, (size_t)(colon - spec)) : strdup(spec);
        if (!devnames[i]) {
            rc = cli_fail("vp run: out of memory");
            break;
        }
        npk_strlist one = {0};
        const char *ov[1] = {colon ? colon + 1 : NULL};
        if (colon) one.v = ov, one.n = 1;
        if (colon && !colon[1]) rc = cli_usage_error("vp run", "--device %s: no options after ':'", spec);
        if (!rc) rc = cli_device("vp run", devnames[i], 0, colon ? &one : &A.dev_opts, &devs[i].opts);
        if (!rc && colon && A.dev_opts.n) rc = cli_usage_error("vp run", "--device %s gives options after ':'; --device-opt cannot add more", spec);
        for (size_t j = 0; !rc && j < i; j++)
            if (!strcmp(devnames[j], devnames[i]))
                rc = cli_usage_error("vp run", "--device %s given twice (one function per device)", devnames[i]);
        devs[i].device = devnames[i];
        ndev = i + 1;
    }
    if (!rc && A.devices.n > 1 && A.dev_opts.n)
        rc = cli_usage_error("vp run", "--device-opt applies to one device; with several write --device D:K=V,...");
    if (!rc) rc = vp_logs("vp run", &A.logs, &log_path, &guest_errors);
    if (!rc && log_path) rc = cli_usage_error("vp run", "--log takes only guest-errors here ('%s')", log_path);
    if (!rc) rc = vp_check_faults("vp run", &A.faults);
    if (!rc && npk_parse_size(A.mem, &mem)) rc = cli_usage_error("vp run", "--mem: %s", npk_errmsg());
    if (!rc && npk_parse_size(A.dma, &dma)) rc = cli_usage_error("vp run", "--dma: %s", npk_errmsg());
    if (!rc && (mem < (64u << 20) || mem > (3ull << 30) || mem % (1u << 20)))
        rc = cli_usage_error("vp run", "--mem %s: expected whole MiB from 64M to 3G (RAM below the PCI hole)", A.mem);
    if (!rc && (dma % 4096 || dma + (32u << 20) > mem))
        rc = cli_usage_error("vp run", "--dma %s: expected whole pages, leaving the kernel at least 32M of --mem %s", A.dma,
                             A.mem);
    if (!rc && A.shell && npos) rc = cli_usage_error("vp run", "--shell takes no COMMAND");
    if (!rc && !A.shell && !npos) rc = cli_usage_error("vp run", "a COMMAND to run in the guest, or --shell");
    if (!rc && A.trace_path && cli_check_output(A.trace_path)) rc = cli_fail("vp run: --trace: %s", npk_errmsg());
    if (!rc && A.json && cli_check_output(A.json)) rc = cli_fail("vp run: --report-json: %s", npk_errmsg());
    if (!rc && A.plot && cli_check_output(A.plot)) rc = cli_fail("vp run: --plot: %s", npk_errmsg());
    if (!rc && A.report && strcmp(A.report, "-") && cli_check_output(A.report))
        rc = cli_fail("vp run: --report: %s", npk_errmsg());
    if (rc) goto out;

    /* the command line of the guest */
    npk_strbuf cmd = {0};
    for (int i = 0; i < npos; i++) {
        if (i) npk_strbuf_printf(&cmd, " ");
        /* one argument: the shell line as it is; several: each a word */
        if (npos == 1) npk_strbuf_printf(&cmd, "%s", pos[i]);
        else sh_quote(&cmd, pos[i]);
    }
    if (cmd.oom) {
        free(cmd.p);
        rc = cli_fail("vp run: out of memory");
        goto out;
    }
    g.command = A.shell ? NULL : cmd.p;
    g.modules = A.modules.v;
    g.nmodules = A.modules.n;
    g.adds = A.adds.v;
    g.nadds = A.adds.n;
    g.kernel = A.kernel;
    g.npu = A.npu;
    g.no_uio = A.no_uio;
    g.mem = mem;
    g.dma = dma;
    uint64_t t0 = mono_ms();
    if (vp_guest_build(&g)) {
        rc = cli_fail("vp run: %s", npk_errmsg());
        free(cmd.p);
        goto out;
    }
    free(cmd.p);
    uint64_t t_build = mono_ms() - t0;

    /* one server per device, each on its own socketpair */
    fflush(NULL);
    for (size_t i = 0; i < ndev && !rc; i++) {
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv[i])) {
            rc = cli_fail("vp run: socketpair: %s", strerror(errno));
            break;
        }
        devs[i].faults = &A.faults;
        devs[i].guest_errors = guest_errors;
        devs[i].settle_ms = A.settle_ms;
        char *tp = dev_path(A.trace_path, devnames[i], ndev, ".json"), *rp = dev_path(A.report, devnames[i], ndev, ".txt"),
             *jp = dev_path(A.json, devnames[i], ndev, ".json"), *pp = dev_path(A.plot, devnames[i], ndev, ".png");
        devs[i].trace_path = tp, devs[i].report = rp, devs[i].json = jp, devs[i].plot = pp;
        pid_t pid = fork();
        if (pid < 0) {
            free(tp), free(rp), free(jp), free(pp);
            rc = cli_fail("vp run: fork: %s", strerror(errno));
            break;
        }
        if (pid == 0) {
            close(sv[i][1]);
            for (size_t j = 0; j < i; j++) close(sv[j][0]);
            signal(SIGINT, SIG_IGN); /* the guest's end is QEMU's to decide; EOF ends the server */
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = vp_on_signal;
            sigaction(SIGTERM, &sa, NULL);
            signal(SIGPIPE, SIG_IGN);
            int r = vp_serve_device(&devs[i], sv[i][0]);
            /* the child leaves through _exit, not npu.c: commit its trace here (npu.c commits a
             * command's outputs when it returns; a server's are whole when it succeeded) */
            if (cli_outputs_commit(r == 0) && !r) r = cli_fail("vp run: %s", npk_errmsg());
            fflush(NULL);
            _exit(r);
        }
        free(tp), free(rp), free(jp), free(pp);
        servers[i] = pid;
        close(sv[i][0]);
        sv[i][0] = -1;
    }
    if (rc) goto out;

    /* QEMU */
    char memarg[96], memsz[32], smp[16], append[512], status_arg[600];
    snprintf(memsz, sizeof memsz, "%" PRIu64 "M", mem >> 20);
    snprintf(memarg, sizeof memarg, "memory-backend-memfd,id=mem,size=%s,share=on", memsz);
    snprintf(smp, sizeof smp, "%" PRIu32, A.smp);
    const char *xa = getenv("NPU_VP_APPEND"); /* extra kernel arguments (experiments) */
    snprintf(append, sizeof append, "console=ttyS0 quiet panic=-1 rdinit=/init cryptomgr.notests nopat no_timer_check mem=%" PRIu64 "K%s%s",
             (mem - dma) >> 10, xa ? " " : "", xa ? xa : "");
    snprintf(status_arg, sizeof status_arg, "file:%s", g.status_path);
    const char *qv[64 + 2 * MAX_DEV];
    char devarg[MAX_DEV][64];
    int qn = 0;
    qv[qn++] = A.qemu;
    const char *fixed[] = {"-machine", "pc,accel=tcg,memory-backend=mem", "-object", memarg, "-m", memsz, "-smp", smp,
                           "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
                           "-serial", A.shell ? "mon:stdio" : "stdio", "-serial", status_arg,
                           "-kernel", g.boot_path, "-initrd", g.initrd_path, "-append", append};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) qv[qn++] = fixed[i];
    for (size_t i = 0; i < ndev; i++) {
        snprintf(devarg[i], sizeof devarg[i], "x-pci-proxy-dev,id=npu%zu-%s,fd=%zu", i, devnames[i], 3 + i);
        qv[qn++] = "-device";
        qv[qn++] = devarg[i];
    }
    qv[qn] = NULL;
    if (A.print_cmd) {
        fprintf(stderr, "npu vp run:");
        for (int i = 0; i < qn; i++) fprintf(stderr, " %s", qv[i]);
        fprintf(stderr, "\n");
    }
    int errp[2];
    if (pipe2(errp, O_CLOEXEC)) {
        rc = cli_fail("vp run: pipe: %s", strerror(errno));
        goto out;
    }
    fflush(NULL);
    qemu = fork();
    if (qemu < 0) {
        close(errp[0]);
        close(errp[1]);
        rc = cli_fail("vp run: fork: %s", strerror(errno));
        goto out;
    }
    if (qemu == 0) {
        close(errp[0]);
        /* the QEMU ends to fds 3.. in order: first out of the way, then in place */
        int hi[MAX_DEV];
        for (size_t i = 0; i < ndev; i++) hi[i] = fcntl(sv[i][1], F_DUPFD, 100);
        for (size_t i = 0; i < ndev; i++) {
            if (hi[i] < 0 || dup2(hi[i], (int)(3 + i)) < 0) _exit(127);
            close(hi[i]);
        }
        if (A.shell == 0) {
            int dn = open("/dev/null", O_RDONLY);
            if (dn >= 0) dup2(dn, 0), close(dn);
        }
        execvp(A.qemu, (char *const *)qv);
        int e = errno;
        ssize_t w = write(errp[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(errp[1]);
    for (size_t i = 0; i < ndev; i++) close(sv[i][1]), sv[i][1] = -1;
    int exec_err = 0;
    if (read(errp[0], &exec_err, sizeof exec_err) == (ssize_t)sizeof exec_err) {
        close(errp[0]);
        waitpid(qemu, NULL, 0);
        qemu = 0;
        rc = cli_fail("vp run: cannot execute '%s': %s (install qemu-system-x86)", A.qemu, strerror(exec_err));
        goto out;
    }
    close(errp[0]);
    if (!A.shell) signal(SIGINT, SIG_IGN), signal(SIGTERM, SIG_IGN); /* QEMU and the servers see the signal; we report */

    /* wait: QEMU ends the run; a server failing ends QEMU */
    uint64_t start = mono_ms();
    int qstatus = 0, failed_server = -1, timed_out = 0;
    while (qemu) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p == qemu) {
            qstatus = st;
            qemu = 0;
            break;
        }
        for (size_t i = 0; p > 0 && i < ndev; i++)
            if (p == servers[i]) {
                servers[i] = 0;
                if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && failed_server < 0) {
                    failed_server = (int)i;
                    kill(qemu, SIGTERM);
                }
            }
        if (p > 0) continue;
        if (A.timeout && mono_ms() - start > (uint64_t)A.timeout * 1000u && !timed_out) {
            timed_out = 1;
            kill(qemu, SIGTERM);
        }
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
    uint64_t t_run = mono_ms() - start;
    /* the servers see EOF once QEMU is gone. The grace period is generous: a server that has
     * just finished a large job on a loaded machine can take seconds to get the CPU back. */
    uint64_t reap = mono_ms();
    int killed_server = -1;
    for (;;) {
        int left = 0;
        for (size_t i = 0; i < ndev; i++) {
            if (!servers[i]) continue;
            int st;
            pid_t p = waitpid(servers[i], &st, WNOHANG);
            if (p == servers[i]) {
                servers[i] = 0;
                if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && failed_server < 0 && killed_server != (int)i)
                    failed_server = (int)i;
            } else {
                left++;
            }
        }
        if (!left) break;
        if (mono_ms() - reap > VP_SERVER_GRACE_MS && killed_server < 0)
            for (size_t i = 0; i < ndev; i++)
                if (servers[i]) {
                    kill(servers[i], SIGKILL);
                    if (killed_server < 0) killed_server = (int)i;
                }
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
    if (killed_server >= 0 && failed_server < 0) {
        rc = cli_fail("vp run: the %s device server did not exit within %d s of QEMU's end; it was killed",
                      devnames[killed_server], VP_SERVER_GRACE_MS / 1000);
    } else if (failed_server >= 0) {
        rc = cli_fail("vp run: the %s device server failed (its message is above); the guest was stopped",
                      devnames[failed_server]);
    } else if (timed_out) {
        rc = cli_fail("vp run: the guest did not finish within --timeout %" PRIu32 " s; stopped", A.timeout);
    } else if (!(WIFEXITED(qstatus) && WEXITSTATUS(qstatus) == 0)) {
        if (WIFSIGNALED(qstatus))
            rc = cli_fail("vp run: %s was killed by signal %d", A.qemu, WTERMSIG(qstatus));
        else
            rc = cli_fail("vp run: %s exited with status %d (its message is above)", A.qemu, WEXITSTATUS(qstatus));
    } else if (A.shell) {
        rc = 0;
    } else {
        int status = -1;
        if (vp_guest_status(&g, &status))
            rc = cli_fail("vp run: %s", npk_errmsg());
        else
            rc = status;
    }
    if (getenv("NPU_VP_TIMES"))
        fprintf(stderr, "npu vp run: initramfs %" PRIu64 " ms, guest %" PRIu64 " ms\n", t_build, t_run);
out:
    if (qemu > 0) {
        kill(qemu, SIGKILL);
        waitpid(qemu, NULL, 0);
    }
    for (size_t i = 0; i < MAX_DEV; i++) {
        if (sv[i][0] >= 0) close(sv[i][0]);
        if (sv[i][1] >= 0) close(sv[i][1]);
        if (servers[i] > 0) {
            kill(servers[i], SIGKILL);
            waitpid(servers[i], NULL, 0);
        }
    }
    vp_guest_free(&g);
    for (size_t i = 0; i < MAX_DEV; i++) {
        free(devs[i].opts);
        free(devnames[i]);
    }
    free(pos);
    npk_strlist_free(&A.devices);
    npk_strlist_free(&A.dev_opts);
    npk_strlist_free(&A.faults);
    npk_strlist_free(&A.logs);
    npk_strlist_free(&A.modules);
    npk_strlist_free(&A.adds);
    return rc;
}

static void sh_quote(npk_strbuf *b, const char *s) {
    npk_strbuf_printf(b, "'");
    for (; *s; s++) {
        if (*s == '\'') npk_strbuf_printf(b, "'\\''");
        else npk_strbuf_printf(b, "%c", *s);
    }
    npk_strbuf_printf(b, "'");
}
