"""One model, loaded and indexed once: :class:`ModelIndex`.

Every stage after loading asks the same questions of a graph — who produces this tensor, who reads
it, is it a constant and what is its value, what are its shape and element type — and used to
rebuild the answers itself (the NPU path alone indexed a model four times per call). A
``ModelIndex`` answers them from one pass each, computed on first use and kept::

    index = ModelIndex.of("model_xint8.onnx")     # a path, bytes, a ModelProto or an index
    index.producer["conv1_out"].op_type            # the node writing a tensor
    [n.name for n in index.consumers["x"]]         # the nodes reading it
    index.constants["conv1.weight"]                # initializers and Constant outputs, as numpy
    index.shapes["conv1_out"], index.element_types["conv1_out"]

The index describes the model as it was when the index was made: a pass that rewrites the graph
makes a new index of its result (``ModelIndex(new_model)``) instead of patching this one.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from ryzen_nb.graph.io import ModelLike, load_model, tensor_bytes

__all__ = ["ModelIndex", "Shape"]

#: a tensor's dimensions: ints where known, None where dynamic or unknown
Shape = list[int | None]


class ModelIndex:
    """Lookups over one ``onnx.ModelProto`` (never modified here; see the module docstring)."""

    def __init__(self, model: onnx.ModelProto, *, infer: bool = True) -> None:
        self.model = model
        self.graph = model.graph
        #: False: shapes and types are what the model declares (a prepared model already carries
        #: inferred ones; running inference again would only cost time)
        self.infer = infer

    @classmethod
    def of(cls, model: ModelLike | ModelIndex, what: str = "model") -> ModelIndex:
        """An index of ``model``: an index is returned as it is; anything else is loaded once
        (a private copy, :func:`~ryzen_nb.graph.io.load_model`)."""
        if isinstance(model, ModelIndex):
            return model
        return cls(load_model(model, what))

    # -- nodes and edges ---------------------------------------------------------------------------
    @cached_property
    def nodes(self) -> list[onnx.NodeProto]:
        return list(self.graph.node)

    @cached_property
    def position(self) -> dict[int, int]:
        """``id(node)`` -> its position in the graph (nodes are protobuf messages: not hashable)."""
        return {id(n): i for i, n in enumerate(self.nodes)}

    def index_of(self, node: onnx.NodeProto) -> int:
        return self.position[id(node)]

    @cached_property
    def producer(self) -> dict[str, onnx.NodeProto]:
        """tensor -> the node that writes it (graph inputs and initializers have none)."""
        return {o: n for n in self.nodes for o in n.output if o}

    @cached_property
    def consumers(self) -> dict[str, list[onnx.NodeProto]]:
        """tensor -> the nodes that read it, in graph order (each node once per input slot)."""
        out: dict[str, list[onnx.NodeProto]] = {}
        for n in self.nodes:
            for name in n.input:
                if name:
                    out.setdefault(name, []).append(n)
        return out

    @cached_property
    def consumer_indices(self) -> dict[str, list[int]]:
        """tensor -> graph positions of the nodes that read it (as :attr:`consumers`)."""
        return {name: [self.position[id(n)] for n in nodes] for name, nodes in self.consumers.items()}

    @cached_property
    def by_name(self) -> dict[str, onnx.NodeProto]:
        """node name -> node (unnamed nodes are left out)."""
        return {n.name: n for n in self.nodes if n.name}

    @cached_property
    def graph_inputs(self) -> list[str]:
        """Names of the inputs a caller feeds (initializers listed as inputs are left out)."""
        inits = self.initializer_names
        return [vi.name for vi in self.graph.input if vi.name not in inits]

    @cached_property
    def graph_outputs(self) -> set[str]:
        return {o.name for o in self.graph.output}

    # -- constants ----------------------------------------------------------------------------------
    @cached_property
    def initializer_names(self) -> set[str]:
        return {t.name for t in self.graph.initializer}

    @cached_property
    def constants(self) -> dict[str, np.ndarray]:
        """Initializers and the outputs of ``Constant`` nodes holding a tensor, as numpy arrays."""
        values = {t.name: numpy_helper.to_array(t) for t in self.graph.initializer}
        for node in self.nodes:
            if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
                values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
        return values

    def is_constant(self, name: str) -> bool:
        return name in self.constants

    # -- shapes and types ---------------------------------------------------------------------------
    @cached_property
    def inferred(self) -> onnx.ModelProto:
        """The model's graph with inferred ``value_info`` (onnx's shape inference, non-strict) — the
        declarations only: large initializers are left out (read :attr:`model` for weights). The model
        itself where inference fails or the index was made with ``infer=False``."""
        if not self.infer:
            return self.model
        try:
            return _infer_without_weights(self.model)
        except Exception:  # noqa: BLE001 - custom domains, models onnx cannot fully type: use what is declared
            return self.model

    def _value_infos(self) -> list[onnx.ValueInfoProto]:
        g = self.inferred.graph
        return list(g.input) + list(g.value_info) + list(g.output)

    @cached_property
    def shapes(self) -> dict[str, Shape]:
        """tensor -> dimensions (None where dynamic), for every tensor with a known rank."""
        out: dict[str, Shape] = {}
        for vi in self._value_infos():
            t = vi.type.tensor_type
            if vi.type.HasField("tensor_type") and t.HasField("shape"):
                out[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        for init in self.graph.initializer:
            out[init.name] = list(init.dims)
        for name, value in self.constants.items():
            out.setdefault(name, list(np.shape(value)))
        return out

    @cached_property
    def static_shapes(self) -> dict[str, list[int]]:
        """tensor -> dimensions, for the tensors whose every dimension is known."""
        return {k: [int(d) for d in v] for k, v in self.shapes.items() if all(d is not None for d in v)}

    @cached_property
    def element_types(self) -> dict[str, int]:
        """tensor -> ``onnx.TensorProto`` element type, where declared, inferred or evident from the
        node (QuantizeLinear's zero point, Cast's ``to``, a Constant's tensor)."""
        types = {t.name: t.data_type for t in self.graph.initializer}
        for vi in self._value_infos():
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
                types.setdefault(vi.name, vi.type.tensor_type.elem_type)
        for node in self.nodes:
            if not node.output:
                continue
            if node.op_type == "QuantizeLinear" and len(node.input) > 2 and node.input[2] in types:
                types.setdefault(node.output[0], types[node.input[2]])
            elif node.op_type == "Cast":
                to = next((a.i for a in node.attribute if a.name == "to"), None)
                if to is not None:
                    types.setdefault(node.output[0], to)
            elif node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
                types.setdefault(node.output[0], node.attribute[0].t.data_type)
        return types

    def elements(self, name: str) -> int:
        """Number of elements of a tensor (unknown dimensions count as 1; 0 if the rank is unknown)."""
        dims = self.shapes.get(name)
        return int(np.prod([d or 1 for d in dims], dtype=np.int64)) if dims is not None else 0

    def __repr__(self) -> str:
        return f"<ModelIndex {self.graph.name or 'model'}: {len(self.nodes)} nodes>"

    # pickling (worker processes) carries the model; the caches are rebuilt there
    def __getstate__(self) -> dict[str, Any]:
        return {"model": self.model, "infer": self.infer}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["model"], infer=state["infer"])  # type: ignore[misc]


#: initializers up to this size keep their values for shape inference (shape tensors, axes, scalars)
_SMALL_INITIALIZER_BYTES = 4096


def _infer_without_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """Shape inference on a skeleton of ``model``: weights are declared as typed inputs instead of
    carried, so onnx does not serialise hundreds of MB to infer shapes (most of the viewer's time on
    a large model). Small initializers keep their values, which shape computations read (Reshape's
    target, Slice's starts...). The weights' declarations are removed again from the result's inputs."""
    skeleton = onnx.ModelProto()
    skeleton.ir_version = model.ir_version
    skeleton.opset_import.extend(model.opset_import)
    skeleton.functions.extend(model.functions)
    g, source = skeleton.graph, model.graph
    g.name = source.name
    g.node.extend(source.node)
    g.input.extend(source.input)
    g.output.extend(source.output)
    g.value_info.extend(source.value_info)
    declared = {vi.name for vi in source.input}
    weights = []
    for t in source.initializer:
        if tensor_bytes(t) <= _SMALL_INITIALIZER_BYTES + 256:  # ByteSize would serialize every weight
            g.initializer.append(t)
        elif t.name not in declared:
            g.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
            weights.append(t.name)
    inferred = onnx.shape_inference.infer_shapes(skeleton, strict_mode=False)
    if weights:
        kept = [vi for vi in inferred.graph.input if vi.name not in set(weights)]
        del inferred.graph.input[:]
        inferred.graph.input.extend(kept)
    return inferred
