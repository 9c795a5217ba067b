// SPDX-License-Identifier: MIT
/* llama2.c checkpoint and tokenizer loading with full validation. */
#include "npukit/llm.h"
#include "npukit/npu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Little-endian decoding independent of the host byte order. */
static uint32_t rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static int32_t rd_i32(const uint8_t *p) {
    uint32_t u = rd_u32(p);
    int32_t v;
    memcpy(&v, &u, 4);
    return v;
}
static float rd_f32(const uint8_t *p) {
    uint32_t u = rd_u32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int read_whole(const char *path, uint8_t **data, size_t *len) {
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return npk_err(NPK_EIO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return npk_err(NPK_EIO, "'%s' is not a regular file", path);
    }
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return npk_err(NPK_EIO, "cannot seek in '%s' (is it a regular file?)", path);
    }
    long sz = ftell(f);
    if (sz < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return npk_err(NPK_EIO, "cannot read '%s' (is it a regular file?)", path);
    }
    uint8_t *buf = malloc(sz ? (size_t)sz : 1);
    if (!buf) {
        fclose(f);
        return npk_err(NPK_ENOMEM, "out of memory reading '%s' (%ld bytes)", path, sz);
    }
    size_t r = fread(buf, 1, (size_t)sz, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || r != (size_t)sz) {
        free(buf);
        return npk_err(NPK_EIO, "cannot read '%s' (is it a directory?)", path);
    }
    *data = buf;
    *len = (size_t)sz;
    return 0;
}

/* ---- checkpoint ------------------------------------------------------------ */

static const char *hdr_names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size",
                                   "seq_len"};

int npk_llm_config_check(const char *name, const int32_t h[7], npk_llm_config *cfg) {
    static const int32_t maxv[7] = {NPK_LLM_MAX_DIM, NPK_LLM_MAX_DIM * 4, NPK_LLM_MAX_LAYERS, NPK_LLM_MAX_DIM,
                                    NPK_LLM_MAX_DIM, NPK_LLM_MAX_VOCAB, NPK_LLM_MAX_SEQ};
    for (int i = 0; i < 7; i++) {
        int64_t v = h[i];
        if (i == 5 && v < 0) v = -v; /* negative vocab_size: unshared classifier */
        if (v <= 0)
            return npk_err(NPK_EFORMAT, "%s: header field %s is %d (must be positive)", name, hdr_names[i],
                           (int)h[i]);
        if (v > maxv[i])
            return npk_err(NPK_EFORMAT, "%s: header field %s is %lld, larger than the supported %d (corrupt header?)",
                           name, hdr_names[i], (long long)v, (int)maxv[i]);
    }
    npk_llm_config c;
    memset(&c, 0, sizeof c);
    c.dim = h[0];
    c.hidden_dim = h[1];
    c.n_layers = h[2];
    c.n_heads = h[3];
    c.n_kv_heads = h[4];
    c.vocab_size = h[5] < 0 ? -h[5] : h[5];
    c.shared_classifier = h[5] > 0;
    c.seq_len = h[6];
    if (c.dim % c.n_heads)
        return npk_err(NPK_EFORMAT, "%s: n_heads %d does not divide dim %d", name, c.n_heads, c.dim);
    if (c.n_heads % c.n_kv_heads)
        return npk_err(NPK_EFORMAT, "%s: n_kv_heads %d does not divide n_heads %d", name, c.n_kv_heads, c.n_heads);
    c.head_size = c.dim / c.n_heads;
    if (c.head_size % 2)
        return npk_err(NPK_EFORMAT, "%s: head size %d (dim %d / n_heads %d) is odd; RoPE rotates pairs", name,
                       c.head_size, c.dim, c.n_heads);
    c.kv_dim = c.dim / c.n_heads * c.n_kv_heads;
    if (c.vocab_size < 3)
        return npk_err(NPK_EFORMAT, "%s: vocab_size %d has no room for <unk>, <s>, </s>", name, c.vocab_size);
    if (cfg) *cfg = c;
    return 0;
}

uint64_t npk_llm_model_bytes(const npk_llm_config *c) {
    uint64_t d = (uint64_t)c->dim, hd = (uint64_t)c->hidden_dim, L = (uint64_t)c->n_layers;
    uint64_t kv = (uint64_t)c->kv_dim, V = (uint64_t)c->vocab_size;
    uint64_t floats = V * d                  /* token_embedding */
                      + L * d                /* rms_att */
                      + L * d * d            /* wq */
                      + 2 * L * kv * d       /* wk, wv */
                      + L * d * d            /* wo */
                      + L * d                /* rms_ffn */
                      + 3 * L * hd * d       /* w1, w2, w3 */
                      + d                    /* rms_final */
                      + (uint64_t)c->seq_len * (uint64_t)c->head_size; /* two RoPE tables of seq*hs/2 */
    if (!c->shared_classifier) floats += V * d;
    return 28 + 4 * floats;
}

static void describe(char *buf, size_t n, const int32_t h[7]) {
    snprintf(buf, n, "dim %d, hidden_dim %d, n_layers %d, n_heads %d, n_kv_heads %d, vocab_size %d, seq_len %d",
             (int)h[0], (int)h[1], (int)h[2], (int)h[3], (int)h[4], (int)h[5], (int)h[6]);
}

int npk_llm_model_parse(const char *name, const uint8_t *data, size_t len, npk_llm_model **out) {
    *out = NULL;
    if (len < 28)
        return npk_err(NPK_EFORMAT, "%s: file has %zu bytes, too short for the 28-byte header", name, len);
    int32_t h[7];
    for (int i = 0; i < 7; i++) h[i] = rd_i32(data + 4 * i);
    npk_llm_config c;
    int rc = npk_llm_config_check(name, h, &c);
    if (rc) return rc;
    uint64_t need = npk_llm_model_bytes(&c);
    if ((uint64_t)len != need) {
        char d[200];
        describe(d, sizeof d, h);
        return npk_err(NPK_EFORMAT, "%s: file has %zu bytes, header (%s) needs %llu%s", name, len, d,
                       (unsigned long long)need, (uint64_t)len < need ? " (truncated)" : " (trailing data)");
    }
    npk_llm_model *m = calloc(1, sizeof *m);
    uint64_t nfloat = (need - 28) / 4 - (uint64_t)c.seq_len * (uint64_t)c.head_size;
    float *st = m ? malloc(nfloat * sizeof(float)) : NULL;
    if (!st) {
        free(m);
        return npk_err(NPK_ENOMEM, "%s: out of memory for %llu weights", name, (unsigned long long)nfloat);
    }
    m->cfg = c;
    snprintf(m->name, sizeof m->name, "%s", name);
    m->storage = st;
    const uint8_t *p = data + 28;
    float *w = st;
    /* Copy `n` floats from the file into the next slice of storage. */
#define TAKE(field, n)                                                       \
    do {                                                                     \
        uint64_t n_ = (n);                                                   \
        m->field = w;                                                        \
        for (uint64_t i_ = 0; i_ < n_; i_++, p += 4) w[i_] = rd_f32(p);      \
        w += n_;                                                             \
    } while (0)
    uint64_t d = (uint64_t)c.dim, hd = (uint64_t)c.hidden_dim, L = (uint64_t)c.n_layers;
    uint64_t kv = (uint64_t)c.kv_dim, V = (uint64_t)c.vocab_size;
    TAKE(token_embedding, V * d);
    TAKE(rms_att, L * d);
    TAKE(wq, L * d * d);
    TAKE(wk, L * kv * d);
    TAKE(wv, L * kv * d);
    TAKE(wo, L * d * d);
    TAKE(rms_ffn, L * d);
    TAKE(w1, L * hd * d);
    TAKE(w2, L * d * hd);
    TAKE(w3, L * hd * d);
    TAKE(rms_final, d);
    p += 4 * (uint64_t)c.seq_len * (uint64_t)c.head_size; /* legacy freq_cis_real/imag */
    if (c.shared_classifier)
        m->wcls = m->token_embedding;
    else
        TAKE(wcls, V * d);
#undef TAKE
    *out = m;
    return 0;
}

int npk_llm_model_load(const char *path, npk_llm_model **out) {
    uint8_t *data;
    size_t len;
    *out = NULL;
    int rc = read_whole(path, &data, &len);
    if (rc) return rc;
    rc = npk_llm_model_parse(base_name(path), data, len, out);
    free(data);
    return rc;
}

int npk_llm_model_shape(const npk_llm_config *cfg, const char *name, npk_llm_model **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return npk_err(NPK_ENOMEM, "out of memory");
    (*out)->cfg = *cfg;
    snprintf((*out)->name, sizeof (*out)->name, "%s", name ? name : "shape");
    return 0;
}

void npk_llm_model_free(npk_llm_model *m) {
    if (!m) return;
    free(m->storage);
    free(m);
}

/* ---- tokenizer ------------------------------------------------------------- */

static const npk_llm_tokenizer *sort_ctx;
static int cmp_tok(const void *a, const void *b) {
    int ia = *(const int *)a, ib = *(const int *)b;
    int c = strcmp(sort_ctx->vocab[ia], sort_ctx->vocab[ib]);
    return c ? c : (ia > ib) - (ia < ib);
}

void npk_llm_tokenizer_free(npk_llm_tokenizer *t) {
    if (!t) return;
    if (t->vocab)
        for (int i = 0; i < t->vocab_size; i++) free(t->vocab[i]);
    free(t->vocab);
    free(t->scores);
    free(t->sorted);
    free(t);
}

int npk_llm_tokenizer_parse(const char *name, const uint8_t *data, size_t len, int vocab_size,
                            npk_llm_tokenizer **out) {
    *out = NULL;
    /* at least <unk>, <s>, </s> (as the checkpoint loader requires): npk_llm_encode
     * emits the BOS (1) and EOS (2) ids, which must exist (issue 8, fuzz_llm_tokenizer) */
    if (vocab_size < 3 || vocab_size > NPK_LLM_MAX_VOCAB)
        return npk_err(NPK_EINVAL, "%s: vocabulary size %d out of range (3..%d: <unk>, <s>, </s> first)", name,
                       vocab_size, NPK_LLM_MAX_VOCAB);
    if (len < 4) return npk_err(NPK_EFORMAT, "%s: file has %zu bytes, too short for max_token_length", name, len);
    int32_t maxlen = rd_i32(data);
    if (maxlen <= 0 || maxlen > NPK_LLM_MAX_TOKEN_LENGTH)
        return npk_err(NPK_EFORMAT, "%s: max_token_length is %d (must be 1..%d)", name, (int)maxlen,
                       NPK_LLM_MAX_TOKEN_LENGTH);
    npk_llm_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return npk_err(NPK_ENOMEM, "out of memory");
    t->vocab_size = vocab_size;
    t->max_token_length = maxlen;
    t->vocab = calloc((size_t)vocab_size, sizeof *t->vocab);
    t->scores = calloc((size_t)vocab_size, sizeof *t->scores);
    t->sorted = calloc((size_t)vocab_size, sizeof *t->sorted);
    if (!t->vocab || !t->scores || !t->sorted) {
        npk_llm_tokenizer_free(t);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    size_t off = 4;
    for (int i = 0; i < vocab_size; i++) {
        if (len - off < 8) {
            npk_llm_tokenizer_free(t);
            return npk_err(NPK_EFORMAT, "%s: truncated at token %d of %d (offset %zu of %zu bytes, need 8 for score and length)",
                           name, i, vocab_size, off, len);
        }
        t->scores[i] = rd_f32(data + off);
        int32_t n = rd_i32(data + off + 4);
        off += 8;
        if (n < 0 || n > maxlen) {
            npk_llm_tokenizer_free(t);
            return npk_err(NPK_EFORMAT, "%s: token %d has length %d, outside 0..max_token_length %d", name, i,
                           (int)n, (int)maxlen);
        }
        if (len - off < (size_t)n) {
            npk_llm_tokenizer_free(t);
            return npk_err(NPK_EFORMAT, "%s: truncated in token %d of %d (offset %zu: %d text bytes, %zu left)", name,
                           i, vocab_size, off, (int)n, len - off);
        }
        t->vocab[i] = malloc((size_t)n + 1);
        if (!t->vocab[i]) {
            npk_llm_tokenizer_free(t);
            return npk_err(NPK_ENOMEM, "out of memory");
        }
        memcpy(t->vocab[i], data + off, (size_t)n);
        t->vocab[i][n] = 0;
        if (memchr(data + off, 0, (size_t)n)) {
            npk_llm_tokenizer_free(t);
            return npk_err(NPK_EFORMAT, "%s: token %d contains a NUL byte", name, i);
        }
        off += (size_t)n;
    }
    if (off != len) {
        npk_llm_tokenizer_free(t);
        return npk_err(NPK_EFORMAT,
                       "%s: %zu trailing bytes after the %d tokens the model needs (tokenizer of a larger vocabulary?)",
                       name, len - off, vocab_size);
    }
    for (int i = 0; i < 256; i++) {
        t->byte_pieces[2 * i] = (unsigned char)i;
        t->byte_pieces[2 * i + 1] = 0;
    }
    for (int i = 0; i < vocab_size; i++) t->sorted[i] = i;
    sort_ctx = t; /* qsort has no context argument in C11; loading is not reentrant-critical */
    qsort(t->sorted, (size_t)vocab_size, sizeof(int), cmp_tok);
    sort_ctx = NULL;
    *out = t;
    return 0;
}

int npk_llm_tokenizer_load(const char *path, int vocab_size, npk_llm_tokenizer **out) {
    uint8_t *data;
    size_t len;
    *out = NULL;
    int rc = read_whole(path, &data, &len);
    if (rc) return rc;
    rc = npk_llm_tokenizer_parse(base_name(path), data, len, vocab_size, out);
    free(data);
    return rc;
}

int npk_llm_token_lookup(const npk_llm_tokenizer *t, const char *text) {
    int lo = 0, hi = t->vocab_size - 1, found = -1;
    while (lo <= hi) { /* leftmost match: the lowest id among equal texts */
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(t->vocab[t->sorted[mid]], text);
        if (c < 0)
            lo = mid + 1;
        else {
            if (c == 0) found = t->sorted[mid];
            hi = mid - 1;
        }
    }
    return found;
}
