// SPDX-License-Identifier: MIT
/* v0 text form: known lines encode to the words the ABI defines (computed
 * by hand from include/npukit/v0.h's layout), random images round-trip
 * exactly, and errors name the line or byte offset. */
#include "check.h"
#include "npukit/npu.h"
#include "npukit/v0.h"

#include <stdlib.h>

static uint32_t word(const uint8_t *bin, int d, int w) {
    const uint8_t *p = bin + d * 64 + w * 4;
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void test_known(void) {
    const char *text =
        "# two descriptors\n"
        "matmul_s8_relu m=64 n=32 k=128 a=0x180000000 sa=128 b=0x80010000 sb=32 c=0x80020000 sc=128 "
        "flags=signed|irq tag=0xdead\n"
        "\n"
        "conv2d_s8 h=32 w=30 cin=3 cout=6 ksize=5 stride_h=2 stride_w=1 pad_h=2 pad_w=1 dil=3 flags=signed  # LeNet-ish\n"
        "maxpool_s8 h=28 w=28 ch=6 win=2 pstride=2 ppad=1\n"
        "op=0x1234 word7=0xcafef00d flags=0x8000\n";
    uint8_t *bin;
    size_t len;
    CHECK_EQ(npk_v0_asm(text, &bin, &len), 0);
    CHECK_EQ(len, 4 * 64);
    CHECK_EQ(word(bin, 0, 0), 0x11u | (0x3u << 16));
    CHECK_EQ(word(bin, 0, 1), 64);
    CHECK_EQ(word(bin, 0, 2), 32);
    CHECK_EQ(word(bin, 0, 3), 128);
    CHECK_EQ(word(bin, 0, 4), 0x80000000u);
    CHECK_EQ(word(bin, 0, 5), 1);
    CHECK_EQ(word(bin, 0, 6), 0x80010000u);
    CHECK_EQ(word(bin, 0, 12), 128);
    CHECK_EQ(word(bin, 0, 15), 0xdead);
    CHECK_EQ(word(bin, 1, 0), 0x20u | (0x2u << 16));
    CHECK_EQ(word(bin, 1, 1), 32u | 30u << 16);
    CHECK_EQ(word(bin, 1, 2), 6);
    CHECK_EQ(word(bin, 1, 3), 5u | 3u << 16);
    CHECK_EQ(word(bin, 1, 13), 2u | 1u << 4 | 2u << 8 | 1u << 12 | 3u << 16);
    CHECK_EQ(word(bin, 2, 0), 0x40);
    CHECK_EQ(word(bin, 2, 1), 28u | 28u << 16);
    CHECK_EQ(word(bin, 2, 2), 6);
    CHECK_EQ(word(bin, 2, 14), 2u | 2u << 4 | 2u << 8 | 1u << 12);
    CHECK_EQ(word(bin, 3, 0), 0x1234u | 0x8000u << 16);
    CHECK_EQ(word(bin, 3, 7), 0xcafef00du);
    char *t;
    CHECK_EQ(npk_v0_disasm(bin, len, &t), 0);
    CHECK(strstr(t, "matmul_s8_relu m=64 n=32 k=128 a=0x180000000") != NULL);
    CHECK(strstr(t, "flags=irq|signed tag=0xdead") != NULL);
    CHECK(strstr(t, "op=0x1234") != NULL);
    uint8_t *bin2;
    size_t len2;
    CHECK_EQ(npk_v0_asm(t, &bin2, &len2), 0);
    CHECK_EQ(len2, len);
    CHECK(!memcmp(bin, bin2, len));
    free(t), free(bin), free(bin2);
}

static void test_random_roundtrip(void) {
    uint64_t s = 77;
    static const uint32_t ops[] = {0x00, 0x10, 0x11, 0x20, 0x21, 0x30, 0x40, 0xFE, 0xFF, 0x5, 0xFFFF};
    for (int iter = 0; iter < 200; iter++) {
        size_t n = 1 + iter % 9;
        uint8_t *img = malloc(n * 64);
        for (size_t i = 0; i < n * 64; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            img[i] = (uint8_t)s;
        }
        for (size_t d = 0; d < n; d++) { /* a known opcode most of the time */
            uint32_t op = ops[(s >> 8) % 11];
            if (iter % 3) img[d * 64] = (uint8_t)op, img[d * 64 + 1] = (uint8_t)(op >> 8);
            if (iter % 2) memset(img + d * 64 + 4 * (1 + d % 15), 0, 4);
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        }
        char *t;
        uint8_t *back;
        size_t blen;
        int ok = npk_v0_disasm(img, n * 64, &t) == 0;
        CHECK(ok);
        if (!ok) continue;
        CHECK_EQ(npk_v0_asm(t, &back, &blen), 0);
        CHECK_EQ(blen, n * 64);
        int same = !memcmp(img, back, n * 64);
        CHECK(same);
        if (!same) fprintf(stderr, "round trip differs:\n%s", t);
        free(t), free(back), free(img);
    }
}

static void expect_error(const char *text, const char *needle) {
    uint8_t *bin = NULL;
    size_t len;
    int rc = npk_v0_asm(text, &bin, &len);
    CHECK_EQ(rc, -NPK_EFORMAT);
    CHECK(strstr(npk_errmsg(), needle) != NULL);
    if (!strstr(npk_errmsg(), needle)) fprintf(stderr, "message: %s (wanted %s)\n", npk_errmsg(), needle);
    CHECK(bin == NULL);
}

static void test_errors(void) {
    expect_error("nop\nmatmul_s9 m=1\n", "line 2: unknown mnemonic 'matmul_s9'");
    expect_error("nop tag=0x100000000\n", "line 1: value 4294967296 for 'tag' does not fit 32 bits");
    expect_error("\n\nconv2d_s8 h=70000\n", "line 3");
    expect_error("relu m=abc\n", "'abc' for 'm' is not a number");
    expect_error("relu q=1\n", "unknown field 'q'");
    expect_error("relu flags=signed|loud\n", "unknown flag 'loud'");
    expect_error("relu m=1 op=3\n", "op= must come first");
    expect_error("relu word16=1\n", "word0..word15");
    expect_error("relu stride_h=16\n", "does not fit 4 bits");
    uint8_t img[65] = {0};
    char *t = NULL;
    CHECK_EQ(npk_v0_disasm(img, 65, &t), -NPK_EFORMAT);
    CHECK(strstr(npk_errmsg(), "byte offset 64") != NULL);
    CHECK(t == NULL);
    /* empty input is an empty ring */
    uint8_t *bin;
    size_t len;
    CHECK_EQ(npk_v0_asm("# nothing\n\n", &bin, &len), 0);
    CHECK_EQ(len, 0);
    free(bin);
}

int main(void) {
    test_known();
    test_random_roundtrip();
    test_errors();
    return CHECK_DONE();
}
