"""``ryzen_nb.npu.divergence(model, data, target=...)``: does the NPU compute what the CPU simulation says?

A quantized model is usually judged by running its QDQ graph in onnxruntime on the CPU. The NPU
does not compute that graph: it requantizes with integer shifts and its own rounding, evaluates
non-linear operators in bf16, divides average pools by k/2**n... Usually the difference is noise;
sometimes it is not (published Ryzen AI logs show a MobileNetV2 XINT8 at 61.8% top-1 in the CPU
simulation and 0.1% on the NPU). This runs both — plain onnxruntime on the QDQ model, and
:class:`~ryzen_nb.npu.NPUSession` — on the same inputs and flags every output that differs beyond
a threshold, and (``per_layer=True``) finds the first layer where they part::

    report = ryzen_nb.npu.divergence("model_xint8.onnx", images, target="PHX")
    report.ok, report.table, report.first_divergent_layer
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from ryzen_nb.calibration.readers import make_reader
from ryzen_nb.calibration.validation import check_feed
from ryzen_nb.errors import CalibrationDataError
from ryzen_nb.graph.index import ModelIndex
from ryzen_nb.graph.io import ModelLike
from ryzen_nb.graph.prepare import input_specs, ort_session, run_with_outputs
from ryzen_nb.metrics import cosine, max_abs
from ryzen_nb.npu.session import NPUSession
from ryzen_nb.spec.targets import Target

__all__ = ["DivergenceReport", "divergence"]


@dataclass
class DivergenceReport:
    """Per-output comparison of the NPU emulation with the CPU QDQ simulation."""

    target: str
    samples: int
    table: Any = field(repr=False)  #: pandas DataFrame, one row per model output
    layers: Any = field(default=None, repr=False)  #: per-tensor comparison on the first sample, if asked
    cosine_threshold: float = 0.99
    agreement_threshold: float = 0.9

    @property
    def flagged(self) -> list[str]:
        """Outputs whose NPU result parts from the CPU simulation beyond the thresholds."""
        return list(self.table.loc[self.table.diverges, "output"])

    @property
    def ok(self) -> bool:
        return not self.flagged

    @property
    def first_divergent_layer(self) -> str | None:
        """The first tensor (in graph order) whose cosine falls below the threshold, if compared."""
        if self.layers is None:
            return None
        bad = self.layers[self.layers.cosine < self.cosine_threshold]
        return None if bad.empty else str(bad.iloc[0].tensor)

    def summary(self) -> str:
        head = (f"NPU emulation ({self.target}) vs CPU QDQ simulation on {self.samples} sample(s): "
                + ("no output diverges" if self.ok else f"{len(self.flagged)} output(s) diverge: {', '.join(self.flagged)}"))
        lines = [head]
        for row in self.table.itertuples():
            agree = f", top-1 agreement {row.top1_agreement:.1%}" if not np.isnan(row.top1_agreement) else ""
            lines.append(f"  {row.output}: cosine mean {row.cosine_mean:.5f} (min {row.cosine_min:.5f}), "
                         f"max |diff| {row.max_abs_diff:.4g}{agree}{'  <-- diverges' if row.diverges else ''}")
        if not self.ok:
            layer = self.first_divergent_layer
            lines.append("  The CPU simulation over-states what the NPU will deliver."
                         + (f" The first layer that parts is {layer!r}." if layer else
                            " divergence(..., per_layer=True) finds the first layer that parts."))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<DivergenceReport {self.target}: {'ok' if self.ok else 'DIVERGES: ' + ', '.join(self.flagged)}>"


def divergence(model: ModelLike | ModelIndex, data: Any, target: str | Target = "STX", *, limit: int | None = 32,
               cosine_threshold: float = 0.99, agreement_threshold: float = 0.9, per_layer: bool = False,
               rounding: str = "half_up", session: NPUSession | None = None) -> DivergenceReport:
    """Compare the NPU emulation of ``model`` with plain onnxruntime, sample by sample.

    ``data``: inputs as for calibration (an array, a list of feed dicts, a folder, a reader);
    ``limit`` samples at most. An output diverges when its mean cosine similarity falls below
    ``cosine_threshold`` or, for outputs of class scores (shape ``[C]`` or ``[N, C]``), when the top-1
    class agrees on fewer than ``agreement_threshold`` of the samples. ``per_layer`` also compares
    every intermediate tensor both graphs hold, on the first sample. The model is loaded and indexed
    once (a :class:`~ryzen_nb.graph.index.ModelIndex` is used as it is): the emulator, its compile
    step and the CPU simulation share it.
    """
    import pandas as pd

    index = ModelIndex.of(model)
    m = index.model
    npu = session or NPUSession(index, target, rounding=rounding)
    cpu = ort_session(m)
    specs = input_specs(m)
    reader = make_reader(data, input_names=[s.name for s in specs], input_shapes={s.name: s.shape for s in specs},
                         limit=limit)
    outputs = [o.name for o in m.graph.output]
    ref: dict[str, list[np.ndarray]] = {o: [] for o in outputs}
    emu: dict[str, list[np.ndarray]] = {o: [] for o in outputs}
    first: Mapping[str, np.ndarray] | None = None
    count = 0
    while (feed := reader.get_next()) is not None:
        check_feed(feed, specs, count)
        if first is None:
            first = feed
        for name, a, b in zip(outputs, cpu.run(outputs, feed), npu.run(outputs, feed)):
            ref[name].append(np.asarray(a, np.float64))
            emu[name].append(np.asarray(b, np.float64))
        count += 1
    if not count:
        raise CalibrationDataError("divergence() needs at least one input sample; the data holds none.")

    rows = []
    for name in outputs:
        cosines = [cosine(a, b) for a, b in zip(ref[name], emu[name])]
        # class scores are a vector per sample ([C] or [N, C]); the last axis of a feature map or a
        # hidden state is not a class axis, and its "top-1" would flag agreeing outputs as diverging
        classes = ref[name][0].shape[-1] if ref[name][0].ndim in (1, 2) else 1
        if classes > 1:
            agree = float(np.mean([np.array_equal(a.reshape(-1, classes).argmax(-1), b.reshape(-1, classes).argmax(-1))
                                   for a, b in zip(ref[name], emu[name])]))
        else:
            agree = float("nan")
        diverges = float(np.mean(cosines)) < cosine_threshold or (classes > 1 and agree < agreement_threshold)
        rows.append({"output": name, "cosine_mean": float(np.mean(cosines)), "cosine_min": float(np.min(cosines)),
                     "max_abs_diff": max(max_abs(a, b) for a, b in zip(ref[name], emu[name])),
                     "top1_agreement": agree, "diverges": diverges})
    layers = _per_layer(m, npu, first) if per_layer and first is not None else None
    t = npu.target
    return DivergenceReport(target=t.name, samples=count, table=pd.DataFrame(rows), layers=layers,
                            cosine_threshold=cosine_threshold, agreement_threshold=agreement_threshold)


def _per_layer(model: onnx.ModelProto, npu: NPUSession, feed: Mapping[str, np.ndarray]) -> Any:
    """Cosine and max |diff| of every float tensor that both graphs compute, in graph order."""
    import pandas as pd

    order = [o for node in model.graph.node for o in node.output if o]
    emulated = {o for node in npu.emulated.graph.node for o in node.output}
    common = [t for t in order if t in emulated]
    cpu_values = run_with_outputs(model, common, feed)
    npu_values = run_with_outputs(npu.emulated, common, feed)
    rows = []
    for t in common:
        a, b = cpu_values.get(t), npu_values.get(t)
        if a is None or b is None or a.dtype.kind != "f" or a.shape != b.shape:
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        rows.append({"tensor": t, "cosine": cosine(a64, b64), "max_abs_diff": max_abs(a64, b64)})
    return pd.DataFrame(rows, columns=["tensor", "cosine", "max_abs_diff"])

