/* Node-level ONNX neural-network operators beyond ops.c (kernels in
 * src/ops/ref_onnx_nn2.c). */
#include <math.h>
#include <string.h>

#include "graph/ops.h"
