// SPDX-License-Identifier: MIT
/* The v0 NPU as an ONNX backend: integer matrix products and convolutions
 * (MATMUL_S8, convolutions through host im2col), int8 Relu (RELU) and int8
 * MaxPool (MAXPOOL_S8) on the device through the v0 driver's descriptor
 * API (include/npukit/v0_drv.h); everything else on the CPU reference. */
#include <stdlib.h>
#include <string.h>

#include "graph/cstream.h"
#include "graph/dev_qmm.h"
#include "npukit/trace.h"
#include "npukit/v0_drv.h"

enum { K_NONE, K_QMM, K_RELU, K_POOL };

typedef struct v0node {
    int kind;
    npk_qmm *q;
    int vin, vout;
    npk_v0_pool pool;
} v0node;

typedef struct v0be {
    npk_backend be;
    npk_port *port;
    npk_v0 *v;
    npk_v0_desc *q;
    unsigned nq, capq;
    v0node *nodes;
    size_t n_nodes;
    uint32_t tag;
    npk_cstream *cs; /* compiled stream (record or replay), or NULL */
    int cur;         /* the node running */
    uint8_t *img;    /* packed batch (record mode) */
    size_t img_cap;
} v0be;

static npk_port *v0_port(npk_backend *b) { return ((v0be *)b->priv)->port; }

static int queue(v0be *s, const npk_v0_desc *d) {
    if (s->cs && s->cs->replay) { /* the stored batch is submitted: only count */
        s->nq++;
        return 0;
    }
    if (s->nq == s->capq) {
        unsigned cap = s->capq ? s->capq * 2 : 64;
        npk_v0_desc *nq = realloc(s->q, sizeof(npk_v0_desc) * cap);
        if (!nq) return npk_err(NPK_ENOMEM, "out of memory");
        s->q = nq;
        s->capq = cap;
    }
    s->q[s->nq++] = *d;
    return 0;
}

static int v0_flush(npk_backend *b) {
    v0be *s = b->priv;
    if (!s->nq) return 0;
    unsigned n = s->nq;
    s->nq = 0;
    if (s->cs && s->cs->replay) {
        /* a compiled stream: the stored, pre-encoded descriptors of this batch */
        const npk_cs_rec *r;
        int rc = npk_cs_take(s->cs, NPK_CS_V0, s->cur, &r);
        if (rc) return rc;
        if (r->len / 64 != n)
            return npk_err(NPK_EFORMAT, "compiled stream: the v0 batch has %llu descriptors where the plan tiles the node into %u",
                           (unsigned long long)(r->len / 64), n);
        if (n > s->capq) {
            npk_v0_desc *nq = realloc(s->q, sizeof(npk_v0_desc) * n);
            if (!nq) return npk_err(NPK_ENOMEM, "out of memory");
            s->q = nq;
            s->capq = n;
        }
        for (unsigned i = 0; i < n; i++) npk_v0_desc_unpack(r->data + 64 * (size_t)i, &s->q[i]);
        return npk_v0_run(s->v, s->q, n);
    }
    if (s->cs) { /* recording: the batch as its 64-byte images */
        if ((size_t)n * 64 > s->img_cap) {
            uint8_t *ni = realloc(s->img, (size_t)n * 64);
            if (!ni) return npk_err(NPK_ENOMEM, "out of memory");
            s->img = ni;
            s->img_cap = (size_t)n * 64;
        }
        for (unsigned i = 0; i < n; i++) npk_v0_desc_pack(&s->q[i], s->img + 64 * (size_t)i);
        int rc = npk_cs_put(s->cs, NPK_CS_V0, s->cur, 0, s->img, (size_t)n * 64);
        if (rc) return rc;
    }
    return npk_v0_run(s->v, s->q, n);
}

static int v0_gemm(npk_backend *b, uint32_t m, uint32_t n, uint32_t k, uint64_t a, uint32_t lda, uint64_t bm, uint32_t ldb,
                   uint64_t c, uint32_t ldc) {
    v0be *s = b->priv;
    npk_v0_desc d = npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, m, n, k, a, lda, bm, ldb, c, ldc, ++s->tag);
    return queue(s, &d);
}

static const npk_qmm_dev v0_qmm = {.max_m = NPK_V0_MAX_MATMUL, .max_n = NPK_V0_MAX_MATMUL, .max_k = NPK_V0_MAX_MATMUL,
                                   .gemm = v0_gemm, .flush = v0_flush, .opname = "v0 MATMUL_S8",
                                   /* depthwise/grouped convs: 16 channels per product (the spec's 16 columns;
                                    * like every descriptor split, independent of the timing-only rows/cols options) */
                                   .group_cols = 16};

static int ensure_nodes(v0be *s, npk_exec *x) {
    if (s->nodes) return 0;
    s->n_nodes = npk_exec_graph(x)->n_nodes;
    s->nodes = calloc(s->n_nodes + 1, sizeof(v0node));
    return s->nodes ? 0 : npk_err(NPK_ENOMEM, "out of memory");
}

/* Layout for an int8 elementwise input: the producer's, else NHWC for 4-D, else rows. */
static npk_dlayout pick_layout(npk_exec *x, int v) {
    npk_dlayout l = {npk_exec_meta(x, v)->rank == 4 ? NPK_DL_NHWC : NPK_DL_ROWS, 0, 0};
    npk_dlayout w;
    if (npk_exec_writer_layout(x, v, &w) && !w.flip) l = w;
    return l;
}

static int v0_place(npk_backend *b, npk_exec *x, int n, char *why, size_t wl, char *devop, size_t dl) {
    v0be *s = b->priv;
    int rc = ensure_nodes(s, x);
    if (rc) return rc;
    const npk_node *nd = npk_exec_node(x, n);
    v0node *vn = &s->nodes[n];
    npk_qmm *q;
    if ((rc = npk_qmm_place(&v0_qmm, x, n, &q, why, wl, devop, dl)) != 0) {
        if (rc > 0) {
            vn->kind = K_QMM;
            vn->q = q;
        }
        return rc;
    }
    if (npk_onnx_op_families(nd->op_id) & NPK_OPF_PRODUCT)
        return 0; /* why already says */
    if (nd->op_id == NPK_OP_Relu) {
        const npk_tensor *xm = npk_exec_meta(x, nd->in[0]);
        if (xm->dtype != NPK_DT_INT8) {
            snprintf(why, wl, "v0 RELU is int8 only (input is %s)", npk_dtype_name(xm->dtype));
            return 0;
        }
        npk_dlayout l = pick_layout(x, nd->in[0]);
        if ((vn->vin = npk_exec_use_value(x, n, nd->in[0], &l, 0)) < 0) return vn->vin;
        if ((vn->vout = npk_exec_use_value(x, n, nd->out[0], &l, 1)) < 0) return vn->vout;
        vn->kind = K_RELU;
        snprintf(devop, dl, "v0 RELU");
        snprintf(why, wl, "int8 ReLU is exact on the device (%s layout)", l.kind == NPK_DL_NHWC ? "NHWC" : "row");
        return 1;
    }
    if (nd->op_id == NPK_OP_MaxPool) {
        const npk_tensor *xm = npk_exec_meta(x, nd->in[0]);
        if (xm->dtype != NPK_DT_INT8 || xm->rank != 4) {
            snprintf(why, wl, "v0 MAXPOOL_S8 takes int8 NCHW 2-D pooling (input %s rank %d)", npk_dtype_name(xm->dtype), xm->rank);
            return 0;
        }
        if (nd->n_out > 1 && nd->out[1] >= 0) {
            snprintf(why, wl, "the Indices output is not produced by the device");
            return 0;
        }
        npk_opctx c;
        memset(&c, 0, sizeof c);
        c.node = nd;
        c.opset = npk_exec_graph(x)->opset;
        npk_onnx_conv_params p;
        if (npk_onnx_conv_params_of(&c, xm, NULL, 1, &p)) return -NPK_EINVAL;
        const npk_tensor *ym = npk_exec_meta(x, nd->out[0]);
        if (p.pad_b[1] || p.pad_b[2] || p.pad_e[1] || p.pad_e[2]) {
            snprintf(why, wl, "padded max pooling: the device counts padding as 0, ONNX ignores it");
            return 0;
        }
        if (p.dil[1] != 1 || p.dil[2] != 1 || p.stride[1] != p.stride[2]) {
            snprintf(why, wl, "dilated or anisotropic-stride pooling is outside MAXPOOL_S8");
            return 0;
        }
        vn->pool = (npk_v0_pool){(uint32_t)p.in[1], (uint32_t)p.in[2], (uint32_t)p.c, (uint32_t)p.k[1], (uint32_t)p.k[2],
                                 (uint32_t)p.stride[1], 0};
        uint32_t oh, ow;
        if (npk_v0_pool_out(&vn->pool, &oh, &ow) || oh != (uint32_t)ym->dims[2] || ow != (uint32_t)ym->dims[3]) {
            snprintf(why, wl, "ceil-mode output size differs from the device's");
            return 0;
        }
        npk_v0_desc d = npk_v0_desc_maxpool(NPK_V0_F_SIGNED, &vn->pool, 0x10000, (uint32_t)((p.in[2] * p.c + 15) / 16 * 16),
                                            0x20000, (uint32_t)(((int64_t)ow * p.c + 15) / 16 * 16), 0);
        char reason[160];
        if (npk_v0_validate(&d, npk_v0_caps(s->v), reason, sizeof reason)) {
            snprintf(why, wl, "outside the MAXPOOL_S8 envelope: %s", reason);
            return 0;
        }
        npk_dlayout l = {NPK_DL_NHWC, 0, 0};
        if ((vn->vin = npk_exec_use_value(x, n, nd->in[0], &l, 0)) < 0) return vn->vin;
        if ((vn->vout = npk_exec_use_value(x, n, nd->out[0], &l, 1)) < 0) return vn->vout;
        vn->kind = K_POOL;
        snprintf(devop, dl, "v0 MAXPOOL_S8");
        snprintf(why, wl, "int8 %ux%u/%u max pool, one NHWC descriptor per image", vn->pool.win_h, vn->pool.win_w, vn->pool.stride);
        return 1;
    }
    snprintf(why, wl, "v0 has no exact %s (ops: MATMUL_S8, CONV2D_S8, RELU, MAXPOOL_S8 on int8)", nd->op);
    return 0;
}

static int v0_run(npk_backend *b, npk_exec *x, int n, npk_node_report *rep) {
    v0be *s = b->priv;
    v0node *vn = &s->nodes[n];
    const npk_node *nd = npk_exec_node(x, n);
    int rc = 0;
    (void)rep;
    s->cur = n;
    if (vn->kind == K_QMM) return npk_qmm_run(&v0_qmm, b, x, vn->q);
    uint64_t ia = npk_exec_view_addr(x, vn->vin), oa = npk_exec_view_addr(x, vn->vout);
    uint32_t ip = npk_exec_view_pitch(x, vn->vin), op = npk_exec_view_pitch(x, vn->vout);
    if (vn->kind == K_RELU) {
        uint64_t rows, rb;
        npk_exec_rows(npk_exec_meta(x, nd->in[0]), pick_layout(x, nd->in[0]).kind, &rows, &rb);
        for (uint64_t r0 = 0; r0 < rows && !rc; r0 += NPK_V0_MAX_RELU)
            for (uint64_t c0 = 0; c0 < rb && !rc; c0 += NPK_V0_MAX_RELU) {
                uint32_t m = (uint32_t)(rows - r0 < NPK_V0_MAX_RELU ? rows - r0 : NPK_V0_MAX_RELU);
                uint32_t nn = (uint32_t)(rb - c0 < NPK_V0_MAX_RELU ? rb - c0 : NPK_V0_MAX_RELU);
                npk_v0_desc d = npk_v0_desc_relu(NPK_V0_F_SIGNED, m, nn, ia + r0 * ip + c0, ip, oa + r0 * op + c0, op, ++s->tag);
                rc = queue(s, &d);
            }
    } else if (vn->kind == K_POOL) {
        const npk_tensor *xm = npk_exec_meta(x, nd->in[0]), *ym = npk_exec_meta(x, nd->out[0]);
        for (int64_t i = 0; i < xm->dims[0] && !rc; i++) {
            npk_v0_desc d = npk_v0_desc_maxpool(NPK_V0_F_SIGNED, &vn->pool, ia + (uint64_t)(i * xm->dims[2]) * ip, ip,
                                                oa + (uint64_t)(i * ym->dims[2]) * op, op, ++s->tag);
            rc = queue(s, &d);
        }
    }
    if (!rc) rc = v0_flush(b);
    if (!rc) npk_exec_view_written(x, vn->vout);
    return rc;
}

static uint64_t v0_busy(npk_backend *b) {
    v0be *s = b->priv;
    npk_v0_counters c;
    if (npk_v0_read_counters(s->v, &c)) return 0;
    return c.perf_cycles;
}

static int v0_engines(npk_backend *b, npk_engine_figures *f) {
    v0be *s = b->priv;
    npk_v0_counters c;
    int rc = npk_v0_read_counters(s->v, &c);
    if (rc) return rc;
    *f = (npk_engine_figures){c.engines.dram_rd, c.engines.dram_wr, c.engines.spad, c.engines.acc,
                              c.engines.compute_cycles, c.engines.dma_cycles};
    return 0;
}

static void v0_close(npk_backend *b) {
    v0be *s = b->priv;
    for (size_t i = 0; s->nodes && i < s->n_nodes; i++) npk_qmm_free(s->nodes[i].q);
    free(s->nodes);
    free(s->q);
    free(s->img);
    if (s->v) npk_v0_close(s->v);
    if (s->port) npk_port_close(s->port);
    free(s);
}

static int backend_open(npk_backend **out, const npk_run_opts *o, char *note, size_t note_len) {
    *out = NULL;
    v0be *s = calloc(1, sizeof *s);
    if (!s) return npk_err(NPK_ENOMEM, "out of memory");
    s->be = (npk_backend){.name = "v0", .align = NPK_V0_ALIGN, .priv = s, .place = v0_place, .run = v0_run,
                          .port = v0_port, .busy_cycles = v0_busy, .engines = v0_engines, .close = v0_close};
    int rc = npk_backend_port_open(&s->port, o, "v0");
    npk_v0_config cfg;
    npk_v0_config_default(&cfg);
    cfg.cpu_fallback = 0; /* a descriptor the device refuses is an error, never a silent CPU run */
    cfg.ring_len = 256;
    if (!rc && (rc = npk_v0_open(&s->v, s->port, &cfg))) rc = npk_err_prefix(-rc, "opening the v0 driver");
    if (rc) {
        v0_close(&s->be);
        return rc;
    }
    uint32_t caps = npk_v0_caps(s->v);
    if (!(caps & NPK_V0_CAPS_GEMMINI)) {
        snprintf(note, note_len, "v0 reports gemmini_present = 0: every node runs on the CPU reference");
        v0_close(&s->be);
        return 0;
    }
    if (o->trace) npk_port_set_trace(s->port, o->trace); /* device engines + driver host steps */
    s->cs = o->stream;
    /* the array geometry the device reports (device options rows, cols) */
    s->be.peak_macs = (uint64_t)NPK_FEX(caps, NPK_V0_CAPS_ROWS) * NPK_FEX(caps, NPK_V0_CAPS_COLS);
    *out = &s->be;
    return 0;
}

/* The v0 row of the graph-level device table (src/graph/exec.h). */
static const npk_dev_op v0_ops[] = {
    NPK_QMM_DEV_OPS
    {"Relu", "int8"}, {"MaxPool", "int8 2-D, window 2/3, stride 1/2, no padding"}, {NULL, NULL}};
const npk_dev_graph npk_v0_graph = {.name = "v0", .open = backend_open, .npkb = 1, .ops = v0_ops};
