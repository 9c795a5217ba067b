// SPDX-License-Identifier: MIT
/* Dynamic shapes (issue 14): a shape subgraph as exporters write it
 * (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) is folded at inference,
 * so the integer product after the Reshape has a known shape and runs on the
 * device; the result equals the CPU reference's. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/onnx_build.h"
#include "npukit/graph.h"

int main(void) {
    ob_model *m = ob_new(13);
    int64_t dx[3] = {2, 3, 8}, dw[2] = {8, 5}, one[1] = {1};
    ob_input(m, "x", NPK_DT_INT8, 3, dx);
    int8_t w[40];
    for (int i = 0; i < 40; i++) w[i] = (int8_t)(i * 7 % 13 - 6);
    int64_t idx = 2, minus1 = -1;
    ob_init(m, "w", NPK_DT_INT8, 2, dw, w);
    ob_init(m, "i2", NPK_DT_INT64, 0, NULL, &idx);
    ob_init(m, "ax0", NPK_DT_INT64, 1, one, (int64_t[]){0});
    ob_init(m, "m1", NPK_DT_INT64, 1, one, &minus1);
    ob_node(m, "", "Shape", "shape", "x", "s");
    ob_node(m, "", "Gather", "last", "s,i2", "k");
    ob_node(m, "", "Unsqueeze", "k1", "k,ax0", "kv");
    Onnx__NodeProto *cat = ob_node(m, "", "Concat", "cat", "m1,kv", "shp");
    ob_attr_i(m, cat, "axis", 0);
    ob_node(m, "", "Reshape", "flat", "x,shp", "x2");
    ob_node(m, "", "MatMulInteger", "mm", "x2,w", "y");
    ob_output(m, "y", NPK_DT_INT32, -1, NULL);
    uint8_t *buf;
    size_t len;
    CHECK_EQ(ob_save(m, &buf, &len), 0);
    npk_graph *g = NULL;
    CHECK_EQ(npk_graph_load(&g, buf, len), 0);
    npk_tensor in;
    CHECK_EQ(npk_tensor_alloc(&in, "x", NPK_DT_INT8, 3, dx), 0);
    for (int i = 0; i < 48; i++) ((int8_t *)in.data)[i] = (int8_t)(i * 5 % 11 - 5);
    npk_tensor *ref = NULL, *out = NULL;
    size_t nref = 0, nout = 0;
    CHECK_EQ(npk_graph_run(g, NULL, &in, 1, &ref, &nref, NULL), 0);
    npk_run_opts o = {.device = "v0"};
    npk_run_report rep;
    CHECK_EQ(npk_graph_run(g, &o, &in, 1, &out, &nout, &rep), 0);
    CHECK(ref && out && ref[0].rank == 2 && ref[0].dims[0] == 6 && ref[0].dims[1] == 5);
    CHECK(ref && out && !memcmp(ref[0].data, out[0].data, 6 * 5 * 4));
    int on_dev = 0;
    for (size_t i = 0; i < rep.n_nodes; i++)
        if (!strcmp(rep.nodes[i].op, "MatMulInteger")) on_dev = rep.nodes[i].place == NPK_PLACE_DEVICE;
    CHECK(on_dev); /* before folding: "shape depends on run-time data", on the CPU */
    npk_run_report_fini(&rep);
    if (ref) {
        npk_tensor_free(&ref[0]);
        free(ref);
    }
    if (out) {
        npk_tensor_free(&out[0]);
        free(out);
    }
    npk_tensor_free(&in);
    npk_graph_free(g);
    free(buf);
    ob_free(m);
    return CHECK_DONE();
}
