// SPDX-License-Identifier: MIT
/* The v0 CPU executor: the host half of the device's unsupported_op contract
 * (docs/v0.md). It executes one descriptor on the CPU reference ops against
 * guest memory through the port; the driver's fallback handler calls it
 * through npk_v0_config.cpu_exec, so the driver knows no golden op. */
#include "npukit/v0_drv.h"
#include "ops/ref.h"
#include "rt/v0_ops.h"

#include <stdlib.h>

#define CPU_MAX_BYTES (1ull << 30)

int npk_v0_cpu_execute(npk_port *p, const npk_v0_desc *d) {
    uint32_t op = npk_v0_desc_op(d), fl = npk_v0_desc_flags(d);
    int uns = !(fl & NPK_V0_F_SIGNED), relu = (fl & NPK_V0_F_RELU) != 0;
    uint64_t a = npk_v0_desc_addr(d, NPK_V0_W_A_LO), b = npk_v0_desc_addr(d, NPK_V0_W_B_LO),
             c = npk_v0_desc_addr(d, NPK_V0_W_C_LO);
    uint64_t sa = d->w[NPK_V0_W_A_STRIDE], sb = d->w[NPK_V0_W_B_STRIDE], sc = d->w[NPK_V0_W_C_STRIDE];
    int rc = 0;
    switch (op) {
    case NPK_V0_OP_NOP:
    case NPK_V0_OP_BARRIER:
    case NPK_V0_OP_FALLBACK:
        return 0;
    case NPK_V0_OP_MATMUL_S8:
    case NPK_V0_OP_MATMUL_S8_RELU: {
        uint64_t M = d->w[NPK_V0_W_SHAPE_M], N = d->w[NPK_V0_W_SHAPE_N], K = d->w[NPK_V0_W_SHAPE_K];
        if (!M || !N || !K) return npk_err(NPK_EINVAL, "CPU fallback: matmul %llux%llux%llu has a zero dimension",
                                           (unsigned long long)M, (unsigned long long)N, (unsigned long long)K);
        if (M * K > CPU_MAX_BYTES || K * N > CPU_MAX_BYTES || M * N * 4 > CPU_MAX_BYTES)
            return npk_err(NPK_EUNSUPPORTED, "CPU fallback: matmul %llux%llux%llu is too large",
                           (unsigned long long)M, (unsigned long long)N, (unsigned long long)K);
        int8_t *A = malloc(M * K), *B = malloc(K * N);
        int32_t *C = malloc(M * N * 4);
        uint8_t *le = malloc(M * N * 4);
        if (!A || !B || !C || !le) rc = npk_err(NPK_ENOMEM, "CPU fallback: out of memory");
        if (!rc) rc = npk_v0_get_rows(p, a, sa, M, K, A);
        if (!rc) rc = npk_v0_get_rows(p, b, sb, K, N, B);
        if (!rc) {
            npk_ref_matmul_s8s32((uint32_t)M, (uint32_t)N, (uint32_t)K, A, K, B, N, C, N,
                                 relu || op == NPK_V0_OP_MATMUL_S8_RELU, uns);
            for (uint64_t i = 0; i < M * N; i++)
                for (int q = 0; q < 4; q++) le[4 * i + q] = (uint8_t)((uint32_t)C[i] >> (8 * q));
            rc = npk_v0_put_rows(p, c, sc, M, N * 4, le);
        }
        free(A), free(B), free(C), free(le);
        return rc;
    }
    case NPK_V0_OP_CONV2D_S8:
    case NPK_V0_OP_CONV2D_S8_RELU: {
        npk_v0_conv cv;
        uint32_t oh, ow;
        npk_v0_desc_get_conv(d, &cv);
        if (npk_v0_conv_out(&cv, &oh, &ow)) return npk_err_prefix(NPK_EINVAL, "CPU fallback");
        uint64_t kk = (uint64_t)cv.ksize * cv.ksize * cv.cin;
        uint64_t inb = (uint64_t)cv.h * cv.w * cv.cin, wb = kk * cv.cout, ob = (uint64_t)oh * ow * cv.cout;
        if (inb > CPU_MAX_BYTES || wb > CPU_MAX_BYTES || ob > CPU_MAX_BYTES)
            return npk_err(NPK_EUNSUPPORTED, "CPU fallback: convolution is too large");
        int8_t *in = malloc(inb), *wt = malloc(wb), *o = malloc(ob);
        if (!in || !wt || !o) rc = npk_err(NPK_ENOMEM, "CPU fallback: out of memory");
        if (!rc) rc = npk_v0_get_rows(p, a, sa, cv.h, (uint64_t)cv.w * cv.cin, in);
        if (!rc) rc = npk_v0_get_rows(p, b, sb, kk, cv.cout, wt);
        if (!rc) {
            npk_ref_conv rcv = {cv.h, cv.w, cv.cin, cv.cout, cv.ksize, cv.ksize, cv.stride_h, cv.stride_w,
                                cv.pad_h, cv.pad_w, cv.dil};
            npk_ref_conv2d_s8(&rcv, in, (size_t)cv.w * cv.cin, wt, cv.cout, o, (size_t)ow * cv.cout,
                              relu || op == NPK_V0_OP_CONV2D_S8_RELU, uns);
            rc = npk_v0_put_rows(p, c, sc, oh, (uint64_t)ow * cv.cout, o);
        }
        free(in), free(wt), free(o);
        return rc;
    }
    case NPK_V0_OP_RELU: {
        uint64_t M = d->w[NPK_V0_W_SHAPE_M], N = d->w[NPK_V0_W_SHAPE_N];
        if (!M || !N) return npk_err(NPK_EINVAL, "CPU fallback: relu with a zero dimension");
        if (M * N > CPU_MAX_BYTES) return npk_err(NPK_EUNSUPPORTED, "CPU fallback: relu is too large");
        int8_t *buf = malloc(M * N);
        if (!buf) return npk_err(NPK_ENOMEM, "CPU fallback: out of memory");
        rc = npk_v0_get_rows(p, a, sa, M, N, buf);
        if (!rc) {
            npk_ref_relu_s8((uint32_t)M, (uint32_t)N, buf, N, buf, N, uns);
            rc = npk_v0_put_rows(p, c, sc, M, N, buf);
        }
        free(buf);
        return rc;
    }
    case NPK_V0_OP_MAXPOOL_S8: {
        npk_v0_pool pp;
        uint32_t oh, ow;
        npk_v0_desc_get_pool(d, &pp);
        if (npk_v0_pool_out(&pp, &oh, &ow)) return npk_err_prefix(NPK_EINVAL, "CPU fallback");
        uint64_t inb = (uint64_t)pp.h * pp.w * pp.c, ob = (uint64_t)oh * ow * pp.c;
        if (inb > CPU_MAX_BYTES) return npk_err(NPK_EUNSUPPORTED, "CPU fallback: max pool is too large");
        int8_t *in = malloc(inb), *o = malloc(ob);
        if (!in || !o) rc = npk_err(NPK_ENOMEM, "CPU fallback: out of memory");
        if (!rc) rc = npk_v0_get_rows(p, a, sa, pp.h, (uint64_t)pp.w * pp.c, in);
        if (!rc) {
            npk_ref_pool rp = {pp.h, pp.w, pp.c, pp.win_h, pp.win_w, pp.stride, pp.pad};
            npk_ref_maxpool_s8(&rp, in, (size_t)pp.w * pp.c, o, (size_t)ow * pp.c, relu, uns);
            rc = npk_v0_put_rows(p, c, sc, oh, (uint64_t)ow * pp.c, o);
        }
        free(in), free(o);
        return rc;
    }
    default:
        return npk_err(NPK_EUNSUPPORTED, "CPU fallback: unknown opcode 0x%x: neither the device nor the CPU can run it",
                       op);
    }
}
