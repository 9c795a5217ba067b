// SPDX-License-Identifier: MIT
/* The graph executor's dispatch: a run partitions the graph over the device
 * and the CPU, plans guest memory and runs node by node (the planning,
 * staging and inference steps are exec_plan.c, exec_stage.c, exec_infer.c;
 * their shared state src/graph/exec_int.h). */
#include "graph/exec_int.h"
#include "graph/cstream.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npukit/trace.h"
static double now_ms(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* The end of a run: the values on the host dropped, then the arrays freed, or given back to
 * the plan the run held, or kept as the graph's plan (ok: the run succeeded). */
static void exec_free(npk_exec *x, int ok) {
    npk_graph *g = x->g;
    if (x->host && x->borrowed)
        for (size_t v = 0; v < g->n_vals; v++) exec_host_drop(x, (int)v);
    if (x->be) {
        if (x->arena) npk_port_free(x->be->port(x->be), x->arena);
        x->be->close(x->be);
    }
    if (x->plan) {
        exec_plan_leave(x, x->meta_changed);
        return;
    }
    if (ok) exec_plan_adopt(x); /* takes the arrays it keeps */
    free(x->known0);
    free(x->uses0);
    free(x->key);
    free(x->host);
    free(x->borrowed);
    free(x->kconst);
    free(x->meta);
    free(x->known);
    free(x->uses_left);
    free(x->place);
    free(x->fused_into);
    free(x->cpu_qdq);
    free(x->chain);
    free(x->direct);
    exec_folds_free(g, x->folded);
    free(x->dev_writer);
    free(x->consumer);
    free(x->views);
    free(x->scr);
    free(x->bufs);
}

static void release_value(npk_exec *x, int v) {
    if (--x->uses_left[v] <= 0 && !x->g->vals[v].graph_output) exec_host_drop(x, v);
}

static void release_inputs(npk_exec *x, int n) {
    const npk_node *nd = &x->g->nodes[n];
    for (int k = 0; k < nd->n_in; k++)
        if (nd->in[k] >= 0) release_value(x, nd->in[k]);
    for (int i = 0; i < 2; i++)
        if (x->direct[n][i] >= 0) release_value(x, x->direct[n][i]);
}

/* Timing-only runs leave a CPU node's outputs zero when they are known tensors
 * with more than 4096 elements in all and none is int64: small values and
 * int64 ones may be shapes or indices that later nodes read, so they are
 * computed. */
static int timing_skip(npk_exec *x, int n) {
    if (!x->opts->timing_only) return 0;
    const npk_node *nd = &x->g->nodes[n];
    int64_t elems = 0;
    for (int k = 0; k < nd->n_out; k++) {
        int v = nd->out[k];
        if (v < 0) continue;
        if (!x->known[v] || x->meta[v].kind != NPK_KIND_TENSOR || x->meta[v].dtype == NPK_DT_INT64) return 0;
        elems += npk_tensor_numel(&x->meta[v]);
    }
    return elems > 4096;
}

/* A CPU node whose outputs were all folded at inference: its outputs are the
 * folded values, which npk_exec_host serves in place (no host copy, nothing per run).
 * Returns 1 when it applied. */
static int run_folded(npk_exec *x, int n) {
    const npk_node *nd = &x->g->nodes[n];
    int any = 0;
    for (int k = 0; k < nd->n_out; k++) {
        int v = nd->out[k];
        if (v < 0) continue;
        if (!x->folded[v] || x->host[v]) return 0;
        any = 1;
    }
    if (!any) return 0;
    x->rep->cpu_macs += x->rep->nodes[n].macs;
    return 1;
}

/* Reshape, Flatten, Squeeze, Unsqueeze and Identity keep the bytes of their
 * input: when this node is the last reader of an input the run owns, the
 * output takes the input's buffer instead of a copy. Returns 1 when it
 * applied, 0 to run the node as usual. */
static int run_view(npk_exec *x, int n, npk_opctx *c, npk_tensor *outs) {
    const npk_node *nd = &x->g->nodes[n];
    int op = nd->op_id;
    if (op != NPK_OP_Reshape && op != NPK_OP_Flatten && op != NPK_OP_Squeeze && op != NPK_OP_Unsqueeze &&
        op != NPK_OP_Identity)
        return 0;
    int v = nd->in[0];
    if (nd->n_out != 1 || nd->out[0] < 0 || v < 0 || !x->host[v] || x->borrowed[v] || x->uses_left[v] != 1 ||
        x->g->vals[v].graph_output || x->dev_writer[v] >= 0 || x->host[v]->kind != NPK_KIND_TENSOR ||
        npk_dtype_is_half(x->host[v]->dtype) || !x->host[v]->data)
        return 0;
    c->run = 0; /* the shape only */
    int rc = npk_onnx_op_handler(op)(c);
    c->run = 1;
    if (rc || outs[0].dtype != x->host[v]->dtype || npk_tensor_numel(&outs[0]) != npk_tensor_numel(x->host[v]))
        return 0; /* the usual run reports any error */
    outs[0].data = x->host[v]->data;
    x->host[v]->data = NULL;
    return 1;
}

/* An element-wise operator whose output may take the buffer of an input of the same type and
 * shape that no later node reads (npk_opctx.reuse): every kernel behind these handlers, fast
 * and golden, reads element i of that input before it writes element i of the output, so the
 * result is the same; the output's lines are then the ones just read (no second buffer, no
 * allocation). Returns the host tensor to offer, or NULL. */
static npk_tensor *inplace_input(npk_exec *x, int n) {
    const npk_node *nd = &x->g->nodes[n];
    int nin;
    switch (nd->op_id) {
    case NPK_OP_Add:
    case NPK_OP_Sub:
    case NPK_OP_Mul:
    case NPK_OP_Div: nin = 2; break;
    case NPK_OP_Relu:
    case NPK_OP_LeakyRelu:
    case NPK_OP_Clip:
    case NPK_OP_Sigmoid:
    case NPK_OP_Tanh:
    case NPK_OP_HardSigmoid:
    case NPK_OP_HardSwish:
    case NPK_OP_BatchNormalization: nin = 1; break;
    default: return NULL;
    }
    if (nd->n_out < 1 || nd->out[0] < 0 || x->opts->timing_only) return NULL;
    for (int k = 0; k < nin && k < nd->n_in; k++)
        if (exec_can_take(x, nd->in[k])) return x->host[nd->in[k]];
    return NULL;
}


static int run_cpu_node(npk_exec *x, int n) {
    const npk_node *nd = &x->g->nodes[n];
    npk_opctx c;
    npk_tensor outs[NPK_OP_MAX_IO];
    int rc;
    if (timing_skip(x, n)) { /* shapes and MACs by inference, outputs zero */
        for (int k = 0; k < nd->n_in; k++) /* the inputs still come to the host (same staged bytes) */
            if (nd->in[k] >= 0 && !npk_exec_host(x, nd->in[k])) return -NPK_EINVAL;
        exec_fill_ctx(x, n, &c, 0);
        rc = npk_onnx_op_handler(nd->op_id)(&c);
        for (int k = 0; k < nd->n_out && !rc; k++)
            if (nd->out[k] >= 0 && !npk_exec_out_host(x, nd->out[k])) rc = npk_err(NPK_ENOMEM, "out of memory");
        if (rc) return npk_err_prefix(-rc, "node '%s' (%s)", nd->name, nd->op);
        x->rep->nodes[n].macs = c.macs;
        x->rep->cpu_macs += c.macs;
        return 0;
    }
    memset(outs, 0, sizeof outs[0] * (size_t)(nd->n_out < NPK_OP_MAX_IO ? nd->n_out : NPK_OP_MAX_IO)); /* the slots used */
    exec_fill_ctx(x, n, &c, 1);
    for (int k = 0; k < nd->n_in; k++) {
        if (nd->in[k] < 0) continue;
        const npk_tensor *h = npk_exec_host(x, nd->in[k]);
        if (!h) return -NPK_EINVAL;
        if ((rc = exec_kind_check(x, n, k, h->kind))) return rc;
        c.in[k] = h;
    }
    for (int k = 0; k < nd->n_out && k < NPK_OP_MAX_IO; k++) c.out[k] = nd->out[k] >= 0 ? &outs[k] : NULL;
    char kc[NPK_OP_MAX_IN];
    for (int k = 0; k < nd->n_in && k < NPK_OP_MAX_IN; k++) kc[k] = nd->in[k] >= 0 && x->kconst[nd->in[k]];
    c.in_const = kc;
    const exec_chain *fold = x->chain[n].fold_end ? &x->chain[n] : NULL; /* a Conv with folded weights */
    if (fold) {
        c.in[1] = fold->fw, c.in[2] = fold->fb, kc[1] = kc[2] = 1;
        if (c.n_in < 3) c.n_in = 3;
    }
    if (!run_view(x, n, &c, outs)) {
        c.reuse = inplace_input(x, n);
        rc = exec_call_op(&c);
        if (c.reused) { /* output 0 holds the input's buffer now (or, on failure, gives it back) */
            if (rc) outs[0].data = NULL;
            else c.reuse->data = NULL;
        }
    } else {
        rc = 0;
    }
    if (rc == NPK_SHAPE_UNKNOWN) rc = npk_err(NPK_EINVAL, "output shape could not be determined");
    for (int k = 0; k < nd->n_out && k < NPK_OP_MAX_IO; k++) {
        int v = fold && k == 0 ? x->g->nodes[fold->fold_end].out[0] : nd->out[k];
        if (v < 0) continue;
        if (rc || (!outs[k].data && outs[k].kind == NPK_KIND_TENSOR)) {
            npk_tensor_free(&outs[k]);
            if (!rc) rc = npk_err(NPK_EINVAL, "output %d was not produced", k);
            continue;
        }
        npk_tensor *t = malloc(sizeof *t);
        if (!t) {
            npk_tensor_free(&outs[k]);
            rc = npk_err(NPK_ENOMEM, "out of memory");
            continue;
        }
        *t = outs[k];
        free(t->name);
        t->name = strdup(x->g->vals[v].name);
        x->host[v] = t;
        /* the runtime shape is authoritative (data-dependent shapes); a known value produced in
         * another shape than inferred: the run's plan does not hold (exec_cache.c) */
        if (x->known[v] && !x->meta_changed &&
            (x->meta[v].kind != t->kind || x->meta[v].dtype != t->dtype || x->meta[v].rank != t->rank ||
             memcmp(x->meta[v].dims, t->dims, sizeof t->dims)))
            x->meta_changed = 1;
        x->meta[v].kind = t->kind;
        x->meta[v].dtype = t->dtype;
        x->meta[v].rank = t->rank;
        memcpy(x->meta[v].dims, t->dims, sizeof t->dims);
        x->known[v] = 1;
    }
    if (rc) return npk_err_prefix(-rc, "node '%s' (%s)", nd->name, nd->op);
    x->rep->nodes[n].macs = c.macs;
    x->rep->cpu_macs += c.macs;
    return 0;
}

/* A float Conv/MatMul left on the CPU that is the centre of a DequantizeLinear ->
 * op -> QuantizeLinear group runs as the QLinear operator it denotes (the
 * integer arithmetic of ONNX Runtime and of the devices), its Q/DQ nodes folded in. */
static void cpu_qdq_place(npk_exec *x, int n, npk_node_report *nr) {
    const npk_node *nd = &x->g->nodes[n];
    if (nd->op_id != NPK_OP_Conv && nd->op_id != NPK_OP_MatMul && nd->op_id != NPK_OP_Gemm && nd->op_id != NPK_OP_Softmax) return;
    char why[160];
    npk_qdq q;
    if (!npk_qdq_match(x, n, &q, why, sizeof why)) {
        if (nd->op_id == NPK_OP_Softmax) return;
        size_t at = strlen(nr->why);
        if (npk_exec_qdq_mode(x) == NPK_QDQ_ORT && npk_qdq_shape(x, n) && !strstr(nr->why, "--qdq=ort") && at + 2 < sizeof nr->why)
            snprintf(nr->why + at, sizeof nr->why - at, "%s%.100s", at ? "; " : "", why);
        return;
    }
    if (npk_qdq_commit(x, &q)) return;
    x->cpu_qdq[n] = q;
    size_t at = strlen(nr->why);
    if (q.softmax && at + 2 < sizeof nr->why)
        snprintf(nr->why + at, sizeof nr->why - at, "%s--qdq=ort: DQ -> Softmax -> Q run on the CPU as ONNX Runtime's QLinearSoftmax",
                 at ? "; " : "");
    else if (at + 2 < sizeof nr->why)
        snprintf(nr->why + at, sizeof nr->why - at, "%sDQ -> %s%s run on the CPU as %s (integer)", at ? "; " : "", nd->op,
                 q.fout ? "" : " -> Q",
                 nd->op_id == NPK_OP_Conv ? "QLinearConv" : nd->op_id == NPK_OP_Gemm ? "QGemm" : q.fout ? "MatMulIntegerToFloat" : "QLinearMatMul");
}

void npk_graph_set_progress(npk_graph *g, void (*fn)(void *ctx, size_t done, size_t total), void *ctx) {
    g->progress = fn;
    g->progress_ctx = ctx;
}

/* How the operators run and infer control-flow bodies (npk_opctx.body). */
static const npk_body_fns body_fns = {npk_graph_run_body, npk_graph_infer_body};

/* The executor's per-value and per-node arrays. Shape inference alone (full = 0:
 * a control-flow body's npk_graph_infer_body) needs no placement, fusion or
 * device state. On failure exec_free releases what was taken. */
static void exec_init_state(npk_exec *x, npk_graph *g, const npk_run_opts *opts, const char *in_const, npk_run_report *rep) {
    memset(x, 0, sizeof *x);
    clock_gettime(CLOCK_MONOTONIC, &x->t0);
    x->g = g;
    x->opts = opts;
    x->in_const = in_const;
    x->rep = rep;
    x->cur_node = -1;
    x->body = &body_fns;
}

static int exec_init(npk_exec *x, npk_graph *g, const npk_run_opts *opts, const char *in_const, npk_run_report *rep,
                     int full) {
    exec_init_state(x, g, opts, in_const, rep);
    size_t nv = g->n_vals, nn = g->n_nodes;
    rep->nodes = calloc(nn + 1, sizeof(npk_node_report));
    x->meta = calloc(nv + 1, sizeof(npk_tensor));
    x->known = calloc(nv + 1, 1);
    x->host = calloc(nv + 1, sizeof(npk_tensor *));
    x->folded = calloc(nv + 1, sizeof(npk_tensor *));
    x->borrowed = calloc(nv + 1, 1);
    x->kconst = calloc(nv + 1, 1);
    if (!rep->nodes || !x->meta || !x->known || !x->host || !x->folded || !x->borrowed || !x->kconst)
        return npk_err(NPK_ENOMEM, "out of memory");
    if (!full) return 0;
    x->uses_left = calloc(nv + 1, sizeof(int));
    x->place = calloc(nn + 1, sizeof(int));
    x->fused_into = calloc(nn + 1, sizeof(int));
    x->cpu_qdq = calloc(nn + 1, sizeof(npk_qdq));
    x->chain = calloc(nn + 1, sizeof(exec_chain));
    x->direct = calloc(nn + 1, sizeof *x->direct);
    x->dev_writer = calloc(nv + 1, sizeof(int));
    if (!x->uses_left || !x->place || !x->fused_into || !x->cpu_qdq || !x->chain || !x->direct || !x->dev_writer)
        return npk_err(NPK_ENOMEM, "out of memory");
    rep->n_nodes = nn;
    for (size_t i = 0; i < nn; i++) {
        rep->nodes[i].name = g->nodes[i].name;
        rep->nodes[i].op = g->nodes[i].op;
        x->fused_into[i] = -1;
        x->cpu_qdq[i].node = -1;
        x->chain[i].x_val = -1;
        x->direct[i][0] = x->direct[i][1] = -1;
    }
    for (size_t v = 0; v < nv; v++) {
        x->uses_left[v] = g->vals[v].n_uses;
        x->dev_writer[v] = -1;
    }
    return 0;
}

/* Shape inference of a control-flow body (exec.h). */
int npk_graph_infer_body(npk_graph *g, const npk_run_opts *opts, const npk_tensor *const *in, npk_tensor *out, int *known) {
    npk_exec X, *x = &X;
    npk_run_report rep;
    npk_run_opts o = {0};
    if (opts) o = *opts;
    o.device = "cpu";
    memset(&rep, 0, sizeof rep);
    int rc = exec_init(x, g, &o, NULL, &rep, 0);
    for (size_t i = 0; !rc && i < g->n_in; i++) {
        int v = g->in_vals[i];
        if (v < 0 || !in[i]) continue;
        x->meta[v].kind = in[i]->kind;
        x->meta[v].dtype = in[i]->dtype;
        x->meta[v].rank = in[i]->rank;
        memcpy(x->meta[v].dims, in[i]->dims, sizeof in[i]->dims);
        x->meta[v].data = in[i]->kind == NPK_KIND_TENSOR ? in[i]->data : NULL; /* borrowed; infer_all clears it */
        x->known[v] = 1;
    }
    if (!rc) rc = exec_infer_all(x);
    for (size_t k = 0; !rc && k < g->n_out; k++) {
        int v = g->out_vals[k];
        known[k] = v >= 0 && x->known[v];
        memset(&out[k], 0, sizeof out[k]);
        if (!known[k]) continue;
        out[k].kind = x->meta[v].kind;
        out[k].dtype = x->meta[v].dtype;
        out[k].rank = x->meta[v].rank;
        memcpy(out[k].dims, x->meta[v].dims, sizeof out[k].dims);
    }
    exec_free(x, 0);
    free(rep.nodes);
    return rc;
}

/* Open the run's device (its graph row's backend), or take its note when it takes no node. */
static int open_device(npk_exec *x, const char *dev) {
    npk_run_report *rep = x->rep;
    const npk_dev_graph *row = npk_dev_graph_find(dev);
    int rc = 0;
    if (row && row->open) rc = row->open(&x->be, x->opts, rep->note, sizeof rep->note);
    else if (row && row->note) snprintf(rep->note, sizeof rep->note, "%s", row->note);
    if (rc || !x->be) return rc;
    npk_port *p = x->be->port(x->be);
    rep->device_hz = npk_port_hz(p);
    rep->peak_macs_per_cycle = x->be->peak_macs;
    if (x->opts->trace) npk_trace_process(x->opts->trace, x->be->name, rep->device_hz);
    return 0;
}

/* Place node n: on the device (its backend's place says yes), on the CPU (with the
 * reason), or on the CPU as one integer group; nr->why says why not the device. */
static int place_node(npk_exec *x, size_t n, const char *dev) {
    npk_node_report *nr = &x->rep->nodes[n];
    const npk_node *nd = &x->g->nodes[n];
    int known = 1;
    for (int k = 0; k < nd->n_out; k++)
        if (nd->out[k] >= 0 && !x->known[nd->out[k]]) known = 0;
    for (int k = 0; k < nd->n_in; k++)
        if (nd->in[k] >= 0 && !x->known[nd->in[k]]) known = 0;
    if (!x->be) {
        static const char on_cpu[] = "--device cpu", no_nodes[] = "the device takes no ONNX nodes (see the note)";
        _Static_assert(sizeof no_nodes <= sizeof nr->why, "why holds the reason");
        if (!strcmp(dev, "cpu")) memcpy(nr->why, on_cpu, sizeof on_cpu); /* per node and run: no printf */
        else memcpy(nr->why, no_nodes, sizeof no_nodes);
        nr->offload_limit = 1;
        if (known) cpu_qdq_place(x, (int)n, nr);
        return 0;
    }
    if (!known) {
        snprintf(nr->why, sizeof nr->why, "shape depends on run-time data");
        return 0;
    }
    for (int k = 0; k < nd->n_in; k++)
        if (nd->in[k] >= 0 && x->meta[nd->in[k]].kind != NPK_KIND_TENSOR) {
            snprintf(nr->why, sizeof nr->why, "sequence/optional values are handled on the host");
            return 0;
        }
    /* --qdq=ort: a Softmax ONNX Runtime runs as QLinearSoftmax stays on the CPU, run as that */
    npk_qdq sq;
    char swhy[160];
    int r = nd->op_id == NPK_OP_Softmax && npk_exec_qdq_mode(x) == NPK_QDQ_ORT && npk_qdq_match(x, (int)n, &sq, swhy, sizeof swhy)
                ? 0
                : x->be->place(x->be, x, (int)n, nr->why, sizeof nr->why, nr->device_op, sizeof nr->device_op);
    if (r < 0) return npk_err_prefix(-r, "partitioning node '%s' (%s)", nd->name, nd->op);
    x->place[n] = r ? NPK_PLACE_DEVICE : NPK_PLACE_CPU;
    if (!r) cpu_qdq_place(x, (int)n, nr);
    return 0;
}

/* Partition the graph over the device and the CPU (nodes folded into a device node
 * last), and check that a compiled stream to replay has a device. */
static int partition(npk_exec *x, const char *dev) {
    const npk_graph *g = x->g;
    npk_run_report *rep = x->rep;
    size_t nn = g->n_nodes;
    int rc;
    for (size_t n = 0; n < nn; n++) {
        unsigned f = npk_onnx_op_families(g->nodes[n].op_id);
        rep->nodes[n].int_product = (f & NPK_OPF_PRODUCT) && ((f & NPK_OPF_INTEGER) || npk_qdq_shape(x, (int)n));
    }
    for (size_t n = 0; n < nn; n++)
        if (x->fused_into[n] < 0 && (rc = place_node(x, n, dev))) return rc;
    exec_fuse_cpu(x);
    for (size_t n = 0; n < nn; n++)
        if (x->chain[n].skip) {
            static const char in_chain[] = "; run in one pass by the HardSwish chain's Mul",
                              in_conv[] = "; folded into the weights of the Conv before it",
                              in_q[] = "; run in one pass with the QuantizeLinear before it";
            const char *s = x->chain[n].skip == EXEC_SKIP_FOLD ? in_conv : x->chain[n].skip == EXEC_SKIP_QDQ ? in_q : in_chain;
            size_t at = strlen(rep->nodes[n].why), len = strlen(s) + 1;
            if (at + len <= sizeof rep->nodes[n].why) memcpy(rep->nodes[n].why + at, s, len);
        }
    for (size_t n = 0; n < nn; n++)
        if (x->fused_into[n] >= 0) {
            x->place[n] = NPK_PLACE_FUSED;
            snprintf(rep->nodes[n].why, sizeof rep->nodes[n].why, "folded into '%s' (quantized subgraph run as an integer op)",
                     g->nodes[x->fused_into[n]].name);
        }
    for (size_t n = 0; n < nn; n++) rep->nodes[n].place = x->place[n];
    npk_cstream *cs = x->opts->stream;
    if (cs && cs->replay) {
        cs->cursor = 0;
        if (!x->be)
            return rep->note[0] ? npk_err(NPK_EINVAL, "the compiled stream cannot replay: %s", rep->note)
                                : npk_err(NPK_EINVAL, "a compiled stream replays on a device (v0, shell), not on '%s'", dev);
    }
    return 0;
}

/* Run device node n: stage in the views it is the first to read, run it on the backend. */
static int run_device_node(npk_exec *x, size_t n) {
    npk_node_report *nr = &x->rep->nodes[n];
    const npk_node *nd = &x->g->nodes[n];
    npk_cstream *cs = x->opts->stream;
    int rc;
    for (int i = 0; i < x->n_views; i++)
        if (!x->views[i].write && x->views[i].node_first == (int)n && !x->views[i].valid && (rc = exec_stage_in(x, i)))
            return rc;
    rc = x->be->run(x->be, x, (int)n, nr);
    if (!rc && cs && cs->replay && cs->cursor < cs->n_recs && cs->recs[cs->cursor].node <= (uint32_t)n)
        rc = npk_err(NPK_EFORMAT, "the compiled stream has more records for this node than it ran (record %zu)", cs->cursor);
    if (rc) return npk_err_prefix(-rc, "node '%s' (%s) on %s", nd->name, nd->op, x->be->name);
    x->rep->device_macs += nr->macs;
    return 0;
}

/* Run node n where it was placed (a fused node does nothing: its device node works). */
static int run_node(npk_exec *x, size_t n) {
    npk_node_report *nr = &x->rep->nodes[n];
    const npk_node *nd = &x->g->nodes[n];
    int rc;
    if (x->place[n] == NPK_PLACE_FUSED) return 0;
    if (x->place[n] == NPK_PLACE_DEVICE) return run_device_node(x, n);
    if (x->chain[n].skip) return 0; /* the chain's last node computes it */
    if (x->chain[n].x_val >= 0) {
        if ((rc = exec_run_chain(x, (int)n)))
            return npk_err_prefix(-rc, "node '%s' (%s) as a HardSwish chain", nd->name, nd->op);
        return 0;
    }
    if (x->chain[n].qdq_end) {
        if ((rc = exec_run_qdq(x, (int)n)))
            return npk_err_prefix(-rc, "node '%s' (%s) with the DequantizeLinear after it", nd->name, nd->op);
        return 0;
    }
    if (x->cpu_qdq[n].node >= 0) {
        uint64_t macs = 0;
        if ((rc = npk_qdq_run_cpu(x, &x->cpu_qdq[n], &macs)))
            return npk_err_prefix(-rc, "node '%s' (%s) as a quantized group", nd->name, nd->op);
        nr->macs = macs;
        x->rep->cpu_macs += macs;
        return 0;
    }
    return run_folded(x, (int)n) ? 0 : run_cpu_node(x, (int)n);
}

/* Node n's host event in the trace, on the simulated clock (never the wall clock:
 * traces are deterministic). With a device: the device cycles the node spanned on
 * the port (CPU nodes take none). Without one: nodes laid out in order, one cycle each. */
static void trace_node(npk_exec *x, size_t n, uint64_t cy0, double *run_uj) {
    const npk_node *nd = &x->g->nodes[n];
    const npk_node_report *nr = &x->rep->nodes[n];
    npk_trace *tr = x->opts->trace;
    char args[200];
    snprintf(args, sizeof args, "\"op\":\"%s\",\"place\":\"%s\",\"macs\":%" PRIu64, nd->op,
             x->place[n] == NPK_PLACE_DEVICE ? "device" : x->place[n] == NPK_PLACE_FUSED ? "fused" : "cpu",
             x->rep->nodes[n].macs);
    if (x->be) {
        npk_port *p = x->be->port(x->be);
        npk_port_trace_host(p, "nodes", nd->name, cy0, args);
        if (nr->has_energy) {
            /* energy counters (docs/energy.md): the run's cumulative device
             * energy and the node's average power, sampled at the node's end */
            uint64_t now = npk_port_cycles(p);
            *run_uj += nr->energy_pj / 1e6;
            npk_trace_counter(tr, "host", "energy (uJ, cumulative)", now, *run_uj);
            npk_trace_counter(tr, "host", "power (W, node average)", now,
                              nr->cycles ? nr->energy_pj * 1e-12 / ((double)nr->cycles / (double)npk_port_hz(p)) : 0.0);
        }
    } else {
        npk_trace_process(tr, "host", 1000000000u);
        npk_trace_complete(tr, "host", "nodes", nd->name, n, 1, args);
    }
}

/* Node n's energy (docs/energy.md): the device's energy since e0, plus the
 * leakage of its area over the node's cycles. */
static void node_energy(npk_exec *x, size_t n, const npk_energy *e0) {
    npk_node_report *nr = &x->rep->nodes[n];
    npk_port *p = x->be->port(x->be);
    npk_energy e1;
    npk_area a;
    uint32_t nm;
    if (npk_port_energy(p, &e1, &a, &nm)) return;
    nr->has_energy = 1;
    nr->energy_pj = npk_energy_total_pj(&e1) - npk_energy_total_pj(e0) +
                    npk_leak_pj(npk_area_total_mm2(&a), nr->cycles, npk_port_hz(p), nm);
}

/* The run's energy by class since e0, with the leakage of the whole area
 * over the run's device cycles (idle cycles between nodes included). */
static void run_energy(npk_exec *x, const npk_energy *e0) {
    npk_run_report *rep = x->rep;
    npk_port *p = x->be->port(x->be);
    npk_energy e1;
    if (npk_port_energy(p, &e1, &rep->area, &rep->tech_nm)) return;
    rep->has_energy = 1;
    rep->energy = (npk_energy){e1.compute_pj - e0->compute_pj, e1.reg_pj - e0->reg_pj, e1.sram_pj - e0->sram_pj,
                               e1.acc_pj - e0->acc_pj,         e1.dram_pj - e0->dram_pj, e1.dma_pj - e0->dma_pj,
                               e1.mmio_pj - e0->mmio_pj,
                               npk_leak_pj(npk_area_total_mm2(&rep->area), rep->device_cycles, npk_port_hz(p), rep->tech_nm)};
}

/* Run every node in order, with its figures (cycles, engine counters, host time when
 * timed: only for a report the caller reads, not body runs and benches), its trace
 * event and progress; release values as their last consumer ran. */
static int execute(npk_exec *x, int timed) {
    const npk_graph *g = x->g;
    npk_run_report *rep = x->rep;
    size_t nn = g->n_nodes;
    uint64_t c0 = x->be ? npk_port_cycles(x->be->port(x->be)) : 0;
    npk_energy run_e0, en0;
    npk_area ar;
    uint32_t nm;
    int run_en = x->be && npk_energy_counting() && npk_port_energy(x->be->port(x->be), &run_e0, &ar, &nm) == 0;
    double run_uj = 0;
    /* the nodes folded into each node, in order (a list per node: fhead, fnext), when some are */
    int any_fused = 0, *fhead = NULL, *fnext = NULL, rc = 0;
    for (size_t n = 0; n < nn; n++) any_fused |= x->fused_into[n] >= 0;
    if (any_fused) {
        fhead = malloc(sizeof(int) * nn), fnext = malloc(sizeof(int) * nn);
        if (!fhead || !fnext) {
            free(fhead), free(fnext);
            return npk_err(NPK_ENOMEM, "out of memory");
        }
        for (size_t n = 0; n < nn; n++) fhead[n] = -1;
        for (size_t m = nn; m-- > 0;)
            if (x->fused_into[m] >= 0) fnext[m] = fhead[x->fused_into[m]], fhead[x->fused_into[m]] = (int)m;
    }
    for (size_t n = 0; n < nn && !rc; n++) {
        npk_node_report *nr = &rep->nodes[n];
        double t0 = timed ? now_ms(&x->t0) : 0;
        uint64_t cy0 = x->be ? npk_port_cycles(x->be->port(x->be)) : 0;
        npk_engine_figures e0, e1;
        int has_e = x->be && x->be->engines && x->place[n] == NPK_PLACE_DEVICE && x->be->engines(x->be, &e0) == 0;
        int has_en = run_en && x->place[n] == NPK_PLACE_DEVICE && npk_port_energy(x->be->port(x->be), &en0, &ar, &nm) == 0;
        x->cur_node = (int)n;
        if ((rc = run_node(x, n))) break;
        if (x->be) nr->cycles = npk_port_cycles(x->be->port(x->be)) - cy0;
        if (has_e && x->be->engines(x->be, &e1) == 0) {
            nr->has_engines = 1;
            nr->engines = (npk_engine_figures){e1.dram_rd - e0.dram_rd, e1.dram_wr - e0.dram_wr, e1.spad - e0.spad,
                                               e1.acc - e0.acc, e1.compute_cycles - e0.compute_cycles,
                                               e1.dma_cycles - e0.dma_cycles};
        }
        if (has_en) node_energy(x, n, &en0);
        if (timed) nr->host_ms = now_ms(&x->t0) - t0;
        if (x->opts->trace) trace_node(x, n, cy0, &run_uj);
        if (g->progress) g->progress(g->progress_ctx, n + 1, nn);
        /* a node folded into a later device node keeps its inputs alive until that node ran */
        if (!(x->place[n] == NPK_PLACE_FUSED && x->fused_into[n] > (int)n)) release_inputs(x, (int)n);
        for (int m = any_fused ? fhead[n] : -1; m >= 0 && m < (int)n; m = fnext[m]) release_inputs(x, m);
    }
    free(fhead), free(fnext);
    if (rc) return rc;
    npk_cstream *cs = x->opts->stream;
    if (cs && cs->replay && cs->cursor != cs->n_recs)
        return npk_err(NPK_EFORMAT, "the compiled stream has %zu records (from node %u) the run never reached",
                       cs->n_recs - cs->cursor, cs->recs[cs->cursor].node);
    if (x->be) {
        rep->device_cycles = npk_port_cycles(x->be->port(x->be)) - c0;
        if (x->be->busy_cycles) rep->device_busy_cycles = x->be->busy_cycles(x->be);
        if (run_en) run_energy(x, &run_e0);
    }
    return 0;
}

/* The graph outputs: a value only this output holds is handed over, the others copied. */
static int take_outputs(npk_exec *x, npk_tensor **outputs, size_t *n_outputs) {
    const npk_graph *g = x->g;
    npk_tensor *outs = calloc(g->n_out + 1, sizeof(npk_tensor));
    if (!outs) return npk_err(NPK_ENOMEM, "out of memory");
    for (size_t i = 0; i < g->n_out; i++) {
        int v = g->out_vals[i], once = v >= 0 && x->host[v] && !x->borrowed[v];
        for (size_t j = 0; j < g->n_out && once; j++)
            if (j != i && g->out_vals[j] == v) once = 0;
        if (once) { /* the run's own buffer: handed over, not copied */
            outs[i] = *x->host[v];
            free(x->host[v]);
            x->host[v] = NULL;
            free(outs[i].name);
            outs[i].name = strdup(g->out_desc[i].name);
            continue;
        }
        const npk_tensor *h = npk_exec_host(x, v);
        int rc = -NPK_EINVAL;
        if (!h || (rc = npk_tensor_copy(&outs[i], h))) {
            for (size_t k = 0; k < i; k++) npk_tensor_free(&outs[k]);
            free(outs);
            return rc;
        }
        free(outs[i].name);
        outs[i].name = strdup(g->out_desc[i].name);
    }
    *outputs = outs;
    *n_outputs = g->n_out;
    return 0;
}

static int graph_run(npk_graph *g, const npk_run_opts *opts, const npk_tensor *inputs, size_t n_inputs,
                     const char *in_const, npk_tensor **outputs, size_t *n_outputs, npk_run_report *rep);

int npk_graph_run(npk_graph *g, const npk_run_opts *opts, const npk_tensor *inputs, size_t n_inputs,
                  npk_tensor **outputs, size_t *n_outputs, npk_run_report *rep) {
    return graph_run(g, opts, inputs, n_inputs, NULL, outputs, n_outputs, rep);
}

int npk_graph_run_body(npk_graph *g, const npk_run_opts *opts, const npk_tensor *inputs, size_t n_inputs,
                       const char *in_const, npk_tensor **outputs, size_t *n_outputs) {
    return graph_run(g, opts, inputs, n_inputs, in_const, outputs, n_outputs, NULL);
}

/* A run: check, bind and infer (exec_infer.c), open the device, partition, plan guest
 * memory (exec_plan.c), execute node by node, hand the outputs over. */
static int graph_run(npk_graph *g, const npk_run_opts *opts, const npk_tensor *inputs, size_t n_inputs,
                     const char *in_const, npk_tensor **outputs, size_t *n_outputs, npk_run_report *rep) {
    npk_run_report local;
    npk_run_opts defopts = {0};
    if (!opts) opts = &defopts;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    *outputs = NULL;
    *n_outputs = 0;
    const char *dev = opts->device ? opts->device : "cpu";
    snprintf(rep->device, sizeof rep->device, "%s", dev);
    /* timing-only: the device model too (its option timing_only=1) */
    npk_run_opts topts;
    char *tdev = NULL;
    if (opts->timing_only) {
        const char *d0 = opts->dev_opts && *opts->dev_opts ? opts->dev_opts : NULL;
        size_t len = (d0 ? strlen(d0) + 1 : 0) + sizeof "timing_only=1";
        if (!(tdev = malloc(len))) return npk_err(NPK_ENOMEM, "out of memory");
        snprintf(tdev, len, "%s%stiming_only=1", d0 ? d0 : "", d0 ? "," : "");
        topts = *opts;
        topts.dev_opts = tdev;
        opts = &topts;
    }
    npk_exec X, *x = &X;
    int rc = 0, eligible = exec_plan_eligible(g, opts, dev), planned = 0;
    /* a run with the signature of the graph's plan skips inference and partition (exec_cache.c) */
    if (eligible && g->checked_nodes == g->n_nodes) {
        exec_init_state(x, g, opts, in_const, rep);
        x->own_report = rep == &local;
        if (exec_plan_enter(x)) {
            if (!(rc = exec_bind_inputs(x, inputs, n_inputs)) && exec_plan_start(x)) {
                planned = 1;
            } else { /* another signature (or inputs the usual way refuses with its message) */
                for (size_t i = 0; i < g->n_in; i++)
                    if (g->in_vals[i] >= 0) exec_host_drop(x, g->in_vals[i]);
                exec_plan_leave(x, 0);
                rc = 0;
            }
        }
    }
    if (!planned) {
        rc = exec_init(x, g, opts, in_const, rep, 1);
        x->own_report = rep == &local;
        x->plan_ok = eligible;
        if (!rc) rc = npk_graph_device_check(dev);
        /* the check walks every subgraph: once per graph (it has no state that a run changes) */
        if (!rc && g->checked_nodes != g->n_nodes && !(rc = npk_graph_check(g, NULL))) g->checked_nodes = g->n_nodes;
        if (!rc) rc = exec_bind_inputs(x, inputs, n_inputs);
        if (!rc) rc = exec_infer_all(x);
        if (!rc) rc = open_device(x, dev);
        if (!rc) rc = partition(x, dev);
        if (!rc && x->be) rc = exec_plan_memory(x);
        if (!rc && eligible) exec_plan_snapshot(x);
    }
    if (!rc) rc = execute(x, rep != &local);
    if (!rc) rc = take_outputs(x, outputs, n_outputs);
    rep->host_ms = now_ms(&x->t0);
    exec_free(x, !rc);
    free(tdev);
    if (rep == &local) npk_run_report_fini(&local);
    return rc;
}

/* ---- random inputs ---------------------------------------------------------------------- */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int npk_graph_random_input(const npk_graph *g, size_t i, uint64_t seed, npk_tensor *t) {
    if (i >= g->n_in) return npk_err(NPK_EINVAL, "input %zu does not exist", i);
    const npk_value_desc *d = &g->in_desc[i];
    memset(t, 0, sizeof *t);
    if (d->kind != NPK_KIND_TENSOR)
        return npk_err(NPK_EUNSUPPORTED, "input '%s' is a %s value: random inputs are tensors only; give it with --input",
                       d->name, exec_kind_name(d->kind));
    if (!d->dtype) return npk_err(NPK_EINVAL, "input '%s' has no declared type: give it with --input", d->name);
    if (d->rank < 0) return npk_err(NPK_EINVAL, "input '%s' has no declared shape: give it with --input", d->name);
    int64_t dims[NPK_MAX_RANK];
    for (int k = 0; k < d->rank; k++) dims[k] = d->dims[k] < 0 ? 1 : d->dims[k];
    int rc = npk_tensor_alloc(t, d->name, d->dtype, d->rank, dims);
    if (rc) return rc;
    uint64_t s = seed * 0x100000001B3ull + i;
    int64_t n = npk_tensor_numel(t);
    for (int64_t k = 0; k < n; k++) {
        uint64_t r = splitmix(&s);
        switch (t->dtype) {
        case NPK_DT_FLOAT: ((float *)t->data)[k] = (float)((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0); break;
        case NPK_DT_DOUBLE: ((double *)t->data)[k] = (double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0; break;
        case NPK_DT_INT64: ((int64_t *)t->data)[k] = (int64_t)(r % 8); break;
        case NPK_DT_INT32: ((int32_t *)t->data)[k] = (int32_t)(r % 8); break;
        case NPK_DT_BOOL: ((uint8_t *)t->data)[k] = (uint8_t)(r & 1); break;
        default: memcpy((uint8_t *)t->data + (size_t)k * npk_dtype_size(t->dtype), &r, npk_dtype_size(t->dtype)); break;
        }
    }
    return 0;
}
