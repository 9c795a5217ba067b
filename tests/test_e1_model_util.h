// SPDX-License-Identifier: MIT
/* Shared helpers of the e1 model tests (tests/test_e1_model*.c): drive the
 * model through the machine (npk_sim_new("e1") + npk_sim_read/write/step),
 * and independent C reference functions of every opcode written from
 * e1-npu.md / e1-rtl-notes.md (not from the model). */
#ifndef TEST_E1_MODEL_UTIL_H
#define TEST_E1_MODEL_UTIL_H

#include "check.h"
#include "npukit/e1.h"
#include "npukit/npu.h"
#include "npukit/sim.h"

#include <stdint.h>
#include <stdlib.h>

static npk_sim *S;

static inline void sim_open(void) {
    if (S) npk_sim_free(S);
    S = npk_sim_new("e1", NULL);
    if (!S) {
        fprintf(stderr, "npk_sim_new(e1): %s\n", npk_errmsg());
        exit(1);
    }
}

static inline uint32_t rd(uint32_t off) {
    uint64_t v = 0xdeadbeefdeadbeefull;
    int rc = npk_sim_read(S, E1_MMIO_BASE + off, 4, &v);
    if (rc) {
        fprintf(stderr, "read 0x%x failed: %s\n", off, npk_errmsg());
        exit(1);
    }
    return (uint32_t)v;
}

static inline void wr(uint32_t off, uint32_t v) {
    int rc = npk_sim_write(S, E1_MMIO_BASE + off, 4, v);
    if (rc) {
        fprintf(stderr, "write 0x%x failed: %s\n", off, npk_errmsg());
        exit(1);
    }
}

static inline void step(uint64_t n) { npk_sim_step(S, n); }

static inline void poke32(uint64_t addr, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    npk_mem_poke(npk_sim_mem(S), addr, b, 4);
}

static inline uint32_t peek32(uint64_t addr) {
    uint8_t b[4] = {0, 0, 0, 0};
    npk_mem_peek(npk_sim_mem(S), addr, b, 4);
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* Scratchpad bytes through SCRATCH[] (little-endian words). */
static inline void scratch_load(const uint8_t bytes[64]) {
    for (int i = 0; i < 16; i++)
        wr(E1_REG_SCRATCH0 + 4 * i, (uint32_t)bytes[4 * i] | (uint32_t)bytes[4 * i + 1] << 8 |
                                        (uint32_t)bytes[4 * i + 2] << 16 | (uint32_t)bytes[4 * i + 3] << 24);
}

static inline void scratch_dump(uint8_t bytes[64]) {
    for (int i = 0; i < 16; i++) {
        uint32_t w = rd(E1_REG_SCRATCH0 + 4 * i);
        for (int b = 0; b < 4; b++) bytes[4 * i + b] = (uint8_t)(w >> (8 * b));
    }
}

/* Run until CTRL_STATUS leaves busy (bounded); returns cycles stepped. */
static inline int run_done(int max) {
    int n = 0;
    while ((rd(E1_REG_CTRL_STATUS) & E1_ST_BUSY) && n < max) {
        step(1);
        n++;
    }
    return n;
}

static uint32_t rng_state = 0x12345678u;
static inline uint32_t rnd(void) {
    /* xorshift32 */
    uint32_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return rng_state = x;
}

/* ---- independent reference of the scalar opcodes ------------------------------
 * Written from the notes with 64-bit arithmetic and explicit truncation. */
static inline int64_t sext(uint64_t v, int bits) {
    uint64_t m = 1ull << (bits - 1);
    v &= (m << 1) - 1;
    return (int64_t)(v ^ m) - (int64_t)m;
}

static inline uint32_t wrap32(int64_t v) { return (uint32_t)((uint64_t)v & 0xffffffffull); }

static inline int64_t ref_fp8(uint32_t x) {
    int e = (int)((x >> 3) & 15), m = (int)(x & 7);
    int64_t mag;
    if (e == 0) mag = m / 2;
    else if (e == 1) mag = (8 + m) / 2;
    else mag = (int64_t)(8 + m) * ((int64_t)1 << (e - 2));
    return (x & 0x80) ? -mag : mag;
}

static inline int64_t floor_div256(int64_t v) { return v >= 0 ? v / 256 : -((-v + 255) / 256); }

/* Returns 0 on success with *lo and *hi, -1 when the chip reports the
 * DOT16 ternary fail-closed error. */
static inline int ref_scalar(unsigned op, uint32_t a, uint32_t b, uint32_t acc, int ternary, uint32_t *lo, uint32_t *hi) {
    int64_t s = 0;
    int is_signed = 1;
    uint64_t wide = 0;
    switch (op) {
    case E1_OP_ADD: wide = (uint64_t)a + b; wide &= 0xffffffffull; is_signed = 0; break;
    case E1_OP_SUB: wide = ((uint64_t)a - b) & 0xffffffffull; is_signed = 0; break;
    case E1_OP_MUL_LO: wide = (uint64_t)a * (uint64_t)b; is_signed = 0; break;
    case E1_OP_MAX_U32: wide = a >= b ? a : b; is_signed = 0; break;
    case E1_OP_MIN_U32: wide = a <= b ? a : b; is_signed = 0; break;
    case E1_OP_RELU4_S8:
        for (int i = 0; i < 4; i++) {
            int64_t x = sext(a >> (8 * i), 8);
            wide |= (uint64_t)(x < 0 ? 0 : x) << (8 * i);
        }
        is_signed = 0;
        break;
    case E1_OP_EXP2_NEG_Q0_8: {
        int64_t d = sext(a, 8);
        int64_t sh = d > 0 ? 0 : -d;
        if (sh > 8) sh = 8;
        wide = 256u >> sh;
        is_signed = 0;
        break;
    }
    case E1_OP_MAC_S16: s = sext(a, 16) * sext(b, 16) + sext(acc, 32); break;
    case E1_OP_DOT4_S8:
        s = sext(acc, 32);
        for (int i = 0; i < 4; i++) s += sext(a >> (8 * i), 8) * sext(b >> (8 * i), 8);
        break;
    case E1_OP_DOT8_S4:
        s = sext(acc, 32);
        for (int i = 0; i < 8; i++) s += sext(a >> (4 * i), 4) * sext(b >> (4 * i), 4);
        break;
    case E1_OP_SDOT4_S4_2_4:
        for (int i = 0; i < 4; i++) {
            int pos = (int)((acc >> (2 * i)) & 3);
            int blane = (i / 2) * 4 + pos;
            s += sext(a >> (4 * i), 4) * sext(b >> (4 * blane), 4);
        }
        break;
    case E1_OP_DOT16_S2:
        s = sext(acc, 32);
        for (int i = 0; i < 16; i++) {
            uint32_t x = (a >> (2 * i)) & 3, y = (b >> (2 * i)) & 3;
            if (ternary) {
                if (x == 3 || y == 3) return -1;
                int64_t tx = x == 1 ? 1 : x == 2 ? -1 : 0, ty = y == 1 ? 1 : y == 2 ? -1 : 0;
                s += tx * ty;
            } else {
                s += sext(x, 2) * sext(y, 2);
            }
        }
        break;
    case E1_OP_DOT4_FP8_E4M3:
        s = sext(acc, 32);
        for (int i = 0; i < 4; i++) {
            int64_t p = ref_fp8((a >> (8 * i)) & 0xff) * ref_fp8((b >> (8 * i)) & 0xff);
            int64_t p32 = sext(wrap32(p), 32); /* the chip's product register is 32 bits */
            s += floor_div256(p32);
        }
        break;
    default: return -2;
    }
    if (is_signed) {
        uint32_t r = wrap32(s);
        *lo = r;
        *hi = (r & 0x80000000u) ? 0xffffffffu : 0;
    } else {
        *lo = (uint32_t)wide;
        *hi = (uint32_t)(wide >> 32);
    }
    return 0;
}

static inline unsigned ref_latency(unsigned op) {
    static const unsigned lat[16] = {1, 1, 2, 2, 3, 1, 1, 3, 0, 0, 1, 0, 3, 3, 3, 2};
    return lat[op];
}

/* ---- independent reference of GEMM_S8 / GEMM_S4 / VRELU on a byte image ----- */
static inline int8_t ref_s4_at(const uint8_t *sp, unsigned nib) {
    uint8_t b = sp[nib / 2];
    return (int8_t)sext(nib % 2 ? b >> 4 : b & 15, 4);
}

/* Cell by cell with C writes visible to later cells (aliasing). */
static inline void ref_gemm(uint8_t sp[64], int s4, unsigned m, unsigned n, unsigned k, unsigned ab, unsigned bb,
                     unsigned cb, unsigned as, unsigned bs, unsigned cs) {
    for (unsigned i = 0; i < m; i++)
        for (unsigned j = 0; j < n; j++) {
            int64_t acc = 0;
            for (unsigned l = 0; l < k; l++) {
                unsigned aa = ab + i * as + l, ba = bb + l * bs + j;
                int64_t x = s4 ? ref_s4_at(sp, aa) : (int8_t)sp[aa];
                int64_t y = s4 ? ref_s4_at(sp, ba) : (int8_t)sp[ba];
                acc += x * y;
            }
            uint32_t r = wrap32(acc);
            unsigned ca = cb + i * cs + 4 * j;
            for (int q = 0; q < 4; q++) sp[ca + q] = (uint8_t)(r >> (8 * q));
        }
}

static inline int ref_gemm_valid(int s4, unsigned m, unsigned n, unsigned k, unsigned ab, unsigned bb, unsigned cb,
                          unsigned as, unsigned bs, unsigned cs) {
    if (m == 0 || n == 0 || k == 0) return 0;
    unsigned lim = s4 ? 128 : 64;
    if (ab + (m - 1) * as + (k - 1) >= lim) return 0;
    if (bb + (k - 1) * bs + (n - 1) >= lim) return 0;
    if (cb % 4 || cs % 4) return 0;
    if (cb + (m - 1) * cs + 4 * (n - 1) + 3 >= 64) return 0;
    return 1;
}

static inline void ref_vrelu(uint8_t sp[64], unsigned len, unsigned src, unsigned dst) {
    for (unsigned i = 0; i < len; i++) {
        uint8_t x = sp[src + i];
        sp[dst + i] = (x & 0x80) ? 0 : x;
    }
}

#endif
