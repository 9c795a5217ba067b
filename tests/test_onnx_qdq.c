// SPDX-License-Identifier: MIT
/* Quantized float subgraphs: QuantizeLinear -> DequantizeLinear -> Conv (weights and
 * bias through DequantizeLinear) -> QuantizeLinear, built here as a ModelProto with the
 * generated protobuf-c code. On v0 and shell the DequantizeLinear/QuantizeLinear pair
 * around the Conv is folded into one integer convolution on the device; its output must
 * equal an independent QLinearConv computation written below, and lie within one
 * quantization step of the float CPU reference. The integer path also runs with uint8
 * activations (zero point 128) to exercise the exact uint8 folding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "npukit/graph.h"
#include "onnx/onnx.pb-c.h"

enum { N = 1, C = 4, H = 7, W = 6, M = 6, G = 2, K = 3, CPG = C / G, MPG = M / G };
#define OH (H - K + 1 + 2 - 2) /* pads 1,1 and stride 2 -> (7+2-3)/2+1 = 4 */

static Onnx__TensorProto *tensor(const char *name, int dt, int rank, const int64_t *dims, const void *raw, size_t bytes) {
    Onnx__TensorProto *t = calloc(1, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = dt;
    t->n_dims = (size_t)rank;
    t->dims = (int64_t *)dims;
    t->has_raw_data = 1;
    t->raw_data.data = (uint8_t *)raw;
    t->raw_data.len = bytes;
    return t;
}

static Onnx__NodeProto *node(const char *op, const char *name, int nin, char **in, char *out) {
    Onnx__NodeProto *n = calloc(1, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->name = (char *)name;
    n->n_input = (size_t)nin;
    n->input = in;
    n->n_output = 1;
    n->output = calloc(1, sizeof(char *));
    n->output[0] = out;
    return n;
}

static Onnx__AttributeProto *ints_attr(const char *name, size_t n, int64_t *v) {
    Onnx__AttributeProto *a = calloc(1, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    a->n_ints = n;
    a->ints = v;
    return a;
}

static Onnx__AttributeProto *int_attr(const char *name, int64_t v) {
    Onnx__AttributeProto *a = calloc(1, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1;
    a->i = v;
    return a;
}

static Onnx__ValueInfoProto *vinfo(const char *name, int dt, int rank, const int64_t *dims) {
    Onnx__ValueInfoProto *vi = calloc(1, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = (char *)name;
    Onnx__TypeProto *tp = calloc(1, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = calloc(1, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = dt;
    Onnx__TensorShapeProto *sh = calloc(1, sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = (size_t)rank;
    sh->dim = calloc((size_t)rank, sizeof(void *));
    for (int i = 0; i < rank; i++) {
        sh->dim[i] = calloc(1, sizeof(Onnx__TensorShapeProto__Dimension));
        onnx__tensor_shape_proto__dimension__init(sh->dim[i]);
        sh->dim[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        sh->dim[i]->dim_value = dims[i];
    }
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    return vi;
}

/* Pack a graph into a ModelProto (opset 13). */
static uint8_t *pack_model(Onnx__GraphProto *gr, size_t *len) {
    Onnx__OperatorSetIdProto ops;
    onnx__operator_set_id_proto__init(&ops);
    ops.domain = "";
    ops.has_version = 1;
    ops.version = 13;
    Onnx__OperatorSetIdProto *opl[1] = {&ops};
    Onnx__ModelProto mp;
    onnx__model_proto__init(&mp);
    mp.has_ir_version = 1;
    mp.ir_version = 7;
    mp.n_opset_import = 1;
    mp.opset_import = opl;
    mp.graph = gr;
    *len = onnx__model_proto__get_packed_size(&mp);
    uint8_t *buf = malloc(*len);
    onnx__model_proto__pack(&mp, buf);
    return buf;
}

static void free_vinfo(Onnx__ValueInfoProto *vi) {
    Onnx__TensorShapeProto *sh = vi->type->tensor_type->shape;
    for (size_t k = 0; k < sh->n_dim; k++) free(sh->dim[k]);
    free(sh->dim);
    free(sh);
    free(vi->type->tensor_type);
    free(vi->type);
    free(vi);
}

/* Model data (shared with the independent check). */
static int8_t wq[M * CPG * K * K];
static float wscale[M], bscale[M];
static int32_t bq[M];
static const float XS = 0.05f, YS = 0.1f;

/* shared: dq_x has a second consumer, an Add (xf + xf -> graph output r), as a residual
 * connection: the group still runs as one integer op and reads xq itself. */
static uint8_t *build_model(int act_uint8, int shared, size_t *len) {
    static int64_t dx[4] = {N, C, H, W}, dw[4] = {M, CPG, K, K}, dm[1] = {M}, scal[1];
    static uint8_t zp_u8 = 128;
    static int8_t zp_i8 = 0, yzp = 3;
    static float xs, ys;
    xs = XS;
    ys = YS;
    (void)scal;
    for (int i = 0; i < M * CPG * K * K; i++) wq[i] = (int8_t)((i * 37 + 11) % 255 - 127);
    for (int m = 0; m < M; m++) {
        wscale[m] = 0.01f * (float)(m + 1);
        bscale[m] = XS * wscale[m];
        bq[m] = (m - 2) * 97;
    }
    Onnx__TensorProto *inits[8];
    int ni = 0;
    inits[ni++] = tensor("xs", 1, 0, NULL, &xs, 4);
    inits[ni++] = act_uint8 ? tensor("xz", 2, 0, NULL, &zp_u8, 1) : tensor("xz", 3, 0, NULL, &zp_i8, 1);
    inits[ni++] = tensor("wq", 3, 4, dw, wq, sizeof wq);
    inits[ni++] = tensor("ws", 1, 1, dm, wscale, sizeof wscale);
    inits[ni++] = tensor("bq", 6, 1, dm, bq, sizeof bq);
    inits[ni++] = tensor("bs", 1, 1, dm, bscale, sizeof bscale);
    inits[ni++] = tensor("ys", 1, 0, NULL, &ys, 4);
    inits[ni++] = tensor("yz", 3, 0, NULL, &yzp, 1);
    static char *in_q[3] = {"x", "xs", "xz"}, *in_dx[3] = {"xq", "xs", "xz"}, *in_dw[2] = {"wq", "ws"},
                *in_db[2] = {"bq", "bs"}, *in_conv[3] = {"xf", "wf", "bf"}, *in_y[3] = {"yf", "ys", "yz"};
    static char *in_add[2] = {"xf", "xf"};
    Onnx__NodeProto *nodes[7];
    int nn = shared ? 7 : 6;
    nodes[0] = node("QuantizeLinear", "quant_x", 3, in_q, "xq");
    nodes[1] = node("DequantizeLinear", "dq_x", 3, in_dx, "xf");
    nodes[2] = node("DequantizeLinear", "dq_w", 2, in_dw, "wf");
    nodes[3] = node("DequantizeLinear", "dq_b", 2, in_db, "bf");
    nodes[4] = node("Conv", "conv", 3, in_conv, "yf");
    nodes[5] = node("QuantizeLinear", "quant_y", 3, in_y, "y");
    if (shared) nodes[6] = node("Add", "residual", 2, in_add, "r");
    static int64_t pads[4] = {1, 1, 1, 1}, strides[2] = {2, 2};
    Onnx__AttributeProto *wat[1] = {int_attr("axis", 0)};
    nodes[2]->n_attribute = 1;
    nodes[2]->attribute = wat;
    nodes[3]->n_attribute = 1; /* the 1-D bias: per-element scales on axis 0 */
    nodes[3]->attribute = wat;
    Onnx__AttributeProto *cat[3] = {ints_attr("pads", 4, pads), ints_attr("strides", 2, strides), int_attr("group", G)};
    nodes[4]->n_attribute = 3;
    nodes[4]->attribute = cat;
    static int64_t dy[4] = {N, M, 4, 3};
    Onnx__ValueInfoProto *gin[1] = {vinfo("x", 1, 4, dx)}, *gout[2] = {vinfo("y", 3, 4, dy), vinfo("r", 1, 4, dx)};
    Onnx__GraphProto gr;
    onnx__graph_proto__init(&gr);
    gr.name = "qdq";
    gr.n_node = (size_t)nn;
    gr.node = nodes;
    gr.n_initializer = (size_t)ni;
    gr.initializer = inits;
    gr.n_input = 1;
    gr.input = gin;
    gr.n_output = shared ? 2 : 1;
    gr.output = gout;
    uint8_t *buf = pack_model(&gr, len);
    for (int i = 0; i < ni; i++) free(inits[i]);
    for (int i = 0; i < nn; i++) {
        free(nodes[i]->output);
        free(nodes[i]);
    }
    free(wat[0]);
    for (int i = 0; i < 3; i++) free(cat[i]);
    free_vinfo(gin[0]);
    free_vinfo(gout[0]);
    free_vinfo(gout[1]);
    return buf;
}

/* Independent QLinearConv semantics on the quantized input (written from the ONNX definition). */
static void expect_qlinear(const int64_t *xq, int64_t xz, int8_t *y) {
    for (int m = 0; m < M; m++) {
        int g = m / MPG;
        for (int oh = 0; oh < 4; oh++)
            for (int ow = 0; ow < 3; ow++) {
                int64_t acc = bq[m];
                for (int c = 0; c < CPG; c++)
                    for (int kh = 0; kh < K; kh++)
                        for (int kw = 0; kw < K; kw++) {
                            int ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                            acc += (xq[((g * CPG + c) * H + ih) * W + iw] - xz) * wq[((m * CPG + c) * K + kh) * K + kw];
                        }
                float mult = XS * wscale[m] / YS;
                float v = nearbyintf((float)acc * mult) + 3.0f;
                y[(m * 4 + oh) * 3 + ow] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
            }
    }
}

/* The residual Add's output: 2 * DequantizeLinear(xq) in float32. */
static void check_residual(const npk_tensor *r, const int64_t *xq, int64_t xz) {
    CHECK(r->dtype == NPK_DT_FLOAT);
    int bad = 0;
    for (int i = 0; i < N * C * H * W; i++) {
        float d = (float)(xq[i] - xz) * XS;
        if (((const float *)r->data)[i] != d + d) bad++;
    }
    CHECK_EQ(bad, 0);
}

/* The model's input x and its QuantizeLinear by hand (xq, zero point xz). */
static void make_input(int act_uint8, npk_tensor *in, int64_t *xq, int64_t *xz) {
    int64_t dx[4] = {N, C, H, W};
    npk_tensor_alloc(in, "x", NPK_DT_FLOAT, 4, dx);
    float *xv = in->data;
    *xz = act_uint8 ? 128 : 0;
    for (int i = 0; i < N * C * H * W; i++) {
        xv[i] = (float)((i * 53) % 97 - 48) * 0.0371f;
        float q = nearbyintf(xv[i] / XS) + (float)*xz;
        float lo = act_uint8 ? 0 : -128, hi = act_uint8 ? 255 : 127;
        xq[i] = (int64_t)(q < lo ? lo : q > hi ? hi : q);
    }
}

/* The model, its input and the expected QLinear output (NULL when it does not load). */
static npk_graph *load_case(int act_uint8, int shared, npk_tensor *in, int64_t *xq, int64_t *xz, int8_t *want) {
    size_t len;
    uint8_t *buf = build_model(act_uint8, shared, &len);
    npk_graph *g = NULL;
    CHECK_EQ(npk_graph_load(&g, buf, len), 0);
    free(buf);
    if (!g) return NULL;
    make_input(act_uint8, in, xq, xz);
    expect_qlinear(xq, *xz, want);
    return g;
}

static void run_case(int act_uint8, int shared) {
    npk_tensor in;
    int8_t want[M * 4 * 3];
    int64_t xq[N * C * H * W], xz;
    npk_graph *g = load_case(act_uint8, shared, &in, xq, &xz, want);
    if (!g) return;
    npk_tensor *ref = NULL;
    size_t nref = 0;
    npk_run_report crep;
    CHECK_EQ(npk_graph_run(g, NULL, &in, 1, &ref, &nref, &crep), 0); /* CPU reference */
    /* the CPU evaluates the group with QLinearConv's integer arithmetic too, as ONNX Runtime (issue 14) */
    CHECK(ref && ref[0].dtype == NPK_DT_INT8 && !memcmp(ref[0].data, want, sizeof want));
    int cpu_fused = 0;
    for (size_t i = 0; i < crep.n_nodes; i++) cpu_fused += crep.nodes[i].place == NPK_PLACE_FUSED;
    CHECK_EQ(cpu_fused, shared ? 3 : 4); /* a shared dq_x still runs for the Add */
    if (shared && ref && nref == 2) check_residual(&ref[1], xq, xz);
    npk_run_report_fini(&crep);
    const char *devs[3] = {"v0", "shell", "e1"};
    for (int d = 0; d < 3; d++) {
        npk_run_opts o = {.device = devs[d]};
        npk_tensor *out = NULL;
        size_t no = 0;
        npk_run_report rep;
        int rc = npk_graph_run(g, &o, &in, 1, &out, &no, &rep);
        CHECK_EQ(rc, 0);
        if (rc) {
            fprintf(stderr, "%s: %s\n", devs[d], npk_errmsg());
            continue;
        }
        CHECK_EQ(out[0].dtype, NPK_DT_INT8);
        CHECK(!memcmp(out[0].data, want, sizeof want)); /* exact integer semantics */
        int maxdiff = 0;
        for (size_t i = 0; ref && i < sizeof want; i++) {
            int df = abs(((int8_t *)out[0].data)[i] - ((int8_t *)ref[0].data)[i]);
            if (df > maxdiff) maxdiff = df;
        }
        CHECK(maxdiff <= 1); /* float reference: within one quantization step */
        int fused = 0, conv_dev = 0;
        for (size_t i = 0; i < rep.n_nodes; i++) {
            if (rep.nodes[i].place == NPK_PLACE_FUSED) fused++;
            if (!strcmp(rep.nodes[i].op, "Conv") && rep.nodes[i].place == NPK_PLACE_DEVICE) conv_dev = 1;
        }
        CHECK(conv_dev);
        CHECK_EQ(fused, shared ? 3 : 4); /* dq_x (unless shared), dq_w, dq_b, quant_y */
        CHECK_EQ(rep.cpu_macs, 0);
        CHECK_EQ(no, (size_t)(shared ? 2 : 1));
        if (shared && no == 2) {
            check_residual(&out[1], xq, xz);
            npk_tensor_free(&out[1]);
        }
        npk_tensor_free(&out[0]);
        free(out);
        npk_run_report_fini(&rep);
    }
    if (ref) {
        if (nref == 2) npk_tensor_free(&ref[1]);
        npk_tensor_free(&ref[0]);
        free(ref);
    }
    npk_tensor_free(&in);
    npk_graph_free(g);
}

/* Activation x activation: DequantizeLinear(a) and DequantizeLinear(b), both graph
 * inputs (uint8 a, int8 b) -> MatMul (batched [2,3,4] x [2,4,5]) or Gemm ([6,4] x [4,5],
 * gemm = 1, or x [5,4]^T, gemm = 2, plus the int32 bias through DequantizeLinear) ->
 * QuantizeLinear. Every device runs it as QLinearMatMul / QGemm (B staged like A,
 * nothing constant), equal to the definition computed here, and so does the CPU. */
static void act_act(int gemm) {
    static int64_t da[3] = {2, 3, 4}, db[3] = {2, 4, 5}, dy[3] = {2, 3, 5}, dbias[1] = {5};
    static int64_t ga[2] = {6, 4}, gb0[2] = {4, 5}, gb1[2] = {5, 4}, gy[2] = {6, 5};
    static int32_t bias[5] = {300, -1200, 7, 0, 45};
    static float bsc;
    bsc = 0.03f * 0.07f;
    static float as = 0.03f, bs = 0.07f, ys = 0.11f;
    static uint8_t az = 121;
    static int8_t bz = -3, yz = 4;
    Onnx__TensorProto *inits[8] = {tensor("as", 1, 0, NULL, &as, 4), tensor("az", 2, 0, NULL, &az, 1),
                                   tensor("bs", 1, 0, NULL, &bs, 4), tensor("bz", 3, 0, NULL, &bz, 1),
                                   tensor("ys", 1, 0, NULL, &ys, 4), tensor("yz", 3, 0, NULL, &yz, 1),
                                   tensor("cq", 6, 1, dbias, bias, sizeof bias), tensor("cs", 1, 0, NULL, &bsc, 4)};
    int ninit = gemm ? 8 : 6, nnode = gemm ? 5 : 4;
    static char *in_da[3] = {"a", "as", "az"}, *in_db[3] = {"b", "bs", "bz"}, *in_mm[3] = {"af", "bf", "cf"},
                *in_q[3] = {"yf", "ys", "yz"}, *in_dc[2] = {"cq", "cs"};
    Onnx__NodeProto *nodes[5] = {node("DequantizeLinear", "dq_a", 3, in_da, "af"), node("DequantizeLinear", "dq_b", 3, in_db, "bf"),
                                 node(gemm ? "Gemm" : "MatMul", "mm", gemm ? 3 : 2, in_mm, "yf"),
                                 node("QuantizeLinear", "q_y", 3, in_q, "y"), node("DequantizeLinear", "dq_c", 2, in_dc, "cf")};
    Onnx__AttributeProto *tb[1] = {int_attr("transB", 1)};
    if (gemm == 2) {
        nodes[2]->n_attribute = 1;
        nodes[2]->attribute = tb;
    }
    const int64_t *dims_a = gemm ? ga : da, *dims_b = gemm == 1 ? gb0 : gemm == 2 ? gb1 : db, *dims_y = gemm ? gy : dy;
    int rank = gemm ? 2 : 3;
    Onnx__ValueInfoProto *gin[2] = {vinfo("a", 2, rank, dims_a), vinfo("b", 3, rank, dims_b)}, *gout[1] = {vinfo("y", 3, rank, dims_y)};
    Onnx__GraphProto gr;
    onnx__graph_proto__init(&gr);
    gr.name = "actact";
    gr.n_node = (size_t)nnode;
    gr.node = nodes;
    gr.n_initializer = (size_t)ninit;
    gr.initializer = inits;
    gr.n_input = 2;
    gr.input = gin;
    gr.n_output = 1;
    gr.output = gout;
    size_t len;
    uint8_t *buf = pack_model(&gr, &len);
    for (int i = 0; i < 8; i++) free(inits[i]);
    for (int i = 0; i < 5; i++) {
        free(nodes[i]->output);
        free(nodes[i]);
    }
    free(tb[0]);
    free_vinfo(gin[0]);
    free_vinfo(gin[1]);
    free_vinfo(gout[0]);
    npk_graph *g;
    CHECK_EQ(npk_graph_load(&g, buf, len), 0);
    free(buf);
    if (!g) return;
    npk_tensor in[2];
    npk_tensor_alloc(&in[0], "a", NPK_DT_UINT8, rank, dims_a);
    npk_tensor_alloc(&in[1], "b", NPK_DT_INT8, rank, dims_b);
    uint8_t *av = in[0].data;
    int8_t *bv = in[1].data, want[2 * 3 * 5];
    for (int64_t i = 0; i < npk_tensor_numel(&in[0]); i++) av[i] = (uint8_t)((i * 97 + 13) % 256);
    for (int64_t i = 0; i < npk_tensor_numel(&in[1]); i++) bv[i] = (int8_t)((i * 71 + 5) % 256 - 128);
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 5; j++) {
                int64_t acc = gemm ? bias[j] : 0;
                for (int k = 0; k < 4; k++) { /* Gemm: row t * 3 + i of A against the one B */
                    int bi = gemm == 2 ? j * 4 + k : gemm == 1 ? k * 5 + j : (t * 4 + k) * 5 + j;
                    acc += (av[(t * 3 + i) * 4 + k] - az) * (bv[bi] - bz);
                }
                float v = nearbyintf((float)acc * (as * bs / ys)) + (float)yz;
                want[(t * 3 + i) * 5 + j] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
            }
    const char *devs[4] = {"cpu", "v0", "shell", "e1"};
    for (int d = 0; d < 4; d++) {
        npk_run_opts o = {.device = devs[d]};
        npk_tensor *out = NULL;
        size_t no = 0;
        npk_run_report rep;
        int rc = npk_graph_run(g, &o, in, 2, &out, &no, &rep);
        CHECK_EQ(rc, 0);
        if (rc) {
            fprintf(stderr, "%s: %s\n", devs[d], npk_errmsg());
            continue;
        }
        CHECK(out[0].dtype == NPK_DT_INT8 && !memcmp(out[0].data, want, sizeof want));
        int fused = 0, mm = -1;
        for (size_t i = 0; i < rep.n_nodes; i++) {
            fused += rep.nodes[i].place == NPK_PLACE_FUSED;
            if (!strcmp(rep.nodes[i].op, gemm ? "Gemm" : "MatMul")) mm = rep.nodes[i].place;
        }
        CHECK_EQ(fused, gemm ? 4 : 3);
        CHECK_EQ(mm, d ? NPK_PLACE_DEVICE : NPK_PLACE_CPU);
        if (d) CHECK_EQ(rep.cpu_macs, 0);
        npk_tensor_free(&out[0]);
        free(out);
        npk_run_report_fini(&rep);
    }
    npk_tensor_free(&in[0]);
    npk_tensor_free(&in[1]);
    npk_graph_free(g);
}

/* The one table of operator families that every backend and onnx-test share. */
static void op_families(void) {
    const char *int_products[] = {"MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv"};
    for (size_t i = 0; i < 4; i++) {
        CHECK(npk_onnx_op_supported(int_products[i]));
        CHECK_EQ(npk_onnx_op_family(int_products[i]), NPK_OPF_PRODUCT | NPK_OPF_INTEGER);
    }
    CHECK_EQ(npk_onnx_op_family("MatMul"), NPK_OPF_PRODUCT);
    CHECK_EQ(npk_onnx_op_family("Conv"), NPK_OPF_PRODUCT);
    CHECK_EQ(npk_onnx_op_family("Gemm"), NPK_OPF_PRODUCT); /* a device runs it as DQ -> Gemm -> Q */
    CHECK_EQ(npk_onnx_op_family("QuantizeLinear"), NPK_OPF_QUANT);
    CHECK_EQ(npk_onnx_op_family("DequantizeLinear"), NPK_OPF_QUANT);
    CHECK_EQ(npk_onnx_op_family("Relu"), 0);
    CHECK(npk_onnx_op_supported("Relu"));
    CHECK(!npk_onnx_op_supported("StringNormalizer"));
    CHECK_EQ(npk_onnx_op_family("StringNormalizer"), 0);
    CHECK(!npk_onnx_op_supported("matmul")); /* op_type is case-sensitive */
}

/* --qdq=ort (npk_run_opts.qdq = NPK_QDQ_ORT): ONNX Runtime on x86 fuses a group only when its
 * activation and output have one type after its int8 -> uint8 rewrite of Q -> DQ pairs. Here
 * quant_x -> dq_x is rewritten to uint8 (one consumer each, equal int8 zero points) while
 * quant_y's output is a graph output and stays int8: the Conv runs in float as written, on the
 * CPU, with every device too (a documented limit: the user asked for ONNX Runtime's choice),
 * and the result is within one step of the integer definition. */
static void ort_mode(int act_uint8) {
    npk_tensor in;
    int8_t want[M * 4 * 3];
    int64_t xq[N * C * H * W], xz;
    npk_graph *g = load_case(act_uint8, 0, &in, xq, &xz, want);
    if (!g) return;
    const char *devs[2] = {"cpu", "v0"};
    for (int d = 0; d < 2; d++) {
        npk_run_opts o = {.device = devs[d], .qdq = NPK_QDQ_ORT};
        npk_tensor *out = NULL;
        size_t no = 0;
        npk_run_report rep;
        CHECK_EQ(npk_graph_run(g, &o, &in, 1, &out, &no, &rep), 0);
        int fused = 0, conv_cpu = 0;
        for (size_t i = 0; i < rep.n_nodes; i++) {
            fused += rep.nodes[i].place == NPK_PLACE_FUSED;
            if (!strcmp(rep.nodes[i].op, "Conv"))
                conv_cpu = rep.nodes[i].place == NPK_PLACE_CPU && rep.nodes[i].offload_limit &&
                           strstr(rep.nodes[i].why, "--qdq=ort: float as in ONNX Runtime (uint8 input, int8 output)");
        }
        CHECK_EQ(fused, 0);
        CHECK(conv_cpu);
        int maxdiff = 0;
        for (size_t i = 0; out && i < sizeof want; i++) {
            int df = abs(((int8_t *)out[0].data)[i] - want[i]);
            if (df > maxdiff) maxdiff = df;
        }
        CHECK(out && maxdiff <= 1);
        for (size_t i = 0; i < no; i++) npk_tensor_free(&out[i]);
        free(out);
        npk_run_report_fini(&rep);
    }
    CHECK_EQ(npk_qdq_mode_parse("ort"), NPK_QDQ_ORT);
    CHECK_EQ(npk_qdq_mode_parse("fused"), NPK_QDQ_FUSED);
    CHECK_EQ(npk_qdq_mode_parse("ORT"), -1);
    npk_tensor_free(&in);
    npk_graph_free(g);
}

int main(void) {
    op_families();
    run_case(0, 0);
    run_case(1, 0);
    run_case(0, 1);
    run_case(1, 1);
    act_act(0);
    act_act(1);
    act_act(2);
    ort_mode(0);
    ort_mode(1);
    return CHECK_DONE();
}
