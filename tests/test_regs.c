// SPDX-License-Identifier: MIT
/* Registers declared once: every device's table agrees with its ABI header,
 * reset goes through the table, peek has no side effects (the pccx L2 window
 * regression), and guest errors are counted, traced and logged. */
#include "check.h"
#include "npukit/e1.h"
#include "npukit/npu.h"
#include "npukit/pccx.h"
#include "npukit/shell.h"
#include "npukit/sim.h"
#include "npukit/trace.h"
#include "npukit/v0.h"
#include "sim/qtest.h"

#include <stdlib.h>
#include <string.h>

/* ---- the tables ---------------------------------------------------------------- */

/* Each table entry sits at its word offset, its offset decodes back to it,
 * and after reset every register reads (peeks) its reset value. */
static void test_tables(void) {
    static const char *const devs[] = {"e1", "v0", "shell", "pccx"};
    static const size_t expect_n[] = {48, 35, 23, 50}; /* v0: 23 of the spec + 12 per-engine counters */
    for (size_t k = 0; k < 4; k++) {
        npk_sim *s = npk_sim_new(devs[k], NULL);
        CHECK(s != NULL);
        if (!s) continue;
        npk_dev *d = npk_sim_dev(s);
        npk_regfile *rf = d->regs;
        CHECK_EQ(rf->n, expect_n[k]);
        size_t it = 0, n = 0;
        uint32_t last = 0;
        for (const npk_reg *r; (r = npk_regfile_next(rf, &it));) {
            CHECK(npk_regfile_find(rf, r->off) == r);
            CHECK(n == 0 || r->off > last); /* offset order */
            CHECK_EQ(r->reset & r->rsv, 0);  /* a reset value never sets reserved bits */
            CHECK_EQ(npk_regfile_peek(rf, d, r->off), r->reset);
            last = r->off;
            n++;
        }
        CHECK_EQ(n, rf->n);
        CHECK_EQ(npk_sim_guest_errors(s, -1), 0);
        npk_sim_free(s);
    }
    /* the generated ABI: offsets and fields as the specs give them */
    CHECK_EQ(E1_REG_SCRATCH15, 0xbc);
    CHECK_EQ(E1_REG_PERF_THERMAL_THROTTLE, 0x7c);
    CHECK_EQ(NPK_FMASK(E1_CMD_PARAM_OWNER), 0xfffff000u);
    CHECK_EQ(e1_gemm_cfg(3, 2, 5), 0x00050203u);
    CHECK_EQ(NPK_FEX(0x00e80001u, E1_DESC_STATUS_PENDING), 5);
    CHECK_EQ(NPK_FDP(0xffffffffu, E1_TRACE_OPCODE, 0), 0xffffff87u);
    CHECK_EQ(NPK_V0_REG_COMPLETION_TAG, 0x05c);
    CHECK_EQ(NPK_V0_IRQ_ALL, 0x1f);
    CHECK_EQ(npk_v0_st_errcode(0x00070010u), 7);
    CHECK_EQ(SHELL_PERF_DMA_BYTES, 0x07c);
    CHECK_EQ(SHELL_IRQ_ERROR, 4);
    CHECK_EQ(NPK_PCCX_CTRL, 0xc4);
    CHECK_EQ(NPK_PCCX_STATUS_HUNG, 8);
}

/* ---- peek ------------------------------------------------------------------------ */

static char *qout;
static size_t qlen;
static void capture(void *ctx, const char *data, size_t len) {
    (void)ctx;
    qout = realloc(qout, qlen + len + 1);
    memcpy(qout + qlen, data, len);
    qlen += len;
    qout[qlen] = 0;
}
static const char *req(npk_qtest *q, const char *line) {
    qlen = 0;
    if (qout) qout[0] = 0;
    npk_qtest_command(q, line);
    return qout ? qout : "";
}

/* Reading pccx L2_DATA over the bus advances the L2 window; npu_regs and the
 * register dump peek and must not (regression: after four npu_regs L2_ADDR
 * read 1 instead of 0). */
static void test_pccx_peek(void) {
    npk_sim *s = npk_sim_new("pccx", NULL);
    CHECK(s != NULL);
    npk_qtest *q = npk_qtest_new(s, NULL, capture, NULL);
    uint64_t base = npk_sim_class(s)->mmio_base;
    char line[128];
    for (int i = 0; i < 4; i++) CHECK(strncmp(req(q, "npu_regs"), "OK ", 3) == 0);
    snprintf(line, sizeof line, "readl 0x%llx", (unsigned long long)(base + NPK_PCCX_L2_ADDR));
    CHECK_STR(req(q, line), "OK 0x0000000000000000\n");
    FILE *devnull = fopen("/dev/null", "w");
    for (int i = 0; i < 4; i++) npk_sim_dump_regs(s, devnull);
    fclose(devnull);
    CHECK_STR(req(q, line), "OK 0x0000000000000000\n");
    /* the window itself still auto-increments on bus accesses */
    npk_sim_write(s, base + NPK_PCCX_L2_ADDR, 4, 7);
    for (uint32_t lane = 0; lane < 4; lane++) npk_sim_write(s, base + NPK_PCCX_L2_DATA, 4, 0x11110000u * (lane + 1));
    uint64_t v = 0;
    npk_sim_read(s, base + NPK_PCCX_L2_ADDR, 4, &v);
    CHECK_EQ(v, 8);
    npk_sim_write(s, base + NPK_PCCX_L2_ADDR, 4, 7);
    npk_dev *d = npk_sim_dev(s);
    CHECK_EQ(npk_regfile_peek(d->regs, d, NPK_PCCX_L2_DATA), 0x11110000u);
    CHECK_EQ(npk_regfile_peek(d->regs, d, NPK_PCCX_L2_DATA), 0x11110000u);
    npk_sim_read(s, base + NPK_PCCX_L2_DATA, 4, &v);
    CHECK_EQ(v, 0x11110000u);
    npk_sim_read(s, base + NPK_PCCX_L2_DATA, 4, &v);
    CHECK_EQ(v, 0x22220000u);
    /* stored registers are the table's: reset restores them */
    npk_sim_write(s, base + NPK_PCCX_HWIN_SIZE, 4, 0x1000);
    npk_sim_write(s, base + NPK_PCCX_EMAX, 4, 0x3f80);
    npk_sim_write(s, base + NPK_PCCX_CTRL, 4, NPK_PCCX_CTRL_RESET);
    CHECK_EQ(npk_regfile_peek(d->regs, d, NPK_PCCX_HWIN_SIZE), 0x200000u);
    CHECK_EQ(npk_regfile_peek(d->regs, d, NPK_PCCX_EMAX), 0xff80u);
    CHECK_EQ(npk_regfile_peek(d->regs, d, NPK_PCCX_L2_ADDR), 0);
    npk_qtest_free(q);
    npk_sim_free(s);
}

/* ---- guest errors ---------------------------------------------------------------- */

static void test_guest_errors(void) {
    npk_sim *s = npk_sim_new("e1", NULL);
    npk_trace *t = npk_trace_new();
    npk_dev *d = npk_sim_dev(s);
    d->trace = t;
    npk_trace_process(t, "e1", E1_HZ);
    FILE *log = tmpfile();
    npk_sim_set_guest_log(s, log);
    npk_qtest *q = npk_qtest_new(s, NULL, capture, NULL);
    uint64_t base = E1_MMIO_BASE;
    uint64_t v = 0;
    /* accesses a driver makes are no guest errors */
    npk_sim_write(s, base + E1_REG_OP_A, 4, 5);
    npk_sim_write(s, base + E1_REG_OPCODE, 4, E1_OP_ADD);
    npk_sim_write(s, base + E1_REG_CTRL_STATUS, 4, E1_CTRL_START);
    npk_sim_step(s, 10);
    npk_sim_write(s, base + E1_REG_CTRL_STATUS, 4, E1_CTRL_CLEAR);
    npk_sim_read(s, base + E1_REG_RESULT, 4, &v);
    CHECK_EQ(v, 5);
    CHECK_EQ(npk_sim_guest_errors(s, -1), 0);
    /* 0xc0-0xfc: no register; reads 0, writes ignored */
    CHECK_EQ(npk_sim_read(s, base + 0xc0, 4, &v), 0);
    CHECK_EQ(v, 0);
    npk_sim_write(s, base + 0xfc, 4, 1);
    CHECK_EQ(npk_sim_guest_errors(s, NPK_GE_UNKNOWN_OFFSET), 2);
    /* RESULT is read-only: the write is ignored and recorded */
    npk_sim_write(s, base + E1_REG_RESULT, 4, 0x1234);
    npk_sim_read(s, base + E1_REG_RESULT, 4, &v);
    CHECK_EQ(v, 5);
    npk_sim_write(s, base + E1_REG_RESULT, 4, 5); /* writing what it reads is fine */
    CHECK_EQ(npk_sim_guest_errors(s, NPK_GE_READ_ONLY), 1);
    /* OPCODE[31:4] are reserved: stored as 0 */
    npk_sim_write(s, base + E1_REG_OPCODE, 4, 0xf3);
    npk_sim_read(s, base + E1_REG_OPCODE, 4, &v);
    CHECK_EQ(v, 3);
    CHECK_EQ(npk_sim_guest_errors(s, NPK_GE_RESERVED), 1);
    /* widths: a byte write into the window fails (machine and qtest) */
    CHECK(npk_sim_write(s, base + E1_REG_OP_A, 1, 1) != 0);
    char line[96];
    snprintf(line, sizeof line, "writew 0x%llx 0x1", (unsigned long long)(base + E1_REG_OP_B));
    CHECK(strncmp(req(q, line), "FAIL", 4) == 0);
    CHECK_EQ(npk_sim_guest_errors(s, NPK_GE_WIDTH), 2);
    CHECK_STR(req(q, "npu_guest_errors"), "OK total=6 unknown-offset=2 read-only=1 reserved=1 width=2\n");
    /* one log line and one trace event per guest error */
    CHECK_EQ(npk_trace_events(t, "e1", "guest errors"), 6);
    rewind(log);
    char buf[512];
    int lines = 0, saw_ro = 0;
    while (fgets(buf, sizeof buf, log)) {
        lines++;
        if (strstr(buf, "guest error (read-only)") && strstr(buf, "RESULT")) saw_ro = 1;
    }
    CHECK_EQ(lines, 6);
    CHECK(saw_ro);
    fclose(log);
    npk_qtest_free(q);
    d->trace = NULL;
    npk_trace_free(t);
    npk_sim_free(s);
}

/* Pre-write hooks decide what is stored (no store-then-undo): v0 ignores a
 * ring-length write that is not a power of two, e1 keeps SEC_OWNER_CFG once
 * locked, and counts PERF_THERMAL_THROTTLE writes whatever their value. */
static void test_pre_write(void) {
    npk_sim *s = npk_sim_new("v0", NULL);
    uint64_t b = NPK_V0_MMIO_BASE, v = 0;
    npk_sim_write(s, b + NPK_V0_REG_DESC_RING_LEN, 4, 48);
    npk_sim_read(s, b + NPK_V0_REG_DESC_RING_LEN, 4, &v);
    CHECK_EQ(v, 256);
    npk_sim_write(s, b + NPK_V0_REG_DESC_RING_LEN, 4, 16);
    npk_sim_read(s, b + NPK_V0_REG_DESC_RING_LEN, 4, &v);
    CHECK_EQ(v, 16);
    npk_sim_free(s);
    s = npk_sim_new("e1", NULL);
    b = E1_MMIO_BASE;
    npk_sim_write(s, b + E1_REG_SEC_OWNER_CFG, 4, 0x80000007u);
    npk_sim_write(s, b + E1_REG_SEC_LOCK, 4, E1_SEC_LOCK_SET);
    npk_sim_write(s, b + E1_REG_SEC_OWNER_CFG, 4, 0x00000009u);
    npk_sim_read(s, b + E1_REG_SEC_OWNER_CFG, 4, &v);
    CHECK_EQ(v, 0x80000007u);
    npk_sim_read(s, b + E1_REG_SEC_LOCK, 4, &v);
    CHECK_EQ(v, 0);
    for (int i = 0; i < 3; i++) npk_sim_write(s, b + E1_REG_PERF_THERMAL_THROTTLE, 4, 0xdead);
    npk_sim_read(s, b + E1_REG_PERF_THERMAL_THROTTLE, 4, &v);
    CHECK_EQ(v, 3);
    npk_sim_free(s);
}

int main(void) {
    test_tables();
    test_pccx_peek();
    test_guest_errors();
    test_pre_write();
    free(qout);
    return CHECK_DONE();
}
