// SPDX-License-Identifier: MIT
/* npu compile: an e1 StableHLO-subset module into a compiled package (the
 * partition report and the prepared descriptor batches) or a delegate blob;
 * ONNX models into compiled streams for v0 and shell. */
#include "cli.h"
#include "npukit/e1_shlo.h"
#include "npukit/npkb.h"
#include "npukit/sim.h"

#include <stdlib.h>
#include <string.h>

int cli_is_npkb(const char *path) {
    uint8_t m[4];
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(m, 1, 4, f);
    fclose(f);
    return npk_npkb_is(m, n);
}

/* Text (no NUL in its first 64 KiB) that names the e1 module schema there. */
static int names_shlo_schema(const uint8_t *p, size_t n) {
    size_t k = n < 65536 ? n : 65536;
    if (memchr(p, 0, k)) return 0;
    char *t = malloc(k + 1);
    if (!t) return 0;
    memcpy(t, p, k);
    t[k] = 0;
    int r = strstr(t, NPK_SHLO_SCHEMA) != NULL;
    free(t);
    return r;
}

/* v0 / shell: an ONNX model into a compiled model (.npkb). */
static int compile_npkb(const char *device, const char *dev_opts, const char *file, const char *outp) {
    if (!outp) return cli_usage_error("compile", "a compiled model is binary: give -o MODEL.npkb");
    uint8_t *onnx, *bin;
    size_t len, blen;
    if (cli_read_file(file, &onnx, &len)) return cli_fail("compile: %s", npk_errmsg());
    if (names_shlo_schema(onnx, len)) {
        free(onnx);
        return cli_fail("compile: %s is an e1 StableHLO-subset module, not an ONNX model: compile it with --device e1", file);
    }
    int rc = npk_npkb_compile_opts(onnx, len, device, dev_opts, &bin, &blen);
    free(onnx);
    if (rc) return cli_fail("compile: %s: %s", file, npk_errmsg());
    rc = cli_write_file(outp, bin, blen);
    free(bin);
    return rc ? cli_fail("compile: %s", npk_errmsg()) : 0;
}

int cli_read_text(const char *path, char **text) {
    uint8_t *data;
    size_t len;
    *text = NULL;
    if (cli_read_file(path, &data, &len)) return -1;
    char *t = malloc(len + 1);
    if (!t) {
        free(data);
        npk_err(NPK_ENOMEM, "out of memory");
        return -1;
    }
    memcpy(t, data, len);
    t[len] = 0;
    free(data);
    if (strlen(t) != len) {
        free(t);
        npk_err(NPK_EFORMAT, "%s: the file contains a NUL byte (not a text file)", path);
        return -1;
    }
    *text = t;
    return 0;
}

static int load_module(const char *cmd, const char *file, const char *text, const char *const *tensors, size_t ntensors,
                       npk_shlo **out) {
    *out = NULL;
    npk_shlo *m;
    if (npk_shlo_parse(&m, text)) return cli_fail("%s: %s: %s", cmd, file, npk_errmsg());
    for (size_t i = 0; i < ntensors; i++) {
        char *t;
        if (cli_read_text(tensors[i], &t) || npk_shlo_bind(m, t, tensors[i])) {
            cli_fail("%s: %s", cmd, npk_errmsg());
            if (t) free(t);
            npk_shlo_free(m);
            return 1;
        }
        free(t);
    }
    for (size_t i = 0; i < npk_shlo_issue_count(m); i++) {
        const char *op, *kind, *code, *msg;
        npk_shlo_issue(m, i, &op, &kind, &code, &msg);
        fprintf(stderr, "npu %s: %s: %s (%s): %s: %s\n", cmd, file, op, kind, code, msg);
    }
    if (npk_shlo_check_module(m)) {
        cli_fail("%s: %s: %s", cmd, file, npk_errmsg());
        npk_shlo_free(m);
        return 1;
    }
    *out = m;
    return 0;
}

int cli_shlo_lower_module(const char *file, const char *text, const char *const *tensors, size_t ntensors, char **out) {
    npk_shlo *m;
    *out = NULL;
    if (load_module("lower", file, text, tensors, ntensors, &m)) return 1;
    int rc = npk_shlo_to_lower_json(m, out);
    npk_shlo_free(m);
    if (rc) return cli_fail("lower: %s: %s", file, npk_errmsg());
    return 0;
}

typedef struct compile_args {
    const char *device, *out, *format;
    npk_strlist tensors, dev_opts;
    uint32_t arena_base, descriptor_base, descriptor_stride;
    int no_tensors;
} compile_args;
#define CU32(n, f, def, m, h) CLI_NUM(n, NULL, U32, compile_args, f, def, 0, UINT32_MAX, m, h)
static const npk_opt compile_opts[] = {
    CLI_STR("--device", NULL, compile_args, device, NULL, "D",
      "the device (required): the e1 modules' device, or a device whose ONNX\n"
      "runs compile into .npkb models (listed below)"),
    CLI_STR("--output", "-o", compile_args, out, NULL, "FILE", "write there (default: stdout; required for .npkb)"),
    CLI_LIST("--device-opt", "--opts --device-opts", compile_args, dev_opts, "K=V[,K=V]",
      "device model options, repeatable (npu devices lists them): v0/shell\n"
      "record the stream for them (replay with the same options); e1's\n"
      "package does not depend on them (checked only)"),
    CLI_LIST("--tensors", NULL, compile_args, tensors, "FILE",
      "tensor data: {OP: {FIELD: data}} or {OP.FIELD: data} (repeatable, at most 16)"),
    CLI_STR("--format", NULL, compile_args, format, "package", "F",
      "package, report (the partition report only), executorch or litert\n"
      "(the prototype delegate blobs; refused when the module has validation issues)"),
    CU32("--arena-base", arena_base, NULL, "ADDR", "guest address of the tensor arena (default 0x90000000)"),
    CU32("--descriptor-base", descriptor_base, NULL, "ADDR",
         "guest address of execution batch 0's descriptors (default 0x90100000)"),
    CU32("--descriptor-stride", descriptor_stride, NULL, "N", "bytes between execution batches' descriptors (default 112)"),
    CLI_FLAG("--no-tensors", NULL, compile_args, no_tensors,
      "leave the tensor data out of the package (bind it at exec time)"),
};
#define COMPILE_NOPTS (sizeof compile_opts / sizeof compile_opts[0])

static void help(void) {
    printf("usage: npu compile --device e1 MODULE [-o PACKAGE.json] [--tensors FILE]... [--format F] [--device-opt K=V]\n"
           "                   [--arena-base ADDR] [--descriptor-base ADDR] [--descriptor-stride BYTES] [--no-tensors]\n"
           "       npu compile --device v0|shell MODEL.onnx -o MODEL.npkb [--device-opt K=V]\n\n"
           "v0 / shell: writes a compiled model (docs/npkb.md): one versioned, checksummed file with the\n"
           "model's graph and weights, the compiled plan (per node: CPU or device, driver call, MACs,\n"
           "modeled cycles), the I/O bindings and the compiled command stream (the guest-memory plan, the\n"
           "weights staged per node, every v0 descriptor / shell ring batch pre-encoded). 'npu exec\n"
           "MODEL.npkb --input ...' replays it without the ONNX file; 'npu disasm MODEL.npkb' lists it.\n\n"
           "e1: compiles a module in the e1 runtime's format (schema eliza.e1_npu_stablehlo_subset.v1, YAML or\n"
           "JSON) ahead of time. The validation codes are printed on stderr (a module that is empty or has\n"
           "duplicate op names is rejected). The package (schema npukit.e1_compiled_package.v1) carries the\n"
           "module, its bound tensors, the partition report (command_buffer_batches, tensor_arena_plan,\n"
           "runtime_binding_plan, descriptor_staging_plan with descriptor_batches and\n"
           "descriptor_execution_batches) and the prepared descriptor (execution) batches with their\n"
           "descriptor images and host_runtime_sequence; 'npu exec' checks and replays it. See\n"
           "docs/e1-compile.md.\n\n"
           "options:\n");
    cli_help_opts(compile_opts, COMPILE_NOPTS);
    printf("\ndevices: %s (e1 modules), %s (ONNX models to .npkb)\n", npk_e1_class.name, npk_npkb_device_names());
}

int cmd_compile(int argc, char **argv) {
    compile_args A;
    int early = cli_start("compile", argc, argv, help, compile_opts, COMPILE_NOPTS, &A, sizeof A);
    if (early >= 0) return early;
    npk_e1_compile_opts o;
    npk_e1_compile_opts_default(&o);
    /* unset 32-bit addresses keep the compiler's defaults */
    A.arena_base = o.arena_base, A.descriptor_base = o.descriptor_base, A.descriptor_stride = o.descriptor_stride;
    const char *file = NULL;
    char *no_opts = NULL;
    int urc = cli_parse("compile", compile_opts, COMPILE_NOPTS, &A, argc, argv, &file, 1, NULL);
    if (!urc && !A.device)
        urc = cli_usage_error("compile", "--device is required (%s, %s)", npk_e1_class.name, npk_npkb_device_names());
    /* the device is checked against the device table before any file is read */
    if (!urc) urc = cli_device("compile", A.device, 0, &A.dev_opts, &no_opts);
    npk_strlist_free(&A.dev_opts);
    if (!urc && strcmp(A.device, npk_e1_class.name) && !npk_npkb_device_ok(A.device))
        urc = cli_usage_error("compile", "device '%s': compile targets %s and %s", A.device, npk_e1_class.name,
                              npk_npkb_device_names());
    const char *tensors[16];
    size_t ntensors;
    int trc = cli_take_list("compile", "--tensors", &A.tensors, tensors, 16, &ntensors);
    char dev_opts[4096] = "";
    if (!urc && !trc && no_opts && (size_t)snprintf(dev_opts, sizeof dev_opts, "%s", no_opts) >= sizeof dev_opts)
        urc = cli_usage_error("compile", "--device-opt: the options are too long");
    free(no_opts);
    if (urc || trc) return urc ? urc : trc;
    const char *device = A.device, *outp = A.out, *format = A.format;
    o.include_tensors = !A.no_tensors;
    o.arena_base = A.arena_base, o.descriptor_base = A.descriptor_base, o.descriptor_stride = A.descriptor_stride;
    if (!file) return cli_usage_error("compile", "no input MODULE");
    if (outp && cli_check_output(outp)) return cli_fail("compile: -o: %s", npk_errmsg());
    if (npk_npkb_device_ok(device)) return compile_npkb(device, dev_opts[0] ? dev_opts : NULL, file, outp);
    int fmt;
    if (!strcmp(format, "package")) fmt = NPK_E1_FMT_PACKAGE;
    else if (!strcmp(format, "executorch")) fmt = NPK_E1_FMT_EXECUTORCH;
    else if (!strcmp(format, "litert")) fmt = NPK_E1_FMT_LITERT;
    else if (!strcmp(format, "report")) fmt = -1;
    else return cli_usage_error("compile", "--format '%s': expected package, report, executorch or litert", format);
    char *text;
    if (cli_read_text(file, &text)) {
        size_t n = strlen(file);
        if (n > 5 && !strcmp(file + n - 5, ".onnx"))
            return cli_fail("compile: %s is an ONNX model, not an e1 module: compile it for v0 or shell (--device v0 -o MODEL.npkb)",
                            file);
        return cli_fail("compile: %s", npk_errmsg());
    }
    if (!npk_shlo_is_module(text)) {
        free(text);
        return cli_fail("compile: %s: not a module of schema %s", file, NPK_SHLO_SCHEMA);
    }
    npk_shlo *m;
    int rc = load_module("compile", file, text, tensors, ntensors, &m);
    free(text);
    if (rc) return rc;
    char *json = NULL;
    o.format = fmt < 0 ? NPK_E1_FMT_PACKAGE : fmt;
    rc = fmt < 0 ? npk_shlo_partition_report(m, &json) : npk_shlo_compile(m, &o, &json);
    npk_shlo_free(m);
    if (rc) return cli_fail("compile: %s: %s", file, npk_errmsg());
    size_t len = strlen(json);
    json[len] = '\n';
    if (outp) rc = cli_write_file(outp, json, len + 1);
    else rc = fwrite(json, 1, len + 1, stdout) == len + 1 ? 0 : npk_err(NPK_EIO, "writing stdout failed");
    free(json);
    if (rc) return cli_fail("compile: %s", npk_errmsg());
    return 0;
}
