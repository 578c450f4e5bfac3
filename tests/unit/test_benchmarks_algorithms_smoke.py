"""Smoke test of ``python -m benchmarks.algorithms``: tiny sizes, no Quark, so the benchmark script
cannot rot unnoticed. It quantizes in subprocesses, as the real benchmark does."""

from __future__ import annotations

import json

from benchmarks import algorithms as bench


def test_algorithms_benchmark_tiny(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("RYZEN_NB_QUARK_PYTHON", raising=False)
    js = tmp_path / "results.json"
    table = bench.main(["--models", "resnet", "--algorithms", "cle,adaround,auto_mp", "--samples", "6",
                        "--holdout", "3", "--iterations", "2", "--data-size", "4", "--seeds", "2",
                        "--quark-python", "", "--json", str(js)])
    out = capsys.readouterr().out
    ours = table[table.tool == "ryzen-nb"]
    assert (ours.status == "ok").all(), ours[["preset", "algorithm", "status", "error"]].to_string()
    assert set(zip(ours.preset, ours.algorithm)) == {("XINT8", "none"), ("XINT8", "cle"), ("XINT8", "adaround"),
                                                     ("A8W8", "none"), ("A8W8", "adaround"), ("A16W8", "none"),
                                                     ("A16W8", "auto_mp")}
    assert (ours.seconds > 0).all() and (ours.cosine > 0.9).all() and (ours.l2 > 0).all()
    assert (ours[ours.algorithm == "adaround"].seeds == 2).all()
    assert (table[table.tool == "quark"].status == "not installed").all()
    assert "Goals" in out and "not measured (Quark)" in out
    data = json.loads(js.read_text())
    assert data["quark"] == "not installed" and len(data["rows"]) == len(table)


def test_algorithms_benchmark_times_each_run_again_on_a_loaded_machine(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("RYZEN_NB_QUARK_PYTHON", raising=False)
    table = bench.main(["--models", "resnet", "--algorithms", "cle", "--samples", "6", "--holdout", "3",
                        "--tools", "ryzen-nb", "--busy", "1"])
    out = capsys.readouterr().out
    assert (table.status == "ok").all(), table[["preset", "algorithm", "status", "error"]].to_string()
    assert (table.busy_seconds > 0).all() and (table.loaded == table.busy_seconds / table.seconds).all()
    goal = out[out.index("4. on a loaded machine"):]
    assert "cle" in goal and ("met" in goal.split("cle")[1].splitlines()[0])
    assert "no goal (the preset alone)" in goal
