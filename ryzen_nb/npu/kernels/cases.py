"""Test cases the kernel classes declare: a small QDQ graph around one node, with seeded inputs.

tests/unit/test_npu_kernel_registry.py walks the registry, builds every case of every kernel class,
places every node on the NPU at the case's precision, lowers the graph, runs it in onnxruntime and
compares each kernel with its numpy reference bit for bit. A kernel class declares its cases with
:class:`CaseGraph`::

    g = CaseGraph("conv3x3", "XINT8")
    x = g.codes("x", [1, 4, 6, 6], scale=2**-4, zero_point=128, dtype=np.uint8)
    w = g.weight("w", g.random_codes([8, 4, 3, 3], np.int8), scale=2**-7)
    y = g.op("Conv", [x, w], pads=[1, 1, 1, 1], under_test=True)
    yield g.case(g.quantize(y, scale=2**-3, zero_point=128, dtype=np.uint8, activation="relu"))

Integer inputs are graph inputs holding codes, drawn uniformly over their whole range (the
extremes always included), read through DequantizeLinear as in a quantized model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ryzen_nb.graph.builder import make_model

__all__ = ["UNDER_TEST", "Case", "CaseGraph"]

#: name of the node a case checks
UNDER_TEST = "under_test"


@dataclass
class Case:
    """One graph to emulate, and what must hold of it besides bit-exactness."""

    name: str
    precision: str
    op: str  #: the type of the node under test
    model: onnx.ModelProto
    feed: dict[str, np.ndarray]
    activation: str | None = None  #: the activation the kernel must take fused ("relu", "clip", "leaky")
    roundings: tuple[str, ...] = ("half_up", "half_even")  #: XINT8 ties rules to run (others: one run)
    #: the lowering route under test: operator type -> how many the lowered graph holds
    route: dict[str, int] = field(default_factory=dict)
    saturates: bool = False  #: some output codes must reach the limits of their type


class CaseGraph:
    """Builds one :class:`Case` (see the module docstring)."""

    def __init__(self, name: str, precision: str, seed: int = 0) -> None:
        self.name = name
        self.precision = precision
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.feed: dict[str, np.ndarray] = {}
        self._under_test: onnx.NodeProto | None = None
        self._activation: str | None = None
        self._count = 0

    def _fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    # -- inputs and constants ------------------------------------------------------------------------
    @staticmethod
    def code_std(dtype: Any) -> float:
        """Standard deviation of codes uniform over the whole range of ``dtype`` (to choose scales)."""
        info = np.iinfo(dtype)
        return (float(info.max) - float(info.min) + 1) / np.sqrt(12)

    def random_codes(self, shape: list[int], dtype: Any, low: int | None = None, high: int | None = None) -> np.ndarray:
        """Seeded integer codes, uniform over [low, high] (the type's range by default), with both
        ends present."""
        info = np.iinfo(dtype)
        low = info.min if low is None else low
        high = info.max if high is None else high
        codes = self.rng.integers(low, high, size=shape, endpoint=True).astype(dtype)
        flat = codes.reshape(-1)
        flat[0], flat[-1] = low, high
        return codes

    def codes(self, name: str, shape: list[int], scale: float, zero_point: int, dtype: Any,
              low: int | None = None, high: int | None = None) -> str:
        """A graph input of integer codes read through DequantizeLinear: returns the float tensor."""
        self.feed[name] = self.random_codes(shape, dtype, low, high)
        self.inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape))
        return self.dequantize(name, scale, np.asarray(zero_point, dtype))

    def floats(self, name: str, values: np.ndarray) -> str:
        """A float32 graph input (float kernels)."""
        self.feed[name] = np.asarray(values, np.float32)
        self.inputs.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, list(np.shape(values))))
        return name

    def constant(self, name: str, value: Any) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, name: str, codes: np.ndarray, scale: Any, zero_point: Any = None, axis: int | None = None) -> str:
        """Constant codes (a weight, a bias) read through DequantizeLinear; per-channel when
        ``scale`` has several values (along ``axis``)."""
        self.constant(name, codes)
        zp = np.zeros(np.shape(scale), codes.dtype) if zero_point is None else np.asarray(zero_point, codes.dtype)
        return self.dequantize(name, scale, zp, axis)

    def dequantize(self, codes: str, scale: Any, zero_point: np.ndarray, axis: int | None = None) -> str:
        s = self.constant(self._fresh(f"{codes}_scale"), np.asarray(scale, np.float32))
        z = self.constant(self._fresh(f"{codes}_zp"), zero_point)
        out = self._fresh(f"{codes}_dq")
        attrs = {} if axis is None else {"axis": axis}
        self.nodes.append(helper.make_node("DequantizeLinear", [codes, s, z], [out], name=out, **attrs))
        return out

    # -- nodes -------------------------------------------------------------------------------------
    def op(self, op_type: str, inputs: list[str], *, under_test: bool = False, outputs: int = 1, **attrs: Any) -> str:
        """Append a node (the one the case checks if ``under_test``); return its first output."""
        names = [self._fresh(op_type.lower()) for _ in range(outputs)]
        node = helper.make_node(op_type, inputs, names, name=UNDER_TEST if under_test else self._fresh(op_type), **attrs)
        self.nodes.append(node)
        if under_test:
            self._under_test = node
        return names[0]

    def activate(self, x: str, activation: str | None, *, clip: tuple[float, float] = (0.0, 6.0),
                 alpha: float = 0.1) -> str:
        """An activation after ``x`` (fused by the kernel): Relu, Clip(lo, hi) or LeakyRelu(alpha)."""
        self._activation = activation
        if activation is None:
            return x
        if activation == "relu":
            return self.op("Relu", [x])
        if activation == "clip":
            lo = self.constant(self._fresh("clip_lo"), np.float32(clip[0]))
            hi = self.constant(self._fresh("clip_hi"), np.float32(clip[1]))
            return self.op("Clip", [x, lo, hi])
        if activation == "leaky":
            return self.op("LeakyRelu", [x], alpha=alpha)
        raise ValueError(f"unknown activation {activation!r}")

    def quantize(self, x: str, scale: float, zero_point: int, dtype: Any, *, activation: str | None = None,
                 clip: tuple[float, float] | None = None, alpha: float = 0.1) -> str:
        """``x`` (after the fused ``activation``) quantized to codes, which become the graph output.
        A Clip's bounds default to -20 and 50 codes (int8; in proportion for wider types), where the
        cases put a typical result at ±40 codes: it cuts both ways."""
        codes = np.iinfo(dtype).max / 127
        x = self.activate(x, activation, clip=clip or (-20 * codes * scale, 50 * codes * scale), alpha=alpha)
        s = self.constant(self._fresh("y_scale"), np.asarray(scale, np.float32))
        z = self.constant(self._fresh("y_zp"), np.asarray(zero_point, dtype))
        out = self._fresh("y")
        self.nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [out], name=out))
        return out

    def case(self, *outputs: str, name: str = "", roundings: tuple[str, ...] | None = None,
             route: dict[str, int] | None = None, saturates: bool = False) -> Case:
        """The finished case; ``outputs`` become the graph outputs."""
        if self._under_test is None:
            raise ValueError(f"case {self.name!r}: no node is marked under_test")
        graph = helper.make_graph(self.nodes, self.name, self.inputs,
                                  [helper.make_empty_tensor_value_info(o) for o in outputs],
                                  self.initializers)
        label = f"{self.name}[{self.precision}{', ' + self._activation if self._activation else ''}]"
        return Case(name=name or label, precision=self.precision, op=self._under_test.op_type,
                    model=make_model(graph), feed=dict(self.feed), activation=self._activation,
                    roundings=roundings or (("half_up", "half_even") if self.precision == "XINT8" else ("half_up",)),
                    route=dict(route or {}), saturates=saturates)
