// SPDX-License-Identifier: MIT
/* Internal: the port-level job hook. A port whose device is owned by a kernel driver (kmd:,
 * kmod/npukit.ko) takes a whole job, a v0 descriptor batch, a shell ring batch, an e1 ring or
 * a pccx instruction stream, already written to guest memory, and the kernel rings the
 * doorbell, waits (interrupt or polling), recovers and hands v0's CPU-fallback descriptors
 * to user space. Drivers use it when npk_port_jobs() says the port offers it; the ports
 * without it (sim, qtest, uio) leave the rows' members NULL and the drivers program the
 * device through registers. docs/ports.md, docs/kmod.md. */
#ifndef NPUKIT_RT_PORT_SUBMIT_H
#define NPUKIT_RT_PORT_SUBMIT_H

#include <stdint.h>

#include "npukit/job.h"
#include "npukit/npu.h"

typedef enum {
    NPK_PJOB_E1_RING = 1,     /* e1 descriptor ring of 8 x 16 bytes */
    NPK_PJOB_V0_DESC = 2,     /* v0 descriptors on a ring of 64-byte slots */
    NPK_PJOB_SHELL_RING = 3,  /* shell command-queue bytes */
    NPK_PJOB_PCCX_STREAM = 4, /* pccx 64-bit instructions */
} npk_pjob_format;

#define NPK_PJOB_F_FALLBACK 0x1u /* v0: CTRL.cpu_fallback_select; a stopped descriptor comes back */

typedef struct npk_pjob {
    npk_pjob_format format;
    uint64_t addr;     /* guest address of the ring (e1, v0, shell) or of the first instruction */
    uint32_t count;    /* descriptors, bytes of commands (shell) or instructions */
    uint32_t ring_len; /* v0 entries, shell bytes; e1, pccx 0 */
    uint32_t first;    /* ring index (e1, v0) or byte offset (shell) of the first descriptor */
    uint32_t flags;    /* NPK_PJOB_* */
    uint64_t window_addr, window_size; /* v0 TENSOR_MEM */
} npk_pjob;

typedef enum {
    NPK_PJOB_OK = 0,       /* every descriptor or instruction retired; the job ended */
    NPK_PJOB_ERROR = 1,    /* the device latched code; the job ended (the kernel recovered) */
    NPK_PJOB_TIMEOUT = 2,  /* no completion in time; the kernel soft-reset the device */
    NPK_PJOB_FALLBACK = 3, /* v0: descriptor index needs the CPU (desc); the job goes on */
    NPK_PJOB_BUSY = 4,     /* npk_port_job_check: the job goes on */
} npk_pjob_result;

typedef struct npk_pjob_state {
    npk_pjob_result result;
    uint32_t code;      /* the device's error code (ERROR) */
    uint32_t index;     /* the failing or stopped descriptor / instruction */
    uint32_t progress;  /* v0, e1: DESC_TAIL; shell: CQ_HEAD; pccx: instructions queued so far */
    int recovered;      /* the kernel soft-reset the device */
    uint64_t fault_addr;
    uint64_t eta;       /* pccx, BUSY: IDLE_ETA */
    uint8_t desc[64];   /* FALLBACK: the descriptor */
} npk_pjob_state;

/* 0: the port has no job hook (the drivers program the device through registers);
 * 1: jobs go through the port and its clock is the caller's (a stepped simulated device:
 *    poll with npk_port_job_check and advance time with npk_port_wait, as over sim);
 * 2: jobs go through the port and the kernel waits (npk_port_job_wait). */
int npk_port_jobs(npk_port *p);
int npk_port_job_submit(npk_port *p, const npk_pjob *j);
/* One look at the running job: never waits, never resets (result BUSY while it runs). */
int npk_port_job_check(npk_port *p, npk_pjob_state *s);
/* Until the job ends, stops for the CPU, or timeout_ns passes (TIMEOUT, the device reset). */
int npk_port_job_wait(npk_port *p, uint64_t timeout_ns, npk_pjob_state *s);
/* v0: the CPU executed descriptor index (after FALLBACK); the device goes on. */
int npk_port_job_fallback_done(npk_port *p, uint32_t index);

/* A driver's reading of one report of its job (pl NULL when the kernel waits): NPK_POLL_DONE
 * (the job ended well), NPK_POLL_PROGRESS (it goes on: look again at once), NPK_POLL_BUSY (pl's
 * next wait, pl->hint if set) or a negative error (the job ended badly). */
typedef int (*npk_pjob_state_fn)(void *ctx, const npk_pjob_state *s, npk_poll *pl);
/* Until the running job ends: when the port's clock is the caller's (npk_port_jobs 1), looked at
 * between npk_port_wait steps with pl's schedule, exactly as a driver polls registers over sim
 * (pl->expired: the budget ran out, the job still runs); else the kernel waits, at most
 * pl->budget cycles of the device's clock. 0 or the error state returned. */
int npk_port_job_until(npk_port *p, npk_poll *pl, npk_pjob_state_fn state, void *ctx);

#endif
