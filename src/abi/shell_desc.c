// SPDX-License-Identifier: MIT
/* Shell descriptor ABI: opcode, vec-op, dtype and error names and the
 * descriptor encoders. The model (src/sim/shell*.c) names what it decodes with
 * these; the driver, the mapper and the assembler (src/rt) encode with them. */
#include "npukit/shell_desc.h"

#include <string.h>

/* ---- names ---------------------------------------------------------------------- */

const char *npk_shell_error_name(uint32_t code) {
    static const char *const n[] = {"NONE", "INVALID_OPCODE", "BAD_DESCRIPTOR", "DMA_FAULT", "ALIGNMENT_ERROR", "TIMEOUT"};
    return code < 6 ? n[code] : "UNKNOWN";
}

const char *npk_shell_opcode_name(unsigned op) {
    switch (op) {
    case SHELL_OP_DMA_COPY: return "DMA_COPY";
    case SHELL_OP_DMA_STRIDED: return "DMA_STRIDED";
    case SHELL_OP_DMA_GATHER: return "DMA_GATHER";
    case SHELL_OP_DMA_SCATTER: return "DMA_SCATTER";
    case SHELL_OP_GEMM: return "GEMM";
    case SHELL_OP_VEC_OP: return "VEC_OP";
    case SHELL_OP_SOFTMAX: return "SOFTMAX";
    case SHELL_OP_EVENT_SIGNAL: return "EVENT_SIGNAL";
    case SHELL_OP_EVENT_WAIT: return "EVENT_WAIT";
    case SHELL_OP_NOOP: return "NOOP";
    default: return NULL;
    }
}

const char *const npk_shell_vec_names[16] = {"relu",     "add",     "mul",         "gelu",     "softmax", "layernorm",
                                          "drelu",    "dgelu",   "dsoftmax",    "dlayernorm", "sigmoid", "tanh",
                                          "hardsigmoid", "hardtanh", "relu6",   "leakyrelu"};
const char *const npk_shell_dtype_names[4] = {"int8", "fp16", "bf16", "fp8"};
const char *npk_shell_vec_op_name(unsigned op) { return op < 16 ? npk_shell_vec_names[op] : NULL; }
const char *npk_shell_dtype_name(unsigned dt) { return dt < 4 ? npk_shell_dtype_names[dt] : "?"; }

/* ---- encoders ---------------------------------------------------------------------- */

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}
static void put64(uint8_t *p, uint64_t v) {
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}
static void hdr(uint8_t *d, unsigned op, unsigned flags, unsigned size, uint32_t tag) {
    memset(d, 0, 32 * size);
    d[0] = (uint8_t)op;
    d[1] = (uint8_t)flags;
    d[2] = (uint8_t)size;
    put32(d + 4, tag);
}

size_t npk_shell_enc_dma_copy(uint8_t d[32], uint32_t tag, uint64_t src, uint64_t dst, uint32_t bytes) {
    hdr(d, SHELL_OP_DMA_COPY, 0, 1, tag);
    put64(d + 8, src);
    put64(d + 16, dst);
    put32(d + 24, bytes);
    return 32;
}

size_t npk_shell_enc_dma_strided(uint8_t d[32], uint32_t tag, uint64_t src, uint64_t dst, uint16_t row_bytes,
                                 uint16_t rows, uint8_t src_stride, uint8_t dst_stride) {
    hdr(d, SHELL_OP_DMA_STRIDED, 0, 1, tag);
    put64(d + 8, src);
    put64(d + 16, dst);
    put16(d + 24, row_bytes);
    put16(d + 26, rows);
    d[28] = src_stride;
    d[29] = dst_stride;
    return 32;
}

size_t npk_shell_enc_dma_list(uint8_t d[32], unsigned opcode, uint32_t tag, uint64_t list, uint32_t count,
                              uint32_t elem_size, uint64_t local) {
    hdr(d, opcode, 0, 1, tag);
    put64(d + 8, list);
    put32(d + 16, count);
    put32(d + 20, elem_size);
    put64(d + 24, local);
    return 32;
}

size_t npk_shell_enc_gemm_v1(uint8_t d[32], unsigned dtype, unsigned layout, uint32_t m, uint32_t n, uint32_t k,
                             uint64_t a, uint64_t b, uint64_t c) {
    if (m > 0xfff || n > 0x3ff || k > 0x3ff) return 0;
    hdr(d, SHELL_OP_GEMM, (dtype & 15) | (layout & 15) << 4, 1, m << 20 | n << 10 | k);
    put64(d + 8, a);
    put64(d + 16, b);
    put64(d + 24, c);
    return 32;
}

size_t npk_shell_enc_gemm(uint8_t d[96], const npk_shell_gemm_desc *g) {
    int size = g->has_bias || g->has_alpha || g->has_beta ? 3 : 2;
    uint32_t ext = SHELL_GEMM_EXT_EPILOGUE(g->epilogue) | (g->trans_a ? SHELL_GEMM_EXT_TRANS_A : 0) |
                   (g->trans_b ? SHELL_GEMM_EXT_TRANS_B : 0) | (g->has_bias ? SHELL_GEMM_EXT_HAS_BIAS : 0) |
                   (g->has_alpha ? SHELL_GEMM_EXT_HAS_ALPHA : 0) | (g->has_beta ? SHELL_GEMM_EXT_HAS_BETA : 0) |
                   (g->int8_out ? SHELL_GEMM_EXT_INT8_OUT : 0) | SHELL_GEMM_EXT_SHIFT(g->shift) |
                   SHELL_GEMM_EXT_USER_TAG(g->user_tag);
    hdr(d, SHELL_OP_GEMM, (g->dtype & 15) | (g->layout & 15) << 4, (unsigned)size, ext);
    put64(d + 8, g->a);
    put64(d + 16, g->b);
    put64(d + 24, g->c);
    put32(d + 32, g->m);
    put32(d + 36, g->n);
    put32(d + 40, g->k);
    put32(d + 44, g->lda);
    put32(d + 48, g->ldb);
    put32(d + 52, g->ldc);
    put64(d + 56, g->op_uid);
    if (size == 3) {
        uint32_t u;
        put64(d + 64, g->has_bias ? g->bias : 0);
        memcpy(&u, &g->alpha, 4);
        put32(d + 72, g->has_alpha ? u : 0);
        memcpy(&u, &g->beta, 4);
        put32(d + 76, g->has_beta ? u : 0);
    }
    return 32u * (unsigned)size;
}

size_t npk_shell_enc_vec(uint8_t d[32], uint32_t tag, unsigned op, unsigned dtype, uint64_t src, uint64_t dst,
                         uint32_t bytes, uint32_t vec_ext) {
    hdr(d, SHELL_OP_VEC_OP, (op & 15) | (dtype & 15) << 4, 1, tag);
    put64(d + 8, src);
    put64(d + 16, dst);
    put32(d + 24, bytes);
    put32(d + 28, vec_ext);
    return 32;
}

size_t npk_shell_enc_softmax(uint8_t d[32], uint32_t tag, unsigned dtype, uint64_t src, uint64_t dst,
                             uint16_t row_bytes, uint16_t rows) {
    hdr(d, SHELL_OP_SOFTMAX, (dtype & 15) << 4, 1, tag);
    put64(d + 8, src);
    put64(d + 16, dst);
    put16(d + 24, row_bytes);
    put16(d + 26, rows);
    return 32;
}

size_t npk_shell_enc_event(uint8_t d[32], unsigned opcode, uint16_t id, int irq) {
    hdr(d, opcode, opcode == SHELL_OP_EVENT_SIGNAL && irq ? 1 : 0, 1, id);
    return 32;
}

size_t npk_shell_enc_noop(uint8_t d[32], uint32_t tag) {
    hdr(d, SHELL_OP_NOOP, 0, 1, tag);
    return 32;
}
