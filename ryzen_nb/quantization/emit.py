"""Step 3 of the quantizer: the QDQ graph of a plan with parameters.

Each quantized activation gets its format's lowering right after its producer, and its quantized
consumers read the result (the others keep reading the float value); weights are stored quantized
(integer codes + DequantizeLinear, bf16/fp16 + Cast) or, for block formats, as their quantized float
values. Float formats may be wrapped in one model-local function node per tensor.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ryzen_nb._version import __version__
from ryzen_nb.calibration.methods import constant_code_range
from ryzen_nb.errors import ConfigError
from ryzen_nb.formats.integer import IntegerFormat
from ryzen_nb.graph.builder import OPSET, RYZEN_NB_DOMAIN, RYZEN_NB_DOMAIN_VERSION, GraphBuilder
from ryzen_nb.graph.checks import all_names
from ryzen_nb.graph.index import ModelIndex
from ryzen_nb.quantization.plan import QuantPlan, TensorPlan
from ryzen_nb.quantization.settings import Settings

__all__ = ["emit", "lowering_args", "metadata_for"]


def emit(model: onnx.ModelProto, plan: QuantPlan, settings: Settings, metadata: dict[str, str],
         codes_cache: dict[Any, np.ndarray] | None = None) -> onnx.ModelProto:
    """The quantized model of ``model`` under ``plan``. ``codes_cache`` keeps the integer codes of
    constants between calls that quantize the same weights again and again with few changes (the
    mixed-precision search: dozens of assignments); valid while ``model``'s weights stay as they are."""
    graph = model.graph
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    inits = {t.name: t for t in g.initializer}
    graph_outputs = {o.name for o in g.output}
    qnodes = set(plan.nodes)
    index = ModelIndex(model, infer=False)  # the prepared model carries its inferred shapes
    consumers = index.consumer_indices
    producers = {o: index.index_of(n) for o, n in index.producer.items()}
    shapes = {name: tuple(dims) for name, dims in index.static_shapes.items()}
    ranks = {name: len(dims) for name, dims in index.shapes.items()}
    b = GraphBuilder(reserved=all_names(model))  # new names never collide with the model's own
    inserted_after: dict[int, list[onnx.NodeProto]] = defaultdict(list)  # producer index -> chain nodes
    head: list[onnx.NodeProto] = []  # chains on graph inputs and initializers
    new_inits: list[onnx.TensorProto] = []
    drop_inits: set[str] = set()
    rename_input: dict[tuple[int, str], str] = {}
    rename_output: dict[tuple[int, str], str] = {}
    graph_output_sources: dict[str, str] = {}

    for name, t in plan.tensors.items():
        fmt = t.fmt()
        start = len(b.nodes)
        if t.role == "activation":
            source = name
            if name in graph_outputs and name in producers:
                # keep the graph output's name on the quantized value
                source = b.unique(f"{name}_float")
                rename_output[(producers[name], name)] = source
                graph_output_sources[name] = source
                result = name
            else:
                result = b.unique(f"{name}_{fmt.name}_qdq")
            y = _lower(b, fmt, source, shapes.get(name), ranks.get(name, 4), lowering_args(t, fmt), settings)
            _rename_last_output(b.nodes[start:], y, result)
            chain = b.nodes[start:]
            if name in producers:
                inserted_after[producers[name]].extend(chain)
            else:
                head.extend(chain)
            dual = plan.duals.get(name)
            dual_result = ""
            if dual is not None:  # a second quantizer after the first, for the consumers in its precision
                start = len(b.nodes)
                dual_fmt = dual.fmt()
                y2 = _lower(b, dual_fmt, result, shapes.get(name), ranks.get(name, 4), lowering_args(dual, dual_fmt), settings)
                if isinstance(fmt, IntegerFormat):  # the second quantizer reads a DequantizeLinear
                    _shield_from_dq_propagation(b, b.nodes[start:], result)
                dual_result = b.unique(f"{name}_{dual_fmt.name}_dual_qdq")
                _rename_last_output(b.nodes[start:], y2, dual_result)
                (inserted_after[producers[name]] if name in producers else head).extend(b.nodes[start:])
            for c in consumers.get(name, []):
                # quantized consumers read the quantized value, the others the float one
                if dual is not None and c in dual.consumers:
                    rename_input[(c, name)] = dual_result
                elif c in qnodes:
                    rename_input[(c, name)] = result
                elif source != name:
                    rename_input[(c, name)] = source
        else:
            values = plan.constant_values.get(name)
            if values is None:
                values = numpy_helper.to_array(inits[name])
            # a value the plan made (a divisor guard's epsilon, from the step of its sum) may change
            # between plans with its scale unchanged: never taken from the cache
            cache = codes_cache if name not in plan.constant_values else None
            stored, chain_out = _store_constant(b, name, values, t, fmt, settings, cache)
            new_inits.extend(stored)
            head.extend(b.nodes[start:])
            for c in consumers.get(name, []):
                if c in qnodes:
                    rename_input[(c, name)] = chain_out
            if all(c in qnodes for c in consumers.get(name, [])) and name not in graph_outputs:
                drop_inits.add(name)

    for name, act in _ort_fusable_folds(graph, plan, settings, consumers, producers).items():
        start = len(b.nodes)
        fmt = act.fmt()
        y = _lower(b, fmt, name, shapes.get(name), ranks.get(name, 4), lowering_args(act, fmt), settings)
        inserted_after[producers[name]].extend(b.nodes[start:])
        rename_input[(consumers[name][0], name)] = y

    nodes: list[onnx.NodeProto] = list(head)
    for i, node in enumerate(graph.node):
        n = onnx.NodeProto()
        n.CopyFrom(node)
        for k, name in enumerate(n.input):
            if (i, name) in rename_input:
                n.input[k] = rename_input[(i, name)]
        for k, name in enumerate(n.output):
            if (i, name) in rename_output:
                n.output[k] = rename_output[(i, name)]
        nodes.append(n)
        nodes.extend(inserted_after.get(i, []))
    del g.node[:]
    g.node.extend(nodes)
    kept = [t for t in g.initializer if t.name not in drop_inits]
    del g.initializer[:]
    g.initializer.extend(kept + new_inits)
    del g.value_info[:]  # stale; shape inference fills it again

    if b.functions:
        out.functions.extend(b.functions.values())
        if not any(o.domain == RYZEN_NB_DOMAIN for o in out.opset_import):
            out.opset_import.append(helper.make_opsetid(RYZEN_NB_DOMAIN, RYZEN_NB_DOMAIN_VERSION))
    for o in out.opset_import:
        if o.domain in ("", "ai.onnx") and o.version < OPSET:
            raise ConfigError(f"internal: the prepared model should be at opset {OPSET}")
    del out.metadata_props[:]
    for key, value in {**{p.key: p.value for p in model.metadata_props}, **metadata}.items():
        out.metadata_props.append(onnx.StringStringEntryProto(key=key, value=value))
    return out


def _ort_fusable_folds(graph: onnx.GraphProto, plan: QuantPlan, settings: Settings, consumers: dict[str, list[int]],
                      producers: dict[str, int]) -> dict[str, TensorPlan]:
    """Folded MAC and residual-Add outputs (Conv/Gemm/MatMul/Add -> Relu/Clip, no quantizer between
    them: FoldRelu) that get the activation's own 8-bit quantizer before the activation too -> that
    quantizer's plan.

    onnxruntime turns DequantizeLinear -> Conv/Gemm/MatMul/Add -> QuantizeLinear into its integer kernel
    (QLinearConv, QLinearAdd...) only when the QuantizeLinear reads the operator's output itself; behind a Relu the operator runs
    in float, with its weights dequantized on every run (an A8W8 ResNet50 then runs at FP32 speed or
    below, onnxruntime's own S8S8 model faster). Relu and Clip commute with a monotone quantizer and
    a DequantizeLinear -> QuantizeLinear round trip at one scale is the identity, so
    Q(act(y)) == Q(act(DQ(Q(y)))) exactly: the model computes the same values, the NPU still fuses the
    activation (its quantizer pair is looked through), and onnxruntime can fuse. Only with int32
    biases (its kernels take no other) and 8-bit activations (it has no 16-bit ones)."""
    if not (settings.ort_fusable_folds and settings.fold_activations and settings.bias == "int32"):
        return {}
    out: dict[str, TensorPlan] = {}
    weights = {t.name for t in graph.initializer}
    for name in plan.folded:
        users = consumers.get(name, [])
        if name not in producers or len(users) != 1 or not _ort_fusable_producer(graph.node[producers[name]], weights):
            continue
        act_node = graph.node[users[0]]
        act = plan.tensors.get(act_node.output[0]) if act_node.op_type in ("Relu", "Clip") else None
        if act is None or act.role != "activation" or act.params is None or plan.duals.get(act.name) is not None:
            continue
        fmt = act.fmt()
        if isinstance(fmt, IntegerFormat) and fmt.info.element_bits == 8:
            out[name] = act
    return out


def _ort_fusable_producer(node: onnx.NodeProto, weights: set[str]) -> bool:
    """A MAC, or a residual Add (a bias Add reads a weight, which its QDQ form leaves float:
    onnxruntime has no integer kernel for it, and it keeps the form it had)."""
    if node.op_type == "Add":
        return not weights & set(node.input)
    return node.op_type in ("Conv", "Gemm", "MatMul")


def lowering_args(t: TensorPlan, fmt) -> dict[str, Any]:
    """The arguments the written quantizer of ``t`` gets (the algorithms fake-quantize with the same)."""
    kw: dict[str, Any] = {"rounding": t.settings.rounding}
    if fmt.info.axis_role == "block":
        kw["axis"] = t.axis
    if t.params is not None:
        kw["scale"] = t.params.scale
        if isinstance(fmt, IntegerFormat):
            kw["zero_point"] = t.params.zero_point
        if np.ndim(t.params.scale):
            kw["axis"] = t.axis
    return kw


def _rename_last_output(chain: list[onnx.NodeProto], old: str, new: str) -> None:
    for node in reversed(chain):
        for k, name in enumerate(node.output):
            if name == old:
                node.output[k] = new
                return
    raise AssertionError(f"lowering output {old} not found")


def _shield_from_dq_propagation(b: GraphBuilder, chain: list[onnx.NodeProto], x: str) -> None:
    """Make the function calls in ``chain`` that read ``x`` (a DequantizeLinear output) start with a
    one-input ``Max`` — the identity, which onnxruntime neither removes nor propagates Q/DQ through.

    onnxruntime's QDQPropagationTransformer (1.32, every optimization level from basic) moves a
    DequantizeLinear with one reader forward through Reshape/Transpose/Slice...; inside the inlined
    body of a block format's quantizer (BFP16, MX: Reshape into blocks, which an ``If`` then reads from
    its subgraphs) it fails a C++ assertion on a node's input list and aborts the process. A second
    (dual) quantizer after an integer one is the only place ryzen-nb writes a DequantizeLinear
    straight into such a function.
    """
    for node in chain:
        key = (node.domain, node.op_type)
        if x not in node.input or key not in b.functions:
            continue
        f = b.functions[key]
        shielded = onnx.FunctionProto()
        shielded.CopyFrom(f)
        shielded.name = f"{f.name}_after_dq"
        inner = f"{f.input[0]}_max"
        for n in shielded.node:
            n.input[:] = [inner if i == f.input[0] else i for i in n.input]
        barrier = helper.make_node("Max", [f.input[0]], [inner], name=inner)
        shielded.node.insert(0, barrier)
        b.add_function(shielded)
        node.op_type = shielded.name


def _lower(b: GraphBuilder, fmt, x: str, shape, rank: int, kw: dict[str, Any], settings: Settings) -> str:
    """The format's lowering of tensor ``x``; float formats may be wrapped in one function node."""
    if fmt.info.family == "float" and settings.float_lowering == "function" and kw.get("scale") is None:
        fb = GraphBuilder()
        fb.op("Identity", fmt.lower(fb, "x", shape=None, rank=rank, **kw), outputs=["y"])
        doc = f"{fmt.info.description}: the standard-op twin of Quark's ExtendedQuantizeLinear/DequantizeLinear"
        return b.call(fb.to_function(f"{fmt.name}QuantizeDequantize", ["x"], ["y"], doc=doc), x)
    return fmt.lower(b, x, shape=shape, rank=rank, **kw)


def constant_codes(codes: np.ndarray, t: TensorPlan, fmt: IntegerFormat) -> np.ndarray:
    """A constant's integer codes within :func:`constant_code_range` (int8 weights of a symmetric
    scheme never take -128, as Quark stores them: a MinMSE power-of-two scale that clips a large
    negative weight gives it -127, as it gives a large positive one 127)."""
    lo, hi = constant_code_range(fmt, t.settings.symmetric)
    if (lo, hi) == (fmt.qmin, fmt.qmax) or codes.size == 0:
        return codes
    wide = np.asarray(codes).astype(np.int64)
    if wide.min() >= lo and wide.max() <= hi:
        return codes
    return np.clip(wide, lo, hi).astype(fmt.storage_dtype)


def _store_constant(b: GraphBuilder, name: str, values: np.ndarray, t: TensorPlan, fmt, settings: Settings,
                    codes_cache: dict[Any, np.ndarray] | None = None):
    """Initializers holding a constant in its format, and the nodes that turn it back into float."""
    if isinstance(fmt, IntegerFormat) and t.params is not None:
        kw = {"scale": t.params.scale, "zero_point": t.params.zero_point, "rounding": t.settings.rounding}
        if np.ndim(t.params.scale):
            kw["axis"] = t.axis
        key = (name, fmt, np.asarray(t.params.scale).tobytes(), np.asarray(t.params.zero_point).tobytes(),
               kw.get("axis"), t.settings.rounding, t.settings.symmetric)
        stored = codes_cache.get(key) if codes_cache is not None else None
        if stored is None:
            stored = constant_codes(fmt.quantize(values, **kw).codes, t, fmt)
            if codes_cache is not None:
                codes_cache[key] = stored
        codes = numpy_helper.from_array(stored, b.unique(f"{name}_quantized"))
        scale = numpy_helper.from_array(np.asarray(t.params.scale, np.float32), b.unique(f"{name}_scale"))
        zp = numpy_helper.from_array(np.asarray(t.params.zero_point).astype(fmt.storage_dtype),
                                     b.unique(f"{name}_zero_point"))
        attrs = {"axis": t.axis} if np.ndim(t.params.scale) else {}
        out = b.unique(f"{name}_DequantizeLinear_Output")
        b.nodes.append(helper.make_node("DequantizeLinear", [codes.name, scale.name, zp.name], [out],
                                        name=b.unique(f"{name}_DequantizeLinear"), **attrs))
        return [codes, scale, zp], out
    if fmt.info.family == "float" and t.params is None and settings.float_weight_storage == "qdq":
        original = numpy_helper.from_array(values.astype(np.float32), b.unique(f"{name}_float"))
        return [original], _lower(b, fmt, original.name, values.shape, values.ndim, {"rounding": t.settings.rounding},
                                  settings)
    if fmt.info.family == "float" and t.params is None and settings.float_weight_storage == "native":
        q = fmt.quantize(values)
        codes = numpy_helper.from_array(q.codes, b.unique(f"{name}_{fmt.name}"))
        out = b.unique(f"{name}_Cast_Output")
        b.nodes.append(helper.make_node("Cast", [codes.name], [out], name=b.unique(f"{name}_Cast"),
                                        to=onnx.TensorProto.FLOAT))
        return [codes], out
    kw = {"rounding": t.settings.rounding}
    if fmt.info.axis_role is not None:
        kw["axis"] = t.axis if values.ndim > 1 else 0
    if t.params is not None:
        kw["scale"] = t.params.scale
    quantized = fmt.quantize_dequantize(values, **kw).astype(np.float32)
    tensor = numpy_helper.from_array(quantized, b.unique(f"{name}_{fmt.name}"))
    return [tensor], tensor.name


def metadata_for(plan: QuantPlan, extra: dict[str, Any]) -> dict[str, str]:
    data = {
        "ryzen_nb.version": __version__,
        "ryzen_nb.formats": json.dumps(plan.formats_by_tensor(), sort_keys=True),
    }
    for key, value in extra.items():
        data[f"ryzen_nb.{key}"] = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return data
