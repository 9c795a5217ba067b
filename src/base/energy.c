/* SPDX-License-Identifier: MIT */
/* npukit base: the shared energy and area model (include/npukit/energy.h).
 * Every coefficient below is listed with its source in docs/energy.md. */
#include "npukit/energy.h"
#include "npukit/error.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>

/* ---- technology nodes ----------------------------------------------------- */

typedef struct tnode {
    uint32_t nm;
    double energy; /* dynamic energy per operation relative to 45 nm */
    double area;   /* logic area relative to 45 nm */
    double cell;   /* 6T SRAM bit cell, um2 (published high-density cells) */
    double leak;   /* leakage power density, mW per mm2 */
} tnode;

static const tnode nodes[] = {
    {45, 1.00, 1.00, 0.346, 2.0}, /* Horowitz 2014 table; Intel 45 nm cell (Mistry, IEDM 2007) */
    {40, 0.90, 0.81, 0.242, 2.0}, /* 0.9x optical shrink of 45 nm; TSMC 40 nm cell */
    {28, 0.55, 0.39, 0.127, 2.0}, /* Stillmaker & Baas 2017; 28 nm HKMG cell */
    {16, 0.30, 0.20, 0.074, 1.5}, /* Stillmaker & Baas 2017; 16 nm FinFET cell */
    {7, 0.15, 0.06, 0.027, 1.5},  /* Stillmaker & Baas 2017; 7 nm FinFET cell (ISSCC 2017) */
};

static const tnode *node(uint32_t nm) {
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
        if (nodes[i].nm == nm) return &nodes[i];
    return &nodes[1]; /* callers check with npk_tech_check first */
}

int npk_tech_check(uint32_t nm) {
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
        if (nodes[i].nm == nm) return 0;
    return npk_err(NPK_EINVAL, "option tech_nm=%u: the energy model has the nodes 45, 40, 28, 16 and 7 nm", nm);
}

double npk_tech_energy_scale(uint32_t nm) { return node(nm)->energy; }
double npk_tech_area_scale(uint32_t nm) { return node(nm)->area; }

/* ---- arithmetic (Horowitz, ISSCC 2014, 45 nm, 0.9 V; derived rows in
 * docs/energy.md) ----------------------------------------------------------- */

static const struct {
    const char *name;
    double pj, um2;
} ops[NPK_EOP_COUNT] = {
    [NPK_EOP_MAC_I8] = {"int8 MAC", 0.2 + 0.1, 282 + 137},
    [NPK_EOP_MAC_I4] = {"int4 MAC", 0.05 + 0.1, 70.5 + 137},
    [NPK_EOP_MAC_TERNARY] = {"ternary MAC", 0.03 + 0.1, 36 + 137},
    [NPK_EOP_ADD_I8] = {"int8 add", 0.03, 36},
    [NPK_EOP_ADD_I32] = {"int32 add", 0.1, 137},
    [NPK_EOP_MUL_I8] = {"int8 multiply", 0.2, 282},
    [NPK_EOP_MUL_I32] = {"int32 multiply", 3.1, 3495},
    [NPK_EOP_ADD_FP8] = {"fp8 add", 0.2, 680},
    [NPK_EOP_MUL_FP8] = {"fp8 multiply", 0.15, 220},
    [NPK_EOP_ADD_FP16] = {"fp16 add", 0.4, 1360},
    [NPK_EOP_MUL_FP16] = {"fp16 multiply", 1.1, 1640},
    [NPK_EOP_ADD_BF16] = {"bf16 add", 0.4, 1360},
    [NPK_EOP_MUL_BF16] = {"bf16 multiply", 0.58, 870},
    [NPK_EOP_ADD_FP32] = {"fp32 add", 0.9, 4184},
    [NPK_EOP_MUL_FP32] = {"fp32 multiply", 3.7, 7700},
};

const char *npk_eop_name(npk_eop op) { return (unsigned)op < NPK_EOP_COUNT ? ops[op].name : "?"; }
double npk_op_pj(npk_eop op, uint32_t nm) {
    return (unsigned)op < NPK_EOP_COUNT ? ops[op].pj * node(nm)->energy : 0.0;
}
double npk_op_area_um2(npk_eop op, uint32_t nm) {
    return (unsigned)op < NPK_EOP_COUNT ? ops[op].um2 * node(nm)->area : 0.0;
}

/* A flip-flop (FreePDK45 / Nangate 45 nm DFF_X1: 4.52 um2, a few fJ per
 * clocked write). */
#define REG_PJ_BIT_45 0.004
#define REG_UM2_BIT_45 4.52
double npk_reg_pj_per_bit(uint32_t nm) { return REG_PJ_BIT_45 * node(nm)->energy; }
double npk_reg_area_um2_per_bit(uint32_t nm) { return REG_UM2_BIT_45 * node(nm)->area; }

/* ---- SRAM ------------------------------------------------------------------
 * Energy: Horowitz's 45 nm 64-bit reads (8 KiB 10 pJ, 32 KiB 20 pJ, 1 MiB
 * 100 pJ) are E = 10 pJ x (size / 8 KiB)^0.4746 (exact at 8 KiB and 1 MiB,
 * 19.3 pJ at 32 KiB); bit lines and sense amplifiers scale with the word
 * width; a second port lengthens word and bit lines by the square root of
 * the larger cell. Area: bits x bit cell x port factor, plus a periphery
 * strip (decoders, sense amplifiers, I/O) of PERIPH_F feature sizes on each
 * side of the cell array (CACTI's decomposition). */
#define SRAM_PJ_64B_8K 10.0
#define SRAM_EXP (log(10.0) / log(128.0)) /* 0.4746: 10x from 8 KiB to 1 MiB */
#define PORT_AREA 0.3 /* extra cell area per extra port (8T / dual-port cells, ~1.3x of 6T) */
#define PERIPH_F 1250.0

static double port_factor(uint32_t ports) { return 1.0 + PORT_AREA * (double)(ports > 1 ? ports - 1 : 0); }

double npk_sram_access_pj(const npk_sram *s, uint32_t nm) {
    double kib = (double)s->bytes_per_macro / 8192.0;
    if (kib <= 0) return 0.0;
    return SRAM_PJ_64B_8K * ((double)s->width_bits / 64.0) * pow(kib, SRAM_EXP) * sqrt(port_factor(s->ports)) *
           node(nm)->energy;
}

double npk_sram_area_mm2(const npk_sram *s, uint32_t nm) {
    const tnode *t = node(nm);
    double cells = (double)s->bytes_per_macro * 8.0 * t->cell * port_factor(s->ports); /* um2 */
    double side = sqrt(cells) + 2.0 * PERIPH_F * (double)t->nm / 1000.0;           /* um */
    return (double)s->macros * side * side / 1e6;
}

/* ---- off-chip, bus, MMIO, leakage ---------------------------------------- */

#define DRAM_PJ_BYTE 64.0   /* LPDDR4: 8 pJ/bit */
#define WIRE_PJ_BIT_MM 0.1  /* on-chip wire, 45 nm */
#define BUS_MM 1.0          /* average DMA / MMIO wire span */
double npk_dram_pj_per_byte(void) { return DRAM_PJ_BYTE; }
double npk_dma_pj_per_byte(uint32_t nm) { return 8.0 * WIRE_PJ_BIT_MM * BUS_MM * node(nm)->energy; }
double npk_mmio_pj(uint32_t nm) {
    return (32.0 * WIRE_PJ_BIT_MM * BUS_MM + 32.0 * REG_PJ_BIT_45) * node(nm)->energy;
}
double npk_leak_mw_per_mm2(uint32_t nm) { return node(nm)->leak; }

double npk_leak_pj(double mm2, uint64_t cycles, uint64_t hz, uint32_t nm) {
    if (!hz) return 0.0;
    /* mW x s = mJ = 1e9 pJ */
    return mm2 * npk_leak_mw_per_mm2(nm) * ((double)cycles / (double)hz) * 1e9;
}

double npk_energy_total_pj(const npk_energy *e) {
    return e->compute_pj + e->reg_pj + e->sram_pj + e->acc_pj + e->dram_pj + e->dma_pj + e->mmio_pj + e->leak_pj;
}

void npk_energy_add(npk_energy *s, const npk_energy *e) {
    s->compute_pj += e->compute_pj, s->reg_pj += e->reg_pj, s->sram_pj += e->sram_pj, s->acc_pj += e->acc_pj;
    s->dram_pj += e->dram_pj, s->dma_pj += e->dma_pj, s->mmio_pj += e->mmio_pj, s->leak_pj += e->leak_pj;
}

double npk_area_total_mm2(const npk_area *a) { return a->array_mm2 + a->sram_mm2 + a->fixed_mm2; }

int npk_energy_counting(void) {
    static atomic_int on = -1;
    int v = atomic_load_explicit(&on, memory_order_relaxed);
    if (v < 0) {
        const char *s = getenv("NPUKIT_ENERGY");
        v = !(s && !strcmp(s, "off"));
        atomic_store_explicit(&on, v, memory_order_relaxed);
    }
    return v;
}
