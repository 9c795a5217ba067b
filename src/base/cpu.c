// SPDX-License-Identifier: MIT
/* The run-time instruction-set level of every kernel module (include/npukit/cpu.h):
 * the host's features read once from CPUID (through the compiler's
 * __builtin_cpu_supports, which also checks that the OS saves the vector state),
 * capped by NPUKIT_ISA or npk_isa_force. */
#include "npukit/cpu.h"

#include "npukit/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Atomic int npk_isa_active_level_ = -1;

static _Atomic int host_level = -1;
static _Atomic int env_cap = -2;          /* -2: NPUKIT_ISA not read yet; -1: none */
static _Atomic int forced = NPK_ISA_AUTO; /* npk_isa_force */

static const char *const names[NPK_ISA_COUNT] = {"c", "avx2", "avx512", "avx512vnni"};

int npk_isa_emulated(void) {
#ifdef NPUKIT_EMULATE_AVX512
    return 1;
#else
    return 0;
#endif
}

npk_isa npk_isa_host(void) {
    int l = atomic_load(&host_level);
    if (l >= 0) return (npk_isa)l;
    l = NPK_ISA_C;
#ifdef NPK_ISA_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        l = NPK_ISA_AVX2;
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512cd")) {
            l = NPK_ISA_AVX512;
            if (__builtin_cpu_supports("avx512vnni")) l = NPK_ISA_AVX512VNNI;
        }
        if (npk_isa_emulated()) l = NPK_ISA_AVX512VNNI; /* SIMDe's AVX-512 over native AVX2 */
    }
#endif
    atomic_store(&host_level, l);
    return (npk_isa)l;
}

const char *npk_isa_name(npk_isa isa) {
    if (isa >= 0 && isa < NPK_ISA_COUNT) return names[isa];
    return isa == NPK_ISA_AUTO ? "auto" : "?";
}

int npk_isa_from_name(const char *name, npk_isa *out) {
    if (name && !strcmp(name, "portable")) name = "c";
    for (int i = 0; name && i < NPK_ISA_COUNT; i++)
        if (!strcmp(name, names[i])) {
            *out = (npk_isa)i;
            return 0;
        }
    return npk_err(NPK_EINVAL, "unknown instruction-set level '%s' (c, avx2, avx512 or avx512vnni)",
                   name ? name : "(null)");
}

/* NPUKIT_ISA, read once: the cap it sets, or -1. A value that names no level
 * is reported on stderr once and ignored (the kernels are exact whichever
 * variant runs; only the speed differs). */
static int env_level(void) {
    int e = atomic_load(&env_cap);
    if (e != -2) return e;
    const char *s = getenv("NPUKIT_ISA");
    npk_isa isa;
    e = -1;
    if (s && *s) {
        if (!npk_isa_from_name(s, &isa)) e = isa;
        else fprintf(stderr, "npukit: NPUKIT_ISA='%s' is not c, avx2, avx512 or avx512vnni: ignored\n", s);
    }
    atomic_store(&env_cap, e);
    return e;
}

static int update(void) {
    int l = npk_isa_host(), f = atomic_load(&forced), cap = f != NPK_ISA_AUTO ? f : env_level();
    if (cap >= 0 && cap < l) l = cap;
    atomic_store(&npk_isa_active_level_, l);
    return l;
}

int npk_isa_init_(void) { return update(); }

int npk_isa_force(npk_isa isa) {
    if (isa != NPK_ISA_AUTO && (isa < 0 || isa >= NPK_ISA_COUNT))
        return npk_err(NPK_EINVAL, "instruction-set level %d does not exist", (int)isa);
    if (isa != NPK_ISA_AUTO && isa > npk_isa_host())
        return npk_err(NPK_EUNSUPPORTED, "instruction-set level '%s' is not available on this host (the best is '%s')",
                       npk_isa_name(isa), npk_isa_name(npk_isa_host()));
    atomic_store(&forced, (int)isa);
    update();
    return 0;
}
