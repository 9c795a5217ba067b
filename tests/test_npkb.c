// SPDX-License-Identifier: MIT
/* Compiled models (.npkb, docs/npkb.md): the container round-trips, every
 * truncation and every single-byte change is refused with a clear error, the
 * version is checked, a run is checked against the compiled plan, and the
 * stored command stream is what runs: its replay equals the plain run
 * (outputs and cycles), and a stored weight or descriptor changed (with a
 * valid checksum) changes the result or is refused by name. */
#include <stdlib.h>

#include "check.h"
#include "npukit/graph.h"
#include "npukit/npkb.h"
#include "npukit/v0.h"

static uint64_t get64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Offset of a section's payload (and its length), by tag. */
static size_t section(const uint8_t *b, size_t bl, const char *tag, size_t *len) {
    size_t o = 32;
    while (o + 16 <= bl) {
        uint64_t l = get64(b + o + 8);
        if (!memcmp(b + o, tag, 4)) {
            *len = (size_t)l;
            return o + 16;
        }
        o += 16 + (size_t)((l + 7) & ~7ull);
    }
    *len = 0;
    return 0;
}

/* Recompute the CKSM of an edited container (the checksum is not a signature). */
static void reseal(uint8_t *b, size_t bl) {
    size_t cl, c = section(b, bl, "CKSM", &cl);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < c - 16; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    for (int i = 0; i < 8; i++) b[c + (size_t)i] = (uint8_t)(h >> (8 * i));
}

/* Run the container's graph on v0, replaying its stream; 0 or the status. */
static int replay(const uint8_t *b, size_t bl, const npk_tensor *in, npk_tensor **outs, size_t *no, uint64_t *cycles) {
    npk_npkb *k;
    int rc = npk_npkb_open(&k, b, bl);
    if (rc) return rc;
    npk_graph *g;
    if ((rc = npk_npkb_graph(k, &g))) {
        npk_npkb_free(k);
        return rc;
    }
    npk_run_report rep = {0};
    npk_run_opts o = {.device = "v0", .stream = npk_npkb_stream(k)};
    rc = npk_graph_run(g, &o, in, 1, outs, no, &rep);
    if (!rc) rc = npk_npkb_check_run(k, &rep);
    *cycles = rep.device_cycles;
    npk_run_report_fini(&rep);
    npk_graph_free(g);
    npk_npkb_free(k);
    return rc;
}

static void free_outs(npk_tensor *o, size_t n) {
    for (size_t i = 0; i < n; i++) npk_tensor_free(&o[i]);
    free(o);
}

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
    /* the stored stream replayed: the outputs and the cycles of the plain run */
    npk_tensor *ro = NULL;
    size_t rn = 0;
    uint64_t rcyc = 0;
    CHECK_EQ(replay(b, bl, &in, &ro, &rn, &rcyc), 0);
    CHECK_EQ(rn, no);
    CHECK_EQ(rcyc, rep.device_cycles);
    CHECK(rn == no && no == 1 && npk_tensor_numel(&ro[0]) == npk_tensor_numel(&outs[0]) && !memcmp(ro[0].data, outs[0].data, (size_t)npk_tensor_numel(&outs[0]) * npk_dtype_size(outs[0].dtype)));
    free_outs(ro, rn);
    /* a stored weight changed (checksum recomputed): the replay computes with it */
    {
        uint8_t *e = malloc(bl);
        memcpy(e, b, bl);
        size_t cl, c = section(e, bl, "CMDS", &cl);
        CHECK(c != 0 && cl > 64);
        CHECK_EQ(e[c], 1); /* record 0: conv1's weight matrix */
        for (size_t i = 0; i < 64; i++) e[c + 24 + i] ^= 0x55;
        reseal(e, bl);
        uint64_t cy;
        CHECK_EQ(replay(e, bl, &in, &ro, &rn, &cy), 0);
        CHECK(rn == 1 && memcmp(ro[0].data, outs[0].data, (size_t)npk_tensor_numel(&outs[0]) * npk_dtype_size(outs[0].dtype)) != 0);
        free_outs(ro, rn);
        /* a stored descriptor changed: record 1's first MATMUL_S8 reads its B from its A */
        memcpy(e, b, bl);
        size_t r1 = c + 24 + (size_t)((get64(e + c + 16) + 7) & ~7ull);
        CHECK_EQ(e[r1], 2); /* v0 descriptors */
        npk_v0_desc d;
        npk_v0_desc_unpack(e + r1 + 24, &d);
        CHECK_EQ(npk_v0_desc_op(&d), NPK_V0_OP_MATMUL_S8);
        npk_v0_desc_set_addr(&d, NPK_V0_W_B_LO, npk_v0_desc_addr(&d, NPK_V0_W_A_LO));
        npk_v0_desc_pack(&d, e + r1 + 24);
        reseal(e, bl);
        CHECK_EQ(replay(e, bl, &in, &ro, &rn, &cy), 0);
        CHECK(rn == 1 && memcmp(ro[0].data, outs[0].data, (size_t)npk_tensor_numel(&outs[0]) * npk_dtype_size(outs[0].dtype)) != 0);
        free_outs(ro, rn);
        /* a record of the wrong kind for its node is refused by name */
        memcpy(e, b, bl);
        e[r1] = 3;
        reseal(e, bl);
        CHECK_EQ(replay(e, bl, &in, &ro, &rn, &cy), -NPK_EFORMAT);
        CHECK(strstr(npk_errmsg(), "record 1 is shell ring bytes for node 0 where node 0 needs v0 descriptors") != NULL);
        /* a record moved to another node */
        memcpy(e, b, bl);
        e[r1 + 4] = 1;
        reseal(e, bl);
        CHECK_EQ(replay(e, bl, &in, &ro, &rn, &cy), -NPK_EFORMAT);
        CHECK(strstr(npk_errmsg(), "needs v0 descriptors, but") != NULL || strstr(npk_errmsg(), "record 1 is v0 descriptors for node 1") != NULL);
        /* a buffer of the memory plan moved */
        memcpy(e, b, bl);
        size_t gl, gm = section(e, bl, "GMEM", &gl);
        e[gm + 24] ^= 0x10;
        reseal(e, bl);
        CHECK_EQ(replay(e, bl, &in, &ro, &rn, &cy), -NPK_EINVAL);
        CHECK(strstr(npk_errmsg(), "differs from the compiled plan") != NULL);
        free(e);
    }
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
    c[4] = 3; /* a future version */
    CHECK_EQ(npk_npkb_open(&k, c, bl), -NPK_EFORMAT);
    CHECK(strstr(npk_errmsg(), "version 3") != NULL);
    c[4] = 1; /* version 1 had no command stream */
    CHECK_EQ(npk_npkb_open(&k, c, bl), -NPK_EFORMAT);
    CHECK(strstr(npk_errmsg(), "version 1 (this npukit reads version 2; recompile the model)") != NULL);
    free(c);
    free(b);
    free(onnx);
    return CHECK_DONE();
}
