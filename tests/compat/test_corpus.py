"""The compatibility corpus: scripts written the way Quark's ONNX examples and the Ryzen AI
tutorials write theirs (``corpus/``), run with one change — the text ``quark.onnx`` replaced by
``ryzen_nb.quark`` — on small models. Each script checks its own result (accuracy kept, nodes
excluded, files written); a script that raises fails its test."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ryzen_nb.errors import ConfigError
from ryzen_nb.quark.quantization.config.presets import DefaultConfigMapping

CORPUS = Path(__file__).parent / "corpus"
HAS_EXTENSIONS = importlib.util.find_spec("onnxruntime_extensions") is not None


def renamed(script: str) -> str:
    """The script's source with the one rename a user makes."""
    source = (CORPUS / script).read_text(encoding="utf-8")
    assert "quark.onnx" in source and "ryzen_nb" not in source, f"{script} is not written against quark.onnx"
    return source.replace("quark.onnx", "ryzen_nb.quark")


@contextlib.contextmanager
def _restored_presets() -> Iterator[None]:
    """A script may add its own preset to DefaultConfigMapping, as Quark allows; later tests must
    not see it."""
    before = dict(DefaultConfigMapping)
    try:
        yield
    finally:
        DefaultConfigMapping.clear()
        DefaultConfigMapping.update(before)


def run_script(script: str, *argv: object, cwd: Path) -> None:
    """Run the renamed script as ``python script.py ARGV...`` would, in this process (a fresh
    interpreter per script would cost a second each)."""
    code = compile(renamed(script), str(CORPUS / script), "exec")
    old_argv = sys.argv
    sys.argv = [script, *map(str, argv)]
    try:
        with _restored_presets(), contextlib.chdir(cwd):
            exec(code, {"__name__": "__main__", "__file__": str(CORPUS / script)})
    finally:
        sys.argv = old_argv


@pytest.mark.parametrize("config", ["XINT8", "A8W8", "A16W8", "BF16"])
def test_ryzen_ai_tutorial(workspace: Path, tmp_path: Path, config: str) -> None:
    args = ["--model_input", workspace / "models/digits.onnx", "--model_output", tmp_path / f"digits_{config}.onnx",
            "--calib_data", workspace / "calib_data", "--eval_images", workspace / "digits_eval.npy",
            "--eval_labels", workspace / "digits_labels.npy", "--config", config]
    if config == "BF16" and not HAS_EXTENSIONS:
        # the tutorial registers Quark's custom-op library for BF16 models; without a library to
        # hand back, the line fails with one sentence saying to delete it
        with pytest.raises(ConfigError, match=r"delete the register_custom_ops_library\(get_library_path\(\)\) line"):
            run_script("quark_quantize.py", *args, cwd=tmp_path)
        return
    run_script("quark_quantize.py", *args, cwd=tmp_path)


@pytest.mark.parametrize("flag", ["", "--adaround", "--adaquant", "--fast_finetune", "--cross_layer_equalization"])
def test_ryzen_ai_advanced_tutorial(workspace: Path, tmp_path: Path, flag: str) -> None:
    run_script("advanced_quark_quantize.py", "--model_input", workspace / "models/cnn.onnx", "--model_output",
               tmp_path / "cnn_q.onnx", "--calib_data", workspace / "cnn_calib", *([flag] if flag else []),
               cwd=tmp_path)


@pytest.mark.parametrize("options", [["--config", "XINT8", "--exclude_nodes", "fc", "--cle"],
                                     ["--config", "A8W8", "--adaround", "--exclude_subgraphs",
                                      "[layer2.0.a.conv_27],[layer2.0.b.conv_35]"],
                                     ["--config", "BF16", "--save_as_external_data"]])
def test_ryzen_ai_yolo_script(workspace: Path, tmp_path: Path, options: list[str]) -> None:
    images = tmp_path / "images.npy"
    import numpy as np

    np.save(images, np.stack([np.load(p)[0] for p in sorted((workspace / "cnn_calib").iterdir())]))
    run_script("quantize_quark_yolo.py", "--input_model_path", workspace / "models/cnn.onnx", "--calib_data_path",
               images, "--output_model_path", tmp_path / "out.onnx", *options, cwd=tmp_path)


@pytest.mark.parametrize("preset", ["XINT8", "A8W8_ADAROUND", "BF16_MIXED_BFP16", "MX9_INT8"])
def test_ryzen_ai_custom_config_module(workspace: Path, tmp_path: Path, preset: str) -> None:
    run_script("quark_quant_qcc.py", "--onnx", workspace / "models/digits.onnx", "--output", tmp_path / "q.onnx",
               "--quant", preset, "--images", workspace / "digits_eval.npy", cwd=tmp_path)


@pytest.mark.parametrize("config", ["BF16", "A8W8"])
def test_ryzen_ai_random_data_scripts(workspace: Path, tmp_path: Path, config: str) -> None:
    run_script("quantize_to_bf16.py", "--model_path", workspace / "models/encoder.onnx", "--output_dir", tmp_path,
               "--config", config, cwd=tmp_path)


@pytest.mark.parametrize("config", ["BFP16", "XINT8_CLE_ADAROUND", "MXINT8", "CRYPTO", "A8W8_QCONFIG",
                                    "BF16_QCONFIG"])
def test_quark_qconfig_examples(workspace: Path, tmp_path: Path, config: str) -> None:
    run_script("qconfig_examples.py", "--input_model_path", workspace / "models/cnn.onnx", "--output_model_path",
               tmp_path / "out.onnx", "--calibration_dataset_path", workspace / "cnn_calib", "--config", config,
               cwd=tmp_path)


@pytest.mark.parametrize("mode", ["auto", "metric", "layer", "tensor"])
def test_mixed_precision(workspace: Path, tmp_path: Path, mode: str) -> None:
    run_script("mixed_precision.py", "--model", workspace / "models/digits.onnx", "--output", tmp_path / "mp.onnx",
               "--images", workspace / "digits_eval.npy", "--labels", workspace / "digits_labels.npy", "--mode", mode,
               cwd=tmp_path)


@pytest.mark.parametrize("from_path", [False, True])
def test_function_api(workspace: Path, tmp_path: Path, from_path: bool) -> None:
    run_script("quantize_static_api.py", "--model", workspace / "models/digits.onnx", "--output", tmp_path / "q.onnx",
               "--images", workspace / "digits_eval.npy", "--calib_dir", workspace / "calib_no_batch",
               *(["--from_path"] if from_path else []), cwd=tmp_path)


def test_custom_presets_and_utilities(workspace: Path, tmp_path: Path) -> None:
    run_script("custom_presets_and_utils.py", "--model", workspace / "models/digits.onnx", "--output",
               tmp_path / "q.onnx", "--calib_dir", workspace / "calib_data", "--dump_dir", tmp_path / "dump",
               cwd=tmp_path)
    assert "MY_A8W8_PER_CHANNEL" not in DefaultConfigMapping  # restored for the tests after it
