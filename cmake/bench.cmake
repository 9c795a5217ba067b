# SPDX-License-Identifier: MIT
# npu bench: link oneDNN (Debian libdnnl-dev, listed in .ci/packages) into npu
# when it is found, for the same-run int8 GEMM baseline (src/tools/bench_dnnl.c);
# without it the bench prints "baseline unavailable". The shared/ directory is
# compiled in as the default place of the LLM model the suite decodes.
find_path(NPUKIT_DNNL_INCLUDE oneapi/dnnl/dnnl.h)
find_library(NPUKIT_DNNL_LIB dnnl)
find_package(OpenMP COMPONENTS C QUIET)

# The npu target is created after this file runs: configure it at the end.
function(npukit_bench_setup)
  if(NOT TARGET npu)
    return()
  endif()
  target_compile_definitions(npu PRIVATE NPUKIT_SHARED_DIR_DEFAULT="${NPUKIT_SHARED_DIR}"
    NPUKIT_SOURCE_DIR_DEFAULT="${CMAKE_SOURCE_DIR}")
  if(NPUKIT_DNNL_INCLUDE AND NPUKIT_DNNL_LIB)
    target_include_directories(npu PRIVATE ${NPUKIT_DNNL_INCLUDE})
    target_link_libraries(npu PRIVATE ${NPUKIT_DNNL_LIB})
    target_compile_definitions(npu PRIVATE NPUKIT_HAVE_DNNL=1)
    if(OpenMP_C_FOUND)
      target_link_libraries(npu PRIVATE OpenMP::OpenMP_C)
      target_compile_definitions(npu PRIVATE NPUKIT_HAVE_OMP=1)
    endif()
  else()
    message(STATUS "oneDNN (libdnnl-dev) not found: npu bench prints 'baseline unavailable' for the int8 GEMM")
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL npukit_bench_setup)
