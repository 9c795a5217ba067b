// SPDX-License-Identifier: MIT
/*
 * npukit: the v0 NPU (e1 chip "NPU v0", a Gemmini defaultConfig 16x16 int8
 * systolic array behind an MMIO command-queue wrapper).
 *
 * This header is the hardware ABI (shared by the model and the driver): register offsets, bit fields, opcodes,
 * descriptor layout and error codes, as e1-npu-v0-microarch.md describes
 * them, with every point the document leaves open settled as docs/v0.md
 * records. The device model (src/sim/v0*.c) implements exactly this.
 * The registers are declared once in npukit/v0_regs.def. The driver API
 * (src/rt/v0_drv.c), the CPU fallback handler and the text form of descriptor
 * rings (src/rt/v0_asm.c) are npukit/v0_drv.h.
 *
 * Overview
 * --------
 * 4 KiB register window at NPK_V0_MMIO_BASE. Software writes 64-byte
 * descriptors into a ring in guest memory (DESC_BASE, DESC_RING_LEN slots),
 * then writes the new producer index to DESC_DOORBELL. With CTRL.enable
 * set the device fetches, validates and executes them in order, one at a
 * time, and advances DESC_TAIL past each retired descriptor. A descriptor it
 * cannot run latches an error (STATUS.error, err_code) and stops the ring
 * until software recovers (flush, or the CPU fallback contract).
 *
 * Interrupt lines: line 0 (irq_npu) = CTRL.irq_enable && (IRQ_STATUS &
 * IRQ_MASK) != 0; line 1 (irq_fallback) = CTRL.cpu_fallback_select &&
 * IRQ_STATUS.unsupported_op. Both are levels.
 *
 * Clock: the document gives none; the model runs at NPK_V0_HZ (1 GHz).
 */
#ifndef NPUKIT_V0_REGS_H
#define NPUKIT_V0_REGS_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/error.h"
#include "npukit/energy.h"
#include "npukit/regfield.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- platform constants ---------------------------------------------------- */
#define NPK_V0_MMIO_BASE 0x10020000u
#define NPK_V0_MMIO_SIZE 0x1000u
#define NPK_V0_HZ 1000000000u
#define NPK_V0_ID_VALUE 0x4E505530u  /* "NPU0" */
#define NPK_V0_DESC_BYTES 64u        /* one descriptor: 16 little-endian words */
#define NPK_V0_RING_MIN 2u           /* DESC_RING_LEN: power of two in [2, 256] */
#define NPK_V0_RING_MAX 256u
#define NPK_V0_ALIGN 16u             /* tensor bases and strides */
#define NPK_V0_DESC_ALIGN 64u        /* DESC_BASE (cache-line-aligned records) */
#define NPK_V0_ARRAY_DIM 16u         /* 16 x 16 PEs */
#define NPK_V0_IRQ_NPU 0             /* interrupt line numbers */
#define NPK_V0_IRQ_FALLBACK 1

/* ---- registers (declared in npukit/v0_regs.def) ------------------------------
 * NPK_V0_REG_<NAME>: byte offset from NPK_V0_MMIO_BASE.
 * NPK_V0_<REG>_<FIELD>_SHIFT / _WIDTH: bit fields (NPK_FMASK/NPK_FEX/NPK_FDP).
 *   ID             RO NPK_V0_ID_VALUE
 *   CAPS           RO NPK_V0_CAPS_*
 *   CTRL           RW NPK_V0_CTRL_* (flush self-clears, reads 0)
 *   STATUS         RO NPK_V0_ST_*
 *   IRQ_STATUS     RW1C NPK_V0_IRQ_*
 *   IRQ_MASK       RW NPK_V0_IRQ_*
 *   DESC_BASE_LO   RW, bits [5:0] read 0; writes ignored while q_level > 0
 *   DESC_BASE_HI   RW, writes ignored while q_level > 0
 *   DESC_RING_LEN  RW power of two 2..256 (reset 256); other values and
 *                  writes while q_level > 0 are ignored
 *   DESC_HEAD      RW [7:0] producer index; stored only (the doorbell commits)
 *   DESC_TAIL      RO consumer index; CPU-fallback write-back, see below
 *   DESC_DOORBELL  WO value = new head: commits descriptors; reads 0
 *   TENSOR_MEM_BASE_LO/HI  RW
 *   TENSOR_MEM_LEN RW bytes; 0 = no window (every address allowed)
 *   PERF_CYCLES    RO cycles with STATUS.busy == 1 (wraps at 2^32)
 *   PERF_MACS_LO/HI  RO MACs of descriptors the device retired
 *   PERF_FALLBACKS RO descriptors that raised unsupported_op
 *   ERR_DESC_INDEX RO ring slot of the descriptor that latched the error
 *   ERR_FAULT_ADDR_LO/HI  RO address of the last bus_error
 *   COMPLETION_TAG RO COMPLETION_TAG of the last retired descriptor;
 *                  writable while CTRL.cpu_fallback_select == 1
 *   PERF_DRAM_RD_LO/HI, PERF_DRAM_WR_LO/HI, PERF_SPAD_LO/HI, PERF_ACC_LO/HI,
 *   PERF_COMPUTE_LO/HI, PERF_DMA_LO/HI  RO (npukit extension in the spec's
 *                  debug-counter range 0x080-0xFFF): sums of npk_v0_engine_stats
 *                  over the descriptors the device retired
 * Offsets not listed (0x03C, 0x060-0x07F, 0x0B0-0xFFF) read 0 and ignore
 * writes (a guest error). */
enum npk_v0_reg {
#define NPK_REG32(name, off, reset, ro, w1c, rsv, rd, prd, pre, post) NPK_V0_REG_##name = (off),
#define NPK_FIELD(reg, field, shift, width)
#include "npukit/v0_regs.def"
#undef NPK_REG32
#undef NPK_FIELD
};
enum {
#define NPK_REG32(name, off, reset, ro, w1c, rsv, rd, prd, pre, post)
#define NPK_FIELD(reg, field, shift, width) NPK_V0_##reg##_##field##_SHIFT = (shift), NPK_V0_##reg##_##field##_WIDTH = (width),
#include "npukit/v0_regs.def"
#undef NPK_REG32
#undef NPK_FIELD
};
#define NPK_REG32(name, off, reset, ro, w1c, rsv, rd, prd, pre, post)                                        \
    NPK_STATIC_ASSERT((off) % 4 == 0 && (off) < NPK_V0_MMIO_SIZE, "v0 register " #name " misaligned or outside the window");
#define NPK_FIELD(reg, field, shift, width)                                                                  \
    NPK_STATIC_ASSERT((shift) + (width) <= 32, "v0 field " #reg "." #field " exceeds 32 bits");
#include "npukit/v0_regs.def"
#undef NPK_REG32
#undef NPK_FIELD

/* ---- CAPS ---------------------------------------------------------------- */
#define NPK_V0_CAPS_GEMMINI NPK_FMASK(NPK_V0_CAPS_GEMMINI)
#define NPK_V0_CAPS_INT8 NPK_FMASK(NPK_V0_CAPS_INT8)
#define NPK_V0_CAPS_INT32_ACCUM NPK_FMASK(NPK_V0_CAPS_INT32_ACCUM)
#define NPK_V0_CAPS_RELU NPK_FMASK(NPK_V0_CAPS_RELU)
/* With Gemmini present: 0x0010100F. With gemmini_present=0 the wrapper has
 * no engine at all and CAPS reads 0. */
#define NPK_V0_CAPS_DEFAULT 0x0010100Fu
/* CAPS.ROWS / CAPS.COLS follow the rows/cols device options. */

/* ---- CTRL ------------------------------------------------------------------ */
#define NPK_V0_CTRL_ENABLE NPK_FMASK(NPK_V0_CTRL_ENABLE)         /* fetch and execute committed descriptors */
#define NPK_V0_CTRL_FLUSH NPK_FMASK(NPK_V0_CTRL_FLUSH)           /* write 1: drop the ring, reset STATUS/ERR_* (self-clearing) */
#define NPK_V0_CTRL_IRQ_ENABLE NPK_FMASK(NPK_V0_CTRL_IRQ_ENABLE) /* gate of interrupt line 0 */
#define NPK_V0_CTRL_FALLBACK NPK_FMASK(NPK_V0_CTRL_FALLBACK)     /* cpu_fallback_select */

/* ---- STATUS ---------------------------------------------------------------
 * busy: a descriptor is executing (or waits forever on a hung bus beat).
 * queue_full: q_level == DESC_RING_LEN - 1 (one slot always stays empty).
 * queue_empty: q_level == 0.
 * done: queue empty, not busy, no error, and at least one descriptor has
 *   retired since reset/flush (a level, not an event; IRQ_STATUS.done is the event).
 * error: sticky error (see the recovery rules at NPK_V0_ERR_*).
 * q_level: committed descriptors not yet retired (includes the executing and
 *   a stalled one). err_code: NPK_V0_ERR_* while error == 1, else 0. */
#define NPK_V0_ST_BUSY NPK_FMASK(NPK_V0_STATUS_BUSY)
#define NPK_V0_ST_QUEUE_FULL NPK_FMASK(NPK_V0_STATUS_QUEUE_FULL)
#define NPK_V0_ST_QUEUE_EMPTY NPK_FMASK(NPK_V0_STATUS_QUEUE_EMPTY)
#define NPK_V0_ST_DONE NPK_FMASK(NPK_V0_STATUS_DONE)
#define NPK_V0_ST_ERROR NPK_FMASK(NPK_V0_STATUS_ERROR)
static inline uint32_t npk_v0_st_qlevel(uint32_t st) { return NPK_FEX(st, NPK_V0_STATUS_QLEVEL); }
static inline uint32_t npk_v0_st_errcode(uint32_t st) { return NPK_FEX(st, NPK_V0_STATUS_ERRCODE); }

/* ---- IRQ_STATUS / IRQ_MASK ------------------------------------------------
 * done is set when a descriptor with FLAGS.irq_on_complete retires and
 * IRQ_MASK.done == 1; the error bits are set whatever the mask (the mask
 * only gates line 0). */
#define NPK_V0_IRQ_DONE NPK_FMASK(NPK_V0_IRQ_STATUS_DONE)
#define NPK_V0_IRQ_ERROR NPK_FMASK(NPK_V0_IRQ_STATUS_ERROR)
#define NPK_V0_IRQ_UNSUPPORTED NPK_FMASK(NPK_V0_IRQ_STATUS_UNSUPPORTED)
#define NPK_V0_IRQ_BUS_ERROR NPK_FMASK(NPK_V0_IRQ_STATUS_BUS_ERROR)
#define NPK_V0_IRQ_QUEUE_OVERFLOW NPK_FMASK(NPK_V0_IRQ_STATUS_QUEUE_OVERFLOW)
#define NPK_V0_IRQ_ALL                                                                                          \
    (NPK_V0_IRQ_DONE | NPK_V0_IRQ_ERROR | NPK_V0_IRQ_UNSUPPORTED | NPK_V0_IRQ_BUS_ERROR | NPK_V0_IRQ_QUEUE_OVERFLOW)

/* ---- error codes (STATUS.err_code) ----------------------------------------
 * 0x01-0x04 and 0x08 are "unsupported_op" errors: IRQ_STATUS.error and
 * .unsupported_op, ERR_DESC_INDEX, PERF_FALLBACKS += 1, and the CPU fallback
 * contract applies. Writing 1 to IRQ_STATUS.error dismisses them
 * (STATUS.error -> 0); the descriptor stays unconsumed at the tail. With
 * CTRL.cpu_fallback_select == 1, writing DESC_TAIL = ERR_DESC_INDEX + 1 (mod
 * ring length) retires it for the CPU; with cpu_fallback_select == 0 they are
 * hard failures: the ring stalls until CTRL.flush.
 * 0x05 and 0x06 set IRQ_STATUS.error and .bus_error and ERR_FAULT_ADDR;
 * 0x07 sets .error and .queue_overflow. These need CTRL.flush. */
#define NPK_V0_ERR_OPCODE 0x01u      /* unknown opcode (or any compute op when CAPS.gemmini_present == 0) */
#define NPK_V0_ERR_SHAPE 0x02u       /* shape or parameter outside the validated envelope */
#define NPK_V0_ERR_FLAGS 0x03u       /* unsupported flag combination */
#define NPK_V0_ERR_ALIGN 0x04u       /* base not 16-byte aligned or stride not a multiple of 16 */
#define NPK_V0_ERR_WINDOW 0x05u      /* tensor outside TENSOR_MEM (also bus_error) */
#define NPK_V0_ERR_BUS 0x06u         /* bus response error (descriptor fetch or tensor DMA) */
#define NPK_V0_ERR_OVERFLOW 0x07u    /* doorbell beyond the free slots or >= ring length */
#define NPK_V0_ERR_FALLBACK 0x08u    /* OP == FALLBACK (npukit extension; see docs/v0.md) */
/* Text for an err_code ("shape out of range", ...). */
const char *npk_v0_err_text(uint32_t code);

/* ---- opcodes (descriptor word 0 [15:0]) ------------------------------------ */
enum npk_v0_opcode {
    NPK_V0_OP_NOP = 0x00,
    NPK_V0_OP_MATMUL_S8 = 0x10,
    NPK_V0_OP_MATMUL_S8_RELU = 0x11,
    NPK_V0_OP_CONV2D_S8 = 0x20,
    NPK_V0_OP_CONV2D_S8_RELU = 0x21,
    NPK_V0_OP_RELU = 0x30,
    NPK_V0_OP_MAXPOOL_S8 = 0x40,
    NPK_V0_OP_BARRIER = 0xFE,
    NPK_V0_OP_FALLBACK = 0xFF
};
/* Mnemonic ("matmul_s8", ...) or NULL for an unknown opcode. */
const char *npk_v0_op_name(uint32_t op);

/* ---- descriptor flags (word 0 [31:16]) --------------------------------------
 * signed_input must be set on every compute op (Gemmini's int8 is signed;
 * without it the op is unsupported, err 0x03, and the CPU fallback reads the
 * activation input as uint8). relu_fuse on MATMUL_S8 / CONV2D_S8 equals the
 * _RELU opcode; on RELU it is redundant; on MAXPOOL_S8 it clamps the output
 * at 0; on NOP/BARRIER/FALLBACK it is err 0x03. Bits [15:4] must be 0 (0x03).
 * barrier: the descriptor starts only after everything before it retired
 * (always true in v0: one descriptor at a time). */
#define NPK_V0_F_IRQ (1u << 0)
#define NPK_V0_F_SIGNED (1u << 1)
#define NPK_V0_F_RELU (1u << 2)
#define NPK_V0_F_BARRIER (1u << 3)
#define NPK_V0_F_KNOWN 0xFu

/* ---- descriptors ------------------------------------------------------------
 * 64 bytes at DESC_BASE + slot * 64, words little-endian:
 *   w0  OP [15:0] | FLAGS [31:16]
 *   w1  SHAPE_M   w2 SHAPE_N   w3 SHAPE_K
 *   w4/5 A address, w6/7 B address, w8/9 C address (lo, hi)
 *   w10 A_STRIDE  w11 B_STRIDE  w12 C_STRIDE   (bytes between rows)
 *   w13 CONV_PARAMS  w14 POOL_PARAMS  w15 COMPLETION_TAG
 * Words an op does not use are ignored.
 *
 * MATMUL_S8(_RELU): C[M][N] int32 = A[M][K] int8 x B[K][N] int8 (wrapping
 *   int32 sums; _RELU: max(0, .)). SHAPE_M = M, SHAPE_N = N, SHAPE_K = K,
 *   1..1024 each. A rows are K bytes at A_STRIDE, B rows N bytes at
 *   B_STRIDE, C rows 4*N bytes at C_STRIDE (each stride >= its row).
 * CONV2D_S8(_RELU): one NHWC image (N = 1).
 *   SHAPE_M = H [15:0] | W [31:16]          input height, width (1..256)
 *   SHAPE_N = C_out                          (1..512)
 *   SHAPE_K = KSIZE [7:0] | C_in [31:16]     KSIZE 1, 3 or 5 (square); [15:8] = 0; C_in 1..512
 *   A = input[H][W][C_in] int8, A_STRIDE = bytes between input rows (>= W*C_in)
 *   B = weights HWIO [KSIZE][KSIZE][C_in][C_out] int8 seen as a
 *       (KSIZE*KSIZE*C_in) x C_out matrix, B_STRIDE = bytes between its rows (>= C_out)
 *   C = output[OH][OW][C_out] int8, C_STRIDE = bytes between output rows (>= OW*C_out)
 *   CONV_PARAMS: stride_h [3:0], stride_w [7:4] (1 or 2), pad_h [11:8],
 *   pad_w [15:12] (0..15, zero padding), dilation [19:16] (1..15), [31:20] = 0.
 *   OH = (H + 2*pad_h - dil*(KSIZE-1) - 1) / stride_h + 1 (>= 1), OW likewise.
 *   out = saturate_int8(sum) (scale 1.0), then ReLU for _RELU / relu_fuse.
 *   No bias in v0 (see docs/v0.md).
 * RELU: C[M][N] int8 = max(0, A[M][N] int8). SHAPE_M rows, SHAPE_N bytes per
 *   row (1..1024 each); A may equal C.
 * MAXPOOL_S8: SHAPE_M = H | W << 16 (1..256), SHAPE_N = C (1..512); A = input
 *   [H][W][C] (A_STRIDE between rows), C = output [OH][OW][C] (C_STRIDE).
 *   POOL_PARAMS: window_h [3:0], window_w [7:4] (2x2 or 3x3: equal), stride [11:8] (1 or
 *   2), pad [15:12] (0..window-1; npukit extension, padded positions count
 *   as 0 as in Gemmini), [31:16] = 0. OH = (H + 2*pad - window_h)/stride + 1.
 * NOP, BARRIER: retire. FALLBACK: err 0x08, executed by the CPU as a NOP.
 */
#define NPK_V0_W_OP 0
#define NPK_V0_W_SHAPE_M 1
#define NPK_V0_W_SHAPE_N 2
#define NPK_V0_W_SHAPE_K 3
#define NPK_V0_W_A_LO 4
#define NPK_V0_W_A_HI 5
#define NPK_V0_W_B_LO 6
#define NPK_V0_W_B_HI 7
#define NPK_V0_W_C_LO 8
#define NPK_V0_W_C_HI 9
#define NPK_V0_W_A_STRIDE 10
#define NPK_V0_W_B_STRIDE 11
#define NPK_V0_W_C_STRIDE 12
#define NPK_V0_W_CONV 13
#define NPK_V0_W_POOL 14
#define NPK_V0_W_TAG 15

/* Envelope (e1-npu-v0-microarch.md "v0 validated envelope"). */
#define NPK_V0_MAX_MATMUL 1024u   /* M, N, K */
#define NPK_V0_MAX_HW 256u        /* conv / pool H, W */
#define NPK_V0_MAX_CH 512u        /* conv C_in, C_out; pool C */
#define NPK_V0_MAX_RELU 1024u     /* RELU M and N (npukit choice) */

/* A descriptor as 16 host-order words. */
typedef struct npk_v0_desc {
    uint32_t w[16];
} npk_v0_desc;

static inline uint32_t npk_v0_desc_op(const npk_v0_desc *d) { return d->w[0] & 0xFFFFu; }
static inline uint32_t npk_v0_desc_flags(const npk_v0_desc *d) { return d->w[0] >> 16; }
static inline uint64_t npk_v0_desc_addr(const npk_v0_desc *d, int lo_word) {
    return d->w[lo_word] | (uint64_t)d->w[lo_word + 1] << 32;
}
static inline void npk_v0_desc_set_addr(npk_v0_desc *d, int lo_word, uint64_t a) {
    d->w[lo_word] = (uint32_t)a;
    d->w[lo_word + 1] = (uint32_t)(a >> 32);
}
static inline uint32_t npk_v0_conv_params(unsigned stride_h, unsigned stride_w, unsigned pad_h, unsigned pad_w,
                                          unsigned dil) {
    return (stride_h & 15u) | (stride_w & 15u) << 4 | (pad_h & 15u) << 8 | (pad_w & 15u) << 12 |
           (dil & 15u) << 16;
}
static inline uint32_t npk_v0_pool_params(unsigned win_h, unsigned win_w, unsigned stride, unsigned pad) {
    return (win_h & 15u) | (win_w & 15u) << 4 | (stride & 15u) << 8 | (pad & 15u) << 12;
}
/* Serialize / parse the 64-byte little-endian image. */
void npk_v0_desc_pack(const npk_v0_desc *d, uint8_t out[64]);
void npk_v0_desc_unpack(const uint8_t in[64], npk_v0_desc *d);

/* Descriptor builders (flags: NPK_V0_F_*; signed_input is NOT added for you). */
npk_v0_desc npk_v0_desc_simple(uint32_t op, uint32_t flags, uint32_t tag); /* NOP, BARRIER, FALLBACK */
npk_v0_desc npk_v0_desc_matmul(int relu, uint32_t flags, uint32_t m, uint32_t n, uint32_t k, uint64_t a,
                               uint32_t sa, uint64_t b, uint32_t sb, uint64_t c, uint32_t sc, uint32_t tag);

/* A convolution (one NHWC image, square kernel) as the descriptor encodes it. */
typedef struct npk_v0_conv {
    uint32_t h, w, cin, cout;  /* input height/width/channels, output channels */
    uint32_t ksize;            /* 1, 3, 5 on the device (any on the CPU) */
    uint32_t stride_h, stride_w, pad_h, pad_w, dil;
} npk_v0_conv;
/* Output size; -NPK_EINVAL when a dimension is 0 or the output is empty. */
int npk_v0_conv_out(const npk_v0_conv *c, uint32_t *oh, uint32_t *ow);
npk_v0_desc npk_v0_desc_conv(int relu, uint32_t flags, const npk_v0_conv *c, uint64_t in, uint32_t in_stride,
                             uint64_t wt, uint32_t wt_stride, uint64_t out, uint32_t out_stride, uint32_t tag);
npk_v0_desc npk_v0_desc_relu(uint32_t flags, uint32_t m, uint32_t n, uint64_t a, uint32_t sa, uint64_t c,
                             uint32_t sc, uint32_t tag);
/* Max pool parameters. */
typedef struct npk_v0_pool {
    uint32_t h, w, c;           /* input height/width/channels */
    uint32_t win_h, win_w, stride, pad;
} npk_v0_pool;
int npk_v0_pool_out(const npk_v0_pool *p, uint32_t *oh, uint32_t *ow);
npk_v0_desc npk_v0_desc_maxpool(uint32_t flags, const npk_v0_pool *p, uint64_t in, uint32_t in_stride,
                                uint64_t out, uint32_t out_stride, uint32_t tag);
/* Decode a conv / pool descriptor's fields. */
void npk_v0_desc_get_conv(const npk_v0_desc *d, npk_v0_conv *c);
void npk_v0_desc_get_pool(const npk_v0_desc *d, npk_v0_pool *p);

/* The device's validation (codes 0x01-0x04, 0x08) for a descriptor given
 * CAPS; returns 0 or the err_code, and with why != NULL a message. It is the
 * same function the model uses. */
uint32_t npk_v0_validate(const npk_v0_desc *d, uint32_t caps, char *why, size_t why_len);
/* MACs a descriptor performs on the array (0 for non-compute ops). */
uint64_t npk_v0_desc_macs(const npk_v0_desc *d);

/* ---- timing model ------------------------------------------------------------
 * Modeled cycles of one descriptor on the device (fetch + validate +
 * tiled execution); see docs/v0.md for every parameter and its source. */
typedef struct npk_v0_timing {
    uint32_t dram_bw;    /* DRAM bytes per cycle (default 8) */
    uint32_t dram_lat;   /* DRAM latency in cycles (default 20) */
    /* Geometry (device options rows, cols, spad_kib, acc_kib); 0 = the
     * default: a 16x16 array, 256 KiB scratchpad, 64 KiB accumulator. Timing
     * only: results never depend on them. npk_v0_timing_check says whether a
     * geometry can hold one block per double-buffered half. */
    uint32_t rows, cols; /* systolic array PEs: 8, 16 or 32 each */
    uint32_t spad_bytes; /* scratchpad (A and B tiles, int8), both halves */
    uint32_t acc_bytes;  /* accumulator (C tiles, int32), both halves */
    /* 1: convolutions and matmuls follow the loop Gemmini's software runs
     * (device option gemmini_loop, docs/v0.md "Gemmini calibration"): the
     * tiles tiled_conv_auto / tiled_matmul_auto choose for this scratchpad
     * and accumulator (npk_v0_gemmini_conv_tiling, _matmul_tiling), each
     * tile one hardware loop: loads of up to 64-byte requests, then per
     * weight block one preload exposing the array latency and the computes,
     * the output stored after the last reduction tile; two tile loops in
     * flight (loads of the next tile beside the current compute).
     * 0 (default): the seed model. */
    uint32_t gemmini_loop;
    /* Technology node of the energy and area model in nm (device option
     * tech_nm: 45, 40, 28, 16, 7; 0 = NPK_TECH_DEFAULT_NM). Never changes
     * cycles. */
    uint32_t tech_nm;
} npk_v0_timing;
/* Gemmini's software tiling (gemmini.h tiled_conv_auto) of a convolution
 * for the geometry of t (rows = DIM, half of the scratchpad and of the
 * accumulator per tile): tile sizes in output rows and columns, output
 * channels, kernel rows and columns, input channels, and the number of
 * tiles. 0, or -1 when the conv has no output or one element cannot fit. */
typedef struct npk_v0_conv_tiling {
    uint32_t orows, ocols, ochs, krows, kcols, kchs;
    uint64_t tiles;
    uint64_t evals; /* candidate tiles the search tested (host work, timed under gemmini_loop) */
} npk_v0_conv_tiling;
int npk_v0_gemmini_conv_tiling(const npk_v0_timing *t, const npk_v0_conv *c, npk_v0_conv_tiling *out);
/* tiled_matmul_auto's tiling of an m x n x k product: tile sizes in DIM
 * blocks of M (ti), N (tj) and K (tk), and the number of tiles. */
typedef struct npk_v0_matmul_tiling {
    uint32_t ti, tj, tk;
    uint64_t tiles;
    uint64_t evals; /* candidate tiles the search tested */
} npk_v0_matmul_tiling;
void npk_v0_gemmini_matmul_tiling(const npk_v0_timing *t, uint64_t m, uint64_t n, uint64_t k,
                                  npk_v0_matmul_tiling *out);
/* 0, or -NPK_EINVAL with npk_errmsg naming the first bad parameter. */
int npk_v0_timing_check(const npk_v0_timing *t);
uint64_t npk_v0_model_cycles(const npk_v0_desc *d, const npk_v0_timing *t);
/* Per-engine figures of one descriptor from the same model (docs/v0.md
 * "Per-engine counters"): bytes read from / written to DRAM (descriptor
 * fetch and operand loads / output stores), bytes moved in the scratchpad
 * (DMA fills plus the operand blocks the array and the pool unit read),
 * bytes moved in the accumulator (int32 partial sums the array writes plus
 * the sums drained for the store), and the busy cycles of the compute
 * units (array passes + issue, max-pool windows) and of the DMA (fetch,
 * loads, drain + stores). compute >= dma: compute-bound. */
typedef struct npk_v0_engine_stats {
    uint64_t dram_rd, dram_wr, spad, acc, compute_cycles, dma_cycles;
    /* Access counts of the same schedule (the energy model's input,
     * docs/energy.md): MACs on the array, scratchpad words (rows int8) read
     * and written, accumulator rows (cols int32) read and written (reads:
     * accumulate read-modify-writes and drains), weight blocks preloaded into
     * the PE registers, int8 element operations of the ReLU / pool units. */
    uint64_t macs, spad_rd, spad_wr, acc_rd, acc_wr, preloads, vec_ops;
} npk_v0_engine_stats;
/* Cycles (= npk_v0_model_cycles) and, added into *st, the descriptor's figures. */
uint64_t npk_v0_model_stats(const npk_v0_desc *d, const npk_v0_timing *t, npk_v0_engine_stats *st);
/* The energy model of v0 (src/sim/v0_energy.c, docs/energy.md): the energy
 * of the counted accesses st over `cycles` at `hz` on the geometry and
 * technology node of t (leakage over the modeled time included), and the
 * area of that configuration. */
void npk_v0_energy(const npk_v0_timing *t, const npk_v0_engine_stats *st, uint64_t cycles, uint64_t hz,
                   npk_energy *e);
void npk_v0_area(const npk_v0_timing *t, npk_area *a);
/* The same model as a schedule: the phases it accounts for, each with its
 * start (cycles after the descriptor's dispatch), duration, bytes moved and
 * MACs. Phases on different units overlap (the array computes a tile while
 * the DMA stores the previous output and loads the next operands). The
 * returned total equals npk_v0_model_cycles; the sum of NPK_V0_PH_ARRAY
 * MACs equals npk_v0_desc_macs. The model traces these on its "desc fetch",
 * "dma", "array" and "vector" tracks. */
typedef enum npk_v0_phase {
    NPK_V0_PH_FETCH,  /* descriptor fetch + decode (bytes: 64) */
    NPK_V0_PH_LOAD,   /* operand DMA into the scratchpad (bytes: operand bytes) */
    NPK_V0_PH_STORE,  /* accumulator drain + output DMA (bytes: output bytes) */
    NPK_V0_PH_ARRAY,  /* a tile on the rows x cols array (macs) */
    NPK_V0_PH_POOL,   /* max-pool windows on the vector path */
    NPK_V0_PH_HOST    /* gemmini_loop only: the software's tile search on the host core before the loop */
} npk_v0_phase;
typedef void (*npk_v0_phase_fn)(void *ctx, npk_v0_phase ph, uint64_t start, uint64_t dur, uint64_t bytes,
                                uint64_t macs);
uint64_t npk_v0_model_schedule(const npk_v0_desc *d, const npk_v0_timing *t, npk_v0_phase_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_V0_REGS_H */
