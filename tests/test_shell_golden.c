// SPDX-License-Identifier: MIT
/* The golden command stream of npu-shell-contract.md section 11, followed
 * literally: every register write and memory effect the section names. The
 * GEMM result is checked against the independent int8 reference. */
#include "ops/ref_float.h"
#include "test_shell_util.h"

typedef struct irqlog {
    uint64_t cycle[16];
    int level[16];
    int n;
    npk_sim *sim;
} irqlog;
static void irq_cb(void *ctx, int line, int level) {
    irqlog *l = ctx;
    if (line == 0 && l->n < 16) {
        l->cycle[l->n] = npk_sim_cycles(l->sim);
        l->level[l->n++] = level;
    }
}

int main(void) {
    npk_port *p = open_shell(NULL);
    npk_sim *sim = npk_port_sim(p);
    irqlog il = {.sim = sim};
    npk_sim_set_irq_cb(sim, irq_cb, &il);
    logrec lg = {0};
    CHECK_EQ(npk_shell_sim_set_log(npk_sim_dev(sim), log_cb, &lg), 0);

    /* CAPABILITIES includes DMA_COPY, GEMM, EVENT_IRQ */
    uint32_t caps = reg(p, SHELL_CAPABILITIES);
    CHECK((caps & 1) && (caps & (1u << 4)) && (caps & (1u << 7)));
    CHECK_EQ(reg(p, SHELL_VERSION), 0x00000002);
    CHECK_EQ(reg(p, SHELL_STATUS), SHELL_STATUS_IDLE);

    /* data: 4 KiB at A; the 64x64x64 int8 GEMM operands */
    const uint64_t qbase = 0x0000001000000000ull, src = 0x0000002000000000ull, dst = 0x0000002000001000ull;
    const uint64_t ga = 0x0000003000000000ull, gb = 0x0000003000100000ull, gc = 0x0000003000200000ull;
    static uint8_t a4k[4096], got[4096];
    static int8_t A[64 * 64], B[64 * 64];
    static int32_t C[64 * 64], ref[64 * 64];
    fill_rand(a4k, sizeof a4k);
    fill_rand(A, sizeof A);
    fill_rand(B, sizeof B);
    CHECK_EQ(npk_port_mem_write(p, src, a4k, sizeof a4k), 0);
    CHECK_EQ(npk_port_mem_write(p, ga, A, sizeof A), 0);
    CHECK_EQ(npk_port_mem_write(p, gb, B, sizeof B), 0);

    /* 11.1 host setup */
    wreg(p, SHELL_CQ_BASE_LO, 0x00000000);
    wreg(p, SHELL_CQ_BASE_HI, 0x00000010);
    wreg(p, SHELL_CQ_SIZE, 0x00001000);
    wreg(p, SHELL_IRQ_ENABLE, (1u << 1) | (1u << 2));
    CHECK_EQ(reg(p, SHELL_CQ_HEAD), 0);
    CHECK_EQ(reg(p, SHELL_CQ_TAIL), 0);

    /* 11.2 queue contents */
    uint8_t q[96];
    hdr32(q, 0x01, 0x00, 0x01, 0x00000001);
    le64(q + 8, src);
    le64(q + 16, dst);
    le32(q + 24, 0x00001000);
    hdr32(q + 32, 0x10, 0x00, 0x01, (64u << 20) | (64u << 10) | 64u);
    le64(q + 40, ga);
    le64(q + 48, gb);
    le64(q + 56, gc);
    hdr32(q + 64, 0x20, 0x01, 0x01, 0x00000003);
    CHECK_EQ(npk_port_mem_write(p, qbase, q, sizeof q), 0);

    /* 11.3 tail update and doorbell */
    wreg(p, SHELL_CQ_TAIL, 0x00000060);
    wreg(p, SHELL_DOORBELL, 1);
    uint32_t st = reg(p, SHELL_STATUS);
    CHECK(st & SHELL_STATUS_BUSY);
    CHECK(!(st & SHELL_STATUS_IDLE));
    CHECK_EQ(npk_port_irq(p, 0), 0);

    run_idle(p, 1000000);

    /* 11.4 expected behaviour */
    CHECK_EQ(npk_port_mem_read(p, dst, got, sizeof got), 0);
    CHECK(!memcmp(got, a4k, sizeof got));
    npk_ref_gemm_i8(64, 64, 64, A, B, NULL, ref);
    CHECK_EQ(npk_port_mem_read(p, gc, C, sizeof C), 0);
    CHECK(!memcmp(C, ref, sizeof C));
    CHECK_EQ(reg(p, SHELL_CQ_HEAD), 0x60);
    uint32_t irq = reg(p, SHELL_IRQ_STATUS);
    CHECK(irq & (1u << 1));       /* EVENT_SIGNAL with IRQ */
    CHECK(!(irq & (1u << 2)));    /* no error */
    CHECK(irq & (1u << 0));       /* queue drained (latched, not enabled) */
    CHECK_EQ(npk_port_irq(p, 0), 1);
    CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
    st = reg(p, SHELL_STATUS);
    CHECK_EQ(st & 7, SHELL_STATUS_IDLE);

    /* order: copy, then GEMM, then the signal (visible after the GEMM completed) */
    CHECK_EQ(lg.n, 3);
    CHECK_EQ(lg.e[0].opcode, 0x01);
    CHECK_EQ(lg.e[1].opcode, 0x10);
    CHECK_EQ(lg.e[2].opcode, 0x20);
    CHECK(lg.e[2].end_cycle >= lg.e[1].end_cycle);
    CHECK(lg.e[2].end_cycle >= lg.e[0].end_cycle);
    CHECK_EQ(il.n, 1);
    CHECK_EQ(il.level[0], 1);
    CHECK(il.cycle[0] >= lg.e[1].end_cycle);
    /* perf counters agree with the executed work */
    CHECK_EQ(reg(p, SHELL_PERF_DESCS), 3);
    CHECK_EQ(reg(p, SHELL_PERF_MACS_LO), 64 * 64 * 64);
    CHECK_EQ(reg(p, SHELL_PERF_DMA_BYTES), 4096);
    CHECK_EQ(reg(p, SHELL_PERF_GEMM_CYCLES), lg.e[1].end_cycle - lg.e[1].start_cycle);

    /* W1C acknowledges the interrupt and drops the line */
    wreg(p, SHELL_IRQ_STATUS, 1u << 1);
    CHECK_EQ(reg(p, SHELL_IRQ_STATUS) & 2, 0);
    CHECK_EQ(npk_port_irq(p, 0), 0);
    CHECK_EQ(il.n, 2);

    npk_port_close(p);
    return CHECK_DONE();
}
