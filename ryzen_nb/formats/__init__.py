"""The numeric formats of ryzen-nb — one registry that quantizer, emulator and widgets share.

>>> import numpy as np
>>> from ryzen_nb import formats
>>> "BFP16" in formats.names()
True
>>> x = np.array([[0.1, -2.5, 3.0, 0.0, 1e-3, 7.0, -0.75, 2.0]], dtype=np.float32)
>>> formats.quantize_dequantize(x, "BFP16", axis=1)[0, :3]
array([ 0.125, -2.5  ,  3.   ], dtype=float32)
>>> formats.get("MXFP4E2M1").info.bits_per_element
4.25

Every format provides the numpy reference (:meth:`NumericFormat.quantize_dequantize`,
:meth:`~NumericFormat.quantize`, :meth:`~NumericFormat.dequantize`), a lowering to standard ONNX
operators (:meth:`~NumericFormat.lower`) that plain onnxruntime executes, and metadata
(:attr:`~NumericFormat.info`). :func:`qdq_model` wraps a lowering in a one-node-in, one-out model.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from ryzen_nb.formats.base import (
    FormatInfo,
    NumericFormat,
    QuantizedTensor,
    ScaleKind,
    get,
    is_power_of_two,
    names,
    register,
)
from ryzen_nb.formats.bfp import BFP_FORMATS
from ryzen_nb.formats.floating import FLOAT_FORMATS
from ryzen_nb.formats.integer import INTEGER_FORMATS, IntegerFormat, check_power_of_two_scale
from ryzen_nb.formats.mx import MX_FORMATS
from ryzen_nb.formats.rounding import Rounding
from ryzen_nb.graph.builder import GraphBuilder

__all__ = [
    "FormatInfo",
    "IntegerFormat",
    "NumericFormat",
    "QuantizedTensor",
    "Rounding",
    "ScaleKind",
    "check_power_of_two_scale",
    "get",
    "is_power_of_two",
    "names",
    "qdq_model",
    "quantize",
    "quantize_dequantize",
    "table",
]

register(*INTEGER_FORMATS, *FLOAT_FORMATS, *BFP_FORMATS, *MX_FORMATS)


def quantize_dequantize(
    x: Any,
    name: str,
    *,
    axis: int = 1,
    scale: Any = None,
    zero_point: Any = None,
    rounding: Any = None,
    **options: Any,
) -> np.ndarray:
    """The float32 values ``x`` takes in format ``name`` (numpy reference).

    ``axis`` is the channel axis of per-channel scales (integer and float formats) or the axis
    blocks run along (block formats). Block formats derive their shared scales from the data;
    integer formats take ``scale``/``zero_point`` (derived from the data's range when omitted).
    ``rounding=None`` means the format's default (ties to even everywhere, as in Quark's presets);
    ``"half_up"`` (DPU_ROUND) and ``"half_away"`` (STD_ROUND) where implementations differ.
    """
    return get(name, **options).quantize_dequantize(x, axis=axis, scale=scale, zero_point=zero_point, rounding=rounding)


def quantize(
    x: Any, name: str, *, axis: int = 1, scale: Any = None, zero_point: Any = None, rounding: Any = None, **options: Any
) -> QuantizedTensor:
    """``x`` in the stored form of format ``name``: codes plus scales or shared exponents."""
    return get(name, **options).quantize(x, axis=axis, scale=scale, zero_point=zero_point, rounding=rounding)


def qdq_model(
    name: str,
    shape: Any,
    *,
    axis: int = 1,
    scale: Any = None,
    zero_point: Any = None,
    rounding: Any = None,
    **options: Any,
) -> onnx.ModelProto:
    """A model ``y = quantize_dequantize(x)`` built from the format's ONNX lowering.

    ``shape`` may hold ``None`` for dynamic dimensions (block formats read shapes at run time).
    """
    fmt = get(name, **options)
    dims = list(shape)
    b = GraphBuilder()
    out = fmt.lower(b, "x", shape=dims, axis=axis, scale=scale, zero_point=zero_point, rounding=rounding)
    b.op("Identity", out, outputs=["y"])
    return b.to_model(
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
        name=f"{fmt.name}_qdq",
    )


def table() -> Any:
    """Metadata of every format as a pandas DataFrame (one row per format)."""
    import pandas as pd

    rows = [get(name).info.as_dict() for name in names()]
    return pd.DataFrame(rows).set_index("name")
