// SPDX-License-Identifier: MIT
/* Performance reports: aggregation, text and JSON. */
#include "npukit/report.h"
#include "npukit/strbuf.h"
#include "npukit/npu.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct rop {
    char name[64];
    int on_npu;
    uint64_t count, cycles, macs;
    double energy_pj;
} rop;

typedef struct rmem {
    char name[32];
    uint64_t rd, wr;
} rmem;

typedef struct rnote {
    char key[48];
    char val[160];
} rnote;

struct npk_report {
    char device[32];
    char name[128];
    int host_only; /* no device clock (a CPU run): times come from the host */
    uint64_t hz, peak;
    rop *ops;
    size_t nops, cap_ops;
    rmem *mems;
    size_t nmems, cap_mems;
    rnote *notes;
    size_t nnotes, cap_notes;
    double host_s;
    uint64_t total_cycles, tokens;
    int has_energy, op_energy;
    npk_energy energy;
    npk_area area;
    uint32_t tech_nm;
};

npk_report *npk_report_new(const char *device, uint64_t hz, uint64_t peak) {
    npk_report *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    snprintf(r->device, sizeof r->device, "%s", device);
    r->hz = hz ? hz : 1;
    r->host_only = !hz;
    r->peak = peak;
    return r;
}

void npk_report_free(npk_report *r) {
    if (!r) return;
    free(r->ops);
    free(r->mems);
    free(r->notes);
    free(r);
}

void npk_report_name(npk_report *r, const char *name) {
    if (r) snprintf(r->name, sizeof r->name, "%s", name ? name : "");
}

void npk_report_op(npk_report *r, const char *name, int on_npu, uint64_t cycles, uint64_t macs) {
    npk_report_op_n(r, name, on_npu, 1, cycles, macs);
}

/* The row of operator name on the NPU or on the host; a new zero row when there is none and add
 * is set (NULL: none, or no memory: the figures are dropped). */
static rop *op_row(npk_report *r, const char *name, int on_npu, int add) {
    for (size_t i = 0; i < r->nops; i++)
        if (r->ops[i].on_npu == !!on_npu && !strncmp(r->ops[i].name, name, sizeof r->ops[i].name - 1)) return &r->ops[i];
    if (!add || npk_grow(&r->ops, &r->cap_ops, r->nops + 1, sizeof *r->ops, 16)) return NULL;
    rop *o = &r->ops[r->nops++];
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name);
    o->on_npu = !!on_npu;
    return o;
}

void npk_report_op_n(npk_report *r, const char *name, int on_npu, uint64_t count, uint64_t cycles, uint64_t macs) {
    rop *o = r ? op_row(r, name, on_npu, 1) : NULL;
    if (!o) return;
    o->count += count;
    o->cycles += cycles;
    o->macs += macs;
}

void npk_report_bytes(npk_report *r, const char *memory, uint64_t rd, uint64_t wr) {
    if (!r || !memory) return;
    rmem *m = NULL;
    for (size_t i = 0; i < r->nmems && !m; i++)
        if (!strcmp(r->mems[i].name, memory)) m = &r->mems[i];
    if (!m) {
        if (npk_grow(&r->mems, &r->cap_mems, r->nmems + 1, sizeof *r->mems, 8)) return;
        m = &r->mems[r->nmems++];
        memset(m, 0, sizeof *m);
        snprintf(m->name, sizeof m->name, "%s", memory);
    }
    m->rd += rd;
    m->wr += wr;
}

void npk_report_op_energy(npk_report *r, const char *name, int on_npu, double pj) {
    rop *o = r ? op_row(r, name, on_npu, 0) : NULL;
    if (!o) return;
    o->energy_pj += pj;
    r->op_energy = 1;
}

void npk_report_energy(npk_report *r, const npk_energy *e, const npk_area *a, uint32_t tech_nm) {
    if (!r) return;
    r->has_energy = 1;
    r->energy = *e;
    r->area = *a;
    r->tech_nm = tech_nm;
}

/* Derived energy figures: total uJ, average power (W), TOPS/W and the
 * energy-delay product (uJ x ms) over the modeled time secs. */
typedef struct efig {
    double uj, watts, tops_w, edp;
} efig;
static efig energy_figs(const npk_report *r, uint64_t macs, double secs) {
    efig f = {npk_energy_total_pj(&r->energy) / 1e6, 0, 0, 0};
    if (secs > 0) f.watts = f.uj * 1e-6 / secs;
    if (f.uj > 0) f.tops_w = (double)macs * 2.0 / (f.uj * 1e-6) / 1e12; /* ops per joule / 1e12 */
    f.edp = f.uj * secs * 1e3;
    return f;
}

void npk_report_host_time(npk_report *r, double s) {
    if (r) r->host_s = s;
}
void npk_report_total_cycles(npk_report *r, uint64_t c) {
    if (r) r->total_cycles = c;
}
void npk_report_tokens(npk_report *r, uint64_t t) {
    if (r) r->tokens = t;
}

void npk_report_note(npk_report *r, const char *key, const char *fmt, ...) {
    if (!r) return;
    if (npk_grow(&r->notes, &r->cap_notes, r->nnotes + 1, sizeof *r->notes, 8)) return;
    rnote *x = &r->notes[r->nnotes++];
    snprintf(x->key, sizeof x->key, "%s", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->val, sizeof x->val, fmt, ap);
    va_end(ap);
}

uint64_t npk_report_cycles(const npk_report *r) {
    if (r->total_cycles) return r->total_cycles;
    uint64_t c = 0;
    for (size_t i = 0; i < r->nops; i++) c += r->ops[i].cycles;
    return c;
}

size_t npk_report_n_ops(const npk_report *r) { return r->nops; }

int npk_report_op_get(const npk_report *r, size_t i, const char **name, int *on_npu, uint64_t *count, uint64_t *cycles,
                      uint64_t *macs) {
    if (i >= r->nops) return npk_err(NPK_EINVAL, "report operator %zu of %zu", i, r->nops);
    *name = r->ops[i].name;
    *on_npu = r->ops[i].on_npu;
    *count = r->ops[i].count;
    *cycles = r->ops[i].cycles;
    *macs = r->ops[i].macs;
    return 0;
}

const char *npk_report_device(const npk_report *r) { return r->device; }
uint64_t npk_report_peak(const npk_report *r) { return r->peak; }
uint64_t npk_report_hz(const npk_report *r) { return r->host_only ? 0 : r->hz; }

uint64_t npk_report_macs(const npk_report *r) {
    uint64_t m = 0;
    for (size_t i = 0; i < r->nops; i++) m += r->ops[i].macs;
    return m;
}

/* MACs of the operators on the device (on_npu) or on the host: utilization
 * and TOPS count the device's only (issue #13). */
static uint64_t macs_where(const npk_report *r, int on_npu) {
    uint64_t m = 0;
    for (size_t i = 0; i < r->nops; i++)
        if (!r->ops[i].on_npu == !on_npu) m += r->ops[i].macs;
    return m;
}

/* "12.345 ms" / "64.000 us" / "1.234 s" */
static const char *fmt_time(char *buf, size_t n, double secs) {
    if (secs >= 1.0) snprintf(buf, n, "%.3f s", secs);
    else if (secs >= 1e-3) snprintf(buf, n, "%.3f ms", secs * 1e3);
    else snprintf(buf, n, "%.3f us", secs * 1e6);
    return buf;
}

static double tops(uint64_t macs, uint64_t cycles, uint64_t hz) {
    return cycles ? (double)macs * 2.0 / ((double)cycles / (double)hz) / 1e12 : 0.0;
}

static double util(const npk_report *r, uint64_t macs, uint64_t cycles) {
    return r->peak && cycles ? 100.0 * (double)macs / ((double)r->peak * (double)cycles) : 0.0;
}

void npk_report_print(const npk_report *r, FILE *f) {
    uint64_t cyc = npk_report_cycles(r), macs = macs_where(r, 1), cpu_macs = macs_where(r, 0);
    double secs = (double)cyc / (double)r->hz;
    size_t npu_ops = 0, host_ops = 0;
    for (size_t i = 0; i < r->nops; i++) {
        if (r->ops[i].on_npu) npu_ops += r->ops[i].count;
        else host_ops += r->ops[i].count;
    }
    if (r->host_only)
        fprintf(f, "performance report%s%s: %s (host only, no device clock)\n", r->name[0] ? " for " : "", r->name,
                r->device);
    else
        fprintf(f, "performance report%s%s: %s @ %.1f MHz\n", r->name[0] ? " for " : "", r->name, r->device,
                (double)r->hz / 1e6);
    fprintf(f, "  %-28s %6s %8s %14s %14s %8s%s\n", "operator", "where", "count", "cycles", "MACs", "util",
            r->op_energy ? "       uJ" : "");
    for (size_t i = 0; i < r->nops; i++) {
        const rop *o = &r->ops[i];
        fprintf(f, "  %-28s %6s %8" PRIu64 " %14" PRIu64 " %14" PRIu64, o->name, o->on_npu ? "npu" : "host", o->count,
                o->cycles, o->macs);
        if (o->on_npu && r->peak) fprintf(f, " %7.1f%%", util(r, o->macs, o->cycles));
        else if (r->op_energy) fprintf(f, " %8s", "-");
        if (r->op_energy && o->on_npu) fprintf(f, " %8.2f", o->energy_pj / 1e6);
        fputc('\n', f);
    }
    char tb[32];
    if (!r->host_only) {
        fprintf(f, "  total device cycles        %" PRIu64 " (%s at %.1f MHz)\n", cyc, fmt_time(tb, sizeof tb, secs),
                (double)r->hz / 1e6);
        fprintf(f, "  device MACs                %" PRIu64 "\n", macs);
        if (cpu_macs)
            fprintf(f, "  CPU MACs                   %" PRIu64 " (host operators: not in utilization or TOPS)\n",
                    cpu_macs);
        if (r->peak)
            fprintf(f, "  array utilization          %.2f%% of %" PRIu64 " MAC/cycle\n", util(r, macs, cyc), r->peak);
        fprintf(f, "  derived TOPS               %.6f (macs * 2 / (cycles / hz) / 1e12)\n", tops(macs, cyc, r->hz));
        fprintf(f, "  inference time (modeled)   %s\n", fmt_time(tb, sizeof tb, secs));
        if (r->has_energy) {
            efig e = energy_figs(r, macs, secs);
            const npk_energy *x = &r->energy;
            fprintf(f, "  device energy (modeled)    %.3f uJ (MAC %.3f, registers %.3f, SRAM %.3f, accumulator %.3f, DRAM "
                       "%.3f, DMA %.3f, MMIO %.3f, leakage %.3f; docs/energy.md)\n",
                    e.uj, x->compute_pj / 1e6, x->reg_pj / 1e6, x->sram_pj / 1e6, x->acc_pj / 1e6, x->dram_pj / 1e6,
                    x->dma_pj / 1e6, x->mmio_pj / 1e6, x->leak_pj / 1e6);
            fprintf(f, "  average power              %.4f W\n", e.watts);
            fprintf(f, "  TOPS/W                     %.4f\n", e.tops_w);
            fprintf(f, "  energy-delay product       %.6g uJ x ms\n", e.edp);
            fprintf(f, "  area (modeled)             %.4f mm2 at %u nm (array %.4f, SRAM %.4f, fixed logic %.4f)\n",
                    npk_area_total_mm2(&r->area), r->tech_nm, r->area.array_mm2, r->area.sram_mm2, r->area.fixed_mm2);
        }
    }
    fprintf(f, "  operators on npu / host    %zu / %zu\n", npu_ops, host_ops);
    for (size_t i = 0; i < r->nmems; i++)
        fprintf(f, "  bytes %-8s read %" PRIu64 ", written %" PRIu64 "\n", r->mems[i].name, r->mems[i].rd, r->mems[i].wr);
    if (r->tokens) {
        fprintf(f, "  tokens                     %" PRIu64 "\n", r->tokens);
        if (!r->host_only)
            fprintf(f, "  modeled tokens/s           %.2f (%.3f ms/token)\n", secs > 0 ? (double)r->tokens / secs : 0.0,
                    secs * 1e3 / (double)r->tokens);
        if (r->has_energy && !r->host_only)
            fprintf(f, "  energy per token (modeled) %.3f uJ\n", npk_energy_total_pj(&r->energy) / 1e6 / (double)r->tokens);
        if (r->host_s > 0)
            fprintf(f, "  host %s tokens/s   %.2f (%.3f ms/token)\n", r->host_only ? "wall-clock" : "simulation",
                    (double)r->tokens / r->host_s, r->host_s * 1e3 / (double)r->tokens);
    }
    if (r->host_s > 0) fprintf(f, "  host wall time             %s\n", fmt_time(tb, sizeof tb, r->host_s));
    for (size_t i = 0; i < r->nnotes; i++) fprintf(f, "  %-26s %s\n", r->notes[i].key, r->notes[i].val);
}

int npk_report_write_json(const npk_report *r, FILE *f) {
    uint64_t cyc = npk_report_cycles(r), macs = macs_where(r, 1), cpu_macs = macs_where(r, 0);
    double secs = (double)cyc / (double)r->hz;
    fprintf(f, "{\"name\":");
    npk_json_fputs(f, r->name);
    fprintf(f, ",\"device\":");
    npk_json_fputs(f, r->device);
    fprintf(f, ",\"clock_hz\":%" PRIu64 ",\"peak_macs_per_cycle\":%" PRIu64 ",\"operators\":[", r->host_only ? 0 : r->hz,
            r->peak);
    size_t npu_ops = 0, host_ops = 0;
    for (size_t i = 0; i < r->nops; i++) {
        const rop *o = &r->ops[i];
        if (o->on_npu) npu_ops += o->count;
        else host_ops += o->count;
        fprintf(f, "%s{\"name\":", i ? "," : "");
        npk_json_fputs(f, o->name);
        fprintf(f, ",\"where\":\"%s\",\"count\":%" PRIu64 ",\"cycles\":%" PRIu64 ",\"macs\":%" PRIu64
                   ",\"utilization\":%.6f",
                o->on_npu ? "npu" : "host", o->count, o->cycles, o->macs, util(r, o->macs, o->cycles) / 100.0);
        if (r->op_energy && o->on_npu) fprintf(f, ",\"energy_uj\":%.6f", o->energy_pj / 1e6);
        fputc('}', f);
    }
    /* total_macs = device + CPU; utilization and tops count device_macs only */
    fprintf(f, "],\"total_cycles\":%" PRIu64 ",\"total_macs\":%" PRIu64 ",\"device_macs\":%" PRIu64
               ",\"cpu_macs\":%" PRIu64 ",\"utilization\":%.6f,\"tops\":%.9f,"
               "\"inference_ms\":%.6f,\"npu_operators\":%zu,\"host_operators\":%zu,\"memory\":{",
            cyc, macs + cpu_macs, macs, cpu_macs, util(r, macs, cyc) / 100.0, tops(macs, cyc, r->hz), secs * 1e3, npu_ops,
            host_ops);
    for (size_t i = 0; i < r->nmems; i++) {
        fprintf(f, "%s", i ? "," : "");
        npk_json_fputs(f, r->mems[i].name);
        fprintf(f, ":{\"read_bytes\":%" PRIu64 ",\"written_bytes\":%" PRIu64 "}", r->mems[i].rd, r->mems[i].wr);
    }
    fprintf(f, "},\"host_seconds\":%.6f", r->host_s);
    if (r->has_energy && !r->host_only) {
        efig e = energy_figs(r, macs, secs);
        const npk_energy *x = &r->energy;
        fprintf(f, ",\"energy_uj\":%.6f,\"energy_breakdown_uj\":{\"compute\":%.6f,\"registers\":%.6f,\"sram\":%.6f,"
                   "\"accumulator\":%.6f,\"dram\":%.6f,\"dma\":%.6f,\"mmio\":%.6f,\"leakage\":%.6f},"
                   "\"avg_power_w\":%.9f,\"tops_per_w\":%.9f,\"edp_uj_ms\":%.9g,\"area_mm2\":%.6f,"
                   "\"area_breakdown_mm2\":{\"array\":%.6f,\"sram\":%.6f,\"fixed\":%.6f},\"tech_nm\":%u",
                e.uj, x->compute_pj / 1e6, x->reg_pj / 1e6, x->sram_pj / 1e6, x->acc_pj / 1e6, x->dram_pj / 1e6,
                x->dma_pj / 1e6, x->mmio_pj / 1e6, x->leak_pj / 1e6, e.watts, e.tops_w, e.edp,
                npk_area_total_mm2(&r->area), r->area.array_mm2, r->area.sram_mm2, r->area.fixed_mm2, r->tech_nm);
        if (r->tokens) fprintf(f, ",\"energy_per_token_uj\":%.6f", e.uj / (double)r->tokens);
    }
    if (r->tokens) {
        /* modeled on the device clock; a host-only run uses its wall time */
        double ts = r->host_only ? r->host_s : secs;
        fprintf(f, ",\"tokens\":%" PRIu64 ",\"tokens_per_s\":%.6f,\"ms_per_token\":%.6f", r->tokens,
                ts > 0 ? (double)r->tokens / ts : 0.0, ts * 1e3 / (double)r->tokens);
        if (r->host_s > 0)
            fprintf(f, ",\"host_tokens_per_s\":%.6f", (double)r->tokens / r->host_s);
    }
    fprintf(f, ",\"notes\":{");
    for (size_t i = 0; i < r->nnotes; i++) {
        fprintf(f, "%s", i ? "," : "");
        npk_json_fputs(f, r->notes[i].key);
        fputc(':', f);
        npk_json_fputs(f, r->notes[i].val);
    }
    fprintf(f, "}}\n");
    return ferror(f) ? npk_err(NPK_EIO, "writing the JSON report failed") : 0;
}

static int report_writer(const void *r, FILE *f) { return npk_report_write_json(r, f); }

int npk_report_write_json_file(const npk_report *r, const char *path) {
    return npk_write_file(path, "report", report_writer, r);
}
