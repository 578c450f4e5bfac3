"""Writing the zoo's networks with onnx's helpers: weights as initializers, nodes via GraphBuilder.

The zoo models are FP32 inputs for quantization, so their weights must be graph initializers (a
quantizer finds a Conv's or MatMul's weight there), unlike ryzen-nb's own lowerings that use
``Constant`` nodes. Everything the zoo writes is opset 17 with static shapes, stamped with the IR
version onnxruntime reads (``ryzen_nb.graph.make_model``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ryzen_nb.graph.builder import GraphBuilder, make_model

#: opset of every model in the zoo (the issue asks for 17: the opset Ryzen AI's tools take best)
ZOO_OPSET = 17


class WeightedGraph:
    """Nodes (through :class:`GraphBuilder`) plus the initializers holding the weights."""

    def __init__(self) -> None:
        self.builder = GraphBuilder()
        self.initializers: list[onnx.TensorProto] = []
        self._names: set[str] = set()

    def weight(self, name: str, value: np.ndarray, dtype: Any = np.float32) -> str:
        """Add ``value`` as an initializer called ``name`` (names follow the checkpoint's keys)."""
        if name in self._names:
            raise ValueError(f"initializer {name!r} added twice")
        self._names.add(name)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value, dtype=dtype), name))
        return name

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        return self.builder.op(op_type, *inputs, **attrs)

    def const(self, value: Any, dtype: Any = None) -> str:
        return self.builder.const(value, dtype=dtype)

    def to_model(
        self,
        inputs: Sequence[onnx.ValueInfoProto],
        outputs: Sequence[onnx.ValueInfoProto],
        name: str,
        doc: str = "",
    ) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.builder.nodes, name, list(inputs), list(outputs), initializer=self.initializers, doc_string=doc
        )
        model = make_model(graph, opset=ZOO_OPSET, producer_name="ryzen-nb zoo")
        onnx.checker.check_model(model, full_check=True)  # also infers and checks every shape
        return model


def tensor_info(name: str, shape: Sequence[int], dtype: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, list(shape))


def fold_batch_norm(
    weight: np.ndarray,
    bias: np.ndarray | None,
    gamma: np.ndarray,
    beta: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    eps: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Fold an inference-mode BatchNorm into the preceding Conv (in float64, then float32).

    This is what ``torch.onnx.export`` does in eval mode, and the form quantizers expect.
    """
    scale = gamma.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
    folded_weight = weight.astype(np.float64) * scale.reshape((-1,) + (1,) * (weight.ndim - 1))
    conv_bias = np.zeros_like(scale) if bias is None else bias.astype(np.float64)
    folded_bias = (conv_bias - mean.astype(np.float64)) * scale + beta.astype(np.float64)
    return folded_weight.astype(np.float32), folded_bias.astype(np.float32)
