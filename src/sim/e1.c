// SPDX-License-Identifier: MIT
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
#include "npukit/e1_model.h"
#include "npukit/e1_regs.h"
#include "npukit/error.h"
#include "npukit/opt.h"
#include "npukit/sim.h"
#include "npukit/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h> /* desc_gemm: baseline on x86-64 */
#endif

/* Register table indices: the table is indexed by word offset (IX_<NAME> =
 * E1_REG_<NAME> / 4), generated from npukit/e1_regs.def. */
enum {
#define NPK_REG32(name, off, reset, ro, w1c, rsv, rd, prd, pre, post) IX_##name = (off) / 4,
#define NPK_FIELD(reg, field, shift, width)
#include "npukit/e1_regs.def"
#undef NPK_REG32
#undef NPK_FIELD
    IX_SLOTS = E1_REG_SPAN / 4
};

/* Descriptor engine states (as in the chip). */
enum { DS_IDLE, DS_FETCH_ADDR, DS_FETCH_DATA, DS_STREAM_ADDR, DS_STREAM_DATA, DS_LAUNCH, DS_WAIT,
       DS_WRITE_ADDR, DS_WRITE_RESP, DS_ADVANCE };

typedef struct e1 {
    npk_dev dev; /* first: the model is handed out as npk_dev* */
    npk_regfile rf;
    uint32_t *v; /* rf.val: stored register values, indexed by IX_* */
    int skip_idle; /* device option skip_idle: advance over waiting cycles in one step */
    /* energy counters since creation (docs/energy.md; never reset, kept
     * apart from the 32-bit PERF registers, which the guest clears): MACs,
     * scalar ops, scratchpad bytes, guest bytes read + written, register
     * accesses; the node of the model */
    uint64_t e_macs, e_ops, e_scratch, e_guest, e_mmio;
    uint32_t tech_nm;

    /* everything that is not a register: zeroed at reset */
    struct e1_state {
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
        /* gemm_overlap_free's answer for one GEMM configuration (CFG,
         * BASE, STRIDE, S4); 0 = none yet (CFG 0 is no valid tile) */
        uint32_t ov_cfg, ov_base, ov_str, ov_s4, ov_ok;
        /* desc_cfg_ok's answers (GEMM_S8, GEMM_S4) for one configuration */
        uint32_t dr_cfg, dr_base, dr_str, dr_valid;
        int dr_ok[2];
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
    } st;
    int timing_only; /* option timing_only: GEMM MACs and VRELU write 0 */
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

/* Little-endian 32-bit words from / to bytes (one load or store on a little-endian host). */
static inline uint32_t ld_le32(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
#else
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
#endif
}

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
/* only the byte-order-neutral branches store words byte by byte; little-endian hosts copy */
static inline void st_le32(uint8_t *p, uint32_t w) {
    p[0] = (uint8_t)w, p[1] = (uint8_t)(w >> 8), p[2] = (uint8_t)(w >> 16), p[3] = (uint8_t)(w >> 24);
}
#endif

static uint32_t latency_of(uint32_t op) {
    switch (op) {
    case E1_OP_MUL_LO: case E1_OP_MAC_S16: case E1_OP_EXP2_NEG_Q0_8: return 2;
    case E1_OP_DOT4_S8: case E1_OP_DOT8_S4: case E1_OP_SDOT4_S4_2_4: case E1_OP_DOT16_S2:
    case E1_OP_DOT4_FP8_E4M3: return 3;
    default: return 1;
    }
}

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
    uint32_t s = e->v[IX_SEC_OWNER_CFG];
    return (s & E1_SEC_OWNER_OWNED) && (s & E1_SEC_OWNER_PERF_LOCK);
}

static inline void update_irq(e1 *e) {
    int lvl = (int)NPK_FEX(e->v[IX_CTRL_STATUS], E1_CTRL_STATUS_DONE);
    if (lvl != e->dev.irq_level[0]) npk_dev_set_irq(&e->dev, 0, lvl);
}

/* ---- tracing ---------------------------------------------------------------- */

static void trace_cmd(e1 *e, const char *track, uint32_t op, uint64_t start, uint64_t dur, uint32_t macs,
                      int error) {
    char args[160];
    snprintf(args, sizeof args, "\"opcode\":%u,\"macs\":%u,\"error\":%d,\"descriptor\":%d", op, macs, error,
             e->st.desc_busy);
    npk_trace_complete(e->dev.trace, e->dev.cls ? e->dev.cls->name : "e1", track, e1_opcode_name(op & 15), start, dur,
                       args);
}

static void trace_desc(e1 *e, uint32_t slot, uint64_t end) {
    char args[256], name[40];
    uint32_t w0 = e->st.dw[0];
    snprintf(name, sizeof name, "desc %s", e1_opcode_name(w0 & 15));
    snprintf(args, sizeof args,
             "\"slot\":%u,\"opcode\":%u,\"w0\":%u,\"stream\":%d,\"stream_bytes\":%u,\"scratch_off\":%u,"
             "\"writeback\":%d,\"macs\":%u,\"desc_status\":%u",
             slot, w0 & 15, w0, e1_desc_stream(w0), e1_desc_stream(w0) ? e1_desc_len(w0) : 0,
             e1_desc_scratch_off(w0), e1_desc_writeback(w0), e->v[IX_PERF_MACS] - e->st.desc_macs_start,
             e->v[IX_DESC_STATUS]);
    npk_trace_complete(e->dev.trace, e->dev.cls ? e->dev.cls->name : "e1", "descriptor", name, e->st.desc_start,
                       end - e->st.desc_start, args);
}

static const char *dev_name(const e1 *e) { return e->dev.cls ? e->dev.cls->name : "e1"; }

/* Queue depth: descriptors between DESC_TAIL and DESC_HEAD still to run. */
static void trace_depth(e1 *e, uint64_t cycle, uint32_t depth) {
    npk_trace_counter(e->dev.trace, dev_name(e), "queue depth", cycle, depth);
}

static void phase_open(e1 *e, int kind, uint64_t start) {
    e->st.ph_kind = kind;
    e->st.ph_start = start;
    e->st.ph_bytes = 0;
}

/* Close the open memory phase at cycle `end` (exclusive): one event on
 * "desc fetch" (descriptor words) or "dma" (stream-in / writeback), and the
 * bandwidth counter over it. */
static void phase_close(e1 *e, uint64_t end, int error) {
    if (e->st.ph_kind == PH_NONE) return;
    if (e->dev.trace) {
        static const char *const names[] = {"", "fetch", "stream in", "writeback"};
        char args[160];
        uint64_t dur = end - e->st.ph_start;
        int rd = e->st.ph_kind != PH_WRITEBACK;
        snprintf(args, sizeof args, "\"slot\":%u,\"read_bytes\":%u,\"written_bytes\":%u,\"error\":%d",
                 e->v[IX_DESC_TAIL], rd ? e->st.ph_bytes : 0, rd ? 0 : e->st.ph_bytes, error);
        const char *track = e->st.ph_kind == PH_FETCH ? "desc fetch" : "dma";
        npk_trace_complete(e->dev.trace, dev_name(e), track, names[e->st.ph_kind], e->st.ph_start, dur, args);
        const char *ctr = e->st.ph_kind == PH_FETCH ? "desc fetch bytes/cycle" : "dma bytes/cycle";
        npk_trace_counter(e->dev.trace, dev_name(e), ctr, e->st.ph_start, dur ? (double)e->st.ph_bytes / (double)dur : 0.0);
        npk_trace_counter(e->dev.trace, dev_name(e), ctr, end, 0.0);
    }
    e->st.ph_kind = PH_NONE;
}

/* ---- one clock edge ----------------------------------------------------------- */

/* araddr of the descriptor engine in a fetch- or stream-address state. */
static uint32_t read_addr(const e1 *e, int ds) {
    return ds == DS_FETCH_ADDR ? e->v[IX_DESC_BASE] + e->v[IX_DESC_TAIL] * E1_DESC_BYTES + 4 * e->st.fetch_word
                               : e->st.dw[1] + e->st.stream_done;
}

/* The write-address state's beat: awaddr/wdata from the current state. */
static npk_bus_resp write_beat(e1 *e, uint32_t *lat) {
    uint32_t op = e1_desc_opcode(e->st.dw[0]), base = e->v[IX_GEMM_BASE];
    uint32_t src = is_gemm(op) ? e1_gemm_base_c(base) : e1_gemm_base_b(base);
    uint32_t w = e->v[IX_SCRATCH0 + (((src >> 2) + (e->st.write_done >> 2)) & 15)];
    uint8_t b[4] = {(uint8_t)w, (uint8_t)(w >> 8), (uint8_t)(w >> 16), (uint8_t)(w >> 24)};
    return npk_bus_write(e->dev.mem, e->st.dw[2] + e->st.write_done, b, 4, lat);
}

/* One cycle of the GEMM engine (one MAC per cycle, loops i, j, l): A and B
 * read from the scratchpad, the running sum, C stored at the last l, the
 * loops advanced. Returns the scratchpad bytes it touched (2, or 6 with the
 * C store); *last = 1 when this was the final MAC (the loops are back at 0). */
static inline uint32_t gemm_mac(e1 *e, uint32_t gm, uint32_t gn, uint32_t gk, int *last) {
    uint32_t *v = e->v, base = v[IX_GEMM_BASE], str = v[IX_GEMM_STRIDE];
    uint32_t aa = e1_gemm_base_a(base) + e->st.gi * e1_gemm_stride_a(str) + e->st.gl;
    uint32_t ba = e1_gemm_base_b(base) + e->st.gl * e1_gemm_stride_b(str) + e->st.gj;
    int32_t a, b;
    if (e->st.gemm_s4) {
        a = sc_s4(e, aa);
        b = sc_s4(e, ba);
    } else {
        a = (int8_t)sc_byte(e, aa & 63);
        b = (int8_t)sc_byte(e, ba & 63);
    }
    v[IX_PERF_MACS]++;
    e->st.eng_macs++;
    uint32_t sum = e->timing_only ? 0 : e->st.gacc + (uint32_t)(a * b);
    *last = 0;
    if (e->st.gl != ((gk - 1) & 7)) {
        e->st.gacc = sum;
        e->st.gl = (e->st.gl + 1) & 7;
        return 2;
    }
    uint32_t ca = e1_gemm_base_c(base) + e->st.gi * e1_gemm_stride_c(str) + 4 * e->st.gj;
    v[IX_SCRATCH0 + ((ca >> 2) & 15)] = sum;
    e->st.gacc = 0;
    e->st.gl = 0;
    if (e->st.gj != ((gn - 1) & 3)) {
        e->st.gj = (e->st.gj + 1) & 3;
    } else {
        e->st.gj = 0;
        if (e->st.gi != ((gm - 1) & 3)) {
            e->st.gi = (e->st.gi + 1) & 3;
        } else {
            e->st.gi = 0;
            *last = 1;
        }
    }
    return 6;
}

/* The descriptor engine launched its op (on the GEMM, VRELU or scalar engine) at
 * the edge ending cycle now+1: counted, and waited for from the next cycle. */
static void desc_launched(e1 *e, uint64_t now) {
    e->v[IX_PERF_OPS]++;
    e->st.dstate = DS_WAIT;
    e->st.eng_start = now + 1;
    e->st.eng_macs = 0;
}

/* Why long: one rising clock edge of the e1 RTL: the scalar datapath, GEMM, VRELU and
 * descriptor engines are evaluated from the same pre-edge state and commit together, as the
 * RTL's always block does; apart they would need that snapshot passed around and the order
 * would no longer show. */
static void edge(e1 *e) {
    uint32_t *v = e->v;
    const uint32_t st = v[IX_CTRL_STATUS];
    const uint32_t errs = v[IX_PERF_ERRORS], unsup = v[IX_PERF_UNSUPPORTED_OPS], sbytes = v[IX_PERF_SCRATCH_BYTES];
    const uint32_t bc = e->st.busy_count;
    const int st0 = (int)NPK_FEX(st, E1_CTRL_STATUS_BUSY);
    uint32_t st_n = st, errs_n = errs, unsup_n = unsup, sbytes_n = sbytes, bc_n = bc;
    const uint64_t now = e->dev.cycles; /* this edge ends cycle now+1 */
    const uint32_t cfg = v[IX_GEMM_CFG];
    const uint32_t gm = e1_gemm_m(cfg), gn = e1_gemm_n(cfg), gk = e1_gemm_k(cfg), vlen = e1_vrelu_len(cfg);

    /* The descriptor engine's "op finished" condition, from the pre-edge state. */
    int gemm_cfg = 0, vec_cfg = 0;
    if (e->st.gemm_busy) gemm_cfg = gemm_ok(e, e->st.gemm_s4);
    if (e->st.vec_busy) vec_cfg = vec_ok(e);
    int desc_done = 0;
    if (e->st.desc_busy && e->st.dstate == DS_WAIT) {
        uint32_t op = e1_desc_opcode(e->st.dw[0]);
        if (is_gemm(op))
            desc_done = e->st.gemm_busy && gemm_cfg && e->st.gl == ((gk - 1) & 7) && e->st.gj == ((gn - 1) & 3) &&
                        e->st.gi == ((gm - 1) & 3);
        else if (op == E1_OP_VRELU_S8)
            desc_done = e->st.vec_busy && vec_cfg && e->st.vi == ((vlen - 1) & 63);
        else
            desc_done = bc == 1;
    }

    /* 1. scalar datapath */
    if (bc) {
        bc_n = bc - 1;
        if (bc == 1) {
            int err = e->st.opcode_q == E1_OP_DOT16_S2 && e->st.ternary_q && ternary_invalid(e->st.op_a_q, e->st.op_b_q);
            if (err) {
                st_n = E1_ST_DONE | E1_ST_ERROR;
                errs_n = errs + 1;
            } else {
                uint64_t r = datapath(e->st.opcode_q, e->st.op_a_q, e->st.op_b_q, e->st.acc_q, e->st.ternary_q);
                v[IX_RESULT] = (uint32_t)r;
                v[IX_RESULT_HI] = (uint32_t)(r >> 32);
                if (!e->st.desc_busy) st_n = E1_ST_DONE;
            }
            if (e->dev.trace) trace_cmd(e, "datapath", e->st.opcode_q, e->st.eng_start, now + 1 - e->st.eng_start, 0, err);
        }
    }

    /* 2. GEMM engine: one MAC per cycle, loops i, j, l */
    if (e->st.gemm_busy) {
        v[IX_PERF_CYCLES]++;
        if (!gemm_cfg) {
            e->st.gemm_busy = 0;
            st_n = E1_ST_DONE | E1_ST_ERROR;
            errs_n = errs + 1;
            if (e->dev.trace)
                trace_cmd(e, "gemm", e->st.gemm_s4 ? E1_OP_GEMM_S4 : E1_OP_GEMM_S8, e->st.eng_start, now + 1 - e->st.eng_start, e->st.eng_macs, 1);
        } else {
            int last = 0;
            sbytes_n = sbytes + gemm_mac(e, gm, gn, gk, &last);
            if (last) {
                e->st.gemm_busy = 0;
                if (!e->st.desc_busy) st_n = E1_ST_DONE;
                if (e->dev.trace)
                    trace_cmd(e, "gemm", e->st.gemm_s4 ? E1_OP_GEMM_S4 : E1_OP_GEMM_S8, e->st.eng_start,
                              now + 1 - e->st.eng_start, e->st.eng_macs, 0);
            }
        }
    }

    /* 3. VRELU engine: one byte per cycle, forward order */
    if (e->st.vec_busy) {
        v[IX_PERF_CYCLES]++;
        if (!vec_cfg) {
            e->st.vec_busy = 0;
            st_n = E1_ST_DONE | E1_ST_ERROR;
            errs_n = errs + 1;
            if (e->dev.trace) trace_cmd(e, "vector", E1_OP_VRELU_S8, e->st.eng_start, now + 1 - e->st.eng_start, 0, 1);
        } else {
            uint32_t base = v[IX_GEMM_BASE];
            uint8_t x = sc_byte(e, (e1_gemm_base_a(base) + e->st.vi) & 63);
            sc_set_byte(e, (e1_gemm_base_b(base) + e->st.vi) & 63, (x & 0x80) || e->timing_only ? 0 : x);
            sbytes_n = sbytes + 2;
            if (e->st.vi == ((vlen - 1) & 63)) {
                e->st.vi = 0;
                e->st.vec_busy = 0;
                if (!e->st.desc_busy) st_n = E1_ST_DONE;
                if (e->dev.trace) trace_cmd(e, "vector", E1_OP_VRELU_S8, e->st.eng_start, now + 1 - e->st.eng_start, 0, 0);
            } else {
                e->st.vi = (e->st.vi + 1) & 63;
            }
        }
    }

    /* 4. descriptor engine */
    if (e->st.desc_busy) {
        const uint32_t tmo = v[IX_DESC_TIMEOUT_COUNT];
        int ds = e->st.dstate;
        v[IX_DESC_TIMEOUT_COUNT] = tmo + 1;
        if (ds == DS_FETCH_ADDR || ds == DS_FETCH_DATA || ds == DS_STREAM_ADDR || ds == DS_STREAM_DATA ||
            ds == DS_WRITE_ADDR || ds == DS_WRITE_RESP)
            v[IX_PERF_STALL_CYCLES]++;
        uint32_t code = 0; /* non-zero: abort with this DESC_STATUS */
        if (tmo >= E1_DESC_TIMEOUT) {
            if (e->dev.trace && e->st.gemm_busy)
                trace_cmd(e, "gemm", e->st.gemm_s4 ? E1_OP_GEMM_S4 : E1_OP_GEMM_S8, e->st.eng_start, now + 1 - e->st.eng_start, e->st.eng_macs, 1);
            if (e->dev.trace && e->st.vec_busy)
                trace_cmd(e, "vector", E1_OP_VRELU_S8, e->st.eng_start, now + 1 - e->st.eng_start, 0, 1);
            bc_n = 0;
            e->st.gemm_busy = 0;
            e->st.vec_busy = 0;
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
            uint32_t w0 = e->st.dw[0], op = e1_desc_opcode(w0);
            switch (ds) {
            case DS_FETCH_ADDR:
            case DS_STREAM_ADDR:
                if (st0) { /* arvalid needs CTRL_STATUS.busy */
                    uint8_t b[4] = {0, 0, 0, 0};
                    uint32_t lat = 0;
                    e->st.bus_resp = npk_bus_read(e->dev.mem, read_addr(e, ds), b, 4, &lat);
                    e->st.bus_wait = lat;
                    e->st.bus_data = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
                    e->st.dstate = ds + 1;
                }
                break;
            case DS_FETCH_DATA:
            case DS_STREAM_DATA:
                if (e->st.bus_wait) {
                    e->st.bus_wait--;
                } else if (e->st.bus_resp == NPK_BUS_HANG || !st0) {
                    /* no response ever arrives / rready low: wait for the timeout */
                } else if (e->st.bus_resp != NPK_BUS_OK) {
                    code = ds == DS_FETCH_DATA ? E1_DS_FETCH_ERR : E1_DS_STREAM_ERR;
                } else {
                    v[IX_DESC_BYTES_READ] += 4;
                    v[IX_DESC_READ_BEATS]++;
                    e->st.ph_bytes += 4;
                    if (ds == DS_FETCH_DATA) {
                        e->st.dw[e->st.fetch_word] = e->st.bus_data;
                        if (e->st.fetch_word == 3) {
                            e->st.fetch_word = 0;
                            e->st.dstate = DS_LAUNCH;
                            phase_close(e, now + 1, 0);
                        } else {
                            e->st.fetch_word++;
                            e->st.dstate = DS_FETCH_ADDR;
                        }
                    } else {
                        v[IX_SCRATCH0 + (((e1_desc_scratch_off(w0) >> 2) + (e->st.stream_done >> 2)) & 15)] = e->st.bus_data;
                        sbytes_n = sbytes + 4;
                        e->st.stream_done = (e->st.stream_done + 4) & 63;
                        e->st.dstate = e->st.stream_done >= e1_desc_len(w0) || e->st.stream_done == 0 ? DS_LAUNCH : DS_STREAM_ADDR;
                        if (e->st.dstate == DS_LAUNCH) phase_close(e, now + 1, 0);
                    }
                }
                break;
            case DS_LAUNCH: {
                uint32_t off = e1_desc_scratch_off(w0), len = e1_desc_len(w0);
                int stream_ok = !e1_desc_stream(w0) ||
                                (!(e->st.dw[1] & 3) && !(off & 3) && len && !(len & 3) && off + len <= 64);
                uint32_t wlen = (gm * gn * 4) & 63;
                uint32_t wsrc = is_gemm(op) ? e1_gemm_base_c(v[IX_GEMM_BASE]) : e1_gemm_base_b(v[IX_GEMM_BASE]);
                if (!is_gemm(op)) wlen = vlen;
                int wb_ok = !e1_desc_writeback(w0) ||
                            (!(e->st.dw[2] & 3) && is_gemm(op) && wsrc + wlen <= 64 && wlen && !(wlen & 3));
                if (!e1_desc_valid_owner(w0)) {
                    code = E1_DS_NO_OWNER;
                } else if (!stream_ok) {
                    code = E1_DS_STREAM_CFG;
                } else if (!wb_ok) {
                    code = E1_DS_WB_CFG;
                } else if (e1_desc_stream(w0) && e->st.stream_done == 0) {
                    e->st.dstate = DS_STREAM_ADDR;
                    phase_open(e, PH_STREAM, now + 1);
                } else if (is_gemm(op)) {
                    if (gemm_ok(e, op == E1_OP_GEMM_S4)) {
                        e->st.gemm_busy = 1;
                        e->st.gemm_s4 = op == E1_OP_GEMM_S4;
                        e->st.gi = e->st.gj = e->st.gl = 0;
                        e->st.gacc = 0;
                        desc_launched(e, now);
                    } else {
                        code = E1_DS_CFG;
                    }
                } else if (op == E1_OP_VRELU_S8) {
                    if (vec_ok(e)) {
                        e->st.vec_busy = 1;
                        e->st.vi = 0;
                        desc_launched(e, now);
                    } else {
                        code = E1_DS_CFG;
                    }
                } else {
                    bc_n = latency_of(op);
                    e->st.op_a_q = e->st.dw[1];
                    e->st.op_b_q = e->st.dw[2];
                    e->st.acc_q = e->st.dw[3];
                    e->st.opcode_q = op;
                    e->st.ternary_q = op == E1_OP_DOT16_S2 && (v[IX_CMD_PARAM] & E1_CMD_TERNARY);
                    desc_launched(e, now);
                }
                break;
            }
            case DS_WAIT:
                if (desc_done) {
                    e->st.dstate = e1_desc_writeback(w0) ? DS_WRITE_ADDR : DS_ADVANCE;
                    if (e->st.dstate == DS_WRITE_ADDR) phase_open(e, PH_WRITEBACK, now + 1);
                }
                break;
            case DS_WRITE_ADDR:
                if (st0) {
                    uint32_t lat = 0;
                    e->st.bus_resp = write_beat(e, &lat);
                    e->st.bus_wait = lat;
                    e->st.dstate = DS_WRITE_RESP;
                }
                break;
            case DS_WRITE_RESP:
                if (e->st.bus_wait) {
                    e->st.bus_wait--;
                } else if (e->st.bus_resp == NPK_BUS_HANG || !st0) {
                    /* no response: wait for the timeout */
                } else if (e->st.bus_resp != NPK_BUS_OK) {
                    code = E1_DS_WB_ERR;
                } else {
                    uint32_t wlen = is_gemm(op) ? (gm * gn * 4) & 63 : vlen;
                    v[IX_DESC_BYTES_WRITTEN] += 4;
                    v[IX_DESC_WRITE_BEATS]++;
                    e->st.ph_bytes += 4;
                    sbytes_n = sbytes + 4;
                    uint32_t nd = (e->st.write_done + 4) & 63;
                    e->st.dstate = ((e->st.write_done + 4) & 63) >= wlen ? DS_ADVANCE : DS_WRITE_ADDR;
                    if (e->st.dstate == DS_ADVANCE) phase_close(e, now + 1, 0);
                    e->st.write_done = nd;
                }
                break;
            case DS_ADVANCE: {
                uint32_t tail = v[IX_DESC_TAIL];
                uint32_t next = (tail + 1) % E1_RING_ENTRIES;
                v[IX_DESC_TAIL] = next;
                e->st.err_index = tail;
                v[IX_DESC_STATUS] = E1_DS_DONE;
                v[IX_DESC_TIMEOUT_COUNT] = 0;
                e->st.stream_done = 0;
                e->st.write_done = 0;
                if (e->dev.trace) {
                    trace_desc(e, tail, now + 1);
                    trace_depth(e, now + 1, (v[IX_DESC_HEAD] - next) & 7);
                }
                if (next == v[IX_DESC_HEAD]) {
                    e->st.desc_busy = 0;
                    e->st.dstate = DS_IDLE;
                    st_n = E1_ST_DONE;
                } else {
                    e->st.fetch_word = 0;
                    e->st.dstate = DS_FETCH_ADDR;
                    e->st.desc_start = now + 1;
                    e->st.desc_macs_start = v[IX_PERF_MACS];
                    phase_open(e, PH_FETCH, now + 1);
                }
                break;
            }
            default:
                e->st.dstate = DS_FETCH_ADDR;
                break;
            }
        }
        if (code) {
            e->st.desc_busy = 0;
            e->st.dstate = DS_IDLE;
            st_n = E1_ST_DONE | E1_ST_ERROR;
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

    v[IX_CTRL_STATUS] = st_n;
    v[IX_PERF_ERRORS] = errs_n;
    v[IX_PERF_UNSUPPORTED_OPS] = unsup_n;
    v[IX_PERF_SCRATCH_BYTES] = sbytes_n;
    e->st.busy_count = bc_n;
    e->dev.cycles = now + 1;
    if (st_n != st) update_irq(e);
}

static inline int busy(const e1 *e) { return e->st.busy_count || e->st.gemm_busy || e->st.vec_busy || e->st.desc_busy; }

/* Event skipping (issue 15 point 4). The number of coming edges (from the
 * current state) whose only effects are counting: the scalar latency counter
 * going down, DESC_TIMEOUT_COUNT and PERF_STALL_CYCLES going up, a bus
 * response's wait going down. Such edges fire no engine step, move no state
 * machine, raise no interrupt and record no trace event, so k of them equal
 * one update of those counters by k (e1_skip). Every other edge is stepped
 * (0 returned): an engine computing (GEMM, VRELU), the scalar result edge
 * (busy_count 1), a bus beat going out or being taken, launch, advance, and
 * the timeout edge itself (the bound keeps DESC_TIMEOUT_COUNT below
 * E1_DESC_TIMEOUT on every skipped edge). UINT64_MAX: no bound. */
static uint64_t idle_span(const e1 *e) {
    if (e->st.gemm_busy || e->st.vec_busy) return 0;
    uint64_t k = UINT64_MAX;
    uint32_t bc = e->st.busy_count;
    if (bc == 1) return 0;
    if (bc > 1) k = bc - 1;
    if (e->st.desc_busy) {
        uint32_t tmo = e->v[IX_DESC_TIMEOUT_COUNT];
        if (tmo >= E1_DESC_TIMEOUT) return 0;
        uint64_t t = E1_DESC_TIMEOUT - tmo;
        if (t < k) k = t;
        int ds = e->st.dstate, st0 = (int)NPK_FEX(e->v[IX_CTRL_STATUS], E1_CTRL_STATUS_BUSY);
        if (ds == DS_FETCH_DATA || ds == DS_STREAM_DATA || ds == DS_WRITE_RESP) {
            if (e->st.bus_wait) {
                if (e->st.bus_wait < k) k = e->st.bus_wait; /* the response edge is stepped */
            } else if (!(e->st.bus_resp == NPK_BUS_HANG || !st0)) {
                return 0; /* a response is taken on this edge */
            }
        } else if (ds != DS_WAIT) { /* DS_WAIT with no engine busy and bc != 1: the op is not done */
            return 0;
        }
    }
    return k;
}

static void e1_skip(e1 *e, uint64_t k) {
    if (e->st.busy_count) e->st.busy_count -= (uint32_t)k;
    if (e->st.desc_busy) {
        int ds = e->st.dstate;
        e->v[IX_DESC_TIMEOUT_COUNT] += (uint32_t)k;
        if (ds != DS_WAIT) {
            e->v[IX_PERF_STALL_CYCLES] += (uint32_t)k;
            if (e->st.bus_wait) e->st.bus_wait -= (uint32_t)k;
        }
    }
    e->dev.cycles += k;
}

/* 1 when no C store of a gm x gn x gk tile (within the counters' 4/4/8
 * range) writes a scratchpad byte that a later MAC reads: every MAC of the
 * tile then sees its operands as they were at the start of the tile (or of
 * any run of its MACs), so they can be read once (0: gemm_mac runs MAC by
 * MAC). A store over operand bytes that only earlier cells read is allowed
 * (e1-rtl-notes.md: "C may alias A or B for later cells"; the lowering's
 * 3x3x7 tile puts C over the A rows it has used). Cells run in the order
 * (i, j), the store of cell (i, j) at its last MAC, after that MAC's reads.
 * It depends on the configuration registers only, and the answer is kept
 * for the next call. */
static int gemm_overlap_free(e1 *e, uint32_t gm, uint32_t gn, uint32_t gk, uint32_t s4) {
    const uint32_t cfg = e->v[IX_GEMM_CFG], base = e->v[IX_GEMM_BASE], str = e->v[IX_GEMM_STRIDE];
    if (e->st.ov_cfg == cfg && e->st.ov_base == base && e->st.ov_str == str && e->st.ov_s4 == s4) return (int)e->st.ov_ok;
    const uint32_t ba = e1_gemm_base_a(base), sa = e1_gemm_stride_a(str), bb = e1_gemm_base_b(base),
                   sb = e1_gemm_stride_b(str), cb = e1_gemm_base_c(base), cs = e1_gemm_stride_c(str);
    uint64_t rows[4] = {0}, cols[4] = {0}; /* scratchpad bytes A row i and B column j occupy */
    for (uint32_t i = 0; i < gm; i++)
        for (uint32_t l = 0; l < gk; l++) {
            uint32_t a = ba + i * sa + l;
            rows[i] |= 1ull << (s4 ? (a >> 1) & 63 : a & 63);
        }
    for (uint32_t j = 0; j < gn; j++)
        for (uint32_t l = 0; l < gk; l++) {
            uint32_t b = bb + l * sb + j;
            cols[j] |= 1ull << (s4 ? (b >> 1) & 63 : b & 63);
        }
    int ok = 1;
    uint64_t later = 0; /* bytes read by the cells after the current one */
    for (uint32_t c = gm * gn; c-- > 0;) {
        const uint32_t i = c / gn, j = c % gn;
        const uint32_t w = ((cb + i * cs + 4 * j) >> 2) & 15;
        if (later & (0xfull << (4 * w))) ok = 0;
        later |= rows[i] | cols[j];
    }
    e->st.ov_cfg = cfg, e->st.ov_base = base, e->st.ov_str = str, e->st.ov_s4 = s4, e->st.ov_ok = (uint32_t)ok;
    return ok;
}

/* The A (av[i][l]) and B (bv[l][j]) operands of the tile as gemm_mac reads them. */
static void gemm_values(const e1 *e, uint32_t gm, uint32_t gn, uint32_t gk, uint32_t s4, int32_t av[4][8],
                        int32_t bv[8][4]) {
    const uint32_t base = e->v[IX_GEMM_BASE], str = e->v[IX_GEMM_STRIDE];
    const uint32_t ba = e1_gemm_base_a(base), sa = e1_gemm_stride_a(str), bb = e1_gemm_base_b(base),
                   sb = e1_gemm_stride_b(str);
    if (s4) {
        for (uint32_t i = 0; i < gm; i++)
            for (uint32_t l = 0; l < gk; l++) av[i][l] = sc_s4(e, ba + i * sa + l);
        for (uint32_t l = 0; l < gk; l++)
            for (uint32_t j = 0; j < gn; j++) bv[l][j] = sc_s4(e, bb + l * sb + j);
        return;
    }
    uint8_t sp[64]; /* the scratchpad as bytes (word w holds bytes 4w..4w+3, low first) */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(sp, &e->v[IX_SCRATCH0], sizeof sp); /* the host's word layout is the scratchpad's */
#else
    for (unsigned w = 0; w < 16; w++) {
        uint32_t x = e->v[IX_SCRATCH0 + w];
        sp[4 * w] = (uint8_t)x, sp[4 * w + 1] = (uint8_t)(x >> 8), sp[4 * w + 2] = (uint8_t)(x >> 16),
        sp[4 * w + 3] = (uint8_t)(x >> 24);
    }
#endif
    for (uint32_t i = 0; i < gm; i++)
        for (uint32_t l = 0; l < gk; l++) av[i][l] = (int8_t)sp[(ba + i * sa + l) & 63];
    for (uint32_t l = 0; l < gk; l++)
        for (uint32_t j = 0; j < gn; j++) bv[l][j] = (int8_t)sp[(bb + l * sb + j) & 63];
}

/* GEMM engine cycles in a row while nothing else can happen: the engine
 * alone (no scalar op, no VRELU) with a valid configuration (registers the
 * host cannot change inside a step) and the descriptor engine absent or
 * waiting for it in DS_WAIT below its timeout. Each such cycle is the
 * engine's MAC plus PERF_CYCLES and DESC_TIMEOUT_COUNT counting, exactly as
 * edge() does; the final MAC (completion, DONE, trace event, the descriptor
 * moving on) is left to edge(). Returns the cycles run. */
static uint64_t gemm_burst(e1 *e, uint64_t max) {
    if (!e->st.gemm_busy || e->st.vec_busy || e->st.busy_count) return 0;
    uint32_t *v = e->v;
    if (e->st.desc_busy) {
        uint32_t tmo = v[IX_DESC_TIMEOUT_COUNT];
        if (e->st.dstate != DS_WAIT || tmo >= E1_DESC_TIMEOUT) return 0;
        if (max > E1_DESC_TIMEOUT - tmo) max = E1_DESC_TIMEOUT - tmo;
    }
    const uint32_t cfg = v[IX_GEMM_CFG], gm = e1_gemm_m(cfg), gn = e1_gemm_n(cfg), gk = e1_gemm_k(cfg);
    if (e->st.gl == ((gk - 1) & 7) && e->st.gj == ((gn - 1) & 3) && e->st.gi == ((gm - 1) & 3))
        return 0; /* the final MAC: edge() */
    if (!gemm_ok(e, e->st.gemm_s4)) return 0;
    uint64_t n = 0;
    int32_t av[4][8], bv[8][4];
    if (gm <= 4 && gn <= 4 && gk <= 8 && e->st.gi < gm && e->st.gj < gn && e->st.gl < gk &&
        gemm_overlap_free(e, gm, gn, gk, (uint32_t)e->st.gemm_s4)) {
        gemm_values(e, gm, gn, gk, (uint32_t)e->st.gemm_s4, av, bv);
        /* the operands cannot change under the run: the same MACs on registers */
        const uint32_t li = gm - 1, lj = gn - 1, ll = gk - 1, base = v[IX_GEMM_BASE], str = v[IX_GEMM_STRIDE];
        const uint32_t cb = e1_gemm_base_c(base), cs = e1_gemm_stride_c(str), to = (uint32_t)e->timing_only;
        uint32_t gi = e->st.gi, gj = e->st.gj, gl = e->st.gl, acc = e->st.gacc, stores = 0;
        /* cell by cell (i, j), its MACs l in a row; the tile's final MAC is left to edge() */
        while (n < max) {
            const int last_cell = gj == lj && gi == li;
            uint64_t want = ll - gl + 1 - (uint32_t)last_cell; /* MACs to run in this cell */
            if (want > max - n) want = max - n;
            if (!want) break; /* at the final MAC */
            if (to) {
                acc = 0;
            } else {
                for (uint32_t t = 0; t < want; t++) acc += (uint32_t)(av[gi][gl + t] * bv[gl + t][gj]);
            }
            n += want;
            gl += (uint32_t)want;
            if (gl <= ll) break; /* the budget ends inside the cell, or at the final MAC */
            v[IX_SCRATCH0 + (((cb + gi * cs + 4 * gj) >> 2) & 15)] = acc;
            stores++;
            acc = 0;
            gl = 0;
            if (gj != lj) {
                gj++;
            } else {
                gj = 0;
                gi++;
            }
        }
        e->st.gi = gi;
        e->st.gj = gj;
        e->st.gl = gl;
        e->st.gacc = acc;
        e->st.eng_macs += (uint32_t)n;
        v[IX_PERF_MACS] += (uint32_t)n;
        v[IX_PERF_CYCLES] += (uint32_t)n;
        v[IX_PERF_SCRATCH_BYTES] += (uint32_t)(2 * n + 4 * stores);
        if (e->st.desc_busy) v[IX_DESC_TIMEOUT_COUNT] += (uint32_t)n;
        e->dev.cycles += n;
        return n;
    }
    while (n < max && !(e->st.gl == ((gk - 1) & 7) && e->st.gj == ((gn - 1) & 3) && e->st.gi == ((gm - 1) & 3))) {
        int last;
        v[IX_PERF_CYCLES]++;
        v[IX_PERF_SCRATCH_BYTES] += gemm_mac(e, gm, gn, gk, &last);
        if (e->st.desc_busy) v[IX_DESC_TIMEOUT_COUNT]++;
        n++;
    }
    e->dev.cycles += n;
    return n;
}

/* Descriptor-engine bus beats in a row (fetch, stream-in or writeback) while
 * nothing else can happen: no engine busy, CTRL_STATUS.busy set (the bus
 * handshakes need it), the engine in an address state and every beat of the
 * run succeeding with one latency L (npk_bus_burst: no fault rule or watcher
 * must see the beats, one region). Each beat is then exactly what edge()
 * does over its 2 + L cycles: the address edge issues it, L edges count its
 * wait, the last takes the response (DESC_BYTES_*, *_BEATS, the descriptor
 * word, scratchpad word or guest word, PERF_SCRATCH_BYTES), and every one of
 * them counts DESC_TIMEOUT_COUNT and PERF_STALL_CYCLES. The run stops at
 * the end of the phase (the state moves on as edge() moves it), within the
 * cycle budget and below the timeout (the timeout edge itself is stepped),
 * and the data moves with one copy. Returns the cycles run (0: step). */
static uint64_t dma_burst(e1 *e, uint64_t max) {
    uint32_t *v = e->v;
    const int ds = e->st.dstate;
    if (!e->st.desc_busy || e->st.gemm_busy || e->st.vec_busy || e->st.busy_count ||
        !NPK_FEX(v[IX_CTRL_STATUS], E1_CTRL_STATUS_BUSY) ||
        (ds != DS_FETCH_ADDR && ds != DS_STREAM_ADDR && ds != DS_WRITE_ADDR))
        return 0;
    const uint32_t tmo = v[IX_DESC_TIMEOUT_COUNT], w0 = e->st.dw[0];
    if (tmo >= E1_DESC_TIMEOUT) return 0;
    uint32_t addr, n; /* the first beat's address; beats to the end of the phase (or a wrap) */
    int end = 1;      /* the run ends the phase */
    if (ds == DS_FETCH_ADDR) {
        addr = read_addr(e, ds);
        n = 4 - e->st.fetch_word;
    } else if (ds == DS_STREAM_ADDR) {
        uint32_t len = e1_desc_len(w0); /* <= 63: a run below len never wraps the 6-bit position */
        if (e->st.stream_done >= len || (e->st.stream_done & 3)) return 0;
        addr = read_addr(e, ds);
        n = (len - e->st.stream_done + 3) / 4;
    } else {
        uint32_t op = e1_desc_opcode(w0), cfg = v[IX_GEMM_CFG];
        uint32_t wlen = is_gemm(op) ? (e1_gemm_m(cfg) * e1_gemm_n(cfg) * 4) & 63 : e1_vrelu_len(cfg);
        uint32_t wd = e->st.write_done;
        if (wd & 3) return 0;
        /* edge() ends the phase on the beat whose next position ((wd + 4) & 63)
         * reaches wlen; a position wrapping to 0 first ends this run only */
        n = 0;
        for (;;) {
            uint32_t nd = (wd + 4) & 63;
            n++;
            if (nd >= wlen) break;
            if (!nd) {
                end = 0;
                break;
            }
            wd = nd;
        }
        addr = e->st.dw[2] + e->st.write_done;
    }
    if ((uint64_t)addr + 4u * n > (1ull << 32)) return 0; /* the 32-bit address wraps: step */
    uint32_t lat;
    if (!npk_bus_plain(e->dev.mem, addr, 4u * n, &lat)) return 0;
    const uint64_t c = 2u + (uint64_t)lat; /* address edge, L waits, response edge */
    uint64_t room = E1_DESC_TIMEOUT - tmo; /* cycles the run may take: the budget, below the timeout */
    if (max < room) room = max;
    if (c * n > room) {
        n = (uint32_t)(room / c);
        end = 0;
    }
    if (!n) return 0;
    const uint32_t bytes = 4u * n;
    /* the beats' bytes: guest memory in place when it is one host buffer
     * (npk_bus_direct counts the beats), else a copy through buf */
    uint8_t buf[64], *p = npk_bus_direct(e->dev.mem, ds == DS_WRITE_ADDR ? NPK_ACC_WRITE : NPK_ACC_READ, addr, bytes, 1,
                                         bytes, 4);
    if (ds == DS_WRITE_ADDR) {
        uint32_t op = e1_desc_opcode(w0), base = v[IX_GEMM_BASE];
        uint32_t src = (is_gemm(op) ? e1_gemm_base_c(base) : e1_gemm_base_b(base)) >> 2;
        uint8_t *o = p ? p : buf;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t w = v[IX_SCRATCH0 + ((src + (e->st.write_done >> 2) + i) & 15)];
            o[4 * i] = (uint8_t)w;
            o[4 * i + 1] = (uint8_t)(w >> 8);
            o[4 * i + 2] = (uint8_t)(w >> 16);
            o[4 * i + 3] = (uint8_t)(w >> 24);
        }
        if (!p && !npk_bus_burst(e->dev.mem, NPK_ACC_WRITE, addr, NULL, buf, bytes, 4, NULL)) return 0;
        v[IX_DESC_BYTES_WRITTEN] += bytes;
        v[IX_DESC_WRITE_BEATS] += n;
        v[IX_PERF_SCRATCH_BYTES] += bytes;
        e->st.write_done = (e->st.write_done + bytes) & 63;
        e->st.dstate = end ? DS_ADVANCE : DS_WRITE_ADDR;
    } else {
        if (!p && !npk_bus_burst(e->dev.mem, NPK_ACC_READ, addr, buf, NULL, bytes, 4, NULL)) return 0;
        const uint8_t *in = p ? p : buf;
        v[IX_DESC_BYTES_READ] += bytes;
        v[IX_DESC_READ_BEATS] += n;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t w = (uint32_t)in[4 * i] | (uint32_t)in[4 * i + 1] << 8 | (uint32_t)in[4 * i + 2] << 16 |
                         (uint32_t)in[4 * i + 3] << 24;
            if (ds == DS_FETCH_ADDR) {
                e->st.dw[e->st.fetch_word++] = w;
            } else {
                v[IX_SCRATCH0 + (((e1_desc_scratch_off(w0) >> 2) + (e->st.stream_done >> 2)) & 15)] = w;
                e->st.stream_done = (e->st.stream_done + 4) & 63;
            }
            e->st.bus_data = w;
        }
        if (ds == DS_FETCH_ADDR) {
            if (end) e->st.fetch_word = 0;
            e->st.dstate = end ? DS_LAUNCH : DS_FETCH_ADDR;
        } else {
            v[IX_PERF_SCRATCH_BYTES] += bytes;
            e->st.dstate = end ? DS_LAUNCH : DS_STREAM_ADDR;
        }
    }
    const uint64_t cyc = c * n;
    v[IX_DESC_TIMEOUT_COUNT] = tmo + (uint32_t)cyc;
    v[IX_PERF_STALL_CYCLES] += (uint32_t)cyc;
    e->st.bus_resp = NPK_BUS_OK;
    e->st.bus_wait = 0;
    e->st.ph_bytes += bytes;
    e->dev.cycles += cyc;
    if (end) phase_close(e, e->dev.cycles, 0);
    return cyc;
}

/* Plain host windows of guest memory (npk_bus_window) found during one step.
 * The host cannot change the memory map, the extents, the fault rules or the
 * watcher inside a step, so a window found once holds for the rest of it;
 * two cover the lowering's tiles (the driver's ring, the staging arena). */
typedef struct e1_wins {
    uint64_t base[2], size[2];
    uint8_t *data[2];
    uint32_t lat[2];
    unsigned n, next;
} e1_wins;

/* The host bytes of [addr, addr+len) and their latency when they lie in one
 * window (looked up now if need be), else NULL (the caller takes the bus
 * path). Nothing is accounted. */
static uint8_t *win_look(npk_mem *m, e1_wins *w, uint32_t addr, uint32_t len, uint32_t *lat);
static inline uint8_t *win_find(npk_mem *m, e1_wins *w, uint32_t addr, uint32_t len, uint32_t *lat) {
    for (unsigned i = 0; i < w->n; i++) {
        const uint64_t o = (uint64_t)addr - w->base[i]; /* wraps past size when addr < base */
        if (o < w->size[i] && len <= w->size[i] - o) {
            *lat = w->lat[i];
            return w->data[i] + o;
        }
    }
    return win_look(m, w, addr, len, lat);
}

/* win_find's miss: the window around addr from the memory, kept in place of the older one. */
static uint8_t *win_look(npk_mem *m, e1_wins *w, uint32_t addr, uint32_t len, uint32_t *lat) {
    uint64_t b, s;
    uint8_t *d;
    uint32_t l;
    if (!npk_bus_window(m, addr, &b, &s, &d, &l) || len > s - (addr - b)) return NULL;
    unsigned i = w->n < 2 ? w->n++ : (w->next ^= 1u);
    w->base[i] = b, w->size[i] = s, w->data[i] = d, w->lat[i] = l;
    *lat = l;
    return d + (addr - b);
}

/* Whether a streamed GEMM descriptor of opcode GEMM_S8 (s4 = 0) or GEMM_S4
 * may run whole on the live configuration: gemm_ok and gemm_overlap_free,
 * kept per configuration (registers the host cannot change inside a step). */
static int desc_cfg_ok(e1 *e, uint32_t s4) {
    const uint32_t cfg = e->v[IX_GEMM_CFG], base = e->v[IX_GEMM_BASE], str = e->v[IX_GEMM_STRIDE];
    if (e->st.dr_cfg != cfg || e->st.dr_base != base || e->st.dr_str != str || !e->st.dr_valid) {
        const uint32_t gm = e1_gemm_m(cfg), gn = e1_gemm_n(cfg), gk = e1_gemm_k(cfg);
        for (uint32_t s = 0; s < 2; s++)
            e->st.dr_ok[s] = gm <= 4 && gn <= 4 && gk <= 8 && gemm_ok(e, (int)s) && gemm_overlap_free(e, gm, gn, gk, s);
        e->st.dr_cfg = cfg, e->st.dr_base = base, e->st.dr_str = str, e->st.dr_valid = 1;
    }
    return e->st.dr_ok[s4];
}


/* n words (at most 16) from src to dst, bytes as the host stores them: 16
 * bytes at a time, then words (a small variable-length memcpy is a library
 * call; these are a few moves). */
static inline void copy_words(void *dst, const void *src, uint32_t n) {
    uint8_t *d = dst;
    const uint8_t *s = src;
    uint32_t i = 0;
#if defined(__SSE2__)
    for (; i + 4 <= n; i += 4) _mm_storeu_si128((__m128i *)(void *)(d + 4 * i), _mm_loadu_si128((const __m128i *)(const void *)(s + 4 * i)));
#endif
    for (; i < n; i++) memcpy(d + 4 * i, s + 4 * i, 4);
}

/* C row of an int8 tile (gemm_ok keeps A, B and C inside the 64 bytes: no
 * wrap): lane j is the sum over l < gk of A[i][l] * B[l][j]. b points at the
 * B rows (row l at b + l*sb; rows l >= gk must read as zero, lanes j past N
 * are dropped by the caller), a at A row i; |sum| <= 8 * 2^14, exact. SSE2
 * (every x86-64): the rows in pairs, pmaddwd of the pair of A values with the
 * interleaved pair of B rows. */
#if defined(__SSE2__)
static inline __m128i s8_row(const uint8_t *p) { /* 4 bytes at p, sign-extended to int16 in the low 4 lanes */
    int32_t w;
    memcpy(&w, p, 4);
    __m128i x = _mm_cvtsi32_si128(w);
    return _mm_srai_epi16(_mm_unpacklo_epi8(x, x), 8);
}
#endif

/* The tile's C cells into the scratchpad words, computed from the scratchpad
 * as it is at the GEMM's launch (gemm_overlap_free: no C store lands on a byte
 * a later MAC reads, so every MAC sees these values). int8: gemm_ok keeps A,
 * B and C inside the 64 bytes (no wrap), |sum| <= 8 * 2^14, exact in int32;
 * int4: the operands through gemm_values. */
static void desc_gemm(e1 *e, uint32_t gm, uint32_t gn, uint32_t gk, uint32_t s4) {
    uint32_t *v = e->v;
    const uint32_t base = v[IX_GEMM_BASE], str = v[IX_GEMM_STRIDE];
    const uint32_t cb = e1_gemm_base_c(base), cs = e1_gemm_stride_c(str);
    int32_t c[4][4] = {{0}};
    if (e->timing_only) {
        /* C = 0 */
    } else if (s4) {
        int32_t av[4][8], bv[8][4];
        gemm_values(e, gm, gn, gk, s4, av, bv);
        for (uint32_t i = 0; i < gm; i++)
            for (uint32_t j = 0; j < gn; j++) {
                int32_t acc = 0;
                for (uint32_t l = 0; l < gk; l++) acc += av[i][l] * bv[l][j];
                c[i][j] = acc;
            }
    } else {
        const uint32_t ba = e1_gemm_base_a(base), sa = e1_gemm_stride_a(str), bb = e1_gemm_base_b(base),
                       sb = e1_gemm_stride_b(str);
        /* the scratchpad bytes, then 16 zero bytes: B rows past K read there, and an A row's
         * 8-byte load or a B row's 4-byte load past byte 63 stays inside */
        uint8_t sp[80] __attribute__((aligned(16)));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        memcpy(sp, &v[IX_SCRATCH0], 64);
#else
        for (unsigned w = 0; w < 16; w++) st_le32(sp + 4 * w, v[IX_SCRATCH0 + w]);
#endif
        memset(sp + 64, 0, 16);
#if defined(__SSE2__)
        __m128i bp[4]; /* B rows 2p and 2p+1 interleaved: lanes (B[2p][j], B[2p+1][j]), j = 0..3 */
        const uint32_t np = (gk + 1) / 2;
        for (uint32_t p = 0; p < np; p++) {
            __m128i r0 = s8_row(sp + bb + 2 * p * sb), r1 = s8_row(2 * p + 1 < gk ? sp + bb + (2 * p + 1) * sb : sp + 64);
            bp[p] = _mm_unpacklo_epi16(r0, r1);
        }
        for (uint32_t i = 0; i < gm; i++) {
            __m128i x = _mm_loadl_epi64((const __m128i *)(const void *)(sp + ba + i * sa));
            const __m128i a = _mm_srai_epi16(_mm_unpacklo_epi8(x, x), 8); /* A[i][0..7] as int16; lanes past K meet zero B rows */
            __m128i acc = _mm_madd_epi16(_mm_shuffle_epi32(a, 0x00), bp[0]);
            if (np > 1) acc = _mm_add_epi32(acc, _mm_madd_epi16(_mm_shuffle_epi32(a, 0x55), bp[1]));
            if (np > 2) acc = _mm_add_epi32(acc, _mm_madd_epi16(_mm_shuffle_epi32(a, 0xaa), bp[2]));
            if (np > 3) acc = _mm_add_epi32(acc, _mm_madd_epi16(_mm_shuffle_epi32(a, 0xff), bp[3]));
            _mm_storeu_si128((__m128i *)c[i], acc);
        }
#else
        for (uint32_t i = 0; i < gm; i++)
            for (uint32_t j = 0; j < gn; j++) {
                int32_t acc = 0;
                for (uint32_t l = 0; l < gk; l++) acc += (int8_t)sp[ba + i * sa + l] * (int8_t)sp[bb + l * sb + j];
                c[i][j] = acc;
            }
#endif
    }
    /* gemm_ok: C row i is gn words from cb + i*cs, inside the 64 bytes; dense rows (cs = 4*gn, every
     * tile the lowering builds) are one run of gm*gn words */
    if (cs == 4 * gn) {
        int32_t cd[16];
        for (uint32_t i = 0; i < gm; i++) memcpy(cd + i * gn, c[i], 16); /* lanes past gn: overwritten or unused */
        copy_words(&v[IX_SCRATCH0 + (cb >> 2)], cd, gm * gn);
    } else {
        for (uint32_t i = 0; i < gm; i++) memcpy(&v[IX_SCRATCH0 + ((cb + i * cs) >> 2)], c[i], 4 * gn);
    }
}

/* One whole descriptor in one step: the lowering's streamed GEMM with
 * writeback (and any descriptor like it), from its fetch to its advance,
 * while nothing else can happen: no engine busy, CTRL_STATUS.busy set, no
 * trace, the fetch, the stream and the writeback each in plain memory
 * (npk_bus_plain; the writeback in one host buffer), the GEMM configuration
 * valid and free of C stores over bytes a later MAC reads (gemm_overlap_free), and the whole
 * descriptor inside the step budget and below the timeout. Its edges are
 * then the ones edge(), dma_burst and gemm_burst run one after the other:
 * 4 fetch beats, launch (stream starts), the stream beats, launch (GEMM
 * starts), M*N*K MACs (the last one moves the engine to writeback), the
 * writeback beats and the advance, T = 4(2+Lf) + 1 + B(2+Ls) + 1 + MNK +
 * W(2+Lw) + 1 cycles, with the same counters, scratchpad, guest memory and
 * state at the end. Anything else (another opcode, an error the launch would
 * latch, a budget ending inside) returns 0: the engine is stepped. The bytes
 * move through the step's windows (wins) when they lie in them, else through
 * the bus calls; the statistics count the same beats either way. */
static uint64_t desc_one(e1 *e, uint64_t max, e1_wins *wins) {
    uint32_t *v = e->v;
    if (e->dev.trace || !e->st.desc_busy || e->st.dstate != DS_FETCH_ADDR || e->st.fetch_word ||
        e->st.stream_done || e->st.write_done || e->st.gemm_busy || e->st.vec_busy || e->st.busy_count ||
        !NPK_FEX(v[IX_CTRL_STATUS], E1_CTRL_STATUS_BUSY))
        return 0;
    npk_mem *m = e->dev.mem;
    const uint32_t tmo = v[IX_DESC_TIMEOUT_COUNT], tail = v[IX_DESC_TAIL];
    const uint32_t af = read_addr(e, DS_FETCH_ADDR);
    uint32_t lf, ls, lw;
    if ((uint64_t)af + 16 > (1ull << 32)) return 0;
    uint8_t raw[16];
    const uint8_t *pf = win_find(m, wins, af, 16, &lf);
    if (!pf) {
        if (!npk_bus_plain(m, af, 16, &lf) || npk_mem_peek(m, af, raw, 16)) return 0;
    }
    uint32_t dw[4];
    for (int i = 0; i < 4; i++) dw[i] = ld_le32((pf ? pf : raw) + 4 * i);
    const uint32_t w0 = dw[0], op = e1_desc_opcode(w0), off = e1_desc_scratch_off(w0), len = e1_desc_len(w0);
    if (!is_gemm(op) || !e1_desc_valid_owner(w0) || !e1_desc_stream(w0) || !e1_desc_writeback(w0)) return 0;
    if ((dw[1] & 3) || (off & 3) || !len || (len & 3) || off + len > 64) return 0; /* stream_ok */
    const uint32_t cfg = v[IX_GEMM_CFG], base = v[IX_GEMM_BASE];
    const uint32_t gm = e1_gemm_m(cfg), gn = e1_gemm_n(cfg), gk = e1_gemm_k(cfg), s4 = op == E1_OP_GEMM_S4;
    const uint32_t wlen = (gm * gn * 4) & 63, cb = e1_gemm_base_c(base);
    if ((dw[2] & 3) || cb + wlen > 64 || !wlen || (wlen & 3)) return 0; /* wb_ok */
    if (!desc_cfg_ok(e, s4)) return 0;
    const uint32_t as = dw[1], aw = dw[2], nb = len / 4, nw = wlen / 4, macs = gm * gn * gk;
    if ((uint64_t)as + len > (1ull << 32) || (uint64_t)aw + wlen > (1ull << 32)) return 0;
    const uint8_t *ps = win_find(m, wins, as, len, &ls);
    uint8_t *pw = win_find(m, wins, aw, wlen, &lw);
    if ((!ps && !npk_bus_plain(m, as, len, &ls)) || (!pw && !npk_bus_plain(m, aw, wlen, &lw))) return 0;
    const uint64_t cf = 2u + (uint64_t)lf, csb = 2u + (uint64_t)ls, cw = 2u + (uint64_t)lw;
    const uint64_t t_stream = 4 * cf + 1, t_gemm = t_stream + nb * csb + 1, t_wb = t_gemm + macs,
                   T = t_wb + nw * cw + 1;
    if (T > max || tmo + T > E1_DESC_TIMEOUT) return 0;
    /* commit: first the only transfer that can be refused (nothing changed yet) */
    if (pw) npk_bus_count(m, NPK_ACC_WRITE, aw, wlen, nw);
    else if (!(pw = npk_bus_direct(m, NPK_ACC_WRITE, aw, wlen, 1, wlen, 4))) return 0;
    const uint64_t t0 = e->dev.cycles;
    if (pf) npk_bus_count(m, NPK_ACC_READ, af, 16, 4);
    else if (!npk_bus_direct(m, NPK_ACC_READ, af, 16, 1, 16, 4)) (void)npk_bus_burst(m, NPK_ACC_READ, af, NULL, NULL, 16, 4, NULL);
    uint8_t sbuf[64];
    if (ps) {
        npk_bus_count(m, NPK_ACC_READ, as, len, nb);
    } else if (!(ps = npk_bus_direct(m, NPK_ACC_READ, as, len, 1, len, 4))) {
        (void)npk_bus_burst(m, NPK_ACC_READ, as, sbuf, NULL, len, 4, NULL);
        ps = sbuf;
    }
    for (int i = 0; i < 4; i++) e->st.dw[i] = dw[i];
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    copy_words(&v[IX_SCRATCH0 + (off >> 2)], ps, nb); /* off + len <= 64: no wrap */
#else
    for (uint32_t i = 0; i < nb; i++) v[IX_SCRATCH0 + (((off >> 2) + i) & 15)] = ld_le32(ps + 4 * i);
#endif
    e->st.bus_data = ld_le32(ps + 4 * (nb - 1));
    desc_gemm(e, gm, gn, gk, s4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    copy_words(pw, &v[IX_SCRATCH0 + (cb >> 2)], nw); /* cb + wlen <= 64: no wrap */
#else
    for (uint32_t i = 0; i < nw; i++) st_le32(pw + 4 * i, v[IX_SCRATCH0 + (((cb >> 2) + i) & 15)]);
#endif
    v[IX_PERF_STALL_CYCLES] += (uint32_t)(4 * cf + nb * csb + nw * cw);
    v[IX_DESC_BYTES_READ] += 16 + len;
    v[IX_DESC_READ_BEATS] += 4 + nb;
    v[IX_DESC_BYTES_WRITTEN] += wlen;
    v[IX_DESC_WRITE_BEATS] += nw;
    v[IX_PERF_SCRATCH_BYTES] += len + 2 * macs + 4 * gm * gn + wlen;
    v[IX_PERF_OPS]++;
    v[IX_PERF_CYCLES] += macs;
    v[IX_PERF_MACS] += macs;
    e->st.gemm_s4 = (int)s4;
    e->st.gi = e->st.gj = e->st.gl = 0;
    e->st.gacc = 0;
    e->st.eng_start = t0 + t_gemm;
    e->st.eng_macs = macs;
    e->st.bus_resp = NPK_BUS_OK;
    e->st.bus_wait = 0;
    e->st.ph_kind = PH_NONE; /* the writeback phase, closed */
    e->st.ph_start = t0 + t_wb;
    e->st.ph_bytes = wlen;
    /* the advance (as edge()'s DS_ADVANCE) */
    const uint32_t next = (tail + 1) % E1_RING_ENTRIES;
    v[IX_DESC_TAIL] = next;
    e->st.err_index = tail;
    v[IX_DESC_STATUS] = E1_DS_DONE;
    v[IX_DESC_TIMEOUT_COUNT] = 0;
    e->dev.cycles = t0 + T;
    if (next == v[IX_DESC_HEAD]) {
        e->st.desc_busy = 0;
        e->st.dstate = DS_IDLE;
        v[IX_CTRL_STATUS] = E1_ST_DONE;
        update_irq(e);
    } else {
        e->st.dstate = DS_FETCH_ADDR;
        e->st.desc_start = t0 + T;
        e->st.desc_macs_start = v[IX_PERF_MACS];
        phase_open(e, PH_FETCH, t0 + T);
    }
    return T;
}

/* desc_one for every descriptor of the ring it can take in a row (the rest
 * of a lowering batch in one call). Returns the cycles run (0: step). */
static uint64_t desc_run(e1 *e, uint64_t max, e1_wins *wins) {
    uint64_t n = 0, k;
    while (n < max && (k = desc_one(e, max - n, wins))) n += k;
    return n;
}

static void e1_step_run(npk_dev *d, uint64_t cycles);
/* The energy counters follow the PERF registers' increments over each step
 * (32-bit differences: exact across a wrap). */
static void e1_step(npk_dev *d, uint64_t cycles) {
    e1 *e = E1(d);
    uint32_t *v = e->v;
    uint32_t m = v[IX_PERF_MACS], o = v[IX_PERF_OPS], sb = v[IX_PERF_SCRATCH_BYTES];
    uint32_t r = v[IX_DESC_BYTES_READ], w = v[IX_DESC_BYTES_WRITTEN];
    e1_step_run(d, cycles);
    e->e_macs += (uint32_t)(v[IX_PERF_MACS] - m), e->e_ops += (uint32_t)(v[IX_PERF_OPS] - o);
    e->e_scratch += (uint32_t)(v[IX_PERF_SCRATCH_BYTES] - sb);
    e->e_guest += (uint32_t)(v[IX_DESC_BYTES_READ] - r) + (uint32_t)(v[IX_DESC_BYTES_WRITTEN] - w);
}

static void e1_step_run(npk_dev *d, uint64_t cycles) {
    e1 *e = E1(d);
    e1_wins wins = {.n = 0};
    while (cycles) {
        if (!busy(e)) { /* nothing changes while idle */
            d->cycles += cycles;
            return;
        }
        if (e->skip_idle) {
            uint64_t k = idle_span(e);
            if (k > 1) {
                if (k > cycles) k = cycles;
                e1_skip(e, k);
                cycles -= k;
                continue;
            }
            if (e->st.gemm_busy) k = gemm_burst(e, cycles);
            else if (!(k = desc_run(e, cycles, &wins))) k = dma_burst(e, cycles);
            if (k) {
                cycles -= k;
                continue;
            }
        }
        edge(e);
        cycles--;
    }
}

static int e1_idle(npk_dev *d) { return !busy(E1(d)); }

/* The quiet op (run loops that stop when the device goes idle: npu qtest
 * --settle, npk_sim_run_until_idle, the virtual platform): cycles from now in
 * which e1 can neither go idle nor move its interrupt line, so such a loop
 * steps them at once and e1_step_run's skipping runs them per event, not per
 * cycle. idle() and the line (CTRL_STATUS.DONE) change only on an op's last
 * edge, a descriptor's advance or abort (a bus error, a bad configuration,
 * the timeout edge). The span is the counting edges idle_span names (a bus
 * wait, the scalar latency, a descriptor waiting for the timeout), or the
 * GEMM/VRELU engine's cycles before its last one (below the descriptor
 * timeout when a descriptor waits for it), else 1 (an edge that may change
 * either: stepped alone). */
static uint64_t e1_quiet(npk_dev *d) {
    e1 *e = E1(d);
    if (!busy(e)) return 1;
    uint64_t k = idle_span(e);
    if (k > 1) return k == UINT64_MAX ? 1 : k;
    if (e->st.busy_count || e->st.gemm_busy == e->st.vec_busy) return 1;
    const uint32_t cfg = e->v[IX_GEMM_CFG];
    uint64_t n = 0;
    if (e->st.gemm_busy) {
        const uint32_t gm = e1_gemm_m(cfg), gn = e1_gemm_n(cfg), gk = e1_gemm_k(cfg);
        /* the final MAC is cell (gm-1, gn-1), l = gk-1: MAC number gm*gn*gk - 1 */
        if (gemm_ok(e, e->st.gemm_s4) && gm <= 4 && gn <= 4 && gk <= 8 && e->st.gi < gm && e->st.gj < gn &&
            e->st.gl < gk)
            n = (uint64_t)gm * gn * gk - 1 - ((uint64_t)(e->st.gi * gn + e->st.gj) * gk + e->st.gl);
    } else if (vec_ok(e)) {
        const uint32_t last = (e1_vrelu_len(cfg) - 1) & 63;
        if (e->st.vi < last) n = last - e->st.vi;
    }
    if (e->st.desc_busy) { /* the engine runs for a descriptor waiting in DS_WAIT; the timeout edge is stepped */
        const uint32_t tmo = e->v[IX_DESC_TIMEOUT_COUNT];
        if (e->st.dstate != DS_WAIT || tmo >= E1_DESC_TIMEOUT) return 1;
        if (n > E1_DESC_TIMEOUT - tmo) n = E1_DESC_TIMEOUT - tmo;
    }
    return n > 1 ? n : 1;
}

/* ---- register hooks --------------------------------------------------------- */

/* CTRL_STATUS: the write is a command; the register holds the status. */
static uint32_t w_ctrl(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val, uint32_t next) {
    (void)r;
    (void)old;
    (void)next;
    e1 *e = E1(d);
    uint32_t *v = e->v;
    if ((val & E1_CTRL_START) && !busy(e)) {
        e->st.cmd_start = d->cycles;
        e->st.eng_start = d->cycles;
        e->st.eng_macs = 0;
        uint32_t op = NPK_FEX(v[IX_OPCODE], E1_OPCODE_OP);
        int fail = 0;
        if (v[IX_CMD_PARAM] & E1_CMD_DESC) {
            uint32_t sec = v[IX_SEC_OWNER_CFG];
            e->st.err_index = v[IX_DESC_TAIL];
            if ((sec & E1_SEC_OWNER_OWNED) && e->st.sec_lock &&
                NPK_FEX(v[IX_CMD_PARAM], E1_CMD_PARAM_OWNER) != NPK_FEX(sec, E1_SEC_OWNER_CFG_OWNER)) {
                v[IX_DESC_STATUS] = E1_DS_OWNER;
                fail = 1;
            } else if (v[IX_DESC_BASE] & 3) {
                v[IX_DESC_STATUS] = E1_DS_BASE_ALIGN;
                fail = 1;
            } else if (v[IX_DESC_HEAD] == v[IX_DESC_TAIL]) {
                v[IX_DESC_STATUS] = E1_DS_EMPTY;
                fail = 1;
            } else {
                v[IX_CTRL_STATUS] = E1_ST_BUSY;
                v[IX_DESC_STATUS] = 0;
                e->st.desc_busy = 1;
                e->st.dstate = DS_FETCH_ADDR;
                e->st.fetch_word = 0;
                v[IX_DESC_TIMEOUT_COUNT] = 0;
                v[IX_DESC_BYTES_READ] = v[IX_DESC_BYTES_WRITTEN] = v[IX_DESC_READ_BEATS] = v[IX_DESC_WRITE_BEATS] = 0;
                e->st.stream_done = e->st.write_done = 0;
                e->st.desc_start = d->cycles;
                e->st.desc_macs_start = v[IX_PERF_MACS];
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
                v[IX_CTRL_STATUS] = E1_ST_BUSY;
                e->st.gemm_busy = 1;
                e->st.gemm_s4 = op == E1_OP_GEMM_S4;
                e->st.gi = e->st.gj = e->st.gl = 0;
                e->st.gacc = 0;
                v[IX_PERF_OPS]++;
            } else {
                fail = 1;
                if (d->trace) trace_cmd(e, "gemm", op, d->cycles, 0, 0, 1);
            }
        } else if (op == E1_OP_VRELU_S8) {
            if (vec_ok(e)) {
                v[IX_CTRL_STATUS] = E1_ST_BUSY;
                e->st.vec_busy = 1;
                e->st.vi = 0;
                v[IX_PERF_OPS]++;
            } else {
                fail = 1;
                if (d->trace) trace_cmd(e, "vector", op, d->cycles, 0, 0, 1);
            }
        } else {
            v[IX_CTRL_STATUS] = E1_ST_BUSY;
            e->st.busy_count = latency_of(op);
            e->st.op_a_q = v[IX_OP_A];
            e->st.op_b_q = v[IX_OP_B];
            e->st.acc_q = v[IX_ACC];
            e->st.opcode_q = op;
            e->st.ternary_q = op == E1_OP_DOT16_S2 && (v[IX_CMD_PARAM] & E1_CMD_TERNARY);
            v[IX_PERF_OPS]++;
        }
        if (fail) {
            v[IX_CTRL_STATUS] = E1_ST_DONE | E1_ST_ERROR;
            v[IX_PERF_ERRORS]++;
            v[IX_PERF_UNSUPPORTED_OPS]++;
        }
    }
    if (val & E1_CTRL_CLEAR) {
        v[IX_CTRL_STATUS] &= ~(E1_ST_DONE | E1_ST_ERROR);
        v[IX_DESC_STATUS] = 0;
        e->st.err_index = 0;
        v[IX_DESC_TIMEOUT_COUNT] = 0;
        v[IX_DESC_BYTES_READ] = v[IX_DESC_BYTES_WRITTEN] = v[IX_DESC_READ_BEATS] = v[IX_DESC_WRITE_BEATS] = 0;
        e->st.write_done = 0;
    }
    update_irq(e);
    return v[IX_CTRL_STATUS];
}

static uint32_t r_trace(npk_dev *d, const npk_reg *r, uint32_t stored) {
    (void)r;
    (void)stored;
    const e1 *e = E1(d);
    return NPK_FVAL(E1_TRACE_VEC_BUSY, e->st.vec_busy) | NPK_FVAL(E1_TRACE_GEMM_BUSY, e->st.gemm_busy) |
           NPK_FVAL(E1_TRACE_OPCODE, e->st.opcode_q) | NPK_FVAL(E1_TRACE_BUSY_COUNT, e->st.busy_count);
}

static uint32_t r_perf(npk_dev *d, const npk_reg *r, uint32_t stored) {
    (void)r;
    return perf_hidden(E1(d)) ? 0 : stored;
}

/* PERF_ERRORS: a counter; writing CLEAR zeroes the counters. */
static uint32_t w_perf_errors(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val, uint32_t next) {
    (void)r;
    (void)next;
    uint32_t *v = E1(d)->v;
    if (val & E1_PERF_CLEAR) {
        /* every counter except DESC_TIMEOUT_COUNT */
        v[IX_PERF_UNSUPPORTED_OPS] = 0;
        v[IX_PERF_CYCLES] = v[IX_PERF_MACS] = v[IX_PERF_OPS] = v[IX_PERF_ERRORS] = 0;
        v[IX_DESC_BYTES_READ] = v[IX_DESC_BYTES_WRITTEN] = v[IX_DESC_READ_BEATS] = v[IX_DESC_WRITE_BEATS] = 0;
        v[IX_PERF_STALL_CYCLES] = v[IX_PERF_SCRATCH_BYTES] = v[IX_PERF_THERMAL_THROTTLE] = 0;
        return 0;
    }
    return old;
}

/* PERF_THERMAL_THROTTLE counts the writes to it, whatever the value. */
static uint32_t w_thermal(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val, uint32_t next) {
    (void)d;
    (void)r;
    (void)val;
    (void)next;
    return old + 1;
}

/* SEC_OWNER_CFG is writable only until SEC_LOCK is set. */
static uint32_t w_sec_owner(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val, uint32_t next) {
    (void)r;
    (void)val;
    return E1(d)->st.sec_lock ? old : next;
}

/* SEC_LOCK: writing SET locks until reset; the register reads 0. */
static uint32_t w_sec_lock(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val, uint32_t next) {
    (void)r;
    (void)old;
    (void)next;
    if (val & E1_SEC_LOCK_SET) E1(d)->st.sec_lock = 1;
    return 0;
}

static uint32_t r_sec_status(npk_dev *d, const npk_reg *r, uint32_t stored) {
    (void)r;
    (void)stored;
    const e1 *e = E1(d);
    uint32_t s = e->v[IX_SEC_OWNER_CFG];
    uint32_t owned = NPK_FEX(s, E1_SEC_OWNER_CFG_OWNED), plock = NPK_FEX(s, E1_SEC_OWNER_CFG_PERF_LOCK);
    return NPK_FVAL(E1_SEC_STATUS_SOURCE, E1_SOURCE_ID) | NPK_FVAL(E1_SEC_STATUS_LOCK, e->st.sec_lock) |
           NPK_FVAL(E1_SEC_STATUS_PERF_LOCK, plock) | NPK_FVAL(E1_SEC_STATUS_PERF_HIDDEN, owned & plock) |
           NPK_FVAL(E1_SEC_STATUS_OWNED, owned);
}

static uint32_t r_desc_status(npk_dev *d, const npk_reg *r, uint32_t stored) {
    (void)r;
    const e1 *e = E1(d);
    uint32_t pending = e->v[IX_DESC_HEAD] - e->v[IX_DESC_TAIL];
    return stored | NPK_FVAL(E1_DESC_STATUS_PENDING, pending) | NPK_FVAL(E1_DESC_STATUS_ERR_INDEX, e->st.err_index) |
           NPK_FVAL(E1_DESC_STATUS_BUSY, e->st.desc_busy);
}

/* The register map, generated from npukit/e1_regs.def (index == offset / 4). */
#define NPK_REGTABLE_DEF "npukit/e1_regs.def"
#define NPK_REGTABLE_NAME e1_regs
#define NPK_REGTABLE_SLOTS IX_SLOTS
#include "sim/regtable.h"

/* ---- device ops ---------------------------------------------------------------- */

static uint32_t e1_read32(npk_dev *d, uint32_t off) {
    E1(d)->e_mmio++;
    return npk_regfile_read(&E1(d)->rf, d, off);
}

static void e1_write32(npk_dev *d, uint32_t off, uint32_t val) {
    E1(d)->e_mmio++;
    npk_regfile_write(&E1(d)->rf, d, off, val);
}

/* The e1 energy model (docs/energy.md "e1"): an int8 MAC per PERF_MACS, an
 * int32 add per scalar op (PERF_OPS), the 64-byte scratchpad as flip-flops
 * (PERF_SCRATCH_BYTES written or read), guest bytes (DESC_BYTES_*) from
 * DRAM over the bus. Area: 4 int8 MAC units (DOT4), a 32-bit scalar ALU
 * (add + multiply), the scratchpad and the register window as flip-flops. */
static void e1_energy(npk_dev *d, npk_energy *en, npk_area *a, uint32_t *tech_nm) {
    e1 *e = E1(d);
    const uint32_t nm = e->tech_nm;
    *en = (npk_energy){0};
    en->compute_pj = (double)e->e_macs * npk_op_pj(NPK_EOP_MAC_I8, nm) + (double)e->e_ops * npk_op_pj(NPK_EOP_ADD_I32, nm);
    en->reg_pj = (double)e->e_scratch * 8.0 * npk_reg_pj_per_bit(nm);
    en->dram_pj = (double)e->e_guest * npk_dram_pj_per_byte();
    en->dma_pj = (double)e->e_guest * npk_dma_pj_per_byte(nm);
    en->mmio_pj = (double)e->e_mmio * npk_mmio_pj(nm);
    *a = (npk_area){0};
    a->array_mm2 = (4.0 * npk_op_area_um2(NPK_EOP_MAC_I8, nm) + npk_op_area_um2(NPK_EOP_ADD_I32, nm) +
                    npk_op_area_um2(NPK_EOP_MUL_I32, nm)) / 1e6;
    a->fixed_mm2 = (E1_SCRATCH_BYTES + 0x100) * 8.0 * npk_reg_area_um2_per_bit(nm) / 1e6;
    *tech_nm = nm;
}

static void e1_reset(npk_dev *d) {
    e1 *e = E1(d);
    memset(&e->st, 0, sizeof e->st);
    e->st.bus_resp = NPK_BUS_OK;
    npk_regfile_reset_dev(&e->rf, d);
    update_irq(e); /* e1's lines follow engine state (no register hook) */
}

static void e1_destroy(npk_dev *d) {
    e1 *e = E1(d);
    npk_regfile_fini(&e->rf);
    free(e);
}

static const npk_dev_ops e1_ops = {
    .read32 = e1_read32,
    .write32 = e1_write32,
    .energy = e1_energy,
    .write64 = NULL,
    .step = e1_step,
    .idle = e1_idle,
    .quiet = e1_quiet,
    .reset = e1_reset,
    .destroy = e1_destroy,
};

/* The model's options (npu devices prints this table). */
typedef struct e1_params {
    uint32_t mem_latency, clock_mhz, tech_nm;
    int skip_idle;
    int timing_only;
} e1_params;

static const npk_opt opt_defs[] = {
    {"mem_latency", NULL, NPK_OPT_U32, offsetof(e1_params, mem_latency), "0", 0, 1000000, 0, 0, 0, "CYCLES",
     "wait cycles the memory adds to every bus beat (the RTL testbench's memory latency L;\n"
     "npu qtest --mem-latency sets the same)", 0},
    NPK_OPT_CLOCK_MHZ(e1_params, clock_mhz, "1000"),
    {"skip_idle", NULL, NPK_OPT_BOOL, offsetof(e1_params, skip_idle), "1", 0, 0, 0, 0, 0, NULL,
     "advance over cycles that only count (memory waits, scalar latency, a descriptor\n"
     "waiting for its timeout) in one step instead of cycle by cycle; registers,\n"
     "counters and timing are the same either way (0 steps every cycle)", 0},
    NPK_OPT_TIMING_ONLY(e1_params, timing_only),
    {"tech_nm", NULL, NPK_OPT_U32, offsetof(e1_params, tech_nm), "40", 7, 45, 0, 0, 0, "45|40|28|16|7",
     "technology node of the energy and area model (docs/energy.md); never changes cycles", 0},
};

static npk_dev *create(npk_mem *mem, const char *opts) {
    e1_params p;
    memset(&p, 0, sizeof p);
    if (npk_opt_defaults(opt_defs, sizeof opt_defs / sizeof opt_defs[0], &p) ||
        npk_opt_parse_kv(opt_defs, sizeof opt_defs / sizeof opt_defs[0], &p, opts, "e1") || npk_tech_check(p.tech_nm))
        return NULL;
    e1 *e = calloc(1, sizeof *e);
    if (!e) {
        npk_err(NPK_ENOMEM, "out of memory");
        return NULL;
    }
    if (npk_regfile_init(&e->rf, e1_regs, IX_SLOTS, E1_REG_SPAN)) {
        free(e);
        return NULL;
    }
    e->v = e->rf.val;
    e->dev.ops = &e1_ops;
    e->dev.mem = mem;
    e->dev.regs = &e->rf;
    e->dev.hz = (uint64_t)p.clock_mhz * 1000000u;
    e->skip_idle = p.skip_idle;
    e->timing_only = p.timing_only;
    e->tech_nm = p.tech_nm;
    if (mem) npk_mem_set_latency(mem, p.mem_latency);
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
    .opts = opt_defs,
    .n_opts = sizeof opt_defs / sizeof opt_defs[0],
    .create = create,
    .pci_device = 0x4e01,
};
