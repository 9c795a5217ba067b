# SPDX-License-Identifier: MIT
# ONNX Runtime as the test oracle (issue 14): tests/onnx_gen writes random one-operator
# models, scripts/ort_run.js runs them and the onnx-zoo models on onnxruntime-node, and
# npu onnx-test compares npukit with ONNX Runtime (tests/onnx_ort.cmakescript).
add_executable(onnx_gen tests/onnx_gen.c)
target_include_directories(onnx_gen PRIVATE src)
target_link_libraries(onnx_gen PRIVATE npukit)
# --require-offload on a planted case (no ONNX Runtime needed)
add_test(NAME qdq_offload COMMAND ${CMAKE_COMMAND} -DNPU=$<TARGET_FILE:npu> -DGEN=$<TARGET_FILE:onnx_gen>
  -DWORK=${CMAKE_BINARY_DIR}/scripttest-qdq_offload -P ${CMAKE_SOURCE_DIR}/tests/qdq_offload.cmakescript)
set(NPUKIT_ORT_DIR "$ENV{HOME}/.cache/npukit/ortnode" CACHE PATH "folder with node_modules/onnxruntime-node")
add_test(NAME onnx_ort COMMAND ${CMAKE_COMMAND} -DNPU=$<TARGET_FILE:npu> -DGEN=$<TARGET_FILE:onnx_gen>
  -DSRC=${CMAKE_SOURCE_DIR} -DSHARED=${NPUKIT_SHARED_DIR} -DORT_DIR=${NPUKIT_ORT_DIR}
  -DWORK=${CMAKE_BINARY_DIR}/scripttest-onnx_ort -P ${CMAKE_SOURCE_DIR}/tests/onnx_ort.cmakescript)
