// SPDX-License-Identifier: MIT
/* The operator table (docs/onnx.md's is generated from it by `npu onnx-ops`):
 * every operator of ONNX's default domain as Debian's ONNX 1.12 defines it
 * (src/graph/onnx_opsets.def, generated from its schemas by
 * scripts/onnx_opsets.cc), the few npukit runs ahead of it (opset 18), whether
 * npukit runs each and, when not, why. */
#include <string.h>

#include "graph/ops.h"

static const struct {
    const char *name, *versions;
    int deprecated;
} onnx_ops[] = {
#define NPK_OPSET(n, v, d) {#n, v, d},
#include "graph/onnx_opsets.def"
#undef NPK_OPSET
    /* ahead of ONNX 1.12 */
    {"BitwiseAnd", "18", 0},
    {"BitwiseNot", "18", 0},
    {"BitwiseOr", "18", 0},
    {"BitwiseXor", "18", 0},
    {"Mish", "18", 0},
};

size_t npk_onnx_opinfo_count(void) { return sizeof onnx_ops / sizeof onnx_ops[0]; }

int npk_onnx_opinfo_get(size_t i, npk_onnx_opinfo *o) {
    if (i >= npk_onnx_opinfo_count()) return npk_err(NPK_EINVAL, "operator %zu does not exist", i);
    memset(o, 0, sizeof *o);
    o->name = onnx_ops[i].name;
    o->versions = onnx_ops[i].versions;
    o->deprecated = onnx_ops[i].deprecated;
    o->supported = npk_onnx_op_supported(o->name);
    o->why_not = o->supported ? NULL : npk_onnx_op_unsupported_class(o->name);
    return 0;
}
