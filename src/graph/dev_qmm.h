// SPDX-License-Identifier: MIT
/*
 * Integer matrix products on a device that multiplies int8 x int8 into int32
 * (v0 MATMUL_S8, shell GEMM INT8): MatMulInteger, QLinearMatMul,
 * ConvInteger and QLinearConv (any spatial rank, groups, pads, strides,
 * dilations, through host im2col) share this code.
 *
 * Exact folding of uint8 data and zero points: the device holds
 * a' = a - 128 for uint8 (the staging copy flips bit 7) and a' = a for
 * int8; with ca = (uint8 ? 128 : 0) - a_zp and cb likewise,
 *   sum_k (a - a_zp)(b - b_zp) = sum_k a'b' + cb * rowsum(a') + ca * colsum(b') + K * ca * cb
 * where the device computes sum_k a'b' and the host adds the rest (exact
 * integer arithmetic). Bias and requantization (float32 multiplier,
 * round half to even, saturation, as the CPU reference) run on the host.
 */
#ifndef NPUKIT_GRAPH_DEV_QMM_H
#define NPUKIT_GRAPH_DEV_QMM_H

#include "graph/exec.h"

/* One int8 x int8 -> int32 row-major product on the device (queued; the
 * backend's flush runs the queue). Addresses and row pitches in bytes. */
typedef int (*npk_qmm_gemm_fn)(npk_backend *b, uint32_t m, uint32_t n, uint32_t k, uint64_t a, uint32_t lda,
                               uint64_t bm, uint32_t ldb, uint64_t c, uint32_t ldc);
typedef int (*npk_qmm_flush_fn)(npk_backend *b);

/* The structure of a convolution's im2col matrix A along the innermost
 * spatial axis when it has stride 1 and no dilation: A's rows come in runs
 * of ow consecutive outputs and K in runs of kw taps along that axis, so
 * A[g*ow + x][o*kw + f] depends on x + f only (the input line (g, o) at
 * position x + f, padding included): a device may use the band instead of
 * the im2col rows. */
typedef struct npk_qmm_rows {
    uint32_t ow, kw;
} npk_qmm_rows;

/* A device without guest-memory tensors (e1: a 64-byte scratchpad that its
 * lowering layer tiles through): C[m][n] int32 = A[m][k] x B[k][n] int8 on
 * host matrices with the given row pitches (bytes for A and B, elements of
 * C are int32 at ldc bytes). rows: A's convolution structure, or NULL. */
typedef int (*npk_qmm_host_gemm_fn)(npk_backend *b, uint32_t m, uint32_t n, uint32_t k, const int8_t *a, uint32_t lda,
                                    const int8_t *bm, uint32_t ldb, int32_t *c, uint32_t ldc,
                                    const npk_qmm_rows *rows);

typedef struct npk_qmm_dev {
    uint32_t max_m, max_n, max_k;   /* per-descriptor limits (M, N tiled; K split into host-summed chunks) */
    npk_qmm_gemm_fn gemm;           /* guest-memory devices */
    npk_qmm_flush_fn flush;
    const char *opname;             /* "MATMUL_S8", "GEMM INT8" */
    npk_qmm_host_gemm_fn host_gemm; /* set instead of gemm/flush for host-matrix devices */
    /* Channel batching of grouped convolutions (depthwise): when a group has
     * fewer than group_cols output channels, up to group_cols / N groups run
     * as ONE product with a block-diagonal weight matrix (K = groups x K_g,
     * N = groups x N_g; the zero blocks contribute exact zeros), so the
     * array's columns are used. 0 = one product per group. Guest-memory
     * devices only. */
    uint32_t group_cols;
} npk_qmm_dev;

typedef struct npk_qmm npk_qmm;

/* Plan node n if it is one of the four integer families and fits the
 * device: returns 1 with *out (declares views/scratch), 0 with why. */
int npk_qmm_place(const npk_qmm_dev *d, npk_exec *x, int n, npk_qmm **out, char *why, size_t wl, char *devop,
                  size_t dl);
/* Run a planned node. */
int npk_qmm_run(const npk_qmm_dev *d, npk_backend *b, npk_exec *x, npk_qmm *q);
void npk_qmm_free(npk_qmm *q);

/* The operators the integer-product backends (v0, shell, e1) take through this
 * layer, for their rows' npk_dev_graph.ops (docs/onnx.md's operator table). */
#define NPK_QMM_DEV_OPS                                                                          \
    {"MatMulInteger", ""}, {"QLinearMatMul", ""}, {"ConvInteger", ""}, {"QLinearConv", ""},    \
        {"QuantizeLinear", "fused into a device product (DQ -> op -> Q)"},                     \
        {"DequantizeLinear", "fused into a device product (DQ -> op -> Q)"},                   \
        {"Gemm", "as DequantizeLinear -> Gemm -> QuantizeLinear"}, {"MatMul", "as DQ -> MatMul -> Q"}, \
        {"Conv", "as DequantizeLinear -> Conv -> QuantizeLinear"},

#endif
