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

/* Node e as the end of a HardSwish chain, Mul(x, Div(C, d)) or Div(Mul(x, C), d) with
 * C = Clip(Add(x, a), lo, hi): fills x->chain[e] and marks the inner nodes. */
static void match_hswish(npk_exec *x, int e) {
    const npk_node *nd = &x->g->nodes[e];
    int div_last = nd->op_id == NPK_OP_Div;
    if ((nd->op_id != NPK_OP_Mul && !div_last) || nd->n_in != 2 || nd->n_out != 1 || nd->out[0] < 0) return;
    exec_chain ch = {-1, 0, 0, 0, 0, div_last, 0};
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
        x->chain[ad].skip = x->chain[cl].skip = x->chain[mv].skip = 1;
        return;
    }
}

void exec_fuse_cpu(npk_exec *x) {
    if (!x->chain || x->opts->golden || x->opts->timing_only) return;
    for (size_t n = 0; n < x->g->n_nodes; n++)
        if (x->place[n] == NPK_PLACE_CPU && x->cpu_qdq[n].node < 0 && x->fused_into[n] < 0) match_hswish(x, (int)n);
}

int exec_can_take(npk_exec *x, int v) {
    npk_tensor *h = v >= 0 ? x->host[v] : NULL;
    return h && !x->borrowed[v] && x->uses_left[v] == 1 && !x->g->vals[v].graph_output && x->dev_writer[v] < 0 &&
           h->kind == NPK_KIND_TENSOR && h->data && !npk_dtype_is_half(h->dtype);
}

int exec_run_chain(npk_exec *x, int n) {
    const exec_chain *ch = &x->chain[n];
    int v = x->g->nodes[n].out[0];
    const npk_tensor *in = npk_exec_host(x, ch->x_val);
    if (!in) return -NPK_EINVAL;
    const float *src = in->data;
    npk_tensor *reuse = exec_can_take(x, ch->x_val) ? x->host[ch->x_val] : NULL;
    if (!in->data || in->dtype != NPK_DT_FLOAT || npk_tensor_numel(in) != npk_tensor_numel(&x->meta[v]))
        return npk_err(NPK_EINVAL, "HardSwish chain input does not have the inferred shape");
    npk_tensor *t = calloc(1, sizeof *t);
    if (!t) return npk_err(NPK_ENOMEM, "out of memory");
    if (reuse == in) { /* in place: the input's buffer, which no later node reads */
        *t = (npk_tensor){.dtype = NPK_DT_FLOAT, .rank = x->meta[v].rank, .data = reuse->data};
        memcpy(t->dims, x->meta[v].dims, sizeof t->dims);
        reuse->data = NULL;
    } else if (npk_tensor_alloc_raw(t, NULL, NPK_DT_FLOAT, x->meta[v].rank, x->meta[v].dims)) {
        free(t);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    if (!(t->name = strdup(x->g->vals[v].name))) {
        npk_tensor_free(t);
        free(t);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    if (npk_fast_hswish_chain(src, t->data, npk_tensor_numel(t), ch->a, ch->lo, ch->hi, ch->d, ch->div_last))
        return npk_err(NPK_EINVAL, "HardSwish chain bounds are not float values"); /* (matched only when they are) */
    x->host[v] = t;
    return 0;
}
