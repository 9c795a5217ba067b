# SPDX-License-Identifier: MIT
"""Every onnx-zoo model (../shared/models/onnx-zoo, ONNX Runtime 1.30's recorded outputs) and
the CIFAR-10 LeNet through npukit.InferenceSession on cpu, v0 and shell, compared as
tests/onnx_zoo.cmaketest compares them with `npu onnx-test`: integer outputs exactly, float
outputs within rtol 1e-3, atol 1e-6 (whole networks: float32 summation order differs from ONNX
Runtime's through dozens of layers). The session's QDQ mode is ONNX Runtime's (npukit.qdq
"ort"), under which the quantized models' recorded outputs are matched bit for bit: they are
also checked with rtol 0, atol 0."""

import glob
import os
import unittest

import npukit
from npktest_util import SHARED, data_sets, load_set, mismatch

ZOO = os.path.join(SHARED, "models", "onnx-zoo")
LENET = os.path.join(SHARED, "models", "cifar10-lenet-int8")
DEVICES = ("cpu", "v0", "shell")


def models():
    dirs = sorted(d for d in glob.glob(os.path.join(ZOO, "*")) if os.path.exists(os.path.join(d, "model.onnx")))
    return dirs + [LENET]


class ZooTest(unittest.TestCase):
    def test_models_present(self):
        # the suite is not vacuous: the five zoo models and the LeNet, each with data
        ms = models()
        self.assertGreaterEqual(len(ms), 6, ms)
        for m in ms:
            self.assertTrue(data_sets(m), m)

    def check_model(self, model_dir, device):
        quantized = "qdq" in os.path.basename(model_dir) or "int8" in os.path.basename(model_dir)
        sess = npukit.InferenceSession(os.path.join(model_dir, "model.onnx"), providers=[device])
        ro = npukit.RunOptions()
        ro.report = True
        for s in data_sets(model_dir):
            feed, exp = load_set(sess, s)
            got = sess.run(None, feed, ro)
            if device != "cpu" and quantized:
                # the integer products ran on the device, not all on the CPU
                self.assertTrue(any(n["place"] == "device" and n["macs"] for n in sess.last_report["nodes"]),
                                "%s on %s: no product on the device" % (model_dir, device))
            self.assertEqual(len(got), len(exp))
            for k, (g, e) in enumerate(zip(got, exp)):
                rtol, atol = (0, 0) if quantized else (1e-3, 1e-6)
                m = mismatch(g, e, rtol, atol, "output %d" % k)
                self.assertIsNone(m, "%s %s on %s: %s" % (os.path.basename(model_dir), os.path.basename(s), device, m))


def _add(model_dir, device):
    name = "test_%s_%s" % (os.path.basename(model_dir).replace("-", "_"), device)
    setattr(ZooTest, name, lambda self: self.check_model(model_dir, device))


for _m in models():
    for _d in DEVICES:
        _add(_m, _d)

if __name__ == "__main__":
    unittest.main()
