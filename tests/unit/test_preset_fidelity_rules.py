"""A rule found by comparing ryzen-nb with AMD Quark 0.13 tensor by tensor on the real-world corpus
(ddddocr_det XINT8), checked here on a small synthetic graph:

* int8 weights of a symmetric scheme are stored in [-127, 127], as Quark stores them: a MinMSE
  power-of-two scale that clips a large negative weight gives it -127, never -128.

And one found the same way on EfficientNet-Lite0 XINT8 (the benchmark's model):

* Flatten's output gets a scale of its own, as in Quark's models (its registries have no rule for
  Flatten): after a GlobalAveragePool, which keeps its input's scale in XINT8, the pooled values
  are much smaller than the feature map's, and calibration gives the Gemm's input a finer scale.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

import ryzen_nb
from ryzen_nb.calibration.methods import constant_code_range, pow2_scale_for_values
from ryzen_nb.formats.integer import IntegerFormat
from ryzen_nb.graph.builder import make_model


def _conv_with_negative_outlier() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = rng.uniform(-0.99, 0.99, (16, 16, 3, 3)).astype(np.float32)
    w[3, 5, 1, 1] = -1.05  # MinMSE keeps the 2^-7 scale of the bulk and clips this one (-134.4 codes)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])],
        "outlier", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 16, 8, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 16, 8, 8])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.zeros(16, np.float32), "b")])
    return make_model(graph, opset=17)


def test_xint8_weight_codes_stay_in_the_symmetric_range() -> None:
    model = _conv_with_negative_outlier()
    int8 = IntegerFormat(8, True)
    w = numpy_helper.to_array(model.graph.initializer[0])
    scale, _ = pow2_scale_for_values(w, int8, "MinMSE")
    assert scale == np.float32(2.0**-7)  # the outlier is clipped: the case where -128 could appear
    data = np.random.default_rng(1).standard_normal((8, 16, 8, 8)).astype(np.float32)
    summary = ryzen_nb.quantize(model, None, "XINT8", data, progress=False)
    inits = {t.name: numpy_helper.to_array(t) for t in summary.model.graph.initializer}
    dq = next(n for n in summary.model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] in inits
              and inits[n.input[0]].ndim == 4)
    codes = inits[dq.input[0]].astype(np.int64)
    assert codes.min() == -127 and codes[3, 5, 1, 1] == -127  # Quark stores -127 here too
    assert codes.max() <= 127


def test_constant_code_range() -> None:
    assert constant_code_range(IntegerFormat(8, True)) == (-127, 127)
    assert constant_code_range(IntegerFormat(8, True), symmetric=False) == (-128, 127)
    assert constant_code_range(IntegerFormat(8, False)) == (0, 255)


def test_flatten_output_gets_a_scale_of_its_own_after_global_average_pool() -> None:
    from ryzen_nb.testing import random_images, resnet_cnn

    model = resnet_cnn(0, blocks=(1, 1), width=8, image_size=16)  # ... Relu -> GlobalAveragePool -> Flatten -> Gemm
    q = ryzen_nb.quantize(model, None, "XINT8", random_images(8, size=16), progress=False).model
    inits = {t.name: numpy_helper.to_array(t) for t in q.graph.initializer}
    producers = {o: n for n in q.graph.node for o in n.output}
    scale_in = {n.op_type: float(inits[producers[n.input[0]].input[1]]) for n in q.graph.node
                if n.op_type in ("GlobalAveragePool", "Flatten")}
    scale_out = {producers[n.input[0]].op_type: float(inits[n.input[1]]) for n in q.graph.node
                 if n.op_type == "QuantizeLinear" and n.input[0] in producers
                 and producers[n.input[0]].op_type in ("GlobalAveragePool", "Flatten")}
    assert scale_out["GlobalAveragePool"] == scale_in["GlobalAveragePool"]  # the NPU's pool keeps its input's scale
    assert scale_in["Flatten"] == scale_out["GlobalAveragePool"]
    assert scale_out["Flatten"] < scale_in["Flatten"]  # calibrated on the pooled values: finer
