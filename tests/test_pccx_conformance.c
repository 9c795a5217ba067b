// SPDX-License-Identifier: MIT
/* pccx conformance: one CHECK per normative statement of pccx-isa.md (Part 1
 * encodings, Part 2 facts Part 3 adopts, Part 3 contract) and of the
 * decisions recorded in docs/pccx.md, through the port layer with raw
 * register accesses (no driver). Every expected value is derived by hand from
 * the documents (the derivation is in the comment next to it), never from
 * running the model. Complements test_pccx_isa.c / test_pccx_dev.c, which
 * test the same device with the driver and randomized references. */
#include "check.h"
#include "npukit/npu.h"
#include "npukit/pccx.h"

#include <string.h>

static npk_port *port;
static uint64_t hwin; /* host window base (guest byte address) */
static uint64_t wsa;  /* weight-stream area (guest byte address), 64 KiB */

static uint32_t r32(uint32_t off) {
    uint32_t v = 0xdeadbeef;
    npk_port_read32(port, off, &v);
    return v;
}
static void w32(uint32_t off, uint32_t v) { npk_port_write32(port, off, v); }
static void issue(uint64_t w) { npk_port_write64(port, NPK_PCCX_INSTR_LO, w); }
/* IDLE_ETA against STATUS at the same cycle (docs/pccx.md section 4): 0
 * exactly when none of BUSY, ERROR and HUNG is set, all ones exactly when
 * ERROR or HUNG is (so a driver may look at IDLE_ETA alone). */
static int eta_disagrees;
static void eta_check(void) {
    const uint32_t st = r32(NPK_PCCX_STATUS), eta = r32(NPK_PCCX_IDLE_ETA);
    const uint32_t stop = NPK_PCCX_STATUS_ERROR | NPK_PCCX_STATUS_HUNG;
    eta_disagrees += (eta == 0) != !(st & (stop | NPK_PCCX_STATUS_BUSY)) || (eta == 0xffffffffu) != !!(st & stop);
}
static void run(void) {
    for (int i = 0; i < 10000; i++) {
        eta_check();
        if (!(r32(NPK_PCCX_STATUS) & NPK_PCCX_STATUS_BUSY)) break;
        uint32_t eta = r32(NPK_PCCX_IDLE_ETA);
        npk_port_wait(port, eta && eta != 0xffffffffu ? eta : 1);
    }
}
static void clear_err(void) { w32(NPK_PCCX_STATUS, NPK_PCCX_STATUS_ERROR); }

/* Soft reset, then point the host window and the weight stream at our areas. */
static void reset_dev(void) {
    w32(NPK_PCCX_CTRL, NPK_PCCX_CTRL_RESET);
    w32(NPK_PCCX_HWIN_BASE_LO, (uint32_t)hwin);
    w32(NPK_PCCX_HWIN_BASE_HI, (uint32_t)(hwin >> 32));
    w32(NPK_PCCX_WS_ADDR_LO, (uint32_t)wsa);
    w32(NPK_PCCX_WS_ADDR_HI, (uint32_t)(wsa >> 32));
}

/* L2 through the debug window: n BF16 at word `word` (whole words). */
static void l2_put(uint32_t word, const uint16_t *v, unsigned n) {
    w32(NPK_PCCX_L2_ADDR, word);
    for (unsigned i = 0; i < (n + 7) / 8 * 4; i++) {
        uint16_t a = 2 * i < n ? v[2 * i] : 0, b = 2 * i + 1 < n ? v[2 * i + 1] : 0;
        w32(NPK_PCCX_L2_DATA, a | (uint32_t)b << 16);
    }
}
static void l2_get(uint32_t word, uint16_t *v, unsigned n) {
    w32(NPK_PCCX_L2_ADDR, word);
    for (unsigned i = 0; i < (n + 7) / 8 * 4; i++) {
        uint32_t x = r32(NPK_PCCX_L2_DATA);
        if (2 * i < n) v[2 * i] = (uint16_t)x;
        if (2 * i + 1 < n) v[2 * i + 1] = (uint16_t)(x >> 16);
    }
}
static uint16_t l2_at(uint32_t word, unsigned lane) {
    uint16_t v[8];
    l2_get(word, v, 8);
    return v[lane];
}
static void l2_fill(uint32_t word, unsigned nwords, uint16_t pat) {
    w32(NPK_PCCX_L2_ADDR, word);
    for (unsigned i = 0; i < nwords * 4; i++) w32(NPK_PCCX_L2_DATA, pat | (uint32_t)pat << 16);
}

/* Run `bad` on a freshly reset device after `pre` (set-up instructions);
 * return ERR_CODE (0 = no fault). Leaves the fault latched. */
static uint32_t fault_after(const uint64_t *pre, int npre, uint64_t bad) {
    reset_dev();
    for (int i = 0; i < npre; i++) issue(pre[i]);
    issue(bad);
    run();
    return r32(NPK_PCCX_ERR_CODE);
}
static uint32_t fault_of(uint64_t bad) { return fault_after(NULL, 0, bad); }

/* Standard shapes for GEMV/GEMM cases: fmap[1] = (1,1,8) (M = 1, K = 8),
 * weight[2] = (8, 8, 0) (N = 8, K = 8, per-channel), weight[3] = (8, 16, 0). */
static const uint64_t *std_shapes(int *n) {
    static uint64_t s[3];
    s[0] = npk_pccx_memset_word(0, 1, 1, 1, 8);
    s[1] = npk_pccx_memset_word(1, 2, 8, 8, 0);
    s[2] = npk_pccx_memset_word(1, 3, 8, 16, 0);
    *n = 3;
    return s;
}

/* ---- Part 3.3: host interface ------------------------------------------------------ */

static void test_host_interface(void) {
    reset_dev();
    /* "the C HAL's map (INSTR_LO 0x00, INSTR_HI 0x04 issues, STATUS 0x08 ...)" */
    CHECK_EQ(NPK_PCCX_INSTR_LO, 0x00);
    CHECK_EQ(NPK_PCCX_INSTR_HI, 0x04);
    CHECK_EQ(NPK_PCCX_STATUS, 0x08);
    /* "STATUS 0x08 with BUSY bit 0, DONE bit 1, ERROR bit 2" */
    CHECK_EQ(NPK_PCCX_STATUS_BUSY, 1u << 0);
    CHECK_EQ(NPK_PCCX_STATUS_DONE, 1u << 1);
    CHECK_EQ(NPK_PCCX_STATUS_ERROR, 1u << 2);
    /* "extended with documented registers from 0x10 up": every extension
     * register, CTRL included, lies at 0x10 or above ... */
    CHECK(NPK_PCCX_CTRL >= 0x10);
    /* ... so 0x0c is not a register: it reads 0 and a write there (the
     * soft-reset bit pattern) changes nothing. */
    w32(NPK_PCCX_EMAX, 0x4000);
    w32(0x0c, NPK_PCCX_CTRL_RESET | NPK_PCCX_CTRL_FLUSH | NPK_PCCX_CTRL_CLR_PERF);
    CHECK_EQ(r32(0x0c), 0);
    CHECK_EQ(r32(NPK_PCCX_EMAX), 0x4000);
    /* docs/pccx.md §4 reset values: ID "pccx", VERSION 2, EMAX -inf, SCALAR 1.0,
     * HWIN_SIZE 2 MiB, QUEUE_CAP 256, STATUS 0 */
    reset_dev();
    CHECK_EQ(r32(NPK_PCCX_ID), 0x70636378); /* 'p' 'c' 'c' 'x' */
    CHECK_EQ(r32(NPK_PCCX_VERSION), 2);
    CHECK_EQ(r32(NPK_PCCX_EMAX), 0xff80);
    CHECK_EQ(r32(NPK_PCCX_SCALAR), 0x3f80);
    CHECK_EQ(r32(NPK_PCCX_HWIN_SIZE), 0x200000);
    CHECK_EQ(r32(NPK_PCCX_QUEUE_CAP), 256);
    CHECK_EQ(r32(NPK_PCCX_STATUS), 0);
    /* docs §4 access types. W (INSTR_LO, INSTR_HI, CTRL): write-only, read 0 */
    w32(NPK_PCCX_INSTR_LO, 0x12345678);
    CHECK_EQ(r32(NPK_PCCX_INSTR_LO), 0);
    CHECK_EQ(r32(NPK_PCCX_INSTR_HI), 0);
    CHECK_EQ(r32(NPK_PCCX_CTRL), 0);
    /* R: writes are ignored */
    w32(NPK_PCCX_ID, 0);
    w32(NPK_PCCX_QUEUE_CAP, 7);
    w32(NPK_PCCX_INSTR_ISSUED, 99);
    w32(NPK_PCCX_ERR_CODE, 5);
    CHECK_EQ(r32(NPK_PCCX_ID), 0x70636378);
    CHECK_EQ(r32(NPK_PCCX_QUEUE_CAP), 256);
    CHECK_EQ(r32(NPK_PCCX_INSTR_ISSUED), 0);
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), 0);
    /* RW: IRQ_EN has DONE[0] ERROR[1]; EMAX / SCALAR hold a BF16 in [15:0];
     * HWIN_BASE and WS_ADDR are 16-byte aligned (low 4 bits not writable) */
    w32(NPK_PCCX_IRQ_EN, 0xffffffff);
    CHECK_EQ(r32(NPK_PCCX_IRQ_EN), 3);
    w32(NPK_PCCX_IRQ_EN, 0);
    w32(NPK_PCCX_SCALAR, 0xabcd4040);
    CHECK_EQ(r32(NPK_PCCX_SCALAR), 0x4040);
    w32(NPK_PCCX_WS_ADDR_LO, (uint32_t)wsa | 0xf);
    CHECK_EQ(r32(NPK_PCCX_WS_ADDR_LO), (uint32_t)wsa);
    w32(NPK_PCCX_HWIN_BASE_LO, (uint32_t)hwin | 0x9);
    CHECK_EQ(r32(NPK_PCCX_HWIN_BASE_LO), (uint32_t)hwin);
    /* "INSTR_LO 0x00" written above must not have issued anything */
    CHECK_EQ(r32(NPK_PCCX_INSTR_ISSUED), 0);
    reset_dev();

    /* "INSTR_HI 0x04 issues": a LO write alone does not issue; the HI write
     * issues {HI, LO}. MEMSET fmap[4] = (1, 1, 16) then MEMCPY L2->L2 with
     * shape 4: 16 elements = 2 words copied (a third word stays). */
    uint16_t pat[24];
    for (int i = 0; i < 24; i++) pat[i] = (uint16_t)(0x3f80 + i);
    l2_put(100, pat, 24);
    l2_fill(200, 3, 0x1111);
    uint64_t ms = npk_pccx_memset_word(0, 4, 1, 1, 16);
    w32(NPK_PCCX_INSTR_LO, (uint32_t)ms);
    CHECK_EQ(r32(NPK_PCCX_INSTR_ISSUED), 0);
    w32(NPK_PCCX_INSTR_HI, (uint32_t)(ms >> 32));
    CHECK_EQ(r32(NPK_PCCX_INSTR_ISSUED), 1);
    /* "A 64-bit write at 0x00 also issues." */
    issue(npk_pccx_memcpy_word(0, 0, 200, 100, 0, 4, 0));
    CHECK_EQ(r32(NPK_PCCX_INSTR_ISSUED), 2);
    /* BUSY while an instruction is in flight */
    CHECK(r32(NPK_PCCX_STATUS) & NPK_PCCX_STATUS_BUSY);
    run();
    /* DONE set when the device goes idle after completing its work */
    CHECK_EQ(r32(NPK_PCCX_STATUS), NPK_PCCX_STATUS_DONE);
    CHECK_EQ(l2_at(200, 0), 0x3f80);
    CHECK_EQ(l2_at(201, 7), 0x3f80 + 15);
    CHECK_EQ(l2_at(202, 0), 0x1111);
    /* DONE is cleared by an issue */
    issue(npk_pccx_memset_word(0, 5, 1, 1, 1));
    CHECK_EQ(r32(NPK_PCCX_STATUS) & NPK_PCCX_STATUS_DONE, 0);
    run();
    /* IRQ_EN ERROR[1]: the line follows STATUS.ERROR; W1C clears both */
    w32(NPK_PCCX_IRQ_EN, 2);
    CHECK_EQ(npk_port_irq(port, 0), 0); /* DONE is set but not enabled */
    issue(0x7000000000000000ull);
    run();
    CHECK_EQ(npk_port_irq(port, 0), 1);
    clear_err();
    CHECK_EQ(npk_port_irq(port, 0), 0);
    CHECK_EQ(r32(NPK_PCCX_STATUS) & NPK_PCCX_STATUS_ERROR, 0);
    w32(NPK_PCCX_IRQ_EN, 0);
}

/* ---- Part 3.2: faults, their codes and the order of checks ----------------------------- */

static void test_encoding_faults(void) {
    int ns;
    const uint64_t *sh = std_shapes(&ns);
    /* "Opcodes ... 0x5-0xF reserved" + 3.2 "Reserved opcodes ... are faults" */
    int bad = 0;
    for (uint64_t op = 5; op < 16; op++) bad += fault_of(op << 60) != NPK_PCCX_FAULT_OPCODE;
    CHECK_EQ(bad, 0);
    /* 4.1 "0x8-0xF reserved" function codes fault (FUNC) */
    bad = 0;
    for (unsigned f = 8; f < 16; f++) bad += fault_of(npk_pccx_cvo_word(f, 0, 0, 8, 0, 0)) != NPK_PCCX_FAULT_FUNC;
    CHECK_EQ(bad, 0);
    /* order: FUNC is checked before CVO's RESERVED (docs §3) */
    CHECK_EQ(fault_of(npk_pccx_cvo_word(9, 0, 0, 8, 0x3, 0)), NPK_PCCX_FAULT_FUNC);
    /* 1 "[2:0] reserved, must be zero" (GEMV and GEMM), every bit */
    bad = 0;
    for (int b = 0; b < 3; b++) {
        bad += fault_after(sh, ns, npk_pccx_gemv_word(0, 0, 0, 2, 1, 0) | 1ull << b) != NPK_PCCX_FAULT_RESERVED;
        bad += fault_after(sh, ns, npk_pccx_gemm_word(0, 0, 0, 2, 1, 0) | 1ull << b) != NPK_PCCX_FAULT_RESERVED;
        /* 1.1 "[2:0] reserved, must be zero" (flag bits = word bits 20..22) */
        bad += fault_after(sh, ns, npk_pccx_gemv_word(0, 0, 1u << b, 2, 1, 0)) != NPK_PCCX_FAULT_RESERVED;
    }
    CHECK_EQ(bad, 0);
    /* 3 MEMSET "[3:0] reserved, must be zero" */
    bad = 0;
    for (int b = 0; b < 4; b++) bad += fault_of(npk_pccx_memset_word(0, 0, 1, 1, 1) | 1ull << b) != NPK_PCCX_FAULT_RESERVED;
    CHECK_EQ(bad, 0);
    /* 4.2 CVO flags "[1:0] reserved, must be zero" (word bits 1, 2) */
    CHECK_EQ(fault_of(npk_pccx_cvo_word(0, 0, 0, 8, 0x1, 0)), NPK_PCCX_FAULT_RESERVED);
    CHECK_EQ(fault_of(npk_pccx_cvo_word(0, 0, 0, 8, 0x2, 0)), NPK_PCCX_FAULT_RESERVED);
    /* MEMSET dest_cache: 0 and 1 are the banks; 2, 3 fault CACHE (docs), after RESERVED */
    CHECK_EQ(fault_of(npk_pccx_memset_word(2, 0, 1, 1, 1)), NPK_PCCX_FAULT_CACHE);
    CHECK_EQ(fault_of(npk_pccx_memset_word(3, 0, 1, 1, 1)), NPK_PCCX_FAULT_CACHE);
    CHECK_EQ(fault_of(npk_pccx_memset_word(2, 0, 1, 1, 1) | 1), NPK_PCCX_FAULT_RESERVED);
    /* parallel_lane "number of core lanes to activate (0 = all)": 0..4 run,
     * 5..31 fault LANE (docs); RESERVED is checked before LANE */
    bad = 0;
    for (unsigned l = 0; l < 32; l++) {
        uint32_t want = l <= 4 ? 0 : NPK_PCCX_FAULT_LANE;
        bad += fault_after(sh, ns, npk_pccx_gemv_word(0, 8, 0, 2, 1, l)) != want;
        bad += fault_after(sh, ns, npk_pccx_gemm_word(0, 8, 0, 2, 1, l)) != want;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(fault_after(sh, ns, npk_pccx_gemv_word(0, 8, 0, 2, 1, 9) | 1), NPK_PCCX_FAULT_RESERVED);
    /* MEMCPY "(1,1) reserved" -> DIRECTION, checked before FIELD */
    CHECK_EQ(fault_of(npk_pccx_memcpy_word(1, 1, 0, 0, 0, 1, 0)), NPK_PCCX_FAULT_DIRECTION);
    CHECK_EQ(fault_of(npk_pccx_memcpy_word(1, 1, 5, 6, 7, 1, 0)), NPK_PCCX_FAULT_DIRECTION);
    /* docs: the address field a direction does not use must be zero (FIELD) */
    const uint64_t fm = npk_pccx_memset_word(0, 1, 1, 1, 8);
    CHECK_EQ(fault_after(&fm, 1, npk_pccx_memcpy_word(1, 0, 0, 1, 0, 1, 0)), NPK_PCCX_FAULT_FIELD);
    CHECK_EQ(fault_after(&fm, 1, npk_pccx_memcpy_word(0, 1, 1, 0, 0, 1, 0)), NPK_PCCX_FAULT_FIELD);
    CHECK_EQ(fault_after(&fm, 1, npk_pccx_memcpy_word(0, 0, 1, 2, 1, 1, 0)), NPK_PCCX_FAULT_FIELD);
    /* docs: recip_scale on a CVO other than SCALE is FLAGS; on SCALE it runs */
    bad = 0;
    for (unsigned f = 0; f < 8; f++) {
        uint32_t want = f == NPK_PCCX_CVO_SCALE ? 0 : NPK_PCCX_FAULT_FLAGS;
        bad += fault_of(npk_pccx_cvo_word(f, 0, 1, 8, NPK_PCCX_CVO_RECIP_SCALE, 0)) != want;
    }
    CHECK_EQ(bad, 0);
    /* FLAGS is checked before SHAPE_ZERO (CVO length 0) */
    CHECK_EQ(fault_of(npk_pccx_cvo_word(0, 0, 0, 0, NPK_PCCX_CVO_RECIP_SCALE, 0)), NPK_PCCX_FAULT_FLAGS);
    CHECK_EQ(fault_of(npk_pccx_cvo_word(0, 0, 0, 0, 0, 0)), NPK_PCCX_FAULT_SHAPE_ZERO);
}

static void test_state_faults(void) {
    /* SHAPE_ZERO: "any zero dimension" of the fmap (a, b, c) or weight (N, K) */
    uint64_t pre[2];
    const uint16_t dims[5][5] = {{0, 1, 8, 8, 8}, {1, 0, 8, 8, 8}, {1, 1, 0, 8, 8}, {1, 1, 8, 0, 8}, {1, 1, 8, 8, 0}};
    int bad = 0;
    for (int i = 0; i < 5; i++) {
        pre[0] = npk_pccx_memset_word(0, 1, dims[i][0], dims[i][1], dims[i][2]);
        pre[1] = npk_pccx_memset_word(1, 2, dims[i][3], dims[i][4], 0);
        bad += fault_after(pre, 2, npk_pccx_gemv_word(0, 8, 0, 2, 1, 0)) != NPK_PCCX_FAULT_SHAPE_ZERO;
    }
    CHECK_EQ(bad, 0);
    /* MEMCPY with a zero-element shape (the constant cache resets to 0) */
    CHECK_EQ(fault_of(npk_pccx_memcpy_word(0, 0, 1, 2, 0, 7, 0)), NPK_PCCX_FAULT_SHAPE_ZERO);
    /* SHAPE_MISMATCH: fmap c (8) != weight K (16); G (9) > K (8) */
    pre[0] = npk_pccx_memset_word(0, 1, 1, 1, 8);
    pre[1] = npk_pccx_memset_word(1, 2, 8, 16, 0);
    CHECK_EQ(fault_after(pre, 2, npk_pccx_gemv_word(0, 8, 0, 2, 1, 0)), NPK_PCCX_FAULT_SHAPE_MISMATCH);
    pre[1] = npk_pccx_memset_word(1, 2, 8, 8, 9);
    CHECK_EQ(fault_after(pre, 2, npk_pccx_gemm_word(0, 8, 0, 2, 1, 0)), NPK_PCCX_FAULT_SHAPE_MISMATCH);
    /* G == K is allowed (one group) */
    pre[1] = npk_pccx_memset_word(1, 2, 8, 8, 8);
    CHECK_EQ(fault_after(pre, 2, npk_pccx_gemm_word(0, 8, 0, 2, 1, 0)), 0);
    /* SHAPE_ZERO before SHAPE_MISMATCH: N = 0 and K mismatched */
    pre[1] = npk_pccx_memset_word(1, 2, 0, 16, 0);
    CHECK_EQ(fault_after(pre, 2, npk_pccx_gemv_word(0, 8, 0, 2, 1, 0)), NPK_PCCX_FAULT_SHAPE_ZERO);
    /* SHAPE_MISMATCH before L2_RANGE: mismatched shapes and dest beyond L2 */
    pre[1] = npk_pccx_memset_word(1, 2, 8, 16, 0);
    CHECK_EQ(fault_after(pre, 2, npk_pccx_gemv_word(120000, 8, 0, 2, 1, 0)), NPK_PCCX_FAULT_SHAPE_MISMATCH);

    /* 3.2 / 3.4: "addresses beyond the physical L2 are faults"; L2 has
     * 114,688 words, so word 114,687 is the last one. */
    pre[0] = npk_pccx_memset_word(0, 1, 1, 1, 8); /* 8 elements = 1 word */
    pre[1] = npk_pccx_memset_word(1, 2, 8, 8, 0);
    CHECK_EQ(fault_after(pre, 2, npk_pccx_gemv_word(114687, 114687, 0, 2, 1, 0)), 0);
    CHECK_EQ(fault_after(pre, 2, npk_pccx_gemv_word(114688, 0, 0, 2, 1, 0)), NPK_PCCX_FAULT_L2_RANGE);
    CHECK_EQ(r32(NPK_PCCX_ERR_ADDR_LO), 114688); /* the offending L2 word */
    CHECK_EQ(fault_after(pre, 2, npk_pccx_gemm_word(0, 114688, 0, 2, 1, 0)), NPK_PCCX_FAULT_L2_RANGE);
    CHECK_EQ(fault_after(pre, 1, npk_pccx_memcpy_word(0, 0, 114687, 0, 0, 1, 0)), 0);
    CHECK_EQ(fault_after(pre, 1, npk_pccx_memcpy_word(0, 0, 114688, 0, 0, 1, 0)), NPK_PCCX_FAULT_L2_RANGE);
    CHECK_EQ(fault_after(pre, 1, npk_pccx_memcpy_word(0, 0, 0, 114688, 0, 1, 0)), NPK_PCCX_FAULT_L2_RANGE);
    CHECK_EQ(fault_after(pre, 1, npk_pccx_memcpy_word(1, 0, 114688, 0, 0, 1, 0)), NPK_PCCX_FAULT_L2_RANGE);
    CHECK_EQ(fault_after(pre, 1, npk_pccx_memcpy_word(0, 1, 0, 131071, 0, 1, 0)), NPK_PCCX_FAULT_L2_RANGE);
    /* a range that starts inside and ends outside: 9 elements from word 114,687 need 2 words */
    CHECK_EQ(fault_of(npk_pccx_cvo_word(0, 114687, 0, 8, 0, 0)), 0);
    CHECK_EQ(fault_of(npk_pccx_cvo_word(0, 114687, 0, 9, 0, 0)), NPK_PCCX_FAULT_L2_RANGE);
    CHECK_EQ(fault_of(npk_pccx_cvo_word(0, 0, 114688, 1, 0, 0)), NPK_PCCX_FAULT_L2_RANGE);
    /* REDUCE_SUM writes one element: dst 114,687 is fine for any length */
    CHECK_EQ(fault_of(npk_pccx_cvo_word(5, 0, 114687, 100, 0, 0)), 0);

    /* HOST_RANGE: 16*aux + bytes > HWIN_SIZE; exactly at the end is fine
     * (aux = 0x1ffff -> offset 0x1ffff0, 1 word -> end 0x200000 = HWIN_SIZE) */
    CHECK_EQ(fault_after(pre, 1, npk_pccx_memcpy_word(1, 0, 0, 0, 0x1ffff, 1, 0)), 0);
    pre[1] = npk_pccx_memset_word(0, 2, 1, 1, 9); /* 2 words */
    CHECK_EQ(fault_after(pre, 2, npk_pccx_memcpy_word(1, 0, 0, 0, 0x1ffff, 2, 0)), NPK_PCCX_FAULT_HOST_RANGE);
    CHECK_EQ(fault_after(pre, 2, npk_pccx_memcpy_word(0, 1, 0, 0, 0x1ffff, 2, 0)), NPK_PCCX_FAULT_HOST_RANGE);
    /* L2_RANGE is checked before HOST_RANGE */
    CHECK_EQ(fault_after(pre, 2, npk_pccx_memcpy_word(1, 0, 114687, 0, 0x1ffff, 2, 0)), NPK_PCCX_FAULT_L2_RANGE);
    /* HWIN_SIZE bounds the window: 64 bytes -> aux 3 (offset 48) + 16 fits, aux 4 does not */
    reset_dev();
    w32(NPK_PCCX_HWIN_SIZE, 64);
    issue(pre[0]);
    issue(npk_pccx_memcpy_word(1, 0, 0, 0, 3, 1, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), 0);
    issue(npk_pccx_memcpy_word(1, 0, 0, 0, 4, 1, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_HOST_RANGE);
    /* docs: ERR_ADDR = the start of the host transfer, HWIN_BASE + 16*aux */
    CHECK_EQ(r32(NPK_PCCX_ERR_ADDR_LO), (uint32_t)(hwin + 64));
    CHECK_EQ(r32(NPK_PCCX_ERR_ADDR_HI), (uint32_t)((hwin + 64) >> 32));

    /* WS_RANGE: record of N = K = 8 without w_scale = 32 bytes; limit = start
     * + 32 fits, start + 31 faults; L2_RANGE is checked first */
    pre[0] = npk_pccx_memset_word(0, 1, 1, 1, 8);
    pre[1] = npk_pccx_memset_word(1, 2, 8, 8, 0);
    reset_dev();
    w32(NPK_PCCX_WS_LIMIT_LO, (uint32_t)(wsa + 31));
    w32(NPK_PCCX_WS_LIMIT_HI, (uint32_t)((wsa + 31) >> 32));
    issue(pre[0]);
    issue(pre[1]);
    issue(npk_pccx_gemv_word(114688, 8, 0, 2, 1, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_L2_RANGE);
    clear_err();
    issue(npk_pccx_gemv_word(0, 8, 0, 2, 1, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_WS_RANGE);
    CHECK_EQ(r32(NPK_PCCX_ERR_ADDR_LO), (uint32_t)wsa); /* the record's start */
    clear_err();
    w32(NPK_PCCX_WS_LIMIT_LO, (uint32_t)(wsa + 32));
    issue(npk_pccx_gemv_word(0, 8, 0, 2, 1, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), 0);
    CHECK_EQ(r32(NPK_PCCX_WS_ADDR_LO), (uint32_t)(wsa + 32)); /* advanced by the record */
}

/* "the instruction is not executed, STATUS shows ERROR with a documented
 * code and the index of the faulting instruction, and the queue stops until
 * the host clears it" */
static void test_fault_contract(void) {
    reset_dev();
    /* not executed: a faulting MEMSET (reserved bit) leaves the entry alone */
    issue(npk_pccx_memset_word(0, 4, 1, 1, 8));       /* #0: fmap[4] = 8 elements */
    issue(npk_pccx_memset_word(0, 4, 1, 1, 16) | 1);  /* #1: faults */
    issue(npk_pccx_memcpy_word(0, 0, 300, 100, 0, 4, 0)); /* #2: queued meanwhile */
    issue(npk_pccx_memcpy_word(0, 0, 310, 100, 0, 4, 0)); /* #3 */
    l2_fill(100, 2, 0x2222);
    l2_fill(300, 2, 0x5555);
    l2_fill(310, 2, 0x5555);
    run();
    CHECK_EQ(r32(NPK_PCCX_STATUS) & NPK_PCCX_STATUS_ERROR, NPK_PCCX_STATUS_ERROR);
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_RESERVED);
    CHECK_EQ(r32(NPK_PCCX_ERR_INDEX), 1);
    CHECK_EQ(r32(NPK_PCCX_ERR_INSTR_LO), (uint32_t)(npk_pccx_memset_word(0, 4, 1, 1, 16) | 1));
    CHECK_EQ(r32(NPK_PCCX_ERR_INSTR_HI), (uint32_t)(npk_pccx_memset_word(0, 4, 1, 1, 16) >> 32));
    /* the queue stops: #2 and #3 wait however long time runs */
    npk_port_wait(port, 5000);
    CHECK_EQ(r32(NPK_PCCX_QUEUE_COUNT), 2);
    CHECK_EQ(r32(NPK_PCCX_IDLE_ETA), 0xffffffffu); /* docs: stopped by a fault */
    CHECK_EQ(r32(NPK_PCCX_STATUS) & NPK_PCCX_STATUS_BUSY, 0); /* docs §4 BUSY */
    CHECK_EQ(l2_at(300, 0), 0x5555);
    /* instructions written while stopped are queued */
    issue(npk_pccx_memset_word(0, 5, 1, 1, 1)); /* #4 */
    CHECK_EQ(r32(NPK_PCCX_QUEUE_COUNT), 3);
    /* "until the host clears it": W1C ERROR clears the code and resumes */
    clear_err();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), 0);
    run();
    CHECK_EQ(r32(NPK_PCCX_STATUS), NPK_PCCX_STATUS_DONE);
    CHECK_EQ(r32(NPK_PCCX_QUEUE_COUNT), 0);
    /* fmap[4] still holds 8 elements: one word copied, the second untouched */
    CHECK_EQ(l2_at(300, 0), 0x2222);
    CHECK_EQ(l2_at(301, 0), 0x5555);
    CHECK_EQ(r32(NPK_PCCX_INSTR_RETIRED), 4); /* #0, #2, #3, #4; the faulted #1 excluded */
    CHECK_EQ(r32(NPK_PCCX_CNT_MEMSET), 2);
    CHECK_EQ(r32(NPK_PCCX_CNT_MEMCPY), 2);

    /* a fault on the last queued instruction while an async CVO still runs:
     * BUSY and ERROR together, IDLE_ETA all ones (not the CVO's remaining
     * cycles), then BUSY alone ends with the CVO */
    reset_dev();
    issue(npk_pccx_cvo_word(NPK_PCCX_CVO_EXP, 0, 0, 4000, 0, 1)); /* async, 4000 + sfu_lat cycles */
    issue(npk_pccx_memset_word(0, 4, 1, 1, 16) | 1);              /* faults as it starts, a cycle later */
    npk_port_wait(port, 10);
    CHECK_EQ(r32(NPK_PCCX_QUEUE_COUNT), 0);
    CHECK_EQ(r32(NPK_PCCX_STATUS) & (NPK_PCCX_STATUS_BUSY | NPK_PCCX_STATUS_ERROR),
             NPK_PCCX_STATUS_BUSY | NPK_PCCX_STATUS_ERROR);
    CHECK_EQ(r32(NPK_PCCX_IDLE_ETA), 0xffffffffu);
    eta_check();
    clear_err();
    CHECK(r32(NPK_PCCX_IDLE_ETA) > 3900 && r32(NPK_PCCX_IDLE_ETA) < 0xffffffffu); /* the CVO's rest */
    run();
    CHECK_EQ(r32(NPK_PCCX_STATUS), NPK_PCCX_STATUS_DONE);
    CHECK_EQ(r32(NPK_PCCX_IDLE_ETA), 0);

    /* not executed: a faulting findemax GEMV changes neither e_max nor WS_ADDR */
    reset_dev();
    w32(NPK_PCCX_WS_LIMIT_LO, (uint32_t)(wsa + 16));
    w32(NPK_PCCX_WS_LIMIT_HI, (uint32_t)((wsa + 16) >> 32));
    w32(NPK_PCCX_EMAX, 0x4040);
    issue(npk_pccx_memset_word(0, 1, 1, 1, 8));
    issue(npk_pccx_memset_word(1, 2, 8, 8, 0)); /* 32-byte record > limit */
    issue(npk_pccx_gemv_word(0, 8, NPK_PCCX_FINDEMAX, 2, 1, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_WS_RANGE);
    CHECK_EQ(r32(NPK_PCCX_EMAX), 0x4040);
    CHECK_EQ(r32(NPK_PCCX_WS_ADDR_LO), (uint32_t)wsa);
    /* not executed: a faulting REDUCE_SUM (recip_scale) leaves scalar and dst */
    reset_dev();
    l2_fill(20, 1, 0x3f80);
    l2_fill(21, 1, 0x7777);
    issue(npk_pccx_cvo_word(5, 20, 21, 8, NPK_PCCX_CVO_RECIP_SCALE, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_FLAGS);
    CHECK_EQ(r32(NPK_PCCX_SCALAR), 0x3f80);
    CHECK_EQ(l2_at(21, 0), 0x7777);

    /* ERR_INDEX is the "0-based count of instructions written to INSTR
     * since reset": flushed and dropped instructions count too. */
    reset_dev();
    issue(0x6000000000000000ull);                 /* #0 faults */
    issue(npk_pccx_memset_word(0, 0, 1, 1, 1));   /* #1, #2 queued */
    issue(npk_pccx_memset_word(0, 0, 1, 1, 1));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_INDEX), 0);
    w32(NPK_PCCX_CTRL, NPK_PCCX_CTRL_FLUSH);      /* discards #1, #2 */
    clear_err();
    issue(0x6000000000000000ull);                 /* #3 */
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_OPCODE);
    CHECK_EQ(r32(NPK_PCCX_ERR_INDEX), 3);
    CHECK_EQ(r32(NPK_PCCX_INSTR_RETIRED), 0);

    /* overflow: #0 starts at once, #1..#256 fill the 256-entry queue, #257 is
     * dropped (OVERFLOW, ERR_INDEX 257). After clearing, time lets some run;
     * #258, a bad opcode, queues behind #256 and must report index 258. */
    reset_dev();
    for (int i = 0; i < 258; i++) issue(npk_pccx_memset_word(0, 0, 1, 1, 1));
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_OVERFLOW);
    CHECK_EQ(r32(NPK_PCCX_ERR_INDEX), 257);
    CHECK_EQ(r32(NPK_PCCX_INSTR_ISSUED), 258); /* dropped ones included */
    CHECK_EQ(r32(0xc0), 1);                    /* DROPPED */
    clear_err();
    npk_port_wait(port, 10);
    CHECK(r32(NPK_PCCX_QUEUE_COUNT) < 256);
    issue(0x5000000000000000ull); /* #258 */
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_OPCODE);
    CHECK_EQ(r32(NPK_PCCX_ERR_INDEX), 258);
    CHECK_EQ(r32(NPK_PCCX_INSTR_RETIRED), 257); /* #0..#256 */
    clear_err();

    /* CTRL.RESET: registers, queue, constant cache and counters to reset
     * values; "L2 keeps its contents" */
    reset_dev();
    l2_fill(50, 1, 0x4242);
    w32(NPK_PCCX_EMAX, 0x1234);
    w32(NPK_PCCX_SCALAR, 0x5678);
    w32(NPK_PCCX_HWIN_SIZE, 4096);
    issue(npk_pccx_memset_word(0, 9, 1, 1, 8));
    run();
    w32(NPK_PCCX_CTRL, NPK_PCCX_CTRL_RESET);
    CHECK_EQ(r32(NPK_PCCX_EMAX), 0xff80);
    CHECK_EQ(r32(NPK_PCCX_SCALAR), 0x3f80);
    CHECK_EQ(r32(NPK_PCCX_HWIN_SIZE), 0x200000);
    CHECK_EQ(r32(NPK_PCCX_INSTR_ISSUED), 0);
    CHECK_EQ(r32(NPK_PCCX_CNT_MEMSET), 0);
    CHECK_EQ(r32(NPK_PCCX_STATUS), 0);
    CHECK_EQ(l2_at(50, 0), 0x4242);
    issue(npk_pccx_memcpy_word(0, 0, 51, 50, 0, 9, 0)); /* fmap[9] was cleared */
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_SHAPE_ZERO);
    clear_err();
}

/* ---- Part 2 / 3.4: memory layout and MEMCPY / MEMSET ----------------------------------- */

static void test_memcpy_memset(void) {
    reset_dev();
    /* host -> L2, (from_device, to_device) = (1, 0); aux_addr in 16-byte
     * blocks (aux 5 = window offset 80); fmap (3,1,3) = 9 elements ->
     * ceil(9/8) = 2 words = 32 bytes, whole words */
    uint8_t h[48];
    for (int i = 0; i < 48; i++) h[i] = (uint8_t)(i + 1);
    npk_port_mem_write(port, hwin + 80, h, 48);
    l2_fill(400, 3, 0x9999);
    issue(npk_pccx_memset_word(0, 3, 3, 1, 3));
    issue(npk_pccx_memcpy_word(1, 0, 400, 0, 5, 3, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), 0);
    /* Part 3.4 "8 per word", lane 0 = bytes 0-1, little-endian BF16 */
    CHECK_EQ(l2_at(400, 0), 0x0201);
    CHECK_EQ(l2_at(400, 7), 0x100f);
    CHECK_EQ(l2_at(401, 7), 0x201f); /* lanes past element 9 of the last word too */
    CHECK_EQ(l2_at(402, 0), 0x9999); /* a third word is not touched */
    CHECK_EQ(r32(NPK_PCCX_DMA_BYTES_LO), 32);
    /* the L2_DATA window reads lanes 0..1 as one 32-bit word */
    w32(NPK_PCCX_L2_ADDR, 400);
    CHECK_EQ(r32(NPK_PCCX_L2_DATA), 0x04030201);
    /* L2 -> host, (0, 1): 32 bytes to offset 16*aux; the bytes after them stay */
    uint8_t z[48] = {0};
    memset(z + 32, 0xab, 16);
    npk_port_mem_write(port, hwin + 1024, z, 48);
    issue(npk_pccx_memcpy_word(0, 1, 0, 400, 64, 3, 0));
    run();
    uint8_t back[48];
    npk_port_mem_read(port, hwin + 1024, back, 48);
    CHECK(!memcmp(back, h, 32));
    CHECK_EQ(back[32], 0xab);
    /* L2 -> L2, (0, 0), overlapping: as memmove. Words 10..12 = A B C,
     * copy 3 words 10 -> 11: 11..13 = A B C */
    l2_fill(10, 1, 0xaaaa);
    l2_fill(11, 1, 0xbbbb);
    l2_fill(12, 1, 0xcccc);
    l2_fill(13, 1, 0xdddd);
    issue(npk_pccx_memset_word(0, 6, 1, 3, 8)); /* 24 elements = 3 words */
    issue(npk_pccx_memcpy_word(0, 0, 11, 10, 0, 6, 0));
    run();
    CHECK_EQ(l2_at(11, 3), 0xaaaa);
    CHECK_EQ(l2_at(12, 3), 0xbbbb);
    CHECK_EQ(l2_at(13, 3), 0xcccc);
    CHECK_EQ(r32(NPK_PCCX_DMA_BYTES_LO), 64); /* L2 -> L2 moves no host bytes */
    /* MEMSET "dest_cache 0 = fmap_shape, 1 = weight_shape": a weight_shape
     * entry is not an fmap entry (MEMCPY reads fmap_shape) */
    issue(npk_pccx_memset_word(1, 7, 1, 1, 8));
    issue(npk_pccx_memcpy_word(0, 0, 20, 10, 0, 7, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_SHAPE_ZERO);
    clear_err();
    /* async MEMCPY ("fire-and-forget") gives the same data */
    issue(npk_pccx_memcpy_word(0, 0, 30, 10, 0, 6, 1));
    issue(npk_pccx_memcpy_word(0, 0, 40, 30, 0, 6, 1)); /* reads what the first writes */
    run();
    CHECK_EQ(l2_at(42, 5), 0xbbbb);
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), 0);
}

/* ---- Part 3.5 / 3.6: GEMV / GEMM -------------------------------------------------------- */

static void put_f32(uint8_t *p, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(u >> (8 * i));
}

static void test_mm(void) {
    reset_dev();
    /* weight record for N = 2, K = 2 (docs "Weight record"): nibbles
     * n*K + k, low nibble = even index (Part 2). Row 0 = (1, -8) -> byte
     * 0x81; row 1 = (2, 3) -> byte 0x32; block padded to 16 bytes; then, for
     * w_scale, N * ceil(K/G) = 2 fp32 scales (0.25, 2.0), padded to 16. */
    uint8_t rec[32] = {0x81, 0x32};
    put_f32(rec + 16, 0.25f);
    put_f32(rec + 20, 2.0f);
    npk_port_mem_write(port, wsa, rec, 32);
    npk_port_mem_write(port, wsa + 32, rec, 32);
    /* x = (3.0, 0.5) at word 60 */
    const uint16_t x[2] = {0x4040, 0x3f00};
    l2_put(60, x, 2);
    l2_fill(61, 1, 0x7777);
    issue(npk_pccx_memset_word(0, 1, 1, 1, 2)); /* fmap: M = 1, K = 2 */
    issue(npk_pccx_memset_word(1, 2, 2, 2, 0)); /* weight: N = 2, K = 2, per channel */
    /* w_scale: y0 = 0.25 * (1*3 + -8*0.5) = -0.25 (0xbe80);
     *          y1 = 2 * (2*3 + 3*0.5) = 15 (0x4170).
     * Swapped nibbles would give y0 = 0.25*(-24 + 0.5). findemax: e_max = 15. */
    issue(npk_pccx_gemv_word(61, 60, NPK_PCCX_W_SCALE | NPK_PCCX_FINDEMAX, 2, 1, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), 0);
    CHECK_EQ(l2_at(61, 0), 0xbe80);
    CHECK_EQ(l2_at(61, 1), 0x4170);
    /* "writes exactly n lanes": lanes 2..7 keep their value */
    CHECK_EQ(l2_at(61, 2), 0x7777);
    CHECK_EQ(l2_at(61, 7), 0x7777);
    CHECK_EQ(r32(NPK_PCCX_EMAX), 0x4170);
    /* the stream advanced by the record (32 bytes with scales) */
    CHECK_EQ(r32(NPK_PCCX_WS_ADDR_LO), (uint32_t)(wsa + 32));
    /* without w_scale the scales are 1 and the record has no scale block:
     * y0 = 3 - 4 = -1 (0xbf80), y1 = 6 + 1.5 = 7.5 (0x40f0); 16 bytes consumed.
     * findemax replaces e_max with this instruction's max (7.5 < 15). */
    issue(npk_pccx_gemm_word(62, 60, NPK_PCCX_FINDEMAX, 2, 1, 0));
    run();
    CHECK_EQ(l2_at(62, 0), 0xbf80);
    CHECK_EQ(l2_at(62, 1), 0x40f0);
    CHECK_EQ(r32(NPK_PCCX_EMAX), 0x40f0);
    CHECK_EQ(r32(NPK_PCCX_WS_ADDR_LO), (uint32_t)(wsa + 48));
    CHECK_EQ(r32(NPK_PCCX_CNT_GEMV), 1);
    CHECK_EQ(r32(NPK_PCCX_CNT_GEMM), 1);
    CHECK_EQ(r32(NPK_PCCX_MACS_LO), 8); /* 2 x (M*N*K = 1*2*2) */

    /* 3.6 "results rounded to BF16 round-to-nearest-even" (not the RTL's
     * truncation): w = (1, 1), x = (1, 3*2^-9): 1.005859375 is 0.75 ulp above
     * 1 -> 1 + 2^-7 (0x3f81); truncation would give 0x3f80. Negated: 0xbf81. */
    uint8_t ones[16] = {0x11};
    npk_port_mem_write(port, wsa + 64, ones, 16);
    npk_port_mem_write(port, wsa + 80, ones, 16);
    npk_port_mem_write(port, wsa + 96, ones, 16);
    npk_port_mem_write(port, wsa + 112, ones, 16);
    w32(NPK_PCCX_WS_ADDR_LO, (uint32_t)(wsa + 64));
    issue(npk_pccx_memset_word(1, 3, 1, 2, 0)); /* N = 1, K = 2 */
    const uint16_t x2[2] = {0x3f80, 0x3bc0};
    l2_put(70, x2, 2);
    issue(npk_pccx_gemv_word(71, 70, 0, 3, 1, 0));
    const uint16_t x3[2] = {0xbf80, 0xbbc0};
    l2_put(72, x3, 2);
    issue(npk_pccx_gemv_word(73, 72, 0, 3, 1, 0));
    run();
    CHECK_EQ(l2_at(71, 0), 0x3f81);
    CHECK_EQ(l2_at(73, 0), 0xbf81);
    /* 3.6 "accumulated exactly" + docs "accm: one rounding": old y = 1.0,
     * x = (2^-8, 2^-30): 1 + 2^-8 + 2^-30 is above the midpoint -> 0x3f81.
     * (Rounding the sum first would give 2^-8, then the tie 1 + 2^-8 -> 1.0.) */
    const uint16_t x4[2] = {0x3b80, 0x3080};
    l2_put(74, x4, 2);
    l2_fill(75, 1, 0x3f80);
    issue(npk_pccx_gemv_word(75, 74, NPK_PCCX_ACCM, 3, 1, 0));
    /* exact cancellation: x = (2^100, -2^100) + accm old 1.0 -> exactly 1.0 */
    const uint16_t x5[2] = {0x7180, 0xf180};
    l2_put(76, x5, 2);
    l2_fill(77, 1, 0x3f80);
    issue(npk_pccx_gemv_word(77, 76, NPK_PCCX_ACCM, 3, 1, 0));
    run();
    CHECK_EQ(l2_at(75, 0), 0x3f81);
    CHECK_EQ(l2_at(77, 0), 0x3f80);

    /* M = a*b rows, each on a word boundary (row stride ceil(K/8) = 1 word);
     * output row stride ceil(N/8) = 1 word. fmap (2,1,2): rows (3, 0.5) at
     * word 60 and (1, 1) at word 61; N = 2 record without scales (block of
     * 16): y row 1 = (1 - 8, 2 + 3) = (-7, 5) = (0xc0e0, 0x40a0). */
    npk_port_mem_write(port, wsa + 128, rec, 16);
    w32(NPK_PCCX_WS_ADDR_LO, (uint32_t)(wsa + 128));
    const uint16_t xr[10] = {0x4040, 0x3f00, 0, 0, 0, 0, 0, 0, 0x3f80, 0x3f80};
    l2_put(60, xr, 10);
    issue(npk_pccx_memset_word(0, 8, 2, 1, 2));
    issue(npk_pccx_gemv_word(80, 60, 0, 2, 8, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), 0);
    CHECK_EQ(l2_at(80, 0), 0xbf80);
    CHECK_EQ(l2_at(80, 1), 0x40f0);
    CHECK_EQ(l2_at(81, 0), 0xc0e0);
    CHECK_EQ(l2_at(81, 1), 0x40a0);
    /* Part 3.5: GEMV weights come from the stream, not L2: the record was
     * consumed once (16 bytes), the pointer advanced */
    CHECK_EQ(r32(NPK_PCCX_WS_ADDR_LO), (uint32_t)(wsa + 144));

    /* docs: scale groups, weight_shape c = G: scale (n, g) applies to k in
     * [g*G, g*G + G). N = 1, K = 2, G = 1: two scales (0.25, 2.0) for the row
     * (1, -8); x = (3, 0.5): 0.25*3 + 2*(-8*0.5) = -7.25 (0xc0e8). Record =
     * 16 bytes of nibbles + N*ceil(K/G)*4 = 8 bytes of scales padded to 16. */
    uint8_t rg[32] = {0x81};
    put_f32(rg + 16, 0.25f);
    put_f32(rg + 20, 2.0f);
    npk_port_mem_write(port, wsa + 144, rg, 32);
    issue(npk_pccx_memset_word(1, 4, 1, 2, 1));
    issue(npk_pccx_gemv_word(82, 60, NPK_PCCX_W_SCALE, 4, 1, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), 0);
    CHECK_EQ(l2_at(82, 0), 0xc0e8);
    CHECK_EQ(r32(NPK_PCCX_WS_ADDR_LO), (uint32_t)(wsa + 176));
}

/* ---- CVO ---------------------------------------------------------------------------------- */

static uint16_t cvo1(unsigned f, uint16_t x, unsigned flags) {
    l2_fill(90, 1, 0);
    l2_put(90, &x, 1);
    l2_fill(91, 1, 0x7777);
    issue(npk_pccx_cvo_word(f, 90, 91, 1, flags, 0));
    run();
    return r32(NPK_PCCX_ERR_CODE) ? 0xdead : l2_at(91, 0);
}

static void test_cvo(void) {
    reset_dev();
    /* 4.1 function codes, correctly rounded BF16 of the exact values */
    CHECK_EQ(cvo1(0x0, 0x0000, 0), 0x3f80); /* EXP(0) = 1 */
    CHECK_EQ(cvo1(0x0, 0x3f80, 0), 0x402e); /* EXP(1) = 2.71828.. -> 2.71875 */
    CHECK_EQ(cvo1(0x1, 0x4080, 0), 0x4000); /* SQRT(4) = 2 */
    CHECK_EQ(cvo1(0x1, 0x4000, 0), 0x3fb5); /* SQRT(2) = 1.41421.. -> 1.4140625 */
    CHECK_EQ(cvo1(0x2, 0x0000, 0), 0x0000); /* GELU(0) = 0 */
    CHECK_EQ(cvo1(0x2, 0xc040, 0), 0xbb6e); /* GELU(-3), tanh form (docs) = -0.0036374 */
    CHECK_EQ(cvo1(0x3, 0x0000, 0), 0x0000); /* SIN(0) = 0 */
    CHECK_EQ(cvo1(0x3, 0x3f80, 0), 0x3f57); /* SIN(1) = 0.84147 -> 0.83984375 */
    CHECK_EQ(cvo1(0x4, 0x0000, 0), 0x3f80); /* COS(0) = 1 */
    CHECK_EQ(cvo1(0x4, 0x3fc9, 0), 0x39fe); /* COS(1.5703125) = 0.00048383 */
    CHECK_EQ(cvo1(0x7, 0x4080, 0), 0x3e80); /* RECIP(4) = 0.25 */
    CHECK_EQ(cvo1(0x7, 0x4040, 0), 0x3eab); /* RECIP(3) = 0.3333 -> 0.333984375 */
    /* SCALE: "scalar x vector" with the scalar register (reset 1.0) */
    CHECK_EQ(cvo1(0x6, 0x4040, 0), 0x4040);
    /* REDUCE_SUM "sum of vector elements": (1, 2, 3, 4, 5) = 15 (0x4170) at
     * lane 0 of dst, other lanes unchanged; the scalar register latches it */
    const uint16_t v[5] = {0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0};
    l2_put(100, v, 5);
    l2_fill(101, 1, 0x7777);
    issue(npk_pccx_cvo_word(5, 100, 101, 5, 0, 0));
    run();
    CHECK_EQ(l2_at(101, 0), 0x4170);
    CHECK_EQ(l2_at(101, 1), 0x7777);
    CHECK_EQ(r32(NPK_PCCX_SCALAR), 0x4170);
    /* SCALE x scalar: 2 * 15 = 30 (0x41f0); recip_scale "turns the
     * multiplication into a division": 30 / 15 = 2 */
    CHECK_EQ(cvo1(0x6, 0x4000, 0), 0x41f0);
    CHECK_EQ(cvo1(0x6, 0x41f0, NPK_PCCX_CVO_RECIP_SCALE), 0x4000);
    /* sub_emax "subtract e_max before computing": e_max = 2: EXP(3 - 2) = e */
    w32(NPK_PCCX_EMAX, 0x4000);
    CHECK_EQ(cvo1(0x0, 0x4040, NPK_PCCX_CVO_SUB_EMAX), 0x402e);
    CHECK_EQ(cvo1(0x0, 0x4000, NPK_PCCX_CVO_SUB_EMAX), 0x3f80);
    /* docs: "sub_emax applies to every function (including REDUCE_SUM)":
     * e_max = 1: sum of (1..5) - 1 each = 10 (0x4120) */
    w32(NPK_PCCX_EMAX, 0x3f80);
    issue(npk_pccx_cvo_word(5, 100, 101, 5, NPK_PCCX_CVO_SUB_EMAX, 0));
    run();
    CHECK_EQ(l2_at(101, 0), 0x4120);
    w32(NPK_PCCX_SCALAR, 0x4170); /* back to 15 for the element count below */
    /* accm "accumulate into dst": old 1.0 + SQRT(4) = 3 */
    l2_put(90, (const uint16_t[]){0x4080}, 1);
    l2_fill(91, 1, 0x3f80);
    issue(npk_pccx_cvo_word(1, 90, 91, 1, NPK_PCCX_CVO_ACCM, 0));
    run();
    CHECK_EQ(l2_at(91, 0), 0x4040);
    /* length "number of elements to process": 3 elements -> lanes 0..2 only */
    l2_fill(92, 1, 0);
    l2_fill(93, 1, 0x7777);
    issue(npk_pccx_cvo_word(0, 92, 93, 3, 0, 0));
    run();
    CHECK_EQ(l2_at(93, 2), 0x3f80);
    CHECK_EQ(l2_at(93, 3), 0x7777);
    CHECK_EQ(r32(NPK_PCCX_SFU_ELEMS), 17 * 1 + 5 + 5 + 1 + 3); /* 17 one-element cvo1 calls, 5, 5, 1, 3 */
    /* CTRL.CLR_PERF zeroes the counters; INSTR_ISSUED counts since reset */
    uint32_t issued = r32(NPK_PCCX_INSTR_ISSUED);
    w32(NPK_PCCX_CTRL, NPK_PCCX_CTRL_CLR_PERF);
    CHECK_EQ(r32(NPK_PCCX_SFU_ELEMS), 0);
    CHECK_EQ(r32(NPK_PCCX_CNT_CVO), 0);
    CHECK_EQ(r32(NPK_PCCX_INSTR_ISSUED), issued);
}

/* Part 3.7: "the documented softmax, RMSNorm and RoPE sequences compute
 * correct results" (Part 2's sequences, raw instructions). */
static void test_sequences(void) {
    reset_dev();
    /* softmax of (1, 1, 1, 1): GEMV findemax is replaced by the host writing
     * e_max = 1; EXP sub_emax -> 1; REDUCE_SUM -> 4; SCALE recip -> 0.25 */
    const uint16_t x[4] = {0x3f80, 0x3f80, 0x3f80, 0x3f80};
    l2_put(200, x, 4);
    w32(NPK_PCCX_EMAX, 0x3f80);
    issue(npk_pccx_cvo_word(0, 200, 201, 4, NPK_PCCX_CVO_SUB_EMAX, 0));
    issue(npk_pccx_cvo_word(5, 201, 202, 4, 0, 0));
    issue(npk_pccx_cvo_word(6, 201, 201, 4, NPK_PCCX_CVO_RECIP_SCALE, 0));
    run();
    uint16_t y[4];
    l2_get(201, y, 4);
    for (int i = 0; i < 4; i++) CHECK_EQ(y[i], 0x3e80);
    /* the same with a GEMV findemax producing the scores: identity weights
     * N = K = 2 (bytes 0x01, 0x10), x = (2, 2): scores (2, 2), e_max = 2 ->
     * softmax (0.5, 0.5) = 0x3f00 */
    uint8_t id[16] = {0x01, 0x10};
    npk_port_mem_write(port, wsa, id, 16);
    const uint16_t s[2] = {0x4000, 0x4000};
    l2_put(210, s, 2);
    issue(npk_pccx_memset_word(0, 1, 1, 1, 2));
    issue(npk_pccx_memset_word(1, 2, 2, 2, 0));
    issue(npk_pccx_gemv_word(211, 210, NPK_PCCX_FINDEMAX, 2, 1, 0));
    issue(npk_pccx_cvo_word(0, 211, 212, 2, NPK_PCCX_CVO_SUB_EMAX, 1)); /* async */
    issue(npk_pccx_cvo_word(5, 212, 213, 2, 0, 1));
    issue(npk_pccx_cvo_word(6, 212, 212, 2, NPK_PCCX_CVO_RECIP_SCALE, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), 0);
    CHECK_EQ(l2_at(212, 0), 0x3f00);
    CHECK_EQ(l2_at(212, 1), 0x3f00);
    /* RMSNorm of x = (2, 2, 2, 2), eps = 0: squares (4, 4, 4, 4) -> REDUCE_SUM
     * 16 -> / n (scalar 4) = 4 -> SQRT 2 -> RECIP 0.5 -> scalar 0.5 -> x * 0.5 = 1 */
    const uint16_t x2[4] = {0x4000, 0x4000, 0x4000, 0x4000}, sq[4] = {0x4080, 0x4080, 0x4080, 0x4080};
    const uint16_t n4[1] = {0x4080};
    l2_put(220, x2, 4);
    l2_put(221, sq, 4);
    l2_put(223, n4, 1);
    issue(npk_pccx_cvo_word(5, 221, 222, 4, 0, 0)); /* 16 */
    issue(npk_pccx_cvo_word(5, 223, 224, 1, 0, 0)); /* scalar = 4 */
    issue(npk_pccx_cvo_word(6, 222, 222, 1, NPK_PCCX_CVO_RECIP_SCALE, 0));
    issue(npk_pccx_cvo_word(1, 222, 222, 1, 0, 0));
    issue(npk_pccx_cvo_word(7, 222, 222, 1, 0, 0));
    issue(npk_pccx_cvo_word(5, 222, 225, 1, 0, 0)); /* scalar = 0.5 */
    issue(npk_pccx_cvo_word(6, 220, 226, 4, 0, 0));
    run();
    CHECK_EQ(l2_at(222, 0), 0x3f00);
    l2_get(226, y, 4);
    for (int i = 0; i < 4; i++) CHECK_EQ(y[i], 0x3f80);
    /* RoPE: SIN and COS of the angles */
    const uint16_t a[2] = {0, 0x3f80};
    l2_put(230, a, 2);
    issue(npk_pccx_cvo_word(3, 230, 231, 2, 0, 1));
    issue(npk_pccx_cvo_word(4, 230, 232, 2, 0, 1));
    run();
    CHECK_EQ(l2_at(231, 1), 0x3f57);
    CHECK_EQ(l2_at(232, 0), 0x3f80);
    CHECK_EQ(l2_at(232, 1), 0x3f0a); /* cos 1 = 0.5403 -> 0.5390625 */
}

/* Part 2 test vector (the smoke program) with a weight_shape prologue so
 * that every instruction runs: "MEMCPY host->L2 dest 100 shape 3 sync" of
 * fmap[3] = (1,1,9), ..., "CVO REDUCE_SUM src 768 dst 896 len 64",
 * "MEMCPY L2->host src 896 shape 3 sync". */
static void test_smoke(void) {
    reset_dev();
    /* REDUCE_SUM of 64 ones at word 768 = 64 (0x4280) -> word 896 lane 0 ->
     * host window offset 0 (aux 0), 2 words */
    uint16_t ones[64];
    for (int i = 0; i < 64; i++) ones[i] = 0x3f80;
    l2_put(768, ones, 64);
    const uint64_t prog[] = {0x3030001000100090ull, 0x3090004000400040ull, 0x2800c80000000006ull,
                             0x45018000e0001000ull, 0x2400000380000006ull};
    for (size_t i = 0; i < sizeof prog / sizeof prog[0]; i++) issue(prog[i]);
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), 0);
    CHECK_EQ(r32(NPK_PCCX_INSTR_RETIRED), 5);
    uint8_t b[2];
    npk_port_mem_read(port, hwin, b, 2);
    CHECK_EQ(b[0] | b[1] << 8, 0x4280);
}

int main(void) {
    if (npk_port_open(&port, "sim", "pccx", NULL) || npk_port_alloc(port, 0x200000, 64, &hwin) ||
        npk_port_alloc(port, 65536, 64, &wsa)) {
        fprintf(stderr, "open: %s\n", npk_errmsg());
        return 1;
    }
    test_host_interface();
    test_encoding_faults();
    test_state_faults();
    test_fault_contract();
    test_memcpy_memset();
    test_mm();
    test_cvo();
    test_sequences();
    test_smoke();
    CHECK_EQ(eta_disagrees, 0); /* every look of run() */
    npk_port_close(port);
    return CHECK_DONE();
}
