// SPDX-License-Identifier: MIT
/*
 * Replays every qtest transcript in tests/qtest/ through `npu qtest` and
 * compares the output byte for byte.
 *
 * Transcript format (one file per scenario, *.qtest):
 *   #! args: ARGS     arguments of `npu qtest` (split on blanks), required
 *   # ...             comment
 *   > REQUEST         a request line sent to the server
 *   < REPLY           an expected output line (replies and "IRQ ..." lines)
 * The expected lines were derived by hand from the specification notes (see
 * the comments in each file), never captured from the model.
 */
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    buf b = {0};
    char tmp[65536];
    size_t r;
    while ((r = fread(tmp, 1, sizeof tmp, f)) > 0) put(&b, tmp, r);
    fclose(f);
    if (!b.p) put(&b, "", 0);
    *len = b.n;
    return b.p;
}

static int cmpstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Run `npu qtest ARGS` with stdin from in_path; returns its stdout. */
static char *run_server(const char *args, const char *in_path, size_t *out_len, int *status) {
    char out_path[] = "qtest-transcript-out-XXXXXX";
    int ofd = mkstemp(out_path);
    if (ofd < 0) return NULL;
    char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)NPU_BIN;
    argv[argc++] = "qtest";
    char *a = strdup(args);
    for (char *t = strtok(a, " \t"); t && argc < 31; t = strtok(NULL, " \t")) argv[argc++] = t;
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int ifd = open(in_path, O_RDONLY);
        if (ifd < 0) _exit(126);
        dup2(ifd, 0);
        dup2(ofd, 1);
        execv(NPU_BIN, argv);
        _exit(127);
    }
    free(a);
    close(ofd);
    waitpid(pid, status, 0);
    char *out = slurp(out_path, out_len);
    unlink(out_path);
    return out;
}

static void report_diff(const char *name, const char *exp, const char *got) {
    int line = 1;
    const char *e = exp, *g = got;
    while (*e && *g && *e == *g) {
        if (*e == '\n') line++;
        e++;
        g++;
    }
    while (e > exp && e[-1] != '\n') e--;
    while (g > got && g[-1] != '\n') g--;
    fprintf(stderr, "%s: output differs at output line %d\n  expected: %.*s\n  got:      %.*s\n", name, line,
            (int)strcspn(e, "\n"), e, (int)strcspn(g, "\n"), g);
}

static void replay(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len;
    char *text = slurp(path, &len);
    CHECK(text != NULL);
    if (!text) return;
    buf in = {0}, exp = {0};
    char *args = NULL;
    int requests = 0;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        if (n >= 9 && !strncmp(line, "#! args:", 8)) {
            free(args);
            args = strndup(line + 8, n - 8);
        } else if (n >= 2 && !strncmp(line, "> ", 2)) {
            put(&in, line + 2, n - 2);
            put(&in, "\n", 1);
            requests++;
        } else if (n >= 1 && line[0] == '<') {
            size_t skip = n >= 2 && line[1] == ' ' ? 2 : 1;
            put(&exp, line + skip, n - skip);
            put(&exp, "\n", 1);
        } else if (n && line[0] != '#') {
            fprintf(stderr, "%s: unrecognised transcript line: %.*s\n", name, (int)n, line);
            CHECK(0);
        }
        line = nl ? nl + 1 : NULL;
    }
    CHECK(args != NULL);
    CHECK(requests > 0);
    if (!in.p) put(&in, "", 0);
    if (!exp.p) put(&exp, "", 0);
    char in_path[] = "qtest-transcript-in-XXXXXX";
    int ifd = mkstemp(in_path);
    CHECK(ifd >= 0);
    if (ifd >= 0 && args) {
        CHECK_EQ(write(ifd, in.p, in.n), (long long)in.n);
        close(ifd);
        size_t olen = 0;
        int status = -1;
        char *out = run_server(args, in_path, &olen, &status);
        CHECK(out != NULL);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        if (out) {
            int same = olen == exp.n && !memcmp(out, exp.p, olen);
            CHECK(same);
            if (!same) report_diff(name, exp.p, out);
            else fprintf(stderr, "%s: %d requests, output identical\n", name, requests);
        }
        free(out);
    }
    if (ifd >= 0) {
        if (!args) close(ifd);
        unlink(in_path); /* never left behind, with or without a command line */
    }
    free(args);
    free(in.p);
    free(exp.p);
    free(text);
}

/* Run `npu qtest` with extra arguments and the given input; returns stdout. */
static char *run_text(const char *args, const char *input, size_t *olen, int *status) {
    char in_path[] = "qtest-cli-in-XXXXXX";
    int fd = mkstemp(in_path);
    if (fd < 0) return NULL;
    if (write(fd, input, strlen(input)) != (ssize_t)strlen(input)) {
        close(fd);
        return NULL;
    }
    close(fd);
    char *out = run_server(args, in_path, olen, status);
    unlink(in_path);
    return out;
}

/* --help documents every option; --log and --trace write their files. */
static void test_cli(void) {
    size_t n;
    int st = -1;
    char *help = run_text("--help", "", &n, &st);
    CHECK(help && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    static const char *const opts[] = {"--device", "--device-opt", "--socket", "--settle", "--idle-limit", "--mem-latency",
                                       "--mem-map", "--fault", "--trace", "--log", "clock_step", "b64write",
                                       "npu_regs", "npu_reset", "npu_info", "irq_intercept_in",
                                       "--irq-always", "--mem-limit", "-qtest", "-qmp", "inb"};
    for (size_t i = 0; help && i < sizeof opts / sizeof opts[0]; i++) CHECK(strstr(help, opts[i]) != NULL);
    free(help);
    /* an e1 ADD of zeros: 1 cycle, done raises the IRQ (e1-rtl-notes.md) */
    char *out = run_text("--device e1 --settle --irq-always --log qtest-cli.log --trace qtest-cli.json",
                         "writel 0x1002000c 1\n", &n, &st);
    CHECK(out && !strcmp(out, "IRQ raise 0\nOK\n"));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    free(out);
    size_t ln = 0;
    char *log = slurp("qtest-cli.log", &ln);
    CHECK(log && !strcmp(log, "> writel 0x1002000c 1\n< IRQ raise 0\n< OK\n"));
    free(log);
    char *trace = slurp("qtest-cli.json", &ln);
    CHECK(trace && trace[0] == '{' && strstr(trace, "\"cycles\":1") != NULL);
    free(trace);
    unlink("qtest-cli.log");
    unlink("qtest-cli.json");
    /* bad options: non-zero exit, one-line message, no output */
    out = run_text("--device e1 --fault nonsense", "readl 0\n", &n, &st);
    CHECK(out && n == 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    free(out);
    out = run_text("--device e1 --bogus", "", &n, &st);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    free(out);
}

int main(void) {
    test_cli();
    const char *dir = NPUKIT_SOURCE_DIR "/tests/qtest";
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d) return CHECK_DONE();
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t l = strlen(e->d_name);
        if (l > 6 && !strcmp(e->d_name + l - 6, ".qtest")) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmpstr);
    /* The worked examples must be among them. */
    int found = 0;
    for (int i = 0; i < n; i++)
        found += !strcmp(names[i], "e1_dot4.qtest") + !strcmp(names[i], "e1_gemm.qtest") +
                 !strcmp(names[i], "e1_ring.qtest");
    CHECK_EQ(found, 3);
    for (int i = 0; i < n; i++) {
        replay(dir, names[i]);
        free(names[i]);
    }
    return CHECK_DONE();
}
