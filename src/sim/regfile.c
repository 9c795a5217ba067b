// SPDX-License-Identifier: MIT
/* Register tables: masks, W1C bits, read/write hooks, aliasing, peek and
 * guest errors (semantics in include/npukit/sim.h). */
#include "npukit/error.h"
#include "npukit/sim.h"
#include "npukit/trace.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int npk_regfile_init(npk_regfile *rf, const npk_reg *tab, size_t slots, uint32_t span) {
    memset(rf, 0, sizeof *rf);
    if (!span || (span & (span - 1)) || span % 4)
        return npk_err(NPK_EINVAL, "register span %u is not a power of two", span);
    if (slots > span / 4)
        return npk_err(NPK_EINVAL, "register table of %zu words exceeds the %u-byte span", slots, span);
    for (size_t i = 0; i < slots; i++) {
        if (!tab[i].name) continue;
        if (tab[i].off != 4 * i)
            return npk_err(NPK_EINVAL, "register %s at 0x%x sits in table word %zu (misplaced or duplicated)",
                           tab[i].name, tab[i].off, i);
        rf->n++;
    }
    rf->tab = tab;
    rf->slots = slots;
    rf->span = span;
    rf->val = calloc(slots ? slots : 1, sizeof *rf->val);
    if (!rf->val) return npk_err(NPK_ENOMEM, "out of memory");
    npk_regfile_reset(rf);
    return 0;
}

void npk_regfile_fini(npk_regfile *rf) {
    free(rf->val);
    rf->val = NULL;
}

void npk_regfile_reset(npk_regfile *rf) {
    for (size_t i = 0; i < rf->slots; i++) rf->val[i] = rf->tab[i].name ? rf->tab[i].reset : 0;
}

void npk_regfile_reset_dev(npk_regfile *rf, npk_dev *d) {
    for (size_t i = 0; i < rf->slots; i++) {
        const npk_reg *r = &rf->tab[i];
        if (!r->name) continue;
        uint32_t old = rf->val[i];
        rf->val[i] = r->reset;
        if (r->post_write) r->post_write(d, r, old, r->reset);
    }
}

static int lookup(const npk_regfile *rf, uint32_t off) {
    off &= rf->span - 1;
    if (off % 4 || off / 4 >= rf->slots || !rf->tab[off / 4].name) return -1;
    return (int)(off / 4);
}

const npk_reg *npk_regfile_find(const npk_regfile *rf, uint32_t off) {
    int i = lookup(rf, off);
    return i < 0 ? NULL : &rf->tab[i];
}

const npk_reg *npk_regfile_next(const npk_regfile *rf, size_t *i) {
    while (*i < rf->slots) {
        const npk_reg *r = &rf->tab[(*i)++];
        if (r->name) return r;
    }
    return NULL;
}

uint32_t *npk_regfile_slot(npk_regfile *rf, uint32_t off) {
    int i = lookup(rf, off);
    return i < 0 ? NULL : &rf->val[i];
}

static uint32_t value(const npk_regfile *rf, npk_dev *d, int i) {
    const npk_reg *r = &rf->tab[i];
    return r->read ? r->read(d, r, rf->val[i]) : rf->val[i];
}

uint32_t npk_regfile_peek(const npk_regfile *rf, npk_dev *d, uint32_t off) {
    int i = lookup(rf, off);
    return i < 0 ? 0 : value(rf, d, i);
}

#if defined(__GNUC__)
__attribute__((noinline, cold))
#endif
static uint32_t read_unknown(npk_dev *d, uint32_t off) {
    npk_dev_guest_error(d, NPK_GE_UNKNOWN_OFFSET, off, "read of offset 0x%03x, where no register is (reads 0)", off);
    return 0;
}

uint32_t npk_regfile_read(npk_regfile *rf, npk_dev *d, uint32_t off) {
    int i = lookup(rf, off);
    if (i < 0) return read_unknown(d, off);
    const npk_reg *r = &rf->tab[i];
    if (!r->post_read) return r->read ? r->read(d, r, rf->val[i]) : rf->val[i]; /* value(), as a tail call */
    uint32_t v = value(rf, d, i);
    r->post_read(d, r, v);
    return v;
}

void npk_regfile_write(npk_regfile *rf, npk_dev *d, uint32_t off, uint32_t val) {
    int i = lookup(rf, off);
    if (i < 0) {
        npk_dev_guest_error(d, NPK_GE_UNKNOWN_OFFSET, off,
                            "write of 0x%08" PRIx32 " to offset 0x%03x, where no register is (ignored)", val, off);
        return;
    }
    const npk_reg *r = &rf->tab[i];
    uint32_t old = rf->val[i];
    if (d && r->ro) {
        /* A read-only register: any value but the one it reads. A register
         * with some read-only bits: a 1 written to a read-only bit reading 0
         * (writing back what was read, or 0, is fine). */
        uint32_t cur = value(rf, d, i);
        uint32_t bad = r->ro == 0xffffffffu ? val ^ cur : val & ~cur & r->ro;
        if (bad)
            npk_dev_guest_error(d, NPK_GE_READ_ONLY, r->off,
                                "write of 0x%08" PRIx32 " to %s changes read-only bits 0x%08" PRIx32
                                " (it reads 0x%08" PRIx32 "; ignored)",
                                val, r->name, bad, cur);
    }
    if (val & r->rsv)
        npk_dev_guest_error(d, NPK_GE_RESERVED, r->off,
                            "write of 0x%08" PRIx32 " to %s sets reserved bits 0x%08" PRIx32 " (ignored)", val,
                            r->name, val & r->rsv);
    uint32_t next = (val & ~(r->ro | r->w1c | r->rsv)) | (old & r->ro) | (old & r->w1c & ~val);
    if (r->pre_write) next = r->pre_write(d, r, old, val, next);
    rf->val[i] = next;
    if (r->post_write) r->post_write(d, r, old, val);
}

/* ---- guest errors ------------------------------------------------------------ */

static const char *const ge_names[NPK_GE_COUNT] = {"unknown-offset", "read-only", "reserved", "width"};

const char *npk_guest_error_name(npk_guest_error kind) {
    return (unsigned)kind < NPK_GE_COUNT ? ge_names[kind] : "?";
}

void npk_dev_guest_error(npk_dev *d, npk_guest_error kind, uint32_t off, const char *fmt, ...) {
    if (!d || (unsigned)kind >= NPK_GE_COUNT) return;
    d->guest_errors[kind]++;
    if (!d->trace && !d->guest_log) return;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *dev = d->cls ? d->cls->name : "device";
    if (d->guest_log) {
        fprintf(d->guest_log, "npu: %s: guest error (%s) at cycle %" PRIu64 ": %s\n", dev, ge_names[kind],
                d->cycles, msg);
        fflush(d->guest_log);
    }
    if (d->trace) {
        char args[320];
        /* msg holds no quotes or backslashes (register names and numbers only) */
        snprintf(args, sizeof args, "\"offset\":%u,\"kind\":\"%s\",\"message\":\"%s\"", off, ge_names[kind], msg);
        npk_trace_complete(d->trace, dev, "guest errors", ge_names[kind], d->cycles, 0, args);
    }
}

void npk_dev_set_irq(npk_dev *d, int line, int level) {
    if (line < 0 || line >= NPK_MAX_IRQ) return;
    level = !!level;
    if (d->irq_level[line] == level) return;
    d->irq_level[line] = level;
    if (d->irq_cb) d->irq_cb(d->irq_ctx, line, level);
}

uint64_t npk_dev_hz(const npk_dev *d) { return d->hz ? d->hz : d->cls ? d->cls->hz : 0; }
