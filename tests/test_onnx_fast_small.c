// SPDX-License-Identifier: MIT
/* The kernels of src/ops/fast_onnx_small.c against the naive golden kernels
 * (src/ops/ref_onnx*.c) on pseudo-random shapes: QGemm (both B layouts, zero
 * points per column, with and without bias, K past one int32 chunk) and Slice
 * (any rank, negative steps, empty outputs), Pad (every mode), QuantizeLinear -> DequantizeLinear in
 * one pass and Clip with float bounds bit for bit; narrow convolutions
 * (the GEMM's dot-product form) and LSTM (both directions and layouts,
 * sequence lengths, initial states, peepholes, clip, input_forget, every
 * activation, each optional output) within ONNX's backend tolerance. Then
 * silero-vad-v5 through npk_graph_run, fast against golden. */
#include "onnx_fast_check.h"
#include "ops/fast_onnx.h"

/* ---- QGemm --------------------------------------------------------------------------------- */

/* The golden QGemm composed of golden kernels: MatMulInteger on B (or B^T
 * transposed here), the int32 bias added with int32 wrap-around, then
 * requantization per column. */
static void golden_qgemm(const npk_tensor *a, const npk_tensor *b, int trans_b, const npk_tensor *azp,
                         const npk_tensor *bzp, const npk_tensor *bias, const float *mult, int64_t nm,
                         const npk_tensor *yzp, npk_tensor *y) {
    int64_t M = a->dims[0], K = a->dims[1], N = y->dims[1];
    int64_t db[2] = {K, N}, dy[2] = {M, N};
    npk_tensor bt = mk(b->dtype, 2, db), acc = mk(NPK_DT_INT32, 2, dy);
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++)
            memcpy((uint8_t *)bt.data + k * N + j, (const uint8_t *)b->data + (trans_b ? j * K + k : k * N + j), 1);
    npk_ref_onnx_matmul_integer(a, &bt, azp, bzp, &acc);
    int32_t *s = acc.data;
    for (int64_t m = 0; m < M; m++)
        for (int64_t j = 0; j < N; j++) {
            int64_t bb = bias ? ((const int32_t *)bias->data)[npk_tensor_numel(bias) > 1 ? j : 0] : 0;
            s[m * N + j] = (int32_t)(uint32_t)((uint64_t)(int64_t)s[m * N + j] + (uint64_t)bb);
        }
    npk_ref_onnx_requant_tensor(&acc, mult, nm, 1, yzp ? npk_ref_onnx_get_i(yzp->data, yzp->dtype, 0) : 0, y);
    npk_tensor_free(&bt);
    npk_tensor_free(&acc);
}

static void test_qgemm(void) {
    static const int64_t shapes[][3] = {{1, 2400, 32}, {1, 32, 32}, {3, 17, 5}, {4, 1, 9}, {2, 33000, 3}, {5, 64, 1}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int v = 0; v < 8; v++) {
            int trans_b = v & 1, per_col = (v >> 1) & 1, ua = (v >> 2) & 1;
            int64_t M = shapes[si][0], K = shapes[si][1], N = shapes[si][2];
            int adt = ua ? NPK_DT_UINT8 : NPK_DT_INT8, bdt = ua ? NPK_DT_INT8 : NPK_DT_UINT8;
            int ydt = (si + (size_t)v) % 2 ? NPK_DT_INT8 : NPK_DT_UINT8;
            int64_t da[2] = {M, K}, dbn[2] = {trans_b ? N : K, trans_b ? K : N}, dy[2] = {M, N}, one = 1;
            int64_t nz = per_col ? N : 1;
            npk_tensor a = rand_t(adt, 2, da), b = rand_t(bdt, 2, dbn), azp = rand_t(adt, 0, &one),
                       bzp = rand_t(bdt, 1, &nz), yzp = rand_t(ydt, 0, &one), bias = rand_t(NPK_DT_INT32, 1, &N),
                       yf = mk(ydt, 2, dy), yg = mk(ydt, 2, dy);
            float mult[64];
            for (int64_t j = 0; j < nz; j++) mult[j] = (float)(rnd() % 1000 + 1) * (K > 1000 ? 1e-7f : 1e-4f);
            int with_bias = v != 3, with_zp = v != 5;
            int64_t az = with_zp ? npk_ref_onnx_get_i(azp.data, adt, 0) : 0;
            int64_t yz = npk_ref_onnx_get_i(yzp.data, ydt, 0);
            CHECK_EQ(npk_fast_qgemm(&a, &b, trans_b, az, with_zp ? &bzp : NULL, with_bias ? &bias : NULL, mult, nz, yz,
                                    &yf),
                     0);
            golden_qgemm(&a, &b, trans_b, with_zp ? &azp : NULL, with_zp ? &bzp : NULL, with_bias ? &bias : NULL, mult,
                         nz, &yzp, &yg);
            if (!same_bits(&yf, &yg))
                fprintf(stderr, "qgemm M=%lld K=%lld N=%lld variant %d differs\n", (long long)M, (long long)K,
                        (long long)N, v);
            CHECK(same_bits(&yf, &yg));
            npk_tensor t[8] = {a, b, azp, bzp, yzp, bias, yf, yg};
            free_all(t, 8);
        }
    /* cases it leaves to the golden: float operands, a 3-D A */
    int64_t d2[2] = {2, 3}, d3[3] = {1, 2, 3};
    npk_tensor f = rand_t(NPK_DT_FLOAT, 2, d2), a3 = rand_t(NPK_DT_INT8, 3, d3), b = rand_t(NPK_DT_INT8, 2, d2),
               y = mk(NPK_DT_INT8, 2, d2);
    float m1 = 0.5f;
    CHECK_EQ(npk_fast_qgemm(&f, &b, 1, 0, NULL, NULL, &m1, 1, 0, &y), 1);
    CHECK_EQ(npk_fast_qgemm(&a3, &b, 1, 0, NULL, NULL, &m1, 1, 0, &y), 1);
    npk_tensor t[4] = {f, a3, b, y};
    free_all(t, 4);
}

/* ---- Conv with few output positions (silero-vad's STFT and encoder) -------------------------- */

static void test_conv_narrow(void) {
    /* c, m, group, input length, kernel, stride, pad, dilation: 1-D convolutions with 1 to 7 outputs
     * (B^T built from the input windows, or the input itself for one channel without padding, then
     * npk_gemm_f32_nt: tiles of 1-4 columns and 1-8 rows, K with and without a tail of 8) and one
     * input channel in one group (a GEMM, not depthwise) */
    static const int64_t cases[][8] = {{1, 40, 1, 576, 256, 128, 0, 1}, {129, 16, 1, 3, 3, 1, 1, 1}, {128, 8, 1, 3, 3, 2, 1, 1},
                                       {64, 8, 1, 2, 3, 2, 1, 1},        {64, 12, 1, 1, 3, 1, 1, 1},  {16, 1, 1, 1, 1, 1, 0, 1},
                                       {1, 5, 1, 30, 5, 4, 0, 1},        {8, 8, 2, 20, 3, 3, 1, 1},   {1, 13, 1, 40, 19, 3, 2, 1},
                                       {1, 9, 1, 60, 17, 5, 0, 2},       {3, 11, 1, 24, 7, 4, 3, 2},  {2, 19, 1, 50, 9, 7, 0, 1}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int64_t *cc = cases[ci];
        npk_onnx_conv_params p;
        memset(&p, 0, sizeof p);
        p.nsp = 1, p.n = 1, p.c = cc[0], p.m = cc[1], p.group = cc[2];
        for (int i = 0; i < 3; i++) p.in[i] = 1, p.k[i] = 1, p.stride[i] = 1, p.dil[i] = 1;
        p.in[2] = cc[3], p.k[2] = cc[4], p.stride[2] = cc[5], p.pad_b[2] = p.pad_e[2] = cc[6], p.dil[2] = cc[7];
        CHECK_EQ(npk_ref_onnx_conv_resolve(&p, "NOTSET"), 0);
        int64_t dx[3] = {1, p.c, p.in[2]}, dw[3] = {p.m, p.c / p.group, p.k[2]}, dy[3] = {1, p.m, p.out[2]};
        npk_tensor t[5] = {rand_t(NPK_DT_FLOAT, 3, dx), rand_t(NPK_DT_FLOAT, 3, dw), rand_t(NPK_DT_FLOAT, 1, &p.m),
                           mk(NPK_DT_FLOAT, 3, dy), mk(NPK_DT_FLOAT, 3, dy)};
        CHECK_EQ(npk_fast_conv(&p, &t[0], &t[1], &t[2], &t[3]), 0);
        npk_ref_onnx_conv(&p, &t[0], &t[1], &t[2], &t[4]);
        CHECK(close_f(&t[3], &t[4], "narrow conv"));
        free_all(t, 5);
    }
}

/* ---- Slice --------------------------------------------------------------------------------- */

static void test_slice(void) {
    static const int dts[] = {NPK_DT_FLOAT, NPK_DT_INT8, NPK_DT_INT16, NPK_DT_INT64};
    for (int it = 0; it < 400; it++) {
        int r = 1 + (int)(rnd() % 4), dt = dts[rnd() % 4];
        int64_t dx[4], dy[4], start[4], step[4];
        for (int d = 0; d < r; d++) {
            dx[d] = 1 + rnd() % 7;
            step[d] = (int64_t)(rnd() % 3) + 1;
            if (rnd() % 3 == 0) step[d] = -step[d];
            int64_t s = step[d] < 0 ? -step[d] : step[d];
            dy[d] = it % 50 == 7 && d == 0 ? 0 : 1 + (int64_t)(rnd() % (uint32_t)((dx[d] - 1) / s + 1));
            int64_t span = dy[d] ? (dy[d] - 1) * s : 0, room = dx[d] - span; /* starts that keep every index inside */
            int64_t lo = step[d] < 0 ? span : 0;
            start[d] = lo + (int64_t)(rnd() % (uint32_t)room);
        }
        npk_tensor x = mk(dt, r, dx), yf = mk(dt, r, dy), yg = mk(dt, r, dy);
        for (size_t b = 0; b < npk_tensor_bytes(&x); b++) ((uint8_t *)x.data)[b] = (uint8_t)rnd();
        CHECK_EQ(npk_fast_slice(&x, start, step, &yf), 0);
        npk_ref_onnx_slice(&x, start, step, &yg);
        CHECK(same_bits(&yf, &yg));
        npk_tensor t[3] = {x, yf, yg};
        free_all(t, 3);
    }
}

/* ---- Pad ----------------------------------------------------------------------------------- */

/* Every mode on random ranks, dtypes and pads (growing, cropping, more than the axis for the
 * constant, edge and wrap modes; reflect at most the axis less one), bit for bit against the
 * golden; axes of length 1 and rows that are all constant included. */
static void test_pad(void) {
    static const int dts[] = {NPK_DT_FLOAT, NPK_DT_INT8, NPK_DT_INT16, NPK_DT_INT64};
    for (int it = 0; it < 600; it++) {
        int r = 1 + (int)(rnd() % 4), dt = dts[rnd() % 4], mode = (int)(rnd() % 4);
        int64_t dx[4], dy[4], pb[4];
        for (int d = 0; d < r; d++) {
            dx[d] = 1 + rnd() % 6;
            if (mode == NPK_ONNX_PAD_REFLECT && dx[d] < 2) dx[d] = 2;
            int64_t most = mode == NPK_ONNX_PAD_REFLECT ? dx[d] - 1 : dx[d] + 2;
            int64_t a = (int64_t)(rnd() % (uint32_t)(most + 1)), e = (int64_t)(rnd() % (uint32_t)(most + 1));
            if (rnd() % 5 == 0) a = -(int64_t)(rnd() % (uint32_t)dx[d]); /* a crop */
            if (dx[d] + a + e < 1) e = 1 - dx[d] - a;
            pb[d] = a, dy[d] = dx[d] + a + e;
        }
        npk_tensor x = mk(dt, r, dx), yf = mk(dt, r, dy), yg = mk(dt, r, dy);
        for (size_t b = 0; b < npk_tensor_bytes(&x); b++) ((uint8_t *)x.data)[b] = (uint8_t)rnd();
        uint8_t cval[8];
        for (int b = 0; b < 8; b++) cval[b] = (uint8_t)rnd();
        CHECK_EQ(npk_fast_pad(&x, pb, mode, cval, &yf), 0);
        npk_ref_onnx_pad(&x, pb, mode, cval, &yg);
        CHECK(same_bits(&yf, &yg));
        npk_tensor t[3] = {x, yf, yg};
        free_all(t, 3);
    }
}

/* ---- QuantizeLinear -> DequantizeLinear in one pass ----------------------------------------- */

/* npk_fast_quant_dequant against the golden QuantizeLinear then DequantizeLinear, bit for bit:
 * int8 and uint8, zero points at the ends of the type and between, the DequantizeLinear's own
 * scale and zero point, values that round to ties, saturate, NaN, infinities, signed zeros; in
 * place and not. */
static void test_quant_dequant(void) {
    for (int it = 0; it < 40; it++) {
        int s8 = it % 2, dt = s8 ? NPK_DT_INT8 : NPK_DT_UINT8;
        int64_t n = 1 + (int64_t)(rnd() % 700), one = 1;
        npk_tensor x = mk(NPK_DT_FLOAT, 1, &n), q = mk(dt, 1, &n), yg = mk(NPK_DT_FLOAT, 1, &n), yf = mk(NPK_DT_FLOAT, 1, &n);
        npk_tensor qs = mk(NPK_DT_FLOAT, 0, &one), ds = mk(NPK_DT_FLOAT, 0, &one), qz = mk(dt, 0, &one), dz = mk(dt, 0, &one);
        float s = (float)(1 + rnd() % 1000) / 4096.0f;
        *(float *)qs.data = s;
        *(float *)ds.data = it % 3 ? s : s * 1.5f;
        int zq = it < 4 ? (s8 ? -128 : 0) : it < 8 ? (s8 ? 127 : 255) : (int)(rnd() % 256) - (s8 ? 128 : 0);
        int zd = it % 5 ? zq : (int)(rnd() % 256) - (s8 ? 128 : 0);
        if (s8) *(int8_t *)qz.data = (int8_t)zq, *(int8_t *)dz.data = (int8_t)zd;
        else *(uint8_t *)qz.data = (uint8_t)zq, *(uint8_t *)dz.data = (uint8_t)zd;
        float *xs = x.data;
        for (int64_t i = 0; i < n; i++)
            xs[i] = i % 7 == 3 ? ((float)((int)(rnd() % 600) - 300) + 0.5f) * s /* ties */
                               : (float)((int)(rnd() % 200001) - 100000) / 100000.0f * 300.0f * s;
        static const float special[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e30f, -1e30f};
        for (size_t k = 0; k < sizeof special / sizeof special[0] && (int64_t)k < n; k++)
            if (rnd() % 2) xs[rnd() % (uint64_t)n] = special[k];
        npk_ref_onnx_quantize(&x, &qs, &qz, 1, &q);
        npk_ref_onnx_dequantize(&q, &ds, &dz, 1, &yg);
        npk_fast_quant_dequant(xs, yf.data, n, s8, s, (float)zq, *(float *)ds.data, zd);
        CHECK(same_bits(&yf, &yg));
        npk_fast_quant_dequant(xs, xs, n, s8, s, (float)zq, *(float *)ds.data, zd); /* in place */
        CHECK(same_bits(&x, &yg));
        npk_tensor t[8] = {x, q, yg, yf, qs, ds, qz, dz};
        free_all(t, 8);
    }
}

/* ---- Clip with float bounds ----------------------------------------------------------------- */

/* Clip's float-lane path (bounds that are float values) against the golden (in double), bit for
 * bit: values inside, below and above, the bounds themselves, signed zeros against zero bounds,
 * infinities, quiet and signaling NaNs (the golden's round trip through double quiets them),
 * infinite bounds; and bounds that are not float values (the double path). */
static void test_clip(void) {
    static const double bounds[][2] = {{0, 6}, {-0.0, 0.0}, {-1.5, 1.5}, {-INFINITY, 2}, {-3, INFINITY}, {0.1, 0.7}};
    static const uint32_t special[] = {0x7f800001u, 0xffa00000u, 0x7fc00000u, 0x80000000u, 0x00000000u,
                                       0x7f800000u, 0xff800000u, 0x40c00000u, 0x00000001u, 0x3fc00000u};
    int64_t n = 1000 + (int64_t)(sizeof special / sizeof special[0]);
    for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
        npk_tensor t[3] = {rand_t(NPK_DT_FLOAT, 1, &n), mk(NPK_DT_FLOAT, 1, &n), mk(NPK_DT_FLOAT, 1, &n)};
        float *xs = t[0].data;
        for (int64_t i = 0; i < 1000; i++) xs[i] *= 8.0f;
        memcpy(xs + 1000, special, sizeof special);
        CHECK_EQ(npk_fast_unary(NPK_ONNX_CLIP, &t[0], &t[1], 0, bounds[b][0], bounds[b][1]), 0);
        npk_ref_onnx_unary(NPK_ONNX_CLIP, &t[0], &t[2], 0, bounds[b][0], bounds[b][1]);
        CHECK(same_bits(&t[1], &t[2]));
        free_all(t, 3);
    }
}

/* ---- LSTM ---------------------------------------------------------------------------------- */

static void test_lstm(void) {
    static const int acts[] = {NPK_ONNX_ACT_RELU, NPK_ONNX_ACT_TANH, NPK_ONNX_ACT_SIGMOID, NPK_ONNX_ACT_AFFINE,
                               NPK_ONNX_ACT_LEAKYRELU, NPK_ONNX_ACT_SCALEDTANH, NPK_ONNX_ACT_HARDSIGMOID,
                               NPK_ONNX_ACT_ELU, NPK_ONNX_ACT_SOFTSIGN, NPK_ONNX_ACT_SOFTPLUS};
    for (int it = 0; it < 120; it++) {
        npk_onnx_rnn p;
        memset(&p, 0, sizeof p);
        p.kind = NPK_ONNX_LSTM;
        p.dirs = 1 + (int)(rnd() % 2);
        p.reverse = p.dirs == 1 && rnd() % 2;
        p.layout = (int)(rnd() % 2);
        p.seq = 1 + rnd() % 4, p.batch = 1 + rnd() % 3, p.input = 1 + rnd() % 20, p.hidden = 1 + rnd() % 19;
        if (it == 0) p.seq = 1, p.batch = 1, p.input = 128, p.hidden = 128, p.dirs = 1, p.reverse = 0, p.layout = 0;
        p.clip = rnd() % 3 == 0 ? 0.5 + (double)(rnd() % 100) / 50 : 0;
        p.input_forget = rnd() % 4 == 0;
        int opt = it == 0 ? 0x7f : (int)rnd(); /* which optional inputs and outputs are present */
        for (int k = 0; k < 6; k++) {
            p.acts[k].fn = it % 3 ? (k % 3 ? NPK_ONNX_ACT_TANH : NPK_ONNX_ACT_SIGMOID) : acts[rnd() % 10];
            p.acts[k].alpha = 0.1 + (double)(rnd() % 10) / 10;
            p.acts[k].beta = (double)(rnd() % 10) / 20;
        }
        int64_t S = p.seq, N = p.batch, I = p.input, H = p.hidden, D = p.dirs;
        int64_t dx[3] = {p.layout ? N : S, p.layout ? S : N, I}, dw[3] = {D, 4 * H, I}, dr[3] = {D, 4 * H, H};
        int64_t db[2] = {D, 8 * H}, dp[2] = {D, 3 * H}, dl = N;
        int64_t ds[3] = {p.layout ? N : D, p.layout ? D : N, H};
        int64_t dy[4] = {p.layout ? N : S, p.layout ? S : D, p.layout ? D : N, H};
        npk_tensor X = rand_t(NPK_DT_FLOAT, 3, dx), W = rand_t(NPK_DT_FLOAT, 3, dw), R = rand_t(NPK_DT_FLOAT, 3, dr),
                   B = rand_t(NPK_DT_FLOAT, 2, db), P = rand_t(NPK_DT_FLOAT, 2, dp), h0 = rand_t(NPK_DT_FLOAT, 3, ds),
                   c0 = rand_t(NPK_DT_FLOAT, 3, ds), L = mk(rnd() % 2 ? NPK_DT_INT32 : NPK_DT_INT64, 1, &dl);
        for (int64_t n = 0; n < N; n++) {
            int64_t len = (int64_t)(rnd() % (uint32_t)(S + 1));
            if (L.dtype == NPK_DT_INT32) ((int32_t *)L.data)[n] = (int32_t)len;
            else ((int64_t *)L.data)[n] = len;
        }
        npk_tensor out[6] = {mk(NPK_DT_FLOAT, 4, dy), mk(NPK_DT_FLOAT, 3, ds), mk(NPK_DT_FLOAT, 3, ds),
                             mk(NPK_DT_FLOAT, 4, dy), mk(NPK_DT_FLOAT, 3, ds), mk(NPK_DT_FLOAT, 3, ds)};
#define O(bit, t) (opt & (bit) ? (t) : NULL)
        int rf = npk_fast_lstm(&p, &X, &W, &R, O(1, &B), O(2, &L), O(4, &h0), O(8, &c0), O(16, &P), O(32, &out[0]),
                               O(64, &out[1]), O(128, &out[2]));
        int rg = npk_ref_onnx_rnn(&p, &X, &W, &R, O(1, &B), O(2, &L), O(4, &h0), O(8, &c0), O(16, &P),
                                  O(32, &out[3]), O(64, &out[4]), O(128, &out[5]));
#undef O
        CHECK_EQ(rf, 0);
        CHECK_EQ(rg, 0);
        for (int k = 0; k < 3; k++) {
            char what[96];
            snprintf(what, sizeof what, "lstm case %d output %d", it, k);
            if (opt & (32 << k)) CHECK(close_f(&out[k], &out[k + 3], what));
        }
        npk_tensor t[8] = {X, W, R, B, P, h0, c0, L};
        free_all(t, 8);
        free_all(out, 6);
    }
    /* GRU and RNN stay with the golden */
    npk_onnx_rnn q;
    memset(&q, 0, sizeof q);
    q.kind = NPK_ONNX_GRU;
    int64_t d3[3] = {1, 1, 1};
    npk_tensor t = rand_t(NPK_DT_FLOAT, 3, d3);
    CHECK_EQ(npk_fast_lstm(&q, &t, &t, &t, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), 1);
    npk_tensor_free(&t);
}

int main(int argc, char **argv) {
    const char *shared = argc > 1 ? argv[1] : NPUKIT_SHARED_DIR;
    uint64_t seed = rs;
    FOR_EACH_ISA(l) { /* each level's copies of the loops, on the same cases */
        rs = seed;
        test_qgemm();
        test_conv_narrow();
        test_lstm();
        test_quant_dequant();
        test_clip();
    }
    CHECK_EQ(npk_isa_force(NPK_ISA_AUTO), 0);
    test_slice();
    test_pad();
    char d[512];
    snprintf(d, sizeof d, "%.400s/models/onnx-zoo/silero-vad-v5", shared);
    test_model(d, 0);
    return CHECK_DONE();
}
