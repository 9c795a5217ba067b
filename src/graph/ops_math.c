// SPDX-License-Identifier: MIT
/* Node-level ONNX math operators (kernels in src/ops/ref_onnx_math.c):
 * unary and binary elementwise, variadic Max/Min/Sum/Mean, Where, Cast,
 * all Reduce*, ArgMax/ArgMin, CumSum, Hardmax, LpNormalization, Dropout. */
#include <math.h>
#include <string.h>

#include "graph/ops.h"
#include "ops/fast_onnx.h"

#define IN(i) ((i) < c->n_in ? c->in[i] : NULL)
#define HAS(i) (IN(i) != NULL)

static int is_fl(int dt) { return dt == NPK_DT_FLOAT || dt == NPK_DT_DOUBLE; }
static int is_signed(int dt) {
    return dt == NPK_DT_INT8 || dt == NPK_DT_INT16 || dt == NPK_DT_INT32 || dt == NPK_DT_INT64 || is_fl(dt);
}
static int holdable(int dt) { return npk_dtype_size(dt) != 0; }

/* type classes an operator accepts */
enum { T_FLOAT = 1, T_SIGNED = 2, T_INT = 4, T_BOOL = 8, T_ALL = 15, T_NUM = 7 };

static int check_type(const npk_tensor *t, int cls, const char *what) {
    int ok = holdable(t->dtype) &&
             ((is_fl(t->dtype) && (cls & (T_FLOAT | T_SIGNED))) ||
              (t->dtype == NPK_DT_BOOL && (cls & T_BOOL)) ||
              (!is_fl(t->dtype) && t->dtype != NPK_DT_BOOL && ((cls & T_INT) || ((cls & T_SIGNED) && is_signed(t->dtype)))));
    if (!ok) return npk_err(NPK_EINVAL, "%s has type %s, which the operator does not accept", what, npk_dtype_name(t->dtype));
    return 0;
}

/* ---- unary ------------------------------------------------------------------------ */

static int unary(npk_opctx *c, npk_onnx_unop2 op, int cls, int out_dt, double p0, double p1) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "X"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = check_type(x, cls, "X"))) return rc;
    /* written whole (npk_fast_hard, npk_ref_onnx_unary2) */
    if ((rc = npk_opctx_out_raw(c, 0, out_dt ? out_dt : x->dtype, x->rank, x->dims))) return rc;
    double p[2] = {p0, p1};
    if (c->run && !c->golden && (op == NPK_ONNX_HARDSIGMOID || op == NPK_ONNX_HARDSWISH) &&
        !npk_fast_hard(op == NPK_ONNX_HARDSWISH, x, c->out[0], p0, p1))
        return 0;
    if (c->run) npk_ref_onnx_unary2(op, x, c->out[0], p);
    return 0;
}
#define A(name, def) npk_node_attr_f(c->node, name, def)
#define UN(fn, op, cls) \
    int fn(npk_opctx *c) { return unary(c, op, cls, 0, 0, 0); }
UN(npk_op_abs, NPK_ONNX_ABS, T_NUM)
UN(npk_op_neg, NPK_ONNX_NEG, T_SIGNED)
UN(npk_op_reciprocal, NPK_ONNX_RECIPROCAL, T_FLOAT)
UN(npk_op_floor, NPK_ONNX_FLOOR, T_FLOAT)
UN(npk_op_ceil, NPK_ONNX_CEIL, T_FLOAT)
UN(npk_op_round, NPK_ONNX_ROUND, T_FLOAT)
UN(npk_op_sign, NPK_ONNX_SIGN, T_NUM)
UN(npk_op_log, NPK_ONNX_LOG, T_FLOAT)
UN(npk_op_sin, NPK_ONNX_SIN, T_FLOAT)
UN(npk_op_cos, NPK_ONNX_COS, T_FLOAT)
UN(npk_op_tan, NPK_ONNX_TAN, T_FLOAT)
UN(npk_op_asin, NPK_ONNX_ASIN, T_FLOAT)
UN(npk_op_acos, NPK_ONNX_ACOS, T_FLOAT)
UN(npk_op_atan, NPK_ONNX_ATAN, T_FLOAT)
UN(npk_op_sinh, NPK_ONNX_SINH, T_FLOAT)
UN(npk_op_cosh, NPK_ONNX_COSH, T_FLOAT)
UN(npk_op_asinh, NPK_ONNX_ASINH, T_FLOAT)
UN(npk_op_acosh, NPK_ONNX_ACOSH, T_FLOAT)
UN(npk_op_atanh, NPK_ONNX_ATANH, T_FLOAT)
UN(npk_op_softplus, NPK_ONNX_SOFTPLUS, T_FLOAT)
UN(npk_op_softsign, NPK_ONNX_SOFTSIGN, T_FLOAT)
UN(npk_op_hardswish, NPK_ONNX_HARDSWISH, T_FLOAT)
UN(npk_op_mish, NPK_ONNX_MISH, T_FLOAT)
UN(npk_op_not, NPK_ONNX_NOT, T_BOOL)
UN(npk_op_bitnot, NPK_ONNX_BITNOT, T_INT)
int npk_op_elu(npk_opctx *c) { return unary(c, NPK_ONNX_ELU, T_FLOAT, 0, (float)A("alpha", 1.0), 0); }
int npk_op_celu(npk_opctx *c) { return unary(c, NPK_ONNX_CELU, T_FLOAT, 0, (float)A("alpha", 1.0), 0); }
int npk_op_selu(npk_opctx *c) {
    return unary(c, NPK_ONNX_SELU, T_FLOAT, 0, (float)A("alpha", 1.67326319217681884765625),
                 (float)A("gamma", 1.05070102214813232421875));
}
int npk_op_hardsigmoid(npk_opctx *c) {
    return unary(c, NPK_ONNX_HARDSIGMOID, T_FLOAT, 0, (float)A("alpha", 0.2), (float)A("beta", 0.5));
}
int npk_op_thresholdedrelu(npk_opctx *c) { return unary(c, NPK_ONNX_THRESHOLDEDRELU, T_FLOAT, 0, (float)A("alpha", 1.0), 0); }
int npk_op_shrink(npk_opctx *c) { return unary(c, NPK_ONNX_SHRINK, T_NUM, 0, (float)A("lambd", 0.5), (float)A("bias", 0.0)); }
int npk_op_isnan(npk_opctx *c) { return unary(c, NPK_ONNX_ISNAN, T_FLOAT, NPK_DT_BOOL, 0, 0); }
int npk_op_isinf(npk_opctx *c) {
    return unary(c, NPK_ONNX_ISINF, T_FLOAT, NPK_DT_BOOL, (double)npk_node_attr_i(c->node, "detect_negative", 1),
                 (double)npk_node_attr_i(c->node, "detect_positive", 1));
}

/* ---- binary ------------------------------------------------------------------------ */

/* Before opset 7, B broadcasts only with broadcast = 1, its dims matching A's from `axis`
 * (default: trailing); *bv becomes B viewed at A's rank. */
static int legacy_view(const npk_opctx *c, const npk_tensor *a, const npk_tensor *b, npk_tensor *bv) {
    *bv = *b;
    if (c->opset >= 7) return 0;
    if (!npk_node_attr_i(c->node, "broadcast", 0)) {
        if (a->rank != b->rank || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank))
            return npk_err(NPK_EINVAL, "shapes differ and broadcast = 0 (opset %lld)", (long long)c->opset);
        return 0;
    }
    int64_t axis = npk_node_attr_i(c->node, "axis", a->rank - b->rank);
    if (axis < 0) axis += a->rank;
    if (axis < 0 || axis + b->rank > a->rank) return npk_err(NPK_EINVAL, "axis %lld does not place B inside A", (long long)axis);
    bv->rank = a->rank;
    for (int i = 0; i < a->rank; i++) bv->dims[i] = i >= axis && i < axis + b->rank ? b->dims[i - axis] : 1;
    return 0;
}

static int bshape(const npk_tensor *a, const npk_tensor *b, int *ro, int64_t *d) {
    if (npk_ref_onnx_bcast_shape(a->rank, a->dims, b->rank, b->dims, ro, d)) {
        char s1[96], s2[96];
        return npk_err(NPK_EINVAL, "shapes %s and %s do not broadcast", npk_tensor_shape_str(a->dtype, a->rank, a->dims, s1, sizeof s1),
                       npk_tensor_shape_str(b->dtype, b->rank, b->dims, s2, sizeof s2));
    }
    return 0;
}

static int binary(npk_opctx *c, npk_onnx_binop2 op, int cls, int out_bool) {
    int rc, ro;
    if ((rc = npk_opc_need(c, 0, "A")) || (rc = npk_opc_need(c, 1, "B"))) return rc;
    const npk_tensor *a = IN(0);
    npk_tensor b;
    if ((rc = check_type(a, cls, "A")) || (rc = check_type(IN(1), cls, "B"))) return rc;
    if (a->dtype != IN(1)->dtype)
        return npk_err(NPK_EINVAL, "inputs have different types (%s and %s)", npk_dtype_name(a->dtype), npk_dtype_name(IN(1)->dtype));
    if ((rc = legacy_view(c, a, IN(1), &b))) return rc;
    int64_t d[NPK_MAX_RANK];
    if ((rc = bshape(a, &b, &ro, d))) return rc;
    if ((rc = npk_opctx_out(c, 0, out_bool ? NPK_DT_BOOL : a->dtype, ro, d))) return rc;
    if (c->run) npk_ref_onnx_binary2(op, a, &b, c->out[0]);
    return 0;
}
int npk_op_mod(npk_opctx *c) {
    int fm = (int)npk_node_attr_i(c->node, "fmod", 0);
    if (HAS(0) && is_fl(IN(0)->dtype) && !fm) return npk_err(NPK_EINVAL, "floating-point Mod needs fmod = 1");
    return binary(c, fm ? NPK_ONNX_FMOD : NPK_ONNX_MOD, T_NUM, 0);
}
int npk_op_equal(npk_opctx *c) { return binary(c, NPK_ONNX_EQUAL, T_ALL, 1); }
int npk_op_less(npk_opctx *c) { return binary(c, NPK_ONNX_LESS, T_NUM, 1); }
int npk_op_greater(npk_opctx *c) { return binary(c, NPK_ONNX_GREATER, T_NUM, 1); }
int npk_op_lesseq(npk_opctx *c) { return binary(c, NPK_ONNX_LESSEQ, T_NUM, 1); }
int npk_op_greatereq(npk_opctx *c) { return binary(c, NPK_ONNX_GREATEREQ, T_NUM, 1); }
int npk_op_and(npk_opctx *c) { return binary(c, NPK_ONNX_AND, T_BOOL, 1); }
int npk_op_or(npk_opctx *c) { return binary(c, NPK_ONNX_OR, T_BOOL, 1); }
int npk_op_xor(npk_opctx *c) { return binary(c, NPK_ONNX_XOR, T_BOOL, 1); }
int npk_op_bitand(npk_opctx *c) { return binary(c, NPK_ONNX_BITAND, T_INT, 0); }
int npk_op_bitor(npk_opctx *c) { return binary(c, NPK_ONNX_BITOR, T_INT, 0); }
int npk_op_bitxor(npk_opctx *c) { return binary(c, NPK_ONNX_BITXOR, T_INT, 0); }
int npk_op_bitshift(npk_opctx *c) {
    const char *dir = npk_node_attr_s(c->node, "direction", "");
    if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT")) return npk_err(NPK_EINVAL, "direction must be LEFT or RIGHT, got '%s'", dir);
    if (HAS(0) && is_signed(IN(0)->dtype)) return npk_err(NPK_EINVAL, "BitShift takes unsigned integers");
    return binary(c, !strcmp(dir, "LEFT") ? NPK_ONNX_SHL : NPK_ONNX_SHR, T_INT, 0);
}

/* Max, Min, Sum, Mean: fold the inputs pairwise with broadcasting. */
static int variadic(npk_opctx *c, npk_onnx_binop2 op, int mean) {
    int rc, r;
    if (c->n_in < 1) return npk_err(NPK_EINVAL, "needs at least one input");
    int64_t d[NPK_MAX_RANK];
    const npk_tensor *a = IN(0);
    if (!a) return npk_err(NPK_EINVAL, "input 0 is missing");
    if ((rc = check_type(a, mean ? T_FLOAT : T_NUM, "input 0"))) return rc;
    r = a->rank;
    memcpy(d, a->dims, sizeof(int64_t) * (size_t)r);
    for (int i = 1; i < c->n_in; i++) {
        const npk_tensor *t = IN(i);
        if (!t) return npk_err(NPK_EINVAL, "input %d is missing", i);
        if (t->dtype != a->dtype) return npk_err(NPK_EINVAL, "input %d has type %s, input 0 %s", i, npk_dtype_name(t->dtype), npk_dtype_name(a->dtype));
        npk_tensor cur = *a;
        cur.rank = r;
        memcpy(cur.dims, d, sizeof d);
        if (c->opset < 8 && (t->rank != r || memcmp(t->dims, d, sizeof(int64_t) * (size_t)r)))
            return npk_err(NPK_EINVAL, "input %d's shape differs (no broadcasting before opset 8)", i);
        if ((rc = bshape(&cur, t, &r, d))) return rc;
    }
    if ((rc = npk_opctx_out(c, 0, a->dtype, r, d))) return rc;
    if (!c->run) return 0;
    npk_tensor *y = c->out[0];
    npk_ref_onnx_expand(a, y);
    for (int i = 1; i < c->n_in; i++) {
        npk_tensor tmp;
        if ((rc = npk_tensor_copy(&tmp, y))) return rc;
        npk_ref_onnx_binary2(op, &tmp, IN(i), y);
        npk_tensor_free(&tmp);
    }
    if (mean) {
        int64_t n = npk_tensor_numel(y);
        for (int64_t k = 0; k < n; k++)
            npk_ref_onnx_set_f(y->data, y->dtype, k, npk_ref_onnx_get_f(y->data, y->dtype, k) / c->n_in);
    }
    return 0;
}
int npk_op_max(npk_opctx *c) { return variadic(c, NPK_ONNX_MAX, 0); }
int npk_op_min(npk_opctx *c) { return variadic(c, NPK_ONNX_MIN, 0); }
int npk_op_sum(npk_opctx *c) { return variadic(c, NPK_ONNX_SUM2, 0); }
int npk_op_mean(npk_opctx *c) { return variadic(c, NPK_ONNX_SUM2, 1); }

int npk_op_where(npk_opctx *c) {
    int rc, r1, r2;
    for (int i = 0; i < 3; i++)
        if ((rc = npk_opc_need(c, i, i == 0 ? "condition" : i == 1 ? "X" : "Y"))) return rc;
    const npk_tensor *cd = IN(0), *a = IN(1), *b = IN(2);
    if (cd->dtype != NPK_DT_BOOL) return npk_err(NPK_EINVAL, "condition must be bool");
    if (a->dtype != b->dtype || !holdable(a->dtype)) return npk_err(NPK_EINVAL, "X and Y must have one supported type");
    int64_t d1[NPK_MAX_RANK], d2[NPK_MAX_RANK];
    if ((rc = bshape(cd, a, &r1, d1))) return rc;
    npk_tensor t = *a;
    t.rank = r1;
    memcpy(t.dims, d1, sizeof d1);
    if ((rc = bshape(&t, b, &r2, d2))) return rc;
    if ((rc = npk_opctx_out(c, 0, a->dtype, r2, d2))) return rc;
    if (c->run) npk_ref_onnx_where(cd, a, b, c->out[0]);
    return 0;
}

static int cast_to(npk_opctx *c, int to) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "input"))) return rc;
    const npk_tensor *x = IN(0);
    if (!holdable(x->dtype)) return npk_err(NPK_EUNSUPPORTED, "cast from %s is not supported", npk_dtype_name(x->dtype));
    if (!holdable(to)) return npk_err(NPK_EUNSUPPORTED, "cast to %s is not supported", npk_dtype_name(to));
    if ((rc = npk_opctx_out(c, 0, to, x->rank, x->dims))) return rc;
    if (c->run) npk_ref_onnx_cast(x, c->out[0]);
    return 0;
}
int npk_op_cast(npk_opctx *c) {
    const npk_attr *a = npk_node_attr(c->node, "to");
    if (!a) return npk_err(NPK_EINVAL, "attribute 'to' is required");
    int to = (int)a->i;
    if (a->type == NPK_ATTR_STRING) { /* Cast-1 names the type */
        static const char *const names[] = {"", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
                                            "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64",
                                            "COMPLEX128", "BFLOAT16"};
        to = -1;
        for (int i = 1; i < 17; i++)
            if (!strcmp(a->s, names[i])) to = i;
        if (to < 0) return npk_err(NPK_EINVAL, "unknown type '%s'", a->s);
    }
    return cast_to(c, to);
}
int npk_op_castlike(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 1, "target_type"))) return rc;
    return cast_to(c, IN(1)->dtype);
}

/* ---- reductions -------------------------------------------------------------------- */

/* Resolve reduced axes and the output shape; returns 1 for a no-op (identity). */
static int reduce_shape(npk_opctx *c, int attr_limit, int *red, int *r, int64_t *d) {
    int rc;
    const npk_tensor *x = IN(0);
    int64_t axes[NPK_MAX_RANK];
    int na = npk_opc_axes(c, axes, attr_limit);
    if (na == -NPK_SHAPE_UNKNOWN) return NPK_SHAPE_UNKNOWN;
    if (na < 0) return na;
    if (na == 0 && npk_node_attr_i(c->node, "noop_with_empty_axes", 0)) return 2;
    int keep = (int)npk_node_attr_i(c->node, "keepdims", 1);
    memset(red, 0, sizeof(int) * NPK_MAX_RANK);
    for (int i = 0; i < na; i++) {
        int a;
        if ((rc = npk_opc_axis(axes[i], x->rank, &a))) return rc;
        red[a] = 1;
    }
    *r = 0;
    for (int i = 0; i < x->rank; i++) {
        if (na == 0) red[i] = 1;
        if (!red[i]) d[(*r)++] = x->dims[i];
        else if (keep) d[(*r)++] = 1;
    }
    return 0;
}

static int reduce(npk_opctx *c, npk_onnx_reduce op, int attr_limit) {
    int rc, red[NPK_MAX_RANK], r;
    int64_t d[NPK_MAX_RANK];
    if ((rc = npk_opc_need(c, 0, "data"))) return rc;
    if ((rc = check_type(IN(0), T_NUM, "data"))) return rc;
    rc = reduce_shape(c, attr_limit, red, &r, d);
    if (rc == 2) return npk_opc_identity(c);
    if (rc) return rc;
    if ((rc = npk_opctx_out(c, 0, IN(0)->dtype, r, d))) return rc;
    if (c->run) return npk_ref_onnx_reduce(op, IN(0), red, c->out[0]);
    return 0;
}
int npk_op_reducesum(npk_opctx *c) { return reduce(c, NPK_ONNX_R_SUM, 13); }
int npk_op_reducemax(npk_opctx *c) { return reduce(c, NPK_ONNX_R_MAX, 18); }
int npk_op_reducemin(npk_opctx *c) { return reduce(c, NPK_ONNX_R_MIN, 18); }
int npk_op_reduceprod(npk_opctx *c) { return reduce(c, NPK_ONNX_R_PROD, 18); }
int npk_op_reducel1(npk_opctx *c) { return reduce(c, NPK_ONNX_R_L1, 18); }
int npk_op_reducel2(npk_opctx *c) { return reduce(c, NPK_ONNX_R_L2, 18); }
int npk_op_reducelogsum(npk_opctx *c) { return reduce(c, NPK_ONNX_R_LOGSUM, 18); }
int npk_op_reducelogsumexp(npk_opctx *c) { return reduce(c, NPK_ONNX_R_LOGSUMEXP, 18); }
int npk_op_reducesumsquare(npk_opctx *c) { return reduce(c, NPK_ONNX_R_SUMSQUARE, 18); }

static int argminmax(npk_opctx *c, int is_min) {
    int rc, axis;
    if ((rc = npk_opc_need(c, 0, "data"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = check_type(x, T_NUM, "data"))) return rc;
    if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "axis", 0), x->rank, &axis))) return rc;
    int keep = (int)npk_node_attr_i(c->node, "keepdims", 1), r = 0;
    int64_t d[NPK_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        if (i != axis) d[r++] = x->dims[i];
        else if (keep) d[r++] = 1;
    if (x->dims[axis] == 0) return npk_err(NPK_EINVAL, "cannot take the arg of an empty axis");
    if ((rc = npk_opctx_out(c, 0, NPK_DT_INT64, r, d))) return rc;
    if (c->run) npk_ref_onnx_argminmax(x, axis, is_min, (int)npk_node_attr_i(c->node, "select_last_index", 0), c->out[0]);
    return 0;
}
int npk_op_argmax(npk_opctx *c) { return argminmax(c, 0); }
int npk_op_argmin(npk_opctx *c) { return argminmax(c, 1); }

int npk_op_cumsum(npk_opctx *c) {
    int rc, axis;
    if ((rc = npk_opc_need(c, 0, "x")) || (rc = npk_opc_need(c, 1, "axis"))) return rc;
    const npk_tensor *x = IN(0), *ax = IN(1);
    if ((rc = check_type(x, T_NUM, "x"))) return rc;
    if ((ax->dtype != NPK_DT_INT32 && ax->dtype != NPK_DT_INT64) || npk_tensor_numel(ax) != 1)
        return npk_err(NPK_EINVAL, "axis must be an int32/int64 scalar");
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, x->dims))) return rc;
    if (!c->run) return 0;
    if ((rc = npk_opc_axis(npk_ref_onnx_get_i(ax->data, ax->dtype, 0), x->rank, &axis))) return rc;
    npk_ref_onnx_cumsum(x, axis, (int)npk_node_attr_i(c->node, "exclusive", 0), (int)npk_node_attr_i(c->node, "reverse", 0),
                        c->out[0]);
    return 0;
}

int npk_op_lpnorm(npk_opctx *c) {
    int rc, axis;
    if ((rc = npk_opc_need(c, 0, "input"))) return rc;
    const npk_tensor *x = IN(0);
    if ((rc = check_type(x, T_FLOAT, "input"))) return rc;
    if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "axis", -1), x->rank, &axis))) return rc;
    int64_t p = npk_node_attr_i(c->node, "p", 2);
    if (p != 1 && p != 2) return npk_err(NPK_EINVAL, "p must be 1 or 2, got %lld", (long long)p);
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, x->dims))) return rc;
    if (c->run) npk_ref_onnx_lpnorm(x, axis, (int)p, c->out[0]);
    return 0;
}

/* Dropout at inference: the identity, and a mask of ones. Training mode
 * (training_mode input true with a non-zero ratio) is a training use: refused
 * with that reason. */
int npk_op_dropout(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "data"))) return rc;
    const npk_tensor *x = IN(0);
    if (c->opset >= 12 && HAS(2)) {
        if (!IN(2)->data) return NPK_SHAPE_UNKNOWN;
        double ratio = HAS(1) && IN(1)->data ? npk_ref_onnx_get_f(IN(1)->data, IN(1)->dtype, 0) : 0.5;
        if (npk_ref_onnx_get_i(IN(2)->data, IN(2)->dtype, 0) && ratio != 0)
            return npk_err(NPK_EUNSUPPORTED, "Dropout with training_mode = true and a non-zero ratio is a training use (a random dropout mask): not supported");
    }
    if (c->opset < 7 && !npk_node_attr_i(c->node, "is_test", 0) && c->n_out > 1)
        return npk_err(NPK_EUNSUPPORTED, "Dropout-%lld in training mode (is_test = 0) is not supported", (long long)c->opset);
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, x->dims))) return rc;
    int mdt = c->opset >= 10 ? NPK_DT_BOOL : x->dtype;
    if ((rc = npk_opctx_out(c, 1, mdt, x->rank, x->dims))) return rc;
    if (!c->run) return 0;
    memcpy(c->out[0]->data, x->data, npk_tensor_bytes(x));
    if (c->n_out > 1 && c->out[1]) {
        int64_t n = npk_tensor_numel(x);
        for (int64_t i = 0; i < n; i++) npk_ref_onnx_set_f(c->out[1]->data, mdt, i, 1);
    }
    return 0;
}
