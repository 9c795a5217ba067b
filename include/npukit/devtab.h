// SPDX-License-Identifier: MIT
/*
 * The device table, driver level: per device (one line of
 * include/npukit/devices.def) the facts drivers and tools share beyond the
 * model's npk_dev_class (include/npukit/sim.h).
 */
#ifndef NPUKIT_DEVTAB_H
#define NPUKIT_DEVTAB_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npk_dev_rt {
    const npk_dev_class *model; /* the model-level row */
    /* Command-stream text form for npu asm/disasm; NULL format = none. Both
     * return 0 or a negative npk_status naming the line or byte at fault. */
    const char *stream_format;
    int (*assemble)(const char *text, uint8_t **bin, size_t *len);
    int (*disassemble)(const uint8_t *bin, size_t len, char **text);
} npk_dev_rt;

/* Every device in devices.def order; find by name (NULL if unknown). */
const npk_dev_rt *const *npk_dev_rts(size_t *n);
const npk_dev_rt *npk_dev_rt_find(const char *name);
/* "v0, shell, pccx": the devices with a command-stream format. */
const char *npk_dev_stream_names(void);

#ifdef __cplusplus
}
#endif
#endif
