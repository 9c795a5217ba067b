// SPDX-License-Identifier: MIT
/* The text loop the command-stream assemblers share (v0_asm.c, shell_asm.c, pccx_asm.c). */
#ifndef NPUKIT_RT_ASM_TEXT_H
#define NPUKIT_RT_ASM_TEXT_H

#include <stddef.h>
#include <stdint.h>

#define NPK_ASM_REC_MAX 128 /* the largest record one line assembles to */

/* Assemble one line (NUL-terminated, its comment cut off, not blank) numbered lineno into rec:
 * set *n (<= NPK_ASM_REC_MAX) bytes, or return an error naming the line. */
typedef int (*npk_asm_line_fn)(char *line, int lineno, uint8_t *rec, size_t *n);

/* Split text into lines (numbered from 1), cut each at the first character of `comment`, skip
 * the lines left blank, assemble the others with line and put their records end to end into
 * *bin (malloc'ed, not NULL even when empty) of *len bytes. On an error nothing is returned. */
int npk_asm_text(const char *text, const char *comment, npk_asm_line_fn line, uint8_t **bin, size_t *len);

#endif
