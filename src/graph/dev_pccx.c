// SPDX-License-Identifier: MIT
/* pccx in the ONNX executor: no backend (every node runs on the CPU reference). */
#include "graph/exec.h"

/* The pccx row of the graph-level device table (src/graph/exec.h). */
const npk_dev_graph npk_pccx_graph = {
    .name = "pccx",
    .note = "pccx: every node runs on the CPU reference: pccx computes INT4-weight x BF16 GEMV/GEMM, which cannot "
            "execute the integer or float32 ONNX operators exactly",
};
