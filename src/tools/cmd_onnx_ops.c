// SPDX-License-Identifier: MIT
/* npu onnx-ops: the operator table (markdown) from the operator registry, ONNX's
 * schemas and the device backends' rows; docs/onnx.md holds its output. */
#include "cli.h"
#include "npukit/graph.h"

#include <stdlib.h>
#include <string.h>

int cmd_onnx_ops(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: npu onnx-ops\n\nPrints, as markdown tables, every operator of ONNX's default domain (ONNX 1.12's\n"
               "schemas, plus those npukit runs ahead of it): the operators npukit runs with their\n"
               "opset range and versions and the devices that take them, then the operators it does\n"
               "not run and why. docs/onnx.md holds this output (tests/onnx_optable_doc.cmaketest).\n\noptions:\n");
        cli_help_opts(NULL, 0);
        return 0;
    }
    int urc = cli_parse("onnx-ops", NULL, 0, NULL, argc, argv, NULL, 0, NULL);
    if (urc) return urc;
    size_t n = npk_onnx_opinfo_count();
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0)
            printf("| operator | ONNX opsets | versions | runs on a device |\n|---|---|---|---|\n");
        else
            printf("\n| not run | versions | why |\n|---|---|---|\n");
        for (size_t i = 0; i < n; i++) {
            npk_onnx_opinfo o;
            if (npk_onnx_opinfo_get(i, &o) || o.supported != !pass) continue;
            char vers[128], range[64], dev[512];
            snprintf(vers, sizeof vers, "%s", o.versions);
            for (char *p = vers; *p; p++)
                if (*p == ' ') *p = ',';
            /* "1,6,13" -> "1, 6, 13" */
            char pretty[192] = "";
            size_t at = 0;
            for (char *p = vers; *p && at + 3 < sizeof pretty; p++) {
                if (*p == ',') {
                    pretty[at++] = ',';
                    pretty[at++] = ' ';
                } else {
                    pretty[at++] = *p;
                }
            }
            pretty[at] = 0;
            long first = strtol(o.versions, NULL, 10);
            if (first >= 18) snprintf(range, sizeof range, "%ld (ahead of ONNX 1.12)", first);
            else if (o.deprecated) snprintf(range, sizeof range, "%ld..%d (deprecated at %d)", first, o.deprecated - 1, o.deprecated);
            else if (first == 17) snprintf(range, sizeof range, "17");
            else snprintf(range, sizeof range, "%ld..17", first);
            if (pass == 0) {
                npk_onnx_op_devices(o.name, dev, sizeof dev);
                printf("| %s | %s | %s | %s |\n", o.name, range, pretty, *dev ? dev : "cpu only");
            } else {
                printf("| %s | %s | %s |\n", o.name, pretty, o.why_not ? o.why_not : "not implemented");
            }
        }
    }
    return 0;
}
