// SPDX-License-Identifier: MIT
/* The e1 driver: replay of a prepared host runtime sequence (a compiled
 * package's GEMM preamble, descriptor memory, submission and DESC_STATUS
 * poll), through the port like every other driver request. */
#include "npukit/e1_drv.h"
#include "npukit/job.h"

#include <inttypes.h>

static int allowed(uint32_t reg) {
    switch (reg) {
    case E1_REG_GEMM_CFG: case E1_REG_GEMM_BASE: case E1_REG_GEMM_STRIDE: case E1_REG_DESC_BASE:
    case E1_REG_DESC_HEAD: case E1_REG_DESC_TAIL: case E1_REG_CMD_PARAM: case E1_REG_CTRL_STATUS: return 1;
    default: return 0;
    }
}

static int writes(npk_e1 *e, const npk_e1_reg_write *w, unsigned n, const char *what) {
    npk_port *p = npk_e1_port(e);
    for (unsigned i = 0; i < n; i++) {
        if (!allowed(w[i].reg))
            return npk_err(NPK_EINVAL, "e1 replay: %s write %u targets register 0x%02x, outside the runtime MMIO contract",
                           what, i, w[i].reg);
        int rc = npk_port_write32(p, w[i].reg, w[i].value);
        if (rc) return npk_err_prefix(rc, "e1 replay: %s write %u (register 0x%02x)", what, i, w[i].reg);
    }
    return 0;
}

struct pctx {
    npk_e1 *e;
    uint32_t *ds;
};
static int poll_ds(void *ctx, npk_poll *pl) {
    struct pctx *c = ctx;
    (void)pl;
    int rc = npk_port_read32(npk_e1_port(c->e), E1_REG_DESC_STATUS, c->ds);
    if (rc) return npk_err_prefix(rc, "e1 replay: reading DESC_STATUS");
    return !e1_ds_busy(*c->ds) && (*c->ds & (E1_DS_DONE | E1_DS_ERROR_BIT)) ? NPK_POLL_DONE : NPK_POLL_BUSY;
}

static int replay_impl(npk_e1 *e, const npk_e1_reg_write *pre, unsigned npre, const npk_e1_mem_write *mem,
                       unsigned nmem, const npk_e1_reg_write *sub, unsigned nsub, uint32_t *desc_status) {
    npk_port *p = npk_e1_port(e);
    npk_e1_forget_registers(e);
    int rc = writes(e, pre, npre, "preamble");
    for (unsigned i = 0; !rc && i < nmem; i++) {
        uint8_t b[4] = {(uint8_t)mem[i].value, (uint8_t)(mem[i].value >> 8), (uint8_t)(mem[i].value >> 16),
                        (uint8_t)(mem[i].value >> 24)};
        rc = npk_port_mem_write(p, mem[i].addr, b, 4);
        if (rc) rc = npk_err_prefix(rc, "e1 replay: descriptor memory write %u (0x%" PRIx64 ")", i, mem[i].addr);
    }
    if (!rc) rc = writes(e, sub, nsub, "submission");
    /* the completion poll (the common poll loop): DESC_STATUS done or an error, not busy */
    uint32_t ds = 0;
    if (!rc) {
        npk_poll pl = {.budget = npk_e1_timeout(e), .step = 1, .max_step = 64, .what = "e1 replay: waiting"};
        rc = npk_poll_run(p, &pl, poll_ds, &(struct pctx){e, &ds});
        if (rc == -NPK_ETIMEDOUT && pl.expired) {
            npk_e1_recover(e);
            rc = npk_err(NPK_ETIMEDOUT, "e1 replay: DESC_STATUS 0x%x still without done after %" PRIu64 " cycles", ds,
                         pl.waited);
        }
    }
    npk_e1_forget_registers(e);
    if (desc_status) *desc_status = ds;
    if (!rc && (ds & E1_DS_ERROR_BIT)) {
        uint32_t code = e1_ds_code(ds);
        npk_port_job_code(p, ds);
        npk_port_write32(p, E1_REG_CTRL_STATUS, E1_CTRL_CLEAR);
        rc = npk_err(NPK_EDEVICE, "e1 replay: descriptor %u: %s (DESC_STATUS 0x%x)", e1_ds_err_index(ds),
                     npk_e1_desc_status_text(code), ds);
    }
    return rc;
}

int npk_e1_replay(npk_e1 *e, const npk_e1_reg_write *pre, unsigned npre, const npk_e1_mem_write *mem, unsigned nmem,
                  const npk_e1_reg_write *sub, unsigned nsub, uint32_t *desc_status) {
    npk_job j;
    npk_job_begin(&j, npk_e1_port(e), "runtime", "package replay");
    npk_job_args(&j, "\"descriptors\":%u", nmem / 4);
    return npk_job_end(&j, replay_impl(e, pre, npre, mem, nmem, sub, nsub, desc_status));
}
