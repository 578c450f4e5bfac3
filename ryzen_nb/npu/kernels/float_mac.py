"""Float MAC kernels (BF16, BFP16, MX on VAIML): Conv, Gemm, MatMul with bf16 operands.

The NPU multiplies bf16 operands (BFP16/MX operands arrive on their own grid, which bf16 holds),
accumulates in FP32 and rounds the output to bf16 (docs/npu-numerics.md#bf16, A15). The emulator sums the
products exactly (float64 is exact for them: any order gives the same float32), then rounds to
float32 and to bf16. ``accumulation="fp32"`` sums in onnxruntime's float32 instead: several times
faster, within one bf16 unit of "exact" where a rounding flips.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

from ryzen_nb import formats
from ryzen_nb.graph.attributes import attributes
from ryzen_nb.graph.builder import GraphBuilder
from ryzen_nb.npu.kernels.arithmetic import bf16, conv2d
from ryzen_nb.npu.kernels.base import Kernel, KernelGraph, gemm_mismatch
from ryzen_nb.npu.kernels.cases import Case, CaseGraph
from ryzen_nb.npu.kernels.lowering import bf16_round, const

__all__ = ["FloatConv", "FloatGemm", "FloatMAC", "FloatMatMul"]

_CONV_ATTRIBUTES = ("dilations", "group", "kernel_shape", "pads", "strides", "auto_pad")
#: the grid each precision's operands arrive on in the cases (BF16 kernels round their operands themselves)
_CASE_FORMAT = {"BFP16": "BFP16", "MX": "MXINT8"}


class FloatMAC(Kernel):
    """What the three float MAC kernels share; the subclasses give the operator's arithmetic."""

    precisions = ("BF16", "BFP16", "MX")
    arithmetic = "bf16, exact accumulation"

    @classmethod
    def _match(cls, node: onnx.NodeProto, precision: str, graph: KernelGraph) -> Kernel | str:
        k = cls(node, precision, attrs=attributes(node), replaced=[node], float_output=node.output[0])
        problem = k._match_attributes() or k._record_shapes(graph.index.static_shapes)
        return problem or k

    def _match_attributes(self) -> str:
        return ""

    def _record_shapes(self, shapes: dict[str, list[int]]) -> str:
        return ""

    def marker_inputs(self) -> list[str]:
        return list(self.node.input)

    def marker_outputs(self) -> list[str]:
        return [self.float_output]

    # -- the operator (subclasses) -----------------------------------------------------------------
    def mac(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return np.matmul(x, w)

    def bias_shape(self, bias: np.ndarray, ndim: int) -> np.ndarray:
        return bias

    def lower_operator(self, b: GraphBuilder, operands: list[str], fp32: bool) -> str:
        """The operator on float64 (exact) or float32 (``fp32``) operands, bias ("" if none) included."""
        y = b.op("MatMul", operands[0], operands[1])
        return b.op("Add", y, operands[2]) if len(operands) > 2 and operands[2] else y

    # -- the two executors ---------------------------------------------------------------------------
    def _operand(self, x: np.ndarray) -> np.ndarray:
        """bf16 operands (BF16), or the model's own quantized values (BFP16/MX), in float64."""
        return (bf16(x) if self.precision == "BF16" else x).astype(np.float64)

    def reference(self, inputs: Sequence[np.ndarray | None], rounding: str = "half_up") -> list[np.ndarray]:
        x, w = (self._operand(v) for v in inputs[:2])
        acc = self.mac(x, w)
        if len(inputs) > 2 and inputs[2] is not None:
            acc = acc + self.bias_shape(self._operand(inputs[2]), acc.ndim)
        return [bf16(acc.astype(np.float32))]

    def lower(self, b: GraphBuilder, inputs: list[str], *, rounding: str = "half_up",
              accumulation: str = "exact") -> list[str]:
        fp32 = accumulation == "fp32"
        # bf16 rounding leaves BFP16 and MX operands as they are: bf16 holds their grids
        operands = [("" if not t else bf16_round(b, t, to=TensorProto.FLOAT if fp32 else TensorProto.DOUBLE))
                    for t in inputs]
        y = self.lower_operator(b, operands, fp32)
        return [bf16_round(b, y if fp32 else b.op("Cast", y, to=TensorProto.FLOAT))]

    # -- cases -----------------------------------------------------------------------------------------
    @staticmethod
    def _values(g: CaseGraph, precision: str, shape: list[int], axis: int = 1) -> np.ndarray:
        """Seeded values on the grid the precision's operands arrive on."""
        x = g.rng.standard_normal(shape).astype(np.float32)
        return x if precision == "BF16" else formats.quantize_dequantize(x, _CASE_FORMAT[precision], axis=axis)

    @classmethod
    def _case(cls, name: str, precision: str, x_shape: list[int], w_shape: list[int], bias: bool, *,
              dynamic: bool = False, route: dict[str, int] | None = None, **attrs: Any) -> Case:
        g = CaseGraph(name, precision, seed=50)
        x = g.floats("x", cls._values(g, precision, x_shape))
        if dynamic:
            w = g.floats("w", cls._values(g, precision, w_shape, axis=-2))
        else:
            w = g.constant("w", cls._values(g, precision, w_shape))
        inputs = [x, w]
        if bias:
            inputs.append(g.constant("b", cls._values(g, precision, [w_shape[0]], axis=0)))
        return g.case(g.op(cls.op_types[0], inputs, under_test=True, **attrs), route=route)


class FloatConv(FloatMAC):
    op_types = ("Conv",)

    def _match_attributes(self) -> str:
        if len(self.attrs.get("kernel_shape", [1, 1]) or [1, 1]) != 2:
            return "only 2-D convolutions compute with NPU arithmetic here"
        return ""

    def _record_shapes(self, shapes: dict[str, list[int]]) -> str:
        x, w = shapes.get(self.node.input[0]), shapes.get(self.node.input[1])
        if x is None or w is None or len(x) != 4:
            return "its input or weight has no static 4-D shape"
        self.attrs["_x_shape"], self.attrs["_w_shape"] = x, w
        self.attrs.setdefault("kernel_shape", w[2:])
        return ""

    def mac(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return conv2d(x, w, self.attrs)

    def bias_shape(self, bias: np.ndarray, ndim: int) -> np.ndarray:
        return bias.reshape(1, -1, *([1] * (ndim - 2)))

    def _output_size(self) -> tuple[int, int]:
        _, _, h, wd = self.attrs["_x_shape"]
        _, _, kh, kw = self.attrs["_w_shape"]
        strides = list(self.attrs.get("strides", [1, 1]))
        pads = list(self.attrs.get("pads", [0, 0, 0, 0]))
        dil = list(self.attrs.get("dilations", [1, 1]))
        return ((h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1,
                (wd + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1)

    def _depthwise(self) -> bool:
        c, co = self.attrs["_x_shape"][1], self.attrs["_w_shape"][0]
        return int(self.attrs.get("group", 1)) == c == co

    def lower(self, b: GraphBuilder, inputs: list[str], *, rounding: str = "half_up",
              accumulation: str = "exact") -> list[str]:
        if accumulation == "fp32" or not self._depthwise():
            return super().lower(b, inputs, rounding=rounding, accumulation=accumulation)
        # depthwise, exact: each product of two bf16 numbers (8 significant bits each) is exact in
        # float32, so onnxruntime's float32 Conv computes all of them in one pass — a kernel of
        # kh*kw output channels per input channel, each holding one weight tap and zeros elsewhere
        # (the product plus exact zeros) — and only their sum runs in float64. Half the time of
        # windows sliced and multiplied in float64 (EfficientNet-Lite0's 3x3 and 5x5 depthwise
        # Convs), the same numbers while no product falls below float32's normal range (2**-126). An
        # Inf in a window meets the kernel's zeros there: its outputs are NaN where the exact sum is
        # ±Inf (no number either way; the input is no number already).
        x, w = bf16_round(b, inputs[0]), bf16_round(b, inputs[1])
        c, _, kh, kw = self.attrs["_w_shape"]
        taps = kh * kw
        one_hot = np.eye(taps, dtype=np.float32).reshape(1, taps, 1, kh, kw)
        kernel = b.op("Reshape", b.op("Mul", b.op("Reshape", w, const(b, [c, 1, 1, kh, kw], np.int64)),
                                      const(b, one_hot, np.float32)), const(b, [c * taps, 1, kh, kw], np.int64))
        attrs = {a: self.attrs[a] for a in _CONV_ATTRIBUTES if a in self.attrs}
        products = b.op("Conv", x, kernel, **{**attrs, "kernel_shape": [kh, kw]})  # N, C*taps, Ho, Wo
        products = b.op("Reshape", products, const(b, [self.attrs["_x_shape"][0], c, taps, *self._output_size()],
                                                   np.int64))
        y = b.op("ReduceSum", b.op("Cast", products, to=TensorProto.DOUBLE), const(b, [2], np.int64), keepdims=0)
        if len(inputs) > 2 and inputs[2]:
            bias = bf16_round(b, inputs[2], to=TensorProto.DOUBLE)
            y = b.op("Add", y, b.op("Reshape", bias, const(b, [1, -1, 1, 1], np.int64)))
        return [bf16_round(b, b.op("Cast", y, to=TensorProto.FLOAT))]

    def lower_operator(self, b: GraphBuilder, operands: list[str], fp32: bool) -> str:
        if fp32:  # onnxruntime's own float32 Conv, bias fused
            return b.op("Conv", *operands, **{a: self.attrs[a] for a in _CONV_ATTRIBUTES if a in self.attrs})
        y = self._conv_double(b, operands[0], operands[1])
        if len(operands) > 2 and operands[2]:
            y = b.op("Add", y, b.op("Reshape", operands[2], const(b, [1, -1, 1, 1], np.int64)))
        return y

    def _conv_double(self, b: GraphBuilder, x: str, w: str) -> str:
        """2-D convolution in float64: im2col (Pad, strided Slices, Concat) and a batched MatMul (a
        depthwise convolution computes its products in float32: :meth:`lower`)."""
        n, c, h, wd = self.attrs["_x_shape"]
        co, _, kh, kw = self.attrs["_w_shape"]
        strides = list(self.attrs.get("strides", [1, 1]))
        pads = list(self.attrs.get("pads", [0, 0, 0, 0]))
        dil = list(self.attrs.get("dilations", [1, 1]))
        group = int(self.attrs.get("group", 1))
        ho, wo = self._output_size()

        def i64(v: Any) -> str:
            return const(b, v, np.int64)

        if kh == kw == 1 and not any(pads) and strides == [1, 1] and group == 1:
            y = b.op("MatMul", b.op("Reshape", w, i64([co, c])), b.op("Reshape", x, i64([n, c, h * wd])))
            return b.op("Reshape", y, i64([n, co, h, wd]))
        if any(pads):
            x = b.op("Pad", x, i64([0, 0, pads[0], pads[1], 0, 0, pads[2], pads[3]]))
        taps = []  # (i, j, the input window that tap multiplies: N, C, Ho, Wo)
        for i in range(kh):
            for j in range(kw):
                start = [i * dil[0], j * dil[1]]
                end = [start[0] + strides[0] * (ho - 1) + 1, start[1] + strides[1] * (wo - 1) + 1]
                taps.append((i, j, b.op("Slice", x, i64(start), i64(end), i64([2, 3]), i64(strides))))
        patches = [b.op("Reshape", window, i64([n, c, 1, ho * wo])) for _, _, window in taps]
        cols = patches[0] if len(patches) == 1 else b.op("Concat", *patches, axis=2)  # N, C, K, L
        cols = b.op("Reshape", cols, i64([n, group, (c // group) * kh * kw, ho * wo]))
        wg = b.op("Reshape", w, i64([1, group, co // group, (c // group) * kh * kw]))
        y = b.op("MatMul", wg, cols)  # N, G, Co/G, L
        return b.op("Reshape", y, i64([n, co, ho, wo]))

    @classmethod
    def cases(cls) -> Iterator[Case]:
        for precision in cls.precisions:
            yield cls._case("conv3x3", precision, [1, 4, 6, 6], [6, 4, 3, 3], True, pads=[1, 1, 1, 1],
                            route={"Slice": 9})
            yield cls._case("conv1x1", precision, [2, 8, 3, 3], [4, 8, 1, 1], False, route={"Slice": 0})
            yield cls._case("conv_grouped_strided_dilated", precision, [1, 4, 9, 9], [6, 2, 3, 3], True,
                            group=2, strides=[2, 2], dilations=[2, 2])
            yield cls._case("conv_depthwise_strided", precision, [1, 6, 9, 9], [6, 1, 3, 3], True, group=6,
                            strides=[2, 2], pads=[1, 1, 1, 1], route={"MatMul": 0, "Slice": 0, "ReduceSum": 1})
            yield cls._case("conv_depthwise_5x5", precision, [2, 4, 8, 8], [4, 1, 5, 5], False, group=4,
                            pads=[2, 2, 2, 2], route={"MatMul": 0, "Slice": 0, "ReduceSum": 1})


class FloatGemm(FloatMAC):
    op_types = ("Gemm",)

    def _match_attributes(self) -> str:
        return gemm_mismatch(self.attrs)

    def mac(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return x @ (w.T if self.attrs.get("transB", 0) else w)

    def lower_operator(self, b: GraphBuilder, operands: list[str], fp32: bool) -> str:
        if self.attrs.get("transB", 0):
            operands = [operands[0], b.op("Transpose", operands[1], perm=[1, 0]), *operands[2:]]
        return super().lower_operator(b, operands, fp32)

    @classmethod
    def cases(cls) -> Iterator[Case]:
        for precision in cls.precisions:
            yield cls._case("gemm", precision, [3, 16], [10, 16], True, transB=1)
            yield cls._case("gemm_not_transposed", precision, [3, 16], [16, 10], False)


class FloatMatMul(FloatMAC):
    op_types = ("MatMul",)

    @classmethod
    def cases(cls) -> Iterator[Case]:
        for precision in cls.precisions:
            yield cls._case("matmul", precision, [2, 3, 16], [16, 5], False)
            yield cls._case("matmul_two_activations", precision, [2, 3, 8], [2, 8, 4], False, dynamic=True)
