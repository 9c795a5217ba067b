// SPDX-License-Identifier: MIT
/* Chrome trace-event JSON on the simulated clock. */
#include "npukit/trace.h"
#include "npukit/error.h"
#include "npukit/strbuf.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct tproc {
    char *name;
    uint64_t hz;
    char **tracks;
    size_t ntracks;
} tproc;

typedef struct tevent {
    int pid, tid; /* tid -1: counter */
    char *name;
    char *args;
    uint64_t start, dur;
    double value;
} tevent;

struct npk_trace {
    tproc *procs;
    size_t nprocs;
    tevent *ev;
    size_t nev, cap;
    uint64_t offset; /* added to every event's start (npk_trace_set_offset) */
};

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

npk_trace *npk_trace_new(void) { return calloc(1, sizeof(npk_trace)); }

void npk_trace_free(npk_trace *t) {
    if (!t) return;
    for (size_t i = 0; i < t->nprocs; i++) {
        for (size_t j = 0; j < t->procs[i].ntracks; j++) free(t->procs[i].tracks[j]);
        free(t->procs[i].tracks);
        free(t->procs[i].name);
    }
    for (size_t i = 0; i < t->nev; i++) {
        free(t->ev[i].name);
        free(t->ev[i].args);
    }
    free(t->procs);
    free(t->ev);
    free(t);
}

static int find_proc(npk_trace *t, const char *name, uint64_t hz) {
    for (size_t i = 0; i < t->nprocs; i++)
        if (!strcmp(t->procs[i].name, name)) {
            if (hz && !t->procs[i].hz) t->procs[i].hz = hz;
            return (int)i;
        }
    tproc *np = realloc(t->procs, (t->nprocs + 1) * sizeof *np);
    if (!np) return -1;
    t->procs = np;
    memset(&np[t->nprocs], 0, sizeof *np);
    np[t->nprocs].name = dupstr(name);
    np[t->nprocs].hz = hz;
    return (int)t->nprocs++;
}

static int find_track(tproc *p, const char *name) {
    for (size_t i = 0; i < p->ntracks; i++)
        if (!strcmp(p->tracks[i], name)) return (int)i;
    char **nt = realloc(p->tracks, (p->ntracks + 1) * sizeof *nt);
    if (!nt) return -1;
    p->tracks = nt;
    nt[p->ntracks] = dupstr(name);
    return (int)p->ntracks++;
}

int npk_trace_process(npk_trace *t, const char *name, uint64_t hz) { return find_proc(t, name, hz); }

static tevent *push(npk_trace *t) {
    if (t->nev == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 256;
        tevent *ne = realloc(t->ev, nc * sizeof *ne);
        if (!ne) return NULL;
        t->ev = ne;
        t->cap = nc;
    }
    tevent *e = &t->ev[t->nev++];
    memset(e, 0, sizeof *e);
    return e;
}

void npk_trace_complete(npk_trace *t, const char *process, const char *track, const char *name,
                        uint64_t start_cycle, uint64_t dur_cycles, const char *args_json) {
    if (!t) return;
    int pid = find_proc(t, process, 0);
    if (pid < 0) return;
    int tid = find_track(&t->procs[pid], track);
    tevent *e = tid < 0 ? NULL : push(t);
    if (!e) return;
    e->pid = pid;
    e->tid = tid;
    e->name = dupstr(name);
    e->args = args_json && *args_json ? dupstr(args_json) : NULL;
    e->start = start_cycle + t->offset;
    e->dur = dur_cycles;
}

void npk_trace_counter(npk_trace *t, const char *process, const char *name, uint64_t cycle, double value) {
    if (!t) return;
    int pid = find_proc(t, process, 0);
    tevent *e = pid < 0 ? NULL : push(t);
    if (!e) return;
    e->pid = pid;
    e->tid = -1;
    e->name = dupstr(name);
    e->start = cycle + t->offset;
    e->value = value;
}

void npk_trace_set_offset(npk_trace *t, uint64_t cycles) {
    if (t) t->offset = cycles;
}

uint64_t npk_trace_total_cycles(const npk_trace *t, const char *process, const char *track) {
    uint64_t sum = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const tevent *e = &t->ev[i];
        if (e->tid < 0 || strcmp(t->procs[e->pid].name, process)) continue;
        if (track && strcmp(t->procs[e->pid].tracks[e->tid], track)) continue;
        sum += e->dur;
    }
    return sum;
}

size_t npk_trace_count(const npk_trace *t) { return t->nev; }

static int on_track(const npk_trace *t, const tevent *e, const char *process, const char *track) {
    if (e->tid < 0 || strcmp(t->procs[e->pid].name, process)) return 0;
    return !track || !strcmp(t->procs[e->pid].tracks[e->tid], track);
}

size_t npk_trace_events(const npk_trace *t, const char *process, const char *track) {
    size_t n = 0;
    for (size_t i = 0; i < t->nev; i++) n += (size_t)on_track(t, &t->ev[i], process, track);
    return n;
}

/* The value of the top-level integer member "key" in an args body. */
static uint64_t arg_u64(const char *args, const char *key) {
    if (!args) return 0;
    size_t kl = strlen(key);
    for (const char *p = args; (p = strchr(p, '"')) != NULL;) {
        int is_key = (p == args || p[-1] == ',') && !strncmp(p + 1, key, kl) && p[1 + kl] == '"' && p[2 + kl] == ':';
        if (is_key) return strtoull(p + 3 + kl, NULL, 10);
        /* skip this string */
        for (p++; *p && *p != '"'; p++)
            if (*p == '\\' && p[1]) p++;
        if (*p) p++;
    }
    return 0;
}

uint64_t npk_trace_sum_arg(const npk_trace *t, const char *process, const char *track, const char *key) {
    uint64_t sum = 0;
    for (size_t i = 0; i < t->nev; i++)
        if (on_track(t, &t->ev[i], process, track)) sum += arg_u64(t->ev[i].args, key);
    return sum;
}

void npk_trace_each(const npk_trace *t, const char *process, npk_trace_event_fn fn, void *ctx) {
    for (size_t i = 0; i < t->nev; i++) {
        const tevent *e = &t->ev[i];
        if (e->tid < 0 || strcmp(t->procs[e->pid].name, process)) continue;
        fn(ctx, t->procs[e->pid].tracks[e->tid], e->name, e->start, e->dur, arg_u64(e->args, "macs"));
    }
}

int npk_trace_event_at(const npk_trace *t, const char *process, const char *track, size_t i, uint64_t *start,
                       uint64_t *dur) {
    for (size_t k = 0; k < t->nev; k++)
        if (on_track(t, &t->ev[k], process, track) && i-- == 0) {
            *start = t->ev[k].start;
            *dur = t->ev[k].dur;
            return 0;
        }
    return -1;
}

typedef struct { uint64_t lo, hi; } ival;

static int ival_cmp(const void *a, const void *b) {
    const ival *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The union of a track's event intervals, sorted and disjoint; *n its count. */
static ival *track_union(const npk_trace *t, const char *process, const char *track, size_t *n) {
    size_t cnt = npk_trace_events(t, process, track), m = 0;
    ival *v = malloc((cnt ? cnt : 1) * sizeof *v);
    *n = 0;
    if (!v) return NULL;
    for (size_t k = 0; k < t->nev; k++)
        if (on_track(t, &t->ev[k], process, track) && t->ev[k].dur)
            v[m++] = (ival){t->ev[k].start, t->ev[k].start + t->ev[k].dur};
    qsort(v, m, sizeof *v, ival_cmp);
    size_t o = 0;
    for (size_t k = 0; k < m; k++) {
        if (o && v[k].lo <= v[o - 1].hi) {
            if (v[k].hi > v[o - 1].hi) v[o - 1].hi = v[k].hi;
        } else {
            v[o++] = v[k];
        }
    }
    *n = o;
    return v;
}

uint64_t npk_trace_overlap_cycles(const npk_trace *t, const char *process, const char *track_a, const char *track_b) {
    size_t na = 0, nb = 0;
    ival *a = track_union(t, process, track_a, &na), *b = track_union(t, process, track_b, &nb);
    uint64_t sum = 0;
    for (size_t i = 0, j = 0; a && b && i < na && j < nb;) {
        uint64_t lo = a[i].lo > b[j].lo ? a[i].lo : b[j].lo, hi = a[i].hi < b[j].hi ? a[i].hi : b[j].hi;
        if (hi > lo) sum += hi - lo;
        if (a[i].hi < b[j].hi) i++;
        else j++;
    }
    free(a);
    free(b);
    return sum;
}

/* Microseconds with nanosecond-or-better resolution, printed exactly from integers. */
static void print_us(FILE *f, uint64_t cycles, uint64_t hz) {
    if (!hz) hz = 1000000000ull;
    /* ps = cycles * 1e12 / hz, exact in 128-bit arithmetic */
    unsigned __int128 ps = (unsigned __int128)cycles * 1000000000000ull / hz;
    uint64_t us = (uint64_t)(ps / 1000000u), frac = (uint64_t)(ps % 1000000u);
    fprintf(f, "%" PRIu64 ".%06" PRIu64, us, frac);
}

int npk_trace_write(const npk_trace *t, FILE *f) {
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    int first = 1;
    for (size_t i = 0; i < t->nprocs; i++) {
        fprintf(f, "%s{\"ph\":\"M\",\"pid\":%zu,\"name\":\"process_name\",\"args\":{\"name\":", first ? "" : ",\n", i + 1);
        npk_json_fputs(f, t->procs[i].name);
        fprintf(f, ",\"clock_hz\":%" PRIu64 "}}", t->procs[i].hz);
        fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%zu,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%zu}}", i + 1,
                i + 1);
        first = 0;
        for (size_t j = 0; j < t->procs[i].ntracks; j++) {
            fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%zu,\"tid\":%zu,\"name\":\"thread_name\",\"args\":{\"name\":", i + 1,
                    j + 1);
            npk_json_fputs(f, t->procs[i].tracks[j]);
            fprintf(f, "}},\n{\"ph\":\"M\",\"pid\":%zu,\"tid\":%zu,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%zu}}",
                    i + 1, j + 1, j + 1);
        }
    }
    for (size_t i = 0; i < t->nev; i++) {
        const tevent *e = &t->ev[i];
        uint64_t hz = t->procs[e->pid].hz;
        fprintf(f, "%s{\"pid\":%d,", first ? "" : ",\n", e->pid + 1);
        first = 0;
        if (e->tid < 0) {
            fprintf(f, "\"ph\":\"C\",\"name\":");
            npk_json_fputs(f, e->name);
            fprintf(f, ",\"ts\":");
            print_us(f, e->start, hz);
            fprintf(f, ",\"args\":{\"value\":%.17g}}", e->value);
        } else {
            fprintf(f, "\"tid\":%d,\"ph\":\"X\",\"name\":", e->tid + 1);
            npk_json_fputs(f, e->name);
            fprintf(f, ",\"ts\":");
            print_us(f, e->start, hz);
            fprintf(f, ",\"dur\":");
            print_us(f, e->dur, hz);
            fprintf(f, ",\"args\":{\"start_cycle\":%" PRIu64 ",\"cycles\":%" PRIu64 "%s%s}}", e->start, e->dur,
                    e->args ? "," : "", e->args ? e->args : "");
        }
    }
    fprintf(f, "\n]}\n");
    return ferror(f) ? npk_err(NPK_EIO, "writing the trace failed") : 0;
}

static int trace_writer(const void *t, FILE *f) { return npk_trace_write(t, f); }

int npk_trace_write_file(const npk_trace *t, const char *path) { return npk_write_file(path, "trace", trace_writer, t); }
