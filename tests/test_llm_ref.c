// SPDX-License-Identifier: MIT
/* The fp32 reference decoder reproduces llama2.c's greedy output for
 * stories260K byte for byte (expected-greedy-200.txt ships with the model). */
#include "check.h"
#include "llm_textbuf.h"
#include "npukit/llm.h"
#include "npukit/npu.h"

#include <stdlib.h>

#define MODEL_DIR NPUKIT_SHARED_DIR "/models/stories260K"

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = malloc(1 << 16);
    *len = fread(s, 1, (1 << 16) - 1, f);
    s[*len] = 0;
    fclose(f);
    return s;
}

int main(void) {
    npk_llm_model *m = NULL;
    npk_llm_tokenizer *t = NULL;
    CHECK_EQ(npk_llm_model_load(MODEL_DIR "/stories260K.bin", &m), 0);
    if (!m) {
        fprintf(stderr, "%s\n", npk_errmsg());
        return CHECK_DONE();
    }
    /* Header facts from the model's README. */
    CHECK_EQ(m->cfg.dim, 64);
    CHECK_EQ(m->cfg.hidden_dim, 172);
    CHECK_EQ(m->cfg.n_layers, 5);
    CHECK_EQ(m->cfg.n_heads, 8);
    CHECK_EQ(m->cfg.n_kv_heads, 4);
    CHECK_EQ(m->cfg.vocab_size, 512);
    CHECK_EQ(m->cfg.seq_len, 512);
    CHECK_EQ(m->cfg.kv_dim, 32);
    CHECK_EQ(m->cfg.shared_classifier, 1);
    CHECK(m->wcls == m->token_embedding);
    CHECK_EQ(npk_llm_tokenizer_load(MODEL_DIR "/tok512.bin", m->cfg.vocab_size, &t), 0);

    npk_llm_decoder *d = NULL;
    npk_llm_sampler s;
    CHECK_EQ(npk_llm_decoder_cpu(m, &d), 0);
    CHECK_EQ(npk_llm_sampler_init(&s, m->cfg.vocab_size, 0.0f, 1), 0);
    buf out = {calloc(1, 1), 0, 1};
    int n = npk_llm_generate(d, t, "", 200, &s, emit, &out, NULL);
    CHECK_EQ(n, 200); /* 200 steps from BOS, no BOS sampled in this text */
    emit("\n", &out); /* llama2.c ends the text with a newline */
    size_t elen = 0;
    char *expected = slurp(MODEL_DIR "/expected-greedy-200.txt", &elen);
    CHECK(expected != NULL);
    if (expected) {
        CHECK_EQ(out.n, elen);
        CHECK(out.n == elen && memcmp(out.s, expected, elen) == 0);
        if (out.n != elen || memcmp(out.s, expected, elen)) fprintf(stderr, "got:\n%s\n", out.s);
    }
    /* Positions must come in order; a gap is refused with a message. */
    npk_llm_decoder *d2 = NULL;
    const float *lg;
    CHECK_EQ(npk_llm_decoder_cpu(m, &d2), 0);
    CHECK_EQ(npk_llm_forward(d2, 1, 3, &lg), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "skips positions") != NULL);
    CHECK_EQ(npk_llm_forward(d2, 512, 0, &lg), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "outside the vocabulary") != NULL);
    CHECK_EQ(npk_llm_forward(d2, 1, 0, &lg), 0);
    /* The logits at BOS are finite and the arg-max is the first generated token ("Once"). */
    int top = npk_llm_argmax(lg, 512);
    CHECK_STR(npk_llm_decode(t, 1, top), "Once");
    npk_llm_decoder_free(d2);

    free(expected);
    free(out.s);
    npk_llm_sampler_free(&s);
    npk_llm_decoder_free(d);
    npk_llm_tokenizer_free(t);
    npk_llm_model_free(m);
    return CHECK_DONE();
}
