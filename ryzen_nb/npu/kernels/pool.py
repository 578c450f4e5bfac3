"""Integer average pooling: AveragePool and GlobalAveragePool.

The window is summed exactly; the NPU then multiplies by k/2**n instead of dividing by the window
size (docs/npu-numerics.md#dpu-rewrites, :func:`~ryzen_nb.spec.dpu.avgpool_factor`). A model rewritten for the DPU
(Quark's ConvertAvgPoolToDPUVersion) carries the correction as a Mul by ``factor * count`` after
the pool; the kernel computes that Mul too.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence

import numpy as np
from onnx import TensorProto

from ryzen_nb.graph.builder import GraphBuilder
from ryzen_nb.npu.kernels.arithmetic import im2col
from ryzen_nb.npu.kernels.base import KernelGraph
from ryzen_nb.npu.kernels.cases import Case, CaseGraph
from ryzen_nb.npu.kernels.integer import IntegerKernel, Terms
from ryzen_nb.npu.kernels.lowering import F32_EXACT, centred, code_bound, const
from ryzen_nb.spec.dpu import avgpool_factor

__all__ = ["IntegerAveragePool", "IntegerGlobalAveragePool"]


class IntegerPool(IntegerKernel):
    """What both pools share: the DPU correction, the multiplier, the arithmetic after the sum."""

    def _absorb_following(self, graph: KernelGraph) -> str:
        out = self.node.output[0]
        users = graph.index.consumers.get(out, [])
        consts = graph.index.constants
        if len(users) == 1 and users[0].op_type == "Mul":
            mul = users[0]
            other = [i for i in mul.input if i != out]
            if len(other) == 1 and other[0] in consts and np.size(consts[other[0]]) == 1:
                self.attrs["dpu_multiplier"] = float(np.ravel(consts[other[0]])[0])
                self.replaced.append(mul)
                return mul.output[0]
        return out

    def _record_shapes(self, shapes: dict[str, list[int]]) -> str:
        x = shapes.get(self.node.input[0])
        if x is None or len(x) != 4:
            return "its input has no static 4-D shape"
        self.attrs["_channels"], self.attrs["_count"] = x[1], int(np.prod(x[2:]))
        return ""

    @abstractmethod
    def window_sum(self, x: np.ndarray) -> tuple[np.ndarray, int]:
        """Exact window sums of centred codes (float64) and the window size."""

    @abstractmethod
    def lower_window_sum(self, b: GraphBuilder, codes: str) -> tuple[str, int]:
        """:meth:`window_sum` in ONNX (float64 sums)."""

    def _xint8_factor(self, count: int) -> float:
        if "dpu_multiplier" in self.attrs:
            return self.attrs["dpu_multiplier"] / count
        return avgpool_factor(count)

    def xint8_value(self, xs: list[np.ndarray], inputs: Sequence[np.ndarray]) -> np.ndarray:
        s, count = self.window_sum(xs[0])
        return s * self._xint8_factor(count) * 2.0 ** (self.output.pos - self.inputs[0].pos)

    def lower_xint8_value(self, b: GraphBuilder, inputs: list[str]) -> str:
        s, count = self.lower_window_sum(b, inputs[0])
        scale = self._xint8_factor(count) * 2.0 ** (self.output.pos - self.inputs[0].pos)
        return b.op("Mul", s, const(b, scale, np.float64))

    def _multiplier(self, count: int) -> np.ndarray:
        # A8W8/A16W8: the division (or the model's own correction) folds into the multiplier
        factor = self.attrs.get("dpu_multiplier", 1.0) / count
        return np.array([float(np.ravel(self.inputs[0].scale)[0]) * factor / self.output_scale])

    def scaled_terms(self, xs: list[np.ndarray], inputs: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        s, count = self.window_sum(xs[0])
        return [(s.astype(np.int64), self._multiplier(count))]

    def lower_scaled_terms(self, b: GraphBuilder, inputs: list[str]) -> tuple[Terms, int]:
        s, count = self.lower_window_sum(b, inputs[0])
        return [(b.op("Cast", s, to=TensorProto.INT64), self._multiplier(count))], 4

    def value_bound(self) -> float:
        return float(code_bound(self.inputs[0])) * float(self.attrs.get("_count", 1)) * 2

    def _centred_float32(self, b: GraphBuilder, codes: str) -> str:
        # 8/16-bit codes and their zero point are float32 integers: the Sub is exact
        return centred(b, codes, self.inputs[0], np.float32)


class IntegerAveragePool(IntegerPool):
    op_types = ("AveragePool",)

    def _match_operator(self, graph: KernelGraph) -> str:
        if any(self.attrs.get("pads", []) or []) and not self.attrs.get("count_include_pad", 0):
            return "padded AveragePool without count_include_pad (the NPU divides by the full window)"
        return ""

    def _window(self) -> tuple[list[int], list[int], list[int]]:
        kernel = list(self.attrs["kernel_shape"])
        return kernel, list(self.attrs.get("strides", kernel)), list(self.attrs.get("pads", [0, 0, 0, 0]))

    def window_sum(self, x: np.ndarray) -> tuple[np.ndarray, int]:
        kernel, strides, pads = self._window()
        cols = im2col(x, kernel, strides, pads, [1, 1])
        n, c = x.shape[:2]
        ho = (x.shape[2] + pads[0] + pads[2] - kernel[0]) // strides[0] + 1
        return cols.sum(axis=2).reshape(n, c, ho, -1).astype(np.float64), int(np.prod(kernel))

    def lower_window_sum(self, b: GraphBuilder, codes: str) -> tuple[str, int]:
        kernel, strides, _ = self._window()
        channels = int(self.attrs["_channels"])
        ones = np.ones((channels, 1, *kernel), np.float32)
        attrs = {"kernel_shape": kernel, "group": channels, "strides": strides}
        if self.attrs.get("pads"):
            attrs["pads"] = list(self.attrs["pads"])
        s = b.op("Conv", self._centred_float32(b, codes), const(b, ones, np.float32), **attrs)
        return b.op("Cast", s, to=TensorProto.DOUBLE), int(np.prod(kernel))

    @classmethod
    def cases(cls) -> Iterator[Case]:
        shapes = {  # window -> (input shape, attributes): 2x2 (1/4, exact), 3x3 (7/64 on the DPU) padded
            "2x2": ([1, 3, 6, 6], {"kernel_shape": [2, 2], "strides": [2, 2]}),
            "3x3": ([1, 2, 5, 5], {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1],
                                   "count_include_pad": 1}),
        }
        for activation in (None, *cls.activations):
            for window, (shape, attrs) in shapes.items():
                for precision, (dtype, zp, scale) in (("XINT8", (np.uint8, 128, 2.0**-3)),
                                                      ("A8W8", (np.int8, 9, 0.043)), ("A16W8", (np.int16, -700, 3e-4))):
                    g = CaseGraph(f"average_pool_{window}", precision, seed=11)
                    y = g.op("AveragePool", [g.codes("x", shape, scale, zp, dtype)], under_test=True, **attrs)
                    yield g.case(g.quantize(y, scale / 2 if precision == "XINT8" else scale * 0.7, zp, dtype,
                                            activation=activation))
        for precision, (dtype, zp, scale) in (("XINT8", (np.int8, 0, 2.0**-2)), ("A8W8", (np.uint8, 120, 0.021))):
            # the DPU's correction as a Mul after the pool (9 * 7/64), computed by the kernel
            g = CaseGraph("average_pool_dpu_mul", precision, seed=12)
            pool = g.op("AveragePool", [g.codes("x", [1, 2, 6, 6], scale, zp, dtype)], under_test=True,
                        kernel_shape=[3, 3], strides=[3, 3])
            y = g.op("Mul", [pool, g.constant("correction", np.float32(9 * avgpool_factor(9)))])
            yield g.case(g.quantize(y, scale, zp, dtype))


class IntegerGlobalAveragePool(IntegerPool):
    op_types = ("GlobalAveragePool",)

    def window_sum(self, x: np.ndarray) -> tuple[np.ndarray, int]:
        return x.sum(axis=tuple(range(2, x.ndim)), keepdims=True).astype(np.float64), int(np.prod(x.shape[2:]))

    def lower_window_sum(self, b: GraphBuilder, codes: str) -> tuple[str, int]:
        count = int(self.attrs["_count"])
        x, axes = self._centred_float32(b, codes), const(b, [2, 3], np.int64)
        if count * float(code_bound(self.inputs[0])) < F32_EXACT:
            # every partial sum is an integer float32 holds, in any order: sum there, widen the
            # sums only (PP-OCRv4's ten pools took 22 ms widening whole tensors to float64)
            return b.op("Cast", b.op("ReduceSum", x, axes, keepdims=1), to=TensorProto.DOUBLE), count
        return b.op("ReduceSum", b.op("Cast", x, to=TensorProto.DOUBLE), axes, keepdims=1), count

    @classmethod
    def cases(cls) -> Iterator[Case]:
        # 7x7: the DPU multiplies by 21/1024 instead of 1/49; 4x4 divides exactly. The codes are
        # summed in float32, but 256 16-bit codes may pass 2**23: float64 (two Casts either way:
        # to float32, then the sums or the codes to float64; and one to codes, A8W8/A16W8 three, unless
        # a fused activation changes the requantisation)
        for activation in (None, *cls.activations):
            for size in (7, 4, 16):
                for precision, (dtype, zp, scale) in (("XINT8", (np.uint8, 128, 2.0**-4)),
                                                      ("A8W8", (np.int8, -20, 0.05)), ("A16W8", (np.int16, 0, 2e-4))):
                    if size == 16 and precision != "A16W8":
                        continue
                    g = CaseGraph(f"global_average_pool_{size}x{size}", precision, seed=13)
                    y = g.op("GlobalAveragePool", [g.codes("x", [2, 8, size, size], scale, zp, dtype)],
                             under_test=True)
                    route = {"ReduceSum": 1, "Cast": 3 if precision == "XINT8" else 5} if activation is None else None
                    yield g.case(g.quantize(y, scale / 4, zp, dtype, activation=activation), route=route)
