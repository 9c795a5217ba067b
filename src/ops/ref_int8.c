// SPDX-License-Identifier: MIT
/* CPU reference int8 operators (Gemmini numerics). Deliberately simple loops. */
#include "ops/ref.h"

#include <math.h>
#include <stdint.h>

int8_t npk_ref_sat8(int32_t x) { return (int8_t)(x > 127 ? 127 : x < -128 ? -128 : x); }

int8_t npk_ref_scale8(int32_t x, float scale, int relu) {
    float f = (float)x * scale;
    float r = nearbyintf(f); /* default rounding mode: round half to even */
    int32_t v;
    if (r >= 127.0f) v = 127;
    else if (r <= -128.0f) v = -128;
    else v = (int32_t)r;
    if (relu && v < 0) v = 0;
    return (int8_t)v;
}

static int32_t elem(const int8_t *p, int is_unsigned) { return is_unsigned ? (int32_t)(uint8_t)*p : (int32_t)*p; }

void npk_ref_matmul_s8s32(uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda, const int8_t *B,
                          size_t ldb, int32_t *C, size_t ldc, int relu, int a_unsigned) {
    for (uint32_t i = 0; i < M; i++)
        for (uint32_t j = 0; j < N; j++) {
            uint32_t acc = 0; /* unsigned: int32 wrap-around without UB */
            for (uint32_t k = 0; k < K; k++)
                acc += (uint32_t)(elem(&A[i * lda + k], a_unsigned) * (int32_t)B[k * ldb + j]);
            int32_t v = (int32_t)acc;
            if (relu && v < 0) v = 0;
            C[i * ldc + j] = v;
        }
}

void npk_ref_conv_out(const npk_ref_conv *c, uint32_t *oh, uint32_t *ow) {
    *oh = *ow = 0;
    if (!c->h || !c->w || !c->kh || !c->kw || !c->stride_h || !c->stride_w || !c->dil) return;
    int64_t eh = (int64_t)c->dil * (c->kh - 1) + 1, ew = (int64_t)c->dil * (c->kw - 1) + 1;
    int64_t ph = (int64_t)c->h + 2 * (int64_t)c->pad_h, pw = (int64_t)c->w + 2 * (int64_t)c->pad_w;
    if (ph < eh || pw < ew) return;
    *oh = (uint32_t)((ph - eh) / c->stride_h + 1);
    *ow = (uint32_t)((pw - ew) / c->stride_w + 1);
}

/* One output element (y, x, co) of the convolution, int32 with wrap-around. */
static int32_t conv_at(const npk_ref_conv *c, const int8_t *in, size_t in_row, const int8_t *wt, size_t wt_row,
                       uint32_t y, uint32_t x, uint32_t co, int in_unsigned) {
    uint32_t acc = 0;
    for (uint32_t ky = 0; ky < c->kh; ky++) {
        int64_t iy = (int64_t)y * c->stride_h - c->pad_h + (int64_t)ky * c->dil;
        if (iy < 0 || iy >= c->h) continue; /* zero padding */
        for (uint32_t kx = 0; kx < c->kw; kx++) {
            int64_t ix = (int64_t)x * c->stride_w - c->pad_w + (int64_t)kx * c->dil;
            if (ix < 0 || ix >= c->w) continue;
            const int8_t *px = in + (size_t)iy * in_row + (size_t)ix * c->cin;
            size_t wrow = ((size_t)ky * c->kw + kx) * c->cin;
            for (uint32_t ci = 0; ci < c->cin; ci++)
                acc += (uint32_t)(elem(&px[ci], in_unsigned) * (int32_t)wt[(wrow + ci) * wt_row + co]);
        }
    }
    return (int32_t)acc;
}

void npk_ref_conv2d_s32(const npk_ref_conv *c, const int8_t *in, size_t in_row, const int8_t *wt, size_t wt_row,
                        int32_t *out, size_t out_row, int in_unsigned) {
    uint32_t oh, ow;
    npk_ref_conv_out(c, &oh, &ow);
    for (uint32_t y = 0; y < oh; y++)
        for (uint32_t x = 0; x < ow; x++)
            for (uint32_t co = 0; co < c->cout; co++)
                out[(size_t)y * out_row + (size_t)x * c->cout + co] =
                    conv_at(c, in, in_row, wt, wt_row, y, x, co, in_unsigned);
}

void npk_ref_conv2d_s8(const npk_ref_conv *c, const int8_t *in, size_t in_row, const int8_t *wt, size_t wt_row,
                       int8_t *out, size_t out_row, int relu, int in_unsigned) {
    uint32_t oh, ow;
    npk_ref_conv_out(c, &oh, &ow);
    for (uint32_t y = 0; y < oh; y++)
        for (uint32_t x = 0; x < ow; x++)
            for (uint32_t co = 0; co < c->cout; co++) {
                int8_t v = npk_ref_sat8(conv_at(c, in, in_row, wt, wt_row, y, x, co, in_unsigned));
                if (relu && v < 0) v = 0;
                out[(size_t)y * out_row + (size_t)x * c->cout + co] = v;
            }
}

void npk_ref_relu_s8(uint32_t rows, uint32_t cols, const int8_t *in, size_t in_row, int8_t *out, size_t out_row,
                     int in_unsigned) {
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t j = 0; j < cols; j++) {
            int8_t v = in[r * in_row + j];
            out[r * out_row + j] = (!in_unsigned && v < 0) ? 0 : v;
        }
}

void npk_ref_pool_out(const npk_ref_pool *p, uint32_t *oh, uint32_t *ow) {
    *oh = *ow = 0;
    if (!p->h || !p->w || !p->win_h || !p->win_w || !p->stride) return;
    int64_t ph = (int64_t)p->h + 2 * (int64_t)p->pad, pw = (int64_t)p->w + 2 * (int64_t)p->pad;
    if (ph < p->win_h || pw < p->win_w) return;
    *oh = (uint32_t)((ph - p->win_h) / p->stride + 1);
    *ow = (uint32_t)((pw - p->win_w) / p->stride + 1);
}

void npk_ref_maxpool_s8(const npk_ref_pool *p, const int8_t *in, size_t in_row, int8_t *out, size_t out_row,
                        int relu, int in_unsigned) {
    uint32_t oh, ow;
    npk_ref_pool_out(p, &oh, &ow);
    for (uint32_t y = 0; y < oh; y++)
        for (uint32_t x = 0; x < ow; x++)
            for (uint32_t ch = 0; ch < p->c; ch++) {
                int32_t best = INT32_MIN;
                for (uint32_t wy = 0; wy < p->win_h; wy++)
                    for (uint32_t wx = 0; wx < p->win_w; wx++) {
                        int64_t iy = (int64_t)y * p->stride - p->pad + wy;
                        int64_t ix = (int64_t)x * p->stride - p->pad + wx;
                        int32_t v = 0; /* padding counts as 0 */
                        if (iy >= 0 && iy < p->h && ix >= 0 && ix < p->w)
                            v = elem(&in[(size_t)iy * in_row + (size_t)ix * p->c + ch], in_unsigned);
                        if (v > best) best = v;
                    }
                if (relu && best < 0) best = 0;
                out[(size_t)y * out_row + (size_t)x * p->c + ch] = (int8_t)(uint8_t)best;
            }
}
