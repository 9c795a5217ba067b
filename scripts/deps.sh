#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install what is missing of the Debian packages in .ci/packages and, with --test, of what only
# the tests need: the packages marked @test there and onnxruntime-node (npm) for the ONNX
# Runtime oracle test. The main job (scripts/main.sh) runs it without --test, so it never
# needs npm or the npm registry.
# Usage: scripts/deps.sh [--test] [--dry-run | --list]
#   --dry-run: say what would be installed; --list: print every package the mode wants, one a
#   line, installed or not (and install nothing).
# .ci/packages: one package a line; unmarked: the main job uses it; `@test`: only with --test;
# `!CMD`: skipped when the command CMD exists (Debian's `npm` where nodesource's nodejs already
# ships npm).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
want_test=0 dry=0 list=0
for a in "$@"; do
  case $a in
    --test) want_test=1 ;;
    --dry-run) dry=1 ;;
    --list) list=1 ;;
    *) echo "deps.sh: unknown option '$a' (usage: deps.sh [--test] [--dry-run | --list])" >&2; exit 2 ;;
  esac
done
npm=${NPUKIT_NPM:-npm}
missing=()
while read -r line; do
  line=${line%%#*}
  read -r pkg flags <<<"$line" || true
  [ -z "${pkg:-}" ] && continue
  skip=0
  for f in ${flags:-}; do
    case $f in
      @test) [ $want_test = 1 ] || skip=1 ;;
      !*) cmd=${f#!}; [ "$cmd" = npm ] && cmd=$npm; command -v "$cmd" >/dev/null 2>&1 && skip=1 ;;
    esac
  done
  [ $skip = 1 ] && continue
  [ $list = 1 ] && { echo "$pkg"; continue; }
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < "$root/.ci/packages"
[ $list = 1 ] && exit 0
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  if [ $dry = 0 ]; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi
[ $want_test = 1 ] || exit 0
# ONNX Runtime, the ONNX test oracle (tests/onnx_ort.cmakescript): onnxruntime-node from the npm
# registry, installed without its install scripts (the package ships its native library) into
# a cache folder shared by every build directory (cmake -DNPUKIT_ORT_DIR=... to move it).
ort_dir=${NPUKIT_ORT_DIR:-$HOME/.cache/npukit/ortnode}
if [ ! -f "$ort_dir/node_modules/onnxruntime-node/package.json" ]; then
  echo "installing onnxruntime-node into $ort_dir"
  if [ $dry = 0 ]; then
    mkdir -p "$ort_dir"
    "$npm" install --ignore-scripts --no-audit --no-fund --prefix "$ort_dir" onnxruntime-node >/dev/null
  fi
fi
