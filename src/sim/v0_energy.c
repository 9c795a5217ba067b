/* SPDX-License-Identifier: MIT */
/* The v0 energy and area model: the access counts of the timing model
 * (npk_v0_engine_stats) priced with the shared coefficients of
 * include/npukit/energy.h. docs/energy.md "v0". */
#include "npukit/energy.h"
#include "npukit/v0_regs.h"

/* PE registers (Gemmini's weight-stationary PE): two weight registers (the
 * preload double buffer), the int8 input passed right and the int32 partial
 * sum passed down. */
#define PE_REG_BITS (8u + 8u + 8u + 32u)
/* Per MAC the input and the partial sum registers are written. */
#define MAC_REG_BITS (8u + 32u)

static void geometry(const npk_v0_timing *tp, npk_v0_timing *t, npk_sram *spad, npk_sram *acc) {
    *t = *tp;
    if (!t->rows) t->rows = 16;
    if (!t->cols) t->cols = 16;
    if (!t->spad_bytes) t->spad_bytes = 256u * 1024u;
    if (!t->acc_bytes) t->acc_bytes = 64u * 1024u;
    if (!t->tech_nm) t->tech_nm = NPK_TECH_DEFAULT_NM;
    /* scratchpad: one macro, words of one array row of int8, one port;
     * accumulator: one macro per array column, 32-bit words, read and write
     * ports (accumulation reads and writes in the same cycle) */
    *spad = (npk_sram){.bytes_per_macro = t->spad_bytes, .width_bits = 8u * t->rows, .ports = 1, .macros = 1};
    *acc = (npk_sram){.bytes_per_macro = t->acc_bytes / t->cols, .width_bits = 32, .ports = 2, .macros = t->cols};
}

void npk_v0_area(const npk_v0_timing *tp, npk_area *a) {
    npk_v0_timing t;
    npk_sram spad, acc;
    geometry(tp, &t, &spad, &acc);
    const uint32_t nm = t.tech_nm;
    double pe = npk_op_area_um2(NPK_EOP_MAC_I8, nm) + PE_REG_BITS * npk_reg_area_um2_per_bit(nm);
    a->array_mm2 = (double)t.rows * t.cols * pe / 1e6;
    a->sram_mm2 = npk_sram_area_mm2(&spad, nm) + npk_sram_area_mm2(&acc, nm);
    /* fixed logic: the DMA engine's 16 in-flight 64-byte request buffers and
     * the 16-entry descriptor queue (64 B each) as SRAM, the 0x100-byte
     * register window and the ReLU/pool unit (cols int8 compare/adds) */
    npk_sram bufs = {.bytes_per_macro = 16u * 64u, .width_bits = 128, .ports = 1, .macros = 2};
    a->fixed_mm2 = npk_sram_area_mm2(&bufs, nm) +
                   (0x100u * 8u * npk_reg_area_um2_per_bit(nm) + t.cols * npk_op_area_um2(NPK_EOP_ADD_I8, nm)) / 1e6;
}

void npk_v0_energy(const npk_v0_timing *tp, const npk_v0_engine_stats *st, uint64_t cycles, uint64_t hz,
                   npk_energy *e) {
    npk_v0_timing t;
    npk_sram spad, acc;
    geometry(tp, &t, &spad, &acc);
    const uint32_t nm = t.tech_nm;
    *e = (npk_energy){0};
    e->compute_pj = (double)st->macs * npk_op_pj(NPK_EOP_MAC_I8, nm) + (double)st->vec_ops * npk_op_pj(NPK_EOP_ADD_I8, nm);
    /* a preload shifts rows x cols int8 weights down the columns: on average
     * (rows + 1) / 2 register stages each */
    double preload_bits = (double)t.rows * t.cols * 8.0 * (t.rows + 1) / 2.0;
    e->reg_pj = ((double)st->macs * MAC_REG_BITS + (double)st->preloads * preload_bits) * npk_reg_pj_per_bit(nm);
    e->sram_pj = (double)(st->spad_rd + st->spad_wr) * npk_sram_access_pj(&spad, nm);
    e->acc_pj = (double)(st->acc_rd + st->acc_wr) * t.cols * npk_sram_access_pj(&acc, nm);
    double dram = (double)(st->dram_rd + st->dram_wr);
    e->dram_pj = dram * npk_dram_pj_per_byte();
    e->dma_pj = dram * npk_dma_pj_per_byte(nm);
    npk_area a;
    npk_v0_area(&t, &a);
    e->leak_pj = npk_leak_pj(npk_area_total_mm2(&a), cycles, hz, nm);
}
