// SPDX-License-Identifier: MIT
/* A small ONNX ModelProto builder for tests and model generators (graph layer), on the
 * protobuf-c code generated from Debian's onnx.proto (no python onnx needed).
 *
 *   ob_model *m = ob_new(13);
 *   ob_input(m, "x", NPK_DT_FLOAT, 2, (int64_t[]){2, 3});
 *   Onnx__NodeProto *n = ob_node(m, "", "Relu", "r", "x", "y");
 *   ob_output(m, "y", NPK_DT_FLOAT, -1, NULL);
 *   ob_save(m, &buf, &len);  ob_free(m);
 *
 * Names are comma separated lists ("a,,b": b is input 2, input 1 omitted).
 * Every string and array is owned by the builder (one pool freed by ob_free). */
#ifndef NPUKIT_GRAPH_ONNX_BUILD_H
#define NPUKIT_GRAPH_ONNX_BUILD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npukit/graph.h"
#include "onnx/onnx.pb-c.h"

typedef struct ob_model {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    void **pool;
    size_t n_pool, cap_pool;
} ob_model;

static inline void *ob_keep(ob_model *m, void *p) {
    if (m->n_pool == m->cap_pool) {
        m->cap_pool = m->cap_pool ? 2 * m->cap_pool : 64;
        m->pool = realloc(m->pool, sizeof(void *) * m->cap_pool);
    }
    m->pool[m->n_pool++] = p;
    return p;
}
static inline void *ob_zalloc(ob_model *m, size_t n) { return ob_keep(m, calloc(1, n ? n : 1)); }
static inline char *ob_str(ob_model *m, const char *s) { return strcpy(ob_zalloc(m, strlen(s) + 1), s); }
/* Append p to the array *arr of *n pointers (pool-owned arrays are regrown by copying). */
static inline void ob_push(ob_model *m, void ***arr, size_t *n, void *p) {
    void **na = ob_zalloc(m, sizeof(void *) * (*n + 1));
    if (*n) memcpy(na, *arr, sizeof(void *) * *n);
    na[(*n)++] = p;
    *arr = na;
}

static inline ob_model *ob_new(int64_t opset) {
    ob_model *m = calloc(1, sizeof *m);
    onnx__model_proto__init(&m->m);
    onnx__graph_proto__init(&m->g);
    onnx__operator_set_id_proto__init(&m->opset);
    m->m.has_ir_version = 1;
    m->m.ir_version = 8;
    m->opset.domain = ob_str(m, "");
    m->opset.has_version = 1;
    m->opset.version = opset;
    m->opsets[0] = &m->opset;
    m->m.n_opset_import = 1;
    m->m.opset_import = m->opsets;
    m->m.graph = &m->g;
    m->g.name = ob_str(m, "g");
    return m;
}

static inline void ob_free(ob_model *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n_pool; i++) free(m->pool[i]);
    free(m->pool);
    free(m);
}

static inline Onnx__ValueInfoProto *ob_vinfo(ob_model *m, const char *name, int dt, int rank, const int64_t *dims) {
    Onnx__ValueInfoProto *vi = ob_zalloc(m, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = ob_str(m, name);
    Onnx__TypeProto *tp = ob_zalloc(m, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = ob_zalloc(m, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = dt;
    if (rank >= 0) {
        Onnx__TensorShapeProto *sh = ob_zalloc(m, sizeof *sh);
        onnx__tensor_shape_proto__init(sh);
        for (int i = 0; i < rank; i++) {
            Onnx__TensorShapeProto__Dimension *d = ob_zalloc(m, sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            if (dims[i] >= 0) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = dims[i];
            } else {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = ob_str(m, "N");
            }
            ob_push(m, (void ***)&sh->dim, &sh->n_dim, d);
        }
        tt->shape = sh;
    }
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    return vi;
}

static inline void ob_input(ob_model *m, const char *name, int dt, int rank, const int64_t *dims) {
    ob_push(m, (void ***)&m->g.input, &m->g.n_input, ob_vinfo(m, name, dt, rank, dims));
}
static inline void ob_output(ob_model *m, const char *name, int dt, int rank, const int64_t *dims) {
    ob_push(m, (void ***)&m->g.output, &m->g.n_output, ob_vinfo(m, name, dt, rank, dims));
}

static inline Onnx__TensorProto *ob_tensor(ob_model *m, const char *name, int dt, int rank, const int64_t *dims,
                                    const void *data) {
    Onnx__TensorProto *t = ob_zalloc(m, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = ob_str(m, name);
    t->has_data_type = 1;
    t->data_type = dt;
    t->n_dims = (size_t)rank;
    t->dims = ob_zalloc(m, sizeof(int64_t) * (size_t)(rank + 1));
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= (t->dims[i] = dims[i]);
    size_t bytes = (size_t)n * npk_dtype_size(dt);
    t->has_raw_data = 1;
    t->raw_data.len = bytes;
    t->raw_data.data = ob_zalloc(m, bytes);
    if (data && bytes) memcpy(t->raw_data.data, data, bytes);
    return t;
}

static inline void ob_init(ob_model *m, const char *name, int dt, int rank, const int64_t *dims, const void *data) {
    ob_push(m, (void ***)&m->g.initializer, &m->g.n_initializer, ob_tensor(m, name, dt, rank, dims, data));
}

static inline void ob_names(ob_model *m, const char *list, char ***out, size_t *n) {
    *n = 0;
    *out = NULL;
    if (!list || !*list) return;
    const char *p = list;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char *s = ob_zalloc(m, len + 1);
        memcpy(s, p, len);
        ob_push(m, (void ***)out, n, s);
        if (!e) break;
        p = e + 1;
    }
}

static inline Onnx__NodeProto *ob_node(ob_model *m, const char *domain, const char *op, const char *name, const char *ins,
                                const char *outs) {
    Onnx__NodeProto *n = ob_zalloc(m, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = ob_str(m, op);
    n->name = ob_str(m, name);
    if (domain && *domain) n->domain = ob_str(m, domain);
    ob_names(m, ins, &n->input, &n->n_input);
    ob_names(m, outs, &n->output, &n->n_output);
    ob_push(m, (void ***)&m->g.node, &m->g.n_node, n);
    return n;
}

static inline Onnx__AttributeProto *ob_attr(ob_model *m, Onnx__NodeProto *n, const char *name, int type) {
    Onnx__AttributeProto *a = ob_zalloc(m, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = ob_str(m, name);
    a->has_type = 1;
    a->type = (Onnx__AttributeProto__AttributeType)type;
    ob_push(m, (void ***)&n->attribute, &n->n_attribute, a);
    return a;
}
static inline void ob_attr_i(ob_model *m, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}
static inline void ob_attr_f(ob_model *m, Onnx__NodeProto *n, const char *name, float v) {
    Onnx__AttributeProto *a = ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}
static inline void ob_attr_s(ob_model *m, Onnx__NodeProto *n, const char *name, const char *v) {
    Onnx__AttributeProto *a = ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(v);
    a->s.data = (uint8_t *)ob_str(m, v);
}
static inline void ob_attr_ints(ob_model *m, Onnx__NodeProto *n, const char *name, size_t cnt, const int64_t *v) {
    Onnx__AttributeProto *a = ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = cnt;
    a->ints = ob_zalloc(m, sizeof(int64_t) * (cnt + 1));
    if (cnt) memcpy(a->ints, v, sizeof(int64_t) * cnt);
}

/* Subgraphs (control-flow bodies): the nodes, inputs and outputs added between
 * ob_sub_begin and ob_sub_end go into a new graph, which ob_attr_graph attaches. */
static inline Onnx__GraphProto ob_sub_begin(ob_model *m, const char *name) {
    Onnx__GraphProto saved = m->g;
    onnx__graph_proto__init(&m->g);
    m->g.name = ob_str(m, name);
    return saved;
}
static inline Onnx__GraphProto *ob_sub_end(ob_model *m, Onnx__GraphProto saved) {
    Onnx__GraphProto *sg = ob_zalloc(m, sizeof *sg);
    *sg = m->g;
    m->g = saved;
    return sg;
}
static inline void ob_attr_graph(ob_model *m, Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g) {
    Onnx__AttributeProto *a = ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = g;
}

/* Serialize (*buf malloc'ed). */
static inline int ob_save(ob_model *m, uint8_t **buf, size_t *len) {
    *len = onnx__model_proto__get_packed_size(&m->m);
    *buf = malloc(*len + 1);
    if (!*buf) return -1;
    onnx__model_proto__pack(&m->m, *buf);
    return 0;
}

/* Pack, load and free the builder: the graph, or NULL with the reason on stderr. */
static inline npk_graph *ob_load(ob_model *m) {
    uint8_t *buf = NULL;
    size_t len = 0;
    npk_graph *g = NULL;
    if (ob_save(m, &buf, &len)) fprintf(stderr, "ob_load: out of memory\n");
    else if (npk_graph_load(&g, buf, len)) fprintf(stderr, "ob_load: %s\n", npk_errmsg());
    free(buf);
    ob_free(m);
    return g;
}

#endif
