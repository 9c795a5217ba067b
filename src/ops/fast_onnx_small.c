/* Fast CPU kernels for what small models spend their time in (issue 15
 * point 2: hello-deepa-qdq-s8, silero-vad-v5): the GEMV-shaped QGemm of a
 * quantized fully connected layer. Built at -O3 like fast_onnx.c; the naive
 * golden kernels stay the reference (tests/test_onnx_fast_small.c). */
#include "ops/fast_onnx.h"

#include <stdlib.h>
#include <string.h>

/* ---- QGemm --------------------------------------------------------------------------------- */

/* Products of one K-chunk (at most QK elements, so that no int32 sum of
 * 255 * 255 products overflows). */
enum { QK = 32768 };

/* s[j] = sum_k a[k] * b[j][k] (B^T: rows of K contiguous), j < N. */
#define DOT_ROWS(NAME, TB)                                                                                            \
    NPK_CLONES static void NAME(const int16_t *a, const TB *b, int64_t ldb, int64_t K, int64_t N, int64_t *s) {       \
        for (int64_t j = 0; j < N; j++) {                                                                             \
            const TB *r = b + j * ldb;                                                                                \
            int32_t acc = 0;                                                                                          \
            for (int64_t k = 0; k < K; k++) acc += (int32_t)a[k] * (int32_t)r[k];                                     \
            s[j] += acc;                                                                                              \
        }                                                                                                             \
    }
DOT_ROWS(dot_rows_s8, int8_t)
DOT_ROWS(dot_rows_u8, uint8_t)

/* s[j] += sum_k a[k] * b[k][j] (B: rows of N contiguous), through an int32 row. */
#define AXPY_ROWS(NAME, TB)                                                                                           \
    NPK_CLONES static void NAME(const int16_t *a, const TB *b, int64_t ldb, int64_t K, int64_t N, int32_t *t) {       \
        memset(t, 0, sizeof(int32_t) * (size_t)N);                                                                    \
        for (int64_t k = 0; k < K; k++) {                                                                             \
            const TB *r = b + k * ldb;                                                                                \
            int32_t ak = a[k];                                                                                        \
            for (int64_t j = 0; j < N; j++) t[j] += ak * (int32_t)r[j];                                               \
        }                                                                                                             \
    }
AXPY_ROWS(axpy_rows_s8, int8_t)
AXPY_ROWS(axpy_rows_u8, uint8_t)

static int q8(int dt) { return dt == NPK_DT_INT8 || dt == NPK_DT_UINT8; }

static int64_t q8_get(const npk_tensor *t, int64_t i) {
    return t->dtype == NPK_DT_INT8 ? ((const int8_t *)t->data)[i] : ((const uint8_t *)t->data)[i];
}

int npk_fast_qgemm(const npk_tensor *a, const npk_tensor *b, int trans_b, int64_t a_zp, const npk_tensor *b_zp,
                   const npk_tensor *bias, const float *mult, int64_t n_mult, int64_t y_zp, npk_tensor *y) {
    if (a->rank != 2 || b->rank != 2 || !q8(a->dtype) || !q8(b->dtype) || !q8(y->dtype) ||
        (b_zp && !q8(b_zp->dtype)) || (bias && bias->dtype != NPK_DT_INT32))
        return 1;
    int64_t M = a->dims[0], K = a->dims[1], N = trans_b ? b->dims[0] : b->dims[1];
    if ((trans_b ? b->dims[1] : b->dims[0]) != K || y->rank != 2 || y->dims[0] != M || y->dims[1] != N) return 1;
    int64_t nbz = b_zp ? npk_tensor_numel(b_zp) : 0, nbias = bias ? npk_tensor_numel(bias) : 0;
    int16_t *a16 = malloc(sizeof(int16_t) * (size_t)(K ? K : 1));
    int64_t *s = malloc(sizeof(int64_t) * (size_t)(N ? N : 1));
    int32_t *t = malloc(sizeof(int32_t) * (size_t)(N ? N : 1));
    if (!a16 || !s || !t) {
        free(a16), free(s), free(t);
        return -NPK_ENOMEM;
    }
    int sb = b->dtype == NPK_DT_INT8;
    for (int64_t m = 0; m < M; m++) {
        int64_t asum = 0;
        for (int64_t k = 0; k < K; k++) asum += a16[k] = (int16_t)(q8_get(a, m * K + k) - a_zp);
        memset(s, 0, sizeof(int64_t) * (size_t)N);
        for (int64_t k0 = 0; k0 < K; k0 += QK) {
            int64_t kn = K - k0 < QK ? K - k0 : QK;
            if (trans_b) {
                if (sb) dot_rows_s8(a16 + k0, (const int8_t *)b->data + k0, K, kn, N, s);
                else dot_rows_u8(a16 + k0, (const uint8_t *)b->data + k0, K, kn, N, s);
            } else {
                if (sb) axpy_rows_s8(a16 + k0, (const int8_t *)b->data + k0 * N, N, kn, N, t);
                else axpy_rows_u8(a16 + k0, (const uint8_t *)b->data + k0 * N, N, kn, N, t);
                for (int64_t j = 0; j < N; j++) s[j] += t[j];
            }
        }
        for (int64_t j = 0; j < N; j++) {
            /* sum (a - az)(b - bz) = sum (a - az) b - bz sum (a - az), exactly in int64 */
            int64_t bz = nbz ? q8_get(b_zp, nbz > 1 ? j : 0) : 0;
            int64_t acc = s[j] - bz * asum + (nbias ? ((const int32_t *)bias->data)[nbias > 1 ? j : 0] : 0);
            int64_t q = npk_ref_onnx_requant((int64_t)(int32_t)acc, mult[n_mult > 1 ? j : 0], y_zp, y->dtype);
            if (y->dtype == NPK_DT_INT8) ((int8_t *)y->data)[m * N + j] = (int8_t)q;
            else ((uint8_t *)y->data)[m * N + j] = (uint8_t)q;
        }
    }
    free(a16), free(s), free(t);
    return 0;
}
