// SPDX-License-Identifier: MIT
/* Helpers shared by the device-aware fuzz targets (tests/fuzz/fuzz_*.c).
 *
 *   fz_in        a cursor over the fuzzer's input: fz_u8/u16/u32 return 0
 *                once the input is exhausted, so every input is a valid
 *                (possibly short) program.
 *   fz_guard     the DMA invariant: the commands the fuzzer issued name a set
 *                of byte ranges (ring slots, tensors, windows); every device
 *                beat -- answered, faulted or hung -- must lie inside one of
 *                them. Everything else is a guard region: the watch aborts on
 *                the first beat that touches it, naming the address.
 *   fz_check_reset  after npk_sim_reset every register of the table reads its
 *                reset value (fz_check_regs: after any reset path).
 *   fz_finish    the common tail of every device harness (with
 *                NPK_FUZZ_COST=1 it also bounds the input's host cost,
 *                measured from fz_cost_begin).
 *
 * Failures abort() with a message on stderr, which libFuzzer and the replay
 * driver (replay_main.c) both report as a crash. Header-only so that each
 * target stays one translation unit (cmake/fuzz.cmake builds one executable
 * per tests/fuzz/fuzz_*.c). */
#ifndef NPUKIT_FUZZ_UTIL_H
#define NPUKIT_FUZZ_UTIL_H

#include "npukit/npu.h"
#include "npukit/sim.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct fz_in {
    const uint8_t *p;
    size_t n, pos;
} fz_in;

static inline uint8_t fz_u8(fz_in *in) { return in->pos < in->n ? in->p[in->pos++] : 0; }
static inline uint16_t fz_u16(fz_in *in) {
    uint16_t lo = fz_u8(in);
    return (uint16_t)(lo | (uint16_t)fz_u8(in) << 8);
}
static inline uint32_t fz_u32(fz_in *in) {
    uint32_t lo = fz_u16(in);
    return lo | (uint32_t)fz_u16(in) << 16;
}
static inline uint64_t fz_u64(fz_in *in) {
    uint64_t lo = fz_u32(in);
    return lo | (uint64_t)fz_u32(in) << 32;
}
static inline size_t fz_left(const fz_in *in) { return in->pos < in->n ? in->n - in->pos : 0; }

#define FZ_MAX_RANGES 512

/* Named byte ranges, stored as [lo, last] (inclusive, so that a range may
 * end at the top of the address space). Addresses wrap modulo 2^64 as the
 * devices' address arithmetic does: a range that crosses 2^64 is named as
 * its two parts. */
typedef struct fz_guard {
    uint64_t lo[FZ_MAX_RANGES], last[FZ_MAX_RANGES];
    const char *what[FZ_MAX_RANGES];
    unsigned n;
    const char *device;
    uint64_t beats, beats_ok;
} fz_guard;

static inline void fz_guard_init(fz_guard *g, const char *device) {
    memset(g, 0, sizeof *g);
    g->device = device;
}

static inline void fz_name_one(fz_guard *g, uint64_t lo, uint64_t last, const char *what) {
    if (g->n == FZ_MAX_RANGES) {
        fprintf(stderr, "fuzz harness: too many named ranges\n");
        abort();
    }
    g->lo[g->n] = lo;
    g->last[g->n] = last;
    g->what[g->n] = what;
    g->n++;
}

/* Name [addr, addr + len) (mod 2^64) as a range the device may touch. len 0 names nothing. */
static inline void fz_name(fz_guard *g, uint64_t addr, uint64_t len, const char *what) {
    if (!len) return;
    uint64_t last = addr + (len - 1);
    if (last >= addr) {
        fz_name_one(g, addr, last, what);
    } else {
        fz_name_one(g, addr, UINT64_MAX, what);
        fz_name_one(g, 0, last, what);
    }
}

/* A strided tensor: rows of rowbytes every stride bytes (the bounding extent
 * [base, base + (rows-1)*stride + rowbytes) is named). */
static inline void fz_name_rows(fz_guard *g, uint64_t base, uint64_t rows, uint64_t stride, uint64_t rowbytes,
                                const char *what) {
    if (!rows || !rowbytes) return;
    fz_name(g, base, (rows - 1) * stride + rowbytes, what);
}

/* 1 when every byte of [addr, addr + len) (mod 2^64) lies in one named range
 * (or, for a beat that wraps, each part in one). */
static inline int fz_named(const fz_guard *g, uint64_t addr, size_t len) {
    if (!len) len = 1;
    uint64_t last = addr + (len - 1);
    if (last < addr) return fz_named(g, addr, (size_t)(UINT64_MAX - addr + 1)) && fz_named(g, 0, (size_t)last + 1);
    for (unsigned i = 0; i < g->n; i++)
        if (addr >= g->lo[i] && last <= g->last[i]) return 1;
    return 0;
}

static inline void fz_watch(void *ctx, npk_access acc, uint64_t addr, size_t len, npk_bus_resp r) {
    fz_guard *g = ctx;
    g->beats++;
    if (r == NPK_BUS_OK) g->beats_ok++;
    if (!fz_named(g, addr, len)) {
        fprintf(stderr, "%s: DMA %s of %zu bytes at 0x%llx (response %d) touches a guard region: no command named it\n",
                g->device, acc == NPK_ACC_WRITE ? "write" : "read", len, (unsigned long long)addr, (int)r);
        for (unsigned i = 0; i < g->n; i++)
            fprintf(stderr, "  named: [0x%llx, 0x%llx] %s\n", (unsigned long long)g->lo[i],
                    (unsigned long long)g->last[i], g->what[i]);
        abort();
    }
}

static inline void fz_fail(const char *device, const char *what) {
    fprintf(stderr, "%s: invariant violated: %s\n", device, what);
    abort();
}
#define FZ_ASSERT(dev, cond)                                                                                          \
    do {                                                                                                              \
        if (!(cond)) fz_fail(dev, #cond);                                                                             \
    } while (0)

/* Reset returns every register of the table to its reset value. */
/* Every register of the device's table reads its reset value (side-effect-free
 * peek); `after` names what should have reset it. */
static inline void fz_check_regs(npk_dev *d, const char *after) {
    npk_regfile *rf = d->regs;
    if (!rf) return;
    size_t it = 0;
    for (const npk_reg *r; (r = npk_regfile_next(rf, &it));) {
        uint32_t v = npk_regfile_peek(rf, d, r->off);
        if (v != r->reset) {
            fprintf(stderr, "%s: after %s %s reads 0x%08x, reset value 0x%08x\n", d->cls->name, after, r->name, v,
                    r->reset);
            abort();
        }
    }
}

static inline void fz_check_reset(npk_sim *s) {
    npk_sim_reset(s);
    fz_check_regs(npk_sim_dev(s), "reset");
}

/* The common end of every device harness: drop the fault rules and the DMA
 * watch, check that npk_sim_reset restores every register, free the model.
 * Returns 0 for LLVMFuzzerTestOneInput. */
/* Cost-bounded mode (issue 32; docs/fuzzing.md "Host cost"): with
 * NPK_FUZZ_COST=1 in the environment (scripts/fuzz.sh --cost) every input's
 * host work is measured from fz_cost_begin (after the machine is created) to
 * fz_finish: process CPU time, the guest bytes the device's beats moved
 * (npk_mem statistics) and the guest memory it holds. An input above
 * NPK_FUZZ_MAX_MS (default 5000 ms of CPU), NPK_FUZZ_MAX_MOVED (default
 * 2 GiB moved) or NPK_FUZZ_MAX_MEM (default 1 GiB held) aborts naming the
 * figure: a guest action whose host cost the models' implementation limits
 * do not bound. Off by default (the replay ctests assert no timing). */
static inline uint64_t fz_env_u64(const char *name, uint64_t def) {
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : def;
}

static inline double fz_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double fz_cost_t0;

static inline int fz_cost_on(void) {
    const char *v = getenv("NPK_FUZZ_COST");
    return v && *v && strcmp(v, "0");
}

static inline void fz_cost_begin(void) {
    if (fz_cost_on()) fz_cost_t0 = fz_cpu_ms();
}

static inline void fz_cost_check(npk_sim *s, const char *what) {
    if (!fz_cost_on()) return;
    double ms = fz_cpu_ms() - fz_cost_t0;
    npk_mem_stats st;
    npk_mem_get_stats(npk_sim_mem(s), &st);
    uint64_t moved = st.read_bytes + st.write_bytes, held = npk_mem_used(npk_sim_mem(s));
    uint64_t max_ms = fz_env_u64("NPK_FUZZ_MAX_MS", 5000), max_moved = fz_env_u64("NPK_FUZZ_MAX_MOVED", 2ull << 30),
             max_mem = fz_env_u64("NPK_FUZZ_MAX_MEM", 1ull << 30);
    if (ms > (double)max_ms || moved > max_moved || held > max_mem) {
        fprintf(stderr,
                "%s: host cost over the bound: %.0f ms CPU (bound %" PRIu64 "), %" PRIu64 " guest bytes moved (bound %" PRIu64
                "), %" PRIu64 " bytes of guest memory (bound %" PRIu64 "), %" PRIu64 " device cycles\n",
                what, ms, max_ms, moved, max_moved, held, max_mem, npk_sim_cycles(s));
        abort();
    }
}

static inline int fz_finish(npk_sim *s) {
    fz_cost_check(s, npk_sim_class(s)->name);
    npk_mem *m = npk_sim_mem(s);
    npk_mem_clear_faults(m);
    npk_mem_set_watch(m, NULL, NULL);
    fz_check_reset(s);
    npk_sim_free(s);
    return 0;
}

/* One optional fault rule from two input bytes: none (most inputs), a bus
 * error or a hang on the Nth read or write beat. Returns 1 when a rule was
 * added (*hang = 1 for a hang). */
static inline int fz_fault(fz_in *in, npk_mem *m, int *hang) {
    uint8_t k = fz_u8(in), beat = fz_u8(in);
    *hang = 0;
    if (k % 4 != 3) return 0;
    npk_fault f = {(k & 0x10) ? NPK_ACC_WRITE : NPK_ACC_READ, 0, 0, beat % 64, NPK_BUS_ERROR, 1};
    if (k & 0x20) {
        f.resp = NPK_BUS_HANG;
        *hang = 1;
    }
    npk_mem_add_fault(m, &f);
    return 1;
}

#endif
