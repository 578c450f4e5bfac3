"""Issue 15, item 2: int32 biases never saturate silently.

With bias scale = s_input * s_weight, tiny weight scales (a dead channel, int16 weights) push the
bias past int32; the weight scale of such a layer is raised until its bias fits, and a warning
names the layer.
"""

from __future__ import annotations

import logging

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from ryzen_nb import get_default_config, quantize
from ryzen_nb.zoo import ZooError
from tests.helpers import run
from tests.robustness.models import cosine, dead_channel_conv

INT32_MAX = 2**31 - 1


def _bias_codes(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer if t.data_type == onnx.TensorProto.INT32}


def _fidelity(model, quantized, data) -> float:
    ref = np.concatenate([run(model, x=data[i : i + 1]) for i in range(4)])
    out = np.concatenate([run(quantized, x=data[i : i + 1]) for i in range(4)])
    return cosine(ref, out)


def _per_channel_a8w8():
    qc = get_default_config("A8W8")
    qc.per_channel = True
    return qc


@pytest.mark.parametrize("config", ["A16W8", "INT16_CNN_DEFAULT", "A8W8 per-channel"])
def test_int32_bias_fits_and_the_layers_are_named(config, caplog) -> None:
    model, data = dead_channel_conv()
    qc = _per_channel_a8w8() if config == "A8W8 per-channel" else config
    with caplog.at_level(logging.WARNING):
        summary = quantize(model, None, qc, data, progress=False)
    for name, codes in _bias_codes(summary.model).items():
        assert np.abs(codes.astype(np.int64)).max() < INT32_MAX, f"{name} saturates"
    assert _fidelity(model, summary.model, data) >= 0.99
    # per tensor, the layer of tiny weights overflows; per channel, the layer with a dead channel
    layer = "conv2" if config == "A8W8 per-channel" else "conv3"
    warning = next(n for n in summary.notes if "int32 bias would saturate" in n)
    assert layer in warning
    assert layer in caplog.text


def test_efficientnet_lite0_int16_cnn_default() -> None:
    """INT16_CNN_DEFAULT (int16 weights: tiny weight scales) on EfficientNet-Lite0: before the remedy,
    eight layers' biases saturated and the outputs had cosine 0.16 to FP32."""
    from ryzen_nb import zoo

    try:
        model = zoo.load_model("efficientnet_lite0")
        calibration = zoo.load_dataset("imagenet_samples", split="calibration")
        evaluation = zoo.load_dataset("imagenet_samples", split="evaluation")
    except ZooError as exc:  # no package index: the model cannot be built here
        pytest.skip(str(exc))
    feeds = [model.preprocess(s) for s in calibration.samples[:4]]
    summary = quantize(model.path, None, "INT16_CNN_DEFAULT", feeds, progress=False)
    reference = onnx.load(str(model.path))
    scores = []
    for sample in evaluation.samples[:3]:
        feed = model.preprocess(sample)
        scores.append(cosine(run(reference, **feed), run(summary.model, **feed)))
    assert min(scores) >= 0.99, scores
    assert any("int32 bias would saturate" in n for n in summary.notes)
