// SPDX-License-Identifier: MIT
/*
 * npukit: the v0 driver API (src/rt/v0_drv.c), the CPU fallback handler and
 * the text form of descriptor rings (src/rt/v0_asm.c). The hardware ABI it
 * programs is npukit/v0_regs.h.
 */
#ifndef NPUKIT_V0_DRV_H
#define NPUKIT_V0_DRV_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/npu.h"
#include "npukit/v0_regs.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* The host half of the unsupported_op contract: execute one descriptor on
 * the CPU against guest memory through the port (CPU view). Returns 0 or a
 * negative status with npk_errmsg() naming the cause. The ops layer provides
 * npk_v0_cpu_execute (src/ops/v0_cpu.c, the CPU reference ops); the driver
 * knows no golden op and only calls what the caller plugs in. */
typedef int (*npk_v0_cpu_fn)(npk_port *p, const npk_v0_desc *d);

typedef struct npk_v0_config {
    uint32_t ring_len;        /* ring slots, power of two 2..256 (0 = 64) */
    int use_irq;              /* 1: wait for interrupt lines (irq_enable, IRQ_MASK = all); 0: poll STATUS */
    int cpu_fallback;         /* 1: CTRL.cpu_fallback_select and run the fallback handler on unsupported_op */
    uint64_t timeout_cycles;  /* device cycles without progress before -NPK_ETIMEDOUT (0 = 1e9) */
    uint64_t tensor_mem_base; /* TENSOR_MEM window (tensor_mem_len 0 = no window) */
    uint64_t tensor_mem_len;
    npk_v0_cpu_fn cpu_exec;   /* what the fallback handler runs (npk_v0_cpu_execute); NULL: an
                               * unsupported_op descriptor fails with -NPK_EUNSUPPORTED */
} npk_v0_config;
/* Defaults: ring 64, polling, cpu_fallback on, timeout 1e9 cycles, no window,
 * no CPU executor (set cpu_exec = npk_v0_cpu_execute to run fallbacks). */
void npk_v0_config_default(npk_v0_config *c);

/* Open a driver on a port to a "v0" device (checks ID, programs the ring,
 * enables the device). The port stays the caller's. cfg NULL = defaults. */
int npk_v0_open(npk_v0 **out, npk_port *port, const npk_v0_config *cfg);
void npk_v0_close(npk_v0 *v);
npk_port *npk_v0_port(npk_v0 *v);
/* CAPS as read at open. */
uint32_t npk_v0_caps(const npk_v0 *v);
/* 1 when the device may reach [addr, addr + len): no TENSOR_MEM window is
 * configured (npk_v0_config.tensor_mem_len 0) or the range lies inside it. */
int npk_v0_reaches(const npk_v0 *v, uint64_t addr, uint64_t len);

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
 * ERR_DESC_INDEX, executes it with the configured CPU executor (cpu_exec),
 * writes COMPLETION_TAG, clears IRQ_STATUS.unsupported_op|error and writes
 * DESC_TAIL = ERR_DESC_INDEX + 1. Returns 0, or a negative status (leaving
 * the device untouched) when no fallback is pending or the CPU cannot run
 * the descriptor (unknown opcode, absurd shape). */
int npk_v0_fallback_handler(npk_v0 *v);

/* Decode the device's error state into a message (also sets npk_errmsg)
 * and return -NPK_EDEVICE. */
int npk_v0_decode_error(npk_v0 *v);
/* CTRL.flush + IRQ_STATUS clear + ring re-arm. Pending descriptors are
 * reported as dropped with -NPK_EDEVICE. */
int npk_v0_flush(npk_v0 *v);

typedef struct npk_v0_counters {
    uint32_t perf_cycles, perf_fallbacks;
    uint64_t perf_macs;
    npk_v0_engine_stats engines; /* PERF_DRAM_*, PERF_SPAD, PERF_ACC, PERF_COMPUTE, PERF_DMA */
} npk_v0_counters;
int npk_v0_read_counters(npk_v0 *v, npk_v0_counters *c);

/* What the driver did since open. */
typedef struct npk_v0_stats {
    uint64_t submitted, retired_hw, retired_cpu, dropped, doorbells, fallbacks_run;
    uint64_t routed_e1, routed_cpu;   /* high-level ops sent around the device (gemmini absent) */
    uint64_t device_cycles;           /* cycles waited */
} npk_v0_stats;
const npk_v0_stats *npk_v0_get_stats(const npk_v0 *v);

/* ---- high-level operations (the ops layer: src/ops/v0_lower.c, v0_cpu.c) -----
 * Copy host tensors into guest buffers (npk_port_alloc, 16-byte aligned
 * rows), build descriptors, run them, copy the results back and free the
 * buffers. Shapes beyond the envelope are tiled (matmul) or left to the CPU
 * fallback (conv, pool: open the driver with cpu_exec = npk_v0_cpu_execute). When CAPS.gemmini_present == 0 the work is routed
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

/* The CPU executor (src/ops/v0_cpu.c, an npk_v0_cpu_fn for
 * npk_v0_config.cpu_exec): one descriptor on the CPU reference ops against
 * guest memory. Any shape the reference ops accept, not only the envelope. */
int npk_v0_cpu_execute(npk_port *p, const npk_v0_desc *d);

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
#endif /* NPUKIT_V0_DRV_H */
