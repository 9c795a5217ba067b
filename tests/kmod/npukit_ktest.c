// SPDX-License-Identifier: MIT
/*
 * npukit_ktest: guest-side checks of the kernel driver (kmod/npukit.ko) through its UAPI
 * (include/npukit/uapi/npukit_accel.h). Run inside an `npu vp run` guest as root.
 *
 *   npukit_ktest info DEV             print what NPUKIT_IOCTL_GET_INFO reports
 *   npukit_ktest v0 DEV               v0: a NOP batch completes (DESC_TAIL, counters), the
 *                                     CPU-fallback contract (FALLBACK descriptor handed to
 *                                     this delegate, DESC_TAIL advanced, nothing dropped),
 *                                     the same descriptor without fallback is an error
 *                                     with code 0x08, and the device works afterwards
 *   npukit_ktest fault DEV error|hang a NOP batch under the server's --fault on DMA reads:
 *                                     error 0x06 (bus) or a timeout, the kernel recovered
 *                                     the device, the next batch completes
 *   npukit_ktest buffers DEV SYSFS    3 buffers: SYSFS (/sys/class/misc/npuN/buffers) counts
 *                                     3 while open or mapped, 0 after close and munmap
 *   npukit_ktest clock DEV            v0 on `npu vp`: the clock window (NPUKIT_IOCTL_CLOCK):
 *                                     exact steps, refused arguments, a job polled with
 *                                     NPUKIT_WAIT_POLL between steps, a blocking wait on a
 *                                     stepped clock, the free-running mode back after close
 *   npukit_ktest fuzz DEV N SEED      N random ioctls (numbers, sizes, fields, pointers);
 *                                     every call returns 0 or one of the documented errnos;
 *                                     then the device completes a NOP batch (v0)
 * Exit 0 on success, 1 with a message on the first failed check, 2 on usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "npukit/uapi/npukit_accel.h"

static const char *dev_path;

static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "npukit_ktest %s: FAIL: ", dev_path);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static int xopen(void) {
    int fd = open(dev_path, O_RDWR);
    if (fd < 0) fail("open: %s", strerror(errno));
    return fd;
}

static void xioctl(int fd, unsigned long cmd, void *arg, const char *what) {
    if (ioctl(fd, cmd, arg)) fail("%s: %s", what, strerror(errno));
}

static uint32_t reg_read(int fd, uint32_t off) {
    struct npukit_reg r = {.offset = off};
    xioctl(fd, NPUKIT_IOCTL_REG, &r, "NPUKIT_IOCTL_REG read");
    return r.value;
}

typedef struct bo {
    struct npukit_bo_create c;
    uint8_t *p;
} bo;

static void bo_new(int fd, bo *b, uint64_t size) {
    memset(b, 0, sizeof *b);
    b->c.size = size;
    xioctl(fd, NPUKIT_IOCTL_BO_CREATE, &b->c, "NPUKIT_IOCTL_BO_CREATE");
    void *m = mmap(NULL, b->c.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)b->c.mmap_offset);
    if (m == MAP_FAILED) fail("mmap of buffer %u: %s", b->c.handle, strerror(errno));
    b->p = m;
    for (uint64_t i = 0; i < b->c.size; i++)
        if (b->p[i]) fail("buffer %u is not zeroed at byte %llu", b->c.handle, (unsigned long long)i);
}

/* v0 descriptor: op in word 0 (low 16 bits), tag in word 15 */
static void v0_desc(uint8_t *ring, unsigned idx, uint32_t op, uint32_t tag) {
    uint32_t w[16] = {0};
    w[0] = op;
    w[15] = tag;
    memcpy(ring + 64u * idx, w, sizeof w);
}

static struct npukit_wait wait_job(int fd, int64_t ns) {
    struct npukit_wait w;
    memset(&w, 0, sizeof w);
    w.timeout_ns = ns;
    xioctl(fd, NPUKIT_IOCTL_WAIT, &w, "NPUKIT_IOCTL_WAIT");
    return w;
}

static void submit_v0(int fd, bo *ring, uint32_t first, uint32_t count, uint32_t flags) {
    struct npukit_submit s = {.format = NPUKIT_JOB_V0_DESC, .handle = ring->c.handle, .ring_len = 8,
                              .first = first, .count = count, .flags = flags,
                              .window_addr = ring->c.dma_addr, .window_size = ring->c.size};
    xioctl(fd, NPUKIT_IOCTL_SUBMIT, &s, "NPUKIT_IOCTL_SUBMIT (v0)");
}

/* A batch of NOPs from DESC_TAIL completes: the device works. */
static void v0_nop_batch(int fd, bo *ring) {
    uint32_t tail = reg_read(fd, 0x028) & 7;
    for (unsigned i = 0; i < 8; i++) v0_desc(ring->p, i, 0x00, 0x100 + i);
    submit_v0(fd, ring, tail, 3, 0);
    struct npukit_wait w = wait_job(fd, 2000000000);
    if (w.result != NPUKIT_WAIT_OK)
        fail("NOP batch: wait result %u (dev_code 0x%x), expected ok", w.result, w.dev_code);
    uint32_t t2 = reg_read(fd, 0x028) & 7;
    if (t2 != ((tail + 3) & 7)) fail("NOP batch: DESC_TAIL %u after 3 descriptors from %u", t2, tail);
}

static struct npukit_clock clock_call(int fd, uint32_t flags, uint32_t mode, uint64_t step, int want_errno) {
    struct npukit_clock c;
    memset(&c, 0, sizeof c);
    c.flags = flags;
    c.mode = mode;
    c.step = step;
    int rc = ioctl(fd, NPUKIT_IOCTL_CLOCK, &c);
    if (want_errno && (!rc || errno != want_errno))
        fail("NPUKIT_IOCTL_CLOCK flags %u mode %u step %llu: %s, expected errno %d", flags, mode,
             (unsigned long long)step, rc ? strerror(errno) : "accepted", want_errno);
    if (!want_errno && rc)
        fail("NPUKIT_IOCTL_CLOCK flags %u mode %u step %llu: %s", flags, mode, (unsigned long long)step,
             strerror(errno));
    return c;
}

static int cmd_clock(void) {
    int fd = xopen();
    struct npukit_info info;
    memset(&info, 0, sizeof info);
    xioctl(fd, NPUKIT_IOCTL_GET_INFO, &info, "NPUKIT_IOCTL_GET_INFO");
    if (!(info.flags & NPUKIT_INFO_CLOCK)) fail("GET_INFO: no NPUKIT_INFO_CLOCK on an `npu vp` function");
    struct npukit_clock c = clock_call(fd, 0, 0, 0, 0);
    if (c.mode != NPUKIT_CLOCK_FREE) fail("the clock of a freshly opened device is in mode %u, not free", c.mode);
    if (c.clock_khz != info.clock_hz / 1000) fail("clock %u kHz, GET_INFO says %llu Hz", c.clock_khz,
                                                  (unsigned long long)info.clock_hz);
    clock_call(fd, NPUKIT_CLOCK_STEP, 0, 100, EINVAL); /* not stepped */
    clock_call(fd, 4, 0, 0, EINVAL);
    clock_call(fd, NPUKIT_CLOCK_SET_MODE, 2, 0, EINVAL);
    clock_call(fd, 0, 1, 0, EINVAL);                   /* a mode without SET_MODE */
    clock_call(fd, 0, 0, 5, EINVAL);                   /* a step without STEP */
    c = clock_call(fd, NPUKIT_CLOCK_SET_MODE, NPUKIT_CLOCK_STEPPED, 0, 0);
    if (c.mode != NPUKIT_CLOCK_STEPPED || !(c.status & 1)) fail("stepped mode: mode %u status %u", c.mode, c.status);
    clock_call(fd, NPUKIT_CLOCK_STEP, 0, 0, EINVAL);
    clock_call(fd, NPUKIT_CLOCK_STEP, 0, 1ull << 32, EINVAL);
    uint64_t c0 = c.cycles;
    c = clock_call(fd, NPUKIT_CLOCK_STEP, 0, 1000, 0);
    if (c.cycles - c0 != 1000) fail("a step of 1000 cycles moved the device clock by %llu", (unsigned long long)(c.cycles - c0));
    c = clock_call(fd, NPUKIT_CLOCK_SET_MODE | NPUKIT_CLOCK_STEP, NPUKIT_CLOCK_STEPPED, 4321, 0);
    if (c.cycles - c0 != 5321) fail("SET_MODE + STEP 4321: the clock moved %llu from 1000", (unsigned long long)(c.cycles - c0 - 1000));

    /* a job polled between steps: BUSY until the device has run it, nothing advances it but the steps */
    bo ring;
    bo_new(fd, &ring, 4096);
    xioctl(fd, NPUKIT_IOCTL_RESET, NULL, "NPUKIT_IOCTL_RESET");
    uint32_t tail = reg_read(fd, 0x028) & 7;
    for (unsigned i = 0; i < 8; i++) v0_desc(ring.p, i, 0x00, 0x200 + i);
    submit_v0(fd, &ring, tail, 3, 0);
    c0 = clock_call(fd, 0, 0, 0, 0).cycles;
    struct npukit_wait w;
    memset(&w, 0, sizeof w);
    w.flags = NPUKIT_WAIT_POLL;
    w.timeout_ns = 5;
    if (!ioctl(fd, NPUKIT_IOCTL_WAIT, &w) || errno != EINVAL) fail("a POLL wait with a timeout was not refused");
    unsigned polls = 0, steps = 0;
    for (;;) {
        memset(&w, 0, sizeof w);
        w.flags = NPUKIT_WAIT_POLL;
        xioctl(fd, NPUKIT_IOCTL_WAIT, &w, "NPUKIT_IOCTL_WAIT (POLL)");
        polls++;
        if (w.result != NPUKIT_WAIT_BUSY) break;
        if (polls == 1 && w.progress != tail) fail("POLL before any step: progress %u, DESC_TAIL was %u", w.progress, tail);
        if (steps > 100000) fail("a NOP batch still BUSY after %u steps of 8 cycles", steps);
        clock_call(fd, NPUKIT_CLOCK_STEP, 0, 8, 0);
        steps++;
    }
    if (w.result != NPUKIT_WAIT_OK || w.progress != ((tail + 3) & 7))
        fail("POLL: result %u progress %u, expected ok at %u", w.result, w.progress, (tail + 3) & 7);
    uint64_t c1 = clock_call(fd, 0, 0, 0, 0).cycles;
    if (polls < 2 || c1 - c0 != 8ull * steps)
        fail("POLL: %u polls, %u steps of 8 cycles, but the clock moved %llu", polls, steps, (unsigned long long)(c1 - c0));
    printf("clock: 3 NOPs polled: %u polls, %u steps, %llu device cycles\n", polls, steps, (unsigned long long)(c1 - c0));
    /* a blocking wait on a stepped clock: the kernel steps the device itself */
    v0_nop_batch(fd, &ring);
    if (clock_call(fd, 0, 0, 0, 0).cycles == c1) fail("the blocking wait completed without stepping the device");
    munmap(ring.p, ring.c.size); /* a mapping keeps the file open */
    close(fd);
    fd = xopen();
    if (clock_call(fd, 0, 0, 0, 0).mode != NPUKIT_CLOCK_FREE) fail("the clock stayed stepped after close");
    close(fd);
    printf("clock: exact steps, refused arguments, POLL, blocking wait and free mode after close: ok\n");
    return 0;
}

static int cmd_info(void) {
    int fd = xopen();
    struct npukit_info i;
    memset(&i, 0, sizeof i);
    xioctl(fd, NPUKIT_IOCTL_GET_INFO, &i, "NPUKIT_IOCTL_GET_INFO");
    printf("api %u kind %u pci %04x:%04x id 0x%08x caps 0x%08x mmio %llu clock %llu Hz max_bo %llu irq %u flags %u\n",
           i.api_version, i.kind, i.vendor, i.device, i.id, i.caps, (unsigned long long)i.mmio_size,
           (unsigned long long)i.clock_hz, (unsigned long long)i.max_bo_size, i.irq_mode, i.flags);
    close(fd);
    return 0;
}

static int cmd_v0(void) {
    int fd = xopen();
    if (open(dev_path, O_RDWR) >= 0 || errno != EBUSY) fail("a second open did not fail with EBUSY");
    bo ring;
    bo_new(fd, &ring, 4096);
    xioctl(fd, NPUKIT_IOCTL_RESET, NULL, "NPUKIT_IOCTL_RESET");
    v0_nop_batch(fd, &ring);

    /* CPU fallback with cpu_fallback_select: NOP, FALLBACK, NOP, FALLBACK (the last one's tag
     * stays in COMPLETION_TAG: the kernel wrote it from the delegated descriptor) */
    uint32_t fb0 = reg_read(fd, 0x04c);
    uint32_t tail = reg_read(fd, 0x028) & 7;
    static const uint32_t ops[4] = {0x00, 0xff, 0x00, 0xff};
    for (unsigned i = 0; i < 4; i++) v0_desc(ring.p, (tail + i) & 7, ops[i], 0xa0 + i);
    submit_v0(fd, &ring, tail, 4, NPUKIT_SUBMIT_FALLBACK);
    struct npukit_wait w;
    unsigned delegated = 0;
    for (unsigned want = 1; want < 4; want += 2) {
        w = wait_job(fd, 2000000000);
        if (w.result != NPUKIT_WAIT_FALLBACK || w.index != ((tail + want) & 7))
            fail("fallback: wait result %u index %u (dev_code 0x%x), expected fallback at %u", w.result, w.index,
                 w.dev_code, (tail + want) & 7);
        uint32_t tag;
        memcpy(&tag, w.desc + 60, 4);
        if (tag != 0xa0 + want || w.desc[0] != 0xff)
            fail("fallback: handed-over descriptor has op 0x%x tag 0x%x", w.desc[0], tag);
        struct npukit_wait again;
        memset(&again, 0, sizeof again);
        again.timeout_ns = 1000;
        if (!ioctl(fd, NPUKIT_IOCTL_WAIT, &again) || errno != EINVAL)
            fail("a wait before NPUKIT_IOCTL_FALLBACK_DONE did not fail with EINVAL");
        struct npukit_fallback_done d = {.index = (w.index + 1) & 7};
        if (!ioctl(fd, NPUKIT_IOCTL_FALLBACK_DONE, &d) || errno != EINVAL) fail("FALLBACK_DONE of a wrong index accepted");
        d.index = w.index;
        xioctl(fd, NPUKIT_IOCTL_FALLBACK_DONE, &d, "NPUKIT_IOCTL_FALLBACK_DONE");
        delegated++;
    }
    w = wait_job(fd, 2000000000);
    if (w.result != NPUKIT_WAIT_OK) fail("fallback: after the delegate, wait result %u, expected ok", w.result);
    uint32_t t2 = reg_read(fd, 0x028) & 7, fb1 = reg_read(fd, 0x04c);
    if (t2 != ((tail + 4) & 7)) fail("fallback: DESC_TAIL %u, expected %u (a descriptor was dropped)", t2, (tail + 4) & 7);
    if (fb1 != fb0 + 2) fail("fallback: PERF_FALLBACKS %u -> %u, expected +2", fb0, fb1);
    if (reg_read(fd, 0x05c) != 0xa3) fail("fallback: COMPLETION_TAG 0x%x is not the last delegated descriptor's tag 0xa3",
                                          reg_read(fd, 0x05c));

    /* without cpu_fallback_select the same descriptor is an error, code 0x08, then usable */
    tail = t2;
    v0_desc(ring.p, tail, 0xff, 0xb0);
    submit_v0(fd, &ring, tail, 1, 0);
    w = wait_job(fd, 2000000000);
    if (w.result != NPUKIT_WAIT_ERROR || w.dev_code != 0x08)
        fail("no fallback: wait result %u dev_code 0x%x, expected error 0x08", w.result, w.dev_code);
    v0_nop_batch(fd, &ring);

    struct npukit_counters c;
    xioctl(fd, NPUKIT_IOCTL_COUNTERS, &c, "NPUKIT_IOCTL_COUNTERS");
    if (c.count != 16 || c.values[3] != fb1 + 1) fail("counters: count %u, PERF_FALLBACKS %llu (expected %u)", c.count,
                                                  (unsigned long long)c.values[3], fb1 + 1);
    printf("v0: NOP batches, CPU fallback (%u descriptors retired by the delegate, none dropped), error 0x08 "
           "without it: ok; PERF_CYCLES %llu\n", delegated, (unsigned long long)c.cycles);
    close(fd);
    return 0;
}

/* A NOP batch under an injected DMA fault (the server's --fault: the descriptor fetch fails
 * or hangs): the wait reports it, the kernel recovered the device, the next batch completes. */
static int cmd_fault(const char *want) {
    int fd = xopen();
    bo ring;
    bo_new(fd, &ring, 4096);
    uint32_t tail = reg_read(fd, 0x028) & 7;
    for (unsigned i = 0; i < 8; i++) v0_desc(ring.p, i, 0x00, i);
    submit_v0(fd, &ring, tail, 2, 0);
    struct npukit_wait w = wait_job(fd, 300000000);
    printf("fault: wait result %u dev_code 0x%x recovered %u fault_addr 0x%llx\n", w.result, w.dev_code, w.recovered,
           (unsigned long long)w.fault_addr);
    if (!strcmp(want, "error") && (w.result != NPUKIT_WAIT_ERROR || w.dev_code != 0x06 || !w.recovered ||
                                   w.fault_addr != ring.c.dma_addr + 64u * tail))
        fail("bus error: expected result error, code 0x06 (bus response) at the descriptor 0x%llx, recovered",
             (unsigned long long)(ring.c.dma_addr + 64u * tail));
    if (!strcmp(want, "hang") && (w.result != NPUKIT_WAIT_TIMEOUT || !w.recovered))
        fail("hang: expected result timeout with the device reset");
    v0_nop_batch(fd, &ring);
    printf("fault: the device completes a batch afterwards\n");
    close(fd);
    return 0;
}

/* Open, buffers, a batch, close: /sys/class/misc/npuN/buffers counts them and drops to 0. */
static int cmd_buffers(const char *sysfs) {
    int fd = xopen();
    bo b[3];
    for (unsigned i = 0; i < 3; i++) bo_new(fd, &b[i], 4096u << i);
    char buf[32] = {0};
    FILE *f = fopen(sysfs, "r");
    if (!f || !fgets(buf, sizeof buf, f)) fail("cannot read %s", sysfs);
    fclose(f);
    if (atoi(buf) != 3) fail("%s reads %s with 3 buffers alive", sysfs, buf);
    v0_nop_batch(fd, &b[0]);
    close(fd); /* the mappings still hold the buffers */
    f = fopen(sysfs, "r");
    if (!f || !fgets(buf, sizeof buf, f)) fail("cannot read %s", sysfs);
    fclose(f);
    if (atoi(buf) != 3) fail("%s reads %s after close with 3 mappings left", sysfs, buf);
    for (unsigned i = 0; i < 3; i++) munmap(b[i].p, b[i].c.size);
    f = fopen(sysfs, "r");
    if (!f || !fgets(buf, sizeof buf, f)) fail("cannot read %s", sysfs);
    fclose(f);
    if (atoi(buf) != 0) fail("%s reads %s after close and munmap: leaked buffers", sysfs, buf);
    return 0;
}

static uint64_t rng_state;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int cmd_fuzz(long n, uint64_t seed) {
    static const unsigned long cmds[] = {NPUKIT_IOCTL_GET_INFO, NPUKIT_IOCTL_BO_CREATE, NPUKIT_IOCTL_BO_FREE,
                                         NPUKIT_IOCTL_REG,      NPUKIT_IOCTL_SUBMIT,    NPUKIT_IOCTL_WAIT,
                                         NPUKIT_IOCTL_FALLBACK_DONE, NPUKIT_IOCTL_COUNTERS, NPUKIT_IOCTL_RESET,
                                         NPUKIT_IOCTL_IRQ,      NPUKIT_IOCTL_CLOCK};
    rng_state = seed | 1;
    int fd = xopen();
    struct npukit_info info;
    xioctl(fd, NPUKIT_IOCTL_GET_INFO, &info, "NPUKIT_IOCTL_GET_INFO");
    bo ring;
    bo_new(fd, &ring, 4096);
    long counts[8] = {0};
    uint8_t *arg = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (arg == MAP_FAILED) fail("mmap");
    munmap(arg + 4096, 4096); /* a hole after the argument page: EFAULT on overruns */
    for (long i = 0; i < n; i++) {
        unsigned long cmd;
        uint64_t r = rnd();
        switch (r % 8) {
        case 0: /* any number in the driver's range, any direction and size */
            cmd = _IOC(rnd() % 4, NPUKIT_IOCTL_BASE, rnd() % 16, rnd() % 256);
            break;
        case 1: /* a random number */
            cmd = (unsigned long)(uint32_t)rnd();
            break;
        default: /* a real command */
            cmd = cmds[rnd() % (sizeof cmds / sizeof cmds[0])];
        }
        for (unsigned b = 0; b < 256; b++) arg[b] = (uint8_t)rnd();
        /* mostly plausible fields: small handles, offsets, counts; the ring on v0 */
        if (rnd() % 2) {
            uint32_t *w = (uint32_t *)arg;
            for (unsigned k = 0; k < 16; k++)
                if (rnd() % 2) w[k] = (uint32_t)(rnd() % 9);
            if (cmd == NPUKIT_IOCTL_WAIT) {
                struct npukit_wait *wt = (struct npukit_wait *)arg;
                memset(wt, 0, sizeof *wt);
                wt->timeout_ns = 1 + (int64_t)(rnd() % 2000000);
            }
            if (cmd == NPUKIT_IOCTL_SUBMIT && info.kind == NPUKIT_KIND_V0 && rnd() % 2) {
                /* random descriptors confined to the ring's own buffer by TENSOR_MEM */
                struct npukit_submit *s = (struct npukit_submit *)arg;
                for (unsigned b = 0; b < 512; b++) ring.p[b] = (uint8_t)rnd();
                memset(s, 0, sizeof *s);
                s->format = NPUKIT_JOB_V0_DESC;
                s->handle = ring.c.handle;
                s->ring_len = 8;
                s->first = (uint32_t)(rnd() % 8);
                s->count = (uint32_t)(rnd() % 8);
                s->flags = (uint32_t)(rnd() % 2);
                s->window_addr = ring.c.dma_addr;
                s->window_size = ring.c.size;
            }
            if (cmd == NPUKIT_IOCTL_BO_CREATE) ((struct npukit_bo_create *)arg)->size = rnd() % (1u << 20);
            if (cmd == NPUKIT_IOCTL_CLOCK) ((struct npukit_clock *)arg)->step = rnd() % 100000;
        }
        if (cmd == NPUKIT_IOCTL_REG) {
            /* register writes are the privileged driver path (random ones could point the
             * device's DMA anywhere in guest memory, there is no IOMMU): reads only */
            ((struct npukit_reg *)arg)->flags = 0;
        }
        if (cmd == NPUKIT_IOCTL_RESET && rnd() % 4) continue;
        if (_IOC_TYPE(cmd) == NPUKIT_IOCTL_BASE && (_IOC_DIR(cmd) & _IOC_WRITE) && _IOC_NR(cmd) == 0x03 &&
            _IOC_SIZE(cmd) >= 12)
            ((struct npukit_reg *)arg)->flags = 0;
        void *p = arg;
        switch (rnd() % 16) {
        case 0: p = NULL; break;
        case 1: p = arg + 4096 - 8; break; /* runs into the hole */
        default: break;
        }
        int rc = ioctl(fd, cmd, p);
        int e = rc ? errno : 0;
        if (rc && e != ENOTTY && e != EINVAL && e != ENOENT && e != EBUSY && e != ENOMEM && e != ENOSPC &&
            e != EFAULT && e != ECANCELED && e != ENODEV)
            fail("call %ld: ioctl 0x%lx returned errno %d (%s), not a documented one", i, cmd, e, strerror(e));
        if (rc && e != ENOTTY && e != EFAULT && !(_IOC_TYPE(cmd) == NPUKIT_IOCTL_BASE))
            fail("call %ld: foreign ioctl 0x%lx gave errno %d instead of ENOTTY", i, cmd, e);
        counts[rc ? (e == ENOTTY ? 1 : e == EINVAL ? 2 : e == EFAULT ? 3 : 4) : 0]++;
        if (cmd == NPUKIT_IOCTL_BO_CREATE && !rc && p == arg) {
            /* free most new buffers again so the fuzzer does not just exhaust memory */
            struct npukit_bo_free f = {.handle = ((struct npukit_bo_create *)arg)->handle};
            if (f.handle != ring.c.handle && rnd() % 4) xioctl(fd, NPUKIT_IOCTL_BO_FREE, &f, "BO_FREE of a new buffer");
        }
    }
    printf("fuzz: %ld calls: %ld ok, %ld ENOTTY, %ld EINVAL, %ld EFAULT, %ld other documented errnos\n", n, counts[0],
           counts[1], counts[2], counts[3], counts[4]);
    /* the device still works: with the clock free-running again (a fuzzed NPUKIT_IOCTL_CLOCK may
     * have left it stepped, where the final batch would depend on how fast the host steps it) */
    if (info.flags & NPUKIT_INFO_CLOCK) clock_call(fd, NPUKIT_CLOCK_SET_MODE, NPUKIT_CLOCK_FREE, 0, 0);
    xioctl(fd, NPUKIT_IOCTL_RESET, NULL, "NPUKIT_IOCTL_RESET");
    if (info.kind == NPUKIT_KIND_V0) {
        bo fresh; /* the fuzzed BO_FREE calls may have freed the ring's handle */
        bo_new(fd, &fresh, 4096);
        v0_nop_batch(fd, &fresh);
        printf("fuzz: the device completes a NOP batch afterwards\n");
    }
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: npukit_ktest info|v0|clock|fault|buffers|fuzz DEV [ARGS]\n");
        return 2;
    }
    dev_path = argv[2];
    if (!strcmp(argv[1], "info")) return cmd_info();
    if (!strcmp(argv[1], "v0")) return cmd_v0();
    if (!strcmp(argv[1], "clock")) return cmd_clock();
    if (!strcmp(argv[1], "fault") && argc == 4) return cmd_fault(argv[3]);
    if (!strcmp(argv[1], "buffers") && argc == 4) return cmd_buffers(argv[3]);
    if (!strcmp(argv[1], "fuzz") && argc == 5) return cmd_fuzz(atol(argv[3]), strtoull(argv[4], NULL, 0));
    fprintf(stderr, "usage: npukit_ktest info|v0|clock|fault|buffers|fuzz DEV [ARGS]\n");
    return 2;
}
