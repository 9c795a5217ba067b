// SPDX-License-Identifier: MIT
/* e1 device model: register map, reset, aliasing, masked read-back, TRACE,
 * SEC, counters, CTRL semantics, busy timing and the direct worked examples
 * of e1-rtl-notes.md. Expectations come from the notes, not the model. */
#include "test_e1_model_util.h"

static void test_class(void) {
    const npk_dev_class *c = npk_dev_class_find("e1");
    CHECK(c != NULL);
    if (!c) return;
    CHECK_EQ(c->mmio_base, 0x10020000);
    CHECK_EQ(c->mmio_size, 0x1000);
    CHECK_EQ(c->hz, 1000000000ull);
    CHECK_EQ(c->n_irq, 1);
    CHECK(npk_sim_new("e1", "bogus=1") == NULL);
}

static void test_reset_values(void) {
    sim_open();
    for (uint32_t off = 0; off < 0x100; off += 4) {
        uint32_t expect = off == E1_REG_DESC_STATUS ? 0x1u : off == E1_REG_SEC_STATUS ? 0x400u : 0u;
        CHECK_EQ(rd(off), expect);
    }
    CHECK_EQ(npk_sim_irq(S, 0), 0);
    /* the register table declares the same reset values */
    npk_regfile *rf = npk_sim_dev(S)->regs;
    CHECK(rf != NULL);
    int n = 0;
    size_t it = 0;
    for (const npk_reg *r; rf && (r = npk_regfile_next(rf, &it));) {
        if (r->off == E1_REG_DESC_STATUS) {
            CHECK_EQ(r->reset, 1);
            n++;
        } else if (r->off == E1_REG_SEC_STATUS) {
            CHECK_EQ(r->reset, 0x400);
            n++;
        } else {
            CHECK_EQ(r->reset, 0);
        }
    }
    CHECK_EQ(n, 2);
    CHECK_EQ(rf ? rf->n : 0, 48); /* 0x00..0xbc */
}

static void test_aliasing_and_holes(void) {
    sim_open();
    wr(0x100 + E1_REG_OP_A, 0x11223344);
    CHECK_EQ(rd(E1_REG_OP_A), 0x11223344);
    CHECK_EQ(rd(0xf00 + E1_REG_OP_A), 0x11223344);
    wr(0xa00 + E1_REG_SCRATCH(15), 0xcafef00d);
    CHECK_EQ(rd(E1_REG_SCRATCH(15)), 0xcafef00d);
    CHECK_EQ(rd(0x300 + E1_REG_DESC_STATUS), 1);
    CHECK_EQ(rd(0x700 + E1_REG_SEC_STATUS), 0x400);
    for (uint32_t off = 0xc0; off < 0x100; off += 4) {
        wr(off, 0xffffffff);
        wr(off + 0x200, 0xffffffff);
        CHECK_EQ(rd(off), 0);
    }
    /* holes did not disturb anything */
    CHECK_EQ(rd(E1_REG_SCRATCH(0)), 0);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 0);
    /* 8-bit and 16-bit reads see the little-endian word */
    uint64_t v = 0;
    CHECK_EQ(npk_sim_read(S, E1_MMIO_BASE + 1, 1, &v), 0);
    CHECK_EQ(v, 0x33);
    CHECK_EQ(npk_sim_read(S, E1_MMIO_BASE + 2, 2, &v), 0);
    CHECK_EQ(v, 0x1122);
}

static void test_masked_readback(void) {
    sim_open();
    wr(E1_REG_GEMM_CFG, 0xffffffff);
    CHECK_EQ(rd(E1_REG_GEMM_CFG), 0x0007033f);
    wr(E1_REG_GEMM_BASE, 0xffffffff);
    CHECK_EQ(rd(E1_REG_GEMM_BASE), 0x003f3f3f);
    wr(E1_REG_GEMM_STRIDE, 0xffffffff);
    CHECK_EQ(rd(E1_REG_GEMM_STRIDE), 0x000f0f0f);
    wr(E1_REG_OPCODE, 0xffffffff);
    CHECK_EQ(rd(E1_REG_OPCODE), 0xf);
    wr(E1_REG_DESC_HEAD, 0xfffffffd);
    CHECK_EQ(rd(E1_REG_DESC_HEAD), 5);
    wr(E1_REG_DESC_TAIL, 0x12345679);
    CHECK_EQ(rd(E1_REG_DESC_TAIL), 1);
    wr(E1_REG_DESC_BASE, 0xfffffff3);
    CHECK_EQ(rd(E1_REG_DESC_BASE), 0xfffffff3);
    wr(E1_REG_CMD_PARAM, 0xfffff002);
    CHECK_EQ(rd(E1_REG_CMD_PARAM), 0xfffff002);
    wr(E1_REG_ACC, 0x80000001);
    CHECK_EQ(rd(E1_REG_ACC), 0x80000001);
    /* read-only registers ignore writes */
    wr(E1_REG_RESULT, 0x5);
    wr(E1_REG_RESULT_HI, 0x5);
    wr(E1_REG_TRACE, 0x1ff);
    wr(E1_REG_DESC_STATUS, 0xff);
    wr(E1_REG_SEC_STATUS, 0xff);
    wr(E1_REG_PERF_CYCLES, 0x5);
    wr(E1_REG_PERF_OPS, 0x5);
    wr(E1_REG_DESC_TIMEOUT_COUNT, 0x5);
    CHECK_EQ(rd(E1_REG_RESULT), 0);
    CHECK_EQ(rd(E1_REG_RESULT_HI), 0);
    CHECK_EQ(rd(E1_REG_TRACE), 0);
    CHECK_EQ(rd(E1_REG_DESC_STATUS) & 0xff, 1);
    CHECK_EQ(rd(E1_REG_SEC_STATUS), 0x400);
    CHECK_EQ(rd(E1_REG_PERF_CYCLES), 0);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 0);
    CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), 0);
    /* pending overlay: (head - tail) & 7 in [21:19] */
    wr(E1_REG_DESC_HEAD, 1);
    wr(E1_REG_DESC_TAIL, 3);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x1u | (6u << 19));
}

static void dot4_setup(void) {
    wr(E1_REG_OP_A, 0x04030201);
    wr(E1_REG_OP_B, 0xf807fa05);
    wr(E1_REG_ACC, 0xffffff00);
    wr(E1_REG_OPCODE, E1_OP_DOT4_S8);
}

static void test_dot4_worked_example(void) {
    sim_open();
    dot4_setup();
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    /* status 1 and busy_count 3 right after the start; the opcode is latched */
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 1);
    CHECK_EQ(rd(E1_REG_TRACE), 0x20 | 3);
    CHECK_EQ(npk_sim_irq(S, 0), 0);
    for (int c = 1; c <= 2; c++) {
        step(1);
        CHECK_EQ(rd(E1_REG_CTRL_STATUS), 1);
        CHECK_EQ(rd(E1_REG_TRACE), 0x20u | (uint32_t)(3 - c));
        CHECK_EQ(rd(E1_REG_RESULT), 0); /* results change only in the completion cycle */
        CHECK_EQ(rd(E1_REG_RESULT_HI), 0);
    }
    step(1);
    CHECK_EQ(rd(E1_REG_RESULT), 0xfffffeee);
    CHECK_EQ(rd(E1_REG_RESULT_HI), 0xffffffff);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    CHECK_EQ(rd(E1_REG_TRACE), 0x20);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 1);
    CHECK_EQ(rd(E1_REG_PERF_CYCLES), 0);
    CHECK_EQ(npk_sim_irq(S, 0), 1);
    CHECK(npk_sim_dev(S)->ops->idle(npk_sim_dev(S)));
    /* clear: done drops, IRQ lowers */
    wr(E1_REG_CTRL_STATUS, E1_CTRL_CLEAR);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 0);
    CHECK_EQ(npk_sim_irq(S, 0), 0);
    CHECK_EQ(rd(E1_REG_RESULT), 0xfffffeee);
}

static int irq_events[2];
static void irq_cb(void *ctx, int line, int level) {
    (void)ctx;
    if (line == 0) irq_events[level ? 1 : 0]++;
}

static void test_irq_callback(void) {
    sim_open();
    npk_sim_set_irq_cb(S, irq_cb, NULL);
    dot4_setup();
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(100);
    CHECK_EQ(irq_events[1], 1);
    CHECK_EQ(irq_events[0], 0);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_CLEAR);
    CHECK_EQ(irq_events[0], 1);
    /* an immediate rejection raises the line too (error implies done) */
    wr(E1_REG_OPCODE, E1_OP_VRELU_S8);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(irq_events[1], 2);
    /* a start clears done: the line drops */
    wr(E1_REG_OPCODE, E1_OP_ADD);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(irq_events[0], 2);
    step(1);
    CHECK_EQ(irq_events[1], 3);
    npk_sim_set_irq_cb(S, NULL, NULL);
}

static void test_start_while_busy_and_latching(void) {
    sim_open();
    dot4_setup();
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(1);
    /* operand writes after the start do not affect the running op */
    wr(E1_REG_OP_A, 0);
    wr(E1_REG_ACC, 0);
    wr(E1_REG_OPCODE, E1_OP_ADD);
    /* a start while busy is ignored silently */
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 1);
    CHECK_EQ(rd(E1_REG_TRACE), 0x22);
    step(2);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    CHECK_EQ(rd(E1_REG_RESULT), 0xfffffeee);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 1);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 0);
    /* a new start clears the previous done */
    wr(E1_REG_OP_A, 5);
    wr(E1_REG_OP_B, 7);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 1);
    CHECK_EQ(npk_sim_irq(S, 0), 0);
    step(1);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    CHECK_EQ(rd(E1_REG_RESULT), 12);
    CHECK_EQ(rd(E1_REG_RESULT_HI), 0);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 2);
    /* TRACE now shows ADD (opcode 0) with busy_count 0 */
    CHECK_EQ(rd(E1_REG_TRACE), 0);
    /* bit 2 of a CTRL write has no effect */
    wr(E1_REG_CTRL_STATUS, 0x4);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    /* clear while busy keeps the busy bit */
    wr(E1_REG_OPCODE, E1_OP_DOT8_S4);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_CLEAR);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 1);
    step(3);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
}

static void gemm_worked_setup(void) {
    wr(E1_REG_SCRATCH(0), 0x040302ff);
    wr(E1_REG_SCRATCH(1), 0x00000605);
    wr(E1_REG_SCRATCH(2), 0x0a090807);
    wr(E1_REG_SCRATCH(3), 0x00000c0b);
    wr(E1_REG_GEMM_CFG, 0x00030202);
    wr(E1_REG_GEMM_BASE, 0x00200800);
    wr(E1_REG_GEMM_STRIDE, 0x00080203);
    wr(E1_REG_OPCODE, E1_OP_GEMM_S8);
}

static void test_gemm_worked_example(void) {
    sim_open();
    gemm_worked_setup();
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 1);
    CHECK_EQ(rd(E1_REG_TRACE), 0x80); /* gemm_busy; opcode_q is still the reset ADD */
    /* cell (0,0) is written in cycle 3, (0,1) in 6, (1,0) in 9, (1,1) in 12 */
    static const uint32_t expect[4] = {44, 48, 139, 154};
    for (int c = 1; c <= 12; c++) {
        step(1);
        for (int cell = 0; cell < 4; cell++)
            CHECK_EQ(rd(E1_REG_SCRATCH(8 + cell)), c >= 3 * (cell + 1) ? expect[cell] : 0);
        CHECK_EQ(rd(E1_REG_CTRL_STATUS), c < 12 ? 1 : 2);
        CHECK_EQ(rd(E1_REG_PERF_CYCLES), c);
        CHECK_EQ(rd(E1_REG_PERF_MACS), c);
        CHECK_EQ(npk_sim_irq(S, 0), c == 12);
    }
    CHECK_EQ(rd(E1_REG_PERF_SCRATCH_BYTES), 40);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 1);
    CHECK_EQ(rd(E1_REG_TRACE), 0);
    CHECK_EQ(rd(E1_REG_SCRATCH(0)), 0x040302ff); /* inputs untouched */
    CHECK_EQ(rd(E1_REG_SCRATCH(3)), 0x00000c0b);
}

static void test_gemm_live_config_abort(void) {
    sim_open();
    gemm_worked_setup();
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(4); /* first cell written */
    CHECK_EQ(rd(E1_REG_SCRATCH(8)), 44);
    wr(E1_REG_GEMM_CFG, 0x00030200); /* M = 0: invalid */
    step(1);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(rd(E1_REG_TRACE) & 0x80, 0);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 1);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 0);
    CHECK_EQ(rd(E1_REG_PERF_CYCLES), 5); /* the abort cycle counts */
    CHECK_EQ(rd(E1_REG_PERF_MACS), 4);
    CHECK_EQ(rd(E1_REG_SCRATCH(9)), 0);
    CHECK_EQ(npk_sim_irq(S, 0), 1);
    step(10);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(rd(E1_REG_PERF_CYCLES), 5);

    /* a still-valid rewrite is followed live: K changed from 3 to 2 after
     * the first cell; the rest of the tile uses K = 2 */
    sim_open();
    gemm_worked_setup();
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(3);
    CHECK_EQ(rd(E1_REG_SCRATCH(8)), 44);
    wr(E1_REG_GEMM_CFG, 0x00020202);
    step(5);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 1);
    step(1);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    /* A=[[-1,2,3],[4,5,6]] B=[[7,8],[9,10],..], K=2: (0,1)=-8+20=12, (1,0)=28+45=73, (1,1)=32+50=82 */
    CHECK_EQ(rd(E1_REG_SCRATCH(9)), 12);
    CHECK_EQ(rd(E1_REG_SCRATCH(10)), 73);
    CHECK_EQ(rd(E1_REG_SCRATCH(11)), 82);
    CHECK_EQ(rd(E1_REG_PERF_CYCLES), 9);
}

static void test_start_rejections_and_clear(void) {
    sim_open();
    /* GEMM with M = 0: status 6 at once, no busy phase */
    wr(E1_REG_OPCODE, E1_OP_GEMM_S8);
    wr(E1_REG_GEMM_CFG, e1_gemm_cfg(0, 1, 1));
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(npk_sim_irq(S, 0), 1);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 1);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 1);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 0);
    CHECK(npk_sim_dev(S)->ops->idle(npk_sim_dev(S)));
    /* 0x3 with a failing start: status 0, but the error still counts */
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START | E1_CTRL_CLEAR);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 0);
    CHECK_EQ(npk_sim_irq(S, 0), 0);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 2);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 2);
    /* VRELU with LEN 0, and with SRC + LEN > 64 */
    wr(E1_REG_OPCODE, E1_OP_VRELU_S8);
    wr(E1_REG_GEMM_CFG, 0);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    wr(E1_REG_GEMM_CFG, e1_vrelu_cfg(10));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(55, 0, 0));
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 55, 0));
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 5);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 5);
    /* 0x3 with a successful start: status 1 */
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 54, 0));
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START | E1_CTRL_CLEAR);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 1);
    step(10);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 1);
    CHECK_EQ(rd(E1_REG_PERF_CYCLES), 10);
    CHECK_EQ(rd(E1_REG_PERF_SCRATCH_BYTES), 20);
    /* the 0x3 writes above zeroed DESC_STATUS (clear sets 0, not the reset value 1) */
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0);
    sim_open();
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 1);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_CLEAR);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0);
}

static void test_vrelu_timing(void) {
    sim_open();
    uint8_t sp[64], ref[64], got[64];
    for (int i = 0; i < 64; i++) sp[i] = (uint8_t)(i * 37 + 11);
    scratch_load(sp);
    memcpy(ref, sp, 64);
    wr(E1_REG_OPCODE, E1_OP_VRELU_S8);
    wr(E1_REG_GEMM_CFG, e1_vrelu_cfg(7));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(3, 40, 0));
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_TRACE), 0x100);
    for (int c = 1; c <= 7; c++) {
        step(1);
        CHECK_EQ(rd(E1_REG_CTRL_STATUS), c < 7 ? 1 : 2);
        CHECK_EQ(rd(E1_REG_PERF_CYCLES), c);
        /* byte c-1 of the destination is written in cycle c */
        scratch_dump(got);
        for (int i = 0; i < 7; i++) {
            uint8_t want = i < c ? ((sp[3 + i] & 0x80) ? 0 : sp[3 + i]) : sp[40 + i];
            CHECK_EQ(got[40 + i], want);
        }
    }
    ref_vrelu(ref, 7, 3, 40);
    scratch_dump(got);
    CHECK(memcmp(got, ref, 64) == 0);
    CHECK_EQ(rd(E1_REG_PERF_SCRATCH_BYTES), 14);
    CHECK_EQ(rd(E1_REG_PERF_MACS), 0);
}

static void test_counters_clear_and_thermal(void) {
    sim_open();
    gemm_worked_setup();
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(12);
    wr(E1_REG_OPCODE, E1_OP_GEMM_S4);
    wr(E1_REG_GEMM_CFG, 0);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START); /* rejected */
    for (int i = 0; i < 3; i++) wr(E1_REG_PERF_THERMAL_THROTTLE, i == 1 ? 0 : 0xffffffff);
    CHECK_EQ(rd(E1_REG_PERF_THERMAL_THROTTLE), 3);
    wr(0x200 + E1_REG_PERF_THERMAL_THROTTLE, 0); /* aliased write counts too */
    CHECK_EQ(rd(E1_REG_PERF_THERMAL_THROTTLE), 4);
    CHECK_EQ(rd(E1_REG_PERF_CYCLES), 12);
    CHECK_EQ(rd(E1_REG_PERF_MACS), 12);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 1);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 1);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 1);
    CHECK_EQ(rd(E1_REG_PERF_SCRATCH_BYTES), 40);
    /* writing PERF_ERRORS without bit 0 does nothing */
    wr(E1_REG_PERF_ERRORS, 0xfffffffe);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 1);
    CHECK_EQ(rd(E1_REG_PERF_CYCLES), 12);
    wr(E1_REG_PERF_ERRORS, 1);
    for (uint32_t off = 0x50; off < 0x80; off += 4) CHECK_EQ(rd(off), 0);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 0);
    /* the perf clear does not touch the status or results */
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(rd(E1_REG_SCRATCH(11)), 154);
}

static void test_sec(void) {
    sim_open();
    wr(E1_REG_SEC_OWNER_CFG, 0xffffffff);
    CHECK_EQ(rd(E1_REG_SEC_OWNER_CFG), 0xc00fffff);
    CHECK_EQ(rd(E1_REG_SEC_STATUS), 0x400 | 0x7); /* perf_lock, perf_hidden, owned */
    wr(E1_REG_SEC_OWNER_CFG, 0x80000000u | 0x12345);
    CHECK_EQ(rd(E1_REG_SEC_OWNER_CFG), 0x80012345);
    CHECK_EQ(rd(E1_REG_SEC_STATUS), 0x401);
    wr(E1_REG_SEC_OWNER_CFG, 0x40000000u); /* perf_lock without owned: not hidden */
    CHECK_EQ(rd(E1_REG_SEC_STATUS), 0x404);

    /* produce some counts, then hide them */
    gemm_worked_setup();
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(12);
    wr(E1_REG_PERF_THERMAL_THROTTLE, 1);
    wr(E1_REG_OPCODE, E1_OP_VRELU_S8);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START); /* LEN = 2 (GEMM_CFG low bits), src 0, dst 8: valid */
    step(2);
    wr(E1_REG_GEMM_CFG, 0);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START); /* rejected: UNSUPPORTED 1 */
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 1);
    CHECK_EQ(rd(E1_REG_PERF_CYCLES), 14);
    wr(E1_REG_SEC_OWNER_CFG, 0xc0000007u);
    CHECK_EQ(rd(E1_REG_SEC_STATUS), 0x407);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 0);
    for (uint32_t off = 0x50; off < 0x80; off += 4) CHECK_EQ(rd(off), 0);
    /* other registers are not hidden */
    CHECK_EQ(rd(E1_REG_SCRATCH(8)), 44);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 1);
    /* counters keep counting while hidden */
    wr(E1_REG_GEMM_CFG, 0x00030202);
    wr(E1_REG_OPCODE, E1_OP_GEMM_S8);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(12);
    wr(E1_REG_SEC_OWNER_CFG, 0x80000007u); /* drop perf_lock */
    CHECK_EQ(rd(E1_REG_PERF_CYCLES), 26);
    CHECK_EQ(rd(E1_REG_PERF_MACS), 24);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 3);
    CHECK_EQ(rd(E1_REG_PERF_THERMAL_THROTTLE), 1);

    /* lock: SEC_OWNER_CFG frozen, SEC_LOCK reads 0, only reset unlocks */
    wr(E1_REG_SEC_OWNER_CFG, 0x80000000u | 0xabcde);
    wr(E1_REG_SEC_LOCK, 2); /* bit 0 clear: no lock */
    CHECK_EQ(rd(E1_REG_SEC_STATUS), 0x401);
    wr(E1_REG_SEC_LOCK, 1);
    CHECK_EQ(rd(E1_REG_SEC_LOCK), 0);
    CHECK_EQ(rd(E1_REG_SEC_STATUS), 0x409);
    wr(E1_REG_SEC_OWNER_CFG, 0);
    CHECK_EQ(rd(E1_REG_SEC_OWNER_CFG), 0x800abcde);
    wr(E1_REG_SEC_LOCK, 0);
    CHECK_EQ(rd(E1_REG_SEC_STATUS), 0x409);

    /* the owner gate: a doorbell with the wrong token is denied (0x40) */
    wr(E1_REG_CTRL_STATUS, E1_CTRL_CLEAR);
    wr(E1_REG_PERF_ERRORS, 1);
    wr(E1_REG_DESC_BASE, 0x1000);
    wr(E1_REG_DESC_TAIL, 2);
    wr(E1_REG_DESC_HEAD, 3);
    poke32(0x1020, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0));
    poke32(0x1024, 40);
    poke32(0x1028, 2);
    wr(E1_REG_CMD_PARAM, e1_cmd_param(1, 0, 0xabcdf));
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x40u | (2u << 9) | (1u << 19));
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 1);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 1);
    /* the gate comes before the alignment check */
    wr(E1_REG_DESC_BASE, 0x1002);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_DESC_STATUS) & 0xff, 0x40);
    wr(E1_REG_DESC_BASE, 0x1000);
    /* the right token passes */
    wr(E1_REG_CMD_PARAM, e1_cmd_param(1, 0, 0xabcde));
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 1);
    step(11);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    CHECK_EQ(rd(E1_REG_RESULT), 42);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x2u | (2u << 9));

    /* reset drops ownership and the lock */
    npk_sim_reset(S);
    CHECK_EQ(rd(E1_REG_SEC_STATUS), 0x400);
    CHECK_EQ(rd(E1_REG_SEC_OWNER_CFG), 0);
    wr(E1_REG_SEC_OWNER_CFG, 0x80000001u);
    CHECK_EQ(rd(E1_REG_SEC_OWNER_CFG), 0x80000001u);
}

static void test_owned_unlocked_no_gate(void) {
    sim_open();
    /* owned but not locked: no owner gate */
    wr(E1_REG_SEC_OWNER_CFG, 0x80000000u | 0x5);
    wr(E1_REG_DESC_BASE, 0x400);
    wr(E1_REG_DESC_HEAD, 1);
    poke32(0x400, e1_desc_w0(E1_OP_SUB, 0, 0, 0, 0));
    poke32(0x404, 1);
    poke32(0x408, 2);
    wr(E1_REG_CMD_PARAM, E1_CMD_DESC);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 1);
    CHECK_EQ(npk_sim_run_until_idle(S, 1000), 11);
    CHECK_EQ(rd(E1_REG_RESULT), 0xffffffff);
    CHECK_EQ(rd(E1_REG_RESULT_HI), 0);
}

static void test_reset(void) {
    sim_open();
    gemm_worked_setup();
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(5);
    wr(E1_REG_PERF_THERMAL_THROTTLE, 1);
    npk_sim_reset(S);
    for (uint32_t off = 0; off < 0x100; off += 4) {
        uint32_t expect = off == E1_REG_DESC_STATUS ? 0x1u : off == E1_REG_SEC_STATUS ? 0x400u : 0u;
        CHECK_EQ(rd(off), expect);
    }
    CHECK(npk_sim_dev(S)->ops->idle(npk_sim_dev(S)));
    CHECK_EQ(npk_sim_irq(S, 0), 0);
    step(20);
    CHECK_EQ(rd(E1_REG_SCRATCH(9)), 0);
}

int main(void) {
    test_class();
    test_reset_values();
    test_aliasing_and_holes();
    test_masked_readback();
    test_dot4_worked_example();
    test_irq_callback();
    test_start_while_busy_and_latching();
    test_gemm_worked_example();
    test_gemm_live_config_abort();
    test_start_rejections_and_clear();
    test_vrelu_timing();
    test_counters_clear_and_thermal();
    test_sec();
    test_owned_unlocked_no_gate();
    test_reset();
    npk_sim_free(S);
    return CHECK_DONE();
}
