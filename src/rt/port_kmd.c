// SPDX-License-Identifier: MIT
/*
 * Port backend: a device driven by npukit's kernel driver (kmod/npukit.ko,
 * docs/kmod.md), in a Linux guest of `npu vp` or on a machine with the
 * PCI functions.
 *
 *   "kmd:/dev/npuN[,mem=BYTES|,carveout]"
 *
 * User space never maps registers: every register access is one
 * NPUKIT_IOCTL_REG that the kernel checks and performs; the kernel owns the
 * interrupt line, resets and the DMA memory. Guest memory is one buffer
 * object (dma_alloc_coherent, mmapped shared) of mem bytes (default and
 * maximum: the driver's max_bo_size, 4 MiB); the port's allocator hands out
 * its bus addresses, and CPU accesses outside it fail with NPK_EBUS naming
 * the address. ",carveout" takes the driver's carve-out instead (module
 * parameters carveout_base/_size: guest RAM above the kernel's mem= limit),
 * at its fixed bus address and of its whole size: a compiled package's
 * arena (0x80000000 on every port) fits when the carve-out covers it, and
 * the allocator then hands out the same addresses as the sim port's.
 * The device kind the driver reports must be the one asked for.
 *
 * Jobs: the port offers the job hook (rt/port_submit.h): the drivers write a
 * v0 descriptor batch, a shell ring batch, an e1 ring or a pccx instruction
 * stream to the buffer and hand it to NPUKIT_IOCTL_SUBMIT; the kernel rings
 * the doorbell, and NPUKIT_IOCTL_WAIT reports completion, the device's error
 * (after the kernel's recovery), a timeout (after its soft reset) or a v0
 * descriptor for the CPU.
 *
 * Time: on a function with a clock window (`npu vp`, NPUKIT_INFO_CLOCK) the
 * port puts the device's clock in stepped mode: npk_port_wait() advances the
 * device by exactly that many cycles (NPUKIT_IOCTL_CLOCK) and the drivers
 * poll jobs (NPUKIT_WAIT_POLL) between steps, as they poll the model over
 * the sim port, so the device's cycles are the sim port's; ",free" leaves
 * the clock free-running. Elsewhere (real hardware) npk_port_wait() sleeps
 * cycles / hz and the kernel waits for jobs (interrupts or its own polling).
 * Interrupts: npk_port_irq(p, 0) is 1 when the kernel took an interrupt for
 * the device since the previous call (NPUKIT_IOCTL_IRQ; always 0 in the
 * driver's polling mode, the mode under QEMU TCG).
 */
#include "port.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "npukit/range.h"
#include "npukit/uapi/npukit_accel.h"

typedef struct kmd {
    int fd;
    uint8_t *mem;          /* the buffer object's mapping */
    uint64_t dma, size;    /* its bus address and size */
    uint32_t handle;
    int stepped;           /* the device's clock is stepped by npk_port_wait */
    char dev[256];
} kmd;

static kmd *K(npk_port *p) { return p->impl; }

static int kmd_ioctl_err(npk_port *p, const char *what) {
    return npk_err(errno == ENOMEM ? NPK_ENOMEM : NPK_EIO, "kmd %s: %s: %s", K(p)->dev, what, strerror(errno));
}

static int kmd_reg(npk_port *p, uint32_t off, uint32_t *val, int write) {
    struct npukit_reg r = {.offset = off, .value = write ? *val : 0, .flags = write ? NPUKIT_REG_WRITE : 0};
    if (off % 4)
        return npk_err(NPK_EINVAL, "kmd %s: register %s at offset 0x%" PRIx32 " is not 4-byte aligned", K(p)->dev,
                       write ? "write" : "read", off);
    if (ioctl(K(p)->fd, NPUKIT_IOCTL_REG, &r)) {
        if (errno == EINVAL)
            return npk_err(NPK_EINVAL, "kmd %s: register %s at offset 0x%" PRIx32 " is outside the register window",
                           K(p)->dev, write ? "write" : "read", off);
        return kmd_ioctl_err(p, write ? "register write" : "register read");
    }
    if (!write) *val = r.value;
    return 0;
}

static int kmd_read32(npk_port *p, uint32_t off, uint32_t *val) { return kmd_reg(p, off, val, 0); }
static int kmd_write32(npk_port *p, uint32_t off, uint32_t val) { return kmd_reg(p, off, &val, 1); }

static int mem_check(npk_port *p, uint64_t addr, size_t len, const char *what) {
    kmd *k = K(p);
    if (!npk_range_within(addr, len, k->dma, k->size))
        return npk_err(NPK_EBUS,
                       "kmd %s: %s of %zu bytes at 0x%" PRIx64 " is outside the DMA buffer 0x%" PRIx64 "-0x%" PRIx64,
                       k->dev, what, len, addr, k->dma, k->dma + k->size - 1);
    return 0;
}

static int kmd_mem_read(npk_port *p, uint64_t addr, void *buf, size_t len) {
    int rc = mem_check(p, addr, len, "memory read");
    if (rc) return rc;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    memcpy(buf, K(p)->mem + (addr - K(p)->dma), len);
    return 0;
}

static int kmd_mem_write(npk_port *p, uint64_t addr, const void *buf, size_t len) {
    int rc = mem_check(p, addr, len, "memory write");
    if (rc) return rc;
    memcpy(K(p)->mem + (addr - K(p)->dma), buf, len);
    /* the stores before a following doorbell (an ioctl: also a barrier) */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return 0;
}

static int kmd_irq(npk_port *p, int line) {
    struct npukit_irq q;
    if (line != 0) return 0;
    memset(&q, 0, sizeof q);
    if (ioctl(K(p)->fd, NPUKIT_IOCTL_IRQ, &q)) return kmd_ioctl_err(p, "interrupt query");
    return q.count > 0;
}

static void kmd_close(npk_port *p) {
    kmd *k = K(p);
    if (!k) return;
    if (k->mem) munmap(k->mem, k->size);
    if (k->fd >= 0) close(k->fd); /* the kernel stops a running job and frees the buffer */
    free(k);
    p->impl = NULL;
}

static const char *kind_name(uint32_t kind) {
    switch (kind) {
    case NPUKIT_KIND_E1: return "e1";
    case NPUKIT_KIND_V0: return "v0";
    case NPUKIT_KIND_SHELL: return "shell";
    case NPUKIT_KIND_PCCX: return "pccx";
    default: return "unknown";
    }
}

/* "kmd:" target: the device path and its options. */
static int kmd_open(npk_port *p, const char *whole, const char *target, const char *opts) {
    (void)whole;
    (void)opts; /* device options belong to the device server */
    kmd *k = calloc(1, sizeof *k);
    if (!k) return npk_err(NPK_ENOMEM, "out of memory");
    k->fd = -1;
    p->impl = k;
    uint64_t want = 0;
    int carveout = 0, free_clock = 0;
    const char *comma = strchr(target, ',');
    size_t n = comma ? (size_t)(comma - target) : strlen(target);
    int rc = 0;
    if (!n || n >= sizeof k->dev) {
        rc = npk_err(NPK_EINVAL, "kmd port: expected kmd:/dev/npuN[,mem=BYTES|,carveout][,free], got 'kmd:%s'", target);
        goto fail;
    }
    memcpy(k->dev, target, n);
    for (const char *o = comma; o && *o;) {
        o++;
        const char *end = strchr(o, ',');
        size_t len = end ? (size_t)(end - o) : strlen(o);
        char opt[64];
        if (len >= sizeof opt) len = sizeof opt - 1;
        memcpy(opt, o, len);
        opt[len] = 0;
        if (!strncmp(opt, "mem=", 4)) {
            if (npk_parse_size(opt + 4, &want) || !want) {
                rc = npk_err(NPK_EINVAL, "kmd %s: bad mem size '%s' (bytes, K/M suffixes, > 0)", k->dev, opt + 4);
                goto fail;
            }
        } else if (!strcmp(opt, "carveout")) {
            carveout = 1;
        } else if (!strcmp(opt, "free")) {
            free_clock = 1;
        } else {
            rc = npk_err(NPK_EINVAL, "kmd %s: unknown option '%s' (known: mem=BYTES, carveout, free)", k->dev, opt);
            goto fail;
        }
        o = end;
    }
    k->fd = open(k->dev, O_RDWR | O_CLOEXEC);
    if (k->fd < 0) {
        rc = npk_err(NPK_EIO, "kmd %s: %s%s", k->dev, strerror(errno),
                     errno == ENOENT   ? " (is npukit.ko loaded? docs/kmod.md)"
                     : errno == EBUSY ? " (another process has the device open)"
                                      : "");
        goto fail;
    }
    struct npukit_info info;
    memset(&info, 0, sizeof info);
    if (ioctl(k->fd, NPUKIT_IOCTL_GET_INFO, &info)) {
        rc = npk_err(NPK_EIO, "kmd %s: not an npukit device (NPUKIT_IOCTL_GET_INFO: %s)", k->dev, strerror(errno));
        goto fail;
    }
    if (info.api_version != NPUKIT_API_VERSION) {
        rc = npk_err(NPK_EINVAL, "kmd %s: driver API version %u, this runtime speaks %u", k->dev, info.api_version,
                     NPUKIT_API_VERSION);
        goto fail;
    }
    if (strcmp(kind_name(info.kind), p->cls->name)) {
        rc = npk_err(NPK_EINVAL, "kmd %s: the device is %s (PCI %04x:%04x), not %s", k->dev, kind_name(info.kind),
                     info.vendor, info.device, p->cls->name);
        goto fail;
    }
    p->hz = info.clock_hz;
    if (carveout && want) {
        rc = npk_err(NPK_EINVAL, "kmd %s: mem= and carveout exclude each other (the carve-out has its own size)", k->dev);
        goto fail;
    }
    if (carveout && !info.carveout_size) {
        rc = npk_err(NPK_EINVAL,
                     "kmd %s: the driver has no carve-out (load npukit.ko with carveout_base=ADDR carveout_size=BYTES, "
                     "RAM above the kernel's mem=; docs/kmod.md)",
                     k->dev);
        goto fail;
    }
    if (!want) want = carveout ? info.carveout_size : info.max_bo_size;
    if (!carveout && want > info.max_bo_size) {
        rc = npk_err(NPK_EINVAL, "kmd %s: mem=%" PRIu64 " exceeds the driver's largest buffer (%" PRIu64 " bytes)", k->dev,
                     want, (uint64_t)info.max_bo_size);
        goto fail;
    }
    struct npukit_bo_create bo;
    memset(&bo, 0, sizeof bo);
    bo.size = want;
    bo.flags = carveout ? NPUKIT_BO_CARVEOUT : 0;
    if (ioctl(k->fd, NPUKIT_IOCTL_BO_CREATE, &bo)) {
        rc = npk_err(errno == ENOMEM ? NPK_ENOMEM : NPK_EIO, "kmd %s: allocating %" PRIu64 " bytes of DMA memory%s: %s",
                     k->dev, want, carveout ? " (the carve-out)" : "", strerror(errno));
        goto fail;
    }
    k->handle = bo.handle;
    k->dma = bo.dma_addr;
    k->size = bo.size;
    void *m = mmap(NULL, k->size, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd, (off_t)bo.mmap_offset);
    if (m == MAP_FAILED) {
        rc = npk_err(NPK_EIO, "kmd %s: mapping the DMA buffer: %s", k->dev, strerror(errno));
        goto fail;
    }
    k->mem = m;
    p->arena_base = k->dma;
    p->arena_size = k->size;
    if ((info.flags & NPUKIT_INFO_CLOCK) && !free_clock) {
        struct npukit_clock c;
        memset(&c, 0, sizeof c);
        c.flags = NPUKIT_CLOCK_SET_MODE;
        c.mode = NPUKIT_CLOCK_STEPPED;
        if (ioctl(k->fd, NPUKIT_IOCTL_CLOCK, &c)) {
            rc = kmd_ioctl_err(p, "stepping the device's clock (NPUKIT_IOCTL_CLOCK)");
            goto fail;
        }
        k->stepped = 1;
    }
    return 0;
fail:
    kmd_close(p);
    return rc;
}

/* A stepped clock advances by exactly cycles (in steps of at most 2^32 - 1); else sleep. */
static int kmd_wait(npk_port *p, uint64_t cycles) {
    if (!K(p)->stepped) return npk_port_sleep(p, cycles);
    while (cycles) {
        struct npukit_clock c;
        memset(&c, 0, sizeof c);
        c.flags = NPUKIT_CLOCK_STEP;
        c.step = cycles > UINT32_MAX ? UINT32_MAX : cycles;
        if (ioctl(K(p)->fd, NPUKIT_IOCTL_CLOCK, &c)) return kmd_ioctl_err(p, "stepping the device (NPUKIT_IOCTL_CLOCK)");
        cycles -= c.step;
    }
    return 0;
}

static int kmd_reset(npk_port *p) {
    if (ioctl(K(p)->fd, NPUKIT_IOCTL_RESET)) return kmd_ioctl_err(p, "device reset (NPUKIT_IOCTL_RESET)");
    return 0;
}

/* ---- the job hook (rt/port_submit.h) ---- */

static int kmd_jobs(npk_port *p) { return K(p)->stepped ? 1 : 2; }

static int kmd_job_submit(npk_port *p, const npk_pjob *j) {
    kmd *k = K(p);
    struct npukit_submit s;
    memset(&s, 0, sizeof s);
    int rc = mem_check(p, j->addr, 8, "job");
    if (rc) return rc;
    s.format = (uint32_t)j->format;
    s.handle = k->handle;
    s.offset = j->addr - k->dma;
    s.count = j->count;
    s.ring_len = j->ring_len;
    s.first = j->first;
    s.flags = j->flags & NPK_PJOB_F_FALLBACK ? NPUKIT_SUBMIT_FALLBACK : 0;
    s.window_addr = j->window_addr;
    s.window_size = j->window_size;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (ioctl(k->fd, NPUKIT_IOCTL_SUBMIT, &s)) {
        if (errno == EINVAL)
            return npk_err(NPK_EINVAL,
                           "kmd %s: the driver refused the job (NPUKIT_IOCTL_SUBMIT: format %u, ring 0x%" PRIx64
                           ", %u entries from %u, length %u, window 0x%" PRIx64 "+%" PRIu64 ")",
                           k->dev, s.format, j->addr, j->count, j->first, j->ring_len, j->window_addr, j->window_size);
        return kmd_ioctl_err(p, "job submit (NPUKIT_IOCTL_SUBMIT)");
    }
    return 0;
}

static int kmd_job_check(npk_port *p, int block, uint64_t timeout_ns, npk_pjob_state *st) {
    struct npukit_wait w;
    memset(&w, 0, sizeof w);
    if (block) {
        w.timeout_ns = timeout_ns < 1 ? 1 : timeout_ns > 60000000000ull ? 60000000000ll : (int64_t)timeout_ns;
    } else {
        w.flags = NPUKIT_WAIT_POLL;
    }
    int rc;
    while ((rc = ioctl(K(p)->fd, NPUKIT_IOCTL_WAIT, &w)) && errno == EINTR) {
    }
    if (rc) return kmd_ioctl_err(p, "job wait (NPUKIT_IOCTL_WAIT)");
    memset(st, 0, sizeof *st);
    st->result = (npk_pjob_result)w.result;
    st->code = w.dev_code;
    st->index = w.index;
    st->progress = w.progress;
    st->recovered = (int)w.recovered;
    st->fault_addr = w.fault_addr;
    st->eta = w.eta;
    memcpy(st->desc, w.desc, sizeof st->desc);
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* what the device wrote, before the caller reads it */
    return 0;
}

static int kmd_job_fallback_done(npk_port *p, uint32_t index) {
    struct npukit_fallback_done d = {.index = index};
    if (ioctl(K(p)->fd, NPUKIT_IOCTL_FALLBACK_DONE, &d)) return kmd_ioctl_err(p, "NPUKIT_IOCTL_FALLBACK_DONE");
    return 0;
}

const npk_port_backend npk_kmd_port = {
    .info = {"kmd", "kmd:/dev/npuN",
             "a PCI function driven by npukit's kernel driver (kmod/npukit.ko): jobs through its SUBMIT/WAIT ioctls, "
             "guest memory one DMA buffer (,mem=BYTES) or the driver's fixed-address carve-out (,carveout), the "
             "device's clock stepped like the sim port's (,free: free-running)"},
    .schemes = {"kmd:"},
    .open = kmd_open,
    .read32 = kmd_read32,
    .write32 = kmd_write32,
    .mem_read = kmd_mem_read,
    .mem_write = kmd_mem_write,
    .wait = kmd_wait,
    .irq = kmd_irq,
    .reset = kmd_reset,
    .close = kmd_close,
    .jobs = kmd_jobs,
    .job_submit = kmd_job_submit,
    .job_check = kmd_job_check,
    .job_fallback_done = kmd_job_fallback_done,
};
