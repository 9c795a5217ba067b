// SPDX-License-Identifier: MIT
/* libFuzzer target: the pccx instruction queue fed an instruction stream.
 *
 * Input layout:
 *   header   host window (base inside the arena or anywhere, size), weight
 *            stream (WS_ADDR in the arena, anywhere, or in 4 GiB of
 *            never-written memory at BIG as a guest's RAM would be; WS_LIMIT
 *            or no limit), IRQ_EN, an optional
 *            injected fault (bus error / hang on the Nth read or write beat),
 *            whether to flush the queue part-way
 *   body     instructions until the input runs out (at most 300, more than
 *            the 256-entry queue holds): a selector byte picks a builder that
 *            yields mostly well-formed instructions with small fields
 *            (MEMSET of small shapes or of any 16-bit shape, MEMCPY within the window, GEMV/GEMM on
 *            cached shapes, CVO of short vectors) or a raw 64-bit word
 *   tail     guest memory contents (host window, then weight stream)
 *
 * The harness issues the words through the 64-bit INSTR write, lets the device
 * run, and whenever the queue stops on a fault checks the documented error
 * state and resumes it (STATUS.ERROR write-1-to-clear), as the driver does.
 * Invariants (fuzz_util.h for the guard check):
 *   - DMA: only the host window [HWIN_BASE, +HWIN_SIZE) and the weight stream
 *     [WS_ADDR, WS_LIMIT) (unbounded when WS_LIMIT = 0) are touched;
 *   - every instruction is accounted for exactly once: retired (counted by
 *     INSTR_RETIRED), faulted (one ERR_INDEX each, reported in order),
 *     dropped by the flush the harness asked for (QUEUE_COUNT before it), or
 *     dropped by queue overflow (reported as fault 13) -- or the device sits
 *     visibly stalled with STATUS.HUNG, only when a hang was injected;
 *   - a fault leaves STATUS.ERROR, a documented ERR_CODE (1..15), ERR_INSTR
 *     equal to the word issued at ERR_INDEX, and the encoding-only faults
 *     agree with npk_pccx_check();
 *   - CTRL.RESET recovers a hung device; reset returns every register to its
 *     reset value.
 * The device runs with its implementation limits scaled down (LIMITS: weight
 * records of at most 1 MiB, 2^24 MACs per instruction, a 4 MiB weight cache,
 * so that records are evicted) so that every
 * instruction they allow is cheap even under ASan, also over records in the
 * never-written region: with NPK_FUZZ_COST=1 an input whose host cost passes
 * the bounds found work that no limit governs (fuzz_util.h).
 */
#include "fuzz_util.h"
#include "npukit/pccx.h"

#define ARENA 0x200000ull
#define ARENA_SIZE 0x100000ull
#define HWIN (ARENA + 0x10000)
#define WS (ARENA + 0x80000)
#define BIG 0x10000000000ull /* 1 TiB: 4 GiB of never-written memory (sparse: reads 0, no host pages) */
#define BIG_SIZE (1ull << 32)
#define LIMITS "max_wbytes=1048576,max_macs=16777216,max_wcache=4194304"
#define MAXI 300

static const char DEV[] = "pccx";

static uint32_t rd(npk_dev *d, uint32_t off) { return d->ops->read32(d, off); }
static void wr(npk_dev *d, uint32_t off, uint32_t v) { d->ops->write32(d, off, v); }
static uint64_t rd64(npk_dev *d, uint32_t off) { return rd(d, off) | (uint64_t)rd(d, off + 4) << 32; }

static uint64_t insn(fz_in *in) {
    uint8_t sel = fz_u8(in);
    switch (sel % 8) {
    case 0: { /* MEMSET: a small shape, or (sel bit 6) any 16-bit one */
        if (sel & 0x40) {
            uint8_t ptr = fz_u8(in);
            uint16_t a = fz_u16(in), b = fz_u16(in), c = fz_u16(in);
            return npk_pccx_memset_word(sel >> 7, ptr % 8, a, b, c);
        }
        uint8_t a = fz_u8(in), b = fz_u8(in), c = fz_u8(in);
        return npk_pccx_memset_word(sel >> 7, fz_u8(in) % 8, a % 5, b % 5, (uint16_t)(c % 70));
    }
    case 1: { /* MEMCPY host <-> L2 within a small window */
        uint8_t x = fz_u8(in);
        return npk_pccx_memcpy_word((x & 1), !(x & 1) && (x & 2), fz_u16(in) % 2048, fz_u16(in) % 2048,
                                    fz_u8(in), (x >> 2) % 8, x >> 7);
    }
    case 2:
    case 3: { /* GEMV / GEMM on cached shapes */
        uint8_t x = fz_u8(in), y = fz_u8(in);
        uint32_t dst = fz_u16(in) % 4096, src = fz_u16(in) % 4096;
        unsigned flags = x & (NPK_PCCX_FINDEMAX | NPK_PCCX_ACCM | NPK_PCCX_W_SCALE);
        return sel % 8 == 2 ? npk_pccx_gemv_word(dst, src, flags, y % 8, (y >> 3) % 8, (x >> 6) + (y >> 7))
                            : npk_pccx_gemm_word(dst, src, flags, y % 8, (y >> 3) % 8, (x >> 6) + (y >> 7));
    }
    case 4: { /* CVO */
        uint8_t x = fz_u8(in), y = fz_u8(in);
        return npk_pccx_cvo_word(x % 8, fz_u16(in) % 4096, fz_u16(in) % 4096, y % 100, (x >> 3) & 0x1c, x >> 7);
    }
    default: return fz_u64(in); /* raw */
    }
}

/* Step until the device is idle or hung (bounded). */
static void settle(npk_sim *s) {
    npk_dev *d = npk_sim_dev(s);
    for (int i = 0; i < 1024 && !d->ops->idle(d); i++) {
        if (rd(d, NPK_PCCX_STATUS) & NPK_PCCX_STATUS_HUNG) return;
        npk_sim_step(s, 1u << 24);
    }
    if (!d->ops->idle(d) && !(rd(d, NPK_PCCX_STATUS) & NPK_PCCX_STATUS_HUNG))
        fz_fail(DEV, "the device did not settle within 16G cycles");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_in in = {data, size, 0};
    npk_sim *s = npk_sim_new("pccx", LIMITS);
    fz_cost_begin();
    if (!s) abort();
    npk_mem *m = npk_sim_mem(s);
    npk_dev *d = npk_sim_dev(s);
    npk_mem_map(m, ARENA, ARENA_SIZE, 0, "arena");
    npk_mem_map(m, BIG, BIG_SIZE, 0, "never-written");
    fz_guard g;
    fz_guard_init(&g, DEV);

    uint8_t h = fz_u8(&in);
    uint64_t hwin = (h & 1) ? fz_u64(&in) : HWIN;
    uint32_t hsize = (h & 2) ? fz_u32(&in) : (uint32_t)(fz_u16(&in) % 0x1000) * 16u;
    uint64_t ws = (h & 0x80) ? BIG + (fz_u32(&in) & ~15u) : (h & 4) ? fz_u64(&in) : WS;
    uint64_t wlim = (h & 8) ? 0 : ws + (uint64_t)fz_u16(&in) * 16u;
    wr(d, NPK_PCCX_HWIN_BASE_LO, (uint32_t)hwin);
    wr(d, NPK_PCCX_HWIN_BASE_HI, (uint32_t)(hwin >> 32));
    wr(d, NPK_PCCX_HWIN_SIZE, hsize);
    wr(d, NPK_PCCX_WS_ADDR_LO, (uint32_t)ws);
    wr(d, NPK_PCCX_WS_ADDR_HI, (uint32_t)(ws >> 32));
    wr(d, NPK_PCCX_WS_LIMIT_LO, (uint32_t)wlim);
    wr(d, NPK_PCCX_WS_LIMIT_HI, (uint32_t)(wlim >> 32));
    wr(d, NPK_PCCX_IRQ_EN, (h >> 4) & 3);
    /* what the device latched (base alignment is the register's business) */
    hwin = rd64(d, NPK_PCCX_HWIN_BASE_LO);
    hsize = rd(d, NPK_PCCX_HWIN_SIZE);
    ws = rd64(d, NPK_PCCX_WS_ADDR_LO);
    wlim = rd64(d, NPK_PCCX_WS_LIMIT_LO);
    fz_name(&g, hwin, hsize, "host window");
    if (wlim) fz_name(&g, ws, wlim > ws ? wlim - ws : 0, "weight stream");
    else fz_name_one(&g, ws, UINT64_MAX, "weight stream (no limit)");
    int hang = 0;
    fz_fault(&in, m, &hang);
    int flush_at = (h & 0x40) ? fz_u8(&in) : -1;

    uint64_t words[MAXI];
    unsigned n = 0;
    uint8_t cnt = fz_u8(&in);
    unsigned want = (cnt & 0x80) ? 257 + cnt % 44 : cnt % 64;
    while (n < want && fz_left(&in) >= 2) words[n++] = insn(&in);
    size_t left = fz_left(&in);
    if (left > 0x20000) left = 0x20000;
    if (left) {
        npk_mem_poke(m, HWIN, data + in.pos, left);
        npk_mem_poke(m, WS, data + in.pos, left);
    }
    npk_mem_set_watch(m, fz_watch, &g);

    /* issue; the queue runs as instructions arrive (0 time passes) */
    unsigned flushed = 0, faults = 0, overflows = 0;
    for (unsigned i = 0; i < n; i++) {
        if ((int)i == flush_at) {
            flushed += rd(d, NPK_PCCX_QUEUE_COUNT);
            wr(d, NPK_PCCX_CTRL, NPK_PCCX_CTRL_FLUSH);
            FZ_ASSERT(DEV, rd(d, NPK_PCCX_QUEUE_COUNT) == 0);
        }
        uint32_t before = rd(d, NPK_PCCX_QUEUE_COUNT);
        int was_faulted = (rd(d, NPK_PCCX_STATUS) & NPK_PCCX_STATUS_ERROR) != 0;
        d->ops->write64(d, NPK_PCCX_INSTR_LO, words[i]);
        FZ_ASSERT(DEV, rd(d, NPK_PCCX_INSTR_ISSUED) == i + 1);
        if (before == NPK_PCCX_QUEUE_DEPTH) { /* dropped: reported as overflow unless a fault is already latched */
            overflows++;
            FZ_ASSERT(DEV, rd(d, NPK_PCCX_QUEUE_COUNT) == NPK_PCCX_QUEUE_DEPTH);
            if (!was_faulted) {
                FZ_ASSERT(DEV, rd(d, NPK_PCCX_ERR_CODE) == NPK_PCCX_FAULT_OVERFLOW);
                FZ_ASSERT(DEV, rd(d, NPK_PCCX_ERR_INDEX) == i);
            }
        }
    }
    /* run; resume after every fault */
    uint32_t last_index = 0;
    int any_fault = 0, hung = 0;
    for (unsigned rounds = 0; rounds <= n + 1; rounds++) {
        settle(s);
        uint32_t st = rd(d, NPK_PCCX_STATUS);
        if (st & NPK_PCCX_STATUS_HUNG) {
            FZ_ASSERT(DEV, hang);
            hung = 1;
            break;
        }
        if (!(st & NPK_PCCX_STATUS_ERROR)) break;
        uint32_t code = rd(d, NPK_PCCX_ERR_CODE), idx = rd(d, NPK_PCCX_ERR_INDEX);
        if (getenv("NPK_FUZZ_VERBOSE"))
            fprintf(stderr, "pccx_queue: fault %u (%s) at instruction %u of %u, queue %u\n", code,
                    npk_pccx_fault_name(code), idx, n, rd(d, NPK_PCCX_QUEUE_COUNT));
        FZ_ASSERT(DEV, code >= 1 && code <= NPK_PCCX_FAULT_LIMIT);
        FZ_ASSERT(DEV, idx < n);
        /* execution faults are reported in order, each once (an overflow is
         * reported when the dropped word is issued, before older ones run) */
        if (code != NPK_PCCX_FAULT_OVERFLOW) FZ_ASSERT(DEV, !any_fault || idx > last_index);
        FZ_ASSERT(DEV, rd64(d, NPK_PCCX_ERR_INSTR_LO) == words[idx]);
        int enc = npk_pccx_check(words[idx]);
        if (code != NPK_PCCX_FAULT_OVERFLOW) FZ_ASSERT(DEV, enc == 0 || enc == (int)code);
        if (enc && code != NPK_PCCX_FAULT_OVERFLOW) FZ_ASSERT(DEV, enc == (int)code);
        if (code == NPK_PCCX_FAULT_BUS) FZ_ASSERT(DEV, fz_named(&g, rd64(d, NPK_PCCX_ERR_ADDR_LO), 1));
        if (code != NPK_PCCX_FAULT_OVERFLOW) {
            faults++;
            any_fault = 1;
            last_index = idx;
        }
        if ((rd(d, NPK_PCCX_IRQ_EN) & 2)) FZ_ASSERT(DEV, npk_sim_irq(s, 0));
        wr(d, NPK_PCCX_STATUS, NPK_PCCX_STATUS_ERROR);
    }
    if (getenv("NPK_FUZZ_VERBOSE"))
        fprintf(stderr, "pccx_queue: %u issued, %u retired, %u faulted, %u flushed, %u overflowed, hung %d, %llu beats\n",
                n, rd(d, NPK_PCCX_INSTR_RETIRED), faults, flushed, overflows, hung, (unsigned long long)g.beats);
    if (!hung) {
        uint32_t st = rd(d, NPK_PCCX_STATUS);
        FZ_ASSERT(DEV, !(st & (NPK_PCCX_STATUS_ERROR | NPK_PCCX_STATUS_BUSY)));
        FZ_ASSERT(DEV, rd(d, NPK_PCCX_QUEUE_COUNT) == 0);
        uint32_t retired = rd(d, NPK_PCCX_INSTR_RETIRED);
        /* exactly once: retired + faulted + flushed + dropped on overflow */
        if (retired + faults + flushed + overflows != n) {
            fprintf(stderr, "pccx: %u issued, %u retired, %u faulted, %u flushed, %u overflowed\n", n, retired, faults,
                    flushed, overflows);
            fz_fail(DEV, "instruction accounting");
        }
    } else {
        wr(d, NPK_PCCX_CTRL, NPK_PCCX_CTRL_RESET);
        FZ_ASSERT(DEV, rd(d, NPK_PCCX_STATUS) == 0 && rd(d, NPK_PCCX_QUEUE_COUNT) == 0);
    }
    return fz_finish(s);
}
