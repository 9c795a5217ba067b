// SPDX-License-Identifier: MIT
/* v0 conformance review: one CHECK per normative statement of
 * shared/spec/e1-npu-v0-microarch.md and v0-gemmini-notes.md that the other
 * v0 tests do not already pin down. Each check quotes (or names) the
 * sentence it checks; every expected value is derived by hand from the
 * document (worked out in the comments), never from running the model.
 * Where the document is open, the expectation follows docs/v0.md. */
#include "check.h"
#include "npukit/sim.h"
#include "npukit/v0.h"

#include <stdlib.h>
#include <string.h>

static npk_sim *S;
static npk_mem *M;
#define RING 0x80000000ull
#define DATA 0x80100000ull
#define POISON 0x5A

static uint32_t rd(uint32_t off) {
    uint64_t v = 0;
    npk_sim_read(S, NPK_V0_MMIO_BASE + off, 4, &v);
    return (uint32_t)v;
}
static void wr(uint32_t off, uint32_t v) { npk_sim_write(S, NPK_V0_MMIO_BASE + off, 4, v); }
static uint32_t status(void) { return rd(NPK_V0_REG_STATUS); }
static void run(void) { npk_sim_run_until_idle(S, 100000000); }

static void put(uint32_t slot, npk_v0_desc d) {
    uint8_t raw[64];
    npk_v0_desc_pack(&d, raw);
    npk_mem_poke(M, RING + slot * 64ull, raw, 64);
}

static void open_dev(uint32_t len, uint32_t ctrl) {
    if (S) npk_sim_free(S);
    S = npk_sim_new("v0", NULL);
    if (!S) {
        fprintf(stderr, "cannot create v0: %s\n", npk_errmsg());
        exit(1);
    }
    M = npk_sim_mem(S);
    wr(NPK_V0_REG_DESC_BASE_LO, (uint32_t)RING);
    wr(NPK_V0_REG_DESC_BASE_HI, (uint32_t)(RING >> 32));
    wr(NPK_V0_REG_DESC_RING_LEN, len);
    wr(NPK_V0_REG_CTRL, ctrl);
}

static npk_v0_desc nop(uint32_t tag) { return npk_v0_desc_simple(NPK_V0_OP_NOP, 0, tag); }

static int32_t peek_i32(uint64_t addr) {
    uint8_t b[4];
    npk_mem_peek(M, addr, b, 4);
    return (int32_t)(b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24);
}
static int8_t peek_i8(uint64_t addr) {
    int8_t b;
    npk_mem_peek(M, addr, &b, 1);
    return b;
}
static void fill(uint64_t addr, int8_t v, size_t n) {
    int8_t *buf = malloc(n);
    memset(buf, (uint8_t)v, n);
    npk_mem_poke(M, addr, buf, n);
    free(buf);
}

/* Run one descriptor alone on a fresh ring (fallback_select 0) and return
 * the err_code it latched (0 when it retired). */
static uint32_t run_one(npk_v0_desc d) {
    open_dev(8, NPK_V0_CTRL_ENABLE);
    put(0, d);
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    run();
    uint32_t st = status();
    if (!(st & NPK_V0_ST_ERROR)) return rd(NPK_V0_REG_DESC_TAIL) == 1 ? 0 : 0xFF;
    return npk_v0_st_errcode(st);
}

/* ---- address map: access types ---------------------------------------- */
static void test_access_types(void) {
    open_dev(8, 0);
    /* "0x008 CTRL RW bit 0 enable, bit 1 flush, bit 2 irq_enable, bit 3
     * cpu_fallback_select": enable|irq_enable|cpu_fallback_select = 0xD reads back */
    wr(NPK_V0_REG_CTRL, 0xD);
    CHECK_EQ(rd(NPK_V0_REG_CTRL), 0xD);
    wr(NPK_V0_REG_CTRL, 0);
    /* "0x014 IRQ_MASK RW mirrors IRQ_STATUS bits": the five bits 0..4 = 0x1F */
    wr(NPK_V0_REG_IRQ_MASK, 0xFFFFFFFFu);
    CHECK_EQ(rd(NPK_V0_REG_IRQ_MASK), 0x1F);
    wr(NPK_V0_REG_IRQ_MASK, 0);
    /* "0x010 IRQ_STATUS RW1C": writing ones cannot set a bit */
    wr(NPK_V0_REG_IRQ_STATUS, 0x1F);
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), 0);
    /* "0x01C DESC_BASE_HI RW descriptor ring base, high 32 bits" */
    wr(NPK_V0_REG_DESC_BASE_HI, 0x12345678);
    CHECK_EQ(rd(NPK_V0_REG_DESC_BASE_HI), 0x12345678);
    wr(NPK_V0_REG_DESC_BASE_HI, 0);
    /* "0x030/0x034/0x038 TENSOR_MEM_BASE_LO/HI, TENSOR_MEM_LEN RW" */
    wr(NPK_V0_REG_TENSOR_MEM_BASE_LO, 0xCAFE0000);
    CHECK_EQ(rd(NPK_V0_REG_TENSOR_MEM_BASE_LO), 0xCAFE0000);
    wr(NPK_V0_REG_TENSOR_MEM_BASE_HI, 0x7);
    CHECK_EQ(rd(NPK_V0_REG_TENSOR_MEM_BASE_HI), 0x7);
    wr(NPK_V0_REG_TENSOR_MEM_LEN, 0x00100000);
    CHECK_EQ(rd(NPK_V0_REG_TENSOR_MEM_LEN), 0x00100000);
    /* "0x024 DESC_HEAD RW software-write producer index" */
    wr(NPK_V0_REG_DESC_HEAD, 5);
    CHECK_EQ(rd(NPK_V0_REG_DESC_HEAD), 5);
    /* "0x028 DESC_TAIL RO" (writable only with cpu_fallback_select == 1) */
    wr(NPK_V0_REG_DESC_TAIL, 5);
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 0);
    /* "0x040..0x04C PERF_* RO", "0x050..0x058 ERR_* RO": writes ignored (reset 0) */
    wr(NPK_V0_REG_PERF_CYCLES, 77);
    CHECK_EQ(rd(NPK_V0_REG_PERF_CYCLES), 0);
    wr(NPK_V0_REG_PERF_MACS_LO, 77);
    CHECK_EQ(rd(NPK_V0_REG_PERF_MACS_LO), 0);
    wr(NPK_V0_REG_PERF_MACS_HI, 77);
    CHECK_EQ(rd(NPK_V0_REG_PERF_MACS_HI), 0);
    wr(NPK_V0_REG_PERF_FALLBACKS, 77);
    CHECK_EQ(rd(NPK_V0_REG_PERF_FALLBACKS), 0);
    wr(NPK_V0_REG_ERR_DESC_INDEX, 77);
    CHECK_EQ(rd(NPK_V0_REG_ERR_DESC_INDEX), 0);
    wr(NPK_V0_REG_ERR_FAULT_ADDR_LO, 77);
    CHECK_EQ(rd(NPK_V0_REG_ERR_FAULT_ADDR_LO), 0);
    wr(NPK_V0_REG_ERR_FAULT_ADDR_HI, 77);
    CHECK_EQ(rd(NPK_V0_REG_ERR_FAULT_ADDR_HI), 0);
    /* CAPS "bits [15:8] array rows, [23:16] array cols": defaultConfig 16 x 16 */
    CHECK_EQ((rd(NPK_V0_REG_CAPS) >> 8) & 0xFF, 16);
    CHECK_EQ((rd(NPK_V0_REG_CAPS) >> 16) & 0xFF, 16);
}

/* ---- STATUS bit layout --------------------------------------------------- */
static void test_status_layout(void) {
    /* "STATUS: bit 0 busy, bit 1 queue_full, bit 2 queue_empty, bit 3 done,
     * bit 4 error, bits [15:8] q_level, bits [23:16] err_code".
     * Slot 0 NOP, slot 1 opcode 0x77, slot 2 NOP: the NOP retires, 0x77 stalls
     * with two descriptors left: error (0x10) | q_level 2 (0x200) | err_code
     * 0x01 (0x10000) = 0x00010210. */
    open_dev(8, NPK_V0_CTRL_ENABLE);
    put(0, nop(1));
    put(1, npk_v0_desc_simple(0x77, 0, 2));
    put(2, nop(3));
    wr(NPK_V0_REG_DESC_DOORBELL, 3);
    run();
    CHECK_EQ(status(), 0x00010210);
    /* "Sets STATUS.error and IRQ_STATUS.unsupported_op": error (0x2) | unsupported_op (0x4) */
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), 0x6);
    /* "with the descriptor index in ERR_DESC_INDEX" */
    CHECK_EQ(rd(NPK_V0_REG_ERR_DESC_INDEX), 1);
    /* "Errors are sticky in STATUS.error until ... (b) software writes 1 to
     * IRQ_STATUS.error"; "clearing IRQ_STATUS alone is enough to dismiss
     * unsupported_op" (here cpu_fallback_select == 0): STATUS = q_level 2 only */
    wr(NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_ERROR | NPK_V0_IRQ_UNSUPPORTED);
    CHECK_EQ(status(), 0x00000200);
    /* "If CTRL.cpu_fallback_select == 0, the descriptor is treated as a hard
     * failure: the ring stalls until software issues CTRL.flush" */
    wr(NPK_V0_REG_DESC_TAIL, 2); /* "ignored otherwise" */
    run();
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 1);
    CHECK_EQ(rd(NPK_V0_REG_COMPLETION_TAG), 1);
    wr(NPK_V0_REG_CTRL, NPK_V0_CTRL_ENABLE | NPK_V0_CTRL_FLUSH);
    CHECK_EQ(status(), NPK_V0_ST_QUEUE_EMPTY);

    /* a matmul in flight: busy (0x1), q_level 1 (0x100), nothing else = 0x101 */
    open_dev(8, NPK_V0_CTRL_ENABLE);
    put(0, npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 16, 16, 16, DATA, 16, DATA + 0x1000, 16, DATA + 0x2000, 64, 1));
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    npk_sim_step(S, 1);
    CHECK_EQ(status(), 0x101);
    /* "0x040 PERF_CYCLES: cycles spent with busy == 1": once idle, more
     * clock cycles do not count */
    run();
    uint32_t busy_cycles = rd(NPK_V0_REG_PERF_CYCLES);
    CHECK(busy_cycles > 0);
    npk_sim_step(S, 10000);
    CHECK_EQ(rd(NPK_V0_REG_PERF_CYCLES), busy_cycles);
    /* ... and "0x044 PERF_MACS retired MAC count": 16 * 16 * 16 = 4096 */
    CHECK_EQ(rd(NPK_V0_REG_PERF_MACS_LO), 4096);
}

/* ---- ring length ----------------------------------------------------------- */
static void test_ring_length_frozen(void) {
    /* docs/v0.md: "DESC_RING_LEN and DESC_BASE_* writes are ignored while
     * descriptors are queued"; the contract: "no descriptor is silently
     * dropped". Four NOPs queued in a ring of 8 (device disabled); shrinking
     * the ring to 4 must not drop them (4 mod 4 == 0 used to look empty). */
    open_dev(8, 0);
    for (uint32_t i = 0; i < 4; i++) put(i, nop(0x10 + i));
    wr(NPK_V0_REG_DESC_DOORBELL, 4);
    wr(NPK_V0_REG_DESC_RING_LEN, 4);
    CHECK_EQ(rd(NPK_V0_REG_DESC_RING_LEN), 8);
    CHECK_EQ(npk_v0_st_qlevel(status()), 4);
    wr(NPK_V0_REG_CTRL, NPK_V0_CTRL_ENABLE);
    run();
    /* "Hardware advances DESC_TAIL past each retired descriptor" */
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 4);
    CHECK_EQ(rd(NPK_V0_REG_COMPLETION_TAG), 0x13);
    /* now empty: the length can change */
    wr(NPK_V0_REG_DESC_RING_LEN, 4);
    CHECK_EQ(rd(NPK_V0_REG_DESC_RING_LEN), 4);
    /* "Descriptor ring length <= 256, power of two": 256 is accepted */
    wr(NPK_V0_REG_DESC_RING_LEN, 256);
    CHECK_EQ(rd(NPK_V0_REG_DESC_RING_LEN), 256);
}

/* ---- interrupts -------------------------------------------------------------- */
static void test_irq_line_is_masked_or(void) {
    /* "irq_npu ... is the OR of IRQ_STATUS & IRQ_MASK" (CTRL.irq_enable set) */
    open_dev(8, NPK_V0_CTRL_ENABLE | NPK_V0_CTRL_IRQ_ENABLE);
    wr(NPK_V0_REG_IRQ_MASK, NPK_V0_IRQ_UNSUPPORTED);
    put(0, npk_v0_desc_simple(0x77, 0, 1));
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    run();
    CHECK_EQ(npk_sim_irq(S, NPK_V0_IRQ_NPU), 1); /* unsupported_op & mask */
    wr(NPK_V0_REG_IRQ_MASK, NPK_V0_IRQ_DONE);
    CHECK_EQ(npk_sim_irq(S, NPK_V0_IRQ_NPU), 0); /* error bits masked out */
    wr(NPK_V0_REG_IRQ_MASK, NPK_V0_IRQ_UNSUPPORTED | NPK_V0_IRQ_DONE);
    CHECK_EQ(npk_sim_irq(S, NPK_V0_IRQ_NPU), 1);
    /* "Software clears interrupts by writing 1 to the corresponding IRQ_STATUS bit" */
    wr(NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_UNSUPPORTED);
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), NPK_V0_IRQ_ERROR);
    CHECK_EQ(npk_sim_irq(S, NPK_V0_IRQ_NPU), 0);
}

/* ---- CPU fallback contract ------------------------------------------------------ */
static void test_fallback_counting(void) {
    /* "3. Increments PERF_FALLBACKS" once per descriptor; "1. Does not consume
     * the descriptor on Gemmini": an unsupported matmul (no signed_input)
     * retired by the CPU adds no MACs. */
    open_dev(8, NPK_V0_CTRL_ENABLE | NPK_V0_CTRL_FALLBACK);
    put(0, npk_v0_desc_simple(NPK_V0_OP_FALLBACK, 0, 0xA));
    put(1, npk_v0_desc_matmul(0, 0, 16, 16, 16, DATA, 16, DATA + 0x1000, 16, DATA + 0x2000, 64, 0xB));
    put(2, npk_v0_desc_simple(NPK_V0_OP_BARRIER, 0, 0xC));
    wr(NPK_V0_REG_DESC_DOORBELL, 3);
    run();
    CHECK_EQ(rd(NPK_V0_REG_PERF_FALLBACKS), 1);
    CHECK_EQ(rd(NPK_V0_REG_ERR_DESC_INDEX), 0);
    /* c. clear IRQ_STATUS.unsupported_op and STATUS.error; d. advance DESC_TAIL */
    wr(NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_UNSUPPORTED | NPK_V0_IRQ_ERROR);
    wr(NPK_V0_REG_DESC_TAIL, 1);
    run();
    CHECK_EQ(rd(NPK_V0_REG_PERF_FALLBACKS), 2);
    CHECK_EQ(rd(NPK_V0_REG_ERR_DESC_INDEX), 1);
    CHECK_EQ(npk_v0_st_errcode(status()), NPK_V0_ERR_FLAGS); /* "missing flag" -> 0x03 */
    wr(NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_UNSUPPORTED | NPK_V0_IRQ_ERROR);
    wr(NPK_V0_REG_DESC_TAIL, 2);
    run();
    /* "0xFE BARRIER drains in-flight ops before retiring": it retires, tag 0xC */
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 3);
    CHECK_EQ(rd(NPK_V0_REG_COMPLETION_TAG), 0xC);
    CHECK_EQ(rd(NPK_V0_REG_PERF_MACS_LO), 0);
    CHECK_EQ(rd(NPK_V0_REG_PERF_FALLBACKS), 2);
}

/* ---- numerics ---------------------------------------------------------------------- */
static void test_matmul_int32(void) {
    /* "0x10 MATMUL_S8 C = A * B, INT8 in / INT32 out"; notes: int32 sum of
     * A[i][k] * B[k][j]. M = N = 2, K = 16:
     *   A row 0 = -128 x16, row 1 = 127 x16; B column 0 = -128, column 1 = 1.
     *   C[0][0] = 16 * 16384 = 262144      C[0][1] = 16 * -128 = -2048
     *   C[1][0] = 16 * -16256 = -260096    C[1][1] = 16 * 127 = 2032 */
    for (int relu = 0; relu < 2; relu++) {
        open_dev(8, NPK_V0_CTRL_ENABLE);
        fill(DATA, -128, 16);
        fill(DATA + 16, 127, 16);
        for (int k = 0; k < 16; k++) {
            int8_t row[2] = {-128, 1};
            npk_mem_poke(M, DATA + 0x1000 + 16ull * k, row, 2);
        }
        put(0, npk_v0_desc_matmul(relu, NPK_V0_F_SIGNED, 2, 2, 16, DATA, 16, DATA + 0x1000, 16, DATA + 0x2000, 16, 1));
        wr(NPK_V0_REG_DESC_DOORBELL, 1);
        run();
        CHECK_EQ(status() & NPK_V0_ST_ERROR, 0);
        /* "0x11 MATMUL_S8_RELU C = relu(A * B)": negatives become 0 */
        CHECK_EQ(peek_i32(DATA + 0x2000), 262144);
        CHECK_EQ(peek_i32(DATA + 0x2004), relu ? 0 : -2048);
        CHECK_EQ(peek_i32(DATA + 0x2010), relu ? 0 : -260096);
        CHECK_EQ(peek_i32(DATA + 0x2014), 2032);
        /* "0x044 PERF_MACS retired MAC count": 2 * 2 * 16 = 64 */
        CHECK_EQ(rd(NPK_V0_REG_PERF_MACS_LO), 64);
    }
}

static void test_conv_saturation(void) {
    /* notes: int8 output = round_half_even(float32(x) * 1.0) clamped to
     * [-128, 127], then ReLU. 1x1 conv, H = 1, W = 3, C_in = 16, C_out = 2;
     * weights column 0 = 127, column 1 = -1.
     *   pixel 0 = 127 x16:  ch0 16*127*127 = 258064 -> 127,  ch1 -2032 -> -128
     *   pixel 1 = -128 x16: ch0 16*-16256 = -260096 -> -128, ch1 2048 -> 127
     *   pixel 2 = 3, 0 x15: ch0 381 -> 127,                  ch1 -3 (in range)
     * _RELU: negatives -> 0. */
    const int8_t want[2][6] = {{127, -128, -128, 127, 127, -3}, {127, 0, 0, 127, 127, 0}};
    for (int relu = 0; relu < 2; relu++) {
        open_dev(8, NPK_V0_CTRL_ENABLE);
        fill(DATA, 127, 16);
        fill(DATA + 16, -128, 16);
        fill(DATA + 32, 0, 16);
        fill(DATA + 32, 3, 1);
        for (int k = 0; k < 16; k++) {
            int8_t row[2] = {127, -1};
            npk_mem_poke(M, DATA + 0x1000 + 16ull * k, row, 2);
        }
        fill(DATA + 0x2000, POISON, 16);
        npk_v0_conv cv = {1, 3, 16, 2, 1, 1, 1, 0, 0, 1};
        put(0, npk_v0_desc_conv(relu, NPK_V0_F_SIGNED, &cv, DATA, 48, DATA + 0x1000, 16, DATA + 0x2000, 16, 1));
        wr(NPK_V0_REG_DESC_DOORBELL, 1);
        run();
        CHECK_EQ(status() & NPK_V0_ST_ERROR, 0);
        for (int i = 0; i < 6; i++) CHECK_EQ(peek_i8(DATA + 0x2000 + i), want[relu][i]);
        CHECK_EQ(peek_i8(DATA + 0x2006), POISON); /* OW * C_out = 6 bytes, no more */
        /* PERF_MACS: OH*OW*C_out*K*K*C_in = 1*3*2*1*1*16 = 96 */
        CHECK_EQ(rd(NPK_V0_REG_PERF_MACS_LO), 96);
    }
}

static void test_conv_geometry(void) {
    /* notes: "Output size = (in + 2*pad - dil*(k-1) - 1) / stride + 1";
     * "symmetric zero padding; stride; kernel dilation".
     * H = W = 8, C_in = C_out = 1, k = 3, dilation 2, pad 1, stride 2:
     * OH = OW = (8 + 2 - 4 - 1) / 2 + 1 = 3. Input all 1, weights all 1: an
     * output is the number of taps inside the image. Taps of output y are
     * rows 2y - 1 + 2ky: y = 0 -> {-1, 1, 3} (2 inside), y = 1, 2 -> 3 inside.
     * out[y][x] = inside(y) * inside(x): [[4,6,6],[6,9,9],[6,9,9]]. */
    const int8_t want[3][3] = {{4, 6, 6}, {6, 9, 9}, {6, 9, 9}};
    npk_v0_conv cv = {8, 8, 1, 1, 3, 2, 2, 1, 1, 2};
    uint32_t oh, ow;
    CHECK_EQ(npk_v0_conv_out(&cv, &oh, &ow), 0);
    CHECK_EQ(oh, 3);
    CHECK_EQ(ow, 3);
    open_dev(8, NPK_V0_CTRL_ENABLE);
    for (int y = 0; y < 8; y++) fill(DATA + 16ull * y, 1, 8);
    for (int k = 0; k < 9; k++) fill(DATA + 0x1000 + 16ull * k, 1, 1);
    fill(DATA + 0x2000, POISON, 64);
    put(0, npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &cv, DATA, 16, DATA + 0x1000, 16, DATA + 0x2000, 16, 1));
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    run();
    CHECK_EQ(status() & NPK_V0_ST_ERROR, 0);
    for (int y = 0; y < 3; y++) {
        for (int x = 0; x < 3; x++) CHECK_EQ(peek_i8(DATA + 0x2000 + 16ull * y + x), want[y][x]);
        CHECK_EQ(peek_i8(DATA + 0x2000 + 16ull * y + 3), POISON); /* OW = 3 */
    }
    CHECK_EQ(peek_i8(DATA + 0x2000 + 48), POISON); /* OH = 3 */
    /* PERF_MACS (padding taps included, docs/v0.md): 3*3*1*3*3*1 = 81 */
    CHECK_EQ(rd(NPK_V0_REG_PERF_MACS_LO), 81);
}

static void test_maxpool(void) {
    /* notes: "window positions outside the conv output count as 0";
     * "Standalone MAXPOOL_S8 uses the same rule with no padding unless a pad
     * is given". Input 3x3x1 all -5 except the centre -1.
     * (a) window 2x2, stride 1, pad 1: OH = (3 + 2 - 2)/1 + 1 = 4; a window
     *     touching the padding gives max(.., 0) = 0; the four fully inside
     *     windows (y, x in 1..2) all contain the centre: -1. */
    open_dev(8, NPK_V0_CTRL_ENABLE);
    for (int y = 0; y < 3; y++) fill(DATA + 16ull * y, -5, 3);
    fill(DATA + 16 + 1, -1, 1);
    npk_v0_pool p = {3, 3, 1, 2, 2, 1, 1};
    put(0, npk_v0_desc_maxpool(NPK_V0_F_SIGNED, &p, DATA, 16, DATA + 0x1000, 16, 1));
    /* (b) no pad: OH = (3 - 2)/1 + 1 = 2, every window contains the centre:
     *     -1 (negative results are not clamped without padding or ReLU) */
    npk_v0_pool q = {3, 3, 1, 2, 2, 1, 0};
    put(1, npk_v0_desc_maxpool(NPK_V0_F_SIGNED, &q, DATA, 16, DATA + 0x2000, 16, 2));
    /* (c) 3x3 window stride 2 over 5x5 v[y][x] = 5y + x - 12: OH = (5-3)/2+1 = 2;
     *     each max is the window's bottom-right: v[2][2] = 0, v[2][4] = 2,
     *     v[4][2] = 10, v[4][4] = 12 */
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 5; x++) fill(DATA + 0x3000 + 16ull * y + x, (int8_t)(5 * y + x - 12), 1);
    npk_v0_pool r = {5, 5, 1, 3, 3, 2, 0};
    put(2, npk_v0_desc_maxpool(NPK_V0_F_SIGNED, &r, DATA + 0x3000, 16, DATA + 0x4000, 16, 3));
    wr(NPK_V0_REG_DESC_DOORBELL, 3);
    run();
    CHECK_EQ(status() & NPK_V0_ST_ERROR, 0);
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 3);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) {
            int inside = y >= 1 && y <= 2 && x >= 1 && x <= 2;
            CHECK_EQ(peek_i8(DATA + 0x1000 + 16ull * y + x), inside ? -1 : 0);
        }
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 2; x++) CHECK_EQ(peek_i8(DATA + 0x2000 + 16ull * y + x), -1);
    CHECK_EQ(peek_i8(DATA + 0x4000), 0);
    CHECK_EQ(peek_i8(DATA + 0x4001), 2);
    CHECK_EQ(peek_i8(DATA + 0x4010), 10);
    CHECK_EQ(peek_i8(DATA + 0x4011), 12);
    /* MAXPOOL retires no array MACs */
    CHECK_EQ(rd(NPK_V0_REG_PERF_MACS_LO), 0);
}

static void test_relu(void) {
    /* "0x30 RELU elementwise INT8 ReLU": max(0, x). 2 rows of 3 bytes. */
    const int8_t in[2][3] = {{-128, -1, 0}, {1, 127, -7}}, want[2][3] = {{0, 0, 0}, {1, 127, 0}};
    open_dev(8, NPK_V0_CTRL_ENABLE);
    npk_mem_poke(M, DATA, in[0], 3);
    npk_mem_poke(M, DATA + 16, in[1], 3);
    fill(DATA + 0x1000, POISON, 32);
    put(0, npk_v0_desc_relu(NPK_V0_F_SIGNED, 2, 3, DATA, 16, DATA + 0x1000, 16, 1));
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    run();
    CHECK_EQ(status() & NPK_V0_ST_ERROR, 0);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) CHECK_EQ(peek_i8(DATA + 0x1000 + 16ull * i + j), want[i][j]);
    CHECK_EQ(peek_i8(DATA + 0x1003), POISON);
}

/* ---- validated envelope: "Anything outside this envelope must surface as
 * unsupported_op" (err 0x02 "shape out of range"); the limits themselves run. */
static void test_envelope(void) {
    npk_v0_conv cv;
    npk_v0_pool pl;
    /* "Matmul K <= 1024": K = 1024 runs, K = 1025 does not */
    CHECK_EQ(run_one(npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 1, 1, 1024, DATA, 1024, DATA + 0x10000, 16,
                                        DATA + 0x20000, 16, 1)), 0);
    CHECK_EQ(run_one(npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 1, 1, 1025, DATA, 1040, DATA + 0x10000, 16,
                                        DATA + 0x20000, 16, 1)), NPK_V0_ERR_SHAPE);
    /* "Matmul M, N <= 1024": M = 1024 runs, N = 1025 does not */
    CHECK_EQ(run_one(npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 1024, 1, 1, DATA, 16, DATA + 0x10000, 16,
                                        DATA + 0x20000, 16, 1)), 0);
    CHECK_EQ(run_one(npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 1, 1025, 1, DATA, 16, DATA + 0x10000, 1040,
                                        DATA + 0x20000, 4112, 1)), NPK_V0_ERR_SHAPE);
    /* "Conv2D H, W <= 256": H = 256 runs, W = 257 does not */
    cv = (npk_v0_conv){256, 1, 1, 1, 1, 1, 1, 0, 0, 1};
    CHECK_EQ(run_one(npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &cv, DATA, 16, DATA + 0x10000, 16, DATA + 0x20000, 16, 1)), 0);
    cv = (npk_v0_conv){1, 257, 1, 1, 1, 1, 1, 0, 0, 1};
    CHECK_EQ(run_one(npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &cv, DATA, 272, DATA + 0x10000, 16, DATA + 0x20000, 272, 1)),
             NPK_V0_ERR_SHAPE);
    /* "Conv2D C_in, C_out <= 512": C_out = 512 runs, 513 does not */
    cv = (npk_v0_conv){1, 1, 1, 512, 1, 1, 1, 0, 0, 1};
    CHECK_EQ(run_one(npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &cv, DATA, 16, DATA + 0x10000, 512, DATA + 0x20000, 512, 1)), 0);
    cv.cout = 513;
    CHECK_EQ(run_one(npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &cv, DATA, 16, DATA + 0x10000, 528, DATA + 0x20000, 528, 1)),
             NPK_V0_ERR_SHAPE);
    /* "Conv2D kernel 1x1, 3x3, 5x5": 5 runs, 2 does not */
    cv = (npk_v0_conv){5, 5, 1, 1, 5, 1, 1, 0, 0, 1};
    CHECK_EQ(run_one(npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &cv, DATA, 16, DATA + 0x10000, 16, DATA + 0x20000, 16, 1)), 0);
    cv.ksize = 2;
    CHECK_EQ(run_one(npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &cv, DATA, 16, DATA + 0x10000, 16, DATA + 0x20000, 16, 1)),
             NPK_V0_ERR_SHAPE);
    /* "Pool window 2x2 or 3x3": 3x3 runs; 2x3 and 3x2 are neither */
    pl = (npk_v0_pool){6, 6, 1, 3, 3, 1, 0};
    CHECK_EQ(run_one(npk_v0_desc_maxpool(NPK_V0_F_SIGNED, &pl, DATA, 16, DATA + 0x20000, 16, 1)), 0);
    pl = (npk_v0_pool){6, 6, 1, 2, 3, 1, 0};
    CHECK_EQ(run_one(npk_v0_desc_maxpool(NPK_V0_F_SIGNED, &pl, DATA, 16, DATA + 0x20000, 16, 1)), NPK_V0_ERR_SHAPE);
    pl = (npk_v0_pool){6, 6, 1, 3, 2, 1, 0};
    CHECK_EQ(run_one(npk_v0_desc_maxpool(NPK_V0_F_SIGNED, &pl, DATA, 16, DATA + 0x20000, 16, 1)), NPK_V0_ERR_SHAPE);
    /* the 2x3 case above raised unsupported_op and counted a fallback */
    pl = (npk_v0_pool){6, 6, 1, 2, 3, 1, 0};
    run_one(npk_v0_desc_maxpool(NPK_V0_F_SIGNED, &pl, DATA, 16, DATA + 0x20000, 16, 1));
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), NPK_V0_IRQ_ERROR | NPK_V0_IRQ_UNSUPPORTED);
    CHECK_EQ(rd(NPK_V0_REG_PERF_FALLBACKS), 1);
    /* op table "MAXPOOL_S8 ... stride 1 or 2": stride 3 does not run */
    pl = (npk_v0_pool){6, 6, 1, 2, 2, 3, 0};
    CHECK_EQ(run_one(npk_v0_desc_maxpool(NPK_V0_F_SIGNED, &pl, DATA, 16, DATA + 0x20000, 16, 1)), NPK_V0_ERR_SHAPE);
}

/* ---- tensor ABI: alignment and the TENSOR_MEM window ----------------------- */
static void test_alignment_window(void) {
    /* "A/B/C base addresses must be 16-byte aligned" -> 0x04: B misaligned */
    CHECK_EQ(run_one(npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 4, 4, 4, DATA, 16, DATA + 0x1008, 16, DATA + 0x2000, 16, 1)),
             NPK_V0_ERR_ALIGN);
    /* C misaligned */
    CHECK_EQ(run_one(npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 4, 4, 4, DATA, 16, DATA + 0x1000, 16, DATA + 0x2004, 16, 1)),
             NPK_V0_ERR_ALIGN);
    /* "Strides must be multiples of 16 bytes": C stride 72 (>= 4*N = 64) */
    CHECK_EQ(run_one(npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 4, 16, 4, DATA, 16, DATA + 0x1000, 16, DATA + 0x2000, 72, 1)),
             NPK_V0_ERR_ALIGN);
    /* "Outside this window, accesses are blocked at the wrapper and surface
     * as bus_error" (err 0x05): B above 4 GiB, window [DATA, DATA + 1 MiB) */
    open_dev(8, NPK_V0_CTRL_ENABLE);
    wr(NPK_V0_REG_TENSOR_MEM_BASE_LO, (uint32_t)DATA);
    wr(NPK_V0_REG_TENSOR_MEM_LEN, 0x100000);
    const uint64_t far = 0x100000000ull + 0x40;
    put(0, npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 4, 4, 4, DATA, 16, far, 16, DATA + 0x2000, 16, 1));
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    run();
    CHECK_EQ(npk_v0_st_errcode(status()), NPK_V0_ERR_WINDOW);
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), NPK_V0_IRQ_ERROR | NPK_V0_IRQ_BUS_ERROR);
    /* "ERR_FAULT_ADDR_LO bus address of last bus_error, ERR_FAULT_ADDR_HI high 32 bits" */
    CHECK_EQ(rd(NPK_V0_REG_ERR_FAULT_ADDR_LO), 0x40);
    CHECK_EQ(rd(NPK_V0_REG_ERR_FAULT_ADDR_HI), 1);
    /* "flush is required to recover from bus_error": W1C is not enough */
    wr(NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_ALL);
    CHECK(status() & NPK_V0_ST_ERROR);
    /* "CTRL.flush == 1 ... drops the descriptor ring back to empty and resets STATUS/ERR_*" */
    wr(NPK_V0_REG_CTRL, NPK_V0_CTRL_ENABLE | NPK_V0_CTRL_FLUSH);
    CHECK_EQ(status(), NPK_V0_ST_QUEUE_EMPTY);
    CHECK_EQ(rd(NPK_V0_REG_ERR_FAULT_ADDR_LO), 0);
    CHECK_EQ(rd(NPK_V0_REG_ERR_FAULT_ADDR_HI), 0);
    CHECK_EQ(rd(NPK_V0_REG_ERR_DESC_INDEX), 0);
}

int main(void) {
    test_access_types();
    test_status_layout();
    test_ring_length_frozen();
    test_irq_line_is_masked_or();
    test_fallback_counting();
    test_matmul_int32();
    test_conv_saturation();
    test_conv_geometry();
    test_maxpool();
    test_relu();
    test_envelope();
    test_alignment_window();
    npk_sim_free(S);
    return CHECK_DONE();
}
