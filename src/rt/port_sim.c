// SPDX-License-Identifier: MIT
/* Port backend: the in-process device model. */
#include "port.h"

#include <string.h>

/* The register accesses a driver makes (aligned, inside the window) go to the device's ops
 * directly, as npk_sim_read/npk_sim_write's own fast paths would send them (p->impl is the
 * device, set at open); anything else takes the machine's checks. The drivers' status polls
 * and instruction writes are most of a pccx decode's host work outside the model. */
static inline int sim_reg(const npk_port *p, uint32_t off, uint32_t size) {
    return !(off & (size - 1)) && off < p->cls->mmio_size && size <= p->cls->mmio_size - off;
}

static int sim_read32(npk_port *p, uint32_t off, uint32_t *val) {
    if (sim_reg(p, off, 4)) {
        npk_dev *d = p->impl;
        *val = d->ops->read32(d, off);
        return 0;
    }
    uint64_t v;
    int rc = npk_sim_read(p->sim, p->cls->mmio_base + off, 4, &v);
    *val = (uint32_t)v;
    return rc;
}

static int sim_write32(npk_port *p, uint32_t off, uint32_t val) {
    return npk_sim_write(p->sim, p->cls->mmio_base + off, 4, val);
}

static int sim_write64(npk_port *p, uint32_t off, uint64_t val) {
    npk_dev *d = p->impl;
    if (d->ops->write64 && sim_reg(p, off, 8)) {
        d->ops->write64(d, off, val);
        return 0;
    }
    return npk_sim_write(p->sim, p->cls->mmio_base + off, 8, val);
}

static int sim_mem_read(npk_port *p, uint64_t addr, void *buf, size_t len) {
    return npk_mem_peek(npk_sim_mem(p->sim), addr, buf, len);
}

static int sim_mem_write(npk_port *p, uint64_t addr, const void *buf, size_t len) {
    return npk_mem_poke(npk_sim_mem(p->sim), addr, buf, len);
}

static int sim_wait(npk_port *p, uint64_t cycles) {
    npk_dev *d = p->impl;
    if (cycles) d->ops->step(d, cycles); /* npk_sim_step */
    return 0;
}

static int sim_irq(npk_port *p, int line) { return npk_sim_irq(p->sim, line); }

static void sim_close(npk_port *p) { npk_sim_free(p->sim); }

static int sim_reset(npk_port *p) {
    npk_sim_reset(p->sim);
    return 0;
}

/* in-process port: back an allocation with one host buffer so the driver and
 * the model can use it in place (zero copy); if it overlaps an earlier one it
 * stays paged (still exact, copied) */
static void sim_allocated(npk_port *p, uint64_t addr, uint64_t size) {
    if (size >= 4096 && !npk_mem_direct(npk_sim_mem(p->sim), addr, size))
        (void)npk_mem_attach(npk_sim_mem(p->sim), addr, size);
}

static void *sim_direct(npk_port *p, uint64_t addr, uint64_t len) {
    return npk_mem_direct(npk_sim_mem(p->sim), addr, len);
}

/* in-process port: the caller's buffer as guest memory (no memory map declared: its
 * regions' latencies would make the timing depend on the address chosen) */
static int sim_map_host(npk_port *p, uint64_t addr, uint64_t size, void *host) {
    npk_mem *m = npk_sim_mem(p->sim);
    if (npk_mem_has_map(m)) return npk_err(NPK_EUNSUPPORTED, "sim port: a memory map is declared");
    return npk_mem_attach_host(m, addr, size, host);
}

static void sim_unmap_host(npk_port *p, uint64_t addr) { npk_mem_detach_host(npk_sim_mem(p->sim), addr); }

static void sim_set_trace(npk_port *p, struct npk_trace *t) { npk_sim_dev(p->sim)->trace = t; }

static int sim_energy(npk_port *p, npk_energy *e, npk_area *a, uint32_t *tech_nm) {
    npk_dev *d = npk_sim_dev(p->sim);
    if (!d->ops->energy) return -NPK_EUNSUPPORTED;
    d->ops->energy(d, e, a, tech_nm);
    return 0;
}

/* "sim" or "sim:mem-limit=BYTES": the in-process model, with a guest-memory cap. */
static int sim_open(npk_port *p, const char *spec, const char *arg, const char *opts) {
    uint64_t limit = 0;
    int with = spec && *spec && strcmp(spec, "sim"); /* "sim:..." */
    if (with) {
        if (strncmp(arg, "mem-limit=", 10))
            return npk_err(NPK_EINVAL, "unknown sim port option '%s' (known: mem-limit=BYTES[K|M|G|T])", arg);
        if (npk_parse_size(arg + 10, &limit)) return npk_err(NPK_EINVAL, "sim port mem-limit: %s", npk_errmsg());
    }
    p->sim = npk_sim_new(p->cls->name, opts);
    if (!p->sim) return npk_err_prefix(NPK_EINVAL, "opening the in-process %s model", p->cls->name);
    p->hz = npk_sim_hz(p->sim);
    p->impl = npk_sim_dev(p->sim); /* the register fast paths' device */
    if (with) npk_mem_set_limit(npk_sim_mem(p->sim), limit);
    return 0;
}

const npk_port_backend npk_sim_port = {
    .info = {"sim", "sim, sim:mem-limit=BYTES",
             "the in-process device model (the default); mem-limit caps its guest memory (default 4G, K/M/G/T, 0 = none)"},
    .schemes = {"sim", "sim:"},
    .open = sim_open,
    .read32 = sim_read32,
    .write32 = sim_write32,
    .write64 = sim_write64,
    .mem_read = sim_mem_read,
    .mem_write = sim_mem_write,
    .wait = sim_wait,
    .irq = sim_irq,
    .reset = sim_reset,
    .close = sim_close,
    .direct = sim_direct,
    .allocated = sim_allocated,
    .map_host = sim_map_host,
    .unmap_host = sim_unmap_host,
    .set_trace = sim_set_trace,
    .energy = sim_energy,
};
