// SPDX-License-Identifier: MIT
/* The text loop the command-stream assemblers share (src/rt/asm_text.h). */
#include "asm_text.h"
#include "npukit/error.h"
#include "npukit/strbuf.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int npk_asm_text(const char *text, const char *comment, npk_asm_line_fn line, uint8_t **bin, size_t *len) {
    *bin = NULL;
    *len = 0;
    size_t cap = 0, n = 0;
    uint8_t *out = NULL;
    char *buf = NULL;
    int rc = 0, lineno = 0;
    for (const char *p = text; *p && !rc;) {
        size_t l = strcspn(p, "\n");
        lineno++;
        char *nb = realloc(buf, l + 1);
        if (!nb) {
            rc = npk_err(NPK_ENOMEM, "out of memory");
            break;
        }
        buf = nb;
        memcpy(buf, p, l);
        buf[l] = 0;
        buf[strcspn(buf, comment)] = 0;
        const char *s = buf;
        while (isspace((unsigned char)*s)) s++;
        p += l + (p[l] == '\n');
        if (!*s) continue;
        uint8_t rec[NPK_ASM_REC_MAX];
        size_t rl = 0;
        if (!(rc = line(buf, lineno, rec, &rl)) && rl && !(rc = npk_grow(&out, &cap, n + rl, 1, 1024))) {
            memcpy(out + n, rec, rl);
            n += rl;
        }
    }
    free(buf);
    if (!rc && !out && !(out = malloc(1))) rc = npk_err(NPK_ENOMEM, "out of memory");
    if (rc) {
        free(out);
        return rc;
    }
    *bin = out;
    *len = n;
    return 0;
}
