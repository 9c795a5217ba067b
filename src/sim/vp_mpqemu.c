/* SPDX-License-Identifier: MIT */
/*
 * The virtual platform's first transport: QEMU 7.2's multi-process protocol
 * (the x-pci-proxy-dev device), and the serve loop (see vp.h, docs/vp.md).
 *
 * Every message is a 16-byte header (int32 cmd, 4 bytes padding, uint64
 * payload size) and the payload, host byte order; file descriptors ride on
 * the header as SCM_RIGHTS. A message this side cannot take (unknown
 * command, a RET, a payload of the wrong size, the wrong number of fds, a
 * stream cut in the middle of a message or stalled there) is a protocol
 * error: the transport reports it naming the message and the cause and the
 * connection ends. An access the function refuses (outside BAR0, a bad
 * config length) is answered (all ones) and reported on stderr.
 */
#include "vp.h"

#include "npukit/error.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define STALL_MS 5000 /* the rest of a begun message must arrive within this */
#define MAX_PAYLOAD NPK_MPQEMU_SYSMEM_SIZE
#define MAX_REPORTS 20 /* refused accesses reported one line each, then counted */

typedef struct mpq {
    npk_vp_transport t;
    FILE *log;
    uint64_t seq;      /* messages received */
    uint64_t reported; /* refused accesses reported */
    const char *dev;
} mpq;

static const char *cmd_name(int32_t c) {
    static const char *const n[] = {"SYNC_SYSMEM", "RET", "PCI_CFGWRITE", "PCI_CFGREAD",
                                    "BAR_WRITE", "BAR_READ", "SET_IRQFD", "DEVICE_RESET"};
    return c >= 0 && c < NPK_MPQEMU_CMD_MAX ? n[c] : "?";
}

static uint64_t want_size(int32_t c) {
    switch (c) {
    case NPK_MPQEMU_SYNC_SYSMEM: return NPK_MPQEMU_SYSMEM_SIZE;
    case NPK_MPQEMU_PCI_CFGWRITE: case NPK_MPQEMU_PCI_CFGREAD: return NPK_MPQEMU_CFG_SIZE;
    case NPK_MPQEMU_BAR_WRITE: case NPK_MPQEMU_BAR_READ: return NPK_MPQEMU_BAR_SIZE;
    default: return 0;
    }
}

static void close_fds(int *fds, int n) {
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0) close(fds[i]);
}

/* Wait until fd is readable, at most STALL_MS; 0 or -NPK_EIO naming what is missing. */
static int wait_more(mpq *q, const char *name, const char *what, size_t got, size_t want) {
    struct pollfd pf = {q->t.fd, POLLIN, 0};
    int r;
    do r = poll(&pf, 1, STALL_MS);
    while (r < 0 && errno == EINTR);
    if (r > 0) return 0;
    return npk_err(NPK_EIO, "message #%" PRIu64 "%s%s%s: only %zu of %zu %s bytes arrived within %d ms (the peer "
                   "stalled in the middle of a message)", q->seq, name ? " (" : "", name ? name : "", name ? ")" : "", got,
                   want, what, STALL_MS);
}

/* Read the 16-byte header and its fds. 1: the peer closed before a message. */
static int read_header(mpq *q, uint8_t *hdr, int *fds, int *nfds) {
    size_t got = 0;
    *nfds = 0;
    while (got < NPK_MPQEMU_HDR) {
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(sizeof(int) * NPK_MPQEMU_MAX_FDS)];
        } cbuf;
        struct iovec iov = {hdr + got, NPK_MPQEMU_HDR - got};
        struct msghdr mh;
        memset(&mh, 0, sizeof mh);
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = cbuf.buf;
        mh.msg_controllen = sizeof cbuf.buf;
        ssize_t r = recvmsg(q->t.fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_more(q, NULL, "header", got, NPK_MPQEMU_HDR);
            if (rc) return rc;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return npk_err(NPK_EIO, "message #%" PRIu64 ": reading the header: %s", q->seq, strerror(errno));
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            int *in = (int *)(void *)CMSG_DATA(c);
            for (size_t i = 0; i < k; i++) {
                if (*nfds < NPK_MPQEMU_MAX_FDS) fds[(*nfds)++] = in[i];
                else close(in[i]);
            }
        }
        if (mh.msg_flags & MSG_CTRUNC) {
            close_fds(fds, *nfds);
            *nfds = 0;
            return npk_err(NPK_EIO, "message #%" PRIu64 ": more than %d file descriptors on the header",
                           q->seq, NPK_MPQEMU_MAX_FDS);
        }
        if (r == 0) {
            close_fds(fds, *nfds);
            *nfds = 0;
            if (!got) return 1;
            return npk_err(NPK_EIO, "message #%" PRIu64 ": the stream ended after %zu of %u header bytes", q->seq,
                           got, NPK_MPQEMU_HDR);
        }
        got += (size_t)r;
    }
    return 0;
}

static int read_payload(mpq *q, uint8_t *buf, size_t len, const char *name) {
    size_t got = 0;
    while (got < len) {
        ssize_t r = recv(q->t.fd, buf + got, len - got, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_more(q, name, "payload", got, len);
            if (rc) return rc;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return npk_err(NPK_EIO, "message #%" PRIu64 " (%s): reading the payload: %s", q->seq, name,
                                  strerror(errno));
        if (r == 0)
            return npk_err(NPK_EIO, "message #%" PRIu64 " (%s): the stream ended after %zu of %zu payload bytes",
                           q->seq, name, got, len);
        got += (size_t)r;
    }
    return 0;
}

static int send_ret(mpq *q, uint64_t val) {
    uint8_t m[NPK_MPQEMU_HDR + 8];
    memset(m, 0, sizeof m);
    int32_t cmd = NPK_MPQEMU_RET;
    uint64_t size = 8;
    memcpy(m, &cmd, 4);
    memcpy(m + 8, &size, 8);
    memcpy(m + 16, &val, 8);
    size_t put = 0;
    while (put < sizeof m) {
        ssize_t w = send(q->t.fd, m + put, sizeof m - put, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pf = {q->t.fd, POLLOUT, 0};
            if (poll(&pf, 1, STALL_MS) <= 0)
                return npk_err(NPK_EIO, "message #%" PRIu64 ": the peer takes no reply for %d ms", q->seq, STALL_MS);
            continue;
        }
        if (w <= 0) return npk_err(NPK_EIO, "message #%" PRIu64 ": sending the reply: %s", q->seq,
                                   w < 0 ? strerror(errno) : "nothing written");
        put += (size_t)w;
    }
    if (q->log) fprintf(q->log, "< RET 0x%" PRIx64 "\n", val);
    return 0;
}

/* A refused access: reported (the first MAX_REPORTS), the connection goes on. */
static void refused(mpq *q, const char *name) {
    if (q->reported++ < MAX_REPORTS)
        fprintf(stderr, "npu vp: %s: message #%" PRIu64 " (%s): %s%s\n", q->dev, q->seq, name, npk_errmsg(),
                q->reported == MAX_REPORTS ? " (further refused accesses are not reported)" : "");
    if (q->log) fprintf(q->log, "! %s\n", npk_errmsg());
}

static int mpq_handle(npk_vp_transport *t) {
    mpq *q = (mpq *)t;
    uint8_t hdr[NPK_MPQEMU_HDR], pl[MAX_PAYLOAD];
    int fds[NPK_MPQEMU_MAX_FDS], nfds = 0;
    q->seq++;
    int rc = read_header(q, hdr, fds, &nfds);
    if (rc) return rc;
    int32_t cmd;
    uint64_t size;
    memcpy(&cmd, hdr, 4);
    memcpy(&size, hdr + 8, 8);
    const char *name = cmd_name(cmd);
    if (cmd < 0 || cmd >= NPK_MPQEMU_CMD_MAX) {
        rc = npk_err(NPK_EINVAL, "message #%" PRIu64 ": unknown command %" PRId32 " (payload %" PRIu64
                     " bytes; commands are 0..%d)", q->seq, cmd, size, NPK_MPQEMU_CMD_MAX - 1);
        goto bad;
    }
    if (cmd == NPK_MPQEMU_RET) {
        rc = npk_err(NPK_EINVAL, "message #%" PRIu64 ": unexpected RET (the device side sends replies, it takes none)",
                     q->seq);
        goto bad;
    }
    uint64_t want = want_size(cmd);
    if (size != want) {
        rc = npk_err(NPK_EINVAL, "message #%" PRIu64 " (%s): payload of %" PRIu64 " bytes, expected %" PRIu64 "%s",
                     q->seq, name, size, want, size < want ? " (short payload)" : "");
        goto bad;
    }
    int want_fds = cmd == NPK_MPQEMU_SET_IRQFD ? 2 : 0;
    if (cmd == NPK_MPQEMU_SYNC_SYSMEM ? nfds < 1 : nfds != want_fds) {
        rc = npk_err(NPK_EINVAL, "message #%" PRIu64 " (%s): %d file descriptors, expected %s", q->seq, name, nfds,
                     cmd == NPK_MPQEMU_SYNC_SYSMEM ? "1..8 (one per guest RAM region)"
                     : want_fds           ? "2 (the INTx eventfd and its resample eventfd)"
                                          : "none");
        goto bad;
    }
    if ((rc = read_payload(q, pl, (size_t)size, name))) goto bad;

    switch (cmd) {
    case NPK_MPQEMU_SYNC_SYSMEM: {
        uint64_t gpa[8], sz[8];
        int64_t off[8];
        memcpy(gpa, pl, 64);
        memcpy(sz, pl + 64, 64);
        memcpy(off, pl + 128, 64);
        if (q->log) {
            fprintf(q->log, "> SYNC_SYSMEM");
            for (int i = 0; i < nfds; i++) fprintf(q->log, " 0x%" PRIx64 "+0x%" PRIx64 "@%" PRId64, gpa[i], sz[i], off[i]);
            fprintf(q->log, "\n");
        }
        rc = npk_vp_set_ram(t->fn, (size_t)nfds, gpa, sz, fds, off);
        close_fds(fds, nfds);
        if (rc) return npk_err_prefix(rc, "message #%" PRIu64 " (SYNC_SYSMEM)", q->seq);
        return 0; /* no reply */
    }
    case NPK_MPQEMU_PCI_CFGWRITE:
    case NPK_MPQEMU_PCI_CFGREAD: {
        uint32_t addr, val;
        int32_t len;
        memcpy(&addr, pl, 4);
        memcpy(&val, pl + 4, 4);
        memcpy(&len, pl + 8, 4);
        uint32_t r = 0;
        if (cmd == NPK_MPQEMU_PCI_CFGREAD) {
            if (q->log) fprintf(q->log, "> PCI_CFGREAD 0x%02" PRIx32 " len %" PRId32 "\n", addr, len);
            if (npk_vp_cfg_read(t->fn, addr, len, &r)) refused(q, name);
        } else {
            if (q->log) fprintf(q->log, "> PCI_CFGWRITE 0x%02" PRIx32 " 0x%" PRIx32 " len %" PRId32 "\n", addr, val, len);
            if (npk_vp_cfg_write(t->fn, addr, val, len)) refused(q, name);
        }
        return send_ret(q, r);
    }
    case NPK_MPQEMU_BAR_WRITE:
    case NPK_MPQEMU_BAR_READ: {
        uint64_t addr, val, r = 0;
        uint32_t bsize;
        memcpy(&addr, pl, 8);
        memcpy(&val, pl + 8, 8);
        memcpy(&bsize, pl + 16, 4);
        uint8_t memory = pl[20];
        if (q->log)
            fprintf(q->log, "> %s 0x%" PRIx64 " size %" PRIu32 "%s%s", name, addr, bsize, memory ? "" : " (I/O)",
                    cmd == NPK_MPQEMU_BAR_WRITE ? "" : "\n");
        if (q->log && cmd == NPK_MPQEMU_BAR_WRITE) fprintf(q->log, " 0x%" PRIx64 "\n", val);
        if (!memory) {
            npk_err(NPK_EINVAL, "I/O space access at 0x%" PRIx64 " (the function has no I/O BAR)", addr);
            refused(q, name);
            r = cmd == NPK_MPQEMU_BAR_READ ? UINT64_MAX : 0;
        } else if (cmd == NPK_MPQEMU_BAR_READ) {
            if (npk_vp_bar_read(t->fn, addr, bsize, &r)) refused(q, name);
        } else if (npk_vp_bar_write(t->fn, addr, val, bsize)) {
            refused(q, name);
        }
        return send_ret(q, r);
    }
    case NPK_MPQEMU_SET_IRQFD:
        if (q->log) fprintf(q->log, "> SET_IRQFD\n");
        npk_vp_set_intx(t->fn, fds[0], fds[1]);
        return 0; /* no reply */
    case NPK_MPQEMU_DEVICE_RESET:
        if (q->log) fprintf(q->log, "> DEVICE_RESET\n");
        npk_vp_reset(t->fn);
        return send_ret(q, 0);
    }
    rc = npk_err(NPK_EINVAL, "message #%" PRIu64 ": unhandled command %" PRId32, q->seq, cmd);
bad:
    close_fds(fds, nfds);
    if (q->log) fprintf(q->log, "! %s\n", npk_errmsg());
    return rc;
}

static void mpq_free(npk_vp_transport *t) {
    if (!t) return;
    if (t->fd >= 0) close(t->fd);
    free(t);
}

npk_vp_transport *npk_vp_mpqemu_new(npk_vp_fn *fn, int fd, const npk_vp_cfg *cfg) {
    mpq *q = calloc(1, sizeof *q);
    if (!q) {
        npk_err(NPK_ENOMEM, "out of memory");
        return NULL;
    }
    q->t.kind = "mpqemu";
    q->t.fn = fn;
    q->t.fd = fd;
    q->t.handle = mpq_handle;
    q->t.free = mpq_free;
    q->log = cfg ? cfg->log : NULL;
    q->dev = npk_sim_class(npk_vp_fn_sim(fn))->name;
    return &q->t;
}

int npk_vp_serve(npk_vp_transport **t, size_t n, const npk_vp_cfg *cfg) {
    if (!n) return 0;
    struct pollfd *pf = calloc(2 * n, sizeof *pf);
    unsigned char *open_ = calloc(n, 1);
    if (!pf || !open_) {
        free(pf);
        free(open_);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    memset(open_, 1, n);
    size_t alive = n;
    int rc = 0;
    uint64_t quiet_ms = cfg && cfg->quiet_ms ? cfg->quiet_ms : NPK_VP_QUIET_MS;
    while (alive && !rc) {
        if (cfg && cfg->stop && *cfg->stop) break;
        int busy = 0;
        for (size_t i = 0; i < n; i++) {
            pf[2 * i] = (struct pollfd){open_[i] ? t[i]->fd : -1, POLLIN, 0};
            pf[2 * i + 1] = (struct pollfd){open_[i] ? npk_vp_resample_fd(t[i]->fn) : -1, POLLIN, 0};
            if (open_[i] && npk_vp_autorun(t[i]->fn)) busy = 1;
        }
        /* A busy device runs on its own only once the guest has been quiet
         * for quiet_ms (a driver polling guest memory, not registers); while
         * the guest talks, it runs before each register read (npk_vp_bar_read).
         * So a driver's accesses meet the device in the same state whatever
         * the host's speed: the run is deterministic. */
        int r = poll(pf, (nfds_t)(2 * n), busy ? (int)quiet_ms : 200);
        if (r < 0 && errno != EINTR) {
            rc = npk_err(NPK_EIO, "vp: poll: %s", strerror(errno));
            break;
        }
        for (size_t i = 0; r > 0 && i < n && !rc; i++) {
            if (!open_[i]) continue;
            if (pf[2 * i + 1].revents & POLLIN) npk_vp_resampled(t[i]->fn);
            if (!(pf[2 * i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            int h = t[i]->handle(t[i]);
            if (h == 1) {
                open_[i] = 0;
                alive--;
            } else if (h < 0) {
                rc = npk_err_prefix(h, "vp: %s (%s)", npk_sim_class(npk_vp_fn_sim(t[i]->fn))->name, t[i]->kind);
            }
        }
        /* quiet: run the busy devices until a message arrives */
        while (!rc && busy && r == 0) {
            busy = 0;
            for (size_t i = 0; i < n; i++)
                if (open_[i] && npk_vp_autorun(t[i]->fn)) npk_vp_run(t[i]->fn, 2000), busy = 1;
            if (!busy) break;
            for (size_t i = 0; i < n; i++) pf[2 * i].revents = 0;
            r = poll(pf, (nfds_t)(2 * n), 0);
            if (r < 0 && errno == EINTR) r = 0;
            if (cfg && cfg->stop && *cfg->stop) break;
        }
    }
    free(pf);
    free(open_);
    return rc;
}
