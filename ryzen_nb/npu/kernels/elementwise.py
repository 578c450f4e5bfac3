"""Integer kernels of one value at a time: Add, Mul, LeakyRelu, HardSigmoid."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from ryzen_nb.graph.attributes import attribute
from ryzen_nb.graph.builder import GraphBuilder
from ryzen_nb.npu.kernels.base import KernelGraph
from ryzen_nb.npu.kernels.cases import Case, CaseGraph
from ryzen_nb.npu.kernels.integer import IntegerKernel, Terms
from ryzen_nb.npu.kernels.lowering import (
    Centred,
    centred,
    code_bound,
    const,
    dequantized,
    f32_holds,
    half_step,
    ties_up,
)
from ryzen_nb.spec.dpu import HARD_SIGMOID_ALPHA, HARD_SIGMOID_MULTIPLIER, HARD_SIGMOID_SHIFT, leaky_relu_alpha

__all__ = ["IntegerAdd", "IntegerHardSigmoid", "IntegerLeakyRelu", "IntegerMul"]

#: float-scale quantization of 8- and 16-bit activations in the cases: (dtype, zero point, scale)
_INT8_ASYM = (np.int8, -7, 0.0371)
_INT16 = (np.int16, 1200, 0.00042)


class IntegerAdd(IntegerKernel):
    """Add of two quantized tensors (one may be a quantized constant): XINT8 aligns both to the
    finer position by shifts; A8W8/A16W8 weight each by its own multiplier."""

    op_types = ("Add",)
    operands = 2

    def xint8_value(self, xs: list[np.ndarray], inputs: Sequence[np.ndarray]) -> np.ndarray:
        p_max = max(r.pos for r in self.inputs)
        s = sum(x.astype(np.float64) * 2.0 ** (p_max - r.pos) for r, x in zip(self.inputs, xs))
        return s * 2.0 ** (self.output.pos - p_max)

    def lower_xint8_value(self, b: GraphBuilder, inputs: list[str]) -> str:
        p_max = max(r.pos for r in self.inputs)
        parts = [b.op("Mul", centred(b, x, r), const(b, 2.0 ** (p_max - r.pos), np.float64))
                 for x, r in zip(inputs, self.inputs)]
        return b.op("Mul", b.op("Add", *parts), const(b, 2.0 ** (self.output.pos - p_max), np.float64))

    def lower_xint8_value_f32(self, b: GraphBuilder, inputs: list[str], *, half_up: bool) -> str | None:
        # Σ (x - zx) * 2**(pos_out - pos_x): each term a code times a power of two
        exponents = [self.output.pos - r.pos for r in self.inputs]
        if not f32_holds(sum(code_bound(r) * 2.0**e for r, e in zip(self.inputs, exponents)), min(exponents)):
            return None
        half: float | None = half_step(min(exponents)) if half_up else 0.0
        terms = []
        for x, r, e in zip(inputs, self.inputs, exponents):
            if r.values is not None and half is not None:
                # a constant operand (MobileNetV3's x + 3) is one constant with the half: one Add less
                terms.append(const(b, (r.centred(r.values) * 2.0**e + half).astype(np.float32), np.float32))
                half = None
            else:
                terms.append(dequantized(b, x, r, 2.0**e))
        v = b.op("Add", *terms)
        return b.op("Add", v, const(b, half, np.float32)) if half else v

    def scaled_terms(self, xs: list[np.ndarray], inputs: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        return [(x, np.ravel(r.scale).astype(np.float64) / self.output_scale) for r, x in zip(self.inputs, xs)]

    def lower_scaled_terms(self, b: GraphBuilder, inputs: list[str]) -> tuple[Terms, int]:
        return [(Centred((x,), (r,)), np.ravel(r.scale).astype(np.float64) / self.output_scale)
                for x, r in zip(inputs, self.inputs)], 1

    def value_bound(self) -> float:
        return max(float(code_bound(r)) for r in self.inputs) * len(self.inputs)

    @classmethod
    def cases(cls) -> Iterator[Case]:
        for activation in (None, *cls.activations):
            g = CaseGraph("add", "XINT8", seed=1)
            a = g.codes("a", [1, 4, 5, 5], 2.0**-4, 128, np.uint8)
            c = g.codes("b", [1, 4, 5, 5], 2.0**-5, 0, np.int8)
            # float32 from two DequantizeLinear (exact: codes times powers of two); float64 with LeakyRelu
            yield g.case(g.quantize(g.op("Add", [a, c], under_test=True), 2.0**-3, 128, np.uint8,
                                    activation=activation), route={"DequantizeLinear": 0 if activation == "leaky" else 2})
            for precision, (dtype, zp, scale) in (("A8W8", _INT8_ASYM), ("A16W8", _INT16)):
                g = CaseGraph("add", precision, seed=2)
                a = g.codes("a", [2, 3, 7], scale, zp, dtype)
                c = g.codes("b", [2, 3, 7], scale * 1.37, -zp // 3, dtype)
                # a fused LeakyRelu makes requantisation run in int64, the rest in float64
                route = {"BitwiseAnd": 1, "Round": 0} if activation == "leaky" else {"BitwiseAnd": 0, "Round": 1}
                yield g.case(g.quantize(g.op("Add", [a, c], under_test=True), scale * 1.9, zp // 2, dtype,
                                        activation=activation), route=route)
        for activation in (None, "leaky"):  # float64 and int64 requantisation
            # multipliers 1/2 and 1/4: ties everywhere, rounded half to even
            g = CaseGraph("add_ties", "A8W8", seed=4)
            a = g.codes("a", [2, 3, 7], 0.5, 3, np.int8)
            c = g.codes("b", [2, 3, 7], 0.25, -1, np.int8)
            yield g.case(g.quantize(g.op("Add", [a, c], under_test=True), 1.0, 0, np.int8, activation=activation))
        # a quantized constant operand, broadcast; a finer output position that saturates
        g = CaseGraph("add_constant_saturating", "XINT8", seed=3)
        a = g.codes("a", [1, 4, 3, 3], 2.0**-3, 128, np.uint8)
        c = g.weight("c", g.random_codes([4, 1, 1], np.int8), 2.0**-6)
        # its dequantized codes and DPU_ROUND's half are one constant: one Add, one DequantizeLinear
        yield g.case(g.quantize(g.op("Add", [a, c], under_test=True), 2.0**-5, 0, np.int8), saturates=True,
                     route={"Add": 1, "DequantizeLinear": 1})
        g = CaseGraph("add_uint8_saturating", "A8W8", seed=4)
        a = g.codes("a", [1, 4, 3, 3], 0.0297, 131, np.uint8)
        c = g.codes("b", [1, 4, 3, 3], 0.011, 3, np.int8)
        yield g.case(g.quantize(g.op("Add", [a, c], under_test=True), 0.013, 0, np.int8), saturates=True)


class IntegerMul(IntegerKernel):
    """Mul of two quantized tensors: the product of the centred codes, one multiplier (or shift)."""

    op_types = ("Mul",)
    operands = 2

    def xint8_value(self, xs: list[np.ndarray], inputs: Sequence[np.ndarray]) -> np.ndarray:
        return xs[0].astype(np.float64) * xs[1] * 2.0 ** (self.output.pos - self.inputs[0].pos - self.inputs[1].pos)

    def lower_xint8_value(self, b: GraphBuilder, inputs: list[str]) -> str:
        a0, a1 = (centred(b, x, r) for x, r in zip(inputs, self.inputs))
        shift = self.output.pos - self.inputs[0].pos - self.inputs[1].pos
        return b.op("Mul", b.op("Mul", a0, a1), const(b, 2.0**shift, np.float64))

    def lower_xint8_value_f32(self, b: GraphBuilder, inputs: list[str], *, half_up: bool) -> str | None:
        # (x0 - z0) * 2**shift times (x1 - z1): an integer product times a power of two
        shift = self.output.pos - self.inputs[0].pos - self.inputs[1].pos
        if not f32_holds(float(code_bound(self.inputs[0]) * code_bound(self.inputs[1])) * 2.0**shift, shift):
            return None
        v = b.op("Mul", dequantized(b, inputs[0], self.inputs[0], 2.0**shift),
                 dequantized(b, inputs[1], self.inputs[1], 1.0))
        return ties_up(b, v, shift) if half_up else v

    def _multiplier(self) -> np.ndarray:
        s0, s1 = (float(np.ravel(r.scale)[0]) for r in self.inputs)
        return np.array([s0 * s1 / self.output_scale])

    def scaled_terms(self, xs: list[np.ndarray], inputs: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        return [(xs[0] * xs[1], self._multiplier())]

    def lower_scaled_terms(self, b: GraphBuilder, inputs: list[str]) -> tuple[Terms, int]:
        return [(Centred(tuple(inputs[:2]), tuple(self.inputs[:2])), self._multiplier())], 1

    def value_bound(self) -> float:
        return float(np.prod([float(code_bound(r)) for r in self.inputs]))

    @classmethod
    def cases(cls) -> Iterator[Case]:
        for activation in (None, *cls.activations):
            g = CaseGraph("mul", "XINT8", seed=5)
            a = g.codes("a", [1, 3, 4, 4], 2.0**-4, 128, np.uint8)
            c = g.codes("b", [1, 3, 4, 4], 2.0**-6, 0, np.int8)
            yield g.case(g.quantize(g.op("Mul", [a, c], under_test=True), 2.0**-1, 0, np.int8, activation=activation),
                         route={"DequantizeLinear": 0 if activation == "leaky" else 2})
            for precision, (dtype, zp, scale) in (("A8W8", _INT8_ASYM), ("A16W8", _INT16)):
                # float64 while the products times C stay below 2**53; int64 with a fused LeakyRelu
                route = {"BitwiseAnd": 1} if activation == "leaky" else {"BitwiseAnd": 0, "Round": 1}
                g = CaseGraph("mul", precision, seed=6)
                a = g.codes("a", [3, 8], scale, zp, dtype)
                c = g.codes("b", [3, 8], scale * 3.1, 0, dtype)
                # products at about ±40 codes (int8; in proportion for int16)
                s_out = scale * scale * 3.1 * g.code_std(dtype) ** 2 / (40 * np.iinfo(dtype).max / 127)
                out = g.quantize(g.op("Mul", [a, c], under_test=True), s_out, zp // 4, dtype,
                                 activation=activation)
                yield g.case(out, route=route)
        g = CaseGraph("mul_saturating", "A8W8", seed=7)
        a = g.codes("a", [2, 9], 0.0297, 131, np.uint8)
        c = g.codes("b", [2, 9], 0.02, -3, np.int8)
        yield g.case(g.quantize(g.op("Mul", [a, c], under_test=True), 0.004, 0, np.int8), saturates=True)


class IntegerLeakyRelu(IntegerKernel):
    """LeakyRelu as an operator of its own: XINT8 with the slope on the DPU's k/256 grid
    (docs/npu-numerics.md#dpu-rewrites); A8W8/A16W8 with the slope folded into a second multiplier."""

    op_types = ("LeakyRelu",)

    def _alpha(self) -> float:
        return float(self.attrs.get("alpha", 0.01))

    def xint8_value(self, xs: list[np.ndarray], inputs: Sequence[np.ndarray]) -> np.ndarray:
        x = xs[0].astype(np.float64)
        return np.where(x < 0, x * leaky_relu_alpha(self._alpha()), x) * 2.0 ** (self.output.pos - self.inputs[0].pos)

    def lower_xint8_value(self, b: GraphBuilder, inputs: list[str]) -> str:
        x = centred(b, inputs[0], self.inputs[0])
        alpha = const(b, leaky_relu_alpha(self._alpha()), np.float64)
        y = b.op("Where", b.op("Less", x, const(b, 0.0, np.float64)), b.op("Mul", x, alpha), x)
        return b.op("Mul", y, const(b, 2.0 ** (self.output.pos - self.inputs[0].pos), np.float64))

    def _multipliers(self) -> tuple[np.ndarray, np.ndarray]:
        m = float(np.ravel(self.inputs[0].scale)[0]) / self.output_scale
        return np.array([m]), np.array([m * self._alpha()])

    def scaled_terms(self, xs: list[np.ndarray], inputs: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        positive, negative = self._multipliers()
        return [(np.where(xs[0] >= 0, xs[0], 0), positive), (np.where(xs[0] < 0, xs[0], 0), negative)]

    def lower_scaled_terms(self, b: GraphBuilder, inputs: list[str]) -> tuple[Terms, int]:
        x = centred(b, inputs[0], self.inputs[0], np.int64)
        zero = const(b, 0, np.int64)
        positive, negative = self._multipliers()
        return [(b.op("Max", x, zero), positive), (b.op("Min", x, zero), negative)], 1

    def value_bound(self) -> float:
        return float(code_bound(self.inputs[0]))

    @classmethod
    def cases(cls) -> Iterator[Case]:
        for activation in (None, *cls.activations):
            for precision, (dtype, zp, scale) in (("XINT8", (np.uint8, 128, 2.0**-4)), ("A8W8", _INT8_ASYM),
                                                  ("A16W8", _INT16)):
                g = CaseGraph("leaky_relu", precision, seed=8)
                x = g.codes("x", [1, 2, 5, 5], scale, zp, dtype)
                y = g.op("LeakyRelu", [x], alpha=0.13, under_test=True)
                out_scale = scale * 2 if precision == "XINT8" else scale * 1.3
                yield g.case(g.quantize(y, out_scale, zp, dtype, activation=activation, alpha=0.3))


class IntegerHardSigmoid(IntegerKernel):
    """HardSigmoid as the DPU computes it: (x + 3) * 2731 / 2**14 instead of x/6 + 1/2
    (docs/npu-numerics.md#dpu-rewrites), XINT8 only; float-scale models evaluate it in bf16 (A13, see :mod:`.nonlinear`)."""

    op_types = ("HardSigmoid",)
    precisions = ("XINT8",)
    #: x/6 + 1/2 = (x + 3)/6: the offset in units of the input
    OFFSET = 3

    def _match_operator(self, graph: KernelGraph) -> str:
        alpha = float(attribute(self.node, "alpha", 0.2))
        beta = float(attribute(self.node, "beta", 0.5))
        one_sixth = abs(alpha - 1 / 6) < 1e-6 or abs(alpha - HARD_SIGMOID_ALPHA) < 1e-7
        if not one_sixth or abs(beta / alpha - self.OFFSET) > 1e-5:
            return f"HardSigmoid(alpha={alpha:g}, beta={beta:g}) is not the DPU's x/6 + 1/2"
        return ""

    def xint8_value(self, xs: list[np.ndarray], inputs: Sequence[np.ndarray]) -> np.ndarray:
        p_in = self.inputs[0].pos
        t = xs[0] * float(HARD_SIGMOID_MULTIPLIER) + self.OFFSET * HARD_SIGMOID_MULTIPLIER * 2.0**p_in
        return np.clip(t, 0, 2.0**32) * 2.0 ** -(HARD_SIGMOID_SHIFT + p_in - self.output.pos)

    def lower_xint8_value(self, b: GraphBuilder, inputs: list[str]) -> str:
        p_in = self.inputs[0].pos
        x = centred(b, inputs[0], self.inputs[0])
        t = b.op("Add", b.op("Mul", x, const(b, float(HARD_SIGMOID_MULTIPLIER), np.float64)),
                 const(b, self.OFFSET * HARD_SIGMOID_MULTIPLIER * 2.0**p_in, np.float64))
        t = b.op("Min", b.op("Max", t, const(b, 0.0, np.float64)), const(b, 2.0**32, np.float64))
        return b.op("Mul", t, const(b, 2.0 ** -(HARD_SIGMOID_SHIFT + p_in - self.output.pos), np.float64))

    def lower_xint8_value_f32(self, b: GraphBuilder, inputs: list[str], *, half_up: bool) -> str | None:
        # (x * 2731 + 3 * 2731 * 2**p_in) * 2**-k, clipped at 0: a 20-bit integer times powers of two
        p_in, k = self.inputs[0].pos, HARD_SIGMOID_SHIFT + self.inputs[0].pos - self.output.pos
        offset = self.OFFSET * HARD_SIGMOID_MULTIPLIER * 2.0**p_in
        bound = (code_bound(self.inputs[0]) * HARD_SIGMOID_MULTIPLIER + offset) * 2.0**-k
        step = min(0, p_in) - k
        if bound >= 2.0**32 * 2.0**-k or not f32_holds(bound, step):
            return None  # (the float64 route's clip at 2**32 never binds below that bound)
        x = dequantized(b, inputs[0], self.inputs[0], float(HARD_SIGMOID_MULTIPLIER) * 2.0**-k)
        # the half goes in with the offset, before the Relu: a negative sum is at most -1 step, so
        # the Relu still gives 0 where it gave 0 (and 0 + half rounded to 0); elsewhere the same sum
        half = half_step(step) if half_up else 0.0
        return b.op("Relu", b.op("Add", x, const(b, offset * 2.0**-k + half, np.float32)))

    @classmethod
    def cases(cls) -> Iterator[Case]:
        # inputs over ±8 (position 4) cross both knees at -3 and +3; output position 7 (the X1 minimum)
        for activation in (None, *cls.activations):
            g = CaseGraph("hard_sigmoid", "XINT8", seed=9)
            x = g.codes("x", [1, 4, 8, 8], 2.0**-4, 128, np.uint8)
            y = g.op("HardSigmoid", [x], alpha=HARD_SIGMOID_ALPHA, beta=HARD_SIGMOID_ALPHA * cls.OFFSET,
                     under_test=True)
            # float32 (exact here, one Add: the offset and DPU_ROUND's half) but with a fused
            # LeakyRelu, which needs float64
            route = {"DequantizeLinear": 0, "Where": 1} if activation == "leaky" else {"DequantizeLinear": 1, "Add": 1}
            yield g.case(g.quantize(y, 2.0**-7, 0, np.int8, activation=activation, clip=(0.0, 0.75)),
                         saturates=activation != "clip", route=route)
        # input and output at one position: (x + 3)/6 lands on halves, and 2731 rather than 2**14/6
        # decides how each rounds; alpha 1/6 as exported, before the DPU rewrite, computes the same
        g = CaseGraph("hard_sigmoid_ties", "XINT8", seed=10)
        x = g.codes("x", [2, 128], 2.0**-7, 0, np.int8)
        y = g.op("HardSigmoid", [x], alpha=1 / 6, beta=0.5, under_test=True)
        yield g.case(g.quantize(y, 2.0**-7, 0, np.int8), route={"DequantizeLinear": 1, "Add": 1})
