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

#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_PCCX_MODEL_H */
