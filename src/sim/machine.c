// SPDX-License-Identifier: MIT
/* The simulated machine: one device model, its guest memory and its clock. */
#include "npukit/error.h"
#include "npukit/sim.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct npk_sim {
    npk_mem *mem;
    npk_dev *dev;
    const npk_dev_class *cls;
};

npk_sim *npk_sim_new(const char *device, const char *opts) {
    const npk_dev_class *c = npk_dev_class_find(device);
    if (!c) {
        npk_dev_unknown(device);
        return NULL;
    }
    return npk_sim_new_class(c, opts);
}

npk_sim *npk_sim_new_class(const npk_dev_class *c, const char *opts) {
    if (!c || !c->create) {
        npk_err(NPK_EINVAL, "device class without a constructor");
        return NULL;
    }
    npk_sim *s = calloc(1, sizeof *s);
    if (!s) {
        npk_err(NPK_ENOMEM, "out of memory");
        return NULL;
    }
    s->cls = c;
    s->mem = npk_mem_new();
    if (!s->mem) {
        free(s);
        npk_err(NPK_ENOMEM, "out of memory");
        return NULL;
    }
    s->dev = c->create(s->mem, opts);
    if (!s->dev) {
        npk_mem_free(s->mem);
        free(s);
        return NULL;
    }
    s->dev->cls = c;
    s->dev->mem = s->mem;
    if (!s->dev->hz) s->dev->hz = c->hz;
    return s;
}

void npk_sim_free(npk_sim *s) {
    if (!s) return;
    if (s->dev) s->dev->ops->destroy(s->dev);
    npk_mem_free(s->mem);
    free(s);
}

npk_mem *npk_sim_mem(npk_sim *s) { return s->mem; }
npk_dev *npk_sim_dev(npk_sim *s) { return s->dev; }
const npk_dev_class *npk_sim_class(const npk_sim *s) { return s->cls; }

static int in_window(const npk_sim *s, uint64_t addr, unsigned size) {
    return addr >= s->cls->mmio_base && addr - s->cls->mmio_base < s->cls->mmio_size &&
           size <= s->cls->mmio_size - (addr - s->cls->mmio_base);
}

#if defined(__GNUC__)
#define COLD __attribute__((noinline, cold))
#else
#define COLD
#endif

/* npk_sim_read's other cases (every MMIO read but an aligned 32-bit one, and memory), out of
 * line: the driver's status polls take the 32-bit path without this part's stack frame. */
static COLD int sim_read_other(npk_sim *s, uint64_t addr, unsigned size, uint64_t *val) {
    if (in_window(s, addr, size)) {
        uint32_t off = (uint32_t)(addr - s->cls->mmio_base);
        if (size == 8 && !(off & 7)) {
            *val = s->dev->ops->read32(s->dev, off) | (uint64_t)s->dev->ops->read32(s->dev, off + 4) << 32;
            return 0;
        }
        if ((size == 1 || size == 2) && !(off % size)) {
            uint32_t w = s->dev->ops->read32(s->dev, off & ~3u);
            *val = (w >> (8 * (off & 3))) & (size == 1 ? 0xffu : 0xffffu);
            return 0;
        }
        npk_dev_guest_error(s->dev, NPK_GE_WIDTH, off, "read of %u bytes at offset 0x%03x (not naturally aligned)",
                            size, off);
        return npk_err(NPK_EINVAL, "MMIO read of %u bytes at 0x%" PRIx64 " is not a naturally aligned access",
                       size, addr);
    }
    uint8_t b[8] = {0};
    if (size > 8) return npk_err(NPK_EINVAL, "read size %u", size);
    int rc = npk_mem_peek(s->mem, addr, b, size);
    if (rc) return rc;
    uint64_t v = 0;
    for (unsigned i = 0; i < size; i++) v |= (uint64_t)b[i] << (8 * i);
    *val = v;
    return 0;
}

int npk_sim_read(npk_sim *s, uint64_t addr, unsigned size, uint64_t *val) {
    const uint64_t base = s->cls->mmio_base;
    if (size == 4 && addr >= base && !((addr - base) & 3) && addr - base < s->cls->mmio_size &&
        4 <= s->cls->mmio_size - (addr - base)) {
        *val = s->dev->ops->read32(s->dev, (uint32_t)(addr - base));
        return 0;
    }
    return sim_read_other(s, addr, size, val);
}

/* npk_sim_write's other cases, out of line as sim_read_other. */
static COLD int sim_write_other(npk_sim *s, uint64_t addr, unsigned size, uint64_t val) {
    if (in_window(s, addr, size)) {
        uint32_t off = (uint32_t)(addr - s->cls->mmio_base);
        if (size == 4 && !(off & 3)) {
            s->dev->ops->write32(s->dev, off, (uint32_t)val);
            return 0;
        }
        if (size == 8 && !(off & 7)) {
            if (s->dev->ops->write64) {
                s->dev->ops->write64(s->dev, off, val);
            } else {
                s->dev->ops->write32(s->dev, off, (uint32_t)val);
                s->dev->ops->write32(s->dev, off + 4, (uint32_t)(val >> 32));
            }
            return 0;
        }
        npk_dev_guest_error(s->dev, NPK_GE_WIDTH, off,
                            "write of %u bytes at offset 0x%03x (registers take aligned 32/64-bit writes)", size, off);
        return npk_err(NPK_EINVAL, "MMIO write of %u bytes at 0x%" PRIx64 ": registers take aligned 32/64-bit writes",
                       size, addr);
    }
    uint8_t b[8];
    if (size > 8) return npk_err(NPK_EINVAL, "write size %u", size);
    for (unsigned i = 0; i < size; i++) b[i] = (uint8_t)(val >> (8 * i));
    return npk_mem_poke(s->mem, addr, b, size);
}

int npk_sim_write(npk_sim *s, uint64_t addr, unsigned size, uint64_t val) {
    const uint64_t base = s->cls->mmio_base;
    if (size == 8 && s->dev->ops->write64 && addr >= base && !((addr - base) & 7) && addr - base < s->cls->mmio_size &&
        8 <= s->cls->mmio_size - (addr - base)) {
        s->dev->ops->write64(s->dev, (uint32_t)(addr - base), val);
        return 0;
    }
    return sim_write_other(s, addr, size, val);
}

void npk_sim_step(npk_sim *s, uint64_t cycles) {
    if (cycles) s->dev->ops->step(s->dev, cycles);
}

uint64_t npk_dev_quiet(npk_dev *d) {
    uint64_t q = d->ops->quiet ? d->ops->quiet(d) : 1;
    return q ? q : 1;
}

uint64_t npk_sim_run_until_idle(npk_sim *s, uint64_t max_cycles) {
    uint64_t n = 0;
    while (n < max_cycles && !s->dev->ops->idle(s->dev)) {
        uint64_t k = npk_dev_quiet(s->dev);
        if (k > max_cycles - n) k = max_cycles - n;
        s->dev->ops->step(s->dev, k);
        n += k;
    }
    return n;
}

uint64_t npk_sim_cycles(const npk_sim *s) { return s->dev->cycles; }

uint64_t npk_sim_hz(const npk_sim *s) { return npk_dev_hz(s->dev); }

uint64_t npk_sim_ns(const npk_sim *s) {
    uint64_t c = s->dev->cycles, hz = npk_dev_hz(s->dev);
    return (uint64_t)((long double)c * 1e9L / (long double)hz);
}

int npk_sim_irq(const npk_sim *s, int line) {
    if (line < 0 || line >= NPK_MAX_IRQ) return 0;
    return s->dev->irq_level[line];
}

void npk_sim_reset(npk_sim *s) { s->dev->ops->reset(s->dev); }

void npk_sim_set_irq_cb(npk_sim *s, npk_irq_fn fn, void *ctx) {
    s->dev->irq_cb = fn;
    s->dev->irq_ctx = ctx;
}

void npk_sim_dump_regs(npk_sim *s, FILE *f) {
    npk_regfile *rf = s->dev->regs;
    if (!rf) return;
    size_t i = 0;
    for (const npk_reg *r; (r = npk_regfile_next(rf, &i));)
        fprintf(f, "%-22s 0x%03x 0x%08x\n", r->name, r->off, npk_regfile_peek(rf, s->dev, r->off));
}

uint64_t npk_sim_guest_errors(const npk_sim *s, int kind) {
    if (kind >= 0) return kind < NPK_GE_COUNT ? s->dev->guest_errors[kind] : 0;
    uint64_t n = 0;
    for (int k = 0; k < NPK_GE_COUNT; k++) n += s->dev->guest_errors[k];
    return n;
}

void npk_sim_set_guest_log(npk_sim *s, FILE *f) { s->dev->guest_log = f; }
