// SPDX-License-Identifier: MIT
/* v0 lowerings: the high-level int8 operators on a v0 driver (matmul tiled
 * to the array's envelope with a split K, convolution as one CONV2D
 * descriptor or host im2col + matmul, ReLU rows, max pooling) and, when
 * CAPS.gemmini_present == 0, their routing to an attached e1 (GEMM_S8
 * tiles, VRELU_S8) or to the CPU reference. The driver (src/rt/v0_drv.c)
 * only programs the device; everything here goes through its API. */
#include "npukit/e1_drv.h"
#include "npukit/job.h"
#include "npukit/v0_drv.h"
#include "ops/ref.h"
#include "rt/v0_ops.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t align16(uint64_t x) { return (uint32_t)((x + 15) & ~15ull); }
/* Chunk size splitting x into ceil(x / limit) chunks of equal size rounded
 * up to 16 (never above limit, a multiple of 16). */
static uint32_t balanced(uint32_t x, uint32_t limit) {
    uint32_t n = (x + limit - 1) / limit, c = align16((x + n - 1) / n);
    return c > limit ? limit : c;
}


typedef struct gbuf {
    uint64_t addr;
    int live, mapped; /* mapped: the caller's own buffer (npk_port_map_host) */
} gbuf;

static int galloc(npk_v0 *v, gbuf *g, uint64_t size) {
    int rc = npk_port_alloc(npk_v0_port(v), size ? size : 1, 64, &g->addr);
    if (rc) return rc;
    g->live = 1;
    return 0;
}

/* Zero copy: the caller's rows x stride bytes at host become the tensor's guest
 * memory (npk_port_map_host: the in-process port), when the device can use
 * them in place: every row start 16-byte aligned (the mapping's base is 64-byte
 * aligned, so the stride must be a multiple of 16) and the range inside the
 * TENSOR_MEM window. 1 when mapped; 0: the caller stages a copy (a port to
 * another process or to hardware, a model with a declared memory map). The
 * device only reads A and B (their descriptors' operands), so mapping the
 * caller's const inputs is safe. */
static int gmap(npk_v0 *v, gbuf *g, const void *host, uint64_t rows, uint64_t stride) {
    if (stride % 16) return 0;
    if (npk_port_map_host(npk_v0_port(v), (void *)(uintptr_t)host, rows * stride, &g->addr)) return 0;
    if (!npk_v0_reaches(v, g->addr, rows * stride)) {
        npk_port_free(npk_v0_port(v), g->addr);
        return 0;
    }
    g->live = g->mapped = 1;
    return 1;
}

static void gfree(npk_v0 *v, gbuf *g) {
    if (g->live) npk_port_free(npk_v0_port(v), g->addr);
    g->live = g->mapped = 0;
}

static int gemmini(const npk_v0 *v) { return (npk_v0_caps(v) & NPK_V0_CAPS_GEMMINI) != 0; }

#define E1_ROUTE_MAX_MACS (1ull << 20) /* beyond this the e1 tile engine is hopeless: CPU */

/* C (int32, [M][N]) = A[M][K] x B[K][N] through e1 GEMM_S8 tiles: m, n <= 3
 * and the deepest k <= 7 whose A, B and C fit the 64-byte scratchpad
 * (npk_e1_gemm_layout decides). */
static int e1_matmul(npk_v0 *v, uint32_t M, uint32_t N, uint32_t K, const int8_t *A, const int8_t *B, int32_t *C,
                     uint32_t *tiles) {
    int8_t at[3 * 7], bt[7 * 3];
    int32_t ct[9];
    npk_e1_gemm g;
    uint32_t TK = 7;
    while (TK > 1 && npk_e1_gemm_layout(0, 3, 3, TK, &g)) TK--;
    *tiles = 0;
    memset(C, 0, (size_t)M * N * sizeof *C);
    for (uint32_t i0 = 0; i0 < M; i0 += 3)
        for (uint32_t j0 = 0; j0 < N; j0 += 3)
            for (uint32_t k0 = 0; k0 < K; k0 += TK) {
                uint32_t m = M - i0 < 3 ? M - i0 : 3, n = N - j0 < 3 ? N - j0 : 3, k = K - k0 < TK ? K - k0 : TK;
                for (uint32_t i = 0; i < m; i++) memcpy(at + i * k, A + (size_t)(i0 + i) * K + k0, k);
                for (uint32_t kk = 0; kk < k; kk++) memcpy(bt + kk * n, B + (size_t)(k0 + kk) * N + j0, n);
                int rc = npk_e1_gemm_tile(npk_v0_route_e1(v), 0, m, n, k, at, bt, ct);
                if (rc) return npk_err_prefix(-rc, "v0 route to e1: GEMM tile at (%u,%u,%u)", i0, j0, k0);
                ++*tiles;
                for (uint32_t i = 0; i < m; i++)
                    for (uint32_t j = 0; j < n; j++) {
                        uint32_t *c = (uint32_t *)&C[(size_t)(i0 + i) * N + j0 + j];
                        *c += (uint32_t)ct[i * n + j];
                    }
            }
    return 0;
}

/* matmul without the device (gemmini absent): e1 or CPU. */
static int routed_matmul(npk_v0 *v, const char *what, uint32_t M, uint32_t N, uint32_t K, const int8_t *A,
                         const int8_t *B, int32_t *C, int relu) {
    uint64_t macs = (uint64_t)M * N * K;
    int rc;
    if (npk_v0_route_e1(v) && macs <= E1_ROUTE_MAX_MACS) {
        uint32_t tiles;
        rc = e1_matmul(v, M, N, K, A, B, C, &tiles);
        if (rc) return rc;
        if (relu)
            for (size_t i = 0; i < (size_t)M * N; i++) C[i] = C[i] < 0 ? 0 : C[i];
        npk_v0_note_route(v, NPK_V0_ROUTE_E1, "%s %ux%ux%u: CAPS.gemmini_present=0 -> e1 GEMM_S8 tiles (legacy datapath, %u tiles)", what, M, N, K,
                 tiles);
        return 0;
    }
    npk_ref_matmul_s8s32(M, N, K, A, K, B, N, C, N, relu, 0);
    npk_v0_note_route(v, NPK_V0_ROUTE_CPU, "%s %ux%ux%u: CAPS.gemmini_present=0 -> CPU reference (%s)", what, M, N, K,
             npk_v0_route_e1(v) ? "too large for e1 GEMM tiles" : "no e1 device attached");
    return 0;
}

static int matmul_impl(npk_v0 *v, uint32_t M, uint32_t N, uint32_t K, const int8_t *A, const int8_t *B, int32_t *C,
                  int relu) {
    if (!M || !N || !K) return npk_err(NPK_EINVAL, "v0 matmul: zero dimension (%ux%ux%u)", M, N, K);
    if (!gemmini(v)) return routed_matmul(v, "matmul", M, N, K, A, B, C, relu);
    const uint32_t T = NPK_V0_MAX_MATMUL;
    uint32_t sa = align16(K), sb = align16(N), sc = align16(4ull * N);
    uint32_t nk = (K + T - 1) / T;
    /* Balanced splits (docs/v0.md, "Driver behaviour"): as few chunks per
     * dimension as the envelope allows, of equal size rounded up to the 16
     * of the array (K = 1100: 560 + 540, not 1024 + 76), so no short
     * descriptor leaves its loads and stores exposed. */
    const uint32_t TM = balanced(M, T), TN = balanced(N, T), TK = balanced(K, T);
    int dev_relu = relu && nk == 1; /* with a split K the sum (then ReLU) is finished on the host */
    gbuf ga = {0}, gb = {0}, *gc = calloc(nk, sizeof *gc);
    npk_v0_desc *ds = NULL;
    int rc = gc ? 0 : npk_err(NPK_ENOMEM, "out of memory");
    /* A, B and the first K slice's C in place where the staged layout is the
     * caller's own (K, N multiples of 16 and 4) and the port can map them;
     * staged copies otherwise */
    if (!rc && sa == K) gmap(v, &ga, A, M, sa);
    if (!rc && sb == N) gmap(v, &gb, B, K, sb);
    if (!rc && sc == 4ull * N) gmap(v, &gc[0], C, M, sc);
    if (!rc && !ga.live) rc = galloc(v, &ga, (uint64_t)M * sa);
    if (!rc && !gb.live) rc = galloc(v, &gb, (uint64_t)K * sb);
    for (uint32_t q = 0; !rc && q < nk; q++)
        if (!gc[q].live) rc = galloc(v, &gc[q], (uint64_t)M * sc);
    if (!rc && !ga.mapped) rc = npk_v0_put_rows(npk_v0_port(v), ga.addr, sa, M, K, A);
    if (!rc && !gb.mapped) rc = npk_v0_put_rows(npk_v0_port(v), gb.addr, sb, K, N, B);
    size_t nd = (size_t)((M + TM - 1) / TM) * ((N + TN - 1) / TN) * nk, n = 0;
    if (!rc && !(ds = malloc(nd * sizeof *ds))) rc = npk_err(NPK_ENOMEM, "out of memory");
    for (uint32_t i0 = 0; !rc && i0 < M; i0 += TM)
        for (uint32_t j0 = 0; j0 < N; j0 += TN)
            for (uint32_t q = 0; q < nk; q++) {
                uint32_t k0 = q * TK;
                uint32_t m = M - i0 < TM ? M - i0 : TM, nn = N - j0 < TN ? N - j0 : TN, k = K - k0 < TK ? K - k0 : TK;
                ds[n] = npk_v0_desc_matmul(dev_relu, NPK_V0_F_SIGNED, m, nn, k, ga.addr + (uint64_t)i0 * sa + k0, sa,
                                           gb.addr + (uint64_t)k0 * sb + j0, sb,
                                           gc[q].addr + (uint64_t)i0 * sc + 4ull * j0, sc, (uint32_t)n);
                n++;
            }
    if (!rc) rc = npk_v0_run(v, ds, (unsigned)n);
    uint8_t *row = NULL;
    if (!rc && !(row = malloc((size_t)N * 4))) rc = npk_err(NPK_ENOMEM, "out of memory");
    /* zero copy on the in-process port: read the int32 slices in place
     * (little-endian host; the guest layout is little-endian) */
    const uint16_t one = 1;
    int direct = !rc && *(const uint8_t *)&one == 1;
    for (uint32_t q = 0; direct && q < nk; q++)
        if (!npk_port_direct(npk_v0_port(v), gc[q].addr, (uint64_t)(M - 1) * sc + 4ull * N)) direct = 0;
    for (uint32_t q = 0; direct && q < nk; q++) {
        const uint8_t *cq = npk_port_direct(npk_v0_port(v), gc[q].addr, (uint64_t)(M - 1) * sc + 4ull * N);
        for (uint32_t i = 0; i < M; i++) {
            uint32_t *crow = (uint32_t *)&C[(size_t)i * N];
            if (!q) {
                if (!gc[0].mapped) memcpy(crow, cq + (uint64_t)i * sc, (size_t)N * 4);
            } else {
                const uint8_t *src = cq + (uint64_t)i * sc;
                for (uint32_t j = 0; j < N; j++) {
                    uint32_t x;
                    memcpy(&x, src + 4 * j, 4);
                    crow[j] += x;
                }
            }
        }
    }
    if (direct && relu && !dev_relu)
        for (size_t i = 0; i < (size_t)M * N; i++) C[i] = C[i] < 0 ? 0 : C[i];
    for (uint32_t i = 0; !rc && !direct && i < M; i++) {
        for (uint32_t q = 0; !rc && q < nk; q++) {
            rc = npk_port_mem_read(npk_v0_port(v), gc[q].addr + (uint64_t)i * sc, row, (size_t)N * 4);
            for (uint32_t j = 0; !rc && j < N; j++) {
                uint32_t x = row[4 * j] | (uint32_t)row[4 * j + 1] << 8 | (uint32_t)row[4 * j + 2] << 16 |
                             (uint32_t)row[4 * j + 3] << 24;
                uint32_t *c = (uint32_t *)&C[(size_t)i * N + j];
                *c = q ? *c + x : x;
            }
        }
        if (relu && !dev_relu)
            for (uint32_t j = 0; j < N; j++) C[(size_t)i * N + j] = C[(size_t)i * N + j] < 0 ? 0 : C[(size_t)i * N + j];
    }
    if (!rc)
        npk_v0_note_route(v, NPK_V0_ROUTE_DEVICE, "matmul %ux%ux%u: v0 array, %zu MATMUL_S8 descriptor(s); A %s, B %s, C %s",
                          M, N, K, n, ga.mapped ? "in place" : "staged", gb.mapped ? "in place" : "staged",
                          gc[0].mapped ? "in place" : "staged");
    free(row);
    free(ds);
    gfree(v, &ga);
    gfree(v, &gb);
    for (uint32_t q = 0; gc && q < nk; q++) gfree(v, &gc[q]);
    free(gc);
    return rc;
}

int npk_v0_matmul(npk_v0 *v, uint32_t M, uint32_t N, uint32_t K, const int8_t *A, const int8_t *B, int32_t *C,
                  int relu) {
    npk_job j;
    npk_job_begin(&j, npk_v0_port(v), "ops", "matmul");
    npk_job_args(&j, "\"M\":%u,\"N\":%u,\"K\":%u,\"macs\":%" PRIu64, M, N, K, (uint64_t)M * N * K);
    return npk_job_end(&j, matmul_impl(v, M, N, K, A, B, C, relu));
}

static int conv_encodable(const npk_v0_conv *c) {
    if (c->h > 0xFFFF || c->w > 0xFFFF || c->cin > 0xFFFF || c->ksize > 0xFF || c->stride_h > 15 ||
        c->stride_w > 15 || c->pad_h > 15 || c->pad_w > 15 || c->dil > 15)
        return npk_err(NPK_EINVAL, "v0 conv2d: parameters do not fit the descriptor fields (H, W, C_in <= 65535, "
                                   "kernel <= 255, stride/pad/dilation <= 15)");
    return 0;
}

/* im2col of one image: col[OH*OW][k*k*cin] (zero padding). */
static int8_t *im2col(const npk_v0_conv *c, const int8_t *in, uint32_t oh, uint32_t ow) {
    uint64_t kk = (uint64_t)c->ksize * c->ksize * c->cin;
    int8_t *col = malloc((uint64_t)oh * ow * kk);
    if (!col) return NULL;
    for (uint32_t y = 0; y < oh; y++)
        for (uint32_t x = 0; x < ow; x++) {
            int8_t *dst = col + ((uint64_t)y * ow + x) * kk;
            for (uint32_t ky = 0; ky < c->ksize; ky++)
                for (uint32_t kx = 0; kx < c->ksize; kx++, dst += c->cin) {
                    int64_t iy = (int64_t)y * c->stride_h + (int64_t)ky * c->dil - c->pad_h;
                    int64_t ix = (int64_t)x * c->stride_w + (int64_t)kx * c->dil - c->pad_w;
                    if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) memset(dst, 0, c->cin);
                    else memcpy(dst, in + ((uint64_t)iy * c->w + ix) * c->cin, c->cin);
                }
        }
    return col;
}

int npk_v0_conv2d_s32(npk_v0 *v, const npk_v0_conv *c, const int8_t *in, const int8_t *wt, int32_t *out) {
    uint32_t oh, ow;
    int rc = npk_v0_conv_out(c, &oh, &ow);
    if (rc) return npk_err_prefix(-rc, "v0 conv2d_s32");
    int8_t *col = im2col(c, in, oh, ow);
    if (!col) return npk_err(NPK_ENOMEM, "out of memory");
    rc = npk_v0_matmul(v, oh * ow, c->cout, c->ksize * c->ksize * c->cin, col, wt, out, 0);
    free(col);
    return rc;
}

static int conv2d_impl(npk_v0 *v, const npk_v0_conv *c, const int8_t *in, const int8_t *wt, int8_t *out, int relu) {
    uint32_t oh, ow;
    int rc = npk_v0_conv_out(c, &oh, &ow);
    if (rc) return npk_err_prefix(-rc, "v0 conv2d");
    uint64_t kk = (uint64_t)c->ksize * c->ksize * c->cin;
    if (!gemmini(v)) {
        int32_t *acc = malloc((uint64_t)oh * ow * c->cout * sizeof *acc);
        if (!acc) return npk_err(NPK_ENOMEM, "out of memory");
        if (npk_v0_route_e1(v) && (uint64_t)oh * ow * c->cout * kk <= E1_ROUTE_MAX_MACS) {
            int8_t *col = im2col(c, in, oh, ow);
            rc = col ? routed_matmul(v, "conv2d (im2col)", oh * ow, c->cout, (uint32_t)kk, col, wt, acc, 0)
                     : npk_err(NPK_ENOMEM, "out of memory");
            free(col);
        } else {
            npk_ref_conv rcv = {c->h, c->w, c->cin, c->cout, c->ksize, c->ksize, c->stride_h, c->stride_w,
                                c->pad_h, c->pad_w, c->dil};
            npk_ref_conv2d_s32(&rcv, in, (size_t)c->w * c->cin, wt, c->cout, acc, (size_t)ow * c->cout, 0);
            npk_v0_note_route(v, NPK_V0_ROUTE_CPU, "conv2d %ux%ux%u->%u k%u: CAPS.gemmini_present=0 -> CPU reference (%s)",
                     c->h, c->w, c->cin, c->cout, c->ksize, npk_v0_route_e1(v) ? "too large for e1 GEMM tiles" : "no e1 device attached");
        }
        for (uint64_t i = 0; !rc && i < (uint64_t)oh * ow * c->cout; i++) {
            int8_t s = npk_ref_sat8(acc[i]);
            out[i] = relu && s < 0 ? 0 : s;
        }
        free(acc);
        return rc;
    }
    if ((rc = conv_encodable(c))) return rc;
    uint32_t sa = align16((uint64_t)c->w * c->cin), sb = align16(c->cout), sc = align16((uint64_t)ow * c->cout);
    gbuf gi = {0}, gw = {0}, go = {0};
    rc = galloc(v, &gi, (uint64_t)c->h * sa);
    if (!rc) rc = galloc(v, &gw, kk * sb);
    if (!rc) rc = galloc(v, &go, (uint64_t)oh * sc);
    if (!rc) rc = npk_v0_put_rows(npk_v0_port(v), gi.addr, sa, c->h, (uint64_t)c->w * c->cin, in);
    if (!rc) rc = npk_v0_put_rows(npk_v0_port(v), gw.addr, sb, kk, c->cout, wt);
    if (!rc) {
        npk_v0_desc d = npk_v0_desc_conv(relu, NPK_V0_F_SIGNED, c, gi.addr, sa, gw.addr, sb, go.addr, sc, 0);
        uint64_t fb0 = npk_v0_get_stats(v)->retired_cpu;
        rc = npk_v0_run(v, &d, 1);
        if (!rc)
            npk_v0_note_route(v, NPK_V0_ROUTE_DEVICE, "conv2d %ux%ux%u->%u k%u: %s", c->h, c->w, c->cin, c->cout, c->ksize,
                     npk_v0_get_stats(v)->retired_cpu > fb0 ? "outside the v0 envelope -> unsupported_op -> CPU fallback handler"
                                                : "v0 array, 1 CONV2D_S8 descriptor");
    }
    if (!rc) rc = npk_v0_get_rows(npk_v0_port(v), go.addr, sc, oh, (uint64_t)ow * c->cout, out);
    gfree(v, &gi);
    gfree(v, &gw);
    gfree(v, &go);
    return rc;
}

int npk_v0_conv2d(npk_v0 *v, const npk_v0_conv *c, const int8_t *in, const int8_t *wt, int8_t *out, int relu) {
    npk_job j;
    npk_job_begin(&j, npk_v0_port(v), "ops", "conv2d");
    npk_job_args(&j, "\"h\":%u,\"w\":%u,\"cin\":%u,\"cout\":%u,\"ksize\":%u", c->h, c->w, c->cin, c->cout,
                 c->ksize);
    return npk_job_end(&j, conv2d_impl(v, c, in, wt, out, relu));
}

int npk_v0_relu(npk_v0 *v, const int8_t *in, int8_t *out, size_t n) {
    if (!n) return 0;
    if (!gemmini(v)) {
        if (npk_v0_route_e1(v)) {
            for (size_t i = 0; i < n; i += 63) {
                unsigned len = n - i < 63 ? (unsigned)(n - i) : 63; /* VRELU takes 1..63 bytes */
                int rc = npk_e1_relu(npk_v0_route_e1(v), in + i, out + i, len);
                if (rc) return npk_err_prefix(-rc, "v0 route to e1: relu at %zu", i);
            }
            npk_v0_note_route(v, NPK_V0_ROUTE_E1, "relu %zu: CAPS.gemmini_present=0 -> e1 VRELU_S8 (legacy datapath)", n);
            return 0;
        }
        for (size_t i = 0; i < n; i += NPK_V0_MAX_RELU) {
            uint32_t len = (uint32_t)(n - i < NPK_V0_MAX_RELU ? n - i : NPK_V0_MAX_RELU);
            npk_ref_relu_s8(1, len, in + i, len, out + i, len, 0);
        }
        npk_v0_note_route(v, NPK_V0_ROUTE_CPU, "relu %zu: CAPS.gemmini_present=0 -> CPU reference (no e1 device attached)", n);
        return 0;
    }
    const size_t W = NPK_V0_MAX_RELU;
    size_t rows = n / W, rem = n % W;
    gbuf g = {0};
    int rc = galloc(v, &g, (n + 15) & ~(size_t)15);
    if (!rc) rc = npk_port_mem_write(npk_v0_port(v), g.addr, in, n);
    npk_v0_desc ds[64];
    unsigned nd = 0;
    for (size_t r = 0; !rc && r < rows; r += W) {
        uint32_t m = (uint32_t)(rows - r < W ? rows - r : W);
        uint64_t a = g.addr + r * W;
        ds[nd] = npk_v0_desc_relu(NPK_V0_F_SIGNED, m, (uint32_t)W, a, (uint32_t)W, a, (uint32_t)W, nd);
        nd++;
        if (nd == 64) rc = npk_v0_run(v, ds, nd), nd = 0;
    }
    if (!rc && rem) {
        uint64_t a = g.addr + rows * W;
        ds[nd] = npk_v0_desc_relu(NPK_V0_F_SIGNED, 1, (uint32_t)rem, a, align16(rem), a, align16(rem), nd);
        nd++;
    }
    if (!rc && nd) rc = npk_v0_run(v, ds, nd);
    if (!rc) rc = npk_port_mem_read(npk_v0_port(v), g.addr, out, n);
    if (!rc) npk_v0_note_route(v, NPK_V0_ROUTE_DEVICE, "relu %zu: v0 RELU descriptor(s)", n);
    gfree(v, &g);
    return rc;
}

int npk_v0_maxpool(npk_v0 *v, const npk_v0_pool *p, const int8_t *in, int8_t *out, int relu) {
    uint32_t oh, ow;
    int rc = npk_v0_pool_out(p, &oh, &ow);
    if (rc) return npk_err_prefix(-rc, "v0 maxpool");
    if (!gemmini(v)) {
        npk_ref_pool rp = {p->h, p->w, p->c, p->win_h, p->win_w, p->stride, p->pad};
        npk_ref_maxpool_s8(&rp, in, (size_t)p->w * p->c, out, (size_t)ow * p->c, relu, 0);
        npk_v0_note_route(v, NPK_V0_ROUTE_CPU, "maxpool %ux%ux%u: CAPS.gemmini_present=0 -> CPU reference (e1 has no signed int8 max)", p->h, p->w,
                 p->c);
        return 0;
    }
    if (p->h > 0xFFFF || p->w > 0xFFFF || p->win_h > 15 || p->win_w > 15 || p->stride > 15 || p->pad > 15)
        return npk_err(NPK_EINVAL, "v0 maxpool: parameters do not fit the descriptor fields");
    uint32_t sa = align16((uint64_t)p->w * p->c), sc = align16((uint64_t)ow * p->c);
    gbuf gi = {0}, go = {0};
    rc = galloc(v, &gi, (uint64_t)p->h * sa);
    if (!rc) rc = galloc(v, &go, (uint64_t)oh * sc);
    if (!rc) rc = npk_v0_put_rows(npk_v0_port(v), gi.addr, sa, p->h, (uint64_t)p->w * p->c, in);
    if (!rc) {
        npk_v0_desc d = npk_v0_desc_maxpool(NPK_V0_F_SIGNED | (relu ? NPK_V0_F_RELU : 0), p, gi.addr, sa, go.addr, sc, 0);
        uint64_t fb0 = npk_v0_get_stats(v)->retired_cpu;
        rc = npk_v0_run(v, &d, 1);
        if (!rc)
            npk_v0_note_route(v, NPK_V0_ROUTE_DEVICE, "maxpool %ux%ux%u: %s", p->h, p->w, p->c,
                     npk_v0_get_stats(v)->retired_cpu > fb0 ? "outside the v0 envelope -> unsupported_op -> CPU fallback handler"
                                                : "v0 array, 1 MAXPOOL_S8 descriptor");
    }
    if (!rc) rc = npk_v0_get_rows(npk_v0_port(v), go.addr, sc, oh, (uint64_t)ow * p->c, out);
    gfree(v, &gi);
    gfree(v, &go);
    return rc;
}

