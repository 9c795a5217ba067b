// SPDX-License-Identifier: MIT
/* CPU reference implementations (the golden) of every e1 lowering operator,
 * in exact integer arithmetic following shared/spec/e1-lowering-notes.md,
 * plus the validation rules the lowerings share with them.
 *
 * Every npk_golden_* function validates its inputs completely (shapes,
 * ranges, parameters, data-dependent rules) and returns 0 or -NPK_EINVAL
 * with a message naming the field ("field 'rhs': ..."); on success it fills
 * g with the same output names, types and shapes as the matching
 * npk_lower_* function (include/npukit/e1_lower.h). The lowerings call the
 * golden first, so nothing reaches the device when a check fails.
 *
 * These functions are written from the notes independently of the lowering
 * code (src/ops/e1_lower*.c): they never call the driver. */
#ifndef NPUKIT_OPS_REF_OPS_H
#define NPUKIT_OPS_REF_OPS_H

#include "npukit/e1_lower.h"

/* ---- integer helpers ---- */
/* Arithmetic (floor) shift right of a signed value, shift 0..63. */
static inline int64_t npk_asr(int64_t v, unsigned s) {
    if (s > 62) return v < 0 ? -1 : 0;
    return v >= 0 ? v >> s : -((-(v + 1)) >> s) - 1;
}
static inline int32_t npk_clamp8(int64_t v) { return v < -128 ? -128 : v > 127 ? 127 : (int32_t)v; }
/* Two's-complement wrap to int32. */
static inline int32_t npk_wrap32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }

/* ---- validation helpers (set npk_errmsg, return -NPK_EINVAL) ---- */
/* t present with the given rank and every dim >= 1. */
int npk_ck_rank(const npk_ltensor *t, const char *field, unsigned rank);
/* Every value in [lo, hi]; what names the type ("int8"). */
int npk_ck_range(const npk_ltensor *t, const char *field, int64_t lo, int64_t hi, const char *what);
/* Shift parameter 0..31. */
int npk_ck_shift(const char *field, unsigned v);

/* Append a zeroed output tensor; returns it or NULL (-NPK_ENOMEM set). */
npk_ltensor *npk_out_add(npk_lower_out *o, const char *name, int dtype, unsigned rank, const unsigned *dims);

/* Host-side mask generation shared by golden and lowering (a host step by
 * definition): mask[B][H][Tq][Tk] for NPK_MASK_FULL/CAUSAL/SLIDING_WINDOW
 * (causal: k <= Tk - Tq + q; sliding: also k > Tk - Tq + q - window). */
int npk_make_mask(npk_ltensor *mask, int mode, unsigned window, unsigned B, unsigned H, unsigned Tq, unsigned Tk);
/* FP16 / BF16 raw bits to signed Q8.8 (round half away from zero); -NPK_EINVAL
 * for NaN/Inf/subnormal or a result outside [-32768, 32767]. */
int npk_f16_to_q88(int bf16, uint32_t bits, int32_t *q);

/* ---- goldens (same arguments and outputs as npk_lower_*) ---- */
int npk_golden_matmul(int int4, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *g);
/* The operand checks of npk_golden_matmul alone (rank, K, int8/int4 range). */
int npk_golden_matmul_check(int int4, const npk_ltensor *lhs, const npk_ltensor *rhs);
/* lines [R][O][P] x taps [O][F] -> "result" [R][P-F+1]: result[r][x] = sum over o, f of
 * lines[r][o][x+f] * taps[o][f] (int8 operands, int32 wrapping sums). */
int npk_golden_band_matmul(const npk_ltensor *lines, const npk_ltensor *taps, npk_lower_out *g);
int npk_golden_band_matmul_check(const npk_ltensor *lines, const npk_ltensor *taps);
int npk_golden_batch_matmul(int int4, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *g);
int npk_golden_qkv_projection(const npk_ltensor *input, const npk_ltensor *packed_weight, unsigned shift,
                              npk_lower_out *g);
int npk_golden_sparse_int4_matmul(const npk_ltensor *lhs, const npk_ltensor *rhs_nonzero,
                                  const npk_ltensor *rhs_positions, npk_lower_out *g);
int npk_golden_group_scaled_int4_matmul(const npk_ltensor *lhs, const npk_ltensor *rhs,
                                        const npk_ltensor *scales_q8_8, unsigned group_size, npk_lower_out *g);
int npk_golden_int2_matmul(int ternary, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *g);
int npk_golden_fp8_matmul(const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *g);
int npk_golden_float16_matmul(int bf16, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *g);
int npk_golden_conv2d(int int4, const npk_ltensor *input, const npk_ltensor *filter, npk_lower_out *g);
int npk_golden_depthwise_conv2d(const npk_ltensor *input, const npk_ltensor *filter, npk_lower_out *g);
int npk_golden_grouped_conv2d(const npk_ltensor *input, const npk_ltensor *filter, unsigned groups,
                              npk_lower_out *g);
int npk_golden_bias_add(const npk_ltensor *input, const npk_ltensor *bias, npk_lower_out *g);
int npk_golden_residual_add(const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *g);
int npk_golden_rope(const npk_ltensor *input, const npk_ltensor *cos, const npk_ltensor *sin, unsigned shift,
                    npk_lower_out *g);
int npk_golden_rmsnorm(const npk_ltensor *input, const npk_ltensor *weight, const npk_rmsnorm_params *p,
                       npk_lower_out *g);
int npk_golden_silu(const npk_ltensor *input, npk_lower_out *g);
int npk_golden_gelu(const npk_ltensor *input, npk_lower_out *g);
int npk_golden_mlp(const npk_ltensor *input, const npk_ltensor *up_weight, const npk_ltensor *down_weight,
                   unsigned requant_shift, npk_lower_out *g);
int npk_golden_swiglu(const npk_ltensor *input, const npk_ltensor *up_weight, const npk_ltensor *gate_weight,
                      const npk_ltensor *down_weight, const npk_swiglu_params *p, npk_lower_out *g);
int npk_golden_attention_qk(int int4, const npk_ltensor *query, const npk_ltensor *key, npk_lower_out *g);
int npk_golden_attention_softmax(const npk_ltensor *logits, const npk_ltensor *mask, npk_lower_out *g);
int npk_golden_attention_av(int int4, const npk_ltensor *attention, const npk_ltensor *value, npk_lower_out *g);
int npk_golden_attention(const npk_ltensor *query, const npk_ltensor *key, const npk_ltensor *value,
                         const npk_ltensor *mask, const npk_attn_params *p, npk_lower_out *g);
int npk_golden_kv_cache_update(const npk_ltensor *key_cache, const npk_ltensor *value_cache,
                               const npk_ltensor *new_key, const npk_ltensor *new_value,
                               const npk_ltensor *cache_lengths, npk_lower_out *g);
int npk_golden_decode_attention(const npk_ltensor *query, const npk_ltensor *key_cache,
                                const npk_ltensor *value_cache, const npk_ltensor *new_key,
                                const npk_ltensor *new_value, const npk_ltensor *cache_lengths,
                                unsigned cache_window, const npk_attn_params *p, npk_lower_out *g);
int npk_golden_transformer_block(const npk_tblock_args *a, npk_lower_out *g);
int npk_golden_modern_decoder_block(const npk_decoder_args *a, npk_lower_out *g);

/* Validation of the decode-attention / decoder-block argument sets (shared). */
int npk_check_kv_cache_update(const npk_ltensor *key_cache, const npk_ltensor *value_cache,
                              const npk_ltensor *new_key, const npk_ltensor *new_value,
                              const npk_ltensor *cache_lengths);

#endif
