"""Step 1 of the quantizer: the plan — which tensors get which format, on which axis, sharing which scale.

:func:`make_plan` takes a prepared float model and the resolved :class:`Settings` and answers, in
named steps:

1. :func:`select_nodes` / :func:`_quantized_nodes` — the nodes the config asks to quantize (names,
   regular expressions, op types, sub-graphs) that ryzen-nb knows how to quantize;
2. :func:`_folded_tensors` — a Conv/Gemm/MatMul/Add output read only by a fusible activation
   stays float when ``fold_activations`` (the NPU applies the activation inside the operator);
3. :func:`_plan_tensors` — every float input and output of those nodes: activations in the
   activation format (none with ``weights_only``), weights, biases and other constants in theirs
   (mixed-precision overrides per tensor), with the axis of per-channel scales or blocks;
4. :func:`_check_named_tensors` — a mixed-precision tensor name the plan cannot apply is an error;
5. :func:`_defer_past_value_selection` — a fixed-grid float format (bf16, fp16, fp8) is applied
   after Relu, MaxPool and data movement rather than before: the same numbers, fewer quantizers;
6. :func:`_dual_quantizers` — second quantizers on mixed-precision boundaries (DualQuantNodes);
7. :func:`sharing_groups` — activations that must share one integer scale.

Parameters (:mod:`ryzen_nb.quantization.parameters`) and the emitted graph
(:mod:`ryzen_nb.quantization.emit`) follow from the plan.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import onnx

from ryzen_nb import formats
from ryzen_nb.calibration.methods import QuantParams
from ryzen_nb.errors import ConfigError, closest_first
from ryzen_nb.formats import ScaleKind
from ryzen_nb.formats.integer import IntegerFormat
from ryzen_nb.graph.checks import walk_graphs
from ryzen_nb.graph.index import ModelIndex
from ryzen_nb.quantization.ops import FUSIBLE_ACTIVATIONS, OPS, OpInfo, op_info, weight_block_axis, weight_channel_axis
from ryzen_nb.quantization.settings import Settings, TensorSettings
from ryzen_nb.spec.operators import MAC_OPS

__all__ = ["TensorPlan", "QuantPlan", "make_plan", "scaled", "select_nodes", "sharing_groups", "with_format"]

_FLOAT = onnx.TensorProto.FLOAT


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
        return self.role == "activation" and scaled(self.fmt())


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
    #: constants the quantized model holds with another value than the float one: a divisor's epsilon
    #: raised so that it survives rounding (parameters.guard_divisors)
    constant_values: dict[str, np.ndarray] = field(default_factory=dict)

    def formats_by_tensor(self) -> dict[str, str]:
        out = {name: t.format for name, t in self.tensors.items()}
        out.update({f"{name} (dual)": t.format for name, t in self.duals.items()})
        return out

    def calibrated(self) -> list[TensorPlan]:
        """Every quantizer whose parameters come from calibration (dual quantizers included)."""
        return [t for t in list(self.tensors.values()) + list(self.duals.values()) if t.needs_calibration]


def scaled(fmt: formats.NumericFormat) -> bool:
    """Whether ``fmt`` takes a per-tensor (or per-channel) scale: integers and scaled floats."""
    return fmt.info.scale_kind is ScaleKind.TENSOR


# -- make_plan and its steps ------------------------------------------------------------------------------
def make_plan(model: onnx.ModelProto, settings: Settings, folded_nodes: Mapping[str, str] | None = None) -> QuantPlan:
    """The plan for a prepared float ``model`` (the steps are listed in the module docstring).
    ``folded_nodes`` names the source nodes preparation removed (and what became of them): node
    lists may name them, as users copy names from the model they have."""
    index = ModelIndex(model, infer=False)  # a prepared model carries its inferred shapes and types
    selection_notes: list[str] = []
    quantized = _quantized_nodes(index, settings, folded_nodes or {}, selection_notes)
    quantized = _without_unquantized_data_inputs(index, quantized, settings, selection_notes)
    folded = _folded_tensors(index, quantized, settings)
    tensors = _plan_tensors(index, quantized, folded, settings)
    _check_named_tensors(index, tensors, folded, settings)
    outputs = {n for node in index.nodes for n in node.output}
    plan = QuantPlan(tensors, quantized, folded=sorted(folded & outputs), notes=selection_notes)
    plan.deferred = _defer_past_value_selection(index, plan, settings)
    plan.duals = _dual_quantizers(index, tensors, settings)
    if plan.deferred:
        plan.notes.append(f"{len(plan.deferred)} float-format quantizer(s) applied after Relu/MaxPool/data movement "
                          "instead of before: the same numbers with fewer operators")
    plan.groups = sharing_groups(index, plan, settings)
    inside = sum(len(g.node) for g in walk_graphs(model.graph)) - len(model.graph.node)
    if inside:
        plan.notes.append(f"{inside} node(s) inside If/Loop/Scan bodies stay float: ryzen-nb quantizes the main "
                          "graph, and the bodies pass through intact")
    return plan


def _is_float(index: ModelIndex, name: str) -> bool:
    return index.element_types.get(name) == _FLOAT


def _rank(index: ModelIndex, name: str, unknown: int) -> int:
    shape = index.shapes.get(name)
    return unknown if shape is None else len(shape)


def _quantized_nodes(index: ModelIndex, settings: Settings, folded_nodes: Mapping[str, str],
                     notes: list[str]) -> list[int]:
    """Positions of the selected nodes that ryzen-nb can quantize and that touch a float tensor."""
    selected = select_nodes(index.graph, settings, folded_nodes, notes)
    return [i for i, node in enumerate(index.nodes)
            if i in selected and op_info(node) is not None
            and any(_is_float(index, n) for n in list(node.input) + list(node.output) if n)]


#: operators that Quark (and onnxruntime) quantize only when the tensor they move is already quantized,
#: unless ForceQuantizeNoInputCheck: onnxruntime's QDQDirect8BitOp (Reshape, Transpose, Squeeze, Unsqueeze,
#: and Resize and MaxPool through it), QDQGather (a Gather from a constant table always) and Quark's
#: QDQLayerNorm (amd-quark 0.13, quark/onnx/quantizers/registry.py). The presets that leave the flag off
#: are the block and MX ones: an LSTM's state or a graph input moved by a Squeeze stays float there.
INPUT_GATED_OPS = frozenset({"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Resize", "MaxPool", "Gather",
                             "LayerNormalization"})


def _without_unquantized_data_inputs(index: ModelIndex, quantized: list[int], settings: Settings,
                                     notes: list[str]) -> list[int]:
    """``quantized`` without the :data:`INPUT_GATED_OPS` nodes whose data input no node before them has
    quantized, as Quark decides it: node by node in graph order, a tensor counting as quantized once an
    earlier quantized node reads or writes it. Weights only quantizes no activation: its rule for
    LayerNormalization is :func:`_gated_constant`."""
    if settings.force_no_input_check or settings.weights_only:
        return quantized
    registered: set[str] = set()
    kept, left = [], []
    for i in quantized:
        node = index.nodes[i]
        data = node.input[0] if node.input else ""
        constant_table = node.op_type == "Gather" and data in index.initializer_names
        if node.op_type in INPUT_GATED_OPS and not constant_table and data not in registered:
            left.append(node.name or node.output[0])
            continue
        kept.append(i)
        registered.update(n for n in list(node.input) + list(node.output) if n)
    if left:
        notes.append(f"{len(left)} data-movement or normalization node(s) left float, as Quark leaves them without "
                     f"ForceQuantizeNoInputCheck: what they read is not quantized ({', '.join(left[:5])}"
                     f"{', ...' if len(left) > 5 else ''})")
    return kept


def _folded_tensors(index: ModelIndex, quantized: list[int], settings: Settings) -> set[str]:
    """Tensors left float: those the config's rewrites fold, and — with ``fold_activations`` — the
    output of a MAC or an Add read only by a quantized fusible activation (the NPU fuses the two).

    A residual Add -> Relu too: Quark writes it with one quantizer, after the Relu (amd-quark 0.13,
    ``annotate_op_type`` in quark/onnx/quantization/quant_utils.py lists Add beside Conv and MatMul),
    and so the models of AMD's published EP logs count (tests/unit/test_npu_ep_logs.py, QUARK_QDQ);
    the partitioner fuses the Relu into the Add (spec.operators.FUSING_PRODUCERS). Quark's list also
    holds the pools, which ryzen-nb does not fold (a pool -> Relu is rare after preparation)."""
    folded: set[str] = set(settings.fold_tensors)
    if not settings.fold_activations:
        return folded
    qset = set(quantized)
    for i in quantized:
        node = index.nodes[i]
        if node.op_type not in MAC_OPS | {"Add"}:
            continue
        out = node.output[0]
        users = index.consumer_indices.get(out, [])
        if len(users) == 1 and users[0] in qset and index.nodes[users[0]].op_type in FUSIBLE_ACTIVATIONS:
            # a tensor named in MixedPrecisionTensor keeps the quantizer it was given a format for
            if out not in index.graph_outputs and out not in settings.tensor_formats:
                folded.add(out)
    return folded


def _plan_tensors(index: ModelIndex, quantized: list[int], folded: set[str],
                  settings: Settings) -> dict[str, TensorPlan]:
    """A :class:`TensorPlan` for every float input and output of the quantized nodes."""
    tensors: dict[str, TensorPlan] = {}

    # AlignEltwiseQuantType: an element-wise operator's constant takes the activations' format
    eltwise_constant = replace(settings.weight, format=settings.activation.format)

    def add(name: str, role: str, node_index: int, axis: int = 1, bias_of: int | None = None,
            ts: TensorSettings | None = None) -> None:
        if name in folded:
            return
        plan = tensors.get(name)
        if plan is None:
            if ts is None:
                ts = settings.weight if role in ("weight", "bias", "constant") else settings.activation
            if name in settings.tensor_formats:
                ts = with_format(ts, settings.tensor_formats[name])
            plan = tensors[name] = TensorPlan(name, role, ts, axis=axis, bias_of=bias_of)
        if node_index >= 0 and node_index not in plan.consumers:
            plan.consumers.append(node_index)

    for i in quantized:
        node = index.nodes[i]
        info = op_info(node)
        assert info is not None  # _quantized_nodes keeps known op types only
        for k, name in enumerate(node.input):
            if not name or not _is_float(index, name) or k in info.config_inputs:
                continue
            if name in index.initializer_names:
                if name not in settings.keep_float and not _gated_constant(node, settings):
                    role, axis = _constant_role(node, info, k, _rank(index, name, 0), settings)
                    if role == "bias" and settings.bias == "float":  # QuantizeBias=False, or WeightsOnly's int32
                        continue
                    aligned = role == "constant" and info.kind == "eltwise" and settings.align_eltwise_types
                    add(name, role, i, axis, bias_of=i if role == "bias" else None,
                        ts=eltwise_constant if aligned else None)
            elif not settings.weights_only:
                add(name, "activation", i, _activation_block_axis(info.reduction, _rank(index, name, 4)))
        for name in node.output:
            if name and _is_float(index, name) and not settings.weights_only:
                add(name, "activation", -1, _activation_block_axis(None, _rank(index, name, 4)))
    for t in tensors.values():
        _settle_axis(index, t)
    return tensors


#: operators whose constants Quark quantizes only when their input is quantized, or with
#: ForceQuantizeNoInputCheck (amd-quark 0.13, quark/onnx/operators/quant_ops/layernorm.py): it
#: shows with WeightsOnly, where no input is (ryzen-nb otherwise quantizes a node whatever its input)
INPUT_GATED_CONSTANTS = frozenset({"LayerNormalization"})


def _gated_constant(node: onnx.NodeProto, settings: Settings) -> bool:
    return settings.weights_only and not settings.force_no_input_check and node.op_type in INPUT_GATED_CONSTANTS


def _constant_role(node: onnx.NodeProto, info: OpInfo, k: int, rank: int, settings: Settings) -> tuple[str, int]:
    """(role, axis) of the constant at input ``k`` of a quantized node."""
    if k in info.weight_inputs:
        if settings.weight.per_channel and node.op_type in MAC_OPS:
            return "weight", weight_channel_axis(node, rank)
        return "weight", weight_block_axis(node, rank)
    if k == info.bias_input:
        return "bias", 0
    return "constant", _activation_block_axis(None, rank)


def _settle_axis(index: ModelIndex, t: TensorPlan) -> None:
    """A weight feeding a per-channel integer or float format takes its consumer's channel axis, a
    block format the reduction axis (or the one the config forces); so does a forced activation axis."""
    if t.role == "weight" and t.consumers:
        node = index.nodes[t.consumers[0]]
        rank = _rank(index, t.name, 0)
        fmt = t.fmt()
        if isinstance(fmt, IntegerFormat) or fmt.info.family == "float":
            if t.settings.per_channel and node.op_type in MAC_OPS:
                t.axis = weight_channel_axis(node, rank)
        else:
            t.axis = t.settings.block_axis if t.settings.block_axis is not None else weight_block_axis(node, rank)
    elif t.role == "activation" and t.settings.block_axis is not None:
        t.axis = t.settings.block_axis


def _check_named_tensors(index: ModelIndex, tensors: dict[str, TensorPlan], folded: set[str],
                         settings: Settings) -> None:
    """A tensor named in MixedPrecisionTensor that the plan does not hold is an error that says why."""
    unknown = sorted(set(settings.tensor_formats) - set(tensors) - folded)
    if not unknown:
        return
    all_names = {n for node in index.nodes for n in list(node.input) + list(node.output) if n}
    quantizable = sorted(tensors)
    details = []
    for u in unknown:
        if u in all_names and settings.weights_only and u not in index.initializer_names:
            details.append(f"{u!r} is an activation, and WeightsOnly leaves every activation float")
        elif u in all_names:
            details.append(f"{u!r} exists but is not an input or output of a quantized node")
        else:
            details.append(f"{u!r} is not in the model (closest: {', '.join(closest_first(u, quantizable)[:3])})")
    raise ConfigError("MixedPrecisionTensor names tensors it cannot apply to: " + "; ".join(details) + ".")


def _dual_quantizers(index: ModelIndex, tensors: dict[str, TensorPlan], settings: Settings) -> dict[str, TensorPlan]:
    """Second quantizers (DualQuantNodes): tensor -> its plan in the other format, for the readers named."""
    by_name = {node.name: i for i, node in enumerate(index.nodes)}
    duals: dict[str, TensorPlan] = {}
    for name, (fmt_name, readers) in settings.dual_formats.items():
        base = tensors.get(name)
        if base is None or base.role != "activation" or fmt_name == base.format:
            continue
        unknown = [r for r in readers if r not in by_name]
        if unknown:
            raise ConfigError(f"DualQuantNodes names node(s) {unknown} that are not in the model.")
        duals[name] = TensorPlan(name, "activation", with_format(base.settings, fmt_name), axis=base.axis,
                                 consumers=[by_name[r] for r in readers])
    return duals


#: operators whose outputs are some of their input's values, moved or selected by comparison
VALUE_SELECTING = frozenset({"Relu", "MaxPool", "GlobalMaxPool"} | {
    op for op, info in OPS.items() if info.kind == "data" and op not in ("Resize", "Pad")  # may make new values
})


def _defer_past_value_selection(index: ModelIndex, plan: QuantPlan, settings: Settings) -> list[str]:
    """Drop the quantizer of activations whose every consumer only selects or moves their values.

    A format without scales (bf16, fp16, fp8) rounds each value to a fixed grid, monotonically, so
    rounding commutes with Relu, MaxPool, Reshape, Transpose, Slice...: quantizing such an
    operator's output gives exactly what quantizing its input did. Keeping only the quantizer
    after it saves an operator pass per tensor and leaves Conv+Relu fusable for onnxruntime.
    Block and integer formats are left alone (their grids depend on neighbours or on scales).
    Returns the names dropped from ``plan.tensors``.
    """
    tensors = plan.tensors
    graph_outputs = index.graph_outputs
    nodes = index.nodes
    producer = {name: i for i, node in enumerate(nodes) for name in node.output}
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
        users = index.consumer_indices.get(name, [])
        selecting = [
            i in qnodes and nodes[i].op_type in VALUE_SELECTING
            and [n for n in nodes[i].input if n and _is_float(index, n)] == [name]
            and all(covered.get(o) == t.settings for o in nodes[i].output if o)
            for i in users
        ]
        if users and all(selecting):
            del tensors[name]
            dropped.append(name)
    return dropped


def _matching(patterns: list[str], names: list[str], what: str, folded_nodes: Mapping[str, str] | None = None,
              notes: list[str] | None = None) -> set[str]:
    """Node names matching each pattern exactly or as a regular expression (Quark accepts both);
    a pattern matching nothing is an error listing the closest names — unless it names nodes that
    preparation folded away, which is said in ``notes``."""
    found: set[str] = set()
    missing: list[str] = []
    name_set = set(names)
    folded_nodes = folded_nodes or {}
    for pattern in patterns:
        if pattern in name_set:
            found.add(pattern)
            continue
        if pattern in folded_nodes:
            if notes is not None:
                notes.append(f"{what}: node {pattern!r} is not in the prepared model: preparation "
                             f"{folded_nodes[pattern]}")
            continue
        try:
            regex = re.compile(pattern)
            hits = {n for n in names if regex.fullmatch(n)}
        except re.error:
            hits = set()
        folded_hits = {n for n in folded_nodes if regex_ok(pattern, n)} if not hits else set()
        if hits:
            found |= hits
        elif folded_hits:
            if notes is not None:
                notes.append(f"{what}: {pattern!r} matches only node(s) preparation folded away "
                             f"({', '.join(sorted(folded_hits)[:3])}: {folded_nodes[min(folded_hits)]})")
        else:
            missing.append(pattern)
    if missing:
        details = "; ".join(f"{m!r} (closest: {', '.join(closest_first(m, names)[:3])})" for m in missing)
        raise ConfigError(f"{what} names nodes not in the model: {details}. Node names are the `name` fields shown by "
                          "Netron or model.graph.node; regular expressions such as '^/layer1/.*' are accepted.")
    return found


def regex_ok(pattern: str, name: str) -> bool:
    """Whether ``name`` matches ``pattern`` as a regular expression (an invalid one matches nothing)."""
    try:
        return re.fullmatch(pattern, name) is not None
    except re.error:
        return False


def select_nodes(graph: onnx.GraphProto, settings: Settings, folded_nodes: Mapping[str, str] | None = None,
                 notes: list[str] | None = None) -> set[int]:
    """Indices of the nodes the config asks to quantize (before checking that ryzen-nb can);
    ``folded_nodes`` and ``notes`` as in :func:`_matching`."""
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
    chosen -= {index[n] for n in _matching(settings.exclude_nodes, names, "nodes_to_exclude", folded_nodes, notes)}
    for starts, ends in settings.exclude_subgraphs:
        down = reach({index[n] for n in _matching(starts, names, "subgraphs_to_exclude")}, succ)
        up = reach({index[n] for n in _matching(ends, names, "subgraphs_to_exclude")}, pred)
        chosen -= down & up
    used = {n.op_type for n in graph.node}
    _known_op_types(settings.exclude_op_types, used, "op_types_to_exclude")
    _known_op_types(settings.op_types or (), used, "op_types_to_quantize")
    chosen -= {i for i, n in enumerate(graph.node) if n.op_type in settings.exclude_op_types}
    if settings.op_types is not None:
        chosen &= {i for i, n in enumerate(graph.node) if n.op_type in settings.op_types}
    return chosen


def _known_op_types(op_types, used: set[str], option: str) -> None:
    """An op type that no ONNX opset defines and the model does not use is a typo ("conv", "Conv2D"):
    listing it would silently select nothing. A standard one the model lacks is fine: such lists are
    often shared between models."""
    for op_type in sorted(op_types):
        if not onnx.defs.has(op_type) and op_type not in used:
            near = closest_first(op_type, sorted({schema.name for schema in onnx.defs.get_all_schemas()} | used))[:3]
            raise ConfigError(f"{option} names {op_type!r}, which is no ONNX operator type and not in the model; "
                              f"did you mean {near[0]!r}? (closest: {', '.join(near)})")


def with_format(ts: TensorSettings, name: str) -> TensorSettings:
    """``ts`` with another format (its options dropped, power-of-two kept only for integers)."""
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


def sharing_groups(index: ModelIndex, plan: QuantPlan, settings: Settings) -> list[list[str]]:
    """Activations that must share one integer scale (union-find over the tensor names)."""
    parent: dict[str, str] = {}

    def find(a: str) -> str:
        while parent.setdefault(a, a) != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def union(a: str, b: str) -> None:
        parent[find(a)] = find(b)

    tensors = plan.tensors
    for i in plan.nodes:
        node = index.nodes[i]
        info = op_info(node)
        acts = [n for n in node.input if n in tensors and tensors[n].role == "activation"]
        outs = [n for n in node.output if n in tensors]
        if not acts or not outs:
            continue
        same_format = lambda names: len({tensors[n].format for n in names}) == 1  # noqa: E731
        # Quark has no rule for Flatten: its NPU registries quantize it as a plain operator, so its output
        # (a Gemm's input after GlobalAveragePool) gets a scale of its own, from calibration
        aligned = {"Slice": settings.align_slice, "Pad": settings.align_pad, "MaxPool": settings.align_pool,
                   "GlobalMaxPool": settings.align_pool, "Flatten": False}.get(node.op_type, settings.share_data_movement)
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


