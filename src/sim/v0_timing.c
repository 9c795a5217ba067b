// SPDX-License-Identifier: MIT
/* The v0 timing model (docs/v0.md, "Timing model"): cycles, phase schedule
 * and engine figures of a descriptor on the modeled array, and Gemmini's own
 * tile search (tiled_conv_auto / tiled_matmul_auto) it is calibrated against.
 * The descriptor codec it reads is the device ABI: src/abi/v0_desc.c. */
#include "npukit/error.h"
#include "npukit/v0_regs.h"
#include "npukit/v0_model.h"

#include <string.h>

#define T_BUS_BYTES 16u        /* 128-bit bus: bytes per beat per cycle */
#define T_REQ_BYTES 64u        /* largest DMA request */
#define T_INFLIGHT 16u         /* requests in flight */
#define T_ISSUE 3u             /* compute issue latency per tile step */
#define T_DRAIN_EXTRA 3u       /* drain = rows + cols + 3: 35 on 16x16 (last commit 51 cycles after the
                                  first A row, minus the 16 streamed) */
#define T_SPAD_DEFAULT (256u * 1024u) /* scratchpad 256 KiB, double-buffered */
#define T_ACC_DEFAULT (64u * 1024u)   /* accumulator 64 KiB, double-buffered */
#define T_DECODE 1u            /* wrapper decode/validate */
#define T_HOST_FIT 250u        /* gemmini_loop: host (Rocket) cycles per test of a candidate tile in the
                                  software's tile search: two evaluations of the scratchpad and accumulator
                                  rows, about 15 multiplies at the 8-cycle iterative multiplier + the rest */

/* The timing parameters with every 0 replaced by its default. */
static npk_v0_timing timing_norm(const npk_v0_timing *tp) {
    npk_v0_timing t = tp ? *tp : (npk_v0_timing){0};
    if (!t.dram_bw) t.dram_bw = 8;
    if (!tp) t.dram_lat = 20;
    if (!t.rows) t.rows = 16;
    if (!t.cols) t.cols = 16;
    if (!t.spad_bytes) t.spad_bytes = T_SPAD_DEFAULT;
    if (!t.acc_bytes) t.acc_bytes = T_ACC_DEFAULT;
    if (!t.tech_nm) t.tech_nm = NPK_TECH_DEFAULT_NM;
    return t;
}

int npk_v0_timing_check(const npk_v0_timing *tp) {
    npk_v0_timing t = timing_norm(tp);
    if (npk_tech_check(t.tech_nm)) return -NPK_EINVAL;
    if (t.rows != 8 && t.rows != 16 && t.rows != 32)
        return npk_err(NPK_EINVAL, "v0 option rows=%u: the array has 8, 16 or 32 rows", t.rows);
    if (t.cols != 8 && t.cols != 16 && t.cols != 32)
        return npk_err(NPK_EINVAL, "v0 option cols=%u: the array has 8, 16 or 32 columns", t.cols);
    /* one block of A (rows x rows) and B (rows x cols) per scratchpad half,
     * one C block (rows x cols int32) per accumulator half */
    uint64_t spad_min = 2ull * t.rows * (t.rows + t.cols), acc_min = 2ull * 4 * t.rows * t.cols;
    if (t.spad_bytes < spad_min)
        return npk_err(NPK_EINVAL,
                       "v0 option spad_kib: %u bytes cannot double-buffer one %ux%u block of A and B (needs %llu)",
                       t.spad_bytes, t.rows, t.cols, (unsigned long long)spad_min);
    if (t.acc_bytes < acc_min)
        return npk_err(NPK_EINVAL,
                       "v0 option acc_kib: %u bytes cannot double-buffer one %ux%u int32 block (needs %llu)",
                       t.acc_bytes, t.rows, t.cols, (unsigned long long)acc_min);
    return 0;
}

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Cycles to move rows x rowbytes over the DMA: requests of <= 64 B, one issued
 * per cycle, 16 B beats, bandwidth min(bus, DRAM, in-flight limit). */
static uint64_t dma(const npk_v0_timing *t, uint64_t rows, uint64_t rowbytes) {
    if (!rows || !rowbytes) return 0;
    uint64_t reqs = rows * cdiv(rowbytes, T_REQ_BYTES);
    uint64_t bytes = rows * cdiv(rowbytes, T_BUS_BYTES) * T_BUS_BYTES;
    /* bytes per 1000 cycles, to keep the in-flight limit exact in integers */
    uint64_t bw = (uint64_t)t->dram_bw * 1000u;
    if (bw > T_BUS_BYTES * 1000u) bw = T_BUS_BYTES * 1000u;
    uint64_t inflight = (uint64_t)T_INFLIGHT * T_REQ_BYTES * 1000u / (t->dram_lat + T_REQ_BYTES / T_BUS_BYTES);
    if (bw > inflight) bw = inflight;
    if (!bw) bw = 1;
    uint64_t xfer = cdiv(bytes * 1000u, bw);
    return t->dram_lat + (xfer > reqs ? xfer : reqs);
}

typedef struct sched {
    npk_v0_phase_fn fn;
    void *ctx;
    npk_v0_engine_stats *st; /* per-engine figures, or NULL */
} sched;

static void emit(const sched *sc, npk_v0_phase ph, uint64_t start, uint64_t dur, uint64_t bytes, uint64_t macs) {
    if (sc->fn && dur) sc->fn(sc->ctx, ph, start, dur, bytes, macs);
    if (!sc->st) return;
    switch (ph) {
    case NPK_V0_PH_FETCH: sc->st->dram_rd += bytes, sc->st->dma_cycles += dur; break;
    case NPK_V0_PH_LOAD: sc->st->dram_rd += bytes, sc->st->spad += bytes, sc->st->dma_cycles += dur; break;
    case NPK_V0_PH_STORE: sc->st->dram_wr += bytes, sc->st->dma_cycles += dur; break;
    case NPK_V0_PH_HOST: break; /* neither a device engine nor DRAM */
    default: sc->st->compute_cycles += dur, sc->st->macs += macs; break;
    }
}
/* Access counts of the energy model (npk_v0_engine_stats): scratchpad words
 * read / written, accumulator rows read / written, weight blocks preloaded. */
static void access(const sched *sc, uint64_t spad_rd, uint64_t spad_wr, uint64_t acc_rd, uint64_t acc_wr,
                   uint64_t preloads) {
    if (!sc->st) return;
    sc->st->spad_rd += spad_rd, sc->st->spad_wr += spad_wr, sc->st->acc_rd += acc_rd, sc->st->acc_wr += acc_wr;
    sc->st->preloads += preloads;
}
/* On-chip traffic the phases do not carry (scratchpad reads, accumulator). */
static void onchip(const sched *sc, uint64_t spad, uint64_t acc) {
    if (sc->st) sc->st->spad += spad, sc->st->acc += acc;
}

/* Real reduction indices below x when K is laid out in groups of `pad` with
 * the first `real` of each group real (conv channel padding; 1, 1 = none). */
static uint64_t real_k(uint64_t x, uint64_t real, uint64_t pad) {
    return x / pad * real + (x % pad < real ? x % pad : real);
}

/* Tiled matmul on the array (Gemmini's tiled_matmul style): M x N x K with
 * A bytes per im2col row scaled by a_reuse_num/a_reuse_den (conv input reuse),
 * k_real of every k_pad reduction indices real (conv channel padding)
 * and out_bytes per output element. Phases are emitted from cycle `base`. */
static uint64_t tiled(const npk_v0_timing *t, uint64_t M, uint64_t N, uint64_t K, uint64_t a_num, uint64_t a_den,
                      uint64_t k_real, uint64_t k_pad, uint64_t out_bytes, const sched *sc, uint64_t base) {
    /* blocks: R rows of A (M) x R deep (K) x C columns (N); a block streams
     * its R A rows through the array in R cycles (R x C MACs per cycle) */
    const uint64_t R = t->rows, C = t->cols;
    const uint64_t spad_half = t->spad_bytes / 2, acc_half = t->acc_bytes / 2;
    uint64_t I = cdiv(M, R), J = cdiv(N, C), KB = cdiv(K, R);
    uint64_t ti = 1, tj = 1, tk = 1;
#define SPAD_FITS(i, j, k) (R * R * (k) * (i) + R * C * (k) * (j) <= spad_half)
#define ACC_FITS(i, j) (4u * R * C * (i) * (j) <= acc_half)
    for (int grew = 1; grew;) {
        grew = 0;
        /* round robin k, i, j while the tiles fit half the scratchpad (A + B)
         * and half the accumulator (C, int32) */
        if (tk < KB && SPAD_FITS(ti, tj, tk + 1)) tk++, grew = 1;
        if (ti < I && SPAD_FITS(ti + 1, tj, tk) && ACC_FITS(ti + 1, tj)) ti++, grew = 1;
        if (tj < J && SPAD_FITS(ti, tj + 1, tk) && ACC_FITS(ti, tj + 1)) tj++, grew = 1;
    }
#undef SPAD_FITS
#undef ACC_FITS
    /* Balance: keep the number of chunks per dimension, make them equal (the
     * last one is no longer short: K = 64 blocks split 32 + 32, not 46 + 18,
     * so no short compute step leaves the next load and the store exposed).
     * Every size only shrinks, so the scratchpad/accumulator fits still hold. */
    tk = cdiv(KB, cdiv(KB, tk));
    ti = cdiv(I, cdiv(I, ti));
    tj = cdiv(J, cdiv(J, tj));
    uint64_t total = 0, pending_store = 0, first = 1, prev_compute = 0;
    uint64_t prev_macs = 0, store_bytes = 0;
    for (uint64_t i0 = 0; i0 < M; i0 += ti * R)
        for (uint64_t j0 = 0; j0 < N; j0 += tj * C)
            for (uint64_t k0 = 0; k0 < K; k0 += tk * R) {
                uint64_t mm = M - i0 < ti * R ? M - i0 : ti * R;
                uint64_t nn = N - j0 < tj * C ? N - j0 : tj * C;
                uint64_t kk = K - k0 < tk * R ? K - k0 : tk * R;
                uint64_t a_bytes = cdiv(kk * a_num, a_den);
                uint64_t load = dma(t, mm, a_bytes) + dma(t, kk, nn);
                uint64_t compute = cdiv(mm, R) * cdiv(nn, C) * cdiv(kk, R) * R + T_ISSUE;
                if (first) {
                    emit(sc, NPK_V0_PH_LOAD, base, load, mm * a_bytes + kk * nn, 0);
                    total += load; /* nothing to overlap the first load with */
                    first = 0;
                } else {
                    uint64_t at = base + total;
                    emit(sc, NPK_V0_PH_ARRAY, at, prev_compute, 0, prev_macs);
                    emit(sc, NPK_V0_PH_STORE, at, pending_store, store_bytes, 0);
                    emit(sc, NPK_V0_PH_LOAD, at + pending_store, load, mm * a_bytes + kk * nn, 0);
                    uint64_t dmat = load + pending_store;
                    total += prev_compute > dmat ? prev_compute : dmat;
                    pending_store = 0;
                    store_bytes = 0;
                }
                prev_compute = compute;
                prev_macs = mm * nn * (real_k(k0 + kk, k_real, k_pad) - real_k(k0, k_real, k_pad));
                /* each block pass reads an R x R A block and an R x C B block from
                 * the scratchpad and writes R x C int32 partial sums */
                uint64_t passes = cdiv(mm, R) * cdiv(nn, C) * cdiv(kk, R);
                onchip(sc, passes * (R * R + R * C), passes * 4u * R * C);
                /* words: the A rows and B rows each pass streams / preloads
                 * (their real reduction indices: the channel padding enters
                 * the array as zeros, not read from the scratchpad), the DMA
                 * fills; accumulator rows: every pass writes R rows, all but
                 * the first reduction block read them first */
                uint64_t first = k0 ? 0 : cdiv(mm, R) * cdiv(nn, C) * R;
                uint64_t rk = real_k(k0 + kk, k_real, k_pad) - real_k(k0, k_real, k_pad);
                access(sc, cdiv(passes * 2u * R * rk, kk), cdiv(mm * a_bytes + kk * nn, R), passes * R - first,
                       passes * R, passes);
                if (k0 + tk * R >= K) {
                    pending_store += R + C + T_DRAIN_EXTRA + dma(t, mm, nn * out_bytes);
                    store_bytes += mm * nn * out_bytes;
                    onchip(sc, 0, 4u * mm * nn); /* drained for the store */
                    access(sc, 0, 0, mm * cdiv(nn, C), 0, 0);
                }
            }
    emit(sc, NPK_V0_PH_ARRAY, base + total, prev_compute, 0, prev_macs);
    emit(sc, NPK_V0_PH_STORE, base + total + prev_compute, pending_store, store_bytes, 0);
    return total + prev_compute + pending_store;
}

static uint64_t schedule(const npk_v0_desc *d, const npk_v0_timing *tp, const sched *sc);

uint64_t npk_v0_model_cycles(const npk_v0_desc *d, const npk_v0_timing *tp) {
    sched sc = {NULL, NULL, NULL};
    return schedule(d, tp, &sc);
}

uint64_t npk_v0_model_schedule(const npk_v0_desc *d, const npk_v0_timing *tp, npk_v0_phase_fn fn, void *ctx) {
    sched sc = {fn, ctx, NULL};
    return schedule(d, tp, &sc);
}

uint64_t npk_v0_model_stats(const npk_v0_desc *d, const npk_v0_timing *tp, npk_v0_engine_stats *st) {
    sched sc = {NULL, NULL, st};
    return schedule(d, tp, &sc);
}

/* ---- Gemmini's software tiling and loop (timing.gemmini_loop, docs/v0.md
 * "Gemmini calibration"). The tile search follows the rules of gemmini.h's
 * tiled_conv_auto and tiled_matmul_auto (re-derived from their semantics);
 * DIM is the array side (rows), a scratchpad row holds DIM int8 values, an
 * accumulator row DIM int32 values, and half of each memory holds one tile
 * (double buffering). */

/* Scratchpad rows (A: input window, B: weights) or accumulator rows (C) of a
 * conv tile a[] = {batches, orows, ocols, ochs, krows, kcols, kchs}. The
 * input window is orows * stride + dilated kernel - 1 (what the measured
 * software reserved; the 1x1 stride-2 "downsample" shortcut is not taken:
 * the recorded tilings of measured.csv show it was not). */
static uint64_t gconv_rows(const npk_v0_conv *c, uint64_t dim, const uint64_t a[7], int acc) {
    uint64_t kr = a[4] + (uint64_t)(c->dil - 1) * (a[4] - 1), kc = a[5] + (uint64_t)(c->dil - 1) * (a[5] - 1);
    uint64_t irows = a[1] * c->stride_h + kr - 1, icols = a[2] * c->stride_w + kc - 1;
    uint64_t ocb = cdiv(a[3], dim), icb = cdiv(a[6], dim);
    if (acc) return ocb * a[0] * a[1] * a[2];
    return icb * a[0] * irows * icols + ocb * a[5] * a[4] * a[6];
}

static int gconv_fits(const npk_v0_conv *c, uint64_t dim, const uint64_t a[7], uint64_t spad_rows,
                      uint64_t acc_rows, uint64_t *evals) {
    ++*evals;
    return gconv_rows(c, dim, a, 0) <= spad_rows && gconv_rows(c, dim, a, 1) <= acc_rows;
}

int npk_v0_gemmini_conv_tiling(const npk_v0_timing *tp, const npk_v0_conv *c, npk_v0_conv_tiling *out) {
    uint32_t oh, ow;
    memset(out, 0, sizeof *out);
    if (npk_v0_conv_out(c, &oh, &ow)) return -1;
    npk_v0_timing t = timing_norm(tp);
    const uint64_t dim = t.rows;
    const uint64_t spad_rows = t.spad_bytes / dim / 2, acc_rows = t.acc_bytes / (4u * dim) / 2;
    enum { BATCH, OROWS, OCOLS, OCHS, KROWS, KCOLS, KCHS, NARG };
    const uint64_t max[NARG] = {1, oh, ow, c->cout, c->ksize, c->ksize, c->cin};
    uint64_t a[NARG];
    memcpy(a, max, sizeof a);
    /* shrink the largest dimension until both halves fit: channels by whole
     * DIM blocks (first down to a multiple of DIM), the others by one; ocols
     * is spared while it is at most DIM and orows can still shrink (it fills
     * the array rows) */
    while (!gconv_fits(c, dim, a, spad_rows, acc_rows, &out->evals)) {
        int big = -1;
        for (int i = 0; i < NARG; i++) {
            if (i == OCOLS && a[i] <= dim && a[OROWS] > 1) continue;
            if (big < 0 || a[i] > a[big]) big = i;
        }
        if (a[big] <= 1) return -1; /* cannot fit even one element: the geometry is too small */
        if (big == OCHS || big == KCHS) {
            a[big] = a[big] % dim ? a[big] / dim * dim : a[big] - dim;
            if (!a[big]) a[big] = 1;
        } else {
            a[big]--;
        }
    }
    /* then grow ocols as far as it fits, then every dimension by one, round
     * robin in the order above, until none can grow */
    while (a[OCOLS] < max[OCOLS]) {
        a[OCOLS]++;
        if (!gconv_fits(c, dim, a, spad_rows, acc_rows, &out->evals)) {
            a[OCOLS]--;
            break;
        }
    }
    for (int grew = 1; grew;) {
        grew = 0;
        for (int i = 0; i < NARG; i++) {
            if (a[i] >= max[i]) continue;
            a[i]++;
            if (gconv_fits(c, dim, a, spad_rows, acc_rows, &out->evals)) grew = 1;
            else a[i]--;
        }
    }
    out->orows = (uint32_t)a[OROWS], out->ocols = (uint32_t)a[OCOLS], out->ochs = (uint32_t)a[OCHS];
    out->krows = (uint32_t)a[KROWS], out->kcols = (uint32_t)a[KCOLS], out->kchs = (uint32_t)a[KCHS];
    out->tiles = cdiv(oh, a[OROWS]) * cdiv(ow, a[OCOLS]) * cdiv(c->cout, a[OCHS]) * cdiv(c->ksize, a[KROWS]) *
                 cdiv(c->ksize, a[KCOLS]) * cdiv(c->cin, a[KCHS]);
    return 0;
}

void npk_v0_gemmini_matmul_tiling(const npk_v0_timing *tp, uint64_t m, uint64_t n, uint64_t k,
                                  npk_v0_matmul_tiling *out) {
    npk_v0_timing t = timing_norm(tp);
    const uint64_t dim = t.rows;
    const uint64_t spad_rows = t.spad_bytes / dim / 2, acc_rows = t.acc_bytes / (4u * dim) / 2;
    const uint64_t bi = cdiv(m, dim), bj = cdiv(n, dim), bk = cdiv(k, dim);
    /* start from a square C tile filling half the accumulator and the K depth
     * that fills half of the scratchpad's half beside it */
    uint64_t mats_acc = acc_rows / dim, side = 1;
    while ((side + 1) * (side + 1) <= mats_acc) side++;
    uint64_t depth = spad_rows / 2 / dim / side;
    if (!depth) depth = 1;
    uint64_t ti = bi < side ? bi : side, tj = bj < side ? bj : side, tk = bk < depth ? bk : depth;
    uint64_t evals = 0;
#define MM_SPAD(i, j, kk) (++evals, ((i) * (kk) + (kk) * (j)) * dim <= spad_rows)
#define MM_ACC(i, j) ((i) * (j) * dim <= acc_rows)
    /* then grow j, i, k by one block while A + B fit half the scratchpad and C half the accumulator */
    for (int grew = 1; grew;) {
        grew = 0;
        if (tj < bj && MM_SPAD(ti, tj + 1, tk) && MM_ACC(ti, tj + 1)) tj++, grew = 1;
        if (ti < bi && MM_SPAD(ti + 1, tj, tk) && MM_ACC(ti + 1, tj)) ti++, grew = 1;
        if (tk < bk && MM_SPAD(ti, tj, tk + 1)) tk++, grew = 1;
    }
#undef MM_SPAD
#undef MM_ACC
    out->ti = (uint32_t)ti, out->tj = (uint32_t)tj, out->tk = (uint32_t)tk, out->evals = evals;
    out->tiles = cdiv(bi, ti) * cdiv(bj, tj) * cdiv(bk, tk);
}

/* One tile step of the Gemmini loop: load, array and store durations. */
typedef struct gstep {
    uint64_t ld, ld_bytes, ex, macs, st, st_bytes;
} gstep;

/* The hardware loop unroller runs two loops concurrently: tile s + 1 loads
 * while tile s computes (its scratchpad half is free once tile s - 1 has
 * computed), a tile computes only after all of its loads completed, and its
 * output is stored after it computed (the store path runs beside the loads). */
typedef struct gpipe {
    uint64_t rd, wr, ex_prev, ex_prev2, n;
} gpipe;

static void gpipe_step(gpipe *p, const gstep *s, const sched *sc, uint64_t base) {
    uint64_t ld_start = p->rd > p->ex_prev2 ? p->rd : p->ex_prev2;
    uint64_t ld_end = ld_start + s->ld;
    uint64_t ex_start = ld_end > p->ex_prev ? ld_end : p->ex_prev;
    uint64_t ex_end = ex_start + s->ex;
    emit(sc, NPK_V0_PH_LOAD, base + ld_start, s->ld, s->ld_bytes, 0);
    emit(sc, NPK_V0_PH_ARRAY, base + ex_start, s->ex, 0, s->macs);
    if (s->st) {
        uint64_t st_start = ex_end > p->wr ? ex_end : p->wr;
        emit(sc, NPK_V0_PH_STORE, base + st_start, s->st, s->st_bytes, 0);
        p->wr = st_start + s->st;
    }
    p->rd = ld_end;
    p->ex_prev2 = p->ex_prev;
    p->ex_prev = ex_end;
    p->n++;
}

static uint64_t gpipe_end(const gpipe *p) {
    uint64_t e = p->ex_prev > p->rd ? p->ex_prev : p->rd;
    return e > p->wr ? e : p->wr;
}

/* A DMA transfer of `reqs` requests and `bytes` bytes: the DRAM latency once,
 * then requests paced by the in-flight limit and bytes by the DRAM bandwidth
 * (whichever is slower). */
static uint64_t gdma(const npk_v0_timing *t, uint64_t reqs, uint64_t bytes) {
    if (!reqs) return 0;
    uint64_t pace = cdiv(reqs * (t->dram_lat + T_REQ_BYTES / T_BUS_BYTES), T_INFLIGHT);
    uint64_t bw = cdiv(bytes, t->dram_bw);
    if (pace < reqs) pace = reqs; /* one request issued per cycle */
    return t->dram_lat + (pace > bw ? pace : bw);
}

/* Rows in [lo, lo + n) of a dimension of size `size` (padding outside). */
static uint64_t inside(int64_t lo, uint64_t n, uint64_t size) {
    int64_t hi = lo + (int64_t)n;
    if (lo < 0) lo = 0;
    if (hi > (int64_t)size) hi = (int64_t)size;
    return hi > lo ? (uint64_t)(hi - lo) : 0;
}

/* A convolution as Gemmini's tiled_conv_auto runs it: the tiles of
 * npk_v0_gemmini_conv_tiling in tiled_conv's loop order (output rows, output
 * columns, output channels, kernel rows, kernel columns, input channels), each
 * one hardware loop: mvin of the input window (one request per pixel and up to
 * 64 channels; padding is written as zeros without DRAM traffic) and of the
 * weights (one request per kernel position and input channel, up to 64 output
 * channels), then per weight block (DIM output x DIM input channels of one
 * kernel position) one preload and the compute instructions over the tile's
 * pixels, each weight block exposing the array latency (rows + cols + 3 +
 * rows, 51 cycles on 16x16); the int8 output is stored after the last
 * reduction tile, one request per pixel and cols channels. */
static uint64_t gemmini_conv(const npk_v0_timing *t, const npk_v0_conv *c, uint32_t oh, uint32_t ow, const sched *sc,
                             uint64_t base) {
    const uint64_t R = t->rows, C = t->cols, wset = R + C + T_DRAIN_EXTRA + R;
    npk_v0_conv_tiling tl;
    if (npk_v0_gemmini_conv_tiling(t, c, &tl)) return 0;
    const uint64_t host = tl.evals * T_HOST_FIT;
    emit(sc, NPK_V0_PH_HOST, base, host, 0, 0);
    base += host;
    gpipe p = {0};
    for (uint64_t or0 = 0; or0 < oh; or0 += tl.orows)
        for (uint64_t oc0 = 0; oc0 < ow; oc0 += tl.ocols)
            for (uint64_t q0 = 0; q0 < c->cout; q0 += tl.ochs)
                for (uint64_t kr0 = 0; kr0 < c->ksize; kr0 += tl.krows)
                    for (uint64_t kc0 = 0; kc0 < c->ksize; kc0 += tl.kcols)
                        for (uint64_t k0 = 0; k0 < c->cin; k0 += tl.kchs) {
                            uint64_t orr = oh - or0 < tl.orows ? oh - or0 : tl.orows;
                            uint64_t occ = ow - oc0 < tl.ocols ? ow - oc0 : tl.ocols;
                            uint64_t q = c->cout - q0 < tl.ochs ? c->cout - q0 : tl.ochs;
                            uint64_t kr = c->ksize - kr0 < tl.krows ? c->ksize - kr0 : tl.krows;
                            uint64_t kc = c->ksize - kc0 < tl.kcols ? c->ksize - kc0 : tl.kcols;
                            uint64_t kch = c->cin - k0 < tl.kchs ? c->cin - k0 : tl.kchs;
                            /* input window rows/cols inside the image */
                            int64_t ir0 = (int64_t)(or0 * c->stride_h + kr0 * c->dil) - c->pad_h;
                            int64_t ic0 = (int64_t)(oc0 * c->stride_w + kc0 * c->dil) - c->pad_w;
                            uint64_t irn = (orr - 1) * c->stride_h + (kr - 1) * c->dil + 1;
                            uint64_t icn = (occ - 1) * c->stride_w + (kc - 1) * c->dil + 1;
                            uint64_t pix = inside(ir0, irn, c->h) * inside(ic0, icn, c->w);
                            uint64_t in_req = pix * cdiv(kch, T_REQ_BYTES), w_req = kr * kc * kch * cdiv(q, T_REQ_BYTES);
                            uint64_t in_b = pix * kch, w_b = kr * kc * kch * q;
                            uint64_t ws = cdiv(q, C) * kr * kc * cdiv(kch, R);
                            gstep s = {.ld = gdma(t, in_req + w_req, in_b + w_b), .ld_bytes = in_b + w_b,
                                       .ex = ws * (orr * occ + wset), .macs = orr * occ * q * kr * kc * kch};
                            onchip(sc, ws * orr * occ * R + ws * R * C, ws * orr * occ * 4u * C);
                            /* words: the tile's pixels per weight block, the
                             * weight rows preloaded, the DMA fills (pixel x
                             * channel block, kernel position x channel x
                             * output block); accumulator rows: one per pixel
                             * and weight block, read first unless it is the
                             * first block of the output's reduction */
                            uint64_t first = k0 || kr0 || kc0 ? 0 : cdiv(q, C) * orr * occ;
                            uint64_t kpad = cdiv(kch, R) * R; /* channel padding enters as zeros */
                            access(sc, cdiv((ws * orr * occ + ws * R) * kch, kpad),
                                   pix * cdiv(kch, R) + kr * kc * kch * cdiv(q, C),
                                   ws * orr * occ - first, ws * orr * occ, ws);
                            if (k0 + kch >= c->cin && kr0 + kr >= c->ksize && kc0 + kc >= c->ksize) {
                                s.st_bytes = orr * occ * q;
                                s.st = gdma(t, orr * occ * cdiv(q, C), s.st_bytes);
                                onchip(sc, 0, 4u * orr * occ * q);
                                access(sc, 0, 0, orr * occ * cdiv(q, C), 0, 0);
                            }
                            gpipe_step(&p, &s, sc, base);
                        }
    return host + gpipe_end(&p);
}

/* A matmul as Gemmini's tiled_matmul_auto runs it: tiles of
 * npk_v0_gemmini_matmul_tiling in the order i, j, k (k innermost), each one
 * hardware loop: mvin of A (one request per row and up to 64 bytes) and B,
 * per B block one preload exposing the array latency and the computes over
 * the tile's rows, the int32 C stored after the last k tile (one request per
 * row and cols values). */
static uint64_t gemmini_matmul(const npk_v0_timing *t, uint64_t M, uint64_t N, uint64_t K, const sched *sc,
                               uint64_t base) {
    const uint64_t R = t->rows, C = t->cols, wset = R + C + T_DRAIN_EXTRA + R;
    npk_v0_matmul_tiling tl;
    npk_v0_gemmini_matmul_tiling(t, M, N, K, &tl);
    const uint64_t host = tl.evals * T_HOST_FIT;
    emit(sc, NPK_V0_PH_HOST, base, host, 0, 0);
    base += host;
    const uint64_t TM = tl.ti * R, TN = tl.tj * R, TK = tl.tk * R;
    gpipe p = {0};
    for (uint64_t i0 = 0; i0 < M; i0 += TM)
        for (uint64_t j0 = 0; j0 < N; j0 += TN)
            for (uint64_t k0 = 0; k0 < K; k0 += TK) {
                uint64_t mm = M - i0 < TM ? M - i0 : TM, nn = N - j0 < TN ? N - j0 : TN, kk = K - k0 < TK ? K - k0 : TK;
                uint64_t reqs = mm * cdiv(kk, T_REQ_BYTES) + kk * cdiv(nn, T_REQ_BYTES);
                uint64_t ws = cdiv(nn, C) * cdiv(kk, R);
                gstep s = {.ld = gdma(t, reqs, mm * kk + kk * nn), .ld_bytes = mm * kk + kk * nn,
                           .ex = ws * (mm + wset), .macs = mm * nn * kk};
                onchip(sc, ws * mm * R + ws * R * C, ws * mm * 4u * C);
                access(sc, ws * mm + ws * R, mm * cdiv(kk, R) + kk * cdiv(nn, C), ws * mm - (k0 ? 0 : cdiv(nn, C) * mm),
                       ws * mm, ws);
                if (k0 + kk >= K) {
                    s.st_bytes = mm * nn * 4u;
                    s.st = gdma(t, mm * cdiv(nn, C), s.st_bytes);
                    onchip(sc, 0, 4u * mm * nn);
                    access(sc, 0, 0, mm * cdiv(nn, C), 0, 0);
                }
                gpipe_step(&p, &s, sc, base);
            }
    return host + gpipe_end(&p);
}

static uint64_t schedule(const npk_v0_desc *d, const npk_v0_timing *tp, const sched *sc) {
    npk_v0_timing t = timing_norm(tp);
    uint64_t fetch = dma(&t, 1, NPK_V0_DESC_BYTES) + T_DECODE;
    emit(sc, NPK_V0_PH_FETCH, 0, fetch, NPK_V0_DESC_BYTES, 0);
    uint32_t op = npk_v0_desc_op(d);
    switch (op) {
    case NPK_V0_OP_MATMUL_S8:
    case NPK_V0_OP_MATMUL_S8_RELU:
        if (t.gemmini_loop)
            return fetch + gemmini_matmul(&t, d->w[NPK_V0_W_SHAPE_M], d->w[NPK_V0_W_SHAPE_N], d->w[NPK_V0_W_SHAPE_K],
                                          sc, fetch);
        return fetch + tiled(&t, d->w[NPK_V0_W_SHAPE_M], d->w[NPK_V0_W_SHAPE_N], d->w[NPK_V0_W_SHAPE_K], 1, 1, 1, 1,
                             4, sc, fetch);
    case NPK_V0_OP_CONV2D_S8:
    case NPK_V0_OP_CONV2D_S8_RELU: {
        npk_v0_conv c;
        uint32_t oh, ow;
        npk_v0_desc_get_conv(d, &c);
        if (npk_v0_conv_out(&c, &oh, &ow)) return fetch;
        uint64_t kk = (uint64_t)c.ksize * c.ksize, ss = (uint64_t)c.stride_h * c.stride_w;
        /* each input byte is fetched once and reused kk/ss times by the
         * on-chip im2col (factor capped at 1 for strided 1x1) */
        uint64_t num = ss < kk ? ss : kk;
        /* Gemmini's conv maps input channels to array rows per kernel
         * position: the reduction is kk x ceil(cin / rows) blocks, so a
         * 3-channel 7x7 conv occupies the array like a 16-channel one (the
         * operand bytes stay those of the real channels) */
        if (t.gemmini_loop) return fetch + gemmini_conv(&t, &c, oh, ow, sc, fetch);
        uint64_t cin_pad = cdiv(c.cin, t.rows) * t.rows;
        return fetch + tiled(&t, (uint64_t)oh * ow, c.cout, kk * cin_pad, num * c.cin, kk * cin_pad, c.cin,
                             cin_pad, 1, sc, fetch);
    }
    case NPK_V0_OP_RELU: {
        uint64_t m = d->w[NPK_V0_W_SHAPE_M], n = d->w[NPK_V0_W_SHAPE_N];
        uint64_t in = dma(&t, m, n), out = dma(&t, m, n);
        emit(sc, NPK_V0_PH_LOAD, fetch, in, m * n, 0);
        emit(sc, NPK_V0_PH_STORE, fetch + in, out, m * n, 0);
        onchip(sc, m * n, 0); /* read back out through the ReLU write path */
        access(sc, m * cdiv(n, t.rows), m * cdiv(n, t.rows), 0, 0, 0);
        if (sc->st) sc->st->vec_ops += m * n;
        return fetch + in + out;
    }
    case NPK_V0_OP_MAXPOOL_S8: {
        npk_v0_pool p;
        uint32_t oh, ow;
        npk_v0_desc_get_pool(d, &p);
        if (npk_v0_pool_out(&p, &oh, &ow)) return fetch;
        uint64_t pool = (uint64_t)oh * ow * cdiv(p.c, t.cols) * p.win_h * p.win_w;
        uint64_t in = dma(&t, p.h, (uint64_t)p.w * p.c), out = dma(&t, oh, (uint64_t)ow * p.c);
        emit(sc, NPK_V0_PH_LOAD, fetch, in, (uint64_t)p.h * p.w * p.c, 0);
        emit(sc, NPK_V0_PH_POOL, fetch + in, pool, 0, 0);
        emit(sc, NPK_V0_PH_STORE, fetch + in + pool, out, (uint64_t)oh * ow * p.c, 0);
        onchip(sc, (uint64_t)oh * ow * p.c * p.win_h * p.win_w, 0); /* the window reads */
        access(sc, (uint64_t)oh * ow * cdiv(p.c, t.rows) * p.win_h * p.win_w, (uint64_t)p.h * p.w * cdiv(p.c, t.rows),
               0, 0, 0);
        if (sc->st) sc->st->vec_ops += (uint64_t)oh * ow * p.c * p.win_h * p.win_w;
        return fetch + in + pool + out;
    }
    default:
        return fetch; /* NOP, BARRIER: decode and retire */
    }
}
