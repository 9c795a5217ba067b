// SPDX-License-Identifier: MIT
/* shell fault injection and recovery (issue 8). test_shell_errors.c covers
 * each error code once (one bus error on a chosen copy beat, one fetch
 * fault, one hung write). This file fills the gaps:
 *
 *   - a bus error on EVERY beat of every DMA path of a four-descriptor stream
 *     (descriptor fetch, DMA_COPY read/write, GEMM A/B reads and C write,
 *     VEC_OP read/write, DMA_STRIDED read/write): DMA_FAULT with ERROR_ADDR =
 *     that beat's address, CQ_HEAD at the descriptor owning the beat, the
 *     descriptors before it completed (reference results), the ones after it
 *     did not run; the driver reports it (-NPK_EDEVICE), and its recovery
 *     (clear the error, reset and re-program the ring) followed by the same
 *     stream gives the reference results;
 *   - a memory that never answers on every beat: TIMEOUT at that beat's
 *     address after bus_timeout cycles, the same accounting and recovery;
 *   - overflow: a stream longer than the ring goes through the driver (it
 *     waits for room); a CQ_TAIL beyond the ring latches ALIGNMENT_ERROR;
 *   - HALT in the middle of a stream (in-flight work completes, nothing more
 *     is fetched) and RESUME; CONTROL.RESET in the middle of a stream (every
 *     register to its reset value), then the driver's npk_shell_reset;
 *   - a property test of the queue: random streams of copies with random
 *     faults and resets/halts the test asks for; every descriptor is accounted
 *     for exactly once (completed = its destination equals its source,
 *     failed = the descriptor at CQ_HEAD, not run / cancelled = untouched; at
 *     most one partly written when a reset cut its store).
 * References are computed here from the operands. */
#include "check.h"
#include "npukit/npu.h"
#include "npukit/shell.h"
#include "npukit/sim.h"

#include <stdlib.h>
#include <string.h>

#define POISON 0xc3

static uint64_t rng = 0x5e11;
static uint32_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static uint32_t rd(npk_port *p, uint32_t off) {
    uint32_t v = 0;
    npk_port_read32(p, off, &v);
    return v;
}

typedef struct work {
    uint64_t src, dst;          /* DMA_COPY 256 bytes */
    uint64_t a, b, c;           /* GEMM int8 4x4x8, C int32 */
    uint64_t vin, vout;         /* VEC_OP relu int8, 64 bytes */
    uint64_t sin, sout;         /* DMA_STRIDED 3 rows of 40 bytes, pitches 64 / 96 */
    uint8_t S[256], A[32], B[32], V[64], T[3 * 64];
} work;

static void work_init(npk_port *p, work *w) {
    npk_port_alloc(p, 256, 64, &w->src);
    npk_port_alloc(p, 256, 64, &w->dst);
    npk_port_alloc(p, 32, 64, &w->a);
    npk_port_alloc(p, 32, 64, &w->b);
    npk_port_alloc(p, 64, 64, &w->c);
    npk_port_alloc(p, 64, 64, &w->vin);
    npk_port_alloc(p, 64, 64, &w->vout);
    npk_port_alloc(p, 3 * 64, 64, &w->sin);
    npk_port_alloc(p, 3 * 96, 64, &w->sout);
    for (int i = 0; i < 256; i++) w->S[i] = (uint8_t)rnd();
    for (int i = 0; i < 32; i++) w->A[i] = (uint8_t)rnd(), w->B[i] = (uint8_t)rnd();
    for (int i = 0; i < 64; i++) w->V[i] = (uint8_t)rnd();
    for (int i = 0; i < 3 * 64; i++) w->T[i] = (uint8_t)rnd();
    npk_port_mem_write(p, w->src, w->S, 256);
    npk_port_mem_write(p, w->a, w->A, 32);
    npk_port_mem_write(p, w->b, w->B, 32);
    npk_port_mem_write(p, w->vin, w->V, 64);
    npk_port_mem_write(p, w->sin, w->T, 3 * 64);
}

static void poison(npk_port *p, const work *w) {
    uint8_t z[3 * 96];
    memset(z, POISON, sizeof z);
    npk_port_mem_write(p, w->dst, z, 256);
    npk_port_mem_write(p, w->c, z, 64);
    npk_port_mem_write(p, w->vout, z, 64);
    npk_port_mem_write(p, w->sout, z, 3 * 96);
}

/* The stream: copy, GEMM, VEC_OP relu, strided copy (4 x 32 bytes). */
static size_t stream(const work *w, uint8_t *q) {
    size_t n = 0;
    n += npk_shell_enc_dma_copy(q + n, 1, w->src, w->dst, 256);
    n += npk_shell_enc_gemm_v1(q + n, SHELL_INT8, SHELL_ROW_MAJOR, 4, 4, 8, w->a, w->b, w->c);
    n += npk_shell_enc_vec(q + n, 3, SHELL_VEC_RELU, SHELL_INT8, w->vin, w->vout, 64, 0);
    n += npk_shell_enc_dma_strided(q + n, 4, w->sin, w->sout, 40, 3, 64, 96); /* byte pitches */
    return n;
}

/* 1 = output i equals the reference, 0 = untouched, -1 = other. */
static int outcome(npk_port *p, const work *w, int i) {
    uint8_t got[3 * 96], want[3 * 96];
    size_t n;
    uint64_t at;
    memset(want, POISON, sizeof want);
    if (i == 0) {
        n = 256, at = w->dst;
        memcpy(want, w->S, 256);
    } else if (i == 1) {
        n = 64, at = w->c;
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 4; c++) {
                int32_t s = 0;
                for (int k = 0; k < 8; k++) s += (int8_t)w->A[r * 8 + k] * (int8_t)w->B[k * 4 + c];
                for (int b = 0; b < 4; b++) want[(r * 4 + c) * 4 + b] = (uint8_t)((uint32_t)s >> (8 * b));
            }
    } else if (i == 2) {
        n = 64, at = w->vout;
        for (int k = 0; k < 64; k++) want[k] = (w->V[k] & 0x80) ? 0 : w->V[k];
    } else {
        n = 3 * 96, at = w->sout;
        for (int r = 0; r < 3; r++) memcpy(want + r * 96, w->T + r * 64, 40);
    }
    npk_port_mem_read(p, at, got, n);
    if (!memcmp(got, want, n)) return 1;
    int untouched = 1;
    for (size_t k = 0; k < n; k++) untouched &= got[k] == POISON;
    return untouched ? 0 : -1;
}

static int owner(const work *w, uint64_t a) {
#define IN(base, len) (a >= (base) && a < (base) + (len))
    if (IN(w->src, 256) || IN(w->dst, 256)) return 0;
    if (IN(w->a, 32) || IN(w->b, 32) || IN(w->c, 64)) return 1;
    if (IN(w->vin, 64) || IN(w->vout, 64)) return 2;
    if (IN(w->sin, 3 * 64) || IN(w->sout, 3 * 96)) return 3;
    return -1;
#undef IN
}

typedef struct {
    npk_access acc[512];
    uint64_t addr[512];
    unsigned n;
} beatlog;
static void log_beat(void *ctx, npk_access acc, uint64_t addr, size_t len, npk_bus_resp r) {
    (void)len, (void)r;
    beatlog *l = ctx;
    if (l->n < 512) l->acc[l->n] = acc, l->addr[l->n] = addr, l->n++;
}

static int open_shell(npk_port **p, npk_shell **s) {
    if (npk_port_open(p, NULL, "shell", NULL) || npk_shell_open(s, *p, NULL)) {
        fprintf(stderr, "open: %s\n", npk_errmsg());
        CHECK(0);
        return -1;
    }
    return 0;
}

static void test_every_beat(npk_bus_resp resp) {
    npk_port *p;
    npk_shell *s;
    if (open_shell(&p, &s)) return;
    npk_mem *m = npk_sim_mem(npk_port_sim(p));
    work w;
    work_init(p, &w);
    uint8_t q[128];
    size_t len = stream(&w, q);
    CHECK_EQ(len, 128);
    poison(p, &w);
    beatlog log = {{0}, {0}, 0};
    npk_mem_set_watch(m, log_beat, &log);
    CHECK_EQ(npk_shell_run(s, q, len, 0), 0);
    npk_mem_set_watch(m, NULL, NULL);
    for (int i = 0; i < 4; i++) CHECK_EQ(outcome(p, &w, i), 1);
    uint64_t ring = rd(p, SHELL_CQ_BASE_LO) | (uint64_t)rd(p, SHELL_CQ_BASE_HI) << 32;
    uint32_t ring_bytes = rd(p, SHELL_CQ_SIZE);
    CHECK(log.n > 8);
    unsigned reads = 0, writes = 0, fetches = 0;
    for (unsigned b = 0; b < log.n; b++) {
        npk_access acc = log.acc[b];
        unsigned nth = acc == NPK_ACC_READ ? reads++ : writes++;
        uint32_t head0 = rd(p, SHELL_CQ_HEAD);
        uint64_t addr = log.addr[b];
        int k = owner(&w, addr);
        if (k < 0) { /* a descriptor fetch: the ring position moved since the clean run */
            uint32_t off = (uint32_t)(addr - ring);
            k = (int)(off / 32 % 4);
            addr = ring + (head0 + 32u * (unsigned)k) % ring_bytes;
            fetches++;
        }
        poison(p, &w);
        npk_fault f = {acc, 0, 0, (int64_t)nth, resp, 1};
        npk_mem_add_fault(m, &f);
        int rc = npk_shell_run(s, q, len, 0);
        npk_mem_clear_faults(m);
        CHECK_EQ(rc, -NPK_EDEVICE);
        npk_shell_state st;
        CHECK_EQ(npk_shell_state_read(s, &st), 0);
        CHECK_EQ(st.error_code, resp == NPK_BUS_ERROR ? SHELL_ERR_DMA_FAULT : SHELL_ERR_TIMEOUT);
        CHECK_EQ(st.error_addr, addr);
        CHECK_EQ(st.head, (head0 + 32u * (unsigned)k) % ring_bytes);
        CHECK(st.status & SHELL_STATUS_ERROR);
        CHECK(st.irq_status & SHELL_IRQ_ERROR);
        for (int i = 0; i < 4; i++) {
            int o = outcome(p, &w, i);
            if (i < k) CHECK_EQ(o, 1);
            else if (i > k) CHECK_EQ(o, 0);
            else CHECK(o != 1);
        }
        /* recovery: clear, reset (the driver re-programs the ring), the same stream */
        CHECK_EQ(npk_shell_clear_error(s), 0);
        CHECK_EQ(npk_shell_reset(s), 0);
        poison(p, &w);
        CHECK_EQ(npk_shell_run(s, q, len, 0), 0);
        for (int i = 0; i < 4; i++) CHECK_EQ(outcome(p, &w, i), 1);
    }
    CHECK_EQ(fetches, 4);
    CHECK(writes >= 4);
    npk_shell_close(s);
    npk_port_close(p);
}

static void test_overflow_halt_reset(void) {
    npk_port *p;
    npk_shell *s;
    if (open_shell(&p, &s)) return;
    npk_sim *sim = npk_port_sim(p);
    npk_dev *dev = npk_sim_dev(sim);
    work w;
    work_init(p, &w);
    uint8_t q[128 * 40];
    size_t len = 0;
    for (int r = 0; r < 40; r++) len += stream(&w, q + len); /* 5120 bytes > the 4096-byte ring */
    poison(p, &w);
    CHECK_EQ(npk_shell_run(s, q, len, 0), 0);
    for (int i = 0; i < 4; i++) CHECK_EQ(outcome(p, &w, i), 1);
    CHECK_EQ(rd(p, SHELL_PERF_DESCS), 160);
    /* a CQ_TAIL beyond the ring: ALIGNMENT_ERROR at CQ_BASE + TAIL */
    uint64_t ring = rd(p, SHELL_CQ_BASE_LO) | (uint64_t)rd(p, SHELL_CQ_BASE_HI) << 32;
    npk_port_write32(p, SHELL_CQ_TAIL, rd(p, SHELL_CQ_SIZE) + 32);
    npk_port_write32(p, SHELL_DOORBELL, 1);
    npk_port_wait(p, 1000);
    CHECK(rd(p, SHELL_STATUS) & SHELL_STATUS_ERROR);
    CHECK_EQ(rd(p, SHELL_ERROR_CODE), SHELL_ERR_ALIGNMENT);
    CHECK_EQ(rd(p, SHELL_ERROR_ADDR_LO), (uint32_t)(ring + rd(p, SHELL_CQ_SIZE) + 32));
    CHECK_EQ(npk_shell_clear_error(s), 0);
    CHECK_EQ(npk_shell_reset(s), 0);
    /* HALT part-way through 32 descriptors: in-flight work completes, nothing more is
     * fetched (HEAD and PERF_DESCS stand still); RESUME runs the rest */
    poison(p, &w);
    len = 0;
    for (int r = 0; r < 8; r++) len += stream(&w, q + len);
    uint32_t descs0 = rd(p, SHELL_PERF_DESCS);
    CHECK_EQ(npk_shell_push_stream(s, q, len), 0);
    CHECK_EQ(npk_shell_kick(s), 0);
    npk_port_wait(p, 300);
    CHECK_EQ(npk_shell_halt(s), 0);
    npk_port_wait(p, 1000000);
    uint32_t h1 = rd(p, SHELL_CQ_HEAD), d1 = rd(p, SHELL_PERF_DESCS) - descs0;
    CHECK(rd(p, SHELL_STATUS) & SHELL_STATUS_HALTED);
    CHECK(d1 > 0 && d1 < 32);
    npk_port_wait(p, 1000000);
    CHECK_EQ(rd(p, SHELL_CQ_HEAD), h1);
    CHECK_EQ(rd(p, SHELL_PERF_DESCS) - descs0, d1);
    CHECK_EQ(npk_shell_resume(s), 0);
    CHECK_EQ(npk_shell_wait(s, 0), 0);
    CHECK_EQ(rd(p, SHELL_PERF_DESCS) - descs0, 32);
    for (int i = 0; i < 4; i++) CHECK_EQ(outcome(p, &w, i), 1);
    len = stream(&w, q);
    /* CONTROL.RESET part-way: every register to its reset value, then the driver's reset */
    poison(p, &w);
    CHECK_EQ(npk_shell_push_stream(s, q, len), 0);
    CHECK_EQ(npk_shell_kick(s), 0);
    npk_port_wait(p, 30);
    npk_port_write32(p, SHELL_CONTROL, SHELL_CTRL_RESET);
    size_t it = 0;
    for (const npk_reg *r; (r = npk_regfile_next(dev->regs, &it));)
        CHECK_EQ(npk_regfile_peek(dev->regs, dev, r->off), r->reset);
    npk_port_wait(p, 1000000);
    int partial = 0;
    for (int i = 0; i < 4; i++) partial += outcome(p, &w, i) < 0;
    CHECK(partial <= 1);
    CHECK_EQ(npk_shell_reset(s), 0);
    poison(p, &w);
    CHECK_EQ(npk_shell_run(s, q, len, 0), 0);
    for (int i = 0; i < 4; i++) CHECK_EQ(outcome(p, &w, i), 1);
    npk_shell_close(s);
    npk_port_close(p);
}

/* Random copy streams, random faults, random resets and halts. */
static void test_property(void) {
    npk_port *p;
    npk_shell *s;
    if (open_shell(&p, &s)) return;
    npk_mem *m = npk_sim_mem(npk_port_sim(p));
    enum { B = 16 };
    uint64_t src[B], dst[B];
    uint8_t data[B][128];
    for (int j = 0; j < B; j++) {
        npk_port_alloc(p, 128, 64, &src[j]);
        npk_port_alloc(p, 128, 64, &dst[j]);
        for (int i = 0; i < 128; i++) data[j][i] = (uint8_t)rnd();
        npk_port_mem_write(p, src[j], data[j], 128);
    }
    unsigned total = 0, done = 0, failed = 0, not_run = 0, cancelled = 0, resets = 0, halts = 0;
    for (int iter = 0; iter < 150; iter++) {
        unsigned n = 1 + rnd() % B;
        uint8_t q[32 * B], z[128];
        memset(z, POISON, sizeof z);
        for (unsigned j = 0; j < n; j++) {
            npk_port_mem_write(p, dst[j], z, 128);
            npk_shell_enc_dma_copy(q + 32 * j, j, src[j], dst[j], 128);
        }
        uint32_t head0 = rd(p, SHELL_CQ_HEAD), ring_bytes = rd(p, SHELL_CQ_SIZE);
        uint32_t kind = rnd() % 6;
        if (kind < 2) {
            npk_fault f = {rnd() % 2 ? NPK_ACC_WRITE : NPK_ACC_READ, 0, 0, (int64_t)(rnd() % (4 * n)),
                           kind ? NPK_BUS_HANG : NPK_BUS_ERROR, 1};
            npk_mem_add_fault(m, &f);
        }
        int fail_at = -1, cut = 0;
        if (kind == 2 || kind == 3) {
            CHECK_EQ(npk_shell_push_stream(s, q, 32 * n), 0);
            CHECK_EQ(npk_shell_kick(s), 0);
            npk_port_wait(p, rnd() % 300);
            if (kind == 2) { /* reset: cancels what has not run */
                CHECK_EQ(npk_shell_reset(s), 0);
                resets++;
                cut = 1;
            } else { /* halt, then resume: everything completes */
                CHECK_EQ(npk_shell_halt(s), 0);
                npk_port_wait(p, 5000);
                CHECK_EQ(npk_shell_resume(s), 0);
                CHECK_EQ(npk_shell_wait(s, 0), 0);
                halts++;
            }
        } else {
            int rc = npk_shell_run(s, q, 32 * n, 0);
            if (rc) {
                CHECK_EQ(rc, -NPK_EDEVICE);
                npk_shell_state st;
                npk_shell_state_read(s, &st);
                fail_at = (int)(((st.head - head0) % ring_bytes) / 32);
                CHECK(fail_at >= 0 && fail_at < (int)n);
                CHECK_EQ(npk_shell_clear_error(s), 0);
                CHECK_EQ(npk_shell_reset(s), 0);
            }
        }
        npk_mem_clear_faults(m);
        int partial = 0;
        for (unsigned j = 0; j < n; j++) {
            uint8_t got[128];
            npk_port_mem_read(p, dst[j], got, 128);
            int same = !memcmp(got, data[j], 128), untouched = !memcmp(got, z, 128);
            if (cut) {
                partial += !same && !untouched;
                if (same) done++;
                else cancelled++;
            } else if (fail_at >= 0) {
                if ((int)j < fail_at) {
                    CHECK(same);
                    done++;
                } else if ((int)j == fail_at) {
                    CHECK(!same);
                    failed++;
                } else {
                    CHECK(untouched);
                    not_run++;
                }
            } else {
                CHECK(same);
                done++;
            }
        }
        CHECK(partial <= 1);
        total += n;
    }
    CHECK_EQ(done + failed + not_run + cancelled, total);
    CHECK(failed > 5 && resets > 5 && halts > 5);
    fprintf(stderr, "shell property: %u descriptors: %u completed, %u failed, %u not run after a failure, %u cancelled by %u resets (%u halts)\n",
            total, done, failed, not_run, cancelled, resets, halts);
    npk_shell_close(s);
    npk_port_close(p);
}

int main(void) {
    test_every_beat(NPK_BUS_ERROR);
    test_every_beat(NPK_BUS_HANG);
    test_overflow_halt_reset();
    test_property();
    return CHECK_DONE();
}
