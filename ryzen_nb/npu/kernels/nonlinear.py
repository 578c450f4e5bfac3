"""Non-linear operators of integer models, evaluated on bf16 values (A13).

The NPU's integer overlays compute Softmax, Sigmoid, Erf, LayerNorm... on bf16 values: the
dequantized input is rounded to bf16, the function evaluated, its result rounded to bf16 before
the quantizer after it. The function itself is onnxruntime's float32 one in the emulated graph and
onnx's reference implementation in :meth:`Bf16Evaluation.reference`; on bf16 inputs they agree after
the final rounding (the cases check it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper

from ryzen_nb.graph.builder import GraphBuilder, make_model
from ryzen_nb.npu.kernels.arithmetic import bf16
from ryzen_nb.npu.kernels.base import Kernel, KernelGraph, QuantRef
from ryzen_nb.npu.kernels.cases import Case, CaseGraph
from ryzen_nb.npu.kernels.lowering import bf16_round
from ryzen_nb.spec.dpu import HARD_SIGMOID_ALPHA

__all__ = ["NONLINEAR_OPS", "Bf16Evaluation", "evaluate_in_bf16", "on_bf16_grid"]

#: evaluated on bf16 values in integer models (A13)
NONLINEAR_OPS = ("Sigmoid", "Tanh", "Softmax", "Erf", "Gelu", "Exp", "Log", "Sqrt", "Reciprocal", "Pow", "Div",
                 "LayerNormalization", "InstanceNormalization", "HardSigmoid", "HardSwish", "Mish", "Elu", "Softsign",
                 "ReduceMean", "ReduceSum")


def evaluate_in_bf16(b: GraphBuilder, node: onnx.NodeProto, inputs: Sequence[str], float_inputs: Sequence[bool],
                     float_outputs: Sequence[bool] | None = None) -> list[str]:
    """``node`` on ``inputs``, its float inputs rounded to bf16 first and its float outputs after
    (every output unless ``float_outputs`` says which: a Concat of shape values stays int64);
    returns the outputs ("" where the node leaves an optional output out)."""
    n = onnx.NodeProto()
    n.CopyFrom(node)
    for j, (name, is_float) in enumerate(zip(inputs, float_inputs)):
        n.input[j] = bf16_round(b, name) if name and is_float else name
    del n.output[:]
    n.output.extend(b.fresh(f"{o}_fp32") if o else "" for o in node.output)
    b.nodes.append(n)
    rounded = float_outputs if float_outputs is not None else [True] * len(n.output)
    return [bf16_round(b, raw) if raw and is_float else raw for raw, is_float in zip(n.output, rounded)]


def on_bf16_grid(ref: QuantRef | None) -> bool:
    """Whether every value of a dequantized tensor is a bf16 number already: 8-bit codes (|code -
    zero point| <= 255, eight significant bits, as bf16 holds) times one power-of-two scale within
    bf16's normal range (XINT8's activations). Rounding such a tensor to bf16 changes nothing."""
    if ref is None or ref.dtype.itemsize != 1 or np.size(ref.scale) != 1 or np.size(ref.zero_point) != 1:
        return False
    mantissa, exponent = np.frexp(np.float64(np.ravel(ref.scale)[0]))
    return bool(mantissa == 0.5 and -125 <= exponent <= 120)


def _default_opset(model: onnx.ModelProto) -> int:
    return next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)


class Bf16Evaluation(Kernel):
    """A non-linear operator of an integer model: bf16 in, bf16 out (A13)."""

    op_types = NONLINEAR_OPS
    precisions = ("XINT8", "A8W8", "A16W8")
    arithmetic = "bf16 evaluation"

    @classmethod
    def _match(cls, node: onnx.NodeProto, precision: str, graph: KernelGraph) -> Kernel | str:
        types = graph.index.element_types
        attrs = {"float_inputs": [types.get(name) == onnx.TensorProto.FLOAT for name in node.input],
                 "on_bf16_grid": [bool(name) and on_bf16_grid(graph.quantized(name)) for name in node.input],
                 "opset": _default_opset(graph.index.model)}
        return cls(node, precision, attrs=attrs, replaced=[node])

    def marker_inputs(self) -> list[str]:
        return list(self.node.input)

    def marker_outputs(self) -> list[str]:
        return list(self.node.output)

    def reference(self, inputs: Sequence[np.ndarray | None], rounding: str = "half_up") -> list[np.ndarray]:
        from onnx.reference import ReferenceEvaluator  # onnx's numpy evaluator: slow to import, for tests

        feed: dict[str, np.ndarray] = {}
        names: list[str] = []
        for j, (value, is_float) in enumerate(zip(inputs, self.attrs["float_inputs"])):
            if value is None:
                names.append("")
                continue
            names.append(f"input_{j}")
            feed[names[-1]] = bf16(value) if is_float else np.asarray(value)
        node = helper.make_node(self.op, names, [f"output_{j}" if o else "" for j, o in enumerate(self.node.output)],
                                **{a.name: helper.get_attribute_value(a) for a in self.node.attribute})
        graph = helper.make_graph(
            [node], "bf16_evaluation",
            [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in feed.items()],
            [helper.make_empty_tensor_value_info(o) for o in node.output if o])
        values = iter(ReferenceEvaluator(make_model(graph, opset=self.attrs["opset"])).run(None, feed))
        return [bf16(next(values)) if o else np.zeros(0, np.float32) for o in self.node.output]

    def lower(self, b: GraphBuilder, inputs: list[str], *, rounding: str = "half_up",
              accumulation: str = "exact") -> list[str]:
        # an input already on the bf16 grid needs no rounding: a Cast pair less over the tensor
        rounded = [f and not g for f, g in zip(self.attrs["float_inputs"], self.attrs["on_bf16_grid"])]
        return evaluate_in_bf16(b, self.node, inputs, rounded)

    @classmethod
    def cases(cls) -> Iterator[Case]:
        for op in cls.op_types:
            for precision in cls.precisions:
                yield _nonlinear_case(op, precision)


#: inputs per precision: (dtype, zero point, scale) over about ±4 (XINT8: positions, uint8 with zero point 128)
_INPUT = {"XINT8": (np.uint8, 128, 2.0**-5), "A8W8": (np.int8, 3, 0.031), "A16W8": (np.int16, -40, 1.3e-4)}
#: operators defined for positive inputs only
_POSITIVE = {"Log", "Sqrt", "Reciprocal", "Pow"}


def _nonlinear_case(op: str, precision: str) -> Case:
    g = CaseGraph(op.lower(), precision, seed=60)
    dtype, zp, scale = _INPUT[precision]
    info = np.iinfo(dtype)
    shape = [2, 3, 4, 5]

    def activation(name: str) -> str:
        low = zp + 1 if op in _POSITIVE or name == "divisor" else info.min
        return g.codes(name, shape, scale, zp, dtype, low=low)

    inputs = [activation("x")]
    attrs: dict[str, Any] = {}
    if op == "Pow":
        inputs.append(g.constant("exponent", np.float32(1.5)))
    elif op == "Div":
        inputs.append(activation("divisor"))
    elif op in ("LayerNormalization", "InstanceNormalization"):
        channels = shape[-1] if op == "LayerNormalization" else shape[1]
        inputs.append(g.constant("gamma", g.rng.uniform(0.5, 1.5, channels).astype(np.float32)))
        inputs.append(g.constant("beta", g.rng.uniform(-0.5, 0.5, channels).astype(np.float32)))
    elif op in ("ReduceMean", "ReduceSum"):
        inputs.append(g.constant("axes", np.array([-1], np.int64)))
    elif op == "Softmax":
        attrs["axis"] = -1
    elif op == "HardSigmoid" and precision == "XINT8":
        attrs.update(alpha=0.2, beta=0.5)  # not the DPU's 1/6: no integer kernel, bf16 as the others
    elif op == "HardSigmoid":
        attrs.update(alpha=HARD_SIGMOID_ALPHA, beta=0.5)
    y = g.op(op, inputs, under_test=True, **attrs)
    # a Cast pair rounds the output and each float input to bf16, but XINT8's dequantized
    # activations (8-bit codes times a power of two) are bf16 numbers already
    activations = 2 if op == "Div" else 1
    rounded = {"Pow": 1, "LayerNormalization": 2, "InstanceNormalization": 2}.get(op, 0)  # float constants
    rounded += 0 if precision == "XINT8" else activations
    return g.case(g.quantize(y, scale, zp, dtype), roundings=("half_up",),  # no requantisation to round
                  route={"Cast": 2 * (rounded + 1)})
