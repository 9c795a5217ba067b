// SPDX-License-Identifier: MIT
/* Node-level ONNX tensor and shape operators (kernels in src/ops/ref_onnx_shape.c):
 * Shape, Size, ConstantOfShape, Slice, Expand, Tile, Pad, Split, GatherElements,
 * ScatterElements/Scatter, GatherND, ScatterND, Trilu, Range, OneHot, Compress,
 * DepthToSpace, SpaceToDepth, NonZero, TopK, EyeLike, ReverseSequence. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ops.h"
#include "ops/fast_onnx.h"

#define IN(i) ((i) < c->n_in ? c->in[i] : NULL)
#define HAS(i) (IN(i) != NULL)

static int is_idx(int dt) { return dt == NPK_DT_INT32 || dt == NPK_DT_INT64; }

/* Integer vector from a 1-D (or scalar) int32/int64 input: count, or
 * -NPK_SHAPE_UNKNOWN when it has no data yet, or a negative error. */
static int int_list(const npk_tensor *t, const char *what, int64_t *v, int cap) {
    if (!is_idx(t->dtype)) return npk_err(NPK_EINVAL, "%s must be int32 or int64, got %s", what, npk_dtype_name(t->dtype));
    if (t->rank > 1) return npk_err(NPK_EINVAL, "%s must be 1-D", what);
    int64_t n = npk_tensor_numel(t);
    if (n > cap) return npk_err(NPK_EINVAL, "%s has %lld entries (at most %d)", what, (long long)n, cap);
    if (!t->data) return -NPK_SHAPE_UNKNOWN;
    for (int64_t i = 0; i < n; i++) v[i] = npk_ref_onnx_get_i(t->data, t->dtype, i);
    return (int)n;
}
#define LIST(t, what, v, cap, n)                          \
    do {                                                  \
        n = int_list(t, what, v, cap);                    \
        if (n == -NPK_SHAPE_UNKNOWN) return NPK_SHAPE_UNKNOWN; \
        if (n < 0) return n;                              \
    } while (0)

int npk_op_shape(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "data"))) return rc;
    const npk_tensor *x = IN(0);
    int64_t r = x->rank, s = 0, e = r;
    if (c->opset >= 15) {
        s = npk_node_attr_i(c->node, "start", 0);
        e = npk_node_attr_i(c->node, "end", r);
        if (s < 0) s += r;
        if (e < 0) e += r;
        s = s < 0 ? 0 : s > r ? r : s;
        e = e < 0 ? 0 : e > r ? r : e;
    }
    int64_t n = e > s ? e - s : 0;
    if ((rc = npk_opctx_out(c, 0, NPK_DT_INT64, 1, &n))) return rc;
    if (c->run)
        for (int64_t i = 0; i < n; i++) ((int64_t *)c->out[0]->data)[i] = x->dims[s + i];
    return 0;
}

int npk_op_size(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "data"))) return rc;
    if ((rc = npk_opctx_out(c, 0, NPK_DT_INT64, 0, NULL))) return rc;
    if (c->run) ((int64_t *)c->out[0]->data)[0] = npk_tensor_numel(IN(0));
    return 0;
}

int npk_op_constantofshape(npk_opctx *c) {
    int rc, n;
    int64_t d[NPK_MAX_RANK];
    if ((rc = npk_opc_need(c, 0, "input"))) return rc;
    if (IN(0)->dtype != NPK_DT_INT64) return npk_err(NPK_EINVAL, "input must be int64");
    LIST(IN(0), "input", d, NPK_MAX_RANK, n);
    const npk_attr *v = npk_node_attr(c->node, "value");
    if (v && (v->type != NPK_ATTR_TENSOR || npk_tensor_numel(v->t) != 1))
        return npk_err(NPK_EINVAL, "value must be a one-element tensor");
    int dt = v ? v->t->dtype : NPK_DT_FLOAT;
    if (!npk_dtype_size(dt)) return npk_err(NPK_EUNSUPPORTED, "value of type %s is not supported", npk_dtype_name(dt));
    if ((rc = npk_opctx_out(c, 0, dt, n, d))) return rc;
    if (c->run && v) {
        int64_t cnt = npk_tensor_numel(c->out[0]);
        size_t es = npk_dtype_size(dt);
        for (int64_t i = 0; i < cnt; i++) memcpy((uint8_t *)c->out[0]->data + (size_t)i * es, v->t->data, es);
    }
    return 0;
}

int npk_op_slice(npk_opctx *c) {
    int rc, ns, ne, na, nst;
    if ((rc = npk_opc_need(c, 0, "data"))) return rc;
    const npk_tensor *x = IN(0);
    int64_t st[NPK_MAX_RANK], en[NPK_MAX_RANK], ax[NPK_MAX_RANK], sp[NPK_MAX_RANK];
    if (c->opset < 10) {
        const int64_t *p;
        ns = (int)npk_node_attr_ints(c->node, "starts", &p);
        if (ns > NPK_MAX_RANK) return npk_err(NPK_EINVAL, "too many starts");
        if (ns) memcpy(st, p, sizeof(int64_t) * (size_t)ns);
        ne = (int)npk_node_attr_ints(c->node, "ends", &p);
        if (ne > NPK_MAX_RANK) return npk_err(NPK_EINVAL, "too many ends");
        if (ne) memcpy(en, p, sizeof(int64_t) * (size_t)ne);
        na = (int)npk_node_attr_ints(c->node, "axes", &p);
        if (na > NPK_MAX_RANK) return npk_err(NPK_EINVAL, "too many axes");
        if (na) memcpy(ax, p, sizeof(int64_t) * (size_t)na);
        nst = 0;
    } else {
        if ((rc = npk_opc_need(c, 1, "starts")) || (rc = npk_opc_need(c, 2, "ends"))) return rc;
        LIST(IN(1), "starts", st, NPK_MAX_RANK, ns);
        LIST(IN(2), "ends", en, NPK_MAX_RANK, ne);
        na = 0;
        nst = 0;
        if (HAS(3)) LIST(IN(3), "axes", ax, NPK_MAX_RANK, na);
        if (HAS(4)) LIST(IN(4), "steps", sp, NPK_MAX_RANK, nst);
    }
    if (ns != ne || (na && na != ns) || (nst && nst != ns)) return npk_err(NPK_EINVAL, "starts, ends, axes and steps differ in length");
    int64_t start[NPK_MAX_RANK], step[NPK_MAX_RANK], d[NPK_MAX_RANK];
    int seen[NPK_MAX_RANK] = {0};
    for (int i = 0; i < x->rank; i++) {
        start[i] = 0;
        step[i] = 1;
        d[i] = x->dims[i];
    }
    for (int i = 0; i < ns; i++) {
        int a;
        if ((rc = npk_opc_axis(na ? ax[i] : i, x->rank, &a))) return rc;
        if (seen[a]++) return npk_err(NPK_EINVAL, "axis %d repeated", a);
        int64_t dim = x->dims[a], s = st[i], e = en[i], k = nst ? sp[i] : 1;
        if (k == 0) return npk_err(NPK_EINVAL, "step 0");
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        if (k > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
        } else {
            s = s < 0 ? -1 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
        }
        int64_t len = k > 0 ? (e > s ? (e - s + k - 1) / k : 0) : (s > e ? (s - e + (-k) - 1) / (-k) : 0);
        start[a] = len ? s : 0;
        step[a] = k;
        d[a] = len;
    }
    if ((rc = npk_opctx_out_raw(c, 0, x->dtype, x->rank, d))) return rc; /* written whole */
    if (c->run && (c->golden || npk_fast_slice(x, start, step, c->out[0]))) npk_ref_onnx_slice(x, start, step, c->out[0]);
    return 0;
}

int npk_op_expand(npk_opctx *c) {
    int rc, n, ro;
    int64_t s[NPK_MAX_RANK], d[NPK_MAX_RANK];
    if ((rc = npk_opc_need(c, 0, "input")) || (rc = npk_opc_need(c, 1, "shape"))) return rc;
    const npk_tensor *x = IN(0);
    LIST(IN(1), "shape", s, NPK_MAX_RANK, n);
    if (npk_ref_onnx_bcast_shape(x->rank, x->dims, n, s, &ro, d)) return npk_err(NPK_EINVAL, "shape does not broadcast with the input");
    if ((rc = npk_opctx_out(c, 0, x->dtype, ro, d))) return rc;
    if (c->run) npk_ref_onnx_expand(x, c->out[0]);
    return 0;
}

int npk_op_tile(npk_opctx *c) {
    int rc, n;
    int64_t rep[NPK_MAX_RANK], d[NPK_MAX_RANK];
    if ((rc = npk_opc_need(c, 0, "input")) || (rc = npk_opc_need(c, 1, "repeats"))) return rc;
    const npk_tensor *x = IN(0);
    if (c->opset < 6) { /* Tile-1: input, tiles (count), axis: repeat along one axis */
        int64_t t, a;
        int ax;
        if ((rc = npk_opc_need(c, 2, "axis"))) return rc;
        if (npk_tensor_numel(IN(1)) != 1 || npk_tensor_numel(IN(2)) != 1) return npk_err(NPK_EINVAL, "tiles and axis must be scalars");
        if (!IN(1)->data || !IN(2)->data) return NPK_SHAPE_UNKNOWN;
        t = npk_ref_onnx_get_i(IN(1)->data, IN(1)->dtype, 0);
        a = npk_ref_onnx_get_i(IN(2)->data, IN(2)->dtype, 0);
        if ((rc = npk_opc_axis(a, x->rank, &ax))) return rc;
        n = x->rank;
        for (int i = 0; i < n; i++) rep[i] = i == ax ? t : 1;
    } else {
        LIST(IN(1), "repeats", rep, NPK_MAX_RANK, n);
    }
    if (n != x->rank) return npk_err(NPK_EINVAL, "repeats has %d entries for rank %d", n, x->rank);
    for (int i = 0; i < n; i++) {
        if (rep[i] < 0) return npk_err(NPK_EINVAL, "negative repeat");
        d[i] = x->dims[i] * rep[i];
    }
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, d))) return rc;
    if (c->run) npk_ref_onnx_tile(x, c->out[0]);
    return 0;
}

int npk_op_pad(npk_opctx *c) {
    int rc, np, na = 0;
    if ((rc = npk_opc_need(c, 0, "data"))) return rc;
    const npk_tensor *x = IN(0);
    int64_t pads[2 * NPK_MAX_RANK], ax[NPK_MAX_RANK];
    double cval = 0;
    const npk_tensor *cv = NULL;
    if (c->opset < 11) {
        const int64_t *p;
        np = (int)npk_node_attr_ints(c->node, c->opset < 2 ? "paddings" : "pads", &p);
        if (np > 2 * NPK_MAX_RANK) return npk_err(NPK_EINVAL, "too many pads");
        if (np) memcpy(pads, p, sizeof(int64_t) * (size_t)np);
        cval = npk_node_attr_f(c->node, "value", 0.0);
    } else {
        if ((rc = npk_opc_need(c, 1, "pads"))) return rc;
        if (IN(1)->dtype != NPK_DT_INT64) return npk_err(NPK_EINVAL, "pads must be int64");
        LIST(IN(1), "pads", pads, 2 * NPK_MAX_RANK, np);
        if (HAS(2)) {
            cv = IN(2);
            if (cv->dtype != x->dtype || npk_tensor_numel(cv) != 1) return npk_err(NPK_EINVAL, "constant_value must be a scalar of the data's type");
            if (!cv->data && c->run) return npk_err(NPK_EINVAL, "constant_value has no data");
        }
        if (HAS(3)) LIST(IN(3), "axes", ax, NPK_MAX_RANK, na);
    }
    int n_ax = na ? na : x->rank;
    if (np != 2 * n_ax) return npk_err(NPK_EINVAL, "pads has %d entries, %d expected", np, 2 * n_ax);
    int64_t pb[NPK_MAX_RANK] = {0}, pe[NPK_MAX_RANK] = {0}, d[NPK_MAX_RANK];
    for (int i = 0; i < n_ax; i++) {
        int a = i;
        if (na && (rc = npk_opc_axis(ax[i], x->rank, &a))) return rc;
        pb[a] = pads[i];
        pe[a] = pads[n_ax + i];
    }
    const char *mode = npk_node_attr_s(c->node, "mode", "constant");
    int m = !strcmp(mode, "constant") ? NPK_ONNX_PAD_CONSTANT : !strcmp(mode, "reflect") ? NPK_ONNX_PAD_REFLECT
            : !strcmp(mode, "edge") ? NPK_ONNX_PAD_EDGE : !strcmp(mode, "wrap") ? NPK_ONNX_PAD_WRAP : -1;
    if (m < 0) return npk_err(NPK_EINVAL, "unknown mode '%s'", mode);
    for (int i = 0; i < x->rank; i++) {
        d[i] = x->dims[i] + pb[i] + pe[i];
        if (d[i] < 0) return npk_err(NPK_EINVAL, "pads crop axis %d below zero", i);
        if (m == NPK_ONNX_PAD_REFLECT && x->dims[i] < 2 && (pb[i] > 0 || pe[i] > 0))
            return npk_err(NPK_EINVAL, "reflect padding needs at least 2 elements on axis %d", i);
        if (m != NPK_ONNX_PAD_CONSTANT && x->dims[i] == 0 && (pb[i] > 0 || pe[i] > 0))
            return npk_err(NPK_EINVAL, "%s padding of an empty axis %d", mode, i);
    }
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, d))) return rc;
    if (!c->run) return 0;
    uint8_t cbuf[8] = {0};
    if (cv) memcpy(cbuf, cv->data, npk_dtype_size(x->dtype));
    else {
        npk_ref_onnx_set_f(cbuf, x->dtype, 0, cval);
    }
    if (c->golden || npk_fast_pad(x, pb, m, cbuf, c->out[0])) npk_ref_onnx_pad(x, pb, m, cbuf, c->out[0]);
    return 0;
}

int npk_op_split(npk_opctx *c) {
    int rc, axis, ns = 0;
    if ((rc = npk_opc_need(c, 0, "input"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "axis", 0), x->rank, &axis))) return rc;
    int64_t sp[NPK_OP_MAX_IO];
    if ((c->opset >= 13 || c->opset < 2) && HAS(1)) {
        LIST(IN(1), "split", sp, NPK_OP_MAX_IO, ns);
    } else if (c->opset < 13) {
        const int64_t *p;
        ns = (int)npk_node_attr_ints(c->node, "split", &p);
        if (ns > NPK_OP_MAX_IO) return npk_err(NPK_EINVAL, "too many splits");
        if (ns) memcpy(sp, p, sizeof(int64_t) * (size_t)ns);
    }
    int nout = c->n_out;
    int64_t dim = x->dims[axis];
    if (ns) {
        if (ns != nout) return npk_err(NPK_EINVAL, "split has %d entries for %d outputs", ns, nout);
        int64_t tot = 0;
        for (int i = 0; i < ns; i++) {
            if (sp[i] < 0) return npk_err(NPK_EINVAL, "negative split");
            tot += sp[i];
        }
        if (tot != dim) return npk_err(NPK_EINVAL, "split sums to %lld, axis has %lld", (long long)tot, (long long)dim);
    } else {
        int64_t no = npk_node_attr_i(c->node, "num_outputs", nout);
        if (no != nout) return npk_err(NPK_EINVAL, "num_outputs %lld but %d outputs", (long long)no, nout);
        int64_t chunk = c->opset >= 18 ? (dim + nout - 1) / nout : dim / nout;
        if (c->opset < 18 && dim % nout) return npk_err(NPK_EINVAL, "axis of %lld does not split into %d equal parts", (long long)dim, nout);
        for (int i = 0; i < nout; i++) {
            int64_t left = dim - chunk * i;
            sp[i] = left < chunk ? (left > 0 ? left : 0) : chunk;
        }
    }
    int64_t off = 0;
    for (int i = 0; i < nout; i++) {
        int64_t d[NPK_MAX_RANK], start[NPK_MAX_RANK] = {0}, step[NPK_MAX_RANK];
        memcpy(d, x->dims, sizeof d);
        d[axis] = sp[i];
        for (int k = 0; k < x->rank; k++) step[k] = 1;
        start[axis] = off;
        off += sp[i];
        if ((rc = npk_opctx_out(c, i, x->dtype, x->rank, d))) return rc;
        if (c->run && c->out[i] && (c->golden || npk_fast_slice(x, start, step, c->out[i])))
            npk_ref_onnx_slice(x, start, step, c->out[i]);
    }
    return 0;
}

int npk_op_gather_elements(npk_opctx *c) {
    int rc, axis;
    if ((rc = npk_opc_need(c, 0, "data")) || (rc = npk_opc_need(c, 1, "indices"))) return rc;
    const npk_tensor *x = IN(0), *ind = IN(1);
    if (!is_idx(ind->dtype)) return npk_err(NPK_EINVAL, "indices must be int32 or int64");
    if (ind->rank != x->rank) return npk_err(NPK_EINVAL, "indices must have the data's rank");
    if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "axis", 0), x->rank, &axis))) return rc;
    if ((rc = npk_opctx_out(c, 0, x->dtype, ind->rank, ind->dims))) return rc;
    if (c->run) return npk_ref_onnx_gather_elements(x, ind, axis, c->out[0]);
    return 0;
}

static int reduction_of(const npk_opctx *c, int *red) {
    const char *r = npk_node_attr_s(c->node, "reduction", "none");
    *red = !strcmp(r, "none") ? NPK_ONNX_SCATTER_NONE : !strcmp(r, "add") ? NPK_ONNX_SCATTER_ADD
           : !strcmp(r, "mul") ? NPK_ONNX_SCATTER_MUL : !strcmp(r, "max") ? NPK_ONNX_SCATTER_MAX
           : !strcmp(r, "min") ? NPK_ONNX_SCATTER_MIN : -1;
    if (*red < 0) return npk_err(NPK_EINVAL, "unknown reduction '%s'", r);
    return 0;
}

int npk_op_scatter_elements(npk_opctx *c) {
    int rc, axis, red;
    for (int i = 0; i < 3; i++)
        if ((rc = npk_opc_need(c, i, i == 0 ? "data" : i == 1 ? "indices" : "updates"))) return rc;
    const npk_tensor *x = IN(0), *ind = IN(1), *u = IN(2);
    if (!is_idx(ind->dtype)) return npk_err(NPK_EINVAL, "indices must be int32 or int64");
    if (ind->rank != x->rank || u->rank != ind->rank || memcmp(u->dims, ind->dims, sizeof(int64_t) * (size_t)u->rank) ||
        u->dtype != x->dtype)
        return npk_err(NPK_EINVAL, "indices and updates must have one shape of the data's rank (updates of its type)");
    if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "axis", 0), x->rank, &axis)) || (rc = reduction_of(c, &red))) return rc;
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, x->dims))) return rc;
    if (c->run) return npk_ref_onnx_scatter_elements(x, ind, u, axis, red, c->out[0]);
    return 0;
}

int npk_op_gather_nd(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "data")) || (rc = npk_opc_need(c, 1, "indices"))) return rc;
    const npk_tensor *x = IN(0), *ind = IN(1);
    if (ind->dtype != NPK_DT_INT64) return npk_err(NPK_EINVAL, "indices must be int64");
    int b = (int)npk_node_attr_i(c->node, "batch_dims", 0);
    if (ind->rank < 1 || b < 0 || b >= ind->rank || b >= x->rank) return npk_err(NPK_EINVAL, "bad batch_dims %d", b);
    int64_t k = ind->dims[ind->rank - 1];
    if (k < 0 || b + k > x->rank) return npk_err(NPK_EINVAL, "index tuples of %lld entries for data rank %d", (long long)k, x->rank);
    for (int i = 0; i < b; i++)
        if (ind->dims[i] != x->dims[i]) return npk_err(NPK_EINVAL, "batch dimension %d differs", i);
    int64_t d[NPK_MAX_RANK + 8];
    int r = 0;
    for (int i = 0; i < ind->rank - 1; i++) d[r++] = ind->dims[i];
    for (int i = b + (int)k; i < x->rank; i++) d[r++] = x->dims[i];
    if (r > NPK_MAX_RANK) return npk_err(NPK_EUNSUPPORTED, "output rank %d exceeds %d", r, NPK_MAX_RANK);
    if ((rc = npk_opctx_out(c, 0, x->dtype, r, d))) return rc;
    if (c->run) return npk_ref_onnx_gather_nd(x, ind, b, c->out[0]);
    return 0;
}

int npk_op_scatter_nd(npk_opctx *c) {
    int rc, red;
    for (int i = 0; i < 3; i++)
        if ((rc = npk_opc_need(c, i, i == 0 ? "data" : i == 1 ? "indices" : "updates"))) return rc;
    const npk_tensor *x = IN(0), *ind = IN(1), *u = IN(2);
    if (ind->dtype != NPK_DT_INT64 || ind->rank < 1) return npk_err(NPK_EINVAL, "indices must be int64 of rank >= 1");
    int64_t k = ind->dims[ind->rank - 1];
    if (k < 1 || k > x->rank) return npk_err(NPK_EINVAL, "index tuples of %lld entries for data rank %d", (long long)k, x->rank);
    int ur = ind->rank - 1 + x->rank - (int)k;
    int bad = u->rank != ur || u->dtype != x->dtype;
    for (int i = 0; !bad && i < ur; i++)
        bad = u->dims[i] != (i < ind->rank - 1 ? ind->dims[i] : x->dims[i - (ind->rank - 1) + k]);
    if (bad) return npk_err(NPK_EINVAL, "updates do not have the shape indices.shape[:-1] + data.shape[k:]");
    if ((rc = reduction_of(c, &red))) return rc;
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, x->dims))) return rc;
    if (c->run) return npk_ref_onnx_scatter_nd(x, ind, u, red, c->out[0]);
    return 0;
}

int npk_op_trilu(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "input"))) return rc;
    const npk_tensor *x = IN(0);
    if (x->rank < 2) return npk_err(NPK_EINVAL, "input must have rank >= 2");
    int64_t k = 0;
    if (HAS(1)) {
        if (IN(1)->dtype != NPK_DT_INT64 || npk_tensor_numel(IN(1)) != 1) return npk_err(NPK_EINVAL, "k must be an int64 scalar");
        if (!IN(1)->data) {
            if (c->run) return npk_err(NPK_EINVAL, "k has no data");
        } else {
            k = ((const int64_t *)IN(1)->data)[0];
        }
    }
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, x->dims))) return rc;
    if (c->run) npk_ref_onnx_trilu(x, (int)npk_node_attr_i(c->node, "upper", 1), k, c->out[0]);
    return 0;
}

int npk_op_range(npk_opctx *c) {
    int rc;
    for (int i = 0; i < 3; i++)
        if ((rc = npk_opc_need(c, i, i == 0 ? "start" : i == 1 ? "limit" : "delta"))) return rc;
    int dt = IN(0)->dtype;
    for (int i = 0; i < 3; i++) {
        if (IN(i)->dtype != dt || npk_tensor_numel(IN(i)) != 1) return npk_err(NPK_EINVAL, "start, limit, delta must be scalars of one type");
        if (!IN(i)->data) return NPK_SHAPE_UNKNOWN;
    }
    if (!npk_dtype_size(dt) || dt == NPK_DT_BOOL) return npk_err(NPK_EINVAL, "type %s not accepted", npk_dtype_name(dt));
    double s = npk_ref_onnx_get_f(IN(0)->data, dt, 0), l = npk_ref_onnx_get_f(IN(1)->data, dt, 0),
           dl = npk_ref_onnx_get_f(IN(2)->data, dt, 0);
    if (dl == 0) return npk_err(NPK_EINVAL, "delta is 0");
    double cnt = ceil((l - s) / dl);
    int64_t n = cnt > 0 ? (int64_t)cnt : 0;
    if ((rc = npk_opctx_out(c, 0, dt, 1, &n))) return rc;
    if (c->run) npk_ref_onnx_range(s, dl, c->out[0]);
    return 0;
}

int npk_op_onehot(npk_opctx *c) {
    int rc, axis;
    for (int i = 0; i < 3; i++)
        if ((rc = npk_opc_need(c, i, i == 0 ? "indices" : i == 1 ? "depth" : "values"))) return rc;
    const npk_tensor *ind = IN(0), *dep = IN(1), *val = IN(2);
    if (npk_tensor_numel(dep) != 1 || npk_tensor_numel(val) != 2) return npk_err(NPK_EINVAL, "depth must be a scalar and values have 2 elements");
    if (!dep->data) return NPK_SHAPE_UNKNOWN;
    int64_t depth = (int64_t)npk_ref_onnx_get_f(dep->data, dep->dtype, 0);
    if (depth < 1) return npk_err(NPK_EINVAL, "depth %lld < 1", (long long)depth);
    int r = ind->rank + 1;
    if (r > NPK_MAX_RANK) return npk_err(NPK_EUNSUPPORTED, "output rank %d exceeds %d", r, NPK_MAX_RANK);
    if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "axis", -1), r, &axis))) return rc;
    int64_t d[NPK_MAX_RANK];
    for (int i = 0, k = 0; i < r; i++) d[i] = i == axis ? depth : ind->dims[k++];
    if ((rc = npk_opctx_out(c, 0, val->dtype, r, d))) return rc;
    if (c->run) npk_ref_onnx_onehot(ind, depth, val, axis, c->out[0]);
    return 0;
}

int npk_op_compress(npk_opctx *c) {
    int rc, axis = -1;
    if ((rc = npk_opc_need(c, 0, "input")) || (rc = npk_opc_need(c, 1, "condition"))) return rc;
    const npk_tensor *x = IN(0), *cd = IN(1);
    if (cd->dtype != NPK_DT_BOOL || cd->rank != 1) return npk_err(NPK_EINVAL, "condition must be 1-D bool");
    const npk_attr *aa = npk_node_attr(c->node, "axis");
    if (aa && (rc = npk_opc_axis(aa->i, x->rank, &axis))) return rc;
    if (!cd->data) return NPK_SHAPE_UNKNOWN;
    int64_t len = axis < 0 ? npk_tensor_numel(x) : x->dims[axis], n = cd->dims[0] < len ? cd->dims[0] : len, k = 0;
    int64_t *sel = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!sel) return npk_err(NPK_ENOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++)
        if (((const uint8_t *)cd->data)[i]) sel[k++] = i;
    int64_t d[NPK_MAX_RANK];
    memcpy(d, x->dims, sizeof d);
    if (axis >= 0) d[axis] = k;
    rc = axis < 0 ? npk_opctx_out(c, 0, x->dtype, 1, &k) : npk_opctx_out(c, 0, x->dtype, x->rank, d);
    if (!rc && c->run) npk_ref_onnx_compress(x, sel, k, axis, c->out[0]);
    free(sel);
    return rc;
}

static int d2s(npk_opctx *c, int to_space) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "input"))) return rc;
    const npk_tensor *x = IN(0);
    int64_t bs = npk_node_attr_i(c->node, "blocksize", 0);
    if (x->rank != 4 || bs < 1) return npk_err(NPK_EINVAL, "input must be 4-D and blocksize >= 1");
    int64_t d[4] = {x->dims[0], x->dims[1], x->dims[2], x->dims[3]};
    if (to_space) {
        if (d[1] % (bs * bs)) return npk_err(NPK_EINVAL, "channels not divisible by blocksize^2");
        d[1] /= bs * bs;
        d[2] *= bs;
        d[3] *= bs;
    } else {
        if (d[2] % bs || d[3] % bs) return npk_err(NPK_EINVAL, "height/width not divisible by blocksize");
        d[1] *= bs * bs;
        d[2] /= bs;
        d[3] /= bs;
    }
    const char *mode = npk_node_attr_s(c->node, "mode", "DCR");
    if (to_space && strcmp(mode, "DCR") && strcmp(mode, "CRD")) return npk_err(NPK_EINVAL, "unknown mode '%s'", mode);
    if ((rc = npk_opctx_out(c, 0, x->dtype, 4, d))) return rc;
    if (!c->run) return 0;
    if (to_space) npk_ref_onnx_depth_to_space(x, bs, !strcmp(mode, "CRD"), c->out[0]);
    else npk_ref_onnx_space_to_depth(x, bs, c->out[0]);
    return 0;
}
int npk_op_depth_to_space(npk_opctx *c) { return d2s(c, 1); }
int npk_op_space_to_depth(npk_opctx *c) { return d2s(c, 0); }

int npk_op_nonzero(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X"))) return rc;
    const npk_tensor *x = IN(0);
    if (!x->data) return NPK_SHAPE_UNKNOWN;
    int64_t d[2] = {x->rank, npk_ref_onnx_count_nonzero(x)};
    if ((rc = npk_opctx_out(c, 0, NPK_DT_INT64, 2, d))) return rc;
    if (c->run) npk_ref_onnx_nonzero(x, c->out[0]);
    return 0;
}

int npk_op_topk(npk_opctx *c) {
    int rc, axis;
    if ((rc = npk_opc_need(c, 0, "X"))) return rc;
    const npk_tensor *x = IN(0);
    int64_t k;
    if (c->opset < 10) {
        k = npk_node_attr_i(c->node, "k", -1);
    } else {
        if ((rc = npk_opc_need(c, 1, "K"))) return rc;
        if (IN(1)->dtype != NPK_DT_INT64 || npk_tensor_numel(IN(1)) != 1) return npk_err(NPK_EINVAL, "K must be a 1-element int64");
        if (!IN(1)->data) return NPK_SHAPE_UNKNOWN;
        k = ((const int64_t *)IN(1)->data)[0];
    }
    if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "axis", -1), x->rank, &axis))) return rc;
    if (k < 0 || k > x->dims[axis]) return npk_err(NPK_EINVAL, "k %lld out of range for axis of %lld", (long long)k, (long long)x->dims[axis]);
    int64_t d[NPK_MAX_RANK];
    memcpy(d, x->dims, sizeof d);
    d[axis] = k;
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, d)) || (rc = npk_opctx_out(c, 1, NPK_DT_INT64, x->rank, d))) return rc;
    if (!c->run) return 0;
    return npk_ref_onnx_topk(x, axis, k, (int)npk_node_attr_i(c->node, "largest", 1), c->out[0], c->n_out > 1 ? c->out[1] : NULL);
}

int npk_op_eyelike(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "input"))) return rc;
    const npk_tensor *x = IN(0);
    if (x->rank != 2) return npk_err(NPK_EINVAL, "input must be 2-D");
    int dt = (int)npk_node_attr_i(c->node, "dtype", x->dtype);
    if (!npk_dtype_size(dt)) return npk_err(NPK_EUNSUPPORTED, "dtype %s is not supported", npk_dtype_name(dt));
    if ((rc = npk_opctx_out(c, 0, dt, 2, x->dims))) return rc;
    if (c->run) npk_ref_onnx_eyelike(npk_node_attr_i(c->node, "k", 0), c->out[0]);
    return 0;
}

int npk_op_reverse_sequence(npk_opctx *c) {
    int rc, ba, ta;
    if ((rc = npk_opc_need(c, 0, "input")) || (rc = npk_opc_need(c, 1, "sequence_lens"))) return rc;
    const npk_tensor *x = IN(0), *l = IN(1);
    if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "batch_axis", 1), x->rank, &ba)) ||
        (rc = npk_opc_axis(npk_node_attr_i(c->node, "time_axis", 0), x->rank, &ta)))
        return rc;
    if (ba == ta || x->rank < 2) return npk_err(NPK_EINVAL, "batch_axis and time_axis must differ");
    if (l->dtype != NPK_DT_INT64 || l->rank != 1 || l->dims[0] != x->dims[ba])
        return npk_err(NPK_EINVAL, "sequence_lens must be int64 [batch]");
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, x->dims))) return rc;
    if (!c->run) return 0;
    for (int64_t i = 0; i < l->dims[0]; i++) {
        int64_t v = ((const int64_t *)l->data)[i];
        if (v < 0 || v > x->dims[ta]) return npk_err(NPK_EINVAL, "sequence_lens[%lld] = %lld out of range", (long long)i, (long long)v);
    }
    npk_ref_onnx_reverse_sequence(x, l, ba, ta, c->out[0]);
    return 0;
}
