// SPDX-License-Identifier: MIT
/* Decoder front end: argument checks, timing, generation and comparison. */
#include "llm_internal.h"
#include "npukit/npu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *host_op_names[8] = {"embedding", "attention", "residual", "norm",
                                       "rope",      "swiglu",    "softmax",  "matmul"};

const char *npk_llm_host_op_name(int i) { return i >= 0 && i < 8 ? host_op_names[i] : NULL; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int npk_llm_forward(npk_llm_decoder *d, int token, int pos, const float **logits) {
    const npk_llm_config *c = &d->model->cfg;
    *logits = NULL;
    if (token < 0 || token >= c->vocab_size)
        return npk_err(NPK_EINVAL, "token %d outside the vocabulary (0..%d)", token, c->vocab_size - 1);
    if (pos < 0 || pos >= c->seq_len)
        return npk_err(NPK_EINVAL, "position %d outside the context (0..%d)", pos, c->seq_len - 1);
    if (pos > d->next_pos)
        return npk_err(NPK_EINVAL, "position %d skips positions (next is %d); the KV cache would have holes", pos,
                       d->next_pos);
    double t0 = now_s();
    int rc = d->forward(d, token, pos, logits);
    d->stats.host_seconds += now_s() - t0;
    if (rc) return rc;
    d->next_pos = pos + 1;
    d->stats.tokens++;
    return 0;
}

int npk_llm_prefill(npk_llm_decoder *d, const int *tokens, int n, const float **logits) {
    const npk_llm_config *c = &d->model->cfg;
    *logits = NULL;
    if (n <= 0 || d->next_pos + n > c->seq_len)
        return npk_err(NPK_EINVAL, "prefill of %d positions from %d outside the context (0..%d)", n, d->next_pos,
                       c->seq_len - 1);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab_size)
            return npk_err(NPK_EINVAL, "token %d outside the vocabulary (0..%d)", tokens[i], c->vocab_size - 1);
    if (!d->prefill) {
        for (int i = 0; i < n; i++) {
            int rc = npk_llm_forward(d, tokens[i], d->next_pos, logits);
            if (rc) return rc;
        }
        return 0;
    }
    double t0 = now_s();
    int rc = d->prefill(d, tokens, n, d->next_pos, logits);
    d->stats.host_seconds += now_s() - t0;
    if (rc) return rc;
    d->next_pos += n;
    d->stats.tokens += (uint64_t)n;
    return 0;
}

void npk_llm_stats_get(const npk_llm_decoder *d, npk_llm_stats *st) { *st = d->stats; }

int npk_llm_decoder_finish(npk_llm_decoder *d) { return d->finish ? d->finish(d) : 0; }

const char *npk_llm_decoder_kind(const npk_llm_decoder *d) { return d->kind; }

void npk_llm_decoder_free(npk_llm_decoder *d) {
    if (d) d->destroy(d);
}

int npk_llm_generate(npk_llm_decoder *d, const npk_llm_tokenizer *t, const char *prompt, int steps,
                     npk_llm_sampler *s, npk_llm_emit_fn emit, void *user, int *tokens_out) {
    const npk_llm_config *c = &d->model->cfg;
    if (t->vocab_size != c->vocab_size)
        return npk_err(NPK_EINVAL, "tokenizer has %d tokens, model %d", t->vocab_size, c->vocab_size);
    if (steps <= 0 || steps > c->seq_len) steps = c->seq_len;
    if (!prompt) prompt = "";
    size_t cap = strlen(prompt) + 3;
    int *ptok = malloc(sizeof(int) * cap);
    if (!ptok) return npk_err(NPK_ENOMEM, "out of memory");
    int np = 0;
    int rc = npk_llm_encode(t, prompt, 1, 0, ptok, (int)cap, &np);
    if (rc) {
        free(ptok);
        return rc;
    }
    if (np > steps) {
        free(ptok);
        return npk_err(NPK_EINVAL, "the prompt has %d tokens, more than the %d steps", np, steps);
    }
    int token = ptok[0], emitted = 0;
    /* a prompt of several tokens runs as one prefill where the decoder has one */
    const int pre = d->prefill && np > 1 ? np : 0;
    const float *plogits = NULL;
    for (int pos = 0; pos < steps; pos++) {
        const float *logits = plogits;
        if (pos == 0 && pre) rc = npk_llm_prefill(d, ptok, pre, &plogits), logits = plogits;
        else if (pos >= pre) rc = npk_llm_forward(d, token, pos, &logits);
        if (rc) {
            free(ptok);
            return npk_err_prefix(-rc, "position %d", pos);
        }
        if (pos + 1 == np) { /* the prompt phase ends here: time to first token */
            d->stats.prompt_tokens = (uint64_t)np;
            d->stats.prompt_device_cycles = d->stats.device_cycles;
            d->stats.prompt_host_seconds = d->stats.host_seconds;
        }
        int next = pos + 1 < np ? ptok[pos + 1] : npk_llm_sample(s, logits);
        if (next == NPK_LLM_BOS) break; /* llama2.c: BOS delimits sequences */
        if (tokens_out) tokens_out[emitted] = next;
        emitted++;
        if (emit) emit(npk_llm_printable(npk_llm_decode(t, token, next)), user);
        token = next;
    }
    free(ptok);
    return emitted;
}

int npk_llm_compare(npk_llm_decoder *ref, npk_llm_decoder *d, const int *tokens, int n, npk_llm_accuracy *acc) {
    memset(acc, 0, sizeof *acc);
    const int V = ref->model->cfg.vocab_size;
    if (d->model->cfg.vocab_size != V) return npk_err(NPK_EINVAL, "compare: models differ in vocabulary size");
    double sum = 0.0;
    for (int pos = 0; pos < n; pos++) {
        const float *lr, *ld;
        int rc = npk_llm_forward(ref, tokens[pos], pos, &lr);
        if (rc) return npk_err_prefix(-rc, "reference, position %d", pos);
        int top_ref = npk_llm_argmax(lr, V);
        rc = npk_llm_forward(d, tokens[pos], pos, &ld);
        if (rc) return npk_err_prefix(-rc, "%s decoder, position %d", d->kind, pos);
        if (npk_llm_argmax(ld, V) == top_ref) acc->top1_agree++;
        for (int i = 0; i < V; i++) {
            double diff = fabs((double)ld[i] - (double)lr[i]);
            if (diff > acc->max_logit_diff || diff != diff) acc->max_logit_diff = diff;
            sum += diff;
        }
        acc->positions++;
    }
    acc->mean_logit_diff = n ? sum / ((double)n * V) : 0.0;
    return 0;
}
