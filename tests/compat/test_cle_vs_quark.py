"""ryzen-nb's cross-layer equalization against AMD Quark's own, on the weights Quark 0.13's CLE gave
(tests/compat/data/quark_cle.npz, written by make_quark_cle.py where amd-quark is installed) for a model
with every pattern Quark's CLE handles: Conv -> Relu -> Conv pairs with biases large and small against
their weights, a Conv -> depthwise -> pointwise triplet, a Pad and a ReduceMean between two Convs, a dead
channel, a Gemm pair. Each equalized weight and bias must be Quark's to float32 rounding (ryzen-nb works
in float64, Quark in float32), after one sweep and after two."""

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
MODEL = onnx.load(DATA / "quark_cle.onnx")
ORIGINAL = {t.name: numpy_helper.to_array(t) for t in MODEL.graph.initializer}


@pytest.mark.parametrize("steps", [1, 2])
def test_cle_gives_quarks_weights(steps: int) -> None:
    equalized, report = cross_layer_equalize(MODEL, steps=steps)
    assert report.pairs == [("c0", "c1"), ("c1", "dw"), ("dw", "pw"), ("pw", "c2"), ("c2", "c3"), ("g0", "g1")]
    assert report.triplets == [("c1", "dw", "pw")] and report.sweeps == steps
    got = {t.name: numpy_helper.to_array(t) for t in equalized.graph.initializer}
    for name in ORIGINAL:
        want = QUARK[f"steps{steps}/{name}"]
        np.testing.assert_allclose(got[name], want, rtol=0, atol=float(np.abs(want).max()) * 2e-6, err_msg=name)
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(run(equalized, x=x), run(MODEL, x=x), rtol=1e-4, atol=1e-4)


def test_the_fixture_holds_what_it_claims() -> None:
    """Quark moved every layer's weights, a second sweep moved them again, and the first layer's bias is
    large against its weights (the shrink factor's branch for big biases)."""
    for name in ("c0.w", "c1.w", "dw.w", "pw.w", "c2.w", "c3.w", "g0.w", "g1.w", "c0.b", "c1.b", "dw.b"):
        one, two = QUARK[f"steps1/{name}"], QUARK[f"steps2/{name}"]
        assert not np.allclose(one, ORIGINAL[name], rtol=1e-3) and not np.array_equal(one, two), name
    assert np.abs(ORIGINAL["c0.b"]).max() > 10 > np.abs(ORIGINAL["c1.b"]).max() * 100
    assert (ORIGINAL["c2.w"][3] == 0).all()
