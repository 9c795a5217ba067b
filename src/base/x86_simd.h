// SPDX-License-Identifier: MIT
/*
 * The x86 intrinsics of the kernel files that have AVX-512 variants (gemm.c,
 * q4_gemv.c, gemm_f32_reassoc.c): <immintrin.h>, or, in a build configured
 * with -DNPUKIT_EMULATE_AVX512=ON (a test build for AVX2-only hosts, see
 * docs/performance.md "AVX-512 on an AVX2 host"), SIMDe's portable AVX-512
 * F/BW/DQ/VL/VNNI under the Intel names. That build compiles everything with
 * -mavx2 -mfma, so SIMDe keeps the AVX2/FMA intrinsics native (the AVX2
 * kernels stay real) and only the AVX-512 ones are emulated.
 */
#ifndef NPUKIT_BASE_X86_SIMD_H
#define NPUKIT_BASE_X86_SIMD_H

#ifdef NPUKIT_EMULATE_AVX512
#include <immintrin.h>
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#include <stdint.h>
#include <string.h>

/* The AVX-512 intrinsics the kernels use that SIMDe 0.7.4 (Debian 12's
 * libsimde-dev) lacks (#undef: clang's headers define some as macros), lane by lane from Intel's definitions (masked-off lanes
 * of the masked loads and stores are not touched, as on the hardware). */
#define NPK_EMU_LANES_(T, n, name, v) \
    T name[n];                        \
    memcpy(name, &(v), sizeof name)
#define NPK_EMU_CMP64_(NAME, T, OP)                                                                    \
    static inline simde__mmask8 NAME(simde__m512i a, simde__m512i b) {                                 \
        NPK_EMU_LANES_(T, 8, x, a);                                                                    \
        NPK_EMU_LANES_(T, 8, y, b);                                                                    \
        unsigned m = 0;                                                                                \
        for (int i = 0; i < 8; i++) m |= (unsigned)(x[i] OP y[i]) << i;                                \
        return (simde__mmask8)m;                                                                       \
    }
NPK_EMU_CMP64_(npk_emu_cmpgt_epu64_mask, uint64_t, >)
NPK_EMU_CMP64_(npk_emu_cmplt_epu64_mask, uint64_t, <)
NPK_EMU_CMP64_(npk_emu_cmplt_epi64_mask, int64_t, <)
NPK_EMU_CMP64_(npk_emu_cmpneq_epi64_mask, int64_t, !=)
#undef _mm512_cmpgt_epu64_mask
#define _mm512_cmpgt_epu64_mask npk_emu_cmpgt_epu64_mask
#undef _mm512_cmplt_epu64_mask
#define _mm512_cmplt_epu64_mask npk_emu_cmplt_epu64_mask
#undef _mm512_cmplt_epi64_mask
#define _mm512_cmplt_epi64_mask npk_emu_cmplt_epi64_mask
#undef _mm512_cmpneq_epi64_mask
#define _mm512_cmpneq_epi64_mask npk_emu_cmpneq_epi64_mask
#undef _mm512_mask_cmpneq_epi64_mask
#define _mm512_mask_cmpneq_epi64_mask(k, a, b) ((simde__mmask8)((k) & npk_emu_cmpneq_epi64_mask((a), (b))))

#define NPK_EMU_WIDEN64_(NAME, T, VT)                 \
    static inline simde__m512i NAME(VT a) {           \
        NPK_EMU_LANES_(T, 8, x, a);                   \
        int64_t r[8];                                 \
        for (int i = 0; i < 8; i++) r[i] = x[i];      \
        simde__m512i v;                               \
        memcpy(&v, r, sizeof v);                      \
        return v;                                     \
    }
NPK_EMU_WIDEN64_(npk_emu_cvtepi16_epi64, int16_t, simde__m128i)
NPK_EMU_WIDEN64_(npk_emu_cvtepi32_epi64, int32_t, simde__m256i)
NPK_EMU_WIDEN64_(npk_emu_cvtepu32_epi64, uint32_t, simde__m256i)
#undef _mm512_cvtepu32_epi64
#define _mm512_cvtepu32_epi64 npk_emu_cvtepu32_epi64
#undef _mm512_cvtepi16_epi64
#define _mm512_cvtepi16_epi64 npk_emu_cvtepi16_epi64
#undef _mm512_cvtepi32_epi64
#define _mm512_cvtepi32_epi64 npk_emu_cvtepi32_epi64

static inline simde__m512i npk_emu_cvtepi16_epi32(simde__m256i a) {
    NPK_EMU_LANES_(int16_t, 16, x, a);
    int32_t r[16];
    for (int i = 0; i < 16; i++) r[i] = x[i];
    simde__m512i v;
    memcpy(&v, r, sizeof v);
    return v;
}
#undef _mm512_cvtepi16_epi32
#define _mm512_cvtepi16_epi32 npk_emu_cvtepi16_epi32

static inline simde__m512i npk_emu_lzcnt_epi64(simde__m512i a) {
    NPK_EMU_LANES_(uint64_t, 8, x, a);
    for (int i = 0; i < 8; i++) x[i] = x[i] ? (uint64_t)__builtin_clzll(x[i]) : 64;
    memcpy(&a, x, sizeof a);
    return a;
}
#undef _mm512_lzcnt_epi64
#define _mm512_lzcnt_epi64 npk_emu_lzcnt_epi64

static inline simde__m512i npk_emu_mask_srli_epi64(simde__m512i src, simde__mmask8 k, simde__m512i a, unsigned imm) {
    NPK_EMU_LANES_(uint64_t, 8, s, src);
    NPK_EMU_LANES_(uint64_t, 8, x, a);
    for (int i = 0; i < 8; i++)
        if (k >> i & 1) s[i] = imm > 63 ? 0 : x[i] >> imm;
    memcpy(&src, s, sizeof src);
    return src;
}
static inline simde__m512i npk_emu_srai_epi32(simde__m512i a, unsigned imm) {
    NPK_EMU_LANES_(int32_t, 16, x, a);
    for (int i = 0; i < 16; i++) x[i] = x[i] >> (imm > 31 ? 31 : imm);
    memcpy(&a, x, sizeof a);
    return a;
}
static inline simde__m512i npk_emu_srav_epi64(simde__m512i a, simde__m512i count) {
    NPK_EMU_LANES_(int64_t, 8, x, a);
    NPK_EMU_LANES_(uint64_t, 8, c, count);
    for (int i = 0; i < 8; i++) x[i] = x[i] >> (c[i] > 63 ? 63 : c[i]);
    memcpy(&a, x, sizeof a);
    return a;
}
#undef _mm512_mask_srli_epi64
#define _mm512_mask_srli_epi64 npk_emu_mask_srli_epi64
#undef _mm512_srai_epi32
#define _mm512_srai_epi32 npk_emu_srai_epi32
#undef _mm512_srav_epi64
#define _mm512_srav_epi64 npk_emu_srav_epi64

static inline void npk_emu_mask_cvtepi64_storeu_epi16(void *p, simde__mmask8 k, simde__m512i a) {
    NPK_EMU_LANES_(int64_t, 8, x, a);
    for (int i = 0; i < 8; i++)
        if (k >> i & 1) {
            int16_t t = (int16_t)x[i];
            memcpy((char *)p + 2 * i, &t, 2);
        }
}
static inline void npk_emu_mask_storeu_32(void *p, simde__mmask16 k, const void *v) {
    for (int i = 0; i < 16; i++)
        if (k >> i & 1) memcpy((char *)p + 4 * i, (const char *)v + 4 * i, 4);
}
static inline void npk_emu_mask_storeu_epi32(void *p, simde__mmask16 k, simde__m512i a) { npk_emu_mask_storeu_32(p, k, &a); }
static inline void npk_emu_mask_storeu_ps(void *p, simde__mmask16 k, simde__m512 a) { npk_emu_mask_storeu_32(p, k, &a); }
static inline void npk_emu_maskz_loadu_32(void *v, simde__mmask16 k, const void *p) {
    memset(v, 0, 64);
    for (int i = 0; i < 16; i++)
        if (k >> i & 1) memcpy((char *)v + 4 * i, (const char *)p + 4 * i, 4);
}
static inline simde__m512i npk_emu_maskz_loadu_epi32(simde__mmask16 k, const void *p) {
    simde__m512i v;
    npk_emu_maskz_loadu_32(&v, k, p);
    return v;
}
static inline simde__m512 npk_emu_maskz_loadu_ps(simde__mmask16 k, const void *p) {
    simde__m512 v;
    npk_emu_maskz_loadu_32(&v, k, p);
    return v;
}
#undef _mm512_mask_cvtepi64_storeu_epi16
#define _mm512_mask_cvtepi64_storeu_epi16 npk_emu_mask_cvtepi64_storeu_epi16
#undef _mm512_mask_storeu_epi32
#define _mm512_mask_storeu_epi32 npk_emu_mask_storeu_epi32
#undef _mm512_mask_storeu_ps
#define _mm512_mask_storeu_ps npk_emu_mask_storeu_ps
#undef _mm512_maskz_loadu_epi32
#define _mm512_maskz_loadu_epi32 npk_emu_maskz_loadu_epi32
#undef _mm512_maskz_loadu_ps
#define _mm512_maskz_loadu_ps npk_emu_maskz_loadu_ps
/* SIMDe 0.7.4's alias of _mm512_madd_epi16 takes 4 arguments (its function, 2) */
#undef _mm512_madd_epi16
#define _mm512_madd_epi16(a, b) simde_mm512_madd_epi16((a), (b))
#else
#include <immintrin.h>
#endif

#endif
