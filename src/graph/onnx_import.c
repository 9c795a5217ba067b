// SPDX-License-Identifier: MIT
/* ONNX import with protobuf-c: ModelProto -> npk_graph (TensorProto <->
 * npk_tensor is src/graph/onnx_data.c, the node accessors src/graph/ir.c).
 * The protobuf code (onnx/onnx.pb-c.[ch]) is generated at build time from
 * Debian's onnx.proto by cmake/onnx.cmake. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ir.h"
#include "graph/ops.h"
#include "npukit/strbuf.h"
#include "onnx/onnx.pb-c.h"

/* ---- graph --------------------------------------------------------------------- */

void npk_graph_free(npk_graph *g);
static int import_graph(npk_graph *g, const Onnx__GraphProto *gp, int is_sub);

static void free_node(npk_node *n) {
    free(n->name);
    free(n->op);
    free(n->domain);
    free(n->in);
    free(n->out);
    for (size_t i = 0; i < n->n_attr; i++) {
        npk_attr *a = &n->attr[i];
        free(a->name);
        free(a->s);
        if (a->t) {
            npk_tensor_free(a->t);
            free(a->t);
        }
        free(a->floats);
        free(a->ints);
        for (size_t k = 0; a->strs && k < a->n; k++) free(a->strs[k]);
        free(a->strs);
        npk_graph_free(a->g);
    }
    free(n->attr);
}

void npk_graph_free(npk_graph *g) {
    if (!g) return;
    npk_graph_plan_free(g); /* first: the plan tells its own folds from the fold cache's */
    for (size_t i = 0; i < g->n_vals; i++) {
        free(g->vals[i].name);
        if (g->vals[i].konst) {
            npk_tensor_free(g->vals[i].konst);
            free(g->vals[i].konst);
        }
    }
    free(g->vals);
    for (size_t i = 0; i < g->fold_n && g->fold_cache; i++)
        if (g->fold_cache[i]) {
            npk_tensor_free(g->fold_cache[i]);
            free(g->fold_cache[i]);
        }
    free(g->fold_cache);
    npk_graph_conv_folds_free(g);
    free(g->infer_memo);
    for (size_t i = 0; i < g->n_nodes; i++) free_node(&g->nodes[i]);
    free(g->nodes);
    free(g->in_vals);
    free(g->out_vals);
    free(g->in_desc);
    free(g->out_desc);
    for (size_t i = 0; i < g->n_dim_names; i++) free(g->dim_names[i]);
    free(g->dim_names);
    for (size_t i = 0; g->meta_strs && g->meta_strs[i]; i++) free(g->meta_strs[i]);
    free(g->meta_strs);
    free((void *)g->meta.prop_keys);
    free((void *)g->meta.prop_values);
    free(g);
}

static int find_val(const npk_graph *g, const char *name) {
    for (size_t i = 0; i < g->n_vals; i++)
        if (!strcmp(g->vals[i].name, name)) return (int)i;
    return -1;
}

static int add_val(npk_graph *g, const char *name) {
    int rc = npk_grow(&g->vals, &g->cap_vals, g->n_vals + 1, sizeof *g->vals, 64);
    if (rc) return rc;
    npk_value *v = &g->vals[g->n_vals];
    memset(v, 0, sizeof *v);
    v->producer = -1;
    v->graph_input = -1;
    if (!(v->name = strdup(name))) return npk_err(NPK_ENOMEM, "out of memory");
    return (int)g->n_vals++;
}

/* A subgraph's reference to a value of an enclosing scope: a trailing graph
 * input of any kind and type (bound by name when the body runs). */
static int add_outer(npk_graph *g, const char *name) {
    int v = add_val(g, name);
    if (v < 0) return v;
    int *iv = realloc(g->in_vals, (g->n_in + 2) * sizeof(int));
    if (iv) g->in_vals = iv;
    npk_value_desc *id = realloc(g->in_desc, (g->n_in + 2) * sizeof(npk_value_desc));
    if (id) g->in_desc = id;
    if (!iv || !id) return npk_err(NPK_ENOMEM, "out of memory");
    memset(&g->in_desc[g->n_in], 0, sizeof g->in_desc[0]);
    g->in_desc[g->n_in].name = g->vals[v].name;
    g->in_desc[g->n_in].rank = -1;
    g->in_desc[g->n_in].kind = -1;
    g->vals[v].graph_input = (int)g->n_in;
    g->in_vals[g->n_in++] = v;
    return v;
}

/* A name a node or output of g reads: a value of g, or (in a subgraph) one of an enclosing scope. */
static int resolve_val(npk_graph *g, const char *name, int is_sub) {
    int v = find_val(g, name);
    if (v < 0 && is_sub) v = add_outer(g, name);
    return v;
}

/* The element type a sequence or optional TypeProto declares (NULL if none). */
static const Onnx__TypeProto *type_elem(const Onnx__TypeProto *tp) {
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) return tp->sequence_type ? tp->sequence_type->elem_type : NULL;
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) return tp->optional_type ? tp->optional_type->elem_type : NULL;
    return NULL;
}

/* "sequence(map)", "optional(sparse tensor)", ... for messages (depth-limited: types are untrusted). */
static void type_str(const Onnx__TypeProto *tp, char *buf, size_t len, int depth) {
    const char *k = !tp ? "?"
                    : tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? "tensor"
                    : tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ? "sequence"
                    : tp->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE ? "map"
                    : tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE ? "optional"
                    : tp->value_case == ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE ? "sparse tensor" : "non-tensor";
    if (tp && (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE || tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE)) {
        char inner[96];
        if (depth < 4) type_str(type_elem(tp), inner, sizeof inner, depth + 1);
        else snprintf(inner, sizeof inner, "...");
        snprintf(buf, len, "%s(%s)", k, inner);
    } else {
        snprintf(buf, len, "%s", k);
    }
}

/* A copy of a symbolic dimension's name that lives as long as the graph. */
static const char *graph_dim_name(npk_graph *g, const char *s) {
    char **v = realloc(g->dim_names, (g->n_dim_names + 1) * sizeof(char *));
    if (!v) return NULL;
    g->dim_names = v;
    char *c = strdup(s);
    if (c) g->dim_names[g->n_dim_names++] = c;
    return c;
}

static int desc_from_type(npk_graph *g, npk_value_desc *d, const char *name, const Onnx__TypeProto *tp, const char *what) {
    d->name = name;
    d->dtype = 0;
    d->rank = -1;
    d->kind = d->elem_kind = NPK_KIND_TENSOR;
    if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) return 0; /* no declared type */
    /* tensor, sequence(tensor), optional(tensor), optional(sequence(tensor)): kind and elem_kind
     * record the containers, the rest of the description the tensor inside */
    const Onnx__TypeProto *in = tp;
    if (in->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) {
        d->kind = NPK_KIND_OPTIONAL;
        in = type_elem(in);
        if (in && in->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
            d->elem_kind = NPK_KIND_SEQUENCE;
            in = type_elem(in);
        }
    } else if (in->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
        d->kind = NPK_KIND_SEQUENCE;
        in = type_elem(in);
    }
    if (!in || in->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        char ts[256];
        type_str(tp, ts, sizeof ts, 0);
        return npk_err(NPK_EUNSUPPORTED,
                       "%s '%s' has a %s type: only dense tensors, sequence(tensor), optional(tensor) and "
                       "optional(sequence(tensor)) are supported",
                       what, name, ts);
    }
    const Onnx__TypeProto__Tensor *tt = in->tensor_type;
    if (!tt) return 0;
    /* an element type without a host representation is refused when a tensor of it is bound */
    d->dtype = tt->has_elem_type ? tt->elem_type : 0;
    if (tt->shape) {
        if (tt->shape->n_dim > NPK_MAX_RANK)
            return npk_err(NPK_EUNSUPPORTED, "%s '%s' has rank %zu (at most %d supported)", what, name, tt->shape->n_dim,
                           NPK_MAX_RANK);
        d->rank = (int)tt->shape->n_dim;
        for (size_t i = 0; i < tt->shape->n_dim; i++) {
            const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[i];
            d->dims[i] = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ? dm->dim_value : -1;
            if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dm->dim_param && dm->dim_param[0] &&
                !(d->dim_params[i] = graph_dim_name(g, dm->dim_param)))
                return npk_err(NPK_ENOMEM, "out of memory");
        }
    }
    return 0;
}

static int convert_attr(npk_attr *a, const Onnx__AttributeProto *p, const npk_node *n, const npk_graph *g) {
    memset(a, 0, sizeof *a);
    if (!(a->name = strdup(p->name ? p->name : ""))) return npk_err(NPK_ENOMEM, "out of memory");
    int type = p->has_type ? (int)p->type : 0;
    if (!type) { /* IR < 0.0.2: infer from the field in use */
        type = p->has_f ? NPK_ATTR_FLOAT : p->has_i ? NPK_ATTR_INT : p->has_s ? NPK_ATTR_STRING : p->t ? NPK_ATTR_TENSOR
               : p->g ? NPK_ATTR_GRAPH : p->n_floats ? NPK_ATTR_FLOATS : p->n_ints ? NPK_ATTR_INTS : 0;
    }
    a->type = type;
    switch (type) {
    case NPK_ATTR_FLOAT: a->f = p->f; break;
    case NPK_ATTR_INT: a->i = p->i; break;
    case NPK_ATTR_STRINGS:
        if (!(a->strs = calloc(p->n_strings + 1, sizeof(char *)))) return npk_err(NPK_ENOMEM, "out of memory");
        for (size_t k = 0; k < p->n_strings; k++) {
            if (!(a->strs[k] = malloc(p->strings[k].len + 1))) return npk_err(NPK_ENOMEM, "out of memory");
            if (p->strings[k].len) memcpy(a->strs[k], p->strings[k].data, p->strings[k].len);
            a->strs[k][p->strings[k].len] = 0;
            a->n = k + 1;
        }
        break;
    case NPK_ATTR_STRING:
        if (!(a->s = malloc(p->s.len + 1))) return npk_err(NPK_ENOMEM, "out of memory");
        if (p->s.len) memcpy(a->s, p->s.data, p->s.len);
        a->s[p->s.len] = 0;
        break;
    case NPK_ATTR_TENSOR: {
        if (!p->t) return npk_err(NPK_EFORMAT, "node '%s': attribute '%s' has no tensor", n->name, a->name);
        if (!(a->t = calloc(1, sizeof *a->t))) return npk_err(NPK_ENOMEM, "out of memory");
        int rc = npk_tensor_from_proto(a->t, p->t, a->name);
        if (rc) return npk_err_prefix(-rc, "node '%s' attribute '%s'", n->name, a->name);
        break;
    }
    case NPK_ATTR_FLOATS:
        a->n = p->n_floats;
        if (!(a->floats = malloc(sizeof(float) * (a->n + 1)))) return npk_err(NPK_ENOMEM, "out of memory");
        if (a->n) memcpy(a->floats, p->floats, sizeof(float) * a->n);
        break;
    case NPK_ATTR_INTS:
        a->n = p->n_ints;
        if (!(a->ints = malloc(sizeof(int64_t) * (a->n + 1)))) return npk_err(NPK_ENOMEM, "out of memory");
        if (a->n) memcpy(a->ints, p->ints, sizeof(int64_t) * a->n);
        break;
    case NPK_ATTR_GRAPH: {
        /* a control-flow body: imported as its own graph; names it reads from the
         * enclosing scopes become its trailing inputs (npk_graph.n_formal) */
        if (!p->g) return npk_err(NPK_EFORMAT, "node '%s': attribute '%s' has no graph", n->name, a->name);
        if (g->is_sub > 16) return npk_err(NPK_EUNSUPPORTED, "node '%s': subgraphs nested deeper than 16", n->name);
        if (!(a->g = calloc(1, sizeof *a->g))) return npk_err(NPK_ENOMEM, "out of memory");
        a->g->opset = g->opset;
        a->g->ir_version = g->ir_version;
        a->g->is_sub = g->is_sub + 1;
        int rc = import_graph(a->g, p->g, 1);
        if (rc) return npk_err_prefix(-rc, "node '%s' (%s) subgraph '%s'", n->name, n->op, a->name);
        break;
    }
    default: break; /* other kinds (sparse tensors, lists of graphs) are kept by name only: no supported
                       * operator reads them */
    }
    return 0;
}

/* The ModelProto's metadata into g->meta (copies: the message is freed after import). */
static int import_meta(npk_graph *g, const Onnx__ModelProto *m) {
    const Onnx__GraphProto *gp = m->graph;
    size_t np = m->n_metadata_props, n = 0;
    g->meta_strs = calloc(6 + 2 * np + 1, sizeof *g->meta_strs);
    const char **keys = calloc(np + 1, sizeof *keys), **vals = calloc(np + 1, sizeof *vals);
    g->meta.prop_keys = keys;
    g->meta.prop_values = vals;
    if (!g->meta_strs || !keys || !vals) return npk_err(NPK_ENOMEM, "out of memory");
#define META_STR(dst, src)                                                             \
    do {                                                                               \
        if (!(g->meta_strs[n] = strdup((src) ? (src) : ""))) return npk_err(NPK_ENOMEM, "out of memory"); \
        (dst) = g->meta_strs[n++];                                                     \
    } while (0)
    META_STR(g->meta.producer_name, m->producer_name);
    META_STR(g->meta.producer_version, m->producer_version);
    META_STR(g->meta.domain, m->domain);
    META_STR(g->meta.doc_string, m->doc_string);
    META_STR(g->meta.graph_name, gp->name);
    META_STR(g->meta.graph_doc_string, gp->doc_string);
    for (size_t i = 0; i < np; i++) {
        META_STR(keys[i], m->metadata_props[i]->key);
        META_STR(vals[i], m->metadata_props[i]->value);
    }
#undef META_STR
    g->meta.n_props = np;
    g->meta.model_version = m->has_model_version ? m->model_version : 0;
    return 0;
}

static int import_model(npk_graph *g, const Onnx__ModelProto *m) {
    const Onnx__GraphProto *gp = m->graph;
    if (!gp) return npk_err(NPK_EFORMAT, "the model has no graph (not an ONNX model?)");
    int rc = import_meta(g, m);
    if (rc) return rc;
    g->ir_version = m->has_ir_version ? m->ir_version : 0;
    g->opset = m->n_opset_import ? 0 : 1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = m->opset_import[i]->domain ? m->opset_import[i]->domain : "";
        if (!*d || !strcmp(d, "ai.onnx")) g->opset = m->opset_import[i]->has_version ? m->opset_import[i]->version : 1;
    }
    return import_graph(g, gp, 0);
}

/* The graph gp into g (opset and ir_version set by the caller). A subgraph
 * (is_sub) may read names of the enclosing scopes: each becomes a trailing
 * input (after the n_formal declared ones) that its node passes in.
 * Why long: the importer's passes over one GraphProto (initializers, inputs, nodes, outer-
 * scope names, topological order, outputs) share the value table they build; they are kept in
 * ONNX's order with a comment each. */
static int import_graph(npk_graph *g, const Onnx__GraphProto *gp, int is_sub) {
    int rc;
    /* initializers */
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !*tp->name) return npk_err(NPK_EFORMAT, "initializer %zu has no name", i);
        if (find_val(g, tp->name) >= 0) return npk_err(NPK_EFORMAT, "initializer '%s' is defined twice", tp->name);
        int v = add_val(g, tp->name);
        if (v < 0) return v;
        if (!(g->vals[v].konst = calloc(1, sizeof(npk_tensor)))) return npk_err(NPK_ENOMEM, "out of memory");
        if ((rc = npk_tensor_from_proto(g->vals[v].konst, tp, tp->name))) return npk_err_prefix(-rc, "initializer '%s'", tp->name);
    }
    /* graph inputs (those that are not initializers) */
    g->in_vals = calloc(gp->n_input + 1, sizeof(int));
    g->in_desc = calloc(gp->n_input + 1, sizeof(npk_value_desc));
    g->out_vals = calloc(gp->n_output + 1, sizeof(int));
    g->out_desc = calloc(gp->n_output + 1, sizeof(npk_value_desc));
    if (!g->in_vals || !g->in_desc || !g->out_vals || !g->out_desc) return npk_err(NPK_ENOMEM, "out of memory");
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !*vi->name) return npk_err(NPK_EFORMAT, "graph input %zu has no name", i);
        int v = find_val(g, vi->name);
        if (v >= 0 && g->vals[v].konst) continue; /* an initializer with a default value */
        if (v >= 0) return npk_err(NPK_EFORMAT, "graph input '%s' is listed twice", vi->name);
        if ((v = add_val(g, vi->name)) < 0) return v;
        if ((rc = desc_from_type(g, &g->in_desc[g->n_in], vi->name, vi->type, "graph input"))) return rc;
        g->vals[v].graph_input = (int)g->n_in;
        g->in_vals[g->n_in++] = v;
    }
    g->n_formal = g->n_in;
    /* nodes: first every output, so that inputs may refer forward */
    if (!(g->nodes = calloc(gp->n_node + 1, sizeof(npk_node)))) return npk_err(NPK_ENOMEM, "out of memory");
    npk_node *tmp = g->nodes;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        npk_node *n = &tmp[i];
        g->n_nodes = i + 1;
        const char *op = np->op_type ? np->op_type : "";
        char nbuf[96];
        if (!np->name || !*np->name) snprintf(nbuf, sizeof nbuf, "%s_%zu", *op ? op : "node", i);
        n->name = strdup(np->name && *np->name ? np->name : nbuf);
        n->op = strdup(op);
        n->domain = strdup(np->domain && strcmp(np->domain, "ai.onnx") ? np->domain : "");
        n->in = calloc(np->n_input + 1, sizeof(int));
        n->out = calloc(np->n_output + 1, sizeof(int));
        if (!n->name || !n->op || !n->domain || !n->in || !n->out) return npk_err(NPK_ENOMEM, "out of memory");
        if (!*op) return npk_err(NPK_EFORMAT, "node %zu has no op_type", i);
        n->op_id = npk_onnx_op_id(n->domain, op);
        n->n_in = (int)np->n_input;
        n->n_out = (int)np->n_output;
        /* Every operator npukit executes has a required first output (ONNX
         * operator schemas), except RNN, GRU and LSTM, whose outputs are all
         * optional (their handlers write only the outputs present). */
        int all_optional = n->op_id == NPK_OP_RNN || n->op_id == NPK_OP_GRU || n->op_id == NPK_OP_LSTM;
        if (n->op_id != NPK_OP_NONE && !all_optional && (!np->n_output || !np->output[0] || !*np->output[0]))
            return npk_err(NPK_EFORMAT, "node '%s' (%s) has no first output (output 0 is required)", n->name, op);
        for (size_t k = 0; k < np->n_output; k++) {
            const char *nm = np->output[k];
            if (!nm || !*nm) {
                n->out[k] = -1;
                continue;
            }
            int v = find_val(g, nm);
            if (v >= 0)
                return npk_err(NPK_EFORMAT, "node '%s' (%s): output '%s' is already produced by %s", n->name, op, nm,
                               g->vals[v].producer >= 0 ? "another node" : "an initializer or graph input");
            if ((v = add_val(g, nm)) < 0) return v;
            g->vals[v].producer = (int)i;
            n->out[k] = v;
        }
        if (!(n->attr = calloc(np->n_attribute + 1, sizeof(npk_attr)))) return npk_err(NPK_ENOMEM, "out of memory");
        for (size_t k = 0; k < np->n_attribute; k++) {
            n->n_attr = k + 1;
            if ((rc = convert_attr(&n->attr[k], np->attribute[k], n, g))) return rc;
        }
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        npk_node *n = &tmp[i];
        for (size_t k = 0; k < np->n_input; k++) {
            const char *nm = np->input[k];
            if (!nm || !*nm) {
                n->in[k] = -1;
                continue;
            }
            int v = resolve_val(g, nm, is_sub);
            if (v < 0)
                return npk_err(NPK_EFORMAT, "node '%s' (%s): input '%s' is not produced by any node, initializer or graph input",
                               n->name, n->op, nm);
            n->in[k] = v;
            g->vals[v].n_uses++;
        }
        /* values of this scope its subgraphs read: implicit trailing inputs, so
         * that ordering and lifetimes see them */
        for (size_t k = 0; k < n->n_attr; k++) {
            const npk_graph *sg = n->attr[k].g;
            for (size_t j = sg ? sg->n_formal : 0; sg && j < sg->n_in; j++) {
                const char *nm = sg->vals[sg->in_vals[j]].name;
                int dup = 0;
                for (int q = n->n_in - n->n_outer; q < n->n_in && !dup; q++) dup = !strcmp(g->vals[n->in[q]].name, nm);
                if (dup) continue;
                int v = resolve_val(g, nm, is_sub);
                if (v < 0)
                    return npk_err(NPK_EFORMAT, "node '%s' (%s): its subgraph '%s' reads '%s', which no node, initializer or "
                                   "graph input produces", n->name, n->op, n->attr[k].name, nm);
                int *ni = realloc(n->in, (size_t)(n->n_in + 2) * sizeof(int));
                if (!ni) return npk_err(NPK_ENOMEM, "out of memory");
                n->in = ni;
                n->in[n->n_in++] = v;
                n->n_outer++;
                g->vals[v].n_uses++;
            }
        }
    }
    /* topological order (Kahn) */
    size_t nn = g->n_nodes;
    int *order = calloc(nn + 1, sizeof(int)), *pending = calloc(nn + 1, sizeof(int));
    char *done = calloc(nn + 1, 1);
    if (!order || !pending || !done) {
        free(order);
        free(pending);
        free(done);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    size_t placed = 0;
    while (placed < nn) {
        size_t before = placed;
        for (size_t i = 0; i < nn; i++) {
            if (done[i]) continue;
            int ready = 1;
            for (int k = 0; k < tmp[i].n_in && ready; k++) {
                int v = tmp[i].in[k];
                if (v >= 0 && g->vals[v].producer >= 0 && !done[g->vals[v].producer]) ready = 0;
            }
            if (ready) {
                done[i] = 1;
                order[placed++] = (int)i;
            }
        }
        if (placed == before) {
            size_t bad = 0;
            while (bad < nn && done[bad]) bad++;
            free(order);
            free(pending);
            free(done);
            return npk_err(NPK_EFORMAT, "the graph has a cycle through node '%s' (%s)", tmp[bad].name, tmp[bad].op);
        }
    }
    npk_node *sorted = calloc(nn + 1, sizeof(npk_node));
    int *newidx = pending;
    if (!sorted) {
        free(order);
        free(pending);
        free(done);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < nn; i++) {
        sorted[i] = tmp[order[i]];
        newidx[order[i]] = (int)i;
    }
    for (size_t i = 0; i < g->n_vals; i++)
        if (g->vals[i].producer >= 0) g->vals[i].producer = newidx[g->vals[i].producer];
    free(tmp);
    g->nodes = sorted;
    free(order);
    free(pending);
    free(done);
    /* graph outputs */
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        if (!vi->name || !*vi->name) return npk_err(NPK_EFORMAT, "graph output %zu has no name", i);
        int v = resolve_val(g, vi->name, is_sub);
        if (v < 0) return npk_err(NPK_EFORMAT, "graph output '%s' is not produced by any node or input", vi->name);
        if ((rc = desc_from_type(g, &g->out_desc[g->n_out], vi->name, vi->type, "graph output"))) return rc;
        g->vals[v].graph_output = 1;
        g->out_vals[g->n_out++] = v;
    }
    if (!g->n_out) return npk_err(NPK_EFORMAT, "the graph has no outputs");
    for (size_t i = 0; i < g->n_in; i++) g->in_desc[i].name = g->vals[g->in_vals[i]].name;
    for (size_t i = 0; i < g->n_out; i++) g->out_desc[i].name = g->vals[g->out_vals[i]].name;
    return 0;
}

int npk_graph_load(npk_graph **out, const uint8_t *data, size_t len) {
    *out = NULL;
    if (!data || !len) return npk_err(NPK_EFORMAT, "empty model file");
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, data);
    if (!m) return npk_err(NPK_EFORMAT, "not a valid ONNX model (protobuf decoding failed: the file is truncated or corrupt)");
    npk_graph *g = calloc(1, sizeof *g);
    if (!g) {
        onnx__model_proto__free_unpacked(m, NULL);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    int rc = import_model(g, m);
    onnx__model_proto__free_unpacked(m, NULL);
    if (rc) {
        npk_graph_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

static int parse_graph(void *out, const uint8_t *data, size_t len) { return npk_graph_load(out, data, len); }

int npk_graph_load_file(npk_graph **out, const char *path) {
    *out = NULL;
    return npk_read_file_parse(path, parse_graph, out);
}

size_t npk_graph_n_inputs(const npk_graph *g) { return g->n_in; }
const npk_value_desc *npk_graph_input(const npk_graph *g, size_t i) { return i < g->n_in ? &g->in_desc[i] : NULL; }
size_t npk_graph_n_outputs(const npk_graph *g) { return g->n_out; }
const npk_value_desc *npk_graph_output(const npk_graph *g, size_t i) { return i < g->n_out ? &g->out_desc[i] : NULL; }
size_t npk_graph_n_nodes(const npk_graph *g) { return g->n_nodes; }
int64_t npk_graph_opset(const npk_graph *g) { return g->opset; }
const npk_model_meta *npk_graph_meta(const npk_graph *g) { return &g->meta; }
