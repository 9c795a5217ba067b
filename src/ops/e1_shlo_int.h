// SPDX-License-Identifier: MIT
/* Internals shared by the e1 StableHLO-subset sources (src/ops/e1_shlo*.c). */
#ifndef NPUKIT_OPS_E1_SHLO_INT_H
#define NPUKIT_OPS_E1_SHLO_INT_H

#include <jansson.h>

#include "npukit/e1_shlo.h"

#define SH_MAXT 12      /* tensor-type fields of an op besides result_type */
#define SH_MAXRANK 8
#define SH_MAXF 12      /* required graph fields of a lowering */

typedef struct sh_type {
    int present;
    unsigned rank;
    unsigned dim[SH_MAXRANK];
    char dtype[32];
} sh_type;


typedef struct sh_opdef sh_opdef;
typedef struct sh_op {
    const sh_opdef *def;
    char name[128];
    char precision[32];
    sh_type result;
    sh_type t[SH_MAXT];     /* per def->types[i] */
    char padding[32];
    long long stride, dilation;
    char activation[32];
    /* classification */
    int supported;
    const char *runtime_api; /* NULL when the contract has no entry */
    char reason[160];
} sh_op;

enum { A_NONE = 0, A_CONV, A_ACT, A_SWIGLU };
typedef struct sh_opdef {
    const char *kind;
    const char *types[SH_MAXT]; /* declaration order after result_type */
    int prec_required;
    int attrs;
    const char *contract; /* precisions with a runtime-contract entry ('|' list), NULL: all 13 */
    void (*validate)(const sh_op *op, npk_shlo *m);
} sh_opdef;

typedef struct sh_issue {
    char op_name[128], op_kind[48], code[40], message[160];
} sh_issue;

/* The lowering plan of an op (what the e1 runtime's planner would return). */
typedef struct sh_plan {
    const char *runtime_api, *lowering_precision;
    char schema[80];
    const char *npk_op, *npk_prec; /* the npukit lowering record */
    unsigned nf;
    const char *field[SH_MAXF];    /* required graph fields */
    const char *type[SH_MAXF];     /* the declared type field of each (NULL: none) */
    const char *mapped[3];         /* mapped opcodes (NULL-terminated) */
} sh_plan;

struct npk_shlo {
    json_t *root;
    char name[128];
    sh_op *ops;
    size_t nops;
    sh_issue *issues;
    size_t nissues;
    json_t *data; /* "OP.FIELD" -> bound value */
};

/* ---- the partition (src/ops/e1_compile.c) ---- */
typedef struct sh_alloc {
    char name[200], role[48];
    size_t op;
    const sh_type *t;
    int acc; /* int32_accumulator storage */
    uint64_t size, offset;
} sh_alloc;

typedef struct sh_stage {
    size_t op;
    unsigned batch;
    int opcode;
    const char *opcode_name;
    int in_ready, wb_ready, ready, have_stream, have_out, have_pre;
    uint64_t source, stream, scr_out, req_out, out_off, out_size;
    size_t out_alloc;
    unsigned nin, nunres;
    struct {
        const char *field;
        size_t alloc;
        uint64_t scratch;
    } in[SH_MAXF];
    const char *unres[SH_MAXF];
    uint32_t cfg, base, stride, w0;
    const char *reasons[8];
    unsigned nr;
} sh_stage;

typedef struct sh_cbatch {
    size_t first, n; /* module op indices */
} sh_cbatch;

typedef struct sh_xbatch {
    unsigned batch, index;
    size_t first, n; /* stage indices */
    int ready;
} sh_xbatch;

typedef struct sh_part {
    const npk_shlo *m;
    sh_alloc *allocs;
    size_t nallocs;
    uint64_t arena_total;
    sh_cbatch *batches;
    size_t nbatches;
    sh_stage *stages;
    size_t nstages;
    sh_xbatch *xb;
    size_t nxb, max_slots;
} sh_part;

int sh_part_build(sh_part *P, const npk_shlo *m);
void sh_part_free(sh_part *P);
json_t *sh_part_report(const sh_part *P);

/* Parse JSON, else YAML, into a JSON value (mappings -> objects). */
int sh_load_text(const char *text, json_t **out);
void sh_plan_of(const sh_op *op, sh_plan *p);
/* Index of type field `name` in op's definition, or -1. */
int sh_type_index(const sh_op *op, const char *name);
const char *sh_type_name(const sh_op *op, int i);
json_t *sh_shape_json(const sh_type *t);
/* The partition report (eliza.e1_npu_partition_report.v1) as a JSON value. */
json_t *sh_partition_report(const npk_shlo *m);
json_t *sh_issues_json(const npk_shlo *m);
json_t *sh_lowering_plans(const npk_shlo *m);
/* Register offset for a runtime register name, or -1. */
int sh_reg_offset(const char *name);

#endif
