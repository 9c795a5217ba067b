// SPDX-License-Identifier: MIT
/* BPE encoding, decoding rules and the sampler, against hand-worked
 * expectations on a small hand-built vocabulary and on tok512.bin. */
#include "check.h"
#include "npukit/llm.h"
#include "npukit/npu.h"

#include <math.h>
#include <stdlib.h>

#define MODEL_DIR NPUKIT_SHARED_DIR "/models/stories260K"

/* Build a tokenizer file in memory: 3 specials, 256 byte tokens, then extras. */
typedef struct tokdef {
    const char *text;
    float score;
} tokdef;

static uint8_t *build(const tokdef *extra, int n_extra, size_t *len, int *vocab) {
    uint8_t *b = calloc(1, 1 << 16);
    size_t off = 4;
    int32_t maxlen = 7;
    memcpy(b, &maxlen, 4);
    char tmp[16];
    int v = 0;
    for (int i = 0; i < 3 + 256 + n_extra; i++, v++) {
        const char *s;
        float score = 0.0f;
        if (i == 0)
            s = "<unk>";
        else if (i == 1)
            s = "\n<s>\n";
        else if (i == 2)
            s = "\n</s>\n";
        else if (i < 259) {
            snprintf(tmp, sizeof tmp, "<0x%02X>", i - 3);
            s = tmp;
        } else {
            s = extra[i - 259].text;
            score = extra[i - 259].score;
        }
        int32_t l = (int32_t)strlen(s);
        memcpy(b + off, &score, 4);
        memcpy(b + off + 4, &l, 4);
        memcpy(b + off + 8, s, (size_t)l);
        off += 8 + (size_t)l;
    }
    *len = off;
    *vocab = v;
    return b;
}

static int enc(const npk_llm_tokenizer *t, const char *text, int bos, int *out) {
    int n = -1;
    int rc = npk_llm_encode(t, text, bos, 0, out, 64, &n);
    return rc ? rc : n;
}

/* Independent xorshift64* reference (llama2.c's random_u32). */
static uint32_t ref_rng(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

int main(void) {
    static const tokdef extra[] = {
        {" ", 0.0f},    /* 259 */
        {"a", 0.0f},    /* 260 */
        {"b", 0.0f},    /* 261 */
        {"c", 0.0f},    /* 262 */
        {"ab", 1.0f},   /* 263 */
        {"bc", 2.0f},   /* 264 */
        {"abc", 0.5f},  /* 265 */
        {" a", -1.0f},  /* 266 */
        {"\xc3\xa9", 0.0f}, /* 267: e-acute as one code point */
        {"d", 0.0f},    /* 268 */
        {"dd", 3.0f},   /* 269 */
    };
    size_t len;
    int vocab;
    uint8_t *file = build(extra, (int)(sizeof extra / sizeof extra[0]), &len, &vocab);
    npk_llm_tokenizer *t = NULL;
    CHECK_EQ(npk_llm_tokenizer_parse("hand.bin", file, len, vocab, &t), 0);
    int tk[64];
    if (t) {
        CHECK_EQ(npk_llm_token_lookup(t, "abc"), 265);
        CHECK_EQ(npk_llm_token_lookup(t, "zz"), -1);
        /* "abc": [" ",a,b,c] -> bc (2.0) beats ab (1.0) and " a" (-1) -> [" ",a,bc]
         * -> abc (0.5) beats " a" -> [" ",abc]; " abc" is no token. */
        CHECK_EQ(enc(t, "abc", 1, tk), 3);
        CHECK_EQ(tk[0], 1);
        CHECK_EQ(tk[1], 259);
        CHECK_EQ(tk[2], 265);
        /* "ab": [" ",a,b] -> ab (1.0) -> [" ",ab] */
        CHECK_EQ(enc(t, "ab", 0, tk), 2);
        CHECK_EQ(tk[0], 259);
        CHECK_EQ(tk[1], 263);
        /* "a": [" ",a] -> " a" (-1 > -1e10) -> [" a"] */
        CHECK_EQ(enc(t, "a", 0, tk), 1);
        CHECK_EQ(tk[0], 266);
        /* Unknown byte 'x' (0x78) falls back to byte token 0x78 + 3. */
        CHECK_EQ(enc(t, "x", 0, tk), 2);
        CHECK_EQ(tk[1], 0x78 + 3);
        /* A known two-byte code point is one token; an unknown one is two byte tokens. */
        CHECK_EQ(enc(t, "\xc3\xa9", 0, tk), 2);
        CHECK_EQ(tk[1], 267);
        CHECK_EQ(enc(t, "\xc3\xbc", 0, tk), 3);
        CHECK_EQ(tk[1], 0xc3 + 3);
        CHECK_EQ(tk[2], 0xbc + 3);
        /* "ddd": [" ",d,d,d] -> first "dd" pair wins the tie -> [" ",dd,d] */
        CHECK_EQ(enc(t, "ddd", 0, tk), 3);
        CHECK_EQ(tk[1], 269);
        CHECK_EQ(tk[2], 268);
        /* Empty text: no dummy prefix, just BOS. */
        CHECK_EQ(enc(t, "", 1, tk), 1);
        CHECK_EQ(tk[0], 1);
        /* EOS appended. */
        int n = 0;
        CHECK_EQ(npk_llm_encode(t, "ab", 1, 1, tk, 64, &n), 0);
        CHECK_EQ(n, 4);
        CHECK_EQ(tk[3], 2);
        /* Buffer too small is refused. */
        CHECK_EQ(npk_llm_encode(t, "abcabc", 1, 0, tk, 4, &n), -NPK_EINVAL);

        /* Decoding: leading space stripped after BOS only; byte tokens become bytes. */
        CHECK_STR(npk_llm_decode(t, 1, 266), "a");
        CHECK_STR(npk_llm_decode(t, 5, 266), " a");
        CHECK_STR(npk_llm_decode(t, 5, 3 + 0x0A), "\n");
        CHECK_STR(npk_llm_decode(t, 5, 3 + 0x41), "A");
        CHECK_EQ((unsigned char)npk_llm_decode(t, 5, 3 + 0xE9)[0], 0xE9);
        /* Printable filter: control bytes vanish, whitespace and text stay. */
        CHECK_STR(npk_llm_printable(npk_llm_decode(t, 5, 3 + 0x01)), "");
        CHECK_STR(npk_llm_printable(npk_llm_decode(t, 5, 3 + 0x0A)), "\n");
        CHECK_STR(npk_llm_printable("ab"), "ab");
        CHECK_STR(npk_llm_printable(""), "");
        npk_llm_tokenizer_free(t);
    }
    /* A vocabulary without " " cannot add the dummy prefix. */
    free(file);
    static const tokdef nospace[] = {{"a", 0.0f}};
    file = build(nospace, 1, &len, &vocab);
    CHECK_EQ(npk_llm_tokenizer_parse("nospace.bin", file, len, vocab, &t), 0);
    if (t) {
        CHECK_EQ(enc(t, "a", 1, tk), -NPK_EINVAL);
        CHECK(strstr(npk_errmsg(), "no \" \" token") != NULL);
        npk_llm_tokenizer_free(t);
    }
    free(file);

    /* The real vocabulary: encoding round-trips through decoding. */
    CHECK_EQ(npk_llm_tokenizer_load(MODEL_DIR "/tok512.bin", 512, &t), 0);
    if (t) {
        const char *texts[] = {"Once upon a time, there was a little girl named Lily.", "Hello world!\nBye",
                               "caf\xc3\xa9 \xe2\x82\xac 42"};
        for (int k = 0; k < 3; k++) {
            int buf[128], n = 0;
            CHECK_EQ(npk_llm_encode(t, texts[k], 1, 0, buf, 128, &n), 0);
            CHECK(n >= 2 && buf[0] == 1);
            char out[256] = "";
            for (int i = 1; i < n; i++) strcat(out, npk_llm_decode(t, buf[i - 1], buf[i]));
            CHECK_STR(out, texts[k]);
            /* BPE compresses: fewer tokens than bytes for plain English. */
            if (k == 0) CHECK(n < (int)strlen(texts[k]) / 2);
        }
        npk_llm_tokenizer_free(t);
    }

    /* Sampler: greedy is arg-max (first on ties); the RNG is xorshift64*. */
    float lg[4] = {0.5f, 2.0f, 2.0f, -1.0f};
    CHECK_EQ(npk_llm_argmax(lg, 4), 1);
    uint64_t a = 42, b = 42;
    for (int i = 0; i < 5; i++) CHECK_EQ(npk_llm_rng_u32(&a), ref_rng(&b));
    npk_llm_sampler s;
    CHECK_EQ(npk_llm_sampler_init(&s, 4, 0.0f, 5), 0);
    CHECK_EQ(npk_llm_sample(&s, lg), 1);
    npk_llm_sampler_free(&s);
    CHECK_EQ(npk_llm_sampler_init(&s, 4, -1.0f, 5), -NPK_EINVAL);
    /* Temperature 1 over logits {0, ln 3, -inf-ish, -inf-ish}: P = 1/4, 3/4. */
    float two[4] = {0.0f, logf(3.0f), -100.0f, -100.0f};
    CHECK_EQ(npk_llm_sampler_init(&s, 4, 1.0f, 1234), 0);
    int count1 = 0;
    for (int i = 0; i < 4000; i++) count1 += npk_llm_sample(&s, two) == 1;
    CHECK(count1 > 2850 && count1 < 3150);
    npk_llm_sampler_free(&s);
    /* The draw is the first index whose cumulative probability exceeds the coin:
     * replay the RNG independently for one draw. */
    CHECK_EQ(npk_llm_sampler_init(&s, 4, 1.0f, 99), 0);
    uint64_t st = 99;
    float coin = (float)(ref_rng(&st) >> 8) / 16777216.0f;
    CHECK_EQ(npk_llm_sample(&s, two), coin < 0.25f ? 0 : 1);
    npk_llm_sampler_free(&s);

    /* Top-p (llama2.c's sample_topp), probabilities {0.1, 0.2, 0.3, 0.4} at T = 1:
     * sorted 3 (0.4), 2 (0.3), 1 (0.2), 0 (0.1). With p = 0.5 the running sum
     * exceeds 0.5 at the second candidate, so only {3, 2} remain with mass 0.7:
     * the draw is 3 when coin*0.7 < 0.4, else 2. */
    float four[4] = {logf(0.1f), logf(0.2f), logf(0.3f), logf(0.4f)};
    CHECK_EQ(npk_llm_sampler_set_topp(&s, 1.5f), -NPK_EINVAL);
    for (uint64_t seed = 1; seed <= 64; seed++) {
        CHECK_EQ(npk_llm_sampler_init(&s, 4, 1.0f, seed), 0);
        CHECK_EQ(npk_llm_sampler_set_topp(&s, 0.5f), 0);
        uint64_t st2 = seed;
        float c = (float)(ref_rng(&st2) >> 8) / 16777216.0f;
        int got = npk_llm_sample(&s, four);
        /* recompute the mass the way the sampler does (fp32 softmax of the logits) */
        CHECK(got == 3 || got == 2);
        CHECK_EQ(got, c * 0.7f < 0.4f ? 3 : 2);
        npk_llm_sampler_free(&s);
    }
    /* Ties keep id order: {0.25 x 4} with p = 0.3 keeps ids 0 and 1 only. */
    float flat[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int seen[4] = {0};
    for (uint64_t seed = 1; seed <= 200; seed++) {
        CHECK_EQ(npk_llm_sampler_init(&s, 4, 1.0f, seed), 0);
        CHECK_EQ(npk_llm_sampler_set_topp(&s, 0.3f), 0);
        seen[npk_llm_sample(&s, flat)]++;
        npk_llm_sampler_free(&s);
    }
    CHECK(seen[0] > 0 && seen[1] > 0 && seen[2] == 0 && seen[3] == 0);
    return CHECK_DONE();
}
