// SPDX-License-Identifier: MIT
/*
 * The qtest protocol engine (see qtest.h and docs/qtest.md).
 *
 * Request lines are split on blanks into words; the first word is the verb.
 * Every request gets exactly one reply line ("OK ..." or "FAIL <reason>"),
 * preceded by any "IRQ raise N" / "IRQ lower N" lines the request caused.
 */
#include "qtest.h"

#include "npukit/error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORDS 6

struct npk_qtest {
    npk_sim *sim;
    npk_dev *dev;
    const npk_dev_class *cls;
    npk_qtest_cfg cfg;
    npk_qtest_out_fn out;
    void *out_ctx;
    uint64_t ns;      /* the virtual clock */
    uint64_t cycles;  /* device cycles run; == floor(ns * hz / 1e9) after clock verbs */
    int intercept;    /* irq_intercept_in/out seen: IRQ lines are reported */
    /* input line being assembled */
    char *line;
    size_t len, cap;
    int overflow;     /* current line exceeded NPK_QTEST_MAX_LINE: discard to '\n' */
    /* reply being built */
    char *rep;
    size_t rlen, rcap;
    int rep_oom;
    /* transport state of npk_qtest_serve_fd */
    int sfd;
    int sfd_is_sock;
    int peer_gone;
    uint64_t bytes_in; /* request bytes received by npk_qtest_serve_fd */
    int lfd;           /* the listening socket while a client is served (-1: none) */
    int interrupted;   /* device work of this request stopped by cfg.stop */
    unsigned tick;     /* keep_going calls (the host clock is read every 64th) */
    uint64_t last_poll_ns; /* host time of the last look at the listening socket */
    uint64_t busy_replies; /* clients answered "busy" */
    char *obuf;
    size_t olen, ocap;
};

/* ---- output ---------------------------------------------------------------- */

static void emit(npk_qtest *q, const char *s, size_t n) {
    if (q->cfg.log) {
        fputs("< ", q->cfg.log);
        fwrite(s, 1, n, q->cfg.log);
    }
    if (q->out) q->out(q->out_ctx, s, n);
}

static void on_irq(void *ctx, int line, int level) {
    npk_qtest *q = ctx;
    if (!q->intercept && !q->cfg.irq_always) return; /* QEMU: silent until intercepted */
    char buf[48];
    int n = snprintf(buf, sizeof buf, "IRQ %s %d\n", level ? "raise" : "lower", line);
    emit(q, buf, (size_t)n);
}

static int rep_reserve(npk_qtest *q, size_t more) {
    if (q->rep_oom) return -1;
    if (q->rlen + more + 1 <= q->rcap) return 0;
    size_t nc = q->rcap ? q->rcap : 256;
    while (nc < q->rlen + more + 1) nc *= 2;
    char *n = realloc(q->rep, nc);
    if (!n) {
        q->rep_oom = 1;
        return -1;
    }
    q->rep = n;
    q->rcap = nc;
    return 0;
}

static void rep_add(npk_qtest *q, const char *s, size_t n) {
    if (rep_reserve(q, n)) return;
    memcpy(q->rep + q->rlen, s, n);
    q->rlen += n;
    q->rep[q->rlen] = 0;
}

static void rep_printf(npk_qtest *q, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Append formatted text to the reply, cut at 1199 bytes (nothing on an encoding error); one_line:
 * newlines become spaces, so that the reply stays one line. */
static void rep_vprintf(npk_qtest *q, int one_line, const char *fmt, va_list ap) {
    char buf[1200];
    int k = vsnprintf(buf, sizeof buf, fmt, ap);
    size_t n = k < 0 ? 0 : (size_t)k >= sizeof buf ? sizeof buf - 1 : (size_t)k;
    for (size_t i = 0; one_line && i < n; i++)
        if (buf[i] == '\n' || buf[i] == '\r') buf[i] = ' ';
    rep_add(q, buf, n);
}

static void rep_printf(npk_qtest *q, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rep_vprintf(q, 0, fmt, ap);
    va_end(ap);
}

/* Start a FAIL reply; returns 1 (the command's result code). Newlines in the
 * reason are replaced so that the reply stays one line. */
static int fail(npk_qtest *q, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int fail(npk_qtest *q, const char *fmt, ...) {
    q->rlen = 0;
    rep_add(q, "FAIL ", 5);
    va_list ap;
    va_start(ap, fmt);
    rep_vprintf(q, 1, fmt, ap);
    va_end(ap);
    return 1;
}

/* ---- time ------------------------------------------------------------------ */

static uint64_t cycles_at_ns(const npk_qtest *q, uint64_t ns) {
    unsigned __int128 c = (unsigned __int128)ns * npk_sim_hz(q->sim) / 1000000000u;
    return c > UINT64_MAX ? UINT64_MAX : (uint64_t)c;
}

/* First ns at which cycle `c` has been reached. */
static uint64_t ns_at_cycles(const npk_qtest *q, uint64_t c) {
    unsigned __int128 n = ((unsigned __int128)c * 1000000000u + npk_sim_hz(q->sim) - 1) / npk_sim_hz(q->sim);
    return n > UINT64_MAX ? UINT64_MAX : (uint64_t)n;
}

/* ---- responsiveness ----------------------------------------------------------------
 * Device work runs in chunks whose host cost is bounded (a quiet span, at most
 * 65536 busy cycles, and per guest action the models' implementation limits).
 * Between chunks keep_going() returns 0 once a stop was requested (a signal:
 * the request then fails with "interrupted" and the server shuts down), and
 * at most every 50 ms of host time answers clients that connect meanwhile
 * with one "FAIL busy" line (so they never wait in silence). Inside one long
 * action the device does both through npk_dev.stop and npk_dev.poll. */
static int stopped(const npk_qtest *q) { return q->cfg.stop && *q->cfg.stop; }

static uint64_t host_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Answer every client waiting on the listening socket with "FAIL busy". */
static void refuse_waiting(npk_qtest *q) {
    for (;;) {
        struct pollfd pf = {.fd = q->lfd, .events = POLLIN};
        if (poll(&pf, 1, 0) <= 0) return;
        int c = accept(q->lfd, NULL, NULL);
        if (c < 0) return;
        static const char busy[] = "FAIL busy: the server is serving another client\n";
        (void)!send(c, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        close(c);
        q->busy_replies++;
    }
}

/* At most every 50 ms of host time: answer waiting clients. */
static void poll_clients(npk_qtest *q) {
    if (q->lfd < 0) return;
    uint64_t t = host_ns();
    if (t - q->last_poll_ns >= 50000000u) {
        q->last_poll_ns = t;
        refuse_waiting(q);
    }
}

static int keep_going(npk_qtest *q) {
    if (stopped(q)) {
        q->interrupted = 1;
        return 0;
    }
    if (!(++q->tick & 63)) poll_clients(q);
    return 1;
}

/* The device's poll hook (npk_dev.poll): inside one long device action too. */
static void dev_poll(void *ctx) { poll_clients(ctx); }

static int dev_idle(npk_qtest *q) { return q->dev->ops->idle ? q->dev->ops->idle(q->dev) : 1; }
/* Busy but waiting for what never comes (a hung bus beat): time changes nothing. */
static int dev_stalled(npk_qtest *q) { return q->dev->ops->stalled ? q->dev->ops->stalled(q->dev) : 0; }

/* Advance the device to `target` cycles: big steps while idle, bounded
 * chunks while busy (a model's step(n) equals n single steps). */
static void run_to_cycles(npk_qtest *q, uint64_t target) {
    while (q->cycles < target && keep_going(q)) {
        uint64_t n = target - q->cycles;
        if (n > 65536 && !dev_idle(q)) n = 65536;
        npk_sim_step(q->sim, n);
        q->cycles += n;
    }
}

/* Run until the device is idle (bounded); returns cycles run. Spans in which
 * the device's state cannot change (npk_dev_quiet: a long DMA, a descriptor
 * in flight) are stepped at once, so the cost is per event, not per cycle.
 * A stalled (hung) device is busy: it runs the whole bound in one step. */
static uint64_t run_until_idle(npk_qtest *q) {
    uint64_t limit = q->cfg.idle_limit ? q->cfg.idle_limit : NPK_QTEST_IDLE_LIMIT, n = 0;
    while (n < limit) {
        if (dev_stalled(q)) { /* nothing will change: run the rest of the bound at once */
            npk_sim_step(q->sim, limit - n);
            n = limit;
            break;
        }
        if (dev_idle(q) || !keep_going(q)) break;
        uint64_t k = npk_dev_quiet(q->dev);
        if (k > limit - n) k = limit - n;
        npk_sim_step(q->sim, k);
        n += k;
    }
    q->cycles += n;
    uint64_t t = ns_at_cycles(q, q->cycles);
    if (t > q->ns) q->ns = t;
    return n;
}

/* ---- parsing ---------------------------------------------------------------- */

/* strtoull(s, 0, 0) over the whole word; '-' only when allow_neg. */
static int parse_num(const char *s, uint64_t *v, int allow_neg) {
    if (!*s || *s == ' ' || *s == '\t' || *s == '+') return -1;
    if (*s == '-' && !allow_neg) return -1;
    errno = 0;
    char *end;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || *end || end == s) return -1;
    *v = x;
    return 0;
}

#define NUM(word, var, what, neg)                                                   \
    do {                                                                            \
        if (parse_num((word), &(var), (neg)))                                       \
            return fail(q, "%s: bad %s '%s' (expected a number like strtoul base 0)", \
                        verb, (what), (word));                                      \
    } while (0)

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* ---- base64 ------------------------------------------------------------------ */

static const char b64tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *npk_b64_encode(const uint8_t *d, size_t n) {
    size_t out = (n + 2) / 3 * 4;
    char *s = malloc(out + 1), *p = s;
    if (!s) return NULL;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        *p++ = b64tab[v >> 18];
        *p++ = b64tab[(v >> 12) & 63];
        *p++ = b64tab[(v >> 6) & 63];
        *p++ = b64tab[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)d[i] << 16;
        *p++ = b64tab[v >> 18];
        *p++ = b64tab[(v >> 12) & 63];
        *p++ = '=';
        *p++ = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8;
        *p++ = b64tab[v >> 18];
        *p++ = b64tab[(v >> 12) & 63];
        *p++ = b64tab[(v >> 6) & 63];
        *p++ = '=';
    }
    *p = 0;
    return s;
}

/* Value of each byte as a base64 digit, -1 when it is not one. */
static const int8_t b64dec[256] = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 62, -1, -1, -1, 63,
    52, 53, 54, 55, 56, 57, 58, 59, 60, 61, -1, -1, -1, -1, -1, -1,
    -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
    15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, -1, -1, -1, -1, -1,
    -1, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
    41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
};

/* Table-driven: one validation pass, then four digits -> three bytes (large
 * b64write/b64read payloads are the bulk of a qtest session's traffic). */
long npk_b64_decode(const char *t, uint8_t **out) {
    *out = NULL;
    size_t n = strlen(t), body = n;
    while (body > 0 && t[body - 1] == '=') body--;
    size_t pad = n - body;
    if (pad > 2) return npk_err(NPK_EFORMAT, "invalid base64: too much '=' padding");
    const uint8_t *u = (const uint8_t *)t;
    for (size_t i = 0; i < body; i++)
        if (b64dec[u[i]] < 0)
            return npk_err(NPK_EFORMAT, "invalid base64 character '%c' at position %zu", t[i], i);
    if (body % 4 == 1) return npk_err(NPK_EFORMAT, "invalid base64: %zu characters cannot encode whole bytes", body);
    if (pad && n % 4) return npk_err(NPK_EFORMAT, "invalid base64: padded text of %zu characters", n);
    if (pad && (body % 4 == 0 || 4 - body % 4 != pad))
        return npk_err(NPK_EFORMAT, "invalid base64: wrong '=' padding");
    size_t len = body / 4 * 3 + (body % 4 ? body % 4 - 1 : 0);
    uint8_t *b = malloc(len ? len : 1);
    if (!b) return npk_err(NPK_ENOMEM, "out of memory");
    size_t o = 0, i = 0;
    for (; i + 4 <= body; i += 4) {
        uint32_t v = (uint32_t)b64dec[u[i]] << 18 | (uint32_t)b64dec[u[i + 1]] << 12 | (uint32_t)b64dec[u[i + 2]] << 6 |
                     (uint32_t)b64dec[u[i + 3]];
        b[o++] = (uint8_t)(v >> 16);
        b[o++] = (uint8_t)(v >> 8);
        b[o++] = (uint8_t)v;
    }
    uint32_t acc = 0;
    int bits = 0;
    for (; i < body; i++) {
        acc = acc << 6 | (uint32_t)b64dec[u[i]];
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            b[o++] = (uint8_t)(acc >> bits);
        }
    }
    /* Non-zero leftover bits mean the text is not a canonical encoding. */
    if (bits && (acc & ((1u << bits) - 1))) {
        free(b);
        return npk_err(NPK_EFORMAT, "invalid base64: the last character carries stray bits");
    }
    *out = b;
    return (long)o;
}

/* ---- guest accesses ------------------------------------------------------------ */

enum { OUTSIDE = 0, INSIDE = 1, STRADDLE = 2 };

/* Where [addr, addr+size) lies relative to the MMIO window (size >= 1, no wrap). */
static int window(const npk_qtest *q, uint64_t addr, uint64_t size) {
    uint64_t b = q->cls->mmio_base, e = b + q->cls->mmio_size;
    uint64_t last = addr + size - 1;
    if (last < b || addr >= e) return OUTSIDE;
    if (addr >= b && last < e) return INSIDE;
    return STRADDLE;
}

/* A window access of a size or alignment the registers do not take: a guest
 * error of the device, then FAIL with the reason. */
static void ge_width(npk_qtest *q, const char *verb, uint64_t addr, uint64_t size) {
    uint64_t b = q->cls->mmio_base;
    uint32_t off = addr > b ? (uint32_t)(addr - b) : 0;
    npk_dev_guest_error(q->dev, NPK_GE_WIDTH, off, "%s of %" PRIu64 " bytes at offset 0x%03x (registers take aligned 32/64-bit accesses)",
                        verb, size, off);
}

static int straddle_fail(npk_qtest *q, const char *verb, uint64_t addr, uint64_t size) {
    ge_width(q, verb, addr, size);
    return fail(q, "%s: 0x%" PRIx64 "+%" PRIu64 " straddles the %s register window 0x%" PRIx64 "-0x%" PRIx64, verb,
                addr, size, q->cls->name, q->cls->mmio_base, q->cls->mmio_base + q->cls->mmio_size - 1);
}

static int range_ok(npk_qtest *q, const char *verb, uint64_t addr, uint64_t size) {
    if (size && addr + size - 1 < addr)
        return fail(q, "%s: 0x%" PRIx64 "+%" PRIu64 " wraps around the 64-bit address space", verb, addr, size);
    return 0;
}

/* Where a bulk transfer goes: *inside = 1 for the register window (whole aligned
 * 32-bit words only), 0 for guest memory; 1 (FAIL replied, a guest error recorded)
 * for a transfer that straddles the window or is not whole words inside it. */
static int bulk_where(npk_qtest *q, const char *verb, uint64_t addr, uint64_t size, int *inside) {
    int w = window(q, addr, size);
    *inside = w == INSIDE;
    if (w == STRADDLE) return straddle_fail(q, verb, addr, size);
    if (w == INSIDE && ((addr | size) & 3)) {
        ge_width(q, verb, addr, size);
        return fail(q, "%s: register window accesses must be whole aligned 32-bit words (0x%" PRIx64 "+%" PRIu64 ")", verb,
                    addr, size);
    }
    return 0;
}

/* Bulk read into buf: guest memory, or whole aligned registers in the window. */
static int bulk_read(npk_qtest *q, const char *verb, uint64_t addr, uint8_t *buf, uint64_t size) {
    int inside;
    if (bulk_where(q, verb, addr, size, &inside)) return 1;
    if (inside) {
        for (uint64_t i = 0; i < size; i += 4) {
            uint64_t v = 0;
            if (npk_sim_read(q->sim, addr + i, 4, &v)) return fail(q, "%s: %s", verb, npk_errmsg());
            for (int k = 0; k < 4; k++) buf[i + k] = (uint8_t)(v >> (8 * k));
        }
        return 0;
    }
    if (npk_mem_peek(npk_sim_mem(q->sim), addr, buf, size)) return fail(q, "%s: %s", verb, npk_errmsg());
    return 0;
}

static int bulk_write(npk_qtest *q, const char *verb, uint64_t addr, const uint8_t *buf, uint64_t size) {
    int inside;
    if (bulk_where(q, verb, addr, size, &inside)) return 1;
    if (inside) {
        for (uint64_t i = 0; i < size; i += 4) {
            uint32_t v = (uint32_t)buf[i] | (uint32_t)buf[i + 1] << 8 | (uint32_t)buf[i + 2] << 16 |
                         (uint32_t)buf[i + 3] << 24;
            if (npk_sim_write(q->sim, addr + i, 4, v)) return fail(q, "%s: %s", verb, npk_errmsg());
        }
        return 0;
    }
    if (npk_mem_poke(npk_sim_mem(q->sim), addr, buf, size)) return fail(q, "%s: %s", verb, npk_errmsg());
    return 0;
}

/* The end of a write verb: buf (size bytes, owned: freed here) written, then OK
 * (size 0 writes nothing). */
static int write_reply(npk_qtest *q, const char *verb, uint64_t addr, uint8_t *buf, uint64_t size) {
    int rc = size ? bulk_write(q, verb, addr, buf, size) : 0;
    free(buf);
    if (rc) return 1;
    rep_add(q, "OK", 2);
    return 0;
}

static unsigned size_of_suffix(char c) { return c == 'b' ? 1 : c == 'w' ? 2 : c == 'l' ? 4 : 8; }

/* ---- verbs ---------------------------------------------------------------------- */

static int args(npk_qtest *q, const char *verb, int nargs, int lo, int hi, const char *usage) {
    if (nargs < lo) return fail(q, "%s: missing argument (usage: %s)", verb, usage);
    if (nargs > hi) return fail(q, "%s: too many arguments (usage: %s)", verb, usage);
    return 0;
}

static int v_write_n(npk_qtest *q, const char *verb, char **a, int na) {
    static const char *const usage[] = {"writeb ADDR VALUE", "writew ADDR VALUE", "writel ADDR VALUE",
                                        "writeq ADDR VALUE"};
    unsigned size = size_of_suffix(verb[5]);
    if (args(q, verb, na, 2, 2, usage[size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3])) return 1;
    uint64_t addr, val;
    NUM(a[0], addr, "address", 0);
    NUM(a[1], val, "value", 1);
    if (range_ok(q, verb, addr, size)) return 1;
    if (size < 8) val &= (UINT64_C(1) << (8 * size)) - 1; /* QEMU truncates to the access width */
    int w = window(q, addr, size);
    if (w == STRADDLE) return straddle_fail(q, verb, addr, size);
    if (w == INSIDE) {
        uint64_t off = addr - q->cls->mmio_base;
        if (size < 4) {
            ge_width(q, verb, addr, size);
            return fail(q, "%s: 0x%" PRIx64 " is in the %s register window, which takes aligned 32/64-bit writes only",
                        verb, addr, q->cls->name);
        }
        if (off % size) {
            ge_width(q, verb, addr, size);
            return fail(q, "%s: 0x%" PRIx64 " is not %u-byte aligned (register window of %s)", verb, addr, size,
                        q->cls->name);
        }
    }
    if (npk_sim_write(q->sim, addr, size, val)) return fail(q, "%s: %s", verb, npk_errmsg());
    rep_add(q, "OK", 2);
    return 0;
}

static int v_read_n(npk_qtest *q, const char *verb, char **a, int na) {
    static const char *const usage[] = {"readb ADDR", "readw ADDR", "readl ADDR", "readq ADDR"};
    unsigned size = size_of_suffix(verb[4]);
    if (args(q, verb, na, 1, 1, usage[size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3])) return 1;
    uint64_t addr, val = 0;
    NUM(a[0], addr, "address", 0);
    if (range_ok(q, verb, addr, size)) return 1;
    int w = window(q, addr, size);
    if (w == STRADDLE) return straddle_fail(q, verb, addr, size);
    if (w == INSIDE && (addr - q->cls->mmio_base) % size) {
        ge_width(q, verb, addr, size);
        return fail(q, "%s: 0x%" PRIx64 " is not %u-byte aligned (register window of %s)", verb, addr, size,
                    q->cls->name);
    }
    if (npk_sim_read(q->sim, addr, size, &val)) return fail(q, "%s: %s", verb, npk_errmsg());
    rep_printf(q, "OK 0x%016" PRIx64, val);
    return 0;
}

static int get_addr_size(npk_qtest *q, const char *verb, char **a, uint64_t *addr, uint64_t *size, uint64_t cap,
                         int allow_zero) {
    NUM(a[0], *addr, "address", 0);
    NUM(a[1], *size, "size", 0);
    if (!*size && !allow_zero) return fail(q, "%s: size 0 (nothing to transfer)", verb);
    if (*size > cap)
        return fail(q, "%s: size %" PRIu64 " exceeds the limit of %" PRIu64 " bytes per request", verb, *size, cap);
    return range_ok(q, verb, *addr, *size);
}

static int v_read(npk_qtest *q, const char *verb, char **a, int na, int b64) {
    if (args(q, verb, na, 2, 2, b64 ? "b64read ADDR SIZE" : "read ADDR SIZE")) return 1;
    uint64_t addr, size;
    if (get_addr_size(q, verb, a, &addr, &size, NPK_QTEST_MAX_BULK, b64)) return 1;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return fail(q, "%s: out of memory", verb);
    if (size && bulk_read(q, verb, addr, buf, size)) {
        free(buf);
        return 1;
    }
    if (b64) {
        char *s = npk_b64_encode(buf, size);
        free(buf);
        if (!s) return fail(q, "%s: out of memory", verb);
        rep_add(q, "OK ", 3);
        rep_add(q, s, strlen(s));
        free(s);
    } else {
        static const char hx[] = "0123456789abcdef";
        if (rep_reserve(q, 5 + 2 * size)) {
            free(buf);
            return fail(q, "%s: out of memory", verb);
        }
        rep_add(q, "OK 0x", 5);
        for (uint64_t i = 0; i < size; i++) {
            q->rep[q->rlen++] = hx[buf[i] >> 4];
            q->rep[q->rlen++] = hx[buf[i] & 15];
        }
        q->rep[q->rlen] = 0;
        free(buf);
    }
    return 0;
}

static int v_write(npk_qtest *q, const char *verb, char **a, int na) {
    if (args(q, verb, na, 3, 3, "write ADDR SIZE 0xHEXBYTES")) return 1;
    uint64_t addr, size;
    if (get_addr_size(q, verb, a, &addr, &size, NPK_QTEST_MAX_BULK, 0)) return 1;
    const char *d = a[2];
    if (d[0] != '0' || (d[1] != 'x' && d[1] != 'X') || !d[2])
        return fail(q, "%s: data must be 0x followed by hex bytes, got '%.40s'", verb, d);
    d += 2;
    size_t nd = strlen(d);
    for (size_t i = 0; i < nd; i++)
        if (hexval(d[i]) < 0) return fail(q, "%s: invalid hex digit '%c' at position %zu of the data", verb, d[i], i + 2);
    if (nd & 1) return fail(q, "%s: odd number of hex digits (%zu): give whole bytes", verb, nd);
    uint8_t *buf = calloc(size, 1); /* QEMU: short data is zero-filled, extra data is ignored */
    if (!buf) return fail(q, "%s: out of memory", verb);
    for (uint64_t i = 0; i < size && 2 * i < nd; i++)
        buf[i] = (uint8_t)(hexval(d[2 * i]) << 4 | hexval(d[2 * i + 1]));
    return write_reply(q, verb, addr, buf, size);
}

static int v_b64write(npk_qtest *q, const char *verb, char **a, int na) {
    if (args(q, verb, na, 3, 3, "b64write ADDR SIZE BASE64")) return 1;
    uint64_t addr, size;
    if (get_addr_size(q, verb, a, &addr, &size, NPK_QTEST_MAX_BULK, 1)) return 1;
    if (strlen(a[2]) < 3) return fail(q, "%s: invalid argument size (base64 data of %zu characters)", verb, strlen(a[2]));
    uint8_t *dec;
    long n = npk_b64_decode(a[2], &dec);
    if (n < 0) return fail(q, "%s: %s", verb, npk_errmsg());
    uint8_t *buf = calloc(size ? size : 1, 1); /* QEMU: the data is truncated or zero-filled to SIZE */
    if (!buf) {
        free(dec);
        return fail(q, "%s: out of memory", verb);
    }
    memcpy(buf, dec, (uint64_t)n < size ? (size_t)n : size);
    free(dec);
    return write_reply(q, verb, addr, buf, size);
}

static int v_memset(npk_qtest *q, const char *verb, char **a, int na) {
    if (args(q, verb, na, 3, 3, "memset ADDR SIZE VALUE")) return 1;
    uint64_t addr, size, val;
    if (get_addr_size(q, verb, a, &addr, &size, NPK_QTEST_MAX_MEMSET, 1)) return 1;
    NUM(a[2], val, "value", 1);
    if (!size) {
        rep_add(q, "OK", 2);
        return 0;
    }
    int w = window(q, addr, size);
    if (w == OUTSIDE) {
        if (npk_mem_fill(npk_sim_mem(q->sim), addr, (uint8_t)val, size)) return fail(q, "%s: %s", verb, npk_errmsg());
    } else {
        if (w == STRADDLE) return straddle_fail(q, verb, addr, size);
        uint8_t *buf = malloc(size);
        if (!buf) return fail(q, "%s: out of memory", verb);
        memset(buf, (uint8_t)val, size);
        return write_reply(q, verb, addr, buf, size);
    }
    rep_add(q, "OK", 2);
    return 0;
}

static int v_clock_step(npk_qtest *q, const char *verb, char **a, int na) {
    if (args(q, verb, na, 0, 1, "clock_step [NS]")) return 1;
    if (na == 0) {
        if (dev_idle(q) && !dev_stalled(q))
            return fail(q, "cannot advance clock to the next deadline because there is no pending deadline");
        run_until_idle(q);
        rep_printf(q, "OK %" PRIu64, q->ns);
        return 0;
    }
    uint64_t n;
    NUM(a[0], n, "time in ns", 0);
    if (!n) return fail(q, "could not advance time");
    if (q->ns + n < q->ns) return fail(q, "%s: the clock would overflow 64 bits of ns", verb);
    q->ns += n;
    run_to_cycles(q, cycles_at_ns(q, q->ns));
    rep_printf(q, "OK %" PRIu64, q->ns);
    return 0;
}

static int v_clock_set(npk_qtest *q, const char *verb, char **a, int na) {
    if (args(q, verb, na, 1, 1, "clock_set NS")) return 1;
    uint64_t t;
    NUM(a[0], t, "time in ns", 0);
    if (t < q->ns) {
        /* QEMU's reply when the clock is already past NS: FAIL and the current time. */
        q->rlen = 0;
        rep_printf(q, "FAIL %" PRIu64, q->ns);
        return 1;
    }
    q->ns = t;
    run_to_cycles(q, cycles_at_ns(q, q->ns));
    rep_printf(q, "OK %" PRIu64, q->ns);
    return 0;
}

static int v_regs(npk_qtest *q, const char *verb, int na) {
    if (args(q, verb, na, 0, 0, "npu_regs")) return 1;
    npk_regfile *rf = q->dev->regs;
    if (!rf || !rf->n) return fail(q, "%s: the %s model has no register table", verb, q->cls->name);
    rep_add(q, "OK", 2);
    size_t i = 0;
    for (const npk_reg *r; (r = npk_regfile_next(rf, &i));)
        rep_printf(q, " %s=0x%08" PRIx32, r->name, npk_regfile_peek(rf, q->dev, r->off));
    return 0;
}

static int v_guest_errors(npk_qtest *q, const char *verb, int na) {
    if (args(q, verb, na, 0, 0, "npu_guest_errors")) return 1;
    rep_printf(q, "OK total=%" PRIu64, npk_sim_guest_errors(q->sim, -1));
    for (int k = 0; k < NPK_GE_COUNT; k++)
        rep_printf(q, " %s=%" PRIu64, npk_guest_error_name((npk_guest_error)k), npk_sim_guest_errors(q->sim, k));
    return 0;
}

static int v_info(npk_qtest *q, const char *verb, int na) {
    if (args(q, verb, na, 0, 0, "npu_info")) return 1;
    unsigned mask = 0;
    for (int i = 0; i < NPK_MAX_IRQ; i++)
        if (npk_sim_irq(q->sim, i)) mask |= 1u << i;
    rep_printf(q,
               "OK device=%s hz=%" PRIu64 " mmio=0x%" PRIx64 "+0x%" PRIx32 " irqs=%d ns=%" PRIu64 " cycles=%" PRIu64
               " irq=0x%x settle=%d",
               q->cls->name, npk_sim_hz(q->sim), q->cls->mmio_base, q->cls->mmio_size, q->cls->n_irq, q->ns, q->cycles, mask,
               q->cfg.settle ? 1 : 0);
    return 0;
}

/* The energy model's counters (docs/energy.md): the dynamic energy since the model
 * was created by class, its area and node, as C99 hexadecimal floats so that a
 * client gets the very doubles the in-process port would (through the port layer's energy query). */
static int v_energy(npk_qtest *q, const char *verb, int na) {
    if (args(q, verb, na, 0, 0, "npu_energy")) return 1;
    if (!q->dev->ops->energy) return fail(q, "%s: the %s model has no energy model", verb, q->cls->name);
    npk_energy e;
    npk_area a;
    uint32_t nm = 0;
    memset(&e, 0, sizeof e);
    memset(&a, 0, sizeof a);
    q->dev->ops->energy(q->dev, &e, &a, &nm);
    rep_printf(q, "OK tech_nm=%" PRIu32 " compute=%a reg=%a sram=%a acc=%a dram=%a dma=%a mmio=%a", nm, e.compute_pj,
               e.reg_pj, e.sram_pj, e.acc_pj, e.dram_pj, e.dma_pj, e.mmio_pj);
    rep_printf(q, " area_array=%a area_sram=%a area_fixed=%a", a.array_mm2, a.sram_mm2, a.fixed_mm2);
    return 0;
}

/* Port I/O. The machine has no I/O devices: like QEMU's unassigned I/O space,
 * reads return all ones of the access width and writes are ignored. Ports
 * are 16-bit (QEMU asserts on larger numbers; we FAIL). */
static int v_in(npk_qtest *q, const char *verb, char **a, int na) {
    if (args(q, verb, na, 1, 1, "inb|inw|inl PORT")) return 1;
    uint64_t port;
    NUM(a[0], port, "port", 0);
    if (port > 0xffff) return fail(q, "%s: port 0x%" PRIx64 " is beyond the 16-bit I/O space", verb, port);
    uint32_t v = verb[2] == 'b' ? 0xffu : verb[2] == 'w' ? 0xffffu : 0xffffffffu;
    rep_printf(q, "OK 0x%04" PRIx32, v); /* QEMU's format */
    return 0;
}

static int v_out(npk_qtest *q, const char *verb, char **a, int na) {
    if (args(q, verb, na, 2, 2, "outb|outw|outl PORT VALUE")) return 1;
    uint64_t port, val;
    NUM(a[0], port, "port", 0);
    NUM(a[1], val, "value", 1);
    if (port > 0xffff) return fail(q, "%s: port 0x%" PRIx64 " is beyond the 16-bit I/O space", verb, port);
    rep_add(q, "OK", 2);
    return 0;
}

/* Execute the words; returns 0 (OK), 1 (FAIL). *access is set when the verb
 * touched the machine (for --settle). */
static int dispatch(npk_qtest *q, char **w, int nw, int *access) {
    const char *verb = w[0];
    char **a = w + 1;
    int na = nw - 1;
    *access = 0;
    if (!strcmp(verb, "writeb") || !strcmp(verb, "writew") || !strcmp(verb, "writel") || !strcmp(verb, "writeq")) {
        *access = 1;
        return v_write_n(q, verb, a, na);
    }
    if (!strcmp(verb, "readb") || !strcmp(verb, "readw") || !strcmp(verb, "readl") || !strcmp(verb, "readq")) {
        *access = 1;
        return v_read_n(q, verb, a, na);
    }
    if (!strcmp(verb, "read") || !strcmp(verb, "b64read")) {
        *access = 1;
        return v_read(q, verb, a, na, verb[0] == 'b');
    }
    if (!strcmp(verb, "write")) {
        *access = 1;
        return v_write(q, verb, a, na);
    }
    if (!strcmp(verb, "b64write")) {
        *access = 1;
        return v_b64write(q, verb, a, na);
    }
    if (!strcmp(verb, "memset")) {
        *access = 1;
        return v_memset(q, verb, a, na);
    }
    if (!strcmp(verb, "clock_step")) return v_clock_step(q, verb, a, na);
    if (!strcmp(verb, "clock_set")) return v_clock_set(q, verb, a, na);
    if (!strcmp(verb, "irq_intercept_in") || !strcmp(verb, "irq_intercept_out")) {
        /* As QEMU: from now on IRQ line changes are reported. The machine has
         * one device, so any QOM path names it. */
        if (args(q, verb, na, 1, 2, "irq_intercept_in|irq_intercept_out QOM-PATH [NAME]")) return 1;
        q->intercept = 1;
        rep_add(q, "OK", 2);
        return 0;
    }
    if (!strcmp(verb, "endianness")) {
        if (args(q, verb, na, 0, 0, "endianness")) return 1;
        rep_add(q, "OK little", 9);
        return 0;
    }
    if (!strcmp(verb, "npu_reset")) {
        if (args(q, verb, na, 0, 0, "npu_reset")) return 1;
        *access = 1;
        npk_sim_reset(q->sim);
        rep_add(q, "OK", 2);
        return 0;
    }
    if (!strcmp(verb, "npu_regs")) return v_regs(q, verb, na);
    if (!strcmp(verb, "npu_guest_errors")) return v_guest_errors(q, verb, na);
    if (!strcmp(verb, "npu_info")) return v_info(q, verb, na);
    if (!strcmp(verb, "npu_energy")) return v_energy(q, verb, na);
    if (!strcmp(verb, "outb") || !strcmp(verb, "outw") || !strcmp(verb, "outl")) return v_out(q, verb, a, na);
    if (!strcmp(verb, "inb") || !strcmp(verb, "inw") || !strcmp(verb, "inl")) return v_in(q, verb, a, na);
    if (!strcmp(verb, "set_irq_in"))
        return fail(q, "set_irq_in: the %s model has no input interrupt lines", q->cls->name);
    return fail(q, "Unknown command '%.64s'", verb);
}

int npk_qtest_command(npk_qtest *q, const char *line) {
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t')) n--;
    size_t s = 0;
    while (s < n && (line[s] == ' ' || line[s] == '\t')) s++;
    if (s == n || line[s] == '#') return -1;
    if (q->cfg.log) {
        fputs("> ", q->cfg.log);
        fwrite(line + s, 1, n - s, q->cfg.log);
        fputc('\n', q->cfg.log);
    }
    char *copy = malloc(n - s + 1);
    q->rlen = 0;
    q->rep_oom = 0;
    q->interrupted = 0;
    int rc;
    if (!copy) {
        rc = fail(q, "out of memory");
    } else {
        memcpy(copy, line + s, n - s);
        copy[n - s] = 0;
        char *w[MAX_WORDS + 1];
        int nw = 0, toomany = 0;
        for (char *p = copy; *p;) {
            while (*p == ' ' || *p == '\t') *p++ = 0;
            if (!*p) break;
            if (nw == MAX_WORDS) {
                toomany = 1;
                break;
            }
            w[nw++] = p;
            while (*p && *p != ' ' && *p != '\t') p++;
        }
        w[nw] = NULL;
        int access = 0;
        if (toomany) rc = fail(q, "%.64s: too many arguments", w[0]);
        else rc = dispatch(q, w, nw, &access);
        free(copy);
        if (rc == 0 && access && q->cfg.settle && !q->rep_oom) run_until_idle(q);
        if (q->interrupted) {
            q->ns = ns_at_cycles(q, q->cycles); /* where the device work stopped */
            rc = fail(q, "interrupted: the server is shutting down (device work stopped at %" PRIu64 " ns)", q->ns);
        }
    }
    rep_add(q, "\n", 1);
    if (q->rep_oom) {
        static const char oom[] = "FAIL out of memory building the reply\n";
        emit(q, oom, sizeof oom - 1);
        q->rep_oom = 0;
        rc = 1;
    } else {
        emit(q, q->rep, q->rlen);
    }
    /* Do not keep a huge reply buffer around. */
    if (q->rcap > 65536) {
        free(q->rep);
        q->rep = NULL;
        q->rcap = 0;
    }
    q->rlen = 0;
    return rc;
}

/* ---- input ------------------------------------------------------------------------- */

static void run_line(npk_qtest *q) {
    if (q->overflow) {
        q->overflow = 0;
        q->len = 0;
        q->rlen = 0;
        fail(q, "request line longer than %u bytes", NPK_QTEST_MAX_LINE);
        rep_add(q, "\n", 1);
        emit(q, q->rep, q->rlen);
        q->rlen = 0;
        return;
    }
    if (!q->line) return;
    q->line[q->len] = 0;
    /* A NUL inside the line would hide the rest of it: refuse the request. */
    if (strlen(q->line) != q->len) {
        q->rlen = 0;
        fail(q, "request contains a NUL byte");
        rep_add(q, "\n", 1);
        emit(q, q->rep, q->rlen);
        q->rlen = 0;
    } else {
        npk_qtest_command(q, q->line);
    }
    q->len = 0;
    if (q->cap > 65536) {
        free(q->line);
        q->line = NULL;
        q->cap = 0;
    }
}

void npk_qtest_feed(npk_qtest *q, const void *data, size_t n) {
    const char *p = data, *end = p + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t chunk = (size_t)((nl ? nl : end) - p);
        if (!q->overflow) {
            if (q->len + chunk > NPK_QTEST_MAX_LINE) {
                q->overflow = 1;
            } else {
                if (q->len + chunk + 1 > q->cap) {
                    size_t nc = q->cap ? q->cap : 256;
                    while (nc < q->len + chunk + 1) nc *= 2;
                    char *nb = realloc(q->line, nc);
                    if (!nb) {
                        q->overflow = 1;
                    } else {
                        q->line = nb;
                        q->cap = nc;
                    }
                }
                if (!q->overflow) {
                    memcpy(q->line + q->len, p, chunk);
                    q->len += chunk;
                }
            }
        }
        if (!nl) break;
        run_line(q);
        p = nl + 1;
    }
}

void npk_qtest_eof(npk_qtest *q) {
    if (q->len || q->overflow) run_line(q);
    q->len = 0;
    q->overflow = 0;
}

uint64_t npk_qtest_ns(const npk_qtest *q) { return q->ns; }
uint64_t npk_qtest_cycles(const npk_qtest *q) { return q->cycles; }

npk_qtest *npk_qtest_new(npk_sim *sim, const npk_qtest_cfg *cfg, npk_qtest_out_fn out, void *ctx) {
    if (!sim) {
        npk_err(NPK_EINVAL, "qtest: no machine");
        return NULL;
    }
    npk_qtest *q = calloc(1, sizeof *q);
    if (!q) {
        npk_err(NPK_ENOMEM, "out of memory");
        return NULL;
    }
    q->sim = sim;
    q->dev = npk_sim_dev(sim);
    q->cls = npk_sim_class(sim);
    if (cfg) q->cfg = *cfg;
    q->out = out;
    q->out_ctx = ctx;
    q->sfd = -1;
    q->lfd = -1;
    if (!npk_sim_hz(q->sim)) {
        npk_err(NPK_EINVAL, "qtest: device class '%s' has no clock frequency", q->cls->name);
        free(q);
        return NULL;
    }
    /* Time starts where the device is (normally 0). */
    q->cycles = 0;
    q->ns = 0;
    q->dev->stop = q->cfg.stop; /* long device actions stop too (npk_dev_stopping) */
    q->dev->poll = dev_poll;
    q->dev->poll_ctx = q;
    npk_sim_set_irq_cb(sim, on_irq, q);
    return q;
}

void npk_qtest_free(npk_qtest *q) {
    if (!q) return;
    npk_sim_set_irq_cb(q->sim, NULL, NULL);
    q->dev->stop = NULL;
    q->dev->poll = NULL;
    q->dev->poll_ctx = NULL;
    free(q->line);
    free(q->rep);
    free(q->obuf);
    free(q);
}

/* ---- transports ----------------------------------------------------------------------- */

/* Wait until fd is readable or a stop was requested (checked every 200 ms so
 * a signal that lands just before the wait is not missed for long); while a
 * client is served, clients connecting meanwhile get "FAIL busy".
 * Returns 1 when readable, 0 when stopped, -1 on a poll error. */
static int wait_readable(npk_qtest *q, int fd) {
    for (;;) {
        if (stopped(q)) return 0;
        /* clients waiting on the listening socket are refused only once the connection being
         * served has spoken: until then it may be another server's liveness probe, about to
         * close, and the waiting client is the session (it stays in the backlog meanwhile) */
        int watch = q->lfd >= 0 && q->lfd != fd && q->bytes_in;
        struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = q->lfd, .events = POLLIN}};
        int r = poll(pf, watch ? 2 : 1, 200);
        if (r > 0 && watch && (pf[1].revents & POLLIN)) refuse_waiting(q);
        if (r > 0 && pf[0].revents) return 1;
        if (r < 0 && errno != EINTR) return -1;
    }
}

static void send_all(npk_qtest *q, const char *p, size_t n) {
    size_t off = 0;
    while (off < n && !q->peer_gone) {
        ssize_t w;
        if (q->sfd_is_sock) w = send(q->sfd, p + off, n - off, MSG_NOSIGNAL);
        else w = write(q->sfd, p + off, n - off);
        if (w < 0 && errno == ENOTSOCK && q->sfd_is_sock) {
            q->sfd_is_sock = 0;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            q->peer_gone = 1;
            break;
        }
        off += (size_t)w;
    }
}

static void flush_out(npk_qtest *q) {
    send_all(q, q->obuf, q->olen);
    q->olen = 0;
}

static void buffer_out(void *ctx, const char *s, size_t n) {
    npk_qtest *q = ctx;
    if (q->peer_gone) return;
    if (q->olen + n > q->ocap) {
        size_t nc = q->ocap ? q->ocap : 65536;
        while (nc < q->olen + n) nc *= 2;
        char *nb = realloc(q->obuf, nc);
        if (!nb) { /* unbuffered fallback */
            flush_out(q);
            send_all(q, s, n);
            return;
        }
        q->obuf = nb;
        q->ocap = nc;
    }
    memcpy(q->obuf + q->olen, s, n);
    q->olen += n;
    if (q->olen >= 65536) flush_out(q);
}

int npk_qtest_serve_fd(npk_qtest *q, int in_fd, int out_fd) {
    npk_qtest_out_fn saved = q->out;
    void *saved_ctx = q->out_ctx;
    q->out = buffer_out;
    q->out_ctx = q;
    q->sfd = out_fd;
    q->sfd_is_sock = 1; /* tried first; falls back to write() on ENOTSOCK */
    q->peer_gone = 0;
    q->olen = 0;
    int rc = 0;
    char *buf = malloc(65536);
    if (!buf) rc = npk_err(NPK_ENOMEM, "out of memory");
    while (buf && !q->peer_gone) {
        int w = wait_readable(q, in_fd);
        if (w == 0) break;
        ssize_t n = w < 0 ? -1 : read(in_fd, buf, 65536);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            if (errno == ECONNRESET) break; /* the peer went away */
            rc = npk_err(NPK_EIO, "qtest: reading requests: %s", strerror(errno));
            break;
        }
        if (n == 0) {
            npk_qtest_eof(q);
            flush_out(q);
            break;
        }
        q->bytes_in += (uint64_t)n;
        npk_qtest_feed(q, buf, (size_t)n);
        flush_out(q);
    }
    free(buf);
    q->out = saved;
    q->out_ctx = saved_ctx;
    q->sfd = -1;
    return rc;
}

int npk_qtest_serve_socket(npk_qtest *q, const char *path, void (*ready)(void *ctx, const char *path), void *ctx) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (!path || !*path) return npk_err(NPK_EINVAL, "qtest: empty socket path");
    if (strlen(path) >= sizeof sa.sun_path)
        return npk_err(NPK_EINVAL, "qtest: socket path '%s' is longer than %zu bytes", path, sizeof sa.sun_path - 1);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return npk_err(NPK_EINVAL, "qtest: '%s' exists and is not a socket (refusing to replace it)", path);
        /* Stale only if nobody accepts connections on it. */
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe < 0) return npk_err(NPK_EIO, "qtest: socket: %s", strerror(errno));
        int r = connect(probe, (struct sockaddr *)&sa, sizeof sa), e = errno;
        close(probe);
        if (r == 0)
            return npk_err(NPK_EINVAL, "qtest: another server is listening on '%s' (refusing to replace its socket)",
                           path);
        if (e != ECONNREFUSED && e != ENOENT)
            return npk_err(NPK_EIO, "qtest: cannot tell whether '%s' is in use: %s", path, strerror(e));
        unlink(path);
    }
    /* The socket must not appear under its name before it listens: a second
     * server probing it in between would see ECONNREFUSED, take it for stale
     * and replace it. So bind and listen under a temporary name beside it,
     * then link() it into place, which fails if the name was taken since. */
    struct sockaddr_un tmp = sa;
    int n = snprintf(tmp.sun_path, sizeof tmp.sun_path, "%s.%ld~", path, (long)getpid());
    int staged = n > 0 && (size_t)n < sizeof tmp.sun_path;
    if (!staged) tmp = sa; /* no room for a temporary name: bind in place */
    unlink(tmp.sun_path);
    int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (ls < 0) return npk_err(NPK_EIO, "qtest: socket: %s", strerror(errno));
    if (bind(ls, (struct sockaddr *)&tmp, sizeof tmp) < 0) {
        int e = errno;
        close(ls);
        return npk_err(NPK_EIO, "qtest: cannot bind '%s': %s", path, strerror(e));
    }
    if (listen(ls, 1) < 0) {
        int e = errno;
        close(ls);
        unlink(tmp.sun_path);
        return npk_err(NPK_EIO, "qtest: listen on '%s': %s", path, strerror(e));
    }
    if (staged) {
        int r = link(tmp.sun_path, path), e = errno;
        unlink(tmp.sun_path);
        if (r < 0) {
            close(ls);
            if (e == EEXIST)
                return npk_err(NPK_EINVAL,
                               "qtest: another server is listening on '%s' (it appeared while this one started)", path);
            return npk_err(NPK_EIO, "qtest: cannot create '%s': %s", path, strerror(e));
        }
    }
    if (ready) ready(ctx, path);
    /* Serve the first connection that sends something; one that closes
     * without a byte (another server probing whether this one is alive) is
     * not a session. The socket file stays until the server is done, so such
     * probes find it alive. */
    int rc = 0;
    for (;;) {
        int c = -1, w = wait_readable(q, ls);
        if (w > 0) {
            do {
                c = accept(ls, NULL, NULL);
            } while (c < 0 && errno == EINTR);
        }
        if (w == 0) break; /* stopped */
        if (c < 0) {
            rc = npk_err(NPK_EIO, "qtest: accept on '%s': %s", path, strerror(errno));
            break;
        }
        q->bytes_in = 0;
        q->lfd = ls;
        rc = npk_qtest_serve_fd(q, c, c);
        q->lfd = -1;
        close(c);
        if (rc || q->bytes_in || stopped(q)) break;
    }
    close(ls);
    unlink(path);
    return rc;
}
