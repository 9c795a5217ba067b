/* SPDX-License-Identifier: MIT */
/*
 * npukit base: the energy and area model every device shares (docs/energy.md,
 * where each coefficient's source and technology node is listed).
 *
 * Dynamic energy per operation class (Horowitz, ISSCC 2014, 45 nm), energy
 * per SRAM access as a function of the macro's size, word width and ports
 * (the 45 nm 64-bit anchors of the same table, CACTI-style square-root-like
 * growth with size), SRAM macro area from published bit-cell sizes plus a
 * periphery strip, DRAM energy per byte (off-chip, node independent),
 * on-chip DMA/bus energy per byte, MMIO register access energy, leakage per
 * mm2 times modeled time. Every figure scales to the technology node
 * tech_nm (45, 40, 28, 16 or 7) with the factors of docs/energy.md
 * (Stillmaker & Baas 2017; 40 nm = the 0.9x optical shrink of 45 nm).
 *
 * Devices keep their counters beside their timing models and turn them into
 * an npk_energy with these functions (src/sim/<device>_energy.c).
 */
#ifndef NPUKIT_ENERGY_H
#define NPUKIT_ENERGY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The default node: that of the reference data (Timeloop + Accelergy's
 * Gemmini model, shared/data/gemmini-resnet50-layers: 40 nm). */
#define NPK_TECH_DEFAULT_NM 40u

/* 0 when nm is a modeled node (45, 40, 28, 16, 7), else -NPK_EINVAL with a
 * message naming the option. */
int npk_tech_check(uint32_t nm);
/* Dynamic energy and logic area of node nm relative to 45 nm. */
double npk_tech_energy_scale(uint32_t nm);
double npk_tech_area_scale(uint32_t nm);

/* Arithmetic operation classes. A MAC is the multiply plus the add into the
 * accumulator width the device uses (int8/int4/ternary: 32-bit add). */
typedef enum npk_eop {
    NPK_EOP_MAC_I8,      /* 8x8 multiply + 32-bit add */
    NPK_EOP_MAC_I4,      /* 4x4 multiply + 32-bit add */
    NPK_EOP_MAC_TERNARY, /* sign select + 32-bit add */
    NPK_EOP_ADD_I8,
    NPK_EOP_ADD_I32,
    NPK_EOP_MUL_I8,
    NPK_EOP_MUL_I32,
    NPK_EOP_ADD_FP8,
    NPK_EOP_MUL_FP8,
    NPK_EOP_ADD_FP16,
    NPK_EOP_MUL_FP16,
    NPK_EOP_ADD_BF16,
    NPK_EOP_MUL_BF16,
    NPK_EOP_ADD_FP32,
    NPK_EOP_MUL_FP32,
    NPK_EOP_COUNT
} npk_eop;
const char *npk_eop_name(npk_eop op);
/* pJ of one operation and um2 of one operator at node nm. */
double npk_op_pj(npk_eop op, uint32_t nm);
double npk_op_area_um2(npk_eop op, uint32_t nm);

/* Pipeline / PE registers: pJ per bit written and um2 per bit. */
double npk_reg_pj_per_bit(uint32_t nm);
double npk_reg_area_um2_per_bit(uint32_t nm);

/* One SRAM: `macros` identical macros of bytes_per_macro each, words of
 * width_bits, ports read/write ports per macro (1 or 2). */
typedef struct npk_sram {
    uint64_t bytes_per_macro;
    uint32_t width_bits;
    uint32_t ports;
    uint32_t macros;
} npk_sram;
/* pJ of one access (read or write) of one word of one macro. */
double npk_sram_access_pj(const npk_sram *s, uint32_t nm);
/* mm2 of all the macros. */
double npk_sram_area_mm2(const npk_sram *s, uint32_t nm);

/* pJ per byte read from or written to DRAM (off-chip LPDDR4 interface and
 * core: the same at every logic node). */
double npk_dram_pj_per_byte(void);
/* pJ per byte moved by an on-chip DMA engine over the system bus. */
double npk_dma_pj_per_byte(uint32_t nm);
/* pJ of one 32-bit MMIO register access (bus transfer + register). */
double npk_mmio_pj(uint32_t nm);
/* Leakage power density in mW per mm2 of logic and SRAM. */
double npk_leak_mw_per_mm2(uint32_t nm);

/* Energy of a run by class, in pJ. */
typedef struct npk_energy {
    double compute_pj; /* arithmetic (MACs, vector, scalar ops) */
    double reg_pj;     /* PE / pipeline registers and register files */
    double sram_pj;    /* scratchpads and buffers */
    double acc_pj;     /* accumulator SRAM */
    double dram_pj;    /* off-chip DRAM */
    double dma_pj;     /* on-chip DMA / bus transfers */
    double mmio_pj;    /* host register accesses */
    double leak_pj;    /* leakage over the modeled time */
} npk_energy;
double npk_energy_total_pj(const npk_energy *e);
void npk_energy_add(npk_energy *sum, const npk_energy *e);

/* Area of a device configuration, in mm2. */
typedef struct npk_area {
    double array_mm2; /* compute array (PEs / MAC units with their registers) */
    double sram_mm2;  /* every SRAM macro */
    double fixed_mm2; /* control, DMA engine, register file, vector/scalar units */
} npk_area;
double npk_area_total_mm2(const npk_area *a);

/* Leakage pJ of `mm2` over `cycles` at `hz`. */
double npk_leak_pj(double mm2, uint64_t cycles, uint64_t hz, uint32_t nm);

/* 0 when the environment sets NPUKIT_ENERGY=off: devices skip pricing their
 * counters per command and runs skip reading the energy per node, so `npu
 * bench report-cost` can time a run without the energy model's work (its
 * reports then carry no energy); 1 otherwise. Read once per process. */
int npk_energy_counting(void);

#ifdef __cplusplus
}
#endif
#endif /* NPUKIT_ENERGY_H */
