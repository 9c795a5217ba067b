// SPDX-License-Identifier: MIT
/* npu asm / npu disasm: text <-> binary command streams, per device.
 *
 * The formats come from the device table (include/npukit/devtab.h: a device
 * row with a stream_format has an assembler and a disassembler). */
#include "cli.h"
#include "npukit/e1.h"
#include "npukit/e1_shlo.h"
#include "npukit/npkb.h"
#include "npukit/devtab.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>

#include <stdlib.h>
#include <string.h>

static const npk_dev_rt *find(const char *dev) {
    const npk_dev_rt *r = npk_dev_rt_find(dev);
    return r && r->stream_format ? r : NULL;
}

typedef struct asm_args {
    const char *device, *out;
    npk_strlist dev_opts;
} asm_args;
static const npk_opt asm_opts[] = {
    CLI_STR("--device", NULL, asm_args, device, NULL, "D",
      "the device whose command-stream format is used (required; for\n"
      "'disasm' of a compiled .npkb model: optional, checked against it)"),
    CLI_STR("--output", "-o", asm_args, out, NULL, "OUT", "output file (default: standard output)"),
    CLI_LIST("--device-opt", "--opts --device-opts", asm_args, dev_opts, "K=V[,K=V]",
      "device model options, repeatable (npu devices lists them); checked\n"
      "against the device, they do not change the stream's encoding"),
};

static void help(const char *cmd) {
    int is_asm = !strcmp(cmd, "asm");
    printf("usage: npu %s --device D [-o OUT] [IN]\n\n", cmd);
    printf(is_asm ? "Assembles the text form of a command stream (IN, or standard input) into the binary\n"
                    "image the device reads from guest memory (OUT, or standard output).\n"
                  : "Disassembles a binary command stream (IN, or standard input) into its text form\n"
                    "(OUT, or standard output). 'npu asm' of the output gives back the same bytes.\n"
                    "A compiled model (.npkb, docs/npkb.md) gives its listing; so does an e1 package from\n"
                    "'npu compile --device e1' (descriptor images decoded, host sequences, blocked batches).\n");
    printf("\noptions:\n");
    cli_help_opts(asm_opts, sizeof asm_opts / sizeof asm_opts[0]);
    printf("\ndevices with a command-stream format:\n");
    size_t n;
    const npk_dev_rt *const *r = npk_dev_rts(&n);
    for (size_t i = 0; i < n; i++)
        if (r[i]->stream_format) printf("  %-6s %s\n", r[i]->model->name, r[i]->stream_format);
}

static int read_all(FILE *f, uint8_t **data, size_t *len) {
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap + 1);
    if (!buf) return -1;
    size_t r;
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                return -1;
            }
            buf = nb;
            cap *= 2;
        }
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return 0;
}

static uint64_t jnum(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

/* An e1 package (docs/e1-compile.md): per prepared execution batch the GEMM
 * preambles, the descriptor image decoded word by word (e1_regs.h), the
 * submission and the host runtime sequence's shape; the blocked batches with
 * their reasons. The package is checked first, as npu exec does. */
static int list_e1_package(const char *text, FILE *f) {
    if (npk_e1_package_check(text)) return -1;
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    if (!root) return npk_err(NPK_EFORMAT, "line %d: %s", je.line, je.text);
    json_t *m = json_object_get(root, "module"), *pe = json_object_get(root, "prepared_descriptor_execution_batches");
    fprintf(f, "e1 package: module \"%s\", arena 0x%" PRIx64 ", descriptors at 0x%" PRIx64 " (stride %" PRIu64 " bytes)\n",
            json_string_value(json_object_get(m, "name")) ? json_string_value(json_object_get(m, "name")) : "?",
            jnum(root, "arena_base"), jnum(root, "descriptor_base"), jnum(root, "descriptor_stride_bytes"));
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(pe, "execution_batches"), i, b) {
        json_t *img = json_object_get(b, "descriptor_command_buffer_image"), *seq = json_object_get(b, "host_runtime_sequence");
        fprintf(f, "\nexecution batch %" PRIu64 " (command-buffer batch %" PRIu64 "): ops", jnum(b, "execution_batch_index"),
                jnum(b, "batch_index"));
        size_t k;
        json_t *v;
        json_array_foreach(json_object_get(img, "op_names"), k, v) fprintf(f, " %s", json_string_value(v));
        fprintf(f, "\n");
        json_array_foreach(json_object_get(b, "op_mmio_preamble"), k, v) {
            json_t *pre = json_object_get(v, "mmio_preamble");
            fprintf(f, "  preamble %s: GEMM_CFG 0x%08" PRIx64 " GEMM_BASE 0x%08" PRIx64 " GEMM_STRIDE 0x%08" PRIx64 "\n",
                    json_string_value(json_object_get(v, "op_name")), jnum(pre, "GEMM_CFG"), jnum(pre, "GEMM_BASE"),
                    jnum(pre, "GEMM_STRIDE"));
        }
        uint64_t base = jnum(img, "descriptor_base");
        json_array_foreach(json_object_get(img, "descriptor_words"), k, v) {
            uint32_t w[4];
            for (size_t q = 0; q < 4; q++) {
                json_t *x = json_array_get(v, q);
                w[q] = json_is_integer(x) ? (uint32_t)json_integer_value(x) : 0;
            }
            fprintf(f, "  desc %zu @ 0x%" PRIx64 ": %s", k, base + 16 * (uint64_t)k, e1_opcode_name(e1_desc_opcode(w[0])));
            if (e1_desc_stream(w[0]))
                fprintf(f, " stream %u bytes from 0x%08" PRIx32 " to scratch +%u", e1_desc_len(w[0]), w[1], e1_desc_scratch_off(w[0]));
            if (e1_desc_writeback(w[0])) fprintf(f, " writeback to 0x%08" PRIx32, w[2]);
            fprintf(f, "%s  [0x%08" PRIx32 " 0x%08" PRIx32 " 0x%08" PRIx32 " 0x%08" PRIx32 "]\n",
                    e1_desc_valid_owner(w[0]) ? " valid_owner" : " NOT OWNED", w[0], w[1], w[2], w[3]);
        }
        json_t *sub = json_object_get(img, "submission");
        size_t npre = 0;
        json_array_foreach(json_object_get(seq, "mmio_preamble_writes"), k, v) npre += json_array_size(json_object_get(v, "writes"));
        fprintf(f, "  submit: DESC_BASE 0x%" PRIx64 " TAIL %" PRIu64 " HEAD %" PRIu64 "; host sequence: %zu preamble writes, %zu "
                   "descriptor memory writes, %zu submission writes, poll DESC_STATUS (done, no error)\n",
                jnum(sub, "base"), jnum(sub, "tail"), jnum(sub, "head"), npre,
                json_array_size(json_object_get(seq, "descriptor_memory_writes")),
                json_array_size(json_object_get(seq, "submission_mmio_writes")));
    }
    json_array_foreach(json_object_get(pe, "blocked_execution_batches"), i, b) {
        fprintf(f, "\nblocked execution batch %" PRIu64 " (run through the lowerings):", jnum(b, "execution_batch_index"));
        size_t k;
        json_t *v;
        json_array_foreach(json_object_get(b, "blocked_ops"), k, v) {
            fprintf(f, " %s:", json_string_value(json_object_get(v, "op_name")));
            size_t r;
            json_t *why;
            json_array_foreach(json_object_get(v, "blocking_reasons"), r, why) fprintf(f, " %s", json_string_value(why));
        }
        fprintf(f, "\n");
    }
    json_decref(root);
    return ferror(f) ? npk_err(NPK_EIO, "writing the listing failed") : 0;
}

static int run(const char *cmd, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        help(cmd);
        return 0;
    }
    asm_args A = {0};
    const char *in = NULL;
    int urc = cli_parse(cmd, asm_opts, sizeof asm_opts / sizeof asm_opts[0], &A, argc, argv, &in, 1, NULL);
    if (!urc && A.dev_opts.n && !A.device) urc = cli_usage_error(cmd, "--device-opt needs --device");
    char *joined = NULL;
    /* a bad --device or device option is reported before any file is read */
    if (!urc && A.device) urc = cli_device(cmd, A.device, 0, &A.dev_opts, &joined);
    free(joined);
    npk_strlist_free(&A.dev_opts);
    if (urc) return urc;
    const char *dev = A.device, *out = A.out;
    if (!strcmp(cmd, "disasm") && in && cli_is_npkb(in)) {
        /* a compiled model (docs/npkb.md): its listing */
        uint8_t *kb = NULL;
        size_t kl = 0;
        npk_npkb *k = NULL;
        int bad = cli_read_file(in, &kb, &kl) || npk_npkb_open(&k, kb, kl);
        free(kb);
        if (bad) return cli_fail("disasm: %s: %s", in, npk_errmsg());
        if (dev && strcmp(dev, npk_npkb_device(k))) {
            npk_npkb_free(k);
            return cli_fail("disasm: %s: compiled for %s, not %s", in, npk_npkb_device(k), dev);
        }
        FILE *f = stdout;
        cli_out o;
        if (out && cli_out_open(&o, out)) {
            npk_npkb_free(k);
            return cli_fail("disasm: %s", npk_errmsg());
        }
        if (out) f = o.f;
        int rc = npk_npkb_list(k, f);
        npk_npkb_free(k);
        if (out && cli_out_close(&o, !rc)) rc = -1;
        return rc ? cli_fail("disasm: %s", npk_errmsg()) : 0;
    }
    if (!strcmp(cmd, "disasm") && in && (!dev || !strcmp(dev, npk_e1_class.name))) {
        /* an e1 package (docs/e1-compile.md): its descriptor images and host sequences */
        char *text = NULL;
        if (!cli_read_text(in, &text) && npk_e1_is_package(text)) {
            cli_out o;
            if (out && cli_out_open(&o, out)) {
                free(text);
                return cli_fail("disasm: %s", npk_errmsg());
            }
            int rc = list_e1_package(text, out ? o.f : stdout);
            free(text);
            if (out && cli_out_close(&o, !rc)) rc = -1;
            return rc ? cli_fail("disasm: %s: %s", in, npk_errmsg()) : 0;
        }
        free(text);
    }
    if (!dev && in && strcmp(in, "-")) { /* a missing input is the first thing to say */
        FILE *t = fopen(in, "rb");
        if (!t) return cli_fail("%s: cannot open '%s': %s", cmd, in, strerror(errno));
        fclose(t);
    }
    if (!dev) return cli_usage_error(cmd, "--device is required");
    const npk_dev_rt *e = find(dev);
    if (!e) return cli_usage_error(cmd, "no command-stream format for device '%s' (%s)", dev, npk_dev_stream_names());
    if (out && cli_check_output(out)) return cli_fail("%s: -o: %s", cmd, npk_errmsg());
    uint8_t *data;
    size_t len;
    if (in && strcmp(in, "-")) {
        /* text or binary file; cli_read_file does not NUL-terminate */
        uint8_t *raw;
        if (cli_read_file(in, &raw, &len)) return cli_fail("%s: %s", cmd, npk_errmsg());
        data = malloc(len + 1);
        if (!data) {
            free(raw);
            return cli_fail("%s: out of memory", cmd);
        }
        memcpy(data, raw, len);
        data[len] = 0;
        free(raw);
    } else if (read_all(stdin, &data, &len)) {
        return cli_fail("%s: cannot read standard input", cmd);
    }
    int rc;
    uint8_t *bin = NULL;
    char *text = NULL;
    size_t outlen = 0;
    if (!strcmp(cmd, "asm")) {
        if (memchr(data, 0, len)) {
            free(data);
            return cli_fail("asm: %s: input contains NUL bytes; it is not a text stream (did you mean disasm?)",
                            in ? in : "stdin");
        }
        rc = e->assemble((const char *)data, &bin, &outlen);
    } else {
        rc = e->disassemble(data, len, &text);
        if (!rc) outlen = strlen(text);
    }
    free(data);
    if (rc) return cli_fail("%s: %s: %s", cmd, in ? in : "stdin", npk_errmsg());
    const void *o = bin ? (const void *)bin : (const void *)text;
    int ret = 0;
    if (out) {
        if (cli_write_file(out, o, outlen)) ret = cli_fail("%s: %s", cmd, npk_errmsg());
    } else if (fwrite(o, 1, outlen, stdout) != outlen) {
        ret = cli_fail("%s: writing standard output failed", cmd);
    }
    free(bin);
    free(text);
    return ret;
}

int cmd_asm(int argc, char **argv) { return run("asm", argc, argv); }
int cmd_disasm(int argc, char **argv) { return run("disasm", argc, argv); }
