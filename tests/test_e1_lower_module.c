// SPDX-License-Identifier: MIT
/* e1 lowering modules: JSON records run on the device with named tensor
 * references; every rejection names the record and the field and happens
 * before any MMIO. In-process model and (smaller) qtest port. */
#include "check.h"
#include "npukit/e1.h"
#include "npukit/e1_lower.h"

#include <jansson.h>
#include <stdlib.h>

/* Run text; returns the parsed result (NULL on failure). */
static json_t *run(npk_e1 *e, const char *text, int batching) {
    npk_lower_module_opts o = {.batching = batching, .include_golden = 1};
    char *res = NULL;
    int rc = npk_lower_module_run(e, text, &o, &res);
    if (rc) {
        fprintf(stderr, "module failed: %s\n", npk_errmsg());
        return NULL;
    }
    json_t *j = json_loads(res, 0, NULL);
    free(res);
    return j;
}

static json_t *rec_out(json_t *res, size_t i, const char *name) {
    json_t *r = json_array_get(json_object_get(res, "records"), i);
    return json_object_get(json_object_get(json_object_get(r, "outputs"), name), "data");
}

/* A module with references between records, hand-checked values. */
static void test_module(npk_e1 *e) {
    static const char *text =
        "{\"module\":\"m\",\"tensors\":{\"x\":[[1,2,3],[4,5,6]],\"b\":[100,-100]},\"ops\":["
        "{\"name\":\"mm\",\"op\":\"matmul\",\"lhs\":\"x\",\"rhs\":[[1,0],[0,1],[1,1]]},"
        "{\"name\":\"q\",\"op\":\"qkv_projection\",\"input\":[[1,2]],\"packed_weight\":[[1,0,2,0,3,0],[0,1,0,2,0,100]]},"
        "{\"name\":\"ba\",\"op\":\"bias_add\",\"input\":\"q.v\",\"bias\":\"b\"},"
        "{\"name\":\"sm\",\"op\":\"attention_softmax\",\"logits\":[[[[0,-1,-2,-128]]]],\"mask\":[[[[true,true,true,false]]]]},"
        "{\"name\":\"g4\",\"op\":\"matmul\",\"precision\":\"int4\",\"lhs\":[[7,-8]],\"rhs\":[[-8],[7]]}"
        "]}";
    json_t *res = run(e, text, 1);
    CHECK(res != NULL);
    if (!res) return;
    CHECK(json_is_true(json_object_get(res, "all_match")));
    CHECK(json_is_false(json_object_get(res, "cpu_fallback")));
    char *s = json_dumps(rec_out(res, 0, "result"), JSON_COMPACT);
    CHECK_STR(s, "[[4,5],[10,11]]");
    free(s);
    s = json_dumps(rec_out(res, 2, "result"), JSON_COMPACT);
    CHECK_STR(s, "[[103,27]]"); /* v = [3, 127] + [100, -100], saturated */
    free(s);
    /* masked: exp 256, 128, 64 -> sum 448 -> (256*256+224)/448 = 146, 73, 37, 0 */
    s = json_dumps(rec_out(res, 3, "result"), JSON_COMPACT);
    CHECK_STR(s, "[[[[146,73,37,0]]]]");
    free(s);
    s = json_dumps(rec_out(res, 4, "result"), JSON_COMPACT);
    CHECK_STR(s, "[[-112]]"); /* 7*-8 + -8*7 */
    free(s);
    json_t *order = json_object_get(res, "dispatch_order");
    CHECK_EQ(json_array_size(order), 5);
    CHECK_STR(json_string_value(json_object_get(json_array_get(order, 2), "record")), "ba");
    json_t *ev = json_object_get(json_array_get(json_object_get(res, "records"), 0), "evidence");
    CHECK_EQ(json_integer_value(json_object_get(ev, "tile_count")), 1);
    CHECK(json_object_get(json_object_get(ev, "descriptor_dispatches"), "GEMM_S8") != NULL);
    CHECK(json_integer_value(json_object_get(res, "simulated_cycles")) > 0);
    CHECK(json_integer_value(json_object_get(json_object_get(res, "counters"), "PERF_MACS")) == 12 + 12 + 2);
    json_decref(res);
}

/* Each rejection: the message names the record and the field; no MMIO. */
static void reject(npk_e1 *e, const char *text, const char *want1, const char *want2) {
    npk_port *p = npk_e1_port(e);
    uint64_t m0 = npk_port_mmio_count(p);
    char *res = NULL;
    int rc = npk_lower_module_run(e, text, NULL, &res);
    CHECK(rc < 0);
    CHECK(res == NULL);
    CHECK_EQ(npk_port_mmio_count(p), m0);
    const char *msg = npk_errmsg();
    if (!strstr(msg, want1) || (want2 && !strstr(msg, want2))) {
        fprintf(stderr, "rejection message '%s' lacks '%s' / '%s'\n", msg, want1, want2 ? want2 : "");
        CHECK(0);
    }
    CHECK(npk_lower_module_check(text) < 0);
    free(res);
}

static void test_rejections(npk_e1 *e) {
    reject(e, "{\"ops\":[]}", "module is empty", NULL);
    reject(e, "{\"module\":\"x\"}", "field 'ops'", NULL);
    reject(e, "{\"ops\":[{\"name\":\"a\",\"op\":\"silu\",\"input\":[[1]]},{\"name\":\"a\",\"op\":\"silu\",\"input\":[[2]]}]}",
           "record 'a'", "duplicate name");
    reject(e, "{\"ops\":[{\"name\":\"a\",\"op\":\"conv3d\",\"input\":[[1]]}]}", "record 'a'", "unknown op 'conv3d'");
    reject(e, "{\"ops\":[{\"name\":\"a\",\"op\":\"matmul\",\"lhs\":[[300]],\"rhs\":[[1]]}]}", "record 'a' (matmul)",
           "field 'lhs': value 300 at [0][0] is outside int8");
    reject(e, "{\"ops\":[{\"name\":\"a\",\"op\":\"matmul\",\"lhs\":[[1,2]],\"rhs\":[[1]]}]}", "record 'a' (matmul)",
           "field 'rhs': dimension 0 is 1 but must be 2");
    reject(e, "{\"ops\":[{\"name\":\"a\",\"op\":\"matmul\",\"precision\":\"fp32\",\"lhs\":[[1]],\"rhs\":[[1]]}]}",
           "record 'a' (matmul)", "field 'precision': 'fp32' is not supported");
    reject(e, "{\"ops\":[{\"name\":\"a\",\"op\":\"silu\",\"precision\":\"int4\",\"input\":[[1]]}]}", "record 'a' (silu)",
           "field 'precision'");
    reject(e, "{\"ops\":[{\"name\":\"a\",\"op\":\"rope\",\"input\":[[1,2]],\"cos\":[1],\"sin\":[1],\"scale_shift\":40}]}",
           "record 'a' (rope)", "field 'scale_shift': 40 is outside 0..31");
    reject(e, "{\"ops\":[{\"name\":\"a\",\"op\":\"matmul\",\"lhs\":[[1]],\"rhs\":[[1]],\"bogus\":1}]}", "record 'a'",
           "field 'bogus': not a field");
    reject(e, "{\"ops\":[{\"name\":\"a\",\"op\":\"matmul\",\"lhs\":[[1]]}]}", "record 'a'", "field 'rhs': missing");
    reject(e, "{\"ops\":[{\"name\":\"a\",\"op\":\"matmul\",\"lhs\":\"nope\",\"rhs\":[[1]]}]}", "record 'a'",
           "field 'lhs': 'nope' names no module tensor");
    reject(e, "{\"ops\":[{\"name\":\"a\",\"op\":\"matmul\",\"lhs\":[[1,2],[3]],\"rhs\":[[1]]}]}", "record 'a'",
           "not rectangular");
    reject(e, "{\"ops\":[{\"name\":\"a\",\"op\":\"matmul\",\"lhs\":[[1.5]],\"rhs\":[[1]]}]}", "record 'a'",
           "must be integers");
    reject(e, "{\"ops\":[{\"name\":\"a\",\"op\":\"matmul\",\"lhs\":[[1]],\"rhs\":[[1]]", "JSON line", NULL);
    reject(e, "[1,2]", "top level", NULL);
    /* an int32 accumulator fed into an int8 input: caught by the golden pass, before any MMIO */
    reject(e,
           "{\"ops\":[{\"name\":\"mm\",\"op\":\"matmul\",\"lhs\":[[100,100]],\"rhs\":[[100],[100]]},"
           "{\"name\":\"s\",\"op\":\"silu\",\"input\":\"mm\"}]}",
           "record 's' (silu)", "field 'input': value 20000");
    /* a later record's error: nothing of the earlier records ran either */
    reject(e,
           "{\"ops\":[{\"name\":\"ok\",\"op\":\"silu\",\"input\":[[1]]},"
           "{\"name\":\"bad\",\"op\":\"kv_cache_update\",\"key_cache\":[[[[1],[2]]]],\"value_cache\":[[[[1],[2]]]],"
           "\"new_key\":[[[[3]]]],\"new_value\":[[[[3]]]],\"cache_lengths\":[[2]]}]}",
           "record 'bad' (kv_cache_update)", "exceeds the cache capacity");
    reject(e,
           "{\"ops\":[{\"name\":\"sm\",\"op\":\"attention_softmax\",\"logits\":[[[[127,-2]]]]}]}",
           "record 'sm'", "spread");
    reject(e, "{\"ops\":[{\"name\":\"g\",\"op\":\"grouped_conv2d\",\"input\":[[[[1,2,3,4]]]],\"filter\":[[[[1]]]],\"groups\":1}]}",
           "record 'g' (grouped_conv2d)", "field 'groups': 1 is outside 2..");
    reject(e, "{\"ops\":[{\"name\":\"c\",\"op\":\"conv2d\",\"input\":[[[[1]]]],\"filter\":[[[[1]]]],\"padding\":\"SAME\"}]}",
           "record 'c' (conv2d)", "field 'padding'");
    reject(e, "{\"ops\":[{\"name\":\"c\",\"op\":\"conv2d\",\"input\":[[[[1]]]],\"filter\":[[[[1]]]],\"strides\":[2,2]}]}",
           "record 'c' (conv2d)", "only stride 1");
    reject(e, "{\"ops\":[{\"name\":\"f\",\"op\":\"fp16_matmul\",\"lhs\":[[31744]],\"rhs\":[[15360]]}]}",
           "record 'f' (fp16_matmul)", "NaN/Inf");
    reject(e, "{\"op\":\"matmul\",\"lhs\":[[1]],\"rhs\":[[1]],\"ops\":[]}", "not both", NULL);
    reject(e, "{\"ops\":[{\"name\":\"a.b\",\"op\":\"silu\",\"input\":[[1]]}]}", "field 'name'", NULL);
}

/* A single record (no "ops") and every operator through the module layer. */
static void test_all_ops(npk_e1 *e, int small) {
    json_t *res = run(e, "{\"op\":\"gelu\",\"input\":[[-128,-1,0,1,127]]}", 1);
    CHECK(res && json_is_true(json_object_get(res, "all_match")));
    if (res) {
        char *s = json_dumps(rec_out(res, 0, "result"), JSON_COMPACT);
        CHECK_STR(s, "[[0,-1,0,0,127]]"); /* x=1: s=1, sig=256-64=192, 192>>8=0 */
        free(s);
        json_decref(res);
    }
    static const char *mod =
        "{\"tensors\":{\"x\":[[1,-2,3,-4],[5,6,-7,8],[9,-10,11,12]],\"w\":[[1,2,3,4],[5,6,7,8],[-1,-2,-3,-4],[2,2,2,2]],"
        "\"v4\":[[[[1,2],[3,4],[5,6]]]]},\"ops\":["
        "{\"name\":\"bm\",\"op\":\"batch_matmul\",\"lhs\":[[[[1,2],[3,4]]],[[[5,6],[7,8]]]],\"rhs\":[[[[1],[1]]],[[[2],[2]]]]},"
        "{\"name\":\"sp\",\"op\":\"sparse_int4_matmul\",\"lhs\":[[1,2,3,4,5]],\"rhs_nonzero\":[[[1,2,3,4]]],\"rhs_positions\":[[[0,3,0,1]]]},"
        "{\"name\":\"gs\",\"op\":\"group_scaled_int4_matmul\",\"lhs\":[[1,2,3]],\"rhs\":[[1],[2],[3]],\"scales_q8_8\":[[256],[-128]],\"group_size\":2},"
        "{\"name\":\"i2\",\"op\":\"int2_matmul\",\"lhs\":[[1,-2,1]],\"rhs\":[[1],[-2],[-1]]},"
        "{\"name\":\"bn\",\"op\":\"bitnet_matmul\",\"lhs\":[[1,-1,0]],\"rhs\":[[1],[1],[1]]},"
        "{\"name\":\"f8\",\"op\":\"fp8_matmul\",\"lhs\":[[56,64]],\"rhs\":[[64],[56]]},"
        "{\"name\":\"h\",\"op\":\"fp16_matmul\",\"lhs\":[[15360,14336]],\"rhs\":[[16384],[49664]]},"
        "{\"name\":\"bf\",\"op\":\"bf16_matmul\",\"lhs\":[[16256]],\"rhs\":[[16384]]},"
        "{\"name\":\"cv\",\"op\":\"conv2d\",\"input\":[[[[1],[2]],[[3],[4]]]],\"filter\":[[[[1]],[[1]]],[[[1]],[[1]]]]},"
        "{\"name\":\"dw\",\"op\":\"depthwise_conv2d\",\"input\":[[[[1,2]]]],\"filter\":[[[[3],[4]]]]},"
        "{\"name\":\"gc\",\"op\":\"grouped_conv2d\",\"input\":[[[[1,2,3,4]]]],\"filter\":[[[[1,2],[3,4]]]],\"groups\":2},"
        "{\"name\":\"rp\",\"op\":\"rope\",\"input\":[[64,32]],\"cos\":[64],\"sin\":[32]},"
        "{\"name\":\"rn\",\"op\":\"rmsnorm\",\"input\":[[3,4]],\"weight\":[64,64]},"
        "{\"name\":\"sl\",\"op\":\"silu\",\"input\":\"x\"},"
        "{\"name\":\"ml\",\"op\":\"mlp\",\"input\":\"x\",\"up_weight\":\"w\",\"down_weight\":\"w\",\"requant_shift\":2},"
        "{\"name\":\"sw\",\"op\":\"swiglu\",\"input\":\"x\",\"up_weight\":\"w\",\"gate_weight\":\"w\",\"down_weight\":\"w\",\"activation\":\"silu\",\"gate_shift\":4},"
        "{\"name\":\"qk\",\"op\":\"attention_qk\",\"query\":[[[[1,2],[3,4]]]],\"key\":[[[[1,0],[0,1],[1,1]]]]},"
        "{\"name\":\"av\",\"op\":\"attention_av\",\"attention\":\"qk\",\"value\":\"v4\"},"
        "{\"name\":\"at\",\"op\":\"attention\",\"query\":[[[[1,2],[3,4]]]],\"key\":[[[[1,0],[0,1],[1,1]]]],\"value\":\"v4\",\"mask_mode\":\"causal\"},"
        "{\"name\":\"aw\",\"op\":\"attention\",\"query\":[[[[1,2],[3,4]]]],\"key\":[[[[1,0],[0,1],[1,1]]]],\"value\":\"v4\",\"mask_mode\":\"sliding_window\",\"mask_window\":2},"
        "{\"name\":\"kv\",\"op\":\"kv_cache_update\",\"key_cache\":[[[[1,2],[0,0]]]],\"value_cache\":[[[[3],[0]]]],\"new_key\":[[[[5,6]]]],\"new_value\":[[[[7]]]],\"cache_lengths\":[[1]]},"
        "{\"name\":\"da\",\"op\":\"decode_attention\",\"query\":[[[[1,2]]]],\"key_cache\":[[[[1,2],[0,0],[0,0]]]],\"value_cache\":[[[[3],[0],[0]]]],\"new_key\":[[[[5,6]]]],\"new_value\":[[[[7]]]],\"cache_lengths\":[[1]],\"cache_window\":8},"
        "{\"name\":\"tb\",\"op\":\"transformer_block\",\"input\":[[1,2],[3,4]],\"attention\":[[[[1,0],[0,1]]]],\"value\":[[[[1,2],[3,4]]]],\"attention_bias\":[1,1],\"mlp_up_weight\":[[1,0],[0,1]],\"mlp_down_weight\":[[1,0],[0,1]]},"
        "{\"name\":\"db\",\"op\":\"modern_decoder_block\",\"input\":[[10,-20],[30,40]],\"norm1_weight\":[64,64],\"norm2_weight\":[64,64],"
        "\"packed_qkv_weight\":[[1,2,3,4,5,6],[-1,2,-3,4,-5,6]],\"attention_bias\":[1,2],\"cos\":[100],\"sin\":[50],"
        "\"swiglu_up_weight\":[[1,2],[3,4]],\"swiglu_gate_weight\":[[4,3],[2,1]],\"swiglu_down_weight\":[[1,0],[0,1]],"
        "\"attention_mask_mode\":\"causal\",\"projection_shift\":2,\"swiglu_gate_shift\":6}"
        "]}";
    res = run(e, mod, !small);
    CHECK(res != NULL);
    if (!res) return;
    CHECK(json_is_true(json_object_get(res, "all_match")));
    struct {
        size_t i;
        const char *out, *want;
    } hand[] = {
        {0, "result", "[[[[3],[7]]],[[[22],[30]]]]"},
        {1, "result", "[[24]]"},
        {2, "result", "[[128]]"},
        {3, "result", "[[4]]"},   /* 1 + 4 - 1 */
        {4, "result", "[[0]]"},   /* 1 - 1 + 0 */
        {5, "result", "[[1024]]"},
        {6, "result", "[[128]]"},
        {7, "result", "[[512]]"},
        {8, "result", "[[[[10]]]]"},
        {9, "result", "[[[[3,8]]]]"},
        {10, "result", "[[[[7,22]]]]"}, /* o0 = 1*1 + 2*3, o1 = 3*2 + 4*4 */
        {11, "result", "[[24,32]]"},
        {12, "result", "[[63,85]]"},
        {16, "result", "[[[[1,2,3],[3,4,7]]]]"},
        {20, "key_cache", "[[[[1,2],[5,6]]]]"},
        {20, "cache_lengths", "[[2]]"},
    };
    for (size_t h = 0; h < sizeof hand / sizeof hand[0]; h++) {
        char *s = json_dumps(rec_out(res, hand[h].i, hand[h].out), JSON_COMPACT);
        if (!s || strcmp(s, hand[h].want)) {
            fprintf(stderr, "record %zu output %s: %s, expected %s\n", hand[h].i, hand[h].out, s ? s : "(none)",
                    hand[h].want);
            CHECK(0);
        }
        free(s);
    }
    json_t *recs = json_object_get(res, "records");
    CHECK_EQ(json_array_size(recs), 24);
    for (size_t i = 0; i < json_array_size(recs); i++) {
        json_t *r = json_array_get(recs, i);
        CHECK(json_is_true(json_object_get(r, "match")));
        CHECK(json_is_false(json_object_get(json_object_get(r, "evidence"), "cpu_fallback")));
    }
    json_decref(res);
}

static void run_all(npk_port *p, int small) {
    npk_e1 *e;
    CHECK_EQ(npk_e1_open(&e, p), 0);
    if (!e) return;
    test_module(e);
    test_rejections(e);
    test_all_ops(e, small);
    npk_e1_close(e);
}

int main(void) {
    npk_port *p;
    CHECK_EQ(npk_port_open(&p, "sim", "e1", NULL), 0);
    if (p) {
        run_all(p, 0);
        npk_port_close(p);
    }
    int rc = npk_port_open(&p, "qtest-spawn:" NPU_BIN, "e1", NULL);
    if (rc == -NPK_EUNSUPPORTED) {
        fprintf(stderr, "qtest port not available: %s\n", npk_errmsg());
    } else {
        CHECK_EQ(rc, 0);
        if (!rc) {
            run_all(p, 1);
            npk_port_close(p);
        }
    }
    return CHECK_DONE();
}
