// SPDX-License-Identifier: MIT
/* The npu command line: shared helpers and the command table. */
#ifndef NPUKIT_TOOLS_CLI_H
#define NPUKIT_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "npukit/npu.h"
#include "npukit/report.h"
#include "npukit/trace.h"
#include "npukit/opt.h"

/* A command: run(argc, argv) with argv[0] = command name. Returns the exit code. */
typedef struct npu_cmd {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} npu_cmd;

/* Commands (each in its own cmd_*.c file). */
int cmd_demo(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_ports(int argc, char **argv);
int cmd_onnx_ops(int argc, char **argv);
int cmd_qtest(int argc, char **argv);
int cmd_asm(int argc, char **argv);
int cmd_disasm(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_onnx_test(int argc, char **argv);
int cmd_lower(int argc, char **argv);
int cmd_llm(int argc, char **argv);
int cmd_llm_synth(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_shell_map(int argc, char **argv);
int cmd_shell_run(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_vp(int argc, char **argv);

/* Does the file start with the NPKB magic (a compiled model, docs/npkb.md)? (cmd_compile.c) */
int cli_is_npkb(const char *path);
/* e1-format modules (cmd_compile.c): read text as NUL-terminated (refusing NUL bytes). */
int cli_read_text(const char *path, char **text);
/* Parse an e1 StableHLO-subset module, bind --tensors files, print its
 * validation issues on stderr and translate it into an npukit lowering module. */
int cli_shlo_lower_module(const char *file, const char *text, const char *const *tensors, size_t ntensors, char **out);

/* Print "npu: <message>" to stderr; returns exit code 1 (usage errors: 2). */
int cli_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The command-line parser: argv[1..] against a table of flags (npk_opt
 * entries named "--flag" or "-f", values at offsets in base), the same
 * descriptor and value parser as device options. "--flag=value" and
 * "--flag value" both work; "--" ends the flags. Unknown flags, a missing
 * value, a value for a flag that takes none, a single-value flag given twice,
 * a bad value and more than max_pos positional arguments are usage errors.
 * Positional arguments go to pos[0..*npos-1]. Returns 0, or 2 after printing
 * the usage error. */
int cli_parse(const char *cmd, const npk_opt *t, size_t n, void *base, int argc, char **argv, const char **pos,
              int max_pos, int *npos);
/* Move the values of a repeatable flag (strings of argv) into dst[0..max-1]
 * and free the list (always). More than max values is a usage error (2, *n = 0). */
int cli_take_list(const char *cmd, const char *flag, npk_strlist *l, const char **dst, size_t max, size_t *n);
/* The options section of a command's help, from its table ("-h, --help" last). */
void cli_help_opts(const npk_opt *t, size_t n);
/* Flag-table entries by value type (npk_opt, include/npukit/opt.h): flag,
 * alias (or NULL), the field f of the arguments struct T, then the default
 * (text or NULL), range, placeholder (NULL: from the type) and help. */
#define CLI_FLAG(flag, alias, T, f, help) {flag, alias, NPK_OPT_FLAG, offsetof(T, f), NULL, 0, 0, 0, 0, 0, NULL, help, 0}
#define CLI_STR(flag, alias, T, f, def, meta, help)                                                                  \
    {flag, alias, NPK_OPT_STR, offsetof(T, f), def, 0, 0, 0, 0, 0, meta, help, 0}
#define CLI_LIST(flag, alias, T, f, meta, help) {flag, alias, NPK_OPT_LIST, offsetof(T, f), NULL, 0, 0, 0, 0, 0, meta, help, 0}
#define CLI_NUM(flag, alias, type, T, f, def, lo, hi, meta, help)                                                    \
    {flag, alias, NPK_OPT_##type, offsetof(T, f), def, lo, hi, 0, 0, 0, meta, help, 0}
/* The device option flag every command shares: --device-opt K=V[,K=V...]
 * (repeatable; --opts and --device-opts are accepted as older spellings). */
#define CLI_DEVICE_OPT(type, field)                                                                                   \
    CLI_LIST("--device-opt", "--opts --device-opts", type, field, "K=V[,K=V]",                                        \
             "device model options, repeatable (npu devices lists them)")
/* The host-thread flag of every command that computes: --threads N (a
 * uint32_t field; 0 = the default, every core or $NPUKIT_THREADS). Apply it
 * with cli_threads after parsing. */
#define CLI_THREADS(type, field)                                                                                      \
    CLI_NUM("--threads", NULL, U32, type, field, "0", 0, 256, "N",                                                    \
            "host threads for the arithmetic (CPU path, device models' GEMMs);\n"                                     \
            "0 = every core, or $NPUKIT_THREADS (results are the same bytes at any count)")
void cli_threads(uint32_t n);
/* --report[=FILE] (a const char * field): the report on standard output
 * ("-", the flag alone) or, with =FILE, in FILE (all-or-nothing as every
 * output). Only the = form takes a value, so `--report MODEL` stays a flag
 * and a positional argument. */
#define CLI_REPORT(T, f, help) {"--report", NULL, NPK_OPT_STR, offsetof(T, f), NULL, 1, 0, 0, 0, 0, "[=FILE]", help, 0}
/* Check a device name (allow_cpu: "cpu" too) and its options against the
 * device table before any file is read. *joined gets the options as one
 * "k=v,k=v" string (malloc'd, NULL when none; free it). Returns 0 or 2 after
 * printing a usage error. */
int cli_device(const char *cmd, const char *device, int allow_cpu, const npk_strlist *dev_opts, char **joined);
/* 1 if argv has --help or -h. */
int cli_wants_help(int argc, char **argv);
/* The start of every command cmd: with --help or -h, print help() and return
 * 0 (the command's exit code); otherwise zero the arguments struct args (size
 * bytes), apply the defaults of flag table t (n entries; t may be NULL) and
 * return -1 to go on, or 1 after printing the error when a default is bad. */
int cli_start(const char *cmd, int argc, char **argv, void (*help)(void), const npk_opt *t, size_t n, void *args,
              size_t size);
/* Parse an unsigned number like strtoul(s, 0, 0) with full-string and range checks. */
int cli_parse_u64(const char *s, uint64_t *out);
int cli_parse_double(const char *s, double *out);
/* Read a whole file (binary). Returns 0 or a negative npk_status with npk_errmsg set. */
int cli_read_file(const char *path, uint8_t **data, size_t *len);
int cli_write_file(const char *path, const void *data, size_t len);
/* Validate an output path before the work: its directory exists and is
 * writable, and the path is not a directory. 0 or -NPK_EIO with npk_errmsg. */
int cli_check_output(const char *path);
/* SIGTERM and SIGINT call on_stop (a server then ends its session cleanly);
 * SIGPIPE is ignored, so a vanished client ends the session, not the process. */
void cli_stop_signals(void (*on_stop)(int));
/* Run gnuplot on a script file (stdout to /dev/null). 0, or cli_fail's 1 with
 * a message naming `what` (the flag) when gnuplot is missing or fails. */
int cli_gnuplot(const char *script, const char *what);

/* An output file written all-or-nothing: the data goes to a temporary file
 * beside `path` and is renamed into place by cli_out_close(o, 1) only when
 * every write, the flush and the close succeeded; cli_out_close(o, 0) or any
 * failure removes the temporary, so a failed command leaves no partial file
 * (an existing file at path is kept untouched). Paths that exist and are not
 * regular files (/dev/null, /dev/stdout, FIFOs) are written directly. */
typedef struct cli_out {
    FILE *f;
    const char *path;
    char *tmp; /* NULL when written directly */
} cli_out;
int cli_out_open(cli_out *o, const char *path);
int cli_out_close(cli_out *o, int ok);
/* All of a command's outputs or none (npu.c wraps every command): after
 * cli_outputs_begin(), cli_out_close(o, 1) keeps the finished temporary
 * instead of renaming it, and cli_outputs_commit(ok) renames every kept one
 * into place when ok (the command succeeded), or removes them all. So a
 * command failing after its first output (a trace after a report) replaces
 * no existing file. commit returns 0 or -NPK_EIO naming the user's path. */
void cli_outputs_begin(void);
int cli_outputs_commit(int ok);
/* The outputs written so far are whole and wanted although the command will
 * exit non-zero (a sweep whose CSV records its failed points). */
void cli_outputs_complete(void);
/* For an output written by another program (gnuplot's `set output`): a
 * temporary beside path, committed with the others; path itself for devices
 * and FIFOs, or outside begin/commit. NULL with npk_errmsg on failure. */
const char *cli_out_reserve(const char *path);
/* Whole outputs through cli_out: bytes, a Chrome trace, a JSON report. */
int cli_write_trace(const npk_trace *t, const char *path);
int cli_write_report(const npk_report *r, const char *path);
/* End of every command: flush stdout; a write error there (a full disk,
 * /dev/full, a closed pipe) turns exit code 0 into 1 with one error line. */
int cli_finish_stdout(int rc);
/* Progress line on a terminal only: cli_progress("decode", i, n). */
void cli_progress(const char *what, uint64_t done, uint64_t total);
void cli_progress_end(void);
/* The same as a library progress callback; ctx is the label (a string). */
void cli_progress_cb(void *ctx, size_t done, size_t total);

/* --plot: a bar chart of the device rows (see cli.c) written to file through
 * cli_out_reserve; 0, or 1 after the message. cli_plot_report draws a report's
 * device operators (what: the command, for the title). */
int cli_plot_bars(const char *rows, int nrows, int has_util, double min_cyc, double max_cyc, const char *title,
                  const char *xtitle, const char *file);
int cli_plot_report(const npk_report *r, const char *what, const char *file);
/* Where the report goes: stdout or FILE opened through o. NULL with npk_errmsg. */
FILE *cli_report_open(const char *where, cli_out *o);
/* Finish it: 0, or -NPK_EIO when a write failed (stdout included). */
int cli_report_close(cli_out *o, FILE *f);
/* The two for one npk_report: 0, or 1 after "npu: CMD: --report: ..." */
int cli_emit_report(const char *cmd, const char *where, const npk_report *r);

/* A device server's session (npu qtest): the device's energy since creation
 * (has = 0 and zeros without an energy model), and the session's report from
 * the trace recorded on the device (one row per command: v0/e1 queue or
 * descriptor track, else the engine tracks), its cycles and its energy since
 * e0 plus leakage, to --report (report: "-" or FILE), --report-json and
 * --plot (each may be NULL). 0, or 1 after the message. */
struct npk_sim;
struct npk_dev;
void cli_dev_energy(struct npk_dev *d, npk_energy *e, npk_area *a, uint32_t *nm, int *has);
int cli_session_report(const char *cmd, const char *report, const char *json, const char *plot, struct npk_sim *sim,
                       const npk_trace *tr, const npk_energy *e0);

#endif
