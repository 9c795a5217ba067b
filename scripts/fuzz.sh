#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the libFuzzer targets with clang (ASan + UBSan) and run each for a
# bounded time, starting from a copy of its committed seed corpus (and its
# regression inputs). Any crash, leak, timeout (an input running over 10 s),
# out-of-memory or sanitizer report fails the run and leaves the input in
# build-fuzz/crash-<target>-*. Turn a crash into a regression test by copying
# that input into tests/fuzz/regressions/<corpus name>/ (docs/fuzzing.md).
#
# Usage: scripts/fuzz.sh [--ci] [--cost] [--budget SECONDS] [--jobs N] [SECONDS_PER_TARGET] [TARGET...]
#   SECONDS_PER_TARGET  run time of each target (default 20)
#   --budget SECONDS    total wall-clock budget for build + all targets: the
#                       time left after the build is shared out evenly
#                       (overrides SECONDS_PER_TARGET; at least 5 s each)
#   --ci                --budget 300 (the CI bound: at most 5 minutes together)
#   --jobs N            targets run concurrently (default 2, never above nproc)
#   --cost              cost-bounded mode (issue 32): every device-driving target
#                       (fuzz_device_*, fuzz_*_ring, fuzz_pccx_queue, fuzz_qtest)
#                       measures each input's host work (NPK_FUZZ_COST=1: CPU time,
#                       guest bytes moved and held, bounds NPK_FUZZ_MAX_MS/_MOVED/_MEM)
#                       and may allocate at most 512 MB at once: an input that costs
#                       more fails. The other targets run as without --cost.
# Environment: FUZZ_BUILD (default build-fuzz), FUZZ_KEEP=1 keeps the
# generated corpora in $FUZZ_BUILD/corpus-<target>.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=20
budget=0
jobs=2
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --ci) budget=300 ;;
    --budget) budget=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --cost) export NPK_FUZZ_COST=1 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    [0-9]*) secs=$1 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
cost=0
[ "${NPK_FUZZ_COST:-0}" != 0 ] && cost=1
# the targets that drive a device model and bound its host cost (tests/fuzz/fuzz_util.h)
cost_target() {
  case $1 in fuzz_device_*|fuzz_*_ring|fuzz_pccx_queue|fuzz_qtest) return 0 ;; *) return 1 ;; esac
}
cores=$(nproc)
[ "$jobs" -gt "$cores" ] && jobs=$cores
[ "$jobs" -lt 1 ] && jobs=1
start=$(date +%s)
build=${FUZZ_BUILD:-$root/build-fuzz}
"$root/scripts/deps.sh" --test  # clang and its fuzzer runtime
CC=clang cmake -S "$root" -B "$build" -DNPUKIT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzzers -j"$cores" >/dev/null
built=$(date +%s)
if [ ${#targets[@]} -eq 0 ]; then
  for t in "$build"/fuzz_*; do [ -x "$t" ] && [ -f "$t" ] && targets+=("$(basename "$t")"); done
fi
n=${#targets[@]}
if [ "$budget" -gt 0 ]; then
  left=$((budget - (built - start) - 10 * ((n + jobs - 1) / jobs) - 10)) # per-round start/teardown margin
  rounds=$(((n + jobs - 1) / jobs))
  secs=$((left / rounds))
  [ "$secs" -lt 5 ] && secs=5
fi
echo "fuzz: build took $((built - start)) s; $n targets, $jobs at a time, ${secs} s each$([ $cost = 1 ] && echo ", host cost bounded")"

run_one() {
  local t=$1 corpus_name=${1#fuzz_}
  local work="$build/corpus-$t"
  rm -rf "$work"
  mkdir -p "$work"
  for d in "$root/tests/fuzz/corpus/$corpus_name" "$root/tests/fuzz/regressions/$corpus_name"; do
    [ -d "$d" ] && cp -r "$d"/. "$work"/ 2>/dev/null || true
  done
  local log="$build/$t.log" malloc_mb=2048
  if [ $cost = 1 ] && cost_target "$t"; then malloc_mb=512; fi
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
     timeout $((secs + 60)) "$build/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
       -malloc_limit_mb="$malloc_mb" -print_final_stats=1 -artifact_prefix="$build/crash-$t-" "$work" >"$log" 2>&1; then
    local execs cov
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
    echo "fuzz $t: OK, $execs executions in ${secs}s, coverage $cov"
    [ "${FUZZ_KEEP:-0}" = 1 ] || rm -rf "$work"
    return 0
  fi
  echo "fuzz $t: FAILED (see $log)"
  grep -E "ERROR|SUMMARY|Test unit written|invariant|guard region|did not|reads 0x|host cost" "$log" | head -20 || true
  return 1
}

fail=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || fail=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || fail=1; done
echo "fuzz: total $(($(date +%s) - start)) s"
exit $fail
