// SPDX-License-Identifier: MIT
/* npu bench, the ONNX family: onnx-DEV-lenet (a device versus the CPU reference),
 * onnx-e1-v0 (e1 versus v0 on one quantized model), onnx-cpu and onnx-cpu-imagenet
 * (npukit's CPU path versus ONNX Runtime). */
#include "bench_suite.h"
#include "npukit/cpu.h"
#include "npukit/e1.h"
#include "npukit/graph.h"
#include "npukit/npkb.h"
#include "npukit/threads.h"
#include "npukit/v0.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

/* ---- ONNX: cifar10-lenet-int8 on an integer device versus the CPU reference -- */

static int run_graph(ctx *c, npk_graph *g, const char *device, const npk_tensor *in, npk_trace *tr, npk_tensor **outs,
                     size_t *nouts, npk_run_report *rep) {
    npk_run_opts o = {.device = device, .trace = tr};
    memset(rep, 0, sizeof *rep);
    if (npk_graph_run(g, &o, in, 1, outs, nouts, rep)) return bench_fail(c, device);
    return 0;
}

static void free_outs(npk_tensor *o, size_t n) {
    for (size_t i = 0; i < n; i++) npk_tensor_free(&o[i]);
    free(o);
}

static int bench_onnx(ctx *c, const char *device) {
    char mp[1024], ip[1024];
    snprintf(mp, sizeof mp, "%s/models/cifar10-lenet-int8/model.onnx", c->shared);
    snprintf(ip, sizeof ip, "%s/models/cifar10-lenet-int8/test_data_set_0/input_0.pb", c->shared);
    npk_graph *g = NULL;
    npk_tensor in = {0}, *ref = NULL, *out = NULL;
    size_t nref = 0, nout = 0;
    npk_run_report rep;
    int rc = 1;
    double *t = calloc((size_t)c->repeat, sizeof *t), *tc = calloc((size_t)c->repeat, sizeof *tc);
    if (!t || !tc || npk_graph_load_file(&g, mp) || npk_tensor_load_pb_file(&in, ip)) {
        bench_fail(c, "cifar10-lenet-int8 (use --shared DIR)");
        goto out;
    }
    uint64_t cycles = 0, macs = 0, hz = 0;
    for (int r = 0; r < c->repeat; r++) {
        bench_progress(c, device, r, c->repeat);
        double t0 = bench_now();
        if (run_graph(c, g, device, &in, NULL, &out, &nout, &rep)) goto out;
        t[r] = (bench_now() - t0) * 1e3;
        cycles = rep.device_cycles;
        macs = rep.device_macs;
        hz = rep.device_hz;
        npk_run_report_fini(&rep);
        t0 = bench_now();
        if (run_graph(c, g, "cpu", &in, NULL, &ref, &nref, &rep)) goto out;
        tc[r] = (bench_now() - t0) * 1e3;
        npk_run_report_fini(&rep);
        int same = nout == nref && nout > 0;
        for (size_t i = 0; same && i < nout; i++)
            same = npk_tensor_bytes(&out[i]) == npk_tensor_bytes(&ref[i]) &&
                   !memcmp(out[i].data, ref[i].data, npk_tensor_bytes(&out[i]));
        free_outs(out, nout);
        free_outs(ref, nref);
        out = ref = NULL;
        nout = nref = 0;
        if (!same) {
            npk_err(NPK_EDEVICE, "the %s outputs differ from the CPU reference's", device);
            bench_fail(c, "check");
            goto out;
        }
    }
    cli_progress_end();
    char name[80];
    snprintf(name, sizeof name, "%s: cifar10-lenet-int8 (batch %lld), host time", device,
             in.rank ? (long long)in.dims[0] : 1LL);
    bench_add_samples(c, "npu", "ms", t, c->repeat, name);
    bench_add_samples(c, "baseline", "ms", tc, c->repeat, "baseline: the same model on the CPU reference");
    bench_add_ratio(c, "device run time / CPU reference time", name, "baseline: the same model on the CPU reference",
              "lower");
    if (hz && cycles) {
        bench_add_modeled(c, "us", (double)cycles / (double)hz * 1e6, "modeled inference time (device cycles)");
        bench_add_modeled(c, "TOPS", (double)macs * 2.0 / ((double)cycles / (double)hz) / 1e12, "modeled TOPS");
    }
    if (c->trace_path) {
        npk_trace *tr = npk_trace_new();
        int bad = run_graph(c, g, device, &in, tr, &out, &nout, &rep);
        npk_run_report_fini(&rep);
        free_outs(out, nout);
        out = NULL;
        nout = 0;
        if (bench_end_trace(c, tr, bad, 1)) goto out;
    }
    rc = 0;
out:
    cli_progress_end();
    free_outs(out, nout);
    free_outs(ref, nref);
    npk_tensor_free(&in);
    npk_graph_free(g);
    free(t);
    free(tc);
    return rc;
}

int bench_onnx_dev(ctx *c) { return bench_onnx(c, c->device); }

/* ---- ONNX: e1 versus v0 on the same quantized model (issue 15 point 4) --------- */

int bench_onnx_e1_v0(ctx *c) {
    const char *model = c->models && c->models->n ? c->models->v[0] : "onnx-zoo/ppocr-cls-qdq-s8";
    char mp[1024], ip[1100];
    snprintf(mp, sizeof mp, "%s/models/%s/model.onnx", c->shared, model);
    snprintf(ip, sizeof ip, "%s/models/%s/test_data_set_0/input_0.pb", c->shared, model);
    npk_graph *g = NULL;
    npk_tensor in = {0}, *o[2] = {NULL, NULL};
    size_t no[2] = {0, 0};
    npk_run_report rep;
    int rc = 1;
    double *t[2] = {calloc((size_t)c->repeat, sizeof(double)), calloc((size_t)c->repeat, sizeof(double))};
    double *cpu[2] = {calloc((size_t)c->repeat, sizeof(double)), calloc((size_t)c->repeat, sizeof(double))};
    const char *const dev[2] = {npk_v0_class.name, npk_e1_class.name};
    if (!t[0] || !t[1] || !cpu[0] || !cpu[1] || npk_graph_load_file(&g, mp) || npk_tensor_load_pb_file(&in, ip)) {
        bench_fail(c, model);
        goto out;
    }
    for (int r = 0; r < c->repeat; r++)
        for (int k = 0; k < 2; k++) {
            bench_progress(c, dev[k], r, c->repeat);
            free_outs(o[k], no[k]);
            o[k] = NULL, no[k] = 0;
            double t0 = bench_now(), c0 = bench_cpu_now();
            if (run_graph(c, g, dev[k], &in, NULL, &o[k], &no[k], &rep)) goto out;
            t[k][r] = (bench_now() - t0) * 1e3;
            cpu[k][r] = (bench_cpu_now() - c0) * 1e3;
            npk_run_report_fini(&rep);
        }
    cli_progress_end();
    int same = no[0] == no[1] && no[0] > 0;
    for (size_t i = 0; same && i < no[0]; i++)
        same = npk_tensor_bytes(&o[0][i]) == npk_tensor_bytes(&o[1][i]) &&
               !memcmp(o[0][i].data, o[1][i].data, npk_tensor_bytes(&o[0][i]));
    if (!same) {
        npk_err(NPK_EDEVICE, "the e1 outputs differ from v0's");
        bench_fail(c, "check");
        goto out;
    }
    char n0[96], n1[96], p0[96], p1[96];
    const char *base = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
    snprintf(n0, sizeof n0, "%s on v0, host time", base);
    snprintf(n1, sizeof n1, "%s on e1, host time", base);
    snprintf(p0, sizeof p0, "%s on v0, host CPU time", base);
    snprintf(p1, sizeof p1, "%s on e1, host CPU time", base);
    bench_add_samples(c, "baseline", "ms", t[0], c->repeat, n0);
    bench_add_samples(c, "npu", "ms", t[1], c->repeat, n1);
    bench_add_ratio(c, "e1 / v0 host time (same model, same outputs)", n1, n0, "lower");
    bench_add_samples(c, "baseline", "ms", cpu[0], c->repeat, p0);
    bench_add_samples(c, "npu", "ms", cpu[1], c->repeat, p1);
    bench_add_ratio(c, "e1 / v0 host CPU time (the machine's load left out)", p1, p0, "lower");
    rc = 0;
out:
    cli_progress_end();
    for (int k = 0; k < 2; k++) free_outs(o[k], no[k]), free(t[k]), free(cpu[k]);
    npk_tensor_free(&in);
    npk_graph_free(g);
    return rc;
}

/* ---- ONNX: npukit's CPU path versus ONNX Runtime (issue 15 point 2, issue 26) --- */

static const char *const onnx_zoo_models[] = {"onnx-zoo/hello-deepa-qdq-s8", "onnx-zoo/ppocr-cls-mobile-v2",
                                              "onnx-zoo/ppocr-cls-qdq-s8",   "onnx-zoo/ppocr-v4-det",
                                              "onnx-zoo/silero-vad-v5",      "cifar10-lenet-int8"};
static const char *const onnx_imagenet_models[] = {"imagenet-mobilenetv2-synthetic-int8",
                                                   "imagenet-resnet50-synthetic-int8"};

/* The ONNX Runtime peer of one model (NULL: unavailable, said once). */
typedef struct ort_side {
    bench_ort *p;
    const char *shortname;
} ort_side;

static void ort_unavailable(ctx *c, ort_side *o, const char *why) {
    if (!c->json) printf("  %-46s %s\n", "ONNX Runtime baseline unavailable:", why);
    bench_ort_close(o->p);
    o->p = NULL;
}

/* One request to ONNX Runtime and the numbers of its reply (key2 may be NULL). 0; 1 when
 * ONNX Runtime refused it and refusal_ok (the baseline is then unavailable for this
 * model, as when onnxruntime-node is missing); -1 when the bench fails (reported). */
static int ort_req(ctx *c, ort_side *o, const char *req, int refusal_ok, const char *key, double *v,
                   const char *key2, double *v2) {
    json_t *j = NULL;
    if (bench_ort_ask(o->p, req, &j)) return bench_fail(c, "ONNX Runtime"), -1;
    const char *e = json_string_value(json_object_get(j, "error"));
    if (e && refusal_ok) {
        char why[512];
        snprintf(why, sizeof why, "ONNX Runtime: %.400s", e);
        json_decref(j);
        ort_unavailable(c, o, why);
        return 1;
    }
    int bad = bench_ort_number(j, req, key, v) || (key2 && bench_ort_number(j, req, key2, v2));
    json_decref(j);
    if (bad) return bench_fail(c, "ONNX Runtime"), -1;
    return 0;
}

/* One warm run of g on the CPU at the pool's current count: wall ms and the calling
 * thread's CPU ms. 0, or the run's error (npukit_failed reports it). */
static int npukit_run1(npk_graph *g, const npk_tensor *in, size_t nin, double *ms, double *cpu_ms) {
    npk_run_opts o = {.device = "cpu"};
    npk_tensor *outs = NULL;
    size_t nouts = 0;
    double t0 = bench_now(), c0 = bench_cpu_now();
    int grc = npk_graph_run(g, &o, in, nin, &outs, &nouts, NULL);
    *ms = (bench_now() - t0) * 1e3, *cpu_ms = (bench_cpu_now() - c0) * 1e3;
    free_outs(outs, nouts);
    return grc;
}

/* The bench's rc after npukit's run failed with grc: a model npukit cannot run yet is
 * skipped (no figure, no failure), any other error fails the bench. */
static int npukit_failed(ctx *c, const char *shortname, int grc) {
    npk_threads_set(0);
    if (grc == -NPK_EUNSUPPORTED) {
        cli_progress_end();
        if (!c->json) printf("  %-46s skipped: %s\n", shortname, npk_errmsg());
        return 0;
    }
    return bench_fail(c, shortname);
}

/* The first inference (issue 26 point 4), repeat times at 1 thread: npukit's fresh load
 * and check of the model, the inputs and the first run (plan, weight packing, shape
 * inference) in tf, each followed by ONNX Runtime's session creation, inputs and first
 * run in tfo (when o->p). 0, or -1 when the bench fails. A model npukit cannot load or
 * run leaves tf short: the warm runs report it. */
static int first_inferences(ctx *c, ort_side *o, const char *dir, double *tf, double *tfo) {
    char mp[1100], ip[1200];
    snprintf(mp, sizeof mp, "%s/model.onnx", dir);
    npk_run_opts ro = {.device = "cpu"};
    npk_threads_set(1);
    for (int r = 0; r < c->repeat; r++) {
        bench_progress(c, o->shortname, 0, c->repeat + 1);
        npk_graph *g1 = NULL;
        npk_tensor in1[8], *outs = NULL;
        size_t nin1 = 0, nouts = 0;
        memset(in1, 0, sizeof in1);
        double t0 = bench_now();
        int bad = npk_graph_load_file(&g1, mp) || npk_graph_check(g1, NULL);
        nin1 = bad ? 0 : npk_graph_n_inputs(g1);
        if (nin1 > 8) nin1 = 8;
        for (size_t i = 0; !bad && i < nin1; i++) {
            snprintf(ip, sizeof ip, "%s/test_data_set_0/input_%zu.pb", dir, i);
            bad = npk_tensor_load_pb_file(&in1[i], ip) != 0;
        }
        int grc = bad ? 0 : npk_graph_run(g1, &ro, in1, nin1, &outs, &nouts, NULL);
        tf[r] = (bench_now() - t0) * 1e3;
        free_outs(outs, nouts);
        for (size_t i = 0; i < 8; i++) npk_tensor_free(&in1[i]);
        npk_graph_free(g1);
        if (bad || grc) break; /* reported by the warm runs */
        if (o->p && ort_req(c, o, "first 1", 1, "first_ms", &tfo[r], NULL, NULL) < 0) {
            npk_threads_set(0);
            return -1;
        }
    }
    npk_threads_set(0);
    cli_progress_end();
    return 0;
}

/* Median of v[0..n) without reordering it. */
static double median_of(const double *v, int n) {
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) return 0;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, bench_dcmp);
    double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}

/* One model: npukit's CPU path (fast kernels), host ms per run of test_data_set_0, and
 * ONNX Runtime's (a node process kept alive, scripts/ort_bench.js) at 1 thread and at all
 * threads (npk_threads_set: the pool of include/npukit/threads.h; ONNX Runtime's
 * intraOpNumThreads). The two peers' runs are interleaved repetition by repetition
 * (npukit first in even repetitions, ONNX Runtime first in odd ones; each timed run
 * right after an untimed one of its own side), so both see the same moments of a shared machine: beside the ratio of the medians, the median (min,
 * max) of the per-repetition ratios. At 1 thread also the speed ratio by CPU time (the
 * calling thread's against the node process's). ratio_out[0]: the 1-thread ratio of the
 * medians, [1]: the median same-repetition ratio (0: no ONNX Runtime figure).
 * Why long: one sequence of passes whose figures share names and arrays; split, the
 * names and arrays would travel through every piece. */
static int bench_onnx_cpu_model(ctx *c, const char *model, double ratio_out[2]) {
    char dir[1024], mp[1100], ip[1200], why[512];
    snprintf(dir, sizeof dir, "%s/models/%s", c->shared, model);
    snprintf(mp, sizeof mp, "%s/model.onnx", dir);
    const char *shortname = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
    npk_graph *g = NULL;
    npk_tensor in[8];
    size_t nin = 0;
    int rc = 1;
    size_t nr = (size_t)c->repeat;
    double *t = calloc(nr, sizeof *t), *tf = calloc(nr, sizeof *tf), *tc = calloc(nr, sizeof *tc),
           *to = calloc(nr, sizeof *to), *tfo = calloc(nr, sizeof *tfo), *toc = calloc(nr, sizeof *toc),
           *q[2] = {calloc(nr, sizeof(double)), calloc(nr, sizeof(double))};
    memset(in, 0, sizeof in);
    ratio_out[0] = ratio_out[1] = 0;
    ort_side o = {NULL, shortname};
    if (!t || !tf || !tc || !to || !tfo || !toc || !q[0] || !q[1]) {
        npk_err(NPK_ENOMEM, "out of memory");
        bench_fail(c, shortname);
        goto out;
    }
    int orc = bench_ort_open(c, dir, &o.p, why, sizeof why);
    if (orc == -2) {
        npk_err(NPK_EIO, "%s", why);
        bench_fail(c, "ONNX Runtime");
        goto out;
    }
    if (orc) ort_unavailable(c, &o, why);
    if (first_inferences(c, &o, dir, tf, tfo)) goto out;
    int have_first_ort = o.p != NULL;
    if (npk_graph_load_file(&g, mp)) {
        bench_fail(c, mp);
        goto out;
    }
    nin = npk_graph_n_inputs(g);
    if (nin > 8) nin = 8;
    for (size_t k = 0; k < nin; k++) {
        snprintf(ip, sizeof ip, "%s/test_data_set_0/input_%zu.pb", dir, k);
        if (npk_tensor_load_pb_file(&in[k], ip)) {
            bench_fail(c, ip);
            goto out;
        }
    }
    char nname[2][80] = {"", ""}, fname[96], cname[96], oname[2][80] = {"", ""}, ofname[96] = "", ocname[96] = "",
         rn[128];
    for (int pass = 0; pass < 2; pass++) {
        int th = pass ? c->threads : 1;
        if (pass && th <= 1) break;
        char req[32];
        snprintf(req, sizeof req, "load %d", th);
        if (o.p && ort_req(c, &o, req, 1, "load_ms", &(double){0}, NULL, NULL) < 0) goto out;
        npk_threads_set(th);
        double ms, cms;
        int grc = npukit_run1(g, in, nin, &ms, &cms); /* warm-up (ONNX Runtime's: in load) */
        /* each side's timed run follows an untimed run of its own: it then starts as in
         * back-to-back runs (its data in the caches, its workers awake), and what the
         * other side left (evicted caches, workers spinning a while after a run) falls
         * on the untimed one; measured in docs/performance.md */
        for (int r = 0; !grc && r < c->repeat; r++) {
            bench_progress(c, shortname, r + 1 + pass * c->repeat, 2 * c->repeat);
            for (int k = 0; !grc && k < 2; k++) {
                if ((k ^ (r & 1)) == 0) {
                    if (o.p) bench_ort_quiesce(o.p); /* ONNX Runtime's workers spin after its run */
                    grc = npukit_run1(g, in, nin, &ms, &cms);
                    if (!grc) grc = npukit_run1(g, in, nin, &t[r], &tc[r]);
                } else if (o.p && (bench_ort_quiesce(NULL), ort_req(c, &o, "run 2", 0, "ms", &to[r], "cpu_ms", &toc[r]) < 0)) {
                    npk_threads_set(0);
                    goto out;
                }
            }
            q[pass][r] = o.p && t[r] > 0 ? to[r] / t[r] : 0;
        }
        if (grc) {
            rc = npukit_failed(c, shortname, grc);
            goto out;
        }
        npk_threads_set(0);
        cli_progress_end();
        c->cur_threads = th;
        snprintf(nname[pass], sizeof nname[pass], "%s: npukit CPU, %d thread%s", shortname, th, th == 1 ? "" : "s");
        bench_add_samples(c, "npu", "ms", t, c->repeat, nname[pass]);
        if (!pass) {
            snprintf(fname, sizeof fname, "%s: npukit first inference (load, inputs, first run), 1 thread", shortname);
            bench_add_samples(c, "npu", "ms", tf, c->repeat, fname);
            snprintf(cname, sizeof cname, "%s: npukit CPU, 1 thread, CPU time", shortname);
            bench_add_samples(c, "npu", "ms", tc, c->repeat, cname);
        }
        if (!o.p) continue;
        snprintf(oname[pass], sizeof oname[pass], "%s: baseline ONNX Runtime, %d thread%s", shortname, th,
                 th == 1 ? "" : "s");
        bench_add_samples(c, "baseline", "ms", to, c->repeat, oname[pass]);
        if (!pass && have_first_ort) {
            snprintf(ofname, sizeof ofname, "%s: baseline ONNX Runtime session creation + first run, 1 thread",
                     shortname);
            bench_add_samples(c, "baseline", "ms", tfo, c->repeat, ofname);
        }
        if (!pass) {
            snprintf(ocname, sizeof ocname, "%s: baseline ONNX Runtime, 1 thread, CPU time (node process)", shortname);
            bench_add_samples(c, "baseline", "ms", toc, c->repeat, ocname);
        }
    }
    if (ofname[0]) {
        snprintf(rn, sizeof rn, "%s: npukit / ONNX Runtime first inference time", shortname);
        bench_add_ratio(c, rn, fname, ofname, "lower");
    }
    for (int pass = 0; pass < 2; pass++) {
        if (!oname[pass][0] || !nname[pass][0]) continue;
        int th = pass ? c->threads : 1;
        if (pass) {
            snprintf(rn, sizeof rn, "%s: npukit (1 thread) / ONNX Runtime %d threads", shortname, th);
            bench_add_ratio(c, rn, oname[1], nname[0], "higher");
        }
        /* speed ratio = ORT time / npukit time: >= 0.5 is issue 15's goal, 1.0 issue 26's */
        snprintf(rn, sizeof rn, "%s: npukit / ONNX Runtime speed, equal threads (%d)", shortname, th);
        bench_add_ratio(c, rn, oname[pass], nname[pass], "higher");
        const figure *f = bench_find_fig(c, rn);
        if (f && !pass) ratio_out[0] = f->med;
        if (!pass) ratio_out[1] = median_of(q[0], c->repeat);
        snprintf(rn, sizeof rn, "%s: npukit / ONNX Runtime speed, same repetition (%d)", shortname, th);
        bench_add_samples(c, "ratio", "x", q[pass], c->repeat, rn);
        c->figs[c->nfigs - 1].better = "higher";
        if (!pass && ocname[0]) {
            snprintf(rn, sizeof rn, "%s: npukit / ONNX Runtime speed, CPU time, 1 thread", shortname);
            bench_add_ratio(c, rn, ocname, cname, "higher");
        }
    }
    rc = 0;
out:
    cli_progress_end();
    bench_ort_close(o.p);
    for (size_t k = 0; k < 8; k++) npk_tensor_free(&in[k]);
    npk_graph_free(g);
    free(t), free(tf), free(tc), free(to), free(tfo), free(toc), free(q[0]), free(q[1]);
    return rc;
}

static int bench_onnx_cpu_set(ctx *c, const char *const *models, size_t n) {
    int rc = 0, have = 0;
    double logsum[2] = {0, 0}, worst[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        double r[2];
        const char *base = strrchr(models[i], '/') ? strrchr(models[i], '/') + 1 : models[i];
        int want = !c->models || !c->models->n;
        for (size_t k = 0; c->models && k < c->models->n; k++) want |= !strcmp(c->models->v[k], base);
        if (!want) continue;
        if (bench_onnx_cpu_model(c, models[i], r)) rc = 1;
        else if (r[0] > 0 && r[1] > 0) {
            for (int k = 0; k < 2; k++) {
                logsum[k] += log(r[k]);
                worst[k] = have ? (r[k] < worst[k] ? r[k] : worst[k]) : r[k];
            }
            have++;
        }
    }
    if (have) {
        double gm = exp(logsum[0] / have);
        bench_add_fig(c, "ratio", "x", gm, gm, gm, 1, "geometric mean npukit / ONNX Runtime speed, 1 thread (%d models)", have);
        c->figs[c->nfigs - 1].better = "higher";
        bench_add_fig(c, "ratio", "x", worst[0], worst[0], worst[0], 1, "lowest npukit / ONNX Runtime speed, 1 thread");
        c->figs[c->nfigs - 1].better = "higher";
        char name[128];
        snprintf(name, sizeof name, "geometric mean npukit / ONNX Runtime speed, same repetition, 1 thread (%d models)",
                 have);
        bench_add_derived(c, exp(logsum[1] / have), "higher", "of the models' same-repetition medians", name);
        bench_add_derived(c, worst[1], "higher", "the lowest model's same-repetition median",
                          "lowest npukit / ONNX Runtime speed, same repetition, 1 thread");
    }
    return rc;
}

int bench_onnx_cpu(ctx *c) {
    return bench_onnx_cpu_set(c, onnx_zoo_models, sizeof onnx_zoo_models / sizeof onnx_zoo_models[0]);
}
int bench_onnx_cpu_imagenet(ctx *c) {
    return bench_onnx_cpu_set(c, onnx_imagenet_models, sizeof onnx_imagenet_models / sizeof onnx_imagenet_models[0]);
}
