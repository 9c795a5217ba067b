// SPDX-License-Identifier: MIT
/* The executor's per-run savings (issue 15 point 2) keep every run's values:
 * nodes computed from constants alone are folded once and kept in the graph
 * (fold_cache), folded CPU nodes do not run again, inputs are read in place,
 * Reshape/Flatten/Squeeze/Unsqueeze/Identity take their input's buffer when
 * they are its last reader, and the outputs a run owns are handed over. Each
 * run here is compared with values computed by hand (an If body folds what it
 * computes from a constant of the outer graph once, too), the inputs and the cache
 * must not change, and outputs must not alias inputs, the cache or each other
 * (ASan runs this test too: a double free or a leak fails it). Element-wise nodes that are the
 * last readers of a value compute in its buffer (npk_opctx.reuse): test_inplace. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/onnx_build.h"
#include "npukit/graph.h"

static npk_graph *build(void) {
    ob_model *m = ob_new(13);
    int64_t dx[2] = {2, 3}, dw[2] = {3, 6}, one = 1, two = 2;
    ob_input(m, "x", NPK_DT_FLOAT, 2, dx);
    float w[18];
    for (int i = 0; i < 18; i++) w[i] = (float)(i % 5) - 2.0f;
    /* w comes from a Constant node (as inlined exporters write weights) */
    Onnx__NodeProto *cn = ob_node(m, "", "Constant", "cw", "", "w");
    Onnx__AttributeProto *a = ob_attr(m, cn, "value", 4 /* TENSOR */);
    a->t = ob_tensor(m, "wv", NPK_DT_FLOAT, 2, dw, w);
    ob_init(m, "st", NPK_DT_INT64, 1, &one, (int64_t[]){1});
    ob_init(m, "en", NPK_DT_INT64, 1, &one, (int64_t[]){5});
    ob_init(m, "ax", NPK_DT_INT64, 1, &one, (int64_t[]){1});
    ob_init(m, "shp", NPK_DT_INT64, 1, &two, (int64_t[]){4, 2});
    ob_init(m, "a0", NPK_DT_INT64, 1, &one, (int64_t[]){0});
    ob_node(m, "", "Slice", "ws", "w,st,en,ax", "wsl");       /* constants only: folded once, cached */
    ob_node(m, "", "MatMul", "mm", "x,wsl", "y");             /* [2, 4] */
    ob_node(m, "", "Reshape", "rs", "y,shp", "yr");           /* last reader of y: takes its buffer */
    ob_node(m, "", "Unsqueeze", "us", "yr,a0", "yu");         /* [1, 4, 2], again */
    ob_node(m, "", "Identity", "idx", "x", "xo");             /* an input: copied, never taken */
    /* an If whose bodies compute from wsl, a constant of the outer graph: they fold it once too */
    ob_input(m, "c", NPK_DT_BOOL, 0, NULL);
    Onnx__NodeProto *br = ob_node(m, "", "If", "br", "c", "z");
    Onnx__GraphProto sv = ob_sub_begin(m, "then");
    ob_node(m, "", "Mul", "sq", "wsl,wsl", "wsq");
    ob_node(m, "", "MatMul", "mt", "x,wsq", "z1");
    ob_output(m, "z1", NPK_DT_FLOAT, -1, NULL);
    ob_attr_graph(m, br, "then_branch", ob_sub_end(m, sv));
    sv = ob_sub_begin(m, "else");
    ob_node(m, "", "Neg", "ng", "wsl", "wng");
    ob_node(m, "", "MatMul", "me", "x,wng", "z2");
    ob_output(m, "z2", NPK_DT_FLOAT, -1, NULL);
    ob_attr_graph(m, br, "else_branch", ob_sub_end(m, sv));
    ob_output(m, "yu", NPK_DT_FLOAT, -1, NULL);
    ob_output(m, "xo", NPK_DT_FLOAT, -1, NULL);
    ob_output(m, "x", NPK_DT_FLOAT, -1, NULL);                /* an input as an output */
    ob_output(m, "wsl", NPK_DT_FLOAT, -1, NULL);              /* a cached constant as an output */
    ob_output(m, "z", NPK_DT_FLOAT, -1, NULL);
    return ob_load(m);
}

/* The memo of a body's shape inference (npk_graph.infer_memo) follows the inputs' shapes: x is
 * [N, 3] with N given per run, an If (condition an input) gives x + 1 or x * 2 of x's shape, and
 * s = Shape(If's output) is folded at inference from the If's inferred shape (it does not run
 * again), so a memo kept across different N would give a stale s. */
static void test_infer_memo(void) {
    ob_model *m = ob_new(13);
    int64_t dx[2] = {-1, 3}, one = 1;
    ob_input(m, "x", NPK_DT_FLOAT, 2, dx);
    ob_input(m, "c", NPK_DT_BOOL, 0, NULL);
    ob_init(m, "k", NPK_DT_FLOAT, 1, &one, (float[]){2.0f});
    Onnx__NodeProto *br = ob_node(m, "", "If", "br", "c", "z");
    Onnx__GraphProto sv = ob_sub_begin(m, "then");
    ob_node(m, "", "Add", "ad", "x,k", "z1");
    ob_output(m, "z1", NPK_DT_FLOAT, -1, NULL);
    ob_attr_graph(m, br, "then_branch", ob_sub_end(m, sv));
    sv = ob_sub_begin(m, "else");
    ob_node(m, "", "Mul", "mu", "x,k", "z2");
    ob_output(m, "z2", NPK_DT_FLOAT, -1, NULL);
    ob_attr_graph(m, br, "else_branch", ob_sub_end(m, sv));
    ob_node(m, "", "Shape", "sh", "z", "s");
    ob_output(m, "z", NPK_DT_FLOAT, -1, NULL);
    ob_output(m, "s", NPK_DT_INT64, -1, NULL);
    npk_graph *g = ob_load(m);
    CHECK(g != NULL);
    if (!g) return;
    /* the then branch with N = 2, 2 (the memo), 5 (not the memo's), 3; the else branch once */
    static const int64_t rows[] = {2, 2, 5, 4, 3};
    static const int conds[] = {1, 1, 1, 0, 1};
    for (int run = 0; run < 5; run++) {
        int64_t d[2] = {rows[run], 3};
        npk_tensor ins[2];
        CHECK_EQ(npk_tensor_alloc(&ins[0], "x", NPK_DT_FLOAT, 2, d), 0);
        CHECK_EQ(npk_tensor_alloc(&ins[1], "c", NPK_DT_BOOL, 0, NULL), 0);
        int cond = conds[run];
        *(uint8_t *)ins[1].data = (uint8_t)cond;
        for (int64_t i = 0; i < d[0] * 3; i++) ((float *)ins[0].data)[i] = (float)i - 1.5f;
        npk_run_opts o = {.device = "cpu", .golden = run == 4};
        npk_tensor *out = NULL;
        size_t n = 0;
        CHECK_EQ(npk_graph_run(g, &o, ins, 2, &out, &n, NULL), 0);
        CHECK_EQ(n, 2);
        if (n == 2) {
            CHECK(out[0].rank == 2 && out[0].dims[0] == d[0] && out[0].dims[1] == 3);
            int ok = 1;
            for (int64_t i = 0; i < d[0] * 3; i++)
                ok &= ((float *)out[0].data)[i] == (cond ? ((float)i - 1.5f) + 2.0f : ((float)i - 1.5f) * 2.0f);
            CHECK(ok);
            CHECK(out[1].dtype == NPK_DT_INT64 && npk_tensor_numel(&out[1]) == 2);
            if (npk_tensor_numel(&out[1]) == 2)
                CHECK(((int64_t *)out[1].data)[0] == d[0] && ((int64_t *)out[1].data)[1] == 3);
        }
        for (size_t i = 0; i < n; i++) npk_tensor_free(&out[i]);
        free(out);
        npk_tensor_free(&ins[0]);
        npk_tensor_free(&ins[1]);
    }
    npk_graph_free(g);
}

/* In place: x -> Relu -> Add(per-channel k) = b; b -> Add 3 -> Clip(0, 6) -> Div 6 = t; m = b * t
 * (b read twice: only its last reader may take it), m is a graph output and also read by
 * Sub(1, m) = d (m's buffer must stay m's), e = Relu(d) takes d's (input 1 of the Sub: the
 * operand taken may be either). The two HardSwish chains, b * (Clip(b + 3) / 6) and
 * (e * Clip(e + 3)) / 6 = f, run in one pass each on the fast path (exec_fuse.c: the report
 * says so for their six inner nodes), every node on the golden one. Compared bit for bit with
 * the same float operations by hand, the input unchanged. */
static void test_inplace(void) {
    ob_model *m = ob_new(13);
    int64_t dx[4] = {2, 3, 4, 5}, dk[4] = {1, 3, 1, 1}, one = 1;
    ob_input(m, "x", NPK_DT_FLOAT, 4, dx);
    ob_init(m, "k", NPK_DT_FLOAT, 4, dk, (float[]){0.25f, -0.5f, 1.75f});
    ob_init(m, "three", NPK_DT_FLOAT, 1, &one, (float[]){3.0f});
    ob_init(m, "six", NPK_DT_FLOAT, 0, NULL, (float[]){6.0f});
    ob_init(m, "zero", NPK_DT_FLOAT, 0, NULL, (float[]){0.0f});
    ob_init(m, "onef", NPK_DT_FLOAT, 0, NULL, (float[]){1.0f});
    ob_node(m, "", "Relu", "r", "x", "a");
    ob_node(m, "", "Add", "ak", "a,k", "b");
    ob_node(m, "", "Add", "a3", "b,three", "t1");
    ob_node(m, "", "Clip", "cl", "t1,zero,six", "t2");
    ob_node(m, "", "Div", "dv", "t2,six", "t3");
    ob_node(m, "", "Mul", "mu", "b,t3", "mo");
    ob_node(m, "", "Sub", "sb", "onef,mo", "d");
    ob_node(m, "", "Relu", "r2", "d", "e");
    ob_node(m, "", "Add", "b3", "three,e", "u1");
    ob_node(m, "", "Clip", "c2", "u1,zero,six", "u2");
    ob_node(m, "", "Mul", "m2", "u2,e", "u3");
    ob_node(m, "", "Div", "d2", "u3,six", "f");
    ob_output(m, "mo", NPK_DT_FLOAT, -1, NULL);
    ob_output(m, "e", NPK_DT_FLOAT, -1, NULL);
    ob_output(m, "f", NPK_DT_FLOAT, -1, NULL);
    npk_graph *g = ob_load(m);
    CHECK(g != NULL);
    if (!g) return;
    npk_tensor in;
    CHECK_EQ(npk_tensor_alloc(&in, "x", NPK_DT_FLOAT, 4, dx), 0);
    float xs[120], mo[120], e[120], f[120];
    static const float k[3] = {0.25f, -0.5f, 1.75f};
    for (int i = 0; i < 120; i++) {
        xs[i] = ((float *)in.data)[i] = (float)((i * 37) % 41) / 4.0f - 5.0f;
        float a = xs[i] > 0 ? xs[i] : 0.0f, b = a + k[i / 20 % 3], t = b + 3.0f;
        t = t < 0.0f ? 0.0f : t > 6.0f ? 6.0f : t;
        mo[i] = b * (t / 6.0f);
        float d = 1.0f - mo[i];
        e[i] = d > 0 ? d : 0.0f;
        float u = 3.0f + e[i];
        u = u < 0.0f ? 0.0f : u > 6.0f ? 6.0f : u;
        f[i] = (u * e[i]) / 6.0f;
    }
    for (int run = 0; run < 3; run++) {
        npk_run_opts o = {.device = "cpu", .golden = run == 1};
        npk_tensor *out = NULL;
        size_t n = 0;
        npk_run_report rep;
        CHECK_EQ(npk_graph_run(g, &o, &in, 1, &out, &n, &rep), 0);
        int chained = 0;
        for (size_t i = 0; i < rep.n_nodes; i++) chained += strstr(rep.nodes[i].why, "HardSwish chain") != NULL;
        CHECK_EQ(chained, run == 1 ? 0 : 6);
        npk_run_report_fini(&rep);
        CHECK_EQ(n, 3);
        if (n == 3) {
            CHECK(!memcmp(out[0].data, mo, sizeof mo));
            CHECK(!memcmp(out[1].data, e, sizeof e));
            CHECK(!memcmp(out[2].data, f, sizeof f));
            CHECK(out[0].data != out[1].data && out[0].data != in.data && out[2].data != out[1].data);
        }
        CHECK(!memcmp(in.data, xs, sizeof xs));
        for (size_t i = 0; i < n; i++) npk_tensor_free(&out[i]);
        free(out);
    }
    npk_tensor_free(&in);
    npk_graph_free(g);
}

/* The plan a CPU run leaves to the runs after it (exec_cache.c) serves only runs whose inputs
 * have its signature: types, shapes and the data of small inputs (here the Reshape's target
 * shape, an input of 2 elements), and no plan is kept when inference read a large input's
 * data (here Compress's 20-element condition: the output's shape follows it). Both give s =
 * Shape(output), folded at inference, so a stale plan would give a stale s. The reports of a
 * planned run and of the run that made the plan say the same. */
static void run_plan_case(npk_graph *g, const npk_tensor *ins, size_t nin, const float *want, int64_t nwant,
                          const int64_t *wdims, int wrank, npk_run_report *rep) {
    npk_run_opts o = {.device = "cpu"};
    npk_tensor *out = NULL;
    size_t n = 0;
    CHECK_EQ(npk_graph_run(g, &o, ins, nin, &out, &n, rep), 0);
    CHECK_EQ(n, 2);
    if (n == 2) {
        CHECK_EQ(out[0].rank, wrank);
        CHECK_EQ(npk_tensor_numel(&out[0]), nwant);
        CHECK(out[0].rank == wrank && !memcmp(out[0].dims, wdims, sizeof(int64_t) * (size_t)wrank));
        if (npk_tensor_numel(&out[0]) == nwant) CHECK(!memcmp(out[0].data, want, sizeof(float) * (size_t)nwant));
        CHECK(out[1].dtype == NPK_DT_INT64 && npk_tensor_numel(&out[1]) == wrank);
        if (npk_tensor_numel(&out[1]) == wrank) CHECK(!memcmp(out[1].data, wdims, sizeof(int64_t) * (size_t)wrank));
    }
    for (size_t i = 0; i < n; i++) npk_tensor_free(&out[i]);
    free(out);
}

static void test_plan(void) {
    /* Reshape(x[12], shape) -> y, s = Shape(y) */
    ob_model *m = ob_new(13);
    int64_t d12 = 12, d2 = 2, d20 = 20;
    ob_input(m, "x", NPK_DT_FLOAT, 1, &d12);
    ob_input(m, "shape", NPK_DT_INT64, 1, &d2);
    ob_node(m, "", "Reshape", "rs", "x,shape", "y");
    ob_node(m, "", "Shape", "sh", "y", "s");
    ob_output(m, "y", NPK_DT_FLOAT, -1, NULL);
    ob_output(m, "s", NPK_DT_INT64, -1, NULL);
    npk_graph *g = ob_load(m);
    CHECK(g != NULL);
    if (g) {
        npk_tensor ins[2];
        CHECK_EQ(npk_tensor_alloc(&ins[0], "x", NPK_DT_FLOAT, 1, &d12), 0);
        CHECK_EQ(npk_tensor_alloc(&ins[1], "shape", NPK_DT_INT64, 1, &d2), 0);
        static const int64_t shapes[4][2] = {{2, 6}, {2, 6}, {4, 3}, {2, 6}};
        npk_run_report r0, r1;
        for (int run = 0; run < 4; run++) {
            float want[12];
            for (int i = 0; i < 12; i++) want[i] = ((float *)ins[0].data)[i] = (float)(i * (run + 1)) - 3.5f;
            memcpy(ins[1].data, shapes[run], sizeof shapes[run]);
            run_plan_case(g, ins, 2, want, 12, shapes[run], 2, run == 0 ? &r0 : run == 1 ? &r1 : NULL);
        }
        /* run 1 took run 0's plan: the same report */
        CHECK_EQ(r0.n_nodes, r1.n_nodes);
        for (size_t i = 0; i < r0.n_nodes && i < r1.n_nodes; i++) {
            CHECK_STR(r0.nodes[i].why, r1.nodes[i].why);
            CHECK_EQ(r0.nodes[i].place, r1.nodes[i].place);
            CHECK_EQ(r0.nodes[i].macs, r1.nodes[i].macs);
        }
        npk_run_report_fini(&r0);
        npk_run_report_fini(&r1);
        npk_tensor_free(&ins[0]);
        npk_tensor_free(&ins[1]);
        npk_graph_free(g);
    }
    /* Compress(x[20], cond[20], axis 0) -> y, s = Shape(y) */
    m = ob_new(13);
    ob_input(m, "x", NPK_DT_FLOAT, 1, &d20);
    ob_input(m, "cond", NPK_DT_BOOL, 1, &d20);
    Onnx__NodeProto *cp = ob_node(m, "", "Compress", "cp", "x,cond", "y");
    ob_attr_i(m, cp, "axis", 0);
    ob_node(m, "", "Shape", "sh", "y", "s");
    ob_output(m, "y", NPK_DT_FLOAT, -1, NULL);
    ob_output(m, "s", NPK_DT_INT64, -1, NULL);
    g = ob_load(m);
    CHECK(g != NULL);
    if (!g) return;
    npk_tensor ins[2];
    CHECK_EQ(npk_tensor_alloc(&ins[0], "x", NPK_DT_FLOAT, 1, &d20), 0);
    CHECK_EQ(npk_tensor_alloc(&ins[1], "cond", NPK_DT_BOOL, 1, &d20), 0);
    for (int run = 0; run < 4; run++) {
        float want[20];
        int64_t k = 0;
        for (int i = 0; i < 20; i++) {
            float v = ((float *)ins[0].data)[i] = (float)i + 0.25f * (float)run;
            int on = run % 2 ? i % 3 != 0 : i % 4 == 1; /* 13 and 5 elements */
            ((uint8_t *)ins[1].data)[i] = (uint8_t)on;
            if (on) want[k++] = v;
        }
        run_plan_case(g, ins, 2, want, k, &k, 1, NULL);
    }
    npk_tensor_free(&ins[0]);
    npk_tensor_free(&ins[1]);
    npk_graph_free(g);
}

int main(void) {
    test_plan();
    test_infer_memo();
    test_inplace();
    npk_graph *g = build();
    CHECK(g != NULL);
    if (!g) return CHECK_DONE();
    int64_t dx[2] = {2, 3};
    npk_tensor ins[2];
    CHECK_EQ(npk_tensor_alloc(&ins[0], "x", NPK_DT_FLOAT, 2, dx), 0);
    CHECK_EQ(npk_tensor_alloc(&ins[1], "c", NPK_DT_BOOL, 0, NULL), 0);
    float w[18], xs[6], y[8], wsl[12], z[8];
    for (int i = 0; i < 18; i++) w[i] = (float)(i % 5) - 2.0f;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 4; c++) wsl[r * 4 + c] = w[r * 6 + 1 + c];
    for (int run = 0; run < 4; run++) {
        for (int i = 0; i < 6; i++) ((float *)ins[0].data)[i] = xs[i] = (float)(i * (run + 1)) - 2.5f;
        int cond = run != 1;
        *(uint8_t *)ins[1].data = (uint8_t)cond;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++) {
                y[i * 4 + j] = z[i * 4 + j] = 0;
                for (int k = 0; k < 3; k++) {
                    float ww = wsl[k * 4 + j];
                    y[i * 4 + j] += xs[i * 3 + k] * ww;
                    z[i * 4 + j] += xs[i * 3 + k] * (cond ? ww * ww : -ww);
                }
            }
        npk_run_opts o = {.device = "cpu", .golden = run == 2};
        npk_tensor *out = NULL;
        size_t n = 0;
        CHECK_EQ(npk_graph_run(g, &o, ins, 2, &out, &n, NULL), 0);
        CHECK_EQ(n, 5);
        if (n != 5) continue;
        CHECK(!memcmp(out[4].data, z, sizeof z));
        CHECK(out[0].rank == 3 && out[0].dims[0] == 1 && out[0].dims[1] == 4 && out[0].dims[2] == 2);
        CHECK(!memcmp(out[0].data, y, sizeof y));
        CHECK(!memcmp(out[1].data, xs, sizeof xs) && !memcmp(out[2].data, xs, sizeof xs));
        CHECK(out[3].rank == 2 && out[3].dims[0] == 3 && out[3].dims[1] == 4 && !memcmp(out[3].data, wsl, sizeof wsl));
        CHECK_STR(out[0].name, "yu");
        CHECK_STR(out[3].name, "wsl");
        /* no output shares a buffer with the input or another output */
        for (size_t i = 0; i < n; i++) {
            CHECK(out[i].data != ins[0].data);
            for (size_t j = 0; j < i; j++) CHECK(out[i].data != out[j].data);
        }
        /* scribbling on the outputs and the input changes nothing the next run sees */
        for (size_t i = 0; i < n; i++) memset(out[i].data, 0x7f, npk_tensor_bytes(&out[i]));
        for (size_t i = 0; i < n; i++) npk_tensor_free(&out[i]);
        free(out);
    }
    npk_tensor_free(&ins[0]);
    npk_tensor_free(&ins[1]);
    npk_graph_free(g);
    return CHECK_DONE();
}
