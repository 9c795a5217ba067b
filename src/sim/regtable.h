// SPDX-License-Identifier: MIT
/* A model's register table, expanded from its register declaration
 * (docs/architecture.md, "Registers"): the table index is the word offset,
 * [OFFSET / 4] = {...}, so a duplicate offset is an initializer override
 * (an error with -Werror) and npk_regfile_init checks entry i has offset 4*i.
 *
 *   #define NPK_REGTABLE_DEF "npukit/v0_regs.def"
 *   #include "sim/regtable.h"          -> static const npk_reg regs[] = {...};
 *
 * Optional: NPK_REGTABLE_NAME (default regs), NPK_REGTABLE_SLOTS (default:
 * up to the last register). Included once per model, after its hooks. */
#ifndef NPK_REGTABLE_NAME
#define NPK_REGTABLE_NAME regs
#endif
#ifndef NPK_REGTABLE_SLOTS
#define NPK_REGTABLE_SLOTS
#endif
static const npk_reg NPK_REGTABLE_NAME[NPK_REGTABLE_SLOTS] = {
#define NPK_REG32(name, off, reset, ro, w1c, rsv, rd, prd, pre, post) \
    [(off) / 4] = {(off), #name, (reset), (ro), (w1c), (rsv), rd, prd, pre, post},
#define NPK_FIELD(reg, field, shift, width)
#include NPK_REGTABLE_DEF
#undef NPK_REG32
#undef NPK_FIELD
};
#undef NPK_REGTABLE_NAME
#undef NPK_REGTABLE_SLOTS
#undef NPK_REGTABLE_DEF
