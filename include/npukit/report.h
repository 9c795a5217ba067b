// SPDX-License-Identifier: MIT
/*
 * Performance reports in the spirit of the Ethos-U compiler's summary:
 * device and clock, per-operator and total cycles, MACs, utilization of the
 * compute array, bytes moved per memory, derived TOPS as the e1 document
 * defines it (macs * 2 / (cycles / hz) / 1e12), inference time, NPU versus
 * host operator counts, and for LLM decode tokens/s and ms/token.
 *
 * A report is filled while a job runs (one npk_report_op per operator or
 * command) and printed as text (npk_report_print) or JSON
 * (npk_report_write_json). Operators with the same name and placement are
 * aggregated.
 */
#ifndef NPUKIT_REPORT_H
#define NPUKIT_REPORT_H

#include "npukit/energy.h"
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npk_report npk_report;

/* device: "e1", ...; hz: its clock; peak_macs_per_cycle: the compute
 * array's MACs per cycle (for utilization; 0 = not reported). */
npk_report *npk_report_new(const char *device, uint64_t hz, uint64_t peak_macs_per_cycle);
void npk_report_free(npk_report *r);
/* What ran (a model, module or file name), printed in the header; NULL = none. */
void npk_report_name(npk_report *r, const char *name);
/* One operator (or command) run. on_npu: 1 device, 0 host CPU. cycles are
 * device cycles (0 for host operators). Bytes per memory: "dram", "sram",
 * "l2", ... (NULL memory names are skipped). */
void npk_report_op(npk_report *r, const char *name, int on_npu, uint64_t cycles, uint64_t macs);
/* The same for `count` runs of one operator with the given totals. */
void npk_report_op_n(npk_report *r, const char *name, int on_npu, uint64_t count, uint64_t cycles, uint64_t macs);
void npk_report_bytes(npk_report *r, const char *memory, uint64_t read_bytes, uint64_t written_bytes);
/* Wall-clock seconds the host spent (simulation + host operators). */
void npk_report_host_time(npk_report *r, double seconds);
/* Total device cycles when they differ from the sum of operator cycles
 * (overlap, idle time); 0 = use the sum. */
void npk_report_total_cycles(npk_report *r, uint64_t cycles);
/* LLM decode: tokens generated (enables tokens/s and ms/token). */
void npk_report_tokens(npk_report *r, uint64_t tokens);
/* Extra key/value lines ("MMIO accesses", "doorbells", ...). */
void npk_report_note(npk_report *r, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Energy (docs/energy.md), for devices with an energy model: the energy an
 * operator cost in pJ (added to its entry; the entry must exist), and the
 * run's device energy by class with the device's area and node. With the
 * run's energy the report prints and writes the energy (uJ), its classes,
 * average power, TOPS/W, the energy-delay product, the area and, with
 * tokens, the energy per token. */
void npk_report_op_energy(npk_report *r, const char *name, int on_npu, double pj);
void npk_report_energy(npk_report *r, const npk_energy *e, const npk_area *a, uint32_t tech_nm);
/* Totals. */
uint64_t npk_report_cycles(const npk_report *r);
uint64_t npk_report_macs(const npk_report *r);

/* The aggregated operators in the order first seen (for pictures: npu --plot):
 * i < npk_report_n_ops(r); returns 0 or NPK_EINVAL. */
size_t npk_report_n_ops(const npk_report *r);
int npk_report_op_get(const npk_report *r, size_t i, const char **name, int *on_npu, uint64_t *count, uint64_t *cycles,
                      uint64_t *macs);
const char *npk_report_device(const npk_report *r);
uint64_t npk_report_peak(const npk_report *r); /* MACs per cycle, 0 = not reported */
uint64_t npk_report_hz(const npk_report *r);   /* 0 for a host-only report */

void npk_report_print(const npk_report *r, FILE *f);
int npk_report_write_json(const npk_report *r, FILE *f);
int npk_report_write_json_file(const npk_report *r, const char *path);

#ifdef __cplusplus
}
#endif
#endif
