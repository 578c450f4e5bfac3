"""Smoke test of ``python -m benchmarks.quantize``: quick mode, tiny sample counts, no Quark, so the
benchmark script cannot rot unnoticed. It quantizes in subprocesses, as the real benchmark does."""

from __future__ import annotations

import json

from benchmarks import quantize as bench


def test_quantize_benchmark_quick(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("RYZEN_NB_QUARK_PYTHON", raising=False)
    csv, js = tmp_path / "results.csv", tmp_path / "results.json"
    table = bench.main(["--quick", "--samples", "4", "--holdout", "3", "--quark-python", "",
                        "--csv", str(csv), "--json", str(js)])
    out = capsys.readouterr().out

    assert set(table.model) == {"resnet", "bert"}
    assert set(table.preset) == set(bench.QUICK_PRESETS)
    ours = table[table.tool == "ryzen-nb"]
    assert (ours.status == "ok").all(), ours[["model", "preset", "status", "error"]].to_string()
    for column in ("quant_s", "rss_mb", "size_kb", "latency_ms", "speed"):
        assert (ours[column] > 0).all(), column
    assert (ours.cosine > 0.9).all() and ours.top1.between(0, 1).all()

    ort_rows = table[table.tool == "onnxruntime"].set_index(["model", "preset"]).status
    assert (ort_rows.xs("A8W8", level="preset") == "ok").all()
    assert ort_rows.xs("BF16", level="preset").str.startswith("n/a").all()
    assert (table[table.tool == "quark"].status == "not installed").all()

    assert "Goals" in out and "not measured" in out
    assert "resnet_cnn(seed=0)" in out and "bert_encoder(seed=0)" in out
    assert csv.read_text().startswith("model,preset,tool,status")
    data = json.loads(js.read_text())
    assert data["quark"] == "not installed" and len(data["rows"]) == len(table) and data["goals"]
    # speed against onnxruntime's own QDQ model of the same network, for the integer presets
    assert ours.set_index(["model", "preset"]).vs_ort.xs("A8W8", level="preset").gt(0).all()
    assert "onnxruntime's (goal >= 1)" in out and "(goal >= 0.95)" in out


def test_goal_bookkeeping_no_goal_is_not_a_miss():
    """A row without a goal is neither met nor missed; a missing measurement is 'not measured'."""
    assert bench._verdict(0.3, None) == "no goal"
    assert bench._verdict(float("nan"), 0.5) == "not measured"
    assert bench._verdict(0.96, 0.95) == "met" and bench._verdict(0.94, 0.95) == "NOT met"
    assert bench._verdict(1.4, 1.5, higher_is_better=False) == "met"
    assert bench._verdict(1.6, 1.5, higher_is_better=False) == "NOT met"


def test_a_preset_spec_carries_extra_options() -> None:
    assert bench.preset_spec("bf16:WeightsOnly:CalibDataSize=8:MinMSEMode=All") == (
        "BF16", {"WeightsOnly": True, "CalibDataSize": 8, "MinMSEMode": "All"})
    assert bench.preset_spec("XINT8") == ("XINT8", {})
    assert bench._spelled(" bfp16:WeightsOnly") == "BFP16:WeightsOnly"
