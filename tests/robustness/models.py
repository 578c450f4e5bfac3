"""Small ONNX models that reproduce what users bring from the wild (issue 15), built with onnx.helper.

Each builder returns ``(model, data)``: a seeded model and calibration samples for it.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["detection_head", "dead_channel_conv", "crnn_like", "vad_like", "conv_net", "cosine"]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


class _G:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def w(self, name: str, value) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def conv(self, x: str, cin: int, cout: int, name: str, k: int = 3, stride: int = 1, bias: bool = True,
             scale: float | None = None) -> str:
        std = scale if scale is not None else np.sqrt(2.0 / (cin * k * k))
        inputs = [x, self.w(f"{name}.weight", (self.rng.standard_normal((cout, cin, k, k)) * std).astype(np.float32))]
        if bias:
            inputs.append(self.w(f"{name}.bias", self.rng.normal(0, 0.1, cout).astype(np.float32)))
        self.nodes.append(helper.make_node("Conv", inputs, [f"{name}_out"], name=name, kernel_shape=[k, k],
                                           pads=[k // 2] * 4, strides=[stride, stride]))
        return f"{name}_out"

    def op(self, op: str, inputs: list[str], name: str, outputs: int = 1, **attrs) -> str:
        outs = [f"{name}_out"] if outputs == 1 else [f"{name}_out{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    def model(self, inputs, outputs, opset: int = 17, ir: int = 8) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "g", inputs, outputs, initializer=self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = ir
        return m


def detection_head(seed: int = 0, size: int = 16, classes: int = 8, yolov8_output: bool = False):
    """A detector's head: box coordinates decoded to 0..320 pixels (Sigmoid x 320) concatenated with
    class scores (Sigmoid: HardSigmoid under XINT8's DPU rewrite) into one output [1, HW, 4 + C];
    ``yolov8_output``: the Concat itself is the output, [1, 4 + C, HW], as Ultralytics exports it."""
    g = _G(seed)
    x = g.op("Relu", [g.conv("images", 3, 16, "backbone.conv1", stride=2)], "backbone.relu1")
    x = g.op("Relu", [g.conv(x, 16, 16, "backbone.conv2")], "backbone.relu2")
    box = g.op("Sigmoid", [g.conv(x, 16, 4, "head.box")], "head.box_sigmoid")
    box = g.op("Mul", [box, g.w("stride_scale", np.array(320.0, np.float32))], "head.box_decode")
    cls = g.op("Sigmoid", [g.conv(x, 16, classes, "head.cls")], "head.cls_sigmoid")
    hw = (size // 2) ** 2
    if yolov8_output:
        box = g.op("Reshape", [box, g.w("head.box_shape", np.array([1, 4, hw], np.int64))], "head.box_flat")
        cls = g.op("Reshape", [cls, g.w("head.cls_shape", np.array([1, classes, hw], np.int64))], "head.cls_flat")
        cat = g.op("Concat", [box, cls], "head.concat", axis=1)
        model = g.model([helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, size, size])],
                        [helper.make_tensor_value_info(cat, TensorProto.FLOAT, [1, 4 + classes, hw])])
        return model, g.rng.random((24, 3, size, size)).astype(np.float32)
    cat = g.op("Concat", [box, cls], "head.concat", axis=1)
    flat = g.op("Reshape", [cat, g.w("head.shape", np.array([1, 4 + classes, hw], np.int64))], "head.reshape")
    g.op("Transpose", [flat], "head.transpose", perm=[0, 2, 1])
    model = g.model([helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, size, size])],
                    [helper.make_tensor_value_info("head.transpose_out", TensorProto.FLOAT, [1, hw, 4 + classes])])
    data = g.rng.random((24, 3, size, size)).astype(np.float32)
    return model, data


def dead_channel_conv(seed: int = 0, size: int = 8):
    """Conv layers whose bias is large against tiny weights (a pruned, "dead" channel in the second
    layer, and a whole layer of near-zero weights): with bias scale = s_in * s_w the int32 bias
    overflows."""
    g = _G(seed)
    x = g.op("Relu", [g.conv("x", 3, 8, "conv1")], "relu1")
    y = g.conv(x, 8, 8, "conv2")
    w = next(t for t in g.inits if t.name == "conv2.weight")
    values = numpy_helper.to_array(w).copy()
    values[3] = 1e-9  # a dead channel: per-channel weight scale ~1e-11
    w.CopyFrom(numpy_helper.from_array(values, w.name))
    b = next(t for t in g.inits if t.name == "conv2.bias")
    b.CopyFrom(numpy_helper.from_array(np.linspace(-2, 2, 8).astype(np.float32), b.name))
    y = g.op("Relu", [y], "relu2")
    z = g.conv(y, 8, 4, "conv3", scale=1e-7)  # every weight tiny, the bias of order 1
    out = g.op("Concat", [y, z], "outputs", axis=1)
    model = g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                    [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 12, size, size])])
    return model, g.rng.random((16, 3, size, size)).astype(np.float32)


def conv_net(seed: int = 0, size: int = 8, batch: int | str = 1, opset: int = 17, ir: int = 8):
    """Conv + BN + Relu + Conv + GlobalAveragePool + Flatten + Gemm, input [batch, 3, size, size]."""
    g = _G(seed)
    x = g.conv("x", 3, 8, "conv1", bias=False)
    gamma, beta, mean, var = (g.w(f"bn1.{k}", v.astype(np.float32)) for k, v in (
        ("scale", g.rng.uniform(0.5, 1.5, 8)), ("bias", g.rng.normal(0, 0.1, 8)), ("mean", g.rng.normal(0, 0.1, 8)),
        ("var", g.rng.uniform(0.5, 1.5, 8))))
    x = g.op("BatchNormalization", [x, gamma, beta, mean, var], "bn1")
    x = g.op("Relu", [x], "relu1")
    x = g.op("Relu", [g.conv(x, 8, 8, "conv2")], "relu2")
    x = g.op("GlobalAveragePool", [x], "gap")
    x = g.op("Flatten", [x], "flatten")
    y = g.op("Gemm", [x, g.w("fc.weight", (g.rng.standard_normal((5, 8)) * 0.5).astype(np.float32)),
                      g.w("fc.bias", g.rng.normal(0, 0.1, 5).astype(np.float32))], "fc", transB=1)
    model = g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, size, size])],
                    [helper.make_tensor_value_info(y, TensorProto.FLOAT, [batch, 5])], opset=opset, ir=ir)
    return model, g.rng.random((8, 3, size, size)).astype(np.float32)


def crnn_like(seed: int = 0, collide: bool = True):
    """A captcha CRNN as torch 1.x exported it at opset 12: numbered tensor names, Squeeze with an
    axes attribute, Transpose to [time, batch, channels], a Gemm per time step through Reshape, and
    LogSoftmax. With ``collide`` the graph also holds tensors named as a quantizer names its own
    (``<weight>_quantized``, ``scale_1``...), as a model that went through another tool does."""
    g = _G(seed)
    x = g.conv("input", 1, 8, "Conv_0")
    x = g.op("Relu", [x], "Relu_1")
    x = g.op("MaxPool", [x], "MaxPool_2", kernel_shape=[2, 2], strides=[2, 2])  # [1, 8, 8, 24]
    x = g.op("Relu", [g.conv(x, 8, 16, "Conv_3")], "Relu_4")
    x = g.op("MaxPool", [x], "MaxPool_5", kernel_shape=[8, 1], strides=[8, 1])  # [1, 16, 1, 24]
    x = g.op("Squeeze", [x], "Squeeze_6", axes=[2])  # [1, 16, 24]
    x = g.op("Transpose", [x], "Transpose_7", perm=[2, 0, 1])  # [24, 1, 16]
    x = g.op("Reshape", [x, g.w("shape_2d", np.array([24, 16], np.int64))], "Reshape_8")
    x = g.op("Gemm", [x, g.w("fc.weight", (g.rng.standard_normal((11, 16)) * 0.3).astype(np.float32)),
                      g.w("fc.bias", g.rng.normal(0, 0.1, 11).astype(np.float32))], "Gemm_9", transB=1)
    x = g.op("Reshape", [x, g.w("shape_3d", np.array([24, 1, 11], np.int64))], "Reshape_10")
    y = g.op("LogSoftmax", [x], "LogSoftmax_11", axis=2)
    if collide:  # rename tensors to what the quantizer would call its own
        renames = {"Conv_0_out": "Conv_0.weight_quantized", "Relu_1_out": "scale_1", "MaxPool_2_out": "zero_point_2",
                   "Relu_4_out": "Conv_3_out_int8_qdq"}
        for n in g.nodes:
            n.input[:] = [renames.get(i, i) for i in n.input]
            n.output[:] = [renames.get(o, o) for o in n.output]
    model = g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, 16, 48])],
                    [helper.make_tensor_value_info(y, TensorProto.FLOAT, [24, 1, 11])], opset=12, ir=7)
    return model, g.rng.random((8, 1, 16, 48)).astype(np.float32)


def vad_like(seed: int = 0):
    """A voice-activity detector's shape (Silero VAD): a Conv front end, then an If on the sample
    rate input choosing between two branches that read the Conv output from the outer scope — one
    holds a Conv with BatchNorm of its own, the other squeezes the batch away, which type-checks only
    while the batch is unknown (with batch 1 fixed, onnxruntime rejects that never-taken branch) —
    then a Conv and Sigmoid after the If. The batch is dynamic."""
    g = _G(seed)
    x = g.op("Relu", [g.conv("audio", 1, 4, "frontend")], "frontend_relu")
    c = g.conv(x, 4, 4, "pre_if")
    bn = [numpy_helper.from_array(v.astype(np.float32), n) for n, v in (
        ("branch.bn.scale", g.rng.uniform(0.5, 1.5, 4)), ("branch.bn.bias", g.rng.normal(0, 0.1, 4)),
        ("branch.bn.mean", g.rng.normal(0, 0.1, 4)), ("branch.bn.var", g.rng.uniform(0.5, 1.5, 4)))]
    bw = numpy_helper.from_array((g.rng.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32), "branch.conv.weight")
    then_g = helper.make_graph(
        [helper.make_node("Conv", [c, "branch.conv.weight"], ["t_conv"], pads=[1, 1, 1, 1], name="branch.conv"),
         helper.make_node("BatchNormalization", ["t_conv"] + [t.name for t in bn], ["t_bn"], name="branch.bn"),
         helper.make_node("Relu", ["t_bn"], ["t_out"], name="branch.relu")],
        "then", [], [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, None)], initializer=[bw, *bn])
    ew = numpy_helper.from_array((g.rng.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32), "else.conv.weight")
    else_g = helper.make_graph([helper.make_node("Squeeze", [c], ["e_sq"], name="else.squeeze"),
                                helper.make_node("Conv", ["e_sq", "else.conv.weight"], ["e_out"], pads=[1, 1, 1, 1],
                                                 name="else.conv")], "else", [],
                               [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)], initializer=[ew])
    flag = g.op("Equal", ["sr", g.w("rate_16k", np.array(16000, np.int64))], "is_16k")
    y = g.op("If", [flag], "sample_rate_switch", then_branch=then_g, else_branch=else_g)
    z = g.op("Sigmoid", [g.conv(y, 4, 1, "decoder")], "decoder_sigmoid")
    model = g.model([helper.make_tensor_value_info("audio", TensorProto.FLOAT, ["batch", 1, 8, 16]),
                     helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
                    [helper.make_tensor_value_info(z, TensorProto.FLOAT, None)])
    data = [{"audio": g.rng.standard_normal((1, 1, 8, 16)).astype(np.float32), "sr": np.array(16000, np.int64)}
            for _ in range(8)]
    return model, data
