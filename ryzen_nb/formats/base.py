"""What every numeric format is: the base class, its metadata, and argument checking.

A format object answers three questions for the rest of the package:

1. *numerics* — :meth:`NumericFormat.quantize_dequantize` (the value the format represents, as
   float32) and, where a stored form exists, :meth:`~NumericFormat.quantize` to codes plus scales
   and :meth:`~NumericFormat.dequantize` back;
2. *lowering* — :meth:`NumericFormat.lower` emits standard ONNX operators computing exactly the
   same values, so a quantized model runs on plain onnxruntime;
3. *metadata* — :class:`FormatInfo`: bits per element (shared-scale bits amortised), the kind of
   scale, block sizes, the rounding rules it supports.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from ryzen_nb.errors import FormatError, UnknownNameError
from ryzen_nb.formats.rounding import Rounding

if TYPE_CHECKING:
    from ryzen_nb.graph.builder import GraphBuilder

__all__ = ["FormatInfo", "NumericFormat", "QuantizedTensor", "ScaleKind", "get", "names", "register"]


class ScaleKind(str, Enum):
    """How a format scales its elements."""

    NONE = "none"  #: a plain value type (bfloat16, float16, float8); an optional scale may divide first
    TENSOR = "tensor"  #: one scale (and zero point) per tensor or per channel, float or power of two
    SHARED_EXPONENT = "shared_exponent"  #: a power-of-two exponent shared by each block, from the data

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class FormatInfo:
    """Metadata of a format, as shown in tables and used by size and cost models."""

    name: str
    family: str  #: "integer", "float", "bfp" (AMD block floating point) or "mx" (OCP microscaling)
    description: str
    bits_per_element: float  #: storage per element, shared-scale bits amortised (block formats)
    element_bits: int  #: bits of one stored element (sign included)
    scale_kind: ScaleKind
    power_of_two_scale: bool | None  #: True: always; False: never; None: optional (integers)
    block_size: int | None = None
    sub_block_size: int | None = None
    axis_role: str | None = None  #: "channel" (per-channel scales), "block" (blocks run along it) or None
    roundings: tuple[Rounding, ...] = (Rounding.HALF_EVEN,)
    default_rounding: Rounding = Rounding.HALF_EVEN
    lowering: str = ""  #: the ONNX operators the lowering uses
    spec: str = ""  #: where the semantics are defined (a docs/ page and section)

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["scale_kind"] = self.scale_kind.value
        d["roundings"] = [r.value for r in self.roundings]
        d["default_rounding"] = self.default_rounding.value
        return d


@dataclass
class QuantizedTensor:
    """A tensor in a format's stored form: element codes plus whatever scales it carries.

    ``codes`` has the tensor's shape. Integer formats carry ``scale``/``zero_point`` (scalars or
    1-D along ``axis``); block formats carry ``shared_exponents`` (biased, uint8, the tensor's
    shape with ``axis`` replaced by the number of blocks) and, for MX4/MX6/MX9,
    ``micro_exponents`` (one bit per sub-block). Integer codes have a single zero, so a value
    that quantize_dequantize() returns as -0 dequantizes from the stored form as +0.
    """

    format: str
    codes: np.ndarray
    axis: int | None = None
    scale: np.ndarray | None = None
    zero_point: np.ndarray | None = None
    shared_exponents: np.ndarray | None = None
    micro_exponents: np.ndarray | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape)

    def dequantize(self) -> np.ndarray:
        return get(self.format, **self.options).dequantize(self)

    def storage_bits(self) -> int:
        """Bits needed to store this tensor: elements, shared exponents and scales/zero points."""
        info = get(self.format, **self.options).info
        bits = self.codes.size * info.element_bits
        for extra, width in ((self.shared_exponents, 8), (self.micro_exponents, 1)):
            if extra is not None:
                bits += extra.size * width
        if self.scale is not None:
            bits += np.size(self.scale) * 32
        if self.zero_point is not None and np.any(self.zero_point != 0):
            bits += np.size(self.zero_point) * info.element_bits
        return int(bits)


class NumericFormat(ABC):
    """Base class of the formats. Subclasses implement the ``_`` methods on checked arguments."""

    #: keyword options a format accepts beyond the common ones (e.g. BFP16's ``variant``)
    option_names: tuple[str, ...] = ()

    @property
    @abstractmethod
    def info(self) -> FormatInfo:
        """What the format is (name, family, bits, scale kind...). Subclasses cache it
        (``functools.cached_property``): a format is immutable."""

    @property
    def name(self) -> str:
        return self.info.name

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.option_names)
        return f"<format {self.name}{' ' + opts if opts else ''}>"

    def with_options(self, **options: Any) -> NumericFormat:
        """A copy with format-specific options set (see ``option_names``)."""
        if not options:
            return self
        for key in options:
            if key not in self.option_names:
                raise UnknownNameError(
                    f"option of format {self.name}",
                    key,
                    list(self.option_names) or ["(this format takes no options)"],
                )
        return dataclasses.replace(self, **options)  # type: ignore[type-var]

    def options(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.option_names}

    # -- public API (checks arguments, then calls the subclass) ------------------------------------
    def quantize_dequantize(
        self,
        x: Any,
        *,
        axis: int = 1,
        scale: Any = None,
        zero_point: Any = None,
        rounding: Any = None,
    ) -> np.ndarray:
        """The float32 values ``x`` takes in this format (quantize then dequantize)."""
        x32 = as_float32(x)
        args = self._check(x32, axis, scale, zero_point, rounding)
        with np.errstate(all="ignore"):  # Inf/NaN inputs are legitimate; their results are defined
            return self._quantize_dequantize(x32, **args)

    def quantize(
        self,
        x: Any,
        *,
        axis: int = 1,
        scale: Any = None,
        zero_point: Any = None,
        rounding: Any = None,
    ) -> QuantizedTensor:
        """``x`` in stored form (codes plus scales or shared exponents)."""
        x32 = as_float32(x)
        args = self._check(x32, axis, scale, zero_point, rounding)
        with np.errstate(all="ignore"):
            return self._quantize(x32, **args)

    def dequantize(self, q: QuantizedTensor) -> np.ndarray:
        """Float32 values of a :class:`QuantizedTensor` of this format."""
        if q.format != self.name:
            raise FormatError(f"q is a {q.format} tensor; dequantize it with format {q.format!r}, not {self.name!r}.")
        with np.errstate(all="ignore"):
            return self._dequantize(q)

    def lower(
        self,
        b: GraphBuilder,
        x: str,
        *,
        rank: int | None = None,
        shape: Any = None,
        axis: int = 1,
        scale: Any = None,
        zero_point: Any = None,
        rounding: Any = None,
    ) -> str:
        """Emit ONNX nodes into ``b`` that quantize-dequantize tensor ``x`` (float32).

        Give ``shape`` (ints, ``None`` for unknown dimensions) or at least ``rank``: a static shape
        lets block formats pick a faster variant. Returns the output tensor's name. Scales and
        zero points given here are constants of the graph; block formats derive theirs from the
        data at run time.
        """
        if shape is not None:
            shape = tuple(shape)
            rank = len(shape)
        if not isinstance(rank, (int, np.integer)) or rank < 0:
            raise FormatError(f"lower() needs shape= or a non-negative integer rank=; got rank={rank!r}.")
        probe = np.empty((0,) * int(rank), dtype=np.float32) if rank else np.empty((), np.float32)
        args = self._check(probe, axis, scale, zero_point, rounding, lowering=True)
        return self._lower(b, x, rank=int(rank), shape=shape, **args)

    # -- subclass hooks -----------------------------------------------------------------------------
    @abstractmethod
    def _quantize_dequantize(self, x: np.ndarray, **args: Any) -> np.ndarray: ...

    @abstractmethod
    def _quantize(self, x: np.ndarray, **args: Any) -> QuantizedTensor: ...

    @abstractmethod
    def _dequantize(self, q: QuantizedTensor) -> np.ndarray: ...

    @abstractmethod
    def _lower(self, b: GraphBuilder, x: str, *, rank: int, shape: Any, **args: Any) -> str: ...

    def _check_scale(
        self, x: np.ndarray, axis: int | None, scale: Any, zero_point: Any, lowering: bool
    ) -> dict[str, Any]:
        """Validate scale/zero point; formats without scales refuse them."""
        if scale is not None or zero_point is not None:
            raise FormatError(
                f"Format {self.name} derives its scales from the data (shared exponent per block); "
                "do not pass scale or zero_point."
            )
        return {}

    # -- shared checking ----------------------------------------------------------------------------
    def _check(
        self, x: np.ndarray, axis: Any, scale: Any, zero_point: Any, rounding: Any, lowering: bool = False
    ) -> dict[str, Any]:
        info = self.info
        if rounding is None:
            r = info.default_rounding
        else:
            r = Rounding.parse(rounding)
            if r not in info.roundings:
                raise FormatError(
                    f"Format {self.name} supports rounding {[m.value for m in info.roundings]}; got {r.value!r}. "
                    + (
                        "Its elements are produced by an IEEE cast, which rounds half to even."
                        if info.roundings == (Rounding.HALF_EVEN,)
                        else ""
                    )
                )
        axis_n = normalize_axis(axis, x.ndim) if info.axis_role is not None else None
        args: dict[str, Any] = {"rounding": r}
        if info.axis_role is not None:
            args["axis"] = axis_n
        args.update(self._check_scale(x, axis_n, scale, zero_point, lowering))
        return args


# -- helpers shared by the format modules ------------------------------------------------------------


def as_float32(x: Any, argument: str = "x") -> np.ndarray:
    """``x`` as a float32 numpy array; a clear error for anything that is not floating point."""
    if isinstance(x, (bool, np.bool_)):
        raise FormatError(f"{argument} must be a floating-point array; got a bool.")
    array = np.asarray(x)
    if array.dtype.kind == "f":
        return array.astype(np.float32, copy=False)
    if array.dtype.kind == "V" or type(array.dtype).__module__.startswith("ml_dtypes"):
        # bfloat16 / float8 arrays from ml_dtypes have kind 'V'
        try:
            return array.astype(np.float32)
        except (TypeError, ValueError):
            pass
    raise FormatError(
        f"{argument} must be a floating-point array (float16/32/64 or bfloat16); got dtype {array.dtype}. "
        f"Convert it first, e.g. {argument}.astype(np.float32)."
    )


def normalize_axis(axis: Any, rank: int, argument: str = "axis") -> int:
    """A non-negative axis for a tensor of ``rank``; rank-1 and scalars use axis 0."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise FormatError(f"{argument} must be an integer; got {axis!r}.")
    if rank <= 1:
        # A vector has one axis: blocks/channels run along it whatever axis was asked
        # (Quark's BFP op does the same for rank-1 tensors).
        return 0
    if not -rank <= axis < rank:
        raise FormatError(
            f"{argument}={axis} is out of range for a tensor of rank {rank}; valid axes are {-rank}..{rank - 1}."
        )
    return int(axis) % rank


def check_positive_finite(value: np.ndarray, argument: str) -> None:
    if value.dtype.kind not in "fiu":
        raise FormatError(f"{argument} must be numeric; got dtype {value.dtype}.")
    bad = ~np.isfinite(value) | (value <= 0)
    if np.any(bad):
        first = value.reshape(-1)[np.argmax(bad.reshape(-1))]
        raise FormatError(
            f"{argument} must be positive and finite; got {first!r}"
            + (f" (at index {int(np.argmax(bad.reshape(-1)))})" if value.ndim else "")
            + ". A zero or negative scale usually means the calibration range was empty (all-zero data)."
        )


def is_power_of_two(value: Any) -> np.ndarray:
    """Elementwise: is ``value`` exactly 2**k for an integer k?"""
    v = np.asarray(value, dtype=np.float64)
    mantissa, _ = np.frexp(v)
    return (v > 0) & np.isfinite(v) & (mantissa == 0.5)


def pow2(exponent: np.ndarray) -> np.ndarray:
    """Exact float32 powers of two 2**e for integer-valued ``exponent`` in [-149, 127]."""
    return np.ldexp(np.float32(1.0), np.asarray(exponent, dtype=np.int32)).astype(np.float32)


def biased_exponent(x: np.ndarray) -> np.ndarray:
    """The 8-bit exponent field of float32 values (0 for zero/subnormals, 255 for Inf/NaN)."""
    return ((np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) >> 23) & 0xFF).astype(np.int32)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# -- the registry -------------------------------------------------------------------------------------------------
# Here, beside the base class, so a QuantizedTensor finds its format without importing the package
# that defines the formats; ryzen_nb.formats registers every format when it is imported.
_REGISTRY: dict[str, NumericFormat] = {}
#: other spellings users bring from ONNX, numpy, Quark or papers
_ALIASES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "half": "float16",
    "fp8_e4m3": "float8_e4m3fn",
    "float8e4m3fn": "float8_e4m3fn",
    "e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
    "float8e5m2": "float8_e5m2",
    "e5m2": "float8_e5m2",
    "mxfp8_e4m3": "MXFP8E4M3",
    "mxfp8_e5m2": "MXFP8E5M2",
    "mxfp6_e3m2": "MXFP6E3M2",
    "mxfp6_e2m3": "MXFP6E2M3",
    "mxfp4_e2m1": "MXFP4E2M1",
    "mxfp4": "MXFP4E2M1",
}
#: lower-cased names and aliases -> registered name
_FOLDED: dict[str, str] = {}


def register(*formats: NumericFormat) -> None:
    """Add formats to the registry (in order; :func:`names` lists them so)."""
    for f in formats:
        _REGISTRY[f.name] = f
        _FOLDED[f.name.lower()] = f.name
    _FOLDED.update({k.lower(): v for k, v in _ALIASES.items() if v in _REGISTRY})


def names() -> list[str]:
    """Every format name, in registry order (integers, floats, BFP/microexponents, OCP MX)."""
    return list(_REGISTRY)


def get(name: str | NumericFormat, **options: Any) -> NumericFormat:
    """The format called ``name`` (case-insensitive; common aliases such as ``"bf16"`` accepted),
    with format-specific ``options`` applied (e.g. ``get("BFP16", variant="compiler")``)."""
    if isinstance(name, NumericFormat):
        return name.with_options(**options)
    key = _FOLDED.get(str(name).strip().lower()) if isinstance(name, str) else None
    if key is None:
        raise UnknownNameError("format", name, names())
    return _REGISTRY[key].with_options(**options)
