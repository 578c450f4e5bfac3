"""compare() and the comparison dashboard, without a browser: the numbers, the figures, the export."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import ryzen_nb
from ryzen_nb import zoo
from ryzen_nb.errors import CalibrationDataError, ConfigError
from ryzen_nb.evaluation import compare
from ryzen_nb.evaluation.report import comparison_figures, display_table, latency_notes, log_axis
from ryzen_nb.testing import bert_encoder, random_tokens
from ryzen_nb.ui.comparison_dashboard import ComparisonDashboard


@pytest.fixture(scope="module")
def digits():
    """The shipped digits model, quantized on the calibration split, compared on the evaluation split."""
    model = zoo.load_model("resnet_digits")
    calibration = [model.preprocess(s) for s in zoo.load_dataset("digits", "calibration").samples]
    xint8 = ryzen_nb.quantize(model.path, None, "XINT8", calibration, progress=False)
    bf16 = ryzen_nb.quantize(model.path, None, "BF16", calibration, progress=False)
    result = compare(model, {"XINT8": xint8, "BF16": bf16}, zoo.load_dataset("digits", "evaluation"),
                     latency_runs=5, progress=False)
    return model, result


def test_comparison_table(digits) -> None:
    _, c = digits
    t = c.table
    assert list(t.index) == ["FP32", "XINT8", "BF16"] and c.samples == 359 and c.labels_given
    assert t.loc["FP32", "top1"] > 0.98 and abs(t.loc["XINT8", "top1"] - t.loc["FP32", "top1"]) <= 0.02
    assert t.loc["BF16", "cosine"] > t.loc["XINT8", "cosine"] > 0.99  # bf16 is the closer of the two
    assert np.isnan(t.loc["FP32", "cosine"])  # no fidelity of the reference against itself
    assert t.loc["XINT8", "size_mb"] < 0.5 * t.loc["FP32", "size_mb"]
    assert (t.cpu_ms > 0).all() and (t.cpu_p90_ms >= t.cpu_ms).all()
    assert t.loc["XINT8", "npu_share_PHX"] > 0.9 and t.loc["FP32", "npu_share_PHX"] == 0  # no BF16 on XDNA1
    assert t.loc["FP32", "npu_share_STX"] == 1.0  # XDNA2 runs FP32 models as BF16
    assert (t[["npu_ms_PHX", "npu_ms_STX"]] > 0).all().all()
    assert any("estimate" in n for n in c.notes)


def test_per_layer_error_and_histograms(digits) -> None:
    _, c = digits
    pl = c.per_layer
    assert set(pl.model) == {"XINT8", "BF16"}
    acts = pl[(pl.model == "XINT8") & (pl.kind == "activation")]
    assert len(acts) > 5 and set(acts.format) <= {"uint8"}
    assert {"weight", "bias"} <= set(pl[pl.model == "XINT8"].kind)
    # bf16 keeps 8 mantissa bits, uint8 activations about 8 bits of range: bf16 is the closer on the deep layers
    deep = lambda m: pl[(pl.model == m) & (pl.kind == "activation")].sort_values("order").sqnr_db.iloc[-3:].mean()  # noqa: E731
    assert deep("BF16") > deep("XINT8")
    tensor = c.tensors("XINT8")[5]
    ref, q = c.tensor_values(tensor, "XINT8", samples=2)
    assert ref.shape == q.shape and not np.array_equal(ref, q)
    with pytest.raises(ConfigError, match="no quantized counterpart"):
        c.tensor_values("no_such_tensor", "XINT8")


def test_dashboard_widget_and_static_export(digits, tmp_path) -> None:
    _, c = digits
    d = ComparisonDashboard(c)
    titles = [d.tabs.get_title(i) for i in range(len(d.tabs.children))]
    assert titles == ["Overview", "Fidelity", "Latency", "Per-layer error", "Histograms", "Export"]
    assert {"task", "fidelity", "latency", "size", "per_layer"} <= set(d.figures)
    assert len(d.figures["latency"].data) == 3  # CPU + NPU on PHX and STX
    d.hist_model.value = "BF16"
    d.hist_tensor.value = d.hist_tensor.options[4]
    assert d.errors.last_error is None and "BF16" in d.histogram.layout.title.text
    assert len(d.histogram_view.outputs) == 1  # the new histogram replaced the old one
    d.export_path.value = str(tmp_path / "report.html")
    d.export()
    page = (tmp_path / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("plotly.js v") == 1  # plotly inlined once: offline
    assert not re.search(r"<script[^>]*\bsrc=", page)  # no script loaded from elsewhere (a CDN): it opens offline
    assert "Per-layer SQNR" in page and "XINT8" in page
    d.export_path.value = str(tmp_path)  # a folder: the error shows in the widget
    d.export()
    assert "folder" in d.errors.value
    assert "<table" in c._repr_html_() and "FP32" in repr(c)


def test_embedding_models_and_input_errors() -> None:
    model = bert_encoder(0, layers=1, hidden=32, heads=2, seq_len=8)
    calibration = list(random_tokens(16, seq_len=8, seed=1)[:, None])
    held_out = list(random_tokens(12, seq_len=8, seed=2)[:, None])
    q = ryzen_nb.quantize(model, None, "A8W8", calibration, progress=False)
    c = compare(model, [q], held_out, task="embedding", targets=(), latency_runs=0, progress=False)
    assert list(c.table.index) == ["FP32", "A8W8"]
    assert c.table.loc["A8W8", "embedding_cosine"] > 0.99 and c.table.loc["A8W8", "retrieval_at_1"] == 1.0
    assert "npu_ms_STX" not in c.table
    with pytest.raises(CalibrationDataError, match="3 labels for 12 samples"):
        compare(model, [q], held_out, labels=[0, 1, 2], targets=(), latency_runs=0, progress=False)
    with pytest.raises(ConfigError, match="named"):
        compare(model, [q, q], held_out, targets=(), latency_runs=0, progress=False)
    with pytest.raises(CalibrationDataError):
        compare(model, [q], [{"input_ids": np.zeros((1, 9), np.int64)}], targets=(), latency_runs=0, progress=False)


def test_mixed_precision_sensitivity_in_the_dashboard() -> None:
    from ryzen_nb import get_default_config
    from ryzen_nb.testing import depthwise_cnn, random_images

    model = depthwise_cnn(0, spread=1.0, outlier=30.0, image_size=16)
    qc = get_default_config("A16W8")
    qc.include_auto_mp = True
    qc.extra_options["AutoMixprecision"] = {"ActTargetQuantType": "QInt8", "L2Target": 1e9, "DataSize": 4}
    mixed = ryzen_nb.quantize(model, None, qc, random_images(8, size=16, seed=1), progress=False)
    c = compare(model, {"mixed": mixed}, random_images(6, size=16, seed=2), targets=(), latency_runs=0, progress=False)
    assert "mixed" in c.sensitivity and "sensitivity_l2" in c.sensitivity["mixed"]
    d = ComparisonDashboard(c)
    titles = [d.tabs.get_title(i) for i in range(len(d.tabs.children))]
    assert "Mixed precision" in titles and "sensitivity mixed" in d.figures
    assert "mixed: mixed-precision sensitivity" in c.to_html()  # the figure, by its title


def test_per_layer_error_can_be_skipped_for_large_models(digits) -> None:
    model, _ = digits
    calibration = [model.preprocess(s) for s in zoo.load_dataset("digits", "calibration").samples[:32]]
    xint8 = ryzen_nb.quantize(model.path, None, "XINT8", calibration, progress=False)
    c = compare(model, {"XINT8": xint8}, zoo.load_dataset("digits", "evaluation"), latency_runs=0, targets=(),
                per_layer_samples=0, max_samples=40, progress=False)
    assert c.per_layer.empty and any("per_layer_samples=0" in n for n in c.notes)
    d = ComparisonDashboard(c)  # the dashboard and the export still work without the per-layer table
    assert d.errors.last_error is None and "<table" in c._repr_html_()


def test_figures_read_at_a_glance(digits) -> None:
    _, c = digits
    figs = comparison_figures(c)
    # fidelity: 1 - cosine on a log axis of whole decades, one tick per decade: 0.99 and 0.999 a decade apart
    distance = figs["fidelity"].layout.yaxis
    assert distance.type == "log" and distance.dtick == 1 and distance.range[0] == int(distance.range[0])
    bars = figs["fidelity"].data[0]
    assert list(bars.x) == ["XINT8", "BF16"]
    assert np.allclose(bars.y, 1 - c.table.loc[["XINT8", "BF16"], "cosine"], rtol=1e-6)
    assert figs["fidelity"].layout.yaxis2.type != "log"  # SQNR is in dB: logarithmic already
    # NPU latency only where the model has operators on that NPU: FP32 runs nothing on PHX (XDNA1, no BF16)
    npu = {trace.name: dict(zip(trace.x, trace.y)) for trace in figs["latency"].data if trace.name.startswith("NPU")}
    assert npu["NPU PHX (estimate)"]["FP32"] is None and npu["NPU PHX (estimate)"]["XINT8"] > 0
    assert npu["NPU STX (estimate)"]["FP32"] > 0
    shown = display_table(c).set_index("measure")
    assert shown.loc["NPU PHX latency (ms, estimate)", "FP32"] == "–"
    assert shown.loc["operators on the PHX NPU", "FP32"] == "0 %"
    assert shown.loc["NPU STX latency (ms, estimate)", "FP32"] != "–"
    assert list(shown.columns) == ["FP32", "XINT8", "BF16"]
    assert any("No NPU estimate on PHX for FP32" in n for n in latency_notes(c))


def test_a_quantized_model_slower_on_the_cpu_is_explained(digits) -> None:
    _, c = digits
    table = c.table.copy()
    table["cpu_ms"] = [1.0, 3.0, 1.0]  # FP32, XINT8, BF16
    notes = latency_notes(dataclasses.replace(c, table=table))
    slower = [n for n in notes if n.startswith("Slower than FP32")]
    assert len(slower) == 1 and "XINT8 (3.0x)" in slower[0] and "BF16" not in slower[0]
    assert "simulates" in slower[0] and "NPU" in slower[0]
    table["cpu_ms"] = [1.0, 1.0, 1.05]  # within 10 %: nothing to explain
    assert not [n for n in latency_notes(dataclasses.replace(c, table=table)) if n.startswith("Slower")]


def test_log_axes_have_one_tick_per_decade() -> None:
    axis = log_axis([3e-4, 5e-4])  # less than a decade: still one whole decade, so a tick shows
    assert axis["range"] == [-4.0, -3.0] and axis["dtick"] == 1 and axis["minor"]["ticks"] == ""
    assert log_axis([1.1e-4, 5e-4])["range"] == [-5.0, -3.0]  # 1.1e-4 would be a bar too short to see on [-4, -3]
    assert log_axis([2.0, 0.0, np.nan, 700.0])["range"] == [0.0, 3.0]  # zeros and NaN have no place on it


def test_ui_dashboard_stays_the_function_after_every_widget_module_is_imported() -> None:
    """A submodule named like a function of its package replaces that function on first import
    (Python sets the package attribute): ``ryzen_nb.ui.dashboard(result)`` must survive the lazy
    imports of every widget module."""
    import importlib

    import ryzen_nb.ui as ui

    for module in ui._WHERE.values():
        importlib.import_module(module)
    for name in ui.__all__:
        attribute = getattr(ui, name)
        assert callable(attribute) and not isinstance(attribute, type(ui)), f"ryzen_nb.ui.{name} is {attribute!r}"


def test_a_sweep_table_gets_its_pareto_view() -> None:
    import pandas as pd

    import ryzen_nb.ui as ui

    table = pd.DataFrame({
        "config": ["FP32", "XINT8", "A8W8", "BF16", "broken", "FP32", "XINT8"],
        "target": ["STX"] * 5 + ["PHX"] * 2,
        "metric": [0.95, 0.90, 0.93, 0.95, float("nan"), 0.95, 0.90],
        "npu_latency_ms": [3.0, 1.0, 1.2, 2.0, float("nan"), 4.0, 1.5],
        "size_mb": [4.0, 1.0, 1.0, 2.0, float("nan"), 4.0, 1.0],
        "error": ["", "", "", "", "RuntimeError: boom", "", ""],
    })
    view = ui.dashboard(table)
    assert isinstance(view, ui.SweepDashboard)
    assert view.target.options == ("all targets", "STX", "PHX") and "1 row(s) failed" in view.children[0].value
    view.target.value = "STX"
    assert list(view.rows()["config"]) == ["FP32", "BF16", "A8W8", "XINT8", "broken"]  # best metric first
    # the figure: one marker per scored STX configuration, the failed one left out
    points = [len(trace.x) for trace in view.figure.data if trace.mode == "markers"]
    assert points == [4] and view.errors.last_error is None
    assert "RuntimeError: boom" in view.table_view.value
    with pytest.raises(ValueError, match="not a sweep table"):
        ui.dashboard(table.drop(columns=["metric"]))
