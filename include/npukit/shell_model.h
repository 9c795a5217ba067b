// SPDX-License-Identifier: MIT
/*
 * npukit: the shell device model API (src/sim/shell*.c). The model is created
 * through the device table (npukit/sim.h: npk_sim_new("shell", ...)); its
 * registers and descriptor format are npukit/shell_regs.h.
 */
#ifndef NPUKIT_SHELL_MODEL_H
#define NPUKIT_SHELL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/shell_regs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- model introspection (in-process "sim" devices only) -------------------------- */
struct npk_dev;
/* One executed (or failed) descriptor. */
typedef struct npk_shell_log {
    uint64_t addr;        /* guest address of the descriptor */
    uint32_t offset;      /* its ring offset (CQ_HEAD when it was fetched) */
    uint8_t opcode, flags, size;
    uint32_t tag;
    const char *track;    /* "dma", "gemm", "vec" or "fetch" (events, NOOP, failures) */
    uint64_t fetch_cycle; /* when the fetcher read it */
    uint64_t start_cycle, end_cycle; /* execution on its track */
    uint32_t error;       /* SHELL_ERR_* it raised, 0 if none */
    uint64_t macs;        /* multiply-accumulates a GEMM descriptor executed (0 otherwise) */
} npk_shell_log;
typedef void (*npk_shell_log_fn)(void *ctx, const npk_shell_log *e);
/* Call fn for every descriptor the model executes. Returns -NPK_EINVAL if d is
 * not a shell model. */
int npk_shell_sim_set_log(struct npk_dev *d, npk_shell_log_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_SHELL_MODEL_H */
