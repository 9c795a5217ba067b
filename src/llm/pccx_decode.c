// SPDX-License-Identifier: MIT
/*
 * The decode path on the pccx NPU (see docs/llm.md for every decision).
 *
 * At creation every projection is quantized to INT4 (npk_pccx_wmat_upload:
 * symmetric, scale = max|w| / 7 per output channel, or per group of G inputs
 * of each channel) and appended to the weight-stream arena in the order the
 * step uses them: per layer the attention RMSNorm's row of ones, wq|wk|wv
 * (one record), wo, the FFN RMSNorm's ones, w1 w3 w2; then the final
 * RMSNorm's ones and the classifier.
 *
 * One step (token t at position pos), d = dim, kv = kv_dim, hd = hidden_dim,
 * hs = head_size, n = pos + 1:
 *   host    X[d] (L2, BF16 residual stream) = embedding[t]
 *   host+dev  angles[hs/2] = pos * 10000^(-2j/hs) (host, reduced to [-pi, pi])
 *           -> CVO SIN, CVO COS (npk_pccx_rope)
 *   per layer:
 *     host  SQ[d] = X^2;  dev: RMSNorm sequence X, SQ -> XN[d] = X / rms(X)
 *     host  XN *= rms_att[l] (element-wise, not expressible in the ISA)
 *     dev   GEMV Q[d] | K[kv] | V[kv] = [wq; wk; wv] XN (one record)
 *     host  RoPE rotation of Q and K with the device's sin/cos; K -> K cache,
 *           V -> V cache (host memory, [layer][pos][kv] BF16 values)
 *     host  scores[h][0..n) = q_h . k_t / sqrt(hs) and each head's max
 *     dev   per head: e_max := max (1 x 1 GEMV findemax), CVO EXP sub_emax;
 *           the row sums (one GEMV against ones)
 *     host  ATT[d]: head h = sum_t (e[h][t] / sum_h) v_t (SCALE recip's
 *           arithmetic for the division)
 *     dev   GEMV accm X += wo ATT   (the residual add is the accumulation)
 *     host+dev  RMSNorm as above with rms_ffn -> XN
 *     dev   GEMV H1[hd] = w1 XN;  H3[hd] = w3 XN
 *     host  HB[hd] = silu(H1) * H3
 *     dev   GEMV accm X += w2 HB
 *   host+dev  final RMSNorm with rms_final;  dev GEMV LOGITS[V] = wcls XN
 */
#include "llm_internal.h"
#include "npukit/npu.h"
#include "npukit/numfmt.h"

#include "npukit/cpu.h"
#include "npukit/pccx_drv.h"
#include "npukit/trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Projection indices (npk_llm_stats.gemv_on_device). */
enum { P_Q, P_K, P_V, P_O, P_W1, P_W2, P_W3, P_CLS };

typedef struct pccx_dec {
    npk_llm_decoder base;
    npk_port *port;
    npk_pccx *drv;
    npk_trace *trace;
    char *trace_path;
    npk_pccx_wmat *w; /* [L][7]: q (the fused q|k|v record; k, v unused) o w1 w2 w3, then cls at [7 * L] */
    npk_pccx_wmat *nones; /* [2 L + 1] 1 x dim ones, one per RMSNorm, in the stream before its projection */
    npk_pccx_wmat *emax_w; /* [n_heads] 1 x 1 ones: GEMV findemax loads a head's max into e_max */
    npk_pccx_wmat ones;    /* 1 x seq_len ones right after them: a GEMV sums each head's row */
    /* L2 word addresses */
    uint32_t a_ang, a_x, a_sq, a_xn, a_sin, a_cos, a_q, a_att, a_h1, a_hb, a_logits, a_sc;
    /* host scratch */
    float *x;      /* [d] */
    float *q;      /* [d] */
    float *k;      /* [kv] */
    float *qkv;    /* per row q | k | v (the fused GEMV's output row) as read from L2 in one transfer */
    float *att;    /* [d] attention output */
    float *h1;     /* [M][words(2 hd) * 8] per row h1 | h3 as read from L2, then [M][words(hd) * 8] silu(h1) * h3 */
    float *sc;     /* [n_heads][ceil(n/8) * 8] scores, then probabilities */
    float *kcache; /* [layer][kv][seq_pad] the K cache (rotated, BF16 values) in host memory, transposed:
                      a channel's keys of every position in a row, so the scores run 8 positions at once */
    float *vcache; /* [layer][seq][kv] the V cache */
    float *logits; /* [V] */
    float *xn;     /* [words(d) * 8 + 2 * words(hs / 2) * 8] XN (and sin, cos) as read back */
    uint16_t *sq16; /* the first layer's angles, X, squares and RMSNorm scratch words, as BF16 */
    uint16_t *sc16; /* [n_heads * words(seq) + n_heads][8] a step's scores, then exponentials, as BF16 */
    uint64_t hw_in, hw_out; /* host-window buffers of sc16's size (softmax_piped's transfers) */
    int hw_ok;              /* they were allocated */
    float *sinv, *cosv; /* [mmax][64]: hs/2 values per row of the block (hs <= 128) */
    int mmax;           /* rows a prefill block may have (L2 space, at most NPK_LLM_PCCX_MAX_BLOCK) */
    npk_pccx_stats base_stats; /* device counters at the end of setup */
    npk_energy base_energy;    /* the device's energy at the end of setup */
    int has_energy;
    int timing;    /* timing-only: no weights, no host arithmetic, the same instructions */
    float *zeros;  /* [max(d, V)] what timing-only writes where data would go */
    uint32_t *silu_v;  /* [65536] silu(a)'s float bits by a's BF16 bits, or SILU_UNSET (silu_rows) */
} pccx_dec;

static uint32_t words(uint32_t n) { return (n + 7) / 8; }

/* Words of one row of the fused q | k | v projection's output. */
static uint32_t qkv_words(const npk_llm_config *c) { return words((uint32_t)(c->dim + 2 * c->kv_dim)); }

/* Eight floats at any float address (GCC and clang vector extension): the
 * host attention's loops run 8 lanes at once, one AVX register in the
 * avx2/avx512 copies of a clone (NPK_ISA_CLONES), two SSE registers in the c
 * copy, with the scalar code's operations in its order per lane and never
 * contracted to FMAs (the pragma: clang would contract inside a statement in
 * the copies compiled with FMA), so the results are the same bits. */
typedef float v8f __attribute__((vector_size(32), aligned(4)));
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* The K cache's row length: seq_len rounded up to whole words, so that the
 * scores of a head's last word read inside its row. */
static size_t kc_row(const npk_llm_config *c) { return ((size_t)c->seq_len + 7) & ~(size_t)7; }

/* y[i] *= g[i] and y[i] = x[i] * x[i], i < n: eight lanes at once, one rounded multiply per element. */
static void mul_rows(float *y, const float *g, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) *(v8f *)(y + i) *= *(const v8f *)(g + i);
    for (; i < n; i++) y[i] *= g[i];
}
static void square(float *y, const float *x, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) *(v8f *)(y + i) = *(const v8f *)(x + i) * *(const v8f *)(x + i);
    for (; i < n; i++) y[i] = x[i] * x[i];
}

/* hb[i] = silu(h1[i]) * h3[i], i < n, silu(a) = a / (1 + e^-a): the golden's expression with
 * libm's expf. h1 comes back from L2, so each a holds a BF16 value: one of 65,536, whose silu is
 * computed once per decoder into s->silu_v (by a's top 16 bits; the signalling NaN 0x7f800001,
 * which no arithmetic returns, marks the values not computed yet) and then looked up: the same
 * float, the same expression on the same bits. Any other float is computed as it comes. */
#define SILU_UNSET 0x7f800001u
static void silu_rows(pccx_dec *s, float *hb, const float *h1, const float *h3, int n) {
    uint32_t *tab = s->silu_v;
    for (int i = 0; i < n; i++) {
        const float a = h1[i];
        uint32_t u, v;
        memcpy(&u, &a, sizeof u);
        float si;
        if ((u & 0xffffu) || !tab) {
            si = a / (1.0f + expf(-a));
        } else if ((v = tab[u >> 16]) != SILU_UNSET) {
            memcpy(&si, &v, sizeof si);
        } else {
            si = a / (1.0f + expf(-a));
            memcpy(&tab[u >> 16], &si, sizeof si);
        }
        hb[i] = si * h3[i];
    }
}

/* v[h0 + 2j], v[h0 + 2j + 1] rotated by the angle whose cosine and sine are fc[j], fs[j], for every
 * head h0 = 0, hs, ... < n (n a multiple of hs, hs even): pccx_block's pair-by-pair rotation. */
static void rope_rot(float *v, int n, int hs, const float *fc, const float *fs) {
    for (int h0 = 0; h0 < n; h0 += hs)
        for (int j = 0; j < hs / 2; j++) {
            float *p = v + h0 + 2 * j;
            const float a0 = p[0], a1 = p[1];
            p[0] = a0 * fc[j] - a1 * fs[j];
            p[1] = a0 * fs[j] + a1 * fc[j];
        }
}

/* p + off, or NULL for a model without weights (timing-only). */
static const float *at(const float *p, size_t off) { return p ? p + off : NULL; }

/* Write / read n floats at an L2 word, counting host<->device bytes. */
static int l2_put(pccx_dec *s, uint32_t l2, const float *v, size_t n) {
    s->base.stats.host_bytes += 2 * n;
    return npk_pccx_write_f32(s->drv, l2, v, n);
}
static int l2_put16(pccx_dec *s, uint32_t l2, const uint16_t *v, size_t n) {
    s->base.stats.host_bytes += 2 * n;
    return npk_pccx_write_bf16(s->drv, l2, v, n);
}
static int l2_get(pccx_dec *s, uint32_t l2, float *v, size_t n) {
    int rc = npk_pccx_sync(s->drv);
    if (rc) return rc;
    s->base.stats.host_bytes += 2 * n;
    return npk_pccx_read_f32(s->drv, l2, v, n);
}

/* Y[M rows] = W . X[M rows]: one GEMV for a single row (decode), one GEMM for
 * several (prefill: the weights stream once for all rows). */
static int mm(pccx_dec *s, int proj, uint32_t dest, uint32_t src, int M, const npk_pccx_wmat *w, unsigned flags) {
    if (M == 1) {
        s->base.stats.gemv_on_device[proj]++;
        return npk_pccx_gemv_w(s->drv, dest, src, 1, w, flags);
    }
    return npk_pccx_gemm_w(s->drv, dest, src, (unsigned)M, w, flags);
}

/* The L2 map of a block of M rows (positions): every region row-major with
 * its row stride, the regions each transfer moves adjacent. Nothing in L2
 * outlives a block (the KV cache is in host memory), so the map is laid out
 * again for every block. The scores follow everything (their size depends on
 * the positions). */
static void layout(pccx_dec *s, int M) {
    const npk_llm_config *c = &s->base.model->cfg;
    const uint32_t dw = words((uint32_t)c->dim), hdw = words((uint32_t)c->hidden_dim),
                   hw = words((uint32_t)(c->head_size / 2)), m = (uint32_t)M;
    uint32_t a = 0;
#define REGION(field, n) (s->field = a, a += (n))
    REGION(a_ang, m * hw); /* the angles, then X: one transfer */
    REGION(a_x, m * dw);
    REGION(a_sq, m * dw + m + 1); /* the squares' rows, a word n*eps per row, a word n: one transfer */
    REGION(a_xn, m * dw);       /* XN, then sin and cos: one transfer */
    REGION(a_sin, m * hw);
    REGION(a_cos, m * hw);
    REGION(a_q, m * qkv_words(c)); /* per row q | k | v (one GEMV): one transfer */
    REGION(a_att, m * dw);
    REGION(a_h1, m * words(2 * (uint32_t)c->hidden_dim)); /* per row h1 | h3 (one GEMV): one transfer */
    REGION(a_hb, m * hdw);
    REGION(a_logits, words((uint32_t)c->vocab_size));
    s->a_sc = a;
#undef REGION
}

/* L2 words a block of M rows needs at most (scores at the longest context). */
static uint64_t block_words(const npk_llm_config *c, int M) {
    const uint64_t dw = words((uint32_t)c->dim), kvw = words((uint32_t)c->kv_dim), hdw = words((uint32_t)c->hidden_dim),
                   hw = words((uint32_t)(c->head_size / 2));
    uint64_t row = 3 * hw + 5 * dw + 2 + 2 * kvw + 3 * hdw + (uint64_t)c->n_heads * (words((uint32_t)c->seq_len) + 1);
    return (uint64_t)M * row + words((uint32_t)c->vocab_size);
}

/* The squares of rows r0..r0+rows-1 of X (s->x, as the host holds them) and
 * the RMSNorm sequence's constants, laid out as the a_sq region expects
 * (rows x dw words of squares, one word n*eps per row, one word n), at sq.
 * Returns the element count. */
static size_t sq_build(pccx_dec *s, uint16_t *sq, int r0, int rows) {
    const int d = s->base.model->cfg.dim;
    const size_t rw = (size_t)words((uint32_t)d) * 8, n = (size_t)rows * rw + (size_t)rows * 8 + 8;
    memset(sq, 0, n * sizeof *sq);
    for (int r = 0; r < rows && !s->timing; r++)
        for (int i0 = 0; i0 < d; i0 += 256) { /* the squares in float, then rounded in bulk (npk_bf16_from_f32_n) */
            float t[256];
            const int n1 = d - i0 < 256 ? d - i0 : 256;
            const float *x = s->x + (size_t)(r0 + r) * rw + (size_t)i0;
            square(t, x, n1);
            npk_bf16_from_f32_n(sq + (size_t)r * rw + (size_t)i0, t, (size_t)n1);
        }
    uint16_t k[16];
    npk_pccx_rmsnorm_consts((unsigned)d, 1e-5f, k);
    for (int r = 0; r < rows; r++) sq[(size_t)rows * rw + (size_t)r * 8] = k[0];
    sq[(size_t)rows * rw + (size_t)rows * 8] = k[8];
    s->base.stats.host_op_kinds[LLM_HOST_NORM] += (uint64_t)rows * (uint64_t)d;
    return n;
}

/* XN[r] = rmsnorm(X[r]) * gain for rows r0..r0+rows-1 of the block, with the
 * division on the device. sq_sent: the squares are in L2 already (the first
 * layer's, which travel with the embeddings the host wrote), else X is read
 * back, squared and written with the sequence's scratch words in one
 * transfer. The driver's documented sequence with its first step, the sum of
 * the squares onto n*eps, as one GEMV (GEMM for several rows) against the
 * row of ones `ones` (REDUCE_SUM's arithmetic: the exact sum with the old
 * value, one rounding; the scalar register it would also set is overwritten
 * by the next step), which lets the next step, loading n into the scalar
 * register, start beside it; the other six CVOs per row are async (each
 * waits for its inputs in the fence table). With rope, the sin/cos the
 * device computed meanwhile (a_sin, a_cos follow a_xn) come back in the same
 * transfer as XN. */
static int rmsnorm(pccx_dec *s, const float *gain, int r0, int rows, int sq_sent, int rope, const npk_pccx_wmat *ones) {
    const int d = s->base.model->cfg.dim, hs = s->base.model->cfg.head_size;
    const uint32_t dw = words((uint32_t)d), hw = words((uint32_t)(hs / 2));
    const size_t rw = (size_t)dw * 8; /* row stride in elements */
    int rc;
    if (!sq_sent) {
        if ((rc = l2_get(s, s->a_x + (uint32_t)r0 * dw, s->x + (size_t)r0 * rw, (size_t)rows * rw)) != 0) return rc;
        const size_t n = sq_build(s, s->sq16, r0, rows);
        if ((rc = l2_put16(s, s->a_sq, s->sq16, n)) != 0) return rc;
    }
    const uint32_t e0 = s->a_sq + (uint32_t)rows * dw, nw = e0 + (uint32_t)rows; /* n*eps words, the n word */
    for (int r = 0; r < rows; r++) {
        const uint32_t t = e0 + (uint32_t)r, xr = s->a_x + (uint32_t)(r0 + r) * dw, yr = s->a_xn + (uint32_t)(r0 + r) * dw;
        if ((rc = npk_pccx_cvo(s->drv, NPK_PCCX_CVO_REDUCE_SUM, nw, nw, 1, 0, 1)) != 0) return rc; /* scalar = n */
        if (r == 0 && (rc = rows == 1 ? npk_pccx_gemv_w(s->drv, e0, s->a_sq, 1, ones, NPK_PCCX_ACCM)
                                      : npk_pccx_gemm_w(s->drv, e0, s->a_sq, (unsigned)rows, ones, NPK_PCCX_ACCM)) != 0)
            return rc;
        if ((rc = npk_pccx_cvo(s->drv, NPK_PCCX_CVO_SCALE, t, t, 1, NPK_PCCX_CVO_RECIP_SCALE, 1)) != 0 ||
            (rc = npk_pccx_cvo(s->drv, NPK_PCCX_CVO_SQRT, t, t, 1, 0, 1)) != 0 ||
            (rc = npk_pccx_cvo(s->drv, NPK_PCCX_CVO_RECIP, t, t, 1, 0, 1)) != 0 ||
            (rc = npk_pccx_cvo(s->drv, NPK_PCCX_CVO_REDUCE_SUM, t, t, 1, 0, 1)) != 0 || /* scalar = 1/rms */
            (rc = npk_pccx_cvo(s->drv, NPK_PCCX_CVO_SCALE, xr, yr, (unsigned)d, 0, 1)) != 0)
            return rc;
    }
    float *t = s->xn + (size_t)r0 * rw; /* [M][dw * 8], then sin and cos [M][hw * 8] each */
    const uint32_t xn0 = s->a_xn + (uint32_t)r0 * dw;
    if ((rc = l2_get(s, xn0, t, rope ? (size_t)(s->a_cos + (uint32_t)rows * hw - xn0) * 8 : (size_t)rows * rw)) != 0)
        return rc;
    for (int r = 0; r < rows && !s->timing; r++) mul_rows(t + r * rw, gain, d);
    s->base.stats.host_op_kinds[LLM_HOST_NORM] += (uint64_t)rows * (uint64_t)d;
    return l2_put(s, xn0, t, (size_t)rows * rw);
}

/* The softmax's device part for the scores the host put in s->sc (rows of
 * M positions from pos0, `off` words in all): scores to L2, per head e_max
 * and EXP, per row the sums; exponentials and sums back into s->sc. */
static int softmax_rows(pccx_dec *s, int pos0, int M, uint32_t off) {
    const int nh = s->base.model->cfg.n_heads;
    int rc;
    if ((rc = l2_put(s, s->a_sc, s->sc, (size_t)off * 8)) != 0) return rc;
    /* Softmax on the device, inside the queue: per head (after the first)
     * a 1 x 1 GEMV findemax loads the head's maximum into e_max, then EXP
     * sub_emax runs async on the SFU while the next head's GEMV runs (the
     * CVO latches e_max when it starts); per row one GEMV with a row of
     * ones sums every head's exponentials exactly (REDUCE_SUM's
     * arithmetic, rows at the same stride) into the maxima's words. */
    off = 0;
    for (int r = 0; r < M; r++) {
        const int n = pos0 + r + 1;
        const uint32_t scw = words((uint32_t)n), a_r = s->a_sc + off, a_mx = a_r + (uint32_t)nh * scw;
        for (int h = 0; h < nh; h++) {
            uint32_t a = a_r + (uint32_t)h * scw;
            if ((r || h) && (rc = npk_pccx_gemv_w(s->drv, a_mx + (uint32_t)h, a_mx + (uint32_t)h, 1, &s->emax_w[h],
                                                  NPK_PCCX_FINDEMAX)) != 0)
                return rc;
            if ((rc = npk_pccx_cvo(s->drv, NPK_PCCX_CVO_EXP, a, a, (unsigned)n, NPK_PCCX_CVO_SUB_EMAX, 1)) != 0)
                return rc;
        }
        const npk_pccx_wmat ones = npk_pccx_wmat_ones_prefix(&s->ones, (unsigned)n);
        if ((rc = npk_pccx_gemv_w(s->drv, a_mx, a_r, (unsigned)nh, &ones, 0)) != 0) return rc;
        off += (uint32_t)nh * scw + (uint32_t)nh;
    }
    if ((rc = l2_get(s, s->a_sc, s->sc, (size_t)off * 8)) != 0) return rc;
    return 0;
}

/* Async transfer of `nw` words between L2 word l2 and the host window at
 * byte offset hoff: host -> L2 when to_l2, else L2 -> host. */
static int xfer(pccx_dec *s, int to_l2, uint32_t l2, uint64_t hoff, uint32_t nw, unsigned async) {
    const int sh = npk_pccx_fmap_entry(s->drv, 1, 8, (uint16_t)nw);
    if (sh < 0) return sh;
    const uint32_t aux = (uint32_t)(hoff / 16);
    return to_l2 ? npk_pccx_memcpy(s->drv, 1, 0, l2, 0, aux, (unsigned)sh, async)
                 : npk_pccx_memcpy(s->drv, 0, 1, 0, l2, aux, (unsigned)sh, async);
}

/* softmax_rows for one position (a decode step, n = pos + 1 scores per
 * head), with the transfers beside the EXPs: the first head's scores go in a
 * transfer of their own, so its EXP starts as soon as they arrive while the
 * other heads' scores and the maxima follow; each head's exponentials go
 * back to the host (fire-and-forget MEMCPY, into a host-window buffer) while
 * the EXP two heads later runs (two, not one: the copy waits for its EXP to
 * complete, and instructions start in order, so a copy of the previous
 * head's would hold the next findemax GEMV back by that EXP's latency; the
 * last head but one's follows the last EXP), and only the last head and the
 * sums travel after the row-sum GEMV. The
 * same instructions on the same data as softmax_rows, in another order and
 * with the transfers split: the same results. */
static int softmax_piped(pccx_dec *s, int n) {
    const int nh = s->base.model->cfg.n_heads;
    const uint32_t scw = words((uint32_t)n), tot = (uint32_t)nh * scw + (uint32_t)nh, a_mx = s->a_sc + (uint32_t)nh * scw;
    const size_t ne = (size_t)tot * 8;
    const uint64_t hb = npk_pccx_hwin_base(s->drv);
    int rc;
    /* the scores as BF16 straight into the host-window buffer where the port has it in host
     * memory (the in-process model), else through sc16 */
    uint16_t *in = npk_port_direct(s->port, hb + s->hw_in, ne * 2);
    npk_bf16_from_f32_n(in ? in : s->sc16, s->sc, ne);
    s->base.stats.host_bytes += 2 * ne;
    if ((!in && (rc = npk_port_mem_write(s->port, hb + s->hw_in, s->sc16, ne * 2)) != 0) ||
        (rc = xfer(s, 1, s->a_sc, s->hw_in, scw, 1)) != 0 ||
        (rc = xfer(s, 1, s->a_sc + scw, s->hw_in + (uint64_t)scw * 16, tot - scw, 1)) != 0)
        return rc;
    for (int h = 0; h < nh; h++) {
        const uint32_t a = s->a_sc + (uint32_t)h * scw;
        if (h && (rc = npk_pccx_gemv_w(s->drv, a_mx + (uint32_t)h, a_mx + (uint32_t)h, 1, &s->emax_w[h],
                                       NPK_PCCX_FINDEMAX)) != 0)
            return rc;
        if ((rc = npk_pccx_cvo(s->drv, NPK_PCCX_CVO_EXP, a, a, (unsigned)n, NPK_PCCX_CVO_SUB_EMAX, 1)) != 0) return rc;
        if (h >= 2 &&
            (rc = xfer(s, 0, a - 2 * scw, s->hw_out + (uint64_t)(h - 2) * scw * 16, scw, 1)) != 0)
            return rc;
    }
    /* the last head but one: its EXP completes while the last one runs */
    if (nh >= 2 && (rc = xfer(s, 0, s->a_sc + (uint32_t)(nh - 2) * scw, s->hw_out + (uint64_t)(nh - 2) * scw * 16, scw,
                               1)) != 0)
        return rc;
    const npk_pccx_wmat ones = npk_pccx_wmat_ones_prefix(&s->ones, (unsigned)n);
    const uint32_t last = (uint32_t)nh - 1; /* the head not sent yet, then the sums */
    if ((rc = npk_pccx_gemv_w(s->drv, a_mx, s->a_sc, (unsigned)nh, &ones, 0)) != 0 ||
        (rc = xfer(s, 0, s->a_sc + last * scw, s->hw_out + (uint64_t)last * scw * 16, tot - last * scw, 0)) != 0 ||
        (rc = npk_pccx_sync(s->drv)) != 0 || (rc = npk_port_mem_read(s->port, hb + s->hw_out, s->sc16, ne * 2)) != 0)
        return rc;
    npk_bf16_to_f32_n(s->sc, s->sc16, ne);
    s->base.stats.host_bytes += 2 * ne;
    return 0;
}

/* One row's attention for the heads on the pool (llm_par): every head's
 * scores, maximum and weighted sum are its own outputs. */
typedef struct att_job {
    const float *q, *kc; /* scores: the rotated query, this layer's K cache [kv][Sp] */
    const float *vc;     /* weighting: this layer's V cache [seq][kv] */
    float *att;          /* weighting: the row's ATT output */
    float *scr, *mxw;    /* the row's scores (heads at a stride of scw words), the heads' maxima / sums */
    float inv;           /* 1 / sqrt(hs) */
    size_t Sp;           /* K cache row */
    uint32_t scw;
    int n, hs, kv, kv_mul, nh;
} att_job;

/* sc[t] = (sum_i qh[i] * kh[i * Sp + t], i in order from +0) * inv for t < nt (a multiple of 8), 8 at once;
 * 32 positions per pass where there are (four independent sums per lane, each q_i loaded once for them). */
NPK_ISA_CLONES_VOID(dot8, (float *sc, const float *qh, const float *kh, size_t Sp, int hs, uint32_t nt, float inv),
                    (sc, qh, kh, Sp, hs, nt, inv)) {
    uint32_t t = 0;
    for (; t + 32 <= nt; t += 32) {
        v8f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
#pragma GCC unroll 8
        for (int i = 0; i < hs; i++) {
            const float qi = qh[i];
            const float *k = kh + (size_t)i * Sp + t;
            a0 += qi * *(const v8f *)k;
            a1 += qi * *(const v8f *)(k + 8);
            a2 += qi * *(const v8f *)(k + 16);
            a3 += qi * *(const v8f *)(k + 24);
        }
        *(v8f *)(sc + t) = a0 * inv;
        *(v8f *)(sc + t + 8) = a1 * inv;
        *(v8f *)(sc + t + 16) = a2 * inv;
        *(v8f *)(sc + t + 24) = a3 * inv;
    }
    for (; t < nt; t += 8) {
        v8f a = {0};
#pragma GCC unroll 8 /* head sizes are small (8 on stories260K): the loop control would cost more than the work */
        for (int i = 0; i < hs; i++) a += qh[i] * *(const v8f *)(kh + (size_t)i * Sp + t);
        *(v8f *)(sc + t) = a * inv;
    }
}

/* axpy8 for two heads at once (their own p, V rows and outputs), each lane's sum in axpy8's order. */
NPK_ISA_CLONES_VOID(axpy8x2, (float *o0, const float *p0, const float *v0, float *o1, const float *p1, const float *v1,
                              int n, int kv, int i1),
                    (o0, p0, v0, o1, p1, v1, n, kv, i1)) {
    for (int i0 = 0; i0 < i1; i0 += 8) {
        v8f a = *(v8f *)(o0 + i0), b = *(v8f *)(o1 + i0);
#pragma GCC unroll 4
        for (int t = 0; t < n; t++) {
            a += p0[t] * *(const v8f *)(v0 + (size_t)t * kv + i0);
            b += p1[t] * *(const v8f *)(v1 + (size_t)t * kv + i0);
        }
        *(v8f *)(o0 + i0) = a;
        *(v8f *)(o1 + i0) = b;
    }
}

/* o[i] += sum_t p[t] * vh[t * kv + i] for i < i1 (a multiple of 8), each summed over t in order, 8 lanes at once. */
NPK_ISA_CLONES_VOID(axpy8, (float *o, const float *p, const float *vh, int n, int kv, int i1), (o, p, vh, n, kv, i1)) {
    for (int i0 = 0; i0 < i1; i0 += 8) {
        v8f a = *(v8f *)(o + i0);
#pragma GCC unroll 4
        for (int t = 0; t < n; t++) a += p[t] * *(const v8f *)(vh + (size_t)t * kv + i0);
        *(v8f *)(o + i0) = a;
    }
}

/* scores[h][t] = q_h . k_t / sqrt(hs), 8 positions per step, each summed over
 * i in order from +0 (the words past n read stale keys; zeroed after), and
 * the head's maximum (as BF16) in lane 0 of its own word. */
static void scores_head(void *ctx, int h) {
    const att_job *j = ctx;
    const int hs = j->hs, n = j->n;
    const size_t Sp = j->Sp;
    float *sc = j->scr + (size_t)h * j->scw * 8;
    const float *qh = j->q + h * hs, *kh = j->kc + (size_t)(h / j->kv_mul) * (size_t)hs * Sp;
    dot8(sc, qh, kh, Sp, hs, j->scw * 8, j->inv);
    for (uint32_t t = (uint32_t)n; t < j->scw * 8; t++) sc[t] = 0.0f;
    const float mx = npk_bf16_max_rounded(sc, (size_t)n);
    memset(j->mxw + (size_t)h * 8, 0, 8 * sizeof *j->mxw);
    j->mxw[(size_t)h * 8] = mx;
}

/* Head h's probabilities (exponentials over the device's sum, SCALE recip's arithmetic): p[t] =
 * bf16((double)p[t] / sum) in place; returns p. */
static float *probs(const att_job *j, int h) {
    float *p = j->scr + (size_t)h * j->scw * 8;
    npk_bf16_div_round_f32_n(p, p, (size_t)j->n, (double)j->mxw[(size_t)h * 8]);
    return p;
}

/* The channels i >= i0 (hs % 8 of them) of head h's weighted sum, one at a time. */
static void weigh_tail(const att_job *j, int h, const float *p, int i0) {
    float *o = j->att + h * j->hs;
    const float *vh = j->vc + (size_t)(h / j->kv_mul) * j->hs;
    for (int t = 0; t < j->n && i0 < j->hs; t++) {
        const float *restrict vt = vh + (size_t)t * j->kv;
        const float pt = p[t];
        for (int i = i0; i < j->hs; i++) o[i] += pt * vt[i];
    }
}

/* Heads 2 task and 2 task + 1 (if there is one): each head's probabilities and ATT[h] = sum_t
 * p[t] v_t, each o[i] summed over t in order, 8 lanes of i at once; the two heads' sums step
 * together (axpy8x2), two independent chains of adds instead of one after the other. */
static void weigh_pair(void *ctx, int task) {
    const att_job *j = ctx;
    const int h = 2 * task, hs = j->hs, i0 = hs / 8 * 8;
    float *p0 = probs(j, h);
    if (h + 1 < j->nh) {
        float *p1 = probs(j, h + 1);
        axpy8x2(j->att + h * hs, p0, j->vc + (size_t)(h / j->kv_mul) * hs, j->att + (h + 1) * hs, p1,
                j->vc + (size_t)((h + 1) / j->kv_mul) * hs, j->n, j->kv, i0);
        weigh_tail(j, h + 1, p1, i0);
    } else {
        axpy8(j->att + h * hs, p0, j->vc + (size_t)(h / j->kv_mul) * hs, j->n, j->kv, i0);
    }
    weigh_tail(j, h, p0, i0);
}

/* Positions pos0..pos0+M-1 (tokens[0..M-1]) through every layer; the logits
 * of the last one when want_logits. M = 1 is a decode step (GEMVs); M > 1 a
 * prefill block (GEMMs: every weight record streamed once for the M rows).
 * Row by row the arithmetic is the same, so the results are bit for bit.
 * Why long: one transformer layer as the pccx instruction stream issues it, step for step in
 * the order of llama2.c's forward() (RMSNorm, q|k|v, RoPE, scores, softmax, wo, FFN), so each
 * step can be held against run.c's line. */
static int pccx_block(pccx_dec *s, const int *tokens, int pos0, int M, int want_logits) {
    const npk_llm_model *m = s->base.model;
    const npk_llm_config *c = &m->cfg;
    const int d = c->dim, kv = c->kv_dim, hd = c->hidden_dim, hs = c->head_size, S = c->seq_len;
    const int kv_mul = c->n_heads / c->n_kv_heads, nh = c->n_heads;
    const uint32_t dw = words((uint32_t)d), hdw = words((uint32_t)hd), hw = words((uint32_t)(hs / 2)),
                   qkvw = qkv_words(c);
    const size_t rw = (size_t)dw * 8;
    uint64_t *ops = s->base.stats.host_op_kinds;
    int rc;
    layout(s, M);

    /* Per row: RoPE angles theta_j = pos * 10000^(-2j/hs), j < hs/2, reduced
     * to [-pi, pi] on the host, and X = embedding[token] (BF16, the residual
     * stream); all rows' angles and X in one transfer (a_ang is followed by
     * a_x). SIN and COS of every row (one CVO each: rows at a stride of hw
     * words) run async on the SFU while the squares for the first RMSNorm
     * travel, and come back with its XN. */
    float *ax = s->xn; /* [M * hw * 8 + M * rw] scratch */
    memset(ax, 0, sizeof(float) * ((size_t)M * hw * 8 + (size_t)M * rw));
    for (int r = 0; r < M; r++) {
        const int pos = pos0 + r;
        const float *emb = s->timing ? s->zeros : m->token_embedding + (size_t)tokens[r] * (size_t)d;
        for (int j = 0; j < hs / 2; j++) {
            double a = (double)pos * (1.0 / pow(10000.0, (double)(2 * j) / (double)hs));
            ax[(size_t)r * hw * 8 + j] = (float)remainder(a, 2.0 * M_PI);
        }
        memcpy(ax + (size_t)M * hw * 8 + r * rw, emb, sizeof(float) * (size_t)d);
        if (!s->timing) npk_bf16_round_f32_n(s->x + r * rw, emb, (size_t)d); /* what L2 holds */
    }
    ops[LLM_HOST_ROPE] += 2ull * (uint64_t)M * (uint64_t)(hs / 2);
    ops[LLM_HOST_EMBED] += (uint64_t)M * (uint64_t)d;
    const unsigned alen = (unsigned)((M - 1) * hw * 8 + hs / 2);
    /* The first RMSNorm's squares and scratch words follow X (a_sq follows
     * a_x): the host knows X, so they travel in the same transfer. */
    {
        const size_t nax = (size_t)M * hw * 8 + (size_t)M * rw;
        npk_bf16_from_f32_n(s->sq16, ax, nax);
        const size_t nsq = sq_build(s, s->sq16 + nax, 0, M);
        if ((rc = npk_pccx_wstream_at(s->drv, &s->nones[0])) != 0 || /* the FIFO fills from here */
            (rc = l2_put16(s, s->a_ang, s->sq16, nax + nsq)) != 0)
            return rc;
    }
    if ((rc = npk_pccx_cvo(s->drv, NPK_PCCX_CVO_SIN, s->a_ang, s->a_sin, alen, 0, 1)) != 0 ||
        (rc = npk_pccx_cvo(s->drv, NPK_PCCX_CVO_COS, s->a_ang, s->a_cos, alen, 0, 1)) != 0)
        return rc;

    for (int l = 0; l < c->n_layers; l++) {
        const npk_pccx_wmat *w = s->w + 7 * l;
        const size_t Sp = kc_row(c);
        float *kc = s->kcache ? s->kcache + (size_t)l * Sp * (size_t)kv : NULL; /* [kv][Sp], host memory */
        float *vc = s->vcache + (size_t)l * (size_t)S * (size_t)kv;

        if ((rc = rmsnorm(s, at(m->rms_att, (size_t)l * d), 0, M, l == 0, l == 0, &s->nones[2 * l])) != 0) return rc;
        if (l == 0)
            for (int r = 0; r < M; r++) { /* this block's sin and cos, row r */
                const float *t = s->xn + (size_t)(s->a_sin - s->a_xn) * 8 + (size_t)r * hw * 8;
                memcpy(s->sinv + r * 64, t, sizeof(float) * (size_t)(hs / 2));
                memcpy(s->cosv + r * 64, t + (size_t)M * hw * 8, sizeof(float) * (size_t)(hs / 2));
            }
        /* q | k | v = [wq; wk; wv] XN: one record (the three matrices' rows
         * in order, each row quantized as it would be alone), one GEMV */
        if ((rc = mm(s, P_Q, s->a_q, s->a_xn, M, &w[P_Q], 0)) != 0) return rc;
        if (M == 1) s->base.stats.gemv_on_device[P_K]++, s->base.stats.gemv_on_device[P_V]++;
        if ((rc = l2_get(s, s->a_q, s->qkv, (size_t)M * qkvw * 8)) != 0) return rc;

        /* Scores, row by row (position pos0 + r sees positions 0..pos0+r):
         * scores[h][t] = q_h . k_t / sqrt(hs), every head at a stride of
         * ceil(n/8) words, then each head's maximum (as BF16) in lane 0 of its
         * own word; all rows in one transfer. */
        const float inv = 1.0f / sqrtf((float)hs);
        uint32_t off = 0; /* words of the rows before this one */
        for (int r = 0; r < M; r++) {
            const int pos = pos0 + r, n = pos + 1;
            const uint32_t scw = words((uint32_t)n);
            float *q = s->q, *k = s->k;
            const float *row = s->qkv + (size_t)r * qkvw * 8, *v0 = row + d + kv;
            memcpy(q, row, sizeof(float) * (size_t)d);
            memcpy(k, row + d, sizeof(float) * (size_t)kv);
            /* RoPE rotation of each pair (i, i+1): q over d, k over kv (head by head, no division
             * per pair, where the heads tile them; else pair by pair) */
            if (!(hs & 1) && !(d % hs) && !(kv % hs)) {
                rope_rot(q, d, hs, s->cosv + r * 64, s->sinv + r * 64);
                rope_rot(k, kv, hs, s->cosv + r * 64, s->sinv + r * 64);
            } else
            for (int i = 0; i < d; i += 2) {
                float fc = s->cosv[r * 64 + (i % hs) / 2], fs = s->sinv[r * 64 + (i % hs) / 2];
                for (int z = 0; z < (i < kv ? 2 : 1); z++) {
                    float *vec = z == 0 ? q : k;
                    float a0 = vec[i], a1 = vec[i + 1];
                    vec[i] = a0 * fc - a1 * fs;
                    vec[i + 1] = a0 * fs + a1 * fc;
                }
            }
            ops[LLM_HOST_ROPE] += 6ull * (uint64_t)(d / 2 + kv / 2);
            /* KV cache rows in host memory (DDR), in BF16 precision: the
             * rotated k rounded as the device would store it, v as the GEMV
             * wrote it. */
            for (int i = 0; i < kv && !s->timing; i++) {
                kc[(size_t)i * Sp + (size_t)pos] = npk_bf16_round_f32(k[i]);
                vc[(size_t)pos * kv + i] = v0[i];
            }
            float *scr = s->sc + (size_t)off * 8;
            att_job aj = {q, kc, NULL, NULL, scr, scr + (size_t)nh * scw * 8, inv, Sp, scw, n, hs, kv, kv_mul, nh};
            if (!s->timing) llm_par(nh, (uint64_t)nh * scw * 8 * (uint64_t)(hs + 2), scores_head, &aj);
            ops[LLM_HOST_ATTENTION] += (uint64_t)nh * (uint64_t)n * (uint64_t)(hs + 1);
            ops[LLM_HOST_SOFTMAX] += (uint64_t)nh * (uint64_t)n;
            off += (uint32_t)nh * scw + (uint32_t)nh;
        }
        /* The first head's maximum goes to e_max through the EMAX register:
         * the queue is drained here anyway (the q|k|v read), so the first EXP
         * starts right after the scores' transfer. The value is the 1 x 1
         * findemax GEMV's (its output, max + nothing, is exact; an exact zero
         * is +0). The stream goes to the next head's row of ones meanwhile. */
        {
            uint16_t e0 = npk_bf16_from_f32(s->sc[(size_t)nh * words((uint32_t)pos0 + 1) * 8]);
            if (e0 == 0x8000u) e0 = 0;
            if ((rc = npk_pccx_wstream_at(s->drv, nh > 1 ? &s->emax_w[1] : &s->ones)) != 0 ||
                (rc = npk_pccx_set_emax(s->drv, e0)) != 0)
                return rc;
        }
        if ((rc = M == 1 && s->hw_ok && off <= 65535 ? softmax_piped(s, pos0 + 1) : softmax_rows(s, pos0, M, off)) != 0)
            return rc;
        /* the stream left wo's record for the softmax's rows of ones: back
         * to it now, so that the FIFO fills during the transfer of ATT */
        if ((rc = npk_pccx_wstream_at(s->drv, &w[P_O])) != 0) return rc;
        off = 0;
        memset(s->att, 0, sizeof(float) * (size_t)M * rw);
        for (int r = 0; r < M; r++) {
            const int n = pos0 + r + 1;
            const uint32_t scw = words((uint32_t)n);
            float *scr = s->sc + (size_t)off * 8;
            att_job aj = {NULL, NULL, vc, s->att + r * rw, scr, scr + (size_t)nh * scw * 8, 0, 0, scw, n, hs, kv, kv_mul, nh};
            if (!s->timing) llm_par((nh + 1) / 2, (uint64_t)nh * (uint64_t)n * (uint64_t)(hs + 4), weigh_pair, &aj);
            ops[LLM_HOST_SOFTMAX] += (uint64_t)nh * (uint64_t)n;
            ops[LLM_HOST_ATTENTION] += (uint64_t)nh * (uint64_t)n * (uint64_t)hs;
            off += (uint32_t)nh * scw + (uint32_t)nh;
        }
        if ((rc = l2_put(s, s->a_att, s->att, (size_t)M * rw)) != 0) return rc;
        /* X += wo ATT (accumulating into the residual stream) */
        if ((rc = mm(s, P_O, s->a_x, s->a_att, M, &w[P_O], NPK_PCCX_ACCM)) != 0) return rc;

        /* FFN */
        if ((rc = rmsnorm(s, at(m->rms_ffn, (size_t)l * d), 0, M, 0, 0, &s->nones[2 * l + 1])) != 0) return rc;
        /* h1 | h3 = [w1; w3] XN: one record, one GEMV (as q | k | v) */
        if ((rc = mm(s, P_W1, s->a_h1, s->a_xn, M, &w[P_W1], 0)) != 0) return rc;
        if (M == 1) s->base.stats.gemv_on_device[P_W3]++;
        const size_t hrw = (size_t)hdw * 8, h13 = (size_t)words(2 * (uint32_t)hd) * 8;
        if ((rc = l2_get(s, s->a_h1, s->h1, (size_t)M * h13)) != 0) return rc;
        float *hb = s->h1 + (size_t)M * h13;
        for (int r = 0; r < M && !s->timing; r++) silu_rows(s, hb + r * hrw, s->h1 + r * h13, s->h1 + r * h13 + hd, hd);
        ops[LLM_HOST_FFN] += 4ull * (uint64_t)M * (uint64_t)hd;
        if ((rc = l2_put(s, s->a_hb, hb, (size_t)M * hrw)) != 0) return rc;
        /* X += w2 HB */
        if ((rc = mm(s, P_W2, s->a_x, s->a_hb, M, &w[P_W2], NPK_PCCX_ACCM)) != 0) return rc;
    }
    if (!want_logits) return 0;
    /* the last row only: its logits give the next token */
    if ((rc = rmsnorm(s, m->rms_final, M - 1, 1, 0, 0, &s->nones[2 * c->n_layers])) != 0) return rc;
    s->base.stats.gemv_on_device[P_CLS]++;
    if ((rc = npk_pccx_gemv_w(s->drv, s->a_logits, s->a_xn + (uint32_t)(M - 1) * dw, 1, &s->w[7 * c->n_layers], 0)) != 0)
        return rc;
    return l2_get(s, s->a_logits, s->logits, (size_t)c->vocab_size);
}

/* The decoder's counters from the device's (since setup), after a step. */
static int sync_stats(pccx_dec *s, const float **logits) {
    npk_pccx_stats st;
    int rc = npk_pccx_stats_get(s->drv, &st);
    if (rc) return rc;
    npk_llm_stats *o = &s->base.stats;
    o->instr_total = 0;
    for (int i = 0; i < 5; i++) {
        o->instr[i] = st.per_op[i] - s->base_stats.per_op[i];
        o->instr_total += o->instr[i];
    }
    o->weight_bytes = st.ws_bytes - s->base_stats.ws_bytes;
    o->memcpy_bytes = st.dma_bytes - s->base_stats.dma_bytes;
    o->device_cycles = st.cycles - s->base_stats.cycles;
    o->device_ops = (st.macs - s->base_stats.macs) + (st.sfu_elems - s->base_stats.sfu_elems);
    o->device_macs = st.macs - s->base_stats.macs;
    for (int i = 0; i < 4; i++) o->engine_cycles[i] = st.engine_cycles[i] - s->base_stats.engine_cycles[i];
    npk_energy e;
    if (s->has_energy && npk_port_energy(s->port, &e, &o->area, &o->tech_nm) == 0) {
        const npk_energy *b = &s->base_energy;
        o->has_energy = 1;
        o->energy = (npk_energy){e.compute_pj - b->compute_pj, e.reg_pj - b->reg_pj, e.sram_pj - b->sram_pj,
                                 e.acc_pj - b->acc_pj,         e.dram_pj - b->dram_pj, e.dma_pj - b->dma_pj,
                                 e.mmio_pj - b->mmio_pj,
                                 npk_leak_pj(npk_area_total_mm2(&o->area), o->device_cycles, o->device_hz, o->tech_nm)};
    }
    o->host_ops = 0;
    for (int i = 0; i < 8; i++) o->host_ops += o->host_op_kinds[i];
    if (s->timing) /* the staging area holds whatever the host wrote last, not logits */
        memset(s->logits, 0, sizeof *s->logits * (size_t)s->base.model->cfg.vocab_size);
    *logits = s->logits;
    return 0;
}

static int pccx_forward(npk_llm_decoder *base, int token, int pos, const float **logits) {
    pccx_dec *s = (pccx_dec *)base;
    uint64_t t0 = npk_port_cycles(s->port);
    int rc = pccx_block(s, &token, pos, 1, 1);
    if (s->trace) {
        char args[64];
        snprintf(args, sizeof args, "\"pos\":%d,\"token\":%d,\"status\":%d", pos, token, rc);
        npk_port_trace_host(s->port, "decode", "forward", t0, args);
    }
    if (rc) return npk_err_prefix(-rc, "pccx decode, position %d", pos);
    return sync_stats(s, logits);
}

/* GEMM prefill: positions pos0..pos0+n-1 in blocks of up to mmax rows, the
 * logits of the last one. */
static int pccx_prefill(npk_llm_decoder *base, const int *tokens, int n, int pos0, const float **logits) {
    pccx_dec *s = (pccx_dec *)base;
    for (int done = 0; done < n;) {
        int M = n - done < s->mmax ? n - done : s->mmax;
        uint64_t t0 = npk_port_cycles(s->port);
        int rc = pccx_block(s, tokens + done, pos0 + done, M, done + M == n);
        if (s->trace) {
            char args[80];
            snprintf(args, sizeof args, "\"pos\":%d,\"rows\":%d,\"status\":%d", pos0 + done, M, rc);
            npk_port_trace_host(s->port, "decode", "prefill", t0, args);
        }
        if (rc) return npk_err_prefix(-rc, "pccx prefill, positions %d..%d", pos0 + done, pos0 + done + M - 1);
        done += M;
    }
    return sync_stats(s, logits);
}

static int pccx_finish(npk_llm_decoder *base) {
    pccx_dec *s = (pccx_dec *)base;
    if (!s->trace || !s->trace_path) return 0;
    return npk_trace_write_file(s->trace, s->trace_path); /* the message names the file */
}

static void pccx_destroy(npk_llm_decoder *base) {
    pccx_dec *s = (pccx_dec *)base;
    if (s->trace) {
        if (s->port) npk_port_set_trace(s->port, NULL);
        npk_trace_free(s->trace);
    }
    free(s->trace_path);
    npk_pccx_close(s->drv);
    npk_port_close(s->port);
    free(s->w);
    free(s->x);
    free(s->q);
    free(s->k);
    free(s->qkv);
    free(s->att);
    free(s->h1);
    free(s->sc);
    free(s->kcache);
    free(s->vcache);
    free(s->logits);
    free(s->xn);
    free(s->sq16);
    free(s->sc16);
    free(s->emax_w);
    free(s->nones);
    free(s->sinv);
    free(s->cosv);
    free(s->zeros);
    free(s->silu_v);
    free(s);
}

/* Why long: the decoder's setup in upload order (options, weight arena, the fused matrices
 * layer by layer, the softmax's constant rows); the order is the guest-memory layout the
 * instruction stream addresses. */
int npk_llm_decoder_pccx(const npk_llm_model *m, const npk_llm_pccx_opts *opts, npk_llm_decoder **out) {
    *out = NULL;
    npk_llm_pccx_opts def = {0};
    if (!opts) opts = &def;
    const npk_llm_config *c = &m->cfg;
    const uint32_t d = (uint32_t)c->dim, kv = (uint32_t)c->kv_dim, hd = (uint32_t)c->hidden_dim,
                   S = (uint32_t)c->seq_len, V = (uint32_t)c->vocab_size, hs = (uint32_t)c->head_size;
    if (opts->group_size < 0 || opts->group_size > NPK_LLM_PCCX_MAX_GROUP)
        return npk_err(NPK_EINVAL, "pccx: group size %d out of range 0..%d", opts->group_size, NPK_LLM_PCCX_MAX_GROUP);
    if (d + 2 * kv > 65535 || 2 * hd > 65535 || V > 65535)
        return npk_err(NPK_EUNSUPPORTED, "not supported yet: %s: dimensions above 65535 (dim + 2 kv_dim %u, 2 hidden %u, "
                       "vocab %u) exceed the pccx 16-bit shape fields", m->name, d + 2 * kv, 2 * hd, V);
    if (hs > 128)
        return npk_err(NPK_EUNSUPPORTED, "not supported yet: head size %u > 128 on pccx", hs);
    if (!opts->timing_only && !m->token_embedding)
        return npk_err(NPK_EINVAL, "pccx: %s has no weights (only a timing-only run can use a shape)", m->name);

    pccx_dec *s = calloc(1, sizeof *s);
    if (!s) return npk_err(NPK_ENOMEM, "out of memory");
    s->base.kind = "pccx";
    s->base.model = m;
    s->base.forward = pccx_forward;
    s->base.destroy = pccx_destroy;
    s->base.finish = pccx_finish;

    if (!opts->gemm_prefill_off) s->base.prefill = pccx_prefill;
    size_t fsz = sizeof(float);
    s->q = calloc(d, fsz);
    s->k = calloc(kv, fsz);
    s->emax_w = calloc((size_t)c->n_heads, sizeof *s->emax_w);
    s->nones = calloc((size_t)2 * c->n_layers + 1, sizeof *s->nones);
    s->timing = !!opts->timing_only;
    s->zeros = calloc(d > V ? d : V, fsz);
    if (!s->timing) { /* timing-only keeps no cache (TinyLlama's would be 92 MB) */
        s->kcache = calloc((size_t)c->n_layers * kc_row(c) * kv, fsz);
        s->vcache = calloc((size_t)c->n_layers * S * kv, fsz);
    }
    s->logits = calloc(V, fsz);
    if (!s->timing && (s->silu_v = malloc(65536 * sizeof *s->silu_v)) != NULL) /* none: silu_rows computes each */
        for (int i = 0; i < 65536; i++) s->silu_v[i] = SILU_UNSET;
    s->w = calloc((size_t)7 * c->n_layers + 1, sizeof *s->w);
    int rc = 0;
    if (!s->q || !s->k || !s->emax_w || !s->nones || (!s->timing && (!s->kcache || !s->vcache)) ||
        !s->logits || !s->zeros || !s->w) {
        rc = npk_err(NPK_ENOMEM, "out of memory");
        goto fail;
    }
    {
        /* timing-only is the device's option; the caller's options come first */
        const char *dopt = opts->dev_opts && *opts->dev_opts ? opts->dev_opts : NULL;
        char *o = NULL;
        if (s->timing) {
            size_t len = (dopt ? strlen(dopt) + 1 : 0) + sizeof "timing_only=1";
            if (!(o = malloc(len))) {
                rc = npk_err(NPK_ENOMEM, "out of memory");
                goto fail;
            }
            snprintf(o, len, "%s%stiming_only=1", dopt ? dopt : "", dopt ? "," : "");
        }
        rc = npk_port_open(&s->port, opts->port, "pccx", o ? o : dopt);
        free(o);
        if (rc) goto fail;
    }
    if (opts->trace_path) {
        if (!npk_port_sim(s->port)) {
            rc = npk_err(NPK_EUNSUPPORTED, "--trace needs the in-process (sim) port");
            goto fail;
        }
        s->trace = npk_trace_new();
        s->trace_path = strdup(opts->trace_path);
        if (!s->trace || !s->trace_path) {
            rc = npk_err(NPK_ENOMEM, "out of memory");
            goto fail;
        }
        npk_port_set_trace(s->port, s->trace); /* device events and host steps */
    }
    /* Weight arena: every record plus slack for alignment. */
    uint64_t wbytes = 0;
    unsigned G = (unsigned)opts->group_size;
    {
        unsigned shapes[4][2] = {{d + 2 * kv, d}, {d, d}, {2 * hd, d}, {d, hd}};
        for (int i = 0; i < 4; i++) {
            unsigned g = G >= shapes[i][1] ? 0 : G;
            wbytes += (uint64_t)c->n_layers * (npk_pccx_wrec_size(shapes[i][0], shapes[i][1], g, 1) + 64);
        }
        wbytes += (uint64_t)(2 * c->n_layers + 1) * npk_pccx_wrec_size(1, d, 0, 0); /* the RMSNorms' ones */
        wbytes += npk_pccx_wrec_size(V, d, G >= d ? 0 : G, 1) + 64;
        wbytes += (uint64_t)c->n_heads * npk_pccx_wrec_size(1, 1, 0, 0) + npk_pccx_wrec_size(1, S, 0, 0) + 64;
    }
    npk_pccx_cfg dc = {.ws_bytes = wbytes + (1u << 16)};
    if ((rc = npk_pccx_open(&s->drv, s->port, &dc)) != 0) goto fail;
    {
        /* a decode step's scores and exponentials through host-window buffers (softmax_piped) */
        const uint64_t scb = ((uint64_t)c->n_heads * words(S) + (uint64_t)c->n_heads) * 16;
        s->sc16 = malloc(scb);
        if (!s->sc16) {
            rc = npk_err(NPK_ENOMEM, "out of memory");
            goto fail;
        }
        s->hw_ok = scb / 16 <= 65535 && !npk_pccx_hwin_alloc(s->drv, scb, &s->hw_in) &&
                   !npk_pccx_hwin_alloc(s->drv, scb, &s->hw_out);
    }
    const uint64_t l2w = npk_pccx_l2_words(s->drv), l2_one = block_words(c, 1);
    if (l2_one > l2w) {
        rc = npk_err(NPK_EUNSUPPORTED, "not supported yet: %s needs %llu L2 words for its activations, the device has %u "
                     "(device option l2_kib)", m->name, (unsigned long long)l2_one, npk_pccx_l2_words(s->drv));
        goto fail;
    }
    {
        /* Rows per prefill block: as many as L2 holds beside the logits (the
         * scores sized for the longest context), at most NPK_LLM_PCCX_MAX_BLOCK. */
        const uint64_t row = block_words(c, 2) - l2_one, fit = (l2w - (l2_one - row)) / row;
        s->mmax = (int)(fit > NPK_LLM_PCCX_MAX_BLOCK ? NPK_LLM_PCCX_MAX_BLOCK : fit);
        const size_t M = (size_t)s->mmax, rw = (size_t)words(d) * 8, hw8 = (size_t)words(hs / 2) * 8;
        s->x = calloc(M * rw, fsz);
        s->qkv = calloc(M * (rw + 2 * (size_t)words(kv) * 8), fsz);
        s->att = calloc(M * rw, fsz);
        s->h1 = calloc(M * ((size_t)words(2 * hd) + words(hd)) * 8, fsz);
        s->sc = calloc(M * ((size_t)c->n_heads * words(S) + (size_t)c->n_heads) * 8, fsz);
        s->xn = calloc(M * (rw + 2 * hw8), fsz);
        s->sq16 = calloc(M * (hw8 + 2 * rw + 8) + 8, sizeof *s->sq16);
        s->sinv = calloc(M * 64, fsz);
        s->cosv = calloc(M * 64, fsz);
        if (!s->x || !s->qkv || !s->att || !s->h1 || !s->sc || !s->xn || !s->sq16 || !s->sinv || !s->cosv) {
            rc = npk_err(NPK_ENOMEM, "out of memory");
            goto fail;
        }
    }
    /* Quantize and upload in order of use: per layer the attention RMSNorm's
     * ones, q|k|v (one record: wq, wk, wv's rows in order), o, the FFN
     * RMSNorm's ones, w1 w3 w2; then the final RMSNorm's ones and cls. */
    /* one buffer for the fused matrices: [wq; wk; wv] (d + 2 kv rows), [w1; w3] (2 hd rows) */
    const size_t fused_rows = d + 2 * kv > 2 * hd ? d + 2 * kv : 2 * hd;
    float *wfused = s->timing ? NULL : malloc(sizeof(float) * fused_rows * d);
    if (!s->timing && !wfused) {
        rc = npk_err(NPK_ENOMEM, "out of memory");
        goto fail;
    }
    for (int l = 0; l < c->n_layers && !rc; l++) {
        if (wfused) {
            memcpy(wfused, m->wq + (size_t)l * d * d, sizeof(float) * (size_t)d * d);
            memcpy(wfused + (size_t)d * d, m->wk + (size_t)l * kv * d, sizeof(float) * (size_t)kv * d);
            memcpy(wfused + (size_t)(d + kv) * d, m->wv + (size_t)l * kv * d, sizeof(float) * (size_t)kv * d);
        }
        struct {
            int idx; /* -1, -2: the attention / FFN RMSNorm's ones */
            const float *w;
            unsigned n, k;
        } order[7] = {
            {-1, NULL, 1, d},  {P_Q, wfused, d + 2 * kv, d},  {P_O, at(m->wo, (size_t)l * d * d), d, d},  /* w1: [w1; w3] */
            {-2, NULL, 1, d},  {P_W1, at(m->w1, (size_t)l * hd * d), hd, d}, {P_W3, at(m->w3, (size_t)l * hd * d), hd, d},
            {P_W2, at(m->w2, (size_t)l * d * hd), d, hd},
        };
        for (int i = 0; i < 7 && !rc; i++) {
            unsigned g = G >= order[i].k ? 0 : G; /* a group covering the row is per-channel */
            if (order[i].idx == P_W3) continue; /* in w1's record */
            if (order[i].idx == P_W1 && wfused) {
                memcpy(wfused, m->w1 + (size_t)l * hd * d, sizeof(float) * (size_t)hd * d);
                memcpy(wfused + (size_t)hd * d, m->w3 + (size_t)l * hd * d, sizeof(float) * (size_t)hd * d);
                order[i].w = wfused;
            }
            if (order[i].idx == P_W1) order[i].n = 2 * hd;
            if (order[i].idx < 0) {
                rc = npk_pccx_wmat_ones(s->drv, d, &s->nones[2 * l - 1 - order[i].idx]);
                continue;
            }
            npk_pccx_wmat *wm = &s->w[7 * l + order[i].idx];
            rc = s->timing ? npk_pccx_wmat_reserve(s->drv, order[i].n, order[i].k, g, wm)
                           : npk_pccx_wmat_upload(s->drv, order[i].w, order[i].n, order[i].k, g, wm);
        }
        if (rc) npk_err_prefix(-rc, "layer %d weights", l);
    }
    free(wfused);
    if (rc || (rc = npk_pccx_wmat_ones(s->drv, d, &s->nones[2 * c->n_layers])) != 0) goto fail;
    rc = s->timing ? npk_pccx_wmat_reserve(s->drv, V, d, G >= d ? 0 : G, &s->w[7 * c->n_layers])
                   : npk_pccx_wmat_upload(s->drv, m->wcls, V, d, G >= d ? 0 : G, &s->w[7 * c->n_layers]);
    if (rc) {
        npk_err_prefix(-rc, "classifier weights");
        goto fail;
    }
    /* the softmax's rows of ones: n_heads 1 x 1 (e_max loads), then 1 x seq_len (row sums), consecutive */
    for (int h = 0; h < c->n_heads && !rc; h++) rc = npk_pccx_wmat_ones(s->drv, 1, &s->emax_w[h]);
    if (rc || (rc = npk_pccx_wmat_ones(s->drv, S, &s->ones)) != 0) {
        npk_err_prefix(-rc, "softmax rows of ones");
        goto fail;
    }
    if ((rc = npk_pccx_stats_get(s->drv, &s->base_stats)) != 0) goto fail;
    {
        npk_area a;
        uint32_t nm;
        s->has_energy = npk_port_energy(s->port, &s->base_energy, &a, &nm) == 0;
    }
    s->base.stats.device_hz = npk_port_hz(s->port);
    s->base.stats.device_macs_per_cycle = 32u * npk_pccx_lanes(s->drv);
    *out = &s->base;
    return 0;
fail:
    pccx_destroy(&s->base);
    return rc;
}
