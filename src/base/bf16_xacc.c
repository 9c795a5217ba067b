// SPDX-License-Identifier: MIT
/* The exact (Kulisch-style) BF16 accumulator of the pccx GEMV/GEMM datapath
 * (include/npukit/numfmt.h). */
#include "npukit/numfmt.h"

#include <string.h>

#define XACC_BIAS 282 /* bit 0 of the accumulator is 2^-282 = 2^-133 * 2^-149 */

/* Encode sign * n * 2^qe (n < 512, qe >= -133) as BF16, n already rounded. */
static uint16_t encode(unsigned sign, uint64_t n, int qe) {
    uint16_t s = sign ? 0x8000u : 0;
    if (!n) return s;
    while (n >= 256) { /* only an exact carry out of rounding */
        n >>= 1;
        qe++;
    }
    while (n < 128 && qe > -133) { /* normalise (not reached for rounded input) */
        n <<= 1;
        qe--;
    }
    if (n < 128) return (uint16_t)(s | n); /* subnormal: qe == -133 */
    int biased = qe + 7 + 127;
    if (biased >= 255) return (uint16_t)(s | 0x7f80u);
    return (uint16_t)(s | (unsigned)biased << 7 | (n & 0x7fu));
}

/* ---- exact accumulator ------------------------------------------------------ */

void npk_bf16_xacc_clear(npk_bf16_xacc *a) { memset(a, 0, sizeof *a); }

static void normalise(npk_bf16_xacc *a) {
    for (int i = 0; i < NPK_BF16_XACC_DIGITS - 1; i++) {
        int64_t low = (int64_t)((uint64_t)a->d[i] & 0xffffffffu);
        int64_t carry = (a->d[i] - low) / 4294967296LL;
        a->d[i] = low;
        a->d[i + 1] += carry;
    }
    a->adds = 0;
}

/* += (neg ? -1 : 1) * mag * 2^(p - XACC_BIAS), mag < 2^64, p >= 0. Each digit
 * receives less than 2^33 per call, so 2^28 calls between normalisations stay
 * below 2^61. */
static void add_mag(npk_bf16_xacc *a, int neg, uint64_t mag, int p) {
    if (!mag) return;
    if (a->adds >= (1u << 28)) normalise(a);
    a->adds++;
    int idx = p / 32, sh = p % 32;
    uint64_t lo = (mag & 0xffffffffu) << sh; /* < 2^63 */
    uint64_t hi = (mag >> 32) << sh;         /* < 2^36 */
    int64_t c0 = (int64_t)(lo & 0xffffffffu);
    int64_t c1 = (int64_t)((lo >> 32) + (hi & 0xffffffffu));
    int64_t c2 = (int64_t)(hi >> 32);
    if (neg) {
        c0 = -c0;
        c1 = -c1;
        c2 = -c2;
    }
    a->d[idx] += c0;
    a->d[idx + 1] += c1;
    a->d[idx + 2] += c2;
}

/* BF16 -> (integer significand, exponent of its unit); class: 0 finite, 1 inf, 2 nan. */
static int bf16_split(uint16_t x, unsigned *sign, uint64_t *m, int *e) {
    *sign = x >> 15;
    unsigned ex = (x >> 7) & 0xffu, fr = x & 0x7fu;
    if (ex == 0xff) return fr ? 2 : 1;
    if (ex == 0) {
        *m = fr;
        *e = -133;
    } else {
        *m = 0x80u | fr;
        *e = (int)ex - 127 - 7;
    }
    return 0;
}

static int f32_split(float s, unsigned *sign, uint64_t *m, int *e) {
    uint32_t u;
    memcpy(&u, &s, sizeof u);
    *sign = u >> 31;
    unsigned ex = (u >> 23) & 0xffu;
    uint32_t fr = u & 0x7fffffu;
    if (ex == 0xff) return fr ? 2 : 1;
    if (ex == 0) {
        *m = fr;
        *e = -149;
    } else {
        *m = 0x800000u | fr;
        *e = (int)ex - 127 - 23;
    }
    return 0;
}

static void add_inf(npk_bf16_xacc *a, unsigned neg) {
    if (neg) a->ninf = 1;
    else a->pinf = 1;
}

static void add_bf16(npk_bf16_xacc *a, uint16_t x, unsigned flip) {
    unsigned sign;
    uint64_t m = 0;
    int e = 0;
    int cls = bf16_split(x, &sign, &m, &e);
    sign ^= flip;
    if (cls == 2) a->nan = 1;
    else if (cls == 1) add_inf(a, sign);
    else add_mag(a, (int)sign, m, e + XACC_BIAS);
}

void npk_bf16_xacc_add(npk_bf16_xacc *a, uint16_t x) { add_bf16(a, x, 0); }
void npk_bf16_xacc_sub(npk_bf16_xacc *a, uint16_t x) { add_bf16(a, x, 1); }

void npk_bf16_xacc_add_prod(npk_bf16_xacc *a, float s, int w, uint16_t x) {
    unsigned sx, ss;
    uint64_t mx = 0, ms = 0;
    int ex = 0, es = 0;
    int cx = bf16_split(x, &sx, &mx, &ex);
    int cs = f32_split(s, &ss, &ms, &es);
    if (cx == 2 || cs == 2) {
        a->nan = 1;
        return;
    }
    unsigned sign = sx ^ ss ^ (w < 0);
    uint64_t mw = (uint64_t)(w < 0 ? -w : w);
    if (cx == 1 || cs == 1) { /* an infinity times w times the other */
        int zero = !mw || (cx == 0 && !mx) || (cs == 0 && !ms);
        if (zero) a->nan = 1;
        else add_inf(a, sign);
        return;
    }
    add_mag(a, (int)sign, mw * mx * ms, ex + es + 2 * XACC_BIAS - XACC_BIAS);
}

void npk_bf16_xacc_add_scaled(npk_bf16_xacc *a, float s, int64_t S, int e) {
    unsigned ss;
    uint64_t ms = 0;
    int es = 0;
    int cs = f32_split(s, &ss, &ms, &es);
    if (cs == 2) {
        a->nan = 1;
        return;
    }
    if (!S) return; /* s * 0 * 2^e with a finite or infinite s: the caller's 0 * inf is its own */
    unsigned sign = ss ^ (S < 0);
    uint64_t mag = S < 0 ? (uint64_t)0 - (uint64_t)S : (uint64_t)S;
    if (cs == 1) {
        add_inf(a, sign);
        return;
    }
    int p = e + es + XACC_BIAS;
    add_mag(a, (int)sign, ms * (mag & 0xffffffffu), p);      /* < 2^56 */
    add_mag(a, (int)sign, ms * (mag >> 32), p + 32);          /* < 2^56 */
}

uint16_t npk_bf16_xacc_round(npk_bf16_xacc *a) {
    if (a->nan || (a->pinf && a->ninf)) return NPK_BF16_QNAN;
    if (a->pinf) return NPK_BF16_PINF;
    if (a->ninf) return NPK_BF16_NINF;
    npk_bf16_xacc t = *a;
    normalise(&t);
    unsigned sign = 0;
    if (t.d[NPK_BF16_XACC_DIGITS - 1] < 0) {
        sign = 1;
        for (int i = 0; i < NPK_BF16_XACC_DIGITS; i++) t.d[i] = -t.d[i];
        normalise(&t);
    }
    /* t.d[] are now 32-bit non-negative digits. Find the leading bit. */
    int top = -1;
    for (int i = NPK_BF16_XACC_DIGITS - 1; i >= 0; i--) {
        if (t.d[i]) {
            int b = 31;
            while (!((uint64_t)t.d[i] >> b & 1)) b--;
            top = i * 32 + b;
            break;
        }
    }
    if (top < 0) return 0;
    int E = top - XACC_BIAS; /* value in [2^E, 2^(E+1)) */
    if (E > 127) return sign ? NPK_BF16_NINF : NPK_BF16_PINF;
    int qe = E - 7;
    if (qe < -133) qe = -133;
    int qb = qe + XACC_BIAS; /* bit index of the kept LSB (>= 149) */
#define BIT(i) ((uint64_t)t.d[(i) / 32] >> ((i) % 32) & 1u)
    uint64_t n = 0;
    for (int i = top; i >= qb; i--) n = n << 1 | BIT(i);
    unsigned guard = (unsigned)BIT(qb - 1);
    unsigned sticky = 0; /* any bit of [0, qb - 2] set: its partial digit, then whole digits */
    if (qb >= 2) {
        int di = (qb - 2) / 32, bi = (qb - 2) % 32;
        sticky = ((uint64_t)t.d[di] & ((2ull << bi) - 1)) != 0;
        for (int i = 0; i < di && !sticky; i++) sticky = t.d[i] != 0;
    }
#undef BIT
    if (guard && (sticky || (n & 1))) n++;
    return encode(sign, n, qe);
}
