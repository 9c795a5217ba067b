// SPDX-License-Identifier: MIT
/* The float/int8 reference operations (see ref_float.h). */
#include "ops/ref_float.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

unsigned npk_ref_dtype_size(int dtype) {
    switch (dtype) {
    case NPK_REF_INT8: case NPK_REF_FP8: return 1;
    case NPK_REF_FP16: case NPK_REF_BF16: return 2;
    default: return 0;
    }
}

float npk_ref_load_float(int dtype, const uint8_t *p) {
    switch (dtype) {
    case NPK_REF_FP16: return npk_fp16_to_f32((uint16_t)(p[0] | p[1] << 8));
    case NPK_REF_BF16: return npk_bf16_to_f32((uint16_t)(p[0] | p[1] << 8));
    case NPK_REF_FP8: return npk_fp8_to_f32(p[0]);
    default: return (float)(int8_t)p[0];
    }
}

/* ---- GEMM reference ------------------------------------------------------------ */

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void wr32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static float f32_of(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static const uint8_t *at(const uint8_t *base, int col_major, size_t ld, size_t es, size_t r, size_t c) {
    return base + (col_major ? c * ld + r * es : r * ld + c * es);
}

/* Logical A(i,k) and B(k,j) element addresses. */
static const uint8_t *a_at(const npk_ref_gemm *g, size_t i, size_t kk, size_t es) {
    return g->trans_a ? at(g->a, g->col_major, g->lda, es, kk, i) : at(g->a, g->col_major, g->lda, es, i, kk);
}
static const uint8_t *b_at(const npk_ref_gemm *g, size_t kk, size_t j, size_t es) {
    return g->trans_b ? at(g->b, g->col_major, g->ldb, es, j, kk) : at(g->b, g->col_major, g->ldb, es, kk, j);
}

static int32_t sat_i32(double v) {
    if (isnan(v)) return 0;
    v = rint(v);
    if (v >= 2147483647.0) return INT32_MAX;
    if (v <= -2147483648.0) return INT32_MIN;
    return (int32_t)v;
}

double npk_ref_gelu(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440)); }

double npk_ref_dgelu(double x) {
    return 0.5 * (1.0 + erf(x * 0.70710678118654752440)) + x * exp(-0.5 * x * x) * 0.39894228040143267794;
}

/* Requantization of the INT8_OUT GEMM: v / 2^shift, round half to even, saturate to int8. */
static int32_t rq_int(int64_t v, unsigned shift) {
    if (shift > 32) return 0; /* |v| <= 2^31: |v / 2^shift| < 0.5 */
    if (shift) {
        int64_t q = v >> shift, rem = v - q * ((int64_t)1 << shift), half = (int64_t)1 << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        v = q;
    }
    return v > 127 ? 127 : v < -128 ? -128 : (int32_t)v;
}
static int32_t rq_float(double f, unsigned shift) {
    if (f != f) return 0;
    f = nearbyint(ldexp(f, -(int)shift));
    return f > 127 ? 127 : f < -128 ? -128 : (int32_t)f;
}

void npk_ref_gemm_run(const npk_ref_gemm *g) {
    size_t es = npk_ref_dtype_size(g->dtype);
    /* beta == 0 means C is not read (BLAS) */
    const int has_beta = g->has_beta && g->beta != 0.0f;
    const int i8 = g->dtype == NPK_REF_INT8 && g->int8_out;
    const size_t ces = i8 ? 1 : 4; /* C and bias element size */
    for (size_t i = 0; i < g->m; i++) {
        for (size_t j = 0; j < g->n; j++) {
            const uint8_t *cin = g->c_in ? at(g->c_in, g->col_major, g->ldc, ces, i, j) : NULL;
            uint8_t *cout = (uint8_t *)at(g->c, g->col_major, g->ldc, ces, i, j);
            if (g->dtype == NPK_REF_INT8) {
                uint32_t acc = 0;
                for (size_t kk = 0; kk < g->k; kk++)
                    acc += (uint32_t)((int32_t)(int8_t)*a_at(g, i, kk, 1) * (int32_t)(int8_t)*b_at(g, kk, j, 1));
                uint32_t old = cin ? (i8 ? (uint32_t)(int32_t)(int8_t)cin[0] : rd32(cin)) : 0;
                uint32_t bj = g->bias ? (i8 ? (uint32_t)(int32_t)(int8_t)g->bias[j] : rd32(g->bias + 4 * j)) : 0;
                int32_t r;
                if (!g->has_alpha && !has_beta) {
                    uint32_t u = acc + bj;
                    r = (int32_t)u;
                    switch (g->epilogue) {
                    case 1: if (r < 0) r = 0; break;
                    case 2: r = sat_i32(npk_ref_gelu((double)r)); break;
                    case 3: r = (int32_t)((uint32_t)r + old); break;
                    case 4: r = (int32_t)((uint32_t)r * old); break;
                    default: break;
                    }
                    if (i8) r = rq_int(r, g->shift);
                } else {
                    float f = (float)(int32_t)acc;
                    if (g->has_alpha) f = f * g->alpha;
                    if (has_beta) f = f + g->beta * (float)(int32_t)old;
                    if (g->bias) f = f + (float)(int32_t)bj;
                    switch (g->epilogue) {
                    case 1: if (f < 0) f = 0; break;
                    case 2: f = (float)npk_ref_gelu(f); break;
                    case 3: f = f + (float)(int32_t)old; break;
                    case 4: f = f * (float)(int32_t)old; break;
                    default: break;
                    }
                    r = i8 ? rq_float(f, g->shift) : sat_i32(f);
                }
                if (i8) cout[0] = (uint8_t)(int8_t)r;
                else wr32(cout, (uint32_t)r);
            } else {
                float acc = 0.0f;
                for (size_t kk = 0; kk < g->k; kk++) {
                    float p = npk_ref_load_float(g->dtype, a_at(g, i, kk, es)) *
                              npk_ref_load_float(g->dtype, b_at(g, kk, j, es));
                    acc = acc + p;
                }
                float f = acc;
                if (g->has_alpha) f = f * g->alpha;
                if (has_beta) f = f + g->beta * f32_of(rd32(cin));
                if (g->bias) f = f + f32_of(rd32(g->bias + 4 * j));
                switch (g->epilogue) {
                case 1: if (f < 0) f = 0; break;
                case 2: f = (float)npk_ref_gelu(f); break;
                case 3: f = f + f32_of(rd32(cin)); break;
                case 4: f = f * f32_of(rd32(cin)); break;
                default: break;
                }
                wr32(cout, bits_of(f));
            }
        }
    }
}

void npk_ref_gemm_i8(uint32_t m, uint32_t n, uint32_t k, const int8_t *a, const int8_t *b, const int32_t *bias,
                     int32_t *c) {
    for (uint32_t i = 0; i < m; i++) {
        for (uint32_t j = 0; j < n; j++) c[(size_t)i * n + j] = bias ? bias[j] : 0;
        for (uint32_t kk = 0; kk < k; kk++) {
            int32_t av = a[(size_t)i * k + kk];
            const int8_t *brow = b + (size_t)kk * n;
            int32_t *crow = c + (size_t)i * n;
            for (uint32_t j = 0; j < n; j++) crow[j] = (int32_t)((uint32_t)crow[j] + (uint32_t)(av * brow[j]));
        }
    }
}

/* ---- vector references -------------------------------------------------------------- */

/* int8 element scales: Q3.4 (value = q / 16) unless the op says otherwise. */
static double load_el(int dtype, const uint8_t *p, double int8_scale) {
    if (dtype == NPK_REF_INT8) return (double)(int8_t)p[0] * int8_scale;
    return (double)npk_ref_load_float(dtype, p);
}

static void store_el(int dtype, uint8_t *p, double v) {
    switch (dtype) {
    case NPK_REF_INT8: {
        if (isnan(v)) {
            p[0] = 0;
            return;
        }
        double q = rint(v * 16.0);
        if (q > 127) q = 127;
        if (q < -128) q = -128;
        p[0] = (uint8_t)(int8_t)q;
        return;
    }
    case NPK_REF_FP16: {
        uint16_t h = npk_fp16_from_f64(v);
        p[0] = (uint8_t)h;
        p[1] = (uint8_t)(h >> 8);
        return;
    }
    case NPK_REF_BF16: {
        uint16_t h = npk_bf16_from_f64(v);
        p[0] = (uint8_t)h;
        p[1] = (uint8_t)(h >> 8);
        return;
    }
    default: p[0] = npk_fp8_from_f64(v); return;
    }
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

static double unary(int op, double x) {
    switch (op) {
    case 0: return x < 0 ? 0.0 : x;
    case 3: return npk_ref_gelu(x);
    case 0xA: return 1.0 / (1.0 + exp(-x));
    case 0xB: return tanh(x);
    case 0xC: return clampd(x / 6.0 + 0.5, 0.0, 1.0);
    case 0xD: return clampd(x, -1.0, 1.0);
    case 0xE: return clampd(x, 0.0, 6.0);
    case 0xF: return x < 0 ? 0.01 * x : x;
    default: return NAN;
    }
}

/* Softmax probabilities of one row of doubles (docs/shell.md non-finite rules). */
static void softmax_row(const double *x, double *p, size_t n) {
    int has_nan = 0;
    double mx = -INFINITY;
    size_t ninf = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i])) has_nan = 1;
        else if (x[i] > mx) mx = x[i];
        if (x[i] == INFINITY) ninf++;
    }
    if (has_nan || mx == -INFINITY) {
        for (size_t i = 0; i < n; i++) p[i] = NAN;
        return;
    }
    if (ninf) {
        for (size_t i = 0; i < n; i++) p[i] = x[i] == INFINITY ? 1.0 / (double)ninf : 0.0;
        return;
    }
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        p[i] = exp(x[i] - mx);
        sum += p[i];
    }
    for (size_t i = 0; i < n; i++) p[i] = p[i] / sum;
}

static uint8_t q07(double p) {
    if (isnan(p)) return 0;
    double q = floor(p * 127.0 + 0.5);
    if (q < 0) q = 0;
    if (q > 127) q = 127;
    return (uint8_t)q;
}

void npk_ref_vec(int op, int dtype, const uint8_t *xs, const uint8_t *ys, uint8_t *out, size_t count, size_t row) {
    size_t es = npk_ref_dtype_size(dtype);
    const double eps = 1e-5;
    int rowwise = op == 4 || op == 5 || op == 8 || op == 9 || op == NPK_REF_VEC_RMSNORM;
    if (!rowwise) {
        for (size_t i = 0; i < count; i++) {
            double x = load_el(dtype, xs + i * es, 1.0 / 16);
            double r;
            if (op == 1 || op == 2 || op == 6 || op == 7) {
                double y = load_el(dtype, ys + i * es, 1.0 / 16);
                if (op == 1) r = x + y;
                else if (op == 2) r = x * y;
                else if (op == 6) r = y * (x > 0 ? 1.0 : 0.0);
                else r = y * npk_ref_dgelu(x);
            } else {
                r = unary(op, x);
            }
            store_el(dtype, out + i * es, r);
        }
        return;
    }
    if (!row) row = count;
    double *x = malloc(row * sizeof *x), *y = malloc(row * sizeof *y), *p = malloc(row * sizeof *p);
    if (!x || !y || !p) abort(); /* reference code: tests only */
    for (size_t base = 0; base < count; base += row) {
        double xscale = op == 4 ? 1.0 : (op == 8 ? 1.0 / 127 : 1.0 / 16);
        for (size_t i = 0; i < row; i++) {
            x[i] = load_el(dtype, xs + (base + i) * es, xscale);
            if (op == 8 || op == 9) y[i] = load_el(dtype, ys + (base + i) * es, 1.0 / 16);
        }
        if (op == 4) {
            softmax_row(x, p, row);
            for (size_t i = 0; i < row; i++) {
                if (dtype == NPK_REF_INT8) out[base + i] = q07(p[i]);
                else store_el(dtype, out + (base + i) * es, p[i]);
            }
            continue;
        }
        if (op == 8) {
            double s = 0;
            for (size_t i = 0; i < row; i++) s += y[i] * x[i];
            for (size_t i = 0; i < row; i++) store_el(dtype, out + (base + i) * es, x[i] * (y[i] - s));
            continue;
        }
        double mean = 0, var = 0;
        if (op != NPK_REF_VEC_RMSNORM) {
            for (size_t i = 0; i < row; i++) mean += x[i];
            mean /= (double)row;
        }
        for (size_t i = 0; i < row; i++) var += (x[i] - mean) * (x[i] - mean);
        var /= (double)row;
        double sd = sqrt(var + eps);
        if (op == 5 || op == NPK_REF_VEC_RMSNORM) {
            for (size_t i = 0; i < row; i++) store_el(dtype, out + (base + i) * es, (x[i] - mean) / sd);
            continue;
        }
        /* op 9: dlayernorm */
        double mg = 0, mgx = 0;
        for (size_t i = 0; i < row; i++) {
            double xh = (x[i] - mean) / sd;
            mg += y[i];
            mgx += y[i] * xh;
        }
        mg /= (double)row;
        mgx /= (double)row;
        for (size_t i = 0; i < row; i++) {
            double xh = (x[i] - mean) / sd;
            store_el(dtype, out + (base + i) * es, (y[i] - mg - xh * mgx) / sd);
        }
    }
    free(x);
    free(y);
    free(p);
}

void npk_ref_softmax(int dtype, const uint8_t *src, uint8_t *dst, size_t rows, size_t row_elems) {
    npk_ref_vec(4, dtype, src, NULL, dst, rows * row_elems, row_elems);
}
