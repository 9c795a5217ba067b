// SPDX-License-Identifier: MIT
/* Shared helpers for the npu commands. */
#include "cli.h"
#include "npukit/threads.h"
#include "npukit/report.h"
#include "npukit/trace.h"
#include "npukit/sim.h"
#include "npukit/strbuf.h"

#include <inttypes.h>

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/wait.h>

int cli_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("npu: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "npu %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'npu %s --help')\n", cmd);
    va_end(ap);
    return 2;
}

int cli_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

int cli_start(const char *cmd, int argc, char **argv, void (*help)(void), const npk_opt *t, size_t n, void *args,
              size_t size) {
    if (cli_wants_help(argc, argv)) {
        help();
        return 0;
    }
    memset(args, 0, size);
    if (t && npk_opt_defaults(t, n, args)) return cli_fail("%s: %s", cmd, npk_errmsg());
    return -1;
}

int cli_parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-') return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *s, double *out) {
    if (!s || !*s) return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int cli_read_file(const char *path, uint8_t **data, size_t *len) {
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return npk_err(NPK_EIO, "cannot open '%s': %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return npk_err(NPK_ENOMEM, "out of memory reading '%s'", path);
    }
    for (;;) {
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                fclose(f);
                return npk_err(NPK_ENOMEM, "out of memory reading '%s'", path);
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return npk_err(NPK_EIO, "cannot read '%s' (is it a directory?)", path);
    }
    *data = buf;
    *len = n;
    return 0;
}

int cli_out_open(cli_out *o, const char *path) {
    memset(o, 0, sizeof *o);
    o->path = path;
    if (cli_check_output(path)) return -NPK_EIO;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) { /* a device or FIFO: no rename */
        o->f = fopen(path, "wb");
        if (!o->f) return npk_err(NPK_EIO, "cannot open '%s' for writing: %s", path, strerror(errno));
        return 0;
    }
    size_t n = strlen(path) + 16;
    o->tmp = malloc(n);
    if (!o->tmp) return npk_err(NPK_ENOMEM, "out of memory");
    snprintf(o->tmp, n, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        return npk_err(NPK_EIO, "cannot create a file beside '%s': %s", path, strerror(e));
    }
    mode_t um = umask(0);
    umask(um);
    fchmod(fd, 0666 & ~um); /* the mode fopen would give */
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        close(fd);
        unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    return 0;
}

/* The outputs of the running command (cli_outputs_begin): finished temporaries
 * waiting for cli_outputs_commit to rename them all into place. */
static struct pending_out {
    char *tmp, *path;
} *pending;
static size_t n_pending, cap_pending;
static int deferring, complete_anyway;

void cli_outputs_begin(void) { deferring = 1; }
void cli_outputs_complete(void) { complete_anyway = 1; }

static int defer_out(char *tmp, const char *path) {
    if (n_pending == cap_pending) {
        size_t nc = cap_pending ? 2 * cap_pending : 8;
        struct pending_out *np = realloc(pending, nc * sizeof *np);
        if (!np) return npk_err(NPK_ENOMEM, "out of memory");
        pending = np;
        cap_pending = nc;
    }
    char *p = strdup(path);
    if (!p) return npk_err(NPK_ENOMEM, "out of memory");
    pending[n_pending].tmp = tmp;
    pending[n_pending++].path = p;
    return 0;
}

int cli_outputs_commit(int ok) {
    int rc = 0;
    ok = ok || complete_anyway;
    for (size_t i = 0; i < n_pending; i++) {
        if (ok && !rc && rename(pending[i].tmp, pending[i].path))
            rc = npk_err(NPK_EIO, "cannot create '%s': %s", pending[i].path, strerror(errno));
        if (!ok || rc) unlink(pending[i].tmp);
        free(pending[i].tmp);
        free(pending[i].path);
    }
    free(pending);
    pending = NULL;
    n_pending = cap_pending = 0;
    deferring = complete_anyway = 0;
    return rc;
}

const char *cli_out_reserve(const char *path) {
    cli_out o;
    if (cli_out_open(&o, path)) return NULL;
    if (!o.tmp) { /* a device or FIFO: written in place */
        fclose(o.f);
        return path;
    }
    fclose(o.f);
    if (!deferring) { /* nobody would commit it: the caller writes the path itself */
        unlink(o.tmp);
        free(o.tmp);
        return path;
    }
    const char *tmp = o.tmp;
    if (defer_out(o.tmp, path)) {
        unlink(o.tmp);
        free(o.tmp);
        return NULL;
    }
    return tmp;
}

int cli_out_close(cli_out *o, int ok) {
    if (!o->f) return 0;
    int rc = 0;
    errno = 0;
    if (ok && (fflush(o->f) || ferror(o->f)))
        rc = npk_err(NPK_EIO, "writing '%s' failed: %s", o->path, strerror(errno ? errno : EIO));
    if (fclose(o->f) && ok && !rc) rc = npk_err(NPK_EIO, "writing '%s' failed: %s", o->path, strerror(errno));
    o->f = NULL;
    if (o->tmp && deferring && ok && !rc) { /* renamed with the command's other outputs */
        if (defer_out(o->tmp, o->path)) {
            rc = -NPK_ENOMEM;
            unlink(o->tmp);
            free(o->tmp);
        }
        o->tmp = NULL;
        return rc;
    }
    if (o->tmp) {
        if (ok && !rc && rename(o->tmp, o->path))
            rc = npk_err(NPK_EIO, "cannot create '%s': %s", o->path, strerror(errno));
        if (!ok || rc) unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
    return rc;
}

int cli_write_file(const char *path, const void *data, size_t len) {
    cli_out o;
    int rc = cli_out_open(&o, path);
    if (rc) return rc;
    size_t w = fwrite(data, 1, len, o.f);
    return cli_out_close(&o, w == len);
}

int cli_write_trace(const npk_trace *t, const char *path) {
    cli_out o;
    int rc = cli_out_open(&o, path);
    if (rc) return rc;
    rc = npk_trace_write(t, o.f);
    int rc2 = cli_out_close(&o, !rc);
    return rc ? npk_err(NPK_EIO, "writing trace file '%s' failed", path) : rc2;
}

int cli_write_report(const npk_report *r, const char *path) {
    cli_out o;
    int rc = cli_out_open(&o, path);
    if (rc) return rc;
    rc = npk_report_write_json(r, o.f);
    int rc2 = cli_out_close(&o, !rc);
    return rc ? npk_err(NPK_EIO, "writing report file '%s' failed", path) : rc2;
}

FILE *cli_report_open(const char *where, cli_out *o) {
    memset(o, 0, sizeof *o);
    if (!where || !strcmp(where, "-")) return stdout;
    return cli_out_open(o, where) ? NULL : o->f;
}

int cli_report_close(cli_out *o, FILE *f) {
    if (f == stdout) return 0; /* a write error there is the command's (cli_finish_stdout) */
    int e = errno, bad = ferror(f);
    int rc = cli_out_close(o, !bad);
    if (bad && !rc) rc = npk_err(NPK_EIO, "writing '%s' failed: %s", o->path, strerror(e ? e : EIO));
    return rc;
}

int cli_emit_report(const char *cmd, const char *where, const npk_report *r) {
    cli_out o;
    FILE *f = cli_report_open(where, &o);
    if (f) npk_report_print(r, f);
    if (!f || cli_report_close(&o, f)) return cli_fail("%s: --report: %s", cmd, npk_errmsg());
    return 0;
}

int cli_finish_stdout(int rc) {
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    if (bad && rc == 0) {
        fprintf(stderr, "npu: writing to standard output failed: %s\n", strerror(errno ? errno : EIO));
        return 1;
    }
    return rc;
}

void cli_stop_signals(void (*on_stop)(int)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int cli_check_output(const char *path) {
    if (!path || !*path) return npk_err(NPK_EIO, "empty output file name");
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return npk_err(NPK_EIO, "'%s' is a directory", path);
        if (!S_ISREG(st.st_mode)) /* a device or FIFO is written in place */
            return access(path, W_OK) ? npk_err(NPK_EIO, "cannot write '%s': %s", path, strerror(errno)) : 0;
    }
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir) return npk_err(NPK_ENOMEM, "out of memory");
    int rc = 0;
    if (stat(dir, &st) != 0)
        rc = npk_err(NPK_EIO, "cannot write '%s': directory '%s' does not exist", path, dir);
    else if (!S_ISDIR(st.st_mode))
        rc = npk_err(NPK_EIO, "cannot write '%s': '%s' is not a directory", path, dir);
    else if (access(dir, W_OK) != 0)
        rc = npk_err(NPK_EIO, "cannot write '%s': directory '%s' is not writable", path, dir);
    free(dir);
    return rc;
}

static int progress_shown;

void cli_progress(const char *what, uint64_t done, uint64_t total) {
    if (!isatty(STDERR_FILENO)) return;
    fprintf(stderr, "\r%s: %llu/%llu (%3.0f%%)", what, (unsigned long long)done, (unsigned long long)total,
            total ? 100.0 * (double)done / (double)total : 100.0);
    fflush(stderr);
    progress_shown = 1;
}

void cli_progress_cb(void *ctx, size_t done, size_t total) {
    cli_progress((const char *)ctx, (uint64_t)done, (uint64_t)total);
}

void cli_progress_end(void) {
    if (progress_shown) {
        fputs("\r\033[K", stderr);
        progress_shown = 0;
    }
}

/* ---- the command-line parser ------------------------------------------------------------- */

static int alias_match(const char *alias, const char *a, size_t len) {
    for (const char *p = alias; p && *p;) {
        const char *e = strchr(p, ' ');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == len && !strncmp(p, a, len)) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

/* The flags naming files a command writes. */
static int is_output_flag(const char *name) {
    static const char *const outs[] = {"--output", "--report", "--report-json", "--trace", "--plot", "--json",
                                       "--tokenizer-out", "--asm", "--save", "--log", "--output-dir"};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        if (!strcmp(name, outs[i])) return 1;
    return 0;
}

/* Two output flags naming one file (one would overwrite the other) are a usage error. */
static int check_distinct_outputs(const char *cmd, const npk_opt *t, size_t n, void *base) {
    for (size_t i = 0; i < n; i++) {
        if (t[i].type != NPK_OPT_STR || !is_output_flag(t[i].name)) continue;
        const char *a = *(const char **)((char *)base + t[i].off);
        if (!a || !strcmp(a, "-") || !strncmp(a, "/dev/", 5)) continue;
        for (size_t j = i + 1; j < n; j++) {
            if (t[j].type != NPK_OPT_STR || !is_output_flag(t[j].name)) continue;
            const char *b = *(const char **)((char *)base + t[j].off);
            if (!b) continue;
            struct stat sa, sb;
            int same = !strcmp(a, b) || (stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
                                         sa.st_ino == sb.st_ino && S_ISREG(sa.st_mode));
            if (same)
                return cli_usage_error(cmd, "%s and %s name the same file '%s' (one would overwrite the other)",
                                       t[i].name, t[j].name, b);
        }
    }
    return 0;
}

int cli_parse(const char *cmd, const npk_opt *t, size_t n, void *base, int argc, char **argv, const char **pos,
              int max_pos, int *npos) {
    unsigned char seen[128] = {0};
    int np = 0, dashdash = 0;
    if (npos) *npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!dashdash && !strcmp(a, "--")) {
            dashdash = 1;
            continue;
        }
        if (dashdash || a[0] != '-' || !a[1]) {
            if (np >= max_pos)
                return max_pos ? cli_usage_error(cmd, "unexpected argument '%s' (at most %d)", a, max_pos)
                               : cli_usage_error(cmd, "unexpected argument '%s'", a);
            pos[np++] = a;
            if (npos) *npos = np;
            continue;
        }
        const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const npk_opt *o = NULL;
        for (size_t k = 0; k < n && !o; k++)
            if ((strlen(t[k].name) == len && !strncmp(t[k].name, a, len)) || alias_match(t[k].alias, a, len)) o = &t[k];
        if (!o) return cli_usage_error(cmd, "unknown option '%.*s'", (int)len, a);
        size_t k = (size_t)(o - t);
        if (o->type == NPK_OPT_FLAG) {
            if (eq) return cli_usage_error(cmd, "%s takes no value", o->name);
            npk_opt_set(o, base, NULL, o->name);
            continue;
        }
        if (o->type == NPK_OPT_STR && o->min == 1 && !eq) { /* CLI_REPORT: --report alone = stdout */
            if (k < sizeof seen && seen[k]) return cli_usage_error(cmd, "%s given twice (it takes one value)", o->name);
            if (k < sizeof seen) seen[k] = 1;
            *(const char **)((char *)base + o->off) = "-";
            continue;
        }
        const char *v;
        if (eq) v = eq + 1;
        else if (i + 1 < argc) v = argv[++i];
        else return cli_usage_error(cmd, "%s needs a value (%s)", o->name, npk_opt_meta(o));
        if (o->type != NPK_OPT_LIST && k < sizeof seen) {
            if (seen[k]) return cli_usage_error(cmd, "%s given twice (it takes one value)", o->name);
            seen[k] = 1;
        }
        if (npk_opt_set(o, base, v, o->name)) return cli_usage_error(cmd, "%s", npk_errmsg());
        if (!strcmp(o->name, "--port") && npk_port_check_spec(v)) return cli_usage_error(cmd, "--port: %s", npk_errmsg());
    }
    return check_distinct_outputs(cmd, t, n, base);
}

int cli_take_list(const char *cmd, const char *flag, npk_strlist *l, const char **dst, size_t max, size_t *n) {
    int rc = l->n > max ? cli_usage_error(cmd, "too many %s values (at most %zu)", flag, max) : 0;
    *n = rc ? 0 : l->n;
    for (size_t i = 0; i < *n; i++) dst[i] = l->v[i];
    npk_strlist_free(l);
    return rc;
}

void cli_help_opts(const npk_opt *t, size_t n) {
    npk_opt all[128];
    if (n >= sizeof all / sizeof all[0]) n = sizeof all / sizeof all[0] - 1;
    if (n) memcpy(all, t, n * sizeof *t);
    all[n] = (npk_opt){"--help", "-h", NPK_OPT_FLAG, 0, NULL, 0, 0, 0, 0, 0, NULL, "this help", 0};
    npk_opt_help(all, n + 1, stdout, 2);
}

int cli_device(const char *cmd, const char *device, int allow_cpu, const npk_strlist *dev_opts, char **joined) {
    *joined = NULL;
    const npk_dev_class *c = npk_dev_class_find(device);
    if (!c && !(allow_cpu && device && !strcmp(device, "cpu")))
        return cli_usage_error(cmd, "unknown device '%s' (known: %s%s)", device ? device : "", allow_cpu ? "cpu, " : "",
                               npk_dev_names());
    if (!dev_opts || !dev_opts->n) return 0;
    if (!c) return cli_usage_error(cmd, "--device-opt: the cpu device takes no options");
    size_t len = 1;
    for (size_t i = 0; i < dev_opts->n; i++) len += strlen(dev_opts->v[i]) + 1;
    char *s = malloc(len);
    if (!s) return cli_fail("%s: out of memory", cmd);
    s[0] = 0;
    for (size_t i = 0; i < dev_opts->n; i++) {
        if (i) strcat(s, ",");
        strcat(s, dev_opts->v[i]);
    }
    if (npk_dev_check_opts(c, s)) {
        free(s);
        return cli_usage_error(cmd, "--device-opt: %s", npk_errmsg());
    }
    *joined = s;
    return 0;
}

int cli_gnuplot(const char *script, const char *what) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int dn = open("/dev/null", O_WRONLY);
        if (dn >= 0) dup2(dn, 1);
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return cli_fail("%s: gnuplot failed%s (Debian: apt-get install gnuplot-nox)", what,
                        WIFEXITED(st) && WEXITSTATUS(st) == 127 ? " to start" : "");
    return 0;
}

void cli_threads(uint32_t n) {
    if (n) npk_threads_set((int)n); /* in range: the table caps it at 256 */
}
/* The bar chart every --plot draws (run's per-layer picture and cli_plot_report): one bar of
 * device cycles per row (left axis, log scale when the bars span 100x or more) and, only when
 * some row has one, its array utilization as a point on the right axis (0..100 %); the legend
 * sits above the plot, where it covers no bar. rows: "index \"name\" cycles util|-" lines. */
int cli_plot_bars(const char *rows, int nrows, int has_util, double min_cyc, double max_cyc, const char *title,
                  const char *xtitle, const char *file) {
    if (!nrows) return cli_fail("--plot: nothing ran on the device: no picture");
    char dir[] = "/tmp/npu-plot-XXXXXX";
    if (!mkdtemp(dir)) return cli_fail("--plot: cannot create a temporary directory: %s", strerror(errno));
    char dat[64], gp[64];
    snprintf(dat, sizeof dat, "%s/rows.dat", dir);
    snprintf(gp, sizeof gp, "%s/plot.gp", dir);
    const char *target = cli_out_reserve(file); /* renamed into place when the command succeeded */
    FILE *fd = target ? fopen(dat, "w") : NULL, *fg = target ? fopen(gp, "w") : NULL;
    int rc = 0;
    if (!target) rc = cli_fail("--plot: %s", npk_errmsg());
    else if (!fd || !fg) rc = cli_fail("--plot: cannot write the gnuplot files in %s", dir);
    if (!rc) {
        fputs(rows, fd);
        const char *ext = strrchr(file, '.');
        int svg = ext && !strcmp(ext, ".svg");
        fprintf(fg, "set terminal %s size %d,650 font ',10'\n", svg ? "svg" : "pngcairo", nrows > 60 ? 1600 : 1100);
        fprintf(fg, "set output '%s'\n", target);
        fprintf(fg, "set title \"%s\" noenhanced\n", title);
        fprintf(fg, "set xlabel \"%s\" noenhanced\n", xtitle);
        /* no mirrored tics: bottom and left borders (and the right one for the utilization axis) */
        fprintf(fg, "set ylabel 'device cycles per row (bars)'\nset ytics nomirror\nset format y '%%.0f'\nset border %d\n",
                has_util ? 11 : 3);
        if (min_cyc > 0 && max_cyc / min_cyc >= 100) fprintf(fg, "set logscale y 10\nset yrange [%g:%g]\n", min_cyc / 2, max_cyc * 2);
        else fprintf(fg, "set yrange [0:%g]\n", max_cyc * 1.1 + 1);
        fprintf(fg, "set grid ytics\nset style fill solid 0.6 noborder\nset boxwidth 0.8\n"
                    "set xtics nomirror rotate by 60 right font ',%d' noenhanced\nset datafile missing '-'\n"
                    "set key below center horizontal height 1\nset xrange [-1:%d]\n",
                nrows > 60 ? 7 : 9, nrows);
        if (has_util)
            fprintf(fg, "set y2label 'array utilization (%%, points)'\nset y2range [0:105]\nset y2tics\n"
                        "plot '%s' using 1:3:xtic(2) axes x1y1 with boxes lc rgb '#4c72b0' title 'device cycles', \\\n"
                        "     '%s' using 1:4 axes x1y2 with points pt 7 ps 0.9 lc rgb '#d62728' "
                        "title 'array utilization (rows with MACs)'\n",
                    dat, dat);
        else
            fprintf(fg, "plot '%s' using 1:3:xtic(2) with boxes lc rgb '#4c72b0' title 'device cycles'\n", dat);
    }
    int bad = fd && fclose(fd);
    if (fg && fclose(fg)) bad = 1; /* both closed either way */
    if (!rc && bad) rc = cli_fail("--plot: cannot write the gnuplot files in %s", dir);
    if (!rc) rc = cli_gnuplot(gp, "--plot");
    unlink(dat);
    unlink(gp);
    rmdir(dir);
    return rc;
}

int cli_plot_report(const npk_report *r, const char *what, const char *file) {
    npk_strbuf rows = {0};
    int n = 0, util = 0;
    double lo = 0, hi = 0, tot = 0;
    uint64_t peak = npk_report_peak(r);
    for (size_t i = 0; i < npk_report_n_ops(r); i++) {
        const char *name;
        int on_npu;
        uint64_t count, cyc, macs;
        if (npk_report_op_get(r, i, &name, &on_npu, &count, &cyc, &macs) || !on_npu || !cyc) continue;
        if (macs && peak) {
            npk_strbuf_printf(&rows, "%d \"%s\" %" PRIu64 " %.3f\n", n, name, cyc,
                              100.0 * (double)macs / ((double)cyc * (double)peak));
            util = 1;
        } else {
            npk_strbuf_printf(&rows, "%d \"%s\" %" PRIu64 " -\n", n, name, cyc);
        }
        if (!n || (double)cyc < lo) lo = (double)cyc;
        if ((double)cyc > hi) hi = (double)cyc;
        tot += (double)cyc;
        n++;
    }
    if (rows.oom) {
        free(rows.p);
        return cli_fail("--plot: out of memory");
    }
    char title[256];
    uint64_t hz = npk_report_hz(r);
    (void)tot; /* operators may overlap: the title gives the run's own total */
    snprintf(title, sizeof title, "%s on %s%s%.1f MHz: %d device operator%s, %" PRIu64 " device cycles in all", what,
             npk_report_device(r), hz ? " @ " : "", hz ? (double)hz / 1e6 : 0.0, n, n == 1 ? "" : "s",
             npk_report_cycles(r));
    int rc = cli_plot_bars(rows.p ? rows.p : "", n, util, lo, hi, title, "device operator (as in --report)", file);
    free(rows.p);
    return rc;
}

/* ---- the report of a device-server session (npu qtest): from the device's trace ---- */

typedef struct qt_rep {
    npk_report *r;
    int queue_track; /* the device has a "queue" / "descriptor" track: one event per command */
    npk_energy e0;   /* the device's energy when the session started */
} qt_rep;

static int is_cmd_track(const char *t) { return !strcmp(t, "queue") || !strcmp(t, "descriptor"); }

static void find_queue(void *ctx, const char *track, const char *name, uint64_t start, uint64_t dur, uint64_t macs) {
    (void)name, (void)start, (void)dur, (void)macs;
    if (is_cmd_track(track)) ((qt_rep *)ctx)->queue_track = 1;
}

/* A command: an event of the device's queue track, or (devices whose every command
 * runs on one engine: shell, pccx) of an engine track, not fetch or guest errors. */
static void add_cmd(void *ctx, const char *track, const char *name, uint64_t start, uint64_t dur, uint64_t macs) {
    qt_rep *q = ctx;
    (void)start;
    if (q->queue_track ? !is_cmd_track(track)
                       : strstr(track, "fetch") || !strcmp(track, "guest errors") || !strcmp(track, "host"))
        return;
    npk_report_op(q->r, name, 1, dur, macs);
}

/* The dynamic energy of d (0 and has = 0 without an energy model). */
void cli_dev_energy(npk_dev *d, npk_energy *e, npk_area *a, uint32_t *nm, int *has) {
    memset(e, 0, sizeof *e);
    memset(a, 0, sizeof *a);
    *nm = 0;
    *has = d->ops->energy != NULL;
    if (*has) d->ops->energy(d, e, a, nm);
}

int cli_session_report(const char *cmd, const char *report, const char *json, const char *plot, npk_sim *sim,
                       const npk_trace *tr, const npk_energy *e0) {
    const char *device = npk_sim_dev(sim)->cls->name;
    char title[64];
    snprintf(title, sizeof title, "npu %s", cmd);
    qt_rep q = {0};
    q.r = npk_report_new(device, npk_sim_hz(sim), 0);
    if (!q.r) return cli_fail("%s: out of memory", cmd);
    npk_report_name(q.r, "device session");
    npk_trace_each(tr, device, find_queue, &q);
    npk_trace_each(tr, device, add_cmd, &q);
    uint64_t cycles = npk_sim_cycles(sim);
    npk_report_total_cycles(q.r, cycles);
    npk_energy e;
    npk_area a;
    uint32_t nm;
    int has;
    cli_dev_energy(npk_sim_dev(sim), &e, &a, &nm, &has);
    if (has) {
        /* the session's share: the counters since the server started, and leakage */
        e.compute_pj -= e0->compute_pj, e.reg_pj -= e0->reg_pj, e.sram_pj -= e0->sram_pj, e.acc_pj -= e0->acc_pj;
        e.dram_pj -= e0->dram_pj, e.dma_pj -= e0->dma_pj, e.mmio_pj -= e0->mmio_pj;
        e.leak_pj = npk_leak_pj(npk_area_total_mm2(&a), cycles, npk_sim_hz(sim), nm);
        npk_report_energy(q.r, &e, &a, nm);
    }
    int rc = 0;
    if (report && cli_emit_report(cmd, report, q.r)) rc = 1;
    if (json && cli_write_report(q.r, json)) rc = cli_fail("%s: --report-json: %s", cmd, npk_errmsg());
    if (!rc && plot && cli_plot_report(q.r, title, plot)) rc = 1;
    npk_report_free(q.r);
    return rc;
}
