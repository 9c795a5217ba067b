// SPDX-License-Identifier: MIT
/* The v0 NPU model: register window, descriptor queue engine, validation,
 * CPU-fallback contract, timing. ABI: include/npukit/v0.h; decisions:
 * docs/v0.md. The functional datapath is src/sim/v0_exec.c, the timing
 * model src/sim/v0_timing.c, the descriptor codec and validation (the
 * device ABI) src/abi/v0_desc.c. */
#include "npukit/error.h"
#include "npukit/gemm.h"
#include "npukit/opt.h"
#include "npukit/range.h"
#include "npukit/sim.h"
#include "npukit/trace.h"
#include "npukit/v0_model.h"
#include "npukit/v0_regs.h"
#include "sim/v0_internal.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ERRCLASS_NONE = 0, ERRCLASS_UNSUPPORTED = 1, ERRCLASS_HARD = 2 };

typedef struct v0 {
    npk_dev dev;
    npk_regfile rf;
    uint32_t caps;
    npk_v0_timing timing;
    /* queue engine */
    uint32_t tail;          /* DESC_TAIL */
    uint32_t committed;     /* head as of the last accepted doorbell */
    int busy, hang;
    uint64_t remaining;     /* cycles left on the executing descriptor */
    uint64_t start_cycle, dur;
    npk_v0_desc cur;        /* executing (or fallback-pending) descriptor */
    uint32_t cur_index;
    uint64_t cur_macs;
    int fb_pending;         /* descriptor at tail waits for the CPU */
    int err_class;
    uint32_t err_code;
    int ever_retired;
    /* counters */
    uint64_t perf_cycles, perf_macs;
    uint32_t perf_fallbacks;
    npk_v0_engine_stats cur_stats, perf_stats; /* per-engine figures: executing descriptor, retired total */
    npk_energy energy;  /* dynamic energy since creation (docs/energy.md; never reset) */
    uint64_t mmio;      /* register accesses since creation (priced in energy) */
    int timing_only; /* option timing_only: no functional compute */
    uint64_t max_macs, max_bytes; /* implementation limits (options): err 0x02 above them */
    npk_gemm_ws gemm_ws; /* the GEMM kernels' packing buffers, kept across descriptors */
} v0;

static v0 *V(npk_dev *d) { return (v0 *)d; }
static uint32_t *slot(v0 *v, uint32_t off) { return npk_regfile_slot(&v->rf, off); }
static uint32_t reg(v0 *v, uint32_t off) { return *slot(v, off); }
static uint32_t ring_len(v0 *v) { return reg(v, NPK_V0_REG_DESC_RING_LEN); }
static uint32_t qlevel(v0 *v) { return (v->committed - v->tail) & (ring_len(v) - 1); }

static void update_irq(v0 *v) {
    uint32_t st = reg(v, NPK_V0_REG_IRQ_STATUS), mask = reg(v, NPK_V0_REG_IRQ_MASK), ctrl = reg(v, NPK_V0_REG_CTRL);
    npk_dev_set_irq(&v->dev, NPK_V0_IRQ_NPU, (ctrl & NPK_V0_CTRL_IRQ_ENABLE) && (st & mask));
    npk_dev_set_irq(&v->dev, NPK_V0_IRQ_FALLBACK, (ctrl & NPK_V0_CTRL_FALLBACK) && (st & NPK_V0_IRQ_UNSUPPORTED));
}

static void raise_irq(v0 *v, uint32_t bits) {
    *slot(v, NPK_V0_REG_IRQ_STATUS) |= bits;
    update_irq(v);
}

/* Latch an error. The first error's code stays; the class only escalates. */
static void latch(v0 *v, uint32_t code, uint32_t index, int has_fault, uint64_t fault) {
    int cls = (code == NPK_V0_ERR_WINDOW || code == NPK_V0_ERR_BUS || code == NPK_V0_ERR_OVERFLOW) ? ERRCLASS_HARD
                                                                                                    : ERRCLASS_UNSUPPORTED;
    if (v->err_class == ERRCLASS_NONE) {
        v->err_code = code;
        *slot(v, NPK_V0_REG_ERR_DESC_INDEX) = index;
    }
    if (cls > v->err_class) v->err_class = cls;
    uint32_t bits = NPK_V0_IRQ_ERROR;
    if (cls == ERRCLASS_UNSUPPORTED) {
        bits |= NPK_V0_IRQ_UNSUPPORTED;
        v->perf_fallbacks++;
        v->fb_pending = 1;
    } else if (code == NPK_V0_ERR_OVERFLOW) {
        bits |= NPK_V0_IRQ_QUEUE_OVERFLOW;
    } else {
        bits |= NPK_V0_IRQ_BUS_ERROR;
    }
    if (has_fault) {
        *slot(v, NPK_V0_REG_ERR_FAULT_ADDR_LO) = (uint32_t)fault;
        *slot(v, NPK_V0_REG_ERR_FAULT_ADDR_HI) = (uint32_t)(fault >> 32);
    }
    raise_irq(v, bits);
}

static void retire(v0 *v, uint16_t flags, int by_cpu) {
    v->tail = (v->tail + 1) & (ring_len(v) - 1);
    v->ever_retired = 1;
    if (!by_cpu) {
        *slot(v, NPK_V0_REG_COMPLETION_TAG) = v->cur.w[NPK_V0_W_TAG];
        v->perf_macs += v->cur_macs;
        v->perf_stats.dram_rd += v->cur_stats.dram_rd;
        v->perf_stats.dram_wr += v->cur_stats.dram_wr;
        v->perf_stats.spad += v->cur_stats.spad;
        v->perf_stats.acc += v->cur_stats.acc;
        v->perf_stats.compute_cycles += v->cur_stats.compute_cycles;
        v->perf_stats.dma_cycles += v->cur_stats.dma_cycles;
        if (npk_energy_counting()) {
            npk_energy e;
            npk_v0_energy(&v->timing, &v->cur_stats, 0, npk_dev_hz(&v->dev), &e);
            npk_energy_add(&v->energy, &e);
        }
    }
    if ((flags & NPK_V0_F_IRQ) && (reg(v, NPK_V0_REG_IRQ_MASK) & NPK_V0_IRQ_DONE)) raise_irq(v, NPK_V0_IRQ_DONE);
}

/* Check the tensor [base, base + (rows-1)*stride + rowbytes) against
 * TENSOR_MEM; returns 1 with *fault = its first byte outside the window. A
 * tensor that wraps past 2^64 is outside with or without a window (*fault =
 * its base). */
static int outside_window(v0 *v, uint64_t base, uint64_t rows, uint64_t stride, uint64_t rowbytes, uint64_t *fault) {
    uint64_t ext;
    if (!npk_range_span(rows, stride, rowbytes, &ext) || !npk_range_ok(base, ext, NULL)) {
        *fault = base;
        return 1;
    }
    uint64_t len = reg(v, NPK_V0_REG_TENSOR_MEM_LEN);
    if (!len) return 0;
    uint64_t wb = reg(v, NPK_V0_REG_TENSOR_MEM_BASE_LO) | (uint64_t)reg(v, NPK_V0_REG_TENSOR_MEM_BASE_HI) << 32;
    if (base < wb || base - wb >= len) {
        *fault = base;
        return 1;
    }
    if (ext > len - (base - wb)) {
        *fault = wb + len;
        return 1;
    }
    return 0;
}

static int window_check(v0 *v, const npk_v0_desc *d, uint64_t *fault) {
    uint32_t op = npk_v0_desc_op(d);
    uint64_t a = npk_v0_desc_addr(d, NPK_V0_W_A_LO), b = npk_v0_desc_addr(d, NPK_V0_W_B_LO),
             c = npk_v0_desc_addr(d, NPK_V0_W_C_LO);
    uint64_t sa = d->w[NPK_V0_W_A_STRIDE], sb = d->w[NPK_V0_W_B_STRIDE], sc = d->w[NPK_V0_W_C_STRIDE];
    uint32_t m = d->w[NPK_V0_W_SHAPE_M], n = d->w[NPK_V0_W_SHAPE_N], k = d->w[NPK_V0_W_SHAPE_K];
    switch (op) {
    case NPK_V0_OP_MATMUL_S8:
    case NPK_V0_OP_MATMUL_S8_RELU:
        return outside_window(v, a, m, sa, k, fault) || outside_window(v, b, k, sb, n, fault) ||
               outside_window(v, c, m, sc, 4ull * n, fault);
    case NPK_V0_OP_CONV2D_S8:
    case NPK_V0_OP_CONV2D_S8_RELU: {
        npk_v0_conv cv;
        uint32_t oh, ow;
        npk_v0_desc_get_conv(d, &cv);
        npk_v0_conv_out(&cv, &oh, &ow);
        uint64_t kk = (uint64_t)cv.ksize * cv.ksize * cv.cin;
        return outside_window(v, a, cv.h, sa, (uint64_t)cv.w * cv.cin, fault) ||
               outside_window(v, b, kk, sb, cv.cout, fault) || outside_window(v, c, oh, sc, (uint64_t)ow * cv.cout, fault);
    }
    case NPK_V0_OP_RELU:
        return outside_window(v, a, m, sa, n, fault) || outside_window(v, c, m, sc, n, fault);
    case NPK_V0_OP_MAXPOOL_S8: {
        npk_v0_pool p;
        uint32_t oh, ow;
        npk_v0_desc_get_pool(d, &p);
        npk_v0_pool_out(&p, &oh, &ow);
        return outside_window(v, a, p.h, sa, (uint64_t)p.w * p.c, fault) ||
               outside_window(v, c, oh, sc, (uint64_t)ow * p.c, fault);
    }
    default: return 0;
    }
}

/* Host bytes npk_v0_exec allocates for a validated descriptor (the envelope
 * keeps every product far below 2^64). */
static uint64_t host_bytes(const npk_v0_desc *d) {
    uint64_t m = d->w[NPK_V0_W_SHAPE_M], n = d->w[NPK_V0_W_SHAPE_N], k = d->w[NPK_V0_W_SHAPE_K];
    switch (npk_v0_desc_op(d)) {
    case NPK_V0_OP_MATMUL_S8:
    case NPK_V0_OP_MATMUL_S8_RELU: return m * k + k * n + 4 * m * n;
    case NPK_V0_OP_CONV2D_S8:
    case NPK_V0_OP_CONV2D_S8_RELU: {
        npk_v0_conv c;
        uint32_t oh, ow;
        npk_v0_desc_get_conv(d, &c);
        npk_v0_conv_out(&c, &oh, &ow);
        uint64_t kk = (uint64_t)c.ksize * c.ksize * c.cin, P = (uint64_t)oh * ow;
        return (uint64_t)c.h * c.w * c.cin + kk * c.cout + P * kk + 5 * P * c.cout;
    }
    case NPK_V0_OP_RELU: return m * n;
    case NPK_V0_OP_MAXPOOL_S8: {
        npk_v0_pool p;
        uint32_t oh, ow;
        npk_v0_desc_get_pool(d, &p);
        npk_v0_pool_out(&p, &oh, &ow);
        return (uint64_t)p.h * p.w * p.c + (uint64_t)oh * ow * p.c;
    }
    default: return 0;
    }
}

static int can_dispatch(v0 *v) {
    return (reg(v, NPK_V0_REG_CTRL) & NPK_V0_CTRL_ENABLE) && !v->busy && !v->hang && !v->fb_pending &&
           v->err_class == ERRCLASS_NONE && qlevel(v) > 0;
}

/* Fetch, validate and (functionally) execute the descriptor at the tail.
 * Leaves the device busy for the modeled cycles, or with an error latched. */
static void dispatch(v0 *v) {
    uint32_t idx = v->tail;
    uint64_t base = reg(v, NPK_V0_REG_DESC_BASE_LO) | (uint64_t)reg(v, NPK_V0_REG_DESC_BASE_HI) << 32;
    uint64_t addr = base + (uint64_t)idx * NPK_V0_DESC_BYTES, fault = 0;
    uint8_t raw[NPK_V0_DESC_BYTES];
    npk_bus_resp r = npk_bus_copy_in(v->dev.mem, addr, raw, sizeof raw, NPK_V0_DESC_BYTES, NULL, &fault, NULL);
    v->cur_index = idx;
    v->start_cycle = v->dev.cycles;
    if (r == NPK_BUS_HANG) {
        memset(&v->cur, 0, sizeof v->cur);
        v->busy = v->hang = 1;
        return;
    }
    if (r != NPK_BUS_OK) {
        latch(v, NPK_V0_ERR_BUS, idx, 1, fault);
        return;
    }
    npk_v0_desc_unpack(raw, &v->cur);
    uint32_t code = npk_v0_validate(&v->cur, v->caps, NULL, 0);
    if (!code && (npk_v0_desc_macs(&v->cur) > v->max_macs || host_bytes(&v->cur) > v->max_bytes))
        code = NPK_V0_ERR_SHAPE; /* implementation limits (docs/v0.md): bounded host work, not run */
    if (code) {
        latch(v, code, idx, 0, 0);
        return;
    }
    if (window_check(v, &v->cur, &fault)) {
        latch(v, NPK_V0_ERR_WINDOW, idx, 1, fault);
        return;
    }
    r = npk_v0_exec(v->dev.mem, &v->gemm_ws, &v->cur, v->timing_only, &fault);
    if (r == NPK_BUS_HANG) {
        v->busy = v->hang = 1;
        return;
    }
    if (r != NPK_BUS_OK) {
        latch(v, NPK_V0_ERR_BUS, idx, 1, fault);
        return;
    }
    v->cur_macs = npk_v0_desc_macs(&v->cur);
    memset(&v->cur_stats, 0, sizeof v->cur_stats);
    v->dur = v->remaining = npk_v0_model_stats(&v->cur, &v->timing, &v->cur_stats);
    v->busy = 1;
}

static const char *dname(const v0 *v) { return v->dev.cls ? v->dev.cls->name : "v0"; }

/* Queue depth counter: descriptors committed and not yet retired. */
static void trace_depth(v0 *v) {
    if (v->dev.trace) npk_trace_counter(v->dev.trace, dname(v), "queue depth", v->dev.cycles, qlevel(v));
}

/* One phase of the timing model's schedule as an engine event. */
static void trace_phase(void *ctx, npk_v0_phase ph, uint64_t start, uint64_t dur, uint64_t bytes, uint64_t macs) {
    v0 *v = ctx;
    static const char *const track[] = {"desc fetch", "dma", "dma", "array", "vector", "host"};
    static const char *const name[] = {"fetch+decode", "load", "drain+store", "tile", "maxpool", "tile search"};
    char args[160];
    uint64_t t0 = v->start_cycle + start;
    if (ph == NPK_V0_PH_ARRAY)
        snprintf(args, sizeof args, "\"index\":%u,\"macs\":%" PRIu64 ",\"utilization\":%.4f", v->cur_index, macs,
                 (double)macs / ((double)v->timing.rows * v->timing.cols * (double)dur));
    else
        snprintf(args, sizeof args, "\"index\":%u,\"%s\":%" PRIu64, v->cur_index,
                 ph == NPK_V0_PH_STORE ? "written_bytes" : "read_bytes", bytes);
    npk_trace_complete(v->dev.trace, dname(v), track[ph], name[ph], t0, dur, args);
    if (ph == NPK_V0_PH_LOAD || ph == NPK_V0_PH_STORE) {
        npk_trace_counter(v->dev.trace, dname(v), "dma bytes/cycle", t0, (double)bytes / (double)dur);
        npk_trace_counter(v->dev.trace, dname(v), "dma bytes/cycle", t0 + dur, 0.0);
    }
}

static void finish(v0 *v) {
    v->busy = 0;
    if (v->dev.trace) {
        /* the phases of the timing model, then the descriptor on "queue" */
        npk_v0_model_schedule(&v->cur, &v->timing, trace_phase, v);
        char args[160];
        uint32_t op = npk_v0_desc_op(&v->cur);
        double util = v->dur ? (double)v->cur_macs / ((double)v->timing.rows * v->timing.cols * (double)v->dur) : 0.0;
        snprintf(args, sizeof args, "\"index\":%u,\"tag\":%u,\"opcode\":%u,\"macs\":%" PRIu64 ",\"utilization\":%.4f",
                 v->cur_index, v->cur.w[NPK_V0_W_TAG], op, v->cur_macs, util);
        npk_trace_complete(v->dev.trace, v->dev.cls ? v->dev.cls->name : "v0", "queue", npk_v0_op_name(op),
                           v->start_cycle, v->dur, args);
    }
    retire(v, (uint16_t)npk_v0_desc_flags(&v->cur), 0);
    trace_depth(v);
}

static void step(npk_dev *d, uint64_t cycles) {
    v0 *v = V(d);
    while (cycles) {
        if (v->busy) {
            uint64_t n = v->hang ? cycles : (cycles < v->remaining ? cycles : v->remaining);
            d->cycles += n;
            v->perf_cycles += n;
            cycles -= n;
            if (!v->hang) {
                v->remaining -= n;
                if (!v->remaining) finish(v);
            }
            continue;
        }
        if (can_dispatch(v)) {
            dispatch(v);
            continue;
        }
        d->cycles += cycles;
        break;
    }
}

static int stalled(npk_dev *d) { return V(d)->hang; }

/* A descriptor in flight changes nothing until its last cycle. */
static uint64_t quiet(npk_dev *d) {
    v0 *v = V(d);
    return v->busy && !v->hang && v->remaining ? v->remaining : 1;
}

static int idle(npk_dev *d) {
    v0 *v = V(d);
    if (v->hang) return 1; /* nothing will ever answer */
    return !v->busy && !can_dispatch(v);
}

/* ---- registers ---- */

static uint32_t rd_caps(npk_dev *d, const npk_reg *r, uint32_t s) {
    (void)r, (void)s;
    return V(d)->caps;
}

static uint32_t rd_status(npk_dev *d, const npk_reg *r, uint32_t s) {
    (void)r, (void)s;
    v0 *v = V(d);
    uint32_t q = qlevel(v), st = 0;
    if (v->busy) st |= NPK_V0_ST_BUSY;
    if (q == ring_len(v) - 1) st |= NPK_V0_ST_QUEUE_FULL;
    if (!q) st |= NPK_V0_ST_QUEUE_EMPTY;
    if (!q && !v->busy && v->err_class == ERRCLASS_NONE && v->ever_retired) st |= NPK_V0_ST_DONE;
    if (v->err_class != ERRCLASS_NONE) st |= NPK_V0_ST_ERROR | NPK_FVAL(NPK_V0_STATUS_ERRCODE, v->err_code);
    return st | NPK_FVAL(NPK_V0_STATUS_QLEVEL, q);
}

static uint32_t rd_tail(npk_dev *d, const npk_reg *r, uint32_t s) {
    (void)r, (void)s;
    return V(d)->tail;
}

static uint32_t rd_perf(npk_dev *d, const npk_reg *r, uint32_t s) {
    (void)s;
    v0 *v = V(d);
    switch (r->off) {
    case NPK_V0_REG_PERF_CYCLES: return (uint32_t)v->perf_cycles;
    case NPK_V0_REG_PERF_MACS_LO: return (uint32_t)v->perf_macs;
    case NPK_V0_REG_PERF_MACS_HI: return (uint32_t)(v->perf_macs >> 32);
    case NPK_V0_REG_PERF_DRAM_RD_LO: return (uint32_t)v->perf_stats.dram_rd;
    case NPK_V0_REG_PERF_DRAM_RD_HI: return (uint32_t)(v->perf_stats.dram_rd >> 32);
    case NPK_V0_REG_PERF_DRAM_WR_LO: return (uint32_t)v->perf_stats.dram_wr;
    case NPK_V0_REG_PERF_DRAM_WR_HI: return (uint32_t)(v->perf_stats.dram_wr >> 32);
    case NPK_V0_REG_PERF_SPAD_LO: return (uint32_t)v->perf_stats.spad;
    case NPK_V0_REG_PERF_SPAD_HI: return (uint32_t)(v->perf_stats.spad >> 32);
    case NPK_V0_REG_PERF_ACC_LO: return (uint32_t)v->perf_stats.acc;
    case NPK_V0_REG_PERF_ACC_HI: return (uint32_t)(v->perf_stats.acc >> 32);
    case NPK_V0_REG_PERF_COMPUTE_LO: return (uint32_t)v->perf_stats.compute_cycles;
    case NPK_V0_REG_PERF_COMPUTE_HI: return (uint32_t)(v->perf_stats.compute_cycles >> 32);
    case NPK_V0_REG_PERF_DMA_LO: return (uint32_t)v->perf_stats.dma_cycles;
    case NPK_V0_REG_PERF_DMA_HI: return (uint32_t)(v->perf_stats.dma_cycles >> 32);
    default: return v->perf_fallbacks;
    }
}

static void flush(v0 *v) {
    v->busy = v->hang = 0;
    v->remaining = 0;
    v->fb_pending = 0;
    v->err_class = ERRCLASS_NONE;
    v->err_code = 0;
    v->ever_retired = 0;
    v->tail = v->committed = 0;
    *slot(v, NPK_V0_REG_DESC_HEAD) = 0;
    *slot(v, NPK_V0_REG_ERR_DESC_INDEX) = 0;
    *slot(v, NPK_V0_REG_ERR_FAULT_ADDR_LO) = 0;
    *slot(v, NPK_V0_REG_ERR_FAULT_ADDR_HI) = 0;
}

/* CTRL.flush acts and self-clears: it is never stored. */
static uint32_t wr_ctrl(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val, uint32_t next) {
    (void)r, (void)old;
    v0 *v = V(d);
    if (val & NPK_V0_CTRL_FLUSH) {
        flush(v);
        trace_depth(v);
    }
    return next & ~NPK_V0_CTRL_FLUSH;
}

static void wr_ctrl_irq(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val) {
    (void)r, (void)old, (void)val;
    update_irq(V(d));
}

static void wr_irq_status(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val) {
    (void)r, (void)old;
    v0 *v = V(d);
    /* W1C of .error dismisses an unsupported_op error ("clearing IRQ_STATUS
     * alone is enough to dismiss unsupported_op"), whatever
     * cpu_fallback_select; the descriptor stays unconsumed at the tail, so
     * with cpu_fallback_select == 0 (DESC_TAIL writes ignored) the ring
     * still stalls until CTRL.flush. Hard errors (bus_error, queue_overflow)
     * need CTRL.flush. */
    if ((val & NPK_V0_IRQ_ERROR) && v->err_class == ERRCLASS_UNSUPPORTED) {
        v->err_class = ERRCLASS_NONE;
        v->err_code = 0;
    }
    update_irq(v);
}

static void wr_irq_mask(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val) {
    (void)r, (void)old, (void)val;
    update_irq(V(d));
}

/* DESC_BASE_*, DESC_RING_LEN: ignored while descriptors are queued; the
 * ring length only takes powers of two in [2, 256]. */
static uint32_t wr_ring_cfg(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val, uint32_t next) {
    v0 *v = V(d);
    /* queued: both indices are slots < the current length, so committed !=
     * tail is exact */
    if (v->committed != v->tail || v->busy || v->fb_pending) return old;
    if (r->off == NPK_V0_REG_DESC_RING_LEN) {
        if (val < NPK_V0_RING_MIN || val > NPK_V0_RING_MAX || (val & (val - 1))) return old;
        /* indices are taken modulo the new length */
        v->tail &= val - 1;
        v->committed = v->tail;
        *slot(v, NPK_V0_REG_DESC_HEAD) &= val - 1;
    }
    return next;
}

/* DESC_DOORBELL: the value is the new head; the register reads 0. */
static uint32_t wr_doorbell(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val, uint32_t next) {
    (void)r, (void)old, (void)next;
    v0 *v = V(d);
    uint32_t len = ring_len(v);
    uint32_t count = (val - v->committed) & (len - 1);
    uint32_t room = len - 1 - qlevel(v);
    if (val >= len || count > room) {
        latch(v, NPK_V0_ERR_OVERFLOW, v->committed, 0, 0);
        return 0;
    }
    v->committed = val;
    *slot(v, NPK_V0_REG_DESC_HEAD) = val;
    trace_depth(v);
    return 0;
}

/* DESC_TAIL reads the consumer index; a write is the CPU fallback's
 * write-back (only ERR_DESC_INDEX + 1 while a fallback is pending). */
static uint32_t wr_tail(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val, uint32_t next) {
    (void)r, (void)next;
    v0 *v = V(d);
    if (!(reg(v, NPK_V0_REG_CTRL) & NPK_V0_CTRL_FALLBACK) || !v->fb_pending) return old;
    if (val != ((v->tail + 1) & (ring_len(v) - 1))) return old;
    v->fb_pending = 0;
    retire(v, (uint16_t)npk_v0_desc_flags(&v->cur), 1);
    trace_depth(v);
    return old;
}

/* COMPLETION_TAG is writable only with CTRL.cpu_fallback_select. */
static uint32_t wr_tag(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val, uint32_t next) {
    (void)r, (void)val;
    v0 *v = V(d);
    return (reg(v, NPK_V0_REG_CTRL) & NPK_V0_CTRL_FALLBACK) ? next : old;
}

/* The register map, generated from npukit/v0_regs.def (index == offset / 4). */
#define NPK_REGTABLE_DEF "npukit/v0_regs.def"
#include "sim/regtable.h"

static uint32_t read32(npk_dev *d, uint32_t off) {
    V(d)->mmio++;
    return npk_regfile_read(&V(d)->rf, d, off);
}
static void write32(npk_dev *d, uint32_t off, uint32_t val) {
    V(d)->mmio++;
    npk_regfile_write(&V(d)->rf, d, off, val);
}

static void energy(npk_dev *d, npk_energy *e, npk_area *a, uint32_t *tech_nm) {
    v0 *v = V(d);
    uint32_t nm = v->timing.tech_nm ? v->timing.tech_nm : NPK_TECH_DEFAULT_NM;
    *e = v->energy;
    e->mmio_pj = (double)v->mmio * npk_mmio_pj(nm);
    npk_v0_area(&v->timing, a);
    *tech_nm = nm;
}

static void reset(npk_dev *d) {
    v0 *v = V(d);
    flush(v);
    v->perf_cycles = v->perf_macs = 0;
    memset(&v->perf_stats, 0, sizeof v->perf_stats);
    v->perf_fallbacks = 0;
    memset(&v->cur, 0, sizeof v->cur);
    npk_regfile_reset_dev(&v->rf, d); /* the CTRL/IRQ hooks recompute both lines */
}

static void destroy(npk_dev *d) {
    v0 *v = V(d);
    npk_regfile_fini(&v->rf);
    npk_gemm_ws_free(&v->gemm_ws);
    free(v);
}

static const npk_dev_ops ops = {
    .read32 = read32,
    .write32 = write32,
    .write64 = NULL,
    .step = step,
    .idle = idle,
    .quiet = quiet,
    .stalled = stalled,
    .energy = energy,
    .reset = reset,
    .destroy = destroy,
};

/* The model's options (npu devices prints this table). */
typedef struct v0_params {
    int gemmini_present;
    uint32_t dram_bw, dram_lat;
    uint32_t rows, cols, spad_kib, acc_kib;
    int gemmini_loop;
    uint32_t tech_nm;
    uint32_t clock_mhz;
    int timing_only;
    uint64_t max_macs, max_bytes;
} v0_params;

static const npk_opt opt_defs[] = {
    {"gemmini_present", NULL, NPK_OPT_BOOL, offsetof(v0_params, gemmini_present), "1", 0, 1, 0, 0, 0, NULL,
     "0: no engine, every compute op takes the CPU fallback", 0},
    {"dram_bw", NULL, NPK_OPT_U32, offsetof(v0_params, dram_bw), "8", 1, 1024, 0, 0, 0, "BYTES_PER_CYCLE",
     "DRAM bandwidth", 0},
    {"dram_lat", NULL, NPK_OPT_U32, offsetof(v0_params, dram_lat), "20", 0, 100000, 0, 0, 0, "CYCLES",
     "DRAM latency", 0},
    {"rows", NULL, NPK_OPT_U32, offsetof(v0_params, rows), "16", 8, 32, 0, 0, 0, "8|16|32",
     "systolic array rows (CAPS.ROWS); timing only", 0},
    {"cols", NULL, NPK_OPT_U32, offsetof(v0_params, cols), "16", 8, 32, 0, 0, 0, "8|16|32",
     "systolic array columns (CAPS.COLS); timing only", 0},
    {"spad_kib", NULL, NPK_OPT_U32, offsetof(v0_params, spad_kib), "256", 1, 65536, 0, 0, 0, "KIB",
     "scratchpad size (A and B tiles, double-buffered); timing only", 0},
    {"acc_kib", NULL, NPK_OPT_U32, offsetof(v0_params, acc_kib), "64", 1, 65536, 0, 0, 0, "KIB",
     "accumulator size (int32 C tiles, double-buffered); timing only", 0},
    {"gemmini_loop", NULL, NPK_OPT_BOOL, offsetof(v0_params, gemmini_loop), "0", 0, 1, 0, 0, 0, NULL,
     "1: convolutions and matmuls timed as the loop Gemmini's software runs (tiled_conv_auto/tiled_matmul_auto "
     "tiles, hardware loop schedule; with dram_bw=6 the calibration of docs/v0.md); timing only", 0},
    {"tech_nm", NULL, NPK_OPT_U32, offsetof(v0_params, tech_nm), "40", 7, 45, 0, 0, 0, "45|40|28|16|7",
     "technology node of the energy and area model (docs/energy.md); never changes cycles", 0},
    NPK_OPT_CLOCK_MHZ(v0_params, clock_mhz, "1000"),
    NPK_OPT_TIMING_ONLY(v0_params, timing_only),
    {"max_macs", NULL, NPK_OPT_U64, offsetof(v0_params, max_macs), "2147483648", 1, UINT64_MAX, 0, 0, 0, "N",
     "implementation limit: MACs of one descriptor (above: error 0x02, not run)", 0},
    {"max_bytes", NULL, NPK_OPT_U64, offsetof(v0_params, max_bytes), "268435456", 1, UINT64_MAX, 0, 0, 0, "N",
     "implementation limit: host buffer bytes of one descriptor (operands, im2col, results; above: error 0x02)", 0},
};

static int parse_opts(v0 *v, const char *opts) {
    v0_params p;
    memset(&p, 0, sizeof p);
    int rc = npk_opt_defaults(opt_defs, sizeof opt_defs / sizeof opt_defs[0], &p);
    if (!rc) rc = npk_opt_parse_kv(opt_defs, sizeof opt_defs / sizeof opt_defs[0], &p, opts, "v0");
    if (rc) return rc;
    v->dev.hz = (uint64_t)p.clock_mhz * 1000000u;
    v->timing_only = p.timing_only;
    v->max_macs = p.max_macs;
    v->max_bytes = p.max_bytes;
    v->timing.dram_bw = p.dram_bw;
    v->timing.dram_lat = p.dram_lat;
    v->timing.rows = p.rows;
    v->timing.cols = p.cols;
    v->timing.spad_bytes = p.spad_kib * 1024u;
    v->timing.acc_bytes = p.acc_kib * 1024u;
    v->timing.gemmini_loop = (uint32_t)p.gemmini_loop;
    v->timing.tech_nm = p.tech_nm;
    rc = npk_v0_timing_check(&v->timing);
    if (rc) return rc;
    uint32_t geom = NPK_FMASK(NPK_V0_CAPS_ROWS) | NPK_FMASK(NPK_V0_CAPS_COLS);
    v->caps = p.gemmini_present ? (NPK_V0_CAPS_DEFAULT & ~geom) | NPK_FVAL(NPK_V0_CAPS_ROWS, p.rows) |
                                      NPK_FVAL(NPK_V0_CAPS_COLS, p.cols)
                                : 0;
    return 0;
}

static npk_dev *create(npk_mem *mem, const char *opts) {
    v0 *v = calloc(1, sizeof *v);
    if (!v) {
        npk_err(NPK_ENOMEM, "out of memory");
        return NULL;
    }
    if (parse_opts(v, opts) || npk_regfile_init(&v->rf, regs, sizeof regs / sizeof regs[0], NPK_V0_MMIO_SIZE)) {
        free(v);
        return NULL;
    }
    v->dev.ops = &ops;
    v->dev.mem = mem;
    v->dev.regs = &v->rf;
    reset(&v->dev);
    return &v->dev;
}

const npk_dev_class npk_v0_class = {
    .name = "v0",
    .summary = "v0 NPU: Gemmini 16x16 int8 systolic array behind a 64-byte descriptor queue, CPU fallback",
    .mmio_base = NPK_V0_MMIO_BASE,
    .mmio_size = NPK_V0_MMIO_SIZE,
    .hz = NPK_V0_HZ,
    .n_irq = 2,
    .opts = opt_defs,
    .n_opts = sizeof opt_defs / sizeof opt_defs[0],
    .create = create,
    .pci_device = 0x4e02,
};
