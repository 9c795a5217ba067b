// SPDX-License-Identifier: MIT
/* libFuzzer target: the v0 descriptor queue, reached deep.
 *
 * The generic register fuzzer (fuzz_device.c) rarely builds a committed ring
 * of well-formed descriptors; this target does it by construction. The input
 * is decoded into a device setup and a list of descriptors:
 *
 *   header  ring length (2..256), CTRL bits (fallback select, irq enable),
 *           IRQ_MASK, an optional TENSOR_MEM window, an optional injected
 *           fault (bus error or hang on the Nth read/write beat), an optional
 *           bad doorbell (overflow)
 *   each descriptor (15 bytes): opcode (mostly the documented ones, sometimes
 *           a raw 16-bit value), flags, shapes (mostly small so that each
 *           input runs in microseconds, sometimes raw 32-bit values that the
 *           envelope must reject), tensor addresses (16-byte aligned inside
 *           the arena, sometimes misaligned or anywhere in the 64-bit space),
 *           strides (the minimum row rounded to 16 plus a few lines, or raw),
 *           conv/pool parameters
 *   the rest of the input: guest memory contents of the arena
 *
 * The descriptors are written into the ring, the doorbell commits them, and
 * the device runs until it settles; unsupported ops are retired for the CPU
 * the way the fallback handler does (dismiss + DESC_TAIL write) when the
 * fallback path is selected. Invariants:
 *   - DMA: every beat lies in a range a committed descriptor names (its ring
 *     slot, its A/B/C tensor extents); all else is guard (fuzz_util.h);
 *   - every descriptor ends retired (DESC_TAIL passed it, COMPLETION_TAG of
 *     the last one) or reported (STATUS.error with err_code in 0x01..0x08,
 *     ERR_DESC_INDEX == DESC_TAIL == its slot, the IRQ_STATUS class bits of
 *     the code, ERR_FAULT_ADDR inside a named range for bus errors), or the
 *     device sits visibly stalled on a hung beat (only when a hang was
 *     injected);
 *   - an unsupported-op code equals the documented validation of that
 *     descriptor (npk_v0_validate);
 *   - CTRL.flush always returns the queue to empty, not busy, no error;
 *   - reset returns every register to its reset value.
 */
#include "fuzz_util.h"
#include "npukit/v0.h"

#define ARENA 0x100000ull
#define ARENA_SIZE 0x40000ull /* 256 KiB: tensors of the small shapes fit */
#define RING ARENA            /* ring slots at the arena's start */
#define DATA (ARENA + 0x4000) /* tensors after the ring (256 slots * 64 = 16 KiB) */
#define MAXD 24

static const char DEV[] = "v0";

static uint32_t dim(fz_in *in, uint32_t small) {
    uint16_t v = fz_u16(in);
    if (v & 0x8000) return (v & 0x4000) ? fz_u32(in) : (uint32_t)(v & 0x3fff); /* wild: the envelope decides */
    return v % (small + 1);
}

static uint64_t addr(fz_in *in) {
    uint16_t v = fz_u16(in);
    if ((v & 0xc000) == 0xc000) return fz_u64(in); /* anywhere */
    uint64_t a = DATA + (uint64_t)(v & 0x0fff) * 16u;
    if (v & 0x1000) a += v >> 13; /* misaligned */
    return a;
}

static uint32_t stride(fz_in *in, uint64_t row) {
    uint8_t v = fz_u8(in);
    if (v == 0xff) return fz_u32(in);
    return (uint32_t)(((row + 15) & ~15ull) + 16u * (v % 4)) + ((v & 0x80) ? 4u : 0u);
}

static uint32_t rd(npk_dev *d, uint32_t off) { return d->ops->read32(d, off); }
static void wr(npk_dev *d, uint32_t off, uint32_t v) { d->ops->write32(d, off, v); }

/* Name every range descriptor d may touch. */
static void name_desc(fz_guard *g, const npk_v0_desc *d) {
    uint64_t a = npk_v0_desc_addr(d, NPK_V0_W_A_LO), b = npk_v0_desc_addr(d, NPK_V0_W_B_LO),
             c = npk_v0_desc_addr(d, NPK_V0_W_C_LO);
    uint64_t sa = d->w[NPK_V0_W_A_STRIDE], sb = d->w[NPK_V0_W_B_STRIDE], sc = d->w[NPK_V0_W_C_STRIDE];
    switch (npk_v0_desc_op(d)) {
    case NPK_V0_OP_MATMUL_S8:
    case NPK_V0_OP_MATMUL_S8_RELU: {
        uint64_t M = d->w[1], N = d->w[2], K = d->w[3];
        fz_name_rows(g, a, M, sa, K, "matmul A");
        fz_name_rows(g, b, K, sb, N, "matmul B");
        fz_name_rows(g, c, M, sc, 4 * N, "matmul C");
        break;
    }
    case NPK_V0_OP_CONV2D_S8:
    case NPK_V0_OP_CONV2D_S8_RELU: {
        npk_v0_conv cv;
        uint32_t oh = 0, ow = 0;
        npk_v0_desc_get_conv(d, &cv);
        if (npk_v0_conv_out(&cv, &oh, &ow)) break;
        fz_name_rows(g, a, cv.h, sa, (uint64_t)cv.w * cv.cin, "conv input");
        fz_name_rows(g, b, (uint64_t)cv.ksize * cv.ksize * cv.cin, sb, cv.cout, "conv weights");
        fz_name_rows(g, c, oh, sc, (uint64_t)ow * cv.cout, "conv output");
        break;
    }
    case NPK_V0_OP_RELU:
        fz_name_rows(g, a, d->w[1], sa, d->w[2], "relu A");
        fz_name_rows(g, c, d->w[1], sc, d->w[2], "relu C");
        break;
    case NPK_V0_OP_MAXPOOL_S8: {
        npk_v0_pool p;
        uint32_t oh = 0, ow = 0;
        npk_v0_desc_get_pool(d, &p);
        if (npk_v0_pool_out(&p, &oh, &ow)) break;
        fz_name_rows(g, a, p.h, sa, (uint64_t)p.w * p.c, "pool input");
        fz_name_rows(g, c, oh, sc, (uint64_t)ow * p.c, "pool output");
        break;
    }
    default: break;
    }
}

static npk_v0_desc build(fz_in *in, uint32_t tag) {
    static const uint32_t ops[] = {NPK_V0_OP_NOP,       NPK_V0_OP_MATMUL_S8, NPK_V0_OP_MATMUL_S8_RELU,
                                   NPK_V0_OP_CONV2D_S8, NPK_V0_OP_CONV2D_S8_RELU, NPK_V0_OP_RELU,
                                   NPK_V0_OP_MAXPOOL_S8, NPK_V0_OP_BARRIER, NPK_V0_OP_FALLBACK};
    npk_v0_desc d;
    memset(&d, 0, sizeof d);
    uint8_t sel = fz_u8(in), fl = fz_u8(in);
    uint32_t op = sel < 0xf0 ? ops[sel % 9] : fz_u16(in);
    uint32_t flags = (fl & 0x80) ? (uint32_t)fz_u16(in) : (NPK_V0_F_SIGNED | (fl & 0x0d));
    d.w[0] = op | flags << 16;
    d.w[NPK_V0_W_TAG] = tag;
    uint64_t a = addr(in), b = addr(in), c = addr(in);
    if (c < RING + 0x4000 && c + (1ull << 24) > RING) c = DATA; /* an output over the ring would rewrite later
                                                                   descriptors; the harness avoids it */
    npk_v0_desc_set_addr(&d, NPK_V0_W_A_LO, a);
    npk_v0_desc_set_addr(&d, NPK_V0_W_B_LO, b);
    npk_v0_desc_set_addr(&d, NPK_V0_W_C_LO, c);
    switch (op) {
    case NPK_V0_OP_MATMUL_S8:
    case NPK_V0_OP_MATMUL_S8_RELU: {
        uint32_t M = dim(in, 20), N = dim(in, 20), K = dim(in, 40);
        d.w[1] = M, d.w[2] = N, d.w[3] = K;
        d.w[10] = stride(in, K), d.w[11] = stride(in, N), d.w[12] = stride(in, 4ull * N);
        break;
    }
    case NPK_V0_OP_CONV2D_S8:
    case NPK_V0_OP_CONV2D_S8_RELU: {
        uint32_t h = dim(in, 10), w = dim(in, 10), cin = dim(in, 6), cout = dim(in, 6);
        uint8_t k = fz_u8(in), p = fz_u8(in);
        uint32_t ks = (k & 0x80) ? k : (uint32_t)(1 + 2 * ((k & 3) % 3));
        d.w[1] = h | w << 16, d.w[2] = cout, d.w[3] = ks | cin << 16;
        d.w[13] = (p & 0x80) ? fz_u32(in) : npk_v0_conv_params(1 + (p & 1), 1 + ((p >> 1) & 1), (p >> 2) & 3,
                                                                (p >> 4) & 3, 1 + ((p >> 6) & 1));
        d.w[10] = stride(in, (uint64_t)w * cin), d.w[11] = stride(in, cout), d.w[12] = stride(in, (uint64_t)w * cout);
        break;
    }
    case NPK_V0_OP_RELU: {
        uint32_t M = dim(in, 20), N = dim(in, 64);
        d.w[1] = M, d.w[2] = N;
        d.w[10] = stride(in, N), d.w[12] = stride(in, N);
        break;
    }
    case NPK_V0_OP_MAXPOOL_S8: {
        uint32_t h = dim(in, 12), w = dim(in, 12), ch = dim(in, 8);
        uint8_t p = fz_u8(in);
        d.w[1] = h | w << 16, d.w[2] = ch;
        d.w[14] = (p & 0x80) ? fz_u32(in) : npk_v0_pool_params(2 + (p & 1), 2 + ((p >> 1) & 1), 1 + ((p >> 2) & 1),
                                                                (p >> 3) & 1);
        d.w[10] = stride(in, (uint64_t)w * ch), d.w[12] = stride(in, (uint64_t)w * ch);
        break;
    }
    default:
        if (sel >= 0xf0) /* raw words for an unknown opcode */
            for (int i = 1; i < 15; i++) d.w[i] = fz_u32(in);
        break;
    }
    return d;
}

/* Step until the device settles (no descriptor can make progress). */
static void settle(npk_sim *s) {
    npk_dev *d = npk_sim_dev(s);
    for (int i = 0; i < 4096 && !d->ops->idle(d); i++) npk_sim_step(s, 1u << 20);
    if (!d->ops->idle(d)) fz_fail(DEV, "the device did not settle within 4G cycles");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_in in = {data, size, 0};
    npk_sim *s = npk_sim_new("v0", NULL);
    fz_cost_begin();
    if (!s) abort();
    npk_mem *m = npk_sim_mem(s);
    npk_dev *d = npk_sim_dev(s);
    npk_mem_map(m, ARENA, ARENA_SIZE, 0, "arena");
    fz_guard g;
    fz_guard_init(&g, DEV);

    /* header */
    uint8_t h0 = fz_u8(&in), h1 = fz_u8(&in), h2 = fz_u8(&in);
    uint32_t ring = 1u << (1 + h0 % 8);
    uint32_t ctrl = NPK_V0_CTRL_ENABLE | ((h1 & 1) ? NPK_V0_CTRL_FALLBACK : 0) | ((h1 & 2) ? NPK_V0_CTRL_IRQ_ENABLE : 0);
    int fallback = (h1 & 1) != 0;
    if (h1 & 4) { /* TENSOR_MEM window */
        uint64_t wb = DATA + (uint64_t)fz_u16(&in) * 16;
        wr(d, NPK_V0_REG_TENSOR_MEM_BASE_LO, (uint32_t)wb);
        wr(d, NPK_V0_REG_TENSOR_MEM_BASE_HI, (uint32_t)(wb >> 32));
        wr(d, NPK_V0_REG_TENSOR_MEM_LEN, fz_u16(&in) * 16u + 1);
    }
    wr(d, NPK_V0_REG_IRQ_MASK, h2 & NPK_V0_IRQ_ALL);
    int hang = 0;
    fz_fault(&in, m, &hang);
    unsigned n = 1 + fz_u8(&in) % MAXD;
    if (n > ring - 1) n = ring - 1;
    int overflow = (h1 & 8) != 0;

    npk_v0_desc ds[MAXD];
    for (unsigned i = 0; i < n; i++) {
        ds[i] = build(&in, 1000 + i);
        uint8_t img[64];
        npk_v0_desc_pack(&ds[i], img);
        npk_mem_poke(m, RING + 64ull * i, img, 64);
        fz_name(&g, RING + 64ull * i, 64, "ring slot");
        name_desc(&g, &ds[i]);
    }
    /* the rest of the input is tensor data */
    size_t left = fz_left(&in);
    if (left > ARENA_SIZE - (DATA - ARENA)) left = ARENA_SIZE - (DATA - ARENA);
    if (left) npk_mem_poke(m, DATA, data + in.pos, left);

    npk_mem_set_watch(m, fz_watch, &g);
    wr(d, NPK_V0_REG_DESC_BASE_LO, (uint32_t)RING);
    wr(d, NPK_V0_REG_DESC_BASE_HI, (uint32_t)(RING >> 32));
    wr(d, NPK_V0_REG_DESC_RING_LEN, ring);
    FZ_ASSERT(DEV, rd(d, NPK_V0_REG_DESC_RING_LEN) == ring);
    wr(d, NPK_V0_REG_CTRL, ctrl);
    wr(d, NPK_V0_REG_DESC_DOORBELL, overflow ? ring : n);
    if (overflow) { /* beyond the ring: err 0x07, nothing committed */
        uint32_t st = rd(d, NPK_V0_REG_STATUS);
        FZ_ASSERT(DEV, (st & NPK_V0_ST_ERROR) && npk_v0_st_errcode(st) == NPK_V0_ERR_OVERFLOW);
        FZ_ASSERT(DEV, rd(d, NPK_V0_REG_IRQ_STATUS) & NPK_V0_IRQ_QUEUE_OVERFLOW);
        FZ_ASSERT(DEV, npk_v0_st_qlevel(st) == 0);
        n = 0;
    }

    unsigned retired = 0, cpu_retired = 0;
    for (;;) {
        settle(s);
        uint32_t st = rd(d, NPK_V0_REG_STATUS), tail = rd(d, NPK_V0_REG_DESC_TAIL);
        FZ_ASSERT(DEV, tail <= n);
        retired = tail;
        if (!(st & NPK_V0_ST_ERROR)) {
            if (st & NPK_V0_ST_BUSY) { /* only a hung beat stalls the device */
                FZ_ASSERT(DEV, hang);
                FZ_ASSERT(DEV, tail < n);
                break;
            }
            /* everything committed retired */
            FZ_ASSERT(DEV, tail == n);
            FZ_ASSERT(DEV, npk_v0_st_qlevel(st) == 0);
            if (n) FZ_ASSERT(DEV, st & NPK_V0_ST_DONE);
            break;
        }
        uint32_t code = npk_v0_st_errcode(st), idx = rd(d, NPK_V0_REG_ERR_DESC_INDEX),
                 irq = rd(d, NPK_V0_REG_IRQ_STATUS);
        FZ_ASSERT(DEV, code >= 1 && code <= 8);
        FZ_ASSERT(DEV, irq & NPK_V0_IRQ_ERROR);
        if (overflow) {
            FZ_ASSERT(DEV, code == NPK_V0_ERR_OVERFLOW);
            break;
        }
        FZ_ASSERT(DEV, idx == tail && tail < n);
        FZ_ASSERT(DEV, !(st & NPK_V0_ST_BUSY));
        FZ_ASSERT(DEV, npk_v0_st_qlevel(st) == n - tail);
        if (code == NPK_V0_ERR_BUS || code == NPK_V0_ERR_WINDOW) {
            FZ_ASSERT(DEV, irq & NPK_V0_IRQ_BUS_ERROR);
            uint64_t fa = rd(d, NPK_V0_REG_ERR_FAULT_ADDR_LO) | (uint64_t)rd(d, NPK_V0_REG_ERR_FAULT_ADDR_HI) << 32;
            /* a bus error names a beat the descriptor named; a window error
             * the first byte of the tensor outside the window */
            if (code == NPK_V0_ERR_BUS) FZ_ASSERT(DEV, fz_named(&g, fa, 1));
            if (code == NPK_V0_ERR_WINDOW) FZ_ASSERT(DEV, npk_v0_validate(&ds[idx], NPK_V0_CAPS_DEFAULT, NULL, 0) == 0);
            break;
        }
        /* unsupported_op: the documented validation says the same */
        FZ_ASSERT(DEV, irq & NPK_V0_IRQ_UNSUPPORTED);
        FZ_ASSERT(DEV, npk_v0_validate(&ds[idx], NPK_V0_CAPS_DEFAULT, NULL, 0) == code);
        if (!fallback) break;
        /* the fallback handler's device protocol: dismiss, retire for the CPU */
        wr(d, NPK_V0_REG_IRQ_STATUS, NPK_V0_IRQ_ERROR | NPK_V0_IRQ_UNSUPPORTED);
        wr(d, NPK_V0_REG_DESC_TAIL, (idx + 1) & (ring - 1));
        FZ_ASSERT(DEV, rd(d, NPK_V0_REG_DESC_TAIL) == ((idx + 1) & (ring - 1)));
        cpu_retired++;
        if (idx + 1 == n) {
            settle(s);
            FZ_ASSERT(DEV, !(rd(d, NPK_V0_REG_STATUS) & (NPK_V0_ST_ERROR | NPK_V0_ST_BUSY)));
            retired = n;
            break;
        }
    }
    if (getenv("NPK_FUZZ_VERBOSE"))
        fprintf(stderr, "v0_ring: ring %u, %u descriptors, %u retired (%u by the CPU), status 0x%08x, hang %d, %llu beats\n",
                ring, n, retired, cpu_retired, rd(d, NPK_V0_REG_STATUS), hang, (unsigned long long)g.beats);
    /* the last device-retired descriptor's tag */
    if (retired > cpu_retired && !hang) {
        uint32_t tag = rd(d, NPK_V0_REG_COMPLETION_TAG);
        FZ_ASSERT(DEV, tag >= 1000 && tag < 1000 + retired);
    }
    /* flush recovers whatever state the ring is in */
    wr(d, NPK_V0_REG_CTRL, ctrl | NPK_V0_CTRL_FLUSH);
    {
        uint32_t st = rd(d, NPK_V0_REG_STATUS);
        FZ_ASSERT(DEV, (st & (NPK_V0_ST_ERROR | NPK_V0_ST_BUSY)) == 0 && npk_v0_st_qlevel(st) == 0);
        FZ_ASSERT(DEV, rd(d, NPK_V0_REG_DESC_TAIL) == 0);
    }
    return fz_finish(s);
}
