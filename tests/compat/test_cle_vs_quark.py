"""ryzen-nb's cross-layer equalization against AMD Quark's own, on the weights Quark 0.13 gave
(tests/compat/data/quark_cle.npz, written by make_quark_cle.py where amd-quark is installed) for two
models with every pattern Quark's ``include_cle`` handles: Conv -> Relu -> Conv pairs with biases large and
small against their weights, a Conv -> depthwise -> pointwise triplet, a Pad and a ReduceMean between two
Convs, a dead channel, a Gemm pair; and a stem Conv whose channels reach a BatchNormalization through
pools and a Concat (Quark's stem equalization). Each equalized weight and bias must be Quark's to float32
rounding (ryzen-nb works in float64, Quark in float32), after one sweep and after two."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from ryzen_nb.algorithms import cross_layer_equalize
from tests.helpers import run

DATA = Path(__file__).with_name("data")
QUARK = np.load(DATA / "quark_cle.npz")
MODELS = {label: onnx.load(DATA / f"quark_cle_{label}.onnx") for label in ("patterns", "stem")}


def _weights(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


@pytest.mark.parametrize("steps", [1, 2])
@pytest.mark.parametrize("label", ["patterns", "stem"])
def test_cle_gives_quarks_weights(label: str, steps: int) -> None:
    model = MODELS[label]
    equalized, report = cross_layer_equalize(model, steps=steps)
    if label == "patterns":
        assert report.pairs == [("c0", "c1"), ("c1", "dw"), ("dw", "pw"), ("pw", "c2"), ("c2", "c3"), ("g0", "g1")]
        assert report.triplets == [("c1", "dw", "pw")] and report.stem is None
    else:
        assert report.pairs == [("c1", "c2")] and report.stem == "stem" and report.stem_batchnorms == ["bn", "bn"]
    assert report.sweeps == steps
    got = _weights(equalized)
    for name in _weights(model):
        want = QUARK[f"{label}/steps{steps}/{name}"]
        np.testing.assert_allclose(got[name], want, rtol=0, atol=float(np.abs(want).max()) * 2e-6, err_msg=name)
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(run(equalized, x=x), run(model, x=x), rtol=1e-4, atol=1e-4)


def test_the_fixture_holds_what_it_claims() -> None:
    """Quark moved every layer's weights, a second sweep moved them again, the first layer's bias is large
    against its weights (the shrink factor's branch for big biases), and the stem's scales reached both
    halves of the BatchNormalization."""
    original = _weights(MODELS["patterns"])
    for name in ("c0.w", "c1.w", "dw.w", "pw.w", "c2.w", "c3.w", "g0.w", "g1.w", "c0.b", "c1.b", "dw.b"):
        one, two = QUARK[f"patterns/steps1/{name}"], QUARK[f"patterns/steps2/{name}"]
        assert not np.allclose(one, original[name], rtol=1e-3) and not np.array_equal(one, two), name
    assert np.abs(original["c0.b"]).max() > 10 > np.abs(original["c1.b"]).max() * 100
    assert (original["c2.w"][3] == 0).all()
    stem = _weights(MODELS["stem"])
    for name in ("stem.w", "stem.b", "bn.gamma", "bn.mean"):
        assert not np.allclose(QUARK[f"stem/steps1/{name}"], stem[name], rtol=1e-3), name
    gamma = QUARK["stem/steps1/bn.gamma"] / stem["bn.gamma"]
    np.testing.assert_allclose(gamma[:8], gamma[8:], rtol=1e-6)  # the same scales at offsets 0 and 8
    assert gamma.min() < 1 / 10  # weak channels scaled up by more than 10 (at most 16)
