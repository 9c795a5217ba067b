// SPDX-License-Identifier: MIT
/* pccx fault injection and recovery (issue 8). test_pccx_dev.c covers every
 * fault code once, a bus error on every beat of one host-window MEMCPY and a
 * hang through the driver. This file fills the gaps:
 *
 *   - a bus error on EVERY beat of every DMA path of a program (MEMCPY
 *     host->L2 reads, weight-stream reads of a GEMV, MEMCPY L2->host
 *     writes): ERR_CODE BUS, ERR_INDEX = the instruction owning the beat,
 *     ERR_ADDR = the beat's address, the instructions before it retired (and
 *     their effects are there), nothing after it ran; the driver's sync
 *     reports it (-NPK_EDEVICE), flushes and clears; the program run again
 *     gives the CPU reference result;
 *   - a memory that never answers on every beat: STATUS.HUNG, sync returns
 *     -NPK_ETIMEDOUT after soft-resetting the device, and the program then
 *     runs correctly;
 *   - queue overflow (more than 256 instructions without time passing): fault
 *     13 at the first dropped instruction, every instruction accounted for;
 *   - a soft reset (CTRL.RESET) in the middle of a queue: every register to
 *     its reset value, a new driver works;
 *   - the transfers in one plain window of guest memory (moved at once)
 *     against the same program's beats taken one at a time (a watcher):
 *     the same outputs, cycles and bus statistics;
 *   - a property test of the instruction queue: random MEMCPY programs with
 *     random faults, flushes and resets the test asks for; every instruction
 *     is accounted for exactly once (retired = its block copied, failed = the
 *     reported ERR_INDEX, cancelled = untouched).
 * References are computed here (small integers: BF16 results are exact). */
#include "check.h"
#include "npukit/npu.h"
#include "npukit/pccx.h"
#include "npukit/sim.h"

#include <stdlib.h>
#include <string.h>

#define N 8
#define K 32
static uint64_t rng = 0x9cc;
static uint32_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static uint16_t bf16_int(int v) { /* exact for |v| <= 256 */
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

typedef struct rig {
    npk_port *p;
    npk_pccx *d;
    npk_mem *m;
    uint64_t hw;           /* host window base */
    uint64_t x_off, y_off, x2_off; /* window offsets: input, GEMV output copy, input copy */
    uint64_t wrec;         /* weight record (guest) */
    uint64_t wbytes;
    int8_t q[N * K];
    int x[K];
} rig;

static uint32_t rd(rig *r, uint32_t off) {
    uint32_t v = 0;
    npk_port_read32(r->p, off, &v);
    return v;
}

/* Open the port and the driver and load the rig's weights; a failure is a failed check. */
static int open_rig(rig *r) {
    memset(r, 0, sizeof *r);
    if (npk_port_open(&r->p, NULL, "pccx", NULL) || npk_pccx_open(&r->d, r->p, NULL)) {
        fprintf(stderr, "open: %s\n", npk_errmsg());
        CHECK(0);
        return -1;
    }
    r->m = npk_sim_mem(npk_port_sim(r->p));
    r->hw = npk_pccx_hwin_base(r->d);
    npk_pccx_hwin_alloc(r->d, 64, &r->x_off);
    npk_pccx_hwin_alloc(r->d, 16, &r->y_off);
    npk_pccx_hwin_alloc(r->d, 64, &r->x2_off);
    for (int i = 0; i < N * K; i++) r->q[i] = (int8_t)(rnd() % 16 - 8);
    for (int i = 0; i < K; i++) r->x[i] = (int)(rnd() % 3) - 1;
    r->wbytes = npk_pccx_wrec_size(N, K, 0, 0);
    npk_port_alloc(r->p, r->wbytes, 16, &r->wrec);
    uint8_t rec[256];
    if (npk_pccx_wrec_pack(r->q, NULL, N, K, 0, rec)) {
        CHECK(0);
        return -1;
    }
    npk_port_mem_write(r->p, r->wrec, rec, r->wbytes);
    return 0;
}

static void close_rig(rig *r) {
    npk_pccx_close(r->d);
    npk_port_close(r->p);
}

/* Stage x in the window and poison the outputs. */
static void stage(rig *r) {
    uint16_t xb[K], poison[32];
    for (int i = 0; i < K; i++) xb[i] = bf16_int(r->x[i]);
    for (int i = 0; i < 32; i++) poison[i] = 0x7fc1;
    npk_port_mem_write(r->p, r->hw + r->x_off, xb, sizeof xb);
    npk_port_mem_write(r->p, r->hw + r->y_off, poison, 16);
    npk_port_mem_write(r->p, r->hw + r->x2_off, poison, 64);
}

/* The program (7 instructions): shapes, MEMCPY x in, GEMV, MEMCPY y out,
 * MEMCPY x back out. */
#define NPROG 7
static void program(rig *r, uint64_t w[NPROG]) {
    w[0] = npk_pccx_memset_word(NPK_PCCX_CACHE_FMAP, 60, 1, 1, K);
    w[1] = npk_pccx_memcpy_word(1, 0, 100, 0, (uint32_t)(r->x_off / 16), 60, 0);
    w[2] = npk_pccx_memset_word(NPK_PCCX_CACHE_WEIGHT, 60, N, K, 0);
    w[3] = npk_pccx_gemv_word(200, 100, 0, 60, 60, 0);
    w[4] = npk_pccx_memset_word(NPK_PCCX_CACHE_FMAP, 61, 1, 1, N);
    w[5] = npk_pccx_memcpy_word(0, 1, 0, 200, (uint32_t)(r->y_off / 16), 61, 0);
    w[6] = npk_pccx_memcpy_word(0, 1, 0, 100, (uint32_t)(r->x2_off / 16), 60, 0);
}

static int issue_program(rig *r) {
    uint64_t w[NPROG];
    program(r, w);
    int rc = npk_pccx_set_wstream(r->d, r->wrec, r->wrec + r->wbytes);
    for (int i = 0; !rc && i < NPROG; i++) rc = npk_pccx_issue(r->d, w[i]);
    return rc;
}

/* 1: y equals the reference, 0: untouched, -1: other. */
static int y_outcome(rig *r) {
    uint16_t got[N];
    npk_port_mem_read(r->p, r->hw + r->y_off, got, sizeof got);
    int same = 1, poisoned = 1;
    for (int n = 0; n < N; n++) {
        int s = 0;
        for (int k = 0; k < K; k++) s += r->q[n * K + k] * r->x[k];
        same &= got[n] == bf16_int(s);
        poisoned &= got[n] == 0x7fc1;
    }
    return same ? 1 : poisoned ? 0 : -1;
}
static int x2_outcome(rig *r) {
    uint16_t got[K];
    npk_port_mem_read(r->p, r->hw + r->x2_off, got, sizeof got);
    int same = 1, poisoned = 1;
    for (int k = 0; k < K; k++) same &= got[k] == bf16_int(r->x[k]), poisoned &= got[k] == 0x7fc1;
    return same ? 1 : poisoned ? 0 : -1;
}

typedef struct {
    npk_access acc[128];
    uint64_t addr[128];
    unsigned n;
} beatlog;
static void log_beat(void *ctx, npk_access acc, uint64_t addr, size_t len, npk_bus_resp r) {
    (void)len, (void)r;
    beatlog *l = ctx;
    if (l->n < 128) l->acc[l->n] = acc, l->addr[l->n] = addr, l->n++;
}

static void test_every_beat(npk_bus_resp resp) {
    rig r;
    if (open_rig(&r)) return;
    stage(&r);
    beatlog log = {{0}, {0}, 0};
    CHECK_EQ(issue_program(&r), 0);
    npk_mem_set_watch(r.m, log_beat, &log);
    CHECK_EQ(npk_pccx_sync(r.d), 0);
    npk_mem_set_watch(r.m, NULL, NULL);
    CHECK_EQ(y_outcome(&r), 1);
    CHECK_EQ(x2_outcome(&r), 1);
    /* x in: 4 beats; weights: 128 bytes = 8 beats; y out: 1 beat; x out: 4 beats */
    CHECK_EQ(log.n, 4 + 8 + 1 + 4);
    unsigned reads = 0, writes = 0;
    for (unsigned b = 0; b < log.n; b++) {
        npk_access acc = log.acc[b];
        unsigned nth = acc == NPK_ACC_READ ? reads++ : writes++;
        unsigned owner = acc == NPK_ACC_READ ? (nth < 4 ? 1 : 3) : (nth < 1 ? 5 : 6);
        stage(&r);
        uint32_t base = rd(&r, NPK_PCCX_INSTR_ISSUED);
        uint32_t ret0 = rd(&r, NPK_PCCX_INSTR_RETIRED);
        npk_fault f = {acc, 0, 0, (int64_t)nth, resp, 1};
        CHECK_EQ(issue_program(&r), 0);
        base = rd(&r, NPK_PCCX_INSTR_ISSUED) - NPROG;
        npk_mem_add_fault(r.m, &f);
        npk_port_wait(r.p, 10000000);
        uint32_t st = rd(&r, NPK_PCCX_STATUS);
        if (resp == NPK_BUS_ERROR) {
            CHECK(st & NPK_PCCX_STATUS_ERROR);
            CHECK_EQ(rd(&r, NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_BUS);
            CHECK_EQ(rd(&r, NPK_PCCX_ERR_INDEX), base + owner);
            uint64_t ea = rd(&r, NPK_PCCX_ERR_ADDR_LO) | (uint64_t)rd(&r, NPK_PCCX_ERR_ADDR_HI) << 32;
            CHECK_EQ(ea, log.addr[b]);
            CHECK_EQ(rd(&r, NPK_PCCX_INSTR_RETIRED) - ret0, owner);
            CHECK_EQ(rd(&r, NPK_PCCX_QUEUE_COUNT), NPROG - owner - 1);
        } else {
            CHECK(st & NPK_PCCX_STATUS_HUNG);
            CHECK_EQ(rd(&r, NPK_PCCX_INSTR_RETIRED) - ret0, owner);
        }
        int rc = npk_pccx_sync(r.d);
        npk_mem_clear_faults(r.m);
        CHECK_EQ(rc, resp == NPK_BUS_ERROR ? -NPK_EDEVICE : -NPK_ETIMEDOUT);
        if (resp == NPK_BUS_ERROR) CHECK(strstr(npk_errmsg(), "BUS") != NULL);
        /* effects: y only when its MEMCPY ran, x2 never before it */
        if (owner <= 5) CHECK(y_outcome(&r) != 1);
        if (owner == 6) CHECK_EQ(y_outcome(&r), 1);
        CHECK(x2_outcome(&r) != 1);
        /* recovered: idle, no fault; the program gives the reference */
        CHECK_EQ(rd(&r, NPK_PCCX_STATUS) & (NPK_PCCX_STATUS_ERROR | NPK_PCCX_STATUS_BUSY | NPK_PCCX_STATUS_HUNG), 0);
        stage(&r);
        CHECK_EQ(issue_program(&r), 0);
        CHECK_EQ(npk_pccx_sync(r.d), 0);
        CHECK_EQ(y_outcome(&r), 1);
        CHECK_EQ(x2_outcome(&r), 1);
    }
    CHECK_EQ(reads, 12);
    CHECK_EQ(writes, 5);
    close_rig(&r);
}

static void test_overflow_and_reset(void) {
    rig r;
    if (open_rig(&r)) return;
    npk_dev *dev = npk_sim_dev(npk_port_sim(r.p));
    /* 300 CVOs written with no time passing: the first starts at once, 256
     * wait in the queue, the rest are dropped and reported as overflow */
    uint32_t base = rd(&r, NPK_PCCX_INSTR_ISSUED), ret_base = rd(&r, NPK_PCCX_INSTR_RETIRED);
    npk_port_write64(r.p, NPK_PCCX_INSTR_LO, npk_pccx_memset_word(0, 62, 1, 1, 8));
    for (int i = 0; i < 299; i++) npk_port_write64(r.p, NPK_PCCX_INSTR_LO, npk_pccx_cvo_word(0, 0, 8, 8, 0, 0));
    uint32_t started = rd(&r, NPK_PCCX_INSTR_RETIRED) - ret_base;
    CHECK(started <= 1);
    CHECK_EQ(rd(&r, NPK_PCCX_INSTR_ISSUED) - base, 300);
    CHECK_EQ(rd(&r, NPK_PCCX_QUEUE_COUNT), NPK_PCCX_QUEUE_DEPTH);
    CHECK(rd(&r, NPK_PCCX_STATUS) & NPK_PCCX_STATUS_ERROR);
    CHECK_EQ(rd(&r, NPK_PCCX_ERR_CODE), NPK_PCCX_FAULT_OVERFLOW);
    CHECK_EQ(rd(&r, NPK_PCCX_ERR_INDEX), base + 256 + started); /* the first dropped one */
    CHECK_EQ(rd(&r, NPK_PCCX_DROPPED), 300 - 256 - started);                 /* DROPPED */
    /* resume: the queued ones run, nothing else faults; each once */
    npk_port_write32(r.p, NPK_PCCX_STATUS, NPK_PCCX_STATUS_ERROR);
    npk_port_wait(r.p, 100000000);
    CHECK_EQ(rd(&r, NPK_PCCX_STATUS) & (NPK_PCCX_STATUS_ERROR | NPK_PCCX_STATUS_BUSY), 0);
    CHECK_EQ(rd(&r, NPK_PCCX_INSTR_RETIRED) - ret_base, 256 + started);
    /* the driver never overflows: it waits for room */
    uint32_t ret0 = rd(&r, NPK_PCCX_INSTR_RETIRED);
    for (int i = 0; i < 600; i++) CHECK_EQ(npk_pccx_issue(r.d, npk_pccx_cvo_word(0, 0, 8, 8, 0, 0)), 0);
    CHECK_EQ(npk_pccx_sync(r.d), 0);
    CHECK_EQ(rd(&r, NPK_PCCX_INSTR_RETIRED) - ret0, 600);
    /* soft reset with a queue: every register to its reset value */
    for (int i = 0; i < 100; i++) npk_port_write64(r.p, NPK_PCCX_INSTR_LO, npk_pccx_cvo_word(0, 0, 8, 8, 0, 0));
    CHECK(rd(&r, NPK_PCCX_QUEUE_COUNT) > 0);
    npk_port_write32(r.p, NPK_PCCX_CTRL, NPK_PCCX_CTRL_RESET);
    size_t it = 0;
    for (const npk_reg *r; (r = npk_regfile_next(dev->regs, &it));)
        CHECK_EQ(npk_regfile_peek(dev->regs, dev, r->off), r->reset);
    /* a new driver on the reset device runs the program correctly */
    npk_pccx_close(r.d);
    CHECK_EQ(npk_pccx_open(&r.d, r.p, NULL), 0);
    r.hw = npk_pccx_hwin_base(r.d);
    npk_pccx_hwin_alloc(r.d, 64, &r.x_off);
    npk_pccx_hwin_alloc(r.d, 16, &r.y_off);
    npk_pccx_hwin_alloc(r.d, 64, &r.x2_off);
    stage(&r);
    CHECK_EQ(issue_program(&r), 0);
    CHECK_EQ(npk_pccx_sync(r.d), 0);
    CHECK_EQ(y_outcome(&r), 1);
    CHECK_EQ(x2_outcome(&r), 1);
    close_rig(&r);
}

/* Queue property: programs of B block copies L2 -> host (block j: L2 words
 * 1000 + 4j.., window offset of block j), random faults, flushes and resets. */
static void test_property(void) {
    rig r;
    if (open_rig(&r)) return;
    enum { B = 24 };
    uint64_t off[B];
    for (int j = 0; j < B; j++) npk_pccx_hwin_alloc(r.d, 64, &off[j]);
    uint16_t pat[B * 32];
    for (int i = 0; i < B * 32; i++) pat[i] = (uint16_t)(0x3f00 + (rnd() & 0xff));
    CHECK_EQ(npk_pccx_write_bf16(r.d, 1000, pat, B * 32), 0);
    unsigned total = 0, done = 0, failed = 0, cancelled = 0, resets = 0, flushes = 0;
    for (int iter = 0; iter < 150; iter++) {
        unsigned n = 1 + rnd() % B;
        uint16_t poison[32];
        for (int i = 0; i < 32; i++) poison[i] = 0x7fc1;
        for (unsigned j = 0; j < n; j++) npk_port_mem_write(r.p, r.hw + off[j], poison, 64);
        uint32_t ret0 = rd(&r, NPK_PCCX_INSTR_RETIRED);
        CHECK_EQ(npk_pccx_issue(r.d, npk_pccx_memset_word(0, 63, 1, 1, 32)), 0);
        uint32_t first = rd(&r, NPK_PCCX_INSTR_ISSUED); /* index of block 0's copy */
        uint32_t kind = rnd() % 6;
        if (kind < 2) {
            npk_fault f = {NPK_ACC_WRITE, 0, 0, (int64_t)(rnd() % (4 * n)), kind ? NPK_BUS_HANG : NPK_BUS_ERROR, 1};
            npk_mem_add_fault(r.m, &f);
        }
        for (unsigned j = 0; j < n; j++)
            CHECK_EQ(npk_pccx_issue(r.d, npk_pccx_memcpy_word(0, 1, 0, 1000 + 4 * j, (uint32_t)(off[j] / 16), 63, 0)), 0);
        int fail_at = -1, cut = 0;
        if (kind == 2 || kind == 3) { /* the test asks for a flush or a soft reset part-way */
            npk_port_wait(r.p, rnd() % 2000);
            if (kind == 2) {
                npk_port_write32(r.p, NPK_PCCX_CTRL, NPK_PCCX_CTRL_FLUSH);
                flushes++;
            } else {
                npk_port_write32(r.p, NPK_PCCX_CTRL, NPK_PCCX_CTRL_RESET);
                resets++;
            }
            cut = 1;
        } else {
            npk_port_wait(r.p, 1000000);
            uint32_t st = rd(&r, NPK_PCCX_STATUS);
            if (st & NPK_PCCX_STATUS_ERROR) fail_at = (int)(rd(&r, NPK_PCCX_ERR_INDEX) - first);
            if (st & NPK_PCCX_STATUS_HUNG) fail_at = (int)(rd(&r, NPK_PCCX_INSTR_RETIRED) - ret0) - 1;
        }
        int rc = npk_pccx_sync(r.d);
        npk_mem_clear_faults(r.m);
        if (kind == 3) { /* a soft reset forgets the windows: reopen */
            npk_pccx_close(r.d);
            CHECK_EQ(npk_pccx_open(&r.d, r.p, NULL), 0);
            r.hw = npk_pccx_hwin_base(r.d);
            for (int j = 0; j < B; j++) npk_pccx_hwin_alloc(r.d, 64, &off[j]);
            CHECK_EQ(npk_pccx_write_bf16(r.d, 1000, pat, B * 32), 0);
        }
        if (fail_at >= 0) CHECK(rc < 0);
        else if (!cut) CHECK_EQ(rc, 0);
        for (unsigned j = 0; j < n; j++) {
            uint16_t got[32];
            npk_port_mem_read(r.p, r.hw + off[j], got, 64);
            int same = !memcmp(got, pat + 32 * j, 64), untouched = 1;
            for (int i = 0; i < 32; i++) untouched &= got[i] == 0x7fc1;
            if (kind == 3) { /* reset: the window moved; only count */
                cancelled++;
                continue;
            }
            if (fail_at >= 0) {
                if ((int)j < fail_at) {
                    CHECK(same);
                    done++;
                } else if ((int)j == fail_at) {
                    CHECK(!same);
                    failed++;
                } else {
                    CHECK(untouched);
                    cancelled++;
                }
            } else if (cut) {
                CHECK(same || untouched);
                if (same) done++;
                else cancelled++;
            } else {
                CHECK(same);
                done++;
            }
        }
        total += n;
    }
    CHECK_EQ(done + failed + cancelled, total);
    CHECK(failed > 5);
    CHECK(flushes > 5 && resets > 5);
    fprintf(stderr, "pccx property: %u instructions: %u retired, %u failed, %u cancelled (%u flushes, %u resets)\n",
            total, done, failed, cancelled, flushes, resets);
    close_rig(&r);
}

/* The model moves a host transfer that lies in one plain window of guest
 * memory (no fault rule or watcher: npk_bus_window) straight between L2 and
 * the host's bytes, and takes the bus's beats one at a time otherwise (a
 * watcher that only looks forces that path): both must give the same
 * outputs, modeled cycles, bus statistics and write generation. */
static void test_window_same_as_beats(void) {
    uint32_t regs[2][4];
    npk_mem_stats st[2];
    int written[2];
    for (int pass = 0; pass < 2; pass++) {
        rig r;
        if (open_rig(&r)) return;
        stage(&r);
        beatlog log = {{0}, {0}, 0};
        npk_mem_stats s0;
        npk_mem_get_stats(r.m, &s0);
        const uint64_t g0 = npk_mem_wgen(r.m, r.hw + r.y_off, 16);
        CHECK_EQ(issue_program(&r), 0);
        if (pass) npk_mem_set_watch(r.m, log_beat, &log);
        CHECK_EQ(npk_pccx_sync(r.d), 0);
        npk_mem_set_watch(r.m, NULL, NULL);
        CHECK_EQ(log.n, pass ? 4u + 8 + 1 + 4 : 0u);
        CHECK_EQ(y_outcome(&r), 1);
        CHECK_EQ(x2_outcome(&r), 1);
        regs[pass][0] = rd(&r, NPK_PCCX_CYCLES_LO);
        regs[pass][1] = rd(&r, NPK_PCCX_DMA_CYCLES);
        regs[pass][2] = rd(&r, NPK_PCCX_GEMV_CYCLES);
        regs[pass][3] = rd(&r, NPK_PCCX_INSTR_RETIRED);
        npk_mem_get_stats(r.m, &st[pass]);
        st[pass].read_beats -= s0.read_beats, st[pass].write_beats -= s0.write_beats;
        st[pass].read_bytes -= s0.read_bytes, st[pass].write_bytes -= s0.write_bytes;
        written[pass] = npk_mem_wgen(r.m, r.hw + r.y_off, 16) > g0;
        close_rig(&r);
    }
    for (int i = 0; i < 4; i++) CHECK_EQ(regs[0][i], regs[1][i]);
    CHECK_EQ(regs[0][3], NPROG);
    CHECK(regs[0][1] > 0 && regs[0][2] > 0);
    CHECK_EQ(st[0].read_beats, 12u); /* x in: 4 beats, weights: 8 */
    CHECK_EQ(st[0].write_beats, 5u); /* y out: 1, x out: 4 */
    CHECK_EQ(st[0].read_beats, st[1].read_beats);
    CHECK_EQ(st[0].write_beats, st[1].write_beats);
    CHECK_EQ(st[0].read_bytes, st[1].read_bytes);
    CHECK_EQ(st[0].write_bytes, st[1].write_bytes);
    CHECK_EQ(st[0].errors + st[1].errors, 0u);
    CHECK(written[0] && written[1]);
}

/* The model keeps the plain windows of guest memory it found while the
 * memory's map generation holds: a watcher or a latency set after a run is
 * seen by the next run of the same device. A host MEMCPY's duration adds
 * its beats' mean latency (the memory's, one region here): three MEMCPYs a
 * run, so a latency 1000 higher costs the run 3000 more DMA cycles. */
static void test_window_follows_map(void) {
    rig r;
    if (open_rig(&r)) return;
    npk_mem_set_latency(r.m, 5);
    uint32_t d[3];
    for (int run = 0; run < 3; run++) {
        beatlog log = {{0}, {0}, 0};
        if (run == 1) npk_mem_set_watch(r.m, log_beat, &log);
        if (run == 2) npk_mem_set_latency(r.m, 1005);
        stage(&r);
        const uint32_t d0 = rd(&r, NPK_PCCX_DMA_CYCLES);
        CHECK_EQ(issue_program(&r), 0);
        CHECK_EQ(npk_pccx_sync(r.d), 0);
        npk_mem_set_watch(r.m, NULL, NULL);
        CHECK_EQ(log.n, run == 1 ? 4u + 8 + 1 + 4 : 0u); /* every beat seen while watched */
        CHECK_EQ(y_outcome(&r), 1);
        CHECK_EQ(x2_outcome(&r), 1);
        d[run] = rd(&r, NPK_PCCX_DMA_CYCLES) - d0;
    }
    CHECK_EQ(d[1], d[0]);
    CHECK_EQ(d[2], d[0] + 3000);
    close_rig(&r);
}

int main(void) {
    test_window_same_as_beats();
    test_window_follows_map();
    test_every_beat(NPK_BUS_ERROR);
    test_every_beat(NPK_BUS_HANG);
    test_overflow_and_reset();
    test_property();
    return CHECK_DONE();
}
