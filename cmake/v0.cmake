# SPDX-License-Identifier: MIT
# v0 NPU: -O3 for the functional datapath of the model and the shared GEMM
# kernels (src/base/gemm.c and gemm_f32_avx2.c, which must never contract a*b+c into an FMA implicitly: the
# shell's float GEMM rounds the product and the sum separately; its kernels fuse
# explicitly only where that cannot change a bit), and bench_v0
# built against oneDNN (Debian libdnnl-dev, listed in .ci/packages) only when found.
set_source_files_properties(${CMAKE_SOURCE_DIR}/src/sim/v0_exec.c PROPERTIES COMPILE_OPTIONS "-O3")
set_source_files_properties(${CMAKE_SOURCE_DIR}/src/base/gemm.c ${CMAKE_SOURCE_DIR}/src/base/gemm_f32_avx2.c
                            PROPERTIES COMPILE_OPTIONS "-O3;-ffp-contract=off")
# The AVX2 int8 kernel (integer only; its inner loop is inline assembly).
set_source_files_properties(${CMAKE_SOURCE_DIR}/src/base/gemm_s8_avx2.c PROPERTIES COMPILE_OPTIONS "-O3")
# The reassociating float GEMM of the ONNX CPU path (its tiles fuse explicitly, its dot
# products never: the same options as when it lived in src/ops).
set_source_files_properties(${CMAKE_SOURCE_DIR}/src/base/gemm_f32_reassoc.c PROPERTIES COMPILE_OPTIONS "-O3")

find_path(NPUKIT_DNNL_INCLUDE oneapi/dnnl/dnnl.h)
find_library(NPUKIT_DNNL_LIB dnnl)
find_package(OpenMP COMPONENTS C QUIET)

# bench_v0 is created after this file runs (CMakeLists.txt globs bench/ last):
# configure it at the end of the directory.
function(npukit_v0_bench_setup)
  if(NOT TARGET bench_v0)
    return()
  endif()
  if(NPUKIT_DNNL_INCLUDE AND NPUKIT_DNNL_LIB)
    target_include_directories(bench_v0 PRIVATE ${NPUKIT_DNNL_INCLUDE})
    target_link_libraries(bench_v0 PRIVATE ${NPUKIT_DNNL_LIB})
    target_compile_definitions(bench_v0 PRIVATE NPUKIT_HAVE_DNNL=1)
    if(OpenMP_C_FOUND)
      target_link_libraries(bench_v0 PRIVATE OpenMP::OpenMP_C)
      target_compile_definitions(bench_v0 PRIVATE NPUKIT_HAVE_OMP=1)
    endif()
  else()
    message(STATUS "oneDNN (libdnnl-dev) not found: bench_v0 is not built (apt-get install libdnnl-dev)")
    set_target_properties(bench_v0 PROPERTIES EXCLUDE_FROM_ALL TRUE)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL npukit_v0_bench_setup)
