// SPDX-License-Identifier: MIT
/*
 * npukit: the e1 device model API (src/sim/e1.c). The model is created
 * through the device table (npukit/sim.h: npk_sim_new("e1", ...)); its
 * registers are npukit/e1_regs.h.
 */
#ifndef NPUKIT_E1_MODEL_H
#define NPUKIT_E1_MODEL_H

#include "npukit/e1_regs.h"
#include "npukit/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The e1 device class (one row of the device table). */
extern const npk_dev_class npk_e1_class;

#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_E1_MODEL_H */
