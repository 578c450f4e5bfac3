"""``ryzen_nb.npu.estimate_latency(model, target="STX")``: how long one inference would take.

An *estimate* from a roofline model (docs/npu-latency.md#the-model), never a measurement. Per operator:

* on the NPU, ``max(compute, memory)``: compute = MACs / (tiles x MACs per cycle for the
  precision x clock x efficiency) for Conv/Gemm/MatMul, elements / (tiles x vector lanes x clock)
  for the rest; memory = the bytes it moves to or from DDR / DDR bandwidth. Weights stream from
  DDR once per inference unless all of a subgraph's weights fit in the memory tiles (then they
  stay resident); activations spill to DDR only when an operator's input and output do not fit;
* on the CPU, float32 MACs at the host's measured Conv throughput and other operators as
  memory-bound passes.

Per NPU subgraph: one dispatch plus the transfers of its inputs and outputs; per CPU/NPU
boundary: the CPU-side conversion of the tensor; per ``run()``: a fixed host overhead. Every
figure that AMD does not publish is a field of :class:`LatencyAssumptions`, named after the
assumption register (docs/npu-assumptions.md), so a user can vary it::

    est = ryzen_nb.npu.estimate_latency("model_xint8.onnx", "STX")
    est.total_ms, est.per_op, est.per_partition
    ryzen_nb.npu.estimate_latency(model, "STX", assumptions=LatencyAssumptions(mac_efficiency=0.5))

Calibration (A20): with the defaults, ResNet50 XINT8 on Strix (X2, 32 tiles) costs 1.11 ms of NPU
work, dispatch and transfers, well below the 3.6-3.8 ms per inference the model is fitted to
(docs/npu-latency.md#calibration-and-the-host-term; docs/npu-latency.md#sanity-check shows the same
gap); the difference is kept as an explicit per-run host term, ``host_ms``, instead of being hidden
in the efficiency factors.

The MAC data type and the bytes per element of each precision come from
:mod:`ryzen_nb.spec.precisions`, the MAC rates and clocks from the target.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from ryzen_nb.graph.attributes import attribute
from ryzen_nb.graph.io import ModelLike
from ryzen_nb.npu.compile import NPUProgram, compile
from ryzen_nb.spec.operators import MAC_OPS
from ryzen_nb.spec.precisions import PRECISIONS, Precision
from ryzen_nb.spec.targets import DEFAULT_TARGET, Target

__all__ = ["LatencyAssumptions", "LatencyEstimate", "estimate_latency"]

#: operators that only relabel memory: no time on either device
FREE_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Constant"}


def _npu_format(precision: str) -> Precision:
    """The precision record whose MAC data type and element sizes an NPU operator of ``precision``
    uses: its own for the NPU's precisions, BF16's for what the NPU computes in bf16 (MX, FP32) and
    for anything without NPU kernels (the partition never puts such an operator on the NPU)."""
    record = PRECISIONS.get(precision)
    if record is not None:
        record = PRECISIONS[record.npu_precision]
        if record.mac_dtype is not None:
            return record
    return PRECISIONS["BF16"]


@dataclass(frozen=True)
class LatencyAssumptions:
    """The latency model's free parameters (docs/npu-latency.md#the-model, docs/npu-assumptions.md).
    Defaults are the register's proposals."""

    #: A7: fraction of peak MAC rate reached by Conv/Gemm/MatMul kernels
    mac_efficiency: float = 0.35
    #: A7: ... by depthwise convolutions (group == channels)
    depthwise_efficiency: float = 0.10
    #: A7: int8 vector lanes per tile per cycle for non-MAC operators (bf16: half)
    vector_lanes_int8: int = 64
    #: A6: use the pipelined command time (17 us) instead of the full round trip (target.dispatch_us)
    pipelined_dispatch: bool = False
    #: A19: effective bandwidth (GB/s) of CPU-side conversions at CPU/NPU boundaries
    boundary_gbps: float = 10.0
    #: A19: Ryzen AI >= 1.6 transforms layouts on the NPU; False adds a CPU layout pass per boundary
    layout_on_npu: bool = True
    #: host CPU float32 MAC throughput (GMAC/s) for operators left on the CPU: ResNet50's 4.1 GMAC
    #: in 10.70 ms on the CPU (P6, docs/npu-hardware.md#published-model-figures) = 383 GMAC/s
    cpu_gmacs: float = 383.0
    #: host CPU bandwidth (GB/s) for other CPU operators (memory-bound passes; A19's figure)
    cpu_gbps: float = 10.0
    #: A20: fixed host overhead per run() (session, input/output copies, EP bookkeeping), fitted:
    #: ResNet50 XINT8 on STX is 1.11 ms without it, published 3.6-3.8 ms (Ryzen AI 1.6/1.7) -> 3.7 - 1.11
    host_ms: float = 2.6
    #: A15: run BF16 matmuls through the BFP16 path on XDNA2 (mlir-aie's emulation option)
    bf16_as_bfp16: bool = False


@dataclass
class LatencyEstimate:
    """The estimate: a total, per-operator and per-partition tables, and what it assumed."""

    target: Target
    total_ms: float
    per_op: Any = field(repr=False)  #: pandas DataFrame, one row per operator
    per_partition: Any = field(repr=False)  #: pandas DataFrame, one row per NPU subgraph / CPU group
    breakdown_ms: dict[str, float] = field(default_factory=dict)
    assumptions: LatencyAssumptions = field(default_factory=LatencyAssumptions)

    def __repr__(self) -> str:
        parts = ", ".join(f"{k} {v:.3f}" for k, v in self.breakdown_ms.items() if v)
        return (f"<LatencyEstimate {self.target.name}: {self.total_ms:.3f} ms per inference (estimate: {parts} ms; "
                f"roofline model of docs/npu-latency.md, assumptions in .assumptions)>")

    def summary(self) -> str:
        lines = [f"Estimated latency on {self.target.label} ({self.target.name}): {self.total_ms:.2f} ms per inference",
                 "  (an estimate from a roofline model, not a measurement)"]
        for key, value in self.breakdown_ms.items():
            lines.append(f"  {key:<22} {value:8.3f} ms")
        return "\n".join(lines)


def estimate_latency(model: ModelLike | NPUProgram, target: str | Target = DEFAULT_TARGET, *,
                     assumptions: LatencyAssumptions | None = None, **compile_options: Any) -> LatencyEstimate:
    """Estimate one inference of ``model`` (a path, ModelProto, or a compiled :class:`NPUProgram`)."""
    import pandas as pd

    a = assumptions or LatencyAssumptions()
    program = model if isinstance(model, NPUProgram) else compile(model, target, **compile_options)
    t = program.target
    graph = program.index.graph
    shapes = program.index.shapes
    inits = set(program.index.initializer_names)
    # weights: initializers and what quantizers compute from them alone (a QDQ model's weight reaches
    # its operator through a DequantizeLinear); they stream as weights, never as activations
    for n in program.nodes:
        if n.quantizer and all(i in inits for i in n.inputs if i):
            inits.update(o for o in n.outputs if o)
    clock_hz = t.clock_ghz * 1e9
    ddr_bps = t.ddr_gbps * 1e9
    l2_bytes = t.l2_kib * 1024 * (t.columns + (1 if t.generation == "XDNA" else 0))

    def elements(name: str) -> int:
        dims = shapes.get(name)
        return int(np.prod([d or 1 for d in dims])) if dims is not None else 0

    # weight bytes per subgraph, to decide residency in the memory tiles
    resident: dict[int, bool] = {}
    for k in range(len(program.subgraphs)):
        total = sum(_weight_elements(graph.node[n.index], inits, elements) * _npu_format(n.precision).weight_bytes
                    for n in program.nodes if n.subgraph == k and not n.quantizer)
        resident[k] = total <= l2_bytes / 2  # the other half holds activation buffers

    rows = []
    for n in program.nodes:
        node = graph.node[n.index]
        row = {"node": n.name, "op": n.op_type, "device": n.device, "precision": n.precision, "subgraph": n.subgraph,
               "macs": 0, "ddr_bytes": 0.0, "compute_us": 0.0, "memory_us": 0.0, "time_us": 0.0, "bound": "free"}
        rows.append(row)
        out_elems = sum(elements(o) for o in n.outputs if o)
        in_elems = sum(elements(i) for i in n.inputs if i and i not in inits)
        macs = _macs(node, shapes)
        row["macs"] = macs
        if n.quantizer:
            if n.device == "CPU" and n.op_type != "Constant":  # a conversion at a CPU/NPU boundary
                row["memory_us"] = (in_elems * 4 + out_elems) / (a.boundary_gbps * 1e9) * 1e6
                row["time_us"], row["bound"] = row["memory_us"], "boundary"
            continue  # on the NPU, quantizers are part of the kernels around them
        if n.op_type in FREE_OPS:
            continue
        if n.device == "CPU":
            row["compute_us"] = macs / (a.cpu_gmacs * 1e9) * 1e6
            row["memory_us"] = (in_elems + out_elems) * 4 / (a.cpu_gbps * 1e9) * 1e6
            row["time_us"] = max(row["compute_us"], row["memory_us"])
            row["bound"] = "cpu"
            continue
        precision = n.precision
        if precision == "BF16" and a.bf16_as_bfp16 and "bfp16" in t.macs_per_cycle:
            precision = "BFP16"
        tiles = t.tiles_for(n.precision)
        fmt = _npu_format(precision)
        act_bytes = fmt.act_bytes
        if n.op_type in MAC_OPS and macs:
            depthwise = n.op_type == "Conv" and attribute(node, "group", 1) > 1 and attribute(node, "group", 1) == _channels(node, shapes)
            eff = a.depthwise_efficiency if depthwise else a.mac_efficiency
            rate = tiles * t.macs_per_cycle.get(fmt.mac_dtype, 0) * clock_hz * eff
            row["compute_us"] = macs / rate * 1e6 if rate else float("inf")
        else:
            lanes = a.vector_lanes_int8 / max(act_bytes, 1.0)
            row["compute_us"] = max(in_elems, out_elems) / (tiles * lanes * clock_hz) * 1e6
        ddr = 0.0
        if not resident.get(n.subgraph, False):
            ddr += _weight_elements(node, inits, elements) * fmt.weight_bytes
        if (in_elems + out_elems) * act_bytes > l2_bytes:
            ddr += (in_elems + out_elems) * act_bytes  # spilled to DDR and read back
        row["ddr_bytes"] = ddr
        row["memory_us"] = ddr / ddr_bps * 1e6
        row["time_us"] = max(row["compute_us"], row["memory_us"])
        row["bound"] = "compute" if row["compute_us"] >= row["memory_us"] else "memory"
    per_op = pd.DataFrame(rows)

    # per NPU subgraph: dispatch + transfers of the tensors that cross its boundary
    producer = {o: n.index for n in program.nodes for o in n.outputs}
    consumers: dict[str, list[int]] = {}
    for n in program.nodes:
        for i in n.inputs:
            consumers.setdefault(i, []).append(n.index)
    graph_outputs = {o.name for o in graph.output}
    dispatch_us = 17.0 if a.pipelined_dispatch else t.dispatch_us
    partitions = []
    for k, members in enumerate(program.subgraphs):
        inside = set(members)
        ins = {i for m in members for i in program.nodes[m].inputs
               if i and i not in inits and producer.get(i) not in inside}
        outs = {o for m in members for o in program.nodes[m].outputs
                if o and (o in graph_outputs or any(c not in inside for c in consumers.get(o, [])))}
        precision = next((program.nodes[m].precision for m in members if not program.nodes[m].quantizer), "XINT8")
        xfer_bytes = sum(elements(x) for x in ins | outs) * _npu_format(precision).act_bytes
        transfer_us = xfer_bytes / ddr_bps * 1e6
        layout_us = 0.0 if a.layout_on_npu else sum(elements(x) for x in ins | outs) * 4 / (a.boundary_gbps * 1e9) * 1e6
        ops_us = float(per_op.loc[per_op.subgraph == k, "time_us"].sum())
        partitions.append({"partition": f"NPU subgraph {k}", "device": "NPU", "operators": len(members),
                           "operators_us": ops_us, "dispatch_us": dispatch_us, "transfer_us": transfer_us + layout_us,
                           "total_us": ops_us + dispatch_us + transfer_us + layout_us})
    cpu_rows = per_op[per_op.device == "CPU"]
    if len(cpu_rows):
        partitions.append({"partition": "CPU", "device": "CPU", "operators": len(cpu_rows),
                           "operators_us": float(cpu_rows.time_us.sum()), "dispatch_us": 0.0, "transfer_us": 0.0,
                           "total_us": float(cpu_rows.time_us.sum())})
    per_partition = pd.DataFrame(partitions, columns=["partition", "device", "operators", "operators_us",
                                                      "dispatch_us", "transfer_us", "total_us"])

    npu = per_op[per_op.device == "NPU"]
    breakdown = {
        "NPU compute": float(npu.loc[npu.bound == "compute", "time_us"].sum()) / 1e3,
        "NPU memory (DDR)": float(npu.loc[npu.bound == "memory", "time_us"].sum()) / 1e3,
        "dispatch": float(per_partition.loc[per_partition.device == "NPU", "dispatch_us"].sum()) / 1e3,
        "transfers": float(per_partition.loc[per_partition.device == "NPU", "transfer_us"].sum()) / 1e3,
        "CPU operators": float(per_op.loc[per_op.bound == "cpu", "time_us"].sum()) / 1e3,
        "CPU/NPU conversions": float(per_op.loc[per_op.bound == "boundary", "time_us"].sum()) / 1e3,
        "host (per run)": a.host_ms,
    }
    return LatencyEstimate(target=t, total_ms=sum(breakdown.values()), per_op=per_op, per_partition=per_partition,
                           breakdown_ms=breakdown, assumptions=a)



def _channels(node: onnx.NodeProto, shapes: dict[str, list[int | None]]) -> int:
    x = shapes.get(node.input[0]) or [0, 0]
    return int(x[1] or 0) if len(x) > 1 else 0


def _weight_elements(node: onnx.NodeProto, inits: set[str], elements) -> int:
    """Elements of the constant weight feeding a MAC operator (through its DequantizeLinear or
    quantizer, whose input is the constant), 0 for others."""
    if node.op_type not in MAC_OPS or len(node.input) < 2:
        return 0
    return elements(node.input[1])


def _macs(node: onnx.NodeProto, shapes: dict[str, list[int | None]]) -> int:
    """Multiply-accumulates of a Conv / ConvTranspose / Gemm / MatMul from static shapes (0 if unknown)."""
    dims = lambda name: [d or 0 for d in shapes.get(name, [])]  # noqa: E731
    if node.op_type not in MAC_OPS or len(node.input) < 2:
        return 0
    out = dims(node.output[0])
    w = dims(node.input[1])
    if not out or not w or 0 in out or 0 in w:
        return 0
    if node.op_type == "Conv":
        return int(np.prod(out, dtype=np.int64) * np.prod(w[1:], dtype=np.int64))
    if node.op_type == "ConvTranspose":  # weight [C_in, C_out / group, k...]: each input meets C_out/group * k
        x = dims(node.input[0])
        return int(np.prod(x, dtype=np.int64) * np.prod(w[1:], dtype=np.int64)) if x else 0
    a = dims(node.input[0])
    if not a:
        return 0
    k = a[0] if node.op_type == "Gemm" and attribute(node, "transA", 0) else a[-1]
    return int(np.prod(out, dtype=np.int64) * k)
