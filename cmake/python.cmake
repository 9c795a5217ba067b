# SPDX-License-Identifier: MIT
# The Python package (python/, docs/python.md): the extension module npukit._npukit built here
# against the layer libraries, next to a copy of the package's .py files in build/python, so that
# tests (tests/python) import the build tree's package. Needs Debian's python3-dev and
# python3-numpy for NPUKIT_PYTHON (default /usr/bin/python3: the machine's first `python3` may be
# another interpreter without numpy). `pip install --no-build-isolation ./python` builds the same
# module for an installation (python/setup.py, from build/python/link.txt).
if(EXISTS /usr/bin/python3)
  set(npukit_python_default /usr/bin/python3)
else()
  set(npukit_python_default python3)
endif()
set(NPUKIT_PYTHON ${npukit_python_default} CACHE FILEPATH "Python interpreter the npukit package is built for")
execute_process(COMMAND ${NPUKIT_PYTHON} -c
  "import sysconfig, numpy; print(sysconfig.get_paths()['include']); print(numpy.get_include()); print(sysconfig.get_config_var('EXT_SUFFIX'))"
  RESULT_VARIABLE npukit_py_rc OUTPUT_VARIABLE npukit_py_out ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
if(npukit_py_rc EQUAL 0)
  string(REPLACE "\n" ";" npukit_py_out "${npukit_py_out}")
  list(GET npukit_py_out 0 NPUKIT_PY_INCLUDE)
  list(GET npukit_py_out 1 NPUKIT_NUMPY_INCLUDE)
  list(GET npukit_py_out 2 NPUKIT_PY_EXT_SUFFIX)
endif()
if(NOT npukit_py_rc EQUAL 0 OR NOT EXISTS ${NPUKIT_PY_INCLUDE}/Python.h)
  message(WARNING "${NPUKIT_PYTHON} lacks numpy or Python.h: the Python package (python/) and its tests are not built "
                  "(apt-get install python3-dev python3-numpy)")
  return()
endif()
# Under the sanitizers the interpreter loads the ASan runtime first (LD_PRELOAD; the interpreter's own
# allocations at exit are not npukit's leaks: detect_leaks=0 there, the C tests check leaks).
set(npukit_py_env)
if(NPUKIT_SANITIZE)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so OUTPUT_VARIABLE npukit_asan
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${npukit_asan}" OR NOT EXISTS "${npukit_asan}")
    message(WARNING "the sanitizer build with ${CMAKE_C_COMPILER}: no libasan.so to preload into ${NPUKIT_PYTHON}; "
                    "the Python package and its tests are not built")
    return()
  endif()
  set(npukit_py_env LD_PRELOAD=${npukit_asan} ASAN_OPTIONS=detect_leaks=0)
  set(npukit_san_link -fsanitize=address,undefined) # the instrumented libraries need the runtimes
endif()
set(NPUKIT_PY_DIR ${CMAKE_BINARY_DIR}/python)
file(GLOB NPUKIT_PY_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/src/*.c)
add_library(npukit_python MODULE ${NPUKIT_PY_SOURCES})
set_target_properties(npukit_python PROPERTIES PREFIX "" OUTPUT_NAME _npukit SUFFIX ${NPUKIT_PY_EXT_SUFFIX}
  LIBRARY_OUTPUT_DIRECTORY ${NPUKIT_PY_DIR}/npukit C_VISIBILITY_PRESET hidden)
target_include_directories(npukit_python SYSTEM PRIVATE ${NPUKIT_PY_INCLUDE} ${NPUKIT_NUMPY_INCLUDE})
target_link_libraries(npukit_python PRIVATE npukit)
# the package's Python files next to the module (a symlink per file: edits show without a rebuild)
file(GLOB NPUKIT_PY_FILES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/npukit/*.py)
foreach(f ${NPUKIT_PY_FILES})
  get_filename_component(fn ${f} NAME)
  file(MAKE_DIRECTORY ${NPUKIT_PY_DIR}/npukit)
  file(CREATE_LINK ${f} ${NPUKIT_PY_DIR}/npukit/${fn} SYMBOLIC)
endforeach()
# what python/setup.py links: the layer libraries (top down) and their outside libraries (found
# again here: the cmake/ parts that look them up may come later; the results are cached)
find_library(NPUKIT_PROTOBUF_C_LIB protobuf-c)
find_library(NPUKIT_JANSSON_LIB jansson)
find_library(NPUKIT_YAML_LIB yaml)
set(npukit_layer_files "")
foreach(lib ${NPUKIT_LAYER_LIBS}) # every layer's archive (setup.py links them as one group)
  string(APPEND npukit_layer_files "$<TARGET_FILE:${lib}>\n")
endforeach()
file(GENERATE OUTPUT ${NPUKIT_PY_DIR}/link.txt CONTENT
"${npukit_layer_files}${NPUKIT_PROTOBUF_C_LIB}
${NPUKIT_JANSSON_LIB}
${NPUKIT_YAML_LIB}
m
${npukit_san_link}
")
# The Python test suite (tests/python, unittest): the build tree's package, Debian's interpreter.
add_test(NAME python_tests COMMAND ${CMAKE_COMMAND} -E env ${npukit_py_env} PYTHONPATH=${NPUKIT_PY_DIR} NPU=$<TARGET_FILE:npu>
  NPUKIT_SHARED_DIR=${NPUKIT_SHARED_DIR} ${NPUKIT_PYTHON} -m unittest discover -s ${CMAKE_SOURCE_DIR}/tests/python -v)
set_tests_properties(python_tests PROPERTIES TIMEOUT 900)
# The offline installation (tests/python/pip_install.cmake): pip into a fresh venv, then the LeNet.
string(REPLACE ";" "|" npukit_py_env_arg "${npukit_py_env}")
add_test(NAME python_pip_install COMMAND ${CMAKE_COMMAND} -DPY=${NPUKIT_PYTHON} -DSRC=${CMAKE_SOURCE_DIR} "-DPYENV=${npukit_py_env_arg}"
  -DBUILD=${CMAKE_BINARY_DIR} -DSHARED=${NPUKIT_SHARED_DIR} -DWORK=${CMAKE_BINARY_DIR}/scripttest-python_pip_install
  -P ${CMAKE_SOURCE_DIR}/tests/python/pip_install.cmake)
set_tests_properties(python_pip_install PROPERTIES TIMEOUT 600 DEPENDS python_tests)
# Quantized transformers against ONNX Runtime (tests/python/qdq_ort_check.py: onnxruntime-node from npm,
# as onnx_ort; issue 29 point 6).
set(NPUKIT_ORT_DIR "$ENV{HOME}/.cache/npukit/ortnode" CACHE PATH "folder with node_modules/onnxruntime-node")
add_test(NAME python_qdq_ort COMMAND ${CMAKE_COMMAND} -E env ${npukit_py_env}
  PYTHONPATH=${NPUKIT_PY_DIR}:${CMAKE_SOURCE_DIR}/tests/python NPUKIT_ORT_DIR=${NPUKIT_ORT_DIR}
  ${NPUKIT_PYTHON} -m unittest -v qdq_ort_check)
set_tests_properties(python_qdq_ort PROPERTIES TIMEOUT 600)
