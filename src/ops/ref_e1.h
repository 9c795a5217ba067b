// SPDX-License-Identifier: MIT
/* CPU reference of the e1 datapath's arithmetic (the golden for e1 tests
 * and lowerings), written from e1-npu.md and e1-rtl-notes.md. */
#ifndef NPUKIT_OPS_REF_E1_H
#define NPUKIT_OPS_REF_E1_H

#include <stdint.h>

/* Result of one scalar opcode. Returns 0, or -1 when the chip would fail
 * (DOT16_S2 ternary with a reserved 0b11 lane), leaving the outputs untouched.
 * GEMM_S8, GEMM_S4 and VRELU_S8 are not scalar opcodes: returns -2. */
int npk_ref_e1_scalar(unsigned opcode, uint32_t a, uint32_t b, uint32_t acc, int ternary, uint32_t *lo,
                      uint32_t *hi);
/* FP8 E4M3 byte decoded to the chip's signed Q8.8 value (no NaN/Inf). */
int32_t npk_ref_e1_fp8_q88(uint8_t x);
/* C[m][n] = A[m][k] * B[k][n] in int32 (wrapping), row-major. */
void npk_ref_e1_matmul(const int8_t *A, const int8_t *B, int32_t *C, unsigned m, unsigned n, unsigned k);

#endif
