"""Common part of the block formats: argument handling, stored form and the ONNX function.

A block format lowers to one node calling a model-local ONNX function in the ``ryzen_nb`` domain,
e.g. ``ryzen_nb:BFP16QuantizeDequantize(x, axis=1)``: one readable node per quantizer in a graph
viewer, inlined by onnxruntime at load time (no custom-op library). The function reads shapes at
run time, so one definition serves every tensor of a model.

Inside, an ``If`` picks one of two bodies that give identical results where both apply:

* the *fast* body assumes every value is finite and below 2**64 — true of real activations — and
  uses only arithmetic (exact powers of two by ``ufp``, no ``Where``: onnxruntime's ``Where`` costs
  about ten ``Mul``);
* the *exact* body handles anything (Inf, NaN, values up to the float32 maximum) with masks.

The fast body starts from the per-block (or per-sub-block) maximum of ``|x|``, computed before the
``If`` because the test reuses it: the sum over blocks of that maximum plus ``0 * sum(block)`` is
below 2**64 exactly when every value is below 2**64 and no block holds Inf or NaN. (The plain
block sum is there because onnxruntime's ``ReduceMax`` may drop a NaN; ``ReduceSum`` is ten times
cheaper in onnxruntime than ``ReduceSumSquare`` or ``ReduceL1``.) A format may add conditions of
its own (:meth:`BlockFormat._fast_path_penalty`).
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper

from ryzen_nb.errors import FormatError
from ryzen_nb.formats._blocks import BlockView, Layout, block_stats_to_tensor, to_blocks
from ryzen_nb.formats.base import NumericFormat, QuantizedTensor
from ryzen_nb.formats.rounding import Rounding
from ryzen_nb.graph.builder import RYZEN_NB_DOMAIN, GraphBuilder
from ryzen_nb.graph.checks import walk_graphs

__all__ = ["BlockFormat", "free_batch_in_calls"]


class BlockFormat(NumericFormat):
    """Base of BFP16, MX4/MX6/MX9 and the OCP MX formats."""

    block_size: int
    sub_block_size: int | None = None
    #: axes of the ``[pre, nblocks, nsub, sub, post]`` view the fast body's maximum reduces over:
    #: whole blocks, or sub-blocks for the microexponent formats (a class attribute, not a field)
    max_axes = (2, 3)

    # -- subclass hooks on the [pre, nblocks, nsub, sub, post] view ------------------------------
    @abstractmethod
    def _encode_blocks(self, xb: np.ndarray, rounding: Rounding) -> dict[str, np.ndarray]:
        """Quantize blocks: return ``values`` (float32) and the stored parts (``codes``,
        ``shared`` per block, optionally ``micro`` per sub-block)."""

    @abstractmethod
    def _decode_blocks(self, codes: np.ndarray, shared: np.ndarray, micro: np.ndarray | None) -> np.ndarray: ...

    @abstractmethod
    def _lower_blocks(self, b: GraphBuilder, view: BlockView, rounding: Rounding, amax: str | None) -> str:
        """Nodes computing the quantize-dequantized ``view.blocks``. Per-block values must pass
        through ``view.expand(b, ...)`` before meeting the full tensor. ``amax`` is given to the
        fast body only: the maximum of ``|x|`` over :attr:`max_axes` (keepdims); every value is
        finite and below 2**64 and the format's own conditions hold, so no masks are needed."""

    def _fast_path_penalty(self, b: GraphBuilder, block_max: str, rank: int) -> str | None:
        """Per-block values (from ``block_max``, the maximum of ``|x|`` per block; constants of
        ``rank``), 0 where the fast body is exact and >= 2**64 where it is not, for conditions
        beyond "finite and below 2**64" (or None)."""
        return None

    # -- numerics -------------------------------------------------------------------------------
    def _quantize_dequantize(self, x: np.ndarray, *, axis: int, rounding: Rounding) -> np.ndarray:
        if x.size == 1:
            # Quark's BFP and MX operators return a one-value tensor as it is (Layout.single): so do its
            # models' scalar constants (PP-OCRv4's 105 MobileOne scales) and one-value activations
            return np.array(x, dtype=np.float32)
        xb, restore = to_blocks(x, axis, self.block_size, self.sub_block_size)
        return restore(self._encode_blocks(xb, rounding)["values"])

    def _quantize(self, x: np.ndarray, *, axis: int, rounding: Rounding) -> QuantizedTensor:
        if not np.all(np.isfinite(x)):
            raise FormatError(
                f"x holds Inf or NaN, which the stored form of {self.name} cannot represent; "
                "quantize_dequantize() shows how the format treats them."
            )
        xb, restore = to_blocks(x, axis, self.block_size, self.sub_block_size)
        parts = self._encode_blocks(xb, rounding)
        return QuantizedTensor(
            format=self.name,
            codes=restore(parts["codes"]),
            axis=axis,
            shared_exponents=block_stats_to_tensor(parts["shared"], x.shape, axis).astype(np.uint8),
            micro_exponents=(
                block_stats_to_tensor(parts["micro"], x.shape, axis).astype(np.uint8) if "micro" in parts else None
            ),
            options=self.options(),
        )

    def _dequantize(self, q: QuantizedTensor) -> np.ndarray:
        axis = q.axis or 0
        cb, restore = to_blocks(q.codes, axis, self.block_size, self.sub_block_size)
        pre, nblocks, nsub, _, post = cb.shape
        shared = q.shared_exponents.reshape(pre, nblocks, 1, 1, post).astype(np.int32)
        micro = None
        if q.micro_exponents is not None:
            micro = q.micro_exponents.reshape(pre, nblocks, nsub, 1, post).astype(np.int32)
        return restore(self._decode_blocks(cb, shared, micro))

    # -- ONNX ---------------------------------------------------------------------------------------
    def function_name(self, rounding: Rounding, layout: Layout) -> str:
        name = f"{self.name}QuantizeDequantize"
        if rounding is not self.info.default_rounding:
            name += f"_{rounding.value}"
        for key, value in self.options().items():
            if value != type(self).__dataclass_fields__[key].default:  # type: ignore[attr-defined]
                name += f"_{value}"
        return name + layout.suffix

    def onnx_function(self, rounding: Rounding | None = None, layout: Layout | None = None) -> Any:
        """The ONNX FunctionProto implementing this format for one layout (built once, cached).

        Attributes of a call: ``axis`` (int) and, for static layouts, ``shape`` (ints).
        """
        rounding = rounding or self.info.default_rounding
        layout = layout or Layout(inner=False, static=False, padded=True)
        return _function_for(self, rounding, layout)

    def _build_function(self, rounding: Rounding, layout: Layout) -> Any:
        top = GraphBuilder()
        axis = top.op("Unsqueeze", _attribute_constant(top, "axis", "value_int"), top.const(np.array([0], np.int64)))
        shape = _attribute_constant(top, "shape", "value_ints") if layout.static else None
        fb = GraphBuilder(prefix="blocks") if layout.single else top
        y = self._blocks_body(fb, rounding, layout, axis, shape)
        if layout.single:  # a one-value tensor passes unchanged, as in Quark's operators (Layout.single)
            one = top.op("Equal", top.op("Size", "x"), top.const(np.array(1, np.int64)))
            keep = GraphBuilder(prefix="one")
            kept = keep.op("Identity", "x")
            branches = [helper.make_graph(g.nodes, label, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])
                        for g, label, out in ((keep, "one_value", kept), (fb, "blocks", y))]
            y = top.op("If", one, then_branch=branches[0], else_branch=branches[1])
        top.op("Identity", y, outputs=["y"])
        doc = f"{self.info.description}. Quantize-dequantize along attribute 'axis' (ryzen-nb, rounding {rounding.value})."
        attributes = ["axis", "shape"] if layout.static else ["axis"]
        return top.to_function(self.function_name(rounding, layout), ["x"], ["y"], attributes=attributes, doc=doc)

    def _blocks_body(self, fb: GraphBuilder, rounding: Rounding, layout: Layout, axis: str, shape: str | None) -> str:
        """The quantize-dequantized ``x`` of the function, built in ``fb`` (its body, or a branch of it)."""
        view = BlockView(fb, "x", axis, self.block_size, self.sub_block_size, layout, shape)
        # Route to the fast body when no block holds Inf/NaN and every |x| < 2**64 (module doc).
        # Reductions run per block first: a full reduction to a scalar runs on one thread.
        # Everything here is per block, and constants have the blocks' rank: onnxruntime
        # broadcasts against trailing size-1 dimensions slowly otherwise.
        block_axes = fb.const(np.array([2, 3], np.int64))
        amax = fb.op("ReduceMax", fb.op("Abs", view.blocks), fb.const(np.array(self.max_axes, np.int64)), keepdims=1)
        block_max = amax if self.max_axes == (2, 3) else fb.op("ReduceMax", amax, fb.const(np.array([2], np.int64)), keepdims=1)
        zero = fb.const(np.zeros((1,) * view.rank, np.float32))
        probe = fb.op("Add", block_max, fb.op("Mul", fb.op("ReduceSum", view.blocks, block_axes, keepdims=1), zero))
        penalty = self._fast_path_penalty(fb, block_max, view.rank)
        if penalty is not None:
            probe = fb.op("Add", probe, penalty)
        fast_ok = fb.op("Less", fb.op("ReduceSum", probe, keepdims=0), fb.const(np.float32(2.0**64)))
        branches = {}
        for label, fast in (("fast", True), ("exact", False)):
            sub = GraphBuilder(prefix=label, scalar_rank=view.rank)
            out = self._lower_blocks(sub, view, rounding, amax if fast else None)
            branches[label] = helper.make_graph(
                sub.nodes, label, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)]
            )
        y_blocks = fb.op("If", fast_ok, then_branch=branches["fast"], else_branch=branches["exact"])
        return view.restore(y_blocks)

    def _lower(self, b: GraphBuilder, x: str, *, rank: int, shape: Any, axis: int, rounding: Rounding) -> str:
        if rank == 0:
            # a scalar is one value, which the function returns as it is (Layout.single); its views need an axis
            one = b.call(self.onnx_function(rounding, Layout.choose((1,), 1, 0, self.block_size)),
                         b.op("Reshape", x, b.const(np.array([1], np.int64), hint="one")), axis=0, shape=[1])
            return b.op("Reshape", one, b.const(np.zeros(0, np.int64), hint="scalar"))
        layout = Layout.choose(shape, rank, axis, self.block_size)
        attrs: dict[str, Any] = {"axis": axis}
        if layout.static:
            attrs["shape"] = [int(d) for d in shape]
        return b.call(self.onnx_function(rounding, layout), x, **attrs)


@functools.lru_cache(maxsize=256)
def _function_for(fmt: BlockFormat, rounding: Rounding, layout: Layout) -> Any:
    # shared and never mutated: adding it to a model's functions copies the message
    return fmt._build_function(rounding, layout)


def _attribute_constant(b: GraphBuilder, attribute: str, field: str) -> str:
    """A Constant node whose value is the calling node's attribute (an ONNX attribute reference)."""
    out = b.fresh(attribute)
    node = helper.make_node("Constant", [], [out], name=out + "_node")
    kind = AttributeProto.INT if field == "value_int" else AttributeProto.INTS
    node.attribute.append(AttributeProto(name=field, ref_attr_name=attribute, type=kind))
    b.nodes.append(node)
    return out


def free_batch_in_calls(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` whose block-format calls with a static ``shape`` take any size of their first
    dimension (written -1), where they block along another axis: a quantized model whose batch the
    quantizer fixed at 1 can take its dynamic batch back. Where the batch is not the first dimension
    (an LSTM's ``[seq, batch, ...]``) the call no longer computes per sample; the quantizer's check with a
    batch of 2 then keeps the batch fixed."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for graph in walk_graphs(out.graph):
        for node in graph.node:
            if node.domain != RYZEN_NB_DOMAIN or "QuantizeDequantize" not in node.op_type:
                continue
            attrs = {a.name: a for a in node.attribute}
            if "shape" in attrs and len(attrs["shape"].ints) > 1 and attrs.get("axis") and attrs["axis"].i != 0:
                attrs["shape"].ints[0] = -1
    return out
