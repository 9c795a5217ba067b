// SPDX-License-Identifier: MIT
/* npukit base: growable arrays and a growable text buffer. */
#include "npukit/strbuf.h"
#include "npukit/error.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int npk_grow(void *pp, size_t *cap, size_t need, size_t elem, size_t first) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : (first ? first : 1);
    while (nc < need) {
        if (nc > SIZE_MAX / 2) return npk_err(NPK_ENOMEM, "out of memory");
        nc *= 2;
    }
    if (nc > SIZE_MAX / elem) return npk_err(NPK_ENOMEM, "out of memory");
    void *p;
    memcpy(&p, pp, sizeof p);
    void *np = realloc(p, nc * elem);
    if (!np) return npk_err(NPK_ENOMEM, "out of memory");
    memcpy(pp, &np, sizeof np);
    *cap = nc;
    return 0;
}

void npk_strbuf_printf(npk_strbuf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = 1;
            return;
        }
        if (b->p && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t nc = b->cap ? b->cap * 2 : 4096;
        while (nc < b->n + (size_t)k + 1) nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
}

void npk_json_fputs(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

int npk_write_file(const char *path, const char *what, int (*write)(const void *obj, FILE *f), const void *obj) {
    FILE *f = fopen(path, "w");
    if (!f) return npk_err(NPK_EIO, "cannot open %s file '%s' for writing", what, path);
    int rc = write(obj, f);
    if (fclose(f) && !rc) rc = npk_err(NPK_EIO, "writing %s file '%s' failed", what, path);
    return rc;
}
