/* Fast int8 x int8 -> int32 GEMM for the v0 model's functional compute.
 *
 * Two kernels, bit-identical (int32 sums wrap modulo 2^32, so summation
 * order does not matter):
 *  - AVX-512 VNNI: vpdpbusd multiplies uint8 x int8 in groups of four. A is
 *    made unsigned by adding 128 (xor 0x80) and the excess 128 * colsum(B)
 *    is subtracted by starting the accumulators at -128 * colsum(B).
 *    Blocking: KC = 512 deep K blocks; A packed per block as 6-row
 *    micro-panels [k/4][6][4]; B packed per 64-column panel [k/4][64][4]
 *    (32 KiB, stays in L1); a 6 x 64 register tile of 24 zmm accumulators.
 *  - portable C: i-k-j loops over 64 x 256 blocks with a vectorizable inner loop.
 */
#include "npukit/error.h"
#include "sim/v0_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- portable ---- */
int npk_v0_gemm_portable(uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda, const int8_t *B,
                         size_t ldb, int32_t *C, size_t ldc) {
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
    return 0;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(NPUKIT_NO_VNNI)
#include <immintrin.h>
#define HAVE_VNNI_KERNEL 1
#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

enum { MR = 6, NR = 64, KC = 512 };
/* gcc 12 spills the 24 accumulators when the _mm512_dpbusd_epi32 intrinsic is
 * used (ties the destination badly); one inline vpdpbusd per MAC group keeps
 * them in registers (2x faster). */
#define DP(acc, a, b) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b))

/* ct[6][64] += sum over kq groups of ap[q][r][0..3] (uint8) . bp[q][j][0..3] (int8). */
VNNI_TARGET static void kern_6x64(size_t kq, const uint8_t *ap, const int8_t *bp, int32_t *ct) {
    __m512i c00 = _mm512_loadu_si512(ct + 0 * NR + 0), c01 = _mm512_loadu_si512(ct + 0 * NR + 16),
            c02 = _mm512_loadu_si512(ct + 0 * NR + 32), c03 = _mm512_loadu_si512(ct + 0 * NR + 48);
    __m512i c10 = _mm512_loadu_si512(ct + 1 * NR + 0), c11 = _mm512_loadu_si512(ct + 1 * NR + 16),
            c12 = _mm512_loadu_si512(ct + 1 * NR + 32), c13 = _mm512_loadu_si512(ct + 1 * NR + 48);
    __m512i c20 = _mm512_loadu_si512(ct + 2 * NR + 0), c21 = _mm512_loadu_si512(ct + 2 * NR + 16),
            c22 = _mm512_loadu_si512(ct + 2 * NR + 32), c23 = _mm512_loadu_si512(ct + 2 * NR + 48);
    __m512i c30 = _mm512_loadu_si512(ct + 3 * NR + 0), c31 = _mm512_loadu_si512(ct + 3 * NR + 16),
            c32 = _mm512_loadu_si512(ct + 3 * NR + 32), c33 = _mm512_loadu_si512(ct + 3 * NR + 48);
    __m512i c40 = _mm512_loadu_si512(ct + 4 * NR + 0), c41 = _mm512_loadu_si512(ct + 4 * NR + 16),
            c42 = _mm512_loadu_si512(ct + 4 * NR + 32), c43 = _mm512_loadu_si512(ct + 4 * NR + 48);
    __m512i c50 = _mm512_loadu_si512(ct + 5 * NR + 0), c51 = _mm512_loadu_si512(ct + 5 * NR + 16),
            c52 = _mm512_loadu_si512(ct + 5 * NR + 32), c53 = _mm512_loadu_si512(ct + 5 * NR + 48);
    for (size_t q = 0; q < kq; q++) {
        const int8_t *b = bp + q * (NR * 4);
        const uint8_t *a = ap + q * (MR * 4);
        __m512i b0 = _mm512_load_si512(b), b1 = _mm512_load_si512(b + 64), b2 = _mm512_load_si512(b + 128),
                b3 = _mm512_load_si512(b + 192);
        int32_t w;
        __m512i av;
#define ROW(r, x0, x1, x2, x3)                  \
    memcpy(&w, a + 4 * (r), 4);                 \
    av = _mm512_set1_epi32(w);                  \
    DP(x0, av, b0);       \
    DP(x1, av, b1);       \
    DP(x2, av, b2);       \
    DP(x3, av, b3);
        ROW(0, c00, c01, c02, c03)
        ROW(1, c10, c11, c12, c13)
        ROW(2, c20, c21, c22, c23)
        ROW(3, c30, c31, c32, c33)
        ROW(4, c40, c41, c42, c43)
        ROW(5, c50, c51, c52, c53)
#undef ROW
    }
    _mm512_storeu_si512(ct + 0 * NR + 0, c00), _mm512_storeu_si512(ct + 0 * NR + 16, c01);
    _mm512_storeu_si512(ct + 0 * NR + 32, c02), _mm512_storeu_si512(ct + 0 * NR + 48, c03);
    _mm512_storeu_si512(ct + 1 * NR + 0, c10), _mm512_storeu_si512(ct + 1 * NR + 16, c11);
    _mm512_storeu_si512(ct + 1 * NR + 32, c12), _mm512_storeu_si512(ct + 1 * NR + 48, c13);
    _mm512_storeu_si512(ct + 2 * NR + 0, c20), _mm512_storeu_si512(ct + 2 * NR + 16, c21);
    _mm512_storeu_si512(ct + 2 * NR + 32, c22), _mm512_storeu_si512(ct + 2 * NR + 48, c23);
    _mm512_storeu_si512(ct + 3 * NR + 0, c30), _mm512_storeu_si512(ct + 3 * NR + 16, c31);
    _mm512_storeu_si512(ct + 3 * NR + 32, c32), _mm512_storeu_si512(ct + 3 * NR + 48, c33);
    _mm512_storeu_si512(ct + 4 * NR + 0, c40), _mm512_storeu_si512(ct + 4 * NR + 16, c41);
    _mm512_storeu_si512(ct + 4 * NR + 32, c42), _mm512_storeu_si512(ct + 4 * NR + 48, c43);
    _mm512_storeu_si512(ct + 5 * NR + 0, c50), _mm512_storeu_si512(ct + 5 * NR + 16, c51);
    _mm512_storeu_si512(ct + 5 * NR + 32, c52), _mm512_storeu_si512(ct + 5 * NR + 48, c53);
}

static int host_has_vnni(void) {
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vnni");
        const char *force = getenv("NPUKIT_V0_GEMM");
        if (force && !strcmp(force, "portable")) cached = 0;
    }
    return cached;
}

int npk_v0_gemm_vnni(uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda, const int8_t *B, size_t ldb,
                     int32_t *C, size_t ldc) {
    if (!host_has_vnni()) return npk_err(NPK_EUNSUPPORTED, "this host has no AVX-512 VNNI");
    size_t mt = (M + MR - 1) / MR, np = (N + NR - 1) / NR;
    /* K blocks of equal depth (<= KC, multiple of 4) instead of KC + a thin rest */
    uint32_t nkb = (K + KC - 1) / KC, kcb = ((K + nkb - 1) / nkb + 3) & ~3u;
    size_t kcmax = K < kcb ? K : kcb, kqmax = (kcmax + 3) / 4;
    uint8_t *ap = aligned_alloc(64, (mt * MR * kqmax * 4 + 63) / 64 * 64);
    int8_t *bp = aligned_alloc(64, kqmax * NR * 4);
    int32_t *comp = malloc(np * NR * sizeof *comp);
    if (!ap || !bp || !comp) {
        free(ap);
        free(bp);
        free(comp);
        return npk_err(NPK_ENOMEM, "out of memory for the GEMM packing buffers");
    }
    /* comp[j] = -128 * sum_k B[k][j] (wrapping) */
    memset(comp, 0, np * NR * sizeof *comp);
    for (uint32_t k = 0; k < K; k++) {
        const int8_t *b = B + (size_t)k * ldb;
        uint32_t *cu = (uint32_t *)comp;
        for (uint32_t j = 0; j < N; j++) cu[j] -= (uint32_t)(128 * (int32_t)b[j]);
    }
    int32_t tile[MR * NR];
    for (uint32_t k0 = 0; k0 < K; k0 += kcb) {
        uint32_t kc = K - k0 < kcb ? K - k0 : kcb;
        size_t kq = (kc + 3) / 4;
        /* pack A: [mt][kq][MR][4], uint8 = int8 + 128, zero outside */
        memset(ap, 0, mt * MR * kq * 4);
        for (size_t t = 0; t < mt; t++) {
            uint8_t *dst = ap + t * kq * MR * 4;
            for (uint32_t r = 0; r < MR; r++) {
                size_t i = t * MR + r;
                if (i >= M) break;
                const int8_t *src = A + i * lda + k0;
                uint8_t *d = dst + r * 4;
                uint32_t k = 0;
                for (; k + 4 <= kc; k += 4, d += MR * 4) { /* 4 bytes at a time, + 128 each */
                    uint32_t w;
                    memcpy(&w, src + k, 4);
                    w ^= 0x80808080u;
                    memcpy(d, &w, 4);
                }
                for (; k < kc; k++) d[k & 3] = (uint8_t)(src[k] ^ 0x80);
            }
        }
        for (size_t p = 0; p < np; p++) {
            uint32_t j0 = (uint32_t)(p * NR), nj = N - j0 < NR ? N - j0 : NR;
            /* pack B: [kq][NR][4], zero outside */
            memset(bp, 0, kq * NR * 4);
            for (uint32_t k = 0; k < kc; k++) {
                const int8_t *src = B + (size_t)(k0 + k) * ldb + j0;
                int8_t *dst = bp + (k >> 2) * (NR * 4) + (k & 3);
                for (uint32_t j = 0; j < nj; j++) dst[j * 4] = src[j];
            }
            for (size_t t = 0; t < mt; t++) {
                uint32_t i0 = (uint32_t)(t * MR), ni = M - i0 < MR ? M - i0 : MR;
                for (uint32_t r = 0; r < MR; r++) {
                    if (r < ni && k0) memcpy(tile + r * NR, C + (size_t)(i0 + r) * ldc + j0, nj * sizeof(int32_t));
                    else memcpy(tile + r * NR, comp + j0, NR * sizeof(int32_t));
                }
                kern_6x64(kq, ap + t * kq * MR * 4, bp, tile);
                for (uint32_t r = 0; r < ni; r++)
                    memcpy(C + (size_t)(i0 + r) * ldc + j0, tile + r * NR, nj * sizeof(int32_t));
            }
        }
    }
    free(ap);
    free(bp);
    free(comp);
    return 0;
}
#else
static int host_has_vnni(void) { return 0; }
int npk_v0_gemm_vnni(uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda, const int8_t *B, size_t ldb,
                     int32_t *C, size_t ldc) {
    (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc;
    return npk_err(NPK_EUNSUPPORTED, "the AVX-512 VNNI kernel is not built for this target");
}
#endif

const char *npk_v0_gemm_kernel(void) { return host_has_vnni() ? "avx512-vnni" : "portable"; }

int npk_v0_gemm_s8s32(uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda, const int8_t *B, size_t ldb,
                      int32_t *C, size_t ldc) {
    if (!M || !N) return 0;
    if (host_has_vnni()) return npk_v0_gemm_vnni(M, N, K, A, lda, B, ldb, C, ldc);
    return npk_v0_gemm_portable(M, N, K, A, lda, B, ldb, C, ldc);
}
