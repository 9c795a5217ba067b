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
_Static_assert(sizeof(struct npukit_wait) == 96, "npukit_wait");
_Static_assert(sizeof(struct npukit_counters) == 144, "npukit_counters");
_Static_assert(offsetof(struct npukit_wait, desc) == 32, "npukit_wait.desc");
int main(void) { return NPUKIT_IOCTL_WAIT == NPUKIT_IOCTL_SUBMIT; }
EOF
    ${CC:-cc} -std=c11 -Wall -Wextra -Werror -pedantic -I"$root/kmod/uapi" -o "$out/uapi_check" "$out/uapi_check.c"
    "$out/uapi_check"
    if echo 'int main(void){return 0;}' | ${CC:-cc} -m32 -x c - -o /dev/null 2>/dev/null; then
      ${CC:-cc} -m32 -std=c11 -Wall -Wextra -Werror -I"$root/kmod/uapi" -o "$out/uapi_check32" "$out/uapi_check.c"
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
    files=$(ls npukit.c uapi/npukit_accel.h Kbuild Makefile)
    perl "$cp" --strict --no-tree --terse --show-types -f $files | tee "$out/checkpatch.log"
    if grep -E "(ERROR|WARNING|CHECK):" "$out/checkpatch.log" >/dev/null; then echo "FAIL: checkpatch --strict"; exit 1; fi
    echo "OK: checkpatch.pl --strict clean on $(echo $files)" ;;
  *) echo "usage: scripts/kmod.sh kdir|build|test-build|test-sparse|test-checkpatch OUT" >&2; exit 2 ;;
esac
