/*
 * The NPU shell (npu-shell-contract.md v0.1 with the v0.2 GEMM descriptor):
 * register map, descriptor layouts, codes, descriptor encoders, the driver,
 * the text assembler and the schedule mapper.
 *
 * Everything the contract left open is decided in docs/shell.md; the short
 * form is repeated next to each definition here.
 *
 * Device: MMIO window at 0x1003_0000 (4 KiB), 1 GHz clock, one level IRQ line.
 * All multi-byte descriptor fields are little-endian.
 */
#ifndef NPUKIT_SHELL_H
#define NPUKIT_SHELL_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/npu.h"
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
#define SHELL_CAP_DMA_COPY (1u << 0)
#define SHELL_CAP_DMA_STRIDED (1u << 1)
#define SHELL_CAP_DMA_GATHER (1u << 2)
#define SHELL_CAP_DMA_SCATTER (1u << 3)
#define SHELL_CAP_GEMM (1u << 4)
#define SHELL_CAP_VEC_OP (1u << 5)
#define SHELL_CAP_SOFTMAX (1u << 6)
#define SHELL_CAP_EVENT_IRQ (1u << 7)
#define SHELL_CAP_GEMM_V2 (1u << 8)   /* SIZE=2/3 GEMM descriptors */
#define SHELL_CAP_VEC_EXT (1u << 9)   /* VEC_EXT word: RMSNorm, row length */
#define SHELL_CAP_RING_WRAP (1u << 10) /* a descriptor may straddle the end of the ring */
#define SHELL_CAP_FP8 (1u << 11)      /* FP8 E4M3 in GEMM, VEC_OP and SOFTMAX */
#define SHELL_CAP_LIST_LOCAL (1u << 12) /* GATHER/SCATTER LOCAL_ADDR at bytes 24..31 */
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

/* ---- text assembler -------------------------------------------------------------
 * One descriptor per line: MNEMONIC key=value ...  ('#' starts a comment).
 * Mnemonics: DMA_COPY DMA_STRIDED DMA_GATHER DMA_SCATTER GEMM VEC_OP SOFTMAX
 * EVENT_SIGNAL EVENT_WAIT NOOP, and RAW hex=<32/64/96 bytes> for anything else.
 * Every byte of a descriptor belongs to one named field, so disassembling and
 * assembling again gives back the same bytes. Fields and defaults: docs/shell.md. */
int npk_shell_asm(const char *text, uint8_t **bin, size_t *len);
int npk_shell_disasm(const uint8_t *bin, size_t len, char **text);

/* ---- schedule mapper ---------------------------------------------------------------
 * Map a YAML schedule (RTLGen npu/mapper format, version 0.1: buffers, ops, deps,
 * events) to the descriptor stream the reference mapper emits (docs/shell.md
 * "shell-map" lists the places where we refuse input it would truncate).
 * *bin is malloc'd; *count receives the number of descriptors (may be NULL). */
/* Input limits (checked before the document is loaded; -NPK_EFORMAT naming the
 * limit): the text size and the nesting depth of YAML collections. */
#define NPK_SHELL_MAP_MAX_BYTES (16u << 20)
#define NPK_SHELL_MAP_MAX_DEPTH 32
int npk_shell_map_yaml(const char *yaml_text, size_t len, uint8_t **bin, size_t *bin_len, size_t *count);
/* The same; softmax_dtype != 0 encodes a softmax op's dtype in FLAGS[7:4], where
 * the reference mapper always writes 0 (int8). Without it a warning is printed
 * on stderr for each non-int8 softmax. */
int npk_shell_map_yaml_opts(const char *yaml_text, size_t len, int softmax_dtype, uint8_t **bin, size_t *bin_len,
                            size_t *count);

/* ---- model introspection (in-process "sim" devices only) -------------------------- */
struct npk_dev;
/* One executed (or failed) descriptor. */
typedef struct npk_shell_log {
    uint64_t addr;        /* guest address of the descriptor */
    uint32_t offset;      /* its ring offset (CQ_HEAD when it was fetched) */
    uint8_t opcode, flags, size;
    uint32_t tag;
    const char *track;    /* "dma", "gemm", "vec" or "fetch" (events, NOOP, failures) */
    uint64_t fetch_cycle; /* when the fetcher read it */
    uint64_t start_cycle, end_cycle; /* execution on its track */
    uint32_t error;       /* SHELL_ERR_* it raised, 0 if none */
} npk_shell_log;
typedef void (*npk_shell_log_fn)(void *ctx, const npk_shell_log *e);
/* Call fn for every descriptor the model executes. Returns -NPK_EINVAL if d is
 * not a shell model. */
int npk_shell_sim_set_log(struct npk_dev *d, npk_shell_log_fn fn, void *ctx);

/* ---- driver -------------------------------------------------------------------- */
typedef struct npk_shell npk_shell;

typedef struct npk_shell_opts {
    uint32_t ring_bytes;  /* ring size, power of two (default 4096) */
    uint64_t ring_addr;   /* guest address of the ring (0 = allocate from the port's arena) */
    int use_irq;          /* wait on the IRQ line instead of polling STATUS (default 0) */
    uint64_t timeout;     /* default wait budget in device cycles (default 2e9) */
} npk_shell_opts;

/* Open the shell behind a port: checks VERSION/CAPABILITIES, allocates the
 * ring in guest memory, programs CQ_* and IRQ_ENABLE. opts may be NULL. */
int npk_shell_open(npk_shell **out, npk_port *port, const npk_shell_opts *opts);
void npk_shell_close(npk_shell *s);
npk_port *npk_shell_port(npk_shell *s);
uint32_t npk_shell_caps(const npk_shell *s);

/* Append one descriptor (32/64/96 bytes) to the ring. When the ring is full it
 * rings the doorbell and waits for room. Nothing runs before npk_shell_kick. */
int npk_shell_push(npk_shell *s, const uint8_t *desc, size_t len);
/* Append a whole stream of descriptors (walks the SIZE fields). */
int npk_shell_push_stream(npk_shell *s, const uint8_t *stream, size_t len);
/* Publish CQ_TAIL and write DOORBELL. */
int npk_shell_kick(npk_shell *s);
/* Wait until the device is idle (queue drained, all work done). In IRQ mode it
 * acknowledges the CQ_EMPTY and EVENT interrupts it sees (use npk_shell_wait_irq
 * first to observe events). Returns
 * -NPK_EDEVICE with the decoded error when the device latched one,
 * -NPK_ETIMEDOUT after max_cycles (0 = the open-time default). */
int npk_shell_wait(npk_shell *s, uint64_t max_cycles);
/* Push + kick + wait. */
int npk_shell_run(npk_shell *s, const uint8_t *stream, size_t len, uint64_t max_cycles);
/* Wait until IRQ_STATUS has any of `bits`, acknowledge them and return them in *got. */
int npk_shell_wait_irq(npk_shell *s, uint32_t bits, uint64_t max_cycles, uint32_t *got);

/* Device state snapshot. */
typedef struct npk_shell_state {
    uint32_t status, irq_status, head, tail, error_code;
    uint64_t error_addr;
} npk_shell_state;
int npk_shell_state_read(npk_shell *s, npk_shell_state *st);
/* Turn a latched error into an npk_err message naming the code, the address and
 * the descriptor at HEAD. Returns 0 when no error is latched, else -NPK_EDEVICE. */
int npk_shell_check_error(npk_shell *s);
/* Clear ERROR_CODE and the IRQ bits (the queue stays stopped at HEAD). */
int npk_shell_clear_error(npk_shell *s);
/* Skip the descriptor at HEAD (only while stopped: after an error or a halt). */
int npk_shell_skip(npk_shell *s);
int npk_shell_halt(npk_shell *s);
/* Clear HALT and restart fetching at HEAD. */
int npk_shell_resume(npk_shell *s);
/* CONTROL.RESET, then program the ring again (empty). */
int npk_shell_reset(npk_shell *s);

/* ---- high-level operations (allocate guest buffers, run, copy back) ------------ */

/* C[M][N] (int32) = A[M][K] (int8) * B[K][N] (int8) + bias[N] (int32, may be NULL). Row-major. */
int npk_shell_gemm_i8(npk_shell *s, uint32_t m, uint32_t n, uint32_t k, const int8_t *a, const int8_t *b,
                      const int32_t *bias, int32_t *c);

/* A general GEMM: host matrices in the device layout (see npk_shell_gemm_desc:
 * element bytes of dtype, C of 4-byte elements); a/b/c/bias fields of g are
 * ignored (guest buffers are allocated), lda/ldb/ldc must be 0 (packed).
 * c_io: M*N elements of int32/fp32 (read first when beta/ADD/MUL need it). */
int npk_shell_gemm_host(npk_shell *s, const npk_shell_gemm_desc *g, const void *a, const void *b,
                        const void *bias, void *c_io);

/* 2-D convolution via host im2col + one column-major GEMM per image:
 * x int8 [N][C][H][W], w int8 [OC][C][KH][KW], bias int32 [OC] (may be NULL),
 * y int32 [N][OC][OH][OW] with OH = (H + pt + pb - dh*(KH-1) - 1)/sh + 1 (OW alike).
 * group must be 1. */
typedef struct npk_shell_conv2d {
    uint32_t n, c, h, w, oc, kh, kw;
    uint32_t stride_h, stride_w, pad_t, pad_l, pad_b, pad_r, dil_h, dil_w;
} npk_shell_conv2d;
int npk_shell_conv2d_i8(npk_shell *s, const npk_shell_conv2d *p, const int8_t *x, const int8_t *w,
                        const int32_t *bias, int32_t *y);

/* VEC_OP over a host buffer: dst_io holds the second operand on entry (binary
 * and backward ops) and the result on return; bytes per buffer. */
int npk_shell_vec(npk_shell *s, unsigned op, unsigned dtype, uint32_t vec_ext, const void *src, void *dst_io,
                  uint32_t bytes);
/* SOFTMAX of rows x row_bytes. */
int npk_shell_softmax(npk_shell *s, unsigned dtype, const void *src, void *dst, uint16_t row_bytes, uint16_t rows);

#ifdef __cplusplus
}
#endif
#endif
