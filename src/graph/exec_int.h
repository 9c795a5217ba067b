// SPDX-License-Identifier: MIT
/* Internal to the graph executor (src/graph/exec*.c): its state and the steps
 * its files share. The backends see the executor only through src/graph/exec.h.
 *
 *   exec_infer.c   planning before a run: input binding, shape inference, folding
 *   exec_plan.c    guest-memory planning (views and scratch packed into one arena)
 *   exec_stage.c   the accessors backends use, views, and staging host <-> device
 *   exec_fuse.c    element-wise chains the CPU runs in one pass
 *   exec.c         dispatch: the run, node by node, on the device or the CPU
 */
#ifndef NPUKIT_GRAPH_EXEC_INT_H
#define NPUKIT_GRAPH_EXEC_INT_H

#include "graph/exec.h"
#include "graph/qdq.h"

#include <time.h>

typedef struct view {
    int value, node_first, node_last, write, buf;
    npk_dlayout l;
    uint64_t rows, row_bytes;
    int valid;           /* device copy is current */
} view;

typedef struct scratch {
    int node, buf;
    uint64_t bytes;
} scratch;

typedef struct buf {
    uint64_t size, off;
    int first, last;
} buf;

/* An element-wise chain run by its last node (exec_fuse.c): x_val >= 0 on that node, skip on
 * the nodes it runs for (EXEC_SKIP_CHAIN). A float Conv whose constant BatchNormalization / Mul /
 * Add nodes are folded into its weights: fold_end > 0 on the Conv (the last folded node, whose
 * output the Conv writes; fw, fb its weights and bias), skip = EXEC_SKIP_FOLD on those nodes. A
 * QuantizeLinear -> DequantizeLinear pair run as one pass: qdq_end on the QuantizeLinear, skip =
 * EXEC_SKIP_QDQ on the DequantizeLinear. */
enum { EXEC_SKIP_CHAIN = 1, EXEC_SKIP_FOLD = 2, EXEC_SKIP_QDQ = 3 };
typedef struct exec_chain {
    int x_val;
    float a, d;
    double lo, hi;
    int div_last, skip; /* div_last: Div(Mul(x, C), d), else Mul(x, Div(C, d)) */
    int tail, tail_end; /* the scalar Mul (tail bit 1) then Add (bit 2) after the chain, run by it too:
                           tail_end the last of them, whose output the chain writes */
    float tm, ta;
    int fold_end;
    const npk_tensor *fw, *fb;
    int qdq_end; /* a QuantizeLinear whose only reader is a DequantizeLinear (EXEC_SKIP_QDQ): that node, whose
                    float output the QuantizeLinear writes in the same pass (exec_fuse.c), 0: none */
    float qs, qz, ds;
    int32_t dz;
    int q_s8;
} exec_chain;

struct npk_exec {
    npk_graph *g;
    const npk_run_opts *opts;
    npk_run_report *rep;
    npk_tensor *meta;       /* per value */
    char *known;            /* per value */
    npk_tensor **host;      /* per value: host copy (owned) or NULL */
    char *borrowed;         /* per value: host[v] shares its data with a run input or a folded constant (only
                               the struct is ours) */
    char *kconst;           /* per value: computed from the graph's constants alone (no input reaches it), or
                               a body input its node declared constant (in_const) */
    const char *in_const;   /* per graph input: the same in every run (npk_graph_run_body), or NULL */
    int *uses_left;         /* per value: consumers not yet run */
    int *place;             /* per node: npk_place */
    int *fused_into;        /* per node: device node it is folded into, or -1 */
    npk_qdq *cpu_qdq;       /* per node: a quantized group the CPU runs as one integer op (node < 0: none) */
    exec_chain *chain;      /* per node: an element-wise chain the CPU runs in one pass (exec_fuse.c) */
    uint64_t rand_draws;    /* random-node executions so far (the stream of unseeded random operators) */
    int (*direct)[2];       /* per node: values it reads without a graph edge (the integer input of a shared
                               DequantizeLinear folded into it), -1: none */
    npk_tensor **folded;    /* per value: constant-folded at inference (owned, or the graph's fold_cache entry),
                               NULL otherwise */
    int *dev_writer;        /* per value: view id of the device view producing it, or -1 */
    int *consumer;          /* per value: its only consumer node, -1 none, -2 several (built on first use) */
    view *views;
    int n_views;
    size_t cap_views;
    scratch *scr;
    int n_scr;
    size_t cap_scr;
    buf *bufs;
    int n_bufs;
    npk_backend *be;
    uint64_t arena, arena_size;
    int cur_node;
    struct timespec t0;
    const npk_body_fns *body; /* control flow's bodies (exec.c): handed to the operators in their context */
    /* the plan (exec_cache.c): the graph's plan whose arrays this run holds, or NULL; a run that may
     * leave its own as the graph's plan: plan_ok (inference read no large input's data), known0 and
     * uses0 (known and uses_left before the first node), meta_changed (a node produced a known value
     * in another shape than inferred), own_report (the report is the run's own, no caller reads it) */
    struct exec_plan *plan;
    char *known0;
    int *uses0;
    unsigned char *key; /* the run's input signature (exec_cache.c), taken while its inputs are bound */
    size_t key_len;
    int plan_ok, meta_changed, own_report;
};

static inline uint64_t align_up(uint64_t v, uint64_t a) { return a ? (v + a - 1) / a * a : v; }
static inline uint64_t view_bytes(const view *w) { return w->rows ? (w->rows - 1) * w->l.pitch + w->row_bytes : 1; }

/* exec_stage.c */
int exec_stage_in(npk_exec *x, int id);
void exec_host_drop(npk_exec *x, int v);
int exec_host_borrow(npk_exec *x, int v, const npk_tensor *t, const char *name);
/* exec_plan.c */
int exec_plan_memory(npk_exec *x);
/* exec_cache.c: a CPU run's plan kept per input signature (eligible: the run may use or leave one) */
typedef struct exec_plan exec_plan;
int exec_plan_eligible(const npk_graph *g, const npk_run_opts *o, const char *dev);
/* Take the graph's plan's arrays as the run's (1), or 0: none or held by another run. */
int exec_plan_enter(npk_exec *x);
/* After the inputs are bound: 1 when their signature is the plan's (the run then skips
 * inference and partition: the report's nodes and the run's state are the plan's), 0 otherwise
 * (the caller leaves the plan and runs the usual way). */
int exec_plan_start(npk_exec *x);
/* Give the plan back (drop = 1: it no longer holds, free it); zeroes x. */
void exec_plan_leave(npk_exec *x, int drop);
/* Before the first node of a run that may leave its plan: keep known and uses_left. */
void exec_plan_snapshot(npk_exec *x);
/* At the end of a successful run: its arrays become the graph's plan (when it has none). */
void exec_plan_adopt(npk_exec *x);
/* exec_fuse.c */
void exec_fuse_cpu(npk_exec *x);
int exec_run_chain(npk_exec *x, int n);
int exec_run_qdq(npk_exec *x, int n);
/* 1 when a node may write its output into v's host buffer (the run owns it and no later node
 * reads it: npk_opctx.reuse, the chains) */
int exec_can_take(npk_exec *x, int v);
/* exec_infer.c */
int exec_bind_inputs(npk_exec *x, const npk_tensor *inputs, size_t n_inputs);
/* Shapes, types and folds of every value; with x->plan_ok set, it stays set when the inference
 * read no data of an input of more than 16 elements (so a plan serves every run of the signature). */
int exec_infer_all(npk_exec *x);
int exec_fold_shared(const npk_exec *x, int v);
void exec_folds_free(const npk_graph *g, npk_tensor **folded);
void exec_fill_ctx(npk_exec *x, int n, npk_opctx *c, int run);
int exec_call_op(npk_opctx *c);
int exec_kind_check(npk_exec *x, int n, int k, int kind);
const char *exec_kind_name(int kind);

#endif
