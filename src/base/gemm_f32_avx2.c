// SPDX-License-Identifier: MIT
/* The AVX2 + FMA variant of npk_gemm_f32 (include/npukit/gemm.h):
 * every output summed from +0 over k = 0 .. K-1 in order, one rounded multiply
 * and one rounded add per step, or one FMA per step where every product is
 * exact (the same bits, src/base/gemm_exact.h): decided per pair of packed
 * blocks of A and B from the ranges of their values, gathered while they are
 * packed (no pass of its own over the operands). Built with -ffp-contract=off
 * like gemm.c: no FMA but the explicit ones.
 *
 * Blocking (BLIS order; the K loop sits outside every loop over C, so each
 * output still sees its K blocks in order, its partial sum stored in C between
 * them and reloaded):
 *   for each NC-column block of B (jc)
 *     for each K block of at most KC rows, in order (pc)
 *       pack B[pc block][jc block] into NR-column panels [kc][16] (L3 / L2)
 *       for each MC-row block of A (ic)
 *         pack A[ic block][pc block] into MR-row panels [kc][6] (L2)
 *         for each B panel (jr; it stays in L1 while the A panels pass)
 *           for each A panel (ir): the 6 x 16 micro-kernel
 * The micro-kernel holds a 6 x 16 tile of C in 12 ymm accumulators: per k two
 * aligned loads of B, six broadcasts of A and 12 FMAs (or 12 multiplies and 12
 * adds, which Zen's separate multiply and add pipes overlap). Operands are
 * packed with zeros past M, N, so every tile runs whole; a tile that crosses
 * the edge of C runs on a 6 x 16 scratch tile copied in and out. BF16
 * operands (bf16 = 1) are widened while they are packed (exact: the fp32
 * bits are the BF16 bits followed by 16 zeros), so no fp32 copy of them is
 * ever made. */
#include "gemm_f32_avx2.h"

#include "gemm_exact.h"
#include "npukit/cpu.h"

#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#ifdef NPK_ISA_X86
#include <immintrin.h>

#define T256 __attribute__((target("avx2,fma")))
#define INLINE static inline __attribute__((always_inline))

/* MR x NR: the register tile; KC: the K block (an A panel of 6 KB and a B
 * panel of 16 KB: L1 holds the B panel and the A panel streaming past it);
 * MC: rows of A per packed block (144 x 256 x 4 = 144 KB, in L2); NC: columns
 * of B per packed block (256 x 2048 x 4 = 2 MB, in L3). */
enum { MR = 6, NR = 16, KC = 256, MC = 144, NC = 2048 };

static size_t up(size_t a, size_t b) { return (a + b - 1) / b * b; }

/* ---- the micro-kernel ------------------------------------------------------------ */

/* C[6][16] (row stride ldc) = (acc ? C : +0) + ap [kc][6] x bp [kc][16], each
 * output's k in order; fused: one FMA per step (exact products only). */
INLINE T256 void kern(size_t kc, const float *restrict ap, const float *restrict bp, float *C, size_t ldc, int acc,
                      const int fused) {
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
#define ROWS(X) X(0, c00, c01) X(1, c10, c11) X(2, c20, c21) X(3, c30, c31) X(4, c40, c41) X(5, c50, c51)
#define INIT(r, x0, x1)                                   \
    if (acc) {                                            \
        x0 = _mm256_loadu_ps(C + (r) * ldc);              \
        x1 = _mm256_loadu_ps(C + (r) * ldc + 8);          \
    } else {                                              \
        x0 = x1 = _mm256_setzero_ps();                    \
    }
    ROWS(INIT)
#undef INIT
#define MAC(x, a, b) (fused ? _mm256_fmadd_ps(a, b, x) : _mm256_add_ps(x, _mm256_mul_ps(a, b)))
#define STEP(r, x0, x1)                    \
    av = _mm256_broadcast_ss(ap + (r));    \
    x0 = MAC(x0, av, b0);                  \
    x1 = MAC(x1, av, b1);
#pragma GCC unroll 4
    for (size_t k = 0; k < kc; k++) {
        const __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
        __m256 av;
        ROWS(STEP)
        ap += MR, bp += NR;
    }
#undef STEP
#undef MAC
#define STORE(r, x0, x1)                          \
    _mm256_storeu_ps(C + (r) * ldc, x0);          \
    _mm256_storeu_ps(C + (r) * ldc + 8, x1);
    ROWS(STORE)
#undef STORE
#undef ROWS
}

T256 static void kern_fma(size_t kc, const float *ap, const float *bp, float *C, size_t ldc, int acc) {
    kern(kc, ap, bp, C, ldc, acc, 1);
}
T256 static void kern_sep(size_t kc, const float *ap, const float *bp, float *C, size_t ldc, int acc) {
    kern(kc, ap, bp, C, ldc, acc, 0);
}
typedef void (*kern_fn)(size_t kc, const float *ap, const float *bp, float *C, size_t ldc, int acc);

/* ---- packing --------------------------------------------------------------------- */

/* The range of the values packed (npk_f32_range), lane by lane: the OR of the
 * magnitudes (not for BF16, whose widened values have at most 8 significant
 * bits), the largest magnitude, the smallest non-zero magnitude minus 1. */
typedef struct vrange {
    __m256i o, mx, mn;
} vrange;

INLINE T256 vrange vr_new(void) { return (vrange){_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_set1_epi32(-1)}; }

INLINE T256 void vr_add(vrange *r, __m256 x, int bf16) {
    __m256i u = _mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32(0x7fffffff));
    if (!bf16) r->o = _mm256_or_si256(r->o, u);
    r->mx = _mm256_max_epu32(r->mx, u);
    r->mn = _mm256_min_epu32(r->mn, _mm256_sub_epi32(u, _mm256_set1_epi32(1)));
}

/* The lanes of v merged into out. */
INLINE T256 void vr_merge(const vrange *v, int bf16, npk_f32_range *out) {
    uint32_t o[8], mx[8], mn[8];
    _mm256_storeu_si256((__m256i *)o, v->o);
    _mm256_storeu_si256((__m256i *)mx, v->mx);
    _mm256_storeu_si256((__m256i *)mn, v->mn);
    for (int l = 0; l < 8; l++) {
        out->bits_or |= o[l];
        out->max = mx[l] > out->max ? mx[l] : out->max;
        out->min_m1 = mn[l] < out->min_m1 ? mn[l] : out->min_m1;
    }
    if (bf16) out->bits_or |= 0x7f0000u; /* 8 significant bits at most */
}

static inline uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float bf16f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Eight values of k of one row of A as fp32 (BF16 widened: its bits then 16 zeros). */
INLINE T256 __m256 load8(const void *row, size_t k, int bf16) {
    if (!bf16) return _mm256_loadu_ps((const float *)row + k);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)row + k));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* A[mc][kc] (lda; fp32 or BF16) into [ceil(mc/6)][kc][6], rows past mc zero,
 * the range of its values into *rg:
 * eight values of k of the six rows at a time, transposed in registers (8 x 8
 * with two zero rows) and stored as eight groups of 8 floats at a stride of 6,
 * each store's last two (zero) floats overwritten by the next one; the last
 * store of a panel writes two floats past it (into the next panel, written
 * after, or the buffer's slack). */
T256 static void pack_a(const void *A, size_t lda, int bf16, uint32_t mc, uint32_t kc, float *restrict ap,
                        npk_f32_range *rg) {
    const size_t es = bf16 ? 2 : 4;
    const __m256 z = _mm256_setzero_ps();
    vrange vr = vr_new();
    for (uint32_t i0 = 0; i0 < mc; i0 += MR, ap += (size_t)kc * MR) {
        uint32_t ni = mc - i0 < MR ? mc - i0 : MR;
        const char *row[MR];
        for (uint32_t r = 0; r < MR; r++) row[r] = (const char *)A + (size_t)(i0 + (r < ni ? r : 0)) * lda * es;
        uint32_t k = 0;
        for (; k + 8 <= kc; k += 8) {
            __m256 r0 = load8(row[0], k, bf16), r1 = ni > 1 ? load8(row[1], k, bf16) : z,
                   r2 = ni > 2 ? load8(row[2], k, bf16) : z, r3 = ni > 3 ? load8(row[3], k, bf16) : z,
                   r4 = ni > 4 ? load8(row[4], k, bf16) : z, r5 = ni > 5 ? load8(row[5], k, bf16) : z;
            vr_add(&vr, r0, bf16), vr_add(&vr, r1, bf16), vr_add(&vr, r2, bf16);
            vr_add(&vr, r3, bf16), vr_add(&vr, r4, bf16), vr_add(&vr, r5, bf16);
            __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
                   t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
            __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee),
                   s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee),
                   s4 = _mm256_shuffle_ps(t4, z, 0x44), s5 = _mm256_shuffle_ps(t4, z, 0xee),
                   s6 = _mm256_shuffle_ps(t5, z, 0x44), s7 = _mm256_shuffle_ps(t5, z, 0xee);
            float *d = ap + (size_t)k * MR;
            _mm256_storeu_ps(d, _mm256_permute2f128_ps(s0, s4, 0x20));
            _mm256_storeu_ps(d + 6, _mm256_permute2f128_ps(s1, s5, 0x20));
            _mm256_storeu_ps(d + 12, _mm256_permute2f128_ps(s2, s6, 0x20));
            _mm256_storeu_ps(d + 18, _mm256_permute2f128_ps(s3, s7, 0x20));
            _mm256_storeu_ps(d + 24, _mm256_permute2f128_ps(s0, s4, 0x31));
            _mm256_storeu_ps(d + 30, _mm256_permute2f128_ps(s1, s5, 0x31));
            _mm256_storeu_ps(d + 36, _mm256_permute2f128_ps(s2, s6, 0x31));
            _mm256_storeu_ps(d + 42, _mm256_permute2f128_ps(s3, s7, 0x31));
        }
        for (; k < kc; k++)
            for (uint32_t r = 0; r < MR; r++) {
                float v = r >= ni ? 0.0f : bf16 ? bf16f(((const uint16_t *)row[r])[k]) : ((const float *)row[r])[k];
                ap[(size_t)k * MR + r] = v;
                npk_f32_range_add(rg, bits_of(v));
            }
    }
    vr_merge(&vr, bf16, rg);
}

/* B[kc][nc] (ldb; fp32 or BF16) into [ceil(nc/16)][kc][16], columns past nc
 * zero. Eight rows of B at a time, panel by panel: the eight rows' lines stay
 * in L1 while every panel takes its 16 columns (a power-of-two row stride maps
 * a whole panel's worth of rows to a few L1 sets, so going panel by panel over
 * all kc rows re-reads every line from L2), and each panel gets eight whole
 * rows (512 contiguous bytes) at a time. The range of its values into *rg. */
enum { PB_ROWS = 8 };
T256 static void pack_b(const void *B, size_t ldb, int bf16, uint32_t kc, uint32_t nc, float *restrict bp,
                        npk_f32_range *rg) {
    const size_t es = bf16 ? 2 : 4;
    vrange vr = vr_new();
    for (uint32_t k0 = 0; k0 < kc; k0 += PB_ROWS) {
        uint32_t nk = kc - k0 < PB_ROWS ? kc - k0 : PB_ROWS;
        float *panel = bp + (size_t)k0 * NR;
        for (uint32_t j0 = 0; j0 < nc; j0 += NR, panel += (size_t)kc * NR) {
            const char *s = (const char *)B + ((size_t)k0 * ldb + j0) * es;
            if (nc - j0 >= NR) {
                for (uint32_t k = 0; k < nk; k++, s += ldb * es) {
                    __m256 lo = load8(s, 0, bf16), hi = load8(s, 8, bf16);
                    _mm256_store_ps(panel + (size_t)k * NR, lo);
                    _mm256_store_ps(panel + (size_t)k * NR + 8, hi);
                    vr_add(&vr, lo, bf16), vr_add(&vr, hi, bf16);
                }
                continue;
            }
            for (uint32_t k = 0; k < nk; k++, s += ldb * es)
                for (uint32_t j = 0; j < NR; j++) {
                    float v = j0 + j >= nc ? 0.0f : bf16 ? bf16f(((const uint16_t *)s)[j]) : ((const float *)s)[j];
                    panel[(size_t)k * NR + j] = v;
                    npk_f32_range_add(rg, bits_of(v));
                }
        }
    }
    vr_merge(&vr, bf16, rg);
}

/* ---- the blocked loops ------------------------------------------------------------- */

/* One block of C (mc x nc at C) over one packed K block: every 6 x 16 tile,
 * the B panel outer (kept in L1), the A panels inner. Edge tiles run on a
 * scratch tile. */
static void macro(kern_fn kf, uint32_t mc, uint32_t nc, uint32_t kc, const float *ap, const float *bp, float *C,
                  size_t ldc, int acc) {
    float tile[MR * NR] = {0};
    for (uint32_t j0 = 0; j0 < nc; j0 += NR) {
        uint32_t nj = nc - j0 < NR ? nc - j0 : NR;
        const float *b = bp + (size_t)(j0 / NR) * kc * NR;
        for (uint32_t i0 = 0; i0 < mc; i0 += MR) {
            uint32_t ni = mc - i0 < MR ? mc - i0 : MR;
            const float *a = ap + (size_t)(i0 / MR) * kc * MR;
            float *c = C + (size_t)i0 * ldc + j0;
            if (i0 + MR < mc) /* the next tile's C, from L3 while this one runs */
                for (uint32_t r = 0; r < MR; r++) {
                    _mm_prefetch((const char *)(c + (size_t)(MR + r) * ldc), _MM_HINT_T0);
                    _mm_prefetch((const char *)(c + (size_t)(MR + r) * ldc + NR - 1), _MM_HINT_T0);
                }
            if (ni == MR && nj == NR) {
                kf(kc, a, b, c, ldc, acc);
                continue;
            }
            if (acc)
                for (uint32_t r = 0; r < ni; r++) memcpy(tile + r * NR, c + (size_t)r * ldc, nj * sizeof(float));
            kf(kc, a, b, tile, NR, acc); /* rows and columns past the edge: whatever was there, never stored */
            for (uint32_t r = 0; r < ni; r++) memcpy(c + (size_t)r * ldc, tile + r * NR, nj * sizeof(float));
        }
    }
}

/* Blocks of at most `max` (a multiple of `mult`) of equal size instead of
 * full ones and a thin rest. */
static uint32_t even_block(uint32_t n, uint32_t max, uint32_t mult) {
    uint32_t nb = (n + max - 1) / max;
    return (uint32_t)up((n + nb - 1) / nb, mult);
}

typedef struct blocks {
    uint32_t kcb, mcb, ncb;
    size_t sz_a; /* bytes of the A block (the B block follows) */
} blocks;

static blocks blocking(uint32_t M, uint32_t N, uint32_t K) {
    blocks b = {even_block(K, KC, 1), even_block(M, MC, MR), even_block(N, NC, NR), 0};
    b.sz_a = up((size_t)b.mcb * b.kcb * sizeof(float) + 8, 64); /* + pack_a's two floats of slack */
    return b;
}

size_t npk_gemm_f32_avx2_buf(uint32_t M, uint32_t N, uint32_t K) {
    blocks b = blocking(M, N, K);
    return b.sz_a + (size_t)b.ncb * b.kcb * sizeof(float);
}

void npk_gemm_f32_avx2(uint32_t M, uint32_t N, uint32_t K, const void *A, size_t lda, const void *B, size_t ldb,
                       int bf16, float *C, size_t ldc, float *buf) {
    const size_t es = bf16 ? 2 : 4;
    const blocks bl = blocking(M, N, K);
    const uint32_t kcb = bl.kcb, mcb = bl.mcb, ncb = bl.ncb;
    float *ap = buf, *bp = (float *)((char *)buf + bl.sz_a);
    for (uint32_t jc = 0; jc < N; jc += ncb) {
        uint32_t nc = N - jc < ncb ? N - jc : ncb;
        for (uint32_t pc = 0; pc < K; pc += kcb) {
            uint32_t kc = K - pc < kcb ? K - pc : kcb;
            npk_f32_range rb = NPK_F32_RANGE_EMPTY;
            pack_b((const char *)B + ((size_t)pc * ldb + jc) * es, ldb, bf16, kc, nc, bp, &rb);
            for (uint32_t ic = 0; ic < M; ic += mcb) {
                uint32_t mc = M - ic < mcb ? M - ic : mcb;
                npk_f32_range ra = NPK_F32_RANGE_EMPTY;
                pack_a((const char *)A + ((size_t)ic * lda + pc) * es, lda, bf16, mc, kc, ap, &ra);
                /* this block's products all exact: one FMA per step (the same bits) */
                kern_fn kf = npk_f32_products_exact(&ra, &rb) ? kern_fma : kern_sep;
                macro(kf, mc, nc, kc, ap, bp, C + (size_t)ic * ldc + jc, ldc, pc != 0);
            }
        }
    }
}

#else /* no x86: never called (npk_gemm_active_isa is portable there) */

size_t npk_gemm_f32_avx2_buf(uint32_t M, uint32_t N, uint32_t K) {
    (void)M, (void)N, (void)K;
    return 0;
}

void npk_gemm_f32_avx2(uint32_t M, uint32_t N, uint32_t K, const void *A, size_t lda, const void *B, size_t ldb,
                       int bf16, float *C, size_t ldc, float *buf) {
    (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb, (void)bf16, (void)C, (void)ldc, (void)buf;
}

#endif
