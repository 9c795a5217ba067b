// SPDX-License-Identifier: MIT
/* Element-wise, normalisation, activation, MLP, convolution (direct),
 * attention, KV-cache and block lowerings on the e1 NPU. */
#include "e1_lower_int.h"

#include <stdlib.h>

#define CK(x)                 \
    do {                      \
        if ((rc = (x))) goto done; \
    } while (0)
#define NEED(p)                              \
    do {                                     \
        if (!(p)) {                          \
            rc = -NPK_ENOMEM;                \
            goto done;                       \
        }                                    \
    } while (0)

/* clamp8(ADD(a, b)) */
static int add8(npk_lower *L, int32_t a, int32_t b, int32_t *out) {
    uint32_t r;
    int rc = lw_scalar(L, E1_OP_ADD, (uint32_t)a, (uint32_t)b, 0, 0, &r);
    if (!rc) *out = npk_clamp8((int32_t)r);
    return rc;
}

static int mul(npk_lower *L, int32_t a, int32_t b, int32_t *out) {
    uint32_t r;
    int rc = lw_scalar(L, E1_OP_MUL_LO, (uint32_t)a, (uint32_t)b, 0, 0, &r);
    if (!rc) *out = (int32_t)r;
    return rc;
}

/* EXP2 piecewise sigmoid of s (Q0.8): decay = EXP2(-|s|), s >= 0: SUB(256, decay >> 1). */
static int sigmoid(npk_lower *L, int64_t s, int32_t *sig) {
    int64_t delta = s < 0 ? s : -s;
    if (delta < -128) {
        delta = -128; /* outside EXP2's int8 input: 2^-128 and 2^-8 both give the floor value 1 */
        L->host |= NPK_HOST_CLAMPS_EXP2_DELTA;
    }
    uint32_t decay, r;
    int rc = lw_scalar(L, E1_OP_EXP2_NEG_Q0_8, (uint32_t)(int32_t)delta, 0, 0, 0, &decay);
    if (rc) return rc;
    if (s >= 0) {
        if ((rc = lw_scalar(L, E1_OP_SUB, 256, decay >> 1, 0, 0, &r))) return rc;
        *sig = (int32_t)r;
    } else {
        *sig = (int32_t)(decay >> 1);
    }
    return 0;
}

static int silu_elem(npk_lower *L, int32_t x, int32_t *out, int32_t *sig) {
    int32_t s, p;
    int rc = sigmoid(L, x, &s);
    if (!rc) rc = mul(L, x, s, &p);
    if (rc) return rc;
    if (sig) *sig = s;
    *out = npk_clamp8(npk_asr(p, 8));
    return 0;
}

static void requant(const int32_t *in, int32_t *out, size_t n, unsigned shift) {
    for (size_t i = 0; i < n; i++) out[i] = npk_clamp8(npk_asr(in[i], shift));
}

/* ---- direct convolutions ---- */

#define IX4(t, a, b, c, d) ((((size_t)(a) * (t)->dim[1] + (b)) * (t)->dim[2] + (c)) * (t)->dim[3] + (d))

int npk_lower_depthwise_conv2d(npk_lower *L, const npk_ltensor *input, const npk_ltensor *filter,
                               npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "depthwise_conv2d", out, golden, ev, g, npk_golden_depthwise_conv2d(input, filter, g));
    unsigned KH = filter->dim[0], KW = filter->dim[1], C = input->dim[3], Mu = filter->dim[3];
    unsigned OH = input->dim[1] - KH + 1, OW = input->dim[2] - KW + 1;
    unsigned d[4] = {1, OH, OW, C * Mu};
    int rc = 0;
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I32, 4, d);
    NEED(r);
    for (unsigned y = 0; y < OH; y++)
        for (unsigned x = 0; x < OW; x++)
            for (unsigned c = 0; c < C; c++)
                for (unsigned m = 0; m < Mu; m++) {
                    uint32_t acc = 0;
                    for (unsigned fy = 0; fy < KH; fy++)
                        for (unsigned fx = 0; fx < KW; fx++) {
                            int32_t p;
                            CK(mul(L, input->data[IX4(input, 0, y + fy, x + fx, c)], filter->data[IX4(filter, fy, fx, c, m)],
                                   &p));
                            CK(lw_scalar(L, E1_OP_ADD, acc, (uint32_t)p, 0, 0, &acc));
                        }
                    r->data[IX4(r, 0, y, x, c * Mu + m)] = (int32_t)acc;
                }
done:
    return lw_close(&op, rc);
}

int npk_lower_grouped_conv2d(npk_lower *L, const npk_ltensor *input, const npk_ltensor *filter, unsigned groups,
                             npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "grouped_conv2d", out, golden, ev, g, npk_golden_grouped_conv2d(input, filter, groups, g));
    unsigned KH = filter->dim[0], KW = filter->dim[1], C = input->dim[3], O = filter->dim[3];
    unsigned ipg = C / groups, opg = O / groups;
    unsigned OH = input->dim[1] - KH + 1, OW = input->dim[2] - KW + 1;
    unsigned d[4] = {1, OH, OW, O};
    int rc = 0;
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I32, 4, d);
    NEED(r);
    for (unsigned y = 0; y < OH; y++)
        for (unsigned x = 0; x < OW; x++)
            for (unsigned o = 0; o < O; o++) {
                unsigned grp = o / opg;
                uint32_t acc = 0;
                for (unsigned fy = 0; fy < KH; fy++)
                    for (unsigned fx = 0; fx < KW; fx++)
                        for (unsigned ic = 0; ic < ipg; ic++) {
                            int32_t p;
                            CK(mul(L, input->data[IX4(input, 0, y + fy, x + fx, grp * ipg + ic)],
                                   filter->data[IX4(filter, fy, fx, ic, o)], &p));
                            CK(lw_scalar(L, E1_OP_ADD, acc, (uint32_t)p, 0, 0, &acc));
                        }
                r->data[IX4(r, 0, y, x, o)] = (int32_t)acc;
            }
done:
    return lw_close(&op, rc);
}

/* ---- element-wise ---- */

/* result[i] = clamp8(ADD(lhs[i], rhs[i % rhs_period])) */
static int add8_all(npk_lower *L, const npk_ltensor *lhs, const npk_ltensor *rhs, size_t rhs_period,
                    npk_lower_out *out) {
    int rc = 0;
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I8, 2, lhs->dim);
    NEED(r);
    L->host |= NPK_HOST_SATURATES_INT8;
    for (size_t i = 0; i < npk_lt_numel(lhs); i++) CK(add8(L, lhs->data[i], rhs->data[i % rhs_period], &r->data[i]));
done:
    return rc;
}

int npk_lower_bias_add(npk_lower *L, const npk_ltensor *input, const npk_ltensor *bias, npk_lower_out *out,
                       npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "bias_add", out, golden, ev, g, npk_golden_bias_add(input, bias, g));
    L->host |= NPK_HOST_BROADCASTS_BIAS;
    return lw_close(&op, add8_all(L, input, bias, input->dim[1], out));
}

int npk_lower_residual_add(npk_lower *L, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *out,
                           npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "residual_add", out, golden, ev, g, npk_golden_residual_add(lhs, rhs, g));
    return lw_close(&op, add8_all(L, lhs, rhs, npk_lt_numel(rhs), out));
}

int npk_lower_rope(npk_lower *L, const npk_ltensor *input, const npk_ltensor *cos, const npk_ltensor *sin,
                   unsigned shift, npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "rope", out, golden, ev, g, npk_golden_rope(input, cos, sin, shift, g));
    int rc = 0;
    unsigned T = input->dim[0], D = input->dim[1];
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I8, 2, input->dim);
    NEED(r);
    for (unsigned t = 0; t < T; t++)
        for (unsigned p = 0; p < D / 2; p++) {
            int32_t e = input->data[t * D + 2 * p], o = input->data[t * D + 2 * p + 1], c = cos->data[p],
                    s = sin->data[p], ec, os, es, oc;
            uint32_t re, ro;
            CK(mul(L, e, c, &ec));
            CK(mul(L, o, s, &os));
            CK(mul(L, e, s, &es));
            CK(mul(L, o, c, &oc));
            CK(lw_scalar(L, E1_OP_SUB, (uint32_t)ec, (uint32_t)os, 0, 0, &re));
            CK(lw_scalar(L, E1_OP_ADD, (uint32_t)es, (uint32_t)oc, 0, 0, &ro));
            r->data[t * D + 2 * p] = npk_clamp8(npk_asr((int32_t)re, shift));
            r->data[t * D + 2 * p + 1] = npk_clamp8(npk_asr((int32_t)ro, shift));
        }
    L->host |= NPK_HOST_REQUANTIZES;
done:
    return lw_close(&op, rc);
}

static uint64_t isqrt_u64(uint64_t v) {
    uint64_t r = 0;
    for (int b = 31; b >= 0; b--) {
        uint64_t c = r | (uint64_t)1 << b;
        if (c * c <= v) r = c;
    }
    return r;
}

int npk_lower_rmsnorm(npk_lower *L, const npk_ltensor *input, const npk_ltensor *weight,
                      const npk_rmsnorm_params *p, npk_lower_out *out, npk_lower_out *golden,
                      npk_lower_evidence *ev) {
    npk_rmsnorm_params def;
    if (!p) {
        npk_rmsnorm_params_default(&def);
        p = &def;
    }
    LW_OPEN(op, L, "rmsnorm", out, golden, ev, g, npk_golden_rmsnorm(input, weight, p, g));
    int rc = 0;
    unsigned T = input->dim[0], D = input->dim[1], dt[1] = {T};
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I8, 2, input->dim);
    npk_ltensor *ss = npk_out_add(out, "sum_squares", NPK_LD_I32, 1, dt);
    npk_ltensor *rms = npk_out_add(out, "rms", NPK_LD_I32, 1, dt);
    npk_ltensor *inv = npk_out_add(out, "inv_rms", NPK_LD_I32, 1, dt);
    NEED(r && ss && rms && inv);
    L->host |= NPK_HOST_COMPUTES_RECIPROCAL_RMS | NPK_HOST_REQUANTIZES;
    for (unsigned t = 0; t < T; t++) {
        const int32_t *x = input->data + (size_t)t * D;
        uint32_t sum = 0;
        for (unsigned j = 0; j < D; j++) {
            int32_t sq;
            CK(mul(L, x[j], x[j], &sq));
            CK(lw_scalar(L, E1_OP_ADD, sum, (uint32_t)sq, 0, 0, &sum));
        }
        /* host: mean = ceil(sum / D), rms = max(1, isqrt(mean + eps)), inv = (1 << s) / rms */
        int64_t mean = ((int64_t)(int32_t)sum + D - 1) / D;
        int64_t root = (int64_t)isqrt_u64((uint64_t)(mean + p->epsilon));
        if (root < 1) root = 1;
        int64_t iv = ((int64_t)1 << p->inv_rms_shift) / root;
        ss->data[t] = (int32_t)sum;
        rms->data[t] = (int32_t)root;
        inv->data[t] = npk_wrap32(iv);
        for (unsigned j = 0; j < D; j++) {
            int32_t w, sc;
            CK(mul(L, x[j], weight->data[j], &w));
            CK(mul(L, w, (int32_t)(uint32_t)iv, &sc));
            r->data[(size_t)t * D + j] = npk_clamp8(npk_asr(sc, p->output_shift));
        }
    }
done:
    return lw_close(&op, rc);
}

int npk_lower_silu(npk_lower *L, const npk_ltensor *input, npk_lower_out *out, npk_lower_out *golden,
                   npk_lower_evidence *ev) {
    LW_OPEN(op, L, "silu", out, golden, ev, g, npk_golden_silu(input, g));
    int rc = 0;
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I8, 2, input->dim);
    npk_ltensor *sg = npk_out_add(out, "sigmoid", NPK_LD_Q0_8, 2, input->dim);
    NEED(r && sg);
    L->host |= NPK_HOST_REQUANTIZES;
    for (size_t i = 0; i < npk_lt_numel(input); i++) CK(silu_elem(L, input->data[i], &r->data[i], &sg->data[i]));
done:
    return lw_close(&op, rc);
}

int npk_lower_gelu(npk_lower *L, const npk_ltensor *input, npk_lower_out *out, npk_lower_out *golden,
                   npk_lower_evidence *ev) {
    LW_OPEN(op, L, "gelu", out, golden, ev, g, npk_golden_gelu(input, g));
    int rc = 0;
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I8, 2, input->dim);
    npk_ltensor *sc = npk_out_add(out, "scaled", NPK_LD_I32, 2, input->dim);
    npk_ltensor *sg = npk_out_add(out, "sigmoid", NPK_LD_Q0_8, 2, input->dim);
    NEED(r && sc && sg);
    L->host |= NPK_HOST_REQUANTIZES;
    for (size_t i = 0; i < npk_lt_numel(input); i++) {
        int32_t x = input->data[i], xs, s, p;
        CK(mul(L, x, 218, &xs)); /* 1.703125 * x in Q.7 */
        s = (int32_t)npk_asr(xs, 7);
        CK(sigmoid(L, s, &sg->data[i]));
        CK(mul(L, x, sg->data[i], &p));
        sc->data[i] = s;
        r->data[i] = npk_clamp8(npk_asr(p, 8));
    }
done:
    return lw_close(&op, rc);
}

/* ---- MLPs ---- */

int npk_lower_mlp(npk_lower *L, const npk_ltensor *input, const npk_ltensor *up_weight,
                  const npk_ltensor *down_weight, unsigned requant_shift, npk_lower_out *out, npk_lower_out *golden,
                  npk_lower_evidence *ev) {
    LW_OPEN(op, L, "mlp", out, golden, ev, g, npk_golden_mlp(input, up_weight, down_weight, requant_shift, g));
    int rc = 0;
    unsigned T = input->dim[0], D = input->dim[1], F = up_weight->dim[1], O = down_weight->dim[1];
    unsigned dr[2] = {T, O}, dh[2] = {T, F};
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I32, 2, dr);
    npk_ltensor *acc = npk_out_add(out, "hidden_acc", NPK_LD_I32, 2, dh);
    npk_ltensor *h = npk_out_add(out, "hidden", NPK_LD_I8, 2, dh);
    npk_ltensor *hr = npk_out_add(out, "hidden_relu", NPK_LD_I8, 2, dh);
    NEED(r && acc && h && hr);
    CK(lw_gemm(L, 0, T, D, F, input->data, up_weight->data, acc->data));
    requant(acc->data, h->data, (size_t)T * F, requant_shift);
    L->host |= NPK_HOST_REQUANTIZES;
    CK(lw_relu(L, h->data, hr->data, (size_t)T * F));
    CK(lw_gemm(L, 0, T, F, O, hr->data, down_weight->data, r->data));
done:
    return lw_close(&op, rc);
}

int npk_lower_swiglu(npk_lower *L, const npk_ltensor *input, const npk_ltensor *up_weight,
                     const npk_ltensor *gate_weight, const npk_ltensor *down_weight, const npk_swiglu_params *p,
                     npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev) {
    npk_swiglu_params def;
    if (!p) {
        npk_swiglu_params_default(&def);
        p = &def;
    }
    LW_OPEN(op, L, "swiglu", out, golden, ev, g, npk_golden_swiglu(input, up_weight, gate_weight, down_weight, p, g));
    int rc = 0;
    unsigned T = input->dim[0], D = input->dim[1], F = up_weight->dim[1], O = down_weight->dim[1];
    unsigned dr[2] = {T, O}, dh[2] = {T, F};
    size_t n = (size_t)T * F;
    int32_t *tmp = malloc(n * sizeof *tmp);
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I32, 2, dr);
    npk_ltensor *up = npk_out_add(out, "up", NPK_LD_I8, 2, dh);
    npk_ltensor *gate = npk_out_add(out, "gate", NPK_LD_I8, 2, dh);
    npk_ltensor *ga = npk_out_add(out, "gate_act", NPK_LD_I8, 2, dh);
    npk_ltensor *hid = npk_out_add(out, "hidden", NPK_LD_I8, 2, dh);
    NEED(tmp && r && up && gate && ga && hid);
    CK(lw_gemm(L, 0, T, D, F, input->data, up_weight->data, tmp));
    requant(tmp, up->data, n, p->requant_shift);
    CK(lw_gemm(L, 0, T, D, F, input->data, gate_weight->data, tmp));
    requant(tmp, gate->data, n, p->requant_shift);
    L->host |= NPK_HOST_REQUANTIZES;
    for (size_t i = 0; i < n; i++) {
        if (p->silu) CK(silu_elem(L, gate->data[i], &ga->data[i], NULL));
        else ga->data[i] = gate->data[i];
        int32_t prod;
        CK(mul(L, up->data[i], ga->data[i], &prod));
        hid->data[i] = npk_clamp8(npk_asr(prod, p->gate_shift));
    }
    CK(lw_gemm(L, 0, T, F, O, hid->data, down_weight->data, r->data));
done:
    free(tmp);
    return lw_close(&op, rc);
}

/* ---- attention ---- */

int npk_lower_attention_softmax(npk_lower *L, const npk_ltensor *logits, const npk_ltensor *mask,
                                npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "attention_softmax", out, golden, ev, g, npk_golden_attention_softmax(logits, mask, g));
    int rc = 0;
    unsigned rows = logits->dim[0] * logits->dim[1] * logits->dim[2], Tk = logits->dim[3];
    unsigned dr[3] = {logits->dim[0], logits->dim[1], logits->dim[2]};
    npk_ltensor *w = npk_out_add(out, "result", NPK_LD_Q0_8, 4, logits->dim);
    npk_ltensor *mx = npk_out_add(out, "row_max", NPK_LD_I32, 3, dr);
    npk_ltensor *ex = npk_out_add(out, "exp", NPK_LD_Q0_8, 4, logits->dim);
    npk_ltensor *sm = npk_out_add(out, "row_sum", NPK_LD_I32, 3, dr);
    NEED(w && mx && ex && sm);
    if (mask) L->host |= NPK_HOST_APPLIES_MASK;
    L->host |= NPK_HOST_DIVIDES_BY_ROW_SUM;
    for (unsigned r = 0; r < rows; r++) {
        const int32_t *x = logits->data + (size_t)r * Tk;
        const int32_t *m = mask ? mask->data + (size_t)r * Tk : NULL;
        int have = 0;
        int32_t cur = 0;
        for (unsigned k = 0; k < Tk; k++) {
            if (m && !m[k]) continue;
            if (!have) {
                cur = x[k];
                have = 1;
                continue;
            }
            uint32_t v; /* MAX_U32 on int8 values biased by 128 */
            CK(lw_scalar(L, E1_OP_MAX_U32, (uint32_t)(cur + 128), (uint32_t)(x[k] + 128), 0, 0, &v));
            cur = (int32_t)v - 128;
        }
        if (!have) {
            rc = npk_err(NPK_EINVAL, "field 'mask': softmax row %u has no unmasked key", r);
            goto done;
        }
        uint32_t sum = 0;
        for (unsigned k = 0; k < Tk; k++) {
            uint32_t e = 0;
            if (!m || m[k]) {
                uint32_t delta;
                CK(lw_scalar(L, E1_OP_SUB, (uint32_t)x[k], (uint32_t)cur, 0, 0, &delta));
                CK(lw_scalar(L, E1_OP_EXP2_NEG_Q0_8, delta, 0, 0, 0, &e));
                CK(lw_scalar(L, E1_OP_ADD, sum, e, 0, 0, &sum));
            }
            ex->data[(size_t)r * Tk + k] = (int32_t)e;
        }
        for (unsigned k = 0; k < Tk; k++) /* host reciprocal: (e * 256 + sum / 2) / sum */
            w->data[(size_t)r * Tk + k] = (int32_t)(((int64_t)ex->data[(size_t)r * Tk + k] * 256 + sum / 2) / sum);
        mx->data[r] = cur;
        sm->data[r] = (int32_t)sum;
    }
done:
    return lw_close(&op, rc);
}

/* Append a copy of src as output name. */
static int put(npk_lower_out *o, const char *name, int dtype, const npk_ltensor *src) {
    npk_ltensor *t = npk_out_add(o, name, dtype, src->rank, src->dim);
    if (!t) return -NPK_ENOMEM;
    memcpy(t->data, src->data, npk_lt_numel(src) * sizeof *t->data);
    return 0;
}

int npk_lower_attention(npk_lower *L, const npk_ltensor *query, const npk_ltensor *key, const npk_ltensor *value,
                        const npk_ltensor *mask, const npk_attn_params *p, npk_lower_out *out,
                        npk_lower_out *golden, npk_lower_evidence *ev) {
    npk_attn_params def;
    if (!p) {
        npk_attn_params_default(&def);
        p = &def;
    }
    LW_OPEN(op, L, "attention", out, golden, ev, g, npk_golden_attention(query, key, value, mask, p, g));
    int rc = 0;
    unsigned B = query->dim[0], H = query->dim[1], Tq = query->dim[2], Tk = key->dim[2], Dv = value->dim[3];
    unsigned ds[4] = {B, H, Tq, Tk}, dc[4] = {B, H, Tq, Dv};
    npk_lower_out qk = {0}, sm = {0}, av = {0};
    npk_ltensor gen = {0}, logits = {0}, w8 = {0};
    npk_ltensor *res = npk_out_add(out, "result", NPK_LD_I8, 4, dc);
    NEED(res);
    CK(npk_lower_attention_qk(L, 0, query, key, &qk, NULL, NULL));
    CK(npk_lt_alloc(&logits, 4, ds));
    requant(qk.t[0].data, logits.data, npk_lt_numel(&logits), p->qk_score_shift);
    L->host |= NPK_HOST_REQUANTIZES;
    if (!mask) {
        CK(npk_make_mask(&gen, p->mask_mode, p->mask_window, B, H, Tq, Tk));
        mask = &gen;
        if (p->mask_mode == NPK_MASK_CAUSAL) L->host |= NPK_HOST_GENERATES_CAUSAL_MASK;
        if (p->mask_mode == NPK_MASK_SLIDING_WINDOW) L->host |= NPK_HOST_GENERATES_SLIDING_WINDOW_MASK;
    }
    CK(npk_lower_attention_softmax(L, &logits, mask, &sm, NULL, NULL));
    L->host |= NPK_HOST_APPLIES_MASK;
    CK(npk_lt_alloc(&w8, 4, ds));
    for (size_t i = 0; i < npk_lt_numel(&w8); i++) {
        unsigned s = p->attention_weight_shift;
        w8.data[i] = npk_clamp8(npk_asr((int64_t)sm.t[0].data[i] + (s ? (int64_t)1 << (s - 1) : 0), s));
    }
    CK(npk_lower_attention_av(L, 0, &w8, value, &av, NULL, NULL));
    requant(av.t[0].data, res->data, npk_lt_numel(res), p->context_shift);
    CK(put(out, "scores", NPK_LD_I32, &qk.t[0]));
    CK(put(out, "logits", NPK_LD_I8, &logits));
    CK(put(out, "mask", NPK_LD_BOOL, mask));
    CK(put(out, "weights", NPK_LD_Q0_8, &sm.t[0]));
    CK(put(out, "weights_s8", NPK_LD_I8, &w8));
    CK(put(out, "context", NPK_LD_I32, &av.t[0]));
done:
    npk_lower_out_free(&qk);
    npk_lower_out_free(&sm);
    npk_lower_out_free(&av);
    npk_lt_free(&gen);
    npk_lt_free(&logits);
    npk_lt_free(&w8);
    return lw_close(&op, rc);
}

int npk_lower_kv_cache_update(npk_lower *L, const npk_ltensor *key_cache, const npk_ltensor *value_cache,
                              const npk_ltensor *new_key, const npk_ltensor *new_value,
                              const npk_ltensor *cache_lengths, npk_lower_out *out, npk_lower_out *golden,
                              npk_lower_evidence *ev) {
    LW_OPEN(op, L, "kv_cache_update", out, golden, ev, g,
            npk_golden_kv_cache_update(key_cache, value_cache, new_key, new_value, cache_lengths, g));
    int rc = 0;
    CK(put(out, "key_cache", NPK_LD_I8, key_cache)); /* the host preserves existing entries */
    CK(put(out, "value_cache", NPK_LD_I8, value_cache));
    CK(put(out, "cache_lengths", NPK_LD_COUNT, cache_lengths));
    unsigned B = key_cache->dim[0], H = key_cache->dim[1], C = key_cache->dim[2], D = key_cache->dim[3];
    unsigned Dv = value_cache->dim[3], T = new_key->dim[2];
    L->host |= NPK_HOST_TRACKS_CACHE_LENGTHS;
    for (unsigned s = 0; s < B * H; s++) {
        unsigned len = (unsigned)cache_lengths->data[s];
        for (unsigned t = 0; t < T; t++) {
            for (unsigned j = 0; j < D; j++) {
                uint32_t v; /* the NPU copies every element: ADD(v, 0) */
                CK(lw_scalar(L, E1_OP_ADD, (uint32_t)new_key->data[((size_t)s * T + t) * D + j], 0, 0, 0, &v));
                out->t[0].data[((size_t)s * C + len + t) * D + j] = (int32_t)v;
            }
            for (unsigned j = 0; j < Dv; j++) {
                uint32_t v;
                CK(lw_scalar(L, E1_OP_ADD, (uint32_t)new_value->data[((size_t)s * T + t) * Dv + j], 0, 0, 0, &v));
                out->t[1].data[((size_t)s * C + len + t) * Dv + j] = (int32_t)v;
            }
        }
        out->t[2].data[s] = (int32_t)(len + T);
    }
done:
    return lw_close(&op, rc);
}

int npk_lower_decode_attention(npk_lower *L, const npk_ltensor *query, const npk_ltensor *key_cache,
                               const npk_ltensor *value_cache, const npk_ltensor *new_key,
                               const npk_ltensor *new_value, const npk_ltensor *cache_lengths, unsigned cache_window,
                               const npk_attn_params *p, npk_lower_out *out, npk_lower_out *golden,
                               npk_lower_evidence *ev) {
    npk_attn_params def;
    if (!p) {
        npk_attn_params_default(&def);
        p = &def;
    }
    LW_OPEN(op, L, "decode_attention", out, golden, ev, g,
            npk_golden_decode_attention(query, key_cache, value_cache, new_key, new_value, cache_lengths, cache_window, p, g));
    int rc = 0;
    npk_lower_out kv = {0}, at = {0};
    npk_ltensor kview = {0}, vview = {0}, mask = {0};
    CK(npk_lower_kv_cache_update(L, key_cache, value_cache, new_key, new_value, cache_lengths, &kv, NULL, NULL));
    unsigned B = key_cache->dim[0], H = key_cache->dim[1], C = key_cache->dim[2], D = key_cache->dim[3];
    unsigned Dv = value_cache->dim[3], Tq = query->dim[2];
    const npk_ltensor *len = &kv.t[2];
    unsigned maxlen = 0;
    for (unsigned s = 0; s < B * H; s++)
        if ((unsigned)len->data[s] > maxlen) maxlen = (unsigned)len->data[s];
    unsigned Lv = maxlen;
    if (cache_window) {
        L->host |= NPK_HOST_APPLIES_CACHE_WINDOW;
        if (cache_window < Lv) Lv = cache_window;
    }
    CK(npk_lt_alloc4(&kview, B, H, Lv, D));
    CK(npk_lt_alloc4(&vview, B, H, Lv, Dv));
    CK(npk_lt_alloc4(&mask, B, H, Tq, Lv));
    L->host |= NPK_HOST_MATERIALIZES_CACHE_VIEW;
    for (unsigned s = 0; s < B * H; s++) {
        unsigned l = (unsigned)len->data[s], vl = l < Lv ? l : Lv, start = l - vl;
        memcpy(kview.data + (size_t)s * Lv * D, kv.t[0].data + ((size_t)s * C + start) * D, (size_t)vl * D * 4);
        memcpy(vview.data + (size_t)s * Lv * Dv, kv.t[1].data + ((size_t)s * C + start) * Dv, (size_t)vl * Dv * 4);
        L->pad_values += (uint64_t)(Lv - vl) * (D + Dv);
        for (unsigned q = 0; q < Tq; q++)
            for (unsigned t = 0; t < Lv; t++) mask.data[((size_t)s * Tq + q) * Lv + t] = t < vl;
    }
    CK(npk_lower_attention(L, query, &kview, &vview, &mask, p, &at, NULL, NULL));
    CK(put(out, "result", NPK_LD_I8, &at.t[0]));
    CK(put(out, "key_cache", NPK_LD_I8, &kv.t[0]));
    CK(put(out, "value_cache", NPK_LD_I8, &kv.t[1]));
    CK(put(out, "cache_lengths", NPK_LD_COUNT, &kv.t[2]));
    CK(put(out, "key_view", NPK_LD_I8, &kview));
    CK(put(out, "value_view", NPK_LD_I8, &vview));
    CK(put(out, "mask", NPK_LD_BOOL, &mask));
    CK(put(out, "context", NPK_LD_I32, npk_lower_out_get(&at, "context")));
done:
    npk_lower_out_free(&kv);
    npk_lower_out_free(&at);
    npk_lt_free(&kview);
    npk_lt_free(&vview);
    npk_lt_free(&mask);
    return lw_close(&op, rc);
}

/* ---- blocks ---- */

static npk_ltensor as4(const npk_ltensor *t) {
    unsigned d[4] = {1, 1, t->dim[0], t->dim[1]};
    return npk_lt_view(t->data, 4, d);
}
static npk_ltensor as2(const npk_ltensor *t) {
    unsigned d[2] = {t->dim[2], t->dim[3]};
    return npk_lt_view(t->data, 2, d);
}

int npk_lower_transformer_block(npk_lower *L, const npk_tblock_args *a, npk_lower_out *out, npk_lower_out *golden,
                                npk_lower_evidence *ev) {
    LW_OPEN(op, L, "transformer_block", out, golden, ev, g, npk_golden_transformer_block(a, g));
    int rc = 0;
    npk_lower_out av = {0}, ba = {0}, r1 = {0}, ml = {0}, r2 = {0};
    CK(npk_lower_attention_av(L, 0, a->attention, a->value, &av, NULL, NULL));
    npk_ltensor ctx = as2(&av.t[0]);
    CK(npk_lower_bias_add(L, &ctx, a->attention_bias, &ba, NULL, NULL));
    CK(npk_lower_residual_add(L, a->input, &ba.t[0], &r1, NULL, NULL));
    CK(npk_lower_mlp(L, &r1.t[0], a->mlp_up_weight, a->mlp_down_weight, a->requant_shift, &ml, NULL, NULL));
    CK(npk_lower_residual_add(L, &r1.t[0], &ml.t[0], &r2, NULL, NULL));
    CK(put(out, "result", NPK_LD_I8, &r2.t[0]));
    CK(put(out, "attention_context", NPK_LD_I32, &ctx));
    CK(put(out, "attention_projected", NPK_LD_I8, &ba.t[0]));
    CK(put(out, "post_attention_residual", NPK_LD_I8, &r1.t[0]));
    CK(put(out, "mlp_output", NPK_LD_I32, &ml.t[0]));
done:
    npk_lower_out_free(&av);
    npk_lower_out_free(&ba);
    npk_lower_out_free(&r1);
    npk_lower_out_free(&ml);
    npk_lower_out_free(&r2);
    return lw_close(&op, rc);
}

int npk_lower_modern_decoder_block(npk_lower *L, const npk_decoder_args *a, npk_lower_out *out,
                                   npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "modern_decoder_block", out, golden, ev, g, npk_golden_modern_decoder_block(a, g));
    int rc = 0;
    unsigned T = a->input->dim[0], D = a->input->dim[1];
    npk_lower_out n1 = {0}, pj = {0}, rq = {0}, rk = {0}, at = {0}, ba = {0}, r1 = {0}, n2 = {0}, sw = {0}, r2 = {0};
    npk_ltensor qkv[3] = {{0}}, ctxq = {0};
    CK(npk_lower_rmsnorm(L, a->input, a->norm1_weight, &a->rms, &n1, NULL, NULL));
    if (a->packed_qkv_weight) {
        CK(npk_lower_qkv_projection(L, &n1.t[0], a->packed_qkv_weight, a->projection_shift, &pj, NULL, NULL));
        for (int i = 0; i < 3; i++) CK(npk_lt_copy(&qkv[i], &pj.t[i]));
    } else {
        const npk_ltensor *w[3] = {a->q_weight, a->k_weight, a->v_weight};
        for (int i = 0; i < 3; i++) {
            npk_lower_out_free(&pj);
            CK(npk_lower_matmul(L, 0, &n1.t[0], w[i], &pj, NULL, NULL));
            CK(npk_lt_alloc2(&qkv[i], T, D));
            requant(pj.t[0].data, qkv[i].data, (size_t)T * D, a->projection_shift);
        }
        L->host |= NPK_HOST_REQUANTIZES;
    }
    CK(npk_lower_rope(L, &qkv[0], a->cos, a->sin, a->rope_scale_shift, &rq, NULL, NULL));
    CK(npk_lower_rope(L, &qkv[1], a->cos, a->sin, a->rope_scale_shift, &rk, NULL, NULL));
    npk_attn_params ap = {a->attention_mask_mode, a->attention_mask_window, a->qk_score_shift,
                          a->attention_weight_shift, 0};
    npk_ltensor q4 = as4(&rq.t[0]), k4 = as4(&rk.t[0]), v4 = as4(&qkv[2]);
    CK(npk_lower_attention(L, &q4, &k4, &v4, a->attention_mask, &ap, &at, NULL, NULL));
    const npk_ltensor *ctx = npk_lower_out_get(&at, "context");
    CK(npk_lt_alloc2(&ctxq, T, D));
    requant(ctx->data, ctxq.data, (size_t)T * D, a->attention_context_shift);
    CK(npk_lower_bias_add(L, &ctxq, a->attention_bias, &ba, NULL, NULL));
    CK(npk_lower_residual_add(L, a->input, &ba.t[0], &r1, NULL, NULL));
    CK(npk_lower_rmsnorm(L, &r1.t[0], a->norm2_weight, &a->rms, &n2, NULL, NULL));
    npk_swiglu_params spw = {a->swiglu_requant_shift, a->swiglu_gate_shift, a->swiglu_silu};
    CK(npk_lower_swiglu(L, &n2.t[0], a->swiglu_up_weight, a->swiglu_gate_weight, a->swiglu_down_weight, &spw, &sw,
                        NULL, NULL));
    CK(npk_lower_residual_add(L, &r1.t[0], &sw.t[0], &r2, NULL, NULL));
    CK(put(out, "result", NPK_LD_I8, &r2.t[0]));
    CK(put(out, "norm1", NPK_LD_I8, &n1.t[0]));
    CK(put(out, "q", NPK_LD_I8, &qkv[0]));
    CK(put(out, "k", NPK_LD_I8, &qkv[1]));
    CK(put(out, "v", NPK_LD_I8, &qkv[2]));
    CK(put(out, "q_rope", NPK_LD_I8, &rq.t[0]));
    CK(put(out, "k_rope", NPK_LD_I8, &rk.t[0]));
    CK(put(out, "attention_weights", NPK_LD_Q0_8, npk_lower_out_get(&at, "weights")));
    CK(put(out, "attention_context", NPK_LD_I8, &ctxq));
    CK(put(out, "post_attention_residual", NPK_LD_I8, &r1.t[0]));
    CK(put(out, "norm2", NPK_LD_I8, &n2.t[0]));
    CK(put(out, "swiglu_output", NPK_LD_I32, &sw.t[0]));
done:
    npk_lower_out_free(&n1);
    npk_lower_out_free(&pj);
    npk_lower_out_free(&rq);
    npk_lower_out_free(&rk);
    npk_lower_out_free(&at);
    npk_lower_out_free(&ba);
    npk_lower_out_free(&r1);
    npk_lower_out_free(&n2);
    npk_lower_out_free(&sw);
    npk_lower_out_free(&r2);
    for (int i = 0; i < 3; i++) npk_lt_free(&qkv[i]);
    npk_lt_free(&ctxq);
    return lw_close(&op, rc);
}
