"""FP32 vs quantized, side by side: :func:`compare` runs every model on the same held-out data and
gathers what the dashboards show.

>>> from ryzen_nb.evaluation import compare
>>> result = compare("model.onnx", {"XINT8": "model_xint8.onnx", "BF16": "model_bf16.onnx"},
...                  images, labels=labels, targets=("PHX", "STX"))          # doctest: +SKIP
>>> result.table                     # one row per model: accuracy, fidelity, size, CPU and NPU latency
>>> result.per_layer                 # SQNR of every quantized tensor against FP32
>>> ryzen_nb.ui.dashboard(result)    # the inline plotly dashboard (a widget)
>>> result.to_html("report.html")    # the same figures and tables, as one static page

What is measured, per model:

* the task metric — with ``labels``: top-1 and top-5 accuracy; without: top-1 agreement with FP32;
  for embedding models (``task="embedding"``): cosine to the FP32 embedding and self-retrieval
  (is a sample's nearest FP32 embedding its own?);
* output fidelity against FP32 — cosine, L2, PSNR, SQNR (means over samples) and top-1 agreement;
* model size; CPU latency in onnxruntime (warm-up, then median and p90 over ``latency_runs``);
* the emulated NPU latency per target (an estimate of :mod:`ryzen_nb.npu`, with its assumptions)
  and the share of operators on the NPU;
* per quantized tensor, the SQNR of its value in the quantized network against the same tensor
  in the FP32 network (so it shows where error enters and how it grows), on a few samples.

Evaluation data must not be the calibration data; :func:`compare` cannot check that, the
calibration wizard and the zoo's splits keep them apart.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ryzen_nb import metrics, npu
from ryzen_nb._html import esc, table_html
from ryzen_nb.calibration.readers import make_reader
from ryzen_nb.calibration.validation import check_feed
from ryzen_nb.errors import CalibrationDataError, ConfigError, UnknownNameError, closest_first
from ryzen_nb.evaluation.report import comparison_figures, comparison_html
from ryzen_nb.evaluation.timing import time_call
from ryzen_nb.graph.batching import SampleRunner
from ryzen_nb.graph.io import check_output, load_model, model_inputs, model_path_of, write_atomic
from ryzen_nb.graph.prepare import input_specs, ort_session
from ryzen_nb.quantization.run import QuantizationSummary
from ryzen_nb.zoo.datasets import Dataset
from ryzen_nb.zoo.models import ZooModel

__all__ = ["Comparison", "compare", "quantized_tensors"]

REFERENCE = "FP32"
TASKS = ("auto", "classification", "embedding")


@dataclass
class _Model:
    name: str
    model: onnx.ModelProto = field(repr=False)
    path: Path | None = None
    summary: Any = None  #: the QuantizationSummary it came from, if given one


@dataclass
class Comparison:
    """What :func:`compare` measured. ``table`` has one row per model (the reference first)."""

    table: Any  #: pandas DataFrame indexed by model name
    per_layer: Any  #: pandas DataFrame: model, tensor, kind, format, sqnr_db, order
    task: str
    targets: tuple[str, ...]
    samples: int
    labels_given: bool
    outputs: dict[str, np.ndarray] = field(repr=False)  #: model -> outputs [samples, ...] (output_index)
    sensitivity: dict[str, Any] = field(default_factory=dict, repr=False)  #: model -> mixed-precision table
    notes: list[str] = field(default_factory=list)
    _models: dict[str, _Model] = field(default_factory=dict, repr=False)
    _feeds: list[dict[str, np.ndarray]] = field(default_factory=list, repr=False)

    @property
    def reference(self) -> str:
        return next(iter(self._models))

    @property
    def models(self) -> list[str]:
        return list(self._models)

    def tensors(self, model: str | None = None) -> list[str]:
        """FP32 tensor names that have a quantized counterpart (in ``model``, or in any variant)."""
        rows = self.per_layer if model is None else self.per_layer[self.per_layer.model == model]
        return list(dict.fromkeys(rows.sort_values("order").tensor))

    def tensor_values(self, tensor: str, model: str, samples: int = 4) -> tuple[np.ndarray, np.ndarray]:
        """The values of FP32 ``tensor`` in the reference and in ``model`` (flattened, over the
        first ``samples`` samples) — for histograms."""
        if model not in self._models or model == self.reference:
            raise ConfigError(f"{model!r} is not one of the quantized models compared: {self.models[1:]}.")
        pairs = {f: q for f, q, _ in quantized_tensors(self._models[self.reference].model, self._models[model].model)}
        if tensor not in pairs:
            raise ConfigError(f"{tensor!r} has no quantized counterpart in {model!r} (closest: "
                              f"{', '.join(closest_first(tensor, list(pairs))[:3])}).")
        ref = _probe(self._models[self.reference].model, [tensor])
        test = _probe(self._models[model].model, [pairs[tensor]])
        a = np.concatenate([ref.run([tensor], f)[0].ravel() for f in self._feeds[:samples]])
        b = np.concatenate([test.run([pairs[tensor]], f)[0].ravel() for f in self._feeds[:samples]])
        return a.astype(np.float64), b.astype(np.float64)

    # -- presentation --------------------------------------------------------------------------------
    def figures(self) -> dict[str, Any]:
        """The dashboard's plotly figures, by name (the interactive dashboard is
        ``ryzen_nb.ui.dashboard(result)``)."""
        return comparison_figures(self)

    def to_html(self, path: str | Path | None = None) -> str:
        """One static HTML page with the tables and figures (plotly.js inlined once, so it opens
        offline); written atomically to ``path`` if given (never over a compared model). Returns the HTML."""
        protect = [i for m in self._models.values() if m.path is not None for i in model_inputs(m.path, f"compared model {m.name!r}")]
        if path is not None:  # checked before the page is built: a bad path fails at once
            check_output(path, protect, "page path")
        page = comparison_html(self)
        if path is not None:
            write_atomic(path, page, protect=protect, what="page path")
        return page

    def to_json(self) -> str:
        return json.dumps({"task": self.task, "samples": self.samples, "targets": list(self.targets),
                           "table": json.loads(self.table.reset_index().to_json(orient="records")),
                           "per_layer": json.loads(self.per_layer.to_json(orient="records")), "notes": self.notes})

    def _repr_html_(self) -> str:
        notes = "".join(f"<li>{esc(n)}</li>" for n in self.notes)
        return (f"<div><b>FP32 vs quantized</b> on {self.samples} held-out samples ({esc(self.task)})"
                f"{table_html(self.table.reset_index())}"
                + (f"<ul>{notes}</ul>" if notes else "") + "</div>")

    def __repr__(self) -> str:
        return (f"<Comparison {', '.join(self.models)}: {self.samples} samples, task {self.task}, "
                f"NPU targets {', '.join(self.targets) or '-'}>")


# ---------------------------------------------------------------------------------------------------
def compare(
    reference: Any,
    variants: Mapping[str, Any] | Sequence[Any],
    data: Any,
    *,
    labels: Sequence[int] | np.ndarray | None = None,
    task: str = "auto",
    targets: Sequence[str] = ("PHX", "STX"),
    latency_runs: int = 20,
    per_layer_samples: int = 4,
    output_index: int = 0,
    max_samples: int | None = None,
    progress: bool = True,
) -> Comparison:
    """Run ``reference`` (FP32) and each variant on held-out ``data``; see the module docstring.

    ``reference`` and the variants: paths, ModelProtos, QuantizationSummary objects (their model,
    and their mixed-precision table if any) or, for the reference, a zoo model (its ``preprocess``
    then prepares ``data``, which may be a zoo Dataset: its labels are used). ``variants`` is a
    dict ``{name: model}`` or a list (named by preset or file). ``data``: held-out samples in any
    form :func:`ryzen_nb.calibration.make_reader` accepts. ``targets``: NPU targets to estimate
    latency for (``()`` for none). ``latency_runs=0`` skips CPU timing. ``per_layer_samples``: samples
    for the per-layer error (it runs every tensor of both models as an output, which costs memory on
    large models: a few hundred MB on a 22M-parameter transformer); ``0`` skips it.
    """
    import pandas as pd
    from tqdm.auto import tqdm

    if task not in TASKS:
        raise UnknownNameError("task", task, TASKS)
    preprocess, zoo_task, reference = _unwrap_zoo(reference)
    if task == "auto" and zoo_task == "sentence-embedding":
        task = "embedding"
    feeds, data_labels = _feeds(reference, data, preprocess, max_samples)
    if labels is None:
        labels = data_labels
    models = [_Model(REFERENCE, load_model(reference), model_path_of(reference))] + _variants(variants)
    if labels is not None:
        labels = np.asarray(labels).reshape(-1)
        if len(labels) != len(feeds):
            raise CalibrationDataError(f"{len(labels)} labels for {len(feeds)} samples: give one label per sample.")

    outputs: dict[str, np.ndarray] = {}
    costs: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    bar = tqdm(models, desc="comparing", unit="model", disable=not progress, leave=False)
    for m in bar:
        bar.set_postfix(model=m.name)
        outputs[m.name], cpu = _run(m.model, feeds, output_index, latency_runs)
        costs[m.name] = {"size_mb": m.model.ByteSize() / 1e6, **cpu, **_npu(m.model, targets, notes, m.name)}
    bar.close()

    ref_out = outputs[REFERENCE]
    if task == "auto":
        task = "classification" if labels is not None or (ref_out.ndim >= 2 and ref_out[0].size > 1) else "embedding"
    # columns: the task metric, fidelity against FP32 (empty for FP32 itself), size and latency
    task_rows = {name: _task_metrics(task, out, ref_out, labels) for name, out in outputs.items()}
    fidelity_rows = {name: _fidelity(ref_out, out) for name, out in outputs.items() if name != REFERENCE}
    table = pd.concat([pd.DataFrame.from_dict(rows, orient="index") for rows in (task_rows, fidelity_rows, costs)],
                      axis=1).loc[list(outputs)]
    table.index.name = "model"

    if per_layer_samples > 0:
        per_layer = _per_layer(models, feeds[:per_layer_samples], progress)
    else:
        per_layer = pd.DataFrame(columns=PER_LAYER_COLUMNS)
        notes.append("Per-layer error skipped (per_layer_samples=0).")
    sensitivity = {m.name: m.summary.reports["mixed_precision"].table for m in models
                   if m.summary is not None and "mixed_precision" in getattr(m.summary, "reports", {})}
    if targets:
        notes.insert(0, f"NPU latency is an estimate of ryzen_nb.npu's model for {', '.join(targets)} (its "
                        "assumptions: ryzen_nb.npu.LatencyAssumptions), not a measurement.")
    if labels is None and task == "classification":
        notes.append("No labels were given: the task metric is top-1 agreement with FP32.")
    return Comparison(table, per_layer, task, tuple(targets), len(feeds), labels is not None, outputs, sensitivity,
                      notes, {m.name: m for m in models}, feeds)


# -- inputs --------------------------------------------------------------------------------------------
def _unwrap_zoo(reference: Any) -> tuple[Any, str | None, Any]:
    """(preprocess or None, zoo task or None, the model as a path/ModelProto)."""
    if isinstance(reference, ZooModel):
        return reference.preprocess, reference.task, reference.path
    return None, None, reference


def _feeds(reference: Any, data: Any, preprocess: Any, limit: int | None) -> tuple[list[dict], np.ndarray | None]:
    labels = None
    if isinstance(data, Dataset):
        if preprocess is None:
            raise ConfigError(f"The zoo data set {data.name!r} holds raw samples: pass its zoo model as the "
                              "reference (it knows their preprocessing), or prepared feeds.")
        samples = list(data.samples)[:limit] if limit else list(data.samples)
        labels = np.asarray(data.labels)[: len(samples)]
        return [preprocess(s) for s in samples], labels

    specs = input_specs(load_model(reference))
    if preprocess is not None and isinstance(data, Iterable) and not isinstance(data, (str, Path, np.ndarray, Mapping)):
        data = [preprocess(s) if not isinstance(s, Mapping) else s for s in data]
    reader = make_reader(data, input_names=[s.name for s in specs], input_shapes={s.name: s.shape for s in specs},
                         limit=limit)
    feeds = list(reader)
    if not feeds:
        raise CalibrationDataError("The evaluation data holds no samples.")
    for i, feed in enumerate(feeds):
        check_feed(feed, specs, i)
    return feeds, labels


def _variants(variants: Mapping[str, Any] | Sequence[Any]) -> list[_Model]:
    items = list(variants.items()) if isinstance(variants, Mapping) else [(None, v) for v in variants]
    if not items:
        raise ConfigError("compare() needs at least one quantized model to compare with the reference.")
    out: list[_Model] = []
    for name, v in items:
        summary = v if isinstance(v, QuantizationSummary) else None
        if summary is not None:
            if summary.model is None:
                raise ConfigError("This QuantizationSummary holds no model; pass its output_path instead.")
            model, path = summary.model, summary.output_path
            name = name or summary.preset or "quantized"
        else:
            model, path = load_model(v), model_path_of(v)
            name = name or (path.stem if path else f"model {len(out) + 1}")
        if name == REFERENCE or any(m.name == name for m in out):
            raise ConfigError(f"Two models are named {name!r}: name the variants with a dict {{name: model}}.")
        out.append(_Model(str(name), model, path, summary))
    return out


# -- measurements -------------------------------------------------------------------------------------
def _session(model: onnx.ModelProto) -> Any:
    return ort_session(model)


def _run(model: onnx.ModelProto, feeds: list[dict], index: int, runs: int) -> tuple[np.ndarray, dict[str, float]]:
    runner = SampleRunner(model)
    name = model.graph.output[index].name
    # one row per sample, whatever the output's own layout ([1, classes], [tokens, hidden], ...)
    outs = np.stack([o[name] for o in runner.run([name], feeds)]).astype(np.float64)
    cpu = {"cpu_ms": np.nan, "cpu_p90_ms": np.nan}
    if runs:
        # timed as a CPU deployment runs it: onnxruntime's fused integer kernels (the outputs above
        # come from the model as written, which those kernels approximate on CPUs without VNNI)

        session = ort_session(model, fused_qdq=True)
        stats = time_call(lambda: session.run(None, feeds[0]), warmup=3, repeats=runs, min_seconds=0.0)
        cpu = {"cpu_ms": stats["median_ms"], "cpu_p90_ms": stats["p90_ms"]}
    return outs, cpu


def _npu(model: onnx.ModelProto, targets: Sequence[str], notes: list[str], name: str) -> dict[str, float]:
    """Estimated NPU latency and the share of operators the NPU runs (as the EP log counts them)."""
    out: dict[str, float] = {}
    for target in targets:
        try:
            program = npu.compile(model, target)
            out[f"npu_ms_{target}"] = npu.estimate_latency(program, target).total_ms
            out[f"npu_share_{target}"] = program.npu_share
        except Exception as exc:  # noqa: BLE001 - a model the emulator cannot place: noted, not fatal
            out[f"npu_ms_{target}"] = out[f"npu_share_{target}"] = np.nan
            notes.append(f"{name} on {target}: no NPU estimate ({type(exc).__name__}: {exc})")
    return out


def _task_metrics(task: str, out: np.ndarray, ref: np.ndarray, labels: np.ndarray | None) -> dict[str, float]:
    flat = out.reshape(len(out), -1)
    if task == "embedding":
        ref_flat = ref.reshape(len(ref), -1)
        cos = np.array([metrics.cosine(a, b) for a, b in zip(ref_flat, flat)])
        unit = lambda x: x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)  # noqa: E731
        nearest = (unit(flat) @ unit(ref_flat).T).argmax(axis=1)
        retrieval = float(np.mean(nearest == np.arange(len(flat)))) if metrics.all_finite(flat, ref_flat) else np.nan
        return {"embedding_cosine": float(cos.mean()), "embedding_cosine_min": float(cos.min()),
                "retrieval_at_1": retrieval}
    if labels is None:
        return {"agreement_top1": metrics.agreement(ref.reshape(len(ref), -1), flat)}
    row = {"top1": metrics.topk_accuracy(flat, labels, 1)}
    if flat.shape[1] >= 5:
        row["top5"] = metrics.topk_accuracy(flat, labels, 5)
    return row


def _fidelity(ref: np.ndarray, out: np.ndarray) -> dict[str, float]:
    pairs = list(zip(ref, out))
    row = {"cosine": float(np.mean([metrics.cosine(a, b) for a, b in pairs])),
           "l2": float(np.mean([metrics.l2(a, b) for a, b in pairs])),
           "psnr_db": float(np.mean([min(metrics.psnr(a, b), 200.0) for a, b in pairs])),
           "sqnr_db": float(np.mean([min(metrics.sqnr(a, b), 200.0) for a, b in pairs]))}
    if ref.ndim >= 2 and ref.reshape(len(ref), -1).shape[1] > 1:
        row["agreement"] = metrics.agreement(ref.reshape(len(ref), -1), out.reshape(len(out), -1))
    return row


# -- per-layer error ------------------------------------------------------------------------------------
def quantized_tensors(reference: onnx.ModelProto, quantized: onnx.ModelProto) -> list[tuple[str, str, str]]:
    """(FP32 tensor, its quantized value's name in ``quantized``, kind) for every input of a node
    present in both models (by name) that the quantized model reads through a quantizer — ryzen-nb's
    QDQ chains and model-local functions, and any tool's DequantizeLinear. Kind: "activation",
    "weight" or "bias"."""
    ref_nodes = {n.name: n for n in reference.graph.node if n.name}
    producers = {o: n for n in quantized.graph.node for o in n.output}
    inits = {t.name: t for t in reference.graph.initializer}
    formats = _formats(quantized)
    quantizer_domains = {f.domain for f in quantized.functions}
    seen: dict[str, tuple[str, str, str]] = {}
    for qn in quantized.graph.node:
        fn = ref_nodes.get(qn.name)
        if fn is None or fn.op_type != qn.op_type:
            continue
        for k, (f_in, q_in) in enumerate(zip(fn.input, qn.input)):
            if not f_in or f_in == q_in or f_in in seen:
                continue
            p = producers.get(q_in)
            through_quantizer = f_in in formats or (p is not None and (
                p.op_type in ("DequantizeLinear", "Cast") or p.domain in quantizer_domains))
            if not through_quantizer:
                continue
            kind = "activation"
            if f_in in inits:
                kind = "bias" if len(inits[f_in].dims) == 1 and k >= 2 else "weight"
            seen[f_in] = (f_in, q_in, kind)
    return list(seen.values())


def _formats(model: onnx.ModelProto) -> dict[str, str]:
    for prop in model.metadata_props:
        if prop.key == "ryzen_nb.formats":
            try:
                return json.loads(prop.value)
            except ValueError:  # pragma: no cover - a foreign tool's metadata
                return {}
    return {}


def _probe(model: onnx.ModelProto, names: list[str]) -> Any:
    """A session of ``model`` that can return the tensors ``names`` too."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    present = {o.name for o in probe.graph.output}
    probe.graph.output.extend(onnx.ValueInfoProto(name=n) for n in dict.fromkeys(names) if n not in present)
    return _session(probe)


PER_LAYER_COLUMNS = ["model", "tensor", "kind", "format", "sqnr_db", "order"]


def _per_layer(models: list[_Model], feeds: list[dict], progress: bool) -> Any:
    """SQNR of each quantized tensor of each variant against the FP32 tensor, accumulated over
    ``feeds`` (Σ signal² / Σ noise², one sample in memory at a time)."""
    import pandas as pd
    from tqdm.auto import tqdm

    reference = models[0].model
    order = {n: i for i, n in enumerate(o for node in reference.graph.node for o in list(node.input) + list(node.output))}
    rows = []
    for m in tqdm(models[1:], desc="per-layer error", unit="model", disable=not progress, leave=False):
        pairs = quantized_tensors(reference, m.model)
        if not pairs:
            continue
        formats = _formats(m.model)
        ref_names = [f for f, _, _ in pairs]
        q_names = [q for _, q, _ in pairs]
        ref_session, q_session = _probe(reference, ref_names), _probe(m.model, q_names)
        signal = np.zeros(len(pairs))
        noise = np.zeros(len(pairs))
        for feed in feeds:
            a = ref_session.run(ref_names, feed)
            b = q_session.run(q_names, feed)
            for i, (x, y) in enumerate(zip(a, b)):
                x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
                if x.shape != y.shape:  # a layout the tools changed: not comparable element-wise
                    signal[i] = np.nan
                    continue
                signal[i] += float(np.sum(x * x))
                noise[i] += float(np.sum((x - y) ** 2))
        for i, (f, _, kind) in enumerate(pairs):
            if np.isnan(signal[i]):
                continue
            sqnr = 10 * np.log10(signal[i] / noise[i]) if noise[i] > 0 and signal[i] > 0 else np.inf
            if not np.isfinite(noise[i]) or not np.isfinite(signal[i]):  # NaN/Inf values: never a good score
                sqnr = np.nan
            rows.append({"model": m.name, "tensor": f, "kind": kind, "format": formats.get(f, ""),
                         "sqnr_db": float(sqnr), "order": order.get(f, len(order))})
    return pd.DataFrame(rows, columns=PER_LAYER_COLUMNS)
