# SPDX-License-Identifier: MIT
# ONNX import: C code generated at build time by protoc-c from the onnx.proto
# that Debian's libonnx-dev ships (nothing vendored, nothing hand-parsed).
# Packages: libprotobuf-c-dev, protobuf-c-compiler, libonnx-dev (.ci/packages).
find_program(NPUKIT_PROTOC_C NAMES protoc-c protoc-gen-c)
find_path(NPUKIT_ONNX_PROTO_DIR onnx/onnx.proto PATHS /usr/include /usr/local/include)
find_path(NPUKIT_PROTOBUF_C_INCLUDE protobuf-c/protobuf-c.h)
find_library(NPUKIT_PROTOBUF_C_LIB protobuf-c)
if(NOT NPUKIT_PROTOC_C OR NOT NPUKIT_ONNX_PROTO_DIR OR NOT NPUKIT_PROTOBUF_C_INCLUDE OR NOT NPUKIT_PROTOBUF_C_LIB)
  message(FATAL_ERROR "ONNX support needs protoc-c (protobuf-c-compiler), libprotobuf-c-dev and "
                      "onnx/onnx.proto (libonnx-dev): apt-get install protobuf-c-compiler libprotobuf-c-dev libonnx-dev")
endif()

set(NPUKIT_ONNX_GEN_DIR ${CMAKE_BINARY_DIR}/generated/onnx)
set(NPUKIT_ONNX_PROTO ${NPUKIT_ONNX_PROTO_DIR}/onnx/onnx.proto)
file(MAKE_DIRECTORY ${NPUKIT_ONNX_GEN_DIR})
# protoc-c names its output after the path relative to --proto_path:
# onnx/onnx.pb-c.c and onnx/onnx.pb-c.h under the generated directory.
add_custom_command(
  OUTPUT ${NPUKIT_ONNX_GEN_DIR}/onnx/onnx.pb-c.c ${NPUKIT_ONNX_GEN_DIR}/onnx/onnx.pb-c.h
  COMMAND ${NPUKIT_PROTOC_C} --proto_path=${NPUKIT_ONNX_PROTO_DIR} --c_out=${NPUKIT_ONNX_GEN_DIR}
          ${NPUKIT_ONNX_PROTO}
  DEPENDS ${NPUKIT_ONNX_PROTO}
  COMMENT "protoc-c: generating the ONNX protobuf C code from ${NPUKIT_ONNX_PROTO}"
  VERBATIM)
# ONNX's data messages (SequenceProto, MapProto, OptionalProto of onnx-data.proto, which Debian
# does not ship) from npukit's own schema src/graph/npk_onnx_data.proto: same wire format, own
# package; it imports onnx/onnx.proto for TensorProto. Output: npk_onnx_data.pb-c.[ch].
set(NPUKIT_ONNX_DATA_PROTO ${CMAKE_SOURCE_DIR}/src/graph/npk_onnx_data.proto)
add_custom_command(
  OUTPUT ${NPUKIT_ONNX_GEN_DIR}/npk_onnx_data.pb-c.c ${NPUKIT_ONNX_GEN_DIR}/npk_onnx_data.pb-c.h
  COMMAND ${NPUKIT_PROTOC_C} --proto_path=${NPUKIT_ONNX_PROTO_DIR} --proto_path=${CMAKE_SOURCE_DIR}/src/graph
          --c_out=${NPUKIT_ONNX_GEN_DIR} ${NPUKIT_ONNX_DATA_PROTO}
  DEPENDS ${NPUKIT_ONNX_DATA_PROTO} ${NPUKIT_ONNX_PROTO}
  COMMENT "protoc-c: generating the ONNX data-value C code from ${NPUKIT_ONNX_DATA_PROTO}"
  VERBATIM)
set(NPUKIT_ONNX_GEN_SOURCES ${NPUKIT_ONNX_GEN_DIR}/onnx/onnx.pb-c.c ${NPUKIT_ONNX_GEN_DIR}/npk_onnx_data.pb-c.c)
target_sources(npukit_graph PRIVATE ${NPUKIT_ONNX_GEN_SOURCES})
# The generated files are not ours: do not hold them to -Werror/-Wextra.
set_source_files_properties(${NPUKIT_ONNX_GEN_SOURCES} PROPERTIES COMPILE_OPTIONS "-Wno-error;-Wno-unused-parameter")
# PUBLIC so that tests can build ModelProto messages with the same generated code.
target_include_directories(npukit_graph PUBLIC ${NPUKIT_ONNX_GEN_DIR} ${NPUKIT_PROTOBUF_C_INCLUDE})
target_link_libraries(npukit_graph PUBLIC ${NPUKIT_PROTOBUF_C_LIB})
# The fast CPU kernels (issue 15 point 2) are built at -O3 so that their GEMM
# and depthwise loops vectorize (the clones for AVX-512/AVX2 are chosen at run time).
set_source_files_properties(${CMAKE_SOURCE_DIR}/src/ops/fast_onnx.c ${CMAKE_SOURCE_DIR}/src/ops/fast_onnx_small.c
                            ${CMAKE_SOURCE_DIR}/src/ops/fast_dw.c ${CMAKE_SOURCE_DIR}/src/ops/fast_wino.c PROPERTIES COMPILE_OPTIONS "-O3")
