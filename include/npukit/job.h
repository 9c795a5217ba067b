// SPDX-License-Identifier: MIT
/*
 * The driver contract shared by the four npukit drivers (e1, v0, shell,
 * pccx): jobs, the wait, recovery and the begin/end hooks.
 *
 * A job is one driver entry point that makes the device work (an e1 GEMM
 * tile, a v0 submit or wait, a shell wait, a pccx sync, a v0 matmul ...).
 * It starts RUNNING and ends DONE with one result:
 *
 *   NPK_JOB_OK        the device finished the work;
 *   NPK_JOB_ERROR     the driver refused the request or the device latched
 *                     an error; dev_code holds the device's own code
 *                     (e1 CTRL_STATUS / DESC_STATUS, v0 err_code, shell
 *                     ERROR_CODE, pccx fault code; 0 when the device was
 *                     not involved);
 *   NPK_JOB_TIMEOUT   the device did not finish within the wait budget.
 *
 * Recovery policy (the same on every device): after a timeout or a hang
 * the driver soft-resets the device before returning -NPK_ETIMEDOUT, so
 * the next job (and the next open) finds it usable: e1 drains the engine
 * (its descriptor engine ends every stall within 128 cycles) and clears
 * CTRL_STATUS, v0 flushes the ring (CTRL.flush) and re-arms it, shell
 * writes CONTROL.RESET and programs the ring again, pccx writes
 * CTRL.RESET and programs its windows again. Work still queued is
 * dropped (v0 reports it to its callback as dropped). A device error
 * (NPK_JOB_ERROR) is cleared the way each device documents (clear,
 * W1C, flush) without a reset.
 *
 * Waiting: every driver polls through npk_poll_run: one loop with a first
 * wait of the expected latency, then growing steps (or the device's own
 * estimate), an optional sleep until an interrupt line rises, and a
 * budget of cycles without progress.
 *
 * Hooks: begin/end callbacks on a port see every job; tracing is one of
 * them (npk_port_set_trace installs it: the "host" process event with
 * the job's args and its status).
 */
#ifndef NPUKIT_JOB_H
#define NPUKIT_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/npu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum npk_job_state { NPK_JOB_IDLE = 0, NPK_JOB_RUNNING = 1, NPK_JOB_DONE = 2 } npk_job_state;
typedef enum npk_job_result { NPK_JOB_OK = 0, NPK_JOB_ERROR = 1, NPK_JOB_TIMEOUT = 2 } npk_job_result;

#define NPK_JOB_ARGS_MAX 160

typedef struct npk_job {
    npk_port *port;
    const char *track;     /* "runtime", "ops", "cpu fallback" */
    const char *name;      /* "gemm tile", "submit", "sync", ... */
    npk_job_state state;
    npk_job_result result; /* valid when DONE */
    int status;            /* 0 or the negative npk_status returned */
    uint32_t dev_code;     /* device error code for NPK_JOB_ERROR (0: none) */
    int recovered;         /* 1 when the driver soft-reset the device */
    uint64_t start_cycle, end_cycle;
    int hooked;            /* hooks are installed: args are worth formatting */
    char args[NPK_JOB_ARGS_MAX]; /* JSON members describing the job ("\"m\":3,..."), no status */
    struct npk_job *parent; /* the job this one runs inside (a v0 matmul's submit and wait) */
} npk_job;

/* Result name ("ok", "error", "timeout"). */
const char *npk_job_result_name(npk_job_result r);

/* ---- hooks ---------------------------------------------------------------- */

typedef struct npk_job_hooks {
    void (*begin)(void *ctx, const npk_job *j);
    void (*end)(void *ctx, const npk_job *j);
    void *ctx;
} npk_job_hooks;

#define NPK_JOB_MAX_HOOKS 4
/* Add / remove (same begin, end and ctx) a hook set on the port. */
int npk_port_add_job_hooks(npk_port *p, const npk_job_hooks *h);
void npk_port_remove_job_hooks(npk_port *p, const npk_job_hooks *h);
/* The last job that ended on the port (NULL before the first). */
const npk_job *npk_port_last_job(const npk_port *p);

/* ---- the driver side ------------------------------------------------------ */

/* A register access of the driver of device `dev`: a failure's message names the device, the
 * access and the register ("e1: reading register 0x1c: ..."). */
int npk_drv_read32(npk_port *p, const char *dev, uint32_t off, uint32_t *v);
int npk_drv_write32(npk_port *p, const char *dev, uint32_t off, uint32_t v);

/* Start a job: RUNNING, start cycle, begin hooks. */
void npk_job_begin(npk_job *j, npk_port *p, const char *track, const char *name);
/* Describe the job for the hooks (printf into args; skipped when nothing listens). */
void npk_job_args(npk_job *j, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Record on the innermost running job of the port the device's error code,
 * or that the driver soft-reset the device (both also reach the enclosing jobs). */
void npk_port_job_code(npk_port *p, uint32_t dev_code);
void npk_port_job_recovered(npk_port *p);
/* End a job with the driver's return code: DONE, result from rc
 * (-NPK_ETIMEDOUT: timeout, other non-zero: error), end hooks, recorded as
 * the port's last job. Returns rc. */
int npk_job_end(npk_job *j, int rc);

/* ---- the one poll loop ---------------------------------------------------- */

typedef struct npk_poll {
    uint64_t budget;   /* cycles without progress before -NPK_ETIMEDOUT */
    uint64_t first;    /* cycles to wait before the first check (the expected latency) */
    uint64_t step;     /* first backoff step ... */
    uint64_t max_step; /* ... doubling up to this */
    int clamp;         /* never wait past the budget */
    /* optional: between two checks sleep up to 16 steps until woken() says
     * an interrupt line rose (NULL: check after every step) */
    int (*woken)(void *ctx);
    const char *what;  /* names the wait in a transport error */
    /* state, read by check and after the run */
    uint64_t waited;   /* cycles waited in total */
    uint64_t idle;     /* cycles since the last progress */
    uint64_t hint;     /* check may set the device's own estimate of the next wait (0: backoff) */
    int expired;       /* set when the run ended because the budget ran out */
} npk_poll;

/* check() returns NPK_POLL_DONE, NPK_POLL_BUSY, NPK_POLL_PROGRESS (not done,
 * but the device moved: the idle count and the backoff restart and check
 * runs again at once) or a negative npk_status (failure, message set). */
enum { NPK_POLL_BUSY = 0, NPK_POLL_DONE = 1, NPK_POLL_PROGRESS = 2 };
typedef int (*npk_poll_check)(void *ctx, npk_poll *pl);

/* Poll until check says done (0), fails (its code) or pl->budget cycles
 * pass without progress (-NPK_ETIMEDOUT with pl->expired set and no
 * message: the caller writes the message and recovers). Transport failures of the wait come back prefixed with what. */
int npk_poll_run(npk_port *p, npk_poll *pl, npk_poll_check check, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
