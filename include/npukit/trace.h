/*
 * Chrome trace-event / Perfetto JSON traces on the simulated clock.
 *
 * A trace holds processes (one per device, plus "host"), each with its own
 * clock in Hz, and tracks (threads) inside them. Events are recorded in
 * cycles and written as microseconds; the raw cycles go into args. Process
 * and track ids are assigned in order of first use, so the same run always
 * produces the same file.
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
/* Sum of durations (cycles) of complete events on a process/track (track NULL = all). */
uint64_t npk_trace_total_cycles(const npk_trace *t, const char *process, const char *track);
/* Number of events recorded. */
size_t npk_trace_count(const npk_trace *t);
/* Write the JSON document. Returns 0 or -NPK_EIO. */
int npk_trace_write(const npk_trace *t, FILE *f);
int npk_trace_write_file(const npk_trace *t, const char *path);

#ifdef __cplusplus
}
#endif
#endif
