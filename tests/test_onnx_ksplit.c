// SPDX-License-Identifier: MIT
/* Integer products whose contraction K exceeds one device descriptor (v0
 * MATMUL_S8 takes K <= 1024): the graph layer splits K into chunks, each a
 * device product into its own int32 slice, and adds the slices on the host.
 * A MatMulInteger (uint8 A with a zero point, int8 B with a zero point, K =
 * 2500) and a QLinearConv (300 input channels, 3x3 kernel: K = 2700) must run
 * on the device on v0, shell and e1 and equal an independent int64
 * computation written here from the ONNX definitions. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "npukit/graph.h"
#include "onnx_build.h"

enum { MM = 5, KK = 2500, NN = 7 };
enum { CI = 300, HH = 4, WW = 5, CO = 6, KS = 3 }; /* pads 1: output 4x5 */

static void run_on_devices(const uint8_t *buf, size_t len, npk_tensor *in, const void *want, size_t wbytes,
                           const char *op) {
    npk_graph *g = NULL;
    CHECK_EQ(npk_graph_load(&g, buf, len), 0);
    if (!g) return;
    const char *devs[4] = {"cpu", "v0", "shell", "e1"};
    for (int d = 0; d < 4; d++) {
        npk_run_opts o = {.device = devs[d]};
        npk_tensor *out = NULL;
        size_t no = 0;
        npk_run_report rep;
        int rc = npk_graph_run(g, d ? &o : NULL, in, 1, &out, &no, &rep);
        CHECK_EQ(rc, 0);
        if (rc) {
            fprintf(stderr, "%s %s: %s\n", op, devs[d], npk_errmsg());
            continue;
        }
        CHECK(no == 1 && npk_tensor_numel(&out[0]) * (int64_t)npk_dtype_size(out[0].dtype) == (int64_t)wbytes);
        if (!memcmp(out[0].data, want, wbytes)) {
            CHECK(1);
        } else {
            fprintf(stderr, "%s on %s differs from the independent computation\n", op, devs[d]);
            CHECK(0);
        }
        int on_dev = 0;
        for (size_t i = 0; i < rep.n_nodes; i++)
            if (!strcmp(rep.nodes[i].op, op) && rep.nodes[i].place == NPK_PLACE_DEVICE) on_dev = 1;
        if (d) {
            CHECK(on_dev);
            CHECK_EQ(rep.cpu_macs, 0);
        }
        npk_tensor_free(&out[0]);
        free(out);
        npk_run_report_fini(&rep);
    }
    npk_graph_free(g);
}

/* Serialize m, run it with the one input (name, type, shape, data) and free everything. */
static void save_and_run(ob_model *m, const char *name, int dt, int rank, const int64_t *dims, const void *data,
                         const void *want, size_t wbytes, const char *op) {
    uint8_t *buf;
    size_t len;
    CHECK_EQ(ob_save(m, &buf, &len), 0);
    npk_tensor in;
    npk_tensor_alloc(&in, name, dt, rank, dims);
    memcpy(in.data, data, (size_t)npk_tensor_numel(&in) * npk_dtype_size(dt));
    run_on_devices(buf, len, &in, want, wbytes, op);
    npk_tensor_free(&in);
    free(buf);
    ob_free(m);
}

static void matmul_integer(void) {
    static uint8_t a[MM * KK];
    static int8_t b[KK * NN];
    static int32_t want[MM * NN];
    uint8_t azp = 131;
    int8_t bzp = -3;
    for (int i = 0; i < MM * KK; i++) a[i] = (uint8_t)((i * 97 + 13) % 256);
    for (int i = 0; i < KK * NN; i++) b[i] = (int8_t)((i * 61 + 7) % 255 - 127);
    for (int i = 0; i < MM; i++)
        for (int j = 0; j < NN; j++) {
            int64_t s = 0;
            for (int k = 0; k < KK; k++) s += ((int64_t)a[i * KK + k] - azp) * ((int64_t)b[k * NN + j] - bzp);
            want[i * NN + j] = (int32_t)s;
        }
    ob_model *m = ob_new(13);
    int64_t da[2] = {MM, KK}, db[2] = {KK, NN}, dy[2] = {MM, NN};
    ob_input(m, "a", NPK_DT_UINT8, 2, da);
    ob_init(m, "b", NPK_DT_INT8, 2, db, b);
    ob_init(m, "azp", NPK_DT_UINT8, 0, NULL, &azp);
    ob_init(m, "bzp", NPK_DT_INT8, 0, NULL, &bzp);
    ob_node(m, "", "MatMulInteger", "mm", "a,b,azp,bzp", "y");
    ob_output(m, "y", NPK_DT_INT32, 2, dy);
    save_and_run(m, "a", NPK_DT_UINT8, 2, da, a, want, sizeof want, "MatMulInteger");
}

static void qlinear_conv(void) {
    static int8_t x[CI * HH * WW], w[CO * CI * KS * KS], want[CO * HH * WW];
    static int32_t bias[CO];
    static float wsc[CO];
    float xs = 0.02f, ys = 0.5f;
    int8_t xz = 2, wz = 0, yz = -4;
    for (int i = 0; i < CI * HH * WW; i++) x[i] = (int8_t)((i * 29 + 5) % 255 - 127);
    for (int i = 0; i < CO * CI * KS * KS; i++) w[i] = (int8_t)((i * 43 + 17) % 255 - 127);
    for (int o = 0; o < CO; o++) {
        bias[o] = (o - 3) * 1009;
        wsc[o] = 0.001f * (float)(o + 1);
    }
    for (int o = 0; o < CO; o++)
        for (int oh = 0; oh < HH; oh++)
            for (int ow = 0; ow < WW; ow++) {
                int64_t acc = bias[o];
                for (int c = 0; c < CI; c++)
                    for (int kh = 0; kh < KS; kh++)
                        for (int kw = 0; kw < KS; kw++) {
                            int ih = oh - 1 + kh, iw = ow - 1 + kw;
                            if (ih < 0 || ih >= HH || iw < 0 || iw >= WW) continue;
                            acc += ((int64_t)x[(c * HH + ih) * WW + iw] - xz) * w[((o * CI + c) * KS + kh) * KS + kw];
                        }
                float v = nearbyintf((float)(int32_t)acc * (xs * wsc[o] / ys)) + (float)yz;
                want[(o * HH + oh) * WW + ow] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
            }
    ob_model *m = ob_new(13);
    int64_t dx[4] = {1, CI, HH, WW}, dw[4] = {CO, CI, KS, KS}, dc[1] = {CO}, dy[4] = {1, CO, HH, WW};
    ob_input(m, "x", NPK_DT_INT8, 4, dx);
    ob_init(m, "xs", NPK_DT_FLOAT, 0, NULL, &xs);
    ob_init(m, "xz", NPK_DT_INT8, 0, NULL, &xz);
    ob_init(m, "w", NPK_DT_INT8, 4, dw, w);
    ob_init(m, "ws", NPK_DT_FLOAT, 1, dc, wsc);
    ob_init(m, "wz", NPK_DT_INT8, 0, NULL, &wz);
    ob_init(m, "ys", NPK_DT_FLOAT, 0, NULL, &ys);
    ob_init(m, "yz", NPK_DT_INT8, 0, NULL, &yz);
    ob_init(m, "bias", NPK_DT_INT32, 1, dc, bias);
    Onnx__NodeProto *n = ob_node(m, "", "QLinearConv", "conv", "x,xs,xz,w,ws,wz,ys,yz,bias", "y");
    int64_t pads[4] = {1, 1, 1, 1};
    ob_attr_ints(m, n, "pads", 4, pads);
    ob_output(m, "y", NPK_DT_INT8, 4, dy);
    save_and_run(m, "x", NPK_DT_INT8, 4, dx, x, want, sizeof want, "QLinearConv");
}

int main(void) {
    matmul_integer();
    qlinear_conv();
    return CHECK_DONE();
}
