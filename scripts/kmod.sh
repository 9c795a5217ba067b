#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The npukit kernel driver (kmod/) outside a guest: build, sparse, checkpatch.
# Usage: scripts/kmod.sh kdir                 print the kernel headers directory used
#        scripts/kmod.sh build OUT            build OUT/npukit.ko (copies kmod/ to OUT)
#        scripts/kmod.sh test-build OUT       build, then check the module's licence, PCI
#                                             aliases and that the UAPI header compiles
#                                             in user space (C11, -Wall -Wextra -Werror)
#        scripts/kmod.sh test-sparse OUT      make C=2 (sparse on every file): no warning
#        scripts/kmod.sh test-checkpatch OUT  checkpatch.pl --strict from linux-source-6.1
#                                             (extracted into a cache, never committed): clean
#        scripts/kmod.sh test-guest OUT NPU KTEST MODELDIR
#                                             in `NPU vp run` guests (docs/kmod.md "Tests"): the
#                                             driver's checks (npukit_ktest: v0 contract, 10,000
#                                             fuzzed ioctls, bus error and hang recovery), 20
#                                             unload/load cycles without leaked buffers or IRQs,
#                                             the LeNet (MODELDIR) on v0 and shell over kmd: the
#                                             output of the host's sim port byte for byte and, on
#                                             v0, its busy cycles (PERF_CYCLES); npu exec of the
#                                             compiled LeNet over the carve-out; no WARNING, BUG,
#                                             Oops or Call Trace in any guest's kernel log
# KDIR=DIR picks the headers; by default the newest /usr/src/linux-headers-*-amd64 (Debian's
# linux-headers-amd64, the kernel `npu vp run` boots). Exits 77 (a ctest skip) with the
# reason when a package is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }

kdir() {
  if [ -n "${KDIR:-}" ]; then echo "$KDIR"; return; fi
  local d
  d=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$d" ] && [ -f "$d/Makefile" ] || skip "no kernel headers: /usr/src/linux-headers-*-amd64 is missing (apt-get install linux-headers-amd64)"
  echo "$d"
}

build() { # OUT [make args...]
  local out=$1; shift
  local k; k=$(kdir)
  rm -rf "$out"; mkdir -p "$out"
  cp -r "$root/kmod/." "$out/"
  cp "$root/include/npukit/uapi/npukit_accel.h" "$out/" # the UAPI header beside npukit.c (Kbuild)
  make -s -C "$out" KDIR="$k" "$@"
}

cmd=${1:-}; out=${2:-}
case "$cmd" in
  kdir) kdir ;;
  build) build "$out" ;;
  test-build)
    build "$out" 2>&1 | grep -v "Skipping BTF generation" || true
    [ -f "$out/npukit.ko" ] || { echo "FAIL: npukit.ko was not built"; exit 1; }
    info=$(modinfo "$out/npukit.ko")
    echo "$info" | grep -qx 'license: *Dual MIT/GPL' || { echo "FAIL: licence is not 'Dual MIT/GPL':"; echo "$info"; exit 1; }
    for dev in 00004E01 00004E02 00004E03 00004E04; do
      echo "$info" | grep -q "^alias: *pci:v00001234d${dev}sv" || { echo "FAIL: no PCI alias for 1234:$dev"; echo "$info"; exit 1; }
    done
    echo "$info" | grep -q '^parm: *irq:' || { echo "FAIL: no irq module parameter"; exit 1; }
    vermagic=$(echo "$info" | sed -n 's/^vermagic: *//p')
    case "$vermagic" in "$(basename "$(kdir)" | sed 's/^linux-headers-//') "*) ;; *) echo "FAIL: vermagic '$vermagic' does not match $(kdir)"; exit 1 ;; esac
    # the UAPI header in user space: self-contained, C11 clean, the layout the header promises
    cat > "$out/uapi_check.c" <<'EOF'
#include "npukit_accel.h"
#include <stddef.h>
_Static_assert(sizeof(struct npukit_info) == 88, "npukit_info");
_Static_assert(sizeof(struct npukit_bo_create) == 32, "npukit_bo_create");
_Static_assert(sizeof(struct npukit_submit) == 56, "npukit_submit");
_Static_assert(sizeof(struct npukit_wait) == 112, "npukit_wait");
_Static_assert(sizeof(struct npukit_clock) == 48, "npukit_clock");
_Static_assert(sizeof(struct npukit_counters) == 144, "npukit_counters");
_Static_assert(offsetof(struct npukit_wait, desc) == 32, "npukit_wait.desc");
int main(void) { return NPUKIT_IOCTL_WAIT == NPUKIT_IOCTL_SUBMIT || NPUKIT_IOCTL_CLOCK == NPUKIT_IOCTL_IRQ; }
EOF
    ${CC:-cc} -std=c11 -Wall -Wextra -Werror -pedantic -I"$root/include/npukit/uapi" -o "$out/uapi_check" "$out/uapi_check.c"
    "$out/uapi_check"
    if echo 'int main(void){return 0;}' | ${CC:-cc} -m32 -x c - -o /dev/null 2>/dev/null; then
      ${CC:-cc} -m32 -std=c11 -Wall -Wextra -Werror -I"$root/include/npukit/uapi" -o "$out/uapi_check32" "$out/uapi_check.c"
      echo "UAPI layout checked for 64- and 32-bit user space"
    else
      echo "UAPI layout checked for 64-bit user space (no -m32 toolchain for the 32-bit check)"
    fi
    echo "OK: $out/npukit.ko built against $(kdir) ($vermagic)" ;;
  test-sparse)
    command -v sparse >/dev/null || skip "sparse is missing (apt-get install sparse)"
    log=$(build "$out" C=2 2>&1 || true)
    echo "$log" | grep -v "Skipping BTF generation" || true
    [ -f "$out/npukit.ko" ] || { echo "FAIL: the build with sparse failed"; exit 1; }
    if echo "$log" | grep -E "(warning|error):"; then echo "FAIL: sparse or the compiler reported the lines above"; exit 1; fi
    echo "OK: make C=2 clean (sparse $(sparse --version 2>/dev/null || echo '?'))" ;;
  test-checkpatch)
    src=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -1 || true)
    [ -n "$src" ] || skip "no linux-source-6.1 tarball in /usr/src (apt-get install linux-source-6.1)"
    mkdir -p "$out"
    # extracting from the .tar.xz reads the whole tarball (~1.5 min): keep the three files in a
    # cache named after the tarball's size and time, shared by build directories
    cache=${NPUKIT_CACHE:-$HOME/.cache/npukit}/checkpatch-$(stat -c %s-%Y "$src")
    cp="$cache/scripts/checkpatch.pl"
    if [ ! -f "$cp" ]; then
      rm -rf "$cache.tmp"; mkdir -p "$cache.tmp"
      tar -xf "$src" -C "$cache.tmp" --strip-components=1 --wildcards \
        '*/scripts/checkpatch.pl' '*/scripts/spelling.txt' '*/scripts/const_structs.checkpatch'
      rm -rf "$cache"; mv "$cache.tmp" "$cache"
    fi
    cd "$root/kmod"
    files=$(ls npukit.c ../include/npukit/uapi/npukit_accel.h Kbuild Makefile)
    perl "$cp" --strict --no-tree --terse --show-types -f $files | tee "$out/checkpatch.log"
    if grep -E "(ERROR|WARNING|CHECK):" "$out/checkpatch.log" >/dev/null; then echo "FAIL: checkpatch --strict"; exit 1; fi
    echo "OK: checkpatch.pl --strict clean on $(echo $files)" ;;
  test-guest)
    npu=${3:?NPU}; ktest=${4:?KTEST}; model=${5:?MODELDIR}
    command -v "${NPUKIT_QEMU:-qemu-system-x86_64}" >/dev/null || skip "qemu-system-x86_64 is missing (apt-get install qemu-system-x86)"
    ls /boot/vmlinuz-* >/dev/null 2>&1 || skip "no guest kernel /boot/vmlinuz-* (apt-get install linux-image-amd64)"
    vpnpu=${NPUKIT_VP_NPU:-$npu} # the npu whose `vp run` starts the guests (the same one by default)
    "$vpnpu" vp run --help >/dev/null 2>&1 || skip "$npu has no 'vp run' (the virtual platform of issue 28)"
    [ -f "$model/model.onnx" ] || { echo "FAIL: missing $model/model.onnx"; exit 1; }
    build "$out/mod" 2>&1 | grep -v "Skipping BTF generation" || true
    ko=$out/mod/npukit.ko
    [ -f "$ko" ] || { echo "FAIL: npukit.ko was not built"; exit 1; }
    kver=$(basename "$(ls /boot/vmlinuz-* | sort -V | tail -1)" | sed 's/^vmlinuz-//')
    modinfo -F vermagic "$ko" | grep -q "^$kver " || { echo "FAIL: npukit.ko ($(modinfo -F vermagic "$ko")) is not for the guest kernel $kver: install the linux-headers-amd64 that matches linux-image-amd64"; exit 1; }
    in="images=$model/test_data_set_0/input_0.pb"
    seed=${NPUKIT_FUZZ_SEED:-2826}
    # The guests run under TCG; on a loaded host a vCPU can be starved for longer than the kernel's
    # default 21 s RCU stall timeout, and its stall report (with a "Call Trace") would fail the
    # warning check below although no driver code misbehaved. 300 s (the kernel's maximum) keeps
    # the detector for real lockups while the guests' own timeouts (300 s) bound a hang.
    export NPU_VP_APPEND="${NPU_VP_APPEND:+$NPU_VP_APPEND }rcupdate.rcu_cpu_stall_timeout=300"
    # guest NAME DEVICE [vp run options] -- SCRIPT: the console (CR stripped) in $out/NAME.log,
    # the text between "==BEGIN K==" and "==END K==" lines in $out/NAME.K
    guest() {
      local name=$1; shift
      local t0=$SECONDS rc=0
      timeout 600 "$vpnpu" vp run --npu "$npu" --module "$ko" --add "$ktest:/bin/npukit_ktest" --add "$ko:/root/npukit.ko" \
        --add "$model/model.onnx:/root/model.onnx" --add "$model/test_data_set_0/input_0.pb:/root/input_0.pb" \
        --timeout 300 "$@" > "$out/$name.raw" 2>&1 || rc=$?
      tr -d '\r' < "$out/$name.raw" > "$out/$name.log"
      echo "guest $name: exit $rc in $((SECONDS - t0)) s"
      if grep -E "WARNING:|BUG:|Oops|Call Trace|general protection|kernel panic" "$out/$name.log"; then
        echo "FAIL: guest $name: the kernel log above has a warning"; exit 1
      fi
      if [ $rc -ne 0 ]; then tail -40 "$out/$name.log"; echo "FAIL: guest $name exited $rc"; exit 1; fi
    }
    section() { sed -n "/^==BEGIN $2==\$/,/^==END $2==\$/p" "$out/$1.log" | sed '1d;$d'; }
    dmesg_check='dmesg | grep -E "WARNING:|BUG:|Oops|Call Trace|general protection" && exit 1; true'
    run_lenet='echo "==BEGIN out=="; npu run model.onnx --device $D --input images=input_0.pb --port kmd:/dev/npu0 --report=report.txt 2>err.txt; echo "==END out=="; echo "==BEGIN err=="; cat err.txt report.txt; echo "==END err=="; echo "jobs-$D: $(cat /sys/class/misc/npu0/jobs)"'

    # 1. v0: the LeNet, the driver's own checks, the fuzzer, unload/load
    # (the LeNet first: the report's busy cycles are the device's PERF_CYCLES since reset)
    # (npu exec of the compiled LeNet: its arena is at 0x80000000, so the guest keeps 2 GiB to
    # 2.5 GiB from the kernel (mem=2G) and the driver's carve-out covers it)
    "$npu" compile --device v0 "$model/model.onnx" -o "$out/lenet-v0.npkb" > /dev/null
    guest v0 --device v0 --mem 2560M --dma 512M --add "$out/lenet-v0.npkb:/root/lenet-v0.npkb" -- "set -e; D=v0; $run_lenet;
      rmmod npukit; insmod /root/npukit.ko carveout_base=0x80000000 carveout_size=0x1f000000;
      echo '==BEGIN exec=='; npu exec lenet-v0.npkb --input images=input_0.pb --port kmd:/dev/npu0,carveout 2>exec.err || { cat exec.err; exit 1; }; echo '==END exec==';
      npukit_ktest info /dev/npu0; npukit_ktest v0 /dev/npu0; npukit_ktest clock /dev/npu0;
      npukit_ktest fuzz /dev/npu0 10000 $seed;
      for i in \$(seq 20); do rmmod npukit; ! grep npukit /proc/interrupts;
        if [ \$((i % 2)) = 0 ]; then insmod /root/npukit.ko irq=1; grep -q npukit /proc/interrupts; else insmod /root/npukit.ko; fi;
        npukit_ktest buffers /dev/npu0 /sys/class/misc/npu0/buffers; done; echo 'load/unload: 20 cycles';
      npukit_ktest v0 /dev/npu0; $dmesg_check"
    grep -E "^(v0|clock|fuzz|load/unload):" "$out/v0.log"
    # 2. shell: the LeNet, then the fuzzer on another device kind
    guest shell --device shell -- "set -e; D=shell; $run_lenet; npukit_ktest fuzz /dev/npu0 10000 $seed; $dmesg_check"
    grep -E "^fuzz:" "$out/shell.log"
    # e1 and pccx in one guest (two PCI functions, /dev/npu0 and /dev/npu1): the fuzzer on each
    # e1 and pccx in one guest (two PCI functions, /dev/npu0 and /dev/npu1): the e1 example module
    # (npu lower) and 16 stories260K tokens (npu llm) over kmd, then the fuzzer on each
    stories=$(dirname "$model")/stories260K
    guest e1-pccx --device e1 --device pccx --add "$stories:/root/st" --add "$root/examples/e1-module.json:/root/" -- "set -e;
      echo '==BEGIN e1=='; npu lower --device e1 e1-module.json --port kmd:/dev/npu0 2>e1.err || { cat e1.err; exit 1; }; echo '==END e1=='; echo \"jobs-e1: \$(cat /sys/class/misc/npu0/jobs)\";
      echo '==BEGIN llm=='; npu llm --model st/stories260K.bin --tokenizer st/tok512.bin --device pccx --steps 16 --report --port kmd:/dev/npu1 2>&1; echo '==END llm==';
      echo \"jobs-pccx: \$(cat /sys/class/misc/npu1/jobs)\";
      for n in 0 1; do npukit_ktest info /dev/npu\$n; npukit_ktest fuzz /dev/npu\$n 10000 $seed; done; $dmesg_check"
    grep -E "^(api|fuzz:)" "$out/e1-pccx.log"
    # 3, 4. device faults on DMA reads: a bus error and a hang, recovered
    guest bus-error --device v0 --fault 'read@0+0x10000000000=error*1' -- "set -e; npukit_ktest fault /dev/npu0 error; $dmesg_check"
    guest hang --device v0 --fault 'read@0+0x10000000000=hang*1' --settle-ms 20 -- "set -e; npukit_ktest fault /dev/npu0 hang; $dmesg_check"
    grep -E "^fault:" "$out/bus-error.log" "$out/hang.log"
    # the runtime's job path under a bus error: the v0 driver's message names it (from the kernel's
    # WAIT_ERROR), the kernel recovered the device, the next run over kmd is right
    # (pccx and shell too, in the same guest: the fault rule is each server's; /dev/npu1, /dev/npu2)
    guest run-fault --device v0 --device pccx --device shell --fault 'read@0+0x10000000000=error*1' --add "$stories:/root/st" -- "for i in 1 2; do echo ==BEGIN run\$i==;
      npu run model.onnx --device v0 --input images=input_0.pb --port kmd:/dev/npu0 2>&1; echo rc=\$?; echo ==END run\$i==;
      echo ==BEGIN llm\$i==; npu llm --model st/stories260K.bin --tokenizer st/tok512.bin --device pccx --steps 4 --port kmd:/dev/npu1 2>&1; echo rc=\$?; echo ==END llm\$i==;
      echo ==BEGIN shell\$i==; npu run model.onnx --device shell --input images=input_0.pb --port kmd:/dev/npu2 2>&1; echo rc=\$?; echo ==END shell\$i==; done; $dmesg_check"
    r1=$(section run-fault run1); r2=$(section run-fault run2)
    echo "$r1" | grep -q "rc=1" && echo "$r1" | grep -qE "bus response error at address 0x[0-9a-f]+ \(err_code 0x06, bus_error\)" ||
      { echo "$r1"; echo "FAIL: the faulted LeNet run over kmd must fail naming the bus error"; exit 1; }
    echo "$r2" | grep -q "rc=0" && echo "$r2" | grep -q "predicted classes: 3 0 8 0" ||
      { echo "$r2"; echo "FAIL: the LeNet run over kmd after the bus error must succeed"; exit 1; }
    echo "runtime over kmd: $(echo "$r1" | grep -o "v0: descriptor.*bus_error)" | head -1); the next run is right"
    l1=$(section run-fault llm1); l2=$(section run-fault llm2)
    echo "$l1" | grep -q "rc=1" && echo "$l1" | grep -qE "pccx fault [A-Z_]+ \(code [0-9]+\) at instruction #[0-9]+ \`[a-z]" ||
      { echo "$l1"; echo "FAIL: the faulted npu llm over kmd must fail naming the fault and the instruction"; exit 1; }
    echo "$l2" | grep -q "rc=0" && echo "$l2" | grep -q "^Once upon a time" ||
      { echo "$l2"; echo "FAIL: npu llm over kmd after the fault must succeed"; exit 1; }
    echo "runtime over kmd: $(echo "$l1" | grep -o "pccx fault.*queue flushed" | head -1); the next run is right"
    s1=$(section run-fault shell1); s2=$(section run-fault shell2)
    echo "$s1" | grep -q "rc=1" && echo "$s1" | grep -qE "shell: [A-Za-z_ ]+ at 0x[0-9a-f]+ \(descriptor at ring offset 0x[0-9a-f]+: [A-Za-z_0-9]+ \(tag" ||
      { echo "$s1"; echo "FAIL: the faulted LeNet run on shell over kmd must fail naming the error and the descriptor"; exit 1; }
    echo "$s2" | grep -q "rc=0" && echo "$s2" | grep -q "predicted classes: 3 0 8 0" ||
      { echo "$s2"; echo "FAIL: the LeNet run on shell over kmd after the fault must succeed"; exit 1; }
    echo "runtime over kmd: $(echo "$s1" | grep -o "shell: .*)" | head -1); the next run is right"

    for dev in v0 shell; do
      "$npu" run "$model/model.onnx" --device $dev --input "$in" --report="$out/host-$dev.report" > "$out/host-$dev.out" \
        2> "$out/host-$dev.err" || { cat "$out/host-$dev.err"; echo "FAIL: host run on $dev"; exit 1; }
      cat "$out/host-$dev.report" >> "$out/host-$dev.err" # the report goes to stdout or a file (issue 30)
      log=v0; [ $dev = shell ] && log=shell
      section $log out > "$out/guest-$dev.out"
      section $log err > "$out/guest-$dev.err"
      grep -q "predicted classes" "$out/host-$dev.out" || { echo "FAIL: no prediction on the host ($dev)"; exit 1; }
      if ! cmp -s "$out/host-$dev.out" "$out/guest-$dev.out"; then
        diff "$out/host-$dev.out" "$out/guest-$dev.out" | head -20; echo "FAIL: LeNet on $dev over kmd differs from the host's sim port"; exit 1
      fi
      echo "LeNet on $dev over kmd: output identical to the host's sim port ($(grep -c . "$out/host-$dev.out") lines)"
    done
    section v0 exec > "$out/guest-exec.out"
    if ! cmp -s "$out/host-v0.out" "$out/guest-exec.out"; then
      diff "$out/host-v0.out" "$out/guest-exec.out" | head -20; echo "FAIL: npu exec of the compiled LeNet over kmd (carve-out) differs from npu run on the host"; exit 1
    fi
    echo "npu exec of the compiled LeNet on v0 over kmd (carve-out): output identical to the host's npu run"
    hb=$(grep -o "busy [0-9]* cycles (PERF counter)" "$out/host-v0.err" | head -1)
    gb=$(grep -o "busy [0-9]* cycles (PERF counter)" "$out/guest-v0.err" | head -1)
    [ -n "$hb" ] && [ "$hb" = "$gb" ] || { echo "FAIL: v0 device cycles: host '$hb', guest '$gb'"; exit 1; }
    echo "LeNet on v0: device $hb on the host's sim port and in the guest"
    # the device's cycles: the kmd port steps the device's clock as the sim port steps the model
    for dev in v0 shell; do
      hc=$(grep -o "total device cycles *[0-9]*" "$out/host-$dev.err" | head -1)
      gc=$(grep -o "total device cycles *[0-9]*" "$out/guest-$dev.err" | head -1)
      [ -n "$hc" ] && [ "$hc" = "$gc" ] || { echo "FAIL: LeNet on $dev: host '$hc', guest '$gc'"; exit 1; }
      echo "LeNet on $dev: $hc on the host's sim port and in the guest over kmd"
    done
    # the jobs went through the kernel (NPUKIT_IOCTL_SUBMIT), not register writes
    for dev in v0 shell; do
      jobs=$(sed -n "s/^jobs-$dev: //p" "$out/$dev.log")
      [ "${jobs:-0}" -gt 0 ] || { echo "FAIL: the LeNet on $dev over kmd started no job through the kernel (jobs '$jobs')"; exit 1; }
      echo "LeNet on $dev over kmd: $jobs jobs through NPUKIT_IOCTL_SUBMIT"
    done
    # e1: the lowering's JSON result (outputs, simulated cycles per record, counters) but for "port"
    "$npu" lower --device e1 "$root/examples/e1-module.json" > "$out/host-e1.out" 2> "$out/host-e1.err" || { cat "$out/host-e1.err"; echo "FAIL: host npu lower"; exit 1; }
    # (the register accesses user space made differ: over kmd the kernel makes a batch's own)
    nomm() { sed 's/"mmio_accesses":[0-9]*/"mmio_accesses":N/g'; }
    nomm < "$out/host-e1.out" > "$out/host-e1.cmp"
    section e1-pccx e1 | sed 's/"port":"kmd"/"port":"sim"/' | nomm > "$out/guest-e1.cmp"
    grep -q '"simulated_cycles"' "$out/host-e1.out" || { echo "FAIL: no simulated_cycles in the host's e1 result"; exit 1; }
    if ! cmp -s "$out/host-e1.cmp" "$out/guest-e1.cmp"; then
      diff "$out/host-e1.cmp" "$out/guest-e1.cmp" | cut -c1-300 | head; echo "FAIL: npu lower on e1 over kmd differs from the host's sim port"; exit 1
    fi
    jobs=$(sed -n 's/^jobs-e1: //p' "$out/e1-pccx.log")
    [ "${jobs:-0}" -gt 0 ] || { echo "FAIL: npu lower on e1 over kmd started no job through the kernel"; exit 1; }
    echo "e1 module over kmd: the lowering result (outputs, simulated cycles $(grep -o '"simulated_cycles":[0-9]*' "$out/host-e1.out" | cut -d: -f2 | tr '\n' ' ')) identical to the host's sim port; $jobs kernel job(s)"
    # pccx: the generated text, the per-opcode counts, cycles and MACs, the device cycles
    "$npu" llm --model "$stories/stories260K.bin" --tokenizer "$stories/tok512.bin" --device pccx --steps 16 --report > "$out/host-llm.out" 2>&1 || { cat "$out/host-llm.out"; echo "FAIL: host npu llm"; exit 1; }
    section e1-pccx llm > "$out/guest-llm.out"
    pick() { grep -E "^Once upon|^  (GEMV|GEMM|MEMCPY|MEMSET|CVO) |^  total device cycles|^  instructions per token" "$1"; }
    pick "$out/host-llm.out" > "$out/host-llm.key"; pick "$out/guest-llm.out" > "$out/guest-llm.key"
    grep -q "total device cycles" "$out/host-llm.key" || { echo "FAIL: no device cycles in the host's llm report"; exit 1; }
    if ! cmp -s "$out/host-llm.key" "$out/guest-llm.key"; then
      diff "$out/host-llm.key" "$out/guest-llm.key"; echo "FAIL: npu llm on pccx over kmd differs from the host's sim port"; exit 1
    fi
    jobs=$(sed -n 's/^jobs-pccx: //p' "$out/e1-pccx.log")
    echo "16 stories260K tokens on pccx over kmd: text, opcode counts/cycles/MACs and $(grep -o 'total device cycles *[0-9]*' "$out/host-llm.key") identical to the host's sim port; $jobs kernel jobs"
    [ "${jobs:-0}" -gt 0 ] || { echo "FAIL: npu llm over kmd started no job through the kernel"; exit 1; }
    echo "OK: guest tests passed" ;;
  *) echo "usage: scripts/kmod.sh kdir|build|test-build|test-sparse|test-checkpatch OUT | test-guest OUT NPU KTEST MODELDIR" >&2; exit 2 ;;
esac
