"""Reading a (quantized) model the way the Vitis AI EP does: which quantizer feeds each tensor,
and therefore in which precision each operator would run on the NPU.

A tensor's quantization comes from the node producing it:

* ``DequantizeLinear`` — an integer (or float8) format; the scale, zero point and element type tell
  XINT8 (power-of-two scales, int8 zero point 0 / uint8 zero point 128) from A8W8 / A16W8;
* a ``ryzen_nb:<FORMAT>QuantizeDequantize`` function call — that format (BFP16, MX..., bfloat16);
* ``Cast(to=float)`` of a bfloat16 tensor — bfloat16 (Quark's BF16QDQToCast models).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto

from ryzen_nb import formats
from ryzen_nb.graph.builder import RYZEN_NB_DOMAIN
from ryzen_nb.graph.index import ModelIndex

__all__ = ["TensorQuant", "QUANTIZER_OPS", "is_quantizer", "quantizer_outputs"]

#: nodes that only convert between precisions (the EP folds them into NPU ops or the boundary)
QUANTIZER_OPS = {"QuantizeLinear", "DequantizeLinear"}


@dataclass(frozen=True)
class TensorQuant:
    """The format a tensor was quantized to (as seen by its consumers)."""

    format: str  #: a ryzen_nb.formats name, e.g. "uint8", "BFP16", "bfloat16"
    scale: np.ndarray | None = None
    zero_point: np.ndarray | None = None
    constant: bool = False  #: a weight (its codes are a constant)

    @property
    def family(self) -> str:
        return formats.get(self.format).info.family

    @property
    def bits(self) -> int:
        return formats.get(self.format).info.element_bits

    @property
    def per_tensor(self) -> bool:
        return self.scale is None or np.size(self.scale) == 1

    @property
    def power_of_two(self) -> bool:
        return self.scale is not None and bool(np.all(formats.is_power_of_two(self.scale)))

    @property
    def xint8_zero_point(self) -> bool:
        """int8 with zero point 0 or uint8 with zero point 128 (the X1 importer's rule,
        docs/npu-operators.md#fallback-rules)."""
        zp = np.zeros(1) if self.zero_point is None else np.asarray(self.zero_point)
        if self.format == "int8":
            return bool(np.all(zp == 0))
        if self.format == "uint8":
            return bool(np.all(zp == 128))
        return False


def is_quantizer(node: onnx.NodeProto) -> bool:
    if node.domain == RYZEN_NB_DOMAIN and "QuantizeDequantize" in node.op_type:
        return True
    if node.domain in ("", "ai.onnx", "com.microsoft") and node.op_type in QUANTIZER_OPS:
        return True
    return node.op_type == "Cast" and node.domain in ("", "ai.onnx")


_DQ_TYPES = {
    TensorProto.INT8: "int8", TensorProto.UINT8: "uint8", TensorProto.INT16: "int16", TensorProto.UINT16: "uint16",
    TensorProto.INT4: "int4", TensorProto.UINT4: "uint4", TensorProto.INT32: "int32",
    TensorProto.FLOAT8E4M3FN: "float8_e4m3fn", TensorProto.FLOAT8E5M2: "float8_e5m2",
}


def quantizer_outputs(index: ModelIndex) -> dict[str, TensorQuant]:
    """tensor name -> the quantization it carries, for every quantizer output in the graph."""
    model = index.model
    consts = index.constants
    types = index.element_types
    producers = index.producer
    out: dict[str, TensorQuant] = {}

    def is_constant(name: str) -> bool:
        node = producers.get(name)
        return name in consts or (node is not None and node.op_type in ("Constant",))

    for node in index.nodes:
        if node.domain == RYZEN_NB_DOMAIN and "QuantizeDequantize" in node.op_type:
            name = node.op_type.split("QuantizeDequantize")[0]
            try:
                fmt = formats.get(name).name
            except Exception:
                continue
            out[node.output[0]] = TensorQuant(fmt, constant=is_constant(node.input[0]))
        elif node.op_type == "DequantizeLinear":
            code_type = types.get(node.input[0])
            fmt = _DQ_TYPES.get(code_type)
            if fmt is None and len(node.input) > 2:
                fmt = _DQ_TYPES.get(types.get(node.input[2]))
            if fmt is None:
                continue
            scale = consts.get(node.input[1])
            zp = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
            out[node.output[0]] = TensorQuant(fmt, scale, zp, constant=is_constant(node.input[0]))
        elif node.op_type == "Cast":
            to = next((a.i for a in node.attribute if a.name == "to"), None)
            if to == TensorProto.FLOAT and types.get(node.input[0]) == TensorProto.BFLOAT16:
                out[node.output[0]] = TensorQuant("bfloat16", constant=is_constant(node.input[0]) or (
                    node.input[0] in producers and is_constant(producers[node.input[0]].input[0])))
    # block-format weights stored already on their grid carry their format in the metadata
    meta = {p.key: p.value for p in model.metadata_props}
    if "ryzen_nb.formats" in meta:
        for tensor, fmt in json.loads(meta["ryzen_nb.formats"]).items():
            for suffix in (f"_{fmt}",):
                stored = tensor + suffix
                if stored in consts and stored not in out:
                    out[stored] = TensorQuant(fmt, constant=True)
    return out
