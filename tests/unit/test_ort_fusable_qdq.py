"""Quantized models that onnxruntime can fuse (``extra_options["ORTFusableQDQ"]``): with FoldRelu, an
A8W8 convolution followed by a Relu gets the Relu's own quantizer before the Relu too
(quantization/emit.py, _ort_fusable_folds). The values are those of the model without it, bit for
bit; onnxruntime then runs the convolution as its integer kernel instead of a float convolution over
weights dequantized on every run. Off by default: those kernels saturate on x86 CPUs without VNNI."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from ryzen_nb import npu
from ryzen_nb.graph.prepare import ort_session
from ryzen_nb.quantization.run import QuantizationRun
from ryzen_nb.testing import random_images, resnet_cnn


def _optimized_ops(model: onnx.ModelProto, tmp_path) -> Counter:
    """The operators onnxruntime runs after its graph optimizations (QDQ fusion on, as deployed)."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return Counter(n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node)


def _both(preset: str):
    run = QuantizationRun.prepare(resnet_cnn(seed=0), preset, random_images(8), progress=False)
    run.start()
    assert not run.settings.ort_fusable_folds  # off unless asked
    plain = run.emit()
    run.settings.ort_fusable_folds = True
    fusable = run.emit()
    return fusable, plain


def test_a8w8_relu_convolutions_become_integer_kernels_with_the_same_values(tmp_path) -> None:
    fusable, plain = _both("A8W8")
    relu_inputs = Counter(next(p.op_type for p in fusable.graph.node if n.input[0] in p.output)
                          for n in fusable.graph.node if n.op_type == "Relu")
    plain_producers = Counter(next(p.op_type for p in plain.graph.node if n.input[0] in p.output)
                              for n in plain.graph.node if n.op_type == "Relu")
    # the 9 Conv -> Relu and the 8 residual Add -> Relu of the CNN now read a quantizer
    assert plain_producers == {"Conv": 9, "Add": 8}
    assert relu_inputs == {"DequantizeLinear": 17}
    for x in random_images(4, seed=7):
        feed = {"input": x[None]}
        np.testing.assert_array_equal(ort_session(fusable).run(None, feed)[0], ort_session(plain).run(None, feed)[0])
    fused, unfused = _optimized_ops(fusable, tmp_path), _optimized_ops(plain, tmp_path)
    # without the pair every Conv -> Relu runs as a float FusedConv; with it onnxruntime fuses what its own
    # quantizer's S8S8 model gets fused (a convolution whose input also feeds a residual stays float in both)
    assert unfused["FusedConv"] == 9 and fused["FusedConv"] == 0
    assert fused["QLinearConv"] > unfused["QLinearConv"]
    # the residual Adds likewise (those whose inputs fuse: 3 of 8 here, as before the Add -> Relu fold)
    assert fused["QLinearAdd"] > unfused["QLinearAdd"] == 0
    # the NPU still fuses the Relu into its convolution: nothing moves to the CPU
    assert npu.compile(fusable, "STX").cpu_operators == npu.compile(plain, "STX").cpu_operators


@pytest.mark.parametrize("preset", ["XINT8", "A16W8"])
def test_presets_onnxruntime_cannot_fuse_are_left_as_they_are(preset: str) -> None:
    """XINT8 biases are int8 (its kernels take int32 only), A16W8 activations 16-bit: no extra nodes."""
    fusable, plain = _both(preset)
    assert len(fusable.graph.node) == len(plain.graph.node)


def test_the_option_switches_it_on() -> None:
    import ryzen_nb

    qc = ryzen_nb.get_default_config("A8W8")
    plain = ryzen_nb.quantize(resnet_cnn(seed=0), None, qc, random_images(4), progress=False).model
    qc.extra_options["ORTFusableQDQ"] = True
    fusable = ryzen_nb.quantize(resnet_cnn(seed=0), None, qc, random_images(4), progress=False).model
    assert len(fusable.graph.node) == len(plain.graph.node) + 2 * 17  # a Q/DQ pair before each of the 17 Relus
