// SPDX-License-Identifier: MIT
/* npukit base: growable arrays and a growable text buffer (listings, reports, plans), and the
 * JSON/file output helpers every writer of traces, reports and benchmarks shares. */
#ifndef NPUKIT_STRBUF_H
#define NPUKIT_STRBUF_H

#include <stddef.h>
#include <stdio.h>

typedef struct npk_strbuf {
    char *p;     /* NUL-terminated text (malloc'ed; NULL before the first append) */
    size_t n;    /* length */
    size_t cap;
    int oom;     /* set when an append failed for lack of memory (later appends are dropped) */
} npk_strbuf;

/* Make room for `need` elements of `elem` bytes in the malloc'ed array whose address is at pp
 * (any T **: the array pointer is read and written through memcpy) holding *cap elements: the
 * capacity doubles, from `first` when the array is empty, until it holds `need`. Returns 0 (the
 * array moved or not), or -NPK_ENOMEM with "out of memory" leaving the array and *cap as they were. */
int npk_grow(void *pp, size_t *cap, size_t need, size_t elem, size_t first);

/* Append printf-formatted text. */
void npk_strbuf_printf(npk_strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Write s as a JSON string literal: quotes, with '"' and '\\' escaped and control characters
 * as \u00XX (NULL writes ""). */
void npk_json_fputs(FILE *f, const char *s);

/* Create (truncate) the file at path, call write(obj, f), close it. Errors name the file and
 * `what` ("trace", "report", ...): -NPK_EIO when it cannot be opened or written, else the
 * writer's own error. */
int npk_write_file(const char *path, const char *what, int (*write)(const void *obj, FILE *f), const void *obj);

#endif
