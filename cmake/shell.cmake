# SPDX-License-Identifier: MIT
# The shell schedule mapper (src/rt/shell_map.c) parses YAML with libyaml
# (Debian: libyaml-dev, listed in .ci/packages).
find_path(NPUKIT_YAML_INCLUDE yaml.h)
find_library(NPUKIT_YAML_LIB yaml)
if(NOT NPUKIT_YAML_INCLUDE OR NOT NPUKIT_YAML_LIB)
  message(FATAL_ERROR "the shell schedule mapper needs libyaml: apt-get install libyaml-dev")
endif()
target_include_directories(npukit_rt PRIVATE ${NPUKIT_YAML_INCLUDE})
target_link_libraries(npukit_rt PUBLIC ${NPUKIT_YAML_LIB})

# The shell model's GEMM engine at -O3 (as v0's datapath, cmake/v0.cmake): its
# operand loads (the BF16 -> fp32 widening of every line) vectorize there.
set_source_files_properties(${CMAKE_SOURCE_DIR}/src/sim/shell_exec.c PROPERTIES COMPILE_OPTIONS "-O3")
