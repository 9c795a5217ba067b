# SPDX-License-Identifier: MIT
"""Shared helpers of the Python tests: ONNX backend-test directories read with the onnx
package (python3-onnx: a reader independent of npukit's) and `npu onnx-test`'s comparison."""

import glob
import os

import numpy as np
import onnx
from onnx import numpy_helper

SHARED = os.environ.get("NPUKIT_SHARED_DIR") or os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared")
NODE_TESTS = "/usr/share/libonnx-testdata/data/node"


def read_value(path, type_str):
    """A TensorProto / SequenceProto / OptionalProto file as numpy (list, None), by the
    declared type of the graph input or output it belongs to."""
    with open(path, "rb") as f:
        data = f.read()
    if type_str.startswith("seq("):
        p = onnx.SequenceProto()
        p.ParseFromString(data)
        return numpy_helper.to_list(p)
    if type_str.startswith("optional("):
        p = onnx.OptionalProto()
        p.ParseFromString(data)
        return numpy_helper.to_optional(p)
    p = onnx.TensorProto()
    p.ParseFromString(data)
    return numpy_helper.to_array(p)


def data_sets(model_dir):
    return sorted(glob.glob(os.path.join(model_dir, "test_data_set_*")))


def load_set(sess, set_dir):
    """(input feed, expected outputs) of a test_data_set_N directory for a session."""
    ins = sess.get_inputs()
    feed = {}
    for k, a in enumerate(ins):
        p = os.path.join(set_dir, "input_%d.pb" % k)
        if os.path.exists(p):
            feed[a.name] = read_value(p, a.type)
    exp = [read_value(os.path.join(set_dir, "output_%d.pb" % k), o.type) for k, o in enumerate(sess.get_outputs())]
    return feed, exp


def mismatch(got, exp, rtol, atol, what="output"):
    """None when got equals exp as `npu onnx-test` compares (integers exactly, floats within
    atol + rtol * |expected|, NaN == NaN); else the first difference."""
    if exp is None or isinstance(exp, list):
        if type(got) is not type(exp) and not (exp is None and got is None):
            return "%s: got %s, expected %s" % (what, type(got).__name__, type(exp).__name__)
        if exp is None:
            return None
        if len(got) != len(exp):
            return "%s: %d items, expected %d" % (what, len(got), len(exp))
        for i, (g, e) in enumerate(zip(got, exp)):
            m = mismatch(g, e, rtol, atol, "%s item %d" % (what, i))
            if m:
                return m
        return None
    if not isinstance(got, np.ndarray):
        return "%s: got %s, expected an array" % (what, type(got).__name__)
    if got.dtype != exp.dtype or got.shape != exp.shape:
        return "%s: got %s%s, expected %s%s" % (what, got.dtype, got.shape, exp.dtype, exp.shape)
    if np.issubdtype(exp.dtype, np.floating):
        g, e = got.astype(np.float64), exp.astype(np.float64)
        ok = (np.abs(g - e) <= atol + rtol * np.abs(e)) | (np.isnan(g) & np.isnan(e)) | (np.isinf(e) & (g == e))
        if not ok.all():
            i = int(np.flatnonzero(~ok.reshape(-1))[0])
            return "%s element %d: got %.9g, expected %.9g (rtol %g, atol %g)" % (
                what, i, g.reshape(-1)[i], e.reshape(-1)[i], rtol, atol)
        return None
    if not np.array_equal(got, exp):
        i = int(np.flatnonzero((got != exp).reshape(-1))[0])
        return "%s element %d: got %s, expected %s (exact)" % (what, i, got.reshape(-1)[i], exp.reshape(-1)[i])
    return None
