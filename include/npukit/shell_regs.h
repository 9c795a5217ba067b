// SPDX-License-Identifier: MIT
/*
 * The NPU shell (npu-shell-contract.md v0.1 with the v0.2 GEMM descriptor):
 * the hardware ABI shared by the model and the driver: the register map
 * (declared in npukit/shell_regs.def) and, through npukit/shell_desc.h, the
 * descriptor layouts, codes and encoders. The driver, the text assembler and
 * the schedule mapper are npukit/shell_drv.h.
 *
 * Everything the contract left open is decided in docs/shell.md; the short
 * form is repeated next to each definition here.
 *
 * Device: MMIO window at 0x1003_0000 (4 KiB), 1 GHz clock, one level IRQ line.
 * All multi-byte descriptor fields are little-endian.
 */
#ifndef NPUKIT_SHELL_REGS_H
#define NPUKIT_SHELL_REGS_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/error.h"
#include "npukit/regfield.h"
#include "npukit/shell_desc.h" /* descriptor layouts, names, encoders */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- registers (declared in npukit/shell_regs.def) ------------------------------
 * SHELL_<NAME>: byte offset in the MMIO window; SHELL_<REG>_<FIELD>_SHIFT /
 * _WIDTH: bit fields (NPK_FMASK/NPK_FEX/NPK_FDP).
 *   VERSION        RO  [31:16] major, [15:0] minor: 0x0000_0002 (v0.1 + v0.2 GEMM)
 *   CAPABILITIES   RO  SHELL_CAP_* bits
 *   STATUS         RO  SHELL_STATUS_* (independent bits)
 *   CONTROL        W   SHELL_CTRL_*; reads bit 1 = halted
 *   IRQ_STATUS     W1C SHELL_IRQ_* (latched whatever IRQ_ENABLE says)
 *   IRQ_ENABLE     RW  line 0 level = (IRQ_STATUS & IRQ_ENABLE) != 0
 *   CQ_BASE_LO/HI  RW  ring base (32-byte aligned)
 *   CQ_SIZE        RW  ring bytes: power of two, 64 .. 2^30
 *   CQ_HEAD        RO* device read offset; writable only while stopped (docs/shell.md)
 *   CQ_TAIL        RW  host write offset (multiple of 32, < CQ_SIZE)
 *   DOORBELL       W   any value: fetch until HEAD == TAIL; reads 0
 *   ERROR_CODE     sticky SHELL_ERR_*: a write covering the code clears it (write it back)
 *   ERROR_ADDR_LO/HI  RO address of the fault (see SHELL_ERR_*)
 *   PERF_*         npukit extension: performance counters (RO, cleared by
 *                  reset). The sums match the durations of the trace events
 *                  of the same tracks: PERF_DESCS descriptors executed,
 *                  PERF_FETCH/DMA/GEMM/VEC_CYCLES "fetch"/"dma"/"gemm"/"vec"
 *                  track cycles (vec: VEC_OP and SOFTMAX), PERF_MACS_LO/HI
 *                  GEMM multiply-accumulates, PERF_DMA_BYTES bytes moved by DMA
 *                  descriptors (low 32 bits).
 * Offsets not listed read 0 and ignore writes (a guest error). */
#define SHELL_MMIO_BASE 0x10030000ull
#define SHELL_MMIO_SIZE 0x1000u
#define SHELL_VERSION_VALUE 0x00000002u

enum npk_shell_reg {
#define NPK_REG32(name, off, reset, ro, w1c, rsv, rd, prd, pre, post) SHELL_##name = (off),
#define NPK_FIELD(reg, field, shift, width)
#include "npukit/shell_regs.def"
#undef NPK_REG32
#undef NPK_FIELD
};
enum {
#define NPK_REG32(name, off, reset, ro, w1c, rsv, rd, prd, pre, post)
#define NPK_FIELD(reg, field, shift, width) SHELL_##reg##_##field##_SHIFT = (shift), SHELL_##reg##_##field##_WIDTH = (width),
#include "npukit/shell_regs.def"
#undef NPK_REG32
#undef NPK_FIELD
};
#define NPK_REG32(name, off, reset, ro, w1c, rsv, rd, prd, pre, post)                                        \
    NPK_STATIC_ASSERT((off) % 4 == 0 && (off) < SHELL_MMIO_SIZE, "shell register " #name " misaligned or outside the window");
#define NPK_FIELD(reg, field, shift, width)                                                                  \
    NPK_STATIC_ASSERT((shift) + (width) <= 32, "shell field " #reg "." #field " exceeds 32 bits");
#include "npukit/shell_regs.def"
#undef NPK_REG32
#undef NPK_FIELD

/* STATUS */
#define SHELL_STATUS_IDLE NPK_FMASK(SHELL_STATUS_IDLE)       /* HEAD == TAIL and nothing in flight, no wait, no pending signal */
#define SHELL_STATUS_BUSY NPK_FMASK(SHELL_STATUS_BUSY)       /* an engine is active, the fetcher runs or an EVENT_WAIT stalls */
#define SHELL_STATUS_ERROR NPK_FMASK(SHELL_STATUS_ERROR)     /* ERROR_CODE != 0 */
#define SHELL_STATUS_HALTED NPK_FMASK(SHELL_STATUS_HALTED)   /* extension: HALT is in effect */
#define SHELL_STATUS_WAITING NPK_FMASK(SHELL_STATUS_WAITING) /* extension: an EVENT_WAIT is stalling the queue (HEAD points at it) */

/* CONTROL */
#define SHELL_CTRL_RESET NPK_FMASK(SHELL_CONTROL_RESET)   /* self-clearing: abort everything, every register to its reset value */
#define SHELL_CTRL_HALT NPK_FMASK(SHELL_CONTROL_HALT)     /* stop fetching; in-flight descriptors complete */
#define SHELL_CTRL_RESUME NPK_FMASK(SHELL_CONTROL_RESUME) /* clear HALT (HALT wins when both are written) */

/* IRQ_STATUS / IRQ_ENABLE */
#define SHELL_IRQ_CQ_EMPTY NPK_FMASK(SHELL_IRQ_STATUS_CQ_EMPTY) /* queue drained and all work complete */
#define SHELL_IRQ_EVENT NPK_FMASK(SHELL_IRQ_STATUS_EVENT)       /* EVENT_SIGNAL with FLAGS[0] became visible */
#define SHELL_IRQ_ERROR NPK_FMASK(SHELL_IRQ_STATUS_ERROR)       /* an error was latched */

/* CAPABILITIES (bits 0..7 from the contract, 8.. npukit extensions) */
#define SHELL_CAP_DMA_COPY NPK_FMASK(SHELL_CAPABILITIES_DMA_COPY)
#define SHELL_CAP_DMA_STRIDED NPK_FMASK(SHELL_CAPABILITIES_DMA_STRIDED)
#define SHELL_CAP_DMA_GATHER NPK_FMASK(SHELL_CAPABILITIES_DMA_GATHER)
#define SHELL_CAP_DMA_SCATTER NPK_FMASK(SHELL_CAPABILITIES_DMA_SCATTER)
#define SHELL_CAP_GEMM NPK_FMASK(SHELL_CAPABILITIES_GEMM)
#define SHELL_CAP_VEC_OP NPK_FMASK(SHELL_CAPABILITIES_VEC_OP)
#define SHELL_CAP_SOFTMAX NPK_FMASK(SHELL_CAPABILITIES_SOFTMAX)
#define SHELL_CAP_EVENT_IRQ NPK_FMASK(SHELL_CAPABILITIES_EVENT_IRQ)
#define SHELL_CAP_GEMM_V2 NPK_FMASK(SHELL_CAPABILITIES_GEMM_V2)   /* SIZE=2/3 GEMM descriptors */
#define SHELL_CAP_VEC_EXT NPK_FMASK(SHELL_CAPABILITIES_VEC_EXT)   /* VEC_EXT word: RMSNorm, row length */
#define SHELL_CAP_RING_WRAP NPK_FMASK(SHELL_CAPABILITIES_RING_WRAP) /* a descriptor may straddle the end of the ring */
#define SHELL_CAP_FP8 NPK_FMASK(SHELL_CAPABILITIES_FP8)      /* FP8 E4M3 in GEMM, VEC_OP and SOFTMAX */
#define SHELL_CAP_LIST_LOCAL NPK_FMASK(SHELL_CAPABILITIES_LIST_LOCAL) /* GATHER/SCATTER LOCAL_ADDR at bytes 24..31 */
/* What the model's CAPABILITIES register reads. */
#define SHELL_CAPABILITIES_VALUE                                                                               \
    (SHELL_CAP_DMA_COPY | SHELL_CAP_DMA_STRIDED | SHELL_CAP_DMA_GATHER | SHELL_CAP_DMA_SCATTER | SHELL_CAP_GEMM | \
     SHELL_CAP_VEC_OP | SHELL_CAP_SOFTMAX | SHELL_CAP_EVENT_IRQ | SHELL_CAP_GEMM_V2 | SHELL_CAP_VEC_EXT |       \
     SHELL_CAP_RING_WRAP | SHELL_CAP_FP8 | SHELL_CAP_LIST_LOCAL)

/* Error codes (ERROR_CODE). ERROR_ADDR holds:
 *   INVALID_OPCODE, BAD_DESCRIPTOR   the guest address of the descriptor
 *   DMA_FAULT                        the address of the bus beat that failed
 *   ALIGNMENT_ERROR                  the misaligned address (descriptor address
 *                                    for a misaligned stride/leading dimension,
 *                                    ring base for a bad ring setup)
 *   TIMEOUT                          the beat that never answered, or the
 *                                    address of the EVENT_WAIT descriptor */
enum npk_shell_error {
    SHELL_ERR_NONE = 0,
    SHELL_ERR_INVALID_OPCODE = 1,
    SHELL_ERR_BAD_DESCRIPTOR = 2,
    SHELL_ERR_DMA_FAULT = 3,
    SHELL_ERR_ALIGNMENT = 4,
    SHELL_ERR_TIMEOUT = 5,
};
/* npk_shell_error_name: include/npukit/shell_desc.h. */

#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_SHELL_REGS_H */
