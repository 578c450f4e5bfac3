"""A pass over the lowered model: values that are bf16 already are not rounded to bf16 again.

:func:`~ryzen_nb.npu.lower.lower` runs :func:`drop_bf16_round_trips` on each emulated model after
:func:`~ryzen_nb.npu.code_passes.rewrite_codes`; the numbers stay the same bit for bit.
"""

from __future__ import annotations

import json

import onnx
from onnx import helper

from ryzen_nb.graph.attributes import attribute
from ryzen_nb.graph.prepare import prune_unused
from ryzen_nb.npu.code_passes import graph_maps

__all__ = ["BF16_WIDENED", "drop_bf16_round_trips", "with_widened"]

#: the emulated model's metadata key mapping the float32 tensors :func:`drop_bf16_round_trips` dropped
#: to their bf16 source
BF16_WIDENED = "ryzen_nb.npu.bf16_widened"


def drop_bf16_round_trips(m: onnx.ModelProto) -> None:
    """A Cast to bfloat16 of a float32 that was cast from bfloat16 reads that bfloat16 instead.

    A float kernel rounds its output to bf16 (Cast to bfloat16, Cast back to float32) and the next
    one rounds its operand again: bfloat16 -> float32 -> bfloat16 gives every value back, so the
    second rounding is a pass over the tensor for nothing (ResNet50 BF16: 190 of them). The float32
    tensors only that rounding read then go; the model's metadata lists them with their bf16
    source (:data:`BF16_WIDENED`), and :func:`with_widened` puts their Casts back for inspection."""
    _, graph_outputs, producers, _ = graph_maps(m)

    def cast_to(name: str, to: int) -> onnx.NodeProto | None:
        n = producers.get(name)
        return n if n is not None and n.op_type == "Cast" and attribute(n, "to", 0) == to else None

    bf16, f32 = onnx.TensorProto.BFLOAT16, onnx.TensorProto.FLOAT
    rewired: dict[str, str] = {}
    for n in m.graph.node:
        widened = cast_to(n.input[0], f32) if n.op_type == "Cast" and attribute(n, "to", 0) == bf16 else None
        if widened is not None and cast_to(widened.input[0], bf16) is not None and n.output[0] not in graph_outputs:
            source = widened.input[0]
            rewired[n.output[0]] = rewired.get(source, source)  # nodes are in order: a chain resolves to its first
    if rewired:
        dropped: dict[str, str] = {}  # float32 tensor -> the bf16 it was cast from
        for n in m.graph.node:
            for t in n.input:
                if t in rewired:
                    float32 = producers[t].input[0]
                    source = producers[float32].input[0]
                    dropped[float32] = rewired.get(source, source)  # where that bf16 went as well
            n.input[:] = [rewired.get(t, t) for t in n.input]
        helper.set_model_props(m, {**{p.key: p.value for p in m.metadata_props}, BF16_WIDENED: json.dumps(dropped)})
        prune_unused(m)


def with_widened(m: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    """``m``, or a copy with the Casts back that compute those of ``names`` :func:`drop_bf16_round_trips`
    dropped (bfloat16 -> float32), so a run can output them."""
    widened = json.loads(next((p.value for p in m.metadata_props if p.key == BF16_WIDENED), "{}"))
    produced = {o for n in m.graph.node for o in n.output}
    missing = [t for t in dict.fromkeys(names) if t in widened and t not in produced]
    if not missing:
        return m
    copy = onnx.ModelProto()
    copy.CopyFrom(m)
    copy.graph.node.extend(helper.make_node("Cast", [widened[t]], [t], to=onnx.TensorProto.FLOAT, name=f"{t}_widened")
                           for t in missing)
    return copy
