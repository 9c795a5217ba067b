// SPDX-License-Identifier: MIT
/*
 * npukit: the e1 NPU, everything a user, tool or test needs: the hardware
 * ABI (npukit/e1_regs.h, registers declared in npukit/e1_regs.def), the
 * device model (npukit/e1_model.h) and the driver (npukit/e1_drv.h).
 * Library code includes the precise header instead.
 */
#ifndef NPUKIT_E1_H
#define NPUKIT_E1_H

#include "npukit/e1_drv.h"
#include "npukit/e1_model.h"
#include "npukit/e1_regs.h"

#endif /* NPUKIT_E1_H */
