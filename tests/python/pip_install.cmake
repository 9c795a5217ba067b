# SPDX-License-Identifier: MIT
# `pip install --no-build-isolation ./python` offline (docs/python.md), into a fresh virtual
# environment that sees Debian's numpy (--system-site-packages), then the installed package
# (not the build tree's) runs the LeNet on v0 from another directory: the classes of
# ../shared/models/cifar10-lenet-int8/expected.txt (3 0 8 0).
# -DPY=interpreter -DSRC=source dir -DBUILD=build dir -DSHARED=shared dir -DWORK=scratch dir
# -DPYENV=VAR=VALUE|... for the installed package's run (the sanitizer build's LD_PRELOAD)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${PY} -m venv --system-site-packages ${WORK}/venv RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "venv: ${err} (apt-get install python3-venv)")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env NPUKIT_BUILD_DIR=${BUILD} PIP_NO_INDEX=1
  ${WORK}/venv/bin/pip install --no-build-isolation --no-index ${SRC}/python
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pip install failed: ${out}\n${err}")
endif()
file(WRITE ${WORK}/check.py "
import os, sys
import numpy as np
import npukit
from onnx import numpy_helper, TensorProto
assert os.path.realpath(npukit.__file__).startswith(os.path.realpath(sys.prefix)), npukit.__file__
m = sys.argv[1] + '/models/cifar10-lenet-int8'
t = TensorProto()
t.ParseFromString(open(m + '/test_data_set_0/input_0.pb', 'rb').read())
s = npukit.InferenceSession(m + '/model.onnx', providers=['v0'])
y = s.run(None, {'images': numpy_helper.to_array(t)})[0]
print(' '.join(str(int(c)) for c in y.argmax(axis=1)))
")
string(REPLACE "|" ";" pyenv "${PYENV}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${pyenv} ${WORK}/venv/bin/python ${WORK}/check.py ${SHARED} WORKING_DIRECTORY ${WORK}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "3 0 8 0")
  message(FATAL_ERROR "the installed package: rc ${rc}, classes '${out}' (expected 3 0 8 0)\n${err}")
endif()
message(STATUS "installed npukit: LeNet classes ${out}")
file(REMOVE_RECURSE ${WORK})
