// SPDX-License-Identifier: MIT
/* Internal: the port table's row type and the port state every backend shares.
 *
 * Each port backend (sim, qtest, uio, ...) is one row of the port table:
 * `const npk_port_backend npk_<name>_port`, defined beside its code in
 * src/rt/port_<name>.c and listed once in src/rt/ports.def. src/rt/port.c
 * (the generic port API, the guest-buffer allocator) reaches the backends only
 * through the table (src/rt/ports.c) and never names one; a backend uses only
 * this header's inline helpers, never a function of port.c. docs/architecture.md,
 * "How to add a port". */
#ifndef NPUKIT_RT_PORT_H
#define NPUKIT_RT_PORT_H

#include <errno.h>
#include <time.h>

#include "npukit/job.h"
#include "npukit/npu.h"
#include "npukit/sim.h"
#include "rt/port_submit.h"

typedef struct npk_port_backend {
    npk_port_info info; /* name (npk_port_kind), spec syntax, one line of help (npu ports) */
    /* Specs this row takes: an entry ending in ':' is a prefix ("qtest:" takes
     * "qtest:PATH"), any other must equal the spec ("sim"). The first row of
     * ports.def is also the port of an empty or NULL spec. */
    const char *schemes[4];
    /* Fill p->impl (p->be is already this row). spec is the whole spec (NULL for the
     * default port), arg what follows the matched scheme ("" for an exact match),
     * opts the device options. On failure everything it took is released. */
    int (*open)(npk_port *p, const char *spec, const char *arg, const char *opts);
    int (*read32)(npk_port *p, uint32_t off, uint32_t *val);
    int (*write32)(npk_port *p, uint32_t off, uint32_t val);
    int (*write64)(npk_port *p, uint32_t off, uint64_t val); /* NULL: two 32-bit writes, low first */
    int (*mem_read)(npk_port *p, uint64_t addr, void *buf, size_t len);
    int (*mem_write)(npk_port *p, uint64_t addr, const void *buf, size_t len);
    int (*wait)(npk_port *p, uint64_t cycles);
    int (*irq)(npk_port *p, int line);
    int (*reset)(npk_port *p); /* NULL: the port cannot reset the device */
    void (*close)(npk_port *p);
    /* Optional (NULL: none): the host pointer of guest memory (npk_port_direct); a new
     * allocation of the port's arena (the in-process port backs it with one host buffer);
     * a trace set on the port (the in-process model records its device events in it). */
    void *(*direct)(npk_port *p, uint64_t addr, uint64_t len);
    void (*allocated)(npk_port *p, uint64_t addr, uint64_t size);
    /* Optional (NULL: npk_port_map_host says -NPK_EUNSUPPORTED): back guest memory
     * [addr, addr+size) by the caller's host buffer (zero copy) until unmap_host. */
    int (*map_host)(npk_port *p, uint64_t addr, uint64_t size, void *host);
    void (*unmap_host)(npk_port *p, uint64_t addr);
    void (*set_trace)(npk_port *p, struct npk_trace *t);
    /* Optional (NULL: -NPK_EUNSUPPORTED): npk_port_energy. */
    int (*energy)(npk_port *p, npk_energy *e, npk_area *a, uint32_t *tech_nm);
    /* Optional (NULL: the drivers program the device through registers): the job hook
     * (rt/port_submit.h). jobs says 1 or 2 as npk_port_jobs; check looks once (block 0) or
     * waits up to timeout_ns (block 1). */
    int (*jobs)(npk_port *p);
    int (*job_submit)(npk_port *p, const npk_pjob *j);
    int (*job_check)(npk_port *p, int block, uint64_t timeout_ns, npk_pjob_state *s);
    int (*job_fallback_done)(npk_port *p, uint32_t index);
} npk_port_backend;

typedef struct npk_alloc_block {
    uint64_t addr, size;
    int host; /* npk_port_map_host: backed by the caller's buffer */
    struct npk_alloc_block *next;
} npk_alloc_block;

struct npk_port {
    const npk_port_backend *be;
    const npk_dev_class *cls;
    void *impl;           /* backend state */
    npk_sim *sim;         /* the in-process model (sim ports only) */
    uint64_t cycles;      /* device cycles this port has let pass */
    uint64_t hz;          /* the device instance's clock (sim: the model's clock_mhz; qtest: the
                           * server's npu_info; uio: the class's); 0 = the class's */
    uint64_t mmio_count;
    struct npk_trace *trace; /* npk_port_set_trace (src/rt/port_trace.c); not owned */
    npk_job_hooks hooks[NPK_JOB_MAX_HOOKS]; /* src/rt/job.c */
    unsigned n_hooks;
    npk_job *job;         /* innermost running job */
    npk_job last_job;     /* the last job that ended */
    int have_last_job;
    /* guest memory arena for npk_port_alloc (a backend may narrow it in open) */
    uint64_t arena_base, arena_size;
    npk_alloc_block *blocks; /* live allocations, sorted by address */
};

/* The device clock in Hz (npk_port_hz): the instance's, else the class's. */
static inline uint64_t npk_port_clock(const npk_port *p) { return p->hz ? p->hz : p->cls->hz; }

/* The wait of a port to real hardware (uio, kmd): sleep cycles / hz seconds. */
static inline int npk_port_sleep(const npk_port *p, uint64_t cycles) {
    uint64_t hz = npk_port_clock(p);
    unsigned __int128 ns = ((unsigned __int128)cycles * 1000000000u + hz - 1) / hz;
    struct timespec ts;
    ts.tv_sec = ns / 1000000000u > (unsigned __int128)INT32_MAX ? INT32_MAX : (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
    return 0;
}

/* The port table (src/rt/ports.c, from src/rt/ports.def), in its order. */
const npk_port_backend *const *npk_port_rows(size_t *n);

#endif
