/* The graph executor: input binding, shape inference, partitioning, guest
 * memory planning, staging and node-by-node execution. */
#include "graph/exec.h"
#include "graph/cstream.h"
#include "graph/qdq.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npukit/trace.h"

typedef struct view {
    int value, node_first, node_last, write, buf;
    npk_dlayout l;
    uint64_t rows, row_bytes;
    int valid;           /* device copy is current */
} view;

typedef struct scratch {
    int node, buf;
    uint64_t bytes;
} scratch;

typedef struct buf {
    uint64_t size, off;
    int first, last;
} buf;

struct npk_exec {
    npk_graph *g;
    const npk_run_opts *opts;
    npk_run_report *rep;
    npk_tensor *meta;       /* per value */
    char *known;            /* per value */
    npk_tensor **host;      /* per value: host copy (owned) or NULL */
    char *borrowed;         /* per value: host[v] shares its data with a run input or a folded constant (only
                               the struct is ours) */
    char *kconst;           /* per value: computed from the graph's constants alone (no input reaches it), or
                               a body input its node declared constant (in_const) */
    const char *in_const;   /* per graph input: the same in every run (npk_graph_run_body), or NULL */
    int *uses_left;         /* per value: consumers not yet run */
    int *place;             /* per node: npk_place */
    int *fused_into;        /* per node: device node it is folded into, or -1 */
    npk_qdq *cpu_qdq;       /* per node: a quantized group the CPU runs as one integer op (node < 0: none) */
    uint64_t rand_draws;    /* random-node executions so far (the stream of unseeded random operators) */
    int (*direct)[2];       /* per node: values it reads without a graph edge (the integer input of a shared
                               DequantizeLinear folded into it), -1: none */
    npk_tensor **folded;    /* per value: constant-folded at inference (owned, or the graph's fold_cache entry),
                               NULL otherwise */
    int *dev_writer;        /* per value: view id of the device view producing it, or -1 */
    int *consumer;          /* per value: its only consumer node, -1 none, -2 several (built on first use) */
    view *views;
    int n_views, cap_views;
    scratch *scr;
    int n_scr, cap_scr;
    buf *bufs;
    int n_bufs;
    npk_backend *be;
    uint64_t arena, arena_size;
    int cur_node;
    struct timespec t0;
};

static double now_ms(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

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
static int consumers_init(npk_exec *x) {
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
    if (v < 0 || (size_t)v >= x->g->n_vals || consumers_init(x)) return -1;
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

static uint64_t align_up(uint64_t v, uint64_t a) { return a ? (v + a - 1) / a * a : v; }

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
    if (x->n_views == x->cap_views) {
        int cap = x->cap_views ? x->cap_views * 2 : 32;
        view *nv = realloc(x->views, sizeof(view) * (size_t)cap);
        if (!nv) return npk_err(NPK_ENOMEM, "out of memory");
        x->views = nv;
        x->cap_views = cap;
    }
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
    if (x->n_scr == x->cap_scr) {
        int cap = x->cap_scr ? x->cap_scr * 2 : 32;
        scratch *ns = realloc(x->scr, sizeof(scratch) * (size_t)cap);
        if (!ns) return npk_err(NPK_ENOMEM, "out of memory");
        x->scr = ns;
        x->cap_scr = cap;
    }
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
static void view_convert(const npk_tensor *m, const view *w, uint8_t *dev, uint8_t *host, int to_dev) {
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

static uint64_t view_bytes(const view *w) { return w->rows ? (w->rows - 1) * w->l.pitch + w->row_bytes : 1; }

static int stage_in(npk_exec *x, int id) {
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
    view_convert(&x->meta[w->value], w, tmp, h->data, 1);
    /* a constant (initializer) is a weight: part of a compiled stream */
    int rc = x->g->vals[w->value].konst ? npk_exec_write_const(x, npk_exec_view_addr(x, id), tmp, (size_t)len)
                                        : npk_exec_write(x, npk_exec_view_addr(x, id), tmp, (size_t)len);
    free(tmp);
    if (rc) return npk_err_prefix(-rc, "staging '%s' into guest memory", x->g->vals[w->value].name);
    w->valid = 1;
    return 0;
}

static int stage_out(npk_exec *x, int id) {
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
    view_convert(&x->meta[v], w, tmp, t->data, 0);
    free(tmp);
    x->host[v] = t;
    return 0;
}

/* host[v] = a struct of ours over t's data, which outlives the run (an input, a folded constant). */
static int host_borrow(npk_exec *x, int v, const npk_tensor *t, const char *name) {
    npk_tensor *h = malloc(sizeof *h);
    if (!h) return npk_err(NPK_ENOMEM, "out of memory");
    *h = *t;
    h->name = (char *)name; /* never freed: borrowed structs are freed alone */
    x->host[v] = h;
    x->borrowed[v] = 1;
    return 0;
}

static void host_drop(npk_exec *x, int v) {
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
    if (x->dev_writer[v] >= 0 && x->views[x->dev_writer[v]].valid) {
        if (stage_out(x, x->dev_writer[v])) return NULL;
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

/* ---- memory planning ----------------------------------------------------------------- */

static int cmp_size_desc(const void *a, const void *b, void *ctx) {
    const buf *bs = ctx;
    const int ia = *(const int *)a, ib = *(const int *)b;
    if (bs[ia].size != bs[ib].size) return bs[ia].size < bs[ib].size ? 1 : -1;
    return ia - ib;
}

/* insertion sort with context (n is small) */
static void sort_idx(int *idx, int n, buf *bs) {
    for (int i = 1; i < n; i++) {
        int k = idx[i], j = i - 1;
        while (j >= 0 && cmp_size_desc(&idx[j], &k, bs) > 0) {
            idx[j + 1] = idx[j];
            j--;
        }
        idx[j + 1] = k;
    }
}

/* Replaying a compiled stream: the plan must be the compiled one (its
 * descriptors hold its addresses), and the arena goes where it was. */
static int replay_plan(npk_exec *x, npk_cstream *cs, int nb) {
    if ((uint32_t)nb != cs->n_bufs || x->arena_size != cs->arena_size)
        return npk_err(NPK_EINVAL, "the guest-memory plan (%d buffers, %" PRIu64 " bytes) differs from the compiled one (%u buffers, %" PRIu64
                                   " bytes)", nb, x->arena_size, cs->n_bufs, cs->arena_size);
    for (int i = 0; i < nb; i++) {
        const buf *b = &x->bufs[i];
        const npk_cs_buf *c = &cs->bufs[i];
        if (b->off != c->off || b->size != c->size || b->first != c->first || b->last != c->last)
            return npk_err(NPK_EINVAL, "guest buffer %d (offset %" PRIu64 ", %" PRIu64 " bytes, nodes %d..%d) differs from the compiled plan "
                                       "(offset %" PRIu64 ", %" PRIu64 " bytes, nodes %d..%d)", i, b->off, b->size, b->first, b->last,
                           c->off, c->size, c->first, c->last);
    }
    int rc = npk_port_reserve(x->be->port(x->be), cs->arena_base, cs->arena_size ? cs->arena_size : 1);
    if (rc) return npk_err_prefix(-rc, "placing the compiled guest arena at 0x%" PRIx64, cs->arena_base);
    x->arena = cs->arena_base;
    return 0;
}

static int plan_memory(npk_exec *x) {
    int nb = x->n_views + x->n_scr;
    if (!nb && x->opts->stream && x->opts->stream->replay && x->opts->stream->n_bufs)
        return npk_err(NPK_EINVAL, "the run plans no guest buffer where the compiled plan has %u", x->opts->stream->n_bufs);
    if (!nb) return 0;
    x->bufs = calloc((size_t)nb, sizeof(buf));
    int *idx = calloc((size_t)nb, sizeof(int)), *placed = calloc((size_t)nb, sizeof(int));
    if (!x->bufs || !idx || !placed) {
        free(idx);
        free(placed);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    uint64_t a = x->be->align ? x->be->align : 16;
    int nn = (int)x->g->n_nodes;
    for (int i = 0; i < x->n_views; i++) {
        view *w = &x->views[i];
        buf *b = &x->bufs[i];
        b->size = align_up(view_bytes(w), a);
        b->first = w->node_first;
        b->last = w->node_last;
        if (w->write) {
            /* alive until the CPU or the caller has taken it out */
            const npk_node *nds = x->g->nodes;
            for (int j = 0; j < nn; j++)
                if (x->place[j] == NPK_PLACE_CPU)
                    for (int k = 0; k < nds[j].n_in; k++)
                        if (nds[j].in[k] == w->value && j > b->last) b->last = j;
            if (x->g->vals[w->value].graph_output) b->last = nn;
        }
        w->buf = i;
    }
    for (int i = 0; i < x->n_scr; i++) {
        buf *b = &x->bufs[x->n_views + i];
        b->size = align_up(x->scr[i].bytes, a);
        b->first = b->last = x->scr[i].node;
        x->scr[i].buf = x->n_views + i;
    }
    for (int i = 0; i < nb; i++) idx[i] = i;
    sort_idx(idx, nb, x->bufs);
    uint64_t total = 0, naive = 0;
    int np = 0;
    for (int ii = 0; ii < nb; ii++) {
        buf *b = &x->bufs[idx[ii]];
        naive += b->size;
        uint64_t off = 0;
        int moved = 1;
        while (moved) { /* first fit: bump past every overlapping live buffer */
            moved = 0;
            for (int k = 0; k < np; k++) {
                buf *o = &x->bufs[placed[k]];
                if (o->last < b->first || b->last < o->first) continue;
                if (off < o->off + o->size && o->off < off + b->size) {
                    off = align_up(o->off + o->size, a);
                    moved = 1;
                }
            }
        }
        b->off = off;
        placed[np++] = idx[ii];
        if (off + b->size > total) total = off + b->size;
    }
    free(idx);
    free(placed);
    x->rep->guest_bytes = total;
    x->rep->guest_naive_bytes = naive;
    x->arena_size = total;
    npk_cstream *cs = x->opts->stream;
    if (cs && cs->replay) return replay_plan(x, cs, nb);
    int rc = npk_port_alloc(x->be->port(x->be), total, a < 64 ? 64 : a, &x->arena);
    if (rc) return npk_err_prefix(-rc, "allocating the %" PRIu64 "-byte guest arena", total);
    if (cs) { /* record the plan */
        free(cs->bufs);
        cs->bufs = calloc((size_t)nb + 1, sizeof *cs->bufs);
        if (!cs->bufs) return npk_err(NPK_ENOMEM, "out of memory");
        for (int i = 0; i < nb; i++) cs->bufs[i] = (npk_cs_buf){x->bufs[i].off, x->bufs[i].size, x->bufs[i].first, x->bufs[i].last};
        cs->n_bufs = (uint32_t)nb;
        cs->arena_base = x->arena;
        cs->arena_size = total;
        cs->have_plan = 1;
    }
    return 0;
}

/* ---- inference ------------------------------------------------------------------------- */

static const char *kind_name(int kind) {
    return kind == NPK_KIND_SEQUENCE ? "sequence" : kind == NPK_KIND_OPTIONAL ? "optional" : "tensor";
}

/* Tensor t against the tensor type d declares (element type, fixed dimensions); what names it. */
static int check_tensor(const npk_value_desc *d, const npk_tensor *t, const char *what) {
    char s1[128], s2[128];
    if (t->kind != NPK_KIND_TENSOR)
        return npk_err(NPK_EINVAL, "%s is a %s value, the model declares a tensor", what, kind_name(t->kind));
    if (!t->data && npk_tensor_numel(t)) return npk_err(NPK_EINVAL, "%s has no data", what);
    if (d->dtype && !npk_dtype_size(d->dtype))
        return npk_err(NPK_EUNSUPPORTED, "%s: the model declares element type %s, which is not supported", what,
                       npk_dtype_name(d->dtype));
    if (d->dtype && t->dtype != d->dtype)
        return npk_err(NPK_EINVAL, "%s has type %s, the model declares %s", what, npk_dtype_name(t->dtype),
                       npk_dtype_name(d->dtype));
    if (d->rank >= 0) {
        int bad = t->rank != d->rank;
        for (int k = 0; !bad && k < d->rank; k++)
            if (d->dims[k] >= 0 && d->dims[k] != t->dims[k]) bad = 1;
        if (bad)
            return npk_err(NPK_EINVAL, "%s has shape %s, the model declares %s", what,
                           npk_tensor_shape_str(t->dtype, t->rank, t->dims, s1, sizeof s1),
                           npk_tensor_shape_str(d->dtype, d->rank, d->dims, s2, sizeof s2));
    }
    return 0;
}

/* Input value t against its declaration d: the kind, then every tensor inside. */
static int check_input(const npk_value_desc *d, const npk_tensor *t) {
    char what[160], ds[256];
    snprintf(what, sizeof what, "input '%s'", d->name);
    if (d->kind < 0) return 0; /* a subgraph's outer-scope value: checked where it was made */
    if (t->kind != d->kind)
        return npk_err(NPK_EINVAL, "input '%s' is a %s value, the model declares %s", d->name, kind_name(t->kind),
                       npk_value_desc_str(d, ds, sizeof ds));
    if (d->kind == NPK_KIND_TENSOR) return check_tensor(d, t, what);
    if (t->n_items && !t->items) return npk_err(NPK_EINVAL, "input '%s' has no elements array", d->name);
    const npk_tensor *seq = t;
    if (d->kind == NPK_KIND_OPTIONAL) {
        if (t->n_items > 1) return npk_err(NPK_EINVAL, "input '%s' is an optional with %zu values", d->name, t->n_items);
        if (!t->n_items) return 0; /* empty */
        seq = &t->items[0];
        if (seq->kind != d->elem_kind)
            return npk_err(NPK_EINVAL, "input '%s' holds a %s, the model declares %s", d->name, kind_name(seq->kind),
                           npk_value_desc_str(d, ds, sizeof ds));
        if (seq->kind == NPK_KIND_TENSOR) return check_tensor(d, seq, what);
        if (seq->n_items && !seq->items) return npk_err(NPK_EINVAL, "input '%s' has no elements array", d->name);
    }
    for (size_t i = 0; i < seq->n_items; i++) {
        snprintf(what, sizeof what, "input '%s' element %zu", d->name, i);
        int rc = check_tensor(d, &seq->items[i], what);
        if (rc) return rc;
    }
    return 0;
}

static int bind_inputs(npk_exec *x, const npk_tensor *inputs, size_t n_inputs) {
    npk_graph *g = x->g;
    char s1[256];
    for (size_t k = 0; k < n_inputs; k++) {
        if (!inputs[k].name) continue;
        size_t i;
        for (i = 0; i < g->n_in; i++)
            if (!strcmp(g->in_desc[i].name, inputs[k].name)) break;
        if (i == g->n_in) return npk_err(NPK_EINVAL, "the model has no input named '%s'", inputs[k].name);
    }
    for (size_t i = 0; i < g->n_in; i++) {
        const npk_value_desc *d = &g->in_desc[i];
        const npk_tensor *t = NULL;
        for (size_t k = 0; k < n_inputs && !t; k++)
            if (inputs[k].name && !strcmp(inputs[k].name, d->name)) t = &inputs[k];
        if (!t && i < n_inputs && !inputs[i].name) t = &inputs[i];
        if (!t) return npk_err(NPK_EINVAL, "missing input '%s' (%s)", d->name, npk_value_desc_str(d, s1, sizeof s1));
        /* a body's declared shapes are not binding (loop-carried values may change shape) */
        npk_value_desc loose = *d;
        if (g->is_sub || x->opts->loose_dims) loose.rank = -1;
        /* an optional-typed body input takes the value itself (ONNX wraps it implicitly) */
        if (g->is_sub && d->kind == NPK_KIND_OPTIONAL && t->kind != NPK_KIND_OPTIONAL) loose.kind = -1;
        int rc = check_input(&loose, t);
        if (rc) return rc;
        /* the caller's tensor outlives the run: the run reads it in place */
        if ((rc = host_borrow(x, g->in_vals[i], t, d->name))) return rc;
    }
    return 0;
}

static void fill_ctx(npk_exec *x, int n, npk_opctx *c, int run) {
    const npk_node *nd = &x->g->nodes[n];
    /* the context is 2.6 KB (256 input slots): zero the scalar fields and only the slots the
     * node has, plus a margin of 8 (handlers read in[] and out[] below n_in / n_out only);
     * a whole memset per node and per inference was a tenth of silero-vad's run */
    memset(c, 0, offsetof(npk_opctx, in));
    memset((char *)c + offsetof(npk_opctx, macs), 0, sizeof *c - offsetof(npk_opctx, macs));
    int zi = nd->n_in + 8 < NPK_OP_MAX_IN ? nd->n_in + 8 : NPK_OP_MAX_IN;
    int zo = nd->n_out + 8 < NPK_OP_MAX_IO ? nd->n_out + 8 : NPK_OP_MAX_IO;
    memset(c->in, 0, sizeof c->in[0] * (size_t)zi);
    memset(c->out, 0, sizeof c->out[0] * (size_t)zo);
    c->node = nd;
    c->graph = x->g;
    c->opset = x->g->opset;
    c->run = run;
    c->n_in = nd->n_in - nd->n_outer;
    c->n_outer = nd->n_outer;
    /* --qdq=ort: a Conv/MatMul/Gemm between DequantizeLinear and QuantizeLinear that ONNX
     * Runtime leaves in float sums in double (the golden kernel): the QuantizeLinear after it
     * rounds at .5 ties, where the fast kernels' float32 summation can land on the other side
     * of the float graph's value (docs/onnx.md "QDQ") */
    c->golden = x->opts && (x->opts->golden || (x->opts->qdq == NPK_QDQ_ORT && npk_qdq_shape(x, n)));
    c->run_seed = x->opts ? x->opts->seed : 0;
    c->qdq = x->opts ? x->opts->qdq : NPK_QDQ_FUSED;
    c->draws = &x->rand_draws;
    c->n_out = nd->n_out;
    for (int k = 0; k < nd->n_in; k++) c->in[k] = nd->in[k] >= 0 ? &x->meta[nd->in[k]] : NULL;
    for (int k = 0; k < nd->n_out; k++) c->out[k] = nd->out[k] >= 0 ? &x->meta[nd->out[k]] : NULL;
}

/* Only Identity passes sequence and optional values through: an input of
 * another kind reaching any other operator fails, before anything runs,
 * naming the node and the value. */
static int kind_check(npk_exec *x, int n, int k, int kind) {
    const npk_node *nd = &x->g->nodes[n];
    if (kind == NPK_KIND_TENSOR || nd->op_id == NPK_OP_Identity || k >= nd->n_in - nd->n_outer ||
        (npk_onnx_op_families(nd->op_id) & NPK_OPF_CONTAINER))
        return 0;
    return npk_err(NPK_EINVAL,
                   "node '%s' (%s): input %d '%s' is a %s value: the operator takes tensors only (sequence and optional "
                   "values go to Identity, the sequence and optional operators and control flow)",
                   nd->name, nd->op, k, x->g->vals[nd->in[k]].name, kind_name(kind));
}

/* float16 / bfloat16 tensors (issue 14): Cast, CastLike, Identity and the
 * container/control-flow operators take them as they are; every other
 * operator computes on float32 copies of its half inputs (exact: both widen
 * losslessly) and its float32 outputs are rounded back to the half type once,
 * to nearest even (numpy's float16 arithmetic: compute in float32, round). */
static int half_native(int op) {
    return op == NPK_OP_Cast || op == NPK_OP_CastLike || op == NPK_OP_Identity ||
           (npk_onnx_op_families(op) & NPK_OPF_CONTAINER);
}

static int call_op(npk_opctx *c) {
    npk_op_fn fn = npk_onnx_op_handler(c->node->op_id);
    int half = 0, nin = c->n_in + c->n_outer, rc = 0;
    if (!half_native(c->node->op_id))
        for (int k = 0; k < nin; k++)
            if (c->in[k] && c->in[k]->kind == NPK_KIND_TENSOR && npk_dtype_is_half(c->in[k]->dtype)) half = c->in[k]->dtype;
    if (!half) return fn(c);
    npk_tensor *wide = calloc((size_t)nin + 1, sizeof *wide);
    const npk_tensor **saved = calloc((size_t)nin + 1, sizeof *saved);
    if (!wide || !saved) rc = npk_err(NPK_ENOMEM, "out of memory");
    for (int k = 0; k < nin && !rc; k++) {
        const npk_tensor *t = saved[k] = c->in[k];
        if (!t || t->kind != NPK_KIND_TENSOR || !npk_dtype_is_half(t->dtype)) continue;
        wide[k] = *t;
        wide[k].name = NULL;
        wide[k].dtype = NPK_DT_FLOAT;
        wide[k].data = NULL;
        if (t->data) {
            int64_t n = npk_tensor_numel(t);
            float *f = malloc(sizeof(float) * (size_t)(n ? n : 1));
            if (!f) {
                rc = npk_err(NPK_ENOMEM, "out of memory");
                break;
            }
            for (int64_t i = 0; i < n; i++) f[i] = (float)npk_ref_onnx_get_f(t->data, t->dtype, i);
            wide[k].data = f;
        }
        c->in[k] = &wide[k];
    }
    if (!rc) rc = fn(c);
    for (int k = 0; k < nin && saved; k++) {
        c->in[k] = saved[k];
        if (wide) free(wide[k].data);
    }
    free(wide);
    free(saved);
    for (int k = 0; k < c->n_out && (rc == 0 || rc == NPK_SHAPE_UNKNOWN); k++) {
        npk_tensor *t = c->out[k];
        if (!t || t->kind != NPK_KIND_TENSOR || t->dtype != NPK_DT_FLOAT) continue;
        if (c->run && t->data) {
            int64_t n = npk_tensor_numel(t);
            uint16_t *h = malloc(sizeof(uint16_t) * (size_t)(n ? n : 1));
            if (!h) return npk_err(NPK_ENOMEM, "out of memory");
            for (int64_t i = 0; i < n; i++) npk_ref_onnx_set_f(h, half, i, ((const float *)t->data)[i]);
            free(t->data);
            t->data = h;
        }
        if (rc == 0) t->dtype = half;
    }
    return rc;
}

/* Constant folding at inference (dynamic shapes): a node whose inputs are all
 * constants or folded values, or a Shape/Size of a value with a known shape,
 * is computed once here when its outputs are small, so shape subgraphs
 * (Shape -> Gather -> Concat -> Reshape, as PyTorch and Paddle export them)
 * give every later node a known shape before partitioning. A CPU node whose
 * outputs are all folded does not run again at execution: it reads the folded
 * values (the same result); a failure here only skips the fold.
 *
 * A node computed from the graph's constants alone (no input of the run
 * reaches it, kconst) gives the same values in every run: its folded outputs
 * are kept in the graph (fold_cache) and later runs take them from there
 * (not with --golden, whose runs compute everything with the golden kernels). */
#define NPK_FOLD_MAX_ELEMS 65536
#define NPK_FOLD_CONST_MAX (1 << 22)

static int fold_cache_on(npk_exec *x) {
    npk_graph *g = x->g;
    if (npk_exec_golden(x)) return 0;
    if (g->fold_cache && g->fold_n != g->n_vals) { /* the graph grew: start again */
        for (size_t v = 0; v < g->fold_n; v++)
            if (g->fold_cache[v]) {
                npk_tensor_free(g->fold_cache[v]);
                free(g->fold_cache[v]);
            }
        free(g->fold_cache);
        g->fold_cache = NULL;
    }
    if (!g->fold_cache && (g->fold_cache = calloc(g->n_vals + 1, sizeof *g->fold_cache))) g->fold_n = g->n_vals;
    return g->fold_cache != NULL;
}

static void fold_set(npk_exec *x, int v, npk_tensor *t) {
    x->folded[v] = t;
    x->meta[v].data = t->data;
    x->meta[v].dtype = t->dtype;
    x->meta[v].rank = t->rank;
    memcpy(x->meta[v].dims, t->dims, sizeof t->dims);
}

static void fold_node(npk_exec *x, int n) {
    const npk_node *nd = &x->g->nodes[n];
    int shape_only = nd->op_id == NPK_OP_Shape || nd->op_id == NPK_OP_Size;
    int64_t total = 0;
    int kc = 1;
    if (npk_onnx_op_families(nd->op_id) & NPK_OPF_RANDOM) return; /* a draw is no constant */
    for (int k = 0; k < nd->n_in; k++) {
        int v = nd->in[k];
        if (v < 0) continue;
        if (x->meta[v].kind != NPK_KIND_TENSOR) return;
        if (!shape_only && !x->g->vals[v].konst && !x->folded[v] && !x->kconst[v]) return;
        if (!x->kconst[v]) kc = 0;
    }
    npk_tensor **cache = kc && nd->n_out && fold_cache_on(x) ? x->g->fold_cache : NULL;
    int cached = cache != NULL;
    for (int k = 0; k < nd->n_out && cached; k++)
        if (nd->out[k] >= 0 && !cache[nd->out[k]]) cached = 0;
    if (cached) {
        for (int k = 0; k < nd->n_out; k++)
            if (nd->out[k] >= 0) {
                fold_set(x, nd->out[k], cache[nd->out[k]]);
                x->kconst[nd->out[k]] = 1;
            }
        return;
    }
    for (int k = 0; k < nd->n_out; k++) {
        int v = nd->out[k];
        if (v < 0) continue;
        if (!x->known[v] || x->meta[v].kind != NPK_KIND_TENSOR) return;
        total += npk_tensor_numel(&x->meta[v]);
    }
    /* a Constant (weights, as inlined exporters write them) is copied once into the graph's
     * cache up to NPK_FOLD_CONST_MAX elements, instead of once per run */
    if (total > (cache && nd->op_id == NPK_OP_Constant ? NPK_FOLD_CONST_MAX : NPK_FOLD_MAX_ELEMS) || !nd->n_out) return;
    npk_opctx c;
    npk_tensor outs[NPK_OP_MAX_IO];
    memset(outs, 0, sizeof outs);
    fill_ctx(x, n, &c, 1);
    for (int k = 0; k < nd->n_out && k < NPK_OP_MAX_IO; k++) c.out[k] = nd->out[k] >= 0 ? &outs[k] : NULL;
    int rc = call_op(&c);
    for (int k = 0; k < nd->n_out && k < NPK_OP_MAX_IO; k++) {
        int v = nd->out[k];
        npk_tensor *t = NULL;
        if (!rc && v >= 0 && outs[k].data && (t = malloc(sizeof *t))) {
            *t = outs[k];
            fold_set(x, v, t);
            if (cache) { /* the graph owns it from now on */
                cache[v] = t;
                x->kconst[v] = 1;
            }
        } else {
            npk_tensor_free(&outs[k]);
        }
    }
}

/* The fold of x->folded[v] is the graph's (fold_cache), not this run's. */
static int fold_shared(const npk_exec *x, int v) {
    return x->g->fold_cache && (size_t)v < x->g->fold_n && x->g->fold_cache[v] == x->folded[v];
}

static int infer_all(npk_exec *x) {
    npk_graph *g = x->g;
    for (size_t v = 0; v < g->n_vals; v++) {
        npk_tensor *m = &x->meta[v];
        const npk_tensor *src = g->vals[v].konst ? g->vals[v].konst : x->host[v];
        if (src) {
            x->kconst[v] = g->vals[v].konst != NULL ||
                           (x->in_const && g->vals[v].graph_input >= 0 && x->in_const[g->vals[v].graph_input]);
            m->kind = src->kind; /* a sequence / optional: its kind only, the elements stay on the host */
            m->dtype = src->dtype;
            m->rank = src->rank;
            memcpy(m->dims, src->dims, sizeof m->dims);
            m->data = src->data;
            x->known[v] = 1;
        }
    }
    for (size_t n = 0; n < g->n_nodes; n++) {
        const npk_node *nd = &g->nodes[n];
        int ok = 1, rc;
        for (int k = 0; k < nd->n_in; k++) {
            if (nd->in[k] >= 0 && !x->known[nd->in[k]]) ok = 0;
            /* sequences and optionals always have a known kind: every node they reach is checked here */
            else if (nd->in[k] >= 0 && (rc = kind_check(x, (int)n, k, x->meta[nd->in[k]].kind))) return rc;
        }
        if (!ok) continue;
        npk_opctx c;
        fill_ctx(x, (int)n, &c, 0);
        rc = call_op(&c);
        if (rc == NPK_SHAPE_UNKNOWN) continue;
        if (rc) return npk_err_prefix(-rc, "node '%s' (%s)", nd->name, nd->op);
        for (int k = 0; k < nd->n_out; k++)
            if (nd->out[k] >= 0) x->known[nd->out[k]] = 1;
        x->rep->nodes[n].macs = c.macs;
        fold_node(x, (int)n);
    }
    /* from here on only constants carry data in the metadata */
    for (size_t v = 0; v < g->n_vals; v++)
        if (!g->vals[v].konst) x->meta[v].data = NULL;
    return 0;
}

/* ---- public ---------------------------------------------------------------------------- */

/* Distinct unsupported operators of g in order of first appearance. */
typedef struct unsup {
    const char *domain, *op;
    size_t count, first;   /* nodes using it; index of the first */
    size_t shown[3];       /* node indices named in the message (within their graph) */
    const char *names[3];  /* their names */
    const char *inside[3]; /* the node whose subgraph holds it, NULL at the top level */
} unsup;

/* The graph and, recursively, the subgraphs of its control-flow nodes. */
static size_t collect_unsupported_in(const npk_graph *g, const char *inside, unsup *u, size_t cap, size_t nu,
                                     size_t *n_nodes) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        const npk_node *n = &g->nodes[i];
        for (size_t a = 0; a < n->n_attr; a++)
            if (n->attr[a].g) nu = collect_unsupported_in(n->attr[a].g, n->name, u, cap, nu, n_nodes);
        if (n->op_id != NPK_OP_NONE) continue;
        ++*n_nodes;
        size_t k;
        for (k = 0; k < nu; k++)
            if (!strcmp(u[k].op, n->op) && !strcmp(u[k].domain, n->domain)) break;
        if (k == nu) {
            if (nu == cap) continue; /* counted in n_nodes, not listed */
            memset(&u[nu], 0, sizeof u[nu]);
            u[nu].domain = n->domain;
            u[nu].op = n->op;
            u[nu++].first = i;
        }
        if (u[k].count < 3) {
            u[k].shown[u[k].count] = i;
            u[k].names[u[k].count] = n->name;
            u[k].inside[u[k].count] = inside;
        }
        u[k].count++;
    }
    return nu;
}

static size_t collect_unsupported(const npk_graph *g, unsup *u, size_t cap, size_t *n_nodes) {
    *n_nodes = 0;
    return collect_unsupported_in(g, NULL, u, cap, 0, n_nodes);
}

static void op_label(const unsup *u, char *buf, size_t len) {
    const char *cls = !*u->domain || !strcmp(u->domain, "ai.onnx") ? npk_onnx_op_unsupported_class(u->op)
                      : !strcmp(u->domain, "ai.onnx.preview.training") ? "training operator"
                                                                        : NULL;
    snprintf(buf, len, "%s%s%s%s%s%s", u->domain, *u->domain ? "." : "", u->op, cls ? " (" : "", cls ? cls : "",
             cls ? ")" : "");
}

size_t npk_graph_unsupported_list(const npk_graph *g, char *buf, size_t len) {
    unsup u[64];
    size_t nn, nu = collect_unsupported(g, u, 64, &nn), at = 0;
    if (len) buf[0] = 0;
    for (size_t k = 0; k < nu && at < len; k++) {
        char lab[160];
        op_label(&u[k], lab, sizeof lab);
        int w = snprintf(buf + at, len - at, "%s%s", k ? ", " : "", lab);
        if (w < 0) break;
        at += (size_t)w;
    }
    return nu;
}

int npk_graph_check(const npk_graph *g, const char **op_out) {
    if (op_out) *op_out = NULL;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const npk_node *n = &g->nodes[i];
        if (n->n_in - n->n_outer > NPK_OP_MAX_IO || n->n_out > NPK_OP_MAX_IO || n->n_in > NPK_OP_MAX_IN) {
            if (op_out) *op_out = n->op;
            return npk_err(NPK_EUNSUPPORTED,
                           "node '%s' (index %zu): %d inputs and %d outputs (at most %d each supported, %d with the "
                           "outer-scope values of its subgraphs)",
                           n->name, i, n->n_in - n->n_outer, n->n_out, NPK_OP_MAX_IO, NPK_OP_MAX_IN);
        }
    }
    unsup u[64];
    size_t nn, nu = collect_unsupported(g, u, 64, &nn);
    if (!nu) return 0;
    if (op_out) *op_out = u[0].op;
    /* one message naming every unsupported operator with its node count and
     * the first nodes using it, so a user sees the whole list at once */
    char msg[960];
    size_t at = (size_t)snprintf(msg, sizeof msg, "%zu unsupported operator%s in %zu node%s: ", nu, nu > 1 ? "s" : "", nn,
                                 nn > 1 ? "s" : "");
    for (size_t k = 0; k < nu && at < sizeof msg; k++) {
        char lab[160], nodes[400];
        op_label(&u[k], lab, sizeof lab);
        size_t nat = 0;
        size_t shown = u[k].count < 3 ? u[k].count : 3;
        for (size_t j = 0; j < shown && nat < sizeof nodes; j++)
            nat += (size_t)snprintf(nodes + nat, sizeof nodes - nat, "%s'%s' (index %zu%s%s%s)", j ? ", " : "",
                                    u[k].names[j], u[k].shown[j], u[k].inside[j] ? " in a subgraph of '" : "",
                                    u[k].inside[j] ? u[k].inside[j] : "", u[k].inside[j] ? "'" : "");
        if (u[k].count > shown && nat < sizeof nodes)
            snprintf(nodes + nat, sizeof nodes - nat, " and %zu more", u[k].count - shown);
        at += (size_t)snprintf(msg + at, sizeof msg - at, "%s%s x%zu (node%s %s)", k ? "; " : "", lab, u[k].count,
                               u[k].count > 1 ? "s" : "", nodes);
    }
    return npk_err(NPK_EUNSUPPORTED, "%s", msg);
}

void npk_run_report_fini(npk_run_report *r) {
    if (!r) return;
    free(r->nodes);
    r->nodes = NULL;
    r->n_nodes = 0;
}

static void exec_free(npk_exec *x) {
    npk_graph *g = x->g;
    if (x->host && x->borrowed)
        for (size_t v = 0; v < g->n_vals; v++) host_drop(x, (int)v);
    if (x->be) {
        if (x->arena) npk_port_free(x->be->port(x->be), x->arena);
        x->be->close(x->be);
    }
    free(x->host);
    free(x->borrowed);
    free(x->kconst);
    free(x->meta);
    free(x->known);
    free(x->uses_left);
    free(x->place);
    free(x->fused_into);
    free(x->cpu_qdq);
    free(x->direct);
    if (x->folded)
        for (size_t v = 0; v < g->n_vals; v++)
            if (x->folded[v] && !fold_shared(x, (int)v)) {
                npk_tensor_free(x->folded[v]);
                free(x->folded[v]);
            }
    free(x->folded);
    free(x->dev_writer);
    free(x->consumer);
    free(x->views);
    free(x->scr);
    free(x->bufs);
}

static void release_value(npk_exec *x, int v) {
    if (--x->uses_left[v] <= 0 && !x->g->vals[v].graph_output) host_drop(x, v);
}

static void release_inputs(npk_exec *x, int n) {
    const npk_node *nd = &x->g->nodes[n];
    for (int k = 0; k < nd->n_in; k++)
        if (nd->in[k] >= 0) release_value(x, nd->in[k]);
    for (int i = 0; i < 2; i++)
        if (x->direct[n][i] >= 0) release_value(x, x->direct[n][i]);
}

int npk_exec_timing_only(const npk_exec *x) { return x->opts->timing_only; }

/* Timing-only runs leave a CPU node's outputs zero when they are known tensors
 * with more than 4096 elements in all and none is int64: small values and
 * int64 ones may be shapes or indices that later nodes read, so they are
 * computed. */
static int timing_skip(npk_exec *x, int n) {
    if (!x->opts->timing_only) return 0;
    const npk_node *nd = &x->g->nodes[n];
    int64_t elems = 0;
    for (int k = 0; k < nd->n_out; k++) {
        int v = nd->out[k];
        if (v < 0) continue;
        if (!x->known[v] || x->meta[v].kind != NPK_KIND_TENSOR || x->meta[v].dtype == NPK_DT_INT64) return 0;
        elems += npk_tensor_numel(&x->meta[v]);
    }
    return elems > 4096;
}

/* A CPU node whose outputs were all folded at inference: its outputs are the
 * folded values (read in place). Returns 1 when it applied. */
static int run_folded(npk_exec *x, int n) {
    const npk_node *nd = &x->g->nodes[n];
    int any = 0;
    for (int k = 0; k < nd->n_out; k++) {
        int v = nd->out[k];
        if (v < 0) continue;
        if (!x->folded[v] || x->host[v]) return 0;
        any = 1;
    }
    if (!any) return 0;
    for (int k = 0; k < nd->n_out; k++) {
        int v = nd->out[k];
        if (v >= 0 && host_borrow(x, v, x->folded[v], x->g->vals[v].name)) return -NPK_ENOMEM;
    }
    x->rep->cpu_macs += x->rep->nodes[n].macs;
    return 1;
}

/* Reshape, Flatten, Squeeze, Unsqueeze and Identity keep the bytes of their
 * input: when this node is the last reader of an input the run owns, the
 * output takes the input's buffer instead of a copy. Returns 1 when it
 * applied, 0 to run the node as usual. */
static int run_view(npk_exec *x, int n, npk_opctx *c, npk_tensor *outs) {
    const npk_node *nd = &x->g->nodes[n];
    int op = nd->op_id;
    if (op != NPK_OP_Reshape && op != NPK_OP_Flatten && op != NPK_OP_Squeeze && op != NPK_OP_Unsqueeze &&
        op != NPK_OP_Identity)
        return 0;
    int v = nd->in[0];
    if (nd->n_out != 1 || nd->out[0] < 0 || v < 0 || !x->host[v] || x->borrowed[v] || x->uses_left[v] != 1 ||
        x->g->vals[v].graph_output || x->dev_writer[v] >= 0 || x->host[v]->kind != NPK_KIND_TENSOR ||
        npk_dtype_is_half(x->host[v]->dtype) || !x->host[v]->data)
        return 0;
    c->run = 0; /* the shape only */
    int rc = npk_onnx_op_handler(op)(c);
    c->run = 1;
    if (rc || outs[0].dtype != x->host[v]->dtype || npk_tensor_numel(&outs[0]) != npk_tensor_numel(x->host[v]))
        return 0; /* the usual run reports any error */
    outs[0].data = x->host[v]->data;
    x->host[v]->data = NULL;
    return 1;
}

static int run_cpu_node(npk_exec *x, int n) {
    const npk_node *nd = &x->g->nodes[n];
    npk_opctx c;
    npk_tensor outs[NPK_OP_MAX_IO];
    int rc;
    if (timing_skip(x, n)) { /* shapes and MACs by inference, outputs zero */
        for (int k = 0; k < nd->n_in; k++) /* the inputs still come to the host (same staged bytes) */
            if (nd->in[k] >= 0 && !npk_exec_host(x, nd->in[k])) return -NPK_EINVAL;
        fill_ctx(x, n, &c, 0);
        rc = npk_onnx_op_handler(nd->op_id)(&c);
        for (int k = 0; k < nd->n_out && !rc; k++)
            if (nd->out[k] >= 0 && !npk_exec_out_host(x, nd->out[k])) rc = npk_err(NPK_ENOMEM, "out of memory");
        if (rc) return npk_err_prefix(-rc, "node '%s' (%s)", nd->name, nd->op);
        x->rep->nodes[n].macs = c.macs;
        x->rep->cpu_macs += c.macs;
        return 0;
    }
    memset(outs, 0, sizeof outs);
    fill_ctx(x, n, &c, 1);
    for (int k = 0; k < nd->n_in; k++) {
        if (nd->in[k] < 0) continue;
        const npk_tensor *h = npk_exec_host(x, nd->in[k]);
        if (!h) return -NPK_EINVAL;
        if ((rc = kind_check(x, n, k, h->kind))) return rc;
        c.in[k] = h;
    }
    for (int k = 0; k < nd->n_out && k < NPK_OP_MAX_IO; k++) c.out[k] = nd->out[k] >= 0 ? &outs[k] : NULL;
    char kc[NPK_OP_MAX_IN];
    for (int k = 0; k < nd->n_in && k < NPK_OP_MAX_IN; k++) kc[k] = nd->in[k] >= 0 && x->kconst[nd->in[k]];
    c.in_const = kc;
    rc = run_view(x, n, &c, outs) ? 0 : call_op(&c);
    if (rc == NPK_SHAPE_UNKNOWN) rc = npk_err(NPK_EINVAL, "output shape could not be determined");
    for (int k = 0; k < nd->n_out && k < NPK_OP_MAX_IO; k++) {
        int v = nd->out[k];
        if (v < 0) continue;
        if (rc || (!outs[k].data && outs[k].kind == NPK_KIND_TENSOR)) {
            npk_tensor_free(&outs[k]);
            if (!rc) rc = npk_err(NPK_EINVAL, "output %d was not produced", k);
            continue;
        }
        npk_tensor *t = malloc(sizeof *t);
        if (!t) {
            npk_tensor_free(&outs[k]);
            rc = npk_err(NPK_ENOMEM, "out of memory");
            continue;
        }
        *t = outs[k];
        free(t->name);
        t->name = strdup(x->g->vals[v].name);
        x->host[v] = t;
        /* the runtime shape is authoritative (data-dependent shapes) */
        x->meta[v].kind = t->kind;
        x->meta[v].dtype = t->dtype;
        x->meta[v].rank = t->rank;
        memcpy(x->meta[v].dims, t->dims, sizeof t->dims);
        x->known[v] = 1;
    }
    if (rc) return npk_err_prefix(-rc, "node '%s' (%s)", nd->name, nd->op);
    x->rep->nodes[n].macs = c.macs;
    x->rep->cpu_macs += c.macs;
    return 0;
}

/* A float Conv/MatMul left on the CPU that is the centre of a DequantizeLinear ->
 * op -> QuantizeLinear group runs as the QLinear operator it denotes (the
 * integer arithmetic of ONNX Runtime and of the devices), its Q/DQ nodes folded in. */
static void cpu_qdq_place(npk_exec *x, int n, npk_node_report *nr) {
    const npk_node *nd = &x->g->nodes[n];
    if (nd->op_id != NPK_OP_Conv && nd->op_id != NPK_OP_MatMul && nd->op_id != NPK_OP_Gemm) return;
    char why[160];
    npk_qdq q;
    if (!npk_qdq_match(x, n, &q, why, sizeof why)) {
        size_t at = strlen(nr->why);
        if (npk_exec_qdq_mode(x) == NPK_QDQ_ORT && npk_qdq_shape(x, n) && !strstr(nr->why, "--qdq=ort") && at + 2 < sizeof nr->why)
            snprintf(nr->why + at, sizeof nr->why - at, "%s%.100s", at ? "; " : "", why);
        return;
    }
    if (npk_qdq_commit(x, &q)) return;
    x->cpu_qdq[n] = q;
    size_t at = strlen(nr->why);
    if (at + 2 < sizeof nr->why)
        snprintf(nr->why + at, sizeof nr->why - at, "%sDQ -> %s%s run on the CPU as %s (integer)", at ? "; " : "", nd->op,
                 q.fout ? "" : " -> Q",
                 nd->op_id == NPK_OP_Conv ? "QLinearConv" : nd->op_id == NPK_OP_Gemm ? "QGemm" : q.fout ? "MatMulIntegerToFloat" : "QLinearMatMul");
}

void npk_graph_set_progress(npk_graph *g, void (*fn)(void *ctx, size_t done, size_t total), void *ctx) {
    g->progress = fn;
    g->progress_ctx = ctx;
}

static const npk_dev_graph *const graph_rows[] = {
#define NPK_DEVICE(d) &npk_##d##_graph,
#include "npukit/devices.def"
};

const npk_dev_graph *npk_dev_graph_find(const char *name) {
    for (size_t i = 0; name && i < sizeof graph_rows / sizeof graph_rows[0]; i++)
        if (!strcmp(graph_rows[i]->name, name)) return graph_rows[i];
    return NULL;
}

const char *npk_graph_device_names(void) {
    static const char names[] = "cpu"
#define NPK_DEVICE(d) ", " #d
#include "npukit/devices.def"
        ;
    return names;
}

const char *npk_npkb_device_names(void) {
    static char names[256];
    if (!names[0])
        for (size_t i = 0; i < sizeof graph_rows / sizeof graph_rows[0]; i++)
            if (graph_rows[i]->npkb)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "",
                         graph_rows[i]->name);
    return names;
}

int npk_npkb_device_ok(const char *device) {
    const npk_dev_graph *r = npk_dev_graph_find(device);
    return r && r->npkb;
}

const char *npk_onnx_op_devices(const char *op, char *buf, size_t len) {
    size_t nr = sizeof graph_rows / sizeof graph_rows[0], at = 0;
    const char *notes[16];
    size_t nn = 0;
    if (len) buf[0] = 0;
    /* distinct notes in device order, each with the devices that have it */
    for (size_t r = 0; r < nr; r++)
        for (const npk_dev_op *o = graph_rows[r]->ops; o && o->op; o++) {
            if (strcmp(o->op, op)) continue;
            size_t k;
            for (k = 0; k < nn && strcmp(notes[k], o->note); k++) {}
            if (k == nn && nn < 16) notes[nn++] = o->note;
        }
    for (size_t k = 0; k < nn && at < len; k++) {
        int first = 1;
        at += (size_t)snprintf(buf + at, len - at, "%s", k ? "; " : "");
        for (size_t r = 0; r < nr && at < len; r++)
            for (const npk_dev_op *o = graph_rows[r]->ops; o && o->op && at < len; o++)
                if (!strcmp(o->op, op) && !strcmp(o->note, notes[k])) {
                    at += (size_t)snprintf(buf + at, len - at, "%s%s", first ? "" : ", ", graph_rows[r]->name);
                    first = 0;
                }
        if (*notes[k] && at < len) at += (size_t)snprintf(buf + at, len - at, " (%s)", notes[k]);
    }
    return buf;
}

int npk_graph_device_check(const char *device) {
    if (device && (!strcmp(device, "cpu") || npk_dev_graph_find(device))) return 0;
    return npk_err(NPK_EINVAL, "unknown device '%s' (known: %s)", device ? device : "", npk_graph_device_names());
}

/* Shape inference of a control-flow body (exec.h). */
int npk_graph_infer_body(npk_graph *g, const npk_run_opts *opts, const npk_tensor *const *in, npk_tensor *out, int *known) {
    npk_exec X, *x = &X;
    npk_run_report rep;
    npk_run_opts o = {0};
    if (opts) o = *opts;
    o.device = "cpu";
    memset(x, 0, sizeof X);
    memset(&rep, 0, sizeof rep);
    x->g = g;
    x->opts = &o;
    x->rep = &rep;
    x->cur_node = -1;
    size_t nv = g->n_vals;
    rep.nodes = calloc(g->n_nodes + 1, sizeof(npk_node_report));
    x->meta = calloc(nv + 1, sizeof(npk_tensor));
    x->known = calloc(nv + 1, 1);
    x->host = calloc(nv + 1, sizeof(npk_tensor *));
    x->folded = calloc(nv + 1, sizeof(npk_tensor *));
    x->borrowed = calloc(nv + 1, 1);
    x->kconst = calloc(nv + 1, 1);
    int rc = 0;
    if (!rep.nodes || !x->meta || !x->known || !x->host || !x->folded || !x->borrowed || !x->kconst)
        rc = npk_err(NPK_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < g->n_in; i++) {
        int v = g->in_vals[i];
        if (v < 0 || !in[i]) continue;
        x->meta[v].kind = in[i]->kind;
        x->meta[v].dtype = in[i]->dtype;
        x->meta[v].rank = in[i]->rank;
        memcpy(x->meta[v].dims, in[i]->dims, sizeof in[i]->dims);
        x->meta[v].data = in[i]->kind == NPK_KIND_TENSOR ? in[i]->data : NULL; /* borrowed; infer_all clears it */
        x->known[v] = 1;
    }
    if (!rc) rc = infer_all(x);
    for (size_t k = 0; !rc && k < g->n_out; k++) {
        int v = g->out_vals[k];
        known[k] = v >= 0 && x->known[v];
        memset(&out[k], 0, sizeof out[k]);
        if (!known[k]) continue;
        out[k].kind = x->meta[v].kind;
        out[k].dtype = x->meta[v].dtype;
        out[k].rank = x->meta[v].rank;
        memcpy(out[k].dims, x->meta[v].dims, sizeof out[k].dims);
    }
    exec_free(x);
    free(rep.nodes);
    return rc;
}

static int graph_run(npk_graph *g, const npk_run_opts *opts, const npk_tensor *inputs, size_t n_inputs,
                     const char *in_const, npk_tensor **outputs, size_t *n_outputs, npk_run_report *rep);

int npk_graph_run(npk_graph *g, const npk_run_opts *opts, const npk_tensor *inputs, size_t n_inputs,
                  npk_tensor **outputs, size_t *n_outputs, npk_run_report *rep) {
    return graph_run(g, opts, inputs, n_inputs, NULL, outputs, n_outputs, rep);
}

int npk_graph_run_body(npk_graph *g, const npk_run_opts *opts, const npk_tensor *inputs, size_t n_inputs,
                       const char *in_const, npk_tensor **outputs, size_t *n_outputs) {
    return graph_run(g, opts, inputs, n_inputs, in_const, outputs, n_outputs, NULL);
}

static int graph_run(npk_graph *g, const npk_run_opts *opts, const npk_tensor *inputs, size_t n_inputs,
                     const char *in_const, npk_tensor **outputs, size_t *n_outputs, npk_run_report *rep) {
    npk_run_report local;
    npk_run_opts defopts = {0};
    if (!opts) opts = &defopts;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    *outputs = NULL;
    *n_outputs = 0;
    const char *dev = opts->device ? opts->device : "cpu";
    snprintf(rep->device, sizeof rep->device, "%s", dev);
    /* timing-only: the device model too (its option timing_only=1) */
    npk_run_opts topts;
    char *tdev = NULL;
    if (opts->timing_only) {
        const char *d0 = opts->dev_opts && *opts->dev_opts ? opts->dev_opts : NULL;
        size_t len = (d0 ? strlen(d0) + 1 : 0) + sizeof "timing_only=1";
        if (!(tdev = malloc(len))) return npk_err(NPK_ENOMEM, "out of memory");
        snprintf(tdev, len, "%s%stiming_only=1", d0 ? d0 : "", d0 ? "," : "");
        topts = *opts;
        topts.dev_opts = tdev;
        opts = &topts;
    }
    npk_exec X, *x = &X;
    memset(x, 0, sizeof X);
    clock_gettime(CLOCK_MONOTONIC, &x->t0);
    x->g = g;
    x->opts = opts;
    x->in_const = in_const;
    x->rep = rep;
    x->cur_node = -1;
    size_t nv = g->n_vals, nn = g->n_nodes;
    int rc = 0;
    rep->nodes = calloc(nn + 1, sizeof(npk_node_report));
    x->meta = calloc(nv + 1, sizeof(npk_tensor));
    x->known = calloc(nv + 1, 1);
    x->host = calloc(nv + 1, sizeof(npk_tensor *));
    x->uses_left = calloc(nv + 1, sizeof(int));
    x->place = calloc(nn + 1, sizeof(int));
    x->fused_into = calloc(nn + 1, sizeof(int));
    x->cpu_qdq = calloc(nn + 1, sizeof(npk_qdq));
    x->direct = calloc(nn + 1, sizeof *x->direct);
    x->folded = calloc(nv + 1, sizeof(npk_tensor *));
    x->borrowed = calloc(nv + 1, 1);
    x->kconst = calloc(nv + 1, 1);
    x->dev_writer = calloc(nv + 1, sizeof(int));
    if (!rep->nodes || !x->meta || !x->known || !x->host || !x->uses_left || !x->place || !x->fused_into || !x->dev_writer || !x->cpu_qdq || !x->folded || !x->direct ||
        !x->borrowed || !x->kconst) {
        rc = npk_err(NPK_ENOMEM, "out of memory");
        goto done;
    }
    rep->n_nodes = nn;
    for (size_t i = 0; i < nn; i++) {
        rep->nodes[i].name = g->nodes[i].name;
        rep->nodes[i].op = g->nodes[i].op;
        x->fused_into[i] = -1;
        x->cpu_qdq[i].node = -1;
        x->direct[i][0] = x->direct[i][1] = -1;
    }
    for (size_t v = 0; v < nv; v++) {
        x->uses_left[v] = g->vals[v].n_uses;
        x->dev_writer[v] = -1;
    }
    if ((rc = npk_graph_device_check(dev))) goto done;
    /* the check walks every subgraph: once per graph (it has no state that a run changes) */
    if (g->checked_nodes != g->n_nodes) {
        if ((rc = npk_graph_check(g, NULL))) goto done;
        g->checked_nodes = g->n_nodes;
    }
    if ((rc = bind_inputs(x, inputs, n_inputs))) goto done;
    if ((rc = infer_all(x))) goto done;

    /* the device */
    const npk_dev_graph *row = npk_dev_graph_find(dev);
    if (row && row->open) rc = row->open(&x->be, opts, rep->note, sizeof rep->note);
    else if (row && row->note) snprintf(rep->note, sizeof rep->note, "%s", row->note);
    if (rc) goto done;
    if (x->be) {
        npk_port *p = x->be->port(x->be);
        rep->device_hz = npk_port_hz(p);
        rep->peak_macs_per_cycle = x->be->peak_macs;
        if (opts->trace) npk_trace_process(opts->trace, x->be->name, rep->device_hz);
    }

    /* partition */
    for (size_t n = 0; n < nn; n++) {
        unsigned f = npk_onnx_op_families(g->nodes[n].op_id);
        rep->nodes[n].int_product = (f & NPK_OPF_PRODUCT) && ((f & NPK_OPF_INTEGER) || npk_qdq_shape(x, (int)n));
    }
    for (size_t n = 0; n < nn; n++) {
        npk_node_report *nr = &rep->nodes[n];
        if (x->fused_into[n] >= 0) continue;
        const npk_node *nd = &g->nodes[n];
        int known = 1;
        for (int k = 0; k < nd->n_out; k++)
            if (nd->out[k] >= 0 && !x->known[nd->out[k]]) known = 0;
        for (int k = 0; k < nd->n_in; k++)
            if (nd->in[k] >= 0 && !x->known[nd->in[k]]) known = 0;
        if (!x->be) {
            static const char on_cpu[] = "--device cpu", no_nodes[] = "the device takes no ONNX nodes (see the note)";
            _Static_assert(sizeof no_nodes <= sizeof nr->why, "why holds the reason");
            if (!strcmp(dev, "cpu")) memcpy(nr->why, on_cpu, sizeof on_cpu); /* per node and run: no printf */
            else memcpy(nr->why, no_nodes, sizeof no_nodes);
            nr->offload_limit = 1;
            if (known) cpu_qdq_place(x, (int)n, nr);
            continue;
        }
        if (!known) {
            snprintf(nr->why, sizeof nr->why, "shape depends on run-time data");
            continue;
        }
        int container = 0;
        for (int k = 0; k < nd->n_in; k++)
            if (nd->in[k] >= 0 && x->meta[nd->in[k]].kind != NPK_KIND_TENSOR) container = 1;
        if (container) {
            snprintf(nr->why, sizeof nr->why, "sequence/optional values are handled on the host");
            continue;
        }
        int r = x->be->place(x->be, x, (int)n, nr->why, sizeof nr->why, nr->device_op, sizeof nr->device_op);
        if (r < 0) {
            rc = npk_err_prefix(-r, "partitioning node '%s' (%s)", nd->name, nd->op);
            goto done;
        }
        x->place[n] = r ? NPK_PLACE_DEVICE : NPK_PLACE_CPU;
        if (!r) cpu_qdq_place(x, (int)n, nr);
    }
    for (size_t n = 0; n < nn; n++)
        if (x->fused_into[n] >= 0) {
            x->place[n] = NPK_PLACE_FUSED;
            snprintf(rep->nodes[n].why, sizeof rep->nodes[n].why, "folded into '%s' (quantized subgraph run as an integer op)",
                     g->nodes[x->fused_into[n]].name);
        }
    for (size_t n = 0; n < nn; n++) rep->nodes[n].place = x->place[n];
    if (opts->stream && opts->stream->replay) {
        opts->stream->cursor = 0;
        if (!x->be) {
            rc = rep->note[0] ? npk_err(NPK_EINVAL, "the compiled stream cannot replay: %s", rep->note)
                              : npk_err(NPK_EINVAL, "a compiled stream replays on a device (v0, shell), not on '%s'", dev);
            goto done;
        }
    }
    if (x->be && (rc = plan_memory(x))) goto done;

    /* execute */
    {
        uint64_t c0 = x->be ? npk_port_cycles(x->be->port(x->be)) : 0;
        for (size_t n = 0; n < nn; n++) {
            npk_node_report *nr = &rep->nodes[n];
            const npk_node *nd = &g->nodes[n];
            /* per-node host times only for a report the caller reads (body runs and benches pass none) */
            double t0 = rep != &local ? now_ms(&x->t0) : 0;
            uint64_t cy0 = x->be ? npk_port_cycles(x->be->port(x->be)) : 0;
            npk_engine_figures e0;
            int has_e = x->be && x->be->engines && x->place[n] == NPK_PLACE_DEVICE && x->be->engines(x->be, &e0) == 0;
            x->cur_node = (int)n;
            if (x->place[n] == NPK_PLACE_FUSED) {
                /* nothing: the device node does its work */
            } else if (x->place[n] == NPK_PLACE_DEVICE) {
                npk_cstream *cs = opts->stream;
                /* stage in the views this node is the first to read */
                for (int i = 0; i < x->n_views; i++)
                    if (!x->views[i].write && x->views[i].node_first == (int)n && !x->views[i].valid &&
                        (rc = stage_in(x, i)))
                        goto done;
                rc = x->be->run(x->be, x, (int)n, nr);
                if (!rc && cs && cs->replay && cs->cursor < cs->n_recs && cs->recs[cs->cursor].node <= (uint32_t)n)
                    rc = npk_err(NPK_EFORMAT, "the compiled stream has more records for this node than it ran (record %zu)", cs->cursor);
                if (rc) {
                    rc = npk_err_prefix(-rc, "node '%s' (%s) on %s", nd->name, nd->op, x->be->name);
                    goto done;
                }
                rep->device_macs += nr->macs;
            } else if (x->cpu_qdq[n].node >= 0) {
                uint64_t macs = 0;
                if ((rc = npk_qdq_run_cpu(x, &x->cpu_qdq[n], &macs))) {
                    rc = npk_err_prefix(-rc, "node '%s' (%s) as a quantized group", nd->name, nd->op);
                    goto done;
                }
                nr->macs = macs;
                rep->cpu_macs += macs;
            } else if ((rc = run_folded(x, (int)n)) < 0) {
                rc = npk_err(NPK_ENOMEM, "out of memory");
                goto done;
            } else if (!rc && (rc = run_cpu_node(x, (int)n))) {
                goto done;
            }
            rc = 0;
            if (x->be) nr->cycles = npk_port_cycles(x->be->port(x->be)) - cy0;
            npk_engine_figures e1;
            if (has_e && x->be->engines(x->be, &e1) == 0) {
                nr->has_engines = 1;
                nr->engines = (npk_engine_figures){e1.dram_rd - e0.dram_rd, e1.dram_wr - e0.dram_wr, e1.spad - e0.spad,
                                                   e1.acc - e0.acc, e1.compute_cycles - e0.compute_cycles,
                                                   e1.dma_cycles - e0.dma_cycles};
            }
            if (rep != &local) nr->host_ms = now_ms(&x->t0) - t0;
            if (opts->trace) {
                /* Host node events on the simulated clock (never the wall
                 * clock: traces are deterministic). With a device: the device
                 * cycles the node spanned on the port (CPU nodes take none).
                 * Without one: nodes laid out in order, one cycle each. */
                char args[200];
                snprintf(args, sizeof args, "\"op\":\"%s\",\"place\":\"%s\",\"macs\":%" PRIu64, nd->op,
                         x->place[n] == NPK_PLACE_DEVICE ? "device" : x->place[n] == NPK_PLACE_FUSED ? "fused" : "cpu", nr->macs);
                if (x->be) {
                    npk_port_trace_host(x->be->port(x->be), "nodes", nd->name, cy0, args);
                } else {
                    npk_trace_process(opts->trace, "host", 1000000000u);
                    npk_trace_complete(opts->trace, "host", "nodes", nd->name, n, 1, args);
                }
            }
            if (g->progress) g->progress(g->progress_ctx, n + 1, nn);
            /* a node folded into a later device node keeps its inputs alive until that node ran */
            if (!(x->place[n] == NPK_PLACE_FUSED && x->fused_into[n] > (int)n)) release_inputs(x, (int)n);
            for (size_t m = 0; m < n; m++)
                if (x->fused_into[m] == (int)n) release_inputs(x, (int)m);
        }
        npk_cstream *cs = opts->stream;
        if (cs && cs->replay && cs->cursor != cs->n_recs) {
            rc = npk_err(NPK_EFORMAT, "the compiled stream has %zu records (from node %u) the run never reached", cs->n_recs - cs->cursor,
                         cs->recs[cs->cursor].node);
            goto done;
        }
        if (x->be) {
            rep->device_cycles = npk_port_cycles(x->be->port(x->be)) - c0;
            if (x->be->busy_cycles) rep->device_busy_cycles = x->be->busy_cycles(x->be);
        }
    }
    /* outputs */
    {
        npk_tensor *outs = calloc(g->n_out + 1, sizeof(npk_tensor));
        if (!outs) {
            rc = npk_err(NPK_ENOMEM, "out of memory");
            goto done;
        }
        for (size_t i = 0; i < g->n_out; i++) {
            int v = g->out_vals[i], once = v >= 0 && x->host[v] && !x->borrowed[v];
            for (size_t j = 0; j < g->n_out && once; j++)
                if (j != i && g->out_vals[j] == v) once = 0;
            if (once) { /* the run's own buffer: handed over, not copied */
                outs[i] = *x->host[v];
                free(x->host[v]);
                x->host[v] = NULL;
                free(outs[i].name);
                outs[i].name = strdup(g->out_desc[i].name);
                continue;
            }
            const npk_tensor *h = npk_exec_host(x, v);
            if (!h || (rc = npk_tensor_copy(&outs[i], h))) {
                if (!rc) rc = -NPK_EINVAL;
                for (size_t k = 0; k < i; k++) npk_tensor_free(&outs[k]);
                free(outs);
                goto done;
            }
            free(outs[i].name);
            outs[i].name = strdup(g->out_desc[i].name);
        }
        *outputs = outs;
        *n_outputs = g->n_out;
    }
done:
    rep->host_ms = now_ms(&x->t0);
    exec_free(x);
    free(tdev);
    if (rep == &local) npk_run_report_fini(&local);
    return rc;
}

/* ---- random inputs ---------------------------------------------------------------------- */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int npk_graph_random_input(const npk_graph *g, size_t i, uint64_t seed, npk_tensor *t) {
    if (i >= g->n_in) return npk_err(NPK_EINVAL, "input %zu does not exist", i);
    const npk_value_desc *d = &g->in_desc[i];
    memset(t, 0, sizeof *t);
    if (d->kind != NPK_KIND_TENSOR)
        return npk_err(NPK_EUNSUPPORTED, "input '%s' is a %s value: random inputs are tensors only; give it with --input",
                       d->name, kind_name(d->kind));
    if (!d->dtype) return npk_err(NPK_EINVAL, "input '%s' has no declared type: give it with --input", d->name);
    if (d->rank < 0) return npk_err(NPK_EINVAL, "input '%s' has no declared shape: give it with --input", d->name);
    int64_t dims[NPK_MAX_RANK];
    for (int k = 0; k < d->rank; k++) dims[k] = d->dims[k] < 0 ? 1 : d->dims[k];
    int rc = npk_tensor_alloc(t, d->name, d->dtype, d->rank, dims);
    if (rc) return rc;
    uint64_t s = seed * 0x100000001B3ull + i;
    int64_t n = npk_tensor_numel(t);
    for (int64_t k = 0; k < n; k++) {
        uint64_t r = splitmix(&s);
        switch (t->dtype) {
        case NPK_DT_FLOAT: ((float *)t->data)[k] = (float)((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0); break;
        case NPK_DT_DOUBLE: ((double *)t->data)[k] = (double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0; break;
        case NPK_DT_INT64: ((int64_t *)t->data)[k] = (int64_t)(r % 8); break;
        case NPK_DT_INT32: ((int32_t *)t->data)[k] = (int32_t)(r % 8); break;
        case NPK_DT_BOOL: ((uint8_t *)t->data)[k] = (uint8_t)(r & 1); break;
        default: memcpy((uint8_t *)t->data + (size_t)k * npk_dtype_size(t->dtype), &r, npk_dtype_size(t->dtype)); break;
        }
    }
    return 0;
}
