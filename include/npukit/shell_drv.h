// SPDX-License-Identifier: MIT
/*
 * npukit: the shell driver API (src/rt/shell_drv.c), the text assembler
 * (src/rt/shell_asm.c) and the schedule mapper (src/rt/shell_map.c). The
 * hardware ABI they program is npukit/shell_regs.h.
 */
#ifndef NPUKIT_SHELL_DRV_H
#define NPUKIT_SHELL_DRV_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/npu.h"
#include "npukit/shell_regs.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 * c_io: M*N elements of int32/fp32 (read first when beta/ADD/MUL need it).
 * On the in-process port a, b and c_io are used in place (npk_port_map_host:
 * no copy; c_io is copied when it overlaps a, b or bias); on an error c_io
 * may then hold part of the result. */
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
#endif /* NPUKIT_SHELL_DRV_H */
