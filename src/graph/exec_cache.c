// SPDX-License-Identifier: MIT
/* A CPU run's plan, kept by the graph and reused by the runs after it.
 *
 * Everything a run on the CPU decides before its first node (the shapes and types inferred
 * for every value, the folded constants, the placement with its reasons, the quantized groups,
 * the element-wise chains and folded Conv weights, the consumers' counts) depends on the graph,
 * the run's options and the signature of its inputs alone: their kinds, types and shapes and
 * the data of the inputs shape inference may read (at most 16 elements; a larger input whose
 * data the inference of its readers does not use, checked when the plan is made,
 * exec_infer_data_free). A run with the signature of the graph's plan takes the plan's arrays
 * as its own and skips inference, partition and fusion; the plan's arrays are also its
 * working arrays (values on the host, uses left), so a planned run allocates and zeroes none
 * of them (a warm run of ppocr-cls-mobile-v2 zeroed ~330 KB per run for them, a sixth of
 * its 0.5 MB L2 share, and inferred 471 nodes: ~11 % of its instructions).
 *
 * One run at a time holds the plan (an atomic flag): a run on another thread meanwhile, a
 * control-flow body nested in itself, a different signature or other options run the
 * usual way. A run whose computed shapes differ from the plan's (a value inferred one way,
 * produced another) drops the plan. Not kept: device runs, traces, compiled streams,
 * timing-only runs, sequence or optional inputs. */
#include "graph/exec_int.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct exec_plan {
    unsigned char *key;
    size_t key_len;
    atomic_int busy;
    npk_tensor *meta;
    char *known, *known0, *borrowed, *kconst;
    npk_tensor **host, **folded;
    int *uses_left, *uses0, *place, *fused_into, *dev_writer, *consumer;
    npk_qdq *cpu_qdq;
    exec_chain *chain;
    int (*direct)[2];
    npk_node_report *nodes;
};

int exec_plan_eligible(const npk_graph *g, const npk_run_opts *o, const char *dev) {
    (void)g;
    return !strcmp(dev, "cpu") && !o->trace && !o->stream && !o->timing_only;
}

/* Inputs of at most this many elements are part of the key with their data. */
#define PLAN_DATA_ELEMS 16

/* The run's signature: its options, which inputs are constant, every bound input's kind,
 * type and shape, and the data of the small ones. NULL when the run has none (a sequence or
 * optional input, an input not bound). */
static unsigned char *plan_key(const npk_exec *x, size_t *len) {
    const npk_graph *g = x->g;
    size_t n = sizeof(int) * 3 + sizeof(uint64_t);
    for (size_t i = 0; i < g->n_in; i++) {
        int v = g->in_vals[i];
        const npk_tensor *t = v >= 0 ? x->host[v] : NULL;
        if (!t || t->kind != NPK_KIND_TENSOR) return NULL;
        n += sizeof(int) * 4 + sizeof t->dims;
        if (npk_tensor_numel(t) <= PLAN_DATA_ELEMS && t->data) n += npk_tensor_bytes(t);
    }
    unsigned char *k = malloc(n), *p = k;
    if (!k) return NULL;
    int o[3] = {x->opts->golden, x->opts->qdq, x->opts->loose_dims};
    memcpy(p, o, sizeof o), p += sizeof o;
    memcpy(p, &x->opts->seed, sizeof(uint64_t)), p += sizeof(uint64_t);
    for (size_t i = 0; i < g->n_in; i++) {
        const npk_tensor *t = x->host[g->in_vals[i]];
        int small = npk_tensor_numel(t) <= PLAN_DATA_ELEMS && t->data;
        int h[4] = {t->dtype, t->rank, x->in_const && x->in_const[i], small};
        int64_t d[NPK_MAX_RANK] = {0};
        memcpy(d, t->dims, sizeof(int64_t) * (size_t)(t->rank > 0 && t->rank <= NPK_MAX_RANK ? t->rank : 0));
        memcpy(p, h, sizeof h), p += sizeof h;
        memcpy(p, d, sizeof d), p += sizeof d;
        if (small && npk_tensor_bytes(t)) memcpy(p, t->data, npk_tensor_bytes(t)), p += npk_tensor_bytes(t);
    }
    *len = (size_t)(p - k);
    return k;
}

static void plan_free(npk_graph *g, exec_plan *p) {
    if (!p) return;
    exec_folds_free(g, p->folded); /* with the folds the graph's cache does not hold */
    free(p->key);
    free(p->meta);
    free(p->known);
    free(p->known0);
    free(p->borrowed);
    free(p->kconst);
    free(p->host);
    free(p->uses_left);
    free(p->uses0);
    free(p->place);
    free(p->fused_into);
    free(p->dev_writer);
    free(p->consumer);
    free(p->cpu_qdq);
    free(p->chain);
    free(p->direct);
    free(p->nodes);
    free(p);
}

void npk_graph_plan_free(npk_graph *g) {
    plan_free(g, g->plan);
    g->plan = NULL;
}

/* The arrays of plan p as run x's (x's scalars already set by the caller). */
static void plan_lend(npk_exec *x, exec_plan *p) {
    x->plan = p;
    x->meta = p->meta, x->known = p->known, x->borrowed = p->borrowed, x->kconst = p->kconst;
    x->host = p->host, x->folded = p->folded, x->uses_left = p->uses_left, x->place = p->place;
    x->fused_into = p->fused_into, x->dev_writer = p->dev_writer, x->consumer = p->consumer;
    x->cpu_qdq = p->cpu_qdq, x->chain = p->chain, x->direct = p->direct;
}

int exec_plan_enter(npk_exec *x) {
    exec_plan *p = x->g->plan;
    int idle = 0;
    if (!p || !atomic_compare_exchange_strong(&p->busy, &idle, 1)) return 0;
    plan_lend(x, p);
    return 1;
}

int exec_plan_start(npk_exec *x) {
    exec_plan *p = x->plan;
    size_t len = 0, nn = x->g->n_nodes, nv = x->g->n_vals;
    unsigned char *k = plan_key(x, &len);
    int same = k && len == p->key_len && !memcmp(k, p->key, len);
    free(k);
    if (!same) return 0;
    npk_run_report *rep = x->rep;
    if (x->own_report) { /* nobody reads it: the run's figures go to the plan's (the same each run) */
        rep->nodes = p->nodes;
    } else {
        if (!(rep->nodes = malloc(sizeof *rep->nodes * (nn + 1)))) return 0;
        memcpy(rep->nodes, p->nodes, sizeof *rep->nodes * nn);
    }
    rep->n_nodes = nn;
    memcpy(x->known, p->known0, nv);
    memcpy(x->uses_left, p->uses0, sizeof(int) * nv);
    return 1;
}

void exec_plan_leave(npk_exec *x, int drop) {
    exec_plan *p = x->plan;
    npk_graph *g = x->g;
    if (x->rep->nodes == p->nodes) x->rep->nodes = NULL, x->rep->n_nodes = 0; /* the plan's own */
    memset(x, 0, sizeof *x);
    if (drop && g->plan == p) {
        g->plan = NULL;
        plan_free(g, p);
        return;
    }
    atomic_store(&p->busy, 0);
}

void exec_plan_snapshot(npk_exec *x) {
    size_t nv = x->g->n_vals;
    if (!x->plan_ok) return;
    if (!(x->key = plan_key(x, &x->key_len)) || !(x->known0 = malloc(nv + 1)) ||
        !(x->uses0 = malloc(sizeof(int) * (nv + 1))))
        return;
    memcpy(x->known0, x->known, nv);
    memcpy(x->uses0, x->uses_left, sizeof(int) * nv);
}

void exec_plan_adopt(npk_exec *x) {
    npk_graph *g = x->g;
    size_t nn = g->n_nodes;
    int idle = 0;
    if (!x->key || !x->known0 || !x->uses0 || x->meta_changed) return;
    if (g->plan) { /* another signature's: this one replaces it, unless a run holds it */
        if (!atomic_compare_exchange_strong(&g->plan->busy, &idle, 1)) return;
        npk_graph_plan_free(g);
    }
    exec_plan *p = calloc(1, sizeof *p);
    if (!p) return;
    npk_run_report *rep = x->rep;
    if (x->own_report) { /* the run's local report: its nodes become the plan's */
        p->nodes = rep->nodes;
        rep->nodes = NULL, rep->n_nodes = 0;
    } else if ((p->nodes = malloc(sizeof *p->nodes * (nn + 1)))) {
        memcpy(p->nodes, rep->nodes, sizeof *p->nodes * nn);
    }
    if (!p->nodes) {
        free(p);
        return;
    }
    p->key = x->key, p->key_len = x->key_len, x->key = NULL;
    for (size_t n = 0; n < nn; n++) p->nodes[n].host_ms = 0; /* the run's own figure */
    p->meta = x->meta, p->known = x->known, p->known0 = x->known0, p->borrowed = x->borrowed, p->kconst = x->kconst;
    p->host = x->host, p->folded = x->folded, p->uses_left = x->uses_left, p->uses0 = x->uses0, p->place = x->place;
    p->fused_into = x->fused_into, p->dev_writer = x->dev_writer, p->consumer = x->consumer;
    p->cpu_qdq = x->cpu_qdq, p->chain = x->chain, p->direct = x->direct;
    x->meta = NULL, x->known = x->known0 = x->borrowed = x->kconst = NULL;
    x->host = x->folded = NULL, x->uses_left = x->uses0 = x->place = x->fused_into = x->dev_writer = x->consumer = NULL;
    x->cpu_qdq = NULL, x->chain = NULL, x->direct = NULL;
    atomic_init(&p->busy, 0);
    g->plan = p;
}
