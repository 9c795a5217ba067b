// SPDX-License-Identifier: MIT
/* Internal: what the v0 lowerings (src/ops/v0_lower.c) use of the v0
 * driver beyond its public API: the e1 attached for routing, the route
 * note and strided row copies to and from guest memory. */
#ifndef NPUKIT_RT_V0_OPS_H
#define NPUKIT_RT_V0_OPS_H

#include "npukit/v0_drv.h"

/* The e1 driver attached with npk_v0_set_e1 (NULL if none). */
struct npk_e1 *npk_v0_route_e1(const npk_v0 *v);

/* Record where a high-level operator ran (npk_v0_last_route); E1 and CPU
 * also count in the stats (routed_e1, routed_cpu). */
typedef enum npk_v0_route { NPK_V0_ROUTE_DEVICE, NPK_V0_ROUTE_E1, NPK_V0_ROUTE_CPU } npk_v0_route;
void npk_v0_note_route(npk_v0 *v, npk_v0_route how, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* rows x rowbytes between host memory (packed) and guest memory at base with stride. */
int npk_v0_get_rows(npk_port *p, uint64_t base, uint64_t stride, uint64_t rows, uint64_t rowbytes, void *dst);
int npk_v0_put_rows(npk_port *p, uint64_t base, uint64_t stride, uint64_t rows, uint64_t rowbytes, const void *src);

#endif
