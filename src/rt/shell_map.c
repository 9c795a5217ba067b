// SPDX-License-Identifier: MIT
/*
 * The schedule mapper: RTLGen's YAML schedule IR (version 0.1: buffers, ops,
 * deps, events) to a shell descriptor stream, byte-for-byte the stream the
 * reference mapper (npu/mapper/run.py) writes with --out-bin, including its
 * event expansion order and GEMM op ids. YAML is parsed by libyaml; scalars are
 * resolved like PyYAML's YAML 1.1 safe loader (null, bool, int, float, str).
 * Deviations (inputs the reference truncates silently are refused; more vec
 * op names are accepted): docs/shell.md "shell-map".
 */
#include "npukit/shell_drv.h"
#include "npukit/strbuf.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef enum { V_MISSING, V_NULL, V_BOOL, V_INT, V_FLOAT, V_STR, V_SEQ, V_MAP } vkind;

typedef struct val {
    vkind k;
    int neg;       /* V_INT: sign */
    uint64_t mag;  /* V_INT: magnitude (must fit 64 bits) */
    double f;      /* V_FLOAT */
    int b;         /* V_BOOL */
    const char *s; /* V_STR and every scalar: the text */
    size_t len;
    int node;      /* node id */
} val;

typedef struct mctx {
    yaml_document_t doc;
    const char *where; /* for messages */
} mctx;

static yaml_node_t *N(mctx *m, int id) { return yaml_document_get_node(&m->doc, id); }

static int streq(const char *s, size_t n, const char *lit) { return strlen(lit) == n && !memcmp(s, lit, n); }

/* Parse a YAML 1.1 integer (PyYAML int resolver, without sexagesimal). */
static int parse_yint(const char *s, size_t n, int *neg, uint64_t *mag) {
    size_t i = 0;
    *neg = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) *neg = s[i++] == '-';
    if (i >= n) return -1;
    unsigned base = 10;
    if (n - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) base = 16, i += 2;
    else if (n - i > 2 && s[i] == '0' && (s[i + 1] == 'b' || s[i + 1] == 'B')) base = 2, i += 2;
    else if (n - i > 1 && s[i] == '0') base = 8, i += 1;
    else if (!isdigit((unsigned char)s[i])) return -1;
    uint64_t v = 0;
    int digits = 0;
    for (; i < n; i++) {
        if (s[i] == '_') continue;
        int d = isdigit((unsigned char)s[i]) ? s[i] - '0' : isxdigit((unsigned char)s[i]) ? tolower((unsigned char)s[i]) - 'a' + 10 : 99;
        if (d >= (int)base) return -1;
        if (v > (UINT64_MAX - (uint64_t)d) / base) return -2; /* too large */
        v = v * base + (uint64_t)d;
        digits++;
    }
    if (!digits) return -1;
    *mag = v;
    return 0;
}

/* PyYAML's float resolver needs a '.', or is .inf/.nan. */
static int parse_yfloat(const char *s, size_t n, double *f) {
    char t[128];
    size_t j = 0;
    if (!n || n >= sizeof t) return -1;
    size_t i = 0;
    int sign = 0;
    if (s[0] == '-' || s[0] == '+') sign = s[0] == '-' ? -1 : 1, i = 1;
    const char *r = s + i;
    size_t rn = n - i;
    if (streq(r, rn, ".inf") || streq(r, rn, ".Inf") || streq(r, rn, ".INF")) {
        *f = sign < 0 ? -INFINITY : INFINITY;
        return 0;
    }
    if (!sign && (streq(r, rn, ".nan") || streq(r, rn, ".NaN") || streq(r, rn, ".NAN"))) {
        *f = NAN;
        return 0;
    }
    int dot = 0, digit = 0;
    for (size_t k = 0; k < n; k++) {
        char c = s[k];
        if (c == '_') continue;
        if (c == '.') dot++;
        else if (isdigit((unsigned char)c)) digit = 1;
        else if (!(c == '-' || c == '+' || c == 'e' || c == 'E')) return -1;
        t[j++] = c;
    }
    t[j] = 0;
    if (dot != 1 || !digit) return -1;
    char *end;
    *f = strtod(t, &end);
    return *end ? -1 : 0;
}

static val resolve(mctx *m, int id) {
    val v = {0};
    v.node = id;
    yaml_node_t *nd = id ? N(m, id) : NULL;
    if (!nd) {
        v.k = V_MISSING;
        return v;
    }
    if (nd->type == YAML_SEQUENCE_NODE) {
        v.k = V_SEQ;
        return v;
    }
    if (nd->type == YAML_MAPPING_NODE) {
        v.k = V_MAP;
        return v;
    }
    const char *s = (const char *)nd->data.scalar.value;
    size_t n = nd->data.scalar.length;
    v.s = s;
    v.len = n;
    v.k = V_STR;
    if (nd->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return v;
    if (!n || streq(s, n, "~") || streq(s, n, "null") || streq(s, n, "Null") || streq(s, n, "NULL")) {
        v.k = V_NULL;
        return v;
    }
    static const char *const t[] = {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
    static const char *const f[] = {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"};
    for (int i = 0; i < 9; i++) {
        if (streq(s, n, t[i])) {
            v.k = V_BOOL;
            v.b = 1;
            return v;
        }
        if (streq(s, n, f[i])) {
            v.k = V_BOOL;
            return v;
        }
    }
    int r = parse_yint(s, n, &v.neg, &v.mag);
    if (r == 0) {
        v.k = V_INT;
        return v;
    }
    if (r == -2) {
        v.k = V_INT;
        v.mag = UINT64_MAX; /* flagged as too large by the users below */
        v.neg = 2;
        return v;
    }
    if (!parse_yfloat(s, n, &v.f)) v.k = V_FLOAT;
    return v;
}

/* mapping lookup (the last duplicate key wins, like PyYAML) */
static val get(mctx *m, int map, const char *key) {
    yaml_node_t *nd = N(m, map);
    int found = 0;
    if (nd && nd->type == YAML_MAPPING_NODE)
        for (yaml_node_pair_t *p = nd->data.mapping.pairs.start; p < nd->data.mapping.pairs.top; p++) {
            yaml_node_t *k = N(m, p->key);
            if (k && k->type == YAML_SCALAR_NODE && streq((const char *)k->data.scalar.value, k->data.scalar.length, key))
                found = p->value;
        }
    return resolve(m, found);
}

static int truthy(const val *v) {
    switch (v->k) {
    case V_MISSING: case V_NULL: return 0;
    case V_BOOL: return v->b;
    case V_INT: return v->mag != 0;
    case V_FLOAT: return v->f != 0;
    case V_STR: return v->len != 0;
    default: return 1;
    }
}

static const char *kname(vkind k) {
    static const char *const n[] = {"missing", "null", "bool", "int", "float", "string", "list", "mapping"};
    return n[k];
}

/* Python int(x) (base 0 for buffer addresses given as strings), as a u64 in [lo, hi]. */
static int to_u64(mctx *m, const val *v, int base0, uint64_t hi, const char *what, uint64_t *out) {
    uint64_t r = 0;
    int neg = 0;
    switch (v->k) {
    case V_INT:
        if (v->neg == 2) return npk_err(NPK_EFORMAT, "%s: %s %.*s does not fit 64 bits", m->where, what, (int)v->len, v->s);
        neg = v->neg && v->mag;
        r = v->mag;
        break;
    case V_BOOL: r = (uint64_t)v->b; break;
    case V_FLOAT:
        if (!isfinite(v->f) || fabs(v->f) >= 18446744073709551616.0 || v->f != trunc(v->f)) /* 1.5 is refused, 64.0 is 64 */
            return npk_err(NPK_EFORMAT, "%s: %s %.*s is not an integer", m->where, what, (int)v->len, v->s);
        neg = v->f <= -1.0;
        r = (uint64_t)fabs(trunc(v->f));
        break;
    case V_STR: {
        char t[96];
        size_t j = 0;
        if (v->len >= sizeof t) return npk_err(NPK_EFORMAT, "%s: %s '%.*s' is not an integer", m->where, what, (int)v->len, v->s);
        size_t a = 0, b = v->len;
        while (a < b && isspace((unsigned char)v->s[a])) a++;
        while (b > a && isspace((unsigned char)v->s[b - 1])) b--;
        if (a < b && (v->s[a] == '-' || v->s[a] == '+')) neg = v->s[a++] == '-';
        int hex = base0 && b - a > 2 && v->s[a] == '0' && strchr("xXoObB", v->s[a + 1]);
        unsigned base = 10;
        if (hex) {
            char c = (char)tolower((unsigned char)v->s[a + 1]);
            base = c == 'x' ? 16 : c == 'o' ? 8 : 2;
            a += 2;
        } else if (base0 && b - a > 1 && v->s[a] == '0') {
            for (size_t i = a; i < b; i++)
                if (v->s[i] != '0' && v->s[i] != '_')
                    return npk_err(NPK_EFORMAT, "%s: %s '%.*s' is not an integer", m->where, what, (int)v->len, v->s);
        }
        for (size_t i = a; i < b; i++) {
            char c = v->s[i];
            if (c == '_') continue;
            int d = isdigit((unsigned char)c) ? c - '0' : isxdigit((unsigned char)c) ? tolower((unsigned char)c) - 'a' + 10 : 99;
            if (d >= (int)base || j + 1 >= sizeof t)
                return npk_err(NPK_EFORMAT, "%s: %s '%.*s' is not an integer", m->where, what, (int)v->len, v->s);
            if (r > (UINT64_MAX - (uint64_t)d) / base)
                return npk_err(NPK_EFORMAT, "%s: %s '%.*s' does not fit 64 bits", m->where, what, (int)v->len, v->s);
            r = r * base + (uint64_t)d;
            t[j++] = c;
        }
        if (!j) return npk_err(NPK_EFORMAT, "%s: %s '%.*s' is not an integer", m->where, what, (int)v->len, v->s);
        neg = neg && r;
        break;
    }
    case V_MISSING: return npk_err(NPK_EFORMAT, "%s: %s is missing", m->where, what);
    default: return npk_err(NPK_EFORMAT, "%s: %s must be an integer, not a %s", m->where, what, kname(v->k));
    }
    if (neg) return npk_err(NPK_EFORMAT, "%s: %s must not be negative", m->where, what);
    if (r > hi)
        return npk_err(NPK_EFORMAT, "%s: %s %" PRIu64 " does not fit its field (max %" PRIu64 ")", m->where, what, r, hi);
    *out = r;
    return 0;
}

/* Python int(x) & mask: the reference masks these on purpose (opaque ids). */
static int to_masked(mctx *m, const val *v, uint64_t mask, const char *what, uint64_t *out) {
    if (v->k == V_INT && v->neg == 2) return npk_err(NPK_EFORMAT, "%s: %s does not fit 64 bits", m->where, what);
    if (v->k == V_INT && v->neg && v->mag) {
        *out = (0 - v->mag) & mask; /* Python's two's-complement & on negative ints */
        return 0;
    }
    uint64_t r;
    int rc = to_u64(m, v, 0, UINT64_MAX, what, &r);
    if (!rc) *out = r & mask;
    return rc;
}

static int to_double(mctx *m, const val *v, const char *what, double *out) {
    switch (v->k) {
    case V_INT: *out = (v->neg ? -1.0 : 1.0) * (double)v->mag; return 0;
    case V_BOOL: *out = v->b; return 0;
    case V_FLOAT: *out = v->f; return 0;
    case V_STR: {
        char t[96];
        if (!v->len || v->len >= sizeof t) break;
        memcpy(t, v->s, v->len);
        t[v->len] = 0;
        char *end;
        *out = strtod(t, &end);
        while (*end && isspace((unsigned char)*end)) end++;
        if (!*end && end != t) return 0;
        break;
    }
    default: break;
    }
    return npk_err(NPK_EFORMAT, "%s: %s must be a number", m->where, what);
}

/* ---- schedule walk ---------------------------------------------------------------- */

typedef struct item {
    int node;          /* op mapping node, 0 for an inserted event op */
    int wait;          /* inserted: 1 = event_wait, 0 = event_signal */
    uint64_t event_id;
    int irq;
    char id[160];
} item;

typedef struct items {
    item *v;
    size_t n, cap;
} items;

static int push_item(items *l, const item *it) {
    int rc = npk_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v, 64);
    if (rc) return rc;
    l->v[l->n++] = *it;
    return 0;
}

/* text of a scalar (ids are compared as text) */
static void scalar_text(const val *v, char *buf, size_t n) {
    if (v->s) snprintf(buf, n, "%.*s", (int)v->len, v->s);
    else buf[0] = 0;
}

typedef struct buffer_ent {
    char id[128];
    uint64_t addr;
} buffer_ent;

static const char *const dtype_tab[4] = {"int8", "fp16", "bf16", "fp8"};

static int lookup_exact(const val *v, const char *const *tab, int n) {
    if (v->k != V_STR) return -1;
    for (int i = 0; i < n; i++)
        if (streq(v->s, v->len, tab[i])) return i;
    return -1;
}

static int buffer_addr(mctx *m, buffer_ent *bufs, size_t nb, const val *ref, const char *what, uint64_t *addr) {
    char t[128];
    scalar_text(ref, t, sizeof t);
    for (size_t i = nb; i-- > 0;)
        if (!strcmp(bufs[i].id, t)) {
            *addr = bufs[i].addr;
            return 0;
        }
    return npk_err(NPK_EFORMAT, "%s: %s references unknown buffer '%s'", m->where, what, t);
}

typedef struct outbuf {
    uint8_t *p;
    size_t n, cap;
} outbuf;

static int emit_bytes(outbuf *o, const uint8_t *d, size_t len) {
    int rc = npk_grow(&o->p, &o->cap, o->n + len, 1, 4096);
    if (rc) return rc;
    memcpy(o->p + o->n, d, len);
    o->n += len;
    return 0;
}

static int emit_op(mctx *m, const item *it, buffer_ent *bufs, size_t nb, uint64_t gemm_uid, int softmax_dtype,
                   outbuf *o) {
    uint8_t d[96];
    memset(d, 0, sizeof d);
    if (!it->node) {
        if (it->event_id > 0xffff)
            return npk_err(NPK_EFORMAT, "%s: event id %" PRIu64 " does not fit the 16-bit event field", m->where, it->event_id);
        npk_shell_enc_event(d, it->wait ? SHELL_OP_EVENT_WAIT : SHELL_OP_EVENT_SIGNAL, (uint16_t)it->event_id, it->irq);
        return emit_bytes(o, d, 32);
    }
    int op = it->node;
    val type = get(m, op, "type");
    uint64_t a = 0, b = 0, c = 0, n1 = 0, n2 = 0, n3 = 0, n4 = 0;
    int rc;
#define U(key, hi, out) (rc = to_u64(m, (const val[]){get(m, op, key)}, 0, hi, key, &(out)))
#define BUF(key, out) (rc = buffer_addr(m, bufs, nb, (const val[]){get(m, op, key)}, key, &(out)))
    if (type.k == V_STR && streq(type.s, type.len, "dma_copy")) {
        if (BUF("src", a) || BUF("dst", b) || U("bytes", UINT32_MAX, n1)) return rc;
        npk_shell_enc_dma_copy(d, 0, a, b, (uint32_t)n1);
    } else if (type.k == V_STR && streq(type.s, type.len, "dma_strided")) {
        if (BUF("src", a) || BUF("dst", b) || U("row_bytes", 0xffff, n1) || U("rows", 0xffff, n2) ||
            U("src_stride", 0xff, n3) || U("dst_stride", 0xff, n4))
            return rc;
        npk_shell_enc_dma_strided(d, 0, a, b, (uint16_t)n1, (uint16_t)n2, (uint8_t)n3, (uint8_t)n4);
    } else if (type.k == V_STR && (streq(type.s, type.len, "dma_gather") || streq(type.s, type.len, "dma_scatter"))) {
        if (U("list_addr", UINT64_MAX, a) || U("list_count", UINT32_MAX, n1) || U("elem_size", UINT32_MAX, n2)) return rc;
        npk_shell_enc_dma_list(d, type.s[4] == 'g' ? SHELL_OP_DMA_GATHER : SHELL_OP_DMA_SCATTER, 0, a, (uint32_t)n1,
                               (uint32_t)n2, 0);
    } else if (type.k == V_STR && streq(type.s, type.len, "gemm")) {
        static const char *const lay[2] = {"row_major", "col_major"};
        val dt = get(m, op, "dtype"), ly = get(m, op, "layout");
        int dti = lookup_exact(&dt, dtype_tab, 4), lyi = lookup_exact(&ly, lay, 2);
        if (dti < 0) return npk_err(NPK_EFORMAT, "%s: gemm dtype must be int8, fp16, bf16 or fp8", m->where);
        if (lyi < 0) return npk_err(NPK_EFORMAT, "%s: gemm layout must be row_major or col_major", m->where);
        if (BUF("a", a) || BUF("b", b) || BUF("c", c)) return rc;
        static const char *const v2keys[] = {"lda", "ldb", "ldc", "alpha", "beta", "bias", "epilogue", "transpose_a", "transpose_b"};
        val gv2 = get(m, op, "gemm_v2");
        int v2 = truthy(&gv2);
        for (int i = 0; i < 9 && !v2; i++) v2 = get(m, op, v2keys[i]).k != V_MISSING;
        if (!v2) {
            if (U("m", 0xfff, n1) || U("n", 0x3ff, n2) || U("k", 0x3ff, n3)) return rc;
            npk_shell_enc_gemm_v1(d, (unsigned)dti, (unsigned)lyi, (uint32_t)n1, (uint32_t)n2, (uint32_t)n3, a, b, c);
            return emit_bytes(o, d, 32);
        }
        npk_shell_gemm_desc g = {0};
        g.dtype = (unsigned)dti;
        g.layout = (unsigned)lyi;
        val epi = get(m, op, "epilogue");
        if (epi.k != V_MISSING) {
            static const char *const en[5] = {"none", "relu", "gelu", "add", "mul"};
            char t[32];
            size_t i;
            for (i = 0; i < epi.len && i + 1 < sizeof t; i++) t[i] = (char)tolower((unsigned char)epi.s[i]);
            t[i] = 0;
            int e = -1;
            for (int j = 0; j < 5 && epi.s; j++)
                if (!strcmp(t, en[j])) e = j;
            if (e < 0) return npk_err(NPK_EFORMAT, "%s: gemm epilogue must be none, relu, gelu, add or mul", m->where);
            g.epilogue = (unsigned)e;
        }
        val ta = get(m, op, "transpose_a"), tb = get(m, op, "transpose_b"), bias = get(m, op, "bias");
        val alpha = get(m, op, "alpha"), beta = get(m, op, "beta"), ut = get(m, op, "user_tag"), uid = get(m, op, "op_uid");
        g.trans_a = truthy(&ta);
        g.trans_b = truthy(&tb);
        g.has_bias = truthy(&bias);
        g.has_alpha = alpha.k != V_MISSING && alpha.k != V_NULL;
        g.has_beta = beta.k != V_MISSING && beta.k != V_NULL;
        uint64_t t64 = 0;
        if (ut.k != V_MISSING && (rc = to_masked(m, &ut, 0xffff, "user_tag", &t64))) return rc;
        g.user_tag = (uint16_t)t64;
        g.op_uid = gemm_uid;
        if (uid.k != V_MISSING && (rc = to_masked(m, &uid, UINT64_MAX, "op_uid", &g.op_uid))) return rc;
        if (U("m", UINT32_MAX, n1) || U("n", UINT32_MAX, n2) || U("k", UINT32_MAX, n3)) return rc;
        g.m = (uint32_t)n1;
        g.n = (uint32_t)n2;
        g.k = (uint32_t)n3;
        const char *ldk[3] = {"lda", "ldb", "ldc"};
        uint32_t *ld[3] = {&g.lda, &g.ldb, &g.ldc};
        for (int i = 0; i < 3; i++) {
            val lv = get(m, op, ldk[i]);
            uint64_t x = 0;
            if (lv.k != V_MISSING && (rc = to_u64(m, &lv, 0, UINT32_MAX, ldk[i], &x))) return rc;
            *ld[i] = (uint32_t)x;
        }
        g.a = a;
        g.b = b;
        g.c = c;
        if (g.has_bias && (rc = buffer_addr(m, bufs, nb, &bias, "bias", &g.bias))) return rc;
        const val *fv[2] = {&alpha, &beta};
        float *fo[2] = {&g.alpha, &g.beta};
        int has[2] = {g.has_alpha, g.has_beta};
        for (int i = 0; i < 2; i++) {
            if (!has[i]) continue;
            double x = 0;
            if ((rc = to_double(m, fv[i], i ? "beta" : "alpha", &x))) return rc;
            *fo[i] = (float)x;
            if (isinf(*fo[i]) && !isinf(x))
                return npk_err(NPK_EFORMAT, "%s: %s %g does not fit an fp32 field", m->where, i ? "beta" : "alpha", x);
        }
        size_t len = npk_shell_enc_gemm(d, &g);
        return emit_bytes(o, d, len);
    } else if (type.k == V_STR && streq(type.s, type.len, "vec_op")) {
        val opv = get(m, op, "op"), dt = get(m, op, "dtype");
        int dti = lookup_exact(&dt, dtype_tab, 4);
        if (dti < 0) return npk_err(NPK_EFORMAT, "%s: vec_op dtype must be int8, fp16, bf16 or fp8", m->where);
        char t[32] = "";
        if (opv.s) {
            size_t i;
            for (i = 0; i < opv.len && i + 1 < sizeof t; i++) t[i] = (char)tolower((unsigned char)opv.s[i]);
            t[i] = 0;
        }
        int code = -1;
        uint32_t ext = 0;
        for (unsigned i = 0; i < 16; i++)
            if (!strcmp(t, npk_shell_vec_op_name(i))) code = (int)i;
        if (!strcmp(t, "rmsnorm")) {
            code = 0;
            ext = SHELL_VEC_EXT_RMSNORM;
        }
        if (code < 0) return npk_err(NPK_EFORMAT, "%s: unsupported vec_op op '%s'", m->where, t);
        if (BUF("src", a) || BUF("dst", b) || U("bytes", UINT32_MAX, n1)) return rc;
        npk_shell_enc_vec(d, 0, (unsigned)code, (unsigned)dti, a, b, (uint32_t)n1, ext);
    } else if (type.k == V_STR && streq(type.s, type.len, "softmax")) {
        val dt = get(m, op, "dtype");
        int dti = lookup_exact(&dt, dtype_tab, 4);
        if (dti < 0) return npk_err(NPK_EFORMAT, "%s: softmax dtype must be int8, fp16, bf16 or fp8", m->where);
        if (BUF("src", a) || BUF("dst", b) || U("row_bytes", 0xffff, n1) || U("rows", 0xffff, n2)) return rc;
        if (dti && !softmax_dtype)
            fprintf(stderr, "npu: shell-map: warning: %s: the reference mapper leaves SOFTMAX FLAGS at 0 (int8) for dtype %s;"
                            " pass --softmax-dtype to encode the dtype\n", m->where, dtype_tab[dti]);
        npk_shell_enc_softmax(d, 0, softmax_dtype ? (unsigned)dti : 0, a, b, (uint16_t)n1, (uint16_t)n2);
    } else if (type.k == V_STR && (streq(type.s, type.len, "event_signal") || streq(type.s, type.len, "event_wait"))) {
        int wait = type.s[6] == 'w';
        uint64_t idv;
        if (U("event_id", 0xffff, idv)) return rc;
        val irq = get(m, op, "irq");
        npk_shell_enc_event(d, wait ? SHELL_OP_EVENT_WAIT : SHELL_OP_EVENT_SIGNAL, (uint16_t)idv, !wait && truthy(&irq));
    } else if (type.k == V_STR && streq(type.s, type.len, "noop")) {
        npk_shell_enc_noop(d, 0);
    } else {
        char t[64];
        scalar_text(&type, t, sizeof t);
        return npk_err(NPK_EFORMAT, "%s: unknown op type '%s'", m->where, t);
    }
#undef U
#undef BUF
    return emit_bytes(o, d, 32);
}

static int seq_items(mctx *m, int node, yaml_node_item_t **b, yaml_node_item_t **e) {
    yaml_node_t *nd = N(m, node);
    if (!nd || nd->type != YAML_SEQUENCE_NODE) return -1;
    *b = nd->data.sequence.items.start;
    *e = nd->data.sequence.items.top;
    return 0;
}

int npk_shell_map_yaml(const char *text, size_t len, uint8_t **bin, size_t *bin_len, size_t *count) {
    return npk_shell_map_yaml_opts(text, len, 0, bin, bin_len, count);
}

/* libyaml's time grows with the square of the nesting depth of flow
 * collections ([[[[...), so the input is checked event by event before the
 * document is loaded: too deep stops at the first level past the limit. */
static int check_limits(const char *text, size_t len) {
    if (len > NPK_SHELL_MAP_MAX_BYTES)
        return npk_err(NPK_EFORMAT, "schedule of %zu bytes is over the %u MiB limit", len,
                       NPK_SHELL_MAP_MAX_BYTES >> 20);
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) return npk_err(NPK_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int depth = 0, rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) break; /* the loader reports syntax errors */
        yaml_event_type_t t = ev.type;
        if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) depth++;
        if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) depth--;
        size_t line = ev.start_mark.line + 1;
        yaml_event_delete(&ev);
        if (depth > NPK_SHELL_MAP_MAX_DEPTH) {
            rc = npk_err(NPK_EFORMAT, "YAML line %zu: collections nested deeper than %d levels", line,
                         NPK_SHELL_MAP_MAX_DEPTH);
            break;
        }
        if (t == YAML_STREAM_END_EVENT) break;
    }
    yaml_parser_delete(&p);
    return rc;
}

/* Why long: the reference mapper's five passes in its order (buffers, ops, deps -> events,
 * events -> signals, emit) over one set of tables. */
int npk_shell_map_yaml_opts(const char *text, size_t len, int softmax_dtype, uint8_t **bin, size_t *bin_len, size_t *count) {
    *bin = NULL;
    *bin_len = 0;
    if (count) *count = 0;
    int lim = check_limits(text, len);
    if (lim) return lim;
    mctx m;
    m.where = "schedule";
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return npk_err(NPK_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &m.doc)) {
        int rc = npk_err(NPK_EFORMAT, "YAML line %zu column %zu: %s", parser.problem_mark.line + 1,
                         parser.problem_mark.column + 1, parser.problem ? parser.problem : "parse error");
        yaml_parser_delete(&parser);
        return rc;
    }
    yaml_parser_delete(&parser);
    int rc = 0;
    buffer_ent *bufs = NULL;
    items ops = {0}, exp = {0}, fin = {0}, out = {0};
    outbuf ob = {0};
    typedef struct wpair { char w[160]; uint64_t ev; int popped; } wpair;
    wpair *wp = NULL;
    size_t nwp = 0, nb = 0;
    int root = 1;
    yaml_node_t *rn = yaml_document_get_root_node(&m.doc);
    if (!rn || rn->type != YAML_MAPPING_NODE) {
        rc = npk_err(NPK_EFORMAT, "schedule: top-level must be a mapping");
        goto done;
    }
    val ver = get(&m, root, "version");
    if (!(ver.k == V_FLOAT && ver.f == 0.1)) {
        rc = npk_err(NPK_EFORMAT, "schedule: version must be 0.1");
        goto done;
    }
    /* buffers */
    val bl = get(&m, root, "buffers");
    yaml_node_item_t *ib, *ie;
    if (bl.k != V_MISSING) {
        if (bl.k != V_SEQ || seq_items(&m, bl.node, &ib, &ie)) {
            rc = npk_err(NPK_EFORMAT, "schedule: buffers must be a list");
            goto done;
        }
        bufs = calloc((size_t)(ie - ib) + 1, sizeof *bufs);
        if (!bufs) {
            rc = npk_err(NPK_ENOMEM, "out of memory");
            goto done;
        }
        for (yaml_node_item_t *it = ib; it < ie; it++) {
            val idv = get(&m, *it, "id"), av = get(&m, *it, "addr");
            if (resolve(&m, *it).k != V_MAP || idv.k == V_MISSING || idv.k == V_NULL) {
                rc = npk_err(NPK_EFORMAT, "schedule: buffer entries must be mappings with an id");
                goto done;
            }
            scalar_text(&idv, bufs[nb].id, sizeof bufs[nb].id);
            char where[200];
            snprintf(where, sizeof where, "buffer '%s'", bufs[nb].id);
            m.where = where;
            if ((rc = to_u64(&m, &av, av.k == V_STR, UINT64_MAX, "addr", &bufs[nb].addr))) goto done;
            m.where = "schedule";
            nb++;
        }
    }
    /* ops */
    val ol = get(&m, root, "ops");
    if (ol.k != V_MISSING) {
        if (ol.k != V_SEQ || seq_items(&m, ol.node, &ib, &ie)) {
            rc = npk_err(NPK_EFORMAT, "schedule: ops must be a list");
            goto done;
        }
        for (yaml_node_item_t *it = ib; it < ie; it++) {
            item x = {0};
            x.node = *it;
            val idv = get(&m, *it, "id"), tv = get(&m, *it, "type");
            if (resolve(&m, *it).k != V_MAP) {
                rc = npk_err(NPK_EFORMAT, "schedule: op entries must be mappings");
                goto done;
            }
            if (!truthy(&idv)) {
                rc = npk_err(NPK_EFORMAT, "schedule: op missing id");
                goto done;
            }
            scalar_text(&idv, x.id, sizeof x.id);
            if (!truthy(&tv)) {
                rc = npk_err(NPK_EFORMAT, "schedule: op %s missing type", x.id);
                goto done;
            }
            for (size_t j = 0; j < ops.n; j++)
                if (!strcmp(ops.v[j].id, x.id)) {
                    rc = npk_err(NPK_EFORMAT, "schedule: op ids must be unique ('%s' repeats)", x.id);
                    goto done;
                }
            if ((rc = push_item(&ops, &x))) goto done;
        }
    }
    /* deps -> events (reference expand_deps) */
    val dl = get(&m, root, "deps");
    yaml_node_item_t *db = NULL, *de = NULL;
    if (dl.k != V_MISSING && dl.k != V_NULL) {
        if (dl.k != V_SEQ || seq_items(&m, dl.node, &db, &de)) {
            rc = npk_err(NPK_EFORMAT, "schedule: deps must be a list");
            goto done;
        }
    }
    uint64_t next_event = 1;
    for (yaml_node_item_t *dp = db; dp && dp < de; dp++) {
        if (resolve(&m, *dp).k != V_MAP) {
            rc = npk_err(NPK_EFORMAT, "schedule: dep entries must be mappings");
            goto done;
        }
        val wv = get(&m, *dp, "wait"), tv = get(&m, *dp, "then");
        char then[160];
        scalar_text(&tv, then, sizeof then);
        int ok = 0;
        for (size_t j = 0; j < ops.n; j++) ok |= !strcmp(ops.v[j].id, then);
        if (!ok || tv.k == V_MISSING) {
            rc = npk_err(NPK_EFORMAT, "schedule: dep references unknown op %s", then);
            goto done;
        }
        yaml_node_item_t *wb, *we;
        if (wv.k == V_MISSING) continue;
        if (wv.k != V_SEQ || seq_items(&m, wv.node, &wb, &we)) {
            rc = npk_err(NPK_EFORMAT, "schedule: dep 'wait' must be a list of op ids");
            goto done;
        }
        for (yaml_node_item_t *w = wb; w < we; w++) {
            val x = resolve(&m, *w);
            char wid[160];
            scalar_text(&x, wid, sizeof wid);
            ok = 0;
            for (size_t j = 0; j < ops.n; j++) ok |= !strcmp(ops.v[j].id, wid);
            if (!ok) {
                rc = npk_err(NPK_EFORMAT, "schedule: dep references unknown op %s", wid);
                goto done;
            }
            wpair *nw = realloc(wp, (nwp + 1) * sizeof *wp);
            if (!nw) {
                rc = npk_err(NPK_ENOMEM, "out of memory");
                goto done;
            }
            wp = nw;
            snprintf(wp[nwp].w, sizeof wp[nwp].w, "%s", wid);
            wp[nwp].ev = next_event++;
            wp[nwp++].popped = 0;
        }
    }
    if (nwp) {
        for (size_t i = 0; i < ops.n; i++) {
            if ((rc = push_item(&exp, &ops.v[i]))) goto done;
            for (size_t j = 0; j < nwp; j++)
                if (!strcmp(wp[j].w, ops.v[i].id)) {
                    item s = {0};
                    s.event_id = wp[j].ev;
                    snprintf(s.id, sizeof s.id, "%.100s_signal_%" PRIu64, ops.v[i].id, wp[j].ev);
                    if ((rc = push_item(&exp, &s))) goto done;
                }
        }
        for (size_t i = 0; i < exp.n; i++) {
            for (yaml_node_item_t *dp = db; dp < de; dp++) {
                val tv = get(&m, *dp, "then"), wv = get(&m, *dp, "wait");
                char then[160];
                scalar_text(&tv, then, sizeof then);
                if (strcmp(then, exp.v[i].id)) continue;
                yaml_node_item_t *wb, *we;
                if (wv.k != V_SEQ || seq_items(&m, wv.node, &wb, &we)) continue;
                for (yaml_node_item_t *w = wb; w < we; w++) {
                    val x = resolve(&m, *w);
                    char wid[160];
                    scalar_text(&x, wid, sizeof wid);
                    size_t j;
                    for (j = 0; j < nwp; j++)
                        if (!wp[j].popped && !strcmp(wp[j].w, wid)) break;
                    if (j == nwp) {
                        rc = npk_err(NPK_EFORMAT, "schedule: dep on '%s' has no event left to wait for", wid);
                        goto done;
                    }
                    wp[j].popped = 1;
                    item wi = {0};
                    wi.wait = 1;
                    wi.event_id = wp[j].ev;
                    snprintf(wi.id, sizeof wi.id, "%.100s_wait_%" PRIu64, exp.v[i].id, wp[j].ev);
                    if ((rc = push_item(&fin, &wi))) goto done;
                }
            }
            if ((rc = push_item(&fin, &exp.v[i]))) goto done;
        }
    } else {
        for (size_t i = 0; i < ops.n; i++)
            if ((rc = push_item(&fin, &ops.v[i]))) goto done;
    }
    /* events -> signals after their op (reference insert_signal_events) */
    val el = get(&m, root, "events");
    yaml_node_item_t *eb = NULL, *ee = NULL;
    if (el.k != V_MISSING && el.k != V_NULL && (el.k != V_SEQ || seq_items(&m, el.node, &eb, &ee))) {
        rc = npk_err(NPK_EFORMAT, "schedule: events must be a list");
        goto done;
    }
    for (size_t i = 0; i < fin.n; i++) {
        if ((rc = push_item(&out, &fin.v[i]))) goto done;
        for (yaml_node_item_t *ev = eb; ev && ev < ee; ev++) {
            val so = get(&m, *ev, "signal_on"), idv = get(&m, *ev, "id"), irq = get(&m, *ev, "irq");
            if (so.k == V_MISSING) {
                rc = npk_err(NPK_EFORMAT, "schedule: event entries need signal_on");
                goto done;
            }
            char on[160];
            scalar_text(&so, on, sizeof on);
            if (strcmp(on, fin.v[i].id)) continue;
            item s = {0};
            m.where = "event";
            if ((rc = to_u64(&m, &idv, 0, UINT64_MAX, "id", &s.event_id))) goto done;
            m.where = "schedule";
            s.irq = truthy(&irq);
            snprintf(s.id, sizeof s.id, "event_%" PRIu64, s.event_id);
            if ((rc = push_item(&out, &s))) goto done;
        }
    }
    /* emit */
    uint64_t uid = 1;
    for (size_t i = 0; i < out.n; i++) {
        char where[200];
        snprintf(where, sizeof where, "op '%s'", out.v[i].id);
        m.where = where;
        uint64_t this_uid = 0;
        if (out.v[i].node) {
            val tv = get(&m, out.v[i].node, "type");
            if (tv.k == V_STR && streq(tv.s, tv.len, "gemm")) this_uid = uid++;
        }
        if ((rc = emit_op(&m, &out.v[i], bufs, nb, this_uid, softmax_dtype, &ob))) goto done;
    }
    if (!ob.p && !(ob.p = malloc(1))) {
        rc = npk_err(NPK_ENOMEM, "out of memory");
        goto done;
    }
    *bin = ob.p;
    *bin_len = ob.n;
    ob.p = NULL;
    if (count) *count = out.n;
done:
    free(ob.p);
    free(bufs);
    free(wp);
    free(ops.v);
    free(exp.v);
    free(fin.v);
    free(out.v);
    yaml_document_delete(&m.doc);
    return rc;
}
