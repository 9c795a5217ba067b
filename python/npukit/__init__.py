# SPDX-License-Identifier: MIT
"""npukit for Python: ONNX models on npukit's NPU models with ONNX Runtime's API,
register-level scripting of the devices, LLM decode and design-space sweeps.

    import npukit as ort            # or: import onnxruntime as ort
    sess = ort.InferenceSession("model.onnx", providers=["v0"])
    y = sess.run(None, {"x": x})[0]

See docs/python.md for the API and how it maps onto ONNX Runtime's.
"""

from ._npukit import (Error, Fail, InvalidArgument, InvalidGraph, NoSuchFile, NotImplemented,  # noqa: F401
                      load_tensor, save_tensor)
from ._session import (ExecutionMode, GraphOptimizationLevel, InferenceSession, NodeArg, RunOptions,  # noqa: F401
                       SessionOptions, get_all_providers, get_available_providers, get_device, get_version_string,
                       set_default_logger_severity)
from ._values import IOBinding, ModelMetadata, OrtValue  # noqa: F401
from ._device import Device, QtestDevice  # noqa: F401
from ._sweep import sweep  # noqa: F401
from . import llm  # noqa: F401

__version__ = "0.1.0"

__all__ = [
    "InferenceSession", "SessionOptions", "RunOptions", "NodeArg", "GraphOptimizationLevel", "ExecutionMode",
    "get_available_providers", "get_all_providers", "get_device", "OrtValue", "IOBinding", "ModelMetadata",
    "get_version_string", "set_default_logger_severity", "Device", "QtestDevice", "Error", "Fail",
    "InvalidArgument", "InvalidGraph", "NoSuchFile", "NotImplemented", "load_tensor", "save_tensor", "sweep", "llm",
]
