// SPDX-License-Identifier: MIT
/* libFuzzer target: the e1 descriptor engine with staged rings.
 *
 * Input layout:
 *   GEMM_CFG, GEMM_BASE, GEMM_STRIDE (3 x u32, masked by the registers),
 *   CMD_PARAM ternary bit, DESC_BASE choice, first slot (tail), pending
 *   count (1..7), an optional injected fault (bus error / hang on the Nth
 *   read or write beat), then per descriptor 4 words: w0 (opcode, stream,
 *   scratch offset, length, writeback, valid_owner -- mostly with valid_owner
 *   set), w1 (stream source: inside the arena or anywhere), w2 (OP_B /
 *   writeback destination), w3 (ACC); the rest: arena contents.
 *
 * Invariants (fuzz_util.h for the guard check):
 *   - DMA: only the pending ring slots' words, each stream descriptor's
 *     [w1, w1 + len) and each writeback descriptor's destination words are
 *     touched (addresses are 32-bit and wrap, as on the chip);
 *   - the engine settles within a bound (the 128-cycle timeout guarantees
 *     it), then CTRL_STATUS is done (2) or done|error (6);
 *   - done: DESC_TAIL == DESC_HEAD and DESC_STATUS code DONE -- every
 *     descriptor retired;
 *   - error: a documented DESC_STATUS code; DESC_TAIL points at a pending
 *     slot (the faulting entry; the ones before it retired); a bus-error code
 *     only when a fault was injected or the address is outside the arena;
 *     a timeout only when a hang was injected or, as e1-rtl-notes.md
 *     documents, a ternary DOT16 with an invalid lane retired before the
 *     stalled entry;
 *   - CTRL clear returns CTRL_STATUS to 0, reset every register to its reset
 *     value.
 */
#include "fuzz_util.h"
#include "npukit/e1.h"

#define ARENA 0x10000ull
#define ARENA_SIZE 0x10000ull

static const char DEV[] = "e1";

static uint32_t rd(npk_dev *d, uint32_t off) { return d->ops->read32(d, off); }
static void wr(npk_dev *d, uint32_t off, uint32_t v) { d->ops->write32(d, off, v); }

static uint32_t addr32(fz_in *in) {
    uint16_t v = fz_u16(in);
    if ((v & 0xc000) == 0xc000) return fz_u32(in);
    return (uint32_t)(ARENA + (v & 0x3ffc)) + ((v & 0x2000) ? (v >> 14) : 0u);
}

/* Name the 32-bit-wrapping words [a, a + len). */
static void name_words(fz_guard *g, uint32_t a, uint32_t len, const char *what) {
    for (uint32_t o = 0; o < len; o += 4) fz_name(g, (uint32_t)(a + o), 4, what);
}

static int in_arena(uint32_t a, uint32_t len) {
    for (uint32_t o = 0; o < len; o += 4) {
        uint64_t x = (uint32_t)(a + o); /* the chip's 32-bit address, compared in 64 bits */
        if (x < ARENA || x + 4 > ARENA + ARENA_SIZE) return 0;
    }
    return 1;
}

static int documented(uint32_t code) {
    switch (code) {
    case E1_DS_BASE_ALIGN:
    case E1_DS_CFG:
    case E1_DS_TIMEOUT:
    case E1_DS_FETCH_ERR:
    case E1_DS_STREAM_CFG:
    case E1_DS_STREAM_ERR:
    case E1_DS_NO_OWNER:
    case E1_DS_WB_CFG:
    case E1_DS_WB_ERR: return 1;
    default: return 0;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_in in = {data, size, 0};
    npk_sim *s = npk_sim_new("e1", NULL);
    fz_cost_begin();
    if (!s) abort();
    npk_mem *m = npk_sim_mem(s);
    npk_dev *d = npk_sim_dev(s);
    npk_mem_map(m, ARENA, ARENA_SIZE, 0, "arena");
    fz_guard g;
    fz_guard_init(&g, DEV);

    wr(d, E1_REG_GEMM_CFG, fz_u32(&in));
    wr(d, E1_REG_GEMM_BASE, fz_u32(&in));
    wr(d, E1_REG_GEMM_STRIDE, fz_u32(&in));
    uint8_t h = fz_u8(&in);
    uint32_t base = (h & 0x80) ? addr32(&in) : (uint32_t)ARENA;
    unsigned tail = h & 7, pending = 1 + (h >> 3) % 7;
    unsigned head = (tail + pending) & 7;
    int hang = 0, faulted = fz_fault(&in, m, &hang);
    uint32_t cfg = rd(d, E1_REG_GEMM_CFG), gb = rd(d, E1_REG_GEMM_BASE);
    uint32_t gm = e1_gemm_m(cfg), gn = e1_gemm_n(cfg), vlen = e1_vrelu_len(cfg);
    int outside = (base & 3) != 0;
    int ternary = (h & 0x40) != 0;
    unsigned dot16_at = 8; /* index of the first ternary DOT16 (e1-rtl-notes: an invalid one stalls the ring) */
    for (unsigned i = 0; i < pending; i++) {
        unsigned slot = (tail + i) & 7;
        uint32_t w[4];
        uint8_t sel = fz_u8(&in);
        w[0] = fz_u32(&in);
        if (!(sel & 1)) w[0] |= E1_DESC_W0_VALID_OWNER;
        if (sel & 2) /* a well-formed stream: aligned offset and length that fit */
            w[0] = (w[0] & ~0x3f3f0000u) | E1_DESC_W0_STREAM | ((sel >> 2) & 7) * 4u << 16 |
                   (4u + 4u * ((sel >> 5) % (16 - ((sel >> 2) & 7)))) << 24;
        w[1] = addr32(&in);
        w[2] = addr32(&in);
        w[3] = fz_u32(&in);
        if (e1_desc_writeback(w[0])) { /* a writeback into the ring would rewrite later descriptors: the
                                          named ranges could not follow that, so the harness avoids it */
            uint32_t rel = w[2] - base;
            if (rel < 128 || rel > 0xffffffffu - 64) w[2] = (uint32_t)(ARENA + 0x8000);
        }
        if (ternary && e1_desc_opcode(w[0]) == E1_OP_DOT16_S2 && dot16_at == 8) dot16_at = i;
        uint32_t a = base + (uint32_t)slot * 16;
        if (getenv("NPK_FUZZ_VERBOSE"))
            fprintf(stderr, "e1_ring: slot %u at 0x%08x: %08x %08x %08x %08x\n", slot, a, w[0], w[1], w[2], w[3]);
        for (int k = 0; k < 4; k++) {
            uint32_t x = a + 4u * (uint32_t)k;
            uint8_t b[4] = {(uint8_t)w[k], (uint8_t)(w[k] >> 8), (uint8_t)(w[k] >> 16), (uint8_t)(w[k] >> 24)};
            if (in_arena(x, 4)) npk_mem_poke(m, x, b, 4);
        }
        name_words(&g, a, 16, "ring slot");
        outside |= !in_arena(a, 16);
        if (e1_desc_stream(w[0])) {
            name_words(&g, w[1], e1_desc_len(w[0]), "stream source");
            outside |= !in_arena(w[1], e1_desc_len(w[0]));
        }
        if (e1_desc_writeback(w[0])) {
            uint32_t op = e1_desc_opcode(w[0]);
            uint32_t wlen = (op == E1_OP_GEMM_S8 || op == E1_OP_GEMM_S4) ? (gm * gn * 4) & 63 : vlen;
            name_words(&g, w[2], wlen, "writeback destination");
            outside |= !in_arena(w[2], wlen);
        }
    }
    (void)gb;
    size_t left = fz_left(&in);
    if (left > ARENA_SIZE / 2) left = ARENA_SIZE / 2;
    if (left) npk_mem_poke(m, ARENA + ARENA_SIZE / 2, data + in.pos, left);

    npk_mem_set_watch(m, fz_watch, &g);
    wr(d, E1_REG_DESC_BASE, base);
    wr(d, E1_REG_DESC_TAIL, tail);
    wr(d, E1_REG_DESC_HEAD, head);
    wr(d, E1_REG_CMD_PARAM, E1_CMD_DESC | ((h & 0x40) ? E1_CMD_TERNARY : 0));
    wr(d, E1_REG_CTRL_STATUS, E1_CTRL_START);
    npk_sim_run_until_idle(s, 200000);
    FZ_ASSERT(DEV, d->ops->idle(d));
    uint32_t st = rd(d, E1_REG_CTRL_STATUS), ds = rd(d, E1_REG_DESC_STATUS), t = rd(d, E1_REG_DESC_TAIL);
    FZ_ASSERT(DEV, st == E1_ST_DONE || st == (E1_ST_DONE | E1_ST_ERROR));
    FZ_ASSERT(DEV, !e1_ds_busy(ds));
    FZ_ASSERT(DEV, rd(d, E1_REG_DESC_HEAD) == head);
    unsigned done = (t - tail) & 7;
    if (getenv("NPK_FUZZ_VERBOSE"))
        fprintf(stderr, "e1_ring: %u pending from slot %u, %u retired, CTRL_STATUS %u, DESC_STATUS 0x%x, %llu beats\n",
                pending, tail, done, st, ds, (unsigned long long)g.beats);
    FZ_ASSERT(DEV, done <= pending);
    if (st == E1_ST_DONE) {
        FZ_ASSERT(DEV, t == head && e1_ds_code(ds) == E1_DS_DONE);
        FZ_ASSERT(DEV, e1_ds_pending(ds) == 0);
    } else {
        uint32_t code = e1_ds_code(ds);
        FZ_ASSERT(DEV, documented(code));
        FZ_ASSERT(DEV, e1_ds_pending(ds) == pending - done);
        if (code == E1_DS_BASE_ALIGN) FZ_ASSERT(DEV, (base & 3) && done == 0);
        else FZ_ASSERT(DEV, done < pending); /* DESC_TAIL at the faulting entry */
        if (code == E1_DS_FETCH_ERR || code == E1_DS_STREAM_ERR || code == E1_DS_WB_ERR)
            FZ_ASSERT(DEV, (faulted && !hang) || outside);
        /* a timeout needs a hung beat, or (documented RTL behaviour) a
         * ternary-invalid DOT16 before the entry whose fetch then stalls */
        if (code == E1_DS_TIMEOUT) FZ_ASSERT(DEV, hang || dot16_at < done);
        /* the error interrupt is the level of done */
        FZ_ASSERT(DEV, npk_sim_irq(s, 0) == 1);
    }
    wr(d, E1_REG_CTRL_STATUS, E1_CTRL_CLEAR);
    FZ_ASSERT(DEV, rd(d, E1_REG_CTRL_STATUS) == 0);
    FZ_ASSERT(DEV, rd(d, E1_REG_DESC_STATUS) == NPK_FVAL(E1_DESC_STATUS_PENDING, pending - done));
    return fz_finish(s);
}
