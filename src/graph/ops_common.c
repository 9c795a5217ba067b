// SPDX-License-Identifier: MIT
/* What the operator handlers of every src/graph/ops*.c share (their outputs,
 * required inputs, axes, Identity, convolution parameters) and the facts of the
 * operator table that name no handler (names, ids, families, the classes of
 * operators npukit leaves out). The handler table itself is ops.c; every
 * handler file depends on this one, never on ops.c. */
#include "graph/ops.h"

#include <assert.h>
#include <string.h>

#define IN(i) ((i) < c->n_in ? c->in[i] : NULL)
#define HAS(i) (IN(i) != NULL)

static int opctx_out(npk_opctx *c, int k, int dtype, int rank, const int64_t *dims, int zero) {
    if (k >= c->n_out || !c->out[k]) return 0; /* output not requested */
    npk_tensor *t = c->out[k];
    if (rank > NPK_MAX_RANK) return npk_err(NPK_EUNSUPPORTED, "output rank %d exceeds %d", rank, NPK_MAX_RANK);
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0) return npk_err(NPK_EINVAL, "negative output dimension %lld", (long long)dims[i]);
    if (c->run) {
        char *name = t->name;
        t->name = NULL;
        if (c->reused && c->reuse && t->data == c->reuse->data) t->data = NULL, c->reused = 0; /* asked again */
        npk_tensor_free(t);
        npk_tensor *r = c->reuse;
        if (!zero && k == 0 && r && r->data && !c->reused && r->kind == NPK_KIND_TENSOR && r->dtype == dtype &&
            r->rank == rank && (!rank || !memcmp(r->dims, dims, sizeof(int64_t) * (size_t)rank))) {
            /* in place: the element-wise kernels read element i before they write it */
            t->dtype = dtype;
            t->rank = rank;
            if (rank) memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
            t->data = r->data;
            t->name = name;
            c->reused = 1;
            return 0;
        }
        int rc = zero ? npk_tensor_alloc(t, NULL, dtype, rank, dims) : npk_tensor_alloc_raw(t, NULL, dtype, rank, dims);
        t->name = name;
        return rc;
    }
    t->dtype = dtype;
    t->rank = rank;
    if (rank) memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    return 0;
}

int npk_opctx_out(npk_opctx *c, int k, int dtype, int rank, const int64_t *dims) {
    return opctx_out(c, k, dtype, rank, dims, 1);
}

int npk_opctx_out_raw(npk_opctx *c, int k, int dtype, int rank, const int64_t *dims) {
    return opctx_out(c, k, dtype, rank, dims, 0);
}

int npk_opc_need_float(const npk_tensor *t, const char *what) {
    if (t->dtype != NPK_DT_FLOAT && t->dtype != NPK_DT_DOUBLE)
        return npk_err(NPK_EINVAL, "%s must be float or double, got %s", what, npk_dtype_name(t->dtype));
    return 0;
}

int npk_opc_need(const npk_opctx *c, int i, const char *what) {
    if (!HAS(i)) return npk_err(NPK_EINVAL, "required input %d (%s) is missing", i, what);
    return 0;
}

int npk_opc_axis(int64_t a, int rank, int *out) {
    *out = 0;
    if (a < -rank || a >= rank) return npk_err(NPK_EINVAL, "axis %lld out of range for rank %d", (long long)a, rank);
    *out = (int)(a < 0 ? a + rank : a);
    return 0;
}

/* Axes from the attribute (old opsets) or input 1 (opset >= 13). Returns count
 * (0 = none given) or -NPK_SHAPE_UNKNOWN / a negative error. */
int npk_opc_axes(npk_opctx *c, int64_t *axes, int attr_opset_limit) {
    const int64_t *v;
    size_t n;
    if (c->opset < attr_opset_limit) {
        n = npk_node_attr_ints(c->node, "axes", &v);
    } else {
        if (!HAS(1)) return 0;
        if (IN(1)->dtype != NPK_DT_INT64) return npk_err(NPK_EINVAL, "axes must be int64");
        if (!IN(1)->data) return -NPK_SHAPE_UNKNOWN;
        n = (size_t)npk_tensor_numel(IN(1));
        v = IN(1)->data;
    }
    if (n > NPK_MAX_RANK) return npk_err(NPK_EINVAL, "too many axes");
    for (size_t i = 0; i < n; i++) axes[i] = v[i];
    return (int)n;
}

int npk_opc_identity(npk_opctx *c) {
    int rc;
    if ((rc = npk_opc_need(c, 0, "input"))) return rc;
    const npk_tensor *x = IN(0);
    if (x->kind != NPK_KIND_TENSOR) { /* a sequence or optional passes through unchanged */
        if (!c->out[0]) return 0;
        if (c->run) return npk_tensor_copy(c->out[0], x);
        c->out[0]->kind = x->kind; /* inference: the kind only (the elements live on the host) */
        c->out[0]->dtype = 0;
        c->out[0]->rank = 0;
        return 0;
    }
    if ((rc = npk_opctx_out(c, 0, x->dtype, x->rank, x->dims))) return rc;
    if (c->run && c->out[0]) memcpy(c->out[0]->data, x->data, npk_tensor_bytes(x));
    return 0;
}

int npk_onnx_conv_params_of(const npk_opctx *c, const npk_tensor *x, const npk_tensor *w, int is_pool,
                            npk_onnx_conv_params *p) {
    memset(p, 0, sizeof *p);
    if (x->rank < 3 || x->rank > 5)
        return npk_err(NPK_EUNSUPPORTED, "input must be [N, C, D1 (, D2 (, D3))] (rank 3 to 5), got rank %d", x->rank);
    int nsp = x->rank - 2, off = 3 - nsp;
    p->nsp = nsp;
    p->n = x->dims[0];
    p->c = x->dims[1];
    p->group = 1;
    for (int i = 0; i < 3; i++) {
        p->in[i] = p->k[i] = p->out[i] = p->stride[i] = p->dil[i] = 1;
        p->pad_b[i] = p->pad_e[i] = 0;
    }
    for (int i = 0; i < nsp; i++) p->in[off + i] = x->dims[2 + i];
    const int64_t *ks, *st, *dl, *pd;
    size_t nk = npk_node_attr_ints(c->node, "kernel_shape", &ks);
    if (w) {
        if (w->rank != x->rank) return npk_err(NPK_EINVAL, "W must have the rank of X (%d), got %d", x->rank, w->rank);
        p->group = npk_node_attr_i(c->node, "group", 1);
        p->m = w->dims[0];
        if (p->group < 1 || p->c % p->group || p->m % p->group)
            return npk_err(NPK_EINVAL, "group %lld does not divide the channels (%lld in, %lld out)", (long long)p->group,
                           (long long)p->c, (long long)p->m);
        if (w->dims[1] * p->group != p->c)
            return npk_err(NPK_EINVAL, "W has %lld input channels per group, X has %lld channels in %lld groups",
                           (long long)w->dims[1], (long long)p->c, (long long)p->group);
        for (int i = 0; i < nsp; i++) {
            p->k[off + i] = w->dims[2 + i];
            if (nk == (size_t)nsp && ks[i] != w->dims[2 + i]) return npk_err(NPK_EINVAL, "kernel_shape does not match W");
        }
    } else {
        p->m = p->c;
        if (nk != (size_t)nsp) return npk_err(NPK_EINVAL, "kernel_shape must have %d entries", nsp);
        for (int i = 0; i < nsp; i++) p->k[off + i] = ks[i];
    }
    size_t ns = npk_node_attr_ints(c->node, "strides", &st), nd = npk_node_attr_ints(c->node, "dilations", &dl);
    size_t np = npk_node_attr_ints(c->node, "pads", &pd);
    if ((ns && ns != (size_t)nsp) || (nd && nd != (size_t)nsp) || (np && np != (size_t)(2 * nsp)))
        return npk_err(NPK_EINVAL, "strides/dilations need %d entries and pads %d", nsp, 2 * nsp);
    for (int i = 0; i < nsp; i++) {
        if (ns) p->stride[off + i] = st[i];
        if (nd) p->dil[off + i] = dl[i];
        if (np) {
            p->pad_b[off + i] = pd[i];
            p->pad_e[off + i] = pd[nsp + i];
        }
    }
    p->ceil_mode = (int)npk_node_attr_i(c->node, "ceil_mode", 0);
    p->count_include_pad = (int)npk_node_attr_i(c->node, "count_include_pad", 0);
    p->storage_order = (int)npk_node_attr_i(c->node, "storage_order", 0);
    (void)is_pool;
    return npk_ref_onnx_conv_resolve(p, npk_node_attr_s(c->node, "auto_pad", "NOTSET"));
}

/* ---- the table's names and families ---------------------------------------------- */

static const char *const op_names[] = {
    "",
#define NAME_(name, fam, fn) #name,
    NPK_ONNX_OPS_ALL(NAME_)
#undef NAME_
};
static_assert(sizeof op_names / sizeof op_names[0] == NPK_OP_COUNT, "one name per operator id");

static const unsigned op_families[] = {
    0,
#define FAM_(name, fam, fn) fam,
    NPK_ONNX_OPS_ALL(FAM_)
#undef FAM_
};
static_assert(sizeof op_families / sizeof op_families[0] == NPK_OP_COUNT, "one family set per operator id");

npk_op_id npk_onnx_op_id(const char *domain, const char *op) {
    if (!op || (domain && *domain && strcmp(domain, "ai.onnx"))) return NPK_OP_NONE;
    for (int i = 1; i < NPK_OP_COUNT; i++)
        if (!strcmp(op_names[i], op)) return (npk_op_id)i;
    return NPK_OP_NONE;
}

const char *npk_onnx_op_name(npk_op_id id) { return id > 0 && id < NPK_OP_COUNT ? op_names[id] : ""; }
unsigned npk_onnx_op_families(npk_op_id id) { return id > 0 && id < NPK_OP_COUNT ? op_families[id] : 0; }
int npk_onnx_op_supported(const char *op) { return npk_onnx_op_id("", op) != NPK_OP_NONE; }
unsigned npk_onnx_op_family(const char *op) { return npk_onnx_op_families(npk_onnx_op_id("", op)); }

const char *npk_onnx_op_unsupported_class(const char *op) {
    static const char *const training[] = {"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss", "Gradient", "Momentum",
                                           "Adam", "Adagrad"};
    static const char *const strings[] = {"StringNormalizer", "TfIdfVectorizer", "RegexFullMatch", "StringConcat",
                                          "StringSplit"};
    for (size_t i = 0; i < sizeof training / sizeof training[0]; i++)
        if (!strcmp(op, training[i])) return "training operator";
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        if (!strcmp(op, strings[i])) return "string operator";
    return NULL;
}
