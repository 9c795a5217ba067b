// SPDX-License-Identifier: MIT
/*
 * npukit base layer: the one run-time instruction-set choice of every kernel
 * module (issue 15 point 5).
 *
 * The host CPU's features are detected once, as one level of an ordered list;
 * each kernel module (the shared GEMMs of gemm.h, the exact INT4 GEMV of
 * numfmt.h, the fast CPU kernels of src/ops) keeps its own variants and runs
 * the best one at or below the active level:
 *
 *   level        CPU features                       variants that need it
 *   c            any host (or a non-x86 build)       the portable C of every module
 *   avx2         AVX2 + FMA                          gemm avx2, q4 avx2, fast sgemm avx2, clones avx2
 *   avx512       AVX-512 F, BW, DQ, VL, CD           gemm fp32 avx512, q4 avx512, fast sgemm avx512, clones avx512
 *   avx512vnni   the above + AVX512_VNNI             gemm int8 avx512-vnni (vpdpbusd)
 *
 * (AVX2-only helpers without an AVX-512 variant run from level avx2 up:
 * docs/performance.md "Kernel dispatch per host" lists every dispatch point.)
 *
 * One forcing mechanism caps the level for every module at once: the
 * environment variable NPUKIT_ISA=c|avx2|avx512|avx512vnni (read at the first
 * use; "portable" is taken for c), or npk_isa_force (tests force every level
 * the host has and compare each module's variant with its golden).
 */
#ifndef NPUKIT_CPU_H
#define NPUKIT_CPU_H

#include <stdatomic.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum npk_isa {
    NPK_ISA_AUTO = -1,      /* npk_isa_force: back to the host's best (capped by NPUKIT_ISA) */
    NPK_ISA_C = 0,          /* portable C, any host */
    NPK_ISA_AVX2 = 1,       /* x86-64 AVX2 + FMA */
    NPK_ISA_AVX512 = 2,     /* x86-64 AVX-512 F/BW/DQ/VL/CD */
    NPK_ISA_AVX512VNNI = 3, /* the above + AVX512_VNNI */
} npk_isa;
#define NPK_ISA_COUNT 4

/* The best level this host and this build can run (detected once). In the
 * emulated AVX-512 test build (npk_isa_emulated() true) an AVX2 host counts as
 * avx512vnni: the AVX-512 kernels run on SIMDe's portable intrinsics. */
npk_isa npk_isa_host(void);
/* 1 in a build configured with -DNPUKIT_EMULATE_AVX512=ON, else 0. */
int npk_isa_emulated(void);
/* Cap every kernel module at isa from now on (NPK_ISA_AUTO: the host's best, or
 * NPUKIT_ISA's cap). 0, or -NPK_EUNSUPPORTED (message set) when the host or this
 * build cannot run it, -NPK_EINVAL for a value outside the enum. */
int npk_isa_force(npk_isa isa);
/* "c", "avx2", "avx512", "avx512vnni" ("auto" for NPK_ISA_AUTO). */
const char *npk_isa_name(npk_isa isa);
/* The level named name (as npk_isa_name, or "portable" for c): 0, or -NPK_EINVAL. */
int npk_isa_from_name(const char *name, npk_isa *out);

/* The level the kernels use now: min(host, forced or NPUKIT_ISA). Inline and
 * cheap (one relaxed load) so that per-row dispatch costs nothing. */
extern _Atomic int npk_isa_active_level_; /* -1 until the first use */
int npk_isa_init_(void);
static inline npk_isa npk_isa_active(void) {
    int l = atomic_load_explicit(&npk_isa_active_level_, memory_order_relaxed);
    return (npk_isa)(l >= 0 ? l : npk_isa_init_());
}

/* x86-64 SIMD is compiled in with gcc/clang unless NPUKIT_NO_SIMD. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(NPUKIT_NO_SIMD)
#define NPK_ISA_X86 1
/* The target attributes of the levels, for functions compiled for one. */
#define NPK_TARGET_AVX2 __attribute__((target("avx2,fma")))
#ifdef NPUKIT_EMULATE_AVX512
/* The emulated AVX-512 test build (-DNPUKIT_EMULATE_AVX512=ON, src/base/x86_simd.h):
 * the AVX-512 variants are plain functions over SIMDe's intrinsics. */
#define NPK_TARGET_AVX512
#define NPK_TARGET_AVX512VNNI
#else
#define NPK_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512cd")))
#define NPK_TARGET_AVX512VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx512vnni")))
#endif
#endif

/*
 * A plain C loop compiled for the avx512, avx2 and c levels, picked per call
 * from npk_isa_active() (the compiler vectorizes each copy for its level):
 *
 *   NPK_ISA_CLONES_VOID(scale_row, (float *y, const float *x, long n), (y, x, n)) {
 *       for (long i = 0; i < n; i++) y[i] = 2 * x[i];
 *   }
 *
 * defines `static void scale_row(float *y, const float *x, long n)`; the body
 * follows the macro. NPK_ISA_CLONES(RET, ...) is the same for a function
 * returning RET. (Explicit copies rather than target_clones: they build with
 * clang, link from any file, and obey npk_isa_force.)
 */
#ifdef NPK_ISA_X86
#define NPK_ISA_CLONES_(RET, NAME, PARAMS, ARGS, RETURN)                                                          \
    static inline __attribute__((always_inline)) RET NAME##_body PARAMS;                                          \
    NPK_TARGET_AVX512 static RET NAME##_avx512 PARAMS { RETURN NAME##_body ARGS; }                                \
    NPK_TARGET_AVX2 static RET NAME##_avx2 PARAMS { RETURN NAME##_body ARGS; }                                    \
    static RET NAME##_c PARAMS { RETURN NAME##_body ARGS; }                                                       \
    static RET NAME PARAMS {                                                                                      \
        npk_isa l_ = npk_isa_active();                                                                            \
        if (l_ >= NPK_ISA_AVX512) { RETURN NAME##_avx512 ARGS; }                                                  \
        else if (l_ >= NPK_ISA_AVX2) { RETURN NAME##_avx2 ARGS; }                                                 \
        else { RETURN NAME##_c ARGS; }                                                                            \
    }                                                                                                             \
    static inline __attribute__((always_inline)) RET NAME##_body PARAMS
#else
#define NPK_ISA_CLONES_(RET, NAME, PARAMS, ARGS, RETURN) static RET NAME PARAMS
#endif
#define NPK_ISA_CLONES(RET, NAME, PARAMS, ARGS) NPK_ISA_CLONES_(RET, NAME, PARAMS, ARGS, return)
#define NPK_ISA_CLONES_VOID(NAME, PARAMS, ARGS) NPK_ISA_CLONES_(void, NAME, PARAMS, ARGS, )

#ifdef __cplusplus
}
#endif

#endif
