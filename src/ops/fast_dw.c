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
        for (int64_t q = q0; q < q1; q++) { /* q = n * group + channel */
            const float *xc = j->x + q * isz;
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
    int th = npk_threads();
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
