// SPDX-License-Identifier: MIT
/* Compiled models (.npkb, docs/npkb.md): write, verify, list, and check a
 * run against the compiled plan. */
#include "npukit/npkb.h"
#include "graph/cstream.h"
#include "npukit/strbuf.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HDR_BYTES 32u
#define SEC_HDR 16u
#define NSEC 6 /* MODL PLAN IOBD GMEM CMDS CKSM */

typedef struct sec {
    char tag[5];
    const uint8_t *data;
    uint64_t len;
} sec;

struct npk_npkb {
    uint8_t *buf; /* a copy of the container */
    size_t len;
    char device[17];
    unsigned version;
    sec s[8];
    unsigned ns;
    uint64_t sum;
    npk_cstream *cs; /* the compiled stream (replay mode, over buf) */
};

static uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

int npk_npkb_is(const uint8_t *data, size_t len) { return len >= 4 && !memcmp(data, "NPKB", 4); }

/* One line per node: index, place, MACs, cycles, driver call, op, name, reason. */
static void plan_text(npk_strbuf *b, const npk_run_report *r) {
    static const char *const place[3] = {"cpu", "device", "fused"};
    npk_strbuf_printf(b, "device %s\nnodes %zu\nguest_bytes %" PRIu64 "\ndevice_cycles %" PRIu64 "\ndevice_macs %" PRIu64 "\n",
              r->device, r->n_nodes, r->guest_bytes, r->device_cycles, r->device_macs);
    for (size_t i = 0; i < r->n_nodes; i++) {
        const npk_node_report *n = &r->nodes[i];
        npk_strbuf_printf(b, "node %zu %s macs=%" PRIu64 " cycles=%" PRIu64 " call=\"%s\" op=%s name=\"%s\" why=\"%s\"\n", i,
                  place[n->place >= 0 && n->place <= 2 ? n->place : 0], n->macs, n->cycles, n->device_op, n->op, n->name,
                  n->why);
    }
}

static void io_text(npk_strbuf *b, const npk_graph *g) {
    char buf[256];
    for (size_t i = 0; i < npk_graph_n_inputs(g); i++)
        npk_strbuf_printf(b, "input %zu %s %s\n", i, npk_graph_input(g, i)->name, npk_value_desc_str(npk_graph_input(g, i), buf, sizeof buf));
    for (size_t i = 0; i < npk_graph_n_outputs(g); i++)
        npk_strbuf_printf(b, "output %zu %s %s\n", i, npk_graph_output(g, i)->name,
                  npk_value_desc_str(npk_graph_output(g, i), buf, sizeof buf));
}

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

int npk_npkb_compile(const uint8_t *onnx, size_t len, const char *device, uint8_t **out, size_t *out_len) {
    return npk_npkb_compile_opts(onnx, len, device, NULL, out, out_len);
}

int npk_npkb_compile_opts(const uint8_t *onnx, size_t len, const char *device, const char *dev_opts, uint8_t **out,
                          size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    if (!npk_npkb_device_ok(device))
        return npk_err(NPK_EINVAL, "compiled streams are made for %s (not '%s')", npk_npkb_device_names(),
                       device ? device : "");
    npk_graph *g;
    int rc = npk_graph_load(&g, onnx, len);
    if (rc) return rc;
    if ((rc = npk_graph_check(g, NULL))) {
        npk_graph_free(g);
        return rc;
    }
    size_t ni = npk_graph_n_inputs(g);
    npk_tensor *ins = calloc(ni + 1, sizeof *ins);
    if (!ins) {
        npk_graph_free(g);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < ni && !rc; i++) rc = npk_graph_random_input(g, i, 1, &ins[i]);
    npk_run_report rep;
    memset(&rep, 0, sizeof rep);
    npk_tensor *outs = NULL;
    size_t nouts = 0;
    npk_cstream *cs = NULL;
    if (!rc) rc = npk_cs_new_record(&cs);
    npk_run_opts o = {.device = device, .stream = cs, .dev_opts = dev_opts};
    if (!rc) rc = npk_graph_run(g, &o, ins, ni, &outs, &nouts, &rep);
    uint8_t *gmem = NULL, *cmds = NULL;
    size_t gmem_len = 0, cmds_len = 0;
    if (!rc) rc = npk_cs_serialize(cs, &gmem, &gmem_len, &cmds, &cmds_len);
    npk_cs_free(cs);
    for (size_t i = 0; i < ni; i++) npk_tensor_free(&ins[i]);
    free(ins);
    for (size_t i = 0; i < nouts; i++) npk_tensor_free(&outs[i]);
    free(outs);
    npk_strbuf plan = {0}, io = {0};
    if (!rc) {
        plan_text(&plan, &rep);
        io_text(&io, g);
        if (plan.oom || io.oom) rc = npk_err(NPK_ENOMEM, "out of memory");
    }
    npk_run_report_fini(&rep);
    npk_graph_free(g);
    uint8_t *b = NULL;
    size_t total = HDR_BYTES;
    const struct {
        const char *tag;
        const void *p;
        size_t n;
    } secs[NSEC - 1] = {{"MODL", onnx, len}, {"PLAN", plan.p, plan.n}, {"IOBD", io.p, io.n}, {"GMEM", gmem, gmem_len},
                        {"CMDS", cmds, cmds_len}};
    for (int i = 0; i < NSEC - 1; i++) total += SEC_HDR + pad8(secs[i].n);
    total += SEC_HDR + 8;
    if (!rc && !(b = calloc(1, total))) rc = npk_err(NPK_ENOMEM, "out of memory");
    if (rc) {
        free(plan.p);
        free(io.p);
        free(gmem);
        free(cmds);
        return npk_err_prefix(rc, "compiling for %s", device);
    }
    memcpy(b, "NPKB", 4);
    put16(b + 4, NPK_NPKB_VERSION);
    put16(b + 6, HDR_BYTES);
    put32(b + 8, NSEC);
    put32(b + 12, 0);
    snprintf((char *)b + 16, 16, "%s", device);
    size_t o2 = HDR_BYTES;
    for (int i = 0; i < NSEC - 1; i++) {
        memcpy(b + o2, secs[i].tag, 4);
        put64(b + o2 + 8, secs[i].n);
        if (secs[i].n) memcpy(b + o2 + SEC_HDR, secs[i].p, secs[i].n);
        o2 += SEC_HDR + pad8(secs[i].n);
    }
    memcpy(b + o2, "CKSM", 4);
    put64(b + o2 + 8, 8);
    put64(b + o2 + SEC_HDR, fnv1a(b, o2));
    free(plan.p);
    free(io.p);
    free(gmem);
    free(cmds);
    *out = b;
    *out_len = total;
    return 0;
}

void npk_npkb_free(npk_npkb *k) {
    if (!k) return;
    npk_cs_free(k->cs);
    free(k->buf);
    free(k);
}

static const sec *find(const npk_npkb *k, const char *tag) {
    for (unsigned i = 0; i < k->ns; i++)
        if (!strcmp(k->s[i].tag, tag)) return &k->s[i];
    return NULL;
}

int npk_npkb_open(npk_npkb **out, const uint8_t *data, size_t len) {
    *out = NULL;
    if (!npk_npkb_is(data, len)) return npk_err(NPK_EFORMAT, "not a compiled model (no NPKB magic)");
    if (len < HDR_BYTES) return npk_err(NPK_EFORMAT, "truncated: %zu bytes, the header alone has %u", len, HDR_BYTES);
    unsigned ver = (unsigned)data[4] | (unsigned)data[5] << 8, hs = (unsigned)data[6] | (unsigned)data[7] << 8;
    if (ver != NPK_NPKB_VERSION)
        return npk_err(NPK_EFORMAT, "version %u (this npukit reads version %u; recompile the model)", ver, NPK_NPKB_VERSION);
    uint32_t nsec = get32(data + 8);
    if (hs != HDR_BYTES || get32(data + 12) || nsec < 2 || nsec > 8 || memchr(data + 16, 0, 16) == NULL)
        return npk_err(NPK_EFORMAT, "malformed header (size %u, flags 0x%x, %u sections)", hs, get32(data + 12), nsec);
    npk_npkb *k = calloc(1, sizeof *k);
    if (!k) return npk_err(NPK_ENOMEM, "out of memory");
    k->buf = malloc(len);
    if (!k->buf) {
        free(k);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    memcpy(k->buf, data, len);
    k->len = len;
    k->version = ver;
    snprintf(k->device, sizeof k->device, "%s", (const char *)data + 16);
    size_t off = HDR_BYTES;
    int rc = 0;
    for (uint32_t i = 0; i < nsec && !rc; i++) {
        if (len - off < SEC_HDR) {
            rc = npk_err(NPK_EFORMAT, "truncated: section %u header at byte %zu is past the end (%zu bytes)", i, off, len);
            break;
        }
        sec *s = &k->s[k->ns++];
        memcpy(s->tag, k->buf + off, 4);
        s->tag[4] = 0;
        uint64_t sl = get64(k->buf + off + 8);
        if (get32(k->buf + off + 4) || sl > len - off - SEC_HDR || pad8((size_t)sl) > len - off - SEC_HDR) {
            rc = npk_err(NPK_EFORMAT, "truncated or corrupt: section %u ('%.4s') claims %" PRIu64 " bytes, %zu remain", i,
                         s->tag, sl, len - off - SEC_HDR);
            break;
        }
        s->data = k->buf + off + SEC_HDR;
        s->len = sl;
        if (i + 1 == nsec) {
            if (strcmp(s->tag, "CKSM") || sl != 8) {
                rc = npk_err(NPK_EFORMAT, "the last section must be the 8-byte CKSM (found '%.4s')", s->tag);
                break;
            }
            uint64_t want = get64(s->data), got = fnv1a(k->buf, off);
            if (want != got) {
                rc = npk_err(NPK_EFORMAT, "checksum mismatch (stored 0x%016" PRIx64 ", computed 0x%016" PRIx64
                                          "): the file was modified or damaged", want, got);
                break;
            }
            k->sum = want;
        }
        off += SEC_HDR + pad8((size_t)sl);
    }
    if (!rc && off != len) rc = npk_err(NPK_EFORMAT, "%zu trailing bytes after the checksum", len - off);
    static const char *const need[] = {"MODL", "PLAN", "IOBD", "GMEM", "CMDS"};
    for (size_t i = 0; !rc && i < sizeof need / sizeof need[0]; i++) {
        if (!find(k, need[i])) rc = npk_err(NPK_EFORMAT, "the %s section is missing", need[i]);
        for (unsigned j = 0; !rc && j < k->ns; j++)
            if (find(k, need[i]) != &k->s[j] && !strcmp(k->s[j].tag, need[i]))
                rc = npk_err(NPK_EFORMAT, "the %s section appears twice", need[i]);
    }
    if (!rc) {
        const sec *gm = find(k, "GMEM"), *cm = find(k, "CMDS");
        rc = npk_cs_parse(&k->cs, gm->data, (size_t)gm->len, cm->data, (size_t)cm->len);
    }
    if (!rc && !npk_npkb_device_ok(k->device))
        rc = npk_err(NPK_EFORMAT, "compiled for unknown device '%s'", k->device);
    if (rc) {
        npk_npkb_free(k);
        return rc;
    }
    *out = k;
    return 0;
}

const char *npk_npkb_device(const npk_npkb *k) { return k->device; }
npk_cstream *npk_npkb_stream(const npk_npkb *k) { return k->cs; }

int npk_npkb_graph(const npk_npkb *k, npk_graph **g) {
    const sec *m = find(k, "MODL");
    int rc = npk_graph_load(g, m->data, (size_t)m->len);
    return rc ? npk_err_prefix(rc, "compiled model") : 0;
}

/* The node lines of a PLAN text without the cycles field (cycles are reported, not compared). */
int npk_npkb_check_run(const npk_npkb *k, const npk_run_report *r) {
    const sec *p = find(k, "PLAN");
    npk_strbuf now = {0};
    plan_text(&now, r);
    if (now.oom) return npk_err(NPK_ENOMEM, "out of memory");
    const char *a = (const char *)p->data, *ae = a + p->len, *b = now.p, *be = now.p + now.n;
    int rc = 0;
    while (a < ae && b < be) {
        const char *an = memchr(a, '\n', (size_t)(ae - a)), *bn = memchr(b, '\n', (size_t)(be - b));
        if (!an || !bn) break;
        int is_node = !strncmp(a, "node ", 5), skip = !strncmp(a, "device_cycles ", 14);
        /* compare node lines without cycles= and every line but device_cycles */
        if (!skip) {
            char la[512], lb[512];
            snprintf(la, sizeof la, "%.*s", (int)(an - a), a);
            snprintf(lb, sizeof lb, "%.*s", (int)(bn - b), b);
            if (is_node) {
                char *ca = strstr(la, " cycles="), *cb = strstr(lb, " cycles=");
                if (ca && cb) {
                    memmove(ca, strchr(ca + 1, ' '), strlen(strchr(ca + 1, ' ')) + 1);
                    memmove(cb, strchr(cb + 1, ' '), strlen(strchr(cb + 1, ' ')) + 1);
                }
            }
            if (strcmp(la, lb)) {
                rc = npk_err(NPK_EINVAL, "the run differs from the compiled plan: '%s' where the plan has '%s'", lb, la);
                break;
            }
        }
        a = an + 1;
        b = bn + 1;
    }
    if (!rc && (a < ae) != (b < be)) rc = npk_err(NPK_EINVAL, "the run has a different number of nodes than the compiled plan");
    free(now.p);
    return rc;
}

int npk_npkb_list(const npk_npkb *k, FILE *f) {
    fprintf(f, "npkb version %u, device %s, %zu bytes, checksum fnv1a64 0x%016" PRIx64 "\n", k->version, k->device, k->len,
            k->sum);
    for (unsigned i = 0; i < k->ns; i++) fprintf(f, "section %s: %" PRIu64 " bytes\n", k->s[i].tag, k->s[i].len);
    const sec *io = find(k, "IOBD"), *pl = find(k, "PLAN");
    fprintf(f, "\n# I/O bindings\n%.*s\n# compiled plan (per node: placement, MACs, modeled cycles, driver call)\n%.*s\n",
            (int)io->len, (const char *)io->data, (int)pl->len, (const char *)pl->data);
    npk_graph *g = NULL;
    if (npk_npkb_graph(k, &g)) g = NULL; /* nodes unnamed in the listing */
    int rc = npk_cs_list(k->cs, g, f);
    npk_graph_free(g);
    if (rc) return rc;
    return ferror(f) ? npk_err(NPK_EIO, "writing the listing failed") : 0;
}
