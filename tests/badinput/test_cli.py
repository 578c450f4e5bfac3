"""The command line's errors: one ``ryzen-nb COMMAND: error: ...`` line with the fix, exit status
2, options named as they are typed, a traceback only with ``--debug``; a bug says it is one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.badinput.harness import Snapshot, judge_cli, run_cli

CASES = [
    ("quantize-limit-zero", ["quantize", "m.onnx", "o.onnx", "--calib-data", "calib", "--limit", "0"], "quantize",
     ["--limit", "positive"]),
    ("quantize-limit-text", ["quantize", "m.onnx", "o.onnx", "--calib-data", "calib", "--limit", "many"], "quantize",
     ["--limit", "many"]),
    ("emulate-limit-negative", ["emulate", "m.onnx", "--data", "calib", "--limit", "-3"], "emulate", ["--limit", "-3"]),
    ("emulate-per-op-zero", ["emulate", "m.onnx", "--per-op", "0"], "emulate", ["--per-op"]),
    ("demo-samples-zero", ["demo", "--calibration-samples", "0"], "demo", ["--calibration-samples"]),
    ("input-shape-syntax", ["quantize", "m.onnx", "o.onnx", "--input-shape", "input=1x3"], "quantize",
     ["--input-shape", "NAME:D1"]),
    ("input-shape-unknown-input", ["quantize", "m.onnx", "o.onnx", "--calib-data", "calib", "--input-shape",
                                   "pixels:1,3,8,8", "--quiet"], "quantize", ["--input-shape", "pixels", "input"]),
    ("emulate-input-shape-unknown", ["emulate", "m.onnx", "--input-shape", "pixels:1,3,8,8"], "emulate",
     ["--input-shape", "pixels"]),
    ("exclude-unknown-node", ["quantize", "m.onnx", "o.onnx", "--calib-data", "calib", "--exclude-nodes", "conv99",
                              "--quiet"], "quantize", ["--exclude-nodes", "conv99"]),
    ("exclude-unknown-op-type", ["quantize", "m.onnx", "o.onnx", "--calib-data", "calib", "--exclude-op-types",
                                 "Konv", "--quiet"], "quantize", ["Konv"]),
    ("unknown-preset", ["quantize", "m.onnx", "o.onnx", "--preset", "XINT9"], "quantize", ["XINT9", "XINT8"]),
    ("unknown-target", ["emulate", "m.onnx", "--target", "XDNA9"], "emulate", ["XDNA9", "STX"]),
    ("unknown-bf16-format", ["convert-bf16", "--input", "m.onnx", "--output", "o.onnx", "--format", "bfloat"],
     "convert-bf16", ["--format", "bfloat"]),
    ("preset-and-config", ["quantize", "m.onnx", "o.onnx", "--preset", "A8W8", "--config", "cfg.json"], "quantize",
     ["--preset", "--config"]),
    ("calib-data-missing", ["quantize", "m.onnx", "o.onnx", "--calib-data", "nodata"], "quantize",
     ["--calib-data", "nodata"]),
    ("calib-data-is-a-file", ["quantize", "m.onnx", "o.onnx", "--calib-data", "notes.txt", "--quiet"], "quantize",
     ["notes.txt"]),
    ("no-calibration-data", ["quantize", "m.onnx", "o.onnx", "--quiet"], "quantize", ["--calib-data"]),
    ("emulate-data-missing", ["emulate", "m.onnx", "--data", "nodata"], "emulate", ["--data", "nodata"]),
    ("evaluate-no-folders", ["evaluate"], "evaluate", ["--baseline_results_folder", "--quantized_results_folder"]),
    ("evaluate-one-folder", ["evaluate", "calib"], "evaluate", ["--quantized_results_folder"]),
    ("quantize-missing-output", ["quantize", "m.onnx"], "quantize", ["output"]),
    ("quantize-already-quantized", ["quantize", "q.onnx", "o.onnx", "--calib-data", "calib", "--quiet"], "quantize",
     ["already quantized"]),
    ("zoo-unknown-name", ["zoo", "fetch", "resnet9000"], "zoo", ["resnet9000"]),
    ("unknown-command", ["quantise", "m.onnx"], None, ["quantise", "quantize"]),
]


@pytest.mark.parametrize(("argv", "command", "fragments"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_user_error_is_one_line(argv: list[str], command: str | None, fragments: list[str], ws: Path,
                                  judge) -> None:
    before = Snapshot.take(ws)
    result = run_cli(argv)
    judge(judge_cli(result, fragments, before, command))
    if command in ("quantize", "convert-bf16", "emulate"):  # the Python names never reach the command line
        assert not any(name in result.stderr for name in ("calibration_data", "input_shapes", "nodes_to_exclude",
                                                          "output_path"))


def test_debug_adds_the_traceback(ws: Path) -> None:
    for argv in (["--debug", "emulate", "m.onnx", "--report", "m.onnx"], ["emulate", "m.onnx", "--report", "m.onnx",
                                                                          "--debug"]):
        result = run_cli(argv)
        assert result.status == 2 and "Traceback" in result.stderr and "OutputPathError" in result.stderr
        assert result.stderr.strip().splitlines()[-1].startswith("ryzen-nb emulate: error: The --report path")


def test_a_bug_says_it_is_one(ws: Path, monkeypatch) -> None:
    from ryzen_nb import cli

    def broken(*_args, **_kwargs):
        raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")

    monkeypatch.setattr(cli.npu, "compile", broken)
    result = run_cli(["emulate", "m.onnx"])
    lines = result.stderr.strip().splitlines()
    assert result.status == 1 and len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith("ryzen-nb emulate: internal error (a bug in ryzen-nb") and "--debug" in lines[0]
    assert "TypeError: unsupported operand" in lines[0]
    debug = run_cli(["--debug", "emulate", "m.onnx"])
    assert debug.status == 1 and "Traceback" in debug.stderr


def test_the_file_system_saying_no_names_the_file(ws: Path, monkeypatch) -> None:
    from ryzen_nb import cli

    def denied(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied", "m.onnx")

    monkeypatch.setattr(cli.npu, "compile", denied)
    result = run_cli(["emulate", "m.onnx"])
    assert result.status == 2 and result.stderr.strip() == ("ryzen-nb emulate: error: Permission denied ('m.onnx'). "
                                                            "Check the file's permissions.")


def test_ctrl_c_is_one_line(ws: Path, monkeypatch) -> None:
    from ryzen_nb import cli

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "quantize", interrupted)
    result = run_cli(["quantize", "m.onnx", "o.onnx", "--calib-data", "calib", "--quiet"])
    assert result.status == 130 and result.stderr.strip() == "ryzen-nb quantize: interrupted"
    assert not (ws / "o.onnx").exists()


def test_the_installed_command_exits_2_with_one_line(ws: Path) -> None:
    """The real entry point, in a process of its own: status, stderr, and the model intact."""
    model = (ws / "m.onnx").read_bytes()
    run = subprocess.run([sys.executable, "-m", "ryzen_nb.cli", "emulate", "m.onnx", "--report", "m.onnx"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip().splitlines() == [
        "ryzen-nb emulate: error: The --report path 'm.onnx' is 'm.onnx', the MODEL; refusing to write over the "
        "MODEL (it would be lost). Choose another --report path."]
    assert (ws / "m.onnx").read_bytes() == model
