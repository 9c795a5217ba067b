// SPDX-License-Identifier: MIT
/* libFuzzer target: llama2.c checkpoints (npk_llm_model_parse, the same code
 * npk_llm_model_load runs on a file's bytes). A checkpoint the parser accepts
 * and that is small (the fuzzer's inputs always are) is also run through the
 * CPU decoder for the first and the last position, so that every header
 * combination the validation lets through is one the decoder can execute
 * without reading out of bounds. */
#include "npukit/llm.h"
#include "npukit/npu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    npk_llm_model *m = NULL;
    int rc = npk_llm_model_parse("fuzz.bin", data, size, &m);
    if (rc) {
        if (m || !npk_errmsg()[0]) {
            fprintf(stderr, "model_parse failed (%d) without a message or left a model\n", rc);
            abort();
        }
        return 0;
    }
    const npk_llm_config *c = &m->cfg;
    if ((uint64_t)c->seq_len * c->n_layers * c->kv_dim < (1u << 20) && c->vocab_size <= 4096 && c->dim <= 512 &&
        c->hidden_dim <= 2048) {
        npk_llm_decoder *d = NULL;
        if (npk_llm_decoder_cpu(m, &d) == 0) {
            const float *logits = NULL;
            if (npk_llm_forward(d, 0, 0, &logits) == 0 && !logits) abort();
            for (int pos = 1; pos < c->seq_len && pos < 4; pos++)
                if (npk_llm_forward(d, c->vocab_size - 1, pos, &logits)) break;
            npk_llm_decoder_free(d);
        }
    }
    npk_llm_model_free(m);
    return 0;
}
