// SPDX-License-Identifier: MIT
/* Fast CPU kernels for what small models spend their time in (issue 15
 * point 2: hello-deepa-qdq-s8, silero-vad-v5): the GEMV-shaped QGemm of a
 * quantized fully connected layer, Slice, and LSTM. Built at -O3 like fast_onnx.c; the naive
 * golden kernels stay the reference (tests/test_onnx_fast_small.c). */
#include "ops/fast_onnx.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "npukit/gemm.h"

/* No multiply and add fused implicitly (the LSTM's gate arithmetic; GCC does not in ISO C
 * mode, clang would). */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* ---- QGemm --------------------------------------------------------------------------------- */

/* Products of one K-chunk (at most QK elements, so that no int32 sum of
 * 255 * 255 products overflows). */
enum { QK = 32768 };

/* s[j] = sum_k a[k] * b[j][k] (B^T: rows of K contiguous), j < N. */
#define DOT_ROWS(NAME, TB)                                                                                            \
    NPK_ISA_CLONES_VOID(NAME, (const int16_t *a, const TB *b, int64_t ldb, int64_t K, int64_t N, int64_t *s),          \
                        (a, b, ldb, K, N, s)) {                                                                        \
        for (int64_t j = 0; j < N; j++) {                                                                             \
            const TB *r = b + j * ldb;                                                                                \
            int32_t acc = 0;                                                                                          \
            for (int64_t k = 0; k < K; k++) acc += (int32_t)a[k] * (int32_t)r[k];                                     \
            s[j] += acc;                                                                                              \
        }                                                                                                             \
    }
DOT_ROWS(dot_rows_s8, int8_t)
DOT_ROWS(dot_rows_u8, uint8_t)

/* s[j] += sum_k a[k] * b[k][j] (B: rows of N contiguous), through an int32 row. */
#define AXPY_ROWS(NAME, TB)                                                                                           \
    NPK_ISA_CLONES_VOID(NAME, (const int16_t *a, const TB *b, int64_t ldb, int64_t K, int64_t N, int32_t *t),          \
                        (a, b, ldb, K, N, t)) {                                                                        \
        memset(t, 0, sizeof(int32_t) * (size_t)N);                                                                    \
        for (int64_t k = 0; k < K; k++) {                                                                             \
            const TB *r = b + k * ldb;                                                                                \
            int32_t ak = a[k];                                                                                        \
            for (int64_t j = 0; j < N; j++) t[j] += ak * (int32_t)r[j];                                               \
        }                                                                                                             \
    }
AXPY_ROWS(axpy_rows_s8, int8_t)
AXPY_ROWS(axpy_rows_u8, uint8_t)

static int q8(int dt) { return dt == NPK_DT_INT8 || dt == NPK_DT_UINT8; }

static int64_t q8_get(const npk_tensor *t, int64_t i) {
    return t->dtype == NPK_DT_INT8 ? ((const int8_t *)t->data)[i] : ((const uint8_t *)t->data)[i];
}

int npk_fast_qgemm(const npk_tensor *a, const npk_tensor *b, int trans_b, int64_t a_zp, const npk_tensor *b_zp,
                   const npk_tensor *bias, const float *mult, int64_t n_mult, int64_t y_zp, npk_tensor *y) {
    if (a->rank != 2 || b->rank != 2 || !q8(a->dtype) || !q8(b->dtype) || !q8(y->dtype) ||
        (b_zp && !q8(b_zp->dtype)) || (bias && bias->dtype != NPK_DT_INT32))
        return 1;
    int64_t M = a->dims[0], K = a->dims[1], N = trans_b ? b->dims[0] : b->dims[1];
    if ((trans_b ? b->dims[1] : b->dims[0]) != K || y->rank != 2 || y->dims[0] != M || y->dims[1] != N) return 1;
    int64_t nbz = b_zp ? npk_tensor_numel(b_zp) : 0, nbias = bias ? npk_tensor_numel(bias) : 0;
    int16_t *a16 = malloc(sizeof(int16_t) * (size_t)(K ? K : 1));
    int64_t *s = malloc(sizeof(int64_t) * (size_t)(N ? N : 1));
    int32_t *t = malloc(sizeof(int32_t) * (size_t)(N ? N : 1));
    if (!a16 || !s || !t) {
        free(a16), free(s), free(t);
        return -NPK_ENOMEM;
    }
    int sb = b->dtype == NPK_DT_INT8;
    for (int64_t m = 0; m < M; m++) {
        int64_t asum = 0;
        for (int64_t k = 0; k < K; k++) asum += a16[k] = (int16_t)(q8_get(a, m * K + k) - a_zp);
        memset(s, 0, sizeof(int64_t) * (size_t)N);
        for (int64_t k0 = 0; k0 < K; k0 += QK) {
            int64_t kn = K - k0 < QK ? K - k0 : QK;
            if (trans_b) {
                if (sb) dot_rows_s8(a16 + k0, (const int8_t *)b->data + k0, K, kn, N, s);
                else dot_rows_u8(a16 + k0, (const uint8_t *)b->data + k0, K, kn, N, s);
            } else {
                if (sb) axpy_rows_s8(a16 + k0, (const int8_t *)b->data + k0 * N, N, kn, N, t);
                else axpy_rows_u8(a16 + k0, (const uint8_t *)b->data + k0 * N, N, kn, N, t);
                for (int64_t j = 0; j < N; j++) s[j] += t[j];
            }
        }
        for (int64_t j = 0; j < N; j++) {
            /* sum (a - az)(b - bz) = sum (a - az) b - bz sum (a - az), exactly in int64 */
            int64_t bz = nbz ? q8_get(b_zp, nbz > 1 ? j : 0) : 0;
            int64_t acc = s[j] - bz * asum + (nbias ? ((const int32_t *)bias->data)[nbias > 1 ? j : 0] : 0);
            int64_t q = npk_ref_onnx_requant((int64_t)(int32_t)acc, mult[n_mult > 1 ? j : 0], y_zp, y->dtype);
            if (y->dtype == NPK_DT_INT8) ((int8_t *)y->data)[m * N + j] = (int8_t)q;
            else ((uint8_t *)y->data)[m * N + j] = (uint8_t)q;
        }
    }
    free(a16), free(s), free(t);
    return 0;
}

/* ---- Slice --------------------------------------------------------------------------------- */

int npk_fast_slice(const npk_tensor *x, const int64_t *start, const int64_t *step, npk_tensor *y) {
    size_t es = npk_dtype_size(y->dtype);
    if (x->dtype != y->dtype || x->rank != y->rank || y->dtype == NPK_DT_STRING || !(es == 1 || es == 2 || es == 4 || es == 8))
        return 1;
    int r = y->rank;
    int64_t n = npk_tensor_numel(y);
    if (!n) return 0;
    if (r == 0) {
        memcpy(y->data, x->data, es);
        return 0;
    }
    /* source strides (elements) of x, and the source step per output step in each dim */
    int64_t xs[NPK_MAX_RANK], idx[NPK_MAX_RANK] = {0}, off = 0;
    xs[r - 1] = 1;
    for (int d = r - 2; d >= 0; d--) xs[d] = xs[d + 1] * x->dims[d + 1];
    for (int d = 0; d < r; d++) off += start[d] * xs[d];
    int64_t row = y->dims[r - 1], s = step[r - 1];
    const uint8_t *src = x->data;
    uint8_t *dst = y->data;
    for (int64_t done = 0; done < n; done += row) {
        const uint8_t *p = src + (size_t)off * es;
        if (s == 1) {
            memcpy(dst, p, (size_t)row * es);
        } else {
            switch (es) {
            case 1: for (int64_t j = 0; j < row; j++) dst[j] = p[j * s]; break;
            case 2: for (int64_t j = 0; j < row; j++) memcpy(dst + 2 * j, p + 2 * j * s, 2); break;
            case 4: for (int64_t j = 0; j < row; j++) memcpy(dst + 4 * j, p + 4 * j * s, 4); break;
            default: for (int64_t j = 0; j < row; j++) memcpy(dst + 8 * j, p + 8 * j * s, 8); break;
            }
        }
        dst += (size_t)row * es;
        /* next row: odometer over dims r-2 .. 0 */
        for (int d = r - 2; d >= 0; d--) {
            off += step[d] * xs[d];
            if (++idx[d] < y->dims[d]) break;
            off -= step[d] * xs[d] * y->dims[d];
            idx[d] = 0;
        }
    }
    return 0;
}

/* ---- Pad ----------------------------------------------------------------------------------- */

/* Source index of output index o along an axis of length len padded by pb before (the golden's
 * rule for each mode); -1: the constant. */
static int64_t pad_src(int64_t o, int64_t pb, int64_t len, int mode) {
    int64_t v = o - pb;
    if (v >= 0 && v < len) return v;
    if (mode == NPK_ONNX_PAD_CONSTANT || len == 0) return -1;
    if (mode == NPK_ONNX_PAD_EDGE) return v < 0 ? 0 : len - 1;
    if (mode == NPK_ONNX_PAD_WRAP) return ((v % len) + len) % len;
    int64_t period = len > 1 ? 2 * (len - 1) : 1; /* reflect, without repeating the edge */
    v = ((v % period) + period) % period;
    return v >= len ? period - v : v;
}

int npk_fast_pad(const npk_tensor *x, const int64_t *pad_b, int mode, const void *cval, npk_tensor *y) {
    size_t es = npk_dtype_size(y->dtype);
    if (x->dtype != y->dtype || x->rank != y->rank || y->rank < 1 || y->dtype == NPK_DT_STRING || !es || es > 8) return 1;
    int r = y->rank;
    int64_t n = npk_tensor_numel(y), W = y->dims[r - 1], XW = x->dims[r - 1], pw = pad_b[r - 1];
    if (!n) return 0;
    /* the last axis once: the source column of every output column (-1: the constant) */
    int64_t *col = malloc(sizeof(int64_t) * (size_t)W);
    if (!col) return 1;
    int64_t lo = W, hi = 0; /* [lo, hi): the columns copied in one run (source lo - pw ...) */
    for (int64_t j = 0; j < W; j++) {
        col[j] = pad_src(j, pw, XW, mode);
        if (j - pw >= 0 && j - pw < XW) {
            if (j < lo) lo = j;
            hi = j + 1;
        }
    }
    int64_t idx[NPK_MAX_RANK] = {0}, xs[NPK_MAX_RANK];
    xs[r - 1] = 1;
    for (int d = r - 2; d >= 0; d--) xs[d] = xs[d + 1] * x->dims[d + 1];
    const uint8_t *src = x->data;
    uint8_t *dst = y->data;
    for (int64_t done = 0; done < n; done += W, dst += (size_t)W * es) {
        int64_t off = 0, d;
        for (d = 0; d < r - 1; d++) {
            int64_t v = pad_src(idx[d], pad_b[d], x->dims[d], mode);
            if (v < 0) break;
            off += v * xs[d];
        }
        if (d < r - 1) { /* a constant row */
            for (int64_t j = 0; j < W; j++) memcpy(dst + (size_t)j * es, cval, es);
        } else {
            const uint8_t *row = src + (size_t)off * es;
            for (int64_t j = 0; j < lo && j < W; j++) memcpy(dst + (size_t)j * es, col[j] < 0 ? cval : row + (size_t)col[j] * es, es);
            if (hi > lo) memcpy(dst + (size_t)lo * es, row + (size_t)(lo - pw) * es, (size_t)(hi - lo) * es);
            for (int64_t j = hi > lo ? hi : W; j < W; j++)
                memcpy(dst + (size_t)j * es, col[j] < 0 ? cval : row + (size_t)col[j] * es, es);
        }
        for (d = r - 2; d >= 0; d--) { /* next row: odometer over the outer axes */
            if (++idx[d] < y->dims[d]) break;
            idx[d] = 0;
        }
    }
    free(col);
    return 0;
}

/* ---- LSTM ---------------------------------------------------------------------------------- */

static float actf(const npk_onnx_act *a, float x) {
    switch (a->fn) {
    case NPK_ONNX_ACT_RELU: return x > 0 ? x : 0;
    case NPK_ONNX_ACT_TANH: return tanhf(x);
    case NPK_ONNX_ACT_SIGMOID: return x >= 0 ? 1 / (1 + expf(-x)) : expf(x) / (1 + expf(x));
    case NPK_ONNX_ACT_AFFINE: return (float)(a->alpha * x + a->beta);
    case NPK_ONNX_ACT_LEAKYRELU: return x < 0 ? (float)(a->alpha * x) : x;
    case NPK_ONNX_ACT_THRESHOLDEDRELU: return x > a->alpha ? x : 0;
    case NPK_ONNX_ACT_SCALEDTANH: return (float)(a->alpha * tanh(a->beta * x));
    case NPK_ONNX_ACT_HARDSIGMOID: return (float)fmax(0, fmin(1, a->alpha * x + a->beta));
    case NPK_ONNX_ACT_ELU: return x < 0 ? (float)(a->alpha * (exp(x) - 1)) : x;
    case NPK_ONNX_ACT_SOFTSIGN: return x / (1 + fabsf(x));
    case NPK_ONNX_ACT_SOFTPLUS: return (float)log1p(exp(x));
    default: return x;
    }
}

static int f32(const npk_tensor *t) { return !t || t->dtype == NPK_DT_FLOAT; }

int npk_fast_lstm(const npk_onnx_rnn *p, const npk_tensor *X, const npk_tensor *W, const npk_tensor *R,
                  const npk_tensor *B, const npk_tensor *lens, const npk_tensor *h0, const npk_tensor *c0,
                  const npk_tensor *P, npk_tensor *Y, npk_tensor *Yh, npk_tensor *Yc) {
    if (p->kind != NPK_ONNX_LSTM || !f32(X) || !f32(W) || !f32(R) || !f32(B) || !f32(h0) || !f32(c0) || !f32(P) ||
        !f32(Y) || !f32(Yh) || !f32(Yc) || (lens && lens->dtype != NPK_DT_INT32 && lens->dtype != NPK_DT_INT64))
        return 1;
    const int64_t S = p->seq, N = p->batch, I = p->input, H = p->hidden, G4 = 4 * H;
    const float *x = X->data, *w = W->data, *rr = R->data, *b = B ? B->data : NULL, *pp = P ? P->data : NULL;
    float clip = (float)p->clip;
    /* xp[(t * N + n) * 4H + q]: x W^T + Wb + Rb for every step, one pass over W per row */
    size_t nxp = (size_t)(S * N * G4) + 1, nh = (size_t)(N * H) + 1;
    float *xp = malloc(sizeof(float) * nxp), *h = malloc(sizeof(float) * nh), *c = malloc(sizeof(float) * nh);
    float *g = malloc(sizeof(float) * (size_t)(G4 + 1));
    if (!xp || !h || !c || !g) {
        free(xp), free(h), free(c), free(g);
        return -NPK_ENOMEM;
    }
    if (Y) memset(Y->data, 0, npk_tensor_bytes(Y));
    for (int dir = 0; dir < p->dirs; dir++) {
        int rev = p->reverse || dir == 1;
        const npk_onnx_act *af = &p->acts[dir * 3], *ag = &p->acts[dir * 3 + 1], *ah = &p->acts[dir * 3 + 2];
        const float *wd = w + (int64_t)dir * G4 * I, *rd = rr + (int64_t)dir * G4 * H;
        const float *bw = b ? b + (int64_t)dir * 2 * G4 : NULL, *br = bw ? bw + G4 : NULL;
        const float *pd = pp ? pp + (int64_t)dir * 3 * H : NULL;
        for (int64_t t = 0; t < S; t++)
            for (int64_t n = 0; n < N; n++) {
                const float *xr = x + (p->layout ? (n * S + t) * I : (t * N + n) * I);
                float *o = xp + (t * N + n) * G4;
                npk_gemm_f32_nt(G4, 1, I, wd, I, xr, I, o, 1, 0); /* the 4H dot products, W read once */
                if (bw)
                    for (int64_t q = 0; q < G4; q++) o[q] += bw[q] + br[q];
            }
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < H; k++) {
                int64_t si = p->layout ? (n * p->dirs + dir) * H + k : ((int64_t)dir * N + n) * H + k;
                h[n * H + k] = h0 ? ((const float *)h0->data)[si] : 0;
                c[n * H + k] = c0 ? ((const float *)c0->data)[si] : 0;
            }
        for (int64_t n = 0; n < N; n++) {
            int64_t L = lens ? (lens->dtype == NPK_DT_INT32 ? ((const int32_t *)lens->data)[n]
                                                            : ((const int64_t *)lens->data)[n])
                             : S;
            if (L < 0 || L > S) L = S;
            float *hb = h + n * H, *cb = c + n * H;
            for (int64_t step = 0; step < L; step++) {
                int64_t t = rev ? L - 1 - step : step;
                const float *o = xp + (t * N + n) * G4;
                memcpy(g, o, sizeof(float) * (size_t)G4);
                npk_gemm_f32_nt(G4, 1, H, rd, H, hb, H, g, 1, 1); /* g = o + h R^T */
                /* order i, o, f, c; peepholes [pi, po, pf] */
#define CLIPF(v) (clip > 0 ? ((v) < -clip ? -clip : (v) > clip ? clip : (v)) : (v))
                for (int64_t k = 0; k < H; k++) {
                    float pi = pd ? pd[k] : 0, po = pd ? pd[H + k] : 0, pf = pd ? pd[2 * H + k] : 0;
                    float it = actf(af, CLIPF(g[k] + pi * cb[k]));
                    float ft = p->input_forget ? 1 - it : actf(af, CLIPF(g[2 * H + k] + pf * cb[k]));
                    float ct = actf(ag, CLIPF(g[3 * H + k]));
                    float cn = ft * cb[k] + it * ct;
                    float ot = actf(af, CLIPF(g[H + k] + po * cn));
                    cb[k] = cn;
                    hb[k] = ot * actf(ah, cn);
                }
#undef CLIPF
                if (Y) {
                    float *yo = (float *)Y->data + (p->layout ? ((n * S + t) * p->dirs + dir) * H
                                                              : ((t * p->dirs + dir) * N + n) * H);
                    memcpy(yo, hb, sizeof(float) * (size_t)H);
                }
            }
        }
        for (int64_t n = 0; n < N; n++) {
            int64_t so = p->layout ? (n * p->dirs + dir) * H : ((int64_t)dir * N + n) * H;
            if (Yh) memcpy((float *)Yh->data + so, h + n * H, sizeof(float) * (size_t)H);
            if (Yc) memcpy((float *)Yc->data + so, c + n * H, sizeof(float) * (size_t)H);
        }
    }
    free(xp), free(h), free(c), free(g);
    return 0;
}
