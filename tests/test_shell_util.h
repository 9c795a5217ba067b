// SPDX-License-Identifier: MIT
/* Helpers shared by the shell tests: an in-process shell behind a port, raw
 * MMIO, little-endian packing written independently of src/rt/shell_desc.c,
 * a descriptor log recorder, and deterministic random data. */
#ifndef NPUKIT_TEST_SHELL_UTIL_H
#define NPUKIT_TEST_SHELL_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "npukit/npu.h"
#include "npukit/shell.h"
#include "npukit/sim.h"

static uint32_t rng_state = 12345;
static inline uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}
static inline void fill_rand(void *p, size_t n) {
    for (size_t i = 0; i < n; i++) ((uint8_t *)p)[i] = (uint8_t)rnd();
}

static inline void le16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void le64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* A 32-byte header: opcode, flags, size, tag. */
static inline void hdr32(uint8_t *d, uint8_t op, uint8_t flags, uint8_t size, uint32_t tag) {
    memset(d, 0, 32u * size);
    d[0] = op;
    d[1] = flags;
    d[2] = size;
    le32(d + 4, tag);
}

static inline uint32_t reg(npk_port *p, uint32_t off) {
    uint32_t v = 0xdeadbeef;
    CHECK_EQ(npk_port_read32(p, off, &v), 0);
    return v;
}
static inline void wreg(npk_port *p, uint32_t off, uint32_t v) { CHECK_EQ(npk_port_write32(p, off, v), 0); }

/* Let the device run until STATUS shows IDLE or ERROR, or budget cycles pass.
 * Returns the cycles waited. */
static inline uint64_t run_idle(npk_port *p, uint64_t budget) {
    uint64_t w = 0;
    while (w < budget) {
        uint32_t st = reg(p, SHELL_STATUS);
        if (st & (SHELL_STATUS_IDLE | SHELL_STATUS_ERROR)) {
            if (!(st & SHELL_STATUS_BUSY)) break;
        }
        uint64_t n = budget - w < 256 ? budget - w : 256;
        npk_port_wait(p, n);
        w += n;
    }
    return w;
}

/* Ring at `ring` of `size` bytes; write descriptors at offset, set TAIL, doorbell. */
static inline void setup_ring(npk_port *p, uint64_t ring, uint32_t size) {
    wreg(p, SHELL_CQ_BASE_LO, (uint32_t)ring);
    wreg(p, SHELL_CQ_BASE_HI, (uint32_t)(ring >> 32));
    wreg(p, SHELL_CQ_SIZE, size);
}

typedef struct logrec {
    npk_shell_log e[256];
    int n;
} logrec;
static inline void log_cb(void *ctx, const npk_shell_log *e) {
    logrec *l = ctx;
    if (l->n < 256) l->e[l->n++] = *e;
}

static inline npk_port *open_shell(const char *opts) {
    npk_port *p = NULL;
    int rc = npk_port_open(&p, "sim", "shell", opts);
    if (rc) {
        fprintf(stderr, "open: %s\n", npk_errmsg());
        exit(1);
    }
    return p;
}

#endif
