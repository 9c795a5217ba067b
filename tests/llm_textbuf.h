// SPDX-License-Identifier: MIT
/* A growing text buffer for the LLM tests: npk_llm_generate's emit callback
 * appends each printed piece, as `npu llm` prints it. */
#ifndef NPUKIT_TESTS_LLM_TEXTBUF_H
#define NPUKIT_TESTS_LLM_TEXTBUF_H

#include <stdlib.h>
#include <string.h>

typedef struct buf {
    char *s;
    size_t n, cap;
} buf;

static void emit(const char *piece, void *user) {
    buf *b = user;
    size_t l = strlen(piece);
    if (b->n + l + 1 > b->cap) {
        b->cap = (b->n + l + 1) * 2;
        char *s = realloc(b->s, b->cap);
        if (!s) abort();
        b->s = s;
    }
    memcpy(b->s + b->n, piece, l + 1);
    b->n += l;
}

#endif
