/*
 * The e1 NPU device model: register-exact and cycle-exact.
 *
 * Behaviour follows shared/spec/e1-npu.md, settled by e1-rtl-notes.md (the
 * reference RTL). The model is written as a clock-edge machine: every
 * simulated cycle computes the next state from the state before the edge,
 * with the RTL's "last assignment wins" rule where several engines touch the
 * same register in one cycle. docs/e1.md lists every decision.
 *
 * Time and MMIO: a register access takes no simulated time. A write is
 * evaluated against the state after the last simulated cycle and its effects
 * override whatever the engines did in that cycle (the chip applies the
 * register write after the engine's update of the same edge).
 *
 * Memory: descriptor, stream and writeback beats go to dev->mem through
 * npk_bus_read/npk_bus_write (one 4-byte beat each). An address phase takes
 * one cycle; the response arrives `latency` cycles after the data/response
 * phase begins (so each transaction costs 2 + latency cycles). NPK_BUS_HANG
 * never answers, which ends in the 128-cycle descriptor timeout.
 */
#include "npukit/e1.h"
#include "npukit/error.h"
#include "npukit/opt.h"
#include "npukit/sim.h"
#include "npukit/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Register table indices: the table lists every register in offset order, so
 * the index of a register is its word offset. */
enum {
    IX_OP_A = 0, IX_OP_B, IX_RESULT, IX_CTRL, IX_OPCODE, IX_ACC, IX_RESULT_HI, IX_TRACE,
    IX_GEMM_CFG, IX_GEMM_BASE, IX_GEMM_STRIDE, IX_PERF_UNSUP, IX_CMD_PARAM, IX_SEC_OWNER,
    IX_SEC_LOCK, IX_SEC_STATUS, IX_DESC_BASE, IX_DESC_HEAD, IX_DESC_TAIL, IX_DESC_STATUS,
    IX_PERF_CYCLES, IX_PERF_MACS, IX_PERF_OPS, IX_PERF_ERRORS, IX_DESC_TMO, IX_DESC_BREAD,
    IX_DESC_BWRITTEN, IX_DESC_RBEATS, IX_DESC_WBEATS, IX_PERF_STALL, IX_PERF_SCRATCH,
    IX_PERF_THERMAL, IX_SCRATCH0, IX_COUNT = IX_SCRATCH0 + 16
};

/* Descriptor engine states (as in the chip). */
enum { DS_IDLE, DS_FETCH_ADDR, DS_FETCH_DATA, DS_STREAM_ADDR, DS_STREAM_DATA, DS_LAUNCH, DS_WAIT,
       DS_WRITE_ADDR, DS_WRITE_RESP, DS_ADVANCE };

typedef struct e1 {
    npk_dev dev; /* first: the model is handed out as npk_dev* */
    npk_regfile rf;
    uint32_t *v; /* rf.val: stored register values, indexed by IX_* */

    /* scalar datapath (latched at start / launch) */
    uint32_t busy_count, op_a_q, op_b_q, acc_q, opcode_q;
    int ternary_q;
    /* GEMM engine */
    int gemm_busy, gemm_s4;
    uint32_t gi, gj, gl, gacc;
    /* VRELU engine */
    int vec_busy;
    uint32_t vi;
    /* descriptor engine */
    int desc_busy, dstate;
    uint32_t fetch_word, dw[4], err_index, stream_done, write_done;
    npk_bus_resp bus_resp; /* response of the beat in flight */
    uint32_t bus_wait;     /* cycles until that response arrives */
    uint32_t bus_data;
    /* security */
    int sec_lock;
    /* tracing */
    uint64_t cmd_start, desc_start;
    uint32_t desc_macs_start;
    uint64_t eng_start;  /* first cycle of the running engine command */
    uint32_t eng_macs;   /* MACs it has done */
    int ph_kind;         /* open descriptor-engine memory phase (PH_*) */
    uint64_t ph_start;
    uint32_t ph_bytes;   /* bytes moved by its completed beats */
} e1;

/* Memory phases of the descriptor engine, traced on "desc fetch" and "dma". */
enum { PH_NONE, PH_FETCH, PH_STREAM, PH_WRITEBACK };

#define E1(d) ((e1 *)(d))

/* ---- helpers ---------------------------------------------------------------- */

static inline int is_gemm(uint32_t op) { return op == E1_OP_GEMM_S8 || op == E1_OP_GEMM_S4; }

static inline int32_t asr32(int32_t x, unsigned n) {
    /* arithmetic shift right without relying on implementation-defined >> */
    return x >= 0 ? x >> n : -(int32_t)(((uint32_t)(-(int64_t)x) + (1u << n) - 1) >> n);
}

static inline uint8_t sc_byte(const e1 *e, uint32_t addr) {
    return (uint8_t)(e->v[IX_SCRATCH0 + ((addr >> 2) & 15)] >> (8 * (addr & 3)));
}

static inline void sc_set_byte(e1 *e, uint32_t addr, uint8_t b) {
    uint32_t *w = &e->v[IX_SCRATCH0 + ((addr >> 2) & 15)];
    unsigned sh = 8 * (addr & 3);
    *w = (*w & ~(0xffu << sh)) | ((uint32_t)b << sh);
}

static inline int32_t sc_s4(const e1 *e, uint32_t nib) {
    uint8_t b = sc_byte(e, (nib >> 1) & 63);
    uint32_t n = (nib & 1) ? (b >> 4) : (b & 15u);
    return (int32_t)n - ((n & 8) ? 16 : 0);
}

static uint32_t latency_of(uint32_t op) {
    switch (op) {
    case E1_OP_MUL_LO: case E1_OP_MAC_S16: case E1_OP_EXP2_NEG_Q0_8: return 2;
    case E1_OP_DOT4_S8: case E1_OP_DOT8_S4: case E1_OP_SDOT4_S4_2_4: case E1_OP_DOT16_S2:
    case E1_OP_DOT4_FP8_E4M3: return 3;
    default: return 1;
    }
}

static const char *const op_names[16] = {
    "ADD", "SUB", "MUL_LO", "MAC_S16", "DOT4_S8", "MAX_U32", "MIN_U32", "DOT8_S4", "GEMM_S8",
    "GEMM_S4", "RELU4_S8", "VRELU_S8", "SDOT4_S4_2_4", "DOT16_S2", "DOT4_FP8_E4M3", "EXP2_NEG_Q0_8"};

static inline int32_t lane(uint32_t w, unsigned bits, unsigned i) {
    uint32_t m = (1u << bits) - 1, x = (w >> (bits * i)) & m;
    return (int32_t)x - ((x >> (bits - 1)) ? (int32_t)(m + 1) : 0);
}

static int32_t fp8_q88(uint32_t x) {
    uint32_t e = (x >> 3) & 15, m = x & 7, a;
    if (e == 0) a = m >> 1;
    else if (e == 1) a = (8 + m) >> 1;
    else a = (8 + m) << (e - 2);
    return (x & 0x80) ? -(int32_t)a : (int32_t)a;
}

static int ternary_invalid(uint32_t a, uint32_t b) {
    for (unsigned i = 0; i < 16; i++)
        if (((a >> (2 * i)) & 3) == 3 || ((b >> (2 * i)) & 3) == 3) return 1;
    return 0;
}

/* The scalar datapath: {hi, lo} of the latched opcode/operands. */
static uint64_t datapath(uint32_t op, uint32_t a, uint32_t b, uint32_t acc, int ternary) {
    uint32_t s = 0;
    switch (op) {
    case E1_OP_ADD: return (uint32_t)(a + b);
    case E1_OP_SUB: return (uint32_t)(a - b);
    case E1_OP_MUL_LO: return (uint64_t)a * b;
    case E1_OP_MAX_U32: return a > b ? a : b;
    case E1_OP_MIN_U32: return a < b ? a : b;
    case E1_OP_RELU4_S8: {
        uint32_t r = 0;
        for (unsigned i = 0; i < 4; i++) {
            uint32_t x = (a >> (8 * i)) & 0xff;
            if (!(x & 0x80)) r |= x << (8 * i);
        }
        return r;
    }
    case E1_OP_EXP2_NEG_Q0_8: {
        int d = (int8_t)(uint8_t)a;
        unsigned mag = d > 0 ? 0 : (unsigned)(-d);
        return 256u >> (mag > 8 ? 8 : mag);
    }
    case E1_OP_MAC_S16: s = (uint32_t)(lane(a, 16, 0) * lane(b, 16, 0)) + acc; break;
    case E1_OP_DOT4_S8:
        s = acc;
        for (unsigned i = 0; i < 4; i++) s += (uint32_t)(lane(a, 8, i) * lane(b, 8, i));
        break;
    case E1_OP_DOT8_S4:
        s = acc;
        for (unsigned i = 0; i < 8; i++) s += (uint32_t)(lane(a, 4, i) * lane(b, 4, i));
        break;
    case E1_OP_SDOT4_S4_2_4:
        for (unsigned i = 0; i < 4; i++)
            s += (uint32_t)(lane(a, 4, i) * lane(b, 4, (i / 2) * 4 + ((acc >> (2 * i)) & 3)));
        break;
    case E1_OP_DOT16_S2:
        s = acc;
        for (unsigned i = 0; i < 16; i++) {
            int32_t x, y;
            if (ternary) {
                static const int32_t t[4] = {0, 1, -1, 0};
                x = t[(a >> (2 * i)) & 3];
                y = t[(b >> (2 * i)) & 3];
            } else {
                x = lane(a, 2, i);
                y = lane(b, 2, i);
            }
            s += (uint32_t)(x * y);
        }
        break;
    case E1_OP_DOT4_FP8_E4M3:
        s = acc;
        for (unsigned i = 0; i < 4; i++) {
            uint32_t p = (uint32_t)fp8_q88((a >> (8 * i)) & 0xff) * (uint32_t)fp8_q88((b >> (8 * i)) & 0xff);
            s += (uint32_t)asr32((int32_t)p, 8);
        }
        break;
    default: return 0; /* GEMM/VRELU never reach the scalar datapath */
    }
    /* signed 32-bit result: RESULT_HI is its sign extension */
    return (uint64_t)(int64_t)(int32_t)s;
}

/* Whole-tile GEMM validation on the live GEMM registers. */
static int gemm_ok(const e1 *e, int s4) {
    uint32_t cfg = e->v[IX_GEMM_CFG], base = e->v[IX_GEMM_BASE], str = e->v[IX_GEMM_STRIDE];
    uint32_t m = e1_gemm_m(cfg), n = e1_gemm_n(cfg), k = e1_gemm_k(cfg);
    if (!m || !n || !k) return 0;
    uint32_t a_last = e1_gemm_base_a(base) + (m - 1) * e1_gemm_stride_a(str) + (k - 1);
    uint32_t b_last = e1_gemm_base_b(base) + (k - 1) * e1_gemm_stride_b(str) + (n - 1);
    uint32_t lim = s4 ? 128 : 64;
    if (a_last >= lim || b_last >= lim) return 0;
    uint32_t cb = e1_gemm_base_c(base), cs = e1_gemm_stride_c(str);
    if ((cb & 3) || (cs & 3)) return 0;
    return cb + (m - 1) * cs + 4 * (n - 1) + 3 < 64;
}

static int vec_ok(const e1 *e) {
    uint32_t len = e1_vrelu_len(e->v[IX_GEMM_CFG]), base = e->v[IX_GEMM_BASE];
    return len != 0 && e1_gemm_base_a(base) + len <= 64 && e1_gemm_base_b(base) + len <= 64;
}

static inline int perf_hidden(const e1 *e) {
    uint32_t s = e->v[IX_SEC_OWNER];
    return (s & E1_SEC_OWNER_OWNED) && (s & E1_SEC_OWNER_PERF_LOCK);
}

static inline void update_irq(e1 *e) {
    int lvl = (e->v[IX_CTRL] >> 1) & 1;
    if (lvl != e->dev.irq_level[0]) npk_dev_set_irq(&e->dev, 0, lvl);
}

/* ---- tracing ---------------------------------------------------------------- */

static void trace_cmd(e1 *e, const char *track, uint32_t op, uint64_t start, uint64_t dur, uint32_t macs,
                      int error) {
    char args[160];
    snprintf(args, sizeof args, "\"opcode\":%u,\"macs\":%u,\"error\":%d,\"descriptor\":%d", op, macs, error,
             e->desc_busy);
    npk_trace_complete(e->dev.trace, e->dev.cls ? e->dev.cls->name : "e1", track, op_names[op & 15], start, dur,
                       args);
}

static void trace_desc(e1 *e, uint32_t slot, uint64_t end) {
    char args[256], name[40];
    uint32_t w0 = e->dw[0];
    snprintf(name, sizeof name, "desc %s", op_names[w0 & 15]);
    snprintf(args, sizeof args,
             "\"slot\":%u,\"opcode\":%u,\"w0\":%u,\"stream\":%d,\"stream_bytes\":%u,\"scratch_off\":%u,"
             "\"writeback\":%d,\"macs\":%u,\"desc_status\":%u",
             slot, w0 & 15, w0, e1_desc_stream(w0), e1_desc_stream(w0) ? e1_desc_len(w0) : 0,
             e1_desc_scratch_off(w0), e1_desc_writeback(w0), e->v[IX_PERF_MACS] - e->desc_macs_start,
             e->v[IX_DESC_STATUS]);
    npk_trace_complete(e->dev.trace, e->dev.cls ? e->dev.cls->name : "e1", "descriptor", name, e->desc_start,
                       end - e->desc_start, args);
}

static const char *dev_name(const e1 *e) { return e->dev.cls ? e->dev.cls->name : "e1"; }

/* Queue depth: descriptors between DESC_TAIL and DESC_HEAD still to run. */
static void trace_depth(e1 *e, uint64_t cycle, uint32_t depth) {
    npk_trace_counter(e->dev.trace, dev_name(e), "queue depth", cycle, depth);
}

static void phase_open(e1 *e, int kind, uint64_t start) {
    e->ph_kind = kind;
    e->ph_start = start;
    e->ph_bytes = 0;
}

/* Close the open memory phase at cycle `end` (exclusive): one event on
 * "desc fetch" (descriptor words) or "dma" (stream-in / writeback), and the
 * bandwidth counter over it. */
static void phase_close(e1 *e, uint64_t end, int error) {
    if (e->ph_kind == PH_NONE) return;
    if (e->dev.trace) {
        static const char *const names[] = {"", "fetch", "stream in", "writeback"};
        char args[160];
        uint64_t dur = end - e->ph_start;
        int rd = e->ph_kind != PH_WRITEBACK;
        snprintf(args, sizeof args, "\"slot\":%u,\"read_bytes\":%u,\"written_bytes\":%u,\"error\":%d",
                 e->v[IX_DESC_TAIL], rd ? e->ph_bytes : 0, rd ? 0 : e->ph_bytes, error);
        const char *track = e->ph_kind == PH_FETCH ? "desc fetch" : "dma";
        npk_trace_complete(e->dev.trace, dev_name(e), track, names[e->ph_kind], e->ph_start, dur, args);
        const char *ctr = e->ph_kind == PH_FETCH ? "desc fetch bytes/cycle" : "dma bytes/cycle";
        npk_trace_counter(e->dev.trace, dev_name(e), ctr, e->ph_start, dur ? (double)e->ph_bytes / (double)dur : 0.0);
        npk_trace_counter(e->dev.trace, dev_name(e), ctr, end, 0.0);
    }
    e->ph_kind = PH_NONE;
}

/* ---- one clock edge ----------------------------------------------------------- */

/* araddr of the descriptor engine in a fetch- or stream-address state. */
static uint32_t read_addr(const e1 *e, int ds) {
    return ds == DS_FETCH_ADDR ? e->v[IX_DESC_BASE] + (e->v[IX_DESC_TAIL] << 4) + 4 * e->fetch_word
                               : e->dw[1] + e->stream_done;
}

/* The write-address state's beat: awaddr/wdata from the current state. */
static npk_bus_resp write_beat(e1 *e, uint32_t *lat) {
    uint32_t op = e->dw[0] & 15, base = e->v[IX_GEMM_BASE];
    uint32_t src = is_gemm(op) ? e1_gemm_base_c(base) : e1_gemm_base_b(base);
    uint32_t w = e->v[IX_SCRATCH0 + (((src >> 2) + (e->write_done >> 2)) & 15)];
    uint8_t b[4] = {(uint8_t)w, (uint8_t)(w >> 8), (uint8_t)(w >> 16), (uint8_t)(w >> 24)};
    return npk_bus_write(e->dev.mem, e->dw[2] + e->write_done, b, 4, lat);
}

static void edge(e1 *e) {
    uint32_t *v = e->v;
    const uint32_t st = v[IX_CTRL];
    const uint32_t errs = v[IX_PERF_ERRORS], unsup = v[IX_PERF_UNSUP], sbytes = v[IX_PERF_SCRATCH];
    const uint32_t bc = e->busy_count;
    const int st0 = (int)(st & 1);
    uint32_t st_n = st, errs_n = errs, unsup_n = unsup, sbytes_n = sbytes, bc_n = bc;
    const uint64_t now = e->dev.cycles; /* this edge ends cycle now+1 */
    const uint32_t cfg = v[IX_GEMM_CFG];
    const uint32_t gm = e1_gemm_m(cfg), gn = e1_gemm_n(cfg), gk = e1_gemm_k(cfg), vlen = e1_vrelu_len(cfg);

    /* The descriptor engine's "op finished" condition, from the pre-edge state. */
    int gemm_cfg = 0, vec_cfg = 0;
    if (e->gemm_busy) gemm_cfg = gemm_ok(e, e->gemm_s4);
    if (e->vec_busy) vec_cfg = vec_ok(e);
    int desc_done = 0;
    if (e->desc_busy && e->dstate == DS_WAIT) {
        uint32_t op = e->dw[0] & 15;
        if (is_gemm(op))
            desc_done = e->gemm_busy && gemm_cfg && e->gl == ((gk - 1) & 7) && e->gj == ((gn - 1) & 3) &&
                        e->gi == ((gm - 1) & 3);
        else if (op == E1_OP_VRELU_S8)
            desc_done = e->vec_busy && vec_cfg && e->vi == ((vlen - 1) & 63);
        else
            desc_done = bc == 1;
    }

    /* 1. scalar datapath */
    if (bc) {
        bc_n = bc - 1;
        if (bc == 1) {
            int err = e->opcode_q == E1_OP_DOT16_S2 && e->ternary_q && ternary_invalid(e->op_a_q, e->op_b_q);
            if (err) {
                st_n = 6;
                errs_n = errs + 1;
            } else {
                uint64_t r = datapath(e->opcode_q, e->op_a_q, e->op_b_q, e->acc_q, e->ternary_q);
                v[IX_RESULT] = (uint32_t)r;
                v[IX_RESULT_HI] = (uint32_t)(r >> 32);
                if (!e->desc_busy) st_n = 2;
            }
            if (e->dev.trace) trace_cmd(e, "datapath", e->opcode_q, e->eng_start, now + 1 - e->eng_start, 0, err);
        }
    }

    /* 2. GEMM engine: one MAC per cycle, loops i, j, l */
    if (e->gemm_busy) {
        v[IX_PERF_CYCLES]++;
        if (!gemm_cfg) {
            e->gemm_busy = 0;
            st_n = 6;
            errs_n = errs + 1;
            if (e->dev.trace)
                trace_cmd(e, "gemm", e->gemm_s4 ? 9 : 8, e->eng_start, now + 1 - e->eng_start, e->eng_macs, 1);
        } else {
            uint32_t base = v[IX_GEMM_BASE], str = v[IX_GEMM_STRIDE];
            uint32_t aa = e1_gemm_base_a(base) + e->gi * e1_gemm_stride_a(str) + e->gl;
            uint32_t ba = e1_gemm_base_b(base) + e->gl * e1_gemm_stride_b(str) + e->gj;
            int32_t a, b;
            if (e->gemm_s4) {
                a = sc_s4(e, aa);
                b = sc_s4(e, ba);
            } else {
                a = (int8_t)sc_byte(e, aa & 63);
                b = (int8_t)sc_byte(e, ba & 63);
            }
            v[IX_PERF_MACS]++;
            e->eng_macs++;
            uint32_t sum = e->gacc + (uint32_t)(a * b);
            if (e->gl == ((gk - 1) & 7)) {
                uint32_t ca = e1_gemm_base_c(base) + e->gi * e1_gemm_stride_c(str) + 4 * e->gj;
                v[IX_SCRATCH0 + ((ca >> 2) & 15)] = sum;
                sbytes_n = sbytes + 6;
                e->gacc = 0;
                e->gl = 0;
                if (e->gj == ((gn - 1) & 3)) {
                    e->gj = 0;
                    if (e->gi == ((gm - 1) & 3)) {
                        e->gi = 0;
                        e->gemm_busy = 0;
                        if (!e->desc_busy) st_n = 2;
                        if (e->dev.trace)
                            trace_cmd(e, "gemm", e->gemm_s4 ? 9 : 8, e->eng_start, now + 1 - e->eng_start, e->eng_macs,
                                      0);
                    } else {
                        e->gi = (e->gi + 1) & 3;
                    }
                } else {
                    e->gj = (e->gj + 1) & 3;
                }
            } else {
                e->gacc = sum;
                e->gl = (e->gl + 1) & 7;
                sbytes_n = sbytes + 2;
            }
        }
    }

    /* 3. VRELU engine: one byte per cycle, forward order */
    if (e->vec_busy) {
        v[IX_PERF_CYCLES]++;
        if (!vec_cfg) {
            e->vec_busy = 0;
            st_n = 6;
            errs_n = errs + 1;
            if (e->dev.trace) trace_cmd(e, "vector", E1_OP_VRELU_S8, e->eng_start, now + 1 - e->eng_start, 0, 1);
        } else {
            uint32_t base = v[IX_GEMM_BASE];
            uint8_t x = sc_byte(e, (e1_gemm_base_a(base) + e->vi) & 63);
            sc_set_byte(e, (e1_gemm_base_b(base) + e->vi) & 63, (x & 0x80) ? 0 : x);
            sbytes_n = sbytes + 2;
            if (e->vi == ((vlen - 1) & 63)) {
                e->vi = 0;
                e->vec_busy = 0;
                if (!e->desc_busy) st_n = 2;
                if (e->dev.trace) trace_cmd(e, "vector", E1_OP_VRELU_S8, e->eng_start, now + 1 - e->eng_start, 0, 0);
            } else {
                e->vi = (e->vi + 1) & 63;
            }
        }
    }

    /* 4. descriptor engine */
    if (e->desc_busy) {
        const uint32_t tmo = v[IX_DESC_TMO];
        int ds = e->dstate;
        v[IX_DESC_TMO] = tmo + 1;
        if (ds == DS_FETCH_ADDR || ds == DS_FETCH_DATA || ds == DS_STREAM_ADDR || ds == DS_STREAM_DATA ||
            ds == DS_WRITE_ADDR || ds == DS_WRITE_RESP)
            v[IX_PERF_STALL]++;
        uint32_t code = 0; /* non-zero: abort with this DESC_STATUS */
        if (tmo >= E1_DESC_TIMEOUT) {
            if (e->dev.trace && e->gemm_busy)
                trace_cmd(e, "gemm", e->gemm_s4 ? 9 : 8, e->eng_start, now + 1 - e->eng_start, e->eng_macs, 1);
            if (e->dev.trace && e->vec_busy)
                trace_cmd(e, "vector", E1_OP_VRELU_S8, e->eng_start, now + 1 - e->eng_start, 0, 1);
            bc_n = 0;
            e->gemm_busy = 0;
            e->vec_busy = 0;
            code = E1_DS_TIMEOUT;
            /* The bus valid signals are decoded from the state register, and
             * the timeout only blocks the next-state update: a request whose
             * address phase falls on this cycle still goes out. A write beat
             * lands in guest memory; neither it nor a read is counted (its
             * response is never taken). Fault rules see the beat. */
            if (st0 && (ds == DS_FETCH_ADDR || ds == DS_STREAM_ADDR)) {
                uint8_t b[4];
                (void)npk_bus_read(e->dev.mem, read_addr(e, ds), b, 4, NULL);
            } else if (st0 && ds == DS_WRITE_ADDR) {
                (void)write_beat(e, NULL);
            }
        } else {
            uint32_t w0 = e->dw[0], op = w0 & 15;
            switch (ds) {
            case DS_FETCH_ADDR:
            case DS_STREAM_ADDR:
                if (st0) { /* arvalid needs CTRL_STATUS.busy */
                    uint8_t b[4] = {0, 0, 0, 0};
                    uint32_t lat = 0;
                    e->bus_resp = npk_bus_read(e->dev.mem, read_addr(e, ds), b, 4, &lat);
                    e->bus_wait = lat;
                    e->bus_data = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
                    e->dstate = ds + 1;
                }
                break;
            case DS_FETCH_DATA:
            case DS_STREAM_DATA:
                if (e->bus_wait) {
                    e->bus_wait--;
                } else if (e->bus_resp == NPK_BUS_HANG || !st0) {
                    /* no response ever arrives / rready low: wait for the timeout */
                } else if (e->bus_resp != NPK_BUS_OK) {
                    code = ds == DS_FETCH_DATA ? E1_DS_FETCH_ERR : E1_DS_STREAM_ERR;
                } else {
                    v[IX_DESC_BREAD] += 4;
                    v[IX_DESC_RBEATS]++;
                    e->ph_bytes += 4;
                    if (ds == DS_FETCH_DATA) {
                        e->dw[e->fetch_word] = e->bus_data;
                        if (e->fetch_word == 3) {
                            e->fetch_word = 0;
                            e->dstate = DS_LAUNCH;
                            phase_close(e, now + 1, 0);
                        } else {
                            e->fetch_word++;
                            e->dstate = DS_FETCH_ADDR;
                        }
                    } else {
                        v[IX_SCRATCH0 + (((e1_desc_scratch_off(w0) >> 2) + (e->stream_done >> 2)) & 15)] = e->bus_data;
                        sbytes_n = sbytes + 4;
                        e->stream_done = (e->stream_done + 4) & 63;
                        e->dstate = e->stream_done >= e1_desc_len(w0) || e->stream_done == 0 ? DS_LAUNCH : DS_STREAM_ADDR;
                        if (e->dstate == DS_LAUNCH) phase_close(e, now + 1, 0);
                    }
                }
                break;
            case DS_LAUNCH: {
                uint32_t off = e1_desc_scratch_off(w0), len = e1_desc_len(w0);
                int stream_ok = !e1_desc_stream(w0) ||
                                (!(e->dw[1] & 3) && !(off & 3) && len && !(len & 3) && off + len <= 64);
                uint32_t wlen = (gm * gn * 4) & 63;
                uint32_t wsrc = is_gemm(op) ? e1_gemm_base_c(v[IX_GEMM_BASE]) : e1_gemm_base_b(v[IX_GEMM_BASE]);
                if (!is_gemm(op)) wlen = vlen;
                int wb_ok = !e1_desc_writeback(w0) ||
                            (!(e->dw[2] & 3) && is_gemm(op) && wsrc + wlen <= 64 && wlen && !(wlen & 3));
                if (!e1_desc_valid_owner(w0)) {
                    code = E1_DS_NO_OWNER;
                } else if (!stream_ok) {
                    code = E1_DS_STREAM_CFG;
                } else if (!wb_ok) {
                    code = E1_DS_WB_CFG;
                } else if (e1_desc_stream(w0) && e->stream_done == 0) {
                    e->dstate = DS_STREAM_ADDR;
                    phase_open(e, PH_STREAM, now + 1);
                } else if (is_gemm(op)) {
                    if (gemm_ok(e, op == E1_OP_GEMM_S4)) {
                        e->gemm_busy = 1;
                        e->gemm_s4 = op == E1_OP_GEMM_S4;
                        e->gi = e->gj = e->gl = 0;
                        e->gacc = 0;
                        v[IX_PERF_OPS]++;
                        e->dstate = DS_WAIT;
                        e->eng_start = now + 1;
                        e->eng_macs = 0;
                    } else {
                        code = E1_DS_CFG;
                    }
                } else if (op == E1_OP_VRELU_S8) {
                    if (vec_ok(e)) {
                        e->vec_busy = 1;
                        e->vi = 0;
                        v[IX_PERF_OPS]++;
                        e->dstate = DS_WAIT;
                        e->eng_start = now + 1;
                        e->eng_macs = 0;
                    } else {
                        code = E1_DS_CFG;
                    }
                } else {
                    bc_n = latency_of(op);
                    e->op_a_q = e->dw[1];
                    e->op_b_q = e->dw[2];
                    e->acc_q = e->dw[3];
                    e->opcode_q = op;
                    e->ternary_q = op == E1_OP_DOT16_S2 && (v[IX_CMD_PARAM] & E1_CMD_TERNARY);
                    v[IX_PERF_OPS]++;
                    e->dstate = DS_WAIT;
                    e->eng_start = now + 1;
                    e->eng_macs = 0;
                }
                break;
            }
            case DS_WAIT:
                if (desc_done) {
                    e->dstate = e1_desc_writeback(w0) ? DS_WRITE_ADDR : DS_ADVANCE;
                    if (e->dstate == DS_WRITE_ADDR) phase_open(e, PH_WRITEBACK, now + 1);
                }
                break;
            case DS_WRITE_ADDR:
                if (st0) {
                    uint32_t lat = 0;
                    e->bus_resp = write_beat(e, &lat);
                    e->bus_wait = lat;
                    e->dstate = DS_WRITE_RESP;
                }
                break;
            case DS_WRITE_RESP:
                if (e->bus_wait) {
                    e->bus_wait--;
                } else if (e->bus_resp == NPK_BUS_HANG || !st0) {
                    /* no response: wait for the timeout */
                } else if (e->bus_resp != NPK_BUS_OK) {
                    code = E1_DS_WB_ERR;
                } else {
                    uint32_t wlen = is_gemm(op) ? (gm * gn * 4) & 63 : vlen;
                    v[IX_DESC_BWRITTEN] += 4;
                    v[IX_DESC_WBEATS]++;
                    e->ph_bytes += 4;
                    sbytes_n = sbytes + 4;
                    uint32_t nd = (e->write_done + 4) & 63;
                    e->dstate = ((e->write_done + 4) & 63) >= wlen ? DS_ADVANCE : DS_WRITE_ADDR;
                    if (e->dstate == DS_ADVANCE) phase_close(e, now + 1, 0);
                    e->write_done = nd;
                }
                break;
            case DS_ADVANCE: {
                uint32_t tail = v[IX_DESC_TAIL];
                uint32_t next = (tail + 1) & 7;
                v[IX_DESC_TAIL] = next;
                e->err_index = tail;
                v[IX_DESC_STATUS] = E1_DS_DONE;
                v[IX_DESC_TMO] = 0;
                e->stream_done = 0;
                e->write_done = 0;
                if (e->dev.trace) {
                    trace_desc(e, tail, now + 1);
                    trace_depth(e, now + 1, (v[IX_DESC_HEAD] - next) & 7);
                }
                if (next == v[IX_DESC_HEAD]) {
                    e->desc_busy = 0;
                    e->dstate = DS_IDLE;
                    st_n = 2;
                } else {
                    e->fetch_word = 0;
                    e->dstate = DS_FETCH_ADDR;
                    e->desc_start = now + 1;
                    e->desc_macs_start = v[IX_PERF_MACS];
                    phase_open(e, PH_FETCH, now + 1);
                }
                break;
            }
            default:
                e->dstate = DS_FETCH_ADDR;
                break;
            }
        }
        if (code) {
            e->desc_busy = 0;
            e->dstate = DS_IDLE;
            st_n = 6;
            v[IX_DESC_STATUS] = code;
            errs_n = errs + 1;
            unsup_n = unsup + 1;
            phase_close(e, now + 1, 1);
            if (e->dev.trace) {
                trace_desc(e, v[IX_DESC_TAIL], now + 1);
                trace_depth(e, now + 1, 0);
            }
        }
    }

    v[IX_CTRL] = st_n;
    v[IX_PERF_ERRORS] = errs_n;
    v[IX_PERF_UNSUP] = unsup_n;
    v[IX_PERF_SCRATCH] = sbytes_n;
    e->busy_count = bc_n;
    e->dev.cycles = now + 1;
    if (st_n != st) update_irq(e);
}

static inline int busy(const e1 *e) { return e->busy_count || e->gemm_busy || e->vec_busy || e->desc_busy; }

static void e1_step(npk_dev *d, uint64_t cycles) {
    e1 *e = E1(d);
    while (cycles) {
        if (!busy(e)) { /* nothing changes while idle */
            d->cycles += cycles;
            return;
        }
        edge(e);
        cycles--;
    }
}

static int e1_idle(npk_dev *d) { return !busy(E1(d)); }

/* ---- register hooks --------------------------------------------------------- */

static void w_ctrl(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val) {
    (void)r;
    (void)old;
    e1 *e = E1(d);
    uint32_t *v = e->v;
    if ((val & E1_CTRL_START) && !busy(e)) {
        e->cmd_start = d->cycles;
        e->eng_start = d->cycles;
        e->eng_macs = 0;
        uint32_t op = v[IX_OPCODE] & 15;
        int fail = 0;
        if (v[IX_CMD_PARAM] & E1_CMD_DESC) {
            uint32_t sec = v[IX_SEC_OWNER];
            e->err_index = v[IX_DESC_TAIL];
            if ((sec & E1_SEC_OWNER_OWNED) && e->sec_lock &&
                (v[IX_CMD_PARAM] >> E1_CMD_OWNER_SHIFT) != (sec & E1_SEC_OWNER_MASK)) {
                v[IX_DESC_STATUS] = E1_DS_OWNER;
                fail = 1;
            } else if (v[IX_DESC_BASE] & 3) {
                v[IX_DESC_STATUS] = E1_DS_BASE_ALIGN;
                fail = 1;
            } else if (v[IX_DESC_HEAD] == v[IX_DESC_TAIL]) {
                v[IX_DESC_STATUS] = E1_DS_EMPTY;
                fail = 1;
            } else {
                v[IX_CTRL] = 1;
                v[IX_DESC_STATUS] = 0;
                e->desc_busy = 1;
                e->dstate = DS_FETCH_ADDR;
                e->fetch_word = 0;
                v[IX_DESC_TMO] = 0;
                v[IX_DESC_BREAD] = v[IX_DESC_BWRITTEN] = v[IX_DESC_RBEATS] = v[IX_DESC_WBEATS] = 0;
                e->stream_done = e->write_done = 0;
                e->desc_start = d->cycles;
                e->desc_macs_start = v[IX_PERF_MACS];
                phase_open(e, PH_FETCH, d->cycles);
                if (d->trace) trace_depth(e, d->cycles, (v[IX_DESC_HEAD] - v[IX_DESC_TAIL]) & 7);
            }
            if (fail && d->trace) {
                char args[96];
                snprintf(args, sizeof args, "\"doorbell\":1,\"desc_status\":%u", v[IX_DESC_STATUS]);
                npk_trace_complete(d->trace, d->cls ? d->cls->name : "e1", "descriptor", "doorbell rejected",
                                   d->cycles, 0, args);
            }
        } else if (is_gemm(op)) {
            if (gemm_ok(e, op == E1_OP_GEMM_S4)) {
                v[IX_CTRL] = 1;
                e->gemm_busy = 1;
                e->gemm_s4 = op == E1_OP_GEMM_S4;
                e->gi = e->gj = e->gl = 0;
                e->gacc = 0;
                v[IX_PERF_OPS]++;
            } else {
                fail = 1;
                if (d->trace) trace_cmd(e, "gemm", op, d->cycles, 0, 0, 1);
            }
        } else if (op == E1_OP_VRELU_S8) {
            if (vec_ok(e)) {
                v[IX_CTRL] = 1;
                e->vec_busy = 1;
                e->vi = 0;
                v[IX_PERF_OPS]++;
            } else {
                fail = 1;
                if (d->trace) trace_cmd(e, "vector", op, d->cycles, 0, 0, 1);
            }
        } else {
            v[IX_CTRL] = 1;
            e->busy_count = latency_of(op);
            e->op_a_q = v[IX_OP_A];
            e->op_b_q = v[IX_OP_B];
            e->acc_q = v[IX_ACC];
            e->opcode_q = op;
            e->ternary_q = op == E1_OP_DOT16_S2 && (v[IX_CMD_PARAM] & E1_CMD_TERNARY);
            v[IX_PERF_OPS]++;
        }
        if (fail) {
            v[IX_CTRL] = 6;
            v[IX_PERF_ERRORS]++;
            v[IX_PERF_UNSUP]++;
        }
    }
    if (val & E1_CTRL_CLEAR) {
        v[IX_CTRL] &= ~(E1_ST_DONE | E1_ST_ERROR);
        v[IX_DESC_STATUS] = 0;
        e->err_index = 0;
        v[IX_DESC_TMO] = 0;
        v[IX_DESC_BREAD] = v[IX_DESC_BWRITTEN] = v[IX_DESC_RBEATS] = v[IX_DESC_WBEATS] = 0;
        e->write_done = 0;
    }
    update_irq(e);
}

static uint32_t r_trace(npk_dev *d, const npk_reg *r, uint32_t stored) {
    (void)r;
    (void)stored;
    const e1 *e = E1(d);
    return (uint32_t)e->vec_busy << 8 | (uint32_t)e->gemm_busy << 7 | (e->opcode_q & 15) << 3 | (e->busy_count & 7);
}

static uint32_t r_perf(npk_dev *d, const npk_reg *r, uint32_t stored) {
    (void)r;
    return perf_hidden(E1(d)) ? 0 : stored;
}

static void w_perf_errors(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val) {
    (void)r;
    (void)old;
    uint32_t *v = E1(d)->v;
    if (val & E1_PERF_CLEAR) {
        /* every counter except DESC_TIMEOUT_COUNT */
        v[IX_PERF_UNSUP] = 0;
        v[IX_PERF_CYCLES] = v[IX_PERF_MACS] = v[IX_PERF_OPS] = v[IX_PERF_ERRORS] = 0;
        v[IX_DESC_BREAD] = v[IX_DESC_BWRITTEN] = v[IX_DESC_RBEATS] = v[IX_DESC_WBEATS] = 0;
        v[IX_PERF_STALL] = v[IX_PERF_SCRATCH] = v[IX_PERF_THERMAL] = 0;
    }
}

static void w_thermal(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val) {
    (void)r;
    (void)val;
    E1(d)->v[IX_PERF_THERMAL] = old + 1;
}

static void w_sec_owner(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val) {
    (void)r;
    (void)old;
    e1 *e = E1(d);
    if (!e->sec_lock) e->v[IX_SEC_OWNER] = val & E1_SEC_OWNER_CFG_MASK;
}

static void w_sec_lock(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val) {
    (void)r;
    (void)old;
    if (val & E1_SEC_LOCK_SET) E1(d)->sec_lock = 1;
}

static uint32_t r_sec_status(npk_dev *d, const npk_reg *r, uint32_t stored) {
    (void)r;
    (void)stored;
    const e1 *e = E1(d);
    uint32_t s = e->v[IX_SEC_OWNER];
    uint32_t owned = s >> 31, plock = (s >> 30) & 1;
    return E1_SOURCE_ID << E1_SEC_ST_SOURCE_SHIFT | (uint32_t)e->sec_lock << 3 | plock << 2 | (owned & plock) << 1 |
           owned;
}

static uint32_t r_desc_status(npk_dev *d, const npk_reg *r, uint32_t stored) {
    (void)r;
    const e1 *e = E1(d);
    uint32_t pending = (e->v[IX_DESC_HEAD] - e->v[IX_DESC_TAIL]) & 7;
    return stored | pending << E1_DS_PENDING_SHIFT | (e->err_index & 7) << E1_DS_ERR_INDEX_SHIFT |
           (uint32_t)e->desc_busy << 8;
}

#define RW(o, n, m) {o, n, 0, m, 0, NULL, NULL}
#define RO(o, n) {o, n, 0, 0, 0, NULL, NULL}
#define PERF(o, n) {o, n, 0, 0, 0, r_perf, NULL}
#define SCR(i) {E1_REG_SCRATCH0 + 4 * (i), "SCRATCH" #i, 0, 0xffffffffu, 0, NULL, NULL}

/* The register map (offset order; index == offset / 4). */
static const npk_reg e1_regs[IX_COUNT] = {
    RW(E1_REG_OP_A, "OP_A", 0xffffffffu),
    RW(E1_REG_OP_B, "OP_B", 0xffffffffu),
    RO(E1_REG_RESULT, "RESULT"),
    {E1_REG_CTRL_STATUS, "CTRL_STATUS", 0, 0, 0, NULL, w_ctrl},
    RW(E1_REG_OPCODE, "OPCODE", 0xfu),
    RW(E1_REG_ACC, "ACC", 0xffffffffu),
    RO(E1_REG_RESULT_HI, "RESULT_HI"),
    {E1_REG_TRACE, "TRACE", 0, 0, 0, r_trace, NULL},
    RW(E1_REG_GEMM_CFG, "GEMM_CFG", E1_GEMM_CFG_MASK),
    RW(E1_REG_GEMM_BASE, "GEMM_BASE", E1_GEMM_BASE_MASK),
    RW(E1_REG_GEMM_STRIDE, "GEMM_STRIDE", E1_GEMM_STRIDE_MASK),
    PERF(E1_REG_PERF_UNSUPPORTED, "PERF_UNSUPPORTED_OPS"),
    RW(E1_REG_CMD_PARAM, "CMD_PARAM", 0xffffffffu),
    {E1_REG_SEC_OWNER_CFG, "SEC_OWNER_CFG", 0, 0, 0, NULL, w_sec_owner},
    {E1_REG_SEC_LOCK, "SEC_LOCK", 0, 0, 0, NULL, w_sec_lock},
    {E1_REG_SEC_STATUS, "SEC_STATUS", E1_SEC_STATUS_RESET, 0, 0, r_sec_status, NULL},
    RW(E1_REG_DESC_BASE, "DESC_BASE", 0xffffffffu),
    RW(E1_REG_DESC_HEAD, "DESC_HEAD", 0x7u),
    RW(E1_REG_DESC_TAIL, "DESC_TAIL", 0x7u),
    {E1_REG_DESC_STATUS, "DESC_STATUS", E1_DS_EMPTY, 0, 0, r_desc_status, NULL},
    PERF(E1_REG_PERF_CYCLES, "PERF_CYCLES"),
    PERF(E1_REG_PERF_MACS, "PERF_MACS"),
    PERF(E1_REG_PERF_OPS, "PERF_OPS"),
    {E1_REG_PERF_ERRORS, "PERF_ERRORS", 0, 0, 0, r_perf, w_perf_errors},
    PERF(E1_REG_DESC_TIMEOUT_COUNT, "DESC_TIMEOUT_COUNT"),
    PERF(E1_REG_DESC_BYTES_READ, "DESC_BYTES_READ"),
    PERF(E1_REG_DESC_BYTES_WRITTEN, "DESC_BYTES_WRITTEN"),
    PERF(E1_REG_DESC_READ_BEATS, "DESC_READ_BEATS"),
    PERF(E1_REG_DESC_WRITE_BEATS, "DESC_WRITE_BEATS"),
    PERF(E1_REG_PERF_STALL_CYCLES, "PERF_STALL_CYCLES"),
    PERF(E1_REG_PERF_SCRATCH_BYTES, "PERF_SCRATCH_BYTES"),
    {E1_REG_PERF_THERMAL_THROTTLE, "PERF_THERMAL_THROTTLE", 0, 0, 0, r_perf, w_thermal},
    SCR(0), SCR(1), SCR(2), SCR(3), SCR(4), SCR(5), SCR(6), SCR(7),
    SCR(8), SCR(9), SCR(10), SCR(11), SCR(12), SCR(13), SCR(14), SCR(15),
};

/* ---- device ops ---------------------------------------------------------------- */

static uint32_t e1_read32(npk_dev *d, uint32_t off) { return npk_regfile_read(&E1(d)->rf, d, off); }

static void e1_write32(npk_dev *d, uint32_t off, uint32_t val) { npk_regfile_write(&E1(d)->rf, d, off, val); }

static void e1_reset(npk_dev *d) {
    e1 *e = E1(d);
    npk_regfile_reset(&e->rf);
    size_t keep = offsetof(e1, v) + sizeof e->v;
    memset((char *)e + keep, 0, sizeof *e - keep);
    e->bus_resp = NPK_BUS_OK;
    update_irq(e);
}

static void e1_destroy(npk_dev *d) {
    e1 *e = E1(d);
    npk_regfile_fini(&e->rf);
    free(e);
}

static const npk_dev_ops e1_ops = {
    .read32 = e1_read32,
    .write32 = e1_write32,
    .write64 = NULL,
    .step = e1_step,
    .idle = e1_idle,
    .reset = e1_reset,
    .destroy = e1_destroy,
};

static npk_dev *create(npk_mem *mem, const char *opts) {
    if (npk_opt_parse_kv(NULL, 0, NULL, opts, "e1")) return NULL; /* the e1 model takes no options */
    e1 *e = calloc(1, sizeof *e);
    if (!e) {
        npk_err(NPK_ENOMEM, "out of memory");
        return NULL;
    }
    if (npk_regfile_init(&e->rf, e1_regs, IX_COUNT, E1_REG_SPAN)) {
        free(e);
        return NULL;
    }
    e->v = e->rf.val;
    e->dev.ops = &e1_ops;
    e->dev.mem = mem;
    e->dev.regs = &e->rf;
    e1_reset(&e->dev);
    return &e->dev;
}

const npk_dev_class npk_e1_class = {
    .name = "e1",
    .summary = "e1 MMIO NPU: 16 scalar/packed opcodes, 64-byte scratchpad GEMM/VRELU, 8-entry descriptor ring",
    .mmio_base = E1_MMIO_BASE,
    .mmio_size = E1_MMIO_SIZE,
    .hz = E1_HZ,
    .n_irq = 1,
    .create = create,
};
