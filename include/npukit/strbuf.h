/* npukit base: a growable text buffer (listings, reports, plans). */
#ifndef NPUKIT_STRBUF_H
#define NPUKIT_STRBUF_H

#include <stddef.h>

typedef struct npk_strbuf {
    char *p;     /* NUL-terminated text (malloc'ed; NULL before the first append) */
    size_t n;    /* length */
    size_t cap;
    int oom;     /* set when an append failed for lack of memory (later appends are dropped) */
} npk_strbuf;

/* Append printf-formatted text. */
void npk_strbuf_printf(npk_strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
