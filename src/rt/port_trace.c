// SPDX-License-Identifier: MIT
/* Traces on a port: the device process, the "host" process and host events
 * on the simulated clock the host sees through the port. */
#include "npukit/trace.h"
#include "port.h"

#include <stdio.h>

/* The tracing job hook: one "host" event per job, its args and its status. */
static void trace_job_end(void *ctx, const npk_job *j) {
    npk_port *p = ctx;
    if (!p->trace) return;
    char args[NPK_JOB_ARGS_MAX + 24];
    snprintf(args, sizeof args, "%s%s\"status\":%d", j->args, j->args[0] ? "," : "", j->status);
    npk_port_trace_host(p, j->track, j->name, j->start_cycle, args);
}

void npk_port_set_trace(npk_port *p, npk_trace *t) {
    if (!p) return;
    p->trace = t;
    npk_job_hooks h = {NULL, trace_job_end, p};
    if (t) npk_port_add_job_hooks(p, &h);
    else npk_port_remove_job_hooks(p, &h);
    if (t) {
        /* the device first, then the host: process ids in a fixed order */
        npk_trace_process(t, p->cls->name, npk_port_clock(p));
        npk_trace_process(t, "host", npk_port_clock(p));
    }
    if (p->be->set_trace) p->be->set_trace(p, t);
}

npk_trace *npk_port_trace(const npk_port *p) { return p ? p->trace : NULL; }

void npk_port_trace_host(npk_port *p, const char *track, const char *name, uint64_t start_cycle,
                         const char *args_json) {
    if (!p || !p->trace) return;
    uint64_t now = p->cycles;
    npk_trace_complete(p->trace, "host", track, name, start_cycle, now >= start_cycle ? now - start_cycle : 0,
                       args_json);
}
