// SPDX-License-Identifier: MIT
/* Minimal test assertions: each failing check prints file:line and the values. */
#ifndef NPUKIT_TESTS_CHECK_H
#define NPUKIT_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "npukit/cpu.h"

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        check_count++;                                                               \
        if (!(cond)) {                                                               \
            check_failures++;                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_EQ(a, b)                                                                                   \
    do {                                                                                                 \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                                  \
        check_count++;                                                                                   \
        if (check_a_ != check_b_) {                                                                      \
            check_failures++;                                                                            \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (0x%llx vs 0x%llx, %lld vs %lld)\n",       \
                    __FILE__, __LINE__, #a, #b, (unsigned long long)check_a_, (unsigned long long)check_b_, \
                    check_a_, check_b_);                                                                 \
        }                                                                                                \
    } while (0)

#define CHECK_STR(a, b)                                                                                     \
    do {                                                                                                    \
        const char *check_a_ = (a), *check_b_ = (b);                                                        \
        check_count++;                                                                                      \
        if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_)) {                                         \
            check_failures++;                                                                               \
            fprintf(stderr, "%s:%d: CHECK_STR failed: \"%s\" vs \"%s\"\n", __FILE__, __LINE__,              \
                    check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)");                         \
        }                                                                                                   \
    } while (0)

/* Runs the statement after it once per instruction-set level this host has
 * (include/npukit/cpu.h: c, avx2, avx512, avx512vnni), forced in turn with
 * npk_isa_force, so every variant of every kernel module meets its golden; the
 * caller restores npk_isa_force(NPK_ISA_AUTO) after. */
#define FOR_EACH_ISA(l) \
    for (int l = NPK_ISA_C; l < NPK_ISA_COUNT; l++) \
        if (npk_isa_force((npk_isa)l) == 0)

/* End of main: prints a summary and returns the exit code. */
#define CHECK_DONE()                                                                            \
    (fprintf(stderr, "%d checks, %d failed\n", check_count, check_failures), check_failures ? 1 : 0)

#endif
