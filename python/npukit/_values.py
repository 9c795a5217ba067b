# SPDX-License-Identifier: MIT
"""ONNX Runtime's value and binding objects over numpy: OrtValue, IOBinding, ModelMetadata.

npukit runs on the host, so every value lives in host memory ("cpu"): an OrtValue wraps a
numpy array (a list for a sequence, None for an empty optional) without copying it, and an
IOBinding is the feed and the outputs of run() kept between runs. What needs another device's
memory (CUDA buffers, raw pointers) raises NotImplemented naming the call.
"""

import numpy as np

from . import _npukit

# numpy dtype -> ONNX TensorProto element type (bfloat16 travels as uint16, as in run())
_ONNX_TYPES = {
    np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3, np.dtype(np.uint16): 4,
    np.dtype(np.int16): 5, np.dtype(np.int32): 6, np.dtype(np.int64): 7, np.dtype(np.bool_): 9,
    np.dtype(np.float16): 10, np.dtype(np.float64): 11, np.dtype(np.uint32): 12, np.dtype(np.uint64): 13,
}
_TYPE_NAMES = {1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
               10: "float16", 11: "double", 12: "uint32", 13: "uint64"}


def _cpu_only(device_type, device_id, what):
    if str(device_type).lower() != "cpu" or device_id not in (0, None):
        raise _npukit.NotImplemented("%s: npukit keeps values in host memory; device '%s' (id %s) is not "
                                     "supported, only 'cpu'" % (what, device_type, device_id))


def _onnx_type(dtype, what):
    t = _ONNX_TYPES.get(np.dtype(dtype))
    if t is None:
        raise _npukit.InvalidArgument("%s: element type %s is not one npukit holds" % (what, np.dtype(dtype)))
    return t


class OrtValue:
    """ONNX Runtime's OrtValue: a tensor (numpy array), a sequence (list) or an empty optional
    (None) in host memory. ortvalue_from_numpy keeps the array itself (no copy)."""

    def __init__(self, value, _ok=False):
        if not _ok:
            raise TypeError("use OrtValue.ortvalue_from_numpy or ortvalue_from_shape_and_type")
        self._v = value

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0):
        _cpu_only(device_type, device_id, "ortvalue_from_numpy")
        a = numpy_obj if isinstance(numpy_obj, np.ndarray) else np.asarray(numpy_obj)
        _onnx_type(a.dtype, "ortvalue_from_numpy")
        return OrtValue(a, True)

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type="cpu", device_id=0):
        _cpu_only(device_type, device_id, "ortvalue_from_shape_and_type")
        _onnx_type(element_type, "ortvalue_from_shape_and_type")
        return OrtValue(np.zeros(tuple(shape), dtype=element_type), True)

    @staticmethod
    def _wrap(v):
        return OrtValue(v, True)

    def numpy(self):
        """The tensor as a numpy array (this value's own array: no copy)."""
        if not self.is_tensor():
            raise _npukit.InvalidArgument("numpy(): the OrtValue is not a tensor (%s)" % self._kind())
        return self._v

    def _kind(self):
        return "tensor" if isinstance(self._v, np.ndarray) else "sequence" if isinstance(self._v, list) else "none"

    def is_tensor(self):
        return isinstance(self._v, np.ndarray)

    def is_tensor_sequence(self):
        return isinstance(self._v, list)

    def is_sparse_tensor(self):
        return False

    def has_value(self):
        return self._v is not None

    def shape(self):
        return list(self.numpy().shape)

    def element_type(self):
        """The ONNX TensorProto element type number (1 float, 3 int8, ...)."""
        return _onnx_type(self.numpy().dtype, "element_type")

    def data_type(self):
        if isinstance(self._v, list):
            inner = self._v[0].dtype if self._v else None
            return "seq(tensor(%s))" % (_TYPE_NAMES[_onnx_type(inner, "data_type")] if inner is not None else "float")
        return "tensor(%s)" % _TYPE_NAMES[self.element_type()]

    def device_name(self):
        return "cpu"

    def data_ptr(self):
        return self.numpy().ctypes.data

    def update_inplace(self, np_arr):
        """Copy np_arr's values into this tensor (same shape and element type)."""
        a = self.numpy()
        src = np.asarray(np_arr)
        if src.dtype != a.dtype or src.shape != a.shape:
            raise _npukit.InvalidArgument("update_inplace: got %s%s, the value is %s%s" %
                                          (src.dtype, list(src.shape), a.dtype, list(a.shape)))
        a[...] = src

    def __repr__(self):
        return "OrtValue(%s)" % (self.data_type() if self._v is not None else "None")


def _unwrap(v, what):
    if not isinstance(v, OrtValue):
        raise _npukit.InvalidArgument("%s: expected an OrtValue, got %s" % (what, type(v).__name__))
    return v._v


class IOBinding:
    """ONNX Runtime's IOBinding for host memory: inputs bound by value (bind_cpu_input,
    bind_ortvalue_input), outputs by name (allocated by the run) or into a preallocated
    OrtValue (bind_ortvalue_output: the run writes the result into its array)."""

    def __init__(self, session):
        self._sess = session
        self._inputs = {}
        self._outputs = []  # [name, preallocated OrtValue or None]
        self._results = None

    def bind_cpu_input(self, name, arr_on_cpu):
        self._inputs[name] = arr_on_cpu

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        raise _npukit.NotImplemented("bind_input with a raw buffer pointer is not supported by npukit: use "
                                     "bind_cpu_input (numpy) or bind_ortvalue_input")

    def bind_ortvalue_input(self, name, ortvalue):
        self._inputs[name] = _unwrap(ortvalue, "bind_ortvalue_input")

    def _bind(self, name, value):
        self._sess._check_output_name(name)
        for b in self._outputs:
            if b[0] == name:
                b[1] = value
                return
        self._outputs.append([name, value])

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        _cpu_only(device_type, device_id, "bind_output")
        if buffer_ptr is not None:
            raise _npukit.NotImplemented("bind_output with a raw buffer pointer is not supported by npukit: use "
                                         "bind_ortvalue_output with an OrtValue")
        if element_type is not None or shape is not None:
            raise _npukit.NotImplemented("bind_output with element_type/shape: npukit allocates the output; "
                                         "preallocate with bind_ortvalue_output")
        self._bind(name, None)

    def bind_ortvalue_output(self, name, ortvalue):
        _unwrap(ortvalue, "bind_ortvalue_output")
        self._bind(name, ortvalue)

    def clear_binding_inputs(self):
        self._inputs = {}

    def clear_binding_outputs(self):
        self._outputs = []
        self._results = None

    def synchronize_inputs(self):
        pass

    def synchronize_outputs(self):
        pass

    def _run(self, run_options):
        if not self._outputs:
            raise _npukit.InvalidArgument("run_with_iobinding: no output is bound")
        names = [n for n, _ in self._outputs]
        got = self._sess.run(names, self._inputs, run_options)
        res = []
        for (name, pre), v in zip(self._outputs, got):
            if pre is None:
                res.append(OrtValue(v, True))
                continue
            if v is None:  # a timing-only run: the preallocated value keeps its contents
                res.append(pre)
                continue
            if not isinstance(pre._v, np.ndarray) or not isinstance(v, np.ndarray):
                raise _npukit.InvalidArgument("output '%s': a preallocated OrtValue holds a tensor only" % name)
            if pre._v.dtype != v.dtype or pre._v.shape != v.shape:
                raise _npukit.InvalidArgument("output '%s' is %s%s; the bound OrtValue is %s%s" %
                                              (name, v.dtype, list(v.shape), pre._v.dtype, list(pre._v.shape)))
            pre._v[...] = v
            res.append(pre)
        self._results = res

    def get_outputs(self):
        if self._results is None:
            raise _npukit.Fail("get_outputs: run_with_iobinding has not run with this binding")
        return list(self._results)

    def get_outputs_as_ortvaluevector(self):
        return self.get_outputs()

    def copy_outputs_to_cpu(self):
        """The outputs as numpy arrays (copies, as ONNX Runtime returns)."""
        return [v._v.copy() if isinstance(v._v, np.ndarray) else v._v for v in self.get_outputs()]


class ModelMetadata:
    """ONNX Runtime's ModelMetadata: the ModelProto's producer, domain, doc string (description),
    model_version (version), metadata_props (custom_metadata_map), the graph's name and doc string;
    npukit adds producer_version."""

    def __init__(self, d):
        self.producer_name = d["producer_name"]
        self.producer_version = d["producer_version"]
        self.domain = d["domain"]
        self.description = d["doc_string"]
        self.version = d["model_version"]
        self.graph_name = d["graph_name"]
        self.graph_description = d["graph_doc_string"]
        self.custom_metadata_map = dict(d["metadata_props"])

    def __repr__(self):
        return "ModelMetadata(producer_name=%r, graph_name=%r, domain=%r, version=%d)" % (
            self.producer_name, self.graph_name, self.domain, self.version)
