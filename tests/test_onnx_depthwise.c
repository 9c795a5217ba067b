// SPDX-License-Identifier: MIT
/* Grouped and depthwise QLinearConv on the devices (issue 17 point 1). v0
 * batches narrow groups into one MATMUL_S8 with a block-diagonal weight
 * matrix (up to 16 output channels per product, the groups balanced over the
 * products); the output must equal an independent int64 computation of the
 * ONNX definition written here, on cpu, v0, shell and e1, with uint8
 * activations (zero point 131), a nonzero weight zero point, per-channel
 * weight scales, bias, stride 2 and padding. Cases: depthwise with 20
 * channels (v0: 2 products of 10 groups), depthwise with channel multiplier
 * 2 (6 groups of 2 outputs: one product of 12 columns), and 40 groups of 2
 * input and 2 output channels (K per group 18: 5 products of 8 groups). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "npukit/graph.h"
#include "onnx_build.h"

enum { NI = 2, HH = 9, WW = 7, KS = 3 };

static void run_case(int ci, int co, int group, const char *batched) {
    int cpg = ci / group, mpg = co / group, oh_n = (HH + 2 - KS) / 2 + 1, ow_n = (WW + 2 - KS) / 2 + 1;
    size_t nx = (size_t)NI * ci * HH * WW, nw = (size_t)co * cpg * KS * KS, ny = (size_t)NI * co * oh_n * ow_n;
    uint8_t *x = malloc(nx), *want = malloc(ny);
    int8_t *w = malloc(nw);
    int32_t *bias = malloc(sizeof(int32_t) * (size_t)co);
    float *wsc = malloc(sizeof(float) * (size_t)co);
    float xs = 0.03f, ys = 0.25f;
    uint8_t xz = 131, yz = 120;
    int8_t wz = -3;
    for (size_t i = 0; i < nx; i++) x[i] = (uint8_t)((i * 97 + 13) % 256);
    for (size_t i = 0; i < nw; i++) w[i] = (int8_t)((i * 61 + 7) % 255 - 127);
    for (int o = 0; o < co; o++) {
        bias[o] = (o % 7 - 3) * 511;
        wsc[o] = 0.002f * (float)(o % 5 + 1);
    }
    for (int n = 0; n < NI; n++)
        for (int o = 0; o < co; o++) {
            int g = o / mpg;
            for (int oh = 0; oh < oh_n; oh++)
                for (int ow = 0; ow < ow_n; ow++) {
                    int64_t acc = bias[o];
                    for (int c = 0; c < cpg; c++)
                        for (int kh = 0; kh < KS; kh++)
                            for (int kw = 0; kw < KS; kw++) {
                                int ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
                                if (ih < 0 || ih >= HH || iw < 0 || iw >= WW) continue;
                                int64_t xv = x[(((size_t)n * ci + (size_t)(g * cpg + c)) * HH + (size_t)ih) * WW + (size_t)iw];
                                int64_t wv = w[(((size_t)o * cpg + (size_t)c) * KS + (size_t)kh) * KS + (size_t)kw];
                                acc += (xv - xz) * (wv - wz);
                            }
                    float v = nearbyintf((float)(int32_t)acc * (xs * wsc[o] / ys)) + (float)yz;
                    want[(((size_t)n * co + (size_t)o) * oh_n + (size_t)oh) * ow_n + (size_t)ow] =
                        (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
        }
    ob_model *m = ob_new(13);
    int64_t dx[4] = {NI, ci, HH, WW}, dw[4] = {co, cpg, KS, KS}, dc[1] = {co}, dy[4] = {NI, co, oh_n, ow_n};
    ob_input(m, "x", NPK_DT_UINT8, 4, dx);
    ob_init(m, "xs", NPK_DT_FLOAT, 0, NULL, &xs);
    ob_init(m, "xz", NPK_DT_UINT8, 0, NULL, &xz);
    ob_init(m, "w", NPK_DT_INT8, 4, dw, w);
    ob_init(m, "ws", NPK_DT_FLOAT, 1, dc, wsc);
    ob_init(m, "wz", NPK_DT_INT8, 0, NULL, &wz);
    ob_init(m, "ys", NPK_DT_FLOAT, 0, NULL, &ys);
    ob_init(m, "yz", NPK_DT_UINT8, 0, NULL, &yz);
    ob_init(m, "bias", NPK_DT_INT32, 1, dc, bias);
    Onnx__NodeProto *nd = ob_node(m, "", "QLinearConv", "conv", "x,xs,xz,w,ws,wz,ys,yz,bias", "y");
    int64_t pads[4] = {1, 1, 1, 1}, strides[2] = {2, 2};
    ob_attr_ints(m, nd, "pads", 4, pads);
    ob_attr_ints(m, nd, "strides", 2, strides);
    ob_attr_i(m, nd, "group", group);
    ob_output(m, "y", NPK_DT_UINT8, 4, dy);
    uint8_t *buf;
    size_t len;
    CHECK_EQ(ob_save(m, &buf, &len), 0);
    ob_free(m);
    npk_graph *g = NULL;
    CHECK_EQ(npk_graph_load(&g, buf, len), 0);
    free(buf);
    npk_tensor in;
    npk_tensor_alloc(&in, "x", NPK_DT_UINT8, 4, dx);
    memcpy(in.data, x, nx);
    const char *devs[4] = {"cpu", "v0", "shell", "e1"};
    for (int d = 0; g && d < 4; d++) {
        npk_run_opts o = {.device = devs[d]};
        npk_tensor *out = NULL;
        size_t no = 0;
        npk_run_report rep;
        int rc = npk_graph_run(g, d ? &o : NULL, &in, 1, &out, &no, &rep);
        CHECK_EQ(rc, 0);
        if (rc) {
            fprintf(stderr, "group %d on %s: %s\n", group, devs[d], npk_errmsg());
            continue;
        }
        CHECK(no == 1 && (size_t)npk_tensor_numel(&out[0]) == ny && out[0].dtype == NPK_DT_UINT8);
        if (no == 1 && (size_t)npk_tensor_numel(&out[0]) == ny && memcmp(out[0].data, want, ny)) {
            fprintf(stderr, "group %d (%d -> %d channels) on %s differs from the independent computation\n", group, ci, co,
                    devs[d]);
            CHECK(0);
        }
        if (d) {
            CHECK(rep.n_nodes == 1 && rep.nodes[0].place == NPK_PLACE_DEVICE);
            CHECK_EQ(rep.cpu_macs, 0);
        }
        if (d == 1) { /* v0: the planned channel batching is the one announced */
            if (!strstr(rep.nodes[0].why, batched)) {
                fprintf(stderr, "v0 plan: %s\n  expected: %s\n", rep.nodes[0].why, batched);
                CHECK(0);
            }
        }
        npk_tensor_free(&out[0]);
        free(out);
        npk_run_report_fini(&rep);
    }
    npk_tensor_free(&in);
    npk_graph_free(g);
    free(x);
    free(want);
    free(w);
    free(bias);
    free(wsc);
}

int main(void) {
    /* M = 2 images x 5 x 4 output pixels = 40 rows */
    run_case(20, 20, 20, "channel-batched as 2 products MxNxK 40x10x90 (10 groups each");
    run_case(6, 12, 6, "channel-batched as 1 product MxNxK 40x12x54 (6 groups each");
    run_case(80, 80, 40, "channel-batched as 5 products MxNxK 40x16x144 (8 groups each");
    return CHECK_DONE();
}
