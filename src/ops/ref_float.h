// SPDX-License-Identifier: MIT
/*
 * The float/int8 CPU reference operations the shell device is checked
 * against. The small-float conversions (fp16, bf16, fp8 E4M3) they use are
 * the base layer's (include/npukit/numfmt.h).
 *
 * The reference operations are written independently of the device model
 * (src/sim/shell*.c) and follow docs/shell.md, which defines the arithmetic.
 */
#ifndef NPUKIT_OPS_REF_FLOAT_H
#define NPUKIT_OPS_REF_FLOAT_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/numfmt.h" /* the fp16/bf16/fp8 conversions */

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of the shell ABI (the GEMM/VEC dtype nibble). */
enum { NPK_REF_INT8 = 0, NPK_REF_FP16 = 1, NPK_REF_BF16 = 2, NPK_REF_FP8 = 3 };
/* Bytes per element of a dtype (1 or 2), 0 for an unknown dtype. */
unsigned npk_ref_dtype_size(int dtype);
/* Exact value of one element of a float dtype (fp16/bf16/fp8) stored little-endian at p. */
float npk_ref_load_float(int dtype, const uint8_t *p);

/* ---- GEMM reference ----------------------------------------------------------
 * C[M][N] = epilogue(alpha * sum_k A(i,k) * B(k,j) + beta * Cin(i,j) + bias[j]).
 * Matrices are raw little-endian element bytes addressed as
 *   stored(r, c) = base + (col_major ? c * ld + r * es : r * ld + c * es)
 * with the stored matrix M x K for A (K x M when trans_a), K x N for B (N x K
 * when trans_b) and M x N for C (element size 4). ld are in bytes.
 * INT8: int32 accumulation wrapping modulo 2^32, int32 output; with has_alpha or
 * has_beta the scaled path of docs/shell.md (fp32, then round-to-int32).
 * FP16/BF16/FP8: fp32 accumulation in k order, fp32 output.
 * epilogue: 0 none, 1 relu, 2 gelu, 3 add Cin, 4 mul Cin. */
typedef struct npk_ref_gemm {
    int dtype;
    int col_major;
    int trans_a, trans_b;
    uint32_t m, n, k;
    const uint8_t *a; size_t lda;
    const uint8_t *b; size_t ldb;
    const uint8_t *c_in; /* prior C (needed for beta, add, mul), may be NULL otherwise */
    uint8_t *c; size_t ldc;
    const uint8_t *bias; /* N int32 (INT8) or N fp32 values, or NULL */
    int has_alpha, has_beta;
    float alpha, beta;
    int epilogue;
    int int8_out;   /* INT8 only: C and bias are int8; the result is requantized */
    unsigned shift; /* r / 2^shift, rounded half to even, saturated to -128..127 */
} npk_ref_gemm;
void npk_ref_gemm_run(const npk_ref_gemm *g);

/* Plain row-major int8 GEMM: C[M][N] (int32) = A[M][K] * B[K][N] (+ bias[N] if not NULL). */
void npk_ref_gemm_i8(uint32_t m, uint32_t n, uint32_t k, const int8_t *a, const int8_t *b, const int32_t *bias,
                     int32_t *c);

/* ---- vector references (docs/shell.md "VEC_OP arithmetic") ------------------
 * op: 0..15 the VEC_OP codes, 16 = RMSNorm. x: count elements of src, y: prior
 * dst contents (second operand / upstream gradient), out: count elements.
 * row: elements per row for the row-wise ops (softmax, layernorm, dsoftmax,
 * dlayernorm, rmsnorm); count must be a multiple of row. */
#define NPK_REF_VEC_RMSNORM 16
void npk_ref_vec(int op, int dtype, const uint8_t *x, const uint8_t *y, uint8_t *out, size_t count, size_t row);
/* Row-wise SOFTMAX opcode: rows x row_elems elements; int8 logits give u8 Q0.7
 * outputs round(p * 127) (half up, clamped to 0..127); floats give the same dtype. */
void npk_ref_softmax(int dtype, const uint8_t *src, uint8_t *dst, size_t rows, size_t row_elems);

/* The scalar functions used above (double in, double out). */
double npk_ref_gelu(double x);
double npk_ref_dgelu(double x);

#ifdef __cplusplus
}
#endif
#endif
