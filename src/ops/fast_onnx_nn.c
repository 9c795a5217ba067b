// SPDX-License-Identifier: MIT
/* Fast CPU kernels for the data-movement operators of conv nets (issue 15
 * point 2: ppocr-v4-det, ppocr-cls-*): MaxPool and nearest Resize. Both pick
 * elements without arithmetic, so they equal the golden (ref_onnx_nn*.c) bit
 * for bit; tests/test_onnx_fast.c compares them on random shapes. */
#include "ops/fast_onnx.h"
#include "npukit/threads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- MaxPool ---------------------------------------------------------------------------------
 * The golden's rule: the first element of the window, then every strictly
 * greater one (a NaN that comes first stays, a later one is skipped); a
 * window entirely in the padding gives 0. */

/* Range [lo, hi) of kernel taps kk with 0 <= o * s - pb + kk * dl < in. */
static void taps_in(int64_t o, int64_t s, int64_t pb, int64_t dl, int64_t k, int64_t in, int64_t *lo, int64_t *hi) {
    int64_t st = o * s - pb, a = 0, b = k;
    if (st < 0) a = (-st + dl - 1) / dl;
    if (st + (k - 1) * dl >= in) b = in - st <= 0 ? 0 : (in - st - 1) / dl + 1;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

#define MAXPOOL_BODY(T)                                                                                               \
    do {                                                                                                          \
        const T *X = x->data;                                                                                     \
        T *Y = y->data;                                                                                           \
        for (int64_t nc = lo; nc < hi; nc++) {                                                                    \
            const T *xp = X + nc * isz;                                                                           \
            T *yp = Y + nc * osz;                                                                                 \
            for (int64_t o0 = 0; o0 < o[0]; o0++) {                                                               \
                int64_t a0, b0;                                                                                   \
                taps_in(o0, p->stride[0], p->pad_b[0], p->dil[0], k[0], in[0], &a0, &b0);                         \
                for (int64_t o1 = 0; o1 < o[1]; o1++) {                                                           \
                    int64_t a1, b1;                                                                               \
                    taps_in(o1, p->stride[1], p->pad_b[1], p->dil[1], k[1], in[1], &a1, &b1);                     \
                    for (int64_t o2 = 0; o2 < o[2]; o2++) {                                                       \
                        int64_t a2 = lo2[o2], b2 = hi2[o2], i2 = o2 * p->stride[2] - p->pad_b[2];                 \
                        T best = 0;                                                                               \
                        int any = 0;                                                                              \
                        for (int64_t k0 = a0; k0 < b0; k0++)                                                      \
                            for (int64_t k1 = a1; k1 < b1; k1++) {                                                \
                                const T *r = xp + ((o0 * p->stride[0] - p->pad_b[0] + k0 * p->dil[0]) * in[1] +   \
                                                   o1 * p->stride[1] - p->pad_b[1] + k1 * p->dil[1]) *            \
                                                      in[2] +                                                     \
                                             i2;                                                                  \
                                for (int64_t k2 = a2; k2 < b2; k2++) {                                            \
                                    T v = r[k2 * p->dil[2]];                                                      \
                                    if (!any || v > best) best = v;                                               \
                                    any = 1;                                                                      \
                                }                                                                                 \
                            }                                                                                     \
                        yp[(o0 * o[1] + o1) * o[2] + o2] = best;                                                  \
                    }                                                                                             \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
    } while (0)

typedef struct maxpool_job {
    const npk_onnx_conv_params *p;
    const npk_tensor *x;
    npk_tensor *y;
    const int64_t *lo2, *hi2;
} maxpool_job;

/* Float 2-D windows that all lie inside the input (no padding, no dilation: mobile-v2's 2 x 2
 * at stride 2), column stride 1 or 2: eight outputs of a row at once on AVX2, each window's
 * values taken in the golden's order and kept by max(v, best), which is the golden's
 * "v > best ? v : best" (a NaN best stays, a NaN v is skipped, equal zeros keep the first).
 */
static int maxpool_inside(const npk_onnx_conv_params *p) {
    const int64_t *in = p->in, *k = p->k, *o = p->out;
    return in[0] == 1 && k[0] == 1 && o[0] == 1 && p->dil[1] == 1 && p->dil[2] == 1 && !p->pad_b[1] &&
           !p->pad_b[2] && (o[1] - 1) * p->stride[1] + k[1] <= in[1] && (o[2] - 1) * p->stride[2] + k[2] <= in[2] &&
           (p->stride[2] == 1 || p->stride[2] == 2);
}

#ifdef NPK_ISA_X86
#include <immintrin.h>
NPK_TARGET_AVX2 static void maxpool_inside_avx2(const npk_onnx_conv_params *p, const float *X, float *Y, int64_t lo,
                                                int64_t hi) {
    const int64_t *in = p->in, *k = p->k, *o = p->out;
    int64_t W = in[2], S1 = p->stride[1], S2 = p->stride[2], OW = o[2];
    /* the vectors read S2 * 8 + k[2] - 1 values at most from a window's first column */
    int64_t ov = W >= 8 * S2 + k[2] ? (W - 8 * S2 - k[2] + 1) / S2 + 1 : 0; /* vector starts o2 < ov */
    for (int64_t nc = lo; nc < hi; nc++)
        for (int64_t o1 = 0; o1 < o[1]; o1++) {
            const float *xr = X + nc * in[1] * W + o1 * S1 * W;
            float *yr = Y + (nc * o[1] + o1) * OW;
            int64_t o2 = 0;
            for (; o2 + 8 <= OW && o2 < ov; o2 += 8) {
                __m256 best = _mm256_setzero_ps();
                for (int64_t k1 = 0; k1 < k[1]; k1++)
                    for (int64_t k2 = 0; k2 < k[2]; k2++) {
                        const float *s = xr + k1 * W + o2 * S2 + k2;
                        __m256 v;
                        if (S2 == 1) v = _mm256_loadu_ps(s);
                        else { /* the even elements of s[0 .. 16) */
                            __m256 e = _mm256_shuffle_ps(_mm256_loadu_ps(s), _mm256_loadu_ps(s + 8), 0x88);
                            v = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8));
                        }
                        best = k1 == 0 && k2 == 0 ? v : _mm256_max_ps(v, best);
                    }
                _mm256_storeu_ps(yr + o2, best);
            }
            for (; o2 < OW; o2++) {
                const float *s = xr + o2 * S2;
                float best = s[0];
                for (int64_t k1 = 0; k1 < k[1]; k1++)
                    for (int64_t k2 = 0; k2 < k[2]; k2++) {
                        float v = s[k1 * W + k2];
                        if (v > best) best = v;
                    }
                yr[o2] = best;
            }
        }
}
#endif

/* The (sample, channel) planes [lo, hi). */
static void maxpool_planes(void *ctx, int64_t lo, int64_t hi) {
    const maxpool_job *j = ctx;
    const npk_onnx_conv_params *p = j->p;
    const npk_tensor *x = j->x;
    npk_tensor *y = j->y;
    const int64_t *in = p->in, *k = p->k, *o = p->out, *lo2 = j->lo2, *hi2 = j->hi2;
    int64_t isz = in[0] * in[1] * in[2], osz = o[0] * o[1] * o[2];
#ifdef NPK_ISA_X86
    if (x->dtype == NPK_DT_FLOAT && maxpool_inside(p) && npk_isa_active() >= NPK_ISA_AVX2) {
        maxpool_inside_avx2(p, x->data, y->data, lo, hi);
        return;
    }
#endif
    if (x->dtype == NPK_DT_FLOAT) MAXPOOL_BODY(float);
    else if (x->dtype == NPK_DT_INT8) MAXPOOL_BODY(int8_t);
    else MAXPOOL_BODY(uint8_t);
}

/* Threads: (sample, channel) planes in ranges of ~16K output elements. */
int npk_fast_maxpool(const npk_onnx_conv_params *p, const npk_tensor *x, npk_tensor *y) {
    if (y->dtype != x->dtype || (x->dtype != NPK_DT_FLOAT && x->dtype != NPK_DT_INT8 && x->dtype != NPK_DT_UINT8))
        return 1;
    const int64_t *in = p->in, *k = p->k, *o = p->out;
    int64_t osz = o[0] * o[1] * o[2];
    int64_t *lo2 = malloc(sizeof(int64_t) * (size_t)(2 * o[2] + 1)), *hi2 = lo2 ? lo2 + o[2] : NULL;
    if (!lo2) return -NPK_ENOMEM;
    for (int64_t o2 = 0; o2 < o[2]; o2++) taps_in(o2, p->stride[2], p->pad_b[2], p->dil[2], k[2], in[2], &lo2[o2], &hi2[o2]);
    maxpool_job j = {p, x, y, lo2, hi2};
    npk_parallel_range(p->n * p->c, (1 << 14) / (osz > 0 ? osz : 1) + 1, maxpool_planes, &j);
    free(lo2);
    return 0;
}

/* ---- Resize, nearest ---------------------------------------------------------------------------
 * The source index of every output coordinate per dimension (ONNX's
 * coordinate transformations and nearest modes, in double as the golden),
 * then one gather per output row; a row whose source row is the previous
 * row's is copied from it. */

static int64_t nearest_src(const npk_onnx_resize *r, int d, int64_t len_in, int64_t len_out, int64_t o) {
    double s = r->scales[d], xo = (double)o, xi;
    if (r->coord == NPK_ONNX_RS_ASYMMETRIC) xi = xo / s;
    else if (r->coord == NPK_ONNX_RS_TF_HALF_PIXEL_FOR_NN) xi = (xo + 0.5) / s;
    else if (r->coord == NPK_ONNX_RS_PYTORCH_HALF_PIXEL) xi = len_out > 1 ? (xo + 0.5) / s - 0.5 : -0.5;
    else if (r->coord == NPK_ONNX_RS_ALIGN_CORNERS) {
        double wo = s * (double)len_in; /* ONNX's output width in float */
        xi = wo == 1 ? 0 : xo * (double)(len_in - 1) / (wo - 1);
    } else xi = (xo + 0.5) / s - 0.5; /* half_pixel */
    double f = floor(xi), frac = xi - f;
    int up = r->nearest == NPK_ONNX_RS_FLOOR ? 0
           : r->nearest == NPK_ONNX_RS_CEIL ? frac > 0
           : r->nearest == NPK_ONNX_RS_ROUND_PREFER_CEIL ? frac >= 0.5
                                                        : frac > 0.5;
    int64_t i = (int64_t)f + up;
    return i < 0 ? 0 : i >= len_in ? len_in - 1 : i;
}

typedef struct resize_job {
    const npk_tensor *x, *y;
    int64_t *const *map;
    size_t es;
} resize_job;

/* Output rows [lo, hi): each row gathered from its source row, or copied from the row before
 * when that one read the same source row (within the range: the first row is gathered). */
static void resize_rows(void *ctx, int64_t lo, int64_t hi) {
    const resize_job *j = ctx;
    const npk_tensor *x = j->x, *y = j->y;
    int R = x->rank;
    size_t es = j->es;
    int64_t W = y->dims[R - 1], idx[NPK_MAX_RANK] = {0}, prev = -1;
    int64_t q = lo; /* row lo's index */
    for (int d = R - 2; d >= 0; d--) idx[d] = q % y->dims[d], q /= y->dims[d];
    const uint8_t *X = x->data;
    uint8_t *Y = y->data;
    const int64_t *mw = j->map[R - 1];
    for (int64_t row = lo; row < hi; row++) {
        int64_t off = 0; /* source row offset in elements */
        for (int d = 0; d < R - 1; d++) off = off * x->dims[d] + j->map[d][idx[d]];
        off *= x->dims[R - 1];
        uint8_t *yr = Y + (size_t)(row * W) * es;
        if (off == prev) {
            memcpy(yr, yr - (size_t)W * es, (size_t)W * es);
        } else if (es == 4) {
            const float *xr = (const float *)X + off;
            float *yf = (float *)yr;
            for (int64_t k = 0; k < W; k++) yf[k] = xr[mw[k]];
        } else {
            const uint8_t *xr = X + off;
            for (int64_t k = 0; k < W; k++) yr[k] = xr[mw[k]];
        }
        prev = off;
        for (int d = R - 2; d >= 0; d--) { /* next row */
            if (++idx[d] < y->dims[d]) break;
            idx[d] = 0;
        }
    }
}

/* Threads: output rows in ranges of ~16K elements (a copy: any split gives the same bytes). */
int npk_fast_resize(const npk_onnx_resize *r, const npk_tensor *x, npk_tensor *y) {
    size_t es = x->dtype == NPK_DT_FLOAT ? 4 : x->dtype == NPK_DT_INT8 || x->dtype == NPK_DT_UINT8 ? 1 : 0;
    if (!es || y->dtype != x->dtype || r->mode != NPK_ONNX_RS_NEAREST || r->coord == NPK_ONNX_RS_TF_CROP_AND_RESIZE ||
        x->rank < 1)
        return 1;
    int R = x->rank;
    int64_t ny = npk_tensor_numel(y), tot = 0;
    if (!ny) return 0;
    for (int d = 0; d < R; d++) tot += y->dims[d];
    int64_t *src = malloc(sizeof(int64_t) * (size_t)tot), *map[NPK_MAX_RANK];
    if (!src) return -NPK_ENOMEM;
    for (int d = 0, at = 0; d < R; at += (int)y->dims[d], d++) {
        map[d] = src + at;
        for (int64_t o = 0; o < y->dims[d]; o++) map[d][o] = nearest_src(r, d, x->dims[d], y->dims[d], o);
    }
    int64_t W = y->dims[R - 1];
    resize_job j = {x, y, map, es};
    npk_parallel_range(ny / W, (1 << 14) / W + 1, resize_rows, &j);
    free(src);
    return 0;
}
