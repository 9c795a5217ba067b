// SPDX-License-Identifier: MIT
/* The e1 NPU as an ONNX backend: the integer matrix products and
 * convolutions (MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv and
 * quantized DequantizeLinear -> Conv/MatMul -> QuantizeLinear subgraphs)
 * run their MACs in e1 GEMM_S8 tiles through the e1 lowering layer
 * (include/npukit/e1_lower.h, npk_lower_matmul). e1 has no guest-memory
 * tensor interface (a 64-byte scratchpad the lowering tiles through), so
 * there is no arena to plan: operands are host matrices. Everything else
 * stays on the CPU reference. */
#include <stdlib.h>
#include <string.h>

#include "graph/dev_qmm.h"
#include "npukit/e1_drv.h"
#include "npukit/e1_lower.h"
#include "npukit/trace.h"

typedef struct e1be {
    npk_backend be;
    npk_port *port;
    npk_e1 *e;
    npk_lower *L;
    npk_qmm **plans;
    size_t n_nodes;
} e1be;

static npk_port *e1_port(npk_backend *b) { return ((e1be *)b->priv)->port; }

/* A depthwise group (one output column) whose im2col rows are a band
 * along the innermost axis: run it as npk_lower_band_matmul on the input
 * lines when that takes fewer GEMM tiles than the im2col product (a 5x5
 * kernel: 9 outputs per tile instead of 3). 1: not taken (the caller runs
 * the product), 0 or an error: done. */
static int e1_band(e1be *s, uint32_t m, uint32_t n, uint32_t k, const int8_t *a, uint32_t lda, const int8_t *bm,
                   uint32_t ldb, int32_t *c, uint32_t ldc, const npk_qmm_rows *rows) {
    if (!rows || n != 1 || !rows->ow || !rows->kw || m % rows->ow || k % rows->kw) return 1;
    const uint32_t ow = rows->ow, kw = rows->kw, rg = m / ow, no = k / kw, pl = ow + kw - 1;
    unsigned tm, tn, tk;
    npk_lower_pick_tile(s->L, 0, m, k, n, &tm, &tn, &tk);
    uint64_t band = npk_lower_band_tiles(s->L, rg, no, ow, kw), plain = (uint64_t)((m + tm - 1) / tm) * ((k + tk - 1) / tk);
    if (!band || band >= plain) return 1;
    int8_t *lines = malloc((size_t)rg * no * pl), *taps = malloc(k);
    int32_t *res = (size_t)ldc == 4 ? c : malloc((size_t)m * sizeof *res);
    int rc = 0;
    if (!lines || !taps || !res) {
        rc = npk_err(NPK_ENOMEM, "out of memory");
    } else {
        /* line (g, o) at position p: the im2col element of output x = min(p, ow - 1), tap p - x */
        for (uint32_t g = 0; g < rg; g++)
            for (uint32_t o = 0; o < no; o++) {
                int8_t *ln = lines + ((size_t)g * no + o) * pl;
                const int8_t *ar = a + (size_t)g * ow * lda + o * kw;
                for (uint32_t p = 0; p < pl; p++) {
                    uint32_t x = p < ow ? p : ow - 1;
                    ln[p] = ar[(size_t)x * lda + (p - x)];
                }
            }
        for (uint32_t i = 0; i < k; i++) taps[i] = bm[(size_t)i * ldb];
        rc = npk_lower_band_matmul_s8(s->L, rg, no, pl, kw, lines, taps, res);
        if (!rc && res != c)
            for (uint32_t i = 0; i < m; i++) *(int32_t *)((uint8_t *)c + (size_t)i * ldc) = res[i];
    }
    if (res != c) free(res);
    free(lines);
    free(taps);
    return rc;
}

static int e1_host_gemm(npk_backend *b, uint32_t m, uint32_t n, uint32_t k, const int8_t *a, uint32_t lda,
                        const int8_t *bm, uint32_t ldb, int32_t *c, uint32_t ldc, const npk_qmm_rows *rows) {
    e1be *s = b->priv;
    int brc = e1_band(s, m, n, k, a, lda, bm, ldb, c, ldc, rows);
    if (brc != 1) return brc;
    if (ldc % sizeof *c) return npk_err(NPK_EINVAL, "e1: C row pitch %u is not a whole number of int32", ldc);
    return npk_lower_matmul_s8(s->L, m, k, n, a, lda, bm, ldb, c, ldc / sizeof *c);
}

static const npk_qmm_dev e1_qmm = {.max_m = 65535u, .max_n = 65535u, .max_k = 65535u, .opname = "e1 GEMM_S8 tiles",
                                   .host_gemm = e1_host_gemm};

static int e1_place(npk_backend *b, npk_exec *x, int n, char *why, size_t wl, char *devop, size_t dl) {
    e1be *s = b->priv;
    if (!s->plans) {
        s->n_nodes = npk_exec_graph(x)->n_nodes;
        if (!(s->plans = calloc(s->n_nodes + 1, sizeof(npk_qmm *)))) return npk_err(NPK_ENOMEM, "out of memory");
    }
    const npk_node *nd = npk_exec_node(x, n);
    int rc = npk_qmm_place(&e1_qmm, x, n, &s->plans[n], why, wl, devop, dl);
    if (rc) return rc;
    if (npk_onnx_op_families(nd->op_id) & NPK_OPF_PRODUCT)
        return 0;
    snprintf(why, wl, "e1 runs only the integer matrix-product families here (its VRELU/scalar opcodes work on "
                      "64-byte scratchpad slices with no tensor interface)");
    return 0;
}

static int e1_run(npk_backend *b, npk_exec *x, int n, npk_node_report *rep) {
    e1be *s = b->priv;
    (void)rep;
    return npk_qmm_run(&e1_qmm, b, x, s->plans[n]);
}

static void e1_close(npk_backend *b) {
    e1be *s = b->priv;
    for (size_t i = 0; s->plans && i < s->n_nodes; i++) npk_qmm_free(s->plans[i]);
    free(s->plans);
    if (s->L) npk_lower_free(s->L);
    if (s->e) npk_e1_close(s->e);
    if (s->port) npk_port_close(s->port);
    free(s);
}

static int backend_open(npk_backend **out, const npk_run_opts *o, char *note, size_t note_len) {
    *out = NULL;
    e1be *s = calloc(1, sizeof *s);
    if (!s) return npk_err(NPK_ENOMEM, "out of memory");
    /* e1_close on a failed open reaches the state through priv */
    s->be = (npk_backend){.name = "e1", .align = 16, .priv = s, .place = e1_place, .run = e1_run, .port = e1_port,
                          .close = e1_close};
    int rc = npk_backend_port_open(&s->port, o, "e1");
    if (!rc) rc = npk_e1_open(&s->e, s->port);
    if (!rc) rc = npk_lower_new(&s->L, s->e);
    if (rc) {
        e1_close(&s->be);
        return npk_err_prefix(-rc, "opening the e1 driver");
    }
    if (o->trace) npk_port_set_trace(s->port, o->trace); /* device engines + driver host steps */
    snprintf(note, note_len, "e1: integer products run as GEMM_S8 tiles through the e1 lowering layer on host "
                             "matrices (e1 has no guest-memory tensors, so no arena is planned)");
    *out = &s->be;
    return 0;
}

/* The e1 row of the graph-level device table (src/graph/exec.h). */
static const npk_dev_op e1_ops[] = {
    NPK_QMM_DEV_OPS
    {NULL, NULL}};
const npk_dev_graph npk_e1_graph = {.name = "e1", .open = backend_open, .ops = e1_ops};
