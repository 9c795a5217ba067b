// SPDX-License-Identifier: MIT
/* The shell text assembler: encodings of hand-written lines checked byte by
 * byte, exact disasm -> asm round trips (every opcode and form, and random
 * bytes), and the error messages. */
#include "test_shell_util.h"

static void roundtrip(const uint8_t *bin, size_t len) {
    char *text = NULL;
    uint8_t *back = NULL;
    size_t blen = 0;
    CHECK_EQ(npk_shell_disasm(bin, len, &text), 0);
    int rc = npk_shell_asm(text, &back, &blen);
    CHECK_EQ(rc, 0);
    if (rc) fprintf(stderr, "asm of disasm failed: %s\n%s", npk_errmsg(), text);
    CHECK_EQ(blen, len);
    int same = blen == len && !memcmp(back, bin, len);
    CHECK(same);
    if (!same) fprintf(stderr, "round trip differs:\n%s", text);
    free(text);
    free(back);
}

static void asm_fails(const char *text, const char *needle) {
    uint8_t *bin = NULL;
    size_t len;
    CHECK(npk_shell_asm(text, &bin, &len) < 0);
    CHECK(strstr(npk_errmsg(), needle) != NULL);
    if (!strstr(npk_errmsg(), needle)) fprintf(stderr, "message '%s' lacks '%s'\n", npk_errmsg(), needle);
    free(bin);
}

int main(void) {
    /* hand-checked encodings */
    const char *src =
        "# comment line\n"
        "DMA_COPY src=0x2000000000 dst=0x2000001000 bytes=4096 tag=1   # trailing comment\n"
        "\n"
        "gemm dtype=int8 layout=row m=64 n=64 k=64 a=0x3000000000 b=0x3000100000 c=0x3000200000\n"
        "EVENT_SIGNAL id=3 irq=1\n"
        "GEMM size=3 dtype=bf16 layout=col epilogue=gelu trans_b=1 has_bias=1 has_alpha=1 user_tag=9 a=1 b=2 c=4 m=5 "
        "n=6 k=7 lda=16 uid=0x55 bias=0x100 alpha=-1.25\n"
        "VEC_OP op=leakyrelu dtype=fp16 src=0x10 dst=0x20 bytes=64 row=8\n"
        "VEC_OP op=relu dtype=bf16 ext_op=rmsnorm src=0 dst=0 bytes=2\n";
    uint8_t *bin;
    size_t len;
    CHECK_EQ(npk_shell_asm(src, &bin, &len), 0);
    CHECK_EQ(len, 32 * 3 + 96 + 64);
    uint8_t w[32 * 8];
    memset(w, 0, sizeof w);
    hdr32(w, 0x01, 0, 1, 1), le64(w + 8, 0x2000000000ull), le64(w + 16, 0x2000001000ull), le32(w + 24, 4096);
    hdr32(w + 32, 0x10, 0, 1, (64u << 20) | (64u << 10) | 64u), le64(w + 40, 0x3000000000ull), le64(w + 48, 0x3000100000ull),
        le64(w + 56, 0x3000200000ull);
    hdr32(w + 64, 0x20, 1, 1, 3);
    uint8_t *g = w + 96;
    hdr32(g, 0x10, 0x12, 3, 2u | 0x20u | 0x40u | 0x80u | (9u << 16));
    le64(g + 8, 1), le64(g + 16, 2), le64(g + 24, 4), le32(g + 32, 5), le32(g + 36, 6), le32(g + 40, 7), le32(g + 44, 16);
    le64(g + 56, 0x55), le64(g + 64, 0x100), le32(g + 72, 0xbfa00000);
    uint8_t *v = w + 192;
    hdr32(v, 0x11, 0x1f, 1, 0), le64(v + 8, 0x10), le64(v + 16, 0x20), le32(v + 24, 64), le32(v + 28, 8u << 16);
    hdr32(v + 32, 0x11, 0x20, 1, 0), le32(v + 56, 2), le32(v + 60, 1);
    CHECK(!memcmp(bin, w, len));
    roundtrip(bin, len);
    free(bin);

    /* every encoder's output round-trips */
    {
        uint8_t s[32 * 32];
        size_t n = 0;
        n += npk_shell_enc_dma_copy(s + n, 7, 1, 2, 3);
        n += npk_shell_enc_dma_strided(s + n, 0, 0x100, 0x200, 16, 4, 2, 0);
        n += npk_shell_enc_dma_list(s + n, SHELL_OP_DMA_GATHER, 0, 0x1000, 2, 16, 0x5000);
        n += npk_shell_enc_dma_list(s + n, SHELL_OP_DMA_SCATTER, 0, 0x1000, 2, 24, 0x5000);
        n += npk_shell_enc_gemm_v1(s + n, SHELL_FP8, SHELL_COL_MAJOR, 4095, 1023, 1023, 1, 2, 3);
        npk_shell_gemm_desc gd = {0};
        gd.dtype = SHELL_FP16, gd.m = 1, gd.n = 2, gd.k = 3, gd.has_beta = 1, gd.beta = 0.1f, gd.epilogue = SHELL_EPI_MUL;
        n += npk_shell_enc_gemm(s + n, &gd);
        n += npk_shell_enc_softmax(s + n, 0, SHELL_BF16, 0x10, 0x20, 8, 2);
        n += npk_shell_enc_event(s + n, SHELL_OP_EVENT_WAIT, 65535, 0);
        n += npk_shell_enc_noop(s + n, 0xffffffffu);
        for (unsigned op = 0; op < 16; op++) n += npk_shell_enc_vec(s + n, 0, op, op & 3, 0x40, 0x80, 8, op == 0 ? SHELL_VEC_EXT(1, 4) : 0);
        CHECK_EQ(n, 864);
        roundtrip(s, n);
    }
    /* random bytes, with valid and invalid opcodes / sizes / reserved bits, and odd floats */
    static const uint8_t ops[] = {0x01, 0x02, 0x03, 0x04, 0x10, 0x11, 0x12, 0x20, 0x21, 0x30, 0x00, 0x55};
    for (int it = 0; it < 300; it++) {
        uint8_t s[96 * 6];
        fill_rand(s, sizeof s);
        size_t off = 0;
        for (int k = 0; k < 6 && off + 96 <= sizeof s; k++) {
            s[off] = ops[rnd() % sizeof ops];
            unsigned sz = s[off] == 0x10 ? 1 + rnd() % 3 : (rnd() % 8 ? 1 : rnd() % 5);
            s[off + 2] = (uint8_t)sz;
            if (rnd() % 4) s[off + 3] = 0;
            if (sz == 3 && rnd() % 2) le32(s + off + 72, 0x7fc00001u); /* a NaN payload */
            off += 32u * (sz >= 1 && sz <= 3 ? sz : 1);
        }
        roundtrip(s, off);
    }
    /* errors name the line */
    asm_fails("NOOP\nFROB x=1\n", "line 2: unknown mnemonic 'FROB'");
    asm_fails("GEMM m=5000\n", "line 1: m=5000 does not fit its 12-bit field");
    asm_fails("DMA_COPY src=1 src=2\n", "given twice");
    asm_fails("DMA_COPY bogus=1\n", "has no field 'bogus'");
    asm_fails("VEC_OP op=nonsense\n", "bad value 'nonsense' for op");
    asm_fails("NOOP size=2\n", "no size=2 form");
    asm_fails("RAW hex=00ff\n", "32, 64 or 96 bytes");
    asm_fails("DMA_COPY src\n", "expected key=value");
    char *t = NULL;
    uint8_t odd[40] = {0x30, 0, 1};
    CHECK(npk_shell_disasm(odd, sizeof odd, &t) < 0);
    CHECK(strstr(npk_errmsg(), "8 trailing bytes") != NULL);
    free(t);
    return CHECK_DONE();
}
