"""The latency model (an estimate, docs/npu-latency.md) and the ``ryzen-nb emulate`` command."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ryzen_nb
from ryzen_nb import npu
from ryzen_nb.cli import main
from ryzen_nb.npu.latency import LatencyAssumptions
from ryzen_nb.testing import random_images, resnet_cnn

#: Ryzen AI 1.6/1.7 on Strix: ResNet50 XINT8 runs in 3.6-3.8 ms per inference (the calibration anchor)
RESNET50_STX_MS = 3.7


@pytest.fixture(scope="module")
def resnet50_xint8():
    model = resnet_cnn(0, bottleneck=True, blocks=(3, 4, 6, 3), width=64, image_size=224, stem_stride=2,
                       num_classes=1000)  # the architecture; weights do not matter for timing
    return ryzen_nb.quantize(model, None, "XINT8", random_images(2, size=224), progress=False).model


@pytest.mark.slow
def test_resnet50_xint8_on_strix_matches_the_published_latency(resnet50_xint8) -> None:
    est = npu.estimate_latency(resnet50_xint8, "STX")
    ratio = est.total_ms / RESNET50_STX_MS
    assert 0.5 <= ratio <= 2.0, est.summary()
    assert est.per_op.macs.sum() / 1e9 == pytest.approx(4.09, abs=0.05)  # ResNet50: ~4.1 GMAC
    assert len(est.per_partition) == 1 + 1  # one NPU subgraph + the CPU-side input/output conversions
    # the same model on Phoenix (X1, 16 tiles at 1.024 GHz) is compute-bound and slower
    phx = npu.estimate_latency(resnet50_xint8, "PHX")
    assert phx.total_ms > est.total_ms and phx.breakdown_ms["NPU compute"] > 5 * est.breakdown_ms["NPU compute"]
    # without the fitted host term, the array itself: the 0.8-1.3 ms of docs/npu-latency.md#sanity-check
    bare = npu.estimate_latency(resnet50_xint8, "STX", assumptions=LatencyAssumptions(host_ms=0.0))
    assert 0.8 <= bare.total_ms <= 1.3


def test_estimate_structure_and_assumptions() -> None:
    q = ryzen_nb.quantize(resnet_cnn(0), None, "XINT8", random_images(8), progress=False).model
    program = npu.compile(q, "STX")
    est = npu.estimate_latency(program)
    assert est.total_ms == pytest.approx(sum(est.breakdown_ms.values()))
    assert len(est.per_op) == len(q.graph.node)
    assert {"node", "op", "device", "precision", "macs", "ddr_bytes", "compute_us", "memory_us", "time_us",
            "bound"} <= set(est.per_op.columns)
    assert est.breakdown_ms["dispatch"] == pytest.approx(len(program.subgraphs) * 84.2e-3)
    assert "estimate" in repr(est) and "not a measurement" in est.summary()
    faster = npu.estimate_latency(program, assumptions=LatencyAssumptions(mac_efficiency=0.7, pipelined_dispatch=True))
    assert faster.breakdown_ms["NPU compute"] < est.breakdown_ms["NPU compute"]
    assert faster.breakdown_ms["dispatch"] == pytest.approx(17e-3 * len(program.subgraphs))
    # bf16 MACs run at half the int8 rate on XDNA2
    fp32 = resnet_cnn(0)
    bf16 = npu.estimate_latency(fp32, "STX", assumptions=LatencyAssumptions(host_ms=0))
    int8 = npu.estimate_latency(q, "STX", assumptions=LatencyAssumptions(host_ms=0))
    assert bf16.per_op.loc[bf16.per_op.op == "Conv", "compute_us"].sum() == pytest.approx(
        2 * int8.per_op.loc[int8.per_op.op == "Conv", "compute_us"].sum(), rel=1e-6)
    # an FP32 model on Phoenix stays on the CPU: no dispatch, CPU operator time instead
    cpu_only = npu.estimate_latency(fp32, "PHX")
    assert cpu_only.breakdown_ms["dispatch"] == 0 and cpu_only.breakdown_ms["CPU operators"] > 0


def test_emulate_command(tmp_path, capsys) -> None:
    q = ryzen_nb.quantize(resnet_cnn(0, blocks=(1,), width=8, image_size=16), tmp_path / "model.onnx", "XINT8",
                          random_images(8, size=16), progress=False)
    assert q.output_path is not None
    data = tmp_path / "data"
    data.mkdir()
    for i, x in enumerate(random_images(3, size=16, seed=4)):
        np.save(data / f"{i}.npy", x[None])
    report = tmp_path / "vitisai_ep_report.json"
    assert main(["emulate", str(tmp_path / "model.onnx"), "--target", "PHX", "--report", str(report),
                 "--per-op", "3", "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert "[Vitis AI EP] No. of Operators" in out and "NPU subgraphs" in out
    assert "Estimated latency on Phoenix" in out and "host (per run)" in out
    assert "NPU emulation (PHX) vs CPU QDQ simulation on 3 sample(s)" in out
    assert json.loads(report.read_text())["deviceStat"][0]["name"] == "all"
    assert main(["emulate", str(tmp_path / "model.onnx"), "--target", "XYZ"]) == 2
    assert "NPU target" in capsys.readouterr().err
