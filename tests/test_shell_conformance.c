// SPDX-License-Identifier: MIT
/* Conformance of the shell model to npu-shell-contract.md and shell-notes.md,
 * statement by statement. Every check quotes (or names) the sentence it
 * checks; expected values are worked out by hand from the documents (and, for
 * the choices the documents leave open, from docs/shell.md), never taken from
 * the model. The small naive loops below (gemm_ref_i8) are written here,
 * independently of the model and of src/ops. */
#include "test_shell_util.h"

#define RING 0x40000000ull
#define DATA 0x50000000ull
#define OUT 0x58000000ull

static uint64_t err_addr(npk_port *p) { return (uint64_t)reg(p, SHELL_ERROR_ADDR_HI) << 32 | reg(p, SHELL_ERROR_ADDR_LO); }

/* Write `bytes` of descriptors at ring offset 0, publish TAIL, ring the doorbell, run. */
static void submit(npk_port *p, const uint8_t *q, uint32_t bytes) {
    CHECK_EQ(npk_port_mem_write(p, RING, q, bytes), 0);
    wreg(p, SHELL_CQ_TAIL, bytes);
    wreg(p, SHELL_DOORBELL, 1);
    run_idle(p, 2000000);
}

static npk_port *fresh(const char *opts) {
    npk_port *p = open_shell(opts);
    setup_ring(p, RING, 4096);
    return p;
}

static void copy_desc(uint8_t *d, uint64_t src, uint64_t dst, uint32_t n) {
    hdr32(d, 0x01, 0, 1, 0);
    le64(d + 8, src);
    le64(d + 16, dst);
    le32(d + 24, n);
}

/* C[i][j] = sum_k A[i][k] * B[k][j], all row-major, int8 in, int32 out. */
static void gemm_ref_i8(int m, int n, int k, const int8_t *a, const int8_t *b, int32_t *c) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            int32_t s = 0;
            for (int kk = 0; kk < k; kk++) s += (int32_t)a[i * k + kk] * (int32_t)b[kk * n + j];
            c[i * n + j] = s;
        }
}

static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

int main(void) {
    /* ---- section 2: register map, reset values, access types ------------------------ */
    {
        npk_port *p = open_shell(NULL);
        /* "0x0000 VERSION [31:16] major, [15:0] minor": a v0.x shell (contract v0.1) */
        uint32_t v = reg(p, SHELL_VERSION);
        CHECK_EQ(v >> 16, 0);
        CHECK((v & 0xffff) >= 1);
        /* section 8 + notes 5 "advertise exactly what is implemented": all eight contract features are */
        CHECK_EQ(reg(p, SHELL_CAPABILITIES) & 0xff, 0xff);
        /* "bit 0: IDLE (1 when queue empty and no active work)"; BUSY and ERROR clear at reset */
        CHECK_EQ(reg(p, SHELL_STATUS) & 7, 1);
        /* every other register of the baseline map resets to 0 */
        static const uint32_t zero_regs[] = {SHELL_CONTROL,  SHELL_IRQ_STATUS, SHELL_IRQ_ENABLE, SHELL_CQ_BASE_LO,
                                             SHELL_CQ_BASE_HI, SHELL_CQ_SIZE,  SHELL_CQ_HEAD,    SHELL_CQ_TAIL,
                                             SHELL_ERROR_CODE, SHELL_ERROR_ADDR_LO, SHELL_ERROR_ADDR_HI};
        for (size_t i = 0; i < sizeof zero_regs / sizeof zero_regs[0]; i++) CHECK_EQ(reg(p, zero_regs[i]), 0);
        /* "CQ_BASE_LO/HI: command queue base, low/high 32 bits", "CQ_SIZE", "CQ_TAIL: host write index" are
         * host-written: they read back what was written */
        wreg(p, SHELL_CQ_BASE_LO, 0xdeadbee0u);
        wreg(p, SHELL_CQ_BASE_HI, 0x12345678u);
        wreg(p, SHELL_CQ_SIZE, 0x2000);
        wreg(p, SHELL_CQ_TAIL, 0x40);
        wreg(p, SHELL_IRQ_ENABLE, 7);
        CHECK_EQ(reg(p, SHELL_CQ_BASE_LO), 0xdeadbee0u);
        CHECK_EQ(reg(p, SHELL_CQ_BASE_HI), 0x12345678u);
        CHECK_EQ(reg(p, SHELL_CQ_SIZE), 0x2000);
        CHECK_EQ(reg(p, SHELL_CQ_TAIL), 0x40);
        CHECK_EQ(reg(p, SHELL_IRQ_ENABLE), 7);
        /* nothing was rung: writing TAIL alone starts nothing ("Host writes [DOORBELL] to notify new commands") */
        npk_port_wait(p, 1000);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 0);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        /* "CQ_HEAD: device read index": the host cannot move it while the device could be using it, and
         * VERSION / CAPABILITIES are read-only */
        wreg(p, SHELL_VERSION, 0xffffffffu);
        wreg(p, SHELL_CAPABILITIES, 0);
        CHECK_EQ(reg(p, SHELL_VERSION), v);
        CHECK_EQ(reg(p, SHELL_CAPABILITIES) & 0xff, 0xff);
        /* "bit 0: RESET (self-clearing reset pulse)": CONTROL reads back without it, registers are back at reset */
        wreg(p, SHELL_CONTROL, SHELL_CTRL_RESET);
        CHECK_EQ(reg(p, SHELL_CONTROL) & SHELL_CTRL_RESET, 0);
        CHECK_EQ(reg(p, SHELL_CQ_TAIL), 0);
        CHECK_EQ(reg(p, SHELL_IRQ_ENABLE), 0);
        CHECK_EQ(reg(p, SHELL_STATUS) & 7, 1);
        npk_port_close(p);
    }

    /* ---- 2.3 / 7: interrupts -------------------------------------------------------- */
    {
        npk_port *p = fresh(NULL);
        uint8_t q[64];
        /* "IRQ bit 1: EVENT_SIGNAL (event signaled with IRQ flag)", "IRQ bit 0: CQ_EMPTY (queue drained)" */
        hdr32(q, 0x20, 0x01, 1, 9);
        submit(p, q, 32);
        CHECK_EQ(reg(p, SHELL_IRQ_STATUS), SHELL_IRQ_EVENT | SHELL_IRQ_CQ_EMPTY);
        /* the line follows IRQ_ENABLE: nothing enabled, line low */
        CHECK_EQ(npk_port_irq(p, 0), 0);
        wreg(p, SHELL_IRQ_ENABLE, SHELL_IRQ_EVENT);
        CHECK_EQ(npk_port_irq(p, 0), 1);
        /* "IRQ_STATUS: Interrupt status (W1C)": writing 0 changes nothing, a 1 clears exactly that bit */
        wreg(p, SHELL_IRQ_STATUS, 0);
        CHECK_EQ(reg(p, SHELL_IRQ_STATUS), SHELL_IRQ_EVENT | SHELL_IRQ_CQ_EMPTY);
        wreg(p, SHELL_IRQ_STATUS, SHELL_IRQ_CQ_EMPTY);
        CHECK_EQ(reg(p, SHELL_IRQ_STATUS), SHELL_IRQ_EVENT);
        CHECK_EQ(npk_port_irq(p, 0), 1);
        wreg(p, SHELL_IRQ_STATUS, SHELL_IRQ_EVENT);
        CHECK_EQ(reg(p, SHELL_IRQ_STATUS), 0);
        CHECK_EQ(npk_port_irq(p, 0), 0);
        /* "EVENT_SIGNAL ... can raise IRQ if FLAGS[0]=1": FLAGS = 0xFE (bit 0 clear) raises no bit 1 */
        hdr32(q, 0x20, 0xfe, 1, 10);
        npk_port_mem_write(p, RING + 32, q, 32);
        wreg(p, SHELL_CQ_TAIL, 64);
        wreg(p, SHELL_DOORBELL, 1);
        run_idle(p, 100000);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 64);
        CHECK_EQ(reg(p, SHELL_IRQ_STATUS) & SHELL_IRQ_EVENT, 0);
        npk_port_close(p);
    }
    /* "On error, the device sets STATUS.ERROR, latches ERROR_CODE and ERROR_ADDR, and raises IRQ_ERROR if
     * enabled": disabled -> line stays low; enabling it afterwards asserts the (level) line */
    {
        npk_port *p = open_shell(NULL);
        const uint64_t ring = 0x100001000ull; /* above 4 GiB: ERROR_ADDR_HI carries bit 32 */
        setup_ring(p, ring, 4096);
        uint8_t q[64];
        hdr32(q, 0x30, 0, 1, 0);
        hdr32(q + 32, 0x7f, 0, 1, 0);
        npk_port_mem_write(p, ring, q, 64);
        wreg(p, SHELL_CQ_TAIL, 64);
        wreg(p, SHELL_DOORBELL, 1);
        run_idle(p, 100000);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0x0001); /* "0x0001: INVALID_OPCODE" */
        CHECK_EQ(reg(p, SHELL_ERROR_ADDR_LO), 0x00001020);
        CHECK_EQ(reg(p, SHELL_ERROR_ADDR_HI), 0x00000001);
        CHECK(reg(p, SHELL_STATUS) & 4); /* "bit 2: ERROR (1 when ERROR_CODE is non-zero)" */
        CHECK(reg(p, SHELL_IRQ_STATUS) & 4);
        CHECK_EQ(npk_port_irq(p, 0), 0);
        wreg(p, SHELL_IRQ_ENABLE, 1u << 2);
        CHECK_EQ(npk_port_irq(p, 0), 1);
        /* ERROR follows ERROR_CODE: once the code is cleared (docs: W1C, write the code back), bit 2 drops */
        wreg(p, SHELL_ERROR_CODE, 0x0001);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        CHECK_EQ(reg(p, SHELL_STATUS) & 4, 0);
        npk_port_close(p);
    }
    /* "ERROR_CODE: Sticky error code": a partial write never turns one code into another (a TIMEOUT, 5,
     * must not become ALIGNMENT_ERROR, 4, when the host writes 1) */
    {
        npk_port *p = fresh("event_timeout=1000");
        uint8_t q[32];
        hdr32(q, 0x21, 0, 1, 0x4242);
        submit(p, q, 32);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0x0005); /* "0x0005: TIMEOUT" */
        wreg(p, SHELL_ERROR_CODE, 1);
        uint32_t c = reg(p, SHELL_ERROR_CODE);
        CHECK(c == 5 || c == 0);
        wreg(p, SHELL_ERROR_CODE, 4);
        c = reg(p, SHELL_ERROR_CODE);
        CHECK(c == 5 || c == 0);
        wreg(p, SHELL_ERROR_CODE, 5);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        npk_port_close(p);
    }

    /* ---- 2.2 CONTROL: HALT / RESUME ----------------------------------------------------- */
    {
        npk_port *p = fresh(NULL);
        uint8_t src[64], got[64], q[32];
        for (int i = 0; i < 64; i++) src[i] = (uint8_t)(i * 3 + 1);
        npk_port_mem_write(p, DATA, src, 64);
        /* "bit 1: HALT (stop fetching new commands)" */
        wreg(p, SHELL_CONTROL, SHELL_CTRL_HALT);
        copy_desc(q, DATA, OUT, 64);
        npk_port_mem_write(p, RING, q, 32);
        wreg(p, SHELL_CQ_TAIL, 32);
        wreg(p, SHELL_DOORBELL, 1);
        npk_port_wait(p, 100000);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 0);
        npk_port_mem_read(p, OUT, got, 64);
        CHECK(memcmp(got, src, 64) != 0);
        CHECK_EQ(reg(p, SHELL_STATUS) & SHELL_STATUS_IDLE, 0); /* the queue is not empty */
        /* "bit 2: RESUME (clear HALT)" */
        wreg(p, SHELL_CONTROL, SHELL_CTRL_RESUME);
        run_idle(p, 100000);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 32);
        npk_port_mem_read(p, OUT, got, 64);
        CHECK(!memcmp(got, src, 64));
        CHECK_EQ(reg(p, SHELL_STATUS) & 7, 1);
        npk_port_close(p);
    }

    /* ---- 3: queue format ------------------------------------------------------------------ */
    /* "advances CQ_HEAD by each descriptor size": 64-byte + 96-byte GEMM (M=N=K=0 does nothing) + NOOP */
    {
        npk_port *p = fresh(NULL);
        uint8_t q[192];
        hdr32(q, 0x10, 0, 2, 0);
        le64(q + 8, DATA), le64(q + 16, DATA), le64(q + 24, OUT);
        hdr32(q + 64, 0x10, 0, 3, SHELL_GEMM_EXT_HAS_ALPHA);
        le64(q + 72, DATA), le64(q + 80, DATA), le64(q + 88, OUT);
        le32(q + 64 + 72, fbits(1.0f));
        hdr32(q + 160, 0x30, 0, 1, 0);
        submit(p, q, 192);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 192);
        /* "Queue empty when CQ_HEAD == CQ_TAIL": IDLE */
        CHECK_EQ(reg(p, SHELL_STATUS) & 7, 1);
        npk_port_close(p);
    }
    /* "Backward compatibility: unknown opcodes must raise INVALID_OPCODE" - every byte outside the ten
     * opcodes of 3.2, also with a header that would otherwise be bad (SIZE 0, reserved byte set) */
    {
        static const uint8_t known[] = {0x01, 0x02, 0x03, 0x04, 0x10, 0x11, 0x12, 0x20, 0x21, 0x30};
        int bad = 0;
        npk_port *p = fresh(NULL);
        for (unsigned op = 0; op < 256; op++) {
            if (memchr(known, (int)op, sizeof known)) continue;
            uint8_t q[32];
            hdr32(q, (uint8_t)op, 0, (uint8_t)(op % 3 == 0 ? 0 : 1), 0);
            if (op % 5 == 0) q[3] = 0xff;
            wreg(p, SHELL_CONTROL, SHELL_CTRL_RESET);
            setup_ring(p, RING, 4096);
            submit(p, q, 32);
            if (reg(p, SHELL_ERROR_CODE) != 0x0001 || err_addr(p) != RING || reg(p, SHELL_CQ_HEAD) != 0) {
                fprintf(stderr, "opcode 0x%02x: ERROR_CODE %u\n", op, reg(p, SHELL_ERROR_CODE));
                bad++;
            }
        }
        CHECK_EQ(bad, 0);
        /* "SIZE: Descriptor size in 32B units (fixed to 1 for v0.1)" and "RESERVED: Must be 0" for known
         * opcodes: BAD_DESCRIPTOR (0x0002) at the descriptor */
        static const uint8_t sized[][3] = {{0x30, 2, 0}, {0x20, 0, 0}, {0x21, 3, 0}, {0x11, 2, 0}, {0x12, 1, 1},
                                           {0x01, 4, 0}, {0x10, 4, 0}, {0x10, 0, 0}, {0x02, 1, 0x80}};
        for (size_t i = 0; i < sizeof sized / sizeof sized[0]; i++) {
            uint8_t q[128];
            memset(q, 0, sizeof q);
            q[0] = sized[i][0];
            q[2] = sized[i][1];
            q[3] = sized[i][2];
            wreg(p, SHELL_CONTROL, SHELL_CTRL_RESET);
            setup_ring(p, RING, 4096);
            submit(p, q, 128);
            CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0x0002);
            CHECK_EQ(err_addr(p), RING);
            CHECK_EQ(reg(p, SHELL_CQ_HEAD), 0);
        }
        npk_port_close(p);
    }

    /* ---- 4: DMA descriptors ----------------------------------------------------------------- */
    {
        npk_port *p = fresh(NULL);
        uint8_t src[256], got[256], q[32];
        for (int i = 0; i < 256; i++) src[i] = (uint8_t)(255 - i);
        npk_port_mem_write(p, DATA, src, 256);
        /* 4.1 DMA_COPY "Copies a contiguous byte range": SIZE = 100 bytes, byte 100 untouched */
        copy_desc(q, DATA, OUT, 100);
        le32(q + 28, 0xffffffffu); /* RESERVED word: not an operand */
        submit(p, q, 32);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        npk_port_mem_read(p, OUT, got, 101);
        CHECK(!memcmp(got, src, 100));
        CHECK_EQ(got[100], 0);
        npk_port_close(p);
    }
    {
        /* 4.2 DMA_STRIDED: ROW_BYTES=5 (24..25), ROWS=3 (26..27), SRC_STRIDE=64 (28), DST_STRIDE=32 (29), in
         * bytes as the reference mapper writes them (docs decision 10): row r from DATA + 64 r to OUT + 32 r */
        npk_port *p = fresh(NULL);
        uint8_t src[256], got[128], q[32];
        for (int i = 0; i < 256; i++) src[i] = (uint8_t)(i + 1);
        npk_port_mem_write(p, DATA, src, 256);
        hdr32(q, 0x02, 0, 1, 0);
        le64(q + 8, DATA), le64(q + 16, OUT);
        le16(q + 24, 5), le16(q + 26, 3);
        q[28] = 64, q[29] = 32;
        submit(p, q, 32);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        npk_port_mem_read(p, OUT, got, 128);
        uint8_t want[128] = {0};
        for (int r = 0; r < 3; r++)
            for (int b = 0; b < 5; b++) want[32 * r + b] = (uint8_t)(64 * r + b + 1);
        CHECK(!memcmp(got, want, 128));
        npk_port_close(p);
    }
    {
        /* 4.3 DMA_GATHER: LIST_ADDR (8..15), LIST_COUNT (16..19), ELEM_SIZE (20..23) "bytes per list entry";
         * entry "[0..7] base address, [8..11] size (bytes), [12..15] reserved"; local side at 24..31 (docs
         * decision 11). ELEM_SIZE = 24: the 8 bytes after each 16-byte entry are skipped */
        npk_port *p = fresh(NULL);
        uint8_t src[256], list[72], q[32], got[32];
        for (int i = 0; i < 256; i++) src[i] = (uint8_t)(i ^ 0x5a);
        npk_port_mem_write(p, DATA, src, 256);
        memset(list, 0xee, sizeof list);
        const uint32_t off[3] = {200, 7, 100}, len[3] = {3, 4, 2};
        for (int i = 0; i < 3; i++) {
            le64(list + 24 * i, DATA + off[i]);
            le32(list + 24 * i + 8, len[i]);
        }
        npk_port_mem_write(p, DATA + 0x1000, list, sizeof list);
        hdr32(q, 0x03, 0, 1, 0);
        le64(q + 8, DATA + 0x1000), le32(q + 16, 3), le32(q + 20, 24), le64(q + 24, OUT);
        submit(p, q, 32);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        npk_port_mem_read(p, OUT, got, 10);
        uint8_t want[10] = {src[200], src[201], src[202], src[7], src[8], src[9], src[10], src[100], src[101], 0};
        CHECK(!memcmp(got, want, 10));
        /* DMA_SCATTER: the same list, LOCAL = OUT split back out to DATA + 0x2000 + off */
        for (int i = 0; i < 3; i++) le64(list + 24 * i, DATA + 0x2000 + off[i]);
        npk_port_mem_write(p, DATA + 0x1000, list, sizeof list);
        hdr32(q, 0x04, 0, 1, 0);
        le64(q + 8, DATA + 0x1000), le32(q + 16, 3), le32(q + 20, 24), le64(q + 24, OUT);
        npk_port_mem_write(p, RING + 32, q, 32);
        wreg(p, SHELL_CQ_TAIL, 64);
        wreg(p, SHELL_DOORBELL, 1);
        run_idle(p, 100000);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        uint8_t s2[256];
        npk_port_mem_read(p, DATA + 0x2000, s2, 256);
        int ok = 1;
        for (int i = 0; i < 256; i++) {
            int in = (i >= 200 && i < 203) || (i >= 7 && i < 11) || (i >= 100 && i < 102);
            if (s2[i] != (in ? src[i] : 0)) ok = 0;
        }
        CHECK(ok);
        npk_port_close(p);
    }

    /* ---- 5.1 GEMM ------------------------------------------------------------------------------ */
    {
        npk_port *p = fresh(NULL);
        /* v0.1: "Sizes are packed in TAG (M in [31:20], N in [19:10], K in [9:0])", FLAGS 0 = INT8 row-major.
         * Non-square M=3 N=5 K=7 so a swapped field shows. */
        int8_t A[3 * 7], B[7 * 5];
        int32_t want[15], got[15];
        for (int i = 0; i < 21; i++) A[i] = (int8_t)(i * 7 % 23 - 11);
        for (int i = 0; i < 35; i++) B[i] = (int8_t)(i * 5 % 19 - 9);
        gemm_ref_i8(3, 5, 7, A, B, want);
        npk_port_mem_write(p, DATA, A, sizeof A);
        npk_port_mem_write(p, DATA + 0x100, B, sizeof B);
        uint8_t q[32];
        hdr32(q, 0x10, 0x00, 1, (3u << 20) | (5u << 10) | 7u);
        le64(q + 8, DATA), le64(q + 16, DATA + 0x100), le64(q + 24, OUT);
        submit(p, q, 32);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        npk_port_mem_read(p, OUT, got, sizeof got);
        CHECK(!memcmp(got, want, sizeof got));
        npk_port_close(p);
    }
    {
        /* all 12 bits of M: M = 1030, N = 1, K = 1 -> C[i] = 2 * A[i] */
        npk_port *p = fresh(NULL);
        static int8_t A[1030];
        static int32_t got[1030];
        for (int i = 0; i < 1030; i++) A[i] = (int8_t)(i % 7 - 3);
        int8_t B[1] = {2};
        npk_port_mem_write(p, DATA, A, sizeof A);
        npk_port_mem_write(p, DATA + 0x1000, B, 1);
        uint8_t q[32];
        hdr32(q, 0x10, 0x00, 1, (1030u << 20) | (1u << 10) | 1u);
        le64(q + 8, DATA), le64(q + 16, DATA + 0x1000), le64(q + 24, OUT);
        submit(p, q, 32);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        npk_port_mem_read(p, OUT, got, sizeof got);
        int ok = 1;
        for (int i = 0; i < 1030; i++) ok &= got[i] == 2 * (i % 7 - 3);
        CHECK(ok);
        /* all 10 bits of K: M = N = 1, K = 1000, A = 1, B[k] = k%3 - 1 -> 334 * -1 + 333 * 0 + 333 * 1 = -1 */
        static int8_t ones[1000], bk[1000];
        for (int i = 0; i < 1000; i++) ones[i] = 1, bk[i] = (int8_t)(i % 3 - 1);
        npk_port_mem_write(p, DATA, ones, 1000);
        npk_port_mem_write(p, DATA + 0x1000, bk, 1000);
        hdr32(q, 0x10, 0x00, 1, (1u << 20) | (1u << 10) | 1000u);
        le64(q + 8, DATA), le64(q + 16, DATA + 0x1000), le64(q + 24, OUT + 0x2000);
        npk_port_mem_write(p, RING + 32, q, 32);
        wreg(p, SHELL_CQ_TAIL, 64);
        wreg(p, SHELL_DOORBELL, 1);
        run_idle(p, 1000000);
        int32_t one;
        npk_port_mem_read(p, OUT + 0x2000, &one, 4);
        CHECK_EQ(one, -1);
        npk_port_close(p);
    }
    {
        /* "bits [7:4]: layout (0=ROW_MAJOR, 1=COL_MAJOR)": A = [[1,2],[3,4]] stored by columns {1,3,2,4},
         * B = [[5,6],[7,8]] stored {5,7,6,8}; C = [[19,22],[43,50]] stored by columns {19,43,22,50} */
        npk_port *p = fresh(NULL);
        int8_t A[4] = {1, 3, 2, 4}, B[4] = {5, 7, 6, 8};
        int32_t got[4];
        npk_port_mem_write(p, DATA, A, 4);
        npk_port_mem_write(p, DATA + 0x100, B, 4);
        uint8_t q[32];
        hdr32(q, 0x10, 0x10, 1, (2u << 20) | (2u << 10) | 2u);
        le64(q + 8, DATA), le64(q + 16, DATA + 0x100), le64(q + 24, OUT);
        submit(p, q, 32);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        npk_port_mem_read(p, OUT, got, sizeof got);
        CHECK_EQ(got[0], 19);
        CHECK_EQ(got[1], 43);
        CHECK_EQ(got[2], 22);
        CHECK_EQ(got[3], 50);
        npk_port_close(p);
    }
    {
        /* 5.1.2 v0.2 SIZE=2: M (32..35), N (36..39), K (40..43), LDA/LDB/LDC (44..55) "u32 bytes";
         * GEMM_EXT [31:16] USER_TAG is opaque. M=2 N=2 K=3, LDA=8, LDB=4, LDC=16 (padding holds junk) */
        npk_port *p = fresh(NULL);
        uint8_t a[16], b[12];
        memset(a, 0x77, sizeof a);
        memset(b, 0x66, sizeof b);
        const int8_t A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1};
        memcpy(a, A, 3), memcpy(a + 8, A + 3, 3);
        memcpy(b, B, 2), memcpy(b + 4, B + 2, 2), memcpy(b + 8, B + 4, 2);
        npk_port_mem_write(p, DATA, a, sizeof a);
        npk_port_mem_write(p, DATA + 0x100, b, sizeof b);
        uint8_t q[64];
        hdr32(q, 0x10, 0x00, 2, 0xbeef0000u);
        le64(q + 8, DATA), le64(q + 16, DATA + 0x100), le64(q + 24, OUT);
        le32(q + 32, 2), le32(q + 36, 2), le32(q + 40, 3);
        le32(q + 44, 8), le32(q + 48, 4), le32(q + 52, 16);
        le64(q + 56, 0x0123456789abcdefull); /* RESERVED (the mapper's op id) */
        submit(p, q, 64);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        int32_t c[8];
        npk_port_mem_read(p, OUT, c, sizeof c);
        /* [[1,2,3],[4,5,6]] x [[1,0],[0,1],[1,1]] = [[4,5],[10,11]]; row 1 at byte 16 */
        CHECK_EQ(c[0], 4);
        CHECK_EQ(c[1], 5);
        CHECK_EQ(c[2], 0); /* padding of C's first row is not written */
        CHECK_EQ(c[4], 10);
        CHECK_EQ(c[5], 11);
        npk_port_close(p);
    }
    {
        /* 5.1.3 SIZE=3: BIAS_ADDR (64..71), ALPHA fp32 (72..75), BETA fp32 (76..79), with HAS_BIAS, HAS_ALPHA,
         * HAS_BETA (GEMM_EXT bits 6, 7, 8). Order (docs 12): acc * alpha + beta * C_old + bias.
         * acc = [[4,5],[10,11]], alpha = 2, beta = 1, C_old = [[100,200],[-300,400]], bias = [1000,-1]
         * -> [[1108,209],[720,421]] (every step exact in fp32) */
        npk_port *p = fresh(NULL);
        const int8_t A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1};
        const int32_t cold[4] = {100, 200, -300, 400}, bias[2] = {1000, -1};
        npk_port_mem_write(p, DATA, A, 6);
        npk_port_mem_write(p, DATA + 0x100, B, 6);
        npk_port_mem_write(p, OUT, cold, sizeof cold);
        npk_port_mem_write(p, DATA + 0x200, bias, sizeof bias);
        uint8_t q[96];
        hdr32(q, 0x10, 0x00, 3, (1u << 6) | (1u << 7) | (1u << 8));
        le64(q + 8, DATA), le64(q + 16, DATA + 0x100), le64(q + 24, OUT);
        le32(q + 32, 2), le32(q + 36, 2), le32(q + 40, 3);
        le64(q + 64, DATA + 0x200);
        le32(q + 72, fbits(2.0f));
        le32(q + 76, fbits(1.0f));
        submit(p, q, 96);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        int32_t c[4];
        npk_port_mem_read(p, OUT, c, sizeof c);
        CHECK_EQ(c[0], 1108);
        CHECK_EQ(c[1], 209);
        CHECK_EQ(c[2], 720);
        CHECK_EQ(c[3], 421);
        /* "If any of {HAS_BIAS, HAS_ALPHA, HAS_BETA} is set, SIZE=3": with SIZE=2 the descriptor is bad */
        hdr32(q, 0x10, 0x00, 2, 1u << 6);
        le32(q + 32, 2), le32(q + 36, 2), le32(q + 40, 3);
        npk_port_mem_write(p, RING + 96, q, 64);
        wreg(p, SHELL_CQ_TAIL, 160);
        wreg(p, SHELL_DOORBELL, 1);
        run_idle(p, 100000);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0x0002);
        CHECK_EQ(err_addr(p), RING + 96);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 96);
        npk_port_close(p);
    }
    {
        /* 5.1.1 GEMM_EXT [3:0] EPILOGUE 1 = RELU; [4] TRANSPOSE_A: A stored K x M.
         * A^T stored [[1,3],[-2,4]] (K=2 x M=2) -> A = [[1,-2],[3,4]]; B = [[3,1],[4,0]]
         * A B = [[3-8, 1],[9+16, 3]] = [[-5,1],[25,3]] -> RELU [[0,1],[25,3]] */
        npk_port *p = fresh(NULL);
        const int8_t At[4] = {1, 3, -2, 4}, B[4] = {3, 1, 4, 0};
        npk_port_mem_write(p, DATA, At, 4);
        npk_port_mem_write(p, DATA + 0x100, B, 4);
        uint8_t q[64];
        hdr32(q, 0x10, 0x00, 2, 1u | (1u << 4));
        le64(q + 8, DATA), le64(q + 16, DATA + 0x100), le64(q + 24, OUT);
        le32(q + 32, 2), le32(q + 36, 2), le32(q + 40, 2);
        submit(p, q, 64);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        int32_t c[4];
        npk_port_mem_read(p, OUT, c, sizeof c);
        CHECK_EQ(c[0], 0);
        CHECK_EQ(c[1], 1);
        CHECK_EQ(c[2], 25);
        CHECK_EQ(c[3], 3);
        npk_port_close(p);
    }
    {
        /* "bits [3:0]: datatype (... 1=FP16 ...)": [1.5, 2] x [[2],[0.25]] = 3 + 0.5 = 3.5, C in fp32 (docs 12) */
        npk_port *p = fresh(NULL);
        uint8_t a[4], b[4];
        le16(a, 0x3e00), le16(a + 2, 0x4000);
        le16(b, 0x4000), le16(b + 2, 0x3400);
        npk_port_mem_write(p, DATA, a, 4);
        npk_port_mem_write(p, DATA + 0x100, b, 4);
        uint8_t q[32];
        hdr32(q, 0x10, 0x01, 1, (1u << 20) | (1u << 10) | 2u);
        le64(q + 8, DATA), le64(q + 16, DATA + 0x100), le64(q + 24, OUT);
        submit(p, q, 32);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        uint8_t c[4];
        npk_port_mem_read(p, OUT, c, 4);
        CHECK_EQ(get32(c), 0x40600000u);
        /* BF16 (2): [1.5, -2] . [4, 0.5] = 6 - 1 = 5.0 (0x40a00000) */
        le16(a, 0x3fc0), le16(a + 2, 0xc000);
        le16(b, 0x4080), le16(b + 2, 0x3f00);
        npk_port_mem_write(p, DATA, a, 4);
        npk_port_mem_write(p, DATA + 0x100, b, 4);
        hdr32(q, 0x10, 0x02, 1, (1u << 20) | (1u << 10) | 2u);
        le64(q + 8, DATA), le64(q + 16, DATA + 0x100), le64(q + 24, OUT);
        npk_port_mem_write(p, RING + 32, q, 32);
        wreg(p, SHELL_CQ_TAIL, 64);
        wreg(p, SHELL_DOORBELL, 1);
        run_idle(p, 100000);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        npk_port_mem_read(p, OUT, c, 4);
        CHECK_EQ(get32(c), 0x40a00000u);
        /* FP8 E4M3 (3): 0x40 = 2.0, 0x38 = 1.0, 0x30 = 0.5, 0xc4 = -3.0: 2*0.5 + 1*-3 = -2.0 (0xc0000000) */
        a[0] = 0x40, a[1] = 0x38;
        b[0] = 0x30, b[1] = 0xc4;
        npk_port_mem_write(p, DATA, a, 2);
        npk_port_mem_write(p, DATA + 0x100, b, 2);
        hdr32(q, 0x10, 0x03, 1, (1u << 20) | (1u << 10) | 2u);
        le64(q + 8, DATA), le64(q + 16, DATA + 0x100), le64(q + 24, OUT);
        npk_port_mem_write(p, RING + 64, q, 32);
        wreg(p, SHELL_CQ_TAIL, 96);
        wreg(p, SHELL_DOORBELL, 1);
        run_idle(p, 100000);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        npk_port_mem_read(p, OUT, c, 4);
        CHECK_EQ(get32(c), 0xc0000000u);
        npk_port_close(p);
    }

    /* ---- 5.2 VEC_OP / 5.3 SOFTMAX (with shell-notes.md encodings) -------------------------------- */
    {
        npk_port *p = fresh(NULL);
        /* notes: "FLAGS[3:0] = op: 0 relu ...  FLAGS[7:4] = dtype: 0 int8, 1 fp16"; bytes 8 src, 16 dst, 24 count.
         * int8 relu of {-16, 0, 16, 127, -128} -> {0, 0, 16, 127, 0} */
        const int8_t x[5] = {-16, 0, 16, 127, -128};
        npk_port_mem_write(p, DATA, x, 5);
        uint8_t q[64];
        hdr32(q, 0x11, 0x00, 1, 0);
        le64(q + 8, DATA), le64(q + 16, OUT), le32(q + 24, 5);
        /* fp16 relu (FLAGS 0x10) of {-2.0, 1.0} -> {+0, 1.0} */
        uint8_t h[4];
        le16(h, 0xc000), le16(h + 2, 0x3c00);
        npk_port_mem_write(p, DATA + 0x100, h, 4);
        hdr32(q + 32, 0x11, 0x10, 1, 0);
        le64(q + 40, DATA + 0x100), le64(q + 48, OUT + 0x100), le32(q + 56, 4);
        submit(p, q, 64);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        int8_t y[5];
        npk_port_mem_read(p, OUT, y, 5);
        CHECK_EQ(y[0], 0);
        CHECK_EQ(y[1], 0);
        CHECK_EQ(y[2], 16);
        CHECK_EQ(y[3], 127);
        CHECK_EQ(y[4], 0);
        uint8_t hy[4];
        npk_port_mem_read(p, OUT + 0x100, hy, 4);
        CHECK_EQ(hy[0] | hy[1] << 8, 0x0000);
        CHECK_EQ(hy[2] | hy[3] << 8, 0x3c00);
        npk_port_close(p);
    }
    {
        /* SOFTMAX 5.3: ROW_BYTES (24..25), ROWS (26..27). notes: "int8 input = signed logits, row-wise softmax,
         * each output element stored as unsigned Q0.7 in [0, 127] rounded to nearest independently (not
         * renormalised)". Row 0 = {0,0,0}: 127/3 = 42.33 -> 42 each (sum 126: not renormalised);
         * row 1 = {1,0,0}: e/(e+2) = 0.57612 -> 73.17 -> 73, 1/(e+2) = 0.21194 -> 26.92 -> 27 */
        npk_port *p = fresh(NULL);
        const int8_t x[6] = {0, 0, 0, 1, 0, 0};
        npk_port_mem_write(p, DATA, x, 6);
        uint8_t q[64];
        hdr32(q, 0x12, 0x00, 1, 0);
        le64(q + 8, DATA), le64(q + 16, OUT), le16(q + 24, 3), le16(q + 26, 2);
        /* "fp16 = IEEE half in and out" (FLAGS[7:4] = 1): {0, 0} -> 0.5 (0x3800) each; {0, -inf} -> {1, 0} */
        uint8_t h[8];
        le16(h, 0), le16(h + 2, 0), le16(h + 4, 0), le16(h + 6, 0xfc00);
        npk_port_mem_write(p, DATA + 0x100, h, 8);
        hdr32(q + 32, 0x12, 0x10, 1, 0);
        le64(q + 40, DATA + 0x100), le64(q + 48, OUT + 0x100), le16(q + 56, 4), le16(q + 58, 2);
        submit(p, q, 64);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        uint8_t y[6];
        npk_port_mem_read(p, OUT, y, 6);
        CHECK_EQ(y[0], 42);
        CHECK_EQ(y[1], 42);
        CHECK_EQ(y[2], 42);
        CHECK_EQ(y[3], 73);
        CHECK_EQ(y[4], 27);
        CHECK_EQ(y[5], 27);
        uint8_t hy[8];
        npk_port_mem_read(p, OUT + 0x100, hy, 8);
        CHECK_EQ(hy[0] | hy[1] << 8, 0x3800);
        CHECK_EQ(hy[2] | hy[3] << 8, 0x3800);
        CHECK_EQ(hy[4] | hy[5] << 8, 0x3c00);
        CHECK_EQ(hy[6] | hy[7] << 8, 0x0000);
        npk_port_close(p);
    }

    {
        /* notes: "VEC_OP FLAGS[3:0] = op: 0 relu, 1 add, 2 mul, 3 gelu, 4 softmax, 5 layernorm, 6 drelu, 7 dgelu,
         * 8 dsoftmax, 9 dlayernorm, 0xA sigmoid, 0xB tanh, 0xC hardsigmoid, 0xD hardtanh, 0xE relu6,
         * 0xF leakyrelu" and "The contract also names RMSNorm" (docs 13: VEC_EXT[7:0] = 1). One int8 vector
         * through every code: x = {-1, 1, 3, -3, 7, -8} in Q3.4 (docs 13), DST holds g = 2.0 for the binary and
         * backward ops; softmax takes raw logits and writes Q0.7, dsoftmax reads x as Q0.7. Expected values
         * worked out from the formulas of docs/shell.md 13 with a calculator (no result is within 0.02 of a
         * rounding tie). */
        static const int8_t x[6] = {-16, 16, 48, -48, 112, -128};
        static const int8_t want[17][6] = {
            {0, 16, 48, 0, 112, 0},       {16, 48, 80, -16, 127, -96},   {-32, 32, 96, -96, 127, -128},
            {-3, 13, 48, 0, 112, 0},      {0, 0, 0, 0, 127, 0},          {-3, 4, 11, -10, 24, -27},
            {0, 32, 32, 0, 32, 0},        {-3, 35, 32, 0, 32, 0},        {-5, 5, 14, -14, 32, -36},
            {0, 0, 0, 0, 0, 0},           {4, 12, 15, 1, 16, 0},         {-12, 12, 16, -16, 16, -16},
            {5, 11, 16, 0, 16, 0},        {-16, 16, 16, -16, 16, -16},   {0, 16, 48, 0, 96, 0},
            {0, 16, 48, 0, 112, -1},      {-3, 3, 10, -10, 24, -27}, /* RMSNorm */
        };
        npk_port *p = fresh(NULL);
        npk_port_mem_write(p, DATA, x, 6);
        static uint8_t q[17 * 32];
        const int8_t g[6] = {32, 32, 32, 32, 32, 32};
        for (int op = 0; op < 17; op++) {
            npk_port_mem_write(p, OUT + 16u * op, g, 6);
            hdr32(q + 32 * op, 0x11, (uint8_t)(op == 16 ? 0 : op), 1, 0);
            le64(q + 32 * op + 8, DATA), le64(q + 32 * op + 16, OUT + 16u * op), le32(q + 32 * op + 24, 6);
            if (op == 16) le32(q + 32 * op + 28, 1);
        }
        submit(p, q, sizeof q);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        for (int op = 0; op < 17; op++) {
            int8_t y[6];
            npk_port_mem_read(p, OUT + 16u * op, y, 6);
            int same = !memcmp(y, want[op], 6);
            CHECK(same);
            if (!same)
                fprintf(stderr, "VEC op %d: got %d %d %d %d %d %d\n", op, y[0], y[1], y[2], y[3], y[4], y[5]);
        }
        npk_port_close(p);
    }
    {
        /* "Mapper and perf sim should treat missing optional fields as defaults": SIZE=3 with HAS_BIAS only;
         * the ALPHA and BETA words hold 0.0 and 5.0 but their flags are clear, so alpha = 1, beta = 0 (C_old
         * not used). [1,2,3] . [1,0,1] = 4, + bias 10 = 14 */
        npk_port *p = fresh(NULL);
        const int8_t A[3] = {1, 2, 3}, B[3] = {1, 0, 1};
        const int32_t bias = 10, cold = 1000;
        npk_port_mem_write(p, DATA, A, 3);
        npk_port_mem_write(p, DATA + 0x100, B, 3);
        npk_port_mem_write(p, DATA + 0x200, &bias, 4);
        npk_port_mem_write(p, OUT, &cold, 4);
        uint8_t q[96];
        hdr32(q, 0x10, 0x00, 3, 1u << 6);
        le64(q + 8, DATA), le64(q + 16, DATA + 0x100), le64(q + 24, OUT);
        le32(q + 32, 1), le32(q + 36, 1), le32(q + 40, 3);
        le64(q + 64, DATA + 0x200);
        le32(q + 72, fbits(0.0f));
        le32(q + 76, fbits(5.0f));
        submit(p, q, 96);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        int32_t c;
        npk_port_mem_read(p, OUT, &c, 4);
        CHECK_EQ(c, 14);
        npk_port_close(p);
    }

    /* ---- 6: events ------------------------------------------------------------------------------- */
    {
        /* notes: "16-bit ID in TAG[15:0]": a signal with TAG 0x00010005 is event 5; a wait on 0x0105 is not 5 */
        npk_port *p = fresh("event_timeout=2000");
        uint8_t q[96];
        hdr32(q, 0x20, 0x00, 1, 0x00010005u);
        hdr32(q + 32, 0x21, 0x00, 1, 0x00000005u); /* satisfied */
        hdr32(q + 64, 0x21, 0x00, 1, 0x00000105u); /* never signalled: TIMEOUT at this descriptor */
        submit(p, q, 96);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0x0005);
        CHECK_EQ(err_addr(p), RING + 64);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 64); /* "EVENT_WAIT: stalls command processing" at the wait */
        npk_port_close(p);
        /* "Events are auto-cleared after a successful EVENT_WAIT": signal 7 once, wait twice */
        p = fresh("event_timeout=2000");
        hdr32(q, 0x20, 0x00, 1, 7);
        hdr32(q + 32, 0x21, 0x00, 1, 7);
        hdr32(q + 64, 0x21, 0x00, 1, 7);
        submit(p, q, 96);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0x0005);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 64);
        npk_port_close(p);
        /* the wait lets the queue continue once the event is signalled: a copy behind the wait runs */
        p = fresh("event_timeout=2000");
        uint8_t src[16] = "0123456789abcde", got[16];
        npk_port_mem_write(p, DATA, src, 16);
        hdr32(q, 0x20, 0x00, 1, 0xffff);
        hdr32(q + 32, 0x21, 0x00, 1, 0xffff);
        copy_desc(q + 64, DATA, OUT, 16);
        submit(p, q, 96);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 96);
        npk_port_mem_read(p, OUT, got, 16);
        CHECK(!memcmp(got, src, 16));
        npk_port_close(p);
    }

    /* ---- 7.1 the remaining codes ---------------------------------------------------------------- */
    {
        /* "0x0003: DMA_FAULT": a bus error on the copy's source; ERROR_ADDR = the faulting address */
        npk_port *p = fresh(NULL);
        npk_fault f;
        CHECK_EQ(npk_fault_parse("read@0x50000000+0x40=error", &f), 0);
        CHECK_EQ(npk_mem_add_fault(npk_sim_mem(npk_port_sim(p)), &f), 0);
        uint8_t q[32];
        copy_desc(q, DATA, OUT, 64);
        submit(p, q, 32);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0x0003);
        CHECK_EQ(err_addr(p), DATA);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 0);
        npk_port_close(p);
        /* "0x0004: ALIGNMENT_ERROR": "Each descriptor is 32 bytes, aligned to 32 bytes" - a ring base
         * that is not 32-byte aligned */
        p = open_shell(NULL);
        setup_ring(p, RING + 16, 4096);
        hdr32(q, 0x30, 0, 1, 0);
        npk_port_mem_write(p, RING + 16, q, 32);
        wreg(p, SHELL_CQ_TAIL, 32);
        wreg(p, SHELL_DOORBELL, 1);
        run_idle(p, 10000);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0x0004);
        CHECK_EQ(reg(p, SHELL_CQ_HEAD), 0);
        npk_port_close(p);
        /* a TAIL that is not a whole number of descriptors */
        p = fresh(NULL);
        npk_port_mem_write(p, RING, q, 32);
        wreg(p, SHELL_CQ_TAIL, 16);
        wreg(p, SHELL_DOORBELL, 1);
        run_idle(p, 10000);
        CHECK_EQ(reg(p, SHELL_ERROR_CODE), 0x0004);
        npk_port_close(p);
    }
    /* ---- the public encoders put every field where the contract's byte tables say ---------------- */
    {
        uint8_t d[96];
        /* 4.1: 8 SRC, 16 DST, 24 SIZE; header 0 OPCODE, 2 SIZE=1, 4 TAG */
        CHECK_EQ(npk_shell_enc_dma_copy(d, 0xa1b2c3d4u, 0x1122334455667788ull, 0x99aabbccddeeff00ull, 0x1000), 32);
        CHECK_EQ(d[0], 0x01);
        CHECK_EQ(d[2], 1);
        CHECK_EQ(d[3], 0);
        CHECK_EQ(get32(d + 4), 0xa1b2c3d4u);
        CHECK_EQ(get32(d + 8), 0x55667788u);
        CHECK_EQ(get32(d + 12), 0x11223344u);
        CHECK_EQ(get32(d + 16), 0xddeeff00u);
        CHECK_EQ(get32(d + 20), 0x99aabbccu);
        CHECK_EQ(get32(d + 24), 0x1000);
        /* 4.2: 24..25 ROW_BYTES, 26..27 ROWS, 28 SRC_STRIDE, 29 DST_STRIDE */
        npk_shell_enc_dma_strided(d, 0, 0, 0, 0x1234, 0x5678, 0x9a, 0xbc);
        CHECK_EQ(d[0], 0x02);
        CHECK_EQ(d[24] | d[25] << 8, 0x1234);
        CHECK_EQ(d[26] | d[27] << 8, 0x5678);
        CHECK_EQ(d[28], 0x9a);
        CHECK_EQ(d[29], 0xbc);
        /* 4.3: 8 LIST_ADDR, 16 LIST_COUNT, 20 ELEM_SIZE */
        npk_shell_enc_dma_list(d, SHELL_OP_DMA_SCATTER, 0, 0x100, 7, 16, 0x200);
        CHECK_EQ(d[0], 0x04);
        CHECK_EQ(get32(d + 8), 0x100);
        CHECK_EQ(get32(d + 16), 7);
        CHECK_EQ(get32(d + 20), 16);
        /* 5.1 v0.1: FLAGS [3:0] dtype, [7:4] layout; TAG = M[31:20] N[19:10] K[9:0]; 8 A, 16 B, 24 C */
        CHECK_EQ(npk_shell_enc_gemm_v1(d, SHELL_BF16, SHELL_COL_MAJOR, 64, 64, 64, 0x10, 0x20, 0x30), 32);
        CHECK_EQ(d[0], 0x10);
        CHECK_EQ(d[1], 0x12);
        CHECK_EQ(d[2], 1);
        CHECK_EQ(get32(d + 4), (64u << 20) | (64u << 10) | 64u);
        CHECK_EQ(get32(d + 8), 0x10);
        CHECK_EQ(get32(d + 16), 0x20);
        CHECK_EQ(get32(d + 24), 0x30);
        CHECK_EQ(npk_shell_enc_gemm_v1(d, 0, 0, 4096, 1, 1, 0, 0, 0), 0); /* M does not fit 12 bits */
        /* 5.1.2 / 5.1.3: SIZE 2 without, SIZE 3 with HAS_*; M 32, N 36, K 40, LDA 44, LDB 48, LDC 52,
         * BIAS 64, ALPHA 72, BETA 76; GEMM_EXT epilogue [3:0], TRANSPOSE_A [4], TRANSPOSE_B [5], HAS_* [6..8],
         * USER_TAG [31:16] */
        npk_shell_gemm_desc g;
        memset(&g, 0, sizeof g);
        g.dtype = SHELL_FP16, g.epilogue = SHELL_EPI_GELU, g.trans_b = 1, g.user_tag = 0xbeef;
        g.m = 3, g.n = 5, g.k = 7, g.lda = 14, g.ldb = 16, g.ldc = 20;
        CHECK_EQ(npk_shell_enc_gemm(d, &g), 64);
        CHECK_EQ(d[2], 2);
        CHECK_EQ(get32(d + 4), 0xbeef0000u | (1u << 5) | 2u);
        CHECK_EQ(get32(d + 32), 3);
        CHECK_EQ(get32(d + 36), 5);
        CHECK_EQ(get32(d + 40), 7);
        CHECK_EQ(get32(d + 44), 14);
        CHECK_EQ(get32(d + 48), 16);
        CHECK_EQ(get32(d + 52), 20);
        g.has_bias = 1, g.bias = 0x4000, g.has_alpha = 1, g.alpha = 0.5f, g.has_beta = 1, g.beta = -2.0f;
        CHECK_EQ(npk_shell_enc_gemm(d, &g), 96);
        CHECK_EQ(d[2], 3);
        CHECK_EQ(get32(d + 4) & 0x1ff, (1u << 8) | (1u << 7) | (1u << 6) | (1u << 5) | 2u);
        CHECK_EQ(get32(d + 64), 0x4000);
        CHECK_EQ(get32(d + 72), 0x3f000000u);
        CHECK_EQ(get32(d + 76), 0xc0000000u);
        /* notes: VEC_OP FLAGS[3:0] op, [7:4] dtype; SOFTMAX FLAGS[7:4] dtype, 24 ROW_BYTES, 26 ROWS */
        npk_shell_enc_vec(d, 0, SHELL_VEC_TANH, SHELL_BF16, 1, 2, 3, 0);
        CHECK_EQ(d[0], 0x11);
        CHECK_EQ(d[1], 0x2b);
        CHECK_EQ(get32(d + 24), 3);
        npk_shell_enc_softmax(d, 0, SHELL_FP16, 1, 2, 256, 3);
        CHECK_EQ(d[0], 0x12);
        CHECK_EQ(d[1], 0x10);
        CHECK_EQ(d[24] | d[25] << 8, 256);
        CHECK_EQ(d[26] | d[27] << 8, 3);
        /* 6 + notes: event id in TAG[15:0], FLAGS[0] = IRQ */
        npk_shell_enc_event(d, SHELL_OP_EVENT_SIGNAL, 0xabcd, 1);
        CHECK_EQ(d[0], 0x20);
        CHECK_EQ(d[1], 0x01);
        CHECK_EQ(get32(d + 4), 0xabcd);
        npk_shell_enc_event(d, SHELL_OP_EVENT_WAIT, 3, 0);
        CHECK_EQ(d[0], 0x21);
        CHECK_EQ(d[1], 0x00);
        CHECK_EQ(npk_shell_enc_noop(d, 5), 32);
        CHECK_EQ(d[0], 0x30);
        CHECK_EQ(d[2], 1);
    }
    return CHECK_DONE();
}
