"""AMD block floating point: BFP16 (docs/npu-numerics.md#bfp16) and the microexponent formats MX4/MX6/MX9
(docs/npu-numerics.md#microexponent-formats-mx4-mx6-mx9).

BFP16 (Quark ``to_bfp``): blocks of 8 share the largest biased float32 exponent E of the block
(Inf/NaN count as 0 and pass through unchanged); each element keeps sign + 7 bits:
``y = round(x / s) * s`` with ``s = 2**(E - 127 - 6)``. Two variants differ when an element rounds
up to 128·s:

* ``variant="quark"`` (default, Quark's CPU kernel): clamp the code to ±127 (sign-magnitude);
* ``variant="compiler"`` (``use_compiler_version_cpu_kernel=1``): bump the block exponent by one
  (s doubles) and round again; codes are two's-complement in [-128, 127], nothing is clipped.
  A code of -128 stands for -2**(E-126), whose own exponent is E+1, so quantizing the output
  again re-blocks it on the coarser grid: unlike the other formats this variant is not
  idempotent for blocks that hold a -128 code.

MX4/MX6/MX9 (Quark ``to_bfp_prime``): blocks of 16 share E; each pair of elements carries a 1-bit
micro-exponent ``d = min(E - E_pair, 1)``; elements keep sign + m bits (m = 2, 4, 7):
``s = 2**(E - 127 - d + 1 - m)``, codes saturate at ±(2**m - 1). Subnormal inputs are flushed to
zero, and a block holding Inf or NaN becomes all NaN (shared exponent 0xFF).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ryzen_nb.errors import FormatError
from ryzen_nb.formats._blocks import (
    MIN_NORMAL,
    BlockView,
    axes,
    block_max,
    exp2,
    floor_log2,
    nonfinite_blocks,
    onnx_floor_log2,
    onnx_pow2floor,
    sub_block_max,
)
from ryzen_nb.formats.base import FormatInfo, ScaleKind, pow2
from ryzen_nb.formats.block import BlockFormat
from ryzen_nb.formats.rounding import Rounding
from ryzen_nb.graph.builder import GraphBuilder

__all__ = ["BFPFormat", "MicroexponentFormat", "BFP_FORMATS"]

_BFP_VARIANTS = ("quark", "compiler")


@dataclass(frozen=True)
class BFPFormat(BlockFormat):
    """BFP16: shared 8-bit exponent per block of 8, sign + 7-bit mantissa per element."""

    variant: str = "quark"
    mantissa_bits: int = 7
    block_size: int = 8

    option_names = ("variant",)

    def __post_init__(self) -> None:
        if self.variant not in _BFP_VARIANTS:
            raise FormatError(f"BFP16 variant must be one of {_BFP_VARIANTS}; got {self.variant!r}.")

    @functools.cached_property
    def info(self) -> FormatInfo:  # built once: read thousands of times per quantization
        return FormatInfo(
            name="BFP16",
            family="bfp",
            description="AMD block floating point: 8 elements share an 8-bit exponent, sign + 7-bit mantissa each",
            bits_per_element=(self.block_size * (1 + self.mantissa_bits) + 8) / self.block_size,
            element_bits=1 + self.mantissa_bits,
            scale_kind=ScaleKind.SHARED_EXPONENT,
            power_of_two_scale=True,
            block_size=self.block_size,
            axis_role="block",
            roundings=tuple(Rounding),
            default_rounding=Rounding.HALF_EVEN,  # Quark's BFP16 preset: rounding_mode 2
            lowering="ONNX function ryzen_nb:BFP16QuantizeDequantize (Abs, ReduceMax, Log, Gather, Div, Round, Clip, Mul, Where)",
            spec="docs/npu-numerics.md#bfp16",
        )

    def _encode_blocks(self, xb, rounding):
        limit = 2**self.mantissa_bits  # 128
        finite = np.isfinite(xb)
        all_finite = bool(finite.all())  # weights and real activations: no masking passes
        xs = xb if all_finite else np.where(finite, xb, np.float32(0))
        amax = block_max(np.abs(xs))
        e = floor_log2(amax)  # unbiased, >= -127
        scale = pow2(e - (self.mantissa_bits - 1))
        k = rounding.apply(xs / scale)
        if self.variant == "quark":
            k = np.clip(k, -(limit - 1), limit - 1)
        else:
            e, scale = self._next_exponent_where_code_overflows(xs, k, amax, e, scale, rounding)
        values = (k * scale).astype(np.float32, copy=False)
        if not all_finite:
            values = np.where(finite, values, xb)
        return {"values": values, "codes": k.astype(np.int8), "shared": e + 127}

    def _next_exponent_where_code_overflows(self, xs, k, amax, e, scale, rounding):
        """The shared exponent one up in blocks whose largest code rounded to +limit, those blocks'
        codes (in ``k``) again on the coarser scale; returns the new ``(e, scale)``.

        |x| < 2**(e+1), so codes lie in [-limit, limit] and only +limit overflows; rounding is
        monotone, so a block overflows exactly when its largest value does. Only blocks whose
        largest magnitude rounds to limit can (a few in a thousand), and only they are looked at."""
        limit = 2**self.mantissa_bits
        candidates = np.nonzero(rounding.apply(amax / scale) >= limit)
        if not candidates[0].size:
            return e, scale
        at = (candidates[0], candidates[1], slice(None), slice(None), candidates[4])  # [n, nsub, sub]
        block_scale = scale[candidates][:, None, None]
        overflow = rounding.apply(xs[at].max(axis=(1, 2)) / block_scale[:, 0, 0]) >= limit
        bumped = tuple(c[overflow] for c in candidates)
        e, scale = e.copy(), scale.copy()
        e[bumped] += 1
        scale[bumped] *= 2
        at = (bumped[0], bumped[1], slice(None), slice(None), bumped[4])
        k[at] = rounding.apply(xs[at] / scale[bumped][:, None, None])
        return e, scale

    def _decode_blocks(self, codes, shared, micro):
        return (codes.astype(np.float32) * pow2(shared - 127 - (self.mantissa_bits - 1))).astype(np.float32)

    def _lower_blocks(self, b: GraphBuilder, view: BlockView, rounding: Rounding, amax: str | None) -> str:
        f32 = lambda v: b.const(np.float32(v))  # noqa: E731
        xb = view.blocks
        if amax is not None:
            p = onnx_pow2floor(b, amax)  # 2**(E-127)
            scale = b.op("Mul", p, f32(2.0 ** -(self.mantissa_bits - 1)))
            return self._lower_codes_times_scale(b, view, xb, scale, rounding)
        # onnxruntime's Where returns +0 for a -0 taken from its *true* branch, so values whose
        # sign matters sit in the false branch; the mask avoids Not, which onnxruntime fuses into
        # Where by swapping the branches. x - x is NaN exactly for Inf and NaN.
        nonfinite = b.op("IsNaN", b.op("Sub", xb, xb))
        xs = b.op("Where", nonfinite, f32(0), xb)
        e = onnx_floor_log2(b, b.op("ReduceMax", b.op("Abs", xs), axes(b, 2, 3), keepdims=1))
        scale = exp2(b, b.op("Sub", e, f32(self.mantissa_bits - 1)))
        return b.op("Where", nonfinite, xb, self._lower_codes_times_scale(b, view, xs, scale, rounding))

    def _lower_codes_times_scale(self, b: GraphBuilder, view: BlockView, x: str, scale: str, rounding: Rounding) -> str:
        """k * scale with k the rounded, range-limited code (both variants); ``scale`` per block."""
        limit = 2**self.mantissa_bits
        f32 = lambda v: b.const(np.float32(v))  # noqa: E731
        full_scale = view.expand(b, scale)
        k = rounding.lower(b, b.op("Div", x, full_scale))
        if self.variant == "quark":
            k = b.clip(k, -(limit - 1), limit - 1)
        else:
            over = b.op("Greater", b.op("ReduceMax", k, axes(b, 2, 3), keepdims=1), f32(limit - 1))
            under = b.op("Less", b.op("ReduceMin", k, axes(b, 2, 3), keepdims=1), f32(-limit))
            bump = b.op("Cast", b.op("Or", over, under), to=1)
            full_scale = view.expand(b, b.op("Add", scale, b.op("Mul", scale, bump)))  # x2 where it overflowed
            k = rounding.lower(b, b.op("Div", x, full_scale))
        return b.op("Mul", k, full_scale)


@dataclass(frozen=True)
class MicroexponentFormat(BlockFormat):
    """MX4 / MX6 / MX9: shared exponent per 16, 1-bit micro-exponent per pair, sign + m bits."""

    label: str = "MX9"
    mantissa_bits: int = 7
    block_size: int = 16
    sub_block_size: int = 2
    shift_bits: int = 1

    max_axes = (3,)  # the fast body starts from the pairs' maxima

    @functools.cached_property
    def info(self) -> FormatInfo:  # built once: read thousands of times per quantization
        element_bits = 1 + self.mantissa_bits
        bits = element_bits + self.shift_bits / self.sub_block_size + 8 / self.block_size
        return FormatInfo(
            name=self.label,
            family="bfp",
            description=(
                f"shared microexponents: 16 elements share an 8-bit exponent, pairs a 1-bit micro-exponent, "
                f"sign + {self.mantissa_bits}-bit mantissa each"
            ),
            bits_per_element=bits,
            element_bits=element_bits,
            scale_kind=ScaleKind.SHARED_EXPONENT,
            power_of_two_scale=True,
            block_size=self.block_size,
            sub_block_size=self.sub_block_size,
            axis_role="block",
            roundings=tuple(Rounding),
            default_rounding=Rounding.HALF_EVEN,  # Quark's MX4/6/9 presets: rounding_mode 2
            lowering=f"ONNX function ryzen_nb:{self.label}QuantizeDequantize",
            spec="docs/npu-numerics.md#microexponent-formats-mx4-mx6-mx9",
        )

    def _encode_blocks(self, xb, rounding):
        limit = 2**self.mantissa_bits - 1
        finite = np.isfinite(xb)
        all_finite = bool(finite.all())  # weights and real activations: no masking passes
        a = np.abs(xb)
        subnormal = (a < MIN_NORMAL) & (a > 0)
        xs = xb
        if subnormal.any():  # flushed to zero, keeping the sign (Inf * 0 is NaN, and is not taken)
            with np.errstate(invalid="ignore"):
                xs, a = np.where(subnormal, xb * np.float32(0), xb), np.where(subnormal, np.float32(0), a)
        if not all_finite:
            xs, a = np.where(finite, xs, np.float32(0)), np.where(finite, a, np.float32(0))
        e_sub = floor_log2(sub_block_max(a))
        e = e_sub.max(axis=2, keepdims=True)
        d = np.minimum(e - e_sub, 2**self.shift_bits - 1)
        scale = pow2(e - d + 1 - self.mantissa_bits)
        k = np.clip(rounding.apply(xs / scale), -limit, limit)
        values = (k * scale).astype(np.float32, copy=False)
        if not all_finite:
            bad_block = ~np.all(finite, axis=(2, 3), keepdims=True)
            values, e = np.where(bad_block, np.float32(np.nan), values), np.where(bad_block, 128, e)
        return {"values": values, "codes": k.astype(np.int8), "shared": e + 127, "micro": d}

    def _decode_blocks(self, codes, shared, micro):
        e = shared - 127
        scale = pow2(e - micro + 1 - self.mantissa_bits)
        return np.where(shared == 255, np.float32(np.nan), codes.astype(np.float32) * scale).astype(np.float32)

    def _fast_path_penalty(self, b: GraphBuilder, block_max: str, rank: int) -> str | None:
        # Subnormal inputs are flushed to zero. The fast body skips the flush, which is exact
        # unless a block's maximum is below 2**-100 (else |x| / scale < 2**-19 rounds to ±0 for
        # every subnormal x); all-zero blocks are fine. Penalty: 2**65 where 0 < max < 2**-100.
        c = lambda v: b.const(np.full((1,) * rank, v, np.float32))  # noqa: E731
        tiny = b.op("Cast", b.op("Less", b.op("Mul", block_max, c(2.0**100)), c(1.0)), to=1)
        return b.op("Mul", b.op("Mul", tiny, b.op("Sign", block_max)), c(2.0**65))

    def _lower_blocks(self, b: GraphBuilder, view: BlockView, rounding: Rounding, amax: str | None) -> str:
        limit = 2**self.mantissa_bits - 1
        f32 = lambda v: b.const(np.float32(v))  # noqa: E731
        xb = view.blocks
        if amax is not None:
            # scale = 2**(E - d + 1 - m) with d = min(E - E_pair, 1): the exponent E - d is
            # max(E_pair, E - 1). A subnormal pair maximum gives 2**-127, like zero (no flush needed).
            p_sub = onnx_pow2floor(b, amax)
            half_block = b.op("Mul", b.op("ReduceMax", p_sub, axes(b, 2), keepdims=1), f32(2.0 ** -self.mantissa_bits))
            scale = view.expand(b, b.op("Max", b.op("Mul", p_sub, f32(2.0 ** (1 - self.mantissa_bits))), half_block))
            k = b.clip(rounding.lower(b, b.op("Div", xb, scale)), -limit, limit)
            return b.op("Mul", k, scale)
        a = b.op("Abs", xb)
        keep = b.op("Cast", b.op("GreaterOrEqual", a, f32(MIN_NORMAL)), to=1)
        xf = b.op("Mul", xb, keep)  # subnormals -> ±0
        sub_max = b.op("ReduceMax", b.op("Mul", a, keep), axes(b, 3), keepdims=1)
        bad_block = nonfinite_blocks(b, xb)
        e_sub = onnx_floor_log2(b, sub_max)
        e = b.op("ReduceMax", e_sub, axes(b, 2), keepdims=1)
        d = b.op("Min", b.op("Sub", e, e_sub), f32(2**self.shift_bits - 1))
        scale = view.expand(b, exp2(b, b.op("Sub", b.op("Sub", e, d), f32(self.mantissa_bits - 1))))
        k = b.clip(rounding.lower(b, b.op("Div", xf, scale)), -limit, limit)
        return b.op("Where", bad_block, f32(np.nan), b.op("Mul", k, scale))


BFP_FORMATS = [
    BFPFormat(),
    MicroexponentFormat("MX4", 2),
    MicroexponentFormat("MX6", 4),
    MicroexponentFormat("MX9", 7),
]
