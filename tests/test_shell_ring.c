// SPDX-License-Identifier: MIT
/* Ring wrap (including a 64-byte descriptor straddling the end), HALT / RESUME /
 * RESET, event ordering and IRQs, overlap only without data dependence, the
 * trace/counter agreement, and the visible forever-wait. */
#include "npukit/trace.h"
#include "ops/ref_float.h"
#include "test_shell_util.h"

#define RING 0x40000000ull
#define DATA 0x50000000ull

static void copy_desc(uint8_t *d, uint64_t src, uint64_t dst, uint32_t n, uint32_t tag) {
    hdr32(d, 0x01, 0, 1, tag);
    le64(d + 8, src);
    le64(d + 16, dst);
    le32(d + 24, n);
}

/* Run a descriptor stream on a fresh shell with options opts, logging every
 * descriptor into *lg; returns the port (caller closes). */
static npk_port *run_logged(const char *opts, const uint8_t *bin, size_t len, logrec *lg) {
    npk_port *p = open_shell(opts);
    lg->n = 0;
    npk_shell_sim_set_log(npk_sim_dev(npk_port_sim(p)), log_cb, lg);
    setup_ring(p, RING, 4096);
    npk_port_mem_write(p, RING, bin, len);
    wreg(p, SHELL_CQ_TAIL, (uint32_t)len);
    wreg(p, SHELL_DOORBELL, 1);
    run_idle(p, 1000000);
    return p;
}

/* The logged descriptors started and ended at these cycles. */
static void check_sched(const logrec *lg, int n, const uint64_t *start, const uint64_t *end) {
    CHECK_EQ(lg->n, n);
    for (int i = 0; i < n && i < lg->n; i++) {
        CHECK_EQ(lg->e[i].start_cycle, start[i]);
        CHECK_EQ(lg->e[i].end_cycle, end[i]);
    }
}

/* Issue #13: preset=rtlgen-perf reproduces the RTLGen perf model: the costs of
 * npu/sim/perf/model.py at 1 GHz and the scheduling of run.py's build_trace.
 * Costs of the mapped schedule below (by hand):
 *   d  DMA 4096 B at 16 B/cycle, no setup/fetch cost                     256
 *   s1 w1  the dependency d -> g: EVENT_SIGNAL 50, EVENT_WAIT 50          50, 50
 *   g  GEMM int8 16x16x16: max(4096 MACs / 1000 = 5,
 *        (A 256 + B 256 + C 256 at 1 B) / 16 = 48)                       48
 *   s5 event 5 (irq)                                                      50
 *   n  NOOP                                                               10
 *   v  VEC relu int8 4096 B: max(4096 x 1 / 2000 = 3, (4096 + 4096) / 16)  512
 *   s  SOFTMAX int8 4 x 64: max(256 x 6 / 2000 = 1, 512 / 16)              32
 *   h  GEMM fp16 16x16x16: max(5, (512 + 512 + 512) / 16)                 96
 * run.py --overlap (the preset's default, rtlgen_overlap=1): queue time q, a
 * DMA engine (DMA_COPY) and one compute engine (GEMM, VEC_OP, SOFTMAX); an
 * engine descriptor starts at max(q, its engine's end) and leaves q as it is;
 * a signal starts at q, holds it for 50 and sets its event at its end (the
 * producer is not waited for); a wait starts at max(q, the event's time);
 * NOOP holds q:
 *   d 0..256 (DMA)   s1 0..50   w1 50..100   g 100..148 (compute)   s5 100..150
 *   n 150..160   v max(160, 148) = 160..672   s 672..704   h 704..800
 * run.py sequential (rtlgen_overlap=0): each after the previous, 1104 in all. */
static void test_rtlgen_preset(void) {
    const char *y = "version: 0.1\n"
                    "buffers: [{id: A, addr: 0x50000000}, {id: B, addr: 0x50010000}, {id: C, addr: 0x50020000},\n"
                    "  {id: D, addr: 0x50030000}, {id: E, addr: 0x50040000}, {id: F, addr: 0x50050000},\n"
                    "  {id: G, addr: 0x50060000}, {id: H, addr: 0x50070000}, {id: I, addr: 0x50080000},\n"
                    "  {id: J, addr: 0x50090000}, {id: K, addr: 0x500a0000}]\n"
                    "ops:\n"
                    "  - {id: d, type: dma_copy, src: A, dst: B, bytes: 4096}\n"
                    "  - {id: g, type: gemm, a: B, b: C, c: D, m: 16, n: 16, k: 16, dtype: int8, layout: row_major}\n"
                    "  - {id: n, type: noop}\n"
                    "  - {id: v, type: vec_op, src: E, dst: F, bytes: 4096, op: relu, dtype: int8}\n"
                    "  - {id: s, type: softmax, src: G, dst: H, row_bytes: 64, rows: 4, dtype: int8}\n"
                    "  - {id: h, type: gemm, a: I, b: J, c: K, m: 16, n: 16, k: 16, dtype: fp16, layout: row_major}\n"
                    "deps: [{wait: [d], then: g}]\n"
                    "events: [{id: 5, signal_on: g, irq: true}]\n";
    uint8_t *bin;
    size_t len;
    CHECK_EQ(npk_shell_map_yaml(y, strlen(y), &bin, &len, NULL), 0);
    CHECK_EQ(len, 9 * 32);
    logrec lg = {0};
    npk_port *p = run_logged("preset=rtlgen-perf", bin, len, &lg);
    CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
    /* d, signal 1, wait 1, g, signal 5, noop, v, s, h */
    const uint64_t start[9] = {0, 0, 50, 100, 100, 150, 160, 672, 704};
    const uint64_t end[9] = {256, 50, 100, 148, 150, 160, 672, 704, 800};
    check_sched(&lg, 9, start, end);
    CHECK_EQ(npk_sim_cycles(npk_port_sim(p)) >= 800, 1);
    npk_port_close(p);
    /* sequential mode */
    p = run_logged("preset=rtlgen-perf,rtlgen_overlap=0", bin, len, &lg);
    const uint64_t sstart[9] = {0, 256, 306, 356, 404, 454, 464, 976, 1008};
    const uint64_t send[9] = {256, 306, 356, 404, 454, 464, 976, 1008, 1104};
    check_sched(&lg, 9, sstart, send);
    npk_port_close(p);
    /* run.py --overlap: a later descriptor starts on an idle engine while an earlier one waits.
     * GEMM fp16 16x16x16 (96) twice, then DMA_COPY 1600 B (100): the second GEMM waits for the
     * compute engine (96..192) while the DMA starts at once on the idle DMA engine (0..100);
     * npukit's default in-order issue would start the DMA only when the second GEMM issued (96). */
    {
        const char *y2 = "version: 0.1\n"
                         "buffers: [{id: A, addr: 0x50000000}, {id: B, addr: 0x50010000}, {id: C, addr: 0x50020000},\n"
                         "  {id: D, addr: 0x50030000}, {id: E, addr: 0x50040000}]\n"
                         "ops:\n"
                         "  - {id: h1, type: gemm, a: A, b: B, c: C, m: 16, n: 16, k: 16, dtype: fp16, layout: row_major}\n"
                         "  - {id: h2, type: gemm, a: A, b: B, c: D, m: 16, n: 16, k: 16, dtype: fp16, layout: row_major}\n"
                         "  - {id: c, type: dma_copy, src: A, dst: E, bytes: 1600}\n";
        uint8_t *b2;
        size_t l2;
        CHECK_EQ(npk_shell_map_yaml(y2, strlen(y2), &b2, &l2, NULL), 0);
        CHECK_EQ(l2, 3 * 32);
        for (int mode = 0; mode < 2; mode++) {
            p = run_logged(mode ? "preset=rtlgen-perf" : "preset=rtlgen-perf,rtlgen_overlap=0", b2, l2, &lg);
            const uint64_t os[3] = {0, 96, 0}, oe[3] = {96, 192, 100}; /* overlap: 192 in all */
            const uint64_t ss[3] = {0, 96, 192}, se[3] = {96, 192, 292}; /* sequential: 292 */
            check_sched(&lg, 3, mode ? os : ss, mode ? oe : se);
            npk_port_close(p);
        }
        free(b2);
    }
    /* an option given with the preset overrides it; unknown presets are refused */
    p = run_logged("dma_bpc=32,preset=rtlgen-perf", bin, 32, &lg);
    CHECK_EQ(lg.n, 1);
    CHECK_EQ(lg.e[0].end_cycle, 128);
    npk_port_close(p);
    npk_port *bad = NULL;
    CHECK(npk_port_open(&bad, "sim", "shell", "preset=gemmini") < 0);
    CHECK(strstr(npk_errmsg(), "unknown preset") != NULL);
    free(bin);
}

int main(void) {
    test_rtlgen_preset();
    /* wrap: a 256-byte ring, 40 copies and a straddling v0.2 GEMM, through the driver */
    {
        npk_port *p = open_shell(NULL);
        npk_shell *sh;
        npk_shell_opts o = {256, RING, 0, 0};
        CHECK_EQ(npk_shell_open(&sh, p, &o), 0);
        CHECK(npk_shell_caps(sh) & SHELL_CAP_RING_WRAP);
        static uint8_t src[40 * 64], got[40 * 64];
        fill_rand(src, sizeof src);
        npk_port_mem_write(p, DATA, src, sizeof src);
        for (int i = 0; i < 40; i++) {
            uint8_t d[32];
            copy_desc(d, DATA + 64u * i, DATA + 0x10000 + 64u * i, 64, (uint32_t)i);
            CHECK_EQ(npk_shell_push(sh, d, 32), 0);
        }
        CHECK_EQ(npk_shell_kick(sh), 0);
        CHECK_EQ(npk_shell_wait(sh, 1000000), 0);
        npk_port_mem_read(p, DATA + 0x10000, got, sizeof got);
        CHECK(!memcmp(got, src, sizeof got));
        /* tail is now at 40*32 mod 256 = 0: push 7 NOOPs so the GEMM starts at 224 and wraps */
        for (int i = 0; i < 7; i++) {
            uint8_t d[32];
            npk_shell_enc_noop(d, (uint32_t)i);
            CHECK_EQ(npk_shell_push(sh, d, 32), 0);
        }
        int8_t A[4 * 8], B[8 * 3];
        int32_t C[12], R[12];
        fill_rand(A, sizeof A);
        fill_rand(B, sizeof B);
        npk_port_mem_write(p, DATA + 0x20000, A, sizeof A);
        npk_port_mem_write(p, DATA + 0x21000, B, sizeof B);
        npk_shell_gemm_desc g = {0};
        g.m = 4, g.n = 3, g.k = 8;
        g.a = DATA + 0x20000, g.b = DATA + 0x21000, g.c = DATA + 0x22000;
        uint8_t d[96];
        size_t len = npk_shell_enc_gemm(d, &g);
        CHECK_EQ(len, 64);
        CHECK_EQ(npk_shell_push(sh, d, len), 0);
        CHECK_EQ(npk_shell_kick(sh), 0);
        CHECK_EQ(npk_shell_wait(sh, 1000000), 0);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 32); /* 224 + 64 wraps to 32 */
        npk_port_mem_read(p, DATA + 0x22000, C, sizeof C);
        npk_ref_gemm_i8(4, 3, 8, A, B, NULL, R);
        CHECK(!memcmp(C, R, sizeof C));
        npk_shell_close(sh);
        npk_port_close(p);
    }
    /* HALT before the doorbell, RESUME; HALT mid-queue; RESET */
    {
        npk_port *p = open_shell(NULL);
        setup_ring(p, RING, 4096);
        uint8_t q[4 * 32];
        for (int i = 0; i < 4; i++) copy_desc(q + 32 * i, DATA, DATA + 0x1000u * (i + 1), 4096, (uint32_t)i);
        npk_port_mem_write(p, RING, q, sizeof q);
        wreg(p, SHELL_CONTROL, SHELL_CTRL_HALT);
        CHECK_EQ(reg(p, SHELL_CONTROL), SHELL_CTRL_HALT);
        wreg(p, SHELL_CQ_TAIL, 128);
        wreg(p, SHELL_DOORBELL, 1);
        npk_port_wait(p, 10000);
        uint32_t st = reg(p, SHELL_STATUS);
        CHECK_EQ(st & 7, 0); /* not idle (queue not empty), not busy (halted) */
        CHECK(st & SHELL_STATUS_HALTED);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 0);
        CHECK_EQ(reg(p, SHELL_PERF_DESCS), 0);
        wreg(p, SHELL_CONTROL, SHELL_CTRL_RESUME);
        CHECK_EQ(reg(p, SHELL_CONTROL), 0);
        /* let the first copy issue, then halt: in-flight work completes, nothing new is fetched */
        npk_port_wait(p, 6);
        wreg(p, SHELL_CONTROL, SHELL_CTRL_HALT);
        run_idle(p, 100000);
        npk_port_wait(p, 10000);
        uint32_t head = reg(p, SHELL_CQ_HEAD);
        CHECK(head >= 32 && head < 128);
        CHECK_EQ(reg(p, SHELL_STATUS) & SHELL_STATUS_BUSY, 0);
        CHECK_EQ(reg(p, SHELL_PERF_DESCS), head / 32);
        wreg(p, SHELL_CONTROL, SHELL_CTRL_RESUME);
        run_idle(p, 100000);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 128);
        CHECK_EQ(reg(p, SHELL_STATUS) & 7, SHELL_STATUS_IDLE);
        /* RESET mid-run: every register back to its reset value, line low */
        wreg(p, SHELL_IRQ_ENABLE, 7);
        wreg(p, SHELL_CQ_TAIL, 0);
        npk_port_mem_write(p, RING, q, 32);
        wreg(p, SHELL_CQ_TAIL, 160);
        wreg(p, SHELL_DOORBELL, 1);
        npk_port_wait(p, 8);
        wreg(p, SHELL_CONTROL, SHELL_CTRL_RESET);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 0);
        CHECK_EQ(reg(p, SHELL_CQ_TAIL), 0);
        CHECK_EQ(reg(p, SHELL_CQ_SIZE), 0);
        CHECK_EQ(reg(p, SHELL_IRQ_ENABLE), 0);
        CHECK_EQ(reg(p, SHELL_IRQ_STATUS), 0);
        CHECK_EQ(reg(p, SHELL_STATUS), SHELL_STATUS_IDLE);
        CHECK_EQ(reg(p, SHELL_VERSION), SHELL_VERSION_VALUE);
        CHECK_EQ(npk_port_irq(p, 0), 0);
        npk_port_wait(p, 100000);
        CHECK_EQ(reg(p, SHELL_STATUS), SHELL_STATUS_IDLE);
        npk_port_close(p);
    }
    /* events: signal without IRQ flag raises nothing; with it, bit 1; a wait consumes the event */
    {
        npk_port *p = open_shell("event_timeout=20000");
        setup_ring(p, RING, 4096);
        wreg(p, SHELL_IRQ_ENABLE, 7);
        uint8_t q[6 * 32];
        hdr32(q, 0x20, 0x00, 1, 5);      /* signal 5, no irq */
        hdr32(q + 32, 0x21, 0, 1, 5);    /* wait 5: passes */
        copy_desc(q + 64, DATA, DATA + 0x1000, 64, 0);
        hdr32(q + 96, 0x20, 0x01, 1, 6); /* signal 6 with irq */
        hdr32(q + 128, 0x21, 0, 1, 6);
        hdr32(q + 160, 0x21, 0, 1, 5);   /* 5 was consumed: times out */
        npk_port_mem_write(p, RING, q, sizeof q);
        wreg(p, SHELL_CQ_TAIL, 160);
        wreg(p, SHELL_DOORBELL, 1);
        run_idle(p, 100000);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 160);
        uint32_t irq = reg(p, SHELL_IRQ_STATUS);
        CHECK(irq & SHELL_IRQ_EVENT);
        CHECK(irq & SHELL_IRQ_CQ_EMPTY);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        wreg(p, SHELL_IRQ_STATUS, 7);
        wreg(p, SHELL_CQ_TAIL, 192);
        wreg(p, SHELL_DOORBELL, 1);
        run_idle(p, 100000);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), SHELL_ERR_TIMEOUT);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 160);
        CHECK_EQ(reg(p, SHELL_IRQ_STATUS) & SHELL_IRQ_EVENT, 0);
        npk_port_close(p);
        /* only FLAGS[0] raises IRQ bit 1 */
        p = open_shell(NULL);
        setup_ring(p, RING, 4096);
        hdr32(q, 0x20, 0x00, 1, 1);
        copy_desc(q + 32, DATA, DATA + 0x1000, 64, 0);
        npk_port_mem_write(p, RING, q, 64);
        wreg(p, SHELL_CQ_TAIL, 64);
        wreg(p, SHELL_DOORBELL, 1);
        run_idle(p, 100000);
        CHECK_EQ(reg(p, SHELL_IRQ_STATUS), SHELL_IRQ_CQ_EMPTY);
        npk_port_close(p);
    }
    /* completion-bound signal and overlap: DMA and an independent GEMM overlap, a GEMM that reads the DMA's
     * destination waits for it; the signal becomes visible after both */
    {
        npk_port *p = open_shell(NULL);
        npk_trace *tr = npk_trace_new();
        npk_sim_dev(npk_port_sim(p))->trace = tr;
        logrec lg = {0};
        npk_shell_sim_set_log(npk_sim_dev(npk_port_sim(p)), log_cb, &lg);
        setup_ring(p, RING, 4096);
        uint8_t q[4 * 32];
        copy_desc(q, DATA, DATA + 0x10000, 16384, 1);                            /* writes 0x5001_0000.. */
        hdr32(q + 32, 0x10, 0x00, 1, (32u << 20) | (32u << 10) | 32u);             /* independent */
        le64(q + 40, DATA + 0x20000), le64(q + 48, DATA + 0x21000), le64(q + 56, DATA + 0x22000);
        hdr32(q + 64, 0x10, 0x00, 1, (32u << 20) | (32u << 10) | 32u);            /* reads the copy's output */
        le64(q + 72, DATA + 0x10000), le64(q + 80, DATA + 0x21000), le64(q + 88, DATA + 0x23000);
        hdr32(q + 96, 0x20, 0x01, 1, 2);
        npk_port_mem_write(p, RING, q, sizeof q);
        wreg(p, SHELL_CQ_TAIL, 128);
        wreg(p, SHELL_DOORBELL, 1);
        run_idle(p, 1000000);
        CHECK_EQ(lg.n, 4);
        CHECK(lg.e[1].start_cycle < lg.e[0].end_cycle);  /* overlap */
        CHECK(lg.e[2].start_cycle >= lg.e[0].end_cycle); /* RAW dependence respected */
        CHECK(lg.e[2].start_cycle >= lg.e[1].end_cycle); /* one GEMM engine */
        CHECK(lg.e[3].end_cycle >= lg.e[2].end_cycle);   /* signal visible after completion */
        /* trace durations agree with the counters */
        CHECK_EQ(npk_trace_total_cycles(tr, "shell", "dma"), reg(p, SHELL_PERF_DMA_CYCLES));
        CHECK_EQ(npk_trace_total_cycles(tr, "shell", "gemm"), reg(p, SHELL_PERF_GEMM_CYCLES));
        CHECK_EQ(npk_trace_total_cycles(tr, "shell", "fetch"), reg(p, SHELL_PERF_FETCH_CYCLES));
        CHECK_EQ(reg(p, SHELL_PERF_MACS_LO), 2 * 32 * 32 * 32);
        npk_sim_dev(npk_port_sim(p))->trace = NULL;
        npk_trace_free(tr);
        npk_port_close(p);
    }
    /* a wait on a signal still in flight behind a long GEMM never times out, even with a tiny budget */
    {
        npk_port *p = open_shell("event_timeout=10");
        setup_ring(p, RING, 4096);
        uint8_t q[4 * 32];
        hdr32(q, 0x10, 0x00, 1, (64u << 20) | (64u << 10) | 64u);
        le64(q + 8, DATA), le64(q + 16, DATA + 0x1000), le64(q + 24, DATA + 0x2000);
        hdr32(q + 32, 0x20, 0x00, 1, 3);
        hdr32(q + 64, 0x21, 0x00, 1, 3);
        copy_desc(q + 96, DATA, DATA + 0x8000, 64, 0);
        npk_port_mem_write(p, RING, q, sizeof q);
        wreg(p, SHELL_CQ_TAIL, 128);
        wreg(p, SHELL_DOORBELL, 1);
        run_idle(p, 100000);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 128);
        CHECK_EQ(reg(p, SHELL_PERF_DESCS), 4);
        npk_port_close(p);
    }
    /* event_timeout=0: the wait is forever but visible; the model reports idle (nothing changes) */
    {
        npk_port *p = open_shell("event_timeout=0");
        setup_ring(p, RING, 4096);
        uint8_t q[32];
        hdr32(q, 0x21, 0, 1, 77);
        npk_port_mem_write(p, RING, q, 32);
        wreg(p, SHELL_CQ_TAIL, 32);
        wreg(p, SHELL_DOORBELL, 1);
        npk_port_wait(p, 100);
        CHECK(npk_sim_run_until_idle(npk_port_sim(p), 1000000) < 10);
        uint32_t st = reg(p, SHELL_STATUS);
        CHECK(st & SHELL_STATUS_BUSY);
        CHECK(st & SHELL_STATUS_WAITING);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        /* the way out: RESET */
        wreg(p, SHELL_CONTROL, SHELL_CTRL_RESET);
        CHECK_EQ(reg(p, SHELL_STATUS), SHELL_STATUS_IDLE);
        npk_port_close(p);
    }
    /* CQ_HEAD: ignored while fetching, writable when stopped */
    {
        npk_port *p = open_shell(NULL);
        setup_ring(p, RING, 4096);
        wreg(p, SHELL_CQ_HEAD, 64);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 64);
        wreg(p, SHELL_CQ_HEAD, 65);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), SHELL_ERR_ALIGNMENT);
        npk_port_close(p);
    }
    return CHECK_DONE();
}
