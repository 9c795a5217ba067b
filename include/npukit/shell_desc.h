// SPDX-License-Identifier: MIT
/*
 * shell descriptor ABI: descriptor layouts and opcodes, element types,
 * names and encoders. Shared by the model (src/sim/shell*.c), the driver,
 * the schedule mapper and the assembler (src/rt); depends only on the base
 * layer. Registers and the driver API: include/npukit/shell.h.
 */
#ifndef NPUKIT_SHELL_DESC_H
#define NPUKIT_SHELL_DESC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- descriptors --------------------------------------------------------------
 * Header (all opcodes): byte 0 OPCODE, 1 FLAGS, 2 SIZE (32-byte units), 3 reserved
 * (must be 0), 4..7 TAG. */
enum npk_shell_opcode {
    SHELL_OP_DMA_COPY = 0x01,    /* 8 SRC u64, 16 DST u64, 24 BYTES u32, 28 rsvd */
    SHELL_OP_DMA_STRIDED = 0x02, /* 8 SRC, 16 DST, 24 ROW_BYTES u16, 26 ROWS u16,
                                  * 28 SRC_STRIDE u8, 29 DST_STRIDE u8 (bytes, as the
                                  * reference mapper; 0 = packed rows, pitch = ROW_BYTES;
                                  * DST_STRIDE >= ROW_BYTES when ROWS > 1), 30 rsvd */
    SHELL_OP_DMA_GATHER = 0x03,  /* 8 LIST u64, 16 COUNT u32, 20 ELEM_SIZE u32 (>= 16,
                                  * multiple of 8), 24 LOCAL u64: entries {u64 addr, u32
                                  * bytes, u32 rsvd} are concatenated into LOCAL */
    SHELL_OP_DMA_SCATTER = 0x04, /* same layout: LOCAL is split out to the entries */
    SHELL_OP_GEMM = 0x10,        /* SIZE 1: TAG = M[31:20] N[19:10] K[9:0], 8 A, 16 B, 24 C;
                                  * SIZE 2/3: see SHELL_GEMM_* below */
    SHELL_OP_VEC_OP = 0x11,      /* FLAGS[3:0] op, [7:4] dtype; 8 SRC, 16 DST, 24 BYTES u32,
                                  * 28 VEC_EXT u32 (see SHELL_VEC_EXT_*) */
    SHELL_OP_SOFTMAX = 0x12,     /* FLAGS[7:4] dtype ([3:0] reserved 0); 8 SRC, 16 DST,
                                  * 24 ROW_BYTES u16, 26 ROWS u16 */
    SHELL_OP_EVENT_SIGNAL = 0x20,/* TAG[15:0] event id; FLAGS[0] raise IRQ_EVENT */
    SHELL_OP_EVENT_WAIT = 0x21,  /* TAG[15:0] event id */
    SHELL_OP_NOOP = 0x30,
};

/* Element types: GEMM FLAGS[3:0], VEC_OP/SOFTMAX FLAGS[7:4]. */
enum npk_shell_dtype { SHELL_INT8 = 0, SHELL_FP16 = 1, SHELL_BF16 = 2, SHELL_FP8 = 3 };
/* GEMM FLAGS[7:4]: layout of A, B and C alike. */
enum npk_shell_layout { SHELL_ROW_MAJOR = 0, SHELL_COL_MAJOR = 1 };

/* GEMM v0.2 (SIZE=2, 64 bytes; SIZE=3, 96 bytes when HAS_BIAS/ALPHA/BETA):
 * bytes 4..7 GEMM_EXT, 8 A, 16 B, 24 C, 32 M, 36 N, 40 K, 44 LDA, 48 LDB, 52 LDC
 * (u32 bytes, 0 = packed), 56 OP_UID u64 (opaque, ignored), 64 BIAS u64,
 * 72 ALPHA f32, 76 BETA f32, 80..95 reserved.
 * C elements are int32 (INT8 inputs) or fp32 (FP16/BF16/FP8 inputs); BIAS is a
 * vector of N elements of the C type. With SHELL_GEMM_EXT_INT8_OUT (or an INT8
 * GEMM whose LDC covers only int8 rows, the reference mapper's convention) C and
 * BIAS are int8. Arithmetic: docs/shell.md "GEMM". */
#define SHELL_GEMM_EXT_EPILOGUE(x) ((x) & 0xFu)
#define SHELL_GEMM_EXT_TRANS_A (1u << 4)
#define SHELL_GEMM_EXT_TRANS_B (1u << 5)
#define SHELL_GEMM_EXT_HAS_BIAS (1u << 6)
#define SHELL_GEMM_EXT_HAS_ALPHA (1u << 7)
#define SHELL_GEMM_EXT_HAS_BETA (1u << 8)
/* npukit extension (docs/shell.md 12): INT8 GEMM with int8 C and BIAS; the int32
 * result is divided by 2^SHIFT, rounded half to even and saturated to int8. */
#define SHELL_GEMM_EXT_INT8_OUT (1u << 9)
#define SHELL_GEMM_EXT_SHIFT(s) (((uint32_t)(s) & 0x3Fu) << 10)
#define SHELL_GEMM_EXT_SHIFT_OF(x) (((uint32_t)(x) >> 10) & 0x3Fu)
#define SHELL_GEMM_EXT_USER_TAG(t) (((uint32_t)(t) & 0xFFFFu) << 16)
/* Epilogue, applied last. ADD/MUL take the prior contents of C as the second operand. */
enum npk_shell_epilogue { SHELL_EPI_NONE = 0, SHELL_EPI_RELU = 1, SHELL_EPI_GELU = 2, SHELL_EPI_ADD = 3, SHELL_EPI_MUL = 4 };

/* VEC_OP codes (FLAGS[3:0]). Binary ops and the backward ops read their second
 * operand (or the upstream gradient) from the prior contents of DST. */
enum npk_shell_vec_op {
    SHELL_VEC_RELU = 0, SHELL_VEC_ADD = 1, SHELL_VEC_MUL = 2, SHELL_VEC_GELU = 3,
    SHELL_VEC_SOFTMAX = 4, SHELL_VEC_LAYERNORM = 5, SHELL_VEC_DRELU = 6, SHELL_VEC_DGELU = 7,
    SHELL_VEC_DSOFTMAX = 8, SHELL_VEC_DLAYERNORM = 9, SHELL_VEC_SIGMOID = 10, SHELL_VEC_TANH = 11,
    SHELL_VEC_HARDSIGMOID = 12, SHELL_VEC_HARDTANH = 13, SHELL_VEC_RELU6 = 14, SHELL_VEC_LEAKYRELU = 15,
};
/* VEC_EXT (bytes 28..31): [7:0] extended op (0 none: FLAGS[3:0] decides;
 * 1 RMSNORM, which needs FLAGS[3:0] = 0), [15:8] reserved 0, [31:16] row length
 * in elements for the row-wise ops (0 = the whole vector is one row). */
#define SHELL_VEC_EXT_RMSNORM 1u
#define SHELL_VEC_EXT(extop, row) (((uint32_t)(extop) & 0xFFu) | ((uint32_t)(row) & 0xFFFFu) << 16)

/* Name of an opcode ("DMA_COPY") or NULL; of a vec op ("relu") or NULL; of a dtype ("int8") or NULL. */
/* ERROR_CODE names: "INVALID_OPCODE", ... or "UNKNOWN". */
const char *npk_shell_error_name(uint32_t code);
const char *npk_shell_opcode_name(unsigned opcode);
const char *npk_shell_vec_op_name(unsigned op);
const char *npk_shell_dtype_name(unsigned dtype);
/* The tables behind the two names above: "relu".."leakyrelu", "int8".."fp8". */
extern const char *const npk_shell_vec_names[16];
extern const char *const npk_shell_dtype_names[4];

/* ---- descriptor encoders (return the descriptor length in bytes) ------------ */
size_t npk_shell_enc_dma_copy(uint8_t d[32], uint32_t tag, uint64_t src, uint64_t dst, uint32_t bytes);
size_t npk_shell_enc_dma_strided(uint8_t d[32], uint32_t tag, uint64_t src, uint64_t dst, uint16_t row_bytes,
                                 uint16_t rows, uint8_t src_stride, uint8_t dst_stride);
/* opcode SHELL_OP_DMA_GATHER or SHELL_OP_DMA_SCATTER */
size_t npk_shell_enc_dma_list(uint8_t d[32], unsigned opcode, uint32_t tag, uint64_t list, uint32_t count,
                              uint32_t elem_size, uint64_t local);
/* v0.1 GEMM; returns 0 when M > 4095, N > 1023 or K > 1023. */
size_t npk_shell_enc_gemm_v1(uint8_t d[32], unsigned dtype, unsigned layout, uint32_t m, uint32_t n, uint32_t k,
                             uint64_t a, uint64_t b, uint64_t c);
/* The full v0.2 GEMM. */
typedef struct npk_shell_gemm_desc {
    unsigned dtype, layout, epilogue;
    int trans_a, trans_b;
    uint16_t user_tag;
    uint64_t a, b, c;
    uint32_t m, n, k;
    uint32_t lda, ldb, ldc; /* bytes, 0 = packed */
    uint64_t op_uid;
    int has_bias, has_alpha, has_beta;
    uint64_t bias;
    float alpha, beta;
    int int8_out;   /* INT8 only: int8 C and BIAS, requantized by >> shift (GEMM_EXT bits 9, 15:10) */
    unsigned shift; /* 0..63 */
} npk_shell_gemm_desc;
size_t npk_shell_enc_gemm(uint8_t d[96], const npk_shell_gemm_desc *g);
size_t npk_shell_enc_vec(uint8_t d[32], uint32_t tag, unsigned op, unsigned dtype, uint64_t src, uint64_t dst,
                         uint32_t bytes, uint32_t vec_ext);
size_t npk_shell_enc_softmax(uint8_t d[32], uint32_t tag, unsigned dtype, uint64_t src, uint64_t dst,
                             uint16_t row_bytes, uint16_t rows);
/* opcode SHELL_OP_EVENT_SIGNAL (irq honoured) or SHELL_OP_EVENT_WAIT */
size_t npk_shell_enc_event(uint8_t d[32], unsigned opcode, uint16_t id, int irq);
size_t npk_shell_enc_noop(uint8_t d[32], uint32_t tag);

#ifdef __cplusplus
}
#endif
#endif
