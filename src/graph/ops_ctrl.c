// SPDX-License-Identifier: MIT
/* Control flow and container operators (issue 14): If, Loop, Scan and
 * SequenceMap run their subgraphs (imported as graphs of their own, see
 * npk_graph.n_formal) through npk_graph_run on the CPU, binding the body's
 * declared inputs and, by name, the outer-scope values the node passes as
 * implicit trailing inputs; the sequence operators (SequenceConstruct, Empty,
 * Insert, At, Erase, Length, SplitToSequence, ConcatFromSequence) and the
 * optional operators (Optional, OptionalHasElement, OptionalGetElement) work on
 * npk_tensor's sequence and optional kinds.
 *
 * Shape inference looks through the bodies of If, Loop and Scan-9
 * (npk_graph_infer_body): an If's outputs are known when its constant
 * condition's branch, or both branches alike, give known shapes; a Loop's
 * loop-carried values and a Scan's states when the body keeps their shapes; a
 * Scan's outputs from the scan length. Everything else here (a Loop's scan
 * outputs: the trip count is data; sequences) says NPK_SHAPE_UNKNOWN and the
 * executor computes it on the CPU when the node runs. */
#include <stdlib.h>
#include <string.h>

#include "graph/exec.h"
#include "graph/ops.h"

#define IN(i) ((i) < c->n_in ? c->in[i] : NULL)

/* ---- helpers --------------------------------------------------------------------------- */

static int is_idx(int dt) { return dt == NPK_DT_INT32 || dt == NPK_DT_INT64; }

/* A scalar (or one-element) integer input's value. */
static int scalar_i(const npk_tensor *t, const char *what, int64_t *v) {
    if (!t || t->kind != NPK_KIND_TENSOR || !t->data || npk_tensor_numel(t) != 1)
        return npk_err(NPK_EINVAL, "%s must be a tensor of one element", what);
    if (!npk_dtype_is_int(t->dtype)) return npk_err(NPK_EINVAL, "%s must be an integer or bool, got %s", what, npk_dtype_name(t->dtype));
    *v = npk_ref_onnx_get_i(t->data, t->dtype, 0);
    return 0;
}

static int need_kind(const npk_tensor *t, int kind, const char *what) {
    static const char *const names[] = {"tensor", "sequence", "optional"};
    if (!t) return npk_err(NPK_EINVAL, "%s is missing", what);
    if (t->kind != kind)
        return npk_err(NPK_EINVAL, "%s must be a %s, got a %s", what, names[kind], names[t->kind >= 0 && t->kind <= 2 ? t->kind : 0]);
    return 0;
}

/* Move a value into an output slot (the slot's previous content is freed). */
static void put(npk_tensor *out, npk_tensor *v) {
    if (!out) {
        npk_tensor_free(v);
        return;
    }
    npk_tensor_free(out);
    *out = *v;
    memset(v, 0, sizeof *v);
}

/* A new sequence value with n (zeroed) elements. */
static int seq_new(npk_tensor *s, size_t n) {
    memset(s, 0, sizeof *s);
    s->kind = NPK_KIND_SEQUENCE;
    s->n_items = n;
    if (!(s->items = calloc(n + 1, sizeof(npk_tensor)))) return npk_err(NPK_ENOMEM, "out of memory");
    return 0;
}

/* Stack n tensors of equal type and shape along a new axis `axis` (0..rank). */
static int stack(npk_tensor *out, npk_tensor *const *el, size_t n, int axis, int dtype0, int rank0, const int64_t *dims0) {
    const npk_tensor *e0 = n ? el[0] : NULL;
    int dtype = e0 ? e0->dtype : dtype0, rank = e0 ? e0->rank : rank0;
    const int64_t *dims = e0 ? e0->dims : dims0;
    if (rank + 1 > NPK_MAX_RANK) return npk_err(NPK_EUNSUPPORTED, "stacked rank %d exceeds %d", rank + 1, NPK_MAX_RANK);
    if (axis < 0 || axis > rank) return npk_err(NPK_EINVAL, "axis %d out of range for rank %d", axis, rank + 1);
    for (size_t i = 1; i < n; i++) {
        if (el[i]->kind != NPK_KIND_TENSOR || el[i]->dtype != dtype || el[i]->rank != rank ||
            memcmp(el[i]->dims, dims, sizeof(int64_t) * (size_t)rank))
            return npk_err(NPK_EINVAL, "element %zu differs in type or shape from element 0 (they are stacked)", i);
    }
    int64_t od[NPK_MAX_RANK];
    for (int d = 0, k = 0; d <= rank; d++) od[d] = d == axis ? (int64_t)n : dims[k++];
    int rc = npk_tensor_alloc(out, NULL, dtype, rank + 1, od);
    if (rc) return rc;
    size_t es = npk_dtype_size(dtype);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= dims[d];
    for (int d = axis; d < rank; d++) inner *= dims[d];
    size_t ib = (size_t)inner * es;
    for (size_t i = 0; i < n; i++)
        for (int64_t o = 0; o < outer; o++)
            if (ib) memcpy((uint8_t *)out->data + ((size_t)o * n + i) * ib, (const uint8_t *)el[i]->data + (size_t)o * ib, ib);
    return 0;
}

/* Element idx of t along axis, the axis removed (keep: kept with size 1). */
static int take(npk_tensor *out, const npk_tensor *t, int axis, int64_t idx, int64_t len, int keep) {
    int64_t od[NPK_MAX_RANK];
    int r = 0;
    for (int d = 0; d < t->rank; d++) {
        if (d != axis) od[r++] = t->dims[d];
        else if (keep) od[r++] = len;
    }
    int rc = npk_tensor_alloc(out, NULL, t->dtype, r, od);
    if (rc) return rc;
    size_t es = npk_dtype_size(t->dtype);
    int64_t outer = 1, inner = 1, L = t->dims[axis];
    for (int d = 0; d < axis; d++) outer *= t->dims[d];
    for (int d = axis + 1; d < t->rank; d++) inner *= t->dims[d];
    size_t ib = (size_t)(inner * len) * es;
    for (int64_t o = 0; o < outer; o++)
        if (ib)
            memcpy((uint8_t *)out->data + (size_t)o * ib, (const uint8_t *)t->data + ((size_t)(o * L + idx) * (size_t)inner) * es, ib);
    return 0;
}

/* The values the subgraph `sub` of node c reads, in its input order: its declared inputs
 * f[0..nf-1], then the outer-scope values (by name, from the node's implicit inputs); with
 * kc, kc[i] = 1 for an outer-scope value the same in every run (npk_opctx.in_const). */
static int body_inputs(npk_opctx *c, npk_graph *sub, const npk_tensor *const *f, size_t nf, const npk_tensor **vals,
                       char *kc) {
    if (nf != sub->n_formal)
        return npk_err(NPK_EINVAL, "the body declares %zu inputs, the operator gives it %zu", sub->n_formal, nf);
    for (size_t i = 0; i < sub->n_in; i++) {
        const char *nm = sub->in_desc[i].name;
        const npk_tensor *v = NULL;
        if (i < nf) {
            v = f[i];
        } else {
            for (int k = c->n_in; k < c->n_in + c->n_outer && !v; k++)
                if (c->node->in[k] >= 0 && !strcmp(c->graph->vals[c->node->in[k]].name, nm)) {
                    v = c->in[k];
                    if (kc) kc[i] = c->in_const && c->in_const[k];
                }
        }
        if (!v) return npk_err(NPK_EINVAL, "the body reads '%s', which has no value", nm);
        vals[i] = v;
    }
    return 0;
}

/* Run the subgraph `sub` of node c with its declared inputs f[0..nf-1] and the
 * outer-scope values it reads. */
static int run_body(npk_opctx *c, npk_graph *sub, const npk_tensor *const *f, size_t nf, npk_tensor **outs, size_t *n) {
    *outs = NULL;
    *n = 0;
    npk_tensor *ins = calloc(sub->n_in + 1, sizeof *ins);
    const npk_tensor **vals = calloc(sub->n_in + 1, sizeof *vals);
    char *kc = calloc(sub->n_in + 1, 1);
    if (!ins || !vals || !kc) {
        free(ins);
        free(vals);
        free(kc);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    int rc = body_inputs(c, sub, f, nf, vals, kc);
    for (size_t i = 0; !rc && i < sub->n_in; i++) {
        ins[i] = *vals[i];
        ins[i].name = (char *)sub->in_desc[i].name; /* bound by name; npk_graph_run copies, never frees, its inputs */
    }
    free(vals);
    if (!rc) {
        npk_run_opts o;
        memset(&o, 0, sizeof o);
        o.device = "cpu";
        o.golden = c->golden;
        o.qdq = c->qdq; /* the run's QDQ mode holds inside bodies too */
        /* random operators in the body: each body run draws from its own seed, the run's seed
         * mixed with the count of random-node and body executions before it (docs/onnx.md) */
        o.seed = c->run_seed ^ ((c->draws ? ++*c->draws : 0) * 0xbf58476d1ce4e5b9ull);
        rc = c->body ? c->body->run(sub, &o, ins, sub->n_in, kc, outs, n)
                     : npk_err(NPK_EUNSUPPORTED, "a control-flow body runs only in the executor");
    }
    free(ins);
    free(kc);
    return rc;
}

/* The signature of a body's shape inference: what npk_graph_infer_body reads of its inputs
 * (kind, type, shape, and the data of tensors that have data at inference: constants and
 * folded values) and the options that reach its nodes. *len = 0: too much data to keep
 * (more than 64 KiB), no memo. */
typedef struct memo_head {
    size_t key_len, n_out;
} memo_head;

static unsigned char *memo_key(const npk_graph *sub, const npk_tensor *const *vals, const npk_run_opts *o, size_t *len) {
    size_t n = sizeof(int) * 2 + sizeof(uint64_t), data = 0;
    for (size_t i = 0; i < sub->n_in; i++) {
        const npk_tensor *v = vals[i];
        n += sizeof(int) * 4 + sizeof v->dims;
        if (v->kind == NPK_KIND_TENSOR && v->data) data += npk_tensor_bytes(v);
    }
    *len = 0;
    if (data > ((size_t)1 << 16)) return NULL;
    unsigned char *k = malloc(n + data), *p = k;
    if (!k) return NULL;
    memcpy(p, &o->golden, sizeof(int)), p += sizeof(int);
    memcpy(p, &o->qdq, sizeof(int)), p += sizeof(int);
    memcpy(p, &o->seed, sizeof(uint64_t)), p += sizeof(uint64_t);
    for (size_t i = 0; i < sub->n_in; i++) {
        const npk_tensor *v = vals[i];
        int h[4] = {v->kind, v->dtype, v->rank, v->kind == NPK_KIND_TENSOR && v->data};
        int64_t d[NPK_MAX_RANK] = {0};
        memcpy(d, v->dims, sizeof(int64_t) * (size_t)(v->rank > 0 && v->rank <= NPK_MAX_RANK ? v->rank : 0));
        memcpy(p, h, sizeof h), p += sizeof h;
        memcpy(p, d, sizeof d), p += sizeof d;
        if (h[3] && npk_tensor_bytes(v)) memcpy(p, v->data, npk_tensor_bytes(v)), p += npk_tensor_bytes(v);
    }
    *len = (size_t)(p - k);
    return k;
}

/* Shape inference through the body `sub` (issue 14): the descriptions of its outputs, known[k]
 * where inference found them; f[] as for run_body, without data where a value changes from one
 * body run to the next. *nout = the body's output count. An error inside the body (shapes it
 * refuses) only leaves the outputs unknown: the run reports it if the body runs.
 * Memo (issue 15 point 2): the result depends only on the inputs' signature (memo_key) and the
 * body, so the body keeps its last result (npk_graph.infer_memo) and an inference with the
 * same signature copies it instead of inferring again: every run of silero-vad inferred both
 * branches of its If (hundreds of nodes) before. */
static int infer_body(npk_opctx *c, npk_graph *sub, const npk_tensor *const *f, size_t nf, npk_tensor **out, int **known) {
    const npk_tensor **vals = calloc(sub->n_in + 1, sizeof *vals);
    *out = calloc(sub->n_out + 1, sizeof **out);
    *known = calloc(sub->n_out + 1, sizeof **known);
    npk_tensor *vm = calloc(sub->n_in + 1, sizeof *vm);
    int rc = !vals || !vm || !*out || !*known ? npk_err(NPK_ENOMEM, "out of memory") : body_inputs(c, sub, f, nf, vals, NULL);
    /* the body sees the data of inputs of at most 16 elements (flags, scalars, shapes: what
     * shapes depend on); larger ones by type and shape alone, so that the memo serves every
     * run with the same shapes (a shape that depends on a large value's data, as NonZero's,
     * is left unknown here and computed when the body runs) */
    for (size_t i = 0; !rc && i < sub->n_in; i++) {
        vm[i] = *vals[i];
        vm[i].name = NULL;
        if (vm[i].kind != NPK_KIND_TENSOR || npk_tensor_numel(&vm[i]) > 16) vm[i].data = NULL;
        vals[i] = &vm[i];
    }
    if (!rc) {
        npk_run_opts o;
        memset(&o, 0, sizeof o);
        o.golden = c->golden;
        o.qdq = c->qdq;
        o.seed = c->run_seed;
        size_t klen = 0;
        unsigned char *key = memo_key(sub, vals, &o, &klen);
        const memo_head *mh = sub->infer_memo;
        const unsigned char *mk = mh ? (const unsigned char *)(mh + 1) : NULL;
        if (key && mh && mh->key_len == klen && mh->n_out == sub->n_out && !memcmp(mk, key, klen)) {
            memcpy(*out, mk + klen, sizeof **out * sub->n_out);
            memcpy(*known, mk + klen + sizeof **out * sub->n_out, sizeof **known * sub->n_out);
        } else {
            rc = c->body ? c->body->infer(sub, &o, vals, *out, *known)
                         : npk_err(NPK_EUNSUPPORTED, "a control-flow body is inferred only in the executor");
            if (rc && rc != -NPK_ENOMEM) {
                memset(*known, 0, (sub->n_out + 1) * sizeof **known);
                rc = 0;
            }
            memo_head *m = NULL;
            size_t sz = sizeof *m + klen + (sizeof **out + sizeof **known) * sub->n_out;
            if (!rc && key && (m = malloc(sz))) { /* outputs without data: plain structs */
                m->key_len = klen;
                m->n_out = sub->n_out;
                unsigned char *p = (unsigned char *)(m + 1);
                memcpy(p, key, klen);
                memcpy(p + klen, *out, sizeof **out * sub->n_out);
                memcpy(p + klen + sizeof **out * sub->n_out, *known, sizeof **known * sub->n_out);
                free(sub->infer_memo);
                sub->infer_memo = m;
            }
        }
        free(key);
    }
    free(vals);
    free(vm);
    if (rc) {
        free(*out);
        free(*known);
        *out = NULL;
        *known = NULL;
    }
    return rc;
}

/* A value's description without its data (it changes from one body run to the next). */
static npk_tensor meta_of(const npk_tensor *t) {
    npk_tensor m;
    memset(&m, 0, sizeof m);
    if (!t) return m;
    m.kind = t->kind;
    m.dtype = t->dtype;
    m.rank = t->rank;
    memcpy(m.dims, t->dims, sizeof m.dims);
    return m;
}

static int same_meta(const npk_tensor *a, const npk_tensor *b) {
    return a->kind == NPK_KIND_TENSOR && b->kind == NPK_KIND_TENSOR && a->dtype == b->dtype && a->rank == b->rank &&
           !memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank);
}

/* Output k of the node described by t (a tensor), for inference. */
static int set_out(npk_opctx *c, int k, const npk_tensor *t) { return npk_opctx_out(c, k, t->dtype, t->rank, t->dims); }

static void free_outs(npk_tensor *o, size_t n) {
    for (size_t i = 0; o && i < n; i++) npk_tensor_free(&o[i]);
    free(o);
}

static npk_graph *body_attr(const npk_opctx *c, const char *name) {
    const npk_attr *a = npk_node_attr(c->node, name);
    return a && a->type == NPK_ATTR_GRAPH ? a->g : NULL;
}

/* ---- If ------------------------------------------------------------------------------------ */

int npk_op_if(npk_opctx *c) {
    npk_graph *tb = body_attr(c, "then_branch"), *eb = body_attr(c, "else_branch");
    if (!tb || !eb) return npk_err(NPK_EINVAL, "If needs the graph attributes then_branch and else_branch");
    if (!c->run) { /* a constant condition picks its branch, else both branches must give the same shapes */
        int pick = IN(0) && IN(0)->data && npk_tensor_numel(IN(0)) == 1 ? npk_ref_onnx_get_i(IN(0)->data, IN(0)->dtype, 0) != 0 : -1;
        npk_tensor *o[2] = {NULL, NULL};
        int *kn[2] = {NULL, NULL}, ok = 1, rc = 0;
        for (int b = 0; b < 2 && !rc; b++) {
            npk_graph *br = b ? eb : tb;
            if (pick == b) continue; /* a constant condition: only the branch it takes (b 0 then, 1 else) */
            if ((size_t)c->n_out != br->n_out) ok = 0;
            else rc = infer_body(c, br, NULL, 0, &o[b], &kn[b]);
        }
        for (int k = 0; ok && !rc && k < c->n_out; k++) {
            const npk_tensor *t = NULL;
            for (int b = 0; b < 2; b++) {
                if (!o[b]) continue;
                if (!kn[b][k] || o[b][k].kind != NPK_KIND_TENSOR || (t && !same_meta(t, &o[b][k]))) ok = 0;
                t = &o[b][k];
            }
            if (!t) ok = 0;
        }
        for (int k = 0; ok && !rc && k < c->n_out; k++) rc = set_out(c, k, o[o[0] ? 0 : 1] + k);
        for (int b = 0; b < 2; b++) {
            free(o[b]);
            free(kn[b]);
        }
        return rc ? rc : ok ? 0 : NPK_SHAPE_UNKNOWN;
    }
    int64_t cond;
    int rc = scalar_i(IN(0), "cond", &cond);
    if (rc) return rc;
    npk_graph *b = cond ? tb : eb;
    npk_tensor *o;
    size_t n;
    if ((rc = run_body(c, b, NULL, 0, &o, &n))) return npk_err_prefix(-rc, "%s", cond ? "then_branch" : "else_branch");
    if (n != (size_t)c->n_out) {
        free_outs(o, n);
        return npk_err(NPK_EINVAL, "the %s branch has %zu outputs, the node %d", cond ? "then" : "else", n, c->n_out);
    }
    for (size_t i = 0; i < n; i++) put(c->out[i], &o[i]);
    free_outs(o, n);
    return 0;
}

/* ---- Loop ---------------------------------------------------------------------------------- */

typedef struct acc {
    npk_tensor **el;
    size_t n, cap;
} acc;

static int acc_push(acc *a, npk_tensor *v) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        npk_tensor **ne = realloc(a->el, cap * sizeof *ne);
        if (!ne) return npk_err(NPK_ENOMEM, "out of memory");
        a->el = ne;
        a->cap = cap;
    }
    npk_tensor *t = malloc(sizeof *t);
    if (!t) return npk_err(NPK_ENOMEM, "out of memory");
    *t = *v;
    memset(v, 0, sizeof *v);
    a->el[a->n++] = t;
    return 0;
}

static void acc_free(acc *a, size_t n) {
    for (size_t k = 0; a && k < n; k++) {
        for (size_t i = 0; i < a[k].n; i++) {
            npk_tensor_free(a[k].el[i]);
            free(a[k].el[i]);
        }
        free(a[k].el);
    }
    free(a);
}

/* Scan outputs of a body: the per-iteration values stacked on axis (reverse:
 * the last iteration first). With no iteration the shape comes from the body's
 * declaration where it has one. */
static int acc_stack(npk_tensor *out, acc *a, int axis, int reverse, const npk_value_desc *d) {
    if (!out) return 0;
    if (reverse)
        for (size_t i = 0; i < a->n / 2; i++) {
            npk_tensor *t = a->el[i];
            a->el[i] = a->el[a->n - 1 - i];
            a->el[a->n - 1 - i] = t;
        }
    for (size_t i = 0; i < a->n; i++)
        if (a->el[i]->kind != NPK_KIND_TENSOR) return npk_err(NPK_EINVAL, "a scan output must be a tensor");
    int64_t dims[NPK_MAX_RANK] = {0};
    int rank = 0, dtype = d && d->dtype && npk_dtype_size(d->dtype) ? d->dtype : NPK_DT_FLOAT;
    if (!a->n && d && d->rank >= 0) {
        rank = d->rank;
        for (int k = 0; k < rank; k++) dims[k] = d->dims[k] < 0 ? 0 : d->dims[k];
    }
    npk_tensor t;
    memset(&t, 0, sizeof t);
    int rc = stack(&t, a->el, a->n, axis < 0 ? axis + (a->n ? a->el[0]->rank : rank) + 1 : axis, dtype, rank, dims);
    if (rc) return rc;
    put(out, &t);
    return 0;
}

int npk_op_loop(npk_opctx *c) {
    npk_graph *body = body_attr(c, "body");
    if (!body) return npk_err(NPK_EINVAL, "Loop needs the graph attribute body");
    if (c->n_in < 2) return npk_err(NPK_EINVAL, "Loop takes M, cond and the loop-carried values (%d inputs given)", c->n_in);
    size_t N = (size_t)c->n_in - 2;
    if (body->n_out < 1 + N) return npk_err(NPK_EINVAL, "the body has %zu outputs, fewer than 1 + %zu loop-carried", body->n_out, N);
    size_t K = body->n_out - 1 - N;
    if ((size_t)c->n_out != N + K)
        return npk_err(NPK_EINVAL, "Loop has %d outputs; its body gives %zu loop-carried and %zu scan outputs", c->n_out, N, K);
    if (!c->run) { /* the loop-carried values keep their shapes through the body (scan outputs: the trip count is data) */
        if (K) return NPK_SHAPE_UNKNOWN;
        npk_tensor it = meta_of(NULL), cv = meta_of(NULL), *st = calloc(N + 1, sizeof *st), *o = NULL;
        const npk_tensor **f = calloc(N + 3, sizeof *f);
        int *kn = NULL, ok = 1, rc = !st || !f ? npk_err(NPK_ENOMEM, "out of memory") : 0;
        it.dtype = NPK_DT_INT64;
        cv.dtype = NPK_DT_BOOL;
        f[0] = &it;
        f[1] = &cv;
        for (size_t j = 0; !rc && j < N; j++) {
            if (!c->in[2 + j]) ok = 0;
            st[j] = meta_of(c->in[2 + j]);
            f[2 + j] = &st[j];
        }
        if (!rc && ok) rc = infer_body(c, body, f, N + 2, &o, &kn);
        for (size_t j = 0; !rc && ok && j < N; j++)
            if (!kn[1 + j] || !same_meta(&o[1 + j], &st[j])) ok = 0;
        for (size_t j = 0; !rc && ok && j < N; j++) rc = set_out(c, (int)j, &st[j]);
        free(st);
        free(f);
        free(o);
        free(kn);
        return rc ? rc : ok ? 0 : NPK_SHAPE_UNKNOWN;
    }
    int64_t M = -1, cond = 1;
    int rc = 0;
    if (IN(0) && (rc = scalar_i(IN(0), "M", &M))) return rc;
    if (IN(1) && (rc = scalar_i(IN(1), "cond", &cond))) return rc;
    npk_tensor *state = calloc(N + 1, sizeof *state);
    acc *scans = calloc(K + 1, sizeof *scans);
    const npk_tensor **f = calloc(N + 3, sizeof *f);
    npk_tensor it, cv;
    int64_t one = 1;
    (void)one;
    memset(&it, 0, sizeof it);
    memset(&cv, 0, sizeof cv);
    if (!state || !scans || !f || npk_tensor_alloc(&it, NULL, NPK_DT_INT64, 0, NULL) ||
        npk_tensor_alloc(&cv, NULL, NPK_DT_BOOL, 0, NULL)) {
        rc = npk_err(NPK_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t j = 0; j < N && !rc; j++) {
        if (!c->in[2 + j]) rc = npk_err(NPK_EINVAL, "loop-carried input %zu is missing", j);
        else rc = npk_tensor_copy(&state[j], c->in[2 + j]);
    }
    if (rc) goto out;
    for (int64_t i = 0; (M < 0 || i < M) && cond; i++) {
        ((int64_t *)it.data)[0] = i;
        ((uint8_t *)cv.data)[0] = 1;
        f[0] = &it;
        f[1] = &cv;
        for (size_t j = 0; j < N; j++) f[2 + j] = &state[j];
        npk_tensor *o;
        size_t n;
        if ((rc = run_body(c, body, f, N + 2, &o, &n))) {
            rc = npk_err_prefix(-rc, "iteration %lld", (long long)i);
            goto out;
        }
        rc = scalar_i(&o[0], "the body's condition output", &cond);
        for (size_t j = 0; j < N && !rc; j++) {
            npk_tensor_free(&state[j]);
            state[j] = o[1 + j];
            memset(&o[1 + j], 0, sizeof o[1 + j]);
        }
        for (size_t k = 0; k < K && !rc; k++) rc = acc_push(&scans[k], &o[1 + N + k]);
        free_outs(o, n);
        if (rc) goto out;
    }
    for (size_t j = 0; j < N; j++) put(c->out[j], &state[j]);
    for (size_t k = 0; k < K && !rc; k++) rc = acc_stack(c->out[N + k], &scans[k], 0, 0, &body->out_desc[1 + N + k]);
out:
    for (size_t j = 0; state && j < N; j++) npk_tensor_free(&state[j]);
    free(state);
    acc_free(scans, K);
    free(f);
    npk_tensor_free(&it);
    npk_tensor_free(&cv);
    return rc;
}

/* ---- Scan ---------------------------------------------------------------------------------- */

/* One Scan over N state values and M scan inputs (Scan-9 semantics); the K
 * scan outputs stacked into outs[N..]. */
static int scan_core(npk_opctx *c, npk_graph *body, size_t N, size_t M, const npk_tensor *const *st_in,
                     const npk_tensor *const *sc_in, const int64_t *in_axes, const int64_t *in_dirs,
                     const int64_t *out_axes, const int64_t *out_dirs, npk_tensor **outs) {
    size_t K = body->n_out >= N ? body->n_out - N : 0;
    int rc = 0;
    int64_t L = -1;
    int ax[NPK_OP_MAX_IO];
    for (size_t j = 0; j < M; j++) {
        const npk_tensor *t = sc_in[j];
        if ((rc = need_kind(t, NPK_KIND_TENSOR, "scan input"))) return rc;
        if ((rc = npk_opc_axis(in_axes ? in_axes[j] : 0, t->rank, &ax[j]))) return rc;
        if (L >= 0 && t->dims[ax[j]] != L)
            return npk_err(NPK_EINVAL, "scan inputs have different lengths (%lld and %lld)", (long long)L, (long long)t->dims[ax[j]]);
        L = t->dims[ax[j]];
    }
    if (L < 0) L = 0;
    npk_tensor *state = calloc(N + 1, sizeof *state), *slices = calloc(M + 1, sizeof *slices);
    acc *scans = calloc(K + 1, sizeof *scans);
    const npk_tensor **f = calloc(N + M + 1, sizeof *f);
    if (!state || !scans || !f || !slices) {
        rc = npk_err(NPK_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t j = 0; j < N && !rc; j++) rc = npk_tensor_copy(&state[j], st_in[j]);
    for (int64_t t = 0; t < L && !rc; t++) {
        for (size_t j = 0; j < M && !rc; j++) {
            npk_tensor_free(&slices[j]);
            rc = take(&slices[j], sc_in[j], ax[j], in_dirs && in_dirs[j] ? L - 1 - t : t, 1, 0);
        }
        if (rc) break;
        for (size_t j = 0; j < N; j++) f[j] = &state[j];
        for (size_t j = 0; j < M; j++) f[N + j] = &slices[j];
        npk_tensor *o;
        size_t n;
        if ((rc = run_body(c, body, f, N + M, &o, &n))) {
            rc = npk_err_prefix(-rc, "iteration %lld", (long long)t);
            break;
        }
        for (size_t j = 0; j < N; j++) {
            npk_tensor_free(&state[j]);
            state[j] = o[j];
            memset(&o[j], 0, sizeof o[j]);
        }
        for (size_t k = 0; k < K && !rc; k++) rc = acc_push(&scans[k], &o[N + k]);
        free_outs(o, n);
    }
    if (rc) goto out;
    for (size_t j = 0; j < N; j++) put(outs[j], &state[j]);
    for (size_t k = 0; k < K && !rc; k++)
        rc = acc_stack(outs[N + k], &scans[k], out_axes ? (int)out_axes[k] : 0, out_dirs ? (int)out_dirs[k] : 0,
                       &body->out_desc[N + k]);
out:
    for (size_t j = 0; state && j < N; j++) npk_tensor_free(&state[j]);
    for (size_t j = 0; slices && j < M; j++) npk_tensor_free(&slices[j]);
    free(state);
    free(slices);
    acc_free(scans, K);
    free(f);
    return rc;
}

/* Scan-9 shape inference: the states keep their shapes through the body; scan output k is the
 * body's per-iteration output with the scan length inserted at scan_output_axes[k]. */
static int scan_infer(npk_opctx *c, npk_graph *body, size_t N, size_t M, size_t K, const int64_t *in_axes,
                      const int64_t *out_axes) {
    npk_tensor m[NPK_OP_MAX_IO], *o = NULL;
    const npk_tensor *f[NPK_OP_MAX_IO];
    int *kn = NULL, ok = 1, rc = 0;
    int64_t L = -1;
    for (size_t j = 0; j < N + M; j++) {
        const npk_tensor *t = c->in[j];
        if (!t || t->kind != NPK_KIND_TENSOR) return NPK_SHAPE_UNKNOWN;
        m[j] = meta_of(t);
        f[j] = &m[j];
        if (j < N) continue;
        int ax;
        if (npk_opc_axis(in_axes ? in_axes[j - N] : 0, t->rank, &ax)) return NPK_SHAPE_UNKNOWN;
        if (L >= 0 && t->dims[ax] != L) return NPK_SHAPE_UNKNOWN; /* the run names the mismatch */
        L = t->dims[ax];
        for (int d = ax; d + 1 < t->rank; d++) m[j].dims[d] = m[j].dims[d + 1]; /* one slice */
        m[j].rank--;
    }
    if (L <= 0) return NPK_SHAPE_UNKNOWN;
    if ((rc = infer_body(c, body, f, N + M, &o, &kn))) return rc;
    for (size_t j = 0; ok && j < N; j++)
        if (!kn[j] || !same_meta(&o[j], &m[j])) ok = 0;
    for (size_t k = 0; ok && k < K; k++) {
        npk_tensor *p = &o[N + k];
        int64_t a = out_axes ? out_axes[k] : 0;
        if (a < 0) a += p->rank + 1;
        if (!kn[N + k] || p->kind != NPK_KIND_TENSOR || a < 0 || a > p->rank || p->rank + 1 > NPK_MAX_RANK) {
            ok = 0;
            break;
        }
        for (int d = p->rank; d > a; d--) p->dims[d] = p->dims[d - 1];
        p->dims[a] = L;
        p->rank++;
    }
    for (size_t j = 0; ok && !rc && j < N + K; j++) rc = set_out(c, (int)j, j < N ? &m[j] : &o[j]);
    free(o);
    free(kn);
    return rc ? rc : ok ? 0 : NPK_SHAPE_UNKNOWN;
}

/* An INTS attribute of n entries or none (NULL); an error when its length is wrong. */
static int ints_n(const npk_opctx *c, const char *name, size_t n, const int64_t **v) {
    size_t k = npk_node_attr_ints(c->node, name, v);
    if (!k) {
        *v = NULL;
        return 0;
    }
    if (k != n) return npk_err(NPK_EINVAL, "attribute %s has %zu entries, expected %zu", name, k, n);
    return 0;
}

int npk_op_scan(npk_opctx *c) {
    npk_graph *body = body_attr(c, "body");
    if (!body) return npk_err(NPK_EINVAL, "Scan needs the graph attribute body");
    int64_t Mi = npk_node_attr_i(c->node, "num_scan_inputs", -1);
    int v8 = c->opset < 9, first = v8 ? 1 : 0;
    if (Mi < 1 || Mi > c->n_in - first) return npk_err(NPK_EINVAL, "num_scan_inputs %lld does not fit %d inputs", (long long)Mi, c->n_in);
    size_t M = (size_t)Mi, N = (size_t)(c->n_in - first) - M;
    if (body->n_out < N) return npk_err(NPK_EINVAL, "the body has %zu outputs, fewer than its %zu state values", body->n_out, N);
    size_t K = body->n_out - N;
    if ((size_t)c->n_out != N + K) return npk_err(NPK_EINVAL, "Scan has %d outputs; its body gives %zu", c->n_out, N + K);
    if (M + N > NPK_OP_MAX_IO) return npk_err(NPK_EUNSUPPORTED, "too many Scan inputs");
    const int64_t *in_axes, *in_dirs, *out_axes, *out_dirs;
    int rc;
    if ((rc = ints_n(c, v8 ? "directions" : "scan_input_directions", M, &in_dirs))) return rc;
    if ((rc = ints_n(c, "scan_input_axes", M, &in_axes))) return rc;
    if ((rc = ints_n(c, "scan_output_axes", K, &out_axes))) return rc;
    if ((rc = ints_n(c, "scan_output_directions", K, &out_dirs))) return rc;
    if (!c->run) return v8 ? NPK_SHAPE_UNKNOWN : scan_infer(c, body, N, M, K, in_axes, out_axes);
    const npk_tensor *st[NPK_OP_MAX_IO], *sc[NPK_OP_MAX_IO];
    for (size_t j = 0; j < N; j++)
        if ((rc = need_kind(st[j] = c->in[first + (int)j], NPK_KIND_TENSOR, "state input"))) return rc;
    for (size_t j = 0; j < M; j++)
        if ((rc = need_kind(sc[j] = c->in[first + (int)(N + j)], NPK_KIND_TENSOR, "scan input"))) return rc;
    if (!v8) return scan_core(c, body, N, M, st, sc, in_axes, in_dirs, out_axes, out_dirs, c->out);
    /* Scan-8: axis 0 is the batch, each batch entry scanned along its axis 0 */
    int64_t B = -1;
    for (size_t j = 0; j < N + M; j++) {
        const npk_tensor *t = j < N ? st[j] : sc[j - N];
        if (t->rank < 1 || (B >= 0 && t->dims[0] != B)) return npk_err(NPK_EINVAL, "Scan-8 inputs need one batch dimension");
        B = t->dims[0];
    }
    if (IN(0)) {
        if (!is_idx(IN(0)->dtype)) return npk_err(NPK_EINVAL, "sequence_lens must be int32/int64");
        for (int64_t b = 0; b < npk_tensor_numel(IN(0)); b++)
            if (M && npk_ref_onnx_get_i(IN(0)->data, IN(0)->dtype, b) != sc[0]->dims[1])
                return npk_err(NPK_EUNSUPPORTED, "Scan-8 with sequence_lens shorter than the scan inputs");
    }
    size_t NO = N + K;
    acc *per = calloc(NO + 1, sizeof *per);
    npk_tensor *bt = calloc(N + M + 1, sizeof *bt), *bo = calloc(NO + 1, sizeof *bo);
    npk_tensor **bop = calloc(NO + 1, sizeof *bop);
    if (!per || !bt || !bo || !bop) rc = npk_err(NPK_ENOMEM, "out of memory");
    for (int64_t b = 0; b < B && !rc; b++) {
        const npk_tensor *bst[NPK_OP_MAX_IO], *bsc[NPK_OP_MAX_IO];
        for (size_t j = 0; j < N + M && !rc; j++) {
            npk_tensor_free(&bt[j]);
            rc = take(&bt[j], j < N ? st[j] : sc[j - N], 0, b, 1, 0);
            if (j < N) bst[j] = &bt[j];
            else bsc[j - N] = &bt[j];
        }
        for (size_t k = 0; k < NO; k++) bop[k] = c->out[k] ? &bo[k] : NULL;
        if (!rc) rc = scan_core(c, body, N, M, bst, bsc, NULL, in_dirs, NULL, NULL, bop);
        for (size_t k = 0; k < NO && !rc; k++)
            if (bop[k]) rc = acc_push(&per[k], &bo[k]);
        if (rc) rc = npk_err_prefix(-rc, "batch entry %lld", (long long)b);
    }
    for (size_t k = 0; k < NO && !rc; k++) rc = acc_stack(c->out[k], &per[k], 0, 0, NULL);
    for (size_t j = 0; bt && j < N + M; j++) npk_tensor_free(&bt[j]);
    for (size_t k = 0; bo && k < NO; k++) npk_tensor_free(&bo[k]);
    free(bt);
    free(bo);
    free(bop);
    acc_free(per, NO);
    return rc;
}

/* ---- sequences ----------------------------------------------------------------------------- */

static int seq_pos(const npk_tensor *p, size_t n, int insert, size_t *out) {
    int64_t v;
    int rc = scalar_i(p, "position", &v);
    if (rc) return rc;
    int64_t lim = (int64_t)n + (insert ? 1 : 0);
    if (v < 0) v += (int64_t)n;
    if (v < 0 || v >= lim)
        return npk_err(NPK_EINVAL, "position %lld out of range for a sequence of %zu", (long long)npk_ref_onnx_get_i(p->data, p->dtype, 0), n);
    *out = (size_t)v;
    return 0;
}

int npk_op_sequence_construct(npk_opctx *c) {
    if (!c->run) return NPK_SHAPE_UNKNOWN;
    npk_tensor s;
    int rc = seq_new(&s, (size_t)c->n_in);
    for (int i = 0; i < c->n_in && !rc; i++) {
        if ((rc = need_kind(c->in[i], NPK_KIND_TENSOR, "input"))) break;
        if (i && c->in[i]->dtype != c->in[0]->dtype) rc = npk_err(NPK_EINVAL, "inputs 0 and %d have different element types", i);
        else rc = npk_tensor_copy(&s.items[i], c->in[i]);
    }
    if (!rc) put(c->out[0], &s);
    npk_tensor_free(&s);
    return rc;
}

int npk_op_sequence_empty(npk_opctx *c) {
    if (!c->run) return NPK_SHAPE_UNKNOWN;
    npk_tensor s;
    int rc = seq_new(&s, 0);
    if (!rc) put(c->out[0], &s);
    return rc;
}

int npk_op_sequence_insert(npk_opctx *c) {
    if (!c->run) return NPK_SHAPE_UNKNOWN;
    int rc;
    if ((rc = need_kind(IN(0), NPK_KIND_SEQUENCE, "input_sequence")) || (rc = need_kind(IN(1), NPK_KIND_TENSOR, "tensor")))
        return rc;
    const npk_tensor *q = IN(0);
    size_t n = q->n_items, at = n;
    if (IN(2) && (rc = seq_pos(IN(2), n, 1, &at))) return rc;
    if (n && q->items[0].dtype != IN(1)->dtype)
        return npk_err(NPK_EINVAL, "tensor of type %s into a sequence of %s", npk_dtype_name(IN(1)->dtype), npk_dtype_name(q->items[0].dtype));
    npk_tensor s;
    rc = seq_new(&s, n + 1);
    for (size_t i = 0, k = 0; i <= n && !rc; i++)
        rc = npk_tensor_copy(&s.items[i], i == at ? IN(1) : &q->items[k++]);
    if (!rc) put(c->out[0], &s);
    npk_tensor_free(&s);
    return rc;
}

int npk_op_sequence_at(npk_opctx *c) {
    if (!c->run) return NPK_SHAPE_UNKNOWN;
    int rc;
    size_t at = 0;
    if ((rc = need_kind(IN(0), NPK_KIND_SEQUENCE, "input_sequence")) || (rc = seq_pos(IN(1), IN(0)->n_items, 0, &at))) return rc;
    npk_tensor t;
    memset(&t, 0, sizeof t);
    if ((rc = npk_tensor_copy(&t, &IN(0)->items[at]))) return rc;
    put(c->out[0], &t);
    return 0;
}

int npk_op_sequence_erase(npk_opctx *c) {
    if (!c->run) return NPK_SHAPE_UNKNOWN;
    int rc;
    if ((rc = need_kind(IN(0), NPK_KIND_SEQUENCE, "input_sequence"))) return rc;
    size_t n = IN(0)->n_items, at = n ? n - 1 : 0;
    if (!n) return npk_err(NPK_EINVAL, "erase from an empty sequence");
    if (IN(1) && (rc = seq_pos(IN(1), n, 0, &at))) return rc;
    npk_tensor s;
    rc = seq_new(&s, n - 1);
    for (size_t i = 0, k = 0; i < n && !rc; i++)
        if (i != at) rc = npk_tensor_copy(&s.items[k++], &IN(0)->items[i]);
    if (!rc) put(c->out[0], &s);
    npk_tensor_free(&s);
    return rc;
}

int npk_op_sequence_length(npk_opctx *c) {
    int rc;
    if ((rc = npk_opctx_out(c, 0, NPK_DT_INT64, 0, NULL))) return rc;
    if (!c->run) return 0;
    if ((rc = need_kind(IN(0), NPK_KIND_SEQUENCE, "input_sequence"))) return rc;
    ((int64_t *)c->out[0]->data)[0] = (int64_t)IN(0)->n_items;
    return 0;
}

int npk_op_split_to_sequence(npk_opctx *c) {
    if (!c->run) return NPK_SHAPE_UNKNOWN;
    int rc, axis;
    const npk_tensor *x = IN(0), *sp = IN(1);
    if ((rc = need_kind(x, NPK_KIND_TENSOR, "input"))) return rc;
    if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "axis", 0), x->rank, &axis))) return rc;
    int keep = (int)npk_node_attr_i(c->node, "keepdims", 1);
    int64_t L = x->dims[axis];
    int64_t *len = NULL;
    size_t n = 0;
    if (!sp) {
        n = (size_t)L;
        len = calloc(n + 1, sizeof *len);
        for (size_t i = 0; len && i < n; i++) len[i] = 1;
    } else {
        if (!is_idx(sp->dtype)) return npk_err(NPK_EINVAL, "split must be int32/int64");
        keep = 1;
        if (sp->rank == 0) {
            int64_t s = npk_ref_onnx_get_i(sp->data, sp->dtype, 0);
            if (s <= 0) return npk_err(NPK_EINVAL, "split %lld must be positive", (long long)s);
            n = (size_t)((L + s - 1) / s);
            len = calloc(n + 1, sizeof *len);
            for (size_t i = 0; len && i < n; i++) len[i] = (int64_t)i + 1 < (int64_t)n ? s : L - s * (int64_t)(n - 1);
        } else {
            n = (size_t)npk_tensor_numel(sp);
            len = calloc(n + 1, sizeof *len);
            int64_t sum = 0;
            for (size_t i = 0; len && i < n; i++) {
                len[i] = npk_ref_onnx_get_i(sp->data, sp->dtype, (int64_t)i);
                if (len[i] < 0) {
                    free(len);
                    return npk_err(NPK_EINVAL, "split entry %zu is negative", i);
                }
                sum += len[i];
            }
            if (len && sum != L) {
                free(len);
                return npk_err(NPK_EINVAL, "split lengths add up to %lld, the axis has %lld", (long long)sum, (long long)L);
            }
        }
    }
    if (!len) return npk_err(NPK_ENOMEM, "out of memory");
    npk_tensor s;
    rc = seq_new(&s, n);
    int64_t at = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        rc = take(&s.items[i], x, axis, at, len[i], keep);
        at += len[i];
    }
    free(len);
    if (!rc) put(c->out[0], &s);
    npk_tensor_free(&s);
    return rc;
}

int npk_op_concat_from_sequence(npk_opctx *c) {
    if (!c->run) return NPK_SHAPE_UNKNOWN;
    int rc;
    const npk_tensor *q = IN(0);
    if ((rc = need_kind(q, NPK_KIND_SEQUENCE, "input_sequence"))) return rc;
    if (!q->n_items) return npk_err(NPK_EINVAL, "ConcatFromSequence of an empty sequence (no element type or shape)");
    int new_axis = (int)npk_node_attr_i(c->node, "new_axis", 0), axis;
    const npk_tensor *e0 = &q->items[0];
    if ((rc = npk_opc_axis(npk_node_attr_i(c->node, "axis", 0), e0->rank + (new_axis ? 1 : 0), &axis))) return rc;
    npk_tensor **el = calloc(q->n_items + 1, sizeof *el);
    if (!el) return npk_err(NPK_ENOMEM, "out of memory");
    for (size_t i = 0; i < q->n_items; i++) el[i] = &q->items[i];
    npk_tensor t;
    memset(&t, 0, sizeof t);
    if (new_axis) {
        rc = stack(&t, el, q->n_items, axis, 0, 0, NULL);
    } else {
        /* concatenate along an existing axis: equal shapes but for the axis */
        int64_t od[NPK_MAX_RANK], total = 0;
        for (size_t i = 0; i < q->n_items && !rc; i++) {
            const npk_tensor *e = el[i];
            if (e->dtype != e0->dtype || e->rank != e0->rank) rc = npk_err(NPK_EINVAL, "element %zu differs in type or rank", i);
            for (int d = 0; d < e0->rank && !rc; d++)
                if (d != axis && e->dims[d] != e0->dims[d]) rc = npk_err(NPK_EINVAL, "element %zu differs in dimension %d", i, d);
            total += e->dims[axis];
        }
        if (!rc) {
            memcpy(od, e0->dims, sizeof od);
            od[axis] = total;
            rc = npk_tensor_alloc(&t, NULL, e0->dtype, e0->rank, od);
        }
        if (!rc) {
            size_t es = npk_dtype_size(e0->dtype);
            int64_t outer = 1, inner = 1;
            for (int d = 0; d < axis; d++) outer *= e0->dims[d];
            for (int d = axis + 1; d < e0->rank; d++) inner *= e0->dims[d];
            uint8_t *dst = t.data;
            for (int64_t o = 0; o < outer; o++)
                for (size_t i = 0; i < q->n_items; i++) {
                    size_t b = (size_t)(el[i]->dims[axis] * inner) * es;
                    if (b) memcpy(dst, (const uint8_t *)el[i]->data + (size_t)o * b, b);
                    dst += b;
                }
        }
    }
    free(el);
    if (!rc) put(c->out[0], &t);
    npk_tensor_free(&t);
    return rc;
}

/* SequenceMap: the body once per element of the first input; further inputs
 * give their element i when they are sequences, else the whole tensor. */
int npk_op_sequence_map(npk_opctx *c) {
    npk_graph *body = body_attr(c, "body");
    if (!body) return npk_err(NPK_EINVAL, "SequenceMap needs the graph attribute body");
    if ((size_t)c->n_out != body->n_out) return npk_err(NPK_EINVAL, "SequenceMap has %d outputs, its body %zu", c->n_out, body->n_out);
    if (!c->run) return NPK_SHAPE_UNKNOWN;
    int rc;
    if ((rc = need_kind(IN(0), NPK_KIND_SEQUENCE, "input_sequence"))) return rc;
    size_t n = IN(0)->n_items, NI = (size_t)c->n_in, NO = (size_t)c->n_out;
    for (size_t j = 1; j < NI; j++)
        if (c->in[j] && c->in[j]->kind == NPK_KIND_SEQUENCE && c->in[j]->n_items != n)
            return npk_err(NPK_EINVAL, "input %zu has %zu elements, input_sequence %zu", j, c->in[j]->n_items, n);
    npk_tensor *res = calloc(NO + 1, sizeof *res);
    const npk_tensor **f = calloc(NI + 1, sizeof *f);
    if (!res || !f) rc = npk_err(NPK_ENOMEM, "out of memory");
    for (size_t k = 0; k < NO && !rc; k++) rc = seq_new(&res[k], n);
    for (size_t i = 0; i < n && !rc; i++) {
        for (size_t j = 0; j < NI; j++) f[j] = c->in[j] && c->in[j]->kind == NPK_KIND_SEQUENCE ? &c->in[j]->items[i] : c->in[j];
        npk_tensor *o;
        size_t no;
        if ((rc = run_body(c, body, f, NI, &o, &no))) {
            rc = npk_err_prefix(-rc, "element %zu", i);
            break;
        }
        for (size_t k = 0; k < NO; k++) {
            res[k].items[i] = o[k];
            memset(&o[k], 0, sizeof o[k]);
        }
        free_outs(o, no);
    }
    for (size_t k = 0; k < NO && !rc; k++) put(c->out[k], &res[k]);
    for (size_t k = 0; res && k < NO; k++) npk_tensor_free(&res[k]);
    free(res);
    free(f);
    return rc;
}

/* ---- optionals ----------------------------------------------------------------------------- */

int npk_op_optional(npk_opctx *c) {
    if (!c->run) return NPK_SHAPE_UNKNOWN;
    npk_tensor o;
    memset(&o, 0, sizeof o);
    o.kind = NPK_KIND_OPTIONAL;
    if (IN(0)) {
        if (IN(0)->kind == NPK_KIND_OPTIONAL) return npk_err(NPK_EINVAL, "an optional of an optional");
        if (!(o.items = calloc(1, sizeof *o.items))) return npk_err(NPK_ENOMEM, "out of memory");
        o.n_items = 1;
        int rc = npk_tensor_copy(&o.items[0], IN(0));
        if (rc) {
            npk_tensor_free(&o);
            return rc;
        }
    } else if (!npk_node_attr(c->node, "type")) {
        return npk_err(NPK_EINVAL, "Optional without an input needs the attribute type");
    }
    put(c->out[0], &o);
    return 0;
}

int npk_op_optional_has_element(npk_opctx *c) {
    int rc;
    if ((rc = npk_opctx_out(c, 0, NPK_DT_BOOL, 0, NULL))) return rc;
    if (!c->run) return 0;
    const npk_tensor *x = IN(0);
    ((uint8_t *)c->out[0]->data)[0] = x && (x->kind != NPK_KIND_OPTIONAL || x->n_items);
    return 0;
}

int npk_op_optional_get_element(npk_opctx *c) {
    if (!c->run) return NPK_SHAPE_UNKNOWN;
    const npk_tensor *x = IN(0);
    if (!x) return npk_err(NPK_EINVAL, "input is missing");
    if (x->kind == NPK_KIND_OPTIONAL && !x->n_items) return npk_err(NPK_EINVAL, "the optional is empty");
    npk_tensor t;
    memset(&t, 0, sizeof t);
    int rc = npk_tensor_copy(&t, x->kind == NPK_KIND_OPTIONAL ? &x->items[0] : x);
    if (rc) return rc;
    put(c->out[0], &t);
    return 0;
}
