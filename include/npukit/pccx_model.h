// SPDX-License-Identifier: MIT
/*
 * npukit: the pccx device model API (src/sim/pccx.c). The model is created
 * through the device table (npukit/sim.h: npk_sim_new("pccx", ...)); its ISA
 * and registers are npukit/pccx_regs.h.
 */
#ifndef NPUKIT_PCCX_MODEL_H
#define NPUKIT_PCCX_MODEL_H

#include "npukit/pccx_regs.h"
#include "npukit/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The pccx device class (one row of the device table). */
extern const npk_dev_class npk_pccx_class;

/* The model's weight cache (docs/pccx.md section 8; host memory only, never
 * visible to the guest): prepared records held, their host bytes (at most the
 * option max_wcache), and since creation the records evicted to make room,
 * and the GEMV/GEMM instructions that found their record (hits) or prepared
 * it (misses). All zero for a device that is not pccx. */
typedef struct npk_pccx_wcache {
    uint64_t records, bytes, evictions, hits, misses;
} npk_pccx_wcache;
void npk_pccx_wcache_get(const npk_dev *d, npk_pccx_wcache *s);

#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_PCCX_MODEL_H */
