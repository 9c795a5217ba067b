// SPDX-License-Identifier: MIT
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
 * async MEMCPY/CVO release it after one issue cycle. Engines are pipelines:
 * an instruction occupies its engine for its throughput cycles and completes
 * its latency later, so an independent instruction may enter the engine
 * during that latency (docs/pccx.md section 5). */
#include "npukit/error.h"
#include "npukit/opt.h"
#include "npukit/pccx_model.h"
#include "npukit/pccx_regs.h"
#include "npukit/pccx_isa.h"
#include "npukit/range.h"
#include "npukit/sim.h"
#include "npukit/trace.h"
#include "npukit/numfmt.h"

#include <inttypes.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#define WC_NB 256 /* weight cache buckets */
typedef struct wc_ent {
    struct wc_ent *next;          /* hash chain */
    struct wc_ent *older, *newer; /* the LRU list (wc_lru .. wc_mru) */
    uint64_t addr, rec, gen;
    uint32_t N, K, G;
    int wscale;
    npk_q4_mat *mat;
} wc_ent;

/* A plain window of guest memory (npk_bus_window's answer): [lo, lo + last]. */
typedef struct host_win {
    uint64_t lo, last;
    uint8_t *data; /* NULL: none */
    uint32_t lat;
} host_win;

typedef struct pccx {
    npk_dev dev;
    npk_regfile rf;
    /* options */
    double ddr_gbps, ddr_eff;
    unsigned lat_gemv, lat_gemm, lat_sfu, lat_dma;
    unsigned lanes;   /* GEMV cores (option lanes) */
    int timing_only;  /* option timing_only: schedule, count and check, compute nothing */
    uint64_t max_wbytes, max_macs; /* implementation limits (options): fault LIMIT above them */
    uint64_t max_wcache;           /* host bytes the weight cache may hold (option) */
    uint64_t wfifo;   /* weight FIFO bytes the stream may run ahead of GEMV/GEMM (option wfifo_kib) */
    uint32_t l2w;     /* L2 words (option l2_kib) */
    double bpc; /* host bytes per core cycle */
    /* state */
    uint16_t *l2;                 /* [l2w * 8] BF16 */
    uint16_t cc[2][64][3];        /* constant cache banks */
    uint64_t queue[QDEPTH];
    uint64_t qidx[QDEPTH];        /* each queued instruction's index (count written before it) */
    unsigned qhead, qcount;
    uint64_t qindex;              /* index of the instruction at the queue head */
    uint64_t issued, retired, dropped;
    uint32_t instr_lo;
    int fault, hung, done;
    uint64_t err_index, err_instr, err_addr;
    uint32_t l2_lane;             /* lane of the L2 debug window (not a register) */
    /* timing */
    uint64_t fe_ready, eng_free[ENG_N], busy_until;
    /* the weight stream's prefetcher: idle since ws_idle (the end of the last
     * GEMV/GEMM or the last WS_ADDR write), expecting the record at ws_next;
     * ddr_cycles sums host MEMCPY transfer cycles (they hold the DDR),
     * ws_ddr_mark is its value at ws_idle; ws_fifo = stream bytes from
     * ws_next already on chip at ws_idle */
    uint64_t ws_idle, ws_next, ddr_cycles, ws_ddr_mark, ws_fifo;
    slot slots[NSLOT];
    unsigned next_slot;
    uint64_t slot_end; /* the latest completion of any slot ever filled (0 after a reset) */
    uint64_t ends[NSLOT]; /* slots[i].end (0: never filled), in one array for the hazard check's scan */
    unsigned filled;      /* bit i: slot i may still be in flight (its end after the device clock when last seen) */
    /* counters */
    uint64_t busy_cycles, per_op[5], ws_bytes, dma_bytes, macs, sfu_elems, eng_cycles[ENG_N];
    /* energy counters since creation (docs/energy.md; never reset): MACs,
     * weight-stream and host-DMA bytes, CVO elements, L2 words (128-bit)
     * read or written, register accesses */
    uint64_t e_macs, e_ws, e_dma, e_sfu, e_l2, e_mmio;
    uint32_t tech_nm;
    /* scratch */
    uint8_t *buf;
    size_t buf_cap;
    uint16_t *tmp;
    size_t tmp_cap;
    npk_q4_ws *qws; /* GEMV/GEMM: the exact kernel's workspace */
    host_win win[2]; /* host_span's last windows (the weight stream's and the host window's) */
    unsigned win_next;
    uint64_t win_gen; /* the memory's map generation they were found in */
    wc_ent *wc[WC_NB]; /* the weight cache (see wc_find) */
    wc_ent *wc_lru, *wc_mru;
    uint64_t wc_bytes, wc_evictions, wc_hits, wc_misses;
} pccx;

static pccx *P(npk_dev *d) { return (pccx *)d; }

/* Stored registers live in the register table (npukit/pccx_regs.def). */
#define REG(p, name) ((p)->rf.val[NPK_PCCX_##name / 4])
static uint64_t reg64(const pccx *p, uint32_t lo) {
    return p->rf.val[lo / 4] | (uint64_t)p->rf.val[lo / 4 + 1] << 32;
}
static void set_reg64(pccx *p, uint32_t lo, uint64_t v) {
    p->rf.val[lo / 4] = (uint32_t)v;
    p->rf.val[lo / 4 + 1] = (uint32_t)(v >> 32);
}
#define EMAX(p) ((uint16_t)REG(p, EMAX))
#define SCALAR(p) ((uint16_t)REG(p, SCALAR))

/* ---- helpers ----------------------------------------------------------------- */

static void update_irq(pccx *p) {
    uint32_t en = REG(p, IRQ_EN);
    int level = (NPK_FEX(en, NPK_PCCX_IRQ_EN_DONE) && p->done) || (NPK_FEX(en, NPK_PCCX_IRQ_EN_ERROR) && p->fault);
    if (level != p->dev.irq_level[0]) npk_dev_set_irq(&p->dev, 0, level); /* as e1: only a change calls out */
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

/* Earliest start allowed by in-flight async instructions (RAW: it reads what
 * one writes, or the scalar a running REDUCE_SUM writes; WAR: it writes what
 * one reads; WAW: both write the same words). An async instruction also needs
 * a free slot of the fence table: with all 16 in flight it waits for the
 * earliest to complete. The answer is the latest of t and the ends of the
 * slots it depends on (a slot ended by t adds nothing), so one pass over the
 * slots that may be in flight finds it in any order. */
static inline __attribute__((always_inline)) uint64_t hazard_start(pccx *p, const range *rd, int nrd, range wr,
                                                                  int rd_scalar, int async, uint64_t t) {
    if (t >= p->slot_end) return t; /* nothing in flight at t: no slot below can matter */
    uint64_t r = t;
    unsigned live = 0; /* slots in flight at t; t >= the device clock, so a slot ended by then is not */
    for (unsigned f = p->filled; f; f &= f - 1) {
        const unsigned i = (unsigned)__builtin_ctz(f);
        const uint64_t e = p->ends[i];
        if (e <= t) {
            if (e <= p->dev.cycles) p->filled &= ~(1u << i); /* ended for good */
            continue;
        }
        live++;
        if (e <= r) continue;
        const slot *s = &p->slots[i];
        int dep = overlaps(s->wr, wr) || (rd_scalar && s->wr_scalar) || overlaps(s->rd[0], wr) ||
                  overlaps(s->rd[1], wr);
        for (int j = 0; j < nrd; j++) dep |= overlaps(s->wr, rd[j]);
        if (dep) r = e;
    }
    if (async && live == NSLOT) { /* every slot busy: wait for the earliest */
        uint64_t first = UINT64_MAX;
        for (unsigned i = 0; i < NSLOT; i++) first = p->ends[i] < first ? p->ends[i] : first;
        if (first > r) r = first;
    }
    return r;
}

/* The cycle an instruction would start on engine eng: front end, engine and
 * hazards with in-flight async instructions. */
static uint64_t start_cycle(pccx *p, int eng, uint64_t t0, const range *rd, int nrd, range wr, int rd_scalar,
                            int async) {
    uint64_t t = t0 > p->eng_free[eng] ? t0 : p->eng_free[eng];
    return hazard_start(p, rd, nrd, wr, rd_scalar, async, t);
}

/* Schedule an instruction on an engine at its start cycle t (start_cycle's);
 * returns t. dur is its duration to completion, of which the last lat cycles
 * are pipeline latency: the engine accepts the next instruction after
 * dur - lat cycles. */
static uint64_t schedule_at(pccx *p, int eng, uint64_t t, uint64_t dur, uint64_t lat, int async, const range *rd,
                            int nrd, range wr, int wr_scalar) {
    uint64_t end = t + dur;
    p->eng_free[eng] = t + (dur > lat ? dur - lat : dur);
    if (end > p->busy_until) p->busy_until = end;
    p->eng_cycles[eng] += dur;
    if (async) {
        p->fe_ready = t + 1;
        slot *s = NULL; /* a free slot: hazard_start waited for one */
        for (unsigned i = 0; i < NSLOT && !s; i++) {
            slot *c = &p->slots[(p->next_slot + i) % NSLOT];
            if (!c->valid || c->end <= t) s = c;
        }
        if (!s) s = &p->slots[p->next_slot % NSLOT];
        p->next_slot = (unsigned)(s - p->slots) + 1;
        s->valid = 1;
        s->end = end;
        p->ends[s - p->slots] = end;
        p->filled |= 1u << (s - p->slots);
        if (end > p->slot_end) p->slot_end = end;
        s->rd[0] = nrd > 0 ? rd[0] : (range){0, 0};
        s->rd[1] = nrd > 1 ? rd[1] : (range){0, 0};
        s->wr = wr;
        s->wr_scalar = wr_scalar;
    } else {
        p->fe_ready = end;
    }
    return t;
}

/* schedule_at at the cycle the instruction can start. */
static uint64_t schedule(pccx *p, int eng, uint64_t t0, uint64_t dur, uint64_t lat, int async, const range *rd,
                         int nrd, range wr, int rd_scalar, int wr_scalar) {
    return schedule_at(p, eng, start_cycle(p, eng, t0, rd, nrd, wr, rd_scalar, async), dur, lat, async, rd, nrd, wr,
                       wr_scalar);
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

static int l2_ok(const pccx *p, uint64_t lo, uint64_t words) { return lo + words <= p->l2w; }

/* The host bytes of guest [addr, addr + len) when they lie in one plain
 * window of guest memory (npk_bus_window: no fault rule or watcher must see
 * the beats; one extent, one region), with its latency per beat; NULL: the
 * bus's copy path. The caller moves the bytes and counts the beats
 * (npk_bus_count), which is what the bus's burst of them would do. The last
 * two windows found are kept while the memory's map generation holds (the
 * weight records and the host window each lie in one). */
static uint8_t *host_span(pccx *p, uint64_t addr, uint64_t len, uint32_t *lat) {
    if (!len) return NULL;
    const uint64_t gen = npk_mem_map_gen(p->dev.mem);
    if (gen != p->win_gen) {
        p->win[0].data = p->win[1].data = NULL;
        p->win_gen = gen;
    }
    for (int i = 0; i < 2; i++) {
        const host_win *w = &p->win[i];
        const uint64_t off = addr - w->lo;
        if (w->data && off <= w->last && len - 1 <= w->last - off) {
            *lat = w->lat;
            return w->data + off;
        }
    }
    uint64_t b, s;
    uint8_t *d;
    if (!npk_bus_window(p->dev.mem, addr, &b, &s, &d, lat)) return NULL;
    p->win[p->win_next] = (host_win){b, s - 1, d, *lat};
    p->win_next ^= 1;
    if (len > s - (addr - b)) return NULL;
    return d + (addr - b);
}

static float bf(uint16_t b) { /* npk_bf16_to_f32, inlined: once per CVO element */
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- GEMV / GEMM ------------------------------------------------------------------ */

/* The weight cache: each record read by a GEMV/GEMM, prepared for the exact
 * kernel (npk_q4_mat: INT4 unpacked and transposed, scales split), keyed by
 * its address, size and shape and kept while guest memory's write generation
 * of its bytes (npk_mem_wgen) is unchanged. A hit still runs the record's bus
 * beats (responses, faults, statistics and latency are those of the read);
 * only the copy and the unpacking are skipped. The cache holds at most
 * max_wcache host bytes (device option): a record that does not fit evicts
 * the least recently used ones; one larger than max_wcache is prepared for
 * its instruction alone. */

static unsigned wc_hash(uint64_t addr) { return (unsigned)((addr >> 4) * 0x9E3779B97F4A7C15ull >> 56); }

static void wc_unlink(pccx *p, wc_ent *e) {
    if (e->older) e->older->newer = e->newer;
    else p->wc_lru = e->newer;
    if (e->newer) e->newer->older = e->older;
    else p->wc_mru = e->older;
    e->older = e->newer = NULL;
}

static void wc_link_mru(pccx *p, wc_ent *e) {
    e->older = p->wc_mru;
    e->newer = NULL;
    if (p->wc_mru) p->wc_mru->newer = e;
    else p->wc_lru = e;
    p->wc_mru = e;
}

/* The entry of a record, made the most recently used; NULL when absent. */
static wc_ent *wc_find(pccx *p, uint64_t addr, uint64_t rec, uint32_t N, uint32_t K, uint32_t G, int wscale) {
    for (wc_ent *e = p->wc[wc_hash(addr)]; e; e = e->next)
        if (e->addr == addr && e->rec == rec && e->N == N && e->K == K && e->G == G && e->wscale == wscale) {
            wc_unlink(p, e);
            wc_link_mru(p, e);
            return e;
        }
    return NULL;
}

static void wc_drop(pccx *p, wc_ent *e) {
    wc_ent **l = &p->wc[wc_hash(e->addr)];
    while (*l != e) l = &(*l)->next;
    *l = e->next;
    wc_unlink(p, e);
    p->wc_bytes -= npk_q4_mat_bytes(e->mat);
    npk_q4_mat_free(e->mat);
    free(e);
}

static void wc_clear(pccx *p) {
    for (unsigned i = 0; i < WC_NB; i++)
        while (p->wc[i]) wc_drop(p, p->wc[i]);
}

/* Keep mat for the record (takes it), evicting the least recently used
 * records until it fits; 0 if it was not kept (larger than max_wcache). */
static int wc_put(pccx *p, uint64_t addr, uint64_t rec, uint32_t N, uint32_t K, uint32_t G, int wscale,
                  npk_q4_mat *mat) {
    size_t bytes = npk_q4_mat_bytes(mat);
    if (bytes > p->max_wcache) return 0;
    wc_ent *e = calloc(1, sizeof *e);
    if (!e) return 0;
    while (p->wc_lru && p->wc_bytes + bytes > p->max_wcache) {
        wc_drop(p, p->wc_lru);
        p->wc_evictions++;
    }
    *e = (wc_ent){p->wc[wc_hash(addr)], NULL, NULL, addr, rec, npk_mem_wgen(p->dev.mem, addr, rec), N, K, G, wscale, mat};
    p->wc[wc_hash(addr)] = e;
    wc_link_mru(p, e);
    p->wc_bytes += bytes;
    return 1;
}

void npk_pccx_wcache_get(const npk_dev *d, npk_pccx_wcache *s) {
    memset(s, 0, sizeof *s);
    if (!d || d->cls != &npk_pccx_class) return;
    const pccx *p = (const pccx *)d;
    for (const wc_ent *e = p->wc_lru; e; e = e->newer) s->records++;
    s->bytes = p->wc_bytes;
    s->evictions = p->wc_evictions;
    s->hits = p->wc_hits;
    s->misses = p->wc_misses;
}

/* The serving process is stopping (npk_dev_stopping, issue 32 point 3): the
 * instruction is abandoned where it is, as a hung beat leaves it (STATUS.HUNG,
 * the instruction stays at the queue head, only reset recovers); its outputs
 * are not written. */
static int abandon(pccx *p) {
    p->hung = 1;
    return -1;
}

/* npk_q4_mat_new_poll's stop check: unpacking a 64 MiB record is the longest
 * span of one GEMV (0.15 s on a quiet host, over 1 s on a loaded one). */
static int unpack_stop(void *ctx) { return npk_dev_stopping(&((pccx *)ctx)->dev); }

/* The bus's reads of the weight record [ws_addr, ws_addr + rec) for the
 * instruction w: *r its bytes (not when nodata: a cache hit or timing only,
 * unless they lie in one window anyway), *lat the latency of its beats.
 * Returns 0, else what exec_mm returns (a fault, a hang, a stop). */
static int mm_read(pccx *p, uint64_t w, uint64_t ws_addr, uint64_t rec, int nodata, const uint8_t **r,
                   uint64_t *lat) {
    uint64_t got = 0, faddr = 0;
    npk_bus_resp resp = NPK_BUS_OK;
    uint32_t wlat;
    const uint8_t *hp = host_span(p, ws_addr, rec, &wlat);
    if (hp) { /* the bus's beats in one window: the same statistics and latency as its copy */
        npk_bus_count(p->dev.mem, NPK_ACC_READ, ws_addr, rec, div_up(rec, 16));
        *lat = div_up(rec, 16) * wlat;
        *r = hp;
        return 0;
    }
    if (nodata) { /* the same beats, responses and latency; no data */
        resp = npk_bus_copy_in(p->dev.mem, ws_addr, NULL, rec, 16, NULL, &faddr, lat);
        got = rec;
    }
    /* Read the record in 1 MiB pieces (the same 16-byte beats as one copy),
     * growing the buffer only as the bus delivers: a hostile shape (N = K =
     * 65535 is a 2 GiB record) must not make the host allocate gigabytes
     * before the first beat fails (issue 8, found by fuzz_pccx_queue). */
    uint8_t *rb = NULL;
    while (got < rec && resp == NPK_BUS_OK) {
        if (npk_dev_stopping(&p->dev)) return abandon(p);
        uint64_t piece = rec - got < (1u << 20) ? rec - got : (1u << 20), l = 0;
        if (!(rb = bytebuf(p, got + piece))) return raise_fault(p, NPK_PCCX_FAULT_BUS, w, ws_addr + got);
        resp = npk_bus_copy_in(p->dev.mem, ws_addr + got, rb + got, piece, 16, NULL, &faddr, &l);
        *lat += l;
        got += piece;
        *r = rb;
    }
    if (resp == NPK_BUS_HANG) {
        p->hung = 1;
        return -1;
    }
    if (resp != NPK_BUS_OK) return raise_fault(p, NPK_PCCX_FAULT_BUS, w, faddr);
    return 0;
}

static int exec_mm(pccx *p, uint64_t w, uint64_t t0) {
    npk_pccx_insn in;
    npk_pccx_decode(w, &in);
    int c = npk_pccx_check_insn(&in, p->lanes);
    if (c) return raise_fault(p, c, w, 0);
    const uint16_t *fm = p->cc[0][in.shape_ptr], *ws = p->cc[1][in.size_ptr];
    uint64_t M = (uint64_t)fm[0] * fm[1], K = fm[2], N = ws[0], KW = ws[1], G = ws[2] ? ws[2] : KW;
    if (!M || !K || !N || !KW) return raise_fault(p, NPK_PCCX_FAULT_SHAPE_ZERO, w, 0);
    if (K != KW || G > KW) return raise_fault(p, NPK_PCCX_FAULT_SHAPE_MISMATCH, w, 0);
    uint64_t sstride = div_up(K, 8), dstride = div_up(N, 8);
    if (!l2_ok(p, in.src, M * sstride)) return raise_fault(p, NPK_PCCX_FAULT_L2_RANGE, w, in.src);
    if (!l2_ok(p, in.dest, M * dstride)) return raise_fault(p, NPK_PCCX_FAULT_L2_RANGE, w, in.dest);
    int wscale = !!(in.flags & NPK_PCCX_W_SCALE);
    uint64_t wbytes = div_up(div_up(N * K, 2), 16) * 16;
    uint64_t rec = npk_pccx_wrec_size((unsigned)N, (unsigned)K, (unsigned)(ws[2]), wscale);
    const uint64_t ws_addr = reg64(p, NPK_PCCX_WS_ADDR_LO), ws_limit = reg64(p, NPK_PCCX_WS_LIMIT_LO);
    uint64_t ws_last;
    if (!npk_range_ok(ws_addr, rec, &ws_last) || (ws_limit && ws_last >= ws_limit))
        return raise_fault(p, NPK_PCCX_FAULT_WS_RANGE, w, ws_addr);
    /* implementation limits (docs/pccx.md section 3): host memory and time per instruction */
    if (rec > p->max_wbytes || M * N * K > p->max_macs) return raise_fault(p, NPK_PCCX_FAULT_LIMIT, w, ws_addr);
    const uint8_t *r = NULL;
    uint64_t lat = 0;
    wc_ent *hit = NULL;
    if (!p->timing_only) {
        hit = wc_find(p, ws_addr, rec, (uint32_t)N, (uint32_t)K, ws[2], wscale);
        if (hit && npk_mem_wgen(p->dev.mem, ws_addr, rec) != hit->gen) {
            wc_drop(p, hit); /* written since: read it again */
            hit = NULL;
        }
        if (hit) p->wc_hits++;
        else p->wc_misses++;
    }
    int rc0 = mm_read(p, w, ws_addr, rec, p->timing_only || hit, &r, &lat);
    if (rc0) return rc0;
    if (p->timing_only) goto timing;
    /* The exact accumulation (src/base/q4_gemv.c): the same value as adding
     * every product to the exact accumulator, rounded once. */
    npk_q4_mat *mat = hit ? hit->mat : NULL;
    int own = 0;
    if (!mat) {
        int rc = npk_q4_mat_new_poll(r, wscale ? r + wbytes : NULL, (uint32_t)N, (uint32_t)K, (uint32_t)G, unpack_stop,
                                     p, &mat);
        if (rc == 1) return abandon(p);
        if (rc) return raise_fault(p, NPK_PCCX_FAULT_BUS, w, 0);
        own = !wc_put(p, ws_addr, rec, (uint32_t)N, (uint32_t)K, ws[2], wscale, mat);
    }
    uint16_t *out = tmpbuf(p, M * N);
    if (!p->qws) p->qws = npk_q4_ws_new();
    int bad = !out || !p->qws;
    for (uint64_t m = 0; m < M && !bad; m++) {
        if (npk_dev_stopping(&p->dev)) { /* one row is at most max_wbytes * 2 MACs */
            if (own) npk_q4_mat_free(mat);
            return abandon(p);
        }
        uint64_t xs = in.src + m * sstride, yd = in.dest + m * dstride;
        bad = npk_q4_gemv(mat, &p->l2[xs * 8], (in.flags & NPK_PCCX_ACCM) ? &p->l2[yd * 8] : NULL, &out[m * N],
                          p->qws) != 0;
    }
    if (own) npk_q4_mat_free(mat);
    if (bad) return raise_fault(p, NPK_PCCX_FAULT_BUS, w, 0);
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
        REG(p, EMAX) = best;
    }
timing:
    set_reg64(p, NPK_PCCX_WS_ADDR_LO, ws_addr + rec);
    /* timing */
    int gemv = in.op == NPK_PCCX_OP_GEMV;
    unsigned lanes = in.lanes ? in.lanes : p->lanes;
    uint64_t macs = M * N * K;
    uint64_t streamed = gemv ? rec * M : rec;
    uint64_t beats = div_up(rec, 16);
    uint64_t compute = gemv ? div_up(macs, 32ull * lanes)
                            : div_up(N, 32) * div_up(K, 32) * (div_up(M, 2) + 32);
    range rd[1] = {{in.src, (uint32_t)(in.src + M * sstride)}};
    range wr = {in.dest, (uint32_t)(in.dest + M * dstride)};
    int eng = gemv ? ENG_GEMV : ENG_GEMM;
    /* Weight prefetch: while the engines wait on other work the stream keeps
     * filling the weight FIFO with the stream from ws_next on (the bytes it
     * held at ws_idle plus what it fetched since, except while a host MEMCPY
     * held the DDR), at most wfifo bytes, across record boundaries: the
     * first bytes of this record are already on chip when it is the record
     * the stream expected; what the FIFO holds beyond it stays for the next. */
    uint64_t ts = start_cycle(p, eng, t0, rd, 1, wr, 0, 0), pre = 0, fill = 0;
    if (ws_addr == p->ws_next) {
        uint64_t ddr = p->ddr_cycles - p->ws_ddr_mark, gap = ts > p->ws_idle ? ts - p->ws_idle : 0;
        gap = gap > ddr ? gap - ddr : 0;
        fill = p->ws_fifo + (uint64_t)((double)gap * p->bpc);
        if (fill > p->wfifo) fill = p->wfifo;
        pre = fill < rec ? fill : rec;
    }
    uint64_t mem = host_cycles(p, streamed - pre);
    uint64_t lat_mm = gemv ? p->lat_gemv : p->lat_gemm;
    uint64_t dur = (compute > mem ? compute : mem) + lat_mm + lat / (beats ? beats : 1);
    uint64_t t = schedule_at(p, eng, ts, dur, lat_mm, 0, rd, 1, wr, 0); /* nothing changed since ts was found */
    p->ws_idle = t + dur - lat_mm; /* the stream is free once the engine's occupancy ends */
    p->ws_next = ws_addr + rec;
    p->ws_fifo = fill - pre;
    p->ws_ddr_mark = p->ddr_cycles;
    p->macs += macs;
    p->ws_bytes += streamed;
    p->e_macs += macs, p->e_ws += streamed;
    p->e_l2 += div_up(M * K, 8) + div_up(M * N, 8); /* activations read, outputs written (8 BF16 per word) */
    if (p->dev.trace) {
        char a[200];
        snprintf(a, sizeof a, "\"M\":%" PRIu64 ",\"N\":%" PRIu64 ",\"K\":%" PRIu64 ",\"macs\":%" PRIu64
                 ",\"weight_bytes\":%" PRIu64 ",\"prefetched_bytes\":%" PRIu64 ",\"flags\":%u,\"lanes\":%u",
                 M, N, K, macs, streamed, pre, in.flags, lanes);
        trace(p, eng, gemv ? "GEMV" : "GEMM", t, dur, a);
        trace_bw(p, "weight stream bytes/cycle", t, dur, streamed);
    }
    return 0;
}

/* ---- MEMCPY / MEMSET --------------------------------------------------------------- */

/* L2 elements from / to little-endian bytes: one copy on a little-endian host. */
static void l2_from_le(uint16_t *d, const uint8_t *b, uint64_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(d, b, n * 2);
#else
    for (uint64_t i = 0; i < n; i++) d[i] = (uint16_t)(b[2 * i] | b[2 * i + 1] << 8);
#endif
}

static void l2_to_le(uint8_t *b, const uint16_t *s, uint64_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(b, s, n * 2);
#else
    for (uint64_t i = 0; i < n; i++) {
        b[2 * i] = (uint8_t)s[i];
        b[2 * i + 1] = (uint8_t)(s[i] >> 8);
    }
#endif
}

static int exec_memcpy(pccx *p, uint64_t w, uint64_t t0) {
    npk_pccx_insn in;
    npk_pccx_decode(w, &in);
    int c = npk_pccx_check_insn(&in, p->lanes);
    if (c) return raise_fault(p, c, w, 0);
    const uint16_t *sh = p->cc[0][in.shape_ptr];
    uint64_t n = (uint64_t)sh[0] * sh[1] * sh[2];
    if (!n) return raise_fault(p, NPK_PCCX_FAULT_SHAPE_ZERO, w, 0);
    uint64_t words = div_up(n, 8), bytes = words * 16;
    uint64_t lat = 0, dur, lat_pipe = 4;
    range rd = {0, 0}, wr = {0, 0};
    if (in.from_device || in.to_device) {
        uint32_t l2a = in.from_device ? in.dest : in.src;
        if (!l2_ok(p, l2a, words)) return raise_fault(p, NPK_PCCX_FAULT_L2_RANGE, w, l2a);
        uint64_t off = (uint64_t)in.aux * 16;
        uint64_t hwin_base = reg64(p, NPK_PCCX_HWIN_BASE_LO);
        uint64_t haddr = hwin_base + off;
        if (off + bytes > REG(p, HWIN_SIZE) || off > UINT64_MAX - hwin_base || !npk_range_ok(haddr, bytes, NULL))
            return raise_fault(p, NPK_PCCX_FAULT_HOST_RANGE, w, haddr);
        size_t done = 0;
        uint64_t faddr = 0;
        uint32_t wlat;
        uint8_t *hp = p->timing_only ? NULL : host_span(p, haddr, bytes, &wlat);
        uint8_t *b = p->timing_only || hp ? NULL : bytebuf(p, bytes);
        if (!b && !hp && !p->timing_only) return raise_fault(p, NPK_PCCX_FAULT_BUS, w, haddr);
        npk_bus_resp resp;
        if (hp) { /* one window: the bytes straight between L2 and host memory, the beats counted as the bus's */
            if (in.from_device) {
                l2_from_le(&p->l2[(uint64_t)l2a * 8], hp, words * 8);
                wr = (range){l2a, (uint32_t)(l2a + words)};
            } else {
                l2_to_le(hp, &p->l2[(uint64_t)l2a * 8], words * 8);
                rd = (range){l2a, (uint32_t)(l2a + words)};
            }
            npk_bus_count(p->dev.mem, in.from_device ? NPK_ACC_READ : NPK_ACC_WRITE, haddr, bytes, words);
            lat = words * wlat;
        } else if (in.from_device) { /* host -> L2: read all, then write L2 */
            resp = npk_bus_copy_in(p->dev.mem, haddr, b, bytes, 16, &done, &faddr, &lat);
            if (resp == NPK_BUS_HANG) {
                p->hung = 1;
                return -1;
            }
            if (resp != NPK_BUS_OK) return raise_fault(p, NPK_PCCX_FAULT_BUS, w, faddr);
            if (b) l2_from_le(&p->l2[(uint64_t)l2a * 8], b, words * 8);
            wr = (range){l2a, (uint32_t)(l2a + words)};
        } else { /* L2 -> host */
            if (b) l2_to_le(b, &p->l2[(uint64_t)l2a * 8], words * 8);
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
        p->e_dma += bytes, p->e_l2 += div_up(bytes, 16);
        p->ddr_cycles += host_cycles(p, bytes); /* the DDR moves these bytes: no weight prefetch meanwhile */
        lat_pipe = p->lat_dma;
    } else { /* L2 -> L2 */
        if (!l2_ok(p, in.src, words)) return raise_fault(p, NPK_PCCX_FAULT_L2_RANGE, w, in.src);
        if (!l2_ok(p, in.dest, words)) return raise_fault(p, NPK_PCCX_FAULT_L2_RANGE, w, in.dest);
        if (!p->timing_only) memmove(&p->l2[(uint64_t)in.dest * 8], &p->l2[(uint64_t)in.src * 8], words * 16);
        rd = (range){in.src, (uint32_t)(in.src + words)};
        wr = (range){in.dest, (uint32_t)(in.dest + words)};
        dur = words + 4;
    }
    range rds[1] = {rd};
    uint64_t t = schedule(p, ENG_DMA, t0, dur, lat_pipe, in.async, rds, 1, wr, 0, 0);
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
    int c = npk_pccx_check_insn(&in, p->lanes);
    if (c) return raise_fault(p, c, w, 0);
    p->cc[in.cache][in.index][0] = in.a;
    p->cc[in.cache][in.index][1] = in.b;
    p->cc[in.cache][in.index][2] = in.c;
    uint64_t t = schedule(p, ENG_DMA, t0, 1, 0, 0, NULL, 0, (range){0, 0}, 0, 0);
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
    int c = npk_pccx_check_insn(&in, p->lanes);
    if (c) return raise_fault(p, c, w, 0);
    uint64_t len = in.length, swords = div_up(len, 8);
    int reduce = in.func == NPK_PCCX_CVO_REDUCE_SUM;
    uint64_t dwords = reduce ? 1 : swords;
    if (!l2_ok(p, in.src, swords)) return raise_fault(p, NPK_PCCX_FAULT_L2_RANGE, w, in.src);
    if (!l2_ok(p, in.dest, dwords)) return raise_fault(p, NPK_PCCX_FAULT_L2_RANGE, w, in.dest);
    int sub = !!(in.flags & NPK_PCCX_CVO_SUB_EMAX), accm = !!(in.flags & NPK_PCCX_CVO_ACCM);
    const uint16_t *x = &p->l2[(uint64_t)in.src * 8];
    uint16_t *y = &p->l2[(uint64_t)in.dest * 8];
    if (p->timing_only) {
        /* no arithmetic: L2 and the scalar register keep their values */
    } else if (reduce) {
        uint16_t emax = EMAX(p);
        y[0] = npk_bf16_sum(x, len, accm ? &y[0] : NULL, sub ? &emax : NULL); /* exact, one rounding */
        REG(p, SCALAR) = y[0];
    } else {
        /* in place, or into the temporary when source and destination overlap otherwise */
        const int apart = in.src == in.dest || in.src >= in.dest + swords || in.dest >= in.src + swords;
        uint16_t *out = apart ? y : tmpbuf(p, len);
        if (!out) return raise_fault(p, NPK_PCCX_FAULT_BUS, w, 0);
        const int recip = !!(in.flags & NPK_PCCX_CVO_RECIP_SCALE);
        const uint16_t em = EMAX(p);
        if (in.func == NPK_PCCX_CVO_EXP && !accm) /* most through a binary32 exponential, exact (src/base/bf16_exp.c) */
            npk_bf16_exp_n(x, len, sub ? &em : NULL, out);
        else if (in.func == NPK_PCCX_CVO_SCALE && !sub && !accm && !recip) /* the binary32 product, exact */
            npk_bf16_scale_n(out, x, len, SCALAR(p));
        else {
            const double e = bf(em), s = bf(SCALAR(p));
            for (uint64_t i = 0; i < len; i++) {
                double v = bf(x[i]);
                if (sub) v -= e;
                double r = cvo_f(in.func, v, s, recip);
                if (accm) r += bf(y[i]);
                out[i] = npk_bf16_from_f64(r);
            }
        }
        if (out != y) memcpy(y, out, len * sizeof *out);
    }
    uint64_t dur = len + p->lat_sfu;
    range rd[1] = {{in.src, (uint32_t)(in.src + swords)}};
    range wr = {in.dest, (uint32_t)(in.dest + dwords)};
    int rd_scalar = in.func == NPK_PCCX_CVO_SCALE;
    uint64_t t = schedule(p, ENG_SFU, t0, dur, p->lat_sfu, in.async, rd, 1, wr, rd_scalar, reduce);
    p->sfu_elems += len;
    p->e_sfu += len, p->e_l2 += 2 * div_up(len, 8);
    if (p->dev.trace) {
        char a[160];
        snprintf(a, sizeof a, "\"func\":%u,\"length\":%" PRIu64 ",\"flags\":%u,\"async\":%u", in.func, len, in.flags, in.async);
        trace(p, ENG_SFU, npk_pccx_cvo_name(in.func), t, dur, a);
    }
    return 0;
}

/* ---- the queue ---------------------------------------------------------------------- */

/* Start every queued instruction whose start cycle is <= limit. */
static __attribute__((noinline)) void pump_run(pccx *p, uint64_t limit) {
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

/* pump, when an instruction can start by limit (issue's call with another
 * still waiting, the common case, costs no more than this test). */
static inline void pump(pccx *p, uint64_t limit) {
    if (p->qcount && !p->fault && !p->hung && (p->fe_ready > p->dev.cycles ? p->fe_ready : p->dev.cycles) <= limit)
        pump_run(p, limit);
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
    memset(p->cc, 0, sizeof p->cc);
    p->qhead = p->qcount = 0;
    p->qindex = p->issued = p->retired = p->dropped = 0;
    p->instr_lo = 0;
    p->fault = p->hung = p->done = 0;
    p->err_index = p->err_instr = p->err_addr = 0;
    p->fe_ready = p->busy_until = p->dev.cycles;
    for (int i = 0; i < ENG_N; i++) p->eng_free[i] = p->dev.cycles;
    memset(p->slots, 0, sizeof p->slots);
    memset(p->ends, 0, sizeof p->ends);
    p->filled = 0;
    p->slot_end = 0;
    p->busy_cycles = p->ws_bytes = p->dma_bytes = p->macs = p->sfu_elems = 0;
    memset(p->per_op, 0, sizeof p->per_op);
    memset(p->eng_cycles, 0, sizeof p->eng_cycles);
    /* the hooks recompute the rest: IRQ_EN the line, WS_ADDR the weight-stream
     * pointer (ws_next, ws_idle, ws_ddr_mark), L2_ADDR the window lane */
    npk_regfile_reset_dev(&p->rf, &p->dev);
}

/* ---- registers ------------------------------------------------------------------------- */

static uint32_t rd_status(npk_dev *d, const npk_reg *r, uint32_t s) {
    (void)r;
    (void)s;
    pccx *p = P(d);
    return (busy(p) ? NPK_PCCX_STATUS_BUSY : 0) | (p->done ? NPK_PCCX_STATUS_DONE : 0) |
           (p->fault ? NPK_PCCX_STATUS_ERROR : 0) | (p->hung ? NPK_PCCX_STATUS_HUNG : 0);
}

/* STATUS: DONE and ERROR are write-1-to-clear views of model state. */
static uint32_t wr_status(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v, uint32_t next) {
    (void)r;
    (void)old;
    (void)next;
    pccx *p = P(d);
    if (v & NPK_PCCX_STATUS_DONE) p->done = 0;
    if ((v & NPK_PCCX_STATUS_ERROR) && p->fault) {
        p->fault = 0;
        p->err_index = p->err_instr = p->err_addr = 0;
        if (p->fe_ready < p->dev.cycles) p->fe_ready = p->dev.cycles;
        pump(p, p->dev.cycles);
    }
    update_irq(p);
    return 0;
}

/* CTRL: commands, never stored. */
static uint32_t wr_ctrl(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v, uint32_t next) {
    (void)r;
    (void)old;
    (void)next;
    pccx *p = P(d);
    if (v & NPK_PCCX_CTRL_RESET) {
        soft_reset(p);
        return 0;
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
    return 0;
}

/* INSTR_LO latches the low word; INSTR_HI issues {HI, LO}. Both read 0. */
static uint32_t wr_instr_lo(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v, uint32_t next) {
    (void)r;
    (void)old;
    (void)next;
    P(d)->instr_lo = v;
    return 0;
}

static uint32_t wr_instr_hi(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v, uint32_t next) {
    (void)r;
    (void)old;
    (void)next;
    pccx *p = P(d);
    issue(p, (uint64_t)v << 32 | p->instr_lo);
    return 0;
}

/* WS_ADDR: the stream restarts at the new address; prefetch from now (the
 * FIFO's earlier contents are discarded). */
static void wr_ws_addr(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v) {
    (void)r;
    (void)old;
    (void)v;
    pccx *p = P(d);
    p->ws_next = reg64(p, NPK_PCCX_WS_ADDR_LO);
    p->ws_idle = d->cycles > p->busy_until ? d->cycles : p->busy_until;
    p->ws_ddr_mark = p->ddr_cycles;
    p->ws_fifo = 0;
}

static void wr_irq_en(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v) {
    (void)r;
    (void)old;
    (void)v;
    update_irq(P(d));
}

/* The L2 debug window: L2_ADDR selects a word (lane 0); each bus access to
 * L2_DATA moves 32 bits of it and advances lane, then address. */
static void l2_advance(npk_dev *d, const npk_reg *r, uint32_t v) {
    (void)r;
    (void)v;
    pccx *p = P(d);
    if (++p->l2_lane == 4) {
        p->l2_lane = 0;
        REG(p, L2_ADDR)++;
    }
}

static void wr_l2_addr(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v) {
    (void)r;
    (void)old;
    (void)v;
    P(d)->l2_lane = 0;
}

static uint32_t rd_l2_data(npk_dev *d, const npk_reg *r, uint32_t s) {
    (void)r;
    (void)s;
    const pccx *p = P(d);
    uint64_t a = REG(p, L2_ADDR);
    if (a >= p->l2w) return 0;
    return p->l2[a * 8 + 2 * p->l2_lane] | (uint32_t)p->l2[a * 8 + 2 * p->l2_lane + 1] << 16;
}

static uint32_t wr_l2_data(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t v, uint32_t next) {
    (void)old;
    (void)next;
    pccx *p = P(d);
    uint64_t a = REG(p, L2_ADDR);
    if (a < p->l2w) {
        p->l2[a * 8 + 2 * p->l2_lane] = (uint16_t)v;
        p->l2[a * 8 + 2 * p->l2_lane + 1] = (uint16_t)(v >> 16);
    }
    l2_advance(d, r, v);
    return 0;
}

static uint32_t rd_idle_eta(npk_dev *d, const npk_reg *r, uint32_t s) {
    (void)r;
    (void)s;
    const pccx *p = P(d);
    uint64_t now = d->cycles;
    if (p->hung || p->fault) return 0xffffffffu;
    uint64_t t = p->busy_until;
    if (p->qcount && p->fe_ready > t) t = p->fe_ready;
    if (p->qcount && t <= now) return 1;
    uint64_t eta = t > now ? t - now : 0;
    return eta > 0xfffffffeu ? 0xfffffffeu : (uint32_t)eta;
}

/* Read-only views of model state (fault latch, queue, 64-bit counters). */
#define RD(fn, expr)                                                   \
    static uint32_t fn(npk_dev *d, const npk_reg *r, uint32_t s) {     \
        (void)r;                                                       \
        (void)s;                                                       \
        const pccx *p = P(d);                                          \
        return (uint32_t)(expr);                                       \
    }
RD(rd_err_code, p->fault)
RD(rd_err_index, p->err_index)
RD(rd_err_instr_lo, p->err_instr)
RD(rd_err_instr_hi, p->err_instr >> 32)
RD(rd_err_addr_lo, p->err_addr)
RD(rd_err_addr_hi, p->err_addr >> 32)
RD(rd_queue_count, p->qcount)
RD(rd_issued, p->issued)
RD(rd_retired, p->retired)
RD(rd_cycles_lo, p->busy_cycles)
RD(rd_cycles_hi, p->busy_cycles >> 32)
RD(rd_cnt_gemv, p->per_op[0])
RD(rd_cnt_gemm, p->per_op[1])
RD(rd_cnt_memcpy, p->per_op[2])
RD(rd_cnt_memset, p->per_op[3])
RD(rd_cnt_cvo, p->per_op[4])
RD(rd_ws_bytes_lo, p->ws_bytes)
RD(rd_ws_bytes_hi, p->ws_bytes >> 32)
RD(rd_dma_bytes_lo, p->dma_bytes)
RD(rd_dma_bytes_hi, p->dma_bytes >> 32)
RD(rd_macs_lo, p->macs)
RD(rd_macs_hi, p->macs >> 32)
RD(rd_sfu_elems, p->sfu_elems)
RD(rd_gemv_cycles, p->eng_cycles[ENG_GEMV])
RD(rd_gemm_cycles, p->eng_cycles[ENG_GEMM])
RD(rd_sfu_cycles, p->eng_cycles[ENG_SFU])
RD(rd_dma_cycles, p->eng_cycles[ENG_DMA])
RD(rd_dropped, p->dropped)
RD(rd_l2_words, p->l2w)
RD(rd_lanes, p->lanes)
#undef RD

/* The register map, generated from npukit/pccx_regs.def (index == offset / 4). */
#define NPK_REGTABLE_DEF "npukit/pccx_regs.def"
#include "sim/regtable.h"

/* ---- device ops ------------------------------------------------------------------------- */

static uint32_t op_read32(npk_dev *d, uint32_t off) {
    P(d)->e_mmio++;
    return npk_regfile_read(&P(d)->rf, d, off);
}
static void op_write32(npk_dev *d, uint32_t off, uint32_t v) {
    P(d)->e_mmio++;
    npk_regfile_write(&P(d)->rf, d, off, v);
}

/* The pccx energy model (docs/energy.md "pccx"): an INT4 x BF16 MAC is a
 * BF16 multiply (the INT4 weight scaled into BF16) and an FP32 add; a CVO
 * element 4 FP32 multiplies and 4 FP32 adds (a range-reduced polynomial or
 * Newton step); L2 as 64 KiB banks of 128-bit words; the weight FIFO one
 * macro written and read once per streamed byte (16-byte words); weight
 * stream and host DMA bytes cross DRAM and the bus. Area: 32 x lanes MAC
 * units, 4 FP32 multiply-add pairs in the SFU, the L2, the FIFO, the
 * 16-entry instruction queue and the register window. */
static void pccx_geom(const pccx *p, npk_sram *l2, npk_sram *ff) {
    uint64_t bytes = (uint64_t)p->l2w * 16u, bank = 64u * 1024u;
    *l2 = (npk_sram){.bytes_per_macro = bytes < bank ? bytes : bank, .width_bits = 128, .ports = 1,
                     .macros = (uint32_t)((bytes + bank - 1) / bank)};
    *ff = (npk_sram){.bytes_per_macro = p->wfifo ? p->wfifo : 1024, .width_bits = 128, .ports = 2, .macros = 1};
}

static void op_energy(npk_dev *d, npk_energy *e, npk_area *a, uint32_t *tech_nm) {
    pccx *p = P(d);
    const uint32_t nm = p->tech_nm;
    npk_sram l2, ff;
    pccx_geom(p, &l2, &ff);
    double mac = npk_op_pj(NPK_EOP_MUL_BF16, nm) + npk_op_pj(NPK_EOP_ADD_FP32, nm);
    double cvo = 4.0 * (npk_op_pj(NPK_EOP_MUL_FP32, nm) + npk_op_pj(NPK_EOP_ADD_FP32, nm));
    *e = (npk_energy){0};
    e->compute_pj = (double)p->e_macs * mac + (double)p->e_sfu * cvo;
    e->sram_pj = (double)p->e_l2 * npk_sram_access_pj(&l2, nm) +
                 2.0 * (double)((p->e_ws + 15) / 16) * npk_sram_access_pj(&ff, nm);
    e->dram_pj = (double)(p->e_ws + p->e_dma) * npk_dram_pj_per_byte();
    e->dma_pj = (double)(p->e_ws + p->e_dma) * npk_dma_pj_per_byte(nm);
    e->mmio_pj = (double)p->e_mmio * npk_mmio_pj(nm);
    double mac_um2 = npk_op_area_um2(NPK_EOP_MUL_BF16, nm) + npk_op_area_um2(NPK_EOP_ADD_FP32, nm);
    a->array_mm2 = (32.0 * p->lanes * mac_um2 +
                    4.0 * (npk_op_area_um2(NPK_EOP_MUL_FP32, nm) + npk_op_area_um2(NPK_EOP_ADD_FP32, nm))) / 1e6;
    a->sram_mm2 = npk_sram_area_mm2(&l2, nm) + npk_sram_area_mm2(&ff, nm);
    a->fixed_mm2 = (16.0 * 64.0 + 0x100 * 8.0) * npk_reg_area_um2_per_bit(nm) / 1e6;
    *tech_nm = nm;
}

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

/* Changes happen when a queued instruction starts (fe_ready) and when the
 * work in flight ends (busy_until). */
static uint64_t op_quiet(npk_dev *d) {
    pccx *p = P(d);
    uint64_t t = d->cycles, n = UINT64_MAX;
    if (p->hung) return UINT64_MAX; /* nothing answers: time changes nothing */
    if (p->qcount && !p->fault) n = p->fe_ready > t ? p->fe_ready - t : 1;
    if (p->busy_until > t && p->busy_until - t < n) n = p->busy_until - t;
    return n == UINT64_MAX ? 1 : n;
}

static void op_reset(npk_dev *d) {
    pccx *p = P(d);
    memset(p->l2, 0, (size_t)p->l2w * 16);
    soft_reset(p);
}

static void op_destroy(npk_dev *d) {
    pccx *p = P(d);
    npk_regfile_fini(&p->rf);
    free(p->l2);
    free(p->buf);
    free(p->tmp);
    wc_clear(p);
    npk_q4_ws_free(p->qws);
    free(p);
}

static const npk_dev_ops ops = {
    .read32 = op_read32,
    .write32 = op_write32,
    .energy = op_energy,
    .write64 = op_write64,
    .step = op_step,
    .idle = op_idle,
    .quiet = op_quiet,
    .reset = op_reset,
    .destroy = op_destroy,
};

/* The model's options (npu devices prints this table). */
typedef struct pccx_params {
    double ddr_gbps, ddr_eff;
    uint32_t lat_gemv, lat_gemm, lat_sfu, lat_dma;
    uint32_t clock_mhz;
    uint32_t lanes, l2_kib, wfifo_kib, tech_nm;
    int timing_only;
    uint64_t max_wbytes, max_macs, max_wcache;
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
    NPK_OPT_CLOCK_MHZ(pccx_params, clock_mhz, "400"),
    {"tech_nm", NULL, NPK_OPT_U32, offsetof(pccx_params, tech_nm), "40", 7, 45, 0, 0, 0, "45|40|28|16|7",
     "technology node of the energy and area model (docs/energy.md); never changes cycles", 0},
    {"lanes", NULL, NPK_OPT_U32, offsetof(pccx_params, lanes), "4", 1, 31, 0, 0, 0, "N",
     "GEMV cores of 32 MAC/cycle; an instruction's 5-bit parallel_lane field uses 1..N\n"
     "of them, or all N when it is 0", 0},
    {"l2_kib", NULL, NPK_OPT_U32, offsetof(pccx_params, l2_kib), "1792", 16, 2048, 0, 0, 0, "KIB",
     "L2 size in KiB (1792 = the KV260's 114,688 words; 2048 = all a 17-bit word address reaches)", 0},
    {"wfifo_kib", NULL, NPK_OPT_U32, offsetof(pccx_params, wfifo_kib), "64", 0, 65536, 0, 0, 0, "KIB",
     "weight FIFO in KiB the stream fills ahead of GEMV/GEMM while other engines work (0 = no prefetch)", 0},
    {"timing_only", NULL, NPK_OPT_BOOL, offsetof(pccx_params, timing_only), "0", 0, 0, 0, 0, 0, "0|1",
     "1: schedule, check and count every instruction exactly, but compute nothing\n"
     "(no weights read, L2 unchanged by GEMV/GEMM/CVO/MEMCPY): the cycles of a functional run", 0},
    {"max_wbytes", NULL, NPK_OPT_U64, offsetof(pccx_params, max_wbytes), "67108864", 1, UINT64_MAX, 0, 0, 0, "N",
     "implementation limit: weight record bytes of one GEMV/GEMM (above: fault LIMIT, not run)", 0},
    {"max_macs", NULL, NPK_OPT_U64, offsetof(pccx_params, max_macs), "4294967296", 1, UINT64_MAX, 0, 0, 0, "N",
     "implementation limit: MACs (rows x N x K) of one GEMV/GEMM (above: fault LIMIT, not run)", 0},
    {"max_wcache", NULL, NPK_OPT_U64, offsetof(pccx_params, max_wcache), "536870912", 0, UINT64_MAX, 0, 0, 0, "N",
     "implementation limit: host bytes of prepared weight records kept across instructions\n"
     "(least recently used evicted beyond it; 0 = none kept); never changes results or cycles", 0},
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
    p->dev.hz = (uint64_t)o.clock_mhz * 1000000u;
    p->lanes = o.lanes;
    p->l2w = o.l2_kib * 64u;
    p->timing_only = o.timing_only;
    p->max_wbytes = o.max_wbytes;
    p->max_macs = o.max_macs;
    p->max_wcache = o.max_wcache;
    p->wfifo = (uint64_t)o.wfifo_kib * 1024u;
    p->tech_nm = o.tech_nm;
    return npk_tech_check(o.tech_nm);
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
    p->bpc = p->ddr_gbps * 1e9 * p->ddr_eff / (double)p->dev.hz; /* DDR bytes per device cycle */
    p->l2 = calloc((size_t)p->l2w * 8, sizeof *p->l2);
    if (!p->l2 || npk_regfile_init(&p->rf, regs, sizeof regs / sizeof regs[0], NPK_PCCX_MMIO_SIZE)) {
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
    .mmio_size = NPK_PCCX_MMIO_SIZE,
    .hz = 400000000,
    .n_irq = 1,
    .opts = opt_defs,
    .n_opts = sizeof opt_defs / sizeof opt_defs[0],
    .create = create,
    .pci_device = 0x4e04,
};
