// SPDX-License-Identifier: MIT
/* pccx timing-only decode (npk_llm_pccx_opts.timing_only, device option
 * timing_only=1): with no weights and no arithmetic it issues the functional
 * run's instructions and gives exactly its cycles and every device counter,
 * on stories260K (the trained model) and on the stories15M shape (a
 * deterministic random checkpoint written here). Also: a functional decoder
 * refuses a model without weights, and the 15M shape is refused when L2 is
 * too small for its activations (device option l2_kib). */
#include "check.h"
#include "npukit/llm.h"
#include "npukit/npu.h"

#include <stdio.h>
#include <string.h>

/* Run positions 0..n-1, the first P as one prefill (GEMM blocks; a fixed
 * prompt), the rest one step each (greedy tokens in a functional run, token
 * 0 in a timing-only one: timing does not depend on the values), and return
 * the decoder's counters. */
static int run(npk_llm_model *m, int timing, int P, int n, npk_llm_stats *st, int *nonzero_logits) {
    npk_llm_pccx_opts o = {0};
    o.timing_only = timing;
    npk_llm_decoder *d = NULL;
    int rc = npk_llm_decoder_pccx(m, &o, &d);
    CHECK_EQ(rc, 0);
    if (rc) {
        fprintf(stderr, "%s\n", npk_errmsg());
        return rc;
    }
    int tok = NPK_LLM_BOS;
    *nonzero_logits = 0;
    if (P) {
        int prompt[8] = {NPK_LLM_BOS, 300, 301, 302, 303, 304, 305, 306};
        const float *l = NULL;
        if (timing) memset(prompt, 0, sizeof prompt);
        rc = npk_llm_prefill(d, prompt, P, &l);
        CHECK_EQ(rc, 0);
        for (int i = 0; !rc && i < m->cfg.vocab_size; i++) *nonzero_logits += l[i] != 0.0f;
        tok = timing || rc ? 0 : npk_llm_argmax(l, m->cfg.vocab_size);
        if (tok == NPK_LLM_BOS) tok = 3;
    }
    for (int pos = P; pos < n && !rc; pos++) {
        const float *l = NULL;
        rc = npk_llm_forward(d, tok, pos, &l);
        CHECK_EQ(rc, 0);
        if (rc) break;
        for (int i = 0; i < m->cfg.vocab_size; i++) *nonzero_logits += l[i] != 0.0f;
        tok = timing ? 0 : npk_llm_argmax(l, m->cfg.vocab_size);
        if (tok == NPK_LLM_BOS) tok = 3;
    }
    npk_llm_stats_get(d, st);
    npk_llm_decoder_free(d);
    return rc;
}

static void same_counters(npk_llm_model *m, int P, int n) {
    npk_llm_model *shape = NULL;
    CHECK_EQ(npk_llm_model_shape(&m->cfg, "shape", &shape), 0);
    if (!shape) return;
    npk_llm_stats f, t;
    int nzf = 0, nzt = 0;
    memset(&f, 0, sizeof f);
    memset(&t, 0, sizeof t);
    if (!run(m, 0, P, n, &f, &nzf) && !run(shape, 1, P, n, &t, &nzt)) {
        CHECK_EQ(f.tokens, (uint64_t)n);
        CHECK_EQ(t.tokens, (uint64_t)n);
        CHECK(f.device_cycles > 0);
        CHECK_EQ(t.device_cycles, f.device_cycles);
        CHECK_EQ(t.instr_total, f.instr_total);
        for (int i = 0; i < 5; i++) CHECK_EQ(t.instr[i], f.instr[i]);
        for (int i = 0; i < 4; i++) CHECK_EQ(t.engine_cycles[i], f.engine_cycles[i]);
        CHECK_EQ(t.weight_bytes, f.weight_bytes);
        CHECK_EQ(t.memcpy_bytes, f.memcpy_bytes);
        CHECK_EQ(t.device_macs, f.device_macs);
        for (int i = 0; i < 8; i++) CHECK_EQ(t.gemv_on_device[i], f.gemv_on_device[i]);
        CHECK(nzf > 0);   /* the functional run computed logits */
        CHECK_EQ(nzt, 0); /* the timing-only run computed none */
    }
    npk_llm_model_free(shape);
}

int main(void) {
    npk_llm_model *m = NULL;
    CHECK_EQ(npk_llm_model_load(NPUKIT_SHARED_DIR "/models/stories260K/stories260K.bin", &m), 0);
    if (m) {
        same_counters(m, 0, 12);
        same_counters(m, 7, 12); /* a 7-token prompt as one GEMM block */
        npk_llm_model *shape = NULL;
        CHECK_EQ(npk_llm_model_shape(&m->cfg, "bare", &shape), 0);
        npk_llm_decoder *d = NULL;
        CHECK(npk_llm_decoder_pccx(shape, NULL, &d) < 0); /* no weights: timing-only only */
        CHECK(strstr(npk_errmsg(), "no weights") != NULL);
        npk_llm_model_free(shape);
        npk_llm_model_free(m);
    }

    /* The stories15M shape: a deterministic random checkpoint. */
    npk_llm_config cfg;
    CHECK_EQ(npk_llm_shape_parse("stories15M", &cfg), 0);
    const char *mp = "test_llm_timing-15M.bin", *tp = "test_llm_timing-15M.tok";
    CHECK_EQ(npk_llm_synth_write(&cfg, 7, mp, tp), 0);
    m = NULL;
    CHECK_EQ(npk_llm_model_load(mp, &m), 0);
    if (m) {
        same_counters(m, 0, 3);
        same_counters(m, 2, 3);
        npk_llm_pccx_opts o = {0};
        o.dev_opts = "l2_kib=16"; /* 1,024 words: the 32000 logits alone need 4,000 */
        npk_llm_decoder *d = NULL;
        CHECK(npk_llm_decoder_pccx(m, &o, &d) < 0);
        CHECK(strstr(npk_errmsg(), "l2_kib") != NULL);
        npk_llm_model_free(m);
    }
    remove(mp);
    remove(tp);
    return CHECK_DONE();
}
