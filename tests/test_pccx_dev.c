// SPDX-License-Identifier: MIT
/* The pccx model through the port layer and the driver: host interface,
 * every fault, GEMV/GEMM bit-exact against an independent CPU model of the
 * same arithmetic (exact sum, one RNE rounding to BF16), CVO functions
 * against long-double references within the documented tolerance, and the
 * softmax / RMSNorm / RoPE sequences against float references. */
#include "check.h"
#include "npukit/npu.h"
#include "npukit/numfmt.h"
#include "npukit/pccx.h"
#include "npukit/sim.h"
#include "npukit/trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- independent helpers (not the library's) -------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static double b2d(uint16_t b) {
    unsigned e = (b >> 7) & 0xff, m = b & 0x7f;
    double s = (b & 0x8000) ? -1.0 : 1.0;
    if (e == 0xff) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp((double)m, -133);
    return s * ldexp((double)(128 + m), (int)e - 134);
}

/* RNE of a double to BF16 (finite, normal range) written with modf. */
static uint16_t d2b(double v) {
    if (v == 0) return signbit(v) ? 0x8000 : 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    v = fabs(v);
    int e = (int)floor(log2(v));
    if (ldexp(1.0, e) > v) e--;
    if (ldexp(1.0, e + 1) <= v) e++;
    double sig = ldexp(v, 7 - e); /* in [128, 256) */
    double ip;
    double fr = modf(sig, &ip);
    unsigned n = (unsigned)ip;
    if (fr > 0.5 || (fr == 0.5 && (n & 1))) n++;
    if (n == 256) {
        n = 128;
        e++;
    }
    return (uint16_t)(sign | (unsigned)(e + 127) << 7 | (n - 128));
}

/* A BF16 with exponent in [elo, ehi] and a random mantissa and sign. */
static uint16_t rbf(int elo, int ehi) {
    int e = elo + (int)(rnd() % (unsigned)(ehi - elo + 1));
    return (uint16_t)((rnd() & 1) << 15 | (unsigned)(e + 127) << 7 | (rnd() & 0x7f));
}

static npk_port *port;
static npk_pccx *drv;

static uint32_t r32(uint32_t off) {
    uint32_t v = 0;
    npk_port_read32(port, off, &v);
    return v;
}
static void w32(uint32_t off, uint32_t v) { npk_port_write32(port, off, v); }
static void issue64(uint64_t w) { npk_port_write64(port, NPK_PCCX_INSTR_LO, w); }
static void run(void) {
    for (int i = 0; i < 100000 && (r32(NPK_PCCX_STATUS) & NPK_PCCX_STATUS_BUSY); i++) {
        uint32_t eta = r32(NPK_PCCX_IDLE_ETA);
        npk_port_wait(port, eta && eta != 0xffffffffu ? eta : 1);
    }
}

/* L2 through the debug window. */
static void l2_poke(uint32_t word, const uint16_t *v, unsigned n) {
    w32(NPK_PCCX_L2_ADDR, word);
    for (unsigned i = 0; i < (n + 7) / 8 * 4; i++) {
        uint16_t a = 2 * i < n ? v[2 * i] : 0, b = 2 * i + 1 < n ? v[2 * i + 1] : 0;
        w32(NPK_PCCX_L2_DATA, a | (uint32_t)b << 16);
    }
}
static void l2_peek(uint32_t word, uint16_t *v, unsigned n) {
    w32(NPK_PCCX_L2_ADDR, word);
    for (unsigned i = 0; i < (n + 7) / 8 * 4; i++) {
        uint32_t x = r32(NPK_PCCX_L2_DATA);
        if (2 * i < n) v[2 * i] = (uint16_t)x;
        if (2 * i + 1 < n) v[2 * i + 1] = (uint16_t)(x >> 16);
    }
}

static void reopen(const char *opts) {
    if (drv) npk_pccx_close(drv);
    if (port) npk_port_close(port);
    drv = NULL;
    CHECK_EQ(npk_port_open(&port, "sim", "pccx", opts), 0);
    CHECK_EQ(npk_pccx_open(&drv, port, NULL), 0);
}

/* ---- host interface ---------------------------------------------------------------- */

static void test_registers(void) {
    reopen(NULL);
    CHECK_EQ(r32(NPK_PCCX_ID), NPK_PCCX_ID_VALUE);
    CHECK_EQ(r32(NPK_PCCX_VERSION), 2);
    CHECK_EQ(r32(NPK_PCCX_STATUS), 0);
    CHECK_EQ(r32(NPK_PCCX_EMAX), 0xff80);
    CHECK_EQ(r32(NPK_PCCX_SCALAR), 0x3f80);
    CHECK_EQ(r32(NPK_PCCX_QUEUE_CAP), NPK_PCCX_QUEUE_DEPTH);
    CHECK_EQ(r32(NPK_PCCX_HWIN_SIZE), 0x200000);
    CHECK_EQ(r32(NPK_PCCX_HWIN_BASE_LO), (uint32_t)npk_pccx_hwin_base(drv));
    /* HI write issues {HI, LO}: a MEMSET then a MEMCPY L2->host that uses it */
    uint16_t v[16];
    for (int i = 0; i < 16; i++) v[i] = (uint16_t)(0x3f80 + i);
    l2_poke(40, v, 16);
    uint64_t ms = npk_pccx_memset_word(0, 7, 1, 2, 8); /* 16 elements = 2 words */
    w32(NPK_PCCX_INSTR_LO, (uint32_t)ms);
    CHECK_EQ(r32(NPK_PCCX_INSTR_ISSUED), 0); /* LO alone does not issue */
    w32(NPK_PCCX_INSTR_HI, (uint32_t)(ms >> 32));
    CHECK_EQ(r32(NPK_PCCX_INSTR_ISSUED), 1);
    issue64(npk_pccx_memcpy_word(0, 1, 0, 40, 4, 7, 0)); /* to window offset 64 */
    CHECK_EQ(r32(NPK_PCCX_INSTR_ISSUED), 2);
    CHECK(r32(NPK_PCCX_STATUS) & NPK_PCCX_STATUS_BUSY);
    run();
    CHECK_EQ(r32(NPK_PCCX_STATUS), NPK_PCCX_STATUS_DONE);
    uint8_t h[32];
    npk_port_mem_read(port, npk_pccx_hwin_base(drv) + 64, h, 32);
    for (int i = 0; i < 16; i++) CHECK_EQ(h[2 * i] | h[2 * i + 1] << 8, v[i]);
    CHECK_EQ(r32(NPK_PCCX_CNT_MEMSET), 1);
    CHECK_EQ(r32(NPK_PCCX_CNT_MEMCPY), 1);
    CHECK_EQ(r32(NPK_PCCX_DMA_BYTES_LO), 32);
    w32(NPK_PCCX_STATUS, NPK_PCCX_STATUS_DONE); /* W1C */
    CHECK_EQ(r32(NPK_PCCX_STATUS), 0);
    /* IRQ on DONE when enabled */
    w32(NPK_PCCX_IRQ_EN, 1);
    issue64(npk_pccx_memset_word(0, 8, 1, 1, 1));
    run();
    CHECK_EQ(npk_port_irq(port, 0), 1);
    w32(NPK_PCCX_STATUS, NPK_PCCX_STATUS_DONE);
    CHECK_EQ(npk_port_irq(port, 0), 0);
}

/* The smoke program of pccx-isa.md, raw: the GEMM and GEMV fault (their
 * weight_shape entries 1 and 2 were never set), the rest runs. */
static void test_smoke_program(void) {
    reopen(NULL);
    uint64_t hw = npk_pccx_hwin_base(drv);
    uint8_t host[32];
    for (int i = 0; i < 9; i++) {
        uint16_t b = d2b(i + 1);
        host[2 * i] = (uint8_t)b;
        host[2 * i + 1] = (uint8_t)(b >> 8);
    }
    memset(host + 18, 0xee, 14);
    npk_port_mem_write(port, hw, host, 32);
    uint16_t x[64], sum = 0;
    double s = 0;
    for (int i = 0; i < 64; i++) {
        x[i] = d2b((double)(i % 7) - 3);
        s += b2d(x[i]);
    }
    sum = d2b(s);
    l2_poke(768, x, 64);
    const uint64_t prog[7] = {0x3030001000100090ull, 0x3090004000400040ull, 0x2800c80000000006ull,
                              0x10100004b0804320ull, 0x0018000641008920ull, 0x45018000e0001000ull,
                              0x2400000380000006ull};
    for (int i = 0; i < 7; i++) issue64(prog[i]);
    run();
    CHECK_EQ(r32(NPK_PCCX_STATUS) & NPK_PCCX_STATUS_ERROR, NPK_PCCX_STATUS_ERROR);
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_SHAPE_ZERO);
    CHECK_EQ(r32(NPK_PCCX_ERR_INDEX), 3);
    CHECK_EQ(r32(NPK_PCCX_ERR_INSTR_LO), (uint32_t)prog[3]);
    CHECK_EQ(r32(NPK_PCCX_ERR_INSTR_HI), (uint32_t)(prog[3] >> 32));
    CHECK_EQ(r32(NPK_PCCX_QUEUE_COUNT), 3); /* stopped */
    npk_port_wait(port, 10000);
    CHECK_EQ(r32(NPK_PCCX_QUEUE_COUNT), 3);
    uint16_t got[16];
    l2_peek(100, got, 16); /* the MEMCPY ran: 2 whole words */
    for (int i = 0; i < 9; i++) CHECK_EQ(got[i], d2b(i + 1));
    CHECK_EQ(got[9], 0xeeee);
    w32(NPK_PCCX_STATUS, NPK_PCCX_STATUS_ERROR); /* clear: resumes */
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_SHAPE_ZERO);
    CHECK_EQ(r32(NPK_PCCX_ERR_INDEX), 4);
    w32(NPK_PCCX_STATUS, NPK_PCCX_STATUS_ERROR);
    run();
    CHECK_EQ(r32(NPK_PCCX_STATUS), NPK_PCCX_STATUS_DONE);
    CHECK_EQ(r32(NPK_PCCX_INSTR_RETIRED), 5);
    uint8_t back[32];
    npk_port_mem_read(port, hw, back, 32);
    CHECK_EQ(back[0] | back[1] << 8, sum);
    CHECK_EQ(r32(NPK_PCCX_SCALAR), sum);
}

/* ---- faults ---------------------------------------------------------------------------- */

/* Issue `bad` after a MEMSET and before a marker MEMSET; check the fault, that
 * the marker waits, then clear and check the marker ran. */
static void expect_fault(uint64_t bad, int code, const char *what) {
    w32(NPK_PCCX_CTRL, NPK_PCCX_CTRL_RESET);
    w32(NPK_PCCX_HWIN_BASE_LO, (uint32_t)npk_pccx_hwin_base(drv));
    w32(NPK_PCCX_HWIN_BASE_HI, (uint32_t)(npk_pccx_hwin_base(drv) >> 32));
    issue64(npk_pccx_memset_word(0, 1, 1, 1, 16)); /* fmap[1] = 16 elements */
    issue64(npk_pccx_memset_word(1, 2, 8, 16, 0)); /* weight[2] = 8 x 16 */
    issue64(npk_pccx_memset_word(1, 3, 8, 8, 0));  /* weight[3] = 8 x 8 */
    issue64(npk_pccx_memset_word(1, 5, 8, 16, 17)); /* weight[5]: group 17 > K */
    issue64(bad);
    issue64(npk_pccx_memset_word(0, 40, 7, 7, 7)); /* marker */
    run();
    uint32_t st = r32(NPK_PCCX_STATUS);
    CHECK_EQ(st & (NPK_PCCX_STATUS_ERROR | NPK_PCCX_STATUS_BUSY), NPK_PCCX_STATUS_ERROR);
    if (r32(NPK_PCCX_ERR_CODE) != (uint32_t)code) fprintf(stderr, "fault case: %s\n", what);
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), code);
    CHECK_EQ(r32(NPK_PCCX_ERR_INDEX), 4);
    CHECK_EQ(r32(NPK_PCCX_ERR_INSTR_LO), (uint32_t)bad);
    CHECK_EQ(r32(NPK_PCCX_INSTR_RETIRED), 4);
    CHECK_EQ(r32(NPK_PCCX_QUEUE_COUNT), 1);
    w32(NPK_PCCX_STATUS, NPK_PCCX_STATUS_ERROR);
    run();
    CHECK_EQ(r32(NPK_PCCX_STATUS), NPK_PCCX_STATUS_DONE);
    CHECK_EQ(r32(NPK_PCCX_INSTR_RETIRED), 5);
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), 0);
}

static void test_faults(void) {
    reopen(NULL);
    uint16_t pat[16];
    for (int i = 0; i < 16; i++) pat[i] = (uint16_t)(0x1234 + i);
    l2_poke(114680, pat, 16);
    expect_fault(0x5000000000000000ull, NPK_PCCX_FAULT_OPCODE, "opcode 5");
    expect_fault(0xf000000000000000ull, NPK_PCCX_FAULT_OPCODE, "opcode 15");
    expect_fault(npk_pccx_cvo_word(9, 0, 0, 8, 0, 0), NPK_PCCX_FAULT_FUNC, "cvo func 9");
    expect_fault(npk_pccx_gemv_word(0, 0, 0, 2, 1, 0) | 4, NPK_PCCX_FAULT_RESERVED, "gemv rsvd");
    expect_fault(npk_pccx_gemm_word(0, 0, 0x02, 2, 1, 0), NPK_PCCX_FAULT_RESERVED, "gemm flag rsvd");
    expect_fault(npk_pccx_memset_word(0, 0, 1, 1, 1) | 1, NPK_PCCX_FAULT_RESERVED, "memset rsvd");
    expect_fault(npk_pccx_cvo_word(0, 0, 0, 8, 0x02, 0), NPK_PCCX_FAULT_RESERVED, "cvo flag rsvd");
    expect_fault(npk_pccx_memcpy_word(1, 1, 0, 0, 0, 1, 0), NPK_PCCX_FAULT_DIRECTION, "memcpy 1,1");
    expect_fault(npk_pccx_memcpy_word(0, 0, 114687, 0, 0, 1, 0), NPK_PCCX_FAULT_L2_RANGE, "memcpy l2 end");
    expect_fault(npk_pccx_memcpy_word(1, 0, 120000, 0, 0, 1, 0), NPK_PCCX_FAULT_L2_RANGE, "memcpy beyond");
    expect_fault(npk_pccx_cvo_word(0, 114688, 0, 1, 0, 0), NPK_PCCX_FAULT_L2_RANGE, "cvo src");
    expect_fault(npk_pccx_cvo_word(5, 0, 131071, 8, 0, 0), NPK_PCCX_FAULT_L2_RANGE, "cvo dst");
    expect_fault(npk_pccx_gemv_word(114688, 0, 0, 2, 1, 0), NPK_PCCX_FAULT_L2_RANGE, "gemv dest");
    expect_fault(npk_pccx_gemv_word(0, 114687, 0, 2, 1, 0), NPK_PCCX_FAULT_L2_RANGE, "gemv src");
    expect_fault(npk_pccx_memcpy_word(0, 0, 0, 0, 0, 5, 0), NPK_PCCX_FAULT_SHAPE_ZERO, "memcpy shape 0");
    expect_fault(npk_pccx_gemv_word(0, 0, 0, 4, 1, 0), NPK_PCCX_FAULT_SHAPE_ZERO, "gemv weight 0");
    expect_fault(npk_pccx_cvo_word(1, 0, 0, 0, 0, 0), NPK_PCCX_FAULT_SHAPE_ZERO, "cvo len 0");
    expect_fault(npk_pccx_gemv_word(0, 0, 0, 3, 1, 0), NPK_PCCX_FAULT_SHAPE_MISMATCH, "gemv K 16 vs 8");
    expect_fault(npk_pccx_gemm_word(0, 0, 0, 5, 1, 0), NPK_PCCX_FAULT_SHAPE_MISMATCH, "group > K");
    expect_fault(npk_pccx_gemv_word(0, 8, 0, 2, 1, 5), NPK_PCCX_FAULT_LANE, "lane 5");
    expect_fault(npk_pccx_memcpy_word(1, 0, 0, 0, (0x200000 - 16) / 16, 1, 0), NPK_PCCX_FAULT_HOST_RANGE, "host end");
    expect_fault(npk_pccx_cvo_word(0, 0, 0, 8, NPK_PCCX_CVO_RECIP_SCALE, 0), NPK_PCCX_FAULT_FLAGS, "recip on exp");
    expect_fault(npk_pccx_memcpy_word(1, 0, 0, 3, 0, 1, 0), NPK_PCCX_FAULT_FIELD, "src on host->l2");
    expect_fault(npk_pccx_memset_word(3, 0, 1, 1, 1), NPK_PCCX_FAULT_CACHE, "cache 3");
    /* faulted instructions did not execute: the L2 tail is unchanged */
    uint16_t got[16];
    l2_peek(114680, got, 16);
    for (int i = 0; i < 16; i++) CHECK_EQ(got[i], pat[i]);

    /* WS_RANGE: a limit below the record */
    w32(NPK_PCCX_CTRL, NPK_PCCX_CTRL_RESET);
    w32(NPK_PCCX_WS_ADDR_LO, 0x1000);
    w32(NPK_PCCX_WS_LIMIT_LO, 0x1000 + 63);
    issue64(npk_pccx_memset_word(0, 1, 1, 1, 16));
    issue64(npk_pccx_memset_word(1, 2, 8, 16, 0)); /* 64-byte record */
    issue64(npk_pccx_gemv_word(0, 8, 0, 2, 1, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_WS_RANGE);
    CHECK_EQ(r32(NPK_PCCX_WS_ADDR_LO), 0x1000); /* not consumed */
    w32(NPK_PCCX_WS_LIMIT_LO, 0x1000 + 64);
    w32(NPK_PCCX_STATUS, NPK_PCCX_STATUS_ERROR);
    issue64(npk_pccx_gemv_word(0, 8, 0, 2, 1, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_STATUS), NPK_PCCX_STATUS_DONE);
    CHECK_EQ(r32(NPK_PCCX_WS_ADDR_LO), 0x1000 + 64); /* consumed and advanced */

    /* OVERFLOW: 1 running + 256 queued, the next is dropped with a fault */
    w32(NPK_PCCX_CTRL, NPK_PCCX_CTRL_RESET);
    for (int i = 0; i < 258; i++) issue64(npk_pccx_memset_word(0, 0, 1, 1, 1));
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_OVERFLOW);
    CHECK_EQ(r32(NPK_PCCX_ERR_INDEX), 257);
    CHECK_EQ(r32(0xc0), 1);
    w32(NPK_PCCX_STATUS, NPK_PCCX_STATUS_ERROR);
    run();
    CHECK_EQ(r32(NPK_PCCX_INSTR_RETIRED), 257);

    /* FLUSH drops the queued instructions */
    w32(NPK_PCCX_CTRL, NPK_PCCX_CTRL_RESET);
    issue64(0x6000000000000000ull);
    issue64(npk_pccx_memset_word(0, 0, 1, 1, 1));
    run();
    CHECK_EQ(r32(NPK_PCCX_QUEUE_COUNT), 1);
    w32(NPK_PCCX_CTRL, NPK_PCCX_CTRL_FLUSH);
    w32(NPK_PCCX_STATUS, NPK_PCCX_STATUS_ERROR);
    run();
    CHECK_EQ(r32(NPK_PCCX_INSTR_RETIRED), 0);

    /* the driver turns a fault into -NPK_EDEVICE naming it, and recovers */
    reopen(NULL);
    CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_EXP, 114688 - 1, 0, 16, 0, 0), 0);
    CHECK_EQ(npk_pccx_sync(drv), -NPK_EDEVICE);
    CHECK(strstr(npk_errmsg(), "L2_RANGE") != NULL);
    CHECK(strstr(npk_errmsg(), "#0") != NULL);
    CHECK(strstr(npk_errmsg(), "cvo cvo_func=exp") != NULL);
    CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_EXP, 0, 0, 16, 0, 0), 0);
    CHECK_EQ(npk_pccx_sync(drv), 0);

    /* BUS: an injected bus error on the host window */
    npk_sim *sim = npk_port_sim(port);
    npk_fault f = {.access = NPK_ACC_READ, .addr = npk_pccx_hwin_base(drv) + 16, .len = 16, .beat = -1,
                   .resp = NPK_BUS_ERROR, .count = 0};
    npk_mem_add_fault(npk_sim_mem(sim), &f);
    l2_poke(200, pat, 16);
    CHECK_EQ(npk_pccx_memset(drv, 0, 61, 1, 2, 8), 0);
    CHECK_EQ(npk_pccx_memcpy(drv, 1, 0, 200, 0, 0, 61, 0), 0);
    CHECK_EQ(npk_pccx_sync(drv), -NPK_EDEVICE);
    CHECK(strstr(npk_errmsg(), "BUS") != NULL);
    l2_peek(200, got, 16);
    for (int i = 0; i < 16; i++) CHECK_EQ(got[i], pat[i]); /* nothing written */
    /* a bus hang: the device stays busy; the driver times out and resets it */
    npk_mem_clear_faults(npk_sim_mem(sim));
    f.resp = NPK_BUS_HANG;
    npk_mem_add_fault(npk_sim_mem(sim), &f);
    CHECK_EQ(npk_pccx_memset(drv, 0, 61, 1, 2, 8), 0);
    CHECK_EQ(npk_pccx_memcpy(drv, 1, 0, 200, 0, 0, 61, 0), 0);
    CHECK_EQ(npk_pccx_sync(drv), -NPK_ETIMEDOUT);
    npk_mem_clear_faults(npk_sim_mem(sim));
    CHECK_EQ(r32(NPK_PCCX_STATUS) & NPK_PCCX_STATUS_BUSY, 0);
}

/* ---- GEMV / GEMM against an independent CPU model ------------------------------------- */

/* y[m][n] = RNE( sum_k s[n][k/G] * q[n][k] * x[m][k] (+ old) ), summed in double:
 * exact for the ranges generated below (every term a multiple of 2^-24 and
 * |sum| < 2^20, so 44 bits suffice). */
static void ref_mm(const uint16_t *x, const int8_t *q, const float *s, unsigned M, unsigned N, unsigned K, unsigned G,
                   const uint16_t *old, uint16_t *y) {
    unsigned ng = (K + G - 1) / G;
    for (unsigned m = 0; m < M; m++)
        for (unsigned n = 0; n < N; n++) {
            double acc = old ? b2d(old[m * N + n]) : 0;
            for (unsigned k = 0; k < K; k++) acc += (double)s[n * ng + k / G] * q[n * K + k] * b2d(x[m * K + k]);
            y[m * N + n] = d2b(acc);
        }
}

static void pack_rows(const uint16_t *v, unsigned rows, unsigned cols, uint16_t *out) {
    unsigned stride = (cols + 7) / 8 * 8;
    memset(out, 0, sizeof *out * rows * stride);
    for (unsigned r = 0; r < rows; r++) memcpy(out + r * stride, v + r * cols, cols * sizeof *v);
}

static void mm_case(int gemm, unsigned M, unsigned N, unsigned K, unsigned G, unsigned flags) {
    unsigned GG = G ? G : K, ng = (K + GG - 1) / GG;
    uint16_t *x = malloc(sizeof *x * M * K), *old = malloc(sizeof *old * M * N), *ref = malloc(sizeof *ref * M * N);
    uint16_t *got = malloc(sizeof *got * M * ((N + 7) / 8 * 8)), *px = malloc(sizeof *px * M * ((K + 7) / 8 * 8));
    uint16_t *pold = malloc(sizeof *pold * M * ((N + 7) / 8 * 8));
    int8_t *q = malloc((size_t)N * K);
    float *s = malloc(sizeof *s * N * ng);
    for (unsigned i = 0; i < M * K; i++) x[i] = rbf(-4, 4);
    for (unsigned i = 0; i < M * N; i++) old[i] = rbf(-4, 4);
    for (unsigned i = 0; i < N * K; i++) q[i] = (int8_t)((int)(rnd() % 16) - 8);
    for (unsigned i = 0; i < N * ng; i++) s[i] = (float)b2d(rbf(-6, -2) & 0x7fff);
    ref_mm(x, q, s, M, N, K, GG, (flags & NPK_PCCX_ACCM) ? old : NULL, ref);
    npk_pccx_wmat w;
    CHECK_EQ(npk_pccx_wmat_upload_q4(drv, q, s, N, K, G, &w), 0);
    uint32_t src = 1000, dst = 30000;
    pack_rows(x, M, K, px);
    CHECK_EQ(npk_pccx_write_bf16(drv, src, px, M * ((K + 7) / 8 * 8)), 0);
    pack_rows(old, M, N, pold);
    CHECK_EQ(npk_pccx_write_bf16(drv, dst, pold, M * ((N + 7) / 8 * 8)), 0);
    if (gemm) CHECK_EQ(npk_pccx_gemm_w(drv, dst, src, M, &w, flags), 0);
    else CHECK_EQ(npk_pccx_gemv_w(drv, dst, src, M, &w, flags), 0);
    CHECK_EQ(npk_pccx_sync(drv), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, dst, got, M * ((N + 7) / 8 * 8)), 0);
    unsigned bad = 0;
    double mx = -INFINITY;
    for (unsigned m = 0; m < M; m++)
        for (unsigned n = 0; n < N; n++) {
            uint16_t g = got[m * ((N + 7) / 8 * 8) + n];
            if (g != ref[m * N + n] && bad++ < 5)
                fprintf(stderr, "%s M%u N%u K%u G%u: y[%u][%u] = 0x%04x, reference 0x%04x\n", gemm ? "gemm" : "gemv", M,
                        N, K, G, m, n, g, ref[m * N + n]);
            if (b2d(ref[m * N + n]) > mx) mx = b2d(ref[m * N + n]);
        }
    CHECK_EQ(bad, 0);
    /* lanes past N in the last word are untouched */
    for (unsigned m = 0; m < M; m++)
        for (unsigned n = N; n < (N + 7) / 8 * 8; n++) CHECK_EQ(got[m * ((N + 7) / 8 * 8) + n], 0);
    if (flags & NPK_PCCX_FINDEMAX) {
        uint16_t e = 0;
        CHECK_EQ(npk_pccx_get_emax(drv, &e), 0);
        CHECK(b2d(e) == mx);
    }
    free(x);
    free(old);
    free(ref);
    free(got);
    free(px);
    free(pold);
    free(q);
    free(s);
}

static void test_mm(void) {
    reopen(NULL);
    mm_case(0, 1, 64, 64, 0, 0);
    mm_case(0, 1, 172, 64, 0, NPK_PCCX_FINDEMAX);
    mm_case(0, 1, 64, 172, 32, 0);              /* groups: 6 groups, the last of 12 */
    mm_case(0, 1, 37, 172, 0, NPK_PCCX_ACCM);   /* odd N: partial last word */
    mm_case(0, 3, 19, 21, 5, NPK_PCCX_ACCM | NPK_PCCX_FINDEMAX);
    mm_case(1, 5, 40, 72, 0, 0);
    mm_case(1, 33, 64, 64, 16, NPK_PCCX_ACCM);
    mm_case(0, 1, 512, 64, 0, 0);

    /* exactness beyond double: 2^100 + 1 - 2^100 = 1 */
    uint16_t x[8] = {0x7180 /* 2^100 */, 0x3f80 /* 1 */, 0xf180 /* -2^100 */};
    int8_t q[3] = {1, 1, 1};
    float s[1] = {1.0f};
    npk_pccx_wmat w;
    uint16_t y[8];
    CHECK_EQ(npk_pccx_wmat_upload_q4(drv, q, s, 1, 3, 0, &w), 0);
    CHECK_EQ(npk_pccx_write_bf16(drv, 10, x, 8), 0);
    CHECK_EQ(npk_pccx_gemv_w(drv, 11, 10, 1, &w, 0), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 11, y, 1), 0);
    CHECK_EQ(y[0], 0x3f80);
    /* ties to even and sticky: 1 + 2^-8 -> 1; (1 + 2^-7) + 2^-8 -> 1 + 2^-6; 1 + 2^-8 + 2^-30 -> 1 + 2^-7 */
    const uint16_t cases[3][3] = {{0x3f80, 0x3b80, 0}, {0x3f81, 0x3b80, 0}, {0x3f80, 0x3b80, 0x3080}};
    const uint16_t expect[3] = {0x3f80, 0x3f82, 0x3f81};
    for (int c = 0; c < 3; c++) {
        CHECK_EQ(npk_pccx_write_bf16(drv, 10, cases[c], 3), 0);
        CHECK_EQ(npk_pccx_wmat_upload_q4(drv, q, s, 1, 3, 0, &w), 0);
        CHECK_EQ(npk_pccx_gemv_w(drv, 11, 10, 1, &w, 0), 0);
        CHECK_EQ(npk_pccx_read_bf16(drv, 11, y, 1), 0);
        CHECK_EQ(y[0], expect[c]);
    }
    /* 0 * inf = NaN, inf + finite = inf, overflow rounds to inf */
    const uint16_t inf_in[3] = {0x7f80, 0x3f80, 0x3f80};
    int8_t q0[3] = {0, 1, 1};
    CHECK_EQ(npk_pccx_write_bf16(drv, 10, inf_in, 3), 0);
    CHECK_EQ(npk_pccx_wmat_upload_q4(drv, q0, s, 1, 3, 0, &w), 0);
    CHECK_EQ(npk_pccx_gemv_w(drv, 11, 10, 1, &w, 0), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 11, y, 1), 0);
    CHECK_EQ(y[0], 0x7fc0);
    CHECK_EQ(npk_pccx_wmat_upload_q4(drv, q, s, 1, 3, 0, &w), 0);
    CHECK_EQ(npk_pccx_gemv_w(drv, 11, 10, 1, &w, 0), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 11, y, 1), 0);
    CHECK_EQ(y[0], 0x7f80);
    const uint16_t big[3] = {0x7f7f, 0x7f7f, 0};
    int8_t q7[3] = {7, 7, 0};
    CHECK_EQ(npk_pccx_write_bf16(drv, 10, big, 3), 0);
    CHECK_EQ(npk_pccx_wmat_upload_q4(drv, q7, s, 1, 3, 0, &w), 0);
    CHECK_EQ(npk_pccx_gemv_w(drv, 11, 10, 1, &w, 0), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 11, y, 1), 0);
    CHECK_EQ(y[0], 0x7f80);
    /* subnormal result: 2^-130 * 3 = 3 * 2^-130 (bf16 subnormal 0x0018) */
    const uint16_t tiny[3] = {0x0008 /* 2^-130 */, 0, 0};
    int8_t q3[3] = {3, 0, 0};
    CHECK_EQ(npk_pccx_write_bf16(drv, 10, tiny, 3), 0);
    CHECK_EQ(npk_pccx_wmat_upload_q4(drv, q3, s, 1, 3, 0, &w), 0);
    CHECK_EQ(npk_pccx_gemv_w(drv, 11, 10, 1, &w, 0), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 11, y, 1), 0);
    CHECK_EQ(y[0], 0x0018);
    /* stream pointer advances record by record */
    uint32_t lo = r32(NPK_PCCX_WS_ADDR_LO);
    CHECK_EQ(lo, (uint32_t)(w.addr + w.bytes));
    npk_pccx_wmat_reset(drv);
}

/* The model's fast exact accumulation (per-group integer sums) against the
 * per-product exact accumulator on random data over the whole BF16 range:
 * subnormals, zeros, extreme exponents in one group, infinities and NaNs in x
 * and in the scales. */
static void xacc_case(unsigned M, unsigned N, unsigned K, unsigned G, int mode) {
    unsigned GG = G ? G : K, ng = (K + GG - 1) / GG, sk = (K + 7) / 8 * 8, sn = (N + 7) / 8 * 8;
    uint16_t *x = calloc((size_t)M * sk, sizeof *x), *got = calloc((size_t)M * sn, sizeof *got);
    int8_t *q = malloc((size_t)N * K);
    float *s = malloc(sizeof *s * N * ng);
    for (unsigned m = 0; m < M; m++)
        for (unsigned k = 0; k < K; k++) {
            uint16_t v;
            if (mode == 0) v = rbf(-3, 3); /* narrow: the integer path */
            else if (mode == 1) v = rbf(-30, 30); /* spans around the path's limit */
            else {
                v = (uint16_t)rnd(); /* any pattern, specials rare */
                if ((v & 0x7f80) == 0x7f80 && rnd() % 8) v &= 0xbfff;
                if (rnd() % 16 == 0) v &= 0x807f; /* subnormal or zero */
            }
            x[m * sk + k] = v;
        }
    for (unsigned i = 0; i < N * K; i++) q[i] = (int8_t)((int)(rnd() % 16) - 8);
    for (unsigned i = 0; i < N * ng; i++) {
        uint32_t u = rnd();
        if (mode < 2) u = (u & 0x807fffffu) | (uint32_t)(120 + rnd() % 16) << 23;
        else if ((u & 0x7f800000u) == 0x7f800000u && rnd() % 8) u &= 0xbfffffffu;
        memcpy(&s[i], &u, sizeof u);
    }
    npk_pccx_wmat w;
    CHECK_EQ(npk_pccx_wmat_upload_q4(drv, q, s, N, K, G, &w), 0);
    CHECK_EQ(npk_pccx_write_bf16(drv, 1000, x, M * sk), 0);
    CHECK_EQ(npk_pccx_gemv_w(drv, 30000, 1000, M, &w, 0), 0);
    CHECK_EQ(npk_pccx_sync(drv), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 30000, got, M * sn), 0);
    unsigned bad = 0;
    for (unsigned m = 0; m < M; m++)
        for (unsigned n = 0; n < N; n++) {
            npk_bf16_xacc a;
            npk_bf16_xacc_clear(&a);
            for (unsigned k = 0; k < K; k++) npk_bf16_xacc_add_prod(&a, s[n * ng + k / GG], q[n * K + k], x[m * sk + k]);
            uint16_t want = npk_bf16_xacc_round(&a), g = got[m * sn + n];
            int same = g == want || (npk_bf16_isnan(g) && npk_bf16_isnan(want));
            if (!same && bad++ < 5)
                fprintf(stderr, "xacc mode %d M%u N%u K%u G%u: y[%u][%u] = 0x%04x, per-product 0x%04x\n", mode, M, N, K,
                        G, m, n, g, want);
        }
    CHECK_EQ(bad, 0);
    npk_pccx_wmat_reset(drv);
    free(x);
    free(got);
    free(q);
    free(s);
}

/* The model keeps each weight record prepared (the weight cache); a record
 * rewritten in guest memory at the same address must be read again. The
 * second upload lands where the first was (wmat_reset rewinds the arena), and
 * each GEMV must equal its own weights' per-product sums. */
static void test_mm_wcache(void) {
    reopen(NULL);
    enum { N = 24, K = 32 };
    int8_t q[N * K];
    float s[N * 4];
    uint16_t x[K], got[N];
    for (unsigned k = 0; k < K; k++) x[k] = rbf(-3, 3);
    CHECK_EQ(npk_pccx_write_bf16(drv, 1000, x, K), 0);
    uint64_t first = 0;
    for (int round = 0; round < 3; round++) {
        for (unsigned i = 0; i < N * K; i++) q[i] = (int8_t)((int)(rnd() % 16) - 8);
        for (unsigned i = 0; i < N * 4; i++) s[i] = (float)(rnd() % 100 + 1) / 64.0f;
        npk_pccx_wmat w;
        npk_pccx_wmat_reset(drv);
        CHECK_EQ(npk_pccx_wmat_upload_q4(drv, q, s, N, K, 8, &w), 0);
        if (!round) first = w.addr;
        CHECK_EQ(w.addr, first);
        for (int twice = 0; twice < 2; twice++) { /* the second GEMV hits the cache */
            CHECK_EQ(npk_pccx_gemv_w(drv, 30000, 1000, 1, &w, 0), 0);
            CHECK_EQ(npk_pccx_sync(drv), 0);
            CHECK_EQ(npk_pccx_read_bf16(drv, 30000, got, N), 0);
            for (unsigned n = 0; n < N; n++) {
                npk_bf16_xacc a;
                npk_bf16_xacc_clear(&a);
                for (unsigned k = 0; k < K; k++) npk_bf16_xacc_add_prod(&a, s[n * 4 + k / 8], q[n * K + k], x[k]);
                CHECK_EQ(got[n], npk_bf16_xacc_round(&a));
            }
        }
    }
    npk_pccx_wmat_reset(drv);
}

static void test_mm_xacc(void) {
    reopen(NULL);
    for (int mode = 0; mode < 3; mode++) {
        xacc_case(1, 64, 64, 8, mode);
        xacc_case(1, 40, 172, 32, mode);
        xacc_case(2, 17, 61, 0, mode); /* odd K: weights straddle bytes */
        xacc_case(1, 8, 100, 7, mode);
    }
}

/* ---- CVO ---------------------------------------------------------------------------------- */

/* |got - ref| <= 0.5 ulp(got) (1 + 2^-20): got is a nearest BF16 of ref up to
 * the libm error at ties. Specials must match. */
static int close_bf16(uint16_t got, long double ref) {
    double g = b2d(got);
    if (isnan(ref)) return isnan(g);
    if (isinf(ref)) return isinf(g) && (g > 0) == (ref > 0);
    if (isnan(g)) return 0;
    if (isinf(g)) return fabsl(ref) >= 0x1.ff8p127L * (1 - 1e-6L);
    int e;
    frexp(g == 0 ? (double)ref : g, &e);
    long double ulp = ldexpl(1.0L, (e - 1) - 7 < -133 ? -133 : (e - 1) - 7);
    return fabsl((long double)g - ref) <= 0.5L * ulp * (1 + 0x1p-20L);
}

static long double ref_f(unsigned f, long double x, long double s) {
    switch (f) {
    case NPK_PCCX_CVO_EXP: return expl(x);
    case NPK_PCCX_CVO_SQRT: return sqrtl(x);
    case NPK_PCCX_CVO_GELU: /* 0.5 x (1 + tanh z) = x / (1 + e^(-2z)), without cancellation */
        return x / (1 + expl(-2 * sqrtl(2 / 3.14159265358979323846264L) * (x + 0.044715L * x * x * x)));
    case NPK_PCCX_CVO_SIN: return sinl(x);
    case NPK_PCCX_CVO_COS: return cosl(x);
    case NPK_PCCX_CVO_SCALE: return x * s;
    default: return 1 / x;
    }
}

/* EXP over every BF16 input, plain and sub_emax with maxima of several
 * magnitudes, equals the double path bit for bit: exp in double, one BF16
 * rounding (the model takes most elements through expf, see exec_cvo). */
static void test_cvo_exp_all(void) {
    reopen(NULL);
    enum { HALF = 32768 };
    static uint16_t x[2 * HALF], y[2 * HALF], z[2 * HALF];
    static uint8_t taken[2 * HALF];
    for (uint32_t i = 0; i < 2 * HALF; i++) x[i] = (uint16_t)i;
    const double maxima[] = {0, 1, -1, 3.5, 12, 0.125, 60, 100, 0.3, -7.25, 1e-3, 85, 0x1p-20};
    /* the fast exponential alone (npk_bf16_exp_fast) at every level: every
     * element it takes equals the double path, and it takes most */
    const size_t nk = sizeof maxima / sizeof maxima[0] + 1;
    FOR_EACH_ISA(l) {
        size_t total = 0;
        for (size_t k = 0; k < nk; k++) {
            uint16_t e = k ? d2b(maxima[k - 1]) : 0;
            size_t got = npk_bf16_exp_fast(x, 2 * HALF, k ? &e : NULL, z, taken), bad = 0, cnt = 0;
            for (uint32_t i = 0; i < 2 * HALF; i++) {
                cnt += taken[i];
                if (taken[i] && z[i] != npk_bf16_from_f64(exp(b2d(x[i]) - (k ? b2d(e) : 0))) && bad++ < 3)
                    fprintf(stderr, "level %d: exp(0x%04x - 0x%04x) fast 0x%04x\n", l, x[i], e, z[i]);
            }
            CHECK_EQ(bad, 0);
            CHECK_EQ(got, cnt);
            total += got;
        }
        CHECK(total > nk * 2 * HALF / 3); /* 37 % here: x - e in (-87, 80), away from a tie */
    }
    npk_isa_force(NPK_ISA_AUTO);
    CHECK_EQ(npk_pccx_write_bf16(drv, 16, x, 2 * HALF), 0);
    for (size_t k = 0; k <= sizeof maxima / sizeof maxima[0]; k++) {
        int sub = k > 0;
        uint16_t e = sub ? d2b(maxima[k - 1]) : 0;
        CHECK_EQ(npk_pccx_set_emax(drv, e), 0);
        for (int h = 0; h < 2; h++)
            CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_EXP, 16 + (uint32_t)h * HALF / 8, 16 + 2 * HALF / 8 + (uint32_t)h * HALF / 8,
                                  HALF, sub ? NPK_PCCX_CVO_SUB_EMAX : 0, 0),
                     0);
        CHECK_EQ(npk_pccx_read_bf16(drv, 16 + 2 * HALF / 8, y, 2 * HALF), 0);
        int bad = 0;
        for (uint32_t i = 0; i < 2 * HALF; i++) {
            double v = b2d(x[i]) - (sub ? b2d(e) : 0);
            uint16_t want = npk_bf16_from_f64(exp(v));
            if (y[i] != want && !(npk_bf16_isnan(y[i]) && npk_bf16_isnan(want)) && bad++ < 3)
                fprintf(stderr, "cvo EXP of 0x%04x - 0x%04x: 0x%04x, double path 0x%04x\n", x[i], e, y[i], want);
        }
        CHECK_EQ(bad, 0);
    }
}

/* The CVO unit's element-wise kernels (npk_bf16_exp_n, npk_bf16_scale_n) against their golden,
 * the double path of exec_cvo (exp / the product in double, one BF16 rounding), bit for bit over
 * every BF16 input, at every ISA level the host has, out of place and in place (y = x), with the
 * second operand (e_max, the scalar) over the edge cases: signed zeros, subnormals, the extremes,
 * infinities, NaN, and ordinary values; lengths that leave remainders of eight. */
static void test_cvo_kernels_golden(void) {
    enum { NX = 65536 };
    static uint16_t x[NX], y[NX], z[NX];
    for (uint32_t i = 0; i < NX; i++) x[i] = (uint16_t)i;
    const uint16_t second[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x7f80, 0xff80,
                               0x7fc0, 0xffc1, d2b(1), d2b(-1), d2b(3.5), d2b(-0.3), d2b(60), d2b(85),
                               d2b(0x1p-100), d2b(0x1p100), d2b(-0x1p-126), d2b(1e-3)};
    const size_t ns = sizeof second / sizeof second[0];
    FOR_EACH_ISA(l) {
        for (size_t k = 0; k <= ns; k++) {
            const uint16_t e = k ? second[k - 1] : 0, *sub = k ? &e : NULL;
            const double ed = b2d(e);
            /* EXP: out of place over all inputs, then in place over a length of 8m + 5 */
            npk_bf16_exp_n(x, NX, sub, y);
            memcpy(z, x, sizeof z);
            npk_bf16_exp_n(z, NX - 3, sub, z);
            int bad = 0;
            for (uint32_t i = 0; i < NX; i++) {
                double v = b2d(x[i]);
                if (sub) v -= ed;
                const uint16_t want = npk_bf16_from_f64(exp(v));
                const uint16_t inpl = i < NX - 3 ? z[i] : x[i];
                if ((y[i] != want || inpl != (i < NX - 3 ? want : x[i])) && bad++ < 3)
                    fprintf(stderr, "level %d: exp(0x%04x - 0x%04x) = 0x%04x / in place 0x%04x, golden 0x%04x\n", l,
                            x[i], e, y[i], inpl, want);
            }
            CHECK_EQ(bad, 0);
            if (!k) continue;
            /* SCALE: x * s */
            npk_bf16_scale_n(y, x, NX, e);
            memcpy(z, x, sizeof z);
            npk_bf16_scale_n(z, z, NX - 5, e);
            bad = 0;
            for (uint32_t i = 0; i < NX; i++) {
                const uint16_t want = npk_bf16_from_f64(b2d(x[i]) * ed);
                const uint16_t inpl = i < NX - 5 ? z[i] : x[i];
                if ((y[i] != want || inpl != (i < NX - 5 ? want : x[i])) && bad++ < 3)
                    fprintf(stderr, "level %d: 0x%04x * 0x%04x = 0x%04x / in place 0x%04x, golden 0x%04x\n", l, x[i],
                            e, y[i], inpl, want);
            }
            CHECK_EQ(bad, 0);
        }
    }
    npk_isa_force(NPK_ISA_AUTO);
}

static void test_cvo(void) {
    reopen(NULL);
    enum { N = 200 };
    uint16_t x[N], y[N], old[N];
    const unsigned funcs[] = {NPK_PCCX_CVO_EXP, NPK_PCCX_CVO_SQRT, NPK_PCCX_CVO_GELU, NPK_PCCX_CVO_SIN,
                              NPK_PCCX_CVO_COS, NPK_PCCX_CVO_SCALE, NPK_PCCX_CVO_RECIP};
    for (size_t fi = 0; fi < sizeof funcs / sizeof funcs[0]; fi++) {
        unsigned f = funcs[fi];
        for (int i = 0; i < N; i++) {
            x[i] = rbf(-6, 3);
            if (f == NPK_PCCX_CVO_SQRT) x[i] &= 0x7fff;
            old[i] = rbf(-3, 3);
        }
        x[0] = 0;      /* edge values */
        x[1] = 0x8000; /* -0 */
        for (int variant = 0; variant < 3; variant++) {
            /* variant 0 plain, 1 sub_emax, 2 accm */
            uint16_t e = rbf(-2, 2), sc = rbf(-3, 3);
            CHECK_EQ(npk_pccx_set_emax(drv, e), 0);
            CHECK_EQ(npk_pccx_set_scalar(drv, sc), 0);
            CHECK_EQ(npk_pccx_write_bf16(drv, 100, x, N), 0);
            CHECK_EQ(npk_pccx_write_bf16(drv, 200, old, N), 0);
            unsigned flags = variant == 1 ? NPK_PCCX_CVO_SUB_EMAX : variant == 2 ? NPK_PCCX_CVO_ACCM : 0;
            CHECK_EQ(npk_pccx_cvo(drv, f, 100, 200, N, flags, variant == 2), 0);
            CHECK_EQ(npk_pccx_read_bf16(drv, 200, y, N), 0);
            int bad = 0;
            for (int i = 0; i < N; i++) {
                long double v = b2d(x[i]);
                if (variant == 1) v -= b2d(e);
                long double r = ref_f(f, v, b2d(sc));
                if (variant == 2) r += b2d(old[i]);
                if (!close_bf16(y[i], r) && bad++ < 3)
                    fprintf(stderr, "cvo %s variant %d: f(%Lg) = %g (0x%04x), reference %Lg\n", npk_pccx_cvo_name(f),
                            variant, v, b2d(y[i]), y[i], r);
            }
            CHECK_EQ(bad, 0);
        }
    }
    /* SCALE recip_scale divides; RECIP(0) = inf; SQRT(-1) = NaN; EXP(200) = inf */
    uint16_t v[4] = {d2b(3), 0, d2b(-1), d2b(200)};
    CHECK_EQ(npk_pccx_write_bf16(drv, 100, v, 4), 0);
    CHECK_EQ(npk_pccx_set_scalar(drv, d2b(4)), 0);
    CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_SCALE, 100, 200, 1, NPK_PCCX_CVO_RECIP_SCALE, 0), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 200, y, 1), 0);
    CHECK_EQ(y[0], d2b(0.75));
    CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_RECIP, 101 * 0 + 100, 200, 2, 0, 0), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 200, y, 2), 0);
    CHECK_EQ(y[1], 0x7f80);
    CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_SQRT, 100, 200, 3, 0, 0), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 200, y, 3), 0);
    CHECK(npk_errmsg() && isnan(b2d(y[2])));
    CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_EXP, 100, 200, 4, 0, 0), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 200, y, 4), 0);
    CHECK_EQ(y[3], 0x7f80);

    /* REDUCE_SUM: exact sum of small integers, sub_emax, accm, latches scalar */
    uint16_t ints[100];
    double sum = 0;
    for (int i = 0; i < 100; i++) {
        ints[i] = d2b((double)(i % 9) - 4);
        sum += (double)(i % 9) - 4;
    }
    CHECK_EQ(npk_pccx_write_bf16(drv, 300, ints, 100), 0);
    uint16_t pre[16];
    for (int i = 0; i < 16; i++) pre[i] = (uint16_t)(0x4000 + i);
    CHECK_EQ(npk_pccx_write_bf16(drv, 400, pre, 16), 0);
    CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_REDUCE_SUM, 300, 400, 100, 0, 0), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 400, y, 16), 0);
    CHECK_EQ(y[0], d2b(sum));
    for (int i = 1; i < 16; i++) CHECK_EQ(y[i], pre[i]); /* only lane 0 written */
    uint16_t scal = 0;
    CHECK_EQ(npk_pccx_get_scalar(drv, &scal), 0);
    CHECK_EQ(scal, d2b(sum));
    CHECK_EQ(npk_pccx_set_emax(drv, d2b(2)), 0);
    CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_REDUCE_SUM, 300, 400, 100, NPK_PCCX_CVO_SUB_EMAX | NPK_PCCX_CVO_ACCM, 0), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 400, y, 1), 0);
    CHECK_EQ(y[0], d2b(sum + sum - 200));
    /* a length-1 REDUCE_SUM loads the scalar register */
    CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_REDUCE_SUM, 300 + 1, 401, 1, 0, 0), 0);
    CHECK_EQ(npk_pccx_get_scalar(drv, &scal), 0);
    CHECK_EQ(scal, ints[8]);
}

/* ---- sequences --------------------------------------------------------------------------- */

static void test_sequences(void) {
    reopen(NULL);
    enum { N = 64 };
    float x[N], y[N], sq[N];
    /* softmax after a GEMV with findemax: scores = W . v */
    float wv[N * 16], v[16];
    for (int i = 0; i < N * 16; i++) wv[i] = (float)((int)(rnd() % 15) - 7) * 0.25f;
    for (int i = 0; i < 16; i++) v[i] = (float)b2d(rbf(-3, 1));
    npk_pccx_wmat w;
    CHECK_EQ(npk_pccx_wmat_upload(drv, wv, N, 16, 0, &w), 0);
    CHECK_EQ(npk_pccx_write_f32(drv, 50, v, 16), 0);
    CHECK_EQ(npk_pccx_gemv_w(drv, 60, 50, 1, &w, NPK_PCCX_FINDEMAX), 0);
    CHECK_EQ(npk_pccx_softmax(drv, 60, 80, 90, N, 1), 0);
    CHECK_EQ(npk_pccx_sync(drv), 0);
    float sc[N];
    CHECK_EQ(npk_pccx_read_f32(drv, 60, sc, N), 0); /* the scores the device computed */
    CHECK_EQ(npk_pccx_read_f32(drv, 80, y, N), 0);
    double mx = -INFINITY, tot = 0, ysum = 0;
    for (int i = 0; i < N; i++) mx = sc[i] > mx ? sc[i] : mx;
    for (int i = 0; i < N; i++) tot += exp(sc[i] - mx);
    double maxerr = 0;
    for (int i = 0; i < N; i++) {
        double r = exp(sc[i] - mx) / tot;
        double err = fabs(y[i] - r) / r;
        if (err > maxerr) maxerr = err;
        ysum += y[i];
    }
    CHECK(maxerr < 0.02); /* three BF16 roundings: < 3 * 2^-8 relative */
    CHECK(fabs(ysum - 1) < 0.02);

    /* RMSNorm: squares from the host */
    for (int i = 0; i < N; i++) {
        x[i] = (float)b2d(rbf(-3, 2));
        sq[i] = (float)b2d(d2b((double)x[i] * x[i]));
    }
    CHECK_EQ(npk_pccx_write_f32(drv, 100, x, N), 0);
    CHECK_EQ(npk_pccx_write_f32(drv, 110, sq, N), 0);
    CHECK_EQ(npk_pccx_rmsnorm(drv, 100, 110, 120, 130, N, 1e-5f), 0);
    CHECK_EQ(npk_pccx_sync(drv), 0);
    CHECK_EQ(npk_pccx_read_f32(drv, 120, y, N), 0);
    double ss = 0;
    for (int i = 0; i < N; i++) ss += (double)x[i] * x[i];
    double inv = 1 / sqrt(ss / N + 1e-5);
    maxerr = 0;
    for (int i = 0; i < N; i++) {
        double r = x[i] * inv, err = fabs(y[i] - r) / fabs(r);
        if (err > maxerr) maxerr = err;
    }
    CHECK(maxerr < 0.025); /* up to six BF16 roundings */

    /* RoPE angles in [-pi, pi] */
    float ang[32], s_[32], c_[32];
    for (int i = 0; i < 32; i++) ang[i] = (float)((rnd() % 20001) / 10000.0 - 1.0) * 3.14159f;
    CHECK_EQ(npk_pccx_write_f32(drv, 140, ang, 32), 0);
    CHECK_EQ(npk_pccx_rope(drv, 140, 150, 160, 32), 0);
    CHECK_EQ(npk_pccx_sync(drv), 0);
    CHECK_EQ(npk_pccx_read_f32(drv, 150, s_, 32), 0);
    CHECK_EQ(npk_pccx_read_f32(drv, 160, c_, 32), 0);
    for (int i = 0; i < 32; i++) {
        float a = (float)b2d(d2b(ang[i])); /* the angle as stored in BF16 */
        CHECK(fabs(s_[i] - sin(a)) <= 0.004);
        CHECK(fabs(c_[i] - cos(a)) <= 0.004);
    }
}

/* Async CVO/MEMCPY: results equal the sequential ones; trace totals equal the
 * engine cycle counters. */
static void test_async_trace(void) {
    reopen(NULL);
    npk_trace *t = npk_trace_new();
    npk_trace_process(t, "pccx", 400000000);
    npk_sim_dev(npk_port_sim(port))->trace = t;
    float a[64], b[64];
    for (int i = 0; i < 64; i++) a[i] = (float)(i - 32) / 16;
    CHECK_EQ(npk_pccx_write_f32(drv, 10, a, 64), 0);
    CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_SIN, 10, 20, 64, 0, 1), 0);      /* async */
    CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_EXP, 20, 30, 64, 0, 1), 0);      /* depends on it */
    CHECK_EQ(npk_pccx_copy_l2(drv, 40, 30, 64), 0);                           /* and this on that */
    CHECK_EQ(npk_pccx_sync(drv), 0);
    CHECK_EQ(npk_pccx_read_f32(drv, 40, b, 64), 0);
    for (int i = 0; i < 64; i++) {
        double s = b2d(d2b(sin(b2d(d2b(a[i])))));
        CHECK(fabs(b[i] - exp(s)) <= exp(s) * 0.005);
    }
    npk_pccx_stats st;
    CHECK_EQ(npk_pccx_stats_get(drv, &st), 0);
    CHECK_EQ(npk_trace_total_cycles(t, "pccx", "sfu"), st.engine_cycles[2]);
    CHECK_EQ(npk_trace_total_cycles(t, "pccx", "dma"), st.engine_cycles[3]);
    CHECK_EQ(st.per_op[NPK_PCCX_OP_CVO], 2);
    CHECK(st.cycles > 0);
    npk_sim_dev(npk_port_sim(port))->trace = NULL;
    npk_trace_free(t);
}

/* Engine overlap (docs/pccx.md section 5): an async CVO runs on the SFU while
 * a later independent GEMV runs on the GEMV engine; a GEMV reading the CVO's
 * output waits for its completion; an independent async CVO enters the SFU
 * as soon as the previous one's elements are in (its latency overlaps); and
 * the results equal the all-synchronous program's, bit for bit. */
static void overlap_prog(unsigned async, uint16_t *out, npk_trace *t) {
    reopen(NULL);
    static float w[2][64 * 256];
    float x[256], e[1000];
    for (int i = 0; i < 64 * 256; i++) {
        w[0][i] = (float)(i % 7) - 3.0f;
        w[1][i] = (float)(i % 5) - 2.0f;
    }
    for (int i = 0; i < 256; i++) x[i] = (float)(i % 9) / 8 - 0.5f;
    for (int i = 0; i < 1000; i++) e[i] = (float)(i % 13) / 16 - 0.4f;
    npk_pccx_wmat w1, w2;
    CHECK_EQ(npk_pccx_wmat_upload(drv, w[0], 64, 256, 0, &w1), 0);
    CHECK_EQ(npk_pccx_wmat_upload(drv, w[1], 64, 256, 0, &w2), 0);
    CHECK_EQ(npk_pccx_write_f32(drv, 0, x, 256), 0);
    CHECK_EQ(npk_pccx_write_f32(drv, 2000, e, 1000), 0);
    CHECK(npk_pccx_fmap_entry(drv, 1, 1, 256) >= 0);
    CHECK(npk_pccx_weight_entry(drv, 64, 256, 0) >= 0);
    CHECK_EQ(npk_pccx_set_wstream(drv, w1.addr, 0), 0);
    CHECK_EQ(npk_pccx_sync(drv), 0);
    if (t) npk_sim_dev(npk_port_sim(port))->trace = t;
    CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_EXP, 2000, 3000, 1000, 0, async), 0);
    CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_SIN, 2000, 4000, 64, 0, async), 0); /* independent */
    CHECK_EQ(npk_pccx_gemv_w(drv, 100, 0, 1, &w1, 0), 0);                      /* independent */
    CHECK_EQ(npk_pccx_gemv_w(drv, 200, 3000, 1, &w2, 0), 0);                   /* reads EXP's output */
    CHECK_EQ(npk_pccx_sync(drv), 0);
    npk_sim_dev(npk_port_sim(port))->trace = NULL;
    CHECK_EQ(npk_pccx_read_bf16(drv, 100, out, 64), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 200, out + 64, 64), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 3000, out + 128, 1000), 0);
    CHECK_EQ(npk_pccx_read_bf16(drv, 4000, out + 1128, 64), 0);
}

static void test_overlap(void) {
    static uint16_t seq[1192], par[1192];
    npk_trace *ts = npk_trace_new(), *ta = npk_trace_new();
    overlap_prog(0, seq, ts);
    overlap_prog(1, par, ta);
    CHECK(!memcmp(seq, par, sizeof seq)); /* async changes timing only */
    CHECK_EQ(npk_trace_overlap_cycles(ts, "pccx", "sfu", "gemv"), 0u);
    uint64_t exp_s, exp_d, sin_s, sin_d, g1_s, g1_d, g2_s, g2_d;
    CHECK_EQ(npk_trace_event_at(ta, "pccx", "sfu", 0, &exp_s, &exp_d), 0);
    CHECK_EQ(npk_trace_event_at(ta, "pccx", "sfu", 1, &sin_s, &sin_d), 0);
    CHECK_EQ(npk_trace_event_at(ta, "pccx", "gemv", 0, &g1_s, &g1_d), 0);
    CHECK_EQ(npk_trace_event_at(ta, "pccx", "gemv", 1, &g2_s, &g2_d), 0);
    CHECK_EQ(exp_d, 1000u + 16u);          /* length + sfu latency */
    CHECK_EQ(sin_s, exp_s + 1000u);        /* enters the SFU during EXP's latency */
    CHECK(g1_s < exp_s + exp_d);           /* the independent GEMV overlaps EXP */
    CHECK(g2_s >= exp_s + exp_d);          /* RAW: waits for EXP's completion */
    /* the SFU is busy until SIN completes; only the first GEMV runs meanwhile */
    uint64_t sfu_end = sin_s + sin_d, g1_end = g1_s + g1_d;
    CHECK_EQ(npk_trace_overlap_cycles(ta, "pccx", "sfu", "gemv"), (g1_end < sfu_end ? g1_end : sfu_end) - g1_s);
    npk_trace_free(ts);
    npk_trace_free(ta);
}

static void test_options(void) {
    npk_port *p2 = NULL;
    CHECK(npk_port_open(&p2, "sim", "pccx", "ddr_gbps=0") < 0);
    CHECK(npk_port_open(&p2, "sim", "pccx", "bogus=1") < 0);
    CHECK(strstr(npk_errmsg(), "bogus") != NULL || strstr(npk_errmsg(), "pccx") != NULL);
    CHECK_EQ(npk_port_open(&p2, "sim", "pccx", "ddr_gbps=10,ddr_eff=0.5,gemv_lat=8"), 0);
    npk_port_close(p2);
}

/* lanes and l2_kib: the capability registers, the LANE fault bound, the L2
 * range bound, and GEMV compute time 32 x lanes MAC/cycle. */
static void test_lanes_l2(void) {
    npk_port *p2 = NULL;
    CHECK(npk_port_open(&p2, "sim", "pccx", "lanes=0") < 0);
    CHECK(npk_port_open(&p2, "sim", "pccx", "lanes=32") < 0);
    CHECK(npk_port_open(&p2, "sim", "pccx", "l2_kib=2049") < 0);
    CHECK(strstr(npk_errmsg(), "l2_kib") != NULL);
    reopen(NULL);
    CHECK_EQ(r32(NPK_PCCX_CAP_L2_WORDS), 114688u);
    CHECK_EQ(r32(NPK_PCCX_CAP_LANES), 4u);
    CHECK_EQ(npk_pccx_l2_words(drv), 114688u);
    /* parallel_lane 8 faults on the KV260 build... */
    w32(NPK_PCCX_CTRL, NPK_PCCX_CTRL_RESET);
    issue64(npk_pccx_gemv_word(0, 0, 0, 0, 0, 8));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_LANE);
    /* ...and is legal with 8 cores, where a 64x256 GEMV (16384 MACs) takes
     * 16384 / 256 = 64 compute cycles (the stream needs 8192 + 1024 bytes
     * = 193 cycles at 48 B/cycle; ddr_gbps is raised so compute bounds it). */
    reopen("lanes=8,l2_kib=2048,ddr_gbps=1000");
    CHECK_EQ(r32(NPK_PCCX_CAP_L2_WORDS), 131072u);
    CHECK_EQ(r32(NPK_PCCX_CAP_LANES), 8u);
    CHECK_EQ(npk_pccx_lanes(drv), 8u);
    static float w[64 * 256];
    for (int i = 0; i < 64 * 256; i++) w[i] = (float)(i % 7) - 3.0f;
    npk_pccx_wmat wm;
    CHECK_EQ(npk_pccx_wmat_upload(drv, w, 64, 256, 0, &wm), 0);
    int fi = npk_pccx_fmap_entry(drv, 1, 1, 256), wi = npk_pccx_weight_entry(drv, 64, 256, 0);
    CHECK(fi >= 0 && wi >= 0);
    CHECK_EQ(npk_pccx_sync(drv), 0);
    for (unsigned lanes = 8; lanes >= 1; lanes /= 2) {
        CHECK_EQ(npk_pccx_set_wstream(drv, wm.addr, 0), 0);
        CHECK_EQ(npk_pccx_stats_clear(drv), 0);
        /* the input near the top of the 2 MiB L2 (beyond the default 1.75 MiB) */
        CHECK_EQ(npk_pccx_gemv(drv, 131000, 130000, NPK_PCCX_W_SCALE, (unsigned)wi, (unsigned)fi, lanes == 8 ? 0 : lanes), 0);
        CHECK_EQ(npk_pccx_sync(drv), 0);
        npk_pccx_stats st;
        CHECK_EQ(npk_pccx_stats_get(drv, &st), 0);
        CHECK_EQ(st.engine_cycles[0], 16384u / (32u * lanes) + 16u); /* + gemv_lat */
    }
    /* Weight prefetch (wfifo_kib): during a 1000-element CVO (1016 cycles) the
     * stream fills the 4 KiB FIFO with the next record's first 4096 bytes, so
     * the GEMV streams only 8448 - 4096 = 4352 bytes (91 cycles at 48 B/cycle)
     * and is bound by its 128 compute cycles (4 lanes): 128 + 16; without the
     * FIFO it streams all 8448 bytes: 176 + 16 cycles. */
    for (int fifo = 0; fifo < 2; fifo++) {
        reopen(fifo ? "wfifo_kib=4" : "wfifo_kib=0");
        CHECK_EQ(npk_pccx_wmat_upload(drv, w, 64, 256, 0, &wm), 0);
        fi = npk_pccx_fmap_entry(drv, 1, 1, 256);
        wi = npk_pccx_weight_entry(drv, 64, 256, 0);
        CHECK_EQ(npk_pccx_set_wstream(drv, wm.addr, 0), 0);
        CHECK_EQ(npk_pccx_stats_clear(drv), 0);
        CHECK_EQ(npk_pccx_cvo(drv, NPK_PCCX_CVO_EXP, 2000, 3000, 1000, 0, 0), 0);
        CHECK_EQ(npk_pccx_gemv(drv, 100, 0, NPK_PCCX_W_SCALE, (unsigned)wi, (unsigned)fi, 0), 0);
        CHECK_EQ(npk_pccx_sync(drv), 0);
        npk_pccx_stats st;
        CHECK_EQ(npk_pccx_stats_get(drv, &st), 0);
        CHECK_EQ(st.engine_cycles[0], fifo ? 128u + 16u : 176u + 16u);
        CHECK_EQ(st.ws_bytes, 8448u); /* the bytes streamed are the same */
    }
    /* the L2 bound follows l2_kib */
    reopen("l2_kib=64");
    CHECK_EQ(npk_pccx_l2_words(drv), 4096u);
    CHECK(npk_pccx_write_f32(drv, 4096, w, 8) < 0);
    CHECK_EQ(npk_pccx_write_f32(drv, 4095, w, 8), 0);
    w32(NPK_PCCX_CTRL, NPK_PCCX_CTRL_RESET);
    issue64(npk_pccx_memset_word(0, 0, 1, 1, 8));
    issue64(npk_pccx_cvo_word(NPK_PCCX_CVO_EXP, 4096, 0, 8, 0, 0));
    run();
    CHECK_EQ(r32(NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_L2_RANGE);
    reopen(NULL);
}

/* The driver over a qtest port (a child `npu qtest --device pccx`) gives the
 * same GEMV + softmax result, bit for bit, as over the in-process model. */
static void run_on(const char *spec, uint16_t *out) {
    npk_port *p = NULL;
    npk_pccx *d = NULL;
    int rc = npk_port_open(&p, spec, "pccx", NULL);
    CHECK_EQ(rc, 0);
    if (rc) {
        fprintf(stderr, "%s: %s\n", spec, npk_errmsg());
        return;
    }
    CHECK_EQ(npk_pccx_open(&d, p, NULL), 0);
    if (d) {
        float w[24 * 40], x[40];
        uint64_t r = 12345;
        for (int i = 0; i < 24 * 40; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            w[i] = (float)((int)(r >> 60) - 8) / 8;
        }
        for (int i = 0; i < 40; i++) x[i] = (float)(i % 5) / 4 - 0.5f;
        npk_pccx_wmat wm;
        CHECK_EQ(npk_pccx_wmat_upload(d, w, 24, 40, 8, &wm), 0);
        CHECK_EQ(npk_pccx_write_f32(d, 5, x, 40), 0);
        CHECK_EQ(npk_pccx_gemv_w(d, 20, 5, 1, &wm, NPK_PCCX_FINDEMAX), 0);
        CHECK_EQ(npk_pccx_softmax(d, 20, 30, 40, 24, 1), 0);
        CHECK_EQ(npk_pccx_sync(d), 0);
        CHECK_EQ(npk_pccx_read_bf16(d, 20, out, 24), 0);
        CHECK_EQ(npk_pccx_read_bf16(d, 30, out + 24, 24), 0);
        npk_pccx_close(d);
    }
    npk_port_close(p);
}

static void test_qtest_port(void) {
    uint16_t a[48] = {0}, b[48] = {0};
    run_on("sim", a);
    run_on("qtest-spawn:" NPU_BIN, b);
    CHECK(!memcmp(a, b, sizeof a));
    int nonzero = 0;
    for (int i = 0; i < 48; i++) nonzero += a[i] != 0;
    CHECK(nonzero > 40);
}

int main(void) {
    test_registers();
    test_smoke_program();
    test_faults();
    test_mm();
    test_mm_xacc();
    test_mm_wcache();
    test_cvo();
    test_cvo_exp_all();
    test_cvo_kernels_golden();
    test_sequences();
    test_async_trace();
    test_overlap();
    test_options();
    test_lanes_l2();
    test_qtest_port();
    npk_pccx_close(drv);
    npk_port_close(port);
    return CHECK_DONE();
}
