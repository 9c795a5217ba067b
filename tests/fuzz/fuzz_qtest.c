// SPDX-License-Identifier: MIT
/* libFuzzer target: the qtest protocol engine. The first byte picks the
 * device; the rest is fed as protocol text. Replies are discarded; the
 * engine must never crash, leak or hang. clock_step/clock_set amounts are
 * bounded by the device models' O(1) idle stepping. With NPK_FUZZ_COST=1
 * (scripts/fuzz.sh --cost) the input's host cost is bounded as in the device
 * harnesses (fuzz_util.h). */
#include "npukit/npu.h"
#include "npukit/sim.h"
#include "sim/qtest.h"
#include "fuzz_util.h"

#include <stdint.h>
#include <stdlib.h>

static void sink(void *ctx, const char *data, size_t len) {
    (void)ctx;
    (void)data;
    (void)len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *devs[] = {"e1", "v0", "shell", "pccx"};
    if (size < 1) return 0;
    npk_sim *s = npk_sim_new(devs[data[0] % 4], NULL);
    if (!s) return 0;
    fz_cost_begin();
    npk_mem_map(npk_sim_mem(s), 0, 1u << 24, 0, "ram");
    npk_qtest_cfg cfg = {.idle_limit = 200000, .irq_always = 1};
    npk_qtest *q = npk_qtest_new(s, &cfg, sink, NULL);
    if (!q) abort();
    npk_qtest_feed(q, data + 1, size - 1);
    npk_qtest_eof(q);
    npk_qtest_free(q);
    fz_cost_check(s, "qtest");
    npk_sim_free(s);
    return 0;
}
