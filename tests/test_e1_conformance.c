// SPDX-License-Identifier: MIT
/* e1 conformance review: statements of shared/spec/e1-npu.md and
 * e1-rtl-notes.md that the other e1 tests (test_e1_model*.c, test_e1_driver.c)
 * did not pin down, one CHECK per statement. Every expected value is derived by
 * hand from the quoted sentence (the arithmetic is spelled out in the comment),
 * never taken from the model's output. */
#include "test_e1_model_util.h"

#define RING 0x1000u
#define SRC 0x2000u
#define DST 0x3000u

static void put_desc(unsigned slot, uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3) {
    poke32(RING + 16 * slot, w0);
    poke32(RING + 16 * slot + 4, w1);
    poke32(RING + 16 * slot + 8, w2);
    poke32(RING + 16 * slot + 12, w3);
}

static void doorbell(unsigned tail, unsigned head, uint32_t cmd_param) {
    wr(E1_REG_DESC_BASE, RING);
    wr(E1_REG_DESC_TAIL, tail);
    wr(E1_REG_DESC_HEAD, head);
    wr(E1_REG_CMD_PARAM, cmd_param);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
}

/* Direct scalar command: program, start, step `lat` cycles. */
static void scalar(unsigned op, uint32_t a, uint32_t b, uint32_t acc, int ternary, unsigned lat) {
    wr(E1_REG_OP_A, a);
    wr(E1_REG_OP_B, b);
    wr(E1_REG_ACC, acc);
    wr(E1_REG_OPCODE, op);
    wr(E1_REG_CMD_PARAM, ternary ? E1_CMD_TERNARY : 0);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(lat);
}

/* notes, Bus: "Reads have no side effects." */
static void test_reads_have_no_side_effects(void) {
    sim_open();
    scalar(E1_OP_ADD, 40, 2, 0, 0, 1);
    /* reading CTRL_STATUS does not clear done: it reads 2 (done) every time */
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    CHECK_EQ(npk_sim_irq(S, 0), 1);
    /* reading PERF_THERMAL_THROTTLE does not count (only writes add 1) */
    CHECK_EQ(rd(E1_REG_PERF_THERMAL_THROTTLE), 0);
    CHECK_EQ(rd(E1_REG_PERF_THERMAL_THROTTLE), 0);
    /* reading PERF_ERRORS (the perf-clear register) clears nothing: PERF_OPS stays 1 */
    (void)rd(E1_REG_PERF_ERRORS);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 1);
    /* reading SEC_LOCK does not lock: SEC_STATUS keeps the reset value 0x400 */
    (void)rd(E1_REG_SEC_LOCK);
    CHECK_EQ(rd(E1_REG_SEC_STATUS), 0x400);
}

/* Hand-computed scalar results (notes "Scalar results", document opcode table). */
static void test_scalar_hand_values(void) {
    sim_open();
    /* "MUL_LO: full unsigned 64-bit product in {HI, LO}": 0x12345678 * 0x100 = 0x12_3456_7800 */
    scalar(E1_OP_MUL_LO, 0x12345678u, 0x100u, 0, 0, 2);
    CHECK_EQ(rd(E1_REG_RESULT), 0x34567800u);
    CHECK_EQ(rd(E1_REG_RESULT_HI), 0x12u);
    /* "MAC_S16 signed low-16 multiply plus signed ACC": s16(0xfffe) = -2, s16(0x0003) = 3,
     * the high halves 0xabcd / 0x1234 are ignored: -6 + 10 = 4 */
    scalar(E1_OP_MAC_S16, 0xabcdfffeu, 0x12340003u, 10, 0, 2);
    CHECK_EQ(rd(E1_REG_RESULT), 4u);
    /* "DOT4_S8 four packed signed INT8 products plus signed ACC": A lanes 1, -1, -128, 127,
     * B lanes 2: 2 - 2 - 256 + 254 = -2, + ACC 5 = 3 */
    scalar(E1_OP_DOT4_S8, 0x7f80ff01u, 0x02020202u, 5, 0, 3);
    CHECK_EQ(rd(E1_REG_RESULT), 3u);
    /* "MAX_U32 unsigned max": 0x80000000 > 1 unsigned */
    scalar(E1_OP_MAX_U32, 0x80000000u, 1, 0, 0, 1);
    CHECK_EQ(rd(E1_REG_RESULT), 0x80000000u);
    /* "MIN_U32 unsigned min" */
    scalar(E1_OP_MIN_U32, 0x80000000u, 1, 0, 0, 1);
    CHECK_EQ(rd(E1_REG_RESULT), 1u);
    /* "DOT8_S4 eight packed signed INT4 products plus signed ACC": A nibbles 7, -8;
     * B nibbles -1, -1: -7 + 8 = 1, + ACC -1 = 0 */
    scalar(E1_OP_DOT8_S4, 0x00000087u, 0x000000ffu, 0xffffffffu, 0, 3);
    CHECK_EQ(rd(E1_REG_RESULT), 0u);
    /* "RELU4_S8: per byte, negative -> 0": bytes 01, 80, 7f, ff -> 01, 00, 7f, 00 */
    scalar(E1_OP_RELU4_S8, 0xff7f8001u, 0, 0, 0, 1);
    CHECK_EQ(rd(E1_REG_RESULT), 0x007f0001u);
    /* "SDOT4_S4_2_4: sum over i of s4(A lane i) * s4(B lane (i/2)*4 + pos_i), pos_i =
     * ACC[2i+1:2i]. ACC is not added": A lanes 7,7,7,7; B lane 0 = 1, lane 7 = 1, others 0;
     * ACC[7:0] = 0x3c -> positions 0, 3, 3, 0 -> B lanes 0, 3, 7, 4 = 1, 0, 1, 0: 7 + 7 = 14 */
    scalar(E1_OP_SDOT4_S4_2_4, 0x7777u, 0x10000001u, 0x1234563cu, 0, 3);
    CHECK_EQ(rd(E1_REG_RESULT), 14u);
    /* "DOT16_S2 ... two's-complement range [-2, 1]": lane 0 of A and B = 0b10 = -2: 4 */
    scalar(E1_OP_DOT16_S2, 0x2u, 0x2u, 0, 0, 3);
    CHECK_EQ(rd(E1_REG_RESULT), 4u);
    /* sixteen lanes of -1 (0b11) times +1 (0b01) = -16, + ACC 16 = 0 */
    scalar(E1_OP_DOT16_S2, 0xffffffffu, 0x55555555u, 16, 0, 3);
    CHECK_EQ(rd(E1_REG_RESULT), 0u);
    /* "ternary decode ... 0b10 = -1, 0b01 = +1": -1 * +1 = -1; RESULT_HI = sign extension */
    scalar(E1_OP_DOT16_S2, 0x2u, 0x1u, 0, 1, 3);
    CHECK_EQ(rd(E1_REG_RESULT), 0xffffffffu);
    CHECK_EQ(rd(E1_REG_RESULT_HI), 0xffffffffu);
    /* "DOT4_FP8_E4M3: q(x) = sign * (e=0: m>>1; e=1: (8+m)>>1; e>=2: (8+m)<<(e-2)) ... arithmetic
     * >> 8": 0x0a = e1 m2 -> 5; 0xb0 = -(e6 m0) -> -(8<<4) = -128; 5 * -128 = -640;
     * -640 >> 8 (arithmetic, i.e. floor(-2.5)) = -3 */
    scalar(E1_OP_DOT4_FP8_E4M3, 0x0au, 0xb0u, 0, 0, 3);
    CHECK_EQ(rd(E1_REG_RESULT), 0xfffffffdu);
    /* e = 0 lane: 0x07 -> 7 >> 1 = 3; 0x40 = e8 m0 -> 8 << 6 = 512; 3 * 512 >> 8 = 6; + ACC 0x100 = 262 */
    scalar(E1_OP_DOT4_FP8_E4M3, 0x07u, 0x40u, 0x100u, 0, 3);
    CHECK_EQ(rd(E1_REG_RESULT), 262u);
    /* "EXP2_NEG_Q0_8: 256 >> min(8, max(0, -s8(OP_A[7:0])))": s8(0xf9) = -7 -> 256 >> 7 = 2 */
    scalar(E1_OP_EXP2_NEG_Q0_8, 0xf9u, 0, 0, 0, 2);
    CHECK_EQ(rd(E1_REG_RESULT), 2u);
    /* "positive delta gives 256": s8(0x01) = 1 */
    scalar(E1_OP_EXP2_NEG_Q0_8, 0x01u, 0, 0, 0, 2);
    CHECK_EQ(rd(E1_REG_RESULT), 256u);
    /* s8(0x81) = -127 -> shift min(8, 127) = 8 -> 1 */
    scalar(E1_OP_EXP2_NEG_Q0_8, 0x81u, 0, 0, 0, 2);
    CHECK_EQ(rd(E1_REG_RESULT), 1u);
    /* "Other opcodes ignore CMD_PARAM[1]": MAC_S16 with ternary set, 0xffff * 0xffff = (-1)(-1) = 1 */
    scalar(E1_OP_MAC_S16, 0xffffu, 0xffffu, 0, 1, 2);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
}

/* document: "GEMM_S4 stores two signed INT4 values per byte, low nibble first; for this
 * opcode the A and B base/stride fields are INT4 element offsets while the C base/stride
 * fields remain byte offsets." */
static void test_gemm_s4_hand(void) {
    sim_open();
    /* A (1x2) = [-3, 2] at nibbles 0,1 -> byte 0 = 0x2d.
     * B (2x2) = [[1, -8], [7, 4]] at nibble 4, row stride 2 nibbles -> nibbles 4..7 =
     * 1, 8, 7, 4 -> byte 2 = 0x81, byte 3 = 0x47. C at byte 8.
     * C = [-3*1 + 2*7, -3*-8 + 2*4] = [11, 32] */
    wr(E1_REG_SCRATCH(0), 0x4781002du);
    wr(E1_REG_GEMM_CFG, e1_gemm_cfg(1, 2, 2));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 4, 8));
    wr(E1_REG_GEMM_STRIDE, e1_gemm_stride(0, 2, 0));
    wr(E1_REG_OPCODE, E1_OP_GEMM_S4);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    /* notes: "GEMM: M*N*K cycles" = 1*2*2 = 4 */
    step(3);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 1);
    step(1);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    CHECK_EQ(rd(E1_REG_SCRATCH(2)), 11u);
    CHECK_EQ(rd(E1_REG_SCRATCH(3)), 32u);
    /* notes: "PERF_SCRATCH_BYTES +2 per MAC step and +6 on the last step of each cell
     * (2K+4 per cell)": 2 cells * (2*2 + 4) = 16 */
    CHECK_EQ(rd(E1_REG_PERF_SCRATCH_BYTES), 16u);
    /* notes: "PERF_MACS +1 per GEMM cycle" */
    CHECK_EQ(rd(E1_REG_PERF_MACS), 4u);
}

/* notes: "VRELU_S8: dst[i] = relu(src[i]) for i in 0..LEN-1, forward order (overlap behaves
 * like forward memcpy)". */
static void test_vrelu_forward_overlap(void) {
    sim_open();
    /* bytes [5, 0x90, 7, 9]; LEN 3, SRC 0, DST 1: byte1 = relu(5) = 5, then byte2 = relu(byte1)
     * = 5, then byte3 = relu(byte2) = 5 */
    wr(E1_REG_SCRATCH(0), 0x09079005u);
    wr(E1_REG_GEMM_CFG, e1_vrelu_cfg(3));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 1, 0));
    wr(E1_REG_OPCODE, E1_OP_VRELU_S8);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(3);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    CHECK_EQ(rd(E1_REG_SCRATCH(0)), 0x05050505u);
    /* "PERF_CYCLES +LEN, SCRATCH_BYTES +2/byte" */
    CHECK_EQ(rd(E1_REG_PERF_CYCLES), 3u);
    CHECK_EQ(rd(E1_REG_PERF_SCRATCH_BYTES), 6u);
    /* "valid if ... DST+LEN <= 64": DST 63 + LEN 2 = 65 is rejected at start (status 6) */
    wr(E1_REG_GEMM_CFG, e1_vrelu_cfg(2));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 63, 0));
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
}

/* notes: "GEMM_CFG/BASE/STRIDE are read live every cycle while an operation runs (not
 * latched)" -- VRELU's LEN/SRC/DST live in GEMM_CFG/GEMM_BASE too; and "PERF_UNSUPPORTED:
 * the same [as PERF_ERRORS] except runtime aborts". */
static void test_vrelu_live_config(void) {
    uint8_t sp[64];
    /* a DST rewrite mid-run is followed: bytes 2 and 3 land at the new base 40 + i */
    sim_open();
    for (int i = 0; i < 64; i++) sp[i] = (uint8_t)(i + 1); /* all positive: relu = copy */
    scratch_load(sp);
    wr(E1_REG_GEMM_CFG, e1_vrelu_cfg(4));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 32, 0));
    wr(E1_REG_OPCODE, E1_OP_VRELU_S8);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(2); /* bytes 32, 33 <- 1, 2 */
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 40, 0));
    step(2); /* bytes 42, 43 <- 3, 4 */
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    /* word 8 = bytes 32..35 = 1, 2, then the untouched 35, 36 (byte i holds i + 1) */
    CHECK_EQ(rd(E1_REG_SCRATCH(8)), 0x24230201u);
    /* word 10 = bytes 40..43 = untouched 41, 42, then 3, 4 (= relu of bytes 2, 3) */
    CHECK_EQ(rd(E1_REG_SCRATCH(10)), 0x04032a29u);

    /* a LEN rewrite to 0 mid-run aborts: status 6, PERF_ERRORS +1, PERF_UNSUPPORTED unchanged */
    sim_open();
    scratch_load(sp);
    wr(E1_REG_GEMM_CFG, e1_vrelu_cfg(10));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 32, 0));
    wr(E1_REG_OPCODE, E1_OP_VRELU_S8);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(3); /* bytes 32..34 written */
    wr(E1_REG_GEMM_CFG, 0);
    step(1);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 1);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 0);
    /* bytes 32..34 = 1, 2, 3; byte 35 keeps its old value 36 (0x24) */
    CHECK_EQ(rd(E1_REG_SCRATCH(8)), 0x24030201u);
    CHECK(npk_sim_dev(S)->ops->idle(npk_sim_dev(S)));
}

/* notes, Descriptor engine: "w1: stream source and OP_A. w2: OP_B and writeback destination.
 * w3: ACC." -- with stream set, the scalar op that follows sees the source address as OP_A. */
static void test_streamed_scalar_operands(void) {
    sim_open();
    poke32(SRC, 0xdeadbeefu);
    put_desc(0, e1_desc_w0(E1_OP_ADD, 1, 4, 4, 0), SRC, 5, 0);
    doorbell(0, 1, E1_CMD_DESC);
    /* cost: fetch 4*2 + launch 1 + one stream beat 2 + launch 1 + ADD 1 + advance 1 = 14 */
    CHECK_EQ(run_done(200), 14);
    /* OP_A = w1 = 0x2000, OP_B = w2 = 5 */
    CHECK_EQ(rd(E1_REG_RESULT), SRC + 5);
    /* "The stream path ... writes into the 64-byte scratchpad": offset 4 = SCRATCH[1] */
    CHECK_EQ(rd(E1_REG_SCRATCH(1)), 0xdeadbeefu);
    /* "DESC_BYTES_READ ... descriptor plus tensor-stream bytes": 16 + 4 */
    CHECK_EQ(rd(E1_REG_DESC_BYTES_READ), 20u);
    /* "PERF_SCRATCH_BYTES also +4 per stream beat" */
    CHECK_EQ(rd(E1_REG_PERF_SCRATCH_BYTES), 4u);
}

/* notes: "writeback copies M*N contiguous words from C_BASE (C_STRIDE ignored)"; and the
 * writeback check "needs GEMM opcode, aligned w2, C_BASE + M*N*4 <= 64" (no stream needed). */
static void test_writeback_ignores_c_stride(void) {
    sim_open();
    /* A (2x1) = [1, 2] at 0 (stride 1); B (1x2) = [3, 4] at 4; C at 16 with stride 12:
     * C(0,0)=3 at 16, C(0,1)=4 at 20, C(1,0)=6 at 28, C(1,1)=8 at 32. Word 6 (byte 24) is a
     * gap the GEMM does not write. */
    wr(E1_REG_SCRATCH(0), 0x00000201u);
    wr(E1_REG_SCRATCH(1), 0x00000403u);
    wr(E1_REG_SCRATCH(6), 0x11111111u);
    wr(E1_REG_GEMM_CFG, e1_gemm_cfg(2, 2, 1));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 4, 16));
    wr(E1_REG_GEMM_STRIDE, e1_gemm_stride(1, 0, 12));
    for (int i = 0; i < 5; i++) poke32(DST + 4 * i, 0xaaaaaaaau);
    put_desc(0, e1_desc_w0(E1_OP_GEMM_S8, 0, 0, 0, 1), 0, DST, 0);
    doorbell(0, 1, E1_CMD_DESC);
    /* cost: fetch 8 + launch 1 + GEMM 4 + writeback 4*2 + advance 1 = 22 */
    CHECK_EQ(run_done(200), 22);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x2u);
    /* the four words from byte 16: 3, 4, the gap word, then C(1,0) = 6; C(1,1) is not copied */
    CHECK_EQ(peek32(DST), 3u);
    CHECK_EQ(peek32(DST + 4), 4u);
    CHECK_EQ(peek32(DST + 8), 0x11111111u);
    CHECK_EQ(peek32(DST + 12), 6u);
    CHECK_EQ(peek32(DST + 16), 0xaaaaaaaau);
    CHECK_EQ(rd(E1_REG_SCRATCH(8)), 8u); /* the GEMM itself did write C(1,1) */
    /* "DESC_BYTES_WRITTEN/WRITE_BEATS: +4/+1 per OKAY write response" */
    CHECK_EQ(rd(E1_REG_DESC_BYTES_WRITTEN), 16u);
}

/* notes: "owner gate when owned and locked and CMD_PARAM[31:12] != owner" -- locked but
 * not owned: no gate. */
static void test_locked_not_owned_no_gate(void) {
    sim_open();
    wr(E1_REG_SEC_OWNER_CFG, 0x5u); /* owner 5, owned bit clear */
    wr(E1_REG_SEC_LOCK, 1);
    /* SEC_STATUS = 0x400 | lock[3] */
    CHECK_EQ(rd(E1_REG_SEC_STATUS), 0x408u);
    put_desc(0, e1_desc_w0(E1_OP_SUB, 0, 0, 0, 0), 10, 3, 0);
    doorbell(0, 1, e1_cmd_param(1, 0, 0x99)); /* token 0x99 != owner 5 */
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 1);
    CHECK_EQ(run_done(200), 11);
    CHECK_EQ(rd(E1_REG_RESULT), 7u);
}

/* notes: "PERF_OPS: each accepted start and each launched descriptor op; not the doorbell";
 * "PERF_UNSUPPORTED: the same [errors] except runtime aborts and ternary-invalid";
 * "err_index = tail" on a failing doorbell. */
static void test_doorbell_counts(void) {
    sim_open();
    put_desc(5, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 1, 0);
    doorbell(5, 6, E1_CMD_DESC);
    run_done(200);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 1u); /* one descriptor op, the doorbell itself not counted */
    /* failing doorbell (head == tail == 6): err_index = tail 6, code 0x01 */
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x1u | (6u << 9));
    CHECK_EQ(rd(E1_REG_PERF_OPS), 1u);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 1u);
}

/* The driver works around the chip's quirks ("the runtime works around the chip's quirks",
 * spec README). A ternary DOT16 descriptor with a reserved 0b11 lane in OP_A/OP_B is masked by
 * the chip when it is the last one (final status 2, RESULT unchanged: a silent wrong answer).
 * OP_A is w1 and OP_B is w2 even when the descriptor streams (notes: "w1: stream source and
 * OP_A"), so the driver must refuse such descriptors whether or not they stream. */
static void test_driver_quirks(void) {
    npk_port *p = NULL;
    CHECK_EQ(npk_port_open(&p, "sim", "e1", NULL), 0);
    if (!p) return;
    npk_e1 *e = NULL;
    CHECK_EQ(npk_e1_open(&e, p), 0);
    if (e) {
        /* source 0x3000: bits [13:12] = 0b11 -> lane 6 of OP_A is reserved */
        npk_e1_desc d[2] = {npk_e1_desc_scalar(E1_OP_ADD, 1, 2, 0), npk_e1_desc_stream(E1_OP_DOT16_S2, 0x3000, 0, 4, 0)};
        uint64_t before = npk_port_mmio_count(p);
        CHECK_EQ(npk_e1_submit(e, d, 2, NULL, 1, NULL), -NPK_EINVAL);
        CHECK(strstr(npk_errmsg(), "descriptor 1") != NULL);
        CHECK_EQ(npk_port_mmio_count(p), before);
        /* a streamed DOT16 whose w1/w2 decode to valid ternary lanes runs: 0x2000 has lane 6 =
         * 0b10 (-1), the other lanes 0; OP_B = w2 = 0x1000 has lane 6 = 0b01 (+1): -1 */
        npk_e1_desc ok[1] = {npk_e1_desc_stream(E1_OP_DOT16_S2, 0x2000, 0, 4, 0)};
        ok[0].w[2] = 0x1000;
        npk_e1_result r = {0, 0};
        CHECK_EQ(npk_e1_submit(e, ok, 1, NULL, 1, &r), 0);
        CHECK_EQ(r.result, 0xffffffffu);

        /* notes: "writeback copies M*N contiguous words from C_BASE (C_STRIDE ignored)": a
         * 2x2 tile with C_STRIDE 12 (rows 8 bytes apart... with a gap word) would write back
         * the gap word instead of C(1,1), so the driver refuses it before any MMIO */
        npk_e1_tilecfg cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.gemm = (npk_e1_gemm){2, 2, 1, 0, 4, 16, 1, 0, 12};
        npk_e1_desc wb[1] = {npk_e1_desc_stream(E1_OP_GEMM_S8, 0x2000, 0, 8, 0x3000)};
        before = npk_port_mmio_count(p);
        CHECK_EQ(npk_e1_submit(e, wb, 1, &cfg, 0, NULL), -NPK_EINVAL);
        CHECK(strstr(npk_errmsg(), "C_STRIDE must be 4*N") != NULL);
        CHECK_EQ(npk_port_mmio_count(p), before);
        /* with the dense stride 4*N = 8 the same tile is accepted and written back:
         * A = [1, 2] at 0, B = [3, 4] at 4 -> C = [[3, 4], [6, 8]] */
        cfg.gemm.c_stride = 8;
        uint8_t img[8] = {1, 2, 0, 0, 3, 4, 0, 0};
        CHECK_EQ(npk_port_mem_write(p, 0x2000, img, 8), 0);
        CHECK_EQ(npk_e1_submit(e, wb, 1, &cfg, 0, NULL), 0);
        int32_t c[4] = {0, 0, 0, 0};
        CHECK_EQ(npk_port_mem_read(p, 0x3000, c, 16), 0);
        CHECK_EQ(c[0], 3);
        CHECK_EQ(c[1], 4);
        CHECK_EQ(c[2], 6);
        CHECK_EQ(c[3], 8);
        npk_e1_close(e);
    }
    npk_port_close(p);
}

int main(void) {
    test_reads_have_no_side_effects();
    test_scalar_hand_values();
    test_gemm_s4_hand();
    test_vrelu_forward_overlap();
    test_vrelu_live_config();
    test_streamed_scalar_operands();
    test_writeback_ignores_c_stride();
    test_locked_not_owned_no_gate();
    test_doorbell_counts();
    test_driver_quirks();
    npk_sim_free(S);
    return CHECK_DONE();
}
