// SPDX-License-Identifier: MIT
/* Control flow (issue 14): If and Loop bodies read values of the enclosing
 * scopes (graph inputs, initializers, values of an enclosing body) by name;
 * results against values computed here. Unsupported operators inside a
 * subgraph are listed with the node holding it; a body reading a name no
 * scope defines is refused at import. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/onnx_build.h"
#include "npukit/graph.h"

static npk_graph *load(ob_model *m) { return ob_load(m); }

static const int64_t d3[1] = {3};
static const float xv[3] = {0.5f, -2.0f, 4.0f}, wv[3] = {1.0f, 2.0f, 3.0f};

/* y = If(c) then (If(c2) then x + w else x - w) else x * w: the inner branches read x and w
 * two scopes up, c2 one scope up. */
static ob_model *if_model(const char *else_op) {
    ob_model *m = ob_new(13);
    ob_input(m, "x", NPK_DT_FLOAT, 1, d3);
    ob_input(m, "c", NPK_DT_BOOL, 0, NULL);
    ob_input(m, "c2", NPK_DT_BOOL, 0, NULL);
    ob_init(m, "w", NPK_DT_FLOAT, 1, d3, wv);
    Onnx__NodeProto *outer = ob_node(m, "", "If", "outer", "c", "y");
    ob_output(m, "y", NPK_DT_FLOAT, 1, d3);

    Onnx__GraphProto saved = ob_sub_begin(m, "then");
    Onnx__NodeProto *inner = ob_node(m, "", "If", "inner", "c2", "t");
    ob_output(m, "t", NPK_DT_FLOAT, 1, d3);
    Onnx__GraphProto s2 = ob_sub_begin(m, "then2");
    ob_node(m, "", "Add", "add", "x,w", "a");
    ob_output(m, "a", NPK_DT_FLOAT, 1, d3);
    ob_attr_graph(m, inner, "then_branch", ob_sub_end(m, s2));
    s2 = ob_sub_begin(m, "else2");
    ob_node(m, "", "Sub", "sub", "x,w", "b");
    ob_output(m, "b", NPK_DT_FLOAT, 1, d3);
    ob_attr_graph(m, inner, "else_branch", ob_sub_end(m, s2));
    ob_attr_graph(m, outer, "then_branch", ob_sub_end(m, saved));

    saved = ob_sub_begin(m, "else");
    ob_node(m, "", else_op, "f", "x,w", "e");
    ob_output(m, "e", NPK_DT_FLOAT, 1, d3);
    ob_attr_graph(m, outer, "else_branch", ob_sub_end(m, saved));
    return m;
}

static void test_if(void) {
    npk_graph *g = load(if_model("Mul"));
    CHECK(g != NULL);
    if (!g) return;
    CHECK_EQ(npk_graph_n_inputs(g), 3);
    for (int cs = 0; cs < 3; cs++) {
        npk_tensor in[3], *outs = NULL;
        size_t no = 0;
        memset(in, 0, sizeof in);
        CHECK_EQ(npk_tensor_alloc(&in[0], "x", NPK_DT_FLOAT, 1, d3), 0);
        memcpy(in[0].data, xv, sizeof xv);
        CHECK_EQ(npk_tensor_alloc(&in[1], "c", NPK_DT_BOOL, 0, NULL), 0);
        CHECK_EQ(npk_tensor_alloc(&in[2], "c2", NPK_DT_BOOL, 0, NULL), 0);
        *(uint8_t *)in[1].data = cs < 2;
        *(uint8_t *)in[2].data = cs == 0;
        npk_run_opts o = {.device = "cpu"};
        int rc = npk_graph_run(g, &o, in, 3, &outs, &no, NULL);
        CHECK_EQ(rc, 0);
        if (rc) fprintf(stderr, "%s\n", npk_errmsg());
        if (!rc && no == 1) {
            const float *y = outs[0].data;
            for (int i = 0; i < 3; i++) {
                float e = cs == 0 ? xv[i] + wv[i] : cs == 1 ? xv[i] - wv[i] : xv[i] * wv[i];
                CHECK(y[i] == e);
            }
        }
        for (size_t k = 0; k < no; k++) npk_tensor_free(&outs[k]);
        free(outs);
        for (int k = 0; k < 3; k++) npk_tensor_free(&in[k]);
    }
    npk_graph_free(g);
}

static void test_unsupported_inside(void) {
    npk_graph *g = load(if_model("Frob"));
    CHECK(g != NULL);
    if (!g) return;
    CHECK_EQ(npk_graph_check(g, NULL), -NPK_EUNSUPPORTED);
    CHECK(strstr(npk_errmsg(), "Frob x1 (node 'f' (index 0 in a subgraph of 'outer'))") != NULL);
    npk_graph_free(g);
}

static void test_undefined_outer(void) {
    ob_model *m = ob_new(13);
    ob_input(m, "c", NPK_DT_BOOL, 0, NULL);
    Onnx__NodeProto *n = ob_node(m, "", "If", "if", "c", "y");
    ob_output(m, "y", NPK_DT_FLOAT, 1, d3);
    const char *br[2] = {"then_branch", "else_branch"};
    for (int k = 0; k < 2; k++) {
        Onnx__GraphProto s = ob_sub_begin(m, br[k]);
        ob_node(m, "", "Identity", "id", "nosuch", "t");
        ob_output(m, "t", NPK_DT_FLOAT, 1, d3);
        ob_attr_graph(m, n, br[k], ob_sub_end(m, s));
    }
    uint8_t *buf;
    size_t len;
    npk_graph *g = NULL;
    CHECK_EQ(ob_save(m, &buf, &len), 0);
    CHECK_EQ(npk_graph_load(&g, buf, len), -NPK_EFORMAT);
    CHECK(strstr(npk_errmsg(), "node 'if' (If): its subgraph 'then_branch' reads 'nosuch'") != NULL);
    CHECK(g == NULL);
    free(buf);
    ob_free(m);
}

/* Loop M = 4 times: acc += x (x from the outer scope), scan output acc after each step. */
static void test_loop(void) {
    ob_model *m = ob_new(13);
    ob_input(m, "x", NPK_DT_FLOAT, 1, d3);
    int64_t trips = 4;
    float zero[3] = {0, 0, 0};
    ob_init(m, "M", NPK_DT_INT64, 0, NULL, &trips);
    ob_init(m, "acc0", NPK_DT_FLOAT, 1, d3, zero);
    Onnx__NodeProto *n = ob_node(m, "", "Loop", "loop", "M,,acc0", "acc,steps");
    ob_output(m, "acc", NPK_DT_FLOAT, 1, d3);
    ob_output(m, "steps", NPK_DT_FLOAT, -1, NULL);
    Onnx__GraphProto s = ob_sub_begin(m, "body");
    ob_input(m, "i", NPK_DT_INT64, 0, NULL);
    ob_input(m, "cin", NPK_DT_BOOL, 0, NULL);
    ob_input(m, "a", NPK_DT_FLOAT, 1, d3);
    ob_node(m, "", "Identity", "c", "cin", "cout");
    ob_node(m, "", "Add", "add", "a,x", "a2");
    ob_node(m, "", "Identity", "s", "a2", "sc");
    ob_output(m, "cout", NPK_DT_BOOL, 0, NULL);
    ob_output(m, "a2", NPK_DT_FLOAT, 1, d3);
    ob_output(m, "sc", NPK_DT_FLOAT, 1, d3);
    ob_attr_graph(m, n, "body", ob_sub_end(m, s));
    npk_graph *g = load(m);
    CHECK(g != NULL);
    if (!g) return;
    npk_tensor in, *outs = NULL;
    size_t no = 0;
    memset(&in, 0, sizeof in);
    CHECK_EQ(npk_tensor_alloc(&in, "x", NPK_DT_FLOAT, 1, d3), 0);
    memcpy(in.data, xv, sizeof xv);
    npk_run_opts o = {.device = "cpu"};
    int rc = npk_graph_run(g, &o, &in, 1, &outs, &no, NULL);
    CHECK_EQ(rc, 0);
    if (rc) fprintf(stderr, "%s\n", npk_errmsg());
    if (!rc && no == 2) {
        const float *a = outs[0].data, *st = outs[1].data;
        CHECK(outs[1].rank == 2 && outs[1].dims[0] == 4 && outs[1].dims[1] == 3);
        for (int i = 0; i < 3; i++) {
            float e = 0;
            for (int t = 0; t < 4; t++) {
                e += xv[i];
                CHECK(st[t * 3 + i] == e);
            }
            CHECK(a[i] == e);
        }
    }
    for (size_t k = 0; k < no; k++) npk_tensor_free(&outs[k]);
    free(outs);
    npk_tensor_free(&in);
    npk_graph_free(g);
}

/* Shape inference through the bodies (issue 14 point 2): the int8 output of an If (both branches
 * [2, 4]), of a Loop (its loop-carried value keeps [2, 4]) and of a Scan (scan output: 2 slices
 * of [4] stacked) is known at load, so the MatMulInteger after it runs on v0 (before: on the CPU,
 * "shape depends on run-time data"), with the CPU's result. */
static void test_infer_through(int kind) {
    static const int64_t da[2] = {2, 4}, dw[2] = {4, 3};
    static const int8_t av[8] = {1, -2, 3, -4, 5, -6, 7, -8}, wv8[12] = {1, 2, 3, -1, -2, -3, 4, 5, 6, 0, 1, -1};
    ob_model *m = ob_new(13);
    ob_input(m, "a", NPK_DT_INT8, 2, da);
    ob_input(m, "c", NPK_DT_BOOL, 0, NULL);
    ob_init(m, "w", NPK_DT_INT8, 2, dw, wv8);
    Onnx__NodeProto *n;
    Onnx__GraphProto s;
    if (kind == 0) {
        n = ob_node(m, "", "If", "cf", "c", "t");
        const char *br[2] = {"then_branch", "else_branch"};
        for (int k = 0; k < 2; k++) {
            s = ob_sub_begin(m, br[k]);
            ob_node(m, "", k ? "Neg" : "Identity", "b", "a", "bo");
            ob_output(m, "bo", NPK_DT_INT8, 2, da);
            ob_attr_graph(m, n, br[k], ob_sub_end(m, s));
        }
    } else if (kind == 1) {
        int64_t trips = 2;
        ob_init(m, "M", NPK_DT_INT64, 0, NULL, &trips);
        n = ob_node(m, "", "Loop", "cf", "M,c,a", "t");
        s = ob_sub_begin(m, "body");
        ob_input(m, "i", NPK_DT_INT64, 0, NULL);
        ob_input(m, "cin", NPK_DT_BOOL, 0, NULL);
        ob_input(m, "v", NPK_DT_INT8, 2, da);
        ob_node(m, "", "Identity", "ci", "cin", "cout");
        ob_node(m, "", "Neg", "neg", "v", "v2");
        ob_output(m, "cout", NPK_DT_BOOL, 0, NULL);
        ob_output(m, "v2", NPK_DT_INT8, 2, da);
        ob_attr_graph(m, n, "body", ob_sub_end(m, s));
    } else {
        ob_node(m, "", "Not", "not", "c", "nc"); /* Scan has no condition: read c once so it is used */
        ob_output(m, "nc", NPK_DT_BOOL, 0, NULL);
        n = ob_node(m, "", "Scan", "cf", "a", "t");
        ob_attr_i(m, n, "num_scan_inputs", 1);
        s = ob_sub_begin(m, "body");
        ob_input(m, "row", NPK_DT_INT8, 1, (int64_t[1]){4});
        ob_node(m, "", "Neg", "neg", "row", "r2");
        ob_output(m, "r2", NPK_DT_INT8, 1, (int64_t[1]){4});
        ob_attr_graph(m, n, "body", ob_sub_end(m, s));
    }
    ob_node(m, "", "MatMulInteger", "mm", "t,w", "y");
    ob_output(m, "y", NPK_DT_INT32, -1, NULL);
    npk_graph *g = load(m);
    CHECK(g != NULL);
    if (!g) return;
    npk_tensor in[2];
    CHECK_EQ(npk_tensor_alloc(&in[0], "a", NPK_DT_INT8, 2, da), 0);
    memcpy(in[0].data, av, sizeof av);
    CHECK_EQ(npk_tensor_alloc(&in[1], "c", NPK_DT_BOOL, 0, NULL), 0);
    *(uint8_t *)in[1].data = 1;
    int32_t want[6];
    for (int i = 0; i < 2; i++) /* If: then = a; Loop: two negations = a; Scan: every row negated */
        for (int j = 0; j < 3; j++) {
            int32_t acc = 0;
            for (int k = 0; k < 4; k++) acc += (kind == 2 ? -av[i * 4 + k] : av[i * 4 + k]) * wv8[k * 3 + j];
            want[i * 3 + j] = acc;
        }
    const char *devs[2] = {"cpu", "v0"};
    for (int d = 0; d < 2; d++) {
        npk_run_opts o = {.device = devs[d]};
        npk_tensor *outs = NULL;
        size_t no = 0;
        npk_run_report rep;
        int rc = npk_graph_run(g, &o, in, 2, &outs, &no, &rep);
        CHECK_EQ(rc, 0);
        if (rc) fprintf(stderr, "%s\n", npk_errmsg());
        int yk = kind == 2 ? 1 : 0; /* the Scan model's first output is nc */
        CHECK(!rc && (int)no == yk + 1 && outs[yk].dtype == NPK_DT_INT32 && !memcmp(outs[yk].data, want, sizeof want));
        for (size_t i = 0; !rc && d == 1 && i < rep.n_nodes; i++)
            if (!strcmp(rep.nodes[i].op, "MatMulInteger")) {
                CHECK_EQ(rep.nodes[i].place, NPK_PLACE_DEVICE);
                if (rep.nodes[i].place != NPK_PLACE_DEVICE) fprintf(stderr, "kind %d: %s\n", kind, rep.nodes[i].why);
            }
        for (size_t k = 0; k < no; k++) npk_tensor_free(&outs[k]);
        free(outs);
        if (!rc) npk_run_report_fini(&rep);
    }
    for (int k = 0; k < 2; k++) npk_tensor_free(&in[k]);
    npk_graph_free(g);
}

/* Version-specific forms without conformance data: Tile-1 (tiles, axis inputs) and
 * Upsample-1 (height_scale / width_scale attributes), against values computed here. */
static void test_old_versions(void) {
    for (int which = 0; which < 2; which++) {
        ob_model *m = ob_new(1);
        int64_t dx[4] = {1, 1, 2, 3};
        ob_input(m, "x", NPK_DT_FLOAT, which ? 4 : 2, which ? dx : dx + 2);
        if (!which) {
            int64_t tiles = 3, axis = 1;
            ob_init(m, "t", NPK_DT_INT64, 0, NULL, &tiles);
            ob_init(m, "a", NPK_DT_INT64, 0, NULL, &axis);
            ob_node(m, "", "Tile", "tile", "x,t,a", "y");
        } else {
            Onnx__NodeProto *n = ob_node(m, "", "Upsample", "up", "x", "y");
            ob_attr_f(m, n, "height_scale", 2);
            ob_attr_f(m, n, "width_scale", 2);
        }
        ob_output(m, "y", NPK_DT_FLOAT, -1, NULL);
        npk_graph *g = load(m);
        CHECK(g != NULL);
        if (!g) continue;
        npk_tensor in, *outs = NULL;
        size_t no = 0;
        memset(&in, 0, sizeof in);
        CHECK_EQ(npk_tensor_alloc(&in, "x", NPK_DT_FLOAT, which ? 4 : 2, which ? dx : dx + 2), 0);
        for (int i = 0; i < 6; i++) ((float *)in.data)[i] = (float)(i + 1);
        npk_run_opts o = {.device = "cpu"};
        int rc = npk_graph_run(g, &o, &in, 1, &outs, &no, NULL);
        CHECK_EQ(rc, 0);
        if (rc) fprintf(stderr, "%s\n", npk_errmsg());
        if (!rc && no == 1) {
            const float *y = outs[0].data;
            if (!which) { /* [2, 9]: each row repeated 3 times along axis 1 */
                CHECK(outs[0].rank == 2 && outs[0].dims[0] == 2 && outs[0].dims[1] == 9);
                for (int r = 0; r < 2; r++)
                    for (int k = 0; k < 9; k++) CHECK(y[r * 9 + k] == (float)(r * 3 + k % 3 + 1));
            } else { /* [1, 1, 4, 6], nearest */
                CHECK(outs[0].rank == 4 && outs[0].dims[2] == 4 && outs[0].dims[3] == 6);
                for (int r = 0; r < 4; r++)
                    for (int k = 0; k < 6; k++) CHECK(y[r * 6 + k] == (float)((r / 2) * 3 + k / 2 + 1));
            }
        }
        for (size_t k = 0; k < no; k++) npk_tensor_free(&outs[k]);
        free(outs);
        npk_tensor_free(&in);
        npk_graph_free(g);
    }
}

int main(void) {
    test_old_versions();
    test_if();
    test_unsupported_inside();
    test_undefined_outer();
    test_loop();
    for (int k = 0; k < 3; k++) test_infer_through(k);
    return CHECK_DONE();
}
