// SPDX-License-Identifier: MIT
/* libFuzzer target: the descriptor/instruction text formats (npu asm and
 * npu disasm) of v0, pccx and shell. The first byte picks the device
 * (b % 3: v0, pccx, shell) and the mode (b & 0x80: binary):
 *
 *   text mode    the rest is assembler text. asm must either fail with a
 *                message or produce an image whose length is a whole number
 *                of descriptors/instructions; then disasm(image) must succeed
 *                and asm(disasm(image)) must give back the same bytes (every
 *                format documents this round trip).
 *   binary mode  the rest (cut to whole 64-byte descriptors for v0, 8-byte
 *                words for pccx, 32-byte units for shell) is an image. Every
 *                format disassembles every such image (what does not decode
 *                becomes op=/.word/RAW), and the text must assemble back to
 *                the same bytes.
 * Never a crash, leak or hang; a failure always leaves a message. */
#include "npukit/npu.h"
#include "npukit/pccx.h"
#include "npukit/shell.h"
#include "npukit/v0.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*asm_fn)(const char *, uint8_t **, size_t *);
typedef int (*dis_fn)(const uint8_t *, size_t, char **);

static const struct {
    const char *name;
    asm_fn as;
    dis_fn dis;
    size_t unit;      /* image length granule */
    int dis_total;    /* disasm accepts every whole-unit image */
} devs[] = {
    {"v0", npk_v0_asm, npk_v0_disasm, 64, 1},
    {"pccx", npk_pccx_asm, npk_pccx_disasm, 8, 1},
    {"shell", npk_shell_asm, npk_shell_disasm, 32, 1},
};

static void die(const char *dev, const char *what) {
    fprintf(stderr, "%s: %s (%s)\n", dev, what, npk_errmsg());
    abort();
}

/* disasm(bin) then asm again: the same bytes. */
static void round_trip(int k, const uint8_t *bin, size_t len, int must_disasm) {
    char *text = NULL;
    int rc = devs[k].dis(bin, len, &text);
    if (rc) {
        if (must_disasm) die(devs[k].name, "disasm refused an image");
        if (!npk_errmsg()[0]) die(devs[k].name, "disasm failed without a message");
        free(text);
        return;
    }
    if (!text) die(devs[k].name, "disasm returned no text");
    uint8_t *again = NULL;
    size_t alen = 0;
    if (devs[k].as(text, &again, &alen)) {
        fprintf(stderr, "text:\n%s\n", text);
        die(devs[k].name, "asm refused disasm's output");
    }
    if (alen != len || (len && memcmp(again, bin, len))) {
        fprintf(stderr, "text:\n%s\n", text);
        die(devs[k].name, "asm(disasm(image)) differs from the image");
    }
    free(again);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int k = data[0] % 3;
    if (data[0] & 0x80) {
        size_t len = (size - 1) / devs[k].unit * devs[k].unit;
        round_trip(k, data + 1, len, devs[k].dis_total);
        return 0;
    }
    char *text = malloc(size);
    if (!text) return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    uint8_t *bin = NULL;
    size_t len = 0;
    int rc = devs[k].as(text, &bin, &len);
    if (rc) {
        if (rc > 0) die(devs[k].name, "asm returned a positive status");
        if (!npk_errmsg()[0]) die(devs[k].name, "asm failed without a message");
    } else {
        if (len % (k == 2 ? 32 : devs[k].unit)) die(devs[k].name, "asm produced a partial unit");
        round_trip(k, bin, len, 1);
    }
    free(bin);
    free(text);
    return 0;
}
