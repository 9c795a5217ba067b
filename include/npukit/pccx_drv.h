// SPDX-License-Identifier: MIT
/*
 * npukit: the pccx driver API (src/rt/pccx_drv.c), the text assembler
 * (src/rt/pccx_asm.c) and host-side helpers. The hardware ABI (ISA in
 * npukit/pccx_isa.h, registers) they use is npukit/pccx_regs.h.
 */
#ifndef NPUKIT_PCCX_DRV_H
#define NPUKIT_PCCX_DRV_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/npu.h"
#include "npukit/pccx_regs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- assembler / disassembler (npu asm|disasm --device pccx) ----------------
 * Binary: 64-bit instructions, little-endian, 8 bytes each.
 * Text: one instruction per line, named fields (any order; omitted fields 0):
 *   gemv   dest_reg=768 src_addr=400 flags=accm size_ptr_addr=2 shape_ptr_addr=9 parallel_lane=4
 *   gemm   dest_reg=512 src_addr=300 flags=w_scale size_ptr_addr=1 shape_ptr_addr=3 parallel_lane=4
 *   memcpy from_device=host to_device=npu dest_addr=100 src_addr=0 aux_addr=0 shape_ptr_addr=3 async=0
 *   memset dest_cache=fmap_shape dest_addr=3 a_value=1 b_value=1 c_value=9
 *   cvo    cvo_func=reduce_sum src_addr=768 dst_addr=896 length=64 flags=0 async=0
 *   .word  0x5000000000000000        (any raw word; disasm uses it for words
 *                                     that do not decode to a valid instruction)
 * flags: 0, a number, or names joined by '|' (findemax accm w_scale /
 * sub_emax recip_scale accm). Numbers are decimal or 0x hex. '#' or ';'
 * start a comment. Short aliases: dest src aux shape size lane len func cache
 * index a b c, from/to = host|npu|0|1. */
int npk_pccx_asm(const char *text, uint8_t **bin, size_t *len);
int npk_pccx_disasm(const uint8_t *bin, size_t len, char **text);
/* One instruction to text (no newline); returns the length written (snprintf). */
int npk_pccx_format(uint64_t word, char *buf, size_t size);

/* ---- host-side helpers --------------------------------------------------------- */

/* Symmetric INT4 quantization of w [N][K]: per (row, group) scale =
 * max|w| / 7 (1 for an all-zero group), q = round-half-away(w / scale)
 * clamped to -8..7. q [N][K], scales [N][ceil(K/G)]. */
void npk_pccx_quantize_q4(const float *w, unsigned N, unsigned K, unsigned G, int8_t *q, float *scales);

/* ---- driver ---------------------------------------------------------------------
 * In the style of the project's uca_* driver (gemv, gemm, cvo, memcpy, memset,
 * sync) with error returns. Works over any port (sim, qtest, uio): it touches
 * the device only through npk_port_*.
 *
 * Issuing is asynchronous: npk_pccx_gemv() etc. return once the instruction
 * is in the device queue; faults are reported by the next npk_pccx_sync()
 * (-NPK_EDEVICE, message naming the fault, the instruction index and its
 * disassembly; the driver then flushes the queue and clears the fault).
 * Register writes (stream pointer, e_max, scalar, window) take effect at once,
 * so the driver syncs before writing them while instructions are pending.
 */
typedef struct npk_pccx npk_pccx;

/* Driver options (zero-initialised = defaults). */
typedef struct npk_pccx_cfg {
    uint64_t hwin_bytes;    /* host window size (default and max 2 MiB) */
    uint64_t ws_bytes;      /* weight-stream arena for npk_pccx_wmat_upload (default 16 MiB) */
    uint64_t sync_budget;   /* max device cycles one sync waits (default 2^34) */
} npk_pccx_cfg;

/* Attach to a device behind `port` (not owned; must outlive the driver).
 * Checks ID/VERSION, resets the device, allocates the host window and the
 * weight arena in guest memory and programs HWIN_* and WS_*. */
int npk_pccx_open(npk_pccx **out, npk_port *port, const npk_pccx_cfg *cfg);
void npk_pccx_close(npk_pccx *d);
npk_port *npk_pccx_port(npk_pccx *d);

/* Raw access. */
int npk_pccx_issue(npk_pccx *d, uint64_t word);
/* Wait until the queue is empty and the device idle. Returns 0,
 * -NPK_EDEVICE (a fault; see above), -NPK_ETIMEDOUT (budget exhausted or the
 * device hung on the bus; the driver soft-resets it) or a port error. */
int npk_pccx_sync(npk_pccx *d);

/* uca_*-style issue functions (see the field meanings above). */
int npk_pccx_gemv(npk_pccx *d, uint32_t dest, uint32_t src, unsigned flags, unsigned size_ptr, unsigned shape_ptr,
                  unsigned lanes);
int npk_pccx_gemm(npk_pccx *d, uint32_t dest, uint32_t src, unsigned flags, unsigned size_ptr, unsigned shape_ptr,
                  unsigned lanes);
int npk_pccx_cvo(npk_pccx *d, unsigned func, uint32_t src, uint32_t dst, unsigned length, unsigned flags,
                 unsigned async);
int npk_pccx_memcpy(npk_pccx *d, unsigned from_device, unsigned to_device, uint32_t dest, uint32_t src,
                    uint32_t aux, unsigned shape_ptr, unsigned async);
int npk_pccx_memset(npk_pccx *d, unsigned cache, unsigned index, uint16_t a, uint16_t b, uint16_t c);

/* Registers (each syncs first when instructions are pending). addr values are
 * guest physical byte addresses. */
int npk_pccx_set_wstream(npk_pccx *d, uint64_t addr, uint64_t limit);
int npk_pccx_set_emax(npk_pccx *d, uint16_t bf16);
int npk_pccx_get_emax(npk_pccx *d, uint16_t *bf16);
int npk_pccx_set_scalar(npk_pccx *d, uint16_t bf16);
int npk_pccx_get_scalar(npk_pccx *d, uint16_t *bf16);

/* Host window: [base, base + size) of guest memory, allocated at open.
 * The top 64 KiB is the driver's staging area for the L2 read/write helpers;
 * the rest is handed out by hwin_alloc (bump allocator, 16-byte aligned).
 * *offset is the byte offset in the window (aux_addr = offset / 16). */
uint64_t npk_pccx_hwin_base(const npk_pccx *d);
uint64_t npk_pccx_hwin_size(const npk_pccx *d);
/* The device's L2 size in words and GEMV cores (its CAP_L2_WORDS and CAP_LANES registers,
 * read at open; device options l2_kib and lanes). */
uint32_t npk_pccx_l2_words(const npk_pccx *d);
unsigned npk_pccx_lanes(const npk_pccx *d);
int npk_pccx_hwin_alloc(npk_pccx *d, uint64_t bytes, uint64_t *offset);
void npk_pccx_hwin_reset(npk_pccx *d);

/* Driver-managed shapes: fmap_shape/weight_shape entries 0..59 are handed out
 * by these (MEMSET issued when a tuple is not cached); 60..63 of both banks
 * are driver scratch. Applications that MEMSET entries themselves must use
 * only 60..63 -- or not mix with these helpers. Returns the entry index. */
int npk_pccx_fmap_entry(npk_pccx *d, uint16_t a, uint16_t b, uint16_t c);
int npk_pccx_weight_entry(npk_pccx *d, uint16_t n, uint16_t k, uint16_t g);

/* L2 <-> host helpers (blocking; chunked through the staging area).
 * write: n BF16 values to L2 word `l2`: ceil(n/8) words are written, lanes
 * past n in the last word become 0. read: n values from L2 word `l2`. */
int npk_pccx_write_bf16(npk_pccx *d, uint32_t l2, const uint16_t *v, size_t n);
int npk_pccx_read_bf16(npk_pccx *d, uint32_t l2, uint16_t *v, size_t n);
/* The same with float conversion (RNE to BF16 on write; exact on read). */
int npk_pccx_write_f32(npk_pccx *d, uint32_t l2, const float *v, size_t n);
int npk_pccx_read_f32(npk_pccx *d, uint32_t l2, float *v, size_t n);

/* A weight matrix resident in the weight-stream arena (guest memory). */
typedef struct npk_pccx_wmat {
    uint16_t n, k, g;   /* W [n][k], scale groups of g along k (0 = per output channel) */
    int w_scale;        /* record has scales (always 1 from wmat_upload) */
    uint64_t addr;      /* guest address of the record */
    uint64_t bytes;     /* record size */
} npk_pccx_wmat;

/* Quantize w [n][k] (npk_pccx_quantize_q4 with group g) and append its record
 * to the arena. Upload matrices in the order they are used: consecutive
 * npk_pccx_gemv_w() calls on consecutive records need no register write. */
int npk_pccx_wmat_upload(npk_pccx *d, const float *w, unsigned n, unsigned k, unsigned g, npk_pccx_wmat *out);
/* The same with an already quantized matrix (q [n][k], scales [n][ceil(k/g)]). */
int npk_pccx_wmat_upload_q4(npk_pccx *d, const int8_t *q, const float *scales, unsigned n, unsigned k, unsigned g,
                            npk_pccx_wmat *out);
/* Reserve the arena space of an n x k record with scales (group g) without
 * writing it: for a device in timing_only mode, which reads no weights. */
int npk_pccx_wmat_reserve(npk_pccx *d, unsigned n, unsigned k, unsigned g, npk_pccx_wmat *out);
/* Append a 1 x k record of INT4 ones without scales (w_scale 0): a GEMV with
 * it sums each row of x exactly (one rounding, as REDUCE_SUM), and with
 * k = 1 copies x[0] (with NPK_PCCX_FINDEMAX: loads e_max from L2 inside the
 * queue). A prefix of a scale-less record is the record of a shorter row, so
 * npk_pccx_wmat_ones_prefix(ones, k) serves any k <= ones->k. */
int npk_pccx_wmat_ones(npk_pccx *d, unsigned k, npk_pccx_wmat *out);
npk_pccx_wmat npk_pccx_wmat_ones_prefix(const npk_pccx_wmat *ones, unsigned k);
/* Drop every uploaded matrix (the arena is reused from its start). */
void npk_pccx_wmat_reset(npk_pccx *d);

/* y[m][0..n) at L2 word dest = W . x[m] for m rows of x at L2 word src (row
 * strides ceil(k/8) and ceil(n/8) words). flags: NPK_PCCX_ACCM and/or
 * NPK_PCCX_FINDEMAX (W_SCALE is added from the matrix). Sets the shapes and,
 * when the stream is not already at w->addr, syncs and points WS_ADDR at it.
 * gemv_w issues GEMV (decode), gemm_w GEMM (prefill). */
int npk_pccx_gemv_w(npk_pccx *d, uint32_t dest, uint32_t src, unsigned m, const npk_pccx_wmat *w, unsigned flags);
int npk_pccx_gemm_w(npk_pccx *d, uint32_t dest, uint32_t src, unsigned m, const npk_pccx_wmat *w, unsigned flags);

/* Point the weight stream at w's record now (syncs first when instructions
 * are pending; nothing when the stream is already there). A WS_ADDR write
 * discards the weight FIFO, so a caller that knows which record comes next
 * points the stream at it before the transfers and CVOs that precede its
 * GEMV: the FIFO fills meanwhile (docs/pccx.md section 6). */
int npk_pccx_wstream_at(npk_pccx *d, const npk_pccx_wmat *w);

/* Copy n elements (ceil(n/8) whole words) L2 -> L2. */
int npk_pccx_copy_l2(npk_pccx *d, uint32_t dst, uint32_t src, size_t n);

/* The documented CVO sequences (issued, not synced; all vectors BF16 in L2).
 * softmax: y[0..n) at `dst` = softmax(x[0..n) at `src`), using one scratch
 *   word `tmp`: EXP (sub_emax if use_emax) src->dst, REDUCE_SUM dst->tmp,
 *   SCALE recip_scale dst->dst. With use_emax the caller must have set e_max
 *   to max(x) (a GEMV with findemax, or npk_pccx_set_emax); without it
 *   exp(x) must not overflow.
 * rmsnorm: y = x / sqrt(mean(x^2) + eps) with x at `x`, the host-computed
 *   squares x^2 at `sq`, result at `dst` (may equal x), two scratch words at
 *   `tmp`. The driver writes n*eps and n to tmp (blocking), then issues
 *   REDUCE_SUM accm sq->tmp, REDUCE_SUM len 1 tmp+1 (scalar = n), SCALE
 *   recip_scale tmp->tmp, SQRT, RECIP, REDUCE_SUM len 1 (scalar = 1/rms),
 *   SCALE x->dst.
 * rope: sin and cos of the angles at `ang` (n values, host-reduced to
 *   [-pi, pi]) to L2 words sin_dst / cos_dst. */
int npk_pccx_softmax(npk_pccx *d, uint32_t src, uint32_t dst, uint32_t tmp, unsigned n, int use_emax);
int npk_pccx_rmsnorm(npk_pccx *d, uint32_t x, uint32_t sq, uint32_t dst, uint32_t tmp, unsigned n, float eps);
/* The two parts of npk_pccx_rmsnorm, for a caller that writes the scratch
 * words itself (e.g. in the same transfer as the squares): the 16 BF16 values
 * (two words) npk_pccx_rmsnorm writes at `tmp`, and the seven CVOs (async = 1
 * issues them fire-and-forget: each waits for its inputs in the device's
 * fence table). */
void npk_pccx_rmsnorm_consts(unsigned n, float eps, uint16_t k[16]);
int npk_pccx_rmsnorm_issue(npk_pccx *d, uint32_t x, uint32_t sq, uint32_t dst, uint32_t tmp, unsigned n,
                           unsigned async);
int npk_pccx_rope(npk_pccx *d, uint32_t ang, uint32_t sin_dst, uint32_t cos_dst, unsigned n);

/* Device counters (registers 0x70..0xbc). */
typedef struct npk_pccx_stats {
    uint64_t issued, retired;
    uint64_t per_op[5];       /* retired GEMV, GEMM, MEMCPY, MEMSET, CVO */
    uint64_t cycles;          /* device busy cycles */
    uint64_t ws_bytes;        /* weight-stream bytes */
    uint64_t dma_bytes;       /* host <-> L2 MEMCPY bytes */
    uint64_t macs;            /* GEMV/GEMM multiply-accumulates */
    uint64_t sfu_elems;       /* CVO elements */
    uint64_t engine_cycles[4];/* gemv, gemm, sfu, dma */
} npk_pccx_stats;
int npk_pccx_stats_get(npk_pccx *d, npk_pccx_stats *st);
/* Zero the device counters (CTRL.CLR_PERF; syncs first). */
int npk_pccx_stats_clear(npk_pccx *d);

#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_PCCX_DRV_H */
