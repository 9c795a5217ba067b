/* npu asm / npu disasm: text <-> binary command streams, per device.
 *
 * The formats come from the device table (include/npukit/devtab.h: a device
 * row with a stream_format has an assembler and a disassembler). */
#include "cli.h"
#include "npukit/npkb.h"
#include "npukit/devtab.h"

#include <stdlib.h>
#include <string.h>

static const npk_dev_rt *find(const char *dev) {
    const npk_dev_rt *r = npk_dev_rt_find(dev);
    return r && r->stream_format ? r : NULL;
}

typedef struct asm_args {
    const char *device, *out;
} asm_args;
static const npk_opt asm_opts[] = {
    {"--device", NULL, NPK_OPT_STR, offsetof(asm_args, device), NULL, 0, 0, 0, 0, 0, "D",
     "the device whose command-stream format is used (required; for\n"
     "'disasm' of a compiled .npkb model: optional, checked against it)", 0},
    {"--output", "-o", NPK_OPT_STR, offsetof(asm_args, out), NULL, 0, 0, 0, 0, 0, "OUT",
     "output file (default: standard output)", 0},
};

static void help(const char *cmd) {
    int is_asm = !strcmp(cmd, "asm");
    printf("usage: npu %s --device D [-o OUT] [IN]\n\n", cmd);
    printf(is_asm ? "Assembles the text form of a command stream (IN, or standard input) into the binary\n"
                    "image the device reads from guest memory (OUT, or standard output).\n"
                  : "Disassembles a binary command stream (IN, or standard input) into its text form\n"
                    "(OUT, or standard output). 'npu asm' of the output gives back the same bytes.\n"
                    "A compiled model (.npkb, docs/npkb.md) gives its listing.\n");
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

static int run(const char *cmd, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        help(cmd);
        return 0;
    }
    asm_args A = {0};
    const char *in = NULL;
    int urc = cli_parse(cmd, asm_opts, sizeof asm_opts / sizeof asm_opts[0], &A, argc, argv, &in, 1, NULL);
    if (urc) return urc;
    const char *dev = A.device, *out = A.out;
    char *no_opts = NULL;
    /* a bad --device is reported before any file is read */
    if (dev && (urc = cli_device(cmd, dev, 0, NULL, &no_opts))) return urc;
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
