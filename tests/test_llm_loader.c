// SPDX-License-Identifier: MIT
/* Checkpoint and tokenizer loaders: every malformed input is refused with a
 * precise message. Corrupt copies of the real files are written to temp files. */
#include "check.h"
#include "npukit/llm.h"
#include "npukit/npu.h"

#include <stdlib.h>
#include <unistd.h>

#define MODEL_DIR NPUKIT_SHARED_DIR "/models/stories260K"

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

static char tmpdir[64];

/* Write data to <tmpdir>/name and return the path (static buffer). */
static const char *put(const char *name, const void *data, size_t len) {
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, len, f);
    fclose(f);
    return path;
}

static void put_i32(uint8_t *p, int32_t v) {
    uint32_t u = (uint32_t)v;
    p[0] = (uint8_t)u;
    p[1] = (uint8_t)(u >> 8);
    p[2] = (uint8_t)(u >> 16);
    p[3] = (uint8_t)(u >> 24);
}

/* Load a model file whose header field `field` is replaced by `value`;
 * expect NPK_EFORMAT and `msg` in the message. */
static void model_bad_field(const uint8_t *orig, size_t len, int field, int32_t value, const char *msg) {
    uint8_t *b = malloc(len);
    memcpy(b, orig, len);
    put_i32(b + 4 * field, value);
    npk_llm_model *m = (npk_llm_model *)1;
    int rc = npk_llm_model_load(put("bad.bin", b, len), &m);
    CHECK_EQ(rc, -NPK_EFORMAT);
    CHECK(m == NULL);
    if (!strstr(npk_errmsg(), msg)) {
        fprintf(stderr, "field %d = %d: message '%s' lacks '%s'\n", field, value, npk_errmsg(), msg);
        CHECK(0);
    }
    free(b);
}

static void tok_expect(const uint8_t *b, size_t len, const char *msg) {
    npk_llm_tokenizer *t = (npk_llm_tokenizer *)1;
    int rc = npk_llm_tokenizer_load(put("tok.bin", b, len), 512, &t);
    CHECK_EQ(rc, -NPK_EFORMAT);
    CHECK(t == NULL);
    if (!strstr(npk_errmsg(), msg)) {
        fprintf(stderr, "tokenizer: message '%s' lacks '%s'\n", npk_errmsg(), msg);
        CHECK(0);
    }
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/npk_llm_loader_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    size_t mlen = 0, tlen = 0;
    uint8_t *mb = slurp(MODEL_DIR "/stories260K.bin", &mlen);
    uint8_t *tb = slurp(MODEL_DIR "/tok512.bin", &tlen);
    CHECK(mb && tb);
    if (!mb || !tb) return CHECK_DONE();

    /* Size expected from the README's shapes, computed independently:
     * 28 header bytes + 4 * (emb 512*64 + 5 layers * (64 + 64*64 + 2*32*64 + 64*64 + 64 + 3*172*64)
     *                        + 64 + 2 RoPE tables of 512*8/2). */
    size_t expect = 28 + 4 * (512 * 64 + 5 * (64 + 64 * 64 + 2 * 32 * 64 + 64 * 64 + 64 + 3 * 172 * 64) + 64 +
                              2 * 512 * 4);
    CHECK_EQ(mlen, expect);

    /* Truncated by 764 bytes: the brief's example message. */
    npk_llm_model *m = NULL;
    CHECK_EQ(npk_llm_model_load(put("stories260K.bin", mb, 1041236), &m), -NPK_EFORMAT);
    CHECK_STR(npk_errmsg(),
              "stories260K.bin: file has 1041236 bytes, header (dim 64, hidden_dim 172, n_layers 5, n_heads 8, "
              "n_kv_heads 4, vocab_size 512, seq_len 512) needs 1056540 (truncated)");
    /* One byte short, one byte extra. */
    CHECK_EQ(npk_llm_model_load(put("short.bin", mb, mlen - 1), &m), -NPK_EFORMAT);
    CHECK(strstr(npk_errmsg(), "file has 1056539 bytes") && strstr(npk_errmsg(), "(truncated)"));
    uint8_t *longer = calloc(1, mlen + 4);
    memcpy(longer, mb, mlen);
    CHECK_EQ(npk_llm_model_load(put("long.bin", longer, mlen + 4), &m), -NPK_EFORMAT);
    CHECK(strstr(npk_errmsg(), "file has 1056544 bytes") && strstr(npk_errmsg(), "(trailing data)"));
    free(longer);
    /* Shorter than the header; empty. */
    CHECK_EQ(npk_llm_model_load(put("tiny.bin", mb, 10), &m), -NPK_EFORMAT);
    CHECK_STR(npk_errmsg(), "tiny.bin: file has 10 bytes, too short for the 28-byte header");
    CHECK_EQ(npk_llm_model_load(put("empty.bin", mb, 0), &m), -NPK_EFORMAT);
    /* Missing file. */
    CHECK_EQ(npk_llm_model_load("/nonexistent/x.bin", &m), -NPK_EIO);
    CHECK(strstr(npk_errmsg(), "cannot open '/nonexistent/x.bin'") != NULL);

    /* Header fields. */
    model_bad_field(mb, mlen, 0, 0, "header field dim is 0 (must be positive)");
    model_bad_field(mb, mlen, 0, -64, "header field dim is -64 (must be positive)");
    model_bad_field(mb, mlen, 1, -1, "header field hidden_dim is -1");
    model_bad_field(mb, mlen, 2, 0, "header field n_layers is 0");
    model_bad_field(mb, mlen, 3, 0, "header field n_heads is 0");
    model_bad_field(mb, mlen, 4, 0, "header field n_kv_heads is 0");
    model_bad_field(mb, mlen, 5, 0, "header field vocab_size is 0");
    model_bad_field(mb, mlen, 6, 0, "header field seq_len is 0");
    model_bad_field(mb, mlen, 3, 7, "n_heads 7 does not divide dim 64");
    model_bad_field(mb, mlen, 4, 3, "n_kv_heads 3 does not divide n_heads 8");
    model_bad_field(mb, mlen, 4, 16, "n_kv_heads 16 does not divide n_heads 8");
    model_bad_field(mb, mlen, 3, 64, "head size 1 (dim 64 / n_heads 64) is odd");
    model_bad_field(mb, mlen, 5, 0x7fffffff, "vocab_size is 2147483647, larger than the supported");
    model_bad_field(mb, mlen, 5, (int32_t)0x80000000, "vocab_size is 2147483648, larger than the supported");
    model_bad_field(mb, mlen, 5, 2, "vocab_size 2 has no room");
    model_bad_field(mb, mlen, 0, 1 << 30, "dim is 1073741824, larger than the supported");
    /* Consistent header, wrong size: hidden_dim + 1 needs 3 * 5 layers * 64 * 4 = 3840 more bytes. */
    model_bad_field(mb, mlen, 1, 173, "needs 1060380 (truncated)");
    /* Negative vocab: an unshared classifier the file does not have. */
    model_bad_field(mb, mlen, 5, -512, "vocab_size -512, seq_len 512) needs 1187612 (truncated)");

    /* The real files load. */
    CHECK_EQ(npk_llm_model_load(put("good.bin", mb, mlen), &m), 0);
    if (m) {
        /* rms_final is the last tensor before the RoPE tables: compare with the raw file bytes. */
        float last;
        memcpy(&last, mb + 28 + 4 * (expect / 4 - 7 - 2 * 512 * 4 - 1), 4);
        CHECK(m->rms_final[63] == last);
        float first;
        memcpy(&first, mb + 28, 4);
        CHECK(m->token_embedding[0] == first);
        npk_llm_model_free(m);
    }

    /* ---- tokenizer ---- */
    npk_llm_tokenizer *t = NULL;
    CHECK_EQ(npk_llm_tokenizer_load(put("tok.bin", tb, tlen), 512, &t), 0);
    if (t) {
        CHECK_EQ(t->max_token_length, 7);
        CHECK_STR(t->vocab[0], "<unk>");
        CHECK_STR(t->vocab[1], "\n<s>\n");
        CHECK_STR(t->vocab[2], "\n</s>\n");
        CHECK_STR(t->vocab[3], "<0x00>");
        CHECK_STR(t->vocab[3 + 255], "<0xFF>");
        npk_llm_tokenizer_free(t);
    }
    /* Truncations at every kind of boundary. */
    tok_expect(tb, 2, "file has 2 bytes, too short for max_token_length");
    tok_expect(tb, 4, "truncated at token 0 of 512 (offset 4 of 4 bytes");
    tok_expect(tb, 10, "truncated at token 0 of 512");
    tok_expect(tb, 13, "truncated in token 0 of 512 (offset 12: 5 text bytes, 1 left)");
    tok_expect(tb, tlen - 1, "truncated in token 511 of 512");
    /* A tokenizer for a larger vocabulary (trailing bytes). */
    uint8_t *tl = calloc(1, tlen + 8);
    memcpy(tl, tb, tlen);
    tok_expect(tl, tlen + 8, "8 trailing bytes after the 512 tokens");
    free(tl);
    /* Bad max_token_length; a token longer than it; a negative length. */
    uint8_t *tc = malloc(tlen);
    memcpy(tc, tb, tlen);
    put_i32(tc, 0);
    tok_expect(tc, tlen, "max_token_length is 0");
    put_i32(tc, -5);
    tok_expect(tc, tlen, "max_token_length is -5");
    put_i32(tc, 4);
    tok_expect(tc, tlen, "token 0 has length 5, outside 0..max_token_length 4");
    memcpy(tc, tb, tlen);
    put_i32(tc + 8, -1);
    tok_expect(tc, tlen, "token 0 has length -1");
    free(tc);
    /* Vocabulary of the model larger than the file. */
    CHECK_EQ(npk_llm_tokenizer_load(put("tok.bin", tb, tlen), 513, &t), -NPK_EFORMAT);
    CHECK(strstr(npk_errmsg(), "truncated at token 512 of 513") != NULL);

    free(mb);
    free(tb);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    CHECK_EQ(system(cmd), 0);
    return CHECK_DONE();
}
