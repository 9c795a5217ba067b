// SPDX-License-Identifier: MIT
/* libFuzzer target: the shell device's command queue with descriptor streams
 * built from the input (written against include/npukit/shell.h while the
 * shell model was being finished).
 *
 * Input: a fault rule, a ring choice, then descriptors until the input runs
 * out (at most 40): a selector byte picks DMA_COPY, DMA_STRIDED, DMA_GATHER /
 * DMA_SCATTER (the harness writes the entry list itself, in a list area no
 * descriptor writes), GEMM (v0.1),
 * VEC_OP, SOFTMAX, EVENT_SIGNAL / EVENT_WAIT, NOOP or an invalid opcode;
 * fields are mostly small with addresses inside the arena, sometimes raw.
 * The rest of the input fills the arena.
 *
 * Invariants (fuzz_util.h for the guard check):
 *   - DMA: only the ring, each descriptor's operand extents (packed GEMM
 *     matrices, DMA rows at their pitch, list entries and the bytes they
 *     name, the local buffer) are touched;
 *   - the device settles (bus and event timeouts bound every stall);
 *   - no error: STATUS.IDLE and CQ_HEAD == CQ_TAIL (every descriptor ran);
 *   - error: ERROR_CODE 1..5 with IRQ_STATUS.ERROR, CQ_HEAD at a descriptor
 *     (not consumed, != CQ_TAIL), ERROR_ADDR inside the ring for
 *     INVALID_OPCODE / BAD_DESCRIPTOR and inside a named range for DMA_FAULT;
 *   - CONTROL.RESET and power-on reset return every register to its reset
 *     value.
 * The device runs with its DMA limit scaled down to half the arena (LIMITS:
 * max_dma, docs/shell.md decision 15), so that both sides of it are reached.
 */
#include "fuzz_util.h"
#include "npukit/shell.h"

#define ARENA 0x400000ull
#define ARENA_SIZE 0x40000ull
#define RING ARENA
#define RING_BYTES 4096u
#define DATA (ARENA + 0x2000)
#define MAXD 40
#define LIMITS "max_dma=131072"

static const char DEV[] = "shell";

static uint32_t rd(npk_dev *d, uint32_t off) { return d->ops->read32(d, off); }
static void wr(npk_dev *d, uint32_t off, uint32_t v) { d->ops->write32(d, off, v); }

static uint64_t addr(fz_in *in, unsigned align) {
    uint16_t v = fz_u16(in);
    if ((v & 0xf000) == 0xf000) {
        uint64_t a = fz_u64(in);
        /* the ring and the list area are the harness's: a descriptor writing
         * there would change what later descriptors name */
        return a >= RING - 0x10000 && a < DATA ? DATA : a;
    }
    return DATA + ((uint64_t)(v & 0x3fff) * 8u & ~(uint64_t)(align - 1)) + ((v & 0x4000) ? 1 : 0);
}

static unsigned dtype_size(unsigned dt) { return dt == SHELL_FP16 || dt == SHELL_BF16 ? 2 : 1; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_in in = {data, size, 0};
    npk_sim *s = npk_sim_new("shell", LIMITS);
    fz_cost_begin();
    if (!s) abort();
    npk_mem *m = npk_sim_mem(s);
    npk_dev *d = npk_sim_dev(s);
    npk_mem_map(m, ARENA, ARENA_SIZE, 0, "arena");
    fz_guard g;
    fz_guard_init(&g, DEV);
    fz_name(&g, RING, RING_BYTES, "ring");
    int hang = 0;
    fz_fault(&in, m, &hang);
    uint8_t irq_en = fz_u8(&in);

    uint8_t ring[RING_BYTES];
    memset(ring, 0, sizeof ring);
    unsigned pos = 0, n = 0;
    uint64_t list_pos = ARENA + 0x1000;
    /* the data area first (lists below overwrite their part of it) */
    size_t left = size > 64 ? size / 2 : 0;
    if (left > ARENA_SIZE - (DATA - ARENA)) left = ARENA_SIZE - (DATA - ARENA);
    if (left) npk_mem_poke(m, DATA, data + size - left, left);
    size_t body_end = size - left;
    while (n < MAXD && in.pos + 4 < body_end && pos + 96 <= RING_BYTES - 32) {
        uint8_t desc[96];
        memset(desc, 0, sizeof desc);
        size_t len = 0;
        uint8_t sel = fz_u8(&in);
        switch ((sel & 0x7f) % 9) {
        case 0: {
            uint64_t src = addr(&in, 1), dst = addr(&in, 1);
            uint32_t bytes = (sel & 0x80) ? fz_u32(&in) : fz_u16(&in) % 4096u;
            len = npk_shell_enc_dma_copy(desc, n, src, dst, bytes);
            fz_name(&g, src, bytes, "copy src");
            fz_name(&g, dst, bytes, "copy dst");
            break;
        }
        case 1: {
            uint64_t src = addr(&in, 1), dst = addr(&in, 1);
            uint16_t rb = fz_u8(&in), rows = fz_u8(&in) % 16;
            uint8_t ss = fz_u8(&in), ds = fz_u8(&in);
            len = npk_shell_enc_dma_strided(desc, n, src, dst, rb, rows, ss, ds);
            fz_name_rows(&g, src, rows, ss ? ss : rb, rb, "strided src");
            fz_name_rows(&g, dst, rows, ds ? ds : rb, rb, "strided dst");
            break;
        }
        case 2: {
            unsigned op = (sel & 0x80) ? SHELL_OP_DMA_SCATTER : SHELL_OP_DMA_GATHER;
            uint32_t count = fz_u8(&in) % 6, es = 16u + 8u * (fz_u8(&in) % 3);
            /* lists live in their own area (ARENA + 4 KiB .. DATA), one after the other */
            uint64_t list = list_pos + ((sel & 0x40) ? 4 : 0), local = addr(&in, 1);
            if (list_pos + (uint64_t)count * es > DATA) count = 0;
            list_pos += ((uint64_t)count * es + 15) & ~15ull;
            uint64_t off = 0;
            for (uint32_t i = 0; i < count; i++) {
                uint64_t ea = addr(&in, 1);
                uint32_t eb = fz_u8(&in);
                uint8_t e[16];
                memset(e, 0, sizeof e);
                for (int k = 0; k < 8; k++) e[k] = (uint8_t)(ea >> (8 * k));
                for (int k = 0; k < 4; k++) e[8 + k] = (uint8_t)(eb >> (8 * k));
                npk_mem_poke(m, list + (uint64_t)i * es, e, 16);
                fz_name(&g, list + (uint64_t)i * es, 16, "list entry");
                fz_name(&g, ea, eb, "entry bytes");
                off += eb;
            }
            fz_name(&g, local, off, "local buffer");
            len = npk_shell_enc_dma_list(desc, op, n, list, count, es, local);
            break;
        }
        case 3: {
            unsigned dt = fz_u8(&in) % 4, layout = fz_u8(&in) % 2;
            uint32_t mm = 1 + fz_u8(&in) % 16, nn = 1 + fz_u8(&in) % 16, kk = 1 + fz_u8(&in) % 16;
            uint64_t a = addr(&in, 1), b = addr(&in, 1), c = addr(&in, 1);
            len = npk_shell_enc_gemm_v1(desc, dt, layout, mm, nn, kk, a, b, c);
            fz_name(&g, a, (uint64_t)mm * kk * dtype_size(dt), "gemm A");
            fz_name(&g, b, (uint64_t)kk * nn * dtype_size(dt), "gemm B");
            fz_name(&g, c, (uint64_t)mm * nn * 4u, "gemm C");
            break;
        }
        case 4: {
            unsigned op = fz_u8(&in) % 16, dt = fz_u8(&in) % 4;
            uint64_t src = addr(&in, 1), dst = addr(&in, 1);
            uint32_t bytes = fz_u16(&in) % 1024u;
            uint32_t ext = (sel & 0x80) ? SHELL_VEC_EXT(0, fz_u8(&in) % 64) : 0;
            len = npk_shell_enc_vec(desc, n, op, dt, src, dst, bytes, ext);
            fz_name(&g, src, bytes, "vec src");
            fz_name(&g, dst, bytes, "vec dst");
            break;
        }
        case 5: {
            unsigned dt = fz_u8(&in) % 4;
            uint64_t src = addr(&in, 1), dst = addr(&in, 1);
            uint16_t rb = (uint16_t)(fz_u8(&in) * 2u), rows = fz_u8(&in) % 8;
            len = npk_shell_enc_softmax(desc, n, dt, src, dst, rb, rows);
            fz_name(&g, src, (uint64_t)rb * rows, "softmax src");
            fz_name(&g, dst, (uint64_t)rb * rows, "softmax dst");
            break;
        }
        case 6:
            len = npk_shell_enc_event(desc, (sel & 0x80) ? SHELL_OP_EVENT_WAIT : SHELL_OP_EVENT_SIGNAL,
                                      fz_u8(&in) % 4, sel & 0x40);
            break;
        case 7: len = npk_shell_enc_noop(desc, n); break;
        default: /* an opcode outside the contract, or a bad header */
            len = npk_shell_enc_noop(desc, n);
            if (sel & 0x80) desc[0] = 0x77;
            else desc[3] = 1;
            break;
        }
        if (!len) continue;
        memcpy(ring + pos, desc, len);
        pos += (unsigned)len;
        n++;
    }
    npk_mem_poke(m, RING, ring, RING_BYTES);
    npk_mem_set_watch(m, fz_watch, &g);
    wr(d, SHELL_IRQ_ENABLE, irq_en & 7);
    wr(d, SHELL_CQ_BASE_LO, (uint32_t)RING);
    wr(d, SHELL_CQ_BASE_HI, (uint32_t)(RING >> 32));
    wr(d, SHELL_CQ_SIZE, RING_BYTES);
    wr(d, SHELL_CQ_TAIL, pos);
    wr(d, SHELL_DOORBELL, 1);
    for (int i = 0; i < 4096 && !d->ops->idle(d); i++) npk_sim_step(s, 1u << 16);
    if (!d->ops->idle(d)) fz_fail(DEV, "did not settle within 256M cycles");
    uint32_t st = rd(d, SHELL_STATUS), head = rd(d, SHELL_CQ_HEAD), code = rd(d, SHELL_ERROR_CODE);
    if (getenv("NPK_FUZZ_VERBOSE"))
        fprintf(stderr, "shell_ring: %u descriptors in %u bytes, STATUS 0x%x, HEAD %u, ERROR_CODE %u, %llu beats\n", n,
                pos, st, head, code, (unsigned long long)g.beats);
    if (!(st & SHELL_STATUS_ERROR)) {
        FZ_ASSERT(DEV, code == 0);
        FZ_ASSERT(DEV, head == pos);
        FZ_ASSERT(DEV, st & SHELL_STATUS_IDLE);
    } else {
        uint64_t ea = rd(d, SHELL_ERROR_ADDR_LO) | (uint64_t)rd(d, SHELL_ERROR_ADDR_HI) << 32;
        FZ_ASSERT(DEV, code >= SHELL_ERR_INVALID_OPCODE && code <= SHELL_ERR_TIMEOUT);
        FZ_ASSERT(DEV, rd(d, SHELL_IRQ_STATUS) & SHELL_IRQ_ERROR);
        FZ_ASSERT(DEV, head != pos && head < pos);
        if (code == SHELL_ERR_INVALID_OPCODE || code == SHELL_ERR_BAD_DESCRIPTOR)
            FZ_ASSERT(DEV, ea >= RING && ea < RING + RING_BYTES);
        if (code == SHELL_ERR_DMA_FAULT) FZ_ASSERT(DEV, fz_named(&g, ea, 1));
    }
    /* CONTROL.RESET: every register to its reset value */
    wr(d, SHELL_CONTROL, SHELL_CTRL_RESET);
    fz_check_regs(d, "CONTROL.RESET");
    return fz_finish(s);
}
