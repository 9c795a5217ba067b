// SPDX-License-Identifier: MIT
/* npu shell-map: a YAML schedule (RTLGen mapper format) to a shell descriptor stream. */
#include "cli.h"
#include "npukit/shell.h"

#include <stdlib.h>
#include <string.h>

typedef struct sm_args {
    const char *out, *asm_out;
    int softmax_dtype;
} sm_args;
static const npk_opt sm_opts[] = {
    CLI_STR("--output", "-o", sm_args, out, NULL, "STREAM.bin", "output file for the binary stream (required)"),
    CLI_STR("--asm", NULL, sm_args, asm_out, NULL, "OUT.txt",
      "also write the stream's text form ('npu asm --device shell' input)"),
    CLI_FLAG("--softmax-dtype", NULL, sm_args, softmax_dtype,
      "encode a softmax op's dtype in FLAGS[7:4] (the reference mapper\n"
      "writes 0, i.e. int8, whatever the dtype; a warning says so)"),
};

static void help(void) {
    printf("usage: npu shell-map SCHEDULE.yml -o STREAM.bin [--asm OUT.txt] [--softmax-dtype]\n\n"
           "Maps a schedule in the RTLGen mapper's YAML format (version 0.1: buffers, ops, deps,\n"
           "events) onto the shell descriptor stream the reference mapper (npu/mapper/run.py\n"
           "--out-bin) writes for it: deps become EVENT_SIGNAL/EVENT_WAIT pairs numbered from 1,\n"
           "events add EVENT_SIGNALs after their op, GEMMs with v0.2 fields become 64/96-byte\n"
           "descriptors with op ids 1, 2, ... in bytes 56..63. Values the reference would\n"
           "silently truncate are refused. Details: docs/shell.md.\n\n"
           "options:\n");
    cli_help_opts(sm_opts, sizeof sm_opts / sizeof sm_opts[0]);
}

int cmd_shell_map(int argc, char **argv) {
    sm_args A;
    int early = cli_start("shell-map", argc, argv, help, NULL, 0, &A, sizeof A);
    if (early >= 0) return early;
    const char *in = NULL;
    int urc = cli_parse("shell-map", sm_opts, sizeof sm_opts / sizeof sm_opts[0], &A, argc, argv, &in, 1, NULL);
    if (urc) return urc;
    const char *out = A.out, *asm_out = A.asm_out;
    int softmax_dtype = A.softmax_dtype;
    if (!in) return cli_usage_error("shell-map", "a schedule file is required");
    if (!out) return cli_usage_error("shell-map", "-o STREAM.bin is required");
    if (cli_check_output(out)) return cli_fail("shell-map: -o: %s", npk_errmsg());
    if (asm_out && cli_check_output(asm_out)) return cli_fail("shell-map: --asm: %s", npk_errmsg());
    uint8_t *text;
    size_t len;
    if (cli_read_file(in, &text, &len)) return cli_fail("shell-map: %s", npk_errmsg());
    uint8_t *bin = NULL;
    size_t blen = 0, count = 0;
    int rc = npk_shell_map_yaml_opts((const char *)text, len, softmax_dtype, &bin, &blen, &count);
    free(text);
    if (rc) return cli_fail("shell-map: %s: %s", in, npk_errmsg());
    /* Both outputs or neither: each goes to a temporary file, renamed into
     * place only when both were written. */
    int ret = 0;
    char *t = NULL;
    cli_out ob, oa = {0};
    if (asm_out && npk_shell_disasm(bin, blen, &t)) ret = cli_fail("shell-map: %s", npk_errmsg());
    if (!ret && cli_out_open(&ob, out)) ret = cli_fail("shell-map: %s", npk_errmsg());
    if (!ret && asm_out && cli_out_open(&oa, asm_out)) {
        ret = cli_fail("shell-map: %s", npk_errmsg());
        cli_out_close(&ob, 0);
    }
    if (!ret) {
        int ok = fwrite(bin, 1, blen, ob.f) == blen;
        if (asm_out) ok = ok && fputs(t, oa.f) >= 0 && fflush(oa.f) == 0 && !ferror(oa.f);
        ok = ok && fflush(ob.f) == 0 && !ferror(ob.f);
        if (!ok) ret = cli_fail("shell-map: writing '%s'%s%s failed", out, asm_out ? " or " : "", asm_out ? asm_out : "");
        if ((cli_out_close(&ob, !ret) || (asm_out && cli_out_close(&oa, !ret))) && !ret)
            ret = cli_fail("shell-map: %s", npk_errmsg());
    }
    free(t);
    if (!ret) printf("shell-map: wrote %zu descriptors (%zu bytes) to %s\n", count, blen, out);
    free(bin);
    return ret;
}
