// SPDX-License-Identifier: MIT
/* CPU reference ONNX operators: matrix products, convolution and pooling. */
#include "ops/ref_onnx.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- matrix products ------------------------------------------------------------ */

int npk_onnx_mm_plan_init(npk_onnx_mm_plan *p, const npk_tensor *a, const npk_tensor *b) {
    int ra = a->rank, rb = b->rank;
    p->m = ra >= 2 ? a->dims[ra - 2] : 1;
    p->k = a->dims[ra - 1];
    p->n = rb >= 2 ? b->dims[rb - 1] : 1;
    int ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0, br = ba > bb ? ba : bb;
    int64_t bd[NPK_MAX_RANK], sa[NPK_MAX_RANK], sb[NPK_MAX_RANK];
    int64_t stra = p->m * p->k, strb = p->k * p->n;
    for (int i = br - 1; i >= 0; i--) {
        int ia = i - (br - ba), ib = i - (br - bb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        bd[i] = da > db ? da : db;
        sa[i] = da == 1 ? 0 : stra;
        sb[i] = db == 1 ? 0 : strb;
        stra *= da;
        strb *= db;
    }
    p->batch = 1;
    for (int i = 0; i < br; i++) p->batch *= bd[i];
    p->aoff = calloc((size_t)p->batch, sizeof(int64_t));
    p->boff = calloc((size_t)p->batch, sizeof(int64_t));
    if (!p->aoff || !p->boff) {
        free(p->aoff);
        free(p->boff);
        return -NPK_ENOMEM;
    }
    int64_t idx[NPK_MAX_RANK] = {0}, oa = 0, ob = 0;
    for (int64_t t = 0; t < p->batch; t++) {
        p->aoff[t] = oa;
        p->boff[t] = ob;
        for (int i = br - 1; i >= 0; i--) {
            idx[i]++;
            oa += sa[i];
            ob += sb[i];
            if (idx[i] < bd[i]) break;
            oa -= sa[i] * bd[i];
            ob -= sb[i] * bd[i];
            idx[i] = 0;
        }
    }
    return 0;
}

void npk_ref_onnx_matmul(const npk_tensor *a, const npk_tensor *b, npk_tensor *y) {
    npk_onnx_mm_plan p;
    if (npk_onnx_mm_plan_init(&p, a, b)) return;
    for (int64_t t = 0; t < p.batch; t++)
        for (int64_t i = 0; i < p.m; i++)
            for (int64_t j = 0; j < p.n; j++) {
                double s = 0;
                for (int64_t kk = 0; kk < p.k; kk++)
                    s += npk_ref_onnx_get_f(a->data, a->dtype, p.aoff[t] + i * p.k + kk) *
                         npk_ref_onnx_get_f(b->data, b->dtype, p.boff[t] + kk * p.n + j);
                npk_ref_onnx_set_f(y->data, y->dtype, (t * p.m + i) * p.n + j, s);
            }
    free(p.aoff);
    free(p.boff);
}

static int64_t zp_at(const npk_tensor *zp, int64_t i) {
    if (!zp) return 0;
    return npk_ref_onnx_get_i(zp->data, zp->dtype, npk_tensor_numel(zp) > 1 ? i : 0);
}

void npk_ref_onnx_matmul_integer(const npk_tensor *a, const npk_tensor *b, const npk_tensor *a_zp,
                                 const npk_tensor *b_zp, npk_tensor *y) {
    npk_onnx_mm_plan p;
    if (npk_onnx_mm_plan_init(&p, a, b)) return;
    for (int64_t t = 0; t < p.batch; t++)
        for (int64_t i = 0; i < p.m; i++) {
            int64_t za = zp_at(a_zp, i);
            for (int64_t j = 0; j < p.n; j++) {
                int64_t zb = zp_at(b_zp, j), s = 0;
                for (int64_t kk = 0; kk < p.k; kk++)
                    s += (npk_ref_onnx_get_i(a->data, a->dtype, p.aoff[t] + i * p.k + kk) - za) *
                         (npk_ref_onnx_get_i(b->data, b->dtype, p.boff[t] + kk * p.n + j) - zb);
                npk_ref_onnx_set_i(y->data, y->dtype, (t * p.m + i) * p.n + j, s);
            }
        }
    free(p.aoff);
    free(p.boff);
}

void npk_ref_onnx_gemm(const npk_tensor *a, const npk_tensor *b, const npk_tensor *c, double alpha, double beta,
                       int trans_a, int trans_b, npk_tensor *y) {
    int64_t m = y->dims[0], n = y->dims[1], k = trans_a ? a->dims[0] : a->dims[1];
    int64_t cs0 = 0, cs1 = 0;
    if (c) {
        /* unidirectional broadcast of c to [M, N] */
        int64_t c0 = c->rank >= 2 ? c->dims[c->rank - 2] : 1, c1 = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
        cs0 = c0 == 1 ? 0 : c1;
        cs1 = c1 == 1 ? 0 : 1;
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t kk = 0; kk < k; kk++) {
                double av = npk_ref_onnx_get_f(a->data, a->dtype, trans_a ? kk * m + i : i * k + kk);
                double bv = npk_ref_onnx_get_f(b->data, b->dtype, trans_b ? j * k + kk : kk * n + j);
                s += av * bv;
            }
            s *= alpha;
            if (c) s += beta * npk_ref_onnx_get_f(c->data, c->dtype, i * cs0 + j * cs1);
            npk_ref_onnx_set_f(y->data, y->dtype, i * n + j, s);
        }
}

/* ---- convolution and pooling ----------------------------------------------------------- */

int npk_ref_onnx_conv_resolve(npk_onnx_conv_params *p, const char *auto_pad) {
    int same_u = auto_pad && !strcmp(auto_pad, "SAME_UPPER"), same_l = auto_pad && !strcmp(auto_pad, "SAME_LOWER");
    int valid = auto_pad && !strcmp(auto_pad, "VALID");
    if (auto_pad && *auto_pad && !same_u && !same_l && !valid && strcmp(auto_pad, "NOTSET"))
        return npk_err(NPK_EINVAL, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", auto_pad);
    for (int i = 0; i < 3; i++) {
        if (p->stride[i] < 1 || p->dil[i] < 1 || p->k[i] < 1 || p->pad_b[i] < 0 || p->pad_e[i] < 0)
            return npk_err(NPK_EINVAL, "kernel, strides and dilations must be >= 1 and pads >= 0");
        const int64_t lim = (int64_t)1 << 30;
        if (p->stride[i] > lim || p->dil[i] > lim || p->k[i] > lim || p->pad_b[i] > lim || p->pad_e[i] > lim || p->in[i] > lim)
            return npk_err(NPK_EINVAL, "kernel, stride, dilation, pad or input size beyond 2^30");
        int64_t ek = (p->k[i] - 1) * p->dil[i] + 1, in = p->in[i], s = p->stride[i];
        if (same_u || same_l) {
            int64_t out = (in + s - 1) / s;
            int64_t total = (out - 1) * s + ek - in;
            if (total < 0) total = 0;
            p->pad_b[i] = same_u ? total / 2 : total - total / 2;
            p->pad_e[i] = total - p->pad_b[i];
            p->out[i] = out;
            continue;
        }
        if (valid) p->pad_b[i] = p->pad_e[i] = 0;
        int64_t span = in + p->pad_b[i] + p->pad_e[i] - ek;
        if (span < 0) return npk_err(NPK_EINVAL, "kernel extent %lld exceeds the padded input %lld", (long long)ek,
                                     (long long)(in + p->pad_b[i] + p->pad_e[i]));
        int64_t out = p->ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
        /* ceil mode: the last window must start inside the input or its left padding */
        if (p->ceil_mode && (out - 1) * s >= in + p->pad_b[i]) out--;
        p->out[i] = out;
    }
    return 0;
}

/* The taps of one output position of a sliding window (convolution or pooling): the
 * kernel positions whose input position lies inside the input, in row-major kernel order.
 * Taps over padding are left out: they add the zero point (0 after subtracting it) to a
 * convolution and nothing to a pooling window. */
typedef struct window {
    const npk_onnx_conv_params *p;
    int64_t o[3];   /* the output position */
    int64_t kk;     /* next kernel position to look at, row major over k[0..2] */
    int64_t i[3];   /* the tap's input position */
    int64_t xoff;   /* its offset in one input plane: (i0 * in1 + i1) * in2 + i2 */
    int64_t koff;   /* its kernel offset: kk */
} window;

/* Start the window of flat output position op (row major over out[0..2]). */
static window window_at(const npk_onnx_conv_params *p, int64_t op) {
    window w = {.p = p};
    w.o[2] = op % p->out[2];
    w.o[1] = op / p->out[2] % p->out[1];
    w.o[0] = op / (p->out[2] * p->out[1]);
    return w;
}

/* Advance to the next tap; 0 when the window has none left (the window then restarts). */
static int window_next(window *w) {
    const npk_onnx_conv_params *p = w->p;
    for (; w->kk < p->k[0] * p->k[1] * p->k[2]; w->kk++) {
        int64_t kp[3] = {w->kk / (p->k[1] * p->k[2]), w->kk / p->k[2] % p->k[1], w->kk % p->k[2]}, d;
        for (d = 0; d < 3; d++) {
            w->i[d] = w->o[d] * p->stride[d] - p->pad_b[d] + kp[d] * p->dil[d];
            if (w->i[d] < 0 || w->i[d] >= p->in[d]) break;
        }
        if (d < 3) continue;
        w->xoff = (w->i[0] * p->in[1] + w->i[1]) * p->in[2] + w->i[2];
        w->koff = w->kk++;
        return 1;
    }
    w->kk = 0;
    return 0;
}

static int64_t plane(const int64_t *d) { return d[0] * d[1] * d[2]; }

void npk_ref_onnx_conv(const npk_onnx_conv_params *p, const npk_tensor *x, const npk_tensor *w,
                       const npk_tensor *b, npk_tensor *y) {
    int64_t cpg = p->c / p->group, mpg = p->m / p->group, isz = plane(p->in), ksz = plane(p->k), osz = plane(p->out);
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t m = 0; m < p->m; m++) {
            double bias = b ? npk_ref_onnx_get_f(b->data, b->dtype, m) : 0.0;
            for (int64_t op = 0; op < osz; op++) {
                window win = window_at(p, op);
                double s = 0;
                for (int64_t c = 0; c < cpg; c++) {
                    int64_t xb = (n * p->c + m / mpg * cpg + c) * isz, wb = (m * cpg + c) * ksz;
                    while (window_next(&win))
                        s += npk_ref_onnx_get_f(x->data, x->dtype, xb + win.xoff) *
                             npk_ref_onnx_get_f(w->data, w->dtype, wb + win.koff);
                }
                npk_ref_onnx_set_f(y->data, y->dtype, (n * p->m + m) * osz + op, s + bias);
            }
        }
}

void npk_ref_onnx_conv_integer(const npk_onnx_conv_params *p, const npk_tensor *x, const npk_tensor *w,
                               const npk_tensor *x_zp, const npk_tensor *w_zp, const npk_tensor *b,
                               npk_tensor *y) {
    int64_t cpg = p->c / p->group, mpg = p->m / p->group, isz = plane(p->in), ksz = plane(p->k), osz = plane(p->out);
    int64_t zx = zp_at(x_zp, 0);
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t m = 0; m < p->m; m++) {
            int64_t zw = zp_at(w_zp, m), bias = b ? npk_ref_onnx_get_i(b->data, b->dtype, m) : 0;
            for (int64_t op = 0; op < osz; op++) {
                window win = window_at(p, op);
                int64_t s = 0;
                for (int64_t c = 0; c < cpg; c++) {
                    int64_t xb = (n * p->c + m / mpg * cpg + c) * isz, wb = (m * cpg + c) * ksz;
                    while (window_next(&win))
                        s += (npk_ref_onnx_get_i(x->data, x->dtype, xb + win.xoff) - zx) *
                             (npk_ref_onnx_get_i(w->data, w->dtype, wb + win.koff) - zw);
                }
                npk_ref_onnx_set_i(y->data, y->dtype, (n * p->m + m) * osz + op, s + bias);
            }
        }
}

void npk_ref_onnx_maxpool(const npk_onnx_conv_params *p, const npk_tensor *x, npk_tensor *y, npk_tensor *indices) {
    int64_t isz = plane(p->in), osz = plane(p->out);
    int fl = x->dtype == NPK_DT_FLOAT || x->dtype == NPK_DT_DOUBLE;
    for (int64_t nc = 0; nc < p->n * p->c; nc++)
        for (int64_t op = 0; op < osz; op++) {
            window win = window_at(p, op);
            double best = -INFINITY;
            int64_t besti = INT64_MIN, bestoff = -1, bpos[3] = {0, 0, 0};
            while (window_next(&win)) {
                int64_t off = nc * isz + win.xoff;
                int better;
                if (fl) {
                    double v = npk_ref_onnx_get_f(x->data, x->dtype, off);
                    better = bestoff < 0 || v > best;
                    if (better) best = v;
                } else {
                    int64_t v = npk_ref_onnx_get_i(x->data, x->dtype, off);
                    better = bestoff < 0 || v > besti;
                    if (better) besti = v;
                }
                if (better) {
                    bestoff = off;
                    memcpy(bpos, win.i, sizeof bpos);
                }
            }
            int64_t yo = nc * osz + op;
            if (fl)
                npk_ref_onnx_set_f(y->data, y->dtype, yo, bestoff < 0 ? 0.0 : best);
            else
                npk_ref_onnx_set_i(y->data, y->dtype, yo, bestoff < 0 ? 0 : besti);
            if (indices) {
                int64_t idx = bestoff;
                if (p->storage_order == 1 && bestoff >= 0) {
                    /* column-major within the spatial plane (indices reversed) */
                    int64_t sp = 0, mul = 1;
                    for (int d = 3 - p->nsp; d < 3; d++) {
                        sp += bpos[d] * mul;
                        mul *= p->in[d];
                    }
                    idx = nc * isz + sp;
                }
                ((int64_t *)indices->data)[yo] = idx;
            }
        }
}

void npk_ref_onnx_avgpool(const npk_onnx_conv_params *p, const npk_tensor *x, npk_tensor *y) {
    int64_t isz = plane(p->in), osz = plane(p->out);
    for (int64_t nc = 0; nc < p->n * p->c; nc++)
        for (int64_t op = 0; op < osz; op++) {
            window win = window_at(p, op);
            int64_t cnt = 0, cnt_pad = 1;
            for (int d = 0; d < 3; d++) {
                /* window clipped to the padded input [-pad_b, in + pad_e) */
                int64_t st = win.o[d] * p->stride[d] - p->pad_b[d], c = 0;
                for (int64_t kk = 0; kk < p->k[d]; kk++) {
                    int64_t i = st + kk * p->dil[d];
                    if (i >= -p->pad_b[d] && i < p->in[d] + p->pad_e[d]) c++;
                }
                cnt_pad *= c;
            }
            double s = 0;
            while (window_next(&win)) {
                s += npk_ref_onnx_get_f(x->data, x->dtype, nc * isz + win.xoff);
                cnt++;
            }
            int64_t div = p->count_include_pad ? cnt_pad : cnt;
            npk_ref_onnx_set_f(y->data, y->dtype, nc * osz + op, div ? s / (double)div : 0.0);
        }
}

void npk_ref_onnx_global_pool(const npk_tensor *x, npk_tensor *y, int is_max) {
    int64_t nc = x->dims[0] * x->dims[1], sp = 1;
    for (int d = 2; d < x->rank; d++) sp *= x->dims[d];
    for (int64_t i = 0; i < nc; i++) {
        double acc = is_max ? -INFINITY : 0;
        for (int64_t j = 0; j < sp; j++) {
            double v = npk_ref_onnx_get_f(x->data, x->dtype, i * sp + j);
            if (is_max)
                acc = v > acc ? v : acc;
            else
                acc += v;
        }
        npk_ref_onnx_set_f(y->data, y->dtype, i, is_max ? acc : acc / (double)sp);
    }
}
