// SPDX-License-Identifier: MIT
/* Dense 3 x 3 float convolutions at stride 1 by Winograd's F(2 x 2, 3 x 3) for the
 * fast CPU path (fast_onnx.h, npk_fast_wino_ok / npk_fast_wino_f32): ppocr-v4-det's
 * 3 x 3 necks (96 -> 24 channels over 24 x 80 and 12 x 40 maps, half of its MACs).
 *
 * The output is cut into 2 x 2 tiles; tile (ty, tx) reads the 4 x 4 window of the
 * zero-padded input at rows 2 ty .. 2 ty + 3 and columns 2 tx .. 2 tx + 3 (padded
 * coordinates: input row r - PT, column q - PL). With
 *   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
 *   A^T = [1 1 1 0; 0 1 -1 -1],
 * a channel's window d becomes V = B^T d B and a filter g becomes U = G g G^T (4 x 4
 * each); for each of the 16 positions xi of the 4 x 4 transform, the sums over the
 * input channels are one GEMM, M[xi] (out channels x tiles) = U[xi] (out x in) x
 * V[xi] (in x tiles), and the tile's output is A^T M A plus the bias: 16 GEMMs of
 * K = channels instead of 9 taps of 2 x 2 positions (2.25x fewer multiplies).
 *
 * Work is done in blocks of tile rows (about 40 tiles: the block's V, 16 x channels x
 * tiles floats, stays in L2 between its transform and its 16 GEMMs); threads take
 * whole blocks. The filters are transformed in double and rounded once to float; the
 * input and output transforms are float additions in a fixed order. Every output is
 * the same sequence of operations whatever the block or thread that computes it, so
 * the bytes do not depend on the thread count; they differ from the direct sums by
 * float rounding (docs/onnx.md: the float tolerance). */
#include "ops/fast_onnx.h"

#include "npukit/cpu.h"
#include "npukit/error.h"
#include "npukit/gemm.h"
#include "npukit/threads.h"

#include <stdlib.h>
#include <string.h>

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

int npk_fast_wino_ok(const npk_onnx_conv_params *p) {
    return p->in[0] == 1 && p->k[0] == 1 && p->out[0] == 1 && p->k[1] == 3 && p->k[2] == 3 && p->stride[1] == 1 &&
           p->stride[2] == 1 && p->dil[1] == 1 && p->dil[2] == 1 && p->c / p->group >= 16 && p->m / p->group >= 8 &&
           p->out[2] >= 16 && p->out[1] >= 2;
}

/* Filters [M][C][3][3] -> U[16][M][C]: G g G^T in double, rounded once. */
static void wino_filters(const float *w, int64_t M, int64_t C, float *U) {
    for (int64_t m = 0; m < M; m++)
        for (int64_t c = 0; c < C; c++) {
            const float *g = w + (m * C + c) * 9;
            double t[4][3], u[4][4];
            for (int j = 0; j < 3; j++) {
                double g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
                t[0][j] = g0, t[1][j] = (g0 + g1 + g2) * 0.5, t[2][j] = (g0 - g1 + g2) * 0.5, t[3][j] = g2;
            }
            for (int i = 0; i < 4; i++) {
                double g0 = t[i][0], g1 = t[i][1], g2 = t[i][2];
                u[i][0] = g0, u[i][1] = (g0 + g1 + g2) * 0.5, u[i][2] = (g0 - g1 + g2) * 0.5, u[i][3] = g2;
            }
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) U[((i * 4 + j) * M + m) * C + c] = (float)u[i][j];
        }
}

/* One padded row (input row xr, NULL: a padding row) split into its even and odd padded
 * columns, E[j] = column 2j, O[j] = column 2j + 1 (padded column q = input column q - PL),
 * j = 0 .. tw; zeros from tw + 1 to n8 (the vector loop below reads up to there). */
NPK_ISA_CLONES_VOID(wino_split,
                    (const float *restrict xr, int64_t W, int64_t PL, int64_t tw, int64_t n8, float *restrict E,
                     float *restrict O),
                    (xr, W, PL, tw, n8, E, O)) {
    if (!xr) {
        memset(E, 0, sizeof(float) * (size_t)(n8 + 1));
        memset(O, 0, sizeof(float) * (size_t)(n8 + 1));
        return;
    }
    /* both columns inside the input for j in [j0, j1) */
    int64_t j0 = (PL + 1) / 2, j1 = (W + PL) / 2;
    if (j1 > tw + 1) j1 = tw + 1;
    if (j1 < j0) j1 = j0;
    for (int64_t j = 0; j <= n8; j++) {
        if (j == j0) j = j1; /* the edges only */
        if (j > n8) break;
        int64_t q0 = 2 * j - PL, q1 = q0 + 1;
        E[j] = j <= tw && q0 >= 0 && q0 < W ? xr[q0] : 0.0f;
        O[j] = j <= tw && q1 >= 0 && q1 < W ? xr[q1] : 0.0f;
    }
    const float *restrict xs = xr - PL;
    for (int64_t j = j0; j < j1; j++) {
        E[j] = xs[2 * j];
        O[j] = xs[2 * j + 1];
    }
}

typedef float vf8u __attribute__((vector_size(32), aligned(4)));

/* The 16 transforms V = B^T d B of one tile row's windows, 8 tiles at a time, from its four
 * padded rows split by wino_split (row k's E at R + k * rs, its O at R + k * rs + rs / 2):
 * V[(i * 4 + j) * vs + t] for t < n8 (the tiles past the row's tw get finite garbage). */
NPK_ISA_CLONES_VOID(wino_tiles, (const float *restrict R, int64_t rs, int64_t n8, float *restrict V, int64_t vs),
                    (R, rs, n8, V, vs)) {
    int64_t ho = rs / 2;
    for (int64_t t = 0; t < n8; t += 8) {
        vf8u e[4], e1[4], o[4], o1[4]; /* rows' E and O at t and t + 1 */
        for (int k = 0; k < 4; k++) {
            const float *r = R + k * rs + t;
            e[k] = *(const vf8u *)r, e1[k] = *(const vf8u *)(r + 1);
            o[k] = *(const vf8u *)(r + ho), o1[k] = *(const vf8u *)(r + ho + 1);
        }
        /* B^T along the rows: (d0 - d2, d1 + d2, d2 - d1, d1 - d3) */
        vf8u ae[4] = {e[0] - e[2], e[1] + e[2], e[2] - e[1], e[1] - e[3]};
        vf8u ae1[4] = {e1[0] - e1[2], e1[1] + e1[2], e1[2] - e1[1], e1[1] - e1[3]};
        vf8u ao[4] = {o[0] - o[2], o[1] + o[2], o[2] - o[1], o[1] - o[3]};
        vf8u ao1[4] = {o1[0] - o1[2], o1[1] + o1[2], o1[2] - o1[1], o1[1] - o1[3]};
        /* and along the columns: d = (E[t], O[t], E[t + 1], O[t + 1]) */
        for (int i = 0; i < 4; i++) {
            float *v = V + 4 * i * vs + t;
            *(vf8u *)v = ae[i] - ae1[i];
            *(vf8u *)(v + vs) = ao[i] + ae1[i];
            *(vf8u *)(v + 2 * vs) = ae1[i] - ao[i];
            *(vf8u *)(v + 3 * vs) = ao[i] - ao1[i];
        }
    }
}

/* One output channel's tile row: Mt[(i * 4 + j) * ms + t] the 16 products' sums ->
 * two output rows y0, y1 (2 tw columns each, in r: 4 tw floats of scratch), bias b. */
NPK_ISA_CLONES_VOID(wino_out, (const float *restrict Mt, int64_t ms, int64_t tw, float b, float *restrict r),
                    (Mt, ms, tw, b, r)) {
    float *restrict r0 = r, *restrict r1 = r + 2 * tw;
    for (int64_t t = 0; t < tw; t++) {
        float m[4][4];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) m[i][j] = Mt[(i * 4 + j) * ms + t];
        float s0[4], s1[4];
        for (int j = 0; j < 4; j++) {
            s0[j] = m[0][j] + m[1][j] + m[2][j];
            s1[j] = m[1][j] - m[2][j] - m[3][j];
        }
        r0[2 * t] = b + (s0[0] + s0[1] + s0[2]);
        r0[2 * t + 1] = b + (s0[1] - s0[2] - s0[3]);
        r1[2 * t] = b + (s1[0] + s1[1] + s1[2]);
        r1[2 * t + 1] = b + (s1[1] - s1[2] - s1[3]);
    }
}

typedef struct wino_job {
    const float *X, *U, *B; /* the group's input planes, transformed filters, bias (or NULL) */
    float *Y;               /* the group's output planes */
    float *scratch;         /* ntasks x per floats: each task's own */
    int64_t C, M, H, W, OH, OW, PT, PL, tw, th, nbr, nblk, per;
    int ntasks;
} wino_job;

/* A task's scratch: V (16 positions of C x T, each 8 floats longer: the vector writes past a
 * row's last tile), the GEMMs' sums (16 x M x T), the block's padded rows split (2 nbr + 2
 * rows of E and O, rs floats each), every channel's last two split rows (the next block's
 * first two: each input row is split once per task) and two output rows. */
static int64_t wino_rs(int64_t tw) { return 2 * ((tw + 7) / 8 * 8 + 8); }
static int64_t wino_scratch(int64_t C, int64_t M, int64_t nbr, int64_t tw) {
    return 16 * (C * nbr * tw + 8) + 16 * M * nbr * tw + (2 * nbr + 2 + 2 * C) * wino_rs(tw) + 4 * tw;
}

/* Blocks [t * nblk / ntasks, (t + 1) * nblk / ntasks) of nbr tile rows each. */
static void wino_task(void *ctx, int task) {
    const wino_job *j = ctx;
    int64_t C = j->C, M = j->M, tw = j->tw, T = j->nbr * tw, vs = C * T + 8, rs = wino_rs(tw), n8 = (tw + 7) / 8 * 8;
    float *V = j->scratch + task * j->per, *Mt = V + 16 * vs, *R = Mt + 16 * M * T, *P = R + (2 * j->nbr + 2) * rs;
    float *r = P + 2 * C * rs;
    int64_t b0 = task * j->nblk / j->ntasks, b1 = (task + 1) * j->nblk / j->ntasks;
    for (int64_t blk = b0; blk < b1; blk++) {
        int64_t ty0 = blk * j->nbr, nty = j->th - ty0 < j->nbr ? j->th - ty0 : j->nbr, N = nty * tw;
        int64_t k0 = blk > b0 ? 2 : 0; /* rows 0 and 1 are the block before's last two, kept in P */
        int64_t r0 = 2 * ty0 + k0 - j->PT, r1 = 2 * ty0 + 2 * nty + 2 - j->PT; /* the input rows to split, clipped */
        r0 = r0 < 0 ? 0 : r0, r1 = r1 > j->H ? j->H : r1;
        for (int64_t c = 0; c < C; c++) {
            const float *xc = j->X + c * j->H * j->W;
            if (c + 1 < C) /* the next channel's rows: one plane apart, beyond the prefetchers' reach */
                for (const char *q = (const char *)(xc + j->H * j->W + r0 * j->W),
                                *qe = (const char *)(xc + j->H * j->W + r1 * j->W);
                     q < qe; q += 64)
                    __builtin_prefetch(q);
            if (k0) memcpy(R, P + 2 * c * rs, sizeof(float) * (size_t)(2 * rs));
            for (int64_t k = k0; k < 2 * nty + 2; k++) {
                int64_t ir = 2 * ty0 + k - j->PT;
                wino_split(ir >= 0 && ir < j->H ? xc + ir * j->W : NULL, j->W, j->PL, tw, n8, R + k * rs,
                           R + k * rs + rs / 2);
            }
            if (blk + 1 < b1) memcpy(P + 2 * c * rs, R + 2 * nty * rs, sizeof(float) * (size_t)(2 * rs));
            for (int64_t y = 0; y < nty; y++) wino_tiles(R + 2 * y * rs, rs, n8, V + c * T + y * tw, vs);
        }
        /* at most 16 rows of A per call: the GEMM reads V in place (more would copy it) */
        for (int xi = 0; xi < 16; xi++)
            for (int64_t m0 = 0; m0 < M; m0 += 16)
                npk_gemm_f32_reassoc(M - m0 < 16 ? M - m0 : 16, N, C, j->U + (xi * M + m0) * C, C, V + xi * vs, T,
                                     Mt + (xi * M + m0) * T, T, 0);
        for (int64_t m = 0; m < M; m++)
            for (int64_t y = 0; y < nty; y++) {
                int64_t oy = 2 * (ty0 + y);
                wino_out(Mt + m * T + y * tw, M * T, tw, j->B ? j->B[m] : 0.0f, r);
                float *ym = j->Y + m * j->OH * j->OW;
                memcpy(ym + oy * j->OW, r, sizeof(float) * (size_t)j->OW);
                if (oy + 1 < j->OH) memcpy(ym + (oy + 1) * j->OW, r + 2 * tw, sizeof(float) * (size_t)j->OW);
            }
    }
}

int npk_fast_wino_f32(const npk_onnx_conv_params *p, const float *X, const float *W, const float *B, float *Y) {
    int64_t H = p->in[1], Wd = p->in[2], OH = p->out[1], OW = p->out[2], C = p->c / p->group, M = p->m / p->group;
    int64_t tw = (OW + 1) / 2, th = (OH + 1) / 2;
    /* blocks of about 40 tiles (at least one tile row); with threads, smaller ones while
     * there are fewer than two per thread (12 x 40: 6 blocks of 20 tiles, not 3 of 40). A
     * tile's sums do not depend on its block, so neither do the bytes. */
    int nth = npk_threads_now(), par = nth > 1 && M * OH * OW * C * 9 >= (1 << 21);
    int64_t nbr = tw >= 40 ? 1 : (40 + tw - 1) / tw;
    if (nbr > th) nbr = th;
    while (par && nbr > 1 && (th + nbr - 1) / nbr < 2 * nth) nbr--;
    int64_t nblk = (th + nbr - 1) / nbr;
    int ntasks = par ? (int)(nblk < 2 * nth ? nblk : 2 * nth) : 1;
    int64_t per = wino_scratch(C, M, nbr, tw);
    float *U = malloc(sizeof(float) * (size_t)(16 * M * C)), *S = malloc(sizeof(float) * (size_t)(ntasks * per));
    if (!U || !S) {
        free(U), free(S);
        return -NPK_ENOMEM;
    }
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t g = 0; g < p->group; g++) {
            wino_filters(W + g * M * C * 9, M, C, U);
            wino_job j = {X + (n * p->c + g * C) * H * Wd, U, B ? B + g * M : NULL, Y + (n * p->m + g * M) * OH * OW,
                          S, C, M, H, Wd, OH, OW, p->pad_b[1], p->pad_b[2], tw, th, nbr, nblk, per, ntasks};
            if (ntasks > 1) npk_parallel(ntasks, wino_task, &j);
            else wino_task(&j, 0);
        }
    free(U), free(S);
    return 0;
}
