// SPDX-License-Identifier: MIT
/*
 * npukit: the e1 StableHLO-subset front end and its compiled packages
 * (docs/e1-compile.md).
 *
 * A module in the e1 runtime's format (`schema: eliza.e1_npu_stablehlo_subset.v1`,
 * YAML or JSON) declares ops with tensor types only; tensor data binds by name
 * (`OP.FIELD`, the lowering's graph field) from the module's optional
 * `tensors` object or from tensor files. Validation reports the document's
 * codes in its order before any MMIO. The partitioner classifies each op
 * (SUPPORTED, or a CPU fallback with its reason) and derives the report of
 * e1-npu.md: command_buffer_batches, tensor_arena_plan, runtime_binding_plan,
 * descriptor_staging_plan (descriptor_batches, descriptor_execution_batches),
 * and the prepared descriptor (execution) batches with their
 * host_runtime_sequence. A package is replayed on the device after the
 * checks the staging helpers make.
 *
 * Supported ops run through the existing e1 lowerings (include/npukit/
 * e1_lower.h); CPU-fallback ops run on the CPU reference and are marked so.
 */
#ifndef NPUKIT_E1_SHLO_H
#define NPUKIT_E1_SHLO_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/e1_drv.h"
#include "npukit/e1_lower.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NPK_SHLO_SCHEMA "eliza.e1_npu_stablehlo_subset.v1"
#define NPK_E1_PACKAGE_SCHEMA "npukit.e1_compiled_package.v1"

/* 1 when text (JSON or YAML) is a mapping whose `schema` is NPK_SHLO_SCHEMA. */
int npk_shlo_is_module(const char *text);
/* 1 when text is a JSON object whose `schema` is NPK_E1_PACKAGE_SCHEMA. */
int npk_e1_is_package(const char *text);

typedef struct npk_shlo npk_shlo;

/* Parse a module (JSON first, then YAML). Parse errors (not validation
 * codes) return -NPK_EFORMAT with a message naming the op and field. */
int npk_shlo_parse(npk_shlo **out, const char *text);
void npk_shlo_free(npk_shlo *m);
/* Bind tensor data from a JSON or YAML mapping: {"OP": {"FIELD": data}} or
 * {"OP.FIELD": data}; data is a nested integer array, an integer (group_size)
 * or a string naming another bound tensor or an earlier op ("OP" or
 * "OP.result"). Later bindings replace earlier ones. */
int npk_shlo_bind(npk_shlo *m, const char *text, const char *what);

/* Number of validation issues (MODULE_EMPTY, DUPLICATE_OP_NAME and the per-op codes). */
size_t npk_shlo_issue_count(const npk_shlo *m);
/* Issue i: op name, op kind, code, message. */
void npk_shlo_issue(const npk_shlo *m, size_t i, const char **op_name, const char **op_kind, const char **code,
                    const char **message);
/* 0 when the module may be planned at all: not empty, no duplicate op names
 * (else -NPK_EINVAL naming every such issue). Other issues make CPU-fallback
 * entries. */
int npk_shlo_check_module(const npk_shlo *m);

/* The npukit lowering module (docs/e1-lowering.md JSON) for the module and
 * its bound data: supported ops as lowerings, fallback ops as records with
 * "cpu_fallback": REASON. Fails when data is missing or has the wrong shape. */
int npk_shlo_to_lower_json(const npk_shlo *m, char **json);

/* Compile options. */
typedef struct npk_e1_compile_opts {
    uint32_t arena_base;        /* guest byte address of the tensor arena (4-aligned) */
    uint32_t descriptor_base;   /* guest byte address of execution batch 0's descriptors (4-aligned) */
    uint32_t descriptor_stride; /* bytes between execution batches' descriptors (4-aligned, >= 16 * 7) */
    int format;                 /* NPK_E1_FMT_* */
    int include_tensors;        /* carry the bound tensor data (default 1) */
} npk_e1_compile_opts;
enum { NPK_E1_FMT_PACKAGE = 0, NPK_E1_FMT_EXECUTORCH = 1, NPK_E1_FMT_LITERT = 2 };
void npk_e1_compile_opts_default(npk_e1_compile_opts *o);

/* The partition report (eliza.e1_npu_partition_report.v1) as JSON text. */
int npk_shlo_partition_report(const npk_shlo *m, char **json);
/* Compile: the package (NPK_E1_PACKAGE_SCHEMA: module, tensors, partition
 * report, prepared batches) or a delegate blob. A delegate blob for a module
 * with validation issues is refused (-NPK_EINVAL). */
int npk_shlo_compile(const npk_shlo *m, const npk_e1_compile_opts *o, char **json);

/* Check a package as the staging helpers do, without a device. Returns 0 or
 * -NPK_EINVAL / -NPK_EFORMAT naming the batch and the field. */
int npk_e1_package_check(const char *package_json);
/* Check, then run a package on the device behind drv: supported ops in
 * descriptor-ready execution batches replay their host_runtime_sequence
 * (arena population, GEMM preamble, descriptor memory, DESC_* submission,
 * DESC_STATUS poll); other supported ops run through the lowerings, fallback
 * ops on the CPU reference. tensors_text (may be NULL) binds data as
 * npk_shlo_bind. The result is the npu lower JSON plus a "replay" section. */
int npk_e1_package_exec(npk_e1 *drv, const char *package_json, const char *const *tensor_texts, size_t ntensor_texts,
                        const npk_lower_module_opts *opts, char **result_json);

#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_E1_SHLO_H */
