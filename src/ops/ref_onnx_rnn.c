// SPDX-License-Identifier: MIT
/* CPU reference ONNX RNN, GRU and LSTM: every direction, sequence lengths,
 * initial states, peepholes, clip, input_forget, linear_before_reset, both
 * layouts and the activation functions of the spec. Double precision. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ref_onnx.h"

#define GF(t, i) npk_ref_onnx_get_f((t)->data, (t)->dtype, (i))

static double act(const npk_onnx_act *a, double x) {
    switch (a->fn) {
    case NPK_ONNX_ACT_RELU: return x > 0 ? x : 0;
    case NPK_ONNX_ACT_TANH: return tanh(x);
    case NPK_ONNX_ACT_SIGMOID: return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
    case NPK_ONNX_ACT_AFFINE: return a->alpha * x + a->beta;
    case NPK_ONNX_ACT_LEAKYRELU: return x < 0 ? a->alpha * x : x;
    case NPK_ONNX_ACT_THRESHOLDEDRELU: return x > a->alpha ? x : 0;
    case NPK_ONNX_ACT_SCALEDTANH: return a->alpha * tanh(a->beta * x);
    case NPK_ONNX_ACT_HARDSIGMOID: return fmax(0, fmin(1, a->alpha * x + a->beta));
    case NPK_ONNX_ACT_ELU: return x < 0 ? a->alpha * (exp(x) - 1) : x;
    case NPK_ONNX_ACT_SOFTSIGN: return x / (1 + fabs(x));
    case NPK_ONNX_ACT_SOFTPLUS: return log1p(exp(x));
    default: return x;
    }
}

static double clipv(const npk_onnx_rnn *p, double v) {
    if (p->clip > 0) v = v < -p->clip ? -p->clip : v > p->clip ? p->clip : v;
    return v;
}

int npk_ref_onnx_rnn(const npk_onnx_rnn *p, const npk_tensor *X, const npk_tensor *W, const npk_tensor *R,
                     const npk_tensor *B, const npk_tensor *lens, const npk_tensor *h0, const npk_tensor *c0,
                     const npk_tensor *P, npk_tensor *Y, npk_tensor *Yh, npk_tensor *Yc) {
    int64_t S = p->seq, N = p->batch, I = p->input, H = p->hidden, G = p->kind == NPK_ONNX_LSTM ? 4 : p->kind == NPK_ONNX_GRU ? 3 : 1;
    double *h = calloc((size_t)(N * H), sizeof(double)), *c = calloc((size_t)(N * H), sizeof(double));
    double *g = calloc((size_t)(G * H), sizeof(double)), *hn = calloc((size_t)H, sizeof(double));
    if (!h || !c || !g || !hn) {
        free(h);
        free(c);
        free(g);
        free(hn);
        return -NPK_ENOMEM;
    }
    if (Y) memset(Y->data, 0, npk_tensor_bytes(Y));
    for (int dir = 0; dir < p->dirs; dir++) {
        int rev = p->reverse || dir == 1;
        const npk_onnx_act *af = &p->acts[dir * 3], *ag = &p->acts[dir * 3 + 1], *ah = &p->acts[dir * 3 + 2];
        int64_t wo = (int64_t)dir * G * H * I, ro = (int64_t)dir * G * H * H, bo = (int64_t)dir * 2 * G * H;
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < H; k++) {
                int64_t si = p->layout ? (n * p->dirs + dir) * H + k : ((int64_t)dir * N + n) * H + k;
                h[n * H + k] = h0 ? GF(h0, si) : 0;
                c[n * H + k] = c0 ? GF(c0, si) : 0;
            }
        for (int64_t n = 0; n < N; n++) {
            int64_t L = lens ? npk_ref_onnx_get_i(lens->data, lens->dtype, n) : S;
            if (L < 0 || L > S) L = S;
            double *hb = &h[n * H], *cb = &c[n * H];
            for (int64_t step = 0; step < L; step++) {
                int64_t t = rev ? L - 1 - step : step;
                int64_t xo = p->layout ? (n * S + t) * I : (t * N + n) * I;
                /* gate pre-activations: x W^T + bias (and h R^T except GRU's h gate) */
                for (int64_t q = 0; q < G * H; q++) {
                    double s = 0;
                    for (int64_t i = 0; i < I; i++) s += GF(X, xo + i) * GF(W, wo + q * I + i);
                    if (B) s += GF(B, bo + q);
                    int gru_h = p->kind == NPK_ONNX_GRU && q >= 2 * H;
                    if (!gru_h) {
                        for (int64_t j = 0; j < H; j++) s += hb[j] * GF(R, ro + q * H + j);
                        if (B) s += GF(B, bo + G * H + q);
                    }
                    g[q] = s;
                }
                if (p->kind == NPK_ONNX_RNN) {
                    for (int64_t k = 0; k < H; k++) hn[k] = act(af, clipv(p, g[k]));
                } else if (p->kind == NPK_ONNX_GRU) {
                    /* order z, r, h; the gates first (r multiplies H_{t-1} elementwise before Rh) */
                    for (int64_t k = 0; k < 2 * H; k++) g[k] = act(af, clipv(p, g[k]));
                    for (int64_t k = 0; k < H; k++) {
                        double z = g[k], r = g[H + k];
                        double rh = 0;
                        if (p->linear_before_reset) {
                            for (int64_t j = 0; j < H; j++) rh += hb[j] * GF(R, ro + (2 * H + k) * H + j);
                            if (B) rh += GF(B, bo + G * H + 2 * H + k);
                            rh *= r;
                        } else {
                            for (int64_t j = 0; j < H; j++) rh += g[H + j] * hb[j] * GF(R, ro + (2 * H + k) * H + j);
                            if (B) rh += GF(B, bo + G * H + 2 * H + k);
                        }
                        double ht = act(ag, clipv(p, g[2 * H + k] + rh));
                        hn[k] = (1 - z) * ht + z * hb[k];
                    }
                } else {
                    /* order i, o, f, c; peepholes P = [pi, po, pf] */
                    int64_t po = (int64_t)dir * 3 * H;
                    for (int64_t k = 0; k < H; k++) {
                        double pi = P ? GF(P, po + k) : 0, pO = P ? GF(P, po + H + k) : 0, pf = P ? GF(P, po + 2 * H + k) : 0;
                        double it = act(af, clipv(p, g[k] + pi * cb[k]));
                        double ft = p->input_forget ? 1 - it : act(af, clipv(p, g[2 * H + k] + pf * cb[k]));
                        double ct = act(ag, clipv(p, g[3 * H + k]));
                        double cn = ft * cb[k] + it * ct;
                        double ot = act(af, clipv(p, g[H + k] + pO * cn));
                        cb[k] = cn;
                        hn[k] = ot * act(ah, cn);
                    }
                }
                memcpy(hb, hn, sizeof(double) * (size_t)H);
                if (Y)
                    for (int64_t k = 0; k < H; k++) {
                        int64_t yo = p->layout ? ((n * S + t) * p->dirs + dir) * H + k : ((t * p->dirs + dir) * N + n) * H + k;
                        npk_ref_onnx_set_f(Y->data, Y->dtype, yo, hb[k]);
                    }
            }
        }
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < H; k++) {
                int64_t so = p->layout ? (n * p->dirs + dir) * H + k : ((int64_t)dir * N + n) * H + k;
                if (Yh) npk_ref_onnx_set_f(Yh->data, Yh->dtype, so, h[n * H + k]);
                if (Yc) npk_ref_onnx_set_f(Yc->data, Yc->dtype, so, c[n * H + k]);
            }
    }
    free(h);
    free(c);
    free(g);
    free(hn);
    return 0;
}
