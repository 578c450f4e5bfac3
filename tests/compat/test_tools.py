"""Quark's command-line tools under ``python -m ryzen_nb.quark.tools.<tool>``, with Quark's flags
(and the spellings its documentation uses), run on small models."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, numpy_helper

from ryzen_nb import quantize
from ryzen_nb.testing import random_images

TOOLS: dict[str, list[str]] = json.loads((Path(__file__).parent / "quark_api.json").read_text())["tools"]


def tool(name: str, *argv: object) -> int:
    return importlib.import_module(f"ryzen_nb.quark.tools.{name}").main([str(a) for a in argv])


def outputs(path: Path, feed: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return session.run(None, {name: feed.astype(np.float16 if "float16" in session.get_inputs()[0].type else
                                                np.float32)})[0].astype(np.float32)


@pytest.fixture(scope="module")
def cnn(workspace: Path) -> tuple[Path, np.ndarray]:
    return workspace / "models/cnn.onnx", random_images(1, size=16, seed=9)


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_documented_tool_takes_quarks_flags(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        tool(name, "--help")
    assert done.value.code == 0
    shown = capsys.readouterr().out
    missing = [flag for flag in TOOLS[name] if flag not in shown]
    assert not missing, f"{name} lacks Quark's flags {missing}"


@pytest.mark.parametrize("name", [n for n, flags in TOOLS.items() if not flags])
def test_a_tool_for_a_quark_only_model_form_says_why_in_one_line(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert tool(name, "--input", "in.onnx", "--output", "out.onnx") == 2
    message = capsys.readouterr().err.strip()
    assert message.count("\n") == 0 and "ryzen-nb" in message


def test_bf16_conversions(cnn: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    model, x = cnn
    reference = outputs(model, x)
    assert tool("convert_fp32_to_bf16", "--input", model, "--output", tmp_path / "cast.onnx") == 0
    assert np.abs(outputs(tmp_path / "cast.onnx", x) - reference).max() < 0.05 * np.abs(reference).max()
    assert tool("convert_fp32_to_bf16", "--input", model, "--output", tmp_path / "qdq.onnx", "--format", "vitisqdq") == 0
    assert tool("convert_fp32_to_fp16", model, tmp_path / "half.onnx") == 0  # Quark's positional form
    assert onnx.load(tmp_path / "half.onnx").graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    assert tool("convert_fp16_to_bf16", "--input", tmp_path / "half.onnx", "--output", tmp_path / "hb.onnx") == 0
    assert onnx.load(tmp_path / "hb.onnx").graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    assert tool("convert_fp16_to_fp32", "--input", tmp_path / "half.onnx", "--output", tmp_path / "full.onnx") == 0
    assert np.abs(outputs(tmp_path / "full.onnx", x) - reference).max() < 0.01 * np.abs(reference).max()
    assert tool("convert_fp32_to_bfp16", "--input", model, "--output", tmp_path / "bfp.onnx") == 0
    assert tool("convert_fp16_to_bfp16", "--input", tmp_path / "half.onnx", "--output", tmp_path / "hbfp.onnx") == 0
    assert any(n.domain == "ryzen_nb" for n in onnx.load(tmp_path / "bfp.onnx").graph.node)


def test_random_quantize_print_nodes_and_remove_qdq(cnn: tuple[Path, np.ndarray], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    model, x = cnn
    assert tool("random_quantize", "--input_model_path", model, "--quantized_model_path", tmp_path / "a8w8.onnx",
                "--config", "A8W8") == 0
    assert tool("random_quantize", "--input_model_path", model, "--quantized_model_path", tmp_path / "a16w8.onnx",
                "--config", "A16W8", "--exclude_nodes", "fc", "--exclude_subgraphs",
                "[layer2.0.a.conv_27],[layer2.0.b.conv_35]") == 0
    capsys.readouterr()
    assert tool("print_a16w8_a8w8_nodes", tmp_path / "a8w8.onnx") == 0
    assert "int8 activation node count:  7" in capsys.readouterr().out
    assert tool("print_a16w8_a8w8_nodes", "--input", tmp_path / "a16w8.onnx") == 0
    printed = capsys.readouterr().out
    assert "int16 activation node count:  4" in printed and "\nfc\n" not in printed  # fc and the subgraph: float
    assert tool("remove_qdq", "--input_model", tmp_path / "a8w8.onnx", "--output_model", tmp_path / "float.onnx") == 0
    stripped = onnx.load(tmp_path / "float.onnx")
    assert not {"QuantizeLinear", "DequantizeLinear"} & {n.op_type for n in stripped.graph.node}
    reference = outputs(model, x)  # weights come back on the int8 grid, activations unquantized
    assert np.abs(outputs(tmp_path / "float.onnx", x) - reference).max() < 0.1 * np.abs(reference).max()
    bf16 = quantize(model, tmp_path / "bf16.onnx", "BF16", progress=False).output_path
    assert tool("remove_qdq", "--input_model", bf16, "--output_model", tmp_path / "bf16_float.onnx") == 0
    assert not [n for n in onnx.load(tmp_path / "bf16_float.onnx").graph.node if n.domain == "ryzen_nb"]


def test_onnxtxt_round_trip_and_inf_weights(cnn: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    model, _ = cnn
    assert tool("convert_onnx_to_onnxtxt", "--input_model", model, "--output_model", tmp_path / "m.onnxtxt") == 0
    assert (tmp_path / "m.onnxtxt").read_text().startswith("ir_version")  # protobuf text, as Quark writes
    assert tool("convert_onnxtxt_to_onnx", "--input_model", tmp_path / "m.onnxtxt", "--output_model",
                tmp_path / "back.onnx") == 0
    assert onnx.load(tmp_path / "back.onnx") == onnx.load(model)
    broken = onnx.load(model)
    weight = broken.graph.initializer[0]
    values = numpy_helper.to_array(weight).copy()
    values.flat[0], values.flat[1] = np.inf, -np.inf
    weight.CopyFrom(numpy_helper.from_array(values, weight.name))
    onnx.save(broken, tmp_path / "inf.onnx")
    assert tool("replace_inf_weights", "--input_model", tmp_path / "inf.onnx", "--output_model", tmp_path / "fin.onnx",
                "--replace_inf_value", 100) == 0
    fixed = numpy_helper.to_array(onnx.load(tmp_path / "fin.onnx").graph.initializer[0])
    assert fixed.flat[0] == 100 and fixed.flat[1] == -100 and np.isfinite(fixed).all()


def test_evaluate_with_the_documented_flags_and_quarks_positionals(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(0)
    for folder, noise in (("float_output", 0.0), ("quantized_output", 0.01)):
        (tmp_path / folder).mkdir()
        for i in range(3):
            np.save(tmp_path / folder / f"{i}.npy", np.linspace(0, 1, 64) + noise * rng.standard_normal(64))
    assert tool("evaluate", "--baseline_results_folder", tmp_path / "float_output", "--quantized_results_folder",
                tmp_path / "quantized_output") == 0
    assert tool("evaluate", tmp_path / "float_output", tmp_path / "quantized_output") == 0
    printed = capsys.readouterr().out
    assert printed.count("Mean cos similarity: 0.99") == 2
    assert tool("evaluate", tmp_path / "float_output", tmp_path / "missing") == 2  # one line, no traceback


def test_a_tool_runs_with_python_dash_m(cnn: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    model, _ = cnn
    done = subprocess.run([sys.executable, "-m", "ryzen_nb.quark.tools.convert_fp32_to_bf16", "--input", str(model),
                           "--output", str(tmp_path / "b.onnx"), "--format", "with_cast"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "b.onnx").exists()
