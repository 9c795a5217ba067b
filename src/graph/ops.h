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

/* The operators npukit executes: X(Name, families, handler), Name being the ONNX
 * op_type. The import gives each node its id once (npk_node.op_id); backends
 * and the executor compare ids and families, never names. Adding an
 * operator: one line here (name, families, handler) and the handler in ops.c. */
#define NPK_ONNX_OPS(X)                                                                      \
    X(MatMulInteger, NPK_OPF_PRODUCT | NPK_OPF_INTEGER, op_matmulinteger)                    \
    X(QLinearMatMul, NPK_OPF_PRODUCT | NPK_OPF_INTEGER, op_qlinearmatmul)                    \
    X(ConvInteger, NPK_OPF_PRODUCT | NPK_OPF_INTEGER, op_convinteger)                        \
    X(QLinearConv, NPK_OPF_PRODUCT | NPK_OPF_INTEGER, op_qlinearconv)                        \
    X(QuantizeLinear, NPK_OPF_QUANT, op_quantize)                                            \
    X(DequantizeLinear, NPK_OPF_QUANT, op_dequantize)                                        \
    X(DynamicQuantizeLinear, NPK_OPF_QUANT, op_dynquantize)                                  \
    X(Gemm, 0, op_gemm)                                                                      \
    X(MatMul, NPK_OPF_PRODUCT, op_matmul)                                                    \
    X(Conv, NPK_OPF_PRODUCT, op_conv)                                                        \
    X(Relu, 0, op_relu)                                                                      \
    X(LeakyRelu, 0, op_leakyrelu)                                                            \
    X(PRelu, 0, op_prelu)                                                                    \
    X(Sigmoid, 0, op_sigmoid)                                                                \
    X(Tanh, 0, op_tanh)                                                                      \
    X(Clip, 0, op_clip)                                                                      \
    X(MaxPool, 0, op_maxpool)                                                                \
    X(AveragePool, 0, op_avgpool)                                                            \
    X(GlobalAveragePool, 0, op_globalavgpool)                                                \
    X(GlobalMaxPool, 0, op_globalmaxpool)                                                    \
    X(Softmax, 0, op_softmax)                                                                \
    X(LogSoftmax, 0, op_logsoftmax)                                                          \
    X(Add, 0, op_add)                                                                        \
    X(Sub, 0, op_sub)                                                                        \
    X(Mul, 0, op_mul)                                                                        \
    X(Div, 0, op_div)                                                                        \
    X(Sqrt, 0, op_sqrt)                                                                      \
    X(Pow, 0, op_pow)                                                                        \
    X(Exp, 0, op_exp)                                                                        \
    X(Erf, 0, op_erf)                                                                        \
    X(Reshape, 0, op_reshape)                                                                \
    X(Flatten, 0, op_flatten)                                                                \
    X(Transpose, 0, op_transpose)                                                            \
    X(Concat, 0, op_concat)                                                                  \
    X(Squeeze, 0, op_squeeze)                                                                \
    X(Unsqueeze, 0, op_unsqueeze)                                                            \
    X(Gather, 0, op_gather)                                                                  \
    X(Identity, 0, op_identity)                                                              \
    X(BatchNormalization, 0, op_batchnorm)                                                   \
    X(LayerNormalization, 0, op_layernorm)                                                   \
    X(ReduceMean, 0, op_reducemean)                                                          \
    X(Constant, 0, op_constant)

typedef enum npk_op_id {
    NPK_OP_NONE = 0, /* not executed by npukit (unknown name or another domain) */
#define NPK_OP_ENUM_(name, fam, fn) NPK_OP_##name,
    NPK_ONNX_OPS(NPK_OP_ENUM_)
#undef NPK_OP_ENUM_
    NPK_OP_COUNT
} npk_op_id;

/* Id of a default-domain operator (NPK_OP_NONE if npukit does not run it). */
npk_op_id npk_onnx_op_id(const char *domain, const char *op);
/* ONNX op_type of an id ("" for NPK_OP_NONE), its NPK_OPF_* families and its handler (NULL for NONE). */
const char *npk_onnx_op_name(npk_op_id id);
unsigned npk_onnx_op_families(npk_op_id id);
npk_op_fn npk_onnx_op_handler(npk_op_id id);

/* Set output k's type and shape; with c->run also allocate its data. */
int npk_opctx_out(npk_opctx *c, int k, int dtype, int rank, const int64_t *dims);

/* Resolve convolution/pooling parameters from the node's attributes and the
 * metadata of x (and w for convolutions, NULL for pooling). */
int npk_onnx_conv_params_of(const npk_opctx *c, const npk_tensor *x, const npk_tensor *w, int is_pool,
                            npk_onnx_conv_params *p);

#endif
