// SPDX-License-Identifier: MIT
/* Quantized float subgraphs recognised once for every device and the CPU. */
#include "graph/qdq.h"
#include "ops/fast_onnx.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int in_at(const npk_node *nd, int k) { return k < nd->n_in ? nd->in[k] : -1; }

/* The node producing v if it is a DequantizeLinear whose only consumer is
 * node n (-1 otherwise); with shared set, also one that has other consumers
 * (*sole says which). */
static int dq_feeding(npk_exec *x, int v, int n, int shared, int *sole) {
    const npk_graph *g = npk_exec_graph(x);
    if (v < 0 || g->vals[v].producer < 0) return -1;
    int p = g->vals[v].producer, only = npk_exec_sole_use(x, v, n);
    if (g->nodes[p].op_id != NPK_OP_DequantizeLinear || (!only && !shared)) return -1;
    if (sole) *sole = only;
    return p;
}

static int scalar_const(npk_exec *x, int v) {
    const npk_tensor *t = npk_exec_const(x, v);
    return t && npk_tensor_numel(t) == 1;
}

/* --qdq=ort: ONNX Runtime's choice (CPU provider on x86, graph optimisation level 'all';
 * onnxruntime/core/optimizer/qdq_transformer). EnsureUniqueDQForNodeUnit first gives every
 * consumer of a shared DequantizeLinear its own copy; QDQS8ToU8Transformer then rewrites an
 * int8 QuantizeLinear -> DequantizeLinear pair to uint8 only where the Q has exactly one
 * consumer, that DQ (so not after such a copy), and both carry the same constant scalar int8
 * zero point; x86 has no int8 x int8 QLinearConv / QLinearMatMul (QDQIsInt8Allowed() is
 * false off ARM), so the Conv and MatMul selectors refuse an int8 activation, and every
 * selector wants the activation and the output of one type. Its Gemm fusion (QGemm) also
 * needs the zero point input on B's DequantizeLinear (seen with ONNX Runtime 1.30: without
 * it the Gemm stays float), beta = 1 when there is a bias, and alpha = 1 (a Gemm with alpha 0.75
 * stays float in ONNX Runtime 1.30, transA = 1 fuses). Checked against ONNX Runtime's optimised models of onnx_gen
 * --qdq's cases and the onnx-zoo models (tests/onnx_ort.cmakescript). */

/* A constant scalar int8 zero point at input 2 of nd (its value in *zp). */
static int ort_zp_i8(npk_exec *x, const npk_node *nd, int64_t *zp) {
    const npk_tensor *t = npk_exec_const(x, in_at(nd, 2));
    if (!t || t->dtype != NPK_DT_INT8 || npk_tensor_numel(t) != 1) return 0;
    *zp = npk_ref_onnx_get_i(t->data, t->dtype, 0);
    return 1;
}

/* The element type ONNX Runtime computes quantized value v in (v: a QuantizeLinear output
 * or a DequantizeLinear input): int8 becomes uint8 where QDQS8ToU8Transformer rewrites the
 * pair around it. */
static int ort_qtype(npk_exec *x, int v) {
    const npk_graph *g = npk_exec_graph(x);
    int dt = npk_exec_meta(x, v)->dtype, p = g->vals[v].producer;
    if (dt != NPK_DT_INT8 || p < 0 || g->nodes[p].op_id != NPK_OP_QuantizeLinear) return dt;
    int d = g->vals[v].graph_output ? -1 : npk_exec_only_consumer(x, v);
    if (d < 0 || g->vals[v].n_uses != 1 || g->nodes[d].op_id != NPK_OP_DequantizeLinear) return dt;
    int dv = g->nodes[d].out[0];
    /* copied per consumer; a graph output counts as one (the copy ONNX Runtime names
     * "<value>/duplicated", seen on ppocr-cls-qdq-s8's logits) */
    if (dv < 0 || g->vals[dv].n_uses > 1 || (g->vals[dv].graph_output && g->vals[dv].n_uses)) return dt;
    int64_t qz, dz;
    if (!ort_zp_i8(x, &g->nodes[p], &qz) || !ort_zp_i8(x, &g->nodes[d], &dz) || qz != dz) return dt;
    return NPK_DT_UINT8;
}

/* 1 when ONNX Runtime fuses the group q (matched by npk_qdq_match) into one integer operator;
 * 0 with the reason otherwise. */
static int ort_fuses(npk_exec *x, const npk_qdq *q, char *why, size_t wl) {
    const npk_node *nd = &npk_exec_graph(x)->nodes[q->node];
    int ta = ort_qtype(x, q->a_val), tb = ort_qtype(x, q->b_val), ty = q->fout ? NPK_DT_FLOAT : ort_qtype(x, q->out_val);
    const char *r = NULL;
    const npk_graph *g = npk_exec_graph(x);
    int y_to_q = 0; /* a float output that also feeds a QuantizeLinear: ONNX Runtime's QLinear selector
                       claims the group and refuses it (the node has other consumers) */
    for (size_t i = 0; q->fout && i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k] == q->out_val && g->nodes[i].op_id == NPK_OP_QuantizeLinear) y_to_q = 1;
    if (nd->op_id == NPK_OP_Gemm && q->bzp_val < 0)
        r = "B's DequantizeLinear has no zero point";
    else if (y_to_q)
        r = "its output feeds a QuantizeLinear and other nodes";
    else if (nd->op_id == NPK_OP_Gemm && q->bias_val >= 0 && npk_node_attr_f(nd, "beta", 1.0) != 1.0)
        r = "beta != 1 with a bias";
    else if (q->alpha != 1.0f)
        r = "alpha != 1";
    else if (nd->op_id != NPK_OP_Gemm && ta == NPK_DT_INT8)
        r = "int8 activation (x86 fuses uint8 ones)";
    else if (nd->op_id == NPK_OP_Gemm && ta == NPK_DT_INT8 && tb != NPK_DT_INT8)
        r = "int8 A, uint8 B";
    else if (!q->fout && ta != ty)
        r = ta == NPK_DT_UINT8 ? "uint8 input, int8 output" : "input and output types differ";
    if (!r) return 1;
    snprintf(why, wl, "--qdq=ort: float as in ONNX Runtime (%s)", r);
    return 0;
}

/* --qdq=ort: DequantizeLinear -> Softmax -> QuantizeLinear, which ONNX Runtime (CPU provider,
 * level 'all') replaces by its QLinearSoftmax (com.microsoft) when the activation and the output
 * are of one 8-bit type (after QDQS8ToU8Transformer; its unary selector: one DQ, one Q, equal
 * types). Checked against ONNX Runtime's optimised models of scripts/qdq_transformer.py. */
static int softmax_match(npk_exec *x, int n, npk_qdq *q, char *why, size_t wl) {
    const npk_graph *g = npk_exec_graph(x);
    const npk_node *nd = &g->nodes[n];
    int sx = 1, dx = dq_feeding(x, in_at(nd, 0), n, 1, &sx), yv = nd->out[0];
    int qn = yv >= 0 && !g->vals[yv].graph_output ? npk_exec_only_consumer(x, yv) : -1;
    if (npk_exec_qdq_mode(x) != NPK_QDQ_ORT || dx < 0 || qn < 0 || g->nodes[qn].op_id != NPK_OP_QuantizeLinear) {
        snprintf(why, wl, "float Softmax");
        return 0;
    }
    const npk_node *DX = &g->nodes[dx], *Q = &g->nodes[qn];
    if (!scalar_const(x, in_at(DX, 1)) || !scalar_const(x, in_at(Q, 1)) || (in_at(DX, 2) >= 0 && !scalar_const(x, in_at(DX, 2))) ||
        (in_at(Q, 2) >= 0 && !scalar_const(x, in_at(Q, 2)))) {
        snprintf(why, wl, "float Softmax: non-constant or per-axis scales/zero points");
        return 0;
    }
    int ta = ort_qtype(x, in_at(DX, 0)), ty = ort_qtype(x, Q->out[0]);
    if (ta != ty || (ta != NPK_DT_UINT8 && ta != NPK_DT_INT8)) {
        snprintf(why, wl, "--qdq=ort: float as in ONNX Runtime (input and output types differ)");
        return 0;
    }
    memset(q, 0, sizeof *q);
    q->a_val = in_at(DX, 0), q->as_val = in_at(DX, 1), q->azp_val = in_at(DX, 2);
    q->b_val = q->bs_val = q->bzp_val = q->bias_val = -1;
    q->ys_val = in_at(Q, 1), q->yzp_val = in_at(Q, 2), q->out_val = Q->out[0];
    q->node = n;
    q->alpha = 1.0f;
    q->softmax = 1;
    q->ort_type = ta;
    q->fuse[0] = sx ? dx : -1;
    q->fuse[1] = q->fuse[3] = -1;
    q->fuse[2] = qn;
    q->direct[0] = sx ? -1 : q->a_val;
    q->direct[1] = -1;
    return 1;
}

/* Recognise DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear (node n is
 * the Conv/MatMul/Gemm) and describe it as the QLinear operator it equals. Returns 1
 * and fills q's value indices, 0 with why. */
int npk_qdq_match(npk_exec *x, int n, npk_qdq *q, char *why, size_t wl) {
    const npk_graph *g = npk_exec_graph(x);
    const npk_node *nd = &g->nodes[n];
    if (nd->op_id == NPK_OP_Softmax) return softmax_match(x, n, q, why, wl);
    q->softmax = 0;
    int conv = nd->op_id == NPK_OP_Conv, gemm = nd->op_id == NPK_OP_Gemm;
    int trans_b = gemm && npk_node_attr_i(nd, "transB", 0);
    int trans_a = gemm && npk_node_attr_i(nd, "transA", 0);
    float alpha = gemm ? (float)npk_node_attr_f(nd, "alpha", 1.0) : 1.0f, beta = gemm ? (float)npk_node_attr_f(nd, "beta", 1.0) : 1.0f;
    int sx = 1, sw = 1;
    int dx = dq_feeding(x, in_at(nd, 0), n, 1, &sx), dw = dq_feeding(x, in_at(nd, 1), n, 1, &sw), db = -1;
    int yv = nd->out[0], qn = yv >= 0 ? npk_exec_only_consumer(x, yv) : -1;
    /* no QuantizeLinear after a MatMul/Gemm: a float output (ONNX Runtime's MatMulIntegerToFloat / QGemm
     * without y_scale): float32(integer sum) * float32(alpha * a_scale * b_scale) */
    int fout = qn < 0 || g->vals[yv].graph_output || g->nodes[qn].op_id != NPK_OP_QuantizeLinear;
    if (dx < 0 || dw < 0 || (fout && conv)) {
        snprintf(why, wl, "float %s: not a DequantizeLinear -> %s -> QuantizeLinear subgraph", nd->op, nd->op);
        return 0;
    }
    if (fout) qn = -1;
    const npk_node *DX = &g->nodes[dx], *DW = &g->nodes[dw], *Q = qn >= 0 ? &g->nodes[qn] : NULL;
    if (!scalar_const(x, in_at(DX, 1)) || (Q && !scalar_const(x, in_at(Q, 1))) || !npk_exec_const(x, in_at(DW, 1)) ||
        (in_at(DX, 2) >= 0 && !scalar_const(x, in_at(DX, 2))) || (Q && in_at(Q, 2) >= 0 && !scalar_const(x, in_at(Q, 2)))) {
        snprintf(why, wl, "quantized subgraph with non-constant or per-axis activation scales/zero points");
        npk_exec_offload_limit(x, n); /* not one integer product */
        return 0;
    }
    const npk_tensor *ws = npk_exec_const(x, in_at(DW, 1));
    int64_t nws = npk_tensor_numel(ws), wax = npk_node_attr_i(DW, "axis", 1);
    const npk_tensor *wm = npk_exec_meta(x, in_at(DW, 0));
    /* per-axis weight scales must follow the output channels: Conv axis 0, MatMul/Gemm the column of B */
    int col_axis = trans_b ? 0 : 1;
    if (nws > 1 && !(conv && wax == 0) && !(!conv && wm->rank == 2 && (wax == col_axis || wax == col_axis - 2))) {
        snprintf(why, wl, "per-axis weight scales on axis %lld do not map to output channels", (long long)wax);
        npk_exec_offload_limit(x, n); /* not one integer product */
        return 0;
    }
    if ((conv || gemm) && in_at(nd, 2) >= 0) {
        /* the bias must be an int32 DequantizeLinear with scale x_scale * w_scale and zero point 0
         * (Gemm: one value per column, C of shape [N] or [1, N]; beta * its scale equal to
         * alpha * x_scale * w_scale in float32, so that it adds to the integer sum as it is) */
        db = dq_feeding(x, in_at(nd, 2), n, 0, NULL);
        const npk_tensor *bq = db >= 0 ? npk_exec_meta(x, in_at(&g->nodes[db], 0)) : NULL;
        if (bq && gemm) {
            int64_t ncol = wm->rank == 2 ? wm->dims[trans_b ? 0 : 1] : -1;
            if (!((bq->rank == 1 && bq->dims[0] == ncol) || (bq->rank == 2 && bq->dims[0] == 1 && bq->dims[1] == ncol)))
                bq = NULL;
        }
        const npk_tensor *bs = db >= 0 ? npk_exec_const(x, in_at(&g->nodes[db], 1)) : NULL;
        const npk_tensor *bz = db >= 0 ? npk_exec_const(x, in_at(&g->nodes[db], 2)) : NULL;
        int ok = bq && bq->dtype == NPK_DT_INT32 && bs && npk_tensor_numel(bs) == (nws > 1 ? nws : 1);
        float xs = ((const float *)npk_exec_const(x, in_at(DX, 1))->data)[0];
        for (int64_t i = 0; ok && i < npk_tensor_numel(bs); i++)
            if (beta * ((const float *)bs->data)[i] != alpha * xs * ((const float *)ws->data)[nws > 1 ? i : 0]) ok = 0;
        for (int64_t i = 0; ok && bz && i < npk_tensor_numel(bz); i++)
            if (npk_ref_onnx_get_i(bz->data, bz->dtype, i)) ok = 0;
        if (!ok) {
            snprintf(why, wl, "the float bias is not an int32 DequantizeLinear with scale alpha * x_scale * w_scale / beta");
            npk_exec_offload_limit(x, n); /* not one integer product */
            return 0;
        }
    }
    q->a_val = in_at(DX, 0), q->as_val = in_at(DX, 1), q->azp_val = in_at(DX, 2);
    q->b_val = in_at(DW, 0), q->bs_val = in_at(DW, 1), q->bzp_val = in_at(DW, 2);
    q->ys_val = Q ? in_at(Q, 1) : -1, q->yzp_val = Q ? in_at(Q, 2) : -1, q->bias_val = db >= 0 ? in_at(&g->nodes[db], 0) : -1;
    q->out_val = Q ? Q->out[0] : yv;
    q->node = n;
    q->trans_b = trans_b;
    q->trans_a = trans_a;
    q->alpha = alpha;
    q->fout = fout;
    /* a DequantizeLinear with other consumers (a residual Add) still runs for them; the
     * group reads its integer input directly */
    q->fuse[0] = sx ? dx : -1;
    q->fuse[1] = sw ? dw : -1;
    q->direct[0] = sx ? -1 : q->a_val;
    q->direct[1] = sw ? -1 : q->b_val;
    q->fuse[2] = qn;
    q->fuse[3] = db;
    if (npk_exec_qdq_mode(x) == NPK_QDQ_ORT && !ort_fuses(x, q, why, wl)) {
        npk_exec_offload_limit(x, n); /* the user asked for ONNX Runtime's float evaluation */
        return 0;
    }
    return 1;
}

int npk_qdq_shape(npk_exec *x, int n) {
    const npk_graph *g = npk_exec_graph(x);
    const npk_node *nd = &g->nodes[n];
    if (nd->op_id != NPK_OP_Conv && nd->op_id != NPK_OP_MatMul && nd->op_id != NPK_OP_Gemm) return 0;
    for (int k = 0; k < 2; k++) {
        int v = in_at(nd, k);
        if (v < 0 || g->vals[v].producer < 0 || g->nodes[g->vals[v].producer].op_id != NPK_OP_DequantizeLinear) return 0;
    }
    if (nd->op_id != NPK_OP_Conv) return 1; /* MatMul/Gemm: a float output fuses too */
    int qn = nd->n_out > 0 && nd->out[0] >= 0 ? npk_exec_only_consumer(x, nd->out[0]) : -1;
    return qn >= 0 && g->nodes[qn].op_id == NPK_OP_QuantizeLinear;
}

int npk_qdq_commit(npk_exec *x, const npk_qdq *q) {
    int rc = 0;
    for (int i = 0; i < 4; i++)
        if (q->fuse[i] >= 0) npk_exec_fuse(x, q->fuse[i], q->node);
    for (int i = 0; i < 2 && !rc; i++)
        if (q->direct[i] >= 0) rc = npk_exec_read_direct(x, q->node, q->direct[i]);
    return rc;
}

/* A zero scalar of dtype (an omitted zero point). */
static int zero_scalar(npk_tensor *t, int dtype) { return npk_tensor_alloc(t, NULL, dtype, 0, NULL); }

static int64_t opt_i(const npk_tensor *t, int64_t i) {
    return t ? npk_ref_onnx_get_i(t->data, t->dtype, npk_tensor_numel(t) > 1 ? i : 0) : 0;
}

/* The multiplier of output column j: float32(float32(alpha * a_scale) * b_scale[j]) / y_scale, in
 * ONNX Runtime's QGemm order (alpha 1: QLinearMatMul's a_scale * b_scale / y_scale); a float
 * output has no y_scale. */
static float col_mult(const npk_qdq *q, float asc, const npk_tensor *bs, int64_t j, float ysc) {
    float m = q->alpha * asc * ((const float *)bs->data)[npk_tensor_numel(bs) > 1 ? j : 0];
    return q->fout ? m : m / ysc;
}

/* Output element i from the int32 sum acc: requantized, or float32(acc) * multiplier (float output). */
static void put_out(const npk_qdq *q, npk_tensor *y, int64_t i, int32_t acc, float mult, int64_t yz) {
    if (q->fout) ((float *)y->data)[i] = (float)acc * mult;
    else npk_ref_onnx_set_i(y->data, y->dtype, i, npk_ref_onnx_requant(acc, mult, yz, y->dtype));
}

/* DQ -> Gemm (-> Q): y[m][n] = requant(sum_k (a'[m][k] - a_zp)(b'[k][n] - b_zp[n]) + bias[n]) with the
 * multiplier float32(alpha * a_scale * b_scale[n] / y_scale), exactly ONNX Runtime's QGemm
 * (QLinearMatMul plus an int32 bias); a' = A or A^T (transA), b' = B or B^T (transB). Without the
 * QuantizeLinear the output is float32(sum) * float32(alpha * a_scale * b_scale[n]). */
static int run_gemm_cpu(npk_exec *x, const npk_qdq *q, uint64_t *macs) {
    const npk_tensor *a = npk_exec_host(x, q->a_val), *b = npk_exec_host(x, q->b_val);
    const npk_tensor *as = npk_exec_host(x, q->as_val), *bs = npk_exec_host(x, q->bs_val);
    const npk_tensor *ys = q->ys_val >= 0 ? npk_exec_host(x, q->ys_val) : NULL;
    const npk_tensor *azp = q->azp_val >= 0 ? npk_exec_host(x, q->azp_val) : NULL;
    const npk_tensor *bzp = q->bzp_val >= 0 ? npk_exec_host(x, q->bzp_val) : NULL;
    const npk_tensor *yzp = q->yzp_val >= 0 ? npk_exec_host(x, q->yzp_val) : NULL;
    const npk_tensor *bias = q->bias_val >= 0 ? npk_exec_host(x, q->bias_val) : NULL;
    if (!a || !b || !as || !bs || (q->ys_val >= 0 && !ys) || (q->azp_val >= 0 && !azp) || (q->bzp_val >= 0 && !bzp) ||
        (q->yzp_val >= 0 && !yzp) || (q->bias_val >= 0 && !bias))
        return -NPK_EINVAL;
    int64_t M = a->dims[q->trans_a ? 1 : 0], K = a->dims[q->trans_a ? 0 : 1], N = q->trans_b ? b->dims[0] : b->dims[1];
    npk_tensor *y = npk_exec_out_host(x, q->out_val);
    if (!y) return npk_err(NPK_ENOMEM, "out of memory");
    int64_t az = opt_i(azp, 0), yz = opt_i(yzp, 0);
    float ysc = ys ? ((const float *)ys->data)[0] : 1.0f, asc = ((const float *)as->data)[0];
    *macs = (uint64_t)(M * N * K);
    if (!npk_exec_golden(x) && !q->trans_a && !q->fout) {
        int64_t nm = npk_tensor_numel(bs) > 1 ? N : 1;
        float *mult = malloc(sizeof(float) * (size_t)(nm ? nm : 1));
        if (!mult) return npk_err(NPK_ENOMEM, "out of memory");
        for (int64_t j = 0; j < nm; j++) mult[j] = col_mult(q, asc, bs, j, ysc);
        int rc = npk_fast_qgemm(a, b, q->trans_b, az, bzp, bias, mult, nm, yz, y);
        free(mult);
        if (rc <= 0) return rc < 0 ? npk_err(-rc, "out of memory") : 0;
    }
    for (int64_t m = 0; m < M; m++)
        for (int64_t j = 0; j < N; j++) {
            int64_t acc = opt_i(bias, j), bz = opt_i(bzp, j);
            for (int64_t k = 0; k < K; k++)
                acc += (npk_ref_onnx_get_i(a->data, a->dtype, q->trans_a ? k * M + m : m * K + k) - az) *
                       (npk_ref_onnx_get_i(b->data, b->dtype, q->trans_b ? j * K + k : k * N + j) - bz);
            put_out(q, y, m * N + j, (int32_t)acc, col_mult(q, asc, bs, j, ysc), yz);
        }
    return 0;
}

/* DQ -> MatMul without a QuantizeLinear (ONNX Runtime's MatMulIntegerToFloat): the integer
 * product (MatMulInteger, numpy batching) times float32(a_scale * b_scale[column]). */
static int run_matmul_float_cpu(npk_exec *x, const npk_qdq *q, uint64_t *macs) {
    const npk_graph *g = npk_exec_graph(x);
    const npk_tensor *as = npk_exec_host(x, q->as_val), *bs = npk_exec_host(x, q->bs_val);
    npk_opctx c;
    memset(&c, 0, sizeof c);
    c.node = &g->nodes[q->node];
    c.opset = g->opset;
    c.run = !npk_exec_timing_only(x);
    c.golden = npk_exec_golden(x);
    c.n_in = 4;
    c.n_out = 1;
    int vals[4] = {q->a_val, q->b_val, q->azp_val, q->bzp_val};
    for (int i = 0; i < 4; i++)
        if (vals[i] >= 0 && !(c.in[i] = npk_exec_host(x, vals[i]))) return -NPK_EINVAL;
    if (!as || !bs || !c.in[0] || !c.in[1]) return -NPK_EINVAL;
    npk_tensor acc;
    memset(&acc, 0, sizeof acc);
    c.out[0] = &acc;
    int rc = npk_onnx_op_handler(NPK_OP_MatMulInteger)(&c);
    npk_tensor *y = rc ? NULL : npk_exec_out_host(x, q->out_val);
    if (!rc && !y) rc = npk_err(NPK_ENOMEM, "out of memory");
    if (!rc && c.run) {
        int64_t nc = acc.rank ? acc.dims[acc.rank - 1] : 1, cnt = npk_tensor_numel(&acc);
        float asc = ((const float *)as->data)[0];
        for (int64_t i = 0; i < cnt; i++) put_out(q, y, i, ((const int32_t *)acc.data)[i], col_mult(q, asc, bs, i % nc, 1.0f), 0);
    }
    *macs = c.macs;
    npk_tensor_free(&acc);
    return rc;
}

/* ONNX Runtime's QLinearSoftmax (contrib op, CPU, x86), reproduced from its behaviour in ONNX
 * Runtime 1.30: a 256-entry float table of exp((i - 255 + shift) * x_scale) (computed in double;
 * shift = max(0, ln(FLT_MAX / D) - 5) / x_scale keeps the sum of D terms finite); per row the
 * table is aligned to the row's maximum, the float sum of the D entries is taken in order, and
 * each output is nearbyint(entry * floor(1 / y_scale) / sum) + y_zp in float: 1 / y_scale is
 * floored (ONNX Runtime's approximation, reproduced as it is). uint8 clamps above at 255; int8
 * keeps ONNX Runtime's conversion (values above 127 wrap). Where ONNX Runtime computes in uint8
 * after rewriting the int8 pairs, the int8 values are shifted by 128 in and out (the rewrite's
 * own correspondence). */
static int run_softmax_cpu(npk_exec *x, const npk_qdq *q, uint64_t *macs) {
    const npk_graph *g = npk_exec_graph(x);
    const npk_node *nd = &g->nodes[q->node];
    *macs = 0;
    const npk_tensor *a = npk_exec_host(x, q->a_val), *as = npk_exec_host(x, q->as_val), *ys = npk_exec_host(x, q->ys_val);
    const npk_tensor *yzp = q->yzp_val >= 0 ? npk_exec_host(x, q->yzp_val) : NULL;
    if (!a || !as || !ys || (q->yzp_val >= 0 && !yzp)) return -NPK_EINVAL;
    npk_tensor *y = npk_exec_out_host(x, q->out_val);
    if (!y) return npk_err(NPK_ENOMEM, "out of memory");
    if (npk_exec_timing_only(x)) return 0;
    int rank = a->rank;
    int64_t axis = npk_node_attr_i(nd, "axis", g->opset < 13 ? 1 : -1);
    if (axis < 0) axis += rank;
    if (rank == 0 || axis < 0 || axis >= rank) return npk_err(NPK_EINVAL, "Softmax axis %lld out of range", (long long)axis);
    int64_t outer = 1, d = 1, inner = 1;
    for (int i = 0; i < rank; i++) {
        if (i < axis) outer *= a->dims[i];
        else if (i == axis || g->opset < 13) d *= a->dims[i]; /* opset < 13: the flattened trailing axes */
        else inner *= a->dims[i];
    }
    if (!outer || !d || !inner) return 0;
    float xs = ((const float *)as->data)[0], yinv = floorf(1.0f / ((const float *)ys->data)[0]);
    int u8 = q->ort_type == NPK_DT_UINT8, shift_in = u8 && a->dtype == NPK_DT_INT8 ? 128 : 0;
    int64_t yz = opt_i(yzp, 0) + (u8 && y->dtype == NPK_DT_INT8 ? 128 : 0);
    double sh = log((double)(FLT_MAX / (float)d)) - 5.0;
    sh = (sh > 0 ? sh : 0.0) / (double)xs;
    float table[256];
    for (int i = 0; i < 256; i++) table[u8 ? i : (uint8_t)(i - 128)] = (float)exp(((double)i - 255 + sh) * (double)xs);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * d * inner + in, xmax = INT64_MIN;
            for (int64_t k = 0; k < d; k++) {
                int64_t v = npk_ref_onnx_get_i(a->data, a->dtype, base + k * inner) + shift_in;
                if (v > xmax) xmax = v;
            }
            /* the entry of value v: uint8 table[255 - max + v], int8 table[(uint8)(127 - max + v)] */
            float sum = 0.0f;
            for (int64_t k = 0; k < d; k++) {
                int64_t v = npk_ref_onnx_get_i(a->data, a->dtype, base + k * inner) + shift_in;
                sum += table[u8 ? 255 - xmax + v : (uint8_t)(127 - xmax + v)];
            }
            for (int64_t k = 0; k < d; k++) {
                int64_t v = npk_ref_onnx_get_i(a->data, a->dtype, base + k * inner) + shift_in, out;
                float e = table[u8 ? 255 - xmax + v : (uint8_t)(127 - xmax + v)];
                int64_t r = (int64_t)nearbyintf(e * yinv / sum);
                if (u8) {
                    uint32_t vq = (uint32_t)r + (uint32_t)yz;
                    out = (vq > 255 ? 255 : (int64_t)vq) - (y->dtype == NPK_DT_INT8 ? 128 : 0);
                } else { /* int8: saturated (ONNX Runtime 1.30 on x86; its older scalar kernel wrapped) */
                    int64_t vq = r + yz;
                    out = vq > 127 ? 127 : vq < -128 ? -128 : vq;
                }
                npk_ref_onnx_set_i(y->data, y->dtype, base + k * inner, out);
            }
        }
    return 0;
}

int npk_qdq_run_cpu(npk_exec *x, const npk_qdq *q, uint64_t *macs) {
    const npk_graph *g = npk_exec_graph(x);
    const npk_node *nd = &g->nodes[q->node];
    if (q->softmax) return run_softmax_cpu(x, q, macs);
    if (nd->op_id == NPK_OP_Gemm) return run_gemm_cpu(x, q, macs);
    if (q->fout) return run_matmul_float_cpu(x, q, macs);
    int vals[9] = {q->a_val, q->as_val, q->azp_val, q->b_val, q->bs_val, q->bzp_val, q->ys_val, q->yzp_val, q->bias_val};
    npk_tensor zps[3];
    memset(zps, 0, sizeof zps);
    npk_opctx c;
    memset(&c, 0, sizeof c);
    c.node = nd; /* the Conv's attributes are QLinearConv's */
    c.opset = g->opset;
    c.run = 1;
    c.golden = npk_exec_golden(x);
    c.n_in = nd->op_id == NPK_OP_Conv ? 9 : 8;
    c.n_out = 1;
    int rc = 0;
    for (int i = 0; i < c.n_in && !rc; i++) {
        if (vals[i] >= 0) {
            if (!(c.in[i] = npk_exec_host(x, vals[i]))) rc = -NPK_EINVAL;
        } else if (i == 2 || i == 5 || i == 7) { /* omitted zero point: 0 of the quantized type */
            const npk_tensor *ref = i == 7 ? NULL : npk_exec_meta(x, vals[i - 2]);
            npk_tensor *z = &zps[(i - 2) / 3];
            if (!(rc = zero_scalar(z, ref ? ref->dtype : NPK_DT_UINT8))) c.in[i] = z;
        }
    }
    npk_tensor *y = rc ? NULL : npk_exec_out_host(x, q->out_val);
    if (!rc && !y) rc = npk_err(NPK_ENOMEM, "out of memory");
    if (!rc) {
        c.out[0] = y;
        c.run = !npk_exec_timing_only(x); /* timing-only: shape and MACs, y stays zero */
        rc = npk_onnx_op_handler(nd->op_id == NPK_OP_Conv ? NPK_OP_QLinearConv : NPK_OP_QLinearMatMul)(&c);
        *macs = c.macs;
    }
    for (int i = 0; i < 3; i++) npk_tensor_free(&zps[i]);
    return rc;
}
