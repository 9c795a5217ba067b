// SPDX-License-Identifier: MIT
/* npu llm-synth: write a deterministic random-weight llama2.c checkpoint and
 * tokenizer of a published model shape (for benchmarks and tests at real
 * sizes; nothing large is committed). */
#include "cli.h"
#include "npukit/llm.h"

#include <inttypes.h>
#include <string.h>

typedef struct ls_args {
    const char *shape, *out, *tok;
    uint64_t seed;
} ls_args;
static const npk_opt ls_opts[] = {
    CLI_STR("--shape", NULL, ls_args, shape, NULL, "SHAPE",
      "a preset, optionally with overrides (stories15M,seq=512), or\n"
      "dim=D,hidden=H,layers=L,heads=N,kv_heads=K,vocab=V,seq=S"),
    CLI_STR("--output", "-o", ls_args, out, NULL, "F", "the checkpoint file to write"),
    CLI_STR("--tokenizer-out", NULL, ls_args, tok, NULL, "F", "also write a tokenizer (vocab >= 259)"),
    CLI_NUM("--seed", NULL, U64, ls_args, seed, "1", 0, 0, "S", "weight RNG seed"),
};

static void help(FILE *f) {
    fprintf(f,
            "usage: npu llm-synth --shape SHAPE -o MODEL.bin [--tokenizer-out TOK.bin] [--seed S]\n\n"
            "Write a llama2.c checkpoint (legacy format, shared classifier) of SHAPE with\n"
            "deterministic random weights, and optionally a synthetic tokenizer of the same\n"
            "vocabulary size. The same shape and seed always give the same bytes.\n\n"
            "options:\n");
    cli_help_opts(ls_opts, sizeof ls_opts / sizeof ls_opts[0]);
    fprintf(f, "\npresets:\n");
    for (int i = 0; npk_llm_shape_preset_name(i); i++) {
        npk_llm_config c;
        if (npk_llm_shape_parse(npk_llm_shape_preset_name(i), &c)) continue;
        uint64_t params = (uint64_t)c.vocab_size * c.dim +
                          (uint64_t)c.n_layers * ((uint64_t)2 * c.dim * c.dim + (uint64_t)2 * c.kv_dim * c.dim +
                                                  (uint64_t)3 * c.dim * c.hidden_dim);
        fprintf(f, "  %-15s dim %d hidden %d layers %d heads %d kv_heads %d vocab %d seq %d (%.1fM parameters)\n",
                npk_llm_shape_preset_name(i), c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size,
                c.seq_len, (double)params / 1e6);
    }
}

int cmd_llm_synth(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        help(stdout);
        return 0;
    }
    ls_args A = {0};
    npk_opt_defaults(ls_opts, sizeof ls_opts / sizeof ls_opts[0], &A);
    int urc = cli_parse("llm-synth", ls_opts, sizeof ls_opts / sizeof ls_opts[0], &A, argc, argv, NULL, 0, NULL);
    if (urc) return urc;
    const char *shape = A.shape, *out = A.out, *tok = A.tok;
    uint64_t seed = A.seed;
    if (!shape) return cli_usage_error("llm-synth", "--shape is required");
    if (!out) return cli_usage_error("llm-synth", "-o MODEL.bin is required");
    npk_llm_config cfg;
    if (npk_llm_shape_parse(shape, &cfg)) return cli_usage_error("llm-synth", "%s", npk_errmsg());
    if (npk_llm_synth_write(&cfg, seed, out, tok)) return cli_fail("%s", npk_errmsg());
    fprintf(stderr, "npu llm-synth: wrote %s (%" PRIu64 " bytes)%s%s\n", out, npk_llm_model_bytes(&cfg),
            tok ? " and " : "", tok ? tok : "");
    return 0;
}
