// SPDX-License-Identifier: MIT
/* libFuzzer target: compiled models (.npkb, docs/npkb.md). The input is a
 * u32 GMEM length, the GMEM payload and the CMDS payload of a compiled
 * command stream: the stream parser checks it, and a stream it accepts is
 * listed (v0 and shell batches through their disassemblers). The whole input
 * is also opened as a container (header, sections, checksum). Every failure
 * carries a message; nothing crashes or leaks. */
#include "graph/cstream.h"
#include "npukit/npkb.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void need_msg(int rc, const char *what) {
    if (rc > 0 || (rc && !npk_errmsg()[0])) {
        fprintf(stderr, "%s failed (%d) without a message\n", what, rc);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    npk_npkb *k = NULL;
    need_msg(npk_npkb_open(&k, data, size), "open");
    npk_npkb_free(k);
    if (size < 4) return 0;
    size_t gl = (size_t)(data[0] | data[1] << 8 | data[2] << 16 | (uint32_t)data[3] << 24) % (size - 3);
    /* private copies, so that ASan sees reads past either payload */
    uint8_t *g = malloc(gl ? gl : 1), *c = malloc(size - 4 - gl + 1);
    if (!g || !c) {
        free(g);
        free(c);
        return 0;
    }
    memcpy(g, data + 4, gl);
    memcpy(c, data + 4 + gl, size - 4 - gl);
    npk_cstream *s = NULL;
    int rc = npk_cs_parse(&s, g, gl, c, size - 4 - gl);
    need_msg(rc, "parse");
    if (!rc) {
        FILE *f = fopen("/dev/null", "w");
        if (f) {
            need_msg(npk_cs_list(s, NULL, f), "list");
            fclose(f);
        }
        npk_cs_free(s);
    }
    free(g);
    free(c);
    return 0;
}
