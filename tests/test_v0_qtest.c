// SPDX-License-Identifier: MIT
/* The v0 driver over the qtest port: `npu qtest --device v0` spawned as a
 * child (qtest-spawn), the same operations as in-process, checked against
 * the CPU reference; error recovery and the fallback handler across the
 * process boundary; gemmini_present=0 passed as a device option. */
#include "check.h"
#include "npukit/npu.h"
#include "npukit/v0.h"
#include "ops/ref.h"

#include <stdlib.h>

static uint32_t s = 99;
static int8_t rnd8(void) {
    s = s * 1103515245u + 12345u;
    return (int8_t)(s >> 16);
}

static void run_ops(const char *opts, int expect_gemmini) {
    npk_port *p;
    npk_v0 *v;
    if (npk_port_open(&p, "qtest-spawn:" NPU_BIN, "v0", opts)) {
        fprintf(stderr, "qtest-spawn: %s\n", npk_errmsg());
        CHECK(0);
        return;
    }
    CHECK_STR(npk_port_kind(p), "qtest");
    npk_v0_config cfg;
    npk_v0_config_default(&cfg);
    cfg.cpu_exec = npk_v0_cpu_execute;
    cfg.use_irq = 1; /* interrupt lines travel as qtest IRQ messages */
    if (npk_v0_open(&v, p, &cfg)) {
        fprintf(stderr, "open: %s\n", npk_errmsg());
        CHECK(0);
        npk_port_close(p);
        return;
    }
    CHECK_EQ((npk_v0_caps(v) & NPK_V0_CAPS_GEMMINI) != 0, expect_gemmini);
    /* matmul */
    enum { M = 20, N = 24, K = 40 };
    int8_t A[M * K], B[K * N];
    int32_t C[M * N], W[M * N];
    for (int i = 0; i < M * K; i++) A[i] = rnd8();
    for (int i = 0; i < K * N; i++) B[i] = rnd8();
    npk_ref_matmul_s8s32(M, N, K, A, K, B, N, W, N, 1, 0);
    CHECK_EQ(npk_v0_matmul(v, M, N, K, A, B, C, 1), 0);
    CHECK(!memcmp(C, W, sizeof C));
    /* conv 3x3 pad 1 */
    npk_v0_conv cv = {8, 8, 3, 4, 3, 1, 1, 1, 1, 1};
    int8_t in[8 * 8 * 3], wt[9 * 3 * 4], out[8 * 8 * 4], want[8 * 8 * 4];
    for (size_t i = 0; i < sizeof in; i++) in[i] = rnd8();
    for (size_t i = 0; i < sizeof wt; i++) wt[i] = rnd8();
    npk_ref_conv rc = {8, 8, 3, 4, 3, 3, 1, 1, 1, 1, 1};
    npk_ref_conv2d_s8(&rc, in, 24, wt, 4, want, 32, 0, 0);
    CHECK_EQ(npk_v0_conv2d(v, &cv, in, wt, out, 0), 0);
    CHECK(!memcmp(out, want, sizeof out));
    /* forced fallback and an unknown opcode with recovery */
    npk_v0_desc ds[2] = {npk_v0_desc_simple(NPK_V0_OP_FALLBACK, 0, 1), npk_v0_desc_simple(NPK_V0_OP_NOP, 0, 2)};
    CHECK_EQ(npk_v0_run(v, ds, 2), 0);
    CHECK(npk_v0_get_stats(v)->fallbacks_run >= 1);
    ds[0] = npk_v0_desc_simple(0x55, 0, 3);
    CHECK_EQ(npk_v0_run(v, ds, 2), -NPK_EUNSUPPORTED);
    CHECK(strstr(npk_errmsg(), "unknown opcode") != NULL);
    ds[0] = npk_v0_desc_simple(NPK_V0_OP_NOP, 0, 4);
    CHECK_EQ(npk_v0_run(v, ds, 2), 0);
    uint32_t tag;
    CHECK_EQ(npk_port_read32(p, NPK_V0_REG_COMPLETION_TAG, &tag), 0);
    CHECK_EQ(tag, 2);
    npk_v0_close(v);
    npk_port_close(p);
}

int main(void) {
    run_ops(NULL, 1);
    run_ops("gemmini_present=0", 0);
    return CHECK_DONE();
}
