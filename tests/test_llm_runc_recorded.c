/* SPDX-License-Identifier: MIT */
/* llama2.c's run.c, recorded (issue 33 point 4): for the nine settings that
 * test_llm_runc compares live, tests/data/llm/runc/ holds what run.c printed and
 * a 64-bit FNV-1a hash of every logit it computed (each position's vocabulary,
 * in order, as raw float bytes), recorded once with the command in
 * tests/data/llm/README.md. This test needs no run.c binary, so the comparison
 * runs on every machine:
 *   - the fp32 CPU decoder with npukit's sampler prints exactly the recorded text;
 *   - the logits it computes along the same token sequence hash to run.c's
 *     hash, at every instruction-set level this host has.
 * test_llm_runc stays the live comparison when a binary is present. */
#include "check.h"
#include "llm_textbuf.h"
#include "npukit/cpu.h"
#include "npukit/llm.h"

#include <stdint.h>
#include <stdlib.h>

#define MODEL_DIR NPUKIT_SHARED_DIR "/models/stories260K"
#define DATA_DIR NPUKIT_SOURCE_DIR "/tests/data/llm/runc"
#define STEPS 256

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    fclose(f);
    if (s) s[n] = 0, *len = (size_t)n;
    return s;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

/* run.c's loop (and npk_llm_generate's): BOS, the prompt's tokens forced, then
 * sampled tokens until BOS or STEPS positions; the hash covers every logit. */
static uint64_t logits_hash(const npk_llm_model *m, const npk_llm_tokenizer *tk, float t, float p, unsigned seed,
                            const char *prompt) {
    npk_llm_decoder *d = NULL;
    npk_llm_sampler s;
    uint64_t h = 1469598103934665603ULL;
    int ptok[64], np = 0, V = m->cfg.vocab_size;
    CHECK_EQ(npk_llm_encode(tk, prompt ? prompt : "", 1, 0, ptok, 64, &np), 0);
    CHECK_EQ(npk_llm_decoder_cpu(m, &d), 0);
    CHECK_EQ(npk_llm_sampler_init(&s, V, t, seed), 0);
    CHECK_EQ(npk_llm_sampler_set_topp(&s, p), 0);
    if (!d) return 0;
    int token = ptok[0];
    for (int pos = 0; pos < STEPS; pos++) {
        const float *logits = NULL;
        if (npk_llm_forward(d, token, pos, &logits)) {
            CHECK(0);
            break;
        }
        h = fnv(h, logits, sizeof(float) * (size_t)V);
        int next = pos + 1 < np ? ptok[pos + 1] : npk_llm_sample(&s, logits);
        if (next == NPK_LLM_BOS) break;
        token = next;
    }
    npk_llm_sampler_free(&s);
    npk_llm_decoder_free(d);
    return h;
}

int main(void) {
    npk_llm_model *m = NULL;
    npk_llm_tokenizer *tk = NULL;
    CHECK_EQ(npk_llm_model_load(MODEL_DIR "/stories260K.bin", &m), 0);
    if (!m) return CHECK_DONE();
    CHECK_EQ(npk_llm_tokenizer_load(MODEL_DIR "/tok512.bin", m->cfg.vocab_size, &tk), 0);
    FILE *cf = fopen(DATA_DIR "/cases.txt", "r");
    CHECK(cf != NULL);
    int ncases = 0;
    char line[512];
    while (tk && cf && fgets(line, sizeof line, cf)) {
        float t, p;
        unsigned seed;
        unsigned long long want_hash;
        char file[128], prompt[128] = "";
        int k = sscanf(line, "%f %f %u %llx %127s %127[^\n]", &t, &p, &seed, &want_hash, file, prompt);
        CHECK(k >= 5);
        if (k < 5) continue;
        ncases++;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", DATA_DIR, file);
        size_t wn = 0;
        char *want = slurp(path, &wn);
        CHECK(want != NULL);
        if (!want) continue;
        /* the text, as `npu llm --device cpu` prints it (run.c ends with a newline) */
        buf got = {calloc(1, 1), 0, 1};
        npk_llm_decoder *d = NULL;
        npk_llm_sampler s;
        CHECK_EQ(npk_llm_decoder_cpu(m, &d), 0);
        CHECK_EQ(npk_llm_sampler_init(&s, m->cfg.vocab_size, t, seed), 0);
        CHECK_EQ(npk_llm_sampler_set_topp(&s, p), 0);
        CHECK(npk_llm_generate(d, tk, prompt, STEPS, &s, emit, &got, NULL) > 0);
        emit("\n", &got);
        CHECK(wn > 1);
        CHECK_STR(got.s, want);
        npk_llm_sampler_free(&s);
        npk_llm_decoder_free(d);
        /* the logits, at every instruction-set level */
        int same = got.s && !strcmp(got.s, want);
        FOR_EACH_ISA(l) {
            uint64_t h = logits_hash(m, tk, t, p, seed, prompt[0] ? prompt : NULL);
            if (h != (uint64_t)want_hash)
                fprintf(stderr, "%s at ISA %s: logits hash %016llx, run.c %016llx\n", file, npk_isa_name((npk_isa)l),
                        (unsigned long long)h, want_hash);
            CHECK_EQ(h, want_hash);
            same &= h == (uint64_t)want_hash;
        }
        npk_isa_force(NPK_ISA_AUTO);
        if (same) printf("%s: text (%zu bytes) and logits hash %016llx equal run.c's\n", file, wn, want_hash);
        free(got.s);
        free(want);
    }
    if (cf) fclose(cf);
    CHECK_EQ(ncases, 9);
    npk_llm_tokenizer_free(tk);
    npk_llm_model_free(m);
    return CHECK_DONE();
}
