// SPDX-License-Identifier: MIT
/* The shell driver's high-level operations against independent references:
 * int8 GEMM, int8 conv2d (host im2col + column-major GEMM) against a direct
 * convolution loop, waits on the IRQ line, and the same work over
 * `npu qtest --device shell` (qtest-spawn port) when that port is available. */
#include "ops/ref_float.h"
#include "test_shell_util.h"

static void conv_ref(const npk_shell_conv2d *p, const int8_t *x, const int8_t *w, const int32_t *b, int32_t *y,
                     uint32_t oh, uint32_t ow) {
    uint32_t sh = p->stride_h ? p->stride_h : 1, sw = p->stride_w ? p->stride_w : 1;
    uint32_t dh = p->dil_h ? p->dil_h : 1, dw = p->dil_w ? p->dil_w : 1;
    for (uint32_t n = 0; n < p->n; n++)
        for (uint32_t o = 0; o < p->oc; o++)
            for (uint32_t r = 0; r < oh; r++)
                for (uint32_t c = 0; c < ow; c++) {
                    int32_t acc = b ? b[o] : 0;
                    for (uint32_t i = 0; i < p->c; i++)
                        for (uint32_t ky = 0; ky < p->kh; ky++)
                            for (uint32_t kx = 0; kx < p->kw; kx++) {
                                int iy = (int)(r * sh + ky * dh) - (int)p->pad_t, ix = (int)(c * sw + kx * dw) - (int)p->pad_l;
                                if (iy < 0 || ix < 0 || iy >= (int)p->h || ix >= (int)p->w) continue;
                                acc += x[((n * p->c + i) * p->h + (uint32_t)iy) * p->w + (uint32_t)ix] *
                                       w[((o * p->c + i) * p->kh + ky) * p->kw + kx];
                            }
                    y[((n * p->oc + o) * oh + r) * ow + c] = acc;
                }
}

static void exercise(npk_port *port, int use_irq, int big) {
    npk_shell *sh;
    npk_shell_opts o = {0};
    o.use_irq = use_irq;
    o.ring_bytes = 128; /* small: forces wraps */
    CHECK_EQ(npk_shell_open(&sh, port, &o), 0);
    /* GEMM */
    uint32_t m = big ? 37 : 5, n = big ? 29 : 3, k = big ? 61 : 7;
    int8_t *a = malloc(m * k), *b = malloc(k * n);
    int32_t *c = malloc(4 * m * n), *r = malloc(4 * m * n), *bias = malloc(4 * n);
    fill_rand(a, m * k);
    fill_rand(b, k * n);
    for (uint32_t j = 0; j < n; j++) bias[j] = (int32_t)(rnd() % 1000) - 500;
    CHECK_EQ(npk_shell_gemm_i8(sh, m, n, k, a, b, bias, c), 0);
    npk_ref_gemm_i8(m, n, k, a, b, bias, r);
    CHECK(!memcmp(c, r, 4 * m * n));
    free(a), free(b), free(c), free(r), free(bias);
    /* conv2d: stride 2, padding, dilation */
    npk_shell_conv2d p = {2, 3, 9, 8, 4, 3, 3, 2, 1, 1, 2, 1, 0, 1, 2};
    uint32_t oh = (p.h + p.pad_t + p.pad_b - p.dil_h * (p.kh - 1) - 1) / p.stride_h + 1;
    uint32_t ow = (p.w + p.pad_l + p.pad_r - p.dil_w * (p.kw - 1) - 1) / p.stride_w + 1;
    size_t xs = p.n * p.c * p.h * p.w, ws = p.oc * p.c * p.kh * p.kw, ys = p.n * p.oc * oh * ow;
    int8_t *x = malloc(xs), *w = malloc(ws);
    int32_t *y = malloc(4 * ys), *yr = malloc(4 * ys), cb[4] = {1, -2, 3, -4};
    fill_rand(x, xs);
    fill_rand(w, ws);
    int rc = npk_shell_conv2d_i8(sh, &p, x, w, cb, y);
    CHECK_EQ(rc, 0);
    if (rc) fprintf(stderr, "%s\n", npk_errmsg());
    conv_ref(&p, x, w, cb, yr, oh, ow);
    CHECK(!memcmp(y, yr, 4 * ys));
    free(x), free(w), free(y), free(yr);
    /* event IRQ wait */
    uint8_t d[64];
    npk_shell_enc_event(d, SHELL_OP_EVENT_SIGNAL, 4, 1);
    npk_shell_enc_event(d + 32, SHELL_OP_EVENT_WAIT, 4, 0);
    CHECK_EQ(npk_shell_push_stream(sh, d, 64), 0);
    CHECK_EQ(npk_shell_kick(sh), 0);
    uint32_t got = 0;
    CHECK_EQ(npk_shell_wait_irq(sh, SHELL_IRQ_EVENT, 100000, &got), 0);
    CHECK_EQ(got, SHELL_IRQ_EVENT);
    CHECK_EQ(npk_shell_wait(sh, 100000), 0);
    /* a bad argument is refused before the device sees it */
    CHECK_EQ(npk_shell_push(sh, d, 40), -NPK_EINVAL);
    /* reset leaves a usable device */
    CHECK_EQ(npk_shell_reset(sh), 0);
    int8_t a1[1] = {3}, b1[1] = {-5};
    int32_t c1 = 0;
    CHECK_EQ(npk_shell_gemm_i8(sh, 1, 1, 1, a1, b1, NULL, &c1), 0);
    CHECK_EQ(c1, -15);
    npk_shell_close(sh);
}

int main(void) {
    npk_port *p = open_shell(NULL);
    exercise(p, 0, 1);
    exercise(p, 1, 1);
    npk_port_close(p);
    /* wrong device */
    npk_port *e1 = NULL;
    if (!npk_port_open(&e1, "sim", "e1", NULL)) {
        npk_shell *sh;
        CHECK_EQ(npk_shell_open(&sh, e1, NULL), -NPK_EINVAL);
        npk_port_close(e1);
    }
    /* over the qtest protocol with a spawned `npu qtest --device shell` */
    npk_port *q = NULL;
    int rc = npk_port_open(&q, "qtest-spawn:" NPU_BIN, "shell", NULL);
    if (rc == -NPK_EUNSUPPORTED) {
        fprintf(stderr, "qtest port not available in this build: %s\n", npk_errmsg());
    } else {
        CHECK_EQ(rc, 0);
        if (!rc) {
            CHECK_STR(npk_port_kind(q), "qtest");
            exercise(q, 0, 0);
            exercise(q, 1, 0);
            npk_port_close(q);
        } else {
            fprintf(stderr, "qtest-spawn: %s\n", npk_errmsg());
        }
    }
    return CHECK_DONE();
}
