// SPDX-License-Identifier: MIT
/* npu bench, report-cost: the cost of npu run's --report and --trace. */
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

/* Run this npu (/proc/self/exe) with argv, output to /dev/null; host wall and
 * CPU (user + system) seconds of the child. Returns its exit status or -1. */
static int run_self(char *const *argv, double *wall, double *cpu) {
    fflush(stdout);
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        int dn = open("/dev/null", O_WRONLY);
        if (dn >= 0) dup2(dn, 1), dup2(dn, 2);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    if (pid < 0) return -1;
    int st = 0;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0) return -1;
    *wall = now() - t0;
    *cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `npu run` of ResNet-50 (int8, batch 4) on v0 plainly, with --report and
 * with --trace FILE, the three interleaved per repetition so that the
 * machine's load hits them alike; wall and CPU time per variant and the
 * ratios to the plain run (goal: <= 1.10). --model picks another model. */
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
    static const char *const what[3] = {"plain", "--report", "--trace FILE"};
    double *w[3], *u[3];
    int rc = 0;
    for (int k = 0; k < 3; k++) {
        w[k] = calloc((size_t)c->repeat, sizeof(double));
        u[k] = calloc((size_t)c->repeat, sizeof(double));
        if (!w[k] || !u[k]) rc = 1;
    }
    for (int r = 0; !rc && r < c->repeat; r++)
        for (int k = 0; !rc && k < 3; k++) {
            progress(c, what[k], r * 3 + k, c->repeat * 3);
            char *argv[12] = {"npu", "run", mp, "--device", (char *)npk_v0_class.name, "--input", ip, NULL, NULL, NULL};
            if (k == 1) argv[7] = "--report";
            if (k == 2) argv[7] = "--trace", argv[8] = tp;
            if (run_self(argv, &w[k][r], &u[k][r]) != 0) {
                npk_err(NPK_EIO, "npu run %s --device v0 %s failed", model, what[k]);
                rc = bench_fail(c, model);
            }
            w[k][r] *= 1e3;
            u[k][r] *= 1e3;
        }
    cli_progress_end();
    unlink(tp);
    if (!rc) {
        char wn[3][96], un[3][96];
        for (int k = 0; k < 3; k++) {
            snprintf(wn[k], sizeof wn[k], "npu run --device v0, %s: host wall time", what[k]);
            snprintf(un[k], sizeof un[k], "npu run --device v0, %s: host CPU time", what[k]);
            add_samples(c, k ? "npu" : "baseline", "ms", w[k], c->repeat, wn[k]);
            add_samples(c, k ? "npu" : "baseline", "ms", u[k], c->repeat, un[k]);
        }
        add_ratio(c, "--report / plain, wall time", wn[1], wn[0], "lower");
        add_ratio(c, "--report / plain, CPU time", un[1], un[0], "lower");
        add_ratio(c, "--trace / plain, wall time", wn[2], wn[0], "lower");
        add_ratio(c, "--trace / plain, CPU time", un[2], un[0], "lower");
    }
    for (int k = 0; k < 3; k++) free(w[k]), free(u[k]);
    return rc;
}
