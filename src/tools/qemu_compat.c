// SPDX-License-Identifier: MIT
/* `npu qtest` as a QEMU drop-in (see qemu_compat.h and docs/qtest.md). */
#include "qemu_compat.h"

#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* ---- command line ------------------------------------------------------------ */

/* QEMU options that change nothing for a single-NPU machine under qtest. */
static const char *const ignored_with_value[] = {"-display", "-accel", "-vga", "-name", "-trace", "-serial",
                                                 "-monitor", "-rtc", "-boot", "-audiodev", "-k", NULL};
static const char *const ignored_flags[] = {"-nodefaults", "-no-shutdown", "-nographic", "-S", "-no-reboot",
                                            "-no-user-config", NULL};

static int in_list(const char *const *l, const char *s) {
    for (; *l; l++)
        if (!strcmp(*l, s)) return 1;
    return 0;
}

/* Value of KEY= in a comma-separated option list, as a malloc'ed string. */
static char *opt_get(const char *list, const char *key) {
    size_t k = strlen(key);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > k && !strncmp(p, key, k) && p[k] == '=') return strndup(p + k + 1, n - k - 1);
        p = e ? e + 1 : NULL;
    }
    return NULL;
}

/* 1 if the comma list asks for a listening socket (server, server=on). */
static int is_server(const char *list) {
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if ((n == 6 && !strncmp(p, "server", 6)) || (n == 9 && !strncmp(p, "server=on", 9))) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

/* "unix:PATH[,opts]" or "unix:path=PATH[,opts]" -> malloc'ed PATH, or NULL. */
static char *unix_path(const char *opt, const char *v) {
    if (strncmp(v, "unix:", 5)) {
        cli_usage_error("qtest", "%s '%s': only unix:PATH sockets are supported", opt, v);
        return NULL;
    }
    v += 5;
    if (is_server(v)) {
        cli_usage_error("qtest", "%s '%s': npukit connects to the socket as QEMU does without 'server'; "
                                 "listening is not supported here (use --socket PATH)", opt, v - 5);
        return NULL;
    }
    char *p = opt_get(v, "path");
    if (p) return p;
    const char *e = strchr(v, ',');
    p = e ? strndup(v, (size_t)(e - v)) : strdup(v);
    if (p && !*p) {
        free(p);
        cli_usage_error("qtest", "%s: empty socket path", opt);
        return NULL;
    }
    return p;
}

int qemu_opt_parse(qemu_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    if (a[0] != '-' || a[1] == '-') return 0;
    int known = !strcmp(a, "-qtest") || !strcmp(a, "-qtest-log") || !strcmp(a, "-qmp") || !strcmp(a, "-chardev") ||
                !strcmp(a, "-mon") || !strcmp(a, "-machine") || !strcmp(a, "-M") || !strcmp(a, "-device") ||
                in_list(ignored_with_value, a);
    if (in_list(ignored_flags, a)) {
        o->active = 1;
        return 1;
    }
    if (!known) return 0;
    if (*i + 1 >= argc) {
        cli_usage_error("qtest", "%s needs a value", a);
        return -2;
    }
    const char *v = argv[++*i];
    o->active = 1;
    if (!strcmp(a, "-qtest")) {
        free(o->qtest_path);
        if (!(o->qtest_path = unix_path(a, v))) return -2;
    } else if (!strcmp(a, "-qtest-log")) {
        o->qtest_log = v;
    } else if (!strcmp(a, "-qmp")) {
        free(o->qmp_path);
        if (!(o->qmp_path = unix_path(a, v))) return -2;
    } else if (!strcmp(a, "-chardev")) {
        if (strncmp(v, "socket,", 7)) return 1; /* other backends are not used by a monitor here */
        if (o->nchardevs == QEMU_MAX_CHARDEV) {
            cli_usage_error("qtest", "more than %d -chardev options", QEMU_MAX_CHARDEV);
            return -2;
        }
        qemu_chardev *c = &o->chardevs[o->nchardevs];
        char *id = opt_get(v + 7, "id"), *fd = opt_get(v + 7, "fd");
        c->path = opt_get(v + 7, "path");
        c->fd = -1;
        int bad = !id || (!c->path && !fd);
        uint64_t n = 0;
        if (!bad && fd && (cli_parse_u64(fd, &n) || n > 65535)) bad = 1;
        free(fd);
        if (bad) {
            free(id);
            free(c->path);
            c->path = NULL;
            cli_usage_error("qtest", "-chardev '%s': expected socket,id=ID,path=PATH or socket,id=ID,fd=N", v);
            return -2;
        }
        c->fd = c->path ? -1 : (int)n;
        c->spec = v;
        free(id);
        o->nchardevs++;
    } else if (!strcmp(a, "-mon")) {
        char *mode = opt_get(v, "mode"), *chr = opt_get(v, "chardev");
        int ok = chr && (!mode || !strcmp(mode, "control"));
        free(mode);
        if (!ok) {
            free(chr);
            cli_usage_error("qtest", "-mon '%s': only chardev=ID,mode=control (QMP) is supported", v);
            return -2;
        }
        free(chr);
        o->mon_chardev = v;
    } else if (!strcmp(a, "-machine") || !strcmp(a, "-M")) {
        char *type = opt_get(v, "type");
        const char *e = strchr(v, ',');
        char *first = type ? type : (e ? strndup(v, (size_t)(e - v)) : strdup(v));
        if (!first) return -2;
        const char *name = !strncmp(first, "npu-", 4) ? first + 4 : first;
        const npk_dev_class *cls = npk_dev_class_find(name);
        if (cls) o->machine_dev = cls->name;
        free(first);
    } else if (!strcmp(a, "-device")) {
        cli_usage_error("qtest", "-device '%s': the npukit machine has exactly one NPU (choose it with --device D "
                                 "or -machine npu-D)", v);
        return -2;
    }
    return 1;
}

int qemu_opts_finish(qemu_opts *o) {
    o->qmp_fd = -1;
    if (!o->active) return 0;
    if (!o->qtest_path) return cli_usage_error("qtest", "QEMU options need -qtest unix:PATH");
    if (o->mon_chardev) {
        char *want = opt_get(o->mon_chardev, "chardev");
        int found = 0;
        for (int i = 0; i < o->nchardevs && want; i++) {
            char *id = opt_get(o->chardevs[i].spec + 7, "id");
            if (id && !strcmp(id, want)) {
                found = 1;
                if (is_server(o->chardevs[i].spec + 7)) {
                    free(id);
                    free(want);
                    return cli_usage_error("qtest", "-chardev '%s': the QMP monitor socket must be the test's "
                                                    "(npukit connects as a client; 'server' is not supported)",
                                           o->chardevs[i].spec);
                }
                if (o->chardevs[i].path) {
                    free(o->qmp_path);
                    o->qmp_path = strdup(o->chardevs[i].path);
                } else {
                    o->qmp_fd = o->chardevs[i].fd;
                }
            }
            free(id);
        }
        if (!found) {
            int rc = cli_usage_error("qtest", "-mon: no '-chardev socket,id=%s,...' given", want ? want : "");
            free(want);
            return rc;
        }
        free(want);
    }
    return 0;
}

void qemu_opts_free(qemu_opts *o) {
    free(o->qtest_path);
    free(o->qmp_path);
    for (int i = 0; i < o->nchardevs; i++) free(o->chardevs[i].path);
    memset(o, 0, sizeof *o);
}

/* ---- sockets ------------------------------------------------------------------ */

static int connect_unix(const char *path) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int r;
    do {
        r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Send everything; 0, or -1 when the peer is gone. */
static int send_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == ENOTSOCK) w = write(fd, p, n);
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

typedef struct qt_out {
    int fd;
    int gone;
} qt_out;

static void qtest_out(void *ctx, const char *d, size_t n) {
    qt_out *o = ctx;
    if (!o->gone && send_all(o->fd, d, n)) o->gone = 1;
}

/* ---- QMP ---------------------------------------------------------------------- */

typedef struct qmp {
    int fd;
    char *buf;
    size_t len, cap;
    int negotiated;
    int quit;
    npk_sim *sim;
} qmp;

static void qmp_send(qmp *m, json_t *obj) {
    char *s = json_dumps(obj, JSON_PRESERVE_ORDER);
    json_decref(obj);
    if (!s) return;
    size_t n = strlen(s);
    if (m->fd >= 0 && (send_all(m->fd, s, n) || send_all(m->fd, "\r\n", 2))) {
        close(m->fd);
        m->fd = -1;
    }
    free(s);
}

static void qmp_event(qmp *m, const char *name, const char *reason) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    qmp_send(m, json_pack("{s:{s:I,s:I},s:s,s:{s:b,s:s}}", "timestamp", "seconds", (json_int_t)tv.tv_sec,
                          "microseconds", (json_int_t)tv.tv_usec, "event", name, "data", "guest", 0, "reason",
                          reason));
}

/* Reply: {"return": ret} or {"error": {"class", "desc"}}, with "id" echoed. */
static void qmp_reply(qmp *m, json_t *id, json_t *ret, const char *cls, const char *desc) {
    json_t *r = ret ? json_pack("{s:o}", "return", ret)
                    : json_pack("{s:{s:s,s:s}}", "error", "class", cls, "desc", desc);
    if (r && id) json_object_set(r, "id", id);
    if (r) qmp_send(m, r);
}

static void qmp_command(qmp *m, json_t *req) {
    json_t *id = json_is_object(req) ? json_object_get(req, "id") : NULL;
    if (!json_is_object(req)) {
        qmp_reply(m, NULL, NULL, "GenericError", "QMP input must be a JSON object");
        return;
    }
    json_t *ex = json_object_get(req, "execute");
    if (!ex) ex = json_object_get(req, "exec-oob");
    if (!ex) {
        qmp_reply(m, id, NULL, "GenericError", "QMP input lacks member 'execute'");
        return;
    }
    if (!json_is_string(ex)) {
        qmp_reply(m, id, NULL, "GenericError", "QMP input member 'execute' must be a string");
        return;
    }
    json_t *args = json_object_get(req, "arguments");
    if (args && !json_is_object(args)) {
        qmp_reply(m, id, NULL, "GenericError", "QMP input member 'arguments' must be an object");
        return;
    }
    const char *cmd = json_string_value(ex);
    char desc[256];
    if (!m->negotiated) {
        if (strcmp(cmd, "qmp_capabilities")) {
            qmp_reply(m, id, NULL, "CommandNotFound", "Expecting capabilities negotiation with 'qmp_capabilities'");
            return;
        }
        m->negotiated = 1;
        qmp_reply(m, id, json_object(), NULL, NULL);
        return;
    }
    if (!strcmp(cmd, "qmp_capabilities")) {
        qmp_reply(m, id, NULL, "CommandNotFound", "Capabilities negotiation is already complete, command ignored");
    } else if (!strcmp(cmd, "quit")) {
        qmp_reply(m, id, json_object(), NULL, NULL);
        qmp_event(m, "SHUTDOWN", "host-qmp-quit");
        m->quit = 1;
    } else if (!strcmp(cmd, "query-status")) {
        qmp_reply(m, id, json_pack("{s:s,s:b,s:b}", "status", "running", "singlestep", 0, "running", 1), NULL, NULL);
    } else if (!strcmp(cmd, "system_reset")) {
        npk_sim_reset(m->sim);
        qmp_reply(m, id, json_object(), NULL, NULL);
        qmp_event(m, "RESET", "host-qmp-system-reset");
    } else if (!strcmp(cmd, "query-version")) {
        qmp_reply(m, id,
                  json_pack("{s:{s:i,s:i,s:i},s:s}", "qemu", "micro", 0, "minor", 2, "major", 7, "package",
                            "npukit"),
                  NULL, NULL);
    } else {
        snprintf(desc, sizeof desc, "The command %.200s has not been found", cmd);
        qmp_reply(m, id, NULL, "CommandNotFound", desc);
    }
}

/* Execute every complete JSON value in the buffer. */
static void qmp_input(qmp *m) {
    size_t off = 0;
    while (off < m->len && !m->quit) {
        while (off < m->len && strchr(" \t\r\n", m->buf[off])) off++;
        if (off == m->len) break;
        json_error_t err;
        json_t *v = json_loadb(m->buf + off, m->len - off, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY, &err);
        if (!v) {
            if (json_error_code(&err) == json_error_premature_end_of_input) break; /* wait for more */
            char desc[300];
            snprintf(desc, sizeof desc, "JSON parse error, %.200s", err.text);
            qmp_reply(m, NULL, NULL, "GenericError", desc);
            /* resynchronise at the next line */
            char *nl = memchr(m->buf + off, '\n', m->len - off);
            off = nl ? (size_t)(nl - m->buf) + 1 : m->len;
            continue;
        }
        off += err.position;
        qmp_command(m, v);
        json_decref(v);
    }
    memmove(m->buf, m->buf + off, m->len - off);
    m->len -= off;
}

static int qmp_read(qmp *m) {
    if (m->len + 4096 > m->cap) {
        if (m->cap >= (1u << 20)) { /* one request larger than 1 MiB: refuse it */
            qmp_reply(m, NULL, NULL, "GenericError", "JSON parse error, request larger than 1 MiB");
            m->len = 0;
        } else {
            size_t nc = m->cap ? m->cap * 2 : 8192;
            char *nb = realloc(m->buf, nc);
            if (!nb) return -1;
            m->buf = nb;
            m->cap = nc;
        }
    }
    ssize_t n = read(m->fd, m->buf + m->len, m->cap - m->len);
    if (n < 0 && errno == EINTR) return 0;
    if (n <= 0) return -1;
    m->len += (size_t)n;
    qmp_input(m);
    return 0;
}

/* ---- the session ---------------------------------------------------------------- */

int qemu_serve(npk_sim *sim, const npk_qtest_cfg *cfg, const qemu_opts *o) {
    qt_out out = {-1, 0};
    qmp m = {.fd = -1, .sim = sim};
    int rc = 0;
    out.fd = connect_unix(o->qtest_path);
    if (out.fd < 0) return cli_fail("qtest: cannot connect to the qtest socket '%s': %s", o->qtest_path, strerror(errno));
    if (o->qmp_path) {
        m.fd = connect_unix(o->qmp_path);
        if (m.fd < 0) {
            rc = cli_fail("qtest: cannot connect to the QMP socket '%s': %s", o->qmp_path, strerror(errno));
            close(out.fd);
            return rc;
        }
    } else if (o->qmp_fd >= 0) {
        m.fd = o->qmp_fd;
    }
    npk_qtest *q = npk_qtest_new(sim, cfg, qtest_out, &out);
    if (!q) {
        rc = cli_fail("qtest: %s", npk_errmsg());
        goto done;
    }
    if (m.fd >= 0)
        qmp_send(&m, json_pack("{s:{s:{s:{s:i,s:i,s:i},s:s},s:[s]}}", "QMP", "version", "qemu", "micro", 0, "minor", 2,
                               "major", 7, "package", "npukit", "capabilities", "oob"));
    char buf[65536];
    while (!out.gone && !m.quit && !(cfg->stop && *cfg->stop)) {
        struct pollfd pf[2] = {{.fd = out.fd, .events = POLLIN}, {.fd = m.fd, .events = POLLIN}};
        int r = poll(pf, m.fd >= 0 ? 2 : 1, 200);
        if (r < 0 && errno != EINTR) {
            rc = cli_fail("qtest: poll: %s", strerror(errno));
            break;
        }
        if (r <= 0) continue;
        if (pf[0].revents) {
            ssize_t n = read(out.fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) { /* the test closed the qtest connection: the session is over */
                npk_qtest_eof(q);
                break;
            }
            npk_qtest_feed(q, buf, (size_t)n);
        }
        if (m.fd >= 0 && pf[1].revents && qmp_read(&m)) {
            close(m.fd);
            m.fd = -1;
        }
    }
    if (cfg->stop && *cfg->stop && m.fd >= 0) qmp_event(&m, "SHUTDOWN", "host-signal");
    npk_qtest_free(q);
done:
    if (m.fd >= 0) close(m.fd);
    free(m.buf);
    close(out.fd);
    return rc;
}
