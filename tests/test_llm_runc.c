// SPDX-License-Identifier: MIT
/* Sampling agrees with llama2.c's run.c itself (issue 18 point 6): for several
 * temperature / top-p / seed triples (t = 0 among them) and one prompt, the fp32
 * CPU decoder with npukit's sampler prints exactly the text run.c prints for the
 * same stories260K checkpoint and tokenizer.
 *
 * run.c is not part of npukit: the test runs a binary given as $NPUKIT_RUNC or
 * found at ~/.cache/npukit/llama2c/run (docs/llm.md says how to build one) and is
 * skipped (exit 77, CTest's SKIP_RETURN_CODE) when there is none. Texts recorded
 * from run.c are checked without the binary by tests/llm_cli.cmaketest
 * (tests/data/llm/README.md). */
#include "check.h"
#include "llm_textbuf.h"
#include "npukit/llm.h"
#include "npukit/npu.h"

#include <stdlib.h>
#include <unistd.h>

#define MODEL_DIR NPUKIT_SHARED_DIR "/models/stories260K"
#define STEPS 256
#define SKIP 77

/* run.c's stdout for these flags (its "achieved tok/s" line goes to stderr). */
static int run_runc(const char *bin, float t, float p, unsigned seed, const char *prompt, buf *out) {
    char cmd[2048], chunk[4096];
    int n = snprintf(cmd, sizeof cmd, "'%s' '%s' -z '%s' -t %g -p %g -s %u -n %d", bin, MODEL_DIR "/stories260K.bin",
                     MODEL_DIR "/tok512.bin", (double)t, (double)p, seed, STEPS);
    if (prompt) snprintf(cmd + n, sizeof cmd - (size_t)n, " -i '%s'", prompt);
    strncat(cmd, " 2>/dev/null", sizeof cmd - strlen(cmd) - 1);
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk - 1, f)) > 0) {
        chunk[k] = 0;
        emit(chunk, out);
    }
    return pclose(f);
}

int main(void) {
    char path[1024];
    const char *e = getenv("NPUKIT_RUNC");
    if (e && *e) snprintf(path, sizeof path, "%s", e);
    else snprintf(path, sizeof path, "%s/.cache/npukit/llama2c/run", getenv("HOME") ? getenv("HOME") : ".");
    if (access(path, X_OK)) {
        printf("SKIP: no llama2.c run.c binary at %s ($NPUKIT_RUNC or ~/.cache/npukit/llama2c/run; "
               "docs/llm.md says how to build one)\n",
               path);
        return SKIP;
    }
    npk_llm_model *m = NULL;
    npk_llm_tokenizer *tk = NULL;
    CHECK_EQ(npk_llm_model_load(MODEL_DIR "/stories260K.bin", &m), 0);
    if (!m) return CHECK_DONE();
    CHECK_EQ(npk_llm_tokenizer_load(MODEL_DIR "/tok512.bin", m->cfg.vocab_size, &tk), 0);
    if (!tk) {
        npk_llm_model_free(m);
        return CHECK_DONE();
    }
    static const struct {
        float t, p;
        unsigned seed;
        const char *prompt;
    } cases[] = {
        {0.0f, 0.9f, 1, NULL},     {1.0f, 0.9f, 42, NULL},   {0.8f, 0.5f, 7, NULL},
        {1.0f, 1.0f, 3, NULL},     {1.0f, 0.0f, 5, NULL},    {1.2f, 0.95f, 12345, NULL},
        {0.5f, 0.99f, 2026, NULL}, {2.0f, 0.3f, 31337, NULL}, {1.0f, 0.9f, 5, "Once upon a time"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        buf want = {calloc(1, 1), 0, 1}, got = {calloc(1, 1), 0, 1};
        CHECK_EQ(run_runc(path, cases[i].t, cases[i].p, cases[i].seed, cases[i].prompt, &want), 0);
        npk_llm_decoder *d = NULL;
        npk_llm_sampler s;
        CHECK_EQ(npk_llm_decoder_cpu(m, &d), 0);
        CHECK_EQ(npk_llm_sampler_init(&s, m->cfg.vocab_size, cases[i].t, cases[i].seed), 0);
        CHECK_EQ(npk_llm_sampler_set_topp(&s, cases[i].p), 0);
        CHECK(npk_llm_generate(d, tk, cases[i].prompt ? cases[i].prompt : "", STEPS, &s, emit, &got, NULL) > 0);
        emit("\n", &got); /* run.c ends its text with a newline */
        CHECK(want.n > 1);
        if (want.n != got.n || memcmp(want.s, got.s, want.n)) {
            CHECK_STR(got.s, want.s);
            fprintf(stderr, "case -t %g -p %g -s %u%s%s: npukit's text differs from run.c's\n", (double)cases[i].t,
                    (double)cases[i].p, cases[i].seed, cases[i].prompt ? " -i " : "",
                    cases[i].prompt ? cases[i].prompt : "");
        } else {
            printf("-t %g -p %g -s %u%s%s: %zu bytes, same as run.c\n", (double)cases[i].t, (double)cases[i].p,
                   cases[i].seed, cases[i].prompt ? " -i " : "", cases[i].prompt ? cases[i].prompt : "", got.n);
        }
        npk_llm_sampler_free(&s);
        npk_llm_decoder_free(d);
        free(want.s);
        free(got.s);
    }
    npk_llm_tokenizer_free(tk);
    npk_llm_model_free(m);
    return CHECK_DONE();
}
