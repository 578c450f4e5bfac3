"""Building blocks of the kernels' lowerings: small ONNX patterns that compute exactly.

onnxruntime runs what these emit at native speed; every pattern is exact for the values the
kernels feed it (integers in int64, or float64 values far below 2**53), so a lowered kernel equals
its numpy reference bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

from ryzen_nb.graph.builder import GraphBuilder
from ryzen_nb.npu.kernels.base import QuantRef

__all__ = ["F32_EXACT", "ONNX_INT", "Centred", "bf16_round", "centred", "channel_shape", "code_bound", "const", "dequantized",
           "f32_holds", "half_step", "rename_output", "requant_int64", "round_half", "ties_up"]

#: float32 represents every integer below 2**24; one bit of margin for the +0.5 of DPU_ROUND
F32_EXACT = 2.0**23

#: numpy integer dtype of quantized codes -> ONNX element type
ONNX_INT = {np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8,
            np.dtype(np.int16): TensorProto.INT16, np.dtype(np.uint16): TensorProto.UINT16}

_ONNX_FLOAT = {np.dtype(np.float64): TensorProto.DOUBLE, np.dtype(np.float32): TensorProto.FLOAT}


def const(b: GraphBuilder, value: Any, dtype: Any) -> str:
    return b.const(np.asarray(value, dtype=dtype))


def bf16_round(b: GraphBuilder, x: str, to: int = TensorProto.FLOAT) -> str:
    """float32 -> bfloat16 (round to nearest even) -> float32, or float64 (``to``: one Cast fewer
    than a float32 cast again, the same values)."""
    return b.op("Cast", b.op("Cast", x, to=TensorProto.BFLOAT16), to=to)


def round_half(b: GraphBuilder, v: str, rounding: str) -> str:
    """Round float64 ``v`` to integers: DPU_ROUND (``"half_up"``: floor(v + 0.5)) or half to even."""
    if rounding == "half_even":
        return b.op("Round", v)
    return b.op("Floor", b.op("Add", v, const(b, 0.5, np.float64)))


def centred(b: GraphBuilder, codes: str, ref: QuantRef, dtype: Any = np.float64) -> str:
    """``codes - zero_point`` as float64 (default), float32 or int64: exact for 8/16-bit codes. A
    zero point of 0 is no Sub (a pass over the tensor for nothing: 35 of ResNet50 A8W8's Convs)."""
    to = _ONNX_FLOAT.get(np.dtype(dtype), TensorProto.INT64)
    values = b.op("Cast", codes, to=to)
    zp = np.asarray(ref.zero_point).astype(dtype)
    return b.op("Sub", values, const(b, zp, dtype)) if np.any(zp) else values


@dataclass(frozen=True)
class Centred:
    """``codes - zero_point`` (or the product of two such), not emitted yet: A8W8/A16W8
    requantisation emits it in the type its route computes in, float64 or int64, one Cast from the
    codes, where an int64 value would take a second Cast to float64. Exact in both: 8/16-bit codes,
    and products below 2**32."""

    codes: tuple[str, ...]
    refs: tuple[QuantRef, ...]

    def emit(self, b: GraphBuilder, dtype: Any) -> str:
        values = [centred(b, codes, ref, dtype) for codes, ref in zip(self.codes, self.refs)]
        return values[0] if len(values) == 1 else b.op("Mul", *values)


def dequantized(b: GraphBuilder, codes: str, ref: QuantRef, scale: float) -> str:
    """``(codes - zero_point) * scale`` in float32 by one DequantizeLinear: exact for 8/16-bit codes
    and a power-of-two ``scale`` (nothing to round)."""
    zp = np.asarray(np.ravel(ref.zero_point)[0]).astype(ref.dtype)
    return b.op("DequantizeLinear", codes, const(b, scale, np.float32), const(b, zp, ref.dtype))


def f32_holds(bound: float, step_exponent: int) -> bool:
    """Whether float32 holds exactly every multiple of ``2**step_exponent`` up to ``bound`` in
    magnitude, and that value plus DPU_ROUND's 0.5: then sums and products of such values computed
    in float32 have nothing to round, in any order."""
    step = 2.0 ** min(step_exponent, -1)
    return step_exponent > -100 and (bound + 0.5) < F32_EXACT * step


def ties_up(b: GraphBuilder, v: str, step_exponent: int, dtype: Any = np.float32) -> str:
    """``v`` (a multiple of ``2**step_exponent``, held exactly) made ready for a QuantizeLinear,
    which rounds half to even, to round it as DPU_ROUND does, floor(v + 1/2): ties up.

    Adding half a step moves each tie up past the half, and nothing else across one, as no other
    multiple of the step lies within half a step of a half: one Add where Add(1/2) and Floor took
    two passes over the tensor. Integers (``step_exponent`` >= 0) have nothing to round. Float32
    holds the sum wherever :func:`f32_holds` holds ``v``."""
    half = half_step(step_exponent)
    return b.op("Add", v, const(b, half, dtype)) if half else v


def half_step(step_exponent: int) -> float:
    """What :func:`ties_up` adds to a multiple of ``2**step_exponent``: half a step, or 0 for integers."""
    return 2.0 ** (step_exponent - 1) if step_exponent < 0 else 0.0


def code_bound(ref: QuantRef) -> int:
    """The largest |code - zero point| of a quantized tensor's type."""
    info = np.iinfo(ref.dtype)
    zp = int(np.ravel(ref.zero_point)[0])
    return max(abs(info.min - zp), abs(info.max - zp))


def channel_shape(ndim: int, size: int, channel_axis: int) -> list[int]:
    """Shape that broadcasts ``size`` per-channel values along ``channel_axis`` of an ``ndim`` tensor."""
    shape = [1] * ndim
    shape[channel_axis % ndim] = size
    return shape


def requant_int64(b: GraphBuilder, num: str, shift: int) -> str:
    """Round-half-even of ``num / 2**shift`` in int64 (onnxruntime's Div truncates; fixed to floor)."""
    def i64(v: Any) -> str:
        return const(b, v, np.int64)

    if shift <= 0:
        return b.op("Mul", num, i64(2 ** (-shift)))
    d = i64(2**shift)
    q = b.op("Div", num, d)
    r = b.op("Sub", num, b.op("Mul", q, d))
    neg = b.op("Cast", b.op("Less", r, i64(0)), to=TensorProto.INT64)
    q = b.op("Sub", q, neg)
    r = b.op("Add", r, b.op("Mul", neg, d))
    half = i64(2 ** (shift - 1))
    odd = b.op("Equal", b.op("BitwiseAnd", q, i64(1)), i64(1))
    up = b.op("Or", b.op("Greater", r, half), b.op("And", b.op("Equal", r, half), odd))
    return b.op("Add", q, b.op("Cast", up, to=TensorProto.INT64))


def rename_output(nodes: list[onnx.NodeProto], old: str, new: str) -> None:
    """Make the last node writing ``old`` write ``new`` instead (a lowering's result takes the
    name of the tensor it stands for)."""
    for node in reversed(nodes):
        for j, name in enumerate(node.output):
            if name == old:
                node.output[j] = new
                return
    raise AssertionError(f"no node writes {old}")
