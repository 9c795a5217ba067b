// SPDX-License-Identifier: MIT
/* Random operators (issue 14): the generator and the kernels of RandomUniform(Like),
 * RandomNormal(Like), Bernoulli and Multinomial. The generator is xoshiro256**
 * (Blackman and Vigna), its state filled from a 64-bit seed by splitmix64;
 * docs/onnx.md "Random operators" states the seeding the graph handlers use. */
#include <math.h>

#include "ops/ref_onnx.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void npk_rng_seed(npk_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t npk_rng_next(npk_rng *r) {
    uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

/* [0, 1) with 53 random bits */
double npk_rng_uniform(npk_rng *r) { return (double)(npk_rng_next(r) >> 11) * 0x1p-53; }

/* standard normal: Box-Muller, one value per pair of uniforms (no cached second value,
 * so a draw's result depends only on the state before it) */
double npk_rng_normal(npk_rng *r) {
    double u1 = 1.0 - npk_rng_uniform(r), u2 = npk_rng_uniform(r); /* u1 in (0, 1] */
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

void npk_ref_onnx_random_uniform(npk_rng *r, double low, double high, npk_tensor *y) {
    int64_t n = npk_tensor_numel(y);
    for (int64_t i = 0; i < n; i++) {
        /* rounding to the output type may reach high: draw again (a few times at most
         * in practice), and fall back to low, which the interval always holds */
        int tries = 0;
        double v;
        do {
            v = low + (high - low) * npk_rng_uniform(r);
            npk_ref_onnx_set_f(y->data, y->dtype, i, v);
            v = npk_ref_onnx_get_f(y->data, y->dtype, i);
        } while ((v >= high || v < low) && ++tries < 64);
        if (v >= high || v < low) npk_ref_onnx_set_f(y->data, y->dtype, i, low);
    }
}

void npk_ref_onnx_random_normal(npk_rng *r, double mean, double scale, npk_tensor *y) {
    int64_t n = npk_tensor_numel(y);
    for (int64_t i = 0; i < n; i++) npk_ref_onnx_set_f(y->data, y->dtype, i, mean + scale * npk_rng_normal(r));
}

int npk_ref_onnx_bernoulli(npk_rng *r, const npk_tensor *p, npk_tensor *y) {
    int64_t n = npk_tensor_numel(p);
    for (int64_t i = 0; i < n; i++) {
        double pi = npk_ref_onnx_get_f(p->data, p->dtype, i);
        if (!(pi >= 0.0 && pi <= 1.0)) return npk_err(NPK_EINVAL, "Bernoulli: probability %g at element %lld is outside [0, 1]", pi, (long long)i);
        npk_ref_onnx_set_f(y->data, y->dtype, i, npk_rng_uniform(r) < pi ? 1.0 : 0.0);
    }
    return 0;
}

int npk_ref_onnx_multinomial(npk_rng *r, const npk_tensor *x, int64_t samples, npk_tensor *y) {
    int64_t batch = x->dims[0], k = x->dims[1];
    for (int64_t b = 0; b < batch; b++) {
        /* x holds unnormalized log-probabilities: p_j = exp(x_j - max) / sum */
        double mx = -INFINITY, sum = 0.0;
        for (int64_t j = 0; j < k; j++) {
            double v = npk_ref_onnx_get_f(x->data, x->dtype, b * k + j);
            if (v != v) return npk_err(NPK_EINVAL, "Multinomial: NaN log-probability at [%lld, %lld]", (long long)b, (long long)j);
            if (v > mx) mx = v;
        }
        if (mx == -INFINITY) return npk_err(NPK_EINVAL, "Multinomial: batch %lld has no class with a non-zero probability", (long long)b);
        for (int64_t j = 0; j < k; j++) sum += exp(npk_ref_onnx_get_f(x->data, x->dtype, b * k + j) - mx);
        for (int64_t s = 0; s < samples; s++) {
            double u = npk_rng_uniform(r) * sum, acc = 0.0;
            int64_t pick = -1, last = 0;
            for (int64_t j = 0; j < k; j++) {
                double w = exp(npk_ref_onnx_get_f(x->data, x->dtype, b * k + j) - mx);
                if (w > 0) last = j;
                acc += w;
                if (u < acc && w > 0) {
                    pick = j;
                    break;
                }
            }
            if (pick < 0) pick = last; /* u within rounding of sum: the last class with weight */
            npk_ref_onnx_set_f(y->data, y->dtype, b * samples + s, (double)pick);
        }
    }
    return 0;
}
