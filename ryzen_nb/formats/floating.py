"""Float formats: bfloat16, float16, float8 E4M3FN and E5M2 — an element type used on its own.

Rounding is to nearest, ties to even (the NPU's bf16 conversion, docs/npu-numerics.md#bf16, A14; ONNX Cast).
bfloat16/float16 keep Inf and NaN and overflow to Inf; float8 saturates (overflow and Inf become
±max, NaN stays NaN) like ONNX ``Cast(saturate=1)``. An optional scale (per tensor or per channel)
divides before the cast and multiplies after, as Quark's ExtendedQuantizeLinear does for bf16.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ryzen_nb.errors import FormatError
from ryzen_nb.formats.base import FormatInfo, NumericFormat, QuantizedTensor, ScaleKind, check_positive_finite
from ryzen_nb.formats.elements import BF16, E4M3, E5M2, FP16, FloatElement
from ryzen_nb.formats.rounding import Rounding
from ryzen_nb.graph.builder import GraphBuilder

__all__ = ["FloatFormat", "FLOAT_FORMATS"]

_DESCRIPTIONS = {
    "bfloat16": "bfloat16 (8-bit exponent, 7-bit mantissa); the NPU's BF16 on XDNA2",
    "float16": "IEEE half precision (5-bit exponent, 10-bit mantissa)",
    "float8_e4m3fn": "OCP FP8 E4M3FN (max 448, no Inf), saturating",
    "float8_e5m2": "OCP FP8 E5M2 (max 57344), saturating",
}


@dataclass(frozen=True)
class FloatFormat(NumericFormat):
    element: FloatElement

    @functools.cached_property
    def info(self) -> FormatInfo:  # built once: read thousands of times per quantization
        e = self.element
        return FormatInfo(
            name=e.name,
            family="float",
            description=_DESCRIPTIONS[e.name],
            bits_per_element=float(e.bits),
            element_bits=e.bits,
            scale_kind=ScaleKind.NONE,
            power_of_two_scale=None,
            axis_role="channel",  # only used when an optional per-channel scale is given
            roundings=(Rounding.HALF_EVEN,),
            lowering="Cast, Cast" + (" (saturate=1)" if e.saturating else ""),
            spec="docs/npu-numerics.md#bf16" if e.name == "bfloat16" else "ONNX Cast; OCP FP8",
        )

    def _check_scale(self, x, axis, scale, zero_point, lowering):
        if zero_point is not None and np.any(np.asarray(zero_point) != 0):
            raise FormatError(f"Format {self.name} has no zero point; got zero_point={zero_point!r}. Leave it None.")
        if scale is None:
            return {"scale": None}
        s = np.asarray(scale)
        if s.ndim > 1:
            raise FormatError(f"scale must be a scalar or 1-D (per channel along axis); got shape {s.shape}.")
        check_positive_finite(s, "scale")
        s = s.astype(np.float32).reshape(() if s.size == 1 else (-1,))
        if s.ndim == 1 and not lowering and x.ndim and s.size != x.shape[axis]:
            raise FormatError(
                f"scale has {s.size} entries but x has {x.shape[axis]} channels along axis {axis}."
            )
        return {"scale": s}

    @staticmethod
    def _broadcast(s: np.ndarray, axis: int, rank: int) -> np.ndarray:
        if s.ndim == 0:
            return s
        shape = [1] * rank
        shape[axis] = s.size
        return s.reshape(shape)

    def _quantize_dequantize(self, x, *, axis, scale, rounding):
        if scale is None:
            return self.element.round(x)
        s = self._broadcast(scale, axis, x.ndim)
        return (self.element.round(x / s) * s).astype(np.float32)

    def _quantize(self, x, *, axis, scale, rounding):
        v = x if scale is None else x / self._broadcast(scale, axis, x.ndim)
        codes = self.element.encode(self.element.round(v))
        return QuantizedTensor(self.name, codes, axis=axis if scale is not None and scale.ndim else None, scale=scale)

    def _dequantize(self, q: QuantizedTensor) -> np.ndarray:
        v = q.codes.astype(np.float32)
        if q.scale is None:
            return v
        s = self._broadcast(np.asarray(q.scale, np.float32), q.axis if q.axis is not None else 0, v.ndim)
        return (v * s).astype(np.float32)

    def _lower(self, b: GraphBuilder, x: str, *, rank: int, shape: Any, axis: int, scale: Any, rounding: Rounding) -> str:
        if scale is None:
            return self.element.lower_round(b, x)
        s = b.const(self._broadcast(scale, axis, rank), hint="scale")
        return b.op("Mul", self.element.lower_round(b, b.op("Div", x, s)), s)


FLOAT_FORMATS = [FloatFormat(e) for e in (BF16, FP16, E4M3, E5M2)]
