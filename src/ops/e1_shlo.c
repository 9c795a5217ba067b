// SPDX-License-Identifier: MIT
/* The e1 StableHLO-subset module front end (docs/e1-compile.md): parsing
 * (JSON via jansson, YAML via libyaml), validation with the document's codes
 * in its order, the runtime contract's classification, lowering plans, tensor
 * binding and the translation into npukit's lowering modules. */
#include "e1_lower_int.h"
#include "e1_shlo_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ---- text -> JSON value (JSON first, then YAML) ---- */

#define Y_MAX_NODES (1u << 22) /* aliases are expanded: bound the work */
#define Y_MAX_DEPTH 64

static int y_int(const char *s, json_int_t *v) {
    if (!*s) return 0;
    errno = 0;
    char *end;
    long long x = strtoll(s, &end, 10);
    if (*end || errno) return 0;
    *v = (json_int_t)x;
    return 1;
}

static json_t *y_node(yaml_document_t *d, yaml_node_t *n, unsigned depth, size_t *budget) {
    if (!n || depth > Y_MAX_DEPTH || !*budget) return NULL;
    (*budget)--;
    if (n->type == YAML_SCALAR_NODE) {
        const char *s = (const char *)n->data.scalar.value;
        if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return json_string(s);
        json_int_t v;
        if (y_int(s, &v)) return json_integer(v);
        if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) return json_true();
        if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) return json_false();
        if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL")) return json_null();
        return json_string(s);
    }
    if (n->type == YAML_SEQUENCE_NODE) {
        json_t *a = json_array();
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
            json_t *c = y_node(d, yaml_document_get_node(d, *it), depth + 1, budget);
            if (!c) {
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, c);
        }
        return a;
    }
    if (n->type == YAML_MAPPING_NODE) {
        json_t *o = json_object();
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(d, p->key);
            json_t *c = k && k->type == YAML_SCALAR_NODE ? y_node(d, yaml_document_get_node(d, p->value), depth + 1, budget)
                                                         : NULL;
            if (!c || json_object_get(o, (const char *)k->data.scalar.value)) {
                json_decref(c);
                json_decref(o);
                return NULL;
            }
            json_object_set_new(o, (const char *)k->data.scalar.value, c);
        }
        return o;
    }
    return NULL;
}

int sh_load_text(const char *text, json_t **out) {
    *out = NULL;
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (j) {
        *out = j;
        return 0;
    }
    /* JSON-looking text: report the JSON error rather than a YAML one */
    const char *p = text;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p == '{' || *p == '[')
        return npk_err(NPK_EFORMAT, "JSON line %d column %d: %s", jerr.line, jerr.column, jerr.text);
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) return npk_err(NPK_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
    if (!yaml_parser_load(&parser, &doc)) {
        int rc = npk_err(NPK_EFORMAT, "neither JSON nor YAML: YAML line %zu column %zu: %s",
                         parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                         parser.problem ? parser.problem : "syntax error");
        yaml_parser_delete(&parser);
        return rc;
    }
    size_t budget = Y_MAX_NODES;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    json_t *v = root ? y_node(&doc, root, 0, &budget) : NULL;
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (!v)
        return npk_err(NPK_EFORMAT, "YAML: %s", !root ? "empty document"
                                                : !budget ? "too many nodes (alias expansion over 4M nodes)"
                                                          : "unsupported structure (non-scalar or duplicate mapping "
                                                            "keys, or nesting over 64 levels)");
    *out = v;
    return 0;
}

/* ---- op definitions ---- */

static const char *const PREC13 =
    "int8|int4|int2|bitnet_int2|fp8_e4m3|fp16|float16|bf16|bfloat16|sparse_int4_2_4|int4_group_scaled|"
    "group_scaled_int4|w4a8_gs";

static void issue(npk_shlo *m, const sh_op *op, const char *code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void issue(npk_shlo *m, const sh_op *op, const char *code, const char *fmt, ...) {
    sh_issue *n = realloc(m->issues, (m->nissues + 1) * sizeof *n);
    if (!n) return; /* out of memory: the count stays (checked by the caller through nissues) */
    m->issues = n;
    sh_issue *is = &n[m->nissues++];
    memset(is, 0, sizeof *is);
    snprintf(is->op_name, sizeof is->op_name, "%s", op ? op->name : m->name);
    snprintf(is->op_kind, sizeof is->op_kind, "%s", op ? op->def->kind : "stablehlo.module");
    snprintf(is->code, sizeof is->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(is->message, sizeof is->message, fmt, ap);
    va_end(ap);
}

static const sh_type *TY(const sh_op *op, int i) { return &op->t[i]; }
static int shape_eq(const sh_type *a, const sh_type *b) {
    return a->rank == b->rank && !memcmp(a->dim, b->dim, a->rank * sizeof a->dim[0]);
}
static int shape_is(const sh_type *a, unsigned rank, const unsigned *d) {
    return a->rank == rank && !memcmp(a->dim, d, rank * sizeof d[0]);
}
static const char *shape_str(const sh_type *t, char *buf, size_t len) {
    size_t o = 0;
    buf[o++] = '[';
    buf[o] = 0;
    for (unsigned i = 0; i < t->rank && o + 14 < len; i++) o += (size_t)snprintf(buf + o, len - o, "%s%u", i ? ", " : "", t->dim[i]);
    snprintf(buf + o, len - o, "]");
    return buf;
}
static const char *dims_str(unsigned n, const unsigned *d, char *buf, size_t len) {
    sh_type t;
    t.rank = n;
    memcpy(t.dim, d, n * sizeof d[0]);
    return shape_str(&t, buf, len);
}

static int check_precision(npk_shlo *m, const sh_op *op, const char *allowed) {
    if (lw_in_list(allowed, op->precision)) return 0;
    issue(m, op, "UNSUPPORTED_PRECISION", "precision '%s' not in {%s}", op->precision, allowed);
    return 1;
}
static void check_tile(npk_shlo *m, const sh_op *op, unsigned M, unsigned N, unsigned K) {
    if (M < 1 || M > 3) issue(m, op, "TILE_M_OUT_OF_RANGE", "M=%u outside 1..3", M);
    if (N < 1 || N > 3) issue(m, op, "TILE_N_OUT_OF_RANGE", "N=%u outside 1..3", N);
    if (K < 1 || K > 7) issue(m, op, "TILE_K_OUT_OF_RANGE", "K=%u outside 1..7", K);
}
static void check_result(npk_shlo *m, const sh_op *op, unsigned rank, const unsigned *want) {
    if (shape_is(&op->result, rank, want)) return;
    char a[96], b[96];
    issue(m, op, "RESULT_SHAPE_MISMATCH", "expected result shape %s, got %s", dims_str(rank, want, a, sizeof a),
          shape_str(&op->result, b, sizeof b));
}

static void v_dot(const sh_op *op, npk_shlo *m) {
    check_precision(m, op, PREC13);
    const sh_type *l = TY(op, 0), *r = TY(op, 1);
    if (l->rank != 2 || r->rank != 2) {
        issue(m, op, "RANK_UNSUPPORTED", "dot_general subset requires rank-2 operands");
        return;
    }
    if (l->dim[1] != r->dim[0]) issue(m, op, "SHAPE_MISMATCH", "K mismatch: lhs=%u, rhs=%u", l->dim[1], r->dim[0]);
    check_tile(m, op, l->dim[0], r->dim[1], l->dim[1]);
    unsigned want[2] = {l->dim[0], r->dim[1]};
    check_result(m, op, 2, want);
}
static void v_batch(const sh_op *op, npk_shlo *m) {
    check_precision(m, op, "int8|int4");
    const sh_type *l = TY(op, 0), *r = TY(op, 1);
    if (l->rank != 4 || r->rank != 4) {
        issue(m, op, "RANK_UNSUPPORTED", "batch_matmul subset requires rank-4 operands");
        return;
    }
    if (l->dim[0] != r->dim[0] || l->dim[1] != r->dim[1])
        issue(m, op, "BATCH_MISMATCH", "batch/head mismatch: lhs=[%u, %u], rhs=[%u, %u]", l->dim[0], l->dim[1], r->dim[0],
              r->dim[1]);
    if (l->dim[3] != r->dim[2]) issue(m, op, "SHAPE_MISMATCH", "K mismatch: lhs=%u, rhs=%u", l->dim[3], r->dim[2]);
    check_tile(m, op, l->dim[2], r->dim[3], l->dim[3]);
    unsigned want[4] = {l->dim[0], l->dim[1], l->dim[2], r->dim[3]};
    check_result(m, op, 4, want);
}
static void v_conv(const sh_op *op, npk_shlo *m) {
    check_precision(m, op, "int8|int4");
    const sh_type *in = TY(op, 0), *f = TY(op, 1);
    if (in->rank != 4 || f->rank != 4) {
        issue(m, op, "RANK_UNSUPPORTED", "convolution subset requires NHWC + HWIO");
        return;
    }
    if (in->dim[0] != 1) issue(m, op, "BATCH_UNSUPPORTED", "convolution subset is batch=1 only");
    if (strcmp(op->padding, "VALID")) issue(m, op, "PADDING_UNSUPPORTED", "padding '%s' not in {VALID}", op->padding);
    if (op->stride != 1) issue(m, op, "STRIDE_UNSUPPORTED", "stride %lld not in {1}", op->stride);
    if (op->dilation != 1) issue(m, op, "DILATION_UNSUPPORTED", "dilation %lld not in {1}", op->dilation);
    if (in->dim[3] != f->dim[2]) issue(m, op, "CHANNEL_MISMATCH", "input C=%u != filter C=%u", in->dim[3], f->dim[2]);
    int fits = f->dim[0] <= in->dim[1] && f->dim[1] <= in->dim[2];
    if (!fits) issue(m, op, "FILTER_TOO_LARGE", "filter must fit inside input under VALID padding");
    unsigned long long k = (unsigned long long)in->dim[3] * f->dim[0] * f->dim[1];
    check_tile(m, op, 1, f->dim[3], k > 0xffffffffull ? 0xffffffffu : (unsigned)k);
    if (fits) {
        unsigned want[4] = {in->dim[0], in->dim[1] - f->dim[0] + 1, in->dim[2] - f->dim[1] + 1, f->dim[3]};
        check_result(m, op, 4, want);
    }
}
static void v_add(const sh_op *op, npk_shlo *m) {
    check_precision(m, op, "int8");
    const sh_type *l = TY(op, 0), *r = TY(op, 1);
    char a[96], b[96];
    if (!shape_eq(l, r))
        issue(m, op, "SHAPE_MISMATCH", "add requires equal shapes: lhs=%s, rhs=%s", shape_str(l, a, sizeof a),
              shape_str(r, b, sizeof b));
    if (!shape_eq(l, &op->result))
        issue(m, op, "RESULT_SHAPE_MISMATCH", "result shape %s != %s", shape_str(&op->result, a, sizeof a),
              shape_str(l, b, sizeof b));
}
static void v_bias(const sh_op *op, npk_shlo *m) {
    check_precision(m, op, "int8");
    const sh_type *in = TY(op, 0), *bias = TY(op, 1);
    char a[96], b[96];
    if (in->rank != 2) issue(m, op, "RANK_UNSUPPORTED", "bias_add requires rank-2 input");
    if (bias->rank != 1) issue(m, op, "RANK_UNSUPPORTED", "bias_add requires rank-1 bias");
    if (in->rank == 2 && bias->rank == 1 && bias->dim[0] != in->dim[1])
        issue(m, op, "SHAPE_MISMATCH", "bias width %u != input columns %u", bias->dim[0], in->dim[1]);
    if (in->rank == 2 && !shape_eq(&op->result, in))
        issue(m, op, "RESULT_SHAPE_MISMATCH", "result shape %s != %s", shape_str(&op->result, a, sizeof a),
              shape_str(in, b, sizeof b));
}
static void v_mlp(const sh_op *op, npk_shlo *m) {
    check_precision(m, op, "int8");
    if (strcmp(op->activation, "relu"))
        issue(m, op, "ACTIVATION_UNSUPPORTED", "activation '%s' not in {relu}", op->activation);
    const sh_type *in = TY(op, 0), *up = TY(op, 1), *down = TY(op, 2);
    if (in->rank != 2 || up->rank != 2 || down->rank != 2) {
        issue(m, op, "RANK_UNSUPPORTED", "mlp subset requires rank-2 tensors");
        return;
    }
    unsigned M = in->dim[0], K = in->dim[1], H = up->dim[1], N = down->dim[1];
    if (K != up->dim[0]) issue(m, op, "SHAPE_MISMATCH", "up K mismatch: input=%u, weight=%u", K, up->dim[0]);
    if (H != down->dim[0]) issue(m, op, "SHAPE_MISMATCH", "down K mismatch: hidden=%u, weight=%u", H, down->dim[0]);
    check_tile(m, op, M, H, K);
    check_tile(m, op, M, N, H);
    unsigned want[2] = {M, N};
    check_result(m, op, 2, want);
}
static void v_qk(const sh_op *op, npk_shlo *m) {
    check_precision(m, op, "int8|int4");
    const sh_type *q = TY(op, 0), *k = TY(op, 1);
    if (q->rank != 4 || k->rank != 4) {
        issue(m, op, "RANK_UNSUPPORTED", "attention_qk requires rank-4 [B,H,T,D] tensors");
        return;
    }
    if (q->dim[0] != k->dim[0] || q->dim[1] != k->dim[1]) issue(m, op, "BATCH_MISMATCH", "batch/head dims must match");
    if (q->dim[3] != k->dim[3]) issue(m, op, "SHAPE_MISMATCH", "head_dim mismatch: q=%u, k=%u", q->dim[3], k->dim[3]);
    check_tile(m, op, q->dim[2], k->dim[2], q->dim[3]);
    unsigned want[4] = {q->dim[0], q->dim[1], q->dim[2], k->dim[2]};
    check_result(m, op, 4, want);
}
static void v_av(const sh_op *op, npk_shlo *m) {
    check_precision(m, op, "int8|int4");
    const sh_type *w = TY(op, 0), *v = TY(op, 1);
    if (w->rank != 4 || v->rank != 4) {
        issue(m, op, "RANK_UNSUPPORTED", "attention_av requires rank-4 weights and values");
        return;
    }
    if (w->dim[0] != v->dim[0] || w->dim[1] != v->dim[1]) issue(m, op, "BATCH_MISMATCH", "batch/head dims must match");
    if (w->dim[3] != v->dim[2])
        issue(m, op, "SHAPE_MISMATCH", "key_token mismatch: weights[3]=%u value[2]=%u", w->dim[3], v->dim[2]);
    check_tile(m, op, w->dim[2], v->dim[3], w->dim[3]);
    unsigned want[4] = {w->dim[0], w->dim[1], w->dim[2], v->dim[3]};
    check_result(m, op, 4, want);
}
static void v_tblock(const sh_op *op, npk_shlo *m) {
    check_precision(m, op, "int8");
    if (strcmp(op->activation, "relu"))
        issue(m, op, "ACTIVATION_UNSUPPORTED", "activation '%s' not in {relu}", op->activation);
    const sh_type *in = TY(op, 0);
    if (in->rank != 2) {
        issue(m, op, "RANK_UNSUPPORTED", "transformer_block requires rank-2 input");
        return;
    }
    check_tile(m, op, in->dim[0], in->dim[1], in->dim[1]);
    check_result(m, op, 2, in->dim);
}
/* decoder_block type indices */
enum { DB_IN, DB_N1, DB_N2, DB_Q, DB_K, DB_V, DB_BIAS, DB_COS, DB_SIN, DB_UP, DB_GATE, DB_DOWN };
static void v_decoder(const sh_op *op, npk_shlo *m) {
    check_precision(m, op, "int8");
    if (!lw_in_list("linear_gate|swiglu|silu|swiglu_silu", op->activation))
        issue(m, op, "ACTIVATION_UNSUPPORTED", "swiglu_activation '%s' not in {linear_gate, silu, swiglu, swiglu_silu}",
              op->activation);
    const sh_type *in = TY(op, DB_IN);
    if (in->rank != 2) {
        issue(m, op, "RANK_UNSUPPORTED", "decoder_block requires rank-2 input");
        return;
    }
    unsigned T = in->dim[0], D = in->dim[1];
    char a[96];
    if (D % 2) issue(m, op, "ROPE_DIM_UNSUPPORTED", "model dimension must be even");
    check_tile(m, op, T, D, D);
    static const int vec[3] = {DB_N1, DB_N2, DB_BIAS};
    for (int i = 0; i < 3; i++)
        if (!shape_is(TY(op, vec[i]), 1, &D))
            issue(m, op, "SHAPE_MISMATCH", "%s shape %s != [%u]", sh_type_name(op, vec[i]),
                  shape_str(TY(op, vec[i]), a, sizeof a), D);
    unsigned half = D / 2;
    for (int i = DB_COS; i <= DB_SIN; i++)
        if (!shape_is(TY(op, i), 1, &half))
            issue(m, op, "SHAPE_MISMATCH", "%s shape %s != [%u]", sh_type_name(op, i), shape_str(TY(op, i), a, sizeof a),
                  half);
    unsigned dd[2] = {D, D};
    for (int i = DB_Q; i <= DB_V; i++)
        if (!shape_is(TY(op, i), 2, dd))
            issue(m, op, "SHAPE_MISMATCH", "%s shape %s != [%u, %u]", sh_type_name(op, i),
                  shape_str(TY(op, i), a, sizeof a), D, D);
    unsigned hidden[3];
    unsigned nh = 0;
    for (int i = DB_UP; i <= DB_GATE; i++) {
        const sh_type *t = TY(op, i);
        if (t->rank != 2 || t->dim[0] != D)
            issue(m, op, "SHAPE_MISMATCH", "%s must be [model_dim, hidden], got %s", sh_type_name(op, i),
                  shape_str(t, a, sizeof a));
        else if (t->dim[1] < 1 || t->dim[1] > 3)
            issue(m, op, "TILE_N_OUT_OF_RANGE", "%s hidden=%u outside 1..3", sh_type_name(op, i), t->dim[1]);
        else
            hidden[nh++] = t->dim[1];
    }
    const sh_type *dn = TY(op, DB_DOWN);
    if (dn->rank != 2 || dn->dim[1] != D)
        issue(m, op, "SHAPE_MISMATCH", "swiglu_down_type must be [hidden, model_dim], got %s", shape_str(dn, a, sizeof a));
    else
        hidden[nh++] = dn->dim[0];
    for (unsigned i = 1; i < nh; i++)
        if (hidden[i] != hidden[0]) {
            issue(m, op, "SHAPE_MISMATCH", "SwiGLU hidden dimensions must match");
            break;
        }
    check_result(m, op, 2, in->dim);
}

static const sh_opdef DEFS[] = {
    {"stablehlo.dot_general", {"lhs_type", "rhs_type"}, 1, A_NONE, NULL, v_dot},
    {"stablehlo.dot", {"lhs_type", "rhs_type"}, 1, A_NONE, NULL, v_dot},
    {"stablehlo.batch_matmul", {"lhs_type", "rhs_type"}, 1, A_NONE, NULL, v_batch},
    {"stablehlo.convolution", {"input_type", "filter_type"}, 1, A_CONV, "int8|int4", v_conv},
    {"stablehlo.add", {"lhs_type", "rhs_type"}, 0, A_NONE, "int8", v_add},
    {"stablehlo.residual_add", {"lhs_type", "rhs_type"}, 0, A_NONE, "int8", v_add},
    {"stablehlo.bias_add", {"input_type", "bias_type"}, 0, A_NONE, "int8", v_bias},
    {"stablehlo.mlp", {"input_type", "up_weight_type", "down_weight_type"}, 0, A_ACT, "int8", v_mlp},
    {"stablehlo.attention_qk", {"query_type", "key_type"}, 0, A_NONE, "int8|int4", v_qk},
    {"stablehlo.attention_av", {"weights_type", "value_type"}, 0, A_NONE, "int8|int4", v_av},
    {"stablehlo.transformer_block",
     {"input_type", "attention_weights_type", "value_type", "output_proj_type", "bias_type", "mlp_up_type",
      "mlp_down_type"},
     0, A_ACT, "int8", v_tblock},
    {"stablehlo.decoder_block",
     {"input_type", "norm1_type", "norm2_type", "q_weight_type", "k_weight_type", "v_weight_type",
      "attention_bias_type", "cos_type", "sin_type", "swiglu_up_type", "swiglu_gate_type", "swiglu_down_type"},
     0, A_SWIGLU, "", v_decoder},
};
#define NDEFS (sizeof DEFS / sizeof DEFS[0])

int sh_type_index(const sh_op *op, const char *name) {
    for (int i = 0; i < SH_MAXT && op->def->types[i]; i++)
        if (!strcmp(op->def->types[i], name)) return i;
    return -1;
}
const char *sh_type_name(const sh_op *op, int i) { return op->def->types[i]; }

json_t *sh_shape_json(const sh_type *t) {
    json_t *a = json_array();
    for (unsigned i = 0; i < t->rank; i++) json_array_append_new(a, json_integer(t->dim[i]));
    return a;
}

/* The contract table: dot/dot_general/batch_matmul have entries for all 13
 * precisions (batch_matmul through the precision overrides), the others for
 * the precisions their validator allows, decoder_block none. */
static const char *contract_list(const sh_opdef *d) { return d->contract ? d->contract : PREC13; }

/* ---- lowering plans ---- */

static int is_dot(const sh_op *op) { return op->def->validate == v_dot; }

void sh_plan_of(const sh_op *op, sh_plan *p) {
    memset(p, 0, sizeof *p);
    const char *pr = op->precision;
    const char *api = NULL;
    p->lowering_precision = pr;
    p->npk_prec = pr;
#define F2(a, b) (p->nf = 2, p->field[0] = a, p->field[1] = b)
    if (is_dot(op) || op->def->validate == v_batch) {
        F2("lhs", "rhs");
        p->type[0] = "lhs_type";
        p->type[1] = "rhs_type";
        if (!strcmp(pr, "int8") || !strcmp(pr, "int4")) {
            api = is_dot(op) ? "lower_matmul_smoke" : "lower_batch_matmul_smoke";
            p->npk_op = is_dot(op) ? "matmul" : "batch_matmul";
            p->mapped[0] = !strcmp(pr, "int8") ? "OP_GEMM_S8" : "OP_GEMM_S4";
        } else if (!strcmp(pr, "int2") || !strcmp(pr, "bitnet_int2")) {
            api = "lower_int2_matmul_smoke";
            p->npk_op = !strcmp(pr, "int2") ? "int2_matmul" : "bitnet_matmul";
            p->npk_prec = !strcmp(pr, "int2") ? "int2" : "ternary";
            p->mapped[0] = "OP_DOT16_S2";
        } else if (!strcmp(pr, "fp8_e4m3")) {
            api = "lower_fp8_matmul_smoke";
            p->npk_op = "fp8_matmul";
            p->mapped[0] = "OP_DOT4_FP8_E4M3";
        } else if (!strcmp(pr, "fp16") || !strcmp(pr, "float16")) {
            api = "lower_fp16_matmul_smoke";
            p->npk_op = "fp16_matmul";
            p->npk_prec = "fp16";
            p->mapped[0] = "OP_MUL_LO", p->mapped[1] = "OP_ADD";
        } else if (!strcmp(pr, "bf16") || !strcmp(pr, "bfloat16")) {
            api = "lower_bf16_matmul_smoke";
            p->npk_op = "bf16_matmul";
            p->npk_prec = "bf16";
            p->mapped[0] = "OP_MUL_LO", p->mapped[1] = "OP_ADD";
        } else if (!strcmp(pr, "sparse_int4_2_4")) {
            api = "lower_sparse_int4_matmul_smoke";
            p->npk_op = "sparse_int4_matmul";
            p->npk_prec = "int4";
            p->lowering_precision = "s4_2_4";
            p->nf = 3;
            p->field[1] = "rhs_nonzero";
            p->field[2] = "rhs_positions";
            p->type[1] = NULL;
            p->mapped[0] = "OP_SDOT4_S4_2_4", p->mapped[1] = "OP_ADD";
        } else if (lw_in_list("int4_group_scaled|group_scaled_int4|w4a8_gs", pr)) {
            api = "lower_group_scaled_int4_matmul_smoke";
            p->npk_op = "group_scaled_int4_matmul";
            p->npk_prec = "w4a8";
            p->nf = 4;
            p->field[2] = "scales_q8_8";
            p->field[3] = "group_size";
            p->mapped[0] = "OP_MUL_LO", p->mapped[1] = "OP_ADD";
        } else {
            api = "lower_matmul_smoke";
            p->npk_op = is_dot(op) ? "matmul" : "batch_matmul";
        }
        if (op->def->validate == v_batch && (!strcmp(pr, "int8") || !strcmp(pr, "int4")))
            api = "lower_batch_matmul_smoke";
    } else if (op->def->validate == v_conv) {
        api = "lower_conv2d_smoke";
        p->npk_op = "conv2d";
        F2("input", "filter");
        p->type[0] = "input_type", p->type[1] = "filter_type";
        p->mapped[0] = !strcmp(pr, "int4") ? "OP_GEMM_S4" : "OP_GEMM_S8";
    } else if (op->def->validate == v_add) {
        api = "lower_residual_add_smoke";
        p->npk_op = "residual_add";
        F2("lhs", "rhs");
        p->type[0] = "lhs_type", p->type[1] = "rhs_type";
        p->mapped[0] = "OP_ADD";
    } else if (op->def->validate == v_bias) {
        api = "lower_bias_add_smoke";
        p->npk_op = "bias_add";
        F2("input", "bias");
        p->type[0] = "input_type", p->type[1] = "bias_type";
        p->mapped[0] = "OP_ADD";
    } else if (op->def->validate == v_mlp) {
        api = "lower_mlp_smoke";
        p->npk_op = "mlp";
        p->nf = 3;
        p->field[0] = "input", p->field[1] = "up_weight", p->field[2] = "down_weight";
        p->type[0] = "input_type", p->type[1] = "up_weight_type", p->type[2] = "down_weight_type";
        p->mapped[0] = "OP_GEMM_S8", p->mapped[1] = "OP_VRELU_S8";
    } else if (op->def->validate == v_qk) {
        api = "lower_attention_qk_smoke";
        p->npk_op = "attention_qk";
        F2("query", "key");
        p->type[0] = "query_type", p->type[1] = "key_type";
        p->mapped[0] = !strcmp(pr, "int4") ? "OP_GEMM_S4" : "OP_GEMM_S8";
    } else if (op->def->validate == v_av) {
        api = "lower_attention_av_smoke";
        p->npk_op = "attention_av";
        F2("attention", "value");
        p->type[0] = "weights_type", p->type[1] = "value_type";
        p->mapped[0] = !strcmp(pr, "int4") ? "OP_GEMM_S4" : "OP_GEMM_S8";
    } else if (op->def->validate == v_tblock) {
        static const char *const f[6] = {"input", "attention", "value", "attention_bias", "mlp_up_weight",
                                         "mlp_down_weight"};
        static const char *const t[6] = {"input_type", "attention_weights_type", "value_type", "bias_type",
                                         "mlp_up_type", "mlp_down_type"};
        api = "lower_transformer_block_smoke";
        p->npk_op = "transformer_block";
        p->nf = 6;
        for (int i = 0; i < 6; i++) p->field[i] = f[i], p->type[i] = t[i];
        p->mapped[0] = "OP_GEMM_S8", p->mapped[1] = "OP_ADD", p->mapped[2] = "OP_VRELU_S8";
    } else {
        static const char *const f[12] = {"input",  "norm1_weight",     "norm2_weight",       "q_weight",
                                          "k_weight", "v_weight",       "attention_bias",     "cos",
                                          "sin",    "swiglu_up_weight", "swiglu_gate_weight", "swiglu_down_weight"};
        api = "lower_modern_decoder_block_smoke";
        p->npk_op = "modern_decoder_block";
        p->nf = 12;
        for (int i = 0; i < 12; i++) p->field[i] = f[i], p->type[i] = op->def->types[i];
    }
#undef F2
    p->runtime_api = api;
    const char *core = api + strlen("lower_");
    snprintf(p->schema, sizeof p->schema, "eliza.e1_npu_%.*s.v1", (int)strlen(core), core);
}

json_t *sh_lowering_plans(const npk_shlo *m) {
    json_t *a = json_array();
    for (size_t i = 0; i < m->nops; i++) {
        const sh_op *op = &m->ops[i];
        sh_plan p;
        sh_plan_of(op, &p);
        json_t *o = json_object(), *f = json_array();
        json_object_set_new(o, "op_name", json_string(op->name));
        json_object_set_new(o, "source_op", json_string(op->def->kind));
        json_object_set_new(o, "source_precision", json_string(op->precision));
        json_object_set_new(o, "runtime_api", json_string(p.runtime_api));
        json_object_set_new(o, "schema", json_string(p.schema));
        json_object_set_new(o, "lowering_precision", json_string(p.lowering_precision));
        json_object_set_new(o, "input_shape", sh_shape_json(&op->t[0]));
        json_object_set_new(o, "output_shape", sh_shape_json(&op->result));
        for (unsigned k = 0; k < p.nf; k++) json_array_append_new(f, json_string(p.field[k]));
        json_object_set_new(o, "required_graph_fields", f);
        json_array_append_new(a, o);
    }
    return a;
}

/* ---- parsing ---- */

static int parse_type(json_t *v, sh_type *t, const char *op, const char *field) {
    memset(t, 0, sizeof *t);
    if (!json_is_object(v)) return npk_err(NPK_EFORMAT, "op '%s': %s must be a mapping with shape/dtype", op, field);
    json_t *shape = json_object_get(v, "shape"), *dt = json_object_get(v, "dtype");
    if (!json_is_array(shape) || !json_array_size(shape))
        return npk_err(NPK_EFORMAT, "op '%s': %s requires a non-empty shape list", op, field);
    if (json_array_size(shape) > SH_MAXRANK)
        return npk_err(NPK_EFORMAT, "op '%s': %s has rank %zu (npukit reads at most %d dimensions)", op, field,
                       json_array_size(shape), SH_MAXRANK);
    unsigned long long numel = 1;
    for (size_t i = 0; i < json_array_size(shape); i++) {
        json_t *d = json_array_get(shape, i);
        if (!json_is_integer(d) || json_integer_value(d) <= 0)
            return npk_err(NPK_EFORMAT, "op '%s': %s shape must contain positive integers", op, field);
        if (json_integer_value(d) > (1 << 24))
            return npk_err(NPK_EFORMAT, "op '%s': %s dimension %lld is over npukit's limit 2^24", op, field,
                           (long long)json_integer_value(d));
        t->dim[i] = (unsigned)json_integer_value(d);
        numel *= t->dim[i];
        if (numel > (1ull << 28))
            return npk_err(NPK_EFORMAT, "op '%s': %s has over 2^28 elements (npukit's limit)", op, field);
    }
    t->rank = (unsigned)json_array_size(shape);
    if (!json_is_string(dt) || !json_string_length(dt) || json_string_length(dt) >= sizeof t->dtype)
        return npk_err(NPK_EFORMAT, "op '%s': %s dtype must be a non-empty string (< 32 chars)", op, field);
    snprintf(t->dtype, sizeof t->dtype, "%s", json_string_value(dt));
    t->present = 1;
    return 0;
}

static int parse_str(json_t *o, const char *key, const char *def, char *buf, size_t len, const char *op) {
    json_t *v = json_object_get(o, key);
    if (!v && def) {
        snprintf(buf, len, "%s", def);
        return 0;
    }
    if (!json_is_string(v) || !json_string_length(v) || json_string_length(v) >= len)
        return npk_err(NPK_EFORMAT, "op '%s': %s must be a non-empty string (< %zu chars)", op, key, len);
    snprintf(buf, len, "%s", json_string_value(v));
    return 0;
}

static int parse_int(json_t *o, const char *key, long long def, long long *out, const char *op) {
    json_t *v = json_object_get(o, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v)) return npk_err(NPK_EFORMAT, "op '%s': %s must be an integer", op, key);
    *out = (long long)json_integer_value(v);
    return 0;
}

static int parse_op(json_t *e, sh_op *op, size_t idx) {
    memset(op, 0, sizeof *op);
    if (!json_is_object(e)) return npk_err(NPK_EFORMAT, "op %zu: each op entry must be a mapping", idx);
    json_t *k = json_object_get(e, "op");
    if (!json_is_string(k)) return npk_err(NPK_EFORMAT, "op %zu: op entry missing 'op' field", idx);
    const char *kind = json_string_value(k);
    json_t *nm = json_object_get(e, "name");
    if (!json_is_string(nm) || !json_string_length(nm))
        return npk_err(NPK_EFORMAT, "op %zu: %s op entry missing non-empty 'name'", idx, kind);
    if (json_string_length(nm) >= 64)
        return npk_err(NPK_EFORMAT, "op %zu: name '%.40s...' is over npukit's 63 characters", idx, json_string_value(nm));
    snprintf(op->name, sizeof op->name, "%s", json_string_value(nm));
    for (size_t i = 0; i < NDEFS; i++)
        if (!strcmp(DEFS[i].kind, kind)) op->def = &DEFS[i];
    int rc = parse_type(json_object_get(e, "result_type"), &op->result, op->name, "result_type");
    if (rc) return rc;
    if (!op->def) return npk_err(NPK_EFORMAT, "op '%s': unsupported op '%s'", op->name, kind);
    for (int i = 0; i < SH_MAXT && op->def->types[i]; i++)
        if ((rc = parse_type(json_object_get(e, op->def->types[i]), &op->t[i], op->name, op->def->types[i]))) return rc;
    if ((rc = parse_str(e, "precision", op->def->prec_required ? NULL : "int8", op->precision, sizeof op->precision,
                        op->name)))
        return rc;
    if (op->def->attrs == A_CONV) {
        if ((rc = parse_str(e, "padding", "VALID", op->padding, sizeof op->padding, op->name)) ||
            (rc = parse_int(e, "stride", 1, &op->stride, op->name)) ||
            (rc = parse_int(e, "dilation", 1, &op->dilation, op->name)))
            return rc;
    } else if (op->def->attrs == A_ACT) {
        if ((rc = parse_str(e, "activation", NULL, op->activation, sizeof op->activation, op->name))) return rc;
    } else if (op->def->attrs == A_SWIGLU) {
        if ((rc = parse_str(e, "swiglu_activation", "linear_gate", op->activation, sizeof op->activation, op->name)))
            return rc;
    }
    return 0;
}

static int is_schema(json_t *root, const char *schema) {
    json_t *s = json_is_object(root) ? json_object_get(root, "schema") : NULL;
    return json_is_string(s) && !strcmp(json_string_value(s), schema);
}

int npk_shlo_is_module(const char *text) {
    json_t *j;
    if (sh_load_text(text, &j)) return 0;
    int r = is_schema(j, NPK_SHLO_SCHEMA);
    json_decref(j);
    return r;
}

int npk_e1_is_package(const char *text) {
    json_t *j = json_loads(text, 0, NULL);
    int r = is_schema(j, NPK_E1_PACKAGE_SCHEMA);
    json_decref(j);
    return r;
}

void npk_shlo_free(npk_shlo *m) {
    if (!m) return;
    json_decref(m->root);
    json_decref(m->data);
    free(m->ops);
    free(m->issues);
    free(m);
}

/* Validate the module: MODULE_EMPTY on the module name, DUPLICATE_OP_NAME on
 * the later op before that op's own codes. The per-op issues are collected
 * by classify(); the module-level ones are interleaved here in order. */
static void validate(npk_shlo *m) {
    if (!m->nops) issue(m, NULL, "MODULE_EMPTY", "module must contain at least one op");
    for (size_t i = 0; i < m->nops; i++) {
        sh_op *op = &m->ops[i];
        for (size_t j = 0; j < i; j++)
            if (!strcmp(m->ops[j].name, op->name)) {
                issue(m, op, "DUPLICATE_OP_NAME", "module contains duplicate op name '%s'", op->name);
                break;
            }
        /* the op's own codes and its classification */
        size_t before = m->nissues;
        op->def->validate(op, m);
        sh_plan p;
        sh_plan_of(op, &p);
        const char *first = NULL;
        for (size_t k = before; k < m->nissues; k++) first = first ? first : m->issues[k].code;
        if (!lw_in_list(contract_list(op->def), op->precision)) {
            op->supported = 0;
            op->runtime_api = NULL;
            snprintf(op->reason, sizeof op->reason, "NO_CONTRACT_ENTRY_FOR_%s_%s", op->def->kind, op->precision);
        } else if (first) {
            op->supported = 0;
            op->runtime_api = p.runtime_api;
            snprintf(op->reason, sizeof op->reason, "%s", first);
        } else {
            op->supported = 1;
            op->runtime_api = p.runtime_api;
            snprintf(op->reason, sizeof op->reason, "SUPPORTED");
        }
    }
}

static int bind_value(npk_shlo *m, const char *key, json_t *v, const char *what);

int npk_shlo_parse(npk_shlo **out, const char *text) {
    *out = NULL;
    npk_shlo *m = calloc(1, sizeof *m);
    if (!m) return npk_err(NPK_ENOMEM, "out of memory");
    int rc = sh_load_text(text, &m->root);
    if (rc) goto fail;
    json_t *r = m->root;
    if (!json_is_object(r)) {
        rc = npk_err(NPK_EFORMAT, "payload must decode to a mapping");
        goto fail;
    }
    json_t *s = json_object_get(r, "schema");
    if (!is_schema(r, NPK_SHLO_SCHEMA)) {
        rc = npk_err(NPK_EFORMAT, "unsupported schema '%s' (expected %s)", json_is_string(s) ? json_string_value(s) : "",
                     NPK_SHLO_SCHEMA);
        goto fail;
    }
    json_t *nm = json_object_get(r, "name");
    if (!json_is_string(nm) || !json_string_length(nm) || json_string_length(nm) >= sizeof m->name) {
        rc = npk_err(NPK_EFORMAT, "module name must be a non-empty string (< %zu chars)", sizeof m->name);
        goto fail;
    }
    snprintf(m->name, sizeof m->name, "%s", json_string_value(nm));
    json_t *ops = json_object_get(r, "ops");
    if (!json_is_array(ops)) {
        rc = npk_err(NPK_EFORMAT, "module 'ops' must be a list");
        goto fail;
    }
    m->nops = json_array_size(ops);
    m->ops = calloc(m->nops + 1, sizeof *m->ops);
    m->data = json_object();
    if (!m->ops || !m->data) {
        rc = npk_err(NPK_ENOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < m->nops; i++)
        if ((rc = parse_op(json_array_get(ops, i), &m->ops[i], i))) goto fail;
    validate(m);
    /* npukit extension: tensor data in the module */
    json_t *tens = json_object_get(r, "tensors");
    if (tens) {
        if (!json_is_object(tens)) {
            rc = npk_err(NPK_EFORMAT, "module 'tensors' must be a mapping");
            goto fail;
        }
        const char *key;
        json_t *v;
        json_object_foreach(tens, key, v) {
            if ((rc = bind_value(m, key, v, "module tensors"))) goto fail;
        }
    }
    *out = m;
    return 0;
fail:
    npk_shlo_free(m);
    return rc;
}

size_t npk_shlo_issue_count(const npk_shlo *m) { return m->nissues; }
void npk_shlo_issue(const npk_shlo *m, size_t i, const char **op_name, const char **op_kind, const char **code,
                    const char **message) {
    const sh_issue *is = &m->issues[i];
    if (op_name) *op_name = is->op_name;
    if (op_kind) *op_kind = is->op_kind;
    if (code) *code = is->code;
    if (message) *message = is->message;
}

json_t *sh_issues_json(const npk_shlo *m) {
    json_t *a = json_array();
    for (size_t i = 0; i < m->nissues; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "op_name", json_string(m->issues[i].op_name));
        json_object_set_new(o, "op_kind", json_string(m->issues[i].op_kind));
        json_object_set_new(o, "code", json_string(m->issues[i].code));
        json_object_set_new(o, "message", json_string(m->issues[i].message));
        json_array_append_new(a, o);
    }
    return a;
}

int npk_shlo_check_module(const npk_shlo *m) {
    char buf[512];
    size_t o = 0;
    buf[0] = 0;
    for (size_t i = 0; i < m->nissues; i++) {
        const sh_issue *is = &m->issues[i];
        if (strcmp(is->code, "MODULE_EMPTY") && strcmp(is->code, "DUPLICATE_OP_NAME")) continue;
        if (o < sizeof buf - 1)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s:%s (%s)", o ? "; " : "", is->op_name, is->code,
                                  is->message);
    }
    if (o) return npk_err(NPK_EINVAL, "module '%s' is rejected: %s", m->name, buf);
    return 0;
}

/* ---- tensor binding ---- */

static const sh_op *find_op(const npk_shlo *m, const char *name, size_t len) {
    for (size_t i = 0; i < m->nops; i++)
        if (strlen(m->ops[i].name) == len && !strncmp(m->ops[i].name, name, len)) return &m->ops[i];
    return NULL;
}

/* The graph fields of op (and attention_av's "weights" alias). */
static const char *canonical_field(const sh_op *op, const char *f) {
    sh_plan p;
    sh_plan_of(op, &p);
    if (op->def->validate == v_av && !strcmp(f, "weights")) f = "attention";
    for (unsigned i = 0; i < p.nf; i++)
        if (!strcmp(p.field[i], f)) return p.field[i];
    return NULL;
}

static int bind_value(npk_shlo *m, const char *key, json_t *v, const char *what) {
    const char *dot = strrchr(key, '.');
    if (!dot) {
        /* {"OP": {"FIELD": data}} */
        if (!json_is_object(v))
            return npk_err(NPK_EINVAL, "%s: '%s': expected OP.FIELD or a mapping of the op's fields", what, key);
        const char *f;
        json_t *fv;
        json_object_foreach(v, f, fv) {
            char k2[256];
            int kn = snprintf(k2, sizeof k2, "%s.%s", key, f);
            if (kn < 0 || (size_t)kn >= sizeof k2) return npk_err(NPK_EINVAL, "%s: name too long", what);
            int rc = bind_value(m, k2, fv, what);
            if (rc) return rc;
        }
        return 0;
    }
    const sh_op *op = find_op(m, key, (size_t)(dot - key));
    if (!op) return npk_err(NPK_EINVAL, "%s: '%s' names no op of module '%s'", what, key, m->name);
    const char *f = canonical_field(op, dot + 1);
    if (!f) {
        sh_plan p;
        sh_plan_of(op, &p);
        char list[256] = "";
        size_t o = 0;
        for (unsigned i = 0; i < p.nf && o < sizeof list - 1; i++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", p.field[i]);
        return npk_err(NPK_EINVAL, "%s: '%s': op '%s' (%s, %s) has no graph field '%s' (fields: %s)", what, key, op->name,
                       op->def->kind, op->precision, dot + 1, list);
    }
    if (!json_is_array(v) && !json_is_string(v) && !json_is_integer(v))
        return npk_err(NPK_EINVAL, "%s: '%s': expected a nested integer array, an integer or a tensor name", what, key);
    char k2[256];
    snprintf(k2, sizeof k2, "%s.%s", op->name, f);
    json_object_set(m->data, k2, v);
    return 0;
}

int npk_shlo_bind(npk_shlo *m, const char *text, const char *what) {
    json_t *j;
    int rc = sh_load_text(text, &j);
    if (rc) return npk_err_prefix(rc, "%s", what);
    if (!json_is_object(j)) {
        json_decref(j);
        return npk_err(NPK_EINVAL, "%s: expected a mapping of OP.FIELD (or OP: {FIELD: ...}) to tensor data", what);
    }
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        if ((rc = bind_value(m, key, v, what))) break;
    }
    json_decref(j);
    return rc;
}

/* Shape of a nested integer array (rank 0 when it is not one). */
static unsigned data_shape(json_t *v, unsigned *dims) {
    unsigned r = 0;
    while (json_is_array(v) && r < SH_MAXRANK) {
        dims[r++] = (unsigned)json_array_size(v);
        if (!json_array_size(v)) break;
        v = json_array_get(v, 0);
    }
    return r;
}

/* ---- the npukit lowering module ---- */

int npk_shlo_to_lower_json(const npk_shlo *m, char **json) {
    *json = NULL;
    int rc = npk_shlo_check_module(m);
    if (rc) return rc;
    json_t *mod = json_object(), *ops = json_array();
    json_object_set_new(mod, "module", json_string(m->name));
    json_object_set_new(mod, "comment", json_string("translated from " NPK_SHLO_SCHEMA " by npukit"));
    json_object_set_new(mod, "ops", ops);
    for (size_t i = 0; i < m->nops && !rc; i++) {
        const sh_op *op = &m->ops[i];
        sh_plan p;
        sh_plan_of(op, &p);
        if (strchr(op->name, '.')) {
            rc = npk_err(NPK_EINVAL, "op '%s': npukit op names cannot contain '.' (it separates OP.FIELD)", op->name);
            break;
        }
        json_t *r = json_object();
        json_array_append_new(ops, r);
        json_object_set_new(r, "name", json_string(op->name));
        json_object_set_new(r, "op", json_string(p.npk_op));
        json_object_set_new(r, "precision", json_string(p.npk_prec));
        if (!op->supported) json_object_set_new(r, "cpu_fallback", json_string(op->reason));
        for (unsigned k = 0; k < p.nf; k++) {
            char key[256];
            snprintf(key, sizeof key, "%s.%s", op->name, p.field[k]);
            json_t *v = json_object_get(m->data, key);
            if (!v) {
                rc = npk_err(NPK_EINVAL,
                             "op '%s': no data for graph field '%s' (bind %s in the module's tensors or with --tensors)",
                             op->name, p.field[k], key);
                break;
            }
            /* a name of another bound tensor is inlined; "OP"/"OP.result" stays a reference */
            for (int hops = 0; json_is_string(v) && json_object_get(m->data, json_string_value(v)) && hops < 16; hops++)
                v = json_object_get(m->data, json_string_value(v));
            if (json_is_array(v) && p.type[k]) {
                int ti = sh_type_index(op, p.type[k]);
                unsigned dims[SH_MAXRANK];
                unsigned rank = data_shape(v, dims);
                sh_type t;
                t.rank = rank;
                memcpy(t.dim, dims, sizeof dims);
                if (ti >= 0 && !shape_eq(&t, &op->t[ti])) {
                    char a[96], b[96];
                    rc = npk_err(NPK_EINVAL, "op '%s': data for '%s' has shape %s but %s declares %s", op->name,
                                 p.field[k], shape_str(&t, a, sizeof a), p.type[k], shape_str(&op->t[ti], b, sizeof b));
                    break;
                }
            }
            json_object_set(r, p.field[k], v);
        }
        if (rc) break;
        /* static graph fields of the plan */
        if (op->def->attrs == A_CONV) {
            json_t *st = json_array(), *di = json_array();
            json_array_append_new(st, json_integer(op->stride));
            json_array_append_new(st, json_integer(op->stride));
            json_array_append_new(di, json_integer(op->dilation));
            json_array_append_new(di, json_integer(op->dilation));
            json_object_set_new(r, "padding", json_string(op->padding));
            json_object_set_new(r, "strides", st);
            json_object_set_new(r, "dilations", di);
        } else if (op->def->validate == v_mlp) {
            json_object_set_new(r, "activation", json_string(op->activation));
            json_object_set_new(r, "requant_shift", json_integer(0));
        } else if (op->def->validate == v_tblock) {
            json_object_set_new(r, "requant_shift", json_integer(0));
        } else if (op->def->validate == v_decoder) {
            json_object_set_new(r, "attention_mask_mode", json_string("full"));
            json_object_set_new(r, "projection_shift", json_integer(0));
            json_object_set_new(r, "rms_epsilon", json_integer(1));
            json_object_set_new(r, "rms_inv_shift", json_integer(8));
            json_object_set_new(r, "rms_output_shift", json_integer(8));
            json_object_set_new(r, "rope_scale_shift", json_integer(7));
            json_object_set_new(r, "swiglu_activation", json_string(op->activation));
            json_object_set_new(r, "swiglu_requant_shift", json_integer(0));
            json_object_set_new(r, "swiglu_gate_shift", json_integer(0));
        }
    }
    if (!rc) {
        *json = json_dumps(mod, JSON_COMPACT);
        if (!*json) rc = npk_err(NPK_ENOMEM, "out of memory");
    }
    json_decref(mod);
    return rc;
}
