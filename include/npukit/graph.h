// SPDX-License-Identifier: MIT
/*
 * npukit graph layer: ONNX models on any npukit device.
 *
 *   npk_graph_load_file()   import an ONNX ModelProto (protobuf-c, generated
 *                           at build time from Debian's onnx.proto)
 *   npk_graph_run()         infer shapes and types, partition the nodes
 *                           between a device and the CPU reference, plan the
 *                           device's guest memory, execute, and report
 *   npk_tensor_load_pb()    read/write ONNX TensorProto files (the format of
 *   npk_tensor_save_pb()    ONNX backend test data and of `npu run` outputs)
 *
 * Devices: "cpu" (the reference implementations only), "v0", "shell", "e1",
 * "pccx". On a device every node it can execute exactly runs through its
 * driver; the rest runs on the CPU reference (src/ops/ref_onnx*.c). The
 * partition report (npk_run_report) says which node ran where and why.
 *
 * All functions return NPK_OK (0) or a negative npk_status with a message
 * naming the cause in npk_errmsg() (include/npukit/npu.h).
 */
#ifndef NPUKIT_GRAPH_H
#define NPUKIT_GRAPH_H

#include "npukit/energy.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "npukit/npu.h"
#include "npukit/tensor.h" /* npk_tensor, element types */

#ifdef __cplusplus
extern "C" {
#endif

struct npk_trace; /* include/npukit/trace.h */

/* Decode a serialized ONNX TensorProto (raw_data or typed fields). External
 * data is refused (NPK_EUNSUPPORTED). */
int npk_tensor_load_pb(npk_tensor *t, const uint8_t *data, size_t len);
int npk_tensor_load_pb_file(npk_tensor *t, const char *path);
/* Encode as an ONNX TensorProto (raw_data); *out is malloc'ed. A sequence
 * is written as a SequenceProto of TensorProtos, an optional as an
 * OptionalProto (the format npk_value_load_pb reads). */
int npk_tensor_save_pb(const npk_tensor *t, uint8_t **out, size_t *len);
int npk_tensor_save_pb_file(const npk_tensor *t, const char *path);

/* ---- the graph ------------------------------------------------------------ */

typedef struct npk_graph npk_graph;

/* Declared type of a graph input or output. dims[i] < 0 is a symbolic or
 * unknown dimension. rank < 0 means the shape is not declared.
 * kind / elem_kind (npk_kind): tensor; sequence(tensor) (elem_kind TENSOR);
 * optional(tensor) or optional(sequence(tensor)) (elem_kind TENSOR or
 * SEQUENCE). dtype, rank and dims always describe the (innermost) tensor. */
typedef struct npk_value_desc {
    const char *name;
    int dtype;
    int rank;
    int64_t dims[NPK_MAX_RANK];
    int kind;        /* npk_kind of the value */
    int elem_kind;   /* SEQUENCE / OPTIONAL: npk_kind of the elements (TENSOR for tensors) */
    const char *dim_params[NPK_MAX_RANK]; /* the symbolic name of dims[i] (ONNX dim_param, "batch"),
                                             NULL for a fixed or unnamed dimension; owned by the graph */
} npk_value_desc;

/* "float[1,?]", "sequence(float[?,3])", "optional(sequence(float[5]))" into
 * buf (always NUL-terminated); an undeclared shape prints as "float". */
const char *npk_value_desc_str(const npk_value_desc *d, char *buf, size_t len);

/* Decode a serialized ONNX value of the given kind (npk_kind): a TensorProto
 * (as npk_tensor_load_pb), a SequenceProto of TensorProtos, or an
 * OptionalProto holding a TensorProto, a SequenceProto of TensorProtos, or
 * nothing (ONNX's onnx-data.proto messages, decoded with protobuf-c code
 * generated from src/graph/npk_onnx_data.proto). The bytes do not say which
 * message they are: the kind comes from the graph input or output the file
 * belongs to (npk_value_desc.kind). Sequences of sparse tensors, maps,
 * sequences or optionals, and maps, are refused with NPK_EUNSUPPORTED. */
int npk_value_load_pb(npk_tensor *t, const uint8_t *data, size_t len, int kind);
int npk_value_load_pb_file(npk_tensor *t, const char *path, int kind);

/* Import a serialized ModelProto. Refuses (with a message naming the cause):
 * malformed or truncated protobuf, a model without a graph, tensors with
 * external data, nodes with missing inputs, cycles, graph inputs and outputs
 * of map or sparse-tensor type or of a sequence/optional type other than
 * sequence(tensor), optional(tensor), optional(sequence(tensor)).
 * Unsupported operators (including control
 * flow with subgraph attributes) and element types are NOT refused here:
 * npk_graph_check names the operator, npk_graph_run the tensor. */
int npk_graph_load(npk_graph **out, const uint8_t *data, size_t len);
int npk_graph_load_file(npk_graph **out, const char *path);
void npk_graph_free(npk_graph *g);

/* Graph inputs that are not initializers, and graph outputs. */
size_t npk_graph_n_inputs(const npk_graph *g);
const npk_value_desc *npk_graph_input(const npk_graph *g, size_t i);
size_t npk_graph_n_outputs(const npk_graph *g);
const npk_value_desc *npk_graph_output(const npk_graph *g, size_t i);
/* Number of nodes, and the default-domain opset version the model imports. */
size_t npk_graph_n_nodes(const npk_graph *g);
int64_t npk_graph_opset(const npk_graph *g);

/* The model's metadata as its ModelProto and top GraphProto state it (strings
 * "" when absent, model_version 0): what ONNX Runtime's get_modelmeta()
 * returns. Owned by the graph. */
typedef struct npk_model_meta {
    const char *producer_name, *producer_version, *domain, *doc_string; /* ModelProto */
    int64_t model_version;
    const char *graph_name, *graph_doc_string; /* GraphProto name, doc_string */
    size_t n_props;                            /* metadata_props, in file order */
    const char *const *prop_keys;
    const char *const *prop_values;
} npk_model_meta;
const npk_model_meta *npk_graph_meta(const npk_graph *g);

/* 0 when every node's operator has a reference implementation; otherwise
 * -NPK_EUNSUPPORTED with one message listing every unsupported operator, how
 * many nodes use it and the first three of them:
 *   "2 unsupported operators in 3 nodes: If x2 (nodes 'a' (index 4), 'b'
 *    (index 9)); SoftmaxCrossEntropyLoss (training operator) x1 (node ...)".
 * If op_out is not NULL it receives the first unsupported operator's name
 * (pointer into the graph). */
int npk_graph_check(const npk_graph *g, const char **op_out);
/* The distinct unsupported operators of g, comma separated in order of first
 * use, each with its class when it has one ("Adam (training operator)"), into
 * buf (always NUL-terminated). Returns how many there are (0: all supported). */
size_t npk_graph_unsupported_list(const npk_graph *g, char *buf, size_t len);

/* 1 if the operator (default ONNX domain) has a CPU reference implementation. */
int npk_onnx_op_supported(const char *op_type);
/* Why an operator of the default domain is deliberately outside npukit's
 * inference operator set: "training operator", "string operator"; NULL for
 * any other operator. */
const char *npk_onnx_op_unsupported_class(const char *op_type);

/* Random operators' outputs cannot match data drawn by another generator, so
 * a test compares them by the operators' contract (docs/onnx.md "Random
 * operators"). For graph output k of g: -1 when no random operator feeds it
 * (compare values); otherwise 0 when `got` keeps the contract against the
 * expected tensor `exp` (same dtype and shape; RandomUniform(Like) values in
 * [low, high); RandomNormal(Like) finite; Bernoulli 0 or 1; Multinomial
 * indices within the classes of its input, looked up in ins (the graph inputs,
 * n_ins of them) or the initializers; an output computed from a draw: finite,
 * and 0 or 1 wherever the expected data is all 0 or 1), 1 with the violation
 * in why. */
int npk_graph_random_contract(const npk_graph *g, size_t k, const npk_tensor *ins, size_t n_ins, const npk_tensor *got,
                              const npk_tensor *exp, char *why, size_t why_len);

/* The operator table (docs/onnx.md's is generated from it: `npu onnx-ops`):
 * every operator of ONNX's default domain in Debian's ONNX 1.12 (its schemas,
 * src/graph/onnx_opsets.def) and those npukit runs ahead of it. */
typedef struct npk_onnx_opinfo {
    const char *name;
    const char *versions; /* the opset versions defining it: "1 6 13 14" */
    int deprecated;       /* the opset that deprecated it, 0 when none */
    int supported;        /* npukit runs it (npk_onnx_op_supported) */
    const char *why_not;  /* unsupported on purpose: "training operator", ...; NULL otherwise */
} npk_onnx_opinfo;
size_t npk_onnx_opinfo_count(void);
int npk_onnx_opinfo_get(size_t i, npk_onnx_opinfo *o);
/* The devices that may run an operator, from their backends' rows: "v0,
 * shell, e1" or "v0 (int8 2-D ...)"; "" when only the CPU does. Into buf. */
const char *npk_onnx_op_devices(const char *op, char *buf, size_t len);

/* Operator families: one table (src/graph/ops.h) that every backend and tool shares. */
enum {
    NPK_OPF_PRODUCT = 1u << 0, /* matrix products: MatMul, Conv and their Integer / QLinear forms */
    NPK_OPF_INTEGER = 1u << 1, /* integer operands by definition (MatMulInteger, QLinearConv, ...) */
    NPK_OPF_QUANT = 1u << 2,   /* (de)quantization: QuantizeLinear, DequantizeLinear, ... */
    NPK_OPF_CONTAINER = 1u << 3, /* takes sequence/optional values (sequence ops, control flow) */
    NPK_OPF_RANDOM = 1u << 4     /* draws random numbers: RandomUniform(Like), RandomNormal(Like), Bernoulli, Multinomial */
};
/* NPK_OPF_* bits of a default-domain operator (0 when npukit does not run it). */
unsigned npk_onnx_op_family(const char *op_type);

/* ---- running -------------------------------------------------------------- */

/* Where a node ran. */
typedef enum npk_place { NPK_PLACE_CPU = 0, NPK_PLACE_DEVICE = 1, NPK_PLACE_FUSED = 2 } npk_place;

/* Per-engine figures of device work: bytes read from / written to DRAM,
 * bytes moved in the scratchpad and in the accumulator, busy cycles of the
 * compute units and of the DMA. */
typedef struct npk_engine_figures {
    uint64_t dram_rd, dram_wr, spad, acc, compute_cycles, dma_cycles;
} npk_engine_figures;
/* "compute" when the compute units were busy at least as long as the DMA,
 * else "memory". */
const char *npk_engine_bound(const npk_engine_figures *f);

/* One node of the partition report. */
typedef struct npk_node_report {
    const char *name;      /* node name (or "<op>_<index>" when the model gives none) */
    const char *op;        /* ONNX operator */
    int place;             /* npk_place: FUSED = folded into a device node (quantized subgraph) */
    char why[160];         /* the reason for the placement */
    char device_op[48];    /* the driver call used ("v0 MATMUL_S8", ...) or "" */
    uint64_t macs;         /* multiply-accumulates of the node */
    uint64_t cycles;       /* device cycles spent for it (0 on the CPU) */
    double host_ms;        /* host wall time spent in this node (CPU work and driver calls) */
    /* From the device's per-engine counters (devices that have them: v0),
     * has_engines = 1: bytes moved per memory by this node's descriptors and
     * the busy cycles of the compute units and of the DMA (the timing model's
     * own figures, docs/v0.md "Per-engine counters"). */
    int has_engines;
    npk_engine_figures engines;
    /* The device's energy model (docs/energy.md; devices and ports that have
     * one), has_energy = 1: the energy this node cost in pJ (dynamic, plus
     * leakage over its cycles). */
    int has_energy;
    double energy_pj;
    /* 1 for an integer matrix product: MatMulInteger, ConvInteger, QLinearMatMul,
     * QLinearConv, or a Conv/MatMul/Gemm between DequantizeLinear inputs whose
     * output goes to a QuantizeLinear (a quantized group). */
    int int_product;
    /* 1 when the node stays off the device for a documented reason: a device
     * limit (operands not 8-bit, e1's contraction limit, a device that takes no
     * node) or a quantized group that is not one integer product (docs/onnx.md,
     * "QDQ"). npu onnx-test --require-offload fails on an int_product node left
     * on the CPU without it. */
    int offload_limit;
} npk_node_report;

/* Report of one run. */
typedef struct npk_run_report {
    char device[16];             /* the requested device */
    char note[256];              /* device-wide remark (e.g. why everything is on the CPU) */
    size_t n_nodes;
    npk_node_report *nodes;      /* n_nodes entries, in execution order */
    uint64_t device_cycles;      /* total simulated device cycles (port clock) */
    uint64_t device_busy_cycles; /* cycles the device reported busy (PERF counters), 0 if unknown */
    uint64_t device_hz;          /* device clock */
    uint64_t device_macs;        /* MACs executed on the device */
    uint64_t cpu_macs;           /* MACs executed by the CPU reference */
    uint64_t peak_macs_per_cycle;/* device peak (0 = unknown) */
    uint64_t guest_bytes;        /* guest memory arena planned for device tensors */
    uint64_t guest_naive_bytes;  /* what the tensors would take without reuse */
    uint64_t staged_in_bytes, staged_out_bytes; /* host <-> guest staging copies */
    double host_ms;              /* wall time of the whole run */
    /* has_energy = 1 (a device and port with an energy model): the run's
     * device energy in pJ (dynamic + leakage of the whole area over
     * device_cycles), by class, the device's area and technology node. */
    int has_energy;
    npk_energy energy;
    npk_area area;
    uint32_t tech_nm;
} npk_run_report;

/* Free the report's arrays (the struct itself is caller-owned). */
void npk_run_report_fini(npk_run_report *r);
/* Human-readable partition and performance report. */
void npk_run_report_print(const npk_run_report *r, FILE *f);
/* The same as JSON; its "performance" member is the npk_run_report_perf
 * summary in the format of include/npukit/report.h. */
int npk_run_report_write_json(const npk_run_report *r, FILE *f);
/* The run as a performance report (include/npukit/report.h): device and
 * clock, one operator per ONNX op type and placement (device cycles, MACs),
 * utilization, TOPS, staged bytes, host time, NPU versus host operator counts
 * (nodes folded into a device node are counted in a note). *out is freed
 * with npk_report_free. */
struct npk_report;
int npk_run_report_perf(const npk_run_report *r, const char *model, struct npk_report **out);

/* A compiled command stream (src/graph/cstream.h): a run records into it
 * or replays it (compiled models, docs/npkb.md). */
typedef struct npk_cstream npk_cstream;

/* Options of one run. */
typedef struct npk_run_opts {
    const char *device;          /* "cpu" (default when NULL), "v0", "shell", "e1", "pccx" */
    const char *port;            /* port spec for the device (NULL = "sim") */
    struct npk_trace *trace;     /* optional: device events and host node events */
    const char *dev_opts;        /* device model options "k=v,..." for the in-process
                                    model (NULL = defaults; `npu devices` lists them) */
    npk_cstream *stream;         /* optional (v0, shell): record the guest-memory plan,
                                    constant staging and descriptor batches, or replay
                                    them instead of encoding (docs/npkb.md) */
    int golden;                  /* 1: nodes on the CPU run the naive golden kernels (the
                                    independent reference); 0: the fast kernels for Conv,
                                    MatMul, Gemm and (de)quantization (docs/onnx.md) */
    int loose_dims;              /* 1: declared fixed input dimensions are not enforced
                                    (ONNX's backend-test runner binds test data so; npu
                                    onnx-test); element types and kinds still are */
    int timing_only;             /* 1: timing-only run: the device model skips its
                                    arithmetic (device option timing_only=1) and the host
                                    skips the data work around it (im2col, epilogues, CPU
                                    nodes with large outputs, which are left zero); every
                                    device command is issued as in the functional run, so
                                    cycles and counters are the same; outputs are not
                                    meaningful (docs/sweep.md "Timing-only runs") */
    uint64_t seed;               /* run-level seed of the random operators that have no
                                    `seed` attribute (docs/onnx.md "Random operators");
                                    0 is a seed like any other: runs are deterministic */
    int qdq;                     /* which DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear
                                    groups run as one integer operator: NPK_QDQ_FUSED (0,
                                    default) every group the arithmetic allows, on the CPU and
                                    the devices; NPK_QDQ_ORT only those ONNX Runtime's x86 CPU
                                    provider fuses, the others in float as written on the
                                    CPU (docs/onnx.md "QDQ") */
} npk_run_opts;

enum { NPK_QDQ_FUSED = 0, NPK_QDQ_ORT = 1 };
/* "fused" / "ort" -> NPK_QDQ_*, -1 for anything else. */
int npk_qdq_mode_parse(const char *s);

/* The devices npk_graph_run accepts: "cpu" and every device of the device
 * table. npk_graph_device_check returns 0 or NPK_EINVAL naming them;
 * npk_graph_device_names gives "cpu, e1, v0, shell, pccx". */
int npk_graph_device_check(const char *device);
const char *npk_graph_device_names(void);

/* Optional progress callback of npk_graph_run on this graph: called after
 * each node with (nodes done, nodes in all). fn NULL removes it. */
void npk_graph_set_progress(npk_graph *g, void (*fn)(void *ctx, size_t done, size_t total), void *ctx);

/* Run the graph.
 *   inputs[0 .. n_inputs-1]: one tensor per graph input, matched by name
 *   (the tensor's name) or, when unnamed, by position. Types must equal the
 *   declared ones; declared fixed dimensions must match. A sequence or
 *   optional input must have the declared kind, and each of its tensors the
 *   declared element type and dimensions.
 *   *outputs receives npk_graph_n_outputs() values (tensors, or sequences /
 *   optionals where the graph returns them; free each with npk_tensor_free
 *   and the array with free()).
 *   report (may be NULL) receives the partition and performance report; it
 *   is filled as far as the run got even when the run fails.
 */
int npk_graph_run(npk_graph *g, const npk_run_opts *opts, const npk_tensor *inputs, size_t n_inputs,
                  npk_tensor **outputs, size_t *n_outputs, npk_run_report *report);

/* A one-layer int8 graph of a given shape, for sweeps and benchmarks:
 *   "conv:c=C,k=K,h=H[,w=W][,r=R][,s=S][,stride=T][,pad=P][,n=N][,groups=G]"
 *     QLinearConv, input x int8 [N,C,H,W], weights [K,C/G,R,S], int32 bias;
 *     p=P,q=Q (output size) may replace h/w; pad defaults to (R-1)/2 ("same");
 *   "matmul:m=M,k=K,n=N"   QLinearMatMul, input x int8 [M,K], weights [K,N].
 * Weights and bias are pseudo-random (xorshift64* from seed), scales and
 * zero points per tensor (zero points 0), the output scale keeps the int8
 * outputs away from saturation. Output "y". */
int npk_graph_synth_layer(const char *spec, uint64_t seed, npk_graph **out);

/* Fill a tensor for graph input i with deterministic pseudo-random data
 * (seeded): integers across their type's range (int64 indices within
 * [0, 8)), floats uniform in [-1, 1). Symbolic dimensions become 1.
 * Sequence and optional inputs are refused (NPK_EUNSUPPORTED): give them. */
int npk_graph_random_input(const npk_graph *g, size_t i, uint64_t seed, npk_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
