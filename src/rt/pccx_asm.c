// SPDX-License-Identifier: MIT
/* The pccx text assembler / disassembler (`npu asm|disasm --device pccx`) and
 * the host-side INT4 quantizer. The encodings themselves are the ISA codec
 * (src/abi/pccx_isa.c, include/npukit/pccx_isa.h). */
#include "asm_text.h"
#include "npukit/pccx_drv.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            for (const char *p = npk_pccx_cvo_name(in.func); *p && i + 1 < sizeof fn; p++) fn[i++] = (char)tolower((unsigned char)*p);
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
        const char *n = npk_pccx_cvo_name(f);
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

static int pccx_line(char *line, int lineno, uint8_t *rec, size_t *n) {
    while (isspace((unsigned char)*line)) line++;
    uint64_t w;
    int rc = asm_line(line, (unsigned)lineno, &w);
    if (rc) return rc;
    for (int b = 0; b < 8; b++) rec[b] = (uint8_t)(w >> (8 * b));
    *n = 8;
    return 0;
}

int npk_pccx_asm(const char *text, uint8_t **bin, size_t *len) { return npk_asm_text(text, "#;", pccx_line, bin, len); }

/* ---- quantization ------------------------------------------------------------------ */

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
