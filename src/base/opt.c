// SPDX-License-Identifier: MIT
/* Typed option tables (include/npukit/opt.h): value parsing with range checks,
 * key=value lists for device options, generated help. */
#include "npukit/opt.h"
#include "npukit/error.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void npk_strlist_free(npk_strlist *l) {
    if (!l) return;
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

const char *npk_opt_meta(const npk_opt *o) {
    if (o->meta) return o->meta;
    switch (o->type) {
    case NPK_OPT_BOOL: return "0|1";
    case NPK_OPT_U32:
    case NPK_OPT_U64: return "N";
    case NPK_OPT_F64: return "X";
    default: return "S";
    }
}

static uint64_t int_max(const npk_opt *o) {
    if (o->min || o->max) return o->max;
    return o->type == NPK_OPT_U32 ? UINT32_MAX : UINT64_MAX;
}

static int range_text(const npk_opt *o, char *buf, size_t len) {
    switch (o->type) {
    case NPK_OPT_BOOL: return snprintf(buf, len, "0 or 1");
    case NPK_OPT_U32:
    case NPK_OPT_U64:
        if (int_max(o) == (o->type == NPK_OPT_U32 ? UINT32_MAX : UINT64_MAX))
            return snprintf(buf, len, "an integer >= %llu", (unsigned long long)o->min);
        return snprintf(buf, len, "%llu..%llu", (unsigned long long)o->min, (unsigned long long)int_max(o));
    case NPK_OPT_F64: return snprintf(buf, len, "%s%g, %g]", o->min_excl ? "(" : "[", o->fmin, o->fmax);
    default: buf[0] = 0; return 0;
    }
}

int npk_opt_set(const npk_opt *o, void *base, const char *val, const char *what) {
    char *p = (char *)base + o->off;
    char rng[96];
    range_text(o, rng, sizeof rng);
    if (o->given_off) *(int *)((char *)base + o->given_off - 1) = 1;
    switch (o->type) {
    case NPK_OPT_FLAG: *(int *)p = 1; return 0;
    case NPK_OPT_STR: *(const char **)p = val; return 0;
    case NPK_OPT_LIST: {
        npk_strlist *l = (npk_strlist *)p;
        if (l->n == l->cap) {
            size_t nc = l->cap ? 2 * l->cap : 8;
            const char **nv = realloc(l->v, nc * sizeof *nv);
            if (!nv) return npk_err(NPK_ENOMEM, "out of memory");
            l->v = nv;
            l->cap = nc;
        }
        l->v[l->n++] = val;
        return 0;
    }
    case NPK_OPT_BOOL:
    case NPK_OPT_U32:
    case NPK_OPT_U64: {
        const char *s = val ? val : "";
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '-' && s[1] >= '0' && s[1] <= '9')
            return npk_err(NPK_EINVAL, "%s: %s is out of range (expected %s)", what, val, rng);
        if (!*s || *s == '-' || *s == '+')
            return npk_err(NPK_EINVAL, "%s: '%s' is not a number (expected %s)", what, val ? val : "", rng);
        errno = 0;
        char *end;
        unsigned long long v = strtoull(s, &end, 0);
        if (*end || end == s)
            return npk_err(NPK_EINVAL, "%s: '%s' is not a number (expected %s)", what, val, rng);
        uint64_t lo = o->type == NPK_OPT_BOOL ? 0 : o->min, hi = o->type == NPK_OPT_BOOL ? 1 : int_max(o);
        if (errno == ERANGE || v < lo || v > hi)
            return npk_err(NPK_EINVAL, "%s: %s is out of range (expected %s)", what, val, rng);
        if (o->type == NPK_OPT_BOOL) *(int *)p = (int)v;
        else if (o->type == NPK_OPT_U32) *(uint32_t *)p = (uint32_t)v;
        else *(uint64_t *)p = v;
        return 0;
    }
    case NPK_OPT_F64: {
        const char *s = val ? val : "";
        errno = 0;
        char *end;
        double v = strtod(s, &end);
        if (!*s || *end || end == s || isnan(v))
            return npk_err(NPK_EINVAL, "%s: '%s' is not a number (expected %s)", what, s, rng);
        if (errno == ERANGE || !isfinite(v) || v < o->fmin || v > o->fmax || (o->min_excl && v == o->fmin))
            return npk_err(NPK_EINVAL, "%s: %s is out of range (expected %s)", what, s, rng);
        *(double *)p = v;
        return 0;
    }
    }
    return npk_err(NPK_EINVAL, "%s: bad option type", what);
}

const npk_opt *npk_opt_find(const npk_opt *t, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].name, name) || (t[i].alias && !strcmp(t[i].alias, name))) return &t[i];
    return NULL;
}

int npk_opt_defaults(const npk_opt *t, size_t n, void *base) {
    for (size_t i = 0; i < n; i++) {
        if (!t[i].def) continue;
        npk_opt o = t[i];
        o.given_off = 0; /* a default is not "given" */
        int rc = npk_opt_set(&o, base, t[i].def, t[i].name);
        if (rc) return rc;
    }
    return 0;
}

int npk_opt_parse_kv(const npk_opt *t, size_t n, void *base, const char *text, const char *dev) {
    if (!text || !*text) return 0;
    char *dup = strdup(text);
    unsigned char *seen = calloc(n + 1, 1);
    int rc = 0;
    if (!dup || !seen) rc = npk_err(NPK_ENOMEM, "out of memory");
    char *s = dup;
    while (!rc && s && *s) {
        char *comma = strchr(s, ',');
        if (comma) *comma = 0;
        char *item = s;
        s = comma ? comma + 1 : NULL;
        if (!*item) {
            rc = npk_err(NPK_EINVAL, "%s options '%s': empty item", dev, text);
            break;
        }
        char *eq = strchr(item, '=');
        if (!eq) {
            rc = npk_err(NPK_EINVAL, "%s option '%s': expected key=value", dev, item);
            break;
        }
        *eq = 0;
        const npk_opt *o = NULL;
        for (size_t i = 0; i < n; i++)
            if (!strcmp(t[i].name, item)) o = &t[i];
        if (!o) {
            char known[512];
            size_t k = 0;
            known[0] = 0;
            for (size_t i = 0; i < n && k < sizeof known; i++)
                k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", i ? ", " : "", t[i].name);
            rc = n ? npk_err(NPK_EINVAL, "unknown %s option '%s' (%s options: %s)", dev, item, dev, known)
                   : npk_err(NPK_EINVAL, "unknown %s option '%s' (the %s model takes no options)", dev, item, dev);
            break;
        }
        if (seen[o - t]) {
            rc = npk_err(NPK_EINVAL, "%s option '%s' given twice", dev, item);
            break;
        }
        seen[o - t] = 1;
        char what[160];
        snprintf(what, sizeof what, "%s option %s", dev, item);
        rc = npk_opt_set(o, base, eq + 1, what);
    }
    free(seen);
    free(dup);
    return rc;
}

/* The left column of an entry's help line: "-o, --output FILE", "--flag" or
 * "key=META"; returns its length. */
static size_t help_head(const npk_opt *o, char *head, size_t len) {
    const char *m = o->type == NPK_OPT_FLAG ? "" : npk_opt_meta(o);
    int dash = o->name[0] == '-';
    int short_alias = dash && o->alias && o->alias[0] == '-' && o->alias[1] != '-';
    return (size_t)snprintf(head, len, "%s%s%s%s%s", short_alias ? o->alias : "", short_alias ? ", " : "", o->name,
                            *m ? (dash ? (*m == '[' ? "" : " ") : "=") : "", m);
}

void npk_opt_help(const npk_opt *t, size_t n, FILE *f, int indent) {
    size_t w = 0;
    char head[160];
    for (size_t i = 0; i < n; i++) {
        size_t l = help_head(&t[i], head, sizeof head);
        if (l > w) w = l;
    }
    if (w > 24) w = 24;
    for (size_t i = 0; i < n; i++) {
        size_t l = help_head(&t[i], head, sizeof head);
        int dash = t[i].name[0] == '-';
        int short_alias = dash && t[i].alias && t[i].alias[0] == '-' && t[i].alias[1] != '-';
        fprintf(f, "%*s%s", indent, "", head);
        const char *h = t[i].help ? t[i].help : "";
        int col = indent + (int)w + 2;
        if (l > w) fprintf(f, "\n%*s", col, "");
        else fprintf(f, "%*s", (int)(w - l + 2), "");
        for (const char *p = h; *p; p++) {
            fputc(*p, f);
            if (*p == '\n') fprintf(f, "%*s", col, "");
        }
        if (dash && t[i].alias && !short_alias) { /* other long spellings: " (also --a, --b)" */
            fputs(" (also ", f);
            for (const char *p = t[i].alias; *p; p++) {
                if (*p == ' ') fputs(", ", f);
                else fputc(*p, f);
            }
            fputc(')', f);
        }
        char rng[96];
        int has_rng = (t[i].type == NPK_OPT_U32 || t[i].type == NPK_OPT_U64) ? (t[i].min || t[i].max)
                      : t[i].type == NPK_OPT_F64;
        if (has_rng) range_text(&t[i], rng, sizeof rng);
        const char *rw = has_rng && rng[0] == 'a' ? "" : "range ";
        if (t[i].def && has_rng) fprintf(f, " (default %s, %s%s)", t[i].def, rw, rng);
        else if (t[i].def) fprintf(f, " (default %s)", t[i].def);
        else if (has_rng) fprintf(f, " (%s%s)", rw, rng);
        fputc('\n', f);
    }
}
