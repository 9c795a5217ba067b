// SPDX-License-Identifier: MIT
/* npu sweep: design-space exploration. A YAML spec names devices, parameter
 * grids and workloads; every (device, parameter point, workload) is one
 * sweep point, run in its own child process (crash isolation; -j N at a
 * time), or spread over MPI ranks with a dynamic work queue when started by
 * mpirun. One CSV/JSON row per point, in spec order; optional gnuplot picture
 * of two metrics with the Pareto front. docs/sweep.md is the manual. */
#include "cli.h"
#include "npukit/graph.h"
#include "npukit/llm.h"
#include "npukit/npu.h"
#include "npukit/sim.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#ifdef NPUKIT_HAVE_MPI
#include <mpi.h>
#endif

#define SW_MAX_SPEC_BYTES (1u << 20) /* libyaml is quadratic on nested flow sequences: cap the input */
#define SW_MAX_POINTS 1000000

/* ---- the spec --------------------------------------------------------------- */

enum { W_ONNX, W_LAYER, W_LLM };

typedef struct {
    char *name;
    char **vals;
    int n;
} sw_param;

typedef struct {
    char *device;
    sw_param *params;
    int np;
    long combos;
} sw_study;

typedef struct {
    char *name;
    int kind;
    char *path;      /* onnx model / llm checkpoint */
    char *layer;     /* layer spec */
    char *tokenizer; /* llm */
    char *shape;     /* llm: synthetic checkpoint of this shape (timing workloads) */
    char **in_names, **in_paths;
    int nin;
    int steps;
    uint64_t seed;
} sw_work;

typedef struct {
    char *name;
    sw_study *st;
    int ns;
    sw_work *w;
    int nw;
    char **pcols; /* union of parameter names, first-seen order */
    int npcols;
    char **metrics; /* selected metric columns (NULL: all) */
    int nmetrics;
    long points;
    int timing_only; /* timing_only: true: every point runs timing-only (npk_run_opts.timing_only) */
} sw_spec;

static const char *const all_metrics[] = {"cycles",      "time_s",       "device_macs",   "cpu_macs",
                                          "utilization", "guest_bytes",  "staged_bytes",  "tokens_per_s",
                                          "nodes_on_device", "energy_uj", "edp_uj_ms", "area_mm2", "output_digest"};
#define N_ALL_METRICS ((int)(sizeof all_metrics / sizeof all_metrics[0]))

static char *xstrdup(const char *s) {
    char *d = strdup(s ? s : "");
    if (!d) {
        fprintf(stderr, "npu: out of memory\n");
        exit(1);
    }
    return d;
}

static void *xcalloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz);
    if (!p) {
        fprintf(stderr, "npu: out of memory\n");
        exit(1);
    }
    return p;
}

static void spec_free(sw_spec *s) {
    for (int i = 0; i < s->ns; i++) {
        for (int j = 0; j < s->st[i].np; j++) {
            for (int k = 0; k < s->st[i].params[j].n; k++) free(s->st[i].params[j].vals[k]);
            free(s->st[i].params[j].vals);
            free(s->st[i].params[j].name);
        }
        free(s->st[i].params);
        free(s->st[i].device);
    }
    free(s->st);
    for (int i = 0; i < s->nw; i++) {
        sw_work *w = &s->w[i];
        free(w->name);
        free(w->path);
        free(w->layer);
        free(w->tokenizer);
        free(w->shape);
        for (int k = 0; k < w->nin; k++) {
            free(w->in_names[k]);
            free(w->in_paths[k]);
        }
        free(w->in_names);
        free(w->in_paths);
    }
    free(s->w);
    for (int i = 0; i < s->npcols; i++) free(s->pcols[i]);
    free(s->pcols);
    for (int i = 0; i < s->nmetrics; i++) free(s->metrics[i]);
    free(s->metrics);
    free(s->name);
    memset(s, 0, sizeof *s);
}

/* Errors while reading the spec: "SPEC: line L: message". */
static char spec_err[512];
static int spec_err_names_file; /* the message already names the spec file (it could not be read) */
static int serr(const yaml_node_t *n, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n)
        snprintf(spec_err, sizeof spec_err, "line %lu: %s", (unsigned long)n->start_mark.line + 1, msg);
    else
        snprintf(spec_err, sizeof spec_err, "%s", msg);
    return -1;
}

static const char *scalar(yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *m, const char *key) {
    if (!m || m->type != YAML_MAPPING_NODE) return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        const char *k = scalar(yaml_document_get_node(d, p->key));
        if (k && !strcmp(k, key)) return yaml_document_get_node(d, p->value);
    }
    return NULL;
}

/* Every key of mapping m must be one of the NULL-terminated list. */
static int check_keys(yaml_document_t *d, yaml_node_t *m, const char *what, const char *const *keys) {
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(d, p->key);
        const char *k = scalar(kn);
        int ok = 0;
        for (int i = 0; k && keys[i]; i++)
            if (!strcmp(k, keys[i])) ok = 1;
        if (!ok) return serr(kn, "%s: unknown key '%s'", what, k ? k : "?");
    }
    return 0;
}

/* Paths are relative to the spec file's directory; $VAR and ${VAR} expand
 * from the environment (an unset variable is an error). */
static int expand_path(const char *dir, yaml_node_t *n, char **out) {
    const char *s = scalar(n);
    if (!s || !*s) return serr(n, "expected a path");
    char buf[4096];
    size_t o = 0;
    for (const char *p = s; *p;) {
        if (*p == '$') {
            const char *b = p + 1, *e;
            int brace = *b == '{';
            if (brace) b++;
            for (e = b; *e && (e[0] == '_' || (e[0] >= 'A' && e[0] <= 'Z') || (e[0] >= 'a' && e[0] <= 'z') ||
                               (e[0] >= '0' && e[0] <= '9'));
                 e++)
                ;
            if (e == b || (brace && *e != '}')) return serr(n, "bad variable reference in '%s'", s);
            char var[128];
            if ((size_t)(e - b) >= sizeof var) return serr(n, "variable name too long in '%s'", s);
            memcpy(var, b, (size_t)(e - b));
            var[e - b] = 0;
            const char *v = getenv(var);
#ifdef NPUKIT_SHARED_DIR
            if (!v && !strcmp(var, "NPUKIT_SHARED_DIR")) v = NPUKIT_SHARED_DIR; /* the build's shared/ */
#endif
            if (!v) return serr(n, "'%s' uses $%s, which is not set", s, var);
            size_t vl = strlen(v);
            if (o + vl >= sizeof buf) return serr(n, "path too long");
            memcpy(buf + o, v, vl);
            o += vl;
            p = brace ? e + 1 : e;
        } else {
            if (o + 1 >= sizeof buf) return serr(n, "path too long");
            buf[o++] = *p++;
        }
    }
    buf[o] = 0;
    if (buf[0] == '/' || !dir || !*dir) {
        *out = xstrdup(buf);
    } else {
        size_t len = strlen(dir) + 1 + o + 1;
        *out = xcalloc(len, 1);
        snprintf(*out, len, "%s/%s", dir, buf);
    }
    return 0;
}

static int add_pcol(sw_spec *s, const char *name) {
    for (int i = 0; i < s->npcols; i++)
        if (!strcmp(s->pcols[i], name)) return 0;
    s->pcols = realloc(s->pcols, sizeof(char *) * (size_t)(s->npcols + 1));
    if (!s->pcols) return -1;
    s->pcols[s->npcols++] = xstrdup(name);
    return 0;
}

/* One study: a device and its parameter grid (where: node for messages). */
static int read_study(sw_spec *s, yaml_document_t *d, yaml_node_t *where, yaml_node_t *dv, yaml_node_t *pm) {
    const char *dev = scalar(dv);
    if (!dev) return serr(where, "a sweep needs 'device: NAME'");
    if (strcmp(dev, "cpu") && !npk_dev_class_find(dev))
        return serr(dv, "unknown device '%s' (npu devices lists them)", dev);
    s->st = realloc(s->st, sizeof(sw_study) * (size_t)(s->ns + 1));
    if (!s->st) return serr(where, "out of memory");
    sw_study *st = &s->st[s->ns++];
    memset(st, 0, sizeof *st);
    st->device = xstrdup(dev);
    st->combos = 1;
    if (!pm) return 0;
    if (pm->type != YAML_MAPPING_NODE) return serr(pm, "params: a mapping of name: value or [values]");
    for (yaml_node_pair_t *p = pm->data.mapping.pairs.start; p < pm->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(d, p->key), *vn = yaml_document_get_node(d, p->value);
        const char *k = scalar(kn);
        if (!k || !*k || strpbrk(k, ",= ") || k[0] == '+' || k[strlen(k) - 1] == '+' || strstr(k, "++"))
            return serr(kn, "params: bad parameter name '%s' (an option, or options joined by '+')", k ? k : "");
        st->params = realloc(st->params, sizeof(sw_param) * (size_t)(st->np + 1));
        sw_param *pa = &st->params[st->np++];
        memset(pa, 0, sizeof *pa);
        pa->name = xstrdup(k);
        if (vn->type == YAML_SCALAR_NODE) {
            pa->vals = xcalloc(1, sizeof(char *));
            pa->vals[pa->n++] = xstrdup(scalar(vn));
        } else if (vn->type == YAML_SEQUENCE_NODE) {
            long cnt = vn->data.sequence.items.top - vn->data.sequence.items.start;
            if (cnt == 0) return serr(vn, "params: '%s' has an empty list", k);
            pa->vals = xcalloc((size_t)cnt, sizeof(char *));
            for (yaml_node_item_t *it = vn->data.sequence.items.start; it < vn->data.sequence.items.top; it++) {
                const char *v = scalar(yaml_document_get_node(d, *it));
                if (!v || strpbrk(v, ", ")) return serr(vn, "params: '%s' values must be plain scalars", k);
                pa->vals[pa->n++] = xstrdup(v);
            }
        } else {
            return serr(vn, "params: '%s' must be a value or a list of values", k);
        }
        for (int j = 0; j + 1 < st->np; j++)
            if (!strcmp(st->params[j].name, k)) return serr(kn, "params: '%s' given twice", k);
        if (st->combos > SW_MAX_POINTS / pa->n) return serr(vn, "the grid has more than %d points", SW_MAX_POINTS);
        st->combos *= pa->n;
        if (add_pcol(s, k)) return serr(kn, "out of memory");
    }
    return 0;
}

static int read_layers_csv(sw_spec *s, sw_work *w, yaml_node_t *cn, const char *dir);

static int read_work(sw_spec *s, yaml_document_t *d, yaml_node_t *n, const char *dir) {
    static const char *const keys[] = {"name",      "onnx",  "inputs", "seed",  "layer", "layers_csv",
                                       "llm",       "tokenizer", "shape", "steps", NULL};
    if (!n || n->type != YAML_MAPPING_NODE) return serr(n, "a workload is a mapping (name plus onnx, layer or llm)");
    if (check_keys(d, n, "workload", keys)) return -1;
    s->w = realloc(s->w, sizeof(sw_work) * (size_t)(s->nw + 1));
    sw_work *w = &s->w[s->nw++];
    memset(w, 0, sizeof *w);
    w->seed = 1;
    const char *name = scalar(map_get(d, n, "name"));
    if (!name || !*name || strpbrk(name, ",\"\n")) return serr(n, "a workload needs 'name: NAME' (no commas or quotes)");
    w->name = xstrdup(name);
    for (int i = 0; i + 1 < s->nw; i++)
        if (!strcmp(s->w[i].name, name)) return serr(n, "workload name '%s' used twice", name);
    yaml_node_t *on = map_get(d, n, "onnx"), *ln = map_get(d, n, "layer"), *mn = map_get(d, n, "llm"),
                *cn = map_get(d, n, "layers_csv");
    if (!!on + !!ln + !!mn + !!cn != 1)
        return serr(n, "workload '%s': give exactly one of onnx, layer, layers_csv, llm", name);
    if (cn) return read_layers_csv(s, w, cn, dir);
    yaml_node_t *sn = map_get(d, n, "seed");
    if (sn) {
        uint64_t v;
        if (!scalar(sn) || cli_parse_u64(scalar(sn), &v)) return serr(sn, "seed: expected a number");
        w->seed = v;
    }
    if (on) {
        w->kind = W_ONNX;
        if (expand_path(dir, on, &w->path)) return -1;
        yaml_node_t *in = map_get(d, n, "inputs");
        if (in) {
            if (in->type != YAML_MAPPING_NODE) return serr(in, "inputs: a mapping of input name: file.pb");
            long cnt = in->data.mapping.pairs.top - in->data.mapping.pairs.start;
            w->in_names = xcalloc((size_t)cnt, sizeof(char *));
            w->in_paths = xcalloc((size_t)cnt, sizeof(char *));
            for (yaml_node_pair_t *p = in->data.mapping.pairs.start; p < in->data.mapping.pairs.top; p++) {
                const char *k = scalar(yaml_document_get_node(d, p->key));
                if (!k) return serr(in, "inputs: bad input name");
                w->in_names[w->nin] = xstrdup(k);
                if (expand_path(dir, yaml_document_get_node(d, p->value), &w->in_paths[w->nin])) {
                    free(w->in_names[w->nin]);
                    return -1;
                }
                w->nin++;
            }
        }
    } else if (ln) {
        w->kind = W_LAYER;
        if (!scalar(ln)) return serr(ln, "layer: expected conv:... or matmul:...");
        w->layer = xstrdup(scalar(ln));
    } else {
        w->kind = W_LLM;
        yaml_node_t *tn = map_get(d, n, "tokenizer"), *shn = map_get(d, n, "shape");
        const char *mv = scalar(mn);
        if (!mv) return serr(mn, "llm: expected a checkpoint path or 'synthetic'");
        if (!strcmp(mv, "synthetic")) {
            if (!scalar(shn)) return serr(n, "workload '%s': llm: synthetic needs 'shape:'", name);
            w->shape = xstrdup(scalar(shn));
            npk_llm_config c;
            if (npk_llm_shape_parse(w->shape, &c)) return serr(shn, "%s", npk_errmsg());
        } else {
            if (expand_path(dir, mn, &w->path)) return -1;
            if (!tn) return serr(n, "workload '%s': llm needs 'tokenizer:'", name);
            if (expand_path(dir, tn, &w->tokenizer)) return -1;
        }
        w->steps = 16;
        yaml_node_t *stn = map_get(d, n, "steps");
        if (stn) {
            uint64_t v;
            if (!scalar(stn) || cli_parse_u64(scalar(stn), &v) || v == 0 || v > 1000000)
                return serr(stn, "steps: expected a number in 1..1000000");
            w->steps = (int)v;
        }
    }
    return 0;
}

/* A layers_csv workload: one conv layer per row of a CSV with the columns
 * prob.N, prob.C, prob.K, prob.P, prob.Q, prob.R, prob.S, prob.Hstride (the
 * layout of shared/data/gemmini-resnet50-layers/measured.csv). The workload
 * w (already named) becomes row 1 as NAME/01, later rows are appended. */
static int read_layers_csv(sw_spec *s, sw_work *w, yaml_node_t *cn, const char *dir) {
    char *path = NULL;
    if (expand_path(dir, cn, &path)) return -1;
    uint8_t *data = NULL;
    size_t len = 0;
    if (cli_read_file(path, &data, &len)) {
        free(path);
        return serr(cn, "%s", npk_errmsg());
    }
    static const char *const want[8] = {"prob.N", "prob.C", "prob.K", "prob.P",
                                        "prob.Q", "prob.R", "prob.S", "prob.Hstride"};
    int col[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    char *text = xcalloc(len + 1, 1);
    memcpy(text, data, len);
    free(data);
    char *save = NULL, *line = strtok_r(text, "\r\n", &save);
    int rc = 0, row = 0;
    char *base = xstrdup(w->name);
    if (line) {
        int k = 0;
        for (char *f = line, *e; f; f = e ? e + 1 : NULL, k++) {
            e = strchr(f, ',');
            size_t fl = e ? (size_t)(e - f) : strlen(f);
            for (int j = 0; j < 8; j++)
                if (strlen(want[j]) == fl && !strncmp(f, want[j], fl)) col[j] = k;
        }
    }
    for (int j = 0; j < 8 && line; j++)
        if (col[j] < 0) rc = serr(cn, "%s: no column '%s'", path, want[j]);
    if (!line) rc = serr(cn, "%s: empty file", path);
    while (!rc && (line = strtok_r(NULL, "\r\n", &save)) != NULL) {
        long long v[8] = {0};
        int k = 0;
        for (char *f = line, *e; f; f = e ? e + 1 : NULL, k++) {
            e = strchr(f, ',');
            for (int j = 0; j < 8; j++)
                if (col[j] == k) v[j] = strtoll(f, NULL, 10);
        }
        for (int j = 0; j < 8; j++)
            if (v[j] <= 0 || v[j] > (1 << 20)) rc = serr(cn, "%s: row %d: bad %s", path, row + 2, want[j]);
        if (rc) break;
        sw_work *t = w;
        if (row) {
            long wi = w - s->w;
            s->w = realloc(s->w, sizeof(sw_work) * (size_t)(s->nw + 1));
            w = &s->w[wi];
            t = &s->w[s->nw++];
            memset(t, 0, sizeof *t);
            t->seed = w->seed;
        }
        char nm[256], spec[256];
        snprintf(nm, sizeof nm, "%s/%02d", base, row + 1);
        snprintf(spec, sizeof spec, "conv:n=%lld,c=%lld,k=%lld,p=%lld,q=%lld,r=%lld,s=%lld,stride=%lld", v[0], v[1],
                 v[2], v[3], v[4], v[5], v[6], v[7]);
        free(t->name);
        t->name = xstrdup(nm);
        t->kind = W_LAYER;
        t->layer = xstrdup(spec);
        row++;
    }
    if (!rc && !row) rc = serr(cn, "%s: no rows", path);
    free(base);
    free(text);
    free(path);
    return rc;
}

static int spec_load(const char *path, sw_spec *s) {
    memset(s, 0, sizeof *s);
    uint8_t *data = NULL;
    size_t len = 0;
    spec_err_names_file = 0;
    if (cli_read_file(path, &data, &len)) {
        spec_err_names_file = 1;
        return serr(NULL, "%s", npk_errmsg());
    }
    if (len > SW_MAX_SPEC_BYTES) {
        free(data);
        return serr(NULL, "the spec is %zu bytes, more than the %u-byte limit", len, SW_MAX_SPEC_BYTES);
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        dir[0] = 0;
    yaml_parser_t p;
    yaml_document_t d;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, data, len);
    int rc = -1;
    if (!yaml_parser_load(&p, &d)) {
        serr(NULL, "line %lu: %s", (unsigned long)p.problem_mark.line + 1, p.problem ? p.problem : "YAML error");
        yaml_parser_delete(&p);
        free(data);
        return -1;
    }
    yaml_node_t *root = yaml_document_get_root_node(&d);
    static const char *const keys[] = {"name", "device", "params", "sweeps", "workloads", "metrics", "timing_only", NULL};
    if (!root || root->type != YAML_MAPPING_NODE) {
        serr(root, "the spec must be a mapping (name, device/params or sweeps, workloads, metrics)");
        goto out;
    }
    if (check_keys(&d, root, "spec", keys)) goto out;
    const char *nm = scalar(map_get(&d, root, "name"));
    s->name = xstrdup(nm ? nm : "sweep");
    yaml_node_t *sw = map_get(&d, root, "sweeps");
    if (sw && map_get(&d, root, "device")) {
        serr(sw, "give either device/params or sweeps, not both");
        goto out;
    }
    if (sw) {
        if (sw->type != YAML_SEQUENCE_NODE) {
            serr(sw, "sweeps: a list of {device, params}");
            goto out;
        }
        static const char *const skeys[] = {"device", "params", NULL};
        for (yaml_node_item_t *it = sw->data.sequence.items.start; it < sw->data.sequence.items.top; it++) {
            yaml_node_t *e = yaml_document_get_node(&d, *it);
            if (!e || e->type != YAML_MAPPING_NODE) {
                serr(e ? e : sw, "sweeps: each entry is a mapping {device, params}");
                goto out;
            }
            if (check_keys(&d, e, "sweep entry", skeys) ||
                read_study(s, &d, e, map_get(&d, e, "device"), map_get(&d, e, "params")))
                goto out;
        }
    } else {
        if (read_study(s, &d, root, map_get(&d, root, "device"), map_get(&d, root, "params"))) goto out;
    }
    if (!s->ns) {
        serr(root, "no sweep entries");
        goto out;
    }
    yaml_node_t *wl = map_get(&d, root, "workloads");
    if (!wl || wl->type != YAML_SEQUENCE_NODE || wl->data.sequence.items.top == wl->data.sequence.items.start) {
        serr(wl ? wl : root, "workloads: a non-empty list");
        goto out;
    }
    for (yaml_node_item_t *it = wl->data.sequence.items.start; it < wl->data.sequence.items.top; it++)
        if (read_work(s, &d, yaml_document_get_node(&d, *it), dir)) goto out;
    yaml_node_t *to = map_get(&d, root, "timing_only");
    if (to) {
        const char *v = scalar(to);
        if (v && (!strcmp(v, "true") || !strcmp(v, "1")))
            s->timing_only = 1;
        else if (!v || (strcmp(v, "false") && strcmp(v, "0"))) {
            serr(to, "timing_only: true or false");
            goto out;
        }
    }
    yaml_node_t *mt = map_get(&d, root, "metrics");
    if (mt) {
        if (mt->type != YAML_SEQUENCE_NODE) {
            serr(mt, "metrics: a list of metric names");
            goto out;
        }
        for (yaml_node_item_t *it = mt->data.sequence.items.start; it < mt->data.sequence.items.top; it++) {
            const char *m = scalar(yaml_document_get_node(&d, *it));
            int ok = 0;
            for (int i = 0; m && i < N_ALL_METRICS; i++)
                if (!strcmp(m, all_metrics[i])) ok = 1;
            if (!ok) {
                serr(mt, "metrics: unknown metric '%s'", m ? m : "?");
                goto out;
            }
            s->metrics = realloc(s->metrics, sizeof(char *) * (size_t)(s->nmetrics + 1));
            s->metrics[s->nmetrics++] = xstrdup(m);
        }
    }
    s->points = 0;
    for (int i = 0; i < s->ns; i++) {
        if (s->st[i].combos * s->nw > SW_MAX_POINTS - s->points) {
            serr(root, "the sweep has more than %d points", SW_MAX_POINTS);
            goto out;
        }
        s->points += s->st[i].combos * s->nw;
    }
    rc = 0;
out:
    yaml_document_delete(&d);
    yaml_parser_delete(&p);
    free(data);
    return rc;
}

/* ---- points ------------------------------------------------------------------ */

typedef struct {
    int study, work;
    long combo;
    int vi[64]; /* value index per parameter of the study */
} sw_point;

static int point_decode(const sw_spec *s, long idx, sw_point *p) {
    memset(p, 0, sizeof *p);
    for (int i = 0; i < s->ns; i++) {
        long block = s->st[i].combos * s->nw;
        if (idx < block) {
            p->study = i;
            p->combo = idx / s->nw;
            p->work = (int)(idx % s->nw);
            long c = p->combo;
            for (int j = s->st[i].np - 1; j >= 0; j--) {
                if (j < 64) p->vi[j] = (int)(c % s->st[i].params[j].n);
                c /= s->st[i].params[j].n;
            }
            return 0;
        }
        idx -= block;
    }
    return -1;
}

static void point_opts(const sw_spec *s, const sw_point *p, char *buf, size_t cap) {
    const sw_study *st = &s->st[p->study];
    size_t o = 0;
    buf[0] = 0;
    /* "rows+cols: 16" sets every named option to the value: rows=16,cols=16 */
    for (int j = 0; j < st->np && j < 64; j++) {
        const char *nm = st->params[j].name, *val = st->params[j].vals[p->vi[j]];
        for (const char *q = nm; *q;) {
            const char *e = strchr(q, '+');
            int len = e ? (int)(e - q) : (int)strlen(q);
            o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, "%s%.*s=%s", o ? "," : "", len, q, val);
            q = e ? e + 1 : q + len;
        }
    }
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const uint8_t *b = data;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void set_u64(json_t *o, const char *k, uint64_t v) { json_object_set_new(o, k, json_integer((json_int_t)v)); }

/* The metrics every workload kind has. */
static void set_common(json_t *row, uint64_t digest, uint64_t cycles, uint64_t hz, uint64_t dev_macs, uint64_t cpu_macs) {
    char hex[20];
    snprintf(hex, sizeof hex, "%016" PRIx64, digest);
    json_object_set_new(row, "output_digest", json_string(hex));
    set_u64(row, "cycles", cycles);
    json_object_set_new(row, "time_s", json_real(hz ? (double)cycles / (double)hz : 0.0));
    set_u64(row, "device_macs", dev_macs);
    set_u64(row, "cpu_macs", cpu_macs);
}

/* Run a graph workload: fills the row's metrics or returns -1 with npk_errmsg. */
static int run_graph(const sw_work *w, const char *device, const char *opts, int timing_only, json_t *row) {
    npk_graph *g = NULL;
    int rc = w->kind == W_LAYER ? npk_graph_synth_layer(w->layer, w->seed, &g) : npk_graph_load_file(&g, w->path);
    if (rc) return -1;
    size_t nin = npk_graph_n_inputs(g);
    npk_tensor *ins = xcalloc(nin, sizeof(npk_tensor));
    size_t got = 0;
    for (size_t i = 0; i < nin && !rc; i++) {
        const npk_value_desc *vd = npk_graph_input(g, i);
        const char *file = NULL;
        for (int k = 0; k < w->nin; k++)
            if (!strcmp(w->in_names[k], vd->name)) file = w->in_paths[k];
        rc = file ? npk_tensor_load_pb_file(&ins[i], file) : npk_graph_random_input(g, i, w->seed, &ins[i]);
        if (rc && file) npk_err_prefix(-rc, "input '%s'", vd->name);
        if (!rc) {
            got++;
            if (!ins[i].name || strcmp(ins[i].name, vd->name)) {
                free(ins[i].name);
                ins[i].name = xstrdup(vd->name);
            }
        }
    }
    for (int k = 0; k < w->nin && !rc; k++) {
        int found = 0;
        for (size_t i = 0; i < nin; i++)
            if (!strcmp(w->in_names[k], npk_graph_input(g, i)->name)) found = 1;
        if (!found) rc = npk_err(NPK_EINVAL, "the model has no input '%s'", w->in_names[k]);
    }
    npk_tensor *outs = NULL;
    size_t nout = 0;
    npk_run_report rep;
    memset(&rep, 0, sizeof rep);
    if (!rc) {
        npk_run_opts o = {.device = device, .dev_opts = opts && *opts ? opts : NULL, .timing_only = timing_only};
        rc = npk_graph_run(g, &o, ins, nin, &outs, &nout, &rep);
    }
    if (!rc) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (size_t i = 0; i < nout; i++) h = fnv1a(h, outs[i].data, npk_tensor_bytes(&outs[i]));
        set_common(row, h, rep.device_cycles, rep.device_hz, rep.device_macs, rep.cpu_macs);
        if (timing_only) json_object_del(row, "output_digest"); /* no outputs were computed */
        double util = rep.device_cycles && rep.peak_macs_per_cycle
                          ? (double)rep.device_macs / ((double)rep.device_cycles * (double)rep.peak_macs_per_cycle)
                          : 0.0;
        json_object_set_new(row, "utilization", json_real(util));
        set_u64(row, "guest_bytes", rep.guest_bytes);
        set_u64(row, "staged_bytes", rep.staged_in_bytes + rep.staged_out_bytes);
        uint64_t on = 0;
        for (size_t i = 0; i < rep.n_nodes; i++) on += rep.nodes[i].place == NPK_PLACE_DEVICE;
        set_u64(row, "nodes_on_device", on);
        if (rep.has_energy) { /* docs/energy.md: devices with an energy model */
            double uj = npk_energy_total_pj(&rep.energy) / 1e6;
            json_object_set_new(row, "energy_uj", json_real(uj));
            json_object_set_new(row, "edp_uj_ms",
                                json_real(rep.device_hz ? uj * (double)rep.device_cycles / (double)rep.device_hz * 1e3 : 0.0));
            json_object_set_new(row, "area_mm2", json_real(npk_area_total_mm2(&rep.area)));
        }
    }
    for (size_t i = 0; i < nout; i++) npk_tensor_free(&outs[i]);
    free(outs);
    for (size_t i = 0; i < got || i < nin; i++) npk_tensor_free(&ins[i]);
    free(ins);
    npk_run_report_fini(&rep);
    npk_graph_free(g);
    return rc ? -1 : 0;
}

/* Run an LLM workload: `steps` greedy positions from BOS. */
static int run_llm(const sw_work *w, const char *device, const char *opts, int timing_only, json_t *row) {
    if (timing_only && strcmp(device, "pccx"))
        return npk_err(NPK_EUNSUPPORTED, "timing_only: LLM workloads run timing-only on pccx only, not %s", device), -1;
    char tmpl[] = "/tmp/npu-sweep-XXXXXX", mpath[64], tpath[64];
    const char *model = w->path, *tok = w->tokenizer;
    int made = 0, rc = 0;
    npk_llm_model *m = NULL;
    npk_llm_decoder *d = NULL;
    if (w->shape && timing_only) { /* timing-only: the shape alone, no weights (npu llm --timing-only) */
        npk_llm_config c;
        if (npk_llm_shape_parse(w->shape, &c) || npk_llm_model_shape(&c, w->shape, &m)) return -1;
    } else if (w->shape) {
        npk_llm_config c;
        if (npk_llm_shape_parse(w->shape, &c)) return -1;
        if (!mkdtemp(tmpl)) return npk_err(NPK_EIO, "cannot create a temporary directory: %s", strerror(errno)), -1;
        made = 1;
        snprintf(mpath, sizeof mpath, "%s/m.bin", tmpl);
        snprintf(tpath, sizeof tpath, "%s/t.bin", tmpl);
        rc = npk_llm_synth_write(&c, w->seed, mpath, c.vocab_size >= 259 ? tpath : NULL);
        model = mpath;
        tok = NULL;
    }
    if (!rc && !m) rc = npk_llm_model_load(model, &m);
    (void)tok; /* greedy decoding from BOS needs no tokenizer */
    if (!rc) {
        if (!strcmp(device, npk_pccx_class.name)) { /* the device with an LLM decoder (src/llm/pccx_decode.c) */
            npk_llm_pccx_opts po = {.dev_opts = opts && *opts ? opts : NULL, .timing_only = timing_only};
            rc = npk_llm_decoder_pccx(m, &po, &d);
        } else if (!strcmp(device, "cpu")) {
            rc = npk_llm_decoder_cpu(m, &d);
        } else {
            rc = npk_err(NPK_EUNSUPPORTED, "llm workloads run on %s or cpu, not %s", npk_pccx_class.name, device);
        }
    }
    uint64_t h = 0xcbf29ce484222325ull;
    int steps = m && w->steps > m->cfg.seq_len ? m->cfg.seq_len : w->steps;
    for (int pos = 0, tokid = NPK_LLM_BOS; !rc && pos < steps; pos++) {
        const float *lg;
        rc = npk_llm_forward(d, tokid, pos, &lg);
        if (!rc) {
            tokid = npk_llm_argmax(lg, m->cfg.vocab_size);
            h = fnv1a(h, &tokid, sizeof tokid);
        }
    }
    if (!rc) {
        npk_llm_stats st;
        npk_llm_stats_get(d, &st);
        set_common(row, h, st.device_cycles, st.device_hz, st.device_macs, 0);
        if (timing_only) json_object_del(row, "output_digest"); /* no tokens were computed */
        json_object_set_new(row, "tokens_per_s",
                            json_real(st.device_cycles ? (double)st.tokens * (double)st.device_hz / (double)st.device_cycles
                                                       : 0.0));
    }
    npk_llm_decoder_free(d);
    npk_llm_model_free(m);
    if (made) {
        unlink(mpath);
        unlink(tpath);
        rmdir(tmpl);
    }
    return rc ? -1 : 0;
}

/* Run point idx in this process; returns the row (caller frees). */
static json_t *run_point(const sw_spec *s, long idx, int host_time) {
    sw_point p;
    json_t *row = json_object();
    set_u64(row, "index", (uint64_t)idx);
    if (point_decode(s, idx, &p)) {
        json_object_set_new(row, "status", json_string("error"));
        json_object_set_new(row, "error", json_string("no such point"));
        return row;
    }
    const sw_study *st = &s->st[p.study];
    const sw_work *w = &s->w[p.work];
    char opts[2048];
    point_opts(s, &p, opts, sizeof opts);
    double t0 = now_s();
    if (s->timing_only && !strcmp(st->device, "cpu")) {
        json_object_set_new(row, "status", json_string("error"));
        json_object_set_new(row, "error", json_string("timing_only: the CPU reference has no timing"));
        return row;
    }
    int rc = w->kind == W_LLM ? run_llm(w, st->device, opts, s->timing_only, row)
                              : run_graph(w, st->device, opts, s->timing_only, row);
    if (host_time) json_object_set_new(row, "host_s", json_real(now_s() - t0));
    json_object_set_new(row, "status", json_string(rc ? "error" : "ok"));
    if (rc) json_object_set_new(row, "error", json_string(npk_errmsg()));
    return row;
}

/* ---- running points in child processes ------------------------------------------- */

#define ROW_MARK "@@npu-sweep-row "

typedef struct {
    pid_t pid;
    int fd;
    long idx;
    double start;
    char *buf;
    size_t len, cap;
    int timed_out;
} sw_child;

static int spawn_point(const char *spec_path, long idx, int host_time, sw_child *c) {
    int fds[2];
    if (pipe(fds)) return npk_err(NPK_EIO, "pipe: %s", strerror(errno));
    char istr[32];
    snprintf(istr, sizeof istr, "%ld", idx);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return npk_err(NPK_EIO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[1]);
        if (host_time)
            execl("/proc/self/exe", "npu", "sweep", spec_path, "--run-point", istr, "--host-time", (char *)NULL);
        else
            execl("/proc/self/exe", "npu", "sweep", spec_path, "--run-point", istr, (char *)NULL);
        fprintf(stderr, "exec: %s\n", strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    memset(c, 0, sizeof *c);
    c->pid = pid;
    c->fd = fds[0];
    c->idx = idx;
    c->start = now_s();
    return 0;
}

/* The child's row, or an error row naming how it ended. */
static json_t *child_row(sw_child *c, int status, double timeout) {
    json_t *row = NULL;
    if (c->buf) {
        c->buf[c->len] = 0;
        char *m = strstr(c->buf, ROW_MARK);
        if (m) {
            json_error_t e;
            row = json_loads(m + strlen(ROW_MARK), JSON_DISABLE_EOF_CHECK, &e);
        }
    }
    if (row && WIFEXITED(status) && WEXITSTATUS(status) == 0 && !c->timed_out) return row;
    json_decref(row);
    row = json_object();
    set_u64(row, "index", (uint64_t)c->idx);
    json_object_set_new(row, "status", json_string("error"));
    char msg[512];
    if (c->timed_out)
        snprintf(msg, sizeof msg, "timed out after %g s", timeout);
    else if (WIFSIGNALED(status))
        snprintf(msg, sizeof msg, "crashed: signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else {
        /* last non-empty line of its output */
        const char *last = "";
        if (c->buf) {
            char *save = NULL;
            for (char *l = strtok_r(c->buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
                if (*l) last = l;
        }
        snprintf(msg, sizeof msg, "exited with code %d%s%s", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                 *last ? ": " : "", last);
    }
    json_object_set_new(row, "error", json_string(msg));
    return row;
}

static void child_read(sw_child *c) {
    if (c->cap - c->len < 4096) {
        size_t nc = c->cap ? c->cap * 2 : 8192;
        if (nc > (1u << 22)) { /* keep at most 4 MiB: drop the oldest half */
            memmove(c->buf, c->buf + c->len / 2, c->len - c->len / 2);
            c->len -= c->len / 2;
        } else {
            char *nb = realloc(c->buf, nc + 1);
            if (!nb) return;
            c->buf = nb;
            c->cap = nc;
        }
    }
    ssize_t r = read(c->fd, c->buf + c->len, c->cap - c->len);
    if (r > 0) c->len += (size_t)r;
    if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
        close(c->fd);
        c->fd = -1;
    }
}

/* Run points first .. first+n-1 with up to j children; row of point first+i in rows[i]. */
static int run_local(const char *spec_path, long first, long n, int j, double timeout, int host_time, json_t **rows) {
    long next = 0, done = 0;
    sw_child *cs = xcalloc((size_t)j, sizeof(sw_child));
    for (int k = 0; k < j; k++) cs[k].pid = 0;
    while (done < n) {
        for (int k = 0; k < j && next < n; k++)
            if (!cs[k].pid) {
                if (spawn_point(spec_path, first + next, host_time, &cs[k])) {
                    free(cs);
                    return -1;
                }
                next++;
            }
        struct pollfd pf[256];
        int map[256], np = 0;
        for (int k = 0; k < j && np < 256; k++)
            if (cs[k].pid && cs[k].fd >= 0) {
                pf[np].fd = cs[k].fd;
                pf[np].events = POLLIN;
                map[np++] = k;
            }
        if (np) poll(pf, (nfds_t)np, 100);
        for (int q = 0; q < np; q++)
            if (pf[q].revents) child_read(&cs[map[q]]);
        for (int k = 0; k < j; k++) {
            sw_child *c = &cs[k];
            if (!c->pid) continue;
            if (c->fd >= 0 && timeout > 0 && now_s() - c->start > timeout && !c->timed_out) {
                kill(c->pid, SIGKILL);
                c->timed_out = 1;
            }
            if (c->fd >= 0) continue;
            int status = 0;
            if (waitpid(c->pid, &status, 0) < 0) status = 0x7f00;
            rows[c->idx - first] = child_row(c, status, timeout);
            free(c->buf);
            memset(c, 0, sizeof *c);
            done++;
            if (n > 1) cli_progress("sweep points", (uint64_t)done, (uint64_t)n);
        }
    }
    if (n > 1) cli_progress_end();
    free(cs);
    return 0;
}

/* Run one point in a child and wait for it (MPI workers). */
static json_t *run_one_child(const char *spec_path, long idx, double timeout, int host_time) {
    json_t *row = NULL;
    if (run_local(spec_path, idx, 1, 1, timeout, host_time, &row) || !row) {
        json_decref(row);
        row = json_object();
        set_u64(row, "index", (uint64_t)idx);
        json_object_set_new(row, "status", json_string("error"));
        json_object_set_new(row, "error", json_string(npk_errmsg()));
    }
    return row;
}

/* ---- MPI: a dynamic work queue on rank 0 -------------------------------------------- */

static int launched_by_mpirun(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK") ||
           getenv("MPI_LOCALNRANKS");
}

#ifdef NPUKIT_HAVE_MPI
enum { TAG_REQ = 1, TAG_IDX = 2, TAG_ROW = 3 };

static void run_mpi(const char *spec_path, const sw_spec *s, double timeout, int host_time, json_t **rows, int rank,
                    int size) {
    if (rank == 0) {
        long next = 0, got = 0;
        int active = size - 1;
        while (active > 0) {
            MPI_Status st;
            MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            if (st.MPI_TAG == TAG_ROW) {
                int len = 0;
                MPI_Get_count(&st, MPI_CHAR, &len);
                char *b = xcalloc((size_t)len + 1, 1);
                MPI_Recv(b, len, MPI_CHAR, st.MPI_SOURCE, TAG_ROW, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                json_error_t e;
                json_t *row = json_loads(b, 0, &e);
                json_t *ix = row ? json_object_get(row, "index") : NULL;
                long i = ix ? (long)json_integer_value(ix) : -1;
                if (i >= 0 && i < s->points && !rows[i]) {
                    rows[i] = row;
                    got++;
                    cli_progress("sweep points", (uint64_t)got, (uint64_t)s->points);
                } else {
                    json_decref(row);
                }
                free(b);
            } else {
                long dummy;
                MPI_Recv(&dummy, 1, MPI_LONG, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                long give = next < s->points ? next++ : -1;
                MPI_Send(&give, 1, MPI_LONG, st.MPI_SOURCE, TAG_IDX, MPI_COMM_WORLD);
                if (give < 0) active--;
            }
        }
        cli_progress_end();
    } else {
        for (;;) {
            long req = 0, idx = -1;
            MPI_Send(&req, 1, MPI_LONG, 0, TAG_REQ, MPI_COMM_WORLD);
            MPI_Recv(&idx, 1, MPI_LONG, 0, TAG_IDX, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (idx < 0) break;
            json_t *row = run_one_child(spec_path, idx, timeout, host_time);
            char *txt = json_dumps(row, JSON_COMPACT | JSON_SORT_KEYS);
            MPI_Send(txt, (int)strlen(txt), MPI_CHAR, 0, TAG_ROW, MPI_COMM_WORLD);
            free(txt);
            json_decref(row);
        }
    }
}
#endif

/* ---- results ------------------------------------------------------------------------ */

typedef struct {
    const char **names;
    int n;
    int first_metric, n_metrics;
} sw_cols;

static void columns(const sw_spec *s, int host_time, sw_cols *c) {
    c->names = xcalloc((size_t)(s->npcols + N_ALL_METRICS + 8), sizeof(char *));
    c->n = 0;
    c->names[c->n++] = "index";
    c->names[c->n++] = "device";
    for (int i = 0; i < s->npcols; i++) c->names[c->n++] = s->pcols[i];
    c->names[c->n++] = "workload";
    c->names[c->n++] = "status";
    c->first_metric = c->n;
    if (s->nmetrics)
        for (int i = 0; i < s->nmetrics; i++) c->names[c->n++] = s->metrics[i];
    else
        for (int i = 0; i < N_ALL_METRICS; i++) c->names[c->n++] = all_metrics[i];
    if (host_time) c->names[c->n++] = "host_s";
    c->n_metrics = c->n - c->first_metric;
    c->names[c->n++] = "error";
}

/* The cell text of column `col` for point idx (empty when not applicable). */
static void cell(const sw_spec *s, long idx, json_t *row, const char *col, char *out, size_t cap) {
    out[0] = 0;
    sw_point p;
    if (point_decode(s, idx, &p)) return;
    const sw_study *st = &s->st[p.study];
    if (!strcmp(col, "index")) {
        snprintf(out, cap, "%ld", idx);
        return;
    }
    if (!strcmp(col, "device")) {
        snprintf(out, cap, "%s", st->device);
        return;
    }
    if (!strcmp(col, "workload")) {
        snprintf(out, cap, "%s", s->w[p.work].name);
        return;
    }
    for (int i = 0; i < s->npcols; i++)
        if (!strcmp(col, s->pcols[i])) {
            for (int j = 0; j < st->np; j++)
                if (!strcmp(st->params[j].name, col)) snprintf(out, cap, "%s", st->params[j].vals[p.vi[j]]);
            return;
        }
    json_t *v = row ? json_object_get(row, col) : NULL;
    if (!v) return;
    if (json_is_integer(v))
        snprintf(out, cap, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(out, cap, "%.9g", json_real_value(v));
    else if (json_is_string(v))
        snprintf(out, cap, "%s", json_string_value(v));
}

static void csv_field(FILE *f, const char *v) {
    if (strpbrk(v, ",\"\n")) {
        fputc('"', f);
        for (const char *p = v; *p; p++) {
            if (*p == '"') fputc('"', f);
            fputc(*p == '\n' ? ' ' : *p, f);
        }
        fputc('"', f);
    } else {
        fputs(v, f);
    }
}

static int write_csv(FILE *f, const sw_spec *s, const sw_cols *c, json_t **rows) {
    char buf[1024];
    for (int k = 0; k < c->n; k++) {
        if (k) fputc(',', f);
        fputs(c->names[k], f);
    }
    fputc('\n', f);
    for (long i = 0; i < s->points; i++) {
        for (int k = 0; k < c->n; k++) {
            if (k) fputc(',', f);
            cell(s, i, rows[i], c->names[k], buf, sizeof buf);
            csv_field(f, buf);
        }
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}

static int write_json(FILE *f, const sw_spec *s, const sw_cols *c, json_t **rows) {
    json_t *root = json_object(), *cols = json_array(), *arr = json_array();
    json_object_set_new(root, "name", json_string(s->name));
    for (int k = 0; k < c->n; k++) json_array_append_new(cols, json_string(c->names[k]));
    json_object_set_new(root, "columns", cols);
    char buf[1024];
    for (long i = 0; i < s->points; i++) {
        json_t *o = json_object();
        for (int k = 0; k < c->n; k++) {
            cell(s, i, rows[i], c->names[k], buf, sizeof buf);
            json_t *v = rows[i] ? json_object_get(rows[i], c->names[k]) : NULL;
            if (k >= c->first_metric && k < c->first_metric + c->n_metrics && v && json_is_number(v))
                json_object_set(o, c->names[k], v);
            else if (!strcmp(c->names[k], "index"))
                json_object_set_new(o, "index", json_integer(i));
            else if (buf[0])
                json_object_set_new(o, c->names[k], json_string(buf));
        }
        json_array_append_new(arr, o);
    }
    json_object_set_new(root, "rows", arr);
    int rc = json_dumpf(root, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    fputc('\n', f);
    json_decref(root);
    return rc || ferror(f) ? -1 : 0;
}

/* Through cli_out (a temporary beside PATH, renamed on success), so a failure
 * leaves no partial file. */
static int write_out(const char *path, int (*fn)(FILE *, const sw_spec *, const sw_cols *, json_t **),
                     const sw_spec *s, const sw_cols *c, json_t **rows) {
    cli_out o;
    if (cli_out_open(&o, path)) return cli_fail("sweep: %s", npk_errmsg());
    int bad = fn(o.f, s, c, rows) != 0;
    if (cli_out_close(&o, !bad) || bad) return cli_fail("sweep: cannot write '%s': %s", path, npk_errmsg());
    return 0;
}

/* ---- the picture ----------------------------------------------------------------------- */

typedef struct {
    double x, y;
    char label[256];
    int ok;
} sw_cfg;

static int cmp_cfg(const void *a, const void *b) {
    const sw_cfg *p = a, *q = b;
    return p->x < q->x ? -1 : p->x > q->x ? 1 : p->y < q->y ? -1 : p->y > q->y ? 1 : 0;
}

static int col_value(const sw_spec *s, long i, json_t *row, const char *col, double *v) {
    char buf[256];
    cell(s, i, row, col, buf, sizeof buf);
    char *end;
    errno = 0;
    *v = strtod(buf, &end);
    return buf[0] && !*end && !errno ? 0 : -1;
}

static int is_param(const sw_spec *s, const char *col) {
    for (int i = 0; i < s->npcols; i++)
        if (!strcmp(s->pcols[i], col)) return 1;
    return 0;
}

/* A configuration's value of column col over its workloads (rows base +
 * c * nw + w): a parameter as it is; area_mm2 the configuration's (the same
 * on every workload); edp_uj_ms the energy-delay product of the whole
 * workload set (summed energy x summed time); any other metric summed.
 * 0, or -1 when a point failed or lacks the column. */
static int cfg_value(const sw_spec *s, json_t **rows, long first, const char *col, double *out) {
    double sum = 0, e = 0, t = 0;
    for (int w = 0; w < s->nw; w++) {
        long idx = first + w;
        json_t *r = rows[idx];
        const char *stt = r ? json_string_value(json_object_get(r, "status")) : NULL;
        double v;
        if (!stt || strcmp(stt, "ok") || col_value(s, idx, r, col, &v)) return -1;
        if (is_param(s, col) || !strcmp(col, "area_mm2")) {
            *out = v;
            return 0;
        }
        if (!strcmp(col, "edp_uj_ms")) {
            double ev, tv;
            if (col_value(s, idx, r, "energy_uj", &ev) || col_value(s, idx, r, "time_s", &tv)) return -1;
            e += ev, t += tv;
        }
        sum += v;
    }
    *out = !strcmp(col, "edp_uj_ms") ? e * t * 1e3 : sum;
    return 0;
}

/* The label of configuration c of study i (its options; the device when
 * the spec has several studies). */
static void cfg_label(const sw_spec *s, int i, long first, char *label, size_t n) {
    sw_point p;
    point_decode(s, first, &p);
    char opts[200];
    point_opts(s, &p, opts, sizeof opts);
    snprintf(label, n, "%s%s%s", s->ns > 1 ? s->st[i].device : "", s->ns > 1 && *opts ? " " : "", opts);
    for (char *q = label; *q; q++)
        if (*q == '"') *q = '\'';
}

/* One point per configuration (study x parameter combination): parameter
 * columns as they are, metrics over the workloads as cfg_value says. */
/* An axis title with its unit for a column: a metric's from the table below, a device
 * option's from the device's option table (its help up to the first ';' or '(' and its
 * value placeholder as the unit), "a+b" (options set together) as "a = b". */
static void axis_title(const sw_spec *s, const char *col, int summed, char *out, size_t cap) {
    static const char *const metric_titles[][2] = {
        {"cycles", "modeled device cycles"},       {"time_s", "modeled time (s)"},
        {"device_macs", "MACs on the device"},     {"cpu_macs", "MACs on the CPU"},
        {"utilization", "array utilization (%)"},  {"guest_bytes", "guest memory (bytes)"},
        {"staged_bytes", "bytes staged (bytes)"},  {"tokens_per_s", "modeled tokens/s"},
        {"nodes_on_device", "nodes on the device"}, {"host_s", "host time (s)"},
        {"energy_uj", "modeled device energy (uJ)"}, {"edp_uj_ms", "energy-delay product (uJ x ms)"},
        {"area_mm2", "modeled area (mm2)"}};
    for (size_t i = 0; i < sizeof metric_titles / sizeof metric_titles[0]; i++)
        if (!strcmp(col, metric_titles[i][0])) {
            snprintf(out, cap, "%s%s", metric_titles[i][1],
                     summed && s->nw > 1 && strcmp(col, "area_mm2") ? ", summed over the workloads" : "");
            return;
        }
    const char *plus = strchr(col, '+');
    char first[64];
    snprintf(first, sizeof first, "%.*s", plus ? (int)(plus - col) : (int)strlen(col), col);
    const npk_opt *o = NULL;
    for (int i = 0; i < s->ns && !o; i++) {
        const npk_dev_class *c = npk_dev_class_find(s->st[i].device);
        if (c) o = npk_opt_find(c->opts, c->n_opts, first);
    }
    char what[96] = "", unit[48] = "";
    if (o && o->help) {
        size_t k = strcspn(o->help, ";(\n");
        snprintf(what, sizeof what, "%.*s", (int)(k < 80 ? k : 80), o->help);
        while (*what && what[strlen(what) - 1] == ' ') what[strlen(what) - 1] = 0;
    }
    const char *m = o ? npk_opt_meta(o) : "";
    if (!strcmp(m, "BYTES_PER_CYCLE")) snprintf(unit, sizeof unit, "bytes/cycle");
    else if (!strcmp(m, "CYCLES")) snprintf(unit, sizeof unit, "cycles");
    else if (!strcmp(m, "KIB")) snprintf(unit, sizeof unit, "KiB");
    else if (!strcmp(m, "MHZ")) snprintf(unit, sizeof unit, "MHz");
    else if (!strcmp(m, "BYTES")) snprintf(unit, sizeof unit, "bytes");
    int n;
    if (plus) { /* "rows+cols": both options set to the same value */
        char eq[96];
        snprintf(eq, sizeof eq, "%s", col);
        for (char *q = eq; *q; q++)
            if (*q == '+') *q = '=';
        n = snprintf(out, cap, "%s%s%s%s%s (set together)", eq, *what ? ": " : "", what, *unit ? ", " : "", unit);
    } else {
        n = snprintf(out, cap, "%s%s%s%s%s%s", col, *what ? ": " : "", what, *unit ? " (" : "", unit, *unit ? ")" : "");
    }
    if (n >= (int)cap && cap > 4) memcpy(out + cap - 4, "...", 4); /* a title cut to fit says so */
}

static int plot(const sw_spec *s, json_t **rows, const char *file, const char *xcol, const char *ycol) {
    long ncfg = 0;
    for (int i = 0; i < s->ns; i++) ncfg += s->st[i].combos;
    sw_cfg *cf = xcalloc((size_t)ncfg, sizeof(sw_cfg));
    long base = 0, c0 = 0;
    for (int i = 0; i < s->ns; i++) {
        for (long c = 0; c < s->st[i].combos; c++) {
            sw_cfg *g = &cf[c0 + c];
            long first = base + c * s->nw;
            g->ok = !cfg_value(s, rows, first, xcol, &g->x) && !cfg_value(s, rows, first, ycol, &g->y);
            cfg_label(s, i, first, g->label, sizeof g->label);
        }
        base += s->st[i].combos * s->nw;
        c0 += s->st[i].combos;
    }
    int n = 0;
    for (long i = 0; i < ncfg; i++)
        if (cf[i].ok) cf[n++] = cf[i];
    if (!n) {
        free(cf);
        return cli_fail("--plot: no configuration has '%s' and '%s' on every workload", xcol, ycol);
    }
    qsort(cf, (size_t)n, sizeof *cf, cmp_cfg);
    char dir[] = "/tmp/npu-plot-XXXXXX";
    if (!mkdtemp(dir)) {
        free(cf);
        return cli_fail("--plot: cannot create a temporary directory: %s", strerror(errno));
    }
    char pts[64], fr[64], gp[64], lab[2][64];
    snprintf(pts, sizeof pts, "%s/points.dat", dir);
    snprintf(fr, sizeof fr, "%s/front.dat", dir);
    snprintf(gp, sizeof gp, "%s/plot.gp", dir);
    snprintf(lab[0], sizeof lab[0], "%s/labels-left.dat", dir);
    snprintf(lab[1], sizeof lab[1], "%s/labels-right.dat", dir);
    FILE *fp = fopen(pts, "w"), *ff = fopen(fr, "w"), *fg = fopen(gp, "w");
    /* the front's labels: beside their point towards the middle of the x range (left half: to
     * the right, right half: to the left), so none reaches the y tick labels or leaves the
     * picture; cf is sorted by x */
    int logx = cf[0].x > 0 && cf[n - 1].x / cf[0].x >= 8, nlab[2] = {0, 0};
    double mid = logx ? sqrt(cf[0].x * cf[n - 1].x) : (cf[0].x + cf[n - 1].x) / 2;
    FILE *fl[2] = {fopen(lab[0], "w"), fopen(lab[1], "w")};
    double xmin = cf[0].x, xmax = cf[0].x, ymin = cf[0].y, ymax = cf[0].y, best = 0;
    int nfront = 0;
    for (int i = 0; i < n && fp && ff; i++) {
        fprintf(fp, "%.17g %.17g \"%s\"\n", cf[i].x, cf[i].y, cf[i].label);
        /* Pareto front (both minimized): sorted by x, a point is on it when its
         * y is below every y at smaller x */
        if (i == 0 || cf[i].y < best) {
            if (i == 0 || cf[i].x != cf[i - 1].x || cf[i].y < best) {
                fprintf(ff, "%.17g %.17g \"%s\"\n", cf[i].x, cf[i].y, cf[i].label);
                int side = cf[i].x > mid;
                if (fl[side]) fprintf(fl[side], "%.17g %.17g \"%s\"\n", cf[i].x, cf[i].y, cf[i].label);
                nlab[side]++;
                nfront++;
            }
            best = cf[i].y;
        }
        if (cf[i].x < xmin) xmin = cf[i].x;
        if (cf[i].x > xmax) xmax = cf[i].x;
        if (cf[i].y < ymin) ymin = cf[i].y;
        if (cf[i].y > ymax) ymax = cf[i].y;
    }
    const char *ext = strrchr(file, '.');
    int svg = ext && !strcmp(ext, ".svg");
    const char *target = cli_out_reserve(file); /* renamed into place when the command succeeded */
    if (!target) {
        if (fp) fclose(fp);
        if (ff) fclose(ff);
        if (fg) fclose(fg);
        for (int k = 0; k < 2; k++) {
            if (fl[k]) fclose(fl[k]);
            unlink(lab[k]);
        }
        unlink(pts);
        unlink(fr);
        unlink(gp);
        rmdir(dir);
        free(cf);
        return cli_fail("--plot: %s", npk_errmsg());
    }
    if (fg) {
        fprintf(fg, "set terminal %s size 1000,650 font ',11'\n", svg ? "svg" : "pngcairo");
        fprintf(fg, "set output '%s'\n", target);
        fprintf(fg, "set title \"npu sweep '%s': %s against %s (%d configurations%s)\" noenhanced\n", s->name, ycol,
                xcol, n, s->nw > 1 ? ", metrics summed over the workloads" : "");
        char xt[200], yt[200];
        axis_title(s, xcol, !is_param(s, xcol), xt, sizeof xt);
        axis_title(s, ycol, !is_param(s, ycol), yt, sizeof yt);
        fprintf(fg, "set xlabel \"%s\" noenhanced\nset ylabel \"%s\" noenhanced\n", xt, yt);
        /* the legend above the plot, where it covers no point */
        /* ... with a line of space between it and the x title; a right margin that holds the
         * last x tick label */
        fprintf(fg, "set grid\nset key below center horizontal height 1\nset rmargin 8\n");
        if (xmin > 0 && xmax / xmin >= 8) fprintf(fg, "set logscale x 2\n");
        if (ymin > 0 && ymax / ymin >= 100) fprintf(fg, "set logscale y 10\n");
        /* one value on an axis (e.g. the area of configurations that differ only in timing):
         * a range around it, so gnuplot need not widen an empty one */
        if (xmax <= xmin) fprintf(fg, "set xrange [%.17g:%.17g]\n", xmin - (xmin ? fabs(xmin) * 0.05 : 1), xmax + (xmax ? fabs(xmax) * 0.05 : 1));
        if (ymax <= ymin) fprintf(fg, "set yrange [%.17g:%.17g]\n", ymin - (ymin ? fabs(ymin) * 0.05 : 1), ymax + (ymax ? fabs(ymax) * 0.05 : 1));
        fprintf(fg, "set offsets graph 0.05, graph 0.18, graph 0.08, graph 0.05\n");
        /* the front's line and rings first, the grey points over them (each visible inside its
         * ring), the labels last: beside their point towards the middle (left half: to the right
         * and above, right half: to the left and below), so none reaches the y tick labels or
         * leaves the picture */
        fprintf(fg,
                "plot '%s' using 1:2 with linespoints pt 6 ps 2.2 lw 2 lc rgb '#d62728' title 'Pareto front (both "
                "minimized)', \\\n"
                "     '%s' using 1:2 with points pt 7 ps 1.0 lc rgb '#606060' title 'configurations'",
                fr, pts);
        if (nlab[0]) fprintf(fg, ", \\\n     '%s' using 1:2:3 with labels left font ',9' offset 1.2,0.9 noenhanced notitle", lab[0]);
        /* right half: below the point, since the front (falling from left to right) reaches it
         * from above: the line never runs through the label */
        if (nlab[1]) fprintf(fg, ", \\\n     '%s' using 1:2:3 with labels right font ',9' offset -1.2,-0.9 noenhanced notitle", lab[1]);
        fprintf(fg, "\n");
    }
    int bad = !fp || !ff || !fg || !fl[0] || !fl[1];
    if (fp) fclose(fp);
    if (ff) fclose(ff);
    if (fg) fclose(fg);
    for (int k = 0; k < 2; k++)
        if (fl[k]) fclose(fl[k]);
    int rc = 0;
    if (bad) {
        rc = cli_fail("--plot: cannot write the gnuplot files in %s", dir);
    } else {
        rc = cli_gnuplot(gp, "--plot");
    }
    unlink(pts);
    unlink(fr);
    unlink(gp);
    unlink(lab[0]);
    unlink(lab[1]);
    rmdir(dir);
    if (!rc) fprintf(stderr, "npu sweep: %s: %d configurations, %d on the Pareto front\n", file, n, nfront);
    free(cf);
    return rc;
}

/* The metric column a --pareto name stands for: energy, area, edp and time
 * are short for energy_uj, area_mm2, edp_uj_ms and time_s; any other name is
 * a column. */
static const char *pareto_col(const char *name) {
    static const char *const alias[][2] = {
        {"energy", "energy_uj"}, {"area", "area_mm2"}, {"edp", "edp_uj_ms"}, {"time", "time_s"}};
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(name, alias[i][0])) return alias[i][1];
    return name;
}

/* --pareto: the configurations no other one beats on every listed metric at
 * once (all minimized; values as cfg_value gives them), on stdout: one line
 * per configuration with the metrics. Configurations with a failed point or
 * without a metric are left out (said on stderr). */
static int pareto(const sw_spec *s, json_t **rows, char **cols, int ncol) {
    long ncfg = 0;
    for (int i = 0; i < s->ns; i++) ncfg += s->st[i].combos;
    double *v = xcalloc((size_t)(ncfg * ncol), sizeof(double));
    char(*lab)[256] = xcalloc((size_t)ncfg, sizeof *lab);
    int *ok = xcalloc((size_t)ncfg, sizeof(int));
    long base = 0, c0 = 0, left = 0;
    for (int i = 0; i < s->ns; i++) {
        for (long c = 0; c < s->st[i].combos; c++) {
            long g = c0 + c, first = base + c * s->nw;
            ok[g] = 1;
            for (int k = 0; k < ncol && ok[g]; k++) ok[g] = !cfg_value(s, rows, first, cols[k], &v[g * ncol + k]);
            left += !ok[g];
            cfg_label(s, i, first, lab[g], sizeof lab[g]);
        }
        base += s->st[i].combos * s->nw;
        c0 += s->st[i].combos;
    }
    printf("# Pareto front of npu sweep '%s' (all minimized):", s->name);
    for (int k = 0; k < ncol; k++) printf(" %s", cols[k]);
    printf("\nconfiguration");
    for (int k = 0; k < ncol; k++) printf(",%s", cols[k]);
    putchar('\n');
    long nfront = 0;
    for (long a = 0; a < ncfg; a++) {
        if (!ok[a]) continue;
        int dominated = 0;
        for (long b = 0; b < ncfg && !dominated; b++) {
            if (b == a || !ok[b]) continue;
            int le = 1, lt = 0;
            for (int k = 0; k < ncol; k++) {
                double x = v[b * ncol + k], y = v[a * ncol + k];
                if (x > y) le = 0;
                if (x < y) lt = 1;
            }
            dominated = le && lt;
        }
        if (dominated) continue;
        nfront++;
        printf("\"%s\"", lab[a]);
        for (int k = 0; k < ncol; k++) printf(",%.9g", v[a * ncol + k]);
        putchar('\n');
    }
    fprintf(stderr, "npu sweep: --pareto: %ld of %ld configurations non-dominated", nfront, ncfg - left);
    if (left) fprintf(stderr, " (%ld left out: a failed point or no value)", left);
    fputc('\n', stderr);
    free(v);
    free(lab);
    free(ok);
    return fflush(stdout) || ferror(stdout) ? cli_fail("cannot write the Pareto front") : 0;
}

/* FILE.png -> FILE-<tag>.png (the energy and area pictures beside --plot's). */
static void sibling(const char *file, const char *tag, char *out, size_t n) {
    const char *ext = strrchr(file, '.'), *slash = strrchr(file, '/');
    if (!ext || (slash && ext < slash)) ext = file + strlen(file);
    snprintf(out, n, "%.*s-%s%s", (int)(ext - file), file, tag, ext);
}

/* --pareto LIST: the metric columns it names (pareto_col) into cols[], at
 * least two, each a metric of this sweep; buf holds the names. The count, or
 * -1 after a usage error was printed. */
static int pareto_cols(const char *list, const sw_cols *c, char *buf, size_t n, char *cols[16]) {
    int k = 0;
    snprintf(buf, n, "%s", list);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const char *col = pareto_col(t);
        int known = 0;
        for (int m = c->first_metric; m < c->first_metric + c->n_metrics; m++) known |= !strcmp(c->names[m], col);
        if (!known || k == 16 || !strcmp(col, "output_digest")) {
            cli_usage_error("sweep", "--pareto: '%s' is not a metric column of this sweep%s", t, k == 16 ? " (at most 16)" : "");
            return -1;
        }
        cols[k++] = (char *)col;
    }
    if (k < 2) {
        cli_usage_error("sweep", "--pareto: at least two metrics, comma-separated (e.g. cycles,energy,area)");
        return -1;
    }
    return k;
}

/* With energy figures in the rows: FILE-energy and FILE-area beside --plot's
 * FILE (cycles against energy_uj and against area_mm2). */
static int plot_energy(const sw_spec *s, json_t **rows, const char *plotf) {
    int has = 0;
    for (long i = 0; i < s->points && !has; i++) has = rows[i] && json_object_get(rows[i], "energy_uj") != NULL;
    if (!has) return 0;
    char f2[1024];
    sibling(plotf, "energy", f2, sizeof f2);
    int rc = plot(s, rows, f2, "cycles", "energy_uj");
    sibling(plotf, "area", f2, sizeof f2);
    return rc ? rc : plot(s, rows, f2, "cycles", "area_mm2");
}

/* ---- the command ------------------------------------------------------------------------- */

typedef struct sweep_args {
    const char *out, *json, *plot, *x, *y, *pareto;
    uint64_t jobs, timeout, run_point;
    int host_time, list, run_point_given;
} sweep_args;
#define SWSTR(n, a, f, def, m, h) CLI_STR(n, a, sweep_args, f, def, m, h)
static const npk_opt sweep_opts[] = {
    SWSTR("--output", "-o", out, NULL, "FILE", "the CSV file (default: standard output)"),
    SWSTR("--json", NULL, json, NULL, "FILE", "also write the rows as JSON"),
    CLI_NUM("--jobs", "-j", U64, sweep_args, jobs, NULL, 1, 256, "N",
      "points run at once on this machine (default: the number of cores)"),
    CLI_NUM("--timeout", NULL, U64, sweep_args, timeout, NULL, 0, 0, "SEC",
      "a point running longer fails with 'timed out' (default: none)"),
    CLI_FLAG("--host-time", NULL, sweep_args, host_time, "add the host seconds of each point (differs run to run)"),
    SWSTR("--plot", NULL, plot, NULL, "FILE.png|.svg",
          "draw --y against --x (default: the first parameter and cycles),\n"
          "one point per configuration with metrics summed over the\n"
          "workloads, and the Pareto front (both minimized); with energy\n"
          "figures also FILE-energy and FILE-area (cycles against energy_uj\n"
          "and area_mm2, docs/energy.md); needs gnuplot"),
    SWSTR("--x", NULL, x, NULL, "COLUMN", "the --plot x axis"),
    SWSTR("--pareto", NULL, pareto, NULL, "M1,M2[,...]",
          "list on stdout the configurations no other one beats on every\n"
          "listed metric (all minimized; energy, area, edp, time stand for\n"
          "energy_uj, area_mm2, edp_uj_ms, time_s); the rows then need -o"),
    SWSTR("--y", NULL, y, "cycles", "COLUMN", "the --plot y axis"),
    CLI_FLAG("--list", NULL, sweep_args, list, "print the points (index, device, options, workload) and exit"),
    /* internal (the last entry, left out of the help): run one point in this process */
    {"--run-point", NULL, NPK_OPT_U64, offsetof(sweep_args, run_point), NULL, 0, 0, 0, 0, 0, "I",
     "internal: run point I here and print its row", offsetof(sweep_args, run_point_given) + 1},
};
#define SWEEP_NOPTS (sizeof sweep_opts / sizeof sweep_opts[0])

static void help(FILE *f) {
    fprintf(f,
            "usage: npu sweep SPEC.yml [-o results.csv] [--json FILE] [-j N] [--timeout SEC] [--host-time]\n"
            "                 [--plot FILE.png|.svg [--x COLUMN] [--y COLUMN]] [--pareto M1,M2,...] [--list]\n"
            "       mpirun -n N npu sweep SPEC.yml ...   (spread the points over MPI ranks)\n\n"
            "Run every point of a design-space sweep (each device and parameter combination of\n"
            "the spec on each workload) and write one row per point, in spec order: the\n"
            "parameters, modeled cycles and time, MACs, utilization, bytes, tokens/s, a digest\n"
            "of the outputs, and the error of a point that failed. docs/sweep.md describes the\n"
            "spec. Each point runs in its own process, so a crash is a failed row.\n\n"
            "options:\n");
    fflush(f);
    cli_help_opts(sweep_opts, SWEEP_NOPTS - 1);
    fprintf(f,
            "\nMPI: %s\n",
#ifdef NPUKIT_HAVE_MPI
            "this build uses MPI: under mpirun, rank 0 hands out points and writes the results"
#else
            "this build has no MPI (install libopenmpi-dev and rebuild); it always runs locally"
#endif
    );
}

/* Every value of the grids against its device's option table (ranges, presets) and every
 * workload (its files readable, its layer spec valid) before any point runs: a usage error
 * (exit 2) naming the study and the value, instead of failing points after the others ran. */
static int validate_spec(const sw_spec *s) {
    for (int i = 0; i < s->ns; i++) {
        const sw_study *st = &s->st[i];
        const npk_dev_class *c = npk_dev_class_find(st->device);
        if (!c) continue; /* spec_load refused unknown devices */
        for (int p = 0; p < st->np; p++)
            for (int v = 0; v < st->params[p].n; v++) {
                const char *name = st->params[p].name;
                while (*name) { /* "rows+cols": each option gets the value */
                    size_t l = strcspn(name, "+");
                    char kv[512];
                    snprintf(kv, sizeof kv, "%.*s=%s", (int)l, name, st->params[p].vals[v]);
                    if (npk_dev_check_opts(c, kv))
                        return cli_usage_error("sweep", "device %s: parameter %s: %s", st->device, st->params[p].name,
                                               npk_errmsg());
                    name += l + (name[l] == '+');
                }
            }
    }
    for (int k = 0; k < s->nw; k++) {
        const sw_work *w = &s->w[k];
        const char *files[3] = {w->kind != W_LAYER ? w->path : NULL, w->kind == W_LLM ? w->tokenizer : NULL, NULL};
        for (int f = 0; f < 2; f++)
            if (files[f] && access(files[f], R_OK))
                return cli_usage_error("sweep", "workload '%s': cannot read '%s': %s", w->name, files[f], strerror(errno));
        for (int f = 0; f < w->nin; f++)
            if (access(w->in_paths[f], R_OK))
                return cli_usage_error("sweep", "workload '%s': input %s: cannot read '%s': %s", w->name, w->in_names[f],
                                       w->in_paths[f], strerror(errno));
        if (w->kind == W_LAYER) {
            npk_graph *g = NULL;
            if (npk_graph_synth_layer(w->layer, w->seed, &g))
                return cli_usage_error("sweep", "workload '%s': %s", w->name, npk_errmsg());
            npk_graph_free(g);
        }
    }
    return 0;
}

int cmd_sweep(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        help(stdout);
        return 0;
    }
    sweep_args A;
    memset(&A, 0, sizeof A);
    npk_opt_defaults(sweep_opts, SWEEP_NOPTS, &A);
    const char *spec_path = NULL;
    int urc = cli_parse("sweep", sweep_opts, SWEEP_NOPTS, &A, argc, argv, &spec_path, 1, NULL);
    if (urc) return urc;
    const char *out = A.out, *jpath = A.json, *plotf = A.plot, *xcol = A.x, *ycol = A.y;
    uint64_t jobs = A.jobs, timeout = A.timeout, run_point_idx = A.run_point;
    int host_time = A.host_time, list = A.list, run_point_mode = A.run_point_given;
    if (!spec_path) return cli_usage_error("sweep", "the spec file is required (npu sweep --help)");
    sw_spec s;
    if (spec_load(spec_path, &s)) {
        spec_free(&s);
        return spec_err_names_file ? cli_fail("sweep: %s", spec_err) : cli_fail("%s: %s", spec_path, spec_err);
    }
    if (!run_point_mode && (urc = validate_spec(&s))) {
        spec_free(&s);
        return urc;
    }
    if (run_point_mode) { /* internal: one point in this process, its row on stdout */
        /* test knob (docs/sweep.md): make this point's process die as a crash would */
        const char *crash = getenv("NPUKIT_SWEEP_TEST_CRASH");
        if (crash && (uint64_t)atoll(crash) == run_point_idx) abort();
        json_t *row = run_point(&s, (long)run_point_idx, host_time);
        char *txt = json_dumps(row, JSON_COMPACT | JSON_SORT_KEYS);
        printf("\n" ROW_MARK "%s\n", txt);
        free(txt);
        json_decref(row);
        spec_free(&s);
        return fflush(stdout) ? 1 : 0;
    }
    /* output paths are checked before the points run */
    const char *badout = out && cli_check_output(out)       ? "-o"
                         : jpath && cli_check_output(jpath) ? "--json"
                         : plotf && cli_check_output(plotf) ? "--plot"
                                                            : NULL;
    if (badout && !run_point_mode) {
        spec_free(&s);
        return cli_fail("sweep: %s: %s", badout, npk_errmsg());
    }
    if (xcol && !plotf) {
        spec_free(&s);
        return cli_usage_error("sweep", "--x needs --plot");
    }
    sw_cols cols;
    columns(&s, host_time, &cols);
    char *pcols[16], pbuf[512] = "";
    int npc = 0;
    if (A.pareto && (npc = pareto_cols(A.pareto, &cols, pbuf, sizeof pbuf, pcols)) < 0) {
        free(cols.names);
        spec_free(&s);
        return 2;
    }
    if (plotf) {
        if (!xcol) xcol = s.npcols ? s.pcols[0] : "index";
        int okx = 0, oky = 0;
        for (int k = 0; k < cols.n; k++) {
            okx |= !strcmp(cols.names[k], xcol);
            oky |= !strcmp(cols.names[k], ycol);
        }
        if (!okx || !oky) {
            free(cols.names);
            spec_free(&s);
            return cli_usage_error("sweep", "--plot: no column '%s' (columns: parameters and metrics)", okx ? ycol : xcol);
        }
    }
    if (list) {
        for (long i = 0; i < s.points; i++) {
            sw_point p;
            point_decode(&s, i, &p);
            char opts[2048];
            point_opts(&s, &p, opts, sizeof opts);
            printf("%ld %s %s %s\n", i, s.st[p.study].device, *opts ? opts : "-", s.w[p.work].name);
        }
        free(cols.names);
        spec_free(&s);
        return fflush(stdout) || ferror(stdout) ? cli_fail("cannot write the list") : 0;
    }
    int rank = 0, size = 1, mpi = 0;
    (void)size;
    if (launched_by_mpirun()) {
#ifdef NPUKIT_HAVE_MPI
        MPI_Init(NULL, NULL);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        mpi = size > 1;
        if (!mpi) MPI_Finalize();
#else
        const char *r = getenv("OMPI_COMM_WORLD_RANK");
        if (!r) r = getenv("PMI_RANK");
        rank = r ? atoi(r) : 0;
        if (rank > 0) { /* rank 0 does the whole sweep */
            free(cols.names);
            spec_free(&s);
            return 0;
        }
        fprintf(stderr, "npu sweep: this build has no MPI; rank 0 runs every point locally\n");
#endif
    }
    json_t **rows = xcalloc((size_t)s.points, sizeof(json_t *));
    int rc = 0;
    if (mpi) {
#ifdef NPUKIT_HAVE_MPI
        run_mpi(spec_path, &s, (double)timeout, host_time, rows, rank, size);
        MPI_Finalize();
#endif
    } else {
        long j = jobs ? (long)jobs : sysconf(_SC_NPROCESSORS_ONLN);
        if (j < 1) j = 1;
        if (j > s.points) j = s.points;
        /* points in parallel processes compute on one thread each (unless the user says otherwise) */
        if (j > 1) setenv("NPUKIT_THREADS", "1", 0);
        rc = run_local(spec_path, 0, s.points, (int)j, (double)timeout, host_time, rows) ? cli_fail("%s", npk_errmsg())
                                                                                         : 0;
    }
    long failed = 0;
    if (!rc && rank == 0) {
        for (long i = 0; i < s.points; i++) {
            const char *st = rows[i] ? json_string_value(json_object_get(rows[i], "status")) : NULL;
            failed += !st || strcmp(st, "ok");
        }
        if (out)
            rc = write_out(out, write_csv, &s, &cols, rows);
        else if (npc)
            ; /* stdout carries the Pareto front */
        else if (write_csv(stdout, &s, &cols, rows) || fflush(stdout))
            rc = cli_fail("cannot write the results: %s", strerror(errno));
        if (!rc && jpath) rc = write_out(jpath, write_json, &s, &cols, rows);
        if (!rc && plotf) rc = plot(&s, rows, plotf, xcol, ycol);
        if (!rc && plotf) rc = plot_energy(&s, rows, plotf);
        if (!rc && npc) rc = pareto(&s, rows, pcols, npc);
        if (!rc)
            fprintf(stderr, "npu sweep: %ld points, %ld failed%s\n", s.points, failed,
                    mpi ? " (MPI)" : "");
        if (!rc && failed) { /* every row is written (the failed ones say why); the exit code says some failed */
            cli_outputs_complete();
            rc = 1;
        }
    }
    for (long i = 0; i < s.points; i++) json_decref(rows[i]);
    free(rows);
    free(cols.names);
    spec_free(&s);
    return rc;
}
