// SPDX-License-Identifier: MIT
/* Partition and performance reports of a graph run (text and JSON). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "npukit/graph.h"
#include "npukit/report.h"
#include "npukit/strbuf.h"

#include <stdlib.h>

static const char *place_name(int p) { return p == NPK_PLACE_DEVICE ? "device" : p == NPK_PLACE_FUSED ? "fused" : "cpu"; }

/* A device node's array utilization in percent: its MACs over its cycles x peak. */
static double node_util(const npk_run_report *r, const npk_node_report *n) {
    return 100.0 * (double)n->macs / ((double)n->cycles * (double)r->peak_macs_per_cycle);
}

const char *npk_engine_bound(const npk_engine_figures *f) {
    return f->compute_cycles >= f->dma_cycles ? "compute" : "memory";
}

/* Bytes in a short human form (B, KiB, MiB, GiB with one decimal). */
static void human(char *buf, size_t n, uint64_t v) {
    if (v < 1024) snprintf(buf, n, "%" PRIu64, v);
    else if (v < 1024 * 1024) snprintf(buf, n, "%.1fK", (double)v / 1024);
    else if (v < 1024ull * 1024 * 1024) snprintf(buf, n, "%.1fM", (double)v / (1024 * 1024));
    else snprintf(buf, n, "%.1fG", (double)v / (1024.0 * 1024 * 1024));
}

void npk_run_report_print(const npk_run_report *r, FILE *f) {
    size_t ndev = 0, ncpu = 0, nfused = 0;
    for (size_t i = 0; i < r->n_nodes; i++) {
        if (r->nodes[i].place == NPK_PLACE_DEVICE) ndev++;
        else if (r->nodes[i].place == NPK_PLACE_FUSED) nfused++;
        else ncpu++;
    }
    fprintf(f, "partition (device %s): %zu nodes on the device, %zu fused into device nodes, %zu on the CPU\n", r->device,
            ndev, nfused, ncpu);
    if (r->note[0]) fprintf(f, "  note: %s\n", r->note);
    int eng = 0;
    npk_engine_figures tot = {0};
    size_t nbound[2] = {0, 0};
    for (size_t i = 0; i < r->n_nodes; i++)
        if (r->nodes[i].has_engines) eng = 1;
    fprintf(f, "  %-4s %-24s %-20s %-7s %-22s %12s %12s %6s", "#", "node", "op", "where", "device op", "MACs", "cycles", "util%");
    if (eng) fprintf(f, " %8s %8s %8s %8s %-7s", "DRAM rd", "DRAM wr", "spad", "acc", "bound");
    if (r->has_energy) fprintf(f, " %9s", "uJ");
    fprintf(f, " %10s  %s\n", "host ms", "why");
    for (size_t i = 0; i < r->n_nodes; i++) {
        const npk_node_report *n = &r->nodes[i];
        char util[16] = "-";
        if (n->place == NPK_PLACE_DEVICE && n->cycles && r->peak_macs_per_cycle)
            snprintf(util, sizeof util, "%.1f", node_util(r, n));
        fprintf(f, "  %-4zu %-24.24s %-20.20s %-7s %-22.22s %12" PRIu64 " %12" PRIu64 " %6s", i, n->name, n->op,
                place_name(n->place), n->device_op[0] ? n->device_op : "-", n->macs, n->cycles, util);
        if (eng && n->has_engines) {
            char b[4][16];
            const npk_engine_figures *e = &n->engines;
            human(b[0], sizeof b[0], e->dram_rd), human(b[1], sizeof b[1], e->dram_wr);
            human(b[2], sizeof b[2], e->spad), human(b[3], sizeof b[3], e->acc);
            fprintf(f, " %8s %8s %8s %8s %-7s", b[0], b[1], b[2], b[3], npk_engine_bound(e));
            tot.dram_rd += e->dram_rd, tot.dram_wr += e->dram_wr, tot.spad += e->spad, tot.acc += e->acc;
            nbound[!strcmp(npk_engine_bound(e), "memory")]++;
        } else if (eng) {
            fprintf(f, " %8s %8s %8s %8s %-7s", "-", "-", "-", "-", "-");
        }
        if (r->has_energy && n->has_energy) fprintf(f, " %9.3f", n->energy_pj / 1e6);
        else if (r->has_energy) fprintf(f, " %9s", "-");
        fprintf(f, " %10.3f  %s\n", n->host_ms, n->why);
    }
    fprintf(f, "performance:\n");
    if (strcmp(r->device, "cpu") && r->device_hz) {
        double us = (double)r->device_cycles * 1e6 / (double)r->device_hz;
        fprintf(f, "  %s: %" PRIu64 " simulated cycles (%.1f us at %.0f MHz)", r->device, r->device_cycles, us,
                (double)r->device_hz / 1e6);
        if (r->device_busy_cycles) fprintf(f, ", busy %" PRIu64 " cycles (PERF counter)", r->device_busy_cycles);
        fprintf(f, "\n  device MACs %" PRIu64, r->device_macs);
        if (r->peak_macs_per_cycle && r->device_cycles) {
            uint64_t base = r->device_busy_cycles ? r->device_busy_cycles : r->device_cycles;
            fprintf(f, ", utilization %.1f%% of %" PRIu64 " MACs/cycle peak%s", 100.0 * (double)r->device_macs /
                    ((double)base * (double)r->peak_macs_per_cycle), r->peak_macs_per_cycle,
                    r->device_busy_cycles ? " over busy cycles" : "");
        }
        if (eng)
            fprintf(f, "\n  bytes moved (timing model): DRAM read %" PRIu64 ", DRAM written %" PRIu64 ", scratchpad %" PRIu64
                       ", accumulator %" PRIu64 "; device nodes compute-bound %zu, memory-bound %zu",
                    tot.dram_rd, tot.dram_wr, tot.spad, tot.acc, nbound[0], nbound[1]);
        if (r->has_energy) {
            double uj = npk_energy_total_pj(&r->energy) / 1e6, s = (double)r->device_cycles / (double)r->device_hz;
            fprintf(f, "\n  energy (modeled, docs/energy.md): %.3f uJ, average power %.4f W, %.4f TOPS/W, EDP %.6g uJ x ms; "
                       "area %.4f mm2 at %u nm",
                    uj, s > 0 ? uj * 1e-6 / s : 0.0, uj > 0 ? (double)r->device_macs * 2.0 / (uj * 1e-6) / 1e12 : 0.0,
                    uj * s * 1e3, npk_area_total_mm2(&r->area), r->tech_nm);
        }
        fprintf(f, "\n  guest memory: %" PRIu64 " bytes planned (%" PRIu64 " without reuse), staged in %" PRIu64
                " bytes, out %" PRIu64 " bytes\n", r->guest_bytes, r->guest_naive_bytes, r->staged_in_bytes, r->staged_out_bytes);
    }
    fprintf(f, "  cpu: %" PRIu64 " MACs\n", r->cpu_macs);
    fprintf(f, "  host time: %.3f ms\n", r->host_ms);
}

int npk_run_report_write_json(const npk_run_report *r, FILE *f) {
    fprintf(f, "{\"device\":");
    npk_json_fputs(f, r->device);
    fprintf(f, ",\"note\":");
    npk_json_fputs(f, r->note);
    fprintf(f, ",\"device_cycles\":%" PRIu64 ",\"device_busy_cycles\":%" PRIu64 ",\"device_hz\":%" PRIu64
               ",\"device_macs\":%" PRIu64 ",\"cpu_macs\":%" PRIu64 ",\"peak_macs_per_cycle\":%" PRIu64
               ",\"guest_bytes\":%" PRIu64 ",\"guest_naive_bytes\":%" PRIu64 ",\"staged_in_bytes\":%" PRIu64
               ",\"staged_out_bytes\":%" PRIu64 ",\"host_ms\":%.3f,\"nodes\":[",
            r->device_cycles, r->device_busy_cycles, r->device_hz, r->device_macs, r->cpu_macs, r->peak_macs_per_cycle,
            r->guest_bytes, r->guest_naive_bytes, r->staged_in_bytes, r->staged_out_bytes, r->host_ms);
    for (size_t i = 0; i < r->n_nodes; i++) {
        const npk_node_report *n = &r->nodes[i];
        fprintf(f, "%s{\"name\":", i ? "," : "");
        npk_json_fputs(f, n->name);
        fprintf(f, ",\"op\":");
        npk_json_fputs(f, n->op);
        fprintf(f, ",\"place\":\"%s\",\"device_op\":", place_name(n->place));
        npk_json_fputs(f, n->device_op);
        fprintf(f, ",\"why\":");
        npk_json_fputs(f, n->why);
        fprintf(f, ",\"macs\":%" PRIu64 ",\"cycles\":%" PRIu64 ",\"host_ms\":%.3f", n->macs, n->cycles, n->host_ms);
        if (n->place == NPK_PLACE_DEVICE && n->cycles && r->peak_macs_per_cycle)
            fprintf(f, ",\"utilization\":%.4f", node_util(r, n) / 100.0);
        if (n->has_energy) fprintf(f, ",\"energy_uj\":%.6f", n->energy_pj / 1e6);
        if (n->has_engines)
            fprintf(f, ",\"bytes\":{\"dram_read\":%" PRIu64 ",\"dram_written\":%" PRIu64 ",\"scratchpad\":%" PRIu64
                       ",\"accumulator\":%" PRIu64 "},\"compute_cycles\":%" PRIu64 ",\"dma_cycles\":%" PRIu64
                       ",\"bound\":\"%s\"",
                    n->engines.dram_rd, n->engines.dram_wr, n->engines.spad, n->engines.acc, n->engines.compute_cycles,
                    n->engines.dma_cycles, npk_engine_bound(&n->engines));
        fprintf(f, "}");
    }
    fprintf(f, "]");
    npk_report *p = NULL;
    if (npk_run_report_perf(r, NULL, &p) == 0) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        if (m) {
            npk_report_write_json(p, m);
            fclose(m);
            while (len && (buf[len - 1] == '\n')) buf[--len] = 0;
            fprintf(f, ",\"performance\":%s", buf);
            free(buf);
        }
        npk_report_free(p);
    }
    fprintf(f, "}\n");
    return ferror(f) ? npk_err(NPK_EIO, "write error on the JSON report") : 0;
}

int npk_run_report_perf(const npk_run_report *r, const char *model, npk_report **out) {
    int dev = strcmp(r->device, "cpu") && r->device_hz;
    npk_report *p = npk_report_new(r->device, dev ? r->device_hz : 0, dev ? r->peak_macs_per_cycle : 0);
    if (!p) return npk_err(NPK_ENOMEM, "out of memory");
    if (model) npk_report_name(p, model);
    size_t fused = 0;
    for (size_t i = 0; i < r->n_nodes; i++) {
        const npk_node_report *n = &r->nodes[i];
        if (n->place == NPK_PLACE_FUSED) {
            fused++;
            continue;
        }
        int on = n->place == NPK_PLACE_DEVICE;
        npk_report_op(p, n->op, on, on ? n->cycles : 0, n->macs);
        if (on && n->has_energy) npk_report_op_energy(p, n->op, 1, n->energy_pj);
    }
    if (dev && r->has_energy) npk_report_energy(p, &r->energy, &r->area, r->tech_nm);
    if (dev) {
        npk_report_total_cycles(p, r->device_cycles);
        npk_report_bytes(p, "guest memory (staged)", r->staged_out_bytes, r->staged_in_bytes);
        npk_report_note(p, "guest memory planned", "%" PRIu64 " bytes (%" PRIu64 " without reuse)", r->guest_bytes,
                        r->guest_naive_bytes);
        if (r->device_busy_cycles) npk_report_note(p, "device busy (PERF)", "%" PRIu64 " cycles", r->device_busy_cycles);
    }
    npk_report_note(p, "MACs on the CPU reference", "%" PRIu64, r->cpu_macs);
    if (fused) npk_report_note(p, "nodes folded into device nodes", "%zu", fused);
    if (r->note[0]) npk_report_note(p, "note", "%.150s", r->note);
    npk_report_host_time(p, r->host_ms / 1e3);
    *out = p;
    return 0;
}
