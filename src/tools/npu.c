// SPDX-License-Identifier: MIT
/* npu: the npukit command line. */
#include "cli.h"
#include "npukit/cpu.h"

#include <string.h>

static const npu_cmd commands[] = {
    {"demo", "run an int8 GEMM and a descriptor ring on the simulated e1 and print results and counters", cmd_demo},
    {"run", "run an ONNX model on a device (partition, execute, report)", cmd_run},
    {"onnx-test", "run ONNX backend test directories and compare outputs", cmd_onnx_test},
    {"onnx-ops", "print the ONNX operator table: opsets, devices, and what is not run and why", cmd_onnx_ops},
    {"lower", "run a JSON lowering record or module on the e1 device", cmd_lower},
    {"compile", "compile an e1 StableHLO-subset module (package, delegate blob) or an ONNX model for v0/shell (.npkb)", cmd_compile},
    {"exec", "run a compiled e1 package or .npkb model on a device (checked first)", cmd_exec},
    {"llm", "generate text with a llama2.c checkpoint on pccx or the CPU", cmd_llm},
    {"llm-synth", "write a random-weight llama2.c checkpoint of a published shape (stories15M, ...)", cmd_llm_synth},
    {"qtest", "serve a device model over QEMU's qtest text protocol", cmd_qtest},
    {"vp", "the virtual platform: serve devices as PCI functions to QEMU; 'vp run' boots a Linux guest with them", cmd_vp},
    {"asm", "assemble a text command stream into a binary ring image", cmd_asm},
    {"disasm", "disassemble a binary command stream into text", cmd_disasm},
    {"shell-map", "map a YAML schedule onto a shell descriptor stream", cmd_shell_map},
    {"shell-run", "execute a shell descriptor stream and print registers, IRQs and trace", cmd_shell_run},
    {"sweep", "run a design-space sweep (devices x parameters x workloads), locally or with MPI", cmd_sweep},
    {"bench", "run the benchmark suite with same-run baselines", cmd_bench},
    {"devices", "list the device models with their clocks and register windows", cmd_devices},
    {"ports", "list the kinds of port (--port): in-process model, qtest, hardware", cmd_ports},
};

static void usage(FILE *f) {
    fprintf(f, "usage: npu <command> [options]\n\nnpukit %s: a software NPU platform (device models, drivers, compiler, tools).\n\ncommands:\n",
            npk_version());
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'npu <command> --help' describes a command and its options.\n");
}

int main(int argc, char **argv) {
    /* Started as build/npu-qemu (or qemu-system-npu): the QEMU drop-in, i.e.
     * `npu qtest` with QEMU's command line (docs/qtest.md). */
    const char *base = argc > 0 ? strrchr(argv[0], '/') : NULL;
    base = base ? base + 1 : argc > 0 ? argv[0] : "";
    if (!strcmp(base, "npu-qemu") || !strncmp(base, "qemu-system-", 12)) return cli_finish_stdout(cmd_qtest(argc, argv));
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        if (argc > 2 && strcmp(argv[1], "help") == 0) {
            for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
                if (!strcmp(commands[i].name, argv[2])) {
                    char *hargv[] = {argv[2], "--help", NULL};
                    return cli_finish_stdout(commands[i].run(2, hargv));
                }
            fprintf(stderr, "npu: unknown command '%s' (npu --help lists the commands)\n", argv[2]);
            return 2;
        }
        usage(stdout);
        return cli_finish_stdout(0);
    }
    if (!strcmp(argv[1], "--version")) {
        printf("npukit %s\n", npk_version());
        if (npk_isa_emulated())
            printf("emulated AVX-512 test build (NPUKIT_EMULATE_AVX512, SIMDe): the avx512 kernels run on portable "
                   "intrinsics; not for speed or real use\n");
        return cli_finish_stdout(0);
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, argv[1])) {
            /* every output file of the command is renamed into place only when it succeeded */
            cli_outputs_begin();
            int rc = cli_finish_stdout(commands[i].run(argc - 1, argv + 1));
            if (cli_outputs_commit(rc == 0) && rc == 0) rc = cli_fail("%s", npk_errmsg());
            return rc;
        }
    /* one line, like every other error (issue 8); `npu --help` lists the commands */
    fprintf(stderr, "npu: unknown command '%s' (npu --help lists the commands)\n", argv[1]);
    return 2;
}
