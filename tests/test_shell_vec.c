// SPDX-License-Identifier: MIT
/* VEC_OP (all 16 op codes and RMSNorm, int8/fp16/bf16/fp8) and SOFTMAX on the
 * shell device against the CPU reference, plus worked values computed by hand
 * (or from the reference RTL's own test: four zero logits give 0x20 each). */
#include "ops/ref_float.h"
#include "test_shell_util.h"

#include <math.h>

static npk_shell *SH;

static void rand_vals(int dt, uint8_t *p, size_t n, int positive) {
    for (size_t i = 0; i < n; i++) {
        double v = ((double)(rnd() % 2001) - (positive ? 0 : 1000.0)) / 250.0;
        if (dt == SHELL_INT8) p[i] = (uint8_t)(positive ? rnd() % 128 : rnd());
        else if (dt == SHELL_FP16) le16(p + 2 * i, npk_fp16_from_f64(v));
        else if (dt == SHELL_BF16) le16(p + 2 * i, npk_bf16_from_f64(v));
        else p[i] = npk_fp8_from_f64(v);
    }
}

static int vec_case(int op, int dt, size_t count, unsigned row) {
    unsigned es = npk_ref_dtype_size(dt);
    size_t bytes = count * es;
    uint8_t *x = malloc(bytes), *y = malloc(bytes), *got = malloc(bytes), *want = malloc(bytes);
    rand_vals(dt, x, count, op == 8);
    rand_vals(dt, y, count, 0);
    memcpy(got, y, bytes);
    unsigned code = op == 16 ? 0 : (unsigned)op;
    uint32_t ext = SHELL_VEC_EXT(op == 16 ? SHELL_VEC_EXT_RMSNORM : 0, row);
    int rc = npk_shell_vec(SH, code, (unsigned)dt, ext, x, got, (uint32_t)bytes);
    CHECK_EQ(rc, 0);
    if (rc) fprintf(stderr, "%s\n", npk_errmsg());
    npk_ref_vec(op, dt, x, y, want, count, row);
    int same = !memcmp(got, want, bytes);
    CHECK(same);
    if (!same) fprintf(stderr, "vec op %d dtype %d count %zu row %u differs\n", op, dt, count, row);
    free(x);
    free(y);
    free(got);
    free(want);
    return same;
}

int main(void) {
    npk_port *p = open_shell(NULL);
    CHECK_EQ(npk_shell_open(&SH, p, NULL), 0);

    /* worked values */
    {
        uint8_t x[4] = {100, 0x80, 16, 0xf0}, y[4] = {100, 0x80, 32, 16};
        CHECK_EQ(npk_shell_vec(SH, SHELL_VEC_ADD, SHELL_INT8, 0, x, y, 4), 0); /* saturating */
        CHECK_EQ((int8_t)y[0], 127);
        CHECK_EQ((int8_t)y[1], -128);
        CHECK_EQ((int8_t)y[2], 48);
        CHECK_EQ((int8_t)y[3], 0);
        uint8_t m1[2] = {32, 0xe0}, m2[2] = {24, 24}; /* Q3.4: 2.0*1.5 = 3.0 (48), -2.0*1.5 = -3.0 */
        CHECK_EQ(npk_shell_vec(SH, SHELL_VEC_MUL, SHELL_INT8, 0, m1, m2, 2), 0);
        CHECK_EQ((int8_t)m2[0], 48);
        CHECK_EQ((int8_t)m2[1], -48);
        uint8_t s[3] = {0, 0x80, 127}, so[3];
        CHECK_EQ(npk_shell_vec(SH, SHELL_VEC_SIGMOID, SHELL_INT8, 0, s, so, 3), 0);
        CHECK_EQ(so[0], 8); /* 0.5 in Q3.4 */
        CHECK_EQ(so[1], 0); /* sigmoid(-8) = 0.000335 -> 0 */
        CHECK_EQ(so[2], 16);
        uint8_t r6[2] = {127, 0xc0}, r6o[2];
        CHECK_EQ(npk_shell_vec(SH, SHELL_VEC_RELU6, SHELL_INT8, 0, r6, r6o, 2), 0);
        CHECK_EQ(r6o[0], 96);
        CHECK_EQ(r6o[1], 0);
        uint8_t h[4], ho[4];
        le16(h, 0xbc00), le16(h + 2, 0x4000); /* relu(-1, 2) */
        CHECK_EQ(npk_shell_vec(SH, SHELL_VEC_RELU, SHELL_FP16, 0, h, ho, 4), 0);
        CHECK_EQ(ho[0] | ho[1] << 8, 0x0000);
        CHECK_EQ(ho[2] | ho[3] << 8, 0x4000);
        le16(h, 0x3c00), le16(h + 2, 0x3800); /* gelu(1) = 0.8413 -> 0x3abb; tanh(0.5) = 0.4621 -> 0x3765 */
        CHECK_EQ(npk_shell_vec(SH, SHELL_VEC_GELU, SHELL_FP16, 0, h, ho, 2), 0);
        CHECK_EQ(ho[0] | ho[1] << 8, 0x3abb);
        CHECK_EQ(npk_shell_vec(SH, SHELL_VEC_TANH, SHELL_FP16, 0, h + 2, ho, 2), 0);
        CHECK_EQ(ho[0] | ho[1] << 8, 0x3765);
        le16(h, 0x3f80); /* bf16 sigmoid(1) = 0.7311 -> 0x3f3b */
        CHECK_EQ(npk_shell_vec(SH, SHELL_VEC_SIGMOID, SHELL_BF16, 0, h, ho, 2), 0);
        CHECK_EQ(ho[0] | ho[1] << 8, 0x3f3b);
        /* RMSNorm of (3, 4) (fp16): rms = sqrt(12.5) -> (0.8485, 1.1314) */
        le16(h, 0x4200), le16(h + 2, 0x4400);
        CHECK_EQ(npk_shell_vec(SH, 0, SHELL_FP16, SHELL_VEC_EXT(SHELL_VEC_EXT_RMSNORM, 0), h, ho, 4), 0);
        CHECK_EQ(ho[0] | ho[1] << 8, npk_fp16_from_f64(3.0 / sqrt(12.5 + 1e-5)));
        CHECK_EQ(ho[2] | ho[3] << 8, npk_fp16_from_f64(4.0 / sqrt(12.5 + 1e-5)));
    }
    /* SOFTMAX worked values */
    {
        uint8_t z[8] = {0, 0, 0, 0, 0, 1, 2, 3}, o[8];
        CHECK_EQ(npk_shell_softmax(SH, SHELL_INT8, z, o, 4, 2), 0);
        for (int i = 0; i < 4; i++) CHECK_EQ(o[i], 0x20);
        CHECK_EQ(o[4], 4);
        CHECK_EQ(o[5], 11);
        CHECK_EQ(o[6], 30);
        CHECK_EQ(o[7], 82);
        uint8_t hz[4], ho[4];
        le16(hz, 0x0000), le16(hz + 2, 0x3c00); /* softmax(0, 1) = (0.2689, 0.7311) */
        CHECK_EQ(npk_shell_softmax(SH, SHELL_FP16, hz, ho, 4, 1), 0);
        CHECK_EQ(ho[0] | ho[1] << 8, 0x344e);
        CHECK_EQ(ho[2] | ho[3] << 8, 0x39d9);
        /* non-finite rules: a NaN row, a +inf row */
        uint8_t nz[8], no[8];
        le16(nz, 0x7e00), le16(nz + 2, 0x0000), le16(nz + 4, 0x7c00), le16(nz + 6, 0x3c00);
        CHECK_EQ(npk_shell_softmax(SH, SHELL_FP16, nz, no, 4, 2), 0);
        CHECK(((no[0] | no[1] << 8) & 0x7c00) == 0x7c00 && ((no[0] | no[1] << 8) & 0x3ff));
        CHECK_EQ(no[4] | no[5] << 8, 0x3c00);
        CHECK_EQ(no[6] | no[7] << 8, 0x0000);
    }
    /* every op and dtype against the reference */
    for (int dt = 0; dt < 4; dt++)
        for (int op = 0; op <= 16; op++) {
            vec_case(op, dt, 37, 0);
            if (op == 4 || op == 5 || op == 8 || op == 9 || op == 16) vec_case(op, dt, 48, 12);
        }
    /* SOFTMAX opcode every dtype */
    for (int dt = 0; dt < 4; dt++) {
        unsigned es = npk_ref_dtype_size(dt);
        uint8_t x[5 * 7 * 2], got[5 * 7 * 2], want[5 * 7 * 2];
        rand_vals(dt, x, 35, 0);
        CHECK_EQ(npk_shell_softmax(SH, (unsigned)dt, x, got, (uint16_t)(7 * es), 5), 0);
        npk_ref_softmax(dt, x, want, 5, 7);
        CHECK(!memcmp(got, want, 35 * es));
    }
    npk_shell_close(SH);
    npk_port_close(p);
    return CHECK_DONE();
}
