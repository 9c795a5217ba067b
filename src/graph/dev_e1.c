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
    npk_ltensor lines, taps;
    memset(&lines, 0, sizeof lines);
    memset(&taps, 0, sizeof taps);
    int rc = npk_lt_alloc2(&taps, no, kw);
    if (!rc) {
        lines.rank = 3;
        lines.dim[0] = rg, lines.dim[1] = no, lines.dim[2] = pl;
        if (!(lines.data = malloc((size_t)rg * no * pl * sizeof *lines.data))) rc = npk_err(NPK_ENOMEM, "out of memory");
    }
    if (rc) {
        npk_lt_free(&taps);
        npk_lt_free(&lines);
        return rc;
    }
    /* line (g, o) at position p: the im2col element of output x = min(p, ow - 1), tap p - x */
    for (uint32_t g = 0; g < rg; g++)
        for (uint32_t o = 0; o < no; o++)
            for (uint32_t p = 0; p < pl; p++) {
                uint32_t x = p < ow ? p : ow - 1;
                lines.data[((size_t)g * no + o) * pl + p] = a[(size_t)(g * ow + x) * lda + o * kw + (p - x)];
            }
    for (uint32_t i = 0; i < k; i++) taps.data[i] = bm[(size_t)i * ldb];
    npk_lower_out out;
    memset(&out, 0, sizeof out);
    rc = npk_lower_band_matmul(s->L, &lines, &taps, &out, NULL, NULL);
    if (!rc) {
        const npk_ltensor *r = npk_lower_out_get(&out, "result");
        if (!r || npk_lt_numel(r) != (size_t)m) {
            rc = npk_err(NPK_EDEVICE, "e1: band lowering returned no %ux%u result", rg, ow);
        } else {
            for (uint32_t i = 0; i < m; i++) *(int32_t *)((uint8_t *)c + (size_t)i * ldc) = r->data[i];
        }
    }
    npk_lower_out_free(&out);
    npk_lt_free(&lines);
    npk_lt_free(&taps);
    return rc;
}

static int e1_host_gemm(npk_backend *b, uint32_t m, uint32_t n, uint32_t k, const int8_t *a, uint32_t lda,
                        const int8_t *bm, uint32_t ldb, int32_t *c, uint32_t ldc, const npk_qmm_rows *rows) {
    e1be *s = b->priv;
    int brc = e1_band(s, m, n, k, a, lda, bm, ldb, c, ldc, rows);
    if (brc != 1) return brc;
    npk_ltensor lhs, rhs;
    memset(&lhs, 0, sizeof lhs);
    memset(&rhs, 0, sizeof rhs);
    int rc = npk_lt_alloc2(&lhs, m, k);
    if (!rc) rc = npk_lt_alloc2(&rhs, k, n);
    if (rc) {
        npk_lt_free(&lhs);
        npk_lt_free(&rhs);
        return rc;
    }
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < k; j++) lhs.data[(size_t)i * k + j] = a[(size_t)i * lda + j];
    for (uint32_t i = 0; i < k; i++)
        for (uint32_t j = 0; j < n; j++) rhs.data[(size_t)i * n + j] = bm[(size_t)i * ldb + j];
    npk_lower_out out;
    memset(&out, 0, sizeof out);
    rc = npk_lower_matmul(s->L, 0, &lhs, &rhs, &out, NULL, NULL);
    if (!rc) {
        const npk_ltensor *r = npk_lower_out_get(&out, "result");
        if (!r || npk_lt_numel(r) != (size_t)m * n) {
            rc = npk_err(NPK_EDEVICE, "e1: matmul lowering returned no %ux%u result", m, n);
        } else {
            for (uint32_t i = 0; i < m; i++)
                memcpy((uint8_t *)c + (size_t)i * ldc, r->data + (size_t)i * n, sizeof(int32_t) * n);
        }
    }
    npk_lower_out_free(&out);
    npk_lt_free(&lhs);
    npk_lt_free(&rhs);
    return rc;
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
