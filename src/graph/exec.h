// SPDX-License-Identifier: MIT
/*
 * The graph executor's interface to device backends (src/graph/dev_*.c).
 *
 * A run goes: bind inputs -> infer every shape (metadata) -> [quantized
 * subgraph fusion] -> partition (backend->place per node) -> plan guest
 * memory for every device buffer -> execute node by node -> outputs.
 *
 * Device buffers. A backend that takes a node declares, in place(), the
 * device buffers the node reads and writes:
 *   - views of graph values in a device layout (npk_dlayout): a value may
 *     have several views; a view is staged in from the host copy once (the
 *     first time a device node needs it) and a value produced on the device
 *     is staged out once (the first time the CPU or the caller needs it);
 *   - scratch buffers private to the node (im2col matrices, int32
 *     accumulators, weight matrices).
 * The planner gives every buffer an offset in one guest arena, reusing
 * space between buffers whose lifetimes (in node steps) do not overlap,
 * aligned as the backend requires.
 */
#ifndef NPUKIT_GRAPH_EXEC_H
#define NPUKIT_GRAPH_EXEC_H

#include "graph/ops.h"

/* Device layouts of a value. Both are "rows of bytes at a pitch":
 *   NPK_DL_ROWS: the value viewed as [rows = prod(dims[0..r-2]), cols = dims[r-1]],
 *                row i at i * pitch (a scalar or 1-D value is one row);
 *   NPK_DL_NHWC: a rank-4 [N, C, H, W] value stored per image as [H][W][C],
 *                row (n, h) at (n * H + h) * pitch, W*C elements per row.
 * flip: the device holds x ^ 0x80 (uint8 seen as int8 x - 128). */
enum { NPK_DL_ROWS = 0, NPK_DL_NHWC = 1 };
typedef struct npk_dlayout {
    int kind;
    int flip;
    uint32_t pitch;       /* bytes between rows (0 = packed; the planner rounds to the alignment) */
} npk_dlayout;

typedef struct npk_exec npk_exec;
typedef struct npk_backend npk_backend;

struct npk_backend {
    const char *name;       /* "v0", "shell" */
    uint32_t align;         /* base and pitch alignment the device requires */
    uint64_t peak_macs;     /* MACs per cycle at peak */
    void *priv;
    /* Decide whether the device runs node `n` exactly. Return 1 and declare
     * buffers (npk_exec_use_value / npk_exec_scratch) to take it; return 0 to
     * leave it on the CPU. Either way write the reason into why. */
    int (*place)(npk_backend *b, npk_exec *x, int n, char *why, size_t why_len, char *devop, size_t devop_len);
    /* Run a placed node: every input view is staged in; write the output views. */
    int (*run)(npk_backend *b, npk_exec *x, int n, npk_node_report *rep);
    /* Port for guest memory (allocation, staging copies). */
    npk_port *(*port)(npk_backend *b);
    /* Device busy cycles as its performance counters report them (0 = unknown). */
    uint64_t (*busy_cycles)(npk_backend *b);
    /* Cumulative per-engine figures since open (NULL = the device has none). */
    int (*engines)(npk_backend *b, npk_engine_figures *f);
    void (*close)(npk_backend *b);
};

/* The device table, graph level: per line of include/npukit/devices.def one
 * npk_<name>_graph row, defined beside the backend (src/graph/dev_<name>.c).
 * open returns 0 and *out, or a negative status; a device that cannot take
 * any node has open NULL and says why in note. */
/* An operator a backend may take, and when (docs/onnx.md's operator table). */
typedef struct npk_dev_op {
    const char *op, *note; /* note "" when the device takes every node of the operator it is offered exactly */
} npk_dev_op;

typedef struct npk_dev_graph {
    const char *name; /* the device's name in include/npukit/devices.def */
    int (*open)(npk_backend **out, const npk_run_opts *o, char *note, size_t note_len);
    const char *note;
    int npkb; /* 1: the backend's runs compile into .npkb models (npu compile, docs/npkb.md) */
    const npk_dev_op *ops; /* the operators it may take, {NULL} ended (NULL: none) */
} npk_dev_graph;
#define NPK_DEVICE(d) extern const npk_dev_graph npk_##d##_graph;
#include "npukit/devices.def"
/* Row of a device (NULL for "cpu" and unknown names). */
const npk_dev_graph *npk_dev_graph_find(const char *name);

/* ---- what a backend may ask the executor ---------------------------------------- */
const npk_graph *npk_exec_graph(npk_exec *x);
/* 1 when the run asked for the golden kernels only (npk_run_opts.golden). */
int npk_exec_golden(const npk_exec *x);
/* npk_graph_run of a control-flow body on the CPU, with in_const[i] = 1 for the inputs that
 * are the same in every run (npk_opctx.in_const of the node; NULL: none). */
int npk_graph_run_body(npk_graph *g, const npk_run_opts *opts, const npk_tensor *inputs, size_t n_inputs,
                       const char *in_const, npk_tensor **outputs, size_t *n_outputs);
/* Shape inference of a control-flow body g (a subgraph): in[i] describes body input i (kind,
 * dtype, rank, dims; data only for a value that is the same on every run of the body, such as
 * a constant or an outer-scope value known at load; NULL: unknown). Fills out[k] (no data) and
 * known[k] for every body output. Returns 0 or an error of the body's inference. */
int npk_graph_infer_body(npk_graph *g, const npk_run_opts *opts, const npk_tensor *const *in, npk_tensor *out, int *known);
/* The run's QDQ fusion mode (NPK_QDQ_FUSED or NPK_QDQ_ORT). */
int npk_exec_qdq_mode(const npk_exec *x);
const npk_node *npk_exec_node(npk_exec *x, int n);
/* Metadata of value v (dtype, rank, dims; data set only for constants and,
 * during run, for values present on the host). NULL for v < 0. */
const npk_tensor *npk_exec_meta(npk_exec *x, int v);
/* Shape known statically. */
int npk_exec_known(npk_exec *x, int v);
/* 1 in a timing-only run (npk_run_opts.timing_only): skip host data work whose
 * result only feeds outputs, never a device command. */
int npk_exec_timing_only(const npk_exec *x);
/* Constant data of v (initializer) or NULL. */
const npk_tensor *npk_exec_const(npk_exec *x, int v);
/* The host copy of v during run (staged out on demand), or NULL on failure. */
const npk_tensor *npk_exec_host(npk_exec *x, int v);
/* Node consuming v's value only through this node? (1 when n is v's sole consumer and v is not a graph output.) */
int npk_exec_sole_use(npk_exec *x, int v, int n);
/* Index of the only node consuming v (-1 if none or several). */
int npk_exec_only_consumer(npk_exec *x, int v);

/* Declare, in place(): node n reads (write = 0) or writes (write = 1) value
 * v in layout l. Returns a view id >= 0 or a negative status. */
/* A backend's port: the run's port spec and device options for device dev; a failure's
 * message says "opening the DEV port". */
int npk_backend_port_open(npk_port **port, const npk_run_opts *o, const char *dev);
int npk_exec_use_value(npk_exec *x, int n, int v, const npk_dlayout *l, int write);
/* Declare a scratch buffer of `bytes` for node n; returns its id. */
int npk_exec_scratch(npk_exec *x, int n, uint64_t bytes);
/* Mark value v as produced by node n on the device although another node
 * (a fused QuantizeLinear) is its producer in the graph. */
int npk_exec_fuse(npk_exec *x, int fused_node, int into_node);
/* Node n reads value v although no edge of the graph says so (the integer
 * input of a DequantizeLinear that has other consumers and is folded into n):
 * v stays available until n ran. At most two per node. */
int npk_exec_read_direct(npk_exec *x, int n, int v);
/* In place(): node n stays off the device for a documented reason (a device
 * limit, or a quantized group that is not one integer product); sets the
 * node report's offload_limit. */
void npk_exec_offload_limit(npk_exec *x, int n);

/* During run: guest address and pitch of a view / scratch buffer. */
uint64_t npk_exec_view_addr(npk_exec *x, int view);
uint32_t npk_exec_view_pitch(npk_exec *x, int view);
uint64_t npk_exec_scratch_addr(npk_exec *x, int id);
/* Row geometry of value v in layout kind: rows and bytes per row. */
void npk_exec_rows(const npk_tensor *meta, int kind, uint64_t *rows, uint64_t *row_bytes);
/* During run: the host tensor a device node produces for value v (allocated
 * with the inferred shape; the node fills it). NULL on allocation failure. */
npk_tensor *npk_exec_out_host(npk_exec *x, int v);
/* During run: the node has written view `id` on the device. */
void npk_exec_view_written(npk_exec *x, int id);
/* Layout of the device view producing v (1), or 0 if v is not produced on the device. */
int npk_exec_writer_layout(npk_exec *x, int v, npk_dlayout *l);
/* Host-side staging helpers for scratch buffers (counted in the report). */
int npk_exec_write(npk_exec *x, uint64_t addr, const void *src, size_t len);
int npk_exec_read(npk_exec *x, uint64_t addr, void *dst, size_t len);
/* Staging of constant bytes (weights) for the current node: written and, when
 * the run records a compiled stream, recorded; when it replays one, the
 * stream's next record (the same address and length) is written instead of
 * src (which may then be NULL). */
int npk_exec_write_const(npk_exec *x, uint64_t addr, const void *src, size_t len);
/* The run's compiled stream (NULL when none; cstream.h) and the node running. */
npk_cstream *npk_exec_stream(npk_exec *x);
int npk_exec_cur_node(npk_exec *x);

#endif
