// SPDX-License-Identifier: MIT
/* Replaying a compiled e1 package (docs/e1-compile.md): the checks of the
 * staging helpers (base/head/tail arithmetic, ring window, word0 valid_owner
 * and stream_to_scratch, stream bounds, GEMM-only aligned writebacks,
 * preambles against the images, required runtime steps), then per ready
 * execution batch: populate the tensor arena, write the GEMM preamble and the
 * descriptor memory, submit through DESC_* / CMD_PARAM / CTRL_STATUS and poll
 * DESC_STATUS; the other ops run through the lowerings (or, for CPU-fallback
 * entries, the CPU reference). */
#include "e1_lower_int.h"
#include "e1_shlo_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const STEPS[4] = {"populate_tensor_arena", "program_mmio_preamble", "stage_descriptor_image",
                                     "submit_command_buffer"};

#define BAD(...) npk_err(NPK_EINVAL, __VA_ARGS__)

/* Integer field of o, or -1 (with *ok = 0) when missing / not an integer. */
static long long geti(json_t *o, const char *k, int *ok) {
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v)) {
        *ok = 0;
        return -1;
    }
    return (long long)json_integer_value(v);
}

static int hexval(json_t *v, uint64_t *out) {
    if (!json_is_string(v)) return 0;
    const char *s = json_string_value(v);
    char *end;
    if (strncmp(s, "0x", 2)) return 0;
    unsigned long long x = strtoull(s + 2, &end, 16);
    if (*end || end == s + 2) return 0;
    *out = x;
    return 1;
}

typedef struct xrun {
    json_t *pj;  /* the prepared execution batch */
    const sh_xbatch *x;
    uint32_t base;
} xrun;

typedef struct pkg {
    json_t *root;
    npk_shlo *m;
    sh_part P;
    uint32_t arena_base, desc_base, stride;
    xrun *runs; /* per execution batch index (pj NULL: runs through the lowerings) */
} pkg;

static void pkg_free(pkg *k) {
    sh_part_free(&k->P);
    npk_shlo_free(k->m);
    json_decref(k->root);
    free(k->runs);
    memset(k, 0, sizeof *k);
}

static int check_regwrite(json_t *w, const char *reg, uint32_t value, const char *where, unsigned i) {
    json_t *r = json_object_get(w, "register");
    uint64_t addr;
    int ok = 1;
    long long v = geti(w, "value", &ok);
    if (!json_is_string(r) || strcmp(json_string_value(r), reg))
        return BAD("%s write %u: register '%s' where the runtime writes %s", where, i,
                   json_is_string(r) ? json_string_value(r) : "?", reg);
    if (!hexval(json_object_get(w, "address"), &addr) || addr != (uint64_t)sh_reg_offset(reg))
        return BAD("%s write %u: %s address is not 0x%08x (the runtime MMIO contract)", where, i, reg,
                   (unsigned)sh_reg_offset(reg));
    if (!ok || v != (long long)value)
        return BAD("%s write %u: %s value %lld where the package needs %u", where, i, reg, v, value);
    return 0;
}

/* The staging helpers' checks for one prepared execution batch.
 * Why long: the staging helpers' checks of one batch against what the module derives, one
 * precise message per field, in the package's field order. */
static int check_batch(pkg *k, json_t *pj, size_t pos) {
    int ok = 1;
    const char *s = json_string_value(json_object_get(pj, "schema"));
    if (!s || strcmp(s, "eliza.e1_npu_prepared_descriptor_batch.v1"))
        return BAD("execution batch #%zu: schema is not eliza.e1_npu_prepared_descriptor_batch.v1", pos);
    long long xi = geti(pj, "execution_batch_index", &ok), bi = geti(pj, "batch_index", &ok);
    if (!ok || xi < 0 || (size_t)xi >= k->P.nxb) return BAD("execution batch #%zu: execution_batch_index missing or unknown", pos);
    const sh_xbatch *x = &k->P.xb[xi];
    if (k->runs[xi].pj) return BAD("execution batch %lld: prepared twice", xi);
    if (bi != x->batch) return BAD("execution batch %lld: batch_index %lld, the partition says %u", xi, bi, x->batch);
    if (!x->ready) return BAD("execution batch %lld: has blocked ops, it cannot be prepared", xi);
    uint32_t base = k->desc_base + (uint32_t)xi * k->stride;
    long long ab = geti(pj, "arena_base", &ok), db = geti(pj, "descriptor_base", &ok);
    long long at = geti(pj, "arena_total_bytes", &ok), aa = geti(pj, "arena_alignment_bytes", &ok);
    if (!ok) return BAD("execution batch %lld: arena_base, descriptor_base, arena_total_bytes or arena_alignment_bytes missing", xi);
    if (ab != k->arena_base) return BAD("execution batch %lld: arena_base %lld differs from the package's %u", xi, ab, k->arena_base);
    if (db != base)
        return BAD("execution batch %lld: descriptor_base %lld is not descriptor_base + %lld * descriptor_stride_bytes = %u", xi,
                   db, xi, base);
    if ((uint64_t)at != k->P.arena_total || aa != 4)
        return BAD("execution batch %lld: arena %lld bytes aligned %lld, the tensor arena plan has %" PRIu64 " aligned 4", xi, at,
                   aa, k->P.arena_total);
    json_t *steps = json_object_get(pj, "required_runtime_steps");
    if (!json_is_array(steps) || json_array_size(steps) != 4)
        return BAD("execution batch %lld: required_runtime_steps must list the four runtime steps", xi);
    for (size_t i = 0; i < 4; i++) {
        const char *st = json_string_value(json_array_get(steps, i));
        if (!st || strcmp(st, STEPS[i])) return BAD("execution batch %lld: required_runtime_steps[%zu] is not %s", xi, i, STEPS[i]);
    }
    json_t *img = json_object_get(pj, "descriptor_command_buffer_image");
    s = json_string_value(json_object_get(img, "schema"));
    if (!s || strcmp(s, "eliza.e1_npu_descriptor_command_buffer_image.v1"))
        return BAD("execution batch %lld: descriptor_command_buffer_image missing or of another schema", xi);
    if (geti(img, "arena_base", &ok) != k->arena_base || geti(img, "descriptor_base", &ok) != base ||
        geti(img, "execution_batch_index", &ok) != xi || !ok)
        return BAD("execution batch %lld: the image's arena_base/descriptor_base/execution_batch_index differ from the batch's", xi);
    json_t *words = json_object_get(img, "descriptor_words"), *names = json_object_get(img, "op_names");
    size_t n = json_array_size(words);
    if (!json_is_array(words) || n < 1 || n > E1_RING_MAX_PENDING)
        return BAD("execution batch %lld: %zu descriptors, the RTL ring window holds 1..%u", xi, n, E1_RING_MAX_PENDING);
    if (n != x->n || json_array_size(names) != n)
        return BAD("execution batch %lld: %zu descriptors / %zu op names, the partition has %zu ops", xi, n,
                   json_array_size(names), x->n);
    json_t *sub = json_object_get(img, "submission");
    if (geti(sub, "base", &ok) != base || !ok)
        return BAD("execution batch %lld: submission base is not the descriptor base 0x%x", xi, base);
    if (geti(sub, "tail", &ok) != 0 || geti(sub, "head", &ok) != (long long)n || !ok)
        return BAD("execution batch %lld: submission must be TAIL = 0, HEAD = %zu (HEAD is the producer index)", xi, n);
    json_t *image = json_object_get(img, "descriptor_image");
    if (!json_is_object(image) || json_object_size(image) != 4 * n)
        return BAD("execution batch %lld: descriptor_image must hold exactly %zu words", xi, 4 * n);
    json_t *pre = json_object_get(pj, "op_mmio_preamble");
    if (!json_is_array(pre) || json_array_size(pre) != n)
        return BAD("execution batch %lld: op_mmio_preamble must have one entry per descriptor", xi);
    uint64_t aend = (uint64_t)k->arena_base + k->P.arena_total;
    for (size_t i = 0; i < n; i++) {
        const sh_stage *st = &k->P.stages[x->first + i];
        const char *opn = k->m->ops[st->op].name;
        const char *nm = json_string_value(json_array_get(names, i));
        if (!nm || strcmp(nm, opn)) return BAD("execution batch %lld: op_names[%zu] is not '%s'", xi, i, opn);
        json_t *wa = json_array_get(words, i);
        uint32_t w[4];
        for (size_t j = 0; j < 4; j++) {
            json_t *v = json_array_get(wa, j);
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 0xffffffffll)
                return BAD("execution batch %lld: descriptor %zu word %zu is not a 32-bit value", xi, i, j);
            w[j] = (uint32_t)json_integer_value(v);
            char key[24];
            snprintf(key, sizeof key, "0x%08x", (unsigned)(base + 16 * i + 4 * j));
            json_t *iv = json_object_get(image, key);
            if (!json_is_integer(iv) || json_integer_value(iv) != w[j])
                return BAD("execution batch %lld: descriptor_image[%s] does not hold descriptor %zu word %zu", xi, key, i, j);
        }
        if (!e1_desc_valid_owner(w[0])) return BAD("execution batch %lld: descriptor %zu: word0 lacks valid_owner", xi, i);
        if (!e1_desc_stream(w[0])) return BAD("execution batch %lld: descriptor %zu: word0 lacks stream_to_scratch", xi, i);
        unsigned opc = e1_desc_opcode(w[0]), len = e1_desc_len(w[0]), so = e1_desc_scratch_off(w[0]);
        if (!len || (len & 3) || (so & 3) || so + len > E1_SCRATCH_BYTES)
            return BAD("execution batch %lld: descriptor %zu: stream of %u bytes at scratch %u is outside the 64-byte scratchpad "
                       "or unaligned", xi, i, len, so);
        if ((w[1] & 3) || w[1] < k->arena_base || (uint64_t)w[1] + len > aend)
            return BAD("execution batch %lld: descriptor %zu: stream source 0x%x + %u is unaligned or outside the tensor arena",
                       xi, i, w[1], len);
        json_t *pp = json_object_get(json_array_get(pre, i), "mmio_preamble");
        int pok = 1;
        uint32_t cfg = (uint32_t)geti(pp, "GEMM_CFG", &pok), gb = (uint32_t)geti(pp, "GEMM_BASE", &pok),
                 gs = (uint32_t)geti(pp, "GEMM_STRIDE", &pok);
        const char *pn = json_string_value(json_object_get(json_array_get(pre, i), "op_name"));
        if (!pok || !pn || strcmp(pn, opn))
            return BAD("execution batch %lld: op_mmio_preamble[%zu] must name '%s' with GEMM_CFG/BASE/STRIDE", xi, i, opn);
        if (e1_desc_writeback(w[0])) {
            uint32_t outb = 4 * e1_gemm_m(cfg) * e1_gemm_n(cfg);
            if (opc != E1_OP_GEMM_S8 && opc != E1_OP_GEMM_S4)
                return BAD("execution batch %lld: descriptor %zu: writeback requested for a non-GEMM opcode %u", xi, i, opc);
            if ((w[2] & 3) || !outb || w[2] < k->arena_base || (uint64_t)w[2] + outb > aend ||
                e1_gemm_base_c(gb) + outb > E1_SCRATCH_BYTES)
                return BAD("execution batch %lld: descriptor %zu: writeback of %u bytes to 0x%x is unaligned, empty or outside the "
                           "arena / scratchpad", xi, i, outb, w[2]);
        }
        /* the module's staging plan: the package must carry exactly what it derives */
        if (w[0] != st->w0 || w[1] != k->arena_base + st->source || w[2] != k->arena_base + st->out_off || w[3])
            return BAD("execution batch %lld: descriptor %zu ('%s') differs from the module's descriptor staging plan", xi, i, opn);
        if (cfg != st->cfg || gb != st->base || gs != st->stride)
            return BAD("execution batch %lld: op_mmio_preamble of '%s' differs from its staging plan", xi, opn);
        if (i && (cfg != k->P.stages[x->first].cfg || gb != k->P.stages[x->first].base || gs != k->P.stages[x->first].stride))
            return BAD("execution batch %lld: ops need different GEMM preambles in one batch", xi);
    }
    /* host_runtime_sequence against the image and the preambles */
    json_t *seq = json_object_get(pj, "host_runtime_sequence");
    s = json_string_value(json_object_get(seq, "schema"));
    if (!s || strcmp(s, "eliza.e1_npu_host_runtime_sequence.v1"))
        return BAD("execution batch %lld: host_runtime_sequence missing or of another schema", xi);
    json_t *mw = json_object_get(seq, "mmio_preamble_writes");
    if (json_array_size(mw) != n) return BAD("execution batch %lld: mmio_preamble_writes must have one entry per op", xi);
    char where[64];
    snprintf(where, sizeof where, "execution batch %lld: preamble", xi);
    for (size_t i = 0; i < n; i++) {
        const sh_stage *st = &k->P.stages[x->first + i];
        json_t *ws = json_object_get(json_array_get(mw, i), "writes");
        const char *pn = json_string_value(json_object_get(json_array_get(mw, i), "op_name"));
        if (!pn || strcmp(pn, k->m->ops[st->op].name) || json_array_size(ws) != 3)
            return BAD("execution batch %lld: mmio_preamble_writes[%zu] must be the 3 GEMM writes of '%s'", xi, i,
                       k->m->ops[st->op].name);
        int rc;
        if ((rc = check_regwrite(json_array_get(ws, 0), "GEMM_CFG", st->cfg, where, 0)) ||
            (rc = check_regwrite(json_array_get(ws, 1), "GEMM_BASE", st->base, where, 1)) ||
            (rc = check_regwrite(json_array_get(ws, 2), "GEMM_STRIDE", st->stride, where, 2)))
            return rc;
    }
    json_t *dw = json_object_get(seq, "descriptor_memory_writes");
    if (json_array_size(dw) != 4 * n) return BAD("execution batch %lld: descriptor_memory_writes must match the image", xi);
    for (size_t i = 0; i < 4 * n; i++) {
        json_t *e = json_array_get(dw, i);
        uint64_t addr;
        if (!hexval(json_object_get(e, "address"), &addr) || addr != base + 4 * i ||
            !json_equal(json_object_get(e, "value"), json_array_get(json_array_get(words, i / 4), i % 4)))
            return BAD("execution batch %lld: descriptor_memory_writes[%zu] does not match the descriptor image", xi, i);
    }
    json_t *sw = json_object_get(seq, "submission_mmio_writes");
    static const char *const SREG[6] = {"DESC_BASE", "DESC_HEAD", "DESC_TAIL", "CMD_PARAM", "CTRL_STATUS", "CTRL_STATUS"};
    uint32_t sval[6] = {base, (uint32_t)n, 0, E1_CMD_DESC, E1_CTRL_CLEAR, E1_CTRL_START};
    if (json_array_size(sw) != 6)
        return BAD("execution batch %lld: submission_mmio_writes must be DESC_BASE, DESC_HEAD, DESC_TAIL, CMD_PARAM, CTRL_STATUS x2", xi);
    snprintf(where, sizeof where, "execution batch %lld: submission", xi);
    for (unsigned i = 0; i < 6; i++) {
        int rc = check_regwrite(json_array_get(sw, i), SREG[i], sval[i], where, i);
        if (rc) return rc;
    }
    json_t *poll = json_object_get(seq, "completion_poll");
    uint64_t pa;
    const char *pr = json_string_value(json_object_get(poll, "register"));
    if (!pr || strcmp(pr, "DESC_STATUS") || !hexval(json_object_get(poll, "address"), &pa) || pa != E1_REG_DESC_STATUS ||
        !json_is_true(json_object_get(poll, "requires_done_bit")) || !json_is_true(json_object_get(poll, "rejects_error_bit")))
        return BAD("execution batch %lld: completion_poll must poll DESC_STATUS (0x%08x), require done and reject error", xi,
                   E1_REG_DESC_STATUS);
    k->runs[xi].pj = pj;
    k->runs[xi].x = x;
    k->runs[xi].base = base;
    return 0;
}

static int pkg_load(pkg *k, const char *text) {
    memset(k, 0, sizeof *k);
    int rc = lw_json_load(text, "package", &k->root);
    if (rc) return rc;
    const char *s = json_string_value(json_object_get(k->root, "schema"));
    if (!s || strcmp(s, NPK_E1_PACKAGE_SCHEMA)) return npk_err(NPK_EFORMAT, "package: schema is not " NPK_E1_PACKAGE_SCHEMA);
    s = json_string_value(json_object_get(k->root, "device"));
    if (!s || strcmp(s, "e1")) return npk_err(NPK_EFORMAT, "package: device is not e1");
    int ok = 1;
    long long ab = geti(k->root, "arena_base", &ok), db = geti(k->root, "descriptor_base", &ok),
              st = geti(k->root, "descriptor_stride_bytes", &ok);
    if (!ok || ab < 0 || ab > 0xffffffffll || db < 0 || db > 0xffffffffll || st < 16 || st > 0xffffffffll)
        return npk_err(NPK_EFORMAT, "package: arena_base, descriptor_base and descriptor_stride_bytes must be 32-bit integers");
    k->arena_base = (uint32_t)ab;
    k->desc_base = (uint32_t)db;
    k->stride = (uint32_t)st;
    if ((ab & 3) || (db & 3) || (st & 3)) return BAD("package: arena base, descriptor base and stride must be 4-byte aligned");
    json_t *mod = json_object_get(k->root, "module");
    char *mt = json_dumps(mod, JSON_COMPACT);
    if (!mt) return npk_err(NPK_EFORMAT, "package: no module");
    rc = npk_shlo_parse(&k->m, mt);
    free(mt);
    if (rc) return npk_err_prefix(rc, "package: module");
    if ((rc = npk_shlo_check_module(k->m))) return rc;
    json_t *tens = json_object_get(k->root, "tensors");
    if (tens) {
        char *tt = json_dumps(tens, JSON_COMPACT);
        rc = tt ? npk_shlo_bind(k->m, tt, "package tensors") : npk_err(NPK_ENOMEM, "out of memory");
        free(tt);
        if (rc) return rc;
    }
    if ((rc = sh_part_build(&k->P, k->m))) return rc;
    if (k->stride < 16 * k->P.max_slots) return BAD("package: descriptor stride %u is below 16 x %zu slots", k->stride, k->P.max_slots);
    /* the report must be the module's: an edited report would describe another arena */
    json_t *rep = sh_part_report(&k->P);
    int same = json_equal(rep, json_object_get(k->root, "partition_report"));
    json_decref(rep);
    if (!same) return BAD("package: partition_report does not match the module (edited or produced by another partitioner)");
    k->runs = calloc(k->P.nxb + 1, sizeof *k->runs);
    if (!k->runs) return npk_err(NPK_ENOMEM, "out of memory");
    json_t *px = json_object_get(k->root, "prepared_descriptor_execution_batches");
    s = json_string_value(json_object_get(px, "schema"));
    if (!s || strcmp(s, "eliza.e1_npu_prepared_descriptor_execution_batches.v1"))
        return BAD("package: prepared_descriptor_execution_batches missing or of another schema");
    if (geti(px, "arena_base", &ok) != k->arena_base || geti(px, "descriptor_base", &ok) != k->desc_base ||
        geti(px, "descriptor_stride_bytes", &ok) != k->stride || (uint64_t)geti(px, "arena_total_bytes", &ok) != k->P.arena_total ||
        !ok)
        return BAD("package: prepared_descriptor_execution_batches disagrees with the package's arena/descriptor bases, "
                   "stride or arena size");
    json_t *steps = json_object_get(px, "required_runtime_steps");
    for (size_t i = 0; i < 4; i++) {
        const char *stp = json_string_value(json_array_get(steps, i));
        if (!stp || strcmp(stp, STEPS[i]) || json_array_size(steps) != 4)
            return BAD("package: required_runtime_steps must be populate_tensor_arena, program_mmio_preamble, "
                       "stage_descriptor_image, submit_command_buffer");
    }
    json_t *xl = json_object_get(px, "execution_batches");
    if (!json_is_array(xl)) return BAD("package: execution_batches must be a list");
    for (size_t i = 0; i < json_array_size(xl); i++)
        if ((rc = check_batch(k, json_array_get(xl, i), i))) return rc;
    return 0;
}

int npk_e1_package_check(const char *package_json) {
    pkg k;
    int rc = pkg_load(&k, package_json);
    pkg_free(&k);
    return rc;
}

/* ---- exec ---- */

typedef struct xctx {
    pkg *k;
    npk_e1 *e;
    long *xof;                /* per op: execution batch replayed from the package, or -1 */
    npk_lower_out **pend;     /* per op: its output list, filled when the batch completes */
    npk_lower_evidence **pev;
    unsigned replayed;        /* doorbells */
} xctx;

static int pack_input(const sh_alloc *a, const npk_ltensor *t, uint8_t *buf) {
    size_t n = npk_lt_numel(t);
    unsigned bits = 8;
    if (!strcmp(a->t->dtype, "int4")) bits = 4;
    if (n * bits > a->size * 8) return BAD("tensor '%s': %zu values do not fit its %" PRIu64 "-byte allocation", a->name, n, a->size);
    memset(buf, 0, a->size);
    for (size_t i = 0; i < n; i++) {
        uint8_t v = (uint8_t)t->data[i];
        if (bits == 4) buf[i / 2] |= (uint8_t)((v & 0xf) << (4 * (i & 1)));
        else buf[i] = v;
    }
    return 0;
}

static int hook(void *ctx, size_t index, const char *name, unsigned n, const char *const *fields,
                const npk_ltensor *const *inputs, npk_lower_out *out, npk_lower_evidence *ev) {
    xctx *c = ctx;
    pkg *k = c->k;
    (void)name;
    if (index >= k->m->nops || c->xof[index] < 0) return 1;
    xrun *xr = &k->runs[c->xof[index]];
    const sh_xbatch *x = xr->x;
    npk_port *port = npk_e1_port(c->e);
    size_t pos = 0;
    while (k->P.stages[x->first + pos].op != index) pos++;
    const sh_stage *st = &k->P.stages[x->first + pos];
    /* populate the tensor arena with this op's inputs */
    for (unsigned i = 0; i < st->nin; i++) {
        const sh_alloc *a = &k->P.allocs[st->in[i].alloc];
        const npk_ltensor *t = NULL;
        for (unsigned j = 0; j < n; j++)
            if (!strcmp(fields[j], st->in[i].field)) t = inputs[j];
        if (!t) return BAD("op '%s': no data bound for '%s'", k->m->ops[index].name, st->in[i].field);
        uint8_t *buf = malloc(a->size);
        if (!buf) return npk_err(NPK_ENOMEM, "out of memory");
        int rc = pack_input(a, t, buf);
        if (!rc) rc = npk_port_mem_write(port, k->arena_base + a->offset, buf, a->size);
        free(buf);
        if (rc) return npk_err_prefix(rc, "populating the tensor arena ('%s')", a->name);
    }
    c->pend[index] = out;
    c->pev[index] = ev;
    memset(out, 0, sizeof *out);
    memset(ev, 0, sizeof *ev);
    if (pos + 1 < x->n) return 0; /* the batch is submitted with its last op */
    /* replay the host runtime sequence */
    json_t *seq = json_object_get(xr->pj, "host_runtime_sequence");
    json_t *mw = json_object_get(seq, "mmio_preamble_writes"), *dw = json_object_get(seq, "descriptor_memory_writes"),
           *sw = json_object_get(seq, "submission_mmio_writes");
    npk_e1_reg_write pre[3 * E1_RING_MAX_PENDING], sub[6];
    npk_e1_mem_write mem[4 * E1_RING_MAX_PENDING];
    unsigned npre = 0, nmem = 0, nsub = 0;
    for (size_t i = 0; i < json_array_size(mw); i++) {
        json_t *ws = json_object_get(json_array_get(mw, i), "writes");
        for (size_t j = 0; j < json_array_size(ws); j++) {
            json_t *w = json_array_get(ws, j);
            pre[npre].reg = (uint32_t)sh_reg_offset(json_string_value(json_object_get(w, "register")));
            pre[npre++].value = (uint32_t)json_integer_value(json_object_get(w, "value"));
        }
    }
    for (size_t i = 0; i < json_array_size(dw); i++) {
        json_t *w = json_array_get(dw, i);
        uint64_t a = 0;
        hexval(json_object_get(w, "address"), &a);
        mem[nmem].addr = a;
        mem[nmem++].value = (uint32_t)json_integer_value(json_object_get(w, "value"));
    }
    for (size_t i = 0; i < json_array_size(sw); i++) {
        json_t *w = json_array_get(sw, i);
        sub[nsub].reg = (uint32_t)sh_reg_offset(json_string_value(json_object_get(w, "register")));
        sub[nsub++].value = (uint32_t)json_integer_value(json_object_get(w, "value"));
    }
    uint64_t t0 = npk_port_cycles(port), m0 = npk_port_mmio_count(port);
    uint32_t ds;
    int rc = npk_e1_replay(c->e, pre, npre, mem, nmem, sub, nsub, &ds);
    if (rc) return npk_err_prefix(rc, "execution batch %u", x->index);
    c->replayed++;
    /* read every op's int32 result tile back from the arena */
    for (size_t i = 0; i < x->n; i++) {
        const sh_stage *s2 = &k->P.stages[x->first + i];
        const sh_op *op = &k->m->ops[s2->op];
        npk_lower_out *o = c->pend[s2->op];
        npk_lower_evidence *e = c->pev[s2->op];
        unsigned M = e1_gemm_m(s2->cfg), N = e1_gemm_n(s2->cfg), K = e1_gemm_k(s2->cfg);
        o->n = 1;
        o->name[0] = "result";
        o->dtype[0] = NPK_LD_I32;
        if ((rc = npk_lt_alloc2(&o->t[0], M, N))) return rc;
        uint8_t buf[36];
        if ((rc = npk_port_mem_read(port, k->arena_base + s2->out_off, buf, 4u * M * N)))
            return npk_err_prefix(rc, "reading the result of '%s'", op->name);
        for (unsigned j = 0; j < M * N; j++)
            o->t[0].data[j] = (int32_t)((uint32_t)buf[4 * j] | (uint32_t)buf[4 * j + 1] << 8 |
                                        (uint32_t)buf[4 * j + 2] << 16 | (uint32_t)buf[4 * j + 3] << 24);
        e->op = "matmul";
        e->tiles = 1;
        e->tile_m = M, e->tile_n = N, e->tile_k = K;
        e->desc[e1_desc_opcode(s2->w0)] = 1;
        e->macs = (uint64_t)M * N * K;
        e->host = NPK_HOST_STAGES_DESCRIPTORS;
        if (i + 1 == x->n) {
            e->batches = 1;
            e->cycles = npk_port_cycles(port) - t0;
            e->mmio = npk_port_mmio_count(port) - m0;
        }
    }
    return 0;
}

/* The op a bound value names when it is an op reference ("OP" / "OP.result"), else -1. */
static long ref_op(const npk_shlo *m, json_t *v) {
    for (int hops = 0; json_is_string(v) && json_object_get(m->data, json_string_value(v)) && hops < 16; hops++)
        v = json_object_get(m->data, json_string_value(v));
    if (!json_is_string(v)) return -1;
    const char *s = json_string_value(v), *dot = strchr(s, '.');
    size_t l = dot ? (size_t)(dot - s) : strlen(s);
    for (size_t i = 0; i < m->nops; i++)
        if (strlen(m->ops[i].name) == l && !strncmp(m->ops[i].name, s, l)) return (long)i;
    return -1;
}

int npk_e1_package_exec(npk_e1 *drv, const char *package_json, const char *const *tensor_texts, size_t ntensor_texts,
                        const npk_lower_module_opts *opts, char **result_json) {
    *result_json = NULL;
    pkg k;
    int rc = pkg_load(&k, package_json);
    xctx c;
    memset(&c, 0, sizeof c);
    char *lower = NULL;
    npk_port *port = npk_e1_port(drv);
    int reserved_arena = 0;
    size_t nres = 0;
    uint32_t *res = NULL;
    for (size_t i = 0; !rc && i < ntensor_texts; i++) rc = npk_shlo_bind(k.m, tensor_texts[i], "--tensors");
    if (!rc) rc = npk_shlo_to_lower_json(k.m, &lower);
    if (!rc) {
        c.k = &k;
        c.e = drv;
        c.xof = malloc((k.m->nops + 1) * sizeof *c.xof);
        c.pend = calloc(k.m->nops + 1, sizeof *c.pend);
        c.pev = calloc(k.m->nops + 1, sizeof *c.pev);
        res = calloc(k.P.nxb + 1, sizeof *res);
        if (!c.xof || !c.pend || !c.pev || !res) rc = npk_err(NPK_ENOMEM, "out of memory");
    }
    for (size_t i = 0; !rc && i < k.m->nops; i++) c.xof[i] = -1;
    for (size_t xi = 0; !rc && xi < k.P.nxb; xi++) {
        if (!k.runs[xi].pj) continue;
        const sh_xbatch *x = k.runs[xi].x;
        for (size_t j = 0; j < x->n; j++) c.xof[k.P.stages[x->first + j].op] = (long)xi;
    }
    /* the descriptor ring has no dependency tracking: an op cannot read a result of its own batch */
    for (size_t i = 0; !rc && i < k.m->nops; i++) {
        if (c.xof[i] < 0) continue;
        sh_plan p;
        sh_plan_of(&k.m->ops[i], &p);
        for (unsigned f = 0; f < p.nf && !rc; f++) {
            char key[256];
            snprintf(key, sizeof key, "%s.%s", k.m->ops[i].name, p.field[f]);
            long r = ref_op(k.m, json_object_get(k.m->data, key));
            if (r >= 0 && c.xof[r] == c.xof[i])
                rc = BAD("op '%s' reads the result of '%s' from the same execution batch %ld (the ring has no "
                         "dependency tracking; recompile with the ops in separate batches)",
                         k.m->ops[i].name, k.m->ops[r].name, c.xof[i]);
        }
    }
    /* keep the driver's and the lowerings' guest memory off the package's arena and descriptors */
    if (!rc && !(rc = npk_port_reserve(port, k.arena_base, k.P.arena_total))) reserved_arena = 1;
    for (size_t xi = 0; !rc && xi < k.P.nxb; xi++) {
        if (!k.runs[xi].pj) continue;
        if (!(rc = npk_port_reserve(port, k.runs[xi].base, 16 * k.runs[xi].x->n))) res[nres++] = k.runs[xi].base;
    }
    if (rc) {
        rc = npk_err_prefix(rc, "package");
    } else {
        npk_lower_module_opts o = {.batching = 1, .include_golden = 1};
        if (opts) o = *opts;
        o.hook = hook;
        o.hook_ctx = &c;
        char *inner = NULL;
        rc = npk_lower_module_run(drv, lower, &o, &inner);
        if (!rc) {
            json_t *r = json_loads(inner, 0, NULL);
            json_t *rp = json_object();
            json_object_set_new(rp, "schema", json_string(NPK_E1_PACKAGE_SCHEMA));
            json_object_set_new(rp, "arena_base", json_integer(k.arena_base));
            json_object_set_new(rp, "descriptor_base", json_integer(k.desc_base));
            json_object_set_new(rp, "execution_batches_replayed", json_integer(c.replayed));
            size_t byl = 0;
            for (size_t i = 0; i < k.m->nops; i++) byl += c.xof[i] < 0 && k.m->ops[i].supported;
            size_t nrep = 0;
            for (size_t i = 0; i < k.m->nops; i++) nrep += c.xof[i] >= 0;
            json_object_set_new(rp, "ops_replayed", json_integer((json_int_t)nrep));
            json_object_set_new(rp, "ops_lowered", json_integer((json_int_t)byl));
            json_object_set_new(rp, "ops_cpu_fallback", json_integer((json_int_t)(k.m->nops - nrep - byl)));
            json_object_set_new(r, "replay", rp);
            *result_json = json_dumps(r, JSON_COMPACT);
            json_decref(r);
            if (!*result_json) rc = npk_err(NPK_ENOMEM, "out of memory");
        }
        free(inner);
    }
    if (reserved_arena) npk_port_free(port, k.arena_base);
    for (size_t i = 0; i < nres; i++) npk_port_free(port, res[i]);
    free(res);
    free(c.xof);
    free(c.pend);
    free(c.pev);
    free(lower);
    pkg_free(&k);
    return rc;
}
