// SPDX-License-Identifier: MIT
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
#define NPK_OP_MAX_IO 64
/* inputs of one node including the outer-scope values its subgraphs read */
#define NPK_OP_MAX_IN 256

/* How a control-flow operator runs its bodies: the executor's npk_graph_run_body and
 * npk_graph_infer_body (src/graph/exec.c, declared in exec.h), handed to the
 * handlers in their context so that no operator file names the executor (the executor
 * calls the operators, never the other way round). */
typedef struct npk_body_fns {
    int (*run)(npk_graph *g, const npk_run_opts *opts, const npk_tensor *inputs, size_t n_inputs, const char *in_const,
               npk_tensor **outputs, size_t *n_outputs);
    int (*infer)(npk_graph *g, const npk_run_opts *opts, const npk_tensor *const *in, npk_tensor *out, int *known);
} npk_body_fns;

typedef struct npk_opctx {
    const npk_node *node;
    const npk_graph *graph;                /* the graph holding the node (value names of outer-scope inputs) */
    int64_t opset;
    int run;                               /* 0 = infer only, 1 = infer and compute */
    int n_in, n_out;                       /* the operator's own inputs and outputs */
    int n_outer;                           /* in[n_in .. n_in + n_outer - 1]: outer-scope values (control flow) */
    const npk_tensor *in[NPK_OP_MAX_IN];   /* NULL = omitted optional input */
    npk_tensor *out[NPK_OP_MAX_IO];        /* NULL = output not requested */
    uint64_t macs;                         /* set by the handler: multiply-accumulates */
    int golden;                            /* 1: the naive golden kernels of src/ops/ref_onnx*.c
                                              only (npk_run_opts.golden), 0: the fast kernels
                                              of src/ops/fast_onnx.c where they apply */
    uint64_t run_seed;                     /* random operators without a seed attribute: npk_run_opts.seed */
    int qdq;                               /* npk_run_opts.qdq, for the bodies of control-flow nodes */
    uint64_t *draws;                       /* random-node executions so far in this run (NULL: none counted) */
    const char *in_const;                  /* NULL, or per input: 1 when the value is the same in every run (a
                                              constant, or folded from constants alone): control flow tells
                                              its bodies, which fold what they compute from it once */
    const npk_body_fns *body;              /* runs and infers control-flow bodies (NULL: no executor) */
    npk_tensor *reuse;                     /* NULL, or an input of an element-wise operator that no later node
                                              reads: npk_opctx_out_raw gives output 0 its buffer when the type
                                              and shape are the same (the result is computed in place) */
    int reused;                            /* set when output 0 took reuse's buffer */
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
    X(Gemm, NPK_OPF_PRODUCT, op_gemm)                                                        \
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
    X(Identity, 0, npk_opc_identity)                                                         \
    X(BatchNormalization, 0, op_batchnorm)                                                   \
    X(LayerNormalization, 0, op_layernorm)                                                   \
    X(ReduceMean, 0, op_reducemean)                                                          \
    X(Constant, 0, op_constant)                                                              \
    X(Hardmax, 0, op_hardmax)

/* Operators with handlers outside ops.c (ops_math.c, ops_shape.c, ops_nn.c; issue 14):
 * the same X(Name, families, handler) rows, the handlers extern. */
#define NPK_ONNX_OPS_MATH(X) \
    X(Abs, 0, npk_op_abs) \
    X(Neg, 0, npk_op_neg) \
    X(Reciprocal, 0, npk_op_reciprocal) \
    X(Floor, 0, npk_op_floor) \
    X(Ceil, 0, npk_op_ceil) \
    X(Round, 0, npk_op_round) \
    X(Sign, 0, npk_op_sign) \
    X(Log, 0, npk_op_log) \
    X(Sin, 0, npk_op_sin) \
    X(Cos, 0, npk_op_cos) \
    X(Tan, 0, npk_op_tan) \
    X(Asin, 0, npk_op_asin) \
    X(Acos, 0, npk_op_acos) \
    X(Atan, 0, npk_op_atan) \
    X(Sinh, 0, npk_op_sinh) \
    X(Cosh, 0, npk_op_cosh) \
    X(Asinh, 0, npk_op_asinh) \
    X(Acosh, 0, npk_op_acosh) \
    X(Atanh, 0, npk_op_atanh) \
    X(Softplus, 0, npk_op_softplus) \
    X(Softsign, 0, npk_op_softsign) \
    X(HardSwish, 0, npk_op_hardswish) \
    X(Mish, 0, npk_op_mish) \
    X(Not, 0, npk_op_not) \
    X(BitwiseNot, 0, npk_op_bitnot) \
    X(Elu, 0, npk_op_elu) \
    X(Celu, 0, npk_op_celu) \
    X(Selu, 0, npk_op_selu) \
    X(HardSigmoid, 0, npk_op_hardsigmoid) \
    X(ThresholdedRelu, 0, npk_op_thresholdedrelu) \
    X(Shrink, 0, npk_op_shrink) \
    X(IsNaN, 0, npk_op_isnan) \
    X(IsInf, 0, npk_op_isinf) \
    X(Mod, 0, npk_op_mod) \
    X(Equal, 0, npk_op_equal) \
    X(Less, 0, npk_op_less) \
    X(Greater, 0, npk_op_greater) \
    X(LessOrEqual, 0, npk_op_lesseq) \
    X(GreaterOrEqual, 0, npk_op_greatereq) \
    X(And, 0, npk_op_and) \
    X(Or, 0, npk_op_or) \
    X(Xor, 0, npk_op_xor) \
    X(BitwiseAnd, 0, npk_op_bitand) \
    X(BitwiseOr, 0, npk_op_bitor) \
    X(BitwiseXor, 0, npk_op_bitxor) \
    X(BitShift, 0, npk_op_bitshift) \
    X(Max, 0, npk_op_max) \
    X(Min, 0, npk_op_min) \
    X(Sum, 0, npk_op_sum) \
    X(Mean, 0, npk_op_mean) \
    X(Where, 0, npk_op_where) \
    X(Cast, 0, npk_op_cast) \
    X(CastLike, 0, npk_op_castlike) \
    X(ReduceSum, 0, npk_op_reducesum) \
    X(ReduceMax, 0, npk_op_reducemax) \
    X(ReduceMin, 0, npk_op_reducemin) \
    X(ReduceProd, 0, npk_op_reduceprod) \
    X(ReduceL1, 0, npk_op_reducel1) \
    X(ReduceL2, 0, npk_op_reducel2) \
    X(ReduceLogSum, 0, npk_op_reducelogsum) \
    X(ReduceLogSumExp, 0, npk_op_reducelogsumexp) \
    X(ReduceSumSquare, 0, npk_op_reducesumsquare) \
    X(ArgMax, 0, npk_op_argmax) \
    X(ArgMin, 0, npk_op_argmin) \
    X(CumSum, 0, npk_op_cumsum) \
    X(LpNormalization, 0, npk_op_lpnorm) \
    X(Dropout, 0, npk_op_dropout)

#define NPK_ONNX_OPS_SHAPE(X) \
    X(Shape, 0, npk_op_shape) \
    X(Size, 0, npk_op_size) \
    X(ConstantOfShape, 0, npk_op_constantofshape) \
    X(Slice, 0, npk_op_slice) \
    X(Expand, 0, npk_op_expand) \
    X(Tile, 0, npk_op_tile) \
    X(Pad, 0, npk_op_pad) \
    X(Split, 0, npk_op_split) \
    X(GatherElements, 0, npk_op_gather_elements) \
    X(ScatterElements, 0, npk_op_scatter_elements) \
    X(Scatter, 0, npk_op_scatter_elements) \
    X(GatherND, 0, npk_op_gather_nd) \
    X(ScatterND, 0, npk_op_scatter_nd) \
    X(Trilu, 0, npk_op_trilu) \
    X(Range, 0, npk_op_range) \
    X(OneHot, 0, npk_op_onehot) \
    X(Compress, 0, npk_op_compress) \
    X(DepthToSpace, 0, npk_op_depth_to_space) \
    X(SpaceToDepth, 0, npk_op_space_to_depth) \
    X(NonZero, 0, npk_op_nonzero) \
    X(TopK, 0, npk_op_topk) \
    X(EyeLike, 0, npk_op_eyelike) \
    X(ReverseSequence, 0, npk_op_reverse_sequence)

#define NPK_ONNX_OPS_NN(X) \
    X(ConvTranspose, 0, npk_op_convtranspose) \
    X(Resize, 0, npk_op_resize) \
    X(Upsample, 0, npk_op_upsample) \
    X(InstanceNormalization, 0, npk_op_instancenorm) \
    X(LRN, 0, npk_op_lrn) \
    X(MeanVarianceNormalization, 0, npk_op_mvn) \
    X(LpPool, 0, npk_op_lppool) \
    X(GlobalLpPool, 0, npk_op_globallppool) \
    X(RNN, 0, npk_op_rnn) \
    X(GRU, 0, npk_op_gru) \
    X(LSTM, 0, npk_op_lstm)

/* Control flow and containers (ops_ctrl.c): they take sequence/optional values. */
#define NPK_ONNX_OPS_CTRL(X) \
    X(If, NPK_OPF_CONTAINER, npk_op_if) \
    X(Loop, NPK_OPF_CONTAINER, npk_op_loop) \
    X(Scan, NPK_OPF_CONTAINER, npk_op_scan) \
    X(SequenceConstruct, NPK_OPF_CONTAINER, npk_op_sequence_construct) \
    X(SequenceEmpty, NPK_OPF_CONTAINER, npk_op_sequence_empty) \
    X(SequenceInsert, NPK_OPF_CONTAINER, npk_op_sequence_insert) \
    X(SequenceAt, NPK_OPF_CONTAINER, npk_op_sequence_at) \
    X(SequenceErase, NPK_OPF_CONTAINER, npk_op_sequence_erase) \
    X(SequenceLength, NPK_OPF_CONTAINER, npk_op_sequence_length) \
    X(SplitToSequence, NPK_OPF_CONTAINER, npk_op_split_to_sequence) \
    X(ConcatFromSequence, NPK_OPF_CONTAINER, npk_op_concat_from_sequence) \
    X(SequenceMap, NPK_OPF_CONTAINER, npk_op_sequence_map) \
    X(Optional, NPK_OPF_CONTAINER, npk_op_optional) \
    X(OptionalHasElement, NPK_OPF_CONTAINER, npk_op_optional_has_element) \
    X(OptionalGetElement, NPK_OPF_CONTAINER, npk_op_optional_get_element)

/* More operators (ops_misc.c; issue 14). */
#define NPK_ONNX_OPS_MISC(X) \
    X(Det, 0, npk_op_det) \
    X(MaxUnpool, 0, npk_op_maxunpool) \
    X(Unique, 0, npk_op_unique) \
    X(NonMaxSuppression, 0, npk_op_nms) \
    X(Einsum, 0, npk_op_einsum) \
    X(HannWindow, 0, npk_op_hannwindow) \
    X(HammingWindow, 0, npk_op_hammingwindow) \
    X(BlackmanWindow, 0, npk_op_blackmanwindow) \
    X(DFT, 0, npk_op_dft) \
    X(STFT, 0, npk_op_stft) \
    X(MelWeightMatrix, 0, npk_op_melweightmatrix) \
    X(RoiAlign, 0, npk_op_roialign) \
    X(MaxRoiPool, 0, npk_op_maxroipool) \
    X(GridSample, 0, npk_op_gridsample)

/* Random operators (ops_random.c; docs/onnx.md "Random operators"). */
#define NPK_ONNX_OPS_RANDOM(X) \
    X(RandomUniform, NPK_OPF_RANDOM, npk_op_random_uniform) \
    X(RandomNormal, NPK_OPF_RANDOM, npk_op_random_normal) \
    X(RandomUniformLike, NPK_OPF_RANDOM, npk_op_random_uniform_like) \
    X(RandomNormalLike, NPK_OPF_RANDOM, npk_op_random_normal_like) \
    X(Bernoulli, NPK_OPF_RANDOM, npk_op_bernoulli) \
    X(Multinomial, NPK_OPF_RANDOM, npk_op_multinomial)

#define NPK_ONNX_OPS_ALL(X) NPK_ONNX_OPS(X) NPK_ONNX_OPS_MATH(X) NPK_ONNX_OPS_SHAPE(X) NPK_ONNX_OPS_NN(X) NPK_ONNX_OPS_CTRL(X) NPK_ONNX_OPS_MISC(X) NPK_ONNX_OPS_RANDOM(X)

#define NPK_OP_DECL_(name, fam, fn) int fn(npk_opctx *c);
NPK_ONNX_OPS_MATH(NPK_OP_DECL_)
NPK_ONNX_OPS_SHAPE(NPK_OP_DECL_)
NPK_ONNX_OPS_NN(NPK_OP_DECL_)
NPK_ONNX_OPS_CTRL(NPK_OP_DECL_)
NPK_ONNX_OPS_MISC(NPK_OP_DECL_)
NPK_ONNX_OPS_RANDOM(NPK_OP_DECL_)
#undef NPK_OP_DECL_

typedef enum npk_op_id {
    NPK_OP_NONE = 0, /* not executed by npukit (unknown name or another domain) */
#define NPK_OP_ENUM_(name, fam, fn) NPK_OP_##name,
    NPK_ONNX_OPS_ALL(NPK_OP_ENUM_)
#undef NPK_OP_ENUM_
    NPK_OP_COUNT
} npk_op_id;

/* Id of a default-domain operator (NPK_OP_NONE if npukit does not run it). */
npk_op_id npk_onnx_op_id(const char *domain, const char *op);
/* ONNX op_type of an id ("" for NPK_OP_NONE), its NPK_OPF_* families and its handler (NULL for NONE). */
const char *npk_onnx_op_name(npk_op_id id);
unsigned npk_onnx_op_families(npk_op_id id);
npk_op_fn npk_onnx_op_handler(npk_op_id id);

/* Handler helpers: a required input (error naming it when missing); an axis
 * normalised into [0, rank); axes from the attribute (opset below
 * attr_opset_limit) or input 1 (count, 0 when none, -NPK_SHAPE_UNKNOWN when
 * the input has no data yet, or a negative error); Identity. */
int npk_opc_need(const npk_opctx *c, int i, const char *what);
/* 0 when t is float or double, else an error naming what and its type. */
int npk_opc_need_float(const npk_tensor *t, const char *what);
int npk_opc_axis(int64_t a, int rank, int *out);
int npk_opc_axes(npk_opctx *c, int64_t *axes, int attr_opset_limit);
int npk_opc_identity(npk_opctx *c);

/* Set output k's type and shape; with c->run also allocate its data, zeroed. */
int npk_opctx_out(npk_opctx *c, int k, int dtype, int rank, const int64_t *dims);
/* The same with the data not zeroed (issue 15 point 2: zeroing cost 8-10 % of
 * the ppocr models' CPU time): only for an output that every kernel the
 * handler may call, the fast one and the golden, writes whole. Each use says
 * so at its call (the operators listed in docs/onnx.md, "Fast CPU kernels"). */
int npk_opctx_out_raw(npk_opctx *c, int k, int dtype, int rank, const int64_t *dims);

/* Resolve convolution/pooling parameters from the node's attributes and the
 * metadata of x (and w for convolutions, NULL for pooling). */
int npk_onnx_conv_params_of(const npk_opctx *c, const npk_tensor *x, const npk_tensor *w, int is_pool,
                            npk_onnx_conv_params *p);

#endif
