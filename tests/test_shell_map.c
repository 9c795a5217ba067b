// SPDX-License-Identifier: MIT
/* shell-map: YAML schedules to descriptor streams. The expected streams are
 * derived by hand from the reference mapper's algorithm (npu/mapper/run.py:
 * expand_deps numbers one event per (dep, waited op) from 1 in dep order, puts
 * the signals right after the producer and the waits (popped per producer, in
 * op order) before the consumer; events add signals after their op; GEMMs get
 * op ids 1, 2, ... in emission order) and packed here independently. */
#include "test_shell_util.h"

static int check_map(const char *yaml, const uint8_t *want, size_t want_len, size_t want_count, int softmax_dtype) {
    uint8_t *bin = NULL;
    size_t len = 0, count = 0;
    int rc = npk_shell_map_yaml_opts(yaml, strlen(yaml), softmax_dtype, &bin, &len, &count);
    CHECK_EQ(rc, 0);
    if (rc) fprintf(stderr, "map: %s\n", npk_errmsg());
    CHECK_EQ(len, want_len);
    CHECK_EQ(count, want_count);
    int same = len == want_len && !memcmp(bin, want, len);
    CHECK(same);
    if (!same && len == want_len)
        for (size_t i = 0; i < len; i++)
            if (bin[i] != want[i]) {
                fprintf(stderr, "  first difference at byte %zu (descriptor %zu byte %zu): 0x%02x vs 0x%02x\n", i, i / 32,
                        i % 32, bin[i], want[i]);
                break;
            }
    free(bin);
    return same;
}

static void expect_fail(const char *yaml, const char *needle) {
    uint8_t *bin = NULL;
    size_t len = 0;
    int rc = npk_shell_map_yaml(yaml, strlen(yaml), &bin, &len, NULL);
    CHECK(rc < 0);
    CHECK(strstr(npk_errmsg(), needle) != NULL);
    if (!strstr(npk_errmsg(), needle)) fprintf(stderr, "message: %s (wanted '%s')\n", npk_errmsg(), needle);
    free(bin);
}

static const char *sched1 =
    "version: 0.1\n"
    "arch: whatever.yml\n"
    "buffers:\n"
    "  - {id: X, addr: 0x1000, bytes: 4096}\n"
    "  - {id: Y, addr: 8192, bytes: 4096}\n"
    "  - id: Z\n    addr: 0x00003000\n    bytes: 4096\n"
    "  - id: W\n    addr: \"0x4000\"\n    bytes: 4096\n"
    "ops:\n"
    "  - {id: c1, type: dma_copy, src: X, dst: Y, bytes: 512}\n"
    "  - {id: v1, type: vec_op, src: Y, dst: Z, bytes: 128, op: add, dtype: int8}\n"
    "  - {id: v2, type: vec_op, src: Z, dst: W, bytes: 64, op: GELU, dtype: fp16}\n"
    "  - id: g1\n    type: gemm\n    a: Y\n    b: Z\n    c: W\n    m: 8\n    n: 4\n    k: 16\n    dtype: int8\n"
    "    layout: row_major\n"
    "deps:\n"
    "  - wait: [c1]\n    then: v1\n"
    "  - wait: [v1, c1]\n    then: g1\n"
    "events:\n"
    "  - id: 7\n    signal_on: g1\n    irq: true\n"
    "  - id: 8\n    signal_on: v2\n";

static const char *sched2 =
    "version: 0.1\n"
    "buffers:\n"
    "  - {id: A, addr: 0x30000000}\n  - {id: B, addr: 0x30010000}\n  - {id: C, addr: 0x30020000}\n"
    "  - {id: BI, addr: 0x30030000}\n"
    "ops:\n"
    "  - {id: g1, type: gemm, a: A, b: B, c: C, m: 16, n: 8, k: 32, lda: 32, ldb: 8, ldc: 32, dtype: bf16,\n"
    "     layout: col_major, gemm_v2: true, user_tag: 0x12345}\n"
    "  - {id: g2, type: gemm, a: A, b: B, c: C, m: 2, n: 2, k: 2, dtype: int8, layout: row_major}\n"
    "  - {id: g3, type: gemm, a: A, b: B, c: C, m: 3, n: 5, k: 7, dtype: fp16, layout: row_major, bias: BI,\n"
    "     alpha: 0.5, epilogue: ReLU, transpose_b: yes, transpose_a: false, op_uid: 0x8000000000000001}\n"
    "  - {id: g4, type: gemm, a: A, b: B, c: C, m: 1, n: 1, k: 1, dtype: fp8, layout: row_major, beta: 2}\n";

static const char *sched3 =
    "version: 0.1\n"
    "buffers: [{id: S, addr: 0x100}, {id: D, addr: 0x200}]\n"
    "ops:\n"
    "  - {id: s1, type: softmax, src: S, dst: D, row_bytes: 64, rows: 3, dtype: fp16}\n"
    "  - {id: t1, type: dma_strided, src: S, dst: D, row_bytes: 16, rows: 4, src_stride: 2, dst_stride: 1}\n"
    "  - {id: l1, type: dma_gather, list_addr: 0x9000, list_count: 3, elem_size: 16}\n"
    "  - {id: w1, type: event_wait, event_id: 40}\n"
    "  - {id: e1, type: event_signal, event_id: 41, irq: 1}\n"
    "  - {id: n1, type: noop}\n"
    "  - {id: r1, type: vec_op, src: S, dst: D, bytes: 32, op: rmsnorm, dtype: bf16}\n";

int main(void) {
    /* schedule 1 */
    {
        uint8_t w[12 * 32];
        memset(w, 0, sizeof w);
        uint8_t *d = w;
        hdr32(d, 0x01, 0, 1, 0), le64(d + 8, 0x1000), le64(d + 16, 0x2000), le32(d + 24, 512), d += 32;
        hdr32(d, 0x20, 0, 1, 1), d += 32; /* c1_signal_1 */
        hdr32(d, 0x20, 0, 1, 3), d += 32; /* c1_signal_3 */
        hdr32(d, 0x21, 0, 1, 1), d += 32; /* v1_wait_1 */
        hdr32(d, 0x11, 0x01, 1, 0), le64(d + 8, 0x2000), le64(d + 16, 0x3000), le32(d + 24, 128), d += 32;
        hdr32(d, 0x20, 0, 1, 2), d += 32; /* v1_signal_2 */
        hdr32(d, 0x11, 0x13, 1, 0), le64(d + 8, 0x3000), le64(d + 16, 0x4000), le32(d + 24, 64), d += 32;
        hdr32(d, 0x20, 0, 1, 8), d += 32; /* event 8 after v2 */
        hdr32(d, 0x21, 0, 1, 2), d += 32; /* g1_wait_2 */
        hdr32(d, 0x21, 0, 1, 3), d += 32; /* g1_wait_3 */
        hdr32(d, 0x10, 0, 1, (8u << 20) | (4u << 10) | 16u), le64(d + 8, 0x2000), le64(d + 16, 0x3000), le64(d + 24, 0x4000),
            d += 32;
        hdr32(d, 0x20, 1, 1, 7), d += 32; /* event 7 after g1, irq */
        check_map(sched1, w, sizeof w, 12, 0);
    }
    /* schedule 2: v0.2 GEMMs */
    {
        uint8_t w[64 + 32 + 96 + 96];
        memset(w, 0, sizeof w);
        uint8_t *d = w;
        hdr32(d, 0x10, 0x12, 2, 0x23450000u);
        le64(d + 8, 0x30000000), le64(d + 16, 0x30010000), le64(d + 24, 0x30020000);
        le32(d + 32, 16), le32(d + 36, 8), le32(d + 40, 32), le32(d + 44, 32), le32(d + 48, 8), le32(d + 52, 32);
        le64(d + 56, 1);
        d += 64;
        hdr32(d, 0x10, 0x00, 1, (2u << 20) | (2u << 10) | 2u);
        le64(d + 8, 0x30000000), le64(d + 16, 0x30010000), le64(d + 24, 0x30020000);
        d += 32;
        hdr32(d, 0x10, 0x01, 3, 0x01u | 0x20u | 0x40u | 0x80u);
        le64(d + 8, 0x30000000), le64(d + 16, 0x30010000), le64(d + 24, 0x30020000);
        le32(d + 32, 3), le32(d + 36, 5), le32(d + 40, 7);
        le64(d + 56, 0x8000000000000001ull);
        le64(d + 64, 0x30030000), le32(d + 72, 0x3f000000);
        d += 96;
        hdr32(d, 0x10, 0x03, 3, 0x100u);
        le64(d + 8, 0x30000000), le64(d + 16, 0x30010000), le64(d + 24, 0x30020000);
        le32(d + 32, 1), le32(d + 36, 1), le32(d + 40, 1);
        le64(d + 56, 4); /* the fourth GEMM (g2 consumed id 2 without emitting it) */
        le32(d + 76, 0x40000000);
        check_map(sched2, w, sizeof w, 4, 0);
    }
    /* schedule 3: softmax (reference FLAGS = 0, or the dtype with --softmax-dtype), strided, gather, events, noop */
    {
        uint8_t w[7 * 32];
        memset(w, 0, sizeof w);
        uint8_t *d = w;
        hdr32(d, 0x12, 0x00, 1, 0), le64(d + 8, 0x100), le64(d + 16, 0x200), le16(d + 24, 64), le16(d + 26, 3), d += 32;
        hdr32(d, 0x02, 0, 1, 0), le64(d + 8, 0x100), le64(d + 16, 0x200), le16(d + 24, 16), le16(d + 26, 4), d[28] = 2,
            d[29] = 1, d += 32;
        hdr32(d, 0x03, 0, 1, 0), le64(d + 8, 0x9000), le32(d + 16, 3), le32(d + 20, 16), d += 32;
        hdr32(d, 0x21, 0, 1, 40), d += 32;
        hdr32(d, 0x20, 1, 1, 41), d += 32;
        hdr32(d, 0x30, 0, 1, 0), d += 32;
        hdr32(d, 0x11, 0x20, 1, 0), le64(d + 8, 0x100), le64(d + 16, 0x200), le32(d + 24, 32), le32(d + 28, 1), d += 32;
        check_map(sched3, w, sizeof w, 7, 0);
        w[1] = 0x10;
        check_map(sched3, w, sizeof w, 7, 1);
    }
    /* a mapped stream runs on the device: copy + vec add (int8, saturating) behind events */
    {
        const char *y = "version: 0.1\nbuffers: [{id: X, addr: 0x50000000}, {id: Y, addr: 0x50001000}, {id: Z, addr: 0x50002000}]\n"
                        "ops:\n  - {id: c, type: dma_copy, src: X, dst: Y, bytes: 16}\n"
                        "  - {id: v, type: vec_op, src: Y, dst: Z, bytes: 16, op: add, dtype: int8}\n"
                        "deps: [{wait: [c], then: v}]\nevents: [{id: 9, signal_on: v, irq: true}]\n";
        uint8_t *bin;
        size_t len;
        CHECK_EQ(npk_shell_map_yaml(y, strlen(y), &bin, &len, NULL), 0);
        npk_port *p = open_shell(NULL);
        npk_shell *sh;
        CHECK_EQ(npk_shell_open(&sh, p, NULL), 0);
        int8_t x[16], z[16], got[16];
        for (int i = 0; i < 16; i++) x[i] = (int8_t)(i * 9 - 60), z[i] = (int8_t)(100 - i * 13);
        npk_port_mem_write(p, 0x50000000, x, 16);
        npk_port_mem_write(p, 0x50002000, z, 16);
        CHECK_EQ(npk_shell_run(sh, bin, len, 1000000), 0);
        npk_port_mem_read(p, 0x50002000, got, 16);
        for (int i = 0; i < 16; i++) {
            int s = x[i] + z[i];
            CHECK_EQ(got[i], s > 127 ? 127 : s < -128 ? -128 : s);
        }
        CHECK(reg(p, SHELL_IRQ_STATUS) & SHELL_IRQ_EVENT);
        npk_shell_close(sh);
        npk_port_close(p);
        free(bin);
    }
    /* Issue #13: DMA_STRIDED strides are bytes, as the reference mapper copies
     * row_bytes/src_stride/dst_stride from the YAML into the descriptor: 3 rows
     * of 16 bytes read every 48 bytes and written every 24 bytes. */
    {
        const char *y = "version: 0.1\nbuffers: [{id: S, addr: 0x50000000}, {id: D, addr: 0x50001000}]\n"
                        "ops:\n  - {id: t, type: dma_strided, src: S, dst: D, row_bytes: 16, rows: 3, src_stride: 48, "
                        "dst_stride: 24}\n";
        uint8_t *bin;
        size_t len;
        CHECK_EQ(npk_shell_map_yaml(y, strlen(y), &bin, &len, NULL), 0);
        CHECK_EQ(bin[28], 48);
        CHECK_EQ(bin[29], 24);
        npk_port *p = open_shell(NULL);
        npk_shell *sh;
        CHECK_EQ(npk_shell_open(&sh, p, NULL), 0);
        uint8_t src[160], got[96], want[96];
        for (int i = 0; i < 160; i++) src[i] = (uint8_t)(i + 1);
        memset(got, 0xaa, sizeof got);
        npk_port_mem_write(p, 0x50000000, src, sizeof src);
        npk_port_mem_write(p, 0x50001000, got, sizeof got);
        CHECK_EQ(npk_shell_run(sh, bin, len, 1000000), 0);
        npk_port_mem_read(p, 0x50001000, got, sizeof got);
        memset(want, 0xaa, sizeof want);
        for (int r = 0; r < 3; r++)
            for (int b = 0; b < 16; b++) want[24 * r + b] = (uint8_t)(48 * r + b + 1);
        CHECK(!memcmp(got, want, sizeof want));
        free(bin);
        /* a destination pitch below ROW_BYTES would overlap rows: BAD_DESCRIPTOR */
        y = "version: 0.1\nbuffers: [{id: S, addr: 0x50000000}, {id: D, addr: 0x50001000}]\n"
            "ops:\n  - {id: t, type: dma_strided, src: S, dst: D, row_bytes: 16, rows: 2, src_stride: 16, dst_stride: 8}\n";
        CHECK_EQ(npk_shell_map_yaml(y, strlen(y), &bin, &len, NULL), 0);
        CHECK(npk_shell_run(sh, bin, len, 1000000) < 0);
        CHECK(strstr(npk_errmsg(), "BAD_DESCRIPTOR") != NULL);
        npk_shell_close(sh);
        npk_port_close(p);
        free(bin);
    }
    /* refusals */
    expect_fail("version: \"0.1\"\nops: []\n", "version must be 0.1");
    expect_fail("version: 0.2\n", "version must be 0.1");
    expect_fail("- a\n- b\n", "top-level must be a mapping");
    expect_fail("version: 0.1\nops: [{id: a, type: dma_copy, src: Q, dst: Q, bytes: 1}]\n", "unknown buffer 'Q'");
    expect_fail("version: 0.1\nbuffers: [{id: Q, addr: 0}]\nops: [{id: a, type: vec_op, src: Q, dst: Q, bytes: 1, op: "
                "frobnicate, dtype: int8}]\n",
                "unsupported vec_op op 'frobnicate'");
    expect_fail("version: 0.1\nbuffers: [{id: Q, addr: 0}]\nops: [{id: a, type: softmax, src: Q, dst: Q, row_bytes: 70000, "
                "rows: 1, dtype: int8}]\n",
                "row_bytes 70000 does not fit");
    expect_fail("version: 0.1\nbuffers: [{id: Q, addr: 0}]\nops: [{id: a, type: gemm, a: Q, b: Q, c: Q, m: 5000, n: 1, k: 1, "
                "dtype: int8, layout: row_major}]\n",
                "m 5000 does not fit");
    expect_fail("version: 0.1\nbuffers: [{id: Q, addr: 0}]\nops: [{id: a, type: noop}]\nevents: [{id: done, signal_on: a}]\n",
                "id 'done' is not an integer");
    expect_fail("version: 0.1\nops: [{id: a, type: noop}, {id: a, type: noop}]\n", "unique");
    expect_fail("version: 0.1\nops: [{id: a, type: noop}]\ndeps: [{wait: [zz], then: a}]\n", "unknown op zz");
    expect_fail("version: 0.1\nops: [{id: a, type: nonsense}]\n", "unknown op type 'nonsense'");
    expect_fail("version: 0.1\nops: [ {id: a\n", "YAML line");
    return CHECK_DONE();
}
