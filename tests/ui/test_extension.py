"""%load_ext ryzen_nb: the magics in a real IPython shell, and the rich displays of result objects."""

from __future__ import annotations

import onnx
import pytest
from IPython.core.interactiveshell import InteractiveShell

import ryzen_nb
from ryzen_nb.testing import random_images, resnet_cnn


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    folder = tmp_path_factory.mktemp("magics")
    model = resnet_cnn(0, blocks=(1, 1), width=8, image_size=16)
    onnx.save(model, str(folder / "model.onnx"))
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "ryzen_nb")
    ip.user_ns.update({"images": random_images(8, size=16, seed=1), "held_out": random_images(6, size=16, seed=2),
                       "folder": folder})
    return ip, folder


def test_quantize_emulate_compare(shell) -> None:
    ip, folder = shell
    summary = ip.run_line_magic("rnb_quantize", f"{folder}/model.onnx {folder}/model_xint8.onnx --preset XINT8 --data images")
    assert isinstance(summary, ryzen_nb.QuantizationSummary) and (folder / "model_xint8.onnx").exists()
    assert "<table>" in summary._repr_html_()
    program = ip.run_line_magic("rnb_emulate", f"{folder}/model_xint8.onnx --target PHX")
    assert program.target.name == "PHX" and "NPU" in program._repr_html_()
    result = ip.run_line_magic("rnb_compare", f"{folder}/model.onnx {folder}/model_xint8.onnx --data held_out --targets STX")
    assert list(result.table.index) == ["FP32", "model_xint8"] and "npu_ms_STX" in result.table
    presets = ip.run_line_magic("rnb_presets", "")
    assert "XINT8" in set(presets.preset)


def test_magics_report_input_problems_in_one_line(shell, capsys) -> None:
    ip, folder = shell
    assert ip.run_line_magic("rnb_quantize", f"{folder}/missing.onnx --data images") is None
    out = capsys.readouterr().out
    assert out.startswith("ModelNotFoundError") and "missing.onnx" in out
    assert ip.run_line_magic("rnb_quantize", f"{folder}/model.onnx --preset XINT9 --data images") is None
    assert "XINT8" in capsys.readouterr().out  # the closest preset is named
    assert ip.run_line_magic("rnb_compare", f"{folder}/model.onnx") is None
    assert "usage: %rnb_compare" in capsys.readouterr().out
