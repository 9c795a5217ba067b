// SPDX-License-Identifier: MIT
/* e1 StableHLO-subset modules and compiled packages (docs/e1-compile.md):
 * validation codes in the document's order, the contract classification,
 * arena / staging arithmetic worked by hand from e1-compile-notes.md, the
 * document-over-runtime decisions (INT4 element bases, HEAD = n / TAIL = 0,
 * duplicate names rejected), package checks against tampering, and replay
 * results equal to the lowerings bit for bit over sim and qtest. */
#include <jansson.h>
#include <stdlib.h>

#include "check.h"
#include "npukit/e1.h"
#include "npukit/e1_shlo.h"

#define HDR "{\"schema\":\"eliza.e1_npu_stablehlo_subset.v1\",\"name\":\"t\",\"ops\":["
#define T(s, d) "{\"shape\":" s ",\"dtype\":\"" d "\"}"
#define DOT(n, p, l, r, res) \
    "{\"op\":\"stablehlo.dot_general\",\"name\":\"" n "\",\"precision\":\"" p "\",\"lhs_type\":" l ",\"rhs_type\":" r \
    ",\"result_type\":" res "}"

static npk_shlo *parse(const char *text) {
    npk_shlo *m = NULL;
    int rc = npk_shlo_parse(&m, text);
    if (rc) fprintf(stderr, "parse: %s\n", npk_errmsg());
    CHECK_EQ(rc, 0);
    return m;
}

/* The codes of m joined with ',' */
static const char *codes(const npk_shlo *m, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = 0;
    for (size_t i = 0; i < npk_shlo_issue_count(m); i++) {
        const char *op, *code;
        npk_shlo_issue(m, i, &op, NULL, &code, NULL);
        o += (size_t)snprintf(buf + o, len - o, "%s%s:%s", i ? "," : "", op, code);
    }
    return buf;
}

static json_t *report(const npk_shlo *m) {
    char *s;
    CHECK_EQ(npk_shlo_partition_report(m, &s), 0);
    json_t *j = json_loads(s, 0, NULL);
    free(s);
    return j;
}

static void test_validation_order(void) {
    char buf[1024];
    /* convolution: every rule broken at once, codes in the document's order */
    npk_shlo *m = parse(HDR "{\"op\":\"stablehlo.convolution\",\"name\":\"c\",\"precision\":\"fp16\",\"padding\":\"SAME\","
                            "\"stride\":2,\"dilation\":2,\"input_type\":" T("[2,2,2,3]", "int8") ",\"filter_type\":"
                            T("[3,1,2,4]", "int8") ",\"result_type\":" T("[1,1,1,1]", "int32") "}]}");
    /* K = C*FH*FW = 3*3*1 = 9 > 7, O = 4 > 3; the filter does not fit (3 > 2), so no result check */
    CHECK_STR(codes(m, buf, sizeof buf), "c:UNSUPPORTED_PRECISION,c:BATCH_UNSUPPORTED,c:PADDING_UNSUPPORTED,"
                                         "c:STRIDE_UNSUPPORTED,c:DILATION_UNSUPPORTED,c:CHANNEL_MISMATCH,"
                                         "c:FILTER_TOO_LARGE,c:TILE_N_OUT_OF_RANGE,c:TILE_K_OUT_OF_RANGE");
    npk_shlo_free(m);
    /* RANK_UNSUPPORTED stops the op's checks; duplicates come before the later op's own codes */
    m = parse(HDR DOT("a", "int9", T("[2,3,1]", "int8"), T("[3,2]", "int8"), T("[2,2]", "int32")) ","
                  DOT("b", "int8", T("[2,3]", "int8"), T("[4,2]", "int8"), T("[2,3]", "int32")) ","
                  DOT("b", "int8", T("[2,3]", "int8"), T("[3,2]", "int8"), T("[2,2]", "int32")) "]}");
    CHECK_STR(codes(m, buf, sizeof buf), "a:UNSUPPORTED_PRECISION,a:RANK_UNSUPPORTED,b:SHAPE_MISMATCH,"
                                         "b:RESULT_SHAPE_MISMATCH,b:DUPLICATE_OP_NAME");
    CHECK(npk_shlo_check_module(m) != 0);
    CHECK(strstr(npk_errmsg(), "DUPLICATE_OP_NAME") != NULL);
    char *js = NULL;
    CHECK(npk_shlo_partition_report(m, &js) != 0 && !js);
    npk_shlo_free(m);
    m = parse("{\"schema\":\"eliza.e1_npu_stablehlo_subset.v1\",\"name\":\"empty\",\"ops\":[]}");
    CHECK_STR(codes(m, buf, sizeof buf), "empty:MODULE_EMPTY");
    CHECK(npk_shlo_check_module(m) != 0);
    npk_shlo_free(m);
    /* mlp, decoder_block: activation and RoPE codes; fallback reasons */
    m = parse(HDR "{\"op\":\"stablehlo.mlp\",\"name\":\"f\",\"activation\":\"gelu\",\"input_type\":" T("[2,3]", "int8")
                  ",\"up_weight_type\":" T("[3,2]", "int8") ",\"down_weight_type\":" T("[2,3]", "int8")
                  ",\"result_type\":" T("[2,3]", "int32") "},"
                  "{\"op\":\"stablehlo.decoder_block\",\"name\":\"d\",\"input_type\":" T("[2,3]", "int8")
                  ",\"norm1_type\":" T("[3]", "int8") ",\"norm2_type\":" T("[3]", "int8") ",\"q_weight_type\":"
                  T("[3,3]", "int8") ",\"k_weight_type\":" T("[3,3]", "int8") ",\"v_weight_type\":" T("[3,3]", "int8")
                  ",\"attention_bias_type\":" T("[3]", "int8") ",\"cos_type\":" T("[1]", "int8") ",\"sin_type\":"
                  T("[1]", "int8") ",\"swiglu_up_type\":" T("[3,2]", "int8") ",\"swiglu_gate_type\":" T("[3,2]", "int8")
                  ",\"swiglu_down_type\":" T("[2,3]", "int8") ",\"result_type\":" T("[2,3]", "int8") "},"
                  "{\"op\":\"stablehlo.add\",\"name\":\"a4\",\"precision\":\"int4\",\"lhs_type\":" T("[2]", "int4")
                  ",\"rhs_type\":" T("[2]", "int4") ",\"result_type\":" T("[2]", "int4") "}]}");
    CHECK_STR(codes(m, buf, sizeof buf), "f:ACTIVATION_UNSUPPORTED,d:ROPE_DIM_UNSUPPORTED,a4:UNSUPPORTED_PRECISION");
    json_t *r = report(m);
    json_t *en = json_object_get(r, "entries");
    CHECK_STR(json_string_value(json_object_get(json_array_get(en, 0), "reason")), "ACTIVATION_UNSUPPORTED");
    CHECK_STR(json_string_value(json_object_get(json_array_get(en, 1), "reason")),
              "NO_CONTRACT_ENTRY_FOR_stablehlo.decoder_block_int8");
    CHECK(json_is_null(json_object_get(json_array_get(en, 1), "runtime_api")));
    CHECK_STR(json_string_value(json_object_get(json_array_get(en, 2), "reason")),
              "NO_CONTRACT_ENTRY_FOR_stablehlo.add_int4");
    CHECK_EQ(json_integer_value(json_object_get(r, "cpu_fallback_ops")), 3);
    json_decref(r);
    npk_shlo_free(m);
    /* parse errors are not validation codes */
    npk_shlo *bad = NULL;
    CHECK_EQ(npk_shlo_parse(&bad, HDR "{\"op\":\"stablehlo.dot\",\"name\":\"x\",\"lhs_type\":" T("[1,1]", "int8")
                                      ",\"rhs_type\":" T("[1,1]", "int8") ",\"result_type\":" T("[1,1]", "int8") "}]}"),
             -NPK_EFORMAT); /* dot needs a precision */
    CHECK(strstr(npk_errmsg(), "precision") != NULL);
    CHECK_EQ(npk_shlo_parse(&bad, HDR DOT("x", "int8", T("[0,1]", "int8"), T("[1,1]", "int8"), T("[1,1]", "int8")) "]}"),
             -NPK_EFORMAT);
    CHECK_EQ(npk_shlo_parse(&bad, "schema: other\nname: x\nops: []\n"), -NPK_EFORMAT);
    CHECK(bad == NULL);
}

static void test_arena_and_staging(void) {
    /* int8 3x3x7: result 36 B at 0, lhs 21 B at 36, rhs 21 B at 60 -> 84 total; stream
     * align4(81 - 36) = 48, scratch output 48 + 36 > 64: blocked (the notes' example) */
    npk_shlo *m = parse(HDR DOT("g", "int8", T("[3,7]", "int8"), T("[7,3]", "int8"), T("[3,3]", "int32")) "]}");
    json_t *r = report(m);
    json_t *ta = json_object_get(r, "tensor_arena_plan"), *al = json_object_get(ta, "allocations");
    CHECK_EQ(json_integer_value(json_object_get(ta, "total_bytes")), 84);
    CHECK_EQ(json_integer_value(json_object_get(json_array_get(al, 0), "byte_size")), 36);
    CHECK_STR(json_string_value(json_object_get(json_array_get(al, 0), "storage_dtype")), "int32_accumulator");
    CHECK_EQ(json_integer_value(json_object_get(json_array_get(al, 1), "offset")), 36);
    CHECK_EQ(json_integer_value(json_object_get(json_array_get(al, 2), "offset")), 60);
    json_t *op = json_array_get(json_object_get(json_object_get(r, "descriptor_staging_plan"), "ops"), 0);
    CHECK_EQ(json_integer_value(json_object_get(op, "stream_byte_count")), 48);
    CHECK_EQ(json_integer_value(json_object_get(op, "scratch_output_offset")), 48);
    CHECK_STR(json_string_value(json_array_get(json_object_get(op, "blocking_reasons"), 0)),
              "scratch_layout_exceeds_64_byte_descriptor_window");
    CHECK(json_is_false(json_object_get(op, "descriptor_codegen_ready")));
    json_decref(r);
    npk_shlo_free(m);
    /* int4 3x7x3: result 36 at 0, lhs 11 at 36, rhs 11 at 48; stream align4(59-36) = 24;
     * GEMM_BASE in INT4 elements: A 0, B 2*12 = 24, C 24 bytes; words per the notes */
    m = parse(HDR DOT("q", "int4", T("[3,7]", "int4"), T("[7,3]", "int4"), T("[3,3]", "int32")) ","
                  DOT("p", "int4", T("[3,7]", "int4"), T("[7,3]", "int4"), T("[3,3]", "int32")) "]}");
    npk_e1_compile_opts o;
    npk_e1_compile_opts_default(&o);
    o.arena_base = 0x1000;
    o.descriptor_base = 0x2000;
    char *pk;
    CHECK_EQ(npk_shlo_compile(m, &o, &pk), 0);
    json_t *p = json_loads(pk, 0, NULL);
    op = json_array_get(json_object_get(json_object_get(json_object_get(p, "partition_report"), "descriptor_staging_plan"),
                                        "ops"), 0);
    json_t *pre = json_object_get(op, "mmio_preamble");
    CHECK_EQ(json_integer_value(json_object_get(pre, "GEMM_CFG")), 3 | 3 << 8 | 7 << 16);
    CHECK_EQ(json_integer_value(json_object_get(pre, "GEMM_BASE")), 0 | 24 << 8 | 24 << 16);
    CHECK_EQ(json_integer_value(json_object_get(pre, "GEMM_STRIDE")), 7 | 3 << 8 | 12 << 16);
    json_t *xb = json_array_get(json_object_get(json_object_get(p, "prepared_descriptor_execution_batches"),
                                                "execution_batches"), 0);
    json_t *img = json_object_get(xb, "descriptor_command_buffer_image");
    json_t *w = json_array_get(json_object_get(img, "descriptor_words"), 1);
    CHECK_EQ(json_integer_value(json_array_get(w, 0)), 9 | 1 << 8 | 24 << 24 | 1u << 30 | 1u << 31);
    CHECK_EQ(json_integer_value(json_array_get(w, 1)), 0x1000 + 60 + 36); /* p: result at 60 (after q's 59 -> 60) */
    CHECK_EQ(json_integer_value(json_array_get(w, 2)), 0x1000 + 60);
    json_t *sub = json_object_get(img, "submission");
    CHECK_EQ(json_integer_value(json_object_get(sub, "head")), 2);
    CHECK_EQ(json_integer_value(json_object_get(sub, "tail")), 0);
    CHECK_EQ(json_integer_value(json_object_get(sub, "base")), 0x2000);
    json_t *seq = json_object_get(xb, "host_runtime_sequence");
    CHECK_EQ(json_array_size(json_object_get(seq, "descriptor_memory_writes")), 8);
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(seq, "submission_mmio_writes"), 1), "register")),
              "DESC_HEAD");
    json_decref(p);
    free(pk);
    /* an unaligned or undersized stride is refused */
    o.descriptor_stride = 20;
    CHECK(npk_shlo_compile(m, &o, &pk) != 0);
    npk_shlo_free(m);
    /* command-buffer batches: runs split at 7, a fallback ends a run */
    char text[8192] = HDR;
    for (int i = 0; i < 10; i++) {
        char op1[512];
        snprintf(op1, sizeof op1,
                 "%s{\"op\":\"stablehlo.dot\",\"name\":\"d%d\",\"precision\":\"int8\",\"lhs_type\":%s,\"rhs_type\":%s,"
                 "\"result_type\":%s}",
                 i ? "," : "", i, i == 8 ? T("[4,1]", "int8") : T("[1,1]", "int8"), T("[1,1]", "int8"),
                 i == 8 ? T("[4,1]", "int32") : T("[1,1]", "int32"));
        strcat(text, op1);
    }
    strcat(text, "]}");
    m = parse(text);
    r = report(m);
    json_t *cb = json_object_get(r, "command_buffer_batches");
    CHECK_EQ(json_array_size(cb), 3);
    CHECK_EQ(json_integer_value(json_object_get(json_array_get(cb, 0), "descriptor_slots")), 7);
    CHECK_EQ(json_integer_value(json_object_get(json_array_get(cb, 1), "descriptor_slots")), 1);
    CHECK_STR(json_string_value(json_array_get(json_object_get(json_array_get(cb, 2), "op_names"), 0)), "d9");
    json_decref(r);
    /* a delegate blob of a module with validation issues is refused */
    npk_e1_compile_opts_default(&o);
    o.format = NPK_E1_FMT_LITERT;
    CHECK(npk_shlo_compile(m, &o, &pk) != 0);
    CHECK(strstr(npk_errmsg(), "TILE_M_OUT_OF_RANGE") != NULL);
    npk_shlo_free(m);
}

static const char *MOD =
    HDR DOT("m0", "int8", T("[2,3]", "int8"), T("[3,2]", "int8"), T("[2,2]", "int32")) ","
        DOT("m1", "int8", T("[2,3]", "int8"), T("[3,2]", "int8"), T("[2,2]", "int32")) ","
        DOT("m4", "int4", T("[3,7]", "int4"), T("[7,3]", "int4"), T("[3,3]", "int32")) ","
        "{\"op\":\"stablehlo.residual_add\",\"name\":\"ra\",\"lhs_type\":" T("[2,2]", "int8") ",\"rhs_type\":"
        T("[2,2]", "int8") ",\"result_type\":" T("[2,2]", "int8") "},"
        DOT("big", "int8", T("[4,3]", "int8"), T("[3,2]", "int8"), T("[4,2]", "int32")) "],"
    "\"tensors\":{\"m0.lhs\":[[1,2,3],[4,5,6]],\"m0.rhs\":[[1,-1],[2,0],[-3,7]],"
    "\"m1\":{\"lhs\":[[-128,127,3],[4,-5,6]],\"rhs\":[[7,-1],[2,9],[-3,7]]},"
    "\"m4.lhs\":[[1,2,3,4,5,6,7],[-1,-2,-3,-4,-5,-6,-7],[0,1,0,1,0,1,-8]],"
    "\"m4.rhs\":[[1,2,3],[4,5,6],[7,-1,-2],[-3,-4,-5],[-6,-7,-8],[0,1,2],[3,4,5]],"
    "\"ra\":{\"lhs\":[[1,2],[3,4]],\"rhs\":[[100,-100],[127,-128]]},"
    "\"big.lhs\":[[1,2,3],[4,5,6],[7,8,9],[1,1,1]],\"big.rhs\":\"m0.rhs\"}}";

/* Outputs of every record of a result JSON. */
static json_t *outputs(const char *res) {
    json_t *j = json_loads(res, 0, NULL), *a = json_array();
    json_t *recs = json_object_get(j, "records");
    for (size_t i = 0; i < json_array_size(recs); i++)
        json_array_append(a, json_object_get(json_array_get(recs, i), "outputs"));
    json_decref(j);
    return a;
}

static void run_on(const char *spec) {
    npk_shlo *m = parse(MOD);
    char *low, *pk, *r1 = NULL, *r2 = NULL;
    CHECK_EQ(npk_shlo_to_lower_json(m, &low), 0);
    npk_e1_compile_opts o;
    npk_e1_compile_opts_default(&o);
    CHECK_EQ(npk_shlo_compile(m, &o, &pk), 0);
    npk_port *p;
    npk_e1 *e;
    if (npk_port_open(&p, spec, "e1", NULL) || npk_e1_open(&e, p)) {
        fprintf(stderr, "%s: %s\n", spec, npk_errmsg());
        CHECK(0);
        return;
    }
    CHECK_EQ(npk_lower_module_run(e, low, NULL, &r1), 0);
    CHECK_EQ(npk_e1_package_exec(e, pk, NULL, 0, NULL, &r2), 0);
    if (r1 && r2) {
        json_t *a = outputs(r1), *b = outputs(r2);
        CHECK(json_equal(a, b));
        CHECK_EQ(json_array_size(a), 5);
        /* m0 by hand: [[1,2,3],[4,5,6]] x [[1,-1],[2,0],[-3,7]] */
        json_t *d = json_object_get(json_object_get(json_array_get(b, 0), "result"), "data");
        CHECK_EQ(json_integer_value(json_array_get(json_array_get(d, 0), 0)), -4);
        CHECK_EQ(json_integer_value(json_array_get(json_array_get(d, 1), 1)), 38);
        json_decref(a);
        json_decref(b);
        json_t *j = json_loads(r2, 0, NULL), *rp = json_object_get(j, "replay");
        CHECK_EQ(json_integer_value(json_object_get(rp, "execution_batches_replayed")), 2);
        CHECK_EQ(json_integer_value(json_object_get(rp, "ops_replayed")), 3);
        CHECK_EQ(json_integer_value(json_object_get(rp, "ops_cpu_fallback")), 1);
        CHECK(json_is_true(json_object_get(j, "all_match")));
        CHECK(json_is_true(json_object_get(j, "cpu_fallback")));
        json_decref(j);
    }
    free(r1);
    free(r2);
    npk_e1_close(e);
    npk_port_close(p);
    free(low);
    free(pk);
    npk_shlo_free(m);
}

/* Replace the first occurrence of a in s by b (same package otherwise). */
static char *edit(const char *s, const char *a, const char *b) {
    const char *at = strstr(s, a);
    if (!at) return NULL;
    size_t n = strlen(s) + strlen(b) + 1;
    char *o = malloc(n);
    snprintf(o, n, "%.*s%s%s", (int)(at - s), s, b, at + strlen(a));
    return o;
}

static void test_tamper(void) {
    npk_shlo *m = parse(MOD);
    npk_e1_compile_opts o;
    npk_e1_compile_opts_default(&o);
    char *pk;
    CHECK_EQ(npk_shlo_compile(m, &o, &pk), 0);
    CHECK_EQ(npk_e1_package_check(pk), 0);
    json_t *p = json_loads(pk, 0, NULL);
    json_t *xb = json_array_get(json_object_get(json_object_get(p, "prepared_descriptor_execution_batches"),
                                                "execution_batches"), 0);
    json_t *img = json_object_get(xb, "descriptor_command_buffer_image");
    json_t *sub = json_object_get(img, "submission");
    struct {
        const char *what, *want;
    } cases[] = {{"head0", "HEAD = 2"}, {"owner", "valid_owner"}, {"preamble", "preamble"}, {"steps", "required_runtime_steps"},
                 {"base", "descriptor_base"}, {"report", "partition_report"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        json_t *q = json_deep_copy(p);
        json_t *qx = json_array_get(json_object_get(json_object_get(q, "prepared_descriptor_execution_batches"),
                                                    "execution_batches"), 0);
        json_t *qi = json_object_get(qx, "descriptor_command_buffer_image");
        if (!strcmp(cases[c].what, "head0")) {
            /* the runtime's HEAD = 0, TAIL = n */
            json_object_set_new(json_object_get(qi, "submission"), "head", json_integer(0));
            json_object_set_new(json_object_get(qi, "submission"), "tail", json_integer(2));
        } else if (!strcmp(cases[c].what, "owner")) {
            json_t *w = json_array_get(json_object_get(qi, "descriptor_words"), 0);
            json_int_t w0 = json_integer_value(json_array_get(w, 0)) & 0x7fffffff;
            json_array_set_new(w, 0, json_integer(w0));
            json_object_set_new(json_object_get(qi, "descriptor_image"), "0x90100000", json_integer(w0));
            json_object_set_new(json_array_get(json_object_get(json_object_get(qx, "host_runtime_sequence"),
                                                               "descriptor_memory_writes"), 0),
                                "value", json_integer(w0));
        } else if (!strcmp(cases[c].what, "preamble")) {
            json_t *pp = json_object_get(json_array_get(json_object_get(qx, "op_mmio_preamble"), 0), "mmio_preamble");
            json_object_set_new(pp, "GEMM_BASE", json_integer(json_integer_value(json_object_get(pp, "GEMM_BASE")) + 1));
            json_t *ws = json_object_get(json_array_get(json_object_get(json_object_get(qx, "host_runtime_sequence"),
                                                                        "mmio_preamble_writes"), 0), "writes");
            json_object_set_new(json_array_get(ws, 1), "value", json_integer(json_integer_value(json_object_get(pp, "GEMM_BASE"))));
        } else if (!strcmp(cases[c].what, "steps")) {
            json_array_remove(json_object_get(qx, "required_runtime_steps"), 3);
        } else if (!strcmp(cases[c].what, "base")) {
            json_object_set_new(qx, "descriptor_base", json_integer(json_integer_value(json_object_get(qx, "descriptor_base")) + 16));
        } else {
            json_t *ta = json_object_get(json_object_get(q, "partition_report"), "tensor_arena_plan");
            json_object_set_new(ta, "total_bytes", json_integer(4));
        }
        char *t = json_dumps(q, JSON_COMPACT);
        int rc = npk_e1_package_check(t);
        CHECK(rc != 0);
        if (!strstr(npk_errmsg(), cases[c].want)) {
            fprintf(stderr, "tamper %s: message '%s' lacks '%s'\n", cases[c].what, npk_errmsg(), cases[c].want);
            CHECK(0);
        }
        free(t);
        json_decref(q);
    }
    (void)sub;
    /* a batch that reads its own batch's result is refused before any MMIO */
    char *dep = edit(MOD, "\"m1\":{\"lhs\":[[-128,127,3],[4,-5,6]],", "\"m1\":{\"lhs\":\"m0\",");
    CHECK(dep != NULL);
    npk_shlo *dm = parse(dep);
    char *dpk;
    CHECK_EQ(npk_shlo_compile(dm, &o, &dpk), 0);
    npk_port *port;
    npk_e1 *e;
    CHECK_EQ(npk_port_open(&port, "sim", "e1", NULL), 0);
    CHECK_EQ(npk_e1_open(&e, port), 0);
    uint64_t mmio0 = npk_port_mmio_count(port);
    char *res = NULL;
    CHECK(npk_e1_package_exec(e, dpk, NULL, 0, NULL, &res) != 0);
    CHECK(strstr(npk_errmsg(), "same execution batch") != NULL);
    CHECK_EQ(npk_port_mmio_count(port), mmio0);
    npk_e1_close(e);
    npk_port_close(port);
    free(dpk);
    npk_shlo_free(dm);
    free(dep);
    json_decref(p);
    free(pk);
    npk_shlo_free(m);
}

static void test_yaml(void) {
    const char *y = "schema: eliza.e1_npu_stablehlo_subset.v1\nname: t\nops:\n"
                    "  - op: stablehlo.dot\n    name: m0\n    precision: int8\n"
                    "    lhs_type: {shape: [2, 3], dtype: int8}\n    rhs_type: {shape: [3, 2], dtype: int8}\n"
                    "    result_type: {shape: [2, 2], dtype: int32}\n"
                    "tensors:\n  m0: {lhs: [[1, 2, 3], [4, 5, 6]], rhs: [[1, -1], [2, 0], [-3, 7]]}\n";
    CHECK(npk_shlo_is_module(y));
    npk_shlo *m = parse(y);
    char *low;
    CHECK_EQ(npk_shlo_to_lower_json(m, &low), 0);
    CHECK(strstr(low, "\"lhs\":[[1,2,3],[4,5,6]]") != NULL);
    free(low);
    /* binding errors name the op and field */
    CHECK(npk_shlo_bind(m, "{\"m0.filter\": [[1]]}", "x") != 0);
    CHECK(strstr(npk_errmsg(), "no graph field 'filter'") != NULL);
    CHECK_EQ(npk_shlo_bind(m, "m0.lhs: [[1, 2], [3, 4]]\n", "x"), 0);
    CHECK(npk_shlo_to_lower_json(m, &low) != 0);
    CHECK(strstr(npk_errmsg(), "declares [2, 3]") != NULL);
    npk_shlo_free(m);
}

int main(void) {
    test_validation_order();
    test_arena_and_staging();
    test_yaml();
    test_tamper();
    run_on("sim");
    run_on("qtest-spawn:" NPU_BIN);
    return CHECK_DONE();
}
