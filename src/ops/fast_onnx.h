// SPDX-License-Identifier: MIT
/*
 * Fast CPU kernels for the ONNX operators that dominate real models (issue 15
 * point 2): float32 and 8-bit integer Conv, MatMul and Gemm, and the
 * quantize / dequantize / requantize element loops, on typed pointers (no
 * per-element type dispatch) with cache-blocked GEMMs that read B by rows.
 *
 * The naive kernels of ref_onnx.h stay the independent reference (the
 * golden): tests/test_onnx_fast.c compares every kernel here with them.
 *   - integer kernels (conv/matmul integer, requantize, quantize,
 *     dequantize) equal the golden bit for bit;
 *   - float kernels accumulate in float32 (the golden in double) and agree
 *     within ONNX's backend-test tolerance, |fast - golden| <= 1e-6 + 1e-3 *
 *     |golden| (docs/onnx.md, "Fast CPU kernels").
 *
 * Each function returns 0 when it computed y, 1 when it does not handle the
 * case (another dtype, an int32 accumulator that could overflow, ...: the
 * caller runs the golden), or a negative npk_status (-NPK_ENOMEM).
 */
#ifndef NPUKIT_OPS_FAST_ONNX_H
#define NPUKIT_OPS_FAST_ONNX_H

#include "ops/ref_onnx.h"

/* Hot loops are compiled for the avx512, avx2 and c instruction-set levels and
 * picked per call from the level of npukit/cpu.h (NPK_ISA_CLONES; npk_isa_force
 * and NPUKIT_ISA cap it). */
#include "npukit/cpu.h"

/* Conv, float32 x, w, b (or NULL), y. */
int npk_fast_conv(const npk_onnx_conv_params *p, const npk_tensor *x, const npk_tensor *w, const npk_tensor *b,
                  npk_tensor *y);
/* Depthwise 2-D convolution (src/ops/fast_dw.c): npk_fast_dw_ok tells whether
 * p is a geometry it takes (one input channel per group, 1-D or 2-D, no
 * dilation, column stride 1 or 2, kernel at most 7 x 7). npk_fast_dw_f32:
 * float32 y [N, M, out] from x, w [M, taps], bias b [M] or NULL.
 * npk_fast_dw_i32: int32 sums of (x - zx) (w - w_zp) from an 8-bit x and
 * int16 weights minus their zero points wq [M, taps], no bias. 0 or -NPK_ENOMEM. */
int npk_fast_dw_ok(const npk_onnx_conv_params *p);
int npk_fast_dw_f32(const npk_onnx_conv_params *p, const float *x, const float *w, const float *b, float *y);
int npk_fast_dw_i32(const npk_onnx_conv_params *p, const npk_tensor *x, int32_t zx, const int16_t *wq, int32_t *y);
/* Dense 3 x 3 convolutions at stride 1 by Winograd F(2 x 2, 3 x 3) (src/ops/fast_wino.c):
 * npk_fast_wino_ok tells whether it takes the geometry (2-D, no dilation, 16+ input and
 * 8+ output channels per group, 16+ output columns); float tolerance. */
int npk_fast_wino_ok(const npk_onnx_conv_params *p);
int npk_fast_wino_f32(const npk_onnx_conv_params *p, const float *x, const float *w, const float *b, float *y);
/* ConvInteger / the accumulator of QLinearConv: 8-bit x, w, zero points as
 * npk_ref_onnx_conv_integer, int32 bias b (or NULL), int32 y. */
int npk_fast_conv_integer(const npk_onnx_conv_params *p, const npk_tensor *x, const npk_tensor *w,
                          const npk_tensor *x_zp, const npk_tensor *w_zp, const npk_tensor *b, npk_tensor *y);
/* MatMul, float32 (numpy broadcasting as npk_ref_onnx_matmul). */
int npk_fast_matmul(const npk_tensor *a, const npk_tensor *b, npk_tensor *y);
/* MatMulInteger: 8-bit a, b, zero points as npk_ref_onnx_matmul_integer, int32 y. */
int npk_fast_matmul_integer(const npk_tensor *a, const npk_tensor *b, const npk_tensor *a_zp, const npk_tensor *b_zp,
                            npk_tensor *y);
/* Gemm, float32 (as npk_ref_onnx_gemm). */
int npk_fast_gemm(const npk_tensor *a, const npk_tensor *b, const npk_tensor *c, double alpha, double beta,
                  int trans_a, int trans_b, npk_tensor *y);
/* npk_ref_onnx_requant_tensor for an int32 acc and an int8/uint8 y. */
int npk_fast_requant_tensor(const npk_tensor *acc, const float *mult, int64_t n_mult, int axis, int64_t y_zp,
                            npk_tensor *y);
/* QuantizeLinear float32 -> int8/uint8 and DequantizeLinear int8/uint8/int32 -> float32
 * (as npk_ref_onnx_quantize / npk_ref_onnx_dequantize). */
int npk_fast_quantize(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *zp, int axis, npk_tensor *y);
int npk_fast_dequantize(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *zp, int axis, npk_tensor *y);

/* Elementwise float32, bit for bit the golden's float32 arithmetic:
 * Add/Sub/Mul/Div/PRelu with numpy broadcasting (not Pow), the unary
 * functions of npk_ref_onnx_unary, HardSigmoid (y = max(0, min(1, alpha x +
 * beta))) / HardSwish (swish = 1), and inference BatchNormalization. */
int npk_fast_binary(npk_onnx_binop op, const npk_tensor *a, const npk_tensor *b, npk_tensor *y);
int npk_fast_unary(npk_onnx_unop op, const npk_tensor *x, npk_tensor *y, double alpha, double lo, double hi);
int npk_fast_hard(int swish, const npk_tensor *x, npk_tensor *y, double alpha, double beta);
/* HardSwish as ONNX exporters write it, y[i] = x[i] * (Clip(x[i] + a, lo, hi) / d), or with
 * div_last (x[i] * Clip(x[i] + a, lo, hi)) / d: Add, Clip, Div and Mul with scalar constants in
 * one pass, each operation the node's own (float add, the Clip compare (in float: float bounds decide
 * as the Clip kernel's double compares), float divide
 * and multiply in the nodes' order: their values bit for bit). y may be x (element i is read
 * before it is written). 0, or 1 (nothing done) when lo or hi is not a float value. */
int npk_fast_hswish_chain(const float *x, float *y, int64_t n, float a, double lo, double hi, float d, int div_last);
/* The same chain followed by the element-wise tail exporters write after it (ppocr-v4-det's
 * learnable affine y * tm + ta): with tail bit 1 each result times tm, then with bit 2 plus ta,
 * each the node's own float operation (the same bits as the Mul and Add nodes). */
int npk_fast_hswish_chain_tail(const float *x, float *y, int64_t n, float a, double lo, double hi, float d,
                               int div_last, int tail, float tm, float ta);
int npk_fast_batchnorm(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *bias, const npk_tensor *mean,
                       const npk_tensor *var, double eps, npk_tensor *y);
/* ConvTranspose float32 (as npk_ref_onnx_conv_transpose; float sums) and
 * GlobalAverage/MaxPool float32 (bit for bit: the golden's double sums). */
int npk_fast_conv_transpose(const npk_onnx_conv_params *p, const npk_tensor *x, const npk_tensor *w,
                            const npk_tensor *b, npk_tensor *y);
int npk_fast_global_pool(const npk_tensor *x, npk_tensor *y, int is_max);

/* ---- fast_onnx_small.c: the kernels small models spend their time in ---- */

/* QGemm (DequantizeLinear -> Gemm -> QuantizeLinear, transA = 0, alpha = beta = 1):
 * y[m][j] = requant((int32)(bias[j] + sum_k (a[m][k] - a_zp)(b'[k][j] - b_zp[j])), mult[j or 0],
 * y_zp) with b' = B or B^T (trans_b), 8-bit a, b, y, int32 bias (or NULL), b_zp NULL, one
 * value or one per column; bit for bit the golden (npk_ref_onnx_requant). */
int npk_fast_qgemm(const npk_tensor *a, const npk_tensor *b, int trans_b, int64_t a_zp, const npk_tensor *b_zp,
                   const npk_tensor *bias, const float *mult, int64_t n_mult, int64_t y_zp, npk_tensor *y);
/* Slice with resolved starts and steps per dimension (as npk_ref_onnx_slice): rows of the
 * last dimension copied whole when its step is 1; any dtype of 1, 2, 4 or 8 bytes. */
int npk_fast_slice(const npk_tensor *x, const int64_t *start, const int64_t *step, npk_tensor *y);
/* QuantizeLinear to int8 (s8) or uint8 with the scalar scale s and zero point z, then
 * DequantizeLinear of that value with the scalar scale ds and zero point dz, n floats x -> y
 * (y may be x), without storing the 8-bit value: the two fast kernels' operations, bit for bit. */
void npk_fast_quant_dequant(const float *x, float *y, int64_t n, int s8, float s, float z, float ds, int32_t dz);
/* Pad (as npk_ref_onnx_pad: every mode, any dtype of 1 to 8 bytes): the last axis's source
 * columns once, then each output row as its padding and one copy of the input row (bit for bit). */
int npk_fast_pad(const npk_tensor *x, const int64_t *pad_b, int mode, const void *cval, npk_tensor *y);
/* LSTM, float32 (as npk_ref_onnx_rnn, every option: directions, layouts, sequence lengths,
 * initial states, peepholes, clip, input_forget, activations): the input projection
 * x W^T + Wb + Rb of every step first, then per step the recurrent h R^T with the gate
 * activations fused; float sums (the golden: double), within the float tolerance. RNN
 * and GRU: 1 (the golden). */
int npk_fast_lstm(const npk_onnx_rnn *p, const npk_tensor *X, const npk_tensor *W, const npk_tensor *R,
                  const npk_tensor *B, const npk_tensor *lens, const npk_tensor *h0, const npk_tensor *c0,
                  const npk_tensor *P, npk_tensor *Y, npk_tensor *Yh, npk_tensor *Yc);

/* MaxPool float32 / int8 / uint8 without the indices output, and Resize in
 * nearest mode (every coordinate transformation but tf_crop_and_resize) on
 * float32 / int8 / uint8: element picks, bit for bit the golden
 * (fast_onnx_nn.c). */
int npk_fast_maxpool(const npk_onnx_conv_params *p, const npk_tensor *x, npk_tensor *y);
int npk_fast_resize(const npk_onnx_resize *r, const npk_tensor *x, npk_tensor *y);

#endif
