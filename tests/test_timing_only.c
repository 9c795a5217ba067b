// SPDX-License-Identifier: MIT
/* Timing-only runs (issue #19 point 3): on every device that takes ONNX nodes,
 * a real model run functionally and timing-only gives exactly the same
 * timing: device cycles, busy cycles, MACs, staged and guest bytes, the
 * partition and per-node cycles, and the whole simulated-clock trace (every
 * device engine event, driver step and counter, byte for byte). Models: the
 * CIFAR-10 LeNet (int8, with its test input) and ResNet-50 conv layers (shapes
 * of data/gemmini-resnet50-layers/measured.csv; e1, a cycle-stepped 64-byte
 * engine, runs two of them cropped to a 4x4 and a 2x2 output; its trace, one
 * event per engine cycle, is compared on the smaller one). The functional run's
 * outputs are checked against the CPU reference, so the comparison is between
 * a correct run and its timing-only twin. */
#include "check.h"
#include "npukit/graph.h"
#include "npukit/tensor.h"
#include "npukit/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    npk_run_report rep;
    char *trace;
    size_t trace_len;
    npk_tensor *outs;
    size_t nout;
} run_t;

static int run(npk_graph *g, const char *dev, int tonly, int traced, const npk_tensor *ins, size_t nin, run_t *r) {
    memset(r, 0, sizeof *r);
    npk_trace *t = dev && traced ? npk_trace_new() : NULL;
    npk_run_opts o = {.device = dev ? dev : "cpu", .trace = t, .timing_only = tonly};
    int rc = npk_graph_run(g, &o, ins, nin, &r->outs, &r->nout, &r->rep);
    if (t) {
        FILE *f = open_memstream(&r->trace, &r->trace_len);
        if (f) {
            npk_trace_write(t, f);
            fclose(f);
        }
        npk_trace_free(t);
    }
    return rc;
}

static void run_free(run_t *r) {
    for (size_t i = 0; i < r->nout; i++) npk_tensor_free(&r->outs[i]);
    free(r->outs);
    free(r->trace);
    npk_run_report_fini(&r->rep);
}

static int same_tensor(const npk_tensor *a, const npk_tensor *b) {
    return a->dtype == b->dtype && npk_tensor_bytes(a) == npk_tensor_bytes(b) && !memcmp(a->data, b->data, npk_tensor_bytes(a));
}

/* traced: compare the traces too (e1's is one event per engine cycle: only for small runs) */
static void compare(const char *what, npk_graph *g, const char *dev, int traced, const npk_tensor *ins, size_t nin) {
    run_t cpu, f, t;
    CHECK_EQ(run(g, NULL, 0, 0, ins, nin, &cpu), 0);
    int rf = run(g, dev, 0, traced, ins, nin, &f), rt = run(g, dev, 1, traced, ins, nin, &t);
    CHECK_EQ(rf, 0);
    CHECK_EQ(rt, 0);
    if (rf || rt) {
        fprintf(stderr, "%s on %s: run failed\n", what, dev);
        goto out;
    }
    /* the functional run is right (CPU reference), so the twin is compared with a correct run */
    CHECK_EQ(f.nout, cpu.nout);
    for (size_t i = 0; i < f.nout && i < cpu.nout; i++) CHECK(same_tensor(&f.outs[i], &cpu.outs[i]));
    CHECK(f.rep.device_cycles > 0);
    CHECK(f.rep.device_macs > 0);
    CHECK_EQ(t.rep.device_cycles, f.rep.device_cycles);
    CHECK_EQ(t.rep.device_busy_cycles, f.rep.device_busy_cycles);
    CHECK_EQ(t.rep.device_macs, f.rep.device_macs);
    CHECK_EQ(t.rep.cpu_macs, f.rep.cpu_macs);
    CHECK_EQ(t.rep.device_hz, f.rep.device_hz);
    CHECK_EQ(t.rep.guest_bytes, f.rep.guest_bytes);
    CHECK_EQ(t.rep.staged_in_bytes, f.rep.staged_in_bytes);
    CHECK_EQ(t.rep.staged_out_bytes, f.rep.staged_out_bytes);
    CHECK_EQ(t.rep.n_nodes, f.rep.n_nodes);
    CHECK_EQ(t.rep.has_energy, f.rep.has_energy);
    CHECK(!memcmp(&t.rep.energy, &f.rep.energy, sizeof f.rep.energy));
    CHECK(!memcmp(&t.rep.area, &f.rep.area, sizeof f.rep.area));
    if (!strcmp(dev, "v0")) CHECK(f.rep.has_energy && npk_energy_total_pj(&f.rep.energy) > 0);
    for (size_t i = 0; i < f.rep.n_nodes && i < t.rep.n_nodes; i++) {
        CHECK_EQ(t.rep.nodes[i].place, f.rep.nodes[i].place);
        CHECK_EQ(t.rep.nodes[i].cycles, f.rep.nodes[i].cycles);
        CHECK_EQ(t.rep.nodes[i].macs, f.rep.nodes[i].macs);
        /* energy (docs/energy.md): bit for bit */
        CHECK_EQ(t.rep.nodes[i].has_energy, f.rep.nodes[i].has_energy);
        CHECK(!memcmp(&t.rep.nodes[i].energy_pj, &f.rep.nodes[i].energy_pj, sizeof(double)));
    }
    /* every event of the simulated-clock trace: engines, driver steps, counters */
    if (traced) {
        CHECK(f.trace_len > 100);
        CHECK(f.trace_len == t.trace_len && f.trace && t.trace && !memcmp(f.trace, t.trace, f.trace_len));
    }
    printf("%s on %s: %llu cycles in both runs%s\n", what, dev, (unsigned long long)f.rep.device_cycles,
           traced ? ", traces equal" : "");
out:
    run_free(&cpu);
    run_free(&f);
    run_free(&t);
}

static void lenet(const char *dev, int traced) {
    npk_graph *g = NULL;
    CHECK_EQ(npk_graph_load_file(&g, NPUKIT_SHARED_DIR "/models/cifar10-lenet-int8/model.onnx"), 0);
    npk_tensor in;
    memset(&in, 0, sizeof in);
    CHECK_EQ(npk_tensor_load_pb_file(&in, NPUKIT_SHARED_DIR "/models/cifar10-lenet-int8/test_data_set_0/input_0.pb"), 0);
    if (g && in.data) compare("lenet", g, dev, traced, &in, 1);
    npk_tensor_free(&in);
    npk_graph_free(g);
}

static void layer(const char *spec, const char *dev, int traced) {
    npk_graph *g = NULL;
    CHECK_EQ(npk_graph_synth_layer(spec, 7, &g), 0);
    if (!g) return;
    size_t nin = npk_graph_n_inputs(g);
    npk_tensor *ins = calloc(nin + 1, sizeof *ins);
    for (size_t i = 0; i < nin; i++) CHECK_EQ(npk_graph_random_input(g, i, 7, &ins[i]), 0);
    compare(spec, g, dev, traced, ins, nin);
    for (size_t i = 0; i < nin; i++) npk_tensor_free(&ins[i]);
    free(ins);
    npk_graph_free(g);
}

int main(void) {
    /* ResNet-50 layers (measured.csv rows 2-4: the first bottleneck; a stage-4 3x3 with stride 2) */
    static const char *const r50[] = {
        "conv:c=64,k=64,p=56,q=56,r=1",           /* conv_2 */
        "conv:c=64,k=64,p=56,q=56,r=3",           /* conv_3 */
        "conv:c=64,k=256,p=56,q=56,r=1",          /* conv_4 */
        "conv:c=256,k=256,h=28,r=3,stride=2",     /* stage 4's first 3x3 */
    };
    static const char *const devs[] = {"v0", "shell"};
    for (size_t d = 0; d < sizeof devs / sizeof devs[0]; d++) {
        lenet(devs[d], 1);
        for (size_t i = 0; i < sizeof r50 / sizeof r50[0]; i++) layer(r50[i], devs[d], 1);
        layer("matmul:m=64,k=2048,n=1000", devs[d], 1); /* fc_54 */
    }
    lenet("e1", 0);
    layer("conv:c=64,k=64,p=4,q=4,r=3", "e1", 0);
    layer("conv:c=64,k=256,p=2,q=2,r=1", "e1", 1);
    printf("%d checks, %d failed\n", check_count, check_failures);
    return check_failures ? 1 : 0;
}
