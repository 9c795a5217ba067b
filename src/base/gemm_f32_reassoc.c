// SPDX-License-Identifier: MIT
/* npk_gemm_f32_reassoc (include/npukit/gemm.h): the float32 GEMM of the ONNX
 * CPU path, in the fastest order rather than a fixed one.
 *
 * C is computed in tiles of MR = 4 rows x NV vectors of columns, the tile's
 * sums held in registers over a block of KC values of k: per k, NV loads of a
 * row of B, one broadcast of A per row and MR x NV fused multiply-adds. The
 * last vector of a tile is loaded and stored under a mask, so any N runs
 * without packing or padding. Blocks: column panels of NV vectors, KC = 128
 * rows of B per panel (the panel stays in L1/L2 while every row block of A
 * passes). Fewer than 8 columns with K >= 16 take dot products along K
 * instead (npk_gemm_f32_nt, at the end of this file). */
#include "npukit/gemm.h"
#include "npukit/threads.h"

#include "npukit/cpu.h"
#include "npukit/error.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifdef NPK_ISA_X86
#define NPK_GEMM_X86 1
#include "base/x86_simd.h"
#endif

enum { MR = 4, KC = 128 };

/* ---- portable C ------------------------------------------------------------------------ */

enum { PNB = 32 };

/* One column panel (nb <= PNB columns) over one block of kc values of k: C's
 * panel = (ld ? C : bias ? bias[row] : 0) + A x b, four rows at a time. */
static void panel_portable(int64_t M, int64_t nb, int64_t kc, const float *A, int64_t lda, const float *b, int64_t lb,
                           float *C, int64_t ldc, int ld, const float *bias) {
    int64_t i = 0;
    for (; i + MR <= M; i += MR) {
        float acc[MR][PNB];
        for (int r = 0; r < MR; r++)
            if (ld) memcpy(acc[r], C + (i + r) * ldc, sizeof(float) * (size_t)nb);
            else
                for (int64_t j = 0; j < nb; j++) acc[r][j] = bias ? bias[i + r] : 0.0f;
        for (int64_t k = 0; k < kc; k++) {
            const float *bk = b + k * lb;
            float a0 = A[i * lda + k], a1 = A[(i + 1) * lda + k], a2 = A[(i + 2) * lda + k], a3 = A[(i + 3) * lda + k];
            for (int64_t j = 0; j < nb; j++) {
                float bj = bk[j];
                acc[0][j] += a0 * bj;
                acc[1][j] += a1 * bj;
                acc[2][j] += a2 * bj;
                acc[3][j] += a3 * bj;
            }
        }
        for (int r = 0; r < MR; r++) memcpy(C + (i + r) * ldc, acc[r], sizeof(float) * (size_t)nb);
    }
    for (; i < M; i++) {
        float acc[PNB];
        if (ld) memcpy(acc, C + i * ldc, sizeof(float) * (size_t)nb);
        else
            for (int64_t j = 0; j < nb; j++) acc[j] = bias ? bias[i] : 0.0f;
        for (int64_t k = 0; k < kc; k++) {
            const float *bk = b + k * lb;
            float a = A[i * lda + k];
            for (int64_t j = 0; j < nb; j++) acc[j] += a * bk[j];
        }
        memcpy(C + i * ldc, acc, sizeof(float) * (size_t)nb);
    }
}

#ifdef NPK_GEMM_X86

/* ---- AVX-512: vectors of 16, tiles of up to 4 x 64 (16 accumulators) ------------------- */

#define T512 NPK_TARGET_AVX512

/* The accumulators are named variables (c<row><vector>), not an array, so
 * that they stay in registers; a tile with fewer rows or vectors leaves the
 * rest dead (mr and nv are constants in every instantiation). */
#define FOR_V(M, r) M(r, 0) M(r, 1) M(r, 2) M(r, 3)
#define FOR_RV(M) FOR_V(M, 0) FOR_V(M, 1) FOR_V(M, 2) FOR_V(M, 3)
#define FOR_R(M) M(0) M(1) M(2) M(3)

static inline __attribute__((always_inline)) T512 void tile512(int mr, int nv, int tail, int ld, int64_t kc,
                                                                const float *A, int64_t lda, const float *B,
                                                                int64_t ldb, float *C, int64_t ldc,
                                                                const float *bias) {
    const __mmask16 last = (__mmask16)((1u << tail) - 1u);
#define MK(v) ((v) == nv - 1 ? last : (__mmask16)0xFFFF)
#define LIVE(r, v) ((r) < mr && (v) < nv)
#define DECL(r, v)                                                                                                    \
    __m512 c##r##v = _mm512_setzero_ps();                                                                             \
    if (ld && LIVE(r, v)) c##r##v = _mm512_maskz_loadu_ps(MK(v), C + (r) * ldc + 16 * (v));                      \
    else if (bias && LIVE(r, v)) c##r##v = _mm512_set1_ps(bias[r]);
    FOR_RV(DECL)
    for (int64_t k = 0; k < kc; k++) {
        const float *bk = B + k * ldb;
        __m512 b0 = _mm512_maskz_loadu_ps(MK(0), bk), b1 = b0, b2 = b0, b3 = b0;
        if (nv > 1) b1 = _mm512_maskz_loadu_ps(MK(1), bk + 16);
        if (nv > 2) b2 = _mm512_maskz_loadu_ps(MK(2), bk + 32);
        if (nv > 3) b3 = _mm512_maskz_loadu_ps(MK(3), bk + 48);
#define ROW(r)                                                                                                        \
    if ((r) < mr) {                                                                                                   \
        __m512 a = _mm512_set1_ps(A[(r) * lda + k]);                                                                  \
        c##r##0 = _mm512_fmadd_ps(a, b0, c##r##0);                                                                    \
        if (nv > 1) c##r##1 = _mm512_fmadd_ps(a, b1, c##r##1);                                                        \
        if (nv > 2) c##r##2 = _mm512_fmadd_ps(a, b2, c##r##2);                                                        \
        if (nv > 3) c##r##3 = _mm512_fmadd_ps(a, b3, c##r##3);                                                        \
    }
        FOR_R(ROW)
#undef ROW
    }
#define STORE(r, v)                                                                                                   \
    if (LIVE(r, v)) _mm512_mask_storeu_ps(C + (r) * ldc + 16 * (v), MK(v), c##r##v);
    FOR_RV(STORE)
#undef DECL
#undef STORE
#undef MK
}

#define TILE_FN(ISA, MRV, NVV)                                                                                        \
    static T##ISA void tile##ISA##_##MRV##_##NVV(int tail, int ld, int64_t kc, const float *A, int64_t lda,           \
                                                 const float *B, int64_t ldb, float *C, int64_t ldc,                  \
                                                 const float *bias) {                                                 \
        tile##ISA(MRV, NVV, tail, ld, kc, A, lda, B, ldb, C, ldc, bias);                                              \
    }
#define TILE_ROW(ISA, MRV) TILE_FN(ISA, MRV, 1) TILE_FN(ISA, MRV, 2) TILE_FN(ISA, MRV, 3) TILE_FN(ISA, MRV, 4)
#define TILE_ALL(ISA) TILE_ROW(ISA, 1) TILE_ROW(ISA, 2) TILE_ROW(ISA, 3) TILE_ROW(ISA, 4)
#define TILE_TAB_ROW(ISA, MRV) tile##ISA##_##MRV##_1, tile##ISA##_##MRV##_2, tile##ISA##_##MRV##_3, tile##ISA##_##MRV##_4
#define TILE_TAB(ISA) {{TILE_TAB_ROW(ISA, 1)}, {TILE_TAB_ROW(ISA, 2)}, {TILE_TAB_ROW(ISA, 3)}, {TILE_TAB_ROW(ISA, 4)}}

TILE_ALL(512)
typedef void (*tile_fn)(int, int, int64_t, const float *, int64_t, const float *, int64_t, float *, int64_t,
                        const float *);
static const tile_fn tiles512[MR][4] = TILE_TAB(512);

/* One column panel (nb <= vw * nvmax columns) over one block of kc values of k,
 * MR rows of A at a time. */
static inline __attribute__((always_inline)) void panel_tiles(const tile_fn (*tiles)[4], int vw, int64_t M, int64_t nb,
                                                              int64_t kc, const float *A, int64_t lda, const float *b,
                                                              int64_t lb, float *C, int64_t ldc, int ld,
                                                              const float *bias) {
    int nv = (int)((nb + vw - 1) / vw), tail = (int)(nb - vw * (nv - 1));
    for (int64_t i = 0; i < M; i += MR) {
        int mr = M - i < MR ? (int)(M - i) : MR;
        tiles[mr - 1][nv - 1](tail, ld, kc, A + i * lda, lda, b, lb, C + i * ldc, ldc, bias ? bias + i : NULL);
    }
}

static void panel_avx512(int64_t M, int64_t nb, int64_t kc, const float *A, int64_t lda, const float *b, int64_t lb,
                         float *C, int64_t ldc, int ld, const float *bias) {
    panel_tiles(tiles512, 16, M, nb, kc, A, lda, b, lb, C, ldc, ld, bias);
}

/* ---- AVX2 + FMA: vectors of 8, tiles of up to 4 x 24 (12 accumulators) ------------------ */

#define T256 NPK_TARGET_AVX2

static inline __attribute__((always_inline)) T256 void tile256(int mr, int nv, int tail, int ld, int64_t kc,
                                                                const float *A, int64_t lda, const float *B,
                                                                int64_t ldb, float *C, int64_t ldc,
                                                                const float *bias) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i last = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), idx);
/* masked moves only for the last vector (they are slow on some CPUs) */
#define LD256(v, p) ((v) == nv - 1 && tail < 8 ? _mm256_maskload_ps(p, last) : _mm256_loadu_ps(p))
#define DECL(r, v)                                                                                                    \
    __m256 c##r##v = _mm256_setzero_ps();                                                                             \
    if (ld && LIVE(r, v) && (v) < 3) c##r##v = LD256(v, C + (r) * ldc + 8 * (v));                                   \
    else if (bias && LIVE(r, v) && (v) < 3) c##r##v = _mm256_set1_ps(bias[r]);
    FOR_RV(DECL)
    for (int64_t k = 0; k < kc; k++) {
        const float *bk = B + k * ldb;
        __m256 b0 = LD256(0, bk), b1 = b0, b2 = b0;
        if (nv > 1) b1 = LD256(1, bk + 8);
        if (nv > 2) b2 = LD256(2, bk + 16);
#define ROW(r)                                                                                                        \
    if ((r) < mr) {                                                                                                   \
        __m256 a = _mm256_broadcast_ss(A + (r) * lda + k);                                                            \
        c##r##0 = _mm256_fmadd_ps(a, b0, c##r##0);                                                                    \
        if (nv > 1) c##r##1 = _mm256_fmadd_ps(a, b1, c##r##1);                                                        \
        if (nv > 2) c##r##2 = _mm256_fmadd_ps(a, b2, c##r##2);                                                        \
    }
        FOR_R(ROW)
#undef ROW
    }
#define STORE(r, v)                                                                                                   \
    if (LIVE(r, v) && (v) < 3) {                                                                                      \
        if ((v) == nv - 1 && tail < 8) _mm256_maskstore_ps(C + (r) * ldc + 8 * (v), last, c##r##v);                   \
        else _mm256_storeu_ps(C + (r) * ldc + 8 * (v), c##r##v);                                                      \
    }
    FOR_RV(STORE)
#undef DECL
#undef STORE
#undef LD256
    (void)c03, (void)c13, (void)c23, (void)c33;
}

#undef TILE_ROW
#define TILE_ROW(ISA, MRV) TILE_FN(ISA, MRV, 1) TILE_FN(ISA, MRV, 2) TILE_FN(ISA, MRV, 3)
#undef TILE_TAB_ROW
#define TILE_TAB_ROW(ISA, MRV) tile##ISA##_##MRV##_1, tile##ISA##_##MRV##_2, tile##ISA##_##MRV##_3, NULL
TILE_ALL(256)
static const tile_fn tiles256[MR][4] = TILE_TAB(256);

static void panel_avx2(int64_t M, int64_t nb, int64_t kc, const float *A, int64_t lda, const float *b, int64_t lb,
                       float *C, int64_t ldc, int ld, const float *bias) {
    panel_tiles(tiles256, 8, M, nb, kc, A, lda, b, lb, C, ldc, ld, bias);
}
#endif

/* ---- blocking, dispatch and threads ------------------------------------------------------ */

/* The kernel of one instruction-set level: the panel width and the function
 * that runs one column panel over one block of k. copy: a strided B's block is
 * first copied into a panel buffer when more than four row tiles of A pass over
 * it (a panel of a wide B otherwise reads one row per page, a TLB miss per k on
 * an im2col'd convolution: measured on AVX2; the AVX-512 tiles read 64 columns
 * of those rows, 4 cache lines per page, and do 16 FMAs per k against AVX2's
 * 12, so the same misses weigh as much: copied too since issue 26's audit, not
 * timed on an AVX-512 host). A copy moves values, so the sums and their bits do
 * not change. */
typedef void (*panel_fn)(int64_t M, int64_t nb, int64_t kc, const float *A, int64_t lda, const float *b, int64_t lb,
                         float *C, int64_t ldc, int ld, const float *bias);
typedef struct kern {
    const char *name;
    int panel, copy, vw; /* vw: the vector width of the tiles (0: no tail split) */
    panel_fn run;
} kern;

/* avx512 from level avx512 (VNNI not needed), avx2 from level avx2 (AVX2 + FMA), else portable. */
static kern kernel(void) {
#ifdef NPK_GEMM_X86
    npk_isa l = npk_isa_active();
    if (l >= NPK_ISA_AVX512) return (kern){"avx512", 64, 1, 16, panel_avx512};
    if (l >= NPK_ISA_AVX2) return (kern){"avx2", 24, 1, 8, panel_avx2};
#endif
    return (kern){"portable", PNB, 0, 0, panel_portable};
}

const char *npk_gemm_f32_reassoc_kernel(void) { return kernel().name; }

/* Where B comes from: a matrix (B, ldb) or a pack function. */
typedef struct bsrc {
    const float *B;
    int64_t ldb;
    npk_gemm_f32_pack_fn pack;
    void *ctx;
} bsrc;

NPK_ISA_CLONES_VOID(copy_block, (const float *b, int64_t ldb, int64_t kc, int64_t nb, float *dst, int64_t ldd),
                    (b, ldb, kc, nb, dst, ldd)) {
    for (int64_t k = 0; k < kc; k++)
        for (int64_t j = 0; j < nb; j++) dst[k * ldd + j] = b[k * ldb + j];
}

/* Columns [j_lo, j_hi) of C, all M rows: column panels, KC values of k per block, the panel's
 * block of B packed into bp (KC x panel floats) when it comes from a pack function or is copied.
 * A last panel of one vector would run MR chains of FMAs only (latency-bound: half the FMA
 * rate), so when one full panel plus at most one vector is left it is split as two vectors and
 * the rest (N = 80 on AVX2: 24 + 24 + 16 + 16 rather than 24 + 24 + 24 + 8). Every element is
 * still one chain over k in order, so the split does not change a bit. */
static void run_cols(const kern *kn, int64_t M, int64_t j_lo, int64_t j_hi, int64_t K, const float *A, int64_t lda,
                     const bsrc *bs, float *C, int64_t ldc, int acc, const float *bias, float *bp) {
    int64_t panel = kn->panel;
    int copy = !bs->pack && kn->copy && M > 4 * MR && bs->ldb > panel;
    for (int64_t j0 = j_lo, nb; j0 < j_hi; j0 += nb) {
        nb = j_hi - j0 < panel ? j_hi - j0 : panel;
        if (kn->vw && j_hi - j0 > panel && j_hi - j0 <= panel + kn->vw) nb = 2 * kn->vw;
        for (int64_t k0 = 0; k0 < K; k0 += KC) {
            int64_t kc = K - k0 < KC ? K - k0 : KC;
            const float *b = bp;
            int64_t lb = panel;
            if (bs->pack) bs->pack(bs->ctx, k0, kc, j0, nb, bp, panel);
            else if (copy) copy_block(bs->B + k0 * bs->ldb + j0, bs->ldb, kc, nb, bp, panel);
            else b = bs->B + k0 * bs->ldb + j0, lb = bs->ldb;
            kn->run(M, nb, kc, A + k0, lda, b, lb, C + j0, ldc, acc || k0 > 0, acc || k0 > 0 ? NULL : bias);
        }
    }
}

static int sgemm_dot(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                     float *C, int64_t ldc, int acc);

/* Rows [0, M) and columns [j_lo, j_hi) on the calling thread. */
static void serial(int64_t M, int64_t j_lo, int64_t j_hi, int64_t K, const float *A, int64_t lda, const bsrc *bs,
                   float *C, int64_t ldc, int acc, const float *bias) {
    kern kn = kernel();
    float bp[KC * 64] __attribute__((aligned(64)));
    run_cols(&kn, M, j_lo, j_hi, K, A, lda, bs, C, ldc, acc, bias, bp);
}

/* Threads: C split into slices of rows (multiples of PAR_ROWS, the last one taking the
 * remainder) or of column panels (a GEMM with few rows and many columns, an im2col'd
 * convolution's). Every output element is one chain of FMAs over k in order, in blocks
 * of KC, from C or zero, whatever tile, panel or slice holds it; so every slice computes
 * its elements as the single call would, and the bytes are the same at every count. */
#define PAR_ROWS 24
#define PAR_MIN_MACS (1 << 21)
typedef struct par_re {
    int64_t M, N, K, lda, ldc, chunk, panel;
    const float *A, *bias;
    const bsrc *bs;
    float *C;
    int acc, ntasks, cols;
} par_re;

static void par_re_task(void *ctx, int t) {
    const par_re *p = ctx;
    if (p->cols) { /* panels [t * chunk, ...) */
        int64_t lo = t * p->chunk * p->panel, hi = t == p->ntasks - 1 ? p->N : lo + p->chunk * p->panel;
        serial(p->M, lo, hi, p->K, p->A, p->lda, p->bs, p->C, p->ldc, p->acc, p->bias);
        return;
    }
    int64_t lo = t * p->chunk, hi = t == p->ntasks - 1 ? p->M : lo + p->chunk;
    serial(hi - lo, 0, p->N, p->K, p->A + lo * p->lda, p->lda, p->bs, p->C + lo * p->ldc, p->ldc, p->acc,
           p->bias ? p->bias + lo : NULL);
}

/* Dot products for a narrow N (rows split among the threads as above). */
typedef struct par_dot {
    int64_t M, N, K, lda, ldb, ldc, chunk;
    const float *A, *B;
    float *C;
    int acc, ntasks;
} par_dot;

static void par_dot_task(void *ctx, int t) {
    const par_dot *p = ctx;
    int64_t lo = t * p->chunk, hi = t == p->ntasks - 1 ? p->M : lo + p->chunk;
    if (sgemm_dot(hi - lo, p->N, p->K, p->A + lo * p->lda, p->lda, p->B, p->ldb, p->C + lo * p->ldc, p->ldc, p->acc)) {
        bsrc bs = {p->B, p->ldb, NULL, NULL}; /* out of memory: the tiles */
        serial(hi - lo, 0, p->N, p->K, p->A + lo * p->lda, p->lda, &bs, p->C + lo * p->ldc, p->ldc, p->acc, NULL);
    }
}

static void gemm_any(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const bsrc *bs, float *C,
                     int64_t ldc, int acc, const float *bias) {
    if (M <= 0 || N <= 0) return;
    if (bias && !acc && (K <= 0 || (N < 8 && K >= 16))) { /* paths without a bias start: C = bias first */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) C[i * ldc + j] = bias[i];
        acc = 1;
    }
    if (acc) bias = NULL;
    if (K <= 0) { /* no products: C or zeros */
        if (!acc)
            for (int64_t i = 0; i < M; i++) memset(C + i * ldc, 0, sizeof(float) * (size_t)N);
        return;
    }
    int th = npk_threads_now(), big = th > 1 && M * N * K >= PAR_MIN_MACS;
    int64_t units = M / PAR_ROWS;
    /* 1-7 columns (a conv with few output positions): dot products along K */
    if (N < 8 && K >= 16) {
        float *bt = NULL;
        const float *B = bs->B;
        int64_t ldb = bs->ldb;
        if (bs->pack) { /* the whole (narrow) B first */
            if ((bt = malloc(sizeof(float) * (size_t)(N * K)))) bs->pack(bs->ctx, 0, K, 0, N, bt, N);
            B = bt, ldb = N;
        }
        if (B) {
            int n = big && units >= 2 ? (units < th * 4 ? (int)units : th * 4) : 1;
            par_dot p = {M, N, K, lda, ldb, ldc, n > 1 ? units / n * PAR_ROWS : M, A, B, C, acc, 0};
            p.ntasks = (int)(M / p.chunk);
            npk_parallel(p.ntasks, par_dot_task, &p);
            free(bt);
            return;
        }
    }
    int64_t panel = kernel().panel, panels = (N + panel - 1) / panel;
    if (big && (units >= 2 || panels >= 2)) {
        par_re p = {M, N, K, lda, ldc, 0, panel, A, bias, bs, C, acc, 0, panels > units};
        int64_t u = p.cols ? panels : units;
        int n = u < th * 4 ? (int)u : th * 4;
        /* every row slice copies B's blocks again (run_cols): slices of at least 4 units
         * (96 rows) while that leaves each thread one (M 192, 8 units: 2 slices, not 8) */
        if (!p.cols && n > th && u / n < 4) n = (int)(u / 4 > th ? u / 4 : th);
        p.chunk = p.cols ? panels / n : units / n * PAR_ROWS;
        p.ntasks = (int)(p.cols ? panels / p.chunk : M / p.chunk);
        npk_parallel(p.ntasks, par_re_task, &p);
        return;
    }
    serial(M, 0, N, K, A, lda, bs, C, ldc, acc, bias);
}

void npk_gemm_f32_reassoc(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                          int64_t ldb, float *C, int64_t ldc, int acc) {
    bsrc bs = {B, ldb, NULL, NULL};
    gemm_any(M, N, K, A, lda, &bs, C, ldc, acc, NULL);
}

void npk_gemm_f32_reassoc_bias(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                               int64_t ldb, const float *bias, float *C, int64_t ldc) {
    bsrc bs = {B, ldb, NULL, NULL};
    gemm_any(M, N, K, A, lda, &bs, C, ldc, 0, bias);
}

void npk_gemm_f32_reassoc_packed(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                                 npk_gemm_f32_pack_fn pack, void *ctx, float *C, int64_t ldc, int acc) {
    bsrc bs = {NULL, 0, pack, ctx};
    gemm_any(M, N, K, A, lda, &bs, C, ldc, acc, NULL);
}

void npk_gemm_f32_reassoc_packed_bias(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                                      npk_gemm_f32_pack_fn pack, void *ctx, const float *bias, float *C, int64_t ldc) {
    bsrc bs = {NULL, 0, pack, ctx};
    gemm_any(M, N, K, A, lda, &bs, C, ldc, 0, bias);
}

/* ---- narrow N: dot products along K (npk_gemm_f32_nt) ------------------------------------ */

/* Every element of C is one dot product of a row of A with a row of Bt, summed in 8 lanes
 * (lane l takes k = l, l + 8, ...; the last partial group of 8 as if padded with zeros), the
 * lanes then added as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), then added to C when
 * acc. How rows and columns are grouped into tiles and threads does not change an element's
 * order, so the bits are the same at every thread count. The AVX2 copy fuses the multiply and
 * the add of a lane (FMA), the portable one does not (float tolerance between them, as for
 * the tiles). */
static void nt_portable(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *Bt, int64_t ldb,
                        float *C, int64_t ldc, int acc) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            const float *a = A + i * lda, *b = Bt + j * ldb;
            float l[8] = {0};
            for (int64_t k = 0; k < K; k++) l[k & 7] += a[k] * b[k];
            float s = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
            C[i * ldc + j] = acc ? C[i * ldc + j] + s : s;
        }
}

#ifdef NPK_GEMM_X86
/* The four lane sums of a, b, c, d (in that order), each in the order above. */
static inline __attribute__((always_inline)) T256 __m128 hsum4(__m256 a, __m256 b, __m256 c, __m256 d) {
    __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

/* R rows x NC columns of C (R * NC <= 8 accumulators, NC <= 4); K8 = K rounded down to 8,
 * tail = the mask of the last K - K8 lanes. */
static inline __attribute__((always_inline)) T256 void nt_tile(int R, int NC, int64_t K, int64_t K8, __m256i tail,
                                                               const float *A, int64_t lda, const float *Bt,
                                                               int64_t ldb, float *C, int64_t ldc, int acc) {
    __m256 s[8][4], b[4];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < 4; c++) s[r][c] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k < K8; k += 8) {
        for (int c = 0; c < NC; c++) b[c] = _mm256_loadu_ps(Bt + c * ldb + k);
        for (int r = 0; r < R; r++) {
            __m256 a = _mm256_loadu_ps(A + r * lda + k);
            for (int c = 0; c < NC; c++) s[r][c] = _mm256_fmadd_ps(a, b[c], s[r][c]);
        }
    }
    if (k < K) {
        for (int c = 0; c < NC; c++) b[c] = _mm256_maskload_ps(Bt + c * ldb + k, tail);
        for (int r = 0; r < R; r++) {
            __m256 a = _mm256_maskload_ps(A + r * lda + k, tail);
            for (int c = 0; c < NC; c++) s[r][c] = _mm256_fmadd_ps(a, b[c], s[r][c]);
        }
    }
    for (int r = 0; r < R; r++) {
        float o[4];
        _mm_storeu_ps(o, hsum4(s[r][0], s[r][1], s[r][2], s[r][3]));
        for (int c = 0; c < NC; c++) C[r * ldc + c] = acc ? C[r * ldc + c] + o[c] : o[c];
    }
}

/* R rows per tile: 8 accumulators where the columns allow (two FMAs per cycle of latency 4). */
#define NT_TILE(R, NC) nt_tile(R, NC, K, K8, tail, A + i * lda, lda, B, ldb, C + i * ldc + j, ldc, acc)
static T256 void nt_avx2(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *Bt, int64_t ldb,
                         float *C, int64_t ldc, int acc) {
    int64_t K8 = K & ~(int64_t)7;
    const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(K - K8)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int64_t j = 0; j < N; j += 4) {
        int nc = N - j < 4 ? (int)(N - j) : 4;
        const float *B = Bt + j * ldb;
        int64_t i = 0;
        switch (nc) {
        case 1:
            for (; i + 8 <= M; i += 8) NT_TILE(8, 1);
            for (; i < M; i++) NT_TILE(1, 1);
            break;
        case 2:
            for (; i + 4 <= M; i += 4) NT_TILE(4, 2);
            for (; i < M; i++) NT_TILE(1, 2);
            break;
        case 3:
            for (; i + 2 <= M; i += 2) NT_TILE(2, 3);
            for (; i < M; i++) NT_TILE(1, 3);
            break;
        default:
            for (; i + 2 <= M; i += 2) NT_TILE(2, 4);
            for (; i < M; i++) NT_TILE(1, 4);
            break;
        }
    }
}
#undef NT_TILE
#endif

void npk_gemm_f32_nt(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *Bt, int64_t ldb,
                     float *C, int64_t ldc, int acc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        if (!acc)
            for (int64_t i = 0; i < M; i++) memset(C + i * ldc, 0, sizeof(float) * (size_t)N);
        return;
    }
#ifdef NPK_GEMM_X86
    if (npk_isa_active() >= NPK_ISA_AVX2) {
        nt_avx2(M, N, K, A, lda, Bt, ldb, C, ldc, acc);
        return;
    }
#endif
    nt_portable(M, N, K, A, lda, Bt, ldb, C, ldc, acc);
}

/* C = (acc ? C : 0) + A x B for a narrow N (1-7 columns, a conv with few output positions):
 * B's columns transposed once, then npk_gemm_f32_nt. 0 = done,
 * < 0 = out of memory (the caller's tiles then run). */
static int sgemm_dot(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                     float *C, int64_t ldc, int acc) {
    float *bt = malloc(sizeof(float) * (size_t)(N * K));
    if (!bt) return -NPK_ENOMEM;
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) bt[j * K + k] = B[k * ldb + j];
    npk_gemm_f32_nt(M, N, K, A, lda, bt, K, C, ldc, acc);
    free(bt);
    return 0;
}
