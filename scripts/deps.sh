#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the Debian packages listed in .ci/packages that are missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
missing=()
while read -r pkg; do
  pkg=${pkg%%#*}; pkg=$(echo "$pkg" | tr -d '[:space:]')
  [ -z "$pkg" ] && continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < "$root/.ci/packages"
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# ONNX Runtime, the ONNX test oracle (tests/onnx_ort.cmakescript): onnxruntime-node from the npm
# registry, installed without its install scripts (the package ships its native library) into
# a cache folder shared by every build directory (cmake -DNPUKIT_ORT_DIR=... to move it).
ort_dir=${NPUKIT_ORT_DIR:-$HOME/.cache/npukit/ortnode}
if [ ! -f "$ort_dir/node_modules/onnxruntime-node/package.json" ]; then
  echo "installing onnxruntime-node into $ort_dir"
  mkdir -p "$ort_dir"
  npm install --ignore-scripts --no-audit --no-fund --prefix "$ort_dir" onnxruntime-node >/dev/null
fi
