// SPDX-License-Identifier: MIT
/* ONNX sequence and optional values (onnx-data.proto's SequenceProto and
 * OptionalProto): decoding ONNX's own test data (expected values from the
 * ONNX test-case definitions: identity_sequence's two [1,1,2,2] tensors
 * {1,2,3,4} and {2,3,1,5}, identity_opt's optional sequence of {1,...,5}),
 * messages built here field by field with the generated code, encoding,
 * Identity through the graph runtime, input kind checks, and the error for a
 * sequence that reaches another operator. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "npk_onnx_data.pb-c.h"
#include "npukit/graph.h"
#include "onnx/onnx.pb-c.h"

#define TD "/usr/share/libonnx-testdata/data/node"

static int floats_are(const npk_tensor *t, const float *v, int64_t n) {
    return t->kind == NPK_KIND_TENSOR && t->dtype == NPK_DT_FLOAT && npk_tensor_numel(t) == n &&
           !memcmp(t->data, v, sizeof(float) * (size_t)n);
}

static void test_onnx_files(void) {
    npk_tensor s, o;
    const float e0[4] = {1, 2, 3, 4}, e1[4] = {2, 3, 1, 5}, e5[5] = {1, 2, 3, 4, 5};
    CHECK_EQ(npk_value_load_pb_file(&s, TD "/test_identity_sequence/test_data_set_0/input_0.pb", NPK_KIND_SEQUENCE), 0);
    CHECK_EQ(s.kind, NPK_KIND_SEQUENCE);
    CHECK_STR(s.name, "x");
    CHECK_EQ(s.n_items, 2);
    if (s.n_items == 2) {
        CHECK_EQ(s.items[0].rank, 4);
        CHECK(s.items[0].dims[0] == 1 && s.items[0].dims[1] == 1 && s.items[0].dims[2] == 2 && s.items[0].dims[3] == 2);
        CHECK(floats_are(&s.items[0], e0, 4));
        CHECK(floats_are(&s.items[1], e1, 4));
    }
    CHECK_EQ(npk_value_load_pb_file(&o, TD "/test_identity_opt/test_data_set_0/input_0.pb", NPK_KIND_OPTIONAL), 0);
    CHECK_EQ(o.kind, NPK_KIND_OPTIONAL);
    CHECK_STR(o.name, "opt_in");
    CHECK_EQ(o.n_items, 1);
    if (o.n_items == 1) {
        CHECK_EQ(o.items[0].kind, NPK_KIND_SEQUENCE);
        CHECK_EQ(o.items[0].n_items, 1);
        if (o.items[0].n_items == 1) {
            CHECK_EQ(o.items[0].items[0].rank, 1);
            CHECK(floats_are(&o.items[0].items[0], e5, 5));
        }
    }
    /* encoding gives back ONNX's own bytes (the expected output file is the input renamed) */
    uint8_t *buf = NULL;
    size_t len = 0;
    free(s.name);
    s.name = strdup("y");
    CHECK_EQ(npk_tensor_save_pb(&s, &buf, &len), 0);
    npk_tensor again;
    CHECK_EQ(npk_value_load_pb(&again, buf, len, NPK_KIND_SEQUENCE), 0);
    CHECK(again.n_items == 2 && floats_are(&again.items[1], e1, 4));
    npk_tensor_free(&again);
    FILE *f = fopen(TD "/test_identity_sequence/test_data_set_0/output_0.pb", "rb");
    CHECK(f != NULL);
    if (f) {
        uint8_t ref[256];
        size_t n = fread(ref, 1, sizeof ref, f);
        fclose(f);
        CHECK_EQ(n, len);
        CHECK(n == len && !memcmp(ref, buf, n));
    }
    free(buf);
    /* deep copy owns its elements */
    npk_tensor c;
    CHECK_EQ(npk_tensor_copy(&c, &o), 0);
    npk_tensor_free(&o);
    CHECK(c.n_items == 1 && c.items[0].n_items == 1 && floats_are(&c.items[0].items[0], e5, 5));
    npk_tensor_free(&c);
    npk_tensor_free(&s);
}

/* A float tensor message with raw data (not owned: points at v and dims). */
static void mk_tp(Onnx__TensorProto *t, int64_t *dims, size_t rank, float *v, size_t n) {
    onnx__tensor_proto__init(t);
    t->n_dims = rank;
    t->dims = dims;
    t->has_data_type = 1;
    t->data_type = NPK_DT_FLOAT;
    t->has_raw_data = 1;
    t->raw_data.data = (uint8_t *)v;
    t->raw_data.len = n * sizeof(float);
}

static void test_built_messages(void) {
    int64_t d2[1] = {2}, d3[1] = {3};
    float a[2] = {0.5f, -1.0f}, b[3] = {7, 8, 9};
    Onnx__TensorProto ta, tb;
    mk_tp(&ta, d2, 1, a, 2);
    mk_tp(&tb, d3, 1, b, 3);
    Onnx__TensorProto *vals[2] = {&ta, &tb};
    NpkOnnxData__SequenceProto sp;
    npk_onnx_data__sequence_proto__init(&sp);
    sp.name = "s";
    sp.has_elem_type = 1;
    sp.elem_type = NPK_ONNX_DATA__ELEM_KIND__TENSOR;
    sp.n_tensor_values = 2;
    sp.tensor_values = vals;
    uint8_t buf[512];
    size_t n = npk_onnx_data__sequence_proto__pack(&sp, buf);
    npk_tensor t;
    CHECK_EQ(npk_value_load_pb(&t, buf, n, NPK_KIND_SEQUENCE), 0);
    CHECK(t.n_items == 2 && floats_are(&t.items[0], a, 2) && floats_are(&t.items[1], b, 3));
    CHECK(t.n_items == 2 && t.items[1].dims[0] == 3);
    npk_tensor_free(&t);
    /* truncated: a message, never a crash */
    CHECK(npk_value_load_pb(&t, buf, n - 5, NPK_KIND_SEQUENCE) < 0);
    CHECK(strstr(npk_errmsg(), "SequenceProto") != NULL);
    /* elements of different element types */
    int32_t iv[2] = {1, 2};
    tb.data_type = NPK_DT_INT32;
    tb.raw_data.data = (uint8_t *)iv;
    tb.raw_data.len = 8;
    tb.dims = d2;
    n = npk_onnx_data__sequence_proto__pack(&sp, buf);
    CHECK_EQ(npk_value_load_pb(&t, buf, n, NPK_KIND_SEQUENCE), -NPK_EFORMAT);
    CHECK(strstr(npk_errmsg(), "element 1 is int32, element 0 is float") != NULL);
    /* a sequence of maps is refused by name */
    NpkOnnxData__MapProto mp;
    npk_onnx_data__map_proto__init(&mp);
    NpkOnnxData__MapProto *maps[1] = {&mp};
    NpkOnnxData__SequenceProto sm;
    npk_onnx_data__sequence_proto__init(&sm);
    sm.has_elem_type = 1;
    sm.elem_type = NPK_ONNX_DATA__ELEM_KIND__MAP;
    sm.n_map_values = 1;
    sm.map_values = maps;
    n = npk_onnx_data__sequence_proto__pack(&sm, buf);
    CHECK_EQ(npk_value_load_pb(&t, buf, n, NPK_KIND_SEQUENCE), -NPK_EUNSUPPORTED);
    CHECK(strstr(npk_errmsg(), "holds map values") != NULL);

    /* optionals: a tensor, nothing, and an inconsistent one */
    NpkOnnxData__OptionalProto op;
    npk_onnx_data__optional_proto__init(&op);
    op.has_elem_type = 1;
    op.elem_type = NPK_ONNX_DATA__ELEM_KIND__TENSOR;
    op.tensor_value = &ta;
    n = npk_onnx_data__optional_proto__pack(&op, buf);
    CHECK_EQ(npk_value_load_pb(&t, buf, n, NPK_KIND_OPTIONAL), 0);
    CHECK(t.kind == NPK_KIND_OPTIONAL && t.n_items == 1 && floats_are(&t.items[0], a, 2));
    /* and written back, it decodes with the generated code to the same fields */
    uint8_t *out;
    size_t on;
    CHECK_EQ(npk_tensor_save_pb(&t, &out, &on), 0);
    NpkOnnxData__OptionalProto *back = npk_onnx_data__optional_proto__unpack(NULL, on, out);
    CHECK(back != NULL);
    if (back) {
        CHECK_EQ(back->elem_type, NPK_ONNX_DATA__ELEM_KIND__TENSOR);
        CHECK(back->tensor_value && back->tensor_value->n_dims == 1 && back->tensor_value->dims[0] == 2);
        CHECK(back->tensor_value && back->tensor_value->raw_data.len == 8 && !memcmp(back->tensor_value->raw_data.data, a, 8));
        CHECK(back->sequence_value == NULL);
        npk_onnx_data__optional_proto__free_unpacked(back, NULL);
    }
    free(out);
    npk_tensor_free(&t);
    op.tensor_value = NULL;
    n = npk_onnx_data__optional_proto__pack(&op, buf);
    CHECK_EQ(npk_value_load_pb(&t, buf, n, NPK_KIND_OPTIONAL), 0);
    CHECK(t.kind == NPK_KIND_OPTIONAL && t.n_items == 0);
    npk_tensor_free(&t);
    op.tensor_value = &ta;
    op.elem_type = NPK_ONNX_DATA__ELEM_KIND__SEQUENCE;
    n = npk_onnx_data__optional_proto__pack(&op, buf);
    CHECK_EQ(npk_value_load_pb(&t, buf, n, NPK_KIND_OPTIONAL), -NPK_EFORMAT);
    CHECK(strstr(npk_errmsg(), "holds a tensor but its elem_type is sequence") != NULL);
}

static void test_identity_models(void) {
    npk_graph *g;
    CHECK_EQ(npk_graph_load_file(&g, TD "/test_identity_sequence/model.onnx"), 0);
    if (!g) return;
    CHECK_EQ(npk_graph_input(g, 0)->kind, NPK_KIND_SEQUENCE);
    CHECK_EQ(npk_graph_input(g, 0)->dtype, NPK_DT_FLOAT);
    CHECK_EQ(npk_graph_input(g, 0)->rank, -1);
    char ds[64];
    CHECK_STR(npk_value_desc_str(npk_graph_output(g, 0), ds, sizeof ds), "sequence(float)");
    npk_tensor in, *outs = NULL, rnd;
    size_t no = 0;
    CHECK_EQ(npk_value_load_pb_file(&in, TD "/test_identity_sequence/test_data_set_0/input_0.pb", NPK_KIND_SEQUENCE), 0);
    const float e1[4] = {2, 3, 1, 5};
    const char *devs[2] = {"cpu", "v0"};
    for (int d = 0; d < 2; d++) {
        npk_run_opts o = {.device = devs[d]};
        int rc = npk_graph_run(g, &o, &in, 1, &outs, &no, NULL);
        CHECK_EQ(rc, 0);
        if (rc) {
            fprintf(stderr, "%s: %s\n", devs[d], npk_errmsg());
            continue;
        }
        CHECK_EQ(no, 1);
        CHECK_STR(outs[0].name, "y");
        CHECK(outs[0].kind == NPK_KIND_SEQUENCE && outs[0].n_items == 2 && floats_are(&outs[0].items[1], e1, 4));
        npk_tensor_free(&outs[0]);
        free(outs);
    }
    /* random inputs are tensors only */
    CHECK_EQ(npk_graph_random_input(g, 0, 1, &rnd), -NPK_EUNSUPPORTED);
    CHECK(strstr(npk_errmsg(), "input 'x' is a sequence value") != NULL);
    /* an element of the wrong type, then a tensor where a sequence is declared */
    in.items[1].dtype = NPK_DT_INT32;
    CHECK(npk_graph_run(g, NULL, &in, 1, &outs, &no, NULL) < 0);
    CHECK(strstr(npk_errmsg(), "input 'x' element 1 has type int32, the model declares float") != NULL);
    npk_tensor first = in.items[0];
    CHECK(npk_graph_run(g, NULL, &first, 1, &outs, &no, NULL) < 0);
    CHECK(strstr(npk_errmsg(), "input 'x' is a tensor value, the model declares sequence(float)") != NULL);
    npk_tensor_free(&in);
    npk_graph_free(g);

    CHECK_EQ(npk_graph_load_file(&g, TD "/test_identity_opt/model.onnx"), 0);
    if (!g) return;
    CHECK_STR(npk_value_desc_str(npk_graph_input(g, 0), ds, sizeof ds), "optional(sequence(float[5]))");
    /* an empty optional passes through as an empty optional */
    npk_tensor empty;
    memset(&empty, 0, sizeof empty);
    empty.kind = NPK_KIND_OPTIONAL;
    CHECK_EQ(npk_graph_run(g, NULL, &empty, 1, &outs, &no, NULL), 0);
    CHECK(no == 1 && outs[0].kind == NPK_KIND_OPTIONAL && outs[0].n_items == 0);
    if (no) npk_tensor_free(&outs[0]);
    free(outs);
    /* declared element shape [5] is checked inside the optional's sequence */
    CHECK_EQ(npk_value_load_pb_file(&in, TD "/test_identity_opt/test_data_set_0/input_0.pb", NPK_KIND_OPTIONAL), 0);
    if (in.n_items == 1 && in.items[0].n_items == 1) {
        in.items[0].items[0].dims[0] = 4;
        CHECK(npk_graph_run(g, NULL, &in, 1, &outs, &no, NULL) < 0);
        CHECK(strstr(npk_errmsg(), "input 'opt_in' element 0 has shape float[4], the model declares float[5]") != NULL);
    }
    npk_tensor_free(&in);
    npk_graph_free(g);
}

/* ---- models built here with the generated ModelProto code ---- */

typedef struct mbuild {
    Onnx__ModelProto m;
    Onnx__OperatorSetIdProto ops;
    Onnx__OperatorSetIdProto *opsp[1];
    Onnx__GraphProto g;
    Onnx__ValueInfoProto in, out;
    Onnx__ValueInfoProto *inp[1], *outp[1];
    Onnx__TypeProto tin, tin_elem, tin_elem2, tout;
    Onnx__TypeProto__Sequence seq;
    Onnx__TypeProto__Map map;
    Onnx__TypeProto__Tensor tt_in, tt_out;
    Onnx__NodeProto n[2];
    Onnx__NodeProto *np[2];
    char *n_in[2][1], *n_out[2][1];
} mbuild;

/* input x: sequence(tensor(float)) (or sequence(map(int64, float)) when map),
 * nodes Identity(x) -> y and, when second_op, second_op(y) -> z; output z (or y). */
static size_t build_model(mbuild *b, const char *second_op, int map, uint8_t *buf) {
    memset(b, 0, sizeof *b);
    onnx__model_proto__init(&b->m);
    onnx__operator_set_id_proto__init(&b->ops);
    b->ops.has_version = 1;
    b->ops.version = 16;
    b->opsp[0] = &b->ops;
    b->m.has_ir_version = 1;
    b->m.ir_version = 8;
    b->m.n_opset_import = 1;
    b->m.opset_import = b->opsp;
    onnx__graph_proto__init(&b->g);
    b->m.graph = &b->g;
    onnx__type_proto__tensor__init(&b->tt_in);
    b->tt_in.has_elem_type = 1;
    b->tt_in.elem_type = NPK_DT_FLOAT;
    onnx__type_proto__init(&b->tin_elem);
    onnx__type_proto__init(&b->tin);
    onnx__type_proto__sequence__init(&b->seq);
    b->tin.value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    b->tin.sequence_type = &b->seq;
    b->seq.elem_type = &b->tin_elem;
    if (map) {
        onnx__type_proto__map__init(&b->map);
        b->map.has_key_type = 1;
        b->map.key_type = NPK_DT_INT64;
        onnx__type_proto__init(&b->tin_elem2);
        b->tin_elem2.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        b->tin_elem2.tensor_type = &b->tt_in;
        b->map.value_type = &b->tin_elem2;
        b->tin_elem.value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
        b->tin_elem.map_type = &b->map;
    } else {
        b->tin_elem.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        b->tin_elem.tensor_type = &b->tt_in;
    }
    onnx__value_info_proto__init(&b->in);
    b->in.name = "x";
    b->in.type = &b->tin;
    b->inp[0] = &b->in;
    b->g.n_input = 1;
    b->g.input = b->inp;
    int nn = second_op ? 2 : 1;
    const char *names[3] = {"x", "y", "z"};
    for (int i = 0; i < nn; i++) {
        onnx__node_proto__init(&b->n[i]);
        b->n[i].name = i ? "second" : "ident";
        b->n[i].op_type = i ? (char *)second_op : "Identity";
        b->n_in[i][0] = (char *)names[i];
        b->n_out[i][0] = (char *)names[i + 1];
        b->n[i].n_input = b->n[i].n_output = 1;
        b->n[i].input = b->n_in[i];
        b->n[i].output = b->n_out[i];
        b->np[i] = &b->n[i];
    }
    b->g.n_node = (size_t)nn;
    b->g.node = b->np;
    onnx__value_info_proto__init(&b->out);
    b->out.name = (char *)names[nn];
    if (second_op) { /* declared a tensor: the operator claims to return one */
        onnx__type_proto__tensor__init(&b->tt_out);
        b->tt_out.has_elem_type = 1;
        b->tt_out.elem_type = NPK_DT_FLOAT;
        onnx__type_proto__init(&b->tout);
        b->tout.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        b->tout.tensor_type = &b->tt_out;
        b->out.type = &b->tout;
    } else {
        b->out.type = &b->tin;
    }
    b->outp[0] = &b->out;
    b->g.n_output = 1;
    b->g.output = b->outp;
    return onnx__model_proto__pack(&b->m, buf);
}

static void test_other_operators(void) {
    static mbuild b;
    uint8_t buf[1024];
    npk_graph *g;
    /* Identity -> Relu: Relu is a supported operator, but not on a sequence */
    size_t n = build_model(&b, "Relu", 0, buf);
    CHECK_EQ(npk_graph_load(&g, buf, n), 0);
    if (g) {
        CHECK_EQ(npk_graph_check(g, NULL), 0);
        npk_tensor s, *outs = NULL;
        size_t no = 0;
        int64_t d1[1] = {3};
        memset(&s, 0, sizeof s);
        s.kind = NPK_KIND_SEQUENCE;
        s.name = strdup("x");
        s.items = calloc(1, sizeof *s.items);
        s.n_items = 1;
        CHECK_EQ(npk_tensor_alloc(&s.items[0], NULL, NPK_DT_FLOAT, 1, d1), 0);
        const char *devs[2] = {"cpu", "shell"};
        for (int d = 0; d < 2; d++) {
            npk_run_opts o = {.device = devs[d]};
            CHECK_EQ(npk_graph_run(g, &o, &s, 1, &outs, &no, NULL), -NPK_EINVAL);
            CHECK(strstr(npk_errmsg(), "node 'second' (Relu): input 0 'y' is a sequence value: the operator takes tensors only") != NULL);
            CHECK(outs == NULL && no == 0);
        }
        npk_tensor_free(&s);
        npk_graph_free(g);
    }
    /* a sequence of maps is refused at import, naming the type */
    n = build_model(&b, NULL, 1, buf);
    g = NULL;
    CHECK_EQ(npk_graph_load(&g, buf, n), -NPK_EUNSUPPORTED);
    CHECK(g == NULL);
    CHECK(strstr(npk_errmsg(), "graph input 'x' has a sequence(map) type") != NULL);
    /* the plain sequence model loads and runs through Identity */
    n = build_model(&b, NULL, 0, buf);
    CHECK_EQ(npk_graph_load(&g, buf, n), 0);
    if (g) {
        CHECK_EQ(npk_graph_output(g, 0)->kind, NPK_KIND_SEQUENCE);
        npk_graph_free(g);
    }
}

int main(void) {
    test_onnx_files();
    test_built_messages();
    test_identity_models();
    test_other_operators();
    return CHECK_DONE();
}
