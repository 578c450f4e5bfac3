"""Smoke test of ``python -m benchmarks.emulator`` on the small models, so the script cannot rot."""

from __future__ import annotations

from benchmarks import emulator


def test_emulator_benchmark_runs(capsys) -> None:
    table = emulator.main(["--models", "resnet", "--precisions", "XINT8,BF16+FP32", "--rounds", "1"])
    out = capsys.readouterr().out
    assert list(table.precision) == ["XINT8", "BF16+FP32 (FP32 model)"]
    assert (table.emulated_ms > 0).all() and (table.fp32_ms > 0).all() and (table.kernels > 0).all()
    assert "Goal: emulated time <= 2x FP32" in out and "resnet" in out
