// SPDX-License-Identifier: MIT
/* Internal interface between the shell device (shell.c: registers, ring,
 * events, timing) and its engines (shell_exec.c: what each descriptor does to
 * memory and how long it takes). */
#ifndef NPUKIT_SIM_SHELL_INT_H
#define NPUKIT_SIM_SHELL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/gemm.h"
#include "npukit/sim.h"

/* Timing parameters (device options, docs/shell.md "Timing model"). */
typedef struct shx_params {
    uint32_t fetch_cycles;   /* decode cost of one descriptor (plus ring beat latency) */
    uint32_t dma_bpc;        /* DMA bytes per cycle */
    uint32_t dma_setup;      /* per DMA descriptor */
    uint32_t dma_entry;      /* per gather/scatter list entry */
    uint32_t gemm_macs;      /* INT8/FP8 MACs per cycle */
    uint32_t gemm_fmacs;     /* FP16/BF16 MACs per cycle */
    uint32_t gemm_bpc;       /* GEMM operand bytes per cycle */
    uint32_t gemm_setup;
    uint32_t vec_lanes;      /* VEC element-operations per cycle */
    uint32_t vec_bpc;        /* VEC bytes per cycle */
    uint32_t vec_setup;
    uint32_t event_cycles;   /* EVENT_SIGNAL / EVENT_WAIT */
    uint32_t noop_cycles;
    uint64_t event_timeout;  /* EVENT_WAIT budget, 0 = wait forever */
    uint64_t bus_timeout;    /* cycles before a beat without response is a TIMEOUT */
    uint32_t beat;           /* bus beat bytes */
    uint32_t clock_mhz;      /* device clock (npk_dev.hz) */
    int timing_only;         /* no functional compute (zeros written), same beats and cycles */
    uint32_t tech_nm;        /* node of the energy and area model (docs/energy.md) */
    const char *preset;      /* preset=NAME (only while parsing) */
    int rtlgen_overlap;      /* with rtlgen: run.py --overlap scheduling (0: sequential) */
    int rtlgen;              /* preset=rtlgen-perf: the RTLGen perf model's cost rules
                              * (docs/shell.md "Timing model") */
    /* implementation limits (docs/shell.md decision 15): host work per action */
    uint64_t max_macs;       /* GEMM MACs per descriptor */
    uint64_t max_elems;      /* VEC_OP / SOFTMAX elements per descriptor */
    uint32_t max_pending;    /* EVENT_SIGNALs in flight */
    uint64_t max_dma;        /* bytes one DMA descriptor moves (COPY, STRIDED, a list's total) */
} shx_params;

/* An address range a descriptor reads or writes (for the hazard check). */
typedef struct shx_range {
    uint64_t lo, hi; /* [lo, hi) */
    int write;
} shx_range;

typedef struct shx_rset {
    shx_range *r;
    size_t n, cap;
    int all; /* conflicts with everything (long gather/scatter lists) */
} shx_rset;

enum { SHX_DMA = 0, SHX_GEMM = 1, SHX_VEC = 2, SHX_NENG = 3, SHX_CTRL = -1 };

/* Outcome of executing one descriptor. */
typedef struct shx_res {
    int engine;          /* SHX_* (SHX_CTRL when it failed in decode) */
    uint64_t dur;        /* engine cycles (up to the fault when err is set) */
    uint64_t bytes, macs;
    unsigned dtype;      /* GEMM: the operands' npk_shell_dtype (energy model) */
    uint64_t eops;       /* VEC engine: element operations (energy model) */
    uint32_t err;        /* SHELL_ERR_* */
    uint64_t err_addr;
    int hang;            /* err is a TIMEOUT of a beat that never answered */
    uint64_t lat_sum, beats; /* bus latency statistics of the transfers */
    char args[192];      /* trace args (JSON members) */
    char what[160];      /* error detail for the log */
} shx_res;

typedef struct shx_ctx {
    npk_mem *mem;
    const shx_params *p;
    shx_rset *rs;        /* ranges of this descriptor (filled by shx_exec) */
    uint64_t ring_lo, ring_hi; /* the command ring [lo, hi): engine writes there are DMA_FAULT */
    struct shx_scratch *scr;   /* GEMM buffers kept across descriptors */
    const npk_dev *dev;        /* the device (its stop flag: npk_dev_stopping) */
} shx_ctx;

/* The GEMM engine's host buffers, kept by the instance across descriptors (no
 * allocation per GEMM): the kernels' packing, operands A and B, the
 * accumulators and C. */
typedef struct shx_scratch {
    npk_gemm_ws kern, a, b, acc, c;
} shx_scratch;
void shx_scratch_free(shx_scratch *s);

/* Execute the engine descriptor d (size units of 32 bytes, at guest address
 * desc_addr): memory effects now, duration and errors in *x. */
void shx_exec(shx_ctx *c, const uint8_t *d, unsigned size, uint64_t desc_addr, shx_res *x);

/* 1 when the two range sets conflict (a write overlaps anything of the other). */
int shx_conflict(const shx_rset *a, const shx_rset *b);
void shx_rset_clear(shx_rset *r);
void shx_rset_free(shx_rset *r);

/* Little-endian field access. */
static inline uint16_t shx_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t shx_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t shx_u64(const uint8_t *p) { return shx_u32(p) | (uint64_t)shx_u32(p + 4) << 32; }

#endif
