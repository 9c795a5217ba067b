// SPDX-License-Identifier: MIT
/*
 * The UIO port (src/rt/port_uio.c) without hardware: regular temporary files
 * stand in for the UIO device (map 0 = the file, its size = the file size) and
 * for the guest memory buffer. The independent check is plain file I/O
 * (pread/pwrite) on the same files. Also: precise errors for a missing device
 * file and for bad options.
 *
 * A fake UIO device laid out as Linux does (test_sysfs): a directory standing
 * for /sys/class (uio/uio3/maps/map0/{addr,size,offset} and
 * u-dma-buf/udmabuf0/{phys_addr,size}), given with sysfs=DIR or
 * NPUKIT_SYSFS_CLASS, and regular files for /dev/uio3 and /dev/udmabuf0.
 * The port takes map 0's size and offset and the buffer's address and size
 * from sysfs, and the shell driver runs end to end over it: its register
 * writes land at the ABI's offsets in the device file and its ring bytes in
 * the buffer file.
 */
#include "check.h"
#include "npukit/npu.h"
#include "npukit/shell.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int contains(const char *s, const char *what) {
    int ok = strstr(s, what) != NULL;
    if (!ok) fprintf(stderr, "  message '%s' lacks '%s'\n", s, what);
    return ok;
}

static int make_file(char *path, size_t size) {
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    if (ftruncate(fd, (off_t)size)) {
        close(fd);
        return -1;
    }
    return fd;
}

static void test_errors(const char *regs, const char *mem) {
    npk_port *p = NULL;
    char spec[1024];
    CHECK_EQ(npk_port_open(&p, "uio:/nonexistent/uio9", "e1", NULL), -NPK_EIO);
    CHECK(contains(npk_errmsg(), "cannot open '/nonexistent/uio9'"));
    CHECK(contains(npk_errmsg(), "No such file"));
    CHECK(p == NULL);
    CHECK_EQ(npk_port_open(&p, "uio:", "e1", NULL), -NPK_EINVAL);
    CHECK(contains(npk_errmsg(), "missing device path"));
    snprintf(spec, sizeof spec, "uio:%s,colour=blue", regs);
    CHECK_EQ(npk_port_open(&p, spec, "e1", NULL), -NPK_EINVAL);
    CHECK(contains(npk_errmsg(), "unknown option 'colour'"));
    snprintf(spec, sizeof spec, "uio:%s,mem", regs);
    CHECK_EQ(npk_port_open(&p, spec, "e1", NULL), -NPK_EINVAL);
    CHECK(contains(npk_errmsg(), "option 'mem' needs a value"));
    snprintf(spec, sizeof spec, "uio:%s,mem=%s,phys=0x8000zz", regs, mem);
    CHECK_EQ(npk_port_open(&p, spec, "e1", NULL), -NPK_EINVAL);
    CHECK(contains(npk_errmsg(), "bad number '0x8000zz' for phys="));
    snprintf(spec, sizeof spec, "uio:%s,phys=0x80000000", regs);
    CHECK_EQ(npk_port_open(&p, spec, "e1", NULL), -NPK_EINVAL);
    CHECK(contains(npk_errmsg(), "need mem=PATH"));
    snprintf(spec, sizeof spec, "uio:%s,mem=%s", regs, mem);
    CHECK_EQ(npk_port_open(&p, spec, "e1", NULL), -NPK_EINVAL);
    CHECK(contains(npk_errmsg(), "needs phys=ADDR"));
    snprintf(spec, sizeof spec, "uio:%s,mem=%s,phys=0x80000000,size=0x100000", regs, mem);
    CHECK_EQ(npk_port_open(&p, spec, "e1", NULL), -NPK_EINVAL);
    CHECK(contains(npk_errmsg(), "smaller than off+size"));
    snprintf(spec, sizeof spec, "uio:%s,mem=/nonexistent/buf,phys=0x80000000,size=4096", regs);
    CHECK_EQ(npk_port_open(&p, spec, "e1", NULL), -NPK_EIO);
    CHECK(contains(npk_errmsg(), "cannot open guest memory '/nonexistent/buf'"));
    CHECK_EQ(npk_port_open(&p, "uio:/dev/null", "e1", NULL), -NPK_EIO);
    CHECK(contains(npk_errmsg(), "/sys/class/uio/null/maps/map0/size"));
    CHECK(p == NULL);
}

static void test_round_trips(const char *regs, int rfd, const char *mem, int mfd) {
    npk_port *p = NULL;
    char spec[1024];
    snprintf(spec, sizeof spec, "uio:%s,mem=%s,phys=0x80000000,size=0x10000", regs, mem);
    int rc = npk_port_open(&p, spec, "e1", NULL);
    if (rc) fprintf(stderr, "open: %s\n", npk_errmsg());
    CHECK_EQ(rc, 0);
    if (rc) return;
    CHECK_STR(npk_port_kind(p), "uio");
    /* register writes land little-endian in map 0 */
    CHECK_EQ(npk_port_write32(p, 0x10, 0xdeadbeef), 0);
    uint8_t b[8] = {0};
    CHECK_EQ(pread(rfd, b, 4, 0x10), 4);
    CHECK(b[0] == 0xef && b[1] == 0xbe && b[2] == 0xad && b[3] == 0xde);
    /* register reads see what the "hardware" put there */
    uint8_t in[4] = {0x78, 0x56, 0x34, 0x12};
    CHECK_EQ(pwrite(rfd, in, 4, 0x2c), 4);
    uint32_t v = 0;
    CHECK_EQ(npk_port_read32(p, 0x2c, &v), 0);
    CHECK_EQ(v, 0x12345678);
    CHECK_EQ(npk_port_write64(p, 0x40, 0x0102030405060708ull), 0);
    CHECK_EQ(pread(rfd, b, 8, 0x40), 8);
    CHECK(b[0] == 8 && b[3] == 5 && b[4] == 4 && b[7] == 1);
    CHECK_EQ(npk_port_read32(p, 0x44, &v), 0);
    CHECK_EQ(v, 0x01020304);
    /* register errors */
    CHECK_EQ(npk_port_read32(p, 0x2e, &v), -NPK_EINVAL);
    CHECK(contains(npk_errmsg(), "not 4-byte aligned"));
    CHECK_EQ(npk_port_write64(p, 0x44, 1), -NPK_EINVAL);
    CHECK_EQ(npk_port_read32(p, 0x1000, &v), -NPK_EINVAL);
    CHECK(contains(npk_errmsg(), "outside map 0 (4096 bytes)"));
    /* guest memory: phys 0x80000000 is file offset 0 */
    uint8_t w[300];
    for (int i = 0; i < 300; i++) w[i] = (uint8_t)(i * 13 + 1);
    CHECK_EQ(npk_port_mem_write(p, 0x80000100, w, 300), 0);
    uint8_t r[300] = {0};
    CHECK_EQ(pread(mfd, r, 300, 0x100), 300);
    CHECK(!memcmp(w, r, 300));
    CHECK_EQ(pwrite(mfd, "hello", 5, 0xfffb), 5);
    char h[6] = {0};
    CHECK_EQ(npk_port_mem_read(p, 0x8000fffb, h, 5), 0);
    CHECK_STR(h, "hello");
    /* outside the buffer: EBUS naming the address */
    CHECK_EQ(npk_port_mem_read(p, 0x8000fffc, h, 5), -NPK_EBUS);
    CHECK(contains(npk_errmsg(), "0x8000fffc"));
    CHECK(contains(npk_errmsg(), "outside the guest buffer 0x80000000-0x8000ffff"));
    CHECK_EQ(npk_port_mem_write(p, 0x1000, w, 4), -NPK_EBUS);
    CHECK(contains(npk_errmsg(), "0x1000"));
    /* the allocator hands out the buffer's addresses */
    uint64_t a = 0;
    CHECK_EQ(npk_port_alloc(p, 0x1000, 4096, &a), 0);
    CHECK(a >= 0x80000000ull && a + 0x1000 <= 0x80010000ull);
    CHECK(npk_port_alloc(p, 0x20000, 16, &a) < 0);
    /* time passes as a sleep; no interrupts from a regular file */
    CHECK_EQ(npk_port_wait(p, 1000), 0);
    CHECK_EQ(npk_port_cycles(p), 1000);
    CHECK_EQ(npk_port_irq(p, 0), 0);
    /* no energy over uio (docs/energy.md): the registers carry no energy counter and the
     * cycles are the host's sleeps, so there is nothing to price */
    {
        npk_energy e;
        npk_area ar;
        uint32_t nm;
        CHECK_EQ(npk_port_energy(p, &e, &ar, &nm), -NPK_EUNSUPPORTED);
    }
    npk_port_close(p);

    /* without mem=: registers work, memory fails with a hint */
    snprintf(spec, sizeof spec, "uio:%s", regs);
    CHECK_EQ(npk_port_open(&p, spec, "e1", NULL), 0);
    if (p) {
        CHECK_EQ(npk_port_read32(p, 0x10, &v), 0);
        CHECK_EQ(v, 0xdeadbeef);
        CHECK_EQ(npk_port_mem_read(p, 0x80000000, h, 1), -NPK_EBUS);
        CHECK(contains(npk_errmsg(), "no guest memory buffer"));
        npk_port_close(p);
    }
    /* size defaults to the length of a regular file */
    snprintf(spec, sizeof spec, "uio:%s,mem=%s,phys=0x1000000", regs, mem);
    CHECK_EQ(npk_port_open(&p, spec, "e1", NULL), 0);
    if (p) {
        CHECK_EQ(npk_port_mem_read(p, 0x100fffb, h, 5), 0);
        CHECK_STR(h, "hello");
        CHECK_EQ(npk_port_mem_read(p, 0x1010000, h, 1), -NPK_EBUS);
        npk_port_close(p);
    }
}

static void put_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static uint32_t file32(int fd, off_t off) {
    uint8_t b[4] = {0};
    CHECK_EQ(pread(fd, b, 4, off), 4);
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void set32(int fd, off_t off, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    CHECK_EQ(pwrite(fd, b, 4, off), 4);
}

/* Opening spec as a shell port fails with code and a message containing msg. */
static void refuse(const char *spec, int code, const char *msg) {
    npk_port *p = NULL;
    CHECK_EQ(npk_port_open(&p, spec, "shell", NULL), code);
    CHECK(contains(npk_errmsg(), msg));
    CHECK(p == NULL);
}

static void test_sysfs(void) {
    char root[] = "/tmp/npk-uio-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    char d[1024], cls[256], dev[256], buf[256], map0[256], spec[2048];
    const char *dirs[] = {"dev", "class", "class/uio", "class/uio/uio3", "class/uio/uio3/maps", "class/uio/uio3/maps/map0",
                          "class/u-dma-buf", "class/u-dma-buf/udmabuf0"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(d, sizeof d, "%s/%s", root, dirs[i]);
        CHECK_EQ(mkdir(d, 0755), 0);
    }
    snprintf(cls, sizeof cls, "%s/class", root);
    snprintf(dev, sizeof dev, "%s/dev/uio3", root);
    snprintf(buf, sizeof buf, "%s/dev/udmabuf0", root);
    snprintf(map0, sizeof map0, "%s/class/uio/uio3/maps/map0", root);
    /* the device file is 8 KiB, map 0 is 4 KiB at offset 0x100 of its page */
    int rfd = open(dev, O_RDWR | O_CREAT, 0644), mfd = open(buf, O_RDWR | O_CREAT, 0644);
    CHECK(rfd >= 0 && mfd >= 0);
    CHECK_EQ(ftruncate(rfd, 8192), 0);
    CHECK_EQ(ftruncate(mfd, 0x10000), 0);
    snprintf(d, sizeof d, "%s/addr", map0);
    put_text(d, "0x10020100\n");
    snprintf(d, sizeof d, "%s/size", map0);
    put_text(d, "0x1000\n");
    snprintf(d, sizeof d, "%s/offset", map0);
    put_text(d, "0x100\n");
    snprintf(d, sizeof d, "%s/class/u-dma-buf/udmabuf0/phys_addr", root);
    put_text(d, "0x70000000\n");
    snprintf(d, sizeof d, "%s/class/u-dma-buf/udmabuf0/size", root);
    put_text(d, "65536\n");

    /* registers at map 0's offset, map 0's size from sysfs (not the file's 8 KiB) */
    npk_port *p = NULL;
    snprintf(spec, sizeof spec, "uio:%s,sysfs=%s,mem=%s", dev, cls, buf);
    CHECK_EQ(npk_port_open(&p, spec, "shell", NULL), 0);
    if (p) {
        uint32_t v;
        CHECK_EQ(npk_port_write32(p, 0x20, 0xcafef00d), 0);
        CHECK_EQ(file32(rfd, 0x120), 0xcafef00d);
        set32(rfd, 0x100 + 0xffc, 0x5a5a1234);
        CHECK_EQ(npk_port_read32(p, 0xffc, &v), 0);
        CHECK_EQ(v, 0x5a5a1234);
        CHECK_EQ(npk_port_read32(p, 0x1000, &v), -NPK_EINVAL);
        CHECK(contains(npk_errmsg(), "outside map 0 (4096 bytes)"));
        /* the buffer's address and size from u-dma-buf's sysfs */
        uint64_t a = 0;
        CHECK_EQ(npk_port_alloc(p, 4096, 64, &a), 0);
        CHECK(a >= 0x70000000ull && a + 4096 <= 0x70010000ull);
        CHECK_EQ(npk_port_mem_write(p, 0x7000fff0, "abcd", 4), 0);
        char got[5] = {0};
        CHECK_EQ(pread(mfd, got, 4, 0xfff0), 4);
        CHECK_STR(got, "abcd");
        CHECK_EQ(npk_port_mem_write(p, 0x70010000, "x", 1), -NPK_EBUS);
        CHECK(contains(npk_errmsg(), "outside the guest buffer 0x70000000-0x7000ffff"));
        npk_port_close(p);
        set32(rfd, 0x120, 0);
    }

    /* the shell driver end to end over the fake device: VERSION and CAPABILITIES as the
     * device would present them, then the driver's writes at the ABI's offsets */
    set32(rfd, 0x100 + SHELL_VERSION, SHELL_VERSION_VALUE);
    set32(rfd, 0x100 + SHELL_CAPABILITIES, SHELL_CAPABILITIES_VALUE);
    CHECK_EQ(setenv("NPUKIT_SYSFS_CLASS", cls, 1), 0); /* the environment variable instead of sysfs= */
    snprintf(spec, sizeof spec, "uio:%s,mem=%s", dev, buf);
    CHECK_EQ(npk_port_open(&p, spec, "shell", NULL), 0);
    npk_shell *sh = NULL;
    if (p) CHECK_EQ(npk_shell_open(&sh, p, NULL), 0);
    if (sh) {
        uint64_t ring = (uint64_t)file32(rfd, 0x100 + SHELL_CQ_BASE_HI) << 32 | file32(rfd, 0x100 + SHELL_CQ_BASE_LO);
        CHECK(ring >= 0x70000000ull && ring + 4096 <= 0x70010000ull && ring % 64 == 0);
        CHECK_EQ(file32(rfd, 0x100 + SHELL_CQ_SIZE), 4096);
        CHECK_EQ(file32(rfd, 0x100 + SHELL_IRQ_ENABLE), SHELL_IRQ_ERROR | SHELL_IRQ_EVENT);
        uint8_t desc[32], back[32];
        CHECK_EQ(npk_shell_enc_vec(desc, 7, SHELL_VEC_RELU, SHELL_INT8, 0x70008000, 0x70009000, 256, 0), 32);
        CHECK_EQ(npk_shell_push(sh, desc, 32), 0);
        CHECK_EQ(npk_shell_kick(sh), 0);
        CHECK_EQ(pread(mfd, back, 32, (off_t)(ring - 0x70000000ull)), 32);
        CHECK(!memcmp(desc, back, 32));
        CHECK_EQ(file32(rfd, 0x100 + SHELL_CQ_TAIL), 32);
        CHECK_EQ(file32(rfd, 0x100 + SHELL_DOORBELL), 1);
        npk_shell_close(sh);
    }
    if (p) npk_port_close(p);
    /* a device that is not a v0.x shell is refused by the driver */
    set32(rfd, 0x100 + SHELL_VERSION, 0x00020000);
    CHECK_EQ(npk_port_open(&p, spec, "shell", NULL), 0);
    if (p) {
        CHECK_EQ(npk_shell_open(&sh, p, NULL), -NPK_EUNSUPPORTED);
        CHECK(contains(npk_errmsg(), "VERSION 0x00020000 is not a v0.x shell"));
        npk_port_close(p);
    }
    unsetenv("NPUKIT_SYSFS_CLASS");

    /* precise errors: sizes and paths */
    snprintf(spec, sizeof spec, "uio:%s,sysfs=%s/nowhere", dev, root);
    refuse(spec, -NPK_EINVAL, "/nowhere': No such file or directory");
    snprintf(spec, sizeof spec, "uio:%s,sysfs=%s", dev, dev);
    refuse(spec, -NPK_EINVAL, "not a directory");
    snprintf(spec, sizeof spec, "uio:%s/dev/udmabuf0,sysfs=%s", root, cls); /* no uio entry for it */
    refuse(spec, -NPK_EIO, "cannot read the size of map 0 from");
    CHECK(contains(npk_errmsg(), "/class/uio/udmabuf0/maps/map0/size"));
    snprintf(spec, sizeof spec, "uio:%s,sysfs=%s", dev, cls);
    snprintf(d, sizeof d, "%s/size", map0);
    put_text(d, "0x2000\n"); /* offset + size beyond the 8 KiB file */
    refuse(spec, -NPK_EINVAL, "has 8192 bytes, map 0 needs offset+size = 8448");
    put_text(d, "zz\n");
    refuse(spec, -NPK_EIO, "cannot read the size of map 0");
    put_text(d, "2\n");
    refuse(spec, -NPK_EINVAL, "map 0 of");
    CHECK(contains(npk_errmsg(), "is 2 bytes, too small for registers"));
    put_text(d, "0x1000\n");
    snprintf(d, sizeof d, "%s/offset", map0);
    put_text(d, "0x10000\n");
    refuse(spec, -NPK_EINVAL, "map 0 offset 0x10000");
    CHECK(contains(npk_errmsg(), "is not inside the first page"));
    put_text(d, "junk\n");
    refuse(spec, -NPK_EIO, "maps/map0/offset as a number");
    snprintf(spec, sizeof spec, "uio:%s,sysfs=", dev);
    refuse(spec, -NPK_EINVAL, "sysfs= needs a directory");

    if (rfd >= 0) close(rfd);
    if (mfd >= 0) close(mfd);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK_EQ(system(cmd), 0);
}

int main(void) {
    char regs[] = "uio-regs-XXXXXX", mem[] = "uio-mem-XXXXXX";
    int rfd = make_file(regs, 4096), mfd = make_file(mem, 0x10000);
    CHECK(rfd >= 0 && mfd >= 0);
    if (rfd >= 0 && mfd >= 0) {
        test_errors(regs, mem);
        test_round_trips(regs, rfd, mem, mfd);
    }
    test_sysfs();
    if (rfd >= 0) close(rfd), unlink(regs);
    if (mfd >= 0) close(mfd), unlink(mem);
    return CHECK_DONE();
}
