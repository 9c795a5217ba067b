// SPDX-License-Identifier: MIT
/* The v0 model's functional datapath: DMA in, compute with the fast kernels
 * (Gemmini numerics), DMA out. Written independently of src/ops/ref_int8.c,
 * which the tests use as the reference. */
#include "sim/v0_internal.h"

#include "npukit/range.h"

#include <stdlib.h>
#include <string.h>

#define REQ 64 /* DMA request size */

/* rows x rowbytes from guest (base, stride) into a packed host buffer. */
static npk_bus_resp dma_in(npk_mem *m, uint64_t base, uint64_t stride, uint64_t rows, uint64_t rowbytes, void *dst,
                           uint64_t *fault) {
    uint8_t *p = dst;
    for (uint64_t r = 0; r < rows; r++) {
        npk_bus_resp rc = npk_bus_copy_in(m, base + r * stride, p + r * rowbytes, rowbytes, REQ, NULL, fault, NULL);
        if (rc != NPK_BUS_OK) return rc;
    }
    return NPK_BUS_OK;
}

static npk_bus_resp dma_out(npk_mem *m, uint64_t base, uint64_t stride, uint64_t rows, uint64_t rowbytes,
                            const void *src, uint64_t *fault) {
    const uint8_t *p = src;
    for (uint64_t r = 0; r < rows; r++) {
        npk_bus_resp rc = npk_bus_copy_out(m, base + r * stride, p + r * rowbytes, rowbytes, REQ, NULL, fault, NULL);
        if (rc != NPK_BUS_OK) return rc;
    }
    return NPK_BUS_OK;
}

static int8_t sat(int32_t v, int relu) {
    if (v > 127) v = 127;
    if (v < -128) v = -128;
    if (relu && v < 0) v = 0;
    return (int8_t)v;
}

static npk_bus_resp oom(uint64_t *fault) {
    *fault = 0;
    return NPK_BUS_ERROR;
}

static int host_le(void) {
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* Zero copy (issue 15 point 3): when A, B and C each lie in one host-backed
 * extent of guest memory (in-process port) and C overlaps neither, the
 * kernel reads the operands and writes int32 C (little-endian host) in
 * place; the DMA beats are accounted as the copy path's. Returns 1 when done. */
static int matmul_direct(npk_mem *m, npk_gemm_ws *ws, const npk_v0_desc *d, int relu, uint64_t M, uint64_t N,
                         uint64_t K, int *oom_out) {
    uint64_t a = npk_v0_desc_addr(d, NPK_V0_W_A_LO), b = npk_v0_desc_addr(d, NPK_V0_W_B_LO),
             c = npk_v0_desc_addr(d, NPK_V0_W_C_LO);
    uint64_t sa = d->w[NPK_V0_W_A_STRIDE], sb = d->w[NPK_V0_W_B_STRIDE], sc = d->w[NPK_V0_W_C_STRIDE];
    uint64_t ea, eb, ec; /* last bytes */
    if (!npk_range2d_ok(a, M, sa, K, &ea) || !npk_range2d_ok(b, K, sb, N, &eb) || !npk_range2d_ok(c, M, sc, 4 * N, &ec))
        return 0; /* the copy path reports it */
    ea++, eb++, ec++;
    if (!ea || !eb || !ec) return 0; /* ends at 2^64: no extent reaches there in practice */
    if (!host_le() || sc % 4 || (c < ea && a < ec) || (c < eb && b < ec)) return 0;
    if (!npk_mem_direct(m, a, ea - a) || !npk_mem_direct(m, b, eb - b) || !npk_mem_direct(m, c, ec - c)) return 0;
    const int8_t *A = npk_bus_direct(m, NPK_ACC_READ, a, sa, M, K, REQ);
    const int8_t *B = npk_bus_direct(m, NPK_ACC_READ, b, sb, K, N, REQ);
    int32_t *C = npk_bus_direct(m, NPK_ACC_WRITE, c, sc, M, N * 4, REQ);
    if (!A || !B || !C || ((uintptr_t)C & 3)) return 0; /* (not reached: checked above) */
    if (npk_gemm_s8s32(ws, (uint32_t)M, (uint32_t)N, (uint32_t)K, A, (uint32_t)sa, B, (uint32_t)sb, C, (uint32_t)(sc / 4))) {
        *oom_out = 1;
        return 1;
    }
    if (relu)
        for (uint64_t i = 0; i < M; i++)
            for (uint64_t j = 0; j < N; j++) C[i * (sc / 4) + j] = C[i * (sc / 4) + j] < 0 ? 0 : C[i * (sc / 4) + j];
    return 1;
}

static npk_bus_resp exec_matmul(npk_mem *m, npk_gemm_ws *ws, const npk_v0_desc *d, int relu, int tonly,
                                uint64_t *fault) {
    uint64_t M = d->w[NPK_V0_W_SHAPE_M], N = d->w[NPK_V0_W_SHAPE_N], K = d->w[NPK_V0_W_SHAPE_K];
    int direct_oom = 0;
    if (!tonly && matmul_direct(m, ws, d, relu, M, N, K, &direct_oom)) return direct_oom ? oom(fault) : NPK_BUS_OK;
    int8_t *A = malloc(M * K), *B = malloc(K * N);
    int32_t *C = malloc(M * N * sizeof *C);
    npk_bus_resp rc;
    if (!A || !B || !C) {
        rc = oom(fault);
        goto out;
    }
    rc = dma_in(m, npk_v0_desc_addr(d, NPK_V0_W_A_LO), d->w[NPK_V0_W_A_STRIDE], M, K, A, fault);
    if (rc == NPK_BUS_OK) rc = dma_in(m, npk_v0_desc_addr(d, NPK_V0_W_B_LO), d->w[NPK_V0_W_B_STRIDE], K, N, B, fault);
    if (rc != NPK_BUS_OK) goto out;
    if (tonly) {
        memset(C, 0, M * N * sizeof *C);
        goto write;
    }
    if (npk_gemm_s8s32(ws, (uint32_t)M, (uint32_t)N, (uint32_t)K, A, K, B, N, C, N)) {
        rc = oom(fault);
        goto out;
    }
    if (relu)
        for (uint64_t i = 0; i < M * N; i++) C[i] = C[i] < 0 ? 0 : C[i];
    /* int32 little-endian in guest memory: the host is little-endian x86/arm64;
     * convert explicitly to stay correct elsewhere */
    {
        uint8_t *le = (uint8_t *)C;
        for (uint64_t i = 0; i < M * N; i++) {
            uint32_t v = (uint32_t)C[i];
            le[4 * i] = (uint8_t)v, le[4 * i + 1] = (uint8_t)(v >> 8), le[4 * i + 2] = (uint8_t)(v >> 16),
            le[4 * i + 3] = (uint8_t)(v >> 24);
        }
    }
write:
    rc = dma_out(m, npk_v0_desc_addr(d, NPK_V0_W_C_LO), d->w[NPK_V0_W_C_STRIDE], M, N * 4, C, fault);
out:
    free(A);
    free(B);
    free(C);
    return rc;
}

static npk_bus_resp exec_conv(npk_mem *m, npk_gemm_ws *ws, const npk_v0_desc *d, int relu, int tonly,
                              uint64_t *fault) {
    npk_v0_conv c;
    uint32_t oh, ow;
    npk_v0_desc_get_conv(d, &c);
    npk_v0_conv_out(&c, &oh, &ow);
    uint64_t kk = (uint64_t)c.ksize * c.ksize * c.cin, P = (uint64_t)oh * ow;
    uint64_t rowb = (uint64_t)c.w * c.cin;
    int8_t *in = malloc((uint64_t)c.h * rowb), *wt = malloc(kk * c.cout), *col = malloc(P * kk);
    int32_t *acc = malloc(P * c.cout * sizeof *acc);
    int8_t *out = malloc(P * c.cout);
    npk_bus_resp rc;
    if (!in || !wt || !col || !acc || !out) {
        rc = oom(fault);
        goto done;
    }
    rc = dma_in(m, npk_v0_desc_addr(d, NPK_V0_W_A_LO), d->w[NPK_V0_W_A_STRIDE], c.h, rowb, in, fault);
    if (rc == NPK_BUS_OK)
        rc = dma_in(m, npk_v0_desc_addr(d, NPK_V0_W_B_LO), d->w[NPK_V0_W_B_STRIDE], kk, c.cout, wt, fault);
    if (rc != NPK_BUS_OK) goto done;
    if (tonly) {
        memset(out, 0, P * c.cout);
        goto write;
    }
    /* im2col: row p = output pixel, columns (ky, kx, ci) as the HWIO weight rows */
    for (uint32_t y = 0; y < oh; y++)
        for (uint32_t x = 0; x < ow; x++) {
            int8_t *dst = col + ((uint64_t)y * ow + x) * kk;
            for (uint32_t ky = 0; ky < c.ksize; ky++) {
                int64_t iy = (int64_t)y * c.stride_h + (int64_t)ky * c.dil - c.pad_h;
                for (uint32_t kx = 0; kx < c.ksize; kx++, dst += c.cin) {
                    int64_t ix = (int64_t)x * c.stride_w + (int64_t)kx * c.dil - c.pad_w;
                    if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w)
                        memset(dst, 0, c.cin);
                    else
                        memcpy(dst, in + (uint64_t)iy * rowb + (uint64_t)ix * c.cin, c.cin);
                }
            }
        }
    if (npk_gemm_s8s32(ws, (uint32_t)P, c.cout, (uint32_t)kk, col, kk, wt, c.cout, acc, c.cout)) {
        rc = oom(fault);
        goto done;
    }
    for (uint64_t i = 0; i < P * c.cout; i++) out[i] = sat(acc[i], relu);
write:
    rc = dma_out(m, npk_v0_desc_addr(d, NPK_V0_W_C_LO), d->w[NPK_V0_W_C_STRIDE], oh, (uint64_t)ow * c.cout, out, fault);
done:
    free(in);
    free(wt);
    free(col);
    free(acc);
    free(out);
    return rc;
}

static npk_bus_resp exec_relu(npk_mem *m, const npk_v0_desc *d, int tonly, uint64_t *fault) {
    uint64_t M = d->w[NPK_V0_W_SHAPE_M], N = d->w[NPK_V0_W_SHAPE_N];
    int8_t *buf = malloc(M * N);
    if (!buf) return oom(fault);
    npk_bus_resp rc = dma_in(m, npk_v0_desc_addr(d, NPK_V0_W_A_LO), d->w[NPK_V0_W_A_STRIDE], M, N, buf, fault);
    if (rc == NPK_BUS_OK) {
        if (tonly) memset(buf, 0, M * N);
        else
            for (uint64_t i = 0; i < M * N; i++) buf[i] = buf[i] & (int8_t)~(buf[i] >> 7); /* negative -> 0 */
        rc = dma_out(m, npk_v0_desc_addr(d, NPK_V0_W_C_LO), d->w[NPK_V0_W_C_STRIDE], M, N, buf, fault);
    }
    free(buf);
    return rc;
}

static npk_bus_resp exec_pool(npk_mem *m, const npk_v0_desc *d, int relu, int tonly, uint64_t *fault) {
    npk_v0_pool p;
    uint32_t oh, ow;
    npk_v0_desc_get_pool(d, &p);
    npk_v0_pool_out(&p, &oh, &ow);
    uint64_t rowb = (uint64_t)p.w * p.c, orow = (uint64_t)ow * p.c;
    int8_t *in = malloc((uint64_t)p.h * rowb), *out = malloc((uint64_t)oh * orow);
    npk_bus_resp rc;
    if (!in || !out) {
        rc = oom(fault);
        goto done;
    }
    rc = dma_in(m, npk_v0_desc_addr(d, NPK_V0_W_A_LO), d->w[NPK_V0_W_A_STRIDE], p.h, rowb, in, fault);
    if (rc != NPK_BUS_OK) goto done;
    if (tonly) memset(out, 0, (uint64_t)oh * orow);
    for (uint32_t y = 0; y < oh && !tonly; y++)
        for (uint32_t x = 0; x < ow; x++) {
            int8_t *o = out + (uint64_t)y * orow + (uint64_t)x * p.c;
            int padded = 0;
            for (uint32_t ch = 0; ch < p.c; ch++) o[ch] = -128;
            for (uint32_t wy = 0; wy < p.win_h; wy++)
                for (uint32_t wx = 0; wx < p.win_w; wx++) {
                    int64_t iy = (int64_t)y * p.stride + wy - p.pad, ix = (int64_t)x * p.stride + wx - p.pad;
                    if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) {
                        padded = 1;
                        continue;
                    }
                    const int8_t *s = in + (uint64_t)iy * rowb + (uint64_t)ix * p.c;
                    for (uint32_t ch = 0; ch < p.c; ch++) o[ch] = s[ch] > o[ch] ? s[ch] : o[ch];
                }
            for (uint32_t ch = 0; ch < p.c; ch++) {
                if (padded && o[ch] < 0) o[ch] = 0; /* a padded position contributes 0 */
                if (relu && o[ch] < 0) o[ch] = 0;
            }
        }
    rc = dma_out(m, npk_v0_desc_addr(d, NPK_V0_W_C_LO), d->w[NPK_V0_W_C_STRIDE], oh, orow, out, fault);
done:
    free(in);
    free(out);
    return rc;
}

npk_bus_resp npk_v0_exec(npk_mem *mem, npk_gemm_ws *ws, const npk_v0_desc *d, int tonly, uint64_t *fault) {
    uint32_t op = npk_v0_desc_op(d);
    int relu = (npk_v0_desc_flags(d) & NPK_V0_F_RELU) != 0;
    switch (op) {
    case NPK_V0_OP_MATMUL_S8: return exec_matmul(mem, ws, d, relu, tonly, fault);
    case NPK_V0_OP_MATMUL_S8_RELU: return exec_matmul(mem, ws, d, 1, tonly, fault);
    case NPK_V0_OP_CONV2D_S8: return exec_conv(mem, ws, d, relu, tonly, fault);
    case NPK_V0_OP_CONV2D_S8_RELU: return exec_conv(mem, ws, d, 1, tonly, fault);
    case NPK_V0_OP_RELU: return exec_relu(mem, d, tonly, fault);
    case NPK_V0_OP_MAXPOOL_S8: return exec_pool(mem, d, relu, tonly, fault);
    default: return NPK_BUS_OK;
    }
}
