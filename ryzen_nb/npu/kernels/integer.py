"""What the integer kernels share (XINT8 on X1, A8W8/A16W8 on X2).

An integer kernel reads integer codes through DequantizeLinear nodes and writes the codes of the
QuantizeLinear after it, possibly through an activation fused in between (Relu, Clip, LeakyRelu;
docs/npu-numerics.md#xint8-requantization). The arithmetic depends on the precision, and each kernel class gives both:

* XINT8 (docs/npu-numerics.md#xint8-requantization, A10/A11): :meth:`IntegerKernel.xint8_value` is the result in output
  units before rounding — the DPU's power-of-two shifts applied to the exact integer sum, a
  dyadic rational float64 holds exactly; it is rounded by DPU_ROUND (half toward +inf) or half to
  even, clipped by the fused activation and saturated.
* A8W8/A16W8 (docs/npu-numerics.md#a8w8-and-a16w8, A12): :meth:`IntegerKernel.scaled_terms` lists (integer value, real
  multiplier) pairs; every multiplier becomes an integer ``C`` at one common shift (the largest's,
  ``C <= MAX_MULTIPLIER``), and ``Σ value * C`` is shifted right with round half to even.

The ``lower_*`` twins of those two methods emit the same numbers as ONNX; this base class does the
rest (fused activation, rounding, zero point, saturation) once for every kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import onnx
from onnx import TensorProto

from ryzen_nb.graph.attributes import attribute, attributes
from ryzen_nb.graph.builder import GraphBuilder
from ryzen_nb.npu.kernels.arithmetic import (
    LEAKY_SHIFT,
    clip_codes,
    multiplier,
    rne_shift,
    round_int,
    saturate,
    weighted,
)
from ryzen_nb.npu.kernels.base import Kernel, KernelGraph, QuantRef
from ryzen_nb.npu.kernels.lowering import ONNX_INT, Centred, channel_shape, const, requant_int64, round_half
from ryzen_nb.spec.dpu import LEAKY_RELU_STEPS, leaky_relu_alpha

__all__ = ["IntegerKernel"]

#: Terms of A8W8/A16W8 requantisation in ONNX: (integer values — an int64 tensor, or centred codes
#: not emitted yet — and their real multipliers)
Terms = list[tuple[str | Centred, np.ndarray]]


class IntegerKernel(Kernel):
    """Base of the integer kernels: matching of the codes around the node, and the shared finish."""

    precisions: ClassVar[tuple[str, ...]] = ("XINT8", "A8W8", "A16W8")
    activations: ClassVar[tuple[str, ...]] = ("relu", "clip", "leaky")
    arithmetic: ClassVar[str] = "integer"
    #: how many of the node's first inputs are activations (integer codes) the kernel reads
    operands: ClassVar[int] = 1
    #: the axis of per-channel multipliers in the result (Conv: 1)
    channel_axis: ClassVar[int] = -1

    # -- matching ----------------------------------------------------------------------------------
    @classmethod
    def _match(cls, node: onnx.NodeProto, precision: str, graph: KernelGraph) -> Kernel | str:
        k = cls(node, precision, attrs=attributes(node), replaced=[node])
        for name in node.input[:cls.operands]:
            ref = graph.quantized(name)
            if ref is None:
                return f"input {name!r} is not integer codes read through a DequantizeLinear"
            k.inputs.append(ref)
        problem = k._match_operator(graph) or k._match_output(graph)
        if problem:
            return problem
        if precision == "XINT8" and not all(r.is_power_of_two for r in [*k.inputs, k.output, k.weight] if r):
            return "an XINT8 scale is not a power of two"
        problem = k._record_shapes(graph.index.static_shapes)
        return problem or k

    def _match_operator(self, graph: KernelGraph) -> str:
        """Operator-specific conditions (attributes, weights); why not, or ""."""
        return ""

    def _absorb_following(self, graph: KernelGraph) -> str:
        """Nodes after the operator that the kernel computes too (the DPU's average-pool
        correction); returns the tensor the rest of the chain follows."""
        return self.node.output[0]

    def _match_output(self, graph: KernelGraph) -> str:
        """The fused activation and the one QuantizeLinear the kernel writes through."""
        consumers, consts = graph.index.consumers, graph.index.constants
        out = self._absorb_following(graph)
        users = consumers.get(out, [])
        if len(users) == 1 and users[0].op_type in ("Relu", "Clip", "LeakyRelu") and graph.on_npu(users[0]):
            act = users[0]
            if act.op_type == "Relu":
                self.activation = ("relu",)
            elif act.op_type == "LeakyRelu":
                self.activation = ("leaky", float(attribute(act, "alpha", 0.01)))
            else:
                lo = consts.get(act.input[1]) if len(act.input) > 1 and act.input[1] else None
                hi = consts.get(act.input[2]) if len(act.input) > 2 and act.input[2] else None
                if lo is None and hi is None:
                    return "the Clip after it has no constant bounds"
                self.activation = ("clip", None if lo is None else float(lo), None if hi is None else float(hi))
            self.replaced.append(act)
            out = act.output[0]
            users = consumers.get(out, [])
        quantizers = [u for u in users if u.op_type == "QuantizeLinear"]
        if len(quantizers) != 1 or len(quantizers[0].input) < 3:
            return "its result is not quantized by one QuantizeLinear with a zero point"
        q = quantizers[0]
        scale, zp = consts.get(q.input[1]), consts.get(q.input[2])
        if scale is None or zp is None or np.size(scale) != 1:
            return "its output quantizer has no constant per-tensor scale and zero point"
        self.output = QuantRef(q.output[0], np.asarray(scale, np.float32), np.asarray(zp), np.dtype(zp.dtype))
        self.float_output = out  # other readers of the float value get the dequantized codes
        self.replaced.append(q)
        return ""

    def _record_shapes(self, shapes: dict[str, list[int]]) -> str:
        """Static shapes the lowering needs (windows, reductions); why not, or ""."""
        return ""

    def marker_inputs(self) -> list[str]:
        return [r.codes for r in self.inputs]

    def marker_outputs(self) -> list[str]:
        assert self.output is not None
        return [self.output.codes]

    # -- the arithmetic of each operator (subclasses) ----------------------------------------------
    def xint8_value(self, xs: list[np.ndarray], inputs: Sequence[np.ndarray]) -> np.ndarray:
        """XINT8: the result in output units before rounding (exact float64), from the centred
        codes ``xs`` of :attr:`inputs` (``inputs``: every marker input, as given)."""
        raise NotImplementedError(f"{type(self).__name__} has no XINT8 arithmetic")

    def lower_xint8_value(self, b: GraphBuilder, inputs: list[str]) -> str:
        """:meth:`xint8_value` in ONNX (float64)."""
        raise NotImplementedError(f"{type(self).__name__} has no XINT8 arithmetic")

    def lower_xint8_value_f32(self, b: GraphBuilder, inputs: list[str], *, half_up: bool) -> str | None:
        """:meth:`xint8_value` in float32 when float32 holds it exactly (see :func:`f32_holds`); else
        None and nothing emitted. Float32 operators run several times faster than float64 ones on
        large tensors: a ResNet's residual Adds spent 55 ms of 250 in float64.

        With ``half_up``, plus half the step the value is a multiple of (:func:`ties_up`), so the
        QuantizeLinear after, which rounds half to even, rounds as DPU_ROUND: no Floor, and a
        kernel that adds a constant anyway adds the half with it (one pass less)."""
        return None

    def scaled_terms(self, xs: list[np.ndarray], inputs: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """A8W8/A16W8: (integer values, real multipliers) whose weighted sum is the result in
        output units (multipliers per channel along :attr:`channel_axis` where several)."""
        raise NotImplementedError(f"{type(self).__name__} has no {self.precision} arithmetic")

    def lower_scaled_terms(self, b: GraphBuilder, inputs: list[str]) -> tuple[Terms, int]:
        """:meth:`scaled_terms` in ONNX (int64 values or :class:`Centred` codes), with the rank
        multipliers broadcast against."""
        raise NotImplementedError(f"{type(self).__name__} has no {self.precision} arithmetic")

    def value_bound(self) -> float | None:
        """An upper bound of |value| over the scaled terms, or None: then requantisation always
        runs in int64 (a float64 sum of value * C is exact only while it stays below 2**53)."""
        return None

    # -- numpy reference -------------------------------------------------------------------------------
    def reference(self, inputs: Sequence[np.ndarray | None], rounding: str = "half_up") -> list[np.ndarray]:
        xs = [r.centred(v) for r, v in zip(self.inputs, inputs)]
        leaky = self.activation is not None and self.activation[0] == "leaky"
        if self.precision == "XINT8":
            v = self.xint8_value(xs, inputs)
            if leaky:
                v = np.where(v < 0, v * leaky_relu_alpha(self.activation[1]), v)
            y = round_int(v, rounding)
        else:
            terms = self.scaled_terms(xs, inputs)
            num, shift = weighted(terms, self.channel_axis, max(np.ndim(value) for value, _ in terms))
            if leaky:  # negative values times k, positive ones times LEAKY_RELU_STEPS; 8 more bits of shift
                c = int(round(self.activation[1] * LEAKY_RELU_STEPS))
                num = np.where(num < 0, num * c, num * LEAKY_RELU_STEPS)
                shift += LEAKY_SHIFT
            y = rne_shift(num, shift)
        return [self._saturate(self._activate(y))]

    def _activate(self, y: np.ndarray) -> np.ndarray:
        """Fused Relu / Clip on integer results (before the zero point); LeakyRelu came earlier."""
        if self.activation is None or self.activation[0] == "leaky":
            return y
        if self.activation[0] == "relu":
            return np.maximum(y, 0)
        lo, hi = clip_codes(self.activation[1], self.activation[2], self.output_scale)
        if lo is not None:
            y = np.maximum(y, lo)
        if hi is not None:
            y = np.minimum(y, hi)
        return y

    def _saturate(self, y: np.ndarray) -> np.ndarray:
        assert self.output is not None
        return saturate(y + self.output_zero_point, self.output.dtype)  # uint8 with zero point 128 saturates as int8

    @property
    def output_scale(self) -> float:
        assert self.output is not None
        return float(np.ravel(self.output.scale)[0])

    @property
    def output_zero_point(self) -> int:
        assert self.output is not None
        return int(np.ravel(self.output.zero_point)[0])

    # -- lowering ------------------------------------------------------------------------------------
    def lower(self, b: GraphBuilder, inputs: list[str], *, rounding: str = "half_up",
              accumulation: str = "exact") -> list[str]:
        if self.precision == "XINT8":
            return [self.lower_xint8(b, inputs, rounding)]
        return [self.lower_scaled(b, inputs)]

    def lower_xint8(self, b: GraphBuilder, inputs: list[str], rounding: str) -> str:
        if self.activation is None or self.activation[0] != "leaky":
            exact = self.lower_xint8_value_f32(b, inputs, half_up=rounding == "half_up")
            if exact is not None:
                return self.requantize_integer_f32(b, exact)  # QuantizeLinear rounds half to even
        return self.finish_double(b, self.lower_xint8_value(b, inputs), rounding)

    def lower_scaled(self, b: GraphBuilder, inputs: list[str]) -> str:
        terms, ndim = self.lower_scaled_terms(b, inputs)
        return self.requantize_terms(b, terms, ndim)

    def finish_double(self, b: GraphBuilder, v: str, rounding: str) -> str:
        """XINT8, float64 ``v`` in output units: fused LeakyRelu, rounding, Relu/Clip, saturation."""
        if self.activation is not None and self.activation[0] == "leaky":
            alpha = leaky_relu_alpha(self.activation[1])
            v = b.op("Where", b.op("Less", v, const(b, 0.0, np.float64)), b.op("Mul", v, const(b, alpha, np.float64)), v)
        return self.saturate_codes(b, round_half(b, v, rounding), np.float64)

    def saturate_codes(self, b: GraphBuilder, y: str, dtype: Any) -> str:
        """Integer-valued ``y`` (of ``dtype``) -> output codes: fused Relu / Clip, zero point, saturation."""
        assert self.output is not None
        if self.activation is not None and self.activation[0] == "relu":
            y = b.op("Max", y, const(b, 0, dtype))
        elif self.activation is not None and self.activation[0] == "clip":
            lo, hi = clip_codes(self.activation[1], self.activation[2], self.output_scale)
            if lo is not None:
                y = b.op("Max", y, const(b, lo, dtype))
            if hi is not None:
                y = b.op("Min", y, const(b, hi, dtype))
        info = np.iinfo(self.output.dtype)
        y = b.op("Add", y, const(b, self.output_zero_point, dtype))
        y = b.clip(y, info.min, info.max, dtype=dtype)
        return b.op("Cast", y, to=ONNX_INT[self.output.dtype])

    def code_window(self) -> tuple[int, int] | None:
        """The integer results (before the zero point) that the fused Relu / Clip and the saturation
        leave as they are: one Clip does both. None when the fused Clip leaves no result."""
        assert self.output is not None
        info, zp = np.iinfo(self.output.dtype), self.output_zero_point
        lo, hi = int(info.min) - zp, int(info.max) - zp
        if self.activation is not None and self.activation[0] == "relu":
            lo = max(lo, 0)
        elif self.activation is not None and self.activation[0] == "clip":
            a_lo, a_hi = clip_codes(self.activation[1], self.activation[2], self.output_scale)
            lo = lo if a_lo is None else max(lo, int(a_lo))
            hi = hi if a_hi is None else min(hi, int(a_hi))
        return (lo, hi) if lo <= hi else None

    def shift_to_codes(self, b: GraphBuilder, num: str, shift: int, bound: float, *, bits: int = 64,
                       rounding: str = "half_even", add: np.ndarray | None = None) -> str | None:
        """Output codes of the integer ``num + add`` over ``2**shift`` in unsigned operators, or None
        when the ranges do not allow it. ``num`` is int32 or int64 (``bits``), ``|num + add| <= bound``,
        ``add`` (default 0) an integer constant shaped to broadcast against ``num``. Rounding is
        "half_up" (DPU_ROUND: floor((v + 2**(s-1)) / 2**s)) or "half_even" (A8W8/A16W8, A12).

        Adding ``(K + zero point) * 2**shift`` makes the sum positive, so the division is a right
        BitShift on the unsigned type; half to even adds ``2**(shift-1) - 1`` plus the quotient's
        parity first. One Clip is the fused Relu / Clip and the saturation; ``K``, a multiple of
        2**(output bits), vanishes in the Cast to the output type, which wraps. Five operators for
        half up, eight for half even, where the exact :func:`requant_int64` takes seventeen."""
        assert self.output is not None and bits in (32, 64) and rounding in ("half_up", "half_even")
        window = self.code_window()
        if window is None or shift < 0 or self.activation is not None and self.activation[0] == "leaky":
            return None
        signed, unsigned, onnx_unsigned = (np.int32, np.uint32, TensorProto.UINT32) if bits == 32 else \
            (np.int64, np.uint64, TensorProto.UINT64)
        modulus, zp = 2 ** (8 * self.output.dtype.itemsize), self.output_zero_point
        k = modulus * (int(np.ceil((bound / 2.0**shift + abs(zp)) / modulus)) + 1)
        if (k + abs(zp) + 2) * 2.0**shift + bound >= 2.0 ** (bits - 1):
            return None
        parity = rounding == "half_even" and shift > 0
        # what the signed Add carries: K always; the half and the zero point unless the parity comes first
        offset = k * 2**shift if parity else (k + zp) * 2**shift + (2 ** (shift - 1) if shift > 0 else 0)
        total = np.asarray(offset, np.int64) + (0 if add is None else np.asarray(add, np.int64))
        u = b.op("Cast", b.op("Add", num, const(b, total.astype(signed), signed)), to=onnx_unsigned)
        s = const(b, shift, unsigned)
        if parity:
            odd = b.op("BitwiseAnd", b.op("BitShift", u, s, direction="RIGHT"), const(b, 1, unsigned))
            rest = (2 ** (shift - 1) - 1 + zp * 2**shift) % 2**bits  # may be negative: unsigned arithmetic wraps
            u = b.op("Add", b.op("Add", u, odd), const(b, rest, unsigned))
        q = b.op("BitShift", u, s, direction="RIGHT")  # = result + zero point + K
        lo, hi = window
        return b.op("Cast", b.clip(q, k + zp + lo, k + zp + hi, dtype=unsigned), to=ONNX_INT[self.output.dtype])

    def requantize_integer_f32(self, b: GraphBuilder, y: str, dtype: Any = np.float32, bound: float | None = None) -> str:
        """Integer-valued (or half-even-pending) ``y`` -> output codes: fused ReLU / clip, then
        QuantizeLinear with scale 1 (rounds half to even, adds the zero point, saturates). A float64
        ``y`` is cast to float32 first, clamped to ±2**22 unless ``bound`` (its largest magnitude)
        says it stays below (exact either way; nothing it clamps survives the saturation, and
        onnxruntime's Relu+Clip fusion fails on float64): float32 operators cost half as much."""
        assert self.output is not None
        if np.dtype(dtype) == np.float64:
            if bound is None or bound >= 2.0**22:
                y = b.clip(y, -2.0**22, 2.0**22, dtype=np.float64)
            y = b.op("Cast", y, to=TensorProto.FLOAT)
        if self.activation is not None and self.activation[0] == "relu":
            y = b.op("Relu", y)
        elif self.activation is not None and self.activation[0] == "clip":
            lo, hi = clip_codes(self.activation[1], self.activation[2], self.output_scale)
            y = b.clip(y, max(-np.inf if lo is None else lo, -2.0**31), min(np.inf if hi is None else hi, 2.0**31))
        zp = np.asarray(self.output_zero_point).astype(self.output.dtype)
        return b.op("QuantizeLinear", y, const(b, 1.0, np.float32), const(b, zp, self.output.dtype))

    def requantize_terms(self, b: GraphBuilder, terms: Terms, ndim: int) -> str:
        """A8W8/A16W8: Σ value * C over 2**shift, rounded half to even (A12), then the finish.

        While every partial sum stays below 2**53 the sum of value * (C * 2**-shift) is exact in
        float64 and Round is half-even: few operators. Otherwise (or with a fused LeakyRelu, whose
        k/256 adds 8 bits) it runs in int64 with an exact shift."""
        top = max(float(np.max(mults)) for _, mults in terms)
        _, shift = multiplier(top)
        consts = [np.array([int(round(mi * 2.0**shift)) for mi in np.ravel(mults)], np.int64) for _, mults in terms]
        leaky = self.activation is not None and self.activation[0] == "leaky"
        bound = self.value_bound()
        if bound is not None and not leaky and bound * float(sum(int(c.max(initial=0)) for c in consts)) < 2.0**53:
            total = None
            for (value, _), c in zip(terms, consts):
                f = c.astype(np.float64) * 2.0**-shift  # exact: an integer below 2**23 times a power of two
                f = f.reshape(channel_shape(ndim, f.size, self.channel_axis)) if f.size > 1 else f.reshape(())
                part = b.op("Mul", _emitted(b, value, np.float64), const(b, f, np.float64))
                total = part if total is None else b.op("Add", total, part)
            magnitude = bound * float(sum(int(c.max(initial=0)) for c in consts)) * 2.0**-shift
            return self.requantize_integer_f32(b, b.op("Round", total), np.float64, bound=magnitude + 1)
        num = None
        for (value, _), c in zip(terms, consts):
            c = c.reshape(channel_shape(ndim, c.size, self.channel_axis)) if c.size > 1 else c.reshape(())
            part = b.op("Mul", _emitted(b, value, np.int64), const(b, c, np.int64))
            num = part if num is None else b.op("Add", num, part)
        if leaky:
            c = int(round(self.activation[1] * LEAKY_RELU_STEPS))
            neg = b.op("Less", num, const(b, 0, np.int64))
            num = b.op("Where", neg, b.op("Mul", num, const(b, c, np.int64)),
                       b.op("Mul", num, const(b, LEAKY_RELU_STEPS, np.int64)))
            shift += LEAKY_SHIFT
        elif bound is not None:
            fast = self.shift_to_codes(b, num, shift, bound * float(sum(int(c.max(initial=0)) for c in consts)))
            if fast is not None:
                return fast
        return self.saturate_codes(b, requant_int64(b, num, shift), np.int64)


def _emitted(b: GraphBuilder, value: str | Centred, dtype: type) -> str:
    """A requantisation term's integer values as a float64 or int64 tensor (int64 ones are cast)."""
    if isinstance(value, Centred):
        return value.emit(b, dtype)
    return value if dtype is np.int64 else b.op("Cast", value, to=TensorProto.DOUBLE)
