// SPDX-License-Identifier: MIT
/* The v0 driver: descriptor ring, doorbell, waiting (IRQ or polling),
 * error decoding and recovery, the CPU fallback handler, high-level ops and
 * routing around the device when CAPS.gemmini_present == 0. Talks to the
 * device only through the port layer: its registers, or, on a port with the
 * job hook (kmd:, rt/port_submit.h), jobs that the kernel starts, watches and
 * recovers (the driver then writes descriptors and reads counters only). */
#include "npukit/npu.h"
#include "npukit/devtab.h"
#include "npukit/trace.h"
#include "npukit/job.h"
#include "npukit/v0_drv.h"
#include "rt/v0_ops.h"
#include "rt/port_submit.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shadow {
    npk_v0_desc d;
    int live;
} shadow;

struct npk_v0 {
    npk_port *port;
    npk_v0_config cfg;
    uint32_t caps;
    uint64_t ring;     /* guest address of the ring */
    uint32_t len;
    uint32_t head;     /* next slot software writes */
    uint32_t tail;     /* slots before this are accounted for */
    unsigned pending;
    shadow *slots;
    npk_v0_done_fn cb;
    void *cb_ctx;
    npk_v0_stats stats;
    struct npk_e1 *e1;
    char route[256];
    int jobs;       /* npk_port_jobs: 0 registers, 1 jobs polled on our clock, 2 the kernel waits */
    int job_active; /* a job of the port runs (jobs) */
};

#define RD(v, off, val)                                            \
    do {                                                           \
        int rc_ = npk_port_read32((v)->port, (off), (val));        \
        if (rc_) return npk_err_prefix(-rc_, "v0: register read"); \
    } while (0)
#define WR(v, off, val)                                             \
    do {                                                            \
        int rc_ = npk_port_write32((v)->port, (off), (val));        \
        if (rc_) return npk_err_prefix(-rc_, "v0: register write"); \
    } while (0)


void npk_v0_config_default(npk_v0_config *c) {
    memset(c, 0, sizeof *c);
    c->ring_len = 64;
    c->use_irq = 0;
    c->cpu_fallback = 1;
    c->timeout_cycles = 1000000000ull;
}

static uint32_t ctrl_value(const npk_v0 *v) {
    return NPK_V0_CTRL_ENABLE | (v->cfg.use_irq ? NPK_V0_CTRL_IRQ_ENABLE : 0) |
           (v->cfg.cpu_fallback ? NPK_V0_CTRL_FALLBACK : 0);
}

/* Program the ring after open or a flush (the device is idle and empty). */
static int arm(npk_v0 *v) {
    WR(v, NPK_V0_REG_CTRL, NPK_V0_CTRL_FLUSH);
    WR(v, NPK_V0_REG_DESC_BASE_LO, (uint32_t)v->ring);
    WR(v, NPK_V0_REG_DESC_BASE_HI, (uint32_t)(v->ring >> 32));
    WR(v, NPK_V0_REG_DESC_RING_LEN, v->len);
    uint32_t got;
    RD(v, NPK_V0_REG_DESC_RING_LEN, &got);
    if (got != v->len) return npk_err(NPK_EDEVICE, "v0: DESC_RING_LEN reads %u after writing %u", got, v->len);
    WR(v, NPK_V0_REG_TENSOR_MEM_BASE_LO, (uint32_t)v->cfg.tensor_mem_base);
    WR(v, NPK_V0_REG_TENSOR_MEM_BASE_HI, (uint32_t)(v->cfg.tensor_mem_base >> 32));
    WR(v, NPK_V0_REG_TENSOR_MEM_LEN, (uint32_t)v->cfg.tensor_mem_len);
    WR(v, NPK_V0_REG_IRQ_MASK, v->cfg.use_irq ? NPK_V0_IRQ_ALL : 0);
    WR(v, NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_ALL);
    WR(v, NPK_V0_REG_CTRL, ctrl_value(v));
    v->head = v->tail = 0;
    return 0;
}

int npk_v0_open(npk_v0 **out, npk_port *port, const npk_v0_config *cfg) {
    *out = NULL;
    npk_v0_config c;
    if (cfg) c = *cfg;
    else npk_v0_config_default(&c);
    if (!c.ring_len) c.ring_len = 64;
    if (!c.timeout_cycles) c.timeout_cycles = 1000000000ull;
    if (c.ring_len < NPK_V0_RING_MIN || c.ring_len > NPK_V0_RING_MAX || (c.ring_len & (c.ring_len - 1)))
        return npk_err(NPK_EINVAL, "v0: ring length %u is not a power of two in 2..256", c.ring_len);
    if (c.tensor_mem_len > UINT32_MAX)
        return npk_err(NPK_EINVAL, "v0: TENSOR_MEM length %llu does not fit the 32-bit register",
                       (unsigned long long)c.tensor_mem_len);
    uint32_t id;
    int rc = npk_port_read32(port, NPK_V0_REG_ID, &id);
    if (rc) return npk_err_prefix(-rc, "v0: reading ID");
    if (id != NPK_V0_ID_VALUE)
        return npk_err(NPK_EDEVICE, "v0: ID reads 0x%08x, expected 0x%08x (\"NPU0\"): not a v0 device", id,
                       NPK_V0_ID_VALUE);
    npk_v0 *v = calloc(1, sizeof *v);
    if (!v) return npk_err(NPK_ENOMEM, "out of memory");
    v->port = port;
    v->cfg = c;
    v->len = c.ring_len;
    v->slots = calloc(v->len, sizeof *v->slots);
    if (!v->slots) {
        free(v);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    rc = npk_port_read32(port, NPK_V0_REG_CAPS, &v->caps);
    v->jobs = npk_port_jobs(port);
    if (!rc) rc = npk_port_alloc(port, (uint64_t)v->len * NPK_V0_DESC_BYTES, NPK_V0_DESC_ALIGN, &v->ring);
    /* jobs: the kernel programs the ring at the first submit; a reset puts DESC_TAIL at 0 */
    if (!rc) rc = v->jobs ? npk_port_reset(port) : arm(v);
    if (rc) {
        free(v->slots);
        free(v);
        return rc;
    }
    *out = v;
    return 0;
}

void npk_v0_close(npk_v0 *v) {
    if (!v) return;
    if (v->jobs) {
        if (v->job_active) npk_port_reset(v->port);
    } else {
        npk_port_write32(v->port, NPK_V0_REG_CTRL, 0);
    }
    npk_port_free(v->port, v->ring);
    free(v->slots);
    free(v);
}

npk_port *npk_v0_port(npk_v0 *v) { return v->port; }
uint32_t npk_v0_caps(const npk_v0 *v) { return v->caps; }
int npk_v0_reaches(const npk_v0 *v, uint64_t addr, uint64_t len) {
    uint64_t b = v->cfg.tensor_mem_base, n = v->cfg.tensor_mem_len;
    return !n || (addr >= b && len <= n && addr - b <= n - len);
}
void npk_v0_set_done_cb(npk_v0 *v, npk_v0_done_fn fn, void *ctx) {
    v->cb = fn;
    v->cb_ctx = ctx;
}
unsigned npk_v0_pending(const npk_v0 *v) { return v->pending; }
const npk_v0_stats *npk_v0_get_stats(const npk_v0 *v) { return &v->stats; }
void npk_v0_set_e1(npk_v0 *v, struct npk_e1 *e1) { v->e1 = e1; }
const char *npk_v0_last_route(const npk_v0 *v) { return v->route; }
struct npk_e1 *npk_v0_route_e1(const npk_v0 *v) { return v->e1; }

void npk_v0_note_route(npk_v0 *v, npk_v0_route how, const char *fmt, ...) {
    if (how == NPK_V0_ROUTE_E1) v->stats.routed_e1++;
    else if (how == NPK_V0_ROUTE_CPU) v->stats.routed_cpu++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->route, sizeof v->route, fmt, ap);
    va_end(ap);
}

/* Account the slot at v->tail and advance. */
static void account(npk_v0 *v, npk_v0_outcome how, int status) {
    shadow *s = &v->slots[v->tail];
    if (s->live) {
        s->live = 0;
        v->pending--;
        if (how == NPK_V0_RETIRED_HW) v->stats.retired_hw++;
        else if (how == NPK_V0_RETIRED_CPU) v->stats.retired_cpu++;
        else v->stats.dropped++;
        if (v->cb) v->cb(v->cb_ctx, s->d.w[NPK_V0_W_TAG], v->tail, how, status);
    }
    v->tail = (v->tail + 1) % v->len;
}

static const char *opname(uint32_t op) {
    const char *n = npk_v0_op_name(op);
    return n ? n : "unknown op";
}

/* The message of a latched error: code, descriptor index, fault address, IRQ_STATUS.bus_error. */
static int describe_error(npk_v0 *v, uint32_t code, uint32_t idx, uint64_t fault, int bus) {
    npk_port_job_code(v->port, code);
    char why[200] = "";
    char what[96] = "";
    if (idx < v->len && v->slots[idx].live) {
        const npk_v0_desc *d = &v->slots[idx].d;
        snprintf(what, sizeof what, " (tag 0x%x, %s)", d->w[NPK_V0_W_TAG], opname(npk_v0_desc_op(d)));
        if (code != NPK_V0_ERR_WINDOW && code != NPK_V0_ERR_BUS && code != NPK_V0_ERR_OVERFLOW) {
            char tmp[180];
            if (npk_v0_validate(d, v->caps, tmp, sizeof tmp)) snprintf(why, sizeof why, ": %s", tmp);
        }
    }
    if (code == NPK_V0_ERR_OVERFLOW)
        return npk_err(NPK_EDEVICE, "v0: queue overflow: a doorbell committed more descriptors than the ring has free "
                                    "slots (err_code 0x07, ring length %u)",
                       v->len);
    if (code == NPK_V0_ERR_WINDOW || code == NPK_V0_ERR_BUS)
        return npk_err(NPK_EDEVICE, "v0: descriptor %u%s: %s at address 0x%" PRIx64 " (err_code 0x%02x%s)", idx, what,
                       npk_v0_err_text(code), fault, code, bus ? ", bus_error" : "");
    return npk_err(NPK_EDEVICE, "v0: descriptor %u%s: %s%s (err_code 0x%02x, unsupported_op)", idx, what,
                   npk_v0_err_text(code), why, code);
}

int npk_v0_decode_error(npk_v0 *v) {
    uint32_t st, idx, flo, fhi, irq;
    RD(v, NPK_V0_REG_STATUS, &st);
    RD(v, NPK_V0_REG_ERR_DESC_INDEX, &idx);
    RD(v, NPK_V0_REG_ERR_FAULT_ADDR_LO, &flo);
    RD(v, NPK_V0_REG_ERR_FAULT_ADDR_HI, &fhi);
    RD(v, NPK_V0_REG_IRQ_STATUS, &irq);
    if (!(st & NPK_V0_ST_ERROR)) return npk_err(NPK_EDEVICE, "v0: no error latched (STATUS 0x%08x)", st);
    return describe_error(v, npk_v0_st_errcode(st), idx, flo | (uint64_t)fhi << 32, (irq & NPK_V0_IRQ_BUS_ERROR) != 0);
}

/* Drop everything pending (reported with status), flush and re-arm. */
static int drop_and_flush(npk_v0 *v, int status) {
    while (v->pending) account(v, NPK_V0_DROPPED, status);
    if (!v->jobs) return arm(v);
    /* the kernel flushes and re-arms the ring: DESC_TAIL 0 */
    v->head = v->tail = 0;
    v->job_active = 0;
    return npk_port_reset(v->port);
}

int npk_v0_flush(npk_v0 *v) { return drop_and_flush(v, -NPK_EDEVICE); }

/* The device stopped: decode, drop, flush; returns the decoded error. */
static int fail_ring(npk_v0 *v, int code_status) {
    char msg[512];
    int rc = code_status;
    if (rc == -NPK_EDEVICE) rc = npk_v0_decode_error(v);
    snprintf(msg, sizeof msg, "%s", npk_errmsg());
    int frc = drop_and_flush(v, rc);
    if (frc) return npk_err_prefix(-frc, "%s; recovering with CTRL.flush failed", msg);
    npk_err(-rc, "%s", msg);
    return rc;
}

/* ---- strided row copies (the CPU executor and the lowerings, src/ops) ---- */

int npk_v0_get_rows(npk_port *p, uint64_t base, uint64_t stride, uint64_t rows, uint64_t rowbytes, void *dst) {
    for (uint64_t r = 0; r < rows; r++) {
        int rc = npk_port_mem_read(p, base + r * stride, (uint8_t *)dst + r * rowbytes, rowbytes);
        if (rc) return rc;
    }
    return 0;
}

int npk_v0_put_rows(npk_port *p, uint64_t base, uint64_t stride, uint64_t rows, uint64_t rowbytes, const void *src) {
    uint8_t *dst = rows ? npk_port_direct(p, base, (rows - 1) * stride + rowbytes) : NULL;
    if (dst) { /* in-process port, one host-backed allocation: write in place */
        if (stride == rowbytes) memcpy(dst, src, rows * rowbytes);
        else
            for (uint64_t r = 0; r < rows; r++) memcpy(dst + r * stride, (const uint8_t *)src + r * rowbytes, rowbytes);
        return 0;
    }
    for (uint64_t r = 0; r < rows; r++) {
        int rc = npk_port_mem_write(p, base + r * stride, (const uint8_t *)src + r * rowbytes, rowbytes);
        if (rc) return rc;
    }
    return 0;
}

static int fallback_impl(npk_v0 *v) {
    uint32_t st, idx;
    RD(v, NPK_V0_REG_STATUS, &st);
    uint32_t code = npk_v0_st_errcode(st);
    if (!(st & NPK_V0_ST_ERROR) ||
        !(code == NPK_V0_ERR_OPCODE || code == NPK_V0_ERR_SHAPE || code == NPK_V0_ERR_FLAGS ||
          code == NPK_V0_ERR_ALIGN || code == NPK_V0_ERR_FALLBACK))
        return npk_err(NPK_EINVAL, "v0 fallback: no unsupported_op pending (STATUS 0x%08x)", st);
    RD(v, NPK_V0_REG_ERR_DESC_INDEX, &idx);
    if (idx >= v->len) return npk_err(NPK_EDEVICE, "v0 fallback: ERR_DESC_INDEX %u outside the ring of %u", idx, v->len);
    uint8_t raw[NPK_V0_DESC_BYTES];
    npk_v0_desc d;
    int rc = npk_port_mem_read(v->port, v->ring + (uint64_t)idx * NPK_V0_DESC_BYTES, raw, sizeof raw);
    if (rc) return npk_err_prefix(-rc, "v0 fallback: reading descriptor %u", idx);
    npk_v0_desc_unpack(raw, &d);
    if (!v->cfg.cpu_exec)
        rc = npk_err(NPK_EUNSUPPORTED, "no CPU executor (npk_v0_config.cpu_exec is NULL)");
    else
        rc = v->cfg.cpu_exec(v->port, &d);
    if (rc) return npk_err_prefix(-rc, "v0 fallback: descriptor %u (tag 0x%x, %s)", idx, d.w[NPK_V0_W_TAG],
                                  opname(npk_v0_desc_op(&d)));
    WR(v, NPK_V0_REG_COMPLETION_TAG, d.w[NPK_V0_W_TAG]);
    WR(v, NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_UNSUPPORTED | NPK_V0_IRQ_ERROR);
    WR(v, NPK_V0_REG_DESC_TAIL, (idx + 1) % v->len);
    uint32_t tail;
    RD(v, NPK_V0_REG_DESC_TAIL, &tail);
    if (tail != (idx + 1) % v->len)
        return npk_err(NPK_EDEVICE, "v0 fallback: the device ignored the DESC_TAIL write-back (tail %u, expected %u; "
                                    "is CTRL.cpu_fallback_select set?)",
                       tail, (idx + 1) % v->len);
    v->stats.fallbacks_run++;
    if (idx == v->tail) account(v, NPK_V0_RETIRED_CPU, 0);
    return 0;
}

int npk_v0_fallback_handler(npk_v0 *v) {
    npk_job j;
    npk_job_begin(&j, v->port, "cpu fallback", "cpu fallback");
    return npk_job_end(&j, fallback_impl(v));
}

/* IRQ mode: acknowledge IRQ_STATUS.done (error bits are handled by recovery). */
static int ack_done(npk_v0 *v) {
    uint32_t irq;
    if (!v->cfg.use_irq) return 0;
    RD(v, NPK_V0_REG_IRQ_STATUS, &irq);
    if (irq & NPK_V0_IRQ_DONE) WR(v, NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_DONE);
    return 0;
}

/* Read the device's progress; account retirements and handle errors.
 * Returns 1 on progress, 0 on none, negative on a (reported) failure. */
static int service(npk_v0 *v) {
    uint32_t st, tail;
    RD(v, NPK_V0_REG_STATUS, &st);
    RD(v, NPK_V0_REG_DESC_TAIL, &tail);
    int progress = 0;
    if (tail >= v->len) return fail_ring(v, npk_err(NPK_EDEVICE, "v0: DESC_TAIL %u outside the ring of %u", tail, v->len));
    while (v->tail != tail && v->pending) {
        account(v, NPK_V0_RETIRED_HW, 0);
        progress = 1;
    }
    int arc = ack_done(v);
    if (arc) return fail_ring(v, arc);
    if (st & NPK_V0_ST_ERROR) {
        uint32_t code = npk_v0_st_errcode(st);
        int unsupported = code == NPK_V0_ERR_OPCODE || code == NPK_V0_ERR_SHAPE || code == NPK_V0_ERR_FLAGS ||
                          code == NPK_V0_ERR_ALIGN || code == NPK_V0_ERR_FALLBACK;
        if (unsupported && v->cfg.cpu_fallback) {
            int rc = npk_v0_fallback_handler(v);
            if (!rc) rc = ack_done(v);
            if (!rc) return 1;
            char msg[512];
            snprintf(msg, sizeof msg, "%s", npk_errmsg());
            int drc = npk_v0_decode_error(v);
            char dev[512];
            snprintf(dev, sizeof dev, "%s", npk_errmsg());
            (void)drc;
            npk_err(-rc, "%s (%s)", dev, msg);
            return fail_ring(v, rc == -NPK_EDEVICE ? -NPK_EUNSUPPORTED : rc);
        }
        return fail_ring(v, -NPK_EDEVICE);
    }
    return progress;
}

/* Poll check for wait_for: the condition (room in the ring, or nothing
 * pending) holds, or the device retired descriptors (progress). */
typedef struct v0_wait {
    npk_v0 *v;
    int room; /* 1: wait for a free slot; 0: wait until nothing is pending */
} v0_wait;

static int v0_cond(const v0_wait *w) { return w->room ? w->v->pending < w->v->len - 1 : !w->v->pending; }

static int check_v0(void *ctx, npk_poll *pl) {
    v0_wait *w = ctx;
    (void)pl;
    if (v0_cond(w)) return NPK_POLL_DONE;
    int rc = service(w->v);
    if (rc < 0) return rc;
    if (rc > 0) return v0_cond(w) ? NPK_POLL_DONE : NPK_POLL_PROGRESS;
    return NPK_POLL_BUSY;
}

/* IRQ mode: sleep until a line rises (checking STATUS every 16 steps anyway). */
static int woken_v0(void *ctx) {
    npk_v0 *v = ((v0_wait *)ctx)->v;
    return npk_port_irq(v->port, NPK_V0_IRQ_NPU) > 0 || npk_port_irq(v->port, NPK_V0_IRQ_FALLBACK) > 0;
}

/* Wait for the condition; a timeout (timeout_cycles without progress) drops
 * what is pending and flushes the ring (the soft reset of include/npukit/job.h). */
static int wait_for(npk_v0 *v, int room) {
    v0_wait w = {v, room};
    npk_poll pl = {.budget = v->cfg.timeout_cycles, .step = 64, .max_step = 65536,
                   .woken = v->cfg.use_irq ? woken_v0 : NULL, .what = "v0: waiting"};
    int rc = npk_poll_run(v->port, &pl, check_v0, &w);
    v->stats.device_cycles += pl.waited;
    if (!pl.expired) return rc;
    uint32_t st = 0;
    npk_port_read32(v->port, NPK_V0_REG_STATUS, &st);
    const npk_v0_desc *d = &v->slots[v->tail].d;
    npk_err(NPK_ETIMEDOUT,
            "v0: no progress for %" PRIu64 " cycles on descriptor %u (tag 0x%x, %s), STATUS 0x%08x%s", pl.idle,
            v->tail, d->w[NPK_V0_W_TAG], opname(npk_v0_desc_op(d)), st,
            (st & NPK_V0_ST_BUSY) ? ": busy without finishing (a bus beat may have hung)"
            : !(st & NPK_V0_ST_QUEUE_EMPTY) ? ": queued but not executing (CTRL.enable off?)"
                                             : "");
    rc = fail_ring(v, -NPK_ETIMEDOUT);
    if (rc == -NPK_ETIMEDOUT) npk_port_job_recovered(v->port);
    return rc;
}

/* ---- jobs through the port (kmd: the kernel rings the doorbell, watches, recovers) ---- */

/* The job ended badly (rc, its message set): drop what is pending. The kernel has already
 * flushed and re-armed the ring after a device error or its timeout (DESC_TAIL 0); reset
 * says it must still be stopped (our own timeout, a failed CPU fallback). */
static int job_failed(npk_v0 *v, int rc, int reset) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", npk_errmsg());
    while (v->pending) account(v, NPK_V0_DROPPED, rc);
    v->head = v->tail = 0;
    v->job_active = 0;
    if (reset && npk_port_reset(v->port)) return npk_err_prefix(-rc, "%s; resetting the device failed", msg);
    npk_err(-rc, "%s", msg);
    return rc;
}

/* Account the descriptors the device retired, up to ring index to; 1 when any. */
static int retire_to(npk_v0 *v, uint32_t to) {
    int moved = 0;
    while (v->tail != to && v->pending) {
        account(v, NPK_V0_RETIRED_HW, 0);
        moved = 1;
    }
    return moved;
}

/* The kernel handed descriptor idx to the CPU (step a of the contract): run it (b), then
 * the kernel writes its tag, clears the error and moves DESC_TAIL past it (c, d). */
static int job_fallback(npk_v0 *v, uint32_t idx, const uint8_t *raw) {
    npk_v0_desc d;
    npk_v0_desc_unpack(raw, &d);
    int rc = v->cfg.cpu_exec ? v->cfg.cpu_exec(v->port, &d)
                             : npk_err(NPK_EUNSUPPORTED, "no CPU executor (npk_v0_config.cpu_exec is NULL)");
    if (rc) return npk_err_prefix(-rc, "v0 fallback: descriptor %u (tag 0x%x, %s)", idx, d.w[NPK_V0_W_TAG],
                                  opname(npk_v0_desc_op(&d)));
    if ((rc = npk_port_job_fallback_done(v->port, idx))) return rc;
    v->stats.fallbacks_run++;
    if (idx == v->tail) account(v, NPK_V0_RETIRED_CPU, 0);
    return 0;
}

/* One report of the running job (npk_pjob_state_fn): NPK_POLL_DONE, _PROGRESS, _BUSY, or the job's error. */
static int job_state(void *ctx, const npk_pjob_state *s, npk_poll *pl) {
    npk_v0 *v = ctx;
    uint32_t mask = v->len - 1;
    (void)pl;
    switch (s->result) {
    case NPK_PJOB_BUSY: return retire_to(v, s->progress & mask) ? NPK_POLL_PROGRESS : NPK_POLL_BUSY;
    case NPK_PJOB_OK:
        retire_to(v, v->head);
        v->job_active = 0;
        return NPK_POLL_DONE;
    case NPK_PJOB_FALLBACK: {
        uint32_t idx = s->index & mask;
        retire_to(v, idx);
        npk_job j;
        npk_job_begin(&j, v->port, "cpu fallback", "cpu fallback");
        int rc = npk_job_end(&j, job_fallback(v, idx, s->desc));
        return rc ? job_failed(v, rc, 1) : NPK_POLL_PROGRESS;
    }
    case NPK_PJOB_TIMEOUT: {
        const npk_v0_desc *d = &v->slots[v->tail].d;
        npk_err(NPK_ETIMEDOUT, "v0: no completion of descriptor %u (tag 0x%x, %s) before the kernel's timeout; it "
                               "soft-reset the device",
                v->tail, d->w[NPK_V0_W_TAG], opname(npk_v0_desc_op(d)));
        npk_port_job_recovered(v->port);
        return job_failed(v, -NPK_ETIMEDOUT, 0);
    }
    default: { /* NPK_PJOB_ERROR: the kernel recovered (W1C or CTRL.flush) and re-armed */
        uint32_t idx = s->index & mask;
        retire_to(v, idx);
        return job_failed(v, describe_error(v, s->code, idx, s->fault_addr, s->code == NPK_V0_ERR_BUS), 0);
    }
    }
}

/* Until the running job ends: polled between steps of the caller's clock, exactly as the
 * register path polls (so the device's cycles are the sim port's), or the kernel waits. */
static int wait_job(npk_v0 *v) {
    if (!v->job_active) return 0;
    npk_poll pl = {.budget = v->cfg.timeout_cycles, .step = 64, .max_step = 65536, .what = "v0: waiting"};
    int rc = npk_port_job_until(v->port, &pl, job_state, v);
    v->stats.device_cycles += pl.waited;
    if (!pl.expired) return rc;
    const npk_v0_desc *d = &v->slots[v->tail].d;
    npk_err(NPK_ETIMEDOUT, "v0: no progress for %" PRIu64 " cycles on descriptor %u (tag 0x%x, %s); the device was reset",
            pl.idle, v->tail, d->w[NPK_V0_W_TAG], opname(npk_v0_desc_op(d)));
    rc = job_failed(v, -NPK_ETIMEDOUT, 1);
    if (rc == -NPK_ETIMEDOUT) npk_port_job_recovered(v->port);
    return rc;
}

/* Descriptors d[i..n) never reached the ring: report them as dropped. */
static int refuse_rest(npk_v0 *v, const npk_v0_desc *d, unsigned i, unsigned n, int status) {
    for (; i < n; i++) {
        v->stats.submitted++;
        v->stats.dropped++;
        if (v->cb) v->cb(v->cb_ctx, d[i].w[NPK_V0_W_TAG], UINT32_MAX, NPK_V0_DROPPED, status);
    }
    return status;
}

/* Jobs: one batch of at most len - 1 descriptors per job, each after the last one ended. */
static int submit_jobs(npk_v0 *v, const npk_v0_desc *d, unsigned n) {
    unsigned i = 0;
    while (i < n) {
        int rc = wait_job(v);
        if (rc < 0) return refuse_rest(v, d, i, n, rc);
        unsigned batch = n - i < v->len - 1 ? n - i : v->len - 1;
        uint32_t first = v->head;
        for (unsigned j = 0; j < batch; j++) {
            npk_v0_desc x = d[i + j];
            if (v->jobs == 2 && j == batch - 1) x.w[0] |= NPK_V0_F_IRQ << 16; /* the kernel's IRQ mode */
            uint8_t raw[NPK_V0_DESC_BYTES];
            npk_v0_desc_pack(&x, raw);
            rc = npk_port_mem_write(v->port, v->ring + (uint64_t)v->head * NPK_V0_DESC_BYTES, raw, sizeof raw);
            if (rc) return refuse_rest(v, d, i + j, n, npk_err_prefix(-rc, "v0: writing descriptor %u", v->head));
            v->slots[v->head].d = x;
            v->slots[v->head].live = 1;
            v->head = (v->head + 1) % v->len;
            v->pending++;
            v->stats.submitted++;
        }
        npk_pjob job = {.format = NPK_PJOB_V0_DESC, .addr = v->ring, .count = batch, .ring_len = v->len,
                        .first = first, .flags = v->cfg.cpu_fallback ? NPK_PJOB_F_FALLBACK : 0,
                        .window_addr = v->cfg.tensor_mem_base, .window_size = v->cfg.tensor_mem_len};
        rc = npk_port_job_submit(v->port, &job);
        if (rc) return refuse_rest(v, d, i + batch, n, job_failed(v, npk_err_prefix(-rc, "v0: submit"), 1));
        v->job_active = 1;
        v->stats.doorbells++;
        i += batch;
    }
    return 0;
}

static int submit_impl(npk_v0 *v, const npk_v0_desc *d, unsigned n) {
    if (v->jobs) return submit_jobs(v, d, n);
    unsigned i = 0;
    while (i < n) {
        unsigned room = v->len - 1 - v->pending;
        if (!room) {
            int rc = wait_for(v, 1);
            if (rc < 0) return refuse_rest(v, d, i, n, rc);
            continue;
        }
        unsigned batch = n - i < room ? n - i : room;
        for (unsigned j = 0; j < batch; j++) {
            npk_v0_desc x = d[i + j];
            if (v->cfg.use_irq && j == batch - 1) x.w[0] |= NPK_V0_F_IRQ << 16;
            uint8_t raw[NPK_V0_DESC_BYTES];
            npk_v0_desc_pack(&x, raw);
            int rc = npk_port_mem_write(v->port, v->ring + (uint64_t)v->head * NPK_V0_DESC_BYTES, raw, sizeof raw);
            if (rc) {
                rc = npk_err_prefix(-rc, "v0: writing descriptor %u", v->head);
                return refuse_rest(v, d, i + j, n, fail_ring(v, rc));
            }
            v->slots[v->head].d = x;
            v->slots[v->head].live = 1;
            v->head = (v->head + 1) % v->len;
            v->pending++;
            v->stats.submitted++;
        }
        int rc = npk_port_write32(v->port, NPK_V0_REG_DESC_DOORBELL, v->head);
        if (rc) return refuse_rest(v, d, i + batch, n, fail_ring(v, npk_err_prefix(-rc, "v0: doorbell")));
        v->stats.doorbells++;
        i += batch;
    }
    return 0;
}

/* Jobs (include/npukit/job.h): submit, wait, CPU fallback, ops. */
int npk_v0_submit(npk_v0 *v, const npk_v0_desc *d, unsigned n) {
    npk_job j;
    npk_job_begin(&j, v->port, "runtime", "submit");
    npk_job_args(&j, "\"descriptors\":%u", n);
    return npk_job_end(&j, submit_impl(v, d, n));
}

static int wait_impl(npk_v0 *v) {
    if (v->jobs) return wait_job(v);
    int rc = wait_for(v, 0);
    if (rc < 0) return rc;
    /* a last look: an error latched on a doorbell with nothing pending */
    uint32_t st;
    RD(v, NPK_V0_REG_STATUS, &st);
    if (st & NPK_V0_ST_ERROR) return fail_ring(v, -NPK_EDEVICE);
    return 0;
}

int npk_v0_wait(npk_v0 *v) {
    npk_job j;
    npk_job_begin(&j, v->port, "runtime", "wait");
    return npk_job_end(&j, wait_impl(v));
}

int npk_v0_run(npk_v0 *v, const npk_v0_desc *d, unsigned n) {
    int rc = npk_v0_submit(v, d, n);
    return rc ? rc : npk_v0_wait(v);
}

int npk_v0_read_counters(npk_v0 *v, npk_v0_counters *c) {
    uint32_t lo, hi;
    RD(v, NPK_V0_REG_PERF_CYCLES, &c->perf_cycles);
    RD(v, NPK_V0_REG_PERF_FALLBACKS, &c->perf_fallbacks);
    RD(v, NPK_V0_REG_PERF_MACS_LO, &lo);
    RD(v, NPK_V0_REG_PERF_MACS_HI, &hi);
    c->perf_macs = lo | (uint64_t)hi << 32;
    static const uint32_t lo_regs[6] = {NPK_V0_REG_PERF_DRAM_RD_LO, NPK_V0_REG_PERF_DRAM_WR_LO, NPK_V0_REG_PERF_SPAD_LO,
                                        NPK_V0_REG_PERF_ACC_LO, NPK_V0_REG_PERF_COMPUTE_LO, NPK_V0_REG_PERF_DMA_LO};
    uint64_t *dst[6] = {&c->engines.dram_rd, &c->engines.dram_wr, &c->engines.spad, &c->engines.acc,
                        &c->engines.compute_cycles, &c->engines.dma_cycles};
    for (int i = 0; i < 6; i++) {
        RD(v, lo_regs[i], &lo);
        RD(v, lo_regs[i] + 4, &hi);
        *dst[i] = lo | (uint64_t)hi << 32;
    }
    return 0;
}

/* The v0 row of the driver-level device table (include/npukit/devtab.h). */
const npk_dev_rt npk_v0_rt = {
    .model = &npk_v0_class,
    .stream_format = "64-byte descriptors, one per line",
    .assemble = npk_v0_asm,
    .disassemble = npk_v0_disasm,
};
