// SPDX-License-Identifier: MIT
/* Node-level ONNX neural-network operators beyond ops.c (kernels in
 * src/ops/ref_onnx_nn2.c). */
#include <math.h>
#include <string.h>

#include "graph/ops.h"
#include "ops/fast_onnx.h"

#define IN(i) ((i) < c->n_in ? c->in[i] : NULL)
#define HAS(i) (IN(i) != NULL)


/* ConvTranspose's output size and padding per spatial dim (ONNX's formulas). */
int npk_op_convtranspose(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X")) || (rc = npk_opc_need(c, 1, "W"))) return rc;
    const npk_tensor *x = IN(0), *w = IN(1), *b = IN(2);
    if ((rc = npk_opc_need_float(x, "X"))) return rc;
    if (w->dtype != x->dtype || w->rank != x->rank) return npk_err(NPK_EINVAL, "W must have X's type and rank");
    if (x->rank < 3 || x->rank > 5) return npk_err(NPK_EUNSUPPORTED, "X must have rank 3 to 5, got %d", x->rank);
    npk_onnx_conv_params p;
    memset(&p, 0, sizeof p);
    int nsp = x->rank - 2, off = 3 - nsp;
    p.nsp = nsp;
    p.n = x->dims[0];
    p.c = x->dims[1];
    p.group = npk_node_attr_i(c->node, "group", 1);
    if (p.group < 1 || p.c % p.group || w->dims[0] != p.c)
        return npk_err(NPK_EINVAL, "W must be [C, M/group, k...] with group dividing C");
    p.m = w->dims[1] * p.group;
    const int64_t *st, *dl, *pd, *op, *os, *ks;
    size_t ns = npk_node_attr_ints(c->node, "strides", &st), nd = npk_node_attr_ints(c->node, "dilations", &dl),
           np = npk_node_attr_ints(c->node, "pads", &pd), nop = npk_node_attr_ints(c->node, "output_padding", &op),
           nos = npk_node_attr_ints(c->node, "output_shape", &os), nk = npk_node_attr_ints(c->node, "kernel_shape", &ks);
    if ((ns && ns != (size_t)nsp) || (nd && nd != (size_t)nsp) || (np && np != (size_t)(2 * nsp)) ||
        (nop && nop != (size_t)nsp) || (nk && nk != (size_t)nsp) || (nos && nos != (size_t)nsp && nos != (size_t)x->rank))
        return npk_err(NPK_EINVAL, "strides/dilations/output_padding/output_shape/kernel_shape need %d entries and pads %d", nsp,
                       2 * nsp);
    const char *ap = npk_node_attr_s(c->node, "auto_pad", "NOTSET");
    int same = !strcmp(ap, "SAME_UPPER") ? 1 : !strcmp(ap, "SAME_LOWER") ? 2 : 0;
    if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID")) return npk_err(NPK_EINVAL, "unknown auto_pad '%s'", ap);
    for (int i = 0; i < 3; i++) p.in[i] = p.k[i] = p.out[i] = p.stride[i] = p.dil[i] = 1;
    for (int i = 0; i < nsp; i++) {
        int j = off + i;
        p.in[j] = x->dims[2 + i];
        p.k[j] = w->dims[2 + i];
        if (nk && ks[i] != p.k[j]) return npk_err(NPK_EINVAL, "kernel_shape does not match W");
        p.stride[j] = ns ? st[i] : 1;
        p.dil[j] = nd ? dl[i] : 1;
        int64_t opad = nop ? op[i] : 0, full = p.stride[j] * (p.in[j] - 1) + opad + (p.k[j] - 1) * p.dil[j] + 1;
        if (p.stride[j] < 1 || p.dil[j] < 1) return npk_err(NPK_EINVAL, "strides and dilations must be >= 1");
        if (nos || same) {
            int64_t o = nos ? os[nos == (size_t)nsp ? i : 2 + i] : p.in[j] * p.stride[j], tot = full - o;
            if (tot < 0) tot = 0; /* a larger output_shape: the extra is not padding (zeros at the end) */
            if (same == 1) {
                p.pad_b[j] = tot / 2;
                p.pad_e[j] = tot - tot / 2;
            } else {
                p.pad_b[j] = tot - tot / 2;
                p.pad_e[j] = tot / 2;
            }
            p.out[j] = o;
        } else {
            if (np) {
                p.pad_b[j] = pd[i];
                p.pad_e[j] = pd[nsp + i];
            }
            p.out[j] = full - p.pad_b[j] - p.pad_e[j];
        }
        if (p.out[j] < 1) return npk_err(NPK_EINVAL, "output size %lld < 1 on spatial axis %d", (long long)p.out[j], i);
    }
    if (b && (b->dtype != x->dtype || npk_tensor_numel(b) != p.m)) return npk_err(NPK_EINVAL, "B must be [%lld] of X's type", (long long)p.m);
    int64_t d[NPK_MAX_RANK];
    d[0] = p.n;
    d[1] = p.m;
    for (int i = 0; i < nsp; i++) d[2 + i] = p.out[off + i];
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, d))) return rc;
    c->macs = (uint64_t)p.n * (uint64_t)p.c * (uint64_t)(p.m / p.group) * (uint64_t)(p.in[0] * p.in[1] * p.in[2]) *
              (uint64_t)(p.k[0] * p.k[1] * p.k[2]);
    if (c->run && (c->golden || (rc = npk_fast_conv_transpose(&p, x, w, b, c->out[0])) != 0)) {
        if (rc < 0) return npk_err(-rc, "out of memory");
        npk_ref_onnx_conv_transpose(&p, x, w, b, c->out[0]);
    }
    return 0;
}

static int pick(const char *s, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* Resize (opsets 10, 11, 13) and Upsample (7, 9): scales from the attribute or
 * an input, or sizes (opset >= 11); nearest/linear/cubic with every
 * coordinate transformation of ONNX 1.12. */
static int resize(npk_opctx *c, int upsample) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X"))) return rc;
    const npk_tensor *x = IN(0);
    if (!npk_dtype_size(x->dtype) || x->dtype == NPK_DT_BOOL) return npk_err(NPK_EINVAL, "X has type %s", npk_dtype_name(x->dtype));
    npk_onnx_resize r;
    memset(&r, 0, sizeof r);
    r.rank = x->rank;
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {"half_pixel", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
                                         "align_corners", "tf_crop_and_resize"};
    static const char *const nears[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    const char *ms = npk_node_attr_s(c->node, "mode", "nearest");
    r.mode = pick(ms, modes, 3);
    if (r.mode < 0 && upsample && !strcmp(ms, "bilinear")) r.mode = NPK_ONNX_RS_LINEAR; /* Upsample-7 */
    if (r.mode < 0 || (upsample && r.mode == NPK_ONNX_RS_CUBIC)) return npk_err(NPK_EINVAL, "unknown mode '%s'", ms);
    int old = upsample || c->opset < 11;
    if (old) { /* Upsample and Resize-10: asymmetric coordinates, nearest rounds down */
        r.coord = NPK_ONNX_RS_ASYMMETRIC;
        r.nearest = NPK_ONNX_RS_FLOOR;
    } else {
        const char *cs = npk_node_attr_s(c->node, "coordinate_transformation_mode", "half_pixel");
        const char *ns = npk_node_attr_s(c->node, "nearest_mode", "round_prefer_floor");
        if ((r.coord = pick(cs, coords, 6)) < 0) return npk_err(NPK_EINVAL, "unknown coordinate_transformation_mode '%s'", cs);
        if ((r.nearest = pick(ns, nears, 4)) < 0) return npk_err(NPK_EINVAL, "unknown nearest_mode '%s'", ns);
    }
    r.cubic_a = npk_node_attr_f(c->node, "cubic_coeff_a", -0.75);
    r.exclude_outside = (int)npk_node_attr_i(c->node, "exclude_outside", 0);
    r.extrapolation = npk_node_attr_f(c->node, "extrapolation_value", 0.0);
    const npk_tensor *sc = NULL, *sz = NULL, *roi = NULL;
    if (upsample && c->opset < 7) { /* Upsample-1: 4-D, height_scale and width_scale */
        if (x->rank != 4) return npk_err(NPK_EINVAL, "Upsample-1 takes a 4-D input");
        r.scales[0] = r.scales[1] = 1;
        r.scales[2] = npk_node_attr_f(c->node, "height_scale", 0);
        r.scales[3] = npk_node_attr_f(c->node, "width_scale", 0);
        if (r.scales[2] < 1 || r.scales[3] < 1) return npk_err(NPK_EINVAL, "height_scale and width_scale must be >= 1");
    } else if (upsample && c->opset < 9) {
        const npk_attr *a = npk_node_attr(c->node, "scales");
        if (!a || (int)a->n != x->rank) return npk_err(NPK_EINVAL, "scales needs %d entries", x->rank);
        for (int i = 0; i < x->rank; i++) r.scales[i] = a->floats[i];
    } else {
        int si = upsample || c->opset < 11 ? 1 : 2;
        sc = IN(si);
        if (!old) {
            roi = IN(1);
            sz = IN(3);
        }
        if (sc && npk_tensor_numel(sc) == 0) sc = NULL; /* an empty scales tensor: sizes decide */
        if (roi && npk_tensor_numel(roi) == 0) roi = NULL;
        if (!sc && !sz) return npk_err(NPK_EINVAL, "one of scales and sizes is required");
        if (sc && sz) return npk_err(NPK_EINVAL, "only one of scales and sizes may be given");
        const npk_tensor *t = sc ? sc : sz;
        if (npk_tensor_numel(t) != x->rank) return npk_err(NPK_EINVAL, "%s needs %d entries", sc ? "scales" : "sizes", x->rank);
        if (sc && sc->dtype != NPK_DT_FLOAT) return npk_err(NPK_EINVAL, "scales must be float");
        if (sz && sz->dtype != NPK_DT_INT64) return npk_err(NPK_EINVAL, "sizes must be int64");
        if (!t->data || (roi && !roi->data)) return NPK_SHAPE_UNKNOWN;
        for (int i = 0; i < x->rank; i++)
            r.scales[i] = sc ? npk_ref_onnx_get_f(sc->data, sc->dtype, i)
                             : (double)((const int64_t *)sz->data)[i] / (double)(x->dims[i] ? x->dims[i] : 1);
        if (roi) {
            if (npk_tensor_numel(roi) != 2 * x->rank) return npk_err(NPK_EINVAL, "roi needs %d entries", 2 * x->rank);
            for (int i = 0; i < 2 * x->rank; i++) r.roi[i] = npk_ref_onnx_get_f(roi->data, roi->dtype, i);
        } else {
            for (int i = 0; i < x->rank; i++) r.roi[x->rank + i] = 1;
        }
    }
    int64_t d[NPK_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        if (!(r.scales[i] > 0)) return npk_err(NPK_EINVAL, "scale %d is not positive", i);
        d[i] = sz ? ((const int64_t *)sz->data)[i] : (int64_t)floor((double)x->dims[i] * r.scales[i] + 1e-9 * 0);
    }
    if ((rc = npk_opctx_out_raw(c, 0, x->dtype, x->rank, d))) return rc; /* written whole */
    if (c->run && (c->golden || (rc = npk_fast_resize(&r, x, c->out[0])) != 0)) {
        if (rc < 0) return npk_err(-rc, "out of memory");
        return npk_ref_onnx_resize(&r, x, c->out[0]);
    }
    return 0;
}
int npk_op_resize(npk_opctx *c) { return resize(c, 0); }
int npk_op_upsample(npk_opctx *c) { return resize(c, 1); }

int npk_op_instancenorm(npk_opctx *c) {
    int rc;
    for (int i = 0; i < 3; i++)
        if ((rc = npk_opc_need(c, i, i == 0 ? "input" : i == 1 ? "scale" : "B"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = npk_opc_need_float(x, "input"))) return rc;
    if (x->rank < 3) return npk_err(NPK_EINVAL, "input must have rank >= 3");
    if (npk_tensor_numel(IN(1)) != x->dims[1] || npk_tensor_numel(IN(2)) != x->dims[1])
        return npk_err(NPK_EINVAL, "scale and B must have C elements");
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, x->dims))) return rc;
    if (c->run) npk_ref_onnx_instance_norm(x, IN(1), IN(2), npk_node_attr_f(c->node, "epsilon", 1e-5), c->out[0]);
    return 0;
}

int npk_op_lrn(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = npk_opc_need_float(x, "X"))) return rc;
    int64_t size = npk_node_attr_i(c->node, "size", 0);
    if (x->rank < 3 || size < 1) return npk_err(NPK_EINVAL, "X must have rank >= 3 and size >= 1");
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, x->dims))) return rc;
    if (c->run)
        npk_ref_onnx_lrn(x, size, (float)npk_node_attr_f(c->node, "alpha", 1e-4), (float)npk_node_attr_f(c->node, "beta", 0.75),
                         (float)npk_node_attr_f(c->node, "bias", 1.0), c->out[0]);
    return 0;
}

int npk_op_mvn(npk_opctx *c) {
    int rc, red[NPK_MAX_RANK] = {0};
    if ((rc = npk_opc_need(c, 0, "X"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = npk_opc_need_float(x, "X"))) return rc;
    const int64_t *ax;
    static const int64_t def[3] = {0, 2, 3};
    size_t na = npk_node_attr_ints(c->node, "axes", &ax);
    if (!na) {
        ax = def;
        na = 3;
    }
    for (size_t i = 0; i < na; i++) {
        int a;
        if ((rc = npk_opc_axis(ax[i], x->rank, &a))) return rc;
        red[a] = 1;
    }
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, x->dims))) return rc;
    if (c->run) npk_ref_onnx_mvn(x, red, c->out[0]);
    return 0;
}

static int lppool(npk_opctx *c, int global) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = npk_opc_need_float(x, "X"))) return rc;
    npk_onnx_conv_params p;
    if (global) {
        if (x->rank < 3 || x->rank > 5) return npk_err(NPK_EUNSUPPORTED, "X must have rank 3 to 5");
        memset(&p, 0, sizeof p);
        p.nsp = x->rank - 2;
        p.n = x->dims[0];
        p.c = p.m = x->dims[1];
        for (int i = 0; i < 3; i++) {
            int k = i - (3 - p.nsp);
            p.in[i] = p.k[i] = k >= 0 ? x->dims[2 + k] : 1;
            p.out[i] = p.stride[i] = p.dil[i] = 1;
        }
    } else if ((rc = npk_onnx_conv_params_of(c, x, NULL, 1, &p))) {
        return rc;
    }
    int64_t d[NPK_MAX_RANK];
    d[0] = p.n;
    d[1] = p.c;
    for (int i = 0; i < p.nsp; i++) d[2 + i] = p.out[3 - p.nsp + i];
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, d))) return rc;
    int64_t pw = c->opset < 2 ? (int64_t)npk_node_attr_f(c->node, "p", 2.0) : npk_node_attr_i(c->node, "p", 2);
    if (c->run) npk_ref_onnx_lppool(&p, x, pw, c->out[0]);
    return 0;
}
int npk_op_lppool(npk_opctx *c) { return lppool(c, 0); }
int npk_op_globallppool(npk_opctx *c) { return lppool(c, 1); }

/* RNN, GRU and LSTM (opsets 7 and 14; RNN/GRU/LSTM-1 had the same inputs). */
static int recurrent(npk_opctx *c, int kind) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X")) || (rc = npk_opc_need(c, 1, "W")) || (rc = npk_opc_need(c, 2, "R"))) return rc;
    const npk_tensor *X = IN(0), *W = IN(1), *R = IN(2), *B = IN(3), *L = IN(4), *h0 = IN(5);
    const npk_tensor *c0 = kind == NPK_ONNX_LSTM ? IN(6) : NULL, *P = kind == NPK_ONNX_LSTM ? IN(7) : NULL;
    if ((rc = npk_opc_need_float(X, "X"))) return rc;
    npk_onnx_rnn p;
    memset(&p, 0, sizeof p);
    p.kind = kind;
    p.layout = c->opset >= 14 ? (int)npk_node_attr_i(c->node, "layout", 0) : 0;
    const char *dir = npk_node_attr_s(c->node, "direction", "forward");
    p.dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
    p.reverse = !strcmp(dir, "reverse");
    if (p.dirs == 1 && !p.reverse && strcmp(dir, "forward")) return npk_err(NPK_EINVAL, "unknown direction '%s'", dir);
    int G = kind == NPK_ONNX_LSTM ? 4 : kind == NPK_ONNX_GRU ? 3 : 1;
    if (X->rank != 3 || W->rank != 3 || R->rank != 3) return npk_err(NPK_EINVAL, "X, W and R must be 3-D");
    p.seq = X->dims[p.layout ? 1 : 0];
    p.batch = X->dims[p.layout ? 0 : 1];
    p.input = X->dims[2];
    p.hidden = npk_node_attr_i(c->node, "hidden_size", R->dims[2]);
    int64_t Hh = p.hidden;
    if (W->dims[0] != p.dirs || W->dims[1] != G * Hh || W->dims[2] != p.input || R->dims[0] != p.dirs ||
        R->dims[1] != G * Hh || R->dims[2] != Hh)
        return npk_err(NPK_EINVAL, "W must be [%d, %lld, %lld] and R [%d, %lld, %lld]", p.dirs, (long long)(G * Hh),
                       (long long)p.input, p.dirs, (long long)(G * Hh), (long long)Hh);
    if (B && npk_tensor_numel(B) != p.dirs * 2 * G * Hh) return npk_err(NPK_EINVAL, "B must have %lld elements", (long long)(p.dirs * 2 * G * Hh));
    if (P && npk_tensor_numel(P) != p.dirs * 3 * Hh) return npk_err(NPK_EINVAL, "P must have %lld elements", (long long)(p.dirs * 3 * Hh));
    int64_t ns = p.dirs * p.batch * Hh;
    if ((h0 && npk_tensor_numel(h0) != ns) || (c0 && npk_tensor_numel(c0) != ns))
        return npk_err(NPK_EINVAL, "initial_h/initial_c must have %lld elements", (long long)ns);
    if (L && npk_tensor_numel(L) != p.batch) return npk_err(NPK_EINVAL, "sequence_lens must have batch elements");
    p.clip = npk_node_attr_f(c->node, "clip", 0);
    p.input_forget = (int)npk_node_attr_i(c->node, "input_forget", 0);
    p.linear_before_reset = (int)npk_node_attr_i(c->node, "linear_before_reset", 0);
    /* activations: defaults f = Sigmoid, g = Tanh, h = Tanh (RNN: Tanh) */
    static const char *const names[] = {"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu",
                                        "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
    const npk_attr *aa = npk_node_attr(c->node, "activations");
    const npk_attr *al = npk_node_attr(c->node, "activation_alpha"), *ab = npk_node_attr(c->node, "activation_beta");
    int per = kind == NPK_ONNX_LSTM ? 3 : kind == NPK_ONNX_GRU ? 2 : 1;
    for (int d = 0; d < p.dirs; d++)
        for (int k = 0; k < 3; k++) {
            npk_onnx_act *a = &p.acts[d * 3 + k];
            a->fn = kind == NPK_ONNX_RNN || k > 0 ? NPK_ONNX_ACT_TANH : NPK_ONNX_ACT_SIGMOID;
            /* the spec's per-function defaults */
            a->alpha = 0.01;
            a->beta = 0;
            if (k >= per) continue;
            int idx = d * per + k;
            const char *nm = NULL;
            if (aa && (size_t)idx < aa->n && aa->strs) nm = aa->strs[idx];
            if (nm) {
                int f = -1;
                for (int i = 0; i < 11; i++)
                    if (!strcmp(nm, names[i])) f = i;
                if (f < 0) return npk_err(NPK_EUNSUPPORTED, "activation '%s' is not supported", nm);
                a->fn = f;
                a->alpha = f == NPK_ONNX_ACT_AFFINE || f == NPK_ONNX_ACT_SCALEDTANH ? 1.0
                           : f == NPK_ONNX_ACT_HARDSIGMOID ? 0.2
                           : f == NPK_ONNX_ACT_ELU || f == NPK_ONNX_ACT_THRESHOLDEDRELU ? 1.0 : 0.01;
                a->beta = f == NPK_ONNX_ACT_HARDSIGMOID ? 0.5 : f == NPK_ONNX_ACT_SCALEDTANH ? 1.0 : 0;
            }
            if (al && (size_t)idx < al->n) a->alpha = al->floats[idx];
            if (ab && (size_t)idx < ab->n) a->beta = ab->floats[idx];
        }
    int64_t dy[4], ds[3];
    if (p.layout) {
        dy[0] = p.batch, dy[1] = p.seq, dy[2] = p.dirs, dy[3] = Hh;
        ds[0] = p.batch, ds[1] = p.dirs, ds[2] = Hh;
    } else {
        dy[0] = p.seq, dy[1] = p.dirs, dy[2] = p.batch, dy[3] = Hh;
        ds[0] = p.dirs, ds[1] = p.batch, ds[2] = Hh;
    }
    if ((rc = npk_opctx_out(c, 0, X->dtype, 4, dy)) || (rc = npk_opctx_out(c, 1, X->dtype, 3, ds)) ||
        (kind == NPK_ONNX_LSTM && (rc = npk_opctx_out(c, 2, X->dtype, 3, ds))))
        return rc;
    c->macs = (uint64_t)(p.seq * p.batch * p.dirs * G * Hh * (p.input + Hh));
    if (!c->run) return 0;
    npk_tensor *Y = c->n_out > 0 ? c->out[0] : NULL, *Yh = c->n_out > 1 ? c->out[1] : NULL,
               *Yc = kind == NPK_ONNX_LSTM && c->n_out > 2 ? c->out[2] : NULL;
    if (!c->golden && (rc = npk_fast_lstm(&p, X, W, R, B, L, h0, c0, P, Y, Yh, Yc)) <= 0) return rc;
    return npk_ref_onnx_rnn(&p, X, W, R, B, L, h0, c0, P, Y, Yh, Yc);
}
int npk_op_rnn(npk_opctx *c) { return recurrent(c, NPK_ONNX_RNN); }
int npk_op_gru(npk_opctx *c) { return recurrent(c, NPK_ONNX_GRU); }
int npk_op_lstm(npk_opctx *c) { return recurrent(c, NPK_ONNX_LSTM); }
