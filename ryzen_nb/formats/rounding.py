"""Rounding of a value to an integer, the one place where implementations of a format differ.

Three ties rules matter for Ryzen AI (docs/npu-numerics.md#rounding-and-saturation):

=============  ===================  ===============================  =========================
``Rounding``   XIR / VART name      AIE API mode                     Quark ``rounding_mode``
=============  ===================  ===============================  =========================
HALF_EVEN      ``PY3_ROUND``        ``conv_even``                    2
HALF_UP        ``DPU_ROUND``        ``positive_inf`` (half to +inf)  1
HALF_AWAY      ``STD_ROUND``        ``symmetric_inf``                0
=============  ===================  ===============================  =========================

Each rule is written once as a numpy function and once as ONNX nodes, using the same IEEE
operations in the same order, so the two agree bit for bit.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from ryzen_nb.errors import FormatError, UnknownNameError

if TYPE_CHECKING:
    from ryzen_nb.graph.builder import GraphBuilder

__all__ = ["Rounding"]

_ALIASES = {
    "half_even": "half_even",
    "even": "half_even",
    "rne": "half_even",
    "nearest_even": "half_even",
    "py3_round": "half_even",
    "conv_even": "half_even",
    "2": "half_even",
    "half_up": "half_up",
    "dpu_round": "half_up",
    "positive_inf": "half_up",
    "1": "half_up",
    "half_away": "half_away",
    "away": "half_away",
    "std_round": "half_away",
    "symmetric_inf": "half_away",
    "nearest": "half_away",  # microxcaling's name for half-away-from-zero
    "0": "half_away",
}


class Rounding(str, Enum):
    """Ties rule used when a value is rounded to an integer (or to a format's grid)."""

    HALF_EVEN = "half_even"  #: ties to even (IEEE default, ONNX Round/QuantizeLinear, PY3_ROUND)
    HALF_UP = "half_up"  #: ties toward +infinity (DPU_ROUND, the XINT8 NPU requantizer)
    HALF_AWAY = "half_away"  #: ties away from zero (STD_ROUND, Quark op default 0)

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: Any, argument: str = "rounding") -> Rounding:
        """Accept a ``Rounding``, its value, an XIR/AIE name or Quark's integer ``rounding_mode``."""
        if isinstance(value, Rounding):
            return value
        if isinstance(value, bool) or not isinstance(value, (str, int, np.integer)):
            raise FormatError(
                f"{argument} must be one of {[r.value for r in cls]} (or DPU_ROUND/PY3_ROUND/STD_ROUND, "
                f"or Quark's rounding_mode 0/1/2); got {value!r} of type {type(value).__name__}."
            )
        key = str(value).strip().lower()
        if key not in _ALIASES:
            raise UnknownNameError(
                f"{argument} mode", value, [r.value for r in cls] + ["DPU_ROUND", "PY3_ROUND", "STD_ROUND"]
            )
        return cls(_ALIASES[key])

    # -- numpy ---------------------------------------------------------------------------------
    def apply(self, v: np.ndarray) -> np.ndarray:
        """Round ``v`` (float array) to integers, returned in ``v``'s float dtype."""
        if self is Rounding.HALF_EVEN:
            return np.rint(v)
        if self is Rounding.HALF_UP:
            return _half_up(v)
        magnitude = _half_up(np.abs(v))
        # sign(v) * 0 would give -0 for small negatives but +0 for -0 (sign(-0) = 0); return +0
        # for every zero so the rule is idempotent, bit for bit.
        return np.where(magnitude == 0, v.dtype.type(0), np.sign(v) * magnitude)

    # -- ONNX --------------------------------------------------------------------------------
    def lower(self, b: GraphBuilder, v: str, dtype: Any = np.float32) -> str:
        """Emit nodes rounding tensor ``v`` exactly as :meth:`apply` does."""
        if self is Rounding.HALF_EVEN:
            return b.op("Round", v)
        if self is Rounding.HALF_UP:
            return _lower_half_up(b, v, dtype)
        magnitude = _lower_half_up(b, b.op("Abs", v), dtype)
        zero = b.const(np.asarray(0, dtype=dtype), hint="zero")
        return b.op("Where", b.op("Equal", magnitude, zero), zero, b.op("Mul", b.op("Sign", v), magnitude))


# floor(v + 0.5) is *not* half-up rounding: for v = 0.5 - 2**-25 the sum rounds to 1.0. The
# fraction v - floor(v) may itself be rounded, but never across 0.5 (0.5 is representable and
# fractions just below it are exact), so comparing it with 0.5 decides correctly.
def _half_up(v: np.ndarray) -> np.ndarray:
    f = np.floor(v)
    return f + ((v - f) >= v.dtype.type(0.5)).astype(v.dtype)


def _lower_half_up(b: GraphBuilder, v: str, dtype: Any) -> str:
    f = b.op("Floor", v)
    up = b.op("GreaterOrEqual", b.op("Sub", v, f), b.const(np.asarray(0.5, dtype=dtype), hint="half"))
    to = 11 if np.dtype(dtype) == np.float64 else 1  # TensorProto.DOUBLE / FLOAT
    return b.op("Add", f, b.op("Cast", up, to=to))
