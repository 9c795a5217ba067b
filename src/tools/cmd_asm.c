/* npu asm / npu disasm: text <-> binary command streams, per device.
 *
 * Each device provides, in its ABI header:
 *   int npk_<dev>_asm(const char *text, uint8_t **bin, size_t *len);
 *   int npk_<dev>_disasm(const uint8_t *bin, size_t len, char **text);
 * both returning 0 or a negative npk_status with a message naming the line
 * or byte offset at fault. */
#include "cli.h"
#include "npukit/pccx.h"
#include "npukit/shell.h"
#include "npukit/v0.h"

#include <stdlib.h>
#include <string.h>

typedef int (*asm_fn)(const char *text, uint8_t **bin, size_t *len);
typedef int (*disasm_fn)(const uint8_t *bin, size_t len, char **text);

typedef struct {
    const char *device;
    asm_fn assemble;
    disasm_fn disassemble;
    const char *format;
} asm_entry;

/* Wired in as each device's assembler lands. */
static const asm_entry table[] = {
    {"v0", npk_v0_asm, npk_v0_disasm, "64-byte descriptors, one per line"},
    {"shell", npk_shell_asm, npk_shell_disasm, "32/64/96-byte descriptors, one per line"},
    {"pccx", npk_pccx_asm, npk_pccx_disasm, "64-bit instructions, one per line with named fields"},
};

static const asm_entry *find(const char *dev) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].device, dev)) return &table[i];
    return NULL;
}

static void help(const char *cmd) {
    int is_asm = !strcmp(cmd, "asm");
    printf("usage: npu %s --device D [-o OUT] [IN]\n\n", cmd);
    printf(is_asm ? "Assembles the text form of a command stream (IN, or standard input) into the binary\n"
                    "image the device reads from guest memory (OUT, or standard output).\n"
                  : "Disassembles a binary command stream (IN, or standard input) into its text form\n"
                    "(OUT, or standard output). 'npu asm' of the output gives back the same bytes.\n");
    printf("\noptions:\n  --device D   v0, shell or pccx\n  -o OUT       output file (default: standard output)\n\ndevices:\n");
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        printf("  %-6s %s%s\n", table[i].device, table[i].format, table[i].assemble ? "" : " (not available yet)");
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
    const char *dev = NULL, *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) dev = argv[++i];
        else if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1]) return cli_usage_error(cmd, "unknown or incomplete option '%s'", argv[i]);
        else if (!in) in = argv[i];
        else return cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
    }
    if (!dev) return cli_usage_error(cmd, "--device is required");
    const asm_entry *e = find(dev);
    if (!e) return cli_usage_error(cmd, "no command-stream format for device '%s' (v0, shell, pccx)", dev);
    if (!e->assemble) return cli_fail("%s: the %s stream format is not available in this build yet", cmd, dev);
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
