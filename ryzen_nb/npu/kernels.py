"""The NPU kernels the emulator computes with NPU arithmetic, as data.

:func:`extract_kernels` reads a QDQ model and its :class:`~ryzen_nb.npu.compile.NPUProgram`, and
for every NPU operator it can emulate records one :class:`Kernel`: the integer codes it reads (the
inputs of the DequantizeLinear nodes feeding it), their scales and zero points, its weights and
bias, the fused activation after it, and the integer codes it writes (the output of the
QuantizeLinear after it). Both executors — the numpy reference (:mod:`reference`) and the ONNX
fast path (:mod:`lower`) — consume these records, so they compute the same thing by construction
and tests compare only arithmetic.

Integer kernels (XINT8 on X1, A8W8/A16W8 on X2): Conv, Gemm, MatMul, Add, Mul, average pooling,
LeakyRelu, HardSigmoid. Float kernels (BF16/BFP16/MX on VAIML): Conv, Gemm, MatMul with exact
accumulation; every other NPU operator of a float model rounds its output to bf16. Non-linear
NPU operators of integer models (Softmax, Sigmoid, Erf, ...) are evaluated on bf16 values (A13).
Anything else computes as in the QDQ simulation, which for value-preserving operators (Reshape,
MaxPool, Concat with shared scales, ...) is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper

__all__ = ["QuantRef", "Kernel", "extract_kernels", "INT_OPS", "FLOAT_MAC_OPS", "NONLINEAR_OPS"]

INT_OPS = {"Conv", "Gemm", "MatMul", "Add", "Mul", "AveragePool", "GlobalAveragePool", "LeakyRelu", "HardSigmoid"}
FLOAT_MAC_OPS = {"Conv", "Gemm", "MatMul"}
#: evaluated on bf16 values in integer models (A13)
NONLINEAR_OPS = {"Sigmoid", "Tanh", "Softmax", "Erf", "Gelu", "Exp", "Log", "Sqrt", "Reciprocal", "Pow", "Div",
                 "LayerNormalization", "InstanceNormalization", "HardSigmoid", "HardSwish", "Mish", "Elu", "Softsign",
                 "ReduceMean", "ReduceSum"}


@dataclass
class QuantRef:
    """A quantized tensor as the NPU sees it: integer codes with a scale and zero point."""

    codes: str  #: name of the integer tensor in the graph
    scale: np.ndarray
    zero_point: np.ndarray
    dtype: np.dtype
    values: np.ndarray | None = None  #: the codes, when they are a constant (weights, biases)

    def aligned_with(self, s_in: float, s_w: np.ndarray) -> bool:
        """A bias whose scale is s_in * s_w (to float32 precision, as quantizers store it) adds
        straight into the integer accumulator (Quark's AdjustBiasScale)."""
        expected = (np.float64(s_in) * np.ravel(s_w).astype(np.float64)).astype(np.float32)
        return np.array_equal(np.ravel(self.scale).astype(np.float32), np.broadcast_to(expected, np.ravel(self.scale).shape))

    @property
    def pos(self) -> int:
        """Power-of-two position: scale = 2**-pos (XINT8)."""
        return int(round(-np.log2(float(np.ravel(self.scale)[0]))))


@dataclass
class Kernel:
    node: onnx.NodeProto
    op: str
    precision: str
    inputs: list[QuantRef] = field(default_factory=list)  #: activations (integer kernels)
    weight: QuantRef | None = None
    bias: QuantRef | None = None
    output: QuantRef | None = None  #: integer kernels: the codes written
    activation: tuple | None = None  #: ("relu",), ("clip", lo, hi), ("leaky", alpha)
    attrs: dict[str, Any] = field(default_factory=dict)
    replaced: list[onnx.NodeProto] = field(default_factory=list)  #: nodes this kernel stands for
    float_output: str = ""  #: the float tensor the kernel's node wrote (float kernels)

    @property
    def integer(self) -> bool:
        return self.output is not None

    @property
    def dynamic_weight(self) -> bool:
        """A MatMul of two activations: the second operand's codes are a second kernel input."""
        return self.weight is not None and self.weight.values is None

    def input_codes(self) -> list[str]:
        """The integer tensors an integer kernel reads, in order."""
        return [r.codes for r in self.inputs] + ([self.weight.codes] if self.dynamic_weight else [])


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _dq_ref(name: str, producers, consts) -> QuantRef | None:
    """The integer codes behind a DequantizeLinear output."""
    dq = producers.get(name)
    if dq is None or dq.op_type != "DequantizeLinear" or len(dq.input) < 2:
        return None
    scale = consts.get(dq.input[1])
    if scale is None:
        return None
    zp = consts.get(dq.input[2]) if len(dq.input) > 2 and dq.input[2] else None
    codes = consts.get(dq.input[0])
    dtype = codes.dtype if codes is not None else (zp.dtype if zp is not None else None)
    if dtype is None:
        q = producers.get(dq.input[0])
        if q is not None and q.op_type == "QuantizeLinear" and len(q.input) > 2 and q.input[2] in consts:
            dtype = consts[q.input[2]].dtype
    if dtype is None:
        return None
    if zp is None:
        zp = np.zeros(np.shape(scale), dtype=dtype)
    if np.size(scale) != 1 and codes is None:
        return None  # per-channel activations are not an NPU case
    return QuantRef(dq.input[0], np.asarray(scale, np.float32), np.asarray(zp), np.dtype(dtype), codes)


def extract_kernels(program: Any) -> list[Kernel]:
    """One :class:`Kernel` per NPU operator the emulator computes with NPU arithmetic, for a
    compiled :class:`~ryzen_nb.npu.compile.NPUProgram` (its model's index is reused)."""
    model = program.index
    consts = model.constants
    producers, consumers = model.producer, model.consumers
    by_index = {n.index: n for n in program.nodes}
    shapes = model.static_shapes
    taken: set[int] = set()
    kernels: list[Kernel] = []
    index = model.position
    for i, node in enumerate(model.nodes):
        a = by_index[i]
        if a.device != "NPU" or a.quantizer or i in taken:
            continue
        if a.precision in ("XINT8", "A8W8", "A16W8"):
            k = _integer_kernel(node, a.precision, producers, consumers, consts, index, by_index)
            if k is None and node.op_type in NONLINEAR_OPS:
                kernels.append(Kernel(node, node.op_type, a.precision, attrs={"bf16": True}, replaced=[node]))
                continue
        elif a.precision in ("BF16", "BFP16", "MX") and node.op_type in FLOAT_MAC_OPS and _float_mac_ok(node):
            k = Kernel(node, node.op_type, a.precision, attrs=_attrs(node), replaced=[node],
                       float_output=node.output[0])
        else:
            k = None
        if k is not None:
            if not _record_shapes(k, shapes):
                continue
            kernels.append(k)
            taken.update(index[id(n)] for n in k.replaced)
    return kernels


def _record_shapes(k: Kernel, shapes: dict[str, list[int]]) -> bool:
    """Static shapes the fast path needs (im2col, pooling windows); False if unknown."""
    x = shapes.get(k.node.input[0])
    if k.op == "Conv" and not k.integer:
        w = shapes.get(k.node.input[1])
        if x is None or w is None or len(x) != 4:
            return False
        k.attrs["_x_shape"], k.attrs["_w_shape"] = x, w
        k.attrs.setdefault("kernel_shape", w[2:])
    if k.op in ("AveragePool", "GlobalAveragePool"):
        if x is None or len(x) != 4:
            return False
        k.attrs["_channels"], k.attrs["_count"] = x[1], int(np.prod(x[2:]))
    if k.dynamic_weight:
        if x is None:
            return False
        k.attrs["_reduction"] = x[-1]
    return True


def _integer_kernel(node, precision, producers, consumers, consts, index, by_index) -> Kernel | None:
    op = node.op_type
    if op not in INT_OPS or (op == "HardSigmoid" and precision != "XINT8"):
        return None  # HardSigmoid's 2731/2**14 is the DPU's (XINT8); float-scale ones are bf16 (A13)
    k = Kernel(node, op, precision, attrs=_attrs(node), replaced=[node])
    data_inputs = [node.input[0]]
    if op in ("Add", "Mul"):
        data_inputs = list(node.input[:2])
    refs = [_dq_ref(n, producers, consts) for n in data_inputs]
    if any(r is None for r in refs):
        return None
    if op in ("Add", "Mul"):
        # one operand may be a constant (a quantized initializer): it is read as an input all the same
        k.inputs = refs
    else:
        k.inputs = refs[:1]
    if op == "Gemm" and (k.attrs.get("transA", 0) or k.attrs.get("alpha", 1.0) != 1.0 or k.attrs.get("beta", 1.0) != 1.0):
        return None
    if op == "Conv" and len(k.attrs.get("kernel_shape", [1, 1]) or [1, 1]) != 2:
        return None  # 1-D and 3-D convolutions compute as in the QDQ simulation
    if op in ("Conv", "Gemm", "MatMul"):
        if len(node.input) < 2:
            return None
        w = _dq_ref(node.input[1], producers, consts)
        if w is None or (w.values is None and op != "MatMul"):
            return None  # a MatMul may multiply two activations (attention); the others need weights
        k.weight = w
        if len(node.input) > 2 and node.input[2]:
            b = _dq_ref(node.input[2], producers, consts)
            if b is None or b.values is None:
                return None
            k.bias = b
    if op == "AveragePool":
        pads = list(k.attrs.get("pads", []) or [])
        if any(pads) and not k.attrs.get("count_include_pad", 0):
            return None  # the NPU divides by the full window (k/2**n); padded edges would differ
    # what follows: the pool correction of a DPU-rewritten model, a fused activation, the quantizer
    out = node.output[0]
    users = consumers.get(out, [])
    if op in ("AveragePool", "GlobalAveragePool") and len(users) == 1 and users[0].op_type == "Mul":
        mul = users[0]
        other = [i for i in mul.input if i != out]
        if len(other) == 1 and other[0] in consts and np.size(consts[other[0]]) == 1:
            k.attrs["dpu_multiplier"] = float(np.ravel(consts[other[0]])[0])
            k.replaced.append(mul)
            out = mul.output[0]
            users = consumers.get(out, [])
    if len(users) == 1 and users[0].op_type in ("Relu", "Clip", "LeakyRelu") and by_index[index[id(users[0])]].device == "NPU":
        act = users[0]
        if act.op_type == "Relu":
            k.activation = ("relu",)
        elif act.op_type == "LeakyRelu":
            k.activation = ("leaky", float(_attrs(act).get("alpha", 0.01)))
        else:
            lo = consts.get(act.input[1]) if len(act.input) > 1 and act.input[1] else None
            hi = consts.get(act.input[2]) if len(act.input) > 2 and act.input[2] else None
            if lo is None and hi is None:
                return None
            k.activation = ("clip", None if lo is None else float(lo), None if hi is None else float(hi))
        k.replaced.append(act)
        out = act.output[0]
        users = consumers.get(out, [])
    quantizers = [u for u in users if u.op_type == "QuantizeLinear"]
    if len(quantizers) != 1 or len(quantizers[0].input) < 3:
        return None
    q = quantizers[0]
    scale, zp = consts.get(q.input[1]), consts.get(q.input[2])
    if scale is None or zp is None or np.size(scale) != 1:
        return None
    k.output = QuantRef(q.output[0], np.asarray(scale, np.float32), np.asarray(zp), np.dtype(zp.dtype))
    k.attrs["float_output"] = out  # other consumers of the float value get the dequantized codes
    k.replaced.append(q)
    if precision == "XINT8" and not all(_is_pow2(r.scale) for r in [*k.inputs, k.output] + ([k.weight] if k.weight else [])):
        return None
    return k


def _is_pow2(scale: np.ndarray) -> bool:
    m, _ = np.frexp(np.asarray(scale, np.float64))
    return bool(np.all(m == 0.5))


def _float_mac_ok(node: onnx.NodeProto) -> bool:
    attrs = _attrs(node)
    if node.op_type == "Conv":
        return len(attrs.get("kernel_shape", [1, 1]) or [1, 1]) == 2
    if node.op_type == "Gemm":
        return not attrs.get("transA", 0) and attrs.get("alpha", 1.0) == 1.0 and attrs.get("beta", 1.0) == 1.0
    return True
