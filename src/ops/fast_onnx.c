// SPDX-License-Identifier: MIT
/* Fast CPU kernels for Conv, MatMul, Gemm and the quantization loops (see
 * fast_onnx.h). Compiled with -O3 (cmake/onnx.cmake); the hot loops are
 * compiled for AVX-512, AVX2 and portable C and chosen per call from the
 * instruction-set level (NPK_ISA_CLONES of npukit/cpu.h). */
#include "ops/fast_onnx.h"

#include "npukit/gemm.h"
#include "npukit/threads.h"

#include <math.h>

/* The elementwise kernels equal the golden bit for bit only if no clone
 * fuses a multiply and an add (GCC does not in ISO C mode; clang would). */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------------ */

static int is_q8(int dt) { return dt == NPK_DT_INT8 || dt == NPK_DT_UINT8; }

/* Element i of an 8-bit tensor (int8 or uint8) as int32. */
static int32_t q8_at(const npk_tensor *t, int64_t i) {
    return t->dtype == NPK_DT_INT8 ? ((const int8_t *)t->data)[i] : ((const uint8_t *)t->data)[i];
}

static int32_t zp_of(const npk_tensor *zp, int64_t i) {
    if (!zp) return 0;
    return q8_at(zp, npk_tensor_numel(zp) > 1 ? i : 0);
}

/* dst[i] = src[i] - z for n 8-bit elements, as int16. */
static void q8_to_i16(const npk_tensor *t, int64_t off, int64_t n, int32_t z, int16_t *dst) {
    if (t->dtype == NPK_DT_INT8) {
        const int8_t *s = (const int8_t *)t->data + off;
        for (int64_t i = 0; i < n; i++) dst[i] = (int16_t)(s[i] - z);
    } else {
        const uint8_t *s = (const uint8_t *)t->data + off;
        for (int64_t i = 0; i < n; i++) dst[i] = (int16_t)(s[i] - z);
    }
}

/* Largest K whose int32 sums of (255 * 255) products cannot overflow. */
#define NPK_FAST_KMAX ((int64_t)(2147483647 / (255 * 255)))

/* Output rows (o0, o1 pairs of o[2] positions) per im2col chunk: the chunk's
 * column buffer holds about 2^20 elements. */
static int64_t chunk_rows(int64_t K, int64_t row) {
    int64_t r = ((int64_t)1 << 20) / (K * row > 0 ? K * row : 1);
    return r < 1 ? 1 : r;
}

/* ---- float convolution ----------------------------------------------------------- */

/* im2col of one group (the integer convolutions): col[K][nrows * o2] for output rows r0 .. r0+nrows of
 * the flattened (o0, o1) grid, K = cpg * k0 * k1 * k2; padding reads 0. */
#define IM2COL_BODY(T, ZERO, LOAD)                                                                                    \
    const int64_t *in = p->in, *k = p->k, *o = p->out;                                                           \
    int64_t isz = in[0] * in[1] * in[2], ncol = nrows * o[2];                                                     \
    int64_t kk = 0;                                                                                               \
    for (int64_t c = 0; c < cpg; c++)                                                                             \
        for (int64_t k0 = 0; k0 < k[0]; k0++)                                                                     \
            for (int64_t k1 = 0; k1 < k[1]; k1++)                                                                 \
                for (int64_t k2 = 0; k2 < k[2]; k2++, kk++) {                                                     \
                    T *dst = col + kk * ncol;                                                                     \
                    int64_t off2 = k2 * p->dil[2] - p->pad_b[2], s2 = p->stride[2];                               \
                    /* o2 with 0 <= o2 * s2 + off2 < in[2] */                                                      \
                    int64_t lo = off2 >= 0 ? 0 : (-off2 + s2 - 1) / s2;                                           \
                    int64_t hi = in[2] - off2 <= 0 ? 0 : (in[2] - off2 - 1) / s2 + 1;                             \
                    if (hi > o[2]) hi = o[2];                                                                     \
                    if (lo > hi) lo = hi;                                                                         \
                    for (int64_t r = 0; r < nrows; r++) {                                                         \
                        int64_t rr = r0 + r, o0 = rr / o[1], o1 = rr % o[1];                                      \
                        int64_t i0 = o0 * p->stride[0] - p->pad_b[0] + k0 * p->dil[0];                            \
                        int64_t i1 = o1 * p->stride[1] - p->pad_b[1] + k1 * p->dil[1];                            \
                        T *d = dst + r * o[2];                                                                    \
                        if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1]) {                                     \
                            for (int64_t j = 0; j < o[2]; j++) d[j] = ZERO;                                       \
                            continue;                                                                             \
                        }                                                                                         \
                        int64_t base = xoff + c * isz + (i0 * in[1] + i1) * in[2] + off2;                         \
                        for (int64_t j = 0; j < lo; j++) d[j] = ZERO;                                             \
                        if (s2 == 1)                                                                              \
                            for (int64_t j = lo; j < hi; j++) d[j] = LOAD(base + j);                              \
                        else                                                                                      \
                            for (int64_t j = lo; j < hi; j++) d[j] = LOAD(base + j * s2);                         \
                        for (int64_t j = hi; j < o[2]; j++) d[j] = ZERO;                                          \
                    }                                                                                             \
                }

/* im2col of an 8-bit x as the int8 x' of the integer GEMMs (see below); the
 * padding reads zx', so that it contributes x' - zx' = 0. */
static void im2col_s8(const npk_onnx_conv_params *p, const npk_tensor *xt, int8_t zx, int64_t xoff, int64_t cpg,
                      int64_t r0, int64_t nrows, int8_t *col) {
    if (xt->dtype == NPK_DT_INT8) {
        const int8_t *x = xt->data;
#define LOADS(i) x[i]
        IM2COL_BODY(int8_t, zx, LOADS)
#undef LOADS
    } else {
        const uint8_t *x = xt->data;
#define LOADU(i) (int8_t)(x[i] ^ 0x80)
        IM2COL_BODY(int8_t, zx, LOADU)
#undef LOADU
    }
}

/* The float im2col as the GEMM's pack function (npk_gemm_f32_pack_fn): rows k0 .. k0+kc-1
 * (k = (c, k0, k1, k2) of one group) and output positions j0 .. j0+nb-1 of the flattened
 * (o0, o1, o2) grid, built block by block into the kernel's panel; padding reads 0. The
 * positions are cut once into runs of one output row (the same (o0, o1)). */
typedef struct conv_pack_ctx {
    const npk_onnx_conv_params *p;
    const float *x;
    int64_t xoff, cpg;
} conv_pack_ctx;

NPK_ISA_CLONES_VOID(conv_pack_body, (const conv_pack_ctx *cx, int64_t k0, int64_t kc, int64_t j0, int64_t nb,
                                     float *dst, int64_t ldd),
                    (cx, k0, kc, j0, nb, dst, ldd)) {
    const npk_onnx_conv_params *p = cx->p;
    const int64_t *in = p->in, *k = p->k, *o = p->out;
    int64_t isz = in[0] * in[1] * in[2];
    enum { RUNS = 64 };
    int64_t ro0[RUNS], ro1[RUNS], ro2[RUNS], rlen[RUNS], rdj[RUNS], nr = 0;
    for (int64_t j = j0; j < j0 + nb && nr < RUNS; nr++) {
        int64_t rr = j / o[2], o2 = j % o[2], len = o[2] - o2 < j0 + nb - j ? o[2] - o2 : j0 + nb - j;
        ro0[nr] = rr / o[1], ro1[nr] = rr % o[1], ro2[nr] = o2, rlen[nr] = len, rdj[nr] = j - j0;
        j += len;
    }
    /* k0 as (c, q0, q1, q2), then counted up */
    int64_t q2 = k0 % k[2], q1 = k0 / k[2] % k[1], q0 = k0 / (k[1] * k[2]) % k[0], c = k0 / (k[0] * k[1] * k[2]);
    int64_t s2 = p->stride[2];
    for (int64_t kk = 0; kk < kc; kk++) {
        const float *xc = cx->x + cx->xoff + c * isz;
        int64_t off2 = q2 * p->dil[2] - p->pad_b[2];
        /* o2 with 0 <= o2 * s2 + off2 < in[2]: [lo, hi) */
        int64_t lo = off2 >= 0 ? 0 : (-off2 + s2 - 1) / s2;
        int64_t hi = in[2] - off2 <= 0 ? 0 : (in[2] - off2 - 1) / s2 + 1;
        float *drow = dst + kk * ldd;
        for (int64_t r = 0; r < nr; r++) {
            float *d = drow + rdj[r];
            int64_t i0 = ro0[r] * p->stride[0] - p->pad_b[0] + q0 * p->dil[0];
            int64_t i1 = ro1[r] * p->stride[1] - p->pad_b[1] + q1 * p->dil[1];
            int64_t a = ro2[r], e = ro2[r] + rlen[r];
            if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1]) {
                for (int64_t j = 0; j < rlen[r]; j++) d[j] = 0.0f;
                continue;
            }
            int64_t va = a > lo ? a : lo, ve = e < hi ? e : hi;
            if (ve < va) ve = va;
            const float *src = xc + (i0 * in[1] + i1) * in[2] + off2;
            for (int64_t j = a; j < va; j++) d[j - a] = 0.0f;
            if (s2 == 1)
                for (int64_t j = va; j < ve; j++) d[j - a] = src[j];
            else
                for (int64_t j = va; j < ve; j++) d[j - a] = src[j * s2];
            for (int64_t j = ve; j < e; j++) d[j - a] = 0.0f;
        }
        if (++q2 == k[2]) {
            q2 = 0;
            if (++q1 == k[1]) {
                q1 = 0;
                if (++q0 == k[0]) q0 = 0, c++;
            }
        }
    }
}

static void conv_pack(void *ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nb, float *dst, int64_t ldd) {
    conv_pack_body(ctx, k0, kc, j0, nb, dst, ldd);
}

/* 2-D (or 1-D) convolutions with stride 1 (any dilation) or without dilation (any stride)
 * skip im2col: each channel is copied once into zero-padded planes, one per phase
 * (pr, pc) of the strides (pr < SH, pc < SW; stride 1: one plane), plane (pr, pc)[r][j] =
 * the padded input at row r * SH + pr, column j * SW + pc, of PH rows of PW = OW + (KW - 1) *
 * dil / SW columns, and the output is computed at the positions oh * PW + ow of the padded
 * width (OW <= ow < PW: discarded columns). Row k = (c, kh, kw) of the GEMM's B is then a
 * plane itself from offset (kh * dh / SH) * PW + kw * dw / SW of the phase (kh * dh % SH,
 * kw * dw % SW), so packing a block is a copy of contiguous runs (an im2col of a strided
 * convolution gathers every other element). The products and their order (k, padding zeros
 * included) are those of im2col: the same bits. */
typedef struct plane_ctx {
    const float *plane;
    const int64_t *off; /* per row k */
} plane_ctx;

/* (a loop the compiler vectorizes, not memcpy: a libc call per 24-float row was 8 % of ppocr-v4-det) */
NPK_ISA_CLONES_VOID(plane_pack_body, (const plane_ctx *pc, int64_t k0, int64_t kc, int64_t j0, int64_t nb, float *dst,
                                      int64_t ldd),
                    (pc, k0, kc, j0, nb, dst, ldd)) {
    for (int64_t k = 0; k < kc; k++) {
        const float *s = pc->plane + pc->off[k0 + k] + j0;
        float *d = dst + k * ldd;
        for (int64_t j = 0; j < nb; j++) d[j] = s[j];
    }
}

static void plane_pack(void *ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nb, float *dst, int64_t ldd) {
    plane_pack_body(ctx, k0, kc, j0, nb, dst, ldd);
}

static int conv_plane_ok(const npk_onnx_conv_params *p) {
    return p->in[0] == 1 && p->k[0] == 1 && p->out[0] == 1 && p->stride[1] >= 1 && p->stride[2] >= 1 &&
           ((p->stride[1] == 1 && p->stride[2] == 1) || (p->dil[1] == 1 && p->dil[2] == 1));
}

/* The padded input's row r of channel x (H x Wd, pads PT / PL) at columns j * SW + pc,
 * j in [0, PW), into d (zeros outside the input). */
static void plane_row(float *d, const float *x, int64_t H, int64_t Wd, int64_t r, int64_t PT, int64_t PL, int64_t SW,
                      int64_t pc, int64_t PW) {
    int64_t ir = r - PT;
    if (ir < 0 || ir >= H) {
        memset(d, 0, sizeof(float) * (size_t)PW);
        return;
    }
    /* the phase's columns j with 0 <= j * SW + pc - PL < Wd: [j0, j1) */
    int64_t c0 = PL - pc, j0 = c0 <= 0 ? 0 : (c0 + SW - 1) / SW, j1 = (Wd + PL - pc + SW - 1) / SW;
    if (j0 > PW) j0 = PW;
    if (j1 > PW) j1 = PW;
    if (j1 < j0) j1 = j0;
    memset(d, 0, sizeof(float) * (size_t)j0);
    const float *xr = x + ir * Wd + pc - PL;
    if (SW == 1) memcpy(d + j0, xr + j0, sizeof(float) * (size_t)(j1 - j0));
    else
        for (int64_t j = j0; j < j1; j++) d[j] = xr[j * SW];
    memset(d + j1, 0, sizeof(float) * (size_t)(PW - j1));
}

/* The GEMM in chunks of output rows, each with its own slice of C (a few tens of KB: it stays
 * in cache from the bias to the copy into Y); threads take whole chunks. Every output is the
 * same chain of products whatever the chunk, so the bits do not depend on the split. */
typedef struct plane_job {
    const float *pl, *W, *B;
    const int64_t *off;
    float *Y, *tmp;
    int64_t mpg, K, PW, OW, OH, osz, rows; /* rows per chunk */
} plane_job;

static void plane_task(void *ctx, int t) {
    const plane_job *j = ctx;
    int64_t r0 = t * j->rows, nr = j->OH - r0 < j->rows ? j->OH - r0 : j->rows, np = nr * j->PW;
    float *tmp = j->tmp + r0 * j->PW * j->mpg;
    plane_ctx pc = {j->pl + r0 * j->PW, j->off}; /* the sums start from the bias */
    npk_gemm_f32_reassoc_packed_bias(j->mpg, np, j->K, j->W, j->K, plane_pack, &pc, j->B, tmp, np);
    for (int64_t m = 0; m < j->mpg; m++)
        for (int64_t r = 0; r < nr; r++)
            memcpy(j->Y + m * j->osz + (r0 + r) * j->OW, tmp + m * np + r * j->PW, sizeof(float) * (size_t)j->OW);
}

static int conv_plane(const npk_onnx_conv_params *p, const float *X, const float *W, const float *B, float *Y) {
    int64_t H = p->in[1], Wd = p->in[2], OH = p->out[1], OW = p->out[2], KH = p->k[1], KW = p->k[2];
    int64_t dh = p->dil[1], dw = p->dil[2], PT = p->pad_b[1], PL = p->pad_b[2], SH = p->stride[1], SW = p->stride[2];
    int64_t PW = OW + (KW - 1) * dw / SW, PH = OH + (KH - 1) * dh / SH, plane = PH * PW, NP = OH * PW;
    int64_t cpg = p->c / p->group, mpg = p->m / p->group, K = cpg * KH * KW, isz = H * Wd, osz = OH * OW;
    int64_t nph = SH * SW, cplane = nph * plane; /* a channel's planes */
    size_t slack = (size_t)((KW - 1) * dw + 16);
    float *pl = malloc(sizeof(float) * ((size_t)(p->c * cplane) + slack)), *tmp = malloc(sizeof(float) * (size_t)(mpg * NP));
    int64_t *off = malloc(sizeof(int64_t) * (size_t)K);
    if (!pl || !tmp || !off) {
        free(pl), free(tmp), free(off);
        return -NPK_ENOMEM;
    }
    memset(pl + p->c * cplane, 0, sizeof(float) * slack);
    for (int64_t c = 0, k = 0; c < cpg; c++)
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++)
                off[k++] = c * cplane + ((kh * dh % SH) * SW + kw * dw % SW) * plane + kh * dh / SH * PW + kw * dw / SW;
    /* chunks of about 8K values of C (at least one output row); with threads, at least one
     * chunk per thread */
    int64_t rows = (1 << 13) / (mpg * PW > 0 ? mpg * PW : 1);
    int th = npk_threads_now(), par = th > 1 && mpg * NP * K >= (1 << 20);
    if (par && rows > (OH + th - 1) / th) rows = (OH + th - 1) / th;
    if (rows < 1) rows = 1;
    if (rows > OH) rows = OH;
    int ntasks = (int)((OH + rows - 1) / rows);
    for (int64_t n = 0; n < p->n; n++) {
        for (int64_t c = 0; c < p->c; c++)
            for (int64_t ph = 0; ph < nph; ph++)
                for (int64_t r = 0; r < PH; r++)
                    plane_row(pl + c * cplane + ph * plane + r * PW, X + (n * p->c + c) * isz, H, Wd,
                              r * SH + ph / SW, PT, PL, SW, ph % SW, PW);
        for (int64_t g = 0; g < p->group; g++) {
            plane_job j = {pl + g * cpg * cplane, W + g * mpg * K, B ? B + g * mpg : NULL, off,
                           Y + (n * p->m + g * mpg) * osz, tmp, mpg, K, PW, OW, OH, osz, rows};
            if (par && ntasks > 1) npk_parallel(ntasks, plane_task, &j);
            else
                for (int t = 0; t < ntasks; t++) plane_task(&j, t);
        }
    }
    free(pl), free(tmp), free(off);
    return 0;
}

/* Column-stride-1 2-D convolutions with at least 32 output columns (narrower rows: the plane
 * below is faster) and 8 input channels per group, without any packing: the
 * input copied once into a zero-padded copy interleaved by rows, R[PH][C][PW], so that for a
 * tap (kh, kw) the C rows of B an output row needs, x[c][oh * sh + kh * dh][kw * dw ...], are C
 * rows of R at the constant stride PW: output row oh of the product is
 *   Y[m][oh][.] = B[m] + sum over (kh, kw) of W(kh, kw)[m][c] x R[oh * sh + kh * dh][c][kw * dw + .],
 * KH * KW GEMMs of K = C per output row read in place (W(kh, kw) the weights reordered once per
 * call). The products are those of im2col in another order (float tolerance); every output is
 * summed in the same order whatever the thread count (threads take whole output rows). At most
 * 16 rows of A per GEMM call: the GEMM then reads B in place instead of copying it (a copy is
 * what the plane packing paid). */
typedef struct conv_rows_job {
    const npk_onnx_conv_params *p;
    const float *R, *Wr, *B;
    float *Y;
    int64_t PW, C, mpg, OH, OW;
    int ntasks;
} conv_rows_job;

static void conv_rows_task(void *ctx, int t) {
    const conv_rows_job *j = ctx;
    const npk_onnx_conv_params *p = j->p;
    int64_t KH = p->k[1], KW = p->k[2], osz = j->OH * j->OW, C = j->C, M = j->mpg;
    int64_t r0 = t * j->OH / j->ntasks, r1 = (t + 1) * j->OH / j->ntasks; /* rows dealt evenly */
    for (int64_t oh = r0; oh < r1; oh++) {
        float *y = j->Y + oh * j->OW;
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++) {
                const float *b = j->R + (oh * p->stride[1] + kh * p->dil[1]) * C * j->PW + kw * p->dil[2];
                const float *w = j->Wr + (kh * KW + kw) * M * C;
                for (int64_t m0 = 0; m0 < M; m0 += 16) {
                    int64_t mc = M - m0 < 16 ? M - m0 : 16;
                    if (kh || kw) npk_gemm_f32_reassoc(mc, j->OW, C, w + m0 * C, C, b, j->PW, y + m0 * osz, osz, 1);
                    else /* the first tap: the sums start from the bias */
                        npk_gemm_f32_reassoc_bias(mc, j->OW, C, w + m0 * C, C, b, j->PW, j->B ? j->B + m0 : NULL,
                                                  y + m0 * osz, osz);
                }
            }
    }
}

static int conv_rows_ok(const npk_onnx_conv_params *p) {
    return p->in[0] == 1 && p->k[0] == 1 && p->out[0] == 1 && p->stride[2] == 1 && p->out[2] >= 32 &&
           p->c / p->group >= 8;
}

/* Padded rows [r0, r1) of R from the group's input xg: [PL, PL + Wd) of each clipped to [c0, c1). */
typedef struct rows_fill {
    float *R;
    const float *xg;
    int64_t C, H, Wd, PW, PT, PL, c0, c1, PH;
    int ntasks;
} rows_fill;

static void rows_fill_task(void *ctx, int t) {
    const rows_fill *f = ctx;
    for (int64_t r = t * f->PH / f->ntasks, r1 = (t + 1) * f->PH / f->ntasks; r < r1; r++)
        for (int64_t c = 0; c < f->C; c++) {
            float *d = f->R + (r * f->C + c) * f->PW;
            int64_t ir = r - f->PT;
            if (ir < 0 || ir >= f->H) {
                memset(d, 0, sizeof(float) * (size_t)f->PW);
                continue;
            }
            memset(d, 0, sizeof(float) * (size_t)f->c0);
            memcpy(d + f->c0, f->xg + (c * f->H + ir) * f->Wd + (f->c0 - f->PL), sizeof(float) * (size_t)(f->c1 - f->c0));
            memset(d + f->c1, 0, sizeof(float) * (size_t)(f->PW - f->c1));
        }
}

static int conv_rows(const npk_onnx_conv_params *p, const float *X, const float *W, const float *B, float *Y) {
    int64_t H = p->in[1], Wd = p->in[2], OH = p->out[1], OW = p->out[2], KH = p->k[1], KW = p->k[2];
    int64_t PT = p->pad_b[1], PL = p->pad_b[2], cpg = p->c / p->group, mpg = p->m / p->group;
    int64_t PW = OW + (KW - 1) * p->dil[2], PH = (OH - 1) * p->stride[1] + (KH - 1) * p->dil[1] + 1;
    float *R = malloc(sizeof(float) * (size_t)(PH * cpg * PW + 16)), *Wr = malloc(sizeof(float) * (size_t)(mpg * cpg * KH * KW));
    if (!R || !Wr) {
        free(R), free(Wr);
        return -NPK_ENOMEM;
    }
    /* the input columns of a padded row: [PL, PL + Wd) clipped to [0, PW) */
    int64_t c0 = PL < 0 ? 0 : PL > PW ? PW : PL, c1 = PL + Wd > PW ? PW : PL + Wd < c0 ? c0 : PL + Wd;
    int th = npk_threads_now();
    /* the rows dealt evenly (OH 12 over 8 tasks: 1 or 2 rows each, not 1 and a last of 5), so
     * that each thread's block of tasks is its part of the map; R filled by the same blocks of
     * padded rows first (each thread copies the rows it wrote in the node before, mostly the
     * ones it reads) */
    int64_t tasks = th > 1 && mpg * OH * OW * cpg * KH * KW >= (1 << 21) ? (OH < th * 4 ? OH : th * 4) : 1;
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t g = 0; g < p->group; g++) {
            rows_fill f = {R, X + (n * p->c + g * cpg) * H * Wd, cpg, H, Wd, PW, PT, PL, c0, c1, PH, (int)tasks};
            if (tasks > 1) npk_parallel(f.ntasks, rows_fill_task, &f);
            else rows_fill_task(&f, 0);
            const float *wg = W + g * mpg * cpg * KH * KW;
            for (int64_t m = 0; m < mpg; m++)
                for (int64_t c = 0; c < cpg; c++)
                    for (int64_t t = 0; t < KH * KW; t++) Wr[(t * mpg + m) * cpg + c] = wg[(m * cpg + c) * KH * KW + t];
            conv_rows_job j = {p, R, Wr, B ? B + g * mpg : NULL, Y + (n * p->m + g * mpg) * OH * OW, PW, cpg, mpg, OH,
                               OW, 0};
            j.ntasks = (int)tasks;
            if (tasks > 1) npk_parallel(j.ntasks, conv_rows_task, &j);
            else conv_rows_task(&j, 0);
        }
    free(R), free(Wr);
    return 0;
}

/* 1-D convolutions with fewer than 8 output positions (silero-vad's STFT and encoder: one to
 * four outputs of K = 192 .. 387): B^T built directly, row j = output j's input window channel
 * by channel (zero outside the input), or, for one input channel and a window inside the input
 * at dilation 1, the input itself at the row stride of the convolution's stride (no copy); then
 * npk_gemm_f32_nt, each output one dot product along K (float tolerance). Larger products
 * (2^21 MACs and more, where threads pay) take the threaded GEMM instead. */
static int conv_narrow_ok(const npk_onnx_conv_params *p) {
    int64_t K = p->c / p->group * p->k[2];
    return p->in[0] == 1 && p->in[1] == 1 && p->k[0] == 1 && p->k[1] == 1 && p->out[0] == 1 && p->out[1] == 1 &&
           p->out[2] < 8 && K >= 16 && (npk_threads() == 1 || p->m * p->out[2] * K < (1 << 21));
}

static int conv_narrow(const npk_onnx_conv_params *p, const float *X, const float *W, const float *B, float *Y) {
    int64_t L = p->in[2], KW = p->k[2], OL = p->out[2], st = p->stride[2], dl = p->dil[2], pb = p->pad_b[2];
    int64_t cpg = p->c / p->group, mpg = p->m / p->group, K = cpg * KW;
    int inside = cpg == 1 && dl == 1 && pb <= 0 && (OL - 1) * st - pb + KW <= L;
    float *bt = inside ? NULL : malloc(sizeof(float) * (size_t)(OL * K));
    if (!inside && !bt) return -NPK_ENOMEM;
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t g = 0; g < p->group; g++) {
            const float *xg = X + (n * p->c + g * cpg) * L, *b = bt;
            int64_t ldb = K;
            if (inside) {
                b = xg - pb, ldb = st;
            } else {
                for (int64_t j = 0; j < OL; j++)
                    for (int64_t c = 0; c < cpg; c++)
                        for (int64_t q = 0; q < KW; q++) {
                            int64_t pos = j * st - pb + q * dl;
                            bt[j * K + c * KW + q] = pos >= 0 && pos < L ? xg[c * L + pos] : 0.0f;
                        }
            }
            float *yg = Y + (n * p->m + g * mpg) * OL;
            if (B) /* the sums start from the bias */
                for (int64_t m = 0; m < mpg; m++)
                    for (int64_t j = 0; j < OL; j++) yg[m * OL + j] = B[g * mpg + m];
            npk_gemm_f32_nt(mpg, OL, K, W + g * mpg * K, K, b, ldb, yg, OL, B != NULL);
        }
    free(bt);
    return 0;
}

static int is_pointwise(const npk_onnx_conv_params *p) {
    for (int i = 0; i < 3; i++)
        if (p->k[i] != 1 || p->stride[i] != 1 || p->pad_b[i] || p->pad_e[i] || p->in[i] != p->out[i]) return 0;
    return 1;
}

/* Depthwise (one input channel per group): y row += w * x row, directly. */
NPK_ISA_CLONES_VOID(dw_row_f, (float *y, const float *x, int64_t off, float w, int64_t lo, int64_t hi, int64_t s),
                    (y, x, off, w, lo, hi, s)) {
    if (s == 1)
        for (int64_t j = lo; j < hi; j++) y[j] += w * x[off + j];
    else
        for (int64_t j = lo; j < hi; j++) y[j] += w * x[off + j * s];
}

NPK_ISA_CLONES_VOID(dw_row_i, (int32_t *y, const int16_t *x, int64_t off, int32_t w, int64_t lo, int64_t hi,
                               int64_t s),
                    (y, x, off, w, lo, hi, s)) {
    if (s == 1)
        for (int64_t j = lo; j < hi; j++) y[j] += w * (int32_t)x[off + j];
    else
        for (int64_t j = lo; j < hi; j++) y[j] += w * (int32_t)x[off + j * s];
}

/* The depthwise loop nest over one output channel: T is the accumulator
 * type, X the input plane (already offset by the zero point for integers). */
#define DW_BODY(ROWFN, WAT)                                                                                           \
    const int64_t *in = p->in, *k = p->k, *o = p->out;                                                           \
    for (int64_t o0 = 0; o0 < o[0]; o0++)                                                                         \
        for (int64_t o1 = 0; o1 < o[1]; o1++) {                                                                   \
            acc_t *yr = acc + (o0 * o[1] + o1) * o[2];                                                            \
            for (int64_t k0 = 0; k0 < k[0]; k0++) {                                                               \
                int64_t i0 = o0 * p->stride[0] - p->pad_b[0] + k0 * p->dil[0];                                    \
                if (i0 < 0 || i0 >= in[0]) continue;                                                              \
                for (int64_t k1 = 0; k1 < k[1]; k1++) {                                                           \
                    int64_t i1 = o1 * p->stride[1] - p->pad_b[1] + k1 * p->dil[1];                                \
                    if (i1 < 0 || i1 >= in[1]) continue;                                                          \
                    for (int64_t k2 = 0; k2 < k[2]; k2++) {                                                       \
                        int64_t off2 = k2 * p->dil[2] - p->pad_b[2], s2 = p->stride[2];                           \
                        int64_t lo = off2 >= 0 ? 0 : (-off2 + s2 - 1) / s2;                                       \
                        int64_t hi = in[2] - off2 <= 0 ? 0 : (in[2] - off2 - 1) / s2 + 1;                         \
                        if (hi > o[2]) hi = o[2];                                                                 \
                        if (lo >= hi) continue;                                                                   \
                        ROWFN(yr, xp, (i0 * in[1] + i1) * in[2] + off2, WAT((k0 * k[1] + k1) * k[2] + k2), lo,    \
                              hi, s2);                                                                            \
                    }                                                                                             \
                }                                                                                                 \
            }                                                                                                     \
        }

static void dw_conv_f(const npk_onnx_conv_params *p, const float *xp, const float *wp, float *acc) {
    typedef float acc_t;
#define WATF(i) wp[i]
    DW_BODY(dw_row_f, WATF)
#undef WATF
}

static void dw_conv_i(const npk_onnx_conv_params *p, const int16_t *xp, const int16_t *wp, int32_t *acc) {
    typedef int32_t acc_t;
#define WATI(i) (int32_t)wp[i]
    DW_BODY(dw_row_i, WATI)
#undef WATI
}

int npk_fast_conv(const npk_onnx_conv_params *p, const npk_tensor *x, const npk_tensor *w, const npk_tensor *b,
                  npk_tensor *y) {
    if (x->dtype != NPK_DT_FLOAT || w->dtype != NPK_DT_FLOAT || y->dtype != NPK_DT_FLOAT ||
        (b && b->dtype != NPK_DT_FLOAT))
        return 1;
    const float *X = x->data, *W = w->data, *B = b ? b->data : NULL;
    float *Y = y->data;
    const int64_t *in = p->in, *k = p->k, *o = p->out;
    int64_t cpg = p->c / p->group, mpg = p->m / p->group;
    int64_t isz = in[0] * in[1] * in[2], ksz = k[0] * k[1] * k[2], osz = o[0] * o[1] * o[2], K = cpg * ksz;
    if (cpg == 1 && p->group > 1 && ksz > 1) { /* depthwise (one input channel, group 1: the GEMM) */
        if (npk_fast_dw_ok(p)) return npk_fast_dw_f32(p, X, W, B, Y);
        for (int64_t n = 0; n < p->n; n++)
            for (int64_t m = 0; m < p->m; m++) {
                float *acc = Y + (n * p->m + m) * osz;
                memset(acc, 0, sizeof(float) * (size_t)osz);
                dw_conv_f(p, X + (n * p->c + m / mpg) * isz, W + m * ksz, acc);
                if (B)
                    for (int64_t i = 0; i < osz; i++) acc[i] += B[m];
            }
        return 0;
    }
    if (conv_narrow_ok(p)) return conv_narrow(p, X, W, B, Y);
    int pw = is_pointwise(p);
    if (!pw && npk_fast_wino_ok(p)) return npk_fast_wino_f32(p, X, W, B, Y);
    if (!pw && conv_rows_ok(p)) return conv_rows(p, X, W, B, Y);
    if (!pw && conv_plane_ok(p)) return conv_plane(p, X, W, B, Y);
    conv_pack_ctx cx = {p, X, 0, cpg};
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t g = 0; g < p->group; g++) {
            int64_t xoff = (n * p->c + g * cpg) * isz;
            float *yg = Y + (n * p->m + g * mpg) * osz;
            const float *wg = W + g * mpg * K, *bg = B ? B + g * mpg : NULL; /* the sums start from the bias */
            if (pw) {
                npk_gemm_f32_reassoc_bias(mpg, osz, K, wg, K, X + xoff, isz, bg, yg, osz);
            } else { /* im2col block by block inside the GEMM */
                cx.xoff = xoff;
                npk_gemm_f32_reassoc_packed_bias(mpg, osz, K, wg, K, conv_pack, &cx, bg, yg, osz);
            }
        }
    return 0;
}

/* ---- integer GEMMs: the shared exact kernel ---------------------------------------
 * MatMulInteger, ConvInteger and the QLinearConv accumulator run npk_gemm_s8s32
 * (include/npukit/gemm.h: AVX-512 VNNI, AVX2 or C, bit-identical), the kernel of
 * the v0 and shell models. An 8-bit operand v with zero point z enters as the
 * int8 v' (uint8: v - 128, the top bit flipped; int8: v) with z' alike, so
 * v - z = v' - z', and
 *   sum_k (a'_k - za')(b'_k - zb') = sum_k a'_k b'_k - zb' sum_k a'_k - za' sum_k b'_k + K za' zb':
 * the kernel's product and a correction per row and column, all modulo 2^32.
 * The exact sum fits int32 (K <= NPK_FAST_KMAX), so the wrapped one is it. */

/* z' of a zero point (NULL: 0) of an operand of dtype dt (element i when there is one per row). */
static int32_t zp_s8(const npk_tensor *zp, int dt, int64_t i) {
    return zp_of(zp, i) - (dt == NPK_DT_UINT8 ? 128 : 0);
}

/* The operand as int8 v': the tensor's own bytes when it is int8 (no copy),
 * else the flipped copy in buf (n elements from off). */
static const int8_t *as_s8(const npk_tensor *t, int64_t off, int64_t n, int8_t *buf) {
    if (t->dtype == NPK_DT_INT8) return (const int8_t *)t->data + off;
    const uint8_t *s = (const uint8_t *)t->data + off;
    for (int64_t i = 0; i < n; i++) buf[i] = (int8_t)(s[i] ^ 0x80);
    return buf;
}

/* sum[j] = sum_k b[k][j] for j < n (int32: |sum| < K * 128). */
static void col_sums(const int8_t *b, int64_t ldb, int64_t K, int64_t n, int32_t *sum) {
    memset(sum, 0, sizeof(int32_t) * (size_t)n);
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < n; j++) sum[j] += b[k * ldb + j];
}

/* sum[i] = sum_k a[i][k] for i < m. */
static void row_sums(const int8_t *a, int64_t lda, int64_t m, int64_t K, int32_t *sum) {
    for (int64_t i = 0; i < m; i++) {
        int32_t s = 0;
        for (int64_t k = 0; k < K; k++) s += a[i * lda + k];
        sum[i] = s;
    }
}

/* C[i][j] += rc[i] - ca[i] * cs[j] for i < m, j < n, modulo 2^32 (cs NULL: no column term). */
static void correct(int32_t *C, int64_t ldc, int64_t m, int64_t n, const int32_t *rc, const int32_t *ca,
                    const int32_t *cs) {
    for (int64_t i = 0; i < m; i++) {
        uint32_t *c = (uint32_t *)(C + i * ldc), r = (uint32_t)rc[i], a = (uint32_t)ca[i];
        if (cs && a)
            for (int64_t j = 0; j < n; j++) c[j] += r - a * (uint32_t)cs[j];
        else if (r)
            for (int64_t j = 0; j < n; j++) c[j] += r;
    }
}

/* npk_gemm_s8s32 on int64 shapes (the callers keep them below 2^32). */
static int gemm_s8(npk_gemm_ws *ws, int64_t M, int64_t N, int64_t K, const int8_t *A, int64_t lda, const int8_t *B,
                   int64_t ldb, int32_t *C, int64_t ldc) {
    int rc = npk_gemm_s8s32(ws, (uint32_t)M, (uint32_t)N, (uint32_t)K, A, (size_t)lda, B, (size_t)ldb, C, (size_t)ldc);
    return rc ? -NPK_ENOMEM : 0;
}

static int fits_u32(int64_t a, int64_t b, int64_t c) { return a <= UINT32_MAX && b <= UINT32_MAX && c <= UINT32_MAX; }

/* ---- integer convolution --------------------------------------------------------- */

/* y += bias per channel, wrapping modulo 2^32 as the golden's int64 sum stored in int32. */
static void add_bias_i32(int32_t *y, int64_t n, int32_t bias) {
    for (int64_t i = 0; i < n; i++) y[i] = (int32_t)((uint32_t)y[i] + (uint32_t)bias);
}

int npk_fast_conv_integer(const npk_onnx_conv_params *p, const npk_tensor *x, const npk_tensor *w,
                          const npk_tensor *x_zp, const npk_tensor *w_zp, const npk_tensor *b, npk_tensor *y) {
    if (!is_q8(x->dtype) || !is_q8(w->dtype) || y->dtype != NPK_DT_INT32 || (b && b->dtype != NPK_DT_INT32) ||
        (x_zp && x_zp->dtype != x->dtype) || (w_zp && w_zp->dtype != w->dtype))
        return 1;
    const int64_t *in = p->in, *k = p->k, *o = p->out;
    int64_t cpg = p->c / p->group, mpg = p->m / p->group;
    int64_t isz = in[0] * in[1] * in[2], ksz = k[0] * k[1] * k[2], osz = o[0] * o[1] * o[2], K = cpg * ksz;
    if (K > NPK_FAST_KMAX || !fits_u32(mpg, osz, K)) return 1;
    int32_t *Y = y->data;
    const int32_t *B = b ? b->data : NULL;
    if (cpg == 1 && ksz > 1) { /* depthwise: directly, on int16 values minus their zero points */
        int32_t zx = zp_of(x_zp, 0);
        int16_t *wq = malloc(sizeof(int16_t) * (size_t)(p->m * K));
        if (!wq) return -NPK_ENOMEM;
        for (int64_t m = 0; m < p->m; m++) q8_to_i16(w, m * K, K, zp_of(w_zp, m), wq + m * K);
        int rc = 0;
        if (npk_fast_dw_ok(p)) { /* 2-D (src/ops/fast_dw.c) */
            rc = npk_fast_dw_i32(p, x, zx, wq, Y);
            for (int64_t i = 0; !rc && B && i < p->n * p->m; i++) add_bias_i32(Y + i * osz, osz, B[i % p->m]);
            free(wq);
            return rc;
        }
        int16_t *xq = malloc(sizeof(int16_t) * (size_t)isz);
        if (!xq) rc = -NPK_ENOMEM;
        for (int64_t n = 0; !rc && n < p->n; n++)
            for (int64_t m = 0; m < p->m; m++) {
                if (m % mpg == 0) q8_to_i16(x, (n * p->c + m / mpg) * isz, isz, zx, xq);
                int32_t *acc = Y + (n * p->m + m) * osz;
                memset(acc, 0, sizeof(int32_t) * (size_t)osz);
                dw_conv_i(p, xq, wq + m * ksz, acc);
                if (B) add_bias_i32(acc, osz, B[m]);
            }
        free(xq);
        free(wq);
        return rc;
    }
    /* A = the weights w' [M][K]; per output channel: z'_w, and rc = bias - zx' rowsum(w') + K zx' z'_w */
    int8_t zx = (int8_t)zp_s8(x_zp, x->dtype, 0);
    int pw = is_pointwise(p);
    int64_t row = o[2], nrows_all = o[0] * o[1], crows = chunk_rows(K, row);
    int64_t ncol = pw ? osz : row * (crows < nrows_all ? crows : nrows_all);
    int need_col = !pw || x->dtype != NPK_DT_INT8;
    int8_t *wbuf = w->dtype == NPK_DT_INT8 ? NULL : malloc((size_t)(p->m * K));
    int8_t *col = need_col ? malloc((size_t)(K * ncol)) : NULL;
    int32_t *rc = malloc(sizeof(int32_t) * (size_t)(2 * p->m + ncol)), *zw = rc + p->m, *cs = zw + p->m;
    npk_gemm_ws ws = {0};
    int err = (w->dtype != NPK_DT_INT8 && !wbuf) || (need_col && !col) || !rc ? -NPK_ENOMEM : 0;
    const int8_t *W = err ? NULL : as_s8(w, 0, p->m * K, wbuf);
    int any_zw = 0;
    if (!err) {
        row_sums(W, K, p->m, K, rc);
        for (int64_t m = 0; m < p->m; m++) {
            zw[m] = zp_s8(w_zp, w->dtype, m);
            any_zw |= zw[m] != 0;
            rc[m] = (int32_t)((B ? (uint32_t)B[m] : 0u) - (uint32_t)zx * (uint32_t)rc[m] +
                              (uint32_t)K * (uint32_t)zx * (uint32_t)zw[m]);
        }
    }
    for (int64_t n = 0; !err && n < p->n; n++)
        for (int64_t g = 0; !err && g < p->group; g++) {
            int64_t xoff = (n * p->c + g * cpg) * isz;
            int32_t *yg = Y + (n * p->m + g * mpg) * osz;
            const int8_t *wg = W + g * mpg * K;
            for (int64_t r0 = 0; !err && r0 < nrows_all; r0 += pw ? nrows_all : crows) {
                int64_t nr = pw ? nrows_all : (nrows_all - r0 < crows ? nrows_all - r0 : crows), nc = nr * row;
                const int8_t *bm = col;
                if (pw) bm = as_s8(x, xoff, K * osz, col); /* x itself is B [K][osz] */
                else im2col_s8(p, x, zx, xoff, cpg, r0, nr, col);
                int32_t *yc = yg + r0 * row;
                if ((err = gemm_s8(&ws, mpg, nc, K, wg, K, bm, nc, yc, osz))) break;
                if (any_zw) col_sums(bm, nc, K, nc, cs);
                correct(yc, osz, mpg, nc, rc + g * mpg, zw + g * mpg, any_zw ? cs : NULL);
            }
        }
    npk_gemm_ws_free(&ws);
    free(wbuf);
    free(col);
    free(rc);
    return err;
}

/* ---- matrix products ---------------------------------------------------------------- */

int npk_fast_matmul(const npk_tensor *a, const npk_tensor *b, npk_tensor *y) {
    if (a->dtype != NPK_DT_FLOAT || b->dtype != NPK_DT_FLOAT || y->dtype != NPK_DT_FLOAT) return 1;
    npk_onnx_mm_plan p;
    if (npk_onnx_mm_plan_init(&p, a, b)) return -NPK_ENOMEM;
    const float *A = a->data, *B = b->data;
    float *Y = y->data;
    for (int64_t t = 0; t < p.batch; t++)
        npk_gemm_f32_reassoc(p.m, p.n, p.k, A + p.aoff[t], p.k, B + p.boff[t], p.n, Y + t * p.m * p.n, p.n, 0);
    free(p.aoff);
    free(p.boff);
    return 0;
}

int npk_fast_matmul_integer(const npk_tensor *a, const npk_tensor *b, const npk_tensor *a_zp, const npk_tensor *b_zp,
                            npk_tensor *y) {
    if (!is_q8(a->dtype) || !is_q8(b->dtype) || y->dtype != NPK_DT_INT32 || (a_zp && a_zp->dtype != a->dtype) ||
        (b_zp && b_zp->dtype != b->dtype))
        return 1;
    npk_onnx_mm_plan p;
    if (npk_onnx_mm_plan_init(&p, a, b)) return -NPK_ENOMEM;
    int rc = 0;
    int8_t *abuf = NULL, *bbuf = NULL;
    int32_t *sums = NULL;
    npk_gemm_ws ws = {0};
    if (p.k > NPK_FAST_KMAX || !fits_u32(p.m, p.n, p.k)) {
        rc = 1;
        goto out;
    }
    /* z' per row i of A and per column j of B */
    abuf = a->dtype == NPK_DT_INT8 ? NULL : malloc((size_t)(p.m * p.k) + 1);
    bbuf = b->dtype == NPK_DT_INT8 ? NULL : malloc((size_t)(p.k * p.n) + 1);
    sums = malloc(sizeof(int32_t) * (size_t)(2 * p.m + 2 * p.n + 1));
    if ((a->dtype != NPK_DT_INT8 && !abuf) || (b->dtype != NPK_DT_INT8 && !bbuf) || !sums) {
        rc = -NPK_ENOMEM;
        goto out;
    }
    int32_t *za = sums, *rs = za + p.m, *zb = rs + p.m, *cs = zb + p.n;
    int any_za = 0, any_zb = 0;
    for (int64_t i = 0; i < p.m; i++) any_za |= (za[i] = zp_s8(a_zp, a->dtype, i)) != 0;
    for (int64_t j = 0; j < p.n; j++) any_zb |= (zb[j] = zp_s8(b_zp, b->dtype, j)) != 0;
    for (int64_t t = 0; t < p.batch; t++) {
        const int8_t *A = as_s8(a, p.aoff[t], p.m * p.k, abuf), *Bm = as_s8(b, p.boff[t], p.k * p.n, bbuf);
        int32_t *C = (int32_t *)y->data + t * p.m * p.n;
        if ((rc = gemm_s8(&ws, p.m, p.n, p.k, A, p.k, Bm, p.n, C, p.n))) goto out;
        /* - zb'_j rowsum_i - za'_i colsum_j + K za'_i zb'_j */
        if (any_zb) row_sums(A, p.k, p.m, p.k, rs);
        if (any_za) col_sums(Bm, p.n, p.k, p.n, cs);
        if (!any_za && !any_zb) continue;
        for (int64_t i = 0; i < p.m; i++) {
            uint32_t *c = (uint32_t *)(C + i * p.n), zai = (uint32_t)za[i], r = any_zb ? (uint32_t)rs[i] : 0;
            for (int64_t j = 0; j < p.n; j++) {
                uint32_t zbj = (uint32_t)zb[j], csj = any_za ? (uint32_t)cs[j] : 0;
                c[j] += (uint32_t)p.k * zai * zbj - zbj * r - zai * csj;
            }
        }
    }
out:
    npk_gemm_ws_free(&ws);
    free(abuf);
    free(bbuf);
    free(sums);
    free(p.aoff);
    free(p.boff);
    return rc;
}

int npk_fast_gemm(const npk_tensor *a, const npk_tensor *b, const npk_tensor *c, double alpha, double beta,
                  int trans_a, int trans_b, npk_tensor *y) {
    if (a->dtype != NPK_DT_FLOAT || b->dtype != NPK_DT_FLOAT || y->dtype != NPK_DT_FLOAT ||
        (c && c->dtype != NPK_DT_FLOAT))
        return 1;
    int64_t m = y->dims[0], n = y->dims[1], k = trans_a ? a->dims[0] : a->dims[1];
    const float *A = a->data, *B = b->data;
    float *at = NULL, *bt = NULL, *Y = y->data;
    if (trans_a) { /* a is [K][M]: make it [M][K] */
        if (!(at = malloc(sizeof(float) * (size_t)(m * k)))) return -NPK_ENOMEM;
        for (int64_t kk = 0; kk < k; kk++)
            for (int64_t i = 0; i < m; i++) at[i * k + kk] = A[kk * m + i];
        A = at;
    }
    if (trans_b) { /* b is [N][K]: make it [K][N] */
        if (!(bt = malloc(sizeof(float) * (size_t)(k * n)))) {
            free(at);
            return -NPK_ENOMEM;
        }
        for (int64_t j = 0; j < n; j++)
            for (int64_t kk = 0; kk < k; kk++) bt[kk * n + j] = B[j * k + kk];
        B = bt;
    }
    npk_gemm_f32_reassoc(m, n, k, A, k, B, n, Y, n, 0);
    int64_t cs0 = 0, cs1 = 0;
    if (c) {
        int64_t c0 = c->rank >= 2 ? c->dims[c->rank - 2] : 1, c1 = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
        cs0 = c0 == 1 ? 0 : c1;
        cs1 = c1 == 1 ? 0 : 1;
    }
    const float *C = c ? c->data : NULL;
    if (alpha != 1.0 || C)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = (double)Y[i * n + j] * alpha;
                if (C) s += beta * (double)C[i * cs0 + j * cs1];
                Y[i * n + j] = (float)s;
            }
    free(at);
    free(bt);
    return 0;
}

/* ---- quantization ---------------------------------------------------------------------- */

static int64_t inner_from(const npk_tensor *x, int from) {
    int64_t s = 1;
    for (int d = from; d < x->rank; d++) s *= x->dims[d];
    return s;
}

/* saturate(rint(v) + z) as the golden (which adds in double; NaN -> 0), in
 * float so that the rows vectorize 16 wide: z is an 8-bit zero point, so
 * q + z is exact whenever |q| < 2^24, and a larger |q| saturates either
 * way (the rounding of q + z keeps it outside [lo, hi]). */
static inline float q_round(float q, float z, float lo, float hi) {
    float r = q + z;
    if (r != r) r = 0;
    if (r < lo) r = lo;
    if (r > hi) r = hi;
    return r;
}

NPK_ISA_CLONES_VOID(requant_row, (const int32_t *a, void *o, int s8, int64_t n, float mu, float z, float lo,
                                  float hi),
                    (a, o, s8, n, mu, z, lo, hi)) {
    if (s8)
        for (int64_t i = 0; i < n; i++) ((int8_t *)o)[i] = (int8_t)q_round(nearbyintf((float)a[i] * mu), z, lo, hi);
    else
        for (int64_t i = 0; i < n; i++) ((uint8_t *)o)[i] = (uint8_t)q_round(nearbyintf((float)a[i] * mu), z, lo, hi);
}

NPK_ISA_CLONES_VOID(quant_row, (const float *x, void *o, int s8, int64_t n, float s, float z, float lo, float hi),
                    (x, o, s8, n, s, z, lo, hi)) {
    if (s8)
        for (int64_t i = 0; i < n; i++) ((int8_t *)o)[i] = (int8_t)q_round(nearbyintf(x[i] / s), z, lo, hi);
    else
        for (int64_t i = 0; i < n; i++) ((uint8_t *)o)[i] = (uint8_t)q_round(nearbyintf(x[i] / s), z, lo, hi);
}

/* QuantizeLinear (quant_row's operations) then DequantizeLinear (fast_dequantize's) per element:
 * q_round gives the 8-bit value q as an integral float inside the type's range, and q - dz of
 * two integers below 2^24 is exact in float, so (q - (float)dz) * ds is the DequantizeLinear's
 * (float)(q - dz) * ds bit for bit, in float lanes throughout (it vectorizes). */
NPK_ISA_CLONES_VOID(quant_dequant_row, (const float *x, float *y, int64_t n, float s, float z, float lo, float hi,
                                        float ds, float dz),
                    (x, y, n, s, z, lo, hi, ds, dz)) {
    for (int64_t i = 0; i < n; i++) y[i] = (q_round(nearbyintf(x[i] / s), z, lo, hi) - dz) * ds;
}

void npk_fast_quant_dequant(const float *x, float *y, int64_t n, int s8, float s, float z, float ds, int32_t dz) {
    quant_dequant_row(x, y, n, s, z, s8 ? -128.0f : 0.0f, s8 ? 127.0f : 255.0f, ds, (float)dz);
}

int npk_fast_requant_tensor(const npk_tensor *acc, const float *mult, int64_t n_mult, int axis, int64_t y_zp,
                            npk_tensor *y) {
    if (acc->dtype != NPK_DT_INT32 || !is_q8(y->dtype) || y_zp < -255 || y_zp > 255) return 1; /* q_round's z */
    int64_t n = npk_tensor_numel(acc), inner = n_mult > 1 ? inner_from(acc, axis + 1) : n;
    const int32_t *a = acc->data;
    int s8 = y->dtype == NPK_DT_INT8;
    float lo = s8 ? -128.0f : 0.0f, hi = s8 ? 127.0f : 255.0f, z = (float)y_zp;
    for (int64_t s = 0, blk = 0; s < n; s += inner, blk++) {
        int64_t e = s + inner < n ? s + inner : n;
        requant_row(a + s, (uint8_t *)y->data + s, s8, e - s, mult[n_mult > 1 ? blk % n_mult : 0], z, lo, hi);
    }
    return 0;
}

int npk_fast_quantize(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *zp, int axis, npk_tensor *y) {
    if (x->dtype != NPK_DT_FLOAT || scale->dtype != NPK_DT_FLOAT || !is_q8(y->dtype) || (zp && zp->dtype != y->dtype))
        return 1;
    int64_t n = npk_tensor_numel(x), ns = npk_tensor_numel(scale);
    int64_t inner = ns > 1 ? inner_from(x, axis + 1) : n;
    const float *X = x->data, *S = scale->data;
    int s8 = y->dtype == NPK_DT_INT8;
    float lo = s8 ? -128.0f : 0.0f, hi = s8 ? 127.0f : 255.0f;
    for (int64_t s0 = 0, blk = 0; s0 < n; s0 += inner, blk++) {
        int64_t c = ns > 1 ? blk % x->dims[axis] : 0, e = s0 + inner < n ? s0 + inner : n;
        quant_row(X + s0, (uint8_t *)y->data + s0, s8, e - s0, S[c], zp ? (float)q8_at(zp, c) : 0.0f, lo, hi);
    }
    return 0;
}

NPK_ISA_CLONES(int, fast_dequantize, (const npk_tensor *x, const npk_tensor *scale, const npk_tensor *zp, int axis,
                                      npk_tensor *y),
               (x, scale, zp, axis, y)) {
    if ((!is_q8(x->dtype) && x->dtype != NPK_DT_INT32) || scale->dtype != NPK_DT_FLOAT || y->dtype != NPK_DT_FLOAT ||
        (zp && zp->dtype != x->dtype))
        return 1;
    int64_t n = npk_tensor_numel(x), ns = npk_tensor_numel(scale);
    int64_t inner = ns > 1 ? inner_from(x, axis + 1) : n;
    const float *S = scale->data;
    float *Y = y->data;
    for (int64_t s0 = 0, blk = 0; s0 < n; s0 += inner, blk++) {
        int64_t c = ns > 1 ? blk % x->dims[axis] : 0, e = s0 + inner < n ? s0 + inner : n;
        float s = S[c];
        if (x->dtype == NPK_DT_INT32) {
            const int32_t *X = x->data;
            int64_t z = zp ? ((const int32_t *)zp->data)[c] : 0;
            for (int64_t i = s0; i < e; i++) Y[i] = (float)((int64_t)X[i] - z) * s;
        } else if (x->dtype == NPK_DT_INT8) {
            const int8_t *X = x->data;
            int32_t z = zp ? q8_at(zp, c) : 0;
            for (int64_t i = s0; i < e; i++) Y[i] = (float)(X[i] - z) * s;
        } else {
            const uint8_t *X = x->data;
            int32_t z = zp ? q8_at(zp, c) : 0;
            for (int64_t i = s0; i < e; i++) Y[i] = (float)(X[i] - z) * s;
        }
    }
    return 0;
}
int npk_fast_dequantize(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *zp, int axis, npk_tensor *y) {
    return fast_dequantize(x, scale, zp, axis, y);
}

/* ---- elementwise float32 ----------------------------------------------------------------
 * The golden's float32 semantics exactly (the same operations in the same
 * precision), so these equal it bit for bit. */

/* a's element stride per dimension of y (0 where a is broadcast). */
static void bstrides(const npk_tensor *t, const npk_tensor *y, int64_t *s) {
    int off = y->rank - t->rank;
    int64_t st = 1;
    for (int i = y->rank - 1; i >= 0; i--) {
        int ti = i - off;
        int64_t d = ti >= 0 ? t->dims[ti] : 1;
        s[i] = d == 1 ? 0 : st;
        st *= d;
    }
}

/* A Pow exponent the fast kernel takes: the float scalar 2 (x * x, fast_binary). */
static int pow_square(const npk_tensor *b) {
    return b && b->kind == NPK_KIND_TENSOR && b->dtype == NPK_DT_FLOAT && npk_tensor_numel(b) == 1 &&
           ((const float *)b->data)[0] == 2.0f;
}

#define BIN_ROW(EXPR)                                                                                                 \
    do {                                                                                                          \
        if (ca && cb)                                                                                             \
            for (int64_t j = 0; j < inner; j++) {                                                                 \
                float x = pa[j], z = pb[j];                                                                       \
                py[j] = (EXPR);                                                                                   \
            }                                                                                                     \
        else if (ca) {                                                                                            \
            float z = pb[0];                                                                                      \
            for (int64_t j = 0; j < inner; j++) {                                                                 \
                float x = pa[j];                                                                                  \
                py[j] = (EXPR);                                                                                   \
            }                                                                                                     \
        } else if (cb) {                                                                                          \
            float x = pa[0];                                                                                      \
            for (int64_t j = 0; j < inner; j++) {                                                                 \
                float z = pb[j];                                                                                  \
                py[j] = (EXPR);                                                                                   \
            }                                                                                                     \
        } else {                                                                                                  \
            float x = pa[0], z = pb[0], r = (EXPR);                                                               \
            for (int64_t j = 0; j < inner; j++) py[j] = r;                                                        \
        }                                                                                                         \
    } while (0)

NPK_ISA_CLONES(int, fast_binary, (npk_onnx_binop op, const npk_tensor *a, const npk_tensor *b, npk_tensor *y),
               (op, a, b, y)) {
    /* Pow by the float scalar 2 is x * x: the golden's pow in double is exact there (a square of 24
     * significant bits fits a double, and no float squared leaves its range) and rounds once to
     * float, as the float product does (silero-vad's STFT magnitude) */
    int square = op == NPK_ONNX_POW && pow_square(b);
    if (a->dtype != NPK_DT_FLOAT || b->dtype != NPK_DT_FLOAT || y->dtype != NPK_DT_FLOAT || (op == NPK_ONNX_POW && !square))
        return 1;
    /* An empty output has nothing to compute, and the strides of its other
     * dimensions may not even fit in 64 bits (fuzz_onnx regression
     * broadcast-empty-fast-strides). */
    for (int i = 0; i < y->rank; i++)
        if (y->dims[i] == 0) return 0;
    int64_t sa[NPK_MAX_RANK], sb[NPK_MAX_RANK];
    bstrides(a, y, sa);
    bstrides(b, y, sb);
    /* merge the trailing dimensions where a and b are each contiguous or broadcast */
    int j = y->rank, ca = -1, cb = -1;
    int64_t inner = 1;
    while (j > 0) {
        int64_t d = y->dims[j - 1];
        if (d != 1) {
            int ma = sa[j - 1] == 0 ? 0 : sa[j - 1] == inner ? 1 : -2, mb = sb[j - 1] == 0 ? 0 : sb[j - 1] == inner ? 1 : -2;
            if (ma == -2 || mb == -2) break;
            if (ca == -1) ca = ma, cb = mb;
            if (ma != ca || mb != cb) break;
            inner *= d;
        }
        j--;
    }
    if (ca < 0) ca = cb = 1; /* every dimension 1: one element */
    int64_t n = npk_tensor_numel(y), outer = inner ? n / inner : 0;
    const float *A = a->data, *B = b->data;
    float *Y = y->data;
    int64_t idx[NPK_MAX_RANK] = {0}, oa = 0, ob = 0;
    for (int64_t o = 0; o < outer; o++) {
        const float *pa = A + oa, *pb = B + ob;
        float *py = Y + o * inner;
        switch (op) {
        case NPK_ONNX_ADD: BIN_ROW(x + z); break;
        case NPK_ONNX_SUB: BIN_ROW(x - z); break;
        case NPK_ONNX_MUL: BIN_ROW(x * z); break;
        case NPK_ONNX_DIV: BIN_ROW(x / z); break;
        case NPK_ONNX_PRELU: BIN_ROW(x < 0 ? x * z : x); break;
        case NPK_ONNX_POW: BIN_ROW(((void)z, x * x)); break; /* square only (above) */
        default: break;
        }
        for (int i = j - 1; i >= 0; i--) { /* next outer index */
            idx[i]++;
            oa += sa[i];
            ob += sb[i];
            if (idx[i] < y->dims[i]) break;
            oa -= sa[i] * y->dims[i];
            ob -= sb[i] * y->dims[i];
            idx[i] = 0;
        }
    }
    return 0;
}
static void hswish_chain_run(const float *x, float *y, int64_t n, float a, float lo, float hi, float d, int div_last,
                             int tail, float tm, float ta);
static int fast_unary(npk_onnx_unop op, const npk_tensor *x, npk_tensor *y, double alpha, double lo, double hi);
static int fast_hard(int swish, const npk_tensor *x, npk_tensor *y, double alpha, double beta);

/* ---- element-wise kernels on the worker pool (issue 26 point 3) ----
 * A float tensor of at least EW_PAR_MIN elements is cut into flat slices of a multiple of 64
 * elements, one task each; every element is computed by the same code from the same operands
 * as on one thread, so the bytes are the same at every count. Binary operators split only when
 * each operand has the output's element count or is one scalar (no broadcasting across a
 * slice's edge). */
#define EW_PAR_MIN (1 << 18)
typedef struct ew_job {
    int kind, op, swish; /* kind 0 unary, 1 binary, 2 HardSigmoid/HardSwish, 3 the HardSwish chain */
    const npk_tensor *a, *b;
    npk_tensor *y;
    double p0, p1, p2;
    const float *cx;
    float *cy, ca, cd, tm, ta;
    int div_last, tail;
    int64_t n, chunk;
    int ntasks, rc[NPK_THREADS_MAX * 4];
} ew_job;

/* Elements [off, off + len) of t as a rank-1 tensor (a one-element t as itself: a scalar). */
static npk_tensor ew_view(const npk_tensor *t, int64_t off, int64_t len) {
    npk_tensor v = *t;
    v.name = NULL;
    if (npk_tensor_numel(t) == 1 && len != 1) return v;
    v.rank = 1;
    v.dims[0] = len;
    v.data = (char *)t->data + (size_t)off * npk_dtype_size(t->dtype);
    return v;
}

static void ew_task(void *ctx, int t) {
    ew_job *j = ctx;
    int64_t lo = t * j->chunk, len = (t == j->ntasks - 1 ? j->n : lo + j->chunk) - lo;
    if (j->kind == 3) {
        hswish_chain_run(j->cx + lo, j->cy + lo, len, j->ca, (float)j->p0, (float)j->p1, j->cd, j->div_last, j->tail,
                         j->tm, j->ta);
        j->rc[t] = 0;
        return;
    }
    npk_tensor a = ew_view(j->a, lo, len), y = ew_view(j->y, lo, len), b = j->b ? ew_view(j->b, lo, len) : a;
    j->rc[t] = j->kind == 0   ? fast_unary((npk_onnx_unop)j->op, &a, &y, j->p0, j->p1, j->p2)
               : j->kind == 1 ? fast_binary((npk_onnx_binop)j->op, &a, &b, &y)
                              : fast_hard(j->swish, &a, &y, j->p0, j->p1);
}

/* The elements worth a split: EW_PAR_MIN for a load, an operation and a store (an operand
 * smaller than that is in the cache of the core that wrote it, and another core reads it at
 * a third of the speed: measured on the 2-core KVM host of issue 26, where splitting
 * ppocr-v4-det's Add and Mul of 2^16 .. 2^17 elements made them slower), 128x fewer for
 * the transcendental ones (Sigmoid, Tanh, Exp in double: ~15 ns an element, so that
 * ppocr-v4-det's last Sigmoid, 30,720 elements, 0.5 ms, ran on one thread) and Pow (but a square). */
static int64_t ew_min(const ew_job *j) {
    int costly = (j->kind == 0 && (j->op == NPK_ONNX_SIGMOID || j->op == NPK_ONNX_TANH || j->op == NPK_ONNX_EXP)) ||
                 (j->kind == 1 && j->op == NPK_ONNX_POW && !pow_square(j->b));
    return costly ? EW_PAR_MIN / 128 : EW_PAR_MIN;
}

/* 1 when the job ran on the pool (its status in *rc), 0 to run it on this thread. */
static int ew_parallel(ew_job *j, int *rc) {
    int th = npk_threads_now();
    if (th < 2 || j->n < ew_min(j)) return 0;
    if (j->kind != 3) {
        const npk_tensor *ts[3] = {j->a, j->b, j->y};
        for (int i = 0; i < 3; i++)
            if (ts[i] && (ts[i]->kind != NPK_KIND_TENSOR || ts[i]->dtype != NPK_DT_FLOAT ||
                          (npk_tensor_numel(ts[i]) != j->n && npk_tensor_numel(ts[i]) != 1)))
                return 0;
    }
    int64_t units = j->n / 64, n = units < th * 4 ? units : th * 4;
    j->chunk = units / n * 64;
    j->ntasks = (int)(j->n / j->chunk);
    npk_parallel(j->ntasks, ew_task, j);
    *rc = 0;
    for (int t = 0; t < j->ntasks; t++)
        if (j->rc[t]) *rc = j->rc[t];
    return 1;
}

int npk_fast_binary(npk_onnx_binop op, const npk_tensor *a, const npk_tensor *b, npk_tensor *y) {
    ew_job j = {.kind = 1, .op = op, .a = a, .b = b, .y = y, .n = npk_tensor_numel(y)};
    int rc;
    if (op != NPK_ONNX_PRELU && ew_parallel(&j, &rc)) return rc;
    return fast_binary(op, a, b, y);
}

/* Relu and Clip on 8-bit integers (quantized models keep them on int8):
 * the golden's integer rule, v < 0 -> 0, and v compared in double with the
 * bounds, which are then truncated to an integer. */
#define INT_UNARY(T)                                                                                                  \
    do {                                                                                                          \
        const T *X = x->data;                                                                                     \
        T *Y = y->data;                                                                                           \
        if (op == NPK_ONNX_RELU)                                                                                  \
            for (int64_t i = 0; i < n; i++) Y[i] = X[i] < 0 ? 0 : X[i];                                           \
        else                                                                                                      \
            for (int64_t i = 0; i < n; i++) {                                                                     \
                int64_t v = X[i];                                                                                 \
                if ((double)v < lo) v = (int64_t)lo;                                                              \
                if ((double)v > hi) v = (int64_t)hi;                                                              \
                Y[i] = (T)v;                                                                                      \
            }                                                                                                     \
    } while (0)

/* Sigmoid, bit for bit the golden's (float)(v >= 0 ? 1 / (1 + exp(-v)) : exp(v) / (1 + exp(v)))
 * in double, 16 lanes at a time. e = exp(-|v|) comes from sig_exp below, whose relative error is
 * under 2^-50 (degree-13 Taylor polynomial on |r| <= ln2/2, truncation below 2^-57; the range
 * reduction r = v - n ln2 with ln2 split in a 32-bit head, exact for these n, and a tail; a
 * few roundings of 2^-53 each); with the quotient's roundings and glibc's exp's own error (under
 * an ulp) the double m computed here is within 2^-48 |m| (under 32 ulps of m) of the golden's.
 * Both round to the same float unless m lies within that distance of a float rounding
 * boundary (the 29 low bits of its significand within 256 of the half-way value, about one
 * element in two million): those, and |v| > 80 (subnormal or saturated results), NaN and
 * infinities, are computed by the golden's own formula. */
static inline double sig_exp(double v) { /* e^v, -81 < v <= 0 */
    double t = v * 1.4426950408889634 + 6755399441055744.0; /* 1.5 * 2^52: rounds v / ln2 to an integer n */
    double n = t - 6755399441055744.0;
    double r = (v - n * 0.6931471803691238) - n * 1.9082149292705877e-10;
    double q = 1.0 / 6227020800.0;
    q = q * r + 1.0 / 479001600.0;
    q = q * r + 1.0 / 39916800.0;
    q = q * r + 1.0 / 3628800.0;
    q = q * r + 1.0 / 362880.0;
    q = q * r + 1.0 / 40320.0;
    q = q * r + 1.0 / 5040.0;
    q = q * r + 1.0 / 720.0;
    q = q * r + 1.0 / 120.0;
    q = q * r + 1.0 / 24.0;
    q = q * r + 1.0 / 6.0;
    q = q * r + 0.5;
    q = q * r + 1.0;
    q = q * r + 1.0;
    uint64_t tb, sb;
    memcpy(&tb, &t, sizeof tb);
    sb = (tb + 1023) << 52; /* 2^n: n is the low bits of t */
    double sc;
    memcpy(&sc, &sb, sizeof sc);
    return q * sc;
}

/* 16 values: the vector lanes, then the golden's formula where a lane is flagged */
static inline __attribute__((always_inline)) void sigmoid16(const float *Xin, float *Y) {
    float X[16]; /* Y may be Xin (in place): the flagged lanes read their x after Y was written */
    memcpy(X, Xin, sizeof X);
    double m[16];
    uint64_t bad[16], any = 0;
    /* (selects on integers only: the vectorizer takes no floating-point compare) */
    for (int j = 0; j < 16; j++) {
        uint32_t xb;
        memcpy(&xb, &X[j], sizeof xb);
        uint32_t ab = xb & 0x7FFFFFFFu, abc = ab > 0x42A00000u ? 0x42A00000u : ab; /* |x|, at most 80 (NaN too) */
        float af;
        memcpy(&af, &abc, sizeof af);
        double e = sig_exp(-(double)af);
        uint64_t eb, one = 0x3FF0000000000000u, neg = 0 - (uint64_t)(xb >> 31), nb;
        memcpy(&eb, &e, sizeof eb);
        nb = (eb & neg) | (one & ~neg); /* x < 0: e / (1 + e), else 1 / (1 + e) (-0: 0.5 both) */
        double num;
        memcpy(&num, &nb, sizeof num);
        m[j] = num / (1.0 + e);
        uint64_t b;
        memcpy(&b, &m[j], sizeof b);
        uint64_t low = b & 0x1FFFFFFFu, d = low > 0x10000000u ? low - 0x10000000u : 0x10000000u - low;
        bad[j] = (uint64_t)(d <= 256) | (uint64_t)(ab > 0x42A00000u);
    }
    for (int j = 0; j < 16; j++) Y[j] = (float)m[j], any |= bad[j];
    if (any)
        for (int j = 0; j < 16; j++)
            if (bad[j]) {
                double v = X[j], e = exp(v >= 0 ? -v : v);
                Y[j] = (float)(v >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e));
            }
}

NPK_ISA_CLONES_VOID(sigmoid_rows, (const float *X, float *Y, int64_t n), (X, Y, n)) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) sigmoid16(X + i, Y + i);
    if (i < n) { /* the tail through a block of 16 */
        float xb[16] = {0}, yb[16];
        memcpy(xb, X + i, sizeof(float) * (size_t)(n - i));
        sigmoid16(xb, yb);
        memcpy(Y + i, yb, sizeof(float) * (size_t)(n - i));
    }
}

NPK_ISA_CLONES(int, fast_unary, (npk_onnx_unop op, const npk_tensor *x, npk_tensor *y, double alpha, double lo,
                                 double hi),
               (op, x, y, alpha, lo, hi)) {
    if (is_q8(x->dtype) && y->dtype == x->dtype && (op == NPK_ONNX_RELU || op == NPK_ONNX_CLIP)) {
        int64_t n = npk_tensor_numel(x);
        if (op == NPK_ONNX_CLIP && ((!isinf(lo) && !(fabs(lo) < 9e18)) || (!isinf(hi) && !(fabs(hi) < 9e18))))
            return 1; /* a bound no int64 holds: the golden */
        if (x->dtype == NPK_DT_INT8) INT_UNARY(int8_t);
        else INT_UNARY(uint8_t);
        return 0;
    }
    if (x->dtype != NPK_DT_FLOAT || y->dtype != NPK_DT_FLOAT) return 1;
    int64_t n = npk_tensor_numel(x);
    const float *X = x->data;
    float *Y = y->data;
    double al = (double)(float)alpha;
    switch (op) {
    case NPK_ONNX_RELU:
        for (int64_t i = 0; i < n; i++) Y[i] = X[i] < 0 ? 0.0f : X[i];
        break;
    case NPK_ONNX_LEAKYRELU:
        for (int64_t i = 0; i < n; i++) Y[i] = X[i] < 0 ? (float)((double)X[i] * al) : X[i];
        break;
    case NPK_ONNX_CLIP:
        if ((double)(float)lo == lo && (double)(float)hi == hi) {
            /* float bounds (the usual case): comparing in float decides as in double, and the
             * result is x, lo or hi either way, so the same bits in twice the lanes (a NaN gets
             * its quiet bit, as the round trip through double gives it) */
            float fl = (float)lo, fh = (float)hi;
            for (int64_t i = 0; i < n; i++) {
                float v = X[i];
                if (v < fl) v = fl;
                if (v > fh) v = fh;
                uint32_t b;
                memcpy(&b, &v, sizeof b);
                if ((b & 0x7fffffffu) > 0x7f800000u) b |= 0x00400000u;
                memcpy(&Y[i], &b, sizeof b);
            }
            break;
        }
        for (int64_t i = 0; i < n; i++) {
            double v = X[i];
            if (v < lo) v = lo;
            if (v > hi) v = hi;
            float r = (float)v; /* (the compiler may drop the round trip for a NaN: quieted by hand) */
            uint32_t b;
            memcpy(&b, &r, sizeof b);
            if ((b & 0x7fffffffu) > 0x7f800000u) b |= 0x00400000u;
            memcpy(&Y[i], &b, sizeof b);
        }
        break;
    case NPK_ONNX_SIGMOID: sigmoid_rows(X, Y, n); break;
    case NPK_ONNX_TANH:
        for (int64_t i = 0; i < n; i++) Y[i] = (float)tanh((double)X[i]);
        break;
    case NPK_ONNX_SQRT:
        for (int64_t i = 0; i < n; i++) Y[i] = (float)sqrt((double)X[i]);
        break;
    case NPK_ONNX_EXP:
        for (int64_t i = 0; i < n; i++) Y[i] = (float)exp((double)X[i]);
        break;
    default: return 1;
    }
    return 0;
}
int npk_fast_unary(npk_onnx_unop op, const npk_tensor *x, npk_tensor *y, double alpha, double lo, double hi) {
    ew_job j = {.kind = 0, .op = op, .a = x, .y = y, .p0 = alpha, .p1 = lo, .p2 = hi, .n = npk_tensor_numel(y)};
    int rc;
    if (npk_tensor_numel(x) == j.n && ew_parallel(&j, &rc)) return rc;
    return fast_unary(op, x, y, alpha, lo, hi);
}

NPK_ISA_CLONES(int, fast_hard, (int swish, const npk_tensor *x, npk_tensor *y, double alpha, double beta),
               (swish, x, y, alpha, beta)) {
    if (x->dtype != NPK_DT_FLOAT || y->dtype != NPK_DT_FLOAT) return 1;
    int64_t n = npk_tensor_numel(x);
    const float *X = x->data;
    float *Y = y->data;
    if (swish)
        for (int64_t i = 0; i < n; i++) {
            double v = X[i];
            Y[i] = (float)(v * fmax(0, fmin(1, v / 6 + 0.5)));
        }
    else
        for (int64_t i = 0; i < n; i++) Y[i] = (float)fmax(0, fmin(1, alpha * (double)X[i] + beta));
    return 0;
}
int npk_fast_hard(int swish, const npk_tensor *x, npk_tensor *y, double alpha, double beta) {
    ew_job j = {.kind = 2, .swish = swish, .a = x, .y = y, .p0 = alpha, .p1 = beta, .n = npk_tensor_numel(y)};
    int rc;
    if (npk_tensor_numel(x) == j.n && ew_parallel(&j, &rc)) return rc;
    return fast_hard(swish, x, y, alpha, beta);
}

/* The Clip compares in float: with float bounds (lo and hi are float values) they decide as
 * npk_fast_unary's compares in double do, and the vectors are twice as wide. The tail: the
 * Mul by tm (tail bit 1) and the Add of ta (bit 2) after the chain, each its node's own float
 * operation (both are commutative, so the operand order does not matter). */
#define HSWISH_LOOP(LAST)                                                                                              \
    for (int64_t i = 0; i < n; i++) {                                                                              \
        float xi = x[i], c = xi + a; /* Add */                                                                     \
        if (c < lo) c = lo;          /* Clip */                                                                    \
        if (c > hi) c = hi;                                                                                        \
        y[i] = LAST;                                                                                               \
    }
#define HSWISH_TAIL_LOOP(LAST)                                                                                         \
    for (int64_t i = 0; i < n; i++) {                                                                              \
        float xi = x[i], c = xi + a;                                                                               \
        if (c < lo) c = lo;                                                                                        \
        if (c > hi) c = hi;                                                                                        \
        float r = LAST;                                                                                            \
        if (tail & 1) r = r * tm;                                                                                  \
        if (tail & 2) r = r + ta;                                                                                  \
        y[i] = r;                                                                                                  \
    }
NPK_ISA_CLONES_VOID(hswish_chain, (const float *x, float *y, int64_t n, float a, float lo, float hi, float d,
                                   int div_last, int tail, float tm, float ta),
                    (x, y, n, a, lo, hi, d, div_last, tail, tm, ta)) {
    if (tail == 3 && div_last) HSWISH_TAIL_LOOP((xi * c) / d)
    else if (tail == 3) HSWISH_TAIL_LOOP(xi * (c / d))
    else if (tail && div_last) HSWISH_TAIL_LOOP((xi * c) / d)
    else if (tail) HSWISH_TAIL_LOOP(xi * (c / d))
    else if (div_last) HSWISH_LOOP((xi * c) / d)
    else HSWISH_LOOP(xi * (c / d))
}
#undef HSWISH_LOOP
#undef HSWISH_TAIL_LOOP
static void hswish_chain_run(const float *x, float *y, int64_t n, float a, float lo, float hi, float d, int div_last,
                             int tail, float tm, float ta) {
    hswish_chain(x, y, n, a, lo, hi, d, div_last, tail, tm, ta);
}
int npk_fast_hswish_chain_tail(const float *x, float *y, int64_t n, float a, double lo, double hi, float d,
                               int div_last, int tail, float tm, float ta) {
    if ((double)(float)lo != lo || (double)(float)hi != hi) return 1; /* bounds that are not floats */
    ew_job j = {.kind = 3, .cx = x, .cy = y, .ca = a, .cd = d, .p0 = lo, .p1 = hi, .div_last = div_last, .n = n,
                .tail = tail & 3, .tm = tm, .ta = ta};
    int rc;
    if (!ew_parallel(&j, &rc)) hswish_chain(x, y, n, a, (float)lo, (float)hi, d, div_last, tail & 3, tm, ta);
    return 0;
}
int npk_fast_hswish_chain(const float *x, float *y, int64_t n, float a, double lo, double hi, float d, int div_last) {
    return npk_fast_hswish_chain_tail(x, y, n, a, lo, hi, d, div_last, 0, 1.0f, 0.0f);
}

NPK_ISA_CLONES(int, fast_batchnorm, (const npk_tensor *x, const npk_tensor *scale, const npk_tensor *bias,
                                     const npk_tensor *mean, const npk_tensor *var, double eps, npk_tensor *y),
               (x, scale, bias, mean, var, eps, y)) {
    if (x->dtype != NPK_DT_FLOAT || y->dtype != NPK_DT_FLOAT || scale->dtype != NPK_DT_FLOAT ||
        bias->dtype != NPK_DT_FLOAT || mean->dtype != NPK_DT_FLOAT || var->dtype != NPK_DT_FLOAT)
        return 1;
    int64_t n = x->rank > 0 ? x->dims[0] : 1, c = x->rank > 1 ? x->dims[1] : 1, sp = inner_from(x, 2);
    const float *X = x->data, *S = scale->data, *Bi = bias->data, *Me = mean->data, *V = var->data;
    float *Y = y->data;
    for (int64_t ch = 0; ch < c; ch++) {
        double s = S[ch], b = Bi[ch], m = Me[ch], inv = 1.0 / sqrt((double)V[ch] + eps);
        for (int64_t i = 0; i < n; i++) {
            const float *xr = X + (i * c + ch) * sp;
            float *yr = Y + (i * c + ch) * sp;
            for (int64_t k = 0; k < sp; k++) yr[k] = (float)(((double)xr[k] - m) * inv * s + b);
        }
    }
    return 0;
}
int npk_fast_batchnorm(const npk_tensor *x, const npk_tensor *scale, const npk_tensor *bias, const npk_tensor *mean,
                       const npk_tensor *var, double eps, npk_tensor *y) {
    return fast_batchnorm(x, scale, bias, mean, var, eps, y);
}

/* ---- ConvTranspose, global pooling ------------------------------------------------------- */

/* col2im of one (sample, group): output channels [lo, hi) of the group, each filled with its
 * bias and then every (oc, k) row of col scatter-added into it in the order of one thread (a
 * channel's sums do not depend on the split: threads take whole channels; the 2x2 / 2 tiles,
 * one value an output, take input rows of every channel instead). */
typedef struct col2im_job {
    const npk_onnx_conv_params *p;
    const float *col, *B;
    float *Y; /* the group's first output channel of the sample */
    int64_t m0; /* the group's first output channel (for B) */
    int64_t mg; /* the group's output channels */
    int ntasks; /* the tiles split by input rows: tasks dealt evenly */
} col2im_job;

/* A 2-D ConvTranspose whose strides equal its kernel, without padding or dilation (ppocr-v4-det's
 * 2 x 2 / 2 upsampling heads): every output takes exactly one column value, y = bias + col,
 * written row by row with the kernel's columns interleaved (the sum the scatter-add below
 * forms for it, bias first). */
static int col2im_tiles(const npk_onnx_conv_params *p) {
    const int64_t *in = p->in, *k = p->k, *o = p->out;
    return in[0] == 1 && k[0] == 1 && o[0] == 1 && p->stride[1] == k[1] && p->stride[2] == k[2] && p->dil[1] == 1 &&
           p->dil[2] == 1 && !p->pad_b[1] && !p->pad_b[2] && o[1] == in[1] * k[1] && o[2] == in[2] * k[2];
}

NPK_ISA_CLONES_VOID(tile_row, (float *dst, const float *s0, const float *s1, int64_t n, float bv),
                    (dst, s0, s1, n, bv)) {
    for (int64_t i = 0; i < n; i++) dst[2 * i] = bv + s0[i], dst[2 * i + 1] = bv + s1[i];
}

/* Output channels [lo, hi), input rows [r0, r1). */
static void col2im_tiles_range(const col2im_job *j, int64_t lo, int64_t hi, int64_t r0, int64_t r1) {
    const npk_onnx_conv_params *p = j->p;
    const int64_t *in = p->in, *k = p->k, *o = p->out;
    int64_t osz = o[1] * o[2], isz = in[1] * in[2], ksz = k[1] * k[2];
    for (int64_t oc = lo; oc < hi; oc++) {
        float bv = j->B ? j->B[j->m0 + oc] : 0.0f;
        for (int64_t i1 = r0; i1 < r1; i1++)
            for (int64_t k1 = 0; k1 < k[1]; k1++) {
                float *dst = j->Y + oc * osz + (i1 * k[1] + k1) * o[2];
                const float *src = j->col + (oc * ksz + k1 * k[2]) * isz + i1 * in[2];
                if (k[2] == 2) tile_row(dst, src, src + isz, in[2], bv);
                else
                    for (int64_t i2 = 0; i2 < in[2]; i2++)
                        for (int64_t k2 = 0; k2 < k[2]; k2++) dst[i2 * k[2] + k2] = bv + src[k2 * isz + i2];
            }
    }
}

static void col2im_range(void *ctx, int64_t lo, int64_t hi) {
    const col2im_job *j = ctx;
    const npk_onnx_conv_params *p = j->p;
    const int64_t *in = p->in, *k = p->k, *o = p->out;
    int64_t osz = o[0] * o[1] * o[2], isz = in[0] * in[1] * in[2], ksz = k[0] * k[1] * k[2];
    if (col2im_tiles(p)) {
        col2im_tiles_range(j, lo, hi, 0, in[1]);
        return;
    }
    for (int64_t oc = lo; oc < hi; oc++) {
        float *yc = j->Y + oc * osz, bv = j->B ? j->B[j->m0 + oc] : 0.0f;
        for (int64_t i = 0; i < osz; i++) yc[i] = bv;
        for (int64_t k0 = 0; k0 < k[0]; k0++)
            for (int64_t k1 = 0; k1 < k[1]; k1++)
                for (int64_t k2 = 0; k2 < k[2]; k2++) {
                    const float *cr = j->col + (oc * ksz + (k0 * k[1] + k1) * k[2] + k2) * isz;
                    int64_t off2 = k2 * p->dil[2] - p->pad_b[2], s2 = p->stride[2];
                    /* i2 with 0 <= i2 * s2 + off2 < o[2] */
                    int64_t lo2 = off2 >= 0 ? 0 : (-off2 + s2 - 1) / s2;
                    int64_t hi2 = o[2] - off2 <= 0 ? 0 : (o[2] - off2 - 1) / s2 + 1;
                    if (hi2 > in[2]) hi2 = in[2];
                    if (lo2 >= hi2) continue;
                    for (int64_t i0 = 0; i0 < in[0]; i0++) {
                        int64_t o0 = i0 * p->stride[0] + k0 * p->dil[0] - p->pad_b[0];
                        if (o0 < 0 || o0 >= o[0]) continue;
                        for (int64_t i1 = 0; i1 < in[1]; i1++) {
                            int64_t o1 = i1 * p->stride[1] + k1 * p->dil[1] - p->pad_b[1];
                            if (o1 < 0 || o1 >= o[1]) continue;
                            const float *src = cr + (i0 * in[1] + i1) * in[2];
                            float *dst = yc + (o0 * o[1] + o1) * o[2] + off2;
                            for (int64_t i2 = lo2; i2 < hi2; i2++) dst[i2 * s2] += src[i2];
                        }
                    }
                }
    }
}

/* The tiles of every channel, input rows dealt evenly over the tasks: each thread writes the
 * rows of the map it computed in the GEMM's column slices before (threads.h's blocks). */
static void col2im_rows_task(void *ctx, int t) {
    const col2im_job *j = ctx;
    int64_t H = j->p->in[1];
    col2im_tiles_range(j, 0, j->mg, t * H / j->ntasks, (t + 1) * H / j->ntasks);
}

int npk_fast_conv_transpose(const npk_onnx_conv_params *p, const npk_tensor *x, const npk_tensor *w,
                            const npk_tensor *b, npk_tensor *y) {
    if (x->dtype != NPK_DT_FLOAT || w->dtype != NPK_DT_FLOAT || y->dtype != NPK_DT_FLOAT ||
        (b && b->dtype != NPK_DT_FLOAT))
        return 1;
    const int64_t *in = p->in, *k = p->k, *o = p->out;
    int64_t cg = p->c / p->group, mg = p->m / p->group;
    int64_t osz = o[0] * o[1] * o[2], isz = in[0] * in[1] * in[2], ksz = k[0] * k[1] * k[2], R = mg * ksz;
    if (R * isz > ((int64_t)1 << 26)) return 1; /* the column buffer would pass 256 MiB: the golden */
    float *wt = malloc(sizeof(float) * (size_t)(R * cg + 1)), *col = malloc(sizeof(float) * (size_t)(R * isz + 1));
    if (!wt || !col) {
        free(wt);
        free(col);
        return -NPK_ENOMEM;
    }
    const float *X = x->data, *W = w->data, *B = b ? b->data : NULL;
    float *Y = y->data;
    /* threads: output channels of ~8K scattered values a task */
    int64_t grain = (1 << 13) / (ksz * isz > 0 ? ksz * isz : 1) + 1;
    for (int64_t g = 0; g < p->group; g++) {
        /* W of the group is [cg][mg * ksz]; col = W^T x needs [mg * ksz][cg] */
        for (int64_t ic = 0; ic < cg; ic++)
            for (int64_t r = 0; r < R; r++) wt[r * cg + ic] = W[(g * cg + ic) * R + r];
        for (int64_t n = 0; n < p->n; n++) {
            npk_gemm_f32_reassoc(R, isz, cg, wt, cg, X + (n * p->c + g * cg) * isz, isz, col, isz, 0);
            col2im_job j = {p, col, B, Y + (n * p->m + g * mg) * osz, g * mg, mg, 0};
            int th = npk_threads_now();
            if (th > 1 && col2im_tiles(p) && in[1] >= 2 * th && mg * osz >= (1 << 14)) {
                j.ntasks = th * 2 <= in[1] / 2 ? th * 2 : th; /* rows of at least 2 */
                npk_parallel(j.ntasks, col2im_rows_task, &j);
            } else {
                npk_parallel_range(mg, grain, col2im_range, &j);
            }
        }
    }
    free(wt);
    free(col);
    return 0;
}

typedef struct gpool_job {
    const float *X;
    float *Y;
    int64_t sp;
    int is_max;
} gpool_job;

/* Channels [lo, hi): eight at once, each summed in the golden's order (bit for bit), the
 * rest one by one in the same order (so any split into ranges gives the same bits). */
#ifdef NPK_ISA_X86
#include <immintrin.h>

/* Eight rows' values k .. k + 7 transposed: o[j] = (r0[k + j], ..., r7[k + j]). */
static inline __attribute__((always_inline)) NPK_TARGET_AVX2 void tr8(const float *r, int64_t sp, int64_t k,
                                                                       __m256 *o) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        __m256 a = _mm256_loadu_ps(r + i * sp + k), b = _mm256_loadu_ps(r + (i + 1) * sp + k);
        t[i] = _mm256_unpacklo_ps(a, b), t[i + 1] = _mm256_unpackhi_ps(a, b);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44), u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44), u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++)
        o[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20), o[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
}

/* The mean of G x 8 rows of sp values (G = 1 or 2: groups of eight rows in flight), each row
 * summed in double in order as the golden: the rows' values transposed into the lanes, one
 * double lane per row. */
static inline __attribute__((always_inline)) NPK_TARGET_AVX2 void gap_rows(const float *r, int64_t sp, int G,
                                                                            float *y) {
    __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    int64_t k = 0;
    for (; k + 8 <= sp; k += 8) {
        __m256 o[2][8];
        for (int g = 0; g < G; g++) tr8(r + g * 8 * sp, sp, k, o[g]);
        for (int j = 0; j < 8; j++)
            for (int g = 0; g < G; g++) {
                acc[2 * g] = _mm256_add_pd(acc[2 * g], _mm256_cvtps_pd(_mm256_castps256_ps128(o[g][j])));
                acc[2 * g + 1] = _mm256_add_pd(acc[2 * g + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(o[g][j], 1)));
            }
    }
    double s[16];
    for (int g = 0; g < 2 * G; g++) _mm256_storeu_pd(s + 4 * g, acc[g]);
    for (int i = 0; i < 8 * G; i++) {
        for (int64_t kk = k; kk < sp; kk++) s[i] += (double)r[i * sp + kk];
        y[i] = (float)(s[i] / (double)sp);
    }
}

NPK_TARGET_AVX2 static int64_t gap_avx2(const float *X, float *Y, int64_t sp, int64_t lo, int64_t hi) {
    int64_t i = lo;
    for (; i + 16 <= hi; i += 16) gap_rows(X + i * sp, sp, 2, Y + i);
    for (; i + 8 <= hi; i += 8) gap_rows(X + i * sp, sp, 1, Y + i);
    return i;
}
#endif

static void gpool_range(void *ctx, int64_t lo, int64_t hi) {
    const gpool_job *j = ctx;
    const float *X = j->X;
    float *Y = j->Y;
    int64_t sp = j->sp, i = lo;
#ifdef NPK_ISA_X86
    if (!j->is_max && npk_isa_active() >= NPK_ISA_AVX2) i = gap_avx2(X, Y, sp, lo, hi);
#endif
    if (!j->is_max)
        for (; i + 8 <= hi; i += 8) {
            typedef double vd8 __attribute__((vector_size(64)));
            const float *r = X + i * sp;
            vd8 acc = {0};
            for (int64_t k = 0; k < sp; k++)
                acc += (vd8){r[k], r[sp + k], r[2 * sp + k], r[3 * sp + k], r[4 * sp + k], r[5 * sp + k], r[6 * sp + k],
                             r[7 * sp + k]};
            for (int k = 0; k < 8; k++) Y[i + k] = (float)(acc[k] / (double)sp);
        }
    for (; i < hi; i++) {
        const float *r = X + i * sp;
        double acc = j->is_max ? -INFINITY : 0;
        if (j->is_max)
            for (int64_t k = 0; k < sp; k++) acc = (double)r[k] > acc ? (double)r[k] : acc;
        else
            for (int64_t k = 0; k < sp; k++) acc += (double)r[k];
        Y[i] = (float)(j->is_max ? acc : acc / (double)sp);
    }
}

/* Threads: channels in ranges of multiples of 8 (from ~32K values a task: smaller ones ran
 * slower split, ppocr-cls-qdq-s8 0.12 -> 0.23 ms, the other core reading what this one wrote). */
int npk_fast_global_pool(const npk_tensor *x, npk_tensor *y, int is_max) {
    if (x->dtype != NPK_DT_FLOAT || y->dtype != NPK_DT_FLOAT) return 1;
    int64_t nc = x->dims[0] * x->dims[1], sp = inner_from(x, 2);
    gpool_job j = {x->data, y->data, sp, is_max};
    int64_t per = ((1 << 15) / (sp > 0 ? sp : 1) + 7) / 8 * 8;
    npk_parallel_range(nc, per, gpool_range, &j);
    return 0;
}
