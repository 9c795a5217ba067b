// SPDX-License-Identifier: MIT
/*
 * npukit: the e1 driver API (src/rt/e1_drv.c). The hardware ABI it programs
 * is npukit/e1_regs.h.
 */
#ifndef NPUKIT_E1_DRV_H
#define NPUKIT_E1_DRV_H

#include <stdint.h>

#include "npukit/e1_regs.h"
#include "npukit/npu.h"

#ifdef __cplusplus
extern "C" {
#endif

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
#endif /* NPUKIT_E1_DRV_H */
