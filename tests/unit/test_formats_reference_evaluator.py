"""Integer QuantizeLinear/DequantizeLinear semantics agree with onnx.reference.ReferenceEvaluator.

The reference evaluator is ONNX's executable specification. It mishandles values outside the
integer range (it casts before saturating), so inputs here stay finite and within range; saturation
and NaN are covered against onnxruntime in test_formats_lowering.py.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from ryzen_nb import formats
from ryzen_nb.graph import make_model
from tests.helpers import assert_same_bits

STANDARD = ["int4", "uint4", "int8", "uint8", "int16", "uint16"]


def qdq_reference_model(fmt, scale: np.ndarray, zero_point: np.ndarray, axis: int, shape):
    attrs = {"axis": axis} if scale.ndim else {}
    zp = numpy_helper.from_array(zero_point.astype(fmt.storage_dtype), "zp")
    graph = helper.make_graph(
        [
            helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], **attrs),
            helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"], **attrs),
        ],
        "qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape), helper.make_tensor_value_info("q", fmt.onnx_type, shape)],
        initializer=[numpy_helper.from_array(scale.astype(np.float32), "s"), zp],
    )
    return make_model(graph)


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("name", STANDARD)
def test_qdq_matches_reference_evaluator(name: str, per_channel: bool) -> None:
    fmt = formats.get(name)
    rng = np.random.default_rng(5)
    shape, axis = (4, 6, 5), 1
    if per_channel:
        scale = rng.uniform(0.01, 0.5, size=shape[axis]).astype(np.float32)
        zp = rng.integers(fmt.qmin, fmt.qmax + 1, size=shape[axis])
        bshape = (1, -1, 1)
    else:
        scale = np.array(rng.uniform(0.01, 0.5), np.float32)
        zp = np.array(rng.integers(fmt.qmin, fmt.qmax + 1))
        bshape = ()
    # values within the representable range, including exact ties (k + 0.5) * scale
    codes = rng.integers(fmt.qmin, fmt.qmax + 1, size=shape)
    x = ((codes - zp.reshape(bshape)) + rng.choice([0.0, 0.5, 0.25, -0.5], size=shape)) * scale.reshape(bshape)
    x = np.clip(x, (fmt.qmin - zp.reshape(bshape)) * scale.reshape(bshape), (fmt.qmax - zp.reshape(bshape)) * scale.reshape(bshape))
    x = x.astype(np.float32)

    y_ref, q_ref = ReferenceEvaluator(qdq_reference_model(fmt, scale, zp, axis, shape)).run(None, {"x": x})
    q = fmt.quantize(x, axis=axis, scale=scale, zero_point=zp)
    np.testing.assert_array_equal(q.codes.astype(np.int64), np.asarray(q_ref).astype(np.int64))
    assert_same_bits(fmt.quantize_dequantize(x, axis=axis, scale=scale, zero_point=zp), y_ref, name)


def test_int32_dequantize_matches_reference_evaluator() -> None:
    """int32 is ONNX's bias type: DequantizeLinear only (QuantizeLinear has no int32 output)."""
    rng = np.random.default_rng(9)
    codes = rng.integers(-(2**24), 2**24, size=50).astype(np.int32)  # exact in float32 too
    scale = np.float32(0.0123)
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["q", "s"], ["y"])],
        "dq",
        [helper.make_tensor_value_info("q", TensorProto.INT32, [50])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [50])],
        initializer=[numpy_helper.from_array(np.array(scale), "s")],
    )
    y_ref = ReferenceEvaluator(make_model(graph)).run(None, {"q": codes})[0]
    q = formats.QuantizedTensor("int32", codes, scale=np.array(scale), zero_point=np.array(0, np.int32))
    assert_same_bits(q.dequantize(), y_ref)


def test_int4_codes_are_ml_dtypes() -> None:
    q = formats.quantize(np.array([0.5, -0.5, 7.0], np.float32), "int4", scale=0.5)
    assert q.codes.dtype == ml_dtypes.int4
    np.testing.assert_array_equal(q.codes.astype(np.int8), [1, -1, 7])
