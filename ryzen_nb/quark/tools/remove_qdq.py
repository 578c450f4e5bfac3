"""``python -m ryzen_nb.quark.tools.remove_qdq --input_model IN --output_model OUT``: the float model
back from a quantized one, as Quark's tool: activation quantizers (QuantizeLinear/DequantizeLinear
pairs, ryzen-nb's QuantizeDequantize function nodes, BF16 Cast pairs) are bypassed, and weights
stored quantized are dequantized into float32 initializers. Weights kept in float behind a
quantizer node keep their float values."""

import argparse
import sys
from collections.abc import Sequence

import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from ryzen_nb.graph.attributes import attribute
from ryzen_nb.graph.io import load_model, model_path_of, save_model
from ryzen_nb.graph.prepare import prune_unused
from ryzen_nb.quark.tools import _cli

__all__ = ["remove_qdq"]


def _constant(node: onnx.NodeProto, inits: dict[str, onnx.TensorProto], opsets: list) -> onnx.TensorProto:
    """The value of a node whose inputs are all initializers, as a float32 initializer."""
    graph = helper.make_graph([node], "fold", [], [helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT,
                                                                                  None)],
                              initializer=[inits[i] for i in node.input if i])
    value = ReferenceEvaluator(helper.make_model(graph, opset_imports=opsets)).run(None, {})[0]
    return numpy_helper.from_array(value.astype("float32"), node.output[0])


def remove_qdq(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` without its quantizers (see the module docstring)."""
    m = load_model(model)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    bypass: dict[str, str] = {}  # tensor -> the float tensor it stands for
    folded: list[onnx.TensorProto] = []
    for node in g.node:
        source = producer.get(node.input[0]) if node.input else None
        if node.op_type == "DequantizeLinear" and node.domain in ("", "ai.onnx"):
            if source is not None and source.op_type == "QuantizeLinear":
                bypass[node.output[0]] = source.input[0]
            elif all(not i or i in inits for i in node.input):
                folded.append(_constant(node, inits, list(m.opset_import)))
        elif node.domain == "ryzen_nb" and "QuantizeDequantize" in node.op_type:
            bypass[node.output[0]] = node.input[0]
        elif node.op_type == "Cast" and attribute(node, "to") == TensorProto.FLOAT:
            if source is not None and source.op_type == "Cast" and attribute(source, "to") == TensorProto.BFLOAT16:
                bypass[node.output[0]] = source.input[0]
            elif node.input[0] in inits:
                folded.append(_constant(node, inits, list(m.opset_import)))

    def root(name: str) -> str:
        while name in bypass:
            name = bypass[name]
        return name

    outputs = {o.name for o in g.output}
    folded_names = {t.name for t in folded}
    kept = [n for n in g.node if not (set(n.output) & folded_names) and n.output[0] not in bypass]
    for node in kept:
        node.input[:] = [root(i) for i in node.input]
    kept += [helper.make_node("Identity", [root(o)], [o], name=f"{o}_float") for o in outputs if root(o) != o]
    del g.node[:]
    g.node.extend(kept)
    g.initializer.extend(folded)
    prune_unused(m)
    used = {(n.domain, n.op_type) for n in g.node}
    functions = [f for f in m.functions if (f.domain, f.name) in used]
    del m.functions[:]
    m.functions.extend(functions)
    props = [p for p in m.metadata_props if not p.key.startswith("ryzen_nb.")]  # they describe the quantization
    del m.metadata_props[:]
    m.metadata_props.extend(props)
    return m


def main(argv: Sequence[str] | None = None) -> int:
    p = _cli.parser("remove_qdq", "Remove the quantizers of a quantized ONNX model.")
    _cli.add_path(p, "input_model", ["--input_model"], "the quantized model")
    _cli.add_path(p, "output_model", ["--output_model"], "where to write the float model")

    def convert(args: argparse.Namespace) -> None:
        out = save_model(remove_qdq(args.input_model), args.output_model, protect=model_path_of(args.input_model))
        print(f"Removed the quantizers of {args.input_model}: {out}")

    return _cli.run(p, convert, argv, ("input_model", "output_model"))


if __name__ == "__main__":
    sys.exit(main())
