"""The facts layer: the precision records cover every precision the partition writes, which targets
run each is derived from the targets alone, the latency model reads the records, and ``facts()`` is
the JSON the front ends receive."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ryzen_nb
from ryzen_nb import npu, testing
from ryzen_nb.errors import UnknownNameError
from ryzen_nb.npu.graph import TensorQuant
from ryzen_nb.npu.latency import _npu_format
from ryzen_nb.npu.partition import node_precision
from ryzen_nb.spec import facts
from ryzen_nb.spec.precisions import DEVICES, PRECISIONS, get_precision
from ryzen_nb.spec.targets import DEFAULT_TARGET, TARGETS


def _q(fmt: str, scale: float = 2.0**-4, zero_point: int = 0, constant: bool = False) -> TensorQuant:
    return TensorQuant(fmt, np.float32(scale), np.array(zero_point), constant=constant)


@pytest.mark.parametrize(("acts", "weights", "expected"), [
    ([_q("uint8", zero_point=128)], [_q("int8", constant=True)], "XINT8"),
    ([_q("int8", scale=0.013)], [_q("int8", scale=0.002, constant=True)], "A8W8"),
    ([_q("int16", scale=0.013)], [_q("int8", scale=0.002, constant=True)], "A16W8"),
    ([_q("bfloat16")], [_q("bfloat16", constant=True)], "BF16"),
    ([_q("BFP16")], [_q("BFP16", constant=True)], "BFP16"),
    ([_q("MXINT8")], [_q("MX6", constant=True)], "MX"),
    ([], [], "FP32"),
    ([_q("int4")], [_q("int8", constant=True)], "INT"),
    ([_q("float16")], [_q("float16", constant=True)], "OTHER"),
])
def test_every_precision_the_partition_writes_has_a_record(acts, weights, expected) -> None:
    precision, _ = node_precision(acts, weights, [])
    assert precision == expected and precision in PRECISIONS


def test_the_targets_of_a_precision_come_from_the_targets() -> None:
    xdna2 = [name for name, t in TARGETS.items() if t.generation == "XDNA2"]
    assert PRECISIONS["XINT8"].targets == tuple(TARGETS)
    for name in ("A8W8", "A16W8", "BF16", "BFP16"):
        assert list(PRECISIONS[name].targets) == xdna2
    # MX and FP32 run where BF16 runs; INT and OTHER nowhere
    assert PRECISIONS["MX"].targets == PRECISIONS["FP32"].targets == PRECISIONS["BF16"].targets
    assert PRECISIONS["INT"].targets == PRECISIONS["OTHER"].targets == ()
    # derived, not stored: a target that gains a precision shows up at once
    phx_bf16 = TARGETS["PHX"].with_options(precisions=("XINT8", "BF16"))
    assert PRECISIONS["BF16"].runs_on(phx_bf16) and not PRECISIONS["BF16"].runs_on(TARGETS["PHX"])
    assert PRECISIONS["MX"].runs_on(phx_bf16)


def test_every_target_precision_has_a_record_and_mac_rate() -> None:
    for target in TARGETS.values():
        for name in target.precisions:
            record = PRECISIONS[name]
            assert record.mac_dtype in target.macs_per_cycle, f"{target.name} has no MAC rate for {name}"
            assert record.act_bytes and record.weight_bytes


def test_records_are_complete_and_distinct() -> None:
    colours = [p.colour for p in PRECISIONS.values()] + [d.colour for d in DEVICES.values()]
    assert len(set(colours)) == len(colours), "two things share a colour"
    for p in PRECISIONS.values():
        assert p.label.startswith(p.name) and p.description.endswith(".") and p.activations and p.weights
        assert p.docs.startswith("docs/") and "#" in p.docs
        assert (p.mac_dtype is None) == (p.name in ("MX", "FP32", "INT", "OTHER"))
        if p.runs_as:
            assert PRECISIONS[p.runs_as].mac_dtype is not None
    assert get_precision("xint8") is PRECISIONS["XINT8"]
    with pytest.raises(UnknownNameError, match="Did you mean 'A8W8'"):
        get_precision("A8W9")


def test_the_latency_model_reads_the_records() -> None:
    assert _npu_format("A16W8").mac_dtype == "int16x8" and _npu_format("A16W8").act_bytes == 2.0
    assert _npu_format("BFP16").weight_bytes == 1.125
    assert _npu_format("MX") is _npu_format("FP32") is _npu_format("") is PRECISIONS["BF16"]
    # A16W8 runs at the int16 x int8 rate of the target (A4): half the int8 rate on Strix
    model = testing.resnet_cnn(0, blocks=(1,), width=8, image_size=16)
    images = testing.random_images(4, size=16)
    costs = {}
    for preset in ("A8W8", "A16W8"):
        q = ryzen_nb.quantize(model, None, preset, images, progress=False).model
        est = npu.estimate_latency(q, "STX")
        costs[preset] = est.per_op.loc[est.per_op.op == "Conv", "compute_us"].sum()
    assert costs["A16W8"] == pytest.approx(2 * costs["A8W8"], rel=1e-6)


def test_facts_are_json_and_complete() -> None:
    data = facts()
    assert json.loads(json.dumps(data)) == data
    assert [p["name"] for p in data["precisions"]] == list(PRECISIONS)
    assert [t["name"] for t in data["targets"]] == list(TARGETS) and data["default_target"] == DEFAULT_TARGET
    stx = next(t for t in data["targets"] if t["name"] == "STX")
    assert stx["tiles"] == 32 and stx["macs_per_cycle"]["int8"] == 512 and stx["compilers"]["BF16"] == "VAIML"
    assert data["operators"]["supported"]["Softmax"] == ["A16W8", "A8W8", "XINT8"]
    assert "Conv" in data["operators"]["mac_ops"] and data["dpu"]["max_multiplier"] == 2**23 - 1
    assert data["dpu"]["shift_limits"]["shift_cut"] == [0, 16]
