// SPDX-License-Identifier: MIT
/* Every error code of the contract (INVALID_OPCODE, BAD_DESCRIPTOR, DMA_FAULT,
 * ALIGNMENT_ERROR, TIMEOUT), ERROR_ADDR, IRQ_ERROR, and the queue policy:
 * the queue stops at the faulting descriptor (HEAD points at it, nothing after
 * it runs); clearing ERROR_CODE and RESUME retry it; the driver can skip it. */
#include "test_shell_util.h"

#define RING 0x40000000ull
#define SRC 0x50000000ull
#define DST 0x50010000ull

typedef struct env {
    npk_port *p;
} env;

static npk_port *fresh(const char *opts) {
    npk_port *p = open_shell(opts);
    setup_ring(p, RING, 1024);
    wreg(p, SHELL_IRQ_ENABLE, SHELL_IRQ_ERROR);
    uint8_t data[256];
    for (int i = 0; i < 256; i++) data[i] = (uint8_t)i;
    npk_port_mem_write(p, SRC, data, sizeof data);
    return p;
}

/* Queue `n` 32-byte descriptors at offset 0 and run. */
static void submit(npk_port *p, const uint8_t *d, unsigned bytes) {
    npk_port_mem_write(p, RING, d, bytes);
    wreg(p, SHELL_CQ_TAIL, bytes);
    wreg(p, SHELL_DOORBELL, 1);
    run_idle(p, 200000);
}

static void copy_desc(uint8_t *d, uint64_t src, uint64_t dst, uint32_t n) {
    hdr32(d, 0x01, 0, 1, 0x77);
    le64(d + 8, src);
    le64(d + 16, dst);
    le32(d + 24, n);
}

static uint64_t err_addr(npk_port *p) { return (uint64_t)reg(p, SHELL_ERROR_ADDR_HI) << 32 | reg(p, SHELL_ERROR_ADDR_LO); }

/* the error state common to all codes; `after` = the copy queued behind it must not have run */
static void expect_error(npk_port *p, uint32_t code, uint64_t addr, uint32_t head, int after_check) {
    CHECK_EQ(reg(p, SHELL_ERROR_CODE), code);
    CHECK_EQ(err_addr(p), addr);
    CHECK_EQ(reg(p, SHELL_CQ_HEAD), head);
    uint32_t st = reg(p, SHELL_STATUS);
    CHECK(st & SHELL_STATUS_ERROR);
    CHECK(!(st & SHELL_STATUS_IDLE));
    CHECK(!(st & SHELL_STATUS_BUSY));
    CHECK(reg(p, SHELL_IRQ_STATUS) & SHELL_IRQ_ERROR);
    CHECK_EQ(npk_port_irq(p, 0), 1);
    if (after_check) {
        uint8_t got[16];
        npk_port_mem_read(p, DST + 0x1000, got, 16);
        static const uint8_t zero[16];
        CHECK(!memcmp(got, zero, 16));
    }
}

int main(void) {
    uint8_t q[128];
    /* Issue #13: a DMA whose destination reaches into the live ring (1 KiB at
     * RING) is DMA_FAULT at the first ring byte; the 32 bytes below the ring are
     * written, the ring is not (its descriptors stay intact), and the copy
     * queued behind it does not run. A GEMM writing C onto the ring likewise. */
    {
        npk_port *p = fresh(NULL);
        copy_desc(q, SRC, RING - 32, 64);
        copy_desc(q + 32, SRC, DST + 0x1000, 16);
        submit(p, q, 64);
        expect_error(p, SHELL_ERR_DMA_FAULT, RING, 0, 1);
        uint8_t got[32], ring0[32];
        npk_port_mem_read(p, RING - 32, got, 32);
        CHECK_EQ(got[31], 31);
        npk_port_mem_read(p, RING, ring0, 32);
        CHECK(!memcmp(ring0, q, 32));
        npk_port_close(p);

        p = fresh(NULL);
        hdr32(q, 0x10, 0, 1, (2u << 20) | (2u << 10) | 2u);
        le64(q + 8, SRC), le64(q + 16, SRC + 64), le64(q + 24, RING + 512);
        submit(p, q, 32);
        expect_error(p, SHELL_ERR_DMA_FAULT, RING + 512, 0, 0);
        npk_port_close(p);
    }
    /* INVALID_OPCODE: opcode 0x55, then a copy that must not run */
    {
        npk_port *p = fresh(NULL);
        copy_desc(q, SRC, DST, 16);
        hdr32(q + 32, 0x55, 0, 1, 0);
        copy_desc(q + 64, SRC, DST + 0x1000, 16);
        submit(p, q, 96);
        expect_error(p, SHELL_ERR_INVALID_OPCODE, RING + 32, 32, 1);
        uint8_t got[16];
        npk_port_mem_read(p, DST, got, 16);
        CHECK(got[5] == 5); /* the descriptor before it ran */
        /* recovery: replace it with a NOOP, clear, resume: the rest runs */
        hdr32(q + 32, 0x30, 0, 1, 0);
        npk_port_mem_write(p, RING + 32, q + 32, 32);
        wreg(p, SHELL_ERROR_CODE, SHELL_ERR_INVALID_OPCODE);
        wreg(p, SHELL_IRQ_STATUS, SHELL_IRQ_ERROR);
        CHECK_EQ(npk_port_irq(p, 0), 0);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        wreg(p, SHELL_CONTROL, SHELL_CTRL_RESUME);
        run_idle(p, 100000);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 96);
        CHECK_EQ(reg(p, SHELL_STATUS) & 7, SHELL_STATUS_IDLE);
        npk_port_mem_read(p, DST + 0x1000, got, 16);
        CHECK(got[15] == 15);
        npk_port_close(p);
    }
    /* BAD_DESCRIPTOR: SIZE 0; reserved header byte; SIZE 2 on a DMA; GEMM dtype 7; GEMM_EXT SHIFT without INT8_OUT;
     * VEC size not a multiple of the element; SOFTMAX reserved flags; TAIL in the middle of a 64-byte GEMM */
    {
        for (int v = 0; v < 8; v++) {
            npk_port *p = fresh(NULL);
            memset(q, 0, sizeof q);
            uint32_t tail = 64;
            switch (v) {
            case 0: hdr32(q, 0x01, 0, 0, 0); break;
            case 1: copy_desc(q, SRC, DST, 1), q[3] = 1; break;
            case 2: copy_desc(q, SRC, DST, 1), q[2] = 2; break;
            case 3: hdr32(q, 0x10, 0x07, 1, (1u << 20) | (1u << 10) | 1u); break;
            case 4: hdr32(q, 0x10, 0x00, 2, 1u << 10); le32(q + 32, 1), le32(q + 36, 1), le32(q + 40, 1); tail = 96; break;
            case 5: hdr32(q, 0x11, 0x10, 1, 0); le64(q + 8, SRC), le64(q + 16, DST), le32(q + 24, 3); break;
            case 6: hdr32(q, 0x12, 0x01, 1, 0); le64(q + 8, SRC), le64(q + 16, DST), le16(q + 24, 4), le16(q + 26, 1); break;
            case 7: hdr32(q, 0x10, 0x00, 2, 0); tail = 32; break;
            }
            if (v == 4) copy_desc(q + 64, SRC, DST + 0x1000, 16);
            else if (v != 7) copy_desc(q + 32, SRC, DST + 0x1000, 16);
            submit(p, q, tail);
            expect_error(p, SHELL_ERR_BAD_DESCRIPTOR, RING, 0, 1);
            npk_port_close(p);
        }
    }
    /* DMA_FAULT: a bus error on the 3rd read beat of the copy; ERROR_ADDR = that beat */
    {
        npk_port *p = fresh("beat=64");
        npk_fault f;
        CHECK_EQ(npk_fault_parse("read@0x50000000+0x1000#2=error", &f), 0);
        CHECK_EQ(npk_mem_add_fault(npk_sim_mem(npk_port_sim(p)), &f), 0);
        copy_desc(q, SRC, DST, 256);
        copy_desc(q + 32, SRC, DST + 0x1000, 16);
        submit(p, q, 64);
        expect_error(p, SHELL_ERR_DMA_FAULT, SRC + 128, 0, 1);
        npk_port_close(p);
        /* a write fault on an unmapped destination (memory map declared) */
        p = fresh(NULL);
        npk_mem *m = npk_sim_mem(npk_port_sim(p));
        CHECK_EQ(npk_mem_map(m, RING, 0x1000, 0, "ring"), 0);
        CHECK_EQ(npk_mem_map(m, SRC, 0x100, 0, "src"), 0);
        copy_desc(q, SRC, 0x60000000ull, 64);
        submit(p, q, 32);
        expect_error(p, SHELL_ERR_DMA_FAULT, 0x60000000ull, 0, 0);
        npk_port_close(p);
        /* a fault while fetching the descriptor itself */
        p = fresh(NULL);
        CHECK_EQ(npk_fault_parse("read@0x40000000+32=error", &f), 0);
        CHECK_EQ(npk_mem_add_fault(npk_sim_mem(npk_port_sim(p)), &f), 0);
        copy_desc(q, SRC, DST, 16);
        submit(p, q, 32);
        expect_error(p, SHELL_ERR_DMA_FAULT, RING, 0, 0);
        npk_port_close(p);
    }
    /* ALIGNMENT_ERROR: fp16 VEC_OP from an odd address; GEMM C not 4-aligned; misaligned ring base */
    {
        npk_port *p = fresh(NULL);
        hdr32(q, 0x11, 0x10, 1, 0);
        le64(q + 8, SRC + 1);
        le64(q + 16, DST);
        le32(q + 24, 4);
        copy_desc(q + 32, SRC, DST + 0x1000, 16);
        submit(p, q, 64);
        expect_error(p, SHELL_ERR_ALIGNMENT, SRC + 1, 0, 1);
        npk_port_close(p);
        p = fresh(NULL);
        hdr32(q, 0x10, 0x00, 1, (2u << 20) | (2u << 10) | 2u);
        le64(q + 8, SRC), le64(q + 16, SRC), le64(q + 24, DST + 2);
        submit(p, q, 32);
        expect_error(p, SHELL_ERR_ALIGNMENT, DST + 2, 0, 0);
        npk_port_close(p);
        p = fresh(NULL);
        setup_ring(p, RING + 8, 1024);
        copy_desc(q, SRC, DST, 16);
        npk_port_mem_write(p, RING + 8, q, 32);
        wreg(p, SHELL_CQ_TAIL, 32);
        wreg(p, SHELL_DOORBELL, 1);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), SHELL_ERR_ALIGNMENT);
        CHECK_EQ(err_addr(p), RING + 8);
        npk_port_close(p);
    }
    /* TIMEOUT: EVENT_WAIT on an event nobody signals; a bus beat that never answers */
    {
        npk_port *p = fresh("event_timeout=5000");
        hdr32(q, 0x21, 0, 1, 9);
        copy_desc(q + 32, SRC, DST + 0x1000, 16);
        npk_port_mem_write(p, RING, q, 64);
        wreg(p, SHELL_CQ_TAIL, 64);
        wreg(p, SHELL_DOORBELL, 1);
        npk_port_wait(p, 1000);
        uint32_t st = reg(p, SHELL_STATUS);
        CHECK(st & SHELL_STATUS_BUSY);
        CHECK(st & SHELL_STATUS_WAITING);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 0); /* HEAD shows the waiting descriptor */
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        run_idle(p, 100000);
        expect_error(p, SHELL_ERR_TIMEOUT, RING, 0, 1);
        npk_port_close(p);
        p = fresh("bus_timeout=3000");
        npk_fault f;
        CHECK_EQ(npk_fault_parse("write@0x50010040=hang", &f), 0);
        CHECK_EQ(npk_mem_add_fault(npk_sim_mem(npk_port_sim(p)), &f), 0);
        copy_desc(q, SRC, DST, 256);
        submit(p, q, 32);
        expect_error(p, SHELL_ERR_TIMEOUT, DST + 0x40, 0, 0);
        npk_port_close(p);
    }
    /* driver: decoded message, clear, skip */
    {
        npk_port *p = open_shell(NULL);
        npk_shell *sh;
        CHECK_EQ(npk_shell_open(&sh, p, NULL), 0);
        uint8_t d[64];
        hdr32(d, 0x55, 0, 1, 0x1234);
        copy_desc(d + 32, SRC, DST, 4);
        npk_port_mem_write(p, SRC, "abcd", 4);
        int rc = npk_shell_run(sh, d, 64, 100000);
        CHECK_EQ(rc, -NPK_EDEVICE);
        CHECK(strstr(npk_errmsg(), "INVALID_OPCODE") != NULL);
        CHECK(strstr(npk_errmsg(), "ring offset 0x0") != NULL);
        CHECK_EQ(npk_shell_clear_error(sh), 0);
        CHECK_EQ(npk_shell_skip(sh), 0);
        CHECK_EQ(npk_shell_resume(sh), 0);
        CHECK_EQ(npk_shell_wait(sh, 100000), 0);
        char got[5] = {0};
        npk_port_mem_read(p, DST, got, 4);
        CHECK_STR(got, "abcd");
        npk_shell_close(sh);
        npk_port_close(p);
    }
    return CHECK_DONE();
}
