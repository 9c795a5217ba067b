// SPDX-License-Identifier: MIT
/* The e1 driver against the CPU reference, over the in-process model and
 * (when the qtest port is available) over a spawned `npu qtest`. */
#include "check.h"
#include "npukit/e1.h"
#include "npukit/sim.h"
#include "ops/ref_e1.h"

#include <stdlib.h>

static uint32_t rng_state = 12345;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

static const uint32_t edge[] = {0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000u,
                                0xffffffffu, 0x01010101, 0x80808080u, 0x77777777, 0x88888888u, 0x55555555};

static void test_scalar(npk_e1 *e) {
    static const unsigned ops[] = {0, 1, 2, 3, 4, 5, 6, 7, 10, 12, 13, 14, 15};
    int mismatches = 0, runs = 0;
    for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
        unsigned op = ops[oi];
        for (int t = 0; t < 40; t++) {
            uint32_t a, b, acc;
            if (t < 16) {
                a = edge[t];
                b = edge[(t * 7 + 3) % 16];
                acc = edge[(t * 5 + 1) % 16];
            } else {
                a = rnd();
                b = rnd();
                acc = rnd();
            }
            uint32_t lo, hi;
            npk_ref_e1_scalar(op, a, b, acc, 0, &lo, &hi);
            npk_e1_result r;
            int rc = npk_e1_scalar(e, op, a, b, acc, 0, &r);
            CHECK_EQ(rc, 0);
            runs++;
            if (r.result != lo || r.result_hi != hi) {
                if (mismatches++ < 10)
                    fprintf(stderr, "op %u a=%08x b=%08x acc=%08x: got %08x:%08x want %08x:%08x\n", op, a, b, acc,
                            r.result_hi, r.result, hi, lo);
            }
        }
    }
    CHECK_EQ(mismatches, 0);
    CHECK_EQ(runs, 13 * 40);
    /* ternary DOT16: 0b01 = +1, 0b10 = -1 */
    uint32_t a = 0x1 | 0x2 << 2 | 0x1 << 4, b = 0x1 | 0x1 << 2 | 0x2 << 4;
    npk_e1_result r;
    CHECK_EQ(npk_e1_scalar(e, E1_OP_DOT16_S2, a, b, 10, 1, &r), 0);
    CHECK_EQ(r.result, 10 + 1 - 1 - 1);
    /* the driver refuses reserved lanes before the device sees them */
    uint64_t before = npk_port_mmio_count(npk_e1_port(e));
    CHECK_EQ(npk_e1_scalar(e, E1_OP_DOT16_S2, 0x3, 0, 0, 1, &r), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "0b11") != NULL);
    CHECK_EQ(npk_e1_scalar(e, 16, 0, 0, 0, 0, &r), -NPK_EINVAL);
    CHECK_EQ(npk_e1_scalar(e, E1_OP_GEMM_S8, 0, 0, 0, 0, &r), -NPK_EINVAL);
    CHECK_EQ(npk_e1_scalar(e, E1_OP_ADD, 0, 0, 0, 1, &r), -NPK_EINVAL);
    CHECK_EQ(npk_port_mmio_count(npk_e1_port(e)), before);
}

static void test_gemm_tiles(npk_e1 *e) {
    int bad = 0;
    for (int int4 = 0; int4 < 2; int4++) {
        for (unsigned m = 1; m <= 3; m++)
            for (unsigned n = 1; n <= 3; n++)
                for (unsigned k = 1; k <= 7; k++) {
                    npk_e1_gemm g;
                    if (npk_e1_gemm_layout(int4, m, n, k, &g)) continue; /* does not fit */
                    int8_t A[21], B[21];
                    int32_t C[9], G[9];
                    for (unsigned i = 0; i < m * k; i++) A[i] = int4 ? (int8_t)((int)(rnd() % 16) - 8) : (int8_t)rnd();
                    for (unsigned i = 0; i < k * n; i++) B[i] = int4 ? (int8_t)((int)(rnd() % 16) - 8) : (int8_t)rnd();
                    if (k == 1) A[0] = int4 ? -8 : -128, B[0] = int4 ? -8 : -128; /* extreme product */
                    CHECK_EQ(npk_e1_gemm_tile(e, int4, m, n, k, A, B, C), 0);
                    npk_ref_e1_matmul(A, B, G, m, n, k);
                    if (memcmp(C, G, 4 * m * n)) {
                        bad++;
                        fprintf(stderr, "gemm int4=%d %ux%ux%u differs\n", int4, m, n, k);
                    }
                }
    }
    CHECK_EQ(bad, 0);
    /* a 3x3x7 int8 tile does not fit (A 21 + B 21 + C 36 > 64): refused */
    npk_e1_gemm g;
    CHECK_EQ(npk_e1_gemm_layout(0, 3, 3, 7, &g), -NPK_EINVAL);
    /* the same tile fits in int4 */
    CHECK_EQ(npk_e1_gemm_layout(1, 3, 3, 7, &g), 0);
    /* chip validation rules */
    npk_e1_gemm bad_c = {2, 2, 3, 0, 6, 34, 3, 2, 8};
    CHECK_EQ(npk_e1_gemm_check(&bad_c, 0), -NPK_EINVAL); /* C_BASE not word-aligned */
    npk_e1_gemm over = {3, 3, 3, 0, 9, 32, 3, 3, 12};
    CHECK_EQ(npk_e1_gemm_check(&over, 0), -NPK_EINVAL); /* last C byte 32+24+8+3 = 67 */
    /* relu */
    int8_t in[40], out[40];
    for (int i = 0; i < 40; i++) in[i] = (int8_t)(i * 13 - 128);
    CHECK_EQ(npk_e1_relu(e, in, out, 40), 0);
    int rbad = 0;
    for (int i = 0; i < 40; i++) rbad += out[i] != (in[i] < 0 ? 0 : in[i]);
    CHECK_EQ(rbad, 0);
}

/* A ring of scalar ops plus streamed GEMMs with writeback. */
static void test_ring(npk_e1 *e) {
    npk_port *p = npk_e1_port(e);
    /* seven descriptors per batch, several batches so the ring wraps */
    for (int batch = 0; batch < 4; batch++) {
        npk_e1_desc d[7];
        uint32_t want_lo = 0, want_hi = 0;
        for (int i = 0; i < 7; i++) {
            unsigned op = (unsigned)(rnd() % 16);
            while (op == 8 || op == 9 || op == 11) op = (unsigned)(rnd() % 16);
            uint32_t a = rnd(), b = rnd(), acc = rnd();
            if (op == 13) {
                /* keep it valid for both decodes */
                a &= 0x55555555u;
                b &= 0x55555555u;
            }
            d[i] = npk_e1_desc_scalar(op, a, b, acc);
            npk_ref_e1_scalar(op, a, b, acc, 0, &want_lo, &want_hi);
        }
        npk_e1_result last;
        CHECK_EQ(npk_e1_submit(e, d, 7, NULL, 0, &last), 0);
        CHECK_EQ(last.result, want_lo);
        CHECK_EQ(last.result_hi, want_hi);
    }
    /* streamed GEMMs sharing one configuration: 2x2x3 int8, 16-byte stream, writeback */
    npk_e1_tilecfg cfg = {0};
    CHECK_EQ(npk_e1_gemm_layout(0, 2, 2, 3, &cfg.gemm), 0);
    uint64_t src, dst;
    CHECK_EQ(npk_port_alloc(p, 16 * 5, 16, &src), 0);
    CHECK_EQ(npk_port_alloc(p, 16 * 5, 16, &dst), 0);
    npk_e1_desc d[5];
    int8_t A[5][6], B[5][6];
    for (int t = 0; t < 5; t++) {
        uint8_t img[16] = {0};
        for (int i = 0; i < 6; i++) A[t][i] = (int8_t)rnd(), B[t][i] = (int8_t)rnd();
        memcpy(img, A[t], 6);
        memcpy(img + 6, B[t], 6);
        npk_port_mem_write(p, src + 16 * t, img, 16);
        d[t] = npk_e1_desc_stream(E1_OP_GEMM_S8, src + 16 * t, 0, 16, dst + 16 * t);
    }
    CHECK_EQ(npk_e1_submit(e, d, 5, &cfg, 0, NULL), 0);
    int bad = 0;
    for (int t = 0; t < 5; t++) {
        int32_t C[4], G[4];
        npk_port_mem_read(p, dst + 16 * t, C, 16);
        npk_ref_e1_matmul(A[t], B[t], G, 2, 2, 3);
        bad += memcmp(C, G, 16) != 0;
    }
    CHECK_EQ(bad, 0);
}

static void test_ring_errors(npk_e1 *e, int sim) {
    npk_port *p = npk_e1_port(e);
    npk_e1_desc d[2] = {npk_e1_desc_scalar(E1_OP_ADD, 1, 2, 0), npk_e1_desc_stream(E1_OP_ADD, 0x5000, 0, 62, 0)};
    /* refused before MMIO, naming the descriptor and the rule */
    uint64_t before = npk_port_mmio_count(p);
    CHECK_EQ(npk_e1_submit(e, d, 2, NULL, 0, NULL), -NPK_EINVAL);
    CHECK_STR(npk_errmsg(), "descriptor 1: stream length 62 is not word-aligned");
    d[1].w[0] &= ~E1_DESC_W0_VALID_OWNER;
    CHECK_EQ(npk_e1_submit(e, d, 2, NULL, 0, NULL), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "descriptor 1: valid_owner") != NULL);
    d[1] = npk_e1_desc_stream(E1_OP_ADD, 0x5000, 0, 16, 0x6000); /* writeback on a scalar op */
    CHECK_EQ(npk_e1_submit(e, d, 2, NULL, 0, NULL), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "writeback is only supported for GEMM") != NULL);
    CHECK_EQ(npk_e1_submit(e, d, 0, NULL, 0, NULL), -NPK_EINVAL);
    npk_e1_desc eight[8];
    for (int i = 0; i < 8; i++) eight[i] = npk_e1_desc_scalar(E1_OP_ADD, 1, 1, 0);
    CHECK_EQ(npk_e1_submit(e, eight, 8, NULL, 0, NULL), -NPK_EINVAL);
    CHECK_EQ(npk_port_mmio_count(p), before);
    if (!sim) return;
    /* device-side faults, injected in guest memory */
    npk_mem *mem = npk_sim_mem(npk_port_sim(p));
    npk_fault f = {NPK_ACC_READ, 0x7000, 16, -1, NPK_BUS_ERROR, 0};
    CHECK_EQ(npk_mem_add_fault(mem, &f), 0);
    npk_e1_desc s[3] = {npk_e1_desc_scalar(E1_OP_ADD, 1, 2, 0), npk_e1_desc_scalar(E1_OP_SUB, 5, 2, 0),
                        npk_e1_desc_stream(E1_OP_ADD, 0x7000, 0, 16, 0)};
    CHECK_EQ(npk_e1_submit(e, s, 3, NULL, 0, NULL), -NPK_EDEVICE);
    CHECK(strstr(npk_errmsg(), "descriptor 2: bus error on a tensor stream read") != NULL);
    CHECK_EQ(e1_ds_code(npk_e1_last_fault(e)->desc_status), E1_DS_STREAM_ERR);
    CHECK_EQ(npk_e1_last_fault(e)->desc_index, 2);
    npk_mem_clear_faults(mem);
    /* recovery: the next batch completes */
    npk_e1_result r;
    CHECK_EQ(npk_e1_submit(e, s, 2, NULL, 0, &r), 0);
    CHECK_EQ(r.result, 3);
    /* a stream source that never answers: the chip's 128-cycle timeout */
    npk_fault h = {NPK_ACC_READ, 0x7000, 16, -1, NPK_BUS_HANG, 0};
    npk_mem_add_fault(mem, &h);
    CHECK_EQ(npk_e1_submit(e, s, 3, NULL, 0, NULL), -NPK_EDEVICE);
    CHECK(strstr(npk_errmsg(), "timeout") != NULL);
    npk_mem_clear_faults(mem);
    CHECK_EQ(npk_e1_submit(e, s, 2, NULL, 0, &r), 0);
    CHECK_EQ(r.result, 3);
}

static void run_all(npk_port *p, int sim) {
    npk_e1 *e;
    CHECK_EQ(npk_e1_open(&e, p), 0);
    if (!e) return;
    test_scalar(e);
    test_gemm_tiles(e);
    test_ring(e);
    test_ring_errors(e, sim);
    npk_e1_counters c;
    CHECK_EQ(npk_e1_read_counters(e, &c), 0);
    CHECK(c.perf_ops > 0);
    npk_e1_close(e);
}

int main(void) {
    npk_port *p;
    CHECK_EQ(npk_port_open(&p, "sim", "e1", NULL), 0);
    if (p) {
        run_all(p, 1);
        npk_port_close(p);
    }
    /* the same driver, unchanged, over the qtest port */
    rng_state = 12345;
    int rc = npk_port_open(&p, "qtest-spawn:" NPU_BIN, "e1", NULL);
    if (rc == -NPK_EUNSUPPORTED) {
        fprintf(stderr, "qtest port not available: %s\n", npk_errmsg());
    } else {
        CHECK_EQ(rc, 0);
        if (!rc) {
            run_all(p, 0);
            npk_port_close(p);
        }
    }
    return CHECK_DONE();
}
