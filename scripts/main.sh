#!/usr/bin/env bash
# Build npukit and run the main job on the default simulated NPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j"$(nproc)" >/dev/null
exec "$root/build/npu" demo --report
