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
 *   L2     114,688 words of 128 bits = 8 BF16 elements per word. Element e of a
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
#ifndef NPUKIT_PCCX_H
#define NPUKIT_PCCX_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/npu.h"
#include "npukit/regfield.h"
#include "npukit/pccx_isa.h" /* encodings, fault codes, weight records */

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
 *   IDLE_ETA       RO model aid: cycles until idle if nothing more is issued (0xffffffff hung/faulted)
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
 *   CTRL           W: FLUSH[0] drop queued instructions, RESET[1] soft reset, CLR_PERF[2] */
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
/* Drop every uploaded matrix (the arena is reused from its start). */
void npk_pccx_wmat_reset(npk_pccx *d);

/* y[m][0..n) at L2 word dest = W . x[m] for m rows of x at L2 word src (row
 * strides ceil(k/8) and ceil(n/8) words). flags: NPK_PCCX_ACCM and/or
 * NPK_PCCX_FINDEMAX (W_SCALE is added from the matrix). Sets the shapes and,
 * when the stream is not already at w->addr, syncs and points WS_ADDR at it.
 * gemv_w issues GEMV (decode), gemm_w GEMM (prefill). */
int npk_pccx_gemv_w(npk_pccx *d, uint32_t dest, uint32_t src, unsigned m, const npk_pccx_wmat *w, unsigned flags);
int npk_pccx_gemm_w(npk_pccx *d, uint32_t dest, uint32_t src, unsigned m, const npk_pccx_wmat *w, unsigned flags);

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
#endif
