/* SPDX-License-Identifier: MIT */
/* The energy and area model (include/npukit/energy.h, docs/energy.md) against
 * its published anchors, and v0's counted accesses against counts derived by
 * hand from the schedule of docs/v0.md:
 * - Horowitz (ISSCC 2014, 45 nm): 64-bit SRAM reads of 10 pJ (8 KiB) and
 *   100 pJ (1 MiB), about 20 pJ at 32 KiB; int8 multiply 0.2 pJ + int32 add
 *   0.1 pJ per MAC;
 * - SRAM area grows by at least the added bit cells (40 nm: 0.242 um2 each)
 *   and by less than twice that when only the scratchpad / accumulator grow;
 * - the technology factors fall with the node; tech_nm outside the table is
 *   refused by the option parser and by npk_v0_timing_check;
 * - v0's counters for one 32x32x32 matmul on the 16x16 array (seed model):
 *   the tiling holds the whole product (2x2 output blocks, 2 reduction
 *   blocks), 8 passes of 16 A rows and 16 B rows, accumulator rows written
 *   8 x 16 and read 4 x 16 (accumulate) + 32 x 2 (drain), 32768 MACs. */
#include "check.h"
#include "npukit/energy.h"
#include "npukit/error.h"
#include "npukit/sim.h"
#include "npukit/v0_model.h"

#include <math.h>

static int near(double a, double b, double rel) { return fabs(a - b) <= rel * fabs(b); }

int main(void) {
    /* Horowitz's SRAM anchors at 45 nm */
    npk_sram s8 = {.bytes_per_macro = 8192, .width_bits = 64, .ports = 1, .macros = 1};
    npk_sram s32 = s8, s1m = s8;
    s32.bytes_per_macro = 32768;
    s1m.bytes_per_macro = 1u << 20;
    CHECK(near(npk_sram_access_pj(&s8, 45), 10.0, 1e-9));
    CHECK(near(npk_sram_access_pj(&s1m, 45), 100.0, 1e-3));
    CHECK(near(npk_sram_access_pj(&s32, 45), 20.0, 0.05));
    /* width: a 128-bit word costs twice a 64-bit one; a second port more */
    npk_sram w = s32;
    w.width_bits = 128;
    CHECK(near(npk_sram_access_pj(&w, 45), 2.0 * npk_sram_access_pj(&s32, 45), 1e-9));
    w = s32;
    w.ports = 2;
    CHECK(npk_sram_access_pj(&w, 45) > npk_sram_access_pj(&s32, 45));
    CHECK(near(npk_op_pj(NPK_EOP_MAC_I8, 45), 0.3, 1e-9));
    CHECK(near(npk_op_pj(NPK_EOP_MUL_FP32, 45), 3.7, 1e-9));
    CHECK(npk_op_pj(NPK_EOP_MAC_I4, 45) < npk_op_pj(NPK_EOP_MAC_I8, 45));
    CHECK(npk_op_pj(NPK_EOP_MAC_TERNARY, 45) < npk_op_pj(NPK_EOP_MAC_I4, 45));
    /* nodes */
    static const uint32_t nm[] = {45, 40, 28, 16, 7};
    for (int i = 0; i < 5; i++) CHECK_EQ(npk_tech_check(nm[i]), 0);
    for (int i = 1; i < 5; i++) {
        CHECK(npk_tech_energy_scale(nm[i]) < npk_tech_energy_scale(nm[i - 1]));
        CHECK(npk_tech_area_scale(nm[i]) < npk_tech_area_scale(nm[i - 1]));
        CHECK(npk_sram_area_mm2(&s32, nm[i]) < npk_sram_area_mm2(&s32, nm[i - 1]));
    }
    CHECK_EQ(npk_tech_check(32), -NPK_EINVAL);
    npk_v0_timing bad = {.tech_nm = 32};
    CHECK_EQ(npk_v0_timing_check(&bad), -NPK_EINVAL);
    CHECK(npk_sim_new("v0", "tech_nm=32") == NULL);
    npk_sim *sim = npk_sim_new("v0", "tech_nm=7");
    CHECK(sim != NULL);
    npk_sim_free(sim);

    /* area follows the SRAM: at 40 nm every added bit adds at least its cell
     * (0.242 um2) and less than twice that (periphery grows with the side) */
    npk_v0_timing base = {.rows = 16, .cols = 16, .spad_bytes = 256u << 10, .acc_bytes = 64u << 10, .tech_nm = 40};
    npk_area a0, a1, a2;
    npk_v0_area(&base, &a0);
    npk_v0_timing big = base;
    big.spad_bytes *= 2;
    npk_v0_area(&big, &a1);
    double add = (double)(256u << 10) * 8 * 0.242 / 1e6;
    CHECK(a1.sram_mm2 - a0.sram_mm2 >= add && a1.sram_mm2 - a0.sram_mm2 < 2 * add);
    CHECK(near(a1.array_mm2, a0.array_mm2, 1e-12));
    big = base;
    big.acc_bytes *= 4;
    npk_v0_area(&big, &a2);
    add = 3.0 * (64u << 10) * 8 * 0.242 * 1.3 / 1e6; /* dual-ported accumulator cells */
    CHECK(a2.sram_mm2 - a0.sram_mm2 >= add && a2.sram_mm2 - a0.sram_mm2 < 2 * add);
    big = base;
    big.rows = big.cols = 32;
    npk_v0_area(&big, &a2);
    CHECK(near(a2.array_mm2, 4.0 * a0.array_mm2, 1e-9));

    /* v0 counters of a 32x32x32 matmul (seed model, default geometry) */
    npk_v0_desc d = npk_v0_desc_matmul(0, NPK_V0_F_SIGNED, 32, 32, 32, 0, 0, 0, 0, 0, 0, 0);
    npk_v0_engine_stats st = {0};
    uint64_t cyc = npk_v0_model_stats(&d, &base, &st);
    CHECK(cyc > 0);
    CHECK_EQ(st.macs, 32 * 32 * 32);
    CHECK_EQ(st.preloads, 8);
    CHECK_EQ(st.spad_rd, 8 * 2 * 16);
    CHECK_EQ(st.spad_wr, (32 * 32 + 32 * 32) / 16);
    CHECK_EQ(st.acc_wr, 8 * 16);
    CHECK_EQ(st.acc_rd, 4 * 16 + 32 * 2);
    CHECK_EQ(st.dram_rd, 64 + 32 * 32 * 2);
    CHECK_EQ(st.dram_wr, 32 * 32 * 4);
    /* its energy from those counts, by class (40 nm: 0.9 x the 45 nm figures) */
    npk_energy e;
    npk_v0_energy(&base, &st, cyc, 1000000000u, &e);
    CHECK(near(e.compute_pj, 32768 * 0.3 * 0.9, 1e-9));
    CHECK(near(e.dram_pj, (double)(st.dram_rd + st.dram_wr) * npk_dram_pj_per_byte(), 1e-12));
    npk_sram spad = {.bytes_per_macro = 256u << 10, .width_bits = 128, .ports = 1, .macros = 1};
    CHECK(near(e.sram_pj, (8 * 2 * 16 + 128) * npk_sram_access_pj(&spad, 40), 1e-9));
    CHECK(e.acc_pj > 0 && e.reg_pj > 0 && e.leak_pj > 0 && e.dma_pj > 0);
    CHECK(near(npk_energy_total_pj(&e),
               e.compute_pj + e.reg_pj + e.sram_pj + e.acc_pj + e.dram_pj + e.dma_pj + e.mmio_pj + e.leak_pj, 1e-12));
    /* a smaller node: less energy for the same counts */
    npk_v0_timing t7 = base;
    t7.tech_nm = 7;
    npk_energy e7;
    npk_v0_energy(&t7, &st, cyc, 1000000000u, &e7);
    CHECK(npk_energy_total_pj(&e7) - e7.dram_pj < npk_energy_total_pj(&e) - e.dram_pj);
    return CHECK_DONE();
}
