"""Element rounding (bf16, fp16, fp8, fp6, fp4) agrees with ml_dtypes, in numpy and in ONNX.

ml_dtypes casts with round-to-nearest-even. Our policy on top of it: the narrow types saturate
(overflow and Inf clamp to ±max, as ONNX Cast(saturate=1) and the OCP MX spec); bf16/fp16 keep IEEE
overflow to Inf. So the expected value is ``ml_dtypes(clip(x))`` for narrow types, ``ml_dtypes(x)``
for bf16/fp16.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from ryzen_nb.formats.elements import ELEMENTS, FloatElement
from ryzen_nb.formats.rounding import Rounding
from ryzen_nb.graph import GraphBuilder
from tests.helpers import assert_same_bits, run

FLOAT_ELEMENTS = [e for e in ELEMENTS.values() if isinstance(e, FloatElement)]


def all_values(e: FloatElement) -> np.ndarray:
    """Every finite value of the element type, ascending, as float64."""
    if e.bits <= 8:
        codes = np.arange(2 ** min(e.bits, 8), dtype=np.uint8)
    else:
        codes = np.arange(2**16, dtype=np.uint16)
    with np.errstate(invalid="ignore"):
        values = codes.view(e.ml_dtype).astype(np.float64)
    return np.unique(values[np.isfinite(values)])


def edge_cases(e: FloatElement) -> np.ndarray:
    v = all_values(e)
    mids = (v[:-1] + v[1:]) / 2  # exact ties (representable in float32 for all these types)
    f32 = np.float32
    cases = [v, mids]
    mids32 = mids.astype(f32)
    cases += [np.nextafter(mids32, f32(np.inf)), np.nextafter(mids32, f32(-np.inf))]
    big = np.float64(e.max_normal)
    with np.errstate(over="ignore"):
        cases.append(np.array([big * 1.0001, big * 1.5, big * 2, 3.0e38, -3.0e38, -big * 1.7]).astype(f32))
    cases.append(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, 2**-126, 2**-149], dtype=f32))
    return np.concatenate([np.asarray(c, dtype=f32) for c in cases])


def expected(e: FloatElement, x: np.ndarray) -> np.ndarray:
    clipped = np.clip(x, -e.max_normal, e.max_normal) if e.saturating else x
    with np.errstate(over="ignore"):
        out = clipped.astype(e.ml_dtype).astype(np.float32)
    # fp6/fp4 have no NaN encoding (ml_dtypes maps NaN to a number); as a float32 value NaN stays NaN
    return np.where(np.isnan(x), np.float32(np.nan), out)


def onnx_round(e: FloatElement, x: np.ndarray, rounding: Rounding) -> np.ndarray:
    b = GraphBuilder()
    b.op("Identity", e.lower_round(b, "x", rounding), outputs=["y"])
    model = b.to_model(
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])],
    )
    return run(model, x=x)


@pytest.fixture(scope="module")
def random_values() -> np.ndarray:
    rng = np.random.default_rng(1234)
    scales = 2.0 ** rng.integers(-30, 30, size=200_000)
    return (rng.standard_normal(200_000) * scales).astype(np.float32)


@pytest.mark.parametrize("e", FLOAT_ELEMENTS, ids=lambda e: e.name)
def test_numpy_rounding_matches_ml_dtypes(e: FloatElement, random_values: np.ndarray) -> None:
    for x in (edge_cases(e), random_values):
        assert_same_bits(e.round(x), expected(e, x), e.name)


@pytest.mark.parametrize("e", FLOAT_ELEMENTS, ids=lambda e: e.name)
def test_binade_rounding_matches_ml_dtypes(e: FloatElement, random_values: np.ndarray) -> None:
    """The rule used for fp6/fp4 in ONNX and for every non-default ties rule is the cast itself."""
    if not e.saturating:
        pytest.skip("the binade rule serves the saturating element types")
    for x in (edge_cases(e), random_values):
        assert_same_bits(e._binade_round(x, Rounding.HALF_EVEN), expected(e, x), e.name)


@pytest.mark.parametrize("e", FLOAT_ELEMENTS, ids=lambda e: e.name)
def test_onnx_rounding_matches_ml_dtypes(e: FloatElement, random_values: np.ndarray) -> None:
    for x in (edge_cases(e), random_values):
        assert_same_bits(onnx_round(e, x, Rounding.HALF_EVEN), expected(e, x), e.name)


@pytest.mark.parametrize("rounding", [Rounding.HALF_UP, Rounding.HALF_AWAY], ids=str)
@pytest.mark.parametrize("e", [e for e in FLOAT_ELEMENTS if e.saturating], ids=lambda e: e.name)
def test_other_ties_rules(e: FloatElement, rounding: Rounding, random_values: np.ndarray) -> None:
    x = edge_cases(e)
    ref = e.round(x, rounding)
    assert_same_bits(onnx_round(e, x, rounding), ref, f"{e.name} {rounding}")
    assert_same_bits(onnx_round(e, random_values, rounding), e.round(random_values, rounding))
    # Away from ties every rule agrees with the cast; at ties they pick the neighbour they promise.
    v = all_values(e)
    mids = ((v[:-1] + v[1:]) / 2).astype(np.float32)
    lower, upper = v[:-1].astype(np.float32), v[1:].astype(np.float32)
    got = e.round(mids, rounding)
    if rounding is Rounding.HALF_UP:
        np.testing.assert_array_equal(got, upper)
    else:
        np.testing.assert_array_equal(got, np.where(mids > 0, upper, lower))
    not_tie = np.isin(x, mids, invert=True) & np.isfinite(x)
    np.testing.assert_array_equal(e.round(x[not_tie], rounding), expected(e, x[not_tie]))


def test_saturation_policy() -> None:
    e4m3, e5m2, bf16 = ELEMENTS["float8_e4m3fn"], ELEMENTS["float8_e5m2"], ELEMENTS["bfloat16"]
    x = np.array([np.inf, -np.inf, 1e6, np.nan], np.float32)
    np.testing.assert_array_equal(e4m3.round(x)[:3], [448, -448, 448])
    np.testing.assert_array_equal(e5m2.round(x)[:3], [57344, -57344, 57344])
    assert np.isnan(e4m3.round(x)[3]) and np.isnan(e5m2.round(x)[3])
    np.testing.assert_array_equal(bf16.round(x)[:2], [np.inf, -np.inf])  # IEEE: Inf stays Inf
    assert np.isnan(bf16.round(x)[3])
