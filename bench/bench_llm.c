// SPDX-License-Identifier: MIT
/* LLM decode benchmark: stories260K greedy decode on the CPU reference and on
 * the pccx NPU model in the same run; prints host tokens/s for both and the
 * modeled device tokens/s. Usage: bench_llm [steps] [model] [tokenizer] */
#include "npukit/llm.h"
#include "npukit/npu.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef NPUKIT_SHARED_DIR
#define NPUKIT_SHARED_DIR "../shared"
#endif

static int run(const char *kind, npk_llm_decoder *d, const npk_llm_tokenizer *t, int steps, double *tps) {
    npk_llm_sampler s;
    if (npk_llm_sampler_init(&s, t->vocab_size, 0.0f, 1)) return -1;
    int n = npk_llm_generate(d, t, "", steps, &s, NULL, NULL, NULL);
    npk_llm_sampler_free(&s);
    if (n < 0) {
        fprintf(stderr, "bench_llm: %s: %s\n", kind, npk_errmsg());
        return -1;
    }
    npk_llm_stats st;
    npk_llm_stats_get(d, &st);
    *tps = (double)st.tokens / st.host_seconds;
    printf("%-5s %4llu tokens  host %9.1f tokens/s", kind, (unsigned long long)st.tokens, *tps);
    if (st.device_hz && st.device_cycles) {
        double sec = (double)st.device_cycles / (double)st.device_hz / (double)st.tokens;
        printf("  modeled %8.1f tokens/s (%.3f ms/token at %.0f MHz), %.0f weight bytes/token", 1.0 / sec, 1e3 * sec,
               (double)st.device_hz / 1e6, (double)st.weight_bytes / (double)st.tokens);
    }
    printf("\n");
    return 0;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 200;
    const char *mp = argc > 2 ? argv[2] : NPUKIT_SHARED_DIR "/models/stories260K/stories260K.bin";
    const char *tp = argc > 3 ? argv[3] : NPUKIT_SHARED_DIR "/models/stories260K/tok512.bin";
    npk_llm_model *m;
    npk_llm_tokenizer *t;
    if (npk_llm_model_load(mp, &m) || npk_llm_tokenizer_load(tp, m->cfg.vocab_size, &t)) {
        fprintf(stderr, "bench_llm: %s\n", npk_errmsg());
        return 1;
    }
    int rc = 0;
    double cpu_tps = 0, npu_tps = 0;
    npk_llm_decoder *cpu = NULL, *npu = NULL;
    if (npk_llm_decoder_cpu(m, &cpu) || run("cpu", cpu, t, steps, &cpu_tps)) rc = 1;
    if (npk_llm_decoder_pccx(m, NULL, &npu)) {
        fprintf(stderr, "bench_llm: pccx: %s\n", npk_errmsg());
        rc = 1;
    } else if (run("pccx", npu, t, steps, &npu_tps))
        rc = 1;
    if (!rc) printf("pccx host simulation / fp32 CPU decoder, same run: %.2fx\n", npu_tps / cpu_tps);
    npk_llm_decoder_free(cpu);
    npk_llm_decoder_free(npu);
    npk_llm_tokenizer_free(t);
    npk_llm_model_free(m);
    return rc;
}
