// SPDX-License-Identifier: MIT
/* Internals shared by the e1 lowering sources (src/ops/e1_lower*.c). */
#ifndef NPUKIT_OPS_E1_LOWER_INT_H
#define NPUKIT_OPS_E1_LOWER_INT_H

#include <string.h>

#include "npukit/e1_lower.h"
#include "ref_ops.h"

#define LW_SLOTS E1_RING_MAX_PENDING /* descriptors per ring batch */
#define LW_SLOT_BYTES 64u            /* staging bytes per tile image / writeback */
/* The staging arena: LW_SLOTS images, then LW_SLOTS writebacks, allocated as
 * 4 KiB so that the in-process port backs it with one host buffer and the
 * lowering stages and reads tiles in place (npk_port_direct; zero copy). */
#define LW_ARENA_USED (2 * LW_SLOTS * LW_SLOT_BYTES)
#define LW_ARENA_BYTES 4096u

/* Where a tile's operands sit in the scratchpad and how a descriptor streams
 * them: g holds the GEMM registers, the stream covers scratchpad bytes
 * [soff, soff + slen) and the staged image holds `lead` bytes before A, then
 * A (m*k elements, row stride k) and B (k*n, row stride n). */
typedef struct lw_layout {
    npk_e1_gemm g;
    unsigned soff, slen, lead;
} lw_layout;

struct npk_lower {
    npk_e1 *e;
    npk_port *port;
    int batching;
    int slow_mem;           /* a ring batch timed out: tiles leave room for memory latency */
    unsigned force[2][3];   /* forced tile shape per int4 (0 = auto) */
    uint64_t arena;         /* guest staging: LW_SLOTS images, then LW_SLOTS writebacks */
    unsigned depth;         /* nesting level of lowerings (0 = top) */
    uint32_t host;          /* NPK_HOST_* bits of the current lowering */
    uint64_t tiles, pad_values, retries;
    unsigned tile_m, tile_n, tile_k;
    /* tile layouts by [int4][m-1][n-1][k-1]: 0 not computed, 1 fits (lay), 2 does not fit */
    unsigned char lay_state[2][3][3][7];
    lw_layout lay[2][3][3][7];
};

/* One lowering in flight: its outputs, golden and evidence span. */
typedef struct lw_op {
    npk_lower *L;
    const char *name;
    npk_lower_out *out, *golden, gtmp;
    npk_lower_evidence *ev;
    /* snapshot at the start; the evidence is the difference at the end */
    npk_e1_stats st;
    uint64_t mmio, cycles, tiles, pad, retries;
    uint32_t host;
    unsigned tm, tn, tk;
} lw_op;

/* The prologue of every lowering. The golden comes first (it validates the
 * operands before any MMIO): computed into the caller's golden, or into a
 * temporary at the top level, and skipped for nested steps nobody checks; a
 * golden failure returns from the lowering. `g` names the golden list the
 * call fills. Then the evidence span opens. */
#define LW_OPEN(op, L_, name_, out_, golden_, ev_, g, golden_call)    \
    lw_op op;                                                        \
    npk_lower_out *g;                                                \
    memset(out_, 0, sizeof *(out_));                                 \
    memset(&op.gtmp, 0, sizeof op.gtmp);                             \
    if (golden_) memset(golden_, 0, sizeof *(golden_));              \
    g = (golden_) ? (golden_) : &op.gtmp;                            \
    if ((golden_) || (L_)->depth == 0) {                             \
        int rcg_ = (golden_call);                                    \
        if (rcg_) {                                                  \
            npk_lower_out_free(g);                                   \
            return rcg_;                                             \
        }                                                            \
    }                                                                \
    lw_open(&op, L_, name_, out_, golden_, ev_)
void lw_open(lw_op *op, npk_lower *L, const char *name, npk_lower_out *out, npk_lower_out *golden,
             npk_lower_evidence *ev);
/* The epilogue: closes the span (evidence, trace event) and on an error
 * frees the outputs (and the golden, when the caller asked for one).
 * Returns rc. */
int lw_close(lw_op *op, int rc);

/* Is s one of the '|' separated words of list? (e1_module.c) */
int lw_in_list(const char *list, const char *s);
/* Parse JSON (keys given twice refused) into *out; an error names the line and column, after
 * "what: " when what is not NULL (the e1 module and package readers; e1_module.c). */
struct json_t;
int lw_json_load(const char *text, const char *what, struct json_t **out);

/* NPU primitives. */
/* C[M][N] = A[M][K] x B[K][N] in GEMM tiles (values already range-checked). */
int lw_gemm(npk_lower *L, int int4, unsigned M, unsigned K, unsigned N, const int32_t *A, const int32_t *B, int32_t *C);
/* One scalar opcode; *res = RESULT. */
int lw_scalar(npk_lower *L, unsigned op, uint32_t a, uint32_t b, uint32_t acc, int ternary, uint32_t *res);
/* VRELU_S8 over n int8 values (in passes of <= 63 bytes). */
int lw_relu(npk_lower *L, const int32_t *in, int32_t *out, size_t n);

#endif
