// SPDX-License-Identifier: MIT
/* CPU reference ONNX data movement: Slice, Pad, Tile, Expand, GatherElements,
 * ScatterElements, GatherND, ScatterND, Trilu, Range, OneHot, Compress,
 * DepthToSpace, SpaceToDepth, NonZero, TopK, EyeLike, ReverseSequence.
 * Shapes and parameters come resolved from the graph layer; kernels copy
 * elements (byte copies of the element size) and never allocate outputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ref_onnx.h"

#define ES(t) npk_dtype_size((t)->dtype)
#define AT(t, i) ((uint8_t *)(t)->data + (size_t)(i) * ES(t))
#define CAT(t, i) ((const uint8_t *)(t)->data + (size_t)(i) * ES(t))

static void unravel(const npk_tensor *t, int64_t i, int64_t *idx) {
    for (int d = t->rank - 1; d >= 0; d--) {
        idx[d] = t->dims[d] ? i % t->dims[d] : 0;
        i = t->dims[d] ? i / t->dims[d] : 0;
    }
}

static int64_t ravel(const npk_tensor *t, const int64_t *idx) {
    int64_t o = 0;
    for (int d = 0; d < t->rank; d++) o = o * t->dims[d] + idx[d];
    return o;
}

void npk_ref_onnx_slice(const npk_tensor *x, const int64_t *start, const int64_t *step, npk_tensor *y) {
    int64_t n = npk_tensor_numel(y), idx[NPK_MAX_RANK];
    for (int64_t i = 0; i < n; i++) {
        unravel(y, i, idx);
        for (int d = 0; d < y->rank; d++) idx[d] = start[d] + idx[d] * step[d];
        memcpy(AT(y, i), CAT(x, ravel(x, idx)), ES(y));
    }
}

void npk_ref_onnx_pad(const npk_tensor *x, const int64_t *pad_b, int mode, const void *cval, npk_tensor *y) {
    int64_t n = npk_tensor_numel(y), idx[NPK_MAX_RANK];
    for (int64_t i = 0; i < n; i++) {
        unravel(y, i, idx);
        int out = 0;
        for (int d = 0; d < y->rank; d++) {
            int64_t v = idx[d] - pad_b[d], len = x->dims[d];
            if (v < 0 || v >= len) {
                if (mode == NPK_ONNX_PAD_CONSTANT || len == 0) {
                    out = 1;
                    break;
                }
                if (mode == NPK_ONNX_PAD_EDGE) v = v < 0 ? 0 : len - 1;
                else if (mode == NPK_ONNX_PAD_WRAP) v = ((v % len) + len) % len;
                else { /* reflect (without repeating the edge) */
                    int64_t period = len > 1 ? 2 * (len - 1) : 1;
                    v = ((v % period) + period) % period;
                    if (v >= len) v = period - v;
                }
            }
            idx[d] = v;
        }
        if (out) memcpy(AT(y, i), cval, ES(y));
        else memcpy(AT(y, i), CAT(x, ravel(x, idx)), ES(y));
    }
}

void npk_ref_onnx_tile(const npk_tensor *x, npk_tensor *y) {
    int64_t n = npk_tensor_numel(y), idx[NPK_MAX_RANK];
    for (int64_t i = 0; i < n; i++) {
        unravel(y, i, idx);
        for (int d = 0; d < y->rank; d++) idx[d] %= x->dims[d];
        memcpy(AT(y, i), CAT(x, ravel(x, idx)), ES(y));
    }
}

void npk_ref_onnx_expand(const npk_tensor *x, npk_tensor *y) {
    int64_t n = npk_tensor_numel(y);
    for (int64_t i = 0; i < n; i++) memcpy(AT(y, i), CAT(x, npk_ref_onnx_bcast_offset(x, y, i)), ES(y));
}

static int get_index(const npk_tensor *idx, int64_t i, int64_t len, int64_t *out) {
    int64_t v = npk_ref_onnx_get_i(idx->data, idx->dtype, i);
    if (v < -len || v >= len) return npk_err(NPK_EINVAL, "index %lld out of range [-%lld, %lld)", (long long)v, (long long)len, (long long)len);
    *out = v < 0 ? v + len : v;
    return 0;
}

int npk_ref_onnx_gather_elements(const npk_tensor *x, const npk_tensor *ind, int axis, npk_tensor *y) {
    int64_t n = npk_tensor_numel(y), idx[NPK_MAX_RANK];
    for (int64_t i = 0; i < n; i++) {
        unravel(ind, i, idx);
        int rc = get_index(ind, i, x->dims[axis], &idx[axis]);
        if (rc) return rc;
        memcpy(AT(y, i), CAT(x, ravel(x, idx)), ES(y));
    }
    return 0;
}

/* dst = dst (reduction) src for one element */
static void reduce_into(npk_tensor *y, int64_t o, const npk_tensor *u, int64_t i, int red) {
    if (red == NPK_ONNX_SCATTER_NONE) {
        memcpy(AT(y, o), CAT(u, i), ES(y));
        return;
    }
    if (y->dtype == NPK_DT_FLOAT || y->dtype == NPK_DT_DOUBLE) {
        double a = npk_ref_onnx_get_f(y->data, y->dtype, o), b = npk_ref_onnx_get_f(u->data, u->dtype, i);
        double r = red == NPK_ONNX_SCATTER_ADD ? a + b : red == NPK_ONNX_SCATTER_MUL ? a * b : red == NPK_ONNX_SCATTER_MAX ? fmax(a, b) : fmin(a, b);
        if (y->dtype == NPK_DT_FLOAT && red == NPK_ONNX_SCATTER_ADD) r = (double)((float)a + (float)b);
        if (y->dtype == NPK_DT_FLOAT && red == NPK_ONNX_SCATTER_MUL) r = (double)((float)a * (float)b);
        npk_ref_onnx_set_f(y->data, y->dtype, o, r);
    } else {
        int64_t a = npk_ref_onnx_get_i(y->data, y->dtype, o), b = npk_ref_onnx_get_i(u->data, u->dtype, i);
        int64_t r = red == NPK_ONNX_SCATTER_ADD   ? (int64_t)((uint64_t)a + (uint64_t)b)
                    : red == NPK_ONNX_SCATTER_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
                    : red == NPK_ONNX_SCATTER_MAX ? (a > b ? a : b)
                                                  : (a < b ? a : b);
        npk_ref_onnx_set_i(y->data, y->dtype, o, r);
    }
}

int npk_ref_onnx_scatter_elements(const npk_tensor *x, const npk_tensor *ind, const npk_tensor *upd, int axis, int red,
                                  npk_tensor *y) {
    memcpy(y->data, x->data, npk_tensor_bytes(x));
    int64_t n = npk_tensor_numel(ind), idx[NPK_MAX_RANK];
    for (int64_t i = 0; i < n; i++) {
        unravel(ind, i, idx);
        int rc = get_index(ind, i, x->dims[axis], &idx[axis]);
        if (rc) return rc;
        reduce_into(y, ravel(x, idx), upd, i, red);
    }
    return 0;
}

/* Offset into x (in elements) of the slice that index tuple `tup` (k entries) selects,
 * with b leading batch dimensions given by bidx. */
static int nd_offset(const npk_tensor *x, int b, const int64_t *bidx, const npk_tensor *ind, int64_t tup, int k,
                     int64_t *off) {
    int64_t o = 0;
    for (int d = 0; d < b; d++) o = o * x->dims[d] + bidx[d];
    for (int d = 0; d < k; d++) {
        int64_t v = 0;
        int rc = get_index(ind, tup * k + d, x->dims[b + d], &v);
        if (rc) return rc;
        o = o * x->dims[b + d] + v;
    }
    for (int d = b + k; d < x->rank; d++) o *= x->dims[d];
    *off = o;
    return 0;
}

int npk_ref_onnx_gather_nd(const npk_tensor *x, const npk_tensor *ind, int b, npk_tensor *y) {
    int k = (int)ind->dims[ind->rank - 1];
    int64_t slice = 1, ntup = npk_tensor_numel(ind) / (k ? k : 1), per_batch = 1;
    for (int d = b + k; d < x->rank; d++) slice *= x->dims[d];
    for (int d = b; d < ind->rank - 1; d++) per_batch *= ind->dims[d];
    if (!k) ntup = npk_tensor_numel(ind) ? 0 : 0;
    if (!k) { /* empty tuples: every position selects the whole batch slice */
        ntup = 1;
        for (int d = 0; d < ind->rank - 1; d++) ntup *= ind->dims[d];
    }
    for (int64_t t = 0; t < ntup; t++) {
        int64_t bidx[NPK_MAX_RANK], bt = t / per_batch, off;
        for (int d = b - 1; d >= 0; d--) {
            bidx[d] = bt % x->dims[d];
            bt /= x->dims[d];
        }
        int rc = nd_offset(x, b, bidx, ind, t, k, &off);
        if (rc) return rc;
        memcpy(AT(y, t * slice), CAT(x, off), (size_t)slice * ES(y));
    }
    return 0;
}

int npk_ref_onnx_scatter_nd(const npk_tensor *x, const npk_tensor *ind, const npk_tensor *upd, int red, npk_tensor *y) {
    memcpy(y->data, x->data, npk_tensor_bytes(x));
    int k = (int)ind->dims[ind->rank - 1];
    int64_t slice = 1, ntup = 1;
    for (int d = k; d < x->rank; d++) slice *= x->dims[d];
    for (int d = 0; d < ind->rank - 1; d++) ntup *= ind->dims[d];
    for (int64_t t = 0; t < ntup; t++) {
        int64_t off;
        int rc = nd_offset(x, 0, NULL, ind, t, k, &off);
        if (rc) return rc;
        for (int64_t s = 0; s < slice; s++) reduce_into(y, off + s, upd, t * slice + s, red);
    }
    return 0;
}

void npk_ref_onnx_trilu(const npk_tensor *x, int upper, int64_t k, npk_tensor *y) {
    int64_t n = npk_tensor_numel(x), R = x->dims[x->rank - 2], C = x->dims[x->rank - 1];
    memset(y->data, 0, npk_tensor_bytes(y));
    for (int64_t i = 0; i < n; i++) {
        int64_t c = i % C, r = (i / C) % R;
        int keep = upper ? c - r >= k : c - r <= k;
        if (keep) memcpy(AT(y, i), CAT(x, i), ES(y));
    }
}

void npk_ref_onnx_range(double start, double delta, npk_tensor *y) {
    int64_t n = npk_tensor_numel(y);
    if (y->dtype == NPK_DT_FLOAT || y->dtype == NPK_DT_DOUBLE) {
        for (int64_t i = 0; i < n; i++) {
            /* numpy arange in the element type: start + i * delta */
            double v = y->dtype == NPK_DT_FLOAT ? (double)((float)start + (float)i * (float)delta) : start + (double)i * delta;
            npk_ref_onnx_set_f(y->data, y->dtype, i, v);
        }
    } else {
        for (int64_t i = 0; i < n; i++) npk_ref_onnx_set_i(y->data, y->dtype, i, (int64_t)start + i * (int64_t)delta);
    }
}

void npk_ref_onnx_onehot(const npk_tensor *ind, int64_t depth, const npk_tensor *values, int axis, npk_tensor *y) {
    int64_t n = npk_tensor_numel(y), idx[NPK_MAX_RANK];
    size_t es = ES(y);
    for (int64_t i = 0; i < n; i++) {
        unravel(y, i, idx);
        int64_t at = idx[axis], o = 0;
        for (int d = 0; d < y->rank; d++)
            if (d != axis) o = o * y->dims[d] + idx[d];
        double v = npk_ref_onnx_get_f(ind->data, ind->dtype, o);
        int64_t iv = (int64_t)v; /* float indices are truncated, as ONNX's reference */
        if (iv < 0) iv += depth;
        memcpy(AT(y, i), (const uint8_t *)values->data + (iv == at ? es : 0), es);
    }
}

void npk_ref_onnx_compress(const npk_tensor *x, const int64_t *sel, int64_t nsel, int axis, npk_tensor *y) {
    if (axis < 0) { /* flattened */
        for (int64_t i = 0; i < nsel; i++) memcpy(AT(y, i), CAT(x, sel[i]), ES(y));
        return;
    }
    int64_t outer = 1, inner = 1, len = x->dims[axis];
    for (int d = 0; d < axis; d++) outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t s = 0; s < nsel; s++)
            memcpy(AT(y, (o * nsel + s) * inner), CAT(x, (o * len + sel[s]) * inner), (size_t)inner * ES(y));
}

void npk_ref_onnx_depth_to_space(const npk_tensor *x, int64_t bs, int crd, npk_tensor *y) {
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], oc = C / (bs * bs);
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < oc; c++)
            for (int64_t h = 0; h < H * bs; h++)
                for (int64_t w = 0; w < W * bs; w++) {
                    int64_t bh = h % bs, bw = w % bs;
                    int64_t ic = crd ? c * bs * bs + bh * bs + bw : (bh * bs + bw) * oc + c;
                    int64_t src = ((n * C + ic) * H + h / bs) * W + w / bs, dst = ((n * oc + c) * H * bs + h) * W * bs + w;
                    memcpy(AT(y, dst), CAT(x, src), ES(y));
                }
}

void npk_ref_onnx_space_to_depth(const npk_tensor *x, int64_t bs, npk_tensor *y) {
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) {
                    int64_t oc = ((h % bs) * bs + w % bs) * C + c;
                    int64_t dst = ((n * C * bs * bs + oc) * (H / bs) + h / bs) * (W / bs) + w / bs;
                    memcpy(AT(y, dst), CAT(x, ((n * C + c) * H + h) * W + w), ES(y));
                }
}

int64_t npk_ref_onnx_count_nonzero(const npk_tensor *x) {
    int64_t n = npk_tensor_numel(x), k = 0;
    for (int64_t i = 0; i < n; i++) k += npk_ref_onnx_get_f(x->data, x->dtype, i) != 0;
    return k;
}

void npk_ref_onnx_nonzero(const npk_tensor *x, npk_tensor *y) {
    int64_t n = npk_tensor_numel(x), nz = y->dims[1], k = 0, idx[NPK_MAX_RANK];
    for (int64_t i = 0; i < n; i++) {
        if (npk_ref_onnx_get_f(x->data, x->dtype, i) == 0) continue;
        unravel(x, i, idx);
        for (int d = 0; d < x->rank; d++) ((int64_t *)y->data)[d * nz + k] = idx[d];
        k++;
    }
}

/* qsort has no context argument: the comparison reads this thread's TopK state */
typedef struct topk_ctx {
    const npk_tensor *x;
    int largest;
    int64_t base, inner;
} topk_ctx;
static _Thread_local topk_ctx tk;

static int topk_cmp(const void *pa, const void *pb) {
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    double va = npk_ref_onnx_get_f(tk.x->data, tk.x->dtype, tk.base + a * tk.inner),
           vb = npk_ref_onnx_get_f(tk.x->data, tk.x->dtype, tk.base + b * tk.inner);
    if (tk.x->dtype != NPK_DT_FLOAT && tk.x->dtype != NPK_DT_DOUBLE) {
        int64_t ia = npk_ref_onnx_get_i(tk.x->data, tk.x->dtype, tk.base + a * tk.inner),
                ib = npk_ref_onnx_get_i(tk.x->data, tk.x->dtype, tk.base + b * tk.inner);
        if (ia != ib) return (tk.largest ? ia > ib : ia < ib) ? -1 : 1;
        return a < b ? -1 : a > b;
    }
    if (va != vb) return (tk.largest ? va > vb : va < vb) ? -1 : 1;
    return a < b ? -1 : a > b; /* ties: the lower index first */
}

int npk_ref_onnx_topk(const npk_tensor *x, int axis, int64_t k, int largest, npk_tensor *vals, npk_tensor *inds) {
    int64_t outer = 1, len = x->dims[axis], inner = 1;
    for (int d = 0; d < axis; d++) outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    int64_t *order = malloc(sizeof(int64_t) * (size_t)(len ? len : 1));
    if (!order) return -NPK_ENOMEM;
    tk.x = x;
    tk.largest = largest;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            for (int64_t i = 0; i < len; i++) order[i] = i;
            tk.base = o * len * inner + in;
            tk.inner = inner;
            qsort(order, (size_t)len, sizeof(int64_t), topk_cmp);
            for (int64_t j = 0; j < k; j++) {
                int64_t dst = (o * k + j) * inner + in;
                if (vals) memcpy(AT(vals, dst), CAT(x, tk.base + order[j] * inner), ES(x));
                if (inds) ((int64_t *)inds->data)[dst] = order[j];
            }
        }
    free(order);
    return 0;
}

void npk_ref_onnx_eyelike(int64_t k, npk_tensor *y) {
    memset(y->data, 0, npk_tensor_bytes(y));
    int64_t R = y->dims[0], C = y->dims[1];
    for (int64_t r = 0; r < R; r++)
        if (r + k >= 0 && r + k < C) npk_ref_onnx_set_i(y->data, y->dtype, r * C + r + k, 1);
}

void npk_ref_onnx_reverse_sequence(const npk_tensor *x, const npk_tensor *lens, int batch_axis, int time_axis,
                                   npk_tensor *y) {
    int64_t n = npk_tensor_numel(x), idx[NPK_MAX_RANK];
    for (int64_t i = 0; i < n; i++) {
        unravel(x, i, idx);
        int64_t L = npk_ref_onnx_get_i(lens->data, lens->dtype, idx[batch_axis]);
        if (idx[time_axis] < L) idx[time_axis] = L - 1 - idx[time_axis];
        memcpy(AT(y, i), CAT(x, ravel(x, idx)), ES(y));
    }
}
