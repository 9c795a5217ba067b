// SPDX-License-Identifier: MIT
/* libFuzzer target: ONNX model files (npk_graph_load, the importer behind
 * `npu run` and `npu onnx-test`) and serialized TensorProto files
 * (npk_tensor_load_pb, test data sets). The first byte picks which (even:
 * model, odd: tensor); the rest is the file.
 *
 * A model the importer accepts is checked (npk_graph_check) and, when it is
 * small (at most 16 nodes, every input fully declared with at most 4096
 * elements), run once on the CPU reference with deterministic random
 * inputs: the importer must refuse everything the runtime cannot index
 * safely, and a run either succeeds or fails with a message. A tensor the
 * loader accepts is saved again and reloaded: the same dtype, shape and
 * bytes. */
#include "npukit/graph.h"
#include "npukit/npu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void need_msg(const char *what, int rc) {
    if (rc > 0 || !npk_errmsg()[0]) {
        fprintf(stderr, "%s failed (%d) without a message\n", what, rc);
        abort();
    }
}

static void fuzz_tensor(const uint8_t *data, size_t size) {
    npk_tensor t;
    memset(&t, 0, sizeof t);
    int rc = npk_tensor_load_pb(&t, data, size);
    if (rc) {
        need_msg("tensor_load_pb", rc);
        npk_tensor_free(&t);
        return;
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    if (npk_tensor_save_pb(&t, &buf, &len) == 0) {
        npk_tensor u;
        memset(&u, 0, sizeof u);
        if (npk_tensor_load_pb(&u, buf, len)) {
            fprintf(stderr, "a saved tensor does not load again: %s\n", npk_errmsg());
            abort();
        }
        if (u.dtype != t.dtype || u.rank != t.rank || npk_tensor_numel(&u) != npk_tensor_numel(&t)) abort();
        npk_tensor_free(&u);
    }
    free(buf);
    npk_tensor_free(&t);
}

static void fuzz_model(const uint8_t *data, size_t size) {
    npk_graph *g = NULL;
    int rc = npk_graph_load(&g, data, size);
    if (rc) {
        need_msg("graph_load", rc);
        if (g) abort();
        return;
    }
    if (npk_graph_check(g, NULL) == 0 && npk_graph_n_nodes(g) <= 16) {
        size_t n = npk_graph_n_inputs(g);
        int small = n <= 8;
        for (size_t i = 0; i < n && small; i++) {
            const npk_value_desc *v = npk_graph_input(g, i);
            int64_t numel = 1;
            if (v->rank < 0) small = 0;
            for (int k = 0; k < v->rank && small; k++) {
                if (v->dims[k] < 0 || v->dims[k] > 4096) small = 0;
                else numel *= v->dims[k];
                if (numel > 4096) small = 0;
            }
        }
        if (small) {
            npk_tensor *in = calloc(n ? n : 1, sizeof *in);
            size_t made = 0;
            int ok = in != NULL;
            for (; ok && made < n; made++)
                if (npk_graph_random_input(g, made, 1, &in[made])) ok = 0;
            if (ok) {
                npk_tensor *out = NULL;
                size_t nout = 0;
                npk_run_opts o = {.device = "cpu"};
                rc = npk_graph_run(g, &o, in, n, &out, &nout, NULL);
                if (rc) need_msg("graph_run", rc);
                for (size_t i = 0; out && i < nout; i++) npk_tensor_free(&out[i]);
                free(out);
            }
            for (size_t i = 0; in && i < made; i++) npk_tensor_free(&in[i]);
            free(in);
        }
    }
    npk_graph_free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (data[0] & 1) fuzz_tensor(data + 1, size - 1);
    else fuzz_model(data + 1, size - 1);
    return 0;
}
