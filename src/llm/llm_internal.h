// SPDX-License-Identifier: MIT
/* Internal decoder interface shared by the CPU and pccx decode paths. */
#ifndef NPUKIT_LLM_INTERNAL_H
#define NPUKIT_LLM_INTERNAL_H

#include "npukit/llm.h"

/* Host op kinds (index into npk_llm_stats.host_op_kinds). */
enum {
    LLM_HOST_EMBED = 0,     /* token embedding lookup / conversion */
    LLM_HOST_ATTENTION = 1, /* q.k scores and att.v sums */
    LLM_HOST_RESIDUAL = 2,  /* residual additions */
    LLM_HOST_NORM = 3,      /* RMSNorm pieces the ISA cannot express */
    LLM_HOST_ROPE = 4,      /* RoPE combination */
    LLM_HOST_FFN = 5,       /* SwiGLU gate */
    LLM_HOST_SOFTMAX = 6,   /* softmax pieces on the host */
    LLM_HOST_MATMUL = 7     /* projections on the host (CPU decoder) */
};

/* In-place softmax of x[n], max-subtracted (the CPU decoder's attention, the sampler; cpu_decode.c). */
void npk_llm_softmax(float *x, int n);

struct npk_llm_decoder {
    const char *kind;
    const npk_llm_model *model;
    npk_llm_stats stats;
    int next_pos; /* positions must come in order */
    int (*forward)(npk_llm_decoder *d, int token, int pos, const float **logits);
    /* positions pos..pos+n-1 at once, the logits of the last (NULL = forward one by one) */
    int (*prefill)(npk_llm_decoder *d, const int *tokens, int n, int pos, const float **logits);
    int (*finish)(npk_llm_decoder *d); /* NULL = nothing to do */
    void (*destroy)(npk_llm_decoder *d);
};

/* fn(ctx, 0..ntasks-1) on the worker pool (include/npukit/threads.h) when
 * `work` (about the multiply-adds of all tasks) pays for waking it, else on
 * the calling thread. Tasks write disjoint outputs, each with the same code
 * whatever the thread count, so results are the same bytes at every count. */
#define LLM_PAR_WORK (1u << 16)
void llm_par(int ntasks, uint64_t work, void (*fn)(void *ctx, int task), void *ctx);

#endif
