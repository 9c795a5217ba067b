// SPDX-License-Identifier: MIT
/* e1 device model: every opcode against the independent C references of
 * test_e1_model_util.h on edge values and random inputs, with latency and
 * "RESULT changes only in the completion cycle"; DOT16 ternary mode and its
 * fail-closed error; GEMM_S8/GEMM_S4/VRELU_S8 on the scratchpad with whole-
 * tile validation, aliasing and counters. */
#include "test_e1_model_util.h"

static const uint32_t edges[] = {0u,          1u,          2u,          0x7fu,       0x80u,       0xffu,
                                 0x7fffu,     0x8000u,     0xffffu,     0x7fffffffu, 0x80000000u, 0xffffffffu,
                                 0x80808080u, 0x7f7f7f7fu, 0x01010101u, 0x55555555u, 0xaaaaaaaau, 0x77777777u,
                                 0x88888888u, 0x12345678u, 0xfedcba98u, 0x000000f8u, 0xfffffff7u};
#define NEDGES (sizeof edges / sizeof edges[0])

static int scalar_failures;

/* Run one scalar op directly and check it cycle by cycle. */
static void run_scalar(unsigned op, uint32_t a, uint32_t b, uint32_t acc, int ternary) {
    uint32_t prev_lo = rd(E1_REG_RESULT), prev_hi = rd(E1_REG_RESULT_HI);
    uint32_t ops0 = rd(E1_REG_PERF_OPS), err0 = rd(E1_REG_PERF_ERRORS), uns0 = rd(E1_REG_PERF_UNSUPPORTED_OPS);
    wr(E1_REG_OP_A, a);
    wr(E1_REG_OP_B, b);
    wr(E1_REG_ACC, acc);
    wr(E1_REG_OPCODE, op);
    wr(E1_REG_CMD_PARAM, ternary ? E1_CMD_TERNARY : 0);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    unsigned lat = ref_latency(op);
    int bad = 0;
    for (unsigned c = 1; c < lat; c++) {
        step(1);
        bad |= rd(E1_REG_CTRL_STATUS) != 1;
        bad |= rd(E1_REG_RESULT) != prev_lo || rd(E1_REG_RESULT_HI) != prev_hi;
        bad |= (rd(E1_REG_TRACE) & 7) != lat - c;
    }
    step(1);
    uint32_t lo = 0, hi = 0;
    int rc = ref_scalar(op, a, b, acc, ternary, &lo, &hi);
    if (rc == 0) {
        bad |= rd(E1_REG_CTRL_STATUS) != 2;
        bad |= rd(E1_REG_RESULT) != lo || rd(E1_REG_RESULT_HI) != hi;
        bad |= rd(E1_REG_PERF_ERRORS) != err0;
    } else {
        /* ternary fail-closed: error, results unchanged, PERF_OPS counted, UNSUPPORTED not */
        bad |= rd(E1_REG_CTRL_STATUS) != 6;
        bad |= rd(E1_REG_RESULT) != prev_lo || rd(E1_REG_RESULT_HI) != prev_hi;
        bad |= rd(E1_REG_PERF_ERRORS) != err0 + 1;
    }
    bad |= rd(E1_REG_PERF_OPS) != ops0 + 1;
    bad |= rd(E1_REG_PERF_UNSUPPORTED_OPS) != uns0;
    bad |= rd(E1_REG_PERF_CYCLES) != 0;
    bad |= rd(E1_REG_TRACE) != (op << 3);
    CHECK(!bad);
    if (bad && scalar_failures++ < 10)
        fprintf(stderr, "  op %u a=0x%08x b=0x%08x acc=0x%08x tern=%d: got 0x%08x:%08x st %u, want 0x%08x:%08x rc %d\n",
                op, a, b, acc, ternary, rd(E1_REG_RESULT_HI), rd(E1_REG_RESULT), rd(E1_REG_CTRL_STATUS), hi, lo, rc);
}

static void test_scalar_ops(void) {
    sim_open();
    static const unsigned ops[] = {0, 1, 2, 3, 4, 5, 6, 7, 10, 12, 13, 14, 15};
    static const uint32_t accs[] = {0, 0xffffff00u, 0x7fffffffu, 0x80000000u, 0x000000e4u};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        for (size_t i = 0; i < NEDGES; i++)
            for (size_t j = 0; j < NEDGES; j++)
                for (size_t k = 0; k < sizeof accs / sizeof accs[0]; k++) run_scalar(ops[o], edges[i], edges[j], accs[k], 0);
        for (int r = 0; r < 400; r++) run_scalar(ops[o], rnd(), rnd(), rnd(), 0);
    }
}

static void test_ternary(void) {
    sim_open();
    /* valid ternary lanes only (no 0b11): random from {00, 01, 10} */
    for (int r = 0; r < 600; r++) {
        uint32_t a = 0, b = 0;
        for (int l = 0; l < 16; l++) {
            a |= (rnd() % 3) << (2 * l);
            b |= (rnd() % 3) << (2 * l);
        }
        run_scalar(E1_OP_DOT16_S2, a, b, rnd(), 1);
    }
    /* reserved 0b11 lanes in A or B: fail closed */
    for (int r = 0; r < 200; r++) run_scalar(E1_OP_DOT16_S2, rnd() | 3u << (2 * (r % 16)), rnd(), rnd(), 1);
    for (int r = 0; r < 200; r++) run_scalar(E1_OP_DOT16_S2, 0, 3u << (2 * (r % 16)), 5, 1);
    /* the same operands in two's-complement mode are fine: 11 = -1 */
    run_scalar(E1_OP_DOT16_S2, 0xffffffffu, 0xffffffffu, 0, 0);
    CHECK_EQ(rd(E1_REG_RESULT), 16);
    /* explicit: +1*+1 + (-1)*(+1) + (-1)*(-1) = 1, ACC 10 -> 11 */
    run_scalar(E1_OP_DOT16_S2, 0x1 | 0x2 << 2 | 0x2 << 4, 0x1 | 0x1 << 2 | 0x2 << 4, 10, 1);
    CHECK_EQ(rd(E1_REG_RESULT), 11);
    /* an error needs the normal clear; the next command runs fine */
    run_scalar(E1_OP_DOT16_S2, 3, 0, 0, 1);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(npk_sim_irq(S, 0), 1);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_CLEAR);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 0);
    /* the mode is latched at start: clearing CMD_PARAM[1] mid-run changes nothing */
    sim_open();
    wr(E1_REG_OP_A, 0xffffffffu);
    wr(E1_REG_OPCODE, E1_OP_DOT16_S2);
    wr(E1_REG_CMD_PARAM, E1_CMD_TERNARY);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(1);
    wr(E1_REG_CMD_PARAM, 0);
    step(2);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 1);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 1);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 0);
    /* other opcodes ignore CMD_PARAM[1] */
    wr(E1_REG_CTRL_STATUS, E1_CTRL_CLEAR);
    run_scalar(E1_OP_DOT8_S4, 0xffffffffu, 0xffffffffu, 0, 1);
    CHECK_EQ(rd(E1_REG_RESULT), 8);
}

static void test_named_values(void) {
    sim_open();
    /* values stated in the notes, checked literally */
    run_scalar(E1_OP_DOT4_FP8_E4M3, 0x77, 0x77, 0, 0);
    CHECK_EQ(rd(E1_REG_RESULT), (uint32_t)-2031616);
    CHECK_EQ(rd(E1_REG_RESULT_HI), 0xffffffffu);
    run_scalar(E1_OP_DOT4_FP8_E4M3, 0x38, 0x38, 0x100, 0); /* 1.0 * 1.0 + 1.0 = 2.0 in Q8.8 */
    CHECK_EQ(rd(E1_REG_RESULT), 0x200);
    run_scalar(E1_OP_DOT4_FP8_E4M3, 0xb8, 0x40, 0, 0); /* -1.0 * 2.0 = -2.0 */
    CHECK_EQ(rd(E1_REG_RESULT), (uint32_t)-512);
    static const struct { uint32_t a, r; } ex[] = {{0, 256}, {0xff, 128}, {0xf8, 1}, {0xf7, 1}, {0x80, 1},
                                                   {0x05, 256}, {0x7f, 256}, {0xfd, 32}, {0xffffff00u, 256}};
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        run_scalar(E1_OP_EXP2_NEG_Q0_8, ex[i].a, 0xffffffff, 0xffffffff, 0);
        CHECK_EQ(rd(E1_REG_RESULT), ex[i].r);
        CHECK_EQ(rd(E1_REG_RESULT_HI), 0);
    }
    /* SDOT4: A lanes 1,2,3,-1; B lanes 0..7 = 1..7,-8; positions 3,0 | 1,2
     * -> 1*B[3] + 2*B[0] + 3*B[5] + (-1)*B[6] = 4 + 2 + 18 - 7 = 17; ACC not added */
    run_scalar(E1_OP_SDOT4_S4_2_4, 0xf321, 0x87654321u, 3 | 0 << 2 | 1 << 4 | 2 << 6 | 0xffff00u, 0);
    CHECK_EQ(rd(E1_REG_RESULT), 17);
    /* positions need not be distinct */
    run_scalar(E1_OP_SDOT4_S4_2_4, 0x1111, 0x87654321u, 0xff, 0);
    CHECK_EQ(rd(E1_REG_RESULT), (uint32_t)(4 + 4 - 8 - 8));
    run_scalar(E1_OP_MUL_LO, 0xffffffffu, 0xffffffffu, 0, 0);
    CHECK_EQ(rd(E1_REG_RESULT), 1);
    CHECK_EQ(rd(E1_REG_RESULT_HI), 0xfffffffeu);
    run_scalar(E1_OP_SUB, 0, 1, 0, 0);
    CHECK_EQ(rd(E1_REG_RESULT), 0xffffffffu);
    CHECK_EQ(rd(E1_REG_RESULT_HI), 0);
    run_scalar(E1_OP_RELU4_S8, 0x80ff7f01u, 0, 0, 0);
    CHECK_EQ(rd(E1_REG_RESULT), 0x00007f01u);
    run_scalar(E1_OP_MAC_S16, 0xffff8000u, 0x00018000u, 0x80000000u, 0); /* 2^30 + INT_MIN */
    CHECK_EQ(rd(E1_REG_RESULT), 0xc0000000u);
    CHECK_EQ(rd(E1_REG_RESULT_HI), 0xffffffffu);
}

/* ---- scratchpad engines ------------------------------------------------------ */

static int gemm_failures;

static void run_gemm(int s4, unsigned m, unsigned n, unsigned k, unsigned ab, unsigned bb, unsigned cb, unsigned as,
                     unsigned bs, unsigned cs) {
    uint8_t sp[64], ref[64], got[64];
    for (int i = 0; i < 64; i++) sp[i] = (uint8_t)rnd();
    scratch_load(sp);
    memcpy(ref, sp, 64);
    uint32_t cyc0 = rd(E1_REG_PERF_CYCLES), mac0 = rd(E1_REG_PERF_MACS), sb0 = rd(E1_REG_PERF_SCRATCH_BYTES);
    uint32_t err0 = rd(E1_REG_PERF_ERRORS), uns0 = rd(E1_REG_PERF_UNSUPPORTED_OPS), ops0 = rd(E1_REG_PERF_OPS);
    wr(E1_REG_GEMM_CFG, e1_gemm_cfg(m, n, k));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(ab, bb, cb));
    wr(E1_REG_GEMM_STRIDE, e1_gemm_stride(as, bs, cs));
    wr(E1_REG_OPCODE, s4 ? E1_OP_GEMM_S4 : E1_OP_GEMM_S8);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    int bad = 0;
    if (!ref_gemm_valid(s4, m, n, k, ab, bb, cb, as, bs, cs)) {
        bad |= rd(E1_REG_CTRL_STATUS) != 6;
        bad |= rd(E1_REG_PERF_ERRORS) != err0 + 1 || rd(E1_REG_PERF_UNSUPPORTED_OPS) != uns0 + 1;
        bad |= rd(E1_REG_PERF_OPS) != ops0;
        step(5);
        scratch_dump(got);
        bad |= memcmp(got, sp, 64) != 0;
        bad |= rd(E1_REG_PERF_CYCLES) != cyc0;
    } else {
        unsigned cycles = m * n * k;
        step(cycles - 1);
        bad |= rd(E1_REG_CTRL_STATUS) != 1;
        step(1);
        bad |= rd(E1_REG_CTRL_STATUS) != 2;
        ref_gemm(ref, s4, m, n, k, ab, bb, cb, as, bs, cs);
        scratch_dump(got);
        bad |= memcmp(got, ref, 64) != 0;
        bad |= rd(E1_REG_PERF_CYCLES) != cyc0 + cycles || rd(E1_REG_PERF_MACS) != mac0 + cycles;
        bad |= rd(E1_REG_PERF_SCRATCH_BYTES) != sb0 + m * n * (2 * k + 4);
        bad |= rd(E1_REG_PERF_OPS) != ops0 + 1 || rd(E1_REG_PERF_ERRORS) != err0;
    }
    CHECK(!bad);
    if (bad && gemm_failures++ < 10)
        fprintf(stderr, "  gemm s4=%d m%u n%u k%u base %u/%u/%u stride %u/%u/%u\n", s4, m, n, k, ab, bb, cb, as, bs, cs);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_CLEAR);
}

static void test_gemm_random(void) {
    sim_open();
    for (int s4 = 0; s4 < 2; s4++) {
        int valid = 0, invalid = 0;
        while (valid < 600 || invalid < 300) {
            unsigned m = rnd() % 4, n = rnd() % 4, k = rnd() % 8;
            unsigned ab = rnd() % 64, bb = rnd() % 64, cb = (rnd() % 16) * 4 + (rnd() % 8 == 0 ? rnd() % 4 : 0);
            unsigned as = rnd() % 16, bs = rnd() % 16, cs = (rnd() % 4) * 4 + (rnd() % 8 == 0 ? 1 : 0);
            if (rnd() % 2) { /* bias towards tiles that fit */
                ab = rnd() % (s4 ? 64 : 24);
                bb = rnd() % (s4 ? 64 : 24);
                as = rnd() % 8;
                bs = rnd() % 8;
                cb = (rnd() % 8) * 4 + 24;
                cs = (rnd() % 3) * 4;
            }
            if (cb > 63) cb = 63;
            int ok = ref_gemm_valid(s4, m, n, k, ab, bb, cb, as, bs, cs);
            if (ok && valid >= 600) continue;
            if (!ok && invalid >= 300) continue;
            ok ? valid++ : invalid++;
            run_gemm(s4, m, n, k, ab, bb, cb, as, bs, cs);
        }
    }
    /* boundaries: last A byte 63 is fine, 64 is not; C ending at byte 63 is fine */
    run_gemm(0, 1, 1, 1, 63, 0, 60, 0, 0, 0);
    run_gemm(0, 2, 1, 1, 59, 0, 0, 4, 0, 4);   /* last A byte 63 */
    run_gemm(0, 2, 1, 1, 61, 0, 0, 3, 0, 4);   /* 61 + 3 = 64: invalid */
    run_gemm(0, 1, 1, 1, 0, 0, 61, 0, 0, 0);   /* unaligned C */
    run_gemm(0, 2, 1, 1, 0, 0, 0, 0, 0, 2);    /* unaligned C stride */
    run_gemm(1, 1, 1, 2, 63, 63, 0, 0, 15, 0); /* S4: nibble 64, 78 < 128 */
    run_gemm(1, 3, 3, 7, 63, 63, 0, 15, 9, 12);
    run_gemm(0, 3, 3, 7, 0, 21, 28, 7, 3, 12); /* 3x3x7 that just fits: C ends at 28+24+8+3 = 63 */
}

static void test_gemm_explicit(void) {
    sim_open();
    /* C aliases A: cell (0,0) overwrites A[1] before cell (1,0) reads it */
    wr(E1_REG_SCRATCH(0), 0x00000705);
    wr(E1_REG_SCRATCH(2), 0x00000003);
    wr(E1_REG_GEMM_CFG, e1_gemm_cfg(2, 1, 1));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 8, 0));
    wr(E1_REG_GEMM_STRIDE, e1_gemm_stride(1, 0, 4));
    wr(E1_REG_OPCODE, E1_OP_GEMM_S8);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(2);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    CHECK_EQ(rd(E1_REG_SCRATCH(0)), 15);
    CHECK_EQ(rd(E1_REG_SCRATCH(1)), 0); /* 0 * 3, not 7 * 3 */

    /* GEMM_S4 nibble addressing: A = nibbles 0,1 = [1, -2]; B = nibbles 2,3 = [3, 4] */
    sim_open();
    wr(E1_REG_SCRATCH(0), 0x000043e1);
    wr(E1_REG_GEMM_CFG, e1_gemm_cfg(1, 1, 2));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 2, 4));
    wr(E1_REG_GEMM_STRIDE, e1_gemm_stride(0, 1, 0));
    wr(E1_REG_OPCODE, E1_OP_GEMM_S4);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(2);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    CHECK_EQ(rd(E1_REG_SCRATCH(1)), (uint32_t)-5);
    CHECK_EQ(rd(E1_REG_PERF_SCRATCH_BYTES), 2 + 6);

    /* a GEMM start does not change TRACE's opcode field (scalar latch only) */
    sim_open();
    run_scalar(E1_OP_MIN_U32, 1, 2, 0, 0);
    wr(E1_REG_GEMM_CFG, e1_gemm_cfg(1, 1, 3));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 0, 8));
    wr(E1_REG_OPCODE, E1_OP_GEMM_S8);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_TRACE), 0x80u | (6u << 3));
    step(3);
    CHECK_EQ(rd(E1_REG_TRACE), 6u << 3);
}

static void test_vrelu_random(void) {
    sim_open();
    int valid = 0, invalid = 0;
    while (valid < 400 || invalid < 100) {
        unsigned len = rnd() % 64, src = rnd() % 64, dst = rnd() % 64;
        if (rnd() % 2) {
            len = 1 + rnd() % 32;
            src = rnd() % (65 - len);
            dst = rnd() % (65 - len); /* overlapping ranges included */
        }
        int ok = len != 0 && src + len <= 64 && dst + len <= 64;
        if (ok ? valid >= 400 : invalid >= 100) continue;
        ok ? valid++ : invalid++;
        uint8_t sp[64], ref[64], got[64];
        for (int i = 0; i < 64; i++) sp[i] = (uint8_t)rnd();
        scratch_load(sp);
        memcpy(ref, sp, 64);
        uint32_t cyc0 = rd(E1_REG_PERF_CYCLES), sb0 = rd(E1_REG_PERF_SCRATCH_BYTES);
        wr(E1_REG_GEMM_CFG, e1_vrelu_cfg(len) | (rnd() & 0x00070300u)); /* M/N/K bits are ignored */
        wr(E1_REG_GEMM_BASE, e1_gemm_base(src, dst, rnd() % 64));
        wr(E1_REG_OPCODE, E1_OP_VRELU_S8);
        wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
        int bad = 0;
        if (ok) {
            step(len - 1);
            bad |= rd(E1_REG_CTRL_STATUS) != 1;
            step(1);
            bad |= rd(E1_REG_CTRL_STATUS) != 2;
            ref_vrelu(ref, len, src, dst);
            bad |= rd(E1_REG_PERF_CYCLES) != cyc0 + len || rd(E1_REG_PERF_SCRATCH_BYTES) != sb0 + 2 * len;
        } else {
            bad |= rd(E1_REG_CTRL_STATUS) != 6;
        }
        scratch_dump(got);
        bad |= memcmp(got, ref, 64) != 0;
        CHECK(!bad);
        if (bad) fprintf(stderr, "  vrelu len %u src %u dst %u\n", len, src, dst);
    }
    /* full 64-byte in-place relu */
    uint8_t sp[64], got[64];
    for (int i = 0; i < 64; i++) sp[i] = (uint8_t)(i * 5 + 100);
    scratch_load(sp);
    wr(E1_REG_GEMM_CFG, 0); /* LEN field is 6 bits: 64 is not encodable, 63 is the maximum */
    wr(E1_REG_GEMM_CFG, e1_vrelu_cfg(63));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 0, 0));
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(63);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    scratch_dump(got);
    for (int i = 0; i < 63; i++) CHECK_EQ(got[i], (sp[i] & 0x80) ? 0 : sp[i]);
    CHECK_EQ(got[63], sp[63]);
}

int main(void) {
    test_scalar_ops();
    test_ternary();
    test_named_values();
    test_gemm_random();
    test_gemm_explicit();
    test_vrelu_random();
    npk_sim_free(S);
    return CHECK_DONE();
}
