// SPDX-License-Identifier: MIT
/* Compiled command streams (cstream.h, docs/npkb.md): record, serialize,
 * parse, replay and list. */
#include "graph/cstream.h"
#include "graph/ops.h"
#include "npukit/shell_drv.h"
#include "npukit/v0_drv.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define GMEM_HDR 24u
#define GMEM_ENT 24u
#define REC_HDR 24u

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }
static uint64_t pad8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

static const char *type_name(uint32_t t) {
    return t == NPK_CS_WRITE ? "write" : t == NPK_CS_V0 ? "v0 descriptors" : t == NPK_CS_SHELL ? "shell ring bytes" : "?";
}

int npk_cs_new_record(npk_cstream **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return npk_err(NPK_ENOMEM, "out of memory");
    (*out)->owns_data = 1;
    return 0;
}

void npk_cs_free(npk_cstream *s) {
    if (!s) return;
    if (s->owns_data)
        for (size_t i = 0; i < s->n_recs; i++) free((void *)s->recs[i].data);
    free(s->recs);
    free(s->bufs);
    free(s);
}

static int grow(npk_cstream *s) {
    if (s->n_recs < s->cap_recs) return 0;
    size_t cap = s->cap_recs ? s->cap_recs * 2 : 64;
    npk_cs_rec *r = realloc(s->recs, cap * sizeof *r);
    if (!r) return npk_err(NPK_ENOMEM, "out of memory");
    s->recs = r;
    s->cap_recs = cap;
    return 0;
}

int npk_cs_put(npk_cstream *s, uint32_t type, int node, uint64_t addr, const void *data, size_t len) {
    if (s->replay) return npk_err(NPK_EINVAL, "compiled stream: recording into a stream being replayed");
    if (grow(s)) return -NPK_ENOMEM;
    uint8_t *d = malloc(len ? len : 1);
    if (!d) return npk_err(NPK_ENOMEM, "out of memory recording the command stream");
    if (len) memcpy(d, data, len);
    s->recs[s->n_recs++] = (npk_cs_rec){type, (uint32_t)node, addr, len, d};
    return 0;
}

int npk_cs_take(npk_cstream *s, uint32_t type, int node, const npk_cs_rec **rec) {
    if (s->cursor >= s->n_recs)
        return npk_err(NPK_EFORMAT, "compiled stream: node %d needs %s, but the stream has no records left", node,
                       type_name(type));
    const npk_cs_rec *r = &s->recs[s->cursor];
    if (r->type != type || (int)r->node != node)
        return npk_err(NPK_EFORMAT, "compiled stream: record %zu is %s for node %u where node %d needs %s", s->cursor,
                       type_name(r->type), r->node, node, type_name(type));
    s->cursor++;
    *rec = r;
    return 0;
}

size_t npk_cs_shell_count(const uint8_t *p, size_t len) {
    size_t n = 0;
    for (size_t off = 0; off + 32 <= len; n++) {
        unsigned units = p[off + 2];
        off += 32u * (units >= 1 && units <= 3 ? units : 1);
    }
    return n;
}

int npk_cs_serialize(const npk_cstream *s, uint8_t **gmem, size_t *gmem_len, uint8_t **cmds, size_t *cmds_len) {
    *gmem = *cmds = NULL;
    *gmem_len = *cmds_len = 0;
    size_t gl = GMEM_HDR + (size_t)s->n_bufs * GMEM_ENT, cl = 0;
    for (size_t i = 0; i < s->n_recs; i++) cl += REC_HDR + (size_t)pad8(s->recs[i].len);
    uint8_t *g = calloc(1, gl), *c = calloc(1, cl ? cl : 1);
    if (!g || !c) {
        free(g);
        free(c);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    put64(g, s->arena_base);
    put64(g + 8, s->arena_size);
    put32(g + 16, s->n_bufs);
    for (uint32_t i = 0; i < s->n_bufs; i++) {
        uint8_t *e = g + GMEM_HDR + (size_t)i * GMEM_ENT;
        put64(e, s->bufs[i].off);
        put64(e + 8, s->bufs[i].size);
        put32(e + 16, (uint32_t)s->bufs[i].first);
        put32(e + 20, (uint32_t)s->bufs[i].last);
    }
    size_t o = 0;
    for (size_t i = 0; i < s->n_recs; i++) {
        const npk_cs_rec *r = &s->recs[i];
        put32(c + o, r->type);
        put32(c + o + 4, r->node);
        put64(c + o + 8, r->addr);
        put64(c + o + 16, r->len);
        if (r->len) memcpy(c + o + REC_HDR, r->data, (size_t)r->len);
        o += REC_HDR + (size_t)pad8(r->len);
    }
    *gmem = g;
    *gmem_len = gl;
    *cmds = c;
    *cmds_len = cl;
    return 0;
}

int npk_cs_parse(npk_cstream **out, const uint8_t *gmem, size_t gl, const uint8_t *cmds, size_t cl) {
    *out = NULL;
    if (gl < GMEM_HDR) return npk_err(NPK_EFORMAT, "GMEM: %zu bytes, the header alone has %u", gl, GMEM_HDR);
    uint64_t base = get64(gmem), size = get64(gmem + 8);
    uint32_t nb = get32(gmem + 16);
    if (get32(gmem + 20)) return npk_err(NPK_EFORMAT, "GMEM: reserved word is 0x%x, not 0", get32(gmem + 20));
    if ((gl - GMEM_HDR) / GMEM_ENT != nb || (gl - GMEM_HDR) % GMEM_ENT)
        return npk_err(NPK_EFORMAT, "GMEM: %u buffers need %llu bytes, the section has %zu", nb,
                       (unsigned long long)GMEM_HDR + (unsigned long long)nb * GMEM_ENT, gl);
    if (base + size < base || (base & 15))
        return npk_err(NPK_EFORMAT, "GMEM: arena at 0x%" PRIx64 " of %" PRIu64 " bytes %s", base, size,
                       base & 15 ? "is not 16-byte aligned" : "wraps past 2^64");
    npk_cstream *s = calloc(1, sizeof *s);
    if (!s) return npk_err(NPK_ENOMEM, "out of memory");
    s->replay = 1;
    s->have_plan = 1;
    s->arena_base = base;
    s->arena_size = size;
    s->n_bufs = nb;
    s->bufs = calloc((size_t)nb + 1, sizeof *s->bufs);
    int rc = s->bufs ? 0 : npk_err(NPK_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < nb && !rc; i++) {
        const uint8_t *e = gmem + GMEM_HDR + (size_t)i * GMEM_ENT;
        npk_cs_buf *b = &s->bufs[i];
        b->off = get64(e);
        b->size = get64(e + 8);
        b->first = (int32_t)get32(e + 16);
        b->last = (int32_t)get32(e + 20);
        if (b->off > size || b->size > size - b->off || b->first < 0 || b->last < b->first)
            rc = npk_err(NPK_EFORMAT, "GMEM: buffer %u (offset %" PRIu64 ", %" PRIu64 " bytes, nodes %d..%d) is outside the %" PRIu64
                                      "-byte arena or has no node span", i, b->off, b->size, b->first, b->last, size);
    }
    int64_t last_node = -1;
    for (size_t o = 0; !rc && o < cl;) {
        size_t idx = s->n_recs;
        if (cl - o < REC_HDR) {
            rc = npk_err(NPK_EFORMAT, "CMDS: record %zu header at byte %zu is cut (%zu bytes left)", idx, o, cl - o);
            break;
        }
        npk_cs_rec r = {get32(cmds + o), get32(cmds + o + 4), get64(cmds + o + 8), get64(cmds + o + 16), cmds + o + REC_HDR};
        if (r.len > cl - o - REC_HDR || pad8(r.len) > cl - o - REC_HDR) {
            rc = npk_err(NPK_EFORMAT, "CMDS: record %zu claims %" PRIu64 " bytes, %zu remain", idx, r.len, cl - o - REC_HDR);
            break;
        }
        if (r.type < NPK_CS_WRITE || r.type > NPK_CS_SHELL)
            rc = npk_err(NPK_EFORMAT, "CMDS: record %zu has unknown type %u (1 write, 2 v0 descriptors, 3 shell ring bytes)", idx,
                         r.type);
        else if ((int64_t)r.node < last_node)
            rc = npk_err(NPK_EFORMAT, "CMDS: record %zu is for node %u after node %" PRId64 " (records are in execution order)",
                         idx, r.node, last_node);
        else if (!r.len)
            rc = npk_err(NPK_EFORMAT, "CMDS: record %zu (%s) is empty", idx, type_name(r.type));
        else if (r.type == NPK_CS_WRITE && (r.addr < base || r.addr - base > size || r.len > size - (r.addr - base)))
            rc = npk_err(NPK_EFORMAT, "CMDS: record %zu writes [0x%" PRIx64 ", +%" PRIu64 ") outside the arena [0x%" PRIx64
                                      ", 0x%" PRIx64 ")", idx, r.addr, r.len, base, base + size);
        else if (r.type != NPK_CS_WRITE && r.addr)
            rc = npk_err(NPK_EFORMAT, "CMDS: record %zu (%s) has address 0x%" PRIx64 " (must be 0)", idx, type_name(r.type), r.addr);
        else if (r.type == NPK_CS_V0 && r.len % 64)
            rc = npk_err(NPK_EFORMAT, "CMDS: record %zu: %" PRIu64 " bytes is not a whole number of 64-byte v0 descriptors", idx,
                         r.len);
        else if (r.type == NPK_CS_SHELL && r.len % 32)
            rc = npk_err(NPK_EFORMAT, "CMDS: record %zu: %" PRIu64 " bytes is not a whole number of 32-byte shell units", idx, r.len);
        for (uint64_t k = r.len; !rc && k < pad8(r.len); k++)
            if (r.data[k]) rc = npk_err(NPK_EFORMAT, "CMDS: record %zu has non-zero padding", idx);
        if (!rc && (rc = grow(s)) == 0) s->recs[s->n_recs++] = r;
        last_node = r.node;
        o += REC_HDR + (size_t)pad8(r.len);
    }
    if (rc) {
        npk_cs_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

static const char *node_name(const npk_graph *g, uint32_t n) {
    return g && n < g->n_nodes ? g->nodes[n].name : "?";
}
static const char *node_op(const npk_graph *g, uint32_t n) { return g && n < g->n_nodes ? g->nodes[n].op : "?"; }

static void indent(FILE *f, const char *text) {
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        fprintf(f, "    %.*s\n", (int)n, p);
        p += n + (e ? 1 : 0);
    }
}

int npk_cs_list(const npk_cstream *s, const npk_graph *g, FILE *f) {
    fprintf(f, "# guest-memory plan: arena 0x%" PRIx64 ", %" PRIu64 " bytes, %u buffers\n", s->arena_base, s->arena_size,
            s->n_bufs);
    for (uint32_t i = 0; i < s->n_bufs; i++)
        fprintf(f, "buffer %u 0x%" PRIx64 " %" PRIu64 " bytes nodes %d..%d\n", i, s->arena_base + s->bufs[i].off, s->bufs[i].size,
                s->bufs[i].first, s->bufs[i].last);
    uint64_t wb = 0, nd = 0;
    for (size_t i = 0; i < s->n_recs; i++) {
        const npk_cs_rec *r = &s->recs[i];
        if (r->type == NPK_CS_WRITE) wb += r->len;
        else nd += r->type == NPK_CS_V0 ? r->len / 64 : npk_cs_shell_count(r->data, (size_t)r->len);
    }
    fprintf(f, "\n# command stream: %zu records, %" PRIu64 " constant bytes, %" PRIu64 " descriptors\n", s->n_recs, wb, nd);
    int rc = 0;
    for (size_t i = 0; i < s->n_recs && !rc; i++) {
        const npk_cs_rec *r = &s->recs[i];
        fprintf(f, "record %zu node %u (%s \"%s\") ", i, r->node, node_op(g, r->node), node_name(g, r->node));
        if (r->type == NPK_CS_WRITE) {
            fprintf(f, "write 0x%" PRIx64 " %" PRIu64 " bytes (weights)\n", r->addr, r->len);
            continue;
        }
        char *text = NULL;
        if (r->type == NPK_CS_V0) {
            fprintf(f, "v0 batch: %" PRIu64 " descriptors\n", r->len / 64);
            rc = npk_v0_disasm(r->data, (size_t)r->len, &text);
        } else {
            fprintf(f, "shell ring: %zu descriptors, %" PRIu64 " bytes\n", npk_cs_shell_count(r->data, (size_t)r->len), r->len);
            rc = npk_shell_disasm(r->data, (size_t)r->len, &text);
        }
        if (!rc) indent(f, text);
        else rc = npk_err_prefix(rc, "disassembling record %zu", i);
        free(text);
    }
    return rc;
}
