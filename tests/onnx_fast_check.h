// SPDX-License-Identifier: MIT
/* Shared by the tests of the fast CPU kernels (test_onnx_fast*.c): pseudo-random
 * tensors, the comparisons with the golden (bit for bit, or within ONNX's backend
 * tolerance |fast - golden| <= 1e-6 + 1e-3 * |golden|), and a whole model run
 * with the fast kernels against npk_run_opts.golden = 1. */
#ifndef NPUKIT_TESTS_ONNX_FAST_CHECK_H
#define NPUKIT_TESTS_ONNX_FAST_CHECK_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "npukit/graph.h"
#include "ops/ref_onnx.h"

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static inline uint32_t rnd(void) {
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (uint32_t)(rs >> 16);
}
static inline float frnd(void) { return (float)((double)(rnd() % 20001) / 10000.0 - 1.0); }

static inline npk_tensor mk(int dt, int rank, const int64_t *dims) {
    npk_tensor t;
    memset(&t, 0, sizeof t);
    npk_tensor_alloc(&t, NULL, dt, rank, dims);
    return t;
}

static inline npk_tensor rand_t(int dt, int rank, const int64_t *dims) {
    npk_tensor t = mk(dt, rank, dims);
    int64_t n = npk_tensor_numel(&t);
    for (int64_t i = 0; i < n; i++) {
        if (dt == NPK_DT_FLOAT) ((float *)t.data)[i] = frnd();
        else if (dt == NPK_DT_INT8) ((int8_t *)t.data)[i] = (int8_t)rnd();
        else if (dt == NPK_DT_UINT8) ((uint8_t *)t.data)[i] = (uint8_t)rnd();
        else if (dt == NPK_DT_INT32) ((int32_t *)t.data)[i] = (int32_t)(rnd() % 200001) - 100000;
    }
    return t;
}

static inline int same_bits(const npk_tensor *a, const npk_tensor *b) {
    return npk_tensor_bytes(a) == npk_tensor_bytes(b) && !memcmp(a->data, b->data, npk_tensor_bytes(a));
}

/* ONNX backend tolerance: |a - g| <= atol + rtol * |g| for every element. */
static inline int close_f(const npk_tensor *a, const npk_tensor *g, const char *what) {
    int64_t n = npk_tensor_numel(g);
    if (npk_tensor_numel(a) != n) return 0;
    for (int64_t i = 0; i < n; i++) {
        float x = ((const float *)a->data)[i], y = ((const float *)g->data)[i];
        if (x == y || (isnan(x) && isnan(y))) continue; /* equal infinities, NaNs (as numpy's allclose) */
        if (!(fabs((double)x - (double)y) <= 1e-6 + 1e-3 * fabs((double)y))) {
            fprintf(stderr, "%s: element %lld: fast %.9g, golden %.9g\n", what, (long long)i, x, y);
            return 0;
        }
    }
    return 1;
}

static inline void free_all(npk_tensor *t, int n) {
    for (int i = 0; i < n; i++) npk_tensor_free(&t[i]);
}

static inline void test_model(const char *dir, int exact) {
    char mp[1024], ip[1100];
    snprintf(mp, sizeof mp, "%s/model.onnx", dir);
    npk_graph *g = NULL;
    int lrc = npk_graph_load_file(&g, mp);
    if (lrc) fprintf(stderr, "%s does not load: %s\n", mp, npk_errmsg());
    CHECK_EQ(lrc, 0); /* the shared models are part of the test: no skip */
    if (lrc) return;
    npk_tensor in[4];
    memset(in, 0, sizeof in);
    size_t nin = npk_graph_n_inputs(g);
    CHECK(nin <= 4);
    for (size_t k = 0; k < nin && k < 4; k++) {
        snprintf(ip, sizeof ip, "%s/test_data_set_0/input_%zu.pb", dir, k);
        CHECK_EQ(npk_tensor_load_pb_file(&in[k], ip), 0);
    }
    npk_tensor *of = NULL, *og = NULL;
    size_t nf = 0, ng = 0;
    npk_run_opts fast = {.device = "cpu"}, gold = {.device = "cpu", .golden = 1};
    CHECK_EQ(npk_graph_run(g, &fast, in, nin, &of, &nf, NULL), 0);
    CHECK_EQ(npk_graph_run(g, &gold, in, nin, &og, &ng, NULL), 0);
    CHECK_EQ(nf, ng);
    for (size_t i = 0; i < nf && i < ng; i++) {
        CHECK_EQ(of[i].dtype, og[i].dtype);
        if (exact || of[i].dtype != NPK_DT_FLOAT) CHECK(same_bits(&of[i], &og[i]));
        else CHECK(close_f(&of[i], &og[i], dir));
    }
    for (size_t i = 0; i < nf; i++) npk_tensor_free(&of[i]);
    for (size_t i = 0; i < ng; i++) npk_tensor_free(&og[i]);
    free(of);
    free(og);
    for (size_t k = 0; k < 4; k++) npk_tensor_free(&in[k]);
    npk_graph_free(g);
}

/* test_model on SHARED/models/REL. */
static inline void test_shared_model(const char *shared, const char *rel, int exact) {
    char dir[900];
    snprintf(dir, sizeof dir, "%.600s/models/%.200s", shared, rel);
    test_model(dir, exact);
}

#endif
