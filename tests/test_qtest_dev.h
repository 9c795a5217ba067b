// SPDX-License-Identifier: MIT
/*
 * A tiny test device for the qtest engine and port tests (not a product model).
 *
 * Registers (byte offsets in its window):
 *   0x00 ID        read-only, 0x7e570001
 *   0x04 DATA      read/write
 *   0x08 COUNT     write N (N != 0, while idle) starts a busy countdown of N
 *                  cycles; reads the cycles left
 *   0x0c STATUS    bit 0 done (write 1 to clear), bit 1 busy (read-only);
 *                  IRQ line 0 = done (level)
 *   0x10 LINE1     bit 0 drives IRQ line 1 directly
 *   0x14 DMA_ADDR  when a countdown ends the device writes DATA (4 bytes,
 *                  little-endian) to this guest address over the bus, if non-zero
 * Create options: "map" declares guest memory [0x80000000, +16 MiB) only;
 * "fail" makes creation fail (to test error paths).
 */
#ifndef NPUKIT_TEST_QTEST_DEV_H
#define NPUKIT_TEST_QTEST_DEV_H

#include "npukit/npu.h"
#include "npukit/sim.h"

#include <stdlib.h>
#include <string.h>

enum { TD_ID = 0x00, TD_DATA = 0x04, TD_COUNT = 0x08, TD_STATUS = 0x0c, TD_LINE1 = 0x10, TD_DMA = 0x14 };
#define TD_ID_VALUE 0x7e570001u

typedef struct tdev {
    npk_dev dev;
    npk_regfile rf;
    uint64_t busy; /* cycles left */
    uint32_t dma_status;
} tdev;

static void td_set_irq(tdev *t) { npk_dev_set_irq(&t->dev, 0, (int)(*npk_regfile_slot(&t->rf, TD_STATUS) & 1)); }

static uint32_t td_read_count(npk_dev *d, const npk_reg *r, uint32_t stored) {
    (void)r;
    (void)stored;
    return (uint32_t)((tdev *)d)->busy;
}

static void td_write_count(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val) {
    (void)r;
    (void)old;
    tdev *t = (tdev *)d;
    if (!t->busy && val) t->busy = val;
}

static uint32_t td_read_status(npk_dev *d, const npk_reg *r, uint32_t stored) {
    (void)r;
    return (stored & 1) | (((tdev *)d)->busy ? 2u : 0u);
}

static void td_write_status(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val) {
    (void)r;
    (void)old;
    (void)val;
    td_set_irq((tdev *)d);
}

static void td_write_line1(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val) {
    (void)r;
    (void)old;
    npk_dev_set_irq(d, 1, (int)(val & 1));
}

static const npk_reg td_regs[] = {
    {.off = TD_ID, .name = "ID", .reset = TD_ID_VALUE, .ro = 0xffffffffu},
    {.off = TD_DATA, .name = "DATA"},
    {.off = TD_COUNT, .name = "COUNT", .read = td_read_count, .post_write = td_write_count},
    {.off = TD_STATUS, .name = "STATUS", .w1c = 1, .ro = 0xfffffffeu, .read = td_read_status, .post_write = td_write_status},
    {.off = TD_LINE1, .name = "LINE1", .rsv = 0xfffffffeu, .post_write = td_write_line1},
    {.off = TD_DMA, .name = "DMA_ADDR"},
};

static uint32_t td_read32(npk_dev *d, uint32_t off) { return npk_regfile_read(&((tdev *)d)->rf, d, off); }
static void td_write32(npk_dev *d, uint32_t off, uint32_t v) { npk_regfile_write(&((tdev *)d)->rf, d, off, v); }

static void td_step(npk_dev *d, uint64_t cycles) {
    tdev *t = (tdev *)d;
    d->cycles += cycles;
    if (!t->busy) return;
    uint64_t n = cycles < t->busy ? cycles : t->busy;
    t->busy -= n;
    if (!t->busy) {
        uint32_t addr = *npk_regfile_slot(&t->rf, TD_DMA);
        if (addr) {
            uint32_t v = *npk_regfile_slot(&t->rf, TD_DATA);
            uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
            t->dma_status = npk_bus_write(d->mem, addr, b, 4, NULL);
        }
        *npk_regfile_slot(&t->rf, TD_STATUS) |= 1;
        td_set_irq(t);
    }
}

static int td_idle(npk_dev *d) { return ((tdev *)d)->busy == 0; }

static void td_reset(npk_dev *d) {
    tdev *t = (tdev *)d;
    npk_regfile_reset(&t->rf);
    t->busy = 0;
    npk_dev_set_irq(d, 0, 0);
    npk_dev_set_irq(d, 1, 0);
}

static void td_destroy(npk_dev *d) {
    tdev *t = (tdev *)d;
    npk_regfile_fini(&t->rf);
    free(t);
}

static const npk_dev_ops td_ops = {td_read32, td_write32, NULL, td_step, td_idle, td_reset, td_destroy, NULL, NULL, NULL};

static npk_dev *td_create(npk_mem *mem, const char *opts) {
    if (opts && strstr(opts, "fail")) {
        npk_err(NPK_EINVAL, "test device: creation refused (option 'fail')");
        return NULL;
    }
    tdev *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (npk_regfile_init(&t->rf, td_regs, sizeof td_regs / sizeof td_regs[0], 256)) {
        free(t);
        return NULL;
    }
    t->dev.ops = &td_ops;
    t->dev.mem = mem;
    t->dev.regs = &t->rf;
    if (opts && strstr(opts, "map")) npk_mem_map(mem, 0x80000000ull, 16u << 20, 0, "ram");
    return &t->dev;
}

/* The test class: 500 MHz (2 ns per cycle), window 0x40000000+0x100. */
static const npk_dev_class td_class = {
    .name = "tdev",
    .summary = "qtest test device",
    .mmio_base = 0x40000000,
    .mmio_size = 0x100,
    .hz = 500000000,
    .n_irq = 2,
    .create = td_create,
};

#endif
