// SPDX-License-Identifier: MIT
/*
 * npukit register declarations: the helpers every <dev>_regs.h uses.
 *
 * Each device declares its registers once, in include/npukit/<dev>_regs.def,
 * as a list of X-macro lines (in the manner of QEMU's hw/registerfields.h):
 *
 *   NPK_REG32(NAME, OFFSET, RESET, RO, W1C, RSV, READ, POST_READ, PRE_WRITE, POST_WRITE)
 *   NPK_FIELD(REG, FIELD, SHIFT, WIDTH)
 *
 * <dev>_regs.h expands the list into the ABI (offset enums, field SHIFT and
 * WIDTH enums, a compile-time check of every offset); the model expands the
 * same list into its register table (src/sim/regfile.c semantics, see
 * npukit/sim.h). docs/architecture.md, "Registers", describes the columns.
 *
 * A field F (e.g. E1_TRACE_OPCODE) has F_SHIFT and F_WIDTH; these macros give
 * its mask and extract/deposit it:
 *   NPK_FMASK(F)        mask of the field in the register
 *   NPK_FEX(v, F)       the field's value in register value v
 *   NPK_FDP(v, F, x)    v with the field set to x (x truncated to the field)
 *   NPK_FVAL(F, x)      x placed in the field (other bits 0)
 */
#ifndef NPUKIT_REGFIELD_H
#define NPUKIT_REGFIELD_H

#include <stdint.h>

#define NPK_FMASK(F) ((uint32_t)((((uint64_t)1 << F##_WIDTH) - 1u) << F##_SHIFT))
#define NPK_FEX(v, F) ((uint32_t)(((uint32_t)(v) >> F##_SHIFT) & (uint32_t)(((uint64_t)1 << F##_WIDTH) - 1u)))
#define NPK_FVAL(F, x) ((uint32_t)(((uint32_t)(x) << F##_SHIFT) & NPK_FMASK(F)))
#define NPK_FDP(v, F, x) (((uint32_t)(v) & ~NPK_FMASK(F)) | NPK_FVAL(F, x))

#ifdef __cplusplus
#define NPK_STATIC_ASSERT(c, msg) static_assert(c, msg)
#else
#define NPK_STATIC_ASSERT(c, msg) _Static_assert(c, msg)
#endif

#endif
