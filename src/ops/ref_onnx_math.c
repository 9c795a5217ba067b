// SPDX-License-Identifier: MIT
/* CPU reference ONNX math: the remaining unary and binary elementwise
 * operators, Where, Cast, reductions, ArgMax/ArgMin, CumSum, Hardmax,
 * LpNormalization. Floats compute in double and round once; integers are
 * exact (int64 with wrapping where numpy wraps). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ref_onnx.h"

static int is_fl(int dt) { return dt == NPK_DT_FLOAT || dt == NPK_DT_DOUBLE; }

int64_t npk_ref_onnx_bcast_offset(const npk_tensor *x, const npk_tensor *y, int64_t i) {
    int64_t off = 0, stride = 1;
    for (int d = y->rank - 1; d >= 0; d--) {
        int64_t id = i % y->dims[d];
        i /= y->dims[d];
        int dx = d - (y->rank - x->rank);
        if (dx < 0) continue;
        if (x->dims[dx] != 1) off += id * stride;
        stride *= x->dims[dx];
    }
    return off;
}

/* ---- unary ------------------------------------------------------------------ */

static double unary_f(npk_onnx_unop2 op, double v, const double *p) {
    switch (op) {
    case NPK_ONNX_ABS: return fabs(v);
    case NPK_ONNX_NEG: return -v;
    case NPK_ONNX_RECIPROCAL: return 1.0 / v;
    case NPK_ONNX_FLOOR: return floor(v);
    case NPK_ONNX_CEIL: return ceil(v);
    case NPK_ONNX_ROUND: return nearbyint(v);
    case NPK_ONNX_SIGN: return v > 0 ? 1 : v < 0 ? -1 : v; /* NaN stays NaN, -0 stays */
    case NPK_ONNX_LOG: return log(v);
    case NPK_ONNX_SIN: return sin(v);
    case NPK_ONNX_COS: return cos(v);
    case NPK_ONNX_TAN: return tan(v);
    case NPK_ONNX_ASIN: return asin(v);
    case NPK_ONNX_ACOS: return acos(v);
    case NPK_ONNX_ATAN: return atan(v);
    case NPK_ONNX_SINH: return sinh(v);
    case NPK_ONNX_COSH: return cosh(v);
    case NPK_ONNX_ASINH: return asinh(v);
    case NPK_ONNX_ACOSH: return acosh(v);
    case NPK_ONNX_ATANH: return atanh(v);
    case NPK_ONNX_SOFTPLUS: return v > 30 ? v : log1p(exp(v));
    case NPK_ONNX_SOFTSIGN: return v / (1 + fabs(v));
    case NPK_ONNX_ELU: return v < 0 ? p[0] * (exp(v) - 1) : v;
    case NPK_ONNX_SELU: return v <= 0 ? p[1] * (p[0] * exp(v) - p[0]) : p[1] * v;
    case NPK_ONNX_CELU: return (v > 0 ? v : 0) + fmin(0, p[0] * (exp(v / p[0]) - 1));
    case NPK_ONNX_HARDSIGMOID: return fmax(0, fmin(1, p[0] * v + p[1]));
    case NPK_ONNX_HARDSWISH: return v * fmax(0, fmin(1, v / 6 + 0.5));
    case NPK_ONNX_THRESHOLDEDRELU: return v > p[0] ? v : 0;
    case NPK_ONNX_SHRINK: return v < -p[0] ? v + p[1] : v > p[0] ? v - p[1] : 0;
    case NPK_ONNX_MISH: return v * tanh(v > 30 ? v : log1p(exp(v)));
    case NPK_ONNX_GELU: return 0.5 * v * (1 + erf(v / sqrt(2.0)));
    default: return v;
    }
}

void npk_ref_onnx_unary2(npk_onnx_unop2 op, const npk_tensor *x, npk_tensor *y, const double *p) {
    int64_t n = npk_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        if (op == NPK_ONNX_ISNAN || op == NPK_ONNX_ISINF) {
            double v = npk_ref_onnx_get_f(x->data, x->dtype, i);
            int r = op == NPK_ONNX_ISNAN ? v != v : ((isinf(v) && v > 0 && p[1] != 0) || (isinf(v) && v < 0 && p[0] != 0));
            ((uint8_t *)y->data)[i] = (uint8_t)r;
            continue;
        }
        if (!is_fl(x->dtype)) {
            int64_t v = npk_ref_onnx_get_i(x->data, x->dtype, i), r;
            switch (op) {
            case NPK_ONNX_ABS: r = v < 0 ? (int64_t)(0 - (uint64_t)v) : v; break;
            case NPK_ONNX_NEG: r = (int64_t)(0 - (uint64_t)v); break;
            case NPK_ONNX_SIGN: r = v > 0 ? 1 : v < 0 ? -1 : 0; break;
            case NPK_ONNX_NOT: r = !v; break;
            case NPK_ONNX_BITNOT: r = ~v; break;
            default:
                /* float function of an integer (e.g. ThresholdedRelu is float only; reached only via Shrink/Sign) */
                npk_ref_onnx_set_f(y->data, y->dtype, i, unary_f(op, (double)v, p));
                continue;
            }
            npk_ref_onnx_set_i(y->data, y->dtype, i, r);
            continue;
        }
        npk_ref_onnx_set_f(y->data, y->dtype, i, unary_f(op, npk_ref_onnx_get_f(x->data, x->dtype, i), p));
    }
}

/* ---- binary ------------------------------------------------------------------- */

static uint64_t umask(int dt) {
    size_t b = npk_dtype_size(dt) * 8;
    return b >= 64 ? ~0ull : (1ull << b) - 1;
}

void npk_ref_onnx_binary2(npk_onnx_binop2 op, const npk_tensor *a, const npk_tensor *b, npk_tensor *y) {
    int64_t n = npk_tensor_numel(y);
    int fl = is_fl(a->dtype);
    int uns = a->dtype == NPK_DT_UINT8 || a->dtype == NPK_DT_UINT16 || a->dtype == NPK_DT_UINT32 || a->dtype == NPK_DT_UINT64;
    for (int64_t i = 0; i < n; i++) {
        int64_t ia = npk_ref_onnx_bcast_offset(a, y, i), ib = npk_ref_onnx_bcast_offset(b, y, i);
        if (fl) {
            double x = npk_ref_onnx_get_f(a->data, a->dtype, ia), z = npk_ref_onnx_get_f(b->data, b->dtype, ib), r = 0;
            int cmp = -1;
            switch (op) {
            case NPK_ONNX_MOD: r = fmod(x, z); if (r != 0 && ((r < 0) != (z < 0))) r += z; break;
            case NPK_ONNX_FMOD: r = fmod(x, z); break;
            case NPK_ONNX_EQUAL: cmp = x == z; break;
            case NPK_ONNX_LESS: cmp = x < z; break;
            case NPK_ONNX_GREATER: cmp = x > z; break;
            case NPK_ONNX_LESSEQ: cmp = x <= z; break;
            case NPK_ONNX_GREATEREQ: cmp = x >= z; break;
            case NPK_ONNX_MAX: r = x != x || z != z ? NAN : x > z ? x : z; break;
            case NPK_ONNX_MIN: r = x != x || z != z ? NAN : x < z ? x : z; break;
            case NPK_ONNX_SUM2: r = a->dtype == NPK_DT_FLOAT ? (double)((float)x + (float)z) : x + z; break;
            default: break;
            }
            if (cmp >= 0) ((uint8_t *)y->data)[i] = (uint8_t)cmp;
            else npk_ref_onnx_set_f(y->data, y->dtype, i, r);
            continue;
        }
        int64_t x = npk_ref_onnx_get_i(a->data, a->dtype, ia), z = npk_ref_onnx_get_i(b->data, b->dtype, ib), r = 0;
        uint64_t ux = (uint64_t)x & umask(a->dtype), uz = (uint64_t)z & umask(a->dtype);
        int cmp = -1;
        switch (op) {
        case NPK_ONNX_MOD:
            if (z == 0) r = 0;
            else if (uns) r = (int64_t)(ux % uz);
            else if (z == -1) r = 0;
            else {
                r = x % z;
                if (r != 0 && ((r < 0) != (z < 0))) r += z; /* the divisor's sign, as Python */
            }
            break;
        case NPK_ONNX_FMOD: r = z == 0 || (!uns && z == -1) ? 0 : uns ? (int64_t)(ux % uz) : x % z; break;
        case NPK_ONNX_EQUAL: cmp = x == z; break;
        case NPK_ONNX_LESS: cmp = uns ? ux < uz : x < z; break;
        case NPK_ONNX_GREATER: cmp = uns ? ux > uz : x > z; break;
        case NPK_ONNX_LESSEQ: cmp = uns ? ux <= uz : x <= z; break;
        case NPK_ONNX_GREATEREQ: cmp = uns ? ux >= uz : x >= z; break;
        case NPK_ONNX_AND: cmp = x && z; break;
        case NPK_ONNX_OR: cmp = x || z; break;
        case NPK_ONNX_XOR: cmp = !x != !z; break;
        case NPK_ONNX_SHL: r = uz >= 64 ? 0 : (int64_t)(ux << uz); break;
        case NPK_ONNX_SHR: r = uz >= 64 ? 0 : (int64_t)(ux >> uz); break;
        case NPK_ONNX_BITAND: r = x & z; break;
        case NPK_ONNX_BITOR: r = x | z; break;
        case NPK_ONNX_BITXOR: r = x ^ z; break;
        case NPK_ONNX_MAX: r = (uns ? ux > uz : x > z) ? x : z; break;
        case NPK_ONNX_MIN: r = (uns ? ux < uz : x < z) ? x : z; break;
        case NPK_ONNX_SUM2: r = (int64_t)((uint64_t)x + (uint64_t)z); break;
        }
        if (cmp >= 0) ((uint8_t *)y->data)[i] = (uint8_t)cmp;
        else npk_ref_onnx_set_i(y->data, y->dtype, i, r);
    }
}

void npk_ref_onnx_where(const npk_tensor *cond, const npk_tensor *a, const npk_tensor *b, npk_tensor *y) {
    int64_t n = npk_tensor_numel(y);
    size_t es = npk_dtype_size(y->dtype);
    for (int64_t i = 0; i < n; i++) {
        int c = ((const uint8_t *)cond->data)[npk_ref_onnx_bcast_offset(cond, y, i)] != 0;
        const npk_tensor *s = c ? a : b;
        memcpy((uint8_t *)y->data + (size_t)i * es, (const uint8_t *)s->data + (size_t)npk_ref_onnx_bcast_offset(s, y, i) * es, es);
    }
}

void npk_ref_onnx_cast(const npk_tensor *x, npk_tensor *y) {
    int64_t n = npk_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        if (is_fl(x->dtype) || npk_dtype_is_half(x->dtype) || x->dtype == NPK_DT_UINT64) {
            double v = npk_ref_onnx_get_f(x->data, x->dtype, i);
            if (y->dtype == NPK_DT_BOOL) ((uint8_t *)y->data)[i] = v != 0;
            else if (x->dtype == NPK_DT_UINT64 && !is_fl(y->dtype))
                npk_ref_onnx_set_i(y->data, y->dtype, i, npk_ref_onnx_get_i(x->data, x->dtype, i));
            else npk_ref_onnx_set_f(y->data, y->dtype, i, v);
        } else if (is_fl(y->dtype) || npk_dtype_is_half(y->dtype)) {
            npk_ref_onnx_set_f(y->data, y->dtype, i, (double)npk_ref_onnx_get_i(x->data, x->dtype, i));
        } else {
            npk_ref_onnx_set_i(y->data, y->dtype, i, npk_ref_onnx_get_i(x->data, x->dtype, i));
        }
    }
}

/* ---- reductions ----------------------------------------------------------------- */

/* Offset in the reduced output of x's element whose multi-index is idx. */
static int64_t red_off(const npk_tensor *x, const int *red, const int64_t *idx) {
    int64_t o = 0;
    for (int d = 0; d < x->rank; d++) o = o * (red[d] ? 1 : x->dims[d]) + (red[d] ? 0 : idx[d]);
    return o;
}

static void idx_next(const npk_tensor *x, int64_t *idx) {
    for (int d = x->rank - 1; d >= 0; d--) {
        if (++idx[d] < x->dims[d]) return;
        idx[d] = 0;
    }
}

int npk_ref_onnx_reduce(npk_onnx_reduce op, const npk_tensor *x, const int *red, npk_tensor *y) {
    int64_t ny = npk_tensor_numel(y), nx = npk_tensor_numel(x);
    double *acc = malloc(sizeof(double) * (size_t)(ny ? ny : 1));
    int64_t *iacc = malloc(sizeof(int64_t) * (size_t)(ny ? ny : 1));
    if (!acc || !iacc) {
        free(acc);
        free(iacc);
        return -NPK_ENOMEM;
    }
    int fl = is_fl(x->dtype);
    for (int64_t i = 0; i < ny; i++) {
        acc[i] = op == NPK_ONNX_R_PROD ? 1 : op == NPK_ONNX_R_MAX ? -INFINITY : op == NPK_ONNX_R_MIN ? INFINITY : 0;
        iacc[i] = op == NPK_ONNX_R_PROD ? 1 : op == NPK_ONNX_R_MAX ? INT64_MIN : op == NPK_ONNX_R_MIN ? INT64_MAX : 0;
    }
    double *mx = NULL;
    if (op == NPK_ONNX_R_LOGSUMEXP) { /* max per output for a stable exp sum */
        mx = malloc(sizeof(double) * (size_t)(ny ? ny : 1));
        if (!mx) {
            free(acc);
            free(iacc);
            return -NPK_ENOMEM;
        }
        for (int64_t i = 0; i < ny; i++) mx[i] = -INFINITY;
        int64_t idx[NPK_MAX_RANK] = {0};
        for (int64_t i = 0; i < nx; i++, idx_next(x, idx)) {
            int64_t o = red_off(x, red, idx);
            double v = npk_ref_onnx_get_f(x->data, x->dtype, i);
            if (v > mx[o]) mx[o] = v;
        }
        for (int64_t i = 0; i < ny; i++)
            if (isinf(mx[i])) mx[i] = 0;
    }
    int64_t idx[NPK_MAX_RANK] = {0}, cnt = ny ? nx / ny : 0;
    for (int64_t i = 0; i < nx; i++, idx_next(x, idx)) {
        int64_t o = red_off(x, red, idx);
        if (!fl) {
            int64_t v = npk_ref_onnx_get_i(x->data, x->dtype, i);
            switch (op) {
            case NPK_ONNX_R_SUM: case NPK_ONNX_R_MEAN: iacc[o] = (int64_t)((uint64_t)iacc[o] + (uint64_t)v); break;
            case NPK_ONNX_R_PROD: iacc[o] = (int64_t)((uint64_t)iacc[o] * (uint64_t)v); break;
            case NPK_ONNX_R_MAX: if (v > iacc[o]) iacc[o] = v; break;
            case NPK_ONNX_R_MIN: if (v < iacc[o]) iacc[o] = v; break;
            case NPK_ONNX_R_L1: iacc[o] += v < 0 ? -v : v; break;
            case NPK_ONNX_R_SUMSQUARE: iacc[o] = (int64_t)((uint64_t)iacc[o] + (uint64_t)v * (uint64_t)v); break;
            default: break;
            }
        }
        double v = npk_ref_onnx_get_f(x->data, x->dtype, i);
        switch (op) {
        case NPK_ONNX_R_SUM: case NPK_ONNX_R_MEAN: case NPK_ONNX_R_LOGSUM: acc[o] += v; break;
        case NPK_ONNX_R_PROD: acc[o] *= v; break;
        case NPK_ONNX_R_MAX: acc[o] = v != v || acc[o] != acc[o] ? NAN : v > acc[o] ? v : acc[o]; break;
        case NPK_ONNX_R_MIN: acc[o] = v != v || acc[o] != acc[o] ? NAN : v < acc[o] ? v : acc[o]; break;
        case NPK_ONNX_R_L1: acc[o] += fabs(v); break;
        case NPK_ONNX_R_L2: case NPK_ONNX_R_SUMSQUARE: acc[o] += v * v; break;
        case NPK_ONNX_R_LOGSUMEXP: acc[o] += exp(v - mx[o]); break;
        }
    }
    for (int64_t i = 0; i < ny; i++) {
        if (!fl && op != NPK_ONNX_R_L2 && op != NPK_ONNX_R_LOGSUM && op != NPK_ONNX_R_LOGSUMEXP) {
            int64_t r = iacc[i];
            if (op == NPK_ONNX_R_MEAN) r = cnt ? r / cnt : 0;
            npk_ref_onnx_set_i(y->data, y->dtype, i, r);
            continue;
        }
        double r = acc[i];
        switch (op) {
        case NPK_ONNX_R_MEAN: r = cnt ? r / (double)cnt : NAN; break;
        case NPK_ONNX_R_L2: r = sqrt(r); break;
        case NPK_ONNX_R_LOGSUM: r = log(r); break;
        case NPK_ONNX_R_LOGSUMEXP: r = log(r) + mx[i]; break;
        default: break;
        }
        npk_ref_onnx_set_f(y->data, y->dtype, i, r);
    }
    free(mx);
    free(acc);
    free(iacc);
    return 0;
}

/* x viewed as [outer, len, inner] around axis */
static void axis_split(const npk_tensor *x, int axis, int64_t *outer, int64_t *len, int64_t *inner) {
    *outer = *inner = 1;
    *len = x->dims[axis];
    for (int d = 0; d < axis; d++) *outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) *inner *= x->dims[d];
}

void npk_ref_onnx_argminmax(const npk_tensor *x, int axis, int is_min, int last, npk_tensor *y) {
    int64_t outer, len, inner;
    axis_split(x, axis, &outer, &len, &inner);
    int fl = is_fl(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t best = 0;
            for (int64_t k = 1; k < len; k++) {
                int64_t i = (o * len + k) * inner + in, j = (o * len + best) * inner + in;
                int better, equal;
                if (fl) {
                    double v = npk_ref_onnx_get_f(x->data, x->dtype, i), w = npk_ref_onnx_get_f(x->data, x->dtype, j);
                    better = is_min ? v < w : v > w;
                    equal = v == w;
                } else {
                    int64_t v = npk_ref_onnx_get_i(x->data, x->dtype, i), w = npk_ref_onnx_get_i(x->data, x->dtype, j);
                    better = is_min ? v < w : v > w;
                    equal = v == w;
                }
                if (better || (last && equal)) best = k;
            }
            ((int64_t *)y->data)[o * inner + in] = best;
        }
}

void npk_ref_onnx_cumsum(const npk_tensor *x, int axis, int exclusive, int reverse, npk_tensor *y) {
    int64_t outer, len, inner;
    axis_split(x, axis, &outer, &len, &inner);
    int fl = is_fl(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            double s = 0;
            int64_t si = 0;
            for (int64_t kk = 0; kk < len; kk++) {
                int64_t k = reverse ? len - 1 - kk : kk, i = (o * len + k) * inner + in;
                if (exclusive) {
                    if (fl) npk_ref_onnx_set_f(y->data, y->dtype, i, s);
                    else npk_ref_onnx_set_i(y->data, y->dtype, i, si);
                }
                if (fl) s += npk_ref_onnx_get_f(x->data, x->dtype, i);
                else si = (int64_t)((uint64_t)si + (uint64_t)npk_ref_onnx_get_i(x->data, x->dtype, i));
                if (!exclusive) {
                    if (fl) npk_ref_onnx_set_f(y->data, y->dtype, i, s);
                    else npk_ref_onnx_set_i(y->data, y->dtype, i, si);
                }
            }
        }
}

void npk_ref_onnx_hardmax(const npk_tensor *x, npk_tensor *y, int64_t outer, int64_t len, int64_t inner) {
    memset(y->data, 0, npk_tensor_bytes(y));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t best = 0;
            for (int64_t k = 1; k < len; k++)
                if (npk_ref_onnx_get_f(x->data, x->dtype, (o * len + k) * inner + in) >
                    npk_ref_onnx_get_f(x->data, x->dtype, (o * len + best) * inner + in))
                    best = k;
            if (len) npk_ref_onnx_set_f(y->data, y->dtype, (o * len + best) * inner + in, 1);
        }
}

void npk_ref_onnx_lpnorm(const npk_tensor *x, int axis, int p, npk_tensor *y) {
    int64_t outer, len, inner;
    axis_split(x, axis, &outer, &len, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            double s = 0;
            for (int64_t k = 0; k < len; k++) {
                double v = npk_ref_onnx_get_f(x->data, x->dtype, (o * len + k) * inner + in);
                s += p == 1 ? fabs(v) : v * v;
            }
            if (p == 2) s = sqrt(s);
            for (int64_t k = 0; k < len; k++) {
                int64_t i = (o * len + k) * inner + in;
                npk_ref_onnx_set_f(y->data, y->dtype, i, s == 0 ? 0 : npk_ref_onnx_get_f(x->data, x->dtype, i) / s);
            }
        }
}
