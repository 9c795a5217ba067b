// SPDX-License-Identifier: MIT
/*
 * Chrome trace-event / Perfetto JSON traces on the simulated clock.
 *
 * A trace holds processes (one per device, plus "host"), each with its own
 * clock in Hz, and tracks (threads) inside them. Events are recorded in
 * cycles and written as microseconds; the raw cycles go into args. Process
 * and track ids are assigned in order of first use, so the same run always
 * produces the same file.
 *
 * Conventions (docs/performance.md):
 *  - device processes are named after the device class ("e1", "v0", ...);
 *    their tracks are engines or queues: "descriptor" / "queue" (one event
 *    per descriptor or instruction), "desc fetch", "dma", "gemm" / "array",
 *    "vector" / "sfu", "datapath"; each event's args carry its fields, and
 *    "macs" where the engine multiplies;
 *  - counters ("ph":"C") carry queue depth and bandwidth (bytes/cycle);
 *  - the "host" process holds the driver and lowering steps, timed on the
 *    device's simulated clock as the host saw it through its port
 *    (npk_port_cycles), never on the wall clock, so traces are deterministic.
 */
#ifndef NPUKIT_TRACE_H
#define NPUKIT_TRACE_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npk_trace npk_trace;

npk_trace *npk_trace_new(void);
void npk_trace_free(npk_trace *t);
/* Declare (or look up) a process and its clock. Returns its id. */
int npk_trace_process(npk_trace *t, const char *name, uint64_t hz);
/* A complete ("ph":"X") event. args_json is the inside of the args object
 * without braces (e.g. "\"opcode\":8,\"macs\":12") or NULL; "cycles" and
 * "start_cycle" are added automatically. */
void npk_trace_complete(npk_trace *t, const char *process, const char *track, const char *name,
                        uint64_t start_cycle, uint64_t dur_cycles, const char *args_json);
/* A counter ("ph":"C") sample. */
void npk_trace_counter(npk_trace *t, const char *process, const char *name, uint64_t cycle,
                       double value);
/* Events recorded from now on start `cycles` later than the cycle they give
 * (0 by default): several runs, each with its clock starting at 0, laid one
 * after another on one timeline (npu onnx-test --trace). */
void npk_trace_set_offset(npk_trace *t, uint64_t cycles);
/* Sum of durations (cycles) of complete events on a process/track (track NULL = all). */
uint64_t npk_trace_total_cycles(const npk_trace *t, const char *process, const char *track);
/* Number of events recorded. */
size_t npk_trace_count(const npk_trace *t);
/* Number of complete events on a process/track (track NULL = all tracks). */
size_t npk_trace_events(const npk_trace *t, const char *process, const char *track);
/* Sum of the integer arg `key` (e.g. "macs", "bytes") over the complete
 * events of a process/track (track NULL = all tracks); events without it
 * count 0. */
uint64_t npk_trace_sum_arg(const npk_trace *t, const char *process, const char *track, const char *key);
/* Call fn for every complete event of a process, in recording order: its
 * track, name, start, duration and its "macs" argument (0 without one). */
typedef void (*npk_trace_event_fn)(void *ctx, const char *track, const char *name, uint64_t start, uint64_t dur,
                                   uint64_t macs);
void npk_trace_each(const npk_trace *t, const char *process, npk_trace_event_fn fn, void *ctx);
/* The i-th complete event (in recording order) of a process/track: its start
 * cycle and duration. Returns 0, or -1 when there are not that many. */
int npk_trace_event_at(const npk_trace *t, const char *process, const char *track, size_t i, uint64_t *start,
                       uint64_t *dur);
/* Cycles during which an event of track a and an event of track b of the same
 * process are both in progress (the intersection of the two tracks' busy
 * unions): how much two engines overlapped. */
uint64_t npk_trace_overlap_cycles(const npk_trace *t, const char *process, const char *track_a, const char *track_b);
/* Write the JSON document. Returns 0 or -NPK_EIO. */
int npk_trace_write(const npk_trace *t, FILE *f);
int npk_trace_write_file(const npk_trace *t, const char *path);

/* ---- traces on a port ----------------------------------------------------
 * A port can carry a trace: npk_port_set_trace declares the device process
 * (the port's device name and clock) and the "host" process (same clock),
 * and on a sim port attaches the trace to the in-process model so it emits
 * its engine events. On other ports only host events are recorded. The
 * trace stays the caller's; pass NULL to detach (do so before freeing it). */
struct npk_port;
void npk_port_set_trace(struct npk_port *p, npk_trace *t);
/* The trace attached to the port, or NULL. */
npk_trace *npk_port_trace(const struct npk_port *p);
/* A host event on track `track` of the "host" process, from start_cycle
 * (an earlier npk_port_cycles value) to the port's current cycle count.
 * No-op without a trace. args_json as for npk_trace_complete. */
void npk_port_trace_host(struct npk_port *p, const char *track, const char *name, uint64_t start_cycle,
                         const char *args_json);

#ifdef __cplusplus
}
#endif
#endif
