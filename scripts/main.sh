#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build npukit and run the main job: the trained int8 CIFAR-10 LeNet (ONNX) on
# the default simulated NPU (v0), printing its logits, the four predicted
# classes, the partition and the performance report.
# Usage: scripts/main.sh [extra npu run options, e.g. --device shell]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${NPUKIT_SHARED_DIR:-$root/../shared}
model=$shared/models/cifar10-lenet-int8
"$root/scripts/deps.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j"$(nproc)" >/dev/null
"$root/build/npu" run "$model/model.onnx" --input "images=$model/test_data_set_0/input_0.pb" --report "$@"
echo "expected classes:  $(sed -n 's/^labels //p' "$model/expected.txt")  (from $model/expected.txt)"
