# SPDX-License-Identifier: MIT
"""ONNX Runtime's inference API over npukit's graph layer (include/npukit/graph.h).

The names, arguments and return values follow onnxruntime's Python API, so that a
script switches between the two by its import line; what npukit adds (devices,
device options, reports, traces, timing-only runs, the QDQ mode) rides on the
same objects (providers, provider options, session and run config entries).
"""

import enum
import json
import os
import tempfile
import time

from . import _npukit
from ._values import IOBinding, ModelMetadata, OrtValue

# ONNX TensorProto element types -> ONNX Runtime's type names
_TYPE_NAMES = {
    1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string",
    9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128",
    16: "bfloat16",
}
_KIND_TENSOR, _KIND_SEQUENCE, _KIND_OPTIONAL = 0, 1, 2

_DEVICES = [d.strip() for d in _npukit.devices.split(",")]  # "cpu, e1, v0, shell, pccx"
# ONNX Runtime's provider names that mean npukit's CPU reference
_CPU_ALIASES = ("cpu", "CPUExecutionProvider")


class GraphOptimizationLevel(enum.IntEnum):
    """Accepted for compatibility: npukit runs the graph as written (no rewriting pass)."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Accepted for compatibility: npukit executes nodes in order."""
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


def get_available_providers():
    """npukit's devices, the CPU reference last (as ONNX Runtime lists CPUExecutionProvider)."""
    return [d for d in _DEVICES if d != "cpu"] + ["CPUExecutionProvider"]


def get_all_providers():
    return get_available_providers()


def get_device():
    return "CPU"


_LOG_SEVERITY = [2]


def set_default_logger_severity(severity):
    """ONNX Runtime's logger threshold (0 verbose .. 4 fatal): accepted; npukit logs nothing
    while running (errors are exceptions)."""
    if not isinstance(severity, int) or isinstance(severity, bool) or not 0 <= severity <= 4:
        raise _npukit.InvalidArgument("logger severity %r: expected 0..4" % (severity,))
    _LOG_SEVERITY[0] = severity


def get_version_string():
    from . import __version__
    return __version__


class SessionOptions:
    """ONNX Runtime's SessionOptions. npukit-specific settings are session config entries:

    - ``npukit.qdq``: ``ort`` (default: the QDQ groups ONNX Runtime fuses run as integer
      operators, the others in float, as ONNX Runtime does) or ``fused`` (every group an
      integer operator, what the devices compute);
    - ``npukit.golden``: ``1`` to run CPU nodes with the naive golden kernels;
    - ``npukit.seed``: the run-level seed of random operators without a seed attribute.
    """

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_profiling = False
        self.profile_file_prefix = "onnxruntime_profile_"
        self.optimized_model_filepath = ""
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.use_deterministic_compute = False
        self._config = {}

    def add_session_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key):
        return self._config[key]


class RunOptions:
    """ONNX Runtime's RunOptions, plus npukit's requests (attributes, or run config entries
    of the same names prefixed ``npukit.``):

    - ``report``: keep the run's partition and performance report as a dict in
      ``InferenceSession.last_report`` (the JSON of ``npu run --report-json``);
    - ``timing_only``: a timing-only run (docs/sweep.md): the device commands, cycles and
      counters of the functional run, no outputs (``run`` returns None for each);
    - ``trace``: a path: write the run's Chrome/Perfetto trace there.
    """

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self.report = False
        self.timing_only = False
        self.trace = None
        self._config = {}

    def add_run_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key):
        return self._config[key]

    def _get(self, name):
        v = self._config.get("npukit." + name)
        if v is None:
            return getattr(self, name)
        if name == "trace":
            return v or None
        return v.lower() in ("1", "true", "yes", "on")


class NodeArg:
    """A graph input or output: name, shape (ints; symbolic dimensions as their names,
    unnamed dynamic ones as None; None when the model declares no shape) and type
    ("tensor(float)", "seq(tensor(int64))", "optional(tensor(float))")."""

    def __init__(self, d):
        self.name = d["name"]
        self.shape = d["shape"]
        self._kind = d["kind"]
        self._dtype = d["dtype"]
        elem = "tensor(%s)" % _TYPE_NAMES.get(d["dtype"], "undefined")
        if d["kind"] == _KIND_SEQUENCE:
            self.type = "seq(%s)" % elem
        elif d["kind"] == _KIND_OPTIONAL:
            self.type = "optional(%s)" % ("seq(%s)" % elem if d["elem_kind"] == _KIND_SEQUENCE else elem)
        else:
            self.type = elem

    def __repr__(self):
        return "NodeArg(name='%s', type='%s', shape=%s)" % (self.name, self.type, self.shape)


def _opt_str(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def _write_atomic(path, data):
    """Write a whole file or nothing (no partial output on failure)."""
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".npukit-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _merge_traces(traces):
    """Concatenate the traces of several runs on one time line (each run's simulated
    clock starts at 0: run k is shifted past the end of run k-1)."""
    events, seen_meta, offset = [], set(), 0.0
    for raw in traces:
        doc = json.loads(raw)
        end = offset
        for e in doc.get("traceEvents", []):
            if e.get("ph") == "M":
                key = json.dumps(e, sort_keys=True)
                if key in seen_meta:
                    continue
                seen_meta.add(key)
                events.append(e)
                continue
            if "ts" in e:
                e["ts"] = e["ts"] + offset
                end = max(end, e["ts"] + e.get("dur", 0))
            events.append(e)
        offset = end
    return json.dumps({"displayTimeUnit": "ns", "traceEvents": events}).encode()


class InferenceSession:
    """ONNX Runtime's InferenceSession on npukit.

    path_or_bytes: a model path or the serialized ModelProto.
    providers: device names in priority order: one of npukit's devices ("v0", "shell",
        "e1", "pccx") and/or "cpu" / "CPUExecutionProvider" (npukit's CPU reference, which
        takes every node the device does not); entries may be (name, options) pairs as in
        ONNX Runtime. Default: the CPU reference.
    provider_options: one dict per provider (ONNX Runtime's form).
    device_options: the device model's options ({"clock_mhz": 500}); the key "port"
        selects the port to the device ("sim", "qtest:PATH", ...).
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, device_options=None,
                 **kwargs):
        unknown = set(kwargs) - {"disabled_optimizers"}
        if unknown:
            raise TypeError("InferenceSession: unexpected keyword arguments %s" % sorted(unknown))
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        self._device, self._port, self._dev_opts, self._providers, self._provider_options = self._pick_device(
            providers, provider_options, device_options)
        threads = self._sess_options.intra_op_num_threads
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 0:
            raise _npukit.InvalidArgument("intra_op_num_threads must be an int >= 0, not %r" % (threads,))
        self._threads = threads  # the worker pool's count during this session's runs (0: npukit's default)
        cfg = self._sess_options._config
        self._qdq = cfg.get("npukit.qdq", "ort")
        if self._qdq not in ("ort", "fused"):
            raise _npukit.InvalidArgument("session config npukit.qdq '%s': expected 'ort' or 'fused'" % self._qdq)
        self._golden = cfg.get("npukit.golden", "0").lower() in ("1", "true", "yes", "on")
        try:
            self._seed = int(cfg.get("npukit.seed", "0"), 0)
        except ValueError:
            raise _npukit.InvalidArgument("session config npukit.seed '%s': not an integer" % cfg["npukit.seed"])
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_path = None
        else:
            self._model_path = os.fspath(path_or_bytes)
        self._graph = _npukit.Graph(path_or_bytes)
        self._graph.check()  # an unsupported operator fails here, as in ONNX Runtime
        self._inputs = [NodeArg(d) for d in self._graph.inputs()]
        self._outputs = [NodeArg(d) for d in self._graph.outputs()]
        self._out_index = {o.name: i for i, o in enumerate(self._outputs)}
        self._profile = []
        self._profile_start = time.time_ns()
        self.last_report = None

    @staticmethod
    def _pick_device(providers, provider_options, device_options):
        if providers is None:
            providers = ["CPUExecutionProvider"]
        if isinstance(providers, str):
            raise _npukit.InvalidArgument("providers must be a list, e.g. ['v0'], not a string")
        names, opts = [], []
        for i, p in enumerate(providers):
            if isinstance(p, (tuple, list)):
                if len(p) != 2 or not isinstance(p[1], dict):
                    raise _npukit.InvalidArgument("provider %r: expected a name or a (name, options dict) pair" % (p,))
                name, o = p[0], dict(p[1])
            else:
                name, o = p, {}
            if provider_options is not None:
                if len(provider_options) != len(providers):
                    raise _npukit.InvalidArgument("provider_options must have one dict per provider")
                o.update(provider_options[i])
            names.append(name)
            opts.append(o)
        device, dev_o = None, {}
        for name, o in zip(names, opts):
            if name in _CPU_ALIASES:
                if o:
                    raise _npukit.InvalidArgument("the cpu provider takes no options (given %s)" % sorted(o))
                continue
            if name not in _DEVICES:
                raise _npukit.InvalidArgument("unknown provider '%s' (npukit's: %s)" %
                                              (name, ", ".join(get_available_providers())))
            if device is not None:
                raise _npukit.InvalidArgument(
                    "providers name two devices ('%s' and '%s'): a session runs on one device and the CPU" %
                    (device, name))
            device, dev_o = name, o
        dev_o = dict(dev_o)
        if device_options:
            if device is None:
                raise _npukit.InvalidArgument("device_options given without a device in providers")
            dev_o.update(device_options)
        port = dev_o.pop("port", None)
        dev_opts = ",".join("%s=%s" % (k, _opt_str(v)) for k, v in dev_o.items()) or None
        device = device or "cpu"
        _npukit.check_device(device, dev_opts)
        if port is not None and device == "cpu":
            raise _npukit.InvalidArgument("a port is for a device, not the cpu")
        out_names = [device, "CPUExecutionProvider"] if device != "cpu" else ["CPUExecutionProvider"]
        out_opts = [dict(dev_o, **({"port": port} if port else {})), {}] if device != "cpu" else [{}]
        out_opts = [{k: _opt_str(v) for k, v in o.items()} for o in out_opts]
        return device, port, dev_opts, out_names, out_opts

    # ---- ONNX Runtime's introspection ----
    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_overridable_initializers(self):
        return []

    def set_providers(self, providers=None, provider_options=None):
        """Switch the session to other providers (as ONNX Runtime's: the model stays loaded)."""
        picked = self._pick_device(providers, provider_options, None)
        self._device, self._port, self._dev_opts, self._providers, self._provider_options = picked

    def get_providers(self):
        return list(self._providers)

    def get_provider_options(self):
        return {n: dict(o) for n, o in zip(self._providers, self._provider_options)}

    def get_session_options(self):
        return self._sess_options

    def get_profiling_start_time_ns(self):
        return self._profile_start

    def get_modelmeta(self):
        """ONNX Runtime's ModelMetadata: producer_name, graph_name, domain, description,
        graph_description, version and custom_metadata_map, as the model file states them."""
        return ModelMetadata(self._graph.meta())

    # ---- running ----
    def run(self, output_names, input_feed, run_options=None):
        """Run the model: input_feed maps input names to numpy arrays (lists for sequence
        inputs, None for an empty optional). Returns the requested outputs (all when
        output_names is None or empty) in order: numpy arrays, lists for sequences, None
        for an empty optional."""
        if not isinstance(input_feed, dict):
            raise _npukit.InvalidArgument("input_feed must be a dict of input name -> array")
        if output_names:
            for n in output_names:
                self._check_output_name(n)
        input_feed = {k: (v._v if isinstance(v, OrtValue) else v) for k, v in input_feed.items()}
        ro = run_options if run_options is not None else RunOptions()
        want_report, timing_only, trace_path = ro._get("report"), ro._get("timing_only"), ro._get("trace")
        if timing_only and self._device == "cpu":
            raise _npukit.InvalidArgument("a timing-only run needs a device (the CPU reference has no timing)")
        want_trace = bool(trace_path) or self._sess_options.enable_profiling
        outs, report, trace = self._graph.run(input_feed, device=self._device, port=self._port,
                                              dev_opts=self._dev_opts, qdq=self._qdq, golden=self._golden,
                                              timing_only=bool(timing_only), seed=self._seed,
                                              report=bool(want_report), trace=want_trace,
                                              threads=self._threads)
        self.last_report = json.loads(report) if report is not None else None
        if trace is not None:
            if trace_path:
                _write_atomic(trace_path, trace)
            if self._sess_options.enable_profiling:
                self._profile.append(trace)
        if not output_names:
            return outs
        return [outs[self._out_index[n]] for n in output_names]

    def _check_output_name(self, n):
        if n not in self._out_index:
            raise _npukit.InvalidArgument("Invalid output name: '%s' (the model's outputs: %s)" %
                                          (n, ", ".join(o.name for o in self._outputs)))

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """run() with OrtValue inputs and outputs (host memory: the values wrap numpy arrays)."""
        if not isinstance(input_dict_ort_values, dict):
            raise _npukit.InvalidArgument("input_dict_ort_values must be a dict of input name -> OrtValue")
        feed = {}
        for k, v in input_dict_ort_values.items():
            if not isinstance(v, OrtValue):
                raise _npukit.InvalidArgument("input '%s': expected an OrtValue, got %s" % (k, type(v).__name__))
            feed[k] = v._v
        return [OrtValue._wrap(v) for v in self.run(output_names, feed, run_options)]

    def io_binding(self):
        """An IOBinding for this session (host memory only)."""
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        if not isinstance(iobinding, IOBinding) or iobinding._sess is not self:
            raise _npukit.InvalidArgument("run_with_iobinding: the binding belongs to another session")
        iobinding._run(run_options)

    def end_profiling(self):
        """With SessionOptions.enable_profiling: write the traces of the runs so far as one
        Chrome/Perfetto trace file named after profile_file_prefix and return its path
        ("" when profiling is off), as ONNX Runtime does."""
        if not self._sess_options.enable_profiling:
            return ""
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
        path = "%s%s.json" % (self._sess_options.profile_file_prefix, stamp)
        _write_atomic(path, _merge_traces(self._profile))
        self._profile = []
        return path
