// SPDX-License-Identifier: MIT
/* Random operators (issue 14; docs/onnx.md "Random operators") through the whole
 * graph path: statistics of large samples with fixed seeds against the
 * distributions' exact moments (bounds of about 6 standard errors, so a correct
 * generator fails with negligible probability and the fixed seeds make it
 * repeatable), determinism (same seeds: identical bytes; another run seed: other
 * values, except for nodes with a seed attribute), the contract check that
 * `npu onnx-test` uses, and the errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/onnx_build.h"
#include "npukit/graph.h"
#include "ops/ref_onnx.h"

#define N 200000
#define NP 100000
#define NS 100000

static npk_graph *load(ob_model *m) { return ob_load(m); }

/* outputs: 0 u = RandomUniform(seed 7, [-2, 3)), 1 n = RandomNormal(no seed, mean 1.5, scale 2),
 * 2 b = Bernoulli(p, seed 3), 3 m = Multinomial(logits, NS samples, int64),
 * 4 nl = RandomNormalLike(p, double), 5 id = Identity(p) */
static npk_graph *model(void) {
    ob_model *m = ob_new(15);
    ob_input(m, "p", NPK_DT_FLOAT, 1, (int64_t[]){NP});
    ob_input(m, "logits", NPK_DT_FLOAT, 2, (int64_t[]){2, 4});
    Onnx__NodeProto *n = ob_node(m, "", "RandomUniform", "ru", "", "u");
    ob_attr_ints(m, n, "shape", 1, (int64_t[]){N});
    ob_attr_f(m, n, "low", -2.0f);
    ob_attr_f(m, n, "high", 3.0f);
    ob_attr_f(m, n, "seed", 7.0f);
    n = ob_node(m, "", "RandomNormal", "rn", "", "n");
    ob_attr_ints(m, n, "shape", 2, (int64_t[]){N / 4, 4});
    ob_attr_f(m, n, "mean", 1.5f);
    ob_attr_f(m, n, "scale", 2.0f);
    n = ob_node(m, "", "Bernoulli", "be", "p", "b");
    ob_attr_f(m, n, "seed", 3.0f);
    n = ob_node(m, "", "Multinomial", "mu", "logits", "m");
    ob_attr_i(m, n, "sample_size", NS);
    ob_attr_i(m, n, "dtype", NPK_DT_INT64);
    n = ob_node(m, "", "RandomNormalLike", "rnl", "p", "nl");
    ob_attr_i(m, n, "dtype", NPK_DT_DOUBLE);
    ob_node(m, "", "Identity", "idn", "p", "id");
    ob_output(m, "u", NPK_DT_FLOAT, -1, NULL);
    ob_output(m, "n", NPK_DT_FLOAT, -1, NULL);
    ob_output(m, "b", NPK_DT_FLOAT, -1, NULL);
    ob_output(m, "m", NPK_DT_INT64, -1, NULL);
    ob_output(m, "nl", NPK_DT_DOUBLE, -1, NULL);
    ob_output(m, "id", NPK_DT_FLOAT, -1, NULL);
    return load(m);
}

static void inputs(npk_tensor *in) {
    memset(in, 0, 2 * sizeof *in);
    CHECK_EQ(npk_tensor_alloc(&in[0], "p", NPK_DT_FLOAT, 1, (int64_t[]){NP}), 0);
    CHECK_EQ(npk_tensor_alloc(&in[1], "logits", NPK_DT_FLOAT, 2, (int64_t[]){2, 4}), 0);
    float *p = in[0].data, *l = in[1].data;
    /* p: 0.2 on the first half, 0.9 on the second but the last 100 (exactly 0) and 100 before them (exactly 1) */
    for (int i = 0; i < NP; i++) p[i] = i < NP / 2 ? 0.2f : 0.9f;
    for (int i = NP - 200; i < NP - 100; i++) p[i] = 1.0f;
    for (int i = NP - 100; i < NP; i++) p[i] = 0.0f;
    /* row 0: probabilities 0.1 0.2 0.3 0.4; row 1: 1/3 each but class 1 (probability 0) */
    for (int j = 0; j < 4; j++) l[j] = logf((float)(j + 1)) + 5.0f;
    l[4] = l[6] = l[7] = -1.0f;
    l[5] = -INFINITY;
}

static void moments(const npk_tensor *t, double *mean, double *var) {
    int64_t n = npk_tensor_numel(t);
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) s += npk_ref_onnx_get_f(t->data, t->dtype, i);
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) {
        double d = npk_ref_onnx_get_f(t->data, t->dtype, i) - *mean;
        s2 += d * d;
    }
    *var = s2 / (double)(n - 1);
}

static int run(npk_graph *g, uint64_t seed, npk_tensor **outs, size_t *no) {
    npk_tensor in[2];
    inputs(in);
    npk_run_opts o = {.device = "cpu", .seed = seed};
    int rc = npk_graph_run(g, &o, in, 2, outs, no, NULL);
    if (rc) fprintf(stderr, "run: %s\n", npk_errmsg());
    npk_tensor_free(&in[0]);
    npk_tensor_free(&in[1]);
    return rc;
}

static void free_outs(npk_tensor *outs, size_t no) {
    for (size_t k = 0; k < no; k++) npk_tensor_free(&outs[k]);
    free(outs);
}

static int same(const npk_tensor *a, const npk_tensor *b) {
    return a->dtype == b->dtype && npk_tensor_numel(a) == npk_tensor_numel(b) && !memcmp(a->data, b->data, npk_tensor_bytes(a));
}

static void test_statistics(npk_graph *g, npk_tensor *o) {
    double mean, var;
    /* uniform [-2, 3): mean 0.5, variance 25/12; every value in range */
    CHECK_EQ(o[0].dtype, NPK_DT_FLOAT);
    CHECK_EQ(npk_tensor_numel(&o[0]), N);
    const float *u = o[0].data;
    int in_range = 1;
    for (int i = 0; i < N; i++) in_range &= u[i] >= -2.0f && u[i] < 3.0f;
    CHECK(in_range);
    moments(&o[0], &mean, &var);
    CHECK(fabs(mean - 0.5) < 0.02);
    CHECK(fabs(var - 25.0 / 12.0) < 0.04);
    /* normal (1.5, 2): shape [N/4, 4], mean 1.5, variance 4, ~68.3% within one sigma */
    CHECK_EQ(o[1].rank, 2);
    CHECK_EQ(o[1].dims[0], N / 4);
    moments(&o[1], &mean, &var);
    CHECK(fabs(mean - 1.5) < 0.03);
    CHECK(fabs(var - 4.0) < 0.08);
    int within = 0;
    for (int i = 0; i < N; i++) within += fabs(((const float *)o[1].data)[i] - 1.5) < 2.0;
    CHECK(fabs(within / (double)N - 0.682689) < 0.007);
    /* Bernoulli: 0/1, p exactly 0 and 1 obeyed, frequencies 0.2 and 0.9 */
    const float *b = o[2].data;
    int binary = 1, ones_lo = 0, ones_hi = 0, exact = 1;
    for (int i = 0; i < NP; i++) binary &= b[i] == 0.0f || b[i] == 1.0f;
    for (int i = 0; i < NP / 2; i++) ones_lo += b[i] == 1.0f;
    for (int i = NP / 2; i < NP - 200; i++) ones_hi += b[i] == 1.0f;
    for (int i = NP - 200; i < NP; i++) exact &= b[i] == (i < NP - 100 ? 1.0f : 0.0f);
    CHECK(binary);
    CHECK(exact);
    CHECK(fabs(ones_lo / (double)(NP / 2) - 0.2) < 0.011);
    CHECK(fabs(ones_hi / (double)(NP / 2 - 200) - 0.9) < 0.008);
    /* Multinomial: [2, NS] int64, class frequencies 0.1..0.4, and 1/3 with class 1 never drawn */
    CHECK_EQ(o[3].dtype, NPK_DT_INT64);
    CHECK_EQ(o[3].dims[0], 2);
    CHECK_EQ(o[3].dims[1], NS);
    const int64_t *m = o[3].data;
    int64_t cnt[2][4] = {{0}}, bad = 0;
    for (int r = 0; r < 2; r++)
        for (int s = 0; s < NS; s++) {
            int64_t v = m[r * NS + s];
            if (v < 0 || v > 3) bad++;
            else cnt[r][v]++;
        }
    CHECK_EQ(bad, 0);
    for (int j = 0; j < 4; j++) CHECK(fabs(cnt[0][j] / (double)NS - 0.1 * (j + 1)) < 0.01);
    CHECK_EQ(cnt[1][1], 0);
    for (int j = 0; j < 4; j += 1 + (j == 0)) CHECK(fabs(cnt[1][j] / (double)NS - 1.0 / 3.0) < 0.01);
    /* RandomNormalLike: p's shape, dtype double, standard normal */
    CHECK_EQ(o[4].dtype, NPK_DT_DOUBLE);
    CHECK_EQ(npk_tensor_numel(&o[4]), NP);
    moments(&o[4], &mean, &var);
    CHECK(fabs(mean) < 0.02);
    CHECK(fabs(var - 1.0) < 0.03);

    /* the contract check of npu onnx-test: holds on the outputs themselves, fails on a value
     * outside the range, a 2 from Bernoulli, a wrong shape; not applied to Identity */
    char why[256];
    CHECK_EQ(npk_graph_random_contract(g, 0, NULL, 0, &o[0], &o[0], why, sizeof why), 0);
    CHECK_EQ(npk_graph_random_contract(g, 5, NULL, 0, &o[5], &o[5], why, sizeof why), -1);
    npk_tensor in[2];
    inputs(in);
    CHECK_EQ(npk_graph_random_contract(g, 3, in, 2, &o[3], &o[3], why, sizeof why), 0);
    ((int64_t *)o[3].data)[5] = 4; /* a fifth class: outside [0, 4) */
    CHECK_EQ(npk_graph_random_contract(g, 3, in, 2, &o[3], &o[3], why, sizeof why), 1);
    CHECK(strstr(why, "element 5 = 4 is outside") != NULL);
    npk_tensor_free(&in[0]);
    npk_tensor_free(&in[1]);
    ((float *)o[0].data)[9] = 3.0f; /* high itself */
    CHECK_EQ(npk_graph_random_contract(g, 0, NULL, 0, &o[0], &o[0], why, sizeof why), 1);
    ((float *)o[2].data)[1] = 2.0f;
    CHECK_EQ(npk_graph_random_contract(g, 2, NULL, 0, &o[2], &o[2], why, sizeof why), 1);
    CHECK(strstr(why, "neither 0 nor 1") != NULL);
    CHECK_EQ(npk_graph_random_contract(g, 1, NULL, 0, &o[1], &o[4], why, sizeof why), 1);
}

static void test_graph(void) {
    npk_graph *g = model();
    CHECK(g != NULL);
    if (!g) return;
    npk_tensor *a = NULL, *b = NULL, *c = NULL;
    size_t na = 0, nb = 0, nc = 0;
    CHECK_EQ(run(g, 0, &a, &na), 0);
    CHECK_EQ(run(g, 0, &b, &nb), 0);
    CHECK_EQ(run(g, 1, &c, &nc), 0);
    if (na == 6 && nb == 6 && nc == 6) {
        /* the same seeds: the same bytes */
        for (int k = 0; k < 6; k++) CHECK(same(&a[k], &b[k]));
        /* another run seed: the seeded nodes repeat, the unseeded ones change */
        CHECK(same(&a[0], &c[0]));
        CHECK(same(&a[2], &c[2]));
        CHECK(!same(&a[1], &c[1]));
        CHECK(!same(&a[3], &c[3]));
        CHECK(!same(&a[4], &c[4]));
        test_statistics(g, a);
    } else {
        CHECK(0);
    }
    free_outs(a, na);
    free_outs(b, nb);
    free_outs(c, nc);
    npk_graph_free(g);
}

/* float16 output, and values rounding to high redrawn: [1, 1.001) holds only 1 and 1.0009765625 in float16 */
static void test_half_range(void) {
    ob_model *m = ob_new(13);
    Onnx__NodeProto *n = ob_node(m, "", "RandomUniform", "ru", "", "u");
    ob_attr_ints(m, n, "shape", 1, (int64_t[]){1000});
    ob_attr_i(m, n, "dtype", NPK_DT_FLOAT16);
    ob_attr_f(m, n, "low", 1.0f);
    ob_attr_f(m, n, "high", 1.001f);
    ob_output(m, "u", NPK_DT_FLOAT16, -1, NULL);
    npk_graph *g = load(m);
    CHECK(g != NULL);
    if (!g) return;
    npk_tensor *o = NULL;
    size_t no = 0;
    npk_run_opts opts = {.device = "cpu"};
    CHECK_EQ(npk_graph_run(g, &opts, NULL, 0, &o, &no, NULL), 0);
    if (no == 1) {
        CHECK_EQ(o[0].dtype, NPK_DT_FLOAT16);
        int ok = 1, ones = 0;
        for (int i = 0; i < 1000; i++) {
            double v = npk_ref_onnx_get_f(o[0].data, o[0].dtype, i);
            ok &= v >= 1.0 && v < 1.001f;
            ones += v == 1.0;
        }
        CHECK(ok);
        CHECK(ones > 0 && ones < 1000);
    }
    free_outs(o, no);
    npk_graph_free(g);
}

/* A Loop body with an unseeded RandomUniform: every iteration draws afresh, the run repeats. */
static void test_loop(void) {
    ob_model *m = ob_new(13);
    int64_t trips = 3;
    ob_init(m, "M", NPK_DT_INT64, 0, NULL, &trips);
    Onnx__NodeProto *n = ob_node(m, "", "Loop", "loop", "M,", "steps");
    ob_output(m, "steps", NPK_DT_FLOAT, -1, NULL);
    Onnx__GraphProto s = ob_sub_begin(m, "body");
    ob_input(m, "i", NPK_DT_INT64, 0, NULL);
    ob_input(m, "cin", NPK_DT_BOOL, 0, NULL);
    ob_node(m, "", "Identity", "c", "cin", "cout");
    Onnx__NodeProto *r = ob_node(m, "", "RandomUniform", "ru", "", "u");
    ob_attr_ints(m, r, "shape", 1, (int64_t[]){8});
    ob_output(m, "cout", NPK_DT_BOOL, 0, NULL);
    ob_output(m, "u", NPK_DT_FLOAT, 1, (int64_t[]){8});
    ob_attr_graph(m, n, "body", ob_sub_end(m, s));
    npk_graph *g = load(m);
    CHECK(g != NULL);
    if (!g) return;
    npk_tensor *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    npk_run_opts o = {.device = "cpu", .seed = 5};
    CHECK_EQ(npk_graph_run(g, &o, NULL, 0, &a, &na, NULL), 0);
    CHECK_EQ(npk_graph_run(g, &o, NULL, 0, &b, &nb, NULL), 0);
    if (na == 1 && nb == 1 && a[0].rank == 2 && a[0].dims[0] == 3 && a[0].dims[1] == 8) {
        const float *u = a[0].data;
        CHECK(same(&a[0], &b[0]));
        CHECK(memcmp(u, u + 8, 8 * sizeof(float)) != 0);
        CHECK(memcmp(u + 8, u + 16, 8 * sizeof(float)) != 0);
    } else {
        CHECK(0);
    }
    free_outs(a, na);
    free_outs(b, nb);
    npk_graph_free(g);
}

static void test_errors(void) {
    /* low >= high, a missing shape, Bernoulli's probability outside [0, 1], Multinomial's dtype */
    ob_model *m = ob_new(15);
    Onnx__NodeProto *n = ob_node(m, "", "RandomUniform", "ru", "", "u");
    ob_attr_ints(m, n, "shape", 1, (int64_t[]){4});
    ob_attr_f(m, n, "low", 2.0f);
    ob_attr_f(m, n, "high", 2.0f);
    ob_output(m, "u", NPK_DT_FLOAT, -1, NULL);
    npk_graph *g = load(m);
    npk_tensor *o = NULL;
    size_t no = 0;
    npk_run_opts opts = {.device = "cpu"};
    CHECK(g && npk_graph_run(g, &opts, NULL, 0, &o, &no, NULL) != 0);
    CHECK(strstr(npk_errmsg(), "low 2 must be below high 2") != NULL);
    npk_graph_free(g);

    m = ob_new(15);
    ob_node(m, "", "RandomNormal", "rn", "", "n");
    ob_output(m, "n", NPK_DT_FLOAT, -1, NULL);
    g = load(m);
    CHECK(g && npk_graph_run(g, &opts, NULL, 0, &o, &no, NULL) != 0);
    CHECK(strstr(npk_errmsg(), "shape attribute is required") != NULL);
    npk_graph_free(g);

    m = ob_new(15);
    ob_input(m, "p", NPK_DT_FLOAT, 1, (int64_t[]){3});
    ob_node(m, "", "Bernoulli", "be", "p", "b");
    ob_output(m, "b", NPK_DT_FLOAT, -1, NULL);
    g = load(m);
    npk_tensor in;
    memset(&in, 0, sizeof in);
    CHECK_EQ(npk_tensor_alloc(&in, "p", NPK_DT_FLOAT, 1, (int64_t[]){3}), 0);
    ((float *)in.data)[0] = 0.5f;
    ((float *)in.data)[1] = 0.5f;
    ((float *)in.data)[2] = 1.5f;
    CHECK(g && npk_graph_run(g, &opts, &in, 1, &o, &no, NULL) != 0);
    CHECK(strstr(npk_errmsg(), "probability 1.5 at element 2 is outside [0, 1]") != NULL);
    npk_tensor_free(&in);
    npk_graph_free(g);

    m = ob_new(15);
    ob_input(m, "x", NPK_DT_FLOAT, 2, (int64_t[]){1, 3});
    n = ob_node(m, "", "Multinomial", "mu", "x", "y");
    ob_attr_i(m, n, "dtype", NPK_DT_FLOAT);
    ob_output(m, "y", NPK_DT_FLOAT, -1, NULL);
    g = load(m);
    memset(&in, 0, sizeof in);
    CHECK_EQ(npk_tensor_alloc(&in, "x", NPK_DT_FLOAT, 2, (int64_t[]){1, 3}), 0);
    CHECK(g && npk_graph_run(g, &opts, &in, 1, &o, &no, NULL) != 0);
    CHECK(strstr(npk_errmsg(), "Multinomial outputs int32 or int64") != NULL);
    npk_tensor_free(&in);
    npk_graph_free(g);
}

/* the generator itself: the same seed repeats, another seed differs, uniform in [0, 1) */
static void test_rng(void) {
    npk_rng a, b, c;
    npk_rng_seed(&a, 42);
    npk_rng_seed(&b, 42);
    npk_rng_seed(&c, 43);
    int same_ab = 1, same_ac = 1, in01 = 1;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = npk_rng_next(&a), y = npk_rng_next(&b), z = npk_rng_next(&c);
        same_ab &= x == y;
        same_ac &= x == z;
        double u = npk_rng_uniform(&a);
        (void)npk_rng_uniform(&b);
        (void)npk_rng_uniform(&c);
        in01 &= u >= 0.0 && u < 1.0;
    }
    CHECK(same_ab);
    CHECK(!same_ac);
    CHECK(in01);
}

int main(void) {
    test_rng();
    test_graph();
    test_half_range();
    test_loop();
    test_errors();
    return CHECK_DONE();
}
