// SPDX-License-Identifier: MIT
/*
 * npukit: the NPU shell, everything a user, tool or test needs: the hardware
 * ABI (npukit/shell_regs.h, registers declared in npukit/shell_regs.def,
 * descriptors in npukit/shell_desc.h), the device model (npukit/shell_model.h)
 * and the driver, assembler and schedule mapper (npukit/shell_drv.h).
 * Library code includes the precise header.
 */
#ifndef NPUKIT_SHELL_H
#define NPUKIT_SHELL_H

#include "npukit/shell_drv.h"
#include "npukit/shell_model.h"
#include "npukit/shell_regs.h"

#endif /* NPUKIT_SHELL_H */
