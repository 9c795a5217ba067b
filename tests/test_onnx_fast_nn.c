// SPDX-License-Identifier: MIT
/* The fast MaxPool and nearest Resize (src/ops/fast_onnx_nn.c) against the
 * golden (src/ops/ref_onnx_nn*.c), bit for bit, on pseudo-random shapes and
 * attributes: 1-D/2-D/3-D pooling with strides, dilations, asymmetric pads,
 * ceil_mode and windows that fall entirely in the padding; float32 (with
 * NaN, -0.0 and ties), int8 and uint8; Resize over every coordinate
 * transformation and nearest mode, up- and down-scaling by non-integer
 * factors, ranks 1-4. Then the models whose Resize/MaxPool run here, fast
 * against golden. */
#include "check.h"
#include "onnx_fast_check.h"
#include "ops/fast_onnx.h"

static const int dts[] = {NPK_DT_FLOAT, NPK_DT_INT8, NPK_DT_UINT8};

/* Random values with the float special cases the rules hinge on. */
static npk_tensor rand_special(int dt, int rank, const int64_t *dims) {
    npk_tensor t = rand_t(dt, rank, dims);
    if (dt == NPK_DT_FLOAT) {
        float *f = t.data;
        int64_t n = npk_tensor_numel(&t);
        for (int64_t i = 0; i < n; i++) {
            uint32_t r = rnd() % 16;
            if (r == 0) f[i] = NAN;
            else if (r == 1) f[i] = -0.0f;
            else if (r == 2) f[i] = 0.0f;
            else if (r == 3) f[i] = 0.5f; /* ties */
        }
    }
    return t;
}

static void test_maxpool(void) {
    for (int it = 0; it < 300; it++) {
        npk_onnx_conv_params p;
        memset(&p, 0, sizeof p);
        p.nsp = 1 + (int)(rnd() % 3);
        p.n = 1 + rnd() % 2;
        p.c = 1 + rnd() % 3;
        p.m = p.c;
        p.group = 1;
        p.ceil_mode = (int)(rnd() % 2);
        for (int d = 0; d < 3; d++) {
            int live = d >= 3 - p.nsp;
            p.in[d] = live ? 1 + rnd() % 9 : 1;
            p.k[d] = live ? 1 + rnd() % 4 : 1;
            p.stride[d] = live ? 1 + rnd() % 3 : 1;
            p.dil[d] = live ? 1 + rnd() % 2 : 1;
            /* ONNX requires pads smaller than the kernel */
            p.pad_b[d] = live ? (int64_t)(rnd() % (uint32_t)p.k[d]) : 0;
            p.pad_e[d] = live ? (int64_t)(rnd() % (uint32_t)p.k[d]) : 0;
        }
        if (npk_ref_onnx_conv_resolve(&p, "NOTSET")) continue; /* no output */
        int64_t dx[5] = {p.n, p.c}, dy[5] = {p.n, p.c};
        for (int i = 0; i < p.nsp; i++) dx[2 + i] = p.in[3 - p.nsp + i], dy[2 + i] = p.out[3 - p.nsp + i];
        int dt = dts[it % 3];
        npk_tensor t[3] = {rand_special(dt, p.nsp + 2, dx), mk(dt, p.nsp + 2, dy), mk(dt, p.nsp + 2, dy)};
        CHECK_EQ(npk_fast_maxpool(&p, &t[0], &t[1]), 0);
        npk_ref_onnx_maxpool(&p, &t[0], &t[2], NULL);
        if (!same_bits(&t[1], &t[2])) {
            fprintf(stderr, "maxpool case %d (%s, nsp %d) differs from the golden\n", it, npk_dtype_name(dt), p.nsp);
            CHECK(0);
        }
        free_all(t, 3);
    }
    /* wide 2-D rows without padding (the AVX2 windows of eight outputs, column stride 1 or 2,
     * then the row's last outputs one by one), NaN, signed zeros and ties among the values */
    for (int it = 0; it < 60; it++) {
        npk_onnx_conv_params p;
        memset(&p, 0, sizeof p);
        p.nsp = 2, p.n = 1, p.c = 1 + rnd() % 3, p.m = p.c, p.group = 1, p.ceil_mode = (int)(rnd() % 2);
        p.in[0] = p.k[0] = p.stride[0] = p.dil[0] = p.dil[1] = p.dil[2] = 1;
        p.in[1] = 1 + rnd() % 5, p.in[2] = 16 + rnd() % 60;
        p.k[1] = 1 + rnd() % 3, p.k[2] = 1 + rnd() % 3;
        if (p.k[1] > p.in[1]) p.k[1] = p.in[1];
        p.stride[1] = 1 + rnd() % 2, p.stride[2] = 1 + rnd() % 2;
        if (npk_ref_onnx_conv_resolve(&p, "NOTSET")) continue;
        int64_t dx[4] = {p.n, p.c, p.in[1], p.in[2]}, dy[4] = {p.n, p.c, p.out[1], p.out[2]};
        npk_tensor t[3] = {rand_special(NPK_DT_FLOAT, 4, dx), mk(NPK_DT_FLOAT, 4, dy), mk(NPK_DT_FLOAT, 4, dy)};
        CHECK_EQ(npk_fast_maxpool(&p, &t[0], &t[1]), 0);
        npk_ref_onnx_maxpool(&p, &t[0], &t[2], NULL);
        if (!same_bits(&t[1], &t[2])) {
            fprintf(stderr, "wide maxpool case %d differs from the golden\n", it);
            CHECK(0);
        }
        free_all(t, 3);
    }
    /* other element types: the golden's */
    npk_onnx_conv_params p = {.nsp = 1, .n = 1, .c = 1, .m = 1, .group = 1, .in = {1, 1, 4}, .k = {1, 1, 2},
                              .stride = {1, 1, 1}, .dil = {1, 1, 1}};
    CHECK_EQ(npk_ref_onnx_conv_resolve(&p, "NOTSET"), 0);
    int64_t d[3] = {1, 1, 4}, e[3] = {1, 1, 3};
    npk_tensor x = mk(NPK_DT_DOUBLE, 3, d), y = mk(NPK_DT_DOUBLE, 3, e);
    CHECK_EQ(npk_fast_maxpool(&p, &x, &y), 1);
    npk_tensor_free(&x), npk_tensor_free(&y);
}

static void test_resize(void) {
    for (int it = 0; it < 400; it++) {
        npk_onnx_resize r;
        memset(&r, 0, sizeof r);
        r.rank = 1 + (int)(rnd() % 4);
        r.mode = NPK_ONNX_RS_NEAREST;
        r.coord = (int)(rnd() % 5); /* every one but tf_crop_and_resize */
        r.nearest = (int)(rnd() % 4);
        int64_t dx[NPK_MAX_RANK], dy[NPK_MAX_RANK];
        for (int d = 0; d < r.rank; d++) {
            dx[d] = 1 + rnd() % 7;
            static const double sc[] = {1, 2, 3, 0.5, 1.5, 0.75, 2.5, 1.0 / 3};
            r.scales[d] = sc[rnd() % 8];
            dy[d] = (int64_t)floor((double)dx[d] * r.scales[d]);
            if (dy[d] < 1) dy[d] = 1;
            r.roi[r.rank + d] = 1;
        }
        int dt = dts[it % 3];
        npk_tensor t[3] = {rand_special(dt, r.rank, dx), mk(dt, r.rank, dy), mk(dt, r.rank, dy)};
        CHECK_EQ(npk_fast_resize(&r, &t[0], &t[1]), 0);
        CHECK_EQ(npk_ref_onnx_resize(&r, &t[0], &t[2]), 0);
        if (!same_bits(&t[1], &t[2])) {
            fprintf(stderr, "resize case %d (%s, rank %d, coord %d, nearest %d) differs from the golden\n", it,
                    npk_dtype_name(dt), r.rank, r.coord, r.nearest);
            CHECK(0);
        }
        free_all(t, 3);
    }
    /* what stays on the golden: linear, tf_crop_and_resize, other element types */
    npk_onnx_resize r = {.rank = 1, .mode = NPK_ONNX_RS_LINEAR, .scales = {2}, .roi = {0, 1}};
    int64_t d = 3, e = 6;
    npk_tensor x = mk(NPK_DT_FLOAT, 1, &d), y = mk(NPK_DT_FLOAT, 1, &e);
    CHECK_EQ(npk_fast_resize(&r, &x, &y), 1);
    r.mode = NPK_ONNX_RS_NEAREST;
    r.coord = NPK_ONNX_RS_TF_CROP_AND_RESIZE;
    CHECK_EQ(npk_fast_resize(&r, &x, &y), 1);
    npk_tensor_free(&x), npk_tensor_free(&y);
    x = mk(NPK_DT_INT32, 1, &d), y = mk(NPK_DT_INT32, 1, &e);
    r.coord = NPK_ONNX_RS_ASYMMETRIC;
    CHECK_EQ(npk_fast_resize(&r, &x, &y), 1);
    npk_tensor_free(&x), npk_tensor_free(&y);
}

/* Quantize and requantize round and add the zero point in float (the golden
 * in double): values where float could differ, around 2^24 and far beyond,
 * infinities and NaN, every zero point sign and both 8-bit types. */
static void test_quant_edges(void) {
    static const float big[] = {16777215.0f, 16777216.0f, 16777218.0f, -16777215.0f, -16777216.0f, -16777218.0f,
                                8388607.5f,  -8388608.5f, 1e30f,       -1e30f,       INFINITY,     -INFINITY,
                                NAN,         127.5f,      -128.5f,     255.5f,       -0.5f,        0.5f};
    static const int32_t accs[] = {2147483647, -2147483647 - 1, 16777217, -16777217, 255, -129, 0, 1};
    enum { NB = sizeof big / sizeof big[0], NA = sizeof accs / sizeof accs[0] };
    int64_t n = NB, na = NA, one = 1;
    for (int u = 0; u < 2; u++) {
        int dt = u ? NPK_DT_UINT8 : NPK_DT_INT8;
        static const int zps[] = {-128, -3, 0, 5, 127, 255};
        for (size_t zi = 0; zi < sizeof zps / sizeof zps[0]; zi++) {
            if (!u && zps[zi] > 127) continue;
            if (u && zps[zi] < 0) continue;
            npk_tensor x = mk(NPK_DT_FLOAT, 1, &n), s = mk(NPK_DT_FLOAT, 0, &one), z = mk(dt, 0, &one);
            memcpy(x.data, big, sizeof big);
            ((float *)s.data)[0] = 1.0f;
            if (u) ((uint8_t *)z.data)[0] = (uint8_t)zps[zi];
            else ((int8_t *)z.data)[0] = (int8_t)zps[zi];
            npk_tensor q1 = mk(dt, 1, &n), q2 = mk(dt, 1, &n);
            CHECK_EQ(npk_fast_quantize(&x, &s, &z, 0, &q1), 0);
            npk_ref_onnx_quantize(&x, &s, &z, 0, &q2);
            CHECK(same_bits(&q1, &q2));
            npk_tensor acc = mk(NPK_DT_INT32, 1, &na), r1 = mk(dt, 1, &na), r2 = mk(dt, 1, &na);
            memcpy(acc.data, accs, sizeof accs);
            for (int m = 0; m < 3; m++) {
                float mult = m == 0 ? 1.0f : m == 1 ? 3.0f : 0.5f;
                CHECK_EQ(npk_fast_requant_tensor(&acc, &mult, 1, 0, zps[zi], &r1), 0);
                npk_ref_onnx_requant_tensor(&acc, &mult, 1, 0, zps[zi], &r2);
                CHECK(same_bits(&r1, &r2));
            }
            npk_tensor all[8] = {x, s, z, q1, q2, acc, r1, r2};
            free_all(all, 8);
        }
    }
}

int main(int argc, char **argv) {
    const char *shared = argc > 1 ? argv[1] : NPUKIT_SHARED_DIR;
    test_maxpool();
    test_resize();
    uint64_t seed = rs;
    FOR_EACH_ISA(l) { /* each level's copies of the quantization loops, on the same cases */
        rs = seed;
        test_quant_edges();
    }
    CHECK_EQ(npk_isa_force(NPK_ISA_AUTO), 0);
    /* Resize (nearest, asymmetric, floor) on float; MaxPool on int8 */
    test_shared_model(shared, "onnx-zoo/ppocr-v4-det", 0);
    test_shared_model(shared, "onnx-zoo/ppocr-cls-qdq-s8", 1);
    return CHECK_DONE();
}
