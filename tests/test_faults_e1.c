// SPDX-License-Identifier: MIT
/* e1 fault injection and recovery (issue 8), on top of what
 * test_e1_model_desc.c (bus errors and hangs on chosen beats, timeout
 * boundary) and test_e1_driver.c (one fetch error and one hang through the
 * driver) already cover:
 *
 *   - a bus error on EVERY beat of every DMA path of a command buffer
 *     (descriptor fetch, stream read, writeback write): the documented
 *     DESC_STATUS code of that path, DESC_TAIL / desc_index at the descriptor
 *     that owns the beat, the descriptors before it completed (their
 *     writeback landed), the ones after it did not run; then the driver's
 *     recovery (clear) and a resubmission whose results equal the CPU
 *     reference;
 *   - a memory that never answers on every beat: the 128-cycle timeout code,
 *     the same accounting and recovery;
 *   - queue overflow: 8 descriptors (the ring holds 7) refused before any
 *     MMIO; a raw doorbell with head == tail reports EMPTY;
 *   - a reset in the middle of a ring: every register back to its reset
 *     value, a new driver on the same device works;
 *   - a property test: random command buffers of GEMM descriptors with
 *     random faults and resets the test asks for; every descriptor is
 *     accounted for exactly once as completed (result = reference), failed
 *     (the reported index) or not run / cancelled (destination untouched).
 * References are computed here from the operands (independent of the
 * model). */
#include "check.h"
#include "npukit/e1.h"
#include "npukit/npu.h"
#include "npukit/sim.h"

#include <stdlib.h>
#include <string.h>

#define SRC 0x40000ull /* operand blocks, 16 bytes each */
#define DST 0x50000ull /* writeback blocks, 16 bytes each */
#define POISON 0xa5

static uint64_t rng = 0x8e1;
static uint32_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* The 2x2x3 tile of e1-rtl-notes.md: A (2x3, row stride 3) at scratch 0, B
 * (3x2, row stride 2) at 8, C (2x2 words, row stride 8) at 0x20. */
static const npk_e1_tilecfg TILE = {0, {2, 2, 3, 0, 8, 0x20, 3, 2, 8}, 0, 0, 0};

/* Operand block i: 16 bytes streamed to scratch 0 (A in 0..5, B in 8..13). */
static void make_block(uint8_t blk[16], unsigned seed) {
    for (int k = 0; k < 16; k++) blk[k] = (uint8_t)(seed * 37u + (unsigned)k * 11u + (seed >> 3));
}
/* Reference: C[i][j] = sum_k A[i][k] * B[k][j], int8 operands, int32 result. */
static void ref_tile(const uint8_t blk[16], int32_t c[4]) {
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            int32_t s = 0;
            for (int k = 0; k < 3; k++) s += (int8_t)blk[i * 3 + k] * (int8_t)blk[8 + k * 2 + j];
            c[i * 2 + j] = s;
        }
}

typedef struct {
    npk_port *p;
    npk_e1 *e;
    npk_mem *m;
} rig;

static int open_rig(rig *r) {
    if (npk_port_open(&r->p, NULL, "e1", NULL) || npk_e1_open(&r->e, r->p)) {
        fprintf(stderr, "open: %s\n", npk_errmsg());
        return -1;
    }
    r->m = npk_sim_mem(npk_port_sim(r->p));
    npk_e1_set_timeout(r->e, 1000000);
    return 0;
}
static void close_rig(rig *r) {
    npk_e1_close(r->e);
    npk_port_close(r->p);
}

/* Stage n operand blocks (block i from seed base+i) and poison the outputs. */
static void stage(rig *r, unsigned n, unsigned base, npk_e1_desc *d) {
    for (unsigned i = 0; i < n; i++) {
        uint8_t blk[16], poison[16];
        make_block(blk, base + i);
        memset(poison, POISON, 16);
        npk_port_mem_write(r->p, SRC + 16ull * i, blk, 16);
        npk_port_mem_write(r->p, DST + 16ull * i, poison, 16);
        d[i] = npk_e1_desc_stream(E1_OP_GEMM_S8, SRC + 16ull * i, 0, 16, DST + 16ull * i);
    }
}

/* 1: block i's writeback equals the reference; 0: untouched; -1: anything else. */
static int outcome(rig *r, unsigned i, unsigned base) {
    uint8_t blk[16], got[16];
    int32_t want[4];
    make_block(blk, base + i);
    ref_tile(blk, want);
    npk_port_mem_read(r->p, DST + 16ull * i, got, 16);
    int same = 1, poisoned = 1;
    for (int k = 0; k < 4; k++) {
        int32_t v = (int32_t)(got[4 * k] | got[4 * k + 1] << 8 | got[4 * k + 2] << 16 | (uint32_t)got[4 * k + 3] << 24);
        same &= v == want[k];
    }
    for (int k = 0; k < 16; k++) poisoned &= got[k] == POISON;
    return same ? 1 : poisoned ? 0 : -1;
}

/* Beat log of a clean run. */
typedef struct {
    npk_access acc[256];
    uint64_t addr[256];
    unsigned n;
} beatlog;
static void log_beat(void *ctx, npk_access acc, uint64_t addr, size_t len, npk_bus_resp r) {
    (void)len, (void)r;
    beatlog *l = ctx;
    if (l->n < 256) l->acc[l->n] = acc, l->addr[l->n] = addr, l->n++;
}

/* Which descriptor (0..n-1) a beat belongs to, and its DMA path's error code. */
static void classify(uint64_t addr, npk_access acc, uint64_t ring, unsigned first, unsigned *desc, uint32_t *code) {
    if (acc == NPK_ACC_WRITE) {
        *desc = (unsigned)((addr - DST) / 16);
        *code = E1_DS_WB_ERR;
    } else if (addr >= SRC && addr < SRC + 0x1000) {
        *desc = (unsigned)((addr - SRC) / 16);
        *code = E1_DS_STREAM_ERR;
    } else {
        unsigned slot = (unsigned)((addr - ring) / 16);
        *desc = (slot - first) & 7;
        *code = E1_DS_FETCH_ERR;
    }
}

/* A bus error / hang on each beat of a 3-descriptor buffer. */
static void test_every_beat(npk_bus_resp resp) {
    rig r;
    if (open_rig(&r)) return;
    const unsigned n = 3;
    npk_e1_desc d[7];
    /* clean run: the beat sequence and the ring's address */
    stage(&r, n, 0, d);
    beatlog log = {{0}, {0}, 0};
    npk_mem_set_watch(r.m, log_beat, &log);
    uint32_t tail0 = 0;
    npk_port_read32(r.p, E1_REG_DESC_TAIL, &tail0);
    CHECK_EQ(npk_e1_submit(r.e, d, n, &TILE, 0, NULL), 0);
    npk_mem_set_watch(r.m, NULL, NULL);
    for (unsigned i = 0; i < n; i++) CHECK_EQ(outcome(&r, i, 0), 1);
    uint32_t base = 0;
    npk_port_read32(r.p, E1_REG_DESC_BASE, &base);
    /* 3 x (16 fetch + 16 stream) reads + 3 x 16 writeback writes, 4-byte beats */
    CHECK_EQ(log.n, 3 * (4 + 4 + 4));
    unsigned reads = 0, writes = 0, checked = 0;
    for (unsigned b = 0; b < log.n; b++) {
        npk_access acc = log.acc[b];
        unsigned nth = acc == NPK_ACC_READ ? reads++ : writes++;
        /* the same buffer again, with the fault on this beat */
        uint32_t tail = 0;
        npk_port_read32(r.p, E1_REG_DESC_TAIL, &tail);
        unsigned round = 1 + b;
        stage(&r, n, round, d);
        npk_fault f = {acc, 0, 0, (int64_t)nth, resp, 1};
        npk_mem_add_fault(r.m, &f);
        int rc = npk_e1_submit(r.e, d, n, &TILE, 0, NULL);
        npk_mem_clear_faults(r.m);
        CHECK_EQ(rc, -NPK_EDEVICE);
        const npk_e1_fault *fl = npk_e1_last_fault(r.e);
        unsigned want_desc;
        uint32_t want_code;
        /* the beat's address in this run: same layout, ring slots shifted by the tail */
        uint64_t addr = log.addr[b];
        if (acc == NPK_ACC_READ && !(addr >= SRC && addr < SRC + 0x1000)) {
            unsigned slot = (unsigned)((addr - base) / 16);
            addr = base + (((slot - tail0 + tail) & 7) * 16) + (addr & 15);
        }
        classify(addr, acc, base, tail, &want_desc, &want_code);
        if (resp == NPK_BUS_HANG) want_code = E1_DS_TIMEOUT;
        CHECK_EQ(e1_ds_code(fl->desc_status), want_code);
        CHECK_EQ(fl->desc_index, (int)want_desc);
        CHECK_EQ(fl->desc_tail, (tail + want_desc) & 7);
        CHECK_EQ(fl->ctrl_status, E1_ST_DONE | E1_ST_ERROR);
        /* before: completed; the failing one: no complete result; after: not run */
        for (unsigned i = 0; i < n; i++) {
            int o = outcome(&r, i, round);
            if (i < want_desc) CHECK_EQ(o, 1);
            else if (i > want_desc) CHECK_EQ(o, 0);
            else CHECK(o != 1);
        }
        /* the driver cleared the error: the device is idle and clean */
        uint32_t st = 0;
        npk_port_read32(r.p, E1_REG_CTRL_STATUS, &st);
        CHECK_EQ(st, 0);
        /* resubmit: correct results */
        stage(&r, n, round + 100, d);
        CHECK_EQ(npk_e1_submit(r.e, d, n, &TILE, 0, NULL), 0);
        for (unsigned i = 0; i < n; i++) CHECK_EQ(outcome(&r, i, round + 100), 1);
        checked++;
    }
    CHECK_EQ(reads, 24);
    CHECK_EQ(writes, 12);
    CHECK_EQ(checked, 36);
    close_rig(&r);
}

/* Overflow: 8 descriptors refused before MMIO; head == tail reports EMPTY. */
static void test_overflow(void) {
    rig r;
    if (open_rig(&r)) return;
    npk_e1_desc d[8];
    stage(&r, 7, 0, d);
    d[7] = d[0];
    uint64_t m0 = npk_port_mmio_count(r.p);
    CHECK_EQ(npk_e1_submit(r.e, d, 8, &TILE, 0, NULL), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "7") != NULL);
    CHECK_EQ(npk_port_mmio_count(r.p), m0);
    /* seven fit */
    CHECK_EQ(npk_e1_submit(r.e, d, 7, &TILE, 0, NULL), 0);
    for (unsigned i = 0; i < 7; i++) CHECK_EQ(outcome(&r, i, 0), 1);
    /* raw doorbell with nothing pending: DESC_STATUS EMPTY, status 6 */
    uint32_t t = 0, st = 0, ds = 0;
    npk_port_read32(r.p, E1_REG_DESC_TAIL, &t);
    npk_port_write32(r.p, E1_REG_DESC_HEAD, t);
    npk_port_write32(r.p, E1_REG_CMD_PARAM, E1_CMD_DESC);
    npk_port_write32(r.p, E1_REG_CTRL_STATUS, E1_CTRL_START);
    npk_port_read32(r.p, E1_REG_CTRL_STATUS, &st);
    npk_port_read32(r.p, E1_REG_DESC_STATUS, &ds);
    CHECK_EQ(st, E1_ST_DONE | E1_ST_ERROR);
    CHECK_EQ(e1_ds_code(ds), E1_DS_EMPTY);
    CHECK_EQ(npk_e1_clear(r.e), 0);
    stage(&r, 3, 9, d);
    CHECK_EQ(npk_e1_submit(r.e, d, 3, &TILE, 0, NULL), 0);
    for (unsigned i = 0; i < 3; i++) CHECK_EQ(outcome(&r, i, 9), 1);
    close_rig(&r);
}

/* Reset in the middle of a ring (raw doorbell, then power-on reset). */
static void test_reset_mid_ring(void) {
    rig r;
    if (open_rig(&r)) return;
    npk_sim *s = npk_port_sim(r.p);
    npk_dev *dev = npk_sim_dev(s);
    npk_e1_desc d[7];
    stage(&r, 5, 3, d);
    /* stage the ring by hand at 0x7000 and ring the doorbell */
    for (unsigned i = 0; i < 5; i++)
        for (int w = 0; w < 4; w++) {
            uint32_t v = d[i].w[w];
            npk_port_mem_write(r.p, 0x7000 + 16ull * i + 4ull * (unsigned)w, &v, 4);
        }
    npk_port_write32(r.p, E1_REG_GEMM_CFG, e1_gemm_cfg(2, 2, 3));
    npk_port_write32(r.p, E1_REG_GEMM_BASE, e1_gemm_base(0, 8, 0x20));
    npk_port_write32(r.p, E1_REG_GEMM_STRIDE, e1_gemm_stride(3, 2, 8));
    npk_port_write32(r.p, E1_REG_DESC_BASE, 0x7000);
    npk_port_write32(r.p, E1_REG_DESC_TAIL, 0);
    npk_port_write32(r.p, E1_REG_DESC_HEAD, 5);
    npk_port_write32(r.p, E1_REG_CMD_PARAM, E1_CMD_DESC);
    npk_port_write32(r.p, E1_REG_CTRL_STATUS, E1_CTRL_START);
    npk_port_wait(r.p, 60); /* the first descriptor is done (39 cycles), the second is running */
    uint32_t t = 0;
    npk_port_read32(r.p, E1_REG_DESC_TAIL, &t);
    CHECK_EQ(t, 1);
    npk_sim_reset(s);
    size_t it = 0;
    for (const npk_reg *r; (r = npk_regfile_next(dev->regs, &it));)
        CHECK_EQ(npk_regfile_peek(dev->regs, dev, r->off), r->reset);
    CHECK(dev->ops->idle(dev));
    npk_port_wait(r.p, 1000); /* nothing runs after the reset */
    CHECK_EQ(outcome(&r, 0, 3), 1);
    for (unsigned i = 2; i < 5; i++) CHECK_EQ(outcome(&r, i, 3), 0);
    /* a new driver on the same device */
    npk_e1_close(r.e);
    CHECK_EQ(npk_e1_open(&r.e, r.p), 0);
    stage(&r, 5, 40, d);
    CHECK_EQ(npk_e1_submit(r.e, d, 5, &TILE, 0, NULL), 0);
    for (unsigned i = 0; i < 5; i++) CHECK_EQ(outcome(&r, i, 40), 1);
    close_rig(&r);
}

/* Random buffers, random faults, random resets: every descriptor exactly once. */
static void test_property(void) {
    rig r;
    if (open_rig(&r)) return;
    npk_sim *s = npk_port_sim(r.p);
    unsigned total = 0, completed = 0, failed = 0, not_run = 0, cancelled = 0, resets = 0;
    for (unsigned iter = 0; iter < 300; iter++) {
        unsigned n = 1 + rnd() % 7, base = iter * 8;
        npk_e1_desc d[7];
        stage(&r, n, base, d);
        uint32_t kind = rnd() % 6;
        if (kind < 2) {
            npk_fault f = {kind == 0 ? NPK_ACC_READ : NPK_ACC_WRITE, 0, 0, (int64_t)(rnd() % 40),
                           rnd() % 4 ? NPK_BUS_ERROR : NPK_BUS_HANG, 1};
            npk_mem_add_fault(r.m, &f);
        }
        int rc;
        int acc[7] = {0};
        if (kind == 5) { /* the test asks for a reset part-way through the ring */
            npk_e1_set_timeout(r.e, 20 + rnd() % 150);
            rc = npk_e1_submit(r.e, d, n, &TILE, 0, NULL);
            npk_sim_reset(s);
            resets++;
            npk_e1_close(r.e);
            CHECK_EQ(npk_e1_open(&r.e, r.p), 0);
            npk_e1_set_timeout(r.e, 1000000);
            /* completed ones hold the reference; the rest were cancelled:
             * untouched, or (at most one, the one whose writeback the reset
             * cut) partly written */
            int partial = 0;
            for (unsigned i = 0; i < n; i++) {
                int o = outcome(&r, i, base);
                partial += o < 0;
                if (o == 1) completed++, acc[i]++;
                else cancelled++, acc[i]++;
            }
            CHECK(partial <= 1);
            if (rc == 0)
                for (unsigned i = 0; i < n; i++) CHECK_EQ(outcome(&r, i, base), 1);
        } else {
            rc = npk_e1_submit(r.e, d, n, &TILE, 0, NULL);
            int k = rc ? npk_e1_last_fault(r.e)->desc_index : (int)n;
            if (rc) {
                CHECK_EQ(rc, -NPK_EDEVICE);
                CHECK(k >= 0 && k < (int)n);
                if (k < 0 || k >= (int)n) k = 0;
            }
            for (unsigned i = 0; i < n; i++) {
                int o = outcome(&r, i, base);
                if ((int)i < k) {
                    CHECK_EQ(o, 1);
                    completed++, acc[i]++;
                } else if ((int)i == k) {
                    CHECK(o != 1);
                    failed++, acc[i]++;
                } else {
                    CHECK_EQ(o, 0);
                    not_run++, acc[i]++;
                }
            }
        }
        npk_mem_clear_faults(r.m);
        for (unsigned i = 0; i < n; i++) CHECK_EQ(acc[i], 1);
        total += n;
    }
    CHECK_EQ(completed + failed + not_run + cancelled, total);
    CHECK(failed > 10);
    CHECK(resets > 10);
    fprintf(stderr, "e1 property: %u descriptors: %u completed, %u failed, %u not run after a failure, %u cancelled by %u resets\n",
            total, completed, failed, not_run, cancelled, resets);
    close_rig(&r);
}

int main(void) {
    test_every_beat(NPK_BUS_ERROR);
    test_every_beat(NPK_BUS_HANG);
    test_overflow();
    test_reset_mid_ring();
    test_property();
    return CHECK_DONE();
}
