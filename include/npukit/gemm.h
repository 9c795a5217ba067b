// SPDX-License-Identifier: MIT
/*
 * npukit base layer: the shared GEMM kernels (issue 15 point 5).
 *
 * One kernel layer for every device model (v0 MATMUL_S8 and CONV2D_S8, the
 * shell GEMM engine) and the CPU path. Two products with exactly one
 * arithmetic, whatever instruction set runs them, and one float product in
 * the fastest order:
 *
 *  - npk_gemm_s8s32: C[i][j] = sum_k A[i][k] * B[k][j], int8 x int8 summed in
 *    int32 wrapping modulo 2^32 (so the order of the sum does not matter).
 *  - npk_gemm_f32: C[i][j] = (((0 + A[i][0]*B[0][j]) + A[i][1]*B[1][j]) + ...),
 *    one fp32 multiplication and one fp32 addition per step, each rounded to
 *    nearest-even, k = 0 .. K-1 in order (no FMA, no reassociation): the shell
 *    spec's float GEMM (docs/shell.md 12; its bf16/fp16/fp8 products are exact
 *    in fp32, so the multiplication never rounds there). Vectorized along N
 *    only, with the K blocks in order (each output's partial sum kept in C
 *    between them), which keeps every output's K order, so all variants are
 *    bit-equal. npk_gemm_bf16 takes BF16 operands directly.
 *    When every product of the operands is exact in fp32 (npk_gemm_f32_fused:
 *    finite operands, significands short enough, products in the normal
 *    range, as for BF16/FP16/FP8 operands of moderate range), the SIMD
 *    variants run one FMA per step instead: fma(a, b, acc) rounds once, and
 *    with an exact product that is the same rounding as the separate add, so
 *    the bits do not change; otherwise they multiply and add separately.
 *  - npk_gemm_f32_reassoc: the same sum in float32 in whatever order and
 *    fusion is fastest (FMA tiles, k blocked by 128; 1-7 columns as
 *    dot products in 16 lanes), for paths with a tolerance (the ONNX CPU
 *    path, held to ONNX's backend tolerance against the double-summing
 *    golden): deterministic for one variant, not bit-equal across variants.
 *
 * Variants, chosen at run time from the instruction-set level of
 * include/npukit/cpu.h: AVX-512 (int8: with VNNI, level avx512vnni; fp32:
 * from level avx512, VNNI not needed), AVX2 (+FMA; int8: levels avx2 and
 * avx512; fp32: level avx2; its fp32 kernel in src/base/gemm_f32_avx2.c fuses
 * where npk_gemm_f32_fused allows, as the AVX-512 one), and a portable C path
 * (level c).
 * NPUKIT_ISA in the environment or npk_isa_force caps the level of every
 * kernel module at once (tests force each one).
 *
 * Leading dimensions are in elements. A workspace (npk_gemm_ws) holds the
 * packing buffers across calls so steady-state calls do not allocate; NULL
 * allocates per call. B is packed once per call (per K block and column
 * panel), A once per call.
 */
#ifndef NPUKIT_GEMM_H
#define NPUKIT_GEMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The variants (the level of include/npukit/cpu.h that runs each). */
typedef enum npk_gemm_isa {
    NPK_GEMM_PORTABLE = 1, /* C, any host: level c */
    NPK_GEMM_AVX2 = 2,     /* x86-64 AVX2 + FMA: int8 at levels avx2 and avx512, fp32 at level avx2 */
    NPK_GEMM_AVX512 = 3,   /* x86-64 AVX-512: int8 (F/BW/VNNI) at level avx512vnni, fp32 from level avx512 */
} npk_gemm_isa;

/* Packing buffers kept across calls; zero-initialise, release with npk_gemm_ws_free. */
typedef struct npk_gemm_ws {
    void *buf;
    size_t cap;
} npk_gemm_ws;
void npk_gemm_ws_free(npk_gemm_ws *ws);
/* A 64-byte aligned buffer of at least `bytes` held by ws (grown when short,
 * the old contents dropped), or NULL when out of memory. Callers keep their
 * own operand scratch in workspaces too, so repeated calls do not allocate. */
void *npk_gemm_ws_reserve(npk_gemm_ws *ws, size_t bytes);

/* The variant the int8 kernel (npk_gemm_s8s32) uses now (from npk_isa_active()),
 * and its name ("avx512-vnni", "avx2", "portable"). */
npk_gemm_isa npk_gemm_active_isa(void);
const char *npk_gemm_isa_name(npk_gemm_isa isa);
/* The variant npk_gemm_f32 and npk_gemm_bf16 use now (AVX-512 from level
 * avx512), and its name: "avx512", "avx2" or "portable". */
npk_gemm_isa npk_gemm_f32_active_isa(void);
const char *npk_gemm_f32_kernel(void);

/* int8 x int8 -> int32 (wrapping). 0, or -NPK_ENOMEM (message set). */
int npk_gemm_s8s32(npk_gemm_ws *ws, uint32_t M, uint32_t N, uint32_t K, const int8_t *A, size_t lda, const int8_t *B,
                   size_t ldb, int32_t *C, size_t ldc);

/* fp32 with sequential K accumulation from +0 (see above). 0, or -NPK_ENOMEM. */
int npk_gemm_f32(npk_gemm_ws *ws, uint32_t M, uint32_t N, uint32_t K, const float *A, size_t lda, const float *B,
                 size_t ldb, float *C, size_t ldc);

/* npk_gemm_f32 of BF16 operands (raw uint16_t elements, lda/ldb in elements),
 * each widened exactly to fp32 (npk_bf16_to_f32): the same bits as widening
 * them first, without the fp32 copies (the AVX2 variant widens while it packs;
 * the shell's BF16 GEMM). 0, or -NPK_ENOMEM. */
int npk_gemm_bf16(npk_gemm_ws *ws, uint32_t M, uint32_t N, uint32_t K, const uint16_t *A, size_t lda,
                  const uint16_t *B, size_t ldb, float *C, size_t ldc);

/* 1 when npk_gemm_f32 on these operands may fuse (the SIMD variants then run
 * one FMA per step): every A[i][k] and B[k][j] finite, their significands at
 * most 24 significant bits together, max|a| * max|b| < 2^127 and min|a| *
 * min|b| >= 2^-126 over the non-zero elements, so every product is exact. */
int npk_gemm_f32_fused(uint32_t M, uint32_t N, uint32_t K, const float *A, size_t lda, const float *B, size_t ldb);
/* The same for the widened BF16 operands of npk_gemm_bf16. */
int npk_gemm_bf16_fused(uint32_t M, uint32_t N, uint32_t K, const uint16_t *A, size_t lda, const uint16_t *B,
                        size_t ldb);

/* C[M][N] (row stride ldc) = (acc ? C : 0) + A[M][K] (lda) x B[K][N] (ldb), row major,
 * float32 in the fastest order (see above; not the shell's arithmetic). Own variants
 * (the level of include/npukit/cpu.h): AVX-512 tiles from level avx512, AVX2 + FMA
 * tiles from level avx2, portable C below. Needs no workspace; a narrow N that cannot
 * get its scratch runs in the tiles instead, so it never fails. */
void npk_gemm_f32_reassoc(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                          int64_t ldb, float *C, int64_t ldc, int acc);
/* The same product with B described by a function instead of a matrix: pack(ctx, k0, kc, j0,
 * nb, dst, ldd) writes B's rows k0 .. k0+kc-1, columns j0 .. j0+nb-1 into dst (row stride ldd):
 * dst[k * ldd + j] = B[k0 + k][j0 + j]. The kernel asks for one block of at most 128 rows and
 * one column panel at a time (the whole B when N < 8), so a B that is never stored whole (an
 * im2col'd convolution) is built block by block in cache. Same bits as npk_gemm_f32_reassoc on
 * that B. pack may run on several threads at once (disjoint dst). */
typedef void (*npk_gemm_f32_pack_fn)(void *ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nb, float *dst,
                                     int64_t ldd);
void npk_gemm_f32_reassoc_packed(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                                 npk_gemm_f32_pack_fn pack, void *ctx, float *C, int64_t ldc, int acc);
/* The same two products (npk_gemm_f32_reassoc and _packed) with C = bias[i] + A x B (bias: M
 * floats, or NULL for 0): every sum starts from its row's bias in the first block of k instead of
 * from C, so the bits are those of filling C with the bias and calling with acc = 1, without that
 * pass over C (a convolution's bias). */
void npk_gemm_f32_reassoc_bias(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                               int64_t ldb, const float *bias, float *C, int64_t ldc);
void npk_gemm_f32_reassoc_packed_bias(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                                      npk_gemm_f32_pack_fn pack, void *ctx, const float *bias, float *C, int64_t ldc);
/* C[M][N] (ldc) = (acc ? C : 0) + A[M][K] (lda) x Bt[N][K]^T (ldb): every element one dot
 * product of a row of A and a row of Bt along K, float32 in 8 lanes (FMA from level avx2), for
 * few columns (a Conv with a handful of output positions, a GEMV: N = 1). The bits do not depend
 * on how the rows are split (threads). What npk_gemm_f32_reassoc runs for N < 8 and K >= 16. */
void npk_gemm_f32_nt(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *Bt, int64_t ldb,
                     float *C, int64_t ldc, int acc);
/* The variant npk_gemm_f32_reassoc runs now: "avx512", "avx2" or "portable". */
const char *npk_gemm_f32_reassoc_kernel(void);

#ifdef __cplusplus
}
#endif

#endif
