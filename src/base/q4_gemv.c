// SPDX-License-Identifier: MIT
/* The exact INT4 x BF16 GEMV of the pccx datapath, fast (include/npukit/numfmt.h).
 *
 * y[n] = old[n] + sum_g s[n][g] * sum_{k in g} w[n][k] * x[k], summed exactly
 * and rounded once to BF16 (RNE): the value of the exact accumulator fed one
 * product at a time (npk_bf16_xacc_add_prod), computed another way.
 *
 * Weights (npk_q4_mat, built once per weight record and cached by the caller):
 * the INT4 values as int8, transposed into blocks of 16 outputs, each pair of
 * inputs side by side per output ([block][k / 2][16][2], widx): one 32-bit
 * vector lane is one output and holds the pair vpmaddwd multiplies; each scale
 * split into a signed 24-bit significand and the exponent of its unit.
 *
 * Activations (per row): cut into chunks of 8 inside a scale group; each
 * chunk's values become exact integers on the chunk's least exponent ce
 * (|xa| < 2^25 when the chunk's exponent span is at most 17; below 2^15 when
 * it is at most 7, so that the AVX2 and AVX-512 kernels take such a chunk's
 * pairs of products with one vpmaddwd, exact in int32). Per output and
 * chunk S = sum w * xa is exact in int32 (8 terms below 2^28), T = S * sm
 * exact in int64 (below 2^55), and T * 2^(ce + sx) is added to a 128-bit
 * two's complement accumulator anchored at the row's least term exponent. The
 * row is taken only when every term and the sum provably fit (else the
 * general path below), so the sum is exact, and one rounding gives the BF16.
 *
 * The general path (a chunk holding an infinity or NaN, or spanning more than
 * 17 binades, a non-finite scale or old value, groups not a multiple of 8, a
 * row whose terms span more than the 128 bits): the exact accumulator per
 * output, one integer sum per finite chunk (npk_bf16_xacc_add_scaled) and
 * single products elsewhere.
 *
 * The chunk sums and the 128-bit adds have an AVX-512 and an AVX2 version
 * beside the portable C, chosen at run time from the level of
 * include/npukit/cpu.h (npk_isa_force or NPUKIT_ISA caps it; tests run every
 * one the CPU has against the per-product accumulator).
 *
 * Also here, on the same 128-bit sums: npk_bf16_round_u128 and the exact
 * BF16 reduction of the CVO unit (npk_bf16_sum). */
#include "npukit/cpu.h"
#include "npukit/error.h"
#include "npukit/numfmt.h"
#include "npukit/threads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef NPK_ISA_X86
#define Q4_X86 1
#include "base/x86_simd.h"
#endif

#define LANES 16 /* outputs per block: one AVX-512 vector of int32 */
#define CH 8     /* activations per chunk */
#define CSPAN 17 /* chunk exponent span: 8 * 8 * 255 * 2^17 < 2^31 */
#define SX_INF 1000
#define SX_NAN 1001
#define CE_BAD INT32_MIN /* a chunk with an infinity or NaN, or spanning more than CSPAN */

struct npk_q4_mat {
    uint32_t N, K, G, ng;  /* G: inputs per scale (K when one per row), ng groups */
    uint32_t nch, Kp;      /* chunks of 8, K rounded up to them */
    uint32_t nb, Np;       /* blocks of 16 outputs, N rounded up to them */
    int chunked;           /* chunks lie inside groups (G % 8 == 0 or one group) */
    int fast;              /* chunked and every scale finite */
    int sxmin, sxmax;      /* exponents of the nonzero finite scales */
    int ones;              /* one output, every weight 1, no scales: the GEMV is an exact sum (npk_bf16_sum) */
    int8_t *w;             /* [nb][Kp / 2][16][2] (widx) */
    int32_t *sm;           /* [ng][Np] signed significands (0 for zero) */
    int16_t *sx;           /* [ng][Np] exponents of their unit; SX_INF / SX_NAN */
    uint32_t *cg;          /* [nch] the group of each chunk */
    int64_t *sxs;          /* (x86) sx per eight outputs as the even four, then the odd four, in 64-bit lanes (row_avx2) */
    size_t bytes;
};

struct npk_q4_ws {
    size_t kcap, ccap, ncap;
    int32_t *xa;    /* [Kp] aligned activations */
    int32_t *xp;    /* [Kp / 2] xa's pairs as two int16 (low: the even input) where the chunk is in nz16 */
    int32_t *ce;    /* [nch] chunk exponent (of the integers' unit) */
    uint32_t *nz;   /* nonzero chunks */
    uint32_t *nz16, *nz32; /* (xsplit_avx2) the same, split: |xa| < 2^15 (xp set), and the others */
    uint64_t *lo, *hi; /* [Np] 128-bit accumulators */
};

/* ---- ISA choice -------------------------------------------------------------- */

/* The variant of the active level (include/npukit/cpu.h): AVX-512 from level
 * avx512 (F/BW/DQ/VL/CD; VNNI not needed), AVX2 from level avx2. */
npk_q4_isa npk_q4_isa_active(void) {
#ifdef Q4_X86
    npk_isa l = npk_isa_active();
    if (l >= NPK_ISA_AVX512) return NPK_Q4_AVX512;
    if (l >= NPK_ISA_AVX2) return NPK_Q4_AVX2;
#endif
    return NPK_Q4_C;
}

const char *npk_q4_isa_name(npk_q4_isa isa) {
    switch (isa) {
    case NPK_Q4_C: return "c";
    case NPK_Q4_AVX2: return "avx2";
    case NPK_Q4_AVX512: return "avx512";
    }
    return "?";
}

/* ---- weights ----------------------------------------------------------------- */

void npk_q4_mat_free(npk_q4_mat *m) {
    if (!m) return;
    free(m->w);
    free(m->sm);
    free(m->sx);
    free(m->cg);
    free(m->sxs);
    free(m);
}

size_t npk_q4_mat_bytes(const npk_q4_mat *m) { return m ? m->bytes : 0; }

/* Index of weight (n, k) in m->w. */
static inline size_t widx(const npk_q4_mat *m, uint32_t n, uint32_t k) {
    return (size_t)(n / LANES) * m->Kp * LANES + (size_t)(k >> 1) * (2 * LANES) + (size_t)(n % LANES) * 2 + (k & 1);
}

int npk_q4_mat_new(const uint8_t *w4, const uint8_t *scales, uint32_t N, uint32_t K, uint32_t G, npk_q4_mat **out) {
    return npk_q4_mat_new_poll(w4, scales, N, K, G, NULL, NULL, out);
}

int npk_q4_mat_new_poll(const uint8_t *w4, const uint8_t *scales, uint32_t N, uint32_t K, uint32_t G,
                        int (*stop)(void *), void *ctx, npk_q4_mat **out) {
    *out = NULL;
    if (!N || !K) return npk_err(NPK_EINVAL, "empty INT4 matrix %ux%u", N, K);
    if (!G || G > K) G = K;
    npk_q4_mat *m = calloc(1, sizeof *m);
    if (!m) return npk_err(NPK_ENOMEM, "out of memory");
    m->N = N;
    m->K = K;
    m->G = G;
    m->ng = (K + G - 1) / G;
    m->nch = (K + CH - 1) / CH;
    m->Kp = m->nch * CH;
    m->nb = (N + LANES - 1) / LANES;
    m->Np = m->nb * LANES;
    m->chunked = G == K || G % CH == 0;
    if (N == 1 && !scales) { /* a row of ones (every nibble 1) needs none of the arrays: npk_q4_gemv sums */
        uint32_t k = 0;
        while (k < K && ((w4[k / 2] >> (4 * (k & 1))) & 0xf) == 1) k++;
        if (k == K) {
            m->ones = 1;
            m->bytes = sizeof *m;
            *out = m;
            return 0;
        }
    }
    size_t nw = (size_t)m->nb * m->Kp * LANES, ns = (size_t)m->ng * m->Np;
    m->w = calloc(nw, 1);
    m->sm = calloc(ns + 8, sizeof *m->sm); /* 8 more: row_avx2 reads the odd outputs' significands from sm + 1 */
    m->sx = calloc(ns, sizeof *m->sx);
    m->cg = calloc(m->nch, sizeof *m->cg);
    if (!m->w || !m->sm || !m->sx || !m->cg) {
        npk_q4_mat_free(m);
        return npk_err(NPK_ENOMEM, "out of memory for a %ux%u INT4 matrix", N, K);
    }
    m->bytes = sizeof *m + nw + ns * (sizeof *m->sm + sizeof *m->sx) + 8 * sizeof *m->sm + m->nch * sizeof *m->cg;
    for (uint32_t c = 0; c < m->nch; c++) m->cg[c] = c * CH / G;
    for (uint32_t n = 0; n < N; n++) {
        if (stop && n % 256 == 0 && n && stop(ctx)) { /* 256 rows: at most 2^24 weights between checks */
            npk_q4_mat_free(m);
            return 1;
        }
        int8_t *wb = m->w + widx(m, n, 0);
        uint32_t k = 0;
        if (K % 2 == 0) { /* the row starts on a byte: each byte is a pair (k, k + 1), its two stores */
            const uint8_t *src = w4 + (uint64_t)n * K / 2;
            for (; k < K; k += 2) {
                uint8_t v = src[k / 2];
                wb[(size_t)k * LANES] = (int8_t)(((v & 0xf) ^ 8) - 8);
                wb[(size_t)k * LANES + 1] = (int8_t)(((v >> 4) ^ 8) - 8);
            }
        }
        for (; k < K; k++) {
            uint64_t i = (uint64_t)n * K + k;
            int v = (w4[i / 2] >> (4 * (i & 1))) & 0xf;
            wb[(size_t)(k >> 1) * (2 * LANES) + (k & 1)] = (int8_t)((v ^ 8) - 8);
        }
    }
    int fast = m->chunked, lo = 1 << 20, hi = -(1 << 20);
    for (uint32_t n = 0; n < N; n++)
        for (uint32_t g = 0; g < m->ng; g++) {
            uint32_t u = 0x3f800000u; /* 1.0f */
            if (scales) {
                const uint8_t *q = scales + 4 * ((size_t)n * m->ng + g);
                u = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
            }
            unsigned es = (u >> 23) & 0xffu;
            uint32_t fr = u & 0x7fffffu;
            int32_t sm;
            int sx;
            if (es == 0xff) {
                fast = 0;
                sm = u >> 31 ? -1 : 1;
                sx = fr ? SX_NAN : SX_INF;
            } else {
                int32_t ms = (int32_t)(fr | (es ? 0x800000u : 0));
                sm = u >> 31 ? -ms : ms;
                sx = es ? (int)es - 150 : -149;
                if (ms) {
                    if (sx < lo) lo = sx;
                    if (sx > hi) hi = sx;
                }
            }
            m->sm[(size_t)g * m->Np + n] = sm;
            m->sx[(size_t)g * m->Np + n] = (int16_t)sx;
        }
    if (hi < lo) lo = hi = 0;
    m->sxmin = lo;
    m->sxmax = hi;
    /* zero scales and padding lanes: an exponent inside the range keeps shifts small */
    for (size_t i = 0; i < ns; i++)
        if (!m->sm[i]) m->sx[i] = (int16_t)lo;
    for (uint32_t g = 0; g < m->ng; g++)
        for (uint32_t n = N; n < m->Np; n++) m->sx[(size_t)g * m->Np + n] = (int16_t)lo;
    m->fast = fast;
#ifdef Q4_X86
    /* row_avx2's view of the exponents: each eight outputs' as the even four, then the odd four,
     * in the 64-bit lanes vpsllvq takes (the significands need no copy: vpmuldq reads the even
     * lanes of sm, and of sm + 1 for the odd ones) */
    m->sxs = malloc(ns * sizeof *m->sxs);
    if (!m->sxs) {
        npk_q4_mat_free(m);
        return npk_err(NPK_ENOMEM, "out of memory for a %ux%u INT4 matrix", N, K);
    }
    m->bytes += ns * sizeof *m->sxs;
    for (size_t i0 = 0; i0 < ns; i0 += 8) /* Np is a multiple of 16 */
        for (int j = 0; j < 4; j++) {
            m->sxs[i0 + (size_t)j] = m->sx[i0 + 2 * (size_t)j];
            m->sxs[i0 + 4 + (size_t)j] = m->sx[i0 + 2 * (size_t)j + 1];
        }
#endif
    *out = m;
    return 0;
}

static float scale_of(const npk_q4_mat *m, uint32_t n, uint32_t g) {
    int32_t sm = m->sm[(size_t)g * m->Np + n];
    int sx = m->sx[(size_t)g * m->Np + n];
    if (sx == SX_NAN) return NAN;
    if (sx == SX_INF) return sm < 0 ? -INFINITY : INFINITY;
    return ldexpf((float)sm, sx); /* exact: the scale it came from (up to the sign of a zero) */
}

static int weight(const npk_q4_mat *m, uint32_t n, uint32_t k) {
    return m->w[widx(m, n, k)];
}

/* ---- workspace ----------------------------------------------------------------- */

npk_q4_ws *npk_q4_ws_new(void) { return calloc(1, sizeof(npk_q4_ws)); }

void npk_q4_ws_free(npk_q4_ws *ws) {
    if (!ws) return;
    free(ws->xa);
    free(ws->xp);
    free(ws->ce);
    free(ws->nz);
    free(ws->nz16);
    free(ws->nz32);
    free(ws->lo);
    free(ws->hi);
    free(ws);
}

static int ws_fit(npk_q4_ws *ws, const npk_q4_mat *m) {
    if (ws->kcap < m->Kp) {
        int32_t *xa = realloc(ws->xa, m->Kp * sizeof *xa);
        if (xa) ws->xa = xa;
        int32_t *xp = realloc(ws->xp, m->Kp / 2 * sizeof *xp);
        if (xp) ws->xp = xp;
        if (!xa || !xp) return -1;
        ws->kcap = m->Kp;
    }
    if (ws->ccap < m->nch) {
        int32_t *ce = realloc(ws->ce, m->nch * sizeof *ce);
        if (ce) ws->ce = ce;
        uint32_t *nz = realloc(ws->nz, m->nch * sizeof *nz);
        if (nz) ws->nz = nz;
        uint32_t *n16 = realloc(ws->nz16, m->nch * sizeof *n16);
        if (n16) ws->nz16 = n16;
        uint32_t *n32 = realloc(ws->nz32, m->nch * sizeof *n32);
        if (n32) ws->nz32 = n32;
        if (!ce || !nz || !n16 || !n32) return -1;
        ws->ccap = m->nch;
    }
    if (ws->ncap < m->Np) {
        uint64_t *lo = realloc(ws->lo, m->Np * sizeof *lo);
        if (lo) ws->lo = lo;
        uint64_t *hi = realloc(ws->hi, m->Np * sizeof *hi);
        if (hi) ws->hi = hi;
        if (!lo || !hi) return -1;
        ws->ncap = m->Np;
    }
    return 0;
}

/* ---- activations ----------------------------------------------------------------- */

/* The exponent of a finite BF16's significand unit (0 for zeros, not used). */
static int unit_exp(uint16_t b) {
    unsigned ex = (b >> 7) & 0xffu;
    return ex ? (int)ex - 134 : -133;
}

typedef struct {
    int ok;            /* every chunk finite with span <= CSPAN */
    uint32_t nnz;      /* narrow chunks holding a nonzero value */
    uint32_t n16, n32; /* (xsplit_avx2) of them in ws->nz16 and ws->nz32 */
    uint32_t nwide;    /* finite chunks spanning more than CSPAN */
    uint32_t ninf;     /* chunks holding an infinity or NaN */
    int cemin, cemax, chimax; /* chimax: of the narrow and the wide chunks */
    int wlo;           /* the least unit exponent in the wide chunks */
} xrow;

/* Chunk c of x into ws->xa / ws->ce (and ws->nz when it is narrow and nonzero). */
static void xchunk(const npk_q4_mat *m, const uint16_t *x, npk_q4_ws *ws, xrow *r, uint32_t c) {
    uint32_t k0 = c * CH, k1 = k0 + CH < m->K ? k0 + CH : m->K;
    int lo = 1 << 20, hi = -(1 << 20), ok = 1;
    for (uint32_t k = k0; k < k1; k++) {
        uint16_t b = x[k];
        if ((b & 0x7f80u) == 0x7f80u) ok = 0;
        if (!(b & 0x7fffu)) continue;
        int e = unit_exp(b);
        if (e < lo) lo = e;
        if (e > hi) hi = e;
    }
    int32_t *xa = ws->xa + k0;
    ws->ce[c] = lo;
    if (!ok || (hi >= lo && hi - lo > CSPAN)) {
        if (!ok) r->ninf++;
        else { /* wide: its products one at a time (row_wide) */
            r->nwide++;
            if (lo < r->wlo) r->wlo = lo;
            if (hi > r->chimax) r->chimax = hi;
        }
        r->ok = 0;
        ok = 0;
        ws->ce[c] = CE_BAD;
    }
    for (uint32_t k = k0; k < k0 + CH; k++) {
        int32_t v = 0;
        if (ok && k < k1 && (x[k] & 0x7fffu)) {
            int32_t mant = (int32_t)((x[k] & 0x7fu) | ((x[k] & 0x7f80u) ? 0x80u : 0));
            v = mant << (unit_exp(x[k]) - lo);
            if (x[k] & 0x8000u) v = -v;
        }
        xa[k - k0] = v;
    }
    if (!ok || hi < lo) return; /* the general path, or all zeros */
    ws->nz[r->nnz++] = c;
    if (lo < r->cemin) r->cemin = lo;
    if (lo > r->cemax) r->cemax = lo;
    if (hi > r->chimax) r->chimax = hi;
}

static void xrow_init(xrow *r) {
    r->ok = 1;
    r->nnz = r->n16 = r->n32 = r->nwide = r->ninf = 0;
    r->cemin = r->wlo = 1 << 20;
    r->cemax = r->chimax = -(1 << 20);
}

#ifdef Q4_X86
/* xchunk, a chunk it adds to ws->nz also into ws->nz32. */
static void xchunk32(const npk_q4_mat *m, const uint16_t *x, npk_q4_ws *ws, xrow *r, uint32_t c) {
    uint32_t n = r->nnz;
    xchunk(m, x, ws, r, c);
    if (r->nnz > n) ws->nz32[r->n32++] = c;
}

NPK_TARGET_AVX2 static inline int hmin8(__m256i a) {
    a = _mm256_min_epi32(a, _mm256_permute2x128_si256(a, a, 1));
    a = _mm256_min_epi32(a, _mm256_shuffle_epi32(a, 0x4e));
    a = _mm256_min_epi32(a, _mm256_shuffle_epi32(a, 0xb1));
    return _mm256_cvtsi256_si32(a);
}

/* xchunk for whole chunks of finite values spanning at most CSPAN binades,
 * eight lanes at once; any other chunk goes to xchunk. */
NPK_TARGET_AVX2 static void xsplit_avx2(const npk_q4_mat *m, const uint16_t *x, npk_q4_ws *ws, xrow *r) {
    const __m256i big = _mm256_set1_epi32(1 << 20), ff = _mm256_set1_epi32(0xff), one = _mm256_set1_epi32(1),
                  b134 = _mm256_set1_epi32(134), m7f = _mm256_set1_epi32(0x7f), m7fff = _mm256_set1_epi32(0x7fff),
                  zero = _mm256_setzero_si256();
    const uint32_t whole = m->K / CH;
    for (uint32_t c = 0; c < m->nch; c++) {
        if (c >= whole) {
            xchunk32(m, x, ws, r, c);
            continue;
        }
        __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + (size_t)c * CH)));
        __m256i ex = _mm256_and_si256(_mm256_srli_epi32(v, 7), ff);
        __m256i nz = _mm256_cmpgt_epi32(_mm256_and_si256(v, m7fff), zero);
        if (!_mm256_testz_si256(_mm256_cmpeq_epi32(ex, ff), _mm256_cmpeq_epi32(ex, ff))) {
            xchunk32(m, x, ws, r, c); /* an infinity or NaN */
            continue;
        }
        __m256i e = _mm256_sub_epi32(_mm256_max_epi32(ex, one), b134);
        int lo = hmin8(_mm256_blendv_epi8(big, e, nz));
        int hi = -hmin8(_mm256_blendv_epi8(big, _mm256_sub_epi32(zero, e), nz));
        int32_t *xa = ws->xa + (size_t)c * CH;
        if (hi < lo) { /* all zeros */
            ws->ce[c] = lo;
            _mm256_storeu_si256((__m256i *)xa, zero);
            continue;
        }
        if (hi - lo > CSPAN) {
            xchunk32(m, x, ws, r, c);
            continue;
        }
        __m256i mant = _mm256_or_si256(_mm256_and_si256(v, m7f),
                                       _mm256_and_si256(_mm256_cmpgt_epi32(ex, zero), _mm256_set1_epi32(0x80)));
        __m256i val = _mm256_sllv_epi32(mant, _mm256_sub_epi32(e, _mm256_set1_epi32(lo)));
        __m256i sg = _mm256_srai_epi32(_mm256_slli_epi32(v, 16), 31);
        val = _mm256_and_si256(_mm256_sub_epi32(_mm256_xor_si256(val, sg), sg), nz);
        _mm256_storeu_si256((__m256i *)xa, val);
        if (hi - lo <= 7) { /* |xa| <= 255 * 2^7: the int16 pairs too */
            _mm_storeu_si128((__m128i *)(ws->xp + (size_t)c * (CH / 2)),
                             _mm_packs_epi32(_mm256_castsi256_si128(val), _mm256_extracti128_si256(val, 1)));
            ws->nz16[r->n16++] = c;
        } else
            ws->nz32[r->n32++] = c;
        ws->ce[c] = lo;
        ws->nz[r->nnz++] = c;
        if (lo < r->cemin) r->cemin = lo;
        if (lo > r->cemax) r->cemax = lo;
        if (hi > r->chimax) r->chimax = hi;
    }
}
#endif

/* x[0..K) into ws->xa / ws->ce / ws->nz. */
static void xsplit(const npk_q4_mat *m, const uint16_t *x, npk_q4_ws *ws, xrow *r, int isa) {
    xrow_init(r);
#ifdef Q4_X86
    if (isa >= NPK_Q4_AVX2) {
        xsplit_avx2(m, x, ws, r);
        return;
    }
#else
    (void)isa;
#endif
    for (uint32_t c = 0; c < m->nch; c++) xchunk(m, x, ws, r, c);
}

/* ---- 128-bit accumulation --------------------------------------------------------- */

/* (hi:lo) += T * 2^sh, 0 <= sh < 128, two's complement (the caller bounds the sum). */
static inline void add128(uint64_t *lo, uint64_t *hi, int64_t T, int sh) {
    uint64_t u = (uint64_t)T, sign = T < 0 ? ~(uint64_t)0 : 0, al, ah;
    if (sh == 0) {
        al = u;
        ah = sign;
    } else if (sh < 64) {
        al = u << sh;
        ah = (u >> (64 - sh)) | (sign << sh);
    } else {
        al = 0;
        ah = u << (sh - 64);
    }
    *lo += al;
    *hi += ah + (*lo < al);
}

/* ---- rounding ------------------------------------------------------------------------ */

/* sign * n * 2^qe as BF16, n < 512 already rounded to at most 8 bits (or 256
 * after a carry), qe >= -133 (n < 128 only at qe == -133: a subnormal). */
static inline uint16_t encode8(uint16_t s, uint64_t n, int qe) {
    if (n >= 256) {
        n >>= 1;
        qe++;
    }
    if (n < 128) return (uint16_t)(s | n);
    int biased = qe + 134;
    if (biased >= 255) return s | 0x7f80u;
    return (uint16_t)(s | (unsigned)biased << 7 | (n & 0x7fu));
}

static inline int top_bit(uint64_t v) { /* v != 0 */
#if defined(__GNUC__)
    return 63 - __builtin_clzll(v);
#else
    int t = 0;
    while (v >>= 1) t++;
    return t;
#endif
}

static inline uint16_t round128(int neg, uint64_t hi, uint64_t lo, int e) {
    uint16_t s = neg ? 0x8000u : 0;
    if (hi) { /* keep the top 64 bits, the rest as a sticky bit 0 (far below the guard) */
        int sh = top_bit(hi) + 1;
        uint64_t out = sh < 64 ? lo << (64 - sh) : lo;
        lo = (sh < 64 ? hi << (64 - sh) | lo >> sh : hi) | (out != 0);
        e += sh;
    }
    if (!lo) return 0;
    int top = top_bit(lo), E = top + e;
    if (E > 127) return s | 0x7f80u;
    int qe = E - 7 < -133 ? -133 : E - 7, d = qe - e;
    if (d <= 0) return encode8(s, lo << -d, qe); /* exact: at most 8 bits */
    if (d >= 64) return d == 64 && lo > 1ull << 63 ? encode8(s, 1, qe) : s; /* below the least subnormal */
    uint64_t n = lo >> d, rem = lo & ((2ull << (d - 1)) - 1), half = 1ull << (d - 1);
    if (rem > half || (rem == half && (n & 1))) n++;
    return encode8(s, n, qe);
}

uint16_t npk_bf16_round_u128(int neg, uint64_t hi, uint64_t lo, int e) { return round128(neg, hi, lo, e); }

/* ---- exact BF16 sums ------------------------------------------------------------------ */

/* Widen the exponent range [*lo, *hi] by the nonzero finite b; 0 if b is inf or NaN. */
static inline int sum_range(uint16_t b, int *lo, int *hi) {
    if ((b & 0x7f80u) == 0x7f80u) return 0;
    if (b & 0x7fffu) {
        int e = unit_exp(b);
        if (e < *lo) *lo = e;
        if (e > *hi) *hi = e;
    }
    return 1;
}

static inline int64_t signed_mant(uint16_t b) {
    int64_t mant = (int64_t)((b & 0x7fu) | ((b & 0x7f80u) ? 0x80u : 0));
    return b & 0x8000u ? -mant : mant;
}

#ifdef Q4_X86
/* sum_range over x[0..n) sixteen at a time: *lo, *hi widened by the nonzero
 * finite elements' unit exponents; 0 if any is an infinity or NaN. Returns
 * the count done (a multiple of 16); the caller does the rest. */
NPK_TARGET_AVX2 static size_t range16_avx2(const uint16_t *x, size_t n, int *lo, int *hi, int *ok) {
    const __m256i ff = _mm256_set1_epi16(0xff), one = _mm256_set1_epi16(1), m7fff = _mm256_set1_epi16(0x7fff),
                  big = _mm256_set1_epi16(0x7fff), zero = _mm256_setzero_si256();
    __m256i mn = big, mx = zero, bad = zero;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(x + i));
        __m256i ex = _mm256_and_si256(_mm256_srli_epi16(v, 7), ff);
        bad = _mm256_or_si256(bad, _mm256_cmpeq_epi16(ex, ff));
        __m256i z = _mm256_cmpeq_epi16(_mm256_and_si256(v, m7fff), zero); /* zeros: no exponent */
        __m256i e = _mm256_max_epu16(ex, one);                            /* unit exponent + 134 */
        mn = _mm256_min_epu16(mn, _mm256_blendv_epi8(e, big, z));
        mx = _mm256_max_epu16(mx, _mm256_andnot_si256(z, e));
    }
    if (!_mm256_testz_si256(bad, bad)) *ok = 0;
    /* the lanes' least and greatest: minpos of the minima and of 0x7fff minus the maxima */
    __m128i m8 = _mm_min_epu16(_mm256_castsi256_si128(mn), _mm256_extracti128_si256(mn, 1));
    __m128i x8 = _mm_max_epu16(_mm256_castsi256_si128(mx), _mm256_extracti128_si256(mx, 1));
    int a = _mm_cvtsi128_si32(_mm_minpos_epu16(m8)) & 0xffff;
    int b = 0x7fff - (_mm_cvtsi128_si32(_mm_minpos_epu16(_mm_sub_epi16(_mm_set1_epi16(0x7fff), x8))) & 0xffff);
    if (a != 0x7fff && a - 134 < *lo) *lo = a - 134;
    if (b && b - 134 > *hi) *hi = b - 134;
    return i;
}

/* The 128-bit sum (*H:*L) += sum x[i] * 2^(unit_exp - lo) over x[0..n) four
 * at a time, each term's shift in 0..126 (the caller checked the range and
 * bounds the sum): the significand's two 64-bit words at its shift by
 * variable shifts (a count of 64 or more gives 0), per lane a two's
 * complement 128-bit sum, the four added at the end. Returns the count done. */
NPK_TARGET_AVX2 static size_t sum4_avx2(const uint16_t *x, size_t n, int lo, uint64_t *L, uint64_t *H) {
    const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi64x(1), ff = _mm256_set1_epi64x(0xff),
                  c64 = _mm256_set1_epi64x(64), flip = _mm256_set1_epi64x((long long)0x8000000000000000ull),
                  base = _mm256_set1_epi64x(134 + lo);
    __m256i al = zero, ah = zero;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i v = _mm256_cvtepu16_epi64(_mm_loadl_epi64((const __m128i *)(x + i)));
        __m256i ex = _mm256_and_si256(_mm256_srli_epi64(v, 7), ff);
        __m256i mant = _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi64x(0x7f)),
                                       _mm256_andnot_si256(_mm256_cmpeq_epi64(ex, zero), _mm256_set1_epi64x(0x80)));
        __m256i sg = _mm256_sub_epi64(zero, _mm256_and_si256(_mm256_srli_epi64(v, 15), one)); /* -1 if negative */
        __m256i T = _mm256_sub_epi64(_mm256_xor_si256(mant, sg), sg);
        __m256i sh = _mm256_sub_epi64(_mm256_max_epi32(ex, one), base); /* zeros: any shift, T = 0 */
        __m256i a = _mm256_sllv_epi64(T, sh);
        __m256i neg = _mm256_cmpgt_epi64(zero, T); /* not sg: -0 is no negative term */
        __m256i h = _mm256_or_si256(_mm256_or_si256(_mm256_srlv_epi64(T, _mm256_sub_epi64(c64, sh)), _mm256_sllv_epi64(neg, sh)),
                                    _mm256_sllv_epi64(T, _mm256_sub_epi64(sh, c64)));
        __m256i s = _mm256_add_epi64(al, a);
        __m256i carry = _mm256_cmpgt_epi64(_mm256_xor_si256(a, flip), _mm256_xor_si256(s, flip)); /* s <u a: -1 */
        al = s;
        ah = _mm256_sub_epi64(_mm256_add_epi64(ah, h), carry);
    }
    uint64_t l[4], h[4];
    _mm256_storeu_si256((__m256i *)l, al);
    _mm256_storeu_si256((__m256i *)h, ah);
    for (int k = 0; k < 4; k++) {
        *L += l[k];
        *H += h[k] + (*L < l[k]);
    }
    return i;
}
#endif

#ifdef Q4_X86
/* sum x[i] * 2^(unit_exp - lo) over x[0..n) sixteen at a time into *S when
 * every partial sum provably stays below 2^62 (the caller's bound: the terms'
 * shifts at most 54): the significands signed in 16-bit lanes, each group of
 * four widened to int64 at its shift. Returns the count done. */
NPK_TARGET_AVX2 static size_t sum16_fit_avx2(const uint16_t *x, size_t n, int lo, int64_t *S) {
    const __m256i zero = _mm256_setzero_si256(), base = _mm256_set1_epi16((short)(134 + lo));
    __m256i a0 = zero, a1 = zero, a2 = zero, a3 = zero;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(x + i));
        __m256i ex = _mm256_and_si256(_mm256_srli_epi16(v, 7), _mm256_set1_epi16(0xff));
        __m256i mant = _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi16(0x7f)),
                                       _mm256_andnot_si256(_mm256_cmpeq_epi16(ex, zero), _mm256_set1_epi16(0x80)));
        __m256i sg = _mm256_srai_epi16(v, 15);
        __m256i T = _mm256_sub_epi16(_mm256_xor_si256(mant, sg), sg);
        /* a zero's shift may be negative: its term is 0 either way */
        __m256i sh = _mm256_sub_epi16(_mm256_max_epu16(ex, _mm256_set1_epi16(1)), base);
        __m128i tl = _mm256_castsi256_si128(T), th = _mm256_extracti128_si256(T, 1);
        __m128i sl = _mm256_castsi256_si128(sh), shh = _mm256_extracti128_si256(sh, 1);
        a0 = _mm256_add_epi64(a0, _mm256_sllv_epi64(_mm256_cvtepi16_epi64(tl), _mm256_cvtepi16_epi64(sl)));
        a1 = _mm256_add_epi64(a1, _mm256_sllv_epi64(_mm256_cvtepi16_epi64(_mm_srli_si128(tl, 8)),
                                                    _mm256_cvtepi16_epi64(_mm_srli_si128(sl, 8))));
        a2 = _mm256_add_epi64(a2, _mm256_sllv_epi64(_mm256_cvtepi16_epi64(th), _mm256_cvtepi16_epi64(shh)));
        a3 = _mm256_add_epi64(a3, _mm256_sllv_epi64(_mm256_cvtepi16_epi64(_mm_srli_si128(th, 8)),
                                                    _mm256_cvtepi16_epi64(_mm_srli_si128(shh, 8))));
    }
    __m256i a = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
    __m128i h = _mm_add_epi64(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    *S += _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
    return i;
}
#endif

/* w[0..nw) += v * 2^sh, two's complement (v's sign extended through the top word; the caller bounds the sum). */
static void add_wide(uint64_t *w, int nw, int64_t v, int sh) {
    int q = sh >> 6, r = sh & 63;
    uint64_t u = (uint64_t)v, s = v < 0 ? ~(uint64_t)0 : 0, a0 = u << r, a1 = r ? (u >> (64 - r)) | (s << r) : s;
    uint64_t c = (w[q] += a0) < a0;
    for (int i = q + 1; i < nw; i++) {
        uint64_t a = i == q + 1 ? a1 : s, t = w[i] + a;
        uint64_t c1 = t < a;
        t += c;
        c1 |= t < c;
        w[i] = t;
        c = c1;
    }
}

#define SUM_WORDS 8 /* 512 bits: the least to the largest finite BF16 term with 2^23 of them fit */

/* npk_bf16_sum of finite terms whose exponents [lo, hi] span more than the 128 bits, n < 2^23: the
 * significands summed per bin of 32 unit exponents in int64 (each term below 2^39, so the n of them
 * stay below 2^62), the bins (and n times sub) added into a 512-bit integer, rounded once. */
static uint16_t sum_binned(const uint16_t *x, size_t n, const uint16_t *first, const uint16_t *sub, int lo, int hi) {
    int64_t bin[(255 + 16) / 32 + 2] = {0};
    uint64_t w[SUM_WORDS] = {0};
    for (size_t i = 0; i < n; i++)
        if (x[i] & 0x7fffu) {
            int e = unit_exp(x[i]) - lo;
            bin[e >> 5] += signed_mant(x[i]) * ((int64_t)1 << (e & 31));
        }
    for (int b = 0; b <= (hi - lo) >> 5; b++)
        if (bin[b]) add_wide(w, SUM_WORDS, bin[b], 32 * b);
    if (first && (*first & 0x7fffu)) add_wide(w, SUM_WORDS, signed_mant(*first), unit_exp(*first) - lo);
    if (sub && (*sub & 0x7fffu)) add_wide(w, SUM_WORDS, -signed_mant(*sub) * (int64_t)n, unit_exp(*sub) - lo);
    int neg = w[SUM_WORDS - 1] >> 63;
    if (neg) { /* the magnitude */
        uint64_t c = 1;
        for (int i = 0; i < SUM_WORDS; i++) {
            w[i] = ~w[i] + c;
            c = c && w[i] == 0;
        }
    }
    int t = SUM_WORDS - 1;
    while (t > 0 && !w[t]) t--;
    if (t == 0) return round128(neg, 0, w[0], lo);
    uint64_t sticky = 0; /* the words below the top two only as a sticky bit (far below the rounding) */
    for (int i = 0; i < t - 1; i++) sticky |= w[i];
    return round128(neg, w[t], w[t - 1] | (sticky != 0), lo + 64 * (t - 1));
}

uint16_t npk_bf16_sum(const uint16_t *x, size_t n, const uint16_t *first, const uint16_t *sub) {
    /* one finite term alone (pccx's findemax loads): itself, exactly; a zero sums to +0 (as round128) */
    if (n == 1 && !first && !sub && (x[0] & 0x7f80u) != 0x7f80u) return (x[0] & 0x7fffu) ? x[0] : 0;
    /* the terms' exponents: all finite and within the 128 bits, else the accumulator */
    int lo = 1 << 20, hi = -(1 << 20), ok = (uint64_t)n < (1ull << 40);
    if (first) ok &= sum_range(*first, &lo, &hi);
    if (sub) ok &= sum_range(*sub, &lo, &hi);
    size_t i0 = 0;
#ifdef Q4_X86
    const int avx2 = npk_isa_active() >= NPK_ISA_AVX2;
    /* the last n % 16 terms zero-padded to sixteen: a zero widens no range and adds nothing to a sum */
    const size_t nf = n & ~(size_t)15;
    uint16_t pad[16] = {0};
    if (avx2) {
        range16_avx2(x, nf, &lo, &hi, &ok);
        if (n > nf) {
            memcpy(pad, x + nf, (n - nf) * sizeof *pad);
            range16_avx2(pad, 16, &lo, &hi, &ok);
        }
        i0 = n;
    }
#endif
    for (size_t i = i0; i < n; i++) ok &= sum_range(x[i], &lo, &hi);
    int lg = ok ? top_bit(2 * (uint64_t)n + 1) + 1 : 64; /* the least with 2^lg >= 2n + 2 (n < 2^40) */
    if (ok && hi >= lo && hi + 8 + lg - lo > 126 && (uint64_t)n < (1ull << 23))
        return sum_binned(x, n, first, sub, lo, hi);
    if (!ok || (hi >= lo && hi + 8 + lg - lo > 126)) {
        npk_bf16_xacc acc;
        npk_bf16_xacc_clear(&acc);
        if (first) npk_bf16_xacc_add(&acc, *first);
        for (size_t i = 0; i < n; i++) {
            npk_bf16_xacc_add(&acc, x[i]);
            if (sub) npk_bf16_xacc_sub(&acc, *sub);
        }
        return npk_bf16_xacc_round(&acc);
    }
    if (hi < lo) return 0;
    uint64_t L = 0, H = 0;
    if (first && (*first & 0x7fffu)) add128(&L, &H, signed_mant(*first), unit_exp(*first) - lo);
    if (sub && (*sub & 0x7fffu)) add128(&L, &H, -signed_mant(*sub) * (int64_t)n, unit_exp(*sub) - lo); /* n < 2^40 */
    i0 = 0;
#ifdef Q4_X86
    if (avx2 && hi + 8 + lg - lo <= 62) { /* every partial sum below 2^62: int64 */
        int64_t S = 0;
        sum16_fit_avx2(x, nf, lo, &S);
        if (n > nf) sum16_fit_avx2(pad, 16, lo, &S);
        add128(&L, &H, S, 0);
        i0 = n;
    } else if (avx2)
        i0 = sum4_avx2(x, n, lo, &L, &H);
#endif
    for (size_t i = i0; i < n; i++)
        if (x[i] & 0x7fffu) add128(&L, &H, signed_mant(x[i]), unit_exp(x[i]) - lo);
    int neg = H >> 63;
    if (neg) {
        L = ~L + 1;
        H = ~H + (L == 0);
    }
    return round128(neg, H, L, lo);
}

/* ---- the row kernels: every nonzero chunk into ws->lo/hi[0..Np) ------------------------ */

/* The magnitude of the 128-bit two's complement sum (hi:lo) * 2^base as BF16. */
static inline uint16_t round_sum(uint64_t lo, uint64_t hi, int base) {
    int neg = hi >> 63;
    if (neg) {
        lo = ~lo + 1;
        hi = ~hi + (lo == 0);
    }
    return round128(neg, hi, lo, base);
}

static void row_c(const npk_q4_mat *m, const npk_q4_ws *ws, const xrow *r, int base, uint32_t b0, uint32_t b1) {
    for (uint32_t b = b0; b < b1; b++) {
        const int8_t *wb = m->w + (size_t)b * m->Kp * LANES;
        uint64_t *lo = ws->lo + (size_t)b * LANES, *hi = ws->hi + (size_t)b * LANES;
        for (uint32_t i = 0; i < r->nnz; i++) {
            uint32_t c = ws->nz[i], g = m->cg[c];
            const int8_t *wc = wb + (size_t)c * CH * LANES;
            const int32_t *xc = ws->xa + (size_t)c * CH;
            int32_t S[LANES] = {0};
            for (int k = 0; k < CH; k++) {
                int32_t xv = xc[k];
                if (!xv) continue;
                const int8_t *wk = wc + (k >> 1) * (2 * LANES) + (k & 1);
                for (int j = 0; j < LANES; j++) S[j] += wk[2 * j] * xv;
            }
            const int32_t *sm = m->sm + (size_t)g * m->Np + (size_t)b * LANES;
            const int16_t *sx = m->sx + (size_t)g * m->Np + (size_t)b * LANES;
            int d = ws->ce[c] - base;
            for (int j = 0; j < LANES; j++)
                if (S[j]) add128(&lo[j], &hi[j], (int64_t)S[j] * sm[j], d + sx[j]);
        }
    }
}

#ifdef Q4_X86

/* Eight 128-bit two's complement sums (hi:lo) * 2^e rounded to BF16 as
 * round128 does: the magnitude normalised to 64 bits with a sticky bit,
 * then one RNE rounding at the BF16 unit (subnormals, overflow to inf). */
NPK_TARGET_AVX512 static __m512i round8_avx512(__m512i lo, __m512i hi, int e) {
    const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi64(1), c64 = _mm512_set1_epi64(64);
    __mmask8 neg = _mm512_cmplt_epi64_mask(hi, zero);
    __m512i nlo = _mm512_sub_epi64(zero, lo);
    __m512i nhi = _mm512_sub_epi64(_mm512_sub_epi64(zero, hi), _mm512_maskz_mov_epi64(_mm512_cmpneq_epi64_mask(lo, zero), one));
    lo = _mm512_mask_mov_epi64(lo, neg, nlo);
    hi = _mm512_mask_mov_epi64(hi, neg, nhi);
    __m512i sh = _mm512_sub_epi64(c64, _mm512_lzcnt_epi64(hi)); /* 0..64: bits of hi */
    __m512i csh = _mm512_sub_epi64(c64, sh);
    __m512i v = _mm512_or_si512(_mm512_sllv_epi64(hi, csh), _mm512_srlv_epi64(lo, sh));
    __mmask8 st = _mm512_mask_cmpneq_epi64_mask(_mm512_cmpneq_epi64_mask(sh, zero), _mm512_sllv_epi64(lo, csh), zero);
    v = _mm512_mask_or_epi64(v, st, v, one);
    __m512i ev = _mm512_add_epi64(sh, _mm512_set1_epi64(e));
    __mmask8 nz = _mm512_cmpneq_epi64_mask(v, zero);
    __m512i top = _mm512_sub_epi64(_mm512_set1_epi64(63), _mm512_lzcnt_epi64(v));
    __m512i E = _mm512_add_epi64(top, ev);
    __m512i qe = _mm512_max_epi64(_mm512_sub_epi64(E, _mm512_set1_epi64(7)), _mm512_set1_epi64(-133));
    __m512i d = _mm512_sub_epi64(qe, ev); /* bits dropped (< 0: exact, shift left) */
    __m512i n = _mm512_or_si512(_mm512_srlv_epi64(v, d), _mm512_sllv_epi64(v, _mm512_sub_epi64(zero, d)));
    __m512i rem = _mm512_sub_epi64(v, _mm512_sllv_epi64(n, d));
    __m512i half = _mm512_sllv_epi64(one, _mm512_sub_epi64(d, one));
    __mmask8 in = _mm512_cmpgt_epi64_mask(d, zero) & _mm512_cmple_epi64_mask(d, c64);
    __mmask8 up = _mm512_cmpgt_epu64_mask(rem, half) |
                  (_mm512_cmpeq_epi64_mask(rem, half) & _mm512_test_epi64_mask(n, one));
    n = _mm512_mask_add_epi64(n, in & up, n, one);
    __mmask8 carry = _mm512_cmpge_epu64_mask(n, _mm512_set1_epi64(256));
    n = _mm512_mask_srli_epi64(n, carry, n, 1);
    qe = _mm512_mask_add_epi64(qe, carry, qe, one);
    __m512i biased = _mm512_add_epi64(qe, _mm512_set1_epi64(134));
    __m512i r = _mm512_or_si512(_mm512_slli_epi64(biased, 7), _mm512_and_si512(n, _mm512_set1_epi64(0x7f)));
    r = _mm512_mask_mov_epi64(r, _mm512_cmplt_epu64_mask(n, _mm512_set1_epi64(128)), n); /* subnormal */
    r = _mm512_mask_mov_epi64(r, _mm512_cmpge_epi64_mask(biased, _mm512_set1_epi64(255)), _mm512_set1_epi64(0x7f80));
    r = _mm512_mask_or_epi64(r, neg, r, _mm512_set1_epi64(0x8000));
    return _mm512_maskz_mov_epi64(nz, r); /* an exact zero is +0 */
}

/* Chunk c's sums of the 16 outputs of the block at wc's weights: a chunk of
 * ws->nz16 a pair of inputs at a time (vpmaddwd of the weights' pairs and the
 * int16 pairs of xp), one of ws->nz32 the even and the odd input apart. */
NPK_TARGET_AVX512 static inline __attribute__((always_inline)) __m512i chunk_sums_avx512(const npk_q4_ws *ws,
                                                                                         const int8_t *wc, uint32_t c,
                                                                                         int p16) {
    __m512i S = _mm512_setzero_si512();
    if (p16) {
        const int32_t *xc = ws->xp + (size_t)c * (CH / 2);
#pragma GCC unroll 4
        for (int p = 0; p < CH / 2; p++) {
            __m512i w = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(wc + p * 2 * LANES)));
            S = _mm512_add_epi32(S, _mm512_madd_epi16(w, _mm512_set1_epi32(xc[p])));
        }
    } else {
        const int32_t *xc = ws->xa + (size_t)c * CH;
#pragma GCC unroll 4
        for (int p = 0; p < CH / 2; p++) {
            __m512i w = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(wc + p * 2 * LANES)));
            __m512i we = _mm512_srai_epi32(_mm512_slli_epi32(w, 16), 16), wo = _mm512_srai_epi32(w, 16);
            S = _mm512_add_epi32(S, _mm512_mullo_epi32(we, _mm512_set1_epi32(xc[2 * p])));
            S = _mm512_add_epi32(S, _mm512_mullo_epi32(wo, _mm512_set1_epi32(xc[2 * p + 1])));
        }
    }
    return S;
}

/* The 16 outputs of a block rounded into y from their sums in natural order,
 * lo0 (outputs 0..7) and lo1 (8..15), (hi:lo) * 2^base; masked at the end of y. */
NPK_TARGET_AVX512 static inline __attribute__((always_inline)) void out16_avx512(const npk_q4_mat *m, uint32_t b,
                                                                                 __m512i lo0, __m512i hi0, __m512i lo1,
                                                                                 __m512i hi1, int base, uint16_t *y) {
    uint32_t n0 = b * LANES, left = m->N - n0;
    __mmask8 k0 = left >= 8 ? 0xff : (__mmask8)((1u << left) - 1);
    __mmask8 k1 = left >= 16 ? 0xff : left <= 8 ? 0 : (__mmask8)((1u << (left - 8)) - 1);
    _mm512_mask_cvtepi64_storeu_epi16(y + n0, k0, round8_avx512(lo0, hi0, base));
    if (k1) _mm512_mask_cvtepi64_storeu_epi16(y + n0 + 8, k1, round8_avx512(lo1, hi1, base));
}

/* old8_avx2 for the 16 old values of a block: the even outputs' integers on
 * base's unit in *e (0, 2, .., 14), the odd ones' in *o, each below 2^62. */
NPK_TARGET_AVX512 static inline __attribute__((always_inline)) void old16_avx512(const uint16_t *old, int base,
                                                                                 __m512i *e, __m512i *o) {
    const __m512i ffff = _mm512_set1_epi64(0xffff), zero = _mm512_setzero_si512();
    __m512i pr = _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)old)); /* per lane: even | odd << 16 */
    __m512i v[2] = {_mm512_and_si512(pr, ffff), _mm512_and_si512(_mm512_srli_epi64(pr, 16), ffff)};
    for (int k = 0; k < 2; k++) {
        __m512i ex = _mm512_and_si512(_mm512_srli_epi64(v[k], 7), _mm512_set1_epi64(0xff));
        __m512i m7 = _mm512_and_si512(v[k], _mm512_set1_epi64(0x7f));
        __m512i mant = _mm512_mask_or_epi64(m7, _mm512_cmpneq_epi64_mask(ex, zero), m7, _mm512_set1_epi64(0x80));
        __m512i sh = _mm512_sub_epi64(_mm512_max_epi64(ex, _mm512_set1_epi64(1)), _mm512_set1_epi64(134 + (long long)base));
        __m512i a = _mm512_sllv_epi64(mant, sh); /* a zero's shift may be out of range: 0 either way */
        __m512i sg = _mm512_sub_epi64(zero, _mm512_srli_epi64(v[k], 15));
        a = _mm512_sub_epi64(_mm512_xor_si512(a, sg), sg);
        if (k) *o = a;
        else *e = a;
    }
}

/* row_avx2's int64 rows on 16 lanes (fit: every partial sum of the row below
 * 2^62 at base, the caller's bound): per chunk the 16 sums S, T = S * sm as
 * int64 products of the even and the odd lanes (vpmuldq reads the low half of
 * each 64-bit lane), each shifted to base and added into int64 lanes, e for
 * the outputs 0, 2, .., 14 and o for 1, 3, .., 15. Per chunk of int16 pairs
 * and block of 16 outputs (128 MACs) its loop is 30 vector instructions
 * (50 in all), row_avx512's 128-bit sums 49 (71), row_avx2's int64 ones 60
 * on 256 bits (84; gcc 12 -O2, counted in objdump). The sums start from
 * the old values: a whole block's converted in registers (old16_avx512), the
 * last partial block's from ws->lo (gemv_blocks put them there; below 2^62, so
 * the low word is the whole value). The same exact sums, the same rounding:
 * the same bits. */
NPK_TARGET_AVX512 static void row_avx512_fit(const npk_q4_mat *m, const npk_q4_ws *ws, const xrow *r, int base,
                                             const uint16_t *old, uint16_t *y, uint32_t b0, uint32_t b1) {
    const __m512i zero = _mm512_setzero_si512(), m1 = _mm512_set1_epi64(-1), low = _mm512_set1_epi64(0xffffffffll);
    const __m512i ie = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), io = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    const __m512i i0 = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), i1 = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    for (uint32_t b = b0; b < b1; b++) {
        const int8_t *wb = m->w + (size_t)b * m->Kp * LANES;
        __m512i e = zero, o = zero;
        if (old && (size_t)b * LANES + LANES <= m->N) /* the old values straight from old */
            old16_avx512(old + (size_t)b * LANES, base, &e, &o);
        else if (old) {
            __m512i l0 = _mm512_loadu_si512(ws->lo + (size_t)b * LANES), l1 = _mm512_loadu_si512(ws->lo + (size_t)b * LANES + 8);
            e = _mm512_permutex2var_epi64(l0, ie, l1);
            o = _mm512_permutex2var_epi64(l0, io, l1);
        }
        for (uint32_t i = 0; i < r->n16 + r->n32; i++) { /* the chunks of nz16, then those of nz32 */
            const int p16 = i < r->n16;
            const uint32_t c = p16 ? ws->nz16[i] : ws->nz32[i - r->n16];
            const __m512i S = chunk_sums_avx512(ws, wb + (size_t)c * CH * LANES, c, p16);
            const size_t gi = (size_t)m->cg[c] * m->Np + (size_t)b * LANES;
            const __m512i smv = _mm512_loadu_si512(m->sm + gi);
            /* each output's shift (0..63) in its 32-bit lane */
            const __m512i sh = _mm512_add_epi32(_mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(m->sx + gi))),
                                                _mm512_set1_epi32(ws->ce[c] - base));
            const __m512i Te = _mm512_mul_epi32(S, smv);
            const __m512i To = _mm512_mul_epi32(_mm512_srli_epi64(S, 32), _mm512_srli_epi64(smv, 32));
            e = _mm512_add_epi64(e, _mm512_sllv_epi64(Te, _mm512_and_si512(sh, low)));
            o = _mm512_add_epi64(o, _mm512_sllv_epi64(To, _mm512_srli_epi64(sh, 32)));
        }
        const __m512i v0 = _mm512_permutex2var_epi64(e, i0, o), v1 = _mm512_permutex2var_epi64(e, i1, o);
        out16_avx512(m, b, v0, _mm512_maskz_mov_epi64(_mm512_cmplt_epi64_mask(v0, zero), m1), v1,
                     _mm512_maskz_mov_epi64(_mm512_cmplt_epi64_mask(v1, zero), m1), base, y);
    }
}

/* The same as row_c with 16 lanes per vector; shifts below 64 (the caller
 * checks). The sums start from ws->lo/hi (old values) when init, else 0, and
 * are rounded here into y. The chunk sums as in row_avx2 (vpmaddwd for nz16). */
NPK_TARGET_AVX512 static void row_avx512(const npk_q4_mat *m, const npk_q4_ws *ws, const xrow *r,
                                                          int base, int init, uint16_t *y, uint32_t b0, uint32_t b1) {
    const __m512i m1 = _mm512_set1_epi64(-1), c64 = _mm512_set1_epi64(64);
    for (uint32_t b = b0; b < b1; b++) {
        const int8_t *wb = m->w + (size_t)b * m->Kp * LANES;
        const uint64_t *plo = ws->lo + (size_t)b * LANES, *phi = ws->hi + (size_t)b * LANES;
        __m512i lo0 = _mm512_setzero_si512(), lo1 = lo0, hi0 = lo0, hi1 = lo0;
        if (init) {
            lo0 = _mm512_loadu_si512(plo);
            lo1 = _mm512_loadu_si512(plo + 8);
            hi0 = _mm512_loadu_si512(phi);
            hi1 = _mm512_loadu_si512(phi + 8);
        }
        for (uint32_t i = 0; i < r->n16 + r->n32; i++) { /* the chunks of nz16, then those of nz32 */
            const int p16 = i < r->n16;
            uint32_t c = p16 ? ws->nz16[i] : ws->nz32[i - r->n16], g = m->cg[c];
            const int8_t *wc = wb + (size_t)c * CH * LANES;
            __m512i S = chunk_sums_avx512(ws, wc, c, p16);
            const int32_t *sm = m->sm + (size_t)g * m->Np + (size_t)b * LANES;
            const int16_t *sx = m->sx + (size_t)g * m->Np + (size_t)b * LANES;
            __m512i smv = _mm512_loadu_si512(sm);
            __m256i sxv = _mm256_loadu_si256((const __m256i *)sx);
            __m512i d = _mm512_set1_epi64(ws->ce[c] - base);
            __m512i T0 = _mm512_mul_epi32(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(S)),
                                          _mm512_cvtepi32_epi64(_mm512_castsi512_si256(smv)));
            __m512i T1 = _mm512_mul_epi32(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(S, 1)),
                                          _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(smv, 1)));
            __m512i s0 = _mm512_add_epi64(_mm512_cvtepi16_epi64(_mm256_castsi256_si128(sxv)), d);
            __m512i s1 = _mm512_add_epi64(_mm512_cvtepi16_epi64(_mm256_extracti128_si256(sxv, 1)), d);
            __m512i a0 = _mm512_sllv_epi64(T0, s0), a1 = _mm512_sllv_epi64(T1, s1);
            /* the high word: T >> (64 - sh) arithmetic (a count of 64 fills with the sign) */
            __m512i h0 = _mm512_srav_epi64(T0, _mm512_sub_epi64(c64, s0));
            __m512i h1 = _mm512_srav_epi64(T1, _mm512_sub_epi64(c64, s1));
            lo0 = _mm512_add_epi64(lo0, a0);
            lo1 = _mm512_add_epi64(lo1, a1);
            __mmask8 k0 = _mm512_cmplt_epu64_mask(lo0, a0), k1 = _mm512_cmplt_epu64_mask(lo1, a1);
            hi0 = _mm512_add_epi64(hi0, h0);
            hi1 = _mm512_add_epi64(hi1, h1);
            hi0 = _mm512_mask_sub_epi64(hi0, k0, hi0, m1); /* + 1 where the low word carried */
            hi1 = _mm512_mask_sub_epi64(hi1, k1, hi1, m1);
        }
        out16_avx512(m, b, lo0, hi0, lo1, hi1, base, y);
    }
}

/* (hi:lo) += T * 2^sh for 4 lanes, 0 <= sh < 64. */
NPK_TARGET_AVX2 static inline void acc4_avx2(__m256i *lo, __m256i *hi, __m256i T, __m256i sh) {
    const __m256i c64 = _mm256_set1_epi64x(64), flip = _mm256_set1_epi64x((long long)0x8000000000000000ull);
    __m256i sign = _mm256_cmpgt_epi64(_mm256_setzero_si256(), T);
    __m256i a = _mm256_sllv_epi64(T, sh);
    /* T >> (64 - sh) arithmetic: the logical shift (0 for a count of 64) with the sign above */
    __m256i h = _mm256_or_si256(_mm256_srlv_epi64(T, _mm256_sub_epi64(c64, sh)), _mm256_sllv_epi64(sign, sh));
    __m256i n = _mm256_add_epi64(*lo, a);
    __m256i carry = _mm256_cmpgt_epi64(_mm256_xor_si256(a, flip), _mm256_xor_si256(n, flip)); /* n <u a: -1 */
    *lo = n;
    *hi = _mm256_sub_epi64(_mm256_add_epi64(*hi, h), carry);
}

/* Eight natural-order 64-bit lanes a (outputs 0..3), b (4..7) as the even
 * (0, 2, 4, 6) and odd (1, 3, 5, 7) outputs, and back. */
NPK_TARGET_AVX2 static inline void split_eo(__m256i a, __m256i b, __m256i *e, __m256i *o) {
    __m256i t0 = _mm256_permute2x128_si256(a, b, 0x20), t1 = _mm256_permute2x128_si256(a, b, 0x31);
    *e = _mm256_unpacklo_epi64(t0, t1);
    *o = _mm256_unpackhi_epi64(t0, t1);
}
NPK_TARGET_AVX2 static inline void join_eo(__m256i e, __m256i o, __m256i *a, __m256i *b) {
    __m256i t0 = _mm256_unpacklo_epi64(e, o), t1 = _mm256_unpackhi_epi64(e, o);
    *a = _mm256_permute2x128_si256(t0, t1, 0x20);
    *b = _mm256_permute2x128_si256(t0, t1, 0x31);
}

/* Four 128-bit two's complement sums (hi:lo) * 2^e rounded to BF16 as
 * round128 does, in the low 16 bits of each 64-bit lane of *r; 0 unless every
 * sum fits in 64 bits and every nonzero result is a normal finite BF16 (the
 * caller then rounds them one at a time). |v| as a double: first an estimate
 * (its two 32-bit halves as exact doubles, one fused multiply-add: 2^top or
 * 2^(top + 1)) gives a shift s that leaves at most 52 bits, the bits shifted
 * out kept as a sticky bit 0; that is exact as 2^52 + a' reinterpreted, and
 * its RNE rounding to 8 significant bits is an integer add on its bits. */
NPK_TARGET_AVX2 static inline __attribute__((always_inline)) int round4v_avx2(__m256i lo, __m256i hi, int e, __m256i *r) {
    const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi64x(1), m32 = _mm256_set1_epi64x(0xffffffffll),
                  magic = _mm256_set1_epi64x(0x4330000000000000ll);
    __m256i neg = _mm256_cmpgt_epi64(zero, lo);
    if (_mm256_movemask_epi8(_mm256_cmpeq_epi64(hi, neg)) != -1) return 0; /* wider than 64 bits */
    __m256i a = _mm256_sub_epi64(_mm256_xor_si256(lo, neg), neg);             /* |v|, unsigned */
    __m256i s = zero, ap = a;
    if (!_mm256_testz_si256(a, _mm256_set1_epi64x(~((1ll << 52) - 1)))) { /* some |v| >= 2^52: a' = a >> s, sticky */
        __m256d dh = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(a, 32), magic)),
                                   _mm256_castsi256_pd(magic));
        __m256d dl = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(a, m32), magic)),
                                   _mm256_castsi256_pd(magic));
        __m256d est = _mm256_fmadd_pd(dh, _mm256_set1_pd(4294967296.0), dl);
        /* s = max(top_est - 51, 0); top_est = biased exponent - 1023 (a = 0: s = 0) */
        s = _mm256_max_epi32(_mm256_sub_epi64(_mm256_srli_epi64(_mm256_castpd_si256(est), 52), _mm256_set1_epi64x(1074)),
                             zero);
        __m256i out = _mm256_sllv_epi64(a, _mm256_sub_epi64(_mm256_set1_epi64x(64), s)); /* s = 0: count 64 gives 0 */
        ap = _mm256_or_si256(_mm256_srlv_epi64(a, s), _mm256_andnot_si256(_mm256_cmpeq_epi64(out, zero), one));
    }
    __m256i D = _mm256_castpd_si256(
        _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(ap, magic)), _mm256_castsi256_pd(magic))); /* exact */
    __m256i R = _mm256_add_epi64(_mm256_add_epi64(D, _mm256_set1_epi64x((1ll << 44) - 1)),
                                 _mm256_and_si256(_mm256_srli_epi64(D, 45), one));
    R = _mm256_srli_epi64(R, 45); /* biased double exponent << 7 | 7 fraction bits */
    /* the BF16's biased exponent: (R >> 7) - 1023 + s + e + 127 */
    __m256i bx = _mm256_add_epi64(_mm256_srli_epi64(R, 7), _mm256_add_epi64(s, _mm256_set1_epi64x((long long)e - 896)));
    __m256i nz = _mm256_xor_si256(_mm256_cmpeq_epi64(a, zero), _mm256_set1_epi64x(-1));
    __m256i bad = _mm256_and_si256(nz, _mm256_or_si256(_mm256_cmpgt_epi64(one, bx),
                                                       _mm256_cmpgt_epi64(bx, _mm256_set1_epi64x(254))));
    if (!_mm256_testz_si256(bad, bad)) return 0;
    __m256i v = _mm256_or_si256(_mm256_slli_epi64(bx, 7), _mm256_and_si256(R, _mm256_set1_epi64x(0x7f)));
    v = _mm256_or_si256(v, _mm256_and_si256(neg, _mm256_set1_epi64x(0x8000)));
    *r = _mm256_and_si256(v, nz); /* an exact zero is +0 */
    return 1;
}

/* S (eight int32 lanes, outputs off..off+7 of chunk c) times the scales,
 * added into the even (le:he) and odd (lo_:ho) outputs' 128-bit sums; with
 * fit (every partial sum of the row fits in int64) into le and lo_ alone. */
NPK_TARGET_AVX2 static inline void chunk_acc_avx2(const npk_q4_mat *m, const npk_q4_ws *ws, uint32_t c, int base,
                                                  size_t off, __m256i S, __m256i *le, __m256i *he, __m256i *lo_,
                                                  __m256i *ho, const int fit) {
    const size_t gi = (size_t)m->cg[c] * m->Np + off;
    const __m256i d = _mm256_set1_epi64x(ws->ce[c] - base);
    /* vpmuldq: the even outputs' significands are the even lanes of sm, the odd ones those of sm + 1 */
    __m256i Te = _mm256_mul_epi32(S, _mm256_loadu_si256((const __m256i *)(m->sm + gi)));
    __m256i To = _mm256_mul_epi32(_mm256_srli_epi64(S, 32), _mm256_loadu_si256((const __m256i *)(m->sm + gi + 1)));
    __m256i she = _mm256_add_epi64(_mm256_loadu_si256((const __m256i *)(m->sxs + gi)), d); /* 0..63 */
    __m256i sho = _mm256_add_epi64(_mm256_loadu_si256((const __m256i *)(m->sxs + gi + 4)), d);
    if (fit) {
        *le = _mm256_add_epi64(*le, _mm256_sllv_epi64(Te, she));
        *lo_ = _mm256_add_epi64(*lo_, _mm256_sllv_epi64(To, sho));
        return;
    }
    acc4_avx2(le, he, Te, she);
    acc4_avx2(lo_, ho, To, sho);
}

/* The eight sums of half a block (the even outputs' le:he, the odd ones' lo_:ho)
 * rounded into y[off..off + 8): straight from the registers where
 * round4v_avx2 takes them, else through plo/phi one at a time. */
NPK_TARGET_AVX2 static inline __attribute__((always_inline)) void half_out_avx2(const npk_q4_mat *m, __m256i le, __m256i he, __m256i lo_, __m256i ho,
                                                 int base, uint16_t *y, size_t off, uint64_t *plo, uint64_t *phi) {
    __m256i re, ro;
    if (off + 8 <= m->N && round4v_avx2(le, he, base, &re) && round4v_avx2(lo_, ho, base, &ro)) {
        /* even | odd << 16 per 64-bit lane, in order */
        __m256i v = _mm256_permutevar8x32_epi32(_mm256_or_si256(re, _mm256_slli_epi64(ro, 16)),
                                                _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
        _mm_storeu_si128((__m128i *)(y + off), _mm256_castsi256_si128(v));
        return;
    }
    __m256i a, bb;
    join_eo(le, lo_, &a, &bb);
    _mm256_storeu_si256((__m256i *)plo, a);
    _mm256_storeu_si256((__m256i *)(plo + 4), bb);
    join_eo(he, ho, &a, &bb);
    _mm256_storeu_si256((__m256i *)phi, a);
    _mm256_storeu_si256((__m256i *)(phi + 4), bb);
    for (size_t n = off; n < off + 8 && n < m->N; n++) y[n] = round_sum(plo[n - off], phi[n - off], base);
}

/* Chunk c's sums S0 (outputs 0..7 of the block at wc's weights) and S1
 * (8..15): a chunk of ws->nz16 a pair of inputs at a time (vpmaddwd of the
 * weights' pairs and the int16 pairs of xp: each product below 2^18), one of
 * ws->nz32 the even and the odd input of each pair apart (vpmulld). */
NPK_TARGET_AVX2 static inline void chunk_sums_avx2(const npk_q4_ws *ws, const int8_t *wc, uint32_t c, int p16,
                                                   __m256i *S0, __m256i *S1) {
    __m256i s0 = _mm256_setzero_si256(), s1 = s0;
    if (p16) {
        const int32_t *xc = ws->xp + (size_t)c * (CH / 2);
#pragma GCC unroll 4
        for (int p = 0; p < CH / 2; p++) {
            __m256i xv = _mm256_set1_epi32(xc[p]);
            s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wc + p * 2 * LANES))), xv));
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wc + p * 2 * LANES + 16))), xv));
        }
    } else {
        const int32_t *xc = ws->xa + (size_t)c * CH;
#pragma GCC unroll 4
        for (int p = 0; p < CH / 2; p++) {
            __m256i xe = _mm256_set1_epi32(xc[2 * p]), xo = _mm256_set1_epi32(xc[2 * p + 1]);
            __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wc + p * 2 * LANES)));
            __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wc + p * 2 * LANES + 16)));
            s0 = _mm256_add_epi32(s0, _mm256_mullo_epi32(_mm256_srai_epi32(_mm256_slli_epi32(w0, 16), 16), xe));
            s0 = _mm256_add_epi32(s0, _mm256_mullo_epi32(_mm256_srai_epi32(w0, 16), xo));
            s1 = _mm256_add_epi32(s1, _mm256_mullo_epi32(_mm256_srai_epi32(_mm256_slli_epi32(w1, 16), 16), xe));
            s1 = _mm256_add_epi32(s1, _mm256_mullo_epi32(_mm256_srai_epi32(w1, 16), xo));
        }
    }
    *S0 = s0;
    *S1 = s1;
}

/* Eight old values (BF16, finite) as the integers on base's unit of the even
 * (*e: 0, 2, 4, 6) and the odd (*o) outputs, each below 2^62 (the caller's
 * fit bound, base at or below their unit exponents). */
NPK_TARGET_AVX2 static inline void old8_avx2(const uint16_t *old, int base, __m256i *e, __m256i *o) {
    const __m256i ffff = _mm256_set1_epi64x(0xffff), one = _mm256_set1_epi64x(1), zero = _mm256_setzero_si256();
    __m256i pr = _mm256_cvtepu32_epi64(_mm_loadu_si128((const __m128i *)old)); /* per lane: even | odd << 16 */
    __m256i v[2] = {_mm256_and_si256(pr, ffff), _mm256_and_si256(_mm256_srli_epi64(pr, 16), ffff)};
    for (int k = 0; k < 2; k++) {
        __m256i ex = _mm256_and_si256(_mm256_srli_epi64(v[k], 7), _mm256_set1_epi64x(0xff));
        __m256i mant = _mm256_or_si256(_mm256_and_si256(v[k], _mm256_set1_epi64x(0x7f)),
                                       _mm256_andnot_si256(_mm256_cmpeq_epi64(ex, zero), _mm256_set1_epi64x(0x80)));
        __m256i sh = _mm256_sub_epi64(_mm256_max_epi32(ex, one), _mm256_set1_epi64x(134 + (long long)base));
        __m256i a = _mm256_sllv_epi64(mant, sh); /* a zero's shift may be out of range: 0 either way */
        __m256i sg = _mm256_sub_epi64(zero, _mm256_srli_epi64(v[k], 15));
        a = _mm256_sub_epi64(_mm256_xor_si256(a, sg), sg);
        if (k) *o = a;
        else *e = a;
    }
}

/* row_c for AVX2: per chunk the sums of all 16 outputs of a block
 * (chunk_sums_avx2), T = S * sm as int64 products of the even and the odd
 * lanes (vpmuldq reads the low half of each 64-bit lane), each added at its
 * shift. With fit (the caller's bound: every partial sum of the row below
 * 2^62 at base) the sums are int64 lanes (four registers for the block; the
 * high words are their signs); else 128-bit two's complement sums, half a
 * block (four registers of them) at a time. */
NPK_TARGET_AVX2 static void row_avx2(const npk_q4_mat *m, const npk_q4_ws *ws, const xrow *r, int base,
                                     const uint16_t *old, uint16_t *y, uint32_t b0, uint32_t b1, int fit) {
    const int init = old != NULL; /* the sums start from the old values: in ws->lo/hi, or (fit) from old */
    const uint32_t nc = r->n16 + r->n32; /* the chunks of nz16, then those of nz32 */
    for (uint32_t b = b0; b < b1; b++) {
        const int8_t *wb = m->w + (size_t)b * m->Kp * LANES;
        uint64_t *plo = ws->lo + (size_t)b * LANES, *phi = ws->hi + (size_t)b * LANES;
        const size_t off = (size_t)b * LANES;
        if (fit) {
            __m256i e0 = _mm256_setzero_si256(), o0 = e0, e1 = e0, o1 = e0, u0 = e0, u1 = e0;
            if (init && off + LANES <= m->N) { /* the old values straight from old */
                old8_avx2(old + off, base, &e0, &o0);
                old8_avx2(old + off + 8, base, &e1, &o1);
            } else if (init) { /* from ws->lo (gemv_blocks put them there; their high words are signs) */
                split_eo(_mm256_loadu_si256((const __m256i *)plo), _mm256_loadu_si256((const __m256i *)(plo + 4)), &e0, &o0);
                split_eo(_mm256_loadu_si256((const __m256i *)(plo + 8)), _mm256_loadu_si256((const __m256i *)(plo + 12)), &e1,
                         &o1);
            }
            for (uint32_t i = 0; i < r->n16; i++) { /* the chunks of nz16, then those of nz32 */
                const uint32_t c = ws->nz16[i];
                __m256i S0, S1;
                chunk_sums_avx2(ws, wb + (size_t)c * CH * LANES, c, 1, &S0, &S1);
                chunk_acc_avx2(m, ws, c, base, off, S0, &e0, &u0, &o0, &u1, 1);
                chunk_acc_avx2(m, ws, c, base, off + 8, S1, &e1, &u0, &o1, &u1, 1);
            }
            for (uint32_t i = 0; i < r->n32; i++) {
                const uint32_t c = ws->nz32[i];
                __m256i S0, S1;
                chunk_sums_avx2(ws, wb + (size_t)c * CH * LANES, c, 0, &S0, &S1);
                chunk_acc_avx2(m, ws, c, base, off, S0, &e0, &u0, &o0, &u1, 1);
                chunk_acc_avx2(m, ws, c, base, off + 8, S1, &e1, &u0, &o1, &u1, 1);
            }
            const __m256i z = _mm256_setzero_si256();
            half_out_avx2(m, e0, _mm256_cmpgt_epi64(z, e0), o0, _mm256_cmpgt_epi64(z, o0), base, y, off, plo, phi);
            half_out_avx2(m, e1, _mm256_cmpgt_epi64(z, e1), o1, _mm256_cmpgt_epi64(z, o1), base, y, off + 8, plo + 8,
                          phi + 8);
            continue;
        }
        for (int half = 0; half < 2; half++) {
            __m256i le = _mm256_setzero_si256(), lo_ = le, he = le, ho = le; /* the sums from 0, or from the old values */
            uint64_t *hl = plo + half * 8, *hh = phi + half * 8;
            if (init) {
                split_eo(_mm256_loadu_si256((const __m256i *)hl), _mm256_loadu_si256((const __m256i *)(hl + 4)), &le, &lo_);
                split_eo(_mm256_loadu_si256((const __m256i *)hh), _mm256_loadu_si256((const __m256i *)(hh + 4)), &he, &ho);
            }
            for (uint32_t i = 0; i < nc; i++) {
                const int p16 = i < r->n16;
                uint32_t c = p16 ? ws->nz16[i] : ws->nz32[i - r->n16];
                __m256i S0, S1;
                chunk_sums_avx2(ws, wb + (size_t)c * CH * LANES, c, p16, &S0, &S1);
                chunk_acc_avx2(m, ws, c, base, off + (size_t)half * 8, half ? S1 : S0, &le, &he, &lo_, &ho, 0);
            }
            half_out_avx2(m, le, he, lo_, ho, base, y, off + (size_t)half * 8, hl, hh);
        }
    }
}
#endif

#ifdef Q4_X86
/* round_sum of four outputs (hi:lo at y's indices) into y[0..4), as round128
 * does, when every sum fits in 64 bits and every result is a finite BF16
 * above the least subnormal's half (else 0: the caller rounds them one at a
 * time). The top bit of |v| comes from the exponents of its two 32-bit halves
 * made exact doubles (2^52 + h reinterpreted), the RNE step from variable
 * shifts (a count outside 0..63 gives 0). */
NPK_TARGET_AVX2 static int round4_avx2(const uint64_t *plo, const uint64_t *phi, int e, uint16_t *y) {
    const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi64x(1), m32 = _mm256_set1_epi64x(0xffffffffll),
                  magic = _mm256_set1_epi64x(0x4330000000000000ll), ev = _mm256_set1_epi64x(e);
    __m256i lo = _mm256_loadu_si256((const __m256i *)plo), hi = _mm256_loadu_si256((const __m256i *)phi);
    __m256i neg = _mm256_cmpgt_epi64(zero, lo);
    if (_mm256_movemask_epi8(_mm256_cmpeq_epi64(hi, neg)) != -1) return 0; /* wider than 64 bits */
    __m256i a = _mm256_sub_epi64(_mm256_xor_si256(lo, neg), neg);             /* |v|, unsigned */
    __m256i ah = _mm256_srli_epi64(a, 32), al = _mm256_and_si256(a, m32);
    __m256i xh = _mm256_or_si256(ah, magic);
    /* exponent of 2^52 + h minus 2^52, exactly: (double)(magic | h) - 2^52 */
    __m256d dh = _mm256_sub_pd(_mm256_castsi256_pd(xh), _mm256_castsi256_pd(magic));
    __m256d dl = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(al, magic)), _mm256_castsi256_pd(magic));
    __m256i th = _mm256_sub_epi64(_mm256_srli_epi64(_mm256_castpd_si256(dh), 52), _mm256_set1_epi64x(1023 - 32));
    __m256i tl = _mm256_sub_epi64(_mm256_srli_epi64(_mm256_castpd_si256(dl), 52), _mm256_set1_epi64x(1023));
    __m256i top = _mm256_blendv_epi8(th, tl, _mm256_cmpeq_epi64(ah, zero)); /* for a = 0: garbage, masked below */
    __m256i E = _mm256_add_epi64(top, ev);
    __m256i qe = _mm256_sub_epi64(E, _mm256_set1_epi64x(7));
    qe = _mm256_blendv_epi8(qe, _mm256_set1_epi64x(-133), _mm256_cmpgt_epi64(_mm256_set1_epi64x(-133), qe));
    __m256i d = _mm256_sub_epi64(qe, ev); /* bits dropped; <= 0: exact */
    __m256i nz = _mm256_xor_si256(_mm256_cmpeq_epi64(a, zero), _mm256_set1_epi64x(-1));
    __m256i bad = _mm256_or_si256(_mm256_cmpgt_epi64(E, _mm256_set1_epi64x(127)),
                                  _mm256_cmpgt_epi64(d, _mm256_set1_epi64x(63)));
    if (!_mm256_testz_si256(_mm256_and_si256(bad, nz), _mm256_and_si256(bad, nz))) return 0;
    __m256i n = _mm256_or_si256(_mm256_srlv_epi64(a, d), _mm256_sllv_epi64(a, _mm256_sub_epi64(zero, d)));
    __m256i rem = _mm256_sub_epi64(a, _mm256_sllv_epi64(n, d));
    __m256i half = _mm256_sllv_epi64(one, _mm256_sub_epi64(d, one));
    __m256i up = _mm256_or_si256(_mm256_cmpgt_epi64(rem, half),
                                 _mm256_and_si256(_mm256_cmpeq_epi64(rem, half),
                                                  _mm256_cmpeq_epi64(_mm256_and_si256(n, one), one)));
    up = _mm256_and_si256(up, _mm256_cmpgt_epi64(d, zero));
    n = _mm256_sub_epi64(n, up);
    __m256i carry = _mm256_cmpgt_epi64(n, _mm256_set1_epi64x(255));
    n = _mm256_blendv_epi8(n, _mm256_srli_epi64(n, 1), carry);
    qe = _mm256_sub_epi64(qe, carry);
    __m256i biased = _mm256_add_epi64(qe, _mm256_set1_epi64x(134));
    __m256i r = _mm256_or_si256(_mm256_slli_epi64(biased, 7), _mm256_and_si256(n, _mm256_set1_epi64x(0x7f)));
    r = _mm256_blendv_epi8(r, n, _mm256_cmpgt_epi64(_mm256_set1_epi64x(128), n)); /* subnormal */
    r = _mm256_blendv_epi8(r, _mm256_set1_epi64x(0x7f80), _mm256_cmpgt_epi64(biased, _mm256_set1_epi64x(254)));
    r = _mm256_or_si256(r, _mm256_and_si256(neg, _mm256_set1_epi64x(0x8000)));
    r = _mm256_and_si256(r, nz); /* an exact zero is +0 */
    __m256i p = _mm256_permutevar8x32_epi32(r, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
    __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(p), _mm256_castsi256_si128(p));
    _mm_storel_epi64((__m128i *)y, w);
    return 1;
}
#endif

/* ---- one row ------------------------------------------------------------------------ */

/* w[0..3) += T * 2^sh, 0 <= sh < 192, two's complement (the caller bounds the sum). */
static inline void add192(uint64_t *w, int64_t T, int sh) {
    uint64_t u = (uint64_t)T, s = T < 0 ? ~(uint64_t)0 : 0, a0, a1, a2;
    int q = sh >> 6, r = sh & 63;
    uint64_t b0 = u << r, b1 = r ? (u >> (64 - r)) | (s << r) : s;
    if (q == 0) {
        a0 = b0;
        a1 = b1;
        a2 = s;
    } else if (q == 1) {
        a0 = 0;
        a1 = b0;
        a2 = b1;
    } else {
        a0 = a1 = 0;
        a2 = b0;
    }
    w[0] += a0;
    uint64_t c = w[0] < a0, t = w[1] + a1, c1 = t < a1;
    t += c;
    c1 |= t < c;
    w[1] = t;
    w[2] += a2 + c1;
}

/* A row whose chunks are all finite, some spanning more than CSPAN binades
 * (softmax weights) or the row more than the 128 bits, every term inside
 * 192 bits above base (the caller checks): per output one 192-bit sum of the
 * old value, each narrow chunk's integer sum and each wide chunk's single
 * products w * x * s (below 2^35 at the unit of x times that of s), rounded
 * once (the lowest word only as a sticky bit when the top one is nonzero). */
static void row_wide(const npk_q4_mat *m, const uint16_t *x, const uint16_t *old, const npk_q4_ws *ws, int base,
                     uint16_t *y, uint32_t n0, uint32_t n1) {
    for (uint32_t n = n0; n < n1; n++) {
        uint64_t w3[3] = {0, 0, 0};
        if (old && (old[n] & 0x7fffu)) add192(w3, signed_mant(old[n]), unit_exp(old[n]) - base);
        const int8_t *wn = m->w + widx(m, n, 0);
        for (uint32_t c = 0; c < m->nch; c++) {
            size_t gi = (size_t)m->cg[c] * m->Np + n;
            int64_t sm = m->sm[gi];
            if (!sm) continue;
            int sx = m->sx[gi] - base;
            uint32_t k0 = c * CH, k1 = k0 + CH < m->K ? k0 + CH : m->K;
            if (ws->ce[c] != CE_BAD) {
                int64_t S = 0;
                if (k1 - k0 == CH) { /* a whole chunk: CH / 2 weight pairs (k0 even) */
                    const int8_t *wc = wn + (size_t)(k0 >> 1) * (2 * LANES);
                    const int32_t *xc = ws->xa + k0;
                    for (int j = 0; j < CH / 2; j++)
                        S += (int64_t)wc[j * 2 * LANES] * xc[2 * j] + (int64_t)wc[j * 2 * LANES + 1] * xc[2 * j + 1];
                } else
                    for (uint32_t k = k0; k < k1; k++) S += (int64_t)wn[(size_t)(k >> 1) * (2 * LANES) + (k & 1)] * ws->xa[k];
                if (S) add192(w3, S * sm, ws->ce[c] + sx);
                continue;
            }
            for (uint32_t k = k0; k < k1; k++) {
                int w = wn[(size_t)(k >> 1) * (2 * LANES) + (k & 1)];
                if (w && (x[k] & 0x7fffu)) add192(w3, w * signed_mant(x[k]) * sm, unit_exp(x[k]) + sx);
            }
        }
        int neg = w3[2] >> 63;
        if (neg) { /* magnitude of the two's complement */
            w3[0] = ~w3[0] + 1;
            w3[1] = ~w3[1] + (w3[0] == 0);
            w3[2] = ~w3[2] + (w3[0] == 0 && w3[1] == 0);
        }
        y[n] = w3[2] ? round128(neg, w3[2], w3[1] | (w3[0] != 0), base + 64) : round128(neg, w3[1], w3[0], base);
    }
}

/* The general path for output n: the exact accumulator. */
static uint16_t general(const npk_q4_mat *m, const uint16_t *x, const uint16_t *old, const npk_q4_ws *ws,
                        int split, uint32_t n) {
    npk_bf16_xacc acc;
    npk_bf16_xacc_clear(&acc);
    if (old) npk_bf16_xacc_add(&acc, old[n]);
    for (uint32_t c = 0; c < m->nch; c++) {
        uint32_t k0 = c * CH, k1 = k0 + CH < m->K ? k0 + CH : m->K;
        if (split && ws->ce[c] != CE_BAD) { /* a finite chunk of a narrow span: its aligned integers */
            float s = scale_of(m, n, m->cg[c]);
            if (isfinite(s)) {
                int64_t S = 0;
                for (uint32_t k = k0; k < k1; k++) S += (int64_t)weight(m, n, k) * ws->xa[k];
                if (S) npk_bf16_xacc_add_scaled(&acc, s, S, ws->ce[c]);
                continue;
            }
        }
        for (uint32_t k = k0; k < k1; k++) {
            uint32_t g = k / m->G;
            npk_bf16_xacc_add_prod(&acc, scale_of(m, n, g), weight(m, n, k), x[k]);
        }
    }
    return npk_bf16_xacc_round(&acc);
}

/* One GEMV's decisions, shared by the tasks that compute its outputs. */
typedef struct gemv_job {
    const npk_q4_mat *m;
    const uint16_t *x, *old;
    uint16_t *y;
    npk_q4_ws *ws;
    xrow r;
    int split, fast, wide, base, isa, sh64, fit;
    uint32_t nb, per; /* blocks of 16 outputs, blocks per task */
} gemv_job;

/* Outputs of blocks [b0, b1): each with the same code and order whatever the
 * split, so y is the same at every thread count. */
static void gemv_blocks(const gemv_job *j, uint32_t b0, uint32_t b1) {
    const npk_q4_mat *m = j->m;
    npk_q4_ws *ws = j->ws;
    const uint32_t n0 = b0 * LANES, n1 = b1 * LANES < m->N ? b1 * LANES : m->N;
    if (!j->fast) {
        for (uint32_t n = n0; n < n1; n++) j->y[n] = general(m, j->x, j->old, ws, j->split, n);
        return;
    }
    if (j->wide) {
        row_wide(m, j->x, j->old, ws, j->base, j->y, n0, n1);
        return;
    }
    const int vec = j->sh64 && (j->isa == NPK_Q4_AVX512 || j->isa == NPK_Q4_AVX2); /* sums start in registers */
    /* the old values into ws->lo/hi; the int64 rows (row_avx2, row_avx512_fit) read those of whole blocks from old */
    const uint32_t o0 = vec && j->fit ? (n1 > m->N / LANES * LANES ? m->N / LANES * LANES : n1) : n0;
    if (j->old || !vec) {
        memset(ws->lo + n0, 0, (size_t)(b1 - b0) * LANES * sizeof *ws->lo);
        memset(ws->hi + n0, 0, (size_t)(b1 - b0) * LANES * sizeof *ws->hi);
    }
    if (j->old)
        for (uint32_t n = o0 > n0 ? o0 : n0; n < n1; n++) {
            uint16_t b = j->old[n];
            if (!(b & 0x7fffu)) continue;
            int64_t mant = (int64_t)((b & 0x7fu) | ((b & 0x7f80u) ? 0x80u : 0));
            add128(&ws->lo[n], &ws->hi[n], b & 0x8000u ? -mant : mant, unit_exp(b) - j->base);
        }
#ifdef Q4_X86
    if (j->isa == NPK_Q4_AVX512 && j->sh64) {
        if (j->fit) row_avx512_fit(m, ws, &j->r, j->base, j->old, j->y, b0, b1);
        else row_avx512(m, ws, &j->r, j->base, j->old != NULL, j->y, b0, b1);
        return;
    }
    if (j->isa == NPK_Q4_AVX2 && j->sh64) {
        row_avx2(m, ws, &j->r, j->base, j->old, j->y, b0, b1, j->fit);
        return;
    }
    row_c(m, ws, &j->r, j->base, b0, b1);
#else
    row_c(m, ws, &j->r, j->base, b0, b1);
#endif
    uint32_t n = n0;
#ifdef Q4_X86
    if (j->isa >= NPK_Q4_AVX2)
        for (; n + 4 <= n1; n += 4)
            if (!round4_avx2(ws->lo + n, ws->hi + n, j->base, j->y + n))
                for (uint32_t i = n; i < n + 4; i++) j->y[i] = round_sum(ws->lo[i], ws->hi[i], j->base);
#endif
    for (; n < n1; n++) j->y[n] = round_sum(ws->lo[n], ws->hi[n], j->base);
}

static void gemv_task(void *ctx, int t) {
    const gemv_job *j = ctx;
    uint32_t b0 = (uint32_t)t * j->per, b1 = b0 + j->per < j->nb ? b0 + j->per : j->nb;
    gemv_blocks(j, b0, b1);
}

/* A GEMV is split over the worker pool from this many MACs (below it the
 * pool's wake-up costs more than the work: stories260K's largest is 32 K). */
#define Q4_PAR_MACS (1u << 17)
/* and into tasks of at least this many */
#define Q4_TASK_MACS (1u << 15)

int npk_q4_gemv(const npk_q4_mat *m, const uint16_t *x, const uint16_t *old, uint16_t *y, npk_q4_ws *ws) {
    if (m->ones) { /* old + sum_k 1.0 * 1 * x[k]: npk_bf16_xacc_add_prod(a, 1.0f, 1, x) adds what npk_bf16_xacc_add(a, x) does */
        y[0] = npk_bf16_sum(x, m->K, old, NULL);
        return 0;
    }
    if (ws_fit(ws, m)) return npk_err(NPK_ENOMEM, "out of memory for the GEMV workspace");
    gemv_job j = {.m = m, .x = x, .old = old, .y = y, .ws = ws, .nb = m->nb};
    xrow r = {0};
    int split = m->chunked, isa = (int)npk_q4_isa_active();
    if (split) xsplit(m, x, ws, &r, isa);
    int wide = m->fast && !r.ok && !r.ninf; /* finite, some chunks wide: row_wide */
    int fast = m->fast && (r.ok || wide);
    int base = 0, top = -(1 << 20);
    if (fast) {
        int lo = wide && r.wlo < r.cemin ? r.wlo : r.cemin;
        base = r.nnz || wide ? lo + m->sxmin : 1 << 20;
        if (r.nnz || wide) top = r.chimax + 38 + m->sxmax;
        if (old) { /* the old values' exponent range; an infinity or NaN takes the general path */
            int olo = 1 << 20, ohi = -(1 << 20), ok = 1;
            size_t i0 = 0;
#ifdef Q4_X86
            if (isa >= NPK_Q4_AVX2) i0 = range16_avx2(old, m->N, &olo, &ohi, &ok);
#endif
            for (size_t i = i0; i < m->N; i++) ok &= sum_range(old[i], &olo, &ohi);
            if (!ok) fast = 0;
            else if (ohi >= olo) {
                if (olo < base) base = olo;
                if (ohi + 8 > top) top = ohi + 8;
            }
        }
        int lg = 0;
        while ((1u << lg) < r.nnz + CH * r.nwide + 2u) lg++;
        if (base == 1 << 20) base = 0; /* nothing nonzero: every output is +0 */
        j.fit = fast && !wide && top + lg - base <= 62; /* every partial sum below 2^62: int64 sums */
        if (fast && top + lg - base > 126) { /* wider than the 128-bit kernels: row_wide's 192 bits */
            if (top + lg - base <= 190 && !r.ninf) wide = 1;
            else fast = 0;
        }
    }
    j.r = r;
    j.split = split, j.fast = fast, j.wide = wide, j.base = base;
    j.isa = isa;
    j.sh64 = !r.nnz || r.cemax + m->sxmax - base < 64;
    const uint64_t macs = (uint64_t)m->N * m->K;
    int threads = macs < Q4_PAR_MACS || m->nb < 2 ? 1 : npk_threads();
    if (threads <= 1) {
        gemv_blocks(&j, 0, m->nb);
        return 0;
    }
    uint64_t ntask = macs / Q4_TASK_MACS;
    if (ntask > (uint64_t)threads * 4) ntask = (uint64_t)threads * 4;
    if (ntask > m->nb) ntask = m->nb;
    j.per = (uint32_t)((m->nb + ntask - 1) / ntask);
    npk_parallel((int)((m->nb + j.per - 1) / j.per), gemv_task, &j);
    return 0;
}
