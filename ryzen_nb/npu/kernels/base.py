"""What an NPU kernel is: the record extraction fills in, and the four things every kernel class does.

A kernel class stands for one NPU operator computed with one kind of arithmetic (integer Conv,
float MatMul, ...). Like an operator of onnx's reference evaluator it is small and self-contained:

* :meth:`Kernel.match` — does this node, at this precision, compute with this kernel? The answer is
  the kernel itself (an instance holding what it read from the graph: integer codes, scales and
  zero points, weights, bias, the fused activation, the quantizer it writes through) or the reason
  why not, a sentence for reports;
* :meth:`Kernel.reference` — its arithmetic written out plainly in numpy;
* :meth:`Kernel.lower` — the same numbers with standard ONNX operators onnxruntime runs fast;
* :meth:`Kernel.cases` — small seeded graphs on which tests/unit/test_npu_kernel_registry.py checks
  that the two agree bit for bit.

The registry (:mod:`ryzen_nb.npu.kernels`) maps operator types to kernel classes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import onnx

from ryzen_nb.graph.attributes import attribute
from ryzen_nb.graph.builder import GraphBuilder
from ryzen_nb.graph.index import ModelIndex

if TYPE_CHECKING:  # annotations only: the case builder imports nothing from here
    from ryzen_nb.npu.kernels.cases import Case
    from ryzen_nb.npu.partition import NodeAssignment

__all__ = ["Kernel", "KernelGraph", "QuantRef", "gemm_mismatch"]


@dataclass
class QuantRef:
    """A quantized tensor as the NPU sees it: integer codes with a scale and zero point."""

    codes: str  #: name of the integer tensor in the graph
    scale: np.ndarray
    zero_point: np.ndarray
    dtype: np.dtype
    values: np.ndarray | None = None  #: the codes, when they are a constant (weights, biases)
    axis: int = 1  #: the DequantizeLinear's axis: where per-channel scales and zero points lie

    def aligned_with(self, s_in: float, s_w: np.ndarray) -> bool:
        """A bias whose scale is s_in * s_w (to float32 precision, as quantizers store it) adds
        straight into the integer accumulator (Quark's AdjustBiasScale)."""
        expected = (np.float64(s_in) * np.ravel(s_w).astype(np.float64)).astype(np.float32)
        return np.array_equal(np.ravel(self.scale).astype(np.float32), np.broadcast_to(expected, np.ravel(self.scale).shape))

    @property
    def least(self) -> float:
        """The least value the dequantized tensor can take (its type's least code)."""
        lowest = (np.iinfo(self.dtype).min - np.asarray(self.zero_point, np.float64)) * np.asarray(self.scale, np.float64)
        return float(np.min(lowest))

    @property
    def pos(self) -> int:
        """Power-of-two position: scale = 2**-pos (XINT8)."""
        return int(round(-np.log2(float(np.ravel(self.scale)[0]))))

    @property
    def is_power_of_two(self) -> bool:
        m, _ = np.frexp(np.asarray(self.scale, np.float64))
        return bool(np.all(m == 0.5))

    def centred(self, codes: np.ndarray) -> np.ndarray:
        """``codes - zero_point`` in int64 (per-channel zero points along :attr:`axis`)."""
        zp = np.asarray(self.zero_point).astype(np.int64)
        if zp.size > 1 and np.ndim(codes) > 1:
            shape = [1] * np.ndim(codes)
            shape[self.axis % np.ndim(codes)] = zp.size
            zp = zp.reshape(shape)
        return np.asarray(codes).astype(np.int64) - zp


class KernelGraph:
    """The compiled model as kernel matching reads it: its index (loaded and indexed once, shared
    with the partitioner) and the device each node was placed on."""

    def __init__(self, index: ModelIndex, assignments: Sequence[NodeAssignment]) -> None:
        self.index = index
        self._devices = [a.device for a in assignments]

    def on_npu(self, node: onnx.NodeProto) -> bool:
        return self._devices[self.index.index_of(node)] == "NPU"

    def quantized(self, name: str) -> QuantRef | None:
        """The integer codes behind the DequantizeLinear that writes ``name``, or None when
        ``name`` is not written by one with constant scale and zero point."""
        producers, consts = self.index.producer, self.index.constants
        dq = producers.get(name)
        if dq is None or dq.op_type != "DequantizeLinear" or len(dq.input) < 2:
            return None
        scale = consts.get(dq.input[1])
        if scale is None:
            return None
        zp = consts.get(dq.input[2]) if len(dq.input) > 2 and dq.input[2] else None
        codes = consts.get(dq.input[0])
        dtype = codes.dtype if codes is not None else (zp.dtype if zp is not None else None)
        if dtype is None:
            q = producers.get(dq.input[0])
            if q is not None and q.op_type == "QuantizeLinear" and len(q.input) > 2 and q.input[2] in consts:
                dtype = consts[q.input[2]].dtype
        if dtype is None:
            return None
        if zp is None:
            zp = np.zeros(np.shape(scale), dtype=dtype)
        if np.size(scale) != 1 and codes is None:
            return None  # per-channel activations are not an NPU case
        return QuantRef(dq.input[0], np.asarray(scale, np.float32), np.asarray(zp), np.dtype(dtype), codes,
                        int(attribute(dq, "axis", 1)))


@dataclass(eq=False)
class Kernel(ABC):
    """One NPU operator the emulator computes with NPU arithmetic (see the module docstring)."""

    #: the operator types this class computes
    op_types: ClassVar[tuple[str, ...]] = ()
    #: the precisions (of the partition) it computes them in
    precisions: ClassVar[tuple[str, ...]] = ()
    #: the activations it takes fused after it ("relu", "clip", "leaky")
    activations: ClassVar[tuple[str, ...]] = ()
    #: how reports describe its arithmetic
    arithmetic: ClassVar[str] = ""

    node: onnx.NodeProto
    precision: str
    inputs: list[QuantRef] = field(default_factory=list)  #: activations (integer kernels)
    weight: QuantRef | None = None
    bias: QuantRef | None = None
    output: QuantRef | None = None  #: integer kernels: the codes written
    activation: tuple | None = None  #: ("relu",), ("clip", lo, hi), ("leaky", alpha)
    attrs: dict[str, Any] = field(default_factory=dict)
    replaced: list[onnx.NodeProto] = field(default_factory=list)  #: nodes this kernel stands for
    #: the float tensor the kernel's result stands for (integer kernels: before their quantizer;
    #: other readers of it get the dequantized codes)
    float_output: str = ""

    @property
    def op(self) -> str:
        return self.node.op_type

    @property
    def integer(self) -> bool:
        return self.output is not None

    @property
    def dynamic_weight(self) -> bool:
        """A MatMul of two activations: the second operand's codes are a second kernel input."""
        return self.weight is not None and self.weight.values is None

    # -- matching ----------------------------------------------------------------------------------
    @classmethod
    def match(cls, node: onnx.NodeProto, precision: str, graph: KernelGraph) -> Kernel | str:
        """This kernel for ``node`` computed in ``precision``, or why it does not apply."""
        if node.op_type not in cls.op_types or precision not in cls.precisions:
            return f"{cls.__name__} computes {'/'.join(cls.op_types)} in {', '.join(cls.precisions)}"
        return cls._match(node, precision, graph)

    @classmethod
    @abstractmethod
    def _match(cls, node: onnx.NodeProto, precision: str, graph: KernelGraph) -> Kernel | str:
        """:meth:`match` once the operator type and precision are known to be this class's."""

    # -- the marked graph's view -------------------------------------------------------------------
    @abstractmethod
    def marker_inputs(self) -> list[str]:
        """The tensors the kernel reads (the marker node's inputs)."""

    @abstractmethod
    def marker_outputs(self) -> list[str]:
        """The tensors the kernel writes (the marker node's outputs)."""

    # -- the two executors -----------------------------------------------------------------------
    @abstractmethod
    def reference(self, inputs: Sequence[np.ndarray | None], rounding: str = "half_up") -> list[np.ndarray]:
        """Numpy: the values of :meth:`marker_outputs` from those of :meth:`marker_inputs`.
        ``rounding`` is the XINT8 requantisation's ties rule ("half_up" = DPU_ROUND, "half_even")."""

    @abstractmethod
    def lower(self, b: GraphBuilder, inputs: list[str], *, rounding: str = "half_up",
              accumulation: str = "exact") -> list[str]:
        """Emit standard ONNX operators computing what :meth:`reference` computes into ``b``; return
        the tensors holding :meth:`marker_outputs`. ``accumulation`` of float MAC kernels: "exact"
        (bit for bit the reference) or "fp32" (onnxruntime's float32 sums)."""

    # -- what the registry test runs -----------------------------------------------------------------
    @classmethod
    @abstractmethod
    def cases(cls) -> Iterator[Case]:
        """Small seeded graphs covering every operator type x precision x fused activation this
        class declares, and the edge cases of its arithmetic."""


def gemm_mismatch(attrs: dict) -> str:
    """Why a Gemm's attributes keep it off an NPU MAC kernel ("" if they do not): the kernels
    compute ``x @ W (+ bias)``; transA, alpha or beta compute as in the QDQ simulation instead."""
    if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
        return "Gemm with transA, alpha or beta"
    return ""
