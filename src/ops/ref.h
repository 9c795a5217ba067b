// SPDX-License-Identifier: MIT
/*
 * CPU reference implementations of the int8 operators of the v0 NPU
 * (Gemmini numerics, v0-gemmini-notes.md). Plain loops written for clarity,
 * independent of the device model's fast kernels: tests compare the model
 * against these, and the v0 fallback handler executes with them.
 *
 * Tensors are dense host arrays; every pointer comment gives the shape.
 * Matrices take a row stride in elements so callers can pass sub-views.
 */
#ifndef NPUKIT_OPS_REF_H
#define NPUKIT_OPS_REF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Saturate an int32 to int8 (scale 1.0: round_half_even(float(x) * 1.0)
 * then clamp to [-128, 127] equals a plain clamp). */
int8_t npk_ref_sat8(int32_t x);
/* Gemmini's output scaling for a general scale: round_half_to_even(float32(x)
 * * scale), clamped to int8, then ReLU when relu != 0. */
int8_t npk_ref_scale8(int32_t x, float scale, int relu);

/* C[i][j] = sum_k A[i][k] * B[k][j] as int32 with wrap-around (Gemmini's
 * int32 accumulator), then max(0, .) if relu.
 *   A: [M][lda] (first K used), B: [K][ldb] (first N used), C: [M][ldc].
 * a_unsigned: A's bytes are uint8 (0..255) instead of int8. */
void npk_ref_matmul_s8s32(uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda, const int8_t *B,
                          size_t ldb, int32_t *C, size_t ldc, int relu, int a_unsigned);

/* NHWC convolution of one image, HWIO weights, symmetric zero padding,
 * stride and dilation; int32 accumulators (wrapping).
 *   in:  [H][W][Cin] with row stride in_row (elements between rows h and h+1)
 *   wt:  [KH][KW][Cin][Cout] seen as (KH*KW*Cin) rows of wt_row elements (first Cout used)
 *   out: [OH][OW][Cout] with row stride out_row (elements)
 * OH = (H + 2*pad_h - dil*(KH-1) - 1)/stride_h + 1 (caller checks >= 1). */
typedef struct npk_ref_conv {
    uint32_t h, w, cin, cout, kh, kw, stride_h, stride_w, pad_h, pad_w, dil;
} npk_ref_conv;
/* Output size (0 when the output would be empty or a parameter is 0). */
void npk_ref_conv_out(const npk_ref_conv *c, uint32_t *oh, uint32_t *ow);
void npk_ref_conv2d_s32(const npk_ref_conv *c, const int8_t *in, size_t in_row, const int8_t *wt, size_t wt_row,
                        int32_t *out, size_t out_row, int in_unsigned);
/* The same with int8 output: sat8, then ReLU if relu. */
void npk_ref_conv2d_s8(const npk_ref_conv *c, const int8_t *in, size_t in_row, const int8_t *wt, size_t wt_row,
                       int8_t *out, size_t out_row, int relu, int in_unsigned);

/* ReLU of rows x cols int8 (in and out may alias).
 *   in: [rows][in_row], out: [rows][out_row] */
void npk_ref_relu_s8(uint32_t rows, uint32_t cols, const int8_t *in, size_t in_row, int8_t *out, size_t out_row,
                     int in_unsigned);

/* NHWC max pool of one image. Positions of the window outside the input
 * (padding) count as 0 (Gemmini's pooling rule); ReLU after if relu.
 *   in: [H][W][C] rows of in_row elements, out: [OH][OW][C] rows of out_row.
 * OH = (H + 2*pad - win_h)/stride + 1. With in_unsigned the input bytes are
 * uint8; the output keeps the bytes of the maximum. */
typedef struct npk_ref_pool {
    uint32_t h, w, c, win_h, win_w, stride, pad;
} npk_ref_pool;
void npk_ref_pool_out(const npk_ref_pool *p, uint32_t *oh, uint32_t *ow);
void npk_ref_maxpool_s8(const npk_ref_pool *p, const int8_t *in, size_t in_row, int8_t *out, size_t out_row,
                        int relu, int in_unsigned);

#ifdef __cplusplus
}
#endif
#endif
