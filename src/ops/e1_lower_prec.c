// SPDX-License-Identifier: MIT
/* Low-precision matmul lowerings on the e1 scalar opcodes: sparse INT4 2:4
 * (SDOT4_S4_2_4), group-scaled INT4 W4A8 (MUL_LO + ADD), INT2 / ternary
 * BitNet (DOT16_S2), FP8 E4M3 (DOT4_FP8_E4M3), FP16/BF16 via Q8.8. */
#include "e1_lower_int.h"

#include <stdlib.h>

#define TRYR(x)              \
    do {                     \
        if ((rc = (x))) goto done; \
    } while (0)

/* K padded to the opcode's lane count: Kp - K zero lanes in `operands` rows/columns. */
static void pad_k(npk_lower *L, unsigned K, unsigned Kp, uint64_t operands) {
    if (Kp == K) return;
    L->host |= NPK_HOST_PADS_K;
    L->pad_values += (uint64_t)(Kp - K) * operands;
}

/* lw_close, then the evidence records the logical and the padded K. */
static int close_padded(lw_op *op, int rc, unsigned K, unsigned Kp) {
    npk_lower_evidence *ev = op->ev;
    rc = lw_close(op, rc);
    if (ev) {
        ev->k = K;
        ev->padded_k = Kp;
    }
    return rc;
}

int npk_lower_sparse_int4_matmul(npk_lower *L, const npk_ltensor *lhs, const npk_ltensor *rhs_nonzero,
                                 const npk_ltensor *rhs_positions, npk_lower_out *out, npk_lower_out *golden,
                                 npk_lower_evidence *ev) {
    LW_OPEN(op, L, "sparse_int4_matmul", out, golden, ev, g,
            npk_golden_sparse_int4_matmul(lhs, rhs_nonzero, rhs_positions, g));
    unsigned M = lhs->dim[0], K = lhs->dim[1], KB = rhs_nonzero->dim[0], N = rhs_nonzero->dim[1], Kp = KB * 8;
    unsigned d[2] = {M, N};
    int rc = 0;
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I32, 2, d);
    if (!r) rc = -NPK_ENOMEM;
    pad_k(L, K, Kp, M);
    L->host |= NPK_HOST_USES_2_4_METADATA;
    for (unsigned i = 0; i < M && !rc; i++)
        for (unsigned j = 0; j < N && !rc; j++) {
            uint32_t acc = 0;
            for (unsigned b = 0; b < KB && !rc; b++) {
                const int32_t *w = rhs_nonzero->data + ((size_t)b * N + j) * 4;
                const int32_t *p = rhs_positions->data + ((size_t)b * N + j) * 4;
                uint32_t opa = 0, opb = 0, pos = 0, part;
                for (unsigned l = 0; l < 4; l++) {
                    opa |= ((uint32_t)w[l] & 0xf) << (4 * l);
                    pos |= ((uint32_t)p[l] & 3) << (2 * l);
                }
                for (unsigned l = 0; l < 8; l++) {
                    unsigned kk = b * 8 + l;
                    int32_t x = kk < K ? lhs->data[(size_t)i * K + kk] : 0; /* zero-padded K */
                    opb |= ((uint32_t)x & 0xf) << (4 * l);
                }
                if (!(rc = lw_scalar(L, E1_OP_SDOT4_S4_2_4, opa, opb, pos, 0, &part)))
                    rc = lw_scalar(L, E1_OP_ADD, acc, part, 0, 0, &acc);
            }
            r->data[i * N + j] = (int32_t)acc;
        }
    return close_padded(&op, rc, K, Kp);
}

int npk_lower_group_scaled_int4_matmul(npk_lower *L, const npk_ltensor *lhs, const npk_ltensor *rhs,
                                       const npk_ltensor *scales_q8_8, unsigned group_size, npk_lower_out *out,
                                       npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "group_scaled_int4_matmul", out, golden, ev, g,
            npk_golden_group_scaled_int4_matmul(lhs, rhs, scales_q8_8, group_size, g));
    unsigned M = lhs->dim[0], K = lhs->dim[1], N = rhs->dim[1], G = (K + group_size - 1) / group_size;
    unsigned d[2] = {M, N}, dg[3] = {M, N, G};
    int rc = 0;
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_Q8_8, 2, d);
    npk_ltensor *gd = npk_out_add(out, "group_dot", NPK_LD_I32, 3, dg);
    if (!r || !gd) rc = -NPK_ENOMEM;
    for (unsigned i = 0; i < M && !rc; i++)
        for (unsigned j = 0; j < N && !rc; j++) {
            uint32_t acc = 0;
            for (unsigned gi = 0; gi < G && !rc; gi++) {
                uint32_t dot = 0, p;
                for (unsigned l = gi * group_size; l < K && l < (gi + 1) * group_size && !rc; l++) {
                    /* MUL_LO's low word is the two's-complement product */
                    if (!(rc = lw_scalar(L, E1_OP_MUL_LO, (uint32_t)lhs->data[(size_t)i * K + l],
                                         (uint32_t)rhs->data[(size_t)l * N + j], 0, 0, &p)))
                        rc = lw_scalar(L, E1_OP_ADD, dot, p, 0, 0, &dot);
                }
                if (rc) break;
                gd->data[((size_t)i * N + j) * G + gi] = (int32_t)dot;
                if (!(rc = lw_scalar(L, E1_OP_MUL_LO, dot, (uint32_t)scales_q8_8->data[(size_t)gi * N + j], 0, 0, &p)))
                    rc = lw_scalar(L, E1_OP_ADD, acc, p, 0, 0, &acc);
            }
            r->data[i * N + j] = (int32_t)acc;
        }
    return lw_close(&op, rc);
}

/* Lane encodings: two's-complement INT2, ternary (00 = 0, 01 = +1, 10 = -1), FP8 bytes. */
static uint32_t enc_int2(int32_t v) { return (uint32_t)v & 3u; }
static uint32_t enc_ternary(int32_t v) { return v == 1 ? 1u : v == -1 ? 2u : 0u; }
static uint32_t enc_fp8(int32_t v) { return (uint32_t)v & 0xffu; }

/* r[M][N] = sum over K chunks of `lanes` elements packed into one word each
 * (zero lanes pad the last chunk) of the dot opcode, accumulated by its ACC. */
static int packed_dot_matmul(npk_lower *L, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_ltensor *r,
                             unsigned lanes, unsigned bits, uint32_t (*enc)(int32_t), unsigned opcode, int ternary) {
    unsigned M = lhs->dim[0], K = lhs->dim[1], N = rhs->dim[1];
    int rc = 0;
    for (unsigned i = 0; i < M && !rc; i++)
        for (unsigned j = 0; j < N && !rc; j++) {
            uint32_t acc = 0;
            for (unsigned k0 = 0; k0 < K && !rc; k0 += lanes) {
                uint32_t a = 0, b = 0;
                for (unsigned l = 0; l < lanes && k0 + l < K; l++) {
                    a |= enc(lhs->data[(size_t)i * K + k0 + l]) << (bits * l);
                    b |= enc(rhs->data[(size_t)(k0 + l) * N + j]) << (bits * l);
                }
                rc = lw_scalar(L, opcode, a, b, acc, ternary, &acc);
            }
            r->data[i * N + j] = (int32_t)acc;
        }
    return rc;
}

int npk_lower_int2_matmul(npk_lower *L, int ternary, const npk_ltensor *lhs, const npk_ltensor *rhs,
                          npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, ternary ? "bitnet_matmul" : "int2_matmul", out, golden, ev, g,
            npk_golden_int2_matmul(ternary, lhs, rhs, g));
    unsigned M = lhs->dim[0], K = lhs->dim[1], N = rhs->dim[1], Kp = (K + 15) / 16 * 16;
    unsigned d[2] = {M, N};
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I32, 2, d);
    pad_k(L, K, Kp, M + N);
    int rc = r ? packed_dot_matmul(L, lhs, rhs, r, 16, 2, ternary ? enc_ternary : enc_int2, E1_OP_DOT16_S2, ternary)
               : -NPK_ENOMEM;
    return close_padded(&op, rc, K, Kp);
}

int npk_lower_fp8_matmul(npk_lower *L, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *out,
                         npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "fp8_matmul", out, golden, ev, g, npk_golden_fp8_matmul(lhs, rhs, g));
    unsigned M = lhs->dim[0], K = lhs->dim[1], N = rhs->dim[1], Kp = (K + 3) / 4 * 4;
    unsigned d[2] = {M, N};
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_Q8_8, 2, d);
    pad_k(L, K, Kp, M + N);
    int rc = r ? packed_dot_matmul(L, lhs, rhs, r, 4, 8, enc_fp8, E1_OP_DOT4_FP8_E4M3, 0) : -NPK_ENOMEM;
    return close_padded(&op, rc, K, Kp);
}

int npk_lower_float16_matmul(npk_lower *L, int bf16, const npk_ltensor *lhs, const npk_ltensor *rhs,
                             npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, bf16 ? "bf16_matmul" : "fp16_matmul", out, golden, ev, g,
            npk_golden_float16_matmul(bf16, lhs, rhs, g));
    unsigned M = lhs->dim[0], K = lhs->dim[1], N = rhs->dim[1];
    unsigned d[2] = {M, N};
    int rc = 0;
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_Q8_8, 2, d);
    npk_ltensor *lq = npk_out_add(out, "lhs_q8_8", NPK_LD_Q8_8, 2, lhs->dim);
    npk_ltensor *rq = npk_out_add(out, "rhs_q8_8", NPK_LD_Q8_8, 2, rhs->dim);
    if (!r || !lq || !rq) rc = -NPK_ENOMEM;
    /* host conversion to Q8.8 (validated by the golden already) */
    for (size_t i = 0; !rc && i < npk_lt_numel(lhs); i++) rc = npk_f16_to_q88(bf16, (uint32_t)lhs->data[i], &lq->data[i]);
    for (size_t i = 0; !rc && i < npk_lt_numel(rhs); i++) rc = npk_f16_to_q88(bf16, (uint32_t)rhs->data[i], &rq->data[i]);
    L->host |= NPK_HOST_CONVERTS_FLOAT_TO_Q8_8 | NPK_HOST_REQUANTIZES_PRODUCTS;
    for (unsigned i = 0; i < M && !rc; i++)
        for (unsigned j = 0; j < N && !rc; j++) {
            uint32_t acc = 0;
            for (unsigned l = 0; l < K && !rc; l++) {
                uint32_t p;
                if ((rc = lw_scalar(L, E1_OP_MUL_LO, (uint32_t)lq->data[(size_t)i * K + l],
                                    (uint32_t)rq->data[(size_t)l * N + j], 0, 0, &p)))
                    break;
                int32_t p88 = (int32_t)npk_asr((int32_t)p, 8); /* Q16.16 -> Q8.8 on the host */
                rc = lw_scalar(L, E1_OP_ADD, acc, (uint32_t)p88, 0, 0, &acc);
            }
            r->data[i * N + j] = (int32_t)acc;
        }
    return lw_close(&op, rc);
}
