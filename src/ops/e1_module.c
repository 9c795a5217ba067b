// SPDX-License-Identifier: MIT
/* e1 lowering modules: JSON records (docs/e1-lowering.md), validated
 * completely (including the whole golden computation) before any MMIO, then
 * run on the device; the result is JSON with outputs, golden, evidence,
 * dispatch order, simulated cycles and counters. JSON via libjansson. */
#include "e1_lower_int.h"
#include "npukit/report.h"
#include "npukit/trace.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- operator table ---- */

enum { F_T = 1, F_I, F_S };
typedef struct fspec {
    const char *name;
    int kind;
    int required;
    int64_t def, lo, hi; /* F_I */
    const char *strs;    /* F_S: allowed values, '|' separated, first is the default */
} fspec;

typedef struct rec rec;
typedef int (*run_fn)(npk_lower *L, rec *r, npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev);

#define MAXF 28
typedef struct opspec {
    const char *name;
    const char *precisions; /* '|' separated, first is the default */
    run_fn run;
    fspec f[MAXF];
} opspec;

struct rec {
    const opspec *spec;
    char name[64];
    const char *precision;
    json_t *j;
    npk_ltensor lit[MAXF]; /* literal tensors (owned) */
    const npk_ltensor *t[MAXF];
    char ref[MAXF][80];    /* reference text of a tensor field ("" for literals) */
    int64_t iv[MAXF];
    const char *sv[MAXF];
    int present[MAXF];
    const char *fallback; /* "cpu_fallback" reason: runs on the CPU reference */
};

static int fidx(const rec *r, const char *name) {
    for (int i = 0; i < MAXF && r->spec->f[i].name; i++)
        if (!strcmp(r->spec->f[i].name, name)) return i;
    return -1;
}
static const npk_ltensor *T(const rec *r, const char *name) {
    int i = fidx(r, name);
    return i >= 0 && r->present[i] ? r->t[i] : NULL;
}
static int64_t I(const rec *r, const char *name) { return r->iv[fidx(r, name)]; }
static const char *S(const rec *r, const char *name) { return r->sv[fidx(r, name)]; }
static int is4(const rec *r) { return !strcmp(r->precision, "int4"); }

/* golden when L == NULL, else the lowering */
#define DISPATCH(lcall, gcall) return L ? (lcall) : (gcall)

static int run_matmul(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    DISPATCH(npk_lower_matmul(L, is4(r), T(r, "lhs"), T(r, "rhs"), o, g, e),
             npk_golden_matmul(is4(r), T(r, "lhs"), T(r, "rhs"), g));
}
static int run_batch_matmul(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    DISPATCH(npk_lower_batch_matmul(L, is4(r), T(r, "lhs"), T(r, "rhs"), o, g, e),
             npk_golden_batch_matmul(is4(r), T(r, "lhs"), T(r, "rhs"), g));
}
static int run_qkv(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    unsigned s = (unsigned)I(r, "projection_shift");
    DISPATCH(npk_lower_qkv_projection(L, T(r, "input"), T(r, "packed_weight"), s, o, g, e),
             npk_golden_qkv_projection(T(r, "input"), T(r, "packed_weight"), s, g));
}
static int run_sparse(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    DISPATCH(npk_lower_sparse_int4_matmul(L, T(r, "lhs"), T(r, "rhs_nonzero"), T(r, "rhs_positions"), o, g, e),
             npk_golden_sparse_int4_matmul(T(r, "lhs"), T(r, "rhs_nonzero"), T(r, "rhs_positions"), g));
}
static int run_group(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    unsigned gs = (unsigned)I(r, "group_size");
    DISPATCH(npk_lower_group_scaled_int4_matmul(L, T(r, "lhs"), T(r, "rhs"), T(r, "scales_q8_8"), gs, o, g, e),
             npk_golden_group_scaled_int4_matmul(T(r, "lhs"), T(r, "rhs"), T(r, "scales_q8_8"), gs, g));
}
static int run_int2(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    int tern = !strcmp(r->precision, "ternary");
    DISPATCH(npk_lower_int2_matmul(L, tern, T(r, "lhs"), T(r, "rhs"), o, g, e),
             npk_golden_int2_matmul(tern, T(r, "lhs"), T(r, "rhs"), g));
}
static int run_fp8(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    DISPATCH(npk_lower_fp8_matmul(L, T(r, "lhs"), T(r, "rhs"), o, g, e), npk_golden_fp8_matmul(T(r, "lhs"), T(r, "rhs"), g));
}
static int run_f16(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    int bf = !strcmp(r->precision, "bf16");
    DISPATCH(npk_lower_float16_matmul(L, bf, T(r, "lhs"), T(r, "rhs"), o, g, e),
             npk_golden_float16_matmul(bf, T(r, "lhs"), T(r, "rhs"), g));
}
/* padding VALID, strides and dilations 1 */
static int conv_attrs(rec *r) {
    static const char *pairs[2] = {"strides", "dilations"};
    for (int p = 0; p < 2; p++) {
        const npk_ltensor *t = T(r, pairs[p]);
        if (!t) continue;
        if (t->rank != 1 || (t->dim[0] != 2 && t->dim[0] != 4))
            return npk_err(NPK_EINVAL, "field '%s': expected [h, w] or [1, h, w, 1]", pairs[p]);
        for (unsigned i = 0; i < t->dim[0]; i++)
            if (t->data[i] != 1)
                return npk_err(NPK_EINVAL, "field '%s': only %s 1 is supported", pairs[p],
                               p ? "dilation" : "stride");
    }
    return 0;
}
static int run_conv(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    int rc = conv_attrs(r);
    if (rc) return rc;
    DISPATCH(npk_lower_conv2d(L, is4(r), T(r, "input"), T(r, "filter"), o, g, e),
             npk_golden_conv2d(is4(r), T(r, "input"), T(r, "filter"), g));
}
static int run_dw(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    int rc = conv_attrs(r);
    if (rc) return rc;
    DISPATCH(npk_lower_depthwise_conv2d(L, T(r, "input"), T(r, "filter"), o, g, e),
             npk_golden_depthwise_conv2d(T(r, "input"), T(r, "filter"), g));
}
static int run_grouped(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    int rc = conv_attrs(r);
    if (rc) return rc;
    unsigned gr = (unsigned)I(r, "groups");
    DISPATCH(npk_lower_grouped_conv2d(L, T(r, "input"), T(r, "filter"), gr, o, g, e),
             npk_golden_grouped_conv2d(T(r, "input"), T(r, "filter"), gr, g));
}
static int run_bias(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    DISPATCH(npk_lower_bias_add(L, T(r, "input"), T(r, "bias"), o, g, e), npk_golden_bias_add(T(r, "input"), T(r, "bias"), g));
}
static int run_resid(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    DISPATCH(npk_lower_residual_add(L, T(r, "lhs"), T(r, "rhs"), o, g, e), npk_golden_residual_add(T(r, "lhs"), T(r, "rhs"), g));
}
static int run_rope(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    unsigned s = (unsigned)I(r, "scale_shift");
    DISPATCH(npk_lower_rope(L, T(r, "input"), T(r, "cos"), T(r, "sin"), s, o, g, e),
             npk_golden_rope(T(r, "input"), T(r, "cos"), T(r, "sin"), s, g));
}
static int run_rms(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    npk_rmsnorm_params p = {I(r, "epsilon"), (unsigned)I(r, "inv_rms_shift"), (unsigned)I(r, "output_shift")};
    DISPATCH(npk_lower_rmsnorm(L, T(r, "input"), T(r, "weight"), &p, o, g, e),
             npk_golden_rmsnorm(T(r, "input"), T(r, "weight"), &p, g));
}
static int run_silu(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    DISPATCH(npk_lower_silu(L, T(r, "input"), o, g, e), npk_golden_silu(T(r, "input"), g));
}
static int run_gelu(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    DISPATCH(npk_lower_gelu(L, T(r, "input"), o, g, e), npk_golden_gelu(T(r, "input"), g));
}
static int run_mlp(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    unsigned s = (unsigned)I(r, "requant_shift");
    DISPATCH(npk_lower_mlp(L, T(r, "input"), T(r, "up_weight"), T(r, "down_weight"), s, o, g, e),
             npk_golden_mlp(T(r, "input"), T(r, "up_weight"), T(r, "down_weight"), s, g));
}
static int is_silu(const char *s) { return !strcmp(s, "silu") || !strcmp(s, "swiglu_silu"); }
static int run_swiglu(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    npk_swiglu_params p = {(unsigned)I(r, "requant_shift"), (unsigned)I(r, "gate_shift"), is_silu(S(r, "activation"))};
    DISPATCH(npk_lower_swiglu(L, T(r, "input"), T(r, "up_weight"), T(r, "gate_weight"), T(r, "down_weight"), &p, o, g, e),
             npk_golden_swiglu(T(r, "input"), T(r, "up_weight"), T(r, "gate_weight"), T(r, "down_weight"), &p, g));
}
static int run_qk(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    DISPATCH(npk_lower_attention_qk(L, is4(r), T(r, "query"), T(r, "key"), o, g, e),
             npk_golden_attention_qk(is4(r), T(r, "query"), T(r, "key"), g));
}
static int run_softmax(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    DISPATCH(npk_lower_attention_softmax(L, T(r, "logits"), T(r, "mask"), o, g, e),
             npk_golden_attention_softmax(T(r, "logits"), T(r, "mask"), g));
}
static int run_av(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    DISPATCH(npk_lower_attention_av(L, is4(r), T(r, "attention"), T(r, "value"), o, g, e),
             npk_golden_attention_av(is4(r), T(r, "attention"), T(r, "value"), g));
}
static int mask_mode(const char *s) {
    return !strcmp(s, "causal") ? NPK_MASK_CAUSAL : !strcmp(s, "sliding_window") ? NPK_MASK_SLIDING_WINDOW : NPK_MASK_FULL;
}
static void attn_params(const rec *r, npk_attn_params *p) {
    p->mask_mode = fidx(r, "mask_mode") >= 0 ? mask_mode(S(r, "mask_mode")) : NPK_MASK_FULL;
    p->mask_window = fidx(r, "mask_window") >= 0 ? (unsigned)I(r, "mask_window") : 1;
    p->qk_score_shift = (unsigned)I(r, "qk_score_shift");
    p->attention_weight_shift = (unsigned)I(r, "attention_weight_shift");
    p->context_shift = (unsigned)I(r, "context_shift");
}
static int run_attention(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    npk_attn_params p;
    attn_params(r, &p);
    DISPATCH(npk_lower_attention(L, T(r, "query"), T(r, "key"), T(r, "value"), T(r, "mask"), &p, o, g, e),
             npk_golden_attention(T(r, "query"), T(r, "key"), T(r, "value"), T(r, "mask"), &p, g));
}
static int run_kv(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    DISPATCH(npk_lower_kv_cache_update(L, T(r, "key_cache"), T(r, "value_cache"), T(r, "new_key"), T(r, "new_value"),
                                       T(r, "cache_lengths"), o, g, e),
             npk_golden_kv_cache_update(T(r, "key_cache"), T(r, "value_cache"), T(r, "new_key"), T(r, "new_value"),
                                        T(r, "cache_lengths"), g));
}
static int run_decode(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    npk_attn_params p;
    attn_params(r, &p);
    unsigned w = (unsigned)I(r, "cache_window");
    DISPATCH(npk_lower_decode_attention(L, T(r, "query"), T(r, "key_cache"), T(r, "value_cache"), T(r, "new_key"),
                                        T(r, "new_value"), T(r, "cache_lengths"), w, &p, o, g, e),
             npk_golden_decode_attention(T(r, "query"), T(r, "key_cache"), T(r, "value_cache"), T(r, "new_key"),
                                         T(r, "new_value"), T(r, "cache_lengths"), w, &p, g));
}
static int run_tblock(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    npk_tblock_args a = {T(r, "input"),         T(r, "attention"),       T(r, "value"), T(r, "attention_bias"),
                         T(r, "mlp_up_weight"), T(r, "mlp_down_weight"), (unsigned)I(r, "requant_shift")};
    DISPATCH(npk_lower_transformer_block(L, &a, o, g, e), npk_golden_transformer_block(&a, g));
}
static int run_decoder(npk_lower *L, rec *r, npk_lower_out *o, npk_lower_out *g, npk_lower_evidence *e) {
    npk_decoder_args a;
    npk_decoder_args_default(&a);
    a.input = T(r, "input");
    a.norm1_weight = T(r, "norm1_weight");
    a.norm2_weight = T(r, "norm2_weight");
    a.q_weight = T(r, "q_weight");
    a.k_weight = T(r, "k_weight");
    a.v_weight = T(r, "v_weight");
    a.packed_qkv_weight = T(r, "packed_qkv_weight");
    a.attention_mask = T(r, "attention_mask");
    a.attention_mask_mode = mask_mode(S(r, "attention_mask_mode"));
    a.attention_mask_window = (unsigned)I(r, "attention_mask_window");
    a.attention_bias = T(r, "attention_bias");
    a.cos = T(r, "cos");
    a.sin = T(r, "sin");
    a.swiglu_up_weight = T(r, "swiglu_up_weight");
    a.swiglu_gate_weight = T(r, "swiglu_gate_weight");
    a.swiglu_down_weight = T(r, "swiglu_down_weight");
    a.swiglu_silu = is_silu(S(r, "swiglu_activation"));
    a.projection_shift = (unsigned)I(r, "projection_shift");
    a.qk_score_shift = (unsigned)I(r, "qk_score_shift");
    a.attention_weight_shift = (unsigned)I(r, "attention_weight_shift");
    a.attention_context_shift = (unsigned)I(r, "attention_context_shift");
    a.rms.epsilon = I(r, "rms_epsilon");
    a.rms.inv_rms_shift = (unsigned)I(r, "rms_inv_shift");
    a.rms.output_shift = (unsigned)I(r, "rms_output_shift");
    a.rope_scale_shift = (unsigned)I(r, "rope_scale_shift");
    a.swiglu_requant_shift = (unsigned)I(r, "swiglu_requant_shift");
    a.swiglu_gate_shift = (unsigned)I(r, "swiglu_gate_shift");
    DISPATCH(npk_lower_modern_decoder_block(L, &a, o, g, e), npk_golden_modern_decoder_block(&a, g));
}

#define TR(n) {n, F_T, 1, 0, 0, 0, NULL}
#define TO(n) {n, F_T, 0, 0, 0, 0, NULL}
#define SH(n, d) {n, F_I, 0, d, 0, 31, NULL}
#define IP(n, d, lo, hi) {n, F_I, 0, d, lo, hi, NULL}
#define IR(n, lo, hi) {n, F_I, 1, 0, lo, hi, NULL}
#define ST(n, s) {n, F_S, 0, 0, 0, 0, s}
#define CONV_ATTRS ST("padding", "VALID"), ST("data_format", "NHWC"), TO("strides"), TO("dilations")
#define SHIFTS(q, w, c) SH("qk_score_shift", q), SH("attention_weight_shift", w), SH("context_shift", c)

static const opspec OPS[] = {
    {"matmul", "int8|int4", run_matmul, {TR("lhs"), TR("rhs")}},
    {"batch_matmul", "int8|int4", run_batch_matmul, {TR("lhs"), TR("rhs")}},
    {"qkv_projection", "int8", run_qkv, {TR("input"), TR("packed_weight"), SH("projection_shift", 0)}},
    {"sparse_int4_matmul", "int4", run_sparse, {TR("lhs"), TR("rhs_nonzero"), TR("rhs_positions")}},
    {"group_scaled_int4_matmul", "w4a8", run_group,
     {TR("lhs"), TR("rhs"), TR("scales_q8_8"), IP("group_size", 32, 1, INT32_MAX)}},
    {"int2_matmul", "int2|ternary", run_int2, {TR("lhs"), TR("rhs")}},
    {"bitnet_matmul", "ternary|int2", run_int2, {TR("lhs"), TR("rhs")}},
    {"fp8_matmul", "fp8_e4m3", run_fp8, {TR("lhs"), TR("rhs")}},
    {"fp16_matmul", "fp16", run_f16, {TR("lhs"), TR("rhs")}},
    {"bf16_matmul", "bf16", run_f16, {TR("lhs"), TR("rhs")}},
    {"conv2d", "int8|int4", run_conv, {TR("input"), TR("filter"), ST("filter_format", "HWIO"), CONV_ATTRS}},
    {"depthwise_conv2d", "int8", run_dw, {TR("input"), TR("filter"), ST("filter_format", "HWCM"), CONV_ATTRS}},
    {"grouped_conv2d", "int8", run_grouped,
     {TR("input"), TR("filter"), IR("groups", 2, INT32_MAX), ST("filter_format", "HWIO"), CONV_ATTRS}},
    {"bias_add", "int8", run_bias, {TR("input"), TR("bias")}},
    {"residual_add", "int8", run_resid, {TR("lhs"), TR("rhs")}},
    {"rope", "int8", run_rope, {TR("input"), TR("cos"), TR("sin"), SH("scale_shift", 7)}},
    {"rmsnorm", "int8", run_rms,
     {TR("input"), TR("weight"), IP("epsilon", 1, 0, INT32_MAX), SH("inv_rms_shift", 8), SH("output_shift", 8)}},
    {"silu", "int8", run_silu, {TR("input"), ST("approximation", "exp2_q0_8_piecewise")}},
    {"gelu", "int8", run_gelu, {TR("input"), ST("approximation", "quick_gelu_exp2_q0_8")}},
    {"mlp", "int8", run_mlp,
     {TR("input"), TR("up_weight"), TR("down_weight"), SH("requant_shift", 0), ST("activation", "relu")}},
    {"swiglu", "int8", run_swiglu,
     {TR("input"), TR("up_weight"), TR("gate_weight"), TR("down_weight"), SH("requant_shift", 0), SH("gate_shift", 7),
      ST("activation", "linear_gate|swiglu|silu|swiglu_silu")}},
    {"attention_qk", "int8|int4", run_qk, {TR("query"), TR("key")}},
    {"attention_softmax", "int8", run_softmax, {TR("logits"), TO("mask")}},
    {"attention_av", "int8|int4", run_av, {TR("attention"), TR("value")}},
    {"attention", "int8", run_attention,
     {TR("query"), TR("key"), TR("value"), TO("mask"), ST("mask_mode", "full|causal|sliding_window"),
      IP("mask_window", 1, 1, INT32_MAX), SHIFTS(0, 1, 0)}},
    {"kv_cache_update", "int8", run_kv,
     {TR("key_cache"), TR("value_cache"), TR("new_key"), TR("new_value"), TR("cache_lengths")}},
    {"decode_attention", "int8", run_decode,
     {TR("query"), TR("key_cache"), TR("value_cache"), TR("new_key"), TR("new_value"), TR("cache_lengths"),
      IP("cache_window", 0, 1, INT32_MAX), SHIFTS(0, 1, 0)}},
    {"transformer_block", "int8", run_tblock,
     {TR("input"), TR("attention"), TR("value"), TR("attention_bias"), TR("mlp_up_weight"), TR("mlp_down_weight"),
      SH("requant_shift", 0)}},
    {"modern_decoder_block", "int8", run_decoder,
     {TR("input"), TR("norm1_weight"), TR("norm2_weight"), TO("q_weight"), TO("k_weight"), TO("v_weight"),
      TO("packed_qkv_weight"), TO("attention_mask"), ST("attention_mask_mode", "full|causal|sliding_window"),
      IP("attention_mask_window", 1, 1, INT32_MAX), TR("attention_bias"), TR("cos"), TR("sin"),
      TR("swiglu_up_weight"), TR("swiglu_gate_weight"), TR("swiglu_down_weight"),
      ST("swiglu_activation", "linear_gate|swiglu|silu|swiglu_silu"), SH("projection_shift", 0),
      SH("qk_score_shift", 7), SH("attention_weight_shift", 1), SH("attention_context_shift", 7),
      SH("rms_inv_shift", 8), SH("rms_output_shift", 8), IP("rms_epsilon", 1, 0, INT32_MAX),
      SH("rope_scale_shift", 7), SH("swiglu_requant_shift", 0), SH("swiglu_gate_shift", 0)}},
};
#define NOPS (sizeof OPS / sizeof OPS[0])

/* Is s one of the '|' separated words of list? */
int lw_in_list(const char *list, const char *s) {
    size_t n = strlen(s);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, '|');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && !strncmp(p, s, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}
static const char *first_word(const char *list, char *buf, size_t len) {
    size_t l = strcspn(list, "|");
    if (l >= len) l = len - 1;
    memcpy(buf, list, l);
    buf[l] = 0;
    return buf;
}

/* ---- the module ---- */

typedef struct named {
    char name[80];
    npk_ltensor t; /* owned for module tensors */
} named;

typedef struct module {
    json_t *root;
    char name[64];
    named *tensors;
    size_t ntensors;
    rec *recs;
    size_t nrecs;
    npk_lower_out *gout; /* golden pass outputs per record */
    npk_lower_out *rout; /* device run outputs per record */
    npk_lower_out *rgold;
    npk_lower_evidence *ev;
} module;

static void module_free(module *m) {
    for (size_t i = 0; i < m->ntensors; i++) npk_lt_free(&m->tensors[i].t);
    for (size_t i = 0; i < m->nrecs; i++) {
        for (int f = 0; f < MAXF; f++) npk_lt_free(&m->recs[i].lit[f]);
        if (m->gout) npk_lower_out_free(&m->gout[i]);
        if (m->rout) npk_lower_out_free(&m->rout[i]);
        if (m->rgold) npk_lower_out_free(&m->rgold[i]);
    }
    free(m->tensors);
    free(m->recs);
    free(m->gout);
    free(m->rout);
    free(m->rgold);
    free(m->ev);
    json_decref(m->root);
    memset(m, 0, sizeof *m);
}

/* Parse a nested JSON array of integers (booleans count as 0/1) into t. */
static int parse_tensor(json_t *j, npk_ltensor *t, const char *field) {
    unsigned dims[NPK_LT_MAX_RANK], rank = 0;
    json_t *p = j;
    while (json_is_array(p)) {
        if (rank == NPK_LT_MAX_RANK)
            return npk_err(NPK_EINVAL, "field '%s': tensors have at most 4 dimensions", field);
        if (!json_array_size(p)) return npk_err(NPK_EINVAL, "field '%s': empty dimension %u", field, rank);
        dims[rank++] = (unsigned)json_array_size(p);
        p = json_array_get(p, 0);
    }
    if (!rank) return npk_err(NPK_EINVAL, "field '%s': expected a tensor (nested array of integers) or a tensor name", field);
    int rc = npk_lt_alloc(t, rank, dims);
    if (rc) return npk_err_prefix(rc, "field '%s'", field);
    size_t n = npk_lt_numel(t);
    for (size_t i = 0; i < n; i++) {
        size_t rem = i;
        unsigned idx[NPK_LT_MAX_RANK];
        for (int d = (int)rank - 1; d >= 0; d--) {
            idx[d] = (unsigned)(rem % dims[d]);
            rem /= dims[d];
        }
        json_t *v = j;
        for (unsigned d = 0; d < rank; d++) {
            if (!json_is_array(v) || json_array_size(v) != dims[d]) {
                npk_lt_free(t);
                return npk_err(NPK_EINVAL, "field '%s': not rectangular (dimension %u should have %u entries)", field,
                               d, dims[d]);
            }
            v = json_array_get(v, idx[d]);
        }
        if (json_is_integer(v)) {
            json_int_t x = json_integer_value(v);
            if (x < INT32_MIN || x > INT32_MAX) {
                npk_lt_free(t);
                return npk_err(NPK_EINVAL, "field '%s': value %" JSON_INTEGER_FORMAT " is not a 32-bit integer", field, x);
            }
            t->data[i] = (int32_t)x;
        } else if (json_is_boolean(v)) {
            t->data[i] = json_is_true(v);
        } else {
            npk_lt_free(t);
            return npk_err(NPK_EINVAL, "field '%s': entries must be integers (or booleans for masks)", field);
        }
    }
    return 0;
}

/* Tensor named ref: a module tensor, "record" (its primary output) or "record.output". */
static const npk_ltensor *lookup(module *m, size_t upto, npk_lower_out *outs, const char *ref) {
    for (size_t i = 0; i < m->ntensors; i++)
        if (!strcmp(m->tensors[i].name, ref)) return &m->tensors[i].t;
    for (size_t i = 0; i < upto; i++) {
        size_t l = strlen(m->recs[i].name);
        if (strncmp(ref, m->recs[i].name, l)) continue;
        if (!ref[l]) return outs[i].n ? &outs[i].t[0] : NULL;
        if (ref[l] == '.') return npk_lower_out_get(&outs[i], ref + l + 1);
    }
    return NULL;
}

#define RECERR(r, ...) npk_err_prefix(npk_err(NPK_EINVAL, __VA_ARGS__), "record '%s' (%s)", (r)->name, (r)->spec ? (r)->spec->name : "?")

/* Parse the record's fields (not the tensor references). */
static int parse_record(module *m, size_t idx, json_t *j) {
    rec *r = &m->recs[idx];
    memset(r, 0, sizeof *r);
    r->j = j;
    snprintf(r->name, sizeof r->name, "op%zu", idx);
    if (!json_is_object(j)) return npk_err(NPK_EINVAL, "record %zu: expected a JSON object", idx);
    json_t *nm = json_object_get(j, "name");
    if (nm) {
        if (!json_is_string(nm) || !json_string_length(nm) || json_string_length(nm) >= sizeof r->name ||
            strchr(json_string_value(nm), '.'))
            return npk_err(NPK_EINVAL, "record %zu: field 'name': expected a non-empty string without '.' (< 64 chars)", idx);
        snprintf(r->name, sizeof r->name, "%s", json_string_value(nm));
    }
    for (size_t i = 0; i < idx; i++)
        if (!strcmp(m->recs[i].name, r->name)) return npk_err(NPK_EINVAL, "record '%s': field 'name': duplicate name (also record %zu)", r->name, i);
    for (size_t i = 0; i < m->ntensors; i++)
        if (!strcmp(m->tensors[i].name, r->name))
            return npk_err(NPK_EINVAL, "record '%s': field 'name': the name is also a module tensor", r->name);
    json_t *op = json_object_get(j, "op");
    if (!json_is_string(op)) return npk_err(NPK_EINVAL, "record '%s': field 'op': missing (a string)", r->name);
    for (size_t i = 0; i < NOPS; i++)
        if (!strcmp(OPS[i].name, json_string_value(op))) r->spec = &OPS[i];
    if (!r->spec) return npk_err(NPK_EINVAL, "record '%s': field 'op': unknown op '%s'", r->name, json_string_value(op));
    json_t *pr = json_object_get(j, "precision");
    static char defp[NOPS][24];
    r->precision = first_word(r->spec->precisions, defp[r->spec - OPS], sizeof defp[0]);
    if (pr) {
        if (!json_is_string(pr)) return RECERR(r, "field 'precision': expected a string");
        if (!lw_in_list(r->spec->precisions, json_string_value(pr)))
            return RECERR(r, "field 'precision': '%s' is not supported (supported: %s)", json_string_value(pr),
                          r->spec->precisions);
        r->precision = json_string_value(pr);
    }
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        if (!strcmp(key, "name") || !strcmp(key, "op") || !strcmp(key, "precision") || !strcmp(key, "comment")) continue;
        if (!strcmp(key, "cpu_fallback")) {
            if (!json_is_string(v) || !json_string_length(v))
                return RECERR(r, "field 'cpu_fallback': expected the fallback reason (a non-empty string)");
            r->fallback = json_string_value(v);
            continue;
        }
        if (fidx(r, key) < 0) return RECERR(r, "field '%s': not a field of op %s", key, r->spec->name);
    }
    for (int f = 0; f < MAXF && r->spec->f[f].name; f++) {
        const fspec *fs = &r->spec->f[f];
        v = json_object_get(j, fs->name);
        if (!v || json_is_null(v)) {
            if (fs->required) return RECERR(r, "field '%s': missing", fs->name);
            if (fs->kind == F_I) r->iv[f] = fs->def;
            if (fs->kind == F_S) {
                static char defs[NOPS][MAXF][32];
                r->sv[f] = first_word(fs->strs, defs[r->spec - OPS][f], sizeof defs[0][0]);
            }
            continue;
        }
        r->present[f] = 1;
        if (fs->kind == F_I) {
            if (!json_is_integer(v)) return RECERR(r, "field '%s': expected an integer", fs->name);
            json_int_t x = json_integer_value(v);
            if (x < fs->lo || x > fs->hi)
                return RECERR(r, "field '%s': %" JSON_INTEGER_FORMAT " is outside %" PRId64 "..%" PRId64, fs->name, x,
                              fs->lo, fs->hi);
            r->iv[f] = x;
        } else if (fs->kind == F_S) {
            if (!json_is_string(v) || !lw_in_list(fs->strs, json_string_value(v)))
                return RECERR(r, "field '%s': expected one of %s", fs->name, fs->strs);
            r->sv[f] = json_string_value(v);
        } else if (json_is_string(v)) {
            snprintf(r->ref[f], sizeof r->ref[f], "%s", json_string_value(v));
        } else {
            int rc = parse_tensor(v, &r->lit[f], fs->name);
            if (rc) return npk_err_prefix(rc, "record '%s' (%s)", r->name, r->spec->name);
            r->t[f] = &r->lit[f];
        }
    }
    return 0;
}

/* Bind tensor references of record idx to outs (golden or device outputs). */
static int bind(module *m, size_t idx, npk_lower_out *outs) {
    rec *r = &m->recs[idx];
    for (int f = 0; f < MAXF && r->spec->f[f].name; f++) {
        if (!r->present[f] || !r->ref[f][0]) continue;
        r->t[f] = lookup(m, idx, outs, r->ref[f]);
        if (!r->t[f])
            return RECERR(r, "field '%s': '%s' names no module tensor and no output of an earlier record",
                          r->spec->f[f].name, r->ref[f]);
    }
    return 0;
}

int lw_json_load(const char *text, const char *what, json_t **out) {
    json_error_t jerr;
    *out = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (*out) return 0;
    return npk_err(NPK_EFORMAT, "%s%sJSON line %d column %d: %s", what ? what : "", what ? ": " : "", jerr.line,
                   jerr.column, jerr.text);
}

static int parse_module(module *m, const char *text) {
    memset(m, 0, sizeof *m);
    int rc = lw_json_load(text, NULL, &m->root);
    if (rc) return rc;
    if (!json_is_object(m->root)) return npk_err(NPK_EFORMAT, "the JSON top level must be an object");
    json_t *ops = json_object_get(m->root, "ops");
    int single = json_object_get(m->root, "op") != NULL;
    if (single && ops) return npk_err(NPK_EINVAL, "give either one record ('op') or a module ('ops'), not both");
    snprintf(m->name, sizeof m->name, "%s", single ? "record" : "module");
    json_t *mn = json_object_get(m->root, "module");
    if (mn) {
        if (!json_is_string(mn)) return npk_err(NPK_EINVAL, "field 'module': expected a string");
        snprintf(m->name, sizeof m->name, "%s", json_string_value(mn));
    }
    if (!single) {
        const char *key;
        json_t *v;
        json_object_foreach(m->root, key, v) {
            if (strcmp(key, "ops") && strcmp(key, "module") && strcmp(key, "tensors") && strcmp(key, "schema") &&
                strcmp(key, "comment"))
                return npk_err(NPK_EINVAL, "module: field '%s' is not a module field (module, tensors, ops)", key);
        }
        if (!json_is_array(ops)) return npk_err(NPK_EINVAL, "module: field 'ops': missing (an array of records)");
        if (!json_array_size(ops)) return npk_err(NPK_EINVAL, "module: field 'ops': the module is empty");
    }
    json_t *tens = json_object_get(m->root, "tensors");
    if (tens && !single) {
        if (!json_is_object(tens)) return npk_err(NPK_EINVAL, "module: field 'tensors': expected an object of named tensors");
        m->tensors = calloc(json_object_size(tens) + 1, sizeof *m->tensors);
        if (!m->tensors) return npk_err(NPK_ENOMEM, "out of memory");
        const char *key;
        json_t *v;
        json_object_foreach(tens, key, v) {
            named *nt = &m->tensors[m->ntensors];
            if (!*key || strchr(key, '.') || strlen(key) >= sizeof nt->name)
                return npk_err(NPK_EINVAL, "module: tensor name '%s' must be non-empty, < 80 chars, without '.'", key);
            snprintf(nt->name, sizeof nt->name, "%s", key);
            rc = parse_tensor(v, &nt->t, key);
            if (rc) return npk_err_prefix(rc, "module tensors");
            m->ntensors++;
        }
    }
    size_t n = single ? 1 : json_array_size(ops);
    m->recs = calloc(n, sizeof *m->recs);
    m->gout = calloc(n, sizeof *m->gout);
    m->rout = calloc(n, sizeof *m->rout);
    m->rgold = calloc(n, sizeof *m->rgold);
    m->ev = calloc(n, sizeof *m->ev);
    if (!m->recs || !m->gout || !m->rout || !m->rgold || !m->ev) return npk_err(NPK_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        m->nrecs = i + 1;
        rc = parse_record(m, i, single ? m->root : json_array_get(ops, i));
        if (rc) return rc;
    }
    /* the golden pass: every shape, range and data-dependent rule, no device */
    for (size_t i = 0; i < n; i++) {
        rec *r = &m->recs[i];
        rc = bind(m, i, m->gout);
        if (!rc) rc = r->spec->run(NULL, r, NULL, &m->gout[i], NULL);
        if (rc) return npk_err_prefix(rc, "record '%s' (%s)", r->name, r->spec->name);
    }
    return 0;
}

int npk_lower_module_check(const char *json_text) {
    module m;
    int rc = parse_module(&m, json_text);
    module_free(&m);
    return rc;
}

/* ---- result JSON ---- */

static json_t *tensor_json(const npk_ltensor *t, unsigned d, size_t *pos) {
    json_t *a = json_array();
    if (d >= t->rank || d >= sizeof t->dim / sizeof t->dim[0]) return a; /* bounds the recursion for the compiler too */
    for (unsigned i = 0; i < t->dim[d]; i++) {
        if (d + 1 == t->rank) json_array_append_new(a, json_integer(t->data[(*pos)++]));
        else json_array_append_new(a, tensor_json(t, d + 1, pos));
    }
    return a;
}

static json_t *outs_json(const npk_lower_out *o) {
    json_t *obj = json_object();
    for (unsigned i = 0; i < o->n; i++) {
        json_t *e = json_object(), *shape = json_array();
        for (unsigned d = 0; d < o->t[i].rank; d++) json_array_append_new(shape, json_integer(o->t[i].dim[d]));
        size_t pos = 0;
        json_object_set_new(e, "dtype", json_string(npk_ldtype_name(o->dtype[i])));
        json_object_set_new(e, "shape", shape);
        json_object_set_new(e, "data", tensor_json(&o->t[i], 0, &pos));
        json_object_set_new(obj, o->name[i], e);
    }
    return obj;
}

static int outs_equal(const npk_lower_out *a, const npk_lower_out *b) {
    if (a->n != b->n) return 0;
    for (unsigned i = 0; i < a->n; i++)
        if (strcmp(a->name[i], b->name[i]) || npk_lt_numel(&a->t[i]) != npk_lt_numel(&b->t[i]) ||
            memcmp(a->t[i].data, b->t[i].data, npk_lt_numel(&a->t[i]) * 4))
            return 0;
    return 1;
}

static json_t *evidence_json(const npk_lower_evidence *ev) {
    json_t *e = json_object(), *dd = json_object(), *ds = json_object(), *hs = json_array();
    for (unsigned i = 0; i < E1_NUM_OPCODES; i++) {
        if (ev->direct[i]) json_object_set_new(dd, e1_opcode_name(i), json_integer((json_int_t)ev->direct[i]));
        if (ev->desc[i]) json_object_set_new(ds, e1_opcode_name(i), json_integer((json_int_t)ev->desc[i]));
    }
    for (unsigned b = 0; b < NPK_HOST_STEP_COUNT; b++)
        if (ev->host & (1u << b)) json_array_append_new(hs, json_string(npk_lower_host_step_name(b)));
    json_object_set_new(e, "tile_count", json_integer((json_int_t)ev->tiles));
    json_t *ts = json_array();
    json_array_append_new(ts, json_integer(ev->tile_m));
    json_array_append_new(ts, json_integer(ev->tile_n));
    json_array_append_new(ts, json_integer(ev->tile_k));
    json_object_set_new(e, "tile_shape_mnk", ts);
    json_object_set_new(e, "direct_dispatches", dd);
    json_object_set_new(e, "descriptor_dispatches", ds);
    json_object_set_new(e, "ring_batches", json_integer((json_int_t)ev->batches));
    json_object_set_new(e, "gemm_macs", json_integer((json_int_t)ev->macs));
    json_object_set_new(e, "mmio_accesses", json_integer((json_int_t)ev->mmio));
    json_object_set_new(e, "simulated_cycles", json_integer((json_int_t)ev->cycles));
    json_t *pad = json_object();
    json_object_set_new(pad, "pad_values", json_integer((json_int_t)ev->pad_values));
    if (ev->padded_k) {
        json_object_set_new(pad, "k", json_integer(ev->k));
        json_object_set_new(pad, "padded_k", json_integer(ev->padded_k));
    }
    json_object_set_new(e, "padding", pad);
    json_object_set_new(e, "descriptor_retries_as_direct", json_integer((json_int_t)ev->desc_retries));
    json_object_set_new(e, "host_steps", hs);
    json_object_set_new(e, "cpu_fallback", json_boolean(ev->cpu_fallback));
    return e;
}

/* Estimated work of a record: a matmul-like record (lhs and rhs) does
 * numel(lhs) x columns(rhs) multiply-accumulates; others touch every element
 * of their tensor inputs. Saturates at UINT64_MAX. */
static uint64_t rec_work(const rec *r) {
    const npk_ltensor *l = T(r, "lhs"), *rh = T(r, "rhs");
    if (l && rh && rh->rank) {
        unsigned __int128 w = (unsigned __int128)npk_lt_numel(l) * rh->dim[rh->rank - 1];
        return w > UINT64_MAX ? UINT64_MAX : (uint64_t)w;
    }
    uint64_t w = 0;
    for (int i = 0; i < MAXF && r->spec->f[i].name; i++)
        if (r->present[i] && r->spec->f[i].kind == F_T && r->t[i]) w += npk_lt_numel(r->t[i]);
    return w;
}

/* Why long: the run of one JSON module record by record (golden, hook, CPU fallback, device
 * counters) with the result object built alongside; the records share the run's driver state. */
int npk_lower_module_run(npk_e1 *drv, const char *json_text, const npk_lower_module_opts *opts, char **result_json) {
    *result_json = NULL;
    npk_lower_module_opts def = {.batching = 1, .include_golden = 1};
    if (!opts) opts = &def;
    module m;
    int rc = parse_module(&m, json_text);
    if (rc) {
        module_free(&m);
        return rc;
    }
    if (opts->max_work) {
        uint64_t w = 0;
        for (size_t i = 0; i < m.nrecs; i++) {
            uint64_t rw = rec_work(&m.recs[i]);
            w = w + rw < w ? UINT64_MAX : w + rw;
        }
        if (w > opts->max_work) {
            module_free(&m);
            return npk_err(NPK_EINVAL,
                           "module needs about %" PRIu64 " operations (MACs of its matmuls), over the limit of %" PRIu64
                           " (raise it with --max-work)",
                           w, opts->max_work);
        }
    }
    npk_lower *L;
    if ((rc = npk_lower_new(&L, drv))) {
        module_free(&m);
        return rc;
    }
    npk_lower_set_batching(L, opts->batching);
    npk_port *port = npk_e1_port(drv);
    npk_e1_counters c0, c1;
    uint64_t cyc0 = npk_port_cycles(port), mmio0 = npk_port_mmio_count(port);
    uint64_t batches0 = npk_e1_get_stats(drv)->batches;
    if ((rc = npk_e1_read_counters(drv, &c0))) goto out;
    npk_e1_stats st0 = *npk_e1_get_stats(drv);
    for (size_t i = 0; i < m.nrecs; i++) {
        rec *r = &m.recs[i];
        if ((rc = bind(&m, i, m.rout))) goto out;
        uint64_t t0 = npk_port_cycles(port);
        rc = 1;
        if (opts->hook && !r->fallback) {
            const char *fn[MAXF];
            const npk_ltensor *in[MAXF];
            unsigned nf = 0;
            for (int f = 0; f < MAXF && r->spec->f[f].name; f++)
                if (r->spec->f[f].kind == F_T && r->present[f]) {
                    fn[nf] = r->spec->f[f].name;
                    in[nf++] = r->t[f];
                }
            rc = opts->hook(opts->hook_ctx, i, r->name, nf, fn, in, &m.rout[i], &m.ev[i]);
            /* the golden of a record the hook ran */
            if (!rc) rc = r->spec->run(NULL, r, NULL, &m.rgold[i], NULL);
        }
        if (rc == 1 && r->fallback) {
            /* CPU fallback: the reference computes the outputs, nothing reaches the device */
            rc = r->spec->run(NULL, r, NULL, &m.rout[i], NULL);
            if (!rc) rc = r->spec->run(NULL, r, NULL, &m.rgold[i], NULL);
            memset(&m.ev[i], 0, sizeof m.ev[i]);
            m.ev[i].op = r->spec->name;
            m.ev[i].cpu_fallback = 1;
        } else if (rc == 1) {
            rc = r->spec->run(L, r, &m.rout[i], &m.rgold[i], &m.ev[i]);
        }
        if (npk_port_trace(port)) {
            char args[96];
            snprintf(args, sizeof args, "\"record\":%zu,\"status\":%d", i, rc);
            npk_port_trace_host(port, "module", r->name, t0, args);
        }
        if (rc) {
            rc = npk_err_prefix(rc, "record '%s' (%s)", r->name, r->spec->name);
            goto out;
        }
        npk_report_op(opts->report, r->spec->name, 1, m.ev[i].cycles, m.ev[i].macs);
        if (opts->progress) opts->progress(opts->progress_ctx, i + 1, m.nrecs);
    }
    if (opts->report) {
        const npk_e1_stats *st1 = npk_e1_get_stats(drv);
        uint64_t d = 0, q = 0;
        for (int k = 0; k < E1_NUM_OPCODES; k++) {
            d += st1->direct[k] - st0.direct[k];
            q += st1->desc[k] - st0.desc[k];
        }
        npk_report_total_cycles(opts->report, npk_port_cycles(port) - cyc0);
        npk_report_bytes(opts->report, "dram", st1->desc_bytes_read - st0.desc_bytes_read,
                         st1->desc_bytes_written - st0.desc_bytes_written);
        npk_report_bytes(opts->report, "scratch (MMIO)", st1->scratch_bytes_read - st0.scratch_bytes_read,
                         st1->scratch_bytes_written - st0.scratch_bytes_written);
        npk_report_note(opts->report, "direct commands", "%" PRIu64, d);
        npk_report_note(opts->report, "descriptors / ring batches", "%" PRIu64 " / %" PRIu64, q,
                        st1->batches - st0.batches);
        npk_report_note(opts->report, "MMIO accesses", "%" PRIu64, npk_port_mmio_count(port) - mmio0);
        npk_report_note(opts->report, "port", "%s", npk_port_kind(port));
    }
    if ((rc = npk_e1_read_counters(drv, &c1))) goto out;
    json_t *res = json_object(), *recs = json_array(), *order = json_array();
    int all_match = 1, any_fallback = 0;
    for (size_t i = 0; i < m.nrecs; i++) {
        rec *r = &m.recs[i];
        json_t *jr = json_object();
        any_fallback |= r->fallback != NULL;
        int match = outs_equal(&m.rout[i], &m.rgold[i]);
        all_match &= match;
        json_object_set_new(jr, "name", json_string(r->name));
        json_object_set_new(jr, "op", json_string(r->spec->name));
        json_object_set_new(jr, "precision", json_string(r->precision));
        json_object_set_new(jr, "match", json_boolean(match));
        json_object_set_new(jr, "outputs", outs_json(&m.rout[i]));
        if (opts->include_golden) json_object_set_new(jr, "golden", outs_json(&m.rgold[i]));
        json_object_set_new(jr, "evidence", evidence_json(&m.ev[i]));
        if (r->fallback) json_object_set_new(jr, "cpu_fallback_reason", json_string(r->fallback));
        json_array_append_new(recs, jr);
        json_t *od = json_object(), *ops = json_array();
        json_object_set_new(od, "record", json_string(r->name));
        for (unsigned k = 0; k < E1_NUM_OPCODES; k++)
            if (m.ev[i].direct[k] || m.ev[i].desc[k]) json_array_append_new(ops, json_string(e1_opcode_name(k)));
        json_object_set_new(od, "opcodes", ops);
        json_array_append_new(order, od);
    }
    json_object_set_new(res, "schema", json_string("npukit.e1_lower_result.v1"));
    json_object_set_new(res, "module", json_string(m.name));
    json_object_set_new(res, "device", json_string("e1"));
    json_object_set_new(res, "port", json_string(npk_port_kind(port)));
    json_object_set_new(res, "batching", json_boolean(opts->batching));
    json_object_set_new(res, "records", recs);
    json_object_set_new(res, "dispatch_order", order);
    json_object_set_new(res, "all_match", json_boolean(all_match));
    json_object_set_new(res, "all_npu_dispatch", json_boolean(!any_fallback));
    json_object_set_new(res, "cpu_fallback", json_boolean(any_fallback));
    json_object_set_new(res, "simulated_cycles", json_integer((json_int_t)(npk_port_cycles(port) - cyc0)));
    json_object_set_new(res, "mmio_accesses", json_integer((json_int_t)(npk_port_mmio_count(port) - mmio0)));
    json_object_set_new(res, "ring_batches", json_integer((json_int_t)(npk_e1_get_stats(drv)->batches - batches0)));
    json_t *cn = json_object();
#define CDIFF(f, n) json_object_set_new(cn, n, json_integer((json_int_t)(uint32_t)(c1.f - c0.f)))
    CDIFF(perf_cycles, "PERF_CYCLES");
    CDIFF(perf_macs, "PERF_MACS");
    CDIFF(perf_ops, "PERF_OPS");
    CDIFF(perf_errors, "PERF_ERRORS");
    CDIFF(perf_unsupported, "PERF_UNSUPPORTED_OPS");
    CDIFF(perf_stall_cycles, "PERF_STALL_CYCLES");
    CDIFF(perf_scratch_bytes, "PERF_SCRATCH_BYTES");
#undef CDIFF
    /* the descriptor byte/beat counters restart at every doorbell: last batch only */
    json_object_set_new(cn, "DESC_BYTES_READ_LAST_BATCH", json_integer(c1.desc_bytes_read));
    json_object_set_new(cn, "DESC_BYTES_WRITTEN_LAST_BATCH", json_integer(c1.desc_bytes_written));
    json_object_set_new(res, "counters", cn);
    *result_json = json_dumps(res, JSON_COMPACT);
    json_decref(res);
    if (!*result_json) rc = npk_err(NPK_ENOMEM, "out of memory (result JSON)");
out:
    npk_lower_free(L);
    module_free(&m);
    return rc;
}
