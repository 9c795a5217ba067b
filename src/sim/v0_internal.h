// SPDX-License-Identifier: MIT
/* Internal to the v0 model: the execution of descriptors on guest memory
 * (src/sim/v0_exec.c) with the shared GEMM kernels (include/npukit/gemm.h). */
#ifndef NPUKIT_SIM_V0_INTERNAL_H
#define NPUKIT_SIM_V0_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/gemm.h"
#include "npukit/sim.h"
#include "npukit/v0_regs.h"
#include "npukit/v0_model.h"

/* ---- functional execution (src/sim/v0_exec.c) ---- */
/* Execute a validated compute descriptor against guest memory with device
 * DMA (64-byte requests through npk_bus_*): read every operand, compute,
 * write the output. Returns NPK_BUS_OK, or the response of the first failing
 * request with its address in *fault (a write fault leaves the output
 * partially written). Host memory exhaustion is reported as NPK_BUS_ERROR
 * at address 0. */
/* timing_only: every DMA beat as usual, no arithmetic, zeros written. ws:
 * the model instance's GEMM packing buffers. */
npk_bus_resp npk_v0_exec(npk_mem *mem, npk_gemm_ws *ws, const npk_v0_desc *d, int timing_only, uint64_t *fault);

#endif
