// SPDX-License-Identifier: MIT
/* Node-level ONNX operators: attributes, shape/type inference, kernel calls,
 * and the handler table (the table's names and families, and what the
 * handlers of every ops*.c share, are ops_common.c). */
#include "graph/ops.h"
#include "ops/fast_onnx.h"

#include <assert.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Run a fast kernel (src/ops/fast_onnx.c) unless the run asks for the golden:
 * 0 = done, 1 = the caller runs the golden kernel, < 0 = an error set here. */
static int fast_rc(int rc) {
    if (rc < 0) return npk_err(-rc, "out of memory");
    return rc;
}
#define FAST(c, call) ((c)->golden ? 1 : fast_rc(call))

#define IN(i) ((i) < c->n_in ? c->in[i] : NULL)
#define HAS(i) (IN(i) != NULL)

static int is_q8(int dt) { return dt == NPK_DT_INT8 || dt == NPK_DT_UINT8; }

static int check_numeric(const npk_tensor *t, const char *what) {
    if (!npk_dtype_size(t->dtype) || t->dtype == NPK_DT_BOOL)
        return npk_err(NPK_EINVAL, "%s has type %s, which the operator does not accept", what, npk_dtype_name(t->dtype));
    return 0;
}

static int check_scalar_or_1d(const npk_tensor *t, const char *what) {
    if (t->rank > 1) return npk_err(NPK_EINVAL, "%s must be a scalar or 1-D, got rank %d", what, t->rank);
    return 0;
}

/* ---- data movement ------------------------------------------------------------ */

static int copy_reshaped(npk_opctx *c, int rank, const int64_t *dims) {
    const npk_tensor *x = IN(0);
    int rc = npk_opctx_out(c, 0, x->dtype, rank, dims);
    if (rc) return rc;
    if (c->run && c->out[0]) memcpy(c->out[0]->data, x->data, npk_tensor_bytes(x));
    return 0;
}

static int op_reshape(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "data"))) return rc;
    const npk_tensor *x = IN(0);
    const int64_t *shp;
    int64_t buf[NPK_MAX_RANK];
    int n;
    if (c->opset < 5 && !HAS(1)) {
        n = (int)npk_node_attr_ints(c->node, "shape", &shp);
    } else {
        if ((rc = npk_opc_need(c, 1, "shape"))) return rc;
        if (IN(1)->dtype != NPK_DT_INT64) return npk_err(NPK_EINVAL, "shape must be int64");
        if (IN(1)->rank != 1) return npk_err(NPK_EINVAL, "shape must be 1-D");
        if (!IN(1)->data) return NPK_SHAPE_UNKNOWN;
        n = (int)IN(1)->dims[0];
        shp = IN(1)->data;
    }
    if (n > NPK_MAX_RANK) return npk_err(NPK_EUNSUPPORTED, "target rank %d exceeds %d", n, NPK_MAX_RANK);
    int allowzero = (int)npk_node_attr_i(c->node, "allowzero", 0);
    int neg = -1;
    int64_t known = 1, total = npk_tensor_numel(x);
    for (int i = 0; i < n; i++) {
        int64_t d = shp[i];
        if (d == 0 && !allowzero) {
            if (i >= x->rank) return npk_err(NPK_EINVAL, "shape[%d] = 0 copies a dimension the input does not have", i);
            d = x->dims[i];
        }
        if (d == -1) {
            if (neg >= 0) return npk_err(NPK_EINVAL, "shape has more than one -1");
            neg = i;
            buf[i] = 1;
            continue;
        }
        if (d < 0) return npk_err(NPK_EINVAL, "shape[%d] = %lld is invalid", i, (long long)d);
        if (d > 0 && known > ((int64_t)1 << 40) / d) return npk_err(NPK_EINVAL, "shape is too large");
        buf[i] = d;
        known *= d;
    }
    if (neg >= 0) {
        if (known == 0 || total % known) return npk_err(NPK_EINVAL, "cannot infer the -1 dimension of the shape");
        buf[neg] = total / known;
        known *= buf[neg];
    }
    if (known != total)
        return npk_err(NPK_EINVAL, "cannot reshape %lld elements into %lld", (long long)total, (long long)known);
    return copy_reshaped(c, n, buf);
}

static int op_flatten(npk_opctx *c) {
    int rc, axis;
    if ((rc = npk_opc_need(c, 0, "input"))) return rc;
    const npk_tensor *x = IN(0);
    int64_t a = npk_node_attr_i(c->node, "axis", 1);
    if (a < -x->rank || a > x->rank) return npk_err(NPK_EINVAL, "axis %lld out of range for rank %d", (long long)a, x->rank);
    axis = (int)(a < 0 ? a + x->rank : a);
    int64_t d[2] = {1, 1};
    for (int i = 0; i < x->rank; i++) d[i < axis ? 0 : 1] *= x->dims[i];
    return copy_reshaped(c, 2, d);
}

/* Squeeze and Unsqueeze: their data input and axes (the attribute, or input 1
 * from opset 13): the count of axes (0 = none given), NPK_SHAPE_UNKNOWN (axes
 * known only at run time) or a negative error. */
static int squeeze_axes(npk_opctx *c, int64_t *axes) {
    int rc = npk_opc_need(c, 0, "data");
    if (rc) return rc;
    int na = npk_opc_axes(c, axes, 13);
    return na == -NPK_SHAPE_UNKNOWN ? NPK_SHAPE_UNKNOWN : na;
}

static int op_squeeze(npk_opctx *c) {
    int rc;
    int64_t axes[NPK_MAX_RANK], d[NPK_MAX_RANK];
    int na = squeeze_axes(c, axes);
    if (na < 0 || na == NPK_SHAPE_UNKNOWN) return na;
    const npk_tensor *x = IN(0);
    int drop[NPK_MAX_RANK] = {0}, r = 0;
    for (int i = 0; i < na; i++) {
        int a;
        if ((rc = npk_opc_axis(axes[i], x->rank, &a))) return rc;
        if (x->dims[a] != 1) return npk_err(NPK_EINVAL, "cannot squeeze axis %d of size %lld", a, (long long)x->dims[a]);
        drop[a] = 1;
    }
    for (int i = 0; i < x->rank; i++)
        if (!(na ? drop[i] : x->dims[i] == 1)) d[r++] = x->dims[i];
    return copy_reshaped(c, r, d);
}

static int op_unsqueeze(npk_opctx *c) {
    int rc;
    int64_t axes[NPK_MAX_RANK], d[NPK_MAX_RANK];
    int na = squeeze_axes(c, axes);
    if (na < 0 || na == NPK_SHAPE_UNKNOWN) return na;
    const npk_tensor *x = IN(0);
    if (na == 0) return npk_err(NPK_EINVAL, "axes are required");
    int r = x->rank + na, ins[NPK_MAX_RANK + 8] = {0};
    if (r > NPK_MAX_RANK) return npk_err(NPK_EUNSUPPORTED, "output rank %d exceeds %d", r, NPK_MAX_RANK);
    for (int i = 0; i < na; i++) {
        int a;
        if ((rc = npk_opc_axis(axes[i], r, &a))) return rc;
        if (ins[a]) return npk_err(NPK_EINVAL, "axis %d repeated", a);
        ins[a] = 1;
    }
    for (int i = 0, k = 0; i < r; i++) d[i] = ins[i] ? 1 : x->dims[k++];
    return copy_reshaped(c, r, d);
}

static int op_transpose(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "data"))) return rc;
    const npk_tensor *x = IN(0);
    const int64_t *p;
    size_t np = npk_node_attr_ints(c->node, "perm", &p);
    int perm[NPK_MAX_RANK], seen[NPK_MAX_RANK] = {0};
    int64_t d[NPK_MAX_RANK];
    if (np && (int)np != x->rank) return npk_err(NPK_EINVAL, "perm has %zu entries for rank %d", np, x->rank);
    for (int i = 0; i < x->rank; i++) {
        perm[i] = np ? (int)p[i] : x->rank - 1 - i;
        if (perm[i] < 0 || perm[i] >= x->rank || seen[perm[i]]++) return npk_err(NPK_EINVAL, "perm is not a permutation");
        d[i] = x->dims[perm[i]];
    }
    if ((rc = npk_opctx_out_raw(c, 0, x->dtype, x->rank, d))) return rc; /* written whole */
    if (c->run) npk_ref_onnx_transpose(x, perm, c->out[0]);
    return 0;
}

static int op_concat(npk_opctx *c) {
    int rc, axis;
    if (c->n_in < 1 || !HAS(0)) return npk_err(NPK_EINVAL, "needs at least one input");
    const npk_tensor *x = IN(0);
    const npk_attr *aa = npk_node_attr(c->node, "axis");
    if (!aa) return npk_err(NPK_EINVAL, "attribute 'axis' is required");
    if ((rc = npk_opc_axis(aa->i, x->rank, &axis))) return rc;
    int64_t d[NPK_MAX_RANK];
    memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->rank);
    d[axis] = 0;
    for (int i = 0; i < c->n_in; i++) {
        const npk_tensor *t = IN(i);
        if (!t) return npk_err(NPK_EINVAL, "input %d is missing", i);
        if (t->dtype != x->dtype || t->rank != x->rank) return npk_err(NPK_EINVAL, "input %d's type or rank differs", i);
        for (int k = 0; k < x->rank; k++)
            if (k != axis && t->dims[k] != x->dims[k]) return npk_err(NPK_EINVAL, "input %d's dimension %d differs", i, k);
        d[axis] += t->dims[axis];
    }
    if ((rc = npk_opctx_out_raw(c, 0, x->dtype, x->rank, d))) return rc; /* written whole */
    if (c->run) npk_ref_onnx_concat((const npk_tensor *const *)c->in, c->n_in, axis, c->out[0]);
    return 0;
}

static int op_gather(npk_opctx *c) {
    int rc, axis;
    if ((rc = npk_opc_need(c, 0, "data")) || (rc = npk_opc_need(c, 1, "indices"))) return rc;
    const npk_tensor *x = IN(0), *idx = IN(1);
    if (idx->dtype != NPK_DT_INT32 && idx->dtype != NPK_DT_INT64) return npk_err(NPK_EINVAL, "indices must be int32 or int64");
    if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "axis", 0), x->rank, &axis))) return rc;
    int r = x->rank - 1 + idx->rank, k = 0;
    if (r > NPK_MAX_RANK) return npk_err(NPK_EUNSUPPORTED, "output rank %d exceeds %d", r, NPK_MAX_RANK);
    int64_t d[NPK_MAX_RANK];
    for (int i = 0; i < axis; i++) d[k++] = x->dims[i];
    for (int i = 0; i < idx->rank; i++) d[k++] = idx->dims[i];
    for (int i = axis + 1; i < x->rank; i++) d[k++] = x->dims[i];
    if ((rc = npk_opctx_out(c, 0, x->dtype, r, d))) return rc;
    if (c->run) return npk_ref_onnx_gather(x, idx, axis, c->out[0]);
    return 0;
}

static int op_constant(npk_opctx *c) {
    const npk_attr *a = npk_node_attr(c->node, "value");
    npk_tensor tmp;
    memset(&tmp, 0, sizeof tmp);
    int rc;
    if (a && a->type == NPK_ATTR_TENSOR) {
        if ((rc = npk_opctx_out(c, 0, a->t->dtype, a->t->rank, a->t->dims))) return rc;
        if (c->run) memcpy(c->out[0]->data, a->t->data, npk_tensor_bytes(a->t));
        return 0;
    }
    if ((a = npk_node_attr(c->node, "value_float")) || (a = npk_node_attr(c->node, "value_int"))) {
        int fl = !strcmp(a->name, "value_float");
        if ((rc = npk_opctx_out(c, 0, fl ? NPK_DT_FLOAT : NPK_DT_INT64, 0, NULL))) return rc;
        if (c->run) {
            if (fl) ((float *)c->out[0]->data)[0] = (float)a->f;
            else ((int64_t *)c->out[0]->data)[0] = a->i;
        }
        return 0;
    }
    if ((a = npk_node_attr(c->node, "value_floats")) || (a = npk_node_attr(c->node, "value_ints"))) {
        int fl = a->type == NPK_ATTR_FLOATS;
        int64_t n = (int64_t)a->n;
        if ((rc = npk_opctx_out(c, 0, fl ? NPK_DT_FLOAT : NPK_DT_INT64, 1, &n))) return rc;
        if (c->run && n) memcpy(c->out[0]->data, fl ? (void *)a->floats : (void *)a->ints, (size_t)n * (fl ? 4 : 8));
        return 0;
    }
    return npk_err(NPK_EUNSUPPORTED, "Constant without a value/value_float(s)/value_int(s) attribute is not supported");
}

/* ---- elementwise ----------------------------------------------------------------- */

static int binary(npk_opctx *c, npk_onnx_binop op) {
    int rc, ro;
    if ((rc = npk_opc_need(c, 0, "A")) || (rc = npk_opc_need(c, 1, "B"))) return rc;
    const npk_tensor *a = IN(0), *b = IN(1);
    if ((rc = check_numeric(a, "A")) || (rc = check_numeric(b, "B"))) return rc;
    if (op != NPK_ONNX_POW && a->dtype != b->dtype)
        return npk_err(NPK_EINVAL, "inputs have different types (%s and %s)", npk_dtype_name(a->dtype), npk_dtype_name(b->dtype));
    int64_t d[NPK_MAX_RANK];
    if (op == NPK_ONNX_PRELU && c->opset < 7 && b->rank == 1 && a->rank > 2 && b->dims[0] == a->dims[1] && b->dims[0] != 1) {
        /* PRelu-6: a 1-D slope is per channel */
        static const int64_t one = 1;
        npk_tensor sv = *b;
        sv.rank = a->rank - 1;
        sv.dims[0] = b->dims[0];
        for (int i = 1; i < sv.rank; i++) sv.dims[i] = one;
        if ((rc = npk_opctx_out_raw(c, 0, a->dtype, a->rank, a->dims))) return rc; /* written whole */
        if (c->run && FAST(c, npk_fast_binary(op, a, &sv, c->out[0]))) npk_ref_onnx_binary(op, a, &sv, c->out[0]);
        return 0;
    }
    if (npk_ref_onnx_bcast_shape(a->rank, a->dims, b->rank, b->dims, &ro, d)) {
        char s1[96], s2[96];
        return npk_err(NPK_EINVAL, "shapes %s and %s do not broadcast", npk_tensor_shape_str(a->dtype, a->rank, a->dims, s1, sizeof s1),
                       npk_tensor_shape_str(b->dtype, b->rank, b->dims, s2, sizeof s2));
    }
    if ((op == NPK_ONNX_PRELU) && (ro != a->rank || memcmp(d, a->dims, sizeof(int64_t) * (size_t)ro)))
        return npk_err(NPK_EINVAL, "slope does not broadcast to X's shape");
    if ((rc = npk_opctx_out_raw(c, 0, a->dtype, ro, d))) return rc; /* written whole */
    if (c->run && FAST(c, npk_fast_binary(op, a, b, c->out[0]))) npk_ref_onnx_binary(op, a, b, c->out[0]);
    return 0;
}

static int op_add(npk_opctx *c) { return binary(c, NPK_ONNX_ADD); }
static int op_sub(npk_opctx *c) { return binary(c, NPK_ONNX_SUB); }
static int op_mul(npk_opctx *c) { return binary(c, NPK_ONNX_MUL); }
static int op_div(npk_opctx *c) { return binary(c, NPK_ONNX_DIV); }
static int op_pow(npk_opctx *c) { return binary(c, NPK_ONNX_POW); }
static int op_prelu(npk_opctx *c) { return binary(c, NPK_ONNX_PRELU); }

static int unary(npk_opctx *c, npk_onnx_unop op, int float_only, double alpha, double lo, double hi) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = check_numeric(x, "X"))) return rc;
    if (float_only && (rc = npk_opc_need_float(x, "X"))) return rc;
    if ((rc = npk_opctx_out_raw(c, 0, x->dtype, x->rank, x->dims))) return rc; /* written whole */
    if (c->run && FAST(c, npk_fast_unary(op, x, c->out[0], alpha, lo, hi))) npk_ref_onnx_unary(op, x, c->out[0], alpha, lo, hi);
    return 0;
}

static int op_relu(npk_opctx *c) { return unary(c, NPK_ONNX_RELU, 0, 0, 0, 0); }
static int op_leakyrelu(npk_opctx *c) {
    return unary(c, NPK_ONNX_LEAKYRELU, 1, npk_node_attr_f(c->node, "alpha", 0.01), 0, 0);
}
static int op_sigmoid(npk_opctx *c) { return unary(c, NPK_ONNX_SIGMOID, 1, 0, 0, 0); }
static int op_tanh(npk_opctx *c) { return unary(c, NPK_ONNX_TANH, 1, 0, 0, 0); }
static int op_sqrt(npk_opctx *c) { return unary(c, NPK_ONNX_SQRT, 1, 0, 0, 0); }
static int op_exp(npk_opctx *c) { return unary(c, NPK_ONNX_EXP, 1, 0, 0, 0); }
static int op_erf(npk_opctx *c) { return unary(c, NPK_ONNX_ERF, 1, 0, 0, 0); }

static int op_clip(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "input"))) return rc;
    double lo = -INFINITY, hi = INFINITY;
    if (c->opset < 11) {
        lo = npk_node_attr_f(c->node, "min", -INFINITY);
        hi = npk_node_attr_f(c->node, "max", INFINITY);
    } else {
        for (int k = 1; k <= 2; k++) {
            if (!HAS(k)) continue;
            const npk_tensor *t = IN(k);
            if (t->dtype != IN(0)->dtype) return npk_err(NPK_EINVAL, "%s must have the input's type", k == 1 ? "min" : "max");
            if (npk_tensor_numel(t) != 1) return npk_err(NPK_EINVAL, "%s must be a scalar", k == 1 ? "min" : "max");
            if (!t->data) continue; /* inference only */
            double v = npk_ref_onnx_get_f(t->data, t->dtype, 0);
            if (k == 1) lo = v;
            else hi = v;
        }
    }
    return unary(c, NPK_ONNX_CLIP, 0, 0, lo, hi);
}

/* ---- softmax, reductions, normalisations ------------------------------------------ */

/* mode 0 Softmax, 1 LogSoftmax, 2 Hardmax (the same axis rules) */
static int softmax(npk_opctx *c, int log_sm) {
    int rc, axis;
    if ((rc = npk_opc_need(c, 0, "input"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = npk_opc_need_float(x, "input"))) return rc;
    int old = c->opset < 13;
    if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "axis", old ? 1 : -1), x->rank ? x->rank : 1, &axis))) return rc;
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, x->dims))) return rc;
    if (!c->run) return 0;
    int64_t outer = 1, len = 1, inner = 1;
    for (int i = 0; i < x->rank; i++) {
        if (i < axis) outer *= x->dims[i];
        else if (i == axis || old) len *= x->dims[i];
        else inner *= x->dims[i];
    }
    if (log_sm == 2) npk_ref_onnx_hardmax(x, c->out[0], outer, len, inner);
    else npk_ref_onnx_softmax(x, c->out[0], outer, len, inner, log_sm);
    return 0;
}
static int op_hardmax(npk_opctx *c) { return softmax(c, 2); }
static int op_softmax(npk_opctx *c) { return softmax(c, 0); }
static int op_logsoftmax(npk_opctx *c) { return softmax(c, 1); }

static int op_reducemean(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "data"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = check_numeric(x, "data"))) return rc;
    int64_t axes[NPK_MAX_RANK];
    int na = npk_opc_axes(c, axes, 18);
    if (na == -NPK_SHAPE_UNKNOWN) return NPK_SHAPE_UNKNOWN;
    if (na < 0) return na;
    int keep = (int)npk_node_attr_i(c->node, "keepdims", 1), red[NPK_MAX_RANK] = {0};
    if (na == 0 && npk_node_attr_i(c->node, "noop_with_empty_axes", 0)) return npk_opc_identity(c);
    for (int i = 0; i < na; i++) {
        int a;
        if ((rc = npk_opc_axis(axes[i], x->rank, &a))) return rc;
        red[a] = 1;
    }
    int64_t d[NPK_MAX_RANK], dk[NPK_MAX_RANK];
    int r = 0;
    for (int i = 0; i < x->rank; i++) {
        if (na == 0) red[i] = 1;
        dk[i] = red[i] ? 1 : x->dims[i];
        if (!red[i]) d[r++] = x->dims[i];
    }
    if ((rc = keep ? npk_opctx_out(c, 0, x->dtype, x->rank, dk) : npk_opctx_out(c, 0, x->dtype, r, d))) return rc;
    if (c->run) npk_ref_onnx_reduce_mean(x, red, c->out[0]);
    return 0;
}

static int op_batchnorm(npk_opctx *c) {
    int rc;
    for (int i = 0; i < 5; i++)
        if ((rc = npk_opc_need(c, i, i == 0 ? "X" : i == 1 ? "scale" : i == 2 ? "B" : i == 3 ? "mean" : "var"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = npk_opc_need_float(x, "X"))) return rc;
    if (x->rank < 2) return npk_err(NPK_EINVAL, "X must have rank >= 2");
    for (int i = 1; i < 5; i++)
        if (npk_tensor_numel(IN(i)) != x->dims[1])
            return npk_err(NPK_EINVAL, "input %d must have %lld elements (the channels)", i, (long long)x->dims[1]);
    int train = c->opset >= 14 ? (int)npk_node_attr_i(c->node, "training_mode", 0) : 0;
    if (!train && c->opset < 9 && !npk_node_attr_i(c->node, "is_test", 0) && c->n_out > 1)
        train = 1;
    if (c->opset < 14 && c->n_out > 1)
        return npk_err(NPK_EUNSUPPORTED, "training-mode outputs of BatchNormalization-%lld are not supported", (long long)c->opset);
    if (!train && c->n_out > 1) return npk_err(NPK_EINVAL, "extra outputs need training_mode = 1");
    /* inference writes y whole (fast and golden); training keeps the zeroed buffers */
    if ((rc = train ? npk_opctx_out(c, 0, x->dtype, x->rank, x->dims) : npk_opctx_out_raw(c, 0, x->dtype, x->rank, x->dims)))
        return rc;
    int64_t cd = x->dims[1];
    if (train) {
        if ((rc = npk_opctx_out(c, 1, IN(3)->dtype, 1, &cd)) || (rc = npk_opctx_out(c, 2, IN(4)->dtype, 1, &cd))) return rc;
    }
    if (!c->run) return 0;
    double eps = npk_node_attr_f(c->node, "epsilon", 1e-5);
    if (train)
        npk_ref_onnx_batchnorm_train(x, IN(1), IN(2), IN(3), IN(4), eps, npk_node_attr_f(c->node, "momentum", 0.9),
                                     c->out[0], c->n_out > 1 ? c->out[1] : NULL, c->n_out > 2 ? c->out[2] : NULL);
    else if (FAST(c, npk_fast_batchnorm(x, IN(1), IN(2), IN(3), IN(4), eps, c->out[0])))
        npk_ref_onnx_batchnorm(x, IN(1), IN(2), IN(3), IN(4), eps, c->out[0]);
    return 0;
}

static int op_layernorm(npk_opctx *c) {
    int rc, axis;
    if ((rc = npk_opc_need(c, 0, "X")) || (rc = npk_opc_need(c, 1, "Scale"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = npk_opc_need_float(x, "X"))) return rc;
    if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "axis", -1), x->rank, &axis))) return rc;
    int64_t outer = 1, inner = 1, md[NPK_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        if (i < axis) outer *= x->dims[i];
        else inner *= x->dims[i];
        md[i] = i < axis ? x->dims[i] : 1;
    }
    int64_t ns = npk_tensor_numel(IN(1)), nb = HAS(2) ? npk_tensor_numel(IN(2)) : 1;
    if (ns < 1 || inner % ns || nb < 1 || inner % nb) return npk_err(NPK_EINVAL, "Scale/B do not broadcast to the normalised shape");
    int st = (int)npk_node_attr_i(c->node, "stash_type", 1);
    int sdt = st == 1 ? NPK_DT_FLOAT : x->dtype;
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, x->dims)) || (rc = npk_opctx_out(c, 1, sdt, x->rank, md)) ||
        (rc = npk_opctx_out(c, 2, sdt, x->rank, md)))
        return rc;
    if (c->run)
        npk_ref_onnx_layernorm(x, IN(1), IN(2), outer, inner, npk_node_attr_f(c->node, "epsilon", 1e-5), c->out[0],
                               c->n_out > 1 ? c->out[1] : NULL, c->n_out > 2 ? c->out[2] : NULL);
    return 0;
}

/* ---- matrix products ---------------------------------------------------------------- */

/* numpy matmul output shape */
static int matmul_shape(const npk_tensor *a, const npk_tensor *b, int *ro, int64_t *d) {
    if (a->rank < 1 || b->rank < 1) return npk_err(NPK_EINVAL, "matmul operands must have rank >= 1");
    int64_t ka = a->dims[a->rank - 1], kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
    if (ka != kb) return npk_err(NPK_EINVAL, "inner dimensions differ (%lld vs %lld)", (long long)ka, (long long)kb);
    int ba = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0, r;
    if (npk_ref_onnx_bcast_shape(ba, a->dims, bb, b->dims, &r, d)) return npk_err(NPK_EINVAL, "batch dimensions do not broadcast");
    if (a->rank >= 2) d[r++] = a->dims[a->rank - 2];
    if (b->rank >= 2) d[r++] = b->dims[b->rank - 1];
    *ro = r;
    return 0;
}

static int op_matmul(npk_opctx *c) {
    int rc, r;
    if ((rc = npk_opc_need(c, 0, "A")) || (rc = npk_opc_need(c, 1, "B"))) return rc;
    const npk_tensor *a = IN(0), *b = IN(1);
    if ((rc = check_numeric(a, "A"))) return rc;
    if (a->dtype != b->dtype) return npk_err(NPK_EINVAL, "A and B have different types");
    int64_t d[NPK_MAX_RANK];
    if ((rc = matmul_shape(a, b, &r, d))) return rc;
    if ((rc = npk_opctx_out_raw(c, 0, a->dtype, r, d))) return rc; /* written whole (K = 0: zeros) */
    int64_t n = 1;
    for (int i = 0; i < r; i++) n *= d[i];
    c->macs = (uint64_t)n * (uint64_t)a->dims[a->rank - 1];
    if (c->run && (rc = FAST(c, npk_fast_matmul(a, b, c->out[0]))) < 0) return rc;
    if (c->run && rc) npk_ref_onnx_matmul(a, b, c->out[0]);
    return 0;
}

static int op_gemm(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "A")) || (rc = npk_opc_need(c, 1, "B"))) return rc;
    const npk_tensor *a = IN(0), *b = IN(1), *cc = IN(2);
    if ((rc = npk_opc_need_float(a, "A")) || (rc = npk_opc_need_float(b, "B"))) return rc;
    if (a->rank != 2 || b->rank != 2) return npk_err(NPK_EINVAL, "A and B must be 2-D");
    int ta = (int)npk_node_attr_i(c->node, "transA", 0), tb = (int)npk_node_attr_i(c->node, "transB", 0);
    int64_t m = ta ? a->dims[1] : a->dims[0], k = ta ? a->dims[0] : a->dims[1];
    int64_t kb = tb ? b->dims[1] : b->dims[0], n = tb ? b->dims[0] : b->dims[1];
    if (k != kb) return npk_err(NPK_EINVAL, "inner dimensions differ (%lld vs %lld)", (long long)k, (long long)kb);
    if (cc) {
        int64_t d[NPK_MAX_RANK], mn[2] = {m, n};
        int r;
        if (cc->rank > 2 || npk_ref_onnx_bcast_shape(cc->rank, cc->dims, 2, mn, &r, d) || d[0] != m || d[1] != n)
            return npk_err(NPK_EINVAL, "C does not broadcast to [%lld, %lld]", (long long)m, (long long)n);
    }
    int64_t d[2] = {m, n};
    if ((rc = npk_opctx_out_raw(c, 0, a->dtype, 2, d))) return rc; /* written whole (K = 0: zeros) */
    c->macs = (uint64_t)m * (uint64_t)n * (uint64_t)k;
    double alpha = npk_node_attr_f(c->node, "alpha", 1.0), beta = npk_node_attr_f(c->node, "beta", 1.0);
    if (c->run && (rc = FAST(c, npk_fast_gemm(a, b, cc, alpha, beta, ta, tb, c->out[0]))) < 0) return rc;
    if (c->run && rc) npk_ref_onnx_gemm(a, b, cc, alpha, beta, ta, tb, c->out[0]);
    return 0;
}

static int check_zp(const npk_tensor *zp, const npk_tensor *x, const char *what, int64_t per) {
    if (!zp) return 0;
    if (zp->dtype != x->dtype) return npk_err(NPK_EINVAL, "%s must have the type of its tensor (%s)", what, npk_dtype_name(x->dtype));
    int64_t n = npk_tensor_numel(zp);
    if (n != 1 && n != per) return npk_err(NPK_EINVAL, "%s must be a scalar or have %lld elements", what, (long long)per);
    return 0;
}

static int op_matmulinteger(npk_opctx *c) {
    int rc, r;
    if ((rc = npk_opc_need(c, 0, "A")) || (rc = npk_opc_need(c, 1, "B"))) return rc;
    const npk_tensor *a = IN(0), *b = IN(1);
    if (!is_q8(a->dtype) || !is_q8(b->dtype)) return npk_err(NPK_EINVAL, "A and B must be int8 or uint8");
    int64_t d[NPK_MAX_RANK];
    if ((rc = matmul_shape(a, b, &r, d))) return rc;
    int64_t m = a->rank >= 2 ? a->dims[a->rank - 2] : 1, n = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    if ((rc = check_zp(IN(2), a, "a_zero_point", m)) || (rc = check_zp(IN(3), b, "b_zero_point", n))) return rc;
    if ((rc = npk_opctx_out(c, 0, NPK_DT_INT32, r, d))) return rc;
    int64_t cnt = 1;
    for (int i = 0; i < r; i++) cnt *= d[i];
    c->macs = (uint64_t)cnt * (uint64_t)a->dims[a->rank - 1];
    if (c->run && (rc = FAST(c, npk_fast_matmul_integer(a, b, IN(2), IN(3), c->out[0]))) < 0) return rc;
    if (c->run && rc) npk_ref_onnx_matmul_integer(a, b, IN(2), IN(3), c->out[0]);
    return 0;
}

/* scale inputs: float scalars (or 1-D per-channel where allowed) */
static int check_scale(const npk_tensor *s, const char *what, int64_t per) {
    if (s->dtype != NPK_DT_FLOAT) return npk_err(NPK_EINVAL, "%s must be float", what);
    int64_t n = npk_tensor_numel(s);
    if (n != 1 && n != per) return npk_err(NPK_EINVAL, "%s must be a scalar%s", what, per > 1 ? " or per channel" : "");
    return 0;
}

static float fget(const npk_tensor *t, int64_t i) {
    return ((const float *)t->data)[npk_tensor_numel(t) > 1 ? i : 0];
}

static int op_qlinearmatmul(npk_opctx *c) {
    int rc, r;
    for (int i = 0; i < 8; i++)
        if ((rc = npk_opc_need(c, i, "QLinearMatMul operand"))) return rc;
    const npk_tensor *a = IN(0), *b = IN(3);
    if (!is_q8(a->dtype) || !is_q8(b->dtype)) return npk_err(NPK_EINVAL, "a and b must be int8 or uint8");
    int64_t d[NPK_MAX_RANK];
    if ((rc = matmul_shape(a, b, &r, d))) return rc;
    int64_t m = a->rank >= 2 ? a->dims[a->rank - 2] : 1, n = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    if ((rc = check_scale(IN(1), "a_scale", m)) || (rc = check_zp(IN(2), a, "a_zero_point", m)) ||
        (rc = check_scale(IN(4), "b_scale", n)) || (rc = check_zp(IN(5), b, "b_zero_point", n)) ||
        (rc = check_scale(IN(6), "y_scale", 1)))
        return rc;
    if (!is_q8(IN(7)->dtype) || npk_tensor_numel(IN(7)) != 1) return npk_err(NPK_EINVAL, "y_zero_point must be an int8/uint8 scalar");
    if ((rc = npk_opctx_out(c, 0, IN(7)->dtype, r, d))) return rc;
    int64_t cnt = 1;
    for (int i = 0; i < r; i++) cnt *= d[i];
    c->macs = (uint64_t)cnt * (uint64_t)a->dims[a->rank - 1];
    if (!c->run) return 0;
    npk_tensor acc;
    if ((rc = npk_tensor_alloc(&acc, NULL, NPK_DT_INT32, r, d))) return rc;
    if ((rc = FAST(c, npk_fast_matmul_integer(a, b, IN(2), IN(5), &acc))) < 0) {
        npk_tensor_free(&acc);
        return rc;
    }
    if (rc) npk_ref_onnx_matmul_integer(a, b, IN(2), IN(5), &acc);
    /* multiplier per (row, column): a_scale[m] * b_scale[n] / y_scale, float32 */
    float ys = fget(IN(6), 0);
    int64_t yzp = npk_ref_onnx_get_i(IN(7)->data, IN(7)->dtype, 0);
    for (int64_t i = 0; i < cnt; i++) {
        int64_t col = r >= 1 && b->rank >= 2 ? i % n : 0, row = a->rank >= 2 ? (i / n) % m : 0;
        float mult = fget(IN(1), row) * fget(IN(4), col) / ys;
        npk_ref_onnx_set_i(c->out[0]->data, c->out[0]->dtype, i,
                           npk_ref_onnx_requant(((int32_t *)acc.data)[i], mult, yzp, c->out[0]->dtype));
    }
    npk_tensor_free(&acc);
    return 0;
}

/* ---- convolution and pooling --------------------------------------------------------------- */

static void conv_out_dims(const npk_onnx_conv_params *p, int64_t *d) {
    d[0] = p->n;
    d[1] = p->m;
    for (int i = 0; i < p->nsp; i++) d[2 + i] = p->out[3 - p->nsp + i];
}

static uint64_t conv_macs(const npk_onnx_conv_params *p) {
    /* unsigned: wraps instead of overflowing for absurd (metadata-only) shapes */
    return (uint64_t)p->n * (uint64_t)p->m * (uint64_t)p->out[0] * (uint64_t)p->out[1] * (uint64_t)p->out[2] *
           (uint64_t)(p->c / p->group) * (uint64_t)p->k[0] * (uint64_t)p->k[1] * (uint64_t)p->k[2];
}

static int op_conv(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X")) || (rc = npk_opc_need(c, 1, "W"))) return rc;
    const npk_tensor *x = IN(0), *w = IN(1), *b = IN(2);
    if ((rc = npk_opc_need_float(x, "X"))) return rc;
    if (w->dtype != x->dtype) return npk_err(NPK_EINVAL, "W must have X's type");
    npk_onnx_conv_params p;
    if ((rc = npk_onnx_conv_params_of(c, x, w, 0, &p))) return rc;
    if (b && (b->dtype != x->dtype || npk_tensor_numel(b) != p.m)) return npk_err(NPK_EINVAL, "B must be [%lld] of X's type", (long long)p.m);
    int64_t d[NPK_MAX_RANK];
    conv_out_dims(&p, d);
    if ((rc = npk_opctx_out_raw(c, 0, x->dtype, x->rank, d))) return rc; /* written whole */
    c->macs = conv_macs(&p);
    if (c->run && (rc = FAST(c, npk_fast_conv(&p, x, w, b, c->out[0]))) < 0) return rc;
    if (c->run && rc) npk_ref_onnx_conv(&p, x, w, b, c->out[0]);
    return 0;
}

static int op_convinteger(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "x")) || (rc = npk_opc_need(c, 1, "w"))) return rc;
    const npk_tensor *x = IN(0), *w = IN(1);
    if (!is_q8(x->dtype) || !is_q8(w->dtype)) return npk_err(NPK_EINVAL, "x and w must be int8 or uint8");
    npk_onnx_conv_params p;
    if ((rc = npk_onnx_conv_params_of(c, x, w, 0, &p))) return rc;
    if ((rc = check_zp(IN(2), x, "x_zero_point", 1)) || (rc = check_zp(IN(3), w, "w_zero_point", p.m))) return rc;
    int64_t d[NPK_MAX_RANK];
    conv_out_dims(&p, d);
    if ((rc = npk_opctx_out_raw(c, 0, NPK_DT_INT32, x->rank, d))) return rc; /* written whole */
    c->macs = conv_macs(&p);
    if (c->run && (rc = FAST(c, npk_fast_conv_integer(&p, x, w, IN(2), IN(3), NULL, c->out[0]))) < 0) return rc;
    if (c->run && rc) npk_ref_onnx_conv_integer(&p, x, w, IN(2), IN(3), NULL, c->out[0]);
    return 0;
}

static int op_qlinearconv(npk_opctx *c) {
    int rc;
    for (int i = 0; i < 8; i++)
        if ((rc = npk_opc_need(c, i, "QLinearConv operand"))) return rc;
    const npk_tensor *x = IN(0), *w = IN(3), *b = IN(8);
    if (!is_q8(x->dtype) || !is_q8(w->dtype)) return npk_err(NPK_EINVAL, "x and w must be int8 or uint8");
    npk_onnx_conv_params p;
    if ((rc = npk_onnx_conv_params_of(c, x, w, 0, &p))) return rc;
    if ((rc = check_scale(IN(1), "x_scale", 1)) || (rc = check_zp(IN(2), x, "x_zero_point", 1)) ||
        (rc = check_scale(IN(4), "w_scale", p.m)) || (rc = check_zp(IN(5), w, "w_zero_point", p.m)) ||
        (rc = check_scale(IN(6), "y_scale", 1)))
        return rc;
    if (!is_q8(IN(7)->dtype) || npk_tensor_numel(IN(7)) != 1) return npk_err(NPK_EINVAL, "y_zero_point must be an int8/uint8 scalar");
    if (b && (b->dtype != NPK_DT_INT32 || npk_tensor_numel(b) != p.m)) return npk_err(NPK_EINVAL, "B must be int32 [%lld]", (long long)p.m);
    int64_t d[NPK_MAX_RANK];
    conv_out_dims(&p, d);
    if ((rc = npk_opctx_out_raw(c, 0, IN(7)->dtype, x->rank, d))) return rc; /* written whole */
    c->macs = conv_macs(&p);
    if (!c->run) return 0;
    npk_tensor acc; /* written whole by either convolution */
    if ((rc = npk_tensor_alloc_raw(&acc, NULL, NPK_DT_INT32, x->rank, d))) return rc;
    if ((rc = FAST(c, npk_fast_conv_integer(&p, x, w, IN(2), IN(5), b, &acc))) < 0) {
        npk_tensor_free(&acc);
        return rc;
    }
    if (rc) npk_ref_onnx_conv_integer(&p, x, w, IN(2), IN(5), b, &acc);
    float *mult = malloc(sizeof(float) * (size_t)p.m);
    if (!mult) {
        npk_tensor_free(&acc);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    for (int64_t m = 0; m < p.m; m++) mult[m] = fget(IN(1), 0) * fget(IN(4), m) / fget(IN(6), 0);
    int64_t nm = npk_tensor_numel(IN(4)) > 1 ? p.m : 1, yzp = npk_ref_onnx_get_i(IN(7)->data, IN(7)->dtype, 0);
    if (FAST(c, npk_fast_requant_tensor(&acc, mult, nm, 1, yzp, c->out[0])))
        npk_ref_onnx_requant_tensor(&acc, mult, nm, 1, yzp, c->out[0]);
    free(mult);
    npk_tensor_free(&acc);
    return 0;
}

/* A pooling node's input X (numeric, or float only), its parameters and output dims. */
static int pool_shape(npk_opctx *c, int float_only, npk_onnx_conv_params *p, int64_t *d) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X"))) return rc;
    if ((rc = float_only ? npk_opc_need_float(IN(0), "X") : check_numeric(IN(0), "X"))) return rc;
    if ((rc = npk_onnx_conv_params_of(c, IN(0), NULL, 1, p))) return rc;
    conv_out_dims(p, d);
    return 0;
}

static int op_maxpool(npk_opctx *c) {
    npk_onnx_conv_params p;
    int64_t d[NPK_MAX_RANK];
    int rc = pool_shape(c, 0, &p, d);
    if (rc) return rc;
    const npk_tensor *x = IN(0);
    /* Y written whole (fast and golden), Indices zeroed */
    if ((rc = npk_opctx_out_raw(c, 0, x->dtype, x->rank, d)) || (rc = npk_opctx_out(c, 1, NPK_DT_INT64, x->rank, d))) return rc;
    if (!c->run) return 0;
    /* the fast kernel has no Indices output */
    if (c->n_out > 1 && c->out[1]) rc = 1;
    else if ((rc = FAST(c, npk_fast_maxpool(&p, x, c->out[0]))) < 0) return rc;
    if (rc) npk_ref_onnx_maxpool(&p, x, c->out[0], c->n_out > 1 ? c->out[1] : NULL);
    return 0;
}

static int op_avgpool(npk_opctx *c) {
    npk_onnx_conv_params p;
    int64_t d[NPK_MAX_RANK];
    int rc = pool_shape(c, 1, &p, d);
    if (!rc) rc = npk_opctx_out(c, 0, IN(0)->dtype, IN(0)->rank, d);
    if (!rc && c->run) npk_ref_onnx_avgpool(&p, IN(0), c->out[0]);
    return rc;
}

static int global_pool(npk_opctx *c, int is_max) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = npk_opc_need_float(x, "X"))) return rc;
    if (x->rank < 2) return npk_err(NPK_EINVAL, "X must have rank >= 2");
    int64_t d[NPK_MAX_RANK];
    for (int i = 0; i < x->rank; i++) d[i] = i < 2 ? x->dims[i] : 1;
    if ((rc = npk_opctx_out_raw(c, 0, x->dtype, x->rank, d))) return rc; /* written whole */
    if (c->run && FAST(c, npk_fast_global_pool(x, c->out[0], is_max))) npk_ref_onnx_global_pool(x, c->out[0], is_max);
    return 0;
}
static int op_globalavgpool(npk_opctx *c) { return global_pool(c, 0); }
static int op_globalmaxpool(npk_opctx *c) { return global_pool(c, 1); }

/* ---- quantization ---------------------------------------------------------------------------- */

static int quant_params(npk_opctx *c, const npk_tensor *x, int *axis) {
    int rc;
    const npk_tensor *s = IN(1), *zp = IN(2);
    if ((rc = check_scalar_or_1d(s, "scale"))) return rc;
    *axis = 1;
    int64_t ns = npk_tensor_numel(s);
    if (s->rank == 1 && ns > 1) {
        if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "axis", 1), x->rank, axis))) return rc;
        if (x->dims[*axis] != ns) return npk_err(NPK_EINVAL, "scale has %lld elements, axis %d has %lld", (long long)ns, *axis,
                                                 (long long)x->dims[*axis]);
    }
    if (zp) {
        if ((rc = check_scalar_or_1d(zp, "zero_point"))) return rc;
        if (npk_tensor_numel(zp) != ns) return npk_err(NPK_EINVAL, "zero_point and scale differ in size");
    }
    return 0;
}

static int op_quantize(npk_opctx *c) {
    int rc, axis;
    if ((rc = npk_opc_need(c, 0, "x")) || (rc = npk_opc_need(c, 1, "y_scale"))) return rc;
    const npk_tensor *x = IN(0), *zp = IN(2);
    if ((rc = npk_opc_need_float(x, "x"))) return rc;
    if (IN(1)->dtype != NPK_DT_FLOAT) return npk_err(NPK_EINVAL, "y_scale must be float");
    if (zp && !is_q8(zp->dtype)) return npk_err(NPK_EINVAL, "y_zero_point must be int8 or uint8");
    if ((rc = quant_params(c, x, &axis))) return rc;
    if ((rc = npk_opctx_out_raw(c, 0, zp ? zp->dtype : NPK_DT_UINT8, x->rank, x->dims))) return rc; /* written whole */
    if (c->run && (rc = FAST(c, npk_fast_quantize(x, IN(1), zp, axis, c->out[0]))) < 0) return rc;
    if (c->run && rc) npk_ref_onnx_quantize(x, IN(1), zp, axis, c->out[0]);
    return 0;
}

static int op_dequantize(npk_opctx *c) {
    int rc, axis;
    if ((rc = npk_opc_need(c, 0, "x")) || (rc = npk_opc_need(c, 1, "x_scale"))) return rc;
    const npk_tensor *x = IN(0), *zp = IN(2);
    if (!is_q8(x->dtype) && x->dtype != NPK_DT_INT32) return npk_err(NPK_EINVAL, "x must be int8, uint8 or int32");
    if (IN(1)->dtype != NPK_DT_FLOAT) return npk_err(NPK_EINVAL, "x_scale must be float");
    if (zp && zp->dtype != x->dtype) return npk_err(NPK_EINVAL, "x_zero_point must have x's type");
    if ((rc = quant_params(c, x, &axis))) return rc;
    if ((rc = npk_opctx_out_raw(c, 0, NPK_DT_FLOAT, x->rank, x->dims))) return rc; /* written whole */
    if (c->run && (rc = FAST(c, npk_fast_dequantize(x, IN(1), zp, axis, c->out[0]))) < 0) return rc;
    if (c->run && rc) npk_ref_onnx_dequantize(x, IN(1), zp, axis, c->out[0]);
    return 0;
}

static int op_dynquantize(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "x"))) return rc;
    const npk_tensor *x = IN(0);
    if (x->dtype != NPK_DT_FLOAT) return npk_err(NPK_EINVAL, "x must be float");
    if ((rc = npk_opctx_out(c, 0, NPK_DT_UINT8, x->rank, x->dims)) || (rc = npk_opctx_out(c, 1, NPK_DT_FLOAT, 0, NULL)) ||
        (rc = npk_opctx_out(c, 2, NPK_DT_UINT8, 0, NULL)))
        return rc;
    if (!c->run) return 0;
    if (c->n_out < 3 || !c->out[1] || !c->out[2]) {
        /* outputs not requested: compute into temporaries */
        npk_tensor s, z;
        if ((rc = npk_tensor_alloc(&s, NULL, NPK_DT_FLOAT, 0, NULL))) return rc;
        if ((rc = npk_tensor_alloc(&z, NULL, NPK_DT_UINT8, 0, NULL))) {
            npk_tensor_free(&s);
            return rc;
        }
        npk_ref_onnx_dynamic_quantize(x, c->out[0], c->n_out > 1 && c->out[1] ? c->out[1] : &s, &z);
        npk_tensor_free(&s);
        npk_tensor_free(&z);
        return 0;
    }
    npk_ref_onnx_dynamic_quantize(x, c->out[0], c->out[1], c->out[2]);
    return 0;
}

/* ---- table ------------------------------------------------------------------------------------ */

static const npk_op_fn op_handlers[] = {
    NULL,
#define FN_(name, fam, fn) fn,
    NPK_ONNX_OPS_ALL(FN_)
#undef FN_
};
static_assert(sizeof op_handlers / sizeof op_handlers[0] == NPK_OP_COUNT, "one handler per operator id");

npk_op_fn npk_onnx_op_handler(npk_op_id id) { return id > 0 && id < NPK_OP_COUNT ? op_handlers[id] : NULL; }

