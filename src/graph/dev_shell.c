// SPDX-License-Identifier: MIT
/* The NPU shell as an ONNX backend: integer matrix products and
 * convolutions (GEMM INT8 -> int32, v0.2 descriptors with row pitches;
 * convolutions through host im2col) and int8 Relu (VEC_OP relu, exact on
 * int8: x/16 -> max(0, .) -> x*16) on the device through the shell driver
 * (include/npukit/shell.h); everything else on the CPU reference. The shell
 * has no pooling engine; its VEC add/mul saturate where ONNX wraps, and
 * its float paths are fp16/bf16/fp8, so nothing else is exact. */
#include <stdlib.h>
#include <string.h>

#include "graph/cstream.h"
#include "graph/dev_qmm.h"
#include "npukit/shell_drv.h"
#include "npukit/trace.h"
#include "npukit/strbuf.h"

enum { K_NONE, K_QMM, K_RELU };

typedef struct shnode {
    int kind;
    npk_qmm *q;
    int vin, vout;
} shnode;

typedef struct shbe {
    npk_backend be;
    npk_port *port;
    npk_shell *s;
    int queued;
    shnode *nodes;
    size_t n_nodes;
    uint16_t tag;
    npk_cstream *cs; /* compiled stream (record or replay), or NULL */
    int cur;         /* the node running */
    size_t ndesc;    /* descriptors of the batch */
    uint8_t *img;    /* the batch's ring bytes (record mode) */
    size_t img_len, img_cap;
} shbe;

#define SH_MAX_DIM 65535u /* per-descriptor M and N we tile to (the model takes up to 2^26 elements) */
#define SH_MAX_K 65535u

static npk_port *sh_port(npk_backend *b) { return ((shbe *)b->priv)->port; }

static int sh_flush(npk_backend *b) {
    shbe *s = b->priv;
    if (!s->queued) return 0;
    s->queued = 0;
    size_t nd = s->ndesc;
    s->ndesc = 0;
    int rc = 0;
    if (s->cs && s->cs->replay) {
        /* a compiled stream: the stored ring bytes of this batch */
        const npk_cs_rec *r;
        if ((rc = npk_cs_take(s->cs, NPK_CS_SHELL, s->cur, &r))) return rc;
        size_t got = npk_cs_shell_count(r->data, (size_t)r->len);
        if (got != nd)
            return npk_err(NPK_EFORMAT, "compiled stream: the shell batch has %zu descriptors where the plan tiles the node into %zu",
                           got, nd);
        if ((rc = npk_shell_push_stream(s->s, r->data, (size_t)r->len))) return rc;
    } else if (s->cs) {
        rc = npk_cs_put(s->cs, NPK_CS_SHELL, s->cur, 0, s->img, s->img_len);
        s->img_len = 0;
        if (rc) return rc;
    }
    rc = npk_shell_kick(s->s);
    if (!rc) rc = npk_shell_wait(s->s, 0);
    return rc;
}

static int sh_push(shbe *s, const uint8_t *d, size_t len) {
    s->ndesc++;
    if (s->cs && s->cs->replay) { /* the stored batch is pushed at the flush: only count */
        s->queued = 1;
        return 0;
    }
    if (s->cs) {
        int rc = npk_grow(&s->img, &s->img_cap, s->img_len + len, 1, 4096);
        if (rc) return rc;
        memcpy(s->img + s->img_len, d, len);
        s->img_len += len;
    }
    int rc = npk_shell_push(s->s, d, len);
    if (!rc) s->queued = 1;
    return rc;
}

static int sh_gemm(npk_backend *b, uint32_t m, uint32_t n, uint32_t k, uint64_t a, uint32_t lda, uint64_t bm, uint32_t ldb,
                   uint64_t c, uint32_t ldc) {
    shbe *s = b->priv;
    npk_shell_gemm_desc g;
    memset(&g, 0, sizeof g);
    g.dtype = SHELL_INT8;
    g.layout = SHELL_ROW_MAJOR;
    g.epilogue = SHELL_EPI_NONE;
    g.user_tag = ++s->tag;
    g.a = a;
    g.b = bm;
    g.c = c;
    g.m = m;
    g.n = n;
    g.k = k;
    g.lda = lda;
    g.ldb = ldb;
    g.ldc = ldc;
    uint8_t d[96];
    size_t len = npk_shell_enc_gemm(d, &g);
    if (!len) return npk_err(NPK_EINVAL, "shell: GEMM %ux%ux%u cannot be encoded", m, n, k);
    return sh_push(s, d, len);
}

static const npk_qmm_dev sh_qmm = {.max_m = SH_MAX_DIM, .max_n = SH_MAX_DIM, .max_k = SH_MAX_K, .gemm = sh_gemm,
                                   .flush = sh_flush, .opname = "shell GEMM int8"};

static int sh_place(npk_backend *b, npk_exec *x, int n, char *why, size_t wl, char *devop, size_t dl) {
    shbe *s = b->priv;
    if (!s->nodes) {
        s->n_nodes = npk_exec_graph(x)->n_nodes;
        if (!(s->nodes = calloc(s->n_nodes + 1, sizeof(shnode)))) return npk_err(NPK_ENOMEM, "out of memory");
    }
    const npk_node *nd = npk_exec_node(x, n);
    shnode *sn = &s->nodes[n];
    npk_qmm *q;
    int rc = npk_qmm_place(&sh_qmm, x, n, &q, why, wl, devop, dl);
    if (rc) {
        if (rc > 0) {
            sn->kind = K_QMM;
            sn->q = q;
        }
        return rc;
    }
    if (npk_onnx_op_families(nd->op_id) & NPK_OPF_PRODUCT)
        return 0;
    if (nd->op_id == NPK_OP_Relu) {
        const npk_tensor *xm = npk_exec_meta(x, nd->in[0]);
        if (xm->dtype != NPK_DT_INT8) {
            snprintf(why, wl, "shell VEC_OP relu is exact on int8 only (input is %s)", npk_dtype_name(xm->dtype));
            return 0;
        }
        npk_dlayout l = {NPK_DL_ROWS, 0, 0}, w;
        if (npk_exec_writer_layout(x, nd->in[0], &w) && !w.flip) l = w;
        if ((sn->vin = npk_exec_use_value(x, n, nd->in[0], &l, 0)) < 0) return sn->vin;
        if ((sn->vout = npk_exec_use_value(x, n, nd->out[0], &l, 1)) < 0) return sn->vout;
        sn->kind = K_RELU;
        snprintf(devop, dl, "shell VEC_OP relu");
        snprintf(why, wl, "int8 ReLU is exact in the VEC engine");
        return 1;
    }
    snprintf(why, wl, "the shell has no exact %s (exact: GEMM int8, VEC relu int8)", nd->op);
    return 0;
}

static int sh_run(npk_backend *b, npk_exec *x, int n, npk_node_report *rep) {
    shbe *s = b->priv;
    shnode *sn = &s->nodes[n];
    (void)rep;
    s->cur = n;
    if (sn->kind == K_QMM) return npk_qmm_run(&sh_qmm, b, x, sn->q);
    const npk_node *nd = npk_exec_node(x, n);
    const npk_tensor *xm = npk_exec_meta(x, nd->in[0]);
    npk_dlayout l = {NPK_DL_ROWS, 0, 0};
    npk_exec_writer_layout(x, nd->in[0], &l);
    uint64_t rows, rb;
    npk_exec_rows(xm, l.kind, &rows, &rb);
    uint32_t pitch = npk_exec_view_pitch(x, sn->vin);
    uint64_t bytes = rows ? (rows - 1) * pitch + rb : 0, src = npk_exec_view_addr(x, sn->vin), dst = npk_exec_view_addr(x, sn->vout);
    int rc = 0;
    /* one VEC_OP over the pitched rows (padding bytes are relu'd too, harmlessly), in <= 2^24-byte pieces */
    for (uint64_t off = 0; off < bytes && !rc; off += 1u << 24) {
        uint8_t d[32];
        uint32_t len = (uint32_t)(bytes - off < (1u << 24) ? bytes - off : (1u << 24));
        npk_shell_enc_vec(d, ++s->tag, SHELL_VEC_RELU, SHELL_INT8, src + off, dst + off, len, 0);
        rc = sh_push(s, d, 32);
    }
    if (!rc) rc = sh_flush(b);
    if (!rc) npk_exec_view_written(x, sn->vout);
    return rc;
}

static void sh_close(npk_backend *b) {
    shbe *s = b->priv;
    for (size_t i = 0; s->nodes && i < s->n_nodes; i++) npk_qmm_free(s->nodes[i].q);
    free(s->nodes);
    free(s->img);
    if (s->s) npk_shell_close(s->s);
    if (s->port) npk_port_close(s->port);
    free(s);
}

static int backend_open(npk_backend **out, const npk_run_opts *o, char *note, size_t note_len) {
    *out = NULL;
    shbe *s = calloc(1, sizeof *s);
    if (!s) return npk_err(NPK_ENOMEM, "out of memory");
    s->be = (npk_backend){.name = "shell", .align = 16, .peak_macs = 1024, /* int8 GEMM MACs per cycle (docs/shell.md) */
                          .priv = s, .place = sh_place, .run = sh_run, .port = sh_port, .close = sh_close};
    int rc = npk_backend_port_open(&s->port, o, "shell");
    if (!rc && (rc = npk_shell_open(&s->s, s->port, NULL))) rc = npk_err_prefix(-rc, "opening the shell driver");
    if (rc) {
        sh_close(&s->be);
        return rc;
    }
    uint32_t caps = npk_shell_caps(s->s);
    if (!(caps & SHELL_CAP_GEMM) || !(caps & SHELL_CAP_GEMM_V2)) {
        snprintf(note, note_len, "shell CAPABILITIES 0x%x lack GEMM v0.2: every node runs on the CPU reference", caps);
        sh_close(&s->be);
        return 0;
    }
    if (o->trace) npk_port_set_trace(s->port, o->trace); /* device engines + driver host steps */
    s->cs = o->stream;
    *out = &s->be;
    return 0;
}

/* The shell row of the graph-level device table (src/graph/exec.h). */
static const npk_dev_op shell_ops[] = {
    NPK_QMM_DEV_OPS
    {"Relu", "int8"}, {NULL, NULL}};
const npk_dev_graph npk_shell_graph = {.name = "shell", .open = backend_open, .npkb = 1, .ops = shell_ops};
