// SPDX-License-Identifier: MIT
/* The shell driver: ring management, doorbell, waits, events, errors, and
 * the high-level GEMM / conv / VEC / SOFTMAX helpers, over any npk_port. On a
 * port with the job hook (kmd:, rt/port_submit.h) each kick is a job the
 * kernel starts, watches and recovers; the event, halt and skip calls stay
 * register accesses. */
#include "npukit/shell_drv.h"
#include "npukit/devtab.h"
#include "npukit/trace.h"
#include "npukit/job.h"
#include "rt/port_submit.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct npk_shell {
    npk_port *port;
    uint32_t caps;
    uint64_t ring;        /* guest address */
    int ring_own;         /* allocated by npk_shell_open */
    uint32_t ring_bytes;
    uint32_t tail;        /* software tail (published on kick) */
    int use_irq;
    uint64_t timeout;
    int jobs;            /* npk_port_jobs: 0 registers, 1 jobs polled on our clock, 2 the kernel waits */
    int job_active;      /* a job of the port runs */
    uint32_t published;  /* jobs: the ring offset where the next job starts */
};

static int rd(npk_shell *s, uint32_t off, uint32_t *v) { return npk_drv_read32(s->port, "shell", off, v); }
static int wr(npk_shell *s, uint32_t off, uint32_t v) { return npk_drv_write32(s->port, "shell", off, v); }

static int program_ring(npk_shell *s) {
    int rc;
    uint32_t irq = SHELL_IRQ_ERROR | SHELL_IRQ_EVENT | (s->use_irq ? SHELL_IRQ_CQ_EMPTY : 0);
    if ((rc = wr(s, SHELL_CQ_BASE_LO, (uint32_t)s->ring)) || (rc = wr(s, SHELL_CQ_BASE_HI, (uint32_t)(s->ring >> 32))) ||
        (rc = wr(s, SHELL_CQ_SIZE, s->ring_bytes)) || (rc = wr(s, SHELL_CQ_TAIL, 0)) ||
        (rc = wr(s, SHELL_IRQ_STATUS, 7)) || (rc = wr(s, SHELL_IRQ_ENABLE, irq)))
        return rc;
    uint32_t head;
    if ((rc = rd(s, SHELL_CQ_HEAD, &head))) return rc;
    s->tail = head; /* after a reset both are 0 */
    return head ? wr(s, SHELL_CQ_TAIL, head) : 0;
}

int npk_shell_open(npk_shell **out, npk_port *port, const npk_shell_opts *opts) {
    *out = NULL;
    if (!port || strcmp(npk_port_device(port), "shell"))
        return npk_err(NPK_EINVAL, "shell: the port is not connected to a shell device");
    npk_shell *s = calloc(1, sizeof *s);
    if (!s) return npk_err(NPK_ENOMEM, "out of memory");
    s->port = port;
    s->ring_bytes = opts && opts->ring_bytes ? opts->ring_bytes : 4096;
    s->use_irq = opts ? opts->use_irq : 0;
    s->timeout = opts && opts->timeout ? opts->timeout : 2000000000ull;
    int rc;
    uint32_t ver;
    if (s->ring_bytes < 64 || s->ring_bytes > (1u << 30) || (s->ring_bytes & (s->ring_bytes - 1))) {
        rc = npk_err(NPK_EINVAL, "shell: ring size %" PRIu32 " is not a power of two in 64..2^30", s->ring_bytes);
        goto fail;
    }
    if ((rc = rd(s, SHELL_VERSION, &ver)) || (rc = rd(s, SHELL_CAPABILITIES, &s->caps))) goto fail;
    if (ver >> 16 != 0 || (ver & 0xffff) < 1) {
        rc = npk_err(NPK_EUNSUPPORTED, "shell: device VERSION 0x%08" PRIx32 " is not a v0.x shell", ver);
        goto fail;
    }
    if (opts && opts->ring_addr) {
        if (opts->ring_addr % 32) {
            rc = npk_err(NPK_EINVAL, "shell: ring address 0x%" PRIx64 " is not 32-byte aligned", opts->ring_addr);
            goto fail;
        }
        s->ring = opts->ring_addr;
        s->ring_own = 0;
    } else {
        if ((rc = npk_port_alloc(port, s->ring_bytes, 64, &s->ring))) goto fail;
        s->ring_own = 1;
    }
    s->jobs = npk_port_jobs(port);
    /* jobs: the kernel programs the ring at the first submit (after this reset) */
    if ((rc = s->jobs ? npk_port_reset(port) : program_ring(s))) goto fail;
    *out = s;
    return 0;
fail:
    if (s->ring_own) npk_port_free(port, s->ring);
    free(s);
    return rc;
}

void npk_shell_close(npk_shell *s) {
    if (!s) return;
    if (s->job_active) npk_port_reset(s->port);
    if (s->ring_own) npk_port_free(s->port, s->ring);
    free(s);
}

npk_port *npk_shell_port(npk_shell *s) { return s->port; }
uint32_t npk_shell_caps(const npk_shell *s) { return s->caps; }

int npk_shell_state_read(npk_shell *s, npk_shell_state *st) {
    uint32_t lo, hi;
    int rc;
    if ((rc = rd(s, SHELL_STATUS, &st->status)) || (rc = rd(s, SHELL_IRQ_STATUS, &st->irq_status)) ||
        (rc = rd(s, SHELL_CQ_HEAD, &st->head)) || (rc = rd(s, SHELL_CQ_TAIL, &st->tail)) ||
        (rc = rd(s, SHELL_ERROR_CODE, &st->error_code)) || (rc = rd(s, SHELL_ERROR_ADDR_LO, &lo)) ||
        (rc = rd(s, SHELL_ERROR_ADDR_HI, &hi)))
        return rc;
    st->error_addr = (uint64_t)hi << 32 | lo;
    return 0;
}

/* The message of a latched error: its code, address, and the descriptor at ring offset head. */
static int describe_error(npk_shell *s, uint32_t code, uint64_t addr, uint32_t head) {
    npk_port_job_code(s->port, code);
    uint8_t d[32] = {0};
    char what[96] = "";
    if (!npk_port_mem_read(s->port, s->ring + head, d, 32)) {
        const char *n = npk_shell_opcode_name(d[0]);
        if (n) snprintf(what, sizeof what, "%s (tag 0x%" PRIx32 ")", n, (uint32_t)(d[4] | d[5] << 8 | d[6] << 16 | (uint32_t)d[7] << 24));
        else snprintf(what, sizeof what, "opcode 0x%02x", d[0]);
    }
    const char *on_ring = code == SHELL_ERR_DMA_FAULT && addr >= s->ring && addr - s->ring < s->ring_bytes
                              ? "; the address is inside the command ring: the descriptor writes over the ring"
                              : "";
    return npk_err(NPK_EDEVICE, "shell: %s at 0x%" PRIx64 " (descriptor at ring offset 0x%" PRIx32 ": %s)%s",
                   npk_shell_error_name(code), addr, head, what[0] ? what : "unreadable", on_ring);
}

int npk_shell_check_error(npk_shell *s) {
    npk_shell_state st;
    int rc = npk_shell_state_read(s, &st);
    if (rc) return rc;
    if (!st.error_code) return 0;
    return describe_error(s, st.error_code, st.error_addr, st.head);
}

int npk_shell_clear_error(npk_shell *s) {
    uint32_t code;
    int rc = rd(s, SHELL_ERROR_CODE, &code);
    if (!rc && code) rc = wr(s, SHELL_ERROR_CODE, code);
    if (!rc) rc = wr(s, SHELL_IRQ_STATUS, SHELL_IRQ_ERROR);
    return rc;
}

/* Wait in growing slices until pred says done (1), fails (<0) or the budget
 * ends. A timeout of device work (recover set) soft-resets the device
 * (include/npukit/job.h): CONTROL.RESET and the ring programmed again. */
typedef int (*pred_fn)(npk_shell *s, void *ctx);
typedef struct wait_ctx {
    npk_shell *s;
    pred_fn pred;
    void *ctx;
} wait_ctx;

static int check_pred(void *ctx, npk_poll *pl) {
    wait_ctx *w = ctx;
    (void)pl;
    int r = w->pred(w->s, w->ctx);
    return r < 0 ? r : r ? NPK_POLL_DONE : NPK_POLL_BUSY;
}

static int wait_until(npk_shell *s, uint64_t max_cycles, pred_fn pred, void *ctx, const char *what, int recover) {
    if (!max_cycles) max_cycles = s->timeout;
    char where[64];
    snprintf(where, sizeof where, "shell: waiting for %s", what);
    npk_poll pl = {.budget = max_cycles, .step = 16, .max_step = 65536, .clamp = 1, .what = where};
    wait_ctx w = {s, pred, ctx};
    int rc = npk_poll_run(s->port, &pl, check_pred, &w);
    if (!pl.expired) return rc;
    npk_shell_state st;
    if (npk_shell_state_read(s, &st)) return -NPK_ETIMEDOUT;
    char msg[300];
    snprintf(msg, sizeof msg,
             "shell: %s did not happen within %" PRIu64 " cycles (STATUS 0x%" PRIx32 "%s%s, HEAD 0x%" PRIx32
             ", TAIL 0x%" PRIx32 ")",
             what, max_cycles, st.status, st.status & SHELL_STATUS_HALTED ? " halted" : "",
             st.status & SHELL_STATUS_WAITING ? " waiting on an event" : "", st.head, st.tail);
    if (!recover) return npk_err(NPK_ETIMEDOUT, "%s", msg);
    if ((rc = npk_shell_reset(s))) return npk_err_prefix(rc, "%s; the soft reset failed", msg);
    npk_port_job_recovered(s->port);
    return npk_err(NPK_ETIMEDOUT, "%s; the device was reset (queued work dropped)", msg);
}

/* ---- jobs through the port (kmd: the kernel rings the doorbell, watches, recovers) ---- */

/* One report of the running job (npk_pjob_state_fn): NPK_POLL_DONE, _BUSY, or its error (the
 * kernel reset the device). */
static int job_state(void *ctx, const npk_pjob_state *st, npk_poll *pl) {
    npk_shell *s = ctx;
    (void)pl;
    if (st->result == NPK_PJOB_BUSY) return NPK_POLL_BUSY;
    s->job_active = 0;
    if (st->result == NPK_PJOB_OK) return NPK_POLL_DONE;
    s->tail = s->published; /* the kernel dropped the queue: what was pushed after the job too */
    if (st->result == NPK_PJOB_TIMEOUT) {
        npk_port_job_recovered(s->port);
        return npk_err(NPK_ETIMEDOUT, "shell: the queue did not drain before the kernel's timeout; the device was reset "
                                      "(queued work dropped)");
    }
    return describe_error(s, st->code, st->fault_addr, st->index & (s->ring_bytes - 1));
}

/* Until the running job ends: polled between steps of the caller's clock with the register
 * path's schedule, or the kernel waits. */
static int wait_job(npk_shell *s, uint64_t max_cycles) {
    if (!s->job_active) return 0;
    if (!max_cycles) max_cycles = s->timeout;
    npk_poll pl = {.budget = max_cycles, .step = 16, .max_step = 65536, .clamp = 1, .what = "shell: waiting for the queue to drain"};
    int rc = npk_port_job_until(s->port, &pl, job_state, s);
    if (!pl.expired) return rc;
    s->job_active = 0;
    s->tail = s->published;
    if ((rc = npk_port_reset(s->port)))
        return npk_err_prefix(-rc, "shell: the queue did not drain within %" PRIu64 " cycles; the soft reset failed", max_cycles);
    npk_port_job_recovered(s->port);
    return npk_err(NPK_ETIMEDOUT, "shell: the queue did not drain within %" PRIu64 " cycles; the device was reset "
                                  "(queued work dropped)", max_cycles);
}

/* The descriptors pushed since the last job, as one job (after the running one ends). */
static int kick_job(npk_shell *s) {
    int rc = wait_job(s, 0);
    uint32_t n = (s->tail - s->published) & (s->ring_bytes - 1);
    if (rc || !n) return rc;
    npk_pjob job = {.format = NPK_PJOB_SHELL_RING, .addr = s->ring, .count = n, .ring_len = s->ring_bytes,
                    .first = s->published};
    if ((rc = npk_port_job_submit(s->port, &job))) {
        s->tail = s->published;
        return npk_err_prefix(-rc, "shell: submitting %" PRIu32 " bytes of commands", n);
    }
    s->job_active = 1;
    s->published = s->tail;
    return 0;
}

static int pred_idle(npk_shell *s, void *ctx) {
    (void)ctx;
    uint32_t st;
    int rc;
    if (s->use_irq) {
        rc = npk_port_irq(s->port, 0);
        if (rc < 0) return rc;
        if (!rc) return 0;
        uint32_t irq;
        if ((rc = rd(s, SHELL_IRQ_STATUS, &irq))) return rc;
        if (irq & SHELL_IRQ_ERROR) return npk_shell_check_error(s);
        if ((rc = wr(s, SHELL_IRQ_STATUS, irq & SHELL_IRQ_EVENT))) return rc; /* events: acknowledge, keep waiting */
        if (!(irq & SHELL_IRQ_CQ_EMPTY)) return 0;
        if ((rc = wr(s, SHELL_IRQ_STATUS, SHELL_IRQ_CQ_EMPTY))) return rc;
    }
    if ((rc = rd(s, SHELL_STATUS, &st))) return rc;
    if (st & SHELL_STATUS_ERROR) return npk_shell_check_error(s);
    return (st & SHELL_STATUS_IDLE) ? 1 : 0;
}

static int wait_impl(npk_shell *s, uint64_t max_cycles) {
    if (s->jobs) return wait_job(s, max_cycles);
    if (s->use_irq) {
        /* nothing queued: CQ_EMPTY would never fire */
        uint32_t st;
        int rc = rd(s, SHELL_STATUS, &st);
        if (rc) return rc;
        if (st & SHELL_STATUS_ERROR) return npk_shell_check_error(s);
        if (st & SHELL_STATUS_IDLE) return wr(s, SHELL_IRQ_STATUS, SHELL_IRQ_CQ_EMPTY);
    }
    return wait_until(s, max_cycles, pred_idle, NULL, "the queue to drain", 1);
}

/* Each wait for idle is a job (include/npukit/job.h) on track "runtime". */
int npk_shell_wait(npk_shell *s, uint64_t max_cycles) {
    npk_job j;
    npk_job_begin(&j, s->port, "runtime", "wait");
    return npk_job_end(&j, wait_impl(s, max_cycles));
}

int npk_shell_kick(npk_shell *s) {
    if (s->jobs) return kick_job(s);
    int rc = wr(s, SHELL_CQ_TAIL, s->tail);
    return rc ? rc : wr(s, SHELL_DOORBELL, 1);
}

typedef struct room_ctx {
    uint32_t need;
} room_ctx;

static int pred_room(npk_shell *s, void *ctx) {
    uint32_t head, st;
    int rc;
    if (s->jobs) { /* the running job holds [published - its bytes, published): room once it ended */
        if (s->job_active) return 0;
        uint32_t used = (s->tail - s->published) & (s->ring_bytes - 1);
        return used + ((room_ctx *)ctx)->need + 32 <= s->ring_bytes;
    }
    if ((rc = rd(s, SHELL_CQ_HEAD, &head)) || (rc = rd(s, SHELL_STATUS, &st))) return rc;
    if (st & SHELL_STATUS_ERROR) return npk_shell_check_error(s);
    uint32_t used = (s->tail - head) & (s->ring_bytes - 1);
    return used + ((room_ctx *)ctx)->need + 32 <= s->ring_bytes;
}

/* Room for c->need more bytes: kick what is pushed and wait until the device consumed enough
 * (jobs: until the job ended). */
static int make_room(npk_shell *s, room_ctx *c) {
    int r = pred_room(s, c);
    if (r) return r < 0 ? r : 0;
    int rc = npk_shell_kick(s);
    if (rc) return rc;
    if (!s->jobs) return wait_until(s, 0, pred_room, c, "room in the ring", 1);
    if ((rc = wait_job(s, 0))) return rc;
    r = pred_room(s, c);
    return r < 0 ? r : r ? 0 : npk_err(NPK_EINVAL, "shell: %" PRIu32 " bytes do not fit the ring", c->need);
}

static int write_ring(npk_shell *s, const uint8_t *d, size_t len) {
    uint32_t first = s->ring_bytes - s->tail;
    int rc;
    if (len <= first) {
        rc = npk_port_mem_write(s->port, s->ring + s->tail, d, len);
    } else {
        rc = npk_port_mem_write(s->port, s->ring + s->tail, d, first);
        if (!rc) rc = npk_port_mem_write(s->port, s->ring, d + first, len - first);
    }
    if (rc) return npk_err_prefix(rc, "shell: writing the ring");
    s->tail = (uint32_t)((s->tail + len) & (s->ring_bytes - 1));
    return 0;
}

int npk_shell_push(npk_shell *s, const uint8_t *desc, size_t len) {
    if (len != 32 && len != 64 && len != 96) return npk_err(NPK_EINVAL, "shell: descriptor length %zu is not 32, 64 or 96", len);
    if (desc[2] * 32u != len)
        return npk_err(NPK_EINVAL, "shell: descriptor SIZE field %u does not match its length %zu", desc[2], len);
    if (len + 32 > s->ring_bytes) return npk_err(NPK_EINVAL, "shell: a %zu-byte descriptor does not fit the ring", len);
    int rc;
    uint32_t need = (uint32_t)len;
    int straddles = s->tail + len > s->ring_bytes;
    if (straddles && !(s->caps & SHELL_CAP_RING_WRAP)) need += s->ring_bytes - s->tail; /* NOOP padding */
    room_ctx rc_ctx = {need};
    if ((rc = make_room(s, &rc_ctx))) return rc;
    if (straddles && !(s->caps & SHELL_CAP_RING_WRAP)) {
        uint8_t nop[32];
        npk_shell_enc_noop(nop, 0);
        while (s->tail != 0)
            if ((rc = write_ring(s, nop, 32))) return rc;
    }
    return write_ring(s, desc, len);
}

int npk_shell_push_stream(npk_shell *s, const uint8_t *stream, size_t len) {
    for (size_t off = 0; off < len;) {
        if (len - off < 32) return npk_err(NPK_EFORMAT, "shell: stream ends with %zu stray bytes at 0x%zx", len - off, off);
        unsigned units = stream[off + 2];
        if (units < 1 || units > 3) units = 1; /* the device will reject it with BAD_DESCRIPTOR */
        if (off + 32u * units > len) units = 1;
        uint8_t d[96];
        memcpy(d, stream + off, 32u * units);
        int rc;
        if (units == 1 && stream[off + 2] != 1) {
            /* push verbatim (size byte mismatch is the device's business) */
            room_ctx c = {32};
            if ((rc = make_room(s, &c))) return rc;
            rc = write_ring(s, d, 32);
        } else {
            rc = npk_shell_push(s, d, 32u * units);
        }
        if (rc) return npk_err_prefix(rc, "descriptor at stream offset 0x%zx", off);
        off += 32u * units;
    }
    return 0;
}

int npk_shell_run(npk_shell *s, const uint8_t *stream, size_t len, uint64_t max_cycles) {
    int rc = npk_shell_push_stream(s, stream, len);
    if (!rc) rc = npk_shell_kick(s);
    if (!rc) rc = npk_shell_wait(s, max_cycles);
    return rc;
}

typedef struct irq_ctx {
    uint32_t bits, got;
} irq_ctx;

static int pred_irq(npk_shell *s, void *ctx) {
    irq_ctx *c = ctx;
    uint32_t v;
    int rc = rd(s, SHELL_IRQ_STATUS, &v);
    if (rc) return rc;
    if (!(v & c->bits)) return 0;
    c->got = v & c->bits;
    rc = wr(s, SHELL_IRQ_STATUS, c->got);
    return rc ? rc : 1;
}

int npk_shell_wait_irq(npk_shell *s, uint32_t bits, uint64_t max_cycles, uint32_t *got) {
    irq_ctx c = {bits, 0};
    int rc = wait_until(s, max_cycles, pred_irq, &c, "the interrupt", 0);
    if (got) *got = c.got;
    return rc;
}

int npk_shell_halt(npk_shell *s) { return wr(s, SHELL_CONTROL, SHELL_CTRL_HALT); }
int npk_shell_resume(npk_shell *s) { return wr(s, SHELL_CONTROL, SHELL_CTRL_RESUME); }

int npk_shell_skip(npk_shell *s) {
    uint32_t head, st;
    int rc;
    if ((rc = rd(s, SHELL_CQ_HEAD, &head)) || (rc = rd(s, SHELL_STATUS, &st))) return rc;
    if (st & SHELL_STATUS_BUSY) return npk_err(NPK_EINVAL, "shell: cannot skip a descriptor while the device is busy");
    uint8_t h[4];
    if ((rc = npk_port_mem_read(s->port, s->ring + head, h, 4))) return npk_err_prefix(rc, "shell: reading the ring");
    unsigned units = h[2] >= 1 && h[2] <= 3 ? h[2] : 1;
    return wr(s, SHELL_CQ_HEAD, (head + 32 * units) & (s->ring_bytes - 1));
}

int npk_shell_reset(npk_shell *s) {
    int rc = wr(s, SHELL_CONTROL, SHELL_CTRL_RESET);
    return rc ? rc : program_ring(s);
}

/* ---- high-level helpers --------------------------------------------------------------- */

typedef struct gbuf {
    uint64_t addr;
    int live, mapped; /* mapped: the caller's buffer itself (npk_port_map_host) */
} gbuf;

static int galloc(npk_shell *s, gbuf *b, uint64_t size, const void *init) {
    int rc = npk_port_alloc(s->port, size ? size : 4, 64, &b->addr);
    if (rc) return rc;
    b->live = 1;
    if (init && size) rc = npk_port_mem_write(s->port, b->addr, init, size);
    return rc;
}

/* The caller's buffer host[size] as a guest buffer: in place when the port can
 * map it and it is aligned to its elements (align bytes), else a copy (galloc;
 * copy_in: with its contents). */
static int gmap(npk_shell *s, gbuf *b, const void *host, uint64_t size, uint64_t align, int copy_in) {
    if (host && size && !((uintptr_t)host & (align - 1))) {
        if (!npk_port_map_host(s->port, (void *)(uintptr_t)host, size, &b->addr)) return b->live = b->mapped = 1, 0;
    }
    return galloc(s, b, size, copy_in ? host : NULL);
}

static void gfree(npk_shell *s, gbuf *b) {
    if (b->live) npk_port_free(s->port, b->addr);
    b->live = 0;
}

static int host_overlap(const void *x, uint64_t nx, const void *y, uint64_t ny) {
    uintptr_t a = (uintptr_t)x, b = (uintptr_t)y;
    return x && y && nx && ny && a < b + ny && b < a + nx;
}

/* A, B and C are the caller's buffers themselves on the in-process port
 * (npk_port_map_host: the model reads A and B and writes C in place, no copy
 * in or out), else copies in guest buffers; C is copied when it overlaps an
 * operand (a device writing it in place would change the operand under the
 * GEMM) and bias always (n words). */
int npk_shell_gemm_host(npk_shell *s, const npk_shell_gemm_desc *g, const void *a, const void *b, const void *bias,
                        void *c_io) {
    if (g->lda || g->ldb || g->ldc) return npk_err(NPK_EINVAL, "shell: npk_shell_gemm_host takes packed matrices (ld = 0)");
    if (g->dtype > SHELL_FP8 || g->layout > SHELL_COL_MAJOR || g->epilogue > SHELL_EPI_MUL)
        return npk_err(NPK_EINVAL, "shell: GEMM dtype %u / layout %u / epilogue %u out of range", g->dtype, g->layout, g->epilogue);
    uint64_t es = g->dtype == SHELL_FP16 || g->dtype == SHELL_BF16 ? 2 : 1;
    uint64_t sa = (uint64_t)g->m * g->k * es, sb = (uint64_t)g->k * g->n * es, sc = (uint64_t)g->m * g->n * 4;
    uint64_t sbias = g->has_bias ? (uint64_t)g->n * 4 : 0;
    int need_c = g->has_beta || g->epilogue == SHELL_EPI_ADD || g->epilogue == SHELL_EPI_MUL;
    int c_alone = !host_overlap(c_io, sc, a, sa) && !host_overlap(c_io, sc, b, sb) && !host_overlap(c_io, sc, bias, sbias);
    gbuf A = {0}, B = {0}, C = {0}, Bi = {0};
    int rc;
    if ((rc = gmap(s, &A, a, sa, es, 1)) || (rc = gmap(s, &B, b, sb, es, 1)) ||
        (rc = c_alone ? gmap(s, &C, c_io, sc, 4, need_c) : galloc(s, &C, sc, need_c ? c_io : NULL)) ||
        (g->has_bias && (rc = galloc(s, &Bi, sbias, bias))))
        goto out;
    npk_shell_gemm_desc d = *g;
    d.a = A.addr;
    d.b = B.addr;
    d.c = C.addr;
    d.bias = Bi.addr;
    uint8_t desc[96];
    size_t len = npk_shell_enc_gemm(desc, &d);
    if ((rc = npk_shell_push(s, desc, len)) || (rc = npk_shell_kick(s)) || (rc = npk_shell_wait(s, 0))) goto out;
    if (!C.mapped) rc = npk_port_mem_read(s->port, C.addr, c_io, sc);
out:
    gfree(s, &A);
    gfree(s, &B);
    gfree(s, &C);
    gfree(s, &Bi);
    return rc;
}

int npk_shell_gemm_i8(npk_shell *s, uint32_t m, uint32_t n, uint32_t k, const int8_t *a, const int8_t *b,
                      const int32_t *bias, int32_t *c) {
    npk_shell_gemm_desc g = {0};
    g.dtype = SHELL_INT8;
    g.layout = SHELL_ROW_MAJOR;
    g.m = m;
    g.n = n;
    g.k = k;
    g.has_bias = bias != NULL;
    return npk_shell_gemm_host(s, &g, a, b, bias, c);
}

int npk_shell_conv2d_i8(npk_shell *s, const npk_shell_conv2d *p, const int8_t *x, const int8_t *w,
                        const int32_t *bias, int32_t *y) {
    uint32_t dh = p->dil_h ? p->dil_h : 1, dw = p->dil_w ? p->dil_w : 1, sh = p->stride_h ? p->stride_h : 1,
             sw = p->stride_w ? p->stride_w : 1;
    int64_t eh = (int64_t)p->h + p->pad_t + p->pad_b - (int64_t)dh * (p->kh - 1) - 1;
    int64_t ew = (int64_t)p->w + p->pad_l + p->pad_r - (int64_t)dw * (p->kw - 1) - 1;
    if (!p->kh || !p->kw || !p->c || !p->oc || eh < 0 || ew < 0)
        return npk_err(NPK_EINVAL, "shell: conv2d with kernel %ux%u over %ux%u (pads %u,%u,%u,%u) has no output",
                       p->kh, p->kw, p->h, p->w, p->pad_t, p->pad_l, p->pad_b, p->pad_r);
    uint32_t oh = (uint32_t)(eh / sh + 1), ow = (uint32_t)(ew / sw + 1);
    uint64_t M = (uint64_t)oh * ow, K = (uint64_t)p->c * p->kh * p->kw;
    if (M > UINT32_MAX || K > UINT32_MAX) return npk_err(NPK_EINVAL, "shell: conv2d too large");
    /* col-major GEMM: A(i=pixel, k) stored [K][M] (im2col), B(k, j=oc) stored [OC][K] = w, C stored [OC][M] = y */
    int8_t *col = malloc(M && K ? M * K : 1);
    if (!col) return npk_err(NPK_ENOMEM, "out of memory");
    npk_shell_gemm_desc g = {0};
    g.dtype = SHELL_INT8;
    g.layout = SHELL_COL_MAJOR;
    g.m = (uint32_t)M;
    g.n = p->oc;
    g.k = (uint32_t)K;
    g.has_bias = bias != NULL;
    int rc = 0;
    for (uint32_t img = 0; img < p->n && !rc; img++) {
        const int8_t *xi = x + (size_t)img * p->c * p->h * p->w;
        for (uint32_t ci = 0; ci < p->c; ci++)
            for (uint32_t ky = 0; ky < p->kh; ky++)
                for (uint32_t kx = 0; kx < p->kw; kx++) {
                    int8_t *row = col + ((size_t)(ci * p->kh + ky) * p->kw + kx) * M;
                    for (uint32_t oy = 0; oy < oh; oy++)
                        for (uint32_t ox = 0; ox < ow; ox++) {
                            int64_t iy = (int64_t)oy * sh - p->pad_t + (int64_t)ky * dh;
                            int64_t ix = (int64_t)ox * sw - p->pad_l + (int64_t)kx * dw;
                            row[(size_t)oy * ow + ox] =
                                iy < 0 || ix < 0 || iy >= p->h || ix >= p->w ? 0 : xi[((size_t)ci * p->h + iy) * p->w + ix];
                        }
                }
        rc = npk_shell_gemm_host(s, &g, col, w, bias, y + (size_t)img * p->oc * M);
    }
    free(col);
    return rc;
}

int npk_shell_vec(npk_shell *s, unsigned op, unsigned dtype, uint32_t vec_ext, const void *src, void *dst_io,
                  uint32_t bytes) {
    gbuf S = {0}, D = {0};
    int rc;
    if ((rc = galloc(s, &S, bytes, src)) || (rc = galloc(s, &D, bytes, dst_io))) goto out;
    uint8_t d[32];
    npk_shell_enc_vec(d, 0, op, dtype, S.addr, D.addr, bytes, vec_ext);
    if ((rc = npk_shell_push(s, d, 32)) || (rc = npk_shell_kick(s)) || (rc = npk_shell_wait(s, 0))) goto out;
    rc = npk_port_mem_read(s->port, D.addr, dst_io, bytes);
out:
    gfree(s, &S);
    gfree(s, &D);
    return rc;
}

int npk_shell_softmax(npk_shell *s, unsigned dtype, const void *src, void *dst, uint16_t row_bytes, uint16_t rows) {
    uint64_t n = (uint64_t)row_bytes * rows;
    gbuf S = {0}, D = {0};
    int rc;
    if ((rc = galloc(s, &S, n, src)) || (rc = galloc(s, &D, n, NULL))) goto out;
    uint8_t d[32];
    npk_shell_enc_softmax(d, 0, dtype, S.addr, D.addr, row_bytes, rows);
    if ((rc = npk_shell_push(s, d, 32)) || (rc = npk_shell_kick(s)) || (rc = npk_shell_wait(s, 0))) goto out;
    rc = npk_port_mem_read(s->port, D.addr, dst, n);
out:
    gfree(s, &S);
    gfree(s, &D);
    return rc;
}

/* The shell row of the driver-level device table (include/npukit/devtab.h). */
const npk_dev_rt npk_shell_rt = {
    .model = &npk_shell_class,
    .stream_format = "32/64/96-byte descriptors, one per line",
    .assemble = npk_shell_asm,
    .disassemble = npk_shell_disasm,
};
