# SPDX-License-Identifier: MIT
# The kernel driver (kmod/, docs/kmod.md) outside a guest: it builds against Debian's
# linux-headers-amd64, is clean under sparse and checkpatch.pl --strict (label vp; each skips,
# exit 77 with the reason, when its package is missing).
foreach(check build sparse checkpatch)
  add_test(NAME kmod_${check} COMMAND ${CMAKE_SOURCE_DIR}/scripts/kmod.sh test-${check}
           ${CMAKE_BINARY_DIR}/kmod-${check})
  set_tests_properties(kmod_${check} PROPERTIES LABELS vp SKIP_RETURN_CODE 77 TIMEOUT 600)
endforeach()
# The kmd port (src/rt/port_kmd.c) speaks the driver's UAPI header, include/npukit/uapi/npukit_accel.h.
# The guest-side checks of the driver (tests/kmod/npukit_ktest.c; run in an `npu vp run` guest),
# linked statically when possible so that an initramfs needs no libraries for it.
add_executable(npukit_ktest tests/kmod/npukit_ktest.c)
target_include_directories(npukit_ktest PRIVATE ${CMAKE_SOURCE_DIR}/include)
if(NOT NPUKIT_SANITIZE)
  target_link_options(npukit_ktest PRIVATE -static)
endif()
# In `npu vp run` guests (docs/kmod.md "Tests"): the driver's checks, the fuzzer, faults,
# unload/load and the LeNet on v0 and shell over kmd against the host's sim port. Left out of
# the sanitizer build as vp's guest cases are (an ASan npu under TCG); skips (77) naming what is
# missing (QEMU, the guest kernel, `npu vp run`).
if(NOT NPUKIT_SANITIZE)
  add_test(NAME kmod_guest COMMAND ${CMAKE_SOURCE_DIR}/scripts/kmod.sh test-guest ${CMAKE_BINARY_DIR}/kmod-guest
           $<TARGET_FILE:npu> $<TARGET_FILE:npukit_ktest> ${NPUKIT_SHARED_DIR}/models/cifar10-lenet-int8)
  set_tests_properties(kmod_guest PROPERTIES LABELS vp SKIP_RETURN_CODE 77 TIMEOUT 900)
endif()
