// SPDX-License-Identifier: MIT
/*
 * npukit: the pccx v002 LLM NPU, everything a user, tool or test needs: the
 * hardware ABI (npukit/pccx_regs.h: registers declared in
 * npukit/pccx_regs.def, the ISA in npukit/pccx_isa.h), the device model
 * (npukit/pccx_model.h) and the driver and assembler (npukit/pccx_drv.h).
 * Library code includes the precise header.
 */
#ifndef NPUKIT_PCCX_H
#define NPUKIT_PCCX_H

#include "npukit/pccx_drv.h"
#include "npukit/pccx_model.h"
#include "npukit/pccx_regs.h"

#endif /* NPUKIT_PCCX_H */
