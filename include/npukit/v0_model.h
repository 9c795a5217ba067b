// SPDX-License-Identifier: MIT
/*
 * npukit: the v0 device model API (src/sim/v0*.c). The model is created
 * through the device table (npukit/sim.h: npk_sim_new("v0", ...)); its
 * registers and descriptor codec are npukit/v0_regs.h.
 */
#ifndef NPUKIT_V0_MODEL_H
#define NPUKIT_V0_MODEL_H

#include "npukit/sim.h"
#include "npukit/v0_regs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The v0 device class (one row of the device table). */
extern const npk_dev_class npk_v0_class;

#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_V0_MODEL_H */
