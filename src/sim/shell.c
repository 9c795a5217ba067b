// SPDX-License-Identifier: MIT
/*
 * The NPU shell device model (npu-shell-contract.md + docs/shell.md).
 *
 * Registers are the table `regs` below. The fetcher reads descriptors from the
 * ring in guest memory in order; each descriptor's memory effect is applied
 * when it is issued (so the functional result is that of in-order execution),
 * while the timing model lets the DMA, GEMM and VEC engines overlap whenever
 * the address ranges of in-flight descriptors do not conflict. Time advances
 * only in step(): the model jumps from one scheduled event to the next.
 */
#include "shell_int.h"

#include "npukit/error.h"
#include "npukit/opt.h"
#include "npukit/shell_model.h"
#include "npukit/shell_regs.h"
#include "npukit/shell_desc.h"
#include "npukit/range.h"
#include "npukit/sim.h"
#include "npukit/trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEVER UINT64_MAX

typedef struct pend_sig {
    uint16_t id;
    int irq;
    uint64_t at;
} pend_sig;

typedef struct engine {
    uint64_t end;  /* busy until (exclusive) */
    shx_rset rs;   /* address ranges of the descriptor in flight */
} engine;

typedef struct shell {
    npk_dev dev; /* first member: hooks cast npk_dev* back */
    npk_regfile rf;
    shx_params p;
    /* fetcher */
    int armed, halted;
    uint64_t fetch_at;
    /* an error found at issue, latched when the failing work reaches it */
    int perr;
    uint32_t perr_code;
    uint64_t perr_addr, perr_at;
    /* EVENT_WAIT in progress */
    int waiting;
    uint16_t wait_id;
    uint64_t wait_fetch, wait_deadline, wait_addr, wait_decoded;
    uint32_t wait_off, wait_tag;
    uint8_t wait_flags;
    /* events */
    uint8_t *ev; /* 65536 signalled flags */
    /* EVENT_SIGNALs in flight: a FIFO (ring of cappend entries from phead),
     * in order of visibility, at most p.max_pending; evpend[id] counts them */
    pend_sig *pend;
    size_t phead, npend, cappend;
    uint32_t *evpend;
    engine eng[SHX_NENG];
    shx_rset cur;
    shx_scratch gemm_scr; /* the GEMM engine's host buffers, kept across descriptors */
    int had_work;
    /* performance counters */
    uint64_t perf_descs, perf_fetch, perf_dma, perf_gemm, perf_vec, perf_macs, perf_dma_bytes;
    /* energy counters since creation (docs/energy.md; never reset): GEMM MACs
     * by dtype, VEC element operations, bytes every engine moved on the bus,
     * descriptors fetched, register accesses */
    uint64_t e_macs[4], e_eops, e_bytes, e_descs, e_mmio;
    npk_shell_log_fn log_fn;
    void *log_ctx;
} shell;

extern const npk_dev_class npk_shell_class;
static const npk_dev_ops shell_ops;

static shell *S(npk_dev *d) { return (shell *)d; }
static uint32_t *slot(shell *s, uint32_t off) { return npk_regfile_slot(&s->rf, off); }
static uint32_t R(shell *s, uint32_t off) { return *slot(s, off); }
static uint64_t now_of(shell *s) { return s->dev.cycles; }

static const char *track_name[SHX_NENG] = {"dma", "gemm", "vec"};

/* ---- IRQ and errors ------------------------------------------------------------- */

static void irq_update(shell *s) { npk_dev_set_irq(&s->dev, 0, (R(s, SHELL_IRQ_STATUS) & R(s, SHELL_IRQ_ENABLE) & 7) != 0); }

static void irq_raise(shell *s, uint32_t bit) {
    *slot(s, SHELL_IRQ_STATUS) |= bit;
    irq_update(s);
}

static void latch_error(shell *s, uint32_t code, uint64_t addr) {
    if (R(s, SHELL_ERROR_CODE)) return; /* the first error stays latched */
    *slot(s, SHELL_ERROR_CODE) = code;
    *slot(s, SHELL_ERROR_ADDR_LO) = (uint32_t)addr;
    *slot(s, SHELL_ERROR_ADDR_HI) = (uint32_t)(addr >> 32);
    s->armed = 0; /* restart needs DOORBELL or RESUME after clearing ERROR_CODE */
    irq_raise(s, SHELL_IRQ_ERROR);
}

static void schedule_error(shell *s, uint32_t code, uint64_t addr, uint64_t at) {
    s->perr = 1;
    s->perr_code = code;
    s->perr_addr = addr;
    s->perr_at = at;
}

/* ---- state queries ----------------------------------------------------------------- */

static int engines_busy(shell *s, uint64_t t) {
    for (int e = 0; e < SHX_NENG; e++)
        if (s->eng[e].end > t) return 1;
    return 0;
}

static int queue_empty(shell *s) { return R(s, SHELL_CQ_HEAD) == R(s, SHELL_CQ_TAIL); }

static int can_fetch(shell *s) {
    return s->armed && !s->halted && !s->waiting && !s->perr && !R(s, SHELL_ERROR_CODE) && !queue_empty(s);
}

static uint32_t status_now(shell *s) {
    uint64_t t = now_of(s);
    int inflight = engines_busy(s, t) || s->npend || s->perr;
    uint32_t st = 0;
    if (queue_empty(s) && !inflight && !s->waiting) st |= SHELL_STATUS_IDLE;
    if (inflight || s->waiting || can_fetch(s)) st |= SHELL_STATUS_BUSY;
    if (R(s, SHELL_ERROR_CODE)) st |= SHELL_STATUS_ERROR;
    if (s->halted) st |= SHELL_STATUS_HALTED;
    if (s->waiting) st |= SHELL_STATUS_WAITING;
    return st;
}

/* ---- trace, log, counters ------------------------------------------------------------- */

static void emit(shell *s, const char *track, const char *name, uint64_t start, uint64_t dur, const char *args) {
    if (!s->dev.trace) return;
    const char *proc = s->dev.cls ? s->dev.cls->name : "shell";
    npk_trace_process(s->dev.trace, proc, npk_dev_hz(&s->dev));
    npk_trace_complete(s->dev.trace, proc, track, name, start, dur, args);
}

/* Counters: ring occupancy in descriptor slots (32 bytes) and DMA bandwidth. */
static void emit_counter(shell *s, const char *name, uint64_t t, double v) {
    if (!s->dev.trace) return;
    const char *proc = s->dev.cls ? s->dev.cls->name : "shell";
    npk_trace_process(s->dev.trace, proc, npk_dev_hz(&s->dev));
    npk_trace_counter(s->dev.trace, proc, name, t, v);
}

static void log_desc_macs(shell *s, uint64_t addr, uint32_t off, const uint8_t *h, const char *track, uint64_t fetch,
                          uint64_t start, uint64_t end, uint32_t err, uint64_t macs) {
    if (!s->log_fn) return;
    npk_shell_log e = {addr, off, h[0], h[1], h[2], shx_u32(h + 4), track, fetch, start, end, err, macs};
    s->log_fn(s->log_ctx, &e);
}

static void log_desc(shell *s, uint64_t addr, uint32_t off, const uint8_t *h, const char *track, uint64_t fetch,
                     uint64_t start, uint64_t end, uint32_t err) {
    log_desc_macs(s, addr, off, h, track, fetch, start, end, err, 0);
}

static const char *op_name(unsigned op) {
    const char *n = npk_shell_opcode_name(op);
    return n ? n : "INVALID";
}

/* ---- the fetcher ---------------------------------------------------------------------- */

static int ring_ok(shell *s, uint64_t *bad_addr) {
    uint32_t size = R(s, SHELL_CQ_SIZE), tail = R(s, SHELL_CQ_TAIL);
    uint64_t base = (uint64_t)R(s, SHELL_CQ_BASE_HI) << 32 | R(s, SHELL_CQ_BASE_LO);
    *bad_addr = base;
    if (base % 32 || size < 64 || size > (1u << 30) || (size & (size - 1)) || !npk_range_ok(base, size, NULL)) return 0;
    if (tail % 32 || tail >= size) {
        *bad_addr = base + tail;
        return 0;
    }
    return 1;
}

static void advance_head(shell *s, uint32_t bytes) {
    uint32_t size = R(s, SHELL_CQ_SIZE);
    *slot(s, SHELL_CQ_HEAD) = (R(s, SHELL_CQ_HEAD) + bytes) & (size - 1);
    if (s->dev.trace && size)
        emit_counter(s, "queue depth", s->dev.cycles, (double)(((R(s, SHELL_CQ_TAIL) - R(s, SHELL_CQ_HEAD)) & (size - 1)) / 32));
}

static void finish_wait(shell *s, uint64_t t) {
    uint64_t done = (t > s->wait_decoded ? t : s->wait_decoded) + s->p.event_cycles;
    uint8_t h[8] = {SHELL_OP_EVENT_WAIT, s->wait_flags, 1, 0};
    h[4] = (uint8_t)s->wait_tag;
    h[5] = (uint8_t)(s->wait_tag >> 8);
    h[6] = (uint8_t)(s->wait_tag >> 16);
    h[7] = (uint8_t)(s->wait_tag >> 24);
    char args[64];
    snprintf(args, sizeof args, "\"event\":%u", s->wait_id);
    emit(s, "fetch", "EVENT_WAIT", s->wait_fetch, done - s->wait_fetch, args);
    s->perf_fetch += done - s->wait_fetch;
    s->perf_descs++;
    log_desc(s, s->wait_addr, s->wait_off, h, "fetch", s->wait_fetch, s->wait_fetch, done, 0);
    s->ev[s->wait_id] = 0;
    s->waiting = 0;
    advance_head(s, 32);
    s->fetch_at = done;
}

/* Append a signal visible at *vis (raised to the newest one's time, so the
 * FIFO stays in order; the timing makes them ordered already). Grows the
 * ring up to p.max_pending; -1 when the host cannot hold it. */
static int pend_push(shell *s, uint16_t id, int irq, uint64_t *vis) {
    if (s->npend == s->cappend) {
        size_t nc = s->cappend ? s->cappend * 2 : 16;
        if (nc > s->p.max_pending) nc = s->p.max_pending;
        pend_sig *np = malloc(nc * sizeof *np);
        if (!np) return -1;
        for (size_t i = 0; i < s->npend; i++) np[i] = s->pend[(s->phead + i) % s->cappend];
        free(s->pend);
        s->pend = np;
        s->cappend = nc;
        s->phead = 0;
    }
    if (s->npend) {
        const pend_sig *last = &s->pend[(s->phead + s->npend - 1) % s->cappend];
        if (*vis < last->at) *vis = last->at;
    }
    s->pend[(s->phead + s->npend) % s->cappend] = (pend_sig){id, irq, *vis};
    s->npend++;
    s->evpend[id]++;
    return 0;
}

/* Why long: the fetcher's one decision per descriptor (event units, then engine descriptors
 * under run.py's issue rules) as one switch, in the reference's order. */
static void do_fetch(shell *s) {
    uint64_t t = now_of(s), bad;
    if (!ring_ok(s, &bad)) {
        latch_error(s, SHELL_ERR_ALIGNMENT, bad);
        return;
    }
    uint32_t rsize = R(s, SHELL_CQ_SIZE), head = R(s, SHELL_CQ_HEAD), tail = R(s, SHELL_CQ_TAIL);
    uint64_t base = (uint64_t)R(s, SHELL_CQ_BASE_HI) << 32 | R(s, SHELL_CQ_BASE_LO);
    uint64_t daddr = base + head;
    uint8_t d[96];
    memset(d, 0, sizeof d);
    uint64_t lat = 0;
    s->had_work = 1;
    /* first unit */
    for (unsigned u = 0; u < 3; u++) {
        uint64_t a = base + ((head + 32 * u) & (rsize - 1));
        size_t done = 0;
        uint64_t fa = a, cyc = 0;
        npk_bus_resp r = npk_bus_copy_in(s->dev.mem, a, d + 32 * u, 32, s->p.beat < 32 ? s->p.beat : 32, &done, &fa, &cyc);
        lat += cyc;
        if (r == NPK_BUS_ERROR) {
            log_desc(s, daddr, head, d, "fetch", t, t, t + s->p.fetch_cycles + lat, SHELL_ERR_DMA_FAULT);
            schedule_error(s, SHELL_ERR_DMA_FAULT, fa, t + s->p.fetch_cycles + lat);
            return;
        }
        if (r == NPK_BUS_HANG) {
            log_desc(s, daddr, head, d, "fetch", t, t, t + s->p.bus_timeout, SHELL_ERR_TIMEOUT);
            schedule_error(s, SHELL_ERR_TIMEOUT, fa, t + s->p.bus_timeout);
            return;
        }
        if (u == 0) {
            unsigned size = d[2];
            uint32_t avail = (tail - head) & (rsize - 1);
            int known = npk_shell_opcode_name(d[0]) != NULL;
            if (!known || size < 1 || size > 3 || d[3] || (size > 1 && d[0] != SHELL_OP_GEMM) || avail < 32 * size) {
                uint32_t code = known ? SHELL_ERR_BAD_DESCRIPTOR : SHELL_ERR_INVALID_OPCODE;
                uint64_t at = t + s->p.fetch_cycles + lat;
                char ea[64];
                snprintf(ea, sizeof ea, "\"error\":\"%s\"", npk_shell_error_name(code));
                log_desc(s, daddr, head, d, "fetch", t, t, at, code);
                emit(s, "fetch", op_name(d[0]), t, at - t, ea);
                s->perf_fetch += at - t;
                schedule_error(s, code, daddr, at);
                return;
            }
        }
        if (u + 1 >= d[2]) break;
    }
    unsigned size = d[2];
    uint64_t fc = s->p.fetch_cycles + lat / size;
    uint64_t decoded = t + fc;
    char args[96];
    switch (d[0]) {
    case SHELL_OP_NOOP: {
        uint64_t end = decoded + s->p.noop_cycles;
        snprintf(args, sizeof args, "\"tag\":%" PRIu32, shx_u32(d + 4));
        emit(s, "fetch", "NOOP", t, end - t, args);
        s->perf_fetch += end - t;
        s->perf_descs++;
        log_desc(s, daddr, head, d, "fetch", t, t, end, 0);
        advance_head(s, 32);
        s->fetch_at = end;
        return;
    }
    case SHELL_OP_EVENT_SIGNAL: {
        uint64_t end = decoded + s->p.event_cycles, vis = end;
        if (s->p.rtlgen && !s->p.rtlgen_overlap) { /* run.py sequential: after everything before it */
            uint64_t from = decoded;
            for (int e = 0; e < SHX_NENG; e++)
                if (s->eng[e].end > from) from = s->eng[e].end;
            end = vis = from + s->p.event_cycles;
        }
        /* run.py --overlap: the signal holds the queue from its issue (the producers are not
         * waited for) and the event is set when it ends; npukit's own timing: the event is
         * visible once every engine has finished (completion-bound) */
        if (!(s->p.rtlgen && s->p.rtlgen_overlap))
            for (int e = 0; e < SHX_NENG; e++)
                if (s->eng[e].end > vis) vis = s->eng[e].end;
        if (s->npend >= s->p.max_pending || pend_push(s, shx_u16(d + 4), d[1] & 1, &vis)) {
            /* the implementation limit (docs/shell.md decision 15): refused, not run */
            char ea[64];
            snprintf(ea, sizeof ea, "\"error\":\"%s\"", npk_shell_error_name(SHELL_ERR_BAD_DESCRIPTOR));
            emit(s, "fetch", "EVENT_SIGNAL", t, fc, ea);
            s->perf_fetch += fc;
            log_desc(s, daddr, head, d, "fetch", t, t, decoded, SHELL_ERR_BAD_DESCRIPTOR);
            schedule_error(s, SHELL_ERR_BAD_DESCRIPTOR, daddr, decoded);
            return;
        }
        snprintf(args, sizeof args, "\"event\":%u,\"irq\":%d,\"visible_at\":%" PRIu64, shx_u16(d + 4), d[1] & 1, vis);
        emit(s, "fetch", "EVENT_SIGNAL", t, end - t, args);
        s->perf_fetch += end - t;
        s->perf_descs++;
        log_desc(s, daddr, head, d, "fetch", t, t, vis, 0);
        advance_head(s, 32);
        s->fetch_at = end;
        return;
    }
    case SHELL_OP_EVENT_WAIT:
        s->waiting = 1;
        s->wait_id = shx_u16(d + 4);
        s->wait_fetch = t;
        s->wait_decoded = decoded;
        s->wait_addr = daddr;
        s->wait_off = head;
        s->wait_tag = shx_u32(d + 4);
        s->wait_flags = d[1];
        s->wait_deadline = s->p.event_timeout ? decoded + s->p.event_timeout : 0;
        if (s->evpend[s->wait_id]) s->wait_deadline = 0; /* a signal in flight will satisfy it */
        return; /* process() completes it when the event is (or becomes) visible */
    default: break;
    }
    /* engine descriptors */
    shx_rset_clear(&s->cur);
    shx_ctx c = {s->dev.mem, &s->p, &s->cur, base, base + rsize, &s->gemm_scr, &s->dev};
    shx_res x;
    shx_exec(&c, d, size, daddr, &x);
    int decode_err = x.err == SHELL_ERR_INVALID_OPCODE || x.err == SHELL_ERR_BAD_DESCRIPTOR || x.err == SHELL_ERR_ALIGNMENT;
    if (decode_err) {
        char ea[200];
        snprintf(ea, sizeof ea, "\"error\":\"%s\"", npk_shell_error_name(x.err));
        emit(s, "fetch", op_name(d[0]), t, fc, ea);
        s->perf_fetch += fc;
        log_desc(s, daddr, head, d, "fetch", t, t, decoded, x.err);
        schedule_error(s, x.err, x.err_addr, decoded);
        return;
    }
    uint64_t start = decoded;
    uint64_t dur = x.dur ? x.dur : 1;
    if (x.hang) dur = s->p.bus_timeout;
    /* run.py's rules (preset=rtlgen-perf): two engines, DMA (DMA_COPY) and compute (GEMM,
     * VEC_OP and SOFTMAX share it); an engine descriptor starts at max(queue time, its
     * engine's end) and the queue moves on at once (--overlap: a later descriptor starts on
     * an idle engine while an earlier one waits), with no data hazards (the schedule's events
     * order producers and consumers); any other descriptor (DMA_STRIDED/GATHER/SCATTER, which
     * run.py does not know) holds the queue from its issue to its end. Sequential mode: each
     * descriptor starts when everything before it has ended. */
    int rg = s->p.rtlgen, qop = rg && x.engine == SHX_DMA && d[0] != SHELL_OP_DMA_COPY;
    engine *eg = &s->eng[rg && x.engine == SHX_VEC ? SHX_GEMM : x.engine];
    if (rg && !s->p.rtlgen_overlap) {
        for (int e = 0; e < SHX_NENG; e++)
            if (s->eng[e].end > start) start = s->eng[e].end;
    } else if (rg) {
        if (!qop && eg->end > start) start = eg->end;
    } else {
        /* issue: in order, when the engine is free and no in-flight descriptor conflicts */
        if (eg->end > start) start = eg->end;
        for (int e = 0; e < SHX_NENG; e++)
            if (e != x.engine && s->eng[e].end > start && shx_conflict(&s->eng[e].rs, &s->cur)) start = s->eng[e].end;
        /* a later engine end can only push start further: iterate once more for chains */
        for (int e = 0; e < SHX_NENG; e++)
            if (e != x.engine && s->eng[e].end > start && shx_conflict(&s->eng[e].rs, &s->cur)) start = s->eng[e].end;
    }
    uint64_t end = start + dur;
    shx_rset tmp = eg->rs;
    eg->rs = s->cur;
    s->cur = tmp;
    if (end > eg->end) eg->end = end;
    snprintf(args, sizeof args, "\"opcode\":%u,\"tag\":%" PRIu32, d[0], shx_u32(d + 4));
    emit(s, "fetch", op_name(d[0]), t, fc, args);
    s->perf_fetch += fc;
    char eargs[256];
    snprintf(eargs, sizeof eargs, "%s%s%s", x.args, x.err ? ",\"error\":" : "", x.err ? "\"" : "");
    if (x.err) {
        size_t l = strlen(eargs);
        snprintf(eargs + l, sizeof eargs - l, "%s\"", npk_shell_error_name(x.err));
    }
    emit(s, track_name[x.engine], op_name(d[0]), start, dur, eargs);
    if (x.engine == SHX_GEMM && x.dtype < 4) s->e_macs[x.dtype] += x.macs;
    s->e_eops += x.eops, s->e_bytes += x.bytes, s->e_descs++;
    if (x.engine == SHX_DMA) {
        s->perf_dma += dur;
        s->perf_dma_bytes += x.bytes;
        emit_counter(s, "dma bytes/cycle", start, (double)x.bytes / (double)dur);
        emit_counter(s, "dma bytes/cycle", end, 0.0);
    } else if (x.engine == SHX_GEMM) {
        s->perf_gemm += dur;
        s->perf_macs += x.macs;
    } else {
        s->perf_vec += dur;
    }
    log_desc_macs(s, daddr, head, d, track_name[x.engine], t, start, end, x.err, x.engine == SHX_GEMM ? x.macs : 0);
    if (x.err) {
        schedule_error(s, x.err, x.err_addr, end);
        return;
    }
    s->perf_descs++;
    advance_head(s, 32 * size);
    /* the fetcher was blocked until the descriptor issued (run.py --overlap: the queue moves on at
     * once; sequential, or a descriptor run.py does not know: it holds the queue until its end) */
    s->fetch_at = !rg ? start : s->p.rtlgen_overlap && !qop ? decoded : end;
}

/* Handle everything due at the current time. */
static void process(shell *s) {
    for (int guard = 0; guard < 1000000; guard++) {
        uint64_t t = now_of(s);
        int progress = 0;
        while (s->npend && s->pend[s->phead].at <= t) { /* oldest first: O(1) per signal */
            const pend_sig *ps = &s->pend[s->phead];
            s->ev[ps->id] = 1;
            s->evpend[ps->id]--;
            if (ps->irq) irq_raise(s, SHELL_IRQ_EVENT);
            s->phead = (s->phead + 1) % s->cappend;
            s->npend--;
            progress = 1;
        }
        if (s->perr && s->perr_at <= t) {
            s->perr = 0;
            latch_error(s, s->perr_code, s->perr_addr);
            progress = 1;
        }
        if (s->waiting) {
            if (s->ev[s->wait_id]) {
                finish_wait(s, t);
                progress = 1;
            } else if (s->wait_deadline && t >= s->wait_deadline) {
                uint8_t h[8] = {SHELL_OP_EVENT_WAIT, s->wait_flags, 1, 0, (uint8_t)s->wait_tag,
                                (uint8_t)(s->wait_tag >> 8), (uint8_t)(s->wait_tag >> 16), (uint8_t)(s->wait_tag >> 24)};
                emit(s, "fetch", "EVENT_WAIT", s->wait_fetch, t - s->wait_fetch, "\"error\":\"TIMEOUT\"");
                s->perf_fetch += t - s->wait_fetch;
                log_desc(s, s->wait_addr, s->wait_off, h, "fetch", s->wait_fetch, s->wait_fetch, t, SHELL_ERR_TIMEOUT);
                s->waiting = 0;
                latch_error(s, SHELL_ERR_TIMEOUT, s->wait_addr);
                progress = 1;
            }
        }
        if (s->armed && queue_empty(s) && !s->waiting) s->armed = 0;
        if (can_fetch(s) && s->fetch_at <= t) {
            do_fetch(s);
            progress = 1;
        }
        if (s->had_work && queue_empty(s) && !s->waiting && !s->npend && !s->perr && !R(s, SHELL_ERROR_CODE) &&
            !engines_busy(s, t)) {
            s->had_work = 0;
            irq_raise(s, SHELL_IRQ_CQ_EMPTY);
        }
        if (!progress) return;
    }
}

static uint64_t next_event(shell *s) {
    uint64_t t = now_of(s), n = NEVER;
#define CAND(v)                         \
    do {                                \
        uint64_t v_ = (v);              \
        if (v_ > t && v_ < n) n = v_;   \
    } while (0)
    if (s->npend) CAND(s->pend[s->phead].at); /* the FIFO is in order of visibility */
    if (s->perr) CAND(s->perr_at);
    if (s->waiting && s->wait_deadline) CAND(s->wait_deadline);
    if (can_fetch(s)) CAND(s->fetch_at > t ? s->fetch_at : t + 1);
    if (s->had_work)
        for (int e = 0; e < SHX_NENG; e++) CAND(s->eng[e].end);
#undef CAND
    return n;
}

static void shell_step(npk_dev *d, uint64_t cycles) {
    shell *s = S(d);
    uint64_t target = d->cycles + cycles;
    process(s);
    for (;;) {
        uint64_t n = next_event(s);
        if (n > target) break;
        d->cycles = n;
        process(s);
    }
    d->cycles = target;
    process(s);
}

static int shell_idle(npk_dev *d) { return next_event(S(d)) == NEVER; }

/* Nothing happens between events: the next one is the next change. */
static uint64_t shell_quiet(npk_dev *d) {
    uint64_t n = next_event(S(d)), t = now_of(S(d));
    return n == NEVER || n <= t ? 1 : n - t;
}

/* ---- registers ------------------------------------------------------------------------- */

static void full_reset(shell *s) {
    s->armed = s->halted = s->waiting = s->perr = s->had_work = 0;
    s->fetch_at = 0;
    s->npend = s->phead = 0;
    memset(s->ev, 0, 65536);
    memset(s->evpend, 0, 65536 * sizeof *s->evpend);
    for (int e = 0; e < SHX_NENG; e++) {
        s->eng[e].end = 0;
        shx_rset_clear(&s->eng[e].rs);
    }
    s->perf_descs = s->perf_fetch = s->perf_dma = s->perf_gemm = s->perf_vec = s->perf_macs = s->perf_dma_bytes = 0;
    npk_regfile_reset_dev(&s->rf, &s->dev); /* the IRQ_STATUS/IRQ_ENABLE hook lowers the line */
}

static uint32_t rd_status(npk_dev *d, const npk_reg *r, uint32_t v) {
    (void)r;
    (void)v;
    return status_now(S(d));
}

static uint32_t rd_control(npk_dev *d, const npk_reg *r, uint32_t v) {
    (void)r;
    (void)v;
    return S(d)->halted ? SHELL_CTRL_HALT : 0;
}

static void arm(shell *s) {
    s->armed = 1;
    if (s->fetch_at < now_of(s)) s->fetch_at = now_of(s);
    uint64_t bad;
    if (!ring_ok(s, &bad)) latch_error(s, SHELL_ERR_ALIGNMENT, bad);
}

/* CONTROL: commands, never stored (reads give the halt state). */
static uint32_t wr_control(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v, uint32_t next) {
    (void)r;
    (void)old;
    (void)next;
    shell *s = S(d);
    if (v & SHELL_CTRL_RESET) {
        full_reset(s);
        return 0;
    }
    if (v & SHELL_CTRL_HALT) {
        s->halted = 1;
    } else if (v & SHELL_CTRL_RESUME) {
        s->halted = 0;
        if (!R(s, SHELL_ERROR_CODE) && !queue_empty(s)) arm(s);
    }
    return 0;
}

static void wr_irq(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v) {
    (void)r;
    (void)old;
    (void)v;
    irq_update(S(d));
}

/* DOORBELL: any value arms the fetcher; the register reads 0. */
static uint32_t wr_doorbell(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v, uint32_t next) {
    (void)r;
    (void)old;
    (void)v;
    (void)next;
    shell *s = S(d);
    uint32_t size = R(s, SHELL_CQ_SIZE);
    if (s->dev.trace && size)
        emit_counter(s, "queue depth", d->cycles, (double)(((R(s, SHELL_CQ_TAIL) - R(s, SHELL_CQ_HEAD)) & (size - 1)) / 32));
    if (!R(s, SHELL_ERROR_CODE)) arm(s);
    return 0;
}

/* CQ_HEAD is writable only while stopped: nothing in flight, fetcher not
 * running. */
static uint32_t wr_head(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v, uint32_t next) {
    (void)r;
    shell *s = S(d);
    if (engines_busy(s, now_of(s)) || s->waiting || s->perr || can_fetch(s)) return old;
    uint32_t size = R(s, SHELL_CQ_SIZE);
    if (v % 32 || !size || v >= size) {
        uint64_t base = (uint64_t)R(s, SHELL_CQ_BASE_HI) << 32 | R(s, SHELL_CQ_BASE_LO);
        latch_error(s, SHELL_ERR_ALIGNMENT, base + v);
        return old;
    }
    return next;
}

/* ERROR_CODE is sticky: a write whose 1 bits cover the latched code clears it
 * (write the code back, or all ones); any other write leaves it as it is, so a
 * partial write never turns one code into another (5 & ~1 would read as 4). */
static uint32_t wr_error_code(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v, uint32_t next) {
    (void)d;
    (void)r;
    (void)next;
    return old && (v & old) == old ? 0 : old;
}

static uint32_t rd_perf(npk_dev *d, const npk_reg *r, uint32_t v) {
    (void)v;
    shell *s = S(d);
    switch (r->off) {
    case SHELL_PERF_DESCS: return (uint32_t)s->perf_descs;
    case SHELL_PERF_FETCH_CYCLES: return (uint32_t)s->perf_fetch;
    case SHELL_PERF_DMA_CYCLES: return (uint32_t)s->perf_dma;
    case SHELL_PERF_GEMM_CYCLES: return (uint32_t)s->perf_gemm;
    case SHELL_PERF_VEC_CYCLES: return (uint32_t)s->perf_vec;
    case SHELL_PERF_MACS_LO: return (uint32_t)s->perf_macs;
    case SHELL_PERF_MACS_HI: return (uint32_t)(s->perf_macs >> 32);
    default: return (uint32_t)s->perf_dma_bytes;
    }
}

/* The register map, generated from npukit/shell_regs.def (index == offset / 4). */
#define NPK_REGTABLE_DEF "npukit/shell_regs.def"
#include "sim/regtable.h"

static uint32_t shell_read32(npk_dev *d, uint32_t off) {
    S(d)->e_mmio++;
    return npk_regfile_read(&S(d)->rf, d, off);
}

static void shell_write32(npk_dev *d, uint32_t off, uint32_t v) {
    shell *s = S(d);
    s->e_mmio++;
    npk_regfile_write(&s->rf, d, off, v);
}

/* The shell energy model (docs/energy.md "shell"): a GEMM MAC by dtype
 * (int8: 8x8 multiply + 32-bit add; fp8, fp16, bf16: that multiply + an fp32
 * add, the spec's fp32 accumulation), a VEC/SOFTMAX element operation the
 * mean of an fp32 add and multiply, every byte an engine moves on the bus
 * from DRAM (the engines stream operands; no on-chip scratchpad), each
 * descriptor's 32 bytes fetched from DRAM. Area: gemm_macs int8 MAC units,
 * gemm_fmacs fp16 multiply + fp32 add units, vec_lanes fp32 add + multiply
 * pairs, the register window. */
static void shell_energy(npk_dev *d, npk_energy *e, npk_area *a, uint32_t *tech_nm) {
    shell *s = S(d);
    const uint32_t nm = s->p.tech_nm;
    const double add32 = npk_op_pj(NPK_EOP_ADD_FP32, nm);
    const double mac[4] = {npk_op_pj(NPK_EOP_MAC_I8, nm), npk_op_pj(NPK_EOP_MUL_FP16, nm) + add32,
                           npk_op_pj(NPK_EOP_MUL_BF16, nm) + add32, npk_op_pj(NPK_EOP_MUL_FP8, nm) + add32};
    *e = (npk_energy){0};
    for (int i = 0; i < 4; i++) e->compute_pj += (double)s->e_macs[i] * mac[i];
    e->compute_pj += (double)s->e_eops * (add32 + npk_op_pj(NPK_EOP_MUL_FP32, nm)) / 2.0;
    double bytes = (double)s->e_bytes + 32.0 * (double)s->e_descs;
    e->dram_pj = bytes * npk_dram_pj_per_byte();
    e->dma_pj = bytes * npk_dma_pj_per_byte(nm);
    e->mmio_pj = (double)s->e_mmio * npk_mmio_pj(nm);
    *a = (npk_area){0};
    a->array_mm2 = ((double)s->p.gemm_macs * npk_op_area_um2(NPK_EOP_MAC_I8, nm) +
                    (double)s->p.gemm_fmacs * (npk_op_area_um2(NPK_EOP_MUL_FP16, nm) + npk_op_area_um2(NPK_EOP_ADD_FP32, nm)) +
                    (double)s->p.vec_lanes * (npk_op_area_um2(NPK_EOP_ADD_FP32, nm) + npk_op_area_um2(NPK_EOP_MUL_FP32, nm))) /
                   1e6;
    a->fixed_mm2 = 0x100 * 8.0 * npk_reg_area_um2_per_bit(nm) / 1e6;
    *tech_nm = nm;
}

static void shell_reset(npk_dev *d) { full_reset(S(d)); }

static void shell_destroy(npk_dev *d) {
    shell *s = S(d);
    for (int e = 0; e < SHX_NENG; e++) shx_rset_free(&s->eng[e].rs);
    shx_rset_free(&s->cur);
    shx_scratch_free(&s->gemm_scr);
    free(s->pend);
    free(s->ev);
    free(s->evpend);
    npk_regfile_fini(&s->rf);
    free(s);
}

static const npk_dev_ops shell_ops = {
    .read32 = shell_read32,
    .write32 = shell_write32,
    .write64 = NULL,
    .step = shell_step,
    .quiet = shell_quiet,
    .idle = shell_idle,
    .reset = shell_reset,
    .destroy = shell_destroy,
    .energy = shell_energy,
};

int npk_shell_sim_set_log(struct npk_dev *d, npk_shell_log_fn fn, void *ctx) {
    if (!d || d->ops != &shell_ops) return npk_err(NPK_EINVAL, "not a shell device model");
    S(d)->log_fn = fn;
    S(d)->log_ctx = ctx;
    return 0;
}

/* ---- options ------------------------------------------------------------------------------- */

#define O32(k, f, d, lo, hi, h) {k, NULL, NPK_OPT_U32, offsetof(shx_params, f), d, lo, hi, 0, 0, 0, "N", h, 0}
#define O64(k, f, d, lo, hi, h) {k, NULL, NPK_OPT_U64, offsetof(shx_params, f), d, lo, hi, 0, 0, 0, "N", h, 0}
static const npk_opt opt_defs[] = {
    {"preset", NULL, NPK_OPT_STR, offsetof(shx_params, preset), NULL, 0, 0, 0, 0, 0, "NAME",
     "timing preset applied before the other options: rtlgen-perf = the RTLGen perf model's\n"
     "cost rules (docs/shell.md); default = the options' defaults", 0},
    O32("fetch_cycles", fetch_cycles, "4", 0, 1000000, "decode cycles per descriptor"),
    O32("dma_bpc", dma_bpc, "16", 1, 1u << 20, "DMA bytes per cycle"),
    O32("dma_setup", dma_setup, "20", 0, 1000000, "setup cycles per DMA descriptor"),
    O32("dma_entry", dma_entry, "4", 0, 1000000, "cycles per gather/scatter list entry"),
    O32("gemm_macs", gemm_macs, "1024", 1, 1u << 24, "INT8/FP8 GEMM MACs per cycle"),
    O32("gemm_fmacs", gemm_fmacs, "512", 1, 1u << 24, "FP16/BF16 GEMM MACs per cycle"),
    O32("gemm_bpc", gemm_bpc, "64", 1, 1u << 20, "GEMM operand bytes per cycle"),
    O32("gemm_setup", gemm_setup, "32", 0, 1000000, "setup cycles per GEMM"),
    O32("vec_lanes", vec_lanes, "16", 1, 1u << 20, "VEC_OP element operations per cycle"),
    O32("vec_bpc", vec_bpc, "32", 1, 1u << 20, "VEC_OP bytes per cycle"),
    O32("vec_setup", vec_setup, "16", 0, 1000000, "setup cycles per VEC_OP/SOFTMAX"),
    O32("event_cycles", event_cycles, "50", 1, 1000000, "cycles per EVENT_SIGNAL/EVENT_WAIT"),
    O32("noop_cycles", noop_cycles, "10", 1, 1000000, "cycles per NOOP"),
    O64("event_timeout", event_timeout, "100000", 0, UINT64_MAX / 4, "EVENT_WAIT budget in cycles (0 = wait forever)"),
    O64("bus_timeout", bus_timeout, "10000", 1, UINT64_MAX / 4, "cycles before a beat without response is a TIMEOUT"),
    O32("beat", beat, "64", 1, 4096, "bus beat in bytes"),
    {"rtlgen_overlap", NULL, NPK_OPT_BOOL, offsetof(shx_params, rtlgen_overlap), "1", 0, 1, 0, 0, 0, NULL,
     "with preset=rtlgen-perf: 1 = run.py --overlap scheduling (DMA and compute engines overlap),\n"
     "0 = its sequential mode (each descriptor after the previous one)", 0},
    NPK_OPT_CLOCK_MHZ(shx_params, clock_mhz, "1000"),
    NPK_OPT_TIMING_ONLY(shx_params, timing_only),
    O64("max_macs", max_macs, "4294967296", 1, UINT64_MAX,
        "implementation limit: MACs of one GEMM (above: BAD_DESCRIPTOR, not run)"),
    O64("max_elems", max_elems, "16777216", 1, 1ull << 26,
        "implementation limit: elements of one VEC_OP or SOFTMAX (above: BAD_DESCRIPTOR)"),
    O32("max_pending", max_pending, "4096", 1, 1u << 24,
        "implementation limit: EVENT_SIGNALs in flight (one more: BAD_DESCRIPTOR)"),
    O64("max_dma", max_dma, "67108864", 1, 1ull << 30,
        "implementation limit: bytes one DMA_COPY/STRIDED/GATHER/SCATTER moves (above: BAD_DESCRIPTOR)"),
    {"tech_nm", NULL, NPK_OPT_U32, offsetof(shx_params, tech_nm), "40", 7, 45, 0, 0, 0, "45|40|28|16|7",
     "technology node of the energy and area model (docs/energy.md); never changes cycles", 0},
};

/* preset=NAME, wherever it appears among the options, sets its parameters
 * first; the other options given override them. */
static int apply_preset(shx_params *p, const char *opts) {
    const char *s = opts;
    while (s && *s) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len > 7 && !strncmp(s, "preset=", 7)) {
            const char *v = s + 7;
            size_t vl = len - 7;
            if (vl == 7 && !strncmp(v, "default", 7)) return 0;
            if (vl == 11 && !strncmp(v, "rtlgen-perf", 11)) {
                /* RTLGen npu/sim/perf/model.py at 1 GHz (1 ns = 1 cycle): dma_bw_gbps 16,
                 * gemm_tops 2 (1000 MACs/ns, every dtype), gemm_in/out_bw = dma_bw,
                 * vec_tops = gemm_tops (2000 element-ops/ns), vec_in/out_bw = dma_bw,
                 * softmax op cost 6, no overheads, event 50 ns, noop 10 ns. */
                p->fetch_cycles = 0;
                p->dma_bpc = 16, p->dma_setup = 0, p->dma_entry = 0;
                p->gemm_macs = p->gemm_fmacs = 1000, p->gemm_bpc = 16, p->gemm_setup = 0;
                p->vec_lanes = 2000, p->vec_bpc = 16, p->vec_setup = 0;
                p->event_cycles = 50, p->noop_cycles = 10;
                p->rtlgen = 1;
                return 0;
            }
            return npk_err(NPK_EINVAL, "shell option preset=%.*s: unknown preset (known: default, rtlgen-perf)", (int)vl, v);
        }
        s = end ? end + 1 : NULL;
    }
    return 0;
}

static int check_opts(const char *opts) {
    shx_params p;
    memset(&p, 0, sizeof p);
    return apply_preset(&p, opts);
}

static npk_dev *create(npk_mem *mem, const char *opts) {
    shx_params p;
    memset(&p, 0, sizeof p);
    if (npk_opt_defaults(opt_defs, sizeof opt_defs / sizeof opt_defs[0], &p) || apply_preset(&p, opts) ||
        npk_opt_parse_kv(opt_defs, sizeof opt_defs / sizeof opt_defs[0], &p, opts, "shell") ||
        npk_tech_check(p.tech_nm))
        return NULL;
    p.preset = NULL; /* pointed into the parser's copy of opts */
    shell *s = calloc(1, sizeof *s);
    if (!s || !(s->ev = calloc(65536, 1)) || !(s->evpend = calloc(65536, sizeof *s->evpend))) {
        if (s) free(s->ev);
        free(s);
        npk_err(NPK_ENOMEM, "out of memory");
        return NULL;
    }
    if (npk_regfile_init(&s->rf, regs, sizeof regs / sizeof regs[0], SHELL_MMIO_SIZE)) {
        free(s->ev);
        free(s->evpend);
        free(s);
        return NULL;
    }
    s->p = p;
    s->dev.hz = (uint64_t)p.clock_mhz * 1000000u;
    s->dev.ops = &shell_ops;
    s->dev.mem = mem;
    s->dev.regs = &s->rf;
    return &s->dev;
}

const npk_dev_class npk_shell_class = {
    .name = "shell",
    .summary = "NPU shell: descriptor ring, DMA copy/strided/gather/scatter, GEMM, VEC_OP, SOFTMAX, events",
    .mmio_base = SHELL_MMIO_BASE,
    .mmio_size = SHELL_MMIO_SIZE,
    .hz = 1000000000,
    .n_irq = 1,
    .opts = opt_defs,
    .n_opts = sizeof opt_defs / sizeof opt_defs[0],
    .create = create,
    .check_opts = check_opts,
    .pci_device = 0x4e03,
};
