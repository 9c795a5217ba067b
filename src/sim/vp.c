/* SPDX-License-Identifier: MIT */
/*
 * The virtual platform's PCI function (see vp.h and docs/vp.md): config
 * space, BAR0, INTx, guest RAM and the device's clock, independent of the
 * wire protocol that carries the accesses.
 */
#include "vp.h"

#include "npukit/error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CMD_MEM 0x0002u
#define CMD_MASTER 0x0004u
#define CMD_PARITY 0x0040u
#define CMD_SERR 0x0100u
#define CMD_INTX_DISABLE 0x0400u
#define CMD_WRITABLE (CMD_MEM | CMD_MASTER | CMD_PARITY | CMD_SERR | CMD_INTX_DISABLE)
#define STATUS_INTERRUPT 0x0008u
#define MAX_RAM 8

typedef struct ram_map {
    void *ptr;
    size_t len;
} ram_map;

struct npk_vp_fn {
    npk_sim *sim;
    npk_dev *dev;
    const npk_dev_class *cls;
    uint8_t cfg[NPK_VP_CFG_SIZE];
    uint32_t bar_size;
    int intx;           /* OR of the device lines */
    int irqfd, resample;
    ram_map ram[MAX_RAM];
    size_t nram;
    uint32_t settle_ms;
    uint64_t slice;     /* cycles per step of a background run */
    int stepped;        /* clock window MODE bit 0: the device advances only through STEP */
    uint32_t step_lo, cycles_hi;
    volatile sig_atomic_t *stop; /* the server's stop flag (npk_vp_cfg.stop) or NULL */
    npk_vp_stats st;
};

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void put32(uint8_t *p, uint32_t v) {
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}
static uint32_t get32(const uint8_t *p) { return get16(p) | (uint32_t)get16(p + 2) << 16; }

static void raise_intx(npk_vp_fn *f) {
    if (f->irqfd < 0 || !f->intx || (get16(f->cfg + 4) & CMD_INTX_DISABLE)) return;
    uint64_t one = 1;
    ssize_t w = write(f->irqfd, &one, sizeof one); /* a full eventfd counter still signals */
    (void)w;
}

static void update_intx(npk_vp_fn *f) {
    int level = 0;
    for (int i = 0; i < f->cls->n_irq && i < NPK_MAX_IRQ; i++) level |= f->dev->irq_level[i];
    uint16_t status = get16(f->cfg + 6);
    status = level ? (uint16_t)(status | STATUS_INTERRUPT) : (uint16_t)(status & ~STATUS_INTERRUPT);
    put16(f->cfg + 6, status);
    int rose = level && !f->intx;
    f->intx = level;
    if (rose) raise_intx(f);
}

static void on_irq(void *ctx, int line, int level) {
    (void)line;
    (void)level;
    update_intx(ctx);
}

static void cfg_defaults(npk_vp_fn *f) {
    memset(f->cfg, 0, sizeof f->cfg);
    put16(f->cfg + 0x00, NPK_PCI_VENDOR);
    put16(f->cfg + 0x02, f->cls->pci_device);
    f->cfg[0x08] = 1; /* revision */
    f->cfg[0x09] = (uint8_t)NPK_PCI_CLASS;
    f->cfg[0x0a] = (uint8_t)(NPK_PCI_CLASS >> 8);
    f->cfg[0x0b] = (uint8_t)(NPK_PCI_CLASS >> 16);
    put16(f->cfg + 0x2c, NPK_PCI_VENDOR);
    put16(f->cfg + 0x2e, f->cls->pci_device);
    f->cfg[0x3d] = 1; /* INTA# */
    put32(f->cfg + NPK_VP_CFG_CLOCK_KHZ, (uint32_t)(npk_sim_hz(f->sim) / 1000u));
}

npk_vp_fn *npk_vp_fn_new(npk_sim *sim, const npk_vp_cfg *cfg) {
    const npk_dev_class *c = npk_sim_class(sim);
    if (!c->pci_device) {
        npk_err(NPK_EUNSUPPORTED, "vp: device '%s' has no PCI device ID (npk_dev_class.pci_device)", c->name);
        return NULL;
    }
    npk_vp_fn *f = calloc(1, sizeof *f);
    if (!f) {
        npk_err(NPK_ENOMEM, "out of memory");
        return NULL;
    }
    f->sim = sim;
    f->dev = npk_sim_dev(sim);
    f->cls = c;
    f->irqfd = f->resample = -1;
    f->bar_size = 4096;
    while (f->bar_size < c->mmio_size) f->bar_size <<= 1;
    f->settle_ms = cfg && cfg->settle_ms ? cfg->settle_ms : NPK_VP_SETTLE_MS;
    f->slice = 4096;
    f->stop = cfg ? cfg->stop : NULL;
    f->dev->stop = f->stop; /* long device actions stop too (npk_dev_stopping) */
    cfg_defaults(f);
    npk_sim_set_irq_cb(sim, on_irq, f);
    update_intx(f);
    return f;
}

static void unmap_ram(npk_vp_fn *f) {
    npk_mem_unmap_host(npk_sim_mem(f->sim));
    for (size_t i = 0; i < f->nram; i++) munmap(f->ram[i].ptr, f->ram[i].len);
    f->nram = 0;
}

void npk_vp_fn_free(npk_vp_fn *f) {
    if (!f) return;
    npk_sim_set_irq_cb(f->sim, NULL, NULL);
    f->dev->stop = NULL;
    unmap_ram(f);
    if (f->irqfd >= 0) close(f->irqfd);
    if (f->resample >= 0) close(f->resample);
    free(f);
}

npk_sim *npk_vp_fn_sim(npk_vp_fn *f) { return f->sim; }
uint32_t npk_vp_bar_size(const npk_vp_fn *f) { return f->bar_size; }
const npk_vp_stats *npk_vp_fn_stats(const npk_vp_fn *f) { return &f->st; }
int npk_vp_intx(const npk_vp_fn *f) { return f->intx; }
int npk_vp_resample_fd(const npk_vp_fn *f) { return f->resample; }

static int cfg_check(const char *what, uint32_t addr, int len) {
    if (len != 1 && len != 2 && len != 4)
        return npk_err(NPK_EINVAL, "config %s of %d bytes at 0x%" PRIx32 ": the length must be 1, 2 or 4", what, len,
                       addr);
    if (addr >= NPK_VP_CFG_SIZE || (uint32_t)len > NPK_VP_CFG_SIZE - addr)
        return npk_err(NPK_EINVAL, "config %s of %d bytes at 0x%" PRIx32 " is outside the %u-byte config space", what,
                       len, addr, NPK_VP_CFG_SIZE);
    if (addr % (uint32_t)len)
        return npk_err(NPK_EINVAL, "config %s of %d bytes at 0x%" PRIx32 " is not naturally aligned", what, len, addr);
    return 0;
}

int npk_vp_cfg_read(npk_vp_fn *f, uint32_t addr, int len, uint32_t *val) {
    f->st.cfg_reads++;
    int rc = cfg_check("read", addr, len);
    if (rc) {
        *val = 0xffffffffu;
        f->st.errors++;
        return rc;
    }
    uint32_t v = 0;
    for (int i = 0; i < len; i++) v |= (uint32_t)f->cfg[addr + (uint32_t)i] << (8 * i);
    *val = v;
    return 0;
}

/* Bits of config byte a a write may change. */
static uint8_t writable(const npk_vp_fn *f, uint32_t a) {
    switch (a) {
    case 0x04: return (uint8_t)CMD_WRITABLE;
    case 0x05: return (uint8_t)(CMD_WRITABLE >> 8);
    case 0x0c: case 0x0d: case 0x3c: return 0xff; /* cache line size, latency timer, interrupt line */
    case 0x10: return 0;                          /* BAR0 bits 7..0: type bits and size >= 4 KiB */
    case 0x11: return (uint8_t)(~(f->bar_size - 1) >> 8);
    case 0x12: return (uint8_t)(~(f->bar_size - 1) >> 16);
    case 0x13: return (uint8_t)(~(f->bar_size - 1) >> 24);
    case 0x19: return (uint8_t)(~(NPK_VP_CLK_SIZE - 1) >> 8); /* BAR2: the clock window */
    case 0x1a: return (uint8_t)(~(NPK_VP_CLK_SIZE - 1) >> 16);
    case 0x1b: return (uint8_t)(~(NPK_VP_CLK_SIZE - 1) >> 24);
    default: return 0;
    }
}

int npk_vp_cfg_write(npk_vp_fn *f, uint32_t addr, uint32_t val, int len) {
    f->st.cfg_writes++;
    int rc = cfg_check("write", addr, len);
    if (rc) {
        f->st.errors++;
        return rc;
    }
    uint16_t old_cmd = get16(f->cfg + 4);
    for (int i = 0; i < len; i++) {
        uint32_t a = addr + (uint32_t)i;
        uint8_t m = writable(f, a), b = (uint8_t)(val >> (8 * i));
        f->cfg[a] = (uint8_t)((f->cfg[a] & ~m) | (b & m));
    }
    uint16_t cmd = get16(f->cfg + 4);
    if ((old_cmd & CMD_INTX_DISABLE) && !(cmd & CMD_INTX_DISABLE)) raise_intx(f); /* a pending line shows again */
    return 0;
}

static uint64_t bar_base(const npk_vp_fn *f, int bar, uint32_t size) {
    return get32(f->cfg + 0x10 + 4 * bar) & ~(size - 1);
}

/* Which BAR (0 or 2) addr falls in, and the offset; -NPK_EINVAL outside both. */
static int bar_find(npk_vp_fn *f, const char *what, uint64_t addr, unsigned size, int *bar, uint32_t *off) {
    if (size != 1 && size != 2 && size != 4 && size != 8)
        return npk_err(NPK_EINVAL, "BAR %s of %u bytes at 0x%" PRIx64 ": the size must be 1, 2, 4 or 8", what, size,
                       addr);
    for (int b = 0; b <= 2; b += 2) {
        uint32_t bs = b ? NPK_VP_CLK_SIZE : f->bar_size;
        uint64_t base = bar_base(f, b, bs);
        if (base && addr >= base && addr - base < bs && size <= bs - (addr - base)) {
            *bar = b;
            *off = (uint32_t)(addr - base);
            if (!(get16(f->cfg + 4) & CMD_MEM))
                return npk_err(NPK_EINVAL, "BAR%d %s at 0x%" PRIx64 " while memory decoding is off (COMMAND bit 1)", b,
                               what, addr);
            return 0;
        }
    }
    return npk_err(NPK_EINVAL,
                   "BAR %s of %u bytes at 0x%" PRIx64 " is outside BAR0 (0x%" PRIx64 "+0x%" PRIx32 ") and BAR2 (0x%" PRIx64
                   "+0x%x)", what, size, addr, bar_base(f, 0, f->bar_size), f->bar_size, bar_base(f, 2, NPK_VP_CLK_SIZE),
                   NPK_VP_CLK_SIZE);
}

/* The BAR (0 or 2) and offset a guest access of size bytes at addr reaches, with memory decoding
 * on; a failed access counts as an error of the function. */
static int bar_off(npk_vp_fn *f, const char *what, uint64_t addr, unsigned size, int *bar, uint32_t *off) {
    int rc = bar_find(f, what, addr, size, bar, off);
    if (rc) f->st.errors++;
    return rc;
}

/* The clock window (BAR2): 32-bit registers; other widths and offsets are guest errors of the device. */
static uint64_t clk_read(npk_vp_fn *f, uint32_t off, unsigned size) {
    if (size != 4 || off % 4) {
        npk_dev_guest_error(f->dev, NPK_GE_WIDTH, off, "clock window (BAR2) read of %u bytes at 0x%03" PRIx32
                            " (32-bit registers)", size, off);
        return 0;
    }
    switch (off) {
    case NPK_VP_CLK_ID: return NPK_VP_CLK_ID_VALUE;
    case NPK_VP_CLK_VERSION: return 1;
    case NPK_VP_CLK_MODE: return (uint32_t)f->stepped;
    case NPK_VP_CLK_CYCLES_LO:
        f->cycles_hi = (uint32_t)(f->dev->cycles >> 32);
        return (uint32_t)f->dev->cycles;
    case NPK_VP_CLK_CYCLES_HI: return f->cycles_hi;
    case NPK_VP_CLK_STATUS:
        return (uint32_t)(f->dev->ops->idle(f->dev) ? 1 : 0) |
               (uint32_t)(f->dev->ops->stalled && f->dev->ops->stalled(f->dev) ? 2 : 0);
    case NPK_VP_CLK_KHZ: return (uint32_t)(npk_sim_hz(f->sim) / 1000u);
    case NPK_VP_CLK_STEP_LO: case NPK_VP_CLK_STEP_HI: return 0;
    default:
        npk_dev_guest_error(f->dev, NPK_GE_UNKNOWN_OFFSET, off, "clock window (BAR2) read at 0x%03" PRIx32
                            " (no register)", off);
        return 0;
    }
}

static int stopped(const npk_vp_fn *f) { return f->stop && *f->stop; }

/* A STEP of up to 2^32 - 1 cycles in chunks whose host work is bounded (a
 * busy device at most max(65536 cycles, its quiet span) at a time, an idle
 * one the rest at once; step(n) equals n single steps, so the chunks change
 * nothing), so that a stop request (SIGTERM) ends it between chunks: the
 * server is shutting down and the rest of the step is not run. */
static void step_cycles(npk_vp_fn *f, uint64_t n) {
    while (n && !stopped(f)) {
        uint64_t k = n;
        if (npk_vp_busy(f)) {
            uint64_t q = npk_dev_quiet(f->dev);
            k = q > 65536 ? q : 65536;
            if (k > n) k = n;
        }
        npk_sim_step(f->sim, k);
        n -= k;
    }
}

static void clk_write(npk_vp_fn *f, uint32_t off, uint64_t val, unsigned size) {
    if (size == 8 && off == NPK_VP_CLK_STEP_LO) { /* one 64-bit write: LO then HI */
        clk_write(f, NPK_VP_CLK_STEP_LO, (uint32_t)val, 4);
        clk_write(f, NPK_VP_CLK_STEP_HI, val >> 32, 4);
        return;
    }
    if (size != 4 || off % 4) {
        npk_dev_guest_error(f->dev, NPK_GE_WIDTH, off, "clock window (BAR2) write of %u bytes at 0x%03" PRIx32
                            " (32-bit registers)", size, off);
        return;
    }
    switch (off) {
    case NPK_VP_CLK_MODE:
        if (val & ~1ull) npk_dev_guest_error(f->dev, NPK_GE_RESERVED, off, "clock window MODE 0x%" PRIx64
                                             ": bits above 0 are reserved", val);
        f->stepped = (int)(val & 1);
        return;
    case NPK_VP_CLK_STEP_LO: f->step_lo = (uint32_t)val; return;
    case NPK_VP_CLK_STEP_HI:
        if (val) { /* bounded work per write: at most 2^32 - 1 cycles */
            npk_dev_guest_error(f->dev, NPK_GE_RESERVED, off, "clock window STEP_HI 0x%" PRIx64
                                " (steps are at most 2^32 - 1 cycles; nothing stepped)", val);
            return;
        }
        step_cycles(f, f->step_lo);
        return;
    default:
        npk_dev_guest_error(f->dev, off < 0x28 ? NPK_GE_READ_ONLY : NPK_GE_UNKNOWN_OFFSET, off,
                            "clock window (BAR2) write of 0x%" PRIx64 " at 0x%03" PRIx32 " (%s)", val, off,
                            off < 0x28 ? "read-only" : "no register");
        return;
    }
}

/* Host time in microseconds (the bound of a run). */
static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int npk_vp_busy(npk_vp_fn *f) { return !f->dev->ops->idle(f->dev); }
int npk_vp_autorun(npk_vp_fn *f) { return !f->stepped && npk_vp_busy(f); }

/* Stop on the cycle the device turns idle: step the spans in which the
 * device cannot go idle (npk_dev_quiet) at once, so a run ends exactly
 * when the device goes idle, as on the sim port where a polling driver waits
 * the device's IDLE_ETA: a device whose prefetcher works while idle (pccx)
 * sees the same idle time (none). A device without a quiet op goes one cycle
 * at a time for the first EXACT_CYCLES cycles of a run, then in slices that
 * grow while one takes under a millisecond (its last one may run idle cycles).
 * The host time and the stop flag are looked at after every span (a span
 * ends in an event whose host work the models' limits bound, such as one
 * GEMM descriptor), or every 256 steps of a device without a quiet op, so a
 * run overshoots max_us by at most one event and a SIGTERM is seen within
 * one (issue 32 point 3). */
#define EXACT_CYCLES (1u << 20)
void npk_vp_run(npk_vp_fn *f, uint64_t max_us) {
    uint64_t t0 = now_us(), n = 0;
    const int spans = f->dev->ops->quiet != NULL;
    for (unsigned i = 1; npk_vp_busy(f) && !stopped(f); i++) {
        uint64_t k = npk_dev_quiet(f->dev);
        if (!spans && n >= EXACT_CYCLES) {
            k = f->slice;
            if (f->slice < (1u << 20)) f->slice <<= 1;
        }
        npk_sim_step(f->sim, k);
        n += k;
        if ((spans || !(i & 255)) && now_us() - t0 >= max_us) break;
    }
}

int npk_vp_bar_read(npk_vp_fn *f, uint64_t addr, unsigned size, uint64_t *val) {
    f->st.bar_reads++;
    uint32_t off = 0;
    int bar = 0;
    *val = size >= 8 ? UINT64_MAX : (1ull << (8 * (size & 7))) - 1;
    int rc = bar_off(f, "read", addr, size, &bar, &off);
    if (rc) return rc;
    if (bar == 2) {
        *val = clk_read(f, off, size);
        return 0;
    }
    if (!f->stepped) npk_vp_run(f, (uint64_t)f->settle_ms * 1000u);
    if (off >= f->cls->mmio_size) {
        npk_dev_guest_error(f->dev, NPK_GE_UNKNOWN_OFFSET, off, "read at offset 0x%03" PRIx32 " beyond the %" PRIu32
                            "-byte register window (BAR0 padding)", off, f->cls->mmio_size);
        *val = 0;
        return 0;
    }
    uint64_t v = 0;
    if (npk_sim_read(f->sim, f->cls->mmio_base + off, size, &v)) v = 0; /* a width guest error, already recorded */
    *val = v;
    return 0;
}

int npk_vp_bar_write(npk_vp_fn *f, uint64_t addr, uint64_t val, unsigned size) {
    f->st.bar_writes++;
    uint32_t off = 0;
    int bar = 0;
    int rc = bar_off(f, "write", addr, size, &bar, &off);
    if (rc) return rc;
    /* The guest CPU writes RAM behind npk_mem's back: before a register write
     * (a doorbell, a step) everything derived from guest memory is taken anew. */
    npk_mem_touch(npk_sim_mem(f->sim), 0, UINT64_MAX);
    if (bar == 2) {
        clk_write(f, off, val, size);
        return 0;
    }
    if (off >= f->cls->mmio_size) {
        npk_dev_guest_error(f->dev, NPK_GE_UNKNOWN_OFFSET, off, "write at offset 0x%03" PRIx32 " beyond the %" PRIu32
                            "-byte register window (BAR0 padding)", off, f->cls->mmio_size);
        return 0;
    }
    (void)npk_sim_write(f->sim, f->cls->mmio_base + off, size, val); /* bad widths are guest errors, recorded */
    return 0;
}

int npk_vp_set_ram(npk_vp_fn *f, size_t n, const uint64_t *gpa, const uint64_t *size, const int *fd,
                   const int64_t *off) {
    f->st.ram_maps++;
    unmap_ram(f);
    if (n > MAX_RAM) return npk_err(NPK_EINVAL, "%zu guest RAM regions (at most %d)", n, MAX_RAM);
    npk_mem *m = npk_sim_mem(f->sim);
    for (size_t i = 0; i < n; i++) {
        if (!size[i] || gpa[i] + (size[i] - 1) < gpa[i] || size[i] > SIZE_MAX || off[i] < 0) {
            unmap_ram(f);
            return npk_err(NPK_EINVAL, "guest RAM region %zu: 0x%" PRIx64 "+0x%" PRIx64 " at file offset %" PRId64
                           " is empty, wraps or has a negative offset", i, gpa[i], size[i], off[i]);
        }
        void *p = mmap(NULL, (size_t)size[i], PROT_READ | PROT_WRITE, MAP_SHARED, fd[i], (off_t)off[i]);
        if (p == MAP_FAILED) {
            int e = errno;
            unmap_ram(f);
            return npk_err(NPK_EIO, "guest RAM region %zu (0x%" PRIx64 "+0x%" PRIx64 ", fd offset 0x%" PRIx64
                           "): cannot map it: %s", i, gpa[i], size[i], (uint64_t)off[i], strerror(e));
        }
        f->ram[f->nram++] = (ram_map){p, (size_t)size[i]};
        char name[32];
        snprintf(name, sizeof name, "guest-ram%zu", i);
        int rc = npk_mem_map(m, gpa[i], size[i], 0, name);
        if (!rc) rc = npk_mem_attach_host(m, gpa[i], size[i], p);
        if (rc) {
            unmap_ram(f);
            return npk_err_prefix(rc, "guest RAM region %zu", i);
        }
    }
    return 0;
}

void npk_vp_set_intx(npk_vp_fn *f, int irqfd, int resample) {
    if (f->irqfd >= 0) close(f->irqfd);
    if (f->resample >= 0) close(f->resample);
    f->irqfd = irqfd;
    f->resample = resample;
    raise_intx(f);
}

void npk_vp_resampled(npk_vp_fn *f) {
    uint64_t n;
    ssize_t r = read(f->resample, &n, sizeof n);
    (void)r;
    raise_intx(f);
}

void npk_vp_reset(npk_vp_fn *f) {
    f->st.resets++;
    npk_sim_reset(f->sim);
    cfg_defaults(f); /* command 0 (decoding off), BARs 0, interrupt line 0 */
    f->stepped = 0;
    f->step_lo = f->cycles_hi = 0;
    update_intx(f);
}
