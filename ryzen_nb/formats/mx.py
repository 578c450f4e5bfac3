"""OCP Microscaling (MX v1.0) formats: MXINT8, MXFP8 E4M3/E5M2, MXFP6 E3M2/E2M3, MXFP4 E2M1 (docs/npu-numerics.md#ocp-mx-formats).

Blocks of 32 share an E8M0 scale ``X = 2**(floor(log2 max|V|) - emax_elem)`` (exponent clamped
to [-127, 127]); each element is ``quantize(V / X)`` in the element type, saturating, rounded to
nearest with ties to even by default (OCP spec, Quark's presets); ties away from zero
(microxcaling's "nearest", Quark's op default) and half-up are selectable. An all-zero block gets
the smallest scale and stays zero; a block holding Inf or NaN becomes all NaN (scale 0xFF).
MXINT8 elements are two's-complement ``k / 64`` with k in [-128, 127] (OCP spec and Quark;
microxcaling uses a symmetric ±127 instead).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ryzen_nb.formats._blocks import (
    BlockView,
    axes,
    block_max,
    exp2,
    floor_log2,
    nonfinite_blocks,
    onnx_floor_log2,
    onnx_pow2floor,
)
from ryzen_nb.formats.base import FormatInfo, ScaleKind, pow2
from ryzen_nb.formats.block import BlockFormat
from ryzen_nb.formats.elements import E2M1, E2M3, E3M2, E4M3, E5M2, INT8_MX, FloatElement, IntElement
from ryzen_nb.formats.rounding import Rounding
from ryzen_nb.graph.builder import GraphBuilder

__all__ = ["MXFormat", "MX_FORMATS"]


@dataclass(frozen=True)
class MXFormat(BlockFormat):
    label: str = "MXFP8E4M3"
    element: FloatElement | IntElement = E4M3
    block_size: int = 32

    @functools.cached_property
    def info(self) -> FormatInfo:  # built once: read thousands of times per quantization
        e = self.element
        return FormatInfo(
            name=self.label,
            family="mx",
            description=f"OCP MX: 32 elements of {e.name} share an E8M0 power-of-two scale",
            bits_per_element=e.bits + 8 / self.block_size,
            element_bits=e.bits,
            scale_kind=ScaleKind.SHARED_EXPONENT,
            power_of_two_scale=True,
            block_size=self.block_size,
            axis_role="block",
            roundings=tuple(Rounding),
            default_rounding=Rounding.HALF_EVEN,
            lowering=f"ONNX function ryzen_nb:{self.label}QuantizeDequantize",
            spec="docs/npu-numerics.md#ocp-mx-formats",
        )

    def _encode_blocks(self, xb, rounding):
        finite = np.isfinite(xb)
        all_finite = bool(finite.all())  # weights and real activations: no masking passes
        xs = xb if all_finite else np.where(finite, xb, np.float32(0))
        shared = np.clip(floor_log2(block_max(np.abs(xs))) - self.element.emax, -127, 127)
        scale = pow2(shared)
        elements = self.element.round((xs / scale).astype(np.float32, copy=False), rounding)
        values = (elements * scale).astype(np.float32, copy=False)
        if not all_finite:
            bad_block = ~np.all(finite, axis=(2, 3), keepdims=True)
            values, shared = np.where(bad_block, np.float32(np.nan), values), np.where(bad_block, 128, shared)
        return {"values": values, "codes": self.element.encode(elements), "shared": shared + 127}

    def _decode_blocks(self, codes, shared, micro):
        e = self.element
        elements = codes.astype(np.float32) / (2**e.frac_bits if isinstance(e, IntElement) else 1)
        values = elements * pow2(np.minimum(shared, 254) - 127)
        return np.where(shared == 255, np.float32(np.nan), values).astype(np.float32)

    def _lower_blocks(self, b: GraphBuilder, view: BlockView, rounding: Rounding, amax: str | None) -> str:
        f32 = lambda v: b.const(np.float32(v))  # noqa: E731
        xb = view.blocks
        if amax is not None:
            p = onnx_pow2floor(b, amax)
            scale = view.expand(b, b.op("Max", b.op("Mul", p, f32(2.0 ** -self.element.emax)), f32(2.0**-127)))
            return b.op("Mul", self.element.lower_round(b, b.op("Div", xb, scale), rounding), scale)
        bad_block = nonfinite_blocks(b, xb)
        amax = b.op("ReduceMax", b.op("Abs", xb), axes(b, 2, 3), keepdims=1)
        shared = b.clip(b.op("Sub", onnx_floor_log2(b, amax), f32(self.element.emax)), -127, 127)
        scale = view.expand(b, exp2(b, shared))
        elements = self.element.lower_round(b, b.op("Div", xb, scale), rounding)
        return b.op("Where", bad_block, f32(np.nan), b.op("Mul", elements, scale))


MX_FORMATS = [
    MXFormat("MXINT8", INT8_MX),
    MXFormat("MXFP8E4M3", E4M3),
    MXFormat("MXFP8E5M2", E5M2),
    MXFormat("MXFP6E3M2", E3M2),
    MXFormat("MXFP6E2M3", E2M3),
    MXFormat("MXFP4E2M1", E2M1),
]
