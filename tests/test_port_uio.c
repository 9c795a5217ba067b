/*
 * The UIO port (src/rt/port_uio.c) without hardware: regular temporary files
 * stand in for the UIO device (map 0 = the file, its size = the file size) and
 * for the guest memory buffer. The independent check is plain file I/O
 * (pread/pwrite) on the same files. Also: precise errors for a missing device
 * file and for bad options.
 */
#include "check.h"
#include "npukit/npu.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
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

int main(void) {
    char regs[] = "uio-regs-XXXXXX", mem[] = "uio-mem-XXXXXX";
    int rfd = make_file(regs, 4096), mfd = make_file(mem, 0x10000);
    CHECK(rfd >= 0 && mfd >= 0);
    if (rfd >= 0 && mfd >= 0) {
        test_errors(regs, mem);
        test_round_trips(regs, rfd, mem, mfd);
    }
    if (rfd >= 0) close(rfd), unlink(regs);
    if (mfd >= 0) close(mfd), unlink(mem);
    return CHECK_DONE();
}
