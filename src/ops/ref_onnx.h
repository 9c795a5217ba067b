// SPDX-License-Identifier: MIT
/*
 * CPU reference implementations of the ONNX operators npukit supports.
 *
 * These are the semantics every device path is checked against: exact for
 * integer operators (int64 accumulation, float32 requantization with
 * round-half-to-even as ONNX Runtime and Gemmini's ACC_SCALE do), float
 * operators in double precision rounded to float32 at the end (well within
 * ONNX's backend test tolerances rtol 1e-3 / atol 1e-7).
 *
 * The kernels work on npk_tensor (include/npukit/tensor.h) with shapes and
 * parameters already resolved by the graph layer (src/graph/ops.c), which
 * parses the node's attributes, infers the output shapes and allocates the
 * outputs. Kernels never allocate their outputs and never fail on valid
 * parameters; where they can fail they return a negative npk_status.
 */
#ifndef NPUKIT_OPS_REF_ONNX_H
#define NPUKIT_OPS_REF_ONNX_H

#include <stdint.h>

#include "npukit/tensor.h"

/* Batches of a numpy matmul a [..., M, K] x b [..., K, N]: the batch count
 * after broadcasting and, per batch of y, the element offsets of its
 * [M, K] / [K, N] matrices inside a and b (aoff, boff: malloc'ed, free
 * both). Returns -NPK_ENOMEM or 0. */
typedef struct npk_onnx_mm_plan {
    int64_t m, n, k, batch;
    int64_t *aoff, *boff;
} npk_onnx_mm_plan;
int npk_onnx_mm_plan_init(npk_onnx_mm_plan *p, const npk_tensor *a, const npk_tensor *b);

/* ---- element access --------------------------------------------------------
 * Element i of a buffer of the given dtype as a double / int64 (bool reads
 * 0/1). set_f on integer types converts toward zero with saturation;
 * set_i on integer types wraps modulo 2^bits (numpy's astype). */
double npk_ref_onnx_get_f(const void *data, int dtype, int64_t i);
int64_t npk_ref_onnx_get_i(const void *data, int dtype, int64_t i);
void npk_ref_onnx_set_f(void *data, int dtype, int64_t i, double v);
void npk_ref_onnx_set_i(void *data, int dtype, int64_t i, int64_t v);
/* Saturate v to the range of an integer dtype. */
int64_t npk_ref_onnx_saturate(int dtype, int64_t v);
/* Round half to even (IEEE default rounding, as numpy.rint). */
float npk_ref_onnx_rint(float v);

/* Numpy (multidirectional) broadcast of two shapes into out (rank *ro).
 * Returns -NPK_EINVAL when they do not broadcast. */
int npk_ref_onnx_bcast_shape(int ra, const int64_t *da, int rb, const int64_t *db, int *ro, int64_t *dout);

/* ---- elementwise ------------------------------------------------------------ */
typedef enum npk_onnx_binop {
    NPK_ONNX_ADD, NPK_ONNX_SUB, NPK_ONNX_MUL, NPK_ONNX_DIV, NPK_ONNX_POW, NPK_ONNX_PRELU
} npk_onnx_binop;
/* y = a op b with numpy broadcasting (y's shape already the broadcast shape).
 * Integer division truncates toward zero; division by zero gives 0 for integers.
 * POW: y has a's dtype; b may be any numeric dtype. PRELU: y = a < 0 ? a*b : a. */
void npk_ref_onnx_binary(npk_onnx_binop op, const npk_tensor *a, const npk_tensor *b, npk_tensor *y);

typedef enum npk_onnx_unop {
    NPK_ONNX_RELU, NPK_ONNX_LEAKYRELU, NPK_ONNX_SIGMOID, NPK_ONNX_TANH, NPK_ONNX_SQRT,
    NPK_ONNX_EXP, NPK_ONNX_ERF, NPK_ONNX_CLIP
} npk_onnx_unop;
/* y = f(x), same shape and dtype. LEAKYRELU uses alpha; CLIP clamps to
 * [lo, hi] (compared in x's dtype: doubles for floats, int64 for integers). */
void npk_ref_onnx_unary(npk_onnx_unop op, const npk_tensor *x, npk_tensor *y, double alpha, double lo,
                        double hi);

/* ---- reductions and normalisations ----------------------------------------- */
/* Softmax / LogSoftmax over the middle dimension of x viewed as [outer, len, inner]. */
void npk_ref_onnx_softmax(const npk_tensor *x, npk_tensor *y, int64_t outer, int64_t len, int64_t inner,
                          int log_softmax);
/* ReduceMean: reduce[d] = 1 for reduced dims of x; y has x's rank with those
 * dims 1 (the caller reshapes for keepdims = 0). */
void npk_ref_onnx_reduce_mean(const npk_tensor *x, const int *reduce, npk_tensor *y);
/* BatchNormalization over channels (dim 1) of x [N, C, ...]:
 * y = scale * (x - mean) / sqrt(var + eps) + bias.
 *   scale, bias, mean, var: [C] */
void npk_ref_onnx_batchnorm(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *bias,
                            const npk_tensor *mean, const npk_tensor *var, double eps, npk_tensor *y);
/* Training-mode BatchNormalization: normalises with the batch statistics and
 * writes running_mean/var = input * momentum + batch * (1 - momentum)
 * (population variance for the running value, as ONNX's reference). */
void npk_ref_onnx_batchnorm_train(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *bias,
                                  const npk_tensor *mean, const npk_tensor *var, double eps, double momentum,
                                  npk_tensor *y, npk_tensor *run_mean, npk_tensor *run_var);
/* LayerNormalization of x viewed as [outer, inner] (inner = product of dims
 * from axis): y = (x - mean) / sqrt(var + eps) * scale + bias.
 *   scale, bias: broadcast to [inner] (bias may be NULL)
 *   mean, inv_std: [outer] elements or NULL */
void npk_ref_onnx_layernorm(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *bias, int64_t outer,
                            int64_t inner, double eps, npk_tensor *y, npk_tensor *mean, npk_tensor *inv_std);

/* ---- matrix products --------------------------------------------------------- */
/* Numpy matmul with batch broadcasting: a [..., M, K], b [..., K, N] (rank-1
 * operands promoted as numpy does), y [..., M, N] already shaped. Float. */
void npk_ref_onnx_matmul(const npk_tensor *a, const npk_tensor *b, npk_tensor *y);
/* The same for 8-bit integers into int32 y: sum (a - a_zp) * (b - b_zp).
 *   a_zp: NULL, a scalar, or [M] per row (MatMulInteger);
 *   b_zp: NULL, a scalar, or [N] per column. */
void npk_ref_onnx_matmul_integer(const npk_tensor *a, const npk_tensor *b, const npk_tensor *a_zp,
                                 const npk_tensor *b_zp, npk_tensor *y);
/* Gemm: y [M, N] = alpha * op(a) * op(b) + beta * c (c broadcast to [M, N], may be NULL). */
void npk_ref_onnx_gemm(const npk_tensor *a, const npk_tensor *b, const npk_tensor *c, double alpha, double beta,
                       int trans_a, int trans_b, npk_tensor *y);

/* ---- convolution and pooling ---------------------------------------------------
 * Up to 3 spatial dimensions; 1-D and 2-D are 3-D with leading spatial
 * dimensions of size 1 (kernel 1, stride 1, no padding). */
typedef struct npk_onnx_conv_params {
    int nsp;                 /* spatial dims of the node: 1, 2 or 3 */
    int64_t n, c, m, group;  /* batch, input channels, output channels, groups */
    int64_t in[3], k[3], out[3];         /* spatial sizes, leading ones padded with 1 */
    int64_t stride[3], dil[3], pad_b[3], pad_e[3];
    int ceil_mode;           /* pooling: output size rounded up */
    int count_include_pad;   /* AveragePool */
    int storage_order;       /* MaxPool indices: 0 row major, 1 column major */
} npk_onnx_conv_params;

/* Resolve output sizes, pads (auto_pad "NOTSET", "SAME_UPPER", "SAME_LOWER",
 * "VALID") into p->out/pad_b/pad_e. p->in, k, stride, dil, pad_b/e (explicit
 * pads) must be set. Returns -NPK_EINVAL when an output size would be < 1. */
int npk_ref_onnx_conv_resolve(npk_onnx_conv_params *p, const char *auto_pad);

/* Conv (float): x [N, C, in...], w [M, C/group, k...], b [M] or NULL, y [N, M, out...]. */
void npk_ref_onnx_conv(const npk_onnx_conv_params *p, const npk_tensor *x, const npk_tensor *w,
                       const npk_tensor *b, npk_tensor *y);
/* ConvInteger: 8-bit x and w with zero points (x_zp scalar or NULL, w_zp
 * scalar, [M] or NULL) into int32 y; b (int32 [M]) added when not NULL. */
void npk_ref_onnx_conv_integer(const npk_onnx_conv_params *p, const npk_tensor *x, const npk_tensor *w,
                               const npk_tensor *x_zp, const npk_tensor *w_zp, const npk_tensor *b,
                               npk_tensor *y);
/* MaxPool: y [N, C, out...] (x's dtype); indices (int64, may be NULL) holds the
 * flat index into x of each maximum (storage_order as p). */
void npk_ref_onnx_maxpool(const npk_onnx_conv_params *p, const npk_tensor *x, npk_tensor *y, npk_tensor *indices);
/* AveragePool (float). */
void npk_ref_onnx_avgpool(const npk_onnx_conv_params *p, const npk_tensor *x, npk_tensor *y);
/* GlobalAveragePool / GlobalMaxPool: x [N, C, spatial...] -> y [N, C, 1...]. */
void npk_ref_onnx_global_pool(const npk_tensor *x, npk_tensor *y, int is_max);

/* ---- quantization --------------------------------------------------------------- */
/* Requantize an int32 accumulator: saturate(rint((float)acc * mult) + zp) in
 * the range of dtype (int8/uint8/int32). mult is float32 as ONNX Runtime
 * computes it (scale_a * scale_b / scale_y). */
int64_t npk_ref_onnx_requant(int64_t acc, float mult, int64_t zp, int dtype);
/* Requantize an int32 tensor acc into y (same shape, int8/uint8):
 * per-tensor (n_mult == 1) or per-channel along `axis` (n_mult = dims[axis]).
 * y_zp: scalar. */
void npk_ref_onnx_requant_tensor(const npk_tensor *acc, const float *mult, int64_t n_mult, int axis, int64_t y_zp,
                                 npk_tensor *y);
/* QuantizeLinear: y = saturate(rint(x / scale) + zp); scale/zp scalar or
 * per `axis` (1-D of dims[axis]). zp NULL means 0 (and y's dtype decides the range). */
void npk_ref_onnx_quantize(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *zp, int axis,
                           npk_tensor *y);
/* DequantizeLinear: y = (x - zp) * scale, same broadcasting rule. */
void npk_ref_onnx_dequantize(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *zp, int axis,
                             npk_tensor *y);
/* DynamicQuantizeLinear: uint8 y, float scale, uint8 zero point (scalars). */
void npk_ref_onnx_dynamic_quantize(const npk_tensor *x, npk_tensor *y, npk_tensor *scale, npk_tensor *zp);

/* ---- data movement ------------------------------------------------------------------ */
/* Transpose: y dims = x dims permuted by perm. */
void npk_ref_onnx_transpose(const npk_tensor *x, const int *perm, npk_tensor *y);
/* Concat along axis: n tensors into y. */
void npk_ref_onnx_concat(const npk_tensor *const *xs, int n, int axis, npk_tensor *y);
/* Gather along axis with int32/int64 indices (negative = from the end).
 * Returns -NPK_EINVAL naming the index when one is out of range. */
int npk_ref_onnx_gather(const npk_tensor *x, const npk_tensor *idx, int axis, npk_tensor *y);

/* ---- more math (ref_onnx_math.c) ---------------------------------------------------- */
/* Offset into x (broadcast to y's shape) of y's flat element i. */
int64_t npk_ref_onnx_bcast_offset(const npk_tensor *x, const npk_tensor *y, int64_t i);

typedef enum npk_onnx_unop2 {
    NPK_ONNX_ABS, NPK_ONNX_NEG, NPK_ONNX_RECIPROCAL, NPK_ONNX_FLOOR, NPK_ONNX_CEIL, NPK_ONNX_ROUND, NPK_ONNX_SIGN,
    NPK_ONNX_LOG, NPK_ONNX_SIN, NPK_ONNX_COS, NPK_ONNX_TAN, NPK_ONNX_ASIN, NPK_ONNX_ACOS, NPK_ONNX_ATAN,
    NPK_ONNX_SINH, NPK_ONNX_COSH, NPK_ONNX_ASINH, NPK_ONNX_ACOSH, NPK_ONNX_ATANH, NPK_ONNX_SOFTPLUS,
    NPK_ONNX_SOFTSIGN, NPK_ONNX_ELU, NPK_ONNX_SELU, NPK_ONNX_CELU, NPK_ONNX_HARDSIGMOID, NPK_ONNX_HARDSWISH,
    NPK_ONNX_THRESHOLDEDRELU, NPK_ONNX_SHRINK, NPK_ONNX_MISH, NPK_ONNX_GELU, NPK_ONNX_ISNAN, NPK_ONNX_ISINF,
    NPK_ONNX_NOT, NPK_ONNX_BITNOT
} npk_onnx_unop2;
/* y = f(x) with parameters p: ELU/CELU/THRESHOLDEDRELU alpha = p[0]; SELU
 * alpha p[0], gamma p[1]; HARDSIGMOID alpha p[0], beta p[1]; SHRINK lambd p[0],
 * bias p[1]; ISINF detect_negative p[0], detect_positive p[1]. ISNAN/ISINF
 * write bool y. Integers: ABS/NEG wrap, SIGN, NOT (bool), BITNOT exact. */
void npk_ref_onnx_unary2(npk_onnx_unop2 op, const npk_tensor *x, npk_tensor *y, const double *p);

typedef enum npk_onnx_binop2 {
    NPK_ONNX_MOD, NPK_ONNX_FMOD, NPK_ONNX_EQUAL, NPK_ONNX_LESS, NPK_ONNX_GREATER, NPK_ONNX_LESSEQ,
    NPK_ONNX_GREATEREQ, NPK_ONNX_AND, NPK_ONNX_OR, NPK_ONNX_XOR, NPK_ONNX_SHL, NPK_ONNX_SHR, NPK_ONNX_BITAND,
    NPK_ONNX_BITOR, NPK_ONNX_BITXOR, NPK_ONNX_MAX, NPK_ONNX_MIN, NPK_ONNX_SUM2
} npk_onnx_binop2;
/* y = a op b with numpy broadcasting; comparisons and logic write bool y.
 * MOD: integer remainder with the divisor's sign (Python); FMOD: C fmod (the
 * dividend's sign); integer division by zero gives 0. MAX/MIN propagate NaN.
 * SUM2: a + b in the element type (float32 rounding for float). */
void npk_ref_onnx_binary2(npk_onnx_binop2 op, const npk_tensor *a, const npk_tensor *b, npk_tensor *y);
/* y = cond ? a : b, all three broadcast to y. */
void npk_ref_onnx_where(const npk_tensor *cond, const npk_tensor *a, const npk_tensor *b, npk_tensor *y);
/* Element type conversion (numpy astype: floats to integers truncate, saturating). */
void npk_ref_onnx_cast(const npk_tensor *x, npk_tensor *y);

typedef enum npk_onnx_reduce {
    NPK_ONNX_R_SUM, NPK_ONNX_R_MEAN, NPK_ONNX_R_MAX, NPK_ONNX_R_MIN, NPK_ONNX_R_PROD, NPK_ONNX_R_L1, NPK_ONNX_R_L2,
    NPK_ONNX_R_LOGSUM, NPK_ONNX_R_LOGSUMEXP, NPK_ONNX_R_SUMSQUARE
} npk_onnx_reduce;
/* Reduce x over the dims with red[d] = 1 into y (x's rank with those dims 1,
 * or the same elements squeezed). Integers exact (wrapping sums). */
int npk_ref_onnx_reduce(npk_onnx_reduce op, const npk_tensor *x, const int *red, npk_tensor *y);
/* ArgMax/ArgMin along axis into int64 y (axis kept as 1 or removed: same
 * element order); ties: the first index, or the last with select_last. */
void npk_ref_onnx_argminmax(const npk_tensor *x, int axis, int is_min, int select_last, npk_tensor *y);
void npk_ref_onnx_cumsum(const npk_tensor *x, int axis, int exclusive, int reverse, npk_tensor *y);
/* Hardmax over the middle dim of [outer, len, inner]: 1 at the first maximum. */
void npk_ref_onnx_hardmax(const npk_tensor *x, npk_tensor *y, int64_t outer, int64_t len, int64_t inner);
/* LpNormalization (p 1 or 2) along axis. */
void npk_ref_onnx_lpnorm(const npk_tensor *x, int axis, int p, npk_tensor *y);

/* ---- more data movement (ref_onnx_shape.c) --------------------------------------------- */
/* y[i] = x[start + i * step] per dim (start/step per dim of x, already clamped). */
void npk_ref_onnx_slice(const npk_tensor *x, const int64_t *start, const int64_t *step, npk_tensor *y);
enum { NPK_ONNX_PAD_CONSTANT, NPK_ONNX_PAD_REFLECT, NPK_ONNX_PAD_EDGE, NPK_ONNX_PAD_WRAP };
/* Pad with pad_b[d] leading elements per dim (y's shape decides the trailing
 * ones; negative pads crop); cval: one element of y's type. */
void npk_ref_onnx_pad(const npk_tensor *x, const int64_t *pad_b, int mode, const void *cval, npk_tensor *y);
void npk_ref_onnx_tile(const npk_tensor *x, npk_tensor *y);
/* Broadcast x to y's shape. */
void npk_ref_onnx_expand(const npk_tensor *x, npk_tensor *y);
enum { NPK_ONNX_SCATTER_NONE, NPK_ONNX_SCATTER_ADD, NPK_ONNX_SCATTER_MUL, NPK_ONNX_SCATTER_MAX, NPK_ONNX_SCATTER_MIN };
/* Index errors (out of range) return -NPK_EINVAL with a message. */
int npk_ref_onnx_gather_elements(const npk_tensor *x, const npk_tensor *ind, int axis, npk_tensor *y);
int npk_ref_onnx_scatter_elements(const npk_tensor *x, const npk_tensor *ind, const npk_tensor *upd, int axis,
                                  int reduction, npk_tensor *y);
int npk_ref_onnx_gather_nd(const npk_tensor *x, const npk_tensor *ind, int batch_dims, npk_tensor *y);
int npk_ref_onnx_scatter_nd(const npk_tensor *x, const npk_tensor *ind, const npk_tensor *upd, int reduction,
                            npk_tensor *y);
void npk_ref_onnx_trilu(const npk_tensor *x, int upper, int64_t k, npk_tensor *y);
/* y[i] = start + i * delta in y's type (y's length decides the count). */
void npk_ref_onnx_range(double start, double delta, npk_tensor *y);
/* values: [off, on] of y's type. */
void npk_ref_onnx_onehot(const npk_tensor *ind, int64_t depth, const npk_tensor *values, int axis, npk_tensor *y);
/* Keep the nsel slices sel[] along axis (axis < 0: of the flattened x). */
void npk_ref_onnx_compress(const npk_tensor *x, const int64_t *sel, int64_t nsel, int axis, npk_tensor *y);
/* crd: mode CRD (else DCR). */
void npk_ref_onnx_depth_to_space(const npk_tensor *x, int64_t bs, int crd, npk_tensor *y);
void npk_ref_onnx_space_to_depth(const npk_tensor *x, int64_t bs, npk_tensor *y);
int64_t npk_ref_onnx_count_nonzero(const npk_tensor *x);
/* y: int64 [rank, count_nonzero]. */
void npk_ref_onnx_nonzero(const npk_tensor *x, npk_tensor *y);
/* TopK along axis: values (x's type) and int64 indices (either may be NULL), sorted; ties by lower index. */
int npk_ref_onnx_topk(const npk_tensor *x, int axis, int64_t k, int largest, npk_tensor *vals, npk_tensor *inds);
void npk_ref_onnx_eyelike(int64_t k, npk_tensor *y);
void npk_ref_onnx_reverse_sequence(const npk_tensor *x, const npk_tensor *lens, int batch_axis, int time_axis,
                                   npk_tensor *y);

/* ---- more NN (ref_onnx_nn2.c) ---------------------------------------------------------- */
/* ConvTranspose: x [N, C, in...], w [C, M/group, k...], b [M] or NULL, y [N, M, out...];
 * p as for Conv with c = C, m = M, out/pad_b resolved (output_padding included). */
void npk_ref_onnx_conv_transpose(const npk_onnx_conv_params *p, const npk_tensor *x, const npk_tensor *w,
                                 const npk_tensor *b, npk_tensor *y);
enum { NPK_ONNX_RS_NEAREST, NPK_ONNX_RS_LINEAR, NPK_ONNX_RS_CUBIC };
enum { NPK_ONNX_RS_HALF_PIXEL, NPK_ONNX_RS_ASYMMETRIC, NPK_ONNX_RS_PYTORCH_HALF_PIXEL, NPK_ONNX_RS_TF_HALF_PIXEL_FOR_NN,
       NPK_ONNX_RS_ALIGN_CORNERS, NPK_ONNX_RS_TF_CROP_AND_RESIZE };
enum { NPK_ONNX_RS_ROUND_PREFER_FLOOR, NPK_ONNX_RS_ROUND_PREFER_CEIL, NPK_ONNX_RS_FLOOR, NPK_ONNX_RS_CEIL };
/* Resize parameters: per-dim scales (output / input as given or derived from sizes),
 * roi [2 * rank] (starts then ends; tf_crop_and_resize only). */
typedef struct npk_onnx_resize {
    int rank, mode, coord, nearest, exclude_outside;
    double cubic_a, extrapolation;
    double scales[NPK_MAX_RANK], roi[2 * NPK_MAX_RANK];
} npk_onnx_resize;
/* Resize x into y (y's dims decide the output size): the ONNX reference's
 * interpolation (n-linear/n-cubic over every dim, edge-clamped taps). */
int npk_ref_onnx_resize(const npk_onnx_resize *r, const npk_tensor *x, npk_tensor *y);
void npk_ref_onnx_instance_norm(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *bias, double eps,
                                npk_tensor *y);
void npk_ref_onnx_lrn(const npk_tensor *x, int64_t size, double alpha, double beta, double bias, npk_tensor *y);
/* MeanVarianceNormalization over the dims with red[d] = 1: (x - mean) / (std + 1e-9). */
void npk_ref_onnx_mvn(const npk_tensor *x, const int *red, npk_tensor *y);
/* LpPool with exponent pw (p as for pooling). */
void npk_ref_onnx_lppool(const npk_onnx_conv_params *p, const npk_tensor *x, int64_t pw, npk_tensor *y);

/* ---- recurrent (ref_onnx_rnn.c) -------------------------------------------------------- */
enum { NPK_ONNX_RNN, NPK_ONNX_GRU, NPK_ONNX_LSTM };
enum { NPK_ONNX_ACT_RELU, NPK_ONNX_ACT_TANH, NPK_ONNX_ACT_SIGMOID, NPK_ONNX_ACT_AFFINE, NPK_ONNX_ACT_LEAKYRELU,
       NPK_ONNX_ACT_THRESHOLDEDRELU, NPK_ONNX_ACT_SCALEDTANH, NPK_ONNX_ACT_HARDSIGMOID, NPK_ONNX_ACT_ELU,
       NPK_ONNX_ACT_SOFTSIGN, NPK_ONNX_ACT_SOFTPLUS };
typedef struct npk_onnx_act {
    int fn;
    double alpha, beta;
} npk_onnx_act;
/* Parameters: kind, sizes, directions (1 or 2; reverse for a single reverse
 * pass), layout (1: batch first), clip (0 = none), input_forget (LSTM),
 * linear_before_reset (GRU), activations f, g, h per direction (acts[dir*3 + k]). */
typedef struct npk_onnx_rnn {
    int kind, dirs, reverse, layout, input_forget, linear_before_reset;
    int64_t seq, batch, input, hidden;
    double clip;
    npk_onnx_act acts[6];
} npk_onnx_rnn;
/* X, W, R as the spec; B, lens, h0, c0, P and the outputs may be NULL. Steps
 * past a batch entry's sequence length leave Y zero and the state unchanged. */
int npk_ref_onnx_rnn(const npk_onnx_rnn *p, const npk_tensor *X, const npk_tensor *W, const npk_tensor *R,
                     const npk_tensor *B, const npk_tensor *lens, const npk_tensor *h0, const npk_tensor *c0,
                     const npk_tensor *P, npk_tensor *Y, npk_tensor *Yh, npk_tensor *Yc);

/* ---- issue 14: Det, MaxUnpool, Unique, NonMaxSuppression, Einsum, signal ops,
 * RoiAlign, GridSample (ref_onnx_misc.c) ---------------------------------------- */
/* Determinant of each [M, M] matrix of x [..., M, M] (LU, partial pivoting, double). */
void npk_ref_onnx_det(const npk_tensor *x, npk_tensor *y);
/* y (zeroed) at the position of idx[i] = x[i]: idx indexes the unpooled
 * shape idims (y's rank); y may be larger (output_shape), padded after it.
 * An index outside idims fails naming it. */
int npk_ref_onnx_maxunpool(const npk_tensor *x, const npk_tensor *idx, const int64_t *idims, npk_tensor *y);
/* Unique slices of x viewed as [outer, len, inner] along len: returns the
 * number of unique slices g (or a negative status); first[k] / counts[k]: the
 * first occurrence and count of group k (groups in ascending order),
 * order[j]: the group at output position j (ascending when sorted, else by
 * first occurrence), inverse[i]: the output position of slice i. Arrays of len. */
int64_t npk_ref_onnx_unique(const npk_tensor *x, int64_t outer, int64_t len, int64_t inner, int sorted, int64_t *order,
                            int64_t *first, int64_t *inverse, int64_t *counts);
/* NonMaxSuppression of boxes [B, N, 4] by scores [B, C, N]: writes (batch,
 * class, box) triples into sel (room for B*C*N) and returns their count
 * (or -NPK_ENOMEM). Greedy per batch and class by score (ties: lower index
 * first), a box suppressed when its IoU with a kept one exceeds iou_th;
 * with has_score_th only scores above score_th are candidates. */
int64_t npk_ref_onnx_nms(const npk_tensor *boxes, const npk_tensor *scores, int64_t max_out, double iou_th, int has_score_th,
                         double score_th, int center, int64_t *sel);
/* Einsum: the output shape of the equation over inputs in[0..n-1], and the
 * product-sum (double for floats, int64 wrapping for integers). */
#define NPK_OP_EIN_MAX 16
int npk_ref_onnx_einsum_shape(const char *eq, int n, const npk_tensor *const *in, int *rank, int64_t *dims);
int npk_ref_onnx_einsum(const char *eq, int n, const npk_tensor *const *in, npk_tensor *y);
/* Hann (0), Hamming (1), Blackman (2) window of y's length. */
void npk_ref_onnx_window(int kind, int periodic, npk_tensor *y);
/* DFT of x [..., L, ..., 1|2] along axis with len points (zero-padded or
 * truncated), y [..., y->dims[axis], ..., 2] (the first bins when onesided). */
int npk_ref_onnx_dft(const npk_tensor *x, int axis, int64_t len, int inverse, int onesided, npk_tensor *y);
/* STFT of sig [B, L, 1|2] (or [B, L]) into y [B, frames, bins, 2]. */
int npk_ref_onnx_stft(const npk_tensor *sig, int64_t step, const npk_tensor *win, int64_t flen, npk_tensor *y);
/* MelWeightMatrix y [dft_length / 2 + 1, nmel]. */
int npk_ref_onnx_melweight(int64_t nmel, int64_t dftlen, int64_t sr, double lo, double hi, npk_tensor *y);
/* RoiAlign of x [N, C, H, W] over rois [R, 4] (x1, y1, x2, y2) into y [R, C, oh, ow]. */
int npk_ref_onnx_roialign(const npk_tensor *x, const npk_tensor *rois, const npk_tensor *bidx, int max_mode, int64_t oh,
                          int64_t ow, int64_t sampling, double scale, int half_pixel, npk_tensor *y);
/* MaxRoiPool of x [N, C, H, W] over rois [R, 5] (batch, x1, y1, x2, y2) into y [R, C, ph, pw]. */
int npk_ref_onnx_maxroipool(const npk_tensor *x, const npk_tensor *rois, int64_t ph, int64_t pw, double scale, npk_tensor *y);
/* GridSample of x [N, C, H, W] at grid [N, OH, OW, 2]: mode 0 bilinear, 1
 * nearest, 2 bicubic; pad 0 zeros, 1 border, 2 reflection. */
void npk_ref_onnx_gridsample(const npk_tensor *x, const npk_tensor *grid, int mode, int pad, int align, npk_tensor *y);


/* ---- random operators (ref_onnx_random.c) ----
 * The generator: xoshiro256** with its state filled from a 64-bit seed by
 * splitmix64. uniform: 53 random bits in [0, 1); normal: Box-Muller. */
typedef struct npk_rng {
    uint64_t s[4];
} npk_rng;
void npk_rng_seed(npk_rng *r, uint64_t seed);
uint64_t npk_rng_next(npk_rng *r);
double npk_rng_uniform(npk_rng *r);
double npk_rng_normal(npk_rng *r);
/* y (any float type) uniform in [low, high) after rounding to y's type. */
void npk_ref_onnx_random_uniform(npk_rng *r, double low, double high, npk_tensor *y);
/* y = mean + scale * N(0, 1) */
void npk_ref_onnx_random_normal(npk_rng *r, double mean, double scale, npk_tensor *y);
/* y (any numeric type) = 1 with probability p[i], else 0; p outside [0, 1] fails naming it. */
int npk_ref_onnx_bernoulli(npk_rng *r, const npk_tensor *p, npk_tensor *y);
/* y [batch, samples] (int32/int64): class indices drawn from x [batch, classes]
 * (unnormalized log-probabilities). */
int npk_ref_onnx_multinomial(npk_rng *r, const npk_tensor *x, int64_t samples, npk_tensor *y);

#endif
