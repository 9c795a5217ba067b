#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build every configuration the project promises to build warning-free
# (-Wall -Wextra -Werror): Debug, Release, RelWithDebInfo and MinSizeRel, each
# with gcc and with clang (8 builds, in build-matrix/<compiler>-<type>).
# Builds only (no tests): scripts/test.sh runs the tests.
#   scripts/build_matrix.sh [-jN]        default -j2
# Exits non-zero on the first failing configuration and names it.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${1:--j2}"
mkdir -p build-matrix
if ! command -v clang >/dev/null; then
  echo "build_matrix: clang not found; installing it (scripts/deps.sh --test)"
  scripts/deps.sh --test
fi
for cc in gcc clang; do
  for type in Debug Release RelWithDebInfo MinSizeRel; do
    dir="build-matrix/$cc-$type"
    echo "== $cc $type ($dir)"
    if ! { CC=$cc cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" >"$dir.log" 2>&1 &&
           cmake --build "$dir" "$jobs" >>"$dir.log" 2>&1; }; then
      grep -E "error|warning" "$dir.log" | head -20
      echo "build_matrix: $cc $type FAILED (log $dir.log)"
      exit 1
    fi
  done
done
echo "build_matrix: all 8 configurations built"
