"""From a QDQ model to an emulated model that plain onnxruntime runs with NPU arithmetic.

:func:`mark` rewrites the compiled model into a *marked* graph: each
:class:`~ryzen_nb.npu.kernels.Kernel` becomes one ``ryzen_nb.npu:Kernel`` node (attribute ``kid``)
reading what the kernel reads (integer codes, or float tensors) and writing what it writes; the
other NPU operators of float models get bf16 rounding of their inputs and outputs. :func:`lower`
then replaces every marker with the kernel's own lowering (:meth:`Kernel.lower`: ConvInteger /
MatMulInteger, exact float32 MACs, int64 or float64 requantisation...), so onnxruntime executes it
at native speed, and :func:`~ryzen_nb.npu.code_passes.rewrite_codes` holds the codes between kernels
with fewer passes over each tensor (:func:`~ryzen_nb.npu.bf16_passes.drop_bf16_round_trips` the bf16
values between float kernels). The numpy reference runs the same marked graph in onnx's ReferenceEvaluator with
the marker computed by :meth:`Kernel.reference` (:meth:`~ryzen_nb.npu.NPUSession.reference_run`).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ryzen_nb.graph.attributes import attribute
from ryzen_nb.graph.builder import GraphBuilder
from ryzen_nb.graph.prepare import constants_to_initializers
from ryzen_nb.npu.bf16_passes import drop_bf16_round_trips
from ryzen_nb.npu.code_passes import CENTRED_CODES, FLOAT_CODES, code_sources, restored_codes, rewrite_codes
from ryzen_nb.npu.compile import NPUProgram
from ryzen_nb.npu.kernels import Kernel
from ryzen_nb.npu.kernels.lowering import rename_output
from ryzen_nb.npu.kernels.nonlinear import evaluate_in_bf16

__all__ = ["CENTRED_CODES", "FLOAT_CODES", "MARKER_DOMAIN", "code_sources", "lower", "mark", "marker_kernel",
           "restored_codes"]

MARKER_DOMAIN = "ryzen_nb.npu"
#: element types an NPU operator's output keeps as they are (shape arithmetic); an unknown type is float
_NOT_FLOAT = frozenset({onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.INT16, onnx.TensorProto.INT8,
                        onnx.TensorProto.UINT64, onnx.TensorProto.UINT32, onnx.TensorProto.UINT16, onnx.TensorProto.UINT8,
                        onnx.TensorProto.BOOL, onnx.TensorProto.STRING})
#: precisions whose NPU operators compute in bf16 (VAIML)
_FLOAT_PRECISIONS = ("BF16", "BFP16", "MX")


def marker_kernel(node: onnx.NodeProto, kernels: list[Kernel]) -> Kernel:
    """The kernel a marker node stands for."""
    return kernels[int(attribute(node, "kid"))]


# -- the marked graph ---------------------------------------------------------------------------------------
def mark(program: NPUProgram, kernels: list[Kernel]) -> onnx.ModelProto:
    """The compiled model with one marker node per kernel, in place of the nodes it stands for."""
    index = program.index
    m = onnx.ModelProto()
    m.CopyFrom(index.model)
    replaced_by = {index.index_of(n): kid for kid, k in enumerate(kernels) for n in k.replaced}
    float_npu = {a.index for a in program.nodes
                 if a.device == "NPU" and not a.quantizer and a.precision in _FLOAT_PRECISIONS}
    types = index.element_types
    b = GraphBuilder(prefix="npu")
    nodes: list[onnx.NodeProto] = []
    emitted: set[int] = set()
    for i, node in enumerate(index.nodes):
        kid = replaced_by.get(i)
        if kid is not None:
            if kid not in emitted:  # the marker goes where the first node it stands for was
                emitted.add(kid)
                nodes += _marker(program, kernels, kid, replaced_by, m)
        elif i in float_npu:
            # VAIML computes in bf16: bf16 in, bf16 out
            start = len(b.nodes)
            outputs = evaluate_in_bf16(b, node, node.input, [types.get(t) == onnx.TensorProto.FLOAT for t in node.input],
                                       [types.get(t) not in _NOT_FLOAT for t in node.output])
            for raw, name in zip(outputs, node.output):
                if name:
                    rename_output(b.nodes, raw, name)
            nodes += b.nodes[start:]
        else:
            nodes.append(node)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    if not any(o.domain == MARKER_DOMAIN for o in m.opset_import):
        m.opset_import.append(helper.make_opsetid(MARKER_DOMAIN, 1))
    del m.graph.value_info[:]
    return m


def _marker(program: NPUProgram, kernels: list[Kernel], kid: int, replaced_by: dict[int, int],
            m: onnx.ModelProto) -> list[onnx.NodeProto]:
    """The marker node of kernel ``kid``, and a DequantizeLinear for the readers of its float
    result outside it (an integer kernel's output is codes; the graph around may want values)."""
    k = kernels[kid]
    index = program.index
    nodes = [helper.make_node("Kernel", k.marker_inputs(), k.marker_outputs(), name=f"npu_kernel_{kid}_{k.node.name}",
                              domain=MARKER_DOMAIN, kid=kid)]
    float_out = k.float_output
    if k.output is not None and float_out:
        outside = [c for c in index.consumers.get(float_out, []) if replaced_by.get(index.index_of(c)) != kid]
        if outside or float_out in index.graph_outputs:
            s = numpy_helper.from_array(np.asarray(k.output.scale, np.float32), f"{float_out}_npu_scale")
            z = numpy_helper.from_array(np.asarray(k.output.zero_point), f"{float_out}_npu_zp")
            m.graph.initializer.extend([s, z])
            nodes.append(helper.make_node("DequantizeLinear", [k.output.codes, s.name, z.name], [float_out],
                                          name=f"{float_out}_npu_dq"))
    return nodes


# -- the fast path -------------------------------------------------------------------------------------------------
def lower(marked: onnx.ModelProto, kernels: list[Kernel], rounding: str = "half_up",
          accumulation: str = "exact") -> onnx.ModelProto:
    """Replace every marker with its kernel's lowering to standard ONNX (onnxruntime runs the result).

    ``rounding``: the XINT8 requantisation's ties rule ("half_up" = DPU_ROUND, or "half_even").
    ``accumulation`` of the float (BF16/BFP16/MX) MAC kernels: "exact" sums the bf16 products in
    float64 (order-independent, what the reference computes); "fp32" in onnxruntime's float32 Conv
    / MatMul, as the NPU's FP32 accumulators do in an order of their own — at FP32 speed, within one
    bf16 unit of "exact" where a rounding flips."""
    m = onnx.ModelProto()
    m.CopyFrom(marked)
    nodes: list[onnx.NodeProto] = []
    for node in marked.graph.node:
        if node.domain != MARKER_DOMAIN:
            nodes.append(node)
            continue
        kid = int(attribute(node, "kid"))
        b = GraphBuilder(prefix=f"npu_k{kid}")
        outputs = kernels[kid].lower(b, list(node.input), rounding=rounding, accumulation=accumulation)
        for y, name in zip(outputs, node.output):
            if name:
                rename_output(b.nodes, y, name)
        nodes.extend(b.nodes)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    keep = [o for o in m.opset_import if o.domain != MARKER_DOMAIN]
    del m.opset_import[:]
    m.opset_import.extend(keep)
    constants_to_initializers(m)
    rewrite_codes(m)
    drop_bf16_round_trips(m)
    return m
