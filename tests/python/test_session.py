# SPDX-License-Identifier: MIT
"""npukit.InferenceSession's ONNX Runtime API: introspection, every element type, sequences
and optionals (ONNX's backend node tests), errors as exceptions carrying npukit's message,
reports, traces, timing-only runs, profiling, session options."""

import json
import os
import tempfile
import threading
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import npukit
from npktest_util import NODE_TESTS, SHARED, data_sets, load_set, mismatch

LENET = os.path.join(SHARED, "models", "cifar10-lenet-int8")
QDQ = os.path.join(SHARED, "models", "onnx-zoo", "ppocr-cls-qdq-s8")


def model_bytes(nodes, inputs, outputs, opset=17, initializers=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def identity_model(elem, shape=("n", 3)):
    return model_bytes([helper.make_node("Identity", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", elem, list(shape))],
                       [helper.make_tensor_value_info("y", elem, list(shape))])


def lenet_feed(sess):
    p = os.path.join(LENET, "test_data_set_0")
    return load_set(sess, p)


class IntrospectionTest(unittest.TestCase):
    def test_lenet_io(self):
        sess = npukit.InferenceSession(os.path.join(LENET, "model.onnx"), providers=["v0"])
        (i,), (o,) = sess.get_inputs(), sess.get_outputs()
        self.assertEqual((i.name, i.type, i.shape), ("images", "tensor(int8)", [4, 3, 32, 32]))
        self.assertEqual((o.name, o.type, o.shape), ("logits", "tensor(int8)", [4, 10]))
        self.assertEqual(sess.get_providers(), ["v0", "CPUExecutionProvider"])

    def test_symbolic_dims_and_bytes(self):
        m = model_bytes([helper.make_node("Relu", ["x"], ["y"])],
                        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, None])],
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3, None])])
        sess = npukit.InferenceSession(m)
        self.assertEqual(sess.get_inputs()[0].shape, ["batch", 3, None])
        x = np.linspace(-1, 1, 2 * 3 * 5, dtype=np.float32).reshape(2, 3, 5)
        (y,) = sess.run(["y"], {"x": x})
        np.testing.assert_array_equal(y, np.maximum(x, 0))
        # a strided view is read as its values
        (y,) = sess.run(None, {"x": x[:, :, ::2]})
        np.testing.assert_array_equal(y, np.maximum(x[:, :, ::2], 0))

    def test_every_dtype(self):
        cases = [(TensorProto.FLOAT, np.float32), (TensorProto.DOUBLE, np.float64), (TensorProto.FLOAT16, np.float16),
                 (TensorProto.INT8, np.int8), (TensorProto.UINT8, np.uint8), (TensorProto.INT16, np.int16),
                 (TensorProto.UINT16, np.uint16), (TensorProto.INT32, np.int32), (TensorProto.UINT32, np.uint32),
                 (TensorProto.INT64, np.int64), (TensorProto.UINT64, np.uint64), (TensorProto.BOOL, np.bool_)]
        rng = np.random.default_rng(1)
        for elem, dt in cases:
            with self.subTest(dtype=dt.__name__):
                sess = npukit.InferenceSession(identity_model(elem))
                self.assertEqual(sess.get_inputs()[0].type, "tensor(%s)" % TensorProto.DataType.Name(elem).lower())
                x = (rng.standard_normal((4, 3)) * 100).astype(dt)
                (y,) = sess.run(None, {"x": x})
                self.assertEqual(y.dtype, x.dtype)
                np.testing.assert_array_equal(y, x)
        # bfloat16: numpy has none; its bits travel as uint16
        sess = npukit.InferenceSession(identity_model(TensorProto.BFLOAT16))
        self.assertEqual(sess.get_inputs()[0].type, "tensor(bfloat16)")
        m = model_bytes([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16)],
                        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [3])])
        (y,) = npukit.InferenceSession(m).run(None, {"x": np.array([1.0, -2.5, 3.0], np.float32)})
        self.assertEqual(y.dtype, np.uint16)
        np.testing.assert_array_equal(y, [0x3F80, 0xC020, 0x4040])  # bfloat16 bit patterns

    def test_outputs_are_owned_arrays(self):
        sess = npukit.InferenceSession(identity_model(TensorProto.FLOAT))
        x = np.ones((2, 3), np.float32)
        (y,) = sess.run(None, {"x": x})
        self.assertFalse(np.shares_memory(x, y))
        y += 1  # writable, independent of the input
        np.testing.assert_array_equal(x, 1)


class ContainerTest(unittest.TestCase):
    """Sequence and optional inputs and outputs: ONNX's backend node tests with their data."""

    def run_node_test(self, name):
        d = os.path.join(NODE_TESTS, name)
        sess = npukit.InferenceSession(os.path.join(d, "model.onnx"))
        for s in data_sets(d):
            feed, exp = load_set(sess, s)
            got = sess.run(None, feed)
            for k, (g, e) in enumerate(zip(got, exp)):
                m = mismatch(g, e, 1e-3, 1e-7, "output %d" % k)
                self.assertIsNone(m, "%s: %s" % (name, m))
        return sess

    @unittest.skipUnless(os.path.isdir(NODE_TESTS), "libonnx-testdata not installed")
    def test_node_tests(self):
        s = self.run_node_test("test_identity_sequence")
        self.assertEqual(s.get_inputs()[0].type, "seq(tensor(float))")
        s = self.run_node_test("test_optional_get_element_sequence")
        self.assertEqual(s.get_inputs()[0].type, "optional(seq(tensor(int32)))")
        self.run_node_test("test_sequence_insert_at_back")
        self.run_node_test("test_optional_has_element_empty")

    def test_optional_output_none(self):
        opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
        m = model_bytes([helper.make_node("Optional", [], ["y"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))],
                        [], [helper.make_value_info("y", opt)], opset=15)
        sess = npukit.InferenceSession(m)
        self.assertEqual(sess.get_outputs()[0].type, "optional(tensor(float))")
        self.assertEqual(sess.run(None, {}), [None])


class ErrorTest(unittest.TestCase):
    def setUp(self):
        self.sess = npukit.InferenceSession(os.path.join(LENET, "model.onnx"))
        self.x = np.zeros((4, 3, 32, 32), np.int8)

    def test_bad_input_name(self):
        with self.assertRaisesRegex(npukit.InvalidArgument, "no input named 'imgs'.*'images'"):
            self.sess.run(None, {"imgs": self.x})

    def test_bad_dtype(self):
        with self.assertRaisesRegex(npukit.InvalidArgument, "images.*float.*int8|images.*int8.*float"):
            self.sess.run(None, {"images": self.x.astype(np.float32)})

    def test_bad_shape(self):
        with self.assertRaisesRegex(npukit.InvalidArgument, r"images.*\[4,3,32,32\]|images.*4.*3.*32.*32"):
            self.sess.run(None, {"images": self.x[:2]})

    def test_missing_input_and_bad_output(self):
        with self.assertRaisesRegex(npukit.InvalidArgument, "missing input 'images'"):
            self.sess.run(None, {})
        with self.assertRaisesRegex(npukit.InvalidArgument, "Invalid output name: 'nope'"):
            self.sess.run(["nope"], {"images": self.x})

    def test_unsupported_operator(self):
        m = model_bytes([helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Adagrad", ["t"], ["y"])],
                        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        with self.assertRaisesRegex(npukit.NotImplemented, "Adagrad"):
            npukit.InferenceSession(m)

    def test_bad_files_and_providers(self):
        with self.assertRaises(npukit.NoSuchFile):
            npukit.InferenceSession("/nonexistent/model.onnx")
        with self.assertRaises(npukit.Error):
            npukit.InferenceSession(b"\x08\x07garbage\xff\xff")
        with self.assertRaisesRegex(npukit.InvalidArgument, "unknown provider 'CUDAExecutionProvider'"):
            npukit.InferenceSession(os.path.join(LENET, "model.onnx"), providers=["CUDAExecutionProvider"])
        with self.assertRaisesRegex(npukit.InvalidArgument, "bogus"):
            npukit.InferenceSession(os.path.join(LENET, "model.onnx"), providers=["v0"], device_options={"bogus": 1})
        with self.assertRaisesRegex(npukit.InvalidArgument, "two devices"):
            npukit.InferenceSession(os.path.join(LENET, "model.onnx"), providers=["v0", "shell"])
        so = npukit.SessionOptions()
        so.intra_op_num_threads = -1
        with self.assertRaises(npukit.InvalidArgument):
            npukit.InferenceSession(os.path.join(LENET, "model.onnx"), sess_options=so)
        with self.assertRaisesRegex(npukit.InvalidArgument, "dtype"):
            self.sess.run(None, {"images": np.array(["a"] * 4)})


class ReportTest(unittest.TestCase):
    # LeNet's multiply-accumulates, from its layer shapes (README.md): 4 images x
    # conv1 6x28x28x75 + conv2 16x10x10x150 + fc 400x120 + 120x84 + 84x10
    LENET_MACS = 4 * (6 * 28 * 28 * 75 + 16 * 10 * 10 * 150 + 400 * 120 + 120 * 84 + 84 * 10)

    def test_report_trace_timing(self):
        so = npukit.SessionOptions()
        so.intra_op_num_threads = 1
        sess = npukit.InferenceSession(os.path.join(LENET, "model.onnx"), sess_options=so, providers=["v0"],
                                       device_options={"clock_mhz": 1000})
        feed, exp = lenet_feed(sess)
        ro = npukit.RunOptions()
        ro.report = True
        with tempfile.TemporaryDirectory() as d:
            ro.trace = os.path.join(d, "t.json")
            (y,) = sess.run(None, feed, ro)
            np.testing.assert_array_equal(y, exp[0])
            r = sess.last_report
            self.assertEqual(r["device"], "v0")
            self.assertEqual(r["device_hz"], 1000000000)
            self.assertEqual(sum(n["macs"] for n in r["nodes"]), self.LENET_MACS)
            dev = [n for n in r["nodes"] if n["place"] == "device"]
            self.assertLessEqual({"QLinearConv", "QLinearMatMul"}, {n["op"] for n in dev})
            for n in dev:
                self.assertGreater(n["cycles"], 0)
                if n["macs"]:
                    self.assertGreater(n["utilization"], 0)
                    self.assertLessEqual(n["utilization"], 1)
            self.assertEqual(r["device_macs"], sum(n["macs"] for n in dev))
            self.assertIn("performance", r)
            with open(ro.trace) as f:
                t = json.load(f)
            self.assertTrue(any(e.get("ph") == "X" for e in t["traceEvents"]))
        # timing-only: the same device cycles, no outputs
        ro2 = npukit.RunOptions()
        ro2.add_run_config_entry("npukit.timing_only", "1")
        ro2.add_run_config_entry("npukit.report", "1")
        self.assertEqual(sess.run(None, feed, ro2), [None])
        self.assertEqual(sess.last_report["device_cycles"], r["device_cycles"])
        # without a report request there is none
        sess.run(None, feed)
        self.assertIsNone(sess.last_report)
        with self.assertRaisesRegex(npukit.InvalidArgument, "timing-only"):
            npukit.InferenceSession(os.path.join(LENET, "model.onnx")).run(None, feed, ro2)

    def test_profiling(self):
        with tempfile.TemporaryDirectory() as d:
            so = npukit.SessionOptions()
            so.enable_profiling = True
            so.profile_file_prefix = os.path.join(d, "prof_")
            sess = npukit.InferenceSession(os.path.join(LENET, "model.onnx"), sess_options=so, providers=["v0"])
            feed, _ = lenet_feed(sess)
            sess.run(None, feed)
            one = None
            sess.run(None, feed)
            path = sess.end_profiling()
            self.assertTrue(path.startswith(so.profile_file_prefix) and path.endswith(".json"))
            with open(path) as f:
                t = json.load(f)
            ev = [e for e in t["traceEvents"] if e.get("ph") == "X"]
            one = len(ev) // 2
            self.assertEqual(len(ev), 2 * one)  # two runs, the same events each
            self.assertGreater(one, 0)

    def test_qdq_mode(self):
        # ppocr-cls-qdq-s8 test_data_set_1: ONNX Runtime runs 22 groups in float (tests/onnx_zoo.cmaketest);
        # "ort" reproduces its recorded output, "fused" (every group integer) differs from it
        so = npukit.SessionOptions()
        so.add_session_config_entry("npukit.qdq", "fused")
        fused = npukit.InferenceSession(os.path.join(QDQ, "model.onnx"), sess_options=so)
        ort = npukit.InferenceSession(os.path.join(QDQ, "model.onnx"))
        feed, exp = load_set(ort, os.path.join(QDQ, "test_data_set_1"))
        self.assertIsNone(mismatch(ort.run(None, feed)[0], exp[0], 0, 0))
        self.assertIsNotNone(mismatch(fused.run(None, feed)[0], exp[0], 0, 0))
        so.add_session_config_entry("npukit.qdq", "bogus")
        with self.assertRaisesRegex(npukit.InvalidArgument, "npukit.qdq"):
            npukit.InferenceSession(os.path.join(QDQ, "model.onnx"), sess_options=so)

    def test_threads(self):
        sess = npukit.InferenceSession(os.path.join(LENET, "model.onnx"), providers=["v0"])
        feed, exp = lenet_feed(sess)
        res = [None] * 4

        def work(i):
            res[i] = sess.run(None, feed)[0]

        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for r in res:
            np.testing.assert_array_equal(r, exp[0])


CLS = os.path.join(SHARED, "models", "onnx-zoo", "ppocr-cls-mobile-v2")


class OrtApiTest(unittest.TestCase):
    """get_modelmeta, providers, OrtValue, run_with_ort_values and IOBinding as ONNX Runtime's."""

    def test_modelmeta(self):
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "my_graph",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], doc_string="graph doc")
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="prod",
                              producer_version="1.2.3", domain="org.example", model_version=42, doc_string="model doc")
        m.ir_version = 8
        helper.set_model_props(m, {"author": "me", "classes": "a,b,c"})
        meta = npukit.InferenceSession(m.SerializeToString()).get_modelmeta()
        self.assertEqual((meta.producer_name, meta.producer_version, meta.domain, meta.version, meta.description,
                          meta.graph_name, meta.graph_description, meta.custom_metadata_map),
                         ("prod", "1.2.3", "org.example", 42, "model doc", "my_graph", "graph doc",
                          {"author": "me", "classes": "a,b,c"}))
        # the zoo's files, against the onnx package's reader
        for d in (LENET, QDQ, CLS):
            ref = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
            meta = npukit.InferenceSession(os.path.join(d, "model.onnx")).get_modelmeta()
            self.assertEqual((meta.producer_name, meta.domain, meta.version, meta.graph_name,
                              meta.custom_metadata_map),
                             (ref.producer_name, ref.domain, ref.model_version, ref.graph.name,
                              {p.key: p.value for p in ref.metadata_props}))

    def test_providers(self):
        sess = npukit.InferenceSession(os.path.join(LENET, "model.onnx"), providers=[("v0", {"clock_mhz": 500})])
        self.assertEqual(sess.get_providers(), ["v0", "CPUExecutionProvider"])
        self.assertEqual(sess.get_provider_options(), {"v0": {"clock_mhz": "500"}, "CPUExecutionProvider": {}})
        feed, exp = lenet_feed(sess)
        ro = npukit.RunOptions()
        ro.report = True
        np.testing.assert_array_equal(sess.run(None, feed, ro)[0], exp[0])
        self.assertEqual(sess.last_report["device"], "v0")
        sess.set_providers(["CPUExecutionProvider"])
        self.assertEqual(sess.get_providers(), ["CPUExecutionProvider"])
        np.testing.assert_array_equal(sess.run(None, feed, ro)[0], exp[0])
        self.assertEqual(sess.last_report["device"], "cpu")
        with self.assertRaisesRegex(npukit.InvalidArgument, "unknown provider 'CUDAExecutionProvider'"):
            sess.set_providers(["CUDAExecutionProvider"])

    def test_module_functions(self):
        self.assertEqual(npukit.get_version_string(), npukit.__version__)
        npukit.set_default_logger_severity(3)
        with self.assertRaisesRegex(npukit.InvalidArgument, "logger severity 7"):
            npukit.set_default_logger_severity(7)

    def test_ortvalue(self):
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        v = npukit.OrtValue.ortvalue_from_numpy(x)
        self.assertIs(v.numpy(), x)  # no copy
        self.assertEqual((v.shape(), v.data_type(), v.element_type(), v.device_name(), v.is_tensor(),
                          v.has_value(), v.data_ptr()), ([2, 3], "tensor(float)", 1, "cpu", True, True, x.ctypes.data))
        z = npukit.OrtValue.ortvalue_from_shape_and_type([4], np.int8)
        self.assertEqual((z.shape(), z.data_type()), ([4], "tensor(int8)"))
        z.update_inplace(np.array([1, -2, 3, -4], np.int8))
        np.testing.assert_array_equal(z.numpy(), [1, -2, 3, -4])
        with self.assertRaisesRegex(npukit.InvalidArgument, "update_inplace"):
            z.update_inplace(np.zeros(4, np.float32))
        with self.assertRaisesRegex(npukit.NotImplemented, "device 'cuda'"):
            npukit.OrtValue.ortvalue_from_numpy(x, "cuda", 0)
        with self.assertRaisesRegex(npukit.InvalidArgument, "element type"):
            npukit.OrtValue.ortvalue_from_numpy(np.array(["a"]))
        sess = npukit.InferenceSession(identity_model(TensorProto.FLOAT))
        (y,) = sess.run_with_ort_values(["y"], {"x": v})
        self.assertIsInstance(y, npukit.OrtValue)
        np.testing.assert_array_equal(y.numpy(), x)
        with self.assertRaisesRegex(npukit.InvalidArgument, "expected an OrtValue"):
            sess.run_with_ort_values(None, {"x": x})

    def test_iobinding(self):
        sess = npukit.InferenceSession(os.path.join(LENET, "model.onnx"), providers=["v0"])
        feed, exp = lenet_feed(sess)
        io = sess.io_binding()
        io.bind_cpu_input("images", feed["images"])
        io.bind_output("logits")
        sess.run_with_iobinding(io)
        (out,) = io.copy_outputs_to_cpu()
        np.testing.assert_array_equal(out, exp[0])
        self.assertIsInstance(io.get_outputs()[0], npukit.OrtValue)
        # into a preallocated value: the run writes into its array
        pre = npukit.OrtValue.ortvalue_from_shape_and_type([4, 10], np.int8)
        buf = pre.numpy()
        io.clear_binding_outputs()
        io.bind_ortvalue_output("logits", pre)
        io.clear_binding_inputs()
        io.bind_ortvalue_input("images", npukit.OrtValue.ortvalue_from_numpy(feed["images"]))
        sess.run_with_iobinding(io)
        self.assertIs(io.get_outputs()[0], pre)
        np.testing.assert_array_equal(buf, exp[0])
        bad = npukit.OrtValue.ortvalue_from_shape_and_type([4, 10], np.float32)
        io.bind_ortvalue_output("logits", bad)
        with self.assertRaisesRegex(npukit.InvalidArgument, "output 'logits' is int8"):
            sess.run_with_iobinding(io)
        with self.assertRaisesRegex(npukit.InvalidArgument, "Invalid output name: 'nope'"):
            io.bind_output("nope")
        with self.assertRaisesRegex(npukit.NotImplemented, "raw buffer pointer"):
            io.bind_input("images", "cpu", 0, np.int8, [4, 3, 32, 32], buf.ctypes.data)
        io.clear_binding_outputs()
        with self.assertRaisesRegex(npukit.InvalidArgument, "no output is bound"):
            sess.run_with_iobinding(io)

DET = os.path.join(SHARED, "models", "onnx-zoo", "ppocr-v4-det")


def qconv_model(C=64, H=32, W=32, O=64):
    """DequantizeLinear -> 3x3 Conv -> QuantizeLinear, int8, large enough (37.7M MACs) that the
    integer GEMM splits over the worker pool on the CPU, v0 and shell; and an input."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.integers(-127, 128, (O, C, 3, 3), dtype=np.int8), "w_q"),
             numpy_helper.from_array(np.float32(0.02), "x_s"), numpy_helper.from_array(np.int8(3), "x_z"),
             numpy_helper.from_array((0.001 * (1 + np.arange(O) / O)).astype(np.float32), "w_s"),
             numpy_helper.from_array(np.zeros(O, np.int8), "w_z"), numpy_helper.from_array(np.float32(0.5), "y_s"),
             numpy_helper.from_array(np.int8(-5), "y_z")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_s", "x_z"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["wd"], axis=0),
             helper.make_node("Conv", ["xd", "wd"], ["yf"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["yf", "y_s", "y_z"], ["y"])]
    return (model_bytes(nodes, [helper.make_tensor_value_info("x", TensorProto.INT8, [1, C, H, W])],
                        [helper.make_tensor_value_info("y", TensorProto.INT8, [1, O, H, W])], initializers=inits),
            {"x": rng.integers(-128, 128, (1, C, H, W), dtype=np.int8)})


def session_at(model, provider, threads, qdq="fused", golden=False):
    so = npukit.SessionOptions()
    so.intra_op_num_threads = threads
    so.add_session_config_entry("npukit.qdq", qdq)  # fused: every group an integer operator
    if golden:
        so.add_session_config_entry("npukit.golden", "1")
    return npukit.InferenceSession(model, sess_options=so, providers=[provider])


# A fresh interpreter (no worker thread started yet) with NPUKIT_THREADS=1 (npukit's default count):
# the threads the process gains in a run are the workers the session's intra_op_num_threads starts.
_THREAD_PROBE = """
import os, sys
import npukit
from test_session import DET, load_set, qconv_model, session_at
t, case, provider = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if case == "qconv":
    model, feed = qconv_model()
else:
    model = os.path.join(DET, "model.onnx")
    feed, _ = load_set(npukit.InferenceSession(model), os.path.join(DET, "test_data_set_0"))
sess = session_at(model, provider, t)
before = len(os.listdir("/proc/self/task"))
sess.run(None, feed)
print(len(os.listdir("/proc/self/task")) - before)
"""


class IntraOpThreadsTest(unittest.TestCase):
    """SessionOptions.intra_op_num_threads is the worker pool's count for the session's runs
    (include/npukit/threads.h, npk_threads_set_local on the running thread): outputs are
    byte-identical at 1, 2 and 3 threads, and the pool starts the workers asked for."""

    def test_byte_identical(self):
        qconv, qfeed = qconv_model()
        golden = session_at(qconv, "cpu", 1, golden=True).run(None, qfeed)  # the naive kernels: no pool
        det = os.path.join(DET, "model.onnx")
        dfeed, dexp = load_set(npukit.InferenceSession(det), os.path.join(DET, "test_data_set_0"))
        cases = [(qconv, "qconv", p, qfeed, golden, 0) for p in ("cpu", "v0", "shell")] + \
                [(det, "ppocr-v4-det", p, dfeed, dexp, 1e-3) for p in ("cpu", "v0")]
        for model, name, provider, feed, exp, rtol in cases:
            with self.subTest(model=name, provider=provider):
                outs = [session_at(model, provider, t).run(None, feed) for t in (1, 2, 3)]
                for t, o in zip((2, 3), outs[1:]):
                    for a, b in zip(outs[0], o):
                        self.assertEqual(a.dtype, b.dtype)
                        self.assertEqual(a.tobytes(), b.tobytes(), "%d threads differ from 1" % t)
                for g, e in zip(outs[0], exp):  # and right: the golden kernels / ONNX Runtime's outputs
                    self.assertIsNone(mismatch(g, e, rtol, 1e-6 if rtol else 0))

    def test_pool_follows_the_option(self):
        import subprocess
        import sys
        here = os.path.dirname(os.path.abspath(__file__))
        env = dict(os.environ, NPUKIT_THREADS="1",
                   PYTHONPATH=os.pathsep.join([here] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                        if p]))
        for case, provider in (("qconv", "cpu"), ("qconv", "v0"), ("qconv", "shell"), ("det", "cpu")):
            started = {}
            for t in (0, 1, 3):
                r = subprocess.run([sys.executable, "-c", _THREAD_PROBE, str(t), case, provider], env=env,
                                   capture_output=True, text=True, timeout=300)
                self.assertEqual(r.returncode, 0, r.stderr)
                started[t] = int(r.stdout.split()[-1])
            # 0: npukit's default (NPUKIT_THREADS=1 here): no worker; 1: none; 3: two beside the caller
            self.assertEqual(started, {0: 0, 1: 0, 3: 2}, "%s on %s" % (case, provider))
        so = npukit.SessionOptions()
        for bad in (-1, 1.5, True):
            so.intra_op_num_threads = bad
            with self.assertRaisesRegex(npukit.InvalidArgument, "intra_op_num_threads"):
                npukit.InferenceSession(os.path.join(LENET, "model.onnx"), sess_options=so)


class TensorIOTest(unittest.TestCase):
    def test_roundtrip_with_onnx(self):
        x = np.arange(12, dtype=np.int16).reshape(3, 4)
        b = npukit.save_tensor(x, "x")
        p = onnx.TensorProto()
        p.ParseFromString(b)
        np.testing.assert_array_equal(onnx.numpy_helper.to_array(p), x)
        np.testing.assert_array_equal(npukit.load_tensor(onnx.numpy_helper.from_array(x).SerializeToString()), x)


if __name__ == "__main__":
    unittest.main()
