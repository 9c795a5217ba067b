// SPDX-License-Identifier: MIT
/* npu shell-run: execute a shell descriptor stream on the in-process model and
 * print the descriptor trace, the IRQ history and the final registers. */
#include "cli.h"
#include "npukit/shell.h"
#include "npukit/sim.h"
#include "npukit/strbuf.h"
#include "npukit/report.h"
#include "npukit/trace.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct sr_args {
    const char *trace, *report, *json, *plot;
    npk_strlist mems, dumps, saves, maps, faults, dev_opts;
    uint64_t ring, ring_bytes, max_cycles;
    int irq;
} sr_args;

#define SRLIST(n, f, m, h) CLI_LIST(n, NULL, sr_args, f, m, h)
static const npk_opt sr_opts[] = {
    SRLIST("--mem", mems, "FILE@ADDR", "load FILE into guest memory at ADDR (repeatable)"),
    SRLIST("--dump", dumps, "ADDR+LEN", "print LEN bytes of guest memory at ADDR afterwards (repeatable)"),
    SRLIST("--save", saves, "FILE@ADDR+LEN", "write LEN bytes of guest memory at ADDR to FILE (repeatable)"),
    /* Default ring base: the shell contract's example queue base (section 11). The reference
     * schedules put data at 0 (golden streams), in the architecture's SRAMs (activation SRAM at
     * 0x80000000, the port arena's base too) and in DRAM at 0x3000000000, so a ring there is
     * never overwritten by their DMAs. */
    CLI_NUM("--ring", NULL, U64, sr_args, ring, "0x1000000000", 0, 0, "ADDR",
      "ring base address (the contract's example queue base, outside every\n" "reference architecture's buffers)"),
    CLI_NUM("--ring-bytes", NULL, U64, sr_args, ring_bytes, "4096", 64, 1u << 30, "N", "ring size, a power of two"),
    SRLIST("--map", maps, "BASE+SIZE[@LAT][:NAME]", "declare a memory region (then only regions exist)"),
    SRLIST("--fault", faults, "SPEC", "inject a bus fault: read|write|any@ADDR[+LEN][#BEAT][=error|hang][*COUNT]"),
    CLI_DEVICE_OPT(sr_args, dev_opts),
    CLI_FLAG("--irq", NULL, sr_args, irq, "wait on the interrupt line instead of polling STATUS"),
    CLI_NUM("--max-cycles", NULL, U64, sr_args, max_cycles, "1000000000", 1, UINT64_MAX, "N",
      "give up after N device cycles"),
    CLI_STR("--trace", NULL, sr_args, trace, NULL, "FILE", "write a Chrome trace (JSON) of the run"),
    CLI_REPORT(sr_args, report,
      "also print the performance report (per opcode: descriptors, engine\n"
      "cycles, MACs and energy; the run's energy, power and area) on stdout or in FILE"),
    CLI_STR("--report-json", NULL, sr_args, json, NULL, "FILE", "write the performance report as JSON to FILE"),
    CLI_STR("--plot", NULL, sr_args, plot, NULL, "FILE.png|.svg",
      "draw the engine cycles per opcode (bars) with gnuplot"),
};
#define SR_NOPTS (sizeof sr_opts / sizeof sr_opts[0])

static void help(void) {
    printf("usage: npu shell-run STREAM.bin [--device-opt K=V] [--report[=FILE]] [--report-json FILE] [--trace FILE]\n"
           "                     [--plot FILE.png] [options]\n\n"
           "Runs a binary shell descriptor stream (from 'npu asm --device shell' or 'npu shell-map')\n"
           "on the in-process shell model through its driver: the stream is written to the ring\n"
           "(wrapping as often as needed), the doorbell rung, and the device run until the queue\n"
           "drains, an error is latched or --max-cycles pass. Prints every executed descriptor\n"
           "(fetch/start/end cycles, engine, error), the IRQ line history and the final registers.\n"
           "Exit status 1 when the device latched an error or did not finish. Memory regions\n"
           "(--map) are declared first, then the --mem images loaded, then the faults armed.\n\n"
           "options:\n");
    cli_help_opts(sr_opts, SR_NOPTS);
}

typedef struct irq_ev {
    uint64_t cycle;
    int level;
    uint32_t status;
} irq_ev;

/* An executed descriptor and the dynamic energy it cost (pJ, without register accesses;
 * docs/energy.md): the model's counters priced after it, less those before. */
typedef struct log_ent {
    npk_shell_log e;
    double pj;
} log_ent;

typedef struct run_ctx {
    npk_sim *sim;
    npk_port *port;
    irq_ev *irqs;
    size_t nirq, capirq;
    log_ent *log;
    size_t nlog, caplog;
    size_t stream_bytes; /* for the progress line */
    double pj;           /* the device's dynamic energy less MMIO after the last descriptor */
} run_ctx;

/* The device's dynamic energy since creation, without its register accesses (the
 * host's, between descriptors); 0 without an energy model. */
static double device_pj(npk_port *p) {
    npk_energy e;
    npk_area a;
    uint32_t nm;
    if (npk_port_energy(p, &e, &a, &nm)) return 0;
    return npk_energy_total_pj(&e) - e.mmio_pj;
}

static void on_irq(void *ctx, int line, int level) {
    run_ctx *c = ctx;
    if (line != 0) return;
    if (npk_grow(&c->irqs, &c->capirq, c->nirq + 1, sizeof *c->irqs, 16)) return;
    npk_dev *d = npk_sim_dev(c->sim);
    c->irqs[c->nirq++] = (irq_ev){npk_sim_cycles(c->sim), level, d->ops->read32(d, SHELL_IRQ_STATUS)};
}

static void on_log(void *ctx, const npk_shell_log *e) {
    run_ctx *c = ctx;
    if (npk_grow(&c->log, &c->caplog, c->nlog + 1, sizeof *c->log, 64)) return;
    double pj = device_pj(c->port);
    c->log[c->nlog++] = (log_ent){*e, pj - c->pj};
    c->pj = pj;
    if (c->stream_bytes >= (1u << 16) && !(c->nlog & 255)) /* large streams: progress on a terminal */
        cli_progress("shell-run: stream bytes executed", e->offset, c->stream_bytes);
}

/* "FILE@ADDR" or "ADDR+LEN" or "FILE@ADDR+LEN" */
static int split_at(char *s, char **file, char **rest) {
    char *at = strrchr(s, '@');
    if (!at) return -1;
    *at = 0;
    *file = s;
    *rest = at + 1;
    return **file ? 0 : -1;
}

/* "ADDR+LEN": both whole numbers, the range inside 64 bits; else -1. */
static int parse_range(const char *s, uint64_t *addr, uint64_t *len) {
    const char *plus = strchr(s, '+');
    if (!plus) return -1;
    char *a = strndup(s, (size_t)(plus - s));
    int bad = !a || cli_parse_u64(a, addr) || cli_parse_u64(plus + 1, len) || (*len && *addr + *len - 1 < *addr);
    free(a);
    return bad ? -1 : 0;
}


/* --report, --report-json, --plot: the executed descriptors as report operators, engine
 * cycles, MACs and energy per opcode (fetch-only descriptors, events and NOOPs, count on
 * the fetch track with their cycles), the run's energy with the leakage over its cycles.
 * 0, or 1 after the message. */
static int report(const sr_args *A, const char *in, const run_ctx *c) {
    npk_port *p = c->port;
    uint64_t cycles = npk_sim_cycles(c->sim);
    npk_report *rep = npk_report_new(npk_shell_class.name, npk_port_hz(p), 0);
    if (!rep) return cli_fail("shell-run: out of memory");
    npk_report_name(rep, in);
    npk_energy e;
    npk_area a;
    uint32_t nm;
    int has_energy = !npk_port_energy(p, &e, &a, &nm);
    for (size_t i = 0; i < c->nlog; i++) {
        const npk_shell_log *l = &c->log[i].e;
        const char *n = npk_shell_opcode_name(l->opcode);
        npk_report_op(rep, n ? n : "unknown opcode", 1, l->end_cycle - l->start_cycle, l->macs);
        if (has_energy) npk_report_op_energy(rep, n ? n : "unknown opcode", 1, c->log[i].pj);
    }
    npk_report_total_cycles(rep, cycles);
    npk_report_note(rep, "descriptors executed", "%zu", c->nlog);
    npk_report_note(rep, "IRQ line changes", "%zu", c->nirq);
    if (has_energy) {
        e.leak_pj = npk_leak_pj(npk_area_total_mm2(&a), cycles, npk_port_hz(p), nm);
        npk_report_energy(rep, &e, &a, nm);
    }
    int ret = 0;
    if (A->report && cli_emit_report("shell-run", A->report, rep)) ret = 1;
    if (A->json && cli_write_report(rep, A->json)) ret = cli_fail("shell-run: %s", npk_errmsg());
    if (!ret && A->plot && cli_plot_report(rep, "npu shell-run", A->plot)) ret = 1;
    npk_report_free(rep);
    return ret;
}

/* Why long: the command's flags checked before any file is read, then memory map, images,
 * faults, the run and the dumps in that order; each check exits with its own message. */
int cmd_shell_run(int argc, char **argv) {
    sr_args A;
    int early = cli_start("shell-run", argc, argv, help, sr_opts, SR_NOPTS, &A, sizeof A);
    if (early >= 0) return early;
    const char *in = NULL;
    char *opts = NULL;
    int ret = cli_parse("shell-run", sr_opts, SR_NOPTS, &A, argc, argv, &in, 1, NULL);
    /* the device and its options are checked before any file is read */
    if (!ret) ret = cli_device("shell-run", npk_shell_class.name, 0, &A.dev_opts, &opts);
    if (!ret && (A.ring_bytes & (A.ring_bytes - 1)))
        ret = cli_usage_error("shell-run", "--ring-bytes %" PRIu64 " is not a power of two in the range 64..2^30",
                              A.ring_bytes);
    if (!ret && !in) ret = cli_usage_error("shell-run", "a stream file is required");
    const char *trace_out = A.trace;
    uint8_t *stream = NULL;
    size_t slen = 0;
    npk_port *p = NULL;
    npk_sim *sim = NULL;
    npk_trace *tr = NULL;
    npk_shell *sh = NULL;
    run_ctx ctx = {0};
    if (ret) goto out;
    if (cli_read_file(in, &stream, &slen)) {
        ret = cli_fail("shell-run: %s", npk_errmsg());
        goto out;
    }
    if (slen % 32) {
        ret = cli_fail("shell-run: %s: %zu bytes is not a whole number of 32-byte descriptor units", in, slen);
        goto out;
    }
    if (npk_port_open(&p, "sim", npk_shell_class.name, opts)) {
        ret = cli_fail("shell-run: %s", npk_errmsg());
        goto out;
    }
    sim = npk_port_sim(p);
    npk_mem *mem = npk_sim_mem(sim);
    ctx = (run_ctx){.sim = sim, .port = p, .stream_bytes = slen, .pj = device_pj(p)};
    tr = trace_out ? npk_trace_new() : NULL;
    /* memory map, images, faults */
    for (size_t i = 0; i < A.maps.n && !ret; i++)
        if (npk_mem_map_parse(mem, A.maps.v[i])) ret = cli_fail("shell-run: --map %s: %s", A.maps.v[i], npk_errmsg());
    for (size_t i = 0; i < A.mems.n && !ret; i++) {
        char *buf = strdup(A.mems.v[i]), *file, *rest;
        uint64_t addr;
        uint8_t *data;
        size_t dlen;
        if (!buf) {
            ret = cli_fail("shell-run: out of memory");
        } else if (split_at(buf, &file, &rest) || cli_parse_u64(rest, &addr)) {
            ret = cli_usage_error("shell-run", "--mem expects FILE@ADDR, got '%s'", A.mems.v[i]);
        } else if (cli_read_file(file, &data, &dlen)) {
            ret = cli_fail("shell-run: %s", npk_errmsg());
        } else {
            if (npk_port_mem_write(p, addr, data, dlen))
                ret = cli_fail("shell-run: --mem %s: %s", A.mems.v[i], npk_errmsg());
            free(data);
        }
        free(buf);
    }
    for (size_t i = 0; i < A.faults.n && !ret; i++) {
        npk_fault f;
        if (npk_fault_parse(A.faults.v[i], &f) || npk_mem_add_fault(mem, &f))
            ret = cli_fail("shell-run: --fault %s: %s", A.faults.v[i], npk_errmsg());
    }
    /* --dump and --save ranges are checked before the run */
    for (int save = 0; save < 2 && !ret; save++) {
        const npk_strlist *l = save ? &A.saves : &A.dumps;
        const char *a = save ? "--save" : "--dump";
        for (size_t i = 0; i < l->n && !ret; i++) {
            uint64_t ad, ln;
            char *buf = strdup(l->v[i]);
            if (!buf) {
                ret = cli_fail("shell-run: out of memory");
                break;
            }
            char *file = NULL, *rest = buf;
            if ((save && split_at(buf, &file, &rest)) || parse_range(rest, &ad, &ln))
                ret = cli_usage_error("shell-run", "%s expects %sADDR+LEN (whole numbers, inside 64 bits), got '%s'", a,
                                      save ? "FILE@" : "", l->v[i]);
            else if (ln > (1u << 30))
                ret = cli_usage_error("shell-run", "%s: LEN %" PRIu64 " is over the 1 GiB limit", a, ln);
            else if (file && cli_check_output(file))
                ret = cli_fail("shell-run: --save: %s", npk_errmsg());
            free(buf);
        }
    }
    if (!ret && trace_out && cli_check_output(trace_out)) ret = cli_fail("shell-run: --trace: %s", npk_errmsg());
    if (!ret && A.json && cli_check_output(A.json)) ret = cli_fail("shell-run: --report-json: %s", npk_errmsg());
    if (!ret && A.plot && cli_check_output(A.plot)) ret = cli_fail("shell-run: --plot: %s", npk_errmsg());
    if (!ret && A.report && strcmp(A.report, "-") && cli_check_output(A.report))
        ret = cli_fail("shell-run: --report: %s", npk_errmsg());
    if (ret) goto out;
    npk_dev *dev = npk_sim_dev(sim);
    dev->trace = tr;
    npk_sim_set_irq_cb(sim, on_irq, &ctx);
    npk_shell_sim_set_log(dev, on_log, &ctx);
    npk_shell_opts so = {(uint32_t)A.ring_bytes, A.ring, A.irq, A.max_cycles};
    if (npk_shell_open(&sh, p, &so)) {
        ret = cli_fail("shell-run: %s", npk_errmsg());
        goto out;
    }
    int rc = npk_shell_run(sh, stream, slen, A.max_cycles);
    cli_progress_end();
    const char *fail_msg = rc ? npk_errmsg() : NULL;
    char saved[1024] = "";
    if (fail_msg) snprintf(saved, sizeof saved, "%s", fail_msg);

    printf("descriptors (%zu):\n", ctx.nlog);
    printf("  %-8s %-14s %-6s %10s %10s %10s  %s\n", "offset", "opcode", "track", "fetch", "start", "end", "result");
    for (size_t i = 0; i < ctx.nlog; i++) {
        const npk_shell_log *e = &ctx.log[i].e;
        const char *n = npk_shell_opcode_name(e->opcode);
        char opn[16];
        if (!n) snprintf(opn, sizeof opn, "0x%02x", e->opcode);
        printf("  0x%06" PRIx32 " %-14s %-6s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 "  %s (tag 0x%" PRIx32 ")\n", e->offset,
               n ? n : opn, e->track, e->fetch_cycle, e->start_cycle, e->end_cycle, e->error ? npk_shell_error_name(e->error) : "ok",
               e->tag);
    }
    printf("irq line 0 (%zu changes):\n", ctx.nirq);
    for (size_t i = 0; i < ctx.nirq; i++)
        printf("  cycle %10" PRIu64 ": %s (IRQ_STATUS 0x%" PRIx32 ")\n", ctx.irqs[i].cycle, ctx.irqs[i].level ? "high" : "low",
               ctx.irqs[i].status);
    printf("registers at cycle %" PRIu64 ":\n", npk_sim_cycles(sim));
    npk_sim_dump_regs(sim, stdout);
    /* dumps, then saves */
    for (size_t k = 0; k < A.dumps.n + A.saves.n; k++) {
        int save = k >= A.dumps.n;
        const char *a = save ? "--save" : "--dump", *arg = save ? A.saves.v[k - A.dumps.n] : A.dumps.v[k];
        char *buf = strdup(arg);
        char *file = NULL, *rest = buf;
        uint64_t ad = 0, ln = 0;
        if (buf && save) split_at(buf, &file, &rest);
        if (buf) parse_range(rest, &ad, &ln); /* checked before the run */
        uint8_t *data = buf ? malloc(ln ? ln : 1) : NULL;
        if (!data || npk_port_mem_read(p, ad, data, ln)) {
            ret = cli_fail("shell-run: %s %s: %s", a, arg, data ? npk_errmsg() : "out of memory");
            free(data);
            free(buf);
            continue;
        }
        if (file) {
            if (cli_write_file(file, data, ln)) ret = cli_fail("shell-run: %s", npk_errmsg());
        } else {
            printf("memory 0x%" PRIx64 "+%" PRIu64 ":\n", ad, ln);
            for (uint64_t o = 0; o < ln; o += 16) {
                printf("  %016" PRIx64 ":", ad + o);
                for (uint64_t j = o; j < o + 16 && j < ln; j++) printf(" %02x", data[j]);
                printf("\n");
            }
        }
        free(data);
        free(buf);
    }
    if (tr && cli_write_trace(tr, trace_out)) ret = cli_fail("shell-run: %s", npk_errmsg());
    if ((A.report || A.json || A.plot) && report(&A, in, &ctx)) ret = 1;
    if (rc) ret = cli_fail("shell-run: %s", saved);
out:
    npk_shell_close(sh);
    if (p) {
        npk_dev *d = npk_sim_dev(sim);
        d->trace = NULL;
        npk_port_close(p);
    }
    npk_trace_free(tr);
    free(ctx.irqs);
    free(ctx.log);
    free(stream);
    free(opts);
    npk_strlist_free(&A.mems);
    npk_strlist_free(&A.dumps);
    npk_strlist_free(&A.saves);
    npk_strlist_free(&A.maps);
    npk_strlist_free(&A.faults);
    npk_strlist_free(&A.dev_opts);
    return ret;
}
