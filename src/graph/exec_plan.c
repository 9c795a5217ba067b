// SPDX-License-Identifier: MIT
/* The executor's guest-memory planning: the views and scratch buffers the
 * backends asked for, packed by lifetime into one arena on the port (or the
 * plan a compiled stream recorded). */
#include "graph/exec_int.h"
#include "graph/cstream.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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

int exec_plan_memory(npk_exec *x) {
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
