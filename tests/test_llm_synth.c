// SPDX-License-Identifier: MIT
/* Shapes and synthetic checkpoints: presets carry the published shapes,
 * bad specifications are refused, and a written checkpoint has the exact
 * llama2.c layout, deterministic contents from xorshift64*, and runs. */
#include "check.h"
#include "npukit/llm.h"
#include "npukit/npu.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

/* xorshift64* as llama2.c writes it, coded independently of src/llm. */
static float ref_f32(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    uint32_t u = (uint32_t)((*s * 0x2545F4914F6CDD1Dull) >> 32);
    return (float)(u >> 8) / 16777216.0f;
}

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

int main(void) {
    npk_llm_config c;
    /* Published shapes (llama2.c README; TinyLlama 1.1B config). */
    CHECK_EQ(npk_llm_shape_parse("stories15M", &c), 0);
    CHECK(c.dim == 288 && c.hidden_dim == 768 && c.n_layers == 6 && c.n_heads == 6 && c.n_kv_heads == 6 &&
          c.vocab_size == 32000 && c.seq_len == 256);
    CHECK_EQ(npk_llm_shape_parse("stories110M", &c), 0);
    CHECK(c.dim == 768 && c.hidden_dim == 2048 && c.n_layers == 12 && c.n_heads == 12 && c.seq_len == 1024);
    CHECK_EQ(npk_llm_shape_parse("tinyllama-1.1B", &c), 0);
    CHECK(c.dim == 2048 && c.hidden_dim == 5632 && c.n_layers == 22 && c.n_heads == 32 && c.n_kv_heads == 4 &&
          c.kv_dim == 256 && c.vocab_size == 32000);
    CHECK_EQ(npk_llm_shape_parse("stories15M,seq=512", &c), 0);
    CHECK_EQ(c.seq_len, 512);
    CHECK_EQ(npk_llm_shape_parse("dim=64,hidden=172,layers=5,heads=8,kv_heads=4,vocab=512,seq=512", &c), 0);
    CHECK(c.kv_dim == 32 && c.head_size == 8);
    /* Refusals name the problem. */
    CHECK_EQ(npk_llm_shape_parse("stories16M", &c), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "unknown preset 'stories16M'"));
    CHECK_EQ(npk_llm_shape_parse("dim=64,hidden=172", &c), -NPK_EINVAL);
    CHECK_EQ(npk_llm_shape_parse("stories15M,depth=3", &c), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "unknown key 'depth'"));
    CHECK_EQ(npk_llm_shape_parse("stories15M,dim=-4", &c), -NPK_EINVAL);
    CHECK_EQ(npk_llm_shape_parse("stories15M,heads=7", &c), -NPK_EFORMAT); /* 288 % 7 != 0 */
    CHECK_EQ(npk_llm_shape_parse("dim=64,hidden=172,layers=5,heads=8,kv_heads=4,vocab=512,stories15M", &c),
             -NPK_EINVAL);

    char dir[] = "/tmp/npk_synth_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char mpath[128], tpath[128], m2path[128];
    snprintf(mpath, sizeof mpath, "%s/m.bin", dir);
    snprintf(m2path, sizeof m2path, "%s/m2.bin", dir);
    snprintf(tpath, sizeof tpath, "%s/t.bin", dir);
    CHECK_EQ(npk_llm_shape_parse("dim=32,hidden=48,layers=2,heads=4,kv_heads=2,vocab=400,seq=16", &c), 0);
    CHECK_EQ(npk_llm_synth_write(&c, 7, mpath, tpath), 0);
    CHECK_EQ(npk_llm_synth_write(&c, 7, m2path, NULL), 0);
    size_t n1 = 0, n2 = 0;
    uint8_t *b1 = slurp(mpath, &n1), *b2 = slurp(m2path, &n2);
    CHECK(b1 && b2);
    /* exact size of the legacy layout; same seed, same bytes */
    CHECK_EQ(n1, npk_llm_model_bytes(&c));
    CHECK(n1 == n2 && memcmp(b1, b2, n1) == 0);
    int32_t hdr[7];
    memcpy(hdr, b1, sizeof hdr);
    CHECK(hdr[0] == 32 && hdr[1] == 48 && hdr[2] == 2 && hdr[3] == 4 && hdr[4] == 2 && hdr[5] == 400 && hdr[6] == 16);
    /* The first 3 embedding rows are U(-1/64, 1/64), the rest U(-1, 1), from the seed's stream. */
    uint64_t st = 7;
    const float *emb = (const float *)(b1 + 28);
    int same = 1;
    for (int i = 0; i < 400 * 32; i++) {
        float a = i < 3 * 32 ? 1.0f / 64.0f : 1.0f;
        if (emb[i] != a * (2.0f * ref_f32(&st) - 1.0f)) same = 0;
    }
    CHECK(same);
    /* a different seed gives different weights */
    CHECK_EQ(npk_llm_synth_write(&c, 8, m2path, NULL), 0);
    free(b2);
    b2 = slurp(m2path, &n2);
    CHECK(n2 == n1 && memcmp(b1 + 28, b2 + 28, 64) != 0);

    npk_llm_model *m = NULL;
    npk_llm_tokenizer *t = NULL;
    CHECK_EQ(npk_llm_model_load(mpath, &m), 0);
    CHECK_EQ(npk_llm_tokenizer_load(tpath, 400, &t), 0);
    if (m && t) {
        CHECK_STR(t->vocab[1], "\n<s>\n");
        CHECK_STR(t->vocab[3 + 'A'], "<0x41>");
        CHECK_STR(t->vocab[259], " a");
        CHECK_STR(t->vocab[260], "a");
        CHECK_STR(t->vocab[261], " b");
        CHECK_STR(t->vocab[259 + 2 * 26], " aa");
        /* the model runs: 16 positions on the fp32 decoder, logits finite */
        npk_llm_decoder *d = NULL;
        CHECK_EQ(npk_llm_decoder_cpu(m, &d), 0);
        int tok = 1, finite = 1;
        for (int pos = 0; d && pos < 16; pos++) {
            const float *lg;
            CHECK_EQ(npk_llm_forward(d, tok, pos, &lg), 0);
            for (int i = 0; i < 400; i++)
                if (!isfinite(lg[i])) finite = 0;
            tok = npk_llm_argmax(lg, 400);
        }
        CHECK(finite);
        npk_llm_decoder_free(d);
    }
    npk_llm_model_free(m);
    npk_llm_tokenizer_free(t);
    /* A failed write leaves no file: the directory does not exist. */
    char bad[160];
    snprintf(bad, sizeof bad, "%s/nodir/m.bin", dir);
    CHECK_EQ(npk_llm_synth_write(&c, 1, bad, NULL), -NPK_EIO);
    CHECK(access(bad, F_OK) != 0);
    /* vocab < 259 cannot hold the byte tokens of a tokenizer */
    npk_llm_config small;
    CHECK_EQ(npk_llm_shape_parse("dim=32,hidden=48,layers=1,heads=4,kv_heads=4,vocab=100,seq=8", &small), 0);
    CHECK_EQ(npk_llm_synth_write(&small, 1, NULL, tpath), -NPK_EINVAL);
    free(b1);
    free(b2);
    unlink(mpath);
    unlink(m2path);
    unlink(tpath);
    rmdir(dir);
    return CHECK_DONE();
}
