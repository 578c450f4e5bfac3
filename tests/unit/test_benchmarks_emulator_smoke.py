"""Smoke test of ``python -m benchmarks.emulator`` on the small models, so the script cannot rot."""

from __future__ import annotations

from benchmarks import emulator


def test_emulator_benchmark_runs(capsys) -> None:
    table = emulator.main(["--models", "resnet", "--precisions", "XINT8,BF16+FP32", "--rounds", "1"])
    out = capsys.readouterr().out
    assert list(table.precision) == ["XINT8", "BF16+FP32 (FP32 model)"]
    assert (table.emulated_ms > 0).all() and (table.fp32_ms > 0).all() and (table.kernels > 0).all()
    assert "Goals: emulated time <= 1.5x FP32" in out and "resnet" in out
    # XINT8 has a goal (met or not); BF16 with float32 accumulation has none, and says so
    lines = {line.split()[1]: line for line in out.splitlines() if line.startswith("  resnet ")}
    assert lines["XINT8"].rstrip().endswith(("met", "NOT met")) and lines["BF16+FP32"].rstrip().endswith("no goal")


def test_a_precision_without_a_goal_is_not_a_miss() -> None:
    assert emulator.verdict(5.0, None) == "no goal"
    assert emulator.verdict(float("nan"), 1.5) == "not measured"
    assert emulator.verdict(1.4, 1.5) == "met" and emulator.verdict(1.6, 1.5) == "NOT met"
