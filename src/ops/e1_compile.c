// SPDX-License-Identifier: MIT
/* The e1 partitioner report and compiled packages (docs/e1-compile.md):
 * command_buffer_batches, tensor_arena_plan, runtime_binding_plan,
 * descriptor_staging_plan (descriptor_batches, descriptor_execution_batches),
 * descriptor command-buffer images, prepared descriptor (execution) batches
 * with their host_runtime_sequence, and the ExecuTorch / LiteRT prototype
 * delegate blobs. Where the e1 Python runtime contradicts e1-npu.md and the
 * RTL, this follows the document: GEMM_S4 bases in INT4 elements, HEAD is the
 * producer index (TAIL = 0, HEAD = n), duplicate op names are rejected. */
#include "e1_shlo_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t align4(uint64_t v) { return (v + 3) & ~3ull; }

/* ---- registers of the runtime MMIO contract ---- */

static const struct {
    const char *name;
    int off;
} REGS[] = {
    {"GEMM_CFG", E1_REG_GEMM_CFG},   {"GEMM_BASE", E1_REG_GEMM_BASE}, {"GEMM_STRIDE", E1_REG_GEMM_STRIDE},
    {"DESC_BASE", E1_REG_DESC_BASE}, {"DESC_HEAD", E1_REG_DESC_HEAD}, {"DESC_TAIL", E1_REG_DESC_TAIL},
    {"CMD_PARAM", E1_REG_CMD_PARAM}, {"CTRL_STATUS", E1_REG_CTRL_STATUS}, {"DESC_STATUS", E1_REG_DESC_STATUS},
};

int sh_reg_offset(const char *name) {
    for (size_t i = 0; i < sizeof REGS / sizeof REGS[0]; i++)
        if (!strcmp(REGS[i].name, name)) return REGS[i].off;
    return -1;
}

static json_t *hex(uint64_t v) {
    char b[24];
    snprintf(b, sizeof b, "0x%08llx", (unsigned long long)v);
    return json_string(b);
}

/* ---- sizes ---- */

static unsigned dtype_bits(const char *dt) {
    if (!strcmp(dt, "int2") || !strcmp(dt, "bitnet_int2")) return 2;
    if (!strcmp(dt, "int4") || !strcmp(dt, "sparse_int4_2_4") || !strcmp(dt, "int4_group_scaled") ||
        !strcmp(dt, "group_scaled_int4") || !strcmp(dt, "w4a8_gs"))
        return 4;
    if (!strcmp(dt, "fp16") || !strcmp(dt, "float16") || !strcmp(dt, "bf16") || !strcmp(dt, "bfloat16")) return 16;
    return 8;
}

static uint64_t numel(const sh_type *t) {
    uint64_t n = 1;
    for (unsigned i = 0; i < t->rank; i++) n *= t->dim[i];
    return n;
}

/* (m, n, k) of a rank-2 lhs x rhs with matching K, else 0. */
static int matmul_shape(const sh_op *op, unsigned *m, unsigned *n, unsigned *k) {
    int l = sh_type_index(op, "lhs_type"), r = sh_type_index(op, "rhs_type");
    if (l < 0 || r < 0) return 0;
    const sh_type *a = &op->t[l], *b = &op->t[r];
    if (a->rank != 2 || b->rank != 2 || a->dim[1] != b->dim[0]) return 0;
    *m = a->dim[0];
    *k = a->dim[1];
    *n = b->dim[1];
    return 1;
}

static int is_acc_result(const sh_op *op) {
    unsigned m, n, k;
    return matmul_shape(op, &m, &n, &k) && (!strcmp(op->precision, "int8") || !strcmp(op->precision, "int4"));
}

/* ---- the partition ---- */

static void add_reason(sh_stage *s, const char *r) {
    if (s->nr < sizeof s->reasons / sizeof s->reasons[0]) s->reasons[s->nr++] = r;
}

static long find_alloc(const sh_part *P, const char *name) {
    for (size_t i = 0; i < P->nallocs; i++)
        if (!strcmp(P->allocs[i].name, name)) return (long)i;
    return -1;
}

void sh_part_free(sh_part *P) {
    free(P->allocs);
    free(P->batches);
    free(P->stages);
    free(P->xb);
    memset(P, 0, sizeof *P);
}

static void stage_op(sh_part *P, sh_stage *s) {
    const sh_op *op = &P->m->ops[s->op];
    sh_plan p;
    sh_plan_of(op, &p);
    s->opcode = -1;
    if (!strcmp(p.lowering_precision, "int8")) s->opcode = E1_OP_GEMM_S8, s->opcode_name = "OP_GEMM_S8";
    if (!strcmp(p.lowering_precision, "int4")) s->opcode = E1_OP_GEMM_S4, s->opcode_name = "OP_GEMM_S4";
    char nm[200];
    snprintf(nm, sizeof nm, "%s.result", op->name);
    long oa = find_alloc(P, nm);
    s->out_off = P->allocs[oa].offset;
    s->out_size = P->allocs[oa].size;
    s->out_alloc = (size_t)oa;
    for (unsigned k = 0; k < p.nf; k++) {
        const char *role = p.field[k];
        if (!strcmp(op->def->kind, "stablehlo.attention_av") && !strcmp(role, "attention")) role = "weights";
        snprintf(nm, sizeof nm, "%s.%s", op->name, role);
        long a = find_alloc(P, nm);
        if (a < 0) {
            s->unres[s->nunres++] = p.field[k];
            continue;
        }
        s->in[s->nin].field = p.field[k];
        s->in[s->nin++].alloc = (size_t)a;
    }
    if (s->nunres) add_reason(s, "unresolved_required_graph_fields");
    if (strcmp(p.runtime_api, "lower_matmul_smoke")) add_reason(s, "runtime_api_not_supported_by_descriptor_staging_plan");
    if (s->opcode < 0) add_reason(s, "precision_not_supported_by_descriptor_staging_plan");
    if (s->nin < 2) add_reason(s, "descriptor_staging_requires_two_input_bindings");
    if (s->nr) return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (unsigned i = 0; i < s->nin; i++) {
        const sh_alloc *a = &P->allocs[s->in[i].alloc];
        if (a->offset < lo) lo = a->offset;
        if (a->offset + a->size > hi) hi = a->offset + a->size;
    }
    s->have_stream = 1;
    s->source = lo;
    s->stream = align4(hi - lo);
    for (unsigned i = 0; i < s->nin; i++) s->in[i].scratch = P->allocs[s->in[i].alloc].offset - lo;
    s->in_ready = !(lo & 3) && s->stream > 0 && s->stream <= 63 && !(s->stream & 3);
    if (!s->in_ready) add_reason(s, "input_stream_span_not_representable_by_descriptor_abi");
    unsigned M, N, K;
    if (!matmul_shape(op, &M, &N, &K)) {
        add_reason(s, "op_shape_not_supported_by_descriptor_staging_plan");
    } else {
        int int4 = s->opcode == E1_OP_GEMM_S4;
        uint64_t la = 0, rb = 0;
        for (unsigned i = 0; i < s->nin; i++) {
            if (!strcmp(s->in[i].field, "lhs")) la = s->in[i].scratch;
            if (!strcmp(s->in[i].field, "rhs")) rb = s->in[i].scratch;
        }
        s->have_out = 1;
        s->req_out = align4((uint64_t)M * N * 4);
        s->scr_out = align4(s->stream);
        /* e1-npu.md: GEMM_S4 A/B bases count INT4 elements (the runtime's byte offsets are wrong) */
        uint64_t ea = int4 ? 2 * la : la, eb = int4 ? 2 * rb : rb;
        s->have_pre = 1;
        s->cfg = M | N << 8 | K << 16;
        s->base = (uint32_t)(ea | eb << 8 | s->scr_out << 16);
        s->stride = K | N << 8 | (4 * N) << 16;
        if (s->scr_out + s->req_out > E1_SCRATCH_BYTES) add_reason(s, "scratch_layout_exceeds_64_byte_descriptor_window");
        else {
            /* npukit: the register fields must hold the layout the RTL bounds accept */
            npk_e1_gemm g = {M, N, K, (unsigned)ea, (unsigned)eb, (unsigned)s->scr_out, K, N, 4 * N};
            if (ea > 63 || eb > 63 || npk_e1_gemm_check(&g, int4)) add_reason(s, "gemm_layout_outside_rtl_register_fields");
        }
    }
    s->wb_ready = s->have_out && s->out_size >= s->req_out && !(s->out_off & 3);
    if (!s->wb_ready) add_reason(s, "output_arena_allocation_not_descriptor_writeback_sized");
    s->ready = s->in_ready && s->wb_ready && !s->nr;
    if (s->ready) s->w0 = e1_desc_w0((uint32_t)s->opcode, 1, 0, (uint32_t)s->stream, 1);
}

static int same_pre(const sh_stage *a, const sh_stage *b) {
    return a->have_pre == b->have_pre && a->cfg == b->cfg && a->base == b->base && a->stride == b->stride;
}

int sh_part_build(sh_part *P, const npk_shlo *m) {
    memset(P, 0, sizeof *P);
    P->m = m;
    size_t nt = 0;
    for (size_t i = 0; i < m->nops; i++) {
        nt++;
        for (int k = 0; k < SH_MAXT && m->ops[i].def && m->ops[i].t[k].present; k++) nt++;
    }
    P->allocs = calloc(nt + 1, sizeof *P->allocs);
    P->batches = calloc(m->nops + 1, sizeof *P->batches);
    P->stages = calloc(m->nops + 1, sizeof *P->stages);
    P->xb = calloc(m->nops + 1, sizeof *P->xb);
    if (!P->allocs || !P->batches || !P->stages || !P->xb) {
        sh_part_free(P);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    /* tensor arena: every op in module order, result first, then its inputs */
    uint64_t off = 0;
    for (size_t i = 0; i < m->nops; i++) {
        const sh_op *op = &m->ops[i];
        for (int k = -1; k < SH_MAXT; k++) {
            const sh_type *t = k < 0 ? &op->result : &op->t[k];
            if (k >= 0 && (!op->def->types[k] || !t->present)) break;
            sh_alloc *a = &P->allocs[P->nallocs++];
            const char *tn = k < 0 ? "result_type" : op->def->types[k];
            snprintf(a->role, sizeof a->role, "%.*s", (int)(strlen(tn) - 5), tn);
            snprintf(a->name, sizeof a->name, "%s.%s", op->name, a->role);
            a->op = i;
            a->t = t;
            a->acc = k < 0 && is_acc_result(op);
            a->size = a->acc ? numel(t) * 4 : (numel(t) * dtype_bits(t->dtype) + 7) / 8;
            if (!a->size) a->size = 1;
            off = align4(off);
            a->offset = off;
            off += a->size;
        }
    }
    P->arena_total = align4(off);
    /* command-buffer batches: runs of supported ops, at most 7 each; a fallback ends a run */
    size_t run = 0;
    for (size_t i = 0; i <= m->nops; i++) {
        int sup = i < m->nops && m->ops[i].supported;
        if (sup && run < E1_RING_MAX_PENDING) {
            if (!run) P->batches[P->nbatches].first = i;
            run++;
            P->batches[P->nbatches].n = run;
            if (run == E1_RING_MAX_PENDING) P->nbatches++, run = 0;
            continue;
        }
        if (run) P->nbatches++, run = 0;
        if (sup) {
            P->batches[P->nbatches].first = i;
            P->batches[P->nbatches].n = run = 1;
        }
    }
    /* staging ops (the supported ops, in order) */
    for (size_t b = 0; b < P->nbatches; b++)
        for (size_t j = 0; j < P->batches[b].n; j++) {
            sh_stage *s = &P->stages[P->nstages++];
            s->op = P->batches[b].first + j;
            s->batch = (unsigned)b;
            stage_op(P, s);
        }
    /* execution batches: a blocked op alone; a ready op starts a new one when its preamble differs */
    for (size_t i = 0; i < P->nstages; i++) {
        sh_stage *s = &P->stages[i];
        sh_xbatch *cur = P->nxb ? &P->xb[P->nxb - 1] : NULL;
        int join = cur && cur->ready && s->ready && cur->batch == s->batch && same_pre(&P->stages[cur->first], s) &&
                   cur->n < E1_RING_MAX_PENDING;
        if (join) {
            cur->n++;
            continue;
        }
        sh_xbatch *x = &P->xb[P->nxb];
        x->batch = s->batch;
        x->index = (unsigned)P->nxb;
        x->first = i;
        x->n = 1;
        x->ready = s->ready;
        P->nxb++;
    }
    for (size_t i = 0; i < P->nxb; i++)
        if (P->xb[i].n > P->max_slots) P->max_slots = P->xb[i].n;
    return 0;
}

/* ---- report JSON ---- */

static json_t *strs(const char *const *v, unsigned n) {
    json_t *a = json_array();
    for (unsigned i = 0; i < n; i++) json_array_append_new(a, json_string(v[i]));
    return a;
}

static json_t *alloc_json(const sh_part *P, const sh_alloc *a, const char *graph_field) {
    json_t *o = json_object();
    if (graph_field) json_object_set_new(o, "graph_field", json_string(graph_field));
    json_object_set_new(o, "tensor_name", json_string(a->name));
    json_object_set_new(o, "op_name", json_string(P->m->ops[a->op].name));
    json_object_set_new(o, "role", json_string(a->role));
    json_object_set_new(o, "shape", sh_shape_json(a->t));
    json_object_set_new(o, "dtype", json_string(a->t->dtype));
    json_object_set_new(o, "storage_dtype", json_string(a->acc ? "int32_accumulator" : "logical"));
    json_object_set_new(o, "byte_size", json_integer((json_int_t)a->size));
    json_object_set_new(o, "offset", json_integer((json_int_t)a->offset));
    return o;
}

static json_t *op_names_json(const sh_part *P, size_t first, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_string(P->m->ops[P->stages[first + i].op].name));
    return a;
}

static json_t *preamble_json(const sh_stage *s) {
    json_t *o = json_object();
    if (s->have_pre) {
        json_object_set_new(o, "GEMM_CFG", json_integer(s->cfg));
        json_object_set_new(o, "GEMM_BASE", json_integer(s->base));
        json_object_set_new(o, "GEMM_STRIDE", json_integer(s->stride));
    }
    return o;
}

static json_t *blocked_json(const sh_part *P, size_t first, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        const sh_stage *s = &P->stages[first + i];
        if (s->ready) continue;
        json_t *o = json_object();
        json_object_set_new(o, "op_name", json_string(P->m->ops[s->op].name));
        json_object_set_new(o, "blocking_reasons", strs(s->reasons, s->nr));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *nullable(int have, uint64_t v) { return have ? json_integer((json_int_t)v) : json_null(); }

/* A plan's schema and how many of its n ops are ready and blocked. */
static void plan_counts(json_t *o, const char *schema, size_t ready, size_t n) {
    json_object_set_new(o, "schema", json_string(schema));
    json_object_set_new(o, "ready_ops", json_integer((json_int_t)ready));
    json_object_set_new(o, "blocked_ops", json_integer((json_int_t)(n - ready)));
}

/* Why long: the JSON of a compiled partition, one section per key of the package schema
 * (batches, arena plan, runtime binding, staging, entries) in the schema's order. */
json_t *sh_part_report(const sh_part *P) {
    const npk_shlo *m = P->m;
    json_t *r = json_object();
    size_t sup = 0;
    for (size_t i = 0; i < m->nops; i++) sup += m->ops[i].supported != 0;
    json_object_set_new(r, "schema", json_string("eliza.e1_npu_partition_report.v1"));
    json_object_set_new(r, "module", json_string(m->name));
    json_object_set_new(r, "total_ops", json_integer((json_int_t)m->nops));
    json_object_set_new(r, "supported_ops", json_integer((json_int_t)sup));
    json_object_set_new(r, "cpu_fallback_ops", json_integer((json_int_t)(m->nops - sup)));
    json_object_set_new(r, "cpu_fallback_percent", json_real(m->nops ? 100.0 * (double)(m->nops - sup) / (double)m->nops : 0.0));
    json_object_set_new(r, "command_buffer_max_entries", json_integer(E1_RING_MAX_PENDING));
    /* command_buffer_batches */
    json_t *cb = json_array();
    for (size_t b = 0; b < P->nbatches; b++) {
        json_t *o = json_object(), *names = json_array(), *apis = json_array();
        for (size_t j = 0; j < P->batches[b].n; j++) {
            const sh_op *op = &m->ops[P->batches[b].first + j];
            json_array_append_new(names, json_string(op->name));
            json_array_append_new(apis, json_string(op->runtime_api ? op->runtime_api : ""));
        }
        json_object_set_new(o, "batch_index", json_integer((json_int_t)b));
        json_object_set_new(o, "op_names", names);
        json_object_set_new(o, "runtime_apis", apis);
        json_object_set_new(o, "descriptor_slots", json_integer((json_int_t)P->batches[b].n));
        json_object_set_new(o, "command_buffer_max_entries", json_integer(E1_RING_MAX_PENDING));
        json_array_append_new(cb, o);
    }
    json_object_set_new(r, "command_buffer_batches", cb);
    /* tensor_arena_plan */
    json_t *ta = json_object(), *al = json_array();
    json_object_set_new(ta, "schema", json_string("eliza.e1_npu_tensor_arena_plan.v1"));
    json_object_set_new(ta, "alignment_bytes", json_integer(4));
    json_object_set_new(ta, "total_bytes", json_integer((json_int_t)P->arena_total));
    for (size_t i = 0; i < P->nallocs; i++) json_array_append_new(al, alloc_json(P, &P->allocs[i], NULL));
    json_object_set_new(ta, "allocations", al);
    json_object_set_new(r, "tensor_arena_plan", ta);
    /* runtime_binding_plan */
    json_t *rb = json_object(), *rops = json_array();
    size_t ready_b = 0;
    for (size_t i = 0; i < P->nstages; i++) {
        const sh_stage *s = &P->stages[i];
        const sh_op *op = &m->ops[s->op];
        sh_plan p;
        sh_plan_of(op, &p);
        json_t *o = json_object(), *ins = json_array(), *un = json_array();
        for (unsigned k = 0; k < s->nin; k++) json_array_append_new(ins, alloc_json(P, &P->allocs[s->in[k].alloc], s->in[k].field));
        for (unsigned k = 0; k < s->nunres; k++) {
            json_t *u = json_object();
            json_object_set_new(u, "graph_field", json_string(s->unres[k]));
            json_object_set_new(u, "op_name", json_string(op->name));
            json_object_set_new(u, "op_kind", json_string(op->def->kind));
            json_object_set_new(u, "reason", json_string("no_tensor_arena_allocation_for_required_graph_field"));
            json_array_append_new(un, u);
        }
        ready_b += !s->nunres;
        json_object_set_new(o, "op_name", json_string(op->name));
        json_object_set_new(o, "op_kind", json_string(op->def->kind));
        json_object_set_new(o, "runtime_api", json_string(p.runtime_api));
        json_object_set_new(o, "schema", json_string(p.schema));
        json_object_set_new(o, "command_buffer_batch_index", json_integer(s->batch));
        json_object_set_new(o, "descriptor_codegen_ready", json_boolean(!s->nunres));
        json_object_set_new(o, "inputs", ins);
        json_object_set_new(o, "output", alloc_json(P, &P->allocs[s->out_alloc], "result"));
        json_object_set_new(o, "unresolved_inputs", un);
        json_array_append_new(rops, o);
    }
    plan_counts(rb, "eliza.e1_npu_runtime_binding_plan.v1", ready_b, P->nstages);
    json_object_set_new(rb, "ops", rops);
    json_object_set_new(r, "runtime_binding_plan", rb);
    /* descriptor_staging_plan */
    json_t *ds = json_object(), *sops = json_array(), *dbs = json_array(), *xbs = json_array();
    size_t ready_s = 0;
    for (size_t i = 0; i < P->nstages; i++) {
        const sh_stage *s = &P->stages[i];
        json_t *o = json_object(), *ins = json_array();
        ready_s += s->ready != 0;
        json_object_set_new(o, "op_name", json_string(m->ops[s->op].name));
        json_object_set_new(o, "runtime_api", json_string(m->ops[s->op].runtime_api));
        json_object_set_new(o, "command_buffer_batch_index", json_integer(s->batch));
        json_object_set_new(o, "descriptor_opcode", s->opcode >= 0 ? json_integer(s->opcode) : json_null());
        json_object_set_new(o, "descriptor_opcode_name", s->opcode >= 0 ? json_string(s->opcode_name) : json_null());
        json_object_set_new(o, "descriptor_codegen_ready", json_boolean(s->ready));
        json_object_set_new(o, "input_stream_ready", json_boolean(s->in_ready));
        json_object_set_new(o, "writeback_ready", json_boolean(s->wb_ready));
        json_object_set_new(o, "source_arena_offset", nullable(s->have_stream, s->source));
        json_object_set_new(o, "stream_byte_count", nullable(s->have_stream, s->stream));
        json_object_set_new(o, "scratch_output_offset", nullable(s->have_out, s->scr_out));
        json_object_set_new(o, "required_output_bytes", nullable(s->have_out, s->req_out));
        json_object_set_new(o, "output_arena_offset", json_integer((json_int_t)s->out_off));
        json_object_set_new(o, "output_allocation_bytes", json_integer((json_int_t)s->out_size));
        if (s->have_stream)
            for (unsigned k = 0; k < s->nin; k++) {
                const sh_alloc *a = &P->allocs[s->in[k].alloc];
                json_t *in = json_object();
                json_object_set_new(in, "graph_field", json_string(s->in[k].field));
                json_object_set_new(in, "tensor_name", json_string(a->name));
                json_object_set_new(in, "arena_offset", json_integer((json_int_t)a->offset));
                json_object_set_new(in, "byte_size", json_integer((json_int_t)a->size));
                json_object_set_new(in, "scratch_offset", json_integer((json_int_t)s->in[k].scratch));
                json_array_append_new(ins, in);
            }
        json_object_set_new(o, "inputs", ins);
        json_object_set_new(o, "mmio_preamble", preamble_json(s));
        if (s->ready) {
            json_t *t = json_object();
            json_object_set_new(t, "word0", json_integer(s->w0));
            json_object_set_new(t, "word1", json_string("arena_base + source_arena_offset"));
            json_object_set_new(t, "word1_arena_offset", json_integer((json_int_t)s->source));
            json_object_set_new(t, "word2", json_string("arena_base + output_arena_offset"));
            json_object_set_new(t, "word2_arena_offset", json_integer((json_int_t)s->out_off));
            json_object_set_new(t, "word3", json_integer(0));
            json_object_set_new(t, "requires_arena_base", json_true());
            json_object_set_new(o, "descriptor_word_template", t);
        } else {
            json_object_set_new(o, "descriptor_word_template", json_null());
        }
        json_object_set_new(o, "blocking_reasons", strs(s->reasons, s->nr));
        json_array_append_new(sops, o);
    }
    for (size_t b = 0; b < P->nbatches; b++) {
        size_t first = 0, n = 0;
        for (size_t i = 0; i < P->nstages; i++)
            if (P->stages[i].batch == b) {
                if (!n) first = i;
                n++;
            }
        json_t *o = json_object(), *bl = blocked_json(P, first, n);
        json_object_set_new(o, "batch_index", json_integer((json_int_t)b));
        json_object_set_new(o, "op_names", op_names_json(P, first, n));
        json_object_set_new(o, "descriptor_slots", json_integer((json_int_t)n));
        json_object_set_new(o, "descriptor_codegen_ready", json_boolean(!json_array_size(bl)));
        json_object_set_new(o, "blocked_ops", bl);
        json_array_append_new(dbs, o);
    }
    for (size_t i = 0; i < P->nxb; i++) {
        const sh_xbatch *x = &P->xb[i];
        json_t *o = json_object();
        json_object_set_new(o, "batch_index", json_integer(x->batch));
        json_object_set_new(o, "execution_batch_index", json_integer(x->index));
        json_object_set_new(o, "op_names", op_names_json(P, x->first, x->n));
        json_object_set_new(o, "descriptor_slots", json_integer((json_int_t)x->n));
        json_object_set_new(o, "descriptor_codegen_ready", json_boolean(x->ready));
        json_object_set_new(o, "shared_mmio_preamble", preamble_json(&P->stages[x->first]));
        json_object_set_new(o, "blocked_ops", blocked_json(P, x->first, x->n));
        json_array_append_new(xbs, o);
    }
    plan_counts(ds, "eliza.e1_npu_descriptor_staging_plan.v1", ready_s, P->nstages);
    json_object_set_new(ds, "descriptor_batches", dbs);
    json_object_set_new(ds, "descriptor_execution_batches", xbs);
    json_object_set_new(ds, "ops", sops);
    json_object_set_new(r, "descriptor_staging_plan", ds);
    /* entries */
    json_t *en = json_array();
    for (size_t i = 0; i < m->nops; i++) {
        const sh_op *op = &m->ops[i];
        sh_plan p;
        sh_plan_of(op, &p);
        json_t *o = json_object(), *mo = json_array();
        json_object_set_new(o, "op_name", json_string(op->name));
        json_object_set_new(o, "op_kind", json_string(op->def->kind));
        json_object_set_new(o, "supported", json_boolean(op->supported));
        json_object_set_new(o, "reason", json_string(op->reason));
        json_object_set_new(o, "runtime_api", op->runtime_api ? json_string(op->runtime_api) : json_null());
        if (op->runtime_api)
            for (int k = 0; k < 3 && p.mapped[k]; k++) json_array_append_new(mo, json_string(p.mapped[k]));
        json_object_set_new(o, "mapped_opcodes", mo);
        json_array_append_new(en, o);
    }
    json_object_set_new(r, "entries", en);
    return r;
}

/* ---- images and prepared batches ---- */

static const char *const STEPS[4] = {"populate_tensor_arena", "program_mmio_preamble", "stage_descriptor_image",
                                     "submit_command_buffer"};

static json_t *reg_write(const char *name, uint32_t v) {
    json_t *o = json_object();
    json_object_set_new(o, "register", json_string(name));
    json_object_set_new(o, "address", hex((uint32_t)sh_reg_offset(name)));
    json_object_set_new(o, "value", json_integer(v));
    return o;
}

/* The descriptor image of stages [first, first+n): refused unless every op
 * is ready and all share one preamble. xidx < 0: a command-buffer batch. */
static json_t *image_json(const sh_part *P, size_t first, size_t n, unsigned batch, long xidx, uint32_t arena_base,
                          uint32_t desc_base, char *why, size_t whylen) {
    for (size_t i = 0; i < n; i++) {
        const sh_stage *s = &P->stages[first + i];
        if (!s->ready) {
            snprintf(why, whylen, "op '%s' is not descriptor-codegen ready (%s)", P->m->ops[s->op].name,
                     s->nr ? s->reasons[0] : "blocked");
            return NULL;
        }
        if (!same_pre(s, &P->stages[first])) {
            snprintf(why, whylen, "ops '%s' and '%s' need different GEMM preambles; split the batch",
                     P->m->ops[P->stages[first].op].name, P->m->ops[s->op].name);
            return NULL;
        }
    }
    json_t *o = json_object(), *words = json_array(), *img = json_object(), *sub = json_object();
    json_object_set_new(o, "schema", json_string("eliza.e1_npu_descriptor_command_buffer_image.v1"));
    json_object_set_new(o, "batch_index", json_integer(batch));
    if (xidx >= 0) json_object_set_new(o, "execution_batch_index", json_integer(xidx));
    json_object_set_new(o, "arena_base", json_integer(arena_base));
    json_object_set_new(o, "descriptor_base", json_integer(desc_base));
    json_object_set_new(o, "op_names", op_names_json(P, first, n));
    for (size_t i = 0; i < n; i++) {
        const sh_stage *s = &P->stages[first + i];
        uint32_t w[4] = {s->w0, (uint32_t)(arena_base + s->source), (uint32_t)(arena_base + s->out_off), 0};
        json_t *wa = json_array();
        for (int k = 0; k < 4; k++) {
            json_array_append_new(wa, json_integer(w[k]));
            char key[24];
            snprintf(key, sizeof key, "0x%08x", (unsigned)(desc_base + 16 * i + 4 * (unsigned)k));
            json_object_set_new(img, key, json_integer(w[k]));
        }
        json_array_append_new(words, wa);
    }
    json_object_set_new(o, "descriptor_words", words);
    json_object_set_new(o, "descriptor_image", img);
    /* the RTL's producer/consumer roles: software advances HEAD, the engine consumes from TAIL */
    json_object_set_new(sub, "base", json_integer(desc_base));
    json_object_set_new(sub, "head", json_integer((json_int_t)n));
    json_object_set_new(sub, "tail", json_integer(0));
    json_object_set_new(o, "submission", sub);
    return o;
}

static json_t *prepared_json(const sh_part *P, size_t first, size_t n, unsigned batch, long xidx, uint32_t arena_base,
                             uint32_t desc_base, char *why, size_t whylen) {
    json_t *img = image_json(P, first, n, batch, xidx, arena_base, desc_base, why, whylen);
    if (!img) return NULL;
    json_t *o = json_object(), *pre = json_array(), *seq = json_object(), *mw = json_array(), *dw = json_array(),
           *sw = json_array(), *poll = json_object();
    json_object_set_new(o, "schema", json_string("eliza.e1_npu_prepared_descriptor_batch.v1"));
    json_object_set_new(o, "batch_index", json_integer(batch));
    if (xidx >= 0) json_object_set_new(o, "execution_batch_index", json_integer(xidx));
    json_object_set_new(o, "arena_base", json_integer(arena_base));
    json_object_set_new(o, "descriptor_base", json_integer(desc_base));
    json_object_set_new(o, "arena_total_bytes", json_integer((json_int_t)P->arena_total));
    json_object_set_new(o, "arena_alignment_bytes", json_integer(4));
    json_object_set_new(o, "required_runtime_steps", strs(STEPS, 4));
    for (size_t i = 0; i < n; i++) {
        const sh_stage *s = &P->stages[first + i];
        json_t *e = json_object(), *w = json_object(), *ws = json_array();
        json_object_set_new(e, "op_name", json_string(P->m->ops[s->op].name));
        json_object_set_new(e, "runtime_api", json_string(P->m->ops[s->op].runtime_api));
        json_object_set_new(e, "mmio_preamble", preamble_json(s));
        json_array_append_new(pre, e);
        json_object_set_new(w, "op_name", json_string(P->m->ops[s->op].name));
        json_array_append_new(ws, reg_write("GEMM_CFG", s->cfg));
        json_array_append_new(ws, reg_write("GEMM_BASE", s->base));
        json_array_append_new(ws, reg_write("GEMM_STRIDE", s->stride));
        json_object_set_new(w, "writes", ws);
        json_array_append_new(mw, w);
    }
    json_object_set_new(o, "op_mmio_preamble", pre);
    /* descriptor memory writes in address order (the image's keys are already ascending) */
    for (size_t i = 0; i < n; i++) {
        json_t *wa = json_array_get(json_object_get(img, "descriptor_words"), i);
        for (size_t k = 0; k < 4; k++) {
            json_t *e = json_object();
            json_object_set_new(e, "address", hex(desc_base + 16 * i + 4 * k));
            json_object_set_new(e, "value", json_integer(json_integer_value(json_array_get(wa, k))));
            json_array_append_new(dw, e);
        }
    }
    json_array_append_new(sw, reg_write("DESC_BASE", desc_base));
    json_array_append_new(sw, reg_write("DESC_HEAD", (uint32_t)n));
    json_array_append_new(sw, reg_write("DESC_TAIL", 0));
    json_array_append_new(sw, reg_write("CMD_PARAM", E1_CMD_DESC));
    json_array_append_new(sw, reg_write("CTRL_STATUS", E1_CTRL_CLEAR));
    json_array_append_new(sw, reg_write("CTRL_STATUS", E1_CTRL_START));
    json_object_set_new(poll, "register", json_string("DESC_STATUS"));
    json_object_set_new(poll, "address", hex(E1_REG_DESC_STATUS));
    json_object_set_new(poll, "requires_done_bit", json_true());
    json_object_set_new(poll, "rejects_error_bit", json_true());
    json_object_set_new(seq, "schema", json_string("eliza.e1_npu_host_runtime_sequence.v1"));
    json_object_set_new(seq, "mmio_preamble_writes", mw);
    json_object_set_new(seq, "descriptor_memory_writes", dw);
    json_object_set_new(seq, "submission_mmio_writes", sw);
    json_object_set_new(seq, "completion_poll", poll);
    json_object_set_new(o, "descriptor_command_buffer_image", img);
    json_object_set_new(o, "host_runtime_sequence", seq);
    return o;
}

void npk_e1_compile_opts_default(npk_e1_compile_opts *o) {
    memset(o, 0, sizeof *o);
    o->arena_base = 0x90000000u;
    o->descriptor_base = 0x90100000u;
    o->descriptor_stride = 16 * E1_RING_MAX_PENDING;
    o->format = NPK_E1_FMT_PACKAGE;
    o->include_tensors = 1;
}

int npk_shlo_partition_report(const npk_shlo *m, char **json) {
    *json = NULL;
    int rc = npk_shlo_check_module(m);
    if (rc) return rc;
    sh_part P;
    if ((rc = sh_part_build(&P, m))) return rc;
    json_t *r = sh_part_report(&P);
    *json = json_dumps(r, JSON_INDENT(1));
    json_decref(r);
    sh_part_free(&P);
    return *json ? 0 : npk_err(NPK_ENOMEM, "out of memory");
}

int npk_shlo_compile(const npk_shlo *m, const npk_e1_compile_opts *o, char **json) {
    *json = NULL;
    int rc = npk_shlo_check_module(m);
    if (rc) return rc;
    if ((o->arena_base & 3) || (o->descriptor_base & 3))
        return npk_err(NPK_EINVAL, "the arena base 0x%x and the descriptor base 0x%x must be 4-byte aligned", o->arena_base,
                       o->descriptor_base);
    if (o->format != NPK_E1_FMT_PACKAGE && m->nissues) {
        const sh_issue *is = &m->issues[0];
        return npk_err(NPK_EINVAL, "cannot preprocess invalid StableHLO subset module: %zu validation issue(s), first %s:%s (%s)",
                       m->nissues, is->op_name, is->code, is->message);
    }
    sh_part P;
    if ((rc = sh_part_build(&P, m))) return rc;
    if ((o->descriptor_stride & 3) || o->descriptor_stride < 16 * P.max_slots) {
        rc = npk_err(NPK_EINVAL, "descriptor stride %u must be 4-byte aligned and at least 16 x %zu slots", o->descriptor_stride,
                     P.max_slots);
        sh_part_free(&P);
        return rc;
    }
    uint64_t xend = (uint64_t)o->descriptor_base + (uint64_t)o->descriptor_stride * (P.nxb ? P.nxb : 1);
    uint64_t aend = (uint64_t)o->arena_base + P.arena_total;
    if (xend > 0x100000000ull || aend > 0x100000000ull ||
        ((uint64_t)o->descriptor_base < aend && (uint64_t)o->arena_base < xend)) {
        rc = npk_err(NPK_EINVAL, "the arena [0x%x, 0x%llx) and the descriptors [0x%x, 0x%llx) must be disjoint and below 4 GiB",
                     o->arena_base, (unsigned long long)aend, o->descriptor_base, (unsigned long long)xend);
        sh_part_free(&P);
        return rc;
    }
    json_t *report = sh_part_report(&P);
    json_t *out = json_object();
    char why[512];
    if (o->format == NPK_E1_FMT_PACKAGE) {
        json_object_set_new(out, "schema", json_string(NPK_E1_PACKAGE_SCHEMA));
        json_object_set_new(out, "device", json_string("e1"));
        json_object_set(out, "module", m->root);
        if (o->include_tensors && json_object_size(m->data)) json_object_set(out, "tensors", m->data);
        json_object_set_new(out, "arena_base", json_integer(o->arena_base));
        json_object_set_new(out, "descriptor_base", json_integer(o->descriptor_base));
        json_object_set_new(out, "descriptor_stride_bytes", json_integer(o->descriptor_stride));
        json_object_set_new(out, "validation_issues", sh_issues_json(m));
        json_object_set_new(out, "lowering_plans", sh_lowering_plans(m));
        json_object_set_new(out, "partition_report", report);
    } else {
        int et = o->format == NPK_E1_FMT_EXECUTORCH;
        json_object_set_new(out, "schema", json_string(et ? "eliza.e1_executorch_delegate.v1" : "eliza.e1_litert_delegate.v1"));
        json_object_set_new(out, "backend_id", json_string(et ? "EXECUTORCH_E1_NPU_DELEGATE" : "LITERT_E1_NPU_DELEGATE"));
        json_object_set_new(out, "status", json_string("PROTOTYPE"));
        json_object_set_new(out, "module", json_string(m->name));
        json_object_set_new(out, "descriptor_specs", sh_lowering_plans(m));
        json_object_set(out, "entries", json_object_get(report, "entries"));
        json_object_set(out, "command_buffer_batches", json_object_get(report, "command_buffer_batches"));
        json_object_set(out, "tensor_arena_plan", json_object_get(report, "tensor_arena_plan"));
        json_object_set(out, "runtime_binding_plan", json_object_get(report, "runtime_binding_plan"));
        json_object_set(out, "descriptor_staging_plan", json_object_get(report, "descriptor_staging_plan"));
        json_object_set_new(out, "arena_base", json_integer(o->arena_base));
        json_object_set_new(out, "descriptor_base", json_integer(o->descriptor_base));
        json_object_set_new(out, "descriptor_stride_bytes", json_integer(o->descriptor_stride));
        json_decref(report);
    }
    /* prepared command-buffer batches that materialize */
    json_t *pb = json_array(), *refused = json_array();
    for (size_t b = 0; b < P.nbatches; b++) {
        size_t first = 0, n = 0;
        for (size_t i = 0; i < P.nstages; i++)
            if (P.stages[i].batch == b) {
                if (!n) first = i;
                n++;
            }
        json_t *pj = prepared_json(&P, first, n, (unsigned)b, -1, o->arena_base, o->descriptor_base, why, sizeof why);
        if (pj) json_array_append_new(pb, pj);
        else {
            json_t *r = json_object();
            json_object_set_new(r, "batch_index", json_integer((json_int_t)b));
            json_object_set_new(r, "reason", json_string(why));
            json_array_append_new(refused, r);
        }
    }
    json_object_set_new(out, "prepared_descriptor_batches", pb);
    json_object_set_new(out, "unprepared_descriptor_batches", refused);
    /* prepared execution batches: every ready one at descriptor_base + index * stride */
    json_t *px = json_object(), *xl = json_array(), *skipped = json_array();
    json_object_set_new(px, "schema", json_string("eliza.e1_npu_prepared_descriptor_execution_batches.v1"));
    json_object_set_new(px, "arena_base", json_integer(o->arena_base));
    json_object_set_new(px, "descriptor_base", json_integer(o->descriptor_base));
    json_object_set_new(px, "descriptor_stride_bytes", json_integer(o->descriptor_stride));
    json_object_set_new(px, "arena_total_bytes", json_integer((json_int_t)P.arena_total));
    json_object_set_new(px, "arena_alignment_bytes", json_integer(4));
    json_object_set_new(px, "required_runtime_steps", strs(STEPS, 4));
    for (size_t i = 0; i < P.nxb; i++) {
        const sh_xbatch *x = &P.xb[i];
        uint32_t base = o->descriptor_base + x->index * o->descriptor_stride;
        json_t *pj = x->ready ? prepared_json(&P, x->first, x->n, x->batch, x->index, o->arena_base, base, why, sizeof why)
                              : NULL;
        if (pj) json_array_append_new(xl, pj);
        else {
            json_t *r = json_object();
            json_object_set_new(r, "execution_batch_index", json_integer(x->index));
            json_object_set_new(r, "op_names", op_names_json(&P, x->first, x->n));
            json_object_set_new(r, "blocked_ops", blocked_json(&P, x->first, x->n));
            json_array_append_new(skipped, r);
        }
    }
    json_object_set_new(px, "execution_batches", xl);
    json_object_set_new(px, "blocked_execution_batches", skipped);
    json_object_set_new(out, "prepared_descriptor_execution_batches", px);
    *json = json_dumps(out, JSON_INDENT(1));
    json_decref(out);
    sh_part_free(&P);
    return *json ? 0 : npk_err(NPK_ENOMEM, "out of memory");
}
