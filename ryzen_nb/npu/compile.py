"""``ryzen_nb.npu.compile(model, target="STX")``: what the Vitis AI EP would do with a model.

>>> program = ryzen_nb.npu.compile("model_xint8.onnx", target="PHX")        # doctest: +SKIP
>>> print(program.summary())                                                # doctest: +SKIP
CPU 2, NPU 398 operators, 1 NPU subgraphs
>>> program.npu_share                                                       # doctest: +SKIP
0.995
>>> program.write_report("vitisai_ep_report.json")                          # doctest: +SKIP

:attr:`NPUProgram.npu_share` is *the* share of a model on the NPU: the EP log, the compile report,
``ryzen-nb emulate``, the partition view, the JupyterLab viewer and ``compare()`` all read it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx

from ryzen_nb.errors import UnknownNameError
from ryzen_nb.graph.index import ModelIndex
from ryzen_nb.graph.io import ModelLike, model_inputs, model_path_of, write_atomic
from ryzen_nb.npu.partition import NodeAssignment, PartitionOptions, partition
from ryzen_nb.spec.targets import DEFAULT_TARGET, Target, get_target

__all__ = ["NPUProgram", "compile"]


@dataclass
class NPUProgram:
    """A model as the NPU would run it: every node's device, precision and (for the CPU) reason."""

    index: ModelIndex = field(repr=False)  #: the model compiled, loaded and indexed once
    target: Target
    nodes: list[NodeAssignment] = field(repr=False)
    subgraphs: list[list[int]] = field(repr=False)
    compilers: dict[str, str] = field(repr=False)
    #: the file the model was read from, if any: write_report never writes over it (or its external data)
    source: Path | None = field(default=None, repr=False)

    @property
    def model(self) -> onnx.ModelProto:
        return self.index.model

    # -- counts ------------------------------------------------------------------------------------
    @property
    def npu_nodes(self) -> list[NodeAssignment]:
        return [n for n in self.nodes if n.device == "NPU"]

    @property
    def cpu_nodes(self) -> list[NodeAssignment]:
        return [n for n in self.nodes if n.device == "CPU"]

    @property
    def npu_operators(self) -> int:
        """Nodes on the NPU, counted as the Vitis AI EP's log counts them: quantizer nodes included."""
        return len(self.npu_nodes)

    @property
    def cpu_operators(self) -> int:
        """Nodes on the CPU, counted as the Vitis AI EP's log counts them: quantizer nodes included."""
        return len(self.cpu_nodes)

    @property
    def npu_share(self) -> float:
        """The share of the model on the NPU, from 0 to 1: NPU nodes over all nodes of the graph.

        Counted as the Vitis AI EP's log counts operators (docs/npu-compilers.md#compile-report):
        every node, QuantizeLinear/DequantizeLinear included, so it matches the percentage the EP
        prints and ryzen-nb mirrors in :meth:`ep_log`. Every view of the share reads this property.
        """
        total = len(self.nodes)
        return self.npu_operators / total if total else 0.0

    @property
    def precisions(self) -> dict[str, int]:
        """NPU operators per precision (quantizer nodes excluded)."""
        return dict(Counter(n.precision for n in self.npu_nodes if not n.quantizer))

    def cpu_subgraph_count(self) -> int:
        """Connected groups of CPU nodes, counted as the EP log does."""
        cpu = {n.index for n in self.cpu_nodes}
        by_output = {o: n.index for n in self.nodes for o in n.outputs}
        parent = {i: i for i in cpu}

        def find(x: int) -> int:
            while parent[x] != x:
                x = parent[x]
            return x

        for i in cpu:
            for t in self.nodes[i].inputs:
                j = by_output.get(t)
                if j in cpu:
                    parent[find(i)] = find(j)
        return len({find(i) for i in cpu})

    # -- what the EP prints ------------------------------------------------------------------------
    def summary(self) -> str:
        """One line: "CPU n, NPU m operators, k NPU subgraphs"."""
        return f"CPU {self.cpu_operators}, NPU {self.npu_operators} operators, {len(self.subgraphs)} NPU subgraphs"

    def ep_log(self) -> str:
        """The two lines the Vitis AI EP prints when it compiles a model (docs/npu-compilers.md#compile-report)."""
        cpu, npu, pct = self.cpu_operators, self.npu_operators, 100.0 * self.npu_share
        k = len(self.subgraphs)
        return (f"[Vitis AI EP] No. of Operators :   CPU {cpu:>5}    NPU {npu:>5}  {pct:.2f}%\n"
                f"[Vitis AI EP] No. of Subgraphs :   CPU {self.cpu_subgraph_count():>5}    NPU {k:>5} "
                f"Actually running on NPU {k:>5}")

    def cpu_reasons(self) -> Any:
        """pandas DataFrame of the CPU operators (quantizer nodes excluded) and why."""
        import pandas as pd

        rows = [{"node": n.name, "op": n.op_type, "precision": n.precision, "reason": n.reason}
                for n in self.cpu_nodes if not n.quantizer]
        return pd.DataFrame(rows, columns=["node", "op", "precision", "reason"])

    def table(self) -> Any:
        """pandas DataFrame: one row per node (device, precision, subgraph, reason)."""
        import pandas as pd

        return pd.DataFrame([{
            "node": n.name, "op": (f"{n.domain}:" if n.domain else "") + n.op_type, "device": n.device,
            "precision": n.precision, "subgraph": n.subgraph, "reason": n.reason, "quantizer": n.quantizer,
        } for n in self.nodes])

    # -- vitisai_ep_report.json ----------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        """The compile report in the ``vitisai_ep_report.json`` schema (VOE ``StatProto``,
        docs/npu-compilers.md#compile-report), plus a ``ryzen_nb`` section: the target, the compilers
        used, the NPU operators per precision and :attr:`npu_share`."""
        def op_name(n: NodeAssignment) -> str:
            return f"{n.domain}::{n.op_type}"

        def device_stat(name: str, members: list[NodeAssignment]) -> dict[str, Any]:
            return {"name": name, "nodeNum": len(members), "supportedOpType": sorted({op_name(n) for n in members})}

        shapes = []
        inferred = self.index.inferred.graph
        for vi in list(inferred.input) + list(inferred.value_info) + list(inferred.output):
            dims = vi.type.tensor_type.shape.dim
            unknown = any(not d.HasField("dim_value") for d in dims)
            shapes.append({"name": vi.name, "shape": [str(d.dim_value) for d in dims if d.HasField("dim_value")],
                           "isScalar": len(dims) == 0, "isUnknown": unknown})
        return {
            "deviceStat": [device_stat("all", self.nodes), device_stat("CPU", self.cpu_nodes),
                           device_stat("NPU", self.npu_nodes)],
            "nodeStat": [{"output": n.outputs, "input": [i for i in n.inputs if i], "opDomain": n.domain,
                          "opType": n.op_type, "comment": n.reason or n.precision, "device": n.device}
                         for n in self.nodes],
            "shapeInfo": shapes,
            "subgraphStat": [{"device": "CPU", "count": self.cpu_subgraph_count()},
                             {"device": "NPU", "count": len(self.subgraphs)}],
            "ryzen_nb": {"target": self.target.name, "compilers": self.compilers, "precisions": self.precisions,
                         "npu_share": self.npu_share,
                         "note": "estimated by ryzen-nb's emulator from the published rules "
                                 "(docs/npu-operators.md#how-ryzen-nb-partitions, A9)"},
        }

    def write_report(self, path: str | Path) -> Path:
        """Write :meth:`report` as JSON (atomically), e.g. to ``vitisai_ep_report.json``; a path that
        is the compiled model (or its external data), a folder or under a file is an error."""
        protect = model_inputs(self.source, "compiled model") if self.source else []
        return write_atomic(path, json.dumps(self.report(), indent=2) + "\n", protect=protect, what="report path")

    def __repr__(self) -> str:
        p = ", ".join(f"{k} {v}" for k, v in sorted(self.precisions.items()))
        return f"<NPUProgram {self.target.name}: {self.summary()}{' (' + p + ')' if p else ''}>"

    def _repr_html_(self) -> str:
        from html import escape

        reasons = self.cpu_reasons()
        boundary = sum(n.quantizer for n in self.cpu_nodes)
        all_on_npu = (f"<p>Every operator of the model runs on the NPU; the {boundary} CPU operator(s) are quantizer "
                      "nodes where data enters or leaves it.</p>" if boundary else "<p>Every operator runs on the NPU.</p>")
        body = reasons.head(50).to_html(index=False) if len(reasons) else all_on_npu
        return (f"<div><b>{escape(self.target.label)}</b>: {escape(self.summary())}<pre>{escape(self.ep_log())}</pre>"
                f"<details><summary>CPU operators and why</summary>{body}</details></div>")


def compile(model: ModelLike | ModelIndex, target: str | Target = DEFAULT_TARGET, **options: Any) -> NPUProgram:  # noqa: A001
    """Partition ``model`` for ``target`` (PHX, HPT, STX, KRK, STXH); ``options`` are
    :class:`~ryzen_nb.npu.partition.PartitionOptions` fields (e.g. ``compiler="X1"``)."""
    t = get_target(target)
    valid = PartitionOptions.__dataclass_fields__
    for key in options:
        if key not in valid:
            raise UnknownNameError("compile option", key, list(valid))
    index = ModelIndex.of(model)
    nodes, subgraphs, compilers = partition(index, t, PartitionOptions(**options))
    return NPUProgram(index, t, nodes, subgraphs, compilers,
                      source=None if isinstance(model, ModelIndex) else model_path_of(model))
