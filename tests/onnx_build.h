// SPDX-License-Identifier: MIT
/* The ONNX model builder lives in the graph layer (src/graph/onnx_build.h). */
#include "graph/onnx_build.h"
