// SPDX-License-Identifier: MIT
/*
 * npukit: the e1 compiler runtime ("lowerings").
 *
 * Runs neural-network operators on the small e1 datapath so that the NPU
 * performs every multiply-accumulate: GEMM tiles (GEMM_S8/GEMM_S4) for the
 * matmul family and the scalar opcodes (MUL_LO, ADD, SUB, MAX_U32, EXP2,
 * DOT16_S2, DOT4_FP8_E4M3, SDOT4_S4_2_4) and VRELU_S8 for the rest. The host
 * only stages data, pads, slices, requantizes (shift + int8 saturation),
 * builds masks and divides softmax sums, exactly as shared/spec/
 * e1-lowering-notes.md settles it. There is no CPU fallback: an operator the
 * NPU cannot run is refused (-NPK_EINVAL / -NPK_EUNSUPPORTED) before any MMIO.
 *
 * Every lowering
 *   - validates shapes, value ranges and parameters first (nothing reaches
 *     the device when they are wrong; npk_errmsg() names the field),
 *   - computes the CPU golden (src/ops/ref_ops.c, npk_golden_*) BEFORE any
 *     MMIO (data-dependent rules such as the softmax spread are checked on it),
 *   - runs on the device through the e1 driver (include/npukit/e1.h),
 *   - returns the result tensors, the golden tensors (same names and shapes)
 *     and the evidence (tiles, dispatches per opcode, ring batches, padding,
 *     the steps the host did, cpu_fallback = 0).
 *
 * Tensors are npk_ltensor: row-major int32 values with up to 4 dimensions.
 * int8/int4/int2 operands are int32 values that must lie in their range;
 * FP8 operands are raw bytes 0..255, FP16/BF16 operands raw 16-bit patterns.
 * In the comments, a tensor's shape is written [d0][d1]...; T = tokens,
 * D = model width, B = batch, H = heads.
 *
 * GEMM tiles: the tile shape (m x n x k, m,n <= 3, k <= 7) is chosen so the
 * A|B image plus the word-aligned int32 C tile fit the 64-byte scratchpad,
 * side by side or, for int8 3x3x5..3x3x7, with C at byte 0 growing over the
 * A rows the engine has finished (docs/e1-lowering.md): 3x3x7 for large
 * int8 and int4 matmuls. A ring timeout on such a long descriptor makes the
 * context keep to shorter tiles from then on. Loop order: row blocks, column
 * blocks, K chunks; the host adds split-K int32 partials (wrapping).
 * With batching on (default), GEMM tiles go through the descriptor ring:
 * each tile's A|B image is staged in guest memory, one streamed descriptor
 * per tile with writeback of C to guest memory, at most 7 descriptors per
 * doorbell, all sharing one GEMM configuration (tiles are grouped by shape).
 * Scalar chains stay direct MMIO (a ring returns only its last RESULT).
 */
#ifndef NPUKIT_E1_LOWER_H
#define NPUKIT_E1_LOWER_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/e1_drv.h"
#include "npukit/npu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- tensors --------------------------------------------------------------- */

#define NPK_LT_MAX_RANK 4

/* A dense row-major int32 tensor. data is malloc'ed when npukit produced the
 * tensor (free with npk_lt_free); callers may also point data at their own
 * arrays for inputs. */
typedef struct npk_ltensor {
    unsigned rank;                /* 1..4 (0 = empty / unset) */
    unsigned dim[NPK_LT_MAX_RANK];
    int32_t *data;                /* dim[0] * ... * dim[rank-1] values */
} npk_ltensor;

/* Number of elements (product of the dims; 0 for rank 0). */
size_t npk_lt_numel(const npk_ltensor *t);
/* Allocate a zeroed tensor of the given shape (every dim >= 1). */
int npk_lt_alloc(npk_ltensor *t, unsigned rank, const unsigned *dims);
/* Shorthands: npk_lt_alloc with 1..4 dims. */
int npk_lt_alloc2(npk_ltensor *t, unsigned d0, unsigned d1);
int npk_lt_alloc4(npk_ltensor *t, unsigned d0, unsigned d1, unsigned d2, unsigned d3);
/* A view of caller memory (no allocation; do not npk_lt_free it). */
npk_ltensor npk_lt_view(int32_t *data, unsigned rank, const unsigned *dims);
int npk_lt_copy(npk_ltensor *dst, const npk_ltensor *src);
void npk_lt_free(npk_ltensor *t);
/* "[2][3]" into buf. */
const char *npk_lt_shape_str(const npk_ltensor *t, char *buf, size_t len);

/* Element types of named outputs (the range a consumer can rely on). */
typedef enum npk_ldtype {
    NPK_LD_I32 = 0,  /* int32 accumulator */
    NPK_LD_I8,       /* int8 value -128..127 */
    NPK_LD_Q0_8,     /* unsigned Q0.8 weight 0..256 */
    NPK_LD_Q8_8,     /* signed Q8.8 (int32 container) */
    NPK_LD_BOOL,     /* 0 or 1 */
    NPK_LD_COUNT     /* non-negative count (cache lengths) */
} npk_ldtype;
const char *npk_ldtype_name(int dt);

/* A list of named result tensors. t[0] is the operator's primary output. */
#define NPK_LOWER_MAX_OUT 16
typedef struct npk_lower_out {
    unsigned n;
    const char *name[NPK_LOWER_MAX_OUT]; /* static strings: "result", "q", ... */
    int dtype[NPK_LOWER_MAX_OUT];        /* npk_ldtype */
    npk_ltensor t[NPK_LOWER_MAX_OUT];
} npk_lower_out;
/* Tensor named name, or NULL. */
const npk_ltensor *npk_lower_out_get(const npk_lower_out *o, const char *name);
/* Free every tensor and reset to empty. */
void npk_lower_out_free(npk_lower_out *o);

/* ---- evidence ---------------------------------------------------------------- */

/* Steps the host performed (bits of npk_lower_evidence.host). */
enum npk_lower_host_step {
    NPK_HOST_ACCUMULATES_SPLIT_K = 1u << 0, /* added int32 split-K partials */
    NPK_HOST_PADS_K = 1u << 1,              /* zero-padded K to a lane/block width */
    NPK_HOST_REQUANTIZES = 1u << 2,         /* clamp8(x >> shift) between NPU steps */
    NPK_HOST_SATURATES_INT8 = 1u << 3,      /* clamp8 of an NPU ADD/MUL result */
    NPK_HOST_BROADCASTS_BIAS = 1u << 4,
    NPK_HOST_TRANSPOSES_KEYS = 1u << 5,
    NPK_HOST_ITERATES_HEADS = 1u << 6,      /* loops over batch/head slices */
    NPK_HOST_SLICES_PACKED_QKV = 1u << 7,
    NPK_HOST_MATERIALIZES_IM2COL = 1u << 8,
    NPK_HOST_APPLIES_MASK = 1u << 9,
    NPK_HOST_GENERATES_CAUSAL_MASK = 1u << 10,
    NPK_HOST_GENERATES_SLIDING_WINDOW_MASK = 1u << 11,
    NPK_HOST_DIVIDES_BY_ROW_SUM = 1u << 12,
    NPK_HOST_COMPUTES_RECIPROCAL_RMS = 1u << 13,
    NPK_HOST_CONVERTS_FLOAT_TO_Q8_8 = 1u << 14,
    NPK_HOST_REQUANTIZES_PRODUCTS = 1u << 15, /* FP16/BF16: Q16.16 product >> 8 */
    NPK_HOST_USES_2_4_METADATA = 1u << 16,
    NPK_HOST_TRACKS_CACHE_LENGTHS = 1u << 17,
    NPK_HOST_MATERIALIZES_CACHE_VIEW = 1u << 18,
    NPK_HOST_APPLIES_CACHE_WINDOW = 1u << 19,
    NPK_HOST_CLAMPS_EXP2_DELTA = 1u << 20,    /* QuickGELU: delta clamped to EXP2's range */
    NPK_HOST_STAGES_DESCRIPTORS = 1u << 21,   /* tiles staged in guest memory for the ring */
    NPK_HOST_STEP_COUNT = 22
};
/* "accumulates_split_k", ... for bit i (0 <= i < NPK_HOST_STEP_COUNT). */
const char *npk_lower_host_step_name(unsigned bit);

/* What a lowering did. Counts cover the whole operator, nested lowerings
 * included. */
typedef struct npk_lower_evidence {
    const char *op;                     /* operator name ("matmul", ...) */
    uint64_t tiles;                     /* GEMM tiles dispatched */
    unsigned tile_m, tile_n, tile_k;    /* largest GEMM tile shape used (0 = no GEMM) */
    uint64_t direct[E1_NUM_OPCODES];    /* direct MMIO starts per opcode */
    uint64_t desc[E1_NUM_OPCODES];      /* descriptors executed per opcode */
    uint64_t batches;                   /* descriptor ring doorbells */
    uint64_t macs;                      /* GEMM MACs */
    uint64_t mmio;                      /* MMIO register accesses */
    uint64_t cycles;                    /* simulated device cycles elapsed */
    uint64_t pad_values;                /* zero values the host inserted */
    unsigned k, padded_k;               /* K and K after padding (ops that pad K) */
    uint64_t desc_retries;              /* ring batches re-run as direct tiles after a device timeout */
    uint32_t host;                      /* NPK_HOST_* bits */
    int cpu_fallback;                   /* always 0 */
} npk_lower_evidence;

/* ---- the lowering context -------------------------------------------------- */

typedef struct npk_lower npk_lower;

/* A context on an open e1 driver (which stays the caller's). Allocates a
 * small guest-memory staging arena for descriptor batches. */
int npk_lower_new(npk_lower **out, npk_e1 *drv);
void npk_lower_free(npk_lower *L);
npk_e1 *npk_lower_driver(npk_lower *L);
/* Descriptor batching of GEMM tiles (default 1). 0: one MMIO start per tile. */
void npk_lower_set_batching(npk_lower *L, int on);
/* Force a GEMM tile shape (m 1..3, n 1..3, k 1..7; it must fit the
 * scratchpad), or 0,0,0 for the automatic choice. */
int npk_lower_set_tile(npk_lower *L, int int4, unsigned m, unsigned n, unsigned k);
/* The tile the automatic choice picks for an M x K x N matmul. */
void npk_lower_pick_tile(npk_lower *L, int int4, unsigned M, unsigned K, unsigned N, unsigned *tm, unsigned *tn,
                         unsigned *tk);

/* ---- parameters --------------------------------------------------------------- */

enum npk_mask_mode { NPK_MASK_FULL = 0, NPK_MASK_CAUSAL = 1, NPK_MASK_SLIDING_WINDOW = 2 };

/* Attention requantization (e1-lowering-notes.md "Attention"). */
typedef struct npk_attn_params {
    int mask_mode;                   /* npk_mask_mode; ignored when a mask is given */
    unsigned mask_window;            /* sliding window (>= 1) */
    unsigned qk_score_shift;         /* logits = clamp8(scores >> s), 0..31 (default 0) */
    unsigned attention_weight_shift; /* w8 = clamp8((w + 2^(s-1)) >> s), 0..31 (default 1) */
    unsigned context_shift;          /* clamp8(context >> s), 0..31 (default 0) */
} npk_attn_params;
void npk_attn_params_default(npk_attn_params *p);

typedef struct npk_rmsnorm_params {
    int64_t epsilon;        /* >= 0 (default 1) */
    unsigned inv_rms_shift; /* inv = (1 << s) / rms, 0..31 (default 8) */
    unsigned output_shift;  /* clamp8(. >> s), 0..31 (default 8) */
} npk_rmsnorm_params;
void npk_rmsnorm_params_default(npk_rmsnorm_params *p);

typedef struct npk_swiglu_params {
    unsigned requant_shift; /* up/gate = clamp8(acc >> s), 0..31 (default 0) */
    unsigned gate_shift;    /* hidden = clamp8(up * gate >> s), 0..31 (default 7) */
    int silu;               /* 1: gate goes through SiLU first (default 0: linear gate) */
} npk_swiglu_params;
void npk_swiglu_params_default(npk_swiglu_params *p);

/* transformer_block inputs (single head, batch 1). */
typedef struct npk_tblock_args {
    const npk_ltensor *input;           /* [T][D] int8 */
    const npk_ltensor *attention;       /* [1][1][T][Tk] int8 prequantized weights */
    const npk_ltensor *value;           /* [1][1][Tk][D] int8 */
    const npk_ltensor *attention_bias;  /* [D] int8 */
    const npk_ltensor *mlp_up_weight;   /* [D][F] int8 */
    const npk_ltensor *mlp_down_weight; /* [F][D] int8 */
    unsigned requant_shift;             /* MLP hidden shift 0..31 (default 0) */
} npk_tblock_args;

/* modern_decoder_block inputs (single head, batch 1). Give either q/k/v
 * weights or packed_qkv_weight (then q/k/v may be NULL). */
typedef struct npk_decoder_args {
    const npk_ltensor *input;              /* [T][D] int8, D even */
    const npk_ltensor *norm1_weight;       /* [D] int8 */
    const npk_ltensor *norm2_weight;       /* [D] int8 */
    const npk_ltensor *q_weight;           /* [D][D] int8 (or NULL with packed) */
    const npk_ltensor *k_weight;           /* [D][D] int8 */
    const npk_ltensor *v_weight;           /* [D][D] int8 */
    const npk_ltensor *packed_qkv_weight;  /* [D][3D] int8 (Q|K|V columns) or NULL */
    const npk_ltensor *attention_mask;     /* [1][1][T][T] bool or NULL */
    int attention_mask_mode;               /* npk_mask_mode (without a mask) */
    unsigned attention_mask_window;        /* >= 1 (default 1) */
    const npk_ltensor *attention_bias;     /* [D] int8 */
    const npk_ltensor *cos, *sin;          /* [D/2] int8 each */
    const npk_ltensor *swiglu_up_weight;   /* [D][F] int8 */
    const npk_ltensor *swiglu_gate_weight; /* [D][F] int8 */
    const npk_ltensor *swiglu_down_weight; /* [F][D] int8 */
    int swiglu_silu;                       /* 0 linear gate (default), 1 SiLU gate */
    unsigned projection_shift;             /* default 0 */
    unsigned qk_score_shift;               /* default 7 */
    unsigned attention_weight_shift;       /* default 1 */
    unsigned attention_context_shift;      /* default 7 */
    npk_rmsnorm_params rms;                /* defaults 1 / 8 / 8 */
    unsigned rope_scale_shift;             /* default 7 */
    unsigned swiglu_requant_shift;         /* default 0 */
    unsigned swiglu_gate_shift;            /* default 0 */
} npk_decoder_args;
/* Zero the tensor pointers and set every parameter to its default. */
void npk_decoder_args_default(npk_decoder_args *a);

/* ---- lowerings ------------------------------------------------------------------
 * Common arguments: L the context; out receives the results (free with
 * npk_lower_out_free); golden (may be NULL) receives the CPU reference with
 * the same names and shapes; ev (may be NULL) receives the evidence.
 * int4 selects int4 operands (-8..7, GEMM_S4) instead of int8 (GEMM_S8).
 * Output names are listed as name:type[shape]. */

/* result:i32[M][N] = lhs[M][K] x rhs[K][N]. */
int npk_lower_matmul(npk_lower *L, int int4, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *out,
                     npk_lower_out *golden, npk_lower_evidence *ev);
/* A banded product, the shape of a convolution along one axis with stride 1
 * (a depthwise convolution's rows): result:i32[R][W] with
 * result[r][x] = sum over o < O, f < F of lines[r][o][x+f] * taps[o][f], for
 * lines[R][O][P] and taps[O][F] int8, W = P - F + 1. Its GEMM tiles run n
 * consecutive outputs x at once: for rows r0.., outputs x0.. and one o,
 * A = lines[r][o][x0 .. x0+n+F-2] (m x (n+F-1)) and B = the band
 * B[l][j] = taps[o][l-j] (0 outside 0..F-1), C accumulated over o on the
 * host (split-K). With F = 5, a 3x3x7 tile gives 9 outputs (45 of its 63
 * MACs are taps, the rest multiply the band's zeros), where the im2col
 * product [R*W][O*F] x [O*F][1] takes 3 outputs per 3x1x7 tile. */
int npk_lower_band_matmul(npk_lower *L, const npk_ltensor *lines, const npk_ltensor *taps, npk_lower_out *out,
                          npk_lower_out *golden, npk_lower_evidence *ev);
/* npk_lower_matmul and npk_lower_band_matmul on int8 host matrices (the ONNX
 * backend's operands), with the same tiles, descriptors and evidence span,
 * but no golden, no int32 operand tensors and no output list: C[i][j] at
 * C + i*ldc + j (A, B, C pitches in elements), result[r][x] at result +
 * r*W + x (lines [R][O][P], taps [O][F], W = P - F + 1). */
int npk_lower_matmul_s8(npk_lower *L, unsigned M, unsigned K, unsigned N, const int8_t *A, size_t lda,
                        const int8_t *B, size_t ldb, int32_t *C, size_t ldc);
int npk_lower_band_matmul_s8(npk_lower *L, unsigned R, unsigned O, unsigned P, unsigned F, const int8_t *lines,
                             const int8_t *taps, int32_t *result);
/* The GEMM tiles npk_lower_band_matmul takes for R x O lines of W outputs and
 * F taps (0 when F > 7: no tile holds one output). */
uint64_t npk_lower_band_tiles(npk_lower *L, unsigned R, unsigned O, unsigned W, unsigned F);
/* result:i32[B][H][M][N] = lhs[B][H][M][K] x rhs[B][H][K][N] per (batch, head). */
int npk_lower_batch_matmul(npk_lower *L, int int4, const npk_ltensor *lhs, const npk_ltensor *rhs,
                           npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev);
/* input[T][D] x packed_weight[D][3D] as one GEMM; outputs q, k, v:i8[T][D]
 * (clamp8(acc >> shift)), packed:i32[T][3D]. shift 0..31. */
int npk_lower_qkv_projection(npk_lower *L, const npk_ltensor *input, const npk_ltensor *packed_weight,
                             unsigned shift, npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev);
/* 2:4 sparse int4: lhs[M][K] int4 dense activations; rhs_nonzero[KB][N][4]
 * int4 (two nonzero weights per 4-lane group, KB = ceil(K/8) blocks of 8 K);
 * rhs_positions[KB][N][4] in 0..3, the two positions of each group distinct.
 * result:i32[M][N]. SDOT4_S4_2_4 per block, ADD to accumulate; K zero-padded. */
int npk_lower_sparse_int4_matmul(npk_lower *L, const npk_ltensor *lhs, const npk_ltensor *rhs_nonzero,
                                 const npk_ltensor *rhs_positions, npk_lower_out *out, npk_lower_out *golden,
                                 npk_lower_evidence *ev);
/* W4A8 group-scaled: lhs[M][K] int8, rhs[K][N] int4, scales_q8_8[G][N] signed
 * 16-bit Q8.8, G = ceil(K / group_size), 1 <= group_size <= K.
 * result:q8_8[M][N] = sum_g group_dot * scale (int32, wrapping), group_dot:i32[M][N][G]. */
int npk_lower_group_scaled_int4_matmul(npk_lower *L, const npk_ltensor *lhs, const npk_ltensor *rhs,
                                       const npk_ltensor *scales_q8_8, unsigned group_size, npk_lower_out *out,
                                       npk_lower_out *golden, npk_lower_evidence *ev);
/* INT2 (-2..1) or ternary BitNet ({-1,0,1}, CMD_PARAM[1]) matmul through
 * DOT16_S2 over 16-lane K chunks chaining ACC: result:i32[M][N]. */
int npk_lower_int2_matmul(npk_lower *L, int ternary, const npk_ltensor *lhs, const npk_ltensor *rhs,
                          npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev);
/* FP8 E4M3 raw bytes lhs[M][K], rhs[K][N] (0..255) through DOT4_FP8_E4M3
 * over 4-lane chunks chaining ACC: result:q8_8[M][N]. */
int npk_lower_fp8_matmul(npk_lower *L, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *out,
                         npk_lower_out *golden, npk_lower_evidence *ev);
/* FP16 (bf16 = 0) or BF16 raw 16-bit lhs[M][K], rhs[K][N]: host converts to
 * Q8.8 (round half away from zero; NaN/Inf/subnormal/out-of-range refused),
 * MUL_LO per product, host >> 8, ADD. result:q8_8[M][N], lhs_q8_8, rhs_q8_8. */
int npk_lower_float16_matmul(npk_lower *L, int bf16, const npk_ltensor *lhs, const npk_ltensor *rhs,
                             npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev);

/* conv2d, batch 1, NHWC input[1][H][W][C], HWIO filter[KH][KW][C][O], VALID,
 * stride 1, dilation 1: host im2col [OH*OW][KH*KW*C], then matmul.
 * result:i32[1][OH][OW][O]. */
int npk_lower_conv2d(npk_lower *L, int int4, const npk_ltensor *input, const npk_ltensor *filter,
                     npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev);
/* depthwise: input[1][H][W][C] int8, filter[KH][KW][C][M] (HWCM) int8:
 * MUL_LO + ADD per tap. result:i32[1][OH][OW][C*M] (channel c*M + m). */
int npk_lower_depthwise_conv2d(npk_lower *L, const npk_ltensor *input, const npk_ltensor *filter,
                               npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev);
/* grouped: input[1][H][W][C] int8, filter[KH][KW][C/G][O] int8, 1 < G < C,
 * G divides C and O. MUL_LO + ADD per tap. result:i32[1][OH][OW][O]. */
int npk_lower_grouped_conv2d(npk_lower *L, const npk_ltensor *input, const npk_ltensor *filter, unsigned groups,
                             npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev);

/* result:i8[M][N] = clamp8(input[M][N] + bias[N]) (ADD per element). */
int npk_lower_bias_add(npk_lower *L, const npk_ltensor *input, const npk_ltensor *bias, npk_lower_out *out,
                       npk_lower_out *golden, npk_lower_evidence *ev);
/* result:i8[M][N] = clamp8(lhs + rhs), both [M][N] int8. */
int npk_lower_residual_add(npk_lower *L, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *out,
                           npk_lower_out *golden, npk_lower_evidence *ev);
/* RoPE on adjacent pairs: input[T][D] int8 (D even), cos[D/2], sin[D/2] int8:
 * out[2i] = clamp8((e*c - o*s) >> shift), out[2i+1] = clamp8((e*s + o*c) >> shift).
 * result:i8[T][D]. shift 0..31 (default 7). */
int npk_lower_rope(npk_lower *L, const npk_ltensor *input, const npk_ltensor *cos, const npk_ltensor *sin,
                   unsigned shift, npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev);
/* RMSNorm: input[T][D] int8, weight[D] int8. result:i8[T][D],
 * sum_squares:i32[T], rms:i32[T], inv_rms:i32[T]. p NULL = defaults. */
int npk_lower_rmsnorm(npk_lower *L, const npk_ltensor *input, const npk_ltensor *weight,
                      const npk_rmsnorm_params *p, npk_lower_out *out, npk_lower_out *golden,
                      npk_lower_evidence *ev);
/* SiLU (EXP2 piecewise): input[M][N] int8 -> result:i8[M][N], sigmoid:q0_8[M][N]. */
int npk_lower_silu(npk_lower *L, const npk_ltensor *input, npk_lower_out *out, npk_lower_out *golden,
                   npk_lower_evidence *ev);
/* QuickGELU: s = MUL_LO(x, 218) >> 7, then the SiLU formula on s times x.
 * Any int8 input (the EXP2 delta is clamped to -128). result:i8[M][N],
 * scaled:i32[M][N], sigmoid:q0_8[M][N]. */
int npk_lower_gelu(npk_lower *L, const npk_ltensor *input, npk_lower_out *out, npk_lower_out *golden,
                   npk_lower_evidence *ev);
/* ReLU MLP: input[T][D], up_weight[D][F], down_weight[F][O] int8:
 * hidden = VRELU(clamp8(GEMM >> requant_shift)), result:i32[T][O] = hidden x down.
 * Also hidden_acc:i32[T][F], hidden:i8[T][F], hidden_relu:i8[T][F]. */
int npk_lower_mlp(npk_lower *L, const npk_ltensor *input, const npk_ltensor *up_weight,
                  const npk_ltensor *down_weight, unsigned requant_shift, npk_lower_out *out, npk_lower_out *golden,
                  npk_lower_evidence *ev);
/* SwiGLU: input[T][D], up_weight[D][F], gate_weight[D][F], down_weight[F][O]
 * int8. result:i32[T][O]; up, gate, gate_act, hidden:i8[T][F]. p NULL = defaults. */
int npk_lower_swiglu(npk_lower *L, const npk_ltensor *input, const npk_ltensor *up_weight,
                     const npk_ltensor *gate_weight, const npk_ltensor *down_weight, const npk_swiglu_params *p,
                     npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev);

/* result:i32[B][H][Tq][Tk] = query[B][H][Tq][D] x key[B][H][Tk][D]^T per head. */
int npk_lower_attention_qk(npk_lower *L, int int4, const npk_ltensor *query, const npk_ltensor *key,
                           npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev);
/* EXP2 softmax: logits[B][H][Tq][Tk] int8, mask same shape bool or NULL (all
 * active). Every row needs an active lane and an active spread <= 128.
 * result:q0_8[B][H][Tq][Tk] (masked 0), row_max:i32[B][H][Tq],
 * exp:q0_8[B][H][Tq][Tk], row_sum:i32[B][H][Tq]. */
int npk_lower_attention_softmax(npk_lower *L, const npk_ltensor *logits, const npk_ltensor *mask,
                                npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev);
/* result:i32[B][H][Tq][Dv] = attention[B][H][Tq][Tk] x value[B][H][Tk][Dv]. */
int npk_lower_attention_av(npk_lower *L, int int4, const npk_ltensor *attention, const npk_ltensor *value,
                           npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev);
/* Multi-head attention, int8: query[B][H][Tq][D], key[B][H][Tk][D],
 * value[B][H][Tk][Dv], mask[B][H][Tq][Tk] or NULL (then p->mask_mode).
 * result:i8[B][H][Tq][Dv]; scores:i32, logits:i8, mask:bool, weights:q0_8,
 * weights_s8:i8, context:i32. p NULL = defaults. */
int npk_lower_attention(npk_lower *L, const npk_ltensor *query, const npk_ltensor *key, const npk_ltensor *value,
                        const npk_ltensor *mask, const npk_attn_params *p, npk_lower_out *out,
                        npk_lower_out *golden, npk_lower_evidence *ev);
/* Append new_key[B][H][T][D] / new_value[B][H][T][Dv] at position len of
 * key_cache[B][H][C][D] / value_cache[B][H][C][Dv], cache_lengths[B][H]
 * (len + T <= C). ADD(v, 0) per copied element. result: key_cache,
 * value_cache (updated, same shapes), cache_lengths:count[B][H]. */
int npk_lower_kv_cache_update(npk_lower *L, const npk_ltensor *key_cache, const npk_ltensor *value_cache,
                              const npk_ltensor *new_key, const npk_ltensor *new_value,
                              const npk_ltensor *cache_lengths, npk_lower_out *out, npk_lower_out *golden,
                              npk_lower_evidence *ev);
/* KV update, then attention of query[B][H][Tq][D] over the cache view of the
 * last min(len, window) tokens per head (window 0 = no window), zero-padded
 * to the longest view and masked. result:i8[B][H][Tq][Dv], key_cache,
 * value_cache, cache_lengths, key_view, value_view, mask, context. */
int npk_lower_decode_attention(npk_lower *L, const npk_ltensor *query, const npk_ltensor *key_cache,
                               const npk_ltensor *value_cache, const npk_ltensor *new_key,
                               const npk_ltensor *new_value, const npk_ltensor *cache_lengths, unsigned cache_window,
                               const npk_attn_params *p, npk_lower_out *out, npk_lower_out *golden,
                               npk_lower_evidence *ev);
/* AV (prequantized weights), bias add, residual add, ReLU MLP, residual add.
 * The AV context and the MLP output feed int8 adds, so they must fit int8
 * (else -NPK_EINVAL before any MMIO). result:i8[T][D]. */
int npk_lower_transformer_block(npk_lower *L, const npk_tblock_args *a, npk_lower_out *out, npk_lower_out *golden,
                                npk_lower_evidence *ev);
/* RMSNorm, Q/K/V (separate or packed), RoPE on Q and K, QK >> shift, mask,
 * softmax, weight requantization, AV >> shift, bias add, residual add,
 * RMSNorm, SwiGLU, residual add. result:i8[T][D] plus intermediates. */
int npk_lower_modern_decoder_block(npk_lower *L, const npk_decoder_args *a, npk_lower_out *out,
                                   npk_lower_out *golden, npk_lower_evidence *ev);

/* ---- modules (JSON records, docs/e1-lowering.md) ------------------------------- */

/* Options for npk_lower_module_run. */
typedef struct npk_lower_module_opts {
    int batching;       /* descriptor batching of GEMM tiles (default 1) */
    int include_golden; /* put golden tensors in the result (default 1) */
    struct npk_report *report; /* optional: one operator per record (device cycles, GEMM MACs),
                                  guest-memory and scratchpad bytes, MMIO/ring notes */
    uint64_t max_work;  /* refuse a module whose estimated work is larger (0 = no cap): matmul-like
                           records count lhs elements x rhs columns (MACs), others the elements
                           of their tensor inputs */
    void (*progress)(void *ctx, size_t done, size_t total); /* after each record (may be NULL) */
    void *progress_ctx;
    /* Optional: called for every record before its lowering. Returns 1 to let
     * the lowering run, 0 when it ran the record itself (out and ev filled,
     * possibly later: out may be filled by a later call for a later record of
     * the same batch), or a negative npk_status. inputs/fields: the record's
     * bound tensor fields (n of them). Used to replay compiled packages. */
    int (*hook)(void *ctx, size_t index, const char *name, unsigned n, const char *const *fields,
                const npk_ltensor *const *inputs, npk_lower_out *out, npk_lower_evidence *ev);
    void *hook_ctx;
} npk_lower_module_opts;
/* Default max_work of `npu lower` (2^33: a 2048^3 matmul). */
#define NPK_LOWER_DEFAULT_MAX_WORK (1ull << 33)

/* A record may carry "cpu_fallback": "REASON": it then runs on the CPU
 * reference (its golden) instead of the device and is reported so. */
/* Parse and validate a JSON record or module completely (names, ops,
 * precisions, fields, shapes, ranges, and the whole golden computation)
 * without touching any device. Returns 0 or -NPK_EINVAL / -NPK_EFORMAT with
 * a message naming the record and the field. */
int npk_lower_module_check(const char *json_text);
/* Validate, then run every record on the device behind drv; *result_json
 * receives the malloc'ed JSON result (outputs, golden, evidence, dispatch
 * order, simulated cycles, counters). opts may be NULL. */
int npk_lower_module_run(npk_e1 *drv, const char *json_text, const npk_lower_module_opts *opts, char **result_json);

#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_E1_LOWER_H */
