# SPDX-License-Identifier: MIT
"""Quantized transformers against ONNX Runtime (issue 29 point 6; ctest python_qdq_ort).

scripts/qdq_transformer.py writes recognizers of the PP-OCRv4 kind in ONNX Runtime's QDQ layout
(convolutions, two attention blocks with activation x activation MatMuls between QDQ pairs,
LayerNormalization and Softmax around QDQ groups, a Conv with K = 2880) in several sizes;
onnxruntime-node runs them (scripts/ort_run.js, CPU, one thread) and saves its optimised model.
npukit with --qdq ort (npukit.qdq "ort", the session default) on cpu, v0 and shell must:
- keep in float exactly the Conv/MatMul nodes ONNX Runtime keeps in float, and run as ONNX
  Runtime's QLinearSoftmax exactly the Softmax nodes it replaces by one (uint8 and int8);
- equal ONNX Runtime's outputs bit for bit where ONNX Runtime's arithmetic is exact: the
  dequantized logits and the extra outputs; the final float Softmax (ONNX Runtime's MLAS
  exponential, not correctly rounded) within rtol 1e-6.
With --qdq fused (every group an integer operator, its Softmax in float) the logits differ: the
comparison can fail. Weights are 7-bit (reduce_range), where ONNX Runtime's x86 integer kernels
are exact on every instruction set (scripts/qdq_transformer.py)."""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import numpy_helper

import npukit

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(SRC, "scripts"))
import qdq_transformer  # noqa: E402

ORT_DIR = os.environ.get("NPUKIT_ORT_DIR") or os.path.expanduser("~/.cache/npukit/ortnode")


# node and npm run without the sanitizer runtime the interpreter may have preloaded (cmake/python.cmake)
ENV = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}


def ensure_ort():
    """onnxruntime-node in ORT_DIR, installed from npm as scripts/deps.sh does when missing."""
    if not shutil.which("node") or not shutil.which("npm"):
        raise RuntimeError("node and npm are needed for the ONNX Runtime oracle (apt-get install nodejs)")
    if not os.path.exists(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node", "package.json")):
        os.makedirs(ORT_DIR, exist_ok=True)
        subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", ORT_DIR,
                        "onnxruntime-node"], check=True, capture_output=True, env=ENV)


def read(p):
    t = onnx.TensorProto()
    with open(p, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


class QdqTransformerOrt(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ensure_ort()
        cls.tmp = tempfile.mkdtemp(prefix="npukit-qdqt-")
        gen = os.path.join(cls.tmp, "gen")
        if qdq_transformer.main(["qdq_transformer", gen]) != 0:
            raise RuntimeError("qdq_transformer.py failed")
        cls.dirs = sorted(glob.glob(os.path.join(gen, "*")))
        opt = os.path.join(cls.tmp, "opt")
        for d in cls.dirs:
            shutil.copytree(d, os.path.join(opt, os.path.basename(d)))
        run = [os.path.join(SRC, "scripts", "ort_run.js"), ORT_DIR]
        subprocess.run(["node"] + run + cls.dirs, check=True, capture_output=True, env=ENV)
        subprocess.run(["node", run[0], ORT_DIR, "--float-nodes"] + sorted(glob.glob(os.path.join(opt, "*"))),
                       check=True, capture_output=True, env=ENV)
        cls.opt = opt

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def ort_choice(self, name):
        """ONNX Runtime's optimised model: the Conv/MatMul nodes it keeps in float, the Softmax
        nodes it runs as QLinearSoftmax."""
        d = os.path.join(self.opt, name)
        with open(os.path.join(d, "ort_float.txt")) as f:
            floats = set(f.read().split())
        m = onnx.load(os.path.join(d, "ort_optimized.onnx"))
        qsm = {n.name for n in m.graph.node if n.op_type == "QLinearSoftmax"}
        return floats, qsm

    def test_sizes_present(self):
        self.assertEqual(sorted(os.path.basename(d) for d in self.dirs), sorted(qdq_transformer.SIZES))

    def test_against_ort(self):
        for d in self.dirs:
            name = os.path.basename(d)
            floats, qsm = self.ort_choice(name)
            self.assertTrue(qsm, "%s: ONNX Runtime fused no Softmax: the case is not exercised" % name)
            x = read(os.path.join(d, "test_data_set_0", "input_0.pb"))
            exp = [read(p) for p in sorted(glob.glob(os.path.join(d, "test_data_set_0", "output_*.pb")))]
            for dev in ("cpu", "v0", "shell"):
                with self.subTest(model=name, device=dev):
                    sess = npukit.InferenceSession(os.path.join(d, "model.onnx"), providers=[dev])
                    ro = npukit.RunOptions()
                    ro.report = True
                    got = sess.run(None, {"x": x}, ro)
                    nodes = sess.last_report["nodes"]
                    ours = {n["name"] for n in nodes if n["op"] in ("Conv", "MatMul", "Gemm") and
                            "float as in ONNX Runtime" in n["why"]}
                    self.assertEqual(ours, floats, "nodes kept in float")
                    self.assertEqual({n["name"] for n in nodes if "QLinearSoftmax" in n["why"]}, qsm)
                    self.assertEqual(len(got), len(exp))
                    np.testing.assert_allclose(got[0], exp[0], rtol=1e-6, atol=0)  # float Softmax
                    for k in range(1, len(exp)):
                        self.assertEqual(got[k].dtype, exp[k].dtype)
                        np.testing.assert_array_equal(got[k], exp[k], "%s output %d on %s" % (name, k, dev))
            # every group fused, the Softmax in float: the logits are not ONNX Runtime's
            so = npukit.SessionOptions()
            so.add_session_config_entry("npukit.qdq", "fused")
            fused = npukit.InferenceSession(os.path.join(d, "model.onnx"), sess_options=so).run(None, {"x": x})
            self.assertFalse(np.array_equal(fused[1], exp[1]), "%s: --qdq fused equals ONNX Runtime" % name)


if __name__ == "__main__":
    unittest.main()
