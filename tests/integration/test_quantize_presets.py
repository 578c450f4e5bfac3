"""Acceptance: a seeded ResNet18-style CNN and a 4-layer BERT-style encoder, quantized with every
preset, run in plain onnxruntime (no custom-op library) with the fidelity stated below on held-out
inputs (never the calibration samples).

Mean cosine similarity of the outputs to FP32 must reach (measured values in the notes of the
pull request sit above these with margin):

================================================  ======  =======
preset                                            CNN     encoder
================================================  ======  =======
BF16, FP16, INT16_CNN_DEFAULT                     0.9999  0.9999
BFP16, MX9, MXINT8, BF16_BFP16, BF16_MXINT8       0.999   0.999
A16W8, S16S8_ASWS, U16S8_AAWS, MX9_INT8           0.999   0.999
XINT8, A8W8, S8S8, U8S8, U8U8_AAWA,               0.995   0.995
INT8_CNN_DEFAULT, INT8/INT16_TRANSFORMER_DEFAULT
MX6, MXFP8E4M3, MXFP6E2M3                         0.99    0.98
MXFP8E5M2, MXFP6E3M2                              0.98    0.95
MXFP4E2M1                                         0.93    0.85
MX4                                               0.85    0.75
================================================  ======  =======

Top-1 agreement with FP32 on the CNN is also required: >= 0.9 for presets of 8 bits and more,
>= 0.8 for the 6-bit ones (MX6, MXFP6*), none for the 4-bit ones.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import ryzen_nb
from ryzen_nb.quantization import PRESETS
from ryzen_nb.testing import bert_encoder, random_images, random_tokens
from tests.helpers import session

THRESHOLDS = {
    **dict.fromkeys(["BF16", "FP16", "INT16_CNN_DEFAULT"], (0.9999, 0.9999)),
    **dict.fromkeys(["BFP16", "MX9", "MXINT8", "BF16_BFP16", "BF16_MXINT8", "A16W8", "S16S8_ASWS", "U16S8_AAWS",
                     "MX9_INT8"], (0.999, 0.999)),
    **dict.fromkeys(["XINT8", "A8W8", "S8S8", "U8S8", "U8U8_AAWA", "INT8_CNN_DEFAULT", "INT8_TRANSFORMER_DEFAULT",
                     "INT16_TRANSFORMER_DEFAULT"], (0.995, 0.995)),
    **dict.fromkeys(["MX6", "MXFP8E4M3", "MXFP6E2M3"], (0.99, 0.98)),
    **dict.fromkeys(["MXFP8E5M2", "MXFP6E3M2"], (0.98, 0.95)),
    "MXFP4E2M1": (0.93, 0.85),
    "MX4": (0.85, 0.75),
}
AGREEMENT = {**dict.fromkeys(["MX6", "MXFP6E3M2", "MXFP6E2M3"], 0.8), "MX4": 0.0, "MXFP4E2M1": 0.0}


def test_every_preset_has_a_threshold() -> None:
    assert set(THRESHOLDS) == set(PRESETS)


@pytest.fixture(scope="module")
def cnn():
    from ryzen_nb.testing import resnet_cnn

    model = resnet_cnn(seed=0)  # ResNet18 layout (2, 2, 2, 2), width 16, 32x32 inputs
    data = random_images(64, size=32, seed=1)
    return model, data[:32], data[32:], "input"


@pytest.fixture(scope="module")
def encoder():
    model = bert_encoder(seed=0, layers=4, hidden=128, heads=4, seq_len=32)
    data = random_tokens(64, seq_len=32, seed=1)
    return model, data[:32], data[32:], "input_ids"


def _outputs(model: onnx.ModelProto, name: str, data: np.ndarray) -> np.ndarray:
    s = session(model)
    return np.concatenate([s.run(None, {name: data[i : i + 1]})[0] for i in range(len(data))])


def _check(setup, preset: str, column: int) -> None:
    model, calib, held_out, name = setup
    summary = ryzen_nb.quantize(model, None, preset, calib, progress=False)
    q = summary.model
    # plain onnxruntime: standard domain plus our model-local functions, nothing else
    assert {n.domain for n in q.graph.node} <= {"", "ryzen_nb"}
    assert {f.domain for f in q.functions} <= {"ryzen_nb"}
    reference = _outputs(model, name, held_out)
    quantized = _outputs(q, name, held_out)
    cos = np.sum(reference * quantized, axis=1) / (np.linalg.norm(reference, axis=1) * np.linalg.norm(quantized, axis=1))
    assert cos.mean() >= THRESHOLDS[preset][column], f"{preset}: mean cosine {cos.mean():.5f}"
    if column == 0:
        agreement = np.mean(reference.argmax(1) == quantized.argmax(1))
        assert agreement >= AGREEMENT.get(preset, 0.9), f"{preset}: top-1 agreement {agreement:.3f}"
    meta = {p.key: p.value for p in q.metadata_props}
    assert meta["ryzen_nb.preset"] == preset and "ryzen_nb.formats" in meta and meta["ryzen_nb.version"]


@pytest.mark.parametrize("preset", list(PRESETS))
def test_cnn(cnn, preset: str) -> None:
    _check(cnn, preset, 0)


@pytest.mark.parametrize("preset", list(PRESETS))
def test_encoder(encoder, preset: str) -> None:
    _check(encoder, preset, 1)
