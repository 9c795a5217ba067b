#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The AVX-512 and AVX-512 VNNI kernels on an AVX2-only host (issue 26): a separate build with
# -DNPUKIT_EMULATE_AVX512=ON (SIMDe's portable intrinsics, docs/performance.md "AVX-512 on an
# AVX2 host"), where the dispatch picks the AVX-512 kernels, then the tests that check every
# kernel module at every level against its C golden. Builds only those tests (and the npu they
# depend on). Needs libsimde-dev and an AVX2 host.
# Usage: scripts/test_emu512.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-emu512}
tests=(test_isa test_gemm_f32 test_q4_gemv test_v0_ops test_threads test_shell_gemm test_onnx_fast
       test_onnx_fast_nn test_onnx_fast_small test_pccx_dev test_llm_pccx test_llm_pccx_ref test_llm_runc_recorded)
# tests that only run npu: the onnx-zoo models on the CPU path and v0 against ONNX Runtime's
# recorded outputs, at the emulated host's level (avx512vnni: the whole-model dispatch)
scripts=(onnx_zoo)
start=$(date +%s)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DNPUKIT_EMULATE_AVX512=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${tests[@]}"
"$build/npu" --version
echo "emulated AVX-512 (SIMDe) tests: ${tests[*]} ${scripts[*]}"
regex="^($(IFS='|'; echo "${tests[*]} ${scripts[*]}" | tr ' ' '|'))\$"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -R "$regex"
echo "emulated AVX-512 step: $(($(date +%s) - start)) s"
