// SPDX-License-Identifier: MIT
/* Issue 32 points 2 and 3 at the model level, deterministic (no signals, no
 * timing): a long device action stops when the serving process asks
 * (npk_dev.stop), and pccx's weight cache stays within max_wcache.
 *
 * The stop flag is raised by a bus watcher at a chosen beat, so the action is
 * known to be running when it is raised:
 *   - pccx GEMV: at the first beat of the weight record (the record is read in
 *     1 MiB pieces; the next piece is not read) and at its last beat (the
 *     record is read, no output row is computed): STATUS.HUNG, nothing
 *     retired, the destination keeps its bytes; CTRL.RESET recovers and the
 *     same GEMV then gives y = K * w (all-ones x, every weight w);
 *   - shell GEMM: at the first beat of A (B is not read: TIMEOUT, C
 *     untouched), and at the last beat of B of a GEMM of 2^31 MACs, which runs
 *     as blocks of 2^30 (the second block is not run: TIMEOUT, C untouched);
 *     without the flag the same GEMM gives C = K * a * b;
 *   - the server's poll hook (npk_dev.poll) runs inside both actions.
 * The shell's GEMM blocks keep the fp32 kernel's bits (row and column blocks
 * against one call).
 * Weight cache: records whose prepared size fits max_wcache once but not
 * twice; GEMVs over three records in turn evict the least recently used one
 * each time, the held bytes never pass max_wcache, and every result is
 * K * w of its own record. */
#include "check.h"
#include "npukit/gemm.h"
#include "npukit/pccx.h"
#include "npukit/pccx_model.h"
#include "npukit/shell.h"
#include "npukit/shell_desc.h"
#include "npukit/sim.h"

#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t stop_flag;
static uint64_t trigger; /* the beat address that raises the flag */

static unsigned polls; /* npk_dev.poll calls */
static void count_poll(void *ctx) {
    (void)ctx;
    polls++;
}

static void watch(void *ctx, npk_access acc, uint64_t addr, size_t len, npk_bus_resp r) {
    (void)ctx, (void)len, (void)r;
    if (acc == NPK_ACC_READ && addr == trigger) stop_flag = 1;
}

/* ---- pccx ------------------------------------------------------------------------ */

#define PB 0x10040000ull
#define WS 0x1000000ull

static uint32_t rd32(npk_sim *s, uint64_t addr) {
    uint64_t v = 0;
    npk_sim_read(s, addr, 4, &v);
    return (uint32_t)v;
}
static uint32_t prd(npk_sim *s, uint32_t off) { return rd32(s, PB + off); }
static void pwr(npk_sim *s, uint32_t off, uint32_t v) { npk_sim_write(s, PB + off, 4, v); }
static void pissue(npk_sim *s, uint64_t w) { npk_sim_write(s, PB + NPK_PCCX_INSTR_LO, 8, w); }

/* BF16 elements [word*8, word*8 + n) of L2 through the debug window. */
static void l2_fill(npk_sim *s, uint32_t word, uint16_t v, unsigned n) {
    pwr(s, NPK_PCCX_L2_ADDR, word);
    for (unsigned i = 0; i < n; i += 2) pwr(s, NPK_PCCX_L2_DATA, (uint32_t)v | (uint32_t)v << 16);
}
static uint16_t l2_get(npk_sim *s, uint32_t word, unsigned lane) {
    pwr(s, NPK_PCCX_L2_ADDR, word);
    uint32_t v = 0;
    for (unsigned i = 0; i <= lane / 2; i++) v = prd(s, NPK_PCCX_L2_DATA);
    return (uint16_t)(lane & 1 ? v >> 16 : v);
}

/* A GEMV of M rows of N x K over the record at ws (x at word 0, y at word
 * dest), the shapes at constant-cache entries 1 and 2, run to idle. */
static void gemv(npk_sim *s, uint64_t ws, unsigned M, unsigned N, unsigned K, uint32_t dest) {
    pwr(s, NPK_PCCX_WS_ADDR_LO, (uint32_t)ws);
    pwr(s, NPK_PCCX_WS_ADDR_HI, (uint32_t)(ws >> 32));
    pissue(s, npk_pccx_memset_word(0, 1, 1, (uint16_t)M, (uint16_t)K));
    pissue(s, npk_pccx_memset_word(1, 2, (uint16_t)N, (uint16_t)K, 0));
    pissue(s, npk_pccx_gemv_word(dest, 0, 0, 2, 1, 0));
    npk_sim_run_until_idle(s, 1ull << 40);
}

/* bf16 of a small integer power-of-two multiple (exact) */
static uint16_t bf16_int(int v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static void test_pccx_stop(void) {
    const unsigned M = 2, N2 = 2048, K = 2048; /* a 2 MiB record: two pieces of 1 MiB */
    npk_sim *s = npk_sim_new("pccx", NULL);
    CHECK(s != NULL);
    if (!s) return;
    npk_dev *d = npk_sim_dev(s);
    npk_mem *m = npk_sim_mem(s);
    d->stop = &stop_flag;
    uint64_t rec = npk_pccx_wrec_size(N2, K, 0, 0);
    CHECK_EQ(rec, 2u << 20);
    uint8_t *w = malloc(rec);
    memset(w, 0x33, rec); /* every weight 3 */
    CHECK_EQ(npk_mem_poke(m, WS, w, rec), 0);
    free(w);
    uint32_t dest = M * K / 8; /* after x */
    l2_fill(s, 0, 0x3f80, M * K); /* x = 1.0 */
    npk_mem_set_watch(m, watch, NULL);
    const uint64_t at[2] = {WS, WS + rec - 16};
    for (int c = 0; c < 2; c++) {
        l2_fill(s, dest, 0x1234, M * N2);
        stop_flag = 0;
        trigger = at[c];
        gemv(s, WS, M, N2, K, dest);
        uint32_t st = prd(s, NPK_PCCX_STATUS);
        CHECK(st & NPK_PCCX_STATUS_HUNG);
        CHECK_EQ(prd(s, NPK_PCCX_INSTR_RETIRED), 2); /* the two MEMSETs */
        CHECK_EQ(l2_get(s, dest, 0), 0x1234);
        CHECK_EQ(l2_get(s, dest + M * N2 / 8 - 1, 7), 0x1234);
        stop_flag = 0;
        pwr(s, NPK_PCCX_CTRL, NPK_PCCX_CTRL_RESET);
        CHECK_EQ(prd(s, NPK_PCCX_STATUS) & NPK_PCCX_STATUS_HUNG, 0);
    }
    npk_mem_set_watch(m, NULL, NULL);
    /* the same GEMV without a stop: y = K * 3; the server's poll hook runs
     * inside it (at least per 1 MiB piece of a record read anew and per row) */
    d->poll = count_poll;
    polls = 0;
    gemv(s, WS, M, N2, K, dest);
    CHECK(polls >= M);
    d->poll = NULL;
    CHECK_EQ(prd(s, NPK_PCCX_ERR_CODE), 0);
    CHECK_EQ(l2_get(s, dest, 0), bf16_int(3 * (int)K));
    CHECK_EQ(l2_get(s, dest + M * N2 / 8 - 1, 7), bf16_int(3 * (int)K));
    d->stop = NULL;
    npk_sim_free(s);
}

static void test_pccx_wcache(void) {
    const unsigned N = 1024, K = 64;
    uint64_t rec = npk_pccx_wrec_size(N, K, 0, 0); /* 32 KiB */
    /* one prepared record: measure it with an unbounded cache */
    npk_sim *s = npk_sim_new("pccx", NULL);
    CHECK(s != NULL);
    if (!s) return;
    uint8_t *w = malloc(rec);
    memset(w, 0x11, rec);
    npk_mem_poke(npk_sim_mem(s), WS, w, rec);
    l2_fill(s, 0, 0x3f80, K);
    gemv(s, WS, 1, N, K, 16);
    npk_pccx_wcache c;
    npk_pccx_wcache_get(npk_sim_dev(s), &c);
    CHECK_EQ(c.records, 1);
    CHECK_EQ(c.misses, 1);
    uint64_t one = c.bytes;
    CHECK(one >= N * K && one < 2 * N * K);
    npk_sim_free(s);

    char opts[64];
    snprintf(opts, sizeof opts, "max_wcache=%llu", (unsigned long long)(one + one / 2));
    s = npk_sim_new("pccx", opts);
    CHECK(s != NULL);
    if (!s) {
        free(w);
        return;
    }
    const int val[3] = {1, 2, -1}; /* nibbles 0x1, 0x2, 0xf */
    const uint8_t byte[3] = {0x11, 0x22, 0xff};
    for (int r = 0; r < 3; r++) {
        memset(w, byte[r], rec);
        npk_mem_poke(npk_sim_mem(s), WS + (uint64_t)r * rec, w, rec);
    }
    free(w);
    l2_fill(s, 0, 0x3f80, K);
    static const int order[7] = {0, 1, 0, 2, 2, 1, 0};
    for (int i = 0; i < 7; i++) {
        int r = order[i];
        l2_fill(s, 16, 0x1234, N);
        gemv(s, WS + (uint64_t)r * rec, 1, N, K, 16);
        CHECK_EQ(prd(s, NPK_PCCX_ERR_CODE), 0);
        CHECK_EQ(l2_get(s, 16, 0), bf16_int(val[r] * (int)K));
        CHECK_EQ(l2_get(s, 16 + N / 8 - 1, 7), bf16_int(val[r] * (int)K));
        npk_pccx_wcache_get(npk_sim_dev(s), &c);
        CHECK_EQ(c.records, 1);
        CHECK(c.bytes <= one + one / 2);
    }
    /* hits only on the repeated record (4th and 5th GEMVs use record 2) */
    CHECK_EQ(c.hits, 1);
    CHECK_EQ(c.misses, 6);
    CHECK_EQ(c.evictions, 5);
    npk_sim_free(s);

    /* max_wcache=0: nothing kept, the same results */
    s = npk_sim_new("pccx", "max_wcache=0");
    CHECK(s != NULL);
    if (!s) return;
    w = malloc(rec);
    memset(w, 0x22, rec);
    npk_mem_poke(npk_sim_mem(s), WS, w, rec);
    free(w);
    l2_fill(s, 0, 0x3f80, K);
    for (int i = 0; i < 2; i++) {
        gemv(s, WS, 1, N, K, 16);
        CHECK_EQ(l2_get(s, 16, 0), bf16_int(2 * (int)K));
    }
    npk_pccx_wcache_get(npk_sim_dev(s), &c);
    CHECK_EQ(c.records, 0);
    CHECK_EQ(c.bytes, 0);
    CHECK_EQ(c.misses, 2);
    npk_sim_free(s);
}

/* ---- shell ----------------------------------------------------------------------- */

#define SB SHELL_MMIO_BASE
#define RING 0x1000ull
#define A 0x100000ull
#define B 0x1000000ull
#define C 0x2000000ull

static uint32_t srd(npk_sim *s, uint32_t off) { return rd32(s, SB + off); }
static void swr(npk_sim *s, uint32_t off, uint32_t v) { npk_sim_write(s, SB + off, 4, v); }

/* One INT8 GEMM v0.2 descriptor (packed) at RING, rung and run to idle. */
static void shell_gemm(npk_sim *s, uint32_t m, uint32_t n, uint32_t k) {
    uint8_t d[64];
    memset(d, 0, sizeof d);
    d[0] = SHELL_OP_GEMM, d[2] = 2;
    for (int j = 0; j < 8; j++) d[8 + j] = (uint8_t)(A >> 8 * j), d[16 + j] = (uint8_t)(B >> 8 * j), d[24 + j] = (uint8_t)(C >> 8 * j);
    const uint32_t mnk[3] = {m, n, k};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) d[32 + 4 * i + j] = (uint8_t)(mnk[i] >> 8 * j);
    npk_mem_poke(npk_sim_mem(s), RING, d, sizeof d);
    swr(s, SHELL_CONTROL, SHELL_CTRL_RESET);
    swr(s, SHELL_CQ_BASE_LO, (uint32_t)RING);
    swr(s, SHELL_CQ_SIZE, 0x100);
    swr(s, SHELL_CQ_TAIL, 0x40);
    swr(s, SHELL_DOORBELL, 1);
    npk_sim_run_until_idle(s, 1ull << 40);
}

static void test_shell_stop(void) {
    npk_sim *s = npk_sim_new("shell", NULL);
    CHECK(s != NULL);
    if (!s) return;
    npk_dev *d = npk_sim_dev(s);
    npk_mem *m = npk_sim_mem(s);
    d->stop = &stop_flag;
    const uint32_t M = 2048, N = 1024, K = 1024; /* 2^31 MACs: two blocks */
    uint8_t *buf = malloc((size_t)M * K);
    memset(buf, 2, (size_t)M * K);
    npk_mem_poke(m, A, buf, (size_t)M * K);
    memset(buf, 3, (size_t)K * N);
    npk_mem_poke(m, B, buf, (size_t)K * N);
    const uint64_t at[2] = {A, B + (uint64_t)K * N - 64};
    for (int c = 0; c < 2; c++) {
        npk_mem_fill(m, C, 0x5a, (size_t)M * N * 4);
        npk_mem_set_watch(m, watch, NULL);
        stop_flag = 0;
        trigger = at[c];
        shell_gemm(s, M, N, K);
        npk_mem_set_watch(m, NULL, NULL);
        CHECK_EQ(srd(s, SHELL_ERROR_CODE), SHELL_ERR_TIMEOUT);
        CHECK_EQ(srd(s, SHELL_CQ_HEAD), 0);
        uint32_t v = 0;
        npk_mem_peek(m, C, &v, 4);
        CHECK_EQ(v, 0x5a5a5a5au);
        npk_mem_peek(m, C + (uint64_t)M * N * 4 - 4, &v, 4);
        CHECK_EQ(v, 0x5a5a5a5au);
    }
    stop_flag = 0;
    d->poll = count_poll;
    polls = 0;
    shell_gemm(s, M, N, K);
    CHECK(polls >= M + K); /* every line of A and B, and between the two blocks */
    d->poll = NULL;
    CHECK_EQ(srd(s, SHELL_ERROR_CODE), 0);
    CHECK_EQ(srd(s, SHELL_CQ_HEAD), 0x40);
    int32_t v = 0;
    npk_mem_peek(m, C, &v, 4);
    CHECK_EQ(v, 6 * (int)K);
    npk_mem_peek(m, C + (uint64_t)M * N * 4 - 4, &v, 4);
    CHECK_EQ(v, 6 * (int)K);
    free(buf);
    d->stop = NULL;
    npk_sim_free(s);
}

/* What the shell's GEMM blocks rely on (include/npukit/gemm.h): the fp32
 * kernel gives every output the same bits whether it runs as one call, as
 * row blocks (B packed per block) or as column blocks (A packed per block).
 * Random finite operands of mixed magnitude (so that the fused path is off for
 * some blocks and on for others). */
static void test_block_bits(void) {
    enum { M = 37, N = 70, K = 301 };
    static float a[M * K], b[K * N], one[M * N], blk[M * N];
    uint32_t x = 12345;
    for (int i = 0; i < M * K; i++) {
        x = x * 1103515245u + 12345u;
        a[i] = (float)((int)(x >> 8) % 2001 - 1000) * (i % 7 ? 1e-3f : 1.0f / 3.0f);
    }
    for (int i = 0; i < K * N; i++) {
        x = x * 1103515245u + 12345u;
        b[i] = (float)((int)(x >> 8) % 2001 - 1000) * 0.0625f;
    }
    npk_gemm_ws ws = {0};
    CHECK_EQ(npk_gemm_f32(&ws, M, N, K, a, K, b, N, one, N), 0);
    memset(blk, 0, sizeof blk);
    for (uint32_t i = 0; i < M; i += 10) /* row blocks of 10 */
        npk_gemm_f32(&ws, M - i < 10 ? M - i : 10, N, K, a + (size_t)i * K, K, b, N, blk + (size_t)i * N, N);
    CHECK(!memcmp(one, blk, sizeof one));
    memset(blk, 0, sizeof blk);
    for (uint32_t j = 0; j < N; j += 24) /* column blocks of 24 */
        npk_gemm_f32(&ws, M, N - j < 24 ? N - j : 24, K, a, K, b + j, N, blk + j, N);
    CHECK(!memcmp(one, blk, sizeof one));
    npk_gemm_ws_free(&ws);
}

int main(void) {
    test_block_bits();
    test_pccx_stop();
    test_pccx_wcache();
    test_shell_stop();
    return CHECK_DONE();
}
