// SPDX-License-Identifier: MIT
/* The device table, driver level: one npk_dev_rt per line of
 * include/npukit/devices.def (each defined beside its driver). */
#include "npukit/devtab.h"

#include <stdio.h>
#include <string.h>

#define NPK_DEVICE(d) extern const npk_dev_rt npk_##d##_rt;
#include "npukit/devices.def"

static const npk_dev_rt *const rows[] = {
#define NPK_DEVICE(d) &npk_##d##_rt,
#include "npukit/devices.def"
};

const npk_dev_rt *const *npk_dev_rts(size_t *n) {
    *n = sizeof rows / sizeof rows[0];
    return rows;
}

const npk_dev_rt *npk_dev_rt_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (!strcmp(rows[i]->model->name, name)) return rows[i];
    return NULL;
}

const char *npk_dev_stream_names(void) {
    static char buf[256];
    if (!buf[0]) {
        size_t k = 0;
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            if (rows[i]->stream_format)
                k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s", k ? ", " : "", rows[i]->model->name);
    }
    return buf;
}
