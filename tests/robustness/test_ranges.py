"""Issue 15, item 1: ranges and scales through scale-sharing operators are right by construction.

A shared scale covers every input it is shared by (a Concat of 0-320 box coordinates with 0-1
scores must not clamp the boxes), on every preset; where an NPU rule needs a member of such a group
at another position, that member gets its own, and the sharing operator reads it through a
requantizer.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from ryzen_nb import get_default_config, quantize
from tests.helpers import run
from tests.robustness.models import cosine, detection_head


def _fidelity(model: onnx.ModelProto, quantized: onnx.ModelProto, data: np.ndarray) -> float:
    name = model.graph.input[0].name
    held = data[-6:]  # scored on samples after the calibration ones
    ref = np.concatenate([run(model, **{name: held[i : i + 1]}) for i in range(len(held))])
    out = np.concatenate([run(quantized, **{name: held[i : i + 1]}) for i in range(len(held))])
    return cosine(ref, out)


@pytest.fixture(scope="module")
def head():
    return detection_head()


def test_detection_head_xint8_defaults_keep_the_boxes(head) -> None:
    """The XINT8 defaults turn Sigmoid into HardSigmoid, whose output position must be >= 7 (a
    range of +-1): moved with the whole Concat group it clamped the boxes (cosine 0.78)."""
    model, data = head
    summary = quantize(model, None, "XINT8", data[:-6], progress=False)
    assert _fidelity(model, summary.model, data) >= 0.99
    boxes = run(summary.model, images=data[-1:])[..., :4]
    assert boxes.max() > 100  # box coordinates survive (they were clamped to ~1)
    assert any("requantizer" in note for note in summary.notes)


@pytest.mark.parametrize("preset", ["XINT8", "A8W8", "A16W8", "U8S8", "S8S8", "INT8_CNN_DEFAULT", "BF16", "BFP16"])
def test_detection_head_on_every_preset(head, preset) -> None:
    model, data = head
    summary = quantize(model, None, preset, data[:-6], progress=False)
    assert _fidelity(model, summary.model, data) >= 0.99


def _concat_input_scales(model: onnx.ModelProto) -> tuple[list[float], float]:
    """Scales of the DequantizeLinear nodes feeding the Concat, and of the quantizer after it."""
    producer = {o: n for n in model.graph.node for o in n.output}
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    concat = next(n for n in model.graph.node if n.op_type == "Concat")
    ins = [float(inits[producer[i].input[1]]) for i in concat.input]
    q = next(n for n in model.graph.node if n.op_type == "QuantizeLinear" and concat.output[0] in n.input)
    return ins, float(inits[q.input[1]])


@pytest.mark.parametrize("preset", ["XINT8", "A8W8", "U8S8"])
def test_concat_inputs_share_the_widest_scale(head, preset) -> None:
    """Every Concat input is read at the output's scale, and that scale covers the boxes (their own
    method may clip a tail: MinMSE picks 2**1 for 0-320, up to 254), not the scores' 0-1."""
    model, data = head
    q = quantize(model, None, preset, data[:-6], progress=False).model
    ins, out = _concat_input_scales(q)
    assert all(s == out for s in ins), (ins, out)
    qmax = 127 if preset != "U8S8" else 255
    assert out * qmax >= 200


def test_group_scale_is_the_widest_member_scale_for_histogram_methods() -> None:
    """Percentile, Entropy and MinMSE on statistics merged over a group let the member with the
    most elements (80 class scores against 4 box coordinates) decide, and Entropy then clipped the
    boxes (cosine 0.970); the group now takes the widest of the members' own ranges."""
    model, data = detection_head(classes=80)
    for method in ("Percentile", "Entropy"):
        qc = get_default_config("A8W8")
        qc.calibrate_method = method
        q = quantize(model, None, qc, data[:-6], progress=False).model
        assert _fidelity(model, q, data) >= 0.99, method
    qc = get_default_config("XINT8")
    qc.extra_options["NPULimitationCheck"] = False  # the MinMSE group choice alone, without the shift rules
    q = quantize(model, None, qc, data[:-6], progress=False).model
    assert _fidelity(model, q, data) >= 0.99


@pytest.mark.parametrize("preset", ["BFP16", "MX6", "MXINT8"])
def test_block_formats_keep_scores_concatenated_after_boxes(preset) -> None:
    """YOLOv8's output joins 4 box rows (0..320) and the class scores (0..1) along the channels, the
    axis BFP16 and MX block along: one block then holds boxes and scores, its shared exponent follows
    the boxes, and every score in it read 0 (NudeNet's YOLOv8n lost a quarter of its detections in
    BFP16 at a cosine of 0.9999). Such an output Concat stays float, and says so."""
    model, data = detection_head(yolov8_output=True)
    summary = quantize(model, None, preset, data[:-6], progress=False)
    ref, out = run(model, images=data[-1:]), run(summary.model, images=data[-1:])
    scores, quantized_scores = ref[:, 4:], out[:, 4:]
    assert np.linalg.norm(quantized_scores - scores) / np.linalg.norm(scores) < 0.05
    assert any("head.concat" in note and "stays float" in note for note in summary.notes)
