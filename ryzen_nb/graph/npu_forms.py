"""Quark's rewrites into the forms the Ryzen AI NPU runs, applied before quantization.

Before it quantizes, AMD Quark rewrites four patterns in every flow its Ryzen AI presets use (the NPU
CNN flow of XINT8, the extended QDQ flow of A8W8, A16W8, BF16, BFP16 and the MX types), each under an
``extra_options`` key that defaults to on there (``quark/onnx/quantization/quantize.py`` and
``optimizations/optimize.py`` in amd-quark 0.13; docs/quark.md#npu-forms):

* ``ConvertReduceMeanToGlobalAvgPool`` — a ReduceMean over axes exactly [2, 3], keeping them,
  becomes a GlobalAveragePool (the NPU's pooling kernel; ReduceMean has no A16W8 kernel).
* ``SplitLargeKernelPool`` — a GlobalAveragePool over more than 512 values first averages tiles of
  ``kh1 x kw1`` (an AveragePool with stride = kernel, kh1 and kw1 the largest factors of the height
  and width up to their square roots), then pools what is left: two kernels of at most 512 values.
* ``ConvertSplitToSlice`` — a Split with explicit sizes becomes one Slice per output. Ryzen AI's
  supported-operator table has no XINT8 or A8W8 kernel for Split, and Slice in every column.
* ``ConvertBNToConv`` — a BatchNormalization that folding left alone (no Conv before it) on a 4-D
  tensor becomes a depthwise 1x1 Conv, a kernel the NPU has in every precision.

In float each rewrite computes the same function; quantized, the new form is what gets quantized
(a Slice's output takes a scale of its own where AlignSlice is off, the pooled tiles of a split pool
are quantized between the two pools, a BatchNormalization's factors become a Conv's weights). Every
rewrite keeps the node's name and outputs, so exclusions, mixed precision and reports still find it.
Quark stops converting Splits at the first one without sizes; here the others are still converted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ryzen_nb.graph.attributes import attribute
from ryzen_nb.graph.builder import GraphBuilder
from ryzen_nb.graph.checks import all_names, outer_scope_reads

__all__ = ["NPU_FORMS", "LARGE_POOL", "apply_npu_forms"]

#: a GlobalAveragePool over more values than this is split in two (Quark's limit)
LARGE_POOL = 512


def _standard(node: onnx.NodeProto) -> bool:
    return node.domain in ("", "ai.onnx")


def _shapes(m: onnx.ModelProto) -> dict[str, list[int | None]]:
    """Declared shapes of the main graph's tensors (a dimension without a fixed size is None)."""
    out: dict[str, list[int | None]] = {}
    for vi in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            out[vi.name] = [int(d.dim_value) if d.HasField("dim_value") else None for d in t.shape.dim]
    return out


@dataclass
class _Graph:
    """What the rewrites read about the model: its constants, declared shapes and names in use."""

    model: onnx.ModelProto
    inits: dict[str, onnx.TensorProto]
    shapes: dict[str, list[int | None]]
    names: GraphBuilder  #: its unique() hands out names the model does not use yet

    def constant(self, name: str) -> np.ndarray | None:
        return numpy_helper.to_array(self.inits[name]) if name in self.inits else None

    def fresh(self, name: str) -> str:
        """``name``, or ``name_2``, ``name_3``... if the model uses it already; reserved from now on."""
        return self.names.unique(name)

    def add_constant(self, value: np.ndarray, name: str) -> str:
        """A new initializer holding ``value``, named after ``name`` (:meth:`fresh`)."""
        fresh = self.fresh(name)
        self.model.graph.initializer.append(numpy_helper.from_array(value, fresh))
        return fresh


def _split_to_slices(g: _Graph, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    if len(node.input) > 1 and node.input[1]:
        sizes = g.constant(node.input[1])
        if sizes is None:
            return None  # sizes computed at run time
        sizes = [int(s) for s in np.ravel(sizes)]
    else:
        sizes = [int(s) for s in attribute(node, "split", []) or []]
        if not sizes:
            return None  # equal parts (Quark converts only explicit sizes)
    if len(sizes) != len(node.output):
        return None
    axis = int(attribute(node, "axis", 0))
    slices = []
    start = 0
    for k, (size, out) in enumerate(zip(sizes, node.output)):
        if out:  # an output no one asked for needs no Slice
            consts = [g.add_constant(np.array([value], np.int64), f"{out}_{what}")
                      for what, value in (("starts", start), ("ends", start + size), ("axes", axis), ("steps", 1))]
            slices.append(helper.make_node("Slice", [node.input[0], *consts], [out],
                                           name=node.name if k == 0 else g.fresh(f"{node.name}_slice{k}")))
        start += size
    return slices


def _reduce_mean_to_pool(g: _Graph, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    if int(attribute(node, "keepdims", 1)) != 1 or len(g.shapes.get(node.input[0], [])) != 4:
        return None
    if len(node.input) > 1 and node.input[1]:
        axes = g.constant(node.input[1])
        axes = None if axes is None else [int(a) for a in np.ravel(axes)]
    else:
        axes = attribute(node, "axes", None)
        axes = None if axes is None else [int(a) for a in axes]
    if axes != [2, 3]:
        return None
    return [helper.make_node("GlobalAveragePool", [node.input[0]], list(node.output), name=node.name)]


def _largest_factors(n: int) -> tuple[int, int]:
    """(f, n // f) with f the largest factor of ``n`` up to its square root (1 when ``n`` is prime)."""
    f = math.isqrt(n)
    while f > 1 and n % f:
        f -= 1
    return max(f, 1), n // max(f, 1)


def _split_large_pool(g: _Graph, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    shape = g.shapes.get(node.input[0], [])
    if len(shape) != 4 or shape[2] is None or shape[3] is None or shape[2] * shape[3] <= LARGE_POOL:
        return None
    (kh1, kh2), (kw1, kw2) = _largest_factors(shape[2]), _largest_factors(shape[3])
    if kh1 * kw1 > LARGE_POOL or kh2 * kw2 > LARGE_POOL:
        return None  # still too large after one split (as Quark, one split only)
    tiles = g.fresh(f"{node.input[0]}_pooled_{kh1}x{kw1}")
    pool = helper.make_node("AveragePool", [node.input[0]], [tiles], name=g.fresh(f"{node.name or node.output[0]}_tiles"),
                            kernel_shape=[kh1, kw1], strides=[kh1, kw1])
    elem = next((vi.type.tensor_type.elem_type for vi in list(g.model.graph.value_info) + list(g.model.graph.input)
                 if vi.name == node.input[0]), onnx.TensorProto.FLOAT)
    g.model.graph.value_info.append(helper.make_tensor_value_info(tiles, elem, [shape[0], shape[1], kh2, kw2]))
    rest = onnx.NodeProto()
    rest.CopyFrom(node)
    rest.input[0] = tiles
    return [pool, rest]


def _batch_norm_to_conv(g: _Graph, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    if len(node.input) != 5 or len(node.output) != 1 or len(g.shapes.get(node.input[0], [])) != 4:
        return None
    if int(attribute(node, "training_mode", 0)):
        return None  # normalizes with the batch's own statistics: no constant factor
    params = [g.constant(name) for name in node.input[1:]]
    if any(p is None for p in params):
        return None
    gamma, beta, mean, var = (p.astype(np.float64) for p in params)  # type: ignore[union-attr]
    channels = mean.size
    if g.shapes[node.input[0]][1] not in (None, channels):
        return None
    eps = float(attribute(node, "epsilon", 1e-5))
    factor = gamma / np.sqrt(var + eps)
    out = node.output[0]
    weight = g.add_constant(factor.reshape(channels, 1, 1, 1).astype(np.float32), f"{out}_weight")
    bias = g.add_constant((beta - mean * factor).astype(np.float32), f"{out}_bias")
    return [helper.make_node("Conv", [node.input[0], weight, bias], [out], name=node.name,
                             group=channels, kernel_shape=[1, 1], strides=[1, 1])]


Rewrite = Callable[[_Graph, onnx.NodeProto], "list[onnx.NodeProto] | None"]

#: Quark's option name -> (the op type it rewrites, the rewrite, what the note says it became), in
#: Quark's order (optimizations/interface.py): a ReduceMean's new pool may then be split as well
NPU_FORMS: dict[str, tuple[str, Rewrite, str]] = {
    "ConvertReduceMeanToGlobalAvgPool": ("ReduceMean", _reduce_mean_to_pool, "ReduceMean over [2, 3] -> GlobalAveragePool"),
    "SplitLargeKernelPool": ("GlobalAveragePool", _split_large_pool,
                             f"GlobalAveragePool over more than {LARGE_POOL} values -> AveragePool + GlobalAveragePool"),
    "ConvertSplitToSlice": ("Split", _split_to_slices, "Split -> Slices"),
    "ConvertBNToConv": ("BatchNormalization", _batch_norm_to_conv, "BatchNormalization -> depthwise 1x1 Conv"),
}


def apply_npu_forms(m: onnx.ModelProto, forms: Collection[str], may_rewrite: Callable[[onnx.NodeProto], bool]) -> list[str]:
    """Apply the rewrites named in ``forms`` (keys of :data:`NPU_FORMS`) to the main graph of ``m``, in
    place, to each node ``may_rewrite`` accepts (the nodes the config quantizes, as Quark's
    ``should_quantize_node``). Returns one note per kind of rewrite done."""
    notes: list[str] = []
    names = GraphBuilder(reserved=all_names(m))
    for option, (op_type, rewrite, label) in NPU_FORMS.items():
        if option not in forms:
            continue
        g = _Graph(m, {t.name: t for t in m.graph.initializer}, _shapes(m), names)
        done: list[str] = []
        nodes: list[onnx.NodeProto] = []
        replaced_inputs: set[str] = set()
        for node in m.graph.node:
            new = rewrite(g, node) if node.op_type == op_type and _standard(node) and may_rewrite(node) \
                else None
            if new is None:
                nodes.append(node)
            else:
                nodes.extend(new)
                done.append(node.name or node.output[0])
                replaced_inputs.update(node.input)
        if done:
            del m.graph.node[:]
            m.graph.node.extend(nodes)
            # the rewritten nodes' constants (a BatchNormalization's statistics...) go when nothing reads them
            read = {i for n in m.graph.node for i in n.input} | outer_scope_reads(m.graph) | \
                {o.name for o in m.graph.output}
            kept = [t for t in m.graph.initializer if t.name in read or t.name not in replaced_inputs]
            del m.graph.initializer[:]
            m.graph.initializer.extend(kept)
            shown = ", ".join(done[:3]) + (", ..." if len(done) > 3 else "")
            notes.append(f"{label} ({option}, as Quark): {len(done)} node(s), {shown}")
    return notes
