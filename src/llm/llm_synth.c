// SPDX-License-Identifier: MIT
/* Shapes and synthetic checkpoints: parse `--shape` specifications and write
 * deterministic random-weight llama2.c checkpoints (with a matching
 * synthetic tokenizer) of published model shapes, for benchmarks and tests
 * at real sizes without shipping weights. */
#include "npukit/llm.h"
#include "npukit/npu.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Published shapes (llama2.c's TinyStories models, TinyLlama 1.1B, a 4B
 * Llama-shaped model with grouped-query attention). */
static const struct {
    const char *name;
    npk_llm_config cfg; /* dim hidden layers heads kv_heads vocab seq */
} presets[] = {
    {"stories260K", {64, 172, 5, 8, 4, 512, 512, 1, 0, 0}},
    {"stories15M", {288, 768, 6, 6, 6, 32000, 256, 1, 0, 0}},
    {"stories42M", {512, 1376, 8, 8, 8, 32000, 1024, 1, 0, 0}},
    {"stories110M", {768, 2048, 12, 12, 12, 32000, 1024, 1, 0, 0}},
    {"tinyllama-1.1B", {2048, 5632, 22, 32, 4, 32000, 2048, 1, 0, 0}},
    {"llama-4B", {3072, 8192, 32, 24, 8, 32000, 4096, 1, 0, 0}},
};

const char *npk_llm_shape_preset_name(int i) {
    return i >= 0 && i < (int)(sizeof presets / sizeof presets[0]) ? presets[i].name : NULL;
}

int npk_llm_shape_parse(const char *spec, npk_llm_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    if (!spec || !*spec) return npk_err(NPK_EINVAL, "shape: empty specification");
    char buf[512];
    if (strlen(spec) >= sizeof buf) return npk_err(NPK_EINVAL, "shape: specification longer than %zu characters", sizeof buf - 1);
    strcpy(buf, spec);
    int32_t hdr[7] = {0, 0, 0, 0, 0, 0, 0};
    int have = 0; /* bit k set: hdr[k] given */
    char *save = NULL;
    int first = 1;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), first = 0) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            if (!first) return npk_err(NPK_EINVAL, "shape: '%s' is not key=value (a preset name comes first)", tok);
            int found = 0;
            for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
                if (!strcmp(tok, presets[i].name)) {
                    const npk_llm_config *p = &presets[i].cfg;
                    int32_t v[7] = {p->dim, p->hidden_dim, p->n_layers, p->n_heads, p->n_kv_heads, p->vocab_size, p->seq_len};
                    memcpy(hdr, v, sizeof v);
                    have = 0x7f;
                    found = 1;
                }
            if (!found) return npk_err(NPK_EINVAL, "shape: unknown preset '%s' (npu llm-synth --help lists them)", tok);
            continue;
        }
        *eq = 0;
        static const char *const keys[7] = {"dim", "hidden", "layers", "heads", "kv_heads", "vocab", "seq"};
        int k = -1;
        for (int i = 0; i < 7; i++)
            if (!strcmp(tok, keys[i])) k = i;
        if (k < 0) return npk_err(NPK_EINVAL, "shape: unknown key '%s' (dim, hidden, layers, heads, kv_heads, vocab, seq)", tok);
        char *end;
        errno = 0;
        long long v = strtoll(eq + 1, &end, 10);
        if (end == eq + 1 || *end || errno || v <= 0 || v > INT32_MAX)
            return npk_err(NPK_EINVAL, "shape: %s='%s' is not a positive number in range", tok, eq + 1);
        hdr[k] = (int32_t)v;
        have |= 1 << k;
    }
    if (have != 0x7f)
        return npk_err(NPK_EINVAL, "shape: give a preset or all of dim, hidden, layers, heads, kv_heads, vocab, seq");
    return npk_llm_config_check("shape", hdr, cfg);
}

/* Deterministic uniform weights in [-a, a) from llama2.c's xorshift64*. */
static int write_uniform(FILE *f, uint64_t *rng, uint64_t n, float a, float *buf, size_t cap) {
    while (n) {
        size_t k = n < cap ? (size_t)n : cap;
        for (size_t i = 0; i < k; i++) buf[i] = a * (2.0f * npk_llm_rng_f32(rng) - 1.0f);
        if (fwrite(buf, sizeof(float), k, f) != k) return -1;
        n -= k;
    }
    return 0;
}

static int write_const(FILE *f, uint64_t n, float v, float *buf, size_t cap) {
    for (size_t i = 0; i < cap; i++) buf[i] = v;
    while (n) {
        size_t k = n < cap ? (size_t)n : cap;
        if (fwrite(buf, sizeof(float), k, f) != k) return -1;
        n -= k;
    }
    return 0;
}

/* A temporary file beside `path` (PATH.tmp-XXXXXX), renamed into place by
 * npk_llm_synth_write once every output is complete; errors name `path`. */
static FILE *open_tmp(const char *path, char *tmp, size_t cap) {
    if ((size_t)snprintf(tmp, cap, "%s.tmp-XXXXXX", path) >= cap) {
        npk_err(NPK_EINVAL, "path '%s' is too long", path);
        return NULL;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        npk_err(NPK_EIO, "cannot create '%s': %s", path, strerror(errno));
        tmp[0] = 0;
        return NULL;
    }
    mode_t um = umask(0);
    umask(um);
    fchmod(fd, 0666 & ~um); /* the mode fopen would give */
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(tmp);
        tmp[0] = 0;
        npk_err(NPK_ENOMEM, "out of memory");
    }
    return f;
}

/* Flush and close a finished temporary; on failure remove it (error names `path`). */
static int close_tmp(FILE *f, int bad, char *tmp, const char *path) {
    errno = 0;
    if (fflush(f) != 0 || ferror(f)) bad = 1;
    int e = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        unlink(tmp);
        tmp[0] = 0;
        return npk_err(NPK_EIO, "cannot write '%s': %s", path, strerror(e ? e : EIO));
    }
    return 0;
}

static int write_model(const npk_llm_config *c, uint64_t seed, const char *path, char *tmp, size_t tcap) {
    FILE *f = open_tmp(path, tmp, tcap);
    if (!f) return -NPK_EIO;
    const size_t cap = 1 << 16;
    float *buf = malloc(cap * sizeof(float));
    if (!buf) {
        fclose(f);
        unlink(tmp);
        tmp[0] = 0;
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    int32_t hdr[7] = {c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, c->vocab_size, c->seq_len};
    uint64_t rng = seed ? seed : 1;
    const uint64_t D = (uint64_t)c->dim, H = (uint64_t)c->hidden_dim, L = (uint64_t)c->n_layers,
                   KV = (uint64_t)c->kv_dim, V = (uint64_t)c->vocab_size, S = (uint64_t)c->seq_len,
                   HS = (uint64_t)c->head_size;
    /* Scales keep activations O(1): a projection with fan-in n gets U(-1/sqrt n, 1/sqrt n). */
    if (V < 3) {
        fclose(f);
        unlink(tmp);
        tmp[0] = 0;
        free(buf);
        return npk_err(NPK_EINVAL, "a synthetic checkpoint needs vocab >= 3");
    }
    const float a_d = 1.0f / sqrtf((float)D), a_h = 1.0f / sqrtf((float)H);
    int bad = fwrite(hdr, sizeof hdr, 1, f) != 1;
    /* token_embedding [vocab][dim]: the three special tokens' rows are scaled
     * by 1/64 so that, through the shared classifier, BOS/EOS are rarely the
     * arg-max (BOS ends generation) */
    bad = bad || write_uniform(f, &rng, 3 * D, 1.0f / 64.0f, buf, cap);
    bad = bad || write_uniform(f, &rng, (V - 3) * D, 1.0f, buf, cap);
    bad = bad || write_const(f, L * D, 1.0f, buf, cap);            /* rms_att [layer][dim] */
    bad = bad || write_uniform(f, &rng, L * D * D, a_d, buf, cap); /* wq [layer][dim][dim] */
    bad = bad || write_uniform(f, &rng, L * KV * D, a_d, buf, cap); /* wk [layer][kv_dim][dim] */
    bad = bad || write_uniform(f, &rng, L * KV * D, a_d, buf, cap); /* wv [layer][kv_dim][dim] */
    bad = bad || write_uniform(f, &rng, L * D * D, a_d, buf, cap); /* wo [layer][dim][dim] */
    bad = bad || write_const(f, L * D, 1.0f, buf, cap);            /* rms_ffn [layer][dim] */
    bad = bad || write_uniform(f, &rng, L * H * D, a_d, buf, cap); /* w1 [layer][hidden][dim] */
    bad = bad || write_uniform(f, &rng, L * D * H, a_h, buf, cap); /* w2 [layer][dim][hidden] */
    bad = bad || write_uniform(f, &rng, L * H * D, a_d, buf, cap); /* w3 [layer][hidden][dim] */
    bad = bad || write_const(f, D, 1.0f, buf, cap);                /* rms_final [dim] */
    /* legacy RoPE tables freq_cis_real/imag [seq][head_size/2] (readers skip them) */
    for (int part = 0; part < 2 && !bad; part++)
        for (uint64_t p = 0; p < S && !bad; p++) {
            for (uint64_t i = 0; i < HS / 2; i++) {
                float fr = (float)p / powf(10000.0f, (float)(2 * i) / (float)HS);
                buf[i] = part ? sinf(fr) : cosf(fr);
            }
            bad = fwrite(buf, sizeof(float), HS / 2, f) != HS / 2;
        }
    free(buf);
    return close_tmp(f, bad, tmp, path);
}

/* Token i >= 259 gets a distinct lower-case word: bijective base 26 of
 * (i - 259) / 2, with a leading space when i - 259 is even (as sentencepiece words). */
static void word(int i, char *out) {
    unsigned k = (unsigned)(i - 259) / 2 + 1;
    char rev[16];
    int n = 0;
    while (k) {
        k--;
        rev[n++] = (char)('a' + k % 26);
        k /= 26;
    }
    int o = 0;
    if ((i - 259) % 2 == 0) out[o++] = ' ';
    while (n) out[o++] = rev[--n];
    out[o] = 0;
}

static void token_text(int i, char *s, size_t cap) {
    if (i < 3)
        snprintf(s, cap, "%s", i == 0 ? "<unk>" : i == 1 ? "\n<s>\n" : "\n</s>\n");
    else if (i < 259)
        snprintf(s, cap, "<0x%02X>", i - 3);
    else
        word(i, s);
}

static int write_tokenizer(int vocab, const char *path, char *tmp, size_t tcap) {
    if (vocab < 259)
        return npk_err(NPK_EINVAL, "a synthetic tokenizer needs vocab >= 259 (3 special + 256 byte tokens), not %d", vocab);
    FILE *f = open_tmp(path, tmp, tcap);
    if (!f) return -NPK_EIO;
    int32_t max_len = 0;
    char s[32];
    for (int i = 0; i < vocab; i++) {
        token_text(i, s, sizeof s);
        if ((int32_t)strlen(s) > max_len) max_len = (int32_t)strlen(s);
    }
    int bad = fwrite(&max_len, 4, 1, f) != 1;
    for (int i = 0; i < vocab && !bad; i++) {
        token_text(i, s, sizeof s);
        float score = i < 259 ? 0.0f : -(float)(i - 259);
        int32_t len = (int32_t)strlen(s);
        bad = fwrite(&score, 4, 1, f) != 1 || fwrite(&len, 4, 1, f) != 1 || fwrite(s, 1, (size_t)len, f) != (size_t)len;
    }
    return close_tmp(f, bad, tmp, path);
}

int npk_llm_synth_write(const npk_llm_config *cfg, uint64_t seed, const char *model_path, const char *tok_path) {
    /* Both files are written completely to temporaries first and renamed into
     * place only then, so a failure (e.g. the tokenizer's folder missing)
     * leaves an existing checkpoint untouched. The tokenizer goes first: it is
     * small and its checks (vocab >= 259) fail fast. */
    char mtmp[4096] = "", ttmp[4096] = "";
    int rc = tok_path ? write_tokenizer(cfg->vocab_size, tok_path, ttmp, sizeof ttmp) : 0;
    if (!rc && model_path) rc = write_model(cfg, seed, model_path, mtmp, sizeof mtmp);
    if (!rc && model_path) {
        if (rename(mtmp, model_path) != 0) rc = npk_err(NPK_EIO, "cannot create '%s': %s", model_path, strerror(errno));
        else mtmp[0] = 0;
    }
    if (!rc && tok_path) {
        if (rename(ttmp, tok_path) != 0) rc = npk_err(NPK_EIO, "cannot create '%s': %s", tok_path, strerror(errno));
        else ttmp[0] = 0;
    }
    if (mtmp[0]) unlink(mtmp);
    if (ttmp[0]) unlink(ttmp);
    return rc;
}
