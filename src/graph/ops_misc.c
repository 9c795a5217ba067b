// SPDX-License-Identifier: MIT
/* Node-level handlers (issue 14) for Det, MaxUnpool, Unique, NonMaxSuppression,
 * Einsum, HannWindow/HammingWindow/BlackmanWindow, DFT, STFT, MelWeightMatrix,
 * RoiAlign and GridSample; kernels in src/ops/ref_onnx_misc.c. */
#include <stdlib.h>
#include <string.h>

#include "graph/ops.h"

#define IN(i) ((i) < c->n_in ? c->in[i] : NULL)
#define HAS(i) (IN(i) != NULL)

/* A scalar (one-element) input's value: 1 when known, NPK_SHAPE_UNKNOWN without data. */
static int scalar_f(const npk_tensor *t, const char *what, double *v) {
    if (npk_tensor_numel(t) != 1) return npk_err(NPK_EINVAL, "%s must hold one value", what);
    if (!t->data) return NPK_SHAPE_UNKNOWN;
    *v = npk_ref_onnx_get_f(t->data, t->dtype, 0);
    return 0;
}
static int scalar_i(const npk_tensor *t, const char *what, int64_t *v) {
    if (npk_tensor_numel(t) != 1) return npk_err(NPK_EINVAL, "%s must hold one value", what);
    if (!npk_dtype_is_int(t->dtype)) return npk_err(NPK_EINVAL, "%s must be an integer, got %s", what, npk_dtype_name(t->dtype));
    if (!t->data) return NPK_SHAPE_UNKNOWN;
    *v = npk_ref_onnx_get_i(t->data, t->dtype, 0);
    return 0;
}

int npk_op_det(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = npk_opc_need_float(x, "X"))) return rc;
    if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
        return npk_err(NPK_EINVAL, "X must be [..., M, M]");
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank - 2, x->dims))) return rc;
    if (c->run) npk_ref_onnx_det(x, c->out[0]);
    return 0;
}

int npk_op_maxunpool(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X")) || (rc = npk_opc_need(c, 1, "I"))) return rc;
    const npk_tensor *x = IN(0), *ix = IN(1);
    if ((rc = npk_opc_need_float(x, "X"))) return rc;
    if (ix->rank != x->rank || memcmp(ix->dims, x->dims, sizeof(int64_t) * (size_t)x->rank) || ix->dtype != NPK_DT_INT64)
        return npk_err(NPK_EINVAL, "I must be int64 of X's shape");
    int ns = x->rank - 2;
    if (ns < 1) return npk_err(NPK_EINVAL, "X must be [N, C, D1, ...]");
    const int64_t *ks, *pads, *strides;
    size_t nk = npk_node_attr_ints(c->node, "kernel_shape", &ks), np = npk_node_attr_ints(c->node, "pads", &pads),
           nst = npk_node_attr_ints(c->node, "strides", &strides);
    if ((int)nk != ns) return npk_err(NPK_EINVAL, "kernel_shape must have %d entries", ns);
    if (np && (int)np != 2 * ns) return npk_err(NPK_EINVAL, "pads must have %d entries", 2 * ns);
    if (nst && (int)nst != ns) return npk_err(NPK_EINVAL, "strides must have %d entries", ns);
    int64_t od[NPK_MAX_RANK], idims[NPK_MAX_RANK];
    idims[0] = x->dims[0];
    idims[1] = x->dims[1];
    for (int d = 0; d < ns; d++)
        idims[2 + d] = (x->dims[2 + d] - 1) * (nst ? strides[d] : 1) + ks[d] - (np ? pads[d] + pads[d + ns] : 0);
    if (HAS(2)) {
        const npk_tensor *os = IN(2);
        if (npk_tensor_numel(os) != x->rank) return npk_err(NPK_EINVAL, "output_shape must have %d entries", x->rank);
        if (!os->data) return NPK_SHAPE_UNKNOWN;
        for (int d = 0; d < x->rank; d++) od[d] = npk_ref_onnx_get_i(os->data, os->dtype, d);
        for (int d = 0; d < x->rank; d++)
            if (od[d] < idims[d]) return npk_err(NPK_EINVAL, "output_shape is smaller than the unpooled shape in dimension %d", d);
    } else {
        memcpy(od, idims, sizeof od);
    }
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, od))) return rc;
    if (c->run) return npk_ref_onnx_maxunpool(x, ix, idims, c->out[0]);
    return 0;
}

int npk_op_unique(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X"))) return rc;
    if (!c->run) return NPK_SHAPE_UNKNOWN; /* the count depends on the data */
    const npk_tensor *x = IN(0);
    if (npk_dtype_is_half(x->dtype) || !npk_dtype_size(x->dtype)) return npk_err(NPK_EINVAL, "X has an unsupported type");
    const npk_attr *aa = npk_node_attr(c->node, "axis");
    int sorted = (int)npk_node_attr_i(c->node, "sorted", 1), axis = -1;
    int64_t outer = 1, len = npk_tensor_numel(x), inner = 1;
    if (aa) {
        if ((rc = npk_opc_axis(aa->i, x->rank, &axis))) return rc;
        len = x->dims[axis];
        for (int d = 0; d < axis; d++) outer *= x->dims[d];
        for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    }
    int64_t *buf = malloc(sizeof(int64_t) * (size_t)(4 * len + 4));
    if (!buf) return npk_err(NPK_ENOMEM, "out of memory");
    int64_t *order = buf, *first = buf + len + 1, *inverse = buf + 2 * len + 2, *counts = buf + 3 * len + 3;
    int64_t ng = npk_ref_onnx_unique(x, outer, len, inner, sorted, order, first, inverse, counts);
    if (ng < 0) {
        free(buf);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    int64_t yd[NPK_MAX_RANK];
    int yr = 1;
    if (axis >= 0) {
        memcpy(yd, x->dims, sizeof yd);
        yd[axis] = ng;
        yr = x->rank;
    } else {
        yd[0] = ng;
    }
    rc = npk_opctx_out(c, 0, x->dtype, yr, yd);
    if (!rc) rc = npk_opctx_out(c, 1, NPK_DT_INT64, 1, &ng);
    if (!rc) rc = npk_opctx_out(c, 2, NPK_DT_INT64, 1, &len);
    if (!rc) rc = npk_opctx_out(c, 3, NPK_DT_INT64, 1, &ng);
    if (!rc) {
        size_t es = npk_dtype_size(x->dtype), sb = (size_t)inner * es;
        for (int64_t g = 0; g < ng; g++) {
            int64_t grp = order[g], src = first[grp];
            for (int64_t o = 0; o < outer; o++)
                memcpy((uint8_t *)c->out[0]->data + ((size_t)(o * ng + g)) * sb, (const uint8_t *)x->data + ((size_t)(o * len + src)) * sb, sb);
            if (c->n_out > 1 && c->out[1]) ((int64_t *)c->out[1]->data)[g] = src;
            if (c->n_out > 3 && c->out[3]) ((int64_t *)c->out[3]->data)[g] = counts[grp];
        }
        if (c->n_out > 2 && c->out[2]) memcpy(c->out[2]->data, inverse, sizeof(int64_t) * (size_t)len);
    }
    free(buf);
    return rc;
}

int npk_op_nms(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "boxes")) || (rc = npk_opc_need(c, 1, "scores"))) return rc;
    const npk_tensor *b = IN(0), *s = IN(1);
    if ((rc = npk_opc_need_float(b, "boxes")) || (rc = npk_opc_need_float(s, "scores"))) return rc;
    if (b->rank != 3 || b->dims[2] != 4 || s->rank != 3 || s->dims[0] != b->dims[0] || s->dims[2] != b->dims[1])
        return npk_err(NPK_EINVAL, "boxes must be [B, N, 4] and scores [B, C, N]");
    if (!c->run) return NPK_SHAPE_UNKNOWN;
    int64_t maxo = 0;
    double iou = 0, sth = 0;
    if (HAS(2) && npk_tensor_numel(IN(2)) && (rc = scalar_i(IN(2), "max_output_boxes_per_class", &maxo))) return rc;
    if (HAS(3) && npk_tensor_numel(IN(3)) && (rc = scalar_f(IN(3), "iou_threshold", &iou))) return rc;
    int has_sth = HAS(4) && npk_tensor_numel(IN(4));
    if (has_sth && (rc = scalar_f(IN(4), "score_threshold", &sth))) return rc;
    if (iou < 0 || iou > 1) return npk_err(NPK_EINVAL, "iou_threshold %g outside [0, 1]", iou);
    int64_t cap = npk_tensor_numel(s);
    int64_t *sel = malloc(sizeof(int64_t) * (size_t)(3 * cap + 3));
    if (!sel) return npk_err(NPK_ENOMEM, "out of memory");
    int64_t ns = maxo > 0 ? npk_ref_onnx_nms(b, s, maxo, iou, has_sth, sth, (int)npk_node_attr_i(c->node, "center_point_box", 0), sel) : 0;
    if (ns < 0) {
        free(sel);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    int64_t od[2] = {ns, 3};
    rc = npk_opctx_out(c, 0, NPK_DT_INT64, 2, od);
    if (!rc && ns) memcpy(c->out[0]->data, sel, sizeof(int64_t) * (size_t)(3 * ns));
    free(sel);
    return rc;
}

int npk_op_einsum(npk_opctx *c) {
    const char *eq = npk_node_attr_s(c->node, "equation", NULL);
    if (!eq) return npk_err(NPK_EINVAL, "attribute 'equation' is required");
    if (c->n_in < 1 || c->n_in > NPK_OP_EIN_MAX) return npk_err(NPK_EINVAL, "Einsum takes 1 to %d inputs", NPK_OP_EIN_MAX);
    const npk_tensor *in[NPK_OP_EIN_MAX];
    for (int i = 0; i < c->n_in; i++) {
        if (!(in[i] = IN(i))) return npk_err(NPK_EINVAL, "input %d is missing", i);
        if (in[i]->dtype != IN(0)->dtype) return npk_err(NPK_EINVAL, "inputs 0 and %d have different types", i);
    }
    if (IN(0)->dtype == NPK_DT_BOOL) return npk_err(NPK_EINVAL, "Einsum takes numeric tensors");
    int r, rc;
    int64_t d[NPK_MAX_RANK];
    if ((rc = npk_ref_onnx_einsum_shape(eq, c->n_in, in, &r, d))) return rc;
    if ((rc = npk_opctx_out(c, 0, IN(0)->dtype, r, d))) return rc;
    if (c->run) return npk_ref_onnx_einsum(eq, c->n_in, in, c->out[0]);
    return 0;
}

static int window(npk_opctx *c, int kind) {
    int rc;
    int64_t n = 0;
    if ((rc = npk_opc_need(c, 0, "size"))) return rc;
    if ((rc = scalar_i(IN(0), "size", &n))) return rc;
    if (n < 0) return npk_err(NPK_EINVAL, "size %lld is negative", (long long)n);
    int dt = (int)npk_node_attr_i(c->node, "output_datatype", NPK_DT_FLOAT);
    if (!npk_dtype_size(dt) || dt == NPK_DT_BOOL) return npk_err(NPK_EINVAL, "output_datatype %s is not supported", npk_dtype_name(dt));
    if ((rc = npk_opctx_out(c, 0, dt, 1, &n))) return rc;
    if (c->run) npk_ref_onnx_window(kind, (int)npk_node_attr_i(c->node, "periodic", 1), c->out[0]);
    return 0;
}
int npk_op_hannwindow(npk_opctx *c) { return window(c, 0); }
int npk_op_hammingwindow(npk_opctx *c) { return window(c, 1); }
int npk_op_blackmanwindow(npk_opctx *c) { return window(c, 2); }

int npk_op_dft(npk_opctx *c) {
    int rc, axis;
    if ((rc = npk_opc_need(c, 0, "input"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = npk_opc_need_float(x, "input"))) return rc;
    if (x->rank < 2 || (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2))
        return npk_err(NPK_EINVAL, "input must be [..., 1] (real) or [..., 2] (complex)");
    if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "axis", 1), x->rank, &axis))) return rc;
    if (axis == x->rank - 1) return npk_err(NPK_EINVAL, "axis cannot be the last (real/imaginary) dimension");
    int inverse = (int)npk_node_attr_i(c->node, "inverse", 0), onesided = (int)npk_node_attr_i(c->node, "onesided", 0);
    if (inverse && onesided) return npk_err(NPK_EINVAL, "inverse and onesided together are not allowed");
    int64_t len = x->dims[axis];
    if (HAS(1) && npk_tensor_numel(IN(1)) && (rc = scalar_i(IN(1), "dft_length", &len))) return rc;
    if (len < 1) return npk_err(NPK_EINVAL, "dft_length %lld must be positive", (long long)len);
    int64_t od[NPK_MAX_RANK];
    memcpy(od, x->dims, sizeof od);
    od[axis] = onesided ? len / 2 + 1 : len;
    od[x->rank - 1] = 2;
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, od))) return rc;
    if (c->run) return npk_ref_onnx_dft(x, axis, len, inverse, onesided, c->out[0]);
    return 0;
}

int npk_op_stft(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "signal")) || (rc = npk_opc_need(c, 1, "frame_step"))) return rc;
    const npk_tensor *x = IN(0), *w = IN(2);
    if ((rc = npk_opc_need_float(x, "signal"))) return rc;
    if (!(x->rank == 3 && (x->dims[2] == 1 || x->dims[2] == 2)) && x->rank != 2)
        return npk_err(NPK_EINVAL, "signal must be [batch, length, 1 or 2]");
    int64_t step = 0, flen = -1;
    if ((rc = scalar_i(IN(1), "frame_step", &step))) return rc;
    if (w && npk_tensor_numel(w)) {
        if (w->rank != 1) return npk_err(NPK_EINVAL, "window must be 1-D");
        flen = w->dims[0];
    } else {
        w = NULL;
    }
    if (HAS(3) && npk_tensor_numel(IN(3))) {
        int64_t fl = 0;
        if ((rc = scalar_i(IN(3), "frame_length", &fl))) return rc;
        if (flen >= 0 && fl != flen) return npk_err(NPK_EINVAL, "frame_length %lld differs from the window's %lld", (long long)fl, (long long)flen);
        flen = fl;
    }
    if (flen < 1 || step < 1 || flen > x->dims[1])
        return npk_err(NPK_EINVAL, "frame_length %lld and frame_step %lld do not fit a signal of %lld", (long long)flen,
                       (long long)step, (long long)x->dims[1]);
    int onesided = (int)npk_node_attr_i(c->node, "onesided", 1);
    int64_t od[4] = {x->dims[0], 1 + (x->dims[1] - flen) / step, onesided ? flen / 2 + 1 : flen, 2};
    if ((rc = npk_opctx_out(c, 0, x->dtype, 4, od))) return rc;
    if (c->run) return npk_ref_onnx_stft(x, step, w, flen, c->out[0]);
    return 0;
}

int npk_op_melweightmatrix(npk_opctx *c) {
    int rc;
    int64_t nmel = 0, dl = 0, sr = 0;
    double lo = 0, hi = 0;
    for (int i = 0; i < 5; i++)
        if ((rc = npk_opc_need(c, i, "num_mel_bins, dft_length, sample_rate, lower_edge_hertz and upper_edge_hertz"))) return rc;
    if ((rc = scalar_i(IN(0), "num_mel_bins", &nmel)) || (rc = scalar_i(IN(1), "dft_length", &dl)) ||
        (rc = scalar_i(IN(2), "sample_rate", &sr)) || (rc = scalar_f(IN(3), "lower_edge_hertz", &lo)) ||
        (rc = scalar_f(IN(4), "upper_edge_hertz", &hi)))
        return rc;
    if (nmel < 1 || dl < 1 || sr < 1 || lo < 0 || hi <= lo)
        return npk_err(NPK_EINVAL, "MelWeightMatrix needs positive bins, length and rate and 0 <= lower < upper edge");
    int dt = (int)npk_node_attr_i(c->node, "output_datatype", NPK_DT_FLOAT);
    if (!npk_dtype_size(dt) || dt == NPK_DT_BOOL) return npk_err(NPK_EINVAL, "output_datatype %s is not supported", npk_dtype_name(dt));
    int64_t od[2] = {dl / 2 + 1, nmel};
    if ((rc = npk_opctx_out(c, 0, dt, 2, od))) return rc;
    if (c->run) return npk_ref_onnx_melweight(nmel, dl, sr, lo, hi, c->out[0]);
    return 0;
}

int npk_op_roialign(npk_opctx *c) {
    int rc;
    for (int i = 0; i < 3; i++)
        if ((rc = npk_opc_need(c, i, "X, rois and batch_indices"))) return rc;
    const npk_tensor *x = IN(0), *r = IN(1), *b = IN(2);
    if ((rc = npk_opc_need_float(x, "X")) || (rc = npk_opc_need_float(r, "rois"))) return rc;
    if (x->rank != 4 || r->rank != 2 || r->dims[1] != 4 || b->rank != 1 || b->dims[0] != r->dims[0] || !npk_dtype_is_int(b->dtype))
        return npk_err(NPK_EINVAL, "RoiAlign needs X [N, C, H, W], rois [R, 4] and integer batch_indices [R]");
    const char *mode = npk_node_attr_s(c->node, "mode", "avg");
    if (strcmp(mode, "avg") && strcmp(mode, "max")) return npk_err(NPK_EINVAL, "unknown mode '%s'", mode);
    const char *ctm = npk_node_attr_s(c->node, "coordinate_transformation_mode", c->opset >= 16 ? "half_pixel" : "output_half_pixel");
    if (strcmp(ctm, "half_pixel") && strcmp(ctm, "output_half_pixel"))
        return npk_err(NPK_EINVAL, "unknown coordinate_transformation_mode '%s'", ctm);
    int64_t oh = npk_node_attr_i(c->node, "output_height", 1), ow = npk_node_attr_i(c->node, "output_width", 1);
    int64_t sr = npk_node_attr_i(c->node, "sampling_ratio", 0);
    if (oh < 1 || ow < 1 || sr < 0) return npk_err(NPK_EINVAL, "output sizes must be positive and sampling_ratio >= 0");
    int64_t od[4] = {r->dims[0], x->dims[1], oh, ow};
    if ((rc = npk_opctx_out(c, 0, x->dtype, 4, od))) return rc;
    if (c->run)
        return npk_ref_onnx_roialign(x, r, b, !strcmp(mode, "max"), oh, ow, sr, npk_node_attr_f(c->node, "spatial_scale", 1.0),
                                     !strcmp(ctm, "half_pixel"), c->out[0]);
    return 0;
}

int npk_op_maxroipool(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X")) || (rc = npk_opc_need(c, 1, "rois"))) return rc;
    const npk_tensor *x = IN(0), *r = IN(1);
    if ((rc = npk_opc_need_float(x, "X")) || (rc = npk_opc_need_float(r, "rois"))) return rc;
    if (x->rank != 4 || r->rank != 2 || r->dims[1] != 5)
        return npk_err(NPK_EINVAL, "MaxRoiPool needs X [N, C, H, W] and rois [R, 5]");
    const int64_t *ps;
    if (npk_node_attr_ints(c->node, "pooled_shape", &ps) != 2 || ps[0] < 1 || ps[1] < 1)
        return npk_err(NPK_EINVAL, "pooled_shape must be two positive sizes");
    int64_t od[4] = {r->dims[0], x->dims[1], ps[0], ps[1]};
    if ((rc = npk_opctx_out(c, 0, x->dtype, 4, od))) return rc;
    if (c->run) return npk_ref_onnx_maxroipool(x, r, ps[0], ps[1], npk_node_attr_f(c->node, "spatial_scale", 1.0), c->out[0]);
    return 0;
}

int npk_op_gridsample(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X")) || (rc = npk_opc_need(c, 1, "grid"))) return rc;
    const npk_tensor *x = IN(0), *g = IN(1);
    if ((rc = npk_opc_need_float(x, "X")) || (rc = npk_opc_need_float(g, "grid"))) return rc;
    if (x->rank != 4 || g->rank != 4 || g->dims[0] != x->dims[0] || g->dims[3] != 2)
        return npk_err(NPK_EINVAL, "GridSample needs X [N, C, H, W] and grid [N, H_out, W_out, 2]");
    const char *m = npk_node_attr_s(c->node, "mode", "bilinear"), *p = npk_node_attr_s(c->node, "padding_mode", "zeros");
    int mode = !strcmp(m, "bilinear") ? 0 : !strcmp(m, "nearest") ? 1 : !strcmp(m, "bicubic") ? 2 : -1;
    int pad = !strcmp(p, "zeros") ? 0 : !strcmp(p, "border") ? 1 : !strcmp(p, "reflection") ? 2 : -1;
    if (mode < 0) return npk_err(NPK_EINVAL, "unknown mode '%s'", m);
    if (pad < 0) return npk_err(NPK_EINVAL, "unknown padding_mode '%s'", p);
    int64_t od[4] = {x->dims[0], x->dims[1], g->dims[1], g->dims[2]};
    if ((rc = npk_opctx_out(c, 0, x->dtype, 4, od))) return rc;
    if (c->run) npk_ref_onnx_gridsample(x, g, mode, pad, (int)npk_node_attr_i(c->node, "align_corners", 0), c->out[0]);
    return 0;
}
