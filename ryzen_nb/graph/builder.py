"""A small helper to emit ONNX nodes with unique names.

Format lowerings, the quantizer and the emulator all append nodes to graphs; this keeps the
bookkeeping (unique tensor names, constants, the model-local functions a graph needs) in one place.
Constants become ``Constant`` nodes rather than initializers so the same code can build a main
graph or the body of an ONNX function (functions cannot hold initializers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

#: Default opset of the standard domain for everything ryzen-nb writes. Opset 21 is the first
#: with int4/uint4/int16/uint16 QuantizeLinear and blocked DequantizeLinear.
OPSET = 21
#: Domain of ryzen-nb's model-local functions (block-format quantizers, ...). Plain onnxruntime
#: inlines them when it loads the model: no custom-op library is involved.
RYZEN_NB_DOMAIN = "ryzen_nb"
RYZEN_NB_DOMAIN_VERSION = 1
#: IR version written into every model ryzen-nb makes. The onnx package stamps its newest IR,
#: which an older onnxruntime refuses to load; IR 10 is the one that goes with opset 21.
IR_VERSION = 10


def make_model(graph: onnx.GraphProto, opset: int = OPSET, **kwargs: Any) -> onnx.ModelProto:
    """``onnx.helper.make_model`` with ryzen-nb's opset and an IR version onnxruntime reads."""
    kwargs.setdefault("opset_imports", [helper.make_opsetid("", opset)])
    kwargs.setdefault("producer_name", "ryzen-nb")
    model = helper.make_model(graph, **kwargs)
    model.ir_version = IR_VERSION
    return model


class GraphBuilder:
    """Accumulates nodes (and the functions they call) under a name prefix.

    >>> b = GraphBuilder("demo")
    >>> y = b.op("Mul", "x", b.const(np.float32(2.0)))
    >>> [n.op_type for n in b.nodes]
    ['Constant', 'Mul']
    """

    def __init__(self, prefix: str = "", scalar_rank: int = 0, reserved: set[str] | None = None) -> None:
        self.prefix = prefix
        #: names already taken in the graph the nodes go into: :meth:`fresh` and :meth:`unique` avoid
        #: them (a model already holding "scale_1" or "w_quantized" must not get a second one)
        self.reserved = reserved if reserved is not None else set()
        #: scalars become constants of this rank ((1,)*rank): onnxruntime broadcasts a lower-rank
        #: operand against a tensor with size-1 dimensions up to 60x slower than a same-rank one.
        self.scalar_rank = scalar_rank
        self.nodes: list[onnx.NodeProto] = []
        self.functions: dict[tuple[str, str], onnx.FunctionProto] = {}
        self._count = 0

    def fresh(self, hint: str) -> str:
        """A tensor/node name not used before in this builder (nor reserved)."""
        while True:
            self._count += 1
            name = f"{self.prefix}/{hint}_{self._count}" if self.prefix else f"{hint}_{self._count}"
            if name not in self.reserved:
                self.reserved.add(name)
                return name

    def unique(self, name: str) -> str:
        """``name`` if it is free, else ``name_2``, ``name_3``...; the result is reserved from now on."""
        candidate, k = name, 1
        while candidate in self.reserved:
            k += 1
            candidate = f"{name}_{k}"
        self.reserved.add(candidate)
        return candidate

    def op(
        self,
        op_type: str,
        *inputs: str,
        outputs: int | Sequence[str] = 1,
        domain: str = "",
        name: str | None = None,
        **attrs: Any,
    ) -> Any:
        """Append a node; return its output name (or a tuple of names if several)."""
        if isinstance(outputs, int):
            out_names = [self.fresh(op_type) for _ in range(outputs)]
        else:
            out_names = list(outputs)
        node = helper.make_node(
            op_type,
            list(inputs),
            out_names,
            name=name or self.fresh(f"{op_type}_node"),
            domain=domain or None,
            **attrs,
        )
        self.nodes.append(node)
        return out_names[0] if len(out_names) == 1 else tuple(out_names)

    def const(self, value: Any, dtype: Any = None, hint: str = "const") -> str:
        """A ``Constant`` node holding ``value`` (numpy array or scalar)."""
        array = np.asarray(value, dtype=dtype)
        if array.ndim == 0 and self.scalar_rank:
            array = array.reshape((1,) * self.scalar_rank)
        out = self.fresh(hint)
        self.nodes.append(
            helper.make_node(
                "Constant", [], [out], name=out + "_node", value=numpy_helper.from_array(array, out)
            )
        )
        return out

    def clip(self, x: str, lo: float, hi: float, dtype: Any = np.float32) -> str:
        """``Clip(x, lo, hi)``; its bounds must be true scalars whatever ``scalar_rank`` says."""
        bounds = []
        for v, hint in ((lo, "lo"), (hi, "hi")):
            name = self.fresh(hint)
            tensor = numpy_helper.from_array(np.asarray(v, dtype=dtype), name)
            self.nodes.append(helper.make_node("Constant", [], [name], name=name + "_node", value=tensor))
            bounds.append(name)
        return self.op("Clip", x, *bounds)

    def add_function(self, function: onnx.FunctionProto) -> None:
        self.functions[(function.domain, function.name)] = function

    def call(self, function: onnx.FunctionProto, *inputs: str, output: str | None = None, **attrs: Any) -> str:
        """Call a model-local function (registering it with this builder)."""
        self.add_function(function)
        return self.op(
            function.name,
            *inputs,
            outputs=[output] if output else 1,
            domain=function.domain,
            **attrs,
        )

    def to_function(
        self, name: str, inputs: Sequence[str], outputs: Sequence[str], attributes: Sequence[str] = (), doc: str = ""
    ) -> onnx.FunctionProto:
        """Package the accumulated nodes as a function in the ryzen-nb domain."""
        return helper.make_function(
            RYZEN_NB_DOMAIN,
            name,
            list(inputs),
            list(outputs),
            self.nodes,
            opset_imports=[helper.make_opsetid("", OPSET)],
            attributes=list(attributes),
            doc_string=doc,
        )

    def to_model(
        self,
        inputs: Sequence[onnx.ValueInfoProto],
        outputs: Sequence[onnx.ValueInfoProto],
        name: str = "ryzen_nb",
    ) -> onnx.ModelProto:
        """A standalone model from the accumulated nodes (used by tests and benchmarks)."""
        graph = helper.make_graph(self.nodes, name, list(inputs), list(outputs))
        opsets = [helper.make_opsetid("", OPSET)]
        if self.functions:
            opsets.append(helper.make_opsetid(RYZEN_NB_DOMAIN, RYZEN_NB_DOMAIN_VERSION))
        return make_model(graph, opset_imports=opsets, functions=list(self.functions.values()))
