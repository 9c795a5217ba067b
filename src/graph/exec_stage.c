// SPDX-License-Identifier: MIT
/* The executor as the backends see it (src/graph/exec.h): accessors for
 * values, nodes and options, value views and scratch in guest memory, and the
 * staging of values between host layout and device views. */
#include "graph/exec_int.h"
#include "graph/cstream.h"
#include "npukit/strbuf.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- accessors for backends --------------------------------------------------- */

const npk_graph *npk_exec_graph(npk_exec *x) { return x->g; }
int npk_exec_golden(const npk_exec *x) { return x->opts && x->opts->golden; }
int npk_exec_qdq_mode(const npk_exec *x) { return x->opts ? x->opts->qdq : NPK_QDQ_FUSED; }
int npk_qdq_mode_parse(const char *s) { return !s ? -1 : !strcmp(s, "fused") ? NPK_QDQ_FUSED : !strcmp(s, "ort") ? NPK_QDQ_ORT : -1; }
const npk_node *npk_exec_node(npk_exec *x, int n) { return &x->g->nodes[n]; }
const npk_tensor *npk_exec_meta(npk_exec *x, int v) { return v >= 0 ? &x->meta[v] : NULL; }
int npk_exec_known(npk_exec *x, int v) { return v >= 0 && x->known[v]; }
const npk_tensor *npk_exec_const(npk_exec *x, int v) { return v >= 0 ? x->g->vals[v].konst : NULL; }

/* The consumer of every value, found in one pass over the edges the first
 * time a backend or the QDQ matcher asks (partitioning asks for most values,
 * and a scan of every node per question made it quadratic): the node, -1
 * when none reads it, -2 when several do. */
int exec_consumers_init(npk_exec *x) {
    if (x->consumer) return 0;
    size_t nv = x->g->n_vals;
    if (!(x->consumer = malloc(sizeof(int) * (nv + 1)))) return -1;
    for (size_t v = 0; v < nv; v++) x->consumer[v] = -1;
    for (size_t i = 0; i < x->g->n_nodes; i++) {
        const npk_node *nd = &x->g->nodes[i];
        for (int k = 0; k < nd->n_in; k++) {
            int v = nd->in[k];
            if (v < 0 || (size_t)v >= nv) continue;
            if (x->consumer[v] == -1) x->consumer[v] = (int)i;
            else if (x->consumer[v] != (int)i) x->consumer[v] = -2;
        }
    }
    return 0;
}

int npk_exec_only_consumer(npk_exec *x, int v) {
    if (v < 0 || (size_t)v >= x->g->n_vals || exec_consumers_init(x)) return -1;
    return x->consumer[v] < 0 ? -1 : x->consumer[v];
}

int npk_exec_sole_use(npk_exec *x, int v, int n) {
    return !x->g->vals[v].graph_output && npk_exec_only_consumer(x, v) == n;
}

void npk_exec_rows(const npk_tensor *m, int kind, uint64_t *rows, uint64_t *row_bytes) {
    size_t es = npk_dtype_size(m->dtype);
    if (kind == NPK_DL_NHWC && m->rank == 4) {
        *rows = (uint64_t)(m->dims[0] * m->dims[2]);
        *row_bytes = (uint64_t)(m->dims[3] * m->dims[1]) * es;
        return;
    }
    int64_t r = 1;
    for (int i = 0; i + 1 < m->rank; i++) r *= m->dims[i];
    *rows = (uint64_t)r;
    *row_bytes = (uint64_t)(m->rank ? m->dims[m->rank - 1] : 1) * es;
}

int npk_backend_port_open(npk_port **port, const npk_run_opts *o, const char *dev) {
    int rc = npk_port_open(port, o->port, dev, o->dev_opts);
    return rc ? npk_err_prefix(-rc, "opening the %s port", dev) : 0;
}

int npk_exec_use_value(npk_exec *x, int n, int v, const npk_dlayout *l, int write) {
    if (v < 0 || !x->known[v]) return npk_err(NPK_EINVAL, "device view of a value without a known shape");
    if (!write)
        for (int i = 0; i < x->n_views; i++) {
            view *w = &x->views[i];
            if (w->value == v && w->l.kind == l->kind && w->l.flip == l->flip && (!l->pitch || w->l.pitch == l->pitch)) {
                if (n < w->node_first) w->node_first = n;
                if (n > w->node_last) w->node_last = n;
                return i;
            }
        }
    int rc = npk_grow(&x->views, &x->cap_views, (size_t)x->n_views + 1, sizeof *x->views, 32);
    if (rc) return rc;
    view *w = &x->views[x->n_views];
    memset(w, 0, sizeof *w);
    w->value = v;
    w->node_first = w->node_last = n;
    w->write = write;
    w->l = *l;
    w->buf = -1;
    npk_exec_rows(&x->meta[v], l->kind, &w->rows, &w->row_bytes);
    uint32_t a = x->be ? x->be->align : 16;
    if (!w->l.pitch) w->l.pitch = (uint32_t)align_up(w->row_bytes ? w->row_bytes : 1, a);
    if (write) x->dev_writer[v] = x->n_views;
    return x->n_views++;
}

int npk_exec_scratch(npk_exec *x, int n, uint64_t bytes) {
    int rc = npk_grow(&x->scr, &x->cap_scr, (size_t)x->n_scr + 1, sizeof *x->scr, 32);
    if (rc) return rc;
    x->scr[x->n_scr] = (scratch){n, -1, bytes ? bytes : 1};
    return x->n_scr++;
}

int npk_exec_fuse(npk_exec *x, int fused, int into) {
    x->fused_into[fused] = into;
    return 0;
}

void npk_exec_offload_limit(npk_exec *x, int n) { x->rep->nodes[n].offload_limit = 1; }

int npk_exec_read_direct(npk_exec *x, int n, int v) {
    for (int i = 0; i < 2; i++) {
        if (x->direct[n][i] == v) return 0;
        if (x->direct[n][i] < 0) {
            x->direct[n][i] = v;
            x->uses_left[v]++;
            return 0;
        }
    }
    return npk_err(NPK_EINVAL, "node '%s' reads more than two values through shared DequantizeLinear nodes",
                   x->g->nodes[n].name);
}

uint64_t npk_exec_view_addr(npk_exec *x, int id) { return x->arena + x->bufs[x->views[id].buf].off; }
uint32_t npk_exec_view_pitch(npk_exec *x, int id) { return x->views[id].l.pitch; }
uint64_t npk_exec_scratch_addr(npk_exec *x, int id) { return x->arena + x->bufs[x->scr[id].buf].off; }

int npk_exec_write(npk_exec *x, uint64_t addr, const void *src, size_t len) {
    x->rep->staged_in_bytes += len;
    return npk_port_mem_write(x->be->port(x->be), addr, src, len);
}

npk_cstream *npk_exec_stream(npk_exec *x) { return x->opts->stream; }
int npk_exec_cur_node(npk_exec *x) { return x->cur_node; }

int npk_exec_write_const(npk_exec *x, uint64_t addr, const void *src, size_t len) {
    npk_cstream *cs = x->opts->stream;
    if (cs && cs->replay) {
        /* the stored bytes, at the point of the run where they were recorded (a buffer
         * may still hold a value the node reads out first) */
        const npk_cs_rec *r;
        int rc = npk_cs_take(cs, NPK_CS_WRITE, x->cur_node, &r);
        if (rc) return rc;
        if (r->addr != addr || r->len != len)
            return npk_err(NPK_EFORMAT, "compiled stream: record %zu writes %" PRIu64 " bytes at 0x%" PRIx64 " where the plan stages %zu bytes at 0x%" PRIx64,
                           cs->cursor - 1, r->len, r->addr, len, addr);
        return npk_exec_write(x, addr, r->data, len);
    }
    if (cs) {
        int rc = npk_cs_put(cs, NPK_CS_WRITE, x->cur_node, addr, src, len);
        if (rc) return rc;
    }
    return npk_exec_write(x, addr, src, len);
}

int npk_exec_read(npk_exec *x, uint64_t addr, void *dst, size_t len) {
    x->rep->staged_out_bytes += len;
    return npk_port_mem_read(x->be->port(x->be), addr, dst, len);
}

/* ---- staging between host layout and device views --------------------------------- */

/* Host element offset of (row r, byte-column c / es) of value m in layout kind. */
void exec_view_convert(const npk_tensor *m, const view *w, uint8_t *dev, uint8_t *host, int to_dev) {
    size_t es = npk_dtype_size(m->dtype);
    if (w->l.kind == NPK_DL_NHWC && m->rank == 4) {
        int64_t N = m->dims[0], C = m->dims[1], H = m->dims[2], W = m->dims[3];
        for (int64_t n = 0; n < N; n++)
            for (int64_t h = 0; h < H; h++) {
                uint8_t *row = dev + (size_t)((n * H + h) * (int64_t)w->l.pitch);
                for (int64_t ww = 0; ww < W; ww++)
                    for (int64_t c = 0; c < C; c++) {
                        uint8_t *d = row + (size_t)((ww * C + c) * (int64_t)es);
                        uint8_t *s = host + (size_t)((((n * C + c) * H + h) * W + ww) * (int64_t)es);
                        if (to_dev) {
                            memcpy(d, s, es);
                            if (w->l.flip) d[es - 1] ^= 0x80;
                        } else {
                            memcpy(s, d, es);
                            if (w->l.flip) s[es - 1] ^= 0x80;
                        }
                    }
            }
        return;
    }
    for (uint64_t r = 0; r < w->rows; r++) {
        uint8_t *d = dev + r * w->l.pitch, *s = host + r * w->row_bytes;
        if (to_dev) memcpy(d, s, w->row_bytes);
        else memcpy(s, d, w->row_bytes);
        if (w->l.flip)
            for (uint64_t i = es - 1; i < w->row_bytes; i += es) (to_dev ? d : s)[i] ^= 0x80;
    }
}

int exec_stage_in(npk_exec *x, int id) {
    view *w = &x->views[id];
    if (w->valid) return 0;
    const npk_tensor *h = npk_exec_host(x, w->value);
    if (!h) return -NPK_EINVAL;
    uint64_t len = view_bytes(w);
    if (x->g->vals[w->value].konst && x->opts->stream && x->opts->stream->replay) { /* a stored weight */
        int rc = npk_exec_write_const(x, npk_exec_view_addr(x, id), NULL, (size_t)len);
        if (rc) return npk_err_prefix(-rc, "staging '%s' into guest memory", x->g->vals[w->value].name);
        w->valid = 1;
        return 0;
    }
    uint8_t *tmp = calloc(1, (size_t)len);
    if (!tmp) return npk_err(NPK_ENOMEM, "out of memory staging '%s'", x->g->vals[w->value].name);
    exec_view_convert(&x->meta[w->value], w, tmp, h->data, 1);
    /* a constant (initializer) is a weight: part of a compiled stream */
    int rc = x->g->vals[w->value].konst ? npk_exec_write_const(x, npk_exec_view_addr(x, id), tmp, (size_t)len)
                                        : npk_exec_write(x, npk_exec_view_addr(x, id), tmp, (size_t)len);
    free(tmp);
    if (rc) return npk_err_prefix(-rc, "staging '%s' into guest memory", x->g->vals[w->value].name);
    w->valid = 1;
    return 0;
}

int exec_stage_out(npk_exec *x, int id) {
    view *w = &x->views[id];
    int v = w->value;
    npk_tensor *t = calloc(1, sizeof *t);
    if (!t) return npk_err(NPK_ENOMEM, "out of memory");
    int rc = npk_tensor_alloc(t, x->g->vals[v].name, x->meta[v].dtype, x->meta[v].rank, x->meta[v].dims);
    uint64_t len = view_bytes(w);
    uint8_t *tmp = rc ? NULL : malloc((size_t)len);
    if (!rc && !tmp) rc = npk_err(NPK_ENOMEM, "out of memory");
    if (!rc) rc = npk_exec_read(x, npk_exec_view_addr(x, id), tmp, (size_t)len);
    if (rc) {
        free(tmp);
        npk_tensor_free(t);
        free(t);
        return npk_err_prefix(-rc, "staging '%s' out of guest memory", x->g->vals[v].name);
    }
    exec_view_convert(&x->meta[v], w, tmp, t->data, 0);
    free(tmp);
    x->host[v] = t;
    return 0;
}

/* host[v] = a struct of ours over t's data, which outlives the run (an input, a folded constant). */
int exec_host_borrow(npk_exec *x, int v, const npk_tensor *t, const char *name) {
    npk_tensor *h = malloc(sizeof *h);
    if (!h) return npk_err(NPK_ENOMEM, "out of memory");
    *h = *t;
    h->name = (char *)name; /* never freed: borrowed structs are freed alone */
    x->host[v] = h;
    x->borrowed[v] = 1;
    return 0;
}

void exec_host_drop(npk_exec *x, int v) {
    if (!x->host[v]) return;
    if (!x->borrowed[v]) npk_tensor_free(x->host[v]);
    free(x->host[v]);
    x->host[v] = NULL;
    x->borrowed[v] = 0;
}

const npk_tensor *npk_exec_host(npk_exec *x, int v) {
    if (v < 0) return NULL;
    if (x->g->vals[v].konst) return x->g->vals[v].konst;
    if (x->host[v]) return x->host[v];
    if (x->folded && x->folded[v]) return x->folded[v]; /* folded at inference: read in place (run_folded) */
    if (x->dev_writer[v] >= 0 && x->views[x->dev_writer[v]].valid) {
        if (exec_stage_out(x, x->dev_writer[v])) return NULL;
        return x->host[v];
    }
    npk_err(NPK_EINVAL, "value '%s' is not available on the host", x->g->vals[v].name);
    return NULL;
}

npk_tensor *npk_exec_out_host(npk_exec *x, int v) {
    if (v < 0) return NULL;
    if (x->host[v]) return x->host[v];
    npk_tensor *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (npk_tensor_alloc(t, x->g->vals[v].name, x->meta[v].dtype, x->meta[v].rank, x->meta[v].dims)) {
        free(t);
        return NULL;
    }
    x->host[v] = t;
    return t;
}

void npk_exec_view_written(npk_exec *x, int id) { x->views[id].valid = 1; }

int npk_exec_writer_layout(npk_exec *x, int v, npk_dlayout *l) {
    if (v < 0 || x->dev_writer[v] < 0) return 0;
    *l = x->views[x->dev_writer[v]].l;
    return 1;
}

int npk_exec_timing_only(const npk_exec *x) { return x->opts->timing_only; }
