// SPDX-License-Identifier: MIT
/* The shell descriptor text assembler / disassembler (`npu asm/disasm
 * --device shell`). Names and encoders: src/abi/shell_desc.c. */
#include "asm_text.h"
#include "npukit/shell_drv.h"
#include "npukit/shell_desc.h"
#include "npukit/strbuf.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const layout_names[2] = {"row", "col"};
static const char *const epi_names[5] = {"none", "relu", "gelu", "add", "mul"};
static const char *const extop_names[2] = {"none", "rmsnorm"};


static uint64_t getn(const uint8_t *p, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}
static void putn(uint8_t *p, unsigned n, uint64_t v) {
    for (unsigned i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- text form -------------------------------------------------------------------------- */

enum { K_HEX, K_DEC, K_ENUM, K_F32 };
typedef struct fld {
    const char *name;
    uint8_t off, bytes, shift, bits, kind, always;
    const char *const *en;
    uint8_t nen;
} fld;

#define F(n, o, b, k, a) {n, o, b, 0, 0, k, a, NULL, 0}
#define FB(n, o, b, sh, bi, k, a) {n, o, b, sh, bi, k, a, NULL, 0}
#define FE(n, o, b, sh, bi, tab, a) {n, o, b, sh, bi, K_ENUM, a, tab, sizeof tab / sizeof tab[0]}
#define END {NULL, 0, 0, 0, 0, 0, 0, NULL, 0}

static const fld f_copy[] = {F("flags", 1, 1, K_HEX, 0), F("tag", 4, 4, K_HEX, 0),   F("src", 8, 8, K_HEX, 1),
                             F("dst", 16, 8, K_HEX, 1),  F("bytes", 24, 4, K_DEC, 1), F("rsvd28", 28, 4, K_HEX, 0), END};
static const fld f_strided[] = {F("flags", 1, 1, K_HEX, 0),      F("tag", 4, 4, K_HEX, 0),
                                F("src", 8, 8, K_HEX, 1),        F("dst", 16, 8, K_HEX, 1),
                                F("row_bytes", 24, 2, K_DEC, 1), F("rows", 26, 2, K_DEC, 1),
                                F("src_stride", 28, 1, K_DEC, 1), F("dst_stride", 29, 1, K_DEC, 1),
                                F("rsvd30", 30, 2, K_HEX, 0),    END};
static const fld f_list[] = {F("flags", 1, 1, K_HEX, 0),     F("tag", 4, 4, K_HEX, 0),  F("list", 8, 8, K_HEX, 1),
                             F("count", 16, 4, K_DEC, 1),     F("elem_size", 20, 4, K_DEC, 1),
                             F("local", 24, 8, K_HEX, 1),    END};
#define GEMM_HDR FE("dtype", 1, 1, 0, 4, npk_shell_dtype_names, 1), FE("layout", 1, 1, 4, 4, layout_names, 1)
#define GEMM_ABC F("a", 8, 8, K_HEX, 1), F("b", 16, 8, K_HEX, 1), F("c", 24, 8, K_HEX, 1)
#define GEMM_V2                                                                                                     \
    GEMM_HDR, FE("epilogue", 4, 4, 0, 4, epi_names, 0), FB("trans_a", 4, 4, 4, 1, K_DEC, 0),                       \
        FB("trans_b", 4, 4, 5, 1, K_DEC, 0), FB("has_bias", 4, 4, 6, 1, K_DEC, 0), FB("has_alpha", 4, 4, 7, 1, K_DEC, 0), \
        FB("has_beta", 4, 4, 8, 1, K_DEC, 0), FB("int8_out", 4, 4, 9, 1, K_DEC, 0), FB("shift", 4, 4, 10, 6, K_DEC, 0), FB("user_tag", 4, 4, 16, 16, K_DEC, 0), \
        GEMM_ABC, F("m", 32, 4, K_DEC, 1), F("n", 36, 4, K_DEC, 1), F("k", 40, 4, K_DEC, 1), F("lda", 44, 4, K_DEC, 0), \
        F("ldb", 48, 4, K_DEC, 0), F("ldc", 52, 4, K_DEC, 0), F("uid", 56, 8, K_HEX, 0)
static const fld f_gemm1[] = {GEMM_HDR, FB("m", 4, 4, 20, 12, K_DEC, 1), FB("n", 4, 4, 10, 10, K_DEC, 1),
                              FB("k", 4, 4, 0, 10, K_DEC, 1), GEMM_ABC, END};
static const fld f_gemm2[] = {GEMM_V2, END};
static const fld f_gemm3[] = {GEMM_V2, F("bias", 64, 8, K_HEX, 0), F("alpha", 72, 4, K_F32, 0), F("beta", 76, 4, K_F32, 0),
                              F("rsvd80", 80, 8, K_HEX, 0), F("rsvd88", 88, 8, K_HEX, 0), END};
static const fld f_vec[] = {FE("op", 1, 1, 0, 4, npk_shell_vec_names, 1), FE("dtype", 1, 1, 4, 4, npk_shell_dtype_names, 1),
                            F("tag", 4, 4, K_HEX, 0),            F("src", 8, 8, K_HEX, 1),
                            F("dst", 16, 8, K_HEX, 1),           F("bytes", 24, 4, K_DEC, 1),
                            FE("ext_op", 28, 1, 0, 8, extop_names, 0), F("ext_rsvd", 29, 1, K_HEX, 0),
                            F("row", 30, 2, K_DEC, 0),           END};
static const fld f_softmax[] = {FB("flags_lo", 1, 1, 0, 4, K_HEX, 0), FE("dtype", 1, 1, 4, 4, npk_shell_dtype_names, 1),
                                F("tag", 4, 4, K_HEX, 0),             F("src", 8, 8, K_HEX, 1),
                                F("dst", 16, 8, K_HEX, 1),            F("row_bytes", 24, 2, K_DEC, 1),
                                F("rows", 26, 2, K_DEC, 1),           F("rsvd28", 28, 4, K_HEX, 0), END};
#define EV_TAIL F("rsvd8", 8, 8, K_HEX, 0), F("rsvd16", 16, 8, K_HEX, 0), F("rsvd24", 24, 8, K_HEX, 0)
static const fld f_signal[] = {FB("irq", 1, 1, 0, 1, K_DEC, 0), FB("flags_hi", 1, 1, 1, 7, K_HEX, 0),
                               FB("id", 4, 4, 0, 16, K_DEC, 1), FB("tag_hi", 4, 4, 16, 16, K_HEX, 0), EV_TAIL, END};
static const fld f_wait[] = {F("flags", 1, 1, K_HEX, 0), FB("id", 4, 4, 0, 16, K_DEC, 1),
                             FB("tag_hi", 4, 4, 16, 16, K_HEX, 0), EV_TAIL, END};
static const fld f_noop[] = {F("flags", 1, 1, K_HEX, 0), F("tag", 4, 4, K_HEX, 0), EV_TAIL, END};

static const fld *layout_of(unsigned op, unsigned size) {
    if (op == SHELL_OP_GEMM) return size == 1 ? f_gemm1 : size == 2 ? f_gemm2 : size == 3 ? f_gemm3 : NULL;
    if (size != 1) return NULL;
    switch (op) {
    case SHELL_OP_DMA_COPY: return f_copy;
    case SHELL_OP_DMA_STRIDED: return f_strided;
    case SHELL_OP_DMA_GATHER: case SHELL_OP_DMA_SCATTER: return f_list;
    case SHELL_OP_VEC_OP: return f_vec;
    case SHELL_OP_SOFTMAX: return f_softmax;
    case SHELL_OP_EVENT_SIGNAL: return f_signal;
    case SHELL_OP_EVENT_WAIT: return f_wait;
    case SHELL_OP_NOOP: return f_noop;
    default: return NULL;
    }
}

static uint64_t fmask(const fld *f) {
    unsigned bits = f->bits ? f->bits : f->bytes * 8u;
    return bits >= 64 ? UINT64_MAX : ((1ull << bits) - 1);
}
static uint64_t fget(const uint8_t *d, const fld *f) { return (getn(d + f->off, f->bytes) >> f->shift) & fmask(f); }
static void fset(uint8_t *d, const fld *f, uint64_t v) {
    uint64_t w = getn(d + f->off, f->bytes);
    w = (w & ~(fmask(f) << f->shift)) | ((v & fmask(f)) << f->shift);
    putn(d + f->off, f->bytes, w);
}

static int f32_roundtrips(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    if (isnan(f)) return 0;
    char t[64];
    snprintf(t, sizeof t, "%.9g", (double)f);
    float g = strtof(t, NULL);
    uint32_t v;
    memcpy(&v, &g, 4);
    return v == u;
}

int npk_shell_disasm(const uint8_t *bin, size_t len, char **text) {
    *text = NULL;
    npk_strbuf b = {0};
    size_t off = 0;
    while (off < len) {
        if (len - off < 32) {
            free(b.p);
            return npk_err(NPK_EFORMAT, "truncated stream: %zu trailing bytes at offset 0x%zx (descriptors are 32-byte units)",
                           len - off, off);
        }
        const uint8_t *d = bin + off;
        unsigned size = d[2];
        const fld *t = layout_of(d[0], size);
        if (t && (d[3] || off + 32u * size > len)) t = NULL;
        if (!t) {
            unsigned units = size >= 1 && size <= 3 && off + 32u * size <= len ? size : 1;
            npk_strbuf_printf(&b, "RAW hex=");
            for (unsigned i = 0; i < 32 * units; i++) npk_strbuf_printf(&b, "%02x", d[i]);
            npk_strbuf_printf(&b, "\n");
            off += 32u * units;
            continue;
        }
        npk_strbuf_printf(&b, "%s", npk_shell_opcode_name(d[0]));
        if (size != 1) npk_strbuf_printf(&b, " size=%u", size);
        for (; t->name; t++) {
            uint64_t v = fget(d, t);
            if (!v && !t->always) continue;
            switch (t->kind) {
            case K_HEX: npk_strbuf_printf(&b, " %s=0x%" PRIx64, t->name, v); break;
            case K_DEC: npk_strbuf_printf(&b, " %s=%" PRIu64, t->name, v); break;
            case K_ENUM:
                if (v < t->nen) npk_strbuf_printf(&b, " %s=%s", t->name, t->en[v]);
                else npk_strbuf_printf(&b, " %s=%" PRIu64, t->name, v);
                break;
            default: {
                uint32_t u = (uint32_t)v;
                float f;
                memcpy(&f, &u, 4);
                if (f32_roundtrips(u)) npk_strbuf_printf(&b, " %s=%.9g", t->name, (double)f);
                else npk_strbuf_printf(&b, " %s=bits:0x%08" PRIx32, t->name, u);
            }
            }
        }
        npk_strbuf_printf(&b, "\n");
        off += 32u * size;
    }
    if (b.oom) {
        free(b.p);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    if (!b.p) {
        b.p = malloc(1);
        if (!b.p) return npk_err(NPK_ENOMEM, "out of memory");
        b.p[0] = 0;
    }
    *text = b.p;
    return 0;
}

static int ieq(const char *a, const char *b, size_t n) {
    if (strlen(b) != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i])) return 0;
    return 1;
}

static int parse_num(const char *s, size_t n, uint64_t *v) {
    char tmp[80];
    if (!n || n >= sizeof tmp || s[0] == '-' || s[0] == '+') return -1;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    char *end;
    unsigned long long x = strtoull(tmp, &end, 0);
    if (*end) return -1;
    *v = x;
    return 0;
}

static int assemble_line(const char *line, size_t ln, int lineno, uint8_t *d, size_t *dlen) {
    const char *p = line, *e = line + ln;
    while (p < e && isspace((unsigned char)*p)) p++;
    const char *m = p;
    while (p < e && !isspace((unsigned char)*p)) p++;
    size_t ml = (size_t)(p - m);
    memset(d, 0, 96);
    if (ieq(m, "RAW", ml)) {
        while (p < e && isspace((unsigned char)*p)) p++;
        if (e - p < 4 || strncmp(p, "hex=", 4)) return npk_err(NPK_EFORMAT, "line %d: RAW needs hex=<bytes>", lineno);
        p += 4;
        const char *h = p;
        while (p < e && !isspace((unsigned char)*p)) p++;
        size_t hl = (size_t)(p - h);
        while (p < e && isspace((unsigned char)*p)) p++;
        if (p != e) return npk_err(NPK_EFORMAT, "line %d: unexpected text after RAW hex=", lineno);
        if (hl % 64 || hl == 0 || hl > 192)
            return npk_err(NPK_EFORMAT, "line %d: RAW hex= must hold 32, 64 or 96 bytes (got %zu hex digits)", lineno, hl);
        for (size_t i = 0; i < hl / 2; i++) {
            unsigned v;
            char t[3] = {h[2 * i], h[2 * i + 1], 0};
            if (!isxdigit((unsigned char)t[0]) || !isxdigit((unsigned char)t[1]) || sscanf(t, "%2x", &v) != 1)
                return npk_err(NPK_EFORMAT, "line %d: RAW hex= has a non-hex digit", lineno);
            d[i] = (uint8_t)v;
        }
        *dlen = hl / 2;
        return 0;
    }
    unsigned op = 0;
    for (unsigned o = 0; o < 256 && !op; o++) {
        const char *n = npk_shell_opcode_name(o);
        if (n && ieq(m, n, ml)) op = o;
    }
    if (!op)
        return npk_err(NPK_EFORMAT, "line %d: unknown mnemonic '%.*s' (DMA_COPY, DMA_STRIDED, DMA_GATHER, DMA_SCATTER, "
                                    "GEMM, VEC_OP, SOFTMAX, EVENT_SIGNAL, EVENT_WAIT, NOOP, RAW)",
                       lineno, (int)ml, m);
    /* size first */
    unsigned size = 1;
    for (const char *q = p; q < e;) {
        while (q < e && isspace((unsigned char)*q)) q++;
        const char *k = q;
        while (q < e && !isspace((unsigned char)*q)) q++;
        if (q - k > 5 && !strncmp(k, "size=", 5)) {
            uint64_t v;
            if (parse_num(k + 5, (size_t)(q - k - 5), &v) || v < 1 || v > 3)
                return npk_err(NPK_EFORMAT, "line %d: size must be 1, 2 or 3", lineno);
            size = (unsigned)v;
        }
    }
    const fld *tab = layout_of(op, size);
    if (!tab) return npk_err(NPK_EFORMAT, "line %d: %s has no size=%u form (use RAW)", lineno, npk_shell_opcode_name(op), size);
    d[0] = (uint8_t)op;
    d[2] = (uint8_t)size;
    uint64_t seen = 0;
    while (p < e) {
        while (p < e && isspace((unsigned char)*p)) p++;
        if (p >= e) break;
        const char *k = p;
        while (p < e && !isspace((unsigned char)*p) && *p != '=') p++;
        size_t kl = (size_t)(p - k);
        if (p >= e || *p != '=')
            return npk_err(NPK_EFORMAT, "line %d: expected key=value, got '%.*s'", lineno, (int)kl, k);
        p++;
        const char *v = p;
        while (p < e && !isspace((unsigned char)*p)) p++;
        size_t vl = (size_t)(p - v);
        if (ieq(k, "size", kl)) continue;
        const fld *f = NULL;
        int idx = 0;
        for (const fld *t = tab; t->name; t++, idx++)
            if (ieq(k, t->name, kl)) {
                f = t;
                break;
            }
        if (!f) return npk_err(NPK_EFORMAT, "line %d: %s has no field '%.*s'", lineno, npk_shell_opcode_name(op), (int)kl, k);
        if (seen & (1ull << idx)) return npk_err(NPK_EFORMAT, "line %d: field '%s' given twice", lineno, f->name);
        seen |= 1ull << idx;
        uint64_t val;
        if (f->kind == K_F32) {
            uint32_t u;
            if (vl > 5 && !strncmp(v, "bits:", 5)) {
                uint64_t t;
                if (parse_num(v + 5, vl - 5, &t) || t > UINT32_MAX)
                    return npk_err(NPK_EFORMAT, "line %d: %s=bits: needs a 32-bit number", lineno, f->name);
                u = (uint32_t)t;
            } else {
                char tmp[80];
                if (!vl || vl >= sizeof tmp) return npk_err(NPK_EFORMAT, "line %d: bad float for %s", lineno, f->name);
                memcpy(tmp, v, vl);
                tmp[vl] = 0;
                char *end;
                float fv = strtof(tmp, &end);
                if (*end) return npk_err(NPK_EFORMAT, "line %d: bad float '%s' for %s", lineno, tmp, f->name);
                memcpy(&u, &fv, 4);
            }
            val = u;
        } else {
            int found = 0;
            if (f->kind == K_ENUM)
                for (unsigned i = 0; i < f->nen; i++)
                    if (ieq(v, f->en[i], vl)) {
                        val = i;
                        found = 1;
                    }
            if (!found && parse_num(v, vl, &val))
                return npk_err(NPK_EFORMAT, "line %d: bad value '%.*s' for %s", lineno, (int)vl, v, f->name);
            if (val > fmask(f))
                return npk_err(NPK_EFORMAT, "line %d: %s=%.*s does not fit its %u-bit field", lineno, f->name, (int)vl, v,
                               f->bits ? f->bits : f->bytes * 8u);
        }
        fset(d, f, val);
    }
    *dlen = 32u * size;
    return 0;
}

static int shell_line(char *line, int lineno, uint8_t *rec, size_t *n) {
    return assemble_line(line, strlen(line), lineno, rec, n);
}

int npk_shell_asm(const char *text, uint8_t **bin, size_t *len) { return npk_asm_text(text, "#", shell_line, bin, len); }
