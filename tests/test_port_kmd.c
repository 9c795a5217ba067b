// SPDX-License-Identifier: MIT
/*
 * The kmd port (src/rt/port_kmd.c) without the kernel driver: every way of
 * opening it that cannot reach an npukit device fails with a message naming
 * the cause (missing device file, a file that is not an npukit device, bad
 * options), and leaks nothing. The port over a real device runs in the guest
 * tests (label vp, docs/kmod.md).
 */
#include "check.h"
#include "npukit/npu.h"

#include <stdlib.h>
#include <string.h>

static int contains(const char *s, const char *what) {
    int ok = s && strstr(s, what) != NULL;
    if (!ok) fprintf(stderr, "  message '%s' lacks '%s'\n", s ? s : "(null)", what);
    return ok;
}

static void expect_fail(const char *spec, const char *device, int code, const char *what) {
    npk_port *p = (npk_port *)1;
    int rc = npk_port_open(&p, spec, device, NULL);
    CHECK_EQ(rc, -code);
    CHECK(p == NULL);
    CHECK(contains(npk_errmsg(), what));
    if (!rc) npk_port_close(p);
}

int main(void) {
    expect_fail("kmd:/nonexistent/npu7", "v0", NPK_EIO, "kmd /nonexistent/npu7: No such file or directory (is npukit.ko loaded?");
    /* a character device that is not npukit's: GET_INFO is ENOTTY */
    expect_fail("kmd:/dev/null", "v0", NPK_EIO, "kmd /dev/null: not an npukit device (NPUKIT_IOCTL_GET_INFO: ");
    expect_fail("kmd:/dev/null,mem=0", "shell", NPK_EINVAL, "kmd /dev/null: bad mem size '0'");
    expect_fail("kmd:/dev/null,mem=12Q", "shell", NPK_EINVAL, "kmd /dev/null: bad mem size '12Q'");
    expect_fail("kmd:/dev/null,speed=9", "e1", NPK_EINVAL, "kmd /dev/null: unknown option 'speed=9' (known: mem=BYTES, carveout, free)");
    expect_fail("kmd:", "pccx", NPK_EINVAL, "expected kmd:/dev/npuN[,mem=BYTES|,carveout][,free], got 'kmd:'");
    expect_fail("kmd:,mem=4K", "pccx", NPK_EINVAL, "expected kmd:/dev/npuN[,mem=BYTES|,carveout][,free]");
    expect_fail("kmdx:/dev/npu0", "v0", NPK_EINVAL, "uio:/dev/uioN or kmd:/dev/npuN");
    return CHECK_DONE();
}
