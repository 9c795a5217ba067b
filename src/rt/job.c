// SPDX-License-Identifier: MIT
/* The driver contract (include/npukit/job.h): jobs, their hooks and the
 * one poll loop every driver waits with. */
#include "npukit/job.h"
#include "port.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *npk_job_result_name(npk_job_result r) {
    switch (r) {
    case NPK_JOB_OK: return "ok";
    case NPK_JOB_ERROR: return "error";
    case NPK_JOB_TIMEOUT: return "timeout";
    }
    return "?";
}

static int same_hooks(const npk_job_hooks *a, const npk_job_hooks *b) {
    return a->begin == b->begin && a->end == b->end && a->ctx == b->ctx;
}

int npk_port_add_job_hooks(npk_port *p, const npk_job_hooks *h) {
    if (!p || !h) return npk_err(NPK_EINVAL, "job hooks: no port or no hooks");
    for (unsigned i = 0; i < p->n_hooks; i++)
        if (same_hooks(&p->hooks[i], h)) return 0;
    if (p->n_hooks == NPK_JOB_MAX_HOOKS)
        return npk_err(NPK_ENOMEM, "job hooks: the port already has %d hook sets", NPK_JOB_MAX_HOOKS);
    p->hooks[p->n_hooks++] = *h;
    return 0;
}

void npk_port_remove_job_hooks(npk_port *p, const npk_job_hooks *h) {
    if (!p || !h) return;
    for (unsigned i = 0; i < p->n_hooks; i++)
        if (same_hooks(&p->hooks[i], h)) {
            memmove(&p->hooks[i], &p->hooks[i + 1], (p->n_hooks - i - 1) * sizeof p->hooks[0]);
            p->n_hooks--;
            return;
        }
}

const npk_job *npk_port_last_job(const npk_port *p) { return p && p->have_last_job ? &p->last_job : NULL; }

void npk_job_begin(npk_job *j, npk_port *p, const char *track, const char *name) {
    /* every member but the args' bytes past the terminator (a string: they are never read) */
    j->port = p, j->track = track, j->name = name, j->state = NPK_JOB_RUNNING, j->result = NPK_JOB_OK;
    j->status = 0, j->dev_code = 0, j->recovered = 0;
    j->start_cycle = npk_port_cycles(p), j->end_cycle = 0, j->hooked = p->n_hooks != 0, j->parent = p->job;
    j->args[0] = 0;
    p->job = j;
    for (unsigned i = 0; i < p->n_hooks; i++)
        if (p->hooks[i].begin) p->hooks[i].begin(p->hooks[i].ctx, j);
}

void npk_job_args(npk_job *j, const char *fmt, ...) {
    if (!j->hooked) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->args, sizeof j->args, fmt, ap);
    va_end(ap);
}

void npk_port_job_code(npk_port *p, uint32_t dev_code) {
    for (npk_job *j = p ? p->job : NULL; j; j = j->parent) j->dev_code = dev_code;
}

void npk_port_job_recovered(npk_port *p) {
    for (npk_job *j = p ? p->job : NULL; j; j = j->parent) j->recovered = 1;
}

int npk_job_end(npk_job *j, int rc) {
    npk_port *p = j->port;
    j->end_cycle = npk_port_cycles(p);
    j->status = rc;
    j->result = !rc ? NPK_JOB_OK : rc == -NPK_ETIMEDOUT ? NPK_JOB_TIMEOUT : NPK_JOB_ERROR;
    j->state = NPK_JOB_DONE;
    p->job = j->parent;
    for (unsigned i = 0; i < p->n_hooks; i++)
        if (p->hooks[i].end) p->hooks[i].end(p->hooks[i].ctx, j);
    /* the last job: its members and the args string (not the 160 bytes behind it) */
    npk_job *l = &p->last_job;
    l->port = j->port, l->track = j->track, l->name = j->name, l->state = j->state, l->result = j->result;
    l->status = j->status, l->dev_code = j->dev_code, l->recovered = j->recovered;
    l->start_cycle = j->start_cycle, l->end_cycle = j->end_cycle, l->hooked = j->hooked, l->parent = NULL;
    if (j->args[0]) snprintf(l->args, sizeof l->args, "%s", j->args);
    else l->args[0] = 0;
    p->have_last_job = 1;
    return rc;
}

int npk_poll_run(npk_port *p, npk_poll *pl, npk_poll_check check, void *ctx) {
    uint64_t step = pl->step ? pl->step : 1;
    int rc;
    if (pl->first) {
        if ((rc = npk_port_wait(p, pl->first))) return npk_err_prefix(rc, "%s", pl->what ? pl->what : "waiting");
        pl->waited += pl->first;
        pl->idle += pl->first;
    }
    for (;;) {
        pl->hint = 0;
        int r = check(ctx, pl);
        if (r < 0) return r;
        if (r == NPK_POLL_DONE) return 0;
        if (r == NPK_POLL_PROGRESS) {
            pl->idle = 0;
            step = pl->step ? pl->step : 1;
            continue;
        }
        if (pl->idle >= pl->budget) {
            pl->expired = 1;
            return -NPK_ETIMEDOUT;
        }
        /* sleep: one step, or with woken() until a line rises (at most 16 steps) */
        for (int i = 0; i < 16; i++) {
            uint64_t n = pl->hint ? pl->hint : step;
            if (pl->clamp && n > pl->budget - pl->idle) n = pl->budget - pl->idle;
            if ((rc = npk_port_wait(p, n))) return npk_err_prefix(rc, "%s", pl->what ? pl->what : "waiting");
            pl->waited += n;
            pl->idle += n;
            if (!pl->hint && step < pl->max_step) step *= 2;
            if (!pl->woken || pl->woken(ctx) || pl->idle >= pl->budget) break;
        }
    }
}

int npk_drv_read32(npk_port *p, const char *dev, uint32_t off, uint32_t *v) {
    int rc = npk_port_read32(p, off, v);
    return rc ? npk_err_prefix(rc, "%s: reading register 0x%02x", dev, off) : 0;
}

int npk_drv_write32(npk_port *p, const char *dev, uint32_t off, uint32_t v) {
    int rc = npk_port_write32(p, off, v);
    return rc ? npk_err_prefix(rc, "%s: writing register 0x%02x", dev, off) : 0;
}

/* ---- jobs through the port (rt/port_submit.h) ---- */

typedef struct job_poll {
    npk_port *p;
    npk_pjob_state_fn state;
    void *ctx;
} job_poll;

static int job_look(void *ctx, npk_poll *pl) {
    job_poll *q = ctx;
    npk_pjob_state s;
    int rc = npk_port_job_check(q->p, &s);
    return rc ? rc : q->state(q->ctx, &s, pl);
}

int npk_port_job_until(npk_port *p, npk_poll *pl, npk_pjob_state_fn state, void *ctx) {
    if (npk_port_jobs(p) != 1) {
        uint64_t ns = (uint64_t)((double)pl->budget * 1e9 / (double)npk_port_hz(p));
        for (;;) {
            npk_pjob_state s;
            int rc = npk_port_job_wait(p, ns, &s);
            if (!rc) rc = state(ctx, &s, NULL);
            if (rc < 0 || rc == NPK_POLL_DONE) return rc < 0 ? rc : 0;
        }
    }
    job_poll q = {p, state, ctx};
    return npk_poll_run(p, pl, job_look, &q);
}
