// SPDX-License-Identifier: MIT
/* npu bench, report-cost: the cost of npu run's --report and --trace, and of the energy model. */
#include "bench_suite.h"
#include "npukit/v0.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the cost of --report and --trace (issue 15 point 7) ----------------------------- */

/* Run this npu (/proc/self/exe) with argv, output to /dev/null, with
 * NPUKIT_ENERGY=off when energy_off (npk_energy_counting); host wall and CPU
 * (user + system) seconds of the child. Returns its exit status or -1. */
static int run_self(char *const *argv, int energy_off, double *wall, double *cpu) {
    fflush(stdout);
    double t0 = bench_now();
    pid_t pid = fork();
    if (pid == 0) {
        int dn = open("/dev/null", O_WRONLY);
        if (dn >= 0) dup2(dn, 1), dup2(dn, 2);
        if (energy_off) setenv("NPUKIT_ENERGY", "off", 1);
        else unsetenv("NPUKIT_ENERGY");
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    if (pid < 0) return -1;
    int st = 0;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0) return -1;
    *wall = bench_now() - t0;
    *cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `npu run` of ResNet-50 (int8, batch 4) on v0 plainly, with --report, with
 * --trace FILE, without the energy model's work (NPUKIT_ENERGY=off), and
 * timing-only with and without it, the six interleaved per repetition so that
 * the machine's load hits them alike; wall and CPU time per variant and the
 * ratios: --report and --trace to the plain run (goal: <= 1.10), the plain
 * run to the one without energy, functional and timing-only (issue 31's
 * goal: <= 1.03). --model picks another model. */
int bench_report_cost(ctx *c) {
    const char *model = c->models && c->models->n ? c->models->v[0] : "imagenet-resnet50-synthetic-int8";
    char mp[1024], ip[1100], tp[64];
    snprintf(mp, sizeof mp, "%s/models/%s/model.onnx", c->shared, model);
    snprintf(ip, sizeof ip, "%s/models/%s/test_data_set_0/input_0.pb", c->shared, model);
    snprintf(tp, sizeof tp, "/tmp/npu-bench-trace-%d.json", (int)getpid());
    if (access(mp, R_OK)) {
        npk_err(NPK_EIO, "cannot read %s", mp);
        return bench_fail(c, model);
    }
    enum { NV = 6 };
    static const char *const what[NV] = {"plain",         "--report",
                                         "--trace FILE",  "NPUKIT_ENERGY=off",
                                         "--timing-only", "--timing-only, NPUKIT_ENERGY=off"};
    double *w[NV], *u[NV];
    int rc = 0;
    for (int k = 0; k < NV; k++) {
        w[k] = calloc((size_t)c->repeat, sizeof(double));
        u[k] = calloc((size_t)c->repeat, sizeof(double));
        if (!w[k] || !u[k]) rc = 1;
    }
    for (int r = 0; !rc && r < c->repeat; r++)
        for (int k = 0; !rc && k < NV; k++) {
            bench_progress(c, what[k], r * NV + k, c->repeat * NV);
            char *argv[12] = {"npu", "run", mp, "--device", (char *)npk_v0_class.name, "--input", ip, NULL, NULL, NULL};
            if (k == 1) argv[7] = "--report";
            if (k == 2) argv[7] = "--trace", argv[8] = tp;
            if (k >= 4) argv[7] = "--timing-only";
            if (run_self(argv, k == 3 || k == 5, &w[k][r], &u[k][r]) != 0) {
                npk_err(NPK_EIO, "npu run %s --device v0 %s failed", model, what[k]);
                rc = bench_fail(c, model);
            }
            w[k][r] *= 1e3;
            u[k][r] *= 1e3;
        }
    cli_progress_end();
    unlink(tp);
    if (!rc) {
        char wn[NV][96], un[NV][96];
        for (int k = 0; k < NV; k++) {
            snprintf(wn[k], sizeof wn[k], "npu run --device v0, %s: host wall time", what[k]);
            snprintf(un[k], sizeof un[k], "npu run --device v0, %s: host CPU time", what[k]);
            int base = k == 0 || k == 3 || k == 5;
            bench_add_samples(c, base ? "baseline" : "npu", "ms", w[k], c->repeat, wn[k]);
            bench_add_samples(c, base ? "baseline" : "npu", "ms", u[k], c->repeat, un[k]);
        }
        bench_add_ratio(c, "--report / plain, wall time", wn[1], wn[0], "lower");
        bench_add_ratio(c, "--report / plain, CPU time", un[1], un[0], "lower");
        bench_add_ratio(c, "--trace / plain, wall time", wn[2], wn[0], "lower");
        bench_add_ratio(c, "--trace / plain, CPU time", un[2], un[0], "lower");
        bench_add_ratio(c, "energy model: plain / NPUKIT_ENERGY=off, wall time", wn[0], wn[3], "lower");
        bench_add_ratio(c, "energy model: plain / NPUKIT_ENERGY=off, CPU time", un[0], un[3], "lower");
        bench_add_ratio(c, "energy model, timing-only: plain / NPUKIT_ENERGY=off, wall time", wn[4], wn[5], "lower");
        bench_add_ratio(c, "energy model, timing-only: plain / NPUKIT_ENERGY=off, CPU time", un[4], un[5], "lower");
    }
    for (int k = 0; k < NV; k++) free(w[k]), free(u[k]);
    return rc;
}
