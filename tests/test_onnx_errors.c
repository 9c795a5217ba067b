// SPDX-License-Identifier: MIT
/* Import errors a user meets first: a model with unsupported operators names
 * every one of them in one message, with the number of nodes using each and
 * the first node names, and classes training operators. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "npukit/graph.h"
#include "onnx_build.h"

static void test_all_unsupported_named(void) {
    ob_model *m = ob_new(13);
    int64_t d[1] = {4};
    ob_input(m, "x", NPK_DT_FLOAT, 1, d);
    ob_node(m, "com.example", "Frob", "f1", "x", "a");
    ob_node(m, "", "Relu", "r", "a", "b");            /* supported: not listed */
    ob_node(m, "com.example", "Frob", "f2", "b", "c");
    ob_node(m, "", "SoftmaxCrossEntropyLoss", "loss", "c,c", "e");
    ob_node(m, "com.example", "Frob", "f3", "c", "g");
    ob_node(m, "com.example", "Frob", "", "g", "h");   /* unnamed: named after its operator and index */
    ob_output(m, "h", NPK_DT_FLOAT, -1, NULL);
    ob_output(m, "e", NPK_DT_FLOAT, -1, NULL);
    uint8_t *buf;
    size_t len;
    CHECK_EQ(ob_save(m, &buf, &len), 0);
    npk_graph *g = NULL;
    CHECK_EQ(npk_graph_load(&g, buf, len), 0);
    const char *first = NULL;
    CHECK_EQ(npk_graph_check(g, &first), -NPK_EUNSUPPORTED);
    CHECK(first && !strcmp(first, "Frob"));
    const char *want = "2 unsupported operators in 5 nodes: com.example.Frob x4 (nodes 'f1' (index 0), 'f2' (index 2), "
                       "'f3' (index 4) and 1 more); SoftmaxCrossEntropyLoss (training operator) x1 (node 'loss' (index 3))";
    CHECK_STR(npk_errmsg(), want);
    char list[256];
    CHECK_EQ(npk_graph_unsupported_list(g, list, sizeof list), 2);
    CHECK_STR(list, "com.example.Frob, SoftmaxCrossEntropyLoss (training operator)");
    /* running refuses with the same message */
    npk_tensor in, *outs = NULL;
    size_t nouts = 0;
    CHECK_EQ(npk_tensor_alloc(&in, "x", NPK_DT_FLOAT, 1, d), 0);
    CHECK_EQ(npk_graph_run(g, NULL, &in, 1, &outs, &nouts, NULL), -NPK_EUNSUPPORTED);
    CHECK_STR(npk_errmsg(), want);
    npk_tensor_free(&in);
    npk_graph_free(g);
    free(buf);
    ob_free(m);
}

int main(void) {
    test_all_unsupported_named();
    return CHECK_DONE();
}
