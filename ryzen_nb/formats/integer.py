"""Integer formats int4/uint4 ... int32/uint32: ``q = saturate(round(x / scale) + zero_point)``.

Scales are per tensor (a scalar) or per channel (1-D along ``axis``), float or power of two
(``scale = 2**-pos``, XINT8, docs/npu-numerics.md#xint8-definition). The ONNX lowering is a QuantizeLinear /
DequantizeLinear pair wherever ONNX can express the format (4, 8 and 16 bits, ties to even);
other rounding rules use an explicit Div/Round/Clip chain ending in the same DequantizeLinear.
32-bit formats are computed in float64 because float32 cannot hold every int32.
NaN quantizes to the lowest code, as onnxruntime's QuantizeLinear does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
from onnx import TensorProto

from ryzen_nb.errors import FormatError
from ryzen_nb.formats.base import (
    FormatInfo,
    NumericFormat,
    QuantizedTensor,
    ScaleKind,
    check_positive_finite,
    is_power_of_two,
)
from ryzen_nb.formats.rounding import Rounding
from ryzen_nb.graph.builder import GraphBuilder

__all__ = ["IntegerFormat", "INTEGER_FORMATS"]

_STORAGE = {
    (4, True): (ml_dtypes.int4, TensorProto.INT4),
    (4, False): (ml_dtypes.uint4, TensorProto.UINT4),
    (8, True): (np.int8, TensorProto.INT8),
    (8, False): (np.uint8, TensorProto.UINT8),
    (16, True): (np.int16, TensorProto.INT16),
    (16, False): (np.uint16, TensorProto.UINT16),
    (32, True): (np.int32, TensorProto.INT32),
    (32, False): (np.uint32, TensorProto.UINT32),
}


@dataclass(frozen=True)
class IntegerFormat(NumericFormat):
    bits: int
    signed: bool

    @property
    def qmin(self) -> int:
        return -(2 ** (self.bits - 1)) if self.signed else 0

    @property
    def qmax(self) -> int:
        return 2 ** (self.bits - 1) - 1 if self.signed else 2**self.bits - 1

    @property
    def storage_dtype(self) -> Any:
        return _STORAGE[(self.bits, self.signed)][0]

    @property
    def onnx_type(self) -> int:
        return _STORAGE[(self.bits, self.signed)][1]

    @property
    def _compute_dtype(self) -> type:
        return np.float64 if self.bits == 32 else np.float32

    @property
    def _native_qdq(self) -> bool:
        """Can a QuantizeLinear/DequantizeLinear pair express this format exactly?"""
        return self.bits <= 16

    @functools.cached_property
    def info(self) -> FormatInfo:  # built once: read thousands of times per quantization
        name = f"{'' if self.signed else 'u'}int{self.bits}"
        return FormatInfo(
            name=name,
            family="integer",
            description=(
                f"{'signed' if self.signed else 'unsigned'} {self.bits}-bit integer [{self.qmin}, {self.qmax}], "
                "scale and zero point per tensor or per channel"
            ),
            bits_per_element=float(self.bits),
            element_bits=self.bits,
            scale_kind=ScaleKind.TENSOR,
            power_of_two_scale=None,
            axis_role="channel",
            roundings=tuple(Rounding),
            default_rounding=Rounding.HALF_EVEN,
            lowering=(
                "QuantizeLinear + DequantizeLinear (other rounding: Div, Round, Clip, Cast, DequantizeLinear)"
                if self._native_qdq
                else "Cast to float64, Div, Round, Clip, Sub, Mul, Cast"
            ),
            spec="docs/npu-numerics.md#xint8, docs/npu-numerics.md#a8w8-and-a16w8",
        )

    # -- scales -------------------------------------------------------------------------------
    def scale_from_range(
        self,
        rmin: Any,
        rmax: Any,
        *,
        symmetric: bool | None = None,
        power_of_two: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Scale and zero point mapping the real range [rmin, rmax] onto this format.

        ``symmetric`` (default: signed formats) uses ``max(|rmin|, |rmax|)`` over the symmetric
        integer range ``[-qmax, qmax]`` (Quark's choice) with zero point 0 for signed formats and
        the mid code (128 for uint8, the XINT8 convention) for unsigned ones. ``power_of_two``
        snaps the scale to the nearest power of two in the log domain, as Quark's ``scale2pos``.
        Works elementwise, so arrays of per-channel ranges give per-channel parameters.
        """
        lo = np.minimum(np.asarray(rmin, dtype=np.float64), 0.0)
        hi = np.maximum(np.asarray(rmax, dtype=np.float64), 0.0)
        if symmetric is None:
            symmetric = self.signed
        if symmetric:
            amax = np.maximum(-lo, hi)
            half_range = (self.qmax - self.qmin) // 2  # 127 for int8 and uint8
            scale = amax / half_range
            zero_point = np.zeros_like(scale) + (0 if self.signed else (self.qmax + 1) // 2)
        else:
            scale = (hi - lo) / (self.qmax - self.qmin)
            zero_point = None
        scale = np.where(scale > 0, scale, 1.0)  # an all-zero range: any scale represents it
        if power_of_two:
            scale = 2.0 ** -np.rint(-np.log2(np.clip(scale, 2.0**-127, 2.0**127)))
        # Ranges of subnormal width would give a scale that underflows float32; the smallest normal
        # float32 keeps 1/scale finite.
        scale = np.maximum(scale, np.finfo(np.float32).tiny).astype(np.float32)
        if zero_point is None:
            zero_point = np.clip(np.rint(self.qmin - lo / scale.astype(np.float64)), self.qmin, self.qmax)
        return scale, np.asarray(zero_point).astype(np.int64)

    def _check_scale(
        self, x: np.ndarray, axis: int | None, scale: Any, zero_point: Any, lowering: bool
    ) -> dict[str, Any]:
        if scale is None:
            if lowering:
                raise FormatError(
                    f"Lowering {self.name} to ONNX needs a scale (and zero_point): they are constants of "
                    "the graph. Compute them with scale_from_range() or calibration."
                )
            if zero_point is not None:
                raise FormatError("zero_point was given without scale; pass both, or neither to derive them from x.")
            finite = x[np.isfinite(x)]
            lo, hi = (finite.min(), finite.max()) if finite.size else (0.0, 0.0)
            s, zp = self.scale_from_range(lo, hi)
            return {"scale": s, "zero_point": zp}
        s = np.asarray(scale)
        if s.ndim > 1:
            raise FormatError(
                f"scale must be a scalar (per tensor) or 1-D (per channel along axis); got shape {s.shape}."
            )
        check_positive_finite(s, "scale")
        s = s.astype(np.float32)
        if s.ndim == 1 and s.size == 1:
            s = s.reshape(())
        if s.ndim == 1 and not lowering and x.ndim and s.size != x.shape[axis]:
            raise FormatError(
                f"scale has {s.size} entries but x has {x.shape[axis]} channels along axis {axis}; "
                "pass one scale per channel, or a scalar for per-tensor quantization."
            )
        if zero_point is None:
            zp = np.zeros(s.shape, dtype=np.int64)
        else:
            zp_raw = np.asarray(zero_point)
            if zp_raw.dtype.kind == "f" and np.any(zp_raw != np.rint(zp_raw)):
                raise FormatError(f"zero_point must hold integers; got {zp_raw!r}.")
            if zp_raw.dtype.kind not in "fiu":
                raise FormatError(f"zero_point must be an integer or integer array; got dtype {zp_raw.dtype}.")
            zp = zp_raw.astype(np.int64)
            if zp.ndim == 1 and zp.size == 1 and s.ndim == 0:
                zp = zp.reshape(())
            if zp.shape != s.shape:
                raise FormatError(f"zero_point has shape {zp.shape} but scale has shape {s.shape}; they must match.")
            if np.any((zp < self.qmin) | (zp > self.qmax)):
                raise FormatError(
                    f"zero_point must lie in the {self.name} range [{self.qmin}, {self.qmax}]; got {zp_raw!r}."
                )
        return {"scale": s, "zero_point": zp}

    # -- numerics -------------------------------------------------------------------------------
    def _broadcast(self, v: np.ndarray, axis: int | None, rank: int) -> np.ndarray:
        if v.ndim == 0 or axis is None:
            return v
        shape = [1] * rank
        shape[axis] = v.size
        return v.reshape(shape)

    def _codes(self, x: np.ndarray, axis: int | None, scale: np.ndarray, zero_point: np.ndarray, rounding: Rounding):
        ct = self._compute_dtype
        s = self._broadcast(scale.astype(ct), axis, x.ndim)
        zp = self._broadcast(zero_point.astype(ct), axis, x.ndim)
        v = x.astype(ct) / s
        q = np.clip(rounding.apply(v) + zp, self.qmin, self.qmax)
        q = np.where(np.isnan(q), ct(self.qmin), q)
        return q.astype(np.int64)

    def _values(self, codes: np.ndarray, axis: int | None, scale: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
        ct = self._compute_dtype
        s = self._broadcast(scale.astype(ct), axis, codes.ndim)
        zp = self._broadcast(zero_point.astype(np.int64), axis, codes.ndim)
        return ((codes.astype(np.int64) - zp).astype(ct) * s).astype(np.float32)

    def _quantize_dequantize(self, x, *, axis, scale, zero_point, rounding):
        return self._values(self._codes(x, axis, scale, zero_point, rounding), axis, scale, zero_point)

    def _quantize(self, x, *, axis, scale, zero_point, rounding):
        codes = self._codes(x, axis, scale, zero_point, rounding).astype(self.storage_dtype)
        return QuantizedTensor(
            format=self.name,
            codes=codes,
            axis=axis if scale.ndim else None,
            scale=scale,
            zero_point=zero_point.astype(self.storage_dtype),
        )

    def _dequantize(self, q: QuantizedTensor) -> np.ndarray:
        zp = q.zero_point if q.zero_point is not None else np.zeros_like(q.scale, dtype=np.int64)
        return self._values(q.codes, q.axis, np.asarray(q.scale), np.asarray(zp).astype(np.int64))

    # -- ONNX ---------------------------------------------------------------------------------------
    def _lower(self, b: GraphBuilder, x: str, *, rank, shape, axis, scale, zero_point, rounding):
        per_channel = scale.ndim == 1
        q_attrs = {"axis": axis} if per_channel else {}
        s_const = b.const(scale, hint="scale")
        if self._native_qdq:
            zp_const = b.const(zero_point.astype(self.storage_dtype), hint="zero_point")
            if rounding is Rounding.HALF_EVEN:
                q = b.op("QuantizeLinear", x, s_const, zp_const, **q_attrs)
            else:
                q = self._lower_codes(b, x, rank, axis, scale, zero_point, rounding)
                q = b.op("Cast", q, to=self.onnx_type)
            return b.op("DequantizeLinear", q, s_const, zp_const, **q_attrs)
        # 32-bit: DequantizeLinear has no uint32 input and computes int32 in float32, so dequantize
        # in int64/float64 as the numpy reference does (through integer codes, like every format).
        q = b.op("Cast", self._lower_codes(b, x, rank, axis, scale, zero_point, rounding), to=TensorProto.INT64)
        zp_b = b.const(self._broadcast(zero_point.astype(np.int64), axis if per_channel else None, rank), hint="zp")
        s_b = b.const(self._broadcast(scale.astype(np.float64), axis if per_channel else None, rank), hint="scale")
        centered = b.op("Cast", b.op("Sub", q, zp_b), to=TensorProto.DOUBLE)
        return b.op("Cast", b.op("Mul", centered, s_b), to=TensorProto.FLOAT)

    def _lower_codes(self, b, x, rank, axis, scale, zero_point, rounding) -> str:
        """Float tensor of integer codes (NaN mapped to qmin), computed as :meth:`_codes` does."""
        ct = self._compute_dtype
        per_channel = scale.ndim == 1
        s_b = b.const(self._broadcast(scale.astype(ct), axis if per_channel else None, rank), hint="scale")
        zp_b = b.const(self._broadcast(zero_point.astype(ct), axis if per_channel else None, rank), hint="zp")
        xv = x if ct is np.float32 else b.op("Cast", x, to=TensorProto.DOUBLE)
        v = b.op("Div", xv, s_b)
        r = b.op("Add", rounding.lower(b, v, dtype=ct), zp_b)
        clipped = b.clip(r, self.qmin, self.qmax, dtype=ct)
        return b.op("Where", b.op("IsNaN", clipped), b.const(ct(self.qmin), hint="qmin"), clipped)


def check_power_of_two_scale(scale: Any, argument: str = "scale") -> None:
    """Raise unless every scale is an exact power of two (XINT8 and the X1 compiler need them)."""
    s = np.asarray(scale)
    bad = ~is_power_of_two(s)
    if np.any(bad):
        raise FormatError(
            f"{argument} must be powers of two (2**-pos) for this configuration; got {s.reshape(-1)[np.argmax(bad.reshape(-1))]!r}. "
            "Use scale_from_range(..., power_of_two=True)."
        )


INTEGER_FORMATS = [IntegerFormat(bits, signed) for bits in (4, 8, 16, 32) for signed in (True, False)]
