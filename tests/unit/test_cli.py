"""The command line as a person reads it: tables within 100 columns (or the terminal's width), the CPU
fallbacks of ``emulate`` grouped with their reasons, ``zoo list|get|calib-data``, and the
quantization summary with its fields named as the command names them. (Errors: tests/badinput.)"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest

import ryzen_nb
from ryzen_nb import cli, npu, testing, zoo
from ryzen_nb.cli import main

ANSI = re.compile(r"\x1b\[")


@pytest.fixture()
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder to run in (relative paths keep the output's lines short) with an FP32 model and an
    XINT8 model whose Add and pool stay in float (two reasons to fall back to the CPU on Phoenix)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    model = testing.resnet_cnn(0, blocks=(1, 1), width=8, image_size=16)
    onnx.save(model, "cnn.onnx")
    config = ryzen_nb.get_default_config("XINT8")
    config.op_types_to_exclude = ["Add", "GlobalAveragePool"]
    ryzen_nb.quantize(model, "mixed.onnx", config, testing.random_images(4, size=16), progress=False)
    Path("calib").mkdir()
    for i, image in enumerate(testing.random_images(4, size=16)):
        np.save(f"calib/{i}.npy", image[None])
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def widest(text: str) -> int:
    """The longest line, a suggested command aside: it is printed whole, to be copied (paths can be long)."""
    return max((len(line) for line in text.splitlines() if not line.startswith("next: ryzen-nb ")), default=0)


COMMANDS = {
    "presets": ["presets"],
    "formats": ["formats"],
    "zoo list": ["zoo", "list"],
    "emulate": ["emulate", "mixed.onnx", "--target", "PHX", "--per-op", "6"],
    "emulate fp32": ["emulate", "cnn.onnx", "--target", "PHX"],
    "quantize": ["quantize", "cnn.onnx", "out.onnx", "--calib-data", "calib", "--quiet"],
    "zoo calib-data": ["zoo", "calib-data", "digits", "digits_calib", "--count", "3"],
    "zoo get": ["zoo", "get", "digits", "resnet_digits"],
}


@pytest.mark.parametrize("columns", [100, 80])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_output_fits_the_terminal_and_at_most_100_columns(work, capsys, monkeypatch, command, columns) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, err = run(capsys, *COMMANDS[command])
    assert code == 0, err
    assert out.strip(), "nothing printed"
    assert widest(out) <= columns, f"{command}: a line of {widest(out)} columns:\n{out}"
    assert not ANSI.search(out), "colour codes in a pipe"
    assert not [line for line in out.splitlines() if line != line.rstrip()], "trailing spaces (rich's padding)"


def test_a_wide_terminal_still_gets_100_columns(work, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "240")
    code, out, _ = run(capsys, "zoo", "list")
    assert code == 0 and 90 < widest(out) <= cli.MAX_WIDTH == 100


def test_emulate_lists_the_cpu_fallbacks_grouped_by_reason(work, capsys, monkeypatch) -> None:
    monkeypatch.setattr(cli, "MAX_WIDTH", 400)  # no wrapping: every reason on one line
    monkeypatch.setenv("COLUMNS", "400")
    code, out, _ = run(capsys, "emulate", "mixed.onnx", "--target", "PHX")
    assert code == 0
    reasons = npu.compile("mixed.onnx", "PHX").cpu_reasons()
    assert len(reasons) >= 2, "the model should have CPU fallbacks"
    assert f"CPU fallbacks: {len(reasons)} operators" in out
    rows = [line for line in out.splitlines() if any(reason in line for reason in set(reasons.reason))]
    assert len(rows) == reasons.reason.nunique(), "one row per reason"
    for reason, group in reasons.groupby("reason"):
        (row,) = [line for line in rows if reason in line]
        assert row.split()[0] == str(len(group)), f"the count of {reason!r}"
        assert all(op in row for op in set(group.op)), f"the op types of {reason!r}"
    assert "Estimated latency on Phoenix" in out and "not a measurement" in out
    code, out, _ = run(capsys, "emulate", "cnn.onnx", "--target", "STX")
    assert code == 0 and "Every operator runs on the NPU" in out and "CPU fallbacks" not in out


def test_the_quantization_summary_names_its_fields_as_the_command_does(work, capsys) -> None:
    code, out, _ = run(capsys, "quantize", "cnn.onnx", "out.onnx", "--calib-data", "calib", "--limit", "3", "--quiet")
    assert code == 0
    assert "QuantizationSummary" not in out and "<" not in out, "a Python repr"
    fields = {line.split()[0]: line for line in out.splitlines() if line and not line[0].isspace()}
    assert fields["OUTPUT"].split()[1] == "out.onnx"
    assert fields["--preset"].split()[1] == "XINT8"
    assert "3 samples from calib, at most --limit 3" in fields["--calib-data"]
    assert re.search(r"weights +\S+ kB -> \S+ kB \(\d+\.\dx smaller\)", out)
    assert "calibration_data" not in out and "input_shapes" not in out
    assert "next: ryzen-nb emulate out.onnx" in out
    code, out, _ = run(capsys, "quantize", "cnn.onnx", "out2.onnx", "--calib-data", "calib", "--quiet", "--json")
    assert code == 0 and '"calibration_samples": 4' in out  # --json stays the machine-readable form


def test_weights_only_quantizes_without_data_and_says_what_it_did(work, capsys) -> None:
    code, out, _ = run(capsys, "quantize", "cnn.onnx", "wo.onnx", "--preset", "A8W8", "--weights-only", "--quiet")
    assert code == 0
    fields = {line.split()[0]: line for line in out.splitlines() if line and not line[0].isspace()}
    assert fields["--preset"].split(None, 1)[1] == "A8W8, weights only"
    assert "0 samples (none needed: no activation is quantized)" in fields["--calib-data"]
    model = onnx.load("wo.onnx")
    assert not [n for n in model.graph.node if n.op_type == "QuantizeLinear"]
    assert [n for n in model.graph.node if n.op_type == "DequantizeLinear"]  # the weights


def test_zoo_calib_data_writes_samples_that_quantize_reads_and_never_overwrites(work, capsys) -> None:
    code, out, err = run(capsys, "zoo", "calib-data", "digits", "digits_calib", "--count", "5")
    assert code == 0, err
    files = sorted(Path("digits_calib").iterdir())
    assert [f.name for f in files] == [f"digits_{i:04d}.npy" for i in range(5)]
    model = zoo.load_model("resnet_digits")
    expected = [model.preprocess(s)["image"] for s in zoo.load_dataset("digits", split="calibration").samples[:5]]
    for file, feed in zip(files, expected):
        np.testing.assert_array_equal(np.load(file), feed)
    assert f"next: ryzen-nb quantize {model.path} OUTPUT.onnx --calib-data digits_calib" in out
    before = {f: (f.read_bytes(), f.stat().st_mtime_ns) for f in files}
    code, out, err = run(capsys, "zoo", "calib-data", "digits", "digits_calib", "--count", "7")
    assert code == 2 and "nothing was written" in err and "digits_0000.npy" in err
    assert sorted(Path("digits_calib").iterdir()) == files, "no file added"
    assert {f: (f.read_bytes(), f.stat().st_mtime_ns) for f in files} == before, "a file was overwritten"
    code, out, err = run(capsys, "quantize", str(model.path), "digits_xint8.onnx", "--calib-data", "digits_calib",
                         "--quiet")
    assert code == 0, err
    assert re.search(r"--calib-data +5 samples from digits_calib", out)


def test_zoo_calib_data_for_a_two_input_model_writes_npz(work, capsys) -> None:
    code, out, err = run(capsys, "zoo", "calib-data", "sentences", "pairs", "--count", "2")
    assert code == 0, err
    files = sorted(Path("pairs").iterdir())
    assert [f.suffix for f in files] == [".npz"] * 4, "two sentence pairs, two model runs each"
    with np.load(files[0]) as archive:
        assert set(archive.files) == set(zoo.load_model("minilm_l6").input_names)


def test_zoo_calib_data_errors_name_the_fix(work, capsys) -> None:
    code, _, err = run(capsys, "zoo", "calib-data", "digit", "x")
    assert code == 2 and "'digits'" in err
    code, _, err = run(capsys, "zoo", "calib-data", "cifar10_samples", "x")
    assert code == 2 and "--model MODEL" in err and "resnet_digits" in err
    code, _, err = run(capsys, "zoo", "calib-data", "digits", "x", "--model", "cnn.onnx")
    assert code == 2 and "--calib-data" in err and "zoo model" in err
    assert not Path("x").exists()


def test_zoo_actions(work, capsys) -> None:
    code, out, _ = run(capsys, "zoo", "list")
    assert code == 0 and "resnet_digits" in out and "calib-data" in out and "digits" in out
    code, out, _ = run(capsys, "zoo", "get", "digits", "resnet_digits")
    assert code == 0 and re.search(r"data set +digits +\d+ samples", out) and "resnet_digits.onnx" in out
    assert run(capsys, "zoo", "fetch", "digits")[0] == 0, "the old spelling still works"
    with pytest.raises(SystemExit) as exit:
        main(["zoo"])
    assert exit.value.code == 2 and "{list,get,calib-data}" in capsys.readouterr().err
