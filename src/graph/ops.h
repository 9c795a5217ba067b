/*
 * Node-level ONNX operators: attribute parsing, shape and type inference and
 * the call into the CPU reference kernels (src/ops/ref_onnx*.c).
 *
 * One handler per operator does both jobs. With ctx->run == 0 it only
 * infers: inputs may carry no data (ctx->in[i]->data == NULL unless the
 * value is constant) and the handler fills the output metadata (dtype, rank,
 * dims). With ctx->run == 1 every input has data, the handler allocates the
 * outputs (npk_opctx_out) and computes them.
 */
#ifndef NPUKIT_GRAPH_OPS_H
#define NPUKIT_GRAPH_OPS_H

#include "graph/ir.h"
#include "ops/ref_onnx.h"

/* Returned (positive) when an output shape depends on data not known yet. */
#define NPK_SHAPE_UNKNOWN 1000
#define NPK_OP_MAX_IO 16

typedef struct npk_opctx {
    const npk_node *node;
    int64_t opset;
    int run;                               /* 0 = infer only, 1 = infer and compute */
    int n_in, n_out;
    const npk_tensor *in[NPK_OP_MAX_IO];   /* NULL = omitted optional input */
    npk_tensor *out[NPK_OP_MAX_IO];        /* NULL = output not requested */
    uint64_t macs;                         /* set by the handler: multiply-accumulates */
} npk_opctx;

typedef int (*npk_op_fn)(npk_opctx *c);

/* Handler of an operator in the default domain (NULL if unsupported). */
npk_op_fn npk_onnx_op_find(const char *domain, const char *op);

/* Set output k's type and shape; with c->run also allocate its data. */
int npk_opctx_out(npk_opctx *c, int k, int dtype, int rank, const int64_t *dims);

/* Resolve convolution/pooling parameters from the node's attributes and the
 * metadata of x (and w for convolutions, NULL for pooling). */
int npk_onnx_conv_params_of(const npk_opctx *c, const npk_tensor *x, const npk_tensor *w, int is_pool,
                            npk_onnx_conv_params *p);

#endif
