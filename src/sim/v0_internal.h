/* Internal to the v0 model: the fast functional kernels (src/sim/v0_gemm.c)
 * and the execution of descriptors on host buffers (src/sim/v0_exec.c). */
#ifndef NPUKIT_SIM_V0_INTERNAL_H
#define NPUKIT_SIM_V0_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/sim.h"
#include "npukit/v0_regs.h"
#include "npukit/v0_model.h"

/* C[M][ldc] int32 = A[M][lda] int8 x B[K][ldb] int8 with int32 wrap-around.
 * Dispatches to the AVX-512 VNNI kernel when the host has it, else the
 * portable cache-blocked C kernel. Returns 0 or -NPK_ENOMEM. */
int npk_v0_gemm_s8s32(uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda, const int8_t *B, size_t ldb,
                      int32_t *C, size_t ldc);
/* The two kernels, for tests and the benchmark. vnni returns -NPK_EUNSUPPORTED
 * when the host lacks AVX-512 VNNI. */
int npk_v0_gemm_portable(uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda, const int8_t *B,
                         size_t ldb, int32_t *C, size_t ldc);
int npk_v0_gemm_vnni(uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda, const int8_t *B, size_t ldb,
                     int32_t *C, size_t ldc);
/* "avx512-vnni" or "portable": what npk_v0_gemm_s8s32 uses. */
const char *npk_v0_gemm_kernel(void);

/* ---- functional execution (src/sim/v0_exec.c) ---- */
/* Execute a validated compute descriptor against guest memory with device
 * DMA (64-byte requests through npk_bus_*): read every operand, compute,
 * write the output. Returns NPK_BUS_OK, or the response of the first failing
 * request with its address in *fault (a write fault leaves the output
 * partially written). Host memory exhaustion is reported as NPK_BUS_ERROR
 * at address 0. */
/* timing_only: every DMA beat as usual, no arithmetic, zeros written. */
npk_bus_resp npk_v0_exec(npk_mem *mem, const npk_v0_desc *d, int timing_only, uint64_t *fault);

#endif
