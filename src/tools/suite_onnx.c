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
#include <sys/wait.h>
#include <unistd.h>
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

/* ---- ONNX: npukit's CPU path versus ONNX Runtime (issue 15 point 2) ------------ */

/* ONNX Runtime's milliseconds per run on dir (scripts/ort_bench.js through
 * node, `threads` intra-op threads, c->repeat runs after a warm-up): wall time in
 * ms[0..repeat), the node process's CPU time in cpu_ms. Returns 0, or -1 when node or onnxruntime-node is
 * missing or ONNX Runtime refused the model (*why says which). */
static int ort_times(const ctx *c, const char *dir, int threads, double *ms, double *first_ms, double *cpu_ms,
                     char *why, size_t whylen) {
    const char *ort = getenv("NPUKIT_ORT_DIR");
    char ortdir[1024], cmd[4096];
    if (ort && *ort) snprintf(ortdir, sizeof ortdir, "%s", ort);
    else snprintf(ortdir, sizeof ortdir, "%s/.cache/npukit/ortnode", getenv("HOME") ? getenv("HOME") : ".");
    snprintf(cmd, sizeof cmd, "%s/node_modules/onnxruntime-node/package.json", ortdir);
    if (access(cmd, R_OK)) {
        snprintf(why, whylen, "onnxruntime-node not installed in %.200s (scripts/deps.sh)", ortdir);
        return -1;
    }
    snprintf(cmd, sizeof cmd, "node '%s/scripts/ort_bench.js' '%s' %d %d '%s' 2>/dev/null", c->srcdir, ortdir, threads,
             c->repeat, dir);
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    if (!f) {
        snprintf(why, whylen, "cannot run node");
        return -1;
    }
    static char line[65536];
    int rc = -1;
    snprintf(why, whylen, "node scripts/ort_bench.js printed nothing (is node installed?)");
    while (fgets(line, sizeof line, f)) {
        json_error_t e;
        json_t *j = json_loads(line, 0, &e), *arr = j ? json_object_get(j, "ms") : NULL,
               *fa = j ? json_object_get(j, "first_ms") : NULL, *ca = j ? json_object_get(j, "cpu_ms") : NULL;
        if (j && json_is_array(arr) && (int)json_array_size(arr) == c->repeat && json_is_array(fa) &&
            (int)json_array_size(fa) == c->repeat) {
            for (int r = 0; r < c->repeat; r++) ms[r] = json_number_value(json_array_get(arr, (size_t)r));
            for (int r = 0; r < c->repeat; r++) first_ms[r] = json_number_value(json_array_get(fa, (size_t)r));
            for (int r = 0; r < c->repeat; r++) /* an older script without cpu_ms: 0 (no figure) */
                cpu_ms[r] = json_is_array(ca) ? json_number_value(json_array_get(ca, (size_t)r)) : 0;
            rc = 0;
        } else if (j && json_string_value(json_object_get(j, "error"))) {
            snprintf(why, whylen, "ONNX Runtime: %.300s", json_string_value(json_object_get(j, "error")));
        }
        json_decref(j);
    }
    pclose(f);
    return rc;
}

static const char *const onnx_zoo_models[] = {"onnx-zoo/hello-deepa-qdq-s8", "onnx-zoo/ppocr-cls-mobile-v2",
                                              "onnx-zoo/ppocr-cls-qdq-s8",   "onnx-zoo/ppocr-v4-det",
                                              "onnx-zoo/silero-vad-v5",      "cifar10-lenet-int8"};
static const char *const onnx_imagenet_models[] = {"imagenet-mobilenetv2-synthetic-int8",
                                                   "imagenet-resnet50-synthetic-int8"};

/* npukit's warm runs of g at `threads` threads (npk_threads_set; restored to the default
 * after): wall ms in t, the calling thread's CPU ms in tc (the work at 1 thread). 0, or -1
 * (the run's error, reported as the bench's failure or a skip). */
static int npukit_runs(ctx *c, npk_graph *g, const npk_tensor *in, size_t nin, int threads, const char *shortname,
                       double *t, double *tc, int *rc) {
    npk_run_opts o = {.device = "cpu"};
    npk_threads_set(threads);
    for (int r = -1; r < c->repeat; r++) { /* r = -1: warm-up */
        bench_progress(c, shortname, r + 1, c->repeat + 1);
        npk_tensor *outs = NULL;
        size_t nouts = 0;
        double t0 = bench_now(), c0 = bench_cpu_now();
        int grc = npk_graph_run(g, &o, in, nin, &outs, &nouts, NULL);
        if (grc) {
            npk_threads_set(0);
            if (grc == -NPK_EUNSUPPORTED) { /* a model npukit cannot run yet: no figure, no failure */
                if (!c->json) printf("  %-46s skipped: %s\n", shortname, npk_errmsg());
                *rc = 0;
            } else {
                *rc = bench_fail(c, shortname);
            }
            return -1;
        }
        if (r >= 0) t[r] = (bench_now() - t0) * 1e3, tc[r] = (bench_cpu_now() - c0) * 1e3;
        free_outs(outs, nouts);
    }
    npk_threads_set(0);
    cli_progress_end();
    return 0;
}

/* One model: npukit's CPU path (fast kernels), host ms per run of
 * test_data_set_0, at 1 thread and at all threads (npk_threads_set: the pool
 * of include/npukit/threads.h); ONNX Runtime at the same counts; the speed
 * ratios at equal threads, and at 1 thread also by CPU time (the calling
 * thread's against the node process's: on a shared machine wall time also
 * counts the waits for a core). */
static int bench_onnx_cpu_model(ctx *c, const char *model, double *ratio_out) {
    char dir[1024], mp[1100], ip[1200];
    snprintf(dir, sizeof dir, "%s/models/%s", c->shared, model);
    snprintf(mp, sizeof mp, "%s/model.onnx", dir);
    const char *shortname = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
    npk_graph *g = NULL;
    npk_tensor in[8];
    size_t nin = 0;
    int rc = 1;
    double *t = calloc((size_t)c->repeat, sizeof *t), *tf = calloc((size_t)c->repeat, sizeof *tf),
           *tc = calloc((size_t)c->repeat, sizeof *tc);
    memset(in, 0, sizeof in);
    *ratio_out = 0;
    npk_run_opts o = {.device = "cpu"};
    /* the first inference (issue 26 point 4), repeat times: a fresh load and check of the
     * model, the inputs, the first run (plan, weight packing, shape inference) */
    npk_threads_set(1);
    for (int r = 0; t && tf && tc && r < c->repeat; r++) {
        bench_progress(c, shortname, 0, c->repeat + 1);
        npk_graph *g1 = NULL;
        npk_tensor in1[8], *outs = NULL;
        size_t nin1 = 0, nouts = 0;
        memset(in1, 0, sizeof in1);
        double t0 = bench_now();
        int bad = npk_graph_load_file(&g1, mp) || npk_graph_check(g1, NULL);
        nin1 = bad ? 0 : npk_graph_n_inputs(g1);
        if (nin1 > 8) nin1 = 8;
        for (size_t k = 0; !bad && k < nin1; k++) {
            snprintf(ip, sizeof ip, "%s/test_data_set_0/input_%zu.pb", dir, k);
            bad = npk_tensor_load_pb_file(&in1[k], ip) != 0;
        }
        int grc = bad ? 0 : npk_graph_run(g1, &o, in1, nin1, &outs, &nouts, NULL);
        tf[r] = (bench_now() - t0) * 1e3;
        free_outs(outs, nouts);
        for (size_t k = 0; k < 8; k++) npk_tensor_free(&in1[k]);
        npk_graph_free(g1);
        if (bad || grc) break; /* reported by the warm runs below */
    }
    npk_threads_set(0);
    if (!t || !tf || !tc || npk_graph_load_file(&g, mp)) {
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
                     why[512];
    for (int pass = 0; pass < 2; pass++) {
        int th = pass ? c->threads : 1;
        if (pass && th <= 1) break;
        if (npukit_runs(c, g, in, nin, th, shortname, t, tc, &rc)) goto out;
        c->cur_threads = th;
        snprintf(nname[pass], sizeof nname[pass], "%s: npukit CPU, %d thread%s", shortname, th, th == 1 ? "" : "s");
        bench_add_samples(c, "npu", "ms", t, c->repeat, nname[pass]);
        if (!pass) {
            snprintf(fname, sizeof fname, "%s: npukit first inference (load, inputs, first run), 1 thread", shortname);
            bench_add_samples(c, "npu", "ms", tf, c->repeat, fname);
            snprintf(cname, sizeof cname, "%s: npukit CPU, 1 thread, CPU time", shortname);
            bench_add_samples(c, "npu", "ms", tc, c->repeat, cname);
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        int th = pass ? c->threads : 1;
        if (pass && th <= 1) break;
        bench_progress(c, "onnxruntime", pass, 2);
        if (ort_times(c, dir, th, t, tf, tc, why, sizeof why)) {
            cli_progress_end();
            if (!c->json) printf("  %-46s %s\n", "ONNX Runtime baseline unavailable:", why);
            break;
        }
        cli_progress_end();
        c->cur_threads = th;
        snprintf(oname[pass], sizeof oname[pass], "%s: baseline ONNX Runtime, %d thread%s", shortname, th,
                 th == 1 ? "" : "s");
        bench_add_samples(c, "baseline", "ms", t, c->repeat, oname[pass]);
        if (!pass) {
            snprintf(ofname, sizeof ofname, "%s: baseline ONNX Runtime session creation + first run, 1 thread",
                     shortname);
            bench_add_samples(c, "baseline", "ms", tf, c->repeat, ofname);
            if (tc[0] > 0) {
                snprintf(ocname, sizeof ocname, "%s: baseline ONNX Runtime, 1 thread, CPU time (node process)", shortname);
                bench_add_samples(c, "baseline", "ms", tc, c->repeat, ocname);
            }
        }
    }
    if (ofname[0]) {
        char rn[96];
        snprintf(rn, sizeof rn, "%s: npukit / ONNX Runtime first inference time", shortname);
        bench_add_ratio(c, rn, fname, ofname, "lower");
    }
    if (oname[0][0]) {
        /* speed ratio = ORT time / npukit time: >= 0.5 is issue 15's goal */
        char rn[96];
        snprintf(rn, sizeof rn, "%s: npukit / ONNX Runtime speed, equal threads (1)", shortname);
        bench_add_ratio(c, rn, oname[0], nname[0], "higher");
        const figure *f = bench_find_fig(c, rn);
        if (f) *ratio_out = f->med;
    }
    if (ocname[0]) {
        char rn[96];
        snprintf(rn, sizeof rn, "%s: npukit / ONNX Runtime speed, CPU time, 1 thread", shortname);
        bench_add_ratio(c, rn, ocname, cname, "higher");
    }
    if (oname[1][0]) {
        char rn[96];
        snprintf(rn, sizeof rn, "%s: npukit (1 thread) / ONNX Runtime %d threads", shortname, c->threads);
        bench_add_ratio(c, rn, oname[1], nname[0], "higher");
        if (nname[1][0]) {
            snprintf(rn, sizeof rn, "%s: npukit / ONNX Runtime speed, equal threads (%d)", shortname, c->threads);
            bench_add_ratio(c, rn, oname[1], nname[1], "higher");
        }
    }
    rc = 0;
out:
    cli_progress_end();
    for (size_t k = 0; k < 8; k++) npk_tensor_free(&in[k]);
    npk_graph_free(g);
    free(t), free(tf), free(tc);
    return rc;
}

static int bench_onnx_cpu_set(ctx *c, const char *const *models, size_t n) {
    int rc = 0, have = 0;
    double logsum = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        double r;
        const char *base = strrchr(models[i], '/') ? strrchr(models[i], '/') + 1 : models[i];
        int want = !c->models || !c->models->n;
        for (size_t k = 0; c->models && k < c->models->n; k++) want |= !strcmp(c->models->v[k], base);
        if (!want) continue;
        if (bench_onnx_cpu_model(c, models[i], &r)) rc = 1;
        else if (r > 0) {
            logsum += log(r);
            worst = have++ ? (r < worst ? r : worst) : r;
        }
    }
    if (have) {
        double gm = exp(logsum / have);
        bench_add_fig(c, "ratio", "x", gm, gm, gm, 1, "geometric mean npukit / ONNX Runtime speed, 1 thread (%d models)", have);
        c->figs[c->nfigs - 1].better = "higher";
        bench_add_fig(c, "ratio", "x", worst, worst, worst, 1, "lowest npukit / ONNX Runtime speed, 1 thread");
        c->figs[c->nfigs - 1].better = "higher";
    }
    return rc;
}

int bench_onnx_cpu(ctx *c) {
    return bench_onnx_cpu_set(c, onnx_zoo_models, sizeof onnx_zoo_models / sizeof onnx_zoo_models[0]);
}
int bench_onnx_cpu_imagenet(ctx *c) {
    return bench_onnx_cpu_set(c, onnx_imagenet_models, sizeof onnx_imagenet_models / sizeof onnx_imagenet_models[0]);
}
