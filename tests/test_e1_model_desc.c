// SPDX-License-Identifier: MIT
/* e1 device model: the descriptor engine. Doorbell checks, fetch/stream/
 * writeback over the bus, every DESC_STATUS code and overlay, bus errors and
 * hangs by fault injection, the 128-cycle timeout with memory latency,
 * measured descriptor costs, the ternary-DOT16 ring quirks, CTRL/perf clear
 * semantics, and the worked ring example of e1-rtl-notes.md. */
#include "npukit/trace.h"
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

static void doorbell(unsigned tail, unsigned head) {
    wr(E1_REG_DESC_BASE, RING);
    wr(E1_REG_DESC_TAIL, tail);
    wr(E1_REG_DESC_HEAD, head);
    wr(E1_REG_CMD_PARAM, E1_CMD_DESC);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
}

/* Cycles until CTRL_STATUS leaves busy; checks it is busy before. */
static int run_ring(int max) { return run_done(max); }

/* The worked-example GEMM registers and its A|B stream image at SRC. */
static void gemm_2x2x3_setup(void) {
    wr(E1_REG_GEMM_CFG, 0x00030202);
    wr(E1_REG_GEMM_BASE, 0x00200800);
    wr(E1_REG_GEMM_STRIDE, 0x00080203);
    poke32(SRC, 0x040302ff);
    poke32(SRC + 4, 0x00000605);
    poke32(SRC + 8, 0x0a090807);
    poke32(SRC + 12, 0x00000c0b);
}

static void test_worked_ring(void) {
    sim_open();
    gemm_2x2x3_setup();
    put_desc(0, 0x80000004, 0x04030201, 0xf807fa05, 0xffffff00);
    put_desc(1, 0xD0000108, SRC, DST, 0);
    wr(E1_REG_DESC_BASE, RING);
    wr(E1_REG_DESC_HEAD, 2);
    wr(E1_REG_CMD_PARAM, 1);
    wr(E1_REG_CTRL_STATUS, 1);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 1);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x100u | (2u << 19)); /* busy, err_index 0, pending 2 */
    CHECK_EQ(run_ring(1000), 13 + 39);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x202);
    CHECK_EQ(rd(E1_REG_DESC_TAIL), 2);
    CHECK_EQ(rd(E1_REG_RESULT), 0xfffffeee);
    CHECK_EQ(rd(E1_REG_RESULT_HI), 0xffffffff);
    CHECK_EQ(peek32(DST), 44);
    CHECK_EQ(peek32(DST + 4), 48);
    CHECK_EQ(peek32(DST + 8), 139);
    CHECK_EQ(peek32(DST + 12), 154);
    CHECK_EQ(peek32(DST + 16), 0);
    CHECK_EQ(rd(E1_REG_DESC_BYTES_READ), 48);
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 12);
    CHECK_EQ(rd(E1_REG_DESC_BYTES_WRITTEN), 16);
    CHECK_EQ(rd(E1_REG_DESC_WRITE_BEATS), 4);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 2);
    CHECK_EQ(rd(E1_REG_PERF_CYCLES), 12);
    CHECK_EQ(rd(E1_REG_PERF_MACS), 12);
    CHECK_EQ(rd(E1_REG_PERF_STALL_CYCLES), 32);
    CHECK_EQ(rd(E1_REG_PERF_SCRATCH_BYTES), 72);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 0);
    CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), 0); /* reset by the last advance */
    CHECK_EQ(npk_sim_irq(S, 0), 1);
    /* the scratchpad holds the streamed inputs and the C tile */
    CHECK_EQ(rd(E1_REG_SCRATCH(0)), 0x040302ff);
    CHECK_EQ(rd(E1_REG_SCRATCH(11)), 154);
    /* the bus saw exactly those beats */
    npk_mem_stats st;
    npk_mem_get_stats(npk_sim_mem(S), &st);
    CHECK_EQ(st.read_beats, 12);
    CHECK_EQ(st.write_beats, 4);

    /* CTRL clear: DESC_STATUS 0, err_index 0, the four byte/beat counters 0;
     * the other counters stay */
    wr(E1_REG_CTRL_STATUS, E1_CTRL_CLEAR);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 0);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0);
    CHECK_EQ(rd(E1_REG_DESC_BYTES_READ), 0);
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 0);
    CHECK_EQ(rd(E1_REG_DESC_BYTES_WRITTEN), 0);
    CHECK_EQ(rd(E1_REG_DESC_WRITE_BEATS), 0);
    CHECK_EQ(rd(E1_REG_PERF_STALL_CYCLES), 32);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 2);
}

/* Cost of a ring from doorbell to done, checking busy up to the last cycle. */
static int ring_cost(void) {
    int n = 0;
    while ((rd(E1_REG_CTRL_STATUS) & 1) && n < 2000) {
        CHECK(rd(E1_REG_DESC_STATUS) & E1_DS_BUSY);
        step(1);
        n++;
    }
    CHECK_EQ(rd(E1_REG_DESC_STATUS) & E1_DS_BUSY, 0);
    return n;
}

static void test_costs(void) {
    for (uint32_t lat = 0; lat <= 3; lat++) {
        sim_open();
        npk_mem_set_latency(npk_sim_mem(S), lat);
        put_desc(0, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 2, 0);
        doorbell(0, 1);
        CHECK_EQ(ring_cost(), 11 + 4 * (int)lat);
        CHECK_EQ(rd(E1_REG_RESULT), 3);
        CHECK_EQ(rd(E1_REG_PERF_STALL_CYCLES), 8 + 4 * lat);
        CHECK_EQ(rd(E1_REG_PERF_CYCLES), 0);

        sim_open();
        npk_mem_set_latency(npk_sim_mem(S), lat);
        put_desc(0, e1_desc_w0(E1_OP_DOT4_S8, 0, 0, 0, 0), 0x04030201, 0xf807fa05, 0xffffff00);
        doorbell(0, 1);
        CHECK_EQ(ring_cost(), 13 + 4 * (int)lat);
        CHECK_EQ(rd(E1_REG_RESULT), 0xfffffeee);

        sim_open();
        npk_mem_set_latency(npk_sim_mem(S), lat);
        put_desc(3, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 2, 0);
        put_desc(4, e1_desc_w0(E1_OP_SUB, 0, 0, 0, 0), 10, 2, 0);
        doorbell(3, 5);
        CHECK_EQ(ring_cost(), 22 + 8 * (int)lat);
        CHECK_EQ(rd(E1_REG_RESULT), 8);
        CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x2u | (4u << 9));
        CHECK_EQ(rd(E1_REG_PERF_OPS), 2);

        sim_open();
        npk_mem_set_latency(npk_sim_mem(S), lat);
        gemm_2x2x3_setup();
        put_desc(0, e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 16, 0), SRC, 0, 0);
        doorbell(0, 1);
        CHECK_EQ(ring_cost(), 31 + 8 * (int)lat);
        CHECK_EQ(rd(E1_REG_SCRATCH(10)), 139);
        CHECK_EQ(rd(E1_REG_PERF_STALL_CYCLES), 16 + 8 * lat);
        CHECK_EQ(rd(E1_REG_PERF_SCRATCH_BYTES), 16 + 40);

        sim_open();
        npk_mem_set_latency(npk_sim_mem(S), lat);
        gemm_2x2x3_setup();
        put_desc(0, e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 16, 1), SRC, DST, 0);
        doorbell(0, 1);
        CHECK_EQ(ring_cost(), 39 + 12 * (int)lat);
        CHECK_EQ(peek32(DST + 12), 154);
        CHECK_EQ(rd(E1_REG_PERF_STALL_CYCLES), 24 + 12 * lat);
        CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), 0);
    }
    /* latency from a memory-map region */
    sim_open();
    npk_mem_map(npk_sim_mem(S), 0x1000, 0x1000, 5, "ring");
    npk_mem_map(npk_sim_mem(S), 0x2000, 0x2000, 0, "data");
    gemm_2x2x3_setup();
    put_desc(0, e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 16, 1), SRC, DST, 0);
    doorbell(0, 1);
    CHECK_EQ(ring_cost(), 39 + 4 * 5);
}

/* Streamed 3x3x4 GEMM with writeback: A 3x4 at 0, B 4x3 at 12, C at 24,
 * descriptor in slot 5, with `lat` extra cycles per memory beat. */
static int8_t T_A[12], T_B[12];
static int32_t t_c(int cell) {
    int32_t s = 0;
    for (int l = 0; l < 4; l++) s += T_A[(cell / 3) * 4 + l] * T_B[l * 3 + cell % 3];
    return s;
}

static void timeout_example_start(uint32_t lat) {
    for (int i = 0; i < 12; i++) {
        T_A[i] = (int8_t)(i * 7 - 40);
        T_B[i] = (int8_t)(30 - i * 5);
    }
    sim_open();
    npk_mem_set_latency(npk_sim_mem(S), lat);
    uint8_t img[24];
    memcpy(img, T_A, 12);
    memcpy(img + 12, T_B, 12);
    npk_mem_poke(npk_sim_mem(S), SRC, img, 24);
    wr(E1_REG_GEMM_CFG, e1_gemm_cfg(3, 3, 4));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 12, 24));
    wr(E1_REG_GEMM_STRIDE, e1_gemm_stride(4, 3, 12));
    put_desc(5, e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 24, 1), SRC, DST, 0);
    doorbell(5, 6);
}

static void test_timeout_boundary(void) {
    for (uint32_t lat = 0; lat <= 4; lat++) {
        timeout_example_start(lat);
        int n = ring_cost();
        if (lat <= 2) {
            CHECK_EQ(n, 77 + 19 * (int)lat);
            CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
            CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x2u | (5u << 9));
            for (int c = 0; c < 9; c++) CHECK_EQ(peek32(DST + 4 * c), (uint32_t)t_c(c));
            CHECK_EQ(rd(E1_REG_DESC_WRITE_BEATS), 9);
            CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 10);
        } else {
            CHECK_EQ(n, 129);
            CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
            CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x0cu | (5u << 9) | (1u << 19));
            CHECK_EQ(rd(E1_REG_DESC_TAIL), 5);
            CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), 129);
            CHECK_EQ(rd(E1_REG_PERF_ERRORS), 1);
            CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 1);
            CHECK_EQ(npk_sim_irq(S, 0), 1);
            CHECK(npk_sim_dev(S)->ops->idle(npk_sim_dev(S)));
            if (lat == 3) {
                /* Issue #13 / e1_npu.sv: awvalid/wvalid are decoded from the
                 * state register and the timeout only blocks the next-state
                 * update. The timeout cycle is the 9th write beat's address
                 * cycle, so memory takes that beat: all 9 C words are in guest
                 * memory while DESC_BYTES_WRITTEN counts 8 responses. */
                for (int c = 0; c < 9; c++) CHECK_EQ(peek32(DST + 4 * c), (uint32_t)t_c(c));
                CHECK_EQ(rd(E1_REG_DESC_WRITE_BEATS), 8);
                CHECK_EQ(rd(E1_REG_DESC_BYTES_WRITTEN), 32);
                npk_mem_stats st;
                npk_mem_get_stats(npk_sim_mem(S), &st);
                CHECK_EQ(st.write_beats, 9);
            }
            /* perf clear keeps DESC_TIMEOUT_COUNT; CTRL clear zeroes it */
            wr(E1_REG_PERF_ERRORS, 1);
            CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), 129);
            CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 0);
            wr(E1_REG_CTRL_STATUS, E1_CTRL_CLEAR);
            CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), 0);
            CHECK_EQ(rd(E1_REG_DESC_STATUS), 1u << 19);
        }
    }
}

/* Expected outcome of the timeout example at memory latency lat, derived
 * from the RTL's state machine as a schedule of busy cycles (edge 0 is the
 * first cycle after the doorbell; a transaction is one address cycle plus
 * 1 + lat data/response cycles, c = 2 + lat):
 *   fetch beat k:   address at k*c                       (k < 4)
 *   launch:         4c (-> stream)
 *   stream beat s:  address at 4c + 1 + s*c              (s < 6)
 *   launch:         10c + 1 (starts the GEMM)
 *   GEMM MAC m:     10c + 2 + m                          (m < 36)
 *   write beat w:   address at 10c + 38 + w*c            (w < 9)
 *   advance:        19c + 38
 * A beat's response is taken in its last cycle (address + c - 1). The
 * timeout fires on edge 128 (DESC_TIMEOUT_COUNT was 128 before it): that
 * edge's own engine work (a MAC, a request put on the bus) still happens,
 * nothing after it does, and no response is counted on it. */
typedef struct {
    int done, cost, reads_issued, reads_counted, writes_issued, writes_counted, macs, ops, stall;
    int on_timeout; /* a request put on the bus by the timeout cycle: 1 read, 2 write */
} t_expect;

static t_expect timeout_expect(int lat) {
    const int c = 2 + lat, T = 128;
    t_expect x;
    memset(&x, 0, sizeof x);
    if (19 * c + 38 < T) {
        x.done = 1;
        x.cost = 19 * c + 39;
        x.reads_issued = x.reads_counted = 10;
        x.writes_issued = x.writes_counted = 9;
        x.macs = 36;
        x.ops = 1;
        x.stall = 19 * c;
        return x;
    }
    x.cost = T + 1;
    for (int k = 0; k < 10; k++) {
        int a = k < 4 ? k * c : 4 * c + 1 + (k - 4) * c;
        if (a <= T) x.reads_issued++;
        if (a == T) x.on_timeout = 1;
        if (a + c - 1 < T) x.reads_counted++;
        for (int e = a; e < a + c; e++) x.stall += e <= T;
    }
    if (10 * c + 1 < T) x.ops = 1;
    for (int m = 0; m < 36; m++) x.macs += x.ops && 10 * c + 2 + m <= T;
    for (int w = 0; w < 9; w++) {
        int a = 10 * c + 38 + w * c;
        if (a <= T) x.writes_issued++;
        if (a == T) x.on_timeout = 2;
        if (a + c - 1 < T) x.writes_counted++;
        for (int e = a; e < a + c; e++) x.stall += e <= T;
    }
    return x;
}

/* Issue #13: sweep the memory latency over 1..200 and compare everything
 * the timeout cycle can affect with the schedule above. */
static void test_timeout_latency_sweep(void) {
    int extra_write = 0, extra_read = 0;
    for (int lat = 1; lat <= 200; lat++) {
        t_expect x = timeout_expect(lat);
        timeout_example_start((uint32_t)lat);
        int n = ring_cost();
        CHECK_EQ(n, x.cost);
        npk_mem_stats st;
        npk_mem_get_stats(npk_sim_mem(S), &st);
        CHECK_EQ(st.read_beats, (uint64_t)x.reads_issued);
        CHECK_EQ(st.write_beats, (uint64_t)x.writes_issued);
        CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), (uint32_t)x.reads_counted);
        CHECK_EQ(rd(E1_REG_DESC_BYTES_READ), 4u * (uint32_t)x.reads_counted);
        CHECK_EQ(rd(E1_REG_DESC_WRITE_BEATS), (uint32_t)x.writes_counted);
        CHECK_EQ(rd(E1_REG_DESC_BYTES_WRITTEN), 4u * (uint32_t)x.writes_counted);
        CHECK_EQ(rd(E1_REG_PERF_MACS), (uint32_t)x.macs);
        CHECK_EQ(rd(E1_REG_PERF_CYCLES), (uint32_t)x.macs);
        CHECK_EQ(rd(E1_REG_PERF_OPS), (uint32_t)x.ops);
        CHECK_EQ(rd(E1_REG_PERF_STALL_CYCLES), (uint32_t)x.stall);
        CHECK_EQ(rd(E1_REG_CTRL_STATUS), x.done ? 2u : 6u);
        CHECK_EQ(rd(E1_REG_DESC_STATUS) & 0xff, x.done ? 0x02u : 0x0cu);
        CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), x.done ? 0u : 129u);
        /* guest memory holds exactly the issued write beats */
        for (int w = 0; w < 9; w++) CHECK_EQ(peek32(DST + 4 * w), w < x.writes_issued ? (uint32_t)t_c(w) : 0u);
        /* the scratchpad holds the counted stream beats and the finished C cells */
        for (int s = 0; s < 6; s++) {
            uint32_t want = 0;
            if (s < x.reads_counted - 4)
                for (int b = 0; b < 4; b++) {
                    int i = s * 4 + b;
                    want |= (uint32_t)(uint8_t)(i < 12 ? T_A[i] : T_B[i - 12]) << (8 * b);
                }
            CHECK_EQ(rd(E1_REG_SCRATCH(s)), want);
        }
        for (int cell = 0; cell < 9; cell++)
            CHECK_EQ(rd(E1_REG_SCRATCH(6 + cell)), x.macs >= 4 * (cell + 1) ? (uint32_t)t_c(cell) : 0u);
        extra_read += x.on_timeout == 1;
        extra_write += x.on_timeout == 2;
    }
    /* the sweep covers both kinds of in-flight beat */
    CHECK(extra_write > 0);
    CHECK(extra_read > 0);
}

/* Issue #13: a fault rule that counts write beats sees the beat issued on
 * the timeout cycle (latency 3: the 9th write, beat index 8). */
static void test_timeout_beat_fault(void) {
    timeout_example_start(3);
    npk_fault f;
    CHECK_EQ(npk_fault_parse("write@0x3000+0x100#8=error", &f), 0);
    npk_mem_add_fault(npk_sim_mem(S), &f);
    CHECK_EQ(ring_cost(), 129);
    CHECK_EQ(rd(E1_REG_DESC_STATUS) & 0xff, 0x0cu); /* the timeout, not a write error */
    npk_mem_stats st;
    npk_mem_get_stats(npk_sim_mem(S), &st);
    CHECK_EQ(st.errors, 1);               /* the rule fired on that beat */
    CHECK_EQ(peek32(DST + 32), 0);        /* and the faulted beat wrote nothing */
    CHECK_EQ(peek32(DST + 28), (uint32_t)t_c(7));
    CHECK_EQ(rd(E1_REG_DESC_WRITE_BEATS), 8);

    /* the read side: at latency 62 (c = 64) the timeout cycle 128 is the address cycle of the
     * third descriptor-word fetch (2 * 64); a rule on that read beat fires, the ring still
     * ends with the timeout code and 2 counted read beats */
    timeout_example_start(62);
    CHECK_EQ(npk_fault_parse("read@0x1050+0x10#2=error", &f), 0);
    npk_mem_add_fault(npk_sim_mem(S), &f);
    CHECK_EQ(ring_cost(), 129);
    CHECK_EQ(rd(E1_REG_DESC_STATUS) & 0xff, 0x0cu);
    npk_mem_get_stats(npk_sim_mem(S), &st);
    CHECK_EQ(st.errors, 1);
    CHECK_EQ(st.read_beats, 2); /* the faulted third beat is not a completed read */
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 2);
}

static void test_timeout_counter_progress(void) {
    sim_open();
    put_desc(0, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 2, 0);
    put_desc(1, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 2, 0);
    doorbell(0, 2);
    for (int c = 1; c <= 10; c++) {
        step(1);
        CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), c);
    }
    step(1); /* advance of descriptor 0 resets it */
    CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), 0);
    CHECK_EQ(rd(E1_REG_DESC_TAIL), 1);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x2u | 0x100u | (1u << 19));
    step(3);
    CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), 3);
    /* perf clear during the ring zeroes byte/beat counters but not the timeout count */
    wr(E1_REG_PERF_ERRORS, 1);
    CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), 3);
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 0);
    /* a start while the ring is busy is ignored */
    wr(E1_REG_OPCODE, E1_OP_MUL_LO);
    wr(E1_REG_CMD_PARAM, 0);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 1);
    CHECK_EQ(run_ring(100), 8);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 1); /* descriptor 1 only, after the clear */
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 3); /* words 1-3 of descriptor 1 arrived after the clear */
}

static void test_doorbell_checks(void) {
    sim_open();
    /* head == tail: 0x01 */
    wr(E1_REG_DESC_BASE, RING);
    wr(E1_REG_DESC_TAIL, 4);
    wr(E1_REG_DESC_HEAD, 4);
    wr(E1_REG_CMD_PARAM, E1_CMD_DESC);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_CLEAR);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x1u | (4u << 9));
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 1);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 1);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 0);
    CHECK(npk_sim_dev(S)->ops->idle(npk_sim_dev(S)));
    /* unaligned base: 0x04, checked before emptiness */
    wr(E1_REG_DESC_BASE, RING + 2);
    wr(E1_REG_DESC_TAIL, 6);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x4u | (6u << 9) | (6u << 19));
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 2);
    step(50);
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 0);
    /* 0x3 with a failing doorbell: status 0, DESC_STATUS 0 */
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START | E1_CTRL_CLEAR);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 0);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 6u << 19);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 3);
    /* a new doorbell zeroes the byte/beat counters */
    sim_open();
    put_desc(0, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 2, 0);
    doorbell(0, 1);
    run_ring(100);
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 4);
    doorbell(0, 1);
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 0);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x100u | (1u << 19));
    run_ring(100);
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 4);
}

/* Ring of up to 3 descriptors where `bad` (slot) carries a launch error. */
static void launch_error(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t expect_code, uint32_t expect_rbeats) {
    /* expect_rbeats: stream beats read before the error */
    sim_open();
    gemm_2x2x3_setup();
    put_desc(2, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 2, 0);
    put_desc(3, w0, w1, w2, 0);
    put_desc(4, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 2, 0);
    doorbell(2, 5);
    run_ring(500);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    /* err_index = the last completed descriptor (2), TAIL = the faulting one (3) */
    CHECK_EQ(rd(E1_REG_DESC_STATUS), expect_code | (2u << 9) | (2u << 19));
    CHECK_EQ(rd(E1_REG_DESC_TAIL), 3);
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 8 + expect_rbeats);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 1);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 1);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 1);
    CHECK_EQ(rd(E1_REG_DESC_WRITE_BEATS), 0);
    CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), 9); /* 8 fetch cycles + the launch */
}

static void test_launch_errors(void) {
    /* valid_owner clear: 0x44 (checked first, even with a bad stream) */
    launch_error(e1_desc_w0(E1_OP_ADD, 1, 2, 0, 1) & ~E1_DESC_W0_VALID_OWNER, 1, 2, E1_DS_NO_OWNER, 0);
    /* stream config: unaligned source, unaligned offset, zero length, unaligned length, beyond 64 */
    launch_error(e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 16, 0), SRC + 2, 0, E1_DS_STREAM_CFG, 0);
    launch_error(e1_desc_w0(E1_OP_GEMM_S8, 1, 2, 16, 0), SRC, 0, E1_DS_STREAM_CFG, 0);
    launch_error(e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 0, 0), SRC, 0, E1_DS_STREAM_CFG, 0);
    launch_error(e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 62, 0), SRC, 0, E1_DS_STREAM_CFG, 0);
    launch_error(e1_desc_w0(E1_OP_GEMM_S8, 1, 52, 16, 0), SRC, 0, E1_DS_STREAM_CFG, 0);
    /* stream checked before writeback */
    launch_error(e1_desc_w0(E1_OP_ADD, 1, 0, 0, 1), SRC, 0, E1_DS_STREAM_CFG, 0);
    /* writeback: non-GEMM opcode, unaligned destination */
    launch_error(e1_desc_w0(E1_OP_ADD, 0, 0, 0, 1), 1, 2, E1_DS_WB_CFG, 0);
    launch_error(e1_desc_w0(E1_OP_VRELU_S8, 0, 0, 0, 1), 1, DST, E1_DS_WB_CFG, 0);
    launch_error(e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 16, 1), SRC, DST + 2, E1_DS_WB_CFG, 0);
    /* the stream length 60 with offset 8 overflows the scratchpad */
    launch_error(e1_desc_w0(E1_OP_GEMM_S8, 1, 8, 60, 0), SRC, 0, E1_DS_STREAM_CFG, 0);
}

static void test_launch_errors_cfg(void) {
    /* writeback with C_BASE + M*N*4 > 64 */
    sim_open();
    gemm_2x2x3_setup();
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 8, 52)); /* 52 + 16 > 64 */
    put_desc(0, e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 16, 1), SRC, DST, 0);
    doorbell(0, 1);
    CHECK_EQ(run_ring(200), 9);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x84u | (1u << 19));
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 4); /* no stream read before the check */
    /* GEMM config invalid: 0x06 after the stream reads */
    sim_open();
    gemm_2x2x3_setup();
    wr(E1_REG_GEMM_CFG, e1_gemm_cfg(2, 0, 3));
    put_desc(0, e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 16, 0), SRC, 0, 0);
    doorbell(0, 1);
    CHECK_EQ(run_ring(200), 18);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x06u | (1u << 19));
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 8);
    CHECK_EQ(rd(E1_REG_SCRATCH(3)), 0x00000c0b); /* the stream landed */
    CHECK_EQ(rd(E1_REG_PERF_OPS), 0);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 1);
    /* VRELU config invalid (LEN 0) without a stream: 0x06 at the first launch */
    sim_open();
    wr(E1_REG_GEMM_CFG, 0);
    put_desc(0, e1_desc_w0(E1_OP_VRELU_S8, 0, 0, 0, 0), 0, 0, 0);
    doorbell(0, 1);
    CHECK_EQ(run_ring(200), 9);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x06u | (1u << 19));
    /* VRELU in a ring with a stream to offset 8 */
    sim_open();
    poke32(SRC, 0x80ff7f01);
    poke32(SRC + 4, 0x05fb0a0b);
    wr(E1_REG_GEMM_CFG, e1_vrelu_cfg(8));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(8, 32, 0));
    put_desc(7, e1_desc_w0(E1_OP_VRELU_S8, 1, 8, 8, 0), SRC, 0, 0);
    doorbell(7, 0);
    CHECK_EQ(run_ring(200), 8 + 1 + 4 + 1 + 8 + 1);
    CHECK_EQ(rd(E1_REG_SCRATCH(8)), 0x00007f01);
    CHECK_EQ(rd(E1_REG_SCRATCH(9)), 0x05000a0b);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x2u | (7u << 9));
    CHECK_EQ(rd(E1_REG_DESC_TAIL), 0);
    CHECK_EQ(rd(E1_REG_PERF_CYCLES), 8);
    CHECK_EQ(rd(E1_REG_PERF_SCRATCH_BYTES), 8 + 16);
    /* GEMM_S4 in a ring: A/B addresses count nibbles */
    sim_open();
    poke32(SRC, 0x000043e1);
    wr(E1_REG_GEMM_CFG, e1_gemm_cfg(1, 1, 2));
    wr(E1_REG_GEMM_BASE, e1_gemm_base(0, 2, 4));
    wr(E1_REG_GEMM_STRIDE, e1_gemm_stride(0, 1, 0));
    put_desc(0, e1_desc_w0(E1_OP_GEMM_S4, 1, 0, 4, 1), SRC, DST, 0);
    doorbell(0, 1);
    CHECK_EQ(run_ring(200), 8 + 1 + 2 + 1 + 2 + 2 + 1);
    CHECK_EQ(peek32(DST), (uint32_t)-5);
}

static void test_bus_errors(void) {
    npk_fault f;
    /* descriptor fetch error on word 1 of the first descriptor: 0x14 */
    sim_open();
    put_desc(0, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 2, 0);
    memset(&f, 0, sizeof f);
    f.access = NPK_ACC_READ;
    f.addr = RING + 4;
    f.len = 4;
    f.beat = -1;
    f.resp = NPK_BUS_ERROR;
    npk_mem_add_fault(npk_sim_mem(S), &f);
    doorbell(0, 1);
    CHECK_EQ(run_ring(200), 4);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x14u | (1u << 19));
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 1);
    CHECK_EQ(rd(E1_REG_DESC_BYTES_READ), 4);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 1);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 1);
    CHECK_EQ(rd(E1_REG_PERF_STALL_CYCLES), 4);
    CHECK_EQ(npk_sim_irq(S, 0), 1);

    /* with latency 3 the error response arrives 3 cycles later */
    sim_open();
    npk_mem_set_latency(npk_sim_mem(S), 3);
    put_desc(0, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 2, 0);
    npk_mem_add_fault(npk_sim_mem(S), &f);
    doorbell(0, 1);
    CHECK_EQ(run_ring(200), 4 + 6);

    /* stream read error on the second beat: 0x34 */
    sim_open();
    gemm_2x2x3_setup();
    put_desc(0, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 2, 0);
    put_desc(1, e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 16, 1), SRC, DST, 0);
    f.addr = SRC + 4;
    npk_mem_add_fault(npk_sim_mem(S), &f);
    doorbell(0, 2);
    CHECK_EQ(run_ring(200), 11 + 9 + 4);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x34u | (0u << 9) | (1u << 19));
    CHECK_EQ(rd(E1_REG_DESC_TAIL), 1);
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 9);
    CHECK_EQ(rd(E1_REG_DESC_BYTES_READ), 36);
    CHECK_EQ(rd(E1_REG_PERF_SCRATCH_BYTES), 4);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 1);

    /* writeback error on the third write: 0x94 */
    sim_open();
    gemm_2x2x3_setup();
    put_desc(0, e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 16, 1), SRC, DST, 0);
    memset(&f, 0, sizeof f);
    f.access = NPK_ACC_WRITE;
    f.beat = 2;
    f.resp = NPK_BUS_ERROR;
    npk_mem_add_fault(npk_sim_mem(S), &f);
    doorbell(0, 1);
    CHECK_EQ(run_ring(200), 30 + 6);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x94u | (1u << 19));
    CHECK_EQ(rd(E1_REG_DESC_WRITE_BEATS), 2);
    CHECK_EQ(rd(E1_REG_DESC_BYTES_WRITTEN), 8);
    CHECK_EQ(peek32(DST + 4), 48);
    CHECK_EQ(peek32(DST + 8), 0);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 1);
    CHECK_EQ(rd(E1_REG_PERF_MACS), 12);

    /* a fetch outside the memory map is a bus error */
    sim_open();
    npk_mem_map(npk_sim_mem(S), 0x100000, 0x1000, 0, "ram");
    wr(E1_REG_DESC_BASE, 0x200000);
    wr(E1_REG_DESC_HEAD, 1);
    wr(E1_REG_CMD_PARAM, E1_CMD_DESC);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(run_ring(200), 2);
    CHECK_EQ(rd(E1_REG_DESC_STATUS) & 0xff, 0x14);
}

static void test_hangs(void) {
    npk_fault f;
    memset(&f, 0, sizeof f);
    f.access = NPK_ACC_READ;
    f.addr = RING + 8;
    f.len = 4;
    f.beat = -1;
    f.resp = NPK_BUS_HANG;
    /* descriptor fetch never answered: timeout after 129 cycles */
    sim_open();
    put_desc(0, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 2, 0);
    npk_mem_add_fault(npk_sim_mem(S), &f);
    doorbell(0, 1);
    CHECK_EQ(run_ring(1000), 129);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x0cu | (1u << 19));
    CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), 129);
    CHECK_EQ(rd(E1_REG_PERF_STALL_CYCLES), 129);
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 2);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 1);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 1);
    /* an accepted doorbell restarts DESC_TIMEOUT_COUNT (the ring resumes at TAIL 0) */
    npk_mem_clear_faults(npk_sim_mem(S));
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), 0);
    step(2);
    CHECK_EQ(rd(E1_REG_DESC_TIMEOUT_COUNT), 2);
    CHECK_EQ(run_ring(100), 9);
    CHECK_EQ(rd(E1_REG_RESULT), 3);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x2u);

    /* the second descriptor's stream hangs: 129 cycles after the first advance */
    sim_open();
    gemm_2x2x3_setup();
    put_desc(0, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 2, 0);
    put_desc(1, e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 16, 0), SRC, 0, 0);
    f.addr = SRC + 8;
    npk_mem_add_fault(npk_sim_mem(S), &f);
    doorbell(0, 2);
    CHECK_EQ(run_ring(1000), 11 + 129);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x0cu | (0u << 9) | (1u << 19));
    CHECK_EQ(rd(E1_REG_DESC_TAIL), 1);

    /* a writeback response that never comes; the GEMM itself finished */
    sim_open();
    gemm_2x2x3_setup();
    put_desc(0, e1_desc_w0(E1_OP_GEMM_S8, 1, 0, 16, 1), SRC, DST, 0);
    memset(&f, 0, sizeof f);
    f.access = NPK_ACC_WRITE;
    f.beat = 0;
    f.resp = NPK_BUS_HANG;
    npk_mem_add_fault(npk_sim_mem(S), &f);
    doorbell(0, 1);
    CHECK_EQ(run_ring(1000), 129);
    CHECK_EQ(rd(E1_REG_DESC_STATUS) & 0xff, 0x0c);
    CHECK_EQ(rd(E1_REG_PERF_MACS), 12);
    CHECK_EQ(rd(E1_REG_SCRATCH(11)), 154);
    CHECK_EQ(rd(E1_REG_DESC_WRITE_BEATS), 0);
}

static void test_ternary_in_ring(void) {
    /* last descriptor: the error is masked by the final advance */
    sim_open();
    wr(E1_REG_RESULT, 0);
    put_desc(0, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 2, 0);
    put_desc(1, e1_desc_w0(E1_OP_DOT16_S2, 0, 0, 0, 0), 3, 0, 0);
    wr(E1_REG_DESC_BASE, RING);
    wr(E1_REG_DESC_HEAD, 2);
    wr(E1_REG_CMD_PARAM, E1_CMD_DESC | E1_CMD_TERNARY);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    /* the ternary error shows in CTRL_STATUS while the ring is still busy */
    step(11 + 12);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK(rd(E1_REG_DESC_STATUS) & E1_DS_BUSY);
    CHECK_EQ(npk_sim_irq(S, 0), 1);
    step(1);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 2);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x2u | (1u << 9));
    CHECK_EQ(rd(E1_REG_DESC_TAIL), 2);
    CHECK_EQ(rd(E1_REG_RESULT), 3); /* unchanged since the ADD */
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 1);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 0);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 2);

    /* not the last: the next fetch stalls (CTRL busy bit dropped), the ring times out */
    sim_open();
    put_desc(0, e1_desc_w0(E1_OP_DOT16_S2, 0, 0, 0, 0), 0xc0, 0, 0);
    put_desc(1, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), 1, 2, 0);
    wr(E1_REG_DESC_BASE, RING);
    wr(E1_REG_DESC_HEAD, 2);
    wr(E1_REG_CMD_PARAM, E1_CMD_DESC | E1_CMD_TERNARY);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(13);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(rd(E1_REG_DESC_TAIL), 1);
    CHECK(!npk_sim_dev(S)->ops->idle(npk_sim_dev(S)));
    CHECK_EQ(npk_sim_run_until_idle(S, 1000), 129);
    CHECK_EQ(rd(E1_REG_CTRL_STATUS), 6);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x0cu | (0u << 9) | (1u << 19));
    CHECK_EQ(rd(E1_REG_DESC_READ_BEATS), 4);
    CHECK_EQ(rd(E1_REG_PERF_ERRORS), 2);
    CHECK_EQ(rd(E1_REG_PERF_UNSUPPORTED_OPS), 1);
    CHECK_EQ(rd(E1_REG_PERF_STALL_CYCLES), 8 + 129);

    /* without CMD_PARAM[1] the same operands are plain INT2 */
    sim_open();
    put_desc(0, e1_desc_w0(E1_OP_DOT16_S2, 0, 0, 0, 0), 0xc0, 0xc0, 7);
    doorbell(0, 1);
    CHECK_EQ(run_ring(100), 13);
    CHECK_EQ(rd(E1_REG_RESULT), 8);
}

static void test_ring_wrap_and_operands(void) {
    sim_open();
    /* tail 6, head 1: slots 6, 7, 0 */
    put_desc(6, e1_desc_w0(E1_OP_MUL_LO, 0, 0, 0, 0), 0x10000, 0x10000, 0);
    put_desc(7, e1_desc_w0(E1_OP_MAC_S16, 0, 0, 0, 0), 0xfffe, 3, 100);
    put_desc(0, e1_desc_w0(E1_OP_EXP2_NEG_Q0_8, 0, 0, 0, 0), 0xfe, 0, 0);
    doorbell(6, 1);
    CHECK_EQ(run_ring(200), 3 * (8 + 1 + 2 + 1)); /* fetch, launch, 2-cycle op, advance */
    CHECK_EQ(rd(E1_REG_RESULT), 64);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x2u);
    CHECK_EQ(rd(E1_REG_DESC_TAIL), 1);
    CHECK_EQ(rd(E1_REG_TRACE), (uint32_t)E1_OP_EXP2_NEG_Q0_8 << 3);
    CHECK_EQ(rd(E1_REG_PERF_OPS), 3);
    /* 7 pending entries */
    sim_open();
    for (unsigned s = 0; s < 8; s++) put_desc(s, e1_desc_w0(E1_OP_ADD, 0, 0, 0, 0), s, 100, 0);
    doorbell(3, 2);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x100u | (3u << 9) | (7u << 19));
    CHECK_EQ(run_ring(500), 7 * 11);
    CHECK_EQ(rd(E1_REG_RESULT), 101);
    CHECK_EQ(rd(E1_REG_DESC_STATUS), 0x2u | (1u << 9));
}

static void test_trace(void) {
    sim_open();
    npk_trace *t = npk_trace_new();
    npk_sim_dev(S)->trace = t;
    /* direct: a scalar op, a GEMM and a VRELU */
    wr(E1_REG_OPCODE, E1_OP_DOT4_S8);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(5);
    gemm_2x2x3_setup();
    wr(E1_REG_SCRATCH(0), 0x040302ff);
    wr(E1_REG_OPCODE, E1_OP_GEMM_S8);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(20);
    wr(E1_REG_GEMM_CFG, e1_vrelu_cfg(5));
    wr(E1_REG_OPCODE, E1_OP_VRELU_S8);
    wr(E1_REG_CTRL_STATUS, E1_CTRL_START);
    step(20);
    CHECK_EQ(npk_trace_count(t), 3);
    CHECK_EQ(npk_trace_total_cycles(t, "e1", "datapath"), 3);
    CHECK_EQ(npk_trace_total_cycles(t, "e1", "gemm") + npk_trace_total_cycles(t, "e1", "vector"),
             rd(E1_REG_PERF_CYCLES));
    /* the worked ring: one event per descriptor */
    wr(E1_REG_GEMM_CFG, 0x00030202);
    put_desc(0, 0x80000004, 0x04030201, 0xf807fa05, 0xffffff00);
    put_desc(1, 0xD0000108, SRC, DST, 0);
    doorbell(0, 2);
    step(100);
    /* one event per descriptor, per fetch, per DMA phase (stream-in and
     * writeback of the GEMM) and per engine command inside the ring */
    CHECK_EQ(npk_trace_events(t, "e1", "descriptor"), 2);
    CHECK_EQ(npk_trace_events(t, "e1", "desc fetch"), 2);
    CHECK_EQ(npk_trace_events(t, "e1", "dma"), 2);
    CHECK_EQ(npk_trace_events(t, "e1", "datapath"), 2);
    CHECK_EQ(npk_trace_events(t, "e1", "gemm"), 2);
    CHECK_EQ(npk_trace_sum_arg(t, "e1", "desc fetch", "read_bytes"), 32);
    CHECK_EQ(npk_trace_sum_arg(t, "e1", "dma", "read_bytes"), 16);
    CHECK_EQ(npk_trace_sum_arg(t, "e1", "dma", "written_bytes"), 16);
    CHECK_EQ(npk_trace_total_cycles(t, "e1", "descriptor"), 52);
    npk_sim_dev(S)->trace = NULL;
    npk_trace_free(t);
}

int main(void) {
    test_worked_ring();
    test_costs();
    test_timeout_boundary();
    test_timeout_latency_sweep();
    test_timeout_beat_fault();
    test_timeout_counter_progress();
    test_doorbell_checks();
    test_launch_errors();
    test_launch_errors_cfg();
    test_bus_errors();
    test_hangs();
    test_ternary_in_ring();
    test_ring_wrap_and_operands();
    test_trace();
    npk_sim_free(S);
    return CHECK_DONE();
}
