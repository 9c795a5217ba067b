/* SPDX-License-Identifier: MIT */
/* An independent, exact reference for the pccx decode (issue 33 point 1).
 *
 * A plain C decoder written from pccx-isa.md, docs/pccx.md ("Arithmetic",
 * "CVO") and docs/llm.md ("The pccx path", "Numerics of one step"): one
 * INT4 x BF16 product at a time into an exact fixed-point sum, the device's
 * roundings where the documents put them (every GEMV output, every CVO result,
 * everything stored in L2 is BF16, rounded to nearest even), and the host
 * steps in binary32 in the documented order. It shares no code with the
 * decoder, the driver, the model or the base number formats (its own BF16
 * rounding, its own exact accumulator), so an arithmetic error in any of them
 * shows here as a logit that differs.
 *
 * Checks, on stories260K from BOS, greedy:
 *   - groups of 8 (npu llm's default) and per-channel scales: every logit of
 *     every position (200 and 64) equals npukit's pccx decoder bit for bit, and
 *     so do the tokens;
 *   - the reference's own text for groups of 8 equals
 *     tests/data/llm/stories260K-pccx-g8-200.txt (the recording checks the
 *     reference, the reference checks the decoder). */
#include "check.h"
#include "npukit/llm.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_DIR NPUKIT_SHARED_DIR "/models/stories260K"

/* ---- BF16, written here -------------------------------------------------------------------- */

/* x rounded to the nearest BF16 value (ties to even), as a double: 8
 * significant bits, subnormals below 2^-126 on the 2^-133 grid, overflow to
 * inf. x is scaled by a power of two (exact), rounded to an integer by
 * nearbyint (the default rounding mode: nearest even) and scaled back. */
static double bf16_round(double x) {
    if (x == 0 || !isfinite(x)) return x;
    int e;
    frexp(x, &e);              /* |x| in [2^(e-1), 2^e) */
    int q = e - 8;             /* the quantum: 8 bits of significand */
    if (q < -133) q = -133;    /* subnormal BF16 */
    double r = ldexp(nearbyint(ldexp(x, -q)), q);
    if (fabs(r) > 0x1.fep127) return x > 0 ? INFINITY : -INFINITY; /* above the largest BF16 */
    return r;
}
static float bf16(double x) { return (float)bf16_round(x); }

/* ---- an exact sum of doubles --------------------------------------------------------------- */

/* A fixed-point integer of LIMBS 32-bit limbs with bit 0 = 2^-LSB, held as
 * signed 64-bit limbs so that additions need no carries until the end. It
 * covers every product s (fp32) x w (INT4) x x (BF16) and their sums here
 * (from 2^-282 to far above 2^128). */
#define LIMBS 24
#define LSB 400
typedef struct xsum {
    int64_t l[LIMBS];
    int special; /* a NaN or inf was added: the reference does not model them */
} xsum;

static void xsum_add(xsum *a, double v) {
    if (v == 0) return;
    if (!isfinite(v)) {
        a->special = 1;
        return;
    }
    int e;
    double m = frexp(v, &e);
    int64_t mi = (int64_t)ldexp(m, 53); /* exact: |v| = |mi| 2^(e-53) */
    int sign = mi < 0 ? -1 : 1;
    uint64_t u = (uint64_t)(mi < 0 ? -mi : mi);
    int bit = e - 53 + LSB; /* weight of u's bit 0 */
    if (bit < 0 || bit / 32 + 3 >= LIMBS) {
        a->special = 1;
        return;
    }
    int li = bit / 32, sh = bit % 32;
    /* u << sh spans at most 85 bits: three limbs */
    unsigned __int128 w = (unsigned __int128)u << sh;
    for (int k = 0; k < 3; k++, w >>= 32) a->l[li + k] += sign * (int64_t)(uint32_t)w;
}

/* The sum rounded once to BF16 (ties to even); an exact zero is +0. */
static float xsum_bf16(const xsum *a) {
    if (a->special) return NAN;
    int64_t l[LIMBS];
    memcpy(l, a->l, sizeof l);
    for (int i = 0; i + 1 < LIMBS; i++) { /* carries: every limb into [0, 2^32) */
        int64_t c = l[i] >> 32;           /* floor division (arithmetic shift) */
        l[i] -= c * ((int64_t)1 << 32);
        l[i + 1] += c;
    }
    int neg = l[LIMBS - 1] < 0;
    uint32_t mag[LIMBS];
    if (neg) { /* two's complement negation of the whole number */
        uint64_t carry = 1;
        for (int i = 0; i < LIMBS; i++) {
            uint64_t t = (uint64_t)(~(uint32_t)l[i]) + carry;
            mag[i] = (uint32_t)t;
            carry = t >> 32;
        }
    } else {
        for (int i = 0; i < LIMBS; i++) mag[i] = (uint32_t)l[i];
    }
    int top = -1; /* the highest set bit */
    for (int i = LIMBS - 1; i >= 0 && top < 0; i--)
        if (mag[i]) top = i * 32 + 31 - __builtin_clz(mag[i]);
    if (top < 0) return 0.0f;
#define BIT(b) ((b) >= 0 && (mag[(b) / 32] >> ((b) % 32) & 1u))
    int q = top - 7;                      /* keep 8 significant bits */
    if (q < LSB - 133) q = LSB - 133;     /* the subnormal quantum 2^-133 */
    uint64_t M = 0;
    for (int b = top; b >= q; b--) M = M << 1 | BIT(b);
    int half = BIT(q - 1), sticky = 0;
    for (int b = q - 2; b >= 0 && !sticky; b--) sticky = BIT(b);
#undef BIT
    if (half && (sticky || (M & 1))) M++;
    double r = ldexp((double)M, q - LSB);
    if (r > 0x1.fep127) r = INFINITY;
    return (float)(neg ? -r : r);
}

/* ---- the device's operations (docs/pccx.md section 2) --------------------------------------- */

/* A projection quantized as the driver documents: per output channel and
 * group of G inputs (G = 0: the whole row), scale = max|w| / 7 in binary32
 * (1 for an all-zero group), q = roundf(w / scale) (half away from zero)
 * clamped to [-8, 7]. */
typedef struct qmat {
    int n, k, g, ng;
    int8_t *q;
    float *s;
} qmat;

static qmat quantize(const float *w, int n, int k, int G) {
    qmat m = {n, k, G && G <= k ? G : k, 0, NULL, NULL};
    m.ng = (k + m.g - 1) / m.g;
    m.q = malloc((size_t)n * (size_t)k);
    m.s = malloc(sizeof(float) * (size_t)n * (size_t)m.ng);
    for (int o = 0; o < n; o++)
        for (int j = 0; j < m.ng; j++) {
            int k0 = j * m.g, k1 = k0 + m.g < k ? k0 + m.g : k;
            float mx = 0;
            for (int i = k0; i < k1; i++) mx = fmaxf(mx, fabsf(w[(size_t)o * k + i]));
            float s = mx > 0 ? mx / 7.0f : 1.0f;
            m.s[(size_t)o * m.ng + j] = s;
            for (int i = k0; i < k1; i++) {
                float r = roundf(w[(size_t)o * k + i] / s);
                m.q[(size_t)o * k + i] = (int8_t)(r > 7 ? 7 : r < -8 ? -8 : r);
            }
        }
    return m;
}
static void qmat_free(qmat *m) {
    free(m->q);
    free(m->s);
}

/* GEMV: y[o] = bf16(sum_i s(o, i/G) w(o, i) x[i] (+ y[o] with accm)), the sum
 * exact, one product at a time. x holds BF16 values. */
static void gemv(const qmat *m, const float *x, float *y, int accm) {
    for (int o = 0; o < m->n; o++) {
        xsum a = {{0}, 0};
        if (accm) xsum_add(&a, y[o]);
        for (int i = 0; i < m->k; i++)
            xsum_add(&a, (double)m->s[(size_t)o * m->ng + i / m->g] * m->q[(size_t)o * m->k + i] * x[i]);
        y[o] = xsum_bf16(&a);
    }
}

/* A row of INT4 ones without scales: the exact sum of x (plus old), rounded. */
static float sum_ones(const float *x, int n, float old) {
    xsum a = {{0}, 0};
    xsum_add(&a, old);
    for (int i = 0; i < n; i++) xsum_add(&a, x[i]);
    return xsum_bf16(&a);
}

/* The RMSNorm sequence (docs/llm.md): t = n*eps (BF16), t = t + sum x_i^2
 * (the squares rounded to BF16 by the host; exact sum, one rounding),
 * t = t / n (SCALE recip), sqrt, 1/t, then XN_i = x_i * t (SCALE): each CVO
 * in double, rounded once. Then the host multiplies by the gain in binary32
 * and stores XN as BF16. */
static void rmsnorm(const float *x, const float *gain, int d, float *xn) {
    float *sq = malloc(sizeof(float) * (size_t)d);
    for (int i = 0; i < d; i++) sq[i] = bf16(x[i] * x[i]);
    const double n = bf16((double)d);
    float t = sum_ones(sq, d, bf16((double)d * (double)1e-5f));
    t = bf16((double)t / n);
    t = bf16(sqrt((double)t));
    t = bf16(1.0 / (double)t);
    for (int i = 0; i < d; i++) xn[i] = bf16(bf16((double)x[i] * (double)t) * gain[i]);
    free(sq);
}

/* ---- the decoder ---------------------------------------------------------------------------- */

typedef struct ref {
    const npk_llm_model *m;
    qmat *wq, *wk, *wv, *wo, *w1, *w2, *w3, cls;
    float *kc, *vc; /* [layer][pos][kv], BF16 values */
    float *x, *xn, *q, *k, *v, *att, *h1, *h3, *hb, *sc, *e, *logits;
} ref;

static void ref_init(ref *r, const npk_llm_model *m, int G) {
    const npk_llm_config *c = &m->cfg;
    const int L = c->n_layers, d = c->dim, kv = c->kv_dim, hd = c->hidden_dim;
    memset(r, 0, sizeof *r);
    r->m = m;
    qmat **mats[] = {&r->wq, &r->wk, &r->wv, &r->wo, &r->w1, &r->w2, &r->w3};
    for (int j = 0; j < 7; j++) *mats[j] = calloc((size_t)L, sizeof(qmat));
    for (int l = 0; l < L; l++) {
        r->wq[l] = quantize(m->wq + (size_t)l * d * d, d, d, G);
        r->wk[l] = quantize(m->wk + (size_t)l * kv * d, kv, d, G);
        r->wv[l] = quantize(m->wv + (size_t)l * kv * d, kv, d, G);
        r->wo[l] = quantize(m->wo + (size_t)l * d * d, d, d, G);
        r->w1[l] = quantize(m->w1 + (size_t)l * hd * d, hd, d, G);
        r->w2[l] = quantize(m->w2 + (size_t)l * d * hd, d, hd, G);
        r->w3[l] = quantize(m->w3 + (size_t)l * hd * d, hd, d, G);
    }
    r->cls = quantize(m->wcls, c->vocab_size, d, G);
    r->kc = calloc((size_t)L * c->seq_len * kv, sizeof(float));
    r->vc = calloc((size_t)L * c->seq_len * kv, sizeof(float));
    float **bufs[] = {&r->x, &r->xn, &r->q, &r->k, &r->v, &r->att, &r->h1, &r->h3, &r->hb, &r->sc, &r->e, &r->logits};
    size_t sizes[] = {d, d, d, kv, kv, d, hd, hd, hd, c->seq_len, c->seq_len, c->vocab_size};
    for (int j = 0; j < 12; j++) *bufs[j] = calloc(sizes[j], sizeof(float));
}

static void ref_free(ref *r) {
    qmat *mats[] = {r->wq, r->wk, r->wv, r->wo, r->w1, r->w2, r->w3};
    for (int j = 0; j < 7; j++) {
        for (int l = 0; l < r->m->cfg.n_layers; l++) qmat_free(&mats[j][l]);
        free(mats[j]);
    }
    qmat_free(&r->cls);
    float *bufs[] = {r->kc, r->vc, r->x, r->xn, r->q, r->k, r->v, r->att, r->h1, r->h3, r->hb, r->sc, r->e, r->logits};
    for (int j = 0; j < 14; j++) free(bufs[j]);
}

/* One position: the logits of token at pos. */
static const float *ref_forward(ref *r, int token, int pos) {
    const npk_llm_model *m = r->m;
    const npk_llm_config *c = &m->cfg;
    const int d = c->dim, kv = c->kv_dim, hd = c->hidden_dim, hs = c->head_size, nh = c->n_heads;
    const int kv_mul = nh / c->n_kv_heads, n = pos + 1;
    /* X = the embedding row in BF16 */
    for (int i = 0; i < d; i++) r->x[i] = bf16(m->token_embedding[(size_t)token * d + i]);
    /* RoPE: the host's angle pos * 10000^(-2j/hs) in double, reduced to
     * [-pi, pi] and stored as binary32, then BF16 in L2; SIN and COS of it in
     * double, rounded to BF16 */
    float sn[64], cs[64];
    for (int j = 0; j < hs / 2; j++) {
        double a = (double)pos * (1.0 / pow(10000.0, (double)(2 * j) / (double)hs));
        double ab = bf16((float)remainder(a, 2.0 * M_PI));
        sn[j] = bf16(sin(ab));
        cs[j] = bf16(cos(ab));
    }
    const float inv = 1.0f / sqrtf((float)hs);
    for (int l = 0; l < c->n_layers; l++) {
        rmsnorm(r->x, m->rms_att + (size_t)l * d, d, r->xn);
        gemv(&r->wq[l], r->xn, r->q, 0);
        gemv(&r->wk[l], r->xn, r->k, 0);
        gemv(&r->wv[l], r->xn, r->v, 0);
        /* rotation in binary32: (a0, a1) -> (a0 c - a1 s, a0 s + a1 c) per pair */
        for (int i = 0; i < d; i += 2) {
            float fc = cs[(i % hs) / 2], fs = sn[(i % hs) / 2];
            float a0 = r->q[i], a1 = r->q[i + 1];
            r->q[i] = a0 * fc - a1 * fs;
            r->q[i + 1] = a0 * fs + a1 * fc;
            if (i < kv) {
                a0 = r->k[i], a1 = r->k[i + 1];
                r->k[i] = a0 * fc - a1 * fs;
                r->k[i + 1] = a0 * fs + a1 * fc;
            }
        }
        float *kcl = r->kc + (size_t)l * c->seq_len * kv, *vcl = r->vc + (size_t)l * c->seq_len * kv;
        for (int i = 0; i < kv; i++) {
            kcl[(size_t)pos * kv + i] = bf16(r->k[i]); /* the rotated key, as BF16 */
            vcl[(size_t)pos * kv + i] = r->v[i];       /* the GEMV's BF16 output */
        }
        for (int h = 0; h < nh; h++) {
            const float *qh = r->q + h * hs;
            const int kvh = (h / kv_mul) * hs;
            /* scores in binary32, summed over i in order from +0, times 1/sqrt(hs);
             * stored as BF16; the head's maximum of the BF16 scores is e_max */
            float mx = -INFINITY;
            for (int t = 0; t < n; t++) {
                float a = 0.0f;
                for (int i = 0; i < hs; i++) a += qh[i] * kcl[(size_t)t * kv + kvh + i];
                r->sc[t] = bf16(a * inv);
                mx = fmaxf(mx, r->sc[t]);
            }
            /* EXP sub_emax on the device (double, one rounding), the exact sum of
             * the exponentials (GEMV against ones), and p = e / sum in double
             * rounded to BF16 (SCALE recip's arithmetic) on the host */
            for (int t = 0; t < n; t++) r->e[t] = bf16(exp((double)r->sc[t] - (double)mx));
            const double sum = sum_ones(r->e, n, 0.0f);
            float *o = r->att + h * hs;
            for (int i = 0; i < hs; i++) o[i] = 0.0f;
            for (int t = 0; t < n; t++) {
                const float p = bf16((double)r->e[t] / sum);
                for (int i = 0; i < hs; i++) o[i] += p * vcl[(size_t)t * kv + kvh + i];
            }
        }
        for (int i = 0; i < d; i++) r->att[i] = bf16(r->att[i]); /* ATT in L2 */
        gemv(&r->wo[l], r->att, r->x, 1);                       /* X += wo ATT */
        rmsnorm(r->x, m->rms_ffn + (size_t)l * d, d, r->xn);
        gemv(&r->w1[l], r->xn, r->h1, 0);
        gemv(&r->w3[l], r->xn, r->h3, 0);
        for (int i = 0; i < hd; i++) {
            const float a = r->h1[i];
            r->hb[i] = bf16(a / (1.0f + expf(-a)) * r->h3[i]); /* silu(h1) * h3 in binary32, then BF16 */
        }
        gemv(&r->w2[l], r->hb, r->x, 1); /* X += w2 HB */
    }
    rmsnorm(r->x, m->rms_final, d, r->xn);
    gemv(&r->cls, r->xn, r->logits, 0);
    return r->logits;
}

/* ---- the checks ---------------------------------------------------------------------------- */

static int argmax(const float *v, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

/* Greedy from BOS for `steps` positions through the reference and npukit's
 * pccx decoder side by side; every logit must be the same bits. The
 * reference's text is appended to *text (when given). */
static void compare(const npk_llm_model *m, const npk_llm_tokenizer *tk, int G, int steps, char *text, size_t cap) {
    ref r;
    ref_init(&r, m, G);
    npk_llm_pccx_opts o = {0};
    o.group_size = G;
    npk_llm_decoder *d = NULL;
    CHECK_EQ(npk_llm_decoder_pccx(m, &o, &d), 0);
    const int V = m->cfg.vocab_size;
    int token = NPK_LLM_BOS, diff_pos = -1, ndiff = 0;
    size_t len = 0;
    for (int pos = 0; pos < steps && d; pos++) {
        const float *lr = ref_forward(&r, token, pos), *ld = NULL;
        CHECK_EQ(npk_llm_forward(d, token, pos, &ld), 0);
        if (!ld) break;
        if (memcmp(lr, ld, sizeof(float) * (size_t)V)) {
            for (int i = 0; i < V; i++)
                if (memcmp(&lr[i], &ld[i], sizeof(float))) {
                    if (ndiff++ < 5)
                        fprintf(stderr, "G=%d pos %d logit %d: reference %a, pccx decoder %a\n", G, pos, i,
                                (double)lr[i], (double)ld[i]);
                }
            if (diff_pos < 0) diff_pos = pos;
        }
        int next = argmax(lr, V);
        CHECK_EQ(argmax(ld, V), next);
        if (next == NPK_LLM_BOS) break;
        if (text) {
            const char *piece = npk_llm_printable(npk_llm_decode(tk, token, next));
            size_t pl = strlen(piece);
            if (len + pl < cap) memcpy(text + len, piece, pl + 1), len += pl;
        }
        token = next;
    }
    CHECK_EQ(diff_pos, -1);
    if (diff_pos < 0) printf("G=%d: %d positions, every logit equal to the reference\n", G, steps);
    npk_llm_decoder_free(d);
    ref_free(&r);
}

int main(void) {
    npk_llm_model *m = NULL;
    npk_llm_tokenizer *tk = NULL;
    CHECK_EQ(npk_llm_model_load(MODEL_DIR "/stories260K.bin", &m), 0);
    if (!m) return CHECK_DONE();
    CHECK_EQ(npk_llm_tokenizer_load(MODEL_DIR "/tok512.bin", m->cfg.vocab_size, &tk), 0);
    if (!tk) return CHECK_DONE();
    /* the accumulator and the rounding on known cases first */
    {
        xsum a = {{0}, 0};
        xsum_add(&a, 0x1p100);
        xsum_add(&a, 1.0);
        xsum_add(&a, -0x1p100);
        CHECK(xsum_bf16(&a) == 1.0f); /* a double sum gives 0 */
        xsum b = {{0}, 0};
        xsum_add(&b, 1.0);
        xsum_add(&b, 0x1p-8); /* 1 + half an ulp: a tie, to even (1) */
        CHECK(xsum_bf16(&b) == 1.0f);
        xsum_add(&b, 0x1p-200); /* past the tie: up */
        CHECK(xsum_bf16(&b) == 1.0078125f);
        xsum z = {{0}, 0};
        xsum_add(&z, -3.0);
        xsum_add(&z, 3.0);
        float zr = xsum_bf16(&z);
        CHECK(zr == 0.0f && !signbit(zr));
        CHECK(bf16(1.00390625) == 1.0f && bf16(1.01171875) == 1.015625f && bf16(-0x1p-134) == -0.0f);
        CHECK(bf16(0x1p-133) == 0x1p-133f && isinf(bf16(0x1.ffp127)) && bf16(0x1.fe7p127) == 0x1.fep127f);
    }
    static char text[1 << 16];
    compare(m, tk, 8, 200, text, sizeof text);
    /* the recorded text (npu llm --device pccx, groups of 8, 200 steps) checks the reference */
    FILE *f = fopen(NPUKIT_SOURCE_DIR "/tests/data/llm/stories260K-pccx-g8-200.txt", "rb");
    CHECK(f != NULL);
    if (f) {
        static char rec[1 << 16];
        size_t n = fread(rec, 1, sizeof rec - 1, f);
        rec[n] = 0;
        fclose(f);
        size_t tl = strlen(text);
        CHECK(n == tl + 1 && rec[tl] == '\n' && !memcmp(rec, text, tl)); /* npu llm ends with a newline */
    }
    compare(m, tk, 0, 64, NULL, 0); /* per-channel scales */
    npk_llm_tokenizer_free(tk);
    npk_llm_model_free(m);
    return CHECK_DONE();
}
