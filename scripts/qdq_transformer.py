#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Quantized recognizers of the PP-OCRv4 kind in ONNX Runtime's QDQ layout (issue 29 point 6).

    PYTHONPATH=build/python /usr/bin/python3 scripts/qdq_transformer.py OUT_DIR [SIZE...]

writes OUT_DIR/<size>/model.onnx and test_data_set_0/input_0.pb for each size (default: all):
convolutions, a sequence of T steps, two attention blocks (LayerNormalization, Q/K/V
projections with a bias Add, activation x activation MatMuls for the scores and the context,
Softmax, residual Adds, a two-layer FFN), a 3x3 Conv with K = 2880 (320 input channels), a
classifier MatMul and a Softmax over the classes. Layout as ONNX Runtime's static quantizer
writes it (QDQ format): per-tensor int8 activations (QuantizeLinear -> DequantizeLinear pairs on
every tensor), per-channel symmetric int8 weights in [-127, 127] ([-63, 63] for the "-r7" sizes),
int32 Conv biases with scale x_scale * w_scale, LayerNormalization's gamma as a symmetric int8
weight and its beta as an int32 bias, the other constants symmetric int8 per tensor (quantize()).

The float model's activation ranges (the calibration) come from npukit's CPU reference (the
npukit Python package): every intermediate tensor is made a graph output of the float model and
its min/max over the input set the scale and zero point. Weights and inputs are pseudo-random
from a fixed seed: the files are the same on every run.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Weights: ONNX Runtime's static quantizer's int8 symmetric range, [-127, 127] (full range, as its
# default per-channel quantization writes them). The "-r7" sizes use 7 bits (|w| <= 63, ONNX
# Runtime's reduce_range): its x86 u8s8 kernels without VNNI add pairs of uint8 x int8 products in
# saturating int16 (vpmaddubsw), exact on every host only when 2 * 255 * 63 < 2^15. With full-range
# weights ONNX Runtime's own integer result depends on the host's instruction set (docs/onnx.md).
WMAX = 127
WMAX_REDUCED = 63

SIZES = {
    # name: (T sequence steps, C first conv channels, D model width, heads, FFN width, classes)
    "tiny": (8, 16, 32, 2, 64, 40),
    "small": (16, 32, 64, 4, 128, 97),
    "ppocr": (40, 32, 120, 8, 240, 97),  # PP-OCRv4's SVTR neck: width 120, 8 heads
    # tiny with the attention Softmax's input and output also read elsewhere (a ReduceMax to an extra
    # output each): ONNX Runtime then keeps those pairs int8 and runs an int8 QLinearSoftmax
    "tiny-shared": (8, 16, 32, 2, 64, 40),
}
# the same with 7-bit weights (reduce_range)
SIZES.update({name + "-r7": dims for name, dims in list(SIZES.items())})


def weight_max(size):
    return WMAX_REDUCED if size.endswith("-r7") else WMAX


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0
        self.float_tensors = []  # tensors that get a QuantizeLinear -> DequantizeLinear pair

    def name(self, base):
        self.n += 1
        return "%s_%d" % (base, self.n)

    def const(self, base, arr):
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def node(self, op, ins, base=None, **attrs):
        out = self.name(base or op.lower())
        self.nodes.append(helper.make_node(op, ins, [out], name=out + "_node", **attrs))
        return out

    def act(self, t):
        """t is an activation ONNX Runtime's quantizer puts a Q -> DQ pair on."""
        self.float_tensors.append(t)
        return t

    def weight(self, shape, fan_in):
        return (self.rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


def float_model(size, seed=1):
    T, C, D, H, F, K = SIZES[size]
    shared = "-shared" in size  # tiny-shared, tiny-shared-r7
    extra = []  # (name, shape) of the extra outputs
    b = Builder(seed)
    x = "x"
    b.float_tensors.append(x)

    def conv(inp, cin, cout, kh, kw, stride=(1, 1), pads=(0, 0, 0, 0)):
        w = b.const("w", b.weight((cout, cin, kh, kw), cin * kh * kw))
        bias = b.const("b", (b.rng.standard_normal(cout) * 0.1).astype(np.float32))
        return b.act(b.node("Conv", [inp, w, bias], "conv", kernel_shape=[kh, kw], strides=list(stride), pads=list(pads)))

    def matmul_bias(inp, din, dout):
        w = b.const("w", b.weight((din, dout), din))
        y = b.act(b.node("MatMul", [inp, w], "mm"))
        bias = b.const("b", (b.rng.standard_normal(dout) * 0.1).astype(np.float32))
        return b.act(b.node("Add", [y, bias], "add"))

    def layer_norm(inp):
        g = b.const("ln_g", (1 + 0.1 * b.rng.standard_normal(D)).astype(np.float32))
        be = b.const("ln_b", (0.1 * b.rng.standard_normal(D)).astype(np.float32))
        return b.act(b.node("LayerNormalization", [inp, g, be], "ln", axis=-1, epsilon=1e-5))

    # convolutional stem: [1,3,4,2T] -> [1,C,2,T] -> [1,D,1,T]
    h = conv(x, 3, C, 3, 3, (2, 2), (1, 1, 1, 1))
    h = b.act(b.node("HardSwish", [h], "hswish"))
    h = conv(h, C, D, 2, 1)
    h = b.act(b.node("Reshape", [h, b.const("shape", np.array([1, D, T], np.int64))], "reshape"))
    h = b.act(b.node("Transpose", [h], "transpose", perm=[0, 2, 1]))  # [1,T,D]
    dh = D // H
    for _ in range(2):
        y = layer_norm(h)
        heads = []
        for _p in range(3):
            p = matmul_bias(y, D, D)
            p = b.act(b.node("Reshape", [p, b.const("shape", np.array([1, T, H, dh], np.int64))], "reshape"))
            heads.append(b.act(b.node("Transpose", [p], "transpose", perm=[0, 2, 1, 3])))  # [1,H,T,dh]
        q, k, v = heads
        kt = b.act(b.node("Transpose", [k], "transpose", perm=[0, 1, 3, 2]))  # [1,H,dh,T]
        s = b.act(b.node("MatMul", [q, kt], "scores"))  # activation x activation
        s = b.act(b.node("Mul", [s, b.const("scale", np.array(1 / np.sqrt(dh), np.float32))], "mul"))
        a = b.act(b.node("Softmax", [s], "softmax", axis=-1))
        if shared:
            for t in (s, a):
                extra.append((b.node("ReduceMax", [t], "rmax", axes=[-1], keepdims=0), [1, H, T]))
        c = b.act(b.node("MatMul", [a, v], "context"))  # activation x activation
        c = b.act(b.node("Transpose", [c], "transpose", perm=[0, 2, 1, 3]))
        c = b.act(b.node("Reshape", [c, b.const("shape", np.array([1, T, D], np.int64))], "reshape"))
        c = matmul_bias(c, D, D)
        h = b.act(b.node("Add", [h, c], "residual"))
        y = layer_norm(h)
        f = matmul_bias(y, D, F)
        f = b.act(b.node("HardSwish", [f], "hswish"))
        f = matmul_bias(f, F, D)
        h = b.act(b.node("Add", [h, f], "residual"))
    h = b.act(b.node("Transpose", [h], "transpose", perm=[0, 2, 1]))  # [1,D,T]
    h = b.act(b.node("Reshape", [h, b.const("shape", np.array([1, D, 1, T], np.int64))], "reshape"))
    h = conv(h, D, 320, 1, 1)
    h = b.act(b.node("HardSwish", [h], "hswish"))
    h = conv(h, 320, D, 3, 3, pads=(1, 1, 1, 1))  # K = 320 * 3 * 3 = 2880
    h = b.act(b.node("HardSwish", [h], "hswish"))
    h = b.act(b.node("Reshape", [h, b.const("shape", np.array([1, D, T], np.int64))], "reshape"))
    h = b.act(b.node("Transpose", [h], "transpose", perm=[0, 2, 1]))  # [1,T,D]
    h = matmul_bias(h, D, K)
    out = b.node("Softmax", [h], "probs", axis=-1)
    # outputs: the probabilities (float Softmax, as PP-OCR's recognizer) and the logits before it
    # (the dequantized int8 logits: integer arithmetic all the way, compared bit for bit)
    graph = helper.make_graph(b.nodes, "qdq_transformer_" + size,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 2 * T])],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, T, K]),
                               helper.make_tensor_value_info(h, TensorProto.FLOAT, [1, T, K])] +
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, sh) for n, sh in extra], b.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m, b.float_tensors, out


def calibrate(model, tensors, x):
    """min/max of every tensor in `tensors` over input x, from npukit's CPU reference."""
    import npukit
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for t in tensors:
        if t not in have:
            m.graph.output.append(helper.make_empty_tensor_value_info(t))
    sess = npukit.InferenceSession(m.SerializeToString())
    names = [o.name for o in sess.get_outputs()]
    vals = dict(zip(names, sess.run(None, {"x": x})))
    vals["x"] = x
    return {t: (float(min(vals[t].min(), 0)), float(max(vals[t].max(), 0))) for t in tensors}


def qparams(lo, hi):
    """int8 scale and zero point of ONNX Runtime's MinMax calibrator (asymmetric, range incl. 0)."""
    scale = np.float32((hi - lo) / 255.0) if hi > lo else np.float32(1.0)
    zp = int(np.clip(np.round(-128 - lo / scale), -128, 127))
    return scale, zp


def quantize(model, ranges, wmax=WMAX):
    """The QDQ model as ONNX Runtime's static quantizer (QDQ format, int8 activations and weights)
    writes it: a Q -> DQ pair on every calibrated activation (per tensor, asymmetric); Conv and
    MatMul weights per output channel, symmetric in [-wmax, wmax] (Conv axis 0, MatMul axis 1);
    a Conv bias as int32 with scale x_scale * w_scale; the other constants an operator reads (the
    bias Adds, the attention's scale Mul, LayerNormalization's gamma) per tensor, symmetric int8,
    and LayerNormalization's beta as an int32 bias with scale x_scale * gamma_scale."""
    g = model.graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    new_inits, nodes = [], []
    qp = {t: qparams(*r) for t, r in ranges.items()}

    def c(name, arr):
        new_inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def dq_act(t):
        """The DequantizeLinear output that consumers of activation t read."""
        return t + "_dq" if t in qp else t

    def dq_const(name, q, scale, zp, axis=None):
        """DequantizeLinear of a quantized constant: its output's name."""
        c(name + "_q", q)
        c(name + "_s", scale)
        c(name + "_z", zp)
        attrs = {"axis": axis} if axis is not None else {}
        nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_s", name + "_z"], [name + "_dq"],
                                      name=name + "_DQ", **attrs))
        return name + "_dq"

    def sym_tensor(name):
        """A constant per tensor, symmetric int8 (ONNX Runtime's weight quantization)."""
        v = inits[name]
        s = np.float32(np.abs(v).max() / wmax) if np.abs(v).max() > 0 else np.float32(1)
        return dq_const(name, np.clip(np.round(v / s), -wmax, wmax).astype(np.int8), s, np.int8(0)), s

    def bias32(name, scale):
        v = inits[name]
        scale = np.asarray(scale, np.float32)
        return dq_const(name, np.round(v / scale).astype(np.int32), scale,
                        np.zeros(scale.shape, np.int32), 0 if scale.ndim else None)

    for t, (s, z) in qp.items():
        if t == "x":
            nodes.append(helper.make_node("QuantizeLinear", [t, c(t + "_s", s), c(t + "_z", np.int8(z))], [t + "_q"],
                                          name=t + "_Q"))
            nodes.append(helper.make_node("DequantizeLinear", [t + "_q", t + "_s", t + "_z"], [t + "_dq"], name=t + "_DQ"))
    for n in g.node:
        ins = list(n.input)
        if n.op_type in ("Conv", "MatMul") and ins[1] in inits:
            w = inits[ins[1]]
            axis = 0 if n.op_type == "Conv" else 1
            red = tuple(i for i in range(w.ndim) if i != axis)
            ws = (np.abs(w).max(axis=red) / wmax).astype(np.float32)
            ws[ws == 0] = 1
            shp = [1] * w.ndim
            shp[axis] = -1
            wq = np.clip(np.round(w / ws.reshape(shp)), -wmax, wmax).astype(np.int8)
            new_ins = [dq_act(ins[0]), dq_const(ins[1], wq, ws, np.zeros(ws.shape, np.int8), axis)]
            if n.op_type == "Conv" and len(ins) > 2:
                new_ins.append(bias32(ins[2], np.float32(qp[ins[0]][0]) * ws))
            ins = new_ins
        elif n.op_type == "LayerNormalization":
            gamma, gs = sym_tensor(ins[1])
            ins = [dq_act(ins[0]), gamma, bias32(ins[2], np.float32(qp[ins[0]][0]) * gs)]
        elif n.op_type in ("Add", "Mul") and ins[1] in inits:
            ins = [dq_act(ins[0]), sym_tensor(ins[1])[0]]
        else:
            ins = [dq_act(i) if i in qp else i for i in ins]
            for i, t in enumerate(ins):
                if t in inits and t not in [x.name for x in new_inits]:
                    c(t, inits[t])
        nn = helper.make_node(n.op_type, ins, list(n.output), name=n.name)
        nn.attribute.extend(n.attribute)
        nodes.append(nn)
        for o in n.output:
            if o in qp:
                s, z = qp[o]
                nodes.append(helper.make_node("QuantizeLinear", [o, c(o + "_s", s), c(o + "_z", np.int8(z))], [o + "_q"],
                                              name=o + "_Q"))
                nodes.append(helper.make_node("DequantizeLinear", [o + "_q", o + "_s", o + "_z"], [o + "_dq"],
                                              name=o + "_DQ"))
    # constants the float graph used as-is (shapes)
    used = {i for nd in nodes for i in nd.input}
    have = {t.name for t in new_inits}
    for name, arr in inits.items():
        if name in used and name not in have:
            c(name, arr)
    outs = []
    for o in g.output:  # a quantized activation leaves the graph through its DequantizeLinear
        outs.append(helper.make_tensor_value_info(dq_act(o.name), TensorProto.FLOAT,
                                                  [d.dim_value for d in o.type.tensor_type.shape.dim]))
    graph = helper.make_graph(nodes, g.name + "_qdq", list(g.input), outs, new_inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    out_dir, sizes = argv[1], argv[2:] or list(SIZES)
    for size in sizes:
        if size not in SIZES:
            print("unknown size '%s' (sizes: %s)" % (size, ", ".join(SIZES)), file=sys.stderr)
            return 2
        T = SIZES[size][0]
        fm, tensors, _ = float_model(size)
        rng = np.random.default_rng(7)
        x = rng.uniform(-1, 1, (1, 3, 4, 2 * T)).astype(np.float32)
        qm = quantize(fm, calibrate(fm, tensors, x), weight_max(size))
        d = os.path.join(out_dir, size)
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        onnx.save(qm, os.path.join(d, "model.onnx"))
        xt = numpy_helper.from_array(x, "x")
        with open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb") as f:
            f.write(xt.SerializeToString())
        print("%s: %d nodes" % (d, len(qm.graph.node)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
