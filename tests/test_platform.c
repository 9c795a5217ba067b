// SPDX-License-Identifier: MIT
/* The simulated platform: guest memory, memory map, latency, fault injection,
 * register tables, the port allocator and traces. */
#include "check.h"
#include "npukit/npu.h"
#include "npukit/sim.h"
#include "npukit/trace.h"

#include <stdlib.h>
#include <string.h>

static void test_sparse_memory(void) {
    npk_mem *m = npk_mem_new();
    uint8_t buf[64];
    memset(buf, 0xaa, sizeof buf);
    /* untouched memory reads 0, anywhere in the 64-bit space */
    CHECK_EQ(npk_mem_peek(m, 0xfffffffffffff000ull, buf, 16), 0);
    for (int i = 0; i < 16; i++) CHECK_EQ(buf[i], 0);
    /* a write that crosses a page boundary reads back */
    uint8_t pat[40];
    for (int i = 0; i < 40; i++) pat[i] = (uint8_t)(i * 7 + 1);
    CHECK_EQ(npk_mem_poke(m, 0x12340ff0, pat, sizeof pat), 0);
    CHECK_EQ(npk_mem_peek(m, 0x12340ff0, buf, sizeof pat), 0);
    CHECK(!memcmp(buf, pat, sizeof pat));
    /* a wrapping access fails */
    CHECK_EQ(npk_mem_peek(m, 0xfffffffffffffff8ull, buf, 16), -NPK_EBUS);
    /* many pages (forces the hash table to grow) */
    for (uint64_t i = 0; i < 5000; i++) {
        uint32_t v = (uint32_t)(i * 2654435761u);
        npk_mem_poke(m, i << 12 | 8, &v, 4);
    }
    int bad = 0;
    for (uint64_t i = 0; i < 5000; i++) {
        uint32_t v = 0;
        npk_mem_peek(m, i << 12 | 8, &v, 4);
        bad += v != (uint32_t)(i * 2654435761u);
    }
    CHECK_EQ(bad, 0);
    npk_mem_clear(m);
    uint32_t z = 1;
    npk_mem_peek(m, 8, &z, 4);
    CHECK_EQ(z, 0);
    npk_mem_free(m);
}

static void test_memory_map_and_latency(void) {
    npk_mem *m = npk_mem_new();
    CHECK_EQ(npk_mem_map(m, 0x1000, 0x1000, 5, "sram"), 0);
    CHECK_EQ(npk_mem_map_parse(m, "0x80000000+0x10000@20:dram"), 0);
    CHECK_EQ(npk_mem_map(m, 0x1800, 0x1000, 0, "overlap"), -NPK_EINVAL);
    CHECK_EQ(npk_mem_map_parse(m, "junk"), -NPK_EINVAL);
    uint32_t v = 0x11223344, r = 0, lat = 99;
    CHECK_EQ(npk_bus_write(m, 0x1000, &v, 4, &lat), NPK_BUS_OK);
    CHECK_EQ(lat, 5);
    CHECK_EQ(npk_bus_read(m, 0x1000, &r, 4, &lat), NPK_BUS_OK);
    CHECK_EQ(r, 0x11223344);
    CHECK_EQ(npk_bus_read(m, 0x80000010, &r, 4, &lat), NPK_BUS_OK);
    CHECK_EQ(lat, 20);
    /* outside every region: bus error for the device, EBUS for the host */
    CHECK_EQ(npk_bus_read(m, 0x3000, &r, 4, &lat), NPK_BUS_ERROR);
    CHECK_EQ(npk_bus_read(m, 0x1ffe, &r, 4, &lat), NPK_BUS_ERROR); /* straddles the end */
    CHECK_EQ(npk_mem_peek(m, 0x3000, &r, 4), -NPK_EBUS);
    CHECK(strstr(npk_errmsg(), "0x3000") != NULL);
    npk_mem_stats st;
    npk_mem_get_stats(m, &st);
    CHECK_EQ(st.read_beats, 2);
    CHECK_EQ(st.write_beats, 1);
    CHECK_EQ(st.errors, 2);
    npk_mem_free(m);

    npk_mem *u = npk_mem_new();
    npk_mem_set_latency(u, 3);
    CHECK_EQ(npk_bus_read(u, 0x40, &r, 4, &lat), NPK_BUS_OK);
    CHECK_EQ(lat, 3);
    npk_mem_free(u);
}

static void test_faults(void) {
    npk_mem *m = npk_mem_new();
    npk_fault f;
    uint8_t buf[64] = {0};
    uint32_t lat;
    /* error on one address, every time */
    CHECK_EQ(npk_fault_parse("read@0x2004", &f), 0);
    CHECK_EQ(npk_mem_add_fault(m, &f), 0);
    CHECK_EQ(npk_bus_read(m, 0x2000, buf, 4, &lat), NPK_BUS_OK);
    CHECK_EQ(npk_bus_read(m, 0x2004, buf, 4, &lat), NPK_BUS_ERROR);
    CHECK_EQ(npk_bus_read(m, 0x2004, buf, 4, &lat), NPK_BUS_ERROR);
    CHECK_EQ(npk_bus_write(m, 0x2004, buf, 4, &lat), NPK_BUS_OK); /* writes unaffected */
    npk_mem_clear_faults(m);
    /* the 3rd beat (0-based #2) of a transfer over a buffer hangs, once */
    CHECK_EQ(npk_fault_parse("any@0x3000+64#2=hang*1", &f), 0);
    CHECK_EQ(f.beat, 2);
    CHECK_EQ(f.resp, NPK_BUS_HANG);
    CHECK_EQ(f.count, 1);
    CHECK_EQ(npk_mem_add_fault(m, &f), 0);
    size_t done = 99;
    uint64_t fa = 0, cyc = 0;
    CHECK_EQ(npk_bus_copy_in(m, 0x3000, buf, 64, 16, &done, &fa, &cyc), NPK_BUS_HANG);
    CHECK_EQ(done, 32);
    CHECK_EQ(fa, 0x3020);
    CHECK_EQ(npk_bus_copy_in(m, 0x3000, buf, 64, 16, &done, &fa, &cyc), NPK_BUS_OK);
    CHECK_EQ(done, 64);
    npk_mem_clear_faults(m);
    /* write faults on a copy out report the failing beat */
    CHECK_EQ(npk_fault_parse("write@0x4010", &f), 0);
    npk_mem_add_fault(m, &f);
    CHECK_EQ(npk_bus_copy_out(m, 0x4000, buf, 32, 4, &done, &fa, &cyc), NPK_BUS_ERROR);
    CHECK_EQ(done, 16);
    CHECK_EQ(fa, 0x4010);
    /* bad rule texts */
    CHECK_EQ(npk_fault_parse("peek@0x10", &f), -NPK_EINVAL);
    CHECK_EQ(npk_fault_parse("read@zz", &f), -NPK_EINVAL);
    CHECK_EQ(npk_fault_parse("read@0x10=explode", &f), -NPK_EINVAL);
    CHECK_EQ(npk_fault_parse("read@*#5", &f), 0);
    CHECK_EQ(f.len, 0);
    CHECK_EQ(f.beat, 5);
    npk_mem_free(m);
}

/* A register table exercising masks, W1C and hooks. */
static int hook_writes;
static uint32_t hook_last_old, hook_last_val;
static uint32_t rd_double(npk_dev *d, const npk_reg *r, uint32_t stored) {
    (void)d;
    (void)r;
    return stored * 2;
}
static void wr_hook(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val) {
    (void)d;
    (void)r;
    hook_writes++;
    hook_last_old = old;
    hook_last_val = val;
}
static const npk_reg regs[] = {
    {.off = 0x00, .name = "RW", .reset = 0x12345678},
    {.off = 0x04, .name = "MASKED", .rsv = 0xffff00f0u, .post_write = wr_hook},
    {.off = 0x08, .name = "W1C", .reset = 0x0000000f, .ro = 0xfffffef0u, .w1c = 0x0000000f},
    {.off = 0x0c, .name = "RO", .reset = 0xcafe, .ro = 0xffffffffu},
    {.off = 0x10, .name = "HOOKED", .reset = 21, .rsv = 0xffffff00u, .read = rd_double},
};

static void test_regfile(void) {
    npk_regfile rf;
    CHECK_EQ(npk_regfile_init(&rf, regs, 5, 0x40), 0);
    CHECK_EQ(npk_regfile_read(&rf, NULL, 0x00), 0x12345678);
    CHECK_EQ(npk_regfile_read(&rf, NULL, 0x40), 0x12345678); /* aliases every 0x40 */
    npk_regfile_write(&rf, NULL, 0x04, 0xffffffff);
    CHECK_EQ(npk_regfile_read(&rf, NULL, 0x04), 0xff0f);
    CHECK_EQ(hook_writes, 1);
    CHECK_EQ(hook_last_old, 0);
    CHECK_EQ(hook_last_val, 0xffffffff);
    npk_regfile_write(&rf, NULL, 0x08, 0x5); /* clears bits 0 and 2 */
    CHECK_EQ(npk_regfile_read(&rf, NULL, 0x08), 0xa);
    npk_regfile_write(&rf, NULL, 0x08, 0x100);
    CHECK_EQ(npk_regfile_read(&rf, NULL, 0x08), 0x10a);
    npk_regfile_write(&rf, NULL, 0x0c, 0);
    CHECK_EQ(npk_regfile_read(&rf, NULL, 0x0c), 0xcafe);
    CHECK_EQ(npk_regfile_read(&rf, NULL, 0x10), 42);
    CHECK_EQ(npk_regfile_read(&rf, NULL, 0x20), 0); /* undecoded */
    npk_regfile_write(&rf, NULL, 0x20, 1);
    CHECK(npk_regfile_find(&rf, 0x20) == NULL);
    CHECK(npk_regfile_find(&rf, 0x02) == NULL); /* misaligned */
    npk_regfile_reset(&rf);
    CHECK_EQ(npk_regfile_read(&rf, NULL, 0x04), 0);
    CHECK_EQ(npk_regfile_read(&rf, NULL, 0x08), 0xf);
    npk_regfile_fini(&rf);
    static const npk_reg dup[] = {{.off = 0x00, .name = "A"}, {.off = 0x00, .name = "B"}};
    CHECK_EQ(npk_regfile_init(&rf, dup, 2, 0x40), -NPK_EINVAL);
    CHECK_EQ(npk_regfile_init(&rf, regs, 5, 0x30), -NPK_EINVAL);
}

static void test_trace(void) {
    char *out[2];
    for (int run = 0; run < 2; run++) {
        npk_trace *t = npk_trace_new();
        npk_trace_process(t, "e1", 1000000000);
        npk_trace_process(t, "host", 1000000);
        npk_trace_complete(t, "e1", "descriptor", "ADD", 0, 11, "\"opcode\":0");
        npk_trace_complete(t, "e1", "gemm", "GEMM_S8", 11, 12, "\"macs\":12");
        npk_trace_complete(t, "host", "runtime", "submit \"x\"", 3, 2, NULL);
        npk_trace_counter(t, "e1", "queue depth", 5, 2);
        CHECK_EQ(npk_trace_total_cycles(t, "e1", NULL), 23);
        CHECK_EQ(npk_trace_total_cycles(t, "e1", "gemm"), 12);
        CHECK_EQ(npk_trace_count(t), 4);
        size_t len;
        FILE *f = open_memstream(&out[run], &len);
        CHECK_EQ(npk_trace_write(t, f), 0);
        fclose(f);
        npk_trace_free(t);
    }
    CHECK_STR(out[0], out[1]); /* deterministic */
    CHECK(strstr(out[0], "\"ts\":0.011000,\"dur\":0.012000") != NULL); /* 11 cycles at 1 GHz = 0.011 us */
    CHECK(strstr(out[0], "\"ts\":3.000000,\"dur\":2.000000") != NULL);  /* 1 MHz host clock */
    CHECK(strstr(out[0], "submit \\\"x\\\"") != NULL);
    CHECK(strstr(out[0], "\"thread_name\"") != NULL);
    free(out[0]);
    free(out[1]);
}

static void test_errors(void) {
    CHECK_EQ(npk_err(NPK_EDEVICE, "descriptor %d: stream length %d is not word-aligned", 2, 62), -NPK_EDEVICE);
    CHECK_STR(npk_errmsg(), "descriptor 2: stream length 62 is not word-aligned");
    CHECK_EQ(npk_err_prefix(NPK_EDEVICE, "batch %d", 1), -NPK_EDEVICE);
    CHECK_STR(npk_errmsg(), "batch 1: descriptor 2: stream length 62 is not word-aligned");
    CHECK_STR(npk_status_name(-NPK_ETIMEDOUT), "ETIMEDOUT");
    npk_port *p;
    CHECK_EQ(npk_port_open(&p, "sim", "nosuch", NULL), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "nosuch") != NULL);
    CHECK_EQ(npk_port_open(&p, "carrier-pigeon:1", "e1", NULL), -NPK_EINVAL);
    CHECK(npk_sim_new("nosuch", NULL) == NULL);
}

/* The guest-memory cap: npk_mem_set_limit, npk_parse_size and the sim port's
 * mem-limit option; a write over the cap fails and changes nothing. */
static void test_mem_limit(void) {
    uint64_t v = 0;
    CHECK_EQ(npk_parse_size("4G", &v), 0);
    CHECK_EQ(v, 4ull << 30);
    CHECK_EQ(npk_parse_size("0x10k", &v), 0);
    CHECK_EQ(v, 16384);
    CHECK_EQ(npk_parse_size("12", &v), 0);
    CHECK_EQ(v, 12);
    CHECK_EQ(npk_parse_size("1.5G", &v), -NPK_EINVAL);
    CHECK_EQ(npk_parse_size("-1", &v), -NPK_EINVAL);
    CHECK_EQ(npk_parse_size("17179869184G", &v), -NPK_EINVAL);
    CHECK_EQ(npk_parse_size("3X", &v), -NPK_EINVAL);
    npk_mem *m = npk_mem_new();
    CHECK_EQ(npk_mem_limit(m), NPK_MEM_DEFAULT_LIMIT);
    npk_mem_set_limit(m, 8192);
    uint8_t buf[8192];
    memset(buf, 0x5a, sizeof buf);
    CHECK_EQ(npk_mem_poke(m, 0x1000, buf, 6000), 0);
    CHECK_EQ(npk_mem_used(m), 8192);
    CHECK_EQ(npk_mem_fill(m, 0x2000, 0x11, 8192), -NPK_ENOMEM); /* page 0x2000 exists, 0x3000 does not fit */
    CHECK(strstr(npk_errmsg(), "guest memory cap of 8192 bytes") != NULL);
    uint8_t back[16];
    CHECK_EQ(npk_mem_peek(m, 0x2000, back, 16), 0);
    CHECK_EQ(back[0], 0x5a); /* unchanged */
    CHECK_EQ(npk_mem_used(m), 8192);
    npk_mem_set_limit(m, 0); /* no cap */
    CHECK_EQ(npk_mem_fill(m, 0x2000, 0x11, 8192), 0);
    npk_mem_free(m);
    npk_port *p = NULL;
    CHECK_EQ(npk_port_open(&p, "sim:mem-limit=4K", "e1", NULL), 0);
    if (p) {
        CHECK_EQ(npk_port_mem_write(p, 0x80000000, buf, 4096), 0);
        CHECK(npk_port_mem_write(p, 0x80001000, buf, 1) < 0);
        npk_port_close(p);
    }
    CHECK_EQ(npk_port_open(&p, "sim:mem-limit=lots", "e1", NULL), -NPK_EINVAL);
    CHECK_EQ(npk_port_open(&p, "sim:speed=9", "e1", NULL), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "mem-limit") != NULL);
}

static uint64_t watched;
static void count_watch(void *ctx, npk_access acc, uint64_t addr, size_t len, npk_bus_resp r) {
    (void)ctx, (void)acc, (void)addr, (void)len, (void)r;
    watched++;
}

/* Host-contiguous extents (zero copy, issue 15 point 3) and the bulk DMA path:
 * same contents, same beat statistics and cycles as the paged, beat-wise path. */
static void test_extents(void) {
    npk_mem *m = npk_mem_new();
    uint8_t pat[12000], buf[12000];
    for (size_t i = 0; i < sizeof pat; i++) pat[i] = (uint8_t)(i * 13 + 5);
    CHECK_EQ(npk_mem_poke(m, 0x10000, pat, 5000), 0); /* written before the attach */
    CHECK(npk_mem_direct(m, 0x10000, 16) == NULL);
    CHECK_EQ(npk_mem_attach(m, 0x10000, 8192), 0);
    CHECK_EQ(npk_mem_attach(m, 0x11000, 8192), -NPK_EINVAL); /* overlap refused */
    uint8_t *d = npk_mem_direct(m, 0x10000, 8192);
    CHECK(d != NULL && !memcmp(d, pat, 5000) && d[5000] == 0);
    CHECK(npk_mem_direct(m, 0x10000, 8193) == NULL); /* past the extent */
    /* a poke across the extent's end (extent + pages) reads back from both */
    CHECK_EQ(npk_mem_poke(m, 0x10000 + 8192 - 3000, pat, sizeof pat), 0);
    CHECK_EQ(npk_mem_peek(m, 0x10000 + 8192 - 3000, buf, sizeof buf), 0);
    CHECK(!memcmp(buf, pat, sizeof pat));
    CHECK(!memcmp(d + 8192 - 3000, pat, 3000));
    d[0] = 0x5a; /* a write through the pointer is guest memory */
    CHECK_EQ(npk_mem_peek(m, 0x10000, buf, 1), 0);
    CHECK_EQ(buf[0], 0x5a);
    /* bulk copies account beats as the beat-wise path (a watcher forces it) */
    npk_mem_stats a, b;
    uint64_t ca = 0, cb = 0;
    npk_mem_set_latency(m, 2);
    npk_mem_reset_stats(m);
    CHECK_EQ(npk_bus_copy_in(m, 0x10000 + 100, buf, 1000, 64, NULL, NULL, &ca), NPK_BUS_OK);
    CHECK_EQ(npk_bus_copy_out(m, 0x30000, pat, 1000, 64, NULL, NULL, NULL), NPK_BUS_OK);
    npk_mem_get_stats(m, &a);
    npk_mem_set_watch(m, count_watch, NULL);
    npk_mem_reset_stats(m);
    CHECK_EQ(npk_bus_copy_in(m, 0x10000 + 100, buf, 1000, 64, NULL, NULL, &cb), NPK_BUS_OK);
    CHECK_EQ(npk_bus_copy_out(m, 0x30000, pat, 1000, 64, NULL, NULL, NULL), NPK_BUS_OK);
    npk_mem_get_stats(m, &b);
    CHECK_EQ(watched, 32); /* 16 beats each way */
    CHECK_EQ(a.read_beats, b.read_beats);
    CHECK_EQ(a.write_beats, b.write_beats);
    CHECK_EQ(a.read_bytes, 1000);
    CHECK_EQ(ca, cb);
    CHECK_EQ(ca, 16 * 2);
    /* npk_bus_direct: none while a watcher must see the beats; else the
     * pointer, with the strided DMA's beats accounted */
    CHECK(npk_bus_direct(m, NPK_ACC_READ, 0x10000, 256, 4, 100, 64) == NULL);
    npk_mem_set_watch(m, NULL, NULL);
    npk_mem_reset_stats(m);
    CHECK(npk_bus_direct(m, NPK_ACC_READ, 0x10000, 256, 4, 100, 64) == d);
    npk_mem_get_stats(m, &a);
    CHECK_EQ(a.read_beats, 4 * 2);
    CHECK_EQ(a.read_bytes, 400);
    CHECK(npk_bus_direct(m, NPK_ACC_READ, 0x10000 + 8000, 256, 4, 100, 64) == NULL); /* leaves the extent */
    npk_mem_free(m);

    /* the in-process port backs allocations of >= 4 KiB with extents */
    npk_port *p = NULL;
    CHECK_EQ(npk_port_open(&p, "sim", "v0", NULL), 0);
    uint64_t ga = 0;
    CHECK_EQ(npk_port_alloc(p, 65536, 64, &ga), 0);
    uint8_t *pd = npk_port_direct(p, ga, 65536);
    CHECK(pd != NULL);
    CHECK_EQ(npk_port_mem_write(p, ga + 70, pat, 100), 0);
    CHECK(pd && !memcmp(pd + 70, pat, 100));
    npk_port_free(p, ga);
    npk_port_close(p);
}

/* Write generations: any write into a range changes its generation (pokes,
 * fills, device writes, direct pointers, clear); reads and writes elsewhere
 * (outside the range's 64 KiB blocks) leave it. */
static void test_wgen(void) {
    npk_mem *m = npk_mem_new();
    uint8_t b[64] = {1}, r[64];
    const uint64_t A = 0x200000, L = 100000;
    uint64_t g = npk_mem_wgen(m, A, L);
    CHECK_EQ(npk_mem_poke(m, A + L + 0x20000, b, sizeof b), 0); /* beyond the range's blocks */
    CHECK_EQ(npk_mem_peek(m, A, r, sizeof r), 0);
    CHECK_EQ(npk_bus_copy_in(m, A, r, sizeof r, 16, NULL, NULL, NULL), NPK_BUS_OK);
    CHECK_EQ(npk_mem_wgen(m, A, L), g);
    CHECK_EQ(npk_mem_poke(m, A + L - 1, b, 1), 0); /* its last byte */
    CHECK(npk_mem_wgen(m, A, L) != g);
    g = npk_mem_wgen(m, A, L);
    CHECK_EQ(npk_bus_copy_out(m, A - 8, b, 16, 16, NULL, NULL, NULL), NPK_BUS_OK); /* a device write over its start */
    CHECK(npk_mem_wgen(m, A, L) != g);
    g = npk_mem_wgen(m, A, L);
    CHECK_EQ(npk_mem_fill(m, A + 5, 0, 3), 0);
    CHECK(npk_mem_wgen(m, A, L) != g);
    g = npk_mem_wgen(m, A, L);
    CHECK_EQ(npk_mem_attach(m, A, 8192), 0);
    CHECK_EQ(npk_mem_wgen(m, A, L), g); /* contents kept */
    CHECK(npk_mem_direct(m, A, 16) != NULL); /* a writable pointer */
    CHECK(npk_mem_wgen(m, A, L) != g);
    g = npk_mem_wgen(m, A, L);
    npk_mem_clear(m);
    CHECK(npk_mem_wgen(m, A, L) != g);
    npk_mem_free(m);
}

int main(void) {
    test_wgen();
    test_extents();
    test_mem_limit();
    test_sparse_memory();
    test_memory_map_and_latency();
    test_faults();
    test_regfile();
    test_trace();
    test_errors();
    return CHECK_DONE();
}
