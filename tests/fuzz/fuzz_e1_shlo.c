// SPDX-License-Identifier: MIT
/* libFuzzer target: e1 StableHLO-subset modules (YAML or JSON, docs/e1-compile.md).
 * A module that parses gets its partition report, its translation into a
 * lowering module and a compiled package; a package npukit compiled must
 * pass npukit's own staging checks, and a delegate blob is refused exactly
 * when the module has validation issues. Every failure carries a message. */
#include "npukit/e1_shlo.h"
#include "npukit/npu.h"

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
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    npk_shlo *m = NULL;
    int rc = npk_shlo_parse(&m, text);
    need_msg(rc, "parse");
    if (!rc) {
        char *s = NULL;
        need_msg(npk_shlo_partition_report(m, &s), "partition report");
        free(s);
        s = NULL;
        need_msg(npk_shlo_to_lower_json(m, &s), "lowering module");
        free(s);
        npk_e1_compile_opts o;
        npk_e1_compile_opts_default(&o);
        char *pk = NULL;
        rc = npk_shlo_compile(m, &o, &pk);
        need_msg(rc, "compile");
        if (!rc && npk_e1_package_check(pk)) {
            fprintf(stderr, "a compiled package fails its own staging checks: %s\n", npk_errmsg());
            abort();
        }
        free(pk);
        pk = NULL;
        o.format = NPK_E1_FMT_LITERT;
        int brc = npk_shlo_compile(m, &o, &pk);
        if (!npk_shlo_check_module(m) && (brc == 0) != (npk_shlo_issue_count(m) == 0)) {
            fprintf(stderr, "delegate blob refusal disagrees with the validation issues\n");
            abort();
        }
        free(pk);
        npk_shlo_free(m);
    }
    free(text);
    return 0;
}
