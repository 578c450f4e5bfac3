"""Element types: how one value is rounded inside a float format or an MX block.

The IEEE-like types (bfloat16, float16) overflow to Inf; the narrow ones (float8/6/4) saturate to
their largest normal, as ONNX ``Cast(saturate=1)`` and the OCP MX spec (docs/npu-numerics.md#ocp-mx-formats) do. NaN stays NaN.

Numerics: ties-to-even rounding is ml_dtypes' cast. Other ties rules (MX elements, where Quark and
microxcaling differ from the OCP spec) use the *binade* rule: the grid step of a value is
``2**(max(floor(log2|v|), emin) - mbits)``; the value is divided by its step, rounded, and
multiplied back — exact in float32 because steps are powers of two.
ONNX: ``Cast`` for bf16/fp16; for the narrow types the binade rule, with the binade's power of two
computed exactly by ``ufp`` (see ``_blocks``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
from onnx import TensorProto

from ryzen_nb.formats._blocks import onnx_ufp
from ryzen_nb.formats.rounding import Rounding
from ryzen_nb.graph.builder import GraphBuilder

__all__ = ["FloatElement", "IntElement", "ELEMENTS"]


@dataclass(frozen=True)
class FloatElement:
    name: str
    ebits: int
    mbits: int
    bias: int
    max_normal: float
    saturating: bool  #: overflow (and Inf) clamps to ±max_normal instead of becoming Inf
    ml_dtype: Any
    onnx_type: int | None  #: a type onnxruntime can Cast to (ties to even), if any

    @property
    def bits(self) -> int:
        return 1 + self.ebits + self.mbits

    @property
    def has_nan(self) -> bool:
        """Does the type encode NaN? (fp6/fp4 do not: OCP MX marks NaN in the block scale.)"""
        return self.bits >= 8

    @property
    def emin(self) -> int:
        """Unbiased exponent of the smallest normal."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        """Unbiased exponent of the largest normal."""
        return int(np.floor(np.log2(self.max_normal)))

    # -- numpy --------------------------------------------------------------------------------
    def round(self, v: np.ndarray, rounding: Rounding = Rounding.HALF_EVEN) -> np.ndarray:
        """Float32 values of ``v`` (float32) rounded to this element type."""
        if rounding is Rounding.HALF_EVEN:
            if self.saturating:
                v = np.clip(v, -self.max_normal, self.max_normal)
            with np.errstate(over="ignore"):
                out = v.astype(self.ml_dtype).astype(np.float32)
            if not self.has_nan:
                out = np.where(np.isnan(v), v, out)  # fp6/fp4 have no NaN code; keep NaN as a value
            return out
        return self._binade_round(v, rounding)

    def _binade_round(self, v: np.ndarray, rounding: Rounding) -> np.ndarray:
        v = np.clip(v, -self.max_normal, self.max_normal)  # saturate first; NaN stays NaN
        _, exponent = np.frexp(np.abs(v))
        e = np.maximum(exponent.astype(np.int32) - 1, self.emin)
        step = np.ldexp(np.float32(1.0), e - self.mbits).astype(np.float32)
        return (rounding.apply(v / step) * step).astype(np.float32)

    def encode(self, values: np.ndarray) -> np.ndarray:
        """Stored codes (an ml_dtypes array) of values already on this type's grid."""
        return values.astype(self.ml_dtype)

    # -- ONNX ---------------------------------------------------------------------------------------
    def lower_round(self, b: GraphBuilder, v: str, rounding: Rounding = Rounding.HALF_EVEN) -> str:
        if not self.saturating:
            # bf16/fp16: onnxruntime's Cast is fast and rounds to nearest-even, keeping Inf/NaN
            return b.op("Cast", b.op("Cast", v, to=self.onnx_type), to=TensorProto.FLOAT)
        # Narrow types: the binade rule with an exact power of two from ufp (its Cast to float8 is
        # scalar code, several times slower). After saturation |v| <= 57344, inside ufp's range.
        clipped = b.clip(v, -self.max_normal, self.max_normal)
        binade = b.op("Max", onnx_ufp(b, clipped), b.const(np.float32(2.0**self.emin)))
        step = b.op("Mul", binade, b.const(np.float32(2.0**-self.mbits)))
        return b.op("Mul", rounding.lower(b, b.op("Div", clipped, step)), step)


@dataclass(frozen=True)
class IntElement:
    """A fixed-point element: ``k / 2**frac_bits`` with k in [-2**(bits-1), 2**(bits-1)-1] (MXINT8)."""

    name: str
    bits: int
    frac_bits: int

    @property
    def emax(self) -> int:
        return self.bits - 2 - self.frac_bits  # 0 for MXINT8: values in [-2, 2)

    @property
    def max_normal(self) -> float:
        return (2 ** (self.bits - 1) - 1) / 2**self.frac_bits

    def round(self, v: np.ndarray, rounding: Rounding = Rounding.HALF_EVEN) -> np.ndarray:
        k = np.clip(rounding.apply(v * np.float32(2**self.frac_bits)), -(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1)
        return (k / np.float32(2**self.frac_bits)).astype(np.float32)

    def encode(self, values: np.ndarray) -> np.ndarray:
        return np.rint(values * 2**self.frac_bits).astype(np.int8)

    def lower_round(self, b: GraphBuilder, v: str, rounding: Rounding = Rounding.HALF_EVEN) -> str:
        k = rounding.lower(b, b.op("Mul", v, b.const(np.float32(2**self.frac_bits))))
        k = b.clip(k, -(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1)
        return b.op("Div", k, b.const(np.float32(2**self.frac_bits)))


BF16 = FloatElement("bfloat16", 8, 7, 127, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max), False, ml_dtypes.bfloat16, TensorProto.BFLOAT16)
FP16 = FloatElement("float16", 5, 10, 15, 65504.0, False, np.float16, TensorProto.FLOAT16)
E4M3 = FloatElement("float8_e4m3fn", 4, 3, 7, 448.0, True, ml_dtypes.float8_e4m3fn, TensorProto.FLOAT8E4M3FN)
E5M2 = FloatElement("float8_e5m2", 5, 2, 15, 57344.0, True, ml_dtypes.float8_e5m2, TensorProto.FLOAT8E5M2)
E3M2 = FloatElement("float6_e3m2fn", 3, 2, 3, 28.0, True, ml_dtypes.float6_e3m2fn, None)
E2M3 = FloatElement("float6_e2m3fn", 2, 3, 1, 7.5, True, ml_dtypes.float6_e2m3fn, None)
E2M1 = FloatElement("float4_e2m1fn", 2, 1, 1, 6.0, True, ml_dtypes.float4_e2m1fn, None)
INT8_MX = IntElement("int8", 8, 6)

#: every element type by name
ELEMENTS: dict[str, FloatElement | IntElement] = {e.name: e for e in (BF16, FP16, E4M3, E5M2, E3M2, E2M3, E2M1, INT8_MX)}
