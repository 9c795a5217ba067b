// SPDX-License-Identifier: MIT
/* npu bench: ONNX Runtime as a peer process answering one timed request at a
 * time (scripts/ort_bench.js through node, onnxruntime-node), so onnx-cpu can
 * interleave its runs with npukit's repetition by repetition. The process's
 * stdin and stdout are one end of a socket pair (a write to a dead peer fails
 * with EPIPE instead of raising SIGPIPE), its stderr a temporary file whose
 * last line goes into the error messages; every read is bounded by a deadline. */
#define _GNU_SOURCE
#include "bench_suite.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct bench_ort {
    pid_t pid;
    int fd;          /* our end of the socket pair */
    FILE *err;       /* the peer's stderr */
    double timeout;  /* seconds per request */
    char buf[4096];  /* bytes read and not yet consumed */
    size_t have;
};

/* The last non-empty line the peer wrote to stderr ("" when none), for messages. */
static const char *last_err_line(bench_ort *p) {
    static char line[512];
    char cur[512];
    line[0] = 0;
    if (!p->err) return line;
    fflush(p->err);
    rewind(p->err);
    while (fgets(cur, sizeof cur, p->err)) {
        cur[strcspn(cur, "\n")] = 0;
        if (cur[0]) snprintf(line, sizeof line, "%s", cur);
    }
    return line;
}

/* Why the peer stopped answering: its exit status (reaped within a second) and its stderr. */
static int peer_died(bench_ort *p, const char *req) {
    int st = 0;
    pid_t w = 0;
    for (int i = 0; i < 100 && (w = waitpid(p->pid, &st, WNOHANG)) == 0; i++) usleep(10000);
    char how[64] = "closed its output";
    if (w == p->pid) {
        if (WIFEXITED(st)) snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(st));
        else if (WIFSIGNALED(st)) snprintf(how, sizeof how, "was killed by signal %d", WTERMSIG(st));
        p->pid = 0;
    }
    const char *e = last_err_line(p);
    return npk_err(NPK_EIO, "ONNX Runtime's node process (scripts/ort_bench.js) %s before answering '%s'%s%s", how, req,
                   e[0] ? ": " : "", e);
}

/* One line from the peer within the deadline (without its newline) in line[0..cap). */
static int read_line(bench_ort *p, const char *req, char *line, size_t cap) {
    double end = bench_now() + p->timeout;
    for (;;) {
        char *nl = memchr(p->buf, '\n', p->have);
        if (nl) {
            size_t n = (size_t)(nl - p->buf);
            snprintf(line, cap, "%.*s", (int)(n < cap ? n : cap - 1), p->buf);
            memmove(p->buf, nl + 1, p->have - n - 1);
            p->have -= n + 1;
            return 0;
        }
        if (p->have == sizeof p->buf)
            return npk_err(NPK_EFORMAT, "ONNX Runtime's node process answered '%s' with a line over %zu bytes", req,
                           sizeof p->buf);
        double left = end - bench_now();
        if (left <= 0)
            return npk_err(NPK_ETIMEDOUT, "ONNX Runtime's node process did not answer '%s' within %g s", req,
                           p->timeout);
        struct pollfd pf = {.fd = p->fd, .events = POLLIN};
        int pr = poll(&pf, 1, (int)(left * 1e3) + 1);
        if (pr < 0 && errno == EINTR) continue;
        if (pr < 0) return npk_err(NPK_EIO, "poll on ONNX Runtime's node process: %s", strerror(errno));
        if (pr == 0) continue; /* the deadline check above ends it */
        ssize_t n = read(p->fd, p->buf + p->have, sizeof p->buf - p->have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return peer_died(p, req);
        p->have += (size_t)n;
    }
}

/* The peer's next line as a JSON object; garbage is an error naming it. */
static int read_reply(bench_ort *p, const char *req, json_t **out) {
    char line[4096];
    if (read_line(p, req, line, sizeof line)) return -1;
    json_error_t e;
    json_t *j = json_loads(line, 0, &e);
    if (!json_is_object(j)) {
        json_decref(j);
        return npk_err(NPK_EFORMAT, "ONNX Runtime's node process answered '%s' with '%.200s', not a JSON object", req,
                       line);
    }
    *out = j;
    return 0;
}

int bench_ort_open(const ctx *c, const char *model_dir, bench_ort **out, char *why, size_t whylen) {
    *out = NULL;
    const char *ort = getenv("NPUKIT_ORT_DIR"), *home = getenv("HOME");
    char ortdir[1024], pkg[1200], script[1200];
    if (ort && *ort) snprintf(ortdir, sizeof ortdir, "%s", ort);
    else snprintf(ortdir, sizeof ortdir, "%s/.cache/npukit/ortnode", home ? home : ".");
    snprintf(pkg, sizeof pkg, "%s/node_modules/onnxruntime-node/package.json", ortdir);
    if (access(pkg, R_OK)) {
        snprintf(why, whylen, "onnxruntime-node not installed in %.200s (scripts/deps.sh)", ortdir);
        return -1;
    }
    snprintf(script, sizeof script, "%s/scripts/ort_bench.js", c->srcdir);
    bench_ort *p = calloc(1, sizeof *p);
    int sv[2] = {-1, -1};
    const char *to = getenv("NPUKIT_ORT_TIMEOUT");
    if (!p || !(p->err = tmpfile()) || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
        snprintf(why, whylen, "cannot start node: %s", strerror(errno));
        if (p && p->err) fclose(p->err);
        free(p);
        return -1;
    }
    p->timeout = to && atof(to) > 0 ? atof(to) : 300;
    int errfd = fileno(p->err);
    fflush(stdout);
    fflush(stderr);
    p->pid = fork();
    if (p->pid == 0) {
        dup2(sv[1], 0);
        dup2(sv[1], 1);
        dup2(errfd, 2);
        execlp("node", "node", script, ortdir, model_dir, (char *)NULL);
        dprintf(1, "{\"error\":\"cannot run node: %s\"}\n", strerror(errno));
        _exit(127);
    }
    close(sv[1]);
    p->fd = sv[0];
    if (p->pid < 0) {
        snprintf(why, whylen, "cannot start node: %s", strerror(errno));
        p->pid = 0;
        bench_ort_close(p);
        return -1;
    }
    /* the greeting: {"ready":VERSION}, or {"error"} when node or onnxruntime-node cannot run
     * (an unavailable baseline, as before); anything else is the peer's failure */
    json_t *j = NULL;
    double per_request = p->timeout;
    if (p->timeout < 60) p->timeout = 60; /* node's start: not what a short timeout is for */
    int bad = read_reply(p, "(start)", &j);
    p->timeout = per_request;
    if (bad || !json_is_string(json_object_get(j, "ready"))) {
        const char *e = j ? json_string_value(json_object_get(j, "error")) : NULL;
        if (e) snprintf(why, whylen, "%.400s", e);
        else snprintf(why, whylen, "%.400s", j ? "node scripts/ort_bench.js did not greet with {\"ready\"}" : npk_errmsg());
        json_decref(j);
        bench_ort_close(p);
        return e ? -1 : -2;
    }
    json_decref(j);
    *out = p;
    return 0;
}

/* Send req and read its reply; an {"error"} reply is returned as a reply (the caller
 * decides), a dead, silent or garbling peer is an error (npk_errmsg names it). */
int bench_ort_ask(bench_ort *p, const char *req, json_t **reply) {
    *reply = NULL;
    char line[256];
    int n = snprintf(line, sizeof line, "%s\n", req);
    for (int off = 0; off < n;) {
        ssize_t w = send(p->fd, line + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EPIPE) return peer_died(p, req);
        if (w < 0) return npk_err(NPK_EIO, "writing '%s' to ONNX Runtime's node process: %s", req, strerror(errno));
        off += (int)w;
    }
    return read_reply(p, req, reply);
}

/* A number field of a reply, or an error naming the request and the reply. */
int bench_ort_number(json_t *reply, const char *req, const char *key, double *v) {
    json_t *x = json_object_get(reply, key);
    if (json_is_number(x) && json_number_value(x) >= 0) {
        *v = json_number_value(x);
        return 0;
    }
    char *s = json_dumps(reply, JSON_COMPACT);
    int rc = npk_err(NPK_EFORMAT, "ONNX Runtime's node process answered '%s' with %.200s (no number '%s')", req,
                     s ? s : "?", key);
    free(s);
    return rc;
}

void bench_ort_close(bench_ort *p) {
    if (!p) return;
    if (p->fd >= 0 && p->pid > 0) (void)send(p->fd, "quit\n", 5, MSG_NOSIGNAL);
    if (p->fd >= 0) close(p->fd);
    if (p->pid > 0) { /* it exits at quit or at the end of its stdin; bounded wait, then kill */
        int st;
        pid_t w = 0;
        for (int i = 0; i < 200 && (w = waitpid(p->pid, &st, WNOHANG)) == 0; i++) usleep(10000);
        if (w == 0) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &st, 0);
        }
    }
    if (p->err) fclose(p->err);
    free(p);
}

/* The CPU nanoseconds the threads of pid have run (all but tid skip), from
 * /proc/PID/task/TID/schedstat; -1 when it cannot be read. */
static long long threads_cpu_ns(pid_t pid, pid_t skip) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return -1;
    long long sum = 0;
    int read_any = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || atoi(e->d_name) == (int)skip) continue;
        char f[96];
        snprintf(f, sizeof f, "/proc/%d/task/%.20s/schedstat", (int)pid, e->d_name);
        FILE *fp = fopen(f, "r");
        long long ns = 0;
        if (fp && fscanf(fp, "%lld", &ns) == 1) sum += ns, read_any = 1;
        if (fp) fclose(fp);
    }
    closedir(d);
    return read_any ? sum : -1;
}

/* The figure moves at the scheduler's tick (4 ms at 250 Hz) for a thread that keeps its
 * CPU, so "quiet" is no change over QUIET_MS, checked every 2 ms, for at most CAP_MS. */
#define QUIET_MS 10
#define CAP_MS 150
void bench_ort_quiesce(const bench_ort *p) {
    pid_t pid = p ? p->pid : getpid(), skip = p ? 0 : (pid_t)syscall(SYS_gettid);
    long long last = threads_cpu_ns(pid, skip);
    if (last < 0) return;
    int still = 0;
    for (int waited = 0; waited < CAP_MS && still < QUIET_MS; waited += 2) {
        usleep(2000);
        long long now = threads_cpu_ns(pid, skip);
        if (now < 0) return;
        still = now == last ? still + 2 : 0;
        last = now;
    }
}
