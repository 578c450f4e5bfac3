"""Fixtures of the bad-input suite (see harness.py): a folder of small inputs for every case, and
the tally of outcomes printed at the end of the run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest

from ryzen_nb.quantization.config import Config, get_default_config
from ryzen_nb.testing import random_images, resnet_cnn
from tests.badinput.harness import KINDS, TALLY, Outcome, Snapshot


@pytest.fixture(scope="session")
def model_bytes() -> bytes:
    return resnet_cnn(0, blocks=(1,), width=4, image_size=8).SerializeToString()


@pytest.fixture(scope="session")
def quantized_bytes(model_bytes, tmp_path_factory) -> bytes:
    import ryzen_nb

    model = onnx.load_model_from_string(model_bytes)
    return ryzen_nb.quantize(model, None, "XINT8", random_images(2, size=8), progress=False).model.SerializeToString()


def make_workspace(root: Path, model_bytes: bytes, quantized_bytes: bytes) -> Path:
    """The inputs every case reads: m.onnx, ext.onnx (+ ext.onnx.data), q.onnx (XINT8), calib/ (3
    samples), cfg.json, notes.txt and an empty folder outdir/."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "m.onnx").write_bytes(model_bytes)
    (root / "q.onnx").write_bytes(quantized_bytes)
    onnx.save(onnx.load_model_from_string(model_bytes), str(root / "ext.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="ext.onnx.data", size_threshold=0)
    (root / "calib").mkdir()
    for i, x in enumerate(random_images(3, size=8)):
        np.save(root / "calib" / f"{i}.npy", x[None])
    (root / "cfg.json").write_text(Config(get_default_config("XINT8")).to_json())
    (root / "notes.txt").write_text("not a model\n")
    (root / "outdir").mkdir()
    return root


@pytest.fixture
def ws(tmp_path, model_bytes, quantized_bytes, monkeypatch) -> Path:
    """A fresh workspace, and the current folder (cases give relative paths, as a user types them)."""
    root = make_workspace(tmp_path / "ws", model_bytes, quantized_bytes)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def judge(request):
    """Record the outcome of this case and assert it is clear."""

    def judge(outcome: Outcome) -> None:
        TALLY[request.node.nodeid] = outcome.kind
        assert outcome.kind == "clear", f"{outcome.kind}: {outcome.detail}"

    return judge


@pytest.fixture
def snapshot(ws) -> Snapshot:
    return Snapshot.take(ws)


def pytest_terminal_summary(terminalreporter) -> None:
    if not TALLY:
        return
    counts = {k: sum(1 for v in TALLY.values() if v == k) for k in KINDS}
    terminalreporter.write_line(f"bad-input cases: {len(TALLY)} — " + ", ".join(f"{k} {n}" for k, n in counts.items()))
    out = os.environ.get("RYZEN_NB_BADINPUT_TALLY")
    if out:
        Path(out).write_text(json.dumps({"counts": counts, "cases": TALLY}, indent=1, sort_keys=True))
