// SPDX-License-Identifier: MIT
/*
 * The graph layer's internal representation of an imported ONNX model.
 *
 * Values (tensors flowing between nodes) and nodes are arrays indexed by
 * int; a node's inputs and outputs are value indices, -1 for an omitted
 * optional input/output. Nodes are stored in a topological order.
 */
#ifndef NPUKIT_GRAPH_IR_H
#define NPUKIT_GRAPH_IR_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/graph.h"

/* Attribute types (ONNX AttributeProto.AttributeType values). */
enum { NPK_ATTR_FLOAT = 1, NPK_ATTR_INT = 2, NPK_ATTR_STRING = 3, NPK_ATTR_TENSOR = 4, NPK_ATTR_GRAPH = 5,
       NPK_ATTR_FLOATS = 6, NPK_ATTR_INTS = 7, NPK_ATTR_STRINGS = 8 };

typedef struct npk_attr {
    char *name;
    int type;
    double f;          /* FLOAT */
    int64_t i;         /* INT */
    char *s;           /* STRING (NUL-terminated copy) */
    npk_tensor *t;     /* TENSOR */
    size_t n;          /* FLOATS / INTS / STRINGS: element count */
    float *floats;
    int64_t *ints;
    char **strs;       /* STRINGS: n NUL-terminated copies */
    struct npk_graph *g; /* GRAPH: the imported subgraph (owned; If, Loop, Scan, SequenceMap) */
} npk_attr;

typedef struct npk_value {
    char *name;
    npk_tensor *konst;   /* initializer (owned), NULL otherwise */
    int producer;        /* producing node index, -1 for graph inputs and initializers */
    int graph_input;     /* index into the graph's inputs, or -1 */
    int graph_output;    /* 1 if a graph output */
    int n_uses;          /* consuming node inputs */
} npk_value;

typedef struct npk_node {
    char *name;          /* never NULL: "<op>_<index>" when the model has none */
    char *op;
    int op_id;           /* npk_op_id (graph/ops.h), set once at import; 0 = not executed by npukit */
    char *domain;        /* "" for the default ONNX domain */
    int n_in, n_out;
    int *in, *out;       /* in[n_in - n_outer .. n_in - 1]: outer-scope values its subgraphs read */
    int n_outer;         /* implicit inputs (control flow): the operator's own inputs are the first n_in - n_outer */
    size_t n_attr;
    npk_attr *attr;
} npk_node;

struct npk_graph {
    int64_t opset;       /* default-domain opset */
    int64_t ir_version;
    npk_value *vals;
    size_t n_vals, cap_vals;
    npk_node *nodes;
    size_t n_nodes;
    size_t n_in, n_out;
    int *in_vals, *out_vals;          /* value indices */
    npk_value_desc *in_desc, *out_desc; /* declared types (names point into vals) */
    int is_sub;          /* a subgraph (control-flow body): inputs past n_formal are outer-scope values */
    size_t n_formal;     /* subgraph: the declared inputs (the outer-scope ones follow, kind -1: any value) */
    npk_tensor **fold_cache; /* per value: computed from constants alone by an earlier run (exec.c), owned;
                                fold_n values long (a graph that grew since drops it) */
    size_t fold_n;
    struct npk_conv_fold *conv_folds; /* per node: a Conv's weights and bias with the constant nodes after it
                                         folded in (exec_fuse.c), owned; conv_folds_n nodes long */
    size_t conv_folds_n;
    size_t checked_nodes; /* n_nodes when npk_graph_check last passed in npk_graph_run (0: never) */
    void *infer_memo;     /* a body: its last shape inference through npk_graph_infer_body and the
                             signature of the inputs it had (ops_ctrl.c, infer_body), one malloc'ed
                             block, owned; NULL: none yet */
    struct exec_plan *plan; /* the last CPU run's plan and working arrays (exec_cache.c), owned; NULL: none */
    void (*progress)(void *ctx, size_t done, size_t total); /* npk_graph_set_progress */
    void *progress_ctx;
    char **dim_names;     /* the dim_param strings the descriptors point to, owned */
    size_t n_dim_names;
    npk_model_meta meta;  /* the model's metadata (the top graph; zero in subgraphs) */
    char **meta_strs;     /* the strings meta points to (NULL-terminated, owned), NULL in subgraphs */
};

/* A Conv's folded weights and bias (exec_fuse.c): end = the last node folded in (0: none yet,
 * -(end + 2): the fold up to end does not apply); w, b owned. */
typedef struct npk_conv_fold {
    int end;
    npk_tensor *w, *b;
} npk_conv_fold;
/* Free g->plan (exec_cache.c). */
void npk_graph_plan_free(npk_graph *g);
/* Free g->conv_folds (exec_fuse.c). */
void npk_graph_conv_folds_free(npk_graph *g);

/* ---- protobuf helpers shared by onnx_import.c and onnx_data.c ---- */
struct Onnx__TensorProto; /* generated: onnx/onnx.pb-c.h */
/* TensorProto -> tensor (validated: external data, sizes, types); `what` names it in messages. */
int npk_tensor_from_proto(npk_tensor *t, const struct Onnx__TensorProto *p, const char *what);
/* Fill *p (initialised here) to encode tensor t with raw_data; dims: NPK_MAX_RANK entries
 * of storage that p points into. p borrows t's name and data. */
void npk_tensor_to_proto(const npk_tensor *t, struct Onnx__TensorProto *p, int64_t *dims);
/* Encode a sequence / optional value as SequenceProto / OptionalProto (onnx_data.c). */
int npk_value_save_pb(const npk_tensor *t, uint8_t **out, size_t *len);
/* Read a whole file (*data malloc'ed). */
int npk_read_file(const char *path, uint8_t **data, size_t *len);
/* Read the whole file at path and parse it with parse(obj, data, len); a parse error's
 * message is prefixed with the path. */
int npk_read_file_parse(const char *path, int (*parse)(void *obj, const uint8_t *data, size_t len), void *obj);

/* Attribute lookup (NULL when absent). */
const npk_attr *npk_node_attr(const npk_node *n, const char *name);
int64_t npk_node_attr_i(const npk_node *n, const char *name, int64_t def);
double npk_node_attr_f(const npk_node *n, const char *name, double def);
const char *npk_node_attr_s(const npk_node *n, const char *name, const char *def);
/* INTS attribute: element count (0 when absent) and pointer (never NULL). */
size_t npk_node_attr_ints(const npk_node *n, const char *name, const int64_t **v);

#endif
