/* The pccx v002 LLM NPU model: a queue of 64-bit instructions (GEMV, GEMM,
 * MEMCPY, MEMSET, CVO) over a 114,688 x 128-bit L2 of BF16 activations, INT4
 * weights streamed from host memory, a constant cache, e_max and scalar
 * registers, faults per pccx-isa.md Part 3, and a timing model.
 *
 * Spec: shared/spec/pccx-isa.md. Decisions: docs/pccx.md. Encodings and the
 * register offsets: include/npukit/pccx.h.
 *
 * Execution: an instruction starts when the front end is free, its engine is
 * free and no in-flight async instruction it depends on is still running; its
 * functional effect is applied at its start cycle (inside step() or the
 * INSTR_HI write when it can start at once), and the device stays BUSY until
 * its completion. Sync instructions hold the front end until they complete;
 * async MEMCPY/CVO release it after one issue cycle. */
#include "npukit/error.h"
#include "npukit/opt.h"
#include "npukit/pccx.h"
#include "npukit/sim.h"
#include "npukit/trace.h"
#include "npukit/numfmt.h"

#include <inttypes.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define L2W NPK_PCCX_L2_WORDS
#define QDEPTH NPK_PCCX_QUEUE_DEPTH
#define NSLOT 16 /* in-flight async tracker slots */

enum { ENG_GEMV, ENG_GEMM, ENG_SFU, ENG_DMA, ENG_N };
static const char *const eng_track[ENG_N] = {"gemv", "gemm", "sfu", "dma"};

typedef struct { uint32_t lo, hi; } range; /* L2 words [lo, hi) */

typedef struct {
    uint64_t end;
    range rd[2], wr;
    int wr_scalar, valid;
} slot;

typedef struct pccx {
    npk_dev dev;
    npk_regfile rf;
    /* options */
    double ddr_gbps, ddr_eff;
    unsigned lat_gemv, lat_gemm, lat_sfu, lat_dma;
    double bpc; /* host bytes per core cycle */
    /* state */
    uint16_t *l2;                 /* [L2W * 8] BF16 */
    uint16_t cc[2][64][3];        /* constant cache banks */
    uint16_t emax, scalar;
    uint64_t queue[QDEPTH];
    uint64_t qidx[QDEPTH];        /* each queued instruction's index (count written before it) */
    unsigned qhead, qcount;
    uint64_t qindex;              /* index of the instruction at the queue head */
    uint64_t issued, retired, dropped;
    uint32_t instr_lo;
    int fault, hung, done;
    uint64_t err_index, err_instr, err_addr;
    uint64_t hwin_base, ws_addr, ws_limit;
    uint32_t hwin_size, irq_en;
    uint32_t l2_addr, l2_lane;
    /* timing */
    uint64_t fe_ready, eng_free[ENG_N], busy_until;
    slot slots[NSLOT];
    unsigned next_slot;
    /* counters */
    uint64_t busy_cycles, per_op[5], ws_bytes, dma_bytes, macs, sfu_elems, eng_cycles[ENG_N];
    /* scratch */
    uint8_t *buf;
    size_t buf_cap;
    uint16_t *tmp;
    size_t tmp_cap;
} pccx;

static pccx *P(npk_dev *d) { return (pccx *)d; }

/* ---- helpers ----------------------------------------------------------------- */

static void update_irq(pccx *p) {
    int level = ((p->irq_en & 1) && p->done) || ((p->irq_en & 2) && p->fault);
    npk_dev_set_irq(&p->dev, 0, level);
}

static int busy(const pccx *p) {
    return p->hung || (p->qcount && !p->fault) || p->dev.cycles < p->busy_until;
}

static void *grow(void **ptr, size_t *cap, size_t need) {
    if (need <= *cap) return *ptr;
    size_t c = *cap ? *cap : 4096;
    while (c < need) c *= 2;
    void *n = realloc(*ptr, c);
    if (!n) return NULL;
    *ptr = n;
    *cap = c;
    return n;
}

static uint16_t *tmpbuf(pccx *p, size_t n) {
    void *t = p->tmp;
    size_t cap = p->tmp_cap * sizeof *p->tmp;
    if (!grow(&t, &cap, n * sizeof *p->tmp)) return NULL;
    p->tmp = t;
    p->tmp_cap = cap / sizeof *p->tmp;
    return p->tmp;
}

static uint8_t *bytebuf(pccx *p, size_t n) {
    void *b = p->buf;
    if (!grow(&b, &p->buf_cap, n)) return NULL;
    p->buf = b;
    return p->buf;
}

/* Latch a fault for the instruction at the queue head. */
static int raise_fault(pccx *p, int code, uint64_t word, uint64_t addr) {
    p->fault = code;
    p->err_index = p->qindex;
    p->err_instr = word;
    p->err_addr = addr;
    p->done = 0;
    update_irq(p);
    return code;
}

static uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static uint64_t host_cycles(const pccx *p, uint64_t bytes) {
    return (uint64_t)ceil((double)bytes / p->bpc);
}

static int overlaps(range a, range b) { return a.lo < b.hi && b.lo < a.hi; }

/* Earliest start allowed by in-flight async instructions. */
static uint64_t hazard_start(pccx *p, const range *rd, int nrd, range wr, int rd_scalar, uint64_t t) {
    for (unsigned i = 0; i < NSLOT; i++) {
        slot *s = &p->slots[i];
        if (!s->valid || s->end <= t) continue;
        int dep = overlaps(s->wr, wr) || (rd_scalar && s->wr_scalar);
        for (int j = 0; j < nrd; j++) dep |= overlaps(s->wr, rd[j]);
        for (int j = 0; j < 2; j++) dep |= overlaps(s->rd[j], wr);
        if (dep && s->end > t) t = s->end;
    }
    return t;
}

/* Schedule an instruction on an engine; returns its start cycle. */
static uint64_t schedule(pccx *p, int eng, uint64_t t0, uint64_t dur, int async, const range *rd, int nrd, range wr,
                         int rd_scalar, int wr_scalar) {
    uint64_t t = t0 > p->eng_free[eng] ? t0 : p->eng_free[eng];
    t = hazard_start(p, rd, nrd, wr, rd_scalar, t);
    uint64_t end = t + dur;
    p->eng_free[eng] = end;
    if (end > p->busy_until) p->busy_until = end;
    p->eng_cycles[eng] += dur;
    if (async) {
        p->fe_ready = t + 1;
        slot *s = &p->slots[p->next_slot++ % NSLOT];
        s->valid = 1;
        s->end = end;
        s->rd[0] = nrd > 0 ? rd[0] : (range){0, 0};
        s->rd[1] = nrd > 1 ? rd[1] : (range){0, 0};
        s->wr = wr;
        s->wr_scalar = wr_scalar;
    } else {
        p->fe_ready = end;
    }
    return t;
}

static void trace(pccx *p, int eng, const char *name, uint64_t start, uint64_t dur, const char *args) {
    if (p->dev.trace) npk_trace_complete(p->dev.trace, p->dev.cls ? p->dev.cls->name : "pccx", eng_track[eng], name, start, dur, args);
}

/* A bandwidth counter over [start, start + dur). */
static void trace_bw(pccx *p, const char *name, uint64_t start, uint64_t dur, uint64_t bytes) {
    if (!p->dev.trace || !dur) return;
    const char *dn = p->dev.cls ? p->dev.cls->name : "pccx";
    npk_trace_counter(p->dev.trace, dn, name, start, (double)bytes / (double)dur);
    npk_trace_counter(p->dev.trace, dn, name, start + dur, 0.0);
}

/* Queue depth counter: instructions accepted and not started. */
static void trace_depth(pccx *p, uint64_t cycle) {
    if (p->dev.trace) npk_trace_counter(p->dev.trace, p->dev.cls ? p->dev.cls->name : "pccx", "queue depth", cycle, p->qcount);
}

static int l2_ok(uint64_t lo, uint64_t words) { return lo + words <= L2W; }

static uint16_t l2_get(const pccx *p, uint64_t word, uint64_t e) { return p->l2[word * 8 + e]; }

static float bf(uint16_t b) { return npk_bf16_to_f32(b); }

/* ---- GEMV / GEMM ------------------------------------------------------------------ */

static int exec_mm(pccx *p, uint64_t w, uint64_t t0) {
    npk_pccx_insn in;
    npk_pccx_decode(w, &in);
    int c = npk_pccx_check(w);
    if (c) return raise_fault(p, c, w, 0);
    const uint16_t *fm = p->cc[0][in.shape_ptr], *ws = p->cc[1][in.size_ptr];
    uint64_t M = (uint64_t)fm[0] * fm[1], K = fm[2], N = ws[0], KW = ws[1], G = ws[2] ? ws[2] : KW;
    if (!M || !K || !N || !KW) return raise_fault(p, NPK_PCCX_FAULT_SHAPE_ZERO, w, 0);
    if (K != KW || G > KW) return raise_fault(p, NPK_PCCX_FAULT_SHAPE_MISMATCH, w, 0);
    uint64_t sstride = div_up(K, 8), dstride = div_up(N, 8);
    if (!l2_ok(in.src, M * sstride)) return raise_fault(p, NPK_PCCX_FAULT_L2_RANGE, w, in.src);
    if (!l2_ok(in.dest, M * dstride)) return raise_fault(p, NPK_PCCX_FAULT_L2_RANGE, w, in.dest);
    int wscale = !!(in.flags & NPK_PCCX_W_SCALE);
    uint64_t ngroups = div_up(K, G);
    uint64_t wbytes = div_up(div_up(N * K, 2), 16) * 16;
    uint64_t rec = npk_pccx_wrec_size((unsigned)N, (unsigned)K, (unsigned)(ws[2]), wscale);
    if (p->ws_limit && (p->ws_addr + rec > p->ws_limit || p->ws_addr + rec < p->ws_addr))
        return raise_fault(p, NPK_PCCX_FAULT_WS_RANGE, w, p->ws_addr);
    /* Read the record in 1 MiB pieces (the same 16-byte beats as one copy),
     * growing the buffer only as the bus delivers: a hostile shape (N = K =
     * 65535 is a 2 GiB record) must not make the host allocate gigabytes
     * before the first beat fails (issue 8, found by fuzz_pccx_queue). */
    uint8_t *r = NULL;
    uint64_t got = 0, faddr = 0, lat = 0;
    npk_bus_resp resp = NPK_BUS_OK;
    while (got < rec && resp == NPK_BUS_OK) {
        uint64_t piece = rec - got < (1u << 20) ? rec - got : (1u << 20), l = 0;
        if (!(r = bytebuf(p, got + piece))) return raise_fault(p, NPK_PCCX_FAULT_BUS, w, p->ws_addr + got);
        resp = npk_bus_copy_in(p->dev.mem, p->ws_addr + got, r + got, piece, 16, NULL, &faddr, &l);
        lat += l;
        got += piece;
    }
    if (resp == NPK_BUS_HANG) {
        p->hung = 1;
        return -1;
    }
    if (resp != NPK_BUS_OK) return raise_fault(p, NPK_PCCX_FAULT_BUS, w, faddr);
    const uint8_t *scl = r + wbytes;
    uint16_t *out = tmpbuf(p, M * N);
    if (!out) return raise_fault(p, NPK_PCCX_FAULT_BUS, w, 0);
    npk_bf16_xacc acc;
    for (uint64_t m = 0; m < M; m++) {
        uint64_t xs = in.src + m * sstride, yd = in.dest + m * dstride;
        for (uint64_t n = 0; n < N; n++) {
            npk_bf16_xacc_clear(&acc);
            if (in.flags & NPK_PCCX_ACCM) npk_bf16_xacc_add(&acc, l2_get(p, yd, n));
            for (uint64_t g = 0; g < ngroups; g++) {
                float s = 1.0f;
                if (wscale) {
                    uint32_t u;
                    const uint8_t *q = scl + 4 * (n * ngroups + g);
                    u = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
                    memcpy(&s, &u, sizeof s);
                }
                uint64_t k1 = (g + 1) * G < K ? (g + 1) * G : K;
                for (uint64_t k = g * G; k < k1; k++) {
                    uint64_t idx = n * K + k;
                    int v = (r[idx / 2] >> (4 * (idx & 1))) & 0xf;
                    if (v & 8) v -= 16;
                    if (v) npk_bf16_xacc_add_prod(&acc, s, v, l2_get(p, xs, k));
                    else if (npk_bf16_isnan(l2_get(p, xs, k)) || (l2_get(p, xs, k) & 0x7fff) == 0x7f80)
                        npk_bf16_xacc_add_prod(&acc, s, 0, l2_get(p, xs, k)); /* 0 * inf/NaN = NaN */
                    else if (isinf(s) || isnan(s))
                        npk_bf16_xacc_add_prod(&acc, s, 0, l2_get(p, xs, k));
                }
            }
            out[m * N + n] = npk_bf16_xacc_round(&acc);
        }
    }
    for (uint64_t m = 0; m < M; m++)
        memcpy(&p->l2[(in.dest + m * dstride) * 8], &out[m * N], N * sizeof *out);
    if (in.flags & NPK_PCCX_FINDEMAX) {
        uint16_t best = NPK_BF16_QNAN;
        int any = 0;
        for (uint64_t i = 0; i < M * N; i++) {
            if (npk_bf16_isnan(out[i])) continue;
            if (!any || bf(out[i]) > bf(best)) best = out[i];
            any = 1;
        }
        p->emax = best;
    }
    p->ws_addr += rec;
    /* timing */
    int gemv = in.op == NPK_PCCX_OP_GEMV;
    unsigned lanes = in.lanes ? in.lanes : 4;
    uint64_t macs = M * N * K;
    uint64_t streamed = gemv ? rec * M : rec;
    uint64_t beats = div_up(rec, 16);
    uint64_t compute = gemv ? div_up(macs, 32ull * lanes)
                            : div_up(N, 32) * div_up(K, 32) * (div_up(M, 2) + 32);
    uint64_t mem = host_cycles(p, streamed);
    uint64_t dur = (compute > mem ? compute : mem) + (gemv ? p->lat_gemv : p->lat_gemm) + lat / (beats ? beats : 1);
    range rd[1] = {{in.src, (uint32_t)(in.src + M * sstride)}};
    range wr = {in.dest, (uint32_t)(in.dest + M * dstride)};
    int eng = gemv ? ENG_GEMV : ENG_GEMM;
    uint64_t t = schedule(p, eng, t0, dur, 0, rd, 1, wr, 0, 0);
    p->macs += macs;
    p->ws_bytes += streamed;
    if (p->dev.trace) {
        char a[200];
        snprintf(a, sizeof a, "\"M\":%" PRIu64 ",\"N\":%" PRIu64 ",\"K\":%" PRIu64 ",\"macs\":%" PRIu64
                 ",\"weight_bytes\":%" PRIu64 ",\"flags\":%u,\"lanes\":%u",
                 M, N, K, macs, streamed, in.flags, lanes);
        trace(p, eng, gemv ? "GEMV" : "GEMM", t, dur, a);
        trace_bw(p, "weight stream bytes/cycle", t, dur, streamed);
    }
    return 0;
}

/* ---- MEMCPY / MEMSET --------------------------------------------------------------- */

static int exec_memcpy(pccx *p, uint64_t w, uint64_t t0) {
    npk_pccx_insn in;
    npk_pccx_decode(w, &in);
    int c = npk_pccx_check(w);
    if (c) return raise_fault(p, c, w, 0);
    const uint16_t *sh = p->cc[0][in.shape_ptr];
    uint64_t n = (uint64_t)sh[0] * sh[1] * sh[2];
    if (!n) return raise_fault(p, NPK_PCCX_FAULT_SHAPE_ZERO, w, 0);
    uint64_t words = div_up(n, 8), bytes = words * 16;
    uint64_t lat = 0, dur;
    range rd = {0, 0}, wr = {0, 0};
    if (in.from_device || in.to_device) {
        uint32_t l2a = in.from_device ? in.dest : in.src;
        if (!l2_ok(l2a, words)) return raise_fault(p, NPK_PCCX_FAULT_L2_RANGE, w, l2a);
        uint64_t off = (uint64_t)in.aux * 16;
        if (off + bytes > p->hwin_size) return raise_fault(p, NPK_PCCX_FAULT_HOST_RANGE, w, p->hwin_base + off);
        uint64_t haddr = p->hwin_base + off;
        size_t done = 0;
        uint64_t faddr = 0;
        uint8_t *b = bytebuf(p, bytes);
        if (!b) return raise_fault(p, NPK_PCCX_FAULT_BUS, w, haddr);
        npk_bus_resp resp;
        if (in.from_device) { /* host -> L2: read all, then write L2 */
            resp = npk_bus_copy_in(p->dev.mem, haddr, b, bytes, 16, &done, &faddr, &lat);
            if (resp == NPK_BUS_HANG) {
                p->hung = 1;
                return -1;
            }
            if (resp != NPK_BUS_OK) return raise_fault(p, NPK_PCCX_FAULT_BUS, w, faddr);
            for (uint64_t i = 0; i < words * 8; i++)
                p->l2[(uint64_t)l2a * 8 + i] = (uint16_t)(b[2 * i] | b[2 * i + 1] << 8);
            wr = (range){l2a, (uint32_t)(l2a + words)};
        } else { /* L2 -> host */
            for (uint64_t i = 0; i < words * 8; i++) {
                uint16_t v = p->l2[(uint64_t)l2a * 8 + i];
                b[2 * i] = (uint8_t)v;
                b[2 * i + 1] = (uint8_t)(v >> 8);
            }
            resp = npk_bus_copy_out(p->dev.mem, haddr, b, bytes, 16, &done, &faddr, &lat);
            if (resp == NPK_BUS_HANG) {
                p->hung = 1;
                return -1;
            }
            if (resp != NPK_BUS_OK) return raise_fault(p, NPK_PCCX_FAULT_BUS, w, faddr);
            rd = (range){l2a, (uint32_t)(l2a + words)};
        }
        dur = host_cycles(p, bytes) + p->lat_dma + lat / words;
        p->dma_bytes += bytes;
    } else { /* L2 -> L2 */
        if (!l2_ok(in.src, words)) return raise_fault(p, NPK_PCCX_FAULT_L2_RANGE, w, in.src);
        if (!l2_ok(in.dest, words)) return raise_fault(p, NPK_PCCX_FAULT_L2_RANGE, w, in.dest);
        memmove(&p->l2[(uint64_t)in.dest * 8], &p->l2[(uint64_t)in.src * 8], words * 16);
        rd = (range){in.src, (uint32_t)(in.src + words)};
        wr = (range){in.dest, (uint32_t)(in.dest + words)};
        dur = words + 4;
    }
    range rds[1] = {rd};
    uint64_t t = schedule(p, ENG_DMA, t0, dur, in.async, rds, 1, wr, 0, 0);
    if (p->dev.trace) {
        char a[160];
        snprintf(a, sizeof a, "\"from_device\":%u,\"to_device\":%u,\"words\":%" PRIu64 ",\"bytes\":%" PRIu64
                 ",\"host_bytes\":%" PRIu64 ",\"async\":%u",
                 in.from_device, in.to_device, words, bytes, (in.from_device || in.to_device) ? bytes : 0, in.async);
        trace(p, ENG_DMA, "MEMCPY", t, dur, a);
        if (in.from_device || in.to_device) trace_bw(p, "host dma bytes/cycle", t, dur, bytes);
    }
    return 0;
}

static int exec_memset(pccx *p, uint64_t w, uint64_t t0) {
    npk_pccx_insn in;
    npk_pccx_decode(w, &in);
    int c = npk_pccx_check(w);
    if (c) return raise_fault(p, c, w, 0);
    p->cc[in.cache][in.index][0] = in.a;
    p->cc[in.cache][in.index][1] = in.b;
    p->cc[in.cache][in.index][2] = in.c;
    uint64_t t = schedule(p, ENG_DMA, t0, 1, 0, NULL, 0, (range){0, 0}, 0, 0);
    if (p->dev.trace) {
        char a[120];
        snprintf(a, sizeof a, "\"cache\":%u,\"index\":%u,\"a\":%u,\"b\":%u,\"c\":%u", in.cache, in.index, in.a, in.b, in.c);
        trace(p, ENG_DMA, "MEMSET", t, 1, a);
    }
    return 0;
}

/* ---- CVO ---------------------------------------------------------------------------- */

static double cvo_f(unsigned func, double x, double s, int recip) {
    switch (func) {
    case NPK_PCCX_CVO_EXP: return exp(x);
    case NPK_PCCX_CVO_SQRT: return sqrt(x);
    case NPK_PCCX_CVO_GELU:
        if (isinf(x)) return x > 0 ? x : -0.0; /* the limits */
        /* 0.5x(1 + tanh z) written as x / (1 + e^(-2z)): no cancellation for x << 0 */
        return x / (1.0 + exp(-2.0 * 0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case NPK_PCCX_CVO_SIN: return sin(x);
    case NPK_PCCX_CVO_COS: return cos(x);
    case NPK_PCCX_CVO_SCALE: return recip ? x / s : x * s;
    default: return 1.0 / x; /* RECIP */
    }
}

static int exec_cvo(pccx *p, uint64_t w, uint64_t t0) {
    npk_pccx_insn in;
    npk_pccx_decode(w, &in);
    int c = npk_pccx_check(w);
    if (c) return raise_fault(p, c, w, 0);
    uint64_t len = in.length, swords = div_up(len, 8);
    int reduce = in.func == NPK_PCCX_CVO_REDUCE_SUM;
    uint64_t dwords = reduce ? 1 : swords;
    if (!l2_ok(in.src, swords)) return raise_fault(p, NPK_PCCX_FAULT_L2_RANGE, w, in.src);
    if (!l2_ok(in.dest, dwords)) return raise_fault(p, NPK_PCCX_FAULT_L2_RANGE, w, in.dest);
    int sub = !!(in.flags & NPK_PCCX_CVO_SUB_EMAX), accm = !!(in.flags & NPK_PCCX_CVO_ACCM);
    const uint16_t *x = &p->l2[(uint64_t)in.src * 8];
    uint16_t *y = &p->l2[(uint64_t)in.dest * 8];
    if (reduce) {
        npk_bf16_xacc acc;
        npk_bf16_xacc_clear(&acc);
        if (accm) npk_bf16_xacc_add(&acc, y[0]);
        for (uint64_t i = 0; i < len; i++) {
            npk_bf16_xacc_add(&acc, x[i]);
            if (sub) npk_bf16_xacc_sub(&acc, p->emax);
        }
        y[0] = npk_bf16_xacc_round(&acc);
        p->scalar = y[0];
    } else {
        uint16_t *out = tmpbuf(p, len);
        if (!out) return raise_fault(p, NPK_PCCX_FAULT_BUS, w, 0);
        double e = bf(p->emax), s = bf(p->scalar);
        int recip = !!(in.flags & NPK_PCCX_CVO_RECIP_SCALE);
        for (uint64_t i = 0; i < len; i++) {
            double v = bf(x[i]);
            if (sub) v -= e;
            double r = cvo_f(in.func, v, s, recip);
            if (accm) r += bf(y[i]);
            out[i] = npk_bf16_from_f64(r);
        }
        memcpy(y, out, len * sizeof *out);
    }
    uint64_t dur = len + p->lat_sfu;
    range rd[1] = {{in.src, (uint32_t)(in.src + swords)}};
    range wr = {in.dest, (uint32_t)(in.dest + dwords)};
    int rd_scalar = in.func == NPK_PCCX_CVO_SCALE;
    uint64_t t = schedule(p, ENG_SFU, t0, dur, in.async, rd, 1, wr, rd_scalar, reduce);
    p->sfu_elems += len;
    if (p->dev.trace) {
        char a[160];
        snprintf(a, sizeof a, "\"func\":%u,\"length\":%" PRIu64 ",\"flags\":%u,\"async\":%u", in.func, len, in.flags, in.async);
        trace(p, ENG_SFU, npk_pccx_cvo_name(in.func), t, dur, a);
    }
    return 0;
}

/* ---- the queue ---------------------------------------------------------------------- */

/* Start every queued instruction whose start cycle is <= limit. */
static void pump(pccx *p, uint64_t limit) {
    while (p->qcount && !p->fault && !p->hung) {
        uint64_t t = p->fe_ready > p->dev.cycles ? p->fe_ready : p->dev.cycles;
        if (t > limit) break;
        uint64_t w = p->queue[p->qhead];
        /* indices are not contiguous when instructions were dropped on
         * overflow while others stayed queued: take the stored one */
        p->qindex = p->qidx[p->qhead];
        unsigned op = (unsigned)(w >> 60);
        int rc;
        switch (op) {
        case NPK_PCCX_OP_GEMV:
        case NPK_PCCX_OP_GEMM: rc = exec_mm(p, w, t); break;
        case NPK_PCCX_OP_MEMCPY: rc = exec_memcpy(p, w, t); break;
        case NPK_PCCX_OP_MEMSET: rc = exec_memset(p, w, t); break;
        case NPK_PCCX_OP_CVO: rc = exec_cvo(p, w, t); break;
        default: rc = raise_fault(p, NPK_PCCX_FAULT_OPCODE, w, 0); break;
        }
        if (p->hung) return; /* the instruction never completes; it stays at the head */
        p->qhead = (p->qhead + 1) % QDEPTH;
        p->qcount--;
        p->qindex++;
        trace_depth(p, t);
        if (rc) return; /* faulted: skipped; the queue stops */
        p->retired++;
        p->per_op[op]++;
    }
}

static void issue(pccx *p, uint64_t w) {
    uint64_t index = p->issued++;
    p->done = 0;
    if (p->qcount == QDEPTH) {
        p->dropped++;
        if (!p->fault) {
            p->fault = NPK_PCCX_FAULT_OVERFLOW;
            p->err_index = index;
            p->err_instr = w;
            p->err_addr = 0;
        }
        update_irq(p);
        return;
    }
    if (!p->qcount) p->qindex = index;
    p->queue[(p->qhead + p->qcount) % QDEPTH] = w;
    p->qidx[(p->qhead + p->qcount) % QDEPTH] = index;
    p->qcount++;
    trace_depth(p, p->dev.cycles);
    pump(p, p->dev.cycles);
    update_irq(p);
}

static void soft_reset(pccx *p) {
    npk_regfile_reset(&p->rf);
    memset(p->cc, 0, sizeof p->cc);
    p->emax = NPK_BF16_NINF;
    p->scalar = 0x3f80;
    p->qhead = p->qcount = 0;
    p->qindex = p->issued = p->retired = p->dropped = 0;
    p->instr_lo = 0;
    p->fault = p->hung = p->done = 0;
    p->err_index = p->err_instr = p->err_addr = 0;
    p->hwin_base = p->ws_addr = p->ws_limit = 0;
    p->hwin_size = 0x200000;
    p->irq_en = 0;
    p->l2_addr = p->l2_lane = 0;
    p->fe_ready = p->busy_until = p->dev.cycles;
    for (int i = 0; i < ENG_N; i++) p->eng_free[i] = p->dev.cycles;
    memset(p->slots, 0, sizeof p->slots);
    p->busy_cycles = p->ws_bytes = p->dma_bytes = p->macs = p->sfu_elems = 0;
    memset(p->per_op, 0, sizeof p->per_op);
    memset(p->eng_cycles, 0, sizeof p->eng_cycles);
    update_irq(p);
}

/* ---- registers ------------------------------------------------------------------------- */

static uint32_t rd_status(npk_dev *d, const npk_reg *r, uint32_t s) {
    (void)r;
    (void)s;
    pccx *p = P(d);
    return (busy(p) ? NPK_PCCX_STATUS_BUSY : 0) | (p->done ? NPK_PCCX_STATUS_DONE : 0) |
           (p->fault ? NPK_PCCX_STATUS_ERROR : 0) | (p->hung ? NPK_PCCX_STATUS_HUNG : 0);
}

static void wr_status(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v) {
    (void)r;
    (void)old;
    pccx *p = P(d);
    if (v & NPK_PCCX_STATUS_DONE) p->done = 0;
    if ((v & NPK_PCCX_STATUS_ERROR) && p->fault) {
        p->fault = 0;
        p->err_index = p->err_instr = p->err_addr = 0;
        if (p->fe_ready < p->dev.cycles) p->fe_ready = p->dev.cycles;
        pump(p, p->dev.cycles);
    }
    update_irq(p);
}

static void wr_ctrl(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v) {
    (void)r;
    (void)old;
    pccx *p = P(d);
    if (v & NPK_PCCX_CTRL_RESET) {
        soft_reset(p);
        return;
    }
    if (v & NPK_PCCX_CTRL_FLUSH) {
        p->qindex += p->qcount;
        p->qhead = p->qcount = 0;
    }
    if (v & NPK_PCCX_CTRL_CLR_PERF) {
        p->busy_cycles = p->ws_bytes = p->dma_bytes = p->macs = p->sfu_elems = 0;
        memset(p->per_op, 0, sizeof p->per_op);
        memset(p->eng_cycles, 0, sizeof p->eng_cycles);
    }
    update_irq(p);
}

static void wr_instr_lo(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v) {
    (void)r;
    (void)old;
    P(d)->instr_lo = v;
}

static void wr_instr_hi(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v) {
    (void)r;
    (void)old;
    pccx *p = P(d);
    issue(p, (uint64_t)v << 32 | p->instr_lo);
}

static uint32_t rd_val(npk_dev *d, const npk_reg *r, uint32_t s) {
    (void)s;
    pccx *p = P(d);
    uint64_t now = d->cycles;
    switch (r->off) {
    case NPK_PCCX_ERR_CODE: return (uint32_t)p->fault;
    case NPK_PCCX_ERR_INDEX: return (uint32_t)p->err_index;
    case NPK_PCCX_ERR_INSTR_LO: return (uint32_t)p->err_instr;
    case NPK_PCCX_ERR_INSTR_HI: return (uint32_t)(p->err_instr >> 32);
    case NPK_PCCX_ERR_ADDR_LO: return (uint32_t)p->err_addr;
    case NPK_PCCX_ERR_ADDR_HI: return (uint32_t)(p->err_addr >> 32);
    case NPK_PCCX_IRQ_EN: return p->irq_en;
    case NPK_PCCX_QUEUE_COUNT: return p->qcount;
    case NPK_PCCX_IDLE_ETA: {
        if (p->hung || (p->fault && p->qcount)) return 0xffffffffu;
        uint64_t t = p->busy_until;
        if (p->qcount && p->fe_ready > t) t = p->fe_ready;
        if (p->qcount && t <= now) return 1;
        uint64_t eta = t > now ? t - now : 0;
        return eta > 0xfffffffeu ? 0xfffffffeu : (uint32_t)eta;
    }
    case NPK_PCCX_HWIN_BASE_LO: return (uint32_t)p->hwin_base;
    case NPK_PCCX_HWIN_BASE_HI: return (uint32_t)(p->hwin_base >> 32);
    case NPK_PCCX_HWIN_SIZE: return p->hwin_size;
    case NPK_PCCX_WS_ADDR_LO: return (uint32_t)p->ws_addr;
    case NPK_PCCX_WS_ADDR_HI: return (uint32_t)(p->ws_addr >> 32);
    case NPK_PCCX_WS_LIMIT_LO: return (uint32_t)p->ws_limit;
    case NPK_PCCX_WS_LIMIT_HI: return (uint32_t)(p->ws_limit >> 32);
    case NPK_PCCX_EMAX: return p->emax;
    case NPK_PCCX_SCALAR: return p->scalar;
    case NPK_PCCX_L2_ADDR: return p->l2_addr;
    case NPK_PCCX_L2_DATA: {
        uint32_t v = 0;
        if (p->l2_addr < L2W)
            v = p->l2[(uint64_t)p->l2_addr * 8 + 2 * p->l2_lane] |
                (uint32_t)p->l2[(uint64_t)p->l2_addr * 8 + 2 * p->l2_lane + 1] << 16;
        if (++p->l2_lane == 4) {
            p->l2_lane = 0;
            p->l2_addr++;
        }
        return v;
    }
    case NPK_PCCX_INSTR_ISSUED: return (uint32_t)p->issued;
    case NPK_PCCX_INSTR_RETIRED: return (uint32_t)p->retired;
    case NPK_PCCX_CYCLES_LO: return (uint32_t)p->busy_cycles;
    case NPK_PCCX_CYCLES_HI: return (uint32_t)(p->busy_cycles >> 32);
    case NPK_PCCX_CNT_GEMV: return (uint32_t)p->per_op[0];
    case NPK_PCCX_CNT_GEMM: return (uint32_t)p->per_op[1];
    case NPK_PCCX_CNT_MEMCPY: return (uint32_t)p->per_op[2];
    case NPK_PCCX_CNT_MEMSET: return (uint32_t)p->per_op[3];
    case NPK_PCCX_CNT_CVO: return (uint32_t)p->per_op[4];
    case NPK_PCCX_WS_BYTES_LO: return (uint32_t)p->ws_bytes;
    case NPK_PCCX_WS_BYTES_HI: return (uint32_t)(p->ws_bytes >> 32);
    case NPK_PCCX_DMA_BYTES_LO: return (uint32_t)p->dma_bytes;
    case NPK_PCCX_DMA_BYTES_HI: return (uint32_t)(p->dma_bytes >> 32);
    case NPK_PCCX_MACS_LO: return (uint32_t)p->macs;
    case NPK_PCCX_MACS_HI: return (uint32_t)(p->macs >> 32);
    case NPK_PCCX_SFU_ELEMS: return (uint32_t)p->sfu_elems;
    case NPK_PCCX_GEMV_CYCLES: return (uint32_t)p->eng_cycles[ENG_GEMV];
    case NPK_PCCX_GEMM_CYCLES: return (uint32_t)p->eng_cycles[ENG_GEMM];
    case NPK_PCCX_SFU_CYCLES: return (uint32_t)p->eng_cycles[ENG_SFU];
    case NPK_PCCX_DMA_CYCLES: return (uint32_t)p->eng_cycles[ENG_DMA];
    case NPK_PCCX_DROPPED: return (uint32_t)p->dropped;
    default: return 0;
    }
}

static void wr_val(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v) {
    (void)old;
    pccx *p = P(d);
    switch (r->off) {
    case NPK_PCCX_IRQ_EN: p->irq_en = v & 3u; update_irq(p); break;
    case NPK_PCCX_HWIN_BASE_LO: p->hwin_base = (p->hwin_base & ~0xffffffffull) | (v & ~0xfu); break;
    case NPK_PCCX_HWIN_BASE_HI: p->hwin_base = (p->hwin_base & 0xffffffffull) | (uint64_t)v << 32; break;
    case NPK_PCCX_HWIN_SIZE: p->hwin_size = v; break;
    case NPK_PCCX_WS_ADDR_LO: p->ws_addr = (p->ws_addr & ~0xffffffffull) | (v & ~0xfu); break;
    case NPK_PCCX_WS_ADDR_HI: p->ws_addr = (p->ws_addr & 0xffffffffull) | (uint64_t)v << 32; break;
    case NPK_PCCX_WS_LIMIT_LO: p->ws_limit = (p->ws_limit & ~0xffffffffull) | v; break;
    case NPK_PCCX_WS_LIMIT_HI: p->ws_limit = (p->ws_limit & 0xffffffffull) | (uint64_t)v << 32; break;
    case NPK_PCCX_EMAX: p->emax = (uint16_t)v; break;
    case NPK_PCCX_SCALAR: p->scalar = (uint16_t)v; break;
    case NPK_PCCX_L2_ADDR: p->l2_addr = v; p->l2_lane = 0; break;
    case NPK_PCCX_L2_DATA:
        if (p->l2_addr < L2W) {
            p->l2[(uint64_t)p->l2_addr * 8 + 2 * p->l2_lane] = (uint16_t)v;
            p->l2[(uint64_t)p->l2_addr * 8 + 2 * p->l2_lane + 1] = (uint16_t)(v >> 16);
        }
        if (++p->l2_lane == 4) {
            p->l2_lane = 0;
            p->l2_addr++;
        }
        break;
    default: break;
    }
}

#define RO(off, name) {off, name, 0, 0, 0, rd_val, NULL}
#define RW(off, name, reset) {off, name, reset, 0xffffffffu, 0, rd_val, wr_val}
static const npk_reg regs[] = {
    /* write-only (docs: access W): wmask 0 so they read 0 like CTRL; the hooks see the value */
    {NPK_PCCX_INSTR_LO, "INSTR_LO", 0, 0, 0, NULL, wr_instr_lo},
    {NPK_PCCX_INSTR_HI, "INSTR_HI", 0, 0, 0, NULL, wr_instr_hi},
    {NPK_PCCX_STATUS, "STATUS", 0, 0, 0, rd_status, wr_status},
    {NPK_PCCX_ID, "ID", NPK_PCCX_ID_VALUE, 0, 0, NULL, NULL},
    {NPK_PCCX_VERSION, "VERSION", 0x00000002u, 0, 0, NULL, NULL},
    RO(NPK_PCCX_ERR_CODE, "ERR_CODE"),
    RO(NPK_PCCX_ERR_INDEX, "ERR_INDEX"),
    RO(NPK_PCCX_ERR_INSTR_LO, "ERR_INSTR_LO"),
    RO(NPK_PCCX_ERR_INSTR_HI, "ERR_INSTR_HI"),
    RO(NPK_PCCX_ERR_ADDR_LO, "ERR_ADDR_LO"),
    RO(NPK_PCCX_ERR_ADDR_HI, "ERR_ADDR_HI"),
    RW(NPK_PCCX_IRQ_EN, "IRQ_EN", 0),
    RO(NPK_PCCX_QUEUE_COUNT, "QUEUE_COUNT"),
    {NPK_PCCX_QUEUE_CAP, "QUEUE_CAP", QDEPTH, 0, 0, NULL, NULL},
    RO(NPK_PCCX_IDLE_ETA, "IDLE_ETA"),
    RW(NPK_PCCX_HWIN_BASE_LO, "HWIN_BASE_LO", 0),
    RW(NPK_PCCX_HWIN_BASE_HI, "HWIN_BASE_HI", 0),
    RW(NPK_PCCX_HWIN_SIZE, "HWIN_SIZE", 0x200000u),
    RW(NPK_PCCX_WS_ADDR_LO, "WS_ADDR_LO", 0),
    RW(NPK_PCCX_WS_ADDR_HI, "WS_ADDR_HI", 0),
    RW(NPK_PCCX_WS_LIMIT_LO, "WS_LIMIT_LO", 0),
    RW(NPK_PCCX_WS_LIMIT_HI, "WS_LIMIT_HI", 0),
    RW(NPK_PCCX_EMAX, "EMAX", 0xff80u),
    RW(NPK_PCCX_SCALAR, "SCALAR", 0x3f80u),
    RW(NPK_PCCX_L2_ADDR, "L2_ADDR", 0),
    RW(NPK_PCCX_L2_DATA, "L2_DATA", 0),
    RO(NPK_PCCX_INSTR_ISSUED, "INSTR_ISSUED"),
    RO(NPK_PCCX_INSTR_RETIRED, "INSTR_RETIRED"),
    RO(NPK_PCCX_CYCLES_LO, "CYCLES_LO"),
    RO(NPK_PCCX_CYCLES_HI, "CYCLES_HI"),
    RO(NPK_PCCX_CNT_GEMV, "CNT_GEMV"),
    RO(NPK_PCCX_CNT_GEMM, "CNT_GEMM"),
    RO(NPK_PCCX_CNT_MEMCPY, "CNT_MEMCPY"),
    RO(NPK_PCCX_CNT_MEMSET, "CNT_MEMSET"),
    RO(NPK_PCCX_CNT_CVO, "CNT_CVO"),
    RO(NPK_PCCX_WS_BYTES_LO, "WS_BYTES_LO"),
    RO(NPK_PCCX_WS_BYTES_HI, "WS_BYTES_HI"),
    RO(NPK_PCCX_DMA_BYTES_LO, "DMA_BYTES_LO"),
    RO(NPK_PCCX_DMA_BYTES_HI, "DMA_BYTES_HI"),
    RO(NPK_PCCX_MACS_LO, "MACS_LO"),
    RO(NPK_PCCX_MACS_HI, "MACS_HI"),
    RO(NPK_PCCX_SFU_ELEMS, "SFU_ELEMS"),
    RO(NPK_PCCX_GEMV_CYCLES, "GEMV_CYCLES"),
    RO(NPK_PCCX_GEMM_CYCLES, "GEMM_CYCLES"),
    RO(NPK_PCCX_SFU_CYCLES, "SFU_CYCLES"),
    RO(NPK_PCCX_DMA_CYCLES, "DMA_CYCLES"),
    RO(NPK_PCCX_DROPPED, "DROPPED"),
    {NPK_PCCX_CTRL, "CTRL", 0, 0, 0, NULL, wr_ctrl},
};

/* ---- device ops ------------------------------------------------------------------------- */

static uint32_t op_read32(npk_dev *d, uint32_t off) { return npk_regfile_read(&P(d)->rf, d, off); }
static void op_write32(npk_dev *d, uint32_t off, uint32_t v) { npk_regfile_write(&P(d)->rf, d, off, v); }

static void op_write64(npk_dev *d, uint32_t off, uint64_t v) {
    if ((off & (P(d)->rf.span - 1)) == NPK_PCCX_INSTR_LO) { /* one 64-bit instruction write */
        P(d)->instr_lo = (uint32_t)v;
        issue(P(d), v);
        return;
    }
    op_write32(d, off, (uint32_t)v);
    op_write32(d, off + 4, (uint32_t)(v >> 32));
}

static void op_step(npk_dev *d, uint64_t cycles) {
    pccx *p = P(d);
    uint64_t c0 = d->cycles, c1 = c0 + cycles;
    /* instructions start in order at their scheduled cycles within [c0, c1] */
    while (p->qcount && !p->fault && !p->hung) {
        uint64_t t = p->fe_ready > d->cycles ? p->fe_ready : d->cycles;
        if (t > c1) break;
        d->cycles = t;
        pump(p, t);
    }
    d->cycles = c1;
    if (p->hung) p->busy_cycles += cycles;
    else if (p->busy_until > c0) p->busy_cycles += (p->busy_until < c1 ? p->busy_until : c1) - c0;
    if (!busy(p) && p->busy_until > c0 && !p->fault) p->done = 1;
    update_irq(p);
}

static int op_idle(npk_dev *d) { return !busy(P(d)); }

static void op_reset(npk_dev *d) {
    pccx *p = P(d);
    memset(p->l2, 0, (size_t)L2W * 16);
    soft_reset(p);
}

static void op_destroy(npk_dev *d) {
    pccx *p = P(d);
    npk_regfile_fini(&p->rf);
    free(p->l2);
    free(p->buf);
    free(p->tmp);
    free(p);
}

static const npk_dev_ops ops = {
    .read32 = op_read32,
    .write32 = op_write32,
    .write64 = op_write64,
    .step = op_step,
    .idle = op_idle,
    .reset = op_reset,
    .destroy = op_destroy,
};

/* The model's options (npu devices prints this table). */
typedef struct pccx_params {
    double ddr_gbps, ddr_eff;
    uint32_t lat_gemv, lat_gemm, lat_sfu, lat_dma;
} pccx_params;

#define OLAT(k, f, d, h) {k, NULL, NPK_OPT_U32, offsetof(pccx_params, f), d, 0, 1000000, 0, 0, 0, "C", h, 0}
static const npk_opt opt_defs[] = {
    {"ddr_gbps", NULL, NPK_OPT_F64, offsetof(pccx_params, ddr_gbps), "19.2", 0, 0, 0, 1e9, 1, "G",
     "host DDR bandwidth in GB/s for weight streaming and MEMCPY (KV260 peak)", 0},
    {"ddr_eff", NULL, NPK_OPT_F64, offsetof(pccx_params, ddr_eff), "1.0", 0, 0, 0, 1, 1, "E",
     "achieved fraction of it (0.55-0.6 = the 10-12 GB/s measured)", 0},
    OLAT("gemv_lat", lat_gemv, "16", "GEMV pipeline latency in cycles"),
    OLAT("gemm_lat", lat_gemm, "64", "GEMM array fill/drain latency in cycles"),
    OLAT("sfu_lat", lat_sfu, "16", "SFU pipeline latency in cycles"),
    OLAT("dma_lat", lat_dma, "64", "MEMCPY setup latency in cycles"),
};

static int parse_opts(pccx *p, const char *opts) {
    pccx_params o;
    memset(&o, 0, sizeof o);
    int rc = npk_opt_defaults(opt_defs, sizeof opt_defs / sizeof opt_defs[0], &o);
    if (!rc) rc = npk_opt_parse_kv(opt_defs, sizeof opt_defs / sizeof opt_defs[0], &o, opts, "pccx");
    if (rc) return rc;
    p->ddr_gbps = o.ddr_gbps;
    p->ddr_eff = o.ddr_eff;
    p->lat_gemv = o.lat_gemv;
    p->lat_gemm = o.lat_gemm;
    p->lat_sfu = o.lat_sfu;
    p->lat_dma = o.lat_dma;
    return 0;
}

static npk_dev *create(npk_mem *mem, const char *opts) {
    pccx *p = calloc(1, sizeof *p);
    if (!p) {
        npk_err(NPK_ENOMEM, "out of memory");
        return NULL;
    }
    if (parse_opts(p, opts)) {
        free(p);
        return NULL;
    }
    p->bpc = p->ddr_gbps * 1e9 * p->ddr_eff / 400e6;
    p->l2 = calloc((size_t)L2W * 8, sizeof *p->l2);
    if (!p->l2 || npk_regfile_init(&p->rf, regs, sizeof regs / sizeof regs[0], 4096)) {
        free(p->l2);
        free(p);
        npk_err(NPK_ENOMEM, "out of memory creating the pccx model");
        return NULL;
    }
    p->dev.ops = &ops;
    p->dev.mem = mem;
    p->dev.regs = &p->rf;
    soft_reset(p);
    return &p->dev;
}

const npk_dev_class npk_pccx_class = {
    .name = "pccx",
    .summary = "pccx v002 LLM NPU: 64-bit GEMV/GEMM/MEMCPY/MEMSET/CVO queue, INT4 x BF16, 1.75 MiB L2",
    .mmio_base = 0x10040000,
    .mmio_size = 4096,
    .hz = 400000000,
    .n_irq = 1,
    .opts = opt_defs,
    .n_opts = sizeof opt_defs / sizeof opt_defs[0],
    .create = create,
};
