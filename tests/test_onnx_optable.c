// SPDX-License-Identifier: MIT
/* docs/onnx.md's operator table lists every operator of the registry (issue 14):
 * each id's name must appear as a table row "| Name |". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/ops.h"

int main(void) {
    FILE *f = fopen(NPUKIT_SOURCE_DIR "/docs/onnx.md", "rb");
    CHECK(f != NULL);
    if (!f) return CHECK_DONE();
    static char doc[1 << 20];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = 0;
    for (int id = 1; id < NPK_OP_COUNT; id++) {
        char row[96];
        snprintf(row, sizeof row, "\n| %s |", npk_onnx_op_name((npk_op_id)id));
        if (!strstr(doc, row)) fprintf(stderr, "docs/onnx.md: no table row for %s\n", npk_onnx_op_name((npk_op_id)id));
        CHECK(strstr(doc, row) != NULL);
    }
    return CHECK_DONE();
}
