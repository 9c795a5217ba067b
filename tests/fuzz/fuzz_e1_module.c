// SPDX-License-Identifier: MIT
/* libFuzzer target: JSON lowering records and modules for the e1
 * (npk_lower_module_check, the parser and validator `npu lower` runs before
 * any MMIO). A module that validates and is small is then run on the e1
 * model through the driver (npk_lower_module_run): validation must have
 * rejected everything the device or the lowering cannot do, so a run of a
 * checked module never fails, and its result is valid JSON. */
#include "npukit/e1.h"
#include "npukit/e1_lower.h"
#include "npukit/npu.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    int rc = npk_lower_module_check(text);
    if (rc) {
        if (rc > 0 || !npk_errmsg()[0]) {
            fprintf(stderr, "module_check failed (%d) without a message\n", rc);
            abort();
        }
        free(text);
        return 0;
    }
    if (size <= 2048) {
        npk_port *p = NULL;
        npk_e1 *e = NULL;
        if (npk_port_open(&p, NULL, "e1", NULL) || npk_e1_open(&e, p)) abort();
        npk_lower_module_opts o = {.batching = 1, .include_golden = 1};
        char *res = NULL;
        rc = npk_lower_module_run(e, text, &o, &res);
        if (rc) {
            fprintf(stderr, "a module that passed npk_lower_module_check failed to run: %s\n", npk_errmsg());
            abort();
        }
        json_error_t err;
        json_t *j = json_loads(res, 0, &err);
        if (!j) {
            fprintf(stderr, "module result is not JSON: %s\n", err.text);
            abort();
        }
        json_decref(j);
        free(res);
        npk_e1_close(e);
        npk_port_close(p);
    }
    free(text);
    return 0;
}
