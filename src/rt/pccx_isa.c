/* pccx v002 instruction encodings (pccx-isa.md Part 1), the encoding-level
 * fault check, and the text assembler / disassembler. */
#include "npukit/pccx.h"

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD(w, hi, lo) ((uint32_t)(((w) >> (lo)) & ((1ull << ((hi) - (lo) + 1)) - 1)))
#define PUT(v, hi, lo) (((uint64_t)(v) & ((1ull << ((hi) - (lo) + 1)) - 1)) << (lo))

static const char *const op_names[] = {"GEMV", "GEMM", "MEMCPY", "MEMSET", "CVO"};
static_assert(sizeof op_names / sizeof op_names[0] == NPK_PCCX_OP_CVO + 1, "one name per pccx opcode");
static const char *const cvo_names[8] = {"EXP", "SQRT", "GELU", "SIN", "COS", "REDUCE_SUM", "SCALE", "RECIP"};
static const char *const fault_names[16] = {"NONE",       "OPCODE",        "FUNC",  "RESERVED",
                                            "DIRECTION",  "L2_RANGE",      "SHAPE_ZERO", "SHAPE_MISMATCH",
                                            "LANE",       "HOST_RANGE",    "WS_RANGE", "BUS",
                                            "FLAGS",      "OVERFLOW",      "FIELD", "CACHE"};

const char *npk_pccx_opcode_name(unsigned op) { return op <= NPK_PCCX_OP_CVO ? op_names[op] : "?"; }
const char *npk_pccx_cvo_name(unsigned f) { return f < 8 ? cvo_names[f] : "?"; }
const char *npk_pccx_fault_name(unsigned c) { return c < 16 ? fault_names[c] : "?"; }

uint64_t npk_pccx_gemv_word(uint32_t dest, uint32_t src, unsigned flags, unsigned size_ptr, unsigned shape_ptr,
                            unsigned lanes) {
    return PUT(NPK_PCCX_OP_GEMV, 63, 60) | PUT(dest, 59, 43) | PUT(src, 42, 26) | PUT(flags, 25, 20) |
           PUT(size_ptr, 19, 14) | PUT(shape_ptr, 13, 8) | PUT(lanes, 7, 3);
}

uint64_t npk_pccx_gemm_word(uint32_t dest, uint32_t src, unsigned flags, unsigned size_ptr, unsigned shape_ptr,
                            unsigned lanes) {
    return npk_pccx_gemv_word(dest, src, flags, size_ptr, shape_ptr, lanes) | PUT(NPK_PCCX_OP_GEMM, 63, 60);
}

uint64_t npk_pccx_memcpy_word(unsigned from_device, unsigned to_device, uint32_t dest, uint32_t src, uint32_t aux,
                              unsigned shape_ptr, unsigned async) {
    return PUT(NPK_PCCX_OP_MEMCPY, 63, 60) | PUT(from_device, 59, 59) | PUT(to_device, 58, 58) | PUT(dest, 57, 41) |
           PUT(src, 40, 24) | PUT(aux, 23, 7) | PUT(shape_ptr, 6, 1) | PUT(async, 0, 0);
}

uint64_t npk_pccx_memset_word(unsigned cache, unsigned index, uint16_t a, uint16_t b, uint16_t c) {
    return PUT(NPK_PCCX_OP_MEMSET, 63, 60) | PUT(cache, 59, 58) | PUT(index, 57, 52) | PUT(a, 51, 36) |
           PUT(b, 35, 20) | PUT(c, 19, 4);
}

uint64_t npk_pccx_cvo_word(unsigned func, uint32_t src, uint32_t dst, unsigned length, unsigned flags, unsigned async) {
    return PUT(NPK_PCCX_OP_CVO, 63, 60) | PUT(func, 59, 56) | PUT(src, 55, 39) | PUT(dst, 38, 22) |
           PUT(length, 21, 6) | PUT(flags, 5, 1) | PUT(async, 0, 0);
}

static int fits(const char *name, uint64_t v, unsigned bits) {
    if (v >> bits) return npk_err(NPK_EINVAL, "field %s = %" PRIu64 " does not fit in %u bits", name, v, bits);
    return 0;
}

int npk_pccx_encode(const npk_pccx_insn *in, uint64_t *word) {
    int rc = 0;
#define F(name, v, bits) \
    if ((rc = fits(name, (uint64_t)(v), bits))) return rc
    F("opcode", in->op, 4);
    switch (in->op) {
    case NPK_PCCX_OP_GEMV:
    case NPK_PCCX_OP_GEMM:
        F("dest_reg", in->dest, 17);
        F("src_addr", in->src, 17);
        F("flags", in->flags, 6);
        F("size_ptr_addr", in->size_ptr, 6);
        F("shape_ptr_addr", in->shape_ptr, 6);
        F("parallel_lane", in->lanes, 5);
        F("reserved", in->reserved, 3);
        *word = npk_pccx_gemv_word(in->dest, in->src, in->flags, in->size_ptr, in->shape_ptr, in->lanes) |
                PUT(in->op, 63, 60) | PUT(in->reserved, 2, 0);
        return 0;
    case NPK_PCCX_OP_MEMCPY:
        F("from_device", in->from_device, 1);
        F("to_device", in->to_device, 1);
        F("dest_addr", in->dest, 17);
        F("src_addr", in->src, 17);
        F("aux_addr", in->aux, 17);
        F("shape_ptr_addr", in->shape_ptr, 6);
        F("async", in->async, 1);
        *word = npk_pccx_memcpy_word(in->from_device, in->to_device, in->dest, in->src, in->aux, in->shape_ptr,
                                     in->async);
        return 0;
    case NPK_PCCX_OP_MEMSET:
        F("dest_cache", in->cache, 2);
        F("dest_addr", in->index, 6);
        F("reserved", in->reserved, 4);
        *word = npk_pccx_memset_word(in->cache, in->index, in->a, in->b, in->c) | PUT(in->reserved, 3, 0);
        return 0;
    case NPK_PCCX_OP_CVO:
        F("cvo_func", in->func, 4);
        F("src_addr", in->src, 17);
        F("dst_addr", in->dest, 17);
        F("length", in->length, 16);
        F("flags", in->flags, 5);
        F("async", in->async, 1);
        *word = npk_pccx_cvo_word(in->func, in->src, in->dest, in->length, in->flags, in->async);
        return 0;
    default:
        return npk_err(NPK_EINVAL, "opcode 0x%x is reserved; only a raw .word can hold it", in->op);
    }
#undef F
}

void npk_pccx_decode(uint64_t w, npk_pccx_insn *o) {
    memset(o, 0, sizeof *o);
    o->op = FIELD(w, 63, 60);
    switch (o->op) {
    case NPK_PCCX_OP_GEMV:
    case NPK_PCCX_OP_GEMM:
        o->dest = FIELD(w, 59, 43);
        o->src = FIELD(w, 42, 26);
        o->flags = FIELD(w, 25, 20);
        o->size_ptr = FIELD(w, 19, 14);
        o->shape_ptr = FIELD(w, 13, 8);
        o->lanes = FIELD(w, 7, 3);
        o->reserved = FIELD(w, 2, 0);
        break;
    case NPK_PCCX_OP_MEMCPY:
        o->from_device = FIELD(w, 59, 59);
        o->to_device = FIELD(w, 58, 58);
        o->dest = FIELD(w, 57, 41);
        o->src = FIELD(w, 40, 24);
        o->aux = FIELD(w, 23, 7);
        o->shape_ptr = FIELD(w, 6, 1);
        o->async = FIELD(w, 0, 0);
        break;
    case NPK_PCCX_OP_MEMSET:
        o->cache = FIELD(w, 59, 58);
        o->index = FIELD(w, 57, 52);
        o->a = (uint16_t)FIELD(w, 51, 36);
        o->b = (uint16_t)FIELD(w, 35, 20);
        o->c = (uint16_t)FIELD(w, 19, 4);
        o->reserved = FIELD(w, 3, 0);
        break;
    case NPK_PCCX_OP_CVO:
        o->func = FIELD(w, 59, 56);
        o->src = FIELD(w, 55, 39);
        o->dest = FIELD(w, 38, 22);
        o->length = FIELD(w, 21, 6);
        o->flags = FIELD(w, 5, 1);
        o->async = FIELD(w, 0, 0);
        break;
    default:
        break;
    }
}

int npk_pccx_check(uint64_t w) {
    npk_pccx_insn in;
    npk_pccx_decode(w, &in);
    switch (in.op) {
    case NPK_PCCX_OP_GEMV:
    case NPK_PCCX_OP_GEMM:
        if (in.reserved || (in.flags & 0x7u)) return NPK_PCCX_FAULT_RESERVED;
        if (in.lanes > 4) return NPK_PCCX_FAULT_LANE;
        return 0;
    case NPK_PCCX_OP_MEMCPY:
        if (in.from_device && in.to_device) return NPK_PCCX_FAULT_DIRECTION;
        if ((in.from_device && in.src) || (in.to_device && in.dest) || (!in.from_device && !in.to_device && in.aux))
            return NPK_PCCX_FAULT_FIELD;
        return 0;
    case NPK_PCCX_OP_MEMSET:
        if (in.reserved) return NPK_PCCX_FAULT_RESERVED;
        if (in.cache > 1) return NPK_PCCX_FAULT_CACHE;
        return 0;
    case NPK_PCCX_OP_CVO:
        if (in.func > 7) return NPK_PCCX_FAULT_FUNC;
        if (in.flags & 0x3u) return NPK_PCCX_FAULT_RESERVED;
        if ((in.flags & NPK_PCCX_CVO_RECIP_SCALE) && in.func != NPK_PCCX_CVO_SCALE) return NPK_PCCX_FAULT_FLAGS;
        if (!in.length) return NPK_PCCX_FAULT_SHAPE_ZERO;
        return 0;
    default:
        return NPK_PCCX_FAULT_OPCODE;
    }
}

/* ---- text form ------------------------------------------------------------ */

static const char *const mm_flag_names[6] = {NULL, NULL, NULL, "w_scale", "accm", "findemax"};
static const char *const cvo_flag_names[5] = {NULL, NULL, "accm", "recip_scale", "sub_emax"};

static int fmt_flags(char *buf, size_t size, unsigned flags, const char *const *names, unsigned nbits) {
    if (!flags) return snprintf(buf, size, "0");
    /* names high bit first; any unnamed (reserved) bit makes it a number */
    for (unsigned b = 0; b < nbits; b++)
        if ((flags >> b & 1) && !names[b]) return snprintf(buf, size, "0x%x", flags);
    size_t n = 0;
    buf[0] = 0;
    for (int b = (int)nbits - 1; b >= 0; b--) {
        if (!(flags >> b & 1)) continue;
        int r = snprintf(buf + n, size > n ? size - n : 0, "%s%s", n ? "|" : "", names[b]);
        if (r > 0) n += (size_t)r;
    }
    return (int)n;
}

int npk_pccx_format(uint64_t w, char *buf, size_t size) {
    npk_pccx_insn in;
    npk_pccx_decode(w, &in);
    char fl[64];
    int fault = npk_pccx_check(w);
    /* Anything the text form cannot name exactly (reserved opcode or reserved
     * bits) is a raw word; other faulting encodings keep their fields. */
    if (fault == NPK_PCCX_FAULT_OPCODE || (in.reserved && (in.op == 0 || in.op == 1 || in.op == 3)))
        return snprintf(buf, size, ".word 0x%016" PRIx64 "  # %s", w,
                        fault == NPK_PCCX_FAULT_OPCODE ? "reserved opcode" : "reserved bits set");
    switch (in.op) {
    case NPK_PCCX_OP_GEMV:
    case NPK_PCCX_OP_GEMM:
        fmt_flags(fl, sizeof fl, in.flags, mm_flag_names, 6);
        return snprintf(buf, size, "%s dest_reg=%u src_addr=%u flags=%s size_ptr_addr=%u shape_ptr_addr=%u parallel_lane=%u",
                        in.op ? "gemm" : "gemv", in.dest, in.src, fl, in.size_ptr, in.shape_ptr, in.lanes);
    case NPK_PCCX_OP_MEMCPY:
        return snprintf(buf, size, "memcpy from_device=%s to_device=%s dest_addr=%u src_addr=%u aux_addr=%u shape_ptr_addr=%u async=%u",
                        in.from_device ? "host" : "npu", in.to_device ? "host" : "npu", in.dest, in.src, in.aux,
                        in.shape_ptr, in.async);
    case NPK_PCCX_OP_MEMSET:
        if (in.cache > 1)
            return snprintf(buf, size, "memset dest_cache=%u dest_addr=%u a_value=%u b_value=%u c_value=%u", in.cache,
                            in.index, in.a, in.b, in.c);
        return snprintf(buf, size, "memset dest_cache=%s dest_addr=%u a_value=%u b_value=%u c_value=%u",
                        in.cache ? "weight_shape" : "fmap_shape", in.index, in.a, in.b, in.c);
    default: { /* CVO */
        char fn[16];
        if (in.func < 8) {
            size_t i = 0;
            for (const char *p = cvo_names[in.func]; *p && i + 1 < sizeof fn; p++) fn[i++] = (char)tolower((unsigned char)*p);
            fn[i] = 0;
        } else {
            snprintf(fn, sizeof fn, "%u", in.func);
        }
        fmt_flags(fl, sizeof fl, in.flags, cvo_flag_names, 5);
        return snprintf(buf, size, "cvo cvo_func=%s src_addr=%u dst_addr=%u length=%u flags=%s async=%u", fn, in.src,
                        in.dest, in.length, fl, in.async);
    }
    }
}

int npk_pccx_disasm(const uint8_t *bin, size_t len, char **text) {
    *text = NULL;
    if (len % 8)
        return npk_err(NPK_EFORMAT, "%zu bytes is not a whole number of 64-bit instructions (%zu trailing bytes at offset %zu)",
                       len, len % 8, len - len % 8);
    size_t cap = len / 8 * 160 + 1, n = 0;
    char *out = malloc(cap);
    if (!out) return npk_err(NPK_ENOMEM, "out of memory");
    out[0] = 0;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = 0;
        for (int b = 7; b >= 0; b--) w = w << 8 | bin[i + (size_t)b];
        char line[200];
        int r = npk_pccx_format(w, line, sizeof line);
        if (r < 0 || (size_t)r >= sizeof line || n + (size_t)r + 2 > cap) {
            free(out);
            return npk_err(NPK_EINVAL, "instruction at offset %zu does not format", i);
        }
        memcpy(out + n, line, (size_t)r);
        n += (size_t)r;
        out[n++] = '\n';
        out[n] = 0;
    }
    *text = out;
    return 0;
}

/* ---- assembler ---------------------------------------------------------------- */

typedef struct {
    const char *key[3]; /* accepted spellings */
    int slot;
} keydef;

enum { K_DEST, K_SRC, K_FLAGS, K_SIZE, K_SHAPE, K_LANE, K_FROM, K_TO, K_AUX, K_ASYNC, K_CACHE, K_INDEX, K_A, K_B, K_C,
       K_FUNC, K_LEN, K_SYNC, K_N };

static const keydef mm_keys[] = {{{"dest_reg", "dest", NULL}, K_DEST},       {{"src_addr", "src", NULL}, K_SRC},
                                 {{"flags", NULL, NULL}, K_FLAGS},           {{"size_ptr_addr", "size", NULL}, K_SIZE},
                                 {{"shape_ptr_addr", "shape", NULL}, K_SHAPE}, {{"parallel_lane", "lane", "lanes"}, K_LANE}};
static const keydef cp_keys[] = {{{"from_device", "from", NULL}, K_FROM},    {{"to_device", "to", NULL}, K_TO},
                                 {{"dest_addr", "dest", NULL}, K_DEST},      {{"src_addr", "src", NULL}, K_SRC},
                                 {{"aux_addr", "aux", NULL}, K_AUX},         {{"shape_ptr_addr", "shape", NULL}, K_SHAPE},
                                 {{"async", NULL, NULL}, K_ASYNC}};
static const keydef ms_keys[] = {{{"dest_cache", "cache", NULL}, K_CACHE}, {{"dest_addr", "index", "addr"}, K_INDEX},
                                 {{"a_value", "a", NULL}, K_A},            {{"b_value", "b", NULL}, K_B},
                                 {{"c_value", "c", NULL}, K_C}};
static const keydef cv_keys[] = {{{"cvo_func", "func", NULL}, K_FUNC},     {{"src_addr", "src", NULL}, K_SRC},
                                 {{"dst_addr", "dst", "dest"}, K_DEST},    {{"length", "len", NULL}, K_LEN},
                                 {{"flags", NULL, NULL}, K_FLAGS},         {{"async", NULL, NULL}, K_ASYNC}};

static int parse_num(const char *s, uint64_t *v) {
    if (!*s) return -1;
    char *end;
    if (s[0] == '-') return -1;
    unsigned long long x = strtoull(s, &end, 0);
    if (*end) return -1;
    *v = x;
    return 0;
}

static int parse_flags(const char *s, int is_cvo, uint64_t *v) {
    if (!parse_num(s, v)) return 0;
    const char *const *names = is_cvo ? cvo_flag_names : mm_flag_names;
    unsigned nb = is_cvo ? 5 : 6;
    uint64_t acc = 0;
    char tmp[128];
    if (strlen(s) >= sizeof tmp) return -1;
    strcpy(tmp, s);
    for (char *tok = strtok(tmp, "|+,"); tok; tok = strtok(NULL, "|+,")) {
        int found = 0;
        for (unsigned b = 0; b < nb; b++)
            if (names[b] && !strcmp(tok, names[b])) {
                acc |= 1u << b;
                found = 1;
            }
        if (!found) return -1;
    }
    *v = acc;
    return 0;
}

static int parse_func(const char *s, uint64_t *v) {
    if (!parse_num(s, v)) return 0;
    for (unsigned f = 0; f < 8; f++) {
        const char *n = cvo_names[f];
        size_t i = 0;
        for (; n[i] && s[i] && tolower((unsigned char)n[i]) == tolower((unsigned char)s[i]); i++) {
        }
        if (!n[i] && !s[i]) {
            *v = f;
            return 0;
        }
    }
    return -1;
}

static int parse_side(const char *s, uint64_t *v) {
    if (!strcmp(s, "host")) *v = 1;
    else if (!strcmp(s, "npu") || !strcmp(s, "l2")) *v = 0;
    else return parse_num(s, v);
    return 0;
}

static int asm_line(char *line, unsigned lineno, uint64_t *word) {
    char *tok[24];
    int nt = 0;
    for (char *t = strtok(line, " \t\r"); t; t = strtok(NULL, " \t\r")) {
        if (nt == 24) return npk_err(NPK_EFORMAT, "line %u: too many fields", lineno);
        tok[nt++] = t;
    }
    char mn[16];
    size_t ml = strlen(tok[0]);
    if (ml >= sizeof mn) return npk_err(NPK_EFORMAT, "line %u: unknown mnemonic '%s'", lineno, tok[0]);
    for (size_t i = 0; i <= ml; i++) mn[i] = (char)tolower((unsigned char)tok[0][i]);
    if (!strcmp(mn, ".word")) {
        uint64_t v;
        if (nt != 2 || parse_num(tok[1], &v))
            return npk_err(NPK_EFORMAT, "line %u: .word takes one 64-bit number", lineno);
        *word = v;
        return 0;
    }
    const keydef *keys;
    size_t nkeys;
    npk_pccx_insn in;
    memset(&in, 0, sizeof in);
    if (!strcmp(mn, "gemv") || !strcmp(mn, "gemm")) {
        keys = mm_keys;
        nkeys = sizeof mm_keys / sizeof mm_keys[0];
        in.op = mn[3] == 'v' ? NPK_PCCX_OP_GEMV : NPK_PCCX_OP_GEMM;
    } else if (!strcmp(mn, "memcpy")) {
        keys = cp_keys;
        nkeys = sizeof cp_keys / sizeof cp_keys[0];
        in.op = NPK_PCCX_OP_MEMCPY;
    } else if (!strcmp(mn, "memset")) {
        keys = ms_keys;
        nkeys = sizeof ms_keys / sizeof ms_keys[0];
        in.op = NPK_PCCX_OP_MEMSET;
    } else if (!strcmp(mn, "cvo")) {
        keys = cv_keys;
        nkeys = sizeof cv_keys / sizeof cv_keys[0];
        in.op = NPK_PCCX_OP_CVO;
    } else {
        return npk_err(NPK_EFORMAT, "line %u: unknown mnemonic '%s' (gemv gemm memcpy memset cvo .word)", lineno, tok[0]);
    }
    uint64_t val[K_N] = {0};
    int seen[K_N] = {0};
    for (int i = 1; i < nt; i++) {
        char *eq = strchr(tok[i], '=');
        if (in.op == NPK_PCCX_OP_MEMCPY && !eq && (!strcmp(tok[i], "sync") || !strcmp(tok[i], "async"))) {
            val[K_ASYNC] = tok[i][0] == 'a';
            seen[K_ASYNC] = 1;
            continue;
        }
        if (in.op == NPK_PCCX_OP_CVO && !eq && (!strcmp(tok[i], "sync") || !strcmp(tok[i], "async"))) {
            val[K_ASYNC] = tok[i][0] == 'a';
            seen[K_ASYNC] = 1;
            continue;
        }
        if (!eq) return npk_err(NPK_EFORMAT, "line %u: '%s' is not a field=value pair", lineno, tok[i]);
        *eq = 0;
        const char *k = tok[i], *v = eq + 1;
        int slot = -1;
        for (size_t j = 0; j < nkeys && slot < 0; j++)
            for (int s = 0; s < 3; s++)
                if (keys[j].key[s] && !strcmp(keys[j].key[s], k)) slot = keys[j].slot;
        if (slot < 0) return npk_err(NPK_EFORMAT, "line %u: %s has no field '%s'", lineno, mn, k);
        if (seen[slot]) return npk_err(NPK_EFORMAT, "line %u: field '%s' given twice", lineno, k);
        seen[slot] = 1;
        int bad;
        if (slot == K_FLAGS) bad = parse_flags(v, in.op == NPK_PCCX_OP_CVO, &val[slot]);
        else if (slot == K_FUNC) bad = parse_func(v, &val[slot]);
        else if (slot == K_FROM || slot == K_TO) bad = parse_side(v, &val[slot]);
        else if (slot == K_CACHE) {
            bad = 0;
            if (!strcmp(v, "fmap_shape") || !strcmp(v, "fmap")) val[slot] = 0;
            else if (!strcmp(v, "weight_shape") || !strcmp(v, "weight")) val[slot] = 1;
            else bad = parse_num(v, &val[slot]);
        } else bad = parse_num(v, &val[slot]);
        if (bad) return npk_err(NPK_EFORMAT, "line %u: bad value '%s' for field '%s'", lineno, v, k);
    }
    in.dest = (uint32_t)val[K_DEST];
    in.src = (uint32_t)val[K_SRC];
    in.flags = (unsigned)val[K_FLAGS];
    in.size_ptr = (unsigned)val[K_SIZE];
    in.shape_ptr = (unsigned)val[K_SHAPE];
    in.lanes = (unsigned)val[K_LANE];
    in.from_device = (unsigned)val[K_FROM];
    in.to_device = (unsigned)val[K_TO];
    in.aux = (uint32_t)val[K_AUX];
    in.async = (unsigned)val[K_ASYNC];
    in.cache = (unsigned)val[K_CACHE];
    in.index = (unsigned)val[K_INDEX];
    /* 16-bit values are range-checked here, the rest by encode */
    const int w16[] = {K_A, K_B, K_C, K_LEN};
    for (size_t j = 0; j < 4; j++)
        if (val[w16[j]] > 0xffff) return npk_err(NPK_EFORMAT, "line %u: value %" PRIu64 " does not fit in 16 bits", lineno, val[w16[j]]);
    /* 32-bit-and-wider fields are checked by encode; guard truncation to uint32 */
    for (int j = 0; j < K_N; j++)
        if (val[j] > 0xffffffffull) return npk_err(NPK_EFORMAT, "line %u: value %" PRIu64 " is too large", lineno, val[j]);
    in.a = (uint16_t)val[K_A];
    in.b = (uint16_t)val[K_B];
    in.c = (uint16_t)val[K_C];
    in.func = (unsigned)val[K_FUNC];
    in.length = (unsigned)val[K_LEN];
    int rc = npk_pccx_encode(&in, word);
    if (rc) return npk_err_prefix(NPK_EFORMAT, "line %u", lineno);
    return 0;
}

int npk_pccx_asm(const char *text, uint8_t **bin, size_t *len) {
    *bin = NULL;
    *len = 0;
    size_t cap = 64, n = 0;
    uint8_t *out = malloc(cap);
    if (!out) return npk_err(NPK_ENOMEM, "out of memory");
    unsigned lineno = 0;
    const char *p = text;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        lineno++;
        char *line = malloc(l + 1);
        if (!line) {
            free(out);
            return npk_err(NPK_ENOMEM, "out of memory");
        }
        memcpy(line, p, l);
        line[l] = 0;
        char *c = strpbrk(line, "#;");
        if (c) *c = 0;
        char *s = line;
        while (isspace((unsigned char)*s)) s++;
        if (*s) {
            uint64_t w;
            int rc = asm_line(s, lineno, &w);
            if (rc) {
                free(line);
                free(out);
                return rc;
            }
            if (n + 8 > cap) {
                uint8_t *nb = realloc(out, cap * 2);
                if (!nb) {
                    free(line);
                    free(out);
                    return npk_err(NPK_ENOMEM, "out of memory");
                }
                out = nb;
                cap *= 2;
            }
            for (int b = 0; b < 8; b++) out[n++] = (uint8_t)(w >> (8 * b));
        }
        free(line);
        p += l;
        if (*p == '\n') p++;
    }
    *bin = out;
    *len = n;
    return 0;
}

/* ---- weight records ---------------------------------------------------------------- */

uint64_t npk_pccx_wrec_size(unsigned N, unsigned K, unsigned G, int w_scale) {
    if (!N || !K) return 0;
    if (!G || G > K) G = K;
    uint64_t wb = ((uint64_t)N * K + 1) / 2;
    wb = (wb + 15) / 16 * 16;
    if (!w_scale) return wb;
    uint64_t ng = ((uint64_t)K + G - 1) / G;
    uint64_t sb = ((uint64_t)N * ng * 4 + 15) / 16 * 16;
    return wb + sb;
}

int npk_pccx_wrec_pack(const int8_t *q, const float *scales, unsigned N, unsigned K, unsigned G, uint8_t *out) {
    if (!N || !K || N > 65535 || K > 65535 || G > 65535)
        return npk_err(NPK_EINVAL, "weight matrix %ux%u (group %u): dimensions must be 1..65535", N, K, G);
    if (G > K) return npk_err(NPK_EINVAL, "scale group %u is larger than K = %u", G, K);
    uint64_t size = npk_pccx_wrec_size(N, K, G, scales != NULL);
    memset(out, 0, size);
    uint64_t nk = (uint64_t)N * K;
    for (uint64_t i = 0; i < nk; i++) {
        if (q[i] < -8 || q[i] > 7)
            return npk_err(NPK_EINVAL, "weight (%" PRIu64 ", %" PRIu64 ") = %d is outside INT4 -8..7", i / K, i % K, q[i]);
        out[i / 2] |= (uint8_t)((q[i] & 0xf) << (4 * (i & 1)));
    }
    if (scales) {
        unsigned g = G ? G : K;
        uint64_t ng = ((uint64_t)K + g - 1) / g;
        uint8_t *s = out + ((nk + 1) / 2 + 15) / 16 * 16;
        for (uint64_t i = 0; i < (uint64_t)N * ng; i++) {
            uint32_t u;
            memcpy(&u, &scales[i], sizeof u);
            for (int b = 0; b < 4; b++) s[4 * i + (uint64_t)b] = (uint8_t)(u >> (8 * b));
        }
    }
    return 0;
}

void npk_pccx_quantize_q4(const float *w, unsigned N, unsigned K, unsigned G, int8_t *q, float *scales) {
    unsigned g = G && G <= K ? G : K;
    unsigned ng = (K + g - 1) / g;
    for (unsigned n = 0; n < N; n++) {
        for (unsigned j = 0; j < ng; j++) {
            unsigned k0 = j * g, k1 = k0 + g < K ? k0 + g : K;
            float mx = 0;
            for (unsigned k = k0; k < k1; k++) {
                float a = fabsf(w[(size_t)n * K + k]);
                if (a > mx) mx = a;
            }
            float s = mx > 0 ? mx / 7.0f : 1.0f;
            scales[(size_t)n * ng + j] = s;
            for (unsigned k = k0; k < k1; k++) {
                float r = roundf(w[(size_t)n * K + k] / s);
                q[(size_t)n * K + k] = (int8_t)(r > 7 ? 7 : r < -8 ? -8 : r);
            }
        }
    }
}
