// SPDX-License-Identifier: MIT
/* The AVX2 variant of npk_gemm_s8s32 (include/npukit/gemm.h): int8 x int8 ->
 * int32, exact (sums wrap modulo 2^32 like every variant's), without VNNI.
 *
 * vpmaddubsw multiplies 32 unsigned bytes by 32 signed bytes and adds pairs
 * in 16 bits with saturation: with full int8 operands a pair reaches
 * 2 * 255 * 128 and saturates (oneDNN's AVX2 kernel does that, and is
 * inexact). Here A is split in two's complement as a = l - 128 s, with
 * l = a & 0x7f in [0, 127] and s = 1 when a < 0:
 *  - l * b: vpmaddubsw(l, b) pairs stay within 2 * 127 * 128 = 32512 < 2^15,
 *    never saturate; vpmaddwd by ones widens them to int32, vpaddd sums.
 *  - s * b: s is one bit, so the sum over a group of four k of s_k * b_k is
 *    one of 16 subset sums of four rows of B, tabulated once per packed
 *    panel of B (16 columns of int16); per group one table row is added in
 *    int16 (|sum| <= 512 per group, at most 48 groups per K block: no
 *    overflow) and the total, times 128, is subtracted at the end of the block.
 * Per 4 rows x 16 columns x 4 k (256 MACs): 4 broadcasts, 8 vpmaddubsw,
 * 8 vpmaddwd, 8 vpaddd and 4 vpaddw, 32 vector ops, against 16 vpmaddwd +
 * 16 vpaddd + 8 broadcasts (40, on a 6 x 16 tile) when both operands are
 * widened to int16 (the previous kernel): the same 16 multiplies, more adds. Zen 3 issues about 3.3 vector ops per cycle (two of them
 * multiplies), so ops per MAC is what counts: the kernel alone runs at about
 * 28 MACs per cycle with everything in L1 (the int16 widening at 22-25,
 * oneDNN's saturating vpmaddubsw + vpmaddwd + vpaddd at about 31).
 *
 * Below 64 rows or K < 32 the tables and the short K blocks cost more than
 * they save, and the widened path runs instead (both operands widened to
 * int16 for vpmaddwd, the kernel gemm.c had before; see the section below).
 *
 * Blocking: K in blocks of at most 48 groups (192 k; equal blocks), so that
 * one panel of B (per group 64 bytes of B and 16 x 32 bytes of table: 27 KB)
 * stays in L1 while every 4-row tile of A passes over it; A is packed once
 * per call (per group and tile: the four l words and four table indices,
 * 20 bytes), each K block's tiles contiguous. The panels are the outer loop:
 * between K blocks the panel's column of C is kept in a contiguous strip
 * (L2) and the last block writes C, so C is read and written once (the
 * 4 KB row stride of a 1024-wide C maps a column of C onto a few cache sets,
 * which made a K-block-outer order reload it from L3 every block).
 * Prefetches: while a panel's tiles run, the rows of B its next panel pack
 * reads (16 bytes of each 1 KB-strided row, otherwise a cache miss per row
 * when the pack runs), and in the last K block the rows of C two tiles on
 * (written by a later call). Non-temporal stores of C measured slower. */
#include "gemm_s8_avx2.h"

#include "npukit/cpu.h"

#include <string.h>

#ifdef NPK_ISA_X86
#include <immintrin.h>

#define T256 __attribute__((target("avx2")))

enum {
    MR = 4,        /* rows per tile */
    NR = 16,       /* columns per tile and panel */
    QMAX = 48,     /* groups of four k per K block: 27 KB panels (L1); the int16 sums allow 64 */
    PQ = 64 + 512, /* bytes per group of a B panel: B (16 columns x 4 k) then the 16-entry table */
    AQ = 20,       /* bytes per group of an A tile: 4 l words, 4 table indices */
    PFT = 2,       /* C is prefetched this many tiles ahead */
};

static size_t up(size_t a, size_t b) { return (a + b - 1) / b * b; }

/* C[4][16] = (Ci ? Ci[4][16] : 0) + the 4 x 16 tile over nq >= 1 groups:
 * ap [nq][AQ], bp [nq][PQ]; nq <= QMAX (Ci may be C). */
T256 static void kern(size_t nq, const uint8_t *ap, const uint8_t *bp, const int32_t *Ci, size_t ldi, int32_t *C,
                      size_t ldc, const int32_t *pf) {
    const __m256i ones = _mm256_set1_epi16(1);
    if (pf) /* a later tile's rows of C, which a later call writes: fetch them meanwhile */
        for (int r = 0; r < MR; r++) {
            _mm_prefetch((const char *)(pf + r * ldc), _MM_HINT_T0);
            _mm_prefetch((const char *)(pf + r * ldc + NR - 1), _MM_HINT_T0);
        }
    __m256i c00, c01, c10, c11, c20, c21, c30, c31, h0, h1, h2, h3, v, t0, t1;
    uint64_t o;
    /* The loop in assembly: compilers spill this tile, which needs all 16
     * registers (8 int32 and 4 int16 accumulators, ones, a broadcast, one
     * product, and the group's columns 8-15 of B, loaded once for the four
     * rows; columns 0-7 are read as memory operands). Zen 3 feeds its vector
     * pipes two 256-bit loads per cycle: 13 loads per group instead of 16
     * leave the two multiply pipes as the only bound (16 multiplies = 8
     * cycles per group), +2 % with everything in L1. */
#define ROW(c0, c1, h, ao, io)                    \
    "vpbroadcastd " ao "(%[a]), %[v]\n\t"      \
    "vpmaddubsw (%[b]), %[v], %[t0]\n\t"       \
    "vpmaddwd %[ones], %[t0], %[t0]\n\t"       \
    "vpaddd %[t0], %[" c0 "], %[" c0 "]\n\t"  \
    "vpmaddubsw %[t1], %[v], %[t0]\n\t"       \
    "vpmaddwd %[ones], %[t0], %[t0]\n\t"       \
    "vpaddd %[t0], %[" c1 "], %[" c1 "]\n\t"  \
    "movzbl " io "(%[a]), %k[o]\n\t"           \
    "vpaddw (%[b],%q[o],8), %[" h "], %[" h "]\n\t"
#define ZERO(x) "vpxor %[" x "], %[" x "], %[" x "]\n\t"
    __asm__ volatile(ZERO("c00") ZERO("c01") ZERO("c10") ZERO("c11") ZERO("c20") ZERO("c21") ZERO("c30") ZERO("c31")
                         ZERO("h0") ZERO("h1") ZERO("h2") ZERO("h3")
                     "1:\n\t"
                     "vmovdqa 32(%[b]), %[t1]\n\t"
                     ROW("c00", "c01", "h0", "0", "16") ROW("c10", "c11", "h1", "4", "17")
                         ROW("c20", "c21", "h2", "8", "18") ROW("c30", "c31", "h3", "12", "19")
                     "add $20, %[a]\n\t"
                     "add $576, %[b]\n\t"
                     "dec %[n]\n\t"
                     "jnz 1b\n\t"
                     : [c00] "=&x"(c00), [c01] "=&x"(c01), [c10] "=&x"(c10), [c11] "=&x"(c11), [c20] "=&x"(c20),
                       [c21] "=&x"(c21), [c30] "=&x"(c30), [c31] "=&x"(c31), [h0] "=&x"(h0), [h1] "=&x"(h1),
                       [h2] "=&x"(h2), [h3] "=&x"(h3), [v] "=&x"(v), [t0] "=&x"(t0), [t1] "=&x"(t1), [o] "=&r"(o),
                       [a] "+r"(ap), [b] "+r"(bp), [n] "+r"(nq)
                     : [ones] "x"(ones)
                     : "cc", "memory");
#undef ZERO
#undef ROW
    (void)v, (void)t0, (void)t1, (void)o;
#define STORE(r, x0, x1, h)                                                                                   \
    x0 = _mm256_sub_epi32(x0, _mm256_slli_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(h)), 7));        \
    x1 = _mm256_sub_epi32(x1, _mm256_slli_epi32(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(h, 1)), 7));   \
    if (Ci) {                                                                                                  \
        x0 = _mm256_add_epi32(x0, _mm256_loadu_si256((const __m256i *)(Ci + (r) * ldi)));                      \
        x1 = _mm256_add_epi32(x1, _mm256_loadu_si256((const __m256i *)(Ci + (r) * ldi + 8)));                  \
    }                                                                                                          \
    _mm256_storeu_si256((__m256i *)(C + (r) * ldc), x0);                                                       \
    _mm256_storeu_si256((__m256i *)(C + (r) * ldc + 8), x1);
    STORE(0, c00, c01, h0) STORE(1, c10, c11, h1) STORE(2, c20, c21, h2) STORE(3, c30, c31, h3)
#undef STORE
}

/* One panel: B[kc][nj] (ldb; nj <= 16) into bp [nq][PQ], nq = ceil(kc / 4):
 * per group of four k, columns 0-7 then 8-15 as 4 bytes (k = 0..3) each,
 * then the table T[m][j] = sum of B[k][j] over the bits k of m, as int16;
 * zero outside. */
T256 static void pack_panel(const int8_t *B, size_t ldb, uint32_t kc, uint32_t nj, uint8_t *bp) {
    for (uint32_t k0 = 0; k0 < kc; k0 += 4, bp += PQ) {
        __m128i r[4];
        const int8_t *src = B + (size_t)k0 * ldb;
        if (nj == NR && k0 + 4 <= kc) { /* the common case: four whole rows */
            r[0] = _mm_loadu_si128((const __m128i *)src);
            r[1] = _mm_loadu_si128((const __m128i *)(src + ldb));
            r[2] = _mm_loadu_si128((const __m128i *)(src + 2 * ldb));
            r[3] = _mm_loadu_si128((const __m128i *)(src + 3 * ldb));
        } else {
            for (uint32_t t = 0; t < 4; t++) {
                int8_t tmp[NR] = {0};
                if (k0 + t < kc) memcpy(tmp, src + t * ldb, nj);
                r[t] = _mm_loadu_si128((const __m128i *)tmp);
            }
        }
        __m128i x01 = _mm_unpacklo_epi8(r[0], r[1]), x23 = _mm_unpacklo_epi8(r[2], r[3]);
        _mm_store_si128((__m128i *)bp, _mm_unpacklo_epi16(x01, x23));
        _mm_store_si128((__m128i *)(bp + 16), _mm_unpackhi_epi16(x01, x23));
        x01 = _mm_unpackhi_epi8(r[0], r[1]), x23 = _mm_unpackhi_epi8(r[2], r[3]);
        _mm_store_si128((__m128i *)(bp + 32), _mm_unpacklo_epi16(x01, x23));
        _mm_store_si128((__m128i *)(bp + 48), _mm_unpackhi_epi16(x01, x23));
        /* T[m] for m = 0..15: the subset sums, in registers (11 adds) */
        const __m256i w0 = _mm256_cvtepi8_epi16(r[0]), w1 = _mm256_cvtepi8_epi16(r[1]),
                      w2 = _mm256_cvtepi8_epi16(r[2]), w3 = _mm256_cvtepi8_epi16(r[3]);
        const __m256i z = _mm256_setzero_si256(), t3 = _mm256_add_epi16(w0, w1), t5 = _mm256_add_epi16(w2, w0),
                      t6 = _mm256_add_epi16(w2, w1), t7 = _mm256_add_epi16(w2, t3);
        __m256i *d = (__m256i *)(bp + 64);
        _mm256_store_si256(d + 0, z), _mm256_store_si256(d + 1, w0), _mm256_store_si256(d + 2, w1);
        _mm256_store_si256(d + 3, t3), _mm256_store_si256(d + 4, w2), _mm256_store_si256(d + 5, t5);
        _mm256_store_si256(d + 6, t6), _mm256_store_si256(d + 7, t7);
        _mm256_store_si256(d + 8, w3), _mm256_store_si256(d + 9, _mm256_add_epi16(w3, w0));
        _mm256_store_si256(d + 10, _mm256_add_epi16(w3, w1)), _mm256_store_si256(d + 11, _mm256_add_epi16(w3, t3));
        _mm256_store_si256(d + 12, _mm256_add_epi16(w3, w2)), _mm256_store_si256(d + 13, _mm256_add_epi16(w3, t5));
        _mm256_store_si256(d + 14, _mm256_add_epi16(w3, t6)), _mm256_store_si256(d + 15, _mm256_add_epi16(w3, t7));
    }
}

/* The split of 8 groups of four bytes of one row: l (a & 0x7f) and the table
 * index of the group's sign bits, 8 + 4 * sum_t s_t 2^t (the kernel reads
 * the table row at 8 * index bytes into the group), as int32 each. */
T256 static void split8(__m256i x, __m256i *l, __m256i *idx) {
    const __m256i s = _mm256_and_si256(_mm256_srli_epi16(x, 7), _mm256_set1_epi8(1));
    const __m256i p = _mm256_maddubs_epi16(s, _mm256_set1_epi16(0x0201)); /* s0 + 2 s1, s2 + 2 s3 */
    *idx = _mm256_add_epi32(_mm256_madd_epi16(p, _mm256_set1_epi32(0x00100004)), _mm256_set1_epi32(8));
    *l = _mm256_and_si256(x, _mm256_set1_epi8(0x7f));
}

/* A[M][K] into ap [K blocks of qb groups][mt tiles][the block's groups][AQ]
 * (each block's tiles in the order the kernels read them): per group the l
 * words of rows 0-3, then their table indices (bytes); rows >= M and k >= K
 * are zero. */
T256 static void pack_a(uint32_t M, uint32_t K, const int8_t *A, size_t lda, uint8_t *ap, size_t QT, size_t qb) {
    size_t mt = (M + MR - 1) / MR;
    for (uint32_t i0 = 0; i0 < M; i0 += MR) {
        size_t b0 = 0, nb = QT < qb ? QT : qb; /* the K block of group q: [b0, b0 + nb) */
        uint8_t *d = ap + (i0 / MR * nb) * AQ;  /* where group q goes */
        for (uint32_t k0 = 0; k0 < K; k0 += 32) {
            __m256i l[4], o[4];
            for (uint32_t r = 0; r < MR; r++) {
                __m256i x;
                if (i0 + r >= M) {
                    x = _mm256_setzero_si256();
                } else if (k0 + 32 <= K) {
                    x = _mm256_loadu_si256((const __m256i *)(A + (size_t)(i0 + r) * lda + k0));
                } else {
                    int8_t tmp[32] = {0};
                    memcpy(tmp, A + (size_t)(i0 + r) * lda + k0, K - k0);
                    x = _mm256_loadu_si256((const __m256i *)tmp);
                }
                split8(x, &l[r], &o[r]);
            }
            /* 4 x 8 words to 8 groups x 4 rows (lane 0: groups 0-3, lane 1: 4-7) */
            __m256i t0 = _mm256_unpacklo_epi32(l[0], l[1]), t1 = _mm256_unpackhi_epi32(l[0], l[1]),
                    t2 = _mm256_unpacklo_epi32(l[2], l[3]), t3 = _mm256_unpackhi_epi32(l[2], l[3]);
            __m256i u[4] = {_mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2),
                            _mm256_unpacklo_epi64(t1, t3), _mm256_unpackhi_epi64(t1, t3)};
            t0 = _mm256_unpacklo_epi32(o[0], o[1]), t1 = _mm256_unpackhi_epi32(o[0], o[1]),
            t2 = _mm256_unpacklo_epi32(o[2], o[3]), t3 = _mm256_unpackhi_epi32(o[2], o[3]);
            __m256i v[4] = {_mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2),
                            _mm256_unpacklo_epi64(t1, t3), _mm256_unpackhi_epi64(t1, t3)};
            size_t q0 = k0 / 4, nq = QT - q0 < 8 ? QT - q0 : 8;
            const __m128i bytes = _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
            for (size_t g = 0; g < nq; g++, d += AQ) {
                __m128i lw = (g & 4) ? _mm256_extracti128_si256(u[g & 3], 1) : _mm256_castsi256_si128(u[g & 3]);
                __m128i iw = (g & 4) ? _mm256_extracti128_si256(v[g & 3], 1) : _mm256_castsi256_si128(v[g & 3]);
                if (q0 + g == b0 + nb) { /* the next K block's part of this tile */
                    b0 += nb, nb = QT - b0 < qb ? QT - b0 : qb;
                    d = ap + (b0 * mt + i0 / MR * nb) * AQ;
                }
                uint32_t ib = (uint32_t)_mm_cvtsi128_si32(_mm_shuffle_epi8(iw, bytes));
                _mm_storeu_si128((__m128i *)d, lw);
                memcpy(d + 16, &ib, 4);
            }
        }
    }
}

/* The packing layout of one call: K blocks, buffer sizes (every part a
 * multiple of 64 bytes). */
typedef struct plan {
    size_t mt, QT, qb, sz_a, sz_b, sz_c;
} plan;

static plan plan_of(uint32_t M, uint32_t K) {
    plan p;
    p.mt = (M + MR - 1) / MR, p.QT = (K + 3) / 4;
    size_t nkb = (p.QT + QMAX - 1) / QMAX;
    p.qb = (p.QT + nkb - 1) / nkb; /* K blocks of equal depth */
    p.sz_a = up(p.mt * p.QT * AQ, 64), p.sz_b = p.qb * PQ;
    p.sz_c = nkb > 1 ? p.mt * MR * NR * sizeof(int32_t) : 0;
    return p;
}

T256 static void tab_gemm(void *buf, uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda,
                              const int8_t *B, size_t ldb, int32_t *C, size_t ldc) {
    plan p = plan_of(M, K);
    size_t mt = p.mt, QT = p.QT, qb = p.qb;
    uint8_t *ap = buf, *bp = ap + p.sz_a;
    int32_t *strip = (int32_t *)(bp + p.sz_b); /* the panel's column of C between K blocks */
    pack_a(M, K, A, lda, ap, QT, qb);
    for (uint32_t j0 = 0; j0 < N; j0 += NR) {
        uint32_t nj = N - j0 < NR ? N - j0 : NR;
        for (size_t q0 = 0; q0 < QT; q0 += qb) {
            size_t nq = QT - q0 < qb ? QT - q0 : qb;
            uint32_t k0 = (uint32_t)(4 * q0), kc = K - k0 < 4 * nq ? K - k0 : (uint32_t)(4 * nq);
            int last = q0 + nq == QT;
            pack_panel(B + (size_t)k0 * ldb + j0, ldb, kc, nj, bp);
            /* the rows of B the next pack reads (the next K block, or the next
             * panel's first): fetched while the tiles run, spread over them */
            uint32_t kn = 0, jn = j0;
            if (!last) kn = k0 + kc;
            else jn = j0 + NR;
            size_t kcn = jn >= N ? 0 : K - kn < 4 * qb ? K - kn : 4 * qb, rn = 0;
            const int8_t *bn = kcn ? B + (size_t)kn * ldb + jn : B;
            for (size_t t = 0; t < mt; t++) {
                uint32_t i0 = (uint32_t)(t * MR), ni = M - i0 < MR ? M - i0 : MR;
                const uint8_t *a = ap + (q0 * mt + t * nq) * AQ;
                int32_t *s = strip + t * MR * NR, *c = C + (size_t)i0 * ldc + j0;
                const int32_t *ci = q0 ? s : NULL;
                for (; rn * mt < (t + 1) * kcn; rn++) _mm_prefetch((const char *)(bn + rn * ldb), _MM_HINT_T0);
                if (!last) {
                    kern(nq, a, bp, ci, NR, s, NR, NULL);
                } else if (ni == MR && nj == NR) {
                    /* C's rows PFT tiles on, when that tile is whole */
                    const int32_t *pf = i0 + (PFT + 1) * MR <= M ? c + PFT * MR * ldc : NULL;
                    kern(nq, a, bp, ci, NR, c, ldc, pf);
                } else {
                    int32_t tile[MR * NR];
                    kern(nq, a, bp, ci, NR, tile, NR, NULL);
                    for (uint32_t r = 0; r < ni; r++) memcpy(c + r * ldc, tile + r * NR, nj * sizeof *c);
                }
            }
        }
    }
}

/* ---- the widened path (GEMMs below the table path's size) -------------------------- */

/* Both operands widened to int16 and multiplied in pairs by vpmaddwd, whose
 * 32-bit pair sums cannot overflow (|sum| <= 2^15), then added in int32: 40
 * vector ops per 256 MACs (22-25 MACs per cycle), but B's packing is a plain
 * widening, so small GEMMs pay less than for the tables. A 6 x 16 register
 * tile (12 ymm accumulators) over an A micro panel (6 rows of int16 pairs, L1)
 * and a B micro panel (16 columns of int16 pairs, L1); B is packed per K block
 * and S2_NC-column block (L2), A once per call. */
enum { S2_MR = 6, S2_NR = 16, S2_KC = 512, S2_NC = 256 };

/* C[ni][nj] (= or +=) the tile: ap [kh][6] int32 (one int16 pair of a row each),
 * bp [kh][16][2] int16. Not inlined: inlined into the entry, gcc 12 kept B's
 * two vectors and the loop count on the stack (LeNet int8's warm run 13 %
 * slower after an unrelated change to the entry); alone it keeps the 12
 * accumulators, B and the broadcast in registers. */
T256 __attribute__((noinline)) static void wid_kern(size_t kh, const int32_t *ap, const int16_t *bp, int32_t *C, size_t ldc, uint32_t ni,
                          uint32_t nj, int accumulate) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nj), lane),
                  m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nj - 8), lane);
    __m256i c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
#define ROWS2(X) X(0, c00, c01) X(1, c10, c11) X(2, c20, c21) X(3, c30, c31) X(4, c40, c41) X(5, c50, c51)
    const int full = nj == S2_NR; /* plain loads and stores (vpmaskmovd is slow on some cores) */
#define INIT(r, x0, x1)                                                       \
    if (accumulate && (r) < ni && full) {                                     \
        x0 = _mm256_loadu_si256((const __m256i *)(C + (r) * ldc));            \
        x1 = _mm256_loadu_si256((const __m256i *)(C + (r) * ldc + 8));        \
    } else if (accumulate && (r) < ni) {                                      \
        x0 = _mm256_maskload_epi32((const int *)(C + (r) * ldc), m0);         \
        x1 = _mm256_maskload_epi32((const int *)(C + (r) * ldc + 8), m1);     \
    } else {                                                                  \
        x0 = x1 = _mm256_setzero_si256();                                     \
    }
    ROWS2(INIT)
#undef INIT
    for (size_t q = 0; q < kh; q++, ap += S2_MR, bp += S2_NR * 2) {
        __m256i b0 = _mm256_load_si256((const __m256i *)bp), b1 = _mm256_load_si256((const __m256i *)(bp + 16)), av;
#define ROW(r, x0, x1)                                              \
    av = _mm256_set1_epi32(ap[r]);                                  \
    x0 = _mm256_add_epi32(x0, _mm256_madd_epi16(av, b0));           \
    x1 = _mm256_add_epi32(x1, _mm256_madd_epi16(av, b1));
        ROWS2(ROW)
#undef ROW
    }
#define STORE(r, x0, x1)                                                 \
    if ((r) < ni && full) {                                              \
        _mm256_storeu_si256((__m256i *)(C + (r) * ldc), x0);             \
        _mm256_storeu_si256((__m256i *)(C + (r) * ldc + 8), x1);         \
    } else if ((r) < ni) {                                               \
        _mm256_maskstore_epi32((int *)(C + (r) * ldc), m0, x0);          \
        _mm256_maskstore_epi32((int *)(C + (r) * ldc + 8), m1, x1);      \
    }
    ROWS2(STORE)
#undef STORE
#undef ROWS2
}

/* B[kc][nc] (ldb) into bp [nc/16 panels][kh][16][2] int16, zero outside. */
T256 static void wid_pack_b(const int8_t *B, size_t ldb, uint32_t kc, uint32_t nc, int16_t *bp) {
    size_t kh = (kc + 1) / 2;
    for (uint32_t p0 = 0; p0 < nc; p0 += S2_NR) {
        int16_t *panel = bp + (size_t)(p0 / S2_NR) * kh * S2_NR * 2;
        for (size_t q = 0; q < kh; q++) {
            const int8_t *r0 = B + 2 * q * ldb + p0, *r1 = 2 * q + 1 < kc ? r0 + ldb : NULL;
            int16_t *d = panel + q * S2_NR * 2;
            uint32_t j = 0;
            for (; j + 8 <= S2_NR && p0 + j + 8 <= nc; j += 8) {
                __m128i x0 = _mm_loadl_epi64((const __m128i *)(r0 + j)),
                        x1 = r1 ? _mm_loadl_epi64((const __m128i *)(r1 + j)) : _mm_setzero_si128();
                _mm256_store_si256((__m256i *)(d + 2 * j), _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(x0, x1)));
            }
            for (; j < S2_NR; j++) {
                int in = p0 + j < nc;
                d[2 * j] = in ? r0[j] : 0;
                d[2 * j + 1] = in && r1 ? r1[j] : 0;
            }
        }
    }
}

/* The widened path's buffer: A [mt][KH][6] int32, then one B block. */
static void wid_sizes(uint32_t M, uint32_t N, uint32_t K, uint32_t *kcb, uint32_t *ncb, size_t *sz_a, size_t *sz_b) {
    size_t mt = (M + S2_MR - 1) / S2_MR, KH = (K + 1) / 2;
    /* K blocks of equal depth (<= S2_KC, even) instead of S2_KC + a thin rest */
    uint32_t nkb = (K + S2_KC - 1) / S2_KC;
    *kcb = (uint32_t)up((K + nkb - 1) / nkb, 2);
    *ncb = N < S2_NC ? (uint32_t)up(N, S2_NR) : S2_NC;
    *sz_a = up(mt * KH * S2_MR * sizeof(int32_t), 64), *sz_b = (size_t)*kcb / 2 * *ncb * 2 * sizeof(int16_t);
}

T256 static void wid_gemm(void *buf, uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda, const int8_t *B,
                          size_t ldb, int32_t *C, size_t ldc) {
    size_t mt = (M + S2_MR - 1) / S2_MR, KH = (K + 1) / 2, sz_a, sz_b;
    uint32_t kcb, ncb;
    wid_sizes(M, N, K, &kcb, &ncb, &sz_a, &sz_b);
    int32_t *ap = (int32_t *)buf;
    int16_t *bp = (int16_t *)((uint8_t *)buf + sz_a);
    for (size_t t = 0; t < mt; t++) /* A: [mt][KH][6] pairs (a[2q], a[2q+1]) as int16, zero outside */
        for (uint32_t r = 0; r < S2_MR; r++) {
            size_t i = t * S2_MR + r;
            int32_t *d = ap + t * KH * S2_MR + r;
            if (i >= M) {
                for (size_t q = 0; q < KH; q++) d[q * S2_MR] = 0;
                continue;
            }
            const int8_t *src = A + i * lda;
            for (size_t q = 0; q < K / 2; q++)
                d[q * S2_MR] = (int32_t)((uint32_t)(uint16_t)src[2 * q] | (uint32_t)(uint16_t)src[2 * q + 1] << 16);
            if (K & 1) d[(K / 2) * S2_MR] = (int32_t)(uint32_t)(uint16_t)src[K - 1];
        }
    for (uint32_t k0 = 0; k0 < K; k0 += kcb) {
        uint32_t kc = K - k0 < kcb ? K - k0 : kcb;
        size_t kh = (kc + 1) / 2;
        for (uint32_t n0 = 0; n0 < N; n0 += ncb) {
            uint32_t nc = N - n0 < ncb ? N - n0 : ncb;
            wid_pack_b(B + (size_t)k0 * ldb + n0, ldb, kc, nc, bp);
            for (size_t t = 0; t < mt; t++) {
                uint32_t i0 = (uint32_t)(t * S2_MR), ni = M - i0 < S2_MR ? M - i0 : S2_MR;
                const int32_t *a = ap + (t * KH + k0 / 2) * S2_MR;
                for (uint32_t p0 = 0; p0 < nc; p0 += S2_NR)
                    wid_kern(kh, a, bp + (size_t)(p0 / S2_NR) * kh * S2_NR * 2, C + (size_t)i0 * ldc + n0 + p0, ldc, ni,
                             nc - p0 < S2_NR ? nc - p0 : S2_NR, k0 != 0);
            }
        }
    }
}

/* ---- entry ------------------------------------------------------------------------- */

/* The table path where its per-panel tables and per-tile K blocks pay off:
 * measured on Zen 3 against the widened path (thread CPU time, same process,
 * medians of 21 alternating pairs), 1024^3 +4-8 %, and since the table
 * kernel's packing got cheaper (v0blk) from 64 rows and K >= 32 at any N:
 * 120 x 1024 x 1024 +15 %, 784 x 256 x 576 +20 %, 3136 x 64 x 576 +38 %,
 * 1024 x 8 x 1024 +60 %, 1280 x 49 x 320 +42 %, 64 x 196 x 384 +12 %,
 * 64 x 784 x 192 +4 %, 256 x 256 x 32 +5 %. Below, the B panels' packing is
 * shared by too few tiles: 32-48 rows won or lost by shape (32^3 +28 %,
 * 32 x 784 x 192 -8 %, 48 x 784 x 192 -5 %), 4-24 rows lost 8-18 %, K = 16
 * or 24 lost 11-18 %. */
static int use_tables(uint32_t M, uint32_t N, uint32_t K) { return (void)N, M >= 64 && K >= 32; }

size_t npk_gemm_s8s32_avx2_bytes(uint32_t M, uint32_t N, uint32_t K) {
    if (!use_tables(M, N, K)) {
        uint32_t kcb, ncb;
        size_t sz_a, sz_b;
        wid_sizes(M, N, K, &kcb, &ncb, &sz_a, &sz_b);
        return sz_a + sz_b;
    }
    plan p = plan_of(M, K);
    return p.sz_a + p.sz_b + p.sz_c;
}

T256 void npk_gemm_s8s32_avx2(void *buf, uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda,
                              const int8_t *B, size_t ldb, int32_t *C, size_t ldc) {
    if (use_tables(M, N, K))
        tab_gemm(buf, M, N, K, A, lda, B, ldb, C, ldc);
    else
        wid_gemm(buf, M, N, K, A, lda, B, ldb, C, ldc);
}
#endif
