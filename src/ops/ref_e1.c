// SPDX-License-Identifier: MIT
/* CPU reference of the e1 datapath's arithmetic. */
#include "ref_e1.h"

static int32_t s4(uint32_t v) { return (int32_t)((v & 0xf) ^ 0x8) - 8; }
static int32_t s8(uint32_t v) { return (int32_t)((v & 0xff) ^ 0x80) - 128; }
static int32_t s2(uint32_t v) { return (int32_t)((v & 3) ^ 2) - 2; }

int32_t npk_ref_e1_fp8_q88(uint8_t x) {
    uint32_t e = (x >> 3) & 0xf, m = x & 7;
    int32_t mag;
    if (e == 0) mag = (int32_t)(m >> 1);
    else if (e == 1) mag = (int32_t)((8 + m) >> 1);
    else mag = (int32_t)((8 + m) << (e - 2));
    return (x & 0x80) ? -mag : mag;
}

/* Sign-extend the 32-bit result into RESULT_HI. */
static void signed_result(uint32_t v, uint32_t *lo, uint32_t *hi) {
    *lo = v;
    *hi = (v & 0x80000000u) ? 0xffffffffu : 0;
}

int npk_ref_e1_scalar(unsigned opcode, uint32_t a, uint32_t b, uint32_t acc, int ternary, uint32_t *lo,
                      uint32_t *hi) {
    uint32_t sum;
    switch (opcode) {
    case 0: *lo = a + b; *hi = 0; return 0;
    case 1: *lo = a - b; *hi = 0; return 0;
    case 2: {
        uint64_t p = (uint64_t)a * b;
        *lo = (uint32_t)p;
        *hi = (uint32_t)(p >> 32);
        return 0;
    }
    case 3: {
        int32_t x = (int16_t)(a & 0xffff), y = (int16_t)(b & 0xffff);
        signed_result((uint32_t)(x * y) + acc, lo, hi);
        return 0;
    }
    case 4:
        sum = acc;
        for (int i = 0; i < 4; i++) sum += (uint32_t)(s8(a >> (8 * i)) * s8(b >> (8 * i)));
        signed_result(sum, lo, hi);
        return 0;
    case 5: *lo = a > b ? a : b; *hi = 0; return 0;
    case 6: *lo = a < b ? a : b; *hi = 0; return 0;
    case 7:
        sum = acc;
        for (int i = 0; i < 8; i++) sum += (uint32_t)(s4(a >> (4 * i)) * s4(b >> (4 * i)));
        signed_result(sum, lo, hi);
        return 0;
    case 10: {
        uint32_t r = 0;
        for (int i = 0; i < 4; i++) {
            uint32_t byte = (a >> (8 * i)) & 0xff;
            if (!(byte & 0x80)) r |= byte << (8 * i);
        }
        *lo = r;
        *hi = 0;
        return 0;
    }
    case 12:
        /* lane i of A (i = 0..3) times B lane (i/2)*4 + pos_i; ACC only selects. */
        sum = 0;
        for (int i = 0; i < 4; i++) {
            uint32_t pos = (acc >> (2 * i)) & 3;
            sum += (uint32_t)(s4(a >> (4 * i)) * s4(b >> (4 * ((i / 2) * 4 + pos))));
        }
        signed_result(sum, lo, hi);
        return 0;
    case 13:
        sum = acc;
        for (int i = 0; i < 16; i++) {
            uint32_t la = (a >> (2 * i)) & 3, lb = (b >> (2 * i)) & 3;
            int32_t x, y;
            if (ternary) {
                if (la == 3 || lb == 3) return -1;
                x = la == 1 ? 1 : la == 2 ? -1 : 0;
                y = lb == 1 ? 1 : lb == 2 ? -1 : 0;
            } else {
                x = s2(la);
                y = s2(lb);
            }
            sum += (uint32_t)(x * y);
        }
        signed_result(sum, lo, hi);
        return 0;
    case 14:
        sum = acc;
        for (int i = 0; i < 4; i++) {
            /* product computed in 32 bits (wraps), then arithmetic >> 8 */
            uint32_t p = (uint32_t)npk_ref_e1_fp8_q88((uint8_t)(a >> (8 * i))) *
                         (uint32_t)npk_ref_e1_fp8_q88((uint8_t)(b >> (8 * i)));
            int32_t sp = (int32_t)p;
            sum += (uint32_t)(sp < 0 ? ~(~sp >> 8) : sp >> 8);
        }
        signed_result(sum, lo, hi);
        return 0;
    case 15: {
        int32_t d = s8(a);
        int32_t sh = d >= 0 ? 0 : -d;
        if (sh > 8) sh = 8;
        *lo = 256u >> sh;
        *hi = 0;
        return 0;
    }
    default: return -2;
    }
}

void npk_ref_e1_matmul(const int8_t *A, const int8_t *B, int32_t *C, unsigned m, unsigned n, unsigned k) {
    for (unsigned i = 0; i < m; i++)
        for (unsigned j = 0; j < n; j++) {
            uint32_t s = 0;
            for (unsigned l = 0; l < k; l++) s += (uint32_t)((int32_t)A[i * k + l] * B[l * n + j]);
            C[i * n + j] = (int32_t)s;
        }
}
