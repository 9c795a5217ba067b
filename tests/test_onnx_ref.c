// SPDX-License-Identifier: MIT
/* CPU reference ONNX kernels and the graph API against hand-computed
 * expectations (worked by hand from the ONNX operator definitions), plus
 * device-vs-reference equality of the cifar model through the API. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "npukit/graph.h"
#include "ops/ref_onnx.h"

static npk_tensor mk(int dt, int rank, const int64_t *dims, const void *data) {
    npk_tensor t;
    npk_tensor_alloc(&t, NULL, dt, rank, dims);
    if (data) memcpy(t.data, data, npk_tensor_bytes(&t));
    return t;
}

static void test_requant(void) {
    /* round half to even, then zero point, then saturation */
    CHECK_EQ(npk_ref_onnx_requant(3, 0.5f, 0, NPK_DT_INT8), 2);    /* 1.5 -> 2 */
    CHECK_EQ(npk_ref_onnx_requant(5, 0.5f, 0, NPK_DT_INT8), 2);    /* 2.5 -> 2 */
    CHECK_EQ(npk_ref_onnx_requant(-3, 0.5f, 0, NPK_DT_INT8), -2);  /* -1.5 -> -2 */
    CHECK_EQ(npk_ref_onnx_requant(-5, 0.5f, 0, NPK_DT_INT8), -2);  /* -2.5 -> -2 */
    CHECK_EQ(npk_ref_onnx_requant(1000, 1.0f, 0, NPK_DT_INT8), 127);
    CHECK_EQ(npk_ref_onnx_requant(-1000, 1.0f, 0, NPK_DT_INT8), -128);
    CHECK_EQ(npk_ref_onnx_requant(7, 1.0f / 512, 0, NPK_DT_INT8), 0);
    CHECK_EQ(npk_ref_onnx_requant(100, 0.25f, 128, NPK_DT_UINT8), 153);
    CHECK_EQ(npk_ref_onnx_requant(-1000, 0.25f, 128, NPK_DT_UINT8), 0);
}

static void test_quantize(void) {
    int64_t d[1] = {6};
    float xv[6] = {0.0f, 1.5f, 2.5f, -3.0f, 1000.0f, -1000.0f};
    npk_tensor x = mk(NPK_DT_FLOAT, 1, d, xv), s = mk(NPK_DT_FLOAT, 0, NULL, NULL), z = mk(NPK_DT_UINT8, 0, NULL, NULL),
               y = mk(NPK_DT_UINT8, 1, d, NULL), back = mk(NPK_DT_FLOAT, 1, d, NULL);
    ((float *)s.data)[0] = 1.0f;
    ((uint8_t *)z.data)[0] = 10;
    npk_ref_onnx_quantize(&x, &s, &z, 0, &y);
    const uint8_t *q = y.data;
    CHECK_EQ(q[0], 10);
    CHECK_EQ(q[1], 12); /* rint(1.5) = 2 */
    CHECK_EQ(q[2], 12); /* rint(2.5) = 2 */
    CHECK_EQ(q[3], 7);
    CHECK_EQ(q[4], 255);
    CHECK_EQ(q[5], 0);
    npk_ref_onnx_dequantize(&y, &s, &z, 0, &back);
    CHECK(((float *)back.data)[3] == -3.0f);
    CHECK(((float *)back.data)[4] == 245.0f);
    npk_tensor_free(&x);
    npk_tensor_free(&s);
    npk_tensor_free(&z);
    npk_tensor_free(&y);
    npk_tensor_free(&back);
}

static void test_broadcast(void) {
    int64_t da[2] = {2, 1}, db[1] = {3}, dy[2] = {2, 3}, out[NPK_MAX_RANK];
    int r;
    CHECK_EQ(npk_ref_onnx_bcast_shape(2, da, 1, db, &r, out), 0);
    CHECK_EQ(r, 2);
    CHECK_EQ(out[0], 2);
    CHECK_EQ(out[1], 3);
    int64_t bad[1] = {4};
    CHECK(npk_ref_onnx_bcast_shape(1, db, 1, bad, &r, out) < 0);
    int32_t av[2] = {10, 20}, bv[3] = {1, 2, 3};
    npk_tensor a = mk(NPK_DT_INT32, 2, da, av), b = mk(NPK_DT_INT32, 1, db, bv), y = mk(NPK_DT_INT32, 2, dy, NULL);
    npk_ref_onnx_binary(NPK_ONNX_SUB, &a, &b, &y);
    const int32_t *yv = y.data;
    CHECK_EQ(yv[0], 9);
    CHECK_EQ(yv[2], 7);
    CHECK_EQ(yv[3], 19);
    CHECK_EQ(yv[5], 17);
    /* uint8 wraps like numpy */
    int64_t d1[1] = {1};
    uint8_t u1 = 250, u2 = 10;
    npk_tensor ua = mk(NPK_DT_UINT8, 1, d1, &u1), ub = mk(NPK_DT_UINT8, 1, d1, &u2), uy = mk(NPK_DT_UINT8, 1, d1, NULL);
    npk_ref_onnx_binary(NPK_ONNX_ADD, &ua, &ub, &uy);
    CHECK_EQ(((uint8_t *)uy.data)[0], 4);
    npk_tensor_free(&a);
    npk_tensor_free(&b);
    npk_tensor_free(&y);
    npk_tensor_free(&ua);
    npk_tensor_free(&ub);
    npk_tensor_free(&uy);
}

static void conv_params(npk_onnx_conv_params *p, int64_t h, int64_t w, int64_t k, int64_t s, int64_t pad) {
    memset(p, 0, sizeof *p);
    p->nsp = 2;
    p->n = 1;
    p->c = 1;
    p->m = 1;
    p->group = 1;
    int64_t in[3] = {1, h, w}, kk[3] = {1, k, k};
    for (int i = 0; i < 3; i++) {
        p->in[i] = in[i];
        p->k[i] = kk[i];
        p->stride[i] = i ? s : 1;
        p->dil[i] = 1;
        p->pad_b[i] = p->pad_e[i] = i ? pad : 0;
    }
}

static void test_conv(void) {
    /* 3x3 input 1..9, 2x2 kernel of ones, pad 1 -> 4x4 of window sums */
    npk_onnx_conv_params p;
    conv_params(&p, 3, 3, 2, 1, 1);
    CHECK_EQ(npk_ref_onnx_conv_resolve(&p, "NOTSET"), 0);
    CHECK_EQ(p.out[1], 4);
    CHECK_EQ(p.out[2], 4);
    int64_t dx[4] = {1, 1, 3, 3}, dw[4] = {1, 1, 2, 2}, dy[4] = {1, 1, 4, 4};
    int8_t xv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, wv[4] = {1, 1, 1, 1};
    npk_tensor x = mk(NPK_DT_INT8, 4, dx, xv), w = mk(NPK_DT_INT8, 4, dw, wv), y = mk(NPK_DT_INT32, 4, dy, NULL);
    npk_ref_onnx_conv_integer(&p, &x, &w, NULL, NULL, NULL, &y);
    const int32_t *yv = y.data;
    int32_t expect[16] = {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9};
    for (int i = 0; i < 16; i++) CHECK_EQ(yv[i], expect[i]);
    /* with a zero point of 1 on x, padded positions contribute nothing */
    int8_t one = 1;
    npk_tensor zp = mk(NPK_DT_INT8, 0, NULL, &one);
    npk_ref_onnx_conv_integer(&p, &x, &w, &zp, NULL, NULL, &y);
    CHECK_EQ(yv[0], 0);  /* (1-1) */
    CHECK_EQ(yv[5], 8);  /* 12 - 4 */
    /* SAME_UPPER with stride 2 on 5 wide: out 3, total pad 2 (1 / 1); SAME_LOWER odd total puts more in front */
    conv_params(&p, 5, 5, 3, 2, 0);
    CHECK_EQ(npk_ref_onnx_conv_resolve(&p, "SAME_UPPER"), 0);
    CHECK_EQ(p.out[2], 3);
    CHECK_EQ(p.pad_b[2], 1);
    conv_params(&p, 4, 4, 2, 1, 0);
    CHECK_EQ(npk_ref_onnx_conv_resolve(&p, "SAME_LOWER"), 0);
    CHECK_EQ(p.pad_b[2], 1);
    CHECK_EQ(p.pad_e[2], 0);
    CHECK(npk_ref_onnx_conv_resolve(&p, "WRONG") < 0);
    npk_tensor_free(&x);
    npk_tensor_free(&w);
    npk_tensor_free(&y);
    npk_tensor_free(&zp);
}

static void test_pool(void) {
    /* 4x4 input 1..16, 3x3 window stride 2, ceil mode -> 2x2: maxima 11 12 15 16,
     * averages over the valid part of each window */
    npk_onnx_conv_params p;
    conv_params(&p, 4, 4, 3, 2, 0);
    p.ceil_mode = 1;
    CHECK_EQ(npk_ref_onnx_conv_resolve(&p, NULL), 0);
    CHECK_EQ(p.out[1], 2);
    int64_t dx[4] = {1, 1, 4, 4}, dy[4] = {1, 1, 2, 2};
    float xv[16];
    for (int i = 0; i < 16; i++) xv[i] = (float)(i + 1);
    npk_tensor x = mk(NPK_DT_FLOAT, 4, dx, xv), y = mk(NPK_DT_FLOAT, 4, dy, NULL), idx = mk(NPK_DT_INT64, 4, dy, NULL);
    npk_ref_onnx_maxpool(&p, &x, &y, &idx);
    const float *yv = y.data;
    CHECK(yv[0] == 11 && yv[1] == 12 && yv[2] == 15 && yv[3] == 16);
    CHECK_EQ(((int64_t *)idx.data)[3], 15);
    npk_ref_onnx_avgpool(&p, &x, &y);
    CHECK(fabsf(yv[0] - 6.0f) < 1e-6f);              /* rows 1-3, cols 1-3 */
    CHECK(fabsf(yv[1] - 7.5f) < 1e-6f);              /* cols 3-4 only: (3+4+7+8+11+12)/6 */
    CHECK(fabsf(yv[3] - (11 + 12 + 15 + 16) / 4.0f) < 1e-6f);
    /* count_include_pad with pad 1: corner window of 3x3 over 2x2 valid values */
    conv_params(&p, 4, 4, 3, 2, 1);
    p.count_include_pad = 1;
    CHECK_EQ(npk_ref_onnx_conv_resolve(&p, NULL), 0);
    npk_ref_onnx_avgpool(&p, &x, &y);
    CHECK(fabsf(yv[0] - (1 + 2 + 5 + 6) / 9.0f) < 1e-6f);
    npk_tensor_free(&x);
    npk_tensor_free(&y);
    npk_tensor_free(&idx);
}

static void test_matmul_integer(void) {
    /* uint8 with zero points: (a - 3)(b - 5) summed by hand */
    int64_t da[2] = {2, 2}, db[2] = {2, 1}, dy[2] = {2, 1};
    uint8_t av[4] = {3, 4, 10, 0}, bv[2] = {7, 255};
    npk_tensor a = mk(NPK_DT_UINT8, 2, da, av), b = mk(NPK_DT_UINT8, 2, db, bv), y = mk(NPK_DT_INT32, 2, dy, NULL);
    uint8_t za = 3, zb = 5;
    npk_tensor tza = mk(NPK_DT_UINT8, 0, NULL, &za), tzb = mk(NPK_DT_UINT8, 0, NULL, &zb);
    npk_ref_onnx_matmul_integer(&a, &b, &tza, &tzb, &y);
    CHECK_EQ(((int32_t *)y.data)[0], 0 * 2 + 1 * 250);
    CHECK_EQ(((int32_t *)y.data)[1], 7 * 2 + (-3) * 250);
    npk_tensor_free(&a);
    npk_tensor_free(&b);
    npk_tensor_free(&y);
    npk_tensor_free(&tza);
    npk_tensor_free(&tzb);
}

static void test_softmax_transpose(void) {
    int64_t d[2] = {1, 2};
    float xv[2] = {0.0f, (float)log(3.0)};
    npk_tensor x = mk(NPK_DT_FLOAT, 2, d, xv), y = mk(NPK_DT_FLOAT, 2, d, NULL);
    npk_ref_onnx_softmax(&x, &y, 1, 2, 1, 0);
    CHECK(fabsf(((float *)y.data)[0] - 0.25f) < 1e-6f);
    npk_ref_onnx_softmax(&x, &y, 1, 2, 1, 1);
    CHECK(fabsf(((float *)y.data)[1] - (float)log(0.75)) < 1e-6f);
    int64_t d3[3] = {2, 3, 4}, dt[3] = {4, 2, 3};
    int32_t v[24];
    for (int i = 0; i < 24; i++) v[i] = i;
    npk_tensor t = mk(NPK_DT_INT32, 3, d3, v), u = mk(NPK_DT_INT32, 3, dt, NULL);
    int perm[3] = {2, 0, 1};
    npk_ref_onnx_transpose(&t, perm, &u);
    /* u[k][i][j] = t[i][j][k]: u[3][1][2] = t[1][2][3] = 12 + 8 + 3 */
    CHECK_EQ(((int32_t *)u.data)[(3 * 2 + 1) * 3 + 2], 23);
    npk_tensor_free(&x);
    npk_tensor_free(&y);
    npk_tensor_free(&t);
    npk_tensor_free(&u);
}

static void test_pb_roundtrip(void) {
    int64_t d[2] = {2, 3};
    int16_t v[6] = {-1, 2, -300, 400, 5, -6};
    npk_tensor t = mk(NPK_DT_INT16, 2, d, v), back;
    t.name = strdup("t");
    uint8_t *buf;
    size_t len;
    CHECK_EQ(npk_tensor_save_pb(&t, &buf, &len), 0);
    CHECK_EQ(npk_tensor_load_pb(&back, buf, len), 0);
    CHECK_STR(back.name, "t");
    CHECK_EQ(back.dtype, NPK_DT_INT16);
    CHECK_EQ(back.rank, 2);
    CHECK(!memcmp(back.data, v, sizeof v));
    npk_tensor_free(&back);
    /* truncated: a message, never a crash */
    CHECK(npk_tensor_load_pb(&back, buf, len - 3) < 0);
    CHECK(strlen(npk_errmsg()) > 0);
    free(buf);
    npk_tensor_free(&t);
}

static void test_graph_api(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/models/cifar10-lenet-int8/model.onnx", NPUKIT_SHARED_DIR);
    npk_graph *g;
    CHECK_EQ(npk_graph_load_file(&g, path), 0);
    if (!g) return;
    CHECK_EQ(npk_graph_n_inputs(g), 1);
    CHECK_STR(npk_graph_input(g, 0)->name, "images");
    CHECK_EQ(npk_graph_input(g, 0)->dtype, NPK_DT_INT8);
    CHECK_EQ(npk_graph_input(g, 0)->dims[1], 3);
    CHECK_EQ(npk_graph_opset(g), 14);
    CHECK_EQ(npk_graph_check(g, NULL), 0);
    npk_tensor *outs;
    size_t no;
    /* missing input */
    CHECK_EQ(npk_graph_run(g, NULL, NULL, 0, &outs, &no, NULL), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "missing input 'images'") != NULL);
    /* the model on cpu, v0 and shell from the test input; logits row 0 from expected.txt */
    snprintf(path, sizeof path, "%s/models/cifar10-lenet-int8/test_data_set_0/input_0.pb", NPUKIT_SHARED_DIR);
    npk_tensor in;
    CHECK_EQ(npk_tensor_load_pb_file(&in, path), 0);
    free(in.name);
    in.name = strdup("images");
    const int8_t row0[10] = {-10, -29, 4, 48, -4, 20, 4, -12, 25, -30};
    const char *devs[3] = {"cpu", "v0", "shell"};
    for (int d = 0; d < 3; d++) {
        npk_run_opts o = {.device = devs[d]};
        npk_run_report rep;
        int rc = npk_graph_run(g, &o, &in, 1, &outs, &no, &rep);
        CHECK_EQ(rc, 0);
        if (rc) {
            fprintf(stderr, "%s: %s\n", devs[d], npk_errmsg());
            continue;
        }
        CHECK_EQ(no, 1);
        CHECK(!memcmp(outs[0].data, row0, 10));
        if (d) {
            CHECK(rep.device_macs == 2606880); /* every MAC of the model on the device */
            CHECK(rep.cpu_macs == 0);
            CHECK(rep.guest_bytes > 0 && rep.guest_bytes < rep.guest_naive_bytes); /* lifetimes reuse memory */
            CHECK(rep.device_cycles > 0);
        }
        npk_tensor_free(&outs[0]);
        free(outs);
        npk_run_report_fini(&rep);
    }
    /* wrong dtype */
    in.dtype = NPK_DT_UINT8;
    CHECK(npk_graph_run(g, NULL, &in, 1, &outs, &no, NULL) < 0);
    CHECK(strstr(npk_errmsg(), "has type uint8") != NULL);
    npk_tensor_free(&in);
    npk_graph_free(g);
    /* corrupt bytes */
    const uint8_t junk[5] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    CHECK_EQ(npk_graph_load(&g, junk, sizeof junk), -NPK_EFORMAT);
    CHECK(g == NULL);
}

int main(void) {
    test_requant();
    test_quantize();
    test_broadcast();
    test_conv();
    test_pool();
    test_matmul_integer();
    test_softmax_transpose();
    test_pb_roundtrip();
    test_graph_api();
    return CHECK_DONE();
}
