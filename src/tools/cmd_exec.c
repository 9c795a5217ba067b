/* npu exec: check a compiled package as the staging helpers do, then replay
 * it on a device and print the outputs. */
#include "cli.h"
#include "npukit/e1.h"
#include "npukit/e1_shlo.h"
#include "npukit/npkb.h"

#include <stdlib.h>
#include <string.h>

static void help(void) {
    printf("usage: npu exec PACKAGE.json [--port SPEC] [--tensors FILE]... [--check] [--no-golden]\n"
           "       npu exec MODEL.npkb [--input NAME=FILE.pb]... [--port SPEC] [npu run's options]\n\n"
           "A compiled model (.npkb from 'npu compile --device v0|shell MODEL.onnx', docs/npkb.md) runs\n"
           "without the ONNX file: its stored guest-memory plan, weights and pre-encoded descriptor batches\n"
           "(v0 descriptors, shell ring bytes) are replayed on the port; its outputs and modeled cycles\n"
           "equal 'npu run' on the ONNX model, and the run's partition is checked against the compiled plan.\n\n"
           "Replays a package written by 'npu compile --device e1'. It is checked first as the e1 staging\n"
           "helpers do (base/head/tail arithmetic, the ring window, word0 valid_owner and\n"
           "stream_to_scratch, stream bounds, GEMM-only aligned writebacks, preambles against the images,\n"
           "the required runtime steps, and the report against the module); nothing reaches the device\n"
           "when it is wrong. Then every ready execution batch populates the tensor arena, writes its GEMM\n"
           "preamble and descriptor memory, submits through DESC_BASE/HEAD/TAIL, CMD_PARAM and\n"
           "CTRL_STATUS and polls DESC_STATUS; the other supported ops run through the lowerings and\n"
           "CPU-fallback entries on the CPU reference. Prints the 'npu lower' JSON (outputs equal 'npu\n"
           "lower' on the same module bit for bit) with a 'replay' section. See docs/e1-compile.md.\n\n"
           "options:\n"
           "  --port SPEC       sim (default), qtest:SOCKET, qtest-spawn:NPU or uio:/dev/uioN\n"
           "  --tensors FILE    tensor data to bind (replaces the package's): {OP: {FIELD: data}}\n"
           "  --check           check the package only (no device)\n"
           "  --no-golden       leave the golden tensors out of the JSON (they are still compared)\n");
}

int cmd_exec(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        help();
        return 0;
    }
    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '-' && (i == 1 || strcmp(argv[i - 1], "--input")) && cli_is_npkb(argv[i]))
            return cmd_run(argc, argv); /* a compiled model takes npu run's options */
    const char *file = NULL, *port_spec = "sim";
    const char *tfiles[16];
    size_t nt = 0;
    int check = 0;
    npk_lower_module_opts opts = {.batching = 1, .include_golden = 1};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--port") && i + 1 < argc) port_spec = argv[++i];
        else if (!strcmp(argv[i], "--tensors") && i + 1 < argc) {
            if (nt == sizeof tfiles / sizeof tfiles[0]) return cli_usage_error("exec", "too many --tensors files");
            tfiles[nt++] = argv[++i];
        } else if (!strcmp(argv[i], "--check")) check = 1;
        else if (!strcmp(argv[i], "--no-golden")) opts.include_golden = 0;
        else if (argv[i][0] == '-' && argv[i][1]) return cli_usage_error("exec", "unknown or incomplete option '%s'", argv[i]);
        else if (!file) file = argv[i];
        else return cli_usage_error("exec", "more than one package ('%s')", argv[i]);
    }
    if (!file) return cli_usage_error("exec", "no PACKAGE");
    char *text;
    if (cli_read_text(file, &text)) return cli_fail("exec: %s", npk_errmsg());
    if (!npk_e1_is_package(text)) {
        free(text);
        return cli_fail("exec: %s: not a compiled package (schema %s)", file, NPK_E1_PACKAGE_SCHEMA);
    }
    char *tt[16] = {0};
    int ret = 1;
    npk_port *port = NULL;
    npk_e1 *e = NULL;
    char *result = NULL;
    for (size_t i = 0; i < nt; i++)
        if (cli_read_text(tfiles[i], &tt[i])) {
            cli_fail("exec: %s", npk_errmsg());
            goto out;
        }
    if (npk_e1_package_check(text)) {
        cli_fail("exec: %s: %s", file, npk_errmsg());
        goto out;
    }
    if (check) {
        printf("{\"valid\":true}\n");
        ret = 0;
        goto out;
    }
    if (npk_port_open(&port, port_spec, "e1", NULL) || npk_e1_open(&e, port)) {
        cli_fail("exec: %s", npk_errmsg());
        goto out;
    }
    if (npk_e1_package_exec(e, text, (const char *const *)tt, nt, &opts, &result)) {
        cli_fail("exec: %s: %s", file, npk_errmsg());
        goto out;
    }
    fputs(result, stdout);
    fputc('\n', stdout);
    ret = strstr(result, "\"all_match\":true") ? 0 : 1;
    if (ret) cli_fail("exec: %s: a device result differs from the golden", file);
out:
    free(result);
    if (e) npk_e1_close(e);
    if (port) npk_port_close(port);
    for (size_t i = 0; i < nt; i++) free(tt[i]);
    free(text);
    return ret;
}
