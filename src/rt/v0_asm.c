// SPDX-License-Identifier: MIT
/* Text form of v0 descriptor rings (npu asm/disasm --device v0).
 *
 *   # comment
 *   matmul_s8 m=64 n=32 k=128 a=0x80000000 sa=128 b=0x80010000 sb=32 c=0x80020000 sc=128 flags=signed|irq tag=0x7
 *   conv2d_s8_relu h=32 w=32 cin=3 cout=16 ksize=3 stride_h=1 stride_w=1 pad_h=1 pad_w=1 dil=1 a=.. sa=.. b=.. sb=.. c=.. sc=.. flags=signed
 *   maxpool_s8 h=32 w=32 ch=16 win_h=2 win_w=2 pstride=2 ppad=0 a=.. sa=.. c=.. sc=.. flags=signed
 *   op=0x77 m=1 word13=0xdeadbeef
 *
 * Keys: m n k a b c sa sb sc conv pool tag flags (any op), h w cin ksize cout
 * stride_h stride_w stride pad_h pad_w pad dil (conv fields), ch win_h win_w
 * win pstride ppad (pool fields), word0..word15 (raw words, applied last).
 * disasm prints the readable fields of the op and adds wordN= for any bits
 * they do not cover, so asm(disasm(x)) == x for every image. */
#include "asm_text.h"
#include "npukit/v0_drv.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    uint32_t op;
} mnemonics[] = {
    {"nop", NPK_V0_OP_NOP},
    {"matmul_s8", NPK_V0_OP_MATMUL_S8},
    {"matmul_s8_relu", NPK_V0_OP_MATMUL_S8_RELU},
    {"conv2d_s8", NPK_V0_OP_CONV2D_S8},
    {"conv2d_s8_relu", NPK_V0_OP_CONV2D_S8_RELU},
    {"relu", NPK_V0_OP_RELU},
    {"maxpool_s8", NPK_V0_OP_MAXPOOL_S8},
    {"barrier", NPK_V0_OP_BARRIER},
    {"fallback", NPK_V0_OP_FALLBACK},
};

static const char *flag_names[4] = {"irq", "signed", "relu", "barrier"};

/* Set bits [shift, shift+width) of *w to val (checked to fit). */
static int put_bits(uint32_t *w, unsigned shift, unsigned width, uint64_t val, const char *key, int line) {
    uint64_t max = width >= 64 ? UINT64_MAX : (1ull << width) - 1;
    if (val > max)
        return npk_err(NPK_EFORMAT, "line %d: value %" PRIu64 " for '%s' does not fit %u bits", line, val, key, width);
    uint32_t mask = (uint32_t)(max << shift);
    *w = (*w & ~mask) | ((uint32_t)val << shift);
    return 0;
}

static int parse_num(const char *s, uint64_t *v) {
    if (!*s || *s == '-' || *s == '+') return -1;
    char *end;
    unsigned long long x = strtoull(s, &end, 0);
    if (*end) return -1;
    *v = x;
    return 0;
}

static int parse_flags(const char *s, uint64_t *out, int line) {
    uint64_t f = 0;
    char buf[128];
    if (strlen(s) >= sizeof buf) return npk_err(NPK_EFORMAT, "line %d: flags value too long", line);
    strcpy(buf, s);
    char *save = NULL;
    for (char *tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
        int found = 0;
        for (int i = 0; i < 4; i++)
            if (!strcmp(tok, flag_names[i])) f |= 1u << i, found = 1;
        uint64_t v = 0;
        if (!found) {
            if (parse_num(tok, &v) || v > 0xFFFF)
                return npk_err(NPK_EFORMAT, "line %d: unknown flag '%s' (irq, signed, relu, barrier or a number)", line,
                               tok);
            f |= v;
        }
    }
    *out = f;
    return 0;
}

/* Parse one non-empty line (comments stripped) into d. */
static int parse_line(char *s, npk_v0_desc *d, int line) {
    memset(d, 0, sizeof *d);
    uint32_t raw[16];
    int has_raw[16] = {0};
    int first = 1;
    char *save = NULL;
    for (char *tok = strtok_r(s, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save), first = 0) {
        char *eq = strchr(tok, '=');
        if (first && !eq) {
            size_t i;
            for (i = 0; i < sizeof mnemonics / sizeof mnemonics[0]; i++)
                if (!strcmp(tok, mnemonics[i].name)) break;
            if (i == sizeof mnemonics / sizeof mnemonics[0])
                return npk_err(NPK_EFORMAT, "line %d: unknown mnemonic '%s' (use op=0xNN for other opcodes)", line, tok);
            d->w[0] = mnemonics[i].op;
            continue;
        }
        if (!eq) return npk_err(NPK_EFORMAT, "line %d: expected key=value, got '%s'", line, tok);
        *eq = 0;
        const char *key = tok, *val = eq + 1;
        uint64_t v = 0;
        int rc = 0;
        if (!strcmp(key, "flags")) {
            rc = parse_flags(val, &v, line);
            if (!rc) rc = put_bits(&d->w[0], 16, 16, v, key, line);
            if (rc) return rc;
            continue;
        }
        if (parse_num(val, &v)) return npk_err(NPK_EFORMAT, "line %d: '%s' for '%s' is not a number", line, val, key);
        if (!strcmp(key, "op")) {
            if (!first) return npk_err(NPK_EFORMAT, "line %d: op= must come first", line);
            rc = put_bits(&d->w[0], 0, 16, v, key, line);
        } else if (!strcmp(key, "m")) rc = put_bits(&d->w[1], 0, 32, v, key, line);
        else if (!strcmp(key, "n") || !strcmp(key, "cout") || !strcmp(key, "ch")) rc = put_bits(&d->w[2], 0, 32, v, key, line);
        else if (!strcmp(key, "k")) rc = put_bits(&d->w[3], 0, 32, v, key, line);
        else if (!strcmp(key, "a")) {
            d->w[4] = (uint32_t)v, d->w[5] = (uint32_t)(v >> 32);
        } else if (!strcmp(key, "b")) {
            d->w[6] = (uint32_t)v, d->w[7] = (uint32_t)(v >> 32);
        } else if (!strcmp(key, "c")) {
            d->w[8] = (uint32_t)v, d->w[9] = (uint32_t)(v >> 32);
        } else if (!strcmp(key, "sa")) rc = put_bits(&d->w[10], 0, 32, v, key, line);
        else if (!strcmp(key, "sb")) rc = put_bits(&d->w[11], 0, 32, v, key, line);
        else if (!strcmp(key, "sc")) rc = put_bits(&d->w[12], 0, 32, v, key, line);
        else if (!strcmp(key, "conv")) rc = put_bits(&d->w[13], 0, 32, v, key, line);
        else if (!strcmp(key, "pool")) rc = put_bits(&d->w[14], 0, 32, v, key, line);
        else if (!strcmp(key, "tag")) rc = put_bits(&d->w[15], 0, 32, v, key, line);
        else if (!strcmp(key, "h")) rc = put_bits(&d->w[1], 0, 16, v, key, line);
        else if (!strcmp(key, "w")) rc = put_bits(&d->w[1], 16, 16, v, key, line);
        else if (!strcmp(key, "ksize")) rc = put_bits(&d->w[3], 0, 8, v, key, line);
        else if (!strcmp(key, "cin")) rc = put_bits(&d->w[3], 16, 16, v, key, line);
        else if (!strcmp(key, "stride_h")) rc = put_bits(&d->w[13], 0, 4, v, key, line);
        else if (!strcmp(key, "stride_w")) rc = put_bits(&d->w[13], 4, 4, v, key, line);
        else if (!strcmp(key, "stride")) {
            rc = put_bits(&d->w[13], 0, 4, v, key, line);
            if (!rc) rc = put_bits(&d->w[13], 4, 4, v, key, line);
        } else if (!strcmp(key, "pad_h")) rc = put_bits(&d->w[13], 8, 4, v, key, line);
        else if (!strcmp(key, "pad_w")) rc = put_bits(&d->w[13], 12, 4, v, key, line);
        else if (!strcmp(key, "pad")) {
            rc = put_bits(&d->w[13], 8, 4, v, key, line);
            if (!rc) rc = put_bits(&d->w[13], 12, 4, v, key, line);
        } else if (!strcmp(key, "dil")) rc = put_bits(&d->w[13], 16, 4, v, key, line);
        else if (!strcmp(key, "win_h")) rc = put_bits(&d->w[14], 0, 4, v, key, line);
        else if (!strcmp(key, "win_w")) rc = put_bits(&d->w[14], 4, 4, v, key, line);
        else if (!strcmp(key, "win")) {
            rc = put_bits(&d->w[14], 0, 4, v, key, line);
            if (!rc) rc = put_bits(&d->w[14], 4, 4, v, key, line);
        } else if (!strcmp(key, "pstride")) rc = put_bits(&d->w[14], 8, 4, v, key, line);
        else if (!strcmp(key, "ppad")) rc = put_bits(&d->w[14], 12, 4, v, key, line);
        else if (!strncmp(key, "word", 4) && isdigit((unsigned char)key[4])) {
            uint64_t i;
            if (parse_num(key + 4, &i) || i > 15)
                return npk_err(NPK_EFORMAT, "line %d: '%s': raw words are word0..word15", line, key);
            if (v > UINT32_MAX)
                return npk_err(NPK_EFORMAT, "line %d: value %" PRIu64 " for '%s' does not fit 32 bits", line, v, key);
            raw[i] = (uint32_t)v;
            has_raw[i] = 1;
        } else {
            return npk_err(NPK_EFORMAT, "line %d: unknown field '%s'", line, key);
        }
        if (rc) return rc;
    }
    if (first) return npk_err(NPK_EFORMAT, "line %d: empty descriptor", line);
    for (int i = 0; i < 16; i++)
        if (has_raw[i]) d->w[i] = raw[i];
    return 0;
}

static int v0_line(char *line, int lineno, uint8_t *rec, size_t *n) {
    npk_v0_desc d;
    int rc = parse_line(line, &d, lineno);
    if (rc) return rc;
    npk_v0_desc_pack(&d, rec);
    *n = NPK_V0_DESC_BYTES;
    return 0;
}

int npk_v0_asm(const char *text, uint8_t **bin, size_t *len) { return npk_asm_text(text, "#", v0_line, bin, len); }

/* ---- disassembler ---- */

typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static int sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k < 0) return -1;
        if ((size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return 0;
        }
        size_t nc = (b->cap + (size_t)k + 1) * 2;
        char *ns = realloc(b->s, nc);
        if (!ns) return -1;
        b->s = ns;
        b->cap = nc;
    }
}

static void flags_text(uint32_t f, char *out, size_t n) {
    out[0] = 0;
    size_t used = 0;
    for (int i = 0; i < 4; i++)
        if (f & (1u << i)) used += (size_t)snprintf(out + used, n - used, "%s%s", used ? "|" : "", flag_names[i]);
    if (f & ~0xFu) snprintf(out + used, n - used, "%s0x%x", used ? "|" : "", f & ~0xFu);
}

/* The readable part of one descriptor's line. */
static void readable(const npk_v0_desc *d, char *out, size_t n) {
    uint32_t op = npk_v0_desc_op(d), fl = npk_v0_desc_flags(d);
    const char *name = npk_v0_op_name(op);
    size_t u = 0;
#define P(...) u += (size_t)snprintf(out + u, u < n ? n - u : 0, __VA_ARGS__)
    uint64_t a = npk_v0_desc_addr(d, NPK_V0_W_A_LO), b = npk_v0_desc_addr(d, NPK_V0_W_B_LO),
             c = npk_v0_desc_addr(d, NPK_V0_W_C_LO);
    const uint32_t *w = d->w;
    if (name) P("%s", name);
    else P("op=0x%x", op);
    switch (op) {
    case NPK_V0_OP_MATMUL_S8:
    case NPK_V0_OP_MATMUL_S8_RELU:
        P(" m=%u n=%u k=%u a=0x%" PRIx64 " sa=%u b=0x%" PRIx64 " sb=%u c=0x%" PRIx64 " sc=%u", w[1], w[2], w[3], a,
          w[10], b, w[11], c, w[12]);
        break;
    case NPK_V0_OP_CONV2D_S8:
    case NPK_V0_OP_CONV2D_S8_RELU: {
        npk_v0_conv cv;
        npk_v0_desc_get_conv(d, &cv);
        P(" h=%u w=%u cin=%u cout=%u ksize=%u stride_h=%u stride_w=%u pad_h=%u pad_w=%u dil=%u a=0x%" PRIx64
          " sa=%u b=0x%" PRIx64 " sb=%u c=0x%" PRIx64 " sc=%u",
          cv.h, cv.w, cv.cin, cv.cout, cv.ksize, cv.stride_h, cv.stride_w, cv.pad_h, cv.pad_w, cv.dil, a, w[10], b,
          w[11], c, w[12]);
        break;
    }
    case NPK_V0_OP_RELU:
        P(" m=%u n=%u a=0x%" PRIx64 " sa=%u c=0x%" PRIx64 " sc=%u", w[1], w[2], a, w[10], c, w[12]);
        break;
    case NPK_V0_OP_MAXPOOL_S8: {
        npk_v0_pool p;
        npk_v0_desc_get_pool(d, &p);
        P(" h=%u w=%u ch=%u win_h=%u win_w=%u pstride=%u ppad=%u a=0x%" PRIx64 " sa=%u c=0x%" PRIx64 " sc=%u", p.h,
          p.w, p.c, p.win_h, p.win_w, p.stride, p.pad, a, w[10], c, w[12]);
        break;
    }
    case NPK_V0_OP_NOP:
    case NPK_V0_OP_BARRIER:
    case NPK_V0_OP_FALLBACK:
        break;
    default: {
        static const char *keys[] = {"m", "n", "k"};
        for (int i = 0; i < 3; i++)
            if (w[1 + i]) P(" %s=%u", keys[i], w[1 + i]);
        if (a) P(" a=0x%" PRIx64, a);
        if (b) P(" b=0x%" PRIx64, b);
        if (c) P(" c=0x%" PRIx64, c);
        if (w[10]) P(" sa=%u", w[10]);
        if (w[11]) P(" sb=%u", w[11]);
        if (w[12]) P(" sc=%u", w[12]);
        if (w[13]) P(" conv=0x%x", w[13]);
        if (w[14]) P(" pool=0x%x", w[14]);
    }
    }
    if (fl) {
        char ft[64];
        flags_text(fl, ft, sizeof ft);
        P(" flags=%s", ft);
    }
    if (w[15]) P(" tag=0x%x", w[15]);
#undef P
}

int npk_v0_disasm(const uint8_t *bin, size_t len, char **text) {
    *text = NULL;
    if (len % NPK_V0_DESC_BYTES)
        return npk_err(NPK_EFORMAT, "byte offset %zu: truncated descriptor (%zu bytes is not a multiple of 64)",
                       len - len % NPK_V0_DESC_BYTES, len);
    sbuf b = {malloc(256), 0, 256};
    if (!b.s) return npk_err(NPK_ENOMEM, "out of memory");
    b.s[0] = 0;
    int bad = sb_printf(&b, "# v0 descriptor ring image: %zu descriptor(s) of 64 bytes\n", len / NPK_V0_DESC_BYTES);
    for (size_t i = 0; !bad && i < len / NPK_V0_DESC_BYTES; i++) {
        npk_v0_desc d, back;
        npk_v0_desc_unpack(bin + i * NPK_V0_DESC_BYTES, &d);
        char line[640], tmp[640];
        readable(&d, line, sizeof line);
        memcpy(tmp, line, sizeof tmp);
        if (parse_line(tmp, &back, (int)i + 1)) memset(&back, 0, sizeof back);
        bad = sb_printf(&b, "%s", line);
        for (int k = 0; !bad && k < 16; k++)
            if (back.w[k] != d.w[k]) bad = sb_printf(&b, " word%d=0x%08x", k, d.w[k]);
        if (!bad) bad = sb_printf(&b, "\n");
    }
    if (bad) {
        free(b.s);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    *text = b.s;
    return 0;
}
