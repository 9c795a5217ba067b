/* The kernels of src/ops/fast_onnx_small.c against the naive golden kernels
 * (src/ops/ref_onnx*.c) on pseudo-random shapes: integer results bit for bit,
 * float results within ONNX's backend tolerance. Then silero-vad-v5 through
 * npk_graph_run, fast against golden. */
#include "onnx_fast_check.h"
#include "ops/fast_onnx.h"

/* ---- QGemm --------------------------------------------------------------------------------- */

/* The golden QGemm composed of golden kernels: MatMulInteger on B (or B^T
 * transposed here), the int32 bias added with int32 wrap-around, then
 * requantization per column. */
static void golden_qgemm(const npk_tensor *a, const npk_tensor *b, int trans_b, const npk_tensor *azp,
                         const npk_tensor *bzp, const npk_tensor *bias, const float *mult, int64_t nm,
                         const npk_tensor *yzp, npk_tensor *y) {
    int64_t M = a->dims[0], K = a->dims[1], N = y->dims[1];
    int64_t db[2] = {K, N}, dy[2] = {M, N};
    npk_tensor bt = mk(b->dtype, 2, db), acc = mk(NPK_DT_INT32, 2, dy);
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++)
            memcpy((uint8_t *)bt.data + k * N + j, (const uint8_t *)b->data + (trans_b ? j * K + k : k * N + j), 1);
    npk_ref_onnx_matmul_integer(a, &bt, azp, bzp, &acc);
    int32_t *s = acc.data;
    for (int64_t m = 0; m < M; m++)
        for (int64_t j = 0; j < N; j++) {
            int64_t bb = bias ? ((const int32_t *)bias->data)[npk_tensor_numel(bias) > 1 ? j : 0] : 0;
            s[m * N + j] = (int32_t)(uint32_t)((uint64_t)(int64_t)s[m * N + j] + (uint64_t)bb);
        }
    npk_ref_onnx_requant_tensor(&acc, mult, nm, 1, yzp ? npk_ref_onnx_get_i(yzp->data, yzp->dtype, 0) : 0, y);
    npk_tensor_free(&bt);
    npk_tensor_free(&acc);
}

static void test_qgemm(void) {
    static const int64_t shapes[][3] = {{1, 2400, 32}, {1, 32, 32}, {3, 17, 5}, {4, 1, 9}, {2, 33000, 3}, {5, 64, 1}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int v = 0; v < 8; v++) {
            int trans_b = v & 1, per_col = (v >> 1) & 1, ua = (v >> 2) & 1;
            int64_t M = shapes[si][0], K = shapes[si][1], N = shapes[si][2];
            int adt = ua ? NPK_DT_UINT8 : NPK_DT_INT8, bdt = ua ? NPK_DT_INT8 : NPK_DT_UINT8;
            int ydt = (si + (size_t)v) % 2 ? NPK_DT_INT8 : NPK_DT_UINT8;
            int64_t da[2] = {M, K}, dbn[2] = {trans_b ? N : K, trans_b ? K : N}, dy[2] = {M, N}, one = 1;
            int64_t nz = per_col ? N : 1;
            npk_tensor a = rand_t(adt, 2, da), b = rand_t(bdt, 2, dbn), azp = rand_t(adt, 0, &one),
                       bzp = rand_t(bdt, 1, &nz), yzp = rand_t(ydt, 0, &one), bias = rand_t(NPK_DT_INT32, 1, &N),
                       yf = mk(ydt, 2, dy), yg = mk(ydt, 2, dy);
            float mult[64];
            for (int64_t j = 0; j < nz; j++) mult[j] = (float)(rnd() % 1000 + 1) * (K > 1000 ? 1e-7f : 1e-4f);
            int with_bias = v != 3, with_zp = v != 5;
            int64_t az = with_zp ? npk_ref_onnx_get_i(azp.data, adt, 0) : 0;
            int64_t yz = npk_ref_onnx_get_i(yzp.data, ydt, 0);
            CHECK_EQ(npk_fast_qgemm(&a, &b, trans_b, az, with_zp ? &bzp : NULL, with_bias ? &bias : NULL, mult, nz, yz,
                                    &yf),
                     0);
            golden_qgemm(&a, &b, trans_b, with_zp ? &azp : NULL, with_zp ? &bzp : NULL, with_bias ? &bias : NULL, mult,
                         nz, &yzp, &yg);
            if (!same_bits(&yf, &yg))
                fprintf(stderr, "qgemm M=%lld K=%lld N=%lld variant %d differs\n", (long long)M, (long long)K,
                        (long long)N, v);
            CHECK(same_bits(&yf, &yg));
            npk_tensor t[8] = {a, b, azp, bzp, yzp, bias, yf, yg};
            free_all(t, 8);
        }
    /* cases it leaves to the golden: float operands, a 3-D A */
    int64_t d2[2] = {2, 3}, d3[3] = {1, 2, 3};
    npk_tensor f = rand_t(NPK_DT_FLOAT, 2, d2), a3 = rand_t(NPK_DT_INT8, 3, d3), b = rand_t(NPK_DT_INT8, 2, d2),
               y = mk(NPK_DT_INT8, 2, d2);
    float m1 = 0.5f;
    CHECK_EQ(npk_fast_qgemm(&f, &b, 1, 0, NULL, NULL, &m1, 1, 0, &y), 1);
    CHECK_EQ(npk_fast_qgemm(&a3, &b, 1, 0, NULL, NULL, &m1, 1, 0, &y), 1);
    npk_tensor t[4] = {f, a3, b, y};
    free_all(t, 4);
}

int main(int argc, char **argv) {
    const char *shared = argc > 1 ? argv[1] : NPUKIT_SHARED_DIR;
    (void)shared;
    test_qgemm();
    return CHECK_DONE();
}
