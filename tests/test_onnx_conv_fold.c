// SPDX-License-Identifier: MIT
/* A float Conv followed by constant BatchNormalization / Mul / Add nodes runs as one Conv with
 * the nodes folded into its weights and bias on the fast CPU path (src/graph/exec_fuse.c,
 * docs/onnx.md "Conv folding"): the report says which nodes were folded, the outputs agree with
 * the values computed here in double within the float tolerance of the fast kernels, the golden
 * run folds nothing, and the second run (the folded weights cached in the graph) and a run on
 * two threads give the same bytes. Not folded: a constant that varies along another axis than
 * the channels, a Conv output that is also a graph output, non-finite folded weights.
 * test_chain_tail: a scalar Mul then Add after a HardSwish chain run in the chain's pass, bit for
 * bit the nodes' own float operations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/onnx_build.h"
#include "npukit/graph.h"
#include "npukit/threads.h"

enum { C = 3, M = 4, H = 5, W = 6 };

static float wval(int i) { return (float)((i * 7) % 11) / 8.0f - 0.6f; }

/* conv of x [C, H, W] (pads 1, stride 1, 3x3, group 1) or depthwise x [M, H, W] (stride 2), in double */
static double conv_at(const float *x, const float *w, int dw, int m, int oh, int ow) {
    double s = 0;
    int cs = dw ? 1 : C, st = dw ? 2 : 1;
    for (int c = 0; c < cs; c++)
        for (int kh = 0; kh < 3; kh++)
            for (int kw = 0; kw < 3; kw++) {
                int ih = oh * st - 1 + kh, iw = ow * st - 1 + kw, ch = dw ? m : c;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += (double)x[(ch * H + ih) * W + iw] * w[((m * cs + c) * 3 + kh) * 3 + kw];
            }
    return s;
}

static void conv_node(ob_model *m, const char *name, const char *ins, const char *out, int dw) {
    Onnx__NodeProto *n = ob_node(m, "", "Conv", name, ins, out);
    ob_attr_ints(m, n, "kernel_shape", 2, (int64_t[]){3, 3});
    ob_attr_ints(m, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    if (dw) {
        ob_attr_ints(m, n, "strides", 2, (int64_t[]){2, 2});
        ob_attr_i(m, n, "group", M);
    }
}

static int close_to(float got, double want) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == (float)want;
    return fabs(got - want) <= 1e-6 + 1e-3 * fabs(want);
}

/* Run g (run 1 golden, run 2 and later on two threads from run `two`) and count the report's nodes
 * whose reason has `why`; names: when not NULL, each such node must be one of them ("a,b,c"). */
static int run_g(npk_graph *g, int run, int two, const npk_tensor *in, size_t nin, npk_tensor **out, size_t *n,
                 const char *why, const char *names) {
    npk_threads_set(run >= two ? 2 : 1);
    npk_run_opts o = {.device = "cpu", .golden = run == 1};
    npk_run_report rep;
    *out = NULL, *n = 0;
    CHECK_EQ(npk_graph_run(g, &o, in, nin, out, n, &rep), 0);
    int cnt = 0;
    for (size_t i = 0; i < rep.n_nodes; i++)
        if (strstr(rep.nodes[i].why, why)) {
            cnt++;
            char key[64];
            snprintf(key, sizeof key, ",%s,", rep.nodes[i].name);
            if (names) CHECK(strstr(names, key) != NULL);
        }
    npk_run_report_fini(&rep);
    return cnt;
}

/* x -> HardSwish chain (Mul(x, Div(Clip(Add(x, 3), 0, 6), 6))) -> Mul(s, .) -> Add(., t) = y;
 * the same chain -> Add(t, .) alone = z (no Mul); the same chain -> Mul(., s) = w, a graph output
 * also read by Add(w, t) = u (the tail stops at w: u is its own node). */
static void test_chain_tail(void) {
    ob_model *m = ob_new(13);
    int64_t dx[4] = {1, 2, 3, 50}, one = 1;
    ob_input(m, "x", NPK_DT_FLOAT, 4, dx);
    ob_init(m, "three", NPK_DT_FLOAT, 1, &one, (float[]){3.0f});
    ob_init(m, "six", NPK_DT_FLOAT, 0, NULL, (float[]){6.0f});
    ob_init(m, "zero", NPK_DT_FLOAT, 0, NULL, (float[]){0.0f});
    ob_init(m, "s", NPK_DT_FLOAT, 1, &one, (float[]){0.7f});
    ob_init(m, "t", NPK_DT_FLOAT, 1, &one, (float[]){-0.3f});
    const char *tag[3] = {"p", "q", "r"};
    for (int i = 0; i < 3; i++) {
        char n[8][16], io[8][48];
        for (int k = 0; k < 8; k++) snprintf(n[k], sizeof n[k], "%s%d", tag[i], k);
        snprintf(io[0], sizeof io[0], "x,three"), snprintf(io[1], sizeof io[1], "%s,zero,six", n[0]);
        snprintf(io[2], sizeof io[2], "%s,six", n[1]), snprintf(io[3], sizeof io[3], "x,%s", n[2]);
        ob_node(m, "", "Add", n[0], io[0], n[0]);
        ob_node(m, "", "Clip", n[1], io[1], n[1]);
        ob_node(m, "", "Div", n[2], io[2], n[2]);
        ob_node(m, "", "Mul", n[3], io[3], n[3]);
        if (i == 0) {
            snprintf(io[4], sizeof io[4], "s,%s", n[3]), snprintf(io[5], sizeof io[5], "%s,t", n[4]);
            ob_node(m, "", "Mul", n[4], io[4], n[4]);
            ob_node(m, "", "Add", "yy", io[5], "y");
        } else if (i == 1) {
            snprintf(io[4], sizeof io[4], "t,%s", n[3]);
            ob_node(m, "", "Add", "zz", io[4], "z");
        } else {
            snprintf(io[4], sizeof io[4], "%s,s", n[3]), snprintf(io[5], sizeof io[5], "w,t");
            ob_node(m, "", "Mul", "ww", io[4], "w");
            ob_node(m, "", "Add", "uu", io[5], "u");
        }
    }
    const char *outs[4] = {"y", "z", "w", "u"};
    for (int i = 0; i < 4; i++) ob_output(m, outs[i], NPK_DT_FLOAT, -1, NULL);
    npk_graph *g = ob_load(m);
    CHECK(g != NULL);
    if (!g) return;
    npk_tensor in;
    CHECK_EQ(npk_tensor_alloc(&in, "x", NPK_DT_FLOAT, 4, dx), 0);
    static float want[4][300];
    for (int i = 0; i < 300; i++) {
        float xi = ((float *)in.data)[i] = (float)((i * 29) % 97) / 8.0f - 6.0f, c = xi + 3.0f;
        c = c < 0.0f ? 0.0f : c > 6.0f ? 6.0f : c;
        float h = xi * (c / 6.0f);
        want[0][i] = 0.7f * h + -0.3f;
        want[1][i] = -0.3f + h;
        want[2][i] = h * 0.7f;
        want[3][i] = want[2][i] + -0.3f;
    }
    for (int run = 0; run < 3; run++) {
        npk_tensor *out;
        size_t n;
        int chained = run_g(g, run, 2, &in, 1, &out, &n, "HardSwish chain", NULL);
        CHECK_EQ(chained, run == 1 ? 0 : 3 * 3 + 2 + 1 + 1); /* inner nodes, then the tails: y's two, z's and w's */
        CHECK_EQ(n, 4);
        for (size_t k = 0; k < n && n == 4; k++) CHECK(!memcmp(out[k].data, want[k], sizeof want[k]));
        for (size_t k = 0; k < n; k++) npk_tensor_free(&out[k]);
        free(out);
    }
    npk_threads_set(0);
    npk_tensor_free(&in);
    npk_graph_free(g);
}

int main(void) {
    test_chain_tail();
    ob_model *m = ob_new(13);
    int64_t dx[4] = {1, C, H, W}, dd[4] = {1, M, H, W}, dw[4] = {M, C, 3, 3}, ddw[4] = {M, 1, 3, 3}, dm = M;
    int64_t dk[3] = {M, 1, 1}, dpos[4] = {1, 1, H, W};
    ob_input(m, "x", NPK_DT_FLOAT, 4, dx);
    ob_input(m, "xd", NPK_DT_FLOAT, 4, dd);
    float w[M * C * 9], wd[M * 9], b[M], k[M], sc[M], bi[M], me[M], va[M], pos[H * W];
    for (int i = 0; i < M * C * 9; i++) w[i] = wval(i);
    for (int i = 0; i < M * 9; i++) wd[i] = wval(i + 5);
    for (int i = 0; i < M; i++) {
        b[i] = 0.125f * (float)i - 0.2f, k[i] = 1.5f - 0.375f * (float)i, sc[i] = 0.5f + 0.25f * (float)i;
        bi[i] = -0.3f + 0.1f * (float)i, me[i] = 0.05f * (float)i, va[i] = 0.5f + (float)i;
    }
    for (int i = 0; i < H * W; i++) pos[i] = (float)(i % 3) - 1.0f;
    ob_init(m, "w", NPK_DT_FLOAT, 4, dw, w);
    ob_init(m, "wd", NPK_DT_FLOAT, 4, ddw, wd);
    ob_init(m, "b", NPK_DT_FLOAT, 1, &dm, b);
    ob_init(m, "k", NPK_DT_FLOAT, 3, dk, k);
    ob_init(m, "sc", NPK_DT_FLOAT, 1, &dm, sc);
    ob_init(m, "bi", NPK_DT_FLOAT, 1, &dm, bi);
    ob_init(m, "me", NPK_DT_FLOAT, 1, &dm, me);
    ob_init(m, "va", NPK_DT_FLOAT, 1, &dm, va);
    ob_init(m, "t", NPK_DT_FLOAT, 0, NULL, (float[]){0.75f});
    ob_init(m, "inf", NPK_DT_FLOAT, 0, NULL, (float[]){INFINITY});
    ob_init(m, "pos", NPK_DT_FLOAT, 4, dpos, pos);
    /* A: Conv -> Mul(k, .) -> BN -> Add(., t) -> Relu: Mul, BN and Add folded */
    conv_node(m, "ca", "x,w,b", "a1", 0);
    ob_node(m, "", "Mul", "ma", "k,a1", "a2");
    Onnx__NodeProto *bn = ob_node(m, "", "BatchNormalization", "ba", "a2,sc,bi,me,va", "a3");
    ob_attr_f(m, bn, "epsilon", 1e-3f);
    ob_node(m, "", "Add", "aa", "a3,t", "a4");
    ob_node(m, "", "Relu", "ra", "a4", "ya");
    /* B: depthwise Conv without bias -> BN: folded */
    conv_node(m, "cb", "xd,wd", "b1", 1);
    ob_attr_f(m, ob_node(m, "", "BatchNormalization", "bb", "b1,sc,bi,me,va", "yb"), "epsilon", 1e-3f);
    /* C: a constant per position, not per channel: not folded */
    conv_node(m, "cc", "x,w,b", "c1", 0);
    ob_node(m, "", "Mul", "mc", "c1,pos", "yc");
    /* D: the Conv's output is a graph output too: not folded */
    conv_node(m, "cd", "x,w", "d1", 0);
    ob_node(m, "", "Add", "ad", "d1,t", "yd");
    /* E: a Mul by infinity (non-finite folded weights): not folded */
    conv_node(m, "ce", "x,w,b", "e1", 0);
    ob_node(m, "", "Mul", "me_", "e1,inf", "ye");
    /* F: ConvTranspose (group 2, 3 output channels per group, stride 2) -> Add(per channel) -> BN:
     * both folded (checked against the golden run) */
    int64_t dwt[4] = {M, 3, 2, 2}, d6 = 6, d6b[4] = {1, 6, 1, 1};
    float wt[M * 3 * 4], p6[4][6];
    for (int i = 0; i < M * 12; i++) wt[i] = wval(i + 3);
    for (int i = 0; i < 6; i++) p6[0][i] = 0.3f * (float)i - 0.7f, p6[1][i] = 1.25f - 0.2f * (float)i, p6[2][i] = 0.1f * (float)i, p6[3][i] = 0.25f + (float)i;
    ob_init(m, "wt", NPK_DT_FLOAT, 4, dwt, wt);
    ob_init(m, "bt", NPK_DT_FLOAT, 4, d6b, p6[0]);
    ob_init(m, "s6", NPK_DT_FLOAT, 1, &d6, p6[1]);
    ob_init(m, "m6", NPK_DT_FLOAT, 1, &d6, p6[2]);
    ob_init(m, "v6", NPK_DT_FLOAT, 1, &d6, p6[3]);
    Onnx__NodeProto *ct = ob_node(m, "", "ConvTranspose", "ct", "xd,wt", "f1");
    ob_attr_ints(m, ct, "kernel_shape", 2, (int64_t[]){2, 2});
    ob_attr_ints(m, ct, "strides", 2, (int64_t[]){2, 2});
    ob_attr_i(m, ct, "group", 2);
    ob_node(m, "", "Add", "at", "f1,bt", "f2");
    ob_node(m, "", "BatchNormalization", "bt_", "f2,s6,bt,m6,v6", "yt");
    const char *outs[] = {"ya", "yb", "yc", "d1", "yd", "ye", "yt"};
    for (int i = 0; i < 7; i++) ob_output(m, outs[i], NPK_DT_FLOAT, -1, NULL);
    npk_graph *g = ob_load(m);
    CHECK(g != NULL);
    if (!g) return CHECK_DONE();

    npk_tensor in[2];
    CHECK_EQ(npk_tensor_alloc(&in[0], "x", NPK_DT_FLOAT, 4, dx), 0);
    CHECK_EQ(npk_tensor_alloc(&in[1], "xd", NPK_DT_FLOAT, 4, dd), 0);
    float *x = in[0].data, *xd = in[1].data;
    for (int i = 0; i < C * H * W; i++) x[i] = (float)((i * 13) % 17) / 4.0f - 2.0f;
    for (int i = 0; i < M * H * W; i++) xd[i] = (float)((i * 5) % 19) / 6.0f - 1.5f;
    /* expected, in double */
    static double ya[M * H * W], yb[M * 3 * 3], yc[M * H * W], d1[M * H * W], yd[M * H * W], ye[M * H * W];
    for (int mm = 0; mm < M; mm++) {
        double inv = 1.0 / sqrt((double)va[mm] + (double)1e-3f);
        for (int oh = 0; oh < H; oh++)
            for (int ow = 0; ow < W; ow++) {
                int i = (mm * H + oh) * W + ow;
                double c = conv_at(x, w, 0, mm, oh, ow), cb = c + b[mm];
                double a = ((k[mm] * cb - me[mm]) * inv * sc[mm] + bi[mm]) + 0.75;
                ya[i] = a > 0 ? a : 0;
                yc[i] = cb * pos[oh * W + ow];
                d1[i] = c;
                yd[i] = c + 0.75;
                ye[i] = (double)(float)cb * INFINITY;
                if (oh < 3 && ow < 3)
                    yb[(mm * 3 + oh) * 3 + ow] = (conv_at(xd, wd, 1, mm, oh, ow) - me[mm]) * inv * sc[mm] + bi[mm];
            }
    }
    const double *want[6] = {ya, yb, yc, d1, yd, ye};
    const int64_t len[6] = {M * H * W, M * 9, M * H * W, M * H * W, M * H * W, M * H * W};
    npk_tensor *first = NULL;
    size_t nfirst = 0;
    for (int run = 0; run < 4; run++) {
        npk_tensor *out;
        size_t n;
        int folded = run_g(g, run, 3, in, 2, &out, &n, "folded into the weights of the Conv", ",ma,ba,aa,bb,at,bt_,");
        CHECK_EQ(folded, run == 1 ? 0 : 6);
        CHECK_EQ(n, 7);
        if (n == 7 && nfirst == 7 && run == 1) { /* ConvTranspose: the fast run's folded nodes against the golden */
            CHECK_EQ(npk_tensor_numel(&out[6]), 6 * 10 * 12);
            int bad = 0;
            for (int64_t i = 0; i < npk_tensor_numel(&out[6]) && i < 720; i++)
                bad += !close_to(((const float *)first[6].data)[i], ((const float *)out[6].data)[i]);
            CHECK_EQ(bad, 0);
        }
        for (size_t o2 = 0; o2 < 6 && n == 7; o2++) {
            CHECK_EQ(npk_tensor_numel(&out[o2]), len[o2]);
            if (npk_tensor_numel(&out[o2]) != len[o2]) continue;
            int bad = 0;
            for (int64_t i = 0; i < len[o2]; i++) bad += !close_to(((const float *)out[o2].data)[i], want[o2][i]);
            CHECK_EQ(bad, 0);
        }
        for (size_t o2 = 0; o2 < n && run >= 2 && nfirst == n; o2++) /* the cached fold and two threads: the same bytes */
            CHECK(!memcmp(out[o2].data, first[o2].data, npk_tensor_bytes(&out[o2])));
        if (run == 0) {
            first = out, nfirst = n;
            continue;
        }
        for (size_t i = 0; i < n; i++) npk_tensor_free(&out[i]);
        free(out);
    }
    npk_threads_set(0);
    for (size_t i = 0; i < nfirst; i++) npk_tensor_free(&first[i]);
    free(first);
    npk_tensor_free(&in[0]);
    npk_tensor_free(&in[1]);
    npk_graph_free(g);
    return CHECK_DONE();
}
