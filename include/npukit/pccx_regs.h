// SPDX-License-Identifier: MIT
/*
 * pccx v002 LLM NPU: instruction encodings, host interface registers, fault
 * codes, assembler/disassembler and the driver API.
 *
 * The device (spec: shared/spec/pccx-isa.md; every decision the spec leaves
 * open is in docs/pccx.md) executes a queue of 64-bit instructions:
 *
 *   GEMV / GEMM   Y[M][N] = X[M][K] . W[N][K]^T  (INT4 weights streamed from
 *                 host memory, BF16 activations in L2, exact accumulation,
 *                 one round-to-nearest-even to BF16)
 *   MEMCPY        host window <-> L2, L2 -> L2 (whole 128-bit words)
 *   MEMSET        write one (a, b, c) entry of the constant cache
 *   CVO           SFU: EXP SQRT GELU SIN COS REDUCE_SUM SCALE RECIP
 *
 * Memory model (all addresses in instructions are L2 WORD addresses):
 *   L2     114,688 words of 128 bits (the default; register CAP_L2_WORDS) = 8 BF16 elements per word. Element e of a
 *          vector at word address A lives in word A + e/8, lane e%8 (lane 0 =
 *          bytes 0-1 of the word, little-endian BF16).
 *   host   guest memory reached by MEMCPY through the HOST WINDOW: registers
 *          HWIN_BASE (byte address, 16-byte aligned) and HWIN_SIZE (bytes).
 *          A MEMCPY's aux_addr is the offset into the window in 16-byte blocks.
 *   weights  guest memory read by GEMV/GEMM through the WEIGHT STREAM: register
 *          WS_ADDR (byte address, 16-byte aligned) points at the next weight
 *          record; each GEMV/GEMM consumes one record and advances WS_ADDR past
 *          it (see "weight record" below). WS_LIMIT (0 = none) bounds it.
 *
 * Constant cache: two banks of 64 entries (a, b, c), 16 bits each, written
 * only by MEMSET (reset value 0):
 *   fmap_shape[i]   = an activation shape: a*b*c BF16 elements. As a matrix:
 *                     M = a*b rows of K = c elements; each row starts at a word
 *                     boundary (row stride ceil(c/8) words). MEMCPY moves
 *                     ceil(a*b*c/8) words.
 *   weight_shape[i] = (N, K, G) of a weight matrix: N output channels, K inputs,
 *                     scale group size G along K (0 = one scale per output
 *                     channel, i.e. G = K).
 * GEMV/GEMM: shape_ptr_addr -> fmap_shape (activation X [M][K]),
 *            size_ptr_addr  -> weight_shape (weights W [N][K], groups G).
 *            The output Y [M][N] is written at dest with row stride ceil(N/8)
 *            words. fmap c must equal weight K.
 *
 * Weight record (the layout each GEMV/GEMM reads at WS_ADDR):
 *   1. weights: N*K signed INT4 values, row-major (element (n, k) is nibble
 *      n*K + k), two per byte, LOW nibble = even nibble index; the block is
 *      ceil(N*K/2) bytes padded with zeros to a multiple of 16.
 *   2. only if the w_scale flag is set: scales, N * ceil(K/G) IEEE-754 binary32
 *      little-endian, row-major (scale (n, g) applies to k in [g*G, g*G+G));
 *      padded to a multiple of 16 bytes.
 *   Record size = npk_pccx_wrec_size(N, K, G, w_scale). Without w_scale every
 *   scale is 1 and no scale block is read.
 *
 * Arithmetic: y[m][n] = round_bf16( sum_k s(n, k/G) * w[n][k] * x[m][k]
 *                                   (+ old y[m][n] when accm) ), the sum exact.
 *
 * Scalar registers of the device:
 *   e_max   BF16; a GEMV/GEMM with findemax REPLACES it with the largest of
 *           that instruction's outputs; CVO sub_emax subtracts it. Host RW.
 *   scalar  BF16; the SCALE operand. Written by every REDUCE_SUM (its result,
 *           as stored) and by the host (register SCALAR). A length-1 REDUCE_SUM
 *           therefore loads one L2 element into it.
 *
 * CVO: y[i] = f(x[i] - (sub_emax ? e_max : 0)), computed in double, rounded
 *   once to BF16 (with accm: y[i] = round(old y[i] + f(...))). length elements
 *   from src, written to dst; the rest of a partly written last word is left
 *   unchanged. REDUCE_SUM writes one element (lane 0 of dst) and latches
 *   scalar. SCALE: y[i] = x[i] * scalar, or x[i] / scalar with recip_scale
 *   (recip_scale on another function is a fault).
 *   Element-wise vector x vector products are NOT expressible: the host does
 *   them (squares for RMSNorm, RoPE rotations, SwiGLU); see docs/pccx.md.
 *
 * Documented sequences (npk_pccx_softmax / _rmsnorm / _rope below run them):
 *   softmax   GEMV findemax (or host sets EMAX) -> CVO EXP sub_emax -> CVO
 *             REDUCE_SUM -> CVO SCALE recip_scale
 *   RMSNorm   x^2 (host) -> REDUCE_SUM accm onto n*eps -> SCALE recip_scale by
 *             n -> SQRT -> RECIP -> REDUCE_SUM length 1 (load scalar) -> SCALE x
 *   RoPE      angles (host, reduced to [-pi, pi]) -> CVO SIN, CVO COS
 *
 * Faults: a bad instruction is not executed; STATUS.ERROR is set with ERR_CODE
 * (npk_pccx_fault), ERR_INDEX (0-based count of instructions written since
 * reset) and ERR_INSTR; the queue stops until the host writes 1 to
 * STATUS.ERROR (resume with the next instruction) -- optionally after
 * CTRL.FLUSH (discard the queued ones).
 */
#ifndef NPUKIT_PCCX_REGS_H
#define NPUKIT_PCCX_REGS_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/error.h"
#include "npukit/regfield.h"
#include "npukit/pccx_isa.h" /* encodings, fault codes, weight records */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- host interface (pccx-isa.md Part 3.3, extended) --------------------------
 * Byte offsets in the device's MMIO window, declared once in
 * npukit/pccx_regs.def: NPK_PCCX_<NAME> is the offset, NPK_PCCX_<REG>_<FIELD>
 * _SHIFT / _WIDTH the bit fields (NPK_FMASK/NPK_FEX/NPK_FDP). docs/pccx.md
 * describes each register.
 *   INSTR_LO       W (reads 0): low word of the next instruction
 *   INSTR_HI       W: high word; the write issues {HI, LO}. A 64-bit write at 0x00 issues too.
 *   STATUS         BUSY[0] RO, DONE[1] W1C, ERROR[2] W1C (clears the fault, queue resumes), HUNG[3] RO
 *   (0x0c: not a register: Part 3.3 extensions start at 0x10; reads 0, writes ignored)
 *   ID             RO 0x70636378 ("pccx")
 *   VERSION        RO 0x00000002 (ISA v002)
 *   ERR_CODE       RO npk_pccx_fault of the latched fault
 *   ERR_INDEX      RO 0-based index of the faulting instruction
 *   ERR_INSTR_LO/HI  RO the faulting instruction
 *   ERR_ADDR_LO/HI RO offending address (L2 word, host byte or stream byte address)
 *   IRQ_EN         RW DONE[0] ERROR[1]: IRQ line 0 = (STATUS & IRQ_EN) != 0
 *   QUEUE_COUNT    RO instructions accepted but not started
 *   QUEUE_CAP      RO the queue depth, NPK_PCCX_QUEUE_DEPTH
 *   IDLE_ETA       RO model aid: cycles to wait before the device can have changed (0: idle, no fault;
 *                  0xffffffff: a fault latched or hung; docs/pccx.md section 4)
 *   HWIN_BASE_LO/HI  RW host window base (16-byte aligned; low 4 bits ignored)
 *   HWIN_SIZE      RW host window size in bytes (reset 0x200000 = 2 MiB, the aux_addr reach)
 *   WS_ADDR_LO/HI  RW weight-stream pointer (16-byte aligned), advanced by each GEMV/GEMM
 *   WS_LIMIT_LO/HI RW end of the stream buffer (exclusive); 0 = no limit
 *   EMAX           RW e_max, BF16 in bits [15:0] (reset 0xff80 = -inf)
 *   SCALAR         RW SCALE operand, BF16 in bits [15:0] (reset 0x3f80 = 1.0)
 *   L2_ADDR        RW L2 debug window: word address; lane index resets to 0 on write
 *   L2_DATA        RW 32 bits of word L2_ADDR at lane (0..3); a bus access
 *                  auto-increments lane, then address (a peek does not)
 *   INSTR_ISSUED   RO instructions written to INSTR since reset (dropped ones included)
 *   INSTR_RETIRED  RO instructions completed (faulted ones excluded)
 *   CYCLES_LO/HI   RO cycles the device was busy (not idle) since reset/CLR_PERF
 *   CNT_GEMV, CNT_GEMM, CNT_MEMCPY, CNT_MEMSET, CNT_CVO  RO retired instructions per opcode
 *   WS_BYTES_LO/HI RO bytes read from the weight stream (x M for multi-row GEMV)
 *   DMA_BYTES_LO/HI  RO bytes MEMCPY moved to/from host memory
 *   MACS_LO/HI     RO multiply-accumulates done by GEMV/GEMM
 *   SFU_ELEMS      RO elements processed by CVO
 *   GEMV/GEMM/SFU/DMA_CYCLES  RO summed durations per engine (= trace track totals)
 *   DROPPED        RO instructions dropped on queue overflow (fault OVERFLOW) since reset
 *   CTRL           W: FLUSH[0] drop queued instructions, RESET[1] soft reset, CLR_PERF[2]
 *   CAP_L2_WORDS   RO this build's L2 size in 128-bit words (option l2_kib; 114,688 on the KV260)
 *   CAP_LANES      RO this build's GEMV cores (option lanes; 4 on the KV260) */
#define NPK_PCCX_MMIO_SIZE 0x1000u
#define NPK_PCCX_ID_VALUE 0x70636378u
#define NPK_PCCX_VERSION_VALUE 0x00000002u

enum npk_pccx_reg {
#define NPK_REG32(name, off, reset, ro, w1c, rsv, rd, prd, pre, post) NPK_PCCX_##name = (off),
#define NPK_FIELD(reg, field, shift, width)
#include "npukit/pccx_regs.def"
#undef NPK_REG32
#undef NPK_FIELD
};
enum {
#define NPK_REG32(name, off, reset, ro, w1c, rsv, rd, prd, pre, post)
#define NPK_FIELD(reg, field, shift, width) NPK_PCCX_##reg##_##field##_SHIFT = (shift), NPK_PCCX_##reg##_##field##_WIDTH = (width),
#include "npukit/pccx_regs.def"
#undef NPK_REG32
#undef NPK_FIELD
};
#define NPK_REG32(name, off, reset, ro, w1c, rsv, rd, prd, pre, post)                                        \
    NPK_STATIC_ASSERT((off) % 4 == 0 && (off) < NPK_PCCX_MMIO_SIZE, "pccx register " #name " misaligned or outside the window");
#define NPK_FIELD(reg, field, shift, width)                                                                  \
    NPK_STATIC_ASSERT((shift) + (width) <= 32, "pccx field " #reg "." #field " exceeds 32 bits");
#include "npukit/pccx_regs.def"
#undef NPK_REG32
#undef NPK_FIELD

#define NPK_PCCX_STATUS_BUSY NPK_FMASK(NPK_PCCX_STATUS_BUSY)
#define NPK_PCCX_STATUS_DONE NPK_FMASK(NPK_PCCX_STATUS_DONE)
#define NPK_PCCX_STATUS_ERROR NPK_FMASK(NPK_PCCX_STATUS_ERROR)
#define NPK_PCCX_STATUS_HUNG NPK_FMASK(NPK_PCCX_STATUS_HUNG)
#define NPK_PCCX_CTRL_FLUSH NPK_FMASK(NPK_PCCX_CTRL_FLUSH)
#define NPK_PCCX_CTRL_RESET NPK_FMASK(NPK_PCCX_CTRL_RESET)
#define NPK_PCCX_CTRL_CLR_PERF NPK_FMASK(NPK_PCCX_CTRL_CLR_PERF)

/* ERR_CODE values: npk_pccx_fault (include/npukit/pccx_isa.h). */

#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_PCCX_REGS_H */
