// SPDX-License-Identifier: MIT
/* v0 descriptors, the device ABI (include/npukit/v0_regs.h): packing,
 * builders, conv/pool geometry, the device's validation rules and MAC counts.
 * One encoding shared by the model (src/sim/v0.c), the driver, the assembler,
 * the lowerings (src/ops) and the ONNX backend (src/graph/dev_v0.c). The
 * timing model is the model's: src/sim/v0_timing.c. */
#include "npukit/error.h"
#include "npukit/v0_regs.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *npk_v0_err_text(uint32_t code) {
    switch (code) {
    case 0: return "no error";
    case NPK_V0_ERR_OPCODE: return "unknown opcode";
    case NPK_V0_ERR_SHAPE: return "shape out of range";
    case NPK_V0_ERR_FLAGS: return "unsupported flag combination";
    case NPK_V0_ERR_ALIGN: return "misaligned base or stride";
    case NPK_V0_ERR_WINDOW: return "tensor outside TENSOR_MEM window";
    case NPK_V0_ERR_BUS: return "bus response error";
    case NPK_V0_ERR_OVERFLOW: return "queue overflow";
    case NPK_V0_ERR_FALLBACK: return "CPU fallback requested (OP = FALLBACK)";
    default: return "unknown error code";
    }
}

const char *npk_v0_op_name(uint32_t op) {
    switch (op) {
    case NPK_V0_OP_NOP: return "nop";
    case NPK_V0_OP_MATMUL_S8: return "matmul_s8";
    case NPK_V0_OP_MATMUL_S8_RELU: return "matmul_s8_relu";
    case NPK_V0_OP_CONV2D_S8: return "conv2d_s8";
    case NPK_V0_OP_CONV2D_S8_RELU: return "conv2d_s8_relu";
    case NPK_V0_OP_RELU: return "relu";
    case NPK_V0_OP_MAXPOOL_S8: return "maxpool_s8";
    case NPK_V0_OP_BARRIER: return "barrier";
    case NPK_V0_OP_FALLBACK: return "fallback";
    default: return NULL;
    }
}

void npk_v0_desc_pack(const npk_v0_desc *d, uint8_t out[64]) {
    for (int i = 0; i < 16; i++)
        for (int b = 0; b < 4; b++) out[i * 4 + b] = (uint8_t)(d->w[i] >> (8 * b));
}

void npk_v0_desc_unpack(const uint8_t in[64], npk_v0_desc *d) {
    for (int i = 0; i < 16; i++)
        d->w[i] = in[i * 4] | (uint32_t)in[i * 4 + 1] << 8 | (uint32_t)in[i * 4 + 2] << 16 |
                  (uint32_t)in[i * 4 + 3] << 24;
}

npk_v0_desc npk_v0_desc_simple(uint32_t op, uint32_t flags, uint32_t tag) {
    npk_v0_desc d;
    memset(&d, 0, sizeof d);
    d.w[0] = (op & 0xFFFFu) | flags << 16;
    d.w[NPK_V0_W_TAG] = tag;
    return d;
}

/* One operand of a descriptor: its address (two words from lo_word) and its row stride. */
static void desc_operand(npk_v0_desc *d, int lo_word, int stride_word, uint64_t addr, uint32_t stride) {
    npk_v0_desc_set_addr(d, lo_word, addr);
    d->w[stride_word] = stride;
}

npk_v0_desc npk_v0_desc_matmul(int relu, uint32_t flags, uint32_t m, uint32_t n, uint32_t k, uint64_t a,
                               uint32_t sa, uint64_t b, uint32_t sb, uint64_t c, uint32_t sc, uint32_t tag) {
    npk_v0_desc d = npk_v0_desc_simple(relu ? NPK_V0_OP_MATMUL_S8_RELU : NPK_V0_OP_MATMUL_S8, flags, tag);
    d.w[NPK_V0_W_SHAPE_M] = m;
    d.w[NPK_V0_W_SHAPE_N] = n;
    d.w[NPK_V0_W_SHAPE_K] = k;
    desc_operand(&d, NPK_V0_W_A_LO, NPK_V0_W_A_STRIDE, a, sa);
    desc_operand(&d, NPK_V0_W_B_LO, NPK_V0_W_B_STRIDE, b, sb);
    desc_operand(&d, NPK_V0_W_C_LO, NPK_V0_W_C_STRIDE, c, sc);
    return d;
}

int npk_v0_conv_out(const npk_v0_conv *c, uint32_t *oh, uint32_t *ow) {
    *oh = *ow = 0;
    if (!c->h || !c->w || !c->cin || !c->cout || !c->ksize || !c->stride_h || !c->stride_w || !c->dil)
        return npk_err(NPK_EINVAL, "convolution with a zero dimension, kernel, stride or dilation");
    uint64_t eh = (uint64_t)c->dil * (c->ksize - 1) + 1;
    uint64_t ph = (uint64_t)c->h + 2ull * c->pad_h, pw = (uint64_t)c->w + 2ull * c->pad_w;
    if (ph < eh || pw < eh)
        return npk_err(NPK_EINVAL, "convolution output is empty: input %ux%u (padded %llux%llu) is smaller than the "
                                   "dilated kernel %llu",
                       c->h, c->w, (unsigned long long)ph, (unsigned long long)pw, (unsigned long long)eh);
    *oh = (uint32_t)((ph - eh) / c->stride_h + 1);
    *ow = (uint32_t)((pw - eh) / c->stride_w + 1);
    return 0;
}

npk_v0_desc npk_v0_desc_conv(int relu, uint32_t flags, const npk_v0_conv *c, uint64_t in, uint32_t in_stride,
                             uint64_t wt, uint32_t wt_stride, uint64_t out, uint32_t out_stride, uint32_t tag) {
    npk_v0_desc d = npk_v0_desc_simple(relu ? NPK_V0_OP_CONV2D_S8_RELU : NPK_V0_OP_CONV2D_S8, flags, tag);
    d.w[NPK_V0_W_SHAPE_M] = (c->h & 0xFFFFu) | (c->w & 0xFFFFu) << 16;
    d.w[NPK_V0_W_SHAPE_N] = c->cout;
    d.w[NPK_V0_W_SHAPE_K] = (c->ksize & 0xFFu) | (c->cin & 0xFFFFu) << 16;
    desc_operand(&d, NPK_V0_W_A_LO, NPK_V0_W_A_STRIDE, in, in_stride);
    desc_operand(&d, NPK_V0_W_B_LO, NPK_V0_W_B_STRIDE, wt, wt_stride);
    desc_operand(&d, NPK_V0_W_C_LO, NPK_V0_W_C_STRIDE, out, out_stride);
    d.w[NPK_V0_W_CONV] = npk_v0_conv_params(c->stride_h, c->stride_w, c->pad_h, c->pad_w, c->dil);
    return d;
}

npk_v0_desc npk_v0_desc_relu(uint32_t flags, uint32_t m, uint32_t n, uint64_t a, uint32_t sa, uint64_t c,
                             uint32_t sc, uint32_t tag) {
    npk_v0_desc d = npk_v0_desc_simple(NPK_V0_OP_RELU, flags, tag);
    d.w[NPK_V0_W_SHAPE_M] = m;
    d.w[NPK_V0_W_SHAPE_N] = n;
    desc_operand(&d, NPK_V0_W_A_LO, NPK_V0_W_A_STRIDE, a, sa);
    desc_operand(&d, NPK_V0_W_C_LO, NPK_V0_W_C_STRIDE, c, sc);
    return d;
}

int npk_v0_pool_out(const npk_v0_pool *p, uint32_t *oh, uint32_t *ow) {
    *oh = *ow = 0;
    if (!p->h || !p->w || !p->c || !p->win_h || !p->win_w || !p->stride)
        return npk_err(NPK_EINVAL, "max pool with a zero dimension, window or stride");
    uint64_t ph = (uint64_t)p->h + 2ull * p->pad, pw = (uint64_t)p->w + 2ull * p->pad;
    if (ph < p->win_h || pw < p->win_w)
        return npk_err(NPK_EINVAL, "max pool output is empty: input %ux%u is smaller than the %ux%u window", p->h,
                       p->w, p->win_h, p->win_w);
    *oh = (uint32_t)((ph - p->win_h) / p->stride + 1);
    *ow = (uint32_t)((pw - p->win_w) / p->stride + 1);
    return 0;
}

npk_v0_desc npk_v0_desc_maxpool(uint32_t flags, const npk_v0_pool *p, uint64_t in, uint32_t in_stride,
                                uint64_t out, uint32_t out_stride, uint32_t tag) {
    npk_v0_desc d = npk_v0_desc_simple(NPK_V0_OP_MAXPOOL_S8, flags, tag);
    d.w[NPK_V0_W_SHAPE_M] = (p->h & 0xFFFFu) | (p->w & 0xFFFFu) << 16;
    d.w[NPK_V0_W_SHAPE_N] = p->c;
    desc_operand(&d, NPK_V0_W_A_LO, NPK_V0_W_A_STRIDE, in, in_stride);
    desc_operand(&d, NPK_V0_W_C_LO, NPK_V0_W_C_STRIDE, out, out_stride);
    d.w[NPK_V0_W_POOL] = npk_v0_pool_params(p->win_h, p->win_w, p->stride, p->pad);
    return d;
}

void npk_v0_desc_get_conv(const npk_v0_desc *d, npk_v0_conv *c) {
    uint32_t cp = d->w[NPK_V0_W_CONV];
    c->h = d->w[NPK_V0_W_SHAPE_M] & 0xFFFFu;
    c->w = d->w[NPK_V0_W_SHAPE_M] >> 16;
    c->cout = d->w[NPK_V0_W_SHAPE_N];
    c->ksize = d->w[NPK_V0_W_SHAPE_K] & 0xFFu;
    c->cin = d->w[NPK_V0_W_SHAPE_K] >> 16;
    c->stride_h = cp & 15u;
    c->stride_w = (cp >> 4) & 15u;
    c->pad_h = (cp >> 8) & 15u;
    c->pad_w = (cp >> 12) & 15u;
    c->dil = (cp >> 16) & 15u;
}

void npk_v0_desc_get_pool(const npk_v0_desc *d, npk_v0_pool *p) {
    uint32_t pp = d->w[NPK_V0_W_POOL];
    p->h = d->w[NPK_V0_W_SHAPE_M] & 0xFFFFu;
    p->w = d->w[NPK_V0_W_SHAPE_M] >> 16;
    p->c = d->w[NPK_V0_W_SHAPE_N];
    p->win_h = pp & 15u;
    p->win_w = (pp >> 4) & 15u;
    p->stride = (pp >> 8) & 15u;
    p->pad = (pp >> 12) & 15u;
}

/* ---- validation ---- */

static uint32_t fail(uint32_t code, char *why, size_t n, const char *fmt, ...) {
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return code;
}

static int is_compute(uint32_t op) {
    return op == NPK_V0_OP_MATMUL_S8 || op == NPK_V0_OP_MATMUL_S8_RELU || op == NPK_V0_OP_CONV2D_S8 ||
           op == NPK_V0_OP_CONV2D_S8_RELU || op == NPK_V0_OP_RELU || op == NPK_V0_OP_MAXPOOL_S8;
}

uint32_t npk_v0_validate(const npk_v0_desc *d, uint32_t caps, char *why, size_t wn) {
    uint32_t op = npk_v0_desc_op(d), fl = npk_v0_desc_flags(d);
    const char *name = npk_v0_op_name(op);
    if (!name) return fail(NPK_V0_ERR_OPCODE, why, wn, "unknown opcode 0x%x", op);
    if (is_compute(op) && !(caps & NPK_V0_CAPS_GEMMINI))
        return fail(NPK_V0_ERR_OPCODE, why, wn, "%s needs the Gemmini engine and CAPS.gemmini_present is 0", name);
    if (fl & ~NPK_V0_F_KNOWN) return fail(NPK_V0_ERR_FLAGS, why, wn, "reserved FLAGS bits 0x%x set", fl & ~NPK_V0_F_KNOWN);
    if (!is_compute(op) && (fl & NPK_V0_F_RELU))
        return fail(NPK_V0_ERR_FLAGS, why, wn, "relu_fuse on %s, which has no data", name);
    if (is_compute(op) && !(fl & NPK_V0_F_SIGNED))
        return fail(NPK_V0_ERR_FLAGS, why, wn, "%s without signed_input: the array computes on signed int8 only",
                    name);
    if (op == NPK_V0_OP_FALLBACK) return fail(NPK_V0_ERR_FALLBACK, why, wn, "FALLBACK descriptor (forced CPU path)");
    if (!is_compute(op)) return 0;

    uint32_t m = d->w[NPK_V0_W_SHAPE_M], n = d->w[NPK_V0_W_SHAPE_N], k = d->w[NPK_V0_W_SHAPE_K];
    uint32_t sa = d->w[NPK_V0_W_A_STRIDE], sb = d->w[NPK_V0_W_B_STRIDE], sc = d->w[NPK_V0_W_C_STRIDE];
    int uses_b = 0;
    switch (op) {
    case NPK_V0_OP_MATMUL_S8:
    case NPK_V0_OP_MATMUL_S8_RELU:
        uses_b = 1;
        if (!m || !n || !k || m > NPK_V0_MAX_MATMUL || n > NPK_V0_MAX_MATMUL || k > NPK_V0_MAX_MATMUL)
            return fail(NPK_V0_ERR_SHAPE, why, wn, "matmul %ux%ux%u outside 1..%u", m, n, k, NPK_V0_MAX_MATMUL);
        if (sa < k || sb < n || (uint64_t)sc < 4ull * n)
            return fail(NPK_V0_ERR_SHAPE, why, wn, "a stride is shorter than its row (A %u < %u, B %u < %u or C %u < %u)",
                        sa, k, sb, n, sc, 4 * n);
        break;
    case NPK_V0_OP_CONV2D_S8:
    case NPK_V0_OP_CONV2D_S8_RELU: {
        uses_b = 1;
        npk_v0_conv c;
        npk_v0_desc_get_conv(d, &c);
        if (!c.h || !c.w || c.h > NPK_V0_MAX_HW || c.w > NPK_V0_MAX_HW)
            return fail(NPK_V0_ERR_SHAPE, why, wn, "conv input %ux%u outside 1..%u", c.h, c.w, NPK_V0_MAX_HW);
        if (!c.cin || !c.cout || c.cin > NPK_V0_MAX_CH || c.cout > NPK_V0_MAX_CH)
            return fail(NPK_V0_ERR_SHAPE, why, wn, "conv channels in %u / out %u outside 1..%u", c.cin, c.cout,
                        NPK_V0_MAX_CH);
        if (k & 0xFF00u) return fail(NPK_V0_ERR_SHAPE, why, wn, "SHAPE_K bits [15:8] are reserved (0x%x)", k);
        if (c.ksize != 1 && c.ksize != 3 && c.ksize != 5)
            return fail(NPK_V0_ERR_SHAPE, why, wn, "conv kernel %ux%u (v0: 1x1, 3x3, 5x5)", c.ksize, c.ksize);
        if ((c.stride_h != 1 && c.stride_h != 2) || (c.stride_w != 1 && c.stride_w != 2))
            return fail(NPK_V0_ERR_SHAPE, why, wn, "conv stride %ux%u (v0: 1 or 2)", c.stride_h, c.stride_w);
        if (!c.dil) return fail(NPK_V0_ERR_SHAPE, why, wn, "conv dilation 0");
        if (d->w[NPK_V0_W_CONV] >> 20)
            return fail(NPK_V0_ERR_SHAPE, why, wn, "CONV_PARAMS bits [31:20] are reserved (0x%x)", d->w[NPK_V0_W_CONV]);
        uint32_t oh, ow;
        if (npk_v0_conv_out(&c, &oh, &ow))
            return fail(NPK_V0_ERR_SHAPE, why, wn, "conv output is empty (input %ux%u, kernel %u, dilation %u)", c.h,
                        c.w, c.ksize, c.dil);
        if (sa < c.w * c.cin || sb < c.cout || sc < ow * c.cout)
            return fail(NPK_V0_ERR_SHAPE, why, wn, "a stride is shorter than its row (in %u < %u, wt %u < %u or out %u < %u)",
                        sa, c.w * c.cin, sb, c.cout, sc, ow * c.cout);
        break;
    }
    case NPK_V0_OP_RELU:
        if (!m || !n || m > NPK_V0_MAX_RELU || n > NPK_V0_MAX_RELU)
            return fail(NPK_V0_ERR_SHAPE, why, wn, "relu %ux%u outside 1..%u", m, n, NPK_V0_MAX_RELU);
        if (sa < n || sc < n) return fail(NPK_V0_ERR_SHAPE, why, wn, "relu stride shorter than the row (%u, %u < %u)", sa, sc, n);
        break;
    case NPK_V0_OP_MAXPOOL_S8: {
        npk_v0_pool p;
        npk_v0_desc_get_pool(d, &p);
        if (!p.h || !p.w || p.h > NPK_V0_MAX_HW || p.w > NPK_V0_MAX_HW)
            return fail(NPK_V0_ERR_SHAPE, why, wn, "pool input %ux%u outside 1..%u", p.h, p.w, NPK_V0_MAX_HW);
        if (!p.c || p.c > NPK_V0_MAX_CH)
            return fail(NPK_V0_ERR_SHAPE, why, wn, "pool channels %u outside 1..%u", p.c, NPK_V0_MAX_CH);
        /* envelope "Pool window | 2x2 or 3x3": square only (Gemmini's pooling
         * has one pool_size); 2x3 / 3x2 are outside */
        if ((p.win_h != 2 && p.win_h != 3) || p.win_w != p.win_h)
            return fail(NPK_V0_ERR_SHAPE, why, wn, "pool window %ux%u (v0: 2x2 or 3x3)", p.win_h, p.win_w);
        if (p.stride != 1 && p.stride != 2) return fail(NPK_V0_ERR_SHAPE, why, wn, "pool stride %u (v0: 1 or 2)", p.stride);
        if (p.pad >= p.win_h || p.pad >= p.win_w)
            return fail(NPK_V0_ERR_SHAPE, why, wn, "pool pad %u not below the window", p.pad);
        if (d->w[NPK_V0_W_POOL] >> 16)
            return fail(NPK_V0_ERR_SHAPE, why, wn, "POOL_PARAMS bits [31:16] are reserved (0x%x)", d->w[NPK_V0_W_POOL]);
        uint32_t oh, ow;
        if (npk_v0_pool_out(&p, &oh, &ow)) return fail(NPK_V0_ERR_SHAPE, why, wn, "pool output is empty");
        if (sa < p.w * p.c || sc < ow * p.c)
            return fail(NPK_V0_ERR_SHAPE, why, wn, "a stride is shorter than its row (in %u < %u or out %u < %u)", sa,
                        p.w * p.c, sc, ow * p.c);
        break;
    }
    }
    uint64_t a = npk_v0_desc_addr(d, NPK_V0_W_A_LO), b = npk_v0_desc_addr(d, NPK_V0_W_B_LO),
             c = npk_v0_desc_addr(d, NPK_V0_W_C_LO);
    if (a % NPK_V0_ALIGN || c % NPK_V0_ALIGN || (uses_b && b % NPK_V0_ALIGN))
        return fail(NPK_V0_ERR_ALIGN, why, wn, "tensor base not 16-byte aligned (A 0x%llx, B 0x%llx, C 0x%llx)",
                    (unsigned long long)a, (unsigned long long)b, (unsigned long long)c);
    if (sa % NPK_V0_ALIGN || sc % NPK_V0_ALIGN || (uses_b && sb % NPK_V0_ALIGN))
        return fail(NPK_V0_ERR_ALIGN, why, wn, "stride not a multiple of 16 (A %u, B %u, C %u)", sa, sb, sc);
    return 0;
}

static uint64_t npk_v0_conv_macs(const npk_v0_conv *c, uint32_t oh, uint32_t ow) {
    return (uint64_t)oh * ow * c->cout * c->ksize * c->ksize * c->cin;
}

uint64_t npk_v0_desc_macs(const npk_v0_desc *d) {
    uint32_t op = npk_v0_desc_op(d);
    if (op == NPK_V0_OP_MATMUL_S8 || op == NPK_V0_OP_MATMUL_S8_RELU)
        return (uint64_t)d->w[NPK_V0_W_SHAPE_M] * d->w[NPK_V0_W_SHAPE_N] * d->w[NPK_V0_W_SHAPE_K];
    if (op == NPK_V0_OP_CONV2D_S8 || op == NPK_V0_OP_CONV2D_S8_RELU) {
        npk_v0_conv c;
        uint32_t oh, ow;
        npk_v0_desc_get_conv(d, &c);
        if (npk_v0_conv_out(&c, &oh, &ow)) return 0;
        return npk_v0_conv_macs(&c, oh, ow);
    }
    return 0;
}
