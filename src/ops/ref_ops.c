// SPDX-License-Identifier: MIT
/* CPU reference (golden) of every e1 lowering operator; see ref_ops.h. */
#include "ref_ops.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tensors and output lists ---------------------------------------------- */

size_t npk_lt_numel(const npk_ltensor *t) {
    if (!t || !t->rank) return 0;
    size_t n = 1;
    for (unsigned i = 0; i < t->rank; i++) n *= t->dim[i];
    return n;
}

int npk_lt_alloc(npk_ltensor *t, unsigned rank, const unsigned *dims) {
    memset(t, 0, sizeof *t);
    if (rank < 1 || rank > NPK_LT_MAX_RANK) return npk_err(NPK_EINVAL, "tensor rank %u is not 1..4", rank);
    size_t n = 1;
    for (unsigned i = 0; i < rank; i++) {
        if (dims[i] < 1 || dims[i] > (1u << 24)) return npk_err(NPK_EINVAL, "tensor dimension %u is %u", i, dims[i]);
        n *= dims[i];
        if (n > (size_t)1 << 28) return npk_err(NPK_EINVAL, "tensor of more than 2^28 elements");
    }
    t->data = calloc(n, sizeof *t->data);
    if (!t->data) return npk_err(NPK_ENOMEM, "out of memory (tensor of %zu values)", n);
    t->rank = rank;
    memcpy(t->dim, dims, rank * sizeof *dims);
    return 0;
}

int npk_lt_alloc2(npk_ltensor *t, unsigned d0, unsigned d1) {
    unsigned d[2] = {d0, d1};
    return npk_lt_alloc(t, 2, d);
}

int npk_lt_alloc4(npk_ltensor *t, unsigned d0, unsigned d1, unsigned d2, unsigned d3) {
    unsigned d[4] = {d0, d1, d2, d3};
    return npk_lt_alloc(t, 4, d);
}

npk_ltensor npk_lt_view(int32_t *data, unsigned rank, const unsigned *dims) {
    npk_ltensor t;
    memset(&t, 0, sizeof t);
    t.rank = rank;
    memcpy(t.dim, dims, rank * sizeof *dims);
    t.data = data;
    return t;
}

int npk_lt_copy(npk_ltensor *dst, const npk_ltensor *src) {
    int rc = npk_lt_alloc(dst, src->rank, src->dim);
    if (rc) return rc;
    memcpy(dst->data, src->data, npk_lt_numel(src) * sizeof *src->data);
    return 0;
}

void npk_lt_free(npk_ltensor *t) {
    if (!t) return;
    free(t->data);
    memset(t, 0, sizeof *t);
}

const char *npk_lt_shape_str(const npk_ltensor *t, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = 0;
    for (unsigned i = 0; t && i < t->rank && o < len; i++) o += (size_t)snprintf(buf + o, len - o, "[%u]", t->dim[i]);
    return buf;
}

const char *npk_ldtype_name(int dt) {
    switch (dt) {
    case NPK_LD_I32: return "int32";
    case NPK_LD_I8: return "int8";
    case NPK_LD_Q0_8: return "q0_8";
    case NPK_LD_Q8_8: return "q8_8";
    case NPK_LD_BOOL: return "bool";
    case NPK_LD_COUNT: return "count";
    default: return "?";
    }
}

const npk_ltensor *npk_lower_out_get(const npk_lower_out *o, const char *name) {
    for (unsigned i = 0; o && i < o->n; i++)
        if (!strcmp(o->name[i], name)) return &o->t[i];
    return NULL;
}

void npk_lower_out_free(npk_lower_out *o) {
    if (!o) return;
    for (unsigned i = 0; i < o->n; i++) npk_lt_free(&o->t[i]);
    memset(o, 0, sizeof *o);
}

npk_ltensor *npk_out_add(npk_lower_out *o, const char *name, int dtype, unsigned rank, const unsigned *dims) {
    if (o->n >= NPK_LOWER_MAX_OUT) {
        npk_err(NPK_EINVAL, "too many outputs");
        return NULL;
    }
    npk_ltensor *t = &o->t[o->n];
    if (npk_lt_alloc(t, rank, dims)) return NULL;
    o->name[o->n] = name;
    o->dtype[o->n] = dtype;
    o->n++;
    return t;
}

/* Append a copy of src under name. */
static int out_copy(npk_lower_out *o, const char *name, int dtype, const npk_ltensor *src) {
    npk_ltensor *t = npk_out_add(o, name, dtype, src->rank, src->dim);
    if (!t) return -NPK_ENOMEM;
    memcpy(t->data, src->data, npk_lt_numel(src) * sizeof *t->data);
    return 0;
}

/* ---- validation -------------------------------------------------------------- */

int npk_ck_rank(const npk_ltensor *t, const char *field, unsigned rank) {
    if (!t || !t->rank || !t->data) return npk_err(NPK_EINVAL, "field '%s': missing tensor", field);
    if (t->rank != rank)
        return npk_err(NPK_EINVAL, "field '%s': expected a rank-%u tensor, got rank %u", field, rank, t->rank);
    for (unsigned i = 0; i < rank; i++)
        if (!t->dim[i]) return npk_err(NPK_EINVAL, "field '%s': dimension %u is empty", field, i);
    return 0;
}

/* "[1][2]" index of flat element i. */
static void index_str(const npk_ltensor *t, size_t i, char *buf, size_t len) {
    unsigned idx[NPK_LT_MAX_RANK];
    for (int d = (int)t->rank - 1; d >= 0; d--) {
        idx[d] = (unsigned)(i % t->dim[d]);
        i /= t->dim[d];
    }
    size_t o = 0;
    buf[0] = 0;
    for (unsigned d = 0; d < t->rank && o < len; d++) o += (size_t)snprintf(buf + o, len - o, "[%u]", idx[d]);
}

int npk_ck_range(const npk_ltensor *t, const char *field, int64_t lo, int64_t hi, const char *what) {
    size_t n = npk_lt_numel(t);
    for (size_t i = 0; i < n; i++)
        if (t->data[i] < lo || t->data[i] > hi) {
            char ix[64];
            index_str(t, i, ix, sizeof ix);
            return npk_err(NPK_EINVAL, "field '%s': value %" PRId32 " at %s is outside %s [%" PRId64 ", %" PRId64 "]",
                           field, t->data[i], ix, what, lo, hi);
        }
    return 0;
}

int npk_ck_shift(const char *field, unsigned v) {
    if (v > 31) return npk_err(NPK_EINVAL, "field '%s': shift %u is outside 0..31", field, v);
    return 0;
}

static int ck_dim(const char *field, unsigned axis, unsigned got, unsigned want, const char *what) {
    if (got != want)
        return npk_err(NPK_EINVAL, "field '%s': dimension %u is %u but must be %u (%s)", field, axis, got, want, what);
    return 0;
}

static int ck_int(int int4, const npk_ltensor *t, const char *field) {
    return int4 ? npk_ck_range(t, field, -8, 7, "int4") : npk_ck_range(t, field, -128, 127, "int8");
}
static int ck_i8(const npk_ltensor *t, const char *field) { return npk_ck_range(t, field, -128, 127, "int8"); }

#define TRY(x)                \
    do {                      \
        int rc_ = (x);        \
        if (rc_) return rc_;  \
    } while (0)
#define TRYG(x)               \
    do {                      \
        rc = (x);             \
        if (rc) goto fail;    \
    } while (0)

/* ---- matmul family -------------------------------------------------------------- */

static void mm(const int32_t *A, const int32_t *B, int32_t *C, unsigned M, unsigned K, unsigned N) {
    for (unsigned i = 0; i < M; i++)
        for (unsigned j = 0; j < N; j++) {
            uint32_t s = 0;
            for (unsigned l = 0; l < K; l++) s += (uint32_t)(A[(size_t)i * K + l] * B[(size_t)l * N + j]);
            C[(size_t)i * N + j] = (int32_t)s;
        }
}

int npk_golden_matmul_check(int int4, const npk_ltensor *lhs, const npk_ltensor *rhs) {
    TRY(npk_ck_rank(lhs, "lhs", 2));
    TRY(npk_ck_rank(rhs, "rhs", 2));
    TRY(ck_dim("rhs", 0, rhs->dim[0], lhs->dim[1], "K of lhs"));
    TRY(ck_int(int4, lhs, "lhs"));
    TRY(ck_int(int4, rhs, "rhs"));
    return 0;
}

int npk_golden_matmul(int int4, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *g) {
    TRY(npk_golden_matmul_check(int4, lhs, rhs));
    unsigned d[2] = {lhs->dim[0], rhs->dim[1]};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I32, 2, d);
    if (!r) return -NPK_ENOMEM;
    mm(lhs->data, rhs->data, r->data, lhs->dim[0], lhs->dim[1], rhs->dim[1]);
    return 0;
}

int npk_golden_band_matmul_check(const npk_ltensor *lines, const npk_ltensor *taps) {
    TRY(npk_ck_rank(lines, "lines", 3));
    TRY(npk_ck_rank(taps, "taps", 2));
    TRY(ck_dim("taps", 0, taps->dim[0], lines->dim[1], "taps per line of lines"));
    if (taps->dim[1] > lines->dim[2])
        return npk_err(NPK_EINVAL, "field 'lines': %u positions per line, fewer than the %u taps", lines->dim[2],
                       taps->dim[1]);
    TRY(ck_i8(lines, "lines"));
    TRY(ck_i8(taps, "taps"));
    return 0;
}

int npk_golden_band_matmul(const npk_ltensor *lines, const npk_ltensor *taps, npk_lower_out *g) {
    TRY(npk_golden_band_matmul_check(lines, taps));
    unsigned R = lines->dim[0], O = lines->dim[1], P = lines->dim[2], F = taps->dim[1], W = P - F + 1;
    unsigned d[2] = {R, W};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I32, 2, d);
    if (!r) return -NPK_ENOMEM;
    for (unsigned i = 0; i < R; i++)
        for (unsigned x = 0; x < W; x++) {
            uint32_t s = 0;
            for (unsigned o = 0; o < O; o++)
                for (unsigned f = 0; f < F; f++)
                    s += (uint32_t)(lines->data[((size_t)i * O + o) * P + x + f] * taps->data[(size_t)o * F + f]);
            r->data[(size_t)i * W + x] = (int32_t)s;
        }
    return 0;
}

static int ck_batch(const char *lf, const char *rf, const npk_ltensor *lhs, const npk_ltensor *rhs, unsigned raxis,
                    const char *what) {
    TRY(npk_ck_rank(lhs, lf, 4));
    TRY(npk_ck_rank(rhs, rf, 4));
    TRY(ck_dim(rf, 0, rhs->dim[0], lhs->dim[0], "batch"));
    TRY(ck_dim(rf, 1, rhs->dim[1], lhs->dim[1], "heads"));
    TRY(ck_dim(rf, raxis, rhs->dim[raxis], lhs->dim[3], what));
    return 0;
}

int npk_golden_batch_matmul(int int4, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *g) {
    TRY(ck_batch("lhs", "rhs", lhs, rhs, 2, "K of lhs"));
    TRY(ck_int(int4, lhs, "lhs"));
    TRY(ck_int(int4, rhs, "rhs"));
    unsigned B = lhs->dim[0], H = lhs->dim[1], M = lhs->dim[2], K = lhs->dim[3], N = rhs->dim[3];
    unsigned d[4] = {B, H, M, N};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I32, 4, d);
    if (!r) return -NPK_ENOMEM;
    for (unsigned s = 0; s < B * H; s++)
        mm(lhs->data + (size_t)s * M * K, rhs->data + (size_t)s * K * N, r->data + (size_t)s * M * N, M, K, N);
    return 0;
}

int npk_golden_qkv_projection(const npk_ltensor *input, const npk_ltensor *packed_weight, unsigned shift,
                              npk_lower_out *g) {
    TRY(npk_ck_rank(input, "input", 2));
    TRY(npk_ck_rank(packed_weight, "packed_weight", 2));
    unsigned T = input->dim[0], D = input->dim[1];
    TRY(ck_dim("packed_weight", 0, packed_weight->dim[0], D, "input width D"));
    TRY(ck_dim("packed_weight", 1, packed_weight->dim[1], 3 * D, "3 x D packed Q|K|V columns"));
    TRY(npk_ck_shift("projection_shift", shift));
    TRY(ck_i8(input, "input"));
    TRY(ck_i8(packed_weight, "packed_weight"));
    unsigned dq[2] = {T, D}, dp[2] = {T, 3 * D};
    npk_ltensor *q = npk_out_add(g, "q", NPK_LD_I8, 2, dq), *k = npk_out_add(g, "k", NPK_LD_I8, 2, dq),
                *v = npk_out_add(g, "v", NPK_LD_I8, 2, dq), *p = npk_out_add(g, "packed", NPK_LD_I32, 2, dp);
    if (!q || !k || !v || !p) return -NPK_ENOMEM;
    mm(input->data, packed_weight->data, p->data, T, D, 3 * D);
    npk_ltensor *qkv[3] = {q, k, v};
    for (unsigned t = 0; t < T; t++)
        for (unsigned s = 0; s < 3; s++)
            for (unsigned j = 0; j < D; j++)
                qkv[s]->data[t * D + j] = npk_clamp8(npk_asr(p->data[(size_t)t * 3 * D + s * D + j], shift));
    return 0;
}

int npk_golden_sparse_int4_matmul(const npk_ltensor *lhs, const npk_ltensor *rhs_nonzero,
                                  const npk_ltensor *rhs_positions, npk_lower_out *g) {
    TRY(npk_ck_rank(lhs, "lhs", 2));
    TRY(npk_ck_rank(rhs_nonzero, "rhs_nonzero", 3));
    TRY(npk_ck_rank(rhs_positions, "rhs_positions", 3));
    unsigned M = lhs->dim[0], K = lhs->dim[1], KB = rhs_nonzero->dim[0], N = rhs_nonzero->dim[1];
    unsigned need = (K + 7) / 8;
    if (KB != need)
        return npk_err(NPK_EINVAL, "field 'rhs_nonzero': %u sparse blocks but K = %u needs %u blocks of 8 (%s)", KB, K,
                       need, KB < need ? "K exceeds the sparse metadata blocks" : "unused sparse metadata blocks");
    TRY(ck_dim("rhs_nonzero", 2, rhs_nonzero->dim[2], 4, "four nonzero weights per 8-lane block"));
    TRY(ck_dim("rhs_positions", 0, rhs_positions->dim[0], KB, "sparse blocks of rhs_nonzero"));
    TRY(ck_dim("rhs_positions", 1, rhs_positions->dim[1], N, "output columns of rhs_nonzero"));
    TRY(ck_dim("rhs_positions", 2, rhs_positions->dim[2], 4, "four metadata positions per block"));
    TRY(npk_ck_range(lhs, "lhs", -8, 7, "int4"));
    TRY(npk_ck_range(rhs_nonzero, "rhs_nonzero", -8, 7, "int4"));
    TRY(npk_ck_range(rhs_positions, "rhs_positions", 0, 3, "2:4 position"));
    for (unsigned b = 0; b < KB; b++)
        for (unsigned j = 0; j < N; j++) {
            const int32_t *p = rhs_positions->data + ((size_t)b * N + j) * 4;
            if (p[0] == p[1] || p[2] == p[3])
                return npk_err(NPK_EINVAL,
                               "field 'rhs_positions': block %u column %u positions {%d,%d},{%d,%d} are not distinct "
                               "inside each 2:4 group",
                               b, j, p[0], p[1], p[2], p[3]);
        }
    unsigned d[2] = {M, N};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I32, 2, d);
    if (!r) return -NPK_ENOMEM;
    for (unsigned i = 0; i < M; i++)
        for (unsigned j = 0; j < N; j++) {
            uint32_t acc = 0;
            for (unsigned b = 0; b < KB; b++) {
                const int32_t *w = rhs_nonzero->data + ((size_t)b * N + j) * 4;
                const int32_t *p = rhs_positions->data + ((size_t)b * N + j) * 4;
                for (unsigned l = 0; l < 4; l++) {
                    unsigned kk = b * 8 + (l / 2) * 4 + (unsigned)p[l];
                    int32_t x = kk < K ? lhs->data[(size_t)i * K + kk] : 0;
                    acc += (uint32_t)(w[l] * x);
                }
            }
            r->data[i * N + j] = (int32_t)acc;
        }
    return 0;
}

int npk_golden_group_scaled_int4_matmul(const npk_ltensor *lhs, const npk_ltensor *rhs,
                                        const npk_ltensor *scales_q8_8, unsigned group_size, npk_lower_out *g) {
    TRY(npk_ck_rank(lhs, "lhs", 2));
    TRY(npk_ck_rank(rhs, "rhs", 2));
    TRY(npk_ck_rank(scales_q8_8, "scales_q8_8", 2));
    unsigned M = lhs->dim[0], K = lhs->dim[1], N = rhs->dim[1];
    TRY(ck_dim("rhs", 0, rhs->dim[0], K, "K of lhs"));
    if (group_size < 1 || group_size > K)
        return npk_err(NPK_EINVAL, "field 'group_size': %u is outside 1..K (K = %u)", group_size, K);
    unsigned G = (K + group_size - 1) / group_size;
    TRY(ck_dim("scales_q8_8", 0, scales_q8_8->dim[0], G, "ceil(K / group_size) groups"));
    TRY(ck_dim("scales_q8_8", 1, scales_q8_8->dim[1], N, "output columns"));
    TRY(ck_i8(lhs, "lhs"));
    TRY(npk_ck_range(rhs, "rhs", -8, 7, "int4"));
    TRY(npk_ck_range(scales_q8_8, "scales_q8_8", -32768, 32767, "signed Q8.8"));
    unsigned d[2] = {M, N}, dg[3] = {M, N, G};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_Q8_8, 2, d);
    npk_ltensor *gd = npk_out_add(g, "group_dot", NPK_LD_I32, 3, dg);
    if (!r || !gd) return -NPK_ENOMEM;
    for (unsigned i = 0; i < M; i++)
        for (unsigned j = 0; j < N; j++) {
            int32_t acc = 0;
            for (unsigned gi = 0; gi < G; gi++) {
                int32_t dot = 0;
                for (unsigned l = gi * group_size; l < K && l < (gi + 1) * group_size; l++)
                    dot = npk_wrap32((int64_t)dot + (int64_t)lhs->data[(size_t)i * K + l] * rhs->data[(size_t)l * N + j]);
                gd->data[((size_t)i * N + j) * G + gi] = dot;
                acc = npk_wrap32((int64_t)acc + npk_wrap32((int64_t)dot * scales_q8_8->data[(size_t)gi * N + j]));
            }
            r->data[i * N + j] = acc;
        }
    return 0;
}

int npk_golden_int2_matmul(int ternary, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *g) {
    TRY(npk_ck_rank(lhs, "lhs", 2));
    TRY(npk_ck_rank(rhs, "rhs", 2));
    TRY(ck_dim("rhs", 0, rhs->dim[0], lhs->dim[1], "K of lhs"));
    const char *what = ternary ? "ternary" : "int2";
    TRY(npk_ck_range(lhs, "lhs", ternary ? -1 : -2, 1, what));
    TRY(npk_ck_range(rhs, "rhs", ternary ? -1 : -2, 1, what));
    unsigned d[2] = {lhs->dim[0], rhs->dim[1]};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I32, 2, d);
    if (!r) return -NPK_ENOMEM;
    mm(lhs->data, rhs->data, r->data, lhs->dim[0], lhs->dim[1], rhs->dim[1]);
    return 0;
}

/* FP8 E4M3 byte to the chip's signed Q8.8 (e1-rtl-notes.md, no NaN/Inf). */
static int32_t fp8_q88(uint32_t x) {
    uint32_t e = (x >> 3) & 0xf, m = x & 7;
    int32_t mag = e == 0 ? (int32_t)(m >> 1) : e == 1 ? (int32_t)((8 + m) >> 1) : (int32_t)((8 + m) << (e - 2));
    return (x & 0x80) ? -mag : mag;
}

int npk_golden_fp8_matmul(const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *g) {
    TRY(npk_ck_rank(lhs, "lhs", 2));
    TRY(npk_ck_rank(rhs, "rhs", 2));
    TRY(ck_dim("rhs", 0, rhs->dim[0], lhs->dim[1], "K of lhs"));
    TRY(npk_ck_range(lhs, "lhs", 0, 255, "FP8 E4M3 byte"));
    TRY(npk_ck_range(rhs, "rhs", 0, 255, "FP8 E4M3 byte"));
    unsigned M = lhs->dim[0], K = lhs->dim[1], N = rhs->dim[1];
    unsigned d[2] = {M, N};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_Q8_8, 2, d);
    if (!r) return -NPK_ENOMEM;
    for (unsigned i = 0; i < M; i++)
        for (unsigned j = 0; j < N; j++) {
            uint32_t acc = 0;
            for (unsigned l = 0; l < K; l++) {
                /* the lane product wraps at 32 bits before the arithmetic >> 8 */
                int32_t p = (int32_t)((uint32_t)fp8_q88((uint32_t)lhs->data[(size_t)i * K + l]) *
                                      (uint32_t)fp8_q88((uint32_t)rhs->data[(size_t)l * N + j]));
                acc += (uint32_t)npk_asr(p, 8);
            }
            r->data[i * N + j] = (int32_t)acc;
        }
    return 0;
}

int npk_f16_to_q88(int bf16, uint32_t bits, int32_t *q) {
    int neg = (bits & 0x8000) != 0;
    int64_t exp, frac, mant, sh;
    if (bf16) {
        exp = (bits >> 7) & 0xff;
        frac = bits & 0x7f;
        if (exp == 0xff) return npk_err(NPK_EINVAL, "BF16 NaN/Inf is not supported");
        mant = 128 + frac;
        sh = exp - 126;
    } else {
        exp = (bits >> 10) & 0x1f;
        frac = bits & 0x3ff;
        if (exp == 0x1f) return npk_err(NPK_EINVAL, "FP16 NaN/Inf is not supported");
        mant = 1024 + frac;
        sh = exp - 17;
    }
    if (exp == 0) {
        if (frac) return npk_err(NPK_EINVAL, "%s subnormal values are not supported", bf16 ? "BF16" : "FP16");
        *q = 0;
        return 0;
    }
    int64_t v;
    if (sh >= 0) {
        if (sh > 16) return npk_err(NPK_EINVAL, "value outside the signed Q8.8 range");
        v = mant << sh;
    } else if (-sh > 40) {
        v = 0;
    } else {
        int64_t half = (int64_t)1 << (-sh - 1);
        v = (mant + half) >> -sh; /* round half away from zero (on the magnitude) */
    }
    if (neg) v = -v;
    if (v < -32768 || v > 32767) return npk_err(NPK_EINVAL, "value outside the signed Q8.8 range [-32768, 32767]");
    *q = (int32_t)v;
    return 0;
}

static int convert_f16(int bf16, const npk_ltensor *in, const char *field, npk_ltensor *out) {
    size_t n = npk_lt_numel(in);
    for (size_t i = 0; i < n; i++) {
        int rc = npk_f16_to_q88(bf16, (uint32_t)in->data[i], &out->data[i]);
        if (rc) {
            char ix[64];
            index_str(in, i, ix, sizeof ix);
            return npk_err_prefix(rc, "field '%s': 0x%04x at %s", field, (unsigned)in->data[i], ix);
        }
    }
    return 0;
}

int npk_golden_float16_matmul(int bf16, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *g) {
    TRY(npk_ck_rank(lhs, "lhs", 2));
    TRY(npk_ck_rank(rhs, "rhs", 2));
    TRY(ck_dim("rhs", 0, rhs->dim[0], lhs->dim[1], "K of lhs"));
    const char *what = bf16 ? "BF16 bits" : "FP16 bits";
    TRY(npk_ck_range(lhs, "lhs", 0, 65535, what));
    TRY(npk_ck_range(rhs, "rhs", 0, 65535, what));
    unsigned M = lhs->dim[0], K = lhs->dim[1], N = rhs->dim[1];
    unsigned d[2] = {M, N};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_Q8_8, 2, d);
    npk_ltensor *lq = npk_out_add(g, "lhs_q8_8", NPK_LD_Q8_8, 2, lhs->dim);
    npk_ltensor *rq = npk_out_add(g, "rhs_q8_8", NPK_LD_Q8_8, 2, rhs->dim);
    if (!r || !lq || !rq) return -NPK_ENOMEM;
    TRY(convert_f16(bf16, lhs, "lhs", lq));
    TRY(convert_f16(bf16, rhs, "rhs", rq));
    for (unsigned i = 0; i < M; i++)
        for (unsigned j = 0; j < N; j++) {
            int32_t acc = 0;
            for (unsigned l = 0; l < K; l++) {
                int64_t p = (int64_t)lq->data[(size_t)i * K + l] * rq->data[(size_t)l * N + j]; /* Q16.16 */
                acc = npk_wrap32((int64_t)acc + npk_asr(p, 8));
            }
            r->data[i * N + j] = acc;
        }
    return 0;
}

/* ---- convolutions ----------------------------------------------------------------- */

static int ck_conv_common(const npk_ltensor *input, const npk_ltensor *filter) {
    TRY(npk_ck_rank(input, "input", 4));
    TRY(npk_ck_rank(filter, "filter", 4));
    if (input->dim[0] != 1)
        return npk_err(NPK_EINVAL, "field 'input': batch %u is not supported (batch 1 NHWC only)", input->dim[0]);
    if (filter->dim[0] > input->dim[1] || filter->dim[1] > input->dim[2])
        return npk_err(NPK_EINVAL, "field 'filter': %ux%u window does not fit the %ux%u input (VALID padding)",
                       filter->dim[0], filter->dim[1], input->dim[1], input->dim[2]);
    return 0;
}

#define IX4(t, a, b, c, d) ((((size_t)(a) * (t)->dim[1] + (b)) * (t)->dim[2] + (c)) * (t)->dim[3] + (d))

int npk_golden_conv2d(int int4, const npk_ltensor *input, const npk_ltensor *filter, npk_lower_out *g) {
    TRY(ck_conv_common(input, filter));
    TRY(ck_dim("filter", 2, filter->dim[2], input->dim[3], "input channels C (HWIO)"));
    TRY(ck_int(int4, input, "input"));
    TRY(ck_int(int4, filter, "filter"));
    unsigned KH = filter->dim[0], KW = filter->dim[1], C = input->dim[3], O = filter->dim[3];
    unsigned OH = input->dim[1] - KH + 1, OW = input->dim[2] - KW + 1;
    unsigned d[4] = {1, OH, OW, O};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I32, 4, d);
    if (!r) return -NPK_ENOMEM;
    for (unsigned y = 0; y < OH; y++)
        for (unsigned x = 0; x < OW; x++)
            for (unsigned o = 0; o < O; o++) {
                uint32_t acc = 0;
                for (unsigned fy = 0; fy < KH; fy++)
                    for (unsigned fx = 0; fx < KW; fx++)
                        for (unsigned c = 0; c < C; c++)
                            acc += (uint32_t)(input->data[IX4(input, 0, y + fy, x + fx, c)] *
                                              filter->data[IX4(filter, fy, fx, c, o)]);
                r->data[IX4(r, 0, y, x, o)] = (int32_t)acc;
            }
    return 0;
}

int npk_golden_depthwise_conv2d(const npk_ltensor *input, const npk_ltensor *filter, npk_lower_out *g) {
    TRY(ck_conv_common(input, filter));
    TRY(ck_dim("filter", 2, filter->dim[2], input->dim[3], "input channels C (HWCM)"));
    TRY(ck_i8(input, "input"));
    TRY(ck_i8(filter, "filter"));
    unsigned KH = filter->dim[0], KW = filter->dim[1], C = input->dim[3], Mu = filter->dim[3];
    unsigned OH = input->dim[1] - KH + 1, OW = input->dim[2] - KW + 1;
    unsigned d[4] = {1, OH, OW, C * Mu};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I32, 4, d);
    if (!r) return -NPK_ENOMEM;
    for (unsigned y = 0; y < OH; y++)
        for (unsigned x = 0; x < OW; x++)
            for (unsigned c = 0; c < C; c++)
                for (unsigned m = 0; m < Mu; m++) {
                    uint32_t acc = 0;
                    for (unsigned fy = 0; fy < KH; fy++)
                        for (unsigned fx = 0; fx < KW; fx++)
                            acc += (uint32_t)(input->data[IX4(input, 0, y + fy, x + fx, c)] *
                                              filter->data[IX4(filter, fy, fx, c, m)]);
                    r->data[IX4(r, 0, y, x, c * Mu + m)] = (int32_t)acc;
                }
    return 0;
}

int npk_golden_grouped_conv2d(const npk_ltensor *input, const npk_ltensor *filter, unsigned groups,
                              npk_lower_out *g) {
    TRY(ck_conv_common(input, filter));
    unsigned C = input->dim[3], O = filter->dim[3];
    if (groups <= 1) return npk_err(NPK_EINVAL, "field 'groups': %u must be greater than 1", groups);
    if (groups >= C)
        return npk_err(NPK_EINVAL, "field 'groups': %u must be below the %u input channels (use depthwise_conv2d)",
                       groups, C);
    if (C % groups) return npk_err(NPK_EINVAL, "field 'groups': %u does not divide the %u input channels", groups, C);
    if (O % groups) return npk_err(NPK_EINVAL, "field 'groups': %u does not divide the %u output channels", groups, O);
    unsigned ipg = C / groups, opg = O / groups;
    TRY(ck_dim("filter", 2, filter->dim[2], ipg, "input channels per group (HWIO)"));
    TRY(ck_i8(input, "input"));
    TRY(ck_i8(filter, "filter"));
    unsigned KH = filter->dim[0], KW = filter->dim[1];
    unsigned OH = input->dim[1] - KH + 1, OW = input->dim[2] - KW + 1;
    unsigned d[4] = {1, OH, OW, O};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I32, 4, d);
    if (!r) return -NPK_ENOMEM;
    for (unsigned y = 0; y < OH; y++)
        for (unsigned x = 0; x < OW; x++)
            for (unsigned o = 0; o < O; o++) {
                unsigned grp = o / opg;
                uint32_t acc = 0;
                for (unsigned fy = 0; fy < KH; fy++)
                    for (unsigned fx = 0; fx < KW; fx++)
                        for (unsigned ic = 0; ic < ipg; ic++)
                            acc += (uint32_t)(input->data[IX4(input, 0, y + fy, x + fx, grp * ipg + ic)] *
                                              filter->data[IX4(filter, fy, fx, ic, o)]);
                r->data[IX4(r, 0, y, x, o)] = (int32_t)acc;
            }
    return 0;
}

/* ---- element-wise and normalisation ---------------------------------------------------- */

int npk_golden_bias_add(const npk_ltensor *input, const npk_ltensor *bias, npk_lower_out *g) {
    TRY(npk_ck_rank(input, "input", 2));
    TRY(npk_ck_rank(bias, "bias", 1));
    TRY(ck_dim("bias", 0, bias->dim[0], input->dim[1], "input width N"));
    TRY(ck_i8(input, "input"));
    TRY(ck_i8(bias, "bias"));
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I8, 2, input->dim);
    if (!r) return -NPK_ENOMEM;
    unsigned N = input->dim[1];
    for (size_t i = 0; i < npk_lt_numel(input); i++) r->data[i] = npk_clamp8((int64_t)input->data[i] + bias->data[i % N]);
    return 0;
}

int npk_golden_residual_add(const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *g) {
    TRY(npk_ck_rank(lhs, "lhs", 2));
    TRY(npk_ck_rank(rhs, "rhs", 2));
    TRY(ck_dim("rhs", 0, rhs->dim[0], lhs->dim[0], "rows of lhs"));
    TRY(ck_dim("rhs", 1, rhs->dim[1], lhs->dim[1], "columns of lhs"));
    TRY(ck_i8(lhs, "lhs"));
    TRY(ck_i8(rhs, "rhs"));
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I8, 2, lhs->dim);
    if (!r) return -NPK_ENOMEM;
    for (size_t i = 0; i < npk_lt_numel(lhs); i++) r->data[i] = npk_clamp8((int64_t)lhs->data[i] + rhs->data[i]);
    return 0;
}

int npk_golden_rope(const npk_ltensor *input, const npk_ltensor *cos, const npk_ltensor *sin, unsigned shift,
                    npk_lower_out *g) {
    TRY(npk_ck_rank(input, "input", 2));
    TRY(npk_ck_rank(cos, "cos", 1));
    TRY(npk_ck_rank(sin, "sin", 1));
    unsigned T = input->dim[0], D = input->dim[1];
    if (D % 2) return npk_err(NPK_EINVAL, "field 'input': model width %u is not even (RoPE rotates pairs)", D);
    TRY(ck_dim("cos", 0, cos->dim[0], D / 2, "D / 2 pairs"));
    TRY(ck_dim("sin", 0, sin->dim[0], D / 2, "D / 2 pairs"));
    TRY(npk_ck_shift("scale_shift", shift));
    TRY(ck_i8(input, "input"));
    TRY(ck_i8(cos, "cos"));
    TRY(ck_i8(sin, "sin"));
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I8, 2, input->dim);
    if (!r) return -NPK_ENOMEM;
    for (unsigned t = 0; t < T; t++)
        for (unsigned p = 0; p < D / 2; p++) {
            int64_t e = input->data[t * D + 2 * p], o = input->data[t * D + 2 * p + 1], c = cos->data[p],
                    s = sin->data[p];
            r->data[t * D + 2 * p] = npk_clamp8(npk_asr(e * c - o * s, shift));
            r->data[t * D + 2 * p + 1] = npk_clamp8(npk_asr(e * s + o * c, shift));
        }
    return 0;
}

static uint64_t isqrt64(uint64_t v) {
    uint64_t r = 0, bit = (uint64_t)1 << 62;
    while (bit > v) bit >>= 2;
    while (bit) {
        if (v >= r + bit) {
            v -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return r;
}

void npk_rmsnorm_params_default(npk_rmsnorm_params *p) {
    p->epsilon = 1;
    p->inv_rms_shift = 8;
    p->output_shift = 8;
}

int npk_golden_rmsnorm(const npk_ltensor *input, const npk_ltensor *weight, const npk_rmsnorm_params *p,
                       npk_lower_out *g) {
    npk_rmsnorm_params def;
    if (!p) {
        npk_rmsnorm_params_default(&def);
        p = &def;
    }
    TRY(npk_ck_rank(input, "input", 2));
    TRY(npk_ck_rank(weight, "weight", 1));
    unsigned T = input->dim[0], D = input->dim[1];
    TRY(ck_dim("weight", 0, weight->dim[0], D, "input width D"));
    if (p->epsilon < 0 || p->epsilon > INT32_MAX)
        return npk_err(NPK_EINVAL, "field 'epsilon': %" PRId64 " is outside 0..2147483647", p->epsilon);
    TRY(npk_ck_shift("inv_rms_shift", p->inv_rms_shift));
    TRY(npk_ck_shift("output_shift", p->output_shift));
    TRY(ck_i8(input, "input"));
    TRY(ck_i8(weight, "weight"));
    unsigned dt[1] = {T};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I8, 2, input->dim);
    npk_ltensor *ss = npk_out_add(g, "sum_squares", NPK_LD_I32, 1, dt);
    npk_ltensor *rms = npk_out_add(g, "rms", NPK_LD_I32, 1, dt);
    npk_ltensor *inv = npk_out_add(g, "inv_rms", NPK_LD_I32, 1, dt);
    if (!r || !ss || !rms || !inv) return -NPK_ENOMEM;
    for (unsigned t = 0; t < T; t++) {
        int64_t sum = 0;
        for (unsigned j = 0; j < D; j++) sum += (int64_t)input->data[t * D + j] * input->data[t * D + j];
        int64_t mean = (sum + D - 1) / D;
        int64_t root = (int64_t)isqrt64((uint64_t)(mean + p->epsilon));
        int64_t rr = root < 1 ? 1 : root;
        int64_t iv = ((int64_t)1 << p->inv_rms_shift) / rr;
        ss->data[t] = (int32_t)sum;
        rms->data[t] = (int32_t)rr;
        inv->data[t] = npk_wrap32(iv);
        for (unsigned j = 0; j < D; j++) {
            int32_t w = npk_wrap32((int64_t)input->data[t * D + j] * weight->data[j]);
            int32_t sc = npk_wrap32((int64_t)w * iv);
            r->data[t * D + j] = npk_clamp8(npk_asr(sc, p->output_shift));
        }
    }
    return 0;
}

/* sigmoid in Q0.8 of the EXP2 piecewise approximation at s. */
static int32_t sig_q08(int64_t s) {
    int64_t a = s < 0 ? -s : s;
    int32_t decay = 256 >> (a > 8 ? 8 : a);
    return s >= 0 ? 256 - (decay >> 1) : decay >> 1;
}

int npk_golden_silu(const npk_ltensor *input, npk_lower_out *g) {
    TRY(npk_ck_rank(input, "input", 2));
    TRY(ck_i8(input, "input"));
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I8, 2, input->dim);
    npk_ltensor *sg = npk_out_add(g, "sigmoid", NPK_LD_Q0_8, 2, input->dim);
    if (!r || !sg) return -NPK_ENOMEM;
    for (size_t i = 0; i < npk_lt_numel(input); i++) {
        int64_t x = input->data[i];
        sg->data[i] = sig_q08(x);
        r->data[i] = npk_clamp8(npk_asr(x * sg->data[i], 8));
    }
    return 0;
}

int npk_golden_gelu(const npk_ltensor *input, npk_lower_out *g) {
    TRY(npk_ck_rank(input, "input", 2));
    TRY(ck_i8(input, "input"));
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I8, 2, input->dim);
    npk_ltensor *sc = npk_out_add(g, "scaled", NPK_LD_I32, 2, input->dim);
    npk_ltensor *sg = npk_out_add(g, "sigmoid", NPK_LD_Q0_8, 2, input->dim);
    if (!r || !sc || !sg) return -NPK_ENOMEM;
    for (size_t i = 0; i < npk_lt_numel(input); i++) {
        int64_t x = input->data[i];
        int64_t s = npk_asr(x * 218, 7); /* 1.703125 * x */
        sc->data[i] = (int32_t)s;
        sg->data[i] = sig_q08(s);
        r->data[i] = npk_clamp8(npk_asr(x * sg->data[i], 8));
    }
    return 0;
}

static void requant(const npk_ltensor *in, npk_ltensor *out, unsigned shift) {
    for (size_t i = 0; i < npk_lt_numel(in); i++) out->data[i] = npk_clamp8(npk_asr(in->data[i], shift));
}

static int ck_mlp_shapes(const npk_ltensor *input, const npk_ltensor *up, const char *upf, const npk_ltensor *down) {
    TRY(npk_ck_rank(input, "input", 2));
    TRY(npk_ck_rank(up, upf, 2));
    TRY(npk_ck_rank(down, "down_weight", 2));
    TRY(ck_dim(upf, 0, up->dim[0], input->dim[1], "input width D"));
    TRY(ck_dim("down_weight", 0, down->dim[0], up->dim[1], "hidden width"));
    return 0;
}

int npk_golden_mlp(const npk_ltensor *input, const npk_ltensor *up_weight, const npk_ltensor *down_weight,
                   unsigned requant_shift, npk_lower_out *g) {
    TRY(ck_mlp_shapes(input, up_weight, "up_weight", down_weight));
    TRY(npk_ck_shift("requant_shift", requant_shift));
    TRY(ck_i8(input, "input"));
    TRY(ck_i8(up_weight, "up_weight"));
    TRY(ck_i8(down_weight, "down_weight"));
    unsigned T = input->dim[0], D = input->dim[1], F = up_weight->dim[1], O = down_weight->dim[1];
    unsigned dr[2] = {T, O}, dh[2] = {T, F};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I32, 2, dr);
    npk_ltensor *acc = npk_out_add(g, "hidden_acc", NPK_LD_I32, 2, dh);
    npk_ltensor *h = npk_out_add(g, "hidden", NPK_LD_I8, 2, dh);
    npk_ltensor *hr = npk_out_add(g, "hidden_relu", NPK_LD_I8, 2, dh);
    if (!r || !acc || !h || !hr) return -NPK_ENOMEM;
    mm(input->data, up_weight->data, acc->data, T, D, F);
    requant(acc, h, requant_shift);
    for (size_t i = 0; i < (size_t)T * F; i++) hr->data[i] = h->data[i] < 0 ? 0 : h->data[i];
    mm(hr->data, down_weight->data, r->data, T, F, O);
    return 0;
}

void npk_swiglu_params_default(npk_swiglu_params *p) {
    p->requant_shift = 0;
    p->gate_shift = 7;
    p->silu = 0;
}

int npk_golden_swiglu(const npk_ltensor *input, const npk_ltensor *up_weight, const npk_ltensor *gate_weight,
                      const npk_ltensor *down_weight, const npk_swiglu_params *p, npk_lower_out *g) {
    npk_swiglu_params def;
    if (!p) {
        npk_swiglu_params_default(&def);
        p = &def;
    }
    TRY(ck_mlp_shapes(input, up_weight, "up_weight", down_weight));
    TRY(npk_ck_rank(gate_weight, "gate_weight", 2));
    TRY(ck_dim("gate_weight", 0, gate_weight->dim[0], input->dim[1], "input width D"));
    TRY(ck_dim("gate_weight", 1, gate_weight->dim[1], up_weight->dim[1], "hidden width of up_weight"));
    TRY(npk_ck_shift("requant_shift", p->requant_shift));
    TRY(npk_ck_shift("gate_shift", p->gate_shift));
    TRY(ck_i8(input, "input"));
    TRY(ck_i8(up_weight, "up_weight"));
    TRY(ck_i8(gate_weight, "gate_weight"));
    TRY(ck_i8(down_weight, "down_weight"));
    unsigned T = input->dim[0], D = input->dim[1], F = up_weight->dim[1], O = down_weight->dim[1];
    unsigned dr[2] = {T, O}, dh[2] = {T, F};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I32, 2, dr);
    npk_ltensor *up = npk_out_add(g, "up", NPK_LD_I8, 2, dh);
    npk_ltensor *gate = npk_out_add(g, "gate", NPK_LD_I8, 2, dh);
    npk_ltensor *ga = npk_out_add(g, "gate_act", NPK_LD_I8, 2, dh);
    npk_ltensor *hid = npk_out_add(g, "hidden", NPK_LD_I8, 2, dh);
    if (!r || !up || !gate || !ga || !hid) return -NPK_ENOMEM;
    npk_ltensor tmp;
    TRY(npk_lt_alloc(&tmp, 2, dh));
    mm(input->data, up_weight->data, tmp.data, T, D, F);
    requant(&tmp, up, p->requant_shift);
    mm(input->data, gate_weight->data, tmp.data, T, D, F);
    requant(&tmp, gate, p->requant_shift);
    npk_lt_free(&tmp);
    for (size_t i = 0; i < (size_t)T * F; i++) {
        int64_t x = gate->data[i];
        ga->data[i] = p->silu ? npk_clamp8(npk_asr(x * sig_q08(x), 8)) : (int32_t)x;
        hid->data[i] = npk_clamp8(npk_asr((int64_t)up->data[i] * ga->data[i], p->gate_shift));
    }
    mm(hid->data, down_weight->data, r->data, T, F, O);
    return 0;
}

/* ---- attention ---------------------------------------------------------------------------- */

int npk_golden_attention_qk(int int4, const npk_ltensor *query, const npk_ltensor *key, npk_lower_out *g) {
    TRY(ck_batch("query", "key", query, key, 3, "head_dim D of query"));
    TRY(ck_int(int4, query, "query"));
    TRY(ck_int(int4, key, "key"));
    unsigned B = query->dim[0], H = query->dim[1], Tq = query->dim[2], D = query->dim[3], Tk = key->dim[2];
    unsigned d[4] = {B, H, Tq, Tk};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I32, 4, d);
    if (!r) return -NPK_ENOMEM;
    for (unsigned s = 0; s < B * H; s++)
        for (unsigned q = 0; q < Tq; q++)
            for (unsigned k = 0; k < Tk; k++) {
                uint32_t acc = 0;
                for (unsigned l = 0; l < D; l++)
                    acc += (uint32_t)(query->data[((size_t)s * Tq + q) * D + l] * key->data[((size_t)s * Tk + k) * D + l]);
                r->data[((size_t)s * Tq + q) * Tk + k] = (int32_t)acc;
            }
    return 0;
}

/* Validate logits/mask for the EXP2 softmax (shared with attention). */
static int ck_softmax(const npk_ltensor *logits, const npk_ltensor *mask, const char *lf, const char *mf) {
    TRY(npk_ck_rank(logits, lf, 4));
    TRY(ck_i8(logits, lf));
    if (mask) {
        TRY(npk_ck_rank(mask, mf, 4));
        for (unsigned a = 0; a < 4; a++) TRY(ck_dim(mf, a, mask->dim[a], logits->dim[a], "shape of the logits"));
        TRY(npk_ck_range(mask, mf, 0, 1, "boolean"));
    }
    unsigned rows = logits->dim[0] * logits->dim[1] * logits->dim[2], Tk = logits->dim[3];
    for (unsigned r = 0; r < rows; r++) {
        int32_t mx = INT32_MIN, mn = INT32_MAX;
        for (unsigned k = 0; k < Tk; k++) {
            if (mask && !mask->data[(size_t)r * Tk + k]) continue;
            int32_t v = logits->data[(size_t)r * Tk + k];
            if (v > mx) mx = v;
            if (v < mn) mn = v;
        }
        unsigned b = r / (logits->dim[1] * logits->dim[2]), h = (r / logits->dim[2]) % logits->dim[1],
                 q = r % logits->dim[2];
        if (mx == INT32_MIN)
            return npk_err(NPK_EINVAL, "field '%s': row [%u][%u][%u] has no unmasked key", mf, b, h, q);
        if (mx - mn > 128)
            return npk_err(NPK_EINVAL,
                           "field '%s': row [%u][%u][%u] spans %d..%d; the active spread must be <= 128 for "
                           "EXP2_NEG_Q0_8",
                           lf, b, h, q, mn, mx);
    }
    return 0;
}

int npk_golden_attention_softmax(const npk_ltensor *logits, const npk_ltensor *mask, npk_lower_out *g) {
    TRY(ck_softmax(logits, mask, "logits", "mask"));
    unsigned rows = logits->dim[0] * logits->dim[1] * logits->dim[2], Tk = logits->dim[3];
    unsigned dr[3] = {logits->dim[0], logits->dim[1], logits->dim[2]};
    npk_ltensor *w = npk_out_add(g, "result", NPK_LD_Q0_8, 4, logits->dim);
    npk_ltensor *mx = npk_out_add(g, "row_max", NPK_LD_I32, 3, dr);
    npk_ltensor *ex = npk_out_add(g, "exp", NPK_LD_Q0_8, 4, logits->dim);
    npk_ltensor *sm = npk_out_add(g, "row_sum", NPK_LD_I32, 3, dr);
    if (!w || !mx || !ex || !sm) return -NPK_ENOMEM;
    for (unsigned r = 0; r < rows; r++) {
        const int32_t *x = logits->data + (size_t)r * Tk;
        const int32_t *m = mask ? mask->data + (size_t)r * Tk : NULL;
        int32_t best = INT32_MIN;
        for (unsigned k = 0; k < Tk; k++)
            if ((!m || m[k]) && x[k] > best) best = x[k];
        int64_t sum = 0;
        for (unsigned k = 0; k < Tk; k++) {
            int32_t e = 0;
            if (!m || m[k]) {
                int64_t delta = (int64_t)x[k] - best; /* -128..0 */
                e = 256 >> (-delta > 8 ? 8 : -delta);
            }
            ex->data[(size_t)r * Tk + k] = e;
            sum += e;
        }
        for (unsigned k = 0; k < Tk; k++)
            w->data[(size_t)r * Tk + k] = (int32_t)(((int64_t)ex->data[(size_t)r * Tk + k] * 256 + sum / 2) / sum);
        mx->data[r] = best;
        sm->data[r] = (int32_t)sum;
    }
    return 0;
}

int npk_golden_attention_av(int int4, const npk_ltensor *attention, const npk_ltensor *value, npk_lower_out *g) {
    TRY(ck_batch("attention", "value", attention, value, 2, "key tokens Tk of attention"));
    TRY(ck_int(int4, attention, "attention"));
    TRY(ck_int(int4, value, "value"));
    unsigned B = attention->dim[0], H = attention->dim[1], Tq = attention->dim[2], Tk = attention->dim[3],
             Dv = value->dim[3];
    unsigned d[4] = {B, H, Tq, Dv};
    npk_ltensor *r = npk_out_add(g, "result", NPK_LD_I32, 4, d);
    if (!r) return -NPK_ENOMEM;
    for (unsigned s = 0; s < B * H; s++)
        mm(attention->data + (size_t)s * Tq * Tk, value->data + (size_t)s * Tk * Dv, r->data + (size_t)s * Tq * Dv, Tq,
           Tk, Dv);
    return 0;
}

void npk_attn_params_default(npk_attn_params *p) {
    p->mask_mode = NPK_MASK_FULL;
    p->mask_window = 1;
    p->qk_score_shift = 0;
    p->attention_weight_shift = 1;
    p->context_shift = 0;
}

int npk_make_mask(npk_ltensor *mask, int mode, unsigned window, unsigned B, unsigned H, unsigned Tq, unsigned Tk) {
    if (mode != NPK_MASK_FULL && mode != NPK_MASK_CAUSAL && mode != NPK_MASK_SLIDING_WINDOW)
        return npk_err(NPK_EINVAL, "field 'mask_mode': unknown mode %d", mode);
    if (mode != NPK_MASK_FULL && Tq > Tk)
        return npk_err(NPK_EINVAL, "field 'mask_mode': %s masks need query tokens (%u) <= key tokens (%u)",
                       mode == NPK_MASK_CAUSAL ? "causal" : "sliding_window", Tq, Tk);
    if (mode == NPK_MASK_SLIDING_WINDOW && window < 1)
        return npk_err(NPK_EINVAL, "field 'mask_window': the sliding window must be >= 1");
    TRY(npk_lt_alloc4(mask, B, H, Tq, Tk));
    unsigned off = Tk - (Tq <= Tk ? Tq : Tk);
    for (unsigned s = 0; s < B * H; s++)
        for (unsigned q = 0; q < Tq; q++)
            for (unsigned k = 0; k < Tk; k++) {
                int on = 1;
                if (mode != NPK_MASK_FULL) on = k <= off + q;
                if (mode == NPK_MASK_SLIDING_WINDOW) on = on && (int64_t)k > (int64_t)off + q - (int64_t)window;
                mask->data[((size_t)s * Tq + q) * Tk + k] = on;
            }
    return 0;
}

static int ck_attn_params(const npk_attn_params *p) {
    TRY(npk_ck_shift("qk_score_shift", p->qk_score_shift));
    TRY(npk_ck_shift("attention_weight_shift", p->attention_weight_shift));
    TRY(npk_ck_shift("context_shift", p->context_shift));
    if (p->mask_window < 1) return npk_err(NPK_EINVAL, "field 'mask_window': must be >= 1");
    return 0;
}

/* w8 = clamp8((w + 2^(s-1)) >> s). */
static int32_t wq(int32_t w, unsigned s) { return npk_clamp8(npk_asr((int64_t)w + (s ? (int64_t)1 << (s - 1) : 0), s)); }

int npk_golden_attention(const npk_ltensor *query, const npk_ltensor *key, const npk_ltensor *value,
                         const npk_ltensor *mask, const npk_attn_params *p, npk_lower_out *g) {
    npk_attn_params def;
    if (!p) {
        npk_attn_params_default(&def);
        p = &def;
    }
    TRY(ck_batch("query", "key", query, key, 3, "head_dim D of query"));
    TRY(npk_ck_rank(value, "value", 4));
    TRY(ck_dim("value", 0, value->dim[0], query->dim[0], "batch"));
    TRY(ck_dim("value", 1, value->dim[1], query->dim[1], "heads"));
    TRY(ck_dim("value", 2, value->dim[2], key->dim[2], "key tokens Tk"));
    TRY(ck_attn_params(p));
    TRY(ck_i8(query, "query"));
    TRY(ck_i8(key, "key"));
    TRY(ck_i8(value, "value"));
    unsigned B = query->dim[0], H = query->dim[1], Tq = query->dim[2], Tk = key->dim[2], Dv = value->dim[3];
    npk_lower_out qk = {0}, sm = {0}, av = {0};
    npk_ltensor gen = {0};
    int rc;
    if (!mask) {
        TRYG(npk_make_mask(&gen, p->mask_mode, p->mask_window, B, H, Tq, Tk));
        mask = &gen;
    } else {
        TRYG(npk_ck_rank(mask, "mask", 4));
        unsigned want[4] = {B, H, Tq, Tk};
        for (unsigned a = 0; a < 4; a++) TRYG(ck_dim("mask", a, mask->dim[a], want[a], "[B][H][Tq][Tk]"));
        TRYG(npk_ck_range(mask, "mask", 0, 1, "boolean"));
    }
    TRYG(npk_golden_attention_qk(0, query, key, &qk));
    unsigned ds[4] = {B, H, Tq, Tk}, dc[4] = {B, H, Tq, Dv};
    npk_ltensor *res = npk_out_add(g, "result", NPK_LD_I8, 4, dc);
    if (!res) goto oom;
    TRYG(out_copy(g, "scores", NPK_LD_I32, &qk.t[0]));
    npk_ltensor *logits = npk_out_add(g, "logits", NPK_LD_I8, 4, ds);
    if (!logits) goto oom;
    requant(&qk.t[0], logits, p->qk_score_shift);
    TRYG(out_copy(g, "mask", NPK_LD_BOOL, mask));
    TRYG(npk_golden_attention_softmax(logits, mask, &sm));
    TRYG(out_copy(g, "weights", NPK_LD_Q0_8, &sm.t[0]));
    npk_ltensor *w8 = npk_out_add(g, "weights_s8", NPK_LD_I8, 4, ds);
    if (!w8) goto oom;
    for (size_t i = 0; i < npk_lt_numel(w8); i++) w8->data[i] = wq(sm.t[0].data[i], p->attention_weight_shift);
    TRYG(npk_golden_attention_av(0, w8, value, &av));
    TRYG(out_copy(g, "context", NPK_LD_I32, &av.t[0]));
    requant(&av.t[0], res, p->context_shift);
    rc = 0;
    goto done;
oom:
    rc = -NPK_ENOMEM;
fail:
done:
    npk_lower_out_free(&qk);
    npk_lower_out_free(&sm);
    npk_lower_out_free(&av);
    npk_lt_free(&gen);
    return rc;
}

int npk_check_kv_cache_update(const npk_ltensor *key_cache, const npk_ltensor *value_cache,
                              const npk_ltensor *new_key, const npk_ltensor *new_value,
                              const npk_ltensor *cache_lengths) {
    TRY(npk_ck_rank(key_cache, "key_cache", 4));
    TRY(npk_ck_rank(value_cache, "value_cache", 4));
    TRY(npk_ck_rank(new_key, "new_key", 4));
    TRY(npk_ck_rank(new_value, "new_value", 4));
    TRY(npk_ck_rank(cache_lengths, "cache_lengths", 2));
    unsigned B = key_cache->dim[0], H = key_cache->dim[1], C = key_cache->dim[2], D = key_cache->dim[3];
    unsigned Dv = value_cache->dim[3], T = new_key->dim[2];
    TRY(ck_dim("value_cache", 0, value_cache->dim[0], B, "batch of key_cache"));
    TRY(ck_dim("value_cache", 1, value_cache->dim[1], H, "heads of key_cache"));
    TRY(ck_dim("value_cache", 2, value_cache->dim[2], C, "capacity of key_cache"));
    TRY(ck_dim("new_key", 0, new_key->dim[0], B, "batch of key_cache"));
    TRY(ck_dim("new_key", 1, new_key->dim[1], H, "heads of key_cache"));
    TRY(ck_dim("new_key", 3, new_key->dim[3], D, "head_dim of key_cache"));
    TRY(ck_dim("new_value", 0, new_value->dim[0], B, "batch of key_cache"));
    TRY(ck_dim("new_value", 1, new_value->dim[1], H, "heads of key_cache"));
    TRY(ck_dim("new_value", 2, new_value->dim[2], T, "new tokens of new_key"));
    TRY(ck_dim("new_value", 3, new_value->dim[3], Dv, "value_dim of value_cache"));
    TRY(ck_dim("cache_lengths", 0, cache_lengths->dim[0], B, "batch"));
    TRY(ck_dim("cache_lengths", 1, cache_lengths->dim[1], H, "heads"));
    TRY(ck_i8(key_cache, "key_cache"));
    TRY(ck_i8(value_cache, "value_cache"));
    TRY(ck_i8(new_key, "new_key"));
    TRY(ck_i8(new_value, "new_value"));
    for (unsigned s = 0; s < B * H; s++) {
        int64_t len = cache_lengths->data[s];
        if (len < 0 || len + T > C)
            return npk_err(NPK_EINVAL,
                           "field 'cache_lengths': head [%u][%u] length %" PRId64 " + %u new tokens exceeds the cache "
                           "capacity %u",
                           s / H, s % H, len, T, C);
    }
    return 0;
}

int npk_golden_kv_cache_update(const npk_ltensor *key_cache, const npk_ltensor *value_cache,
                               const npk_ltensor *new_key, const npk_ltensor *new_value,
                               const npk_ltensor *cache_lengths, npk_lower_out *g) {
    TRY(npk_check_kv_cache_update(key_cache, value_cache, new_key, new_value, cache_lengths));
    TRY(out_copy(g, "key_cache", NPK_LD_I8, key_cache));
    TRY(out_copy(g, "value_cache", NPK_LD_I8, value_cache));
    TRY(out_copy(g, "cache_lengths", NPK_LD_COUNT, cache_lengths));
    npk_ltensor *kc = &g->t[0], *vc = &g->t[1], *ln = &g->t[2];
    unsigned B = key_cache->dim[0], H = key_cache->dim[1], C = key_cache->dim[2], D = key_cache->dim[3];
    unsigned Dv = value_cache->dim[3], T = new_key->dim[2];
    for (unsigned s = 0; s < B * H; s++) {
        unsigned len = (unsigned)cache_lengths->data[s];
        for (unsigned t = 0; t < T; t++) {
            memcpy(kc->data + ((size_t)s * C + len + t) * D, new_key->data + ((size_t)s * T + t) * D, D * sizeof(int32_t));
            memcpy(vc->data + ((size_t)s * C + len + t) * Dv, new_value->data + ((size_t)s * T + t) * Dv,
                   Dv * sizeof(int32_t));
        }
        ln->data[s] = (int32_t)(len + T);
    }
    return 0;
}

int npk_golden_decode_attention(const npk_ltensor *query, const npk_ltensor *key_cache,
                                const npk_ltensor *value_cache, const npk_ltensor *new_key,
                                const npk_ltensor *new_value, const npk_ltensor *cache_lengths,
                                unsigned cache_window, const npk_attn_params *p, npk_lower_out *g) {
    npk_attn_params def;
    if (!p) {
        npk_attn_params_default(&def);
        p = &def;
    }
    TRY(npk_check_kv_cache_update(key_cache, value_cache, new_key, new_value, cache_lengths));
    TRY(ck_batch("query", "key_cache", query, key_cache, 3, "head_dim D of query"));
    TRY(ck_i8(query, "query"));
    TRY(ck_attn_params(p));
    npk_lower_out kv = {0}, at = {0};
    npk_ltensor kview = {0}, vview = {0}, mask = {0};
    int rc;
    TRYG(npk_golden_kv_cache_update(key_cache, value_cache, new_key, new_value, cache_lengths, &kv));
    unsigned B = key_cache->dim[0], H = key_cache->dim[1], C = key_cache->dim[2], D = key_cache->dim[3];
    unsigned Dv = value_cache->dim[3], Tq = query->dim[2];
    const npk_ltensor *len = &kv.t[2];
    unsigned maxlen = 0;
    for (unsigned s = 0; s < B * H; s++)
        if ((unsigned)len->data[s] > maxlen) maxlen = (unsigned)len->data[s];
    unsigned Lv = cache_window && cache_window < maxlen ? cache_window : maxlen;
    TRYG(npk_lt_alloc4(&kview, B, H, Lv, D));
    TRYG(npk_lt_alloc4(&vview, B, H, Lv, Dv));
    TRYG(npk_lt_alloc4(&mask, B, H, Tq, Lv));
    for (unsigned s = 0; s < B * H; s++) {
        unsigned l = (unsigned)len->data[s], vl = l < Lv ? l : Lv, start = l - vl;
        for (unsigned t = 0; t < vl; t++) {
            memcpy(kview.data + ((size_t)s * Lv + t) * D, kv.t[0].data + ((size_t)s * C + start + t) * D, D * 4);
            memcpy(vview.data + ((size_t)s * Lv + t) * Dv, kv.t[1].data + ((size_t)s * C + start + t) * Dv, Dv * 4);
        }
        for (unsigned q = 0; q < Tq; q++)
            for (unsigned t = 0; t < Lv; t++) mask.data[((size_t)s * Tq + q) * Lv + t] = t < vl;
    }
    TRYG(npk_golden_attention(query, &kview, &vview, &mask, p, &at));
    TRYG(out_copy(g, "result", NPK_LD_I8, &at.t[0]));
    TRYG(out_copy(g, "key_cache", NPK_LD_I8, &kv.t[0]));
    TRYG(out_copy(g, "value_cache", NPK_LD_I8, &kv.t[1]));
    TRYG(out_copy(g, "cache_lengths", NPK_LD_COUNT, &kv.t[2]));
    TRYG(out_copy(g, "key_view", NPK_LD_I8, &kview));
    TRYG(out_copy(g, "value_view", NPK_LD_I8, &vview));
    TRYG(out_copy(g, "mask", NPK_LD_BOOL, &mask));
    TRYG(out_copy(g, "context", NPK_LD_I32, npk_lower_out_get(&at, "context")));
fail:
    npk_lower_out_free(&kv);
    npk_lower_out_free(&at);
    npk_lt_free(&kview);
    npk_lt_free(&vview);
    npk_lt_free(&mask);
    return rc;
}

/* View of a rank-2 tensor as [1][1][R][C]. */
static npk_ltensor as4(const npk_ltensor *t) {
    unsigned d[4] = {1, 1, t->dim[0], t->dim[1]};
    return npk_lt_view(t->data, 4, d);
}
/* View of [1][1][R][C] as [R][C]. */
static npk_ltensor as2(const npk_ltensor *t) {
    unsigned d[2] = {t->dim[2], t->dim[3]};
    return npk_lt_view(t->data, 2, d);
}

int npk_golden_transformer_block(const npk_tblock_args *a, npk_lower_out *g) {
    TRY(npk_ck_rank(a->input, "input", 2));
    TRY(npk_ck_rank(a->attention, "attention", 4));
    TRY(npk_ck_rank(a->value, "value", 4));
    unsigned T = a->input->dim[0], D = a->input->dim[1];
    if (a->attention->dim[0] != 1 || a->attention->dim[1] != 1)
        return npk_err(NPK_EINVAL, "field 'attention': batch 1 and one head only ([1][1][T][Tk])");
    TRY(ck_dim("attention", 2, a->attention->dim[2], T, "tokens T of input"));
    TRY(ck_dim("value", 3, a->value->dim[3], D, "model width D of input"));
    TRY(npk_ck_rank(a->mlp_down_weight, "mlp_down_weight", 2));
    TRY(ck_dim("mlp_down_weight", 1, a->mlp_down_weight->dim[1], D, "model width D"));
    npk_lower_out av = {0}, ba = {0}, r1 = {0}, ml = {0}, r2 = {0};
    int rc;
    TRYG(npk_golden_attention_av(0, a->attention, a->value, &av));
    npk_ltensor ctx = as2(&av.t[0]);
    rc = npk_golden_bias_add(&ctx, a->attention_bias, &ba);
    if (rc) {
        rc = npk_err_prefix(rc, "attention context feeds the int8 bias add");
        goto fail;
    }
    TRYG(npk_golden_residual_add(a->input, &ba.t[0], &r1));
    TRYG(npk_golden_mlp(&r1.t[0], a->mlp_up_weight, a->mlp_down_weight, a->requant_shift, &ml));
    rc = npk_golden_residual_add(&r1.t[0], &ml.t[0], &r2);
    if (rc) {
        rc = npk_err_prefix(rc, "MLP output feeds the int8 residual add");
        goto fail;
    }
    TRYG(out_copy(g, "result", NPK_LD_I8, &r2.t[0]));
    TRYG(out_copy(g, "attention_context", NPK_LD_I32, &ctx));
    TRYG(out_copy(g, "attention_projected", NPK_LD_I8, &ba.t[0]));
    TRYG(out_copy(g, "post_attention_residual", NPK_LD_I8, &r1.t[0]));
    TRYG(out_copy(g, "mlp_output", NPK_LD_I32, &ml.t[0]));
fail:
    npk_lower_out_free(&av);
    npk_lower_out_free(&ba);
    npk_lower_out_free(&r1);
    npk_lower_out_free(&ml);
    npk_lower_out_free(&r2);
    return rc;
}

void npk_decoder_args_default(npk_decoder_args *a) {
    memset(a, 0, sizeof *a);
    a->attention_mask_mode = NPK_MASK_FULL;
    a->attention_mask_window = 1;
    a->projection_shift = 0;
    a->qk_score_shift = 7;
    a->attention_weight_shift = 1;
    a->attention_context_shift = 7;
    npk_rmsnorm_params_default(&a->rms);
    a->rope_scale_shift = 7;
    a->swiglu_requant_shift = 0;
    a->swiglu_gate_shift = 0;
    a->swiglu_silu = 0;
}

int npk_golden_modern_decoder_block(const npk_decoder_args *a, npk_lower_out *g) {
    TRY(npk_ck_rank(a->input, "input", 2));
    unsigned T = a->input->dim[0], D = a->input->dim[1];
    if (D % 2) return npk_err(NPK_EINVAL, "field 'input': model width %u is not even (RoPE)", D);
    const char *wn[3] = {"q_weight", "k_weight", "v_weight"};
    const npk_ltensor *w[3] = {a->q_weight, a->k_weight, a->v_weight};
    if (!a->packed_qkv_weight)
        for (int i = 0; i < 3; i++) {
            TRY(npk_ck_rank(w[i], wn[i], 2));
            TRY(ck_dim(wn[i], 0, w[i]->dim[0], D, "model width D"));
            TRY(ck_dim(wn[i], 1, w[i]->dim[1], D, "model width D"));
        }
    if (a->attention_mask) {
        TRY(npk_ck_rank(a->attention_mask, "attention_mask", 4));
        unsigned want[4] = {1, 1, T, T};
        for (unsigned i = 0; i < 4; i++)
            TRY(ck_dim("attention_mask", i, a->attention_mask->dim[i], want[i], "[1][1][T][T]"));
    }
    TRY(npk_ck_rank(a->swiglu_down_weight, "swiglu_down_weight", 2));
    TRY(ck_dim("swiglu_down_weight", 1, a->swiglu_down_weight->dim[1], D, "model width D"));
    TRY(npk_ck_shift("projection_shift", a->projection_shift));
    TRY(npk_ck_shift("qk_score_shift", a->qk_score_shift));
    TRY(npk_ck_shift("attention_weight_shift", a->attention_weight_shift));
    TRY(npk_ck_shift("attention_context_shift", a->attention_context_shift));
    TRY(npk_ck_shift("rope_scale_shift", a->rope_scale_shift));
    TRY(npk_ck_shift("swiglu_requant_shift", a->swiglu_requant_shift));
    TRY(npk_ck_shift("swiglu_gate_shift", a->swiglu_gate_shift));
    if (a->attention_mask_window < 1) return npk_err(NPK_EINVAL, "field 'attention_mask_window': must be >= 1");
    npk_lower_out n1 = {0}, pj[3] = {{0}}, qkv = {0}, rq = {0}, rk = {0}, at = {0}, ba = {0}, r1 = {0}, n2 = {0},
                  sw = {0}, r2 = {0};
    npk_ltensor qkvq[3] = {{0}}, ctxq = {0};
    int rc;
    TRYG(npk_golden_rmsnorm(a->input, a->norm1_weight, &a->rms, &n1));
    if (a->packed_qkv_weight) {
        rc = npk_golden_qkv_projection(&n1.t[0], a->packed_qkv_weight, a->projection_shift, &qkv);
        if (rc) {
            rc = npk_err_prefix(rc, "packed_qkv_weight");
            goto fail;
        }
        for (int i = 0; i < 3; i++) TRYG(npk_lt_copy(&qkvq[i], &qkv.t[i]));
    } else {
        for (int i = 0; i < 3; i++) {
            TRYG(npk_golden_matmul(0, &n1.t[0], w[i], &pj[i]));
            TRYG(npk_lt_alloc2(&qkvq[i], T, D));
            requant(&pj[i].t[0], &qkvq[i], a->projection_shift);
        }
    }
    TRYG(npk_golden_rope(&qkvq[0], a->cos, a->sin, a->rope_scale_shift, &rq));
    TRYG(npk_golden_rope(&qkvq[1], a->cos, a->sin, a->rope_scale_shift, &rk));
    npk_attn_params ap = {a->attention_mask_mode, a->attention_mask_window, a->qk_score_shift,
                          a->attention_weight_shift, 0};
    npk_ltensor q4 = as4(&rq.t[0]), k4 = as4(&rk.t[0]), v4 = as4(&qkvq[2]);
    TRYG(npk_golden_attention(&q4, &k4, &v4, a->attention_mask, &ap, &at));
    const npk_ltensor *ctx = npk_lower_out_get(&at, "context");
    TRYG(npk_lt_alloc2(&ctxq, T, D));
    {
        npk_ltensor c2 = as2(ctx);
        requant(&c2, &ctxq, a->attention_context_shift);
    }
    TRYG(npk_golden_bias_add(&ctxq, a->attention_bias, &ba));
    TRYG(npk_golden_residual_add(a->input, &ba.t[0], &r1));
    TRYG(npk_golden_rmsnorm(&r1.t[0], a->norm2_weight, &a->rms, &n2));
    npk_swiglu_params sp = {a->swiglu_requant_shift, a->swiglu_gate_shift, a->swiglu_silu};
    TRYG(npk_golden_swiglu(&n2.t[0], a->swiglu_up_weight, a->swiglu_gate_weight, a->swiglu_down_weight, &sp, &sw));
    rc = npk_golden_residual_add(&r1.t[0], &sw.t[0], &r2);
    if (rc) {
        rc = npk_err_prefix(rc, "SwiGLU output feeds the int8 residual add");
        goto fail;
    }
    TRYG(out_copy(g, "result", NPK_LD_I8, &r2.t[0]));
    TRYG(out_copy(g, "norm1", NPK_LD_I8, &n1.t[0]));
    TRYG(out_copy(g, "q", NPK_LD_I8, &qkvq[0]));
    TRYG(out_copy(g, "k", NPK_LD_I8, &qkvq[1]));
    TRYG(out_copy(g, "v", NPK_LD_I8, &qkvq[2]));
    TRYG(out_copy(g, "q_rope", NPK_LD_I8, &rq.t[0]));
    TRYG(out_copy(g, "k_rope", NPK_LD_I8, &rk.t[0]));
    TRYG(out_copy(g, "attention_weights", NPK_LD_Q0_8, npk_lower_out_get(&at, "weights")));
    TRYG(out_copy(g, "attention_context", NPK_LD_I8, &ctxq));
    TRYG(out_copy(g, "post_attention_residual", NPK_LD_I8, &r1.t[0]));
    TRYG(out_copy(g, "norm2", NPK_LD_I8, &n2.t[0]));
    TRYG(out_copy(g, "swiglu_output", NPK_LD_I32, &sw.t[0]));
fail:
    npk_lower_out_free(&n1);
    for (int i = 0; i < 3; i++) {
        npk_lower_out_free(&pj[i]);
        npk_lt_free(&qkvq[i]);
    }
    npk_lower_out_free(&qkv);
    npk_lower_out_free(&rq);
    npk_lower_out_free(&rk);
    npk_lower_out_free(&at);
    npk_lower_out_free(&ba);
    npk_lower_out_free(&r1);
    npk_lower_out_free(&n2);
    npk_lower_out_free(&sw);
    npk_lower_out_free(&r2);
    npk_lt_free(&ctxq);
    return rc;
}
