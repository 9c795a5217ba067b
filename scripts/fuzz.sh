#!/usr/bin/env bash
# Build the libFuzzer targets with clang (ASan + UBSan) and run each for a
# bounded time, starting from its committed seed corpus. Any crash, leak,
# timeout or sanitizer report fails the run and leaves the input in
# build-fuzz/crash-<target>-*. Turn a crash into a regression test by
# copying that input into tests/fuzz/regressions/<corpus name>/.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-20}
shift || true
build=${FUZZ_BUILD:-$root/build-fuzz}
"$root/scripts/deps.sh"
CC=clang cmake -S "$root" -B "$build" -DNPUKIT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzzers -j"$(nproc)" >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for t in "$build"/fuzz_*; do [ -x "$t" ] && targets+=("$(basename "$t")"); done
fi
fail=0
for t in "${targets[@]}"; do
  corpus_name=${t#fuzz_}
  seeds="$root/tests/fuzz/corpus/$corpus_name"
  work=$(mktemp -d)
  [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/ 2>/dev/null || true
  log="$build/$t.log"
  if ASAN_OPTIONS=detect_leaks=1 "$build/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$build/crash-$t-" "$work" >"$log" 2>&1; then
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
    echo "fuzz $t: OK, $execs executions in ${secs}s, coverage $cov"
  else
    echo "fuzz $t: FAILED (see $log)"
    grep -E "ERROR|SUMMARY|Test unit written|abort|did not|reads 0x" "$log" | head -20 || true
    fail=1
  fi
  rm -rf "$work"
done
exit $fail
