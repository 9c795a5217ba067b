// SPDX-License-Identifier: MIT
/*
 * npukit LLM decode: llama2.c checkpoints and tokenizers, an fp32 CPU
 * reference decoder, sampling, and a decode path on the pccx NPU.
 *
 * Model file (llama2.c "legacy" format, little-endian):
 *   int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
 *   (vocab_size > 0: the classifier shares the token embedding;
 *    vocab_size < 0: |vocab_size| tokens and a separate classifier at the end)
 *   float token_embedding[vocab][dim]
 *   float rms_att[layer][dim]
 *   float wq[layer][dim][dim]          (row = output channel)
 *   float wk[layer][kv_dim][dim]
 *   float wv[layer][kv_dim][dim]
 *   float wo[layer][dim][dim]
 *   float rms_ffn[layer][dim]
 *   float w1[layer][hidden][dim]
 *   float w2[layer][dim][hidden]
 *   float w3[layer][hidden][dim]
 *   float rms_final[dim]
 *   float freq_cis_real[seq_len][head_size/2]   (legacy RoPE tables, skipped)
 *   float freq_cis_imag[seq_len][head_size/2]
 *   float wcls[vocab][dim]             (only when vocab_size < 0)
 * with head_size = dim / n_heads and kv_dim = dim * n_kv_heads / n_heads.
 *
 * Tokenizer file: int32 max_token_length, then for each of the model's
 * vocab_size tokens: float score, int32 length, `length` bytes (no NUL).
 *
 * Every loader checks the header fields and the exact file size and fails
 * with NPK_EFORMAT and a message naming the file and the inconsistency.
 */
#ifndef NPUKIT_LLM_H
#define NPUKIT_LLM_H

#include "npukit/energy.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Limits the loaders accept (larger values are rejected as corrupt). */
#define NPK_LLM_MAX_DIM 65536
#define NPK_LLM_MAX_LAYERS 1024
#define NPK_LLM_MAX_VOCAB (1 << 20)
#define NPK_LLM_MAX_SEQ (1 << 20)
#define NPK_LLM_MAX_TOKEN_LENGTH 4096

/* Special token ids of the llama2.c sentencepiece vocabulary. */
#define NPK_LLM_BOS 1
#define NPK_LLM_EOS 2

/* Model hyper-parameters (from the checkpoint header). */
typedef struct npk_llm_config {
    int dim;              /* transformer width */
    int hidden_dim;       /* FFN hidden width */
    int n_layers;
    int n_heads;          /* query heads */
    int n_kv_heads;       /* key/value heads (grouped-query attention) */
    int vocab_size;       /* |header vocab_size| */
    int seq_len;          /* maximum context */
    int shared_classifier;/* 1: classifier = token embedding */
    int head_size;        /* dim / n_heads */
    int kv_dim;           /* dim * n_kv_heads / n_heads */
} npk_llm_config;

/* A loaded checkpoint: fp32 weights, shapes as in the file layout above. */
typedef struct npk_llm_model {
    npk_llm_config cfg;
    char name[256];          /* file name used in messages */
    float *token_embedding;  /* [vocab][dim] */
    float *rms_att;          /* [layer][dim] */
    float *wq;               /* [layer][dim][dim] */
    float *wk;               /* [layer][kv_dim][dim] */
    float *wv;               /* [layer][kv_dim][dim] */
    float *wo;               /* [layer][dim][dim] */
    float *rms_ffn;          /* [layer][dim] */
    float *w1;               /* [layer][hidden][dim] */
    float *w2;               /* [layer][dim][hidden] */
    float *w3;               /* [layer][hidden][dim] */
    float *rms_final;        /* [dim] */
    float *wcls;             /* [vocab][dim] (== token_embedding when shared) */
    float *storage;          /* owns every tensor above */
} npk_llm_model;

/* Check a header (7 int32 as in the file) and fill *cfg. `name` is used in
 * the message. Returns 0 or -NPK_EFORMAT. */
int npk_llm_config_check(const char *name, const int32_t hdr[7], npk_llm_config *cfg);
/* Number of bytes a checkpoint with this configuration must have. */
uint64_t npk_llm_model_bytes(const npk_llm_config *cfg);

/* Parse a checkpoint from memory (`name` for messages) / load it from a file.
 * Returns 0 or a negative npk_status (NPK_EFORMAT for bad content, NPK_EIO,
 * NPK_ENOMEM). */
int npk_llm_model_parse(const char *name, const uint8_t *data, size_t len, npk_llm_model **out);
int npk_llm_model_load(const char *path, npk_llm_model **out);
void npk_llm_model_free(npk_llm_model *m);
/* A model of shape *cfg without weights (every tensor pointer NULL), for the
 * pccx decoder's timing-only mode (npk_llm_pccx_opts.timing_only); `name` is
 * used in messages. Free it with npk_llm_model_free. */
int npk_llm_model_shape(const npk_llm_config *cfg, const char *name, npk_llm_model **out);

/* ---- tokenizer ------------------------------------------------------------ */

typedef struct npk_llm_tokenizer {
    int vocab_size;
    int max_token_length;
    char **vocab;            /* [vocab_size] NUL-terminated token texts */
    float *scores;           /* [vocab_size] merge scores */
    int *sorted;             /* [vocab_size] token ids sorted by text (for lookup) */
    unsigned char byte_pieces[512]; /* 256 one-byte strings for <0xNN> tokens */
} npk_llm_tokenizer;

/* Parse / load a tokenizer holding exactly `vocab_size` tokens. Errors:
 * NPK_EFORMAT for a truncated file, a token longer than max_token_length,
 * a non-positive max_token_length, or trailing bytes. */
int npk_llm_tokenizer_parse(const char *name, const uint8_t *data, size_t len, int vocab_size,
                            npk_llm_tokenizer **out);
int npk_llm_tokenizer_load(const char *path, int vocab_size, npk_llm_tokenizer **out);
void npk_llm_tokenizer_free(npk_llm_tokenizer *t);

/* Id of the token whose text is exactly `text`, or -1. */
int npk_llm_token_lookup(const npk_llm_tokenizer *t, const char *text);

/* llama2.c's BPE encoder: optional BOS, a dummy " " prefix when text is
 * non-empty, UTF-8 code points looked up (unknown ones fall back to byte
 * tokens <0xNN> = byte + 3), then repeatedly merge the adjacent pair whose
 * merged text is a token with the highest score (first such pair on ties),
 * optional EOS. tokens must hold max_tokens entries; strlen(text) + 3 is
 * always enough. Returns 0 or -NPK_EINVAL (too many tokens, or a byte
 * fallback token that the vocabulary does not have). */
int npk_llm_encode(const npk_llm_tokenizer *t, const char *text, int bos, int eos, int *tokens,
                   int max_tokens, int *n_tokens);

/* The text printed for `token` following `prev`: a leading space is
 * stripped after BOS; "<0xNN>" tokens become the single byte NN. */
const char *npk_llm_decode(const npk_llm_tokenizer *t, int prev, int token);
/* llama2.c's safe_printf filter: returns `piece`, or "" for an empty piece
 * or a single byte that is neither printable nor whitespace. */
const char *npk_llm_printable(const char *piece);

/* ---- sampling --------------------------------------------------------------- */

/* Index of the largest logit (first one on ties). */
int npk_llm_argmax(const float *logits, int n);

/* The sampler's random number generator is llama2.c's xorshift64*:
 *   s ^= s >> 12; s ^= s << 25; s ^= s >> 27; u32 = (s * 0x2545F4914F6CDD1D) >> 32
 * and a uniform float in [0,1) is (u32 >> 8) / 16777216. The state starts
 * at the seed (seed 0 is replaced by 1, xorshift's state must be non-zero). */
uint32_t npk_llm_rng_u32(uint64_t *state);
float npk_llm_rng_f32(uint64_t *state);

typedef struct npk_llm_sampler {
    float temperature;  /* 0 = greedy (argmax) */
    float topp;         /* nucleus mass in (0,1); 0 or >= 1 = plain multinomial */
    uint64_t state;     /* RNG state */
    float *probs;       /* [vocab] scratch */
    int *order;         /* [vocab] scratch: candidate ids sorted for top-p */
    int *tmp;           /* [vocab] scratch for the stable sort */
    int vocab_size;
} npk_llm_sampler;

/* A sampler with top-p off (plain multinomial when temperature > 0). */
int npk_llm_sampler_init(npk_llm_sampler *s, int vocab_size, float temperature, uint64_t seed);
/* Set the nucleus mass: 0 <= topp <= 1 (0 and 1 turn top-p off, as in
 * llama2.c). Returns 0 or -NPK_EINVAL. */
int npk_llm_sampler_set_topp(npk_llm_sampler *s, float topp);
void npk_llm_sampler_free(npk_llm_sampler *s);
/* Greedy when temperature == 0. Otherwise probs = softmax(logits / T) in fp32
 * and one coin c = npk_llm_rng_f32() per draw, exactly as llama2.c run.c:
 *  - top-p off: the first i whose running sum of probs exceeds c;
 *  - top-p on: candidates are the ids with prob >= (1 - topp) / (vocab - 1),
 *    sorted by descending probability (ties keep id order: a stable sort),
 *    truncated after the first one where the running sum S exceeds topp
 *    (all of them if it never does), and the draw is the first candidate
 *    whose running sum exceeds c * S (the last kept one on rounding).
 * With the same seed, temperature and top-p, the tokens equal run.c's
 * `-s -t -p` output for the same logits. */
int npk_llm_sample(npk_llm_sampler *s, const float *logits);

/* ---- decoders ------------------------------------------------------------- */

/* A decoder runs one transformer step per call: token at position pos in,
 * logits [vocab] out. Positions must be fed in order 0, 1, 2, ... */
typedef struct npk_llm_decoder npk_llm_decoder;

/* Work counters of a decoder (totals since creation). */
typedef struct npk_llm_stats {
    uint64_t tokens;            /* forward steps run */
    uint64_t instr[16];         /* pccx instructions issued, by opcode (0 GEMV .. 4 CVO) */
    uint64_t instr_total;
    uint64_t weight_bytes;      /* bytes streamed through the weight window (INT4 + scales) */
    uint64_t memcpy_bytes;      /* bytes moved by MEMCPY (host <-> L2) */
    uint64_t host_bytes;        /* bytes the host driver wrote/read in device memory */
    uint64_t device_cycles;     /* modeled device cycles */
    uint64_t device_hz;         /* device clock */
    uint64_t device_ops;        /* arithmetic ops done on the device (MAC = 1, SFU element = 1) */
    uint64_t host_ops;          /* arithmetic ops done on the host (same units) */
    uint64_t host_op_kinds[8];  /* host ops by step, see npk_llm_host_op_name() */
    uint64_t gemv_on_device[8]; /* projections run as device GEMV: q k v o w1 w2 w3 cls */
    double host_seconds;        /* wall time spent inside forward() */
    uint64_t device_macs;       /* multiply-accumulates of the device's GEMV/GEMM */
    uint64_t engine_cycles[4];  /* summed instruction cycles per pccx engine: gemv, gemm, sfu, dma */
    /* has_energy = 1 (a device decoder whose port sees the model's energy,
     * docs/energy.md): the device energy of the forward steps in pJ by class
     * (leakage of the area over device_cycles included), area and node */
    int has_energy;
    npk_energy energy;
    npk_area area;
    uint32_t tech_nm;
    uint32_t device_macs_per_cycle; /* the device's GEMV peak (32 x lanes on pccx) */
    /* npk_llm_generate's prompt phase (BOS and the prompt's tokens, forced):
     * positions, device cycles and host seconds up to and including the last
     * prompt position, whose logits give the first generated token */
    uint64_t prompt_tokens, prompt_device_cycles;
    double prompt_host_seconds;
} npk_llm_stats;

/* Names of the host_op_kinds entries ("attention", "residual", ...), NULL past the end. */
const char *npk_llm_host_op_name(int i);

/* The fp32 reference decoder on the CPU (llama2.c semantics). */
int npk_llm_decoder_cpu(const npk_llm_model *m, npk_llm_decoder **out);

/* The largest group size (the GEMV group fields are 16 bits). */
#define NPK_LLM_PCCX_MAX_GROUP 65535
/* npu llm's default group size: groups of 8 inputs reach 90% top-1 agreement
 * with fp32 on stories260K under teacher forcing (docs/llm.md). */
#define NPK_LLM_PCCX_DEFAULT_GROUP 8
#define NPK_LLM_PCCX_DEFAULT_GROUP_TEXT "8"

/* Options of the pccx decode path. */
typedef struct npk_llm_pccx_opts {
    const char *port;     /* port spec (NULL = "sim") */
    const char *dev_opts; /* device model options (NULL = defaults) */
    int group_size;       /* 0..NPK_LLM_PCCX_MAX_GROUP; 0 = one INT4 scale per output channel (whole row);
                             G > 0 = one scale per output channel per G inputs
                             (each group is one GEMV accumulating into dest) */
    const char *trace_path; /* write a Chrome trace of the device here (NULL = none) */
    int gemm_prefill_off;   /* 1: the prompt runs one GEMV step per token (the decode path) instead of
                               GEMM blocks (npk_llm_prefill) */
    int timing_only;        /* 1: the device runs with timing_only=1 and no weights are read or
                               quantized (the model may be npk_llm_model_shape's): the same
                               instructions, cycles and counters as a functional run, no logits
                               (they are left at 0) */
} npk_llm_pccx_opts;

/* The decode path on the pccx NPU. Weights are quantized to INT4 at
 * creation. Fails with NPK_EUNSUPPORTED when the pccx model/driver is not
 * available in this build. */
int npk_llm_decoder_pccx(const npk_llm_model *m, const npk_llm_pccx_opts *opts, npk_llm_decoder **out);

/* Run one step. *logits points into the decoder (valid until the next call). */
int npk_llm_forward(npk_llm_decoder *d, int token, int pos, const float **logits);
/* Run the next n positions (tokens[0..n-1], a prompt) at once and return the
 * logits of the last: the pccx decoder runs them as GEMM blocks of up to
 * NPK_LLM_PCCX_MAX_BLOCK rows (every weight streamed once per block), the
 * others one forward step each. The results are those of n forward steps. */
int npk_llm_prefill(npk_llm_decoder *d, const int *tokens, int n, const float **logits);
#define NPK_LLM_PCCX_MAX_BLOCK 64
/* Counters so far. */
void npk_llm_stats_get(const npk_llm_decoder *d, npk_llm_stats *st);
/* Finish: write the outputs the decoder was asked for (the pccx trace file).
 * Returns 0 or a negative npk_status. Safe to call more than once. */
int npk_llm_decoder_finish(npk_llm_decoder *d);
/* "cpu" or "pccx". */
const char *npk_llm_decoder_kind(const npk_llm_decoder *d);
void npk_llm_decoder_free(npk_llm_decoder *d);

/* The decoder's work so far as a performance report (include/npukit/report.h):
 * device instructions per opcode with engine cycles and MACs, host steps as host
 * operators, bytes per memory, modeled and host tokens/s and per-token figures as
 * notes; ntok is the number of tokens emitted, name the model (may be NULL).
 * *out is freed with npk_report_free. What `npu llm --report` prints. */
struct npk_report;
int npk_llm_report(const npk_llm_decoder *d, int ntok, const char *name, struct npk_report **out);

/* Generate: feed BOS and the prompt's tokens (forced), then sample until
 * `steps` positions have been run (capped at seq_len) or BOS is sampled.
 * Each token's printable text (npk_llm_decode + npk_llm_printable) is passed
 * to emit(piece, user); emit may be NULL. If tokens_out is non-NULL it
 * receives the sampled/forced tokens (after BOS), at most `steps`.
 * Returns the number of tokens emitted or a negative npk_status. */
typedef void (*npk_llm_emit_fn)(const char *piece, void *user);
int npk_llm_generate(npk_llm_decoder *d, const npk_llm_tokenizer *t, const char *prompt, int steps,
                     npk_llm_sampler *s, npk_llm_emit_fn emit, void *user, int *tokens_out);

/* Teacher-forced accuracy of decoder `d` against the reference `ref`:
 * both are fed the same `n` tokens tokens[0..n-1] (positions 0..n-1); at each
 * position the arg-max of both logits is compared. */
typedef struct npk_llm_accuracy {
    int positions;          /* n */
    int top1_agree;         /* positions where the arg-max tokens are equal */
    double max_logit_diff;  /* max |logit_d - logit_ref| over all positions and tokens */
    double mean_logit_diff; /* mean |...| */
} npk_llm_accuracy;
int npk_llm_compare(npk_llm_decoder *ref, npk_llm_decoder *d, const int *tokens, int n,
                    npk_llm_accuracy *acc);

/* ---- shapes and synthetic checkpoints ------------------------------------- */

/* Fill *cfg from a shape: a preset name (npk_llm_shape_preset_name(i) lists
 * them: stories260K, stories15M, stories42M, stories110M, tinyllama-1.1B,
 * llama-4B), optionally followed by ",key=value" overrides, or all seven of
 * "dim=D,hidden=H,layers=L,heads=N,kv_heads=K,vocab=V,seq=S". The result is
 * checked as a checkpoint header. Returns 0 or -NPK_EINVAL. */
int npk_llm_shape_parse(const char *spec, npk_llm_config *cfg);
const char *npk_llm_shape_preset_name(int i); /* NULL past the end */

/* Write a deterministic random-weight checkpoint of shape *cfg (legacy
 * llama2.c format, shared classifier; weights U(-1/sqrt(fan_in), ..) from
 * xorshift64* seeded with `seed`, RMSNorm weights 1) to model_path, and a
 * synthetic tokenizer of cfg->vocab_size tokens (<unk>, <s>, </s>, 256 byte
 * tokens, then distinct lower-case words) to tok_path. Either path may be
 * NULL. Both files are written completely to temporaries beside them and
 * renamed into place only when both are, so a failure leaves no partial file
 * and replaces neither existing file; errors name the paths given, never a
 * temporary. Returns 0 or a negative npk_status. */
int npk_llm_synth_write(const npk_llm_config *cfg, uint64_t seed, const char *model_path, const char *tok_path);

#ifdef __cplusplus
}
#endif
#endif
