// SPDX-License-Identifier: MIT
/*
 * Typed option tables: one descriptor, one value parser and one help generator
 * for device model options ("key=value,key=value", see npk_dev_class.opts) and
 * for the npu command-line flags (src/tools/cli.c parses argv with the same
 * tables).
 *
 * A table is an array of npk_opt; each entry names a value at an offset in a
 * caller's struct. Numbers parse like strtoull/strtod with base 0 and must use
 * the whole string; a value outside [min, max] is refused with a message that
 * says "out of range" and echoes the value as written. Device options take
 * their defaults from the table (npk_opt_defaults), so `npu devices` and the
 * model never disagree about a default.
 */
#ifndef NPUKIT_OPT_H
#define NPUKIT_OPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum npk_opt_type {
    NPK_OPT_FLAG, /* int set to 1; a command-line flag without a value */
    NPK_OPT_BOOL, /* int: 0 or 1 */
    NPK_OPT_U32,  /* uint32_t in [min, max] */
    NPK_OPT_U64,  /* uint64_t in [min, max] */
    NPK_OPT_F64,  /* double in [fmin, fmax] (fmin excluded when min_excl) */
    NPK_OPT_STR,  /* const char *, pointing into the parsed text (argv) */
    NPK_OPT_LIST, /* npk_strlist: repeatable, every value appended */
} npk_opt_type;

/* Values of a repeatable option; v is malloc'd (free it with npk_strlist_free). */
typedef struct npk_strlist {
    const char **v;
    size_t n, cap;
} npk_strlist;
void npk_strlist_free(npk_strlist *l);

typedef struct npk_opt {
    const char *name;  /* "dram_bw", or "--device" for a command-line flag */
    const char *alias; /* another accepted spelling ("-o", an old flag name), or NULL */
    npk_opt_type type;
    size_t off;        /* offset of the value in the caller's struct */
    const char *def;   /* default, as text (help; npk_opt_defaults applies it) */
    uint64_t min, max; /* integer range (inclusive); 0, 0 = the type's whole range */
    double fmin, fmax; /* float range */
    int min_excl;      /* F64: fmin itself is not allowed */
    const char *meta;  /* value placeholder in help ("N", "FILE"); NULL = derived from the type */
    const char *help;  /* one line (may contain '\n' for more) */
    size_t given_off;  /* offset + 1 of an int set to 1 when the option is given (0 = none) */
} npk_opt;

/* Parse one value into base. what names the option in messages ("v0 option
 * dram_bw", "--steps"). Returns 0 or NPK_EINVAL with npk_errmsg set. */
int npk_opt_set(const npk_opt *o, void *base, const char *val, const char *what);
/* Apply every entry's default (entries without one are left alone). */
int npk_opt_defaults(const npk_opt *t, size_t n, void *base);
/* Entry named name (or by its alias), or NULL. */
const npk_opt *npk_opt_find(const npk_opt *t, size_t n, const char *name);
/* Parse "key=value[,key=value...]" (NULL or "" = nothing) onto base. dev names
 * the owner in messages ("v0"). Unknown keys, keys given twice, items without
 * '=' and bad values are refused. */
int npk_opt_parse_kv(const npk_opt *t, size_t n, void *base, const char *text, const char *dev);
/* Help: one entry per line (continuations aligned), indented by indent
 * spaces: "name=META  help (default D, range LO..HI)". */
void npk_opt_help(const npk_opt *t, size_t n, FILE *f, int indent);
/* The placeholder shown for an entry's value ("N", "X", "0|1", "S"). */
const char *npk_opt_meta(const npk_opt *o);

#ifdef __cplusplus
}
#endif
#endif
