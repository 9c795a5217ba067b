// SPDX-License-Identifier: MIT
/* The port table: one npk_port_backend per line of src/rt/ports.def (each
 * defined beside its backend). */
#include "port.h"

#include <stdio.h>

#define NPK_PORT(n) extern const npk_port_backend npk_##n##_port;
#include "ports.def"

static const npk_port_backend *const rows[] = {
#define NPK_PORT(n) &npk_##n##_port,
#include "ports.def"
};

static const npk_port_info *const infos[] = {
#define NPK_PORT(n) &npk_##n##_port.info,
#include "ports.def"
};

#define N_ROWS (sizeof rows / sizeof rows[0])

const npk_port_backend *const *npk_port_rows(size_t *n) {
    *n = N_ROWS;
    return rows;
}

const npk_port_info *const *npk_port_infos(size_t *n) {
    *n = N_ROWS;
    return infos;
}

const char *npk_port_specs(void) {
    static char buf[512];
    if (!buf[0]) {
        size_t k = 0;
        for (size_t i = 0; i < N_ROWS && k < sizeof buf; i++)
            k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s", i ? (i + 1 < N_ROWS ? ", " : " or ") : "",
                                  rows[i]->info.syntax);
    }
    return buf;
}
