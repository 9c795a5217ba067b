/* Internals shared by the e1 lowering sources (src/ops/e1_lower*.c). */
#ifndef NPUKIT_OPS_E1_LOWER_INT_H
#define NPUKIT_OPS_E1_LOWER_INT_H

#include <string.h>

#include "npukit/e1_lower.h"
#include "ref_ops.h"

#define LW_SLOTS E1_RING_MAX_PENDING /* descriptors per ring batch */
#define LW_SLOT_BYTES 64u            /* staging bytes per tile image / writeback */

struct npk_lower {
    npk_e1 *e;
    npk_port *port;
    int batching;
    unsigned force[2][3];   /* forced tile shape per int4 (0 = auto) */
    uint64_t arena;         /* guest staging: LW_SLOTS images, then LW_SLOTS writebacks */
    unsigned depth;         /* nesting level of lowerings (0 = top) */
    uint32_t host;          /* NPK_HOST_* bits of the current lowering */
    uint64_t tiles, pad_values, retries;
    unsigned tile_m, tile_n, tile_k;
};

/* Evidence span: snapshot at the start of a lowering, difference at the end. */
typedef struct lw_span {
    npk_e1_stats st;
    uint64_t mmio, cycles, tiles, pad, retries;
    uint32_t host;
    unsigned tm, tn, tk;
} lw_span;
void lw_begin(npk_lower *L, lw_span *s);
void lw_end(npk_lower *L, lw_span *s, const char *op, npk_lower_evidence *ev);

/* Golden first (validates before any MMIO). Computes the golden into the
 * caller's golden, or a temporary, at the top level or when asked. Sets
 * *gp to the golden list used (NULL when skipped). */
#define LW_GOLDEN(L, out, golden, gtmp, gp, call)              \
    do {                                                       \
        memset(out, 0, sizeof *(out));                         \
        memset(&(gtmp), 0, sizeof(gtmp));                      \
        if (golden) memset(golden, 0, sizeof *(golden));       \
        gp = (golden) ? (golden) : &(gtmp);                    \
        if ((golden) || (L)->depth == 0) {                     \
            int rcg_ = (call);                                 \
            if (rcg_) {                                        \
                npk_lower_out_free(gp);                        \
                return rcg_;                                   \
            }                                                  \
        } else {                                               \
            gp = NULL;                                         \
        }                                                      \
    } while (0)

/* NPU primitives. */
/* C[M][N] = A[M][K] x B[K][N] in GEMM tiles (values already range-checked). */
int lw_gemm(npk_lower *L, int int4, unsigned M, unsigned K, unsigned N, const int32_t *A, const int32_t *B, int32_t *C);
/* One scalar opcode; *res = RESULT. */
int lw_scalar(npk_lower *L, unsigned op, uint32_t a, uint32_t b, uint32_t acc, int ternary, uint32_t *res);
/* VRELU_S8 over n int8 values (in passes of <= 63 bytes). */
int lw_relu(npk_lower *L, const int32_t *in, int32_t *out, size_t n);

/* Finish a lowering: on error free out and (when ours) golden. */
int lw_finish(int rc, npk_lower_out *out, npk_lower_out *golden, npk_lower_out *gtmp);

#endif
