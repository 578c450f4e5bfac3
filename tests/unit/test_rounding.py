"""The three ties rules, numpy vs ONNX vs an exact (fractions) definition, on adversarial values."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from onnx import TensorProto, helper

from ryzen_nb.errors import FormatError, UnknownNameError
from ryzen_nb.formats import Rounding
from ryzen_nb.graph import GraphBuilder
from tests.helpers import assert_same_bits, run


def exact(v: float, rule: Rounding) -> float:
    f = Fraction(float(v))
    floor = f.numerator // f.denominator
    frac = f - floor
    if frac != Fraction(1, 2):
        return float(floor + (1 if frac > Fraction(1, 2) else 0))
    if rule is Rounding.HALF_EVEN:
        return float(floor + (floor % 2))
    if rule is Rounding.HALF_UP:
        return float(floor + 1)
    return float(floor + 1 if f > 0 else floor)


def adversarial(dtype) -> np.ndarray:
    base = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 0.5000001, -0.49999997, 4194303.5,
                     8388607.5, 8388609.0, 1e9, -1e9, 0.0, -0.0, 1e-40, -3.7, 3.7, 0.3, -0.3], dtype=dtype)
    near_half = (np.arange(-50, 50, dtype=dtype) + dtype(0.5))
    return np.concatenate([base, near_half, np.nextafter(near_half, dtype(np.inf)), np.nextafter(near_half, dtype(-np.inf))])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rule", list(Rounding), ids=str)
def test_rules_are_exact(rule: Rounding, dtype) -> None:
    v = adversarial(dtype)
    got = rule.apply(v)
    want = np.array([exact(x, rule) for x in v], dtype=dtype)
    np.testing.assert_array_equal(got, want)
    b = GraphBuilder()
    b.op("Identity", rule.lower(b, "v", dtype=dtype), outputs=["r"])
    t = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    model = b.to_model([helper.make_tensor_value_info("v", t, [None])], [helper.make_tensor_value_info("r", t, [None])])
    out = run(model, v=v)
    if dtype == np.float32:
        assert_same_bits(out, got.astype(np.float32), str(rule))
    else:
        assert np.array_equal(out.view(np.uint64), got.view(np.uint64))


def test_parse_names() -> None:
    assert Rounding.parse("DPU_ROUND") is Rounding.HALF_UP
    assert Rounding.parse("py3_round") is Rounding.HALF_EVEN
    assert Rounding.parse("STD_ROUND") is Rounding.HALF_AWAY
    assert Rounding.parse(2) is Rounding.HALF_EVEN  # Quark rounding_mode
    assert Rounding.parse(0) is Rounding.HALF_AWAY
    with pytest.raises(UnknownNameError, match="half_even"):
        Rounding.parse("half-evn")
    with pytest.raises(FormatError, match="rounding must be"):
        Rounding.parse(0.5)
