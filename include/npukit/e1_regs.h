// SPDX-License-Identifier: MIT
/*
 * npukit: the e1 NPU hardware ABI (shared by the model and the driver).
 *
 * Register offsets, bit fields, opcodes, descriptor layout and status codes
 * of the e1 chip's MMIO NPU as described by shared/spec/e1-npu.md and settled
 * by e1-rtl-notes.md (the reference RTL). The registers are declared once in
 * npukit/e1_regs.def; this header expands them. The device model
 * (src/sim/e1.c) implements exactly this; the driver API is npukit/e1_drv.h.
 *
 * Overview
 * --------
 * The register window is 4 KiB at E1_MMIO_BASE; only bits [7:0] of the offset
 * are decoded, so the 256-byte register map repeats every 256 bytes.
 * Offsets 0xc0-0xfc read 0 and ignore writes. Every register is 32 bits and
 * register reads have no side effects. One interrupt line (line 0) is the
 * level of CTRL_STATUS.done (an error always comes with done).
 *
 * Direct command:  write OP_A, OP_B, ACC, OPCODE (and GEMM_* for the
 * scratchpad ops), write CTRL_STATUS = E1_CTRL_START, wait for done, read
 * RESULT / RESULT_HI, write CTRL_STATUS = E1_CTRL_CLEAR.
 *
 * Descriptor ring: write 16-byte descriptors at DESC_BASE + slot*16, set
 * DESC_TAIL = first slot, DESC_HEAD = one past the last slot (mod 8; at
 * most 7 pending), CMD_PARAM = E1_CMD_DESC, CTRL_STATUS = E1_CTRL_START.
 *
 * Clock: the spec gives no clock; npukit runs the model at E1_HZ (1 GHz).
 */
#ifndef NPUKIT_E1_REGS_H
#define NPUKIT_E1_REGS_H

#include <stdint.h>

#include "npukit/regfield.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- platform constants ---------------------------------------------------- */
#define E1_MMIO_BASE 0x10020000u   /* physical base of the register window */
#define E1_MMIO_SIZE 0x1000u       /* window size (aliases every E1_REG_SPAN) */
#define E1_REG_SPAN 0x100u         /* decoded register span */
#define E1_HZ 1000000000u          /* model clock (1 GHz; spec is silent) */
#define E1_RING_ENTRIES 8u         /* descriptor ring slots (3-bit indices) */
#define E1_RING_MAX_PENDING 7u     /* head == tail means empty: at most 7 */
#define E1_DESC_BYTES 16u          /* one descriptor = 4 little-endian words */
#define E1_SCRATCH_BYTES 64u       /* scratchpad size */
#define E1_SCRATCH_WORDS 16u
#define E1_DESC_TIMEOUT 128u       /* descriptor engine timeout, cycles */
#define E1_SOURCE_ID 0x04u         /* SEC_STATUS[31:8] source id */

/* ---- registers (declared in npukit/e1_regs.def) ------------------------------
 * E1_REG_<NAME>: byte offset from E1_MMIO_BASE, modulo E1_REG_SPAN.
 * E1_<REG>_<FIELD>_SHIFT / _WIDTH: bit fields (NPK_FMASK/NPK_FEX/NPK_FDP).
 *   OP_A, OP_B     RW operands (latched at start)
 *   RESULT         RO result low word (writes ignored)
 *   CTRL_STATUS    W: START/CLEAR commands; R: BUSY/DONE/ERROR
 *   OPCODE         RW opcode [3:0] (latched at start)
 *   ACC            RW accumulator / SDOT4 positions (latched)
 *   RESULT_HI      RO result high word
 *   TRACE          RO engine state
 *   GEMM_CFG/BASE/STRIDE  RW, only the fields are stored; read live while running
 *   PERF_UNSUPPORTED_OPS  RO rejected starts / doorbells / descriptors
 *   CMD_PARAM      RW DESC, TERNARY, OWNER token
 *   SEC_OWNER_CFG  RW while unlocked
 *   SEC_LOCK       W bit 0 = 1: lock SEC_OWNER_CFG until reset; reads 0
 *   SEC_STATUS     RO
 *   DESC_BASE      RW ring base byte address (must be 4-aligned)
 *   DESC_HEAD      RW [2:0] software producer index
 *   DESC_TAIL      RW [2:0] hardware consumer index
 *   DESC_STATUS    RO E1_DS_* code | overlays
 *   PERF_CYCLES    GEMM/VRELU busy cycles;  PERF_MACS  GEMM MACs
 *   PERF_OPS       accepted starts + launched descriptor ops
 *   PERF_ERRORS    every error; write bit 0 = clear perf counters
 *   DESC_TIMEOUT_COUNT  cycles busy since doorbell / last advance
 *   DESC_BYTES_READ / _WRITTEN  4 per OKAY read beat / write response
 *   DESC_READ_BEATS / DESC_WRITE_BEATS
 *   PERF_STALL_CYCLES   busy cycles in a memory-wait state
 *   PERF_SCRATCH_BYTES  scratchpad bytes accessed
 *   PERF_THERMAL_THROTTLE  +1 per MMIO write to it
 *   SCRATCH0..15   the scratchpad, little-endian bytes
 * Offsets 0xc0-0xfc have no register: they read 0 and ignore writes (a
 * guest error). */
enum e1_reg {
#define NPK_REG32(name, off, reset, ro, w1c, rsv, rd, prd, pre, post) E1_REG_##name = (off),
#define NPK_FIELD(reg, field, shift, width)
#include "npukit/e1_regs.def"
#undef NPK_REG32
#undef NPK_FIELD
};
enum {
#define NPK_REG32(name, off, reset, ro, w1c, rsv, rd, prd, pre, post)
#define NPK_FIELD(reg, field, shift, width) E1_##reg##_##field##_SHIFT = (shift), E1_##reg##_##field##_WIDTH = (width),
#include "npukit/e1_regs.def"
#undef NPK_REG32
#undef NPK_FIELD
};
#define NPK_REG32(name, off, reset, ro, w1c, rsv, rd, prd, pre, post)                                        \
    NPK_STATIC_ASSERT((off) % 4 == 0 && (off) < E1_REG_SPAN, "e1 register " #name " misaligned or outside the span");
#define NPK_FIELD(reg, field, shift, width)                                                                  \
    NPK_STATIC_ASSERT((shift) + (width) <= 32, "e1 field " #reg "." #field " exceeds 32 bits");
#include "npukit/e1_regs.def"
#undef NPK_REG32
#undef NPK_FIELD
#define E1_REG_SCRATCH(i) (E1_REG_SCRATCH0 + 4u * (uint32_t)(i))

/* ---- CTRL_STATUS ----------------------------------------------------------
 * Write: E1_CTRL_START starts (only when idle; a start while busy is
 * silently ignored); E1_CTRL_CLEAR clears done/error and also zeroes
 * DESC_STATUS, err_index, DESC_TIMEOUT_COUNT and the four descriptor
 * byte/beat counters. The clear is applied after the start is evaluated in
 * the same write, so 0x3 with a start that fails at once leaves status 0.
 * Read: only 0, 1 (busy), 2 (done), 6 (done|error) occur. */
#define E1_CTRL_START NPK_FMASK(E1_CTRL_STATUS_START)
#define E1_CTRL_CLEAR NPK_FMASK(E1_CTRL_STATUS_CLEAR)
#define E1_ST_BUSY NPK_FMASK(E1_CTRL_STATUS_BUSY)
#define E1_ST_DONE NPK_FMASK(E1_CTRL_STATUS_DONE)
#define E1_ST_ERROR NPK_FMASK(E1_CTRL_STATUS_ERROR)

/* ---- TRACE (read only) ----------------------------------------------------
 * BUSY_COUNT: cycles left of the scalar op (latency, counts down to 0);
 * OPCODE: latched opcode; GEMM_BUSY / VEC_BUSY: engine running. */

/* ---- CMD_PARAM ------------------------------------------------------------ */
#define E1_CMD_DESC NPK_FMASK(E1_CMD_PARAM_DESC)       /* start = descriptor doorbell */
#define E1_CMD_TERNARY NPK_FMASK(E1_CMD_PARAM_TERNARY) /* DOT16_S2 ternary decode (latched at start) */
static inline uint32_t e1_cmd_param(int desc, int ternary, uint32_t owner) {
    return NPK_FVAL(E1_CMD_PARAM_DESC, desc ? 1u : 0u) | NPK_FVAL(E1_CMD_PARAM_TERNARY, ternary ? 1u : 0u) |
           NPK_FVAL(E1_CMD_PARAM_OWNER, owner);
}

/* ---- security ------------------------------------------------------------
 * SEC_OWNER_CFG is writable only while SEC_LOCK has not been set. When
 * OWNED and LOCKED (SEC_LOCK written with bit 0 = 1) a doorbell whose
 * CMD_PARAM[31:12] differs from OWNER fails with E1_DS_OWNER. When OWNED
 * and PERF_LOCK, reads of PERF_UNSUPPORTED (0x2c) and 0x50-0x7c return 0
 * (the counters keep counting). */
#define E1_SEC_OWNER_PERF_LOCK NPK_FMASK(E1_SEC_OWNER_CFG_PERF_LOCK)
#define E1_SEC_OWNER_OWNED NPK_FMASK(E1_SEC_OWNER_CFG_OWNED)
#define E1_SEC_LOCK_SET NPK_FMASK(E1_SEC_LOCK_SET)
/* SEC_STATUS = {24'h000004, 4'b0, lock, perf_lock, perf_hidden, owned};
 * reset value 0x400. (e1-npu.md numbers these bits differently; the RTL's
 * layout is used.) PERF_HIDDEN = owned && perf_lock. */

/* ---- opcodes (OPCODE[3:0], descriptor word 0 [3:0]) ------------------------ */
enum e1_opcode {
    E1_OP_ADD = 0,            /* OP_A + OP_B (wrap), HI 0; 1 cycle */
    E1_OP_SUB = 1,            /* OP_A - OP_B (wrap), HI 0; 1 cycle */
    E1_OP_MUL_LO = 2,         /* unsigned 64-bit product {HI, LO}; 2 cycles */
    E1_OP_MAC_S16 = 3,        /* s16(A) * s16(B) + ACC; HI = sign; 2 cycles */
    E1_OP_DOT4_S8 = 4,        /* sum s8 lanes A*B + ACC; HI = sign; 3 cycles */
    E1_OP_MAX_U32 = 5,        /* unsigned max, HI 0; 1 cycle */
    E1_OP_MIN_U32 = 6,        /* unsigned min, HI 0; 1 cycle */
    E1_OP_DOT8_S4 = 7,        /* sum s4 lanes A*B + ACC; HI = sign; 3 cycles */
    E1_OP_GEMM_S8 = 8,        /* scratchpad int8 GEMM; M*N*K cycles */
    E1_OP_GEMM_S4 = 9,        /* scratchpad int4 GEMM (nibble addressed A/B) */
    E1_OP_RELU4_S8 = 10,      /* per-byte relu of OP_A, HI 0; 1 cycle */
    E1_OP_VRELU_S8 = 11,      /* scratchpad byte relu, LEN cycles */
    E1_OP_SDOT4_S4_2_4 = 12,  /* 2:4 sparse int4 dot, positions in ACC[7:0]; 3 cycles */
    E1_OP_DOT16_S2 = 13,      /* 16 int2 (or ternary) lanes + ACC; 3 cycles */
    E1_OP_DOT4_FP8_E4M3 = 14, /* 4 FP8 lanes -> Q8.8 + ACC; 3 cycles */
    E1_OP_EXP2_NEG_Q0_8 = 15  /* 256 >> min(8, max(0, -s8(A[7:0]))), Q0.8; 2 cycles */
};
#define E1_NUM_OPCODES 16

/* Mnemonic of an opcode ("?" outside 0..15): the one name table, shared by
 * the model's traces and the lowering reports. */
static inline const char *e1_opcode_name(unsigned op) {
    static const char *const names[] = {"ADD",      "SUB",      "MUL_LO",       "MAC_S16",  "DOT4_S8",
                                        "MAX_U32",  "MIN_U32",  "DOT8_S4",      "GEMM_S8",  "GEMM_S4",
                                        "RELU4_S8", "VRELU_S8", "SDOT4_S4_2_4", "DOT16_S2", "DOT4_FP8_E4M3",
                                        "EXP2_NEG_Q0_8"};
    _Static_assert(sizeof names / sizeof names[0] == E1_NUM_OPCODES, "one name per e1 opcode");
    return op < E1_NUM_OPCODES ? names[op] : "?";
}

/* ---- GEMM / VRELU configuration (MMIO, shared by direct and ring ops) ------
 * GEMM_CFG: M [1:0], N [9:8], K [18:16]; VRELU reuses [5:0] as LEN.
 * GEMM_BASE: A (VRELU src) [5:0], B (VRELU dst) [13:8], C [21:16].
 * GEMM_STRIDE: A [3:0], B [11:8], C [19:16].
 * Read-back is masked: only these bits are stored. */
static inline uint32_t e1_gemm_cfg(uint32_t m, uint32_t n, uint32_t k) {
    return NPK_FVAL(E1_GEMM_CFG_M, m) | NPK_FVAL(E1_GEMM_CFG_N, n) | NPK_FVAL(E1_GEMM_CFG_K, k);
}
static inline uint32_t e1_vrelu_cfg(uint32_t len) { return NPK_FVAL(E1_GEMM_CFG_LEN, len); }
static inline uint32_t e1_gemm_m(uint32_t cfg) { return NPK_FEX(cfg, E1_GEMM_CFG_M); }
static inline uint32_t e1_gemm_n(uint32_t cfg) { return NPK_FEX(cfg, E1_GEMM_CFG_N); }
static inline uint32_t e1_gemm_k(uint32_t cfg) { return NPK_FEX(cfg, E1_GEMM_CFG_K); }
static inline uint32_t e1_vrelu_len(uint32_t cfg) { return NPK_FEX(cfg, E1_GEMM_CFG_LEN); }
static inline uint32_t e1_gemm_base(uint32_t a, uint32_t b, uint32_t c) {
    return NPK_FVAL(E1_GEMM_BASE_A, a) | NPK_FVAL(E1_GEMM_BASE_B, b) | NPK_FVAL(E1_GEMM_BASE_C, c);
}
static inline uint32_t e1_gemm_base_a(uint32_t v) { return NPK_FEX(v, E1_GEMM_BASE_A); }
static inline uint32_t e1_gemm_base_b(uint32_t v) { return NPK_FEX(v, E1_GEMM_BASE_B); }
static inline uint32_t e1_gemm_base_c(uint32_t v) { return NPK_FEX(v, E1_GEMM_BASE_C); }
static inline uint32_t e1_gemm_stride(uint32_t a, uint32_t b, uint32_t c) {
    return NPK_FVAL(E1_GEMM_STRIDE_A, a) | NPK_FVAL(E1_GEMM_STRIDE_B, b) | NPK_FVAL(E1_GEMM_STRIDE_C, c);
}
static inline uint32_t e1_gemm_stride_a(uint32_t v) { return NPK_FEX(v, E1_GEMM_STRIDE_A); }
static inline uint32_t e1_gemm_stride_b(uint32_t v) { return NPK_FEX(v, E1_GEMM_STRIDE_B); }
static inline uint32_t e1_gemm_stride_c(uint32_t v) { return NPK_FEX(v, E1_GEMM_STRIDE_C); }

/* ---- descriptors -----------------------------------------------------------
 * 16 bytes at DESC_BASE + slot*16:
 *   w0: opcode [3:0], stream [8], scratch offset [21:16], stream length
 *       [29:24], writeback [30], valid_owner [31] (must be set)
 *   w1: stream source byte address (stream) / OP_A
 *   w2: OP_B / writeback destination byte address (writeback)
 *   w3: ACC
 * Stream: length bytes from w1 (word-aligned, 4-byte beats) into the
 * scratchpad at the offset; offset and length word-aligned, length != 0,
 * offset + length <= 64. Writeback (GEMM only): M*N words from C_BASE
 * (C_STRIDE ignored) to w2 (word-aligned), C_BASE + M*N*4 <= 64.
 * Note: with stream set, OP_A is w1 (the source address) as well. */
#define E1_DESC_W0_STREAM (1u << 8)
#define E1_DESC_W0_WRITEBACK (1u << 30)
#define E1_DESC_W0_VALID_OWNER (1u << 31)
static inline uint32_t e1_desc_w0(uint32_t opcode, int stream, uint32_t scratch_off, uint32_t len,
                                  int writeback) {
    return (opcode & 0xfu) | (stream ? E1_DESC_W0_STREAM : 0u) | (scratch_off & 0x3fu) << 16 |
           (len & 0x3fu) << 24 | (writeback ? E1_DESC_W0_WRITEBACK : 0u) | E1_DESC_W0_VALID_OWNER;
}
static inline uint32_t e1_desc_opcode(uint32_t w0) { return w0 & 0xfu; }
static inline int e1_desc_stream(uint32_t w0) { return (int)((w0 >> 8) & 1u); }
static inline uint32_t e1_desc_scratch_off(uint32_t w0) { return (w0 >> 16) & 0x3fu; }
static inline uint32_t e1_desc_len(uint32_t w0) { return (w0 >> 24) & 0x3fu; }
static inline int e1_desc_writeback(uint32_t w0) { return (int)((w0 >> 30) & 1u); }
static inline int e1_desc_valid_owner(uint32_t w0) { return (int)(w0 >> 31); }

/* ---- DESC_STATUS -----------------------------------------------------------
 * Low byte = one code below; overlays: busy [8], err_index [11:9] (the LAST
 * COMPLETED descriptor's slot, or the doorbell's tail if the first one
 * fails; DESC_TAIL points at the faulting entry), pending [21:19] =
 * (head - tail) & 7. Reset value 0x1 (E1_DS_EMPTY); CTRL clear sets 0. */
#define E1_DS_EMPTY 0x01u          /* doorbell with head == tail */
#define E1_DS_DONE 0x02u           /* descriptor(s) completed */
#define E1_DS_BASE_ALIGN 0x04u     /* DESC_BASE not word-aligned */
#define E1_DS_CFG 0x06u            /* GEMM/VRELU config invalid at launch */
#define E1_DS_TIMEOUT 0x0cu        /* 128 cycles without progress */
#define E1_DS_FETCH_ERR 0x14u      /* bus error reading a descriptor word */
#define E1_DS_STREAM_CFG 0x24u     /* stream offset/length/source invalid */
#define E1_DS_STREAM_ERR 0x34u     /* bus error on a stream read */
#define E1_DS_OWNER 0x40u          /* SEC owner gate rejected the doorbell */
#define E1_DS_NO_OWNER 0x44u       /* descriptor lacks valid_owner */
#define E1_DS_WB_CFG 0x84u         /* writeback request invalid */
#define E1_DS_WB_ERR 0x94u         /* bus error on a writeback write */
#define E1_DS_ERROR_BIT 0x04u      /* [2]: set in every error code above */
#define E1_DS_BUSY NPK_FMASK(E1_DESC_STATUS_BUSY)
static inline uint32_t e1_ds_code(uint32_t ds) { return NPK_FEX(ds, E1_DESC_STATUS_CODE); }
static inline uint32_t e1_ds_err_index(uint32_t ds) { return NPK_FEX(ds, E1_DESC_STATUS_ERR_INDEX); }
static inline uint32_t e1_ds_pending(uint32_t ds) { return NPK_FEX(ds, E1_DESC_STATUS_PENDING); }
static inline int e1_ds_busy(uint32_t ds) { return (int)NPK_FEX(ds, E1_DESC_STATUS_BUSY); }

/* ---- counters ------------------------------------------------------------- */
#define E1_PERF_CLEAR NPK_FMASK(E1_PERF_ERRORS_CLEAR) /* write to PERF_ERRORS: zero all counters but DESC_TIMEOUT_COUNT */

#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_E1_REGS_H */
