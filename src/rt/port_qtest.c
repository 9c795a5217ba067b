// SPDX-License-Identifier: MIT
/*
 * Port backend: a device model in another process, spoken to with QEMU's
 * qtest text protocol (docs/qtest.md, docs/ports.md).
 *
 *   "qtest:PATH"        connect to the Unix socket PATH (`npu qtest --socket PATH`);
 *                       connection attempts are retried for up to 5 s while the
 *                       socket does not exist yet or refuses connections
 *   "qtest-spawn:NPU"   fork/exec `NPU qtest --device D [--opts OPTS]`; its stdin
 *                       and stdout are one end of a socketpair (a bidirectional
 *                       pipe), its stderr is a pipe that is forwarded to ours
 *
 * Every request waits for its reply line; "IRQ raise N" / "IRQ lower N" lines
 * that arrive before it update the tracked interrupt levels. A FAIL reply
 * becomes NPK_EINVAL (NPK_EBUS for guest memory transfers) with the server's
 * reason; a dead peer becomes NPK_EIO (sends use MSG_NOSIGNAL, so no SIGPIPE).
 * Closing the port closes the connection and reaps the child.
 */
#include "port.h"
#include "sim/qtest.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 49152u /* bytes per b64read/b64write request */

typedef struct qt {
    int fd;          /* connection to the server */
    pid_t pid;       /* spawned server, or 0 */
    int errfd;       /* the child's stderr, or -1 */
    int dead;        /* the connection is gone */
    char desc[600];  /* "qtest server '...'" for messages */
    char lasterr[512]; /* last line the child wrote to stderr */
    size_t lelen;
    int le_done;
    char *rb;        /* receive buffer */
    size_t rlen, rcap;
    char *line;      /* current reply line (inside line storage) */
    size_t lcap;
    int irq[NPK_MAX_IRQ];
    uint64_t ns;     /* server clock as of the last clock reply */
} qt;

static qt *Q(npk_port *p) { return p->impl; }

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

/* Forward what the child wrote to stderr; remember its last line. */
static void drain_stderr(qt *c) {
    if (c->errfd < 0) return;
    char buf[4096];
    for (;;) {
        ssize_t n = read(c->errfd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) {
                close(c->errfd);
                c->errfd = -1;
            }
            return;
        }
        ssize_t w = write(2, buf, (size_t)n);
        (void)w;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                c->le_done = 1; /* the next character starts a new line */
                continue;
            }
            if (c->le_done) {
                c->lelen = 0;
                c->le_done = 0;
            }
            if (c->lelen < sizeof c->lasterr - 1) {
                c->lasterr[c->lelen++] = buf[i];
                c->lasterr[c->lelen] = 0;
            }
        }
    }
}

/* Describe why the peer is gone (child exit status and its last message). */
static int peer_gone(qt *c, const char *what) {
    c->dead = 1;
    char status[128] = "";
    if (c->pid > 0) {
        /* Give the child a moment to finish writing and exit. */
        for (int i = 0; i < 200 && c->errfd >= 0; i++) {
            struct pollfd pf = {c->errfd, POLLIN, 0};
            if (poll(&pf, 1, 10) > 0) drain_stderr(c);
        }
        int st;
        pid_t r = 0;
        for (int i = 0; i < 100 && (r = waitpid(c->pid, &st, WNOHANG)) == 0; i++) sleep_ms(10);
        if (r == c->pid) {
            c->pid = 0;
            if (WIFEXITED(st)) snprintf(status, sizeof status, " (it exited with status %d)", WEXITSTATUS(st));
            else if (WIFSIGNALED(st)) snprintf(status, sizeof status, " (it was killed by signal %d)", WTERMSIG(st));
        }
    }
    return npk_err(NPK_EIO, "%s %s%s%s%s", c->desc, what, status, c->lasterr[0] ? ": " : "", c->lasterr);
}

static int send_all(qt *c, const char *s, size_t n) {
    while (n) {
        ssize_t w = send(c->fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return peer_gone(c, "closed the connection");
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Next '\n'-terminated line from the server into c->line (without '\n'). */
static int read_line(qt *c) {
    for (;;) {
        char *nl = c->rlen ? memchr(c->rb, '\n', c->rlen) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - c->rb);
            if (n + 1 > c->lcap) {
                char *nb = realloc(c->line, n + 1);
                if (!nb) return npk_err(NPK_ENOMEM, "out of memory");
                c->line = nb;
                c->lcap = n + 1;
            }
            memcpy(c->line, c->rb, n);
            c->line[n] = 0;
            if (n && c->line[n - 1] == '\r') c->line[n - 1] = 0;
            memmove(c->rb, nl + 1, c->rlen - n - 1);
            c->rlen -= n + 1;
            return 0;
        }
        if (c->rlen + 65536 > c->rcap) {
            size_t nc = c->rcap ? c->rcap * 2 : 131072;
            char *nb = realloc(c->rb, nc);
            if (!nb) return npk_err(NPK_ENOMEM, "out of memory");
            c->rb = nb;
            c->rcap = nc;
        }
        struct pollfd pf[2] = {{c->fd, POLLIN, 0}, {c->errfd, POLLIN, 0}};
        int np = c->errfd >= 0 ? 2 : 1;
        int r = poll(pf, (nfds_t)np, -1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return npk_err(NPK_EIO, "%s: poll: %s", c->desc, strerror(errno));
        if (np == 2 && pf[1].revents) drain_stderr(c);
        if (!pf[0].revents) continue;
        ssize_t n = recv(c->fd, c->rb + c->rlen, c->rcap - c->rlen, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return peer_gone(c, "went away before replying");
        c->rlen += (size_t)n;
    }
}

/* Send one request and wait for its reply. On success *ok is 1 for OK, 0 for
 * FAIL, and c->line holds the reply. Async IRQ lines update the levels. */
static int request(qt *c, const char *req, size_t n, int *ok) {
    if (c->dead) return npk_err(NPK_EIO, "%s is gone (an earlier request failed)", c->desc);
    int rc = send_all(c, req, n);
    if (rc) return rc;
    for (;;) {
        rc = read_line(c);
        if (rc) return rc;
        int line;
        if (sscanf(c->line, "IRQ raise %d", &line) == 1) {
            if (line >= 0 && line < NPK_MAX_IRQ) c->irq[line] = 1;
            continue;
        }
        if (sscanf(c->line, "IRQ lower %d", &line) == 1) {
            if (line >= 0 && line < NPK_MAX_IRQ) c->irq[line] = 0;
            continue;
        }
        if (!strcmp(c->line, "OK") || !strncmp(c->line, "OK ", 3)) {
            *ok = 1;
            return 0;
        }
        if (!strcmp(c->line, "FAIL") || !strncmp(c->line, "FAIL ", 5)) {
            *ok = 0;
            return 0;
        }
        c->dead = 1;
        return npk_err(NPK_EIO, "%s sent an unexpected reply '%.80s' (is it a qtest server?)", c->desc, c->line);
    }
}

static int failed(qt *c, int code, const char *req) {
    const char *reason = c->line[4] ? c->line + 5 : "(no reason given)";
    return npk_err(code, "%s refused '%.60s': %s", c->desc, req, reason);
}

static int simple(npk_port *p, int fail_code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int simple(npk_port *p, int fail_code, const char *fmt, ...) {
    qt *c = Q(p);
    char req[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(req, sizeof req, fmt, ap);
    va_end(ap);
    int ok;
    int rc = request(c, req, (size_t)n, &ok);
    if (rc) return rc;
    if (!ok) {
        req[n - 1] = 0;
        return failed(c, fail_code, req);
    }
    return 0;
}

static int parse_hex_reply(qt *c, const char *req, uint64_t *v) {
    char *end;
    errno = 0;
    if (strncmp(c->line, "OK 0x", 5)) goto bad;
    unsigned long long x = strtoull(c->line + 3, &end, 16);
    if (errno || *end) goto bad;
    *v = x;
    return 0;
bad:
    c->dead = 1;
    return npk_err(NPK_EIO, "%s: malformed reply '%.80s' to '%s'", c->desc, c->line, req);
}

static int qt_read32(npk_port *p, uint32_t off, uint32_t *val) {
    qt *c = Q(p);
    char req[64];
    int n = snprintf(req, sizeof req, "readl 0x%" PRIx64 "\n", p->cls->mmio_base + off);
    int ok;
    int rc = request(c, req, (size_t)n, &ok);
    if (rc) return rc;
    req[n - 1] = 0;
    if (!ok) return failed(c, NPK_EINVAL, req);
    uint64_t v = 0;
    rc = parse_hex_reply(c, req, &v);
    if (!rc) *val = (uint32_t)v;
    return rc;
}

static int qt_write32(npk_port *p, uint32_t off, uint32_t val) {
    return simple(p, NPK_EINVAL, "writel 0x%" PRIx64 " 0x%" PRIx32 "\n", p->cls->mmio_base + off, val);
}

static int qt_write64(npk_port *p, uint32_t off, uint64_t val) {
    return simple(p, NPK_EINVAL, "writeq 0x%" PRIx64 " 0x%" PRIx64 "\n", p->cls->mmio_base + off, val);
}

static int qt_mem_read(npk_port *p, uint64_t addr, void *buf, size_t len) {
    qt *c = Q(p);
    uint8_t *dst = buf;
    while (len) {
        size_t n = len < CHUNK ? len : CHUNK;
        char req[96];
        int rn = snprintf(req, sizeof req, "b64read 0x%" PRIx64 " %zu\n", addr, n);
        int ok;
        int rc = request(c, req, (size_t)rn, &ok);
        if (rc) return rc;
        req[rn - 1] = 0;
        if (!ok) return failed(c, NPK_EBUS, req);
        if (strncmp(c->line, "OK ", 3)) {
            c->dead = 1;
            return npk_err(NPK_EIO, "%s: malformed reply to '%s'", c->desc, req);
        }
        uint8_t *dec;
        long got = npk_b64_decode(c->line + 3, &dec);
        if (got < 0 || (size_t)got != n) {
            if (got >= 0) free(dec);
            c->dead = 1;
            return npk_err(NPK_EIO, "%s: reply to '%s' does not carry %zu bytes of base64", c->desc, req, n);
        }
        memcpy(dst, dec, n);
        free(dec);
        dst += n;
        addr += n;
        len -= n;
    }
    return 0;
}

static int qt_mem_write(npk_port *p, uint64_t addr, const void *buf, size_t len) {
    qt *c = Q(p);
    const uint8_t *src = buf;
    while (len) {
        size_t n = len < CHUNK ? len : CHUNK;
        char *b64 = npk_b64_encode(src, n);
        size_t cap = strlen(b64 ? b64 : "") + 96;
        char *req = b64 ? malloc(cap) : NULL;
        if (!req) {
            free(b64);
            return npk_err(NPK_ENOMEM, "out of memory");
        }
        int rn = snprintf(req, cap, "b64write 0x%" PRIx64 " %zu %s\n", addr, n, b64);
        free(b64);
        int ok;
        int rc = request(c, req, (size_t)rn, &ok);
        if (!rc && !ok) {
            char head[64];
            snprintf(head, sizeof head, "b64write 0x%" PRIx64 " %zu", addr, n);
            rc = failed(c, NPK_EBUS, head);
        }
        free(req);
        if (rc) return rc;
        src += n;
        addr += n;
        len -= n;
    }
    return 0;
}

static uint64_t cycles_at(uint64_t ns, uint64_t hz) {
    return (uint64_t)((unsigned __int128)ns * hz / 1000000000u);
}

static int qt_wait(npk_port *p, uint64_t cycles) {
    qt *c = Q(p);
    if (!cycles) return 0;
    uint64_t hz = npk_port_clock(p);
    uint64_t target = cycles_at(c->ns, hz) + cycles;
    unsigned __int128 tns = ((unsigned __int128)target * 1000000000u + hz - 1) / hz;
    if (tns > UINT64_MAX) return npk_err(NPK_EINVAL, "qtest: waiting %" PRIu64 " cycles overflows the clock", cycles);
    char req[64];
    int n = snprintf(req, sizeof req, "clock_step %" PRIu64 "\n", (uint64_t)tns - c->ns);
    int ok;
    int rc = request(c, req, (size_t)n, &ok);
    if (rc) return rc;
    req[n - 1] = 0;
    if (!ok) return failed(c, NPK_EINVAL, req);
    char *end;
    errno = 0;
    unsigned long long now = strtoull(c->line + 3, &end, 10);
    if (errno || *end || c->line[2] != ' ') {
        c->dead = 1;
        return npk_err(NPK_EIO, "%s: malformed reply '%.80s' to '%s'", c->desc, c->line, req);
    }
    c->ns = now;
    return 0;
}

static int qt_irq(npk_port *p, int line) {
    qt *c = Q(p);
    return line >= 0 && line < NPK_MAX_IRQ ? c->irq[line] : 0;
}

static void reap(qt *c) {
    if (c->pid <= 0) return;
    int st;
    /* The server exits at end of input; give it 2 s, then kill it. */
    for (int i = 0; i < 200; i++) {
        if (c->errfd >= 0) {
            struct pollfd pf = {c->errfd, POLLIN, 0};
            if (poll(&pf, 1, 0) > 0) drain_stderr(c);
        }
        if (waitpid(c->pid, &st, WNOHANG) != 0) {
            c->pid = 0;
            return;
        }
        sleep_ms(10);
    }
    kill(c->pid, SIGKILL);
    while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR) {
    }
    c->pid = 0;
}

static void free_qt(qt *c) {
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    reap(c);
    if (c->errfd >= 0) close(c->errfd);
    free(c->rb);
    free(c->line);
    free(c);
}

static void qt_close(npk_port *p) {
    free_qt(Q(p));
    p->impl = NULL;
}

static int connect_socket(qt *c, const char *path) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (!*path) return npk_err(NPK_EINVAL, "port 'qtest:': missing socket path");
    if (strlen(path) >= sizeof sa.sun_path)
        return npk_err(NPK_EINVAL, "port 'qtest:%s': socket path longer than %zu bytes", path, sizeof sa.sun_path - 1);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    for (int attempt = 0;; attempt++) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return npk_err(NPK_EIO, "port 'qtest:%s': socket: %s", path, strerror(errno));
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
            c->fd = fd;
            return 0;
        }
        int e = errno;
        close(fd);
        if ((e == ENOENT || e == ECONNREFUSED) && attempt < 500) {
            sleep_ms(10);
            continue;
        }
        return npk_err(NPK_EIO, "port 'qtest:%s': cannot connect: %s", path, strerror(e));
    }
}

static int pipe_cloexec(int fds[2]) {
    if (pipe(fds)) return -1;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return 0;
}

static int spawn(qt *c, const char *npu, const char *device, const char *opts) {
    if (!*npu) return npk_err(NPK_EINVAL, "port 'qtest-spawn:': missing path of the npu binary");
    int sv[2], ep[2], xp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
        return npk_err(NPK_EIO, "port 'qtest-spawn:%s': socketpair: %s", npu, strerror(errno));
    if (pipe_cloexec(ep)) {
        close(sv[0]);
        close(sv[1]);
        return npk_err(NPK_EIO, "port 'qtest-spawn:%s': pipe: %s", npu, strerror(errno));
    }
    if (pipe_cloexec(xp)) {
        close(sv[0]);
        close(sv[1]);
        close(ep[0]);
        close(ep[1]);
        return npk_err(NPK_EIO, "port 'qtest-spawn:%s': pipe: %s", npu, strerror(errno));
    }
    char *argv[8];
    int argc = 0;
    argv[argc++] = (char *)npu;
    argv[argc++] = "qtest";
    argv[argc++] = "--device";
    argv[argc++] = (char *)device;
    if (opts && *opts) {
        argv[argc++] = "--opts";
        argv[argc++] = (char *)opts;
    }
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        close(ep[0]);
        close(ep[1]);
        close(xp[0]);
        close(xp[1]);
        return npk_err(NPK_EIO, "port 'qtest-spawn:%s': fork: %s", npu, strerror(e));
    }
    if (pid == 0) {
        /* child: stdin/stdout = the socketpair, stderr = the pipe */
        if (dup2(sv[1], 0) < 0 || dup2(sv[1], 1) < 0 || dup2(ep[1], 2) < 0) _exit(127);
        signal(SIGPIPE, SIG_DFL);
        execv(npu, argv);
        int e = errno;
        ssize_t w = write(xp[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(sv[1]);
    close(ep[1]);
    close(xp[1]);
    c->fd = sv[0];
    c->errfd = ep[0];
    c->pid = pid;
    int e = 0;
    ssize_t r;
    do {
        r = read(xp[0], &e, sizeof e);
    } while (r < 0 && errno == EINTR);
    close(xp[0]);
    if (r == (ssize_t)sizeof e) {
        int st;
        waitpid(pid, &st, 0);
        c->pid = 0;
        return npk_err(NPK_EIO, "port 'qtest-spawn:%s': cannot execute '%s': %s", npu, npu, strerror(e));
    }
    return 0;
}

/* "qtest:PATH" or "qtest-spawn:NPU" (target): connect or spawn, then the handshake. */
static int qtest_open(npk_port *p, const char *target, const char *arg, const char *opts) {
    (void)arg;
    qt *c = calloc(1, sizeof *c);
    if (!c) return npk_err(NPK_ENOMEM, "out of memory");
    c->fd = -1;
    c->errfd = -1;
    int rc;
    if (!strncmp(target, "qtest-spawn:", 12)) {
        snprintf(c->desc, sizeof c->desc, "qtest server '%.400s qtest --device %s'", target + 12, p->cls->name);
        rc = spawn(c, target + 12, p->cls->name, opts);
    } else {
        snprintf(c->desc, sizeof c->desc, "qtest server at '%.500s'", target + 6);
        if (opts && *opts) {
            free_qt(c);
            return npk_err(NPK_EINVAL,
                           "port '%s': device options ('%s') cannot be applied to a running server; start it with "
                           "'npu qtest --opts'",
                           target, opts);
        }
        rc = connect_socket(c, target + 6);
    }
    if (rc) {
        free_qt(c);
        return rc;
    }
    /* Handshake: which device is this, what time is it, which IRQs are up. */
    int ok;
    rc = request(c, "npu_info\n", 9, &ok);
    if (!rc && !ok) rc = failed(c, NPK_EIO, "npu_info");
    if (!rc) {
        char dev[64] = "";
        unsigned long long hz = 0, ns = 0;
        unsigned irq = 0;
        const char *s;
        if ((s = strstr(c->line, " device="))) sscanf(s + 8, "%63s", dev);
        if ((s = strstr(c->line, " hz="))) hz = strtoull(s + 4, NULL, 10);
        if ((s = strstr(c->line, " ns="))) ns = strtoull(s + 4, NULL, 10);
        if ((s = strstr(c->line, " irq="))) irq = (unsigned)strtoul(s + 5, NULL, 16);
        if (!dev[0] || !hz)
            rc = npk_err(NPK_EIO, "%s: malformed npu_info reply '%.80s'", c->desc, c->line);
        else if (strcmp(dev, p->cls->name))
            rc = npk_err(NPK_EINVAL, "%s serves device '%s', not '%s'", c->desc, dev, p->cls->name);
        else
            p->hz = hz; /* the server's instance clock (its clock_mhz option) is the device's */
        c->ns = ns;
        for (int i = 0; i < NPK_MAX_IRQ; i++) c->irq[i] = (irq >> i) & 1;
    }
    /* Ask for IRQ lines (a QEMU-style server sends none until asked). */
    if (!rc) {
        rc = request(c, "irq_intercept_out /machine/npu\n", 31, &ok);
        if (!rc && !ok) rc = failed(c, NPK_EIO, "irq_intercept_out");
    }
    if (rc) {
        free_qt(c);
        return rc;
    }
    p->impl = c;
    return 0;
}

/* npukit's qtest extension (src/sim/qtest.c): a QEMU without it refuses the command */
static int qt_reset(npk_port *p) { return simple(p, NPK_EUNSUPPORTED, "npu_reset\n"); }

/* One "key=HEXFLOAT" of the npu_energy reply; -1 when missing or malformed. */
static int energy_field(const char *line, const char *key, double *v) {
    char pat[32];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *s = strstr(line, pat);
    if (!s) return -1;
    char *end;
    *v = strtod(s + strlen(pat), &end);
    return *end == ' ' || !*end ? 0 : -1;
}

/* npk_port_energy through the server's npu_energy (npukit's extension; a server
 * whose device has no energy model, or a QEMU, refuses it: EUNSUPPORTED). */
static int qt_energy(npk_port *p, npk_energy *e, npk_area *a, uint32_t *tech_nm) {
    qt *c = Q(p);
    int ok;
    int rc = request(c, "npu_energy\n", 11, &ok);
    if (rc) return rc;
    if (!ok) return failed(c, NPK_EUNSUPPORTED, "npu_energy");
    double nm = 0;
    memset(e, 0, sizeof *e);
    memset(a, 0, sizeof *a);
    const char *l = c->line;
    if (energy_field(l, "tech_nm", &nm) || energy_field(l, "compute", &e->compute_pj) ||
        energy_field(l, "reg", &e->reg_pj) || energy_field(l, "sram", &e->sram_pj) || energy_field(l, "acc", &e->acc_pj) ||
        energy_field(l, "dram", &e->dram_pj) || energy_field(l, "dma", &e->dma_pj) || energy_field(l, "mmio", &e->mmio_pj) ||
        energy_field(l, "area_array", &a->array_mm2) || energy_field(l, "area_sram", &a->sram_mm2) ||
        energy_field(l, "area_fixed", &a->fixed_mm2))
        return npk_err(NPK_EIO, "%s: malformed npu_energy reply '%.120s'", c->desc, l);
    *tech_nm = (uint32_t)nm;
    return 0;
}

const npk_port_backend npk_qtest_port = {
    .info = {"qtest", "qtest:PATH, qtest-spawn:NPU",
             "a device model in another process over QEMU's qtest protocol: the Unix socket PATH of `npu qtest --socket`, "
             "or a child `NPU qtest --device D` this port starts"},
    .schemes = {"qtest:", "qtest-spawn:"},
    .open = qtest_open,
    .read32 = qt_read32,
    .write32 = qt_write32,
    .write64 = qt_write64,
    .mem_read = qt_mem_read,
    .mem_write = qt_mem_write,
    .wait = qt_wait,
    .irq = qt_irq,
    .reset = qt_reset,
    .close = qt_close,
    .energy = qt_energy,
};
