// SPDX-License-Identifier: MIT
/* Random operators (issue 14): RandomUniform, RandomNormal, RandomUniformLike,
 * RandomNormalLike, Bernoulli, Multinomial; kernels and the generator in
 * src/ops/ref_onnx_random.c. Seeding (docs/onnx.md "Random operators"): a node
 * with a `seed` attribute starts its own stream from that value at every
 * execution; a node without one draws from the run-level seed
 * (npk_run_opts.seed), the node's name and the number of random-node executions
 * before it in the run, so each execution draws differently and a run repeats
 * exactly with the same seed. Test data drawn by numpy cannot be reproduced:
 * npk_graph_random_contract checks such outputs by the operators' contract. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ops.h"

#define IN(i) ((i) < c->n_in ? c->in[i] : NULL)

static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; s && *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* The stream of one execution of the node (called only when it runs). */
static void node_rng(npk_opctx *c, npk_rng *r) {
    const npk_attr *a = npk_node_attr(c->node, "seed");
    if (a) {
        /* the attribute is a float: its float32 bit pattern is the seed */
        float f = (float)a->f;
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        npk_rng_seed(r, (uint64_t)bits);
        return;
    }
    uint64_t n = c->draws ? (*c->draws)++ : 0;
    npk_rng_seed(r, c->run_seed ^ fnv1a(c->node->name) ^ (n * 0x9e3779b97f4a7c15ull));
}

static int float_type(int dt) {
    return dt == NPK_DT_FLOAT || dt == NPK_DT_DOUBLE || dt == NPK_DT_FLOAT16 || dt == NPK_DT_BFLOAT16;
}

/* dtype attribute (default def), which must be a float type */
static int out_float_dtype(npk_opctx *c, int def, int *dt) {
    *dt = (int)npk_node_attr_i(c->node, "dtype", def);
    if (!float_type(*dt)) return npk_err(NPK_EINVAL, "dtype %s is not a float type (float16, bfloat16, float, double)", npk_dtype_name(*dt));
    return 0;
}

/* kind 0: uniform, 1: normal; like: the shape (and default dtype) of input 0 */
static int random_fill(npk_opctx *c, int kind, int like) {
    int rc, dt, rank;
    int64_t dims[NPK_MAX_RANK];
    if (like) {
        if ((rc = npk_opc_need(c, 0, "input"))) return rc;
        const npk_tensor *x = IN(0);
        if ((rc = out_float_dtype(c, float_type(x->dtype) ? x->dtype : NPK_DT_FLOAT, &dt))) return rc;
        if (!npk_node_attr(c->node, "dtype") && !float_type(x->dtype))
            return npk_err(NPK_EINVAL, "input is %s: the dtype attribute must name the float output type", npk_dtype_name(x->dtype));
        rank = x->rank;
        memcpy(dims, x->dims, sizeof dims);
    } else {
        if ((rc = out_float_dtype(c, NPK_DT_FLOAT, &dt))) return rc;
        const int64_t *shape;
        if (!npk_node_attr(c->node, "shape")) return npk_err(NPK_EINVAL, "the shape attribute is required");
        size_t n = npk_node_attr_ints(c->node, "shape", &shape);
        if (n > NPK_MAX_RANK) return npk_err(NPK_EINVAL, "shape has %zu dimensions (at most %d)", n, NPK_MAX_RANK);
        for (size_t i = 0; i < n; i++) {
            if (shape[i] < 0) return npk_err(NPK_EINVAL, "shape[%zu] = %lld is negative", i, (long long)shape[i]);
            dims[i] = shape[i];
        }
        rank = (int)n;
    }
    double a, b;
    if (kind == 0) {
        a = npk_node_attr_f(c->node, "low", 0.0);
        b = npk_node_attr_f(c->node, "high", 1.0);
        if (!(a < b)) return npk_err(NPK_EINVAL, "low %g must be below high %g", a, b);
    } else {
        a = npk_node_attr_f(c->node, "mean", 0.0);
        b = npk_node_attr_f(c->node, "scale", 1.0);
        if (!(b >= 0) || !isfinite(a)) return npk_err(NPK_EINVAL, "mean %g / scale %g: scale must be non-negative, mean finite", a, b);
    }
    if ((rc = npk_opctx_out(c, 0, dt, rank, dims))) return rc;
    if (!c->run) return 0;
    npk_rng r;
    node_rng(c, &r);
    if (kind == 0) npk_ref_onnx_random_uniform(&r, a, b, c->out[0]);
    else npk_ref_onnx_random_normal(&r, a, b, c->out[0]);
    return 0;
}

int npk_op_random_uniform(npk_opctx *c) { return random_fill(c, 0, 0); }
int npk_op_random_normal(npk_opctx *c) { return random_fill(c, 1, 0); }
int npk_op_random_uniform_like(npk_opctx *c) { return random_fill(c, 0, 1); }
int npk_op_random_normal_like(npk_opctx *c) { return random_fill(c, 1, 1); }

int npk_op_bernoulli(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "input"))) return rc;
    const npk_tensor *x = IN(0);
    if (!float_type(x->dtype)) return npk_err(NPK_EINVAL, "input must be a float type, got %s", npk_dtype_name(x->dtype));
    int dt = (int)npk_node_attr_i(c->node, "dtype", x->dtype);
    if (!npk_dtype_size(dt)) return npk_err(NPK_EINVAL, "dtype %s is not supported", npk_dtype_name(dt));
    if ((rc = npk_opctx_out(c, 0, dt, x->rank, x->dims))) return rc;
    if (!c->run) return 0;
    npk_rng r;
    node_rng(c, &r);
    return npk_ref_onnx_bernoulli(&r, x, c->out[0]);
}

int npk_op_multinomial(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "input"))) return rc;
    const npk_tensor *x = IN(0);
    if (!float_type(x->dtype)) return npk_err(NPK_EINVAL, "input must be a float type, got %s", npk_dtype_name(x->dtype));
    if (x->rank != 2) return npk_err(NPK_EINVAL, "input must be [batch_size, class_size], got rank %d", x->rank);
    if (x->dims[1] < 1) return npk_err(NPK_EINVAL, "input has no class (class_size 0)");
    int dt = (int)npk_node_attr_i(c->node, "dtype", NPK_DT_INT32);
    if (dt != NPK_DT_INT32 && dt != NPK_DT_INT64) return npk_err(NPK_EINVAL, "dtype %s: Multinomial outputs int32 or int64", npk_dtype_name(dt));
    int64_t s = npk_node_attr_i(c->node, "sample_size", 1);
    if (s < 1) return npk_err(NPK_EINVAL, "sample_size %lld must be positive", (long long)s);
    int64_t od[2] = {x->dims[0], s};
    if ((rc = npk_opctx_out(c, 0, dt, 2, od))) return rc;
    if (!c->run) return 0;
    npk_rng r;
    node_rng(c, &r);
    return npk_ref_onnx_multinomial(&r, x, s, c->out[0]);
}

/* ---- contract check of random outputs (npk_graph_random_contract) ---- */

/* the node producing value v, -1 for inputs and initializers */
static int random_ancestor(const npk_graph *g, int v, char *seen) {
    if (v < 0 || seen[v]) return 0;
    seen[v] = 1;
    int p = g->vals[v].producer;
    if (p < 0) return 0;
    const npk_node *nd = &g->nodes[p];
    if (npk_onnx_op_families(nd->op_id) & NPK_OPF_RANDOM) return 1;
    for (int k = 0; k < nd->n_in; k++)
        if (random_ancestor(g, nd->in[k], seen)) return 1;
    return 0;
}

static int64_t classes_of(const npk_graph *g, int v, const npk_tensor *ins, size_t n_ins) {
    if (v < 0) return -1;
    const npk_value *val = &g->vals[v];
    const npk_tensor *t = val->konst;
    if (!t && val->graph_input >= 0 && (size_t)val->graph_input < n_ins) t = &ins[val->graph_input];
    return t && t->rank == 2 ? t->dims[1] : -1;
}

int npk_graph_random_contract(const npk_graph *g, size_t k, const npk_tensor *ins, size_t n_ins, const npk_tensor *got,
                              const npk_tensor *exp, char *why, size_t wl) {
    if (k >= g->n_out) return -1;
    int v = g->out_vals[k];
    char *seen = calloc(g->n_vals + 1, 1);
    int rnd = seen ? random_ancestor(g, v, seen) : 0;
    free(seen);
    if (!rnd) return -1;
    if (got->dtype != exp->dtype || got->rank != exp->rank || memcmp(got->dims, exp->dims, sizeof(int64_t) * (size_t)got->rank)) {
        snprintf(why, wl, "random output %zu: %s of rank %d, expected %s of rank %d with the expected dims", k,
                 npk_dtype_name(got->dtype), got->rank, npk_dtype_name(exp->dtype), exp->rank);
        return 1;
    }
    int64_t n = npk_tensor_numel(got);
    const npk_node *nd = g->vals[v].producer >= 0 ? &g->nodes[g->vals[v].producer] : NULL;
    int op = nd && (npk_onnx_op_families(nd->op_id) & NPK_OPF_RANDOM) ? nd->op_id : 0;
    double lo = -INFINITY, hi = INFINITY;
    int hi_open = 0, binary = 0;
    int64_t classes = -1;
    if (op == NPK_OP_RandomUniform || op == NPK_OP_RandomUniformLike) {
        lo = npk_node_attr_f(nd, "low", 0.0);
        hi = npk_node_attr_f(nd, "high", 1.0);
        hi_open = 1;
    } else if (op == NPK_OP_Bernoulli) {
        binary = 1;
    } else if (op == NPK_OP_Multinomial) {
        lo = 0;
        classes = classes_of(g, nd->in[0], ins, n_ins);
        if (classes > 0) hi = (double)classes, hi_open = 1;
    } else if (!op) {
        /* computed from a draw: 0/1 data (Bernoulli expanded into RandomUniformLike, Less, Cast) stays 0/1 */
        binary = 1;
        for (int64_t i = 0; i < n && binary; i++) {
            double e = npk_ref_onnx_get_f(exp->data, exp->dtype, i);
            if (e != 0.0 && e != 1.0) binary = 0;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        double x = npk_ref_onnx_get_f(got->data, got->dtype, i);
        const char *bad = NULL;
        if (!isfinite(x)) bad = "is not finite";
        else if (binary && x != 0.0 && x != 1.0) bad = "is neither 0 nor 1";
        else if (x < lo || (hi_open ? x >= hi : x > hi)) bad = "is outside the operator's range";
        if (bad) {
            snprintf(why, wl, "random output %zu: element %lld = %g %s [%g, %g%s", k, (long long)i, x, bad, lo, hi, hi_open ? ")" : "]");
            return 1;
        }
    }
    return 0;
}
