"""Which nodes the Vitis AI EP would put on the NPU, in which precision, and why the others stay
on the CPU (docs/npu-operators.md#how-ryzen-nb-partitions, assumption A9).

1. Each operator's precision is read from the quantizers around it (:mod:`ryzen_nb.npu.graph`):
   one of the records of :mod:`ryzen_nb.spec.precisions` — XINT8, A8W8, A16W8, BF16, BFP16, MX
   (OCP/microexponent formats, only QDQ-simulated: the NPU computes them as BF16, A17), or FP32,
   which XDNA2 targets compile as BF16 (VAIML, docs/npu-numerics.md#bf16) unless the model is an
   INT8 model (its float leftovers stay on the CPU); INT and OTHER have no NPU kernels.
2. An operator is eligible when its target runs that precision (docs/npu-compilers.md#compilers),
   the supported-operator table marks it (docs/npu-operators.md#the-supported-operator-table), every
   tensor it touches has a static shape, and it passes the VOE attribute checks
   (docs/npu-operators.md#fallback-rules).
3. The X1 compiler (Phoenix/Hawk Point INT8) is not invoked when fewer than ``minimum_conv`` Conv
   nodes would run on the NPU, and everything rolls back when there would be more than
   ``max_subgraphs`` NPU subgraphs.
4. Quantize/dequantize nodes go where the conversion happens: a quantizer of an NPU output runs on
   the NPU, the quantization of a CPU tensor on the CPU, a dequantize on the NPU when it feeds it
   (ryzen-nb's reading, assumption F2 of docs/npu-assumptions.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx

from ryzen_nb.graph.attributes import attribute
from ryzen_nb.graph.index import ModelIndex
from ryzen_nb.npu.graph import TensorQuant, is_quantizer, quantizer_outputs
from ryzen_nb.spec.dpu import HARD_SIGMOID_ALPHA
from ryzen_nb.spec.operators import FUSED_ACTIVATIONS, FUSING_PRODUCERS, MAC_OPS, is_supported
from ryzen_nb.spec.precisions import PRECISIONS
from ryzen_nb.spec.targets import Target

__all__ = ["NodeAssignment", "PartitionOptions", "partition", "node_precision"]


@dataclass(frozen=True)
class PartitionOptions:
    #: X1: fewer NPU Conv nodes than this -> whole model on the CPU (docs/npu-operators.md#fallback-rules)
    minimum_conv: int = 2
    #: X1: more NPU subgraphs than this -> whole model on the CPU (docs/npu-operators.md#fallback-rules)
    max_subgraphs: int = 32
    compiler: str | None = None  #: force "X1" (e.g. XINT8 on Strix through the 4x4 overlay) or "X2"
    #: X1: kernel/stride/pool limits borrowed from Vitis AI DPUs (A8, analog only;
    #: docs/npu-operators.md#per-operator-limits)
    dpu_limits: bool = True
    skip_matmul_dims_not_4: bool = False  #: VAIP_SKIP_MATMUL_DIMS_NOT_EQUAL_4
    skip_slice_dims_not_4: bool = False  #: VAIP_SKIP_SLICE_DIMS_NOT_EQUAL_4


@dataclass
class NodeAssignment:
    index: int
    name: str
    op_type: str
    domain: str
    device: str  #: "NPU" or "CPU"
    #: a name of ryzen_nb.spec.precisions.PRECISIONS (XINT8, A8W8, ... FP32, INT, OTHER); "" for a
    #: quantizer node that converts on the CPU. On the NPU, MX and FP32 nodes read BF16 (what it computes).
    precision: str
    reason: str = ""  #: why the node is on the CPU
    subgraph: int | None = None
    quantizer: bool = False
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)



def node_precision(acts: list[TensorQuant], weights: list[TensorQuant], float_acts: list[str]) -> tuple[str, str]:
    """(precision, problem) of an operator from the quantization of its inputs: the precision is a
    name of :data:`ryzen_nb.spec.precisions.PRECISIONS`, the problem why it cannot run on the NPU."""
    quantized = acts + weights
    if not quantized:
        return "FP32", ""
    if float_acts:
        return "FP32", f"input {float_acts[0]!r} is not quantized while other inputs are"
    families = {q.family for q in quantized}
    if families <= {"integer"}:
        bits = {q.bits for q in acts} if acts else {q.bits for q in weights}
        if any(q.format in ("int4", "uint4", "int32", "uint32") for q in acts) or bits - {8, 16}:
            return "INT", f"{acts[0].format if acts else weights[0].format} activations have no NPU kernels"
        if 16 in bits:
            return "A16W8", ""
        if all(q.per_tensor and q.power_of_two and q.xint8_zero_point for q in quantized if q.format != "int32"):
            return "XINT8", ""
        return "A8W8", ""
    formats_ = {q.format for q in quantized}
    if formats_ <= {"bfloat16"}:
        return "BF16", ""
    if formats_ <= {"BFP16", "bfloat16"}:
        return "BFP16", ""
    if families <= {"mx", "bfp", "float"} and not formats_ & {"float16", "float8_e4m3fn", "float8_e5m2"}:
        return "MX", ""
    return "OTHER", f"{', '.join(sorted(formats_))} is not a precision the NPU runs"


def _attribute_problem(node: onnx.NodeProto, shapes: dict[str, list], consts: dict[str, np.ndarray],
                       compiler: str, options: PartitionOptions) -> str:
    """The VOE per-node checks (docs/npu-operators.md#fallback-rules) and, for X1, the borrowed DPU
    limits (A8, docs/npu-operators.md#per-operator-limits)."""
    op = node.op_type
    if op == "Conv":
        w = shapes.get(node.input[1]) if len(node.input) > 1 else None
        x = shapes.get(node.input[0])
        group = int(attribute(node, "group", 1))
        if group > 1 and w and x and len(x) > 1 and x[1]:
            c_in, c_out = x[1], w[0]
            depthwise = group == c_in
            if not depthwise and not (c_in % group == 0 and c_out % group == 0 and w[1] == c_in // group):
                return f"grouped Conv with group {group} does not divide {c_in} input / {c_out} output channels"
        pad = attribute(node, "auto_pad", "NOTSET")
        if pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
            return f"auto_pad {pad} is not supported"
        if compiler == "X1" and options.dpu_limits:
            kernel = list(attribute(node, "kernel_shape", w[2:] if w else []) or [])
            strides = list(attribute(node, "strides", [1] * len(kernel)) or [])
            if any(k > 16 for k in kernel):
                return f"kernel {kernel} exceeds 16 (DPU limit, assumption A8)"
            if any(s > 4 for s in strides):
                return f"stride {strides} exceeds 4 (DPU limit, assumption A8)"
    elif op == "ConvTranspose":
        if any(int(p) != 0 for p in (attribute(node, "output_padding", []) or [])):
            return "ConvTranspose with output_padding is not supported"
    elif op == "HardSigmoid":
        alpha = float(attribute(node, "alpha", 0.2))
        if not (abs(alpha - 1 / 6) < 1e-6 or abs(alpha - HARD_SIGMOID_ALPHA) < 1e-7):
            return f"HardSigmoid alpha {alpha:g} (only 1/6 is supported)"
    elif op == "LpNormalization":
        if int(attribute(node, "p", 2)) != 2:
            return "LpNormalization with p != 2"
    elif op == "GlobalAveragePool":
        if len(shapes.get(node.input[0]) or []) != 4:
            return "GlobalAveragePool of a tensor that is not 4-D"
    elif op == "Resize":
        mode = attribute(node, "mode", "nearest")
        coord = attribute(node, "coordinate_transformation_mode", "half_pixel")
        if mode not in ("nearest", "linear"):
            return f"Resize mode {mode}"
        if coord not in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric") and not (
            coord == "tf_half_pixel_for_nn" and mode == "nearest"
        ):
            return f"Resize coordinate mode {coord}"
    elif op == "Pad":
        mode = attribute(node, "mode", "constant")
        if mode not in ("constant", "reflect", "edge"):
            return f"Pad mode {mode}"
    elif op == "Clip":
        for bound in node.input[1:3]:
            if bound and bound not in consts:
                return "Clip bounds are not constants"
    elif op in ("MaxPool", "AveragePool") and compiler == "X1" and options.dpu_limits:
        kernel = list(attribute(node, "kernel_shape", []) or [])
        if any(k > 8 for k in kernel):
            return f"pooling kernel {kernel} exceeds 8 (DPU limit, assumption A8)"
    elif op == "MatMul" and options.skip_matmul_dims_not_4:
        if len(shapes.get(node.input[0]) or []) != 4:
            return "MatMul operand is not 4-D (VAIP_SKIP_MATMUL_DIMS_NOT_EQUAL_4)"
    elif op == "Slice" and options.skip_slice_dims_not_4:
        if len(shapes.get(node.input[0]) or []) != 4:
            return "Slice operand is not 4-D (VAIP_SKIP_SLICE_DIMS_NOT_EQUAL_4)"
    return ""


_FLOAT = onnx.TensorProto.FLOAT


def partition(index: ModelIndex, target: Target, options: PartitionOptions = PartitionOptions()
              ) -> tuple[list[NodeAssignment], list[list[int]], dict[str, str]]:
    """Assign every node; return the assignments, the NPU subgraphs (node indices) and the
    compiler used per precision."""
    shapes = index.shapes
    consts = index.constants
    qinfo = quantizer_outputs(index)
    producers = index.producer
    types = index.element_types
    int_model = any(q.family == "integer" and not q.constant for q in qinfo.values())
    compilers = dict(target.compilers)
    if options.compiler:
        for p in ("XINT8", "A8W8", "A16W8"):
            if p in compilers or options.compiler == "X1":
                compilers[p] = options.compiler

    nodes: list[NodeAssignment] = []
    for i, node in enumerate(index.nodes):
        a = NodeAssignment(i, node.name or f"{node.op_type}_{i}", node.op_type, node.domain, "CPU", "",
                           inputs=list(node.input), outputs=list(node.output))
        nodes.append(a)
        if is_quantizer(node) or node.op_type == "Constant":
            a.quantizer = True
            continue
        acts, weights, float_acts = [], [], []
        for name in node.input:
            if not name:
                continue
            if name in qinfo:
                (weights if qinfo[name].constant else acts).append(qinfo[name])
            elif types.get(name) == _FLOAT and name not in consts:
                float_acts.append(name)
        precision, problem = node_precision(acts, weights, float_acts)
        a.precision = precision
        if not problem and int_model and precision not in ("FP32", "OTHER") and node.op_type in MAC_OPS:
            float_weight = next((n for n in node.input[1:3] if n and n not in qinfo and types.get(n) == _FLOAT), None)
            if float_weight:
                problem = f"its weight or bias {float_weight!r} is not quantized"
        if problem:
            a.reason = problem
            continue
        if precision == "FP32":
            if int_model:
                a.reason = "not quantized: in an INT8 model only operators between quantizers run on the NPU"
                continue
            if target.generation != "XDNA2":
                a.reason = f"{target.name} runs quantized INT8 models only (X1 compiler); quantize to XINT8 first"
                continue
        # what the NPU computes it in: VAIML compiles FP32 models as BF16 on XDNA2; MX is only
        # QDQ-simulated, the NPU computes bf16 (A17)
        run_as = PRECISIONS[precision].npu_precision
        if run_as not in target.precisions:
            a.reason = f"{target.name} does not run {run_as} models (it runs {', '.join(target.precisions)})"
            continue
        compiler = compilers.get(run_as, "")
        if compiler == "X1" and run_as != "XINT8":
            a.reason = f"the X1 compiler accepts only power-of-two (XINT8) quantization; this operator is {run_as}"
            continue
        if not is_supported(node.op_type, run_as):
            a.reason = f"{node.op_type} has no {run_as} NPU kernel in Ryzen AI's supported-operator table"
            continue
        dynamic = [t for t in list(node.input) + list(node.output)
                   if t and t not in consts and (t not in shapes or any(d is None or d == 0 for d in shapes[t]))]
        if dynamic:
            a.reason = f"tensor {dynamic[0]!r} has a dynamic or unknown shape"
            continue
        if compiler == "X1":
            scalar = [t for t in list(node.input) + list(node.output) if t and shapes.get(t) == []]
            if scalar:
                a.reason = f"tensor {scalar[0]!r} is a scalar (the X1 importer rejects scalars)"
                continue
        problem = _attribute_problem(node, shapes, consts, compiler, options)
        if problem:
            a.reason = problem
            continue
        a.device = "NPU"
        a.precision = run_as

    _fuse_activations(index, nodes)
    _place_quantizers(index, nodes)
    subgraphs = _subgraphs(nodes, producers)
    # X1 gates apply to the whole INT8 model
    if any(compilers.get(p) == "X1" for p in ("XINT8",)) and int_model:
        npu_convs = sum(1 for n in nodes if n.device == "NPU" and n.op_type == "Conv")
        rollback = ""
        if npu_convs < options.minimum_conv:
            rollback = (f"only {npu_convs} Conv node(s) would run on the NPU (< minimum_num_of_conv "
                        f"{options.minimum_conv}): the X1 compiler is not invoked")
        elif len(subgraphs) > options.max_subgraphs:
            rollback = (f"{len(subgraphs)} NPU subgraphs exceed dpu_subgraph_num {options.max_subgraphs}: "
                        "everything rolls back to the CPU")
        if rollback:
            for n in nodes:
                if n.device == "NPU":
                    n.device, n.reason = "CPU", rollback
            subgraphs = []
    for k, members in enumerate(subgraphs):
        for i in members:
            nodes[i].subgraph = k
    for n in nodes:
        if n.device == "CPU" and n.quantizer and not n.reason:
            n.reason = "converts at the CPU side of a CPU/NPU boundary"
    return nodes, subgraphs, compilers


def _fuse_activations(model: ModelIndex, nodes: list[NodeAssignment]) -> None:
    producers, consts, index = model.producer, model.constants, model.position
    for i, node in enumerate(model.nodes):
        a = nodes[i]
        if a.device == "NPU" or not node.input:
            continue
        src = producers.get(node.input[0])
        if node.op_type == "Mul" and src is not None and src.op_type in ("AveragePool", "GlobalAveragePool"):
            # the correction factor of a DPU-rewritten average pool (k/2**n, docs/npu-numerics.md#dpu-rewrites)
            # is the pool kernel's own multiplier
            other = [t for t in node.input if t != node.input[0]]
            pool = nodes[index[id(src)]]
            if pool.device == "NPU" and len(other) == 1 and other[0] in consts and np.size(consts[other[0]]) == 1:
                a.device, a.precision, a.reason = "NPU", pool.precision, ""
            continue
        if node.op_type not in FUSED_ACTIVATIONS:
            continue
        src = producers.get(node.input[0])
        while src is not None and nodes[index[id(src)]].quantizer and src.input:
            src = producers.get(src.input[0])  # look through a quantizer between them
        if src is None or src.op_type not in FUSING_PRODUCERS:
            continue
        producer = nodes[index[id(src)]]
        if producer.device == "NPU":
            a.device, a.precision, a.reason = "NPU", producer.precision, ""


def _place_quantizers(model: ModelIndex, nodes: list[NodeAssignment]) -> None:
    producers, consumers, consts, index = model.producer, model.consumers, model.constants, model.position

    def device_of(tensor: str) -> str | None:
        p = producers.get(tensor)
        return nodes[index[id(p)]].device if p is not None else None

    # a few passes settle chains such as NPU -> Q -> DQ -> NPU
    for _ in range(3):
        for i, node in enumerate(model.nodes):
            a = nodes[i]
            if not a.quantizer:
                continue
            users = [nodes[index[id(c)]] for c in consumers.get(node.output[0], [])] if node.output else []
            feeds_npu = any(u.device == "NPU" for u in users)
            src = node.input[0] if node.input else ""
            from_npu = device_of(src) == "NPU"
            constant = src in consts or (src in producers and producers[src].op_type == "Constant")
            converting_in = node.op_type == "QuantizeLinear" or (
                node.op_type == "Cast" and next((x.i for x in node.attribute if x.name == "to"), 1) != 1)
            if node.op_type == "Constant":
                a.device = "NPU" if feeds_npu and all(u.device == "NPU" for u in users) else "CPU"
            elif converting_in:
                a.device = "NPU" if from_npu else "CPU"
            elif constant:
                a.device = "NPU" if feeds_npu else "CPU"
            else:  # DequantizeLinear, Cast to float, one-node quantize-dequantize functions
                a.device = "NPU" if feeds_npu and (from_npu or producers.get(src) is None or
                                                  (src in producers and device_of(src) == "NPU")) else "CPU"
                if feeds_npu and not from_npu and node.op_type == "DequantizeLinear":
                    a.device = "NPU"  # the NPU reads the integer tensor its producer quantized
            if a.device == "NPU":
                a.precision = a.precision or next((u.precision for u in users if u.device == "NPU"), "")


def _subgraphs(nodes: list[NodeAssignment], producers: dict[str, onnx.NodeProto]) -> list[list[int]]:
    """Connected components of NPU nodes (an edge: a tensor produced by one and read by the other)."""
    parent = list(range(len(nodes)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    by_output = {o: n.index for n in nodes for o in n.outputs}
    for n in nodes:
        if n.device != "NPU":
            continue
        for t in n.inputs:
            j = by_output.get(t)
            if j is not None and nodes[j].device == "NPU":
                parent[find(n.index)] = find(j)
    groups: dict[int, list[int]] = {}
    for n in nodes:
        if n.device == "NPU":
            groups.setdefault(find(n.index), []).append(n.index)
    return sorted(groups.values(), key=lambda g: g[0])
