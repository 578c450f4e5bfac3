"""The quantizer: plan which tensors get which format, choose their parameters, emit a QDQ graph.

1. **plan** — the nodes to quantize (op types known to :mod:`ops`, minus exclusions); every float
   input and output of them is quantized: activations in the activation format, weights, biases
   and other constants in theirs; a Conv/Gemm output consumed only by a fusible activation is left
   alone when ``fold_activations`` (the NPU applies ReLU inside the convolution); a fixed-grid
   float format (bf16, fp16, fp8) is applied after Relu, MaxPool and data movement rather than
   before, which gives the same numbers with fewer quantizers (:func:`_defer_past_value_selection`).
2. **parameters** — integer activations get scales from calibration statistics, grouped where
   tensors must share one scale (data-movement outputs with their inputs, Concat operands);
   integer weights from their values; block and float formats need none.
3. **emit** — each quantized activation gets its format's lowering after its producer and its
   quantized consumers read the result; weights are stored quantized (integer codes +
   DequantizeLinear, bf16/fp16 + Cast) or, for block formats, as their quantized float values.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ryzen_nb import formats
from ryzen_nb.calibration.methods import QuantParams, get_method, pow2_scale_for_values
from ryzen_nb.calibration.runner import CalibrationResult
from ryzen_nb.errors import ConfigError
from ryzen_nb.formats import ScaleKind
from ryzen_nb.formats.integer import IntegerFormat
from ryzen_nb.graph.builder import OPSET, RYZEN_NB_DOMAIN, RYZEN_NB_DOMAIN_VERSION, GraphBuilder
from ryzen_nb.quantization.ops import FUSIBLE_ACTIVATIONS, OPS, op_info, weight_block_axis, weight_channel_axis
from ryzen_nb.quantization.settings import Settings, TensorSettings
from ryzen_nb.spec.operators import MAC_OPS

__all__ = ["TensorPlan", "QuantPlan", "make_plan", "assign_parameters", "emit"]

log = logging.getLogger(__name__)


@dataclass
class TensorPlan:
    name: str
    role: str  #: "activation", "weight", "bias" or "constant"
    settings: TensorSettings
    axis: int = 1  #: per-channel axis (integers) or block axis (block formats)
    consumers: list[int] = field(default_factory=list)  #: indices of quantized nodes reading it
    params: QuantParams | None = None
    bias_of: int | None = None  #: node index whose bias this is

    @property
    def format(self) -> str:
        return self.settings.format

    def fmt(self) -> formats.NumericFormat:
        return formats.get(self.settings.format, **dict(self.settings.options))

    @property
    def needs_calibration(self) -> bool:
        return self.role == "activation" and _scaled(self.fmt())


@dataclass
class QuantPlan:
    tensors: dict[str, TensorPlan]
    nodes: list[int]  #: indices of quantized nodes
    folded: list[str] = field(default_factory=list)  #: tensors left unquantized by activation folding
    #: float-format tensors whose quantizer moved past a value-selecting consumer (same numbers)
    deferred: list[str] = field(default_factory=list)
    #: second quantizers (DualQuantNodes): tensor -> its plan in another format, read by ``consumers``
    duals: dict[str, TensorPlan] = field(default_factory=dict)
    groups: list[list[str]] = field(default_factory=list)  #: activations sharing one scale
    notes: list[str] = field(default_factory=list)

    def formats_by_tensor(self) -> dict[str, str]:
        out = {name: t.format for name, t in self.tensors.items()}
        out.update({f"{name} (dual)": t.format for name, t in self.duals.items()})
        return out

    def calibrated(self) -> list[TensorPlan]:
        """Every quantizer whose parameters come from calibration (dual quantizers included)."""
        return [t for t in list(self.tensors.values()) + list(self.duals.values()) if t.needs_calibration]


def _scaled(fmt: formats.NumericFormat) -> bool:
    return fmt.info.scale_kind is ScaleKind.TENSOR


# -- 1. plan ------------------------------------------------------------------------------------------
def _float_tensors(model: onnx.ModelProto) -> dict[str, int]:
    """Element types of every tensor whose type is known (inputs, outputs, value_info, initializers)."""
    types = {}
    for vi in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        if vi.type.HasField("tensor_type"):
            types[vi.name] = vi.type.tensor_type.elem_type
    for init in model.graph.initializer:
        types[init.name] = init.data_type
    return types


def _ranks(model: onnx.ModelProto) -> dict[str, int]:
    ranks = {}
    for vi in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            ranks[vi.name] = len(t.shape.dim)
    for init in model.graph.initializer:
        ranks[init.name] = len(init.dims)
    return ranks


def make_plan(model: onnx.ModelProto, settings: Settings) -> QuantPlan:
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    types = _float_tensors(model)
    ranks = _ranks(model)
    is_float = lambda n: types.get(n) == onnx.TensorProto.FLOAT  # noqa: E731
    consumers: dict[str, list[int]] = defaultdict(list)
    for i, node in enumerate(graph.node):
        for name in node.input:
            if name:
                consumers[name].append(i)

    selected = select_nodes(graph, settings)
    quantized: list[int] = []
    for i, node in enumerate(graph.node):
        info = op_info(node)
        if info is None or i not in selected:
            continue
        if not any(is_float(n) for n in list(node.input) + list(node.output) if n):
            continue
        quantized.append(i)
    qset = set(quantized)

    folded: set[str] = set(settings.fold_tensors)
    if settings.fold_activations:
        for i in quantized:
            node = graph.node[i]
            if node.op_type not in MAC_OPS | {"Add"}:
                continue
            out = node.output[0]
            users = consumers.get(out, [])
            if len(users) == 1 and users[0] in qset and graph.node[users[0]].op_type in FUSIBLE_ACTIVATIONS:
                if out not in {o.name for o in graph.output} and (node.op_type != "Add" or _is_bias_add(node, inits)):
                    folded.add(out)

    tensors: dict[str, TensorPlan] = {}

    def add(name: str, role: str, node_index: int, axis: int = 1, bias_of: int | None = None) -> None:
        if name in folded:
            return
        plan = tensors.get(name)
        if plan is None:
            ts = settings.weight if role in ("weight", "bias", "constant") else settings.activation
            if name in settings.tensor_formats:
                ts = _with_format(ts, settings.tensor_formats[name])
            plan = tensors[name] = TensorPlan(name, role, ts, axis=axis, bias_of=bias_of)
        if node_index >= 0 and node_index not in plan.consumers:
            plan.consumers.append(node_index)

    for i in quantized:
        node = graph.node[i]
        info = op_info(node)
        assert info is not None
        for k, name in enumerate(node.input):
            if not name or not is_float(name) or k in info.config_inputs:
                continue
            if name in inits:
                if name in settings.keep_float:
                    continue
                rank = ranks.get(name, 0)
                if k in info.weight_inputs:
                    if settings.weight.per_channel and node.op_type in MAC_OPS:
                        axis = weight_channel_axis(node, rank)
                    else:
                        axis = weight_block_axis(node, rank)
                    add(name, "weight", i, axis)
                elif k == info.bias_input:
                    add(name, "bias", i, 0, bias_of=i)
                else:
                    add(name, "constant", i, _activation_block_axis(None, rank))
            else:
                add(name, "activation", i, _activation_block_axis(info.reduction, ranks.get(name, 4)))
        for name in node.output:
            if name and is_float(name):
                add(name, "activation", -1, _activation_block_axis(None, ranks.get(name, 4)))

    # weights feeding per-channel integer formats use the channel axis; block formats the block axis
    for t in tensors.values():
        if t.role == "weight" and t.consumers:
            node = graph.node[t.consumers[0]]
            rank = ranks.get(t.name, 0)
            fmt = t.fmt()
            if isinstance(fmt, IntegerFormat) or fmt.info.family == "float":
                if t.settings.per_channel and node.op_type in MAC_OPS:
                    t.axis = weight_channel_axis(node, rank)
            else:
                t.axis = t.settings.block_axis if t.settings.block_axis is not None else weight_block_axis(node, rank)
        elif t.role == "activation" and t.settings.block_axis is not None:
            t.axis = t.settings.block_axis

    unknown_tensors = sorted(set(settings.tensor_formats) - set(tensors) - folded)
    if unknown_tensors:
        all_names = {n for node in graph.node for n in list(node.input) + list(node.output) if n}
        from ryzen_nb.errors import closest_first

        quantizable = sorted(tensors)
        details = []
        for u in unknown_tensors:
            if u in all_names:
                details.append(f"{u!r} exists but is not an input or output of a quantized node")
            else:
                details.append(f"{u!r} is not in the model (closest: {', '.join(closest_first(u, quantizable)[:3])})")
        raise ConfigError("MixedPrecisionTensor names tensors it cannot apply to: " + "; ".join(details) + ".")

    plan = QuantPlan(tensors, quantized, folded=sorted(folded & {n for node in graph.node for n in node.output}))
    plan.deferred = _defer_past_value_selection(graph, plan, settings, consumers, is_float)
    by_name = {node.name: i for i, node in enumerate(graph.node)}
    for name, (fmt_name, readers) in settings.dual_formats.items():
        base = tensors.get(name)
        if base is None or base.role != "activation" or fmt_name == base.format:
            continue
        unknown = [r for r in readers if r not in by_name]
        if unknown:
            raise ConfigError(f"DualQuantNodes names node(s) {unknown} that are not in the model.")
        plan.duals[name] = TensorPlan(name, "activation", _with_format(base.settings, fmt_name), axis=base.axis,
                                      consumers=[by_name[r] for r in readers])
    if plan.deferred:
        plan.notes.append(f"{len(plan.deferred)} float-format quantizer(s) applied after Relu/MaxPool/data movement "
                          "instead of before: the same numbers with fewer operators")
    plan.groups = _sharing_groups(model, plan, settings)
    return plan


#: operators whose outputs are some of their input's values, moved or selected by comparison
VALUE_SELECTING = frozenset({"Relu", "MaxPool", "GlobalMaxPool"} | {
    op for op, info in OPS.items() if info.kind == "data" and op not in ("Resize", "Pad")  # may make new values
})


def _defer_past_value_selection(graph: onnx.GraphProto, plan: QuantPlan, settings: Settings,
                                consumers: dict[str, list[int]], is_float) -> list[str]:
    """Drop the quantizer of activations whose every consumer only selects or moves their values.

    A format without scales (bf16, fp16, fp8) rounds each value to a fixed grid, monotonically, so
    rounding commutes with Relu, MaxPool, Reshape, Transpose, Slice...: quantizing such an
    operator's output gives exactly what quantizing its input did. Keeping only the quantizer
    after it saves an operator pass per tensor and leaves Conv+Relu fusable for onnxruntime.
    Block and integer formats are left alone (their grids depend on neighbours or on scales).
    Returns the names dropped from ``plan.tensors``.
    """
    tensors = plan.tensors
    graph_outputs = {o.name for o in graph.output}
    producer = {name: i for i, node in enumerate(graph.node) for name in node.output}
    qnodes = set(plan.nodes)
    covered: dict[str, TensorSettings] = {}  # quantized, or deferred to a tensor quantized alike
    dropped: list[str] = []
    # consumers come later in a topologically sorted graph: visit tensors from the last producer
    for name in sorted(tensors, key=lambda n: producer.get(n, -1), reverse=True):
        t = tensors[name]
        covered.setdefault(name, t.settings)
        if t.role != "activation" or t.fmt().info.family != "float" or name in graph_outputs \
                or name in settings.tensor_formats:
            continue
        users = consumers.get(name, [])
        selecting = [
            i in qnodes and graph.node[i].op_type in VALUE_SELECTING
            and [n for n in graph.node[i].input if n and is_float(n)] == [name]
            and all(covered.get(o) == t.settings for o in graph.node[i].output if o)
            for i in users
        ]
        if users and all(selecting):
            del tensors[name]
            dropped.append(name)
    return dropped


def _matching(patterns: list[str], names: list[str], what: str) -> set[str]:
    """Node names matching each pattern exactly or as a regular expression (Quark accepts both);
    a pattern matching nothing is an error listing the closest names."""
    import re

    from ryzen_nb.errors import closest_first

    found: set[str] = set()
    missing: list[str] = []
    name_set = set(names)
    for pattern in patterns:
        if pattern in name_set:
            found.add(pattern)
            continue
        try:
            regex = re.compile(pattern)
            hits = {n for n in names if regex.fullmatch(n)}
        except re.error:
            hits = set()
        if hits:
            found |= hits
        else:
            missing.append(pattern)
    if missing:
        details = "; ".join(f"{m!r} (closest: {', '.join(closest_first(m, names)[:3])})" for m in missing)
        raise ConfigError(f"{what} names nodes not in the model: {details}. Node names are the `name` fields shown by "
                          "Netron or model.graph.node; regular expressions such as '^/layer1/.*' are accepted.")
    return found


def select_nodes(graph: onnx.GraphProto, settings: Settings) -> set[int]:
    """Indices of the nodes the config asks to quantize (before checking that ryzen-nb can)."""
    names = [n.name for n in graph.node]
    index = {n.name: i for i, n in enumerate(graph.node)}
    producers = {o: i for i, n in enumerate(graph.node) for o in n.output}
    succ: dict[int, set[int]] = defaultdict(set)
    pred: dict[int, set[int]] = defaultdict(set)
    for i, node in enumerate(graph.node):
        for t in node.input:
            if t in producers:
                succ[producers[t]].add(i)
                pred[i].add(producers[t])

    def reach(starts: set[int], edges: dict[int, set[int]]) -> set[int]:
        seen, stack = set(starts), list(starts)
        while stack:
            for j in edges[stack.pop()]:
                if j not in seen:
                    seen.add(j)
                    stack.append(j)
        return seen

    chosen = set(range(len(graph.node)))
    if settings.include_nodes:
        chosen &= {index[n] for n in _matching(settings.include_nodes, names, "nodes_to_quantize")}
    if settings.input_nodes:
        chosen &= reach({index[n] for n in _matching(settings.input_nodes, names, "input_nodes")}, succ)
    if settings.output_nodes:
        chosen &= reach({index[n] for n in _matching(settings.output_nodes, names, "output_nodes")}, pred)
    chosen -= {index[n] for n in _matching(settings.exclude_nodes, names, "nodes_to_exclude")}
    for starts, ends in settings.exclude_subgraphs:
        down = reach({index[n] for n in _matching(starts, names, "subgraphs_to_exclude")}, succ)
        up = reach({index[n] for n in _matching(ends, names, "subgraphs_to_exclude")}, pred)
        chosen -= down & up
    chosen -= {i for i, n in enumerate(graph.node) if n.op_type in settings.exclude_op_types}
    if settings.op_types is not None:
        chosen &= {i for i, n in enumerate(graph.node) if n.op_type in settings.op_types}
    return chosen


def _with_format(ts: TensorSettings, name: str) -> TensorSettings:
    from dataclasses import replace

    fmt = formats.get(name)
    return replace(ts, format=fmt.name, options=(), power_of_two=ts.power_of_two and isinstance(fmt, IntegerFormat))


def _activation_block_axis(reduction: str | None, rank: int) -> int:
    if rank <= 1:
        return 0
    if reduction == "channel":
        return 1
    if reduction == "last":
        return rank - 1
    return 1 if rank == 4 else rank - 1


def _is_bias_add(node: onnx.NodeProto, inits: dict[str, onnx.TensorProto]) -> bool:
    return any(name in inits for name in node.input)


def _sharing_groups(model: onnx.ModelProto, plan: QuantPlan, settings: Settings) -> list[list[str]]:
    """Activations that must share one integer scale (union-find over the tensor names)."""
    parent: dict[str, str] = {}

    def find(a: str) -> str:
        while parent.setdefault(a, a) != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def union(a: str, b: str) -> None:
        parent[find(a)] = find(b)

    graph = model.graph
    tensors = plan.tensors
    for i in plan.nodes:
        node = graph.node[i]
        info = op_info(node)
        acts = [n for n in node.input if n in tensors and tensors[n].role == "activation"]
        outs = [n for n in node.output if n in tensors]
        if not acts or not outs:
            continue
        same_format = lambda names: len({tensors[n].format for n in names}) == 1  # noqa: E731
        aligned = {"Slice": settings.align_slice, "Pad": settings.align_pad, "MaxPool": settings.align_pool,
                   "GlobalMaxPool": settings.align_pool}.get(node.op_type, settings.share_data_movement)
        if aligned and info is not None and info.moves_data:
            if same_format([acts[0], *outs]):
                for o in outs:
                    union(acts[0], o)
        elif settings.align_concat and node.op_type == "Concat" and same_format(acts + outs):
            for n in acts + outs:
                union(acts[0], n)
    groups: dict[str, list[str]] = defaultdict(list)
    for name in parent:
        groups[find(name)].append(name)
    return [sorted(g) for g in groups.values() if len(g) > 1]


# -- 2. parameters ------------------------------------------------------------------------------------
def assign_parameters(model: onnx.ModelProto, plan: QuantPlan, calibration: CalibrationResult | None,
                      settings: Settings) -> None:
    """Scales and zero points of every tensor in an integer (or scaled float) format."""
    inits = {t.name: t for t in model.graph.initializer}
    stats = calibration.stats if calibration else {}
    group_of = {n: tuple(g) for g in plan.groups for n in g}
    done: set[str] = set()
    for name, t in plan.tensors.items():
        fmt = t.fmt()
        if not _scaled(fmt) or t.role != "activation" or name in done:
            continue
        members = group_of.get(name, (name,))
        members = tuple(m for m in members if m in plan.tensors)
        params = _activation_params(members, stats, t, fmt, settings)
        for m in members:
            plan.tensors[m].params = params
            done.add(m)
    for name, t in plan.tensors.items():
        fmt = t.fmt()
        if t.role == "activation" or not _scaled(fmt) or t.role == "bias":
            continue
        t.params = _constant_params(numpy_helper.to_array(inits[name]), t, fmt)
    for name, t in plan.tensors.items():
        if t.role == "bias" and _scaled(t.fmt()):
            t.params = _bias_params(model, plan, t, numpy_helper.to_array(inits[name]), settings)
    for name, t in plan.duals.items():
        if _scaled(t.fmt()):
            t.params = _activation_params((name,), stats, t, t.fmt(), settings)


def _activation_params(members, stats, t: TensorPlan, fmt, settings: Settings) -> QuantParams:
    from ryzen_nb.calibration.stats import TensorStats

    merged: TensorStats | None = None
    for m in members:
        s = stats.get(m)
        if s is None or s.count == 0:
            continue
        merged = s if merged is None else _merge(merged, s)
    if merged is None:
        raise ConfigError(f"No calibration statistics for tensor {t.name!r}; was it computed for any sample?")
    method = get_method(t.settings.method)
    if method.power_of_two != t.settings.power_of_two:
        method = get_method("MinMSE" if t.settings.power_of_two else "MinMax")
    return method.params(merged, fmt, t.settings.symmetric, **settings.method_options)


def _merge(a, b):
    from ryzen_nb.calibration.stats import TensorStats

    out = TensorStats(histogram=a.histogram and b.histogram, num_bins=a.num_bins)
    out.min, out.max, out.count = min(a.min, b.min), max(a.max, b.max), a.count + b.count
    if out.histogram:
        out.hist = np.zeros(out.num_bins, np.int64)
        out.threshold = max(a.threshold, b.threshold)
        for s in (a, b):
            h, thr = s.hist, s.threshold
            while thr < out.threshold:  # widen the smaller histogram to the common range
                merged = h.reshape(-1, 2).sum(axis=1)
                q = out.num_bins // 4
                h = np.zeros_like(h)
                h[q : q + merged.size] = merged
                thr *= 2
            out.hist += h
    return out


def _constant_params(values: np.ndarray, t: TensorPlan, fmt) -> QuantParams:
    if isinstance(fmt, IntegerFormat):
        per_channel = t.role == "weight" and t.settings.per_channel and values.ndim >= 1
        if t.settings.power_of_two:
            scale, zp = pow2_scale_for_values(values, fmt, t.settings.method)
            return QuantParams(np.asarray(scale), np.asarray(zp), float(values.min(initial=0)),
                               float(values.max(initial=0)), t.settings.method)
        if per_channel:
            axis = t.axis % values.ndim
            other = tuple(i for i in range(values.ndim) if i != axis)
            lo, hi = values.min(axis=other), values.max(axis=other)
        else:
            lo, hi = values.min(initial=0), values.max(initial=0)
        scale, zp = fmt.scale_from_range(lo, hi, symmetric=t.settings.symmetric)
        return QuantParams(scale, zp, float(np.min(lo)), float(np.max(hi)), "MinMax")
    # scaled float formats (fp8 with a scale): amax onto the format's largest value
    amax = float(np.abs(values).max(initial=0)) or 1.0
    scale = np.float32(amax / fmt.element.max_normal)  # type: ignore[attr-defined]
    return QuantParams(np.asarray(scale), np.asarray(0), -amax, amax, "MinMax")


def _bias_params(model, plan: QuantPlan, t: TensorPlan, values: np.ndarray, settings: Settings) -> QuantParams | None:
    node = model.graph.node[t.bias_of] if t.bias_of is not None else None
    fmt = t.fmt()
    if settings.bias == "int32" and node is not None:
        x = plan.tensors.get(node.input[0])
        w = plan.tensors.get(node.input[1])
        if x and w and x.params is not None and w.params is not None and isinstance(w.fmt(), IntegerFormat):
            scale = (x.params.scale.astype(np.float64) * w.params.scale.astype(np.float64)).astype(np.float32)
            scale = np.maximum(scale, np.finfo(np.float32).tiny)
            t.settings = _with_format(t.settings, "int32")
            return QuantParams(scale, np.zeros(scale.shape, np.int64), float(values.min(initial=0)),
                               float(values.max(initial=0)), "input*weight")
    if isinstance(fmt, IntegerFormat):
        if t.settings.power_of_two:
            scale, zp = pow2_scale_for_values(values, fmt, t.settings.method)
            return QuantParams(np.asarray(scale), np.asarray(zp), float(values.min(initial=0)),
                               float(values.max(initial=0)), "MinMSE")
        scale, zp = fmt.scale_from_range(values.min(initial=0), values.max(initial=0), symmetric=True)
        return QuantParams(scale, zp, float(values.min(initial=0)), float(values.max(initial=0)), "MinMax")
    return None


# -- 3. emit --------------------------------------------------------------------------------------------
def emit(model: onnx.ModelProto, plan: QuantPlan, settings: Settings, metadata: dict[str, str]) -> onnx.ModelProto:
    graph = model.graph
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    inits = {t.name: t for t in g.initializer}
    graph_outputs = {o.name for o in g.output}
    qnodes = set(plan.nodes)
    consumers: dict[str, list[int]] = defaultdict(list)
    for i, node in enumerate(graph.node):
        for name in node.input:
            consumers[name].append(i)
    producers = {o: i for i, node in enumerate(graph.node) for o in node.output}

    shapes, ranks = _static_shapes(model), _ranks(model)
    b = GraphBuilder()
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
            result = f"{name}_{fmt.name}_qdq"
            if name in graph_outputs and name in producers:
                # keep the graph output's name on the quantized value
                source = f"{name}_float"
                rename_output[(producers[name], name)] = source
                graph_output_sources[name] = source
                result = name
            y = _lower(b, fmt, source, shapes.get(name), ranks.get(name, 4), _lowering_args(t, fmt), settings)
            _rename_last_output(b.nodes[start:], y, result)
            chain = b.nodes[start:]
            if name in producers:
                inserted_after[producers[name]].extend(chain)
            else:
                head.extend(chain)
            dual = plan.duals.get(name)
            if dual is not None:  # a second quantizer after the first, for the consumers in its precision
                start = len(b.nodes)
                dual_fmt = dual.fmt()
                y2 = _lower(b, dual_fmt, result, shapes.get(name), ranks.get(name, 4), _lowering_args(dual, dual_fmt), settings)
                if isinstance(fmt, IntegerFormat):  # the second quantizer reads a DequantizeLinear
                    _shield_from_dq_propagation(b, b.nodes[start:], result)
                _rename_last_output(b.nodes[start:], y2, f"{name}_{dual_fmt.name}_dual_qdq")
                (inserted_after[producers[name]] if name in producers else head).extend(b.nodes[start:])
            for c in consumers.get(name, []):
                # quantized consumers read the quantized value, the others the float one
                if dual is not None and c in dual.consumers:
                    rename_input[(c, name)] = f"{name}_{dual.fmt().name}_dual_qdq"
                elif c in qnodes:
                    rename_input[(c, name)] = result
                elif source != name:
                    rename_input[(c, name)] = source
        else:
            values = numpy_helper.to_array(inits[name])
            stored, chain_out = _store_constant(b, name, values, t, fmt, settings)
            new_inits.extend(stored)
            head.extend(b.nodes[start:])
            for c in consumers.get(name, []):
                if c in qnodes:
                    rename_input[(c, name)] = chain_out
            if all(c in qnodes for c in consumers.get(name, [])) and name not in graph_outputs:
                drop_inits.add(name)

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


def _static_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    shapes = {}
    for vi in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        t = vi.type.tensor_type
        if t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            shapes[vi.name] = tuple(int(d.dim_value) for d in t.shape.dim)
    return shapes


def _lowering_args(t: TensorPlan, fmt) -> dict[str, Any]:
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


def _store_constant(b: GraphBuilder, name: str, values: np.ndarray, t: TensorPlan, fmt, settings: Settings):
    """Initializers holding a constant in its format, and the nodes that turn it back into float."""
    if isinstance(fmt, IntegerFormat) and t.params is not None:
        kw = {"scale": t.params.scale, "zero_point": t.params.zero_point, "rounding": t.settings.rounding}
        if np.ndim(t.params.scale):
            kw["axis"] = t.axis
        q = fmt.quantize(values, **kw)
        codes = numpy_helper.from_array(q.codes, f"{name}_quantized")
        scale = numpy_helper.from_array(np.asarray(t.params.scale, np.float32), f"{name}_scale")
        zp = numpy_helper.from_array(np.asarray(t.params.zero_point).astype(fmt.storage_dtype), f"{name}_zero_point")
        attrs = {"axis": t.axis} if np.ndim(t.params.scale) else {}
        out = f"{name}_DequantizeLinear_Output"
        b.nodes.append(helper.make_node("DequantizeLinear", [codes.name, scale.name, zp.name], [out],
                                        name=f"{name}_DequantizeLinear", **attrs))
        return [codes, scale, zp], out
    if fmt.info.family == "float" and t.params is None and settings.float_weight_storage == "qdq":
        original = numpy_helper.from_array(values.astype(np.float32), f"{name}_float")
        return [original], _lower(b, fmt, original.name, values.shape, values.ndim, {"rounding": t.settings.rounding},
                                  settings)
    if fmt.info.family == "float" and t.params is None and settings.float_weight_storage == "native":
        q = fmt.quantize(values)
        codes = numpy_helper.from_array(q.codes, f"{name}_{fmt.name}")
        out = f"{name}_Cast_Output"
        b.nodes.append(helper.make_node("Cast", [codes.name], [out], name=f"{name}_Cast", to=onnx.TensorProto.FLOAT))
        return [codes], out
    kw = {"rounding": t.settings.rounding}
    if fmt.info.axis_role is not None:
        kw["axis"] = t.axis if values.ndim > 1 else 0
    if t.params is not None:
        kw["scale"] = t.params.scale
    quantized = fmt.quantize_dequantize(values, **kw).astype(np.float32)
    tensor = numpy_helper.from_array(quantized, f"{name}_{fmt.name}")
    return [tensor], tensor.name


def metadata_for(plan: QuantPlan, extra: dict[str, Any]) -> dict[str, str]:
    from ryzen_nb import __version__

    data = {
        "ryzen_nb.version": __version__,
        "ryzen_nb.formats": json.dumps(plan.formats_by_tensor(), sort_keys=True),
    }
    for key, value in extra.items():
        data[f"ryzen_nb.{key}"] = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return data
