"""Non-linear operators of integer models, evaluated on bf16 values (A13).

The NPU's integer overlays compute Softmax, Sigmoid, Erf, LayerNorm... on bf16 values: the
dequantized input is rounded to bf16, the function evaluated, its result rounded to bf16 before
the quantizer after it. The function itself is onnxruntime's float32 one in the emulated graph, or
where that strays on some inputs (Sigmoid's tail, Elu near 0) a form of other standard operators
that does not (:data:`_ACCURATE_FORMS`), and onnx's reference implementation in float64 in
:meth:`Bf16Evaluation.reference`; on bf16 inputs they agree after the final rounding but for a
value on the edge of two bf16 numbers (the cases check it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper

from ryzen_nb.graph.attributes import attribute
from ryzen_nb.graph.builder import GraphBuilder, make_model
from ryzen_nb.npu.kernels.arithmetic import bf16
from ryzen_nb.npu.kernels.base import Kernel, KernelGraph, QuantRef
from ryzen_nb.npu.kernels.cases import Case, CaseGraph
from ryzen_nb.npu.kernels.lowering import bf16_round, const
from ryzen_nb.spec.dpu import HARD_SIGMOID_ALPHA

__all__ = ["NONLINEAR_OPS", "Bf16Evaluation", "evaluate_in_bf16", "on_bf16_grid"]

#: evaluated on bf16 values in integer models (A13)
NONLINEAR_OPS = ("Sigmoid", "Tanh", "Softmax", "Erf", "Gelu", "Exp", "Log", "Sqrt", "Reciprocal", "Pow", "Div",
                 "LayerNormalization", "InstanceNormalization", "HardSigmoid", "HardSwish", "Mish", "Elu", "Softsign",
                 "ReduceMean", "ReduceSum")


def evaluate_in_bf16(b: GraphBuilder, node: onnx.NodeProto, inputs: Sequence[str], float_inputs: Sequence[bool],
                     float_outputs: Sequence[bool] | None = None, least: float | None = None) -> list[str]:
    """``node`` on ``inputs``, its float inputs rounded to bf16 first and its float outputs after
    (every output unless ``float_outputs`` says which: a Concat of shape values stays int64);
    returns the outputs ("" where the node leaves an optional output out). ``least``, the least
    value the first input can take when it is known, may spare an accurate form."""
    n = onnx.NodeProto()
    n.CopyFrom(node)
    for j, (name, is_float) in enumerate(zip(inputs, float_inputs)):
        n.input[j] = bf16_round(b, name) if name and is_float else name
    del n.output[:]
    n.output.extend(b.fresh(f"{o}_fp32") if o else "" for o in node.output)
    if n.op_type in _ACCURATE_FORMS and not n.domain:
        _ACCURATE_FORMS[n.op_type](b, n, least)
    else:
        b.nodes.append(n)
    rounded = float_outputs if float_outputs is not None else [True] * len(n.output)
    return [bf16_round(b, raw) if raw and is_float else raw for raw, is_float in zip(n.output, rounded)]


#: from this input up onnxruntime's Sigmoid gives the correctly rounded bf16 value of every bf16
#: number (a test runs them all); below it strays
ONNXRUNTIME_SIGMOID_EXACT_FROM = -9.5


def _sigmoid(b: GraphBuilder, node: onnx.NodeProto, least: float | None) -> None:
    # onnxruntime's Sigmoid is good to an absolute error, not a relative one: 0.6 % low at -12,
    # 47 % at -16 and 0 from -18 down (sigmoid(-18) = 1.5e-8, sigmoid(-32) = 1.3e-14), thousands
    # of bf16 units in the tail a probability map lives in (PP-OCRv4's logits reach -114).
    # e / (1 + e) with e = exp(x) keeps a relative error in float32, down to the subnormals; e is
    # clipped at 2**100 (x > 69: the quotient is 1, as sigmoid is in float32) so that inf / inf
    # never happens. Four passes as cheap as a copy each, four times a Sigmoid's time (1 / (1 +
    # exp(-x)) overflows below -88.7; onnxruntime's Softplus, for exp(x - softplus(x)), takes 12
    # times a Sigmoid's time): an input known never to reach the tail keeps the Sigmoid (38 of
    # YOLOv8n's 58 in A8W8).
    if least is not None and least >= ONNXRUNTIME_SIGMOID_EXACT_FROM:
        b.nodes.append(node)
        return
    e = b.op("Clip", b.op("Exp", node.input[0]), "", const(b, 2.0**100, np.float32))
    b.op("Div", e, b.op("Add", e, const(b, 1.0, np.float32)), outputs=[node.output[0]], name=node.name or None)


def _elu(b: GraphBuilder, node: onnx.NodeProto, least: float | None) -> None:
    # onnxruntime's Elu computes alpha * (exp(x) - 1), which loses every bit of a small negative x
    # (below 2**-17 in size: 0 or a multiple of 2**-24); expm1(x) = 2t / (1 - t) with t = tanh(x/2)
    # keeps them (tanh is exact on bf16 inputs). Elu(x) = relu(x) + alpha * expm1(min(x, 0)),
    # without a Where (onnxruntime's takes 30 times a copy's time).
    x = node.input[0]
    alpha = float(attribute(node, "alpha", 1.0))
    t = b.op("Tanh", b.op("Mul", b.op("Min", x, const(b, 0.0, np.float32)), const(b, 0.5, np.float32)))
    expm1 = b.op("Div", t, b.op("Sub", const(b, 1.0, np.float32), t))
    b.op("Add", b.op("Relu", x), b.op("Mul", expm1, const(b, 2 * alpha, np.float32)),
         outputs=[node.output[0]], name=node.name or None)


#: operators whose onnxruntime float32 function strays from the true one by more than a last bit
#: on some bf16 input, and a form of standard operators that does not (it writes the node's
#: output); on every finite bf16 input the form rounds to the correctly rounded bf16 result (a
#: test runs all 65,280 of them; Elu with alpha other than 1 aside where the result is subnormal)
_ACCURATE_FORMS = {"Sigmoid": _sigmoid, "Elu": _elu}


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
        first = graph.quantized(node.input[0]) if node.input else None
        attrs = {"float_inputs": [types.get(name) == onnx.TensorProto.FLOAT for name in node.input],
                 "on_bf16_grid": [bool(name) and on_bf16_grid(graph.quantized(name)) for name in node.input],
                 "least": first.least if first is not None else None,  # spares Sigmoid its accurate form
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
            # in float64: the function's true value, which the bf16 rounding below takes to float32 first
            # (the best a float32 implementation gives) and then to bf16
            feed[names[-1]] = bf16(value).astype(np.float64) if is_float else np.asarray(value)
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
        return evaluate_in_bf16(b, self.node, inputs, rounded, least=self.attrs.get("least"))

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
