"""Whole-model float type conversions: float16 -> float32 (keeping float16 at the inputs and
outputs if asked) and float32 -> bfloat16 (everything inside, float32 at the inputs and outputs).
"""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper, numpy_helper

from ryzen_nb.graph.builder import IR_VERSION

__all__ = ["float16_io", "float16_to_float32", "float32_to_bfloat16", "has_float16", "with_float16_io"]

_FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16)


def has_float16(model: onnx.ModelProto) -> bool:
    g = model.graph
    return any(t.data_type == TensorProto.FLOAT16 for t in g.initializer) or any(
        vi.type.tensor_type.elem_type == TensorProto.FLOAT16 for vi in list(g.input) + list(g.output)
    )


def _retype(model: onnx.ModelProto, source: int, target: int, keep_io: bool) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    np_target = helper.tensor_dtype_to_np_dtype(target)
    for i, t in enumerate(g.initializer):
        if t.data_type == source:
            g.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np_target), t.name))
    for node in g.node:
        for a in node.attribute:
            if a.name == "to" and a.i == source:
                a.i = target
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == source:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np_target), a.t.name))
    head, tail = [], []
    for vi in g.input:
        tt = vi.type.tensor_type
        if tt.elem_type != source:
            continue
        if keep_io:
            inner = f"{vi.name}_as_{TensorProto.DataType.Name(target).lower()}"
            for node in g.node:
                for k, name in enumerate(node.input):
                    if name == vi.name:
                        node.input[k] = inner
            head.append(helper.make_node("Cast", [vi.name], [inner], name=f"{inner}_Cast", to=target))
        else:
            tt.elem_type = target
    for vi in g.output:
        tt = vi.type.tensor_type
        if tt.elem_type != source:
            continue
        if keep_io:
            inner = f"{vi.name}_as_{TensorProto.DataType.Name(target).lower()}"
            for node in g.node:
                for k, name in enumerate(node.output):
                    if name == vi.name:
                        node.output[k] = inner
                for k, name in enumerate(node.input):
                    if name == vi.name:
                        node.input[k] = inner
            tail.append(helper.make_node("Cast", [inner], [vi.name], name=f"{vi.name}_Cast", to=source))
        else:
            tt.elem_type = target
    nodes = head + list(g.node) + tail
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]
    m.ir_version = IR_VERSION
    return m


def float16_io(model: onnx.ModelProto) -> tuple[list[str], list[str]]:
    """Names of the float16 graph inputs and outputs."""
    g = model.graph
    return ([vi.name for vi in g.input if vi.type.tensor_type.elem_type == TensorProto.FLOAT16],
            [vi.name for vi in g.output if vi.type.tensor_type.elem_type == TensorProto.FLOAT16])


def with_float16_io(model: onnx.ModelProto, inputs: list[str], outputs: list[str]) -> onnx.ModelProto:
    """A copy of ``model`` whose float32 graph inputs ``inputs`` and outputs ``outputs`` are float16,
    with a Cast at each (the boundary :func:`float16_to_float32` keeps with ``keep_io_types``)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    head, tail = [], []
    for vi in g.input:
        if vi.name in inputs:
            inner = f"{vi.name}_as_float"
            for node in g.node:
                node.input[:] = [inner if name == vi.name else name for name in node.input]
            head.append(helper.make_node("Cast", [vi.name], [inner], name=f"{inner}_Cast", to=TensorProto.FLOAT))
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    for vi in g.output:
        if vi.name in outputs:
            inner = f"{vi.name}_as_float"
            for node in g.node:
                node.input[:] = [inner if name == vi.name else name for name in node.input]
                node.output[:] = [inner if name == vi.name else name for name in node.output]
            tail.append(helper.make_node("Cast", [inner], [vi.name], name=f"{vi.name}_Cast", to=TensorProto.FLOAT16))
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    nodes = head + list(g.node) + tail
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]
    return m


def float16_to_float32(model: onnx.ModelProto, keep_io_types: bool = True) -> onnx.ModelProto:
    """A float32 copy of a float16 model. ``keep_io_types`` keeps float16 inputs/outputs, with
    Casts at the boundary (Quark: "preserves FP16 at the model inputs and outputs")."""
    return _retype(model, TensorProto.FLOAT16, TensorProto.FLOAT, keep_io_types)


def float32_to_bfloat16(model: onnx.ModelProto) -> onnx.ModelProto:
    """Every float32 tensor inside the model becomes bfloat16 (weights rounded to nearest-even);
    inputs and outputs stay float32 behind Casts — Quark's ``convert_fp32_to_bf16 --format bf16``."""
    return _retype(model, TensorProto.FLOAT, TensorProto.BFLOAT16, keep_io=True)
