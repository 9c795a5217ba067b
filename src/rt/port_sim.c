/* Port backend: the in-process device model. */
#include "port.h"

static int sim_read32(npk_port *p, uint32_t off, uint32_t *val) {
    uint64_t v;
    int rc = npk_sim_read(p->sim, p->cls->mmio_base + off, 4, &v);
    *val = (uint32_t)v;
    return rc;
}

static int sim_write32(npk_port *p, uint32_t off, uint32_t val) {
    return npk_sim_write(p->sim, p->cls->mmio_base + off, 4, val);
}

static int sim_write64(npk_port *p, uint32_t off, uint64_t val) {
    return npk_sim_write(p->sim, p->cls->mmio_base + off, 8, val);
}

static int sim_mem_read(npk_port *p, uint64_t addr, void *buf, size_t len) {
    return npk_mem_peek(npk_sim_mem(p->sim), addr, buf, len);
}

static int sim_mem_write(npk_port *p, uint64_t addr, const void *buf, size_t len) {
    return npk_mem_poke(npk_sim_mem(p->sim), addr, buf, len);
}

static int sim_wait(npk_port *p, uint64_t cycles) {
    npk_sim_step(p->sim, cycles);
    return 0;
}

static int sim_irq(npk_port *p, int line) { return npk_sim_irq(p->sim, line); }

static void sim_close(npk_port *p) { npk_sim_free(p->sim); }

static const npk_port_backend sim_backend = {
    .kind = "sim",
    .read32 = sim_read32,
    .write32 = sim_write32,
    .write64 = sim_write64,
    .mem_read = sim_mem_read,
    .mem_write = sim_mem_write,
    .wait = sim_wait,
    .irq = sim_irq,
    .close = sim_close,
};

int npk_port_open_sim(npk_port *p, const char *opts) {
    p->sim = npk_sim_new(p->cls->name, opts);
    if (!p->sim) return npk_err_prefix(NPK_EINVAL, "opening the in-process %s model", p->cls->name);
    p->be = &sim_backend;
    p->hz = npk_sim_hz(p->sim);
    return 0;
}
