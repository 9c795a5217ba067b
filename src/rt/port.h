/* Internal: the port backend interface (sim, qtest, uio). */
#ifndef NPUKIT_RT_PORT_H
#define NPUKIT_RT_PORT_H

#include "npukit/job.h"
#include "npukit/npu.h"
#include "npukit/sim.h"

typedef struct npk_port_backend {
    const char *kind;
    int (*read32)(npk_port *p, uint32_t off, uint32_t *val);
    int (*write32)(npk_port *p, uint32_t off, uint32_t val);
    int (*write64)(npk_port *p, uint32_t off, uint64_t val); /* NULL: two 32-bit writes, low first */
    int (*mem_read)(npk_port *p, uint64_t addr, void *buf, size_t len);
    int (*mem_write)(npk_port *p, uint64_t addr, const void *buf, size_t len);
    int (*wait)(npk_port *p, uint64_t cycles);
    int (*irq)(npk_port *p, int line);
    void (*close)(npk_port *p);
} npk_port_backend;

typedef struct npk_alloc_block {
    uint64_t addr, size;
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
    /* guest memory arena for npk_port_alloc */
    uint64_t arena_base, arena_size;
    npk_alloc_block *blocks; /* live allocations, sorted by address */
};

/* Backend constructors: fill p->be and p->impl. */
int npk_port_open_sim(npk_port *p, const char *opts);
int npk_port_open_qtest(npk_port *p, const char *target, const char *opts);
int npk_port_open_uio(npk_port *p, const char *target);

#endif
