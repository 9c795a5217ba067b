// SPDX-License-Identifier: MIT
/* Depthwise 2-D convolution (one input channel per group) for the fast CPU
 * path (fast_onnx.h, npk_fast_dw_f32 / npk_fast_dw_i32).
 *
 * One channel at a time: the input plane is copied once into a zero-padded
 * plane split into column phases by the column stride (stride 2: even and odd
 * padded columns side by side), so every (kh, kw) tap of a run of output
 * columns reads contiguous memory with no bounds test. The sums are vectors of
 * 16 lanes (GCC/clang vector extensions, lowered to the widest registers of
 * each clone: AVX-512, AVX2, SSE), up to four independent ones at a time (two
 * rows x 32 columns, or four rows x 16 columns for narrow rows), over every tap
 * in order, then stored once. A run's columns beyond the row read the phase
 * row's slack (zeros) and are not stored.
 *
 * Float sums are float32 in tap order (kh, kw), then the bias: within the
 * float tolerance of the golden (docs/onnx.md); integer sums are exact. */
#include "ops/fast_onnx.h"

#include "npukit/threads.h"

#include <stdlib.h>
#include <string.h>

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* The geometry this kernel takes: 2-D (or 1-D) depthwise, no dilation,
 * column stride 1 or 2, kernel at most 7 x 7. */
int npk_fast_dw_ok(const npk_onnx_conv_params *p) {
    return p->c / p->group == 1 && p->in[0] == 1 && p->k[0] == 1 && p->out[0] == 1 && p->dil[1] == 1 &&
           p->dil[2] == 1 && (p->stride[2] == 1 || p->stride[2] == 2) && p->stride[1] >= 1 && p->k[1] <= 7 &&
           p->k[2] <= 7 && p->k[1] * p->k[2] > 1;
}

/* Plane geometry: PH padded rows, S phases of PW columns each; the output rows [oh0, oh1)
 * are computed (and the padded rows they read filled). */
typedef struct dwgeo {
    int64_t H, W, OH, OW, KH, KW, SH, S, PT, PL, PH, PW, oh0, oh1;
} dwgeo;

static dwgeo dw_geo(const npk_onnx_conv_params *p, int64_t cw) {
    dwgeo g;
    g.H = p->in[1], g.W = p->in[2], g.OH = p->out[1], g.OW = p->out[2];
    g.KH = p->k[1], g.KW = p->k[2], g.SH = p->stride[1], g.S = p->stride[2];
    g.PT = p->pad_b[1], g.PL = p->pad_b[2];
    g.PH = (g.OH - 1) * g.SH + g.KH;
    g.PW = (g.OW + cw - 1) / cw * cw + (g.KW - 1) / g.S + 1; /* runs of cw, the taps' reach, slack */
    g.oh0 = 0, g.oh1 = g.OH;
    return g;
}

/* The padded, phase-split plane of one channel: plane[(ph * PH + r) * PW + j]
 * = x[r - PT][j * S + ph - PL], 0 outside the input. The zeros are the same for every
 * channel: the plane is zeroed once (dw_range) and DW_FILL writes the input's part alone
 * (a libc call per padded row cost more than the taps on ppocr's 3 x 10 and 6 x 20 maps). */
#define DW_FILL(T, SRC)                                                                                               \
    for (int64_t ph = 0; ph < g->S; ph++) {                                                                        \
        /* the phase's columns j with 0 <= j * S + ph - PL < W: [j0, j1) */                                        \
        int64_t c0 = g->PL - ph, j0 = c0 <= 0 ? 0 : (c0 + g->S - 1) / g->S;                                        \
        int64_t j1 = (g->W + g->PL - ph + g->S - 1) / g->S;                                                        \
        if (j1 > g->PW) j1 = g->PW;                                                                                \
        if (j1 < j0) j1 = j0;                                                                                      \
        int64_t r0 = g->PT < 0 ? 0 : g->PT, r1 = g->H + g->PT < g->PH ? g->H + g->PT : g->PH;                      \
        if (r0 < g->oh0 * g->SH) r0 = g->oh0 * g->SH; /* the rows output rows [oh0, oh1) read */                  \
        if (r1 > (g->oh1 - 1) * g->SH + g->KH) r1 = (g->oh1 - 1) * g->SH + g->KH;                                 \
        for (int64_t r = r0; r < r1; r++) {                                                                        \
            T *d = plane + (ph * g->PH + r) * g->PW;                                                               \
            int64_t o = (r - g->PT) * g->W + ph - g->PL;                                                           \
            if (g->S == 1)                                                                                         \
                for (int64_t jj = j0; jj < j1; jj++) d[jj] = (T)(SRC(o + jj));                                    \
            else                                                                                                   \
                for (int64_t jj = j0; jj < j1; jj++) d[jj] = (T)(SRC(o + 2 * jj));                                \
        }                                                                                                          \
    }

/* y[oh][ow] = sum over taps t of w[t] * plane[oh * SH * PW + off[t] + ow] (+ bias), where tap
 * t = (kh, kw) reads phase kw % S at row kh and column kw / S: off[t] = (kw % S) * PH * PW
 * + kh * PW + kw / S. Two vectors of 16 lanes are summed at once (GCC/clang vector
 * extensions; each clone lowers them to its widest registers): 32 columns of one row, or,
 * for rows of at most 16 columns, 16 columns of two rows. V is the vector type, VU the
 * same with element alignment (loads and stores at any column). */
#define DW_STORE(T, V, yr, a, n)                                                                                     \
    do {                                                                                                           \
        V v_ = (a) + bias;                                                                                         \
        if ((n) >= L)                                                                                              \
            *(VU *)(yr) = v_;                                                                                      \
        else if ((n) > 0)                                                                                          \
            memcpy((yr), &v_, sizeof(T) * (size_t)(n));                                                            \
    } while (0)

/* NR output rows from oh, NV vectors of L columns from o0: NR * NV independent sums, so that
 * the additions of one tap do not wait for each other (up to 8 in flight). */
#define DW_BLOCK(T, V, NR, NV)                                                                                        \
    do {                                                                                                           \
        const T *base = plane + oh * rs + o0;                                                                      \
        V a[NR][NV];                                                                                               \
        for (int r = 0; r < NR; r++)                                                                               \
            for (int v = 0; v < NV; v++) a[r][v] = (V){0};                                                         \
        for (int t = 0; t < nt; t++) {                                                                             \
            const T *s = base + off[t];                                                                            \
            T wt = w[t];                                                                                           \
            for (int r = 0; r < NR; r++)                                                                           \
                for (int v = 0; v < NV; v++) a[r][v] += wt * *(const VU *)(s + r * rs + L * v);                    \
        }                                                                                                          \
        for (int r = 0; r < NR; r++)                                                                               \
            for (int v = 0; v < NV; v++) DW_STORE(T, V, y + (oh + r) * OW + o0 + L * v, a[r][v], OW - o0 - L * v);   \
    } while (0)

/* A run of NR rows from column o0: 32 columns, or the row's last columns in as few vectors
 * of L as hold them (AVX2: a 40-column row is 32 + 8, not 32 + 32). */
#define DW_RUNS(T, V, NR)                                                                                             \
    for (o0 = 0; o0 < OW; o0 += 32) {                                                                              \
        int64_t nv_ = OW - o0 >= 32 ? 32 / L : (OW - o0 + L - 1) / L;                                              \
        if (nv_ == 32 / L) DW_BLOCK(T, V, NR, 32 / L);                                                             \
        else if (nv_ == 1) DW_BLOCK(T, V, NR, 1);                                                                  \
        else if (nv_ == 2) DW_BLOCK(T, V, NR, 2);                                                                  \
        else DW_BLOCK(T, V, NR, 3);                                                                                \
    }

/* Rows of more than 16 columns: runs of 32 columns (the last may be shorter), two rows at
 * a time; rows of at most 16 columns: one vector, four rows at a time (three for the last
 * three: ppocr-v4-det's 3-row maps keep six sums in flight, not 4 + 2). */
#define DW_RUN(T, V)                                                                                                  \
    int64_t OW = g->OW, rs = g->SH * g->PW, oh = g->oh0, o0 = 0, OH = g->oh1;                                  \
    if (OW > 16) {                                                                                                 \
        for (; oh + 1 < OH; oh += 2) DW_RUNS(T, V, 2)                                                              \
        for (; oh < OH; oh++) DW_RUNS(T, V, 1)                                                                     \
    } else {                                                                                                       \
        for (; oh + 3 < OH; oh += 4) DW_BLOCK(T, V, 4, 16 / L);                                                    \
        if (oh + 3 == OH) {                                                                                        \
            DW_BLOCK(T, V, 3, 16 / L);                                                                             \
            oh += 3;                                                                                               \
        }                                                                                                          \
        for (; oh + 1 < OH; oh += 2) DW_BLOCK(T, V, 2, 16 / L);                                                    \
        for (; oh < OH; oh++) DW_BLOCK(T, V, 1, 16 / L);                                                           \
    }

static void dw_offsets(const dwgeo *g, int64_t *off) {
    for (int64_t kh = 0, t = 0; kh < g->KH; kh++)
        for (int64_t kw = 0; kw < g->KW; kw++, t++) off[t] = (kw % g->S) * g->PH * g->PW + kh * g->PW + kw / g->S;
}

typedef float vf16 __attribute__((vector_size(64)));
typedef float vf16u __attribute__((vector_size(64), aligned(4)));
typedef int32_t vi16 __attribute__((vector_size(64)));
typedef int32_t vi16u __attribute__((vector_size(64), aligned(4)));
typedef float vf8 __attribute__((vector_size(32)));
typedef float vf8u __attribute__((vector_size(32), aligned(4)));
typedef int32_t vi8 __attribute__((vector_size(32)));
typedef int32_t vi8u __attribute__((vector_size(32), aligned(4)));

/* The sums in vectors of L lanes: 16 (AVX-512 registers; the portable clone) or 8 (AVX2:
 * a 16-lane vector there is lowered through the stack, issue 26). Each lane sums its
 * column's taps in the same order, so every width gives the same bits. */
#define DW_RUN_FN(NAME, T, V, VU_, LANES)                                                                             \
    static inline __attribute__((always_inline)) void NAME(const dwgeo *g, const int64_t *off, const T *plane,      \
                                                           const T *w, T bias, T *y) {                              \
        enum { L = LANES };                                                                                        \
        int nt = (int)(g->KH * g->KW);                                                                             \
        typedef VU_ VU;                                                                                            \
        DW_RUN(T, V)                                                                                               \
    }
DW_RUN_FN(dw_run_f16, float, vf16, vf16u, 16)
DW_RUN_FN(dw_run_f8, float, vf8, vf8u, 8)
DW_RUN_FN(dw_run_i16, int32_t, vi16, vi16u, 16)
DW_RUN_FN(dw_run_i8, int32_t, vi8, vi8u, 8)

/* The clones: AVX-512 and portable sum in 16 lanes, AVX2 in 8. */
#define DW_CLONES(NAME, T, W16, W8)                                                                                   \
    DW_TARGET_AVX512 static void NAME##_avx512(const dwgeo *g, const int64_t *off, const T *plane, const T *w,      \
                                               T bias, T *y) {                                                     \
        W16(g, off, plane, w, bias, y);                                                                            \
    }                                                                                                              \
    DW_TARGET_AVX2 static void NAME##_avx2(const dwgeo *g, const int64_t *off, const T *plane, const T *w, T bias,  \
                                           T *y) {                                                                 \
        W8(g, off, plane, w, bias, y);                                                                             \
    }                                                                                                              \
    static void NAME##_c(const dwgeo *g, const int64_t *off, const T *plane, const T *w, T bias, T *y) {          \
        W16(g, off, plane, w, bias, y);                                                                            \
    }                                                                                                              \
    static void NAME(const dwgeo *g, const int64_t *off, const T *plane, const T *w, T bias, T *y) {              \
        npk_isa l = npk_isa_active();                                                                              \
        if (DW_X86 && l >= NPK_ISA_AVX512) NAME##_avx512(g, off, plane, w, bias, y);                               \
        else if (DW_X86 && l >= NPK_ISA_AVX2) NAME##_avx2(g, off, plane, w, bias, y);                              \
        else NAME##_c(g, off, plane, w, bias, y);                                                                  \
    }
#ifdef NPK_ISA_X86
#define DW_X86 1
#define DW_TARGET_AVX512 NPK_TARGET_AVX512
#define DW_TARGET_AVX2 NPK_TARGET_AVX2
#else
#define DW_X86 0
#define DW_TARGET_AVX512
#define DW_TARGET_AVX2
#endif
DW_CLONES(dw_run_f, float, dw_run_f16, dw_run_f8)
DW_CLONES(dw_run_i, int32_t, dw_run_i16, dw_run_i8)

/* Float rows at column stride 1 on AVX2 and AVX-512 hosts (dw_rows_pick; issue 26:
 * ppocr-cls-mobile-v2's 5 x 5 taps over maps of 2 and 3 rows, ppocr-v4-det's 3 x 10 ... 48 x 160): two output rows x NV vectors of 8 columns
 * at once, the plane walked row by row, each input vector loaded once for both output rows it
 * feeds (row oh + r reads plane row pr with tap kh = pr - (oh + r) * SH). A row sums only the
 * taps whose input row lies inside the input: the others read the plane's zero rows, their
 * products are zeros, and a sum started at +0 is never -0, so x + 0 = x and skipping them
 * leaves every bit as summing them does. Each output is otherwise dw_run_f's: +0, then w * x
 * added tap by tap in (kh, kw) order (a multiply and an add, not a fused one), then the bias:
 * the same bits as the other clones. */
#ifdef NPK_ISA_X86
#include <immintrin.h>

/* The first n (1 .. 7) lanes of v to d (no masked store: VMASKMOVPS stores are microcoded on AMD). */
static inline __attribute__((always_inline)) NPK_TARGET_AVX2 void dwr_store_tail(float *d, __m256 v, int64_t n) {
    __m128 h = _mm256_castps256_ps128(v);
    if (n & 4) {
        _mm_storeu_ps(d, h);
        h = _mm256_extractf128_ps(v, 1), d += 4;
    }
    if (n & 2) {
        _mm_storel_pi((__m64 *)(void *)d, h);
        h = _mm_movehl_ps(h, h), d += 2;
    }
    if (n & 1) _mm_store_ss(d, h);
}

/* NR (1 or 2) output rows from oh, NV vectors from column o0. KW is a constant for the usual
 * kernels (the taps unrolled) and g->KW otherwise. */
static inline __attribute__((always_inline)) NPK_TARGET_AVX2 void dwr_block(const dwgeo *g, const float *plane,
                                                                          const float *w, float bias, float *y,
                                                                          int64_t oh, int64_t o0, const int NR,
                                                                          const int NV, const int KW) {
    const int64_t PW = g->PW, SH = g->SH, OW = g->OW, KH = g->KH;
    __m256 a0[8], a1[8];
    int64_t lo[2], hi[2], p0 = g->PH, p1 = 0; /* row r's taps kh in [lo, hi); the plane rows read */
    for (int r = 0; r < NR; r++) {
        int64_t base = (oh + r) * SH, l = g->PT - base, h = l + g->H;
        lo[r] = l < 0 ? 0 : l > KH ? KH : l;
        hi[r] = h < lo[r] ? lo[r] : h > KH ? KH : h;
        if (lo[r] < hi[r] && base + lo[r] < p0) p0 = base + lo[r];
        if (lo[r] < hi[r] && base + hi[r] > p1) p1 = base + hi[r];
    }
    for (int v = 0; v < NV; v++) a0[v] = a1[v] = _mm256_setzero_ps();
    for (int64_t pr = p0; pr < p1; pr++) {
        int64_t k0 = pr - oh * SH, k1 = k0 - SH;
        int mode = (k0 >= lo[0] && k0 < hi[0]) | (NR == 2 && k1 >= lo[1] && k1 < hi[1]) << 1;
        const float *xr = plane + pr * PW + o0, *w0 = w + (mode & 1 ? k0 : 0) * KW, *w1 = w + (mode & 2 ? k1 : 0) * KW;
        if (mode == 3)
            for (int kw = 0; kw < KW; kw++) {
                __m256 p = _mm256_broadcast_ss(w0 + kw), q = _mm256_broadcast_ss(w1 + kw);
                for (int v = 0; v < NV; v++) {
                    __m256 x = _mm256_loadu_ps(xr + kw + 8 * v);
                    a0[v] = _mm256_add_ps(a0[v], _mm256_mul_ps(p, x));
                    a1[v] = _mm256_add_ps(a1[v], _mm256_mul_ps(q, x));
                }
            }
        else if (mode == 1)
            for (int kw = 0; kw < KW; kw++) {
                __m256 p = _mm256_broadcast_ss(w0 + kw);
                for (int v = 0; v < NV; v++) a0[v] = _mm256_add_ps(a0[v], _mm256_mul_ps(p, _mm256_loadu_ps(xr + kw + 8 * v)));
            }
        else if (mode == 2)
            for (int kw = 0; kw < KW; kw++) {
                __m256 q = _mm256_broadcast_ss(w1 + kw);
                for (int v = 0; v < NV; v++) a1[v] = _mm256_add_ps(a1[v], _mm256_mul_ps(q, _mm256_loadu_ps(xr + kw + 8 * v)));
            }
    }
    __m256 b = _mm256_set1_ps(bias);
    int64_t n = OW - o0 - 8 * (NV - 1); /* columns of the last vector (1 .. 8) */
    for (int r = 0; r < NR; r++) {
        float *yr = y + (oh + r) * OW + o0;
        for (int v = 0; v < NV; v++) {
            __m256 t = _mm256_add_ps(r ? a1[v] : a0[v], b);
            if (v < NV - 1 || n >= 8) _mm256_storeu_ps(yr + 8 * v, t);
            else dwr_store_tail(yr + 8 * v, t, n);
        }
    }
}

/* NR rows from oh over the whole width in runs of NV vectors, the last run in as few as hold it. */
#define DWR_RUNS(NR, NV, KW)                                                                                          \
    for (int64_t o0 = 0; o0 < OW; o0 += 8 * (NV)) {                                                                 \
        int64_t nv = (OW - o0 + 7) / 8;                                                                            \
        if (nv >= (NV)) dwr_block(g, plane, w, bias, y, oh, o0, NR, NV, KW);                                       \
        else if (nv == 1) dwr_block(g, plane, w, bias, y, oh, o0, NR, 1, KW);                                      \
        else if (nv == 2) dwr_block(g, plane, w, bias, y, oh, o0, NR, 2, KW);                                      \
        else if (nv == 3) dwr_block(g, plane, w, bias, y, oh, o0, NR, 3, KW);                                      \
        else if (nv == 4) dwr_block(g, plane, w, bias, y, oh, o0, NR, 4 < (NV) ? 4 : (NV), KW);                    \
        else if (nv == 5) dwr_block(g, plane, w, bias, y, oh, o0, NR, 5 < (NV) ? 5 : (NV), KW);                    \
        else if (nv == 6) dwr_block(g, plane, w, bias, y, oh, o0, NR, 6 < (NV) ? 6 : (NV), KW);                    \
        else dwr_block(g, plane, w, bias, y, oh, o0, NR, 7 < (NV) ? 7 : (NV), KW);                                 \
    }

/* The output rows [oh0, oh1): pairs of rows in runs of 32 columns (eight sums in flight), a last
 * single row in runs of 64. */
#define DWR_ROWS(KW)                                                                                                  \
    do {                                                                                                           \
        for (; oh + 2 <= g->oh1; oh += 2) DWR_RUNS(2, 4, KW)                                                       \
        if (oh < g->oh1) DWR_RUNS(1, 8, KW)                                                                        \
    } while (0)

NPK_TARGET_AVX2 static void dw_rows_f_avx2(const dwgeo *g, const float *plane, const float *w, float bias, float *y) {
    int64_t OW = g->OW, oh = g->oh0; /* the output rows [oh0, oh1) */
    if (g->KW == 3) DWR_ROWS(3);
    else if (g->KW == 5) DWR_ROWS(5);
    else DWR_ROWS((int)g->KW);
}
#undef DWR_ROWS
#undef DWR_RUNS

/* The rows of taps that read padding rows, over the whole map: dw_rows_f_avx2 skips them. It
 * takes the maps where they are at least an eighth of the taps (ppocr-cls-mobile-v2's maps of
 * 2 to 6 rows, ppocr-v4-det's 3 x 10 and 6 x 20); on taller maps it measured up to 8 % slower
 * than dw_run_f (ppocr-v4-det's 24 x 80 and 48 x 160: memory-bound there). */
static int64_t dw_pad_rows(const dwgeo *g) {
    int64_t n = 0;
    for (int64_t oh = 0; oh < g->OH; oh++)
        for (int64_t kh = 0; kh < g->KH; kh++) {
            int64_t i = oh * g->SH + kh - g->PT;
            n += i < 0 || i >= g->H;
        }
    return n;
}

/* Whether dw_rows_f_avx2 takes this map (the same bits either way). On AVX2: when its padding
 * rows are at least an eighth of the taps. On AVX-512 (levels avx512 and avx512vnni: it is AVX2
 * code and runs there) also only when it runs fewer vector multiplies and adds than the 16-lane
 * clone, which takes twice the columns per instruction but every tap: the kept tap rows times
 * vectors of 8 columns against all tap rows times vectors of 16 (ppocr-cls-mobile-v2's 5 x 5 over
 * 2 x 96: 4 of 10 tap rows x 12 = 48 against 10 x 6 = 60, the rows kernel; over 3 x 96: 9 x 12 =
 * 108 against 15 x 6 = 90, the clone; ppocr-v4-det's 3 x 10 and 6 x 20: the clone). An instruction
 * count, not a timing: on an AVX-512 core with one 512-bit FMA unit (Ice Lake client, Zen 4's
 * halves) the rows kernel would also win some of the maps left to the clone. */
static int dw_rows_pick(const dwgeo *g) {
    npk_isa l = npk_isa_active();
    if (g->S != 1 || l < NPK_ISA_AVX2) return 0;
    int64_t all = g->OH * g->KH, pad = dw_pad_rows(g);
    if (pad * 8 < all) return 0;
    return l == NPK_ISA_AVX2 || (all - pad) * ((g->OW + 7) / 8) < all * ((g->OW + 15) / 16);
}

/* The plane of a channel at column stride 1 (DW_FILL's for S = 1, its copies inline). */
NPK_TARGET_AVX2 static void dw_fill_f_avx2(const dwgeo *g, const float *x, float *plane) {
    int64_t j0 = g->PL < 0 ? 0 : g->PL, j1 = g->W + g->PL < g->PW ? g->W + g->PL : g->PW;
    int64_t r0 = g->PT < 0 ? 0 : g->PT, r1 = g->H + g->PT < g->PH ? g->H + g->PT : g->PH;
    if (r0 < g->oh0 * g->SH) r0 = g->oh0 * g->SH; /* the rows output rows [oh0, oh1) read */
    if (r1 > (g->oh1 - 1) * g->SH + g->KH) r1 = (g->oh1 - 1) * g->SH + g->KH;
    if (j1 <= j0) return;
    int64_t n = j1 - j0, nv = n & ~(int64_t)7;
    for (int64_t r = r0; r < r1; r++) {
        float *d = plane + r * g->PW + j0;
        const float *s = x + (r - g->PT) * g->W + j0 - g->PL;
        for (int64_t j = 0; j < nv; j += 8) _mm256_storeu_ps(d + j, _mm256_loadu_ps(s + j));
        if (n & 4) _mm_storeu_ps(d + nv, _mm_loadu_ps(s + nv));
        for (int64_t j = nv + (n & 4); j < n; j++) d[j] = s[j]; /* (at most 3) */
    }
}
#endif

/* Columns per run: 32 (one row), or 16 for rows of at most 16 columns (two rows at a time). */
static int64_t dw_cw(const npk_onnx_conv_params *p) { return p->out[2] <= 16 ? 16 : 32; }

/* The channels [q0, q1) of the flattened (batch, group) grid, output rows [oh0, oh1), with
 * their own plane. Float (x, w, b, y as floats) or integer (xt, zx, wq, yi). */
typedef struct dw_job {
    const npk_onnx_conv_params *p;
    const float *x, *w, *b;
    float *y;
    const npk_tensor *xt;
    int32_t zx;
    const int16_t *wq;
    int32_t *yi;
    int64_t chunk, nq;
    int ntasks, by_rows, fail[NPK_THREADS_MAX * 4];
} dw_job;

static int dw_range(const dw_job *j, int64_t q0, int64_t q1, int64_t oh0, int64_t oh1) {
    const npk_onnx_conv_params *p = j->p;
    dwgeo gg = dw_geo(p, dw_cw(p)), *g = &gg;
    g->oh0 = oh0, g->oh1 = oh1;
    int64_t off[49];
    dw_offsets(g, off);
    int64_t isz = g->H * g->W, osz = g->OH * g->OW, ksz = g->KH * g->KW, mpg = p->m / p->group;
    size_t psz = (size_t)(g->S * g->PH * g->PW);
    if (!j->xt) {
        float *plane = calloc(psz, sizeof(float)); /* the padding: zero for every channel */
        if (!plane) return -NPK_ENOMEM;
#ifdef NPK_ISA_X86
        int rows = dw_rows_pick(g);
#endif
        for (int64_t q = q0; q < q1; q++) { /* q = n * group + channel */
            const float *xc = j->x + q * isz;
#ifdef NPK_ISA_X86
            if (rows) {
                dw_fill_f_avx2(g, xc, plane);
                for (int64_t m = q % p->group * mpg, e = m + mpg, n = q / p->group; m < e; m++)
                    dw_rows_f_avx2(g, plane, j->w + m * ksz, j->b ? j->b[m] : 0.0f, j->y + (n * p->m + m) * osz);
                continue;
            }
#endif
#define SRCF(i) xc[i]
            DW_FILL(float, SRCF)
#undef SRCF
            for (int64_t m = q % p->group * mpg, e = m + mpg, n = q / p->group; m < e; m++)
                dw_run_f(g, off, plane, j->w + m * ksz, j->b ? j->b[m] : 0.0f, j->y + (n * p->m + m) * osz);
        }
        free(plane);
        return 0;
    }
    int32_t *plane = calloc(psz, sizeof(int32_t)), w[49]; /* the padding (after the zero point): 0 */
    if (!plane) return -NPK_ENOMEM;
    int32_t zx = j->zx;
    for (int64_t q = q0; q < q1; q++) {
        int64_t xo = q * isz;
        if (j->xt->dtype == NPK_DT_INT8) {
            const int8_t *xc = (const int8_t *)j->xt->data + xo;
#define SRCQ(i) (xc[i] - zx)
            DW_FILL(int32_t, SRCQ)
        } else {
            const uint8_t *xc = (const uint8_t *)j->xt->data + xo;
            DW_FILL(int32_t, SRCQ)
#undef SRCQ
        }
        for (int64_t m = q % p->group * mpg, e = m + mpg, n = q / p->group; m < e; m++) {
            for (int64_t i = 0; i < ksz; i++) w[i] = j->wq[m * ksz + i];
            dw_run_i(g, off, plane, w, 0, j->yi + (n * p->m + m) * osz);
        }
    }
    free(plane);
    return 0;
}

static void dw_task(void *ctx, int t) {
    dw_job *j = ctx;
    int64_t lo = t * j->chunk;
    if (j->by_rows) { /* every channel, output rows [lo, hi) */
        int64_t hi = t == j->ntasks - 1 ? j->p->out[1] : lo + j->chunk;
        j->fail[t] = dw_range(j, 0, j->nq, lo, hi);
        return;
    }
    int64_t hi = t == j->ntasks - 1 ? j->nq : lo + j->chunk;
    j->fail[t] = dw_range(j, lo, hi, 0, j->p->out[1]);
}

/* Threads (include/npukit/threads.h): each output computed as on one thread, so the bytes
 * are the same at every count. A map of at least 2 rows per thread is split by output rows:
 * every thread takes the same part of the map as in the pointwise convolutions around it
 * (their column slices, in order: the pool's per-thread blocks), so it reads mostly what it
 * wrote; other maps are split by channels. From DW_PAR_MIN MACs (~4 us): split by channels,
 * the part of the input another core wrote cost what the split saved below 2^20 MACs on the
 * 2-core KVM host of issue 26 (ppocr-cls-mobile-v2's 2^18..2^19-MAC convolutions ran 0.7x as
 * fast); split by rows, ppocr-v4-det's 1e5..6e5-MAC ones run 1.3-1.6x as fast (det2t, Nov 29). */
#define DW_PAR_MIN (1 << 16)

static int dw_run_all(dw_job *j) {
    const npk_onnx_conv_params *p = j->p;
    j->nq = p->n * p->group;
    int64_t macs = p->n * p->m * p->out[1] * p->out[2] * p->k[1] * p->k[2], OH = p->out[1];
    int th = npk_threads_now();
    if (th < 2 || macs < DW_PAR_MIN || (j->nq < 2 && OH < 2 * th)) return dw_range(j, 0, j->nq, 0, OH);
    j->by_rows = OH >= 2 * th;
    /* row slices of at least KH (and 4) rows, as each fills the KH - 1 rows around it again:
     * one or two per thread (a multiple of the threads, so that each thread's block of
     * slices is its half of the map, not two thirds) */
    int64_t kr = p->k[1] > 4 ? p->k[1] : 4, units = j->by_rows ? OH : j->nq;
    int64_t n = j->by_rows ? (OH >= 2 * th * kr ? 2 * th : th) : units < th * 4 ? units : th * 4;
    j->chunk = units / n;
    j->ntasks = (int)(units / j->chunk);
    npk_parallel(j->ntasks, dw_task, j);
    for (int t = 0; t < j->ntasks; t++)
        if (j->fail[t]) return j->fail[t];
    return 0;
}

int npk_fast_dw_f32(const npk_onnx_conv_params *p, const float *x, const float *w, const float *b, float *y) {
    dw_job j = {.p = p, .x = x, .w = w, .b = b, .y = y};
    return dw_run_all(&j);
}

int npk_fast_dw_i32(const npk_onnx_conv_params *p, const npk_tensor *x, int32_t zx, const int16_t *wq, int32_t *y) {
    dw_job j = {.p = p, .xt = x, .zx = zx, .wq = wq, .yi = y};
    return dw_run_all(&j);
}
