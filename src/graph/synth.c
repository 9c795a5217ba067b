// SPDX-License-Identifier: MIT
/* Single-layer int8 ONNX graphs of a given shape (QLinearConv or
 * QLinearMatMul with deterministic pseudo-random weights), so that sweeps and
 * benchmarks can run a layer shape (e.g. a row of Gemmini's measured
 * ResNet-50 layers) without a model file. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/onnx_build.h"
#include "npukit/graph.h"
#include "npukit/npu.h"

static uint32_t xs32(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (uint32_t)((*s * 0x2545F4914F6CDD1Dull) >> 32);
}

typedef struct {
    int conv;
    int64_t n, c, h, w, k, r, s, stride, pad, groups; /* conv (NCHW, OIHW) */
    int64_t m, kk, nn;                                /* matmul [m,kk] x [kk,nn] */
} layer_shape;

static int parse_shape(const char *spec, layer_shape *L) {
    memset(L, 0, sizeof *L);
    const char *body;
    if (!strncmp(spec, "conv:", 5)) {
        L->conv = 1;
        body = spec + 5;
    } else if (!strncmp(spec, "matmul:", 7)) {
        body = spec + 7;
    } else {
        return npk_err(NPK_EINVAL, "layer '%s': give conv:KEY=V,... or matmul:m=M,k=K,n=N", spec);
    }
    int64_t p = 0, q = 0, pad = -1;
    L->n = 1;
    L->stride = 1;
    L->groups = 1;
    char buf[256];
    if (strlen(body) >= sizeof buf) return npk_err(NPK_EINVAL, "layer '%s': specification too long", spec);
    strcpy(buf, body);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (!eq) return npk_err(NPK_EINVAL, "layer '%s': '%s' is not key=value", spec, t);
        *eq = 0;
        char *end;
        errno = 0;
        long long v = strtoll(eq + 1, &end, 10);
        if (end == eq + 1 || *end || errno || v < 0 || v > (1 << 20))
            return npk_err(NPK_EINVAL, "layer '%s': %s='%s' is not a number in the range 0..1048576", spec, t, eq + 1);
        int64_t *dst = NULL;
        if (L->conv) {
            dst = !strcmp(t, "n") ? &L->n : !strcmp(t, "c") ? &L->c : !strcmp(t, "h") ? &L->h : !strcmp(t, "w") ? &L->w
                : !strcmp(t, "k") ? &L->k : !strcmp(t, "r") ? &L->r : !strcmp(t, "s") ? &L->s
                : !strcmp(t, "stride") ? &L->stride : !strcmp(t, "pad") ? &pad : !strcmp(t, "p") ? &p
                : !strcmp(t, "q") ? &q : !strcmp(t, "groups") ? &L->groups : NULL;
        } else {
            dst = !strcmp(t, "m") ? &L->m : !strcmp(t, "k") ? &L->kk : !strcmp(t, "n") ? &L->nn : NULL;
        }
        if (!dst) return npk_err(NPK_EINVAL, "layer '%s': unknown key '%s'", spec, t);
        *dst = v;
    }
    if (!L->conv) {
        if (L->m <= 0 || L->kk <= 0 || L->nn <= 0) return npk_err(NPK_EINVAL, "layer '%s': m, k and n must be > 0", spec);
        return 0;
    }
    if (!L->s) L->s = L->r;
    if (L->c <= 0 || L->k <= 0 || L->r <= 0 || L->s <= 0 || L->n <= 0 || L->stride <= 0 || L->groups <= 0)
        return npk_err(NPK_EINVAL, "layer '%s': c, k, r (and s, n, stride, groups) must be > 0", spec);
    if (L->c % L->groups || L->k % L->groups)
        return npk_err(NPK_EINVAL, "layer '%s': groups %" PRId64 " must divide c and k", spec, L->groups);
    L->pad = pad >= 0 ? pad : (L->r - 1) / 2; /* default: "same" padding */
    /* Input size from the output size p x q when given: h = (p-1)*stride + r - 2*pad. */
    if (!L->h) L->h = p ? (p - 1) * L->stride + L->r - 2 * L->pad : 0;
    if (!L->w) L->w = q ? (q - 1) * L->stride + L->s - 2 * L->pad : L->h;
    if (L->h <= 0 || L->w <= 0) return npk_err(NPK_EINVAL, "layer '%s': give h (and w) or p (and q)", spec);
    if (L->h + 2 * L->pad < L->r || L->w + 2 * L->pad < L->s)
        return npk_err(NPK_EINVAL, "layer '%s': the kernel is larger than the padded input", spec);
    return 0;
}

int npk_graph_synth_layer(const char *spec, uint64_t seed, npk_graph **out) {
    *out = NULL;
    layer_shape L;
    int rc = parse_shape(spec, &L);
    if (rc) return rc;
    uint64_t st = seed ? seed : 1;
    ob_model *m = ob_new(13);
    float xs = 0.05f, ws = 0.01f;
    int64_t red = L.conv ? L.c / L.groups * L.r * L.s : L.kk; /* products per output */
    /* accumulator spread of uniform int8 x int8 products: sqrt(red) * 128^2 / 3 */
    float ys = xs * ws * sqrtf((float)red) * 5461.0f / 32.0f;
    int8_t zero = 0;
    ob_init(m, "x_scale", NPK_DT_FLOAT, 0, NULL, &xs);
    ob_init(m, "x_zp", NPK_DT_INT8, 0, NULL, &zero);
    ob_init(m, "w_scale", NPK_DT_FLOAT, 0, NULL, &ws);
    ob_init(m, "w_zp", NPK_DT_INT8, 0, NULL, &zero);
    ob_init(m, "y_scale", NPK_DT_FLOAT, 0, NULL, &ys);
    ob_init(m, "y_zp", NPK_DT_INT8, 0, NULL, &zero);
    int64_t wd[4], nw;
    if (L.conv) {
        int64_t wdims[4] = {L.k, L.c / L.groups, L.r, L.s};
        memcpy(wd, wdims, sizeof wdims);
        nw = L.k * (L.c / L.groups) * L.r * L.s;
    } else {
        wd[0] = L.kk;
        wd[1] = L.nn;
        nw = L.kk * L.nn;
    }
    int8_t *wv = malloc((size_t)nw);
    int32_t *bv = L.conv ? malloc(sizeof(int32_t) * (size_t)L.k) : NULL;
    if (!wv || (L.conv && !bv)) {
        free(wv);
        free(bv);
        ob_free(m);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    for (int64_t i = 0; i < nw; i++) wv[i] = (int8_t)(xs32(&st) >> 24);
    ob_init(m, "w", NPK_DT_INT8, L.conv ? 4 : 2, wd, wv);
    free(wv);
    if (L.conv) {
        for (int64_t i = 0; i < L.k; i++) bv[i] = (int32_t)(xs32(&st) % 4096) - 2048;
        ob_init(m, "b", NPK_DT_INT32, 1, (int64_t[]){L.k}, bv);
        free(bv);
        int64_t xd[4] = {L.n, L.c, L.h, L.w};
        int64_t P = (L.h + 2 * L.pad - L.r) / L.stride + 1, Q = (L.w + 2 * L.pad - L.s) / L.stride + 1;
        int64_t yd[4] = {L.n, L.k, P, Q};
        ob_input(m, "x", NPK_DT_INT8, 4, xd);
        Onnx__NodeProto *nd =
            ob_node(m, "", "QLinearConv", "layer", "x,x_scale,x_zp,w,w_scale,w_zp,y_scale,y_zp,b", "y");
        ob_attr_ints(m, nd, "kernel_shape", 2, (int64_t[]){L.r, L.s});
        ob_attr_ints(m, nd, "strides", 2, (int64_t[]){L.stride, L.stride});
        ob_attr_ints(m, nd, "pads", 4, (int64_t[]){L.pad, L.pad, L.pad, L.pad});
        if (L.groups > 1) ob_attr_i(m, nd, "group", L.groups);
        ob_output(m, "y", NPK_DT_INT8, 4, yd);
    } else {
        ob_input(m, "x", NPK_DT_INT8, 2, (int64_t[]){L.m, L.kk});
        ob_node(m, "", "QLinearMatMul", "layer", "x,x_scale,x_zp,w,w_scale,w_zp,y_scale,y_zp", "y");
        ob_output(m, "y", NPK_DT_INT8, 2, (int64_t[]){L.m, L.nn});
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    if (ob_save(m, &buf, &len)) {
        ob_free(m);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    ob_free(m);
    rc = npk_graph_load(out, buf, len);
    free(buf);
    if (rc) return npk_err_prefix(-rc, "layer '%s'", spec);
    return 0;
}
