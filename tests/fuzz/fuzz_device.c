// SPDX-License-Identifier: MIT
/* libFuzzer target: arbitrary register access sequences plus guest-memory
 * contents against one device model (compiled once per device with
 * -DFUZZ_DEVICE="e1" etc.).
 *
 * Input: a sequence of 8-byte records {kind, off lo, off hi, v0, v1, v2, v3, x}:
 *   kind % 4 == 0: write32(off, v)        1: read32(off)
 *            == 2: step(v % 4096 cycles)  3: poke 4 bytes v at guest (off << 4 | x % 16)
 * Guest memory is mapped at [0, 1 MiB) only, so DMA anywhere else is a bus
 * error. Invariants checked after the sequence:
 *   - the device goes idle within a bound (1M cycles after the last access,
 *     else the model hangs);
 *   - no device write landed outside guest memory (the map guarantees it;
 *     the watch double-checks every beat);
 *   - reset returns every register of the table to its reset value.
 */
#include "npukit/npu.h"
#include "npukit/sim.h"
#include "fuzz_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef FUZZ_DEVICE
#define FUZZ_DEVICE "e1"
#endif

#define GUEST_SIZE (1u << 20)

static void watch(void *ctx, npk_access acc, uint64_t addr, size_t len, npk_bus_resp r) {
    (void)ctx;
    if (acc == NPK_ACC_WRITE && r == NPK_BUS_OK && (addr >= GUEST_SIZE || addr + len > GUEST_SIZE)) {
        fprintf(stderr, "device wrote outside guest memory at 0x%llx\n", (unsigned long long)addr);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    npk_sim *s = npk_sim_new(FUZZ_DEVICE, NULL);
    fz_cost_begin();
    if (!s) abort();
    npk_mem *m = npk_sim_mem(s);
    npk_mem_map(m, 0, GUEST_SIZE, 0, "ram");
    npk_mem_set_watch(m, watch, NULL);
    npk_dev *d = npk_sim_dev(s);
    const npk_dev_class *c = npk_sim_class(s);
    for (size_t i = 0; i + 8 <= size && i < 8 * 512; i += 8) {
        const uint8_t *r = data + i;
        uint32_t off = ((uint32_t)r[1] | (uint32_t)r[2] << 8) % c->mmio_size;
        uint32_t v = (uint32_t)r[3] | (uint32_t)r[4] << 8 | (uint32_t)r[5] << 16 | (uint32_t)r[6] << 24;
        switch (r[0] % 4) {
        case 0: d->ops->write32(d, off & ~3u, v); break;
        case 1: (void)d->ops->read32(d, off & ~3u); break;
        case 2: npk_sim_step(s, v % 4096); break;
        case 3: npk_mem_poke(m, ((uint64_t)off << 4 | (r[7] % 16)) % (GUEST_SIZE - 4), &v, 4); break;
        }
    }
    /* Every device must settle (or sit visibly stalled: idle() true) in bounded time.
     * Legal work can be long: a shell DMA_GATHER whose COUNT the input set to 526,848
     * list entries runs ~2.6M cycles (regressions/device_shell). After the exact
     * cycle-by-cycle first million, time advances in 1M-cycle steps (the models charge
     * a multi-cycle step at once) up to 2^36 cycles; a model that is still busy then
     * is hung (and a cycle-stepped one that hangs hits libFuzzer's timeout first). */
    npk_sim_run_until_idle(s, 1000000);
    for (uint64_t n = 0; !d->ops->idle(d) && n < (1ull << 36); n += 1u << 20) npk_sim_step(s, 1u << 20);
    if (!d->ops->idle(d)) {
        fprintf(stderr, "%s did not go idle within 2^36 cycles\n", FUZZ_DEVICE);
        abort();
    }
    return fz_finish(s);
}
