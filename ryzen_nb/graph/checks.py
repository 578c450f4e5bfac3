"""Checks of a model as it arrives, before any work: what ryzen-nb cannot take is said plainly.

* :func:`check_opset` — the standard-domain opset must lie in :data:`SUPPORTED_OPSETS`;
* :func:`check_not_quantized` — a model that already holds quantization operators (QDQ or
  QOperator) is refused: quantizing it again would quantize integer codes or fail to load;
* :func:`drop_initializer_inputs` — weights also listed as graph inputs (IR 3 / opset 7 exports,
  torch's ``keep_initializers_as_inputs``) become plain constants;
* :func:`non_finite_values` — NaN/Inf in a float constant, named;
* :func:`all_names` / :func:`walk_graphs` — every name a model uses and every graph it holds
  (If/Loop/Scan bodies included), for passes that must not collide with or miss them.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import onnx
from onnx import numpy_helper

from ryzen_nb.errors import ModelError

__all__ = ["SUPPORTED_OPSETS", "QUANTIZATION_OPS", "check_opset", "check_not_quantized", "drop_initializer_inputs",
           "non_finite_values", "all_names", "walk_graphs", "outer_scope_reads"]

#: standard-domain opsets ryzen-nb quantizes: from opset 7 (IR 3 exports; the version converter
#: upgrades them) to 27, the newest whose QuantizeLinear/DequantizeLinear onnxruntime 1.32 implements
#: (it loads opset 28 models, but has no QuantizeLinear(28) kernel)
SUPPORTED_OPSETS = (7, 27)

#: operators that only appear in an already-quantized model (QDQ, QOperator, dynamic quantization)
QUANTIZATION_OPS = frozenset({
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul", "ConvInteger",
    "MatMulInteger", "QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearAveragePool",
    "QLinearGlobalAveragePool", "QLinearConcat", "QLinearSoftmax", "QGemm", "QAttention", "DynamicQuantizeMatMul",
    "DynamicQuantizeLSTM", "MatMulIntegerToFloat", "QOrderedMatMul", "MatMulNBits", "MatMulBnb4",
})


def walk_graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """``graph`` and every subgraph inside it (If branches, Loop and Scan bodies), depth first."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from walk_graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from walk_graphs(g)


def outer_scope_reads(graph: onnx.GraphProto) -> set[str]:
    """Names that the subgraphs of ``graph``'s nodes read from ``graph`` (outer-scope references):
    such a tensor has readers the main graph's node list does not show."""
    reads: set[str] = set()
    for node in graph.node:
        for attr in node.attribute:
            subs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for sub in subs:
                defined: set[str] = set()
                local: set[str] = set()
                for g in walk_graphs(sub):
                    defined |= {o for n in g.node for o in n.output} | {i.name for i in g.input}
                    defined |= {t.name for t in g.initializer}
                    local |= {i for n in g.node for i in n.input if i} | {o.name for o in g.output}
                reads |= local - defined
    return reads


def all_names(model: onnx.ModelProto) -> set[str]:
    """Every tensor and node name used anywhere in ``model`` (subgraphs included)."""
    names: set[str] = set()
    for g in walk_graphs(model.graph):
        names |= {vi.name for vi in list(g.input) + list(g.output) + list(g.value_info)}
        names |= {t.name for t in g.initializer}
        for node in g.node:
            names.add(node.name)
            names.update(node.input)
            names.update(node.output)
    names.discard("")
    return names


def _standard_opset(model: onnx.ModelProto) -> int | None:
    return next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def check_opset(model: onnx.ModelProto) -> None:
    """A standard-domain opset outside :data:`SUPPORTED_OPSETS` is an error naming the range."""
    version = _standard_opset(model)
    low, high = SUPPORTED_OPSETS
    if version is None:
        raise ModelError("The model imports no standard ONNX opset (its opset_import has no '' / 'ai.onnx' "
                         "domain); it is not a model ryzen-nb can quantize.")
    if not low <= version <= high:
        raise ModelError(
            f"The model uses ONNX opset {version}; ryzen-nb quantizes opsets {low} to {high}. "
            + ("Re-export it at an opset in that range (opset 17 is what Ryzen AI recommends: "
               "torch.onnx.export(..., opset_version=17))." if version > high else
               "Re-export it with a current exporter at opset 17 (torch.onnx.export(..., opset_version=17)).")
        )


def check_not_quantized(model: onnx.ModelProto) -> None:
    """A model that already holds quantization operators is an error that says what it holds."""
    found: dict[str, int] = {}
    for g in walk_graphs(model.graph):
        for node in g.node:
            if node.op_type in QUANTIZATION_OPS:
                found[node.op_type] = found.get(node.op_type, 0) + 1
    if not found:
        return
    ops = ", ".join(f"{n} {op}" for op, n in sorted(found.items(), key=lambda kv: -kv[1]))
    kind = "QDQ" if set(found) <= {"QuantizeLinear", "DequantizeLinear"} else "quantized-operator"
    raise ModelError(
        f"The model is already quantized ({kind} format: {ops}). ryzen-nb quantizes float models: give it the "
        "FP32 (or FP16) model this one was made from. To compare or emulate this quantized model, use "
        "ryzen_nb.evaluation.compare or ryzen_nb.npu.compile, which take quantized models as they are."
    )


def drop_initializer_inputs(model: onnx.ModelProto) -> list[str]:
    """Remove, in place, the graph inputs that are also initializers (old exporters list every weight
    as an input so that it could be overridden at run time); they are constants from here on, and
    the quantized model does not ask for them. Returns their names."""
    inits = {t.name for t in model.graph.initializer}
    dropped = [vi.name for vi in model.graph.input if vi.name in inits]
    if dropped:
        kept = [vi for vi in model.graph.input if vi.name not in inits]
        del model.graph.input[:]
        model.graph.input.extend(kept)
        model.ir_version = max(model.ir_version, 4)  # IR 3 requires every initializer to be an input
    return dropped


def non_finite_values(tensor: onnx.TensorProto) -> tuple[int, int]:
    """(NaN count, Inf count) of a float initializer (0, 0 for other element types)."""
    if tensor.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
                                onnx.TensorProto.BFLOAT16):
        return 0, 0
    values = np.asarray(numpy_helper.to_array(tensor), dtype=np.float64)
    return int(np.isnan(values).sum()), int(np.isinf(values).sum())
