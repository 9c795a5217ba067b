# The kernel driver (kmod/, docs/kmod.md) outside a guest: it builds against Debian's
# linux-headers-amd64, is clean under sparse and checkpatch.pl --strict (label vp; each skips,
# exit 77 with the reason, when its package is missing).
foreach(check build sparse checkpatch)
  add_test(NAME kmod_${check} COMMAND ${CMAKE_SOURCE_DIR}/scripts/kmod.sh test-${check}
           ${CMAKE_BINARY_DIR}/kmod-${check})
  set_tests_properties(kmod_${check} PROPERTIES LABELS vp SKIP_RETURN_CODE 77 TIMEOUT 600)
endforeach()
