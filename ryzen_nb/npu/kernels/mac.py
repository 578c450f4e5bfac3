"""Integer multiply-accumulate kernels: Conv, Gemm, MatMul (including a MatMul of two activations).

The NPU accumulates Σ (x - zx)(w - zw) exactly, adds the bias and requantizes:

* XINT8: the bias enters as ``bias << shift_bias``, the sum is shifted right by
  ``shift_cut = pos_in + pos_w - pos_out`` with DPU_ROUND (docs/npu-numerics.md#xint8-requantization, A10/A11);
* A8W8/A16W8: a bias with scale s_in*s_w adds into the accumulator, then the integer multiplier
  and shift of ``s_in*s_w/s_out`` (per output channel), round half to even (docs/npu-numerics.md#a8w8-and-a16w8, A12).

The lowering tries the fastest exact route first: the whole requantisation folded into one float32
Conv/MatMul (:func:`~ryzen_nb.npu.kernels.exact_mac.f32_mac`; an XINT8 Conv's bias finer than the
accumulator splits, its whole part in the Conv and its fraction added after it); for XINT8 with DPU_ROUND,
ConvInteger/MatMulInteger and an integer shift; otherwise the exact int64 accumulator and float64
(XINT8) or int64 (A8W8/A16W8) requantisation.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
from onnx import TensorProto

from ryzen_nb.graph.builder import GraphBuilder
from ryzen_nb.npu.kernels.arithmetic import conv2d, multiplier
from ryzen_nb.npu.kernels.base import KernelGraph, gemm_mismatch
from ryzen_nb.npu.kernels.cases import Case
from ryzen_nb.npu.kernels.exact_mac import f32_mac, mac_bound, mac_integer, mac_operands
from ryzen_nb.npu.kernels.integer import IntegerKernel, Terms
from ryzen_nb.npu.kernels.lowering import channel_shape, const, half_step
from ryzen_nb.npu.kernels.mac_cases import conv_cases, gemm_cases, matmul_cases
from ryzen_nb.spec.dpu import LEAKY_RELU_STEPS, leaky_relu_alpha

__all__ = ["IntegerConv", "IntegerGemm", "IntegerMAC", "IntegerMatMul"]

_CONV_ATTRIBUTES = ("dilations", "group", "kernel_shape", "pads", "strides", "auto_pad")


class IntegerMAC(IntegerKernel):
    """What Conv, Gemm and MatMul share; the subclasses say how their weight is laid out."""

    #: the ONNX integer MAC operator of the lowering
    mac_op: ClassVar[str] = "MatMulInteger"
    #: rank the lowering broadcasts per-channel constants against (Conv: 4)
    lowered_rank: ClassVar[int] = 2
    #: whether the second operand may be an activation instead of a constant weight
    dynamic_ok: ClassVar[bool] = False

    # -- matching ----------------------------------------------------------------------------------
    def _match_operator(self, graph: KernelGraph) -> str:
        problem = self._match_attributes()
        if problem:
            return problem
        if len(self.node.input) < 2:
            return "it has no second operand"
        w = graph.quantized(self.node.input[1])
        if w is None or (w.values is None and not self.dynamic_ok):
            return f"its weight {self.node.input[1]!r} is not constant integer codes read through a DequantizeLinear"
        self.weight = w
        if len(self.node.input) > 2 and self.node.input[2]:
            bias = graph.quantized(self.node.input[2])
            if bias is None or bias.values is None:
                return f"its bias {self.node.input[2]!r} is not constant integer codes"
            self.bias = bias
        return ""

    def _match_attributes(self) -> str:
        return ""

    def _record_shapes(self, shapes: dict[str, list[int]]) -> str:
        if self.dynamic_weight:
            x = shapes.get(self.node.input[0])
            if x is None:
                return "its input has no static shape"
            self.attrs["_reduction"] = x[-1]
        return ""

    def marker_inputs(self) -> list[str]:
        assert self.weight is not None
        return [self.inputs[0].codes] + ([self.weight.codes] if self.dynamic_weight else [])

    # -- the operator's layout (subclasses) ----------------------------------------------------------
    def mac(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Numpy: the operator on centred codes (int64, exact)."""
        return np.matmul(x, w)

    def bias_shape(self, bias: np.ndarray, ndim: int) -> np.ndarray:
        """A per-output-channel vector shaped to add to the accumulator."""
        return bias

    def weight_matrix(self, w: np.ndarray) -> np.ndarray:
        """The weight as the lowering's MAC reads it: Conv as is, MatMul/Gemm [..., K, N]."""
        return w

    def reduction(self, w: np.ndarray) -> int:
        """Products summed per output, for a weight laid out by :meth:`weight_matrix`."""
        return int(w.shape[-2]) if w.ndim >= 2 else int(w.shape[0])

    def l1_per_output(self, w: np.ndarray) -> float:
        """max over outputs of Σ|w| for a weight laid out by :meth:`weight_matrix`."""
        a = np.abs(w)
        return float((a.sum(axis=-2) if a.ndim >= 2 else a.sum()).max(initial=0))

    def mac_attrs(self) -> dict[str, Any]:
        """Attributes of the lowering's ConvInteger / Conv (none for MatMul)."""
        return {}

    def float_mac(self, b: GraphBuilder, xf: str, wf: str, bias: np.ndarray | None, dtype: Any) -> str:
        """The operator in float32 (or float64) ONNX, plus an optional bias."""
        y = b.op("MatMul", xf, wf)
        return b.op("Add", y, const(b, np.asarray(bias, np.float64), dtype)) if bias is not None else y

    def value_bound(self) -> float:
        bias = float(np.abs(self.bias.centred(self.bias.values)).max(initial=0)) if self.bias is not None else 0.0
        return mac_bound(self) + bias

    # -- numpy reference -------------------------------------------------------------------------------
    def _weight_codes(self, inputs: Sequence[np.ndarray]) -> np.ndarray:
        """The weight codes: a constant, or the second input of a MatMul of two activations."""
        assert self.weight is not None
        return inputs[1] if self.dynamic_weight else self.weight.values

    def xint8_value(self, xs: list[np.ndarray], inputs: Sequence[np.ndarray]) -> np.ndarray:
        assert self.weight is not None
        acc = self.mac(xs[0], self.weight.centred(self._weight_codes(inputs))).astype(np.float64)
        p_acc = self.inputs[0].pos + self.weight.pos
        if self.bias is not None:
            b = self.bias.centred(self.bias.values).astype(np.float64)
            acc = acc + self.bias_shape(b, acc.ndim) * 2.0 ** (p_acc - self.bias.pos)  # bias << shift_bias
        return acc * 2.0 ** (self.output.pos - p_acc)  # >> shift_cut

    def scaled_terms(self, xs: list[np.ndarray], inputs: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        assert self.weight is not None
        acc = self.mac(xs[0], self.weight.centred(self._weight_codes(inputs)))
        s_in = float(np.ravel(self.inputs[0].scale)[0])
        ms = s_in * np.ravel(self.weight.scale).astype(np.float64) / self.output_scale
        if self.bias is None:
            return [(acc, ms)]
        b = self.bias_shape(self.bias.centred(self.bias.values), acc.ndim)
        if self.bias.aligned_with(s_in, self.weight.scale):
            return [(acc + b, ms)]  # the bias adds into the accumulator
        return [(acc, ms), (np.broadcast_to(b, acc.shape), np.ravel(self.bias.scale).astype(np.float64) / self.output_scale)]

    # -- lowering: XINT8 -----------------------------------------------------------------------------
    def lower_xint8(self, b: GraphBuilder, inputs: list[str], rounding: str) -> str:
        assert self.weight is not None
        w_codes = inputs[1] if self.dynamic_weight else None
        # one float32 MAC; else one integer MAC; else two float32 MACs (the weight's base-16 digits)
        fast = self._xint8_f32(b, inputs[0], w_codes, rounding, digits=False)
        if fast is None and rounding == "half_up" and self.inputs[0].dtype.itemsize == 1:
            fast = self._xint8_int32(b, inputs[0], w_codes)
        if fast is None:
            fast = self._xint8_f32(b, inputs[0], w_codes, rounding)
        if fast is not None:
            return fast
        acc = b.op("Cast", mac_integer(b, self, inputs[0], w_codes), to=TensorProto.DOUBLE)
        p_acc = self.inputs[0].pos + self.weight.pos
        if self.bias is not None:
            bias = self.bias.centred(self.bias.values).astype(np.float64) * 2.0 ** (p_acc - self.bias.pos)
            acc = b.op("Add", acc, const(b, self.bias_shape(bias, self.lowered_rank), np.float64))
        v = b.op("Mul", acc, const(b, 2.0 ** (self.output.pos - p_acc), np.float64))
        return self.finish_double(b, v, rounding)

    def _xint8_bias(self, p_acc: int) -> np.ndarray | None:
        """The bias in accumulator units (``bias << shift_bias``), None when it has a finer
        position than the accumulator (then only the float64 route is exact)."""
        assert self.bias is not None
        shift_bias = p_acc - self.bias.pos
        return None if shift_bias < 0 else self.bias.centred(self.bias.values) * 2**shift_bias

    def _xint8_f32(self, b: GraphBuilder, x: str, w_codes: str | None, rounding: str, digits: bool = True) -> str | None:
        """The XINT8 MAC at FP32 speed: accumulator (bias << shift_bias included) scaled by
        2**-shift_cut in the Conv itself, the fused activation, then QuantizeLinear(scale 1) rounds
        half to even, adds the zero point and saturates. For DPU_ROUND half an accumulator unit rides
        in the bias (:func:`ties_up`), or, with a LeakyRelu or the float64 route, Floor(v + 0.5)."""
        assert self.weight is not None
        p_acc = self.inputs[0].pos + self.weight.pos
        shift = p_acc - self.output.pos
        leaky = self.activation is not None and self.activation[0] == "leaky"
        bias = None
        fraction: np.ndarray | None = None  # of a bias finer than the accumulator, added after the MAC
        if self.bias is not None:
            bias = self._xint8_bias(p_acc)
            if bias is None:
                split = None if leaky else self._xint8_fine_bias(p_acc, shift)
                if split is None:
                    return None
                bias, fraction = split
        nudge = rounding == "half_up" and not leaky and shift > 0 and fraction is None  # ties_up: half a unit
        if nudge:
            bias = (np.zeros(1, np.int64) if bias is None else bias).astype(np.float64) + 0.5
        if leaky and leaky_relu_alpha(self.activation[1]) > 1:
            return None  # Max(v, alpha v) picks the negative branch only for slopes up to 1
        margin = float(LEAKY_RELU_STEPS) if leaky else 1.0  # the k/256 slope adds 8 fractional bits
        # a split bias's fraction is added in float32 only (one float32 MAC, not the float64 digits)
        mac = f32_mac(b, self, x, w_codes, bias, 2.0**-shift, margin, digits and fraction is None)
        if mac is None:
            return None
        v, dtype = mac
        if fraction is not None:
            v = self._add_fine_bias(b, v, fraction, rounding)
        if leaky:
            v = b.op("Max", v, b.op("Mul", v, const(b, leaky_relu_alpha(self.activation[1]), dtype)))  # exact
        if rounding == "half_up" and (leaky or dtype == np.float64 and shift > 0):
            # the k/256 slope's fraction, or a float64 value with one float32 may not hold: round here
            v = b.op("Floor", b.op("Add", v, const(b, 0.5, dtype)))
        return self.requantize_integer_f32(b, v, dtype)

    def _xint8_fine_bias(self, p_acc: int, shift: int) -> tuple[np.ndarray, np.ndarray] | None:
        """A bias with a finer position than the accumulator, ``k = pos_bias - p_acc`` fractional
        bits, for a MAC that float32 computes: its whole part in accumulator units (the float32
        Conv sums it exactly with the products) and, per output channel, its fraction in output
        units (:meth:`_add_fine_bias` adds it after the MAC). None where that is not exact: see
        :class:`IntegerConv`; the other MACs keep the integer route."""
        return None

    def _add_fine_bias(self, b: GraphBuilder, v: str, fraction: np.ndarray, rounding: str) -> str:
        raise NotImplementedError  # only where _xint8_fine_bias splits a bias

    def _xint8_int32(self, b: GraphBuilder, x: str, w_codes: str | None) -> str | None:
        """The XINT8 MAC requantised with int32 operations only (:meth:`shift_to_codes`, DPU_ROUND),
        or None when the ranges do not allow it. A bias with a finer position than the accumulator
        is met by shifting the accumulator up instead of the bias."""
        assert self.weight is not None and self.output is not None
        if self.activation is not None and self.activation[0] == "leaky" or self.weight.dtype.itemsize != 1:
            return None
        p_acc = self.inputs[0].pos + self.weight.pos
        up = 0 if self.bias is None else max(0, self.bias.pos - p_acc)  # bias << shift_bias, or acc << -shift_bias
        shift = p_acc + up - self.output.pos
        bias = np.zeros(1, np.int64)
        if self.bias is not None:
            bias = self.bias.centred(self.bias.values).astype(np.int64) * 2 ** (p_acc + up - self.bias.pos)
        bound = mac_bound(self) * 2.0**up + float(np.abs(bias).max(initial=0))
        if self.lowered_rank == 4 and bias.size > 1:
            bias = bias.reshape(channel_shape(4, bias.size, self.channel_axis))
        else:
            bias = bias.reshape(-1 if bias.size > 1 else ())
        if shift < 0 or self.code_window() is None:
            return None
        acc = b.op(self.mac_op, *mac_operands(b, self, x, w_codes), **self.mac_attrs())
        if up:
            acc = b.op("Mul", acc, const(b, 2**up, np.int32))
        return self.shift_to_codes(b, acc, shift, bound, bits=32, rounding="half_up", add=bias)

    # -- lowering: A8W8 / A16W8 ------------------------------------------------------------------------
    def lower_scaled(self, b: GraphBuilder, inputs: list[str]) -> str:
        w_codes = inputs[1] if self.dynamic_weight else None
        fast = self._scaled_double(b, inputs[0], w_codes)
        return fast if fast is not None else super().lower_scaled(b, inputs)

    def lower_scaled_terms(self, b: GraphBuilder, inputs: list[str]) -> tuple[Terms, int]:
        assert self.weight is not None
        acc = mac_integer(b, self, inputs[0], inputs[1] if self.dynamic_weight else None)
        s_in = float(np.ravel(self.inputs[0].scale)[0])
        ms = s_in * np.ravel(self.weight.scale).astype(np.float64) / self.output_scale
        if self.bias is None:
            return [(acc, ms)], self.lowered_rank
        bias = const(b, self._bias_vector(), np.int64)
        if self.bias.aligned_with(s_in, self.weight.scale):
            return [(b.op("Add", acc, bias), ms)], self.lowered_rank
        return [(acc, ms), (bias, np.ravel(self.bias.scale).astype(np.float64) / self.output_scale)], self.lowered_rank

    def _bias_vector(self) -> np.ndarray:
        """Centred bias codes (int64), shaped to add to the lowered accumulator."""
        assert self.bias is not None
        bias = self.bias.centred(self.bias.values)
        return bias.reshape(channel_shape(self.lowered_rank, bias.size, self.channel_axis) if self.lowered_rank == 4
                            else [bias.size])

    def _scaled_double(self, b: GraphBuilder, x: str, w_codes: str | None) -> str | None:
        """A8W8 MAC requantised in float64 — exact when |acc * C| < 2**53 and the bias has the
        scale s_in*s_w (then it adds to the int32 accumulator): acc * (C * 2**-shift), rounded half
        to even, the same numbers as the int64 route."""
        assert self.weight is not None
        if self.inputs[0].dtype.itemsize != 1 or self.weight.dtype.itemsize != 1 or \
                (self.activation and self.activation[0] == "leaky"):
            return None
        s_in = float(np.ravel(self.inputs[0].scale)[0])
        m = s_in * np.ravel(self.weight.scale).astype(np.float64) / self.output_scale
        _, shift = multiplier(float(np.max(m)))
        c = np.array([int(round(mi * 2.0**shift)) for mi in m], np.int64)
        bias = None
        if self.bias is not None:
            if not self.bias.aligned_with(s_in, self.weight.scale):
                return None
            bias = self.bias.centred(self.bias.values)
        bound = mac_bound(self) + (float(np.abs(bias).max(initial=0)) if bias is not None else 0.0)
        if bound >= 2**31 or bound * float(c.max(initial=0)) >= 2.0**53:
            return None
        mac = f32_mac(b, self, x, w_codes, bias, 1.0, digits=False)  # the exact accumulator at FP32 speed, if it fits
        if mac is not None:
            acc = mac[0]
        else:
            acc = b.op(self.mac_op, *mac_operands(b, self, x, w_codes), **self.mac_attrs())
            if bias is not None:
                acc = b.op("Add", acc, const(b, self._bias_vector(), np.int32))
        factor = c.astype(np.float64) * 2.0**-shift  # exact: a 23-bit integer times a power of two
        factor = (factor.reshape(channel_shape(self.lowered_rank, factor.size, self.channel_axis)) if factor.size > 1
                  else factor.reshape(()))
        y = b.op("Round", b.op("Mul", b.op("Cast", acc, to=TensorProto.DOUBLE), const(b, factor, np.float64)))
        return self.requantize_integer_f32(b, y, np.float64, bound=bound * float(np.max(factor)) + 1)


class IntegerConv(IntegerMAC):
    """2-D convolution (1-D and 3-D ones compute as in the QDQ simulation)."""

    op_types = ("Conv",)
    mac_op = "ConvInteger"
    lowered_rank = 4
    channel_axis = 1

    def _match_attributes(self) -> str:
        if len(self.attrs.get("kernel_shape", [1, 1]) or [1, 1]) != 2:
            return "only 2-D convolutions compute with NPU arithmetic here"
        return ""

    def _match_operator(self, graph: KernelGraph) -> str:
        problem = super()._match_operator(graph)
        if not problem and self.weight is not None and np.unique(self.weight.zero_point).size > 1:
            return "its weight has per-channel zero points that differ (onnxruntime's ConvInteger takes one)"
        return problem

    def mac(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return conv2d(x, w, self.attrs)

    def bias_shape(self, bias: np.ndarray, ndim: int) -> np.ndarray:
        return bias.reshape(1, -1, *([1] * (ndim - 2)))

    def reduction(self, w: np.ndarray) -> int:
        return int(w.size // w.shape[0])

    def l1_per_output(self, w: np.ndarray) -> float:
        a = np.abs(w)
        return float(a.reshape(a.shape[0], -1).sum(axis=1).max(initial=0))

    def mac_attrs(self) -> dict[str, Any]:
        return {a: self.attrs[a] for a in _CONV_ATTRIBUTES if a in self.attrs}

    def float_mac(self, b: GraphBuilder, xf: str, wf: str, bias: np.ndarray | None, dtype: Any) -> str:
        inputs = [xf, wf]
        if bias is not None:
            assert self.weight is not None and self.weight.values is not None
            channels = self.weight.values.shape[0]
            inputs.append(const(b, np.broadcast_to(np.asarray(bias).reshape(-1), (channels,)), dtype))
        return b.op("Conv", *inputs, **self.mac_attrs())

    #: the finest step (in output units) whose sums float32 holds for every output that does not
    #: saturate: 2**-16 from 2**24 steps to 2**8 > 128 in magnitude (see _xint8_fine_bias)
    _FINEST_STEP_BITS: ClassVar[int] = 16

    def _xint8_fine_bias(self, p_acc: int, shift: int) -> tuple[np.ndarray, np.ndarray] | None:
        """XINT8 biases often sit k bits finer than the accumulator (ResNet50: 36 of 53 Convs), which
        kept those Convs on ConvInteger and an int32 shift. Split: ``bias * 2**-k = whole + fraction``,
        ``whole`` an integer in accumulator units that rides in the float32 Conv's bias (exact, as
        the products), ``fraction`` in [0, 1) accumulator units, i.e. a multiple of ``2**-(k+shift)``
        output units. Adding it (and DPU_ROUND's half of that step) after the Conv rounds nothing
        while the value stays below ``2**24`` such half steps, at least 128 for ``k + shift`` up to
        16; beyond, the value saturates either way (rounding is monotone and ±128 are float32
        numbers), so the codes are exact."""
        assert self.bias is not None and self.weight is not None
        k = self.bias.pos - p_acc
        fine = k + shift
        if self.weight.values is None or self.weight.values.ndim != 4 or not 1 <= fine <= self._FINEST_STEP_BITS:
            return None
        codes = self.bias.centred(self.bias.values).astype(np.int64)
        whole = np.floor_divide(codes, 2**k)
        return whole, (codes - whole * 2**k).astype(np.float64) * 2.0**-fine

    def _add_fine_bias(self, b: GraphBuilder, v: str, fraction: np.ndarray, rounding: str) -> str:
        """``v + fraction`` per output channel, DPU_ROUND's half of the finest step with it
        (:func:`ties_up`), by a 1x1 depthwise Conv with a kernel of ones: onnxruntime keeps its
        blocked layout from Conv to Conv and fuses the ReLU that follows, where an Add would make it
        reorder the tensor out and back in (and fold the Add into the Conv's own bias, which would
        round it)."""
        assert self.weight is not None and self.weight.values is not None
        assert self.bias is not None and self.output is not None
        channels = self.weight.values.shape[0]
        fraction = np.broadcast_to(fraction.reshape(-1), (channels,))
        # the value is a multiple of 2**-(pos_bias - pos_out) output units
        half = half_step(self.output.pos - self.bias.pos) if rounding == "half_up" else 0.0
        ones = const(b, np.ones((channels, 1, 1, 1), np.float32), np.float32)
        return b.op("Conv", v, ones, const(b, (fraction + half).astype(np.float32), np.float32),
                    group=channels, kernel_shape=[1, 1])

    @classmethod
    def cases(cls) -> Iterator[Case]:
        return conv_cases()


class IntegerGemm(IntegerMAC):
    """Gemm without transA, alpha or beta (those compute as in the QDQ simulation)."""

    op_types = ("Gemm",)

    def _match_attributes(self) -> str:
        return gemm_mismatch(self.attrs)

    def mac(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return x @ self.weight_matrix(w)

    def weight_matrix(self, w: np.ndarray) -> np.ndarray:
        return w.T if self.attrs.get("transB", 0) else w

    @classmethod
    def cases(cls) -> Iterator[Case]:
        return gemm_cases()


class IntegerMatMul(IntegerMAC):
    """MatMul by a constant weight, or of two activations (attention)."""

    op_types = ("MatMul",)
    dynamic_ok = True

    @classmethod
    def cases(cls) -> Iterator[Case]:
        return matmul_cases()
