/*
 * npukit: the e1 NPU.
 *
 * Part 1 (this part) is the hardware ABI: register offsets, bit fields,
 * opcodes, descriptor layout and status codes of the e1 chip's MMIO NPU as
 * described by shared/spec/e1-npu.md and settled by e1-rtl-notes.md (the
 * reference RTL). It is the manual a driver writer reads; the device model
 * (src/sim/e1.c) implements exactly this. Part 2 (below the marker at the
 * end) is the driver API (src/rt/e1_drv.c).
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
#ifndef NPUKIT_E1_H
#define NPUKIT_E1_H

#include <stdint.h>

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

/* ---- register offsets (bytes from E1_MMIO_BASE, modulo E1_REG_SPAN) -------- */
enum e1_reg {
    E1_REG_OP_A = 0x00,          /* RW operand A (latched at start) */
    E1_REG_OP_B = 0x04,          /* RW operand B (latched at start) */
    E1_REG_RESULT = 0x08,        /* RO result low word (writes ignored) */
    E1_REG_CTRL_STATUS = 0x0c,   /* W: E1_CTRL_* commands; R: E1_ST_* bits */
    E1_REG_OPCODE = 0x10,        /* RW opcode [3:0] (latched at start) */
    E1_REG_ACC = 0x14,           /* RW accumulator / SDOT4 positions (latched) */
    E1_REG_RESULT_HI = 0x18,     /* RO result high word */
    E1_REG_TRACE = 0x1c,         /* RO E1_TRACE_* fields */
    E1_REG_GEMM_CFG = 0x20,      /* RW masked E1_GEMM_CFG_MASK; read live while running */
    E1_REG_GEMM_BASE = 0x24,     /* RW masked E1_GEMM_BASE_MASK; read live */
    E1_REG_GEMM_STRIDE = 0x28,   /* RW masked E1_GEMM_STRIDE_MASK; read live */
    E1_REG_PERF_UNSUPPORTED = 0x2c, /* RO rejected starts / doorbells / descriptors */
    E1_REG_CMD_PARAM = 0x30,     /* RW E1_CMD_* bits + owner token [31:12] */
    E1_REG_SEC_OWNER_CFG = 0x34, /* RW while unlocked: E1_SEC_OWNER_* */
    E1_REG_SEC_LOCK = 0x38,      /* W bit 0 = 1: lock SEC_OWNER_CFG until reset; reads 0 */
    E1_REG_SEC_STATUS = 0x3c,    /* RO E1_SEC_ST_* */
    E1_REG_DESC_BASE = 0x40,     /* RW ring base byte address (must be 4-aligned) */
    E1_REG_DESC_HEAD = 0x44,     /* RW [2:0] software producer index */
    E1_REG_DESC_TAIL = 0x48,     /* RW [2:0] hardware consumer index */
    E1_REG_DESC_STATUS = 0x4c,   /* RO E1_DS_* code | overlays */
    E1_REG_PERF_CYCLES = 0x50,   /* GEMM/VRELU busy cycles */
    E1_REG_PERF_MACS = 0x54,     /* GEMM MACs */
    E1_REG_PERF_OPS = 0x58,      /* accepted starts + launched descriptor ops */
    E1_REG_PERF_ERRORS = 0x5c,   /* every error; write bit 0 = clear perf counters */
    E1_REG_DESC_TIMEOUT_COUNT = 0x60, /* cycles busy since doorbell / last advance */
    E1_REG_DESC_BYTES_READ = 0x64,    /* 4 per OKAY read beat */
    E1_REG_DESC_BYTES_WRITTEN = 0x68, /* 4 per OKAY write response */
    E1_REG_DESC_READ_BEATS = 0x6c,
    E1_REG_DESC_WRITE_BEATS = 0x70,
    E1_REG_PERF_STALL_CYCLES = 0x74,  /* busy cycles in a memory-wait state */
    E1_REG_PERF_SCRATCH_BYTES = 0x78, /* scratchpad bytes accessed */
    E1_REG_PERF_THERMAL_THROTTLE = 0x7c, /* +1 per MMIO write to it */
    E1_REG_SCRATCH0 = 0x80       /* SCRATCH[i] at 0x80 + 4*i, i < 16, LE bytes */
};
#define E1_REG_SCRATCH(i) (E1_REG_SCRATCH0 + 4u * (uint32_t)(i))

/* ---- CTRL_STATUS ----------------------------------------------------------
 * Write: E1_CTRL_START starts (only when idle; a start while busy is
 * silently ignored); E1_CTRL_CLEAR clears done/error and also zeroes
 * DESC_STATUS, err_index, DESC_TIMEOUT_COUNT and the four descriptor
 * byte/beat counters. The clear is applied after the start is evaluated in
 * the same write, so 0x3 with a start that fails at once leaves status 0.
 * Read: only 0, 1 (busy), 2 (done), 6 (done|error) occur. */
#define E1_CTRL_START 0x1u
#define E1_CTRL_CLEAR 0x2u
#define E1_ST_BUSY 0x1u
#define E1_ST_DONE 0x2u
#define E1_ST_ERROR 0x4u

/* ---- TRACE (read only) ---------------------------------------------------- */
#define E1_TRACE_BUSY_COUNT_MASK 0x7u   /* [2:0] cycles left of the scalar op (latency, counts down to 0) */
#define E1_TRACE_OPCODE_SHIFT 3         /* [6:3] latched opcode */
#define E1_TRACE_OPCODE_MASK (0xfu << 3)
#define E1_TRACE_GEMM_BUSY (1u << 7)    /* GEMM engine running */
#define E1_TRACE_VEC_BUSY (1u << 8)     /* VRELU engine running */

/* ---- CMD_PARAM ------------------------------------------------------------ */
#define E1_CMD_DESC 0x1u                /* start = descriptor doorbell */
#define E1_CMD_TERNARY 0x2u             /* DOT16_S2 ternary decode (latched at start) */
#define E1_CMD_OWNER_SHIFT 12           /* [31:12] owner token for the SEC gate */
#define E1_CMD_OWNER_MASK 0xfffff000u
static inline uint32_t e1_cmd_param(int desc, int ternary, uint32_t owner) {
    return (desc ? E1_CMD_DESC : 0u) | (ternary ? E1_CMD_TERNARY : 0u) | (owner << E1_CMD_OWNER_SHIFT);
}

/* ---- security ------------------------------------------------------------
 * SEC_OWNER_CFG is writable only while SEC_LOCK has not been set. When
 * OWNED and LOCKED (SEC_LOCK written with bit 0 = 1) a doorbell whose
 * CMD_PARAM[31:12] differs from OWNER fails with E1_DS_OWNER. When OWNED
 * and PERF_LOCK, reads of PERF_UNSUPPORTED (0x2c) and 0x50-0x7c return 0
 * (the counters keep counting). */
#define E1_SEC_OWNER_MASK 0x000fffffu   /* SEC_OWNER_CFG[19:0] owner id */
#define E1_SEC_OWNER_PERF_LOCK (1u << 30)
#define E1_SEC_OWNER_OWNED (1u << 31)
#define E1_SEC_OWNER_CFG_MASK 0xc00fffffu
#define E1_SEC_LOCK_SET 0x1u
/* SEC_STATUS = {24'h000004, 4'b0, lock, perf_lock, perf_hidden, owned};
 * reset value 0x400. (e1-npu.md numbers these bits differently; the RTL's
 * layout is used.) */
#define E1_SEC_ST_OWNED (1u << 0)
#define E1_SEC_ST_PERF_HIDDEN (1u << 1)  /* owned && perf_lock */
#define E1_SEC_ST_PERF_LOCK (1u << 2)
#define E1_SEC_ST_LOCK (1u << 3)
#define E1_SEC_ST_SOURCE_SHIFT 8
#define E1_SEC_STATUS_RESET 0x400u

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

/* ---- GEMM / VRELU configuration (MMIO, shared by direct and ring ops) ------
 * GEMM_CFG: M [1:0], N [9:8], K [18:16]; VRELU reuses [5:0] as LEN.
 * GEMM_BASE: A (VRELU src) [5:0], B (VRELU dst) [13:8], C [21:16].
 * GEMM_STRIDE: A [3:0], B [11:8], C [19:16].
 * Read-back is masked: only these bits are stored. */
#define E1_GEMM_CFG_MASK 0x0007033fu
#define E1_GEMM_BASE_MASK 0x003f3f3fu
#define E1_GEMM_STRIDE_MASK 0x000f0f0fu
static inline uint32_t e1_gemm_cfg(uint32_t m, uint32_t n, uint32_t k) {
    return ((m & 3u) | (n & 3u) << 8 | (k & 7u) << 16);
}
static inline uint32_t e1_vrelu_cfg(uint32_t len) { return len & 0x3fu; }
static inline uint32_t e1_gemm_m(uint32_t cfg) { return cfg & 3u; }
static inline uint32_t e1_gemm_n(uint32_t cfg) { return (cfg >> 8) & 3u; }
static inline uint32_t e1_gemm_k(uint32_t cfg) { return (cfg >> 16) & 7u; }
static inline uint32_t e1_vrelu_len(uint32_t cfg) { return cfg & 0x3fu; }
static inline uint32_t e1_gemm_base(uint32_t a, uint32_t b, uint32_t c) {
    return (a & 0x3fu) | (b & 0x3fu) << 8 | (c & 0x3fu) << 16;
}
static inline uint32_t e1_gemm_base_a(uint32_t v) { return v & 0x3fu; }
static inline uint32_t e1_gemm_base_b(uint32_t v) { return (v >> 8) & 0x3fu; }
static inline uint32_t e1_gemm_base_c(uint32_t v) { return (v >> 16) & 0x3fu; }
static inline uint32_t e1_gemm_stride(uint32_t a, uint32_t b, uint32_t c) {
    return (a & 0xfu) | (b & 0xfu) << 8 | (c & 0xfu) << 16;
}
static inline uint32_t e1_gemm_stride_a(uint32_t v) { return v & 0xfu; }
static inline uint32_t e1_gemm_stride_b(uint32_t v) { return (v >> 8) & 0xfu; }
static inline uint32_t e1_gemm_stride_c(uint32_t v) { return (v >> 16) & 0xfu; }

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
#define E1_DS_CODE_MASK 0xffu
#define E1_DS_ERROR_BIT 0x04u      /* [2]: set in every error code above */
#define E1_DS_BUSY (1u << 8)
#define E1_DS_ERR_INDEX_SHIFT 9
#define E1_DS_ERR_INDEX_MASK (7u << 9)
#define E1_DS_PENDING_SHIFT 19
#define E1_DS_PENDING_MASK (7u << 19)
static inline uint32_t e1_ds_code(uint32_t ds) { return ds & E1_DS_CODE_MASK; }
static inline uint32_t e1_ds_err_index(uint32_t ds) { return (ds >> 9) & 7u; }
static inline uint32_t e1_ds_pending(uint32_t ds) { return (ds >> 19) & 7u; }
static inline int e1_ds_busy(uint32_t ds) { return (int)((ds >> 8) & 1u); }

/* ---- counters ------------------------------------------------------------- */
#define E1_PERF_CLEAR 0x1u          /* write to PERF_ERRORS: zero all counters but DESC_TIMEOUT_COUNT */

/* ---- driver API (src/rt/e1_drv.c) ---- */
/*
 * The e1 driver programs the device through an npk_port exactly as software
 * on the chip would: MMIO register writes, polling CTRL_STATUS.done, and a
 * descriptor ring staged in guest memory. It runs unchanged over the
 * in-process model, the qtest port and UIO.
 *
 * Every call returns NPK_OK or a negative npk_status; npk_errmsg() names the
 * cause ("descriptor 2: stream length 62 is not word-aligned"). Requests the
 * chip would reject are refused before any MMIO where the driver can tell
 * (-NPK_EINVAL); errors the device latches are decoded (-NPK_EDEVICE), the
 * device state is recorded (npk_e1_last_fault) and the error is cleared so
 * the next request starts clean. A wait that exceeds the timeout budget
 * returns -NPK_ETIMEDOUT.
 */
#include "npukit/npu.h"

typedef struct npk_e1 npk_e1;

/* Open a driver on a port to an "e1" device. The port stays the caller's. */
int npk_e1_open(npk_e1 **out, npk_port *port);
void npk_e1_close(npk_e1 *e);
npk_port *npk_e1_port(npk_e1 *e);
/* Wait budget per request in device cycles (default 10,000,000). */
void npk_e1_set_timeout(npk_e1 *e, uint64_t cycles);
/* Owner token placed in CMD_PARAM[31:12] for doorbells (SEC owner gate). */
void npk_e1_set_owner(npk_e1 *e, uint32_t token);

/* Result registers of a command. */
typedef struct npk_e1_result {
    uint32_t result;    /* RESULT */
    uint32_t result_hi; /* RESULT_HI */
} npk_e1_result;

/* Run one scalar opcode (every opcode except GEMM_S8, GEMM_S4, VRELU_S8):
 * OP_A = a, OP_B = b, ACC = acc. For DOT16_S2, ternary selects the {-1,0,+1}
 * decode; lanes encoded 0b11 are refused (-NPK_EINVAL) before the device
 * sees them. */
int npk_e1_scalar(npk_e1 *e, unsigned opcode, uint32_t a, uint32_t b, uint32_t acc, int ternary,
                  npk_e1_result *r);

/* Scratchpad access through SCRATCH[0..15] (byte granular; partial words
 * are read-modify-written). off + len <= 64. */
int npk_e1_scratch_write(npk_e1 *e, unsigned off, const void *src, unsigned len);
int npk_e1_scratch_read(npk_e1 *e, unsigned off, void *dst, unsigned len);

/* A GEMM tile as the chip's GEMM_CFG/BASE/STRIDE registers describe it.
 * Bases and strides of A and B count bytes (GEMM_S8) or nibbles (GEMM_S4);
 * C's count bytes. */
typedef struct npk_e1_gemm {
    unsigned m, n, k;                       /* 1..3, 1..3, 1..7 */
    unsigned a_base, b_base, c_base;        /* 0..63 */
    unsigned a_stride, b_stride, c_stride;  /* 0..15 */
} npk_e1_gemm;

/* The chip's whole-tile validation (0 or -NPK_EINVAL naming the rule). */
int npk_e1_gemm_check(const npk_e1_gemm *g, int int4);
/* Choose a packed scratchpad layout for an m x n x k tile: A at 0 (row
 * stride k), B after it (row stride n), C word-aligned after B (stride 4n).
 * Returns 0, or -NPK_EINVAL when the tile does not fit in 64 bytes. */
int npk_e1_gemm_layout(int int4, unsigned m, unsigned n, unsigned k, npk_e1_gemm *g);
/* Program GEMM_CFG/BASE/STRIDE and run GEMM_S8 (int4 = 0) or GEMM_S4 on
 * whatever the scratchpad holds. */
int npk_e1_gemm_run(npk_e1 *e, const npk_e1_gemm *g, int int4);
/* One complete tile: stage A[m][k] and B[k][n] (int8; int4 values in
 * -8..7 when int4), run, read C[m][n] (int32). */
int npk_e1_gemm_tile(npk_e1 *e, int int4, unsigned m, unsigned n, unsigned k, const int8_t *A, const int8_t *B,
                     int32_t *C);
/* VRELU_S8 over scratchpad bytes [src, src+len) -> [dst, dst+len). */
int npk_e1_vrelu_run(npk_e1 *e, unsigned src, unsigned dst, unsigned len);
/* relu of len <= 64 int8 values: stage, VRELU in place, read back. */
int npk_e1_relu(npk_e1 *e, const int8_t *in, int8_t *out, unsigned len);

/* ---- command buffers (descriptor ring) ----
 * Up to E1_RING_MAX_PENDING descriptors submitted with one doorbell. The
 * driver stages them in its ring (guest memory it allocates at open) from
 * the device's current DESC_TAIL, sets DESC_HEAD one past the last (the
 * chip's producer/consumer roles), rings the doorbell and waits. GEMM and
 * VRELU descriptors take their shape from the MMIO GEMM registers, so one
 * buffer carries at most one GEMM configuration (gemm, may be NULL). */
typedef struct npk_e1_desc {
    uint32_t w[4];
} npk_e1_desc;

/* A scalar descriptor (valid_owner set, no stream, no writeback). */
npk_e1_desc npk_e1_desc_scalar(unsigned opcode, uint32_t a, uint32_t b, uint32_t acc);
/* A descriptor that streams len bytes from guest address src into the
 * scratchpad at scratch_off, then runs opcode; for GEMM opcodes a non-zero
 * wb_addr requests writeback of the M*N result words to wb_addr. */
npk_e1_desc npk_e1_desc_stream(unsigned opcode, uint64_t src, unsigned scratch_off, unsigned len, uint64_t wb_addr);

/* The MMIO tile configuration a command buffer's GEMM or VRELU
 * descriptors share (GEMM_CFG/BASE/STRIDE are global registers). */
typedef struct npk_e1_tilecfg {
    int vrelu;              /* 0: GEMM tile below; 1: VRELU of len bytes src -> dst */
    npk_e1_gemm gemm;
    unsigned len, src, dst; /* VRELU: 1..63 bytes, scratchpad byte offsets */
} npk_e1_tilecfg;

/* Validate a command buffer the way the chip will (n, valid_owner, stream
 * and writeback rules, tile config); -NPK_EINVAL names the descriptor. cfg
 * may be NULL when no descriptor is a GEMM or VRELU. Two guards against chip
 * quirks that would otherwise give a silent wrong answer: with ternary set, a
 * DOT16_S2 descriptor whose w1 (OP_A, also the stream source) or w2 (OP_B)
 * holds a 0b11 lane is refused; a GEMM writeback needs C_STRIDE == 4*N when
 * M > 1 (the chip copies M*N contiguous words and ignores C_STRIDE). */
int npk_e1_cmdbuf_check(const npk_e1_desc *d, unsigned n, const npk_e1_tilecfg *cfg, int ternary);
/* Submit and wait. last (may be NULL) receives RESULT/RESULT_HI after the
 * batch (the last scalar op's result). On a device error the message names
 * the failing descriptor's index in d[]. */
int npk_e1_submit(npk_e1 *e, const npk_e1_desc *d, unsigned n, const npk_e1_tilecfg *cfg, int ternary,
                  npk_e1_result *last);

/* ---- state, counters, statistics ---- */
/* Device state captured when the last request failed on the device. */
typedef struct npk_e1_fault {
    uint32_t ctrl_status, desc_status, desc_tail, desc_head;
    int desc_index;   /* index in the submitted buffer of the failing descriptor, or -1 */
} npk_e1_fault;
const npk_e1_fault *npk_e1_last_fault(const npk_e1 *e);
/* Text for a DESC_STATUS code ("stream read bus error", ...). */
const char *npk_e1_desc_status_text(uint32_t code);
/* Clear done/error (CTRL_STATUS bit 1). */
int npk_e1_clear(npk_e1 *e);

typedef struct npk_e1_counters {
    uint32_t perf_cycles, perf_macs, perf_ops, perf_errors, perf_unsupported;
    uint32_t desc_timeout_count, desc_bytes_read, desc_bytes_written, desc_read_beats, desc_write_beats;
    uint32_t perf_stall_cycles, perf_scratch_bytes, perf_thermal_throttle;
} npk_e1_counters;
int npk_e1_read_counters(npk_e1 *e, npk_e1_counters *c);
/* Zero every counter except DESC_TIMEOUT_COUNT (PERF_ERRORS bit 0). */
int npk_e1_clear_counters(npk_e1 *e);

/* What this driver has dispatched since open (evidence for lowerings). */
typedef struct npk_e1_stats {
    uint64_t direct[E1_NUM_OPCODES]; /* direct MMIO starts per opcode */
    uint64_t desc[E1_NUM_OPCODES];   /* descriptors per opcode */
    uint64_t batches;                /* doorbells */
    uint64_t macs;                   /* GEMM MACs requested */
    uint64_t device_cycles;          /* cycles waited for the device */
    uint64_t desc_bytes_read;        /* guest-memory bytes the rings' descriptors read
                                        (16 per descriptor fetch + streamed operands) */
    uint64_t desc_bytes_written;     /* guest-memory bytes their writebacks wrote */
    uint64_t scratch_bytes_written;  /* scratchpad bytes the host wrote over MMIO (SCRATCH registers) */
    uint64_t scratch_bytes_read;     /* scratchpad bytes the host read over MMIO */
} npk_e1_stats;
const npk_e1_stats *npk_e1_get_stats(const npk_e1 *e);
void npk_e1_reset_stats(npk_e1 *e);

/* ---- replay of a prepared host runtime sequence (src/rt/e1_replay.c) ----
 * A compiled package (docs/e1-compile.md) carries the exact writes a host
 * makes: GEMM preamble registers, descriptor memory words, the DESC_* / CMD /
 * CTRL submission, then a DESC_STATUS completion poll. Only the registers of
 * the runtime MMIO contract may be written (GEMM_CFG/BASE/STRIDE, DESC_BASE/
 * HEAD/TAIL, CMD_PARAM, CTRL_STATUS). The poll waits until DESC_STATUS shows
 * done or an error (budget: the driver timeout); an error or a timeout is
 * returned as -NPK_EDEVICE / -NPK_ETIMEDOUT naming DESC_STATUS. */
typedef struct npk_e1_reg_write {
    uint32_t reg, value;
} npk_e1_reg_write;
typedef struct npk_e1_mem_write {
    uint64_t addr;
    uint32_t value;
} npk_e1_mem_write;
int npk_e1_replay(npk_e1 *e, const npk_e1_reg_write *pre, unsigned npre, const npk_e1_mem_write *mem, unsigned nmem,
                  const npk_e1_reg_write *sub, unsigned nsub, uint32_t *desc_status);
/* The driver caches registers it wrote; after writes it did not make
 * (a replay) it must forget them. */
void npk_e1_forget_registers(npk_e1 *e);
/* The job.h recovery after a timeout: drain the engine, clear, forget the
 * register shadow, take the ring position from the device. */
int npk_e1_recover(npk_e1 *e);
/* The driver's wait budget in device cycles. */
uint64_t npk_e1_timeout(const npk_e1 *e);


#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_E1_H */
