// SPDX-License-Identifier: MIT
/* The pccx decode path: a short teacher-forced decode agrees with the fp32
 * reference's top tokens, every projection ran as a device GEMV (read back
 * from the device's counters), the weight stream carried exactly the INT4
 * records the model needs, and a projection with K = 172 (w2) uses every
 * column, including the partial last scale group. */
#include "check.h"
#include "npukit/llm.h"
#include "npukit/npu.h"
#include "npukit/pccx.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_DIR NPUKIT_SHARED_DIR "/models/stories260K"

/* Bytes of one weight record, from the layout in pccx.h, computed here
 * independently: nibbles padded to 16 bytes, fp32 scales padded to 16 bytes. */
static uint64_t rec_bytes(uint64_t n, uint64_t k, uint64_t g) {
    uint64_t groups = g ? (k + g - 1) / g : 1;
    uint64_t wb = (n * k + 1) / 2, sb = n * groups * 4;
    return (wb + 15) / 16 * 16 + (sb + 15) / 16 * 16;
}

static float bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}

/* Independent INT4 reference: per (row, group) scale max|w|/7, round half away, clamp -8..7. */
static double ref_dot(const float *w, const float *x, int K, int G) {
    double acc = 0.0;
    for (int g0 = 0; g0 < K; g0 += G) {
        int g1 = g0 + G < K ? g0 + G : K;
        float mx = 0.0f;
        for (int k = g0; k < g1; k++) mx = fabsf(w[k]) > mx ? fabsf(w[k]) : mx;
        float s = mx > 0.0f ? mx / 7.0f : 1.0f;
        for (int k = g0; k < g1; k++) {
            float q = roundf(w[k] / s);
            q = q > 7 ? 7 : q < -8 ? -8 : q;
            acc += (double)s * (double)q * (double)x[k];
        }
    }
    return acc;
}

int main(void) {
    npk_llm_model *m = NULL;
    CHECK_EQ(npk_llm_model_load(MODEL_DIR "/stories260K.bin", &m), 0);
    if (!m) return CHECK_DONE();
    const npk_llm_config *c = &m->cfg;
    const int steps = 6;

    /* fp32 greedy tokens for teacher forcing. */
    npk_llm_decoder *gen = NULL, *ref = NULL, *npu = NULL;
    int toks[8] = {NPK_LLM_BOS};
    CHECK_EQ(npk_llm_decoder_cpu(m, &gen), 0);
    for (int p = 0; p + 1 < steps; p++) {
        const float *lg;
        CHECK_EQ(npk_llm_forward(gen, toks[p], p, &lg), 0);
        toks[p + 1] = npk_llm_argmax(lg, c->vocab_size);
    }
    npk_llm_decoder_free(gen);

    CHECK_EQ(npk_llm_decoder_cpu(m, &ref), 0);
    int rc = npk_llm_decoder_pccx(m, NULL, &npu);
    CHECK_EQ(rc, 0);
    if (rc) {
        fprintf(stderr, "pccx decoder: %s\n", npk_errmsg());
    } else {
        npk_llm_accuracy acc;
        CHECK_EQ(npk_llm_compare(ref, npu, toks, steps, &acc), 0);
        fprintf(stderr, "pccx vs fp32: %d/%d top-1, max |dlogit| %.4f\n", acc.top1_agree, acc.positions,
                acc.max_logit_diff);
        CHECK(acc.top1_agree >= steps - 1);
        CHECK(acc.max_logit_diff < 8.0); /* per-channel INT4: about 6.5 over 200 positions (docs/llm.md) */
        CHECK(acc.max_logit_diff > 0.0); /* INT4 weights cannot reproduce fp32 exactly */

        npk_llm_stats st;
        npk_llm_stats_get(npu, &st);
        CHECK_EQ(st.tokens, steps);
        /* Device counters, per token: per layer 4 projection GEMVs (q|k|v
         * fused, o, w1|w3 fused, w2) and two RMSNorm sums of squares, the
         * final RMSNorm's sum and the classifier, and per layer the
         * softmax's GEMVs: one 1 x 1 e_max load per head but the first (the
         * host's EMAX write) and one row sum over every head. */
        CHECK_EQ(st.instr[NPK_PCCX_OP_GEMV], (uint64_t)steps * (6 * c->n_layers + 2 + c->n_layers * c->n_heads));
        CHECK_EQ(st.instr[NPK_PCCX_OP_GEMM], 0);
        CHECK(st.instr[NPK_PCCX_OP_CVO] > 0); /* softmax, RMSNorm, RoPE sequences */
        for (int i = 0; i < 7; i++) CHECK_EQ(st.gemv_on_device[i], (uint64_t)steps * c->n_layers);
        CHECK_EQ(st.gemv_on_device[7], steps);
        /* Every weight byte streamed: per layer q|k|v (one record) o w1|w3
         * (one record) w2, then the classifier; each RMSNorm's 1 x d row of
         * ones (INT4, no scales: 32 bytes). */
        uint64_t d = 64, kv = 32, hd = 172, V = 512;
        uint64_t per_tok = 5 * (rec_bytes(d + 2 * kv, d, 0) + rec_bytes(d, d, 0) + rec_bytes(2 * hd, d, 0) +
                                rec_bytes(d, hd, 0)) +
                           rec_bytes(V, d, 0) + 11 * 32;
        /* + per layer the rows of ones (no scales): 7 e_max loads of 16 bytes,
         * and the 1 x n row streamed once per head (n = position + 1) */
        uint64_t ones = 0;
        for (uint64_t p = 0; p < (uint64_t)steps; p++) ones += 5 * (7 * 16 + 8 * (((p + 2) / 2 + 15) / 16 * 16));
        CHECK_EQ(st.weight_bytes, steps * per_tok + ones);
        /* The device did the projections' MACs (and more: SFU elements). */
        uint64_t macs = 5 * (d * d * 2 + kv * d * 2 + hd * d * 3) + V * d;
        CHECK(st.device_ops >= steps * macs);
        CHECK(st.device_cycles > 0);
        /* The engines overlapped (async CVOs beside GEMVs and copies): the
         * busy time is less than the engines' summed cycles. */
        uint64_t eng = 0;
        for (int i = 0; i < 4; i++) eng += st.engine_cycles[i];
        CHECK(eng > st.device_cycles);
        CHECK(st.host_ops > 0);
    }
    npk_llm_decoder_free(npu);
    npk_llm_decoder_free(ref);

    /* A decode step (M = 1: the softmax's transfers split beside the EXPs,
     * softmax_piped) and a GEMM prefill block (M rows: one transfer each way)
     * run the same arithmetic: 40 positions one step at a time and as one
     * block give bit-identical logits at the last position. */
    {
        enum { NP = 40 };
        int pt[NP];
        for (int i = 0; i < NP; i++) pt[i] = i ? (i * 37 + 11) % c->vocab_size : NPK_LLM_BOS;
        npk_llm_pccx_opts o = {.group_size = 8};
        npk_llm_decoder *a = NULL, *b = NULL;
        CHECK_EQ(npk_llm_decoder_pccx(m, &o, &a), 0);
        CHECK_EQ(npk_llm_decoder_pccx(m, &o, &b), 0);
        if (a && b) {
            const float *la = NULL, *lb = NULL;
            for (int p = 0; p < NP; p++) CHECK_EQ(npk_llm_forward(a, pt[p], p, &la), 0);
            CHECK_EQ(npk_llm_prefill(b, pt, NP, &lb), 0);
            CHECK(la && lb && !memcmp(la, lb, sizeof(float) * (size_t)c->vocab_size));
            npk_llm_stats sa, sb;
            npk_llm_stats_get(a, &sa);
            npk_llm_stats_get(b, &sb);
            CHECK_EQ(sa.instr[NPK_PCCX_OP_GEMM], 0);
            CHECK(sb.instr[NPK_PCCX_OP_GEMM] > 0);
        }
        npk_llm_decoder_free(a);
        npk_llm_decoder_free(b);
    }

    /* w2 of layer 0 (64 x 172) with scale groups of 32: groups 32,32,32,32,32,12.
     * Only the last 12 inputs are non-zero: the output comes from the partial group alone. */
    npk_port *port = NULL;
    npk_pccx *drv = NULL;
    CHECK_EQ(npk_port_open(&port, NULL, "pccx", NULL), 0);
    if (port) CHECK_EQ(npk_pccx_open(&drv, port, NULL), 0);
    if (drv) {
        const float *w2 = m->w2; /* [64][172] */
        npk_pccx_wmat wm;
        CHECK_EQ(npk_pccx_wmat_upload(drv, w2, 64, 172, 32, &wm), 0);
        float x[172] = {0}, y[64];
        for (int k = 160; k < 172; k++) x[k] = bf16(0.25f * (float)(k - 165));
        CHECK_EQ(npk_pccx_write_f32(drv, 0, x, 172), 0);
        CHECK_EQ(npk_pccx_gemv_w(drv, 100, 0, 1, &wm, 0), 0);
        CHECK_EQ(npk_pccx_sync(drv), 0);
        CHECK_EQ(npk_pccx_read_f32(drv, 100, y, 64), 0);
        int nonzero = 0, bad = 0;
        for (int n = 0; n < 64; n++) {
            float want = bf16((float)ref_dot(w2 + n * 172, x, 172, 32));
            if (y[n] != 0.0f) nonzero++;
            if (fabsf(y[n] - want) > fabsf(want) * (1.0f / 128.0f)) {
                if (bad++ < 4) fprintf(stderr, "w2 row %d: device %g, reference %g\n", n, y[n], want);
            }
        }
        CHECK_EQ(bad, 0);
        CHECK(nonzero > 32);
        npk_pccx_close(drv);
    }
    npk_port_close(port);
    npk_llm_model_free(m);
    return CHECK_DONE();
}
