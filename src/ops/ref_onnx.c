// SPDX-License-Identifier: MIT
/* CPU reference ONNX operators: element access, elementwise operators,
 * reductions, normalisations, quantization and data movement.
 * (Matrix products, convolution and pooling: ref_onnx_nn.c.) */
#include "ops/ref_onnx.h"

#include <float.h>

#include "npukit/numfmt.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- element access ---------------------------------------------------------- */

double npk_ref_onnx_get_f(const void *d, int dt, int64_t i) {
    switch (dt) {
    case NPK_DT_FLOAT: return ((const float *)d)[i];
    case NPK_DT_DOUBLE: return ((const double *)d)[i];
    case NPK_DT_UINT64: return (double)((const uint64_t *)d)[i];
    case NPK_DT_FLOAT16: return npk_fp16_to_f32(((const uint16_t *)d)[i]);
    case NPK_DT_BFLOAT16: return npk_bf16_to_f32(((const uint16_t *)d)[i]);
    default: return (double)npk_ref_onnx_get_i(d, dt, i);
    }
}

int64_t npk_ref_onnx_get_i(const void *d, int dt, int64_t i) {
    switch (dt) {
    case NPK_DT_UINT8: return ((const uint8_t *)d)[i];
    case NPK_DT_INT8: return ((const int8_t *)d)[i];
    case NPK_DT_UINT16: return ((const uint16_t *)d)[i];
    case NPK_DT_INT16: return ((const int16_t *)d)[i];
    case NPK_DT_INT32: return ((const int32_t *)d)[i];
    case NPK_DT_INT64: return ((const int64_t *)d)[i];
    case NPK_DT_BOOL: return ((const uint8_t *)d)[i] != 0;
    case NPK_DT_UINT32: return ((const uint32_t *)d)[i];
    case NPK_DT_UINT64: return (int64_t)((const uint64_t *)d)[i];
    case NPK_DT_FLOAT: {
        double v = ((const float *)d)[i];
        return v != v ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
    }
    case NPK_DT_DOUBLE: case NPK_DT_FLOAT16: case NPK_DT_BFLOAT16: {
        double v = dt == NPK_DT_DOUBLE ? ((const double *)d)[i] : npk_ref_onnx_get_f(d, dt, i);
        return v != v ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
    }
    default: return 0;
    }
}

void npk_ref_onnx_set_i(void *d, int dt, int64_t i, int64_t v) {
    switch (dt) {
    case NPK_DT_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
    case NPK_DT_INT8: ((int8_t *)d)[i] = (int8_t)(uint8_t)v; break;
    case NPK_DT_UINT16: ((uint16_t *)d)[i] = (uint16_t)v; break;
    case NPK_DT_INT16: ((int16_t *)d)[i] = (int16_t)(uint16_t)v; break;
    case NPK_DT_INT32: ((int32_t *)d)[i] = (int32_t)(uint32_t)v; break;
    case NPK_DT_INT64: ((int64_t *)d)[i] = v; break;
    case NPK_DT_BOOL: ((uint8_t *)d)[i] = v != 0; break;
    case NPK_DT_UINT32: ((uint32_t *)d)[i] = (uint32_t)v; break;
    case NPK_DT_UINT64: ((uint64_t *)d)[i] = (uint64_t)v; break;
    case NPK_DT_FLOAT: ((float *)d)[i] = (float)v; break;
    case NPK_DT_DOUBLE: ((double *)d)[i] = (double)v; break;
    case NPK_DT_FLOAT16: case NPK_DT_BFLOAT16: npk_ref_onnx_set_f(d, dt, i, (double)v); break;
    default: break;
    }
}

static void type_range(int dt, double *lo, double *hi) {
    switch (dt) {
    case NPK_DT_UINT8: *lo = 0; *hi = 255; break;
    case NPK_DT_INT8: *lo = -128; *hi = 127; break;
    case NPK_DT_UINT16: *lo = 0; *hi = 65535; break;
    case NPK_DT_INT16: *lo = -32768; *hi = 32767; break;
    case NPK_DT_INT32: *lo = -2147483648.0; *hi = 2147483647.0; break;
    case NPK_DT_UINT32: *lo = 0; *hi = 4294967295.0; break;
    case NPK_DT_BOOL: *lo = 0; *hi = 1; break;
    case NPK_DT_UINT64: *lo = 0; *hi = 1.8446744073709550e19; break;
    default: *lo = -9.2233720368547748e18; *hi = 9.2233720368547748e18; break;
    }
}

void npk_ref_onnx_set_f(void *d, int dt, int64_t i, double v) {
    if (dt == NPK_DT_FLOAT) {
        ((float *)d)[i] = (float)v;
        return;
    }
    if (dt == NPK_DT_DOUBLE) {
        ((double *)d)[i] = v;
        return;
    }
    /* half types: one rounding, to nearest even */
    if (dt == NPK_DT_FLOAT16) {
        ((uint16_t *)d)[i] = npk_fp16_from_f64(v);
        return;
    }
    if (dt == NPK_DT_BFLOAT16) {
        ((uint16_t *)d)[i] = npk_bf16_from_f64(v);
        return;
    }
    double lo, hi;
    type_range(dt, &lo, &hi);
    if (v != v) v = 0;
    v = trunc(v);
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    if (dt == NPK_DT_UINT64) {
        ((uint64_t *)d)[i] = (uint64_t)v;
        return;
    }
    npk_ref_onnx_set_i(d, dt, i, (int64_t)v);
}

int64_t npk_ref_onnx_saturate(int dt, int64_t v) {
    double lo, hi;
    type_range(dt, &lo, &hi);
    if (dt == NPK_DT_INT64 || dt == NPK_DT_UINT64) return v;
    if (v < (int64_t)lo) return (int64_t)lo;
    if (v > (int64_t)hi) return (int64_t)hi;
    return v;
}

float npk_ref_onnx_rint(float v) { return nearbyintf(v); }

/* ---- broadcasting -------------------------------------------------------------- */

int npk_ref_onnx_bcast_shape(int ra, const int64_t *da, int rb, const int64_t *db, int *ro, int64_t *dout) {
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t a = ia >= 0 ? da[ia] : 1, b = ib >= 0 ? db[ib] : 1;
        if (a != b && a != 1 && b != 1) return -NPK_EINVAL;
        dout[i] = a == 1 ? b : a;
    }
    *ro = r;
    return 0;
}

/* Strides of x for iterating y's index space (0 along broadcast dims). */
static void bcast_strides(const npk_tensor *x, const npk_tensor *y, int64_t *st) {
    /* An empty operand broadcasts only to an empty result: no element is
     * visited, and the stride product of its other (possibly huge) dims
     * could overflow, so it gets zero strides. */
    for (int i = 0; i < x->rank; i++)
        if (x->dims[i] == 0) {
            for (int k = 0; k < y->rank; k++) st[k] = 0;
            return;
        }
    int64_t s = 1;
    for (int i = y->rank - 1; i >= 0; i--) {
        int ix = i - (y->rank - x->rank);
        if (ix >= 0 && x->dims[ix] != 1) {
            st[i] = s;
        } else {
            st[i] = 0;
        }
        if (ix >= 0) s *= x->dims[ix];
    }
}

/* Walk y's elements, keeping the offsets of a and b in step. */
typedef struct bc_iter {
    int rank;
    int64_t dims[NPK_MAX_RANK], idx[NPK_MAX_RANK], sa[NPK_MAX_RANK], sb[NPK_MAX_RANK];
    int64_t oa, ob;
} bc_iter;

static void bc_init(bc_iter *it, const npk_tensor *a, const npk_tensor *b, const npk_tensor *y) {
    memset(it, 0, sizeof *it);
    it->rank = y->rank;
    memcpy(it->dims, y->dims, sizeof(int64_t) * (size_t)y->rank);
    bcast_strides(a, y, it->sa);
    if (b) bcast_strides(b, y, it->sb);
}

static void bc_next(bc_iter *it) {
    for (int i = it->rank - 1; i >= 0; i--) {
        it->idx[i]++;
        it->oa += it->sa[i];
        it->ob += it->sb[i];
        if (it->idx[i] < it->dims[i]) return;
        it->oa -= it->sa[i] * it->dims[i];
        it->ob -= it->sb[i] * it->dims[i];
        it->idx[i] = 0;
    }
}

static int is_float(int dt) { return dt == NPK_DT_FLOAT || dt == NPK_DT_DOUBLE; }

/* Integer power by squaring (wrapping, as numpy's integer power). */
static int64_t ipow(int64_t b, int64_t e) {
    if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0);
    uint64_t r = 1, x = (uint64_t)b;
    while (e) {
        if (e & 1) r *= x;
        x *= x;
        e >>= 1;
    }
    return (int64_t)r;
}

/* x op z for the floating-point binary operators, in the type of x and z (0 for another op) */
#define FARITH(op, x, z)                                                                                              \
    ((op) == NPK_ONNX_ADD     ? (x) + (z)                                                                          \
     : (op) == NPK_ONNX_SUB   ? (x) - (z)                                                                          \
     : (op) == NPK_ONNX_MUL   ? (x) * (z)                                                                          \
     : (op) == NPK_ONNX_DIV   ? (x) / (z)                                                                          \
     : (op) == NPK_ONNX_PRELU ? ((x) < 0 ? (x) * (z) : (x))                                                        \
                              : 0)

void npk_ref_onnx_binary(npk_onnx_binop op, const npk_tensor *a, const npk_tensor *b, npk_tensor *y) {
    bc_iter it;
    bc_init(&it, a, b, y);
    int64_t n = npk_tensor_numel(y);
    int fa = is_float(a->dtype), fb = is_float(b->dtype);
    for (int64_t i = 0; i < n; i++, bc_next(&it)) {
        if (op == NPK_ONNX_POW) {
            if (!fa && !fb) {
                npk_ref_onnx_set_i(y->data, y->dtype, i,
                                   ipow(npk_ref_onnx_get_i(a->data, a->dtype, it.oa),
                                        npk_ref_onnx_get_i(b->data, b->dtype, it.ob)));
            } else {
                double r = pow(npk_ref_onnx_get_f(a->data, a->dtype, it.oa), npk_ref_onnx_get_f(b->data, b->dtype, it.ob));
                npk_ref_onnx_set_f(y->data, y->dtype, i, r);
            }
            continue;
        }
        if (fa) {
            double x = npk_ref_onnx_get_f(a->data, a->dtype, it.oa), z = npk_ref_onnx_get_f(b->data, b->dtype, it.ob);
            /* float32 arithmetic for float, as numpy on float32 arrays; double for the wider types */
            double r = a->dtype == NPK_DT_FLOAT ? (double)FARITH(op, (float)x, (float)z) : FARITH(op, x, z);
            npk_ref_onnx_set_f(y->data, y->dtype, i, r);
        } else {
            int64_t x = npk_ref_onnx_get_i(a->data, a->dtype, it.oa), z = npk_ref_onnx_get_i(b->data, b->dtype, it.ob);
            int64_t r = 0;
            switch (op) {
            case NPK_ONNX_ADD: r = (int64_t)((uint64_t)x + (uint64_t)z); break;
            case NPK_ONNX_SUB: r = (int64_t)((uint64_t)x - (uint64_t)z); break;
            case NPK_ONNX_MUL: r = (int64_t)((uint64_t)x * (uint64_t)z); break;
            case NPK_ONNX_DIV: r = z == 0 || (x == INT64_MIN && z == -1) ? 0 : x / z; break;
            case NPK_ONNX_PRELU: r = x < 0 ? (int64_t)((uint64_t)x * (uint64_t)z) : x; break;
            default: break;
            }
            npk_ref_onnx_set_i(y->data, y->dtype, i, r);
        }
    }
}

void npk_ref_onnx_unary(npk_onnx_unop op, const npk_tensor *x, npk_tensor *y, double alpha, double lo, double hi) {
    int64_t n = npk_tensor_numel(x);
    if (!is_float(x->dtype)) {
        for (int64_t i = 0; i < n; i++) {
            int64_t v = npk_ref_onnx_get_i(x->data, x->dtype, i);
            switch (op) {
            case NPK_ONNX_RELU: v = v < 0 ? 0 : v; break;
            case NPK_ONNX_CLIP:
                if ((double)v < lo) v = (int64_t)lo;
                if ((double)v > hi) v = (int64_t)hi;
                break;
            default: {
                /* float functions on integer input: compute in double, truncate */
                double f = (double)v;
                switch (op) {
                case NPK_ONNX_LEAKYRELU: f = f < 0 ? f * alpha : f; break;
                case NPK_ONNX_SIGMOID: f = 1.0 / (1.0 + exp(-f)); break;
                case NPK_ONNX_TANH: f = tanh(f); break;
                case NPK_ONNX_SQRT: f = sqrt(f); break;
                case NPK_ONNX_EXP: f = exp(f); break;
                case NPK_ONNX_ERF: f = erf(f); break;
                default: break;
                }
                npk_ref_onnx_set_f(y->data, y->dtype, i, f);
                continue;
            }
            }
            npk_ref_onnx_set_i(y->data, y->dtype, i, v);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double v = npk_ref_onnx_get_f(x->data, x->dtype, i);
        switch (op) {
        case NPK_ONNX_RELU: v = v < 0 ? 0 : v; break;
        case NPK_ONNX_LEAKYRELU: v = v < 0 ? v * (double)(float)alpha : v; break;
        case NPK_ONNX_SIGMOID: v = v >= 0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v)); break;
        case NPK_ONNX_TANH: v = tanh(v); break;
        case NPK_ONNX_SQRT: v = sqrt(v); break;
        case NPK_ONNX_EXP: v = exp(v); break;
        case NPK_ONNX_ERF: v = erf(v); break;
        case NPK_ONNX_CLIP:
            if (v < lo) v = lo;
            if (v > hi) v = hi;
            break;
        }
        npk_ref_onnx_set_f(y->data, y->dtype, i, v);
    }
}

/* ---- reductions and normalisations ------------------------------------------------ */

void npk_ref_onnx_softmax(const npk_tensor *x, npk_tensor *y, int64_t outer, int64_t len, int64_t inner,
                          int log_softmax) {
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * len * inner + in;
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < len; k++) {
                double v = npk_ref_onnx_get_f(x->data, x->dtype, base + k * inner);
                if (v > mx) mx = v;
            }
            for (int64_t k = 0; k < len; k++) sum += exp(npk_ref_onnx_get_f(x->data, x->dtype, base + k * inner) - mx);
            for (int64_t k = 0; k < len; k++) {
                double v = npk_ref_onnx_get_f(x->data, x->dtype, base + k * inner) - mx;
                npk_ref_onnx_set_f(y->data, y->dtype, base + k * inner, log_softmax ? v - log(sum) : exp(v) / sum);
            }
        }
}

void npk_ref_onnx_reduce_mean(const npk_tensor *x, const int *reduce, npk_tensor *y) {
    int64_t ny = npk_tensor_numel(y), nx = npk_tensor_numel(x);
    double *acc = calloc((size_t)(ny ? ny : 1), sizeof(double));
    if (!acc) return;
    int64_t idx[NPK_MAX_RANK] = {0}, cnt = ny ? nx / ny : 0;
    for (int64_t i = 0; i < nx; i++) {
        int64_t o = 0;
        for (int d = 0; d < x->rank; d++) o = o * (reduce[d] ? 1 : x->dims[d]) + (reduce[d] ? 0 : idx[d]);
        acc[o] += npk_ref_onnx_get_f(x->data, x->dtype, i);
        for (int d = x->rank - 1; d >= 0; d--) {
            if (++idx[d] < x->dims[d]) break;
            idx[d] = 0;
        }
    }
    for (int64_t i = 0; i < ny; i++) {
        double v = cnt ? acc[i] / (double)cnt : NAN;
        if (is_float(y->dtype))
            npk_ref_onnx_set_f(y->data, y->dtype, i, v);
        else
            npk_ref_onnx_set_i(y->data, y->dtype, i, (int64_t)floor(v)); /* integer mean: floor division */
    }
    free(acc);
}

static int64_t inner_size(const npk_tensor *x, int from) {
    int64_t s = 1;
    for (int d = from; d < x->rank; d++) s *= x->dims[d];
    return s;
}

/* Channel ch of x (n x c x sp) normalized with mean m and variance v, scaled and shifted, into y. */
static void bn_channel(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *bias, int64_t ch, double m, double v,
                       double eps, npk_tensor *y) {
    int64_t n = x->rank > 0 ? x->dims[0] : 1, c = x->rank > 1 ? x->dims[1] : 1, sp = inner_size(x, 2);
    double s = npk_ref_onnx_get_f(scale->data, scale->dtype, ch), b = npk_ref_onnx_get_f(bias->data, bias->dtype, ch);
    double inv = 1.0 / sqrt(v + eps);
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < sp; k++) {
            int64_t o = (i * c + ch) * sp + k;
            npk_ref_onnx_set_f(y->data, y->dtype, o, (npk_ref_onnx_get_f(x->data, x->dtype, o) - m) * inv * s + b);
        }
}

void npk_ref_onnx_batchnorm(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *bias,
                            const npk_tensor *mean, const npk_tensor *var, double eps, npk_tensor *y) {
    int64_t c = x->rank > 1 ? x->dims[1] : 1;
    for (int64_t ch = 0; ch < c; ch++)
        bn_channel(x, scale, bias, ch, npk_ref_onnx_get_f(mean->data, mean->dtype, ch),
                   npk_ref_onnx_get_f(var->data, var->dtype, ch), eps, y);
}

void npk_ref_onnx_batchnorm_train(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *bias,
                                  const npk_tensor *mean, const npk_tensor *var, double eps, double momentum,
                                  npk_tensor *y, npk_tensor *run_mean, npk_tensor *run_var) {
    int64_t n = x->rank > 0 ? x->dims[0] : 1, c = x->rank > 1 ? x->dims[1] : 1, sp = inner_size(x, 2);
    for (int64_t ch = 0; ch < c; ch++) {
        double sum = 0, sq = 0, cnt = (double)(n * sp);
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < sp; k++) sum += npk_ref_onnx_get_f(x->data, x->dtype, (i * c + ch) * sp + k);
        double bm = sum / cnt;
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < sp; k++) {
                double d = npk_ref_onnx_get_f(x->data, x->dtype, (i * c + ch) * sp + k) - bm;
                sq += d * d;
            }
        double bv = sq / cnt;
        bn_channel(x, scale, bias, ch, bm, bv, eps, y);
        if (run_mean)
            npk_ref_onnx_set_f(run_mean->data, run_mean->dtype, ch,
                               npk_ref_onnx_get_f(mean->data, mean->dtype, ch) * momentum + bm * (1 - momentum));
        if (run_var)
            npk_ref_onnx_set_f(run_var->data, run_var->dtype, ch,
                               npk_ref_onnx_get_f(var->data, var->dtype, ch) * momentum + bv * (1 - momentum));
    }
}

void npk_ref_onnx_layernorm(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *bias, int64_t outer,
                            int64_t inner, double eps, npk_tensor *y, npk_tensor *mean, npk_tensor *inv_std) {
    int64_t ns = npk_tensor_numel(scale), nb = bias ? npk_tensor_numel(bias) : 0;
    for (int64_t o = 0; o < outer; o++) {
        double sum = 0, sq = 0;
        for (int64_t k = 0; k < inner; k++) sum += npk_ref_onnx_get_f(x->data, x->dtype, o * inner + k);
        double m = sum / (double)inner;
        for (int64_t k = 0; k < inner; k++) {
            double d = npk_ref_onnx_get_f(x->data, x->dtype, o * inner + k) - m;
            sq += d * d;
        }
        double inv = 1.0 / sqrt(sq / (double)inner + eps);
        for (int64_t k = 0; k < inner; k++) {
            double v = (npk_ref_onnx_get_f(x->data, x->dtype, o * inner + k) - m) * inv;
            v *= npk_ref_onnx_get_f(scale->data, scale->dtype, ns == inner ? k : k % ns);
            if (bias) v += npk_ref_onnx_get_f(bias->data, bias->dtype, nb == inner ? k : k % nb);
            npk_ref_onnx_set_f(y->data, y->dtype, o * inner + k, v);
        }
        if (mean) npk_ref_onnx_set_f(mean->data, mean->dtype, o, m);
        if (inv_std) npk_ref_onnx_set_f(inv_std->data, inv_std->dtype, o, inv);
    }
}

/* ---- quantization ------------------------------------------------------------------- */

int64_t npk_ref_onnx_requant(int64_t acc, float mult, int64_t zp, int dtype) {
    float v = npk_ref_onnx_rint((float)acc * mult);
    double r = (double)v + (double)zp, lo, hi;
    type_range(dtype, &lo, &hi);
    if (r < lo) r = lo;
    if (r > hi) r = hi;
    return (int64_t)r;
}

void npk_ref_onnx_requant_tensor(const npk_tensor *acc, const float *mult, int64_t n_mult, int axis, int64_t y_zp,
                                 npk_tensor *y) {
    int64_t n = npk_tensor_numel(acc), inner = n_mult > 1 ? inner_size(acc, axis + 1) : 1;
    for (int64_t i = 0; i < n; i++) {
        int64_t ch = n_mult > 1 ? (i / inner) % n_mult : 0;
        npk_ref_onnx_set_i(y->data, y->dtype, i,
                           npk_ref_onnx_requant(npk_ref_onnx_get_i(acc->data, acc->dtype, i), mult[ch], y_zp, y->dtype));
    }
}

/* Channel index of element i for per-axis parameters of n elements. */
static int64_t axis_index(const npk_tensor *x, int axis, int64_t nparam, int64_t i) {
    if (nparam <= 1) return 0;
    return (i / inner_size(x, axis + 1)) % x->dims[axis];
}

/* The scale of element i of x, and in *z its zero point (0 without zp): per tensor or per axis. */
static float qparams(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *zp, int axis, int64_t i, int64_t *z) {
    int64_t c = axis_index(x, axis, npk_tensor_numel(scale), i);
    *z = zp ? npk_ref_onnx_get_i(zp->data, zp->dtype, c) : 0;
    return (float)npk_ref_onnx_get_f(scale->data, scale->dtype, c);
}

void npk_ref_onnx_quantize(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *zp, int axis,
                           npk_tensor *y) {
    int64_t n = npk_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        int64_t z;
        float s = qparams(x, scale, zp, axis, i, &z);
        float q = npk_ref_onnx_rint((float)npk_ref_onnx_get_f(x->data, x->dtype, i) / s);
        double lo, hi, r = (double)q + (double)z;
        type_range(y->dtype, &lo, &hi);
        if (r != r) r = 0;
        if (r < lo) r = lo;
        if (r > hi) r = hi;
        npk_ref_onnx_set_i(y->data, y->dtype, i, (int64_t)r);
    }
}

void npk_ref_onnx_dequantize(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *zp, int axis,
                             npk_tensor *y) {
    int64_t n = npk_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        int64_t z;
        float s = qparams(x, scale, zp, axis, i, &z);
        float v = (float)(npk_ref_onnx_get_i(x->data, x->dtype, i) - z) * s;
        npk_ref_onnx_set_f(y->data, y->dtype, i, v);
    }
}

void npk_ref_onnx_dynamic_quantize(const npk_tensor *x, npk_tensor *y, npk_tensor *scale, npk_tensor *zp) {
    int64_t n = npk_tensor_numel(x);
    float mn = 0, mx = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = (float)npk_ref_onnx_get_f(x->data, x->dtype, i);
        if (v < mn) mn = v;
        if (v > mx) mx = v;
    }
    float s = (mx - mn) / 255.0f;
    float z = s != 0 ? npk_ref_onnx_rint(0.0f - mn / s) : 0.0f;
    if (z < 0) z = 0;
    if (z > 255) z = 255;
    ((float *)scale->data)[0] = s;
    ((uint8_t *)zp->data)[0] = (uint8_t)z;
    for (int64_t i = 0; i < n; i++) {
        float q = s != 0 ? npk_ref_onnx_rint((float)npk_ref_onnx_get_f(x->data, x->dtype, i) / s) : 0.0f;
        float r = q + z;
        if (r < 0) r = 0;
        if (r > 255) r = 255;
        ((uint8_t *)y->data)[i] = (uint8_t)r;
    }
}

/* ---- data movement ------------------------------------------------------------------------ */

void npk_ref_onnx_transpose(const npk_tensor *x, const int *perm, npk_tensor *y) {
    size_t es = npk_dtype_size(x->dtype);
    int r = x->rank;
    int64_t xs[NPK_MAX_RANK], st[NPK_MAX_RANK], idx[NPK_MAX_RANK] = {0};
    int64_t s = 1;
    for (int d = r - 1; d >= 0; d--) {
        xs[d] = s;
        s *= x->dims[d];
    }
    for (int d = 0; d < r; d++) st[d] = xs[perm[d]];
    int64_t n = npk_tensor_numel(y), off = 0;
    for (int64_t i = 0; i < n; i++) {
        memcpy((uint8_t *)y->data + (size_t)i * es, (const uint8_t *)x->data + (size_t)off * es, es);
        for (int d = r - 1; d >= 0; d--) {
            idx[d]++;
            off += st[d];
            if (idx[d] < y->dims[d]) break;
            off -= st[d] * y->dims[d];
            idx[d] = 0;
        }
    }
}

void npk_ref_onnx_concat(const npk_tensor *const *xs, int n, int axis, npk_tensor *y) {
    size_t es = npk_dtype_size(y->dtype);
    int64_t outer = 1;
    for (int d = 0; d < axis; d++) outer *= y->dims[d];
    int64_t inner = inner_size(y, axis + 1);
    uint8_t *dst = y->data;
    for (int64_t o = 0; o < outer; o++)
        for (int k = 0; k < n; k++) {
            size_t chunk = (size_t)(xs[k]->dims[axis] * inner) * es;
            if (chunk) memcpy(dst, (const uint8_t *)xs[k]->data + (size_t)o * chunk, chunk);
            dst += chunk;
        }
}

int npk_ref_onnx_gather(const npk_tensor *x, const npk_tensor *idx, int axis, npk_tensor *y) {
    size_t es = npk_dtype_size(x->dtype);
    int64_t outer = 1;
    for (int d = 0; d < axis; d++) outer *= x->dims[d];
    int64_t len = x->dims[axis], inner = inner_size(x, axis + 1), ni = npk_tensor_numel(idx);
    uint8_t *dst = y->data;
    size_t chunk = (size_t)inner * es;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < ni; j++) {
            int64_t k = npk_ref_onnx_get_i(idx->data, idx->dtype, j);
            if (k < 0) k += len;
            if (k < 0 || k >= len)
                return npk_err(NPK_EINVAL, "Gather: index %lld out of range [-%lld, %lld)",
                               (long long)npk_ref_onnx_get_i(idx->data, idx->dtype, j), (long long)len, (long long)len);
            if (chunk) memcpy(dst, (const uint8_t *)x->data + (size_t)(o * len + k) * chunk, chunk);
            dst += chunk;
        }
    return 0;
}
