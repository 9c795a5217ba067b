// SPDX-License-Identifier: MIT
/*
 * Quantized float subgraphs: DequantizeLinear -> Conv/MatMul -> QuantizeLinear
 * groups are the QLinearConv / QLinearMatMul they denote (DQ -> Gemm -> Q: a
 * QLinearMatMul plus an int32 bias, ONNX Runtime's QGemm). ONNX Runtime and
 * every device evaluate them with that integer arithmetic; the CPU path does
 * too (npk_qdq_run_cpu), so cpu and the devices agree bit for bit.
 */
#ifndef NPUKIT_GRAPH_QDQ_H
#define NPUKIT_GRAPH_QDQ_H

#include "graph/exec.h"

typedef struct npk_qdq {
    int node;             /* the Conv / MatMul / Gemm */
    int trans_b;          /* Gemm: B is [N, K] */
    int trans_a;          /* Gemm: A is [K, M] */
    float alpha;          /* Gemm: the product's factor (1 otherwise), folded into the multiplier */
    int fout;             /* MatMul/Gemm without a QuantizeLinear: a float output, float32(sum) *
                             float32(alpha * a_scale * b_scale) (ys_val, yzp_val -1) */
    int a_val, as_val, azp_val, b_val, bs_val, bzp_val, ys_val, yzp_val, bias_val, out_val; /* -1: absent */
    int fuse[4];          /* DequantizeLinear x, w, Q, DequantizeLinear bias folded into node (-1: none) */
    int direct[2];        /* a_val / b_val when their DequantizeLinear has other consumers and still runs
                             (the group reads the integer value itself), -1 otherwise */
    int softmax;          /* --qdq=ort: DequantizeLinear -> Softmax -> QuantizeLinear run as ONNX Runtime's
                             QLinearSoftmax (a, as, azp, ys, yzp and out values; no b) */
    int ort_type;         /* softmax: the 8-bit type ONNX Runtime computes in (uint8 where it
                             rewrote the int8 pairs, else int8) */
} npk_qdq;

/* Recognise the group around node n (a float Conv or MatMul with known shapes;
 * with --qdq=ort also a Softmax between DequantizeLinear and QuantizeLinear, the
 * group ONNX Runtime runs as QLinearSoftmax). Returns 1 and fills q, 0 with the
 * reason in why. */
int npk_qdq_match(npk_exec *x, int n, npk_qdq *q, char *why, size_t wl);
/* Node n has the shape of a quantized group: a Conv/MatMul/Gemm whose inputs 0
 * and 1 are DequantizeLinear outputs and, for a Conv, whose output goes only to
 * a QuantizeLinear (whether or not npk_qdq_match can fold it). */
int npk_qdq_shape(npk_exec *x, int n);
/* Fold the group's Q/DQ nodes into its node and keep the values it reads
 * directly alive until it ran (call once, when the group is placed). */
int npk_qdq_commit(npk_exec *x, const npk_qdq *q);
/* Evaluate a matched group on the CPU reference as QLinearConv / QLinearMatMul
 * and store the QuantizeLinear's output value on the host. */
int npk_qdq_run_cpu(npk_exec *x, const npk_qdq *q, uint64_t *macs);

#endif
