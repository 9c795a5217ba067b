/* Register tables: masked writes, W1C bits, read/write hooks, aliasing. */
#include "npukit/error.h"
#include "npukit/sim.h"

#include <stdlib.h>
#include <string.h>

int npk_regfile_init(npk_regfile *rf, const npk_reg *tab, size_t n, uint32_t span) {
    memset(rf, 0, sizeof *rf);
    if (!span || (span & (span - 1)) || span % 4)
        return npk_err(NPK_EINVAL, "register span %u is not a power of two", span);
    rf->tab = tab;
    rf->n = n;
    rf->span = span;
    rf->val = calloc(n ? n : 1, sizeof *rf->val);
    rf->index = malloc((span / 4) * sizeof *rf->index);
    if (!rf->val || !rf->index) {
        npk_regfile_fini(rf);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < span / 4; i++) rf->index[i] = -1;
    for (size_t i = 0; i < n; i++) {
        if (tab[i].off >= span || tab[i].off % 4 || rf->index[tab[i].off / 4] >= 0) {
            int rc = npk_err(NPK_EINVAL, "register %s at 0x%x is outside the window, misaligned or duplicated",
                             tab[i].name, tab[i].off);
            npk_regfile_fini(rf);
            return rc;
        }
        rf->index[tab[i].off / 4] = (int16_t)i;
    }
    npk_regfile_reset(rf);
    return 0;
}

void npk_regfile_fini(npk_regfile *rf) {
    free(rf->val);
    free(rf->index);
    rf->val = NULL;
    rf->index = NULL;
}

void npk_regfile_reset(npk_regfile *rf) {
    for (size_t i = 0; i < rf->n; i++) rf->val[i] = rf->tab[i].reset;
}

static int lookup(const npk_regfile *rf, uint32_t off) {
    off &= rf->span - 1;
    if (off % 4) return -1;
    return rf->index[off / 4];
}

const npk_reg *npk_regfile_find(const npk_regfile *rf, uint32_t off) {
    int i = lookup(rf, off);
    return i < 0 ? NULL : &rf->tab[i];
}

uint32_t *npk_regfile_slot(npk_regfile *rf, uint32_t off) {
    int i = lookup(rf, off);
    return i < 0 ? NULL : &rf->val[i];
}

uint32_t npk_regfile_read(npk_regfile *rf, npk_dev *d, uint32_t off) {
    int i = lookup(rf, off);
    if (i < 0) return 0;
    const npk_reg *r = &rf->tab[i];
    return r->read ? r->read(d, r, rf->val[i]) : rf->val[i];
}

void npk_regfile_write(npk_regfile *rf, npk_dev *d, uint32_t off, uint32_t val) {
    int i = lookup(rf, off);
    if (i < 0) return;
    const npk_reg *r = &rf->tab[i];
    uint32_t old = rf->val[i];
    uint32_t v = (old & ~r->wmask) | (val & r->wmask);
    v &= ~(val & r->w1cmask);
    rf->val[i] = v;
    if (r->write) r->write(d, r, old, val);
}

void npk_dev_set_irq(npk_dev *d, int line, int level) {
    if (line < 0 || line >= NPK_MAX_IRQ) return;
    level = !!level;
    if (d->irq_level[line] == level) return;
    d->irq_level[line] = level;
    if (d->irq_cb) d->irq_cb(d->irq_ctx, line, level);
}
