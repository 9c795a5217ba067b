// SPDX-License-Identifier: MIT
/* v0 device model at register level: reset state, the queue protocol, every
 * error code with its recovery rule (e1-npu-v0-microarch.md "Interrupt and
 * error registers" and "CPU fallback contract"), interrupts, a wrapping
 * ring, PERF counters against the trace, device options. Expectations come
 * from the document and docs/v0.md, results from src/ops/ref_int8.c. */
#include "check.h"
#include "npukit/sim.h"
#include "npukit/trace.h"
#include "npukit/v0.h"
#include "ops/ref.h"

#include <stdlib.h>

static npk_sim *S;
static npk_mem *M;
#define RING 0x80000000ull
#define DATA 0x80100000ull

static uint32_t rd(uint32_t off) {
    uint64_t v = 0;
    npk_sim_read(S, NPK_V0_MMIO_BASE + off, 4, &v);
    return (uint32_t)v;
}
static void wr(uint32_t off, uint32_t v) { npk_sim_write(S, NPK_V0_MMIO_BASE + off, 4, v); }

static void put(uint32_t slot, npk_v0_desc d) {
    uint8_t raw[64];
    npk_v0_desc_pack(&d, raw);
    npk_mem_poke(M, RING + slot * 64ull, raw, 64);
}

static void open_dev(const char *opts, uint32_t len, uint32_t ctrl) {
    if (S) npk_sim_free(S);
    S = npk_sim_new("v0", opts);
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

static uint32_t status(void) { return rd(NPK_V0_REG_STATUS); }
static void run(void) { npk_sim_run_until_idle(S, 100000000); }

static npk_v0_desc nop(uint32_t tag, uint32_t flags) { return npk_v0_desc_simple(NPK_V0_OP_NOP, flags, tag); }

/* A small valid matmul in DATA with its operands filled. */
static npk_v0_desc small_matmul(uint32_t tag) {
    int8_t a[4 * 16], b[4 * 16];
    for (int i = 0; i < 64; i++) a[i] = (int8_t)(i * 7 - 100), b[i] = (int8_t)(50 - i * 3);
    npk_mem_poke(M, DATA, a, sizeof a);
    npk_mem_poke(M, DATA + 0x1000, b, sizeof b);
    return npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 4, 4, 4, DATA, 16, DATA + 0x1000, 16, DATA + 0x2000, 16, tag);
}

static void test_reset(void) {
    open_dev(NULL, 256, 0);
    CHECK_EQ(rd(NPK_V0_REG_ID), 0x4E505530);
    /* gemmini_present, int8, int32_accum, relu, 16 rows, 16 cols */
    CHECK_EQ(rd(NPK_V0_REG_CAPS), 0x1u | 0x2u | 0x4u | 0x8u | 16u << 8 | 16u << 16);
    CHECK_EQ(rd(NPK_V0_REG_CTRL), 0);
    CHECK_EQ(status(), NPK_V0_ST_QUEUE_EMPTY);
    CHECK_EQ(rd(NPK_V0_REG_DESC_RING_LEN), 256);
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 0);
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), 0);
    CHECK_EQ(rd(0x03C), 0);
    CHECK_EQ(rd(0x080), 0);
    CHECK_EQ(rd(NPK_V0_REG_DESC_DOORBELL), 0);
    /* DESC_BASE low bits are not stored (64-byte records) */
    wr(NPK_V0_REG_DESC_BASE_LO, 0x1234567F);
    CHECK_EQ(rd(NPK_V0_REG_DESC_BASE_LO), 0x12345640);
    /* RO registers ignore writes */
    wr(NPK_V0_REG_ID, 0);
    wr(NPK_V0_REG_CAPS, 0);
    wr(NPK_V0_REG_STATUS, 0xFFFFFFFF);
    CHECK_EQ(rd(NPK_V0_REG_ID), 0x4E505530);
    CHECK_EQ(rd(NPK_V0_REG_CAPS), NPK_V0_CAPS_DEFAULT);
    CHECK_EQ(status(), NPK_V0_ST_QUEUE_EMPTY);
    /* ring length: only powers of two 2..256 are taken */
    wr(NPK_V0_REG_DESC_RING_LEN, 48);
    CHECK_EQ(rd(NPK_V0_REG_DESC_RING_LEN), 256);
    wr(NPK_V0_REG_DESC_RING_LEN, 512);
    CHECK_EQ(rd(NPK_V0_REG_DESC_RING_LEN), 256);
    wr(NPK_V0_REG_DESC_RING_LEN, 8);
    CHECK_EQ(rd(NPK_V0_REG_DESC_RING_LEN), 8);
    /* options */
    npk_sim *bad = npk_sim_new("v0", "gemmini_present=2");
    CHECK(bad == NULL);
    CHECK(strstr(npk_errmsg(), "gemmini_present") != NULL);
    bad = npk_sim_new("v0", "dram_bw=0");
    CHECK(bad == NULL);
    bad = npk_sim_new("v0", "colour=blue");
    CHECK(bad == NULL);
    CHECK(strstr(npk_errmsg(), "colour") != NULL);
    bad = npk_sim_new("v0", "rows=12");
    CHECK(bad == NULL);
    CHECK(strstr(npk_errmsg(), "rows=12") != NULL);
    bad = npk_sim_new("v0", "cols=64");
    CHECK(bad == NULL);
    CHECK(strstr(npk_errmsg(), "cols") != NULL);
    /* a 32x32 int32 block needs 4 KiB per accumulator half */
    bad = npk_sim_new("v0", "rows=32,cols=32,acc_kib=4");
    CHECK(bad == NULL);
    CHECK(strstr(npk_errmsg(), "acc_kib") != NULL);
    open_dev("rows=8,cols=32", 8, 0);
    CHECK_EQ(rd(NPK_V0_REG_CAPS), 0x1u | 0x2u | 0x4u | 0x8u | 8u << 8 | 32u << 16);
}

/* The geometry options change the cycles, never the results: one matmul and
 * one conv on several array/SRAM geometries against the C reference. */
static void test_geometry_options(void) {
    enum { MM = 70, NN = 48, KK = 200 };
    static const char *const opts[] = {NULL, "rows=8,cols=8,spad_kib=8,acc_kib=4", "rows=32,cols=32",
                                       "rows=16,cols=32,spad_kib=32,acc_kib=16,dram_bw=16"};
    static int8_t a[MM * 208], b[KK * NN];
    static int32_t want[MM * NN], got[MM * NN];
    for (int i = 0; i < MM * 208; i++) a[i] = (int8_t)(i * 37 % 251 - 125);
    for (int i = 0; i < KK * NN; i++) b[i] = (int8_t)(i * 53 % 241 - 120);
    npk_ref_matmul_s8s32(MM, NN, KK, a, 208, b, NN, want, NN, 0, 0);
    uint32_t cycles[4];
    for (int o = 0; o < 4; o++) {
        open_dev(opts[o], 8, NPK_V0_CTRL_ENABLE);
        npk_mem_poke(M, DATA, a, sizeof a);
        npk_mem_poke(M, DATA + 0x10000, b, sizeof b);
        npk_v0_desc d = npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, MM, NN, KK, DATA, 208, DATA + 0x10000, NN,
                                           DATA + 0x20000, NN * 4, 1);
        put(0, d);
        wr(NPK_V0_REG_DESC_DOORBELL, 1);
        run();
        CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS) & NPK_V0_IRQ_ERROR, 0);
        memset(got, 0, sizeof got);
        npk_mem_peek(M, DATA + 0x20000, got, sizeof got);
        CHECK(memcmp(got, want, sizeof got) == 0);
        cycles[o] = rd(NPK_V0_REG_PERF_CYCLES);
        CHECK_EQ(rd(NPK_V0_REG_PERF_MACS_LO), (uint32_t)MM * NN * KK);
    }
    /* 8x8 with small SRAMs is slower than 16x16, 32x32 faster */
    CHECK(cycles[1] > cycles[0]);
    CHECK(cycles[2] < cycles[0]);
    CHECK(cycles[3] != cycles[0]);
}

static void test_nops_tags_done(void) {
    open_dev(NULL, 8, NPK_V0_CTRL_ENABLE);
    put(0, nop(0x11, 0));
    put(1, nop(0x22, 0));
    put(2, nop(0x33, 0));
    wr(NPK_V0_REG_DESC_DOORBELL, 3);
    /* committed, not yet run: q_level 3, not empty, not done */
    CHECK_EQ(npk_v0_st_qlevel(status()), 3);
    CHECK_EQ(status() & (NPK_V0_ST_QUEUE_EMPTY | NPK_V0_ST_DONE), 0);
    CHECK_EQ(rd(NPK_V0_REG_DESC_HEAD), 3);
    run();
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 3);
    CHECK_EQ(rd(NPK_V0_REG_COMPLETION_TAG), 0x33);
    CHECK_EQ(status(), NPK_V0_ST_QUEUE_EMPTY | NPK_V0_ST_DONE);
    /* no irq_on_complete: IRQ_STATUS.done stays 0 */
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), 0);
    /* DESC_HEAD writes are stored but do not commit */
    put(3, nop(0x44, 0));
    wr(NPK_V0_REG_DESC_HEAD, 4);
    run();
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 3);
    CHECK_EQ(npk_v0_st_qlevel(status()), 0);
    wr(NPK_V0_REG_DESC_DOORBELL, 4);
    run();
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 4);
    CHECK_EQ(rd(NPK_V0_REG_COMPLETION_TAG), 0x44);
    /* CTRL.enable = 0: committed work waits */
    wr(NPK_V0_REG_CTRL, 0);
    put(4, nop(0x55, 0));
    wr(NPK_V0_REG_DESC_DOORBELL, 5);
    run();
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 4);
    CHECK_EQ(npk_v0_st_qlevel(status()), 1);
    wr(NPK_V0_REG_CTRL, NPK_V0_CTRL_ENABLE);
    run();
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 5);
}

static void test_irq(void) {
    open_dev(NULL, 8, NPK_V0_CTRL_ENABLE | NPK_V0_CTRL_IRQ_ENABLE);
    /* irq_on_complete but IRQ_MASK.done == 0: no done */
    put(0, nop(1, NPK_V0_F_IRQ));
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    run();
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), 0);
    CHECK_EQ(npk_sim_irq(S, 0), 0);
    /* with the mask: done set, line 0 high; W1C clears both */
    wr(NPK_V0_REG_IRQ_MASK, NPK_V0_IRQ_DONE);
    put(1, nop(2, NPK_V0_F_IRQ));
    put(2, nop(3, 0));
    wr(NPK_V0_REG_DESC_DOORBELL, 3);
    run();
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), NPK_V0_IRQ_DONE);
    CHECK_EQ(npk_sim_irq(S, 0), 1);
    CHECK_EQ(rd(NPK_V0_REG_COMPLETION_TAG), 3);
    wr(NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_DONE);
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), 0);
    CHECK_EQ(npk_sim_irq(S, 0), 0);
    /* CTRL.irq_enable gates line 0, not the status bit */
    wr(NPK_V0_REG_CTRL, NPK_V0_CTRL_ENABLE);
    put(3, nop(4, NPK_V0_F_IRQ));
    wr(NPK_V0_REG_DESC_DOORBELL, 4);
    run();
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), NPK_V0_IRQ_DONE);
    CHECK_EQ(npk_sim_irq(S, 0), 0);
    wr(NPK_V0_REG_CTRL, NPK_V0_CTRL_ENABLE | NPK_V0_CTRL_IRQ_ENABLE);
    CHECK_EQ(npk_sim_irq(S, 0), 1);
    /* masking the bit lowers the line */
    wr(NPK_V0_REG_IRQ_MASK, 0);
    CHECK_EQ(npk_sim_irq(S, 0), 0);
}

static void test_matmul_busy_perf_trace(void) {
    open_dev(NULL, 8, NPK_V0_CTRL_ENABLE);
    npk_trace *tr = npk_trace_new();
    npk_sim_dev(S)->trace = tr;
    npk_v0_desc d = small_matmul(7);
    put(0, d);
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    npk_sim_step(S, 1);
    CHECK(status() & NPK_V0_ST_BUSY);
    CHECK_EQ(npk_v0_st_qlevel(status()), 1);
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 0);
    run();
    CHECK_EQ(status() & NPK_V0_ST_BUSY, 0);
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 1);
    int8_t a[64], b[64];
    int32_t want[16];
    uint8_t got[64];
    npk_mem_peek(M, DATA, a, 64);
    npk_mem_peek(M, DATA + 0x1000, b, 64);
    npk_ref_matmul_s8s32(4, 4, 4, a, 16, b, 16, want, 4, 0, 0);
    npk_mem_peek(M, DATA + 0x2000, got, 64);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            const uint8_t *p = got + i * 16 + j * 4;
            CHECK_EQ((int32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24), want[i * 4 + j]);
        }
    CHECK_EQ(rd(NPK_V0_REG_PERF_MACS_LO), 64);
    CHECK_EQ(rd(NPK_V0_REG_PERF_MACS_HI), 0);
    npk_v0_timing t = {.dram_bw = 8, .dram_lat = 20};
    CHECK_EQ(rd(NPK_V0_REG_PERF_CYCLES), npk_v0_model_cycles(&d, &t));
    CHECK_EQ(npk_trace_events(tr, "v0", "queue"), 1);
    CHECK_EQ(npk_trace_total_cycles(tr, "v0", "queue"), rd(NPK_V0_REG_PERF_CYCLES));
    /* one 4x4x4 tile: one fetch, one array pass of 64 MACs, a load and a store */
    CHECK_EQ(npk_trace_events(tr, "v0", "array"), 1);
    CHECK_EQ(npk_trace_sum_arg(tr, "v0", "array", "macs"), 64);
    CHECK_EQ(npk_trace_sum_arg(tr, "v0", "dma", "read_bytes"), 4 * 4 + 4 * 4);
    CHECK_EQ(npk_trace_sum_arg(tr, "v0", "dma", "written_bytes"), 4 * 4 * 4);
    /* a slower DRAM gives more cycles for the same descriptor */
    npk_v0_timing slow = {.dram_bw = 2, .dram_lat = 200};
    CHECK(npk_v0_model_cycles(&d, &slow) > npk_v0_model_cycles(&d, &t));
    npk_sim_dev(S)->trace = NULL;
    npk_trace_free(tr);
    /* the device option reaches the model */
    open_dev("dram_bw=2,dram_lat=200", 8, NPK_V0_CTRL_ENABLE);
    d = small_matmul(7);
    put(0, d);
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    run();
    CHECK_EQ(rd(NPK_V0_REG_PERF_CYCLES), npk_v0_model_cycles(&d, &slow));
}

static void test_wrap(void) {
    open_dev(NULL, 4, NPK_V0_CTRL_ENABLE);
    uint32_t slot = 0, tag = 100;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 3; i++) put((slot + i) % 4, nop(tag + i, 0));
        slot = (slot + 3) % 4;
        wr(NPK_V0_REG_DESC_DOORBELL, slot);
        CHECK_EQ(npk_v0_st_qlevel(status()), 3);
        CHECK(status() & NPK_V0_ST_QUEUE_FULL); /* 3 of 4: one slot stays empty */
        run();
        CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), slot);
        CHECK_EQ(rd(NPK_V0_REG_COMPLETION_TAG), tag + 2);
        tag += 3;
    }
}

/* Expect an unsupported_op error of `code` on slot `idx` with a stalled ring. */
static void expect_unsupported(uint32_t code, uint32_t idx, uint32_t fallbacks) {
    uint32_t st = status();
    CHECK(st & NPK_V0_ST_ERROR);
    CHECK_EQ(npk_v0_st_errcode(st), code);
    CHECK_EQ(st & NPK_V0_ST_BUSY, 0);
    CHECK(npk_v0_st_qlevel(st) > 0);
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), NPK_V0_IRQ_ERROR | NPK_V0_IRQ_UNSUPPORTED);
    CHECK_EQ(rd(NPK_V0_REG_ERR_DESC_INDEX), idx);
    CHECK_EQ(rd(NPK_V0_REG_PERF_FALLBACKS), fallbacks);
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), idx);
}

static void flush_and_check(void) {
    wr(NPK_V0_REG_CTRL, rd(NPK_V0_REG_CTRL) | NPK_V0_CTRL_FLUSH);
    CHECK_EQ(rd(NPK_V0_REG_CTRL) & NPK_V0_CTRL_FLUSH, 0);
    CHECK_EQ(status(), NPK_V0_ST_QUEUE_EMPTY);
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 0);
    CHECK_EQ(rd(NPK_V0_REG_DESC_HEAD), 0);
    CHECK_EQ(rd(NPK_V0_REG_ERR_DESC_INDEX), 0);
    CHECK_EQ(rd(NPK_V0_REG_ERR_FAULT_ADDR_LO), 0);
    wr(NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_ALL);
}

/* One bad descriptor after a good NOP; fallback_select = 0: W1C dismisses
 * the error but does not recover the ring, flush does. */
static void unsupported_case(npk_v0_desc bad, uint32_t code, uint32_t *fallbacks) {
    open_dev(NULL, 8, NPK_V0_CTRL_ENABLE);
    npk_mem_clear(M);
    put(0, nop(1, 0));
    put(1, bad);
    put(2, nop(3, 0));
    wr(NPK_V0_REG_DESC_DOORBELL, 3);
    run();
    *fallbacks = 1;
    expect_unsupported(code, 1, *fallbacks);
    CHECK_EQ(npk_v0_st_qlevel(status()), 2);
    CHECK_EQ(npk_sim_irq(S, 1), 0); /* no irq_fallback without cpu_fallback_select */
    wr(NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_ERROR | NPK_V0_IRQ_UNSUPPORTED);
    /* "clearing IRQ_STATUS alone is enough to dismiss unsupported_op":
     * STATUS.error drops (this check used to expect error == 1 with
     * fallback_select = 0), but the descriptor is not consumed */
    CHECK_EQ(status() & NPK_V0_ST_ERROR, 0);
    CHECK_EQ(npk_v0_st_errcode(status()), 0);
    wr(NPK_V0_REG_DESC_TAIL, 2); /* ignored without cpu_fallback_select */
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 1);
    run();
    /* hard failure: "the ring stalls until software issues CTRL.flush" */
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 1);
    CHECK_EQ(npk_v0_st_qlevel(status()), 2);
    CHECK_EQ(status() & NPK_V0_ST_BUSY, 0);
    flush_and_check();
    CHECK_EQ(rd(NPK_V0_REG_PERF_FALLBACKS), 1); /* counters survive a flush */
    /* the ring works again from slot 0 */
    put(0, nop(9, 0));
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    run();
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 1);
    CHECK_EQ(rd(NPK_V0_REG_COMPLETION_TAG), 9);
}

static void test_validation_errors(void) {
    uint32_t fb;
    npk_v0_desc d;
    /* 0x01 unknown opcode */
    unsupported_case(npk_v0_desc_simple(0x77, 0, 2), NPK_V0_ERR_OPCODE, &fb);
    unsupported_case(npk_v0_desc_simple(0x110, 0, 2), NPK_V0_ERR_OPCODE, &fb); /* OP is 16 bits */
    /* 0x02 shape */
    d = npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 1025, 16, 16, DATA, 1040, DATA, 16, DATA, 64, 2);
    unsupported_case(d, NPK_V0_ERR_SHAPE, &fb);
    d = npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 16, 16, 0, DATA, 16, DATA, 16, DATA, 64, 2);
    unsupported_case(d, NPK_V0_ERR_SHAPE, &fb);
    d = npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 16, 16, 32, DATA, 16, DATA, 16, DATA, 64, 2); /* A stride < K */
    unsupported_case(d, NPK_V0_ERR_SHAPE, &fb);
    npk_v0_conv cv = {8, 8, 4, 4, 7, 1, 1, 0, 0, 1}; /* 7x7 kernel */
    unsupported_case(npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &cv, DATA, 32, DATA, 16, DATA, 16, 2), NPK_V0_ERR_SHAPE, &fb);
    cv = (npk_v0_conv){8, 8, 4, 4, 3, 3, 1, 0, 0, 1}; /* stride 3 */
    unsupported_case(npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &cv, DATA, 32, DATA, 16, DATA, 32, 2), NPK_V0_ERR_SHAPE, &fb);
    cv = (npk_v0_conv){300, 8, 4, 4, 3, 1, 1, 0, 0, 1}; /* H > 256 */
    unsupported_case(npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &cv, DATA, 32, DATA, 16, DATA, 32, 2), NPK_V0_ERR_SHAPE, &fb);
    cv = (npk_v0_conv){8, 8, 513, 4, 1, 1, 1, 0, 0, 1}; /* C_in > 512 */
    unsupported_case(npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &cv, DATA, 8 * 528, DATA, 16, DATA, 32, 2), NPK_V0_ERR_SHAPE, &fb);
    npk_v0_pool pl = {8, 8, 16, 4, 4, 2, 0}; /* 4x4 window */
    unsupported_case(npk_v0_desc_maxpool(NPK_V0_F_SIGNED, &pl, DATA, 128, DATA, 64, 2), NPK_V0_ERR_SHAPE, &fb);
    d = npk_v0_desc_relu(NPK_V0_F_SIGNED, 1, 2000, DATA, 2000, DATA, 2000, 2);
    unsupported_case(d, NPK_V0_ERR_SHAPE, &fb);
    /* 0x03 flags */
    d = npk_v0_desc_matmul(0, 0, 16, 16, 16, DATA, 16, DATA, 16, DATA, 64, 2); /* no signed_input */
    unsupported_case(d, NPK_V0_ERR_FLAGS, &fb);
    unsupported_case(npk_v0_desc_simple(NPK_V0_OP_NOP, NPK_V0_F_RELU, 2), NPK_V0_ERR_FLAGS, &fb);
    unsupported_case(npk_v0_desc_simple(NPK_V0_OP_NOP, 0x10, 2), NPK_V0_ERR_FLAGS, &fb);
    /* 0x04 misaligned */
    d = npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 16, 16, 16, DATA + 8, 16, DATA, 16, DATA, 64, 2);
    unsupported_case(d, NPK_V0_ERR_ALIGN, &fb);
    d = npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 16, 16, 16, DATA, 24, DATA, 16, DATA, 64, 2);
    unsupported_case(d, NPK_V0_ERR_ALIGN, &fb);
    /* 0x08 FALLBACK */
    unsupported_case(npk_v0_desc_simple(NPK_V0_OP_FALLBACK, 0, 2), NPK_V0_ERR_FALLBACK, &fb);
}

/* The CPU fallback contract with cpu_fallback_select = 1. */
static void test_fallback_contract(void) {
    open_dev(NULL, 8, NPK_V0_CTRL_ENABLE | NPK_V0_CTRL_FALLBACK);
    wr(NPK_V0_REG_IRQ_MASK, NPK_V0_IRQ_DONE);
    put(0, nop(1, 0));
    put(1, npk_v0_desc_simple(NPK_V0_OP_FALLBACK, NPK_V0_F_IRQ, 0xABC));
    put(2, nop(3, 0));
    wr(NPK_V0_REG_DESC_DOORBELL, 3);
    run();
    expect_unsupported(NPK_V0_ERR_FALLBACK, 1, 1);
    CHECK_EQ(npk_sim_irq(S, 1), 1); /* irq_fallback */
    /* a wrong write-back value is ignored */
    wr(NPK_V0_REG_DESC_TAIL, 3);
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 1);
    /* clear unsupported_op + error: STATUS.error drops, ring still waits for the CPU */
    wr(NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_UNSUPPORTED | NPK_V0_IRQ_ERROR);
    CHECK_EQ(npk_sim_irq(S, 1), 0);
    CHECK_EQ(status() & NPK_V0_ST_ERROR, 0);
    run();
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 1);
    CHECK_EQ(npk_v0_st_qlevel(status()), 2);
    /* CPU writes the tag and advances the tail */
    wr(NPK_V0_REG_COMPLETION_TAG, 0xABC);
    wr(NPK_V0_REG_DESC_TAIL, 2);
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 2);
    CHECK_EQ(rd(NPK_V0_REG_COMPLETION_TAG), 0xABC);
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), NPK_V0_IRQ_DONE); /* irq_on_complete honoured for the CPU retirement */
    run();
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 3);
    CHECK_EQ(rd(NPK_V0_REG_COMPLETION_TAG), 3);
    CHECK_EQ(status(), NPK_V0_ST_QUEUE_EMPTY | NPK_V0_ST_DONE);
    /* COMPLETION_TAG is read-only without cpu_fallback_select */
    wr(NPK_V0_REG_CTRL, NPK_V0_CTRL_ENABLE);
    wr(NPK_V0_REG_COMPLETION_TAG, 0x999);
    CHECK_EQ(rd(NPK_V0_REG_COMPLETION_TAG), 3);
    /* hard errors are not dismissed by W1C even with fallback selected */
    wr(NPK_V0_REG_CTRL, NPK_V0_CTRL_ENABLE | NPK_V0_CTRL_FALLBACK);
    wr(NPK_V0_REG_DESC_DOORBELL, 200); /* >= ring length */
    CHECK(status() & NPK_V0_ST_ERROR);
    CHECK_EQ(npk_v0_st_errcode(status()), NPK_V0_ERR_OVERFLOW);
    wr(NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_ALL);
    CHECK(status() & NPK_V0_ST_ERROR);
    CHECK_EQ(npk_sim_irq(S, 1), 0); /* not an unsupported_op */
    wr(NPK_V0_REG_CTRL, NPK_V0_CTRL_ENABLE | NPK_V0_CTRL_FALLBACK | NPK_V0_CTRL_FLUSH);
    CHECK_EQ(status(), NPK_V0_ST_QUEUE_EMPTY);
}

static void test_overflow(void) {
    open_dev(NULL, 4, 0); /* disabled: descriptors stay queued */
    put(0, nop(1, 0));
    put(1, nop(2, 0));
    put(2, nop(3, 0));
    wr(NPK_V0_REG_DESC_DOORBELL, 3); /* 3 = all free slots */
    CHECK_EQ(status() & NPK_V0_ST_ERROR, 0);
    CHECK(status() & NPK_V0_ST_QUEUE_FULL);
    wr(NPK_V0_REG_DESC_DOORBELL, 0); /* one more: overflow */
    uint32_t st = status();
    CHECK(st & NPK_V0_ST_ERROR);
    CHECK_EQ(npk_v0_st_errcode(st), NPK_V0_ERR_OVERFLOW);
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), NPK_V0_IRQ_ERROR | NPK_V0_IRQ_QUEUE_OVERFLOW);
    CHECK_EQ(npk_v0_st_qlevel(st), 3); /* the rejected doorbell committed nothing */
    CHECK_EQ(rd(NPK_V0_REG_DESC_HEAD), 3);
    /* the ring does not run while the error is latched */
    wr(NPK_V0_REG_CTRL, NPK_V0_CTRL_ENABLE);
    run();
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 0);
    /* W1C is not enough */
    wr(NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_ALL);
    CHECK(status() & NPK_V0_ST_ERROR);
    /* ring configuration is frozen while descriptors are queued */
    wr(NPK_V0_REG_DESC_RING_LEN, 16);
    CHECK_EQ(rd(NPK_V0_REG_DESC_RING_LEN), 4);
    wr(NPK_V0_REG_DESC_BASE_LO, 0x1000);
    CHECK_EQ(rd(NPK_V0_REG_DESC_BASE_LO), (uint32_t)RING);
    flush_and_check(); /* drops the 3 queued NOPs */
    run();
    CHECK_EQ(rd(NPK_V0_REG_COMPLETION_TAG), 0);
    wr(NPK_V0_REG_DESC_RING_LEN, 16);
    CHECK_EQ(rd(NPK_V0_REG_DESC_RING_LEN), 16);
}

static void test_window_and_bus(void) {
    /* 0x05: C outside TENSOR_MEM */
    open_dev(NULL, 8, NPK_V0_CTRL_ENABLE | NPK_V0_CTRL_FALLBACK);
    npk_v0_desc d = small_matmul(5);
    wr(NPK_V0_REG_TENSOR_MEM_BASE_LO, (uint32_t)DATA);
    wr(NPK_V0_REG_TENSOR_MEM_BASE_HI, (uint32_t)(DATA >> 32));
    wr(NPK_V0_REG_TENSOR_MEM_LEN, 0x2000 + 32); /* C (4 rows at stride 16, 16 bytes each) needs 0x2040 */
    put(0, d);
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    run();
    uint32_t st = status();
    CHECK_EQ(npk_v0_st_errcode(st), NPK_V0_ERR_WINDOW);
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), NPK_V0_IRQ_ERROR | NPK_V0_IRQ_BUS_ERROR);
    CHECK_EQ(rd(NPK_V0_REG_ERR_FAULT_ADDR_LO), (uint32_t)(DATA + 0x2020)); /* first byte past the window */
    CHECK_EQ(rd(NPK_V0_REG_ERR_FAULT_ADDR_HI), (uint32_t)(DATA >> 32));
    CHECK_EQ(rd(NPK_V0_REG_PERF_FALLBACKS), 0);
    CHECK_EQ(npk_sim_irq(S, 1), 0);
    wr(NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_ALL); /* W1C: not enough */
    CHECK(status() & NPK_V0_ST_ERROR);
    wr(NPK_V0_REG_DESC_TAIL, 1); /* no fallback for a window error */
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 0);
    flush_and_check();
    /* A below the window */
    wr(NPK_V0_REG_TENSOR_MEM_BASE_LO, (uint32_t)DATA + 0x1000);
    wr(NPK_V0_REG_TENSOR_MEM_LEN, 0x10000);
    put(0, d);
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    run();
    CHECK_EQ(npk_v0_st_errcode(status()), NPK_V0_ERR_WINDOW);
    CHECK_EQ(rd(NPK_V0_REG_ERR_FAULT_ADDR_LO), (uint32_t)DATA);
    flush_and_check();
    /* inside: fine */
    wr(NPK_V0_REG_TENSOR_MEM_BASE_LO, (uint32_t)DATA);
    put(0, d);
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    run();
    CHECK_EQ(status(), NPK_V0_ST_QUEUE_EMPTY | NPK_V0_ST_DONE);

    /* 0x06: bus error on B's second row */
    open_dev(NULL, 8, NPK_V0_CTRL_ENABLE);
    d = small_matmul(6);
    npk_fault f = {NPK_ACC_READ, DATA + 0x1010, 1, -1, NPK_BUS_ERROR, 0};
    npk_mem_add_fault(M, &f);
    put(0, d);
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    run();
    CHECK_EQ(npk_v0_st_errcode(status()), NPK_V0_ERR_BUS);
    CHECK_EQ(rd(NPK_V0_REG_IRQ_STATUS), NPK_V0_IRQ_ERROR | NPK_V0_IRQ_BUS_ERROR);
    CHECK_EQ(rd(NPK_V0_REG_ERR_FAULT_ADDR_LO), (uint32_t)(DATA + 0x1010));
    CHECK_EQ(rd(NPK_V0_REG_ERR_DESC_INDEX), 0);
    CHECK_EQ(rd(NPK_V0_REG_PERF_MACS_LO), 0); /* not retired */
    flush_and_check();
    npk_mem_clear_faults(M);
    /* bus error fetching the descriptor itself (slot 2) */
    put(0, nop(1, 0));
    put(1, nop(2, 0));
    f = (npk_fault){NPK_ACC_READ, RING + 128, 64, -1, NPK_BUS_ERROR, 0};
    npk_mem_add_fault(M, &f);
    wr(NPK_V0_REG_DESC_DOORBELL, 3);
    run();
    CHECK_EQ(npk_v0_st_errcode(status()), NPK_V0_ERR_BUS);
    CHECK_EQ(rd(NPK_V0_REG_ERR_DESC_INDEX), 2);
    CHECK_EQ(rd(NPK_V0_REG_ERR_FAULT_ADDR_LO), (uint32_t)(RING + 128));
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 2);
    flush_and_check();
    npk_mem_clear_faults(M);
    /* a hung write beat: busy forever, flush recovers */
    d = small_matmul(8);
    f = (npk_fault){NPK_ACC_WRITE, DATA + 0x2000, 1, -1, NPK_BUS_HANG, 0};
    npk_mem_add_fault(M, &f);
    put(0, d);
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    npk_sim_step(S, 100000);
    CHECK(status() & NPK_V0_ST_BUSY);
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 0);
    CHECK(npk_sim_dev(S)->ops->idle(npk_sim_dev(S)));
    flush_and_check();
    npk_mem_clear_faults(M);
}

/* Conv channel padding in the timing model: Gemmini maps input channels to
 * array rows per kernel position, so 3 channels occupy the array like 16
 * (the array phases take the same cycles) while the MACs stay the real ones. */
typedef struct arr_sum {
    uint64_t dur, macs;
} arr_sum;
static void sum_array(void *ctx, npk_v0_phase ph, uint64_t start, uint64_t dur, uint64_t bytes, uint64_t macs) {
    arr_sum *a = ctx;
    (void)start, (void)bytes;
    if (ph == NPK_V0_PH_ARRAY) a->dur += dur, a->macs += macs;
}
static void test_conv_channel_padding(void) {
    npk_v0_conv c3 = {.h = 64, .w = 64, .cin = 3, .cout = 64, .ksize = 5, .stride_h = 2, .stride_w = 2,
                      .pad_h = 2, .pad_w = 2, .dil = 1};
    npk_v0_conv c16 = c3;
    c16.cin = 16;
    npk_v0_desc d3 = npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &c3, DATA, 192, DATA, 64, DATA, 2048, 1);
    npk_v0_desc d16 = npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &c16, DATA, 1024, DATA, 64, DATA, 2048, 1);
    arr_sum a3 = {0, 0}, a16 = {0, 0};
    npk_v0_model_schedule(&d3, NULL, sum_array, &a3);
    npk_v0_model_schedule(&d16, NULL, sum_array, &a16);
    CHECK_EQ(a3.dur, a16.dur);
    CHECK_EQ(a3.macs, 32ull * 32 * 64 * 25 * 3);
    CHECK_EQ(a3.macs, npk_v0_desc_macs(&d3));
    CHECK_EQ(a16.macs, npk_v0_desc_macs(&d16));
}

static void test_no_gemmini(void) {
    open_dev("gemmini_present=0", 8, NPK_V0_CTRL_ENABLE);
    CHECK_EQ(rd(NPK_V0_REG_CAPS), 0);
    uint32_t fb;
    (void)fb;
    put(0, nop(1, 0));
    put(1, small_matmul(2));
    wr(NPK_V0_REG_DESC_DOORBELL, 2);
    run();
    expect_unsupported(NPK_V0_ERR_OPCODE, 1, 1);
    flush_and_check();
}

static uint64_t rd64(uint32_t lo) { return rd(lo) | (uint64_t)rd(lo + 4) << 32; }

/* Per-engine counters (npukit extension at 0x080-0x0AC): the byte and cycle
 * figures of the timing model, summed over retired descriptors. */
static void test_engine_counters(void) {
    /* 4x4x4 matmul, one tile on the 16x16 array: DRAM reads the descriptor
     * (64 B) and A, B (16 + 16 B); writes C (64 B of int32); the scratchpad
     * takes the 32 loaded bytes and feeds one block pass (16x16 A + 16x16 B);
     * the accumulator takes one pass of 16x16 int32 and drains the 4x4 C */
    npk_v0_desc d = small_matmul(3);
    npk_v0_engine_stats st = {0};
    npk_v0_timing t = {.dram_bw = 8, .dram_lat = 20};
    uint64_t cyc = npk_v0_model_stats(&d, &t, &st);
    CHECK_EQ(cyc, npk_v0_model_cycles(&d, &t));
    CHECK_EQ(st.dram_rd, 64 + 16 + 16);
    CHECK_EQ(st.dram_wr, 64);
    CHECK_EQ(st.spad, 32 + 256 + 256);
    CHECK_EQ(st.acc, 1024 + 64);
    CHECK_EQ(st.compute_cycles, 16 + 3); /* one 16-cycle pass + issue */
    CHECK(st.dma_cycles > st.compute_cycles); /* a 4x4 product is memory-bound */
    CHECK_EQ(cyc, st.dma_cycles + st.compute_cycles); /* nothing to overlap in one tile */
    /* 1024^3 is compute-bound: 64^3 block passes of 16 cycles on the array */
    npk_v0_desc big = npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 1024, 1024, 1024, 0, 1024, 0, 1024, 0, 4096, 0);
    npk_v0_engine_stats sb = {0};
    npk_v0_model_stats(&big, &t, &sb);
    CHECK(sb.compute_cycles >= 64ull * 64 * 64 * 16 && sb.compute_cycles > sb.dma_cycles);
    CHECK_EQ(sb.dram_wr, 1024ull * 1024 * 4);
    /* the device sums them over retired descriptors and reads them as registers */
    open_dev(NULL, 8, NPK_V0_CTRL_ENABLE);
    put(0, d);
    put(1, d);
    wr(NPK_V0_REG_DESC_DOORBELL, 2);
    run();
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 2);
    CHECK_EQ(rd64(NPK_V0_REG_PERF_DRAM_RD_LO), 2 * st.dram_rd);
    CHECK_EQ(rd64(NPK_V0_REG_PERF_DRAM_WR_LO), 2 * st.dram_wr);
    CHECK_EQ(rd64(NPK_V0_REG_PERF_SPAD_LO), 2 * st.spad);
    CHECK_EQ(rd64(NPK_V0_REG_PERF_ACC_LO), 2 * st.acc);
    CHECK_EQ(rd64(NPK_V0_REG_PERF_COMPUTE_LO), 2 * st.compute_cycles);
    CHECK_EQ(rd64(NPK_V0_REG_PERF_DMA_LO), 2 * st.dma_cycles);
    wr(NPK_V0_REG_PERF_DRAM_RD_LO, 0); /* read-only */
    CHECK_EQ(rd64(NPK_V0_REG_PERF_DRAM_RD_LO), 2 * st.dram_rd);
    open_dev(NULL, 8, NPK_V0_CTRL_ENABLE); /* a new device starts at 0 */
    CHECK_EQ(rd64(NPK_V0_REG_PERF_DMA_LO), 0);
}

/* gemmini_loop=1 (docs/v0.md "Gemmini calibration"): a 4x4 1x1 conv of 16
 * channels, DRAM latency 76, 8 B/cycle: one tile (tiled_conv_auto keeps the
 * whole conv). Load: 16 input pixel requests + 16 weight rows, paced at
 * (76 + 4) / 16 = 5 cycles each (512 bytes at 8 B/cycle take only 64):
 * 76 + 160. Array: one weight block, its 51-cycle latency + 16 pixel rows.
 * Store: 16 pixel rows of 16 channels, 76 + 80. Descriptor fetch 76 + 8 + 1.
 * Before the loop, the software's tile search tested one candidate (the
 * whole conv fits): 250 host cycles. One tile, so nothing overlaps. */
static void test_gemmini_loop(void) {
    npk_v0_conv cv = {.h = 4, .w = 4, .cin = 16, .cout = 16, .ksize = 1, .stride_h = 1, .stride_w = 1, .dil = 1};
    npk_v0_desc d = npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &cv, DATA, 64, DATA + 0x1000, 16, DATA + 0x2000, 64, 1);
    npk_v0_timing seed = {.dram_bw = 8, .dram_lat = 76}, g = seed;
    g.gemmini_loop = 1;
    npk_v0_engine_stats st = {0};
    npk_v0_conv_tiling ct;
    CHECK_EQ(npk_v0_gemmini_conv_tiling(&g, &cv, &ct), 0);
    CHECK(ct.tiles == 1 && ct.evals == 1);
    CHECK_EQ(npk_v0_model_stats(&d, &g, &st), 85 + 250 + 236 + 67 + 156);
    CHECK_EQ(st.compute_cycles, 67);
    CHECK_EQ(st.dma_cycles, 85 + 236 + 156);
    CHECK_EQ(st.dram_rd, 64 + 512);
    CHECK_EQ(st.dram_wr, 256);
    CHECK(npk_v0_model_cycles(&d, &seed) != npk_v0_model_cycles(&d, &g));
    /* the schedule's array MACs add up to the descriptor's */
    npk_v0_conv big = {.h = 56, .w = 56, .cin = 64, .cout = 64, .ksize = 3, .stride_h = 1, .stride_w = 1,
                       .pad_h = 1, .pad_w = 1, .dil = 1};
    npk_v0_desc db = npk_v0_desc_conv(0, NPK_V0_F_SIGNED, &big, DATA, 64, DATA, 64, DATA, 64, 1);
    arr_sum as = {0, 0};
    CHECK_EQ(npk_v0_model_schedule(&db, &g, sum_array, &as), npk_v0_model_cycles(&db, &g));
    CHECK_EQ(as.macs, npk_v0_desc_macs(&db));
    /* a matmul follows tiled_matmul_auto: 64 x 64 x 64 fits one tile; the
     * load of 64 + 64 rows of 64 bytes is bandwidth-bound (8192 B at 8 B per
     * cycle), 16 weight blocks stream 64 rows each, the int32 C (64 rows of
     * 4 x 64 bytes, 16 KiB) is stored at 8 B per cycle */
    npk_v0_desc m = npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 64, 64, 64, DATA, 64, DATA, 64, DATA + 0x4000, 256, 1);
    npk_v0_matmul_tiling mt;
    npk_v0_gemmini_matmul_tiling(&g, 64, 64, 64, &mt);
    CHECK(mt.ti == 4 && mt.tj == 4 && mt.tk == 4 && mt.tiles == 1 && mt.evals == 0); /* nothing left to grow */
    npk_v0_engine_stats sm = {0};
    CHECK_EQ(npk_v0_model_stats(&m, &g, &sm), 85 + (76 + 1024) + 16 * (64 + 51) + (76 + 2048));
    CHECK_EQ(sm.compute_cycles, 16 * (64 + 51));
    /* the device option reaches the model; the default is the seed model */
    open_dev("gemmini_loop=1,dram_lat=76", 8, NPK_V0_CTRL_ENABLE);
    put(0, d);
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    run();
    CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 1);
    CHECK_EQ(rd(NPK_V0_REG_PERF_CYCLES), 85 + 250 + 236 + 67 + 156);
    open_dev("dram_lat=76", 8, NPK_V0_CTRL_ENABLE);
    put(0, d);
    wr(NPK_V0_REG_DESC_DOORBELL, 1);
    run();
    CHECK_EQ(rd(NPK_V0_REG_PERF_CYCLES), npk_v0_model_cycles(&d, &seed));
    CHECK(npk_sim_new("v0", "gemmini_loop=2") == NULL);
}

static void no_watch(void *ctx, npk_access acc, uint64_t addr, size_t len, npk_bus_resp r) {
    (void)ctx, (void)acc, (void)addr, (void)len, (void)r;
}

/* Zero copy (issue 15 point 3): with A, B and C in a host-backed extent the
 * model computes in place; the result, the beat statistics and PERF_CYCLES
 * equal the copy path's (a memory watcher forces that one). ReLU fused. */
static void test_direct_matmul(void) {
    enum { DM = 40, DN = 24, DK = 72, SA = 80, SB = 32, SC = 112 };
    static int8_t a[DM * SA], b[DK * SB];
    int32_t want[DM * DN];
    for (int i = 0; i < DM * SA; i++) a[i] = (int8_t)(i * 31 + 7);
    for (int i = 0; i < DK * SB; i++) b[i] = (int8_t)(i * 17 - 3);
    npk_ref_matmul_s8s32(DM, DN, DK, a, SA, b, SB, want, DN, 1, 0);
    npk_mem_stats st[2];
    uint32_t cyc[2];
    for (int pass = 0; pass < 2; pass++) {
        open_dev(NULL, 8, NPK_V0_CTRL_ENABLE);
        if (pass == 0) CHECK_EQ(npk_mem_attach(M, DATA, 0x10000), 0);
        else npk_mem_set_watch(M, no_watch, NULL);
        npk_mem_poke(M, DATA, a, sizeof a);
        npk_mem_poke(M, DATA + 0x4000, b, sizeof b);
        put(0, npk_v0_desc_matmul(1, NPK_V0_F_SIGNED, DM, DN, DK, DATA, SA, DATA + 0x4000, SB, DATA + 0x8000, SC, 9));
        npk_mem_reset_stats(M);
        wr(NPK_V0_REG_DESC_DOORBELL, 1);
        run();
        CHECK_EQ(rd(NPK_V0_REG_DESC_TAIL), 1);
        npk_mem_get_stats(M, &st[pass]);
        cyc[pass] = rd(NPK_V0_REG_PERF_CYCLES);
        int bad = 0;
        for (int i = 0; i < DM; i++)
            for (int j = 0; j < DN; j++) {
                int32_t got;
                npk_mem_peek(M, DATA + 0x8000 + (uint64_t)i * SC + 4u * j, &got, 4);
                bad += got != want[i * DN + j];
            }
        CHECK_EQ(bad, 0);
        npk_mem_set_watch(M, NULL, NULL);
    }
    CHECK_EQ(st[0].read_beats, st[1].read_beats);
    CHECK_EQ(st[0].write_beats, st[1].write_beats);
    CHECK_EQ(st[0].read_bytes, st[1].read_bytes);
    CHECK_EQ(st[0].write_bytes, st[1].write_bytes);
    CHECK_EQ(cyc[0], cyc[1]);
}

int main(void) {
    test_reset();
    test_direct_matmul();
    test_gemmini_loop();
    test_engine_counters();
    test_nops_tags_done();
    test_irq();
    test_matmul_busy_perf_trace();
    test_wrap();
    test_validation_errors();
    test_fallback_contract();
    test_overflow();
    test_window_and_bus();
    test_no_gemmini();
    test_geometry_options();
    test_conv_channel_padding();
    npk_sim_free(S);
    return CHECK_DONE();
}
