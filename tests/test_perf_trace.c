// SPDX-License-Identifier: MIT
/* Traces and performance reports (issue 7):
 *  - counters agree with traces: for e1, v0 and pccx, a run through the
 *    driver with a trace on the port, then the device's PERF registers
 *    against the sums of trace durations, MACs and bytes;
 *  - traces are deterministic: the same run twice gives identical files;
 *  - traces and reports are valid JSON (parsed with jansson) with the
 *    Chrome trace-event fields, timestamps = cycles / hz, raw cycles in args;
 *  - the report's derived figures against the e1 document's formula,
 *    computed here independently. */
#include "check.h"
#include "npukit/e1.h"
#include "npukit/e1_lower.h"
#include "npukit/pccx.h"
#include "npukit/report.h"
#include "npukit/shell.h"
#include "npukit/sim.h"
#include "npukit/trace.h"
#include "npukit/v0.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The trace as a string (caller frees). */
static char *trace_text(const npk_trace *t) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    CHECK_EQ(npk_trace_write(t, f), 0);
    fclose(f);
    return buf;
}

/* Structural checks of a Chrome trace document; returns the parsed root. */
static json_t *check_trace_json(const char *text) {
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    CHECK(root != NULL);
    if (!root) {
        fprintf(stderr, "trace JSON: %s at line %d\n", err.text, err.line);
        return NULL;
    }
    json_t *evs = json_object_get(root, "traceEvents");
    CHECK(json_is_array(evs));
    size_t i, nx = 0, nm = 0, nc = 0;
    json_t *e;
    /* clock per pid from the process_name metadata */
    double hz[16] = {0};
    json_array_foreach(evs, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        CHECK(ph != NULL);
        CHECK(json_is_integer(json_object_get(e, "pid")));
        if (ph && !strcmp(ph, "M")) {
            nm++;
            const char *name = json_string_value(json_object_get(e, "name"));
            CHECK(name != NULL);
            json_t *args = json_object_get(e, "args");
            CHECK(json_is_object(args));
            if (name && !strcmp(name, "process_name")) {
                json_int_t pid = json_integer_value(json_object_get(e, "pid"));
                if (pid >= 0 && pid < 16) hz[pid] = (double)json_integer_value(json_object_get(args, "clock_hz"));
                CHECK(json_is_string(json_object_get(args, "name")));
            }
        }
    }
    json_array_foreach(evs, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (!ph) continue;
        if (!strcmp(ph, "X")) {
            nx++;
            CHECK(json_is_integer(json_object_get(e, "tid")));
            CHECK(json_is_string(json_object_get(e, "name")));
            json_t *args = json_object_get(e, "args");
            CHECK(json_is_object(args));
            json_int_t pid = json_integer_value(json_object_get(e, "pid"));
            double ts = json_number_value(json_object_get(e, "ts"));
            double dur = json_number_value(json_object_get(e, "dur"));
            double sc = (double)json_integer_value(json_object_get(args, "start_cycle"));
            double cy = (double)json_integer_value(json_object_get(args, "cycles"));
            CHECK(json_is_integer(json_object_get(args, "start_cycle")) && json_is_integer(json_object_get(args, "cycles")));
            CHECK(pid > 0 && pid < 16 && hz[pid] > 0);
            if (pid > 0 && pid < 16 && hz[pid] > 0) {
                /* microseconds = cycles / hz * 1e6, printed to the picosecond */
                CHECK(fabs(ts - sc * 1e6 / hz[pid]) <= 1e-6 + ts * 1e-12);
                CHECK(fabs(dur - cy * 1e6 / hz[pid]) <= 1e-6 + dur * 1e-12);
            }
        } else if (!strcmp(ph, "C")) {
            nc++;
            CHECK(json_is_number(json_object_get(e, "ts")));
            CHECK(json_is_number(json_object_get(json_object_get(e, "args"), "value")));
        } else {
            CHECK(!strcmp(ph, "M"));
        }
    }
    CHECK(nx > 0);
    CHECK(nm > 0);
    CHECK(nc > 0);
    return root;
}

/* Cycles covered by the union of the complete events of `pid` (any track). */
static uint64_t union_cycles(json_t *root, json_int_t pid) {
    json_t *evs = json_object_get(root, "traceEvents");
    size_t n = json_array_size(evs), k = 0;
    uint64_t(*iv)[2] = calloc(n + 1, sizeof *iv);
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (!ph || strcmp(ph, "X") || json_integer_value(json_object_get(e, "pid")) != pid) continue;
        json_t *a = json_object_get(e, "args");
        iv[k][0] = (uint64_t)json_integer_value(json_object_get(a, "start_cycle"));
        iv[k][1] = iv[k][0] + (uint64_t)json_integer_value(json_object_get(a, "cycles"));
        k++;
    }
    /* insertion sort by start, then sweep */
    for (size_t a = 1; a < k; a++)
        for (size_t b = a; b > 0 && iv[b - 1][0] > iv[b][0]; b--) {
            uint64_t t0 = iv[b][0], t1 = iv[b][1];
            iv[b][0] = iv[b - 1][0], iv[b][1] = iv[b - 1][1];
            iv[b - 1][0] = t0, iv[b - 1][1] = t1;
        }
    uint64_t total = 0, cs = 0, ce = 0;
    int open = 0;
    for (size_t a = 0; a < k; a++) {
        if (!open || iv[a][0] > ce) {
            if (open) total += ce - cs;
            cs = iv[a][0];
            ce = iv[a][1];
            open = 1;
        } else if (iv[a][1] > ce) {
            ce = iv[a][1];
        }
    }
    if (open) total += ce - cs;
    free(iv);
    return total;
}

/* ---- e1 ------------------------------------------------------------------- */

static uint32_t lcg = 12345;
static int32_t rnd8(void) {
    lcg = lcg * 1103515245u + 12345u;
    return (int32_t)((lcg >> 16) & 0xff) - 128;
}

/* One e1 run: a 7x5x9 int8 matmul through the descriptor ring, the same
 * through direct MMIO tiles, a ReLU; then one ring of three descriptors.
 * Returns the trace text. */
static char *e1_run(int check_counters) {
    npk_port *p;
    npk_e1 *e;
    npk_lower *L;
    CHECK_EQ(npk_port_open(&p, "sim", "e1", NULL), 0);
    npk_trace *t = npk_trace_new();
    npk_port_set_trace(p, t);
    CHECK_EQ(npk_e1_open(&e, p), 0);
    CHECK_EQ(npk_lower_new(&L, e), 0);
    CHECK_EQ(npk_e1_clear_counters(e), 0);
    const unsigned M = 7, N = 5, K = 9;
    npk_ltensor A, B;
    npk_lt_alloc2(&A, M, K);
    npk_lt_alloc2(&B, K, N);
    lcg = 12345;
    for (size_t i = 0; i < npk_lt_numel(&A); i++) A.data[i] = rnd8();
    for (size_t i = 0; i < npk_lt_numel(&B); i++) B.data[i] = rnd8();
    npk_lower_out o, g;
    npk_lower_evidence ev;
    for (int batching = 1; batching >= 0; batching--) {
        npk_lower_set_batching(L, batching);
        CHECK_EQ(npk_lower_matmul(L, 0, &A, &B, &o, &g, &ev), 0);
        CHECK(!memcmp(o.t[0].data, g.t[0].data, (size_t)M * N * 4));
        npk_lower_out_free(&o);
        npk_lower_out_free(&g);
    }
    int8_t rin[40], rout[40];
    for (int i = 0; i < 40; i++) rin[i] = (int8_t)(i * 7 - 140);
    CHECK_EQ(npk_e1_relu(e, rin, rout, 40), 0);
    if (check_counters) {
        npk_e1_counters c;
        CHECK_EQ(npk_e1_read_counters(e, &c), 0);
        /* the GEMM engine does one MAC per cycle and only it and VRELU count
         * PERF_CYCLES; both matmuls do M*N*K MACs (an independent count) */
        CHECK_EQ(c.perf_macs, 2 * M * N * K);
        CHECK_EQ(npk_trace_sum_arg(t, "e1", "gemm", "macs"), c.perf_macs);
        CHECK_EQ(npk_trace_total_cycles(t, "e1", "gemm") + npk_trace_total_cycles(t, "e1", "vector"), c.perf_cycles);
        CHECK_EQ(npk_trace_events(t, "e1", "gemm") + npk_trace_events(t, "e1", "vector") +
                     npk_trace_events(t, "e1", "datapath"),
                 c.perf_ops);
        /* the descriptor engine's memory phases are its stall cycles */
        CHECK_EQ(npk_trace_total_cycles(t, "e1", "desc fetch") + npk_trace_total_cycles(t, "e1", "dma"),
                 c.perf_stall_cycles);
        CHECK_EQ(c.perf_errors, 0);
        /* the host runtime saw every descriptor it submitted, and the lowering spans */
        uint64_t ndesc = 0;
        for (int k = 0; k < E1_NUM_OPCODES; k++) ndesc += npk_e1_get_stats(e)->desc[k];
        CHECK(ndesc > 0);
        CHECK_EQ(npk_trace_sum_arg(t, "host", "runtime", "descriptors"), ndesc);
        CHECK(npk_trace_events(t, "host", "lowering") >= 2);
        CHECK_EQ(npk_trace_sum_arg(t, "host", "lowering", "macs"), 2 * M * N * K);
    }
    /* one ring: DOT4_S8, a streamed GEMM_S8 2x2x3 with writeback, ADD */
    uint64_t in, outa;
    CHECK_EQ(npk_port_alloc(p, 16, 16, &in), 0);
    CHECK_EQ(npk_port_alloc(p, 16, 16, &outa), 0);
    uint8_t img[16] = {0xff, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    npk_port_mem_write(p, in, img, 16);
    npk_e1_tilecfg cfg = {0};
    npk_e1_gemm_layout(0, 2, 2, 3, &cfg.gemm);
    npk_e1_desc ring[3] = {npk_e1_desc_scalar(E1_OP_DOT4_S8, 0x04030201u, 0x01010101u, 0),
                           npk_e1_desc_stream(E1_OP_GEMM_S8, in, 0, 16, outa),
                           npk_e1_desc_scalar(E1_OP_ADD, 1, 2, 0)};
    npk_e1_result last;
    CHECK_EQ(npk_e1_clear_counters(e), 0);
    size_t fetch0 = npk_trace_events(t, "e1", "desc fetch");
    uint64_t rd0 = npk_trace_sum_arg(t, "e1", "desc fetch", "read_bytes") + npk_trace_sum_arg(t, "e1", "dma", "read_bytes");
    uint64_t wr0 = npk_trace_sum_arg(t, "e1", "dma", "written_bytes");
    CHECK_EQ(npk_e1_submit(e, ring, 3, &cfg, 0, &last), 0);
    CHECK_EQ(last.result, 3);
    if (check_counters) {
        npk_e1_counters c;
        CHECK_EQ(npk_e1_read_counters(e, &c), 0);
        /* 3 descriptors of 16 bytes + 16 streamed; 2x2 int32 written back */
        CHECK_EQ(c.desc_bytes_read, 3 * 16 + 16);
        CHECK_EQ(c.desc_bytes_written, 16);
        CHECK_EQ(npk_trace_events(t, "e1", "desc fetch") - fetch0, 3);
        CHECK_EQ(npk_trace_sum_arg(t, "e1", "desc fetch", "read_bytes") + npk_trace_sum_arg(t, "e1", "dma", "read_bytes") - rd0,
                 c.desc_bytes_read);
        CHECK_EQ(npk_trace_sum_arg(t, "e1", "dma", "written_bytes") - wr0, c.desc_bytes_written);
        CHECK_EQ(c.perf_macs, 12);
        CHECK_EQ(npk_e1_get_stats(e)->desc_bytes_read >= c.desc_bytes_read, 1);
    }
    char *text = trace_text(t);
    npk_lt_free(&A);
    npk_lt_free(&B);
    npk_lower_free(L);
    npk_e1_close(e);
    npk_port_set_trace(p, NULL);
    npk_port_close(p);
    npk_trace_free(t);
    return text;
}

static void test_e1(void) {
    char *a = e1_run(1), *b = e1_run(0);
    CHECK(a && b && !strcmp(a, b)); /* deterministic */
    json_t *root = check_trace_json(a);
    json_decref(root);
    free(a);
    free(b);
}

/* ---- v0 ------------------------------------------------------------------- */

static char *v0_run(int check_counters) {
    npk_port *p;
    npk_v0 *v;
    CHECK_EQ(npk_port_open(&p, "sim", "v0", NULL), 0);
    npk_trace *t = npk_trace_new();
    npk_port_set_trace(p, t);
    npk_v0_config vc;
    npk_v0_config_default(&vc);
    vc.cpu_exec = npk_v0_cpu_execute;
    CHECK_EQ(npk_v0_open(&v, p, &vc), 0);
    const uint32_t M = 40, N = 33, K = 70;
    int8_t *A = malloc((size_t)M * K), *B = malloc((size_t)K * N);
    int32_t *C = malloc((size_t)M * N * 4);
    lcg = 777;
    for (size_t i = 0; i < (size_t)M * K; i++) A[i] = (int8_t)rnd8();
    for (size_t i = 0; i < (size_t)K * N; i++) B[i] = (int8_t)rnd8();
    CHECK_EQ(npk_v0_matmul(v, M, N, K, A, B, C, 0), 0);
    npk_v0_conv cv = {12, 10, 8, 16, 3, 1, 1, 1, 1, 1};
    uint32_t oh, ow;
    CHECK_EQ(npk_v0_conv_out(&cv, &oh, &ow), 0);
    int8_t *in = malloc(12 * 10 * 8), *wt = malloc(9 * 8 * 16), *out = malloc((size_t)oh * ow * 16);
    for (int i = 0; i < 12 * 10 * 8; i++) in[i] = (int8_t)rnd8();
    for (int i = 0; i < 9 * 8 * 16; i++) wt[i] = (int8_t)(rnd8() / 16);
    CHECK_EQ(npk_v0_conv2d(v, &cv, in, wt, out, 1), 0);
    if (check_counters) {
        npk_v0_counters c;
        CHECK_EQ(npk_v0_read_counters(v, &c), 0);
        uint64_t want = (uint64_t)M * N * K + (uint64_t)oh * ow * 16 * 9 * 8; /* independent count */
        CHECK_EQ(c.perf_macs, want);
        CHECK_EQ(npk_trace_sum_arg(t, "v0", "queue", "macs"), c.perf_macs);
        CHECK_EQ(npk_trace_sum_arg(t, "v0", "array", "macs"), c.perf_macs);
        CHECK_EQ(npk_trace_total_cycles(t, "v0", "queue"), c.perf_cycles);
        CHECK_EQ(npk_trace_events(t, "v0", "desc fetch"), npk_trace_events(t, "v0", "queue"));
        /* the operands are read once per tile pass, at least once in all */
        CHECK(npk_trace_sum_arg(t, "v0", "dma", "read_bytes") >= (uint64_t)M * K + (uint64_t)K * N);
        CHECK_EQ(npk_trace_sum_arg(t, "v0", "dma", "written_bytes"), (uint64_t)M * N * 4 + (uint64_t)oh * ow * 16);
        /* every phase lies inside its descriptor's queue event */
        CHECK(npk_trace_total_cycles(t, "v0", "array") <= c.perf_cycles);
        CHECK_EQ(npk_trace_events(t, "host", "ops"), 2); /* the matmul and the conv2d calls */
        CHECK_EQ(npk_trace_sum_arg(t, "host", "ops", "macs"), (uint64_t)M * N * K);
        CHECK(npk_trace_events(t, "host", "runtime") >= 2);
    }
    char *text = trace_text(t);
    free(A), free(B), free(C), free(in), free(wt), free(out);
    npk_v0_close(v);
    npk_port_set_trace(p, NULL);
    npk_port_close(p);
    npk_trace_free(t);
    return text;
}

static void test_v0(void) {
    char *a = v0_run(1), *b = v0_run(0);
    CHECK(a && b && !strcmp(a, b));
    json_t *root = check_trace_json(a);
    json_decref(root);
    free(a);
    free(b);
}

/* ---- pccx ----------------------------------------------------------------- */

static char *pccx_run(int check_counters) {
    npk_port *p;
    npk_pccx *d;
    CHECK_EQ(npk_port_open(&p, "sim", "pccx", NULL), 0);
    npk_trace *t = npk_trace_new();
    npk_port_set_trace(p, t);
    npk_pccx_cfg cfg = {.ws_bytes = 1 << 20};
    CHECK_EQ(npk_pccx_open(&d, p, &cfg), 0);
    const unsigned N = 96, K = 64;
    float *w = malloc(sizeof *w * N * K), x[64], y[96];
    for (unsigned i = 0; i < N * K; i++) w[i] = (float)((int)(i * 37u % 15u) - 7) / 8.0f;
    for (unsigned i = 0; i < K; i++) x[i] = (float)((int)i - 32) / 16.0f;
    npk_pccx_wmat wm;
    CHECK_EQ(npk_pccx_wmat_upload(d, w, N, K, 0, &wm), 0);
    CHECK_EQ(npk_pccx_stats_clear(d), 0);
    CHECK_EQ(npk_pccx_write_f32(d, 0, x, K), 0);
    CHECK_EQ(npk_pccx_gemv_w(d, 100, 0, 1, &wm, 0), 0);
    CHECK_EQ(npk_pccx_cvo(d, NPK_PCCX_CVO_EXP, 100, 200, N, 0, 1), 0);
    CHECK_EQ(npk_pccx_copy_l2(d, 300, 200, N), 0);
    CHECK_EQ(npk_pccx_sync(d), 0);
    CHECK_EQ(npk_pccx_read_f32(d, 300, y, N), 0);
    if (check_counters) {
        npk_pccx_stats st;
        CHECK_EQ(npk_pccx_stats_get(d, &st), 0);
        CHECK_EQ(st.macs, (uint64_t)N * K);
        CHECK_EQ(npk_trace_sum_arg(t, "pccx", "gemv", "macs") + npk_trace_sum_arg(t, "pccx", "gemm", "macs"), st.macs);
        CHECK_EQ(npk_trace_sum_arg(t, "pccx", "gemv", "weight_bytes"), st.ws_bytes);
        CHECK_EQ(npk_trace_sum_arg(t, "pccx", "dma", "host_bytes"), st.dma_bytes);
        CHECK_EQ(npk_trace_total_cycles(t, "pccx", "gemv"), st.engine_cycles[0]);
        CHECK_EQ(npk_trace_total_cycles(t, "pccx", "gemm"), st.engine_cycles[1]);
        CHECK_EQ(npk_trace_total_cycles(t, "pccx", "sfu"), st.engine_cycles[2]);
        CHECK_EQ(npk_trace_total_cycles(t, "pccx", "dma"), st.engine_cycles[3]);
        CHECK_EQ(npk_trace_events(t, "pccx", NULL), st.retired);
        /* busy cycles against the union of intervals: test_pccx_busy_union */
        CHECK(st.cycles > 0);
    }
    char *text = trace_text(t);
    free(w);
    npk_pccx_close(d);
    npk_port_set_trace(p, NULL);
    npk_port_close(p);
    npk_trace_free(t);
    return text;
}

/* CYCLES (busy) equals the union of the instruction intervals of one run
 * traced from the device's reset. */
static void test_pccx_busy_union(void) {
    npk_port *p;
    npk_pccx *d;
    CHECK_EQ(npk_port_open(&p, "sim", "pccx", NULL), 0);
    npk_pccx_cfg cfg = {.ws_bytes = 1 << 20};
    CHECK_EQ(npk_pccx_open(&d, p, &cfg), 0);
    float w[32 * 16], x[16];
    for (int i = 0; i < 32 * 16; i++) w[i] = (float)(i % 5) - 2;
    for (int i = 0; i < 16; i++) x[i] = (float)i / 8;
    npk_pccx_wmat wm;
    CHECK_EQ(npk_pccx_wmat_upload(d, w, 32, 16, 0, &wm), 0);
    CHECK_EQ(npk_pccx_write_f32(d, 0, x, 16), 0);
    CHECK_EQ(npk_pccx_sync(d), 0);
    CHECK_EQ(npk_pccx_stats_clear(d), 0);
    npk_trace *t = npk_trace_new();
    npk_port_set_trace(p, t);
    CHECK_EQ(npk_pccx_gemv_w(d, 100, 0, 1, &wm, 0), 0);
    CHECK_EQ(npk_pccx_cvo(d, NPK_PCCX_CVO_SIN, 100, 200, 32, 0, 1), 0);
    CHECK_EQ(npk_pccx_cvo(d, NPK_PCCX_CVO_COS, 100, 300, 32, 0, 1), 0);
    CHECK_EQ(npk_pccx_sync(d), 0);
    npk_pccx_stats st;
    CHECK_EQ(npk_pccx_stats_get(d, &st), 0);
    char *text = trace_text(t);
    json_t *root = check_trace_json(text);
    if (root) CHECK_EQ(union_cycles(root, 1), st.cycles);
    json_decref(root);
    free(text);
    npk_pccx_close(d);
    npk_port_set_trace(p, NULL);
    npk_port_close(p);
    npk_trace_free(t);
}

static void test_pccx(void) {
    char *a = pccx_run(1), *b = pccx_run(0);
    CHECK(a && b && !strcmp(a, b));
    json_t *root = check_trace_json(a);
    json_decref(root);
    free(a);
    free(b);
    test_pccx_busy_union();
}

/* ---- shell --------------------------------------------------------------- */

static uint32_t rd32(npk_port *p, uint32_t off) {
    uint32_t v = 0;
    CHECK_EQ(npk_port_read32(p, off, &v), 0);
    return v;
}

static char *shell_run(int check_counters) {
    npk_port *p;
    npk_shell *sh;
    CHECK_EQ(npk_port_open(&p, "sim", "shell", NULL), 0);
    npk_trace *t = npk_trace_new();
    npk_port_set_trace(p, t);
    CHECK_EQ(npk_shell_open(&sh, p, NULL), 0);
    const uint32_t M = 9, N = 20, K = 33;
    int8_t a[9 * 33], b[33 * 20];
    int32_t c[9 * 20], bias[20];
    lcg = 4242;
    for (int i = 0; i < 9 * 33; i++) a[i] = (int8_t)rnd8();
    for (int i = 0; i < 33 * 20; i++) b[i] = (int8_t)rnd8();
    for (int i = 0; i < 20; i++) bias[i] = i * 100 - 1000;
    CHECK_EQ(npk_shell_gemm_i8(sh, M, N, K, a, b, bias, c), 0);
    /* an independent reference for one element */
    int32_t want = bias[7];
    for (uint32_t k = 0; k < K; k++) want += a[3 * K + k] * b[k * N + 7];
    CHECK_EQ(c[3 * N + 7], want);
    uint8_t vin[64], vout[64];
    for (int i = 0; i < 64; i++) vin[i] = (uint8_t)(i * 5);
    memset(vout, 0, sizeof vout);
    CHECK_EQ(npk_shell_vec(sh, SHELL_VEC_RELU, SHELL_INT8, 0, vin, vout, 64), 0);
    for (int i = 0; i < 64; i++) CHECK_EQ((int8_t)vout[i], (int8_t)vin[i] < 0 ? 0 : (int8_t)vin[i]);
    if (check_counters) {
        uint64_t macs = rd32(p, SHELL_PERF_MACS_LO) | (uint64_t)rd32(p, SHELL_PERF_MACS_HI) << 32;
        CHECK_EQ(macs, (uint64_t)M * N * K);
        CHECK_EQ(npk_trace_sum_arg(t, "shell", "gemm", "macs"), macs);
        CHECK_EQ(npk_trace_total_cycles(t, "shell", "gemm"), rd32(p, SHELL_PERF_GEMM_CYCLES));
        CHECK_EQ(npk_trace_total_cycles(t, "shell", "dma"), rd32(p, SHELL_PERF_DMA_CYCLES));
        CHECK_EQ(npk_trace_total_cycles(t, "shell", "vec"), rd32(p, SHELL_PERF_VEC_CYCLES));
        CHECK_EQ(npk_trace_total_cycles(t, "shell", "fetch"), rd32(p, SHELL_PERF_FETCH_CYCLES));
        CHECK_EQ(npk_trace_sum_arg(t, "shell", "dma", "bytes"), rd32(p, SHELL_PERF_DMA_BYTES));
        CHECK(rd32(p, SHELL_PERF_DESCS) >= 2);
        CHECK(npk_trace_events(t, "host", "runtime") >= 2);
    }
    char *text = trace_text(t);
    npk_shell_close(sh);
    npk_port_set_trace(p, NULL);
    npk_port_close(p);
    npk_trace_free(t);
    return text;
}

static void test_shell(void) {
    char *a = shell_run(1), *b = shell_run(0);
    CHECK(a && b && !strcmp(a, b));
    json_t *root = check_trace_json(a);
    json_decref(root);
    free(a);
    free(b);
}

/* ---- reports -------------------------------------------------------------- */

static void test_report_json(void) {
    npk_report *r = npk_report_new("v0", 1000000000ull, 256);
    npk_report_op(r, "MatMul", 1, 4000, 512000);
    npk_report_op(r, "MatMul", 1, 1000, 128000);
    npk_report_op(r, "Softmax", 0, 0, 0);
    npk_report_op(r, "Conv", 0, 0, 360000); /* on the CPU: not in utilization or TOPS (issue #13) */
    npk_report_bytes(r, "dram", 1000, 200);
    npk_report_tokens(r, 10);
    npk_report_note(r, "quote \"x\"", "a\\b");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_EQ(npk_report_write_json(r, f), 0);
    fclose(f);
    json_error_t err;
    json_t *j = json_loads(buf, 0, &err);
    CHECK(j != NULL);
    if (j) {
        CHECK_STR(json_string_value(json_object_get(j, "device")), "v0");
        CHECK_EQ(json_integer_value(json_object_get(j, "total_cycles")), 5000);
        CHECK_EQ(json_integer_value(json_object_get(j, "total_macs")), 1000000);
        CHECK_EQ(json_integer_value(json_object_get(j, "device_macs")), 640000);
        CHECK_EQ(json_integer_value(json_object_get(j, "cpu_macs")), 360000);
        CHECK_EQ(json_integer_value(json_object_get(j, "npu_operators")), 2);
        CHECK_EQ(json_integer_value(json_object_get(j, "host_operators")), 2);
        /* TOPS = macs * 2 / (cycles / hz) / 1e12 = 640000*2 / 5e-6 / 1e12 = 0.256 */
        CHECK(fabs(json_number_value(json_object_get(j, "tops")) - 0.256) < 1e-9);
        /* utilization = 640000 / (256 * 5000) = 0.5 */
        CHECK(fabs(json_number_value(json_object_get(j, "utilization")) - 0.5) < 1e-9);
        /* 10 tokens in 5 us: 2e6 tokens/s, 0.0005 ms/token */
        CHECK(fabs(json_number_value(json_object_get(j, "tokens_per_s")) - 2e6) < 1e-3);
        CHECK(fabs(json_number_value(json_object_get(j, "ms_per_token")) - 0.0005) < 1e-9);
        CHECK(fabs(json_number_value(json_object_get(j, "inference_ms")) - 0.005) < 1e-9);
        json_t *ops = json_object_get(j, "operators");
        CHECK_EQ(json_array_size(ops), 3);
        CHECK_EQ(json_integer_value(json_object_get(json_array_get(ops, 0), "count")), 2);
        json_t *mem = json_object_get(json_object_get(j, "memory"), "dram");
        CHECK_EQ(json_integer_value(json_object_get(mem, "read_bytes")), 1000);
        CHECK_STR(json_string_value(json_object_get(json_object_get(j, "notes"), "quote \"x\"")), "a\\b");
        json_decref(j);
    }
    free(buf);
    /* the text report: utilization and TOPS of the device MACs, the CPU MACs on their own line */
    buf = NULL;
    f = open_memstream(&buf, &len);
    npk_report_print(r, f);
    fclose(f);
    CHECK(strstr(buf, "device MACs                640000\n") != NULL);
    CHECK(strstr(buf, "CPU MACs                   360000 (host operators") != NULL);
    CHECK(strstr(buf, "array utilization          50.00% of 256 MAC/cycle") != NULL);
    CHECK(strstr(buf, "derived TOPS               0.256000") != NULL);
    free(buf);
    npk_report_free(r);
}

int main(void) {
    test_e1();
    test_v0();
    test_pccx();
    test_shell();
    test_report_json();
    return CHECK_DONE();
}
