// SPDX-License-Identifier: MIT
/* The executor's planning before a run: input binding and checks, shape and
 * type inference over the graph, and constant folding. */
#include "graph/exec_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- inference ------------------------------------------------------------------------- */

const char *exec_kind_name(int kind) {
    return kind == NPK_KIND_SEQUENCE ? "sequence" : kind == NPK_KIND_OPTIONAL ? "optional" : "tensor";
}

/* Tensor t against the tensor type d declares (element type, fixed dimensions); what names it. */
int exec_check_tensor(const npk_value_desc *d, const npk_tensor *t, const char *what) {
    char s1[128], s2[128];
    if (t->kind != NPK_KIND_TENSOR)
        return npk_err(NPK_EINVAL, "%s is a %s value, the model declares a tensor", what, exec_kind_name(t->kind));
    if (!t->data && npk_tensor_numel(t)) return npk_err(NPK_EINVAL, "%s has no data", what);
    if (d->dtype && !npk_dtype_size(d->dtype))
        return npk_err(NPK_EUNSUPPORTED, "%s: the model declares element type %s, which is not supported", what,
                       npk_dtype_name(d->dtype));
    if (d->dtype && t->dtype != d->dtype)
        return npk_err(NPK_EINVAL, "%s has type %s, the model declares %s", what, npk_dtype_name(t->dtype),
                       npk_dtype_name(d->dtype));
    if (d->rank >= 0) {
        int bad = t->rank != d->rank;
        for (int k = 0; !bad && k < d->rank; k++)
            if (d->dims[k] >= 0 && d->dims[k] != t->dims[k]) bad = 1;
        if (bad)
            return npk_err(NPK_EINVAL, "%s has shape %s, the model declares %s", what,
                           npk_tensor_shape_str(t->dtype, t->rank, t->dims, s1, sizeof s1),
                           npk_tensor_shape_str(d->dtype, d->rank, d->dims, s2, sizeof s2));
    }
    return 0;
}

/* A tensor input that passes exec_check_tensor, told without building its message (every run
 * checks every input, a body run its own: the snprintf was 3 % of silero-vad's warm run). */
static int tensor_input_ok(const npk_value_desc *d, const npk_tensor *t) {
    if (t->kind != NPK_KIND_TENSOR || (!t->data && npk_tensor_numel(t)) || (d->dtype && !npk_dtype_size(d->dtype)) ||
        (d->dtype && t->dtype != d->dtype) || (d->rank >= 0 && t->rank != d->rank))
        return 0;
    for (int k = 0; d->rank >= 0 && k < d->rank; k++)
        if (d->dims[k] >= 0 && d->dims[k] != t->dims[k]) return 0;
    return 1;
}

/* Input value t against its declaration d: the kind, then every tensor inside. */
static int check_input(const npk_value_desc *d, const npk_tensor *t) {
    char what[160], ds[256];
    if (d->kind < 0) return 0; /* a subgraph's outer-scope value: checked where it was made */
    if (d->kind == NPK_KIND_TENSOR && t->kind == NPK_KIND_TENSOR && tensor_input_ok(d, t)) return 0;
    snprintf(what, sizeof what, "input '%s'", d->name);
    if (t->kind != d->kind)
        return npk_err(NPK_EINVAL, "input '%s' is a %s value, the model declares %s", d->name, exec_kind_name(t->kind),
                       npk_value_desc_str(d, ds, sizeof ds));
    if (d->kind == NPK_KIND_TENSOR) return exec_check_tensor(d, t, what);
    if (t->n_items && !t->items) return npk_err(NPK_EINVAL, "input '%s' has no elements array", d->name);
    const npk_tensor *seq = t;
    if (d->kind == NPK_KIND_OPTIONAL) {
        if (t->n_items > 1) return npk_err(NPK_EINVAL, "input '%s' is an optional with %zu values", d->name, t->n_items);
        if (!t->n_items) return 0; /* empty */
        seq = &t->items[0];
        if (seq->kind != d->elem_kind)
            return npk_err(NPK_EINVAL, "input '%s' holds a %s, the model declares %s", d->name, exec_kind_name(seq->kind),
                           npk_value_desc_str(d, ds, sizeof ds));
        if (seq->kind == NPK_KIND_TENSOR) return exec_check_tensor(d, seq, what);
        if (seq->n_items && !seq->items) return npk_err(NPK_EINVAL, "input '%s' has no elements array", d->name);
    }
    for (size_t i = 0; i < seq->n_items; i++) {
        snprintf(what, sizeof what, "input '%s' element %zu", d->name, i);
        int rc = exec_check_tensor(d, &seq->items[i], what);
        if (rc) return rc;
    }
    return 0;
}

int exec_bind_inputs(npk_exec *x, const npk_tensor *inputs, size_t n_inputs) {
    npk_graph *g = x->g;
    char s1[256];
    for (size_t k = 0; k < n_inputs; k++) {
        if (!inputs[k].name) continue;
        size_t i;
        for (i = 0; i < g->n_in; i++)
            if (!strcmp(g->in_desc[i].name, inputs[k].name)) break;
        if (i == g->n_in) return npk_err(NPK_EINVAL, "the model has no input named '%s'", inputs[k].name);
    }
    for (size_t i = 0; i < g->n_in; i++) {
        const npk_value_desc *d = &g->in_desc[i];
        const npk_tensor *t = NULL;
        for (size_t k = 0; k < n_inputs && !t; k++)
            if (inputs[k].name && !strcmp(inputs[k].name, d->name)) t = &inputs[k];
        if (!t && i < n_inputs && !inputs[i].name) t = &inputs[i];
        if (!t) return npk_err(NPK_EINVAL, "missing input '%s' (%s)", d->name, npk_value_desc_str(d, s1, sizeof s1));
        /* a body's declared shapes are not binding (loop-carried values may change shape) */
        npk_value_desc loose = *d;
        if (g->is_sub || x->opts->loose_dims) loose.rank = -1;
        /* an optional-typed body input takes the value itself (ONNX wraps it implicitly) */
        if (g->is_sub && d->kind == NPK_KIND_OPTIONAL && t->kind != NPK_KIND_OPTIONAL) loose.kind = -1;
        int rc = check_input(&loose, t);
        if (rc) return rc;
        /* the caller's tensor outlives the run: the run reads it in place */
        if ((rc = exec_host_borrow(x, g->in_vals[i], t, d->name))) return rc;
    }
    return 0;
}

void exec_fill_ctx(npk_exec *x, int n, npk_opctx *c, int run) {
    const npk_node *nd = &x->g->nodes[n];
    /* the context is 2.6 KB (256 input slots): zero the scalar fields and only the slots the
     * node has, plus a margin of 8 (handlers read in[] and out[] below n_in / n_out only);
     * a whole memset per node and per inference was a tenth of silero-vad's run */
    memset(c, 0, offsetof(npk_opctx, in));
    memset((char *)c + offsetof(npk_opctx, macs), 0, sizeof *c - offsetof(npk_opctx, macs));
    int zi = nd->n_in + 8 < NPK_OP_MAX_IN ? nd->n_in + 8 : NPK_OP_MAX_IN;
    int zo = nd->n_out + 8 < NPK_OP_MAX_IO ? nd->n_out + 8 : NPK_OP_MAX_IO;
    memset(c->in, 0, sizeof c->in[0] * (size_t)zi);
    memset(c->out, 0, sizeof c->out[0] * (size_t)zo);
    c->node = nd;
    c->graph = x->g;
    c->body = x->body;
    c->opset = x->g->opset;
    c->run = run;
    c->n_in = nd->n_in - nd->n_outer;
    c->n_outer = nd->n_outer;
    /* --qdq=ort: a Conv/MatMul/Gemm between DequantizeLinear and QuantizeLinear that ONNX
     * Runtime leaves in float sums in double (the golden kernel): the QuantizeLinear after it
     * rounds at .5 ties, where the fast kernels' float32 summation can land on the other side
     * of the float graph's value (docs/onnx.md "QDQ") */
    c->golden = x->opts && (x->opts->golden || (x->opts->qdq == NPK_QDQ_ORT && npk_qdq_shape(x, n)));
    c->run_seed = x->opts ? x->opts->seed : 0;
    c->qdq = x->opts ? x->opts->qdq : NPK_QDQ_FUSED;
    c->draws = &x->rand_draws;
    c->n_out = nd->n_out;
    for (int k = 0; k < nd->n_in; k++) c->in[k] = nd->in[k] >= 0 ? &x->meta[nd->in[k]] : NULL;
    for (int k = 0; k < nd->n_out; k++) c->out[k] = nd->out[k] >= 0 ? &x->meta[nd->out[k]] : NULL;
}

/* Only Identity passes sequence and optional values through: an input of
 * another kind reaching any other operator fails, before anything runs,
 * naming the node and the value. */
int exec_kind_check(npk_exec *x, int n, int k, int kind) {
    const npk_node *nd = &x->g->nodes[n];
    if (kind == NPK_KIND_TENSOR || nd->op_id == NPK_OP_Identity || k >= nd->n_in - nd->n_outer ||
        (npk_onnx_op_families(nd->op_id) & NPK_OPF_CONTAINER))
        return 0;
    return npk_err(NPK_EINVAL,
                   "node '%s' (%s): input %d '%s' is a %s value: the operator takes tensors only (sequence and optional "
                   "values go to Identity, the sequence and optional operators and control flow)",
                   nd->name, nd->op, k, x->g->vals[nd->in[k]].name, exec_kind_name(kind));
}

/* float16 / bfloat16 tensors (issue 14): Cast, CastLike, Identity and the
 * container/control-flow operators take them as they are; every other
 * operator computes on float32 copies of its half inputs (exact: both widen
 * losslessly) and its float32 outputs are rounded back to the half type once,
 * to nearest even (numpy's float16 arithmetic: compute in float32, round). */
static int half_native(int op) {
    return op == NPK_OP_Cast || op == NPK_OP_CastLike || op == NPK_OP_Identity ||
           (npk_onnx_op_families(op) & NPK_OPF_CONTAINER);
}

int exec_call_op(npk_opctx *c) {
    npk_op_fn fn = npk_onnx_op_handler(c->node->op_id);
    int half = 0, nin = c->n_in + c->n_outer, rc = 0;
    if (!half_native(c->node->op_id))
        for (int k = 0; k < nin; k++)
            if (c->in[k] && c->in[k]->kind == NPK_KIND_TENSOR && npk_dtype_is_half(c->in[k]->dtype)) half = c->in[k]->dtype;
    if (!half) return fn(c);
    npk_tensor *wide = calloc((size_t)nin + 1, sizeof *wide);
    const npk_tensor **saved = calloc((size_t)nin + 1, sizeof *saved);
    if (!wide || !saved) rc = npk_err(NPK_ENOMEM, "out of memory");
    for (int k = 0; k < nin && !rc; k++) {
        const npk_tensor *t = saved[k] = c->in[k];
        if (!t || t->kind != NPK_KIND_TENSOR || !npk_dtype_is_half(t->dtype)) continue;
        wide[k] = *t;
        wide[k].name = NULL;
        wide[k].dtype = NPK_DT_FLOAT;
        wide[k].data = NULL;
        if (t->data) {
            int64_t n = npk_tensor_numel(t);
            float *f = malloc(sizeof(float) * (size_t)(n ? n : 1));
            if (!f) {
                rc = npk_err(NPK_ENOMEM, "out of memory");
                break;
            }
            for (int64_t i = 0; i < n; i++) f[i] = (float)npk_ref_onnx_get_f(t->data, t->dtype, i);
            wide[k].data = f;
        }
        c->in[k] = &wide[k];
    }
    if (!rc) rc = fn(c);
    for (int k = 0; k < nin && saved; k++) {
        c->in[k] = saved[k];
        if (wide) free(wide[k].data);
    }
    free(wide);
    free(saved);
    for (int k = 0; k < c->n_out && (rc == 0 || rc == NPK_SHAPE_UNKNOWN); k++) {
        npk_tensor *t = c->out[k];
        if (!t || t->kind != NPK_KIND_TENSOR || t->dtype != NPK_DT_FLOAT) continue;
        if (c->run && t->data) {
            int64_t n = npk_tensor_numel(t);
            uint16_t *h = malloc(sizeof(uint16_t) * (size_t)(n ? n : 1));
            if (!h) return npk_err(NPK_ENOMEM, "out of memory");
            for (int64_t i = 0; i < n; i++) npk_ref_onnx_set_f(h, half, i, ((const float *)t->data)[i]);
            free(t->data);
            t->data = h;
        }
        if (rc == 0) t->dtype = half;
    }
    return rc;
}

/* Constant folding at inference (dynamic shapes): a node whose inputs are all
 * constants or folded values, or a Shape/Size of a value with a known shape,
 * is computed once here when its outputs are small, so shape subgraphs
 * (Shape -> Gather -> Concat -> Reshape, as PyTorch and Paddle export them)
 * give every later node a known shape before partitioning. A CPU node whose
 * outputs are all folded does not run again at execution: it reads the folded
 * values (the same result); a failure here only skips the fold.
 *
 * A node computed from the graph's constants alone (no input of the run
 * reaches it, kconst) gives the same values in every run: its folded outputs
 * are kept in the graph (fold_cache) and later runs take them from there
 * (not with --golden, whose runs compute everything with the golden kernels). */
#define NPK_FOLD_MAX_ELEMS 65536
#define NPK_FOLD_CONST_MAX (1 << 22)

static int fold_cache_on(npk_exec *x) {
    npk_graph *g = x->g;
    if (npk_exec_golden(x)) return 0;
    if (g->fold_cache && g->fold_n != g->n_vals) { /* the graph grew: start again */
        for (size_t v = 0; v < g->fold_n; v++)
            if (g->fold_cache[v]) {
                npk_tensor_free(g->fold_cache[v]);
                free(g->fold_cache[v]);
            }
        free(g->fold_cache);
        g->fold_cache = NULL;
    }
    if (!g->fold_cache && (g->fold_cache = calloc(g->n_vals + 1, sizeof *g->fold_cache))) g->fold_n = g->n_vals;
    return g->fold_cache != NULL;
}

void exec_fold_set(npk_exec *x, int v, npk_tensor *t) {
    x->folded[v] = t;
    x->meta[v].data = t->data;
    x->meta[v].dtype = t->dtype;
    x->meta[v].rank = t->rank;
    memcpy(x->meta[v].dims, t->dims, sizeof t->dims);
}

static void fold_node(npk_exec *x, int n) {
    const npk_node *nd = &x->g->nodes[n];
    int shape_only = nd->op_id == NPK_OP_Shape || nd->op_id == NPK_OP_Size;
    int64_t total = 0;
    int kc = 1;
    if (npk_onnx_op_families(nd->op_id) & NPK_OPF_RANDOM) return; /* a draw is no constant */
    for (int k = 0; k < nd->n_in; k++) {
        int v = nd->in[k];
        if (v < 0) continue;
        if (x->meta[v].kind != NPK_KIND_TENSOR) return;
        if (!shape_only && !x->g->vals[v].konst && !x->folded[v] && !x->kconst[v]) return;
        if (!x->kconst[v]) kc = 0;
    }
    npk_tensor **cache = kc && nd->n_out && fold_cache_on(x) ? x->g->fold_cache : NULL;
    int cached = cache != NULL;
    for (int k = 0; k < nd->n_out && cached; k++)
        if (nd->out[k] >= 0 && !cache[nd->out[k]]) cached = 0;
    if (cached) {
        for (int k = 0; k < nd->n_out; k++)
            if (nd->out[k] >= 0) {
                exec_fold_set(x, nd->out[k], cache[nd->out[k]]);
                x->kconst[nd->out[k]] = 1;
            }
        return;
    }
    for (int k = 0; k < nd->n_out; k++) {
        int v = nd->out[k];
        if (v < 0) continue;
        if (!x->known[v] || x->meta[v].kind != NPK_KIND_TENSOR) return;
        total += npk_tensor_numel(&x->meta[v]);
    }
    /* a Constant (weights, as inlined exporters write them) is copied once into the graph's
     * cache up to NPK_FOLD_CONST_MAX elements, instead of once per run */
    if (total > (cache && nd->op_id == NPK_OP_Constant ? NPK_FOLD_CONST_MAX : NPK_FOLD_MAX_ELEMS) || !nd->n_out) return;
    npk_opctx c;
    npk_tensor outs[NPK_OP_MAX_IO];
    memset(outs, 0, sizeof outs);
    exec_fill_ctx(x, n, &c, 1);
    for (int k = 0; k < nd->n_out && k < NPK_OP_MAX_IO; k++) c.out[k] = nd->out[k] >= 0 ? &outs[k] : NULL;
    int rc = exec_call_op(&c);
    for (int k = 0; k < nd->n_out && k < NPK_OP_MAX_IO; k++) {
        int v = nd->out[k];
        npk_tensor *t = NULL;
        if (!rc && v >= 0 && outs[k].data && (t = malloc(sizeof *t))) {
            *t = outs[k];
            exec_fold_set(x, v, t);
            if (cache) { /* the graph owns it from now on */
                cache[v] = t;
                x->kconst[v] = 1;
            }
        } else {
            npk_tensor_free(&outs[k]);
        }
    }
}

/* t, value v's fold, is the graph's (fold_cache), not a run's or a plan's. */
static int fold_cached(const npk_graph *g, const npk_tensor *t, size_t v) {
    return g->fold_cache && v < g->fold_n && g->fold_cache[v] == t;
}

int exec_fold_shared(const npk_exec *x, int v) {
    return fold_cached(x->g, x->folded[v], (size_t)v);
}

/* Free a per-value folds array (a run's or a kept plan's) and the folds in it that the
 * graph's fold_cache does not hold. */
void exec_folds_free(const npk_graph *g, npk_tensor **folded) {
    for (size_t v = 0; folded && v < g->n_vals; v++)
        if (folded[v] && !fold_cached(g, folded[v], v)) {
            npk_tensor_free(folded[v]);
            free(folded[v]);
        }
    free(folded);
}

/* The same meta (what inference says about a value) in a and b. */
static int same_meta(const npk_tensor *a, const npk_tensor *b) {
    return a->kind == b->kind && a->dtype == b->dtype && a->rank == b->rank &&
           !memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)(a->rank > 0 && a->rank <= NPK_MAX_RANK ? a->rank : 0));
}

/* 1 when no node's inference read the data of a graph input of more than `small` elements:
 * the readers of such inputs are inferred again without that data (only they can see it: a
 * fold takes constants alone) and must give the same outputs. Called before the metadata drop
 * their data. */
static int infer_data_free(npk_exec *x, int64_t small) {
    npk_graph *g = x->g;
    for (size_t n = 0; n < g->n_nodes; n++) {
        const npk_node *nd = &g->nodes[n];
        npk_tensor hid[NPK_OP_MAX_IN];
        int any = 0, inferred = 1;
        for (int k = 0; k < nd->n_in && k < NPK_OP_MAX_IN; k++) {
            int v = nd->in[k];
            if (v < 0) continue;
            if (!x->known[v]) inferred = 0;
            else if (g->vals[v].graph_input >= 0 && !g->vals[v].konst && x->meta[v].data &&
                     npk_tensor_numel(&x->meta[v]) > small)
                any = 1;
        }
        if (!any || !inferred) continue;
        npk_opctx c;
        npk_tensor outs[NPK_OP_MAX_IO];
        memset(outs, 0, sizeof outs);
        exec_fill_ctx(x, (int)n, &c, 0);
        for (int k = 0; k < nd->n_in && k < NPK_OP_MAX_IN; k++) {
            int v = nd->in[k];
            if (v < 0 || g->vals[v].graph_input < 0 || g->vals[v].konst || npk_tensor_numel(&x->meta[v]) <= small) continue;
            hid[k] = x->meta[v];
            hid[k].data = NULL;
            c.in[k] = &hid[k];
        }
        for (int k = 0; k < nd->n_out && k < NPK_OP_MAX_IO; k++) c.out[k] = nd->out[k] >= 0 ? &outs[k] : NULL;
        int rc = exec_call_op(&c), same = rc == 0 || rc == NPK_SHAPE_UNKNOWN;
        for (int k = 0; k < nd->n_out && k < NPK_OP_MAX_IO; k++) {
            int v = nd->out[k];
            if (v >= 0 && same && (rc == 0) != (x->known[v] != 0)) same = 0;
            if (v >= 0 && same && rc == 0 && !same_meta(&outs[k], &x->meta[v])) same = 0;
            npk_tensor_free(&outs[k]);
        }
        if (same && rc == 0 && c.macs != x->rep->nodes[n].macs) same = 0;
        if (!same) return 0;
    }
    return 1;
}

int exec_infer_all(npk_exec *x) {
    npk_graph *g = x->g;
    for (size_t v = 0; v < g->n_vals; v++) {
        npk_tensor *m = &x->meta[v];
        const npk_tensor *src = g->vals[v].konst ? g->vals[v].konst : x->host[v];
        if (src) {
            x->kconst[v] = g->vals[v].konst != NULL ||
                           (x->in_const && g->vals[v].graph_input >= 0 && x->in_const[g->vals[v].graph_input]);
            m->kind = src->kind; /* a sequence / optional: its kind only, the elements stay on the host */
            m->dtype = src->dtype;
            m->rank = src->rank;
            memcpy(m->dims, src->dims, sizeof m->dims);
            m->data = src->data;
            x->known[v] = 1;
        }
    }
    for (size_t n = 0; n < g->n_nodes; n++) {
        const npk_node *nd = &g->nodes[n];
        int ok = 1, rc;
        for (int k = 0; k < nd->n_in; k++) {
            if (nd->in[k] >= 0 && !x->known[nd->in[k]]) ok = 0;
            /* sequences and optionals always have a known kind: every node they reach is checked here */
            else if (nd->in[k] >= 0 && (rc = exec_kind_check(x, (int)n, k, x->meta[nd->in[k]].kind))) return rc;
        }
        if (!ok) continue;
        npk_opctx c;
        exec_fill_ctx(x, (int)n, &c, 0);
        rc = exec_call_op(&c);
        if (rc == NPK_SHAPE_UNKNOWN) continue;
        if (rc) return npk_err_prefix(-rc, "node '%s' (%s)", nd->name, nd->op);
        for (int k = 0; k < nd->n_out; k++)
            if (nd->out[k] >= 0) x->known[nd->out[k]] = 1;
        x->rep->nodes[n].macs = c.macs;
        fold_node(x, (int)n);
    }
    if (x->plan_ok) x->plan_ok = infer_data_free(x, 16);
    /* from here on only constants carry data in the metadata */
    for (size_t v = 0; v < g->n_vals; v++)
        if (!g->vals[v].konst) x->meta[v].data = NULL;
    return 0;
}
