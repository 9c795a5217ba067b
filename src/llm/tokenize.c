// SPDX-License-Identifier: MIT
/* BPE encoding and token decoding with llama2.c's rules; sampling. */
#include "llm_internal.h"
#include "npukit/llm.h"
#include "npukit/npu.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int npk_llm_encode(const npk_llm_tokenizer *t, const char *text, int bos, int eos, int *tokens,
                   int max_tokens, int *n_tokens) {
    *n_tokens = 0;
    if (!text) return npk_err(NPK_EINVAL, "encode: NULL text");
    size_t tl = strlen(text);
    if ((size_t)max_tokens < tl + 3)
        return npk_err(NPK_EINVAL, "encode: %zu-byte text may need %zu tokens, buffer holds %d", tl, tl + 3,
                       max_tokens);
    /* Two tokens concatenated, plus room for a 4-byte code point. */
    char *buf = malloc((size_t)t->max_token_length * 2 + 8);
    if (!buf) return npk_err(NPK_ENOMEM, "out of memory");
    int n = 0;
    if (bos) tokens[n++] = NPK_LLM_BOS;
    if (text[0]) {
        int sp = npk_llm_token_lookup(t, " ");
        if (sp < 0) {
            free(buf);
            return npk_err(NPK_EINVAL, "encode: the vocabulary has no \" \" token for the dummy prefix");
        }
        tokens[n++] = sp;
    }
    /* One token per UTF-8 code point (at most 4 bytes), bytes as fallback. */
    size_t len = 0;
    for (const char *c = text; *c; c++) {
        if (((unsigned char)*c & 0xC0) != 0x80) len = 0; /* a new code point starts */
        buf[len++] = *c;
        buf[len] = 0;
        if (((unsigned char)c[1] & 0xC0) == 0x80 && len < 4) continue; /* continuation byte follows */
        int id = npk_llm_token_lookup(t, buf);
        if (id >= 0) {
            tokens[n++] = id;
        } else {
            for (size_t i = 0; i < len; i++) {
                int b = (unsigned char)buf[i] + 3; /* ids 0..2 are <unk> <s> </s>, then <0x00>.. */
                if (b >= t->vocab_size) {
                    free(buf);
                    return npk_err(NPK_EINVAL, "encode: byte 0x%02x needs byte token %d, vocabulary has %d",
                                   b - 3, b, t->vocab_size);
                }
                tokens[n++] = b;
            }
        }
        len = 0;
    }
    /* Merge the best-scoring adjacent pair until no pair is a token. */
    for (;;) {
        float best = -1e10f;
        int best_id = -1, best_i = -1;
        for (int i = 0; i + 1 < n; i++) {
            size_t la = strlen(t->vocab[tokens[i]]), lb = strlen(t->vocab[tokens[i + 1]]);
            memcpy(buf, t->vocab[tokens[i]], la);
            memcpy(buf + la, t->vocab[tokens[i + 1]], lb + 1);
            int id = npk_llm_token_lookup(t, buf);
            if (id >= 0 && t->scores[id] > best) {
                best = t->scores[id];
                best_id = id;
                best_i = i;
            }
        }
        if (best_i < 0) break;
        tokens[best_i] = best_id;
        memmove(tokens + best_i + 1, tokens + best_i + 2, sizeof(int) * (size_t)(n - best_i - 2));
        n--;
    }
    if (eos) tokens[n++] = NPK_LLM_EOS;
    free(buf);
    *n_tokens = n;
    return 0;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

const char *npk_llm_decode(const npk_llm_tokenizer *t, int prev, int token) {
    if (token < 0 || token >= t->vocab_size) return "";
    const char *piece = t->vocab[token];
    if (prev == NPK_LLM_BOS && piece[0] == ' ') piece++;
    /* "<0xNN>" is the raw byte NN (sentencepiece byte fallback). */
    if (piece[0] == '<' && piece[1] == '0' && piece[2] == 'x' && piece[3] && piece[4] && piece[5] == '>' &&
        !piece[6]) {
        int hi = hexval(piece[3]), lo = hexval(piece[4]);
        if (hi >= 0 && lo >= 0) return (const char *)t->byte_pieces + 2 * (hi * 16 + lo);
    }
    return piece;
}

const char *npk_llm_printable(const char *piece) {
    if (!piece || !piece[0]) return "";
    if (!piece[1]) {
        unsigned char b = (unsigned char)piece[0];
        if (!(isprint(b) || isspace(b))) return "";
    }
    return piece;
}

/* ---- sampling ---------------------------------------------------------------- */

int npk_llm_argmax(const float *logits, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

uint32_t npk_llm_rng_u32(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (uint32_t)((*s * 0x2545F4914F6CDD1Dull) >> 32);
}

float npk_llm_rng_f32(uint64_t *s) { return (float)(npk_llm_rng_u32(s) >> 8) / 16777216.0f; }

int npk_llm_sampler_init(npk_llm_sampler *s, int vocab_size, float temperature, uint64_t seed) {
    memset(s, 0, sizeof *s);
    if (!(temperature >= 0.0f) || !isfinite(temperature))
        return npk_err(NPK_EINVAL, "temperature %g must be a finite number >= 0", (double)temperature);
    s->temperature = temperature;
    s->state = seed ? seed : 1;
    s->vocab_size = vocab_size;
    s->probs = malloc(sizeof(float) * (size_t)vocab_size);
    s->order = malloc(sizeof(int) * (size_t)vocab_size);
    s->tmp = malloc(sizeof(int) * (size_t)vocab_size);
    if (!s->probs || !s->order || !s->tmp) {
        npk_llm_sampler_free(s);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    return 0;
}

int npk_llm_sampler_set_topp(npk_llm_sampler *s, float topp) {
    if (!(topp >= 0.0f && topp <= 1.0f))
        return npk_err(NPK_EINVAL, "top-p %g is outside the range 0..1", (double)topp);
    s->topp = topp;
    return 0;
}

void npk_llm_sampler_free(npk_llm_sampler *s) {
    free(s->probs);
    free(s->order);
    free(s->tmp);
    s->probs = NULL;
    s->order = s->tmp = NULL;
}

/* Stable merge sort of ids by descending p[id] (bottom-up, ping-pong buffers). */
static int *sort_desc(const float *p, int *a, int *b, int n) {
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi) b[k++] = p[a[j]] > p[a[i]] ? a[j++] : a[i++];
            while (i < mid) b[k++] = a[i++];
            while (j < hi) b[k++] = a[j++];
        }
        int *t = a;
        a = b;
        b = t;
    }
    return a;
}

/* llama2.c's sample_topp over probabilities p[n] with coin c. */
static int sample_topp(npk_llm_sampler *s, const float *p, int n, float c) {
    const float cutoff = (1.0f - s->topp) / (float)(n - 1);
    int n0 = 0;
    for (int i = 0; i < n; i++)
        if (p[i] >= cutoff) s->order[n0++] = i;
    const int *ord = sort_desc(p, s->order, s->tmp, n0);
    float cum = 0.0f;
    int last = n0 - 1;
    for (int i = 0; i < n0; i++) {
        cum += p[ord[i]];
        if (cum > s->topp) {
            last = i;
            break;
        }
    }
    float r = c * cum, cdf = 0.0f;
    for (int i = 0; i <= last; i++) {
        cdf += p[ord[i]];
        if (r < cdf) return ord[i];
    }
    return ord[last];
}

int npk_llm_sample(npk_llm_sampler *s, const float *logits) {
    int n = s->vocab_size;
    if (s->temperature == 0.0f) return npk_llm_argmax(logits, n);
    float *p = s->probs;
    for (int i = 0; i < n; i++) p[i] = logits[i] / s->temperature;
    npk_llm_softmax(p, n);
    float coin = npk_llm_rng_f32(&s->state);
    if (s->topp > 0.0f && s->topp < 1.0f && n > 1) return sample_topp(s, p, n, coin);
    float cdf = 0.0f;
    for (int i = 0; i < n; i++) {
        cdf += p[i];
        if (coin < cdf) return i;
    }
    return n - 1; /* rounding: the coin fell past the last cumulative sum */
}
