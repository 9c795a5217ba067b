// SPDX-License-Identifier: MIT
/* GEMM on the shell device against the CPU reference (src/ops/ref_float.c):
 * every dtype, both layouts, transposes, padded leading dimensions, v0.1 and
 * v0.2 descriptors, alpha/beta/bias and every epilogue. Integer and float paths
 * are bit-exact (the float reference accumulates in fp32 in the same k order). */
#include "npukit/gemm.h"
#include "ops/ref_float.h"
#include "test_shell_util.h"

#include <math.h>

static npk_port *P;
static npk_shell *SH;

/* Random element of a dtype: int8 anything, floats in [-2, 2] (exact in the
 * dtype); wide: any bit pattern of the float dtype but NaN (subnormals,
 * infinities, products that overflow or underflow fp32's normal range). */
static void rand_elems(int dt, uint8_t *p, size_t n, int wide) {
    for (size_t i = 0; i < n && wide && dt != SHELL_INT8; i++) {
        uint32_t u = rnd();
        if (dt == SHELL_FP8) p[i] = (u & 0x7f) == 0x7f ? (uint8_t)(u & 0x80) : (uint8_t)u; /* 0x7f/0xff: NaN */
        else {
            uint16_t h = (uint16_t)u;
            int nan = dt == SHELL_FP16 ? (h & 0x7c00) == 0x7c00 && (h & 0x3ff) : (h & 0x7f80) == 0x7f80 && (h & 0x7f);
            le16(p + 2 * i, nan ? (uint16_t)(h & 0x8000) : h);
        }
    }
    for (size_t i = 0; i < n && !(wide && dt != SHELL_INT8); i++) {
        double v = ((double)(rnd() % 2001) - 1000.0) / 500.0;
        if (dt == SHELL_INT8) p[i] = (uint8_t)rnd();
        else if (dt == SHELL_FP16) le16(p + 2 * i, npk_fp16_from_f64(v));
        else if (dt == SHELL_BF16) le16(p + 2 * i, npk_bf16_from_f64(v));
        else p[i] = npk_fp8_from_f64(v);
    }
}

typedef struct cfg {
    int dt, col, ta, tb, v1;
    uint32_t m, n, k, pad; /* pad: extra bytes per line (v0.2 only) */
    int has_bias, has_alpha, has_beta, epi;
    float alpha, beta;
    int i8;         /* INT8_OUT: int8 C and bias */
    unsigned shift; /* its requantization shift */
    int wide;       /* float operands over the whole range (rand_elems) */
} cfg;

static int run_case(const cfg *c) {
    unsigned es = npk_ref_dtype_size(c->dt);
    /* stored shapes: lines x line elements */
    uint32_t a_rows = c->ta ? c->k : c->m, a_cols = c->ta ? c->m : c->k;
    uint32_t b_rows = c->tb ? c->n : c->k, b_cols = c->tb ? c->k : c->n;
    uint32_t a_lines = c->col ? a_cols : a_rows, a_le = c->col ? a_rows : a_cols;
    uint32_t b_lines = c->col ? b_cols : b_rows, b_le = c->col ? b_rows : b_cols;
    uint32_t c_lines = c->col ? c->n : c->m, c_le = c->col ? c->m : c->n;
    uint32_t pad = c->v1 ? 0 : c->pad;
    size_t ces = c->i8 ? 1 : 4;
    size_t lda = a_le * es + pad * es, ldb = b_le * es + pad * es, ldc = c_le * ces + pad * ces;
    size_t sa = a_lines * lda, sb = b_lines * ldb, sc = c_lines * ldc;
    uint8_t *A = malloc(sa + 1), *B = malloc(sb + 1), *C0 = malloc(sc + 1), *C = malloc(sc + 1), *R = malloc(sc + 1);
    uint8_t *bias = malloc(4 * c->n + 4);
    rand_elems(c->dt, A, sa / es, c->wide);
    rand_elems(c->dt, B, sb / es, c->wide);
    if (c->i8) fill_rand(C0, sc);
    for (size_t i = 0; i < sc / 4 && !c->i8; i++) {
        if (c->dt == SHELL_INT8) le32(C0 + 4 * i, rnd() % 20001 - 10000);
        else {
            float f = (float)(((int)(rnd() % 2001) - 1000) / 250.0);
            uint32_t u;
            memcpy(&u, &f, 4);
            le32(C0 + 4 * i, u);
        }
    }
    if (c->i8) fill_rand(bias, c->n);
    for (uint32_t j = 0; j < c->n && !c->i8; j++) {
        if (c->dt == SHELL_INT8) le32(bias + 4 * j, rnd() % 2001 - 1000);
        else {
            float f = (float)(((int)(rnd() % 2001) - 1000) / 100.0);
            uint32_t u;
            memcpy(&u, &f, 4);
            le32(bias + 4 * j, u);
        }
    }
    uint64_t ga, gb, gc, gbias;
    CHECK_EQ(npk_port_alloc(P, sa + 1, 64, &ga), 0);
    CHECK_EQ(npk_port_alloc(P, sb + 1, 64, &gb), 0);
    CHECK_EQ(npk_port_alloc(P, sc + 1, 64, &gc), 0);
    CHECK_EQ(npk_port_alloc(P, 4 * c->n + 4, 64, &gbias), 0);
    npk_port_mem_write(P, ga, A, sa);
    npk_port_mem_write(P, gb, B, sb);
    npk_port_mem_write(P, gc, C0, sc);
    npk_port_mem_write(P, gbias, bias, 4 * c->n);
    uint8_t d[96];
    size_t len;
    if (c->v1) {
        len = npk_shell_enc_gemm_v1(d, (unsigned)c->dt, (unsigned)c->col, c->m, c->n, c->k, ga, gb, gc);
    } else {
        npk_shell_gemm_desc g = {0};
        g.dtype = (unsigned)c->dt;
        g.layout = (unsigned)c->col;
        g.epilogue = (unsigned)c->epi;
        g.trans_a = c->ta;
        g.trans_b = c->tb;
        g.a = ga;
        g.b = gb;
        g.c = gc;
        g.m = c->m;
        g.n = c->n;
        g.k = c->k;
        g.lda = pad ? (uint32_t)lda : 0;
        g.ldb = pad ? (uint32_t)ldb : 0;
        g.ldc = pad ? (uint32_t)ldc : 0;
        g.op_uid = 77;
        g.has_bias = c->has_bias;
        g.bias = gbias;
        g.has_alpha = c->has_alpha;
        g.alpha = c->alpha;
        g.has_beta = c->has_beta;
        g.beta = c->beta;
        g.int8_out = c->i8;
        g.shift = c->shift;
        len = npk_shell_enc_gemm(d, &g);
    }
    int rc = npk_shell_run(SH, d, len, 0);
    CHECK_EQ(rc, 0);
    if (rc) fprintf(stderr, "%s\n", npk_errmsg());
    npk_port_mem_read(P, gc, C, sc);
    memcpy(R, C0, sc);
    npk_ref_gemm r = {c->dt, c->col, c->ta, c->tb, c->m, c->n, c->k, A, lda, B, ldb, C0, R, ldc,
                      c->has_bias ? bias : NULL, c->has_alpha, c->has_beta, c->alpha, c->beta, c->epi, c->i8, c->shift};
    npk_ref_gemm_run(&r);
    int same = !memcmp(C, R, sc);
    CHECK(same);
    if (!same) {
        fprintf(stderr, "mismatch: dt %d col %d ta %d tb %d v1 %d m %u n %u k %u pad %u bias %d alpha %d beta %d epi %d\n",
                c->dt, c->col, c->ta, c->tb, c->v1, c->m, c->n, c->k, pad, c->has_bias, c->has_alpha, c->has_beta, c->epi);
        for (size_t i = 0; i < sc; i += 4)
            if (memcmp(C + i, R + i, 4)) {
                fprintf(stderr, "  first at byte %zu: got 0x%08x want 0x%08x\n", i, get32(C + i), get32(R + i));
                break;
            }
    }
    npk_port_free_all(P);
    /* the driver's ring lives in the arena too: reopen */
    free(A);
    free(B);
    free(C0);
    free(C);
    free(R);
    free(bias);
    return same;
}

/* Guest copies of A, B and C for a worked example; g gets their addresses. */
static void put_abc(npk_shell_gemm_desc *g, const void *a, size_t na, const void *b, size_t nb, const void *c, size_t nc) {
    CHECK_EQ(npk_port_alloc(P, na, 64, &g->a), 0);
    CHECK_EQ(npk_port_alloc(P, nb, 64, &g->b), 0);
    CHECK_EQ(npk_port_alloc(P, nc, 64, &g->c), 0);
    npk_port_mem_write(P, g->a, a, na);
    npk_port_mem_write(P, g->b, b, nb);
    npk_port_mem_write(P, g->c, c, nc);
}

static void reopen(void) {
    npk_shell_close(SH);
    CHECK_EQ(npk_shell_open(&SH, P, NULL), 0);
}

int main(void) {
    P = open_shell(NULL);
    CHECK_EQ(npk_shell_open(&SH, P, NULL), 0);

    /* an independent worked example: 2x2x3 int8, row-major, hand-computed */
    {
        int8_t A[6] = {1, -2, 3, 4, 5, -6}, B[6] = {7, 8, 9, 10, -11, 12};
        int32_t C[4], want[4] = {1 * 7 - 2 * 9 + 3 * -11, 1 * 8 - 2 * 10 + 3 * 12, 4 * 7 + 5 * 9 - 6 * -11,
                                 4 * 8 + 5 * 10 - 6 * 12};
        CHECK_EQ(npk_shell_gemm_i8(SH, 2, 2, 3, A, B, NULL, C), 0);
        CHECK(!memcmp(C, want, sizeof want));
        int32_t bias[2] = {100, -100}, want2[4] = {want[0] + 100, want[1] - 100, want[2] + 100, want[3] - 100};
        CHECK_EQ(npk_shell_gemm_i8(SH, 2, 2, 3, A, B, bias, C), 0);
        CHECK(!memcmp(C, want2, sizeof want2));
    }
    /* fp16 worked example: [1.5 2] x [2; -0.25] = 2.5 (fp32 out) */
    {
        uint8_t a[4], b[4];
        le16(a, 0x3e00), le16(a + 2, 0x4000), le16(b, 0x4000), le16(b + 2, 0xb400);
        float c = 0;
        npk_shell_gemm_desc g = {0};
        g.dtype = SHELL_FP16;
        g.m = 1, g.n = 1, g.k = 2;
        CHECK_EQ(npk_shell_gemm_host(SH, &g, a, b, NULL, &c), 0);
        CHECK(c == 2.5f);
        /* bf16 with alpha 2, RELU: relu(2 * (-1 * 3)) = 0 */
        le16(a, 0xbf80), le16(b, 0x4040);
        g.dtype = SHELL_BF16;
        g.k = 1;
        g.has_alpha = 1;
        g.alpha = 2.0f;
        g.epilogue = SHELL_EPI_RELU;
        c = 123;
        CHECK_EQ(npk_shell_gemm_host(SH, &g, a, b, NULL, &c), 0);
        CHECK(c == 0.0f);
    }
    reopen();

    /* Issue #13: HAS_BETA with BETA = 0.0 (or -0.0) does not read C, as BLAS and
     * the reference mapper's `beta: 0.0` mean. C pre-filled with NaN: the fp16
     * result is A x B (1*1 + 2*3 = 7, ...), not NaN; and the GEMM costs what
     * the same GEMM without HAS_BETA costs (no C read traffic). */
    for (int neg = 0; neg < 2; neg++) {
        uint64_t cyc[2];
        for (int hb = 0; hb < 2; hb++) {
            uint8_t a[8], b[8], cbuf[16];
            uint16_t av[4] = {0x3c00, 0x4000, 0x4200, 0x4400}, bv[4] = {0x3c00, 0x4000, 0x4200, 0x4400}; /* 1 2 3 4 */
            for (int i = 0; i < 4; i++) le16(a + 2 * i, av[i]), le16(b + 2 * i, bv[i]);
            for (int i = 0; i < 4; i++) le32(cbuf + 4 * i, 0x7fc00000u); /* NaN */
            npk_shell_gemm_desc g = {0};
            put_abc(&g, a, 8, b, 8, cbuf, 16);
            g.dtype = SHELL_FP16;
            g.m = g.n = g.k = 2;
            g.has_beta = hb;
            g.beta = neg ? -0.0f : 0.0f;
            g.has_alpha = 1; /* SIZE 3 in both runs */
            g.alpha = 1.0f;
            uint8_t d[96];
            size_t len = npk_shell_enc_gemm(d, &g);
            uint32_t before = reg(P, SHELL_PERF_GEMM_CYCLES);
            CHECK_EQ(npk_shell_run(SH, d, len, 0), 0);
            cyc[hb] = reg(P, SHELL_PERF_GEMM_CYCLES) - before;
            npk_port_mem_read(P, g.c, cbuf, 16);
            float want[4] = {7, 10, 15, 22}; /* [1 2; 3 4]^2 */
            for (int i = 0; i < 4; i++) {
                uint32_t u = get32(cbuf + 4 * i);
                float f;
                memcpy(&f, &u, 4);
                CHECK(f == want[i]);
            }
            npk_port_free_all(P);
            reopen();
        }
        CHECK_EQ(cyc[1], cyc[0]);
    }
    /* int8 with BETA = 0: the exact integer result whatever C held */
    {
        int8_t a[4] = {1, -2, 3, 4}, b[4] = {5, 6, -7, 8};
        uint8_t cbuf[16];
        for (int i = 0; i < 16; i++) cbuf[i] = 0xee;
        npk_shell_gemm_desc g = {0};
        put_abc(&g, a, 4, b, 4, cbuf, 16);
        g.dtype = SHELL_INT8;
        g.m = g.n = g.k = 2;
        g.has_beta = 1;
        g.beta = 0.0f;
        uint8_t d[96];
        size_t len = npk_shell_enc_gemm(d, &g);
        CHECK_EQ(npk_shell_run(SH, d, len, 0), 0);
        npk_port_mem_read(P, g.c, cbuf, 16);
        int32_t want[4] = {1 * 5 - 2 * -7, 1 * 6 - 2 * 8, 3 * 5 + 4 * -7, 3 * 6 + 4 * 8};
        for (int i = 0; i < 4; i++) CHECK_EQ((int32_t)get32(cbuf + 4 * i), want[i]);
        npk_port_free_all(P);
        reopen();
    }

    /* INT8_OUT worked example (issue #13): A = [3], B = [5 6 7 -6 127 -128], SHIFT 1:
     * 15/2 = 7.5 -> 8 and 21/2 = 10.5 -> 10 (half to even), 18/2 = 9, -18/2 = -9,
     * 381/2 -> 127 and -384/2 -> -128 (saturated); C is 6 int8 bytes, LDC 0 = packed */
    {
        int8_t a[1] = {3}, b[6] = {5, 6, 7, -6, 127, -128}, want[6] = {8, 9, 10, -9, 127, -128};
        uint8_t cb[8];
        memset(cb, 0x55, sizeof cb);
        npk_shell_gemm_desc g = {0};
        put_abc(&g, a, 1, b, 6, cb, 8);
        g.dtype = SHELL_INT8;
        g.m = 1, g.n = 6, g.k = 1;
        g.int8_out = 1;
        g.shift = 1;
        uint8_t d[96];
        size_t len = npk_shell_enc_gemm(d, &g);
        CHECK_EQ(d[5], 0x06); /* GEMM_EXT bit 9 INT8_OUT, bits 15:10 SHIFT 1 */
        CHECK_EQ(npk_shell_run(SH, d, len, 0), 0);
        npk_port_mem_read(P, g.c, cb, 8);
        CHECK(!memcmp(cb, want, 6));
        CHECK_EQ(cb[6], 0x55); /* one byte per element */
        g.shift = 63; /* the largest SHIFT: every int32 result rounds to 0 */
        len = npk_shell_enc_gemm(d, &g);
        CHECK_EQ(npk_shell_run(SH, d, len, 0), 0);
        npk_port_mem_read(P, g.c, cb, 8);
        for (int i = 0; i < 6; i++) CHECK_EQ(cb[i], 0);
        g.shift = 1;
        npk_port_free_all(P);
        reopen();
        /* SHIFT without INT8_OUT, and INT8_OUT on an fp16 GEMM: BAD_DESCRIPTOR */
        for (int t = 0; t < 2; t++) {
            npk_port *p2 = open_shell(NULL);
            npk_shell *s2;
            CHECK_EQ(npk_shell_open(&s2, p2, NULL), 0);
            g.int8_out = t, g.shift = t ? 0 : 1, g.dtype = t ? SHELL_FP16 : SHELL_INT8;
            len = npk_shell_enc_gemm(d, &g);
            CHECK(npk_shell_run(s2, d, len, 0) < 0);
            CHECK(strstr(npk_errmsg(), "BAD_DESCRIPTOR") != NULL);
            npk_shell_close(s2);
            npk_port_close(p2);
        }
    }

    int cases = 0;
    for (int dt = 0; dt < 4; dt++)
        for (int col = 0; col < 2; col++)
            for (int v1 = 0; v1 < 2; v1++)
                for (int t = 0; t < (v1 ? 1 : 4); t++) {
                    cfg c = {0};
                    c.dt = dt;
                    c.col = col;
                    c.v1 = v1;
                    c.ta = t & 1;
                    c.tb = (t >> 1) & 1;
                    c.m = 1 + rnd() % 9;
                    c.n = 1 + rnd() % 11;
                    c.k = 1 + rnd() % 13;
                    c.pad = v1 ? 0 : rnd() % 3;
                    run_case(&c);
                    reopen();
                    cases++;
                }
    /* epilogues and scaling, every dtype; dt 4 = INT8 with INT8_OUT (issue #13): int8 C and
     * bias, requantized by 2^-shift (shift 0..9) with round half to even and int8 saturation,
     * with padding and transposed A */
    for (int dt = 0; dt < 5; dt++)
        for (int epi = 0; epi <= 4; epi++)
            for (int sc = 0; sc < 4; sc++) {
                cfg c = {0};
                c.i8 = dt == 4;
                c.dt = c.i8 ? SHELL_INT8 : dt;
                c.shift = c.i8 ? (unsigned)(epi * 4 + sc) % 10 : 0;
                c.epi = epi;
                c.m = 3 + rnd() % 4;
                c.n = 2 + rnd() % 5;
                c.k = 1 + rnd() % 7;
                c.col = sc & 1;
                c.ta = c.i8 ? (int)(rnd() & 1) : 0;
                c.pad = c.i8 ? rnd() % 3 : 0;
                c.has_bias = sc >= 1;
                c.has_alpha = sc >= 2;
                c.has_beta = sc == 3;
                c.alpha = 0.75f;
                c.beta = -1.5f;
                run_case(&c);
                reopen();
                cases++;
            }
    /* a bigger square and K = 0 */
    {
        cfg c = {0};
        c.dt = SHELL_INT8;
        c.m = c.n = c.k = 64;
        run_case(&c);
        reopen();
        c.dt = SHELL_BF16;
        c.m = 17, c.n = 33, c.k = 65;
        run_case(&c);
        reopen();
        c.k = 0;
        c.has_bias = 1;
        run_case(&c);
        reopen();
    }
    /* C written over A, then over B (INT8 and BF16, buffers big enough to be host
     * extents the kernels could use in place): the model reads both operands
     * before it writes C, so the result is the product of the old operands. */
    for (int dt = 0; dt < 2; dt++)
        for (int over = 0; over < 2; over++) {
            const uint32_t m = 150, n = 48, k = 300; /* two A row blocks and two K blocks */
            const size_t es = dt ? 2 : 1, sa = m * k * es, sb = k * n * es, sc = (size_t)m * n * 4;
            uint8_t *a = malloc(sa), *b = malloc(sb), *got = malloc(sc), *want = malloc(sc);
            rand_elems(dt ? SHELL_BF16 : SHELL_INT8, a, sa / es, 0);
            rand_elems(dt ? SHELL_BF16 : SHELL_INT8, b, sb / es, 0);
            npk_shell_gemm_desc g = {0};
            g.dtype = dt ? SHELL_BF16 : SHELL_INT8;
            g.m = m, g.n = n, g.k = k;
            CHECK_EQ(npk_port_alloc(P, sa > sc ? sa : sc, 64, &g.a), 0);
            CHECK_EQ(npk_port_alloc(P, sb > sc ? sb : sc, 64, &g.b), 0);
            npk_port_mem_write(P, g.a, a, sa);
            npk_port_mem_write(P, g.b, b, sb);
            g.c = over ? g.b : g.a;
            uint8_t d[96];
            size_t len = npk_shell_enc_gemm(d, &g);
            CHECK_EQ(npk_shell_run(SH, d, len, 0), 0);
            npk_port_mem_read(P, g.c, got, sc);
            npk_ref_gemm r = {g.dtype, 0, 0, 0, m, n, k, a, k * es, b, n * es, NULL, want, 4 * (size_t)n, NULL,
                              0, 0, 1.0f, 0.0f, 0, 0, 0};
            npk_ref_gemm_run(&r);
            CHECK(!memcmp(got, want, sc));
            free(a), free(b), free(got), free(want);
            npk_port_free_all(P);
            reopen();
        }
    /* npk_shell_gemm_host in place (npk_port_map_host: the model reads the caller's
     * A and B and writes its C, no copy) against the copy path (the same buffers
     * one byte off their element alignment, which the driver copies): the same C,
     * equal to the reference, the same modeled cycles and DMA beats (INT8 elements
     * are bytes: its A and B stay in place, C is copied); C over A
     * (copied, as a write in place would change A under the GEMM). */
    for (int dt = 0; dt < 2; dt++) {
        const uint32_t m = 40, n = 24, k = 70;
        const size_t es = dt ? 2 : 1, sa = m * k * es, sb = k * n * es, sc = (size_t)m * n * 4;
        uint8_t *a = malloc(sa + 8), *b = malloc(sb + 8), *c = malloc(sc + 8), *want = malloc(sc);
        rand_elems(dt ? SHELL_BF16 : SHELL_INT8, a, sa / es, 0);
        rand_elems(dt ? SHELL_BF16 : SHELL_INT8, b, sb / es, 0);
        npk_shell_gemm_desc g = {0};
        g.dtype = dt ? SHELL_BF16 : SHELL_INT8;
        g.m = m, g.n = n, g.k = k;
        npk_ref_gemm r = {g.dtype, 0, 0, 0, m, n, k, a, k * es, b, n * es, NULL, want, 4 * (size_t)n, NULL,
                          0, 0, 1.0f, 0.0f, 0, 0, 0};
        npk_ref_gemm_run(&r);
        npk_mem *mem = npk_sim_mem(npk_port_sim(P));
        uint32_t cyc[2];
        npk_mem_stats st[2];
        for (int off = 0; off < 2; off++) { /* 0: in place, 1: copied */
            uint8_t *ao = a + off, *bo = b + off, *co = c + off;
            if (off) memmove(a + 1, a, sa), memmove(b + 1, b, sb);
            memset(co, 0xa5, sc);
            npk_mem_reset_stats(mem);
            uint32_t c0 = reg(P, SHELL_PERF_GEMM_CYCLES);
            uint64_t used = npk_mem_used(mem);
            CHECK_EQ(npk_shell_gemm_host(SH, &g, ao, bo, NULL, co), 0);
            if (!off) CHECK_EQ(npk_mem_used(mem), used); /* no guest buffer taken: in place */
            cyc[off] = reg(P, SHELL_PERF_GEMM_CYCLES) - c0;
            npk_mem_get_stats(mem, &st[off]);
            CHECK(!memcmp(co, want, sc));
        }
        CHECK_EQ(cyc[0], cyc[1]);
        CHECK_EQ(st[0].read_bytes, st[1].read_bytes);
        CHECK_EQ(st[0].write_bytes, st[1].write_bytes);
        CHECK(cyc[0] > 0);
        /* C over A: A's buffer holds A, then C */
        uint8_t *ac = malloc(sa > sc ? sa : sc);
        memmove(a, a + 1, sa), memmove(b, b + 1, sb);
        memcpy(ac, a, sa);
        CHECK_EQ(npk_shell_gemm_host(SH, &g, ac, b, NULL, ac), 0);
        CHECK(!memcmp(ac, want, sc));
        free(ac), free(a), free(b), free(c), free(want);
        reopen();
    }
    /* npk_port_map_host itself: guest memory at the address is the host buffer (both
     * ways) until npk_port_free; a memory map declared on the model refuses it. */
    {
        uint32_t host[1024];
        for (int i = 0; i < 1024; i++) host[i] = (uint32_t)i * 2654435761u;
        uint64_t ga = 0;
        CHECK_EQ(npk_port_map_host(P, host, sizeof host, &ga), 0);
        CHECK(ga % 64 == 0);
        uint32_t v = 0, w = 0xfeedf00d;
        CHECK_EQ(npk_port_mem_read(P, ga + 40, &v, 4), 0);
        CHECK_EQ(v, host[10]);
        CHECK_EQ(npk_port_mem_write(P, ga + 4092, &w, 4), 0);
        CHECK_EQ(host[1023], 0xfeedf00du);
        npk_port_free(P, ga);
        CHECK_EQ(npk_port_mem_read(P, ga + 40, &v, 4), 0);
        CHECK(v != host[10]); /* the guest range no longer shows the host buffer */
        npk_port *p2 = open_shell(NULL);
        CHECK_EQ(npk_mem_map(npk_sim_mem(npk_port_sim(p2)), 0, 1ull << 40, 3, "ram"), 0);
        CHECK(npk_port_map_host(p2, host, sizeof host, &ga) == -NPK_EUNSUPPORTED);
        npk_port_close(p2);
    }
    /* Every variant of the shared kernels (include/npukit/gemm.h) the host runs,
     * forced in turn: odd shapes that cross the register tiles (6 and 4 rows),
     * the column panels (64 and 16) and the K blocks (int8 256, fp32 128), every
     * dtype, both layouts and transposes, float operands over the whole range. */
    FOR_EACH_ISA(l) { /* avx512: the int8 kernel of avx2 with the fp32 one of avx512 */
        for (int dt = 0; dt < 4; dt++)
            for (int t = 0; t < 4; t++) {
                cfg c = {0};
                c.dt = dt;
                c.col = t == 3;
                c.ta = t == 1;
                c.tb = t >= 2;
                c.m = 1 + 2 * (rnd() % 12);
                c.n = 1 + 2 * (rnd() % 70);
                c.k = 1 + 2 * (rnd() % 300);
                c.pad = rnd() % 3;
                c.wide = t & 1;
                run_case(&c);
                reopen();
                cases++;
            }
    }
    CHECK_EQ(npk_isa_force(NPK_ISA_AUTO), 0);
    fprintf(stderr, "%d configurations\n", cases);
    npk_shell_close(SH);
    npk_port_close(P);
    return CHECK_DONE();
}
