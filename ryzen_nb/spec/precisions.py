"""The precisions a node can have in ryzen-nb's NPU partition, one record each: what the views
show (label, colour, a one-line description), the formats of activations and weights, and what the
latency model needs (the MAC data type and the bytes per element).

Which targets run a precision is *not* stored here: :attr:`Target.precisions` in
:mod:`ryzen_nb.spec.targets` is the one record of it, and :meth:`Precision.targets` reads it.

The records cover the names :func:`ryzen_nb.npu.partition.node_precision` gives an operator:

* the five the NPU compilers take: XINT8, A8W8, A16W8 (X1/X2), BF16 and BFP16 (VAIML);
* MX and FP32, which the NPU runs as BF16 (MX: assumption A17; FP32: VAIML converts FP32 models
  on XDNA2 targets);
* INT and OTHER, formats no Ryzen AI compiler takes: such an operator stays on the CPU.

Formats and numerics are explained in ``docs/npu-numerics.md``, the compilers in
``docs/npu-compilers.md#precisions``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ryzen_nb.errors import UnknownNameError
from ryzen_nb.spec.targets import TARGETS, Target

__all__ = ["DEVICES", "Device", "PRECISIONS", "Precision", "get_precision"]


@dataclass(frozen=True)
class Precision:
    """One precision of the partition, as every view shows it."""

    name: str  #: the name the partition writes on a node: "XINT8", "BF16", ...
    label: str  #: a few words for legends and menus
    #: the colour of this precision in every view (the partition view, the JupyterLab viewer): ryzen-nb's
    #: choice, saturated enough for white text on light and dark themes
    colour: str
    description: str  #: one line for tooltips
    activations: str  #: the format of the activations (docs/npu-compilers.md#precisions)
    weights: str  #: the format of the weights
    #: the key of :attr:`Target.macs_per_cycle` its multiply-accumulates use on the NPU
    #: (docs/npu-hardware.md#mac-rates-per-tile); None when the NPU never runs it under this name (MX
    #: and FP32 run as BF16, INT and OTHER stay on the CPU)
    mac_dtype: str | None
    #: bytes per activation element as this precision stores it (the latency model's traffic,
    #: docs/npu-latency.md#the-model)
    act_bytes: float | None
    weight_bytes: float | None  #: bytes per weight element as this precision stores it
    #: the precision the NPU computes it in, when that is another one (MX and FP32: "BF16")
    runs_as: str | None = None
    docs: str = ""  #: where the format is explained, relative to the repository

    @property
    def npu_precision(self) -> str:
        """The precision the NPU computes this one in (itself, or :attr:`runs_as`)."""
        return self.runs_as or self.name

    def runs_on(self, target: Target) -> bool:
        """Whether ``target`` runs operators of this precision on its NPU (from ``target.precisions``)."""
        return self.npu_precision in target.precisions

    @property
    def targets(self) -> tuple[str, ...]:
        """The targets of :data:`~ryzen_nb.spec.targets.TARGETS` whose NPU runs this precision."""
        return tuple(t.name for t in TARGETS.values() if self.runs_on(t))

    def as_dict(self) -> dict[str, Any]:
        """Every field as JSON-able data, with the targets that run it (for :func:`ryzen_nb.spec.facts`)."""
        return {**dataclasses.asdict(self), "targets": list(self.targets)}


@dataclass(frozen=True)
class Device:
    """Where a node runs, as the views colour it."""

    name: str  #: "NPU" or "CPU", as the partition writes it
    colour: str
    description: str

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_NUMERICS = "docs/npu-numerics.md"

#: in the order the legends list them: the NPU's own precisions first, as AMD's documentation names
#: them, then the ones the NPU runs as BF16, then the ones it does not run
PRECISIONS: dict[str, Precision] = {
    p.name: p
    for p in (
        Precision(
            "XINT8", "XINT8: int8, power-of-two scales", "#1f6fb4",
            "Symmetric 8-bit activations and weights with power-of-two scales, per tensor: Quark's preset for "
            "CNNs on the NPU.",
            activations="uint8 with zero point 128 (a symmetric int8), scale 2**-pos, per tensor",
            weights="int8 with zero point 0, scale 2**-pos, per tensor",
            mac_dtype="int8", act_bytes=1.0, weight_bytes=1.0, docs=f"{_NUMERICS}#xint8",
        ),
        Precision(
            "A8W8", "A8W8: int8, float scales", "#138a9c",
            "Symmetric int8 activations and weights with float (not power-of-two) scales, per tensor.",
            activations="int8, float scale, symmetric, per tensor",
            weights="int8, float scale, symmetric, per tensor",
            mac_dtype="int8", act_bytes=1.0, weight_bytes=1.0, docs=f"{_NUMERICS}#a8w8-and-a16w8",
        ),
        Precision(
            "A16W8", "A16W8: int16 activations, int8 weights", "#7b4fb0",
            "16-bit activations with int8 weights and float scales; the int16 x int8 MAC rate is not "
            "published (A4).",
            activations="int16, float scale, symmetric, per tensor",
            weights="int8, float scale, symmetric, per tensor",
            # the int16 x int8 MAC rate is assumption A4 (docs/npu-assumptions.md)
            mac_dtype="int16x8", act_bytes=2.0, weight_bytes=1.0, docs=f"{_NUMERICS}#a8w8-and-a16w8",
        ),
        Precision(
            "BF16", "BF16: bfloat16", "#2b8a3e",
            "bfloat16 operands with FP32 accumulation; the compiler converts FP32 models to it by itself.",
            activations="bfloat16 (8-bit exponent, 7-bit mantissa)", weights="bfloat16",
            mac_dtype="bf16", act_bytes=2.0, weight_bytes=2.0, docs=f"{_NUMERICS}#bf16",
        ),
        Precision(
            "BFP16", "BFP16: block floating point", "#8a7a00",
            "AMD block floating point: 8 values share an 8-bit exponent, each keeps a sign and 7 mantissa bits.",
            # 8 bits per element plus the shared 8-bit exponent per 8 elements: 9 bits, 1.125 bytes
            # (docs/npu-numerics.md#bfp16)
            activations="blocks of 8 along the reduction axis, shared 8-bit exponent, sign + 7 mantissa bits",
            weights="blocks of 8 along the input channels, shared 8-bit exponent, sign + 7 mantissa bits",
            mac_dtype="bfp16", act_bytes=1.125, weight_bytes=1.125, docs=f"{_NUMERICS}#bfp16",
        ),
        Precision(
            "MX", "MX: microscaling formats (run as BF16)", "#b0417f",
            "OCP MX (MXINT8, MXFP8/6/4) and AMD's MX4/MX6/MX9 are simulated by quantize-dequantize; the NPU "
            "computes the operator in bf16 (A17).",
            activations="a block format: 32 elements sharing an E8M0 scale (OCP MX), or 16 with 1-bit "
                        "micro-exponents (MX4/MX6/MX9)",
            weights="the same block formats",
            mac_dtype=None, act_bytes=None, weight_bytes=None, runs_as="BF16", docs=f"{_NUMERICS}#ocp-mx-formats",
        ),
        Precision(
            "FP32", "FP32: not quantized", "#6b6b6b",
            "A float operator: the NPU runs an FP32 model as BF16; in an INT8 model a float operator stays on "
            "the CPU.",
            activations="float32", weights="float32",
            mac_dtype=None, act_bytes=4.0, weight_bytes=4.0, runs_as="BF16", docs=f"{_NUMERICS}#bf16",
        ),
        Precision(
            "INT", "INT: integer without NPU kernels", "#8d5a3c",
            "Integer activations the NPU has no kernels for (int4, int32, widths other than 8 and 16): the "
            "operator stays on the CPU.",
            activations="int4, int32 or another width", weights="integer",
            mac_dtype=None, act_bytes=None, weight_bytes=None, docs="docs/npu-compilers.md#precisions",
        ),
        Precision(
            "OTHER", "OTHER: not an NPU format", "#9a9a9a",
            "A format no Ryzen AI compiler takes (float16, float8, or a mix of families): the operator stays on "
            "the CPU.",
            activations="float16, float8 or a mix of formats", weights="as the activations",
            mac_dtype=None, act_bytes=None, weight_bytes=None, docs="docs/npu-compilers.md#precisions",
        ),
    )
}

#: the two places a node can run (colours: ryzen-nb's choice; CPU stands out, since it is what a user
#: looks for)
DEVICES: dict[str, Device] = {
    d.name: d
    for d in (
        Device("NPU", "#2e9d6a", "runs on the NPU"),
        Device("CPU", "#d9534f", "stays on the CPU, where the Vitis AI EP falls back"),
    )
}


def get_precision(name: str | Precision) -> Precision:
    """The record of a precision name ("XINT8", "BF16", ... as the partition writes it)."""
    if isinstance(name, Precision):
        return name
    key = str(name).strip().upper()
    if key not in PRECISIONS:
        raise UnknownNameError("precision", name, PRECISIONS,
                               hint="These are the precisions of the NPU partition, not quantization presets.")
    return PRECISIONS[key]
