/*
 * npukit: the v0 NPU (e1 chip "NPU v0", a Gemmini defaultConfig 16x16 int8
 * systolic array behind an MMIO command-queue wrapper).
 *
 * Part 1 is the hardware ABI: register offsets, bit fields, opcodes,
 * descriptor layout and error codes, as e1-npu-v0-microarch.md describes
 * them, with every point the document leaves open settled as docs/v0.md
 * records. The device model (src/sim/v0*.c) implements exactly this.
 * Part 2 is the driver API (src/rt/v0_drv.c), the CPU fallback handler and
 * the text form of descriptor rings (src/rt/v0_asm.c).
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
#ifndef NPUKIT_V0_H
#define NPUKIT_V0_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/npu.h"

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

/* ---- register offsets (bytes from NPK_V0_MMIO_BASE) -----------------------
 * Offsets not listed (0x03C, 0x060-0xFFF) read 0 and ignore writes. */
enum npk_v0_reg {
    NPK_V0_REG_ID = 0x000,             /* RO NPK_V0_ID_VALUE */
    NPK_V0_REG_CAPS = 0x004,           /* RO NPK_V0_CAPS_* */
    NPK_V0_REG_CTRL = 0x008,           /* RW NPK_V0_CTRL_* (flush self-clears, reads 0) */
    NPK_V0_REG_STATUS = 0x00C,         /* RO NPK_V0_ST_* */
    NPK_V0_REG_IRQ_STATUS = 0x010,     /* RW1C NPK_V0_IRQ_* */
    NPK_V0_REG_IRQ_MASK = 0x014,       /* RW NPK_V0_IRQ_* */
    NPK_V0_REG_DESC_BASE_LO = 0x018,   /* RW, bits [5:0] read 0; writes ignored while q_level > 0 */
    NPK_V0_REG_DESC_BASE_HI = 0x01C,   /* RW, writes ignored while q_level > 0 */
    NPK_V0_REG_DESC_RING_LEN = 0x020,  /* RW power of two 2..256 (reset 256); other values
                                          and writes while q_level > 0 are ignored */
    NPK_V0_REG_DESC_HEAD = 0x024,      /* RW [7:0] producer index; stored only (the doorbell commits) */
    NPK_V0_REG_DESC_TAIL = 0x028,      /* RO consumer index; CPU-fallback write-back, see below */
    NPK_V0_REG_DESC_DOORBELL = 0x02C,  /* WO value = new head: commits descriptors; reads 0 */
    NPK_V0_REG_TENSOR_MEM_BASE_LO = 0x030, /* RW */
    NPK_V0_REG_TENSOR_MEM_BASE_HI = 0x034, /* RW */
    NPK_V0_REG_TENSOR_MEM_LEN = 0x038, /* RW bytes; 0 = no window (every address allowed) */
    NPK_V0_REG_PERF_CYCLES = 0x040,    /* RO cycles with STATUS.busy == 1 (wraps at 2^32) */
    NPK_V0_REG_PERF_MACS_LO = 0x044,   /* RO MACs of descriptors the device retired */
    NPK_V0_REG_PERF_MACS_HI = 0x048,
    NPK_V0_REG_PERF_FALLBACKS = 0x04C, /* RO descriptors that raised unsupported_op */
    NPK_V0_REG_ERR_DESC_INDEX = 0x050, /* RO ring slot of the descriptor that latched the error */
    NPK_V0_REG_ERR_FAULT_ADDR_LO = 0x054, /* RO address of the last bus_error */
    NPK_V0_REG_ERR_FAULT_ADDR_HI = 0x058,
    NPK_V0_REG_COMPLETION_TAG = 0x05C  /* RO COMPLETION_TAG of the last retired descriptor;
                                          writable while CTRL.cpu_fallback_select == 1 */
};

/* ---- CAPS ---------------------------------------------------------------- */
#define NPK_V0_CAPS_GEMMINI (1u << 0)
#define NPK_V0_CAPS_INT8 (1u << 1)
#define NPK_V0_CAPS_INT32_ACCUM (1u << 2)
#define NPK_V0_CAPS_RELU (1u << 3)
#define NPK_V0_CAPS_ROWS_SHIFT 8
#define NPK_V0_CAPS_COLS_SHIFT 16
/* With Gemmini present: 0x0010100F. With gemmini_present=0 the wrapper has
 * no engine at all and CAPS reads 0. */
#define NPK_V0_CAPS_DEFAULT 0x0010100Fu

/* ---- CTRL ------------------------------------------------------------------ */
#define NPK_V0_CTRL_ENABLE (1u << 0)       /* fetch and execute committed descriptors */
#define NPK_V0_CTRL_FLUSH (1u << 1)        /* write 1: drop the ring, reset STATUS/ERR_* (self-clearing) */
#define NPK_V0_CTRL_IRQ_ENABLE (1u << 2)   /* gate of interrupt line 0 */
#define NPK_V0_CTRL_FALLBACK (1u << 3)     /* cpu_fallback_select */
#define NPK_V0_CTRL_MASK 0xFu

/* ---- STATUS ---------------------------------------------------------------
 * busy: a descriptor is executing (or waits forever on a hung bus beat).
 * queue_full: q_level == DESC_RING_LEN - 1 (one slot always stays empty).
 * queue_empty: q_level == 0.
 * done: queue empty, not busy, no error, and at least one descriptor has
 *   retired since reset/flush (a level, not an event; IRQ_STATUS.done is the event).
 * error: sticky error (see the recovery rules at NPK_V0_ERR_*).
 * q_level: committed descriptors not yet retired (includes the executing and
 *   a stalled one). err_code: NPK_V0_ERR_* while error == 1, else 0. */
#define NPK_V0_ST_BUSY (1u << 0)
#define NPK_V0_ST_QUEUE_FULL (1u << 1)
#define NPK_V0_ST_QUEUE_EMPTY (1u << 2)
#define NPK_V0_ST_DONE (1u << 3)
#define NPK_V0_ST_ERROR (1u << 4)
#define NPK_V0_ST_QLEVEL_SHIFT 8
#define NPK_V0_ST_ERRCODE_SHIFT 16
static inline uint32_t npk_v0_st_qlevel(uint32_t st) { return (st >> 8) & 0xFFu; }
static inline uint32_t npk_v0_st_errcode(uint32_t st) { return (st >> 16) & 0xFFu; }

/* ---- IRQ_STATUS / IRQ_MASK ------------------------------------------------
 * done is set when a descriptor with FLAGS.irq_on_complete retires and
 * IRQ_MASK.done == 1; the error bits are set whatever the mask (the mask
 * only gates line 0). */
#define NPK_V0_IRQ_DONE (1u << 0)
#define NPK_V0_IRQ_ERROR (1u << 1)
#define NPK_V0_IRQ_UNSUPPORTED (1u << 2)
#define NPK_V0_IRQ_BUS_ERROR (1u << 3)
#define NPK_V0_IRQ_QUEUE_OVERFLOW (1u << 4)
#define NPK_V0_IRQ_ALL 0x1Fu

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
} npk_v0_timing;
uint64_t npk_v0_model_cycles(const npk_v0_desc *d, const npk_v0_timing *t);
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
    NPK_V0_PH_ARRAY,  /* a tile on the 16x16 array (macs) */
    NPK_V0_PH_POOL    /* max-pool windows on the vector path */
} npk_v0_phase;
typedef void (*npk_v0_phase_fn)(void *ctx, npk_v0_phase ph, uint64_t start, uint64_t dur, uint64_t bytes,
                                uint64_t macs);
uint64_t npk_v0_model_schedule(const npk_v0_desc *d, const npk_v0_timing *t, npk_v0_phase_fn fn, void *ctx);

/* ======================================================================== */
/* ---- driver API (src/rt/v0_drv.c) ------------------------------------------
 * The driver programs the device through an npk_port exactly as software on
 * the chip would (MMIO and guest memory), so it runs unchanged over the
 * in-process model and the qtest port. Every call returns NPK_OK or a
 * negative npk_status; npk_errmsg() names the cause.
 *
 * Completion accounting: every descriptor submitted through the driver is
 * reported exactly once to the completion callback (if set): retired by the
 * device, retired by the CPU fallback handler, or dropped (with the error
 * that stopped the ring; the driver then flushes and the ring is usable
 * again). */
typedef struct npk_v0 npk_v0;
struct npk_e1; /* include/npukit/e1.h */

typedef struct npk_v0_config {
    uint32_t ring_len;        /* ring slots, power of two 2..256 (0 = 64) */
    int use_irq;              /* 1: wait for interrupt lines (irq_enable, IRQ_MASK = all); 0: poll STATUS */
    int cpu_fallback;         /* 1: CTRL.cpu_fallback_select and run the fallback handler on unsupported_op */
    uint64_t timeout_cycles;  /* device cycles without progress before -NPK_ETIMEDOUT (0 = 1e9) */
    uint64_t tensor_mem_base; /* TENSOR_MEM window (tensor_mem_len 0 = no window) */
    uint64_t tensor_mem_len;
} npk_v0_config;
/* Defaults: ring 64, polling, cpu_fallback on, timeout 1e9 cycles, no window. */
void npk_v0_config_default(npk_v0_config *c);

/* Open a driver on a port to a "v0" device (checks ID, programs the ring,
 * enables the device). The port stays the caller's. cfg NULL = defaults. */
int npk_v0_open(npk_v0 **out, npk_port *port, const npk_v0_config *cfg);
void npk_v0_close(npk_v0 *v);
npk_port *npk_v0_port(npk_v0 *v);
/* CAPS as read at open. */
uint32_t npk_v0_caps(const npk_v0 *v);

/* How a submitted descriptor ended. */
typedef enum npk_v0_outcome {
    NPK_V0_RETIRED_HW = 0,   /* the device executed and retired it */
    NPK_V0_RETIRED_CPU = 1,  /* the fallback handler executed it and advanced DESC_TAIL */
    NPK_V0_DROPPED = 2       /* not executed: the ring stopped (status says why) and was flushed */
} npk_v0_outcome;
/* Called once per descriptor passed to npk_v0_submit/run: its COMPLETION_TAG,
 * the ring slot (UINT32_MAX when it never reached the ring because the ring
 * failed first), the outcome, and 0 or the negative status of the failure. */
typedef void (*npk_v0_done_fn)(void *ctx, uint32_t tag, uint32_t slot, npk_v0_outcome outcome, int status);
void npk_v0_set_done_cb(npk_v0 *v, npk_v0_done_fn fn, void *ctx);

/* Write n descriptors into the ring and ring the doorbell (in batches when
 * the ring has less room, waiting for the device to make room). Returns 0,
 * or the first error the device reported while making room. */
int npk_v0_submit(npk_v0 *v, const npk_v0_desc *d, unsigned n);
/* Wait until every submitted descriptor is accounted for. Runs the fallback
 * handler on unsupported_op (when enabled). On a hard error (or a fallback
 * the CPU cannot run) reports the remaining descriptors as dropped, flushes,
 * re-arms the ring and returns -NPK_EDEVICE naming the descriptor and cause;
 * -NPK_ETIMEDOUT likewise when the device makes no progress. */
int npk_v0_wait(npk_v0 *v);
/* submit + wait. */
int npk_v0_run(npk_v0 *v, const npk_v0_desc *d, unsigned n);
/* Descriptors submitted and not yet accounted for. */
unsigned npk_v0_pending(const npk_v0 *v);

/* The handler a kernel driver runs on irq_fallback: reads the descriptor at
 * ERR_DESC_INDEX, executes it with the CPU reference ops on guest memory,
 * writes COMPLETION_TAG, clears IRQ_STATUS.unsupported_op|error and writes
 * DESC_TAIL = ERR_DESC_INDEX + 1. Returns 0, or a negative status (leaving
 * the device untouched) when no fallback is pending or the CPU cannot run
 * the descriptor (unknown opcode, absurd shape). */
int npk_v0_fallback_handler(npk_v0 *v);
/* Execute one descriptor on the CPU against guest memory through the port
 * (CPU view). Any shape the reference ops accept, not only the envelope. */
int npk_v0_cpu_execute(npk_port *p, const npk_v0_desc *d);

/* Decode the device's error state into a message (also sets npk_errmsg)
 * and return -NPK_EDEVICE. */
int npk_v0_decode_error(npk_v0 *v);
/* CTRL.flush + IRQ_STATUS clear + ring re-arm. Pending descriptors are
 * reported as dropped with -NPK_EDEVICE. */
int npk_v0_flush(npk_v0 *v);

typedef struct npk_v0_counters {
    uint32_t perf_cycles, perf_fallbacks;
    uint64_t perf_macs;
} npk_v0_counters;
int npk_v0_read_counters(npk_v0 *v, npk_v0_counters *c);

/* What the driver did since open. */
typedef struct npk_v0_stats {
    uint64_t submitted, retired_hw, retired_cpu, dropped, doorbells, fallbacks_run;
    uint64_t routed_e1, routed_cpu;   /* high-level ops sent around the device (gemmini absent) */
    uint64_t device_cycles;           /* cycles waited */
} npk_v0_stats;
const npk_v0_stats *npk_v0_get_stats(const npk_v0 *v);

/* ---- high-level operations ---------------------------------------------------
 * Copy host tensors into guest buffers (npk_port_alloc, 16-byte aligned
 * rows), build descriptors, run them, copy the results back and free the
 * buffers. Shapes beyond the envelope are tiled (matmul) or left to the CPU
 * fallback (conv, pool). When CAPS.gemmini_present == 0 the work is routed
 * around the device instead: to the e1 device when one is attached
 * (npk_v0_set_e1) for what its datapath can do (GEMM tiles, ReLU), to the
 * CPU reference otherwise; npk_v0_last_route() says which. */

/* C[M][N] int32 = A[M][K] int8 x B[K][N] int8 (relu: max(0, .)). Any M, N, K >= 1. */
int npk_v0_matmul(npk_v0 *v, uint32_t M, uint32_t N, uint32_t K, const int8_t *A, const int8_t *B, int32_t *C,
                  int relu);
/* out[OH][OW][cout] int8 = saturate(conv(in[h][w][cin], wt[ksize][ksize][cin][cout])), relu optional. */
int npk_v0_conv2d(npk_v0 *v, const npk_v0_conv *c, const int8_t *in, const int8_t *wt, int8_t *out, int relu);
/* out[OH][OW][cout] int32 accumulators of the same convolution (no saturation),
 * computed as host im2col + device MATMUL_S8: for callers that add a bias and
 * requantize themselves (v0 has no bias or scale). */
int npk_v0_conv2d_s32(npk_v0 *v, const npk_v0_conv *c, const int8_t *in, const int8_t *wt, int32_t *out);
/* out[n] = max(0, in[n]) int8 (in may equal out). */
int npk_v0_relu(npk_v0 *v, const int8_t *in, int8_t *out, size_t n);
/* out[OH][OW][c] = max pool of in[h][w][c] (relu optional). */
int npk_v0_maxpool(npk_v0 *v, const npk_v0_pool *p, const int8_t *in, int8_t *out, int relu);

/* Attach an e1 driver (include/npukit/e1.h) as the routing target when the
 * v0 reports gemmini_present == 0 (NULL detaches). */
void npk_v0_set_e1(npk_v0 *v, struct npk_e1 *e1);
/* One line describing where the last high-level op ran and why. */
const char *npk_v0_last_route(const npk_v0 *v);

/* ---- text form of descriptor rings (src/rt/v0_asm.c) ---------------------------
 * One descriptor per line: a mnemonic (nop, matmul_s8, matmul_s8_relu,
 * conv2d_s8, conv2d_s8_relu, relu, maxpool_s8, barrier, fallback) or
 * "op=0xNNNN", then key=value fields; '#' starts a comment. See docs/v0.md.
 * The binary image is the 64-byte descriptors back to back; asm(disasm(x))
 * == x for every image whose length is a multiple of 64. */
int npk_v0_asm(const char *text, uint8_t **bin, size_t *len);
int npk_v0_disasm(const uint8_t *bin, size_t len, char **text);

#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_V0_H */
