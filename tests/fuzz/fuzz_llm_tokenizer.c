// SPDX-License-Identifier: MIT
/* libFuzzer target: llama2.c tokenizer files. The first two bytes give the
 * vocabulary size the model would announce (1..1024); the rest is the file.
 * A tokenizer the parser accepts is then used: lookup, BPE encoding of a few
 * strings (plain ASCII, multi-byte UTF-8, invalid UTF-8, byte-fallback
 * candidates) and decoding of every token, which must stay within the
 * vocabulary and never read past a piece. */
#include "npukit/llm.h"
#include "npukit/npu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    int vocab = 1 + ((data[0] | data[1] << 8) % 1024);
    npk_llm_tokenizer *t = NULL;
    int rc = npk_llm_tokenizer_parse("fuzz.tok", data + 2, size - 2, vocab, &t);
    if (rc) {
        if (t || !npk_errmsg()[0]) {
            fprintf(stderr, "tokenizer_parse failed without a message or left a tokenizer\n");
            abort();
        }
        return 0;
    }
    static const char *texts[] = {"", "a", "Once upon a time", "h\xc3\xa9llo \xe2\x82\xac", "\xff\xfe bad \xc3",
                                  "  spaces  ", "<0x41>"};
    int toks[64];
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int n = 0;
        if (npk_llm_encode(t, texts[i], 1, 1, toks, (int)strlen(texts[i]) + 3, &n) == 0) {
            if (n < 0 || n > (int)strlen(texts[i]) + 3) abort();
            for (int k = 0; k < n; k++) {
                if (toks[k] < 0 || toks[k] >= vocab) abort();
                const char *p = npk_llm_decode(t, k ? toks[k - 1] : NPK_LLM_BOS, toks[k]);
                if (p) (void)strlen(npk_llm_printable(p));
            }
        }
    }
    for (int k = 0; k < vocab; k++) {
        const char *p = npk_llm_decode(t, NPK_LLM_BOS, k);
        if (p) (void)npk_llm_token_lookup(t, p);
    }
    npk_llm_tokenizer_free(t);
    return 0;
}
