/* npu shell-run: execute a shell descriptor stream on the in-process model and
 * print the descriptor trace, the IRQ history and the final registers. */
#include "cli.h"
#include "npukit/shell.h"
#include "npukit/sim.h"
#include "npukit/trace.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void help(void) {
    printf("usage: npu shell-run STREAM.bin [options]\n\n"
           "Runs a binary shell descriptor stream (from 'npu asm --device shell' or 'npu shell-map')\n"
           "on the in-process shell model through its driver: the stream is written to the ring\n"
           "(wrapping as often as needed), the doorbell rung, and the device run until the queue\n"
           "drains, an error is latched or --max-cycles pass. Prints every executed descriptor\n"
           "(fetch/start/end cycles, engine, error), the IRQ line history and the final registers.\n"
           "Exit status 1 when the device latched an error or did not finish.\n\n"
           "options:\n"
           "  --mem FILE@ADDR        load FILE into guest memory at ADDR (repeatable)\n"
           "  --dump ADDR+LEN        print LEN bytes of guest memory at ADDR afterwards (repeatable)\n"
           "  --save FILE@ADDR+LEN   write LEN bytes of guest memory at ADDR to FILE (repeatable)\n"
           "  --ring ADDR            ring base address (default 0x1000000000, the contract's example queue\n"
           "                         base, outside every reference architecture's buffers)\n"
           "  --ring-bytes N         ring size, a power of two in 64..2^30 (default 4096; 0 is refused)\n"
           "  --map BASE+SIZE[@LAT][:NAME]  declare a memory region (then only regions exist)\n"
           "  --fault SPEC           inject a bus fault: read|write|any@ADDR[+LEN][#BEAT][=error|hang][*COUNT]\n"
           "  --device-opt K=V,...   device model options (see 'npu devices'; --opts is an older spelling)\n"
           "  --irq                  wait on the interrupt line instead of polling STATUS\n"
           "  --max-cycles N         give up after N device cycles (default 1000000000)\n"
           "  --trace FILE           write a Chrome trace (JSON) of the run\n"
           "  -h, --help             this text\n");
}

typedef struct irq_ev {
    uint64_t cycle;
    int level;
    uint32_t status;
} irq_ev;

typedef struct run_ctx {
    npk_sim *sim;
    irq_ev *irqs;
    size_t nirq, capirq;
    npk_shell_log *log;
    size_t nlog, caplog;
    size_t stream_bytes; /* for the progress line */
} run_ctx;

static void on_irq(void *ctx, int line, int level) {
    run_ctx *c = ctx;
    if (line != 0) return;
    if (c->nirq == c->capirq) {
        size_t nc = c->capirq ? c->capirq * 2 : 16;
        irq_ev *n = realloc(c->irqs, nc * sizeof *n);
        if (!n) return;
        c->irqs = n;
        c->capirq = nc;
    }
    npk_dev *d = npk_sim_dev(c->sim);
    c->irqs[c->nirq++] = (irq_ev){npk_sim_cycles(c->sim), level, d->ops->read32(d, SHELL_IRQ_STATUS)};
}

static void on_log(void *ctx, const npk_shell_log *e) {
    run_ctx *c = ctx;
    if (c->nlog == c->caplog) {
        size_t nc = c->caplog ? c->caplog * 2 : 64;
        npk_shell_log *n = realloc(c->log, nc * sizeof *n);
        if (!n) return;
        c->log = n;
        c->caplog = nc;
    }
    c->log[c->nlog++] = *e;
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

/* Default ring base: the shell contract's example queue base (section 11). The
 * reference schedules put data at 0 (golden streams), in the architecture's
 * SRAMs (activation SRAM at 0x80000000, the port arena's base too) and in DRAM
 * at 0x3000000000, so a ring there is never overwritten by their DMAs. */
#define SHELL_RUN_RING 0x1000000000ull

int cmd_shell_run(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        help();
        return 0;
    }
    const char *in = NULL, *opts = NULL, *trace_out = NULL;
    uint64_t max_cycles = 1000000000ull, ring = SHELL_RUN_RING, ring_bytes = 4096;
    int use_irq = 0;
    /* first pass: options that shape the machine */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if ((!strcmp(a, "--mem") || !strcmp(a, "--dump") || !strcmp(a, "--save") || !strcmp(a, "--map") ||
             !strcmp(a, "--fault")) && more) {
            i++;
        } else if ((!strcmp(a, "--device-opt") || !strcmp(a, "--opts")) && more) {
            if (opts) return cli_usage_error("shell-run", "--device-opt given twice (give K=V,K=V once)");
            opts = argv[++i];
        } else if (!strcmp(a, "--trace") && more) {
            trace_out = argv[++i];
        } else if (!strcmp(a, "--ring") && more) {
            if (cli_parse_u64(argv[++i], &ring)) return cli_usage_error("shell-run", "bad --ring '%s'", argv[i]);
        } else if (!strcmp(a, "--ring-bytes") && more) {
            if (cli_parse_u64(argv[++i], &ring_bytes) || ring_bytes < 64 || ring_bytes > (1u << 30) ||
                (ring_bytes & (ring_bytes - 1)))
                return cli_usage_error("shell-run", "--ring-bytes '%s' is not a power of two in the range 64..2^30",
                                       argv[i]);
        } else if (!strcmp(a, "--max-cycles") && more) {
            if (cli_parse_u64(argv[++i], &max_cycles) || !max_cycles)
                return cli_usage_error("shell-run", "bad --max-cycles '%s'", argv[i]);
        } else if (!strcmp(a, "--irq")) {
            use_irq = 1;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("shell-run", "unknown or incomplete option '%s'", a);
        } else if (!in) {
            in = a;
        } else {
            return cli_usage_error("shell-run", "unexpected argument '%s'", a);
        }
    }
    if (!in) return cli_usage_error("shell-run", "a stream file is required");
    uint8_t *stream;
    size_t slen;
    if (cli_read_file(in, &stream, &slen)) return cli_fail("shell-run: %s", npk_errmsg());
    if (slen % 32) {
        free(stream);
        return cli_fail("shell-run: %s: %zu bytes is not a whole number of 32-byte descriptor units", in, slen);
    }
    npk_port *p = NULL;
    if (npk_port_open(&p, "sim", "shell", opts)) {
        free(stream);
        return cli_fail("shell-run: %s", npk_errmsg());
    }
    npk_sim *sim = npk_port_sim(p);
    npk_mem *mem = npk_sim_mem(sim);
    run_ctx ctx = {.sim = sim, .stream_bytes = slen};
    npk_trace *tr = trace_out ? npk_trace_new() : NULL;
    int ret = 0;
    npk_shell *sh = NULL;
    /* second pass: memory map, faults, images */
    for (int i = 1; i < argc && !ret; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) break;
        char *buf = NULL;
        if (!strcmp(a, "--map")) {
            if (npk_mem_map_parse(mem, argv[++i])) ret = cli_fail("shell-run: --map %s: %s", argv[i], npk_errmsg());
        } else if (!strcmp(a, "--fault")) {
            npk_fault f;
            if (npk_fault_parse(argv[++i], &f) || npk_mem_add_fault(mem, &f))
                ret = cli_fail("shell-run: --fault %s: %s", argv[i], npk_errmsg());
        } else if (!strcmp(a, "--mem")) {
            if (!(buf = strdup(argv[++i]))) ret = cli_fail("shell-run: out of memory");
            char *file, *rest;
            uint64_t addr;
            uint8_t *data;
            size_t dlen;
            if (ret) {
            } else if (split_at(buf, &file, &rest) || cli_parse_u64(rest, &addr)) {
                ret = cli_usage_error("shell-run", "--mem expects FILE@ADDR, got '%s'", argv[i]);
            } else if (cli_read_file(file, &data, &dlen)) {
                ret = cli_fail("shell-run: %s", npk_errmsg());
            } else {
                if (npk_port_mem_write(p, addr, data, dlen)) ret = cli_fail("shell-run: --mem %s: %s", argv[i], npk_errmsg());
                free(data);
            }
        } else if (!strcmp(a, "--dump") || !strcmp(a, "--save")) {
            uint64_t ad, ln;
            if (!(buf = strdup(argv[++i]))) {
                ret = cli_fail("shell-run: out of memory");
                break;
            }
            char *file = NULL, *rest = buf;
            if ((!strcmp(a, "--save") && split_at(buf, &file, &rest)) || parse_range(rest, &ad, &ln))
                ret = cli_usage_error("shell-run", "%s expects %sADDR+LEN (whole numbers, inside 64 bits), got '%s'", a,
                                      file || !strcmp(a, "--save") ? "FILE@" : "", argv[i]);
            else if (ln > (1u << 30))
                ret = cli_usage_error("shell-run", "%s: LEN %" PRIu64 " is over the 1 GiB limit", a, ln);
            else if (file && cli_check_output(file))
                ret = cli_fail("shell-run: --save: %s", npk_errmsg());
        } else if (!strcmp(a, "--device-opt") || !strcmp(a, "--opts") || !strcmp(a, "--trace") || !strcmp(a, "--ring") || !strcmp(a, "--ring-bytes") ||
                   !strcmp(a, "--max-cycles")) {
            i++;
        }
        free(buf);
    }
    if (!ret && trace_out && cli_check_output(trace_out)) ret = cli_fail("shell-run: --trace: %s", npk_errmsg());
    if (ret) goto out;
    npk_dev *dev = npk_sim_dev(sim);
    dev->trace = tr;
    npk_sim_set_irq_cb(sim, on_irq, &ctx);
    npk_shell_sim_set_log(dev, on_log, &ctx);
    npk_shell_opts so = {(uint32_t)ring_bytes, ring, use_irq, max_cycles};
    if (npk_shell_open(&sh, p, &so)) {
        ret = cli_fail("shell-run: %s", npk_errmsg());
        goto out;
    }
    int rc = npk_shell_run(sh, stream, slen, max_cycles);
    cli_progress_end();
    const char *fail_msg = rc ? npk_errmsg() : NULL;
    char saved[1024] = "";
    if (fail_msg) snprintf(saved, sizeof saved, "%s", fail_msg);

    printf("descriptors (%zu):\n", ctx.nlog);
    printf("  %-8s %-14s %-6s %10s %10s %10s  %s\n", "offset", "opcode", "track", "fetch", "start", "end", "result");
    for (size_t i = 0; i < ctx.nlog; i++) {
        const npk_shell_log *e = &ctx.log[i];
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
    /* dumps and saves */
    for (int i = 1; i + 1 < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--dump") && strcmp(a, "--save")) continue;
        char *buf = strdup(argv[++i]);
        char *file = NULL, *rest = buf;
        uint64_t ad = 0, ln = 0;
        if (buf && !strcmp(a, "--save")) split_at(buf, &file, &rest);
        if (buf) parse_range(rest, &ad, &ln); /* checked in the second pass */
        uint8_t *data = buf ? malloc(ln ? ln : 1) : NULL;
        if (!data || npk_port_mem_read(p, ad, data, ln)) {
            ret = cli_fail("shell-run: %s %s: %s", a, argv[i], data ? npk_errmsg() : "out of memory");
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
    return ret;
}
