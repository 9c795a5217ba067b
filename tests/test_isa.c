// SPDX-License-Identifier: MIT
/* The one instruction-set choice of every kernel module (include/npukit/cpu.h):
 * NPUKIT_ISA caps the level, npk_isa_force overrides it, and each module's
 * variant follows the level (npk_gemm_s8s32 needs VNNI for AVX-512; npk_gemm_f32,
 * the exact INT4 GEMV and npk_gemm_f32_reassoc do not). */
#include "check.h"
#include "npukit/cpu.h"
#include "npukit/error.h"
#include "npukit/gemm.h"
#include "npukit/numfmt.h"

#include <stdio.h>
#include <stdlib.h>

static void check_modules(npk_isa l) {
    CHECK_EQ(npk_isa_active(), l);
    CHECK_EQ(npk_gemm_active_isa(), l >= NPK_ISA_AVX512VNNI ? NPK_GEMM_AVX512
                                    : l >= NPK_ISA_AVX2      ? NPK_GEMM_AVX2
                                                             : NPK_GEMM_PORTABLE);
    CHECK_EQ(npk_gemm_f32_active_isa(), l >= NPK_ISA_AVX512 ? NPK_GEMM_AVX512
                                        : l >= NPK_ISA_AVX2    ? NPK_GEMM_AVX2
                                                               : NPK_GEMM_PORTABLE);
    CHECK_STR(npk_gemm_f32_kernel(), l >= NPK_ISA_AVX512 ? "avx512" : l >= NPK_ISA_AVX2 ? "avx2" : "portable");
    CHECK_EQ(npk_q4_isa_active(), l >= NPK_ISA_AVX512 ? NPK_Q4_AVX512 : l >= NPK_ISA_AVX2 ? NPK_Q4_AVX2 : NPK_Q4_C);
    CHECK_STR(npk_gemm_f32_reassoc_kernel(), l >= NPK_ISA_AVX512 ? "avx512" : l >= NPK_ISA_AVX2 ? "avx2" : "portable");
}

int main(void) {
    /* before the first use: the environment caps every module at c */
    setenv("NPUKIT_ISA", "c", 1);
    npk_isa host = npk_isa_host();
    CHECK(host >= NPK_ISA_C && host < NPK_ISA_COUNT);
    printf("host ISA level: %s%s\n", npk_isa_name(host),
           npk_isa_emulated() ? " (EMULATED: -DNPUKIT_EMULATE_AVX512=ON, AVX-512 on SIMDe over AVX2)" : "");
#ifdef NPK_ISA_X86
    /* the emulated build runs the AVX-512 VNNI kernels on any AVX2 host */
    if (npk_isa_emulated()) CHECK_EQ(host, NPK_ISA_AVX512VNNI);
#endif
    check_modules(NPK_ISA_C);
    /* npk_isa_force overrides the environment; AUTO returns to its cap */
    CHECK_EQ(npk_isa_force(host), 0);
    check_modules(host);
    CHECK_EQ(npk_isa_force(NPK_ISA_AUTO), 0);
    check_modules(NPK_ISA_C);
    int levels = 0;
    FOR_EACH_ISA(l) {
        levels++;
        check_modules((npk_isa)l);
    }
    CHECK_EQ(levels, host + 1);
    /* levels the host lacks, and no level at all, are refused with a message */
    if (host + 1 < NPK_ISA_COUNT) {
        CHECK_EQ(npk_isa_force((npk_isa)(host + 1)), -NPK_EUNSUPPORTED);
        CHECK(strstr(npk_errmsg(), npk_isa_name((npk_isa)(host + 1))) != NULL);
    }
    CHECK_EQ(npk_isa_force((npk_isa)7), -NPK_EINVAL);
    CHECK_EQ(npk_isa_force((npk_isa)-2), -NPK_EINVAL);
    CHECK_EQ(npk_isa_active(), host); /* the last successful force stays */
    /* names */
    for (int l = NPK_ISA_C; l < NPK_ISA_COUNT; l++) {
        npk_isa back = NPK_ISA_AUTO;
        CHECK_EQ(npk_isa_from_name(npk_isa_name((npk_isa)l), &back), 0);
        CHECK_EQ(back, l);
    }
    npk_isa p = NPK_ISA_AUTO;
    CHECK_EQ(npk_isa_from_name("portable", &p), 0);
    CHECK_EQ(p, NPK_ISA_C);
    CHECK_EQ(npk_isa_from_name("avx512f", &p), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "avx512f") != NULL);
    CHECK_STR(npk_isa_name(NPK_ISA_AVX512VNNI), "avx512vnni");
    CHECK_STR(npk_isa_name(NPK_ISA_AUTO), "auto");
    CHECK_EQ(npk_isa_force(NPK_ISA_AUTO), 0);
    fprintf(stderr, "host level %s\n", npk_isa_name(host));
    return CHECK_DONE();
}
