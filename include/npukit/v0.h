// SPDX-License-Identifier: MIT
/*
 * npukit: the v0 NPU, everything a user, tool or test needs: the hardware
 * ABI (npukit/v0_regs.h, registers declared in npukit/v0_regs.def), the
 * device model (npukit/v0_model.h) and the driver (npukit/v0_drv.h).
 * Library code includes the precise header instead.
 */
#ifndef NPUKIT_V0_H
#define NPUKIT_V0_H

#include "npukit/v0_drv.h"
#include "npukit/v0_model.h"
#include "npukit/v0_regs.h"

#endif /* NPUKIT_V0_H */
