/* Compiled models (.npkb, docs/npkb.md): the container round-trips, every
 * truncation and every single-byte change is refused with a clear error, the
 * version is checked, and a run is checked against the compiled plan. */
#include <stdlib.h>

#include "check.h"
#include "npukit/graph.h"
#include "npukit/npkb.h"

int main(void) {
    uint8_t *onnx = NULL;
    size_t len = 0;
    FILE *f = fopen(NPUKIT_SHARED_DIR "/models/cifar10-lenet-int8/model.onnx", "rb");
    CHECK(f != NULL);
    if (!f) return CHECK_DONE();
    onnx = malloc(1 << 20);
    len = fread(onnx, 1, 1 << 20, f);
    fclose(f);
    uint8_t *b;
    size_t bl;
    CHECK_EQ(npk_npkb_compile(onnx, len, "cpu", &b, &bl), -NPK_EINVAL);
    CHECK_EQ(npk_npkb_compile(onnx, len, "v0", &b, &bl), 0);
    npk_npkb *k;
    CHECK_EQ(npk_npkb_open(&k, b, bl), 0);
    CHECK_STR(npk_npkb_device(k), "v0");
    /* the run of the embedded graph matches the plan */
    npk_graph *g;
    CHECK_EQ(npk_npkb_graph(k, &g), 0);
    npk_tensor in;
    CHECK_EQ(npk_graph_random_input(g, 0, 7, &in), 0);
    npk_tensor *outs = NULL;
    size_t no = 0;
    npk_run_report rep = {0};
    npk_run_opts o = {.device = "v0"};
    CHECK_EQ(npk_graph_run(g, &o, &in, 1, &outs, &no, &rep), 0);
    CHECK_EQ(npk_npkb_check_run(k, &rep), 0);
    /* another device's run differs from the plan */
    npk_run_report rep2 = {0};
    npk_tensor *outs2 = NULL;
    size_t no2 = 0;
    npk_run_opts o2 = {.device = "cpu"};
    CHECK_EQ(npk_graph_run(g, &o2, &in, 1, &outs2, &no2, &rep2), 0);
    CHECK(npk_npkb_check_run(k, &rep2) != 0);
    for (size_t i = 0; i < no; i++) npk_tensor_free(&outs[i]);
    for (size_t i = 0; i < no2; i++) npk_tensor_free(&outs2[i]);
    free(outs);
    free(outs2);
    npk_run_report_fini(&rep);
    npk_run_report_fini(&rep2);
    npk_tensor_free(&in);
    npk_graph_free(g);
    npk_npkb_free(k);
    /* every truncation is refused */
    int bad = 0;
    for (size_t n = 0; n < bl; n += (n < 64 ? 1 : 997)) {
        npk_npkb *t = NULL;
        if (!npk_npkb_open(&t, b, n)) bad++, npk_npkb_free(t);
    }
    CHECK_EQ(bad, 0);
    /* every changed byte is refused (a sample across the file; all of the header) */
    uint8_t *c = malloc(bl);
    memcpy(c, b, bl);
    bad = 0;
    for (size_t i = 0; i < bl; i += (i < 64 ? 1 : 211)) {
        c[i] ^= 0x40;
        npk_npkb *t = NULL;
        if (!npk_npkb_open(&t, c, bl)) bad++, npk_npkb_free(t);
        c[i] ^= 0x40;
    }
    CHECK_EQ(bad, 0);
    c[5000] ^= 1;
    CHECK_EQ(npk_npkb_open(&k, c, bl), -NPK_EFORMAT);
    CHECK(strstr(npk_errmsg(), "checksum mismatch") != NULL);
    c[5000] ^= 1;
    c[4] = 2; /* a future version */
    CHECK_EQ(npk_npkb_open(&k, c, bl), -NPK_EFORMAT);
    CHECK(strstr(npk_errmsg(), "version 2") != NULL);
    free(c);
    free(b);
    free(onnx);
    return CHECK_DONE();
}
