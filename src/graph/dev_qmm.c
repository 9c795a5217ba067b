// SPDX-License-Identifier: MIT
/* Integer matrix products (MatMulInteger, QLinearMatMul, ConvInteger,
 * QLinearConv) on an int8 x int8 -> int32 device GEMM. See dev_qmm.h. */
#include "graph/dev_qmm.h"
#include "graph/cstream.h"
#include "graph/qdq.h"

#include <stdlib.h>
#include <string.h>

struct npk_qmm {
    int node, conv, qlinear;
    int a_val, b_val, azp_val, bzp_val, as_val, bs_val, ys_val, yzp_val, bias_val, out_val;
    int a_flip, b_flip;
    int b_kn;                    /* conv path: B is [K, N] (Gemm with transB = 0), else [N, K] */
    int a_km;                    /* Gemm with transA = 1: A is [K, M] */
    int fout;                    /* float output: float32(sum) * float32(alpha * a_scale * b_scale), no requantization */
    float alpha;                 /* Gemm's alpha (1 otherwise), folded into the multiplier */
    int a_view, b_view;          /* matmul: views of A and B */
    int scr_a, scr_b, scr_c;     /* conv: im2col and weight matrices; both: int32 C */
    int64_t rows, mrows, n, k, groups;
    int64_t gb, nb, kd, nd;      /* channel batching: gb groups per product, nb products of K kd x N nd */
    int64_t kchunk, nk;          /* K split: nk device products of kchunk (last shorter), summed on the host */
    int64_t *aoff, *boff;        /* batched matmul: first row of each batch in the A and B views */
    uint32_t lda, ldb, ldc;
    npk_onnx_conv_params cp;
};

static uint32_t al16(uint64_t v) { return (uint32_t)((v + 15) / 16 * 16); }
static int in_at(const npk_node *nd, int k) { return k < nd->n_in ? nd->in[k] : -1; }

/* Why long: one decision per operand layout (matmul views, 1x1 conv as a matmul, grouped conv
 * batching, K chunks) over the plan's shared fields; each step sets fields the next reads, so
 * they stay in one reading order. */
int npk_qmm_place(const npk_qmm_dev *d, npk_exec *x, int n, npk_qmm **out, char *why, size_t wl, char *devop,
                  size_t dl) {
    const npk_node *nd = npk_exec_node(x, n);
    npk_op_id id = (npk_op_id)nd->op_id;
    int mm_q = id == NPK_OP_QLinearMatMul, cv_int = id == NPK_OP_ConvInteger, cv_q = id == NPK_OP_QLinearConv;
    int mm_f = id == NPK_OP_MatMul, cv_f = id == NPK_OP_Conv, gm_f = id == NPK_OP_Gemm;
    npk_qdq g;
    g.node = -1;
    *out = NULL;
    if (!(npk_onnx_op_families(id) & NPK_OPF_PRODUCT)) return 0;
    npk_qmm q;
    memset(&q, 0, sizeof q);
    q.node = n;
    q.conv = cv_int || cv_q || cv_f || gm_f; /* Gemm: a 1x1 convolution of M images */
    q.qlinear = mm_q || cv_q || mm_f || cv_f || gm_f;
    q.a_view = q.b_view = q.scr_a = q.scr_b = q.scr_c = -1;
    q.alpha = 1.0f;
    if (mm_f || cv_f || gm_f) {
        if (!npk_qdq_match(x, n, &g, why, wl)) return 0;
        q.b_kn = gm_f && !g.trans_b;
        q.a_km = g.trans_a;
        q.alpha = g.alpha;
        q.fout = g.fout;
        q.a_val = g.a_val, q.as_val = g.as_val, q.azp_val = g.azp_val;
        q.b_val = g.b_val, q.bs_val = g.bs_val, q.bzp_val = g.bzp_val;
        q.ys_val = g.ys_val, q.yzp_val = g.yzp_val, q.bias_val = g.bias_val, q.out_val = g.out_val;
    } else if (q.qlinear) {
        q.a_val = in_at(nd, 0), q.as_val = in_at(nd, 1), q.azp_val = in_at(nd, 2);
        q.b_val = in_at(nd, 3), q.bs_val = in_at(nd, 4), q.bzp_val = in_at(nd, 5);
        q.ys_val = in_at(nd, 6), q.yzp_val = in_at(nd, 7), q.bias_val = in_at(nd, 8);
    } else {
        q.a_val = in_at(nd, 0), q.b_val = in_at(nd, 1), q.azp_val = in_at(nd, 2), q.bzp_val = in_at(nd, 3);
        q.as_val = q.bs_val = q.ys_val = q.yzp_val = q.bias_val = -1;
    }
    if (!mm_f && !cv_f && !gm_f) q.out_val = nd->out[0];
    const npk_tensor *a = npk_exec_meta(x, q.a_val), *b = npk_exec_meta(x, q.b_val);
    if ((a->dtype != NPK_DT_INT8 && a->dtype != NPK_DT_UINT8) || (b->dtype != NPK_DT_INT8 && b->dtype != NPK_DT_UINT8)) {
        snprintf(why, wl, "quantized operands are not 8-bit");
        npk_exec_offload_limit(x, n);
        return 0;
    }
    q.a_flip = a->dtype == NPK_DT_UINT8;
    q.b_flip = b->dtype == NPK_DT_UINT8;
    npk_dlayout la = {NPK_DL_ROWS, q.a_flip, 0}, lb = {NPK_DL_ROWS, q.b_flip, 0};
    if (!q.conv) {
        if (b->rank < 2 || (b->rank > 2 && a->rank < 2)) {
            snprintf(why, wl, "B has rank %d and A rank %d: no matrix product mapping", b->rank, a->rank);
            npk_exec_offload_limit(x, n);
            return 0;
        }
        q.k = b->dims[b->rank - 2];
        q.n = b->dims[b->rank - 1];
        q.mrows = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
        if (b->rank == 2) { /* all rows of A against one B */
            q.rows = 1;
            for (int i = 0; i + 1 < a->rank; i++) q.rows *= a->dims[i];
            q.groups = 1;
        } else { /* numpy batch broadcasting: one product per batch */
            npk_onnx_mm_plan mp;
            if (npk_onnx_mm_plan_init(&mp, a, b)) return npk_err(NPK_ENOMEM, "out of memory");
            q.groups = mp.batch;
            q.rows = q.mrows;
            q.aoff = mp.aoff;
            q.boff = mp.boff;
            for (int64_t t = 0; t < q.groups; t++) { /* element offsets -> row offsets */
                q.aoff[t] = q.k ? q.aoff[t] / q.k : 0;
                q.boff[t] = q.n ? q.boff[t] / q.n : 0;
            }
        }
    } else if (gm_f) {
        /* A [M, K] x B' [K, N] is a 1x1 convolution of M one-pixel images of K channels */
        if (a->rank != 2 || b->rank != 2) {
            snprintf(why, wl, "Gemm operands are not 2-D");
            return 0;
        }
        npk_onnx_conv_params *p = &q.cp;
        p->nsp = 1;
        p->n = a->dims[q.a_km ? 1 : 0];
        p->c = a->dims[q.a_km ? 0 : 1];
        p->m = q.b_kn ? b->dims[1] : b->dims[0];
        p->group = 1;
        for (int i = 0; i < 3; i++) p->in[i] = p->k[i] = p->out[i] = p->stride[i] = p->dil[i] = 1;
        q.groups = 1;
        q.rows = p->n;
        q.k = p->c;
        q.n = p->m;
        q.mrows = 1;
    } else {
        npk_opctx c;
        memset(&c, 0, sizeof c);
        c.node = nd;
        c.opset = npk_exec_graph(x)->opset;
        if (npk_onnx_conv_params_of(&c, a, b, 0, &q.cp)) return -NPK_EINVAL;
        q.groups = q.cp.group;
        q.rows = q.cp.n * q.cp.out[0] * q.cp.out[1] * q.cp.out[2];
        q.k = q.cp.c / q.cp.group * q.cp.k[0] * q.cp.k[1] * q.cp.k[2];
        q.n = q.cp.m / q.cp.group;
        q.mrows = 1;
    }
    if (q.k > d->max_k && d->host_gemm) {
        free(q.aoff);
        free(q.boff);
        snprintf(why, wl, "contraction K = %lld exceeds the device's %u (partial sums would need host accumulation)",
                 (long long)q.k, d->max_k);
        npk_exec_offload_limit(x, n);
        return 0;
    }
    if (q.rows < 1 || q.n < 1 || q.k < 1) {
        free(q.aoff);
        free(q.boff);
        snprintf(why, wl, "empty product");
        npk_exec_offload_limit(x, n);
        return 0;
    }
    /* grouped conv with narrow groups: gb groups per product (block-diagonal
     * B), balanced so the products are equal (960 depthwise channels: 60 x 16) */
    q.gb = 1;
    if (q.conv && d->group_cols && !d->host_gemm && q.groups > 1 && q.n < (int64_t)d->group_cols) {
        int64_t gb = (int64_t)d->group_cols / q.n;
        while (gb > 1 && gb * q.k > (int64_t)d->max_k) gb--;
        if (gb > q.groups) gb = q.groups;
        int64_t nb = (q.groups + gb - 1) / gb;
        q.gb = (q.groups + nb - 1) / nb;
    }
    q.nb = (q.groups + q.gb - 1) / q.gb;
    q.kd = q.gb * q.k;
    q.nd = q.gb * q.n;
    q.ldc = al16((uint64_t)q.nd * 4);
    /* K beyond one descriptor: nk balanced chunks (multiples of 16 so every A
     * chunk starts aligned), each into its own int32 slice of C; the host adds
     * the slices with int32 wrap-around, exactly the device accumulator. */
    q.nk = (q.kd + d->max_k - 1) / d->max_k;
    q.kchunk = q.nk > 1 ? (int64_t)al16((uint64_t)((q.kd + q.nk - 1) / q.nk)) : q.kd;
    if (q.kchunk > d->max_k) q.kchunk = d->max_k;
    if (d->host_gemm) {
        q.lda = al16((uint64_t)q.k);
        q.ldb = al16((uint64_t)q.n);
    } else if (!q.conv) {
        if ((q.a_view = npk_exec_use_value(x, n, q.a_val, &la, 0)) < 0) return q.a_view;
        if ((q.b_view = npk_exec_use_value(x, n, q.b_val, &lb, 0)) < 0) return q.b_view;
        q.lda = npk_exec_view_pitch(x, q.a_view);
        q.ldb = npk_exec_view_pitch(x, q.b_view);
    } else {
        q.lda = al16((uint64_t)q.kd);
        q.ldb = al16((uint64_t)q.nd);
        q.scr_a = npk_exec_scratch(x, n, (uint64_t)(q.nb * q.rows) * q.lda);
        q.scr_b = npk_exec_scratch(x, n, (uint64_t)(q.nb * q.kd) * q.ldb);
    }
    if (!d->host_gemm) {
        q.scr_c = npk_exec_scratch(x, n, (uint64_t)(q.nk * q.nb * q.rows) * q.ldc);
        if (q.scr_c < 0 || (q.conv && (q.scr_a < 0 || q.scr_b < 0))) return -NPK_ENOMEM;
    }
    int rc = g.node >= 0 ? npk_qdq_commit(x, &g) : 0;
    if (rc) return rc;
    *out = malloc(sizeof q);
    if (!*out) return npk_err(NPK_ENOMEM, "out of memory");
    **out = q;
    snprintf(devop, dl, "%s", d->opname);
    if (mm_f || cv_f || gm_f) {
        snprintf(why, wl, "DequantizeLinear -> %s%s run as %s: %lld int8 product%s MxNxK %lldx%lldx%lld%s%s",
                 nd->op, q.fout ? " (float output)" : " -> QuantizeLinear",
                 cv_f ? "QLinearConv" : gm_f ? "QGemm" : q.fout ? "MatMulIntegerToFloat" : "QLinearMatMul", (long long)q.groups, q.groups > 1 ? "s" : "",
                 (long long)q.rows, (long long)q.n, (long long)q.k, q.a_flip || q.b_flip ? ", uint8 offset to int8" : "",
                 g.direct[0] >= 0 || g.direct[1] >= 0 ? ", reads the integer input of a shared DequantizeLinear" : "");
        return 1;
    }
    char ksplit[160] = "";
    if (q.gb > 1)
        snprintf(ksplit, sizeof ksplit, ", channel-batched as %lld product%s MxNxK %lldx%lldx%lld (%lld groups each, block-diagonal weights)",
                 (long long)q.nb, q.nb > 1 ? "s" : "", (long long)q.rows, (long long)q.nd, (long long)q.kd, (long long)q.gb);
    else if (q.nk > 1)
        snprintf(ksplit, sizeof ksplit, ", K split into %lld chunks of <= %lld summed on the host", (long long)q.nk,
                 (long long)q.kchunk);
    snprintf(why, wl, "%s%lld int8 product%s MxNxK %lldx%lldx%lld on the device%s%s%s", q.conv ? "host im2col, " : "",
             (long long)q.groups, q.groups > 1 ? "s" : "", (long long)q.rows, (long long)q.n, (long long)q.k, ksplit,
             q.a_flip || q.b_flip ? ", uint8 offset to int8" : "", q.qlinear ? ", requantized on the host" : "");
    return 1;
}

void npk_qmm_free(npk_qmm *q) {
    if (!q) return;
    free(q->aoff);
    free(q->boff);
    free(q);
}

static int64_t geti(const npk_tensor *t, int64_t i) {
    if (!t) return 0;
    return npk_ref_onnx_get_i(t->data, t->dtype, npk_tensor_numel(t) > 1 ? i : 0);
}
static float getf(const npk_tensor *t, int64_t i) {
    return ((const float *)t->data)[npk_tensor_numel(t) > 1 ? i : 0];
}

/* Host copy of an optional input (NULL when omitted); *err set on failure. */
static const npk_tensor *opt_host(npk_exec *x, int v, int *err) {
    if (v < 0) return NULL;
    const npk_tensor *t = npk_exec_host(x, v);
    if (!t) *err = 1;
    return t;
}

/* One npk_qmm_run: the operands it reads, the row and column sums of a' and b'
 * (the zero-point corrections), the host matrices and the device addresses. */
typedef struct qrun {
    const npk_qmm_dev *d;
    npk_backend *be;
    npk_exec *x;
    npk_qmm *q;
    const npk_tensor *azp, *bzp, *as, *bs, *ys, *yzp, *bias;
    int64_t *rowsum, *colsum;
    uint8_t *abuf, *bbuf;
    int32_t *cbuf;
    uint64_t a_addr, b_addr, c_addr;
    int ca_zero, cb_zero; /* the zero-point correction term of a' (of b') vanishes */
    int tonly;            /* timing-only: the operand matrices stay zero, no sums, no epilogue; the same device commands */
} qrun;

/* The optional operands and the sums' storage. */
static int qrun_begin(qrun *r) {
    npk_exec *x = r->x;
    npk_qmm *q = r->q;
    int err = 0;
    r->azp = opt_host(x, q->azp_val, &err), r->bzp = opt_host(x, q->bzp_val, &err);
    r->as = opt_host(x, q->as_val, &err), r->bs = opt_host(x, q->bs_val, &err);
    r->ys = opt_host(x, q->ys_val, &err), r->yzp = opt_host(x, q->yzp_val, &err);
    r->bias = opt_host(x, q->bias_val, &err);
    if (err) return -NPK_EINVAL;
    r->rowsum = calloc((size_t)(q->groups * q->rows + 1), sizeof(int64_t));
    r->colsum = calloc((size_t)(q->groups * q->n + 1), sizeof(int64_t));
    if (!r->rowsum || !r->colsum) return npk_err(NPK_ENOMEM, "out of memory");
    r->ca_zero = !q->a_flip, r->cb_zero = !q->b_flip;
    for (int64_t i = 0; r->azp && i < npk_tensor_numel(r->azp); i++)
        if (geti(r->azp, i)) r->ca_zero = 0;
    for (int64_t i = 0; r->bzp && i < npk_tensor_numel(r->bzp); i++)
        if (geti(r->bzp, i)) r->cb_zero = 0;
    r->c_addr = r->d->host_gemm ? 0 : npk_exec_scratch_addr(x, q->scr_c);
    r->tonly = npk_exec_timing_only(x);
    return 0;
}

/* Conv: the im2col rows of a' (padding holds the zero point, which folds to 0) with
 * their sums. An 8-bit input takes the same im2col without a division or a type
 * dispatch per element. */
static void conv_im2col(qrun *r, const npk_tensor *xt) {
    const npk_qmm *q = r->q;
    const npk_onnx_conv_params *p = &q->cp;
    int64_t G = q->groups, R = q->rows, K = q->k, GB = q->gb;
    int64_t cpg = p->c / p->group, ksp = p->k[0] * p->k[1] * p->k[2], isz = p->in[0] * p->in[1] * p->in[2];
    int64_t osz = p->out[0] * p->out[1] * p->out[2];
    int64_t zx = geti(r->azp, 0);
    if (xt->dtype == NPK_DT_INT8 || xt->dtype == NPK_DT_UINT8) {
        const int8_t *xs8 = xt->dtype == NPK_DT_INT8 ? (const int8_t *)xt->data : NULL;
        const uint8_t *xu8 = xt->dtype == NPK_DT_UINT8 ? (const uint8_t *)xt->data : NULL;
        int64_t zxf = q->a_flip ? zx - 128 : zx;
        for (int64_t g = 0; g < G; g++)
            for (int64_t rr = 0; rr < R; rr++) {
                int64_t nimg = rr / osz, o = rr % osz, o0 = o / (p->out[1] * p->out[2]), o1 = (o / p->out[2]) % p->out[1],
                        o2 = o % p->out[2];
                uint8_t *row = r->abuf + (size_t)((g / GB) * R + rr) * q->lda + (size_t)((g % GB) * K);
                int64_t s = 0, kk = 0;
                for (int64_t c = 0; c < cpg; c++) {
                    int64_t cbase = q->a_km ? c * p->n + nimg : (nimg * p->c + g * cpg + c) * isz; /* transA: A is [K, M] */
                    for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
                        int64_t i0 = o0 * p->stride[0] - p->pad_b[0] + k0 * p->dil[0];
                        int in0 = i0 >= 0 && i0 < p->in[0];
                        for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
                            int64_t i1 = o1 * p->stride[1] - p->pad_b[1] + k1 * p->dil[1];
                            int in1 = in0 && i1 >= 0 && i1 < p->in[1];
                            int64_t rb = cbase + (i0 * p->in[1] + i1) * p->in[2];
                            for (int64_t k2 = 0; k2 < p->k[2]; k2++, kk++) {
                                int64_t i2 = o2 * p->stride[2] - p->pad_b[2] + k2 * p->dil[2];
                                int64_t v;
                                if (in1 && i2 >= 0 && i2 < p->in[2])
                                    v = (xs8 ? (int64_t)xs8[rb + i2] : (int64_t)xu8[rb + i2]) - (q->a_flip ? 128 : 0);
                                else
                                    v = zxf;
                                row[kk] = (uint8_t)(int8_t)v;
                                s += v;
                            }
                        }
                    }
                }
                r->rowsum[g * R + rr] = s;
            }
        return;
    }
    for (int64_t g = 0; g < G; g++)
        for (int64_t rr = 0; rr < R; rr++) {
            int64_t nimg = rr / osz, o = rr % osz, o0 = o / (p->out[1] * p->out[2]), o1 = (o / p->out[2]) % p->out[1],
                    o2 = o % p->out[2];
            uint8_t *row = r->abuf + (size_t)((g / GB) * R + rr) * q->lda + (size_t)((g % GB) * K);
            int64_t s = 0;
            for (int64_t kk = 0; kk < K; kk++) {
                int64_t c = kk / ksp, kr = kk % ksp, k0 = kr / (p->k[1] * p->k[2]), k1 = (kr / p->k[2]) % p->k[1],
                        k2 = kr % p->k[2];
                int64_t i0 = o0 * p->stride[0] - p->pad_b[0] + k0 * p->dil[0];
                int64_t i1 = o1 * p->stride[1] - p->pad_b[1] + k1 * p->dil[1];
                int64_t i2 = o2 * p->stride[2] - p->pad_b[2] + k2 * p->dil[2];
                int64_t v = zx;
                if (i0 >= 0 && i0 < p->in[0] && i1 >= 0 && i1 < p->in[1] && i2 >= 0 && i2 < p->in[2])
                    v = npk_ref_onnx_get_i(xt->data, xt->dtype,
                                           q->a_km ? c * p->n + nimg
                                                   : (nimg * p->c + g * cpg + c) * isz + (i0 * p->in[1] + i1) * p->in[2] + i2);
                if (q->a_flip) v -= 128;
                row[kk] = (uint8_t)(int8_t)v;
                s += v;
            }
            r->rowsum[g * R + rr] = s;
        }
}

/* Conv: the im2col matrix and the weight matrix b' (with its column sums) on the host,
 * then in guest memory. Constant weights replayed from a compiled stream come from the
 * stream: only their column sums are needed here. */
static int conv_operands(qrun *r) {
    npk_exec *x = r->x;
    const npk_qmm *q = r->q;
    int64_t G = q->groups, R = q->rows, N = q->n, K = q->k, GB = q->gb, NB = q->nb, KD = q->kd;
    const npk_tensor *xt = npk_exec_host(x, q->a_val), *wt = npk_exec_host(x, q->b_val);
    if (!xt || !wt) return -NPK_EINVAL;
    npk_cstream *cs = npk_exec_stream(x);
    int w_const = npk_exec_const(x, q->b_val) != NULL, w_stored = w_const && cs && cs->replay && !r->d->host_gemm;
    r->abuf = calloc((size_t)(NB * R), q->lda);
    r->bbuf = w_stored ? NULL : calloc((size_t)(NB * KD), q->ldb);
    if (!r->abuf || (!r->bbuf && !w_stored)) return npk_err(NPK_ENOMEM, "out of memory for the im2col matrix");
    if (r->tonly) return 0; /* no im2col, no weights, no sums */
    conv_im2col(r, xt);
    const int8_t *ws8 = wt->dtype == NPK_DT_INT8 ? (const int8_t *)wt->data : NULL;
    for (int64_t g = 0; g < G; g++)
        for (int64_t m = 0; m < N; m++) {
            int64_t s = 0;
            for (int64_t kk = 0; kk < K; kk++) {
                int64_t wi = q->b_kn ? kk * N + m : (g * N + m) * K + kk;
                int64_t v = ws8 ? ws8[wi] : npk_ref_onnx_get_i(wt->data, wt->dtype, wi);
                if (q->b_flip) v -= 128;
                if (r->bbuf)
                    r->bbuf[(size_t)((g / GB) * KD + (g % GB) * K + kk) * q->ldb + (size_t)((g % GB) * N + m)] = (uint8_t)(int8_t)v;
                s += v;
            }
            r->colsum[g * N + m] = s;
        }
    return 0;
}

/* Conv on a device: the matrices into guest memory (the weights as a constant). */
static int conv_write(qrun *r) {
    npk_exec *x = r->x;
    const npk_qmm *q = r->q;
    r->a_addr = npk_exec_scratch_addr(x, q->scr_a);
    r->b_addr = npk_exec_scratch_addr(x, q->scr_b);
    size_t alen = (size_t)(q->nb * q->rows) * q->lda, blen = (size_t)(q->nb * q->kd) * q->ldb;
    int rc = npk_exec_write(x, r->a_addr, r->abuf, alen);
    if (rc) return rc;
    return npk_exec_const(x, q->b_val) ? npk_exec_write_const(x, r->b_addr, r->bbuf, blen)
                                       : npk_exec_write(x, r->b_addr, r->bbuf, blen);
}

/* A host GEMM (no guest memory): host matrices a' and b' (uint8 offset to int8) with
 * their row and column sums. */
static int host_operands(qrun *r) {
    npk_exec *x = r->x;
    const npk_qmm *q = r->q;
    int64_t G = q->groups, R = q->rows, N = q->n, K = q->k;
    const npk_tensor *at = npk_exec_host(x, q->a_val), *bt = npk_exec_host(x, q->b_val);
    if (!at || !bt) return -NPK_EINVAL;
    int64_t arows = npk_tensor_numel(at) / K, brows = npk_tensor_numel(bt) / N;
    r->abuf = calloc((size_t)(arows ? arows : 1), q->lda);
    r->bbuf = calloc((size_t)(brows ? brows : 1), q->ldb);
    if (!r->abuf || !r->bbuf) return npk_err(NPK_ENOMEM, "out of memory");
    if (r->tonly) return 0;
    for (int64_t rr = 0; rr < arows; rr++)
        for (int64_t kk = 0; kk < K; kk++)
            r->abuf[(size_t)rr * q->lda + (size_t)kk] =
                (uint8_t)(int8_t)(npk_ref_onnx_get_i(at->data, at->dtype, rr * K + kk) - (q->a_flip ? 128 : 0));
    for (int64_t rr = 0; rr < brows; rr++)
        for (int64_t j = 0; j < N; j++)
            r->bbuf[(size_t)rr * q->ldb + (size_t)j] =
                (uint8_t)(int8_t)(npk_ref_onnx_get_i(bt->data, bt->dtype, rr * N + j) - (q->b_flip ? 128 : 0));
    for (int64_t g = 0; g < G; g++) {
        int64_t ar0 = q->aoff ? q->aoff[g] : g * R, br0 = q->boff ? q->boff[g] : g * K;
        for (int64_t rr = 0; rr < R; rr++) {
            int64_t s = 0;
            for (int64_t kk = 0; kk < K; kk++) s += (int8_t)r->abuf[(size_t)(ar0 + rr) * q->lda + (size_t)kk];
            r->rowsum[g * R + rr] = s;
        }
        for (int64_t j = 0; j < N; j++) {
            int64_t s = 0;
            for (int64_t kk = 0; kk < K; kk++) s += (int8_t)r->bbuf[(size_t)(br0 + kk) * q->ldb + (size_t)j];
            r->colsum[g * N + j] = s;
        }
    }
    return 0;
}

/* A matrix product on the device reads A and B in place (their views): only the sums
 * a zero-point correction needs, from the host values. */
static int view_sums(qrun *r) {
    npk_exec *x = r->x;
    const npk_qmm *q = r->q;
    int64_t G = q->groups, R = q->rows, N = q->n, K = q->k;
    r->a_addr = npk_exec_view_addr(x, q->a_view);
    r->b_addr = npk_exec_view_addr(x, q->b_view);
    if (!r->cb_zero && !r->tonly) { /* row sums of a' */
        const npk_tensor *at = npk_exec_host(x, q->a_val);
        if (!at) return -NPK_EINVAL;
        for (int64_t g = 0; g < G; g++)
            for (int64_t rr = 0; rr < R; rr++) {
                int64_t s = 0, ar = q->aoff ? q->aoff[g] + rr : rr;
                for (int64_t kk = 0; kk < K; kk++)
                    s += npk_ref_onnx_get_i(at->data, at->dtype, ar * K + kk) - (q->a_flip ? 128 : 0);
                r->rowsum[g * R + rr] = s;
            }
    }
    if (!r->ca_zero && !r->tonly) { /* column sums of b' */
        const npk_tensor *bt = npk_exec_host(x, q->b_val);
        if (!bt) return -NPK_EINVAL;
        for (int64_t g = 0; g < G; g++)
            for (int64_t kk = 0; kk < K; kk++) {
                int64_t br = q->boff ? q->boff[g] + kk : kk;
                for (int64_t j = 0; j < N; j++)
                    r->colsum[g * N + j] += npk_ref_onnx_get_i(bt->data, bt->dtype, br * N + j) - (q->b_flip ? 128 : 0);
            }
    }
    return 0;
}

/* The products on the host GEMM, one per group (band rows for a stride-1 conv). */
static int host_products(qrun *r) {
    const npk_qmm *q = r->q;
    int64_t G = q->groups, R = q->rows, N = q->n, K = q->k;
    r->cbuf = malloc((size_t)(G * R) * q->ldc);
    if (!r->cbuf) return npk_err(NPK_ENOMEM, "out of memory");
    /* the im2col rows along the innermost axis, for a band product (stride 1, no dilation) */
    const npk_onnx_conv_params *p = &q->cp;
    npk_qmm_rows rows = {(uint32_t)p->out[2], (uint32_t)p->k[2]};
    const int band = q->conv && !q->a_km && p->stride[2] == 1 && p->dil[2] == 1 && p->k[2] > 1 && p->out[2] > 1;
    for (int64_t g = 0; g < G; g++) {
        int64_t ar0 = q->aoff ? q->aoff[g] : g * R, br0 = q->boff ? q->boff[g] : g * K;
        int rc = r->d->host_gemm(r->be, (uint32_t)R, (uint32_t)N, (uint32_t)K, (const int8_t *)r->abuf + (size_t)ar0 * q->lda,
                                 q->lda, (const int8_t *)r->bbuf + (size_t)br0 * q->ldb, q->ldb,
                                 (int32_t *)((uint8_t *)r->cbuf + (size_t)(g * R) * q->ldc), q->ldc, band ? &rows : NULL);
        if (rc) return rc;
    }
    return 0;
}

/* The device products, tiled in M and N; K > max_k in chunks, one C slice each, summed
 * on the host (int32 wrap-around, as one device accumulator). */
static int device_products(qrun *r) {
    const npk_qmm_dev *d = r->d;
    const npk_qmm *q = r->q;
    int64_t R = q->rows, NB = q->nb, KD = q->kd, ND = q->nd;
    size_t slice = (size_t)(NB * R) * q->ldc;
    int rc;
    for (int64_t kc = 0; kc < q->nk; kc++) {
        int64_t k0 = kc * q->kchunk, kl = KD - k0 < q->kchunk ? KD - k0 : q->kchunk;
        for (int64_t g = 0; g < NB; g++) /* one product per batch of GB groups (GB = 1: per group) */
            for (int64_t i0 = 0; i0 < R; i0 += d->max_m)
                for (int64_t j0 = 0; j0 < ND; j0 += d->max_n) {
                    uint32_t m = (uint32_t)(R - i0 < d->max_m ? R - i0 : d->max_m), nn = (uint32_t)(ND - j0 < d->max_n ? ND - j0 : d->max_n);
                    int64_t arow0 = q->aoff ? q->aoff[g] : g * R, brow0 = q->boff ? q->boff[g] : g * KD;
                    uint64_t ga = r->a_addr + (uint64_t)(arow0 + i0) * q->lda + (uint64_t)k0;
                    uint64_t gb = r->b_addr + (uint64_t)(brow0 + k0) * q->ldb + (uint64_t)j0;
                    uint64_t gc = r->c_addr + (uint64_t)kc * slice + (uint64_t)(g * R + i0) * q->ldc + (uint64_t)j0 * 4;
                    if ((rc = d->gemm(r->be, m, nn, (uint32_t)kl, ga, q->lda, gb, q->ldb, gc, q->ldc))) return rc;
                }
    }
    if ((rc = d->flush(r->be))) return rc;
    r->cbuf = malloc(slice * (size_t)q->nk);
    if (!r->cbuf) return npk_err(NPK_ENOMEM, "out of memory");
    if ((rc = npk_exec_read(r->x, r->c_addr, r->cbuf, slice * (size_t)q->nk))) return rc;
    if (q->nk > 1 && !r->tonly) {
        uint32_t *c0 = (uint32_t *)r->cbuf;
        size_t nw = slice / 4;
        for (int64_t kc = 1; kc < q->nk; kc++) {
            const uint32_t *ck = (const uint32_t *)((const uint8_t *)r->cbuf + (size_t)kc * slice);
            for (size_t w = 0; w < nw; w++) c0[w] += ck[w];
        }
    }
    return 0;
}

/* Conv epilogue: per output channel once the zero-point terms, bias and multiplier
 * (the same integer and float32 arithmetic as the general epilogue). */
static int conv_epilogue(qrun *r, npk_tensor *y, int64_t yz, float ysc) {
    const npk_qmm *q = r->q;
    int64_t G = q->groups, R = q->rows, N = q->n, K = q->k, GB = q->gb;
    int64_t osz = q->cp.out[0] * q->cp.out[1] * q->cp.out[2];
    int64_t M = G * N, ca = (q->a_flip ? 128 : 0) - geti(r->azp, 0);
    int64_t *cst = malloc(sizeof(int64_t) * 2 * (size_t)M);
    float *mul = malloc(sizeof(float) * (size_t)M);
    if (!cst || !mul) {
        free(cst);
        free(mul);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    for (int64_t ch = 0; ch < M; ch++) {
        int64_t cb = (q->b_flip ? 128 : 0) - geti(r->bzp, ch);
        cst[2 * ch] = cb;
        cst[2 * ch + 1] = ca * r->colsum[ch] + K * ca * cb + (r->bias ? geti(r->bias, ch) : 0);
        mul[ch] = q->qlinear ? q->alpha * getf(r->as, 0) * getf(r->bs, ch) / ysc : 0.0f;
    }
    for (int64_t g = 0; g < G; g++)
        for (int64_t rr = 0; rr < R; rr++) {
            const int32_t *crow = (const int32_t *)((const uint8_t *)r->cbuf + (size_t)((g / GB) * R + rr) * q->ldc) + (g % GB) * N;
            int64_t rs = r->rowsum[g * R + rr], obase = (rr / osz) * q->cp.m * osz + rr % osz;
            for (int64_t j = 0; j < N; j++) {
                int64_t ch = g * N + j;
                int64_t acc = (int64_t)crow[j] + cst[2 * ch] * rs + cst[2 * ch + 1];
                int64_t oi = obase + ch * osz;
                if (!q->qlinear) npk_ref_onnx_set_i(y->data, y->dtype, oi, acc);
                else if (q->fout) ((float *)y->data)[oi] = (float)(int32_t)acc * mul[ch];
                else npk_ref_onnx_set_i(y->data, y->dtype, oi, npk_ref_onnx_requant((int64_t)(int32_t)acc, mul[ch], yz, y->dtype));
            }
        }
    free(cst);
    free(mul);
    return 0;
}

/* Host epilogue: zero-point corrections, bias, requantization into the output. */
static int epilogue(qrun *r) {
    const npk_qmm *q = r->q;
    int64_t G = q->groups, R = q->rows, N = q->n, K = q->k, GB = q->gb;
    npk_tensor *y = npk_exec_out_host(r->x, q->out_val);
    if (!y) return npk_err(NPK_ENOMEM, "out of memory");
    int64_t yz = r->yzp ? geti(r->yzp, 0) : 0, osz = q->conv ? q->cp.out[0] * q->cp.out[1] * q->cp.out[2] : 1;
    float ysc = r->ys ? getf(r->ys, 0) : 1.0f;
    if (r->tonly) return 0; /* y stays zero */
    if (q->conv) return conv_epilogue(r, y, yz, ysc);
    for (int64_t g = 0; g < G; g++)
        for (int64_t rr = 0; rr < R; rr++) {
            const int32_t *crow = (const int32_t *)((const uint8_t *)r->cbuf + (size_t)((g / GB) * R + rr) * q->ldc) + (g % GB) * N;
            int64_t arow = q->conv ? 0 : rr % q->mrows;
            int64_t ca = (q->a_flip ? 128 : 0) - geti(r->azp, arow);
            for (int64_t j = 0; j < N; j++) {
                int64_t ch = q->conv ? g * N + j : j; /* output channel (conv) / column (matmul) */
                int64_t cb = (q->b_flip ? 128 : 0) - geti(r->bzp, ch);
                int64_t acc = (int64_t)crow[j] + cb * r->rowsum[g * R + rr] + ca * r->colsum[g * N + j] + K * ca * cb;
                if (r->bias) acc += geti(r->bias, ch);
                int64_t oi = q->conv ? ((rr / osz) * q->cp.m + ch) * osz + rr % osz : (g * R + rr) * N + j;
                if (!q->qlinear) {
                    npk_ref_onnx_set_i(y->data, y->dtype, oi, acc);
                } else {
                    float mult = q->conv ? q->alpha * getf(r->as, 0) * getf(r->bs, ch) / ysc : getf(r->as, arow) * getf(r->bs, j) / ysc;
                    if (q->fout) ((float *)y->data)[oi] = (float)(int32_t)acc * mult;
                    else npk_ref_onnx_set_i(y->data, y->dtype, oi, npk_ref_onnx_requant((int64_t)(int32_t)acc, mult, yz, y->dtype));
                }
            }
        }
    return 0;
}

/* A planned integer matrix product: its operands (a conv's im2col and weights, a host
 * GEMM's matrices, or the sums a product of two device views needs), the products (on
 * the host GEMM or tiled on the device), then the host epilogue. */
int npk_qmm_run(const npk_qmm_dev *d, npk_backend *be, npk_exec *x, npk_qmm *q) {
    qrun r = {.d = d, .be = be, .x = x, .q = q};
    int rc = qrun_begin(&r);
    if (!rc && q->conv) rc = conv_operands(&r);
    if (!rc && q->conv && !d->host_gemm) rc = conv_write(&r);
    if (!rc && !q->conv) rc = d->host_gemm ? host_operands(&r) : view_sums(&r);
    if (!rc) rc = d->host_gemm ? host_products(&r) : device_products(&r);
    if (!rc) rc = epilogue(&r);
    free(r.rowsum);
    free(r.colsum);
    free(r.cbuf);
    free(r.abuf);
    free(r.bbuf);
    return rc;
}
