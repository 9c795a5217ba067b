// SPDX-License-Identifier: MIT
/*
 * The qtest port client (src/rt/port_qtest.c) against real server processes.
 *
 * This test binary doubles as a qtest server: run as `test_port_qtest qtest
 * --device D [--opts O] [--socket PATH]` it serves the test device of
 * tests/test_qtest_dev.h, placed at the window and clock of device class D,
 * through the library's protocol engine. The port spawns it exactly as it
 * spawns `npu qtest` ("qtest-spawn:<this binary>"). Environment knobs for
 * the failure tests: QT_DIE_AFTER=N exits (status 3) on the Nth request
 * line without answering; QT_NAME=X reports device X in npu_info.
 *
 * When the e1 model is available, the DOT4 worked example of
 * e1-rtl-notes.md also runs through `npu qtest` (NPU_BIN) and through the
 * in-process model, with the results the notes give.
 */
#include "check.h"
#include "npukit/npu.h"
#include "sim/qtest.h"
#include "test_qtest_dev.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char self[4096];

/* ---- server mode ------------------------------------------------------------ */

static npk_dev_class served;

static void write_out(void *ctx, const char *d, size_t n) {
    (void)ctx;
    while (n) {
        ssize_t w = write(1, d, n);
        if (w <= 0) _exit(6);
        d += w;
        n -= (size_t)w;
    }
}

static int serve(int argc, char **argv) {
    const char *dev = NULL, *opts = NULL, *sock = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--device")) dev = argv[i + 1];
        else if (!strcmp(argv[i], "--opts")) opts = argv[i + 1];
        else if (!strcmp(argv[i], "--socket")) sock = argv[i + 1];
    }
    const npk_dev_class *base = npk_dev_class_find(dev);
    if (!base) {
        fprintf(stderr, "npu: qtest: unknown device '%s'\n", dev ? dev : "");
        return 2;
    }
    served = td_class;
    served.name = getenv("QT_NAME") ? getenv("QT_NAME") : base->name;
    served.mmio_base = base->mmio_base;
    served.hz = base->hz;
    npk_sim *sim = npk_sim_new_class(&served, opts);
    if (!sim) {
        fprintf(stderr, "npu: qtest: cannot create the %s model: %s\n", dev, npk_errmsg());
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    int rc = 0;
    const char *die = getenv("QT_DIE_AFTER");
    if (die) {
        /* Line by line, replies straight to stdout; request number N kills us. */
        npk_qtest *q = npk_qtest_new(sim, NULL, write_out, NULL);
        static char line[1 << 18];
        int n = 0, limit = atoi(die);
        FILE *in = fdopen(0, "r");
        while (in && fgets(line, sizeof line, in)) {
            if (++n == limit) _exit(3);
            npk_qtest_feed(q, line, strlen(line));
        }
        npk_qtest_free(q);
        npk_sim_free(sim);
        return 0;
    }
    npk_qtest *q = npk_qtest_new(sim, NULL, NULL, NULL);
    if (sock) rc = npk_qtest_serve_socket(q, sock, NULL, NULL);
    else rc = npk_qtest_serve_fd(q, 0, 1);
    npk_qtest_free(q);
    npk_sim_free(sim);
    return rc ? 1 : 0;
}

/* ---- client tests --------------------------------------------------------------- */

static int no_children(void) {
    int st;
    return waitpid(-1, &st, WNOHANG) == -1 && errno == ECHILD;
}

static int contains(const char *s, const char *what) {
    int ok = strstr(s, what) != NULL;
    if (!ok) fprintf(stderr, "  message '%s' lacks '%s'\n", s, what);
    return ok;
}

static npk_port *spawn_port(const char *device, const char *opts) {
    char spec[4200];
    snprintf(spec, sizeof spec, "qtest-spawn:%s", self);
    npk_port *p = NULL;
    int rc = npk_port_open(&p, spec, device, opts);
    if (rc) fprintf(stderr, "open %s: %s\n", spec, npk_errmsg());
    CHECK_EQ(rc, 0);
    return p;
}

static void test_spawn_basic(void) {
    npk_port *p = spawn_port("e1", "map");
    if (!p) return;
    CHECK_STR(npk_port_kind(p), "qtest");
    CHECK_STR(npk_port_device(p), "e1");
    uint32_t v = 0;
    CHECK_EQ(npk_port_read32(p, TD_ID, &v), 0);
    CHECK_EQ(v, TD_ID_VALUE);
    CHECK_EQ(npk_port_write32(p, TD_DATA, 0x0badf00d), 0);
    CHECK_EQ(npk_port_read32(p, TD_DATA, &v), 0);
    CHECK_EQ(v, 0x0badf00d);
    CHECK_EQ(npk_port_write64(p, TD_ID, 0xaabbccdd00000000ull), 0);
    CHECK_EQ(npk_port_read32(p, TD_DATA, &v), 0);
    CHECK_EQ(v, 0xaabbccdd);
    CHECK_EQ(npk_port_read32(p, TD_ID, &v), 0);
    CHECK_EQ(v, TD_ID_VALUE);
    /* guest memory in several chunks, through the arena */
    uint64_t a = 0;
    CHECK_EQ(npk_port_alloc(p, 200001, 64, &a), 0);
    CHECK(a >= 0x80000000ull && a + 200001 <= 0x81000000ull);
    uint8_t *w = malloc(200001), *r = malloc(200001);
    for (int i = 0; i < 200001; i++) w[i] = (uint8_t)(i * 7 + (i >> 9));
    CHECK_EQ(npk_port_mem_write(p, a + 0, w, 200001), 0);
    memset(r, 0, 200001);
    CHECK_EQ(npk_port_mem_read(p, a, r, 200001), 0);
    CHECK(!memcmp(w, r, 200001));
    free(w);
    free(r);
    /* FAIL replies: EBUS for memory outside the map, EINVAL for a misaligned register */
    uint8_t b[8] = {0};
    int rc = npk_port_mem_read(p, 0x1000, b, 8);
    CHECK_EQ(rc, -NPK_EBUS);
    CHECK(contains(npk_errmsg(), "b64read 0x1000 8"));
    rc = npk_port_mem_write(p, 0x7ffffffc, b, 8);
    CHECK_EQ(rc, -NPK_EBUS);
    rc = npk_port_read32(p, 2, &v);
    CHECK_EQ(rc, -NPK_EINVAL);
    CHECK(contains(npk_errmsg(), "not 4-byte aligned"));
    /* the connection survives FAILs; IRQ lines are tracked */
    CHECK_EQ(npk_port_write32(p, TD_DMA, 0x80000000u), 0);
    CHECK_EQ(npk_port_write32(p, TD_DATA, 0x55aa1234), 0);
    CHECK_EQ(npk_port_write32(p, TD_COUNT, 3), 0);
    CHECK_EQ(npk_port_irq(p, 0), 0);
    CHECK_EQ(npk_port_wait(p, 2), 0);
    CHECK_EQ(npk_port_irq(p, 0), 0);
    CHECK_EQ(npk_port_read32(p, TD_COUNT, &v), 0);
    CHECK_EQ(v, 1);
    CHECK_EQ(npk_port_wait(p, 1), 0);
    CHECK_EQ(npk_port_irq(p, 0), 1);
    CHECK_EQ(npk_port_cycles(p), 3);
    CHECK_EQ(npk_port_mem_read(p, 0x80000000u, b, 4), 0);
    CHECK(b[0] == 0x34 && b[1] == 0x12 && b[2] == 0xaa && b[3] == 0x55);
    CHECK_EQ(npk_port_write32(p, TD_STATUS, 1), 0);
    CHECK_EQ(npk_port_irq(p, 0), 0);
    CHECK_EQ(npk_port_write32(p, TD_LINE1, 1), 0);
    CHECK_EQ(npk_port_irq(p, 1), 1);
    CHECK_EQ(npk_port_irq(p, 0), 0);
    CHECK_EQ(npk_port_wait(p, 0), 0);
    npk_port_close(p);
    CHECK(no_children());
}

/* pccx runs at 400 MHz (2.5 ns per cycle): waits must still be exact in cycles. */
static void test_spawn_clock(void) {
    npk_port *p = spawn_port("pccx", NULL);
    if (!p) return;
    uint32_t v = 0;
    CHECK_EQ(npk_port_write32(p, TD_COUNT, 5), 0);
    CHECK_EQ(npk_port_wait(p, 4), 0);
    CHECK_EQ(npk_port_read32(p, TD_COUNT, &v), 0);
    CHECK_EQ(v, 1);
    CHECK_EQ(npk_port_irq(p, 0), 0);
    CHECK_EQ(npk_port_wait(p, 1), 0);
    CHECK_EQ(npk_port_read32(p, TD_COUNT, &v), 0);
    CHECK_EQ(v, 0);
    CHECK_EQ(npk_port_irq(p, 0), 1);
    for (int i = 0; i < 7; i++) CHECK_EQ(npk_port_wait(p, 1), 0);
    CHECK_EQ(npk_port_write32(p, TD_COUNT, 3), 0);
    CHECK_EQ(npk_port_wait(p, 2), 0);
    CHECK_EQ(npk_port_read32(p, TD_COUNT, &v), 0);
    CHECK_EQ(v, 1);
    npk_port_close(p);
    CHECK(no_children());
}

static void test_spawn_errors(void) {
    npk_port *p = NULL;
    int rc = npk_port_open(&p, "qtest-spawn:/nonexistent/npu", "e1", NULL);
    CHECK_EQ(rc, -NPK_EIO);
    CHECK(contains(npk_errmsg(), "cannot execute '/nonexistent/npu'"));
    CHECK(contains(npk_errmsg(), "No such file"));
    CHECK(p == NULL);
    CHECK(no_children());
    rc = npk_port_open(&p, "qtest-spawn:", "e1", NULL);
    CHECK_EQ(rc, -NPK_EINVAL);
    /* the server refuses the device options: its message reaches the caller */
    char spec[4200];
    snprintf(spec, sizeof spec, "qtest-spawn:%s", self);
    rc = npk_port_open(&p, spec, "e1", "fail");
    CHECK_EQ(rc, -NPK_EIO);
    CHECK(contains(npk_errmsg(), "exited with status 1"));
    CHECK(contains(npk_errmsg(), "creation refused"));
    CHECK(no_children());
    /* a server for another device is refused */
    setenv("QT_NAME", "v0", 1);
    rc = npk_port_open(&p, spec, "e1", NULL);
    unsetenv("QT_NAME");
    CHECK_EQ(rc, -NPK_EINVAL);
    CHECK(contains(npk_errmsg(), "serves device 'v0', not 'e1'"));
    CHECK(no_children());
}

static void test_peer_death(void) {
    /* requests 1-2 = npu_info and irq_intercept_out (open), 3 = writel, 4 = readl, 5 = death */
    setenv("QT_DIE_AFTER", "5", 1);
    npk_port *p = spawn_port("e1", NULL);
    unsetenv("QT_DIE_AFTER");
    if (!p) return;
    uint32_t v = 0;
    CHECK_EQ(npk_port_write32(p, TD_DATA, 7), 0);
    CHECK_EQ(npk_port_read32(p, TD_DATA, &v), 0);
    CHECK_EQ(v, 7);
    int rc = npk_port_write32(p, TD_DATA, 8);
    CHECK_EQ(rc, -NPK_EIO);
    CHECK(contains(npk_errmsg(), "exited with status 3"));
    /* later requests fail the same way, without SIGPIPE */
    CHECK_EQ(npk_port_read32(p, TD_DATA, &v), -NPK_EIO);
    uint8_t b[16] = {0};
    CHECK_EQ(npk_port_mem_write(p, 0x1000, b, 16), -NPK_EIO);
    CHECK_EQ(npk_port_wait(p, 10), -NPK_EIO);
    npk_port_close(p);
    CHECK(no_children());
}

static void test_socket(void) {
    char path[256];
    snprintf(path, sizeof path, "qtest-port-test-%d.sock", (int)getpid());
    unlink(path);
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "qtest", "--device", "e1", "--socket", path, (char *)NULL);
        _exit(127);
    }
    char spec[300];
    snprintf(spec, sizeof spec, "qtest:%s", path);
    npk_port *p = NULL;
    CHECK_EQ(npk_port_open(&p, spec, "e1", "map"), -NPK_EINVAL); /* options belong to the server */
    int rc = npk_port_open(&p, spec, "e1", NULL);
    if (rc) fprintf(stderr, "open %s: %s\n", spec, npk_errmsg());
    CHECK_EQ(rc, 0);
    if (!rc) {
        uint32_t v = 0;
        CHECK_EQ(npk_port_read32(p, TD_ID, &v), 0);
        CHECK_EQ(v, TD_ID_VALUE);
        CHECK_EQ(npk_port_write32(p, TD_COUNT, 10), 0);
        CHECK_EQ(npk_port_wait(p, 10), 0);
        CHECK_EQ(npk_port_irq(p, 0), 1);
        struct stat st;
        CHECK(stat(path, &st) == 0); /* the socket stays while the server lives (a second server sees it live) */
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        CHECK(WIFSIGNALED(status));
        CHECK_EQ(npk_port_read32(p, TD_ID, &v), -NPK_EIO);
        CHECK_EQ(npk_port_write32(p, TD_DATA, 1), -NPK_EIO);
        npk_port_close(p);
    } else {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    unlink(path); /* left by the SIGKILLed server */
    CHECK(no_children());
    char longpath[300];
    memset(longpath, 'x', sizeof longpath);
    memcpy(longpath, "qtest:", 6);
    longpath[sizeof longpath - 1] = 0;
    CHECK_EQ(npk_port_open(&p, longpath, "e1", NULL), -NPK_EINVAL);
}

/* The DOT4 worked example of e1-rtl-notes.md over the in-process model and
 * over `npu qtest`: OP_A 0x04030201, OP_B 0xf807fa05, ACC 0xffffff00 ->
 * RESULT 0xfffffeee, RESULT_HI 0xffffffff, CTRL 2, TRACE 0x20, 3 cycles. */
static void test_e1_both_ports(void) {
    npk_sim *probe = npk_sim_new("e1", NULL);
    CHECK(probe != NULL); /* the e1 model is part of the build: no skip */
    if (!probe) {
        fprintf(stderr, "e1 model does not load: %s\n", npk_errmsg());
        return;
    }
    npk_sim_free(probe);
    /* `npu qtest --socket PATH` for the "qtest:PATH" variant */
    char path[128], sockspec[160];
    snprintf(path, sizeof path, "qtest-port-e1-%d.sock", (int)getpid());
    snprintf(sockspec, sizeof sockspec, "qtest:%s", path);
    unlink(path);
    pid_t server = fork();
    if (server == 0) {
        execl(NPU_BIN, NPU_BIN, "qtest", "--device", "e1", "--socket", path, (char *)NULL);
        _exit(127);
    }
    const char *specs[] = {"sim", "qtest-spawn:" NPU_BIN, sockspec};
    for (int i = 0; i < 3; i++) {
        npk_port *p = NULL;
        int rc = npk_port_open(&p, specs[i], "e1", NULL);
        if (rc) fprintf(stderr, "open %s: %s\n", specs[i], npk_errmsg());
        CHECK_EQ(rc, 0);
        if (rc) continue;
        uint32_t v = 0;
        CHECK_EQ(npk_port_write32(p, 0x00, 0x04030201), 0);
        CHECK_EQ(npk_port_write32(p, 0x04, 0xf807fa05), 0);
        CHECK_EQ(npk_port_write32(p, 0x14, 0xffffff00), 0);
        CHECK_EQ(npk_port_write32(p, 0x10, 4), 0);
        CHECK_EQ(npk_port_write32(p, 0x0c, 1), 0);
        CHECK_EQ(npk_port_wait(p, 2), 0);
        CHECK_EQ(npk_port_read32(p, 0x0c, &v), 0);
        CHECK_EQ(v, 1);
        CHECK_EQ(npk_port_irq(p, 0), 0);
        CHECK_EQ(npk_port_wait(p, 1), 0);
        CHECK_EQ(npk_port_irq(p, 0), 1);
        CHECK_EQ(npk_port_read32(p, 0x0c, &v), 0);
        CHECK_EQ(v, 2);
        CHECK_EQ(npk_port_read32(p, 0x08, &v), 0);
        CHECK_EQ(v, 0xfffffeee);
        CHECK_EQ(npk_port_read32(p, 0x18, &v), 0);
        CHECK_EQ(v, 0xffffffff);
        CHECK_EQ(npk_port_read32(p, 0x1c, &v), 0);
        CHECK_EQ(v, 0x20);
        CHECK_EQ(npk_port_write32(p, 0x0c, 2), 0);
        CHECK_EQ(npk_port_irq(p, 0), 0);
        uint8_t w[100], r[100];
        for (int k = 0; k < 100; k++) w[k] = (uint8_t)(k ^ 0x5a);
        CHECK_EQ(npk_port_mem_write(p, 0x2000, w, 100), 0);
        CHECK_EQ(npk_port_mem_read(p, 0x2000, r, 100), 0);
        CHECK(!memcmp(w, r, 100));
        npk_port_close(p);
    }
    /* the socket server ends with its connection */
    int status = -1;
    CHECK_EQ(waitpid(server, &status, 0), server);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(no_children());
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "qtest")) return serve(argc - 1, argv + 1);
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0);
    if (n <= 0) return CHECK_DONE();
    self[n] = 0;
    test_spawn_basic();
    test_spawn_clock();
    test_spawn_errors();
    test_peer_death();
    test_socket();
    test_e1_both_ports();
    return CHECK_DONE();
}
