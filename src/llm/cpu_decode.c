// SPDX-License-Identifier: MIT
/*
 * The fp32 reference decoder: one transformer step per call, llama2.c
 * semantics, every sum accumulated in fp32 in index order so results are
 * reproducible. Shapes: d = dim, kv = kv_dim, hd = hidden_dim, hs = head_size,
 * S = seq_len, V = vocab_size, L = n_layers.
 */
#include "llm_internal.h"
#include "npukit/npu.h"
#include "npukit/threads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct cpu_dec {
    npk_llm_decoder base;
    float *x;       /* [d] residual stream */
    float *xb;      /* [d] normed input / attention output */
    float *xb2;     /* [d] projection output */
    float *hb;      /* [hd] w1 x, then silu(w1 x) * w3 x */
    float *hb2;     /* [hd] w3 x */
    float *q;       /* [d] query */
    float *att;     /* [n_heads][S] attention weights */
    float *logits;  /* [V] */
    float *kcache;  /* [L][S][kv] keys */
    float *vcache;  /* [L][S][kv] values */
} cpu_dec;

/* o[d] = w[d] * x[d] / sqrt(mean(x^2) + 1e-5) */
static void rmsnorm(float *o, const float *x, const float *w, int n) {
    float ss = 0.0f;
    for (int j = 0; j < n; j++) ss += x[j] * x[j];
    ss /= (float)n;
    ss += 1e-5f;
    ss = 1.0f / sqrtf(ss);
    for (int j = 0; j < n; j++) o[j] = w[j] * (ss * x[j]);
}

void npk_llm_softmax(float *x, int n) {
    float mx = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > mx) mx = x[i];
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    for (int i = 0; i < n; i++) x[i] /= sum;
}

void llm_par(int ntasks, uint64_t work, void (*fn)(void *ctx, int task), void *ctx) {
    if (ntasks > 1 && work >= LLM_PAR_WORK && npk_threads() > 1) {
        npk_parallel(ntasks, fn, ctx);
        return;
    }
    for (int t = 0; t < ntasks; t++) fn(ctx, t);
}

typedef struct mm_job {
    float *out;
    const float *x, *w;
    int rows, cols, per;
} mm_job;

/* Rows [t * per, (t + 1) * per) of a matmul: each row summed in index order. */
static void mm_task(void *ctx, int t) {
    const mm_job *j = ctx;
    int r1 = (t + 1) * j->per < j->rows ? (t + 1) * j->per : j->rows;
    for (int r = t * j->per; r < r1; r++) {
        const float *wr = j->w + (size_t)r * (size_t)j->cols;
        float v = 0.0f;
        for (int c = 0; c < j->cols; c++) v += wr[c] * j->x[c];
        j->out[r] = v;
    }
}

/* out[r] = sum_c w[r][c] * x[c];  w: [rows][cols], x: [cols], out: [rows];
 * rows in slices of at least LLM_PAR_WORK / 4 multiply-adds on the pool */
static void matmul(float *out, const float *x, const float *w, int rows, int cols) {
    uint64_t work = (uint64_t)rows * (uint64_t)cols;
    int per = (int)((LLM_PAR_WORK / 4 + (uint64_t)cols - 1) / (uint64_t)cols);
    if (per < 1) per = 1;
    mm_job j = {out, x, w, rows, cols, per};
    llm_par((rows + per - 1) / per, work, mm_task, &j);
}

typedef struct att_job {
    cpu_dec *s;
    const npk_llm_config *c;
    size_t lo;
    int pos;
} att_job;

/* Attention of query head h (KV head h / kv_mul): its scores, softmax and
 * weighted sum of the values into xb[h * hs ..]. */
static void att_head(void *ctx, int h) {
    const att_job *j = ctx;
    cpu_dec *s = j->s;
    const int hs = j->c->head_size, kv = j->c->kv_dim, kv_mul = j->c->n_heads / j->c->n_kv_heads, pos = j->pos;
    const float *qh = s->q + h * hs;                       /* [hs] */
    float *att = s->att + (size_t)h * (size_t)j->c->seq_len; /* [pos+1] */
    for (int t = 0; t <= pos; t++) {
        const float *kt = s->kcache + j->lo + (size_t)t * kv + (size_t)(h / kv_mul) * hs; /* [hs] */
        float score = 0.0f;
        for (int i = 0; i < hs; i++) score += qh[i] * kt[i];
        att[t] = score / sqrtf((float)hs);
    }
    npk_llm_softmax(att, pos + 1);
    float *xbh = s->xb + h * hs; /* [hs] = sum_t att[t] * v_t */
    memset(xbh, 0, sizeof(float) * (size_t)hs);
    for (int t = 0; t <= pos; t++) {
        const float *vt = s->vcache + j->lo + (size_t)t * kv + (size_t)(h / kv_mul) * hs; /* [hs] */
        float a = att[t];
        for (int i = 0; i < hs; i++) xbh[i] += a * vt[i];
    }
}

static int cpu_forward(npk_llm_decoder *base, int token, int pos, const float **logits) {
    cpu_dec *s = (cpu_dec *)base;
    const npk_llm_model *m = base->model;
    const npk_llm_config *c = &m->cfg;
    const int d = c->dim, kv = c->kv_dim, hd = c->hidden_dim, hs = c->head_size, S = c->seq_len;
    uint64_t ops_mat = 0, ops_att = 0, ops_other = 0;

    /* x[d] = token_embedding[token][:] */
    memcpy(s->x, m->token_embedding + (size_t)token * (size_t)d, sizeof(float) * (size_t)d);

    for (int l = 0; l < c->n_layers; l++) {
        const size_t lo = (size_t)l * (size_t)S * (size_t)kv; /* layer offset into the caches */
        float *k = s->kcache + lo + (size_t)pos * (size_t)kv; /* [kv] this position's key */
        float *v = s->vcache + lo + (size_t)pos * (size_t)kv; /* [kv] this position's value */

        /* xb[d] = rmsnorm(x) * rms_att[l] */
        rmsnorm(s->xb, s->x, m->rms_att + (size_t)l * d, d);
        /* q[d] = wq[l] (d x d) xb;  k[kv] = wk[l] (kv x d) xb;  v[kv] = wv[l] (kv x d) xb */
        matmul(s->q, s->xb, m->wq + (size_t)l * d * d, d, d);
        matmul(k, s->xb, m->wk + (size_t)l * kv * d, kv, d);
        matmul(v, s->xb, m->wv + (size_t)l * kv * d, kv, d);
        ops_mat += (uint64_t)(d + 2 * kv) * (uint64_t)d;

        /* RoPE: rotate each pair (i, i+1) of every head by pos * 10000^(-(i mod hs)/hs);
         * q over all d, k over its kv entries. */
        for (int i = 0; i < d; i += 2) {
            int hi = i % hs;
            float freq = 1.0f / powf(10000.0f, (float)hi / (float)hs);
            float val = (float)pos * freq;
            float fcr = cosf(val), fci = sinf(val);
            int rotn = i < kv ? 2 : 1;
            for (int r = 0; r < rotn; r++) {
                float *vec = r == 0 ? s->q : k;
                float v0 = vec[i], v1 = vec[i + 1];
                vec[i] = v0 * fcr - v1 * fci;
                vec[i + 1] = v0 * fci + v1 * fcr;
            }
        }

        /* Multi-head attention; query head h reads KV head h / kv_mul (heads on the pool) */
        att_job aj = {s, c, lo, pos};
        llm_par(c->n_heads, (uint64_t)c->n_heads * (uint64_t)(pos + 1) * (uint64_t)(2 * hs + 8), att_head, &aj);
        ops_att += (uint64_t)c->n_heads * (uint64_t)(pos + 1) * (uint64_t)(2 * hs + 3);

        /* xb2[d] = wo[l] (d x d) xb; x += xb2 */
        matmul(s->xb2, s->xb, m->wo + (size_t)l * d * d, d, d);
        for (int i = 0; i < d; i++) s->x[i] += s->xb2[i];

        /* FFN: xb = rmsnorm(x) * rms_ffn[l]; hb[hd] = w1 xb; hb2[hd] = w3 xb */
        rmsnorm(s->xb, s->x, m->rms_ffn + (size_t)l * d, d);
        matmul(s->hb, s->xb, m->w1 + (size_t)l * hd * d, hd, d);
        matmul(s->hb2, s->xb, m->w3 + (size_t)l * hd * d, hd, d);
        /* SwiGLU: hb = silu(hb) * hb2, silu(x) = x / (1 + e^-x) */
        for (int i = 0; i < hd; i++) {
            float val = s->hb[i];
            val *= 1.0f / (1.0f + expf(-val));
            val *= s->hb2[i];
            s->hb[i] = val;
        }
        /* xb[d] = w2[l] (d x hd) hb; x += xb */
        matmul(s->xb, s->hb, m->w2 + (size_t)l * d * hd, d, hd);
        for (int i = 0; i < d; i++) s->x[i] += s->xb[i];
        ops_mat += (uint64_t)d * d + 3ull * (uint64_t)hd * d;
        ops_other += (uint64_t)(8 * d + 4 * hd + 3 * d);
    }
    /* x = rmsnorm(x) * rms_final; logits[V] = wcls (V x d) x */
    rmsnorm(s->x, s->x, m->rms_final, d);
    matmul(s->logits, s->x, m->wcls, c->vocab_size, d);
    ops_mat += (uint64_t)c->vocab_size * d;
    ops_other += 3ull * d;

    base->stats.host_op_kinds[LLM_HOST_MATMUL] += ops_mat;
    base->stats.host_op_kinds[LLM_HOST_ATTENTION] += ops_att;
    base->stats.host_op_kinds[LLM_HOST_NORM] += ops_other;
    base->stats.host_ops += ops_mat + ops_att + ops_other;
    *logits = s->logits;
    return 0;
}

static void cpu_destroy(npk_llm_decoder *base) {
    cpu_dec *s = (cpu_dec *)base;
    free(s->x);
    free(s->xb);
    free(s->xb2);
    free(s->hb);
    free(s->hb2);
    free(s->q);
    free(s->att);
    free(s->logits);
    free(s->kcache);
    free(s->vcache);
    free(s);
}

int npk_llm_decoder_cpu(const npk_llm_model *m, npk_llm_decoder **out) {
    *out = NULL;
    const npk_llm_config *c = &m->cfg;
    cpu_dec *s = calloc(1, sizeof *s);
    if (!s) return npk_err(NPK_ENOMEM, "out of memory");
    s->base.kind = "cpu";
    s->base.model = m;
    s->base.forward = cpu_forward;
    s->base.destroy = cpu_destroy;
    size_t d = (size_t)c->dim, hd = (size_t)c->hidden_dim;
    size_t cache = (size_t)c->n_layers * (size_t)c->seq_len * (size_t)c->kv_dim;
    s->x = calloc(d, sizeof(float));
    s->xb = calloc(d, sizeof(float));
    s->xb2 = calloc(d, sizeof(float));
    s->hb = calloc(hd, sizeof(float));
    s->hb2 = calloc(hd, sizeof(float));
    s->q = calloc(d, sizeof(float));
    s->att = calloc((size_t)c->n_heads * (size_t)c->seq_len, sizeof(float));
    s->logits = calloc((size_t)c->vocab_size, sizeof(float));
    s->kcache = calloc(cache, sizeof(float));
    s->vcache = calloc(cache, sizeof(float));
    if (!s->x || !s->xb || !s->xb2 || !s->hb || !s->hb2 || !s->q || !s->att || !s->logits || !s->kcache ||
        !s->vcache) {
        cpu_destroy(&s->base);
        return npk_err(NPK_ENOMEM, "out of memory for the decoder state (KV cache %zu floats)", 2 * cache);
    }
    *out = &s->base;
    return 0;
}
