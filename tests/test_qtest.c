// SPDX-License-Identifier: MIT
/*
 * The qtest protocol engine (src/sim/qtest.c) against a tiny test device
 * (tests/test_qtest_dev.h): reply formats, IRQ lines, time, --settle, the
 * register window rules, bad requests, chunked input, base64.
 * Expected replies follow from QEMU's protocol definition and the test
 * device's documented behaviour, written out by hand.
 */
#include "check.h"
#include "sim/qtest.h"
#include "test_qtest_dev.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct cap {
    char *s;
    size_t n, cap;
} cap;

static void capture(void *ctx, const char *d, size_t n) {
    cap *c = ctx;
    if (c->n + n + 1 > c->cap) {
        c->cap = (c->n + n + 1) * 2;
        c->s = realloc(c->s, c->cap);
    }
    memcpy(c->s + c->n, d, n);
    c->n += n;
    c->s[c->n] = 0;
}

typedef struct env {
    npk_sim *sim;
    npk_qtest *q;
    cap out;
} env;

static void env_open(env *e, int settle, const char *opts, FILE *log) {
    memset(e, 0, sizeof *e);
    e->sim = npk_sim_new_class(&td_class, opts);
    CHECK(e->sim != NULL);
    npk_qtest_cfg cfg = {.settle = settle, .log = log, .irq_always = 1};
    e->q = npk_qtest_new(e->sim, &cfg, capture, &e->out);
    CHECK(e->q != NULL);
}

static void env_close(env *e) {
    npk_qtest_free(e->q);
    npk_sim_free(e->sim);
    free(e->out.s);
}

/* Run one request; return everything the engine wrote for it. */
static const char *req(env *e, const char *line) {
    e->out.n = 0;
    if (e->out.s) e->out.s[0] = 0;
    npk_qtest_feed(e->q, line, strlen(line));
    npk_qtest_feed(e->q, "\n", 1);
    return e->out.s ? e->out.s : "";
}

static void test_registers(void) {
    env e;
    env_open(&e, 0, NULL, NULL);
    CHECK_STR(req(&e, "readl 0x40000000"), "OK 0x000000007e570001\n");
    /* byte lanes of ID 0x7e570001 */
    CHECK_STR(req(&e, "readb 0x40000000"), "OK 0x0000000000000001\n");
    CHECK_STR(req(&e, "readb 0x40000001"), "OK 0x0000000000000000\n");
    CHECK_STR(req(&e, "readb 0x40000003"), "OK 0x000000000000007e\n");
    CHECK_STR(req(&e, "readw 0x40000002"), "OK 0x0000000000007e57\n");
    CHECK_STR(req(&e, "writel 0x40000004 0xcafef00d"), "OK\n");
    CHECK_STR(req(&e, "readl 0x40000004"), "OK 0x00000000cafef00d\n");
    /* 64-bit: low word to ID (read-only), high word to DATA */
    CHECK_STR(req(&e, "writeq 0x40000000 0x1122334455667788"), "OK\n");
    CHECK_STR(req(&e, "readq 0x40000000"), "OK 0x112233447e570001\n");
    /* aliasing: not ours to decide, the regfile's span is the window */
    CHECK_STR(req(&e, "read 0x40000000 8"), "OK 0x0100577e44332211\n");
    CHECK_STR(req(&e, "write 0x40000004 4 0x78563412"), "OK\n");
    CHECK_STR(req(&e, "readl 0x40000004"), "OK 0x0000000012345678\n");
    CHECK_STR(req(&e, "memset 0x40000004 4 0xab"), "OK\n");
    CHECK_STR(req(&e, "readl 0x40000004"), "OK 0x00000000abababab\n");
    CHECK_STR(req(&e, "b64read 0x40000000 4"), "OK AQBXfg==\n");
    CHECK_STR(req(&e, "b64read 0 0"), "OK \n"); /* QEMU: empty base64 */
    CHECK_STR(req(&e, "b64write 0 0 AAAA"), "OK\n");
    CHECK_STR(req(&e, "memset 0x40000004 0 1"), "OK\n");
    /* window rules */
    CHECK(!strncmp(req(&e, "writeb 0x40000004 1"), "FAIL writeb: 0x40000004 is in the tdev register window", 54));
    CHECK(!strncmp(req(&e, "readl 0x40000006"), "FAIL readl: 0x40000006 is not 4-byte aligned", 44));
    CHECK(!strncmp(req(&e, "readq 0x40000004"), "FAIL readq: 0x40000004 is not 8-byte aligned", 44));
    CHECK(!strncmp(req(&e, "readl 0x3ffffffe"), "FAIL readl: 0x3ffffffe+4 straddles the tdev register window", 59));
    CHECK(!strncmp(req(&e, "read 0x400000fc 8"), "FAIL read: 0x400000fc+8 straddles", 33));
    CHECK(!strncmp(req(&e, "read 0x40000001 4"), "FAIL read: register window accesses must be whole aligned", 57));
    CHECK(!strncmp(req(&e, "memset 0x40000004 3 0"), "FAIL memset: register window accesses must be whole", 51));
    CHECK_STR(req(&e, "npu_regs"),
              "OK ID=0x7e570001 DATA=0xabababab COUNT=0x00000000 STATUS=0x00000000 LINE1=0x00000000 "
              "DMA_ADDR=0x00000000\n");
    CHECK_STR(req(&e, "npu_info"),
              "OK device=tdev hz=500000000 mmio=0x40000000+0x100 irqs=2 ns=0 cycles=0 irq=0x0 settle=0\n");
    env_close(&e);
}

/* QEMU's rule: no IRQ lines until the client intercepts them (irq_always 0). */
static void test_irq_intercept(void) {
    env e;
    memset(&e, 0, sizeof e);
    e.sim = npk_sim_new_class(&td_class, NULL);
    npk_qtest_cfg cfg = {.irq_always = 0};
    e.q = npk_qtest_new(e.sim, &cfg, capture, &e.out);
    CHECK_STR(req(&e, "writel 0x40000008 2"), "OK\n");
    CHECK_STR(req(&e, "clock_step 4"), "OK 4\n"); /* line 0 rises, unreported */
    CHECK_STR(req(&e, "npu_info"),
              "OK device=tdev hz=500000000 mmio=0x40000000+0x100 irqs=2 ns=4 cycles=2 irq=0x1 settle=0\n");
    CHECK_STR(req(&e, "irq_intercept_in /machine/anything"), "OK\n"); /* levels are not replayed (QEMU) */
    CHECK_STR(req(&e, "writel 0x4000000c 1"), "IRQ lower 0\nOK\n");
    CHECK_STR(req(&e, "inb 0"), "OK 0x00ff\n");
    env_close(&e);
}

static void test_irq_and_time(void) {
    env e;
    env_open(&e, 0, NULL, NULL);
    /* 500 MHz: 2 ns per cycle. A countdown of 5 cycles ends at 10 ns. */
    CHECK_STR(req(&e, "writel 0x40000008 5"), "OK\n");
    CHECK_STR(req(&e, "readl 0x4000000c"), "OK 0x0000000000000002\n");
    CHECK_STR(req(&e, "clock_step 8"), "OK 8\n");
    CHECK_STR(req(&e, "readl 0x40000008"), "OK 0x0000000000000001\n");
    CHECK_STR(req(&e, "clock_step 1"), "OK 9\n"); /* half a cycle: the device has not moved */
    CHECK_STR(req(&e, "readl 0x40000008"), "OK 0x0000000000000001\n");
    CHECK_STR(req(&e, "clock_step 1"), "IRQ raise 0\nOK 10\n");
    CHECK_STR(req(&e, "readl 0x4000000c"), "OK 0x0000000000000001\n");
    CHECK_STR(req(&e, "writel 0x4000000c 1"), "IRQ lower 0\nOK\n");
    CHECK_STR(req(&e, "writel 0x40000010 1"), "IRQ raise 1\nOK\n");
    CHECK_STR(req(&e, "writel 0x40000010 1"), "OK\n"); /* no change, no line */
    CHECK_STR(req(&e, "npu_info"),
              "OK device=tdev hz=500000000 mmio=0x40000000+0x100 irqs=2 ns=10 cycles=5 irq=0x2 settle=0\n");
    /* clock_step without N runs to idle: 7 cycles = 14 ns */
    CHECK_STR(req(&e, "writel 0x40000008 7"), "OK\n");
    CHECK_STR(req(&e, "clock_step"), "IRQ raise 0\nOK 24\n");
    CHECK_STR(req(&e, "clock_step"),
              "FAIL cannot advance clock to the next deadline because there is no pending deadline\n");
    CHECK_STR(req(&e, "clock_step 0"), "FAIL could not advance time\n");
    /* clock_set: forward OK, same OK, past FAIL with the current time (QEMU) */
    CHECK_STR(req(&e, "clock_set 100"), "OK 100\n");
    CHECK_STR(req(&e, "clock_set 100"), "OK 100\n");
    CHECK_STR(req(&e, "clock_set 99"), "FAIL 100\n");
    CHECK_STR(req(&e, "npu_info"),
              "OK device=tdev hz=500000000 mmio=0x40000000+0x100 irqs=2 ns=100 cycles=50 irq=0x3 settle=0\n");
    CHECK_EQ(npk_qtest_ns(e.q), 100);
    CHECK_EQ(npk_qtest_cycles(e.q), 50);
    CHECK_EQ(npk_sim_dev(e.sim)->cycles, 50);
    /* reset lowers both lines; the clock keeps going */
    CHECK_STR(req(&e, "npu_reset"), "IRQ lower 0\nIRQ lower 1\nOK\n");
    CHECK_STR(req(&e, "readl 0x40000004"), "OK 0x0000000000000000\n");
    /* a device DMA write lands in guest memory when the countdown ends */
    CHECK_STR(req(&e, "writel 0x40000004 0x11223344"), "OK\n");
    CHECK_STR(req(&e, "writel 0x40000014 0x9000"), "OK\n");
    CHECK_STR(req(&e, "writel 0x40000008 2"), "OK\n");
    CHECK_STR(req(&e, "readl 0x9000"), "OK 0x0000000000000000\n");
    CHECK_STR(req(&e, "clock_step 4"), "IRQ raise 0\nOK 104\n");
    CHECK_STR(req(&e, "readl 0x9000"), "OK 0x0000000011223344\n");
    CHECK_STR(req(&e, "clock_step 18446744073709551515"), "FAIL clock_step: the clock would overflow 64 bits of ns\n");
    env_close(&e);
}

static void test_settle(void) {
    env e;
    env_open(&e, 1, NULL, NULL);
    CHECK_STR(req(&e, "writel 0x40000008 5"), "IRQ raise 0\nOK\n");
    CHECK_STR(req(&e, "npu_info"),
              "OK device=tdev hz=500000000 mmio=0x40000000+0x100 irqs=2 ns=10 cycles=5 irq=0x1 settle=1\n");
    CHECK_STR(req(&e, "readl 0x40000008"), "OK 0x0000000000000000\n");
    /* a FAILed access does not run the device */
    CHECK(!strncmp(req(&e, "readl 0x40000001"), "FAIL", 4));
    /* reads are taken before settling */
    CHECK_STR(req(&e, "writel 0x4000000c 1"), "IRQ lower 0\nOK\n");
    env_close(&e);
}

static void test_memory_and_map(void) {
    env e;
    env_open(&e, 0, "map", NULL);
    CHECK_STR(req(&e, "writel 0x80000000 0xdeadbeef"), "OK\n");
    CHECK_STR(req(&e, "read 0x80000000 4"), "OK 0xefbeadde\n");
    CHECK_STR(req(&e, "b64read 0x80000000 4"), "OK 776t3g==\n");
    CHECK_STR(req(&e, "b64write 0x80000010 6 Zm9vYmFy"), "OK\n");
    CHECK_STR(req(&e, "read 0x80000010 6"), "OK 0x666f6f626172\n");
    /* outside the declared memory: FAIL with the bus error reason */
    const char *r = req(&e, "readl 0x1000");
    CHECK(!strncmp(r, "FAIL readl: ", 12));
    CHECK(strchr(r, '\n') == r + strlen(r) - 1); /* one line */
    CHECK(!strncmp(req(&e, "write 0x7ffffffe 4 0x01020304"), "FAIL write: ", 12));
    CHECK(!strncmp(req(&e, "memset 0x90000000 16 1"), "FAIL memset: ", 13));
    CHECK(!strncmp(req(&e, "b64read 0x1000 4"), "FAIL b64read: ", 14));
    env_close(&e);
}

static void test_bad_requests(void) {
    env e;
    env_open(&e, 0, NULL, NULL);
    CHECK_STR(req(&e, "bogus"), "FAIL Unknown command 'bogus'\n");
    CHECK_STR(req(&e, "readl"), "FAIL readl: missing argument (usage: readl ADDR)\n");
    CHECK_STR(req(&e, "readl 1 2"), "FAIL readl: too many arguments (usage: readl ADDR)\n");
    CHECK_STR(req(&e, "readl 1 2 3 4 5 6 7 8"), "FAIL readl: too many arguments\n");
    CHECK_STR(req(&e, "readl 0x"), "FAIL readl: bad address '0x' (expected a number like strtoul base 0)\n");
    CHECK_STR(req(&e, "readl 08"), "FAIL readl: bad address '08' (expected a number like strtoul base 0)\n");
    CHECK_STR(req(&e, "readl 010"), "OK 0x0000000000000000\n"); /* octal 8 */
    CHECK_STR(req(&e, "read 0 2000000"), "FAIL read: size 2000000 exceeds the limit of 1048576 bytes per request\n");
    CHECK_STR(req(&e, "b64write 0 4 ===="), "FAIL b64write: invalid base64: too much '=' padding\n");
    CHECK_STR(req(&e, "b64write 0 4 Zm9=v"), "FAIL b64write: invalid base64 character '=' at position 3\n");
    CHECK_STR(req(&e, "b64write 0 4 Zg="), "FAIL b64write: invalid base64: padded text of 3 characters\n");
    CHECK_STR(req(&e, "irq_intercept_in"), "FAIL irq_intercept_in: missing argument (usage: "
                                           "irq_intercept_in|irq_intercept_out QOM-PATH [NAME])\n");
    CHECK_STR(req(&e, "set_irq_in /x y 0 1"), "FAIL set_irq_in: the tdev model has no input interrupt lines\n");
    /* blank lines and comments: no reply; \r\n and tabs are accepted */
    CHECK_STR(req(&e, ""), "");
    CHECK_STR(req(&e, "   "), "");
    CHECK_STR(req(&e, "# comment readl 0"), "");
    CHECK_STR(req(&e, "\treadl\t0x40000000 \r"), "OK 0x000000007e570001\n");
    /* NUL inside a line */
    e.out.n = 0;
    npk_qtest_feed(e.q, "readl 0\0junk\n", 13);
    CHECK_STR(e.out.s, "FAIL request contains a NUL byte\n");
    /* an over-long line: one FAIL, then the next request works */
    size_t big = NPK_QTEST_MAX_LINE + 10;
    char *line = malloc(big);
    memset(line, 'a', big);
    e.out.n = 0;
    npk_qtest_feed(e.q, line, big);
    npk_qtest_feed(e.q, line, big);
    npk_qtest_feed(e.q, "\nreadl 0x40000000\n", 18);
    CHECK_STR(e.out.s, "FAIL request line longer than 2097408 bytes\nOK 0x000000007e570001\n");
    free(line);
    /* a last line without newline runs at EOF */
    e.out.n = 0;
    npk_qtest_feed(e.q, "readl 0x40000000", 16);
    CHECK_EQ(e.out.n, 0);
    npk_qtest_eof(e.q);
    CHECK_STR(e.out.s, "OK 0x000000007e570001\n");
    env_close(&e);
}

/* Random garbage: one reply per request line, no crash, byte-wise feeding
 * gives the same output as whole-buffer feeding. */
static void test_garbage(void) {
    static const char *const words[] = {"readl", "writel", "read", "write", "b64read", "b64write", "memset",
                                        "clock_step", "clock_set", "readb", "writeq", "npu_regs", "npu_reset",
                                        "0x40000000", "0x40000008", "5", "0", "-1", "0xffffffffffffffff", "0x",
                                        "Zm9v", "0xabcd", "junk", "#", "\t", "1048577", "0x40000004", "3"};
    uint32_t seed = 12345;
    char *text = malloc(1 << 16);
    size_t n = 0;
    int lines = 0, blank = 0;
    for (int l = 0; l < 600; l++) {
        int nw = (int)((seed = seed * 1103515245u + 12345u) >> 16) % 5;
        size_t start = n;
        for (int w = 0; w < nw; w++) {
            seed = seed * 1103515245u + 12345u;
            const char *s = words[(seed >> 16) % (sizeof words / sizeof words[0])];
            if (w) text[n++] = ' ';
            memcpy(text + n, s, strlen(s));
            n += strlen(s);
        }
        /* same classification rule as the engine: blank or '#'-first line = no reply */
        size_t k = start;
        while (k < n && (text[k] == ' ' || text[k] == '\t')) k++;
        if (k == n || text[k] == '#') blank++;
        text[n++] = '\n';
        lines++;
    }
    env a, b;
    env_open(&a, 0, NULL, NULL);
    env_open(&b, 0, NULL, NULL);
    npk_qtest_feed(a.q, text, n);
    for (size_t i = 0; i < n; i++) npk_qtest_feed(b.q, text + i, 1);
    CHECK(a.out.s && b.out.s && !strcmp(a.out.s, b.out.s));
    int replies = 0;
    for (char *p = a.out.s; p && *p;) {
        if (!strncmp(p, "OK", 2) || !strncmp(p, "FAIL", 4)) replies++;
        else CHECK(!strncmp(p, "IRQ raise ", 10) || !strncmp(p, "IRQ lower ", 10));
        p = strchr(p, '\n');
        if (p) p++;
    }
    CHECK_EQ(replies, lines - blank);
    env_close(&a);
    env_close(&b);
    free(text);
}

static void test_base64(void) {
    /* RFC 4648 section 10 test vectors */
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const enc[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        char *s = npk_b64_encode((const uint8_t *)plain[i], strlen(plain[i]));
        CHECK_STR(s, enc[i]);
        free(s);
        uint8_t *d;
        long n = npk_b64_decode(enc[i], &d);
        CHECK_EQ(n, (long)strlen(plain[i]));
        CHECK(n >= 0 && !memcmp(d, plain[i], (size_t)n));
        free(d);
    }
    uint8_t *d;
    long n = npk_b64_decode("Zm9vYmE", &d); /* unpadded */
    CHECK_EQ(n, 5);
    if (n >= 0) free(d);
    CHECK(npk_b64_decode("Zh==", &d) < 0); /* stray bits */
    CHECK(npk_b64_decode("Z", &d) < 0);
    CHECK(npk_b64_decode("Zm9v\n", &d) < 0);
    /* all byte values round-trip */
    uint8_t all[256];
    for (int i = 0; i < 256; i++) all[i] = (uint8_t)i;
    char *s = npk_b64_encode(all, 256);
    n = npk_b64_decode(s, &d);
    CHECK_EQ(n, 256);
    CHECK(n == 256 && !memcmp(d, all, 256));
    free(d);
    free(s);
}

static void test_log_and_serve(void) {
    FILE *log = tmpfile();
    CHECK(log != NULL);
    env e;
    env_open(&e, 0, NULL, log);
    req(&e, "readl 0x40000000");
    req(&e, "nope");
    rewind(log);
    char buf[256] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, log);
    buf[n] = 0;
    CHECK_STR(buf, "> readl 0x40000000\n< OK 0x000000007e570001\n> nope\n< FAIL Unknown command 'nope'\n");
    /* serve_fd over pipes */
    int in[2], out[2];
    CHECK(!pipe(in) && !pipe(out));
    const char *script = "writel 0x40000008 1\nclock_step 2\nreadl 0x4000000c";
    CHECK_EQ(write(in[1], script, strlen(script)), (long long)strlen(script));
    close(in[1]);
    CHECK_EQ(npk_qtest_serve_fd(e.q, in[0], out[1]), 0);
    close(out[1]);
    n = (size_t)read(out[0], buf, sizeof buf - 1);
    buf[n] = 0;
    CHECK_STR(buf, "OK\nIRQ raise 0\nOK 2\nOK 0x0000000000000001\n");
    close(in[0]);
    close(out[0]);
    /* the engine's own callback is restored afterwards */
    CHECK_STR(req(&e, "readl 0x40000000"), "OK 0x000000007e570001\n");
    env_close(&e);
    fclose(log);
}

int main(void) {
    test_registers();
    test_irq_and_time();
    test_irq_intercept();
    test_settle();
    test_memory_and_map();
    test_bad_requests();
    test_garbage();
    test_base64();
    test_log_and_serve();
    return CHECK_DONE();
}
