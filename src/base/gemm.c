// SPDX-License-Identifier: MIT
/* The shared GEMM kernels (include/npukit/gemm.h): int8 x int8 -> int32 and
 * fp32 with sequential K accumulation, each in three variants chosen at run
 * time. All variants of one product are bit-identical: int32 sums wrap
 * (order-free), and the float kernels vectorize along N only, so each output
 * still sees k = 0 .. K-1 in order with one rounded multiply and one rounded
 * add per step (this file is built with -ffp-contract=off: no implicit FMA;
 * the explicit fused path below provably changes no bit).
 *
 * Blocking (AVX-512): C is computed in 64-column panels; for each panel the K
 * blocks run in order (the panel of C stays in L2 between them), B's block is
 * packed once into an L1-sized buffer, and every 6-row tile of A (packed once
 * per call) runs a 6 x 64 register tile of 24 zmm accumulators over it.
 *  - int8: vpdpbusd multiplies uint8 x int8 in groups of four. A is made
 *    unsigned by adding 128 (xor 0x80); the excess 128 * colsum(B) of each K
 *    block is subtracted by starting the accumulators at -128 * colsum.
 *  - fp32: one broadcast A element times four B vectors, multiplied then added.
 *    When every product is exact (npk_gemm_f32_fused, checked once per call
 *    over A and B), one FMA per step instead: the same bits, since an FMA
 *    with an exact product rounds the same sum once (explicit intrinsics;
 *    -ffp-contract=off keeps the compiler from fusing anything else).
 * AVX2: int8 in src/base/gemm_s8_avx2.c (vpmaddubsw on the low 7 bits of A,
 * exact, plus tabulated sums of B for A's sign bits; int16 pairs through
 * vpmaddwd for small GEMMs); fp32 in src/base/gemm_f32_avx2.c (BLIS-style
 * packed A and B panels, a 6 x 16 tile of 12 ymm accumulators, K blocks in
 * order; fused as above, decided per pair of packed blocks of A and B from
 * ranges gathered while it packs them, src/base/gemm_exact.h). Portable:
 * i-k-j loops over 4 rows with a vectorizable inner loop (fused through fmaf
 * only where that is the hardware instruction, FP_FAST_FMAF). */
#include "npukit/gemm.h"
#include "npukit/threads.h"

#include "gemm_exact.h"
#include "gemm_f32_avx2.h"
#include "gemm_s8_avx2.h"

#include "npukit/cpu.h"
#include "npukit/error.h"
#include "npukit/numfmt.h"

#include <stdatomic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#ifdef NPK_ISA_X86
#define GEMM_X86 1
#include "base/x86_simd.h"
#ifdef NPUKIT_EMULATE_AVX512 /* plain functions over SIMDe (base/x86_simd.h) */
#define T512
#else
#define T512 __attribute__((target("avx512f,avx512bw,avx512vnni")))
#endif
/* the fp32 kernel and the operand scans: AVX-512 without VNNI (level avx512) */
#define T512F NPK_TARGET_AVX512
#define T256 __attribute__((target("avx2,fma")))
#endif

/* ---- dispatch -------------------------------------------------------------------- */

/* The variant of the active level (include/npukit/cpu.h) for a module whose
 * AVX-512 kernel needs level avx512 (AVX2 needs FMA). */
static npk_gemm_isa variant(npk_isa avx512) {
#ifdef GEMM_X86
    npk_isa l = npk_isa_active();
    if (l >= avx512) return NPK_GEMM_AVX512;
    if (l >= NPK_ISA_AVX2) return NPK_GEMM_AVX2;
#endif
    (void)avx512;
    return NPK_GEMM_PORTABLE;
}

/* The int8 variant: the AVX-512 kernel needs VNNI; an AVX-512 host without it
 * runs the exact AVX2 table kernel (src/base/gemm_s8_avx2.c; an AVX-512BW port
 * of it would halve the instructions per MAC, but Skylake-X runs 512-bit
 * vpmaddubsw on one port where the 256-bit one has two, so about the same
 * lanes per cycle: not written). */
npk_gemm_isa npk_gemm_active_isa(void) { return variant(NPK_ISA_AVX512VNNI); }

/* The fp32 variant: the AVX-512 kernel from level avx512 (it multiplies
 * floats: VNNI is not needed, and it takes 0.09 vector instructions per MAC,
 * fused, against the AVX2 kernel's 0.21). */
npk_gemm_isa npk_gemm_f32_active_isa(void) { return variant(NPK_ISA_AVX512); }

const char *npk_gemm_f32_kernel(void) {
    switch (npk_gemm_f32_active_isa()) {
    case NPK_GEMM_AVX512: return "avx512";
    case NPK_GEMM_AVX2: return "avx2";
    default: return "portable";
    }
}

const char *npk_gemm_isa_name(npk_gemm_isa isa) {
    switch (isa) {
    case NPK_GEMM_PORTABLE: return "portable";
    case NPK_GEMM_AVX2: return "avx2";
    case NPK_GEMM_AVX512: return "avx512-vnni";
    }
    return "?";
}

/* ---- workspace ------------------------------------------------------------------- */

void npk_gemm_ws_free(npk_gemm_ws *ws) {
    if (!ws) return;
    free(ws->buf);
    ws->buf = NULL;
    ws->cap = 0;
}

void *npk_gemm_ws_reserve(npk_gemm_ws *ws, size_t bytes) {
    bytes = (bytes + 63) / 64 * 64 + 64;
    if (ws->cap < bytes) {
        free(ws->buf);
        ws->buf = aligned_alloc(64, bytes);
        ws->cap = ws->buf ? bytes : 0;
    }
    return ws->buf;
}

#ifdef GEMM_X86
/* The packing buffer: the workspace's, or a fresh one returned in *own when
 * there is no workspace. */
static void *ws_get(npk_gemm_ws *ws, size_t bytes, void **own) {
    *own = NULL;
    if (!ws) return *own = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    return npk_gemm_ws_reserve(ws, bytes);
}

static int nomem(void) { return npk_err(NPK_ENOMEM, "out of memory for the GEMM packing buffers"); }

static size_t up(size_t a, size_t b) { return (a + b - 1) / b * b; }
#endif

/* ---- portable -------------------------------------------------------------------- */

static void s8_portable(uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda, const int8_t *B, size_t ldb,
                        int32_t *C, size_t ldc) {
    enum { KB = 256, NB = 512 };
    for (uint32_t i = 0; i < M; i++) memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof(int32_t));
    for (uint32_t j0 = 0; j0 < N; j0 += NB) {
        uint32_t nb = N - j0 < NB ? N - j0 : NB;
        for (uint32_t k0 = 0; k0 < K; k0 += KB) {
            uint32_t kb = K - k0 < KB ? K - k0 : KB;
            for (uint32_t i = 0; i < M; i++) {
                uint32_t *restrict c = (uint32_t *)(C + (size_t)i * ldc + j0);
                const int8_t *a = A + (size_t)i * lda + k0;
                for (uint32_t k = 0; k < kb; k++) {
                    int32_t av = a[k];
                    const int8_t *restrict b = B + (size_t)(k0 + k) * ldb + j0;
                    for (uint32_t j = 0; j < nb; j++) c[j] += (uint32_t)(av * (int32_t)b[j]);
                }
            }
        }
    }
}

/* fp32, portable: i-k-j over 4 rows of C at a time (each B element loaded
 * once per 4 rows), every output's k in order; fused: fmaf, used only where
 * the C library's fmaf is the hardware instruction (FP_FAST_FMAF, e.g.
 * AArch64 or -mfma; on plain x86-64 it is a library routine, slower than the
 * separate multiply and add that give the same bits). */
#if defined(FP_FAST_FMAF)
#define PORTABLE_FMA 1
#else
#define PORTABLE_FMA 0
#endif
static inline void f32_portable_rows(uint32_t K, const float *A, size_t lda, uint32_t ni, const float *B, size_t ldb,
                                     uint32_t nb, float *C, size_t ldc, const int fused) {
    if (ni < 4) { /* one row at a time */
        for (uint32_t r = 0; r < ni; r++) {
            float *restrict c = C + (size_t)r * ldc;
            const float *a = A + (size_t)r * lda;
            for (uint32_t j = 0; j < nb; j++) c[j] = 0.0f;
            for (uint32_t k = 0; k < K; k++) {
                const float av = a[k], *restrict b = B + (size_t)k * ldb;
                for (uint32_t j = 0; j < nb; j++) c[j] = fused ? fmaf(av, b[j], c[j]) : c[j] + av * b[j];
            }
        }
        return;
    }
    float *restrict c0 = C, *restrict c1 = C + ldc, *restrict c2 = C + 2 * ldc, *restrict c3 = C + 3 * ldc;
    for (uint32_t j = 0; j < nb; j++) c0[j] = c1[j] = c2[j] = c3[j] = 0.0f;
    for (uint32_t k = 0; k < K; k++) {
        const float a0 = A[k], a1 = A[lda + k], a2 = A[2 * lda + k], a3 = A[3 * lda + k];
        const float *restrict b = B + (size_t)k * ldb;
        for (uint32_t j = 0; j < nb; j++) {
            const float bj = b[j];
            if (fused) {
                c0[j] = fmaf(a0, bj, c0[j]), c1[j] = fmaf(a1, bj, c1[j]);
                c2[j] = fmaf(a2, bj, c2[j]), c3[j] = fmaf(a3, bj, c3[j]);
            } else {
                c0[j] = c0[j] + a0 * bj, c1[j] = c1[j] + a1 * bj;
                c2[j] = c2[j] + a2 * bj, c3[j] = c3[j] + a3 * bj;
            }
        }
    }
}

static void f32_portable(uint32_t M, uint32_t N, uint32_t K, const float *A, size_t lda, const float *B, size_t ldb,
                         float *C, size_t ldc, int fused) {
    enum { NB = 256 };
    for (uint32_t j0 = 0; j0 < N; j0 += NB) {
        uint32_t nb = N - j0 < NB ? N - j0 : NB;
        for (uint32_t i0 = 0; i0 < M; i0 += 4) {
            uint32_t ni = M - i0 < 4 ? M - i0 : 4;
            const float *a = A + (size_t)i0 * lda, *b = B + j0;
            float *c = C + (size_t)i0 * ldc + j0;
            if (PORTABLE_FMA && fused) f32_portable_rows(K, a, lda, ni, b, ldb, nb, c, ldc, 1);
            else f32_portable_rows(K, a, lda, ni, b, ldb, nb, c, ldc, 0);
        }
    }
}

#ifdef GEMM_X86
/* ---- AVX-512 ---------------------------------------------------------------------- */

enum { MR = 6, NR = 64, KC8 = 512, KCF = 128 };

/* gcc 12 spills the 24 accumulators when the _mm512_dpbusd_epi32 intrinsic is
 * used (ties the destination badly); one inline vpdpbusd per group keeps
 * them in registers (2x faster). acc += a (uint8) . b (int8) in groups of 4. */
#ifdef NPUKIT_EMULATE_AVX512 /* SIMDe's vpdpbusd (base/x86_simd.h): no inline asm */
#define DP(acc, a, b) ((acc) = _mm512_dpbusd_epi32((acc), (a), (b)))
#else
#define DP(acc, a, b) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b))
#endif

static __mmask16 colmask(uint32_t nj, unsigned v) {
    if (nj >= 16 * (v + 1)) return 0xffff;
    if (nj <= 16 * v) return 0;
    return (__mmask16)((1u << (nj - 16 * v)) - 1);
}

/* The 6 x 64 register tile of both AVX-512 kernels: 24 accumulators, X run
 * once per row r with that row's four vectors; rows >= ni are not stored. */
#define TILE_VARS c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33, c40, c41, c42, c43, \
                  c50, c51, c52, c53
#define TILE_ROWS(X)                                                                                             \
    X(0, c00, c01, c02, c03) X(1, c10, c11, c12, c13) X(2, c20, c21, c22, c23) X(3, c30, c31, c32, c33)        \
        X(4, c40, c41, c42, c43) X(5, c50, c51, c52, c53)
#define TILE_MASKS                                                                                      \
    const __mmask16 m0 = colmask(nj, 0), m1 = colmask(nj, 1), m2 = colmask(nj, 2), m3 = colmask(nj, 3)
#define TILE_STORE(T, STORE, r, x0, x1, x2, x3) \
    if ((r) < ni) {                             \
        T *cr = C + (size_t)(r) * ldc;          \
        STORE(cr, m0, x0);                      \
        STORE(cr + 16, m1, x1);                 \
        STORE(cr + 32, m2, x2);                 \
        STORE(cr + 48, m3, x3);                 \
    }

/* C[ni][nj] (= or +=) the 6 x 64 tile over kq groups of 4: ap [kq][6][4]
 * uint8, bp [kq][64][4] int8, comp[64] the -128 * colsum correction. */
T512 static void s8_kern(size_t kq, const uint8_t *ap, const int8_t *bp, const int32_t *comp, int32_t *C, size_t ldc,
                         uint32_t ni, uint32_t nj, int accumulate) {
    TILE_MASKS;
    const __m512i k0 = _mm512_load_si512(comp), k1 = _mm512_load_si512(comp + 16), k2 = _mm512_load_si512(comp + 32),
                  k3 = _mm512_load_si512(comp + 48);
    __m512i TILE_VARS;
#define INIT(r, x0, x1, x2, x3)                                                                     \
    if ((r) < ni && accumulate) {                                                                   \
        const int32_t *cr = C + (size_t)(r) * ldc;                                                  \
        x0 = _mm512_add_epi32(k0, _mm512_maskz_loadu_epi32(m0, cr));                                \
        x1 = _mm512_add_epi32(k1, _mm512_maskz_loadu_epi32(m1, cr + 16));                           \
        x2 = _mm512_add_epi32(k2, _mm512_maskz_loadu_epi32(m2, cr + 32));                           \
        x3 = _mm512_add_epi32(k3, _mm512_maskz_loadu_epi32(m3, cr + 48));                           \
    } else {                                                                                        \
        x0 = k0, x1 = k1, x2 = k2, x3 = k3;                                                         \
    }
    TILE_ROWS(INIT)
#undef INIT
    for (size_t q = 0; q < kq; q++) {
        const int8_t *b = bp + q * (NR * 4);
        const uint8_t *a = ap + q * (MR * 4);
        __m512i b0 = _mm512_load_si512(b), b1 = _mm512_load_si512(b + 64), b2 = _mm512_load_si512(b + 128),
                b3 = _mm512_load_si512(b + 192);
        int32_t w;
        __m512i av;
#define ROW(r, x0, x1, x2, x3)  \
    memcpy(&w, a + 4 * (r), 4); \
    av = _mm512_set1_epi32(w);  \
    DP(x0, av, b0);             \
    DP(x1, av, b1);             \
    DP(x2, av, b2);             \
    DP(x3, av, b3);
        TILE_ROWS(ROW)
#undef ROW
    }
#define STORE(r, x0, x1, x2, x3) TILE_STORE(int32_t, _mm512_mask_storeu_epi32, r, x0, x1, x2, x3)
    TILE_ROWS(STORE)
#undef STORE
}

/* Pack rows [0, kc) x columns [0, nj) of B into bp [kq][64][4] (zero outside)
 * and set comp[64] = -128 * the column sums. */
T512 static void s8_pack_b(const int8_t *B, size_t ldb, uint32_t kc, uint32_t nj, int8_t *bp, int32_t *comp) {
    size_t kq = (kc + 3) / 4;
    const __m128i z = _mm_setzero_si128();
    for (size_t q = 0; q < kq; q++) {
        const int8_t *r[4];
        for (unsigned t = 0; t < 4; t++) r[t] = 4 * q + t < kc ? B + (4 * q + t) * ldb : NULL;
        int8_t *dst = bp + q * (NR * 4);
        uint32_t jc = 0;
        for (; jc + 16 <= nj; jc += 16) { /* 4 rows x 16 columns -> 16 groups of 4 */
            __m128i r0 = r[0] ? _mm_loadu_si128((const __m128i *)(r[0] + jc)) : z;
            __m128i r1 = r[1] ? _mm_loadu_si128((const __m128i *)(r[1] + jc)) : z;
            __m128i r2 = r[2] ? _mm_loadu_si128((const __m128i *)(r[2] + jc)) : z;
            __m128i r3 = r[3] ? _mm_loadu_si128((const __m128i *)(r[3] + jc)) : z;
            __m128i t0 = _mm_unpacklo_epi8(r0, r1), t1 = _mm_unpackhi_epi8(r0, r1);
            __m128i u0 = _mm_unpacklo_epi8(r2, r3), u1 = _mm_unpackhi_epi8(r2, r3);
            __m128i *d = (__m128i *)(dst + jc * 4);
            _mm_storeu_si128(d, _mm_unpacklo_epi16(t0, u0));
            _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(t0, u0));
            _mm_storeu_si128(d + 2, _mm_unpacklo_epi16(t1, u1));
            _mm_storeu_si128(d + 3, _mm_unpackhi_epi16(t1, u1));
        }
        for (; jc < NR; jc++)
            for (unsigned t = 0; t < 4; t++) dst[jc * 4 + t] = jc < nj && r[t] ? r[t][jc] : 0;
    }
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t q = 0; q < kq; q++) {
        const int8_t *b = bp + q * (NR * 4);
        DP(s0, ones, _mm512_load_si512(b));
        DP(s1, ones, _mm512_load_si512(b + 64));
        DP(s2, ones, _mm512_load_si512(b + 128));
        DP(s3, ones, _mm512_load_si512(b + 192));
    }
    const __m512i zero = _mm512_setzero_si512();
    _mm512_store_si512(comp, _mm512_sub_epi32(zero, _mm512_slli_epi32(s0, 7)));
    _mm512_store_si512(comp + 16, _mm512_sub_epi32(zero, _mm512_slli_epi32(s1, 7)));
    _mm512_store_si512(comp + 32, _mm512_sub_epi32(zero, _mm512_slli_epi32(s2, 7)));
    _mm512_store_si512(comp + 48, _mm512_sub_epi32(zero, _mm512_slli_epi32(s3, 7)));
}

/* A into ap [mt][KQ][6][4] as uint8 (int8 + 128), zero outside. */
static void s8_pack_a(uint32_t M, uint32_t K, const int8_t *A, size_t lda, uint8_t *ap, size_t KQ) {
    size_t mt = (M + MR - 1) / MR;
    for (size_t t = 0; t < mt; t++) {
        uint8_t *dst = ap + t * KQ * MR * 4;
        for (uint32_t r = 0; r < MR; r++) {
            size_t i = t * MR + r;
            uint8_t *d = dst + r * 4;
            if (i >= M) {
                for (size_t q = 0; q < KQ; q++) memset(d + q * MR * 4, 0, 4);
                continue;
            }
            const int8_t *src = A + i * lda;
            uint32_t k = 0;
            for (; k + 4 <= K; k += 4, d += MR * 4) {
                uint32_t w;
                memcpy(&w, src + k, 4);
                w ^= 0x80808080u;
                memcpy(d, &w, 4);
            }
            if (k < K) {
                memset(d, 0, 4);
                for (; k < K; k++) d[k & 3] = (uint8_t)(src[k] ^ 0x80);
            }
        }
    }
}

T512 static int s8_avx512(npk_gemm_ws *ws, uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda,
                          const int8_t *B, size_t ldb, int32_t *C, size_t ldc) {
    size_t mt = (M + MR - 1) / MR, KQ = (K + 3) / 4;
    /* K blocks of equal depth (<= KC8, multiple of 4) instead of KC8 + a thin rest */
    uint32_t nkb = (K + KC8 - 1) / KC8, kcb = (uint32_t)up((K + nkb - 1) / nkb, 4);
    size_t sz_a = up(mt * KQ * MR * 4, 64), sz_b = (size_t)kcb / 4 * NR * 4;
    void *own;
    uint8_t *buf = ws_get(ws, sz_a + sz_b + NR * sizeof(int32_t), &own);
    if (!buf) return nomem();
    uint8_t *ap = buf;
    int8_t *bp = (int8_t *)(buf + sz_a);
    int32_t *comp = (int32_t *)(buf + sz_a + sz_b);
    s8_pack_a(M, K, A, lda, ap, KQ);
    for (uint32_t j0 = 0; j0 < N; j0 += NR) {
        uint32_t nj = N - j0 < NR ? N - j0 : NR;
        for (uint32_t k0 = 0; k0 < K; k0 += kcb) {
            uint32_t kc = K - k0 < kcb ? K - k0 : kcb;
            size_t kq = (kc + 3) / 4;
            s8_pack_b(B + (size_t)k0 * ldb + j0, ldb, kc, nj, bp, comp);
            for (size_t t = 0; t < mt; t++) {
                uint32_t i0 = (uint32_t)(t * MR), ni = M - i0 < MR ? M - i0 : MR;
                s8_kern(kq, ap + (t * KQ + k0 / 4) * MR * 4, bp, comp, C + (size_t)i0 * ldc + j0, ldc, ni, nj, k0 != 0);
            }
        }
    }
    free(own);
    return 0;
}

/* fp32: C[ni][nj] (= or +=, sequentially in k) the tile over kc steps: A's
 * rows read in place (a, lda: one broadcast per element, folded into the
 * arithmetic; rows >= ni repeat row 0 and are not stored), bp [kc][64];
 * fused: one FMA per step (only for operands whose products are exact, see
 * npk_gemm_f32_fused), else a rounded multiply and add. */
T512F static inline __attribute__((always_inline)) void f32_kern(size_t kc, const float *a, size_t lda, const float *bp,
                                                               float *C, size_t ldc, uint32_t ni, uint32_t nj,
                                                               int accumulate, const int fused) {
    TILE_MASKS;
    const float *a0 = a, *a1 = a + (1 < ni ? lda : 0), *a2 = a + (2 < ni ? 2 * lda : 0),
                *a3 = a + (3 < ni ? 3 * lda : 0), *a4 = a + (4 < ni ? 4 * lda : 0), *a5 = a + (5 < ni ? 5 * lda : 0);
    const __m512 z = _mm512_castsi512_ps(_mm512_setzero_si512());
    __m512 TILE_VARS;
#define INIT(r, x0, x1, x2, x3)                               \
    if ((r) < ni && accumulate) {                             \
        const float *cr = C + (size_t)(r) * ldc;              \
        x0 = _mm512_maskz_loadu_ps(m0, cr);                   \
        x1 = _mm512_maskz_loadu_ps(m1, cr + 16);              \
        x2 = _mm512_maskz_loadu_ps(m2, cr + 32);              \
        x3 = _mm512_maskz_loadu_ps(m3, cr + 48);              \
    } else {                                                  \
        x0 = z, x1 = z, x2 = z, x3 = z;                       \
    }
    TILE_ROWS(INIT)
#undef INIT
    for (size_t k = 0; k < kc; k++) {
        const float *b = bp + k * NR;
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16), b2 = _mm512_load_ps(b + 32),
               b3 = _mm512_load_ps(b + 48), av;
#define ROW(r, x0, x1, x2, x3)                             \
    av = _mm512_set1_ps(a##r[k]);                          \
    x0 = MAC512(x0, av, b0);                               \
    x1 = MAC512(x1, av, b1);                               \
    x2 = MAC512(x2, av, b2);                               \
    x3 = MAC512(x3, av, b3);
#define MAC512(x, a, b) (fused ? _mm512_fmadd_ps(a, b, x) : _mm512_add_ps(x, _mm512_mul_ps(a, b)))
        TILE_ROWS(ROW)
#undef MAC512
#undef ROW
    }
#define STORE(r, x0, x1, x2, x3) TILE_STORE(float, _mm512_mask_storeu_ps, r, x0, x1, x2, x3)
    TILE_ROWS(STORE)
#undef STORE
}

T512F static void f32_kern_sep(size_t kc, const float *a, size_t lda, const float *bp, float *C, size_t ldc, uint32_t ni,
                              uint32_t nj, int accumulate) {
    f32_kern(kc, a, lda, bp, C, ldc, ni, nj, accumulate, 0);
}
T512F static void f32_kern_fma(size_t kc, const float *a, size_t lda, const float *bp, float *C, size_t ldc, uint32_t ni,
                              uint32_t nj, int accumulate) {
    f32_kern(kc, a, lda, bp, C, ldc, ni, nj, accumulate, 1);
}

T512F static int f32_avx512(npk_gemm_ws *ws, uint32_t M, uint32_t N, uint32_t K, const float *A, size_t lda,
                           const float *B, size_t ldb, float *C, size_t ldc, int fused) {
    size_t mt = (M + MR - 1) / MR;
    uint32_t nkb = (K + KCF - 1) / KCF, kcb = (K + nkb - 1) / nkb;
    void *own;
    float *bp = ws_get(ws, (size_t)kcb * NR * sizeof(float), &own);
    if (!bp) return nomem();
    for (uint32_t j0 = 0; j0 < N; j0 += NR) {
        uint32_t nj = N - j0 < NR ? N - j0 : NR;
        for (uint32_t k0 = 0; k0 < K; k0 += kcb) {
            uint32_t kc = K - k0 < kcb ? K - k0 : kcb;
            for (uint32_t k = 0; k < kc; k++) { /* B block: [kc][64], zero outside */
                float *d = bp + (size_t)k * NR;
                memcpy(d, B + (size_t)(k0 + k) * ldb + j0, nj * sizeof(float));
                if (nj < NR) memset(d + nj, 0, (NR - nj) * sizeof(float));
            }
            for (size_t t = 0; t < mt; t++) {
                uint32_t i0 = (uint32_t)(t * MR), ni = M - i0 < MR ? M - i0 : MR;
                (fused ? f32_kern_fma : f32_kern_sep)(kc, A + (size_t)i0 * lda + k0, lda, bp, C + (size_t)i0 * ldc + j0,
                                                      ldc, ni, nj, k0 != 0);
            }
        }
    }
    free(own);
    return 0;
}

/* ---- AVX2 ------------------------------------------------------------------------- */

/* fp32 on AVX2: src/base/gemm_f32_avx2.c on a packing buffer from here. */
static int f32_avx2(npk_gemm_ws *ws, uint32_t M, uint32_t N, uint32_t K, const void *A, size_t lda, const void *B,
                    size_t ldb, int bf16, float *C, size_t ldc) {
    void *own;
    float *buf = ws_get(ws, npk_gemm_f32_avx2_buf(M, N, K), &own);
    if (!buf) return nomem();
    npk_gemm_f32_avx2(M, N, K, A, lda, B, ldb, bf16, C, ldc, buf);
    free(own);
    return 0;
}
#endif /* GEMM_X86 */

/* ---- the fused path's exactness check ---------------------------------------------- */

/* One operand's range (src/base/gemm_exact.h), fp32 or BF16 elements. */
static inline __attribute__((always_inline)) void f32_scan_body(uint32_t rows, uint32_t cols, const void *X, size_t ld,
                                                                npk_f32_range *r, const int bf16) {
    uint32_t o = 0, mx = 0, mn = 0xffffffffu;
    for (uint32_t i = 0; i < rows; i++) {
        const float *x = (const float *)X + (size_t)i * ld;
        const uint16_t *h = (const uint16_t *)X + (size_t)i * ld;
        for (uint32_t j = 0; j < cols; j++) {
            uint32_t u;
            if (bf16) u = (uint32_t)h[j] << 16; /* the widened fp32 bits */
            else memcpy(&u, x + j, 4);
            u &= 0x7fffffffu;
            o |= u;
            mx = u > mx ? u : mx;
            mn = u - 1 < mn ? u - 1 : mn; /* u = 0 wraps to the top: zeros never count */
        }
    }
    r->bits_or = o, r->max = mx, r->min_m1 = mn;
}

/* The same loop built for the host's vector unit (unsigned min/max), for fp32
 * or BF16 elements. */
#define SCAN_FN(NAME, ATTR, BF16) \
    ATTR static void NAME(uint32_t rows, uint32_t cols, const void *X, size_t ld, npk_f32_range *r) { \
        f32_scan_body(rows, cols, X, ld, r, BF16); \
    }
#ifdef GEMM_X86
SCAN_FN(f32_scan512, T512F, 0)
SCAN_FN(f32_scan256, T256, 0)
SCAN_FN(bf16_scan512, T512F, 1)
SCAN_FN(bf16_scan256, T256, 1)
#endif
SCAN_FN(f32_scan_c, , 0)
SCAN_FN(bf16_scan_c, , 1)
static void f32_scan(uint32_t rows, uint32_t cols, const void *X, size_t ld, npk_f32_range *r, int bf16) {
#ifdef GEMM_X86
    npk_gemm_isa isa = npk_gemm_f32_active_isa();
    if (isa == NPK_GEMM_AVX512) return (bf16 ? bf16_scan512 : f32_scan512)(rows, cols, X, ld, r);
    if (isa == NPK_GEMM_AVX2) return (bf16 ? bf16_scan256 : f32_scan256)(rows, cols, X, ld, r);
#endif
    (bf16 ? bf16_scan_c : f32_scan_c)(rows, cols, X, ld, r);
}

/* 1 when every product A[i][k] * B[k][j] is exactly an fp32 number
 * (npk_f32_products_exact). Costs one pass over A and B (O(MK + KN) against
 * the GEMM's O(MNK)); the AVX2 kernel decides per pair of packed blocks
 * instead, from ranges gathered while it packs them. */
static int fused_of(uint32_t M, uint32_t N, uint32_t K, const void *A, size_t lda, const void *B, size_t ldb,
                    int bf16) {
    npk_f32_range a, b;
    if (!M || !N || !K) return 1; /* no product */
    f32_scan(M, K, A, lda, &a, bf16);
    if (a.max >= 0x7f800000u) return 0;
    f32_scan(K, N, B, ldb, &b, bf16);
    return npk_f32_products_exact(&a, &b);
}

int npk_gemm_f32_fused(uint32_t M, uint32_t N, uint32_t K, const float *A, size_t lda, const float *B, size_t ldb) {
    return fused_of(M, N, K, A, lda, B, ldb, 0);
}

int npk_gemm_bf16_fused(uint32_t M, uint32_t N, uint32_t K, const uint16_t *A, size_t lda, const uint16_t *B,
                        size_t ldb) {
    return fused_of(M, N, K, A, lda, B, ldb, 1);
}

/* ---- entry points ------------------------------------------------------------------ */

/* One slice of the output on the active variant (the entry points below split
 * C into slices for the threads; a slice is a whole GEMM of its rows or
 * columns, so every output element is computed as in a single call). */
static int s8_slice(npk_gemm_ws *ws, npk_gemm_isa isa, uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda,
                    const int8_t *B, size_t ldb, int32_t *C, size_t ldc) {
    switch (isa) {
#ifdef GEMM_X86
    case NPK_GEMM_AVX512: return s8_avx512(ws, M, N, K, A, lda, B, ldb, C, ldc);
    case NPK_GEMM_AVX2: {
        void *own, *buf = ws_get(ws, npk_gemm_s8s32_avx2_bytes(M, N, K), &own);
        if (!buf) return nomem();
        npk_gemm_s8s32_avx2(buf, M, N, K, A, lda, B, ldb, C, ldc);
        free(own);
        return 0;
    }
#endif
    default: (void)ws, s8_portable(M, N, K, A, lda, B, ldb, C, ldc); return 0;
    }
}

/* bf16: A and B are BF16 (only the AVX2 variant takes them: npk_gemm_bf16
 * widens them for the others). */
static int f32_slice(npk_gemm_ws *ws, npk_gemm_isa isa, uint32_t M, uint32_t N, uint32_t K, const void *A, size_t lda,
                     const void *B, size_t ldb, int bf16, float *C, size_t ldc, int fused) {
    switch (isa) {
#ifdef GEMM_X86
    case NPK_GEMM_AVX512: return f32_avx512(ws, M, N, K, A, lda, B, ldb, C, ldc, fused);
    case NPK_GEMM_AVX2: return f32_avx2(ws, M, N, K, A, lda, B, ldb, bf16, C, ldc); /* fuses per block */
#endif
    default: (void)ws, (void)bf16, f32_portable(M, N, K, A, lda, B, ldb, C, ldc, fused); return 0;
    }
}

/* ---- threads: C split into row or column slices ---------------------------------------- */

/* Work below this many MACs runs on the calling thread (waking the pool costs
 * about as much as a few hundred thousand MACs). */
#define PAR_MIN_MACS (1u << 21)
/* Slice boundaries: multiples of these rows or columns (every variant's tile
 * height and width divide them), the last slice taking the remainder, so the
 * tiles of every slice start where the single call's would. */
#define PAR_ROWS 24
#define PAR_COLS 64

typedef struct par_gemm {
    int f32, fused; /* f32: 0 int8, 1 fp32, 2 BF16 operands */
    npk_gemm_isa isa;
    uint32_t M, N, K, chunk;
    int by_rows, ntasks;
    const void *A, *B;
    void *C;
    size_t lda, ldb, ldc;
    atomic_int rc;
} par_gemm;

static _Thread_local npk_gemm_ws tl_ws; /* each thread's packing buffers (kept for its next slice) */

static void par_task(void *ctx, int t) {
    par_gemm *p = ctx;
    uint32_t lo = (uint32_t)t * p->chunk, hi = t == p->ntasks - 1 ? (p->by_rows ? p->M : p->N) : lo + p->chunk;
    uint32_t M = p->by_rows ? hi - lo : p->M, N = p->by_rows ? p->N : hi - lo;
    size_t ao = p->by_rows ? lo * p->lda : 0, bo = p->by_rows ? 0 : lo, co = p->by_rows ? lo * p->ldc : lo;
    size_t es = p->f32 == 2 ? 2 : 4;
    int rc = p->f32 ? f32_slice(&tl_ws, p->isa, M, N, p->K, (const char *)p->A + ao * es, p->lda,
                                (const char *)p->B + bo * es, p->ldb, p->f32 == 2, (float *)p->C + co, p->ldc, p->fused)
                    : s8_slice(&tl_ws, p->isa, M, N, p->K, (const int8_t *)p->A + ao, p->lda,
                               (const int8_t *)p->B + bo, p->ldb, (int32_t *)p->C + co, p->ldc);
    if (rc) {
        int zero = 0;
        atomic_compare_exchange_strong(&p->rc, &zero, rc);
    }
}

/* The number of slices for this GEMM (1: run it on the calling thread). */
static int par_plan(par_gemm *p) {
    int th = npk_threads_now();
    if (th <= 1 || (uint64_t)p->M * p->N * p->K < PAR_MIN_MACS) return 1;
    uint32_t rows = p->M / PAR_ROWS, cols = p->N / PAR_COLS;
    p->by_rows = rows >= cols;
    uint32_t units = p->by_rows ? rows : cols;
    if (units < 2) return 1;
    int n = units < (uint32_t)th * 4 ? (int)units : th * 4; /* a few slices per thread for balance */
    uint32_t per = units / (uint32_t)n;
    p->chunk = per * (p->by_rows ? PAR_ROWS : PAR_COLS);
    p->ntasks = (int)((p->by_rows ? p->M : p->N) / p->chunk); /* the last slice takes the remainder */
    return p->ntasks;
}

static int par_run(par_gemm *p) {
    atomic_init(&p->rc, 0);
    npk_parallel(p->ntasks, par_task, p);
    return atomic_load(&p->rc);
}

/* ---- entry points ------------------------------------------------------------------ */

int npk_gemm_s8s32(npk_gemm_ws *ws, uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda, const int8_t *B,
                   size_t ldb, int32_t *C, size_t ldc) {
    if (!M || !N) return 0;
    if (!K) {
        for (uint32_t i = 0; i < M; i++) memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof *C);
        return 0;
    }
    npk_gemm_isa isa = npk_gemm_active_isa();
    par_gemm p = {.f32 = 0, .isa = isa, .M = M, .N = N, .K = K, .A = A, .B = B, .C = C, .lda = lda, .ldb = ldb,
                  .ldc = ldc};
    if (par_plan(&p) > 1) return par_run(&p);
    return s8_slice(ws, isa, M, N, K, A, lda, B, ldb, C, ldc);
}

int npk_gemm_f32(npk_gemm_ws *ws, uint32_t M, uint32_t N, uint32_t K, const float *A, size_t lda, const float *B,
                 size_t ldb, float *C, size_t ldc) {
    if (!M || !N) return 0;
    if (!K) {
        for (uint32_t i = 0; i < M; i++)
            for (uint32_t j = 0; j < N; j++) C[(size_t)i * ldc + j] = 0.0f;
        return 0;
    }
    npk_gemm_isa isa = npk_gemm_f32_active_isa();
    /* whether every product is exact is decided once for the whole GEMM (AVX2:
     * per pair of packed blocks, by the kernel while it packs them) */
    int fused = isa != NPK_GEMM_AVX2 && (isa != NPK_GEMM_PORTABLE || PORTABLE_FMA) &&
                npk_gemm_f32_fused(M, N, K, A, lda, B, ldb);
    par_gemm p = {.f32 = 1, .fused = fused, .isa = isa, .M = M, .N = N, .K = K, .A = A, .B = B, .C = C, .lda = lda,
                  .ldb = ldb, .ldc = ldc};
    if (par_plan(&p) > 1) return par_run(&p);
    return f32_slice(ws, isa, M, N, K, A, lda, B, ldb, 0, C, ldc, fused);
}

/* BF16 operands: the AVX2 variant widens them while it packs; the others run
 * npk_gemm_f32 on widened copies (the same values, so the same bits). */
int npk_gemm_bf16(npk_gemm_ws *ws, uint32_t M, uint32_t N, uint32_t K, const uint16_t *A, size_t lda,
                  const uint16_t *B, size_t ldb, float *C, size_t ldc) {
    if (!M || !N || !K) return npk_gemm_f32(ws, M, N, K, NULL, lda, NULL, ldb, C, ldc);
    npk_gemm_isa isa = npk_gemm_f32_active_isa();
    if (isa != NPK_GEMM_AVX2) { /* rows widened in bulk (npk_bf16_to_f32_n: eight at once from level avx2) */
        float *fa = malloc((size_t)M * K * sizeof(float)), *fb = malloc((size_t)K * N * sizeof(float));
        int rc = fa && fb ? 0 : npk_err(NPK_ENOMEM, "out of memory for the widened BF16 operands");
        for (uint32_t i = 0; i < M && !rc; i++) npk_bf16_to_f32_n(fa + (size_t)i * K, A + (size_t)i * lda, K);
        for (uint32_t k = 0; k < K && !rc; k++) npk_bf16_to_f32_n(fb + (size_t)k * N, B + (size_t)k * ldb, N);
        if (!rc) rc = npk_gemm_f32(ws, M, N, K, fa, K, fb, N, C, ldc);
        free(fa), free(fb);
        return rc;
    }
    /* the AVX2 kernel decides per pair of packed blocks whether to fuse */
    par_gemm p = {.f32 = 2, .fused = 0, .isa = isa, .M = M, .N = N, .K = K, .A = A, .B = B, .C = C, .lda = lda,
                  .ldb = ldb, .ldc = ldc};
    if (par_plan(&p) > 1) return par_run(&p);
    return f32_slice(ws, isa, M, N, K, A, lda, B, ldb, 1, C, ldc, 0);
}
