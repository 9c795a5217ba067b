// SPDX-License-Identifier: MIT
/* Element-wise chains the CPU runs in one pass (issue 26 point 2).
 *
 * ONNX exporters write HardSwish as four nodes, Mul(x, Div(C, d)) or Div(Mul(x, C), d) with
 * C = Clip(Add(x, a), lo, hi) and scalar constants a, lo, hi, d (ppocr's models: 18 to 24 of
 * them, each node a pass over the tensor and a dispatch). When the three inner values have no
 * other reader, the last node runs the chain in one pass (npk_fast_hswish_chain: the four
 * nodes' own float operations in their order, so the values are theirs bit for bit) and the
 * other three do nothing. Their inputs are released where they stand: the only value the chain
 * reads later is x, which the last node reads (the Mul) or is declared to read
 * (npk_exec_read_direct: the Div). Not in golden runs (the reference runs every node) nor
 * timing-only ones. */
#include "graph/exec_int.h"
#include "ops/fast_onnx.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* v's value when it is a float scalar constant that is not NaN (an operand order of Add or
 * Mul then never matters). */
static int scalar(npk_exec *x, int v, double *out) {
    if (v < 0 || x->g->vals[v].graph_input >= 0) return 0;
    const npk_tensor *t = x->folded[v] ? x->folded[v] : x->g->vals[v].konst;
    if (!t || t->kind != NPK_KIND_TENSOR || t->dtype != NPK_DT_FLOAT || !t->data || npk_tensor_numel(t) != 1) return 0;
    float f = *(const float *)t->data;
    if (isnan(f)) return 0;
    *out = f;
    return 1;
}

/* The node producing v when it is a CPU node of type op with one output read by `by` alone. */
static int producer(npk_exec *x, int v, int by, int op) {
    if (v < 0 || !npk_exec_sole_use(x, v, by)) return -1;
    int p = x->g->vals[v].producer;
    if (p < 0 || x->g->nodes[p].op_id != op || x->g->nodes[p].n_out != 1 || x->place[p] != NPK_PLACE_CPU ||
        x->cpu_qdq[p].node >= 0 || x->fused_into[p] >= 0 || x->chain[p].skip)
        return -1;
    return p;
}

static int same_float_shape(npk_exec *x, int a, int b) {
    const npk_tensor *ma = &x->meta[a], *mb = &x->meta[b];
    return x->known[a] && x->known[b] && ma->kind == NPK_KIND_TENSOR && mb->kind == NPK_KIND_TENSOR &&
           ma->dtype == NPK_DT_FLOAT && mb->dtype == NPK_DT_FLOAT && ma->rank == mb->rank &&
           !memcmp(ma->dims, mb->dims, sizeof(int64_t) * (size_t)ma->rank);
}

/* The Clip(Add(x, a), lo, hi) behind value v (read by node `by` alone): its nodes in *cl and
 * *ad and its constants, with x = xv. */
static int clip_add(npk_exec *x, int v, int by, int xv, exec_chain *ch, int *cl, int *ad) {
    double lo = -INFINITY, hi = INFINITY, ac;
    if ((*cl = producer(x, v, by, NPK_OP_Clip)) < 0) return 0;
    const npk_node *c = &x->g->nodes[*cl];
    if (x->g->opset < 11) {
        lo = npk_node_attr_f(c, "min", -INFINITY);
        hi = npk_node_attr_f(c, "max", INFINITY);
    } else if ((c->n_in > 1 && c->in[1] >= 0 && !scalar(x, c->in[1], &lo)) ||
               (c->n_in > 2 && c->in[2] >= 0 && !scalar(x, c->in[2], &hi)))
        return 0;
    if ((double)(float)lo != lo || (double)(float)hi != hi) return 0; /* the kernel compares in float */
    if ((*ad = producer(x, c->in[0], *cl, NPK_OP_Add)) < 0) return 0;
    const npk_node *a = &x->g->nodes[*ad];
    if (a->n_in != 2 || !((a->in[0] == xv && scalar(x, a->in[1], &ac)) || (a->in[1] == xv && scalar(x, a->in[0], &ac))))
        return 0;
    ch->a = (float)ac, ch->lo = lo, ch->hi = hi;
    return 1;
}

/* Node c, the only reader of v, as a CPU node a chain or a fold may take over. */
static int takeable(npk_exec *x, int v, int c) {
    if (c < 0) return 0;
    const npk_node *nd = &x->g->nodes[c];
    return npk_exec_sole_use(x, v, c) && x->place[c] == NPK_PLACE_CPU && x->cpu_qdq[c].node < 0 &&
           x->fused_into[c] < 0 && !x->chain[c].skip && x->chain[c].x_val < 0 && nd->n_out == 1 && nd->out[0] >= 0 &&
           !x->folded[nd->out[0]] && same_float_shape(x, v, nd->out[0]);
}

/* After the chain ending at node e: a Mul by a float scalar constant, then an Add of one (either
 * or both; ppocr-v4-det's learnable affine after each HardSwish), each read by the next alone,
 * run by the chain too. */
static void match_tail(npk_exec *x, int e) {
    exec_chain *ch = &x->chain[e];
    int v = x->g->nodes[e].out[0];
    for (int bit = 1; bit <= 2; bit <<= 1) {
        int c = npk_exec_only_consumer(x, v);
        if (c < 0 || !takeable(x, v, c)) return;
        const npk_node *nd = &x->g->nodes[c];
        double k;
        if (nd->op_id != (bit == 1 ? NPK_OP_Mul : NPK_OP_Add)) continue;
        if (nd->n_in != 2 || nd->in[0] == nd->in[1] || !scalar(x, nd->in[nd->in[0] == v ? 1 : 0], &k)) return;
        if (bit == 1) ch->tm = (float)k;
        else ch->ta = (float)k;
        ch->tail |= bit;
        ch->tail_end = c;
        x->chain[c].skip = EXEC_SKIP_CHAIN;
        v = nd->out[0];
    }
}

/* Node e as the end of a HardSwish chain, Mul(x, Div(C, d)) or Div(Mul(x, C), d) with
 * C = Clip(Add(x, a), lo, hi): fills x->chain[e] and marks the inner nodes. */
static void match_hswish(npk_exec *x, int e) {
    const npk_node *nd = &x->g->nodes[e];
    int div_last = nd->op_id == NPK_OP_Div;
    if ((nd->op_id != NPK_OP_Mul && !div_last) || nd->n_in != 2 || nd->n_out != 1 || nd->out[0] < 0) return;
    exec_chain ch = {.x_val = -1, .div_last = div_last};
    double dc;
    int mv = -1; /* the Mul (Div last) or the Div (Mul last) */
    if (div_last) {
        if (!scalar(x, nd->in[1], &dc) || (mv = producer(x, nd->in[0], e, NPK_OP_Mul)) < 0) return;
    }
    const npk_node *m = div_last ? &x->g->nodes[mv] : nd;
    for (int s = 0; s < 2 && m->n_in == 2; s++) {
        int xv = m->in[s], cl, ad, inner = m->in[1 - s];
        if (xv < 0 || !same_float_shape(x, xv, nd->out[0])) continue;
        if (!div_last) { /* Mul(x, Div(C, d)) */
            if ((mv = producer(x, inner, e, NPK_OP_Div)) < 0) continue;
            const npk_node *d = &x->g->nodes[mv];
            if (d->n_in != 2 || !scalar(x, d->in[1], &dc)) continue;
            inner = d->in[0];
        }
        if (!clip_add(x, inner, mv, xv, &ch, &cl, &ad)) continue;
        if (div_last && npk_exec_read_direct(x, e, xv)) return; /* x outlives the skipped Mul */
        ch.x_val = xv, ch.d = (float)dc;
        x->chain[e] = ch;
        x->chain[ad].skip = x->chain[cl].skip = x->chain[mv].skip = EXEC_SKIP_CHAIN;
        match_tail(x, e);
        return;
    }
}

/* ---- Conv -> BatchNormalization / Mul / Add by constants, folded into the Conv's weights ----
 *
 * Conv(x, W, B) followed by BatchNormalization (inference), Mul or Add whose other operands are
 * constants varying at most along the channel axis computes, per output channel m,
 * y = mult[m] * conv(x, W, B)[m] + add[m] = conv(x, W', B') with W'[m] = mult[m] W[m] and
 * B'[m] = mult[m] B[m] + add[m] (ONNX Runtime folds the same nodes: its ConvBNFusion, ConvMulFusion
 * and ConvAddFusion). The folded weights are computed once per graph, in double and rounded once;
 * the Conv then writes the last node's output and the folded nodes do nothing. The sums differ
 * from the unfolded nodes' by rounding: float tolerance (docs/onnx.md, "Conv folding"). Not in
 * golden runs nor timing-only ones; never for non-finite constants or weights. */

/* v as a float constant the same in every run: an initializer or a constant folded by the graph. */
static const npk_tensor *const_of(npk_exec *x, int v) {
    if (v < 0 || x->g->vals[v].graph_input >= 0) return NULL;
    const npk_tensor *t = x->g->vals[v].konst;
    if (!t && x->folded[v] && exec_fold_shared(x, v)) t = x->folded[v];
    return t && t->kind == NPK_KIND_TENSOR && t->dtype == NPK_DT_FLOAT && t->data ? t : NULL;
}

/* c broadcast against y [N, M, ...] varies at most along axis 1 (one value or M) and keeps y's shape. */
static int per_channel(const npk_tensor *c, const npk_tensor *y, int64_t M) {
    int64_t n = npk_tensor_numel(c);
    if (c->rank > y->rank || y->rank < 2 || (n != 1 && n != M)) return 0;
    for (int i = 0; i < c->rank; i++) {
        int ax = y->rank - c->rank + i;
        if (c->dims[i] != 1 && (ax != 1 || c->dims[i] != M)) return 0;
    }
    return 1;
}

static float chan(const npk_tensor *c, int64_t m) { return ((const float *)c->data)[npk_tensor_numel(c) == 1 ? 0 : m]; }

/* The node after value v (read by it alone) that folds into a Conv with M output channels, or -1. */
static int fold_next(npk_exec *x, int v, int64_t M) {
    int c = npk_exec_only_consumer(x, v);
    if (c < 0 || !takeable(x, v, c)) return -1;
    const npk_node *nd = &x->g->nodes[c];
    if (nd->op_id == NPK_OP_Mul || nd->op_id == NPK_OP_Add) {
        if (nd->n_in != 2) return -1;
        const npk_tensor *k = const_of(x, nd->in[nd->in[0] == v ? 1 : 0]);
        return k && per_channel(k, &x->meta[v], M) ? c : -1;
    }
    if (nd->op_id != NPK_OP_BatchNormalization || nd->n_in != 5 || nd->in[0] != v ||
        (x->g->opset >= 14 && npk_node_attr_i(nd, "training_mode", 0)))
        return -1;
    for (int i = 1; i < 5; i++) {
        const npk_tensor *k = const_of(x, nd->in[i]);
        if (!k || npk_tensor_numel(k) != M) return -1;
    }
    return c;
}

/* The output channels of Conv / ConvTranspose n with weights w (0: not a shape it takes). */
static int64_t out_channels(const npk_node *nd, const npk_tensor *w) {
    if (w->rank < 3) return 0;
    if (nd->op_id == NPK_OP_Conv) return w->dims[0];
    int64_t g = npk_node_attr_i(nd, "group", 1); /* ConvTranspose: W [C, M / group, k...] */
    return g >= 1 && w->dims[0] % g == 0 ? w->dims[1] * g : 0;
}

/* W' and B' of Conv (or ConvTranspose) n with the nodes up to `end` folded in (see above); 0, or
 * -1 when a value is not finite or memory is short. */
static int fold_weights(npk_exec *x, int n, int end, const npk_tensor *w, const npk_tensor *b, npk_conv_fold *f) {
    const npk_node *cv = &x->g->nodes[n];
    int64_t M = out_channels(cv, w), ksz = npk_tensor_numel(w) / (w->dims[0] * w->dims[1]);
    /* blocks of ksz weights: Conv's (m, c) block feeds channel m; ConvTranspose's (c, mm)
     * block feeds channel (c / (C / group)) * (M / group) + mm */
    int tr = cv->op_id == NPK_OP_ConvTranspose;
    int64_t cg = tr ? w->dims[0] / (M / w->dims[1]) : 0;
    double *mult = malloc(sizeof(double) * (size_t)M * 2), *add = mult + M;
    f->w = calloc(1, sizeof *f->w), f->b = calloc(1, sizeof *f->b);
    if (!mult || !f->w || !f->b || npk_tensor_alloc_raw(f->w, NULL, NPK_DT_FLOAT, w->rank, w->dims) ||
        npk_tensor_alloc_raw(f->b, NULL, NPK_DT_FLOAT, 1, &M)) {
        free(mult);
        return -1;
    }
    for (int64_t m = 0; m < M; m++) mult[m] = 1.0, add[m] = b ? ((const float *)b->data)[m] : 0.0;
    for (int v = x->g->nodes[n].out[0], c = n; c != end;) {
        c = npk_exec_only_consumer(x, v);
        const npk_node *nd = &x->g->nodes[c];
        if (nd->op_id == NPK_OP_BatchNormalization) {
            const npk_tensor *sc = const_of(x, nd->in[1]), *bi = const_of(x, nd->in[2]), *me = const_of(x, nd->in[3]),
                             *va = const_of(x, nd->in[4]);
            double eps = npk_node_attr_f(nd, "epsilon", 1e-5);
            for (int64_t m = 0; m < M; m++) {
                double s = chan(sc, m) / sqrt((double)chan(va, m) + eps);
                mult[m] *= s;
                add[m] = (add[m] - chan(me, m)) * s + chan(bi, m);
            }
        } else {
            const npk_tensor *k = const_of(x, nd->in[nd->in[0] == v ? 1 : 0]);
            for (int64_t m = 0; m < M; m++)
                if (nd->op_id == NPK_OP_Mul) mult[m] *= chan(k, m), add[m] *= chan(k, m);
                else add[m] += chan(k, m);
        }
        v = nd->out[0];
    }
    int ok = 1;
    const float *W = w->data;
    float *FW = f->w->data, *FB = f->b->data;
    for (int64_t m = 0; m < M; m++) {
        FB[m] = (float)add[m];
        ok &= isfinite(FB[m]) != 0;
    }
    for (int64_t blk = 0; blk < w->dims[0] * w->dims[1]; blk++) {
        int64_t m = tr ? blk / w->dims[1] / cg * w->dims[1] + blk % w->dims[1] : blk / w->dims[1];
        for (int64_t i = blk * ksz; i < (blk + 1) * ksz; i++) {
            FW[i] = (float)(W[i] * mult[m]);
            ok &= isfinite(FW[i]) != 0;
        }
    }
    free(mult);
    return ok ? 0 : -1;
}

static void conv_fold_free(npk_conv_fold *f) {
    if (f->w) npk_tensor_free(f->w);
    if (f->b) npk_tensor_free(f->b);
    free(f->w), free(f->b);
    *f = (npk_conv_fold){0, NULL, NULL};
}

void npk_graph_conv_folds_free(npk_graph *g) {
    for (size_t i = 0; g->conv_folds && i < g->conv_folds_n; i++) conv_fold_free(&g->conv_folds[i]);
    free(g->conv_folds);
    g->conv_folds = NULL;
    g->conv_folds_n = 0;
}

static void match_conv_fold(npk_exec *x, int n) {
    const npk_node *cv = &x->g->nodes[n];
    if ((cv->op_id != NPK_OP_Conv && cv->op_id != NPK_OP_ConvTranspose) || cv->n_out != 1 || cv->out[0] < 0 ||
        cv->n_in < 2 || x->folded[cv->out[0]] ||
        (npk_exec_qdq_mode(x) == NPK_QDQ_ORT && npk_qdq_shape(x, n)))
        return;
    int hasb = cv->n_in > 2 && cv->in[2] >= 0;
    const npk_tensor *w = const_of(x, cv->in[1]), *b = hasb ? const_of(x, cv->in[2]) : NULL;
    int64_t M = w ? out_channels(cv, w) : 0;
    if (M <= 0 || npk_tensor_numel(w) <= 0 || (hasb && (!b || npk_tensor_numel(b) != M))) return;
    int end = -1;
    for (int v = cv->out[0], c; (c = fold_next(x, v, M)) >= 0; v = x->g->nodes[c].out[0]) end = c;
    if (end < 0) return;
    npk_graph *g = x->g;
    if (g->conv_folds && g->conv_folds_n != g->n_nodes) npk_graph_conv_folds_free(g); /* the graph grew */
    if (!g->conv_folds && (g->conv_folds = calloc(g->n_nodes + 1, sizeof *g->conv_folds))) g->conv_folds_n = g->n_nodes;
    if (!g->conv_folds) return;
    npk_conv_fold *f = &g->conv_folds[n];
    if (f->end == -(end + 2)) return; /* tried: a value is not finite */
    if (f->end != end) { /* first time, or another placement folds other nodes */
        conv_fold_free(f);
        if (fold_weights(x, n, end, w, b, f)) {
            conv_fold_free(f);
            f->end = -(end + 2);
            return;
        }
        f->end = end;
    }
    x->chain[n].fold_end = end, x->chain[n].fw = f->w, x->chain[n].fb = f->b;
    for (int v = cv->out[0], c = n; c != end; v = x->g->nodes[c].out[0]) {
        c = npk_exec_only_consumer(x, v);
        x->chain[c].skip = EXEC_SKIP_FOLD;
    }
}

/* The float output value v of a one-pass run over the float value xv (same shape; in, its host copy, checked by the caller): xv's own buffer when no later node reads it (in place), else a new one;
 * named. NULL when memory is short. */
static npk_tensor *pass_out(npk_exec *x, int xv, const npk_tensor *in, int v) {
    npk_tensor *reuse = exec_can_take(x, xv) ? x->host[xv] : NULL, *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (reuse == in) { /* in place: the input's buffer, which no later node reads */
        *t = (npk_tensor){.dtype = NPK_DT_FLOAT, .rank = x->meta[v].rank, .data = reuse->data};
        memcpy(t->dims, x->meta[v].dims, sizeof t->dims);
        reuse->data = NULL;
    } else if (npk_tensor_alloc_raw(t, NULL, NPK_DT_FLOAT, x->meta[v].rank, x->meta[v].dims)) {
        free(t);
        return NULL;
    }
    if (!(t->name = strdup(x->g->vals[v].name))) {
        npk_tensor_free(t);
        free(t);
        return NULL;
    }
    return t;
}

/* ---- QuantizeLinear -> DequantizeLinear in one pass ----------------------------------------
 *
 * A QDQ model quantizes every float value it passes on: between two float nodes stands a
 * QuantizeLinear whose only reader is a DequantizeLinear (ppocr-cls-qdq-s8: about a hundred per
 * run around its HardSwish, Relu and SE blocks). With per-tensor constant scales and zero points,
 * the QuantizeLinear computes the DequantizeLinear's float output in the same pass
 * (npk_fast_quant_dequant: each node's own float operations, so the values are theirs bit for
 * bit) and the 8-bit value is never stored; the DequantizeLinear does nothing. Not in golden
 * runs nor timing-only ones. */

/* v as a constant scalar tensor of type dt (an initializer or a folded constant), or NULL. */
static const npk_tensor *const_scalar(npk_exec *x, int v, int dt) {
    if (v < 0 || x->g->vals[v].graph_input >= 0) return NULL;
    const npk_tensor *t = x->folded[v] ? x->folded[v] : x->g->vals[v].konst;
    return t && t->kind == NPK_KIND_TENSOR && t->dtype == dt && t->data && npk_tensor_numel(t) == 1 ? t : NULL;
}

static void match_qdq(npk_exec *x, int n) {
    const npk_node *q = &x->g->nodes[n];
    if (q->op_id != NPK_OP_QuantizeLinear || q->n_in != 3 || q->n_out != 1 || q->out[0] < 0 || q->in[0] < 0) return;
    int v = q->out[0], xv = q->in[0], c = npk_exec_only_consumer(x, v);
    /* (a quantized group may read v itself, npk_exec_read_direct: a use beyond the graph's) */
    if (c < 0 || x->folded[v] || !npk_exec_sole_use(x, v, c) || x->uses_left[v] != x->g->vals[v].n_uses) return;
    const npk_node *d = &x->g->nodes[c];
    if (d->op_id != NPK_OP_DequantizeLinear || d->n_out != 1 || d->out[0] < 0 || d->in[0] != v ||
        x->place[c] != NPK_PLACE_CPU || x->cpu_qdq[c].node >= 0 || x->fused_into[c] >= 0 || x->chain[c].skip ||
        x->folded[d->out[0]] || !same_float_shape(x, xv, d->out[0]))
        return;
    const npk_tensor *qz = q->in[2] >= 0 ? x->g->vals[q->in[2]].konst : NULL;
    int dt = qz && x->g->vals[q->in[2]].graph_input < 0 ? qz->dtype : -1;
    if (dt != NPK_DT_INT8 && dt != NPK_DT_UINT8) return;
    const npk_tensor *qs = const_scalar(x, q->in[1], NPK_DT_FLOAT), *qzt = const_scalar(x, q->in[2], dt),
                     *ds = const_scalar(x, d->n_in > 1 ? d->in[1] : -1, NPK_DT_FLOAT),
                     *dzt = d->n_in > 2 && d->in[2] >= 0 ? const_scalar(x, d->in[2], dt) : NULL;
    if (!qs || !qzt || !ds || (d->n_in > 2 && d->in[2] >= 0 && !dzt)) return;
    exec_chain *ch = &x->chain[n];
    int s8 = dt == NPK_DT_INT8;
    ch->q_s8 = s8;
    ch->qs = *(const float *)qs->data, ch->ds = *(const float *)ds->data;
    ch->qz = s8 ? (float)*(const int8_t *)qzt->data : (float)*(const uint8_t *)qzt->data;
    ch->dz = !dzt ? 0 : s8 ? *(const int8_t *)dzt->data : *(const uint8_t *)dzt->data;
    ch->qdq_end = c;
    x->chain[c].skip = EXEC_SKIP_QDQ;
}

int exec_run_qdq(npk_exec *x, int n) {
    const exec_chain *ch = &x->chain[n];
    int v = x->g->nodes[ch->qdq_end].out[0], xv = x->g->nodes[n].in[0];
    const npk_tensor *in = npk_exec_host(x, xv);
    if (!in) return -NPK_EINVAL;
    if (!in->data || in->kind != NPK_KIND_TENSOR || in->dtype != NPK_DT_FLOAT || npk_tensor_numel(in) != npk_tensor_numel(&x->meta[v]))
        return npk_err(NPK_EINVAL, "QuantizeLinear input does not have the inferred shape");
    const float *src = in->data;
    npk_tensor *t = pass_out(x, xv, in, v);
    if (!t) return npk_err(NPK_ENOMEM, "out of memory");
    npk_fast_quant_dequant(src, t->data, npk_tensor_numel(t), ch->q_s8, ch->qs, ch->qz, ch->ds, ch->dz);
    x->host[v] = t;
    return 0;
}

void exec_fuse_cpu(npk_exec *x) {
    if (!x->chain || x->opts->golden || x->opts->timing_only) return;
    for (size_t n = 0; n < x->g->n_nodes; n++)
        if (x->place[n] == NPK_PLACE_CPU && x->cpu_qdq[n].node < 0 && x->fused_into[n] < 0 && !x->chain[n].skip)
            match_hswish(x, (int)n);
    for (size_t n = 0; n < x->g->n_nodes; n++)
        if (x->place[n] == NPK_PLACE_CPU && x->cpu_qdq[n].node < 0 && x->fused_into[n] < 0 && !x->chain[n].skip &&
            x->chain[n].x_val < 0)
            match_qdq(x, (int)n);
    for (size_t n = 0; n < x->g->n_nodes; n++)
        if (x->place[n] == NPK_PLACE_CPU && x->cpu_qdq[n].node < 0 && x->fused_into[n] < 0) match_conv_fold(x, (int)n);
}

int exec_can_take(npk_exec *x, int v) {
    npk_tensor *h = v >= 0 ? x->host[v] : NULL;
    return h && !x->borrowed[v] && x->uses_left[v] == 1 && !x->g->vals[v].graph_output && x->dev_writer[v] < 0 &&
           h->kind == NPK_KIND_TENSOR && h->data && !npk_dtype_is_half(h->dtype);
}

int exec_run_chain(npk_exec *x, int n) {
    const exec_chain *ch = &x->chain[n];
    int v = x->g->nodes[ch->tail ? ch->tail_end : n].out[0];
    const npk_tensor *in = npk_exec_host(x, ch->x_val);
    if (!in) return -NPK_EINVAL;
    const float *src = in->data;
    if (!in->data || in->dtype != NPK_DT_FLOAT || npk_tensor_numel(in) != npk_tensor_numel(&x->meta[v]))
        return npk_err(NPK_EINVAL, "HardSwish chain input does not have the inferred shape");
    npk_tensor *t = pass_out(x, ch->x_val, in, v);
    if (!t) return npk_err(NPK_ENOMEM, "out of memory");
    if (npk_fast_hswish_chain_tail(src, t->data, npk_tensor_numel(t), ch->a, ch->lo, ch->hi, ch->d, ch->div_last,
                                   ch->tail, ch->tm, ch->ta))
        return npk_err(NPK_EINVAL, "HardSwish chain bounds are not float values"); /* (matched only when they are) */
    x->host[v] = t;
    return 0;
}
