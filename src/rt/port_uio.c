// SPDX-License-Identifier: MIT
/*
 * Port backend: real hardware through Linux UIO (docs/ports.md).
 *
 *   "uio:/dev/uioN[,mem=PATH][,phys=ADDR][,size=BYTES][,off=BYTES][,sysfs=DIR]"
 *
 * Registers: map 0 of the UIO device, mmapped shared; its size comes from
 * /sys/class/uio/uioN/maps/map0/size, or, when the path is a regular file,
 * from the file size (the tests use regular files in place of the device).
 * Accesses are single volatile 32-bit loads/stores (64-bit for write64).
 *
 * Guest memory: the file PATH (a u-dma-buf device, a /dev/mem window, or a
 * regular file in tests), mmapped shared from file offset `off` (default 0;
 * for /dev/mem the default is phys), seen by the device at physical address
 * `phys`, `size` bytes long. phys and size default to the u-dma-buf sysfs
 * attributes (/sys/class/u-dma-buf/NAME/phys_addr and size) for /dev/NAME,
 * and size to the length of a regular file. Accesses outside
 * [phys, phys+size) fail with NPK_EBUS naming the address. The port's buffer
 * allocator hands out addresses from that window.
 *
 * sysfs: "sysfs=DIR" (or the environment variable NPUKIT_SYSFS_CLASS) replaces
 * /sys/class, so a fake UIO device can be laid out in a directory
 * (DIR/uio/uioN/maps/map0/{addr,size,offset}, DIR/u-dma-buf/NAME/{phys_addr,
 * size}); with it a regular file stands for the device as a UIO device does:
 * map 0's size and offset come from sysfs, not from the file.
 * map0/offset (the registers' offset inside the first mapped page, for a
 * window that is not page-aligned) is honoured: the port maps offset+size
 * bytes and the registers start at offset.
 *
 * Time: npk_port_wait() sleeps cycles / hz seconds (nanosleep).
 * Interrupts: read() on a UIO fd blocks, so npk_port_irq(p, 0) polls the fd
 * without blocking; when an interrupt was signalled it consumes the event
 * count, re-enables the interrupt (writes 1, as uio_pdrv_genirq expects) and
 * returns 1; otherwise 0. It therefore reports "an interrupt arrived since the
 * previous call", not the line level. Regular files have no interrupts (0).
 */
#include "port.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct uio {
    int fd;
    int is_chr;               /* a real character device (interrupts available) */
    volatile uint8_t *regs;   /* map 0's registers (map + map0 offset) */
    size_t regs_size;
    void *map;                /* the mapping of map 0 */
    size_t map_size;
    int mfd;
    uint8_t *mem;             /* guest memory window (may be NULL) */
    uint64_t phys, size;
    char dev[256], mem_path[256];
} uio;

static uio *U(npk_port *p) { return p->impl; }

static int reg_check(npk_port *p, uint32_t off, unsigned size, const char *what) {
    uio *u = U(p);
    if (off % size)
        return npk_err(NPK_EINVAL, "uio %s: %s at offset 0x%" PRIx32 " is not %u-byte aligned", u->dev, what, off, size);
    if ((uint64_t)off + size > u->regs_size)
        return npk_err(NPK_EINVAL, "uio %s: %s at offset 0x%" PRIx32 " is outside map 0 (%zu bytes)", u->dev, what, off,
                       u->regs_size);
    return 0;
}

static int uio_read32(npk_port *p, uint32_t off, uint32_t *val) {
    int rc = reg_check(p, off, 4, "register read");
    if (rc) return rc;
    *val = *(volatile uint32_t *)(U(p)->regs + off);
    return 0;
}

static int uio_write32(npk_port *p, uint32_t off, uint32_t val) {
    int rc = reg_check(p, off, 4, "register write");
    if (rc) return rc;
    *(volatile uint32_t *)(U(p)->regs + off) = val;
    return 0;
}

static int uio_write64(npk_port *p, uint32_t off, uint64_t val) {
    int rc = reg_check(p, off, 8, "64-bit register write");
    if (rc) return rc;
    *(volatile uint64_t *)(U(p)->regs + off) = val;
    return 0;
}

static int mem_check(npk_port *p, uint64_t addr, size_t len, const char *what) {
    uio *u = U(p);
    if (!u->mem)
        return npk_err(NPK_EBUS,
                       "uio %s: %s at 0x%" PRIx64 ": no guest memory buffer (add ,mem=PATH,phys=ADDR,size=BYTES)",
                       u->dev, what, addr);
    if (addr < u->phys || addr - u->phys > u->size || len > u->size - (addr - u->phys))
        return npk_err(NPK_EBUS,
                       "uio %s: %s of %zu bytes at 0x%" PRIx64 " is outside the guest buffer 0x%" PRIx64 "-0x%" PRIx64
                       " (%s)",
                       u->dev, what, len, addr, u->phys, u->phys + u->size - 1, u->mem_path);
    return 0;
}

static int uio_mem_read(npk_port *p, uint64_t addr, void *buf, size_t len) {
    int rc = mem_check(p, addr, len, "memory read");
    if (rc) return rc;
    memcpy(buf, U(p)->mem + (addr - U(p)->phys), len);
    return 0;
}

static int uio_mem_write(npk_port *p, uint64_t addr, const void *buf, size_t len) {
    int rc = mem_check(p, addr, len, "memory write");
    if (rc) return rc;
    memcpy(U(p)->mem + (addr - U(p)->phys), buf, len);
    /* Make the CPU's stores visible before a following doorbell write. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return 0;
}

static int uio_wait(npk_port *p, uint64_t cycles) { return npk_port_sleep(p, cycles); }

static int uio_irq(npk_port *p, int line) {
    uio *u = U(p);
    if (line != 0 || !u->is_chr) return 0;
    struct pollfd pf = {u->fd, POLLIN, 0};
    if (poll(&pf, 1, 0) <= 0 || !(pf.revents & POLLIN)) return 0;
    uint32_t count;
    if (read(u->fd, &count, sizeof count) != (ssize_t)sizeof count) return 0;
    int32_t on = 1;
    ssize_t w = write(u->fd, &on, sizeof on); /* re-enable; drivers without irqcontrol refuse, harmlessly */
    (void)w;
    return 1;
}

static void uio_close(npk_port *p) {
    uio *u = U(p);
    if (!u) return;
    if (u->map) munmap(u->map, u->map_size);
    if (u->mem) munmap(u->mem, u->size);
    if (u->fd >= 0) close(u->fd);
    if (u->mfd >= 0) close(u->mfd);
    free(u);
    p->impl = NULL;
}

/* Read one number (base 0: the sysfs files use 0x.. hex) from a small file. */
static int read_sysfs_u64(const char *path, uint64_t *v) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char buf[64] = "";
    char *ok = fgets(buf, sizeof buf, f);
    fclose(f);
    if (!ok) return -1;
    errno = 0;
    char *end;
    unsigned long long x = strtoull(buf, &end, 0);
    if (errno || end == buf) return -1;
    *v = x;
    return 0;
}

static int parse_num(const char *s, uint64_t *v) {
    if (!*s || *s == '-') return -1;
    errno = 0;
    char *end;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || *end) return -1;
    *v = x;
    return 0;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* "uio:" target: the device path and its options.
 * Why long: the spec's options, then map 0 from sysfs or the file, then the guest-memory
 * window, each refused with its own message; one goto-cleanup path releases what was taken. */
static int uio_open(npk_port *p, const char *whole, const char *target, const char *opts) {
    (void)whole;
    (void)opts; /* device options belong to the hardware */
    uio *u = calloc(1, sizeof *u);
    if (!u) return npk_err(NPK_ENOMEM, "out of memory");
    u->fd = u->mfd = -1;
    p->impl = u; /* so that uio_close can clean up on every error path */
    char *spec = strdup(target);
    int rc = 0;
    uint64_t phys = 0, size = 0, off = 0;
    int have_phys = 0, have_size = 0, have_off = 0;
    const char *mem = NULL, *sysfs = getenv("NPUKIT_SYSFS_CLASS");
    if (sysfs && !*sysfs) sysfs = NULL;
    if (!spec) {
        rc = npk_err(NPK_ENOMEM, "out of memory");
        goto out;
    }
    char *comma = strchr(spec, ',');
    if (comma) *comma = 0;
    if (!*spec) {
        rc = npk_err(NPK_EINVAL, "port 'uio:%s': missing device path (expected uio:/dev/uioN[,mem=PATH,phys=ADDR,size=BYTES])",
                     target);
        goto out;
    }
    snprintf(u->dev, sizeof u->dev, "%s", spec);
    for (char *opt = comma ? comma + 1 : NULL; opt;) {
        char *next = strchr(opt, ',');
        if (next) *next++ = 0;
        char *eq = strchr(opt, '=');
        if (!eq) {
            rc = npk_err(NPK_EINVAL, "port 'uio:%s': option '%s' needs a value (mem=, phys=, size=, off=, sysfs=)", target, opt);
            goto out;
        }
        *eq = 0;
        const char *val = eq + 1;
        if (!strcmp(opt, "mem")) {
            mem = val;
        } else if (!strcmp(opt, "sysfs")) {
            if (!*val) {
                rc = npk_err(NPK_EINVAL, "port 'uio:%s': sysfs= needs a directory (the /sys/class replacement)", target);
                goto out;
            }
            sysfs = val;
        } else if (!strcmp(opt, "phys") || !strcmp(opt, "size") || !strcmp(opt, "off")) {
            uint64_t v;
            if (parse_num(val, &v)) {
                rc = npk_err(NPK_EINVAL, "port 'uio:%s': bad number '%s' for %s=", target, val, opt);
                goto out;
            }
            if (opt[0] == 'p') phys = v, have_phys = 1;
            else if (opt[0] == 's') size = v, have_size = 1;
            else off = v, have_off = 1;
        } else {
            rc = npk_err(NPK_EINVAL, "port 'uio:%s': unknown option '%s' (expected mem=, phys=, size=, off=, sysfs=)", target, opt);
            goto out;
        }
        opt = next;
    }
    if ((have_phys || have_size || have_off) && !mem) {
        rc = npk_err(NPK_EINVAL, "port 'uio:%s': phys=/size=/off= describe the guest buffer and need mem=PATH", target);
        goto out;
    }

    /* Registers: map 0. */
    u->fd = open(u->dev, O_RDWR | O_CLOEXEC);
    if (u->fd < 0) {
        rc = npk_err(NPK_EIO, "port 'uio:%s': cannot open '%s': %s", target, u->dev, strerror(errno));
        goto out;
    }
    struct stat st;
    if (fstat(u->fd, &st)) {
        rc = npk_err(NPK_EIO, "port 'uio:%s': cannot stat '%s': %s", target, u->dev, strerror(errno));
        goto out;
    }
    u->is_chr = S_ISCHR(st.st_mode);
    const char *cls = sysfs ? sysfs : "/sys/class";
    if (sysfs) {
        struct stat ds;
        int bad = stat(sysfs, &ds) ? errno : 0;
        if (bad || !S_ISDIR(ds.st_mode)) {
            rc = npk_err(NPK_EINVAL, "port 'uio:%s': sysfs directory '%s': %s", target, sysfs,
                         bad ? strerror(bad) : "not a directory");
            goto out;
        }
    }
    uint64_t map0 = 0, map0_off = 0;
    char sys[512];
    snprintf(sys, sizeof sys, "%s/uio/%s/maps/map0/size", cls, base_name(u->dev));
    if (u->is_chr || sysfs) {
        if (!S_ISCHR(st.st_mode) && !S_ISREG(st.st_mode)) {
            rc = npk_err(NPK_EINVAL, "port 'uio:%s': '%s' is neither a UIO character device nor a regular file", target,
                         u->dev);
            goto out;
        }
        errno = 0;
        if (read_sysfs_u64(sys, &map0)) {
            rc = npk_err(NPK_EIO, "port 'uio:%s': cannot read the size of map 0 from %s: %s", target, sys,
                         strerror(errno ? errno : EINVAL));
            goto out;
        }
        /* the registers' offset inside the first page (absent on old kernels: 0) */
        snprintf(sys, sizeof sys, "%s/uio/%s/maps/map0/offset", cls, base_name(u->dev));
        if (access(sys, F_OK) == 0 && read_sysfs_u64(sys, &map0_off)) {
            rc = npk_err(NPK_EIO, "port 'uio:%s': cannot read %s as a number", target, sys);
            goto out;
        }
        long pg = sysconf(_SC_PAGESIZE);
        if (pg > 0 && map0_off >= (uint64_t)pg) {
            rc = npk_err(NPK_EINVAL, "port 'uio:%s': map 0 offset 0x%" PRIx64 " (%s) is not inside the first page (%ld bytes)",
                         target, map0_off, sys, pg);
            goto out;
        }
        if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < map0_off + map0) {
            rc = npk_err(NPK_EINVAL, "port 'uio:%s': '%s' has %lld bytes, map 0 needs offset+size = %" PRIu64, target, u->dev,
                         (long long)st.st_size, map0_off + map0);
            goto out;
        }
    } else if (S_ISREG(st.st_mode)) {
        map0 = (uint64_t)st.st_size;
    } else {
        rc = npk_err(NPK_EINVAL, "port 'uio:%s': '%s' is neither a UIO character device nor a regular file", target,
                     u->dev);
        goto out;
    }
    if (map0 < 4) {
        rc = npk_err(NPK_EINVAL, "port 'uio:%s': map 0 of '%s' is %" PRIu64 " bytes, too small for registers", target,
                     u->dev, map0);
        goto out;
    }
    if (map0 > p->cls->mmio_size) map0 = p->cls->mmio_size; /* the window is all we touch */
    void *r = mmap(NULL, (size_t)(map0_off + map0), PROT_READ | PROT_WRITE, MAP_SHARED, u->fd, 0);
    if (r == MAP_FAILED) {
        rc = npk_err(NPK_EIO, "port 'uio:%s': cannot map map 0 (%" PRIu64 " bytes) of '%s': %s", target, map0, u->dev,
                     strerror(errno));
        goto out;
    }
    u->map = r;
    u->map_size = (size_t)(map0_off + map0);
    u->regs = (volatile uint8_t *)r + map0_off;
    u->regs_size = (size_t)map0;
    if (u->is_chr) { /* enable the interrupt (drivers without irqcontrol refuse, harmlessly) */
        int32_t on = 1;
        ssize_t w = write(u->fd, &on, sizeof on);
        (void)w;
    }

    /* Guest memory. */
    if (mem) {
        snprintf(u->mem_path, sizeof u->mem_path, "%s", mem);
        int is_devmem = !strcmp(mem, "/dev/mem");
        u->mfd = open(mem, O_RDWR | O_CLOEXEC | (is_devmem ? O_SYNC : 0));
        if (u->mfd < 0) {
            rc = npk_err(NPK_EIO, "port 'uio:%s': cannot open guest memory '%s': %s", target, mem, strerror(errno));
            goto out;
        }
        struct stat ms;
        if (fstat(u->mfd, &ms)) {
            rc = npk_err(NPK_EIO, "port 'uio:%s': cannot stat '%s': %s", target, mem, strerror(errno));
            goto out;
        }
        if ((S_ISCHR(ms.st_mode) || sysfs) && !is_devmem) { /* u-dma-buf: take what sysfs says */
            char sp[512];
            snprintf(sp, sizeof sp, "%s/u-dma-buf/%s/phys_addr", cls, base_name(mem));
            if (!have_phys && !read_sysfs_u64(sp, &phys)) have_phys = 1;
            snprintf(sp, sizeof sp, "%s/u-dma-buf/%s/size", cls, base_name(mem));
            if (!have_size && !read_sysfs_u64(sp, &size)) have_size = 1;
        }
        if (S_ISREG(ms.st_mode)) {
            uint64_t fsz = (uint64_t)ms.st_size;
            if (!have_size) {
                size = fsz > off ? fsz - off : 0;
                have_size = 1;
            } else if (off > fsz || size > fsz - off) {
                rc = npk_err(NPK_EINVAL, "port 'uio:%s': guest memory file '%s' has %" PRIu64
                             " bytes, smaller than off+size = %" PRIu64,
                             target, mem, fsz, off + size);
                goto out;
            }
        }
        if (!have_phys) {
            rc = npk_err(NPK_EINVAL, "port 'uio:%s': mem=%s needs phys=ADDR (the buffer's physical address as the "
                         "device sees it)", target, mem);
            goto out;
        }
        if (!have_size || !size) {
            rc = npk_err(NPK_EINVAL, "port 'uio:%s': mem=%s needs size=BYTES (non-zero)", target, mem);
            goto out;
        }
        if (phys + size - 1 < phys) {
            rc = npk_err(NPK_EINVAL, "port 'uio:%s': phys+size wraps around the address space", target);
            goto out;
        }
        if (is_devmem && !have_off) off = phys;
        long pg = sysconf(_SC_PAGESIZE);
        if (pg > 0 && off % (uint64_t)pg) {
            rc = npk_err(NPK_EINVAL, "port 'uio:%s': off=0x%" PRIx64 " is not a multiple of the page size (%ld)", target,
                         off, pg);
            goto out;
        }
        if (size > SIZE_MAX) {
            rc = npk_err(NPK_EINVAL, "port 'uio:%s': size too large", target);
            goto out;
        }
        void *m = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, u->mfd, (off_t)off);
        if (m == MAP_FAILED) {
            rc = npk_err(NPK_EIO, "port 'uio:%s': cannot map %" PRIu64 " bytes of '%s': %s", target, size, mem,
                         strerror(errno));
            goto out;
        }
        u->mem = m;
        u->phys = phys;
        u->size = size;
        p->arena_base = phys;
        p->arena_size = size;
    } else {
        p->arena_size = 0; /* no buffer: allocations fail with a message */
    }
out:
    free(spec);
    if (rc) uio_close(p);
    return rc;
}

const npk_port_backend npk_uio_port = {
    .info = {"uio", "uio:/dev/uioN",
             "real hardware through Linux UIO: map 0 is the register window; guest memory is a physically contiguous buffer "
             "(,mem=PATH,phys=ADDR,size=BYTES[,off=BYTES][,sysfs=DIR])"},
    .schemes = {"uio:"},
    .open = uio_open,
    .read32 = uio_read32,
    .write32 = uio_write32,
    .write64 = uio_write64,
    .mem_read = uio_mem_read,
    .mem_write = uio_mem_write,
    .wait = uio_wait,
    .irq = uio_irq,
    .close = uio_close,
};
