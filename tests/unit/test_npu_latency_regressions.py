"""Regressions found while writing notebook 8 (Inside the NPU emulator)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ryzen_nb
from ryzen_nb import npu
from ryzen_nb.graph.builder import make_model
from ryzen_nb.npu.latency import LatencyAssumptions


def _big_conv():
    """One 3x3 convolution with 2.4 M weights (4.7 MB in bf16: more than Strix's 4 MB of memory tiles)."""
    w = (np.random.default_rng(0).standard_normal((512, 512, 3, 3)) * 0.02).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])], "big_conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 512, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512, 4, 4])],
        initializer=[numpy_helper.from_array(w, "w")])
    return make_model(graph, opset=17)


def test_a_dequantized_weight_is_not_an_activation_in_the_latency_model() -> None:
    # The FP32 model and its BF16 QDQ form compile to the same BF16 convolution on Strix. The QDQ
    # form reads its weight through a quantizer, whose output is not an initializer: the estimate
    # counted that weight as an activation too, so the layer "spilled" to DDR and cost twice the
    # traffic (ResNet18's layer4 estimated 0.44 ms slower in BF16 QDQ form than as FP32).
    fp32 = _big_conv()
    bf16 = ryzen_nb.quantize(fp32, None, "BF16", None, progress=False).model
    bare = LatencyAssumptions(host_ms=0.0)
    a = npu.estimate_latency(fp32, "STX", assumptions=bare)
    b = npu.estimate_latency(bf16, "STX", assumptions=bare)
    conv_a = a.per_op.set_index("node").loc["conv"]
    conv_b = b.per_op.set_index("node").loc["conv"]
    assert conv_a.precision == conv_b.precision == "BF16"
    assert conv_b.ddr_bytes == conv_a.ddr_bytes == 512 * 512 * 9 * 2  # the weight, streamed once; no spill
    assert b.breakdown_ms["NPU memory (DDR)"] == pytest.approx(a.breakdown_ms["NPU memory (DDR)"], rel=1e-9)
