// SPDX-License-Identifier: MIT
/* pccx encodings: the seven-word test vector of pccx-isa.md Part 2 decodes to
 * the field readings given there, disassembles and re-assembles bit for bit;
 * field placement is checked against hand-computed shifts of Part 1's tables;
 * the encoding-level faults; the weight-record layout. */
#include "check.h"
#include "npukit/pccx.h"

#include <stdlib.h>
#include <string.h>

static const uint64_t vec[7] = {0x3030001000100090ull, 0x3090004000400040ull, 0x2800c80000000006ull,
                                0x10100004b0804320ull, 0x0018000641008920ull, 0x45018000e0001000ull,
                                0x2400000380000006ull};

static void test_vector_readings(void) {
    npk_pccx_insn in;
    /* MEMSET fmap[3] = (1,1,9) */
    npk_pccx_decode(vec[0], &in);
    CHECK_EQ(in.op, 3);
    CHECK_EQ(in.cache, 0);
    CHECK_EQ(in.index, 3);
    CHECK_EQ(in.a, 1);
    CHECK_EQ(in.b, 1);
    CHECK_EQ(in.c, 9);
    CHECK_EQ(in.reserved, 0);
    /* MEMSET fmap[9] = (4,4,4) */
    npk_pccx_decode(vec[1], &in);
    CHECK_EQ(in.op, 3);
    CHECK_EQ(in.cache, 0);
    CHECK_EQ(in.index, 9);
    CHECK_EQ(in.a, 4);
    CHECK_EQ(in.b, 4);
    CHECK_EQ(in.c, 4);
    /* MEMCPY host->L2 dest 100 shape 3 sync */
    npk_pccx_decode(vec[2], &in);
    CHECK_EQ(in.op, 2);
    CHECK_EQ(in.from_device, 1);
    CHECK_EQ(in.to_device, 0);
    CHECK_EQ(in.dest, 100);
    CHECK_EQ(in.src, 0);
    CHECK_EQ(in.aux, 0);
    CHECK_EQ(in.shape_ptr, 3);
    CHECK_EQ(in.async, 0);
    /* GEMM dest 512 src 300 w_scale size 1 shape 3 lane 4 */
    npk_pccx_decode(vec[3], &in);
    CHECK_EQ(in.op, 1);
    CHECK_EQ(in.dest, 512);
    CHECK_EQ(in.src, 300);
    CHECK_EQ(in.flags, NPK_PCCX_W_SCALE);
    CHECK_EQ(in.size_ptr, 1);
    CHECK_EQ(in.shape_ptr, 3);
    CHECK_EQ(in.lanes, 4);
    CHECK_EQ(in.reserved, 0);
    /* GEMV dest 768 src 400 accm size 2 shape 9 lane 4 */
    npk_pccx_decode(vec[4], &in);
    CHECK_EQ(in.op, 0);
    CHECK_EQ(in.dest, 768);
    CHECK_EQ(in.src, 400);
    CHECK_EQ(in.flags, NPK_PCCX_ACCM);
    CHECK_EQ(in.size_ptr, 2);
    CHECK_EQ(in.shape_ptr, 9);
    CHECK_EQ(in.lanes, 4);
    /* CVO REDUCE_SUM src 768 dst 896 len 64 */
    npk_pccx_decode(vec[5], &in);
    CHECK_EQ(in.op, 4);
    CHECK_EQ(in.func, NPK_PCCX_CVO_REDUCE_SUM);
    CHECK_EQ(in.src, 768);
    CHECK_EQ(in.dest, 896);
    CHECK_EQ(in.length, 64);
    CHECK_EQ(in.flags, 0);
    CHECK_EQ(in.async, 0);
    /* MEMCPY L2->host src 896 shape 3 sync */
    npk_pccx_decode(vec[6], &in);
    CHECK_EQ(in.op, 2);
    CHECK_EQ(in.from_device, 0);
    CHECK_EQ(in.to_device, 1);
    CHECK_EQ(in.src, 896);
    CHECK_EQ(in.dest, 0);
    CHECK_EQ(in.shape_ptr, 3);
    CHECK_EQ(in.async, 0);
    for (int i = 0; i < 7; i++) CHECK_EQ(npk_pccx_check(vec[i]), 0);
}

/* Builders against shifts written out from Part 1's bit tables. */
static void test_field_positions(void) {
    CHECK_EQ(npk_pccx_gemv_word(0x1ffff, 0, 0, 0, 0, 0), 0x1ffffull << 43);
    CHECK_EQ(npk_pccx_gemv_word(0, 0x1ffff, 0, 0, 0, 0), 0x1ffffull << 26);
    CHECK_EQ(npk_pccx_gemv_word(0, 0, 0x3f, 0, 0, 0), 0x3full << 20);
    CHECK_EQ(npk_pccx_gemv_word(0, 0, 0, 0x3f, 0, 0), 0x3full << 14);
    CHECK_EQ(npk_pccx_gemv_word(0, 0, 0, 0, 0x3f, 0), 0x3full << 8);
    CHECK_EQ(npk_pccx_gemv_word(0, 0, 0, 0, 0, 0x1f), 0x1full << 3);
    CHECK_EQ(npk_pccx_gemm_word(0, 0, 0, 0, 0, 0), 1ull << 60);
    CHECK_EQ(npk_pccx_memcpy_word(1, 0, 0, 0, 0, 0, 0), 2ull << 60 | 1ull << 59);
    CHECK_EQ(npk_pccx_memcpy_word(0, 1, 0, 0, 0, 0, 0), 2ull << 60 | 1ull << 58);
    CHECK_EQ(npk_pccx_memcpy_word(0, 0, 0x1ffff, 0, 0, 0, 0), 2ull << 60 | 0x1ffffull << 41);
    CHECK_EQ(npk_pccx_memcpy_word(0, 0, 0, 0x1ffff, 0, 0, 0), 2ull << 60 | 0x1ffffull << 24);
    CHECK_EQ(npk_pccx_memcpy_word(0, 0, 0, 0, 0x1ffff, 0, 0), 2ull << 60 | 0x1ffffull << 7);
    CHECK_EQ(npk_pccx_memcpy_word(0, 0, 0, 0, 0, 0x3f, 0), 2ull << 60 | 0x3full << 1);
    CHECK_EQ(npk_pccx_memcpy_word(0, 0, 0, 0, 0, 0, 1), 2ull << 60 | 1);
    CHECK_EQ(npk_pccx_memset_word(3, 0, 0, 0, 0), 3ull << 60 | 3ull << 58);
    CHECK_EQ(npk_pccx_memset_word(0, 0x3f, 0, 0, 0), 3ull << 60 | 0x3full << 52);
    CHECK_EQ(npk_pccx_memset_word(0, 0, 0xffff, 0, 0), 3ull << 60 | 0xffffull << 36);
    CHECK_EQ(npk_pccx_memset_word(0, 0, 0, 0xffff, 0), 3ull << 60 | 0xffffull << 20);
    CHECK_EQ(npk_pccx_memset_word(0, 0, 0, 0, 0xffff), 3ull << 60 | 0xffffull << 4);
    CHECK_EQ(npk_pccx_cvo_word(0xf, 0, 0, 0, 0, 0), 4ull << 60 | 0xfull << 56);
    CHECK_EQ(npk_pccx_cvo_word(0, 0x1ffff, 0, 0, 0, 0), 4ull << 60 | 0x1ffffull << 39);
    CHECK_EQ(npk_pccx_cvo_word(0, 0, 0x1ffff, 0, 0, 0), 4ull << 60 | 0x1ffffull << 22);
    CHECK_EQ(npk_pccx_cvo_word(0, 0, 0, 0xffff, 0, 0), 4ull << 60 | 0xffffull << 6);
    CHECK_EQ(npk_pccx_cvo_word(0, 0, 0, 0, 0x1f, 0), 4ull << 60 | 0x1full << 1);
    CHECK_EQ(npk_pccx_cvo_word(0, 0, 0, 0, 0, 1), 4ull << 60 | 1);
    /* flag bit values of 1.1 / 4.2 */
    CHECK_EQ(NPK_PCCX_FINDEMAX, 1u << 5);
    CHECK_EQ(NPK_PCCX_ACCM, 1u << 4);
    CHECK_EQ(NPK_PCCX_W_SCALE, 1u << 3);
    CHECK_EQ(NPK_PCCX_CVO_SUB_EMAX, 1u << 4);
    CHECK_EQ(NPK_PCCX_CVO_RECIP_SCALE, 1u << 3);
    CHECK_EQ(NPK_PCCX_CVO_ACCM, 1u << 2);
    /* encode() range checks */
    uint64_t w;
    npk_pccx_insn in = {.op = NPK_PCCX_OP_GEMV, .dest = 0x20000};
    CHECK_EQ(npk_pccx_encode(&in, &w), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "dest_reg") != NULL);
    in = (npk_pccx_insn){.op = NPK_PCCX_OP_CVO, .length = 70000};
    CHECK_EQ(npk_pccx_encode(&in, &w), -NPK_EINVAL);
    in = (npk_pccx_insn){.op = 5};
    CHECK_EQ(npk_pccx_encode(&in, &w), -NPK_EINVAL);
}

static void test_roundtrip(void) {
    uint8_t bin[56];
    for (int i = 0; i < 7; i++)
        for (int b = 0; b < 8; b++) bin[i * 8 + b] = (uint8_t)(vec[i] >> (8 * b));
    char *text = NULL;
    CHECK_EQ(npk_pccx_disasm(bin, sizeof bin, &text), 0);
    if (!text) return;
    /* one line per instruction with named fields */
    int lines = 0;
    for (char *p = text; *p; p++) lines += *p == '\n';
    CHECK_EQ(lines, 7);
    CHECK(strstr(text, "memset dest_cache=fmap_shape dest_addr=3 a_value=1 b_value=1 c_value=9\n") != NULL);
    CHECK(strstr(text, "memcpy from_device=host to_device=npu dest_addr=100 src_addr=0 aux_addr=0 shape_ptr_addr=3 async=0\n") != NULL);
    CHECK(strstr(text, "gemm dest_reg=512 src_addr=300 flags=w_scale size_ptr_addr=1 shape_ptr_addr=3 parallel_lane=4\n") != NULL);
    CHECK(strstr(text, "gemv dest_reg=768 src_addr=400 flags=accm size_ptr_addr=2 shape_ptr_addr=9 parallel_lane=4\n") != NULL);
    CHECK(strstr(text, "cvo cvo_func=reduce_sum src_addr=768 dst_addr=896 length=64 flags=0 async=0\n") != NULL);
    CHECK(strstr(text, "memcpy from_device=npu to_device=host dest_addr=0 src_addr=896 aux_addr=0 shape_ptr_addr=3 async=0\n") != NULL);
    uint8_t *back = NULL;
    size_t len = 0;
    CHECK_EQ(npk_pccx_asm(text, &back, &len), 0);
    CHECK_EQ(len, sizeof bin);
    CHECK(back && !memcmp(back, bin, sizeof bin));
    free(back);
    free(text);

    /* hand-written text with aliases, comments and flag lists */
    const char *src = "# prologue\n"
                      "memset cache=weight index=5 a=64 b=172 c=32\n"
                      "gemv dest=1 src=2 flags=findemax|w_scale size=5 shape=6 lane=0 ; decode\n"
                      "cvo func=EXP src=10 dst=11 len=8 flags=sub_emax async\n"
                      "cvo func=scale src=10 dst=11 len=8 flags=recip_scale|accm\n"
                      ".word 0x5000000000000000\n";
    CHECK_EQ(npk_pccx_asm(src, &back, &len), 0);
    CHECK_EQ(len, 40);
    if (len == 40) {
        uint64_t w[5];
        for (int i = 0; i < 5; i++) {
            w[i] = 0;
            for (int b = 7; b >= 0; b--) w[i] = w[i] << 8 | back[i * 8 + b];
        }
        CHECK_EQ(w[0], 3ull << 60 | 1ull << 58 | 5ull << 52 | 64ull << 36 | 172ull << 20 | 32ull << 4);
        CHECK_EQ(w[1], 1ull << 43 | 2ull << 26 | 0x28ull << 20 | 5ull << 14 | 6ull << 8);
        CHECK_EQ(w[2], 4ull << 60 | 10ull << 39 | 11ull << 22 | 8ull << 6 | 0x10ull << 1 | 1);
        CHECK_EQ(w[3], 4ull << 60 | 6ull << 56 | 10ull << 39 | 11ull << 22 | 8ull << 6 | 0x0cull << 1);
        CHECK_EQ(w[4], 0x5000000000000000ull);
        /* and every one of them survives disasm -> asm */
        char *t2 = NULL;
        uint8_t *b2 = NULL;
        size_t l2 = 0;
        CHECK_EQ(npk_pccx_disasm(back, len, &t2), 0);
        CHECK_EQ(npk_pccx_asm(t2, &b2, &l2), 0);
        CHECK(l2 == len && b2 && !memcmp(b2, back, len));
        free(t2);
        free(b2);
    }
    free(back);

    /* faulting encodings also round-trip (reserved bits, func, cache, direction) */
    const uint64_t odd[] = {0x0000000000000001ull, 0x4800000000000040ull, 0x3c00000000000000ull,
                            0x2c00000000000000ull, 0x3000000000000005ull, 0x0000000000700000ull, 0xf123456789abcdefull};
    uint8_t ob[sizeof odd];
    for (size_t i = 0; i < sizeof odd / 8; i++)
        for (int b = 0; b < 8; b++) ob[i * 8 + b] = (uint8_t)(odd[i] >> (8 * b));
    CHECK_EQ(npk_pccx_disasm(ob, sizeof ob, &text), 0);
    CHECK_EQ(npk_pccx_asm(text, &back, &len), 0);
    CHECK(len == sizeof ob && back && !memcmp(back, ob, sizeof ob));
    free(text);
    free(back);

    /* errors name the line / offset */
    CHECK_EQ(npk_pccx_asm("gemv dest=1\nfrob x=1\n", &back, &len), -NPK_EFORMAT);
    CHECK(strstr(npk_errmsg(), "line 2") != NULL);
    CHECK_EQ(npk_pccx_asm("gemv dest=131072\n", &back, &len), -NPK_EFORMAT);
    CHECK(strstr(npk_errmsg(), "dest_reg") != NULL);
    CHECK_EQ(npk_pccx_asm("cvo func=exp len=65536\n", &back, &len), -NPK_EFORMAT);
    CHECK_EQ(npk_pccx_asm("gemv flags=sub_emax\n", &back, &len), -NPK_EFORMAT);
    CHECK_EQ(npk_pccx_asm("memset a=1 a=2\n", &back, &len), -NPK_EFORMAT);
    CHECK_EQ(npk_pccx_disasm(bin, 13, &text), -NPK_EFORMAT);
}

static void test_check(void) {
    CHECK_EQ(npk_pccx_check(5ull << 60), NPK_PCCX_FAULT_OPCODE);
    CHECK_EQ(npk_pccx_check(0xfull << 60), NPK_PCCX_FAULT_OPCODE);
    CHECK_EQ(npk_pccx_check(npk_pccx_cvo_word(8, 0, 0, 1, 0, 0)), NPK_PCCX_FAULT_FUNC);
    CHECK_EQ(npk_pccx_check(npk_pccx_gemv_word(0, 0, 0, 0, 0, 0) | 1), NPK_PCCX_FAULT_RESERVED);
    CHECK_EQ(npk_pccx_check(npk_pccx_gemm_word(0, 0, 0x01, 0, 0, 0)), NPK_PCCX_FAULT_RESERVED);
    CHECK_EQ(npk_pccx_check(npk_pccx_gemv_word(0, 0, 0, 0, 0, 5)), NPK_PCCX_FAULT_LANE);
    CHECK_EQ(npk_pccx_check(npk_pccx_gemv_word(0, 0, 0, 0, 0, 4)), 0);
    CHECK_EQ(npk_pccx_check(npk_pccx_memset_word(0, 0, 0, 0, 0) | 8), NPK_PCCX_FAULT_RESERVED);
    CHECK_EQ(npk_pccx_check(npk_pccx_memset_word(2, 0, 0, 0, 0)), NPK_PCCX_FAULT_CACHE);
    CHECK_EQ(npk_pccx_check(npk_pccx_memcpy_word(1, 1, 0, 0, 0, 0, 0)), NPK_PCCX_FAULT_DIRECTION);
    CHECK_EQ(npk_pccx_check(npk_pccx_memcpy_word(1, 0, 0, 7, 0, 0, 0)), NPK_PCCX_FAULT_FIELD);
    CHECK_EQ(npk_pccx_check(npk_pccx_memcpy_word(0, 1, 7, 0, 0, 0, 0)), NPK_PCCX_FAULT_FIELD);
    CHECK_EQ(npk_pccx_check(npk_pccx_memcpy_word(0, 0, 0, 0, 7, 0, 0)), NPK_PCCX_FAULT_FIELD);
    CHECK_EQ(npk_pccx_check(npk_pccx_cvo_word(0, 0, 0, 1, 0x1, 0)), NPK_PCCX_FAULT_RESERVED);
    CHECK_EQ(npk_pccx_check(npk_pccx_cvo_word(0, 0, 0, 1, NPK_PCCX_CVO_RECIP_SCALE, 0)), NPK_PCCX_FAULT_FLAGS);
    CHECK_EQ(npk_pccx_check(npk_pccx_cvo_word(6, 0, 0, 1, NPK_PCCX_CVO_RECIP_SCALE, 0)), 0);
    CHECK_EQ(npk_pccx_check(npk_pccx_cvo_word(0, 0, 0, 0, 0, 0)), NPK_PCCX_FAULT_SHAPE_ZERO);
    CHECK_STR(npk_pccx_fault_name(NPK_PCCX_FAULT_L2_RANGE), "L2_RANGE");
}

/* Record layout, written out by hand for a 3x5 matrix with groups of 2. */
static void test_wrec(void) {
    const int8_t q[15] = {1, -1, 7, -8, 0, 2, 3, 4, 5, 6, -2, -3, -4, -5, -6};
    const float s[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    CHECK_EQ(npk_pccx_wrec_size(3, 5, 2, 1), 16 + 48);
    CHECK_EQ(npk_pccx_wrec_size(3, 5, 2, 0), 16);
    CHECK_EQ(npk_pccx_wrec_size(3, 5, 0, 1), 16 + 16);
    CHECK_EQ(npk_pccx_wrec_size(64, 172, 0, 1), 5504 + 256);
    uint8_t r[64];
    CHECK_EQ(npk_pccx_wrec_pack(q, s, 3, 5, 2, r), 0);
    CHECK_EQ(r[0], 0xf1); /* nibble 0 = 1 (low), nibble 1 = -1 (high) */
    CHECK_EQ(r[1], 0x87); /* 7, -8 */
    CHECK_EQ(r[2], 0x20); /* 0, 2 */
    CHECK_EQ(r[7], 0x0a); /* nibble 14 = -6 = 0xa, high nibble padding 0 */
    CHECK_EQ(r[8], 0);
    CHECK_EQ(r[16], 0x00); /* scale 1.0f = 0x3f800000 little-endian */
    CHECK_EQ(r[19], 0x3f);
    CHECK_EQ(r[16 + 4 * 8 + 3], 0x41); /* 9.0f = 0x41100000 */
    CHECK_EQ(r[16 + 4 * 8 + 2], 0x10);
    const int8_t bad[1] = {8};
    CHECK_EQ(npk_pccx_wrec_pack(bad, NULL, 1, 1, 0, r), -NPK_EINVAL);
    /* quantizer: per-group max/7 scale */
    const float w[4] = {0.7f, -0.35f, 0.0f, 0.0f};
    int8_t qq[4];
    float ss[2];
    npk_pccx_quantize_q4(w, 1, 4, 2, qq, ss);
    CHECK(ss[0] > 0.0999f && ss[0] < 0.1001f);
    CHECK_EQ(qq[0], 7);
    CHECK(qq[1] == -3 || qq[1] == -4); /* -3.5 rounds away from zero in float: -4 unless representation is below */
    CHECK(ss[1] == 1.0f && qq[2] == 0 && qq[3] == 0);
}

int main(void) {
    test_vector_readings();
    test_field_positions();
    test_roundtrip();
    test_check();
    test_wrec();
    return CHECK_DONE();
}
