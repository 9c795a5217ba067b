// SPDX-License-Identifier: MIT
/* CPU reference ONNX operators: ConvTranspose, Resize/Upsample,
 * InstanceNormalization, LRN, MeanVarianceNormalization, LpPool. Floats in
 * double, rounded once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ref_onnx.h"

#define GF(t, i) npk_ref_onnx_get_f((t)->data, (t)->dtype, (i))

void npk_ref_onnx_conv_transpose(const npk_onnx_conv_params *p, const npk_tensor *x, const npk_tensor *w,
                                 const npk_tensor *b, npk_tensor *y) {
    int64_t cg = p->c / p->group, mg = p->m / p->group;
    int64_t osz = p->out[0] * p->out[1] * p->out[2], isz = p->in[0] * p->in[1] * p->in[2];
    int64_t ksz = p->k[0] * p->k[1] * p->k[2], ny = npk_tensor_numel(y);
    double *acc = calloc((size_t)(ny ? ny : 1), sizeof(double));
    if (!acc) return;
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t g = 0; g < p->group; g++)
            for (int64_t ic = 0; ic < cg; ic++) {
                int64_t xc = g * cg + ic;
                for (int64_t i0 = 0; i0 < p->in[0]; i0++)
                    for (int64_t i1 = 0; i1 < p->in[1]; i1++)
                        for (int64_t i2 = 0; i2 < p->in[2]; i2++) {
                            double xv = GF(x, (n * p->c + xc) * isz + (i0 * p->in[1] + i1) * p->in[2] + i2);
                            for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
                                int64_t o0 = i0 * p->stride[0] + k0 * p->dil[0] - p->pad_b[0];
                                if (o0 < 0 || o0 >= p->out[0]) continue;
                                for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
                                    int64_t o1 = i1 * p->stride[1] + k1 * p->dil[1] - p->pad_b[1];
                                    if (o1 < 0 || o1 >= p->out[1]) continue;
                                    for (int64_t k2 = 0; k2 < p->k[2]; k2++) {
                                        int64_t o2 = i2 * p->stride[2] + k2 * p->dil[2] - p->pad_b[2];
                                        if (o2 < 0 || o2 >= p->out[2]) continue;
                                        for (int64_t oc = 0; oc < mg; oc++) {
                                            double wv = GF(w, (xc * mg + oc) * ksz + (k0 * p->k[1] + k1) * p->k[2] + k2);
                                            acc[(n * p->m + g * mg + oc) * osz + (o0 * p->out[1] + o1) * p->out[2] + o2] +=
                                                xv * wv;
                                        }
                                    }
                                }
                            }
                        }
            }
    for (int64_t i = 0; i < ny; i++) {
        double v = acc[i];
        if (b) v += GF(b, (i / osz) % p->m);
        npk_ref_onnx_set_f(y->data, y->dtype, i, v);
    }
    free(acc);
}

/* ---- Resize ------------------------------------------------------------------ */

static double cubic_w(double s, double a) { /* Keys kernel at distance s >= 0 */
    s = fabs(s);
    if (s <= 1) return ((a + 2) * s - (a + 3)) * s * s + 1;
    if (s < 2) return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
    return 0;
}

/* Taps of one output coordinate along one dim: up to 4 (index, weight); n = 0 means
 * extrapolate (tf_crop_and_resize outside the input). */
typedef struct taps {
    int n;
    int64_t idx[4];
    double w[4];
} taps;

static void dim_taps(const npk_onnx_resize *r, int d, int64_t len_in, int64_t len_out, int64_t xo, taps *t) {
    double scale = r->scales[d], x = (double)xo, xi;
    double out_w = scale * (double)len_in; /* the ONNX reference's (float) output width */
    switch (r->coord) {
    case NPK_ONNX_RS_ALIGN_CORNERS: xi = out_w == 1 ? 0 : x * (double)(len_in - 1) / (out_w - 1); break;
    case NPK_ONNX_RS_ASYMMETRIC: xi = x / scale; break;
    case NPK_ONNX_RS_PYTORCH_HALF_PIXEL: xi = len_out > 1 ? (x + 0.5) / scale - 0.5 : -0.5; break;
    case NPK_ONNX_RS_TF_HALF_PIXEL_FOR_NN: xi = (x + 0.5) / scale; break;
    case NPK_ONNX_RS_TF_CROP_AND_RESIZE: {
        double s = r->roi[d], e = r->roi[r->rank + d];
        xi = out_w == 1 ? (e - s) * (double)(len_in - 1) / 2 : x * (e - s) * (double)(len_in - 1) / (out_w - 1);
        xi += s * (double)(len_in - 1);
        if (xi < 0 || xi > (double)(len_in - 1)) {
            t->n = 0;
            return;
        }
        break;
    }
    default: xi = (x + 0.5) / scale - 0.5; break; /* half_pixel */
    }
    double fl = floor(xi), ratio = xi - fl;
    int64_t base = (int64_t)fl;
    if (r->mode == NPK_ONNX_RS_NEAREST) {
        int up;
        switch (r->nearest) {
        case NPK_ONNX_RS_ROUND_PREFER_CEIL: up = ratio >= 0.5; break;
        case NPK_ONNX_RS_FLOOR: up = 0; break;
        case NPK_ONNX_RS_CEIL: up = ratio > 0; break;
        default: up = ratio > 0.5; break; /* round_prefer_floor */
        }
        int64_t i = base + up;
        t->n = 1;
        t->idx[0] = i < 0 ? 0 : i >= len_in ? len_in - 1 : i;
        t->w[0] = 1;
        return;
    }
    if (r->mode == NPK_ONNX_RS_LINEAR) {
        t->n = 2;
        t->idx[0] = base;
        t->idx[1] = base + 1;
        t->w[0] = 1 - ratio;
        t->w[1] = ratio;
    } else {
        t->n = 4;
        for (int k = 0; k < 4; k++) {
            t->idx[k] = base - 1 + k;
            t->w[k] = cubic_w(ratio - (double)(k - 1), r->cubic_a);
        }
    }
    if (r->exclude_outside) {
        double s = 0;
        for (int k = 0; k < t->n; k++) {
            if (t->idx[k] < 0 || t->idx[k] >= len_in) t->w[k] = 0;
            s += t->w[k];
        }
        for (int k = 0; k < t->n; k++) t->w[k] = s != 0 ? t->w[k] / s : 0;
    }
    for (int k = 0; k < t->n; k++) t->idx[k] = t->idx[k] < 0 ? 0 : t->idx[k] >= len_in ? len_in - 1 : t->idx[k];
}

int npk_ref_onnx_resize(const npk_onnx_resize *r, const npk_tensor *x, npk_tensor *y) {
    int R = x->rank;
    taps *tp[NPK_MAX_RANK] = {0};
    int rc = 0;
    for (int d = 0; d < R; d++) {
        tp[d] = malloc(sizeof(taps) * (size_t)(y->dims[d] ? y->dims[d] : 1));
        if (!tp[d]) {
            rc = -NPK_ENOMEM;
            goto out;
        }
        for (int64_t o = 0; o < y->dims[d]; o++) dim_taps(r, d, x->dims[d], y->dims[d], o, &tp[d][o]);
    }
    int64_t ny = npk_tensor_numel(y), idx[NPK_MAX_RANK] = {0};
    for (int64_t i = 0; i < ny; i++) {
        const taps *t[NPK_MAX_RANK];
        int extrap = 0;
        for (int d = 0; d < R; d++) {
            t[d] = &tp[d][idx[d]];
            if (!t[d]->n) extrap = 1;
        }
        double v = 0;
        if (extrap) {
            v = r->extrapolation;
        } else {
            v = -0.0; /* the identity of the sum: a -0.0 taken whole (nearest) stays -0.0 */
            int k[NPK_MAX_RANK] = {0};
            for (;;) { /* every combination of taps */
                double wgt = 1;
                int64_t off = 0;
                for (int d = 0; d < R; d++) {
                    wgt *= t[d]->w[k[d]];
                    off = off * x->dims[d] + t[d]->idx[k[d]];
                }
                if (wgt != 0) v += wgt * GF(x, off);
                int d = R - 1;
                while (d >= 0 && ++k[d] == t[d]->n) k[d--] = 0;
                if (d < 0) break;
            }
        }
        if (npk_dtype_is_int(y->dtype)) npk_ref_onnx_set_i(y->data, y->dtype, i, npk_ref_onnx_saturate(y->dtype, (int64_t)nearbyint(v)));
        else npk_ref_onnx_set_f(y->data, y->dtype, i, v);
        for (int d = R - 1; d >= 0; d--) {
            if (++idx[d] < y->dims[d]) break;
            idx[d] = 0;
        }
    }
out:
    for (int d = 0; d < R; d++) free(tp[d]);
    return rc;
}

/* ---- normalisations ---------------------------------------------------------------- */

void npk_ref_onnx_instance_norm(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *bias, double eps,
                                npk_tensor *y) {
    int64_t N = x->dims[0], C = x->dims[1], S = 1;
    for (int d = 2; d < x->rank; d++) S *= x->dims[d];
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            int64_t base = (n * C + c) * S;
            double m = 0, v = 0;
            for (int64_t i = 0; i < S; i++) m += GF(x, base + i);
            m /= (double)S;
            for (int64_t i = 0; i < S; i++) v += (GF(x, base + i) - m) * (GF(x, base + i) - m);
            v /= (double)S;
            double inv = 1 / sqrt(v + eps), sc = GF(scale, c), bi = GF(bias, c);
            for (int64_t i = 0; i < S; i++) npk_ref_onnx_set_f(y->data, y->dtype, base + i, (GF(x, base + i) - m) * inv * sc + bi);
        }
}

void npk_ref_onnx_lrn(const npk_tensor *x, int64_t size, double alpha, double beta, double bias, npk_tensor *y) {
    int64_t N = x->dims[0], C = x->dims[1], S = 1;
    for (int d = 2; d < x->rank; d++) S *= x->dims[d];
    int64_t lo = (size - 1) / 2, hi = (size - 1) - lo; /* floor((size-1)/2) before, ceil after */
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < S; i++) {
                double sq = 0;
                for (int64_t k = c - lo; k <= c + hi; k++)
                    if (k >= 0 && k < C) {
                        double v = GF(x, (n * C + k) * S + i);
                        sq += v * v;
                    }
                int64_t at = (n * C + c) * S + i;
                npk_ref_onnx_set_f(y->data, y->dtype, at, GF(x, at) / pow(bias + alpha / (double)size * sq, beta));
            }
}

void npk_ref_onnx_mvn(const npk_tensor *x, const int *red, npk_tensor *y) {
    int64_t n = npk_tensor_numel(x), ng = 1, idx[NPK_MAX_RANK] = {0};
    for (int d = 0; d < x->rank; d++)
        if (!red[d]) ng *= x->dims[d];
    double *s = calloc((size_t)ng, sizeof(double)), *s2 = calloc((size_t)ng, sizeof(double));
    if (!s || !s2) {
        free(s);
        free(s2);
        return;
    }
    int64_t cnt = ng ? n / ng : 0;
    for (int pass = 0; pass < 2; pass++) {
        memset(idx, 0, sizeof idx);
        for (int64_t i = 0; i < n; i++) {
            int64_t g = 0;
            for (int d = 0; d < x->rank; d++)
                if (!red[d]) g = g * x->dims[d] + idx[d];
            double v = GF(x, i);
            if (pass == 0) {
                s[g] += v;
                s2[g] += v * v;
            } else {
                double m = s[g] / (double)cnt, var = s2[g] / (double)cnt - m * m;
                npk_ref_onnx_set_f(y->data, y->dtype, i, (v - m) / (sqrt(var) + 1e-9));
            }
            for (int d = x->rank - 1; d >= 0; d--) {
                if (++idx[d] < x->dims[d]) break;
                idx[d] = 0;
            }
        }
    }
    free(s);
    free(s2);
}

void npk_ref_onnx_lppool(const npk_onnx_conv_params *p, const npk_tensor *x, int64_t pw, npk_tensor *y) {
    int64_t isz = p->in[0] * p->in[1] * p->in[2], osz = p->out[0] * p->out[1] * p->out[2];
    for (int64_t nc = 0; nc < p->n * p->c; nc++)
        for (int64_t o0 = 0; o0 < p->out[0]; o0++)
            for (int64_t o1 = 0; o1 < p->out[1]; o1++)
                for (int64_t o2 = 0; o2 < p->out[2]; o2++) {
                    double s = 0;
                    for (int64_t k0 = 0; k0 < p->k[0]; k0++)
                        for (int64_t k1 = 0; k1 < p->k[1]; k1++)
                            for (int64_t k2 = 0; k2 < p->k[2]; k2++) {
                                int64_t i0 = o0 * p->stride[0] + k0 * p->dil[0] - p->pad_b[0],
                                        i1 = o1 * p->stride[1] + k1 * p->dil[1] - p->pad_b[1],
                                        i2 = o2 * p->stride[2] + k2 * p->dil[2] - p->pad_b[2];
                                if (i0 < 0 || i1 < 0 || i2 < 0 || i0 >= p->in[0] || i1 >= p->in[1] || i2 >= p->in[2]) continue;
                                s += pow(fabs(GF(x, nc * isz + (i0 * p->in[1] + i1) * p->in[2] + i2)), (double)pw);
                            }
                    npk_ref_onnx_set_f(y->data, y->dtype, nc * osz + (o0 * p->out[1] + o1) * p->out[2] + o2,
                                       pow(s, 1.0 / (double)pw));
                }
}
