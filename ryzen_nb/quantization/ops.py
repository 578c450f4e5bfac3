"""What the quantizer knows about each operator: one table, used for planning and by the widgets.

For every op type it can quantize: which inputs are weights and biases, the axis of per-channel
weight scales, the axis block formats run along (the reduction dimension, docs/npu-numerics.md#bfp16, A16), and
whether the op only moves data (its output then shares its input's integer scale, as Quark's
Align* options and onnxruntime's QDQ propagation do).
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx

from ryzen_nb.graph.attributes import attribute

__all__ = ["OpInfo", "OPS", "op_info", "FUSIBLE_ACTIVATIONS", "weight_channel_axis", "weight_block_axis"]


@dataclass(frozen=True)
class OpInfo:
    op_type: str
    kind: str  #: "compute" (has weights), "eltwise", "activation", "data" (moves values), "pool", "norm", "reduce", "other"
    weight_inputs: tuple[int, ...] = ()
    bias_input: int | None = None
    #: block formats: run blocks of this op's activation inputs along the reduction axis
    #: ("channel" = axis 1 of NCHW, "last" = the last axis), if it has one
    reduction: str | None = None
    #: float inputs that configure the operator rather than carry data (Clip's bounds, Resize's
    #: scales): never quantized, as in onnxruntime's and Quark's QDQ quantizers
    config_inputs: tuple[int, ...] = ()

    @property
    def moves_data(self) -> bool:
        return self.kind in ("data", "pool_max")


def _ops(*items: OpInfo) -> dict[str, OpInfo]:
    return {i.op_type: i for i in items}


OPS: dict[str, OpInfo] = _ops(
    OpInfo("Conv", "compute", (1,), 2, "channel"),
    OpInfo("ConvTranspose", "compute", (1,), 2, "channel"),
    OpInfo("Gemm", "compute", (1,), 2, "last"),
    OpInfo("MatMul", "compute", (1,), None, "last"),
    OpInfo("Add", "eltwise"),
    OpInfo("Sub", "eltwise"),
    OpInfo("Mul", "eltwise"),
    OpInfo("Div", "eltwise"),
    OpInfo("Concat", "other"),
    OpInfo("Relu", "activation"),
    OpInfo("Clip", "activation", config_inputs=(1, 2)),
    OpInfo("LeakyRelu", "activation"),
    OpInfo("PRelu", "activation", (1,)),
    OpInfo("Sigmoid", "activation"),
    OpInfo("HardSigmoid", "activation"),
    OpInfo("HardSwish", "activation"),
    OpInfo("Tanh", "activation"),
    OpInfo("Erf", "activation"),
    OpInfo("Gelu", "activation"),
    OpInfo("Softmax", "activation"),
    OpInfo("Sqrt", "activation"),
    OpInfo("Pow", "activation"),
    OpInfo("Exp", "activation"),
    OpInfo("MaxPool", "pool_max"),
    OpInfo("GlobalMaxPool", "pool_max"),
    OpInfo("AveragePool", "pool"),
    OpInfo("GlobalAveragePool", "pool"),
    OpInfo("ReduceMean", "reduce"),
    OpInfo("ReduceSum", "reduce"),
    OpInfo("ReduceMax", "reduce"),
    OpInfo("LayerNormalization", "norm", (1, 2)),
    OpInfo("InstanceNormalization", "norm", (1, 2)),
    OpInfo("Resize", "data", config_inputs=(1, 2)),
    OpInfo("Pad", "data", config_inputs=(2,)),
    OpInfo("Slice", "data"),
    OpInfo("Split", "data"),
    OpInfo("Reshape", "data"),
    OpInfo("Transpose", "data"),
    OpInfo("Flatten", "data"),
    OpInfo("Squeeze", "data"),
    OpInfo("Unsqueeze", "data"),
    OpInfo("Gather", "data"),
    OpInfo("Expand", "data"),
    OpInfo("Tile", "data"),
    OpInfo("DepthToSpace", "data"),
    OpInfo("SpaceToDepth", "data"),
    OpInfo("Identity", "data"),
)

#: activations the NPU fuses into the preceding Conv/Gemm/MatMul/Add (Quark RemoveQDQConv*, FoldRelu)
FUSIBLE_ACTIVATIONS = ("Relu", "Clip", "LeakyRelu", "PRelu")


def op_info(node: onnx.NodeProto) -> OpInfo | None:
    if node.domain not in ("", "ai.onnx"):
        return None
    return OPS.get(node.op_type)



def weight_channel_axis(node: onnx.NodeProto, rank: int) -> int:
    """Axis of the output channels in a weight tensor (per-channel scales run along it)."""
    if node.op_type == "ConvTranspose":
        return 1
    if node.op_type == "Gemm":
        return 0 if attribute(node, "transB", 0) else 1
    if node.op_type == "MatMul":
        return rank - 1
    return 0  # Conv, PRelu slopes, norms


def weight_block_axis(node: onnx.NodeProto, rank: int) -> int:
    """Axis of the reduction dimension in a weight tensor (block formats run blocks along it)."""
    if node.op_type == "Conv":
        return 1 if rank > 1 else 0
    if node.op_type == "ConvTranspose":
        return 0
    if node.op_type == "Gemm":
        return 1 if attribute(node, "transB", 0) else 0
    if node.op_type == "MatMul":
        return max(rank - 2, 0)
    return 0 if rank <= 1 else 1
