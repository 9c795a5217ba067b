// SPDX-License-Identifier: MIT
/* pccx v002 instruction encodings (pccx-isa.md Part 1), names, the
 * encoding-level fault check and the weight-record layout: the ABI the model
 * (src/sim/pccx.c) decodes and the driver and assembler (src/rt) encode. */
#include "npukit/pccx_isa.h"

#include <assert.h>
#include <inttypes.h>
#include <string.h>

#define FIELD(w, hi, lo) ((uint32_t)(((w) >> (lo)) & ((1ull << ((hi) - (lo) + 1)) - 1)))
#define PUT(v, hi, lo) (((uint64_t)(v) & ((1ull << ((hi) - (lo) + 1)) - 1)) << (lo))

static const char *const op_names[] = {"GEMV", "GEMM", "MEMCPY", "MEMSET", "CVO"};
static_assert(sizeof op_names / sizeof op_names[0] == NPK_PCCX_OP_CVO + 1, "one name per pccx opcode");
static const char *const cvo_names[8] = {"EXP", "SQRT", "GELU", "SIN", "COS", "REDUCE_SUM", "SCALE", "RECIP"};
static const char *const fault_names[NPK_PCCX_FAULT_LIMIT + 1] = {"NONE",       "OPCODE",        "FUNC",  "RESERVED",
                                            "DIRECTION",  "L2_RANGE",      "SHAPE_ZERO", "SHAPE_MISMATCH",
                                            "LANE",       "HOST_RANGE",    "WS_RANGE", "BUS",
                                            "FLAGS",      "OVERFLOW",      "FIELD", "CACHE",
                                            "LIMIT"};

const char *npk_pccx_opcode_name(unsigned op) { return op <= NPK_PCCX_OP_CVO ? op_names[op] : "?"; }
const char *npk_pccx_cvo_name(unsigned f) { return f < 8 ? cvo_names[f] : "?"; }
const char *npk_pccx_fault_name(unsigned c) { return c <= NPK_PCCX_FAULT_LIMIT ? fault_names[c] : "?"; }

uint64_t npk_pccx_gemv_word(uint32_t dest, uint32_t src, unsigned flags, unsigned size_ptr, unsigned shape_ptr,
                            unsigned lanes) {
    return PUT(NPK_PCCX_OP_GEMV, 63, 60) | PUT(dest, 59, 43) | PUT(src, 42, 26) | PUT(flags, 25, 20) |
           PUT(size_ptr, 19, 14) | PUT(shape_ptr, 13, 8) | PUT(lanes, 7, 3);
}

uint64_t npk_pccx_gemm_word(uint32_t dest, uint32_t src, unsigned flags, unsigned size_ptr, unsigned shape_ptr,
                            unsigned lanes) {
    return npk_pccx_gemv_word(dest, src, flags, size_ptr, shape_ptr, lanes) | PUT(NPK_PCCX_OP_GEMM, 63, 60);
}

uint64_t npk_pccx_memcpy_word(unsigned from_device, unsigned to_device, uint32_t dest, uint32_t src, uint32_t aux,
                              unsigned shape_ptr, unsigned async) {
    return PUT(NPK_PCCX_OP_MEMCPY, 63, 60) | PUT(from_device, 59, 59) | PUT(to_device, 58, 58) | PUT(dest, 57, 41) |
           PUT(src, 40, 24) | PUT(aux, 23, 7) | PUT(shape_ptr, 6, 1) | PUT(async, 0, 0);
}

uint64_t npk_pccx_memset_word(unsigned cache, unsigned index, uint16_t a, uint16_t b, uint16_t c) {
    return PUT(NPK_PCCX_OP_MEMSET, 63, 60) | PUT(cache, 59, 58) | PUT(index, 57, 52) | PUT(a, 51, 36) |
           PUT(b, 35, 20) | PUT(c, 19, 4);
}

uint64_t npk_pccx_cvo_word(unsigned func, uint32_t src, uint32_t dst, unsigned length, unsigned flags, unsigned async) {
    return PUT(NPK_PCCX_OP_CVO, 63, 60) | PUT(func, 59, 56) | PUT(src, 55, 39) | PUT(dst, 38, 22) |
           PUT(length, 21, 6) | PUT(flags, 5, 1) | PUT(async, 0, 0);
}

static int fits(const char *name, uint64_t v, unsigned bits) {
    if (v >> bits) return npk_err(NPK_EINVAL, "field %s = %" PRIu64 " does not fit in %u bits", name, v, bits);
    return 0;
}

int npk_pccx_encode(const npk_pccx_insn *in, uint64_t *word) {
    int rc = 0;
#define F(name, v, bits) \
    if ((rc = fits(name, (uint64_t)(v), bits))) return rc
    F("opcode", in->op, 4);
    switch (in->op) {
    case NPK_PCCX_OP_GEMV:
    case NPK_PCCX_OP_GEMM:
        F("dest_reg", in->dest, 17);
        F("src_addr", in->src, 17);
        F("flags", in->flags, 6);
        F("size_ptr_addr", in->size_ptr, 6);
        F("shape_ptr_addr", in->shape_ptr, 6);
        F("parallel_lane", in->lanes, 5);
        F("reserved", in->reserved, 3);
        *word = npk_pccx_gemv_word(in->dest, in->src, in->flags, in->size_ptr, in->shape_ptr, in->lanes) |
                PUT(in->op, 63, 60) | PUT(in->reserved, 2, 0);
        return 0;
    case NPK_PCCX_OP_MEMCPY:
        F("from_device", in->from_device, 1);
        F("to_device", in->to_device, 1);
        F("dest_addr", in->dest, 17);
        F("src_addr", in->src, 17);
        F("aux_addr", in->aux, 17);
        F("shape_ptr_addr", in->shape_ptr, 6);
        F("async", in->async, 1);
        *word = npk_pccx_memcpy_word(in->from_device, in->to_device, in->dest, in->src, in->aux, in->shape_ptr,
                                     in->async);
        return 0;
    case NPK_PCCX_OP_MEMSET:
        F("dest_cache", in->cache, 2);
        F("dest_addr", in->index, 6);
        F("reserved", in->reserved, 4);
        *word = npk_pccx_memset_word(in->cache, in->index, in->a, in->b, in->c) | PUT(in->reserved, 3, 0);
        return 0;
    case NPK_PCCX_OP_CVO:
        F("cvo_func", in->func, 4);
        F("src_addr", in->src, 17);
        F("dst_addr", in->dest, 17);
        F("length", in->length, 16);
        F("flags", in->flags, 5);
        F("async", in->async, 1);
        *word = npk_pccx_cvo_word(in->func, in->src, in->dest, in->length, in->flags, in->async);
        return 0;
    default:
        return npk_err(NPK_EINVAL, "opcode 0x%x is reserved; only a raw .word can hold it", in->op);
    }
#undef F
}

void npk_pccx_decode(uint64_t w, npk_pccx_insn *o) {
    memset(o, 0, sizeof *o);
    o->op = FIELD(w, 63, 60);
    switch (o->op) {
    case NPK_PCCX_OP_GEMV:
    case NPK_PCCX_OP_GEMM:
        o->dest = FIELD(w, 59, 43);
        o->src = FIELD(w, 42, 26);
        o->flags = FIELD(w, 25, 20);
        o->size_ptr = FIELD(w, 19, 14);
        o->shape_ptr = FIELD(w, 13, 8);
        o->lanes = FIELD(w, 7, 3);
        o->reserved = FIELD(w, 2, 0);
        break;
    case NPK_PCCX_OP_MEMCPY:
        o->from_device = FIELD(w, 59, 59);
        o->to_device = FIELD(w, 58, 58);
        o->dest = FIELD(w, 57, 41);
        o->src = FIELD(w, 40, 24);
        o->aux = FIELD(w, 23, 7);
        o->shape_ptr = FIELD(w, 6, 1);
        o->async = FIELD(w, 0, 0);
        break;
    case NPK_PCCX_OP_MEMSET:
        o->cache = FIELD(w, 59, 58);
        o->index = FIELD(w, 57, 52);
        o->a = (uint16_t)FIELD(w, 51, 36);
        o->b = (uint16_t)FIELD(w, 35, 20);
        o->c = (uint16_t)FIELD(w, 19, 4);
        o->reserved = FIELD(w, 3, 0);
        break;
    case NPK_PCCX_OP_CVO:
        o->func = FIELD(w, 59, 56);
        o->src = FIELD(w, 55, 39);
        o->dest = FIELD(w, 38, 22);
        o->length = FIELD(w, 21, 6);
        o->flags = FIELD(w, 5, 1);
        o->async = FIELD(w, 0, 0);
        break;
    default:
        break;
    }
}

int npk_pccx_check(uint64_t w) { return npk_pccx_check_lanes(w, NPK_PCCX_LANES); }

int npk_pccx_check_lanes(uint64_t w, unsigned lanes) {
    npk_pccx_insn in;
    npk_pccx_decode(w, &in);
    return npk_pccx_check_insn(&in, lanes);
}

int npk_pccx_check_insn(const npk_pccx_insn *ip, unsigned lanes) {
    const npk_pccx_insn in = *ip;
    switch (in.op) {
    case NPK_PCCX_OP_GEMV:
    case NPK_PCCX_OP_GEMM:
        if (in.reserved || (in.flags & 0x7u)) return NPK_PCCX_FAULT_RESERVED;
        if (in.lanes > lanes) return NPK_PCCX_FAULT_LANE;
        return 0;
    case NPK_PCCX_OP_MEMCPY:
        if (in.from_device && in.to_device) return NPK_PCCX_FAULT_DIRECTION;
        if ((in.from_device && in.src) || (in.to_device && in.dest) || (!in.from_device && !in.to_device && in.aux))
            return NPK_PCCX_FAULT_FIELD;
        return 0;
    case NPK_PCCX_OP_MEMSET:
        if (in.reserved) return NPK_PCCX_FAULT_RESERVED;
        if (in.cache > 1) return NPK_PCCX_FAULT_CACHE;
        return 0;
    case NPK_PCCX_OP_CVO:
        if (in.func > 7) return NPK_PCCX_FAULT_FUNC;
        if (in.flags & 0x3u) return NPK_PCCX_FAULT_RESERVED;
        if ((in.flags & NPK_PCCX_CVO_RECIP_SCALE) && in.func != NPK_PCCX_CVO_SCALE) return NPK_PCCX_FAULT_FLAGS;
        if (!in.length) return NPK_PCCX_FAULT_SHAPE_ZERO;
        return 0;
    default:
        return NPK_PCCX_FAULT_OPCODE;
    }
}

/* ---- weight records ---------------------------------------------------------------- */

uint64_t npk_pccx_wrec_size(unsigned N, unsigned K, unsigned G, int w_scale) {
    if (!N || !K) return 0;
    if (!G || G > K) G = K;
    uint64_t wb = ((uint64_t)N * K + 1) / 2;
    wb = (wb + 15) / 16 * 16;
    if (!w_scale) return wb;
    uint64_t ng = ((uint64_t)K + G - 1) / G;
    uint64_t sb = ((uint64_t)N * ng * 4 + 15) / 16 * 16;
    return wb + sb;
}

int npk_pccx_wrec_pack(const int8_t *q, const float *scales, unsigned N, unsigned K, unsigned G, uint8_t *out) {
    if (!N || !K || N > 65535 || K > 65535 || G > 65535)
        return npk_err(NPK_EINVAL, "weight matrix %ux%u (group %u): dimensions must be 1..65535", N, K, G);
    if (G > K) return npk_err(NPK_EINVAL, "scale group %u is larger than K = %u", G, K);
    uint64_t size = npk_pccx_wrec_size(N, K, G, scales != NULL);
    memset(out, 0, size);
    uint64_t nk = (uint64_t)N * K;
    for (uint64_t i = 0; i < nk; i++) {
        if (q[i] < -8 || q[i] > 7)
            return npk_err(NPK_EINVAL, "weight (%" PRIu64 ", %" PRIu64 ") = %d is outside INT4 -8..7", i / K, i % K, q[i]);
        out[i / 2] |= (uint8_t)((q[i] & 0xf) << (4 * (i & 1)));
    }
    if (scales) {
        unsigned g = G ? G : K;
        uint64_t ng = ((uint64_t)K + g - 1) / g;
        uint8_t *s = out + ((nk + 1) / 2 + 15) / 16 * 16;
        for (uint64_t i = 0; i < (uint64_t)N * ng; i++) {
            uint32_t u;
            memcpy(&u, &scales[i], sizeof u);
            for (int b = 0; b < 4; b++) s[4 * i + (uint64_t)b] = (uint8_t)(u >> (8 * b));
        }
    }
    return 0;
}
