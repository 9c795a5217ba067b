# SPDX-License-Identifier: MIT
# e1 lowering modules (src/ops/e1_module.c) read and write JSON with Debian's
# libjansson (package libjansson-dev, listed in .ci/packages).
find_path(NPUKIT_JANSSON_INCLUDE jansson.h)
find_library(NPUKIT_JANSSON_LIB jansson)
if(NOT NPUKIT_JANSSON_INCLUDE OR NOT NPUKIT_JANSSON_LIB)
  message(FATAL_ERROR "the e1 lowering modules need libjansson: apt-get install libjansson-dev")
endif()
target_include_directories(npukit_ops PRIVATE ${NPUKIT_JANSSON_INCLUDE})
target_link_libraries(npukit_ops PUBLIC ${NPUKIT_JANSSON_LIB})
